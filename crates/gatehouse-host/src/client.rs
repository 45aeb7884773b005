//! The host's side of an MCP connection: what it declares, and how it answers what the server
//! sends (elicitations, progress, logs, list changes).
//!
//! With an elicitation broker (a [`Session`]), every elicitation goes through its policy,
//! consent UI and receipts. Without one, every elicitation is declined and reported as a
//! [`HostEvent`], in both eras: fail closed. Only the conformance-suite client
//! ([`ElicitationMode::AcceptDefaults`]) answers them without a person, by accepting the
//! schema's defaults, because the suite checks exactly that.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[allow(deprecated)]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CustomNotification, CustomRequest, CustomResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, ErrorCode,
    ErrorData, FormElicitationCapability, Implementation, ProgressNotificationParam,
    ProtocolVersion, UrlElicitationCapability,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, RoleClient};

use crate::broker::{Arrival, Association, Session};
use crate::connection::{Delivery, ProgressDispatcher};
use crate::tap::ProgressCount;
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::broadcast;

/// How elicitations are answered until the elicitation engine exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ElicitationMode {
    /// Decline every elicitation and report it.
    #[default]
    DeclineAndLog,
    /// Accept form elicitations with the schema defaults (conformance mode only); URL
    /// elicitations are still declined, since nothing may open a browser unattended.
    AcceptDefaults,
}

/// Something the server did that the user should see.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum HostEvent {
    Progress {
        server: String,
        token: Value,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// `notifications/tools/list_changed`: the next tool listing fetches afresh.
    ToolsChanged { server: String },
    /// An elicitation and how it was answered.
    Elicitation {
        server: String,
        /// `None` for an elicitation of a mode the host does not know (answered `decline`).
        mode: Option<gatehouse_policy::Mode>,
        message: String,
        /// The URL of a URL-mode elicitation, as sent.
        url: Option<String>,
        action: crate::broker::ElicitationAnswer,
        reason: String,
    },
    /// An `elicitation/create` the host could not parse (schema outside the form subset,
    /// unknown mode); answered with -32602.
    ElicitationRefused { server: String, detail: String },
    Log {
        server: String,
        level: String,
        data: Value,
    },
    /// `notifications/resources/updated` for a resource this connection subscribed to
    /// (updates for anything else are dropped).
    ResourceUpdated { server: String, uri: String },
    /// `notifications/prompts/list_changed` or `notifications/resources/list_changed`.
    ContextChanged { server: String },
    /// A notification the host does not act on yet (for example
    /// `notifications/elicitation/complete`), recorded so nothing is silently dropped.
    Unhandled { server: String, method: String },
}

pub struct HostClient {
    server: String,
    info: ClientConfig,
    mode: ElicitationMode,
    events: broadcast::Sender<HostEvent>,
    tools_stale: Arc<AtomicBool>,
    progress: Arc<ProgressCount>,
    /// Hands each progress notification to the call it belongs to.
    dispatcher: Arc<ProgressDispatcher>,
    /// The broker session, set once the handshake is done (the watch lets a request that
    /// arrives in between wait for it).
    session: Option<tokio::sync::watch::Receiver<Option<Arc<Session>>>>,
    /// The resources subscribed to (shared with the connection).
    subscribed: Option<crate::connection::Subscribed>,
    /// Which prompt and resource listings changed (shared with the connection's caches).
    context_stale: Option<Arc<crate::connection::ContextStale>>,
}

/// How long a server request that arrives during the handshake waits for the session before
/// it is declined.
const SESSION_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// What every Gatehouse connection declares: form and URL elicitation, nothing else.
pub fn client_info() -> ClientConfig {
    let mut capabilities = ClientCapabilities::default();
    capabilities.elicitation = Some(
        ElicitationCapability::new()
            .with_form(FormElicitationCapability::default())
            .with_url(UrlElicitationCapability::default()),
    );
    let mut implementation = Implementation::new("gatehouse", env!("CARGO_PKG_VERSION"));
    implementation.title = Some("Gatehouse".into());
    let mut info = ClientConfig::new(capabilities, implementation);
    // Used by `initialize`; the discover path negotiates its own version.
    info.protocol_version = ProtocolVersion::V_2025_11_25;
    info
}

