//! Fetching an MCP server's ATSA Server Attestation Document from
//! `{origin}/.well-known/mcp-attestation`.
//!
//! This module only moves bytes: the document is parsed and verified by the pure verifier in
//! `gatehouse-attest`. What it guarantees, failing closed on each:
//! - the document comes from the MCP endpoint's own origin: https, or plain http only to a
//!   loopback host; redirects are followed by hand, at most [`MAX_REDIRECTS`] hops, and only
//!   within that origin (a downgrade to http on the same host is another origin);
//! - the request is anonymous: no cookies, no credentials, none of the server's configured
//!   headers, because an attestation is public;
//! - the whole fetch (every hop and the body) ends within the caller's timeout, and no more than
//!   [`MAX_ATTESTATION_BYTES`] are ever buffered, whatever `Content-Length` says.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, HeaderValue, LOCATION};
use url::{Host, Url};

/// Where a server publishes its attestation, relative to its origin.
pub const WELL_KNOWN_PATH: &str = "/.well-known/mcp-attestation";

/// The largest attestation document read, in bytes (64 KiB); the same figure as
/// `gatehouse_attest::MAX_DOCUMENT_BYTES`, so nothing the verifier would refuse is buffered.
pub const MAX_ATTESTATION_BYTES: usize = 64 * 1024;

/// How long a whole attestation fetch may take when the caller has no better figure.
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// The most redirects followed (all within the origin) before the fetch is refused.
pub const MAX_REDIRECTS: usize = 3;

/// The origin (`scheme://host[:port]`, default port omitted, host lower-cased, IPv6 in brackets)
/// of an MCP endpoint URL, and the attestation URL derived from it. Refuses non-http(s) schemes,
/// URLs with userinfo, and plain http to anything but loopback (127.0.0.0/8, ::1,
/// ::ffff:127.x, "localhost").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttestationSource {
    pub origin: String,
    pub url: Url,
}

impl AttestationSource {
    /// The attestation source for an MCP endpoint URL such as `https://tools.example/mcp`. The
    /// endpoint's path, query and fragment play no part: an attestation speaks for the origin.
    pub fn for_endpoint(endpoint: &str) -> Result<AttestationSource, FetchError> {
        let parsed = Url::parse(endpoint).map_err(|e| FetchError::InvalidUrl {
            url: endpoint.to_string(),
            detail: format!(
                "it is not a valid URL ({e}); give the server's full URL, such as https://tools.example/mcp"
            ),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(FetchError::InvalidUrl {
                url: without_credentials(&parsed),
                detail: format!(
                    "only http(s) servers publish attestations, and this URL's scheme is {:?}; give the server's https:// URL",
                    parsed.scheme()
                ),
            });
        }
        if has_credentials(&parsed) {
            return Err(FetchError::InvalidUrl {
                url: without_credentials(&parsed),
                detail: "it carries a user name or password, and an attestation is public and fetched without credentials; remove them from the URL".to_string(),
            });
        }
        let origin = origin_of(&parsed);
        let url = Url::parse(&format!("{origin}{WELL_KNOWN_PATH}")).map_err(|e| {
            FetchError::InvalidUrl {
                url: without_credentials(&parsed),
                detail: format!("no attestation URL can be derived from it ({e})"),
            }
        })?;
        if parsed.scheme() == "http" && !is_loopback(&parsed) {
            return Err(FetchError::InsecureOrigin {
                url: url.to_string(),
            });
        }
        Ok(AttestationSource { origin, url })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// Plain http to a host that is not loopback: anyone on the path could swap the document.
    #[error(
        "the attestation at {url} was refused: plain http is only allowed for loopback servers (127.0.0.0/8, ::1, localhost); serve it over https"
    )]
    InsecureOrigin { url: String },

    /// The endpoint (or a redirect target) is not a URL an attestation can be fetched from.
    #[error("cannot fetch an attestation for {url}: {detail}")]
    InvalidUrl { url: String, detail: String },

    /// A redirect left the server's origin; `from` and `to` are origins.
    #[error(
        "the attestation at {from} redirected to another origin, {to}, and was refused: an attestation is only accepted from the server's own origin; serve it at {from}{WELL_KNOWN_PATH}"
    )]
    CrossOriginRedirect { from: String, to: String },

    /// More same-origin redirects than [`MAX_REDIRECTS`].
    #[error(
        "the attestation at {url} redirected more than {limit} times and was refused; serve it with at most {limit} redirects, ideally none"
    )]
    TooManyRedirects { url: String, limit: usize },

    /// The document is larger than [`MAX_ATTESTATION_BYTES`]; it was not read further.
    #[error(
        "the attestation document is larger than {limit} bytes and was refused unread; an attestation is a small JSON object: check what the server serves at {WELL_KNOWN_PATH}"
    )]
    TooLarge { limit: usize },

    /// The whole fetch (all hops and the body) did not finish in time.
    #[error(
        "the attestation was not fetched within {}s; check that the server is up and answering, or raise the timeout", after.as_secs_f64()
    )]
    Timeout { after: Duration },

    /// An answer other than 200 (the document) or 404/410 (no document).
    #[error(
        "the attestation request was answered with HTTP {status}; a server answers 200 with its attestation, or 404 when it publishes none"
    )]
    Status { status: u16 },

    /// The connection failed (refused, reset, DNS, TLS).
    #[error("could not fetch the attestation: {detail}")]
    Network { detail: String },
}

