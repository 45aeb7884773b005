//! An AI client in the test's own process: rmcp's client (the official SDK) connected to any
//! rmcp server handler over an in-memory pipe, so a test drives the gateway exactly as a
//! client on stdio would, without a process or a socket. (Feature `mcp`.)

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{RoleClient, RoleServer, RunningService, Service};
use rmcp::{ServiceError, ServiceExt};

/// A connected client session.
pub type Client = RunningService<RoleClient, ClientConfig>;

/// How many bytes the pipe buffers each way: more than any one message of the tests.
const PIPE: usize = 1 << 20;

/// Serves `server` on one end of a pipe (on a task of its own, until the client leaves) and
/// initializes a client named `name` on the other in `version`. Panics when the handshake
/// fails.
pub async fn connect<S>(server: S, name: &str, version: ProtocolVersion) -> Client
where
    S: Service<RoleServer> + Send + 'static,
{
    let (ours, theirs) = tokio::io::duplex(PIPE);
    let (read, write) = tokio::io::split(theirs);
    tokio::spawn(async move {
        if let Ok(running) = server.serve((read, write)).await {
            let _ = running.waiting().await;
        }
    });
    let mut info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new(name, "1.0"),
    );
    info.protocol_version = version;
    let (read, write) = tokio::io::split(ours);
    info.serve((read, write)).await.expect("initialize")
}

/// The stable code Gatehouse put in a JSON-RPC error's data (`data.gatehouse`), or a sentence
/// saying the error was not a JSON-RPC error.
pub fn code(error: &ServiceError) -> String {
    match error {
        ServiceError::McpError(data) => data
            .data
            .as_ref()
            .and_then(|d| d["gatehouse"].as_str())
            .unwrap_or_default()
            .to_string(),
        other => format!("not a JSON-RPC error: {other}"),
    }
}