impl HostClient {
    pub fn new(
        server: &str,
        mode: ElicitationMode,
        events: broadcast::Sender<HostEvent>,
        tools_stale: Arc<AtomicBool>,
        progress: Arc<ProgressCount>,
        dispatcher: Arc<ProgressDispatcher>,
    ) -> Self {
        HostClient {
            server: server.to_string(),
            info: client_info(),
            mode,
            events,
            tools_stale,
            progress,
            dispatcher,
            session: None,
            subscribed: None,
            context_stale: None,
        }
    }

    /// Marks the connection's prompt and resource listings stale on their `list_changed`.
    pub fn with_context_stale(mut self, stale: Arc<crate::connection::ContextStale>) -> Self {
        self.context_stale = Some(stale);
        self
    }

    /// Passes on resource updates only for the URIs in `subscribed`.
    pub fn with_subscriptions(mut self, subscribed: crate::connection::Subscribed) -> Self {
        self.subscribed = Some(subscribed);
        self
    }

    /// Routes elicitations and completions through the broker session that `session` will
    /// carry once the connection is set up.
    pub fn with_pending_session(
        mut self,
        session: tokio::sync::watch::Receiver<Option<Arc<Session>>>,
    ) -> Self {
        self.session = Some(session);
        self
    }

    /// `None` without a broker. `Some(None)` when the session never came: fail closed.
    async fn session(&self) -> Option<Option<Arc<Session>>> {
        let mut rx = self.session.clone()?;
        let ready = tokio::time::timeout(SESSION_WAIT, rx.wait_for(Option::is_some)).await;
        Some(match ready {
            Ok(Ok(session)) => session.clone(),
            _ => None,
        })
    }

    fn emit(&self, event: HostEvent) {
        // No subscriber is fine: events are for whoever is watching.
        let _ = self.events.send(event);
    }

    /// Answers one elicitation, in either era, and reports it.
    pub fn answer(&self, params: &ElicitRequestParams) -> ElicitResult {
        answer_elicitation(&self.server, self.mode, params, &self.events)
    }
}

/// The answer to an elicitation under `mode`, reported on `events`. Shared by the 2025-11-25
/// `elicitation/create` handler and the 2026-07-28 MRTR rounds.
pub fn answer_elicitation(
    server: &str,
    mode: ElicitationMode,
    params: &ElicitRequestParams,
    events: &broadcast::Sender<HostEvent>,
) -> ElicitResult {
    // rmcp's enum is non-exhaustive: a mode it learns later is declined here until the host
    // knows how to show it.
    let (kind, message, url, schema) = match params {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => (
            Some(gatehouse_policy::Mode::Form),
            message.clone(),
            None,
            Some(serde_json::to_value(requested_schema).unwrap_or(Value::Null)),
        ),
        ElicitRequestParams::UrlElicitationParams { message, url, .. } => (
            Some(gatehouse_policy::Mode::Url),
            message.clone(),
            Some(url.clone()),
            None,
        ),
        _ => (None, String::new(), None, None),
    };
    let (result, action, reason) = match (mode, schema) {
        (ElicitationMode::AcceptDefaults, Some(schema)) => (
            ElicitResult::new(ElicitationAction::Accept)
                .with_content(Value::Object(schema_defaults(&schema))),
            crate::broker::ElicitationAnswer::Accept,
            "conformance mode: accepted with the schema defaults".to_string(),
        ),
        (ElicitationMode::AcceptDefaults, None) => (
            ElicitResult::new(ElicitationAction::Decline),
            crate::broker::ElicitationAnswer::Decline,
            "conformance mode answers only form elicitations and never opens a browser".to_string(),
        ),
        (ElicitationMode::DeclineAndLog, _) => (
            ElicitResult::new(ElicitationAction::Decline),
            crate::broker::ElicitationAnswer::Decline,
            "no elicitation broker on this connection; every elicitation is declined".to_string(),
        ),
    };
    tracing::info!(
        server,
        mode = kind.map_or("unknown", gatehouse_policy::Mode::as_str),
        action = action.as_str(),
        %reason,
        "elicitation answered"
    );
    let _ = events.send(HostEvent::Elicitation {
        server: server.to_string(),
        mode: kind,
        message: shown(message),
        url: url.map(shown),
        action,
        reason,
    });
    result
}

