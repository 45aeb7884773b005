//! The host's error type. Every variant names what went wrong and what to do, and carries a
//! stable [`ErrorCode`] ([`HostError::code`]) shared by the CLI's JSON output, the window's
//! IPC and the audit log.

use std::time::Duration;

use crate::error_code::ErrorCode;

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

    /// Signing in to a server (MCP authorization) was refused or failed; nothing was stored.
    /// `code` says why (`issuer_not_allowed`, `sign_in_cancelled`, `auth_required`, …).
    #[error("server {server:?}: sign-in {}: {detail}", code.code())]
    SignIn {
        server: String,
        code: crate::auth::SignInCode,
        detail: String,
    },

    /// The server was not admitted, and the posture does not let the host talk to it.
    #[error("server {server:?} is not admitted: {reason}{}: {detail}", code.map(|c| format!(" (code {c})")).unwrap_or_default())]
    NotAdmitted {
        server: String,
        /// Refused or unattested: what the admission found.
        status: crate::admission::Status,
        reason: ErrorCode,
        code: Option<u8>,
        detail: String,
    },

    /// The tool gate denied a call; nothing was sent to the server.
    #[error(
        "server {server:?}: {tool:?} was denied ({reason}): {detail}; nothing was sent to the server"
    )]
    ToolDenied {
        server: String,
        tool: String,
        reason: ErrorCode,
        detail: String,
    },

    /// A resource's or prompt's content that Gatehouse does not pass on (over the size cap,
    /// a blob that is not base64); nothing of it is shown.
    #[error("server {server:?}: {what}: {detail}")]
    ContentRefused {
        server: String,
        what: String,
        reason: ErrorCode,
        detail: String,
    },

    /// The server did not declare the capability, so it is not asked.
    #[error(
        "server {server:?} does not offer {what} (its capabilities do not declare them), so Gatehouse does not ask it"
    )]
    NotOffered { server: String, what: &'static str },

    /// A resource subscription over a limit (one client's share, or the server's slots).
    #[error("server {server:?}: {detail}")]
    SubscriptionLimit { server: String, detail: String },

    /// The audit log could not record a decision, so the decision does not take effect.
    #[error("the audit log cannot record this decision, so Gatehouse refuses it: {detail}")]
    AuditUnavailable { detail: String },

    /// The posture does not allow what was asked (e.g. a user approving tools under
    /// deny-by-default).
    #[error("not allowed by the posture: {detail}")]
    PostureForbids { detail: String },

    /// A locked admin bundle forbids what was asked (other trust roots, demo mode, a policy).
    #[error("locked by the admin bundle {bundle}: {detail}")]
    LockedByAdmin { bundle: String, detail: String },

    /// The server answered, but not as the protocol allows.
    #[error("server {server:?}: protocol error in {what}: {detail}")]
    Protocol {
        server: String,
        what: String,
        detail: String,
    },

    /// The server is suspended (the elicitation kill switch fired) until the user re-enables it.
    #[error(
        "server {server:?} is suspended since {since} ({reason}: {detail}); nothing was started or sent. Re-enable it with `gatehouse servers resume {server}` if you trust it again"
    )]
    Suspended {
        server: String,
        reason: String,
        detail: String,
        since: String,
    },

    /// The kill switch closed this connection: the server abused the elicitation channel.
    #[error(
        "server {server:?}: the connection was closed and the server suspended for abusing elicitations ({detail})"
    )]
    SessionKilled { server: String, detail: String },

    /// A request needed URL elicitations that did not complete (declined, refused, timed out,
    /// or repeated by the server).
    #[error("server {server:?}: {what} needs an elicitation that did not complete: {detail}")]
    ElicitationIncomplete {
        server: String,
        what: String,
        detail: String,
    },
}

impl HostError {
    /// The stable code: what the CLI prints, the window gets and the audit log records.
    pub fn code(&self) -> ErrorCode {
        match self {
            HostError::Config(_) => ErrorCode::ConfigInvalid,
            HostError::UnknownServer { .. } => ErrorCode::UnknownServer,
            HostError::Secret { .. } => ErrorCode::SecretUnavailable,
            HostError::Spawn { .. } => ErrorCode::SpawnFailed,
            HostError::Connect { .. } => ErrorCode::ConnectFailed,
            HostError::SignIn { code, .. } => (*code).into(),
            HostError::Transport { .. } => ErrorCode::TransportFailed,
            HostError::Timeout { .. } => ErrorCode::Timeout,
            HostError::Cancelled { .. } => ErrorCode::Cancelled,
            HostError::ServerError { .. } => ErrorCode::ServerError,
            HostError::Protocol { .. } => ErrorCode::ProtocolError,
            HostError::NotAdmitted { reason, .. } => *reason,
            HostError::ToolDenied { reason, .. } => *reason,
            HostError::ContentRefused { reason, .. } => *reason,
            HostError::NotOffered { .. } => ErrorCode::NotOffered,
            HostError::SubscriptionLimit { .. } => ErrorCode::SubscriptionLimit,
            HostError::AuditUnavailable { .. } => ErrorCode::AuditUnavailable,
            HostError::PostureForbids { .. } => ErrorCode::PostureForbids,
            HostError::LockedByAdmin { .. } => ErrorCode::LockedByAdmin,
            HostError::Suspended { .. } => ErrorCode::ServerSuspended,
            HostError::SessionKilled { .. } => ErrorCode::KillSessionOnElicitationAbuse,
            HostError::ElicitationIncomplete { .. } => ErrorCode::ElicitationIncomplete,
        }
    }

