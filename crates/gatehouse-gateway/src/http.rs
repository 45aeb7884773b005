//! `gatehouse serve --http 127.0.0.1:PORT`: the gateway over Streamable HTTP at `/mcp`, for
//! clients that reach MCP servers by URL. Loopback only; every request carries a client's
//! bearer token (see [`crate::tokens`]), which also names the client in the audit log; `Host`
//! and `Origin` must be this listener's own (DNS rebinding); bodies are capped.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use gatehouse_host::DownstreamTransport;
use gatehouse_host::caller::UNNAMED_CLIENT;
use gatehouse_host::host::Host;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::headless::HeadlessConsent;
use crate::server::{Gateway, GatewayHandler};
use crate::tokens::TokenBook;

/// The MCP endpoint's path.
pub const MCP_PATH: &str = "/mcp";
/// The largest request body served (a tool call's arguments included).
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

pub use crate::tokens::HttpClient;

/// `IP:PORT` (IPv6 in brackets) or `localhost:PORT`, which must be loopback.
pub fn parse_loopback_addr(value: &str) -> Result<SocketAddr, String> {
    let addr = match value.parse::<SocketAddr>() {
        Ok(addr) => addr,
        Err(_) => value
            .strip_prefix("localhost:")
            .and_then(|port| port.parse::<u16>().ok())
            .map(|port| SocketAddr::from(([127, 0, 0, 1], port)))
            .ok_or_else(|| {
                format!("expected 127.0.0.1:PORT, [::1]:PORT or localhost:PORT, not {value:?}")
            })?,
    };
    check_loopback(addr)?;
    Ok(addr)
}

/// Checks `addr` is loopback: the gateway is never reachable from another machine.
pub fn check_loopback(addr: SocketAddr) -> Result<(), String> {
    if addr.ip().to_canonical().is_loopback() {
        Ok(())
    } else {
        Err(format!(
            "{addr} is not a loopback address: gatehouse serve --http listens on 127.0.0.1 or [::1] only"
        ))
    }
}

/// Every `Host` value and origin a client on this machine reaches `local` by.
fn own_names(local: SocketAddr) -> (Vec<String>, Vec<String>) {
    let port = local.port();
    let mut hosts = vec![local.to_string(), format!("localhost:{port}")];
    if local.ip().is_ipv4() {
        hosts.push(format!("127.0.0.1:{port}"));
    } else {
        hosts.push(format!("[::1]:{port}"));
    }
    hosts.dedup();
    let origins = hosts.iter().map(|h| format!("http://{h}")).collect();
    (hosts, origins)
}

async fn require_token(
    State(book): State<Arc<TokenBook>>,
    mut request: Request,
    next: Next,
) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let client = match token {
        Some(token) => book.client_of(token).await,
        None => None,
    };
    match client {
        Some(client) => {
            request.extensions_mut().insert(HttpClient(client));
            next.run(request).await
        }
        None => {
            let said = if token.is_some() {
                "this bearer token is not one Gatehouse gave a client"
            } else {
                "a bearer token is required"
            };
            (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer realm=\"gatehouse\"")],
                Body::from(format!(
                    "{said}: make one with `gatehouse clients token CLIENT` and send it as Authorization: Bearer TOKEN\n"
                )),
            )
                .into_response()
        }
    }
}

/// Serves the gateway on `listener` until `shutdown` is cancelled. Upstream servers (or the
/// `only` one) connect all at once in the background. `unattended`: the host's consent UI
/// when it asks nobody (see [`Gateway::with_unattended`]); `None` on the app's host.
pub async fn serve_http(
    host: Arc<Host>,
    listener: TcpListener,
    book: Arc<TokenBook>,
    only: Option<String>,
    startup_wait: Duration,
    unattended: Option<Arc<HeadlessConsent>>,
    shutdown: CancellationToken,
) -> Result<(), String> {
    let local = listener
        .local_addr()
        .map_err(|e| format!("the listener has no address: {e}"))?;
    check_loopback(local)?;
    host.connect_in_background(only.clone());
    let (hosts, origins) = own_names(local);
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_json_response(true)
        .with_cancellation_token(shutdown.child_token());
    // One gateway per session (or per request, without sessions); each request's client is
    // the one its token names.
    let service: StreamableHttpService<GatewayHandler, LocalSessionManager> =
        StreamableHttpService::new(
            move || {
                Ok(GatewayHandler(Arc::new(
                    Gateway::new(
                        host.clone(),
                        UNNAMED_CLIENT.to_string(),
                        DownstreamTransport::Http,
                    )
                    .with_only(only.clone())
                    .with_startup_wait(startup_wait)
                    .with_unattended(unattended.clone()),
                )))
            },
            Default::default(),
            config,
        );
    let router = axum::Router::new()
        .nest_service(MCP_PATH, service)
        .layer(axum::middleware::from_fn_with_state(book, require_token));
    // No Nagle: a response's last segment would otherwise wait for the client's delayed ACK
    // (up to 40 ms on Linux) whenever it follows a segment not yet acknowledged.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::warn!(%error, "could not turn off Nagle's algorithm on a client connection");
        }
    });
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
        .map_err(|e| format!("the HTTP server failed: {e}"))
}