/// The event for an elicitation the broker handled, in either era: the server's message (plain
/// text, for the caller to show safely), the URL shown, the answer and the receipt.
pub fn brokered_event(
    server: &str,
    params: &ElicitRequestParams,
    record: &crate::broker::ElicitationRecord,
) -> HostEvent {
    let message = match params {
        ElicitRequestParams::FormElicitationParams { message, .. }
        | ElicitRequestParams::UrlElicitationParams { message, .. } => message.clone(),
        _ => String::new(),
    };
    HostEvent::Elicitation {
        server: server.to_string(),
        mode: Some(record.mode),
        message: shown(message),
        url: record.url.as_ref().map(|u| shown(u.full.clone())),
        action: record.action,
        reason: format!("{} (receipt {})", record.decision, record.receipt_id),
    }
}

/// What an event keeps of a server's text: events are queued for every subscriber and printed,
/// so a 16 MiB message is cut like on a card.
fn shown(text: String) -> String {
    crate::broker::truncate_for_display(text, crate::broker::MAX_SHOWN_MESSAGE_BYTES)
}

/// `{field: default}` for every property of a form schema that has a default.
pub fn schema_defaults(schema: &Value) -> Map<String, Value> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .filter_map(|(name, property)| {
                    property.get("default").map(|d| (name.clone(), d.clone()))
                })
                .collect()
        })
        .unwrap_or_default()
}

