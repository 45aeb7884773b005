//! Talking to the issuer: discovering its metadata (OpenID Connect Discovery, RFC 8414) and
//! fetching its JWKS, bounded in time and size.

use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;
use url::Url;

use super::Keys;

/// The longest any request to the issuer may take, connecting included.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest metadata or JWKS document accepted.
pub const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// What discovery found.
#[derive(Debug)]
pub struct Discovered {
    /// Where the metadata came from.
    pub metadata_url: String,
    pub jwks_uri: String,
    pub keys: Keys,
}

/// Fetches documents from the issuer.
#[derive(Debug, Clone)]
pub struct IssuerClient {
    http: reqwest::Client,
}

impl IssuerClient {
    /// A client with [`FETCH_TIMEOUT`] and no redirects.
    ///
    /// # Errors
    ///
    /// When the HTTP client cannot be built.
    pub fn new() -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .connect_timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("gatehouse-demo-server/", env!("CARGO_PKG_VERSION")))
            .build()
            .context("could not build the HTTP client for the issuer")?;
        Ok(Self { http })
    }

    /// Discover `issuer`'s metadata, check that it names `issuer` exactly, and fetch its JWKS.
    ///
    /// # Errors
    ///
    /// When the issuer cannot be reached, no metadata document fits, or the JWKS cannot be
    /// fetched or has no usable key.
    pub async fn discover(&self, issuer: &str) -> anyhow::Result<Discovered> {
        let mut failures = Vec::new();
        for url in metadata_urls(issuer)? {
            match self.get_json(&url).await {
                Ok(document) => match jwks_uri(&document, issuer) {
                    Ok(jwks_uri) => {
                        let keys = self.fetch_keys(&jwks_uri).await?;
                        return Ok(Discovered {
                            metadata_url: url,
                            jwks_uri,
                            keys,
                        });
                    }
                    Err(why) => failures.push(format!("{url}: {why}")),
                },
                Err(FetchError::Unreachable(error)) => {
                    // Every candidate is on the same host: no point trying the others.
                    return Err(error).with_context(|| {
                        format!("cannot reach the issuer {issuer} (fetching {url})")
                    });
                }
                Err(FetchError::Refused(why)) => failures.push(format!("{url}: {why}")),
            }
        }
        bail!(
            "found no usable authorization server metadata for the issuer {issuer}: {}",
            failures.join("; ")
        )
    }

    /// Fetch and parse the JWKS at `jwks_uri`.
    ///
    /// # Errors
    ///
    /// When it cannot be fetched, is not a JWKS, or has no usable key.
    pub async fn fetch_keys(&self, jwks_uri: &str) -> anyhow::Result<Keys> {
        let document = self
            .get_json(jwks_uri)
            .await
            .map_err(|error| match error {
                FetchError::Unreachable(error) => error,
                FetchError::Refused(why) => anyhow::anyhow!(why),
            })
            .with_context(|| format!("could not fetch the issuer's JWKS from {jwks_uri}"))?;
        let keys = Keys::from_jwks(&document)
            .map_err(|why| anyhow::anyhow!("the JWKS at {jwks_uri} is unusable: {why}"))?;
        for skipped in &keys.skipped {
            tracing::debug!(%jwks_uri, "skipping a JWKS key: {skipped}");
        }
        if keys.is_empty() {
            bail!("the JWKS at {jwks_uri} has no usable signing key");
        }
        Ok(keys)
    }

    /// GET `url` as JSON: success status, at most [`MAX_DOCUMENT_BYTES`], a JSON object.
    async fn get_json(&self, url: &str) -> Result<Value, FetchError> {
        let mut response = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|error| FetchError::Unreachable(error.into()))?;
        let status = response.status();
        if !status.is_success() {
            return Err(FetchError::Refused(format!("HTTP {status}")));
        }
        if response
            .content_length()
            .is_some_and(|length| length > MAX_DOCUMENT_BYTES as u64)
        {
            return Err(FetchError::Refused(format!(
                "larger than {MAX_DOCUMENT_BYTES} bytes"
            )));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| FetchError::Unreachable(error.into()))?
        {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(FetchError::Refused(format!(
                    "larger than {MAX_DOCUMENT_BYTES} bytes"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        match serde_json::from_slice::<Value>(&body) {
            Ok(document @ Value::Object(_)) => Ok(document),
            Ok(_) => Err(FetchError::Refused("not a JSON object".into())),
            Err(error) => Err(FetchError::Refused(format!("not JSON: {error}"))),
        }
    }
}

enum FetchError {
    /// No HTTP answer at all (connection refused, timeout, broken body).
    Unreachable(anyhow::Error),
    /// An answer, but not a usable document.
    Refused(String),
}

/// Where `issuer`'s metadata may be, in the order tried: OpenID Connect Discovery
/// (`ISSUER/.well-known/openid-configuration`), then RFC 8414
/// (`/.well-known/oauth-authorization-server` inserted before the issuer's path), then, for an
/// issuer with a path, OpenID Connect's well-known name inserted the RFC 8414 way.
///
/// # Errors
///
/// When `issuer` is not a URL.
pub fn metadata_urls(issuer: &str) -> anyhow::Result<Vec<String>> {
    let url = Url::parse(issuer).with_context(|| format!("{issuer:?} is not a URL"))?;
    let path = url.path().trim_end_matches('/');
    let origin = url.origin().ascii_serialization();
    let mut urls = vec![
        format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        ),
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
    ];
    if !path.is_empty() {
        urls.push(format!("{origin}/.well-known/openid-configuration{path}"));
    }
    urls.dedup();
    Ok(urls)
}

/// The `jwks_uri` of a metadata document, after checking that its `issuer` is `issuer` exactly
/// (OpenID Connect Discovery section 4.3, RFC 8414 section 3.3).
///
/// # Errors
///
/// When the issuer differs or `jwks_uri` is missing or not an http(s) URL.
pub fn jwks_uri(document: &Value, issuer: &str) -> Result<String, String> {
    match document.get("issuer").and_then(Value::as_str) {
        Some(named) if named == issuer => {}
        Some(named) => {
            return Err(format!(
                "the metadata names the issuer {named:?}, not {issuer:?}"
            ));
        }
        None => return Err("the metadata has no issuer".into()),
    }
    let jwks_uri = document
        .get("jwks_uri")
        .and_then(Value::as_str)
        .ok_or("the metadata has no jwks_uri")?;
    match Url::parse(jwks_uri) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => Ok(jwks_uri.to_owned()),
        _ => Err(format!("the jwks_uri {jwks_uri:?} is not an http(s) URL")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn metadata_urls_follow_oidc_then_rfc8414() {
        assert_eq!(
            metadata_urls("http://127.0.0.1:9000").unwrap(),
            [
                "http://127.0.0.1:9000/.well-known/openid-configuration",
                "http://127.0.0.1:9000/.well-known/oauth-authorization-server",
            ]
        );
        assert_eq!(
            metadata_urls("https://auth.example/").unwrap(),
            [
                "https://auth.example/.well-known/openid-configuration",
                "https://auth.example/.well-known/oauth-authorization-server",
            ]
        );
        assert_eq!(
            metadata_urls("https://auth.example/tenant/1").unwrap(),
            [
                "https://auth.example/tenant/1/.well-known/openid-configuration",
                "https://auth.example/.well-known/oauth-authorization-server/tenant/1",
                "https://auth.example/.well-known/openid-configuration/tenant/1",
            ]
        );
    }

    #[test]
    fn metadata_must_name_the_issuer_exactly() {
        let issuer = "http://127.0.0.1:9000";
        let good = json!({"issuer": issuer, "jwks_uri": "http://127.0.0.1:9000/jwks"});
        assert_eq!(
            jwks_uri(&good, issuer).unwrap(),
            "http://127.0.0.1:9000/jwks"
        );
        let slash = json!({"issuer": "http://127.0.0.1:9000/", "jwks_uri": "http://x/jwks"});
        assert!(
            jwks_uri(&slash, issuer)
                .unwrap_err()
                .contains("names the issuer")
        );
        assert!(jwks_uri(&json!({"jwks_uri": "http://x/jwks"}), issuer).is_err());
        assert!(jwks_uri(&json!({"issuer": issuer}), issuer).is_err());
        let file = json!({"issuer": issuer, "jwks_uri": "file:///etc/passwd"});
        assert!(jwks_uri(&file, issuer).is_err());
    }
}
