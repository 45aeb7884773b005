//! The Streamable HTTP transport: rmcp's client worker over our own reqwest client.
//!
//! rmcp implements the wire protocol (JSON and SSE responses, `MCP-Protocol-Version`, session
//! ids, the GET stream, SSE `retry` and `Last-Event-ID` resumption, DELETE on close, bounded
//! bodies). The host supplies the HTTP client so it decides the redirect rule (same origin
//! only: a cross-origin redirect would carry the session id and the bearer token to another
//! host), the timeouts and the headers.

use std::collections::HashMap;
use std::time::Duration;

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::{HostError, MAX_MESSAGE_BYTES};

/// How to reach a Streamable HTTP server. Secrets are already resolved.
#[derive(Clone)]
pub struct HttpLaunch {
    pub url: url::Url,
    pub headers: Vec<(String, String)>,
    /// Sent as `Authorization: Bearer <token>`.
    pub bearer: Option<String>,
    pub connect_timeout: Duration,
}

impl std::fmt::Debug for HttpLaunch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpLaunch")
            .field("url", &self.url.as_str())
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("bearer", &self.bearer.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Follows only same-origin 307/308 redirects (which keep the method and body), at most 10.
/// Anything else comes back to rmcp as the redirect response itself, which fails the request
/// with the status, so the user sees that the server redirected.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > 10 {
            attempt.error("more than 10 redirects")
        } else {
            attempt.follow()
        }
    })
}

pub fn transport(
    server: &str,
    launch: &HttpLaunch,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, HostError> {
    let client = client(server, launch)?;
    Ok(StreamableHttpClientTransport::with_client(
        client,
        config(server, launch)?,
    ))
}

/// The transport over another HTTP client (the OAuth client that adds and renews tokens).
pub fn transport_with<C: rmcp::transport::streamable_http_client::StreamableHttpClient>(
    server: &str,
    launch: &HttpLaunch,
    client: C,
) -> Result<StreamableHttpClientTransport<C>, HostError> {
    Ok(StreamableHttpClientTransport::with_client(
        client,
        config(server, launch)?,
    ))
}

/// The host's HTTP client for a server: same-origin redirects only, its timeouts, and the
/// same network path as the attestation fetch.
pub fn client(server: &str, launch: &HttpLaunch) -> Result<reqwest::Client, HostError> {
    let config_error = |detail: String| HostError::Config(format!("server {server:?}: {detail}"));
    let builder = reqwest::Client::builder()
        .redirect(same_origin_redirects())
        .connect_timeout(launch.connect_timeout)
        // rmcp's own default: idle pooled connections cause ~40 ms delayed-ACK stalls on Linux.
        .pool_max_idle_per_host(0);
    // The same network path as the attestation fetch: admitted at an origin, talked to there.
    crate::fetch::loopback_path(builder, &launch.url)
        .build()
        .map_err(|e| config_error(format!("cannot build the HTTP client: {e}")))
}

fn config(
    server: &str,
    launch: &HttpLaunch,
) -> Result<StreamableHttpClientTransportConfig, HostError> {
    let config_error = |detail: String| HostError::Config(format!("server {server:?}: {detail}"));
    let mut headers = HashMap::new();
    for (name, value) in &launch.headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| config_error(format!("header name {name:?} is not valid")))?;
        let mut value = reqwest::header::HeaderValue::from_str(value).map_err(|_| {
            config_error(format!(
                "the value of header {name} is not a valid header value"
            ))
        })?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(launch.url.as_str())
        .custom_headers(headers)
        .max_sse_event_size(MAX_MESSAGE_BYTES);
    if let Some(token) = &launch.bearer {
        config = config.auth_header(token.clone());
    }
    Ok(config)
}
