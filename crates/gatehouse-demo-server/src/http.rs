//! Serving the demo over Streamable HTTP at `/mcp`, loopback-only unless told otherwise, with
//! its attestation at `/.well-known/mcp-attestation` and, with `--require-auth`, its protected
//! resource metadata at `/.well-known/oauth-protected-resource/mcp` (see [`crate::auth`]).

use std::{
    future::Future,
    net::{IpAddr, Ipv4Addr, SocketAddr},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use anyhow::{Context, bail};
use axum::{
    body::Bytes,
    extract::State,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::{
    attestation::{AttestationMode, WELL_KNOWN_PATH},
    auth::layer::{AuthState, metadata_routes, require_bearer},
    era::{Era, legacy_discover_gate},
    server::DemoServer,
    wire::modern_wire_layer,
};

pub use crate::endpoint::{MCP_PATH, origin};

/// Parse `IP:PORT` (IPv6 in brackets), or `localhost:PORT` as a convenience for 127.0.0.1.
///
/// # Errors
///
/// When `value` is neither form; host names other than `localhost` are not resolved.
pub fn parse_listen_addr(value: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = value.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Some(port) = value.strip_prefix("localhost:")
        && let Ok(port) = port.parse::<u16>()
    {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    Err(format!(
        "expected IP:PORT such as 127.0.0.1:0 or [::1]:8080, got {value:?}"
    ))
}

/// Bind `addr`, refusing anything but loopback unless `allow_non_loopback` is set.
///
/// # Errors
///
/// When `addr` is not loopback and that was not allowed, or when binding fails.
pub async fn bind(addr: SocketAddr, allow_non_loopback: bool) -> anyhow::Result<TcpListener> {
    if !is_loopback(addr.ip()) && !allow_non_loopback {
        bail!(
            "refusing to listen on {addr}: it is not a loopback address, so other machines \
             could reach this demo server; pass --allow-non-loopback if that is intended"
        );
    }
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("could not listen on {addr}"))
}

fn is_loopback(ip: IpAddr) -> bool {
    // `::ffff:127.0.0.1` is loopback too.
    ip.to_canonical().is_loopback()
}

/// Serve Streamable HTTP on `listener` until `shutdown` resolves, then shut down gracefully:
/// sessions and open SSE streams are closed so in-flight connections can finish.
///
/// The attestation `attestation` selects is served at [`WELL_KNOWN_PATH`], bound to the
/// listener's own origin.
///
/// # Errors
///
/// When the listener's address cannot be read or the HTTP server fails.
pub async fn serve_http(
    server: DemoServer,
    listener: TcpListener,
    attestation: AttestationMode,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    serve_http_with_auth(server, listener, attestation, None, shutdown).await
}

/// [`serve_http`], and with `auth` (`--require-auth`) the MCP endpoint accepts only requests
/// with a valid bearer token, and the protected resource metadata is served (see
/// [`crate::auth`]).
///
/// # Errors
///
/// When the listener's address cannot be read or the HTTP server fails.
pub async fn serve_http_with_auth(
    server: DemoServer,
    listener: TcpListener,
    attestation: AttestationMode,
    auth: Option<Arc<AuthState>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let local = listener
        .local_addr()
        .context("listener has no local address")?;
    if local.ip().is_unspecified() && attestation != AttestationMode::None {
        // Clients connect to a concrete address, never to 0.0.0.0 or [::].
        tracing::warn!(
            origin = %origin(local),
            "the attestation is bound to the unspecified address, which no client connects to; \
             hosts will refuse it with host_not_bound"
        );
    }
    let well_known = WellKnown::new(attestation, &origin(local))?;
    let era = server.era();
    let ct = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        // SEP-2567 removed sessions in 2026-07-28, so a modern-only server has none.
        .with_legacy_session_mode(era != Era::Modern)
        // Without this, a request with no protocol signals is served as 2025-03-26.
        .with_stateless_protocol_metadata_required(era == Era::Modern)
        // Plain JSON for simple answers; rmcp switches to SSE when a tool sends progress.
        .with_json_response(true)
        .with_cancellation_token(ct.child_token());
    let config = allow_hosts(config, local.ip());

    // One server per session (and per session-less request), each its own connection; all
    // share the connect pages.
    let service: StreamableHttpService<DemoServer, LocalSessionManager> =
        StreamableHttpService::new(
            move || Ok(server.for_new_connection()),
            Default::default(),
            config,
        );
    let mut mcp = axum::Router::new()
        .fallback_service(service)
        .layer(axum::middleware::from_fn(modern_wire_layer));
    if let Some(auth) = &auth {
        // Nothing answers an MCP request before its token is checked, not even the legacy
        // discover gate, which then sits inside the check.
        if era == Era::Legacy {
            mcp = mcp.layer(axum::middleware::from_fn(legacy_discover_gate));
        }
        mcp = mcp.layer(axum::middleware::from_fn_with_state(
            auth.clone(),
            require_bearer,
        ));
    }
    // The attestation route sits outside the rmcp service, so it needs no MCP session or
    // protocol headers: hosts fetch it before they speak MCP at all.
    let mut router = axum::Router::new()
        .route(
            WELL_KNOWN_PATH,
            get(serve_attestation).with_state(Arc::new(well_known)),
        )
        .nest_service(MCP_PATH, mcp);
    if let Some(auth) = &auth {
        // Like the attestation, the protected resource metadata needs no token.
        router = router.merge(metadata_routes(auth.clone()));
    } else if era == Era::Legacy {
        router = router.layer(axum::middleware::from_fn(legacy_discover_gate));
    }

    tracing::info!(
        %local,
        %era,
        attestation = attestation.as_str(),
        issuer = auth.as_ref().map(|auth| auth.config().issuer.as_str()),
        "serving Streamable HTTP"
    );
    serve_until(listener, router, shutdown, ct).await
}

/// Serves `router` on `listener` until `shutdown` resolves, then cancels `ct`: that ends the
/// rmcp sessions and SSE streams, which would otherwise keep connections open.
pub(crate) async fn serve_until(
    listener: TcpListener,
    router: axum::Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    ct: CancellationToken,
) -> anyhow::Result<()> {
    // No Nagle: a response's last segment would otherwise wait for the client's delayed ACK
    // (up to 40 ms on Linux) whenever it follows a segment not yet acknowledged.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::warn!(%error, "could not turn off Nagle's algorithm on a connection");
        }
    });
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            tracing::info!("shutting down");
            ct.cancel();
        })
        .await
        .context("HTTP server failed")
}

