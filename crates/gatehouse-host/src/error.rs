//! The host's error type. Every variant names what went wrong and what to do, and carries a
//! stable snake_case [`HostError::code`] shared by the CLI's JSON output and, later, the audit
//! log and the UI.

use std::time::Duration;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The configuration file or a server spec is invalid.
    #[error("{0}")]
    Config(String),

    /// A server name that is not configured.
    #[error(
        "no server named {name:?} in {config}; configured: {known}. Add it with `gatehouse servers add`, or give an ad-hoc server with --stdio or --url"
    )]
    UnknownServer {
        name: String,
        config: String,
        known: String,
    },

    /// A secret referenced by the config could not be read from (or written to) the keychain.
    #[error("secret {name:?}: {detail}")]
    Secret { name: String, detail: String },

    /// A stdio server could not be started.
    #[error("server {server:?}: could not start {command:?}: {detail}")]
    Spawn {
        server: String,
        command: String,
        detail: String,
    },

    /// The MCP handshake did not complete.
    #[error("server {server:?}: could not connect: {detail}")]
    Connect { server: String, detail: String },

    /// The connection broke or the server broke the transport's rules (bad framing, oversize
    /// message, exit, HTTP error). The server is unusable until reconnected.
    #[error("server {server:?}: {detail}")]
    Transport { server: String, detail: String },

    /// A request got no answer in time; a cancellation was sent.
    #[error("server {server:?}: no answer to {what} within {}s; sent notifications/cancelled. Raise --timeout if the tool is slow", after.as_secs_f64())]
    Timeout {
        server: String,
        what: String,
        after: Duration,
    },

    /// The user aborted the request; a cancellation was sent.
    #[error("server {server:?}: {what} cancelled by the user; sent notifications/cancelled")]
    Cancelled { server: String, what: String },

    /// The server answered with a JSON-RPC error.
    #[error("server {server:?} refused {what}: {message} (JSON-RPC error {code})")]
    ServerError {
        server: String,
        what: String,
        code: i32,
        message: String,
    },

    /// The server answered, but not as the protocol allows.
    #[error("server {server:?}: protocol error in {what}: {detail}")]
    Protocol {
        server: String,
        what: String,
        detail: String,
    },
}

impl HostError {
    /// Stable snake_case reason code.
    pub fn code(&self) -> &'static str {
        match self {
            HostError::Config(_) => "config_invalid",
            HostError::UnknownServer { .. } => "unknown_server",
            HostError::Secret { .. } => "secret_unavailable",
            HostError::Spawn { .. } => "spawn_failed",
            HostError::Connect { .. } => "connect_failed",
            HostError::Transport { .. } => "transport_failed",
            HostError::Timeout { .. } => "timeout",
            HostError::Cancelled { .. } => "cancelled",
            HostError::ServerError { .. } => "server_error",
            HostError::Protocol { .. } => "protocol_error",
        }
    }

    /// True when the server (not the host, the config or the network) said no. The CLI maps
    /// refusals to exit code 1 and everything else to 2.
    pub fn is_refusal(&self) -> bool {
        match self {
            HostError::ServerError { .. } => true,
            HostError::Config(_)
            | HostError::UnknownServer { .. }
            | HostError::Secret { .. }
            | HostError::Spawn { .. }
            | HostError::Connect { .. }
            | HostError::Transport { .. }
            | HostError::Timeout { .. }
            | HostError::Cancelled { .. }
            | HostError::Protocol { .. } => false,
        }
    }
}

/// Renders an error and its whole `source()` chain on one line, without repeating a cause that
/// the outer message already contains.
pub fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let part = cause.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = cause.source();
    }
    text
}