impl FetchError {
    /// Stable snake_case reason code.
    pub fn code(&self) -> &'static str {
        match self {
            FetchError::InsecureOrigin { .. } => "insecure_origin",
            FetchError::InvalidUrl { .. } => "invalid_url",
            FetchError::CrossOriginRedirect { .. } => "cross_origin_redirect",
            FetchError::TooManyRedirects { .. } => "too_many_redirects",
            FetchError::TooLarge { .. } => "attestation_too_large",
            FetchError::Timeout { .. } => "fetch_timeout",
            FetchError::Status { .. } => "http_status",
            FetchError::Network { .. } => "network",
        }
    }
}

/// Fetches the attestation document's bytes. `Ok(None)` means the server publishes none (HTTP
/// 404 or 410), which the caller treats as unattested. The bytes are not parsed here.
pub async fn fetch_attestation(
    source: &AttestationSource,
    timeout: Duration,
) -> Result<Option<Vec<u8>>, FetchError> {
    // One deadline over everything, so a slow redirect chain or a dribbled body cannot stretch it.
    match tokio::time::timeout(timeout, fetch_unbounded(source)).await {
        Ok(result) => result,
        Err(_) => Err(FetchError::Timeout { after: timeout }),
    }
}

async fn fetch_unbounded(source: &AttestationSource) -> Result<Option<Vec<u8>>, FetchError> {
    let client = client_for(&source.url)?;
    let mut current = source.url.clone();
    let mut redirects = 0;
    loop {
        let response = client
            .get(current.clone())
            .header(ACCEPT, HeaderValue::from_static("application/json"))
            .send()
            .await
            .map_err(|e| network(&current, &e))?;
        let status = response.status();
        if is_redirect(status) {
            if redirects == MAX_REDIRECTS {
                return Err(FetchError::TooManyRedirects {
                    url: source.url.to_string(),
                    limit: MAX_REDIRECTS,
                });
            }
            let Some(location) = response.headers().get(LOCATION) else {
                return Err(FetchError::Status {
                    status: status.as_u16(),
                });
            };
            current = next_hop(&current, &source.origin, location)?;
            redirects += 1;
            continue;
        }
        return match status {
            StatusCode::OK => read_capped(response, &current).await.map(Some),
            StatusCode::NOT_FOUND | StatusCode::GONE => Ok(None),
            other => Err(FetchError::Status {
                status: other.as_u16(),
            }),
        };
    }
}

/// The reqwest client for one fetch: rustls (the crate's reqwest features), no automatic
/// redirects (they are checked by hand), and no cookie store (reqwest keeps none unless asked).
fn client_for(url: &Url) -> Result<reqwest::Client, FetchError> {
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        // rmcp's own default, as in http.rs: idle pooled connections stall on delayed ACKs.
        .pool_max_idle_per_host(0);
    builder = loopback_path(builder, url);
    builder.build().map_err(|e| FetchError::Network {
        detail: format!("cannot build the HTTP client: {}", innermost(&e)),
    })
}

/// The network path to a loopback URL, shared by the attestation fetch and the MCP connection
/// so both reach the same server: never through an environment proxy (which would reach
/// something else), and "localhost" pinned to the loopback addresses instead of asking the
/// resolver. Remote origins keep the system proxy.
pub(crate) fn loopback_path(
    mut builder: reqwest::ClientBuilder,
    url: &Url,
) -> reqwest::ClientBuilder {
    if is_loopback(url) {
        builder = builder.no_proxy();
    }
    if url.host() == Some(Host::Domain("localhost")) {
        // Port 0 keeps the URL's port.
        builder = builder.resolve_to_addrs(
            "localhost",
            &[
                SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
                SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 0),
            ],
        );
    }
    builder
}

fn is_redirect(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::MOVED_PERMANENTLY
            | StatusCode::FOUND
            | StatusCode::SEE_OTHER
            | StatusCode::TEMPORARY_REDIRECT
            | StatusCode::PERMANENT_REDIRECT
    )
}

