//! Which protocol era(s) the demo server accepts, and how that choice is enforced.
//!
//! rmcp 3.9 decides what a server accepts from two handler hooks, and the demo uses both:
//!
//! * [`ServerHandler::supported_protocol_versions`](rmcp::ServerHandler::supported_protocol_versions)
//!   bounds `initialize` negotiation, is advertised by `server/discover`, and is checked against
//!   every per-request `_meta` protocol version (an out-of-list version gets `-32022`
//!   UnsupportedProtocolVersion, HTTP 400).
//! * The `protocolVersion` in [`ServerHandler::get_info`](rmcp::ServerHandler::get_info) is the
//!   fallback `initialize` answers with. When it names a revision without a handshake
//!   (2026-07-28) and the supported list has no handshake version either, rmcp refuses
//!   `initialize` with `-32022`. That is how a modern-only server behaves in rmcp.
//!
//! rmcp has no switch for "legacy only". A server whose list stops at 2025-11-25 still answers
//! `server/discover` (rmcp dispatches it before any handshake), and a discover that names
//! 2026-07-28 is refused with `-32022` rather than method-not-found. A client that prefers only
//! 2026-07-28 then stops with "no compatible version" instead of falling back to `initialize`.
//! A real pre-2026 server has never heard of `server/discover` and answers it as an unknown
//! method, so the demo puts that answer in front of rmcp's version check: [`EraGate`] for
//! stdio, [`legacy_discover_gate`] for session-less HTTP POSTs, and the handler's own
//! `discover` for requests inside an HTTP session.

use std::{borrow::Cow, fmt, str::FromStr};

use axum::{
    body::{Body, to_bytes},
    extract::Request,
    http::{StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use rmcp::{
    ErrorData, RoleServer, Service,
    model::{
        ClientNotification, ClientRequest, DiscoverRequestMethod, ProtocolVersion, ServerConfig,
        ServerResult,
    },
    service::{NotificationContext, RequestContext},
};

/// The only revision a modern-only server speaks.
const MODERN_ONLY: &[ProtocolVersion] = &[ProtocolVersion::V_2026_07_28];

/// The largest session-less POST body the legacy discover gate buffers. It matches rmcp's own
/// Streamable HTTP limit (4 MiB), so the gate never refuses a body rmcp would have accepted.
const MAX_GATED_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The protocol era(s) a demo server instance accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Era {
    /// 2025-11-25 and older: the `initialize` handshake only; `server/discover` is unknown.
    Legacy,
    /// 2026-07-28 only: `server/discover` and per-request `_meta`; `initialize` is refused.
    Modern,
    /// Both lifecycles, the way rmcp 3.9 serves by default.
    #[default]
    Both,
}

impl Era {
    /// The values accepted on the command line, in the order they are documented.
    pub const NAMES: [&'static str; 3] = ["2025-11-25", "2026-07-28", "both"];

    /// The protocol versions this era serves; see the module docs for what rmcp does with them.
    pub fn supported_versions(self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(match self {
            Era::Legacy => ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25),
            Era::Modern => MODERN_ONLY,
            Era::Both => ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28),
        })
    }

    /// The version `initialize` falls back to when the client asks for one we do not serve.
    ///
    /// For [`Era::Modern`] this is 2026-07-28, which has no handshake: rmcp then finds no
    /// version it may answer `initialize` with and refuses it with `-32022`.
    pub fn handshake_fallback(self) -> ProtocolVersion {
        match self {
            Era::Legacy | Era::Both => ProtocolVersion::V_2025_11_25,
            Era::Modern => ProtocolVersion::V_2026_07_28,
        }
    }

    /// Whether `server/discover` exists in this era.
    pub fn serves_discover(self) -> bool {
        self != Era::Legacy
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Era::Legacy => Self::NAMES[0],
            Era::Modern => Self::NAMES[1],
            Era::Both => Self::NAMES[2],
        })
    }
}

impl FromStr for Era {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "2025-11-25" => Ok(Era::Legacy),
            "2026-07-28" => Ok(Era::Modern),
            "both" => Ok(Era::Both),
            other => Err(format!(
                "unknown era {other:?}; expected one of {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

/// The error a server that predates 2026-07-28 gives for `server/discover`.
pub fn discover_not_found() -> ErrorData {
    ErrorData::method_not_found::<DiscoverRequestMethod>()
}

/// Wraps an rmcp service so that, in [`Era::Legacy`], `server/discover` is an unknown method
/// before rmcp's per-request version check can answer it with `-32022`.
///
/// Used for stdio, where rmcp hands the pre-handshake `server/discover` straight to the
/// service. Everything else is delegated unchanged.
pub struct EraGate<S> {
    era: Era,
    inner: S,
}

impl<S> EraGate<S> {
    pub fn new(era: Era, inner: S) -> Self {
        Self { era, inner }
    }
}

impl<S: Service<RoleServer>> Service<RoleServer> for EraGate<S> {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        if !self.era.serves_discover() && matches!(request, ClientRequest::DiscoverRequest(_)) {
            return Err(discover_not_found());
        }
        self.inner.handle_request(request, context).await
    }

    async fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.handle_notification(notification, context).await
    }

    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }
}

/// axum middleware for [`Era::Legacy`] over Streamable HTTP.
///
/// rmcp routes a session-less `server/discover` to a one-shot handler whose version check runs
/// first, so the handler's own method-not-found answer is never reached for a 2026-07-28 probe.
/// This answers it the way a legacy session server answers any session-less non-`initialize`
/// POST: HTTP 400, here with a correlated JSON-RPC `-32601` body. Everything else, including
/// every request that carries `Mcp-Session-Id`, passes through untouched.
pub async fn legacy_discover_gate(request: Request, next: Next) -> Response {
    let is_sessionless_post = request.method() == axum::http::Method::POST
        && !request.headers().contains_key("mcp-session-id");
    if !is_sessionless_post {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match to_bytes(body, MAX_GATED_BODY_BYTES).await {
        Ok(bytes) => bytes,
        Err(_) => return (StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large").into_response(),
    };
    if let Ok(message) = serde_json::from_slice::<serde_json::Value>(&bytes)
        && message.get("method").and_then(|method| method.as_str()) == Some("server/discover")
        && let Some(id) = message.get("id")
    {
        tracing::info!("refusing server/discover: this server only speaks the 2025-11-25 era");
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": discover_not_found(),
        });
        return (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in Era::NAMES {
            let era: Era = name.parse().expect("documented name parses");
            assert_eq!(era.to_string(), name);
        }
        assert!("2025-06-18".parse::<Era>().is_err());
    }

    #[test]
    fn version_lists_match_the_eras() {
        let legacy = Era::Legacy.supported_versions();
        assert!(legacy.contains(&ProtocolVersion::V_2025_11_25));
        assert!(!legacy.contains(&ProtocolVersion::V_2026_07_28));
        assert_eq!(
            Era::Modern.supported_versions().as_ref(),
            &[ProtocolVersion::V_2026_07_28]
        );
        let both = Era::Both.supported_versions();
        assert!(both.contains(&ProtocolVersion::V_2025_11_25));
        assert!(both.contains(&ProtocolVersion::V_2026_07_28));
        assert!(!Era::Modern.handshake_fallback().has_initialize());
    }
}
