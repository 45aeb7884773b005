//! `gatehouse serve` on stdio: what Claude Desktop, Cursor and the other clients launch.

use std::sync::Arc;

use gatehouse_host::DownstreamTransport;
use gatehouse_host::host::Host;
use rmcp::ServiceExt;
use rmcp::service::ServerInitializeError;

use crate::headless::HeadlessConsent;
use crate::server::{Gateway, GatewayHandler};

/// How long calls cancelled by a departing client get to end.
const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(3);
/// Then how long their cancellations get to reach the servers' pipes.
const FLUSH_GRACE: std::time::Duration = std::time::Duration::from_millis(300);

/// Serves one client on this process's stdin/stdout until it closes stdin. Upstream servers
/// (or the `only` one) connect all at once in the background. Only rmcp writes to stdout.
/// `unattended`: the host's consent UI when it asks nobody (see [`Gateway::with_unattended`]).
pub async fn serve_stdio(
    host: Arc<Host>,
    client: String,
    only: Option<String>,
    startup_wait: std::time::Duration,
    unattended: Option<Arc<HeadlessConsent>>,
) -> Result<(), String> {
    host.connect_in_background(only.clone());
    let gateway = Arc::new(
        Gateway::new(host.clone(), client, DownstreamTransport::Stdio)
            .with_only(only)
            .with_startup_wait(startup_wait)
            .with_unattended(unattended),
    );
    let running = match GatewayHandler(gateway.clone())
        .serve(rmcp::transport::stdio())
        .await
    {
        Ok(running) => running,
        // The client left before asking anything.
        Err(ServerInitializeError::ConnectionClosed(_)) => {
            host.shutdown().await;
            return Ok(());
        }
        Err(error) => {
            host.shutdown().await;
            return Err(format!("the client's handshake failed: {error}"));
        }
    };
    let quit = running.waiting().await;
    gateway.end();
    // The client is gone: its calls were cancelled; let them tell their servers before the
    // connections close. A cancelled call queued its notifications/cancelled with rmcp, whose
    // session drops what it has not written once it is cancelled: a moment to write it.
    if gateway.calls_ended(CANCEL_GRACE).await {
        tokio::time::sleep(FLUSH_GRACE).await;
    }
    host.shutdown().await;
    quit.map(|_| ())
        .map_err(|e| format!("the stdio session failed: {e}"))
}