/// Resolves a `Location` against the current URL and accepts it only within `origin`.
fn next_hop(current: &Url, origin: &str, location: &HeaderValue) -> Result<Url, FetchError> {
    let invalid = |detail: String| FetchError::InvalidUrl {
        url: current.to_string(),
        detail,
    };
    let location = location.to_str().map_err(|_| {
        invalid("the server redirected to a Location that is not valid text; serve the attestation without the redirect".to_string())
    })?;
    let next = current.join(location).map_err(|e| {
        invalid(format!(
            "the server redirected to {location:?}, which is not a valid URL ({e}); serve the attestation without the redirect"
        ))
    })?;
    let to = origin_of(&next);
    if to != origin {
        return Err(FetchError::CrossOriginRedirect {
            from: origin.to_string(),
            to,
        });
    }
    // Same origin, but reqwest would send URL userinfo as Basic credentials.
    if has_credentials(&next) {
        return Err(invalid(
            "the server redirected to a URL carrying a user name or password, and an attestation is fetched without credentials; serve it without the redirect".to_string(),
        ));
    }
    Ok(next)
}

/// Reads the body, refusing it as soon as it is known to exceed [`MAX_ATTESTATION_BYTES`].
async fn read_capped(mut response: reqwest::Response, url: &Url) -> Result<Vec<u8>, FetchError> {
    let too_large = || FetchError::TooLarge {
        limit: MAX_ATTESTATION_BYTES,
    };
    // A declared length only lets us refuse early; the count below is what is enforced.
    if response
        .content_length()
        .is_some_and(|declared| declared > MAX_ATTESTATION_BYTES as u64)
    {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| network(url, &e))? {
        if body.len() + chunk.len() > MAX_ATTESTATION_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// `scheme://host[:port]`: the url crate already lower-cases the host, brackets IPv6 and reports
/// no port when it is the scheme's default.
fn origin_of(url: &Url) -> String {
    match url.host_str() {
        Some(host) => match url.port() {
            Some(port) => format!("{}://{host}:{port}", url.scheme()),
            None => format!("{}://{host}", url.scheme()),
        },
        None => format!("{}:", url.scheme()),
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Some(Host::Domain(name)) => name == "localhost",
        None => false,
    }
}

fn has_credentials(url: &Url) -> bool {
    !url.username().is_empty() || url.password().is_some()
}

/// The URL for messages, never echoing a password.
fn without_credentials(url: &Url) -> String {
    let mut url = url.clone();
    // Fails only for URLs that cannot carry credentials, which then have none to hide.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.to_string()
}

fn network(url: &Url, error: &reqwest::Error) -> FetchError {
    FetchError::Network {
        detail: format!(
            "{url}: {}; is the server running, and is the URL right?",
            innermost(error)
        ),
    }
}

/// What went wrong with a request, in its innermost words.
pub(crate) fn describe_reqwest(error: &reqwest::Error) -> String {
    innermost(error)
}

/// The innermost cause: what actually happened, without reqwest's wrapping.
fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(current: &str, location: &str) -> Result<Url, FetchError> {
        let current = Url::parse(current).unwrap();
        let origin = origin_of(&current);
        next_hop(&current, &origin, &HeaderValue::from_str(location).unwrap())
    }

    #[test]
    fn a_downgrade_to_http_on_the_same_host_is_another_origin() {
        let error = hop(
            "https://tools.example/.well-known/mcp-attestation",
            "http://tools.example/.well-known/mcp-attestation",
        )
        .unwrap_err();
        match &error {
            FetchError::CrossOriginRedirect { from, to } => {
                assert_eq!(from, "https://tools.example");
                assert_eq!(to, "http://tools.example");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(error.code(), "cross_origin_redirect");
    }

    #[test]
    fn same_origin_hops_normalize_default_ports_and_case() {
        let next = hop(
            "https://tools.example/.well-known/mcp-attestation",
            "HTTPS://TOOLS.example:443/att.json",
        )
        .unwrap();
        assert_eq!(next.as_str(), "https://tools.example/att.json");
        let next = hop("https://tools.example/a/b", "../c").unwrap();
        assert_eq!(next.as_str(), "https://tools.example/c");
        assert!(matches!(
            hop("https://tools.example/a", "https://tools.example:8443/a"),
            Err(FetchError::CrossOriginRedirect { .. })
        ));
        assert!(matches!(
            hop("https://tools.example/a", "data:application/json,{}"),
            Err(FetchError::CrossOriginRedirect { .. })
        ));
    }

    #[test]
    fn messages_never_echo_a_password() {
        let error =
            AttestationSource::for_endpoint("https://user:hunter2@tools.example/mcp").unwrap_err();
        assert!(!error.to_string().contains("hunter2"), "{error}");
        let error = hop(
            "https://tools.example/a",
            "https://u:hunter2@tools.example/b",
        )
        .unwrap_err();
        assert_eq!(error.code(), "invalid_url");
        assert!(!error.to_string().contains("hunter2"), "{error}");
    }
}
