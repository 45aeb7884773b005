//! Where the MCP endpoint is: its path and the origin a client reaches a listener at. Apart
//! from [`crate::http`] so the auth layer (which the HTTP server mounts) can name them too.

use std::net::SocketAddr;

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// The origin a client reaches the listener at, `http://IP:PORT` (IPv6 in brackets).
pub fn origin(local: SocketAddr) -> String {
    format!("http://{local}")
}