impl ClientHandler for HostClient {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let session = match self.session().await {
            None => return Ok(self.answer(&request)),
            Some(None) => {
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            }
            Some(Some(session)) => session,
        };
        // Streamable HTTP marks which POST's stream a server request arrived on (SEP-2260).
        let association = match context
            .extensions
            .get::<rmcp::service::InboundStreamOrigin>()
        {
            Some(rmcp::service::InboundStreamOrigin::OutboundRequest(id)) => {
                Association::Stream(serde_json::to_value(id).unwrap_or(Value::Null))
            }
            Some(rmcp::service::InboundStreamOrigin::Unassociated) => Association::Unassociated,
            None => Association::Unknown,
        };
        let (result, record) = session
            .broker()
            .elicit(
                &session,
                &request,
                Arrival::Request(association),
                // Cancelled when the server cancels this request or the connection ends.
                &context.ct,
            )
            .await;
        self.emit(brokered_event(&self.server, &request, &record));
        Ok(result)
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleClient>,
    ) -> Result<CustomResult, ErrorData> {
        // rmcp parses a well-formed elicitation into `create_elicitation`; one that lands here
        // has a schema outside the form subset or an unknown mode.
        if request.method == "elicitation/create" {
            let detail = "Gatehouse cannot show this elicitation: its requestedSchema is outside MCP's form subset (a flat object of string, number, integer, boolean and enum fields) or its mode is unknown".to_string();
            if let Some(Some(session)) = self.session().await {
                let raw = request.params.clone().unwrap_or(Value::Null);
                session.broker().unsupported(&session, &raw, &detail);
            }
            self.emit(HostEvent::ElicitationRefused {
                server: self.server.clone(),
                detail: detail.clone(),
            });
            return Err(ErrorData::new(ErrorCode::INVALID_PARAMS, detail, None));
        }
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Gatehouse does not implement {}", request.method),
            None,
        ))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // To the one call whose current request carries the token, without waiting: a call
        // whose queue is full misses this step (best effort, as its channel always was).
        match self.dispatcher.deliver(&params) {
            Delivery::Full => {
                tracing::debug!(server = %self.server, "a call's progress queue is full; one progress notification dropped")
            }
            Delivery::Delivered | Delivery::Unrouted | Delivery::Closed => {}
        }
        // Also for whoever watches the host (a front end printing progress).
        self.emit(HostEvent::Progress {
            server: self.server.clone(),
            token: serde_json::to_value(&params.progress_token).unwrap_or(Value::Null),
            progress: params.progress,
            total: params.total,
            message: params.message,
        });
        // Counted last: a call that settles has its progress queued by then.
        self.progress.handled();
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let subscribed = self.subscribed.as_ref().is_some_and(|s| {
            s.lock()
                .expect("subscriptions poisoned")
                .contains_key(&params.uri)
        });
        if subscribed {
            self.emit(HostEvent::ResourceUpdated {
                server: self.server.clone(),
                uri: params.uri,
            });
        }
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(stale) = &self.context_stale {
            stale.resources_changed();
        }
        self.emit(HostEvent::ContextChanged {
            server: self.server.clone(),
        });
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(stale) = &self.context_stale {
            stale.prompts_changed();
        }
        self.emit(HostEvent::ContextChanged {
            server: self.server.clone(),
        });
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_stale.store(true, Ordering::SeqCst);
        self.emit(HostEvent::ToolsChanged {
            server: self.server.clone(),
        });
    }

    // Logging is deprecated in 2026-07-28, but 2025-11-25 servers still send it; show it.
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let level = serde_json::to_value(params.level)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        self.emit(HostEvent::Log {
            server: self.server.clone(),
            level,
            data: params.data,
        });
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        if notification.method == "notifications/elicitation/complete" {
            // Counted as handled on every path, or a call would wait for it in vain.
            let handled = &self.progress;
            if let Some(Some(session)) = self.session().await {
                let id = notification
                    .params
                    .as_ref()
                    .and_then(|p| p.get("elicitationId"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                session.broker().complete(&session, id);
                handled.handled();
                return;
            }
            handled.handled();
        }
        self.emit(HostEvent::Unhandled {
            server: self.server.clone(),
            method: notification.method,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_are_collected_per_field() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "nick": {"type": "string"}
        }});
        let defaults = schema_defaults(&schema);
        assert_eq!(
            Value::Object(defaults),
            json!({"name": "John Doe", "age": 30})
        );
        assert!(schema_defaults(&json!({"type": "object"})).is_empty());
    }

    fn form() -> ElicitRequestParams {
        serde_json::from_value(
            json!({"mode": "form", "message": "Who?", "requestedSchema": {
            "type": "object", "properties": {"name": {"type": "string", "default": "Ada"}}}}),
        )
        .unwrap()
    }

    #[test]
    fn decline_mode_declines_and_reports() {
        let (tx, mut rx) = broadcast::channel(4);
        let result = answer_elicitation("s", ElicitationMode::DeclineAndLog, &form(), &tx);
        assert_eq!(result.action, ElicitationAction::Decline);
        assert!(result.content.is_none());
        let HostEvent::Elicitation { action, mode, .. } = rx.try_recv().unwrap() else {
            panic!()
        };
        assert_eq!(
            (action, mode),
            (
                crate::broker::ElicitationAnswer::Decline,
                Some(gatehouse_policy::Mode::Form)
            )
        );
    }

    #[test]
    fn a_huge_message_is_reported_cut() {
        let (tx, mut rx) = broadcast::channel(4);
        let huge: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "url", "message": "Sign in ".repeat(200_000),
            "url": format!("https://example.com/{}", "p".repeat(1 << 20)), "elicitationId": "e1"}))
        .unwrap();
        answer_elicitation("s", ElicitationMode::DeclineAndLog, &huge, &tx);
        let HostEvent::Elicitation { message, url, .. } = rx.try_recv().unwrap() else {
            panic!()
        };
        let bound = crate::broker::MAX_SHOWN_MESSAGE_BYTES + 100;
        assert!(message.len() <= bound && message.contains("truncated by Gatehouse"));
        let url = url.unwrap();
        assert!(url.len() <= bound && url.starts_with("https://example.com/ppp"));
        // A short one is reported whole.
        answer_elicitation("s", ElicitationMode::DeclineAndLog, &form(), &tx);
        let HostEvent::Elicitation { message, .. } = rx.try_recv().unwrap() else {
            panic!()
        };
        assert_eq!(message, "Who?");
    }

    #[test]
    fn conformance_mode_accepts_forms_with_defaults_but_never_urls() {
        let (tx, _rx) = broadcast::channel(4);
        let result = answer_elicitation("s", ElicitationMode::AcceptDefaults, &form(), &tx);
        assert_eq!(result.action, ElicitationAction::Accept);
        assert_eq!(result.content, Some(json!({"name": "Ada"})));
        let url: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "url", "message": "Sign in", "url": "https://example.com", "elicitationId": "e1"}))
        .unwrap();
        assert_eq!(
            answer_elicitation("s", ElicitationMode::AcceptDefaults, &url, &tx).action,
            ElicitationAction::Decline
        );
    }
}