    /// True when the server or the gate (not the config or the network) said no. The CLI maps
    /// refusals to exit code 1 and everything else to 2.
    pub fn is_refusal(&self) -> bool {
        match self {
            HostError::SignIn { code, .. } => code.is_refusal(),
            HostError::ServerError { .. }
            | HostError::NotAdmitted { .. }
            | HostError::ToolDenied { .. }
            | HostError::ContentRefused { .. }
            | HostError::SubscriptionLimit { .. }
            | HostError::AuditUnavailable { .. }
            | HostError::PostureForbids { .. }
            | HostError::LockedByAdmin { .. }
            | HostError::Suspended { .. }
            | HostError::SessionKilled { .. }
            | HostError::ElicitationIncomplete { .. } => true,
            HostError::Config(_)
            | HostError::UnknownServer { .. }
            | HostError::Secret { .. }
            | HostError::Spawn { .. }
            | HostError::Connect { .. }
            | HostError::Transport { .. }
            | HostError::Timeout { .. }
            | HostError::Cancelled { .. }
            | HostError::NotOffered { .. }
            | HostError::Protocol { .. } => false,
        }
    }
}

/// Explains a transport or handshake failure in the user's terms: the innermost cause (what
/// actually happened, without SDK type names) and, for the common HTTP failures, what to do.
pub fn explain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut innermost = error;
    while let Some(source) = innermost.source() {
        innermost = source;
    }
    let mut cause = innermost.to_string();
    // rmcp's transport errors wrap the cause as "… Transport [<type name>] error: CAUSE, when
    // CONTEXT" without exposing it as a source; keep only CAUSE.
    if let Some(start) = cause.find("] error: ") {
        cause = cause[start + "] error: ".len()..].to_string();
        if let Some(end) = cause.rfind(", when ") {
            cause.truncate(end);
        }
    }
    let cause = cause.trim_end_matches([':', ' ']).to_string();
    let lower = cause.to_ascii_lowercase();
    let hint = if lower.contains("auth required") || lower.contains("http 401") {
        Some(
            "the server requires authorization (HTTP 401): store a token with `gatehouse secret set NAME` and set \"bearerTokenSecret\": \"NAME\" on the server",
        )
    } else if lower.contains("http 403") || lower.contains("insufficient scope") {
        Some("the server refused the credentials (HTTP 403)")
    } else if lower.contains("http 404") {
        Some("there is no MCP endpoint at this URL (HTTP 404); check the path, often /mcp")
    } else if lower.contains("redirect") || lower.contains("http 30") {
        Some(
            "the server redirected the request; Gatehouse follows only same-origin 307/308 redirects, because a redirect elsewhere would carry the session and credentials to another host: configure the final URL",
        )
    } else if lower.contains("content type") {
        Some(
            "an MCP endpoint answers with application/json or text/event-stream; is this URL the server's MCP endpoint?",
        )
    } else if lower.contains("http 5") {
        Some("the server failed while handling the request")
    } else if lower.contains("connection refused")
        || lower.contains("error sending request")
        || lower.contains("dns")
    {
        Some("nothing answered at that address; is the server running and the URL right?")
    } else {
        None
    };
    match hint {
        Some(hint) => format!("{cause}: {hint}"),
        None => cause,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("Transport [some::Type<Generic>] error: {0}")]
    struct Outer(#[source] Inner);

    #[derive(Debug, thiserror::Error)]
    #[error("{0}")]
    struct Inner(String);

    #[test]
    fn explain_uses_the_innermost_cause_and_adds_a_hint() {
        let wrapped = Inner(
            "Send message error Transport [a::B<c::D>] error: HTTP 502, when send discover request"
                .into(),
        );
        assert_eq!(
            explain(&wrapped),
            "HTTP 502: the server failed while handling the request"
        );
        let text = explain(&Outer(Inner("HTTP 500".into())));
        assert!(text.starts_with("HTTP 500: the server failed"), "{text}");
        assert!(!text.contains("some::Type"));
        let text = explain(&Outer(Inner(
            "Unexpected content type: Some(\"text/html\")".into(),
        )));
        assert!(
            text.contains("application/json or text/event-stream"),
            "{text}"
        );
        assert_eq!(explain(&Inner("odd".into())), "odd");
    }

    #[test]
    fn only_server_errors_are_refusals() {
        let refusal = HostError::ServerError {
            server: "s".into(),
            what: "w".into(),
            code: -32602,
            message: "m".into(),
        };
        assert!(refusal.is_refusal());
        assert_eq!(refusal.code(), ErrorCode::ServerError);
        assert_eq!(refusal.code().as_str(), "server_error");
        let timeout = HostError::Timeout {
            server: "s".into(),
            what: "w".into(),
            after: Duration::from_secs(1),
        };
        assert!(!timeout.is_refusal());
        assert!(timeout.to_string().contains("notifications/cancelled"));
    }
}