/// The attestation route's state: the document, serialized once, and how often it was asked for.
struct WellKnown {
    mode: AttestationMode,
    body: Option<Bytes>,
    requests: AtomicU64,
}

impl WellKnown {
    fn new(mode: AttestationMode, origin: &str) -> anyhow::Result<Self> {
        let body = mode
            .document(Some(origin))
            .map(|document| serde_json::to_vec(&document).map(Bytes::from))
            .transpose()
            .context("could not serialize the attestation")?;
        Ok(Self {
            mode,
            body,
            requests: AtomicU64::new(0),
        })
    }
}

async fn serve_attestation(State(well_known): State<Arc<WellKnown>>) -> Response {
    // Counted so logs show whether (and how often) a host fetched it, e.g. once per connect.
    let count = well_known.requests.fetch_add(1, Ordering::Relaxed) + 1;
    tracing::info!(
        count,
        mode = well_known.mode.as_str(),
        "GET {WELL_KNOWN_PATH}"
    );
    match &well_known.body {
        Some(body) => ([(header::CONTENT_TYPE, "application/json")], body.clone()).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// rmcp checks `Host` against an allow-list to stop DNS rebinding. Its default covers the
/// loopback names; add the address we bound so e.g. 127.0.0.2 or a permitted LAN address work.
pub(crate) fn allow_hosts(
    config: StreamableHttpServerConfig,
    bound: IpAddr,
) -> StreamableHttpServerConfig {
    if bound.is_unspecified() {
        // Bound to every interface: any address of this machine may appear in `Host`.
        tracing::warn!("listening on all interfaces; Host header checks are disabled");
        return config.disable_allowed_hosts();
    }
    let mut hosts = config.allowed_hosts.clone();
    let bound = bound.to_string();
    if !hosts.contains(&bound) {
        hosts.push(bound);
    }
    config.with_allowed_hosts(hosts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_parse() {
        assert_eq!(
            parse_listen_addr("127.0.0.1:0").unwrap(),
            "127.0.0.1:0".parse().unwrap()
        );
        assert_eq!(
            parse_listen_addr("[::1]:8080").unwrap(),
            "[::1]:8080".parse().unwrap()
        );
        assert_eq!(
            parse_listen_addr("localhost:9").unwrap(),
            "127.0.0.1:9".parse().unwrap()
        );
        assert!(parse_listen_addr("example.com:80").is_err());
        assert!(parse_listen_addr("127.0.0.1").is_err());
    }

    #[test]
    fn origins_are_what_clients_connect_to() {
        assert_eq!(
            origin("127.0.0.1:8080".parse().unwrap()),
            "http://127.0.0.1:8080"
        );
        assert_eq!(origin("[::1]:8080".parse().unwrap()), "http://[::1]:8080");
    }

    #[test]
    fn only_loopback_counts_as_loopback() {
        for ip in ["127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1"] {
            assert!(is_loopback(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["0.0.0.0", "::", "192.168.1.2", "10.0.0.1"] {
            assert!(!is_loopback(ip.parse().unwrap()), "{ip}");
        }
    }
}
