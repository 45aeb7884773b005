//! The conformance profile (`--conformance`): a fixture implementing the test surface of the
//! official MCP conformance suite's *server* scenarios, so the suite can run against this
//! server alone and against a gateway in front of it.
//!
//! It serves, at one Streamable HTTP endpoint, both protocol eras at once: 2025-11-25 with
//! `initialize` and sessions, and 2026-07-28 stateless with `server/discover`, per-request
//! `_meta` and `input_required` results. Its surface is the suite's: the `test_*` tools (see
//! [`fixtures::tools`]), the `test_*` prompts, the `test://` resources and resource template,
//! completion, `logging/setLevel`, `resources/subscribe` (2025-11-25) and
//! `subscriptions/listen` (2026-07-28). The tools that need client input are one step function
//! each ([`interactive`]), run as server-to-client requests in 2025-11-25 and as
//! `input_required` rounds in 2026-07-28.
//!
//! Everything it answers is fixed text or derived from the request, so results are
//! deterministic (apart from the per-process key sealing `requestState`). It never reads or
//! writes files, runs commands or reaches the network; it only listens on loopback unless
//! allowed otherwise, like the demo server.

// The suite still tests logging, roots and resources/subscribe, which rmcp 3.9 marks
// deprecated (SEP-2577); serving them is this fixture's job.
#![allow(deprecated)]

pub mod fixtures;
pub mod interactive;

use std::{
    borrow::Cow,
    collections::BTreeSet,
    future::Future,
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::Context;
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities,
        CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
        GetPromptResult, Implementation, InputRequest, InputRequiredResult, ListPromptsResult,
        ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
        LoggingMessageNotificationParam, PaginatedRequestParams, ProgressNotificationParam,
        ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
        ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
        SubscriptionFilter, UnsubscribeRequestParams,
    },
    service::{RequestContext, SubscriptionContext},
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio::{net::TcpListener, sync::broadcast};
use tokio_util::sync::CancellationToken;

use crate::{endpoint::MCP_PATH, era::Era};
use interactive::{Round, StateSeal, Step};

/// The name the conformance server reports in `serverInfo`.
pub const SERVER_NAME: &str = "gatehouse-demo-server-conformance";

/// How many input rounds a 2025-11-25 call may take before it is given up.
const MAX_LEGACY_ROUNDS: usize = 10;

/// The delay between the log messages and between the progress notifications.
const STEP_DELAY: Duration = Duration::from_millis(50);

/// A list change announced to `subscriptions/listen` streams.
#[derive(Debug, Clone, Copy)]
enum Change {
    Tools,
    Prompts,
}

/// State shared by every connection of one server process.
struct Shared {
    seal: StateSeal,
    changes: broadcast::Sender<Change>,
}

/// The conformance server. One per session (2025-11-25) or request (2026-07-28), made by
/// [`ConformanceServer::for_new_connection`]; they share the state seal and list changes.
#[derive(Clone)]
pub struct ConformanceServer {
    shared: Arc<Shared>,
    /// `logging/setLevel` of this session (2025-11-25); `None` logs everything.
    log_level: Arc<Mutex<Option<LoggingLevel>>>,
    /// `resources/subscribe` of this session (2025-11-25).
    subscriptions: Arc<Mutex<BTreeSet<String>>>,
    /// The change feed of the `subscriptions/listen` this instance acknowledges, taken before
    /// the acknowledgement so no change after it is missed.
    listen_feed: Arc<Mutex<Option<broadcast::Receiver<Change>>>>,
}

impl Default for ConformanceServer {
    fn default() -> Self {
        Self::new()
    }
}

impl ConformanceServer {
    pub fn new() -> Self {
        let (changes, _) = broadcast::channel(16);
        Self {
            shared: Arc::new(Shared {
                seal: StateSeal::default(),
                changes,
            }),
            log_level: Arc::default(),
            subscriptions: Arc::default(),
            listen_feed: Arc::default(),
        }
    }

    /// A server for another connection: same shared state, fresh session state.
    pub fn for_new_connection(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            log_level: Arc::default(),
            subscriptions: Arc::default(),
            listen_feed: Arc::default(),
        }
    }
}

fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
}

/// rmcp's typed value for a JSON fixture. A fixture that does not fit is a bug of this
/// fixture, reported as an internal error.
fn typed<T: DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value)
        .map_err(|error| ErrorData::internal_error(format!("invalid fixture: {error}"), None))
}

/// [`typed`] for a complete result: marks it `resultType: "complete"`, which 2026-07-28
/// requires and rmcp strips again for 2025-11-25 peers.
fn complete<T: DeserializeOwned>(mut value: Value) -> Result<T, ErrorData> {
    if let Some(object) = value.as_object_mut() {
        object.insert("resultType".to_owned(), json!("complete"));
    }
    typed(value)
}

fn text_result(text: impl Into<String>) -> Result<CallToolResult, ErrorData> {
    complete(json!({"content": [{"type": "text", "text": text.into()}]}))
}

fn tool_error(text: impl Into<String>) -> Result<CallToolResult, ErrorData> {
    complete(json!({"content": [{"type": "text", "text": text.into()}], "isError": true}))
}

fn capabilities_json(context: &RequestContext<RoleServer>) -> Value {
    context
        .client_capabilities()
        .and_then(|capabilities| serde_json::to_value(capabilities).ok())
        .unwrap_or_else(|| json!({}))
}

fn missing_capability(capability: &str) -> ErrorData {
    let required: ClientCapabilities =
        serde_json::from_value(json!({ capability: {} })).unwrap_or_default();
    ErrorData::missing_required_client_capability(required)
}

/// Severity order of log levels, least severe first.
fn severity(level: &LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

impl ConformanceServer {
    /// Whether a message at `level` may be sent: in 2026-07-28 only when the request's `_meta`
    /// names a log level, in 2025-11-25 per `logging/setLevel` (everything until it is set).
    fn may_log(&self, context: &RequestContext<RoleServer>, level: &LoggingLevel) -> bool {
        let threshold = if is_modern(context) {
            match context.meta.log_level() {
                Some(threshold) => threshold,
                None => return false,
            }
        } else {
            match self.log_level.lock().map(|guard| *guard) {
                Ok(Some(threshold)) => threshold,
                _ => return true,
            }
        };
        severity(level) >= severity(&threshold)
    }

    async fn log(&self, context: &RequestContext<RoleServer>, message: &str) {
        if !self.may_log(context, &LoggingLevel::Info) {
            return;
        }
        let param = LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(message))
            .with_logger("conformance");
        if let Err(error) = context.peer.notify_logging_message(param).await {
            tracing::warn!(%error, "could not send a log message");
        }
    }

    /// Verify an echoed `requestState` for `scope`; `Err` is the `-32602` for a forged one.
    fn open_state(&self, scope: &str, state: Option<&str>) -> Result<Option<String>, ErrorData> {
        match state {
            None => Ok(None),
            Some(state) => self
                .shared
                .seal
                .open(scope, state)
                .map(Some)
                .ok_or_else(|| {
                    ErrorData::invalid_params(
                        "requestState failed its integrity check: it was not issued by this \
                         server for this request, or it was changed",
                        None,
                    )
                }),
        }
    }

    /// One 2026-07-28 round of an interactive tool or prompt: the final result as JSON, or
    /// the `input_required` result to return instead.
    fn modern_round(
        &self,
        scope: &str,
        args: &Map<String, Value>,
        responses: Option<&rmcp::model::InputResponses>,
        state: Option<&str>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Result<Value, InputRequiredResult>, ErrorData> {
        let payload = self.open_state(scope, state)?;
        let responses: Map<String, Value> = responses
            .into_iter()
            .flatten()
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        let capabilities = capabilities_json(context);
        let round = Round {
            responses: &responses,
            state: payload.as_deref(),
            capabilities: &capabilities,
        };
        match interactive::step(scope, args, &round)
            .map_err(|message| ErrorData::invalid_params(message, None))?
        {
            Step::Done(result) => Ok(Ok(result)),
            Step::Ask { requests, state } => {
                // Never ask for what the client cannot answer (2026-07-28 `-32021`).
                if let Some((_, request)) = requests.iter().find(|(_, request)| {
                    capabilities
                        .get(interactive::required_capability(request))
                        .is_none()
                }) {
                    return Err(missing_capability(interactive::required_capability(
                        request,
                    )));
                }
                let input_requests: Map<String, Value> = requests.into_iter().collect();
                let mut result = json!({
                    "resultType": "input_required",
                    "inputRequests": input_requests,
                });
                if let Some(state) = state {
                    result["requestState"] = json!(self.shared.seal.seal(scope, &state));
                }
                Ok(Err(typed(result)?))
            }
        }
    }

    /// A whole 2025-11-25 interaction: every input request goes to the client as a
    /// server-to-client request, until the step is done. `Err(Ok(text))` is a failure to show
    /// as a tool error (the client refused or cannot answer).
    async fn legacy_rounds(
        &self,
        scope: &str,
        args: &Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, Result<String, ErrorData>> {
        let capabilities = capabilities_json(context);
        let mut responses = Map::new();
        let mut state: Option<String> = None;
        for _ in 0..MAX_LEGACY_ROUNDS {
            let round = Round {
                responses: &responses,
                state: state.as_deref(),
                capabilities: &capabilities,
            };
            let step = interactive::step(scope, args, &round)
                .map_err(|message| Err(ErrorData::invalid_params(message, None)))?;
            let (requests, next_state) = match step {
                Step::Done(result) => return Ok(result),
                Step::Ask { requests, state } => (requests, state),
            };
            for (key, request) in requests {
                let capability = interactive::required_capability(&request);
                if capabilities.get(capability).is_none() {
                    return Err(Ok(format!(
                        "the client did not declare the {capability} capability"
                    )));
                }
                let answer = self.ask_client(context, request).await?;
                responses.insert(key, answer);
            }
            state = next_state;
        }
        Err(Ok(format!(
            "gave up after {MAX_LEGACY_ROUNDS} rounds of input requests"
        )))
    }

    /// Send one input request to the client (2025-11-25) and return its answer as JSON.
    async fn ask_client(
        &self,
        context: &RequestContext<RoleServer>,
        request: Value,
    ) -> Result<Value, Result<String, ErrorData>> {
        let request: InputRequest = typed(request).map_err(Err)?;
        let peer = &context.peer;
        let answer = tokio::select! {
            () = context.ct.cancelled() => {
                return Err(Err(ErrorData::internal_error("cancelled", None)));
            }
            answer = async {
                match request {
                    InputRequest::CreateMessage(request) => peer
                        .create_message(request.params)
                        .await
                        .map(serde_json::to_value),
                    InputRequest::Elicitation(request) => peer
                        .create_elicitation(request.params)
                        .await
                        .map(serde_json::to_value),
                    InputRequest::ListRoots(_) => peer
                        .list_roots()
                        .await
                        .map(serde_json::to_value),
                    _ => Ok(Ok(Value::Null)),
                }
            } => answer,
        };
        match answer {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(Err(ErrorData::internal_error(error.to_string(), None))),
            Err(error) => Err(Ok(format!("the client did not answer: {error}"))),
        }
    }

    async fn call_interactive(
        &self,
        request: &CallToolRequestParams,
        args: &Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        if is_modern(context) {
            return match self.modern_round(
                name,
                args,
                request.input_responses.as_ref(),
                request.request_state.as_deref(),
                context,
            )? {
                Ok(result) => Ok(CallToolResponse::Complete(complete(result)?)),
                Err(input_required) => Ok(CallToolResponse::InputRequired(input_required)),
            };
        }
        match self.legacy_rounds(name, args, context).await {
            Ok(result) => Ok(CallToolResponse::Complete(complete(result)?)),
            Err(Ok(failure)) => Ok(tool_error(failure)?.into()),
            Err(Err(error)) => Err(error),
        }
    }

    async fn with_logging(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        for (index, message) in fixtures::LOG_MESSAGES.iter().enumerate() {
            if index > 0 {
                tokio::time::sleep(STEP_DELAY).await;
            }
            self.log(context, message).await;
        }
        text_result("Tool with logging executed successfully")
    }

    async fn with_progress(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let token = context.meta.get_progress_token();
        for (index, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
            if index > 0 {
                tokio::select! {
                    () = context.ct.cancelled() => {
                        return Err(ErrorData::internal_error("cancelled", None));
                    }
                    () = tokio::time::sleep(STEP_DELAY) => {}
                }
            }
            if let Some(token) = &token {
                let param = ProgressNotificationParam::new(token.clone(), progress)
                    .with_total(100.0)
                    .with_message(format!("{progress} of 100"));
                if let Err(error) = context.peer.notify_progress(param).await {
                    tracing::warn!(%error, "could not send progress");
                }
            }
        }
        text_result(format!(
            "Tool with progress executed successfully (progress {}reported)",
            if token.is_some() { "" } else { "not " }
        ))
    }

    async fn announce(&self, change: Change, context: &RequestContext<RoleServer>) {
        // Listen streams (2026-07-28) and, for a 2025-11-25 session, the session itself.
        let _ = self.shared.changes.send(change);
        if !is_modern(context) {
            let sent = match change {
                Change::Tools => context.peer.notify_tool_list_changed().await,
                Change::Prompts => context.peer.notify_prompt_list_changed().await,
            };
            if let Err(error) = sent {
                tracing::warn!(%error, "could not send a list change");
            }
        }
    }
}

impl ServerHandler for ConformanceServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_completions()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION"))
                    .with_title("Gatehouse demo server (conformance profile)"),
            )
            .with_instructions(
                "A fixture implementing the MCP conformance suite's server test surface. \
                 It is a test fixture: never trust it with real data.",
            )
            .with_protocol_version(Era::Both.handshake_fallback())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Era::Both.supported_versions()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        complete(json!({ "tools": fixtures::tools() }))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.clone().unwrap_or_default();
        let name = request.name.as_ref();
        if let Some(result) = fixtures::simple_tool_result(name) {
            return Ok(CallToolResponse::Complete(complete(result)?));
        }
        if interactive::TOOLS.contains(&name) {
            return self.call_interactive(&request, &args, &context).await;
        }
        let result = match name {
            "test_tool_with_logging" => self.with_logging(&context).await,
            "test_tool_with_progress" => self.with_progress(&context).await,
            "test_logging_tool" => {
                self.log(&context, "test_logging_tool was called").await;
                text_result("test_logging_tool executed")
            }
            "test_missing_capability" => {
                let declared = capabilities_json(&context).get("sampling").is_some();
                if !declared {
                    if is_modern(&context) {
                        return Err(missing_capability("sampling"));
                    }
                    tool_error("the client did not declare the sampling capability")
                } else {
                    text_result("the client declared the sampling capability")
                }
            }
            "test_trigger_tool_change" => {
                self.announce(Change::Tools, &context).await;
                text_result("announced a tools list change")
            }
            "test_trigger_prompt_change" => {
                self.announce(Change::Prompts, &context).await;
                text_result("announced a prompts list change")
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("tool not found: {other}"),
                    None,
                ));
            }
        };
        Ok(result?.into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        complete(json!({ "prompts": fixtures::prompts() }))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let args = request.arguments.clone().unwrap_or_default();
        if request.name != interactive::PROMPT {
            let result = fixtures::get_prompt(&request.name, &args)
                .map_err(|message| ErrorData::invalid_params(message, None))?;
            return Ok(GetPromptResponse::Complete(complete::<GetPromptResult>(
                result,
            )?));
        }
        if is_modern(&context) {
            return match self.modern_round(
                interactive::PROMPT,
                &args,
                request.input_responses.as_ref(),
                request.request_state.as_deref(),
                &context,
            )? {
                Ok(result) => Ok(GetPromptResponse::Complete(complete(result)?)),
                Err(input_required) => Ok(GetPromptResponse::InputRequired(input_required)),
            };
        }
        match self
            .legacy_rounds(interactive::PROMPT, &args, &context)
            .await
        {
            Ok(result) => Ok(GetPromptResponse::Complete(complete(result)?)),
            Err(Ok(failure)) => Err(ErrorData::invalid_request(failure, None)),
            Err(Err(error)) => Err(error),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        complete(json!({ "resources": fixtures::resources() }))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        complete(json!({ "resourceTemplates": fixtures::resource_templates() }))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        match fixtures::read_resource(&request.uri) {
            Some(contents) => Ok(ReadResourceResponse::Complete(complete::<
                ReadResourceResult,
            >(contents)?)),
            // rmcp turns this into -32602 for 2026-07-28 peers (SEP-2164).
            None => Err(ErrorData::resource_not_found(
                "Resource not found",
                Some(json!({ "uri": request.uri })),
            )),
        }
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut subscriptions) = self.subscriptions.lock() {
            subscriptions.insert(request.uri);
        }
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut subscriptions) = self.subscriptions.lock() {
            subscriptions.remove(&request.uri);
        }
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        if let Ok(mut feed) = self.listen_feed.lock() {
            *feed = Some(self.shared.changes.subscribe());
        }
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let feed = self
            .listen_feed
            .lock()
            .ok()
            .and_then(|mut feed| feed.take());
        let Some(mut feed) = feed else {
            context.cancelled().await;
            return Ok(());
        };
        loop {
            let change = tokio::select! {
                () = context.cancelled() => return Ok(()),
                change = feed.recv() => change,
            };
            let sent = match change {
                Ok(Change::Tools) => context.sink().notify_tool_list_changed().await,
                Ok(Change::Prompts) => context.sink().notify_prompt_list_changed().await,
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            };
            // A change the client did not ask for is simply not sent.
            if let Err(error) = sent {
                tracing::debug!(%error, "list change not sent on a listen stream");
            }
        }
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let params = serde_json::to_value(&request)
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        let field = |path: &[&str]| {
            path.iter()
                .try_fold(&params, |value, key| value.get(key))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let reference = match field(&["ref", "type"]).as_str() {
            "ref/prompt" => field(&["ref", "name"]),
            _ => field(&["ref", "uri"]),
        };
        let values = fixtures::complete(
            &reference,
            &field(&["argument", "name"]),
            &field(&["argument", "value"]),
        );
        complete(json!({"completion": {
            "values": values, "total": values.len(), "hasMore": false,
        }}))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut level) = self.log_level.lock() {
            *level = Some(request.level);
        }
        Ok(())
    }
}

/// Serve the conformance profile over Streamable HTTP at [`MCP_PATH`] on `listener` until
/// `shutdown` resolves.
///
/// # Errors
///
/// When the listener's address cannot be read or the HTTP server fails.
pub async fn serve_http(
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let local = listener
        .local_addr()
        .context("listener has no local address")?;
    let ct = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(true)
        .with_stateless_protocol_metadata_required(false)
        .with_json_response(true)
        .with_cancellation_token(ct.child_token());
    let config = crate::http::allow_hosts(config, local.ip());
    let server = ConformanceServer::new();
    let service: StreamableHttpService<ConformanceServer, LocalSessionManager> =
        StreamableHttpService::new(
            move || Ok(server.for_new_connection()),
            Default::default(),
            config,
        );
    let router = axum::Router::new().nest_service(MCP_PATH, service);
    tracing::info!(%local, "serving the conformance profile over Streamable HTTP");
    crate::http::serve_until(listener, router, shutdown, ct).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixtures_fit_rmcp_types() {
        let _: ListToolsResult = complete(json!({ "tools": fixtures::tools() })).unwrap();
        let _: ListPromptsResult = complete(json!({ "prompts": fixtures::prompts() })).unwrap();
        let _: ListResourcesResult =
            complete(json!({ "resources": fixtures::resources() })).unwrap();
        let _: ListResourceTemplatesResult =
            complete(json!({ "resourceTemplates": fixtures::resource_templates() })).unwrap();
        for tool in fixtures::tools() {
            let name = tool["name"].as_str().unwrap();
            if let Some(result) = fixtures::simple_tool_result(name) {
                let _: CallToolResult = typed(result).unwrap();
            }
        }
    }

    #[test]
    fn input_requests_reach_the_wire_unchanged() {
        // Every request the interactive tools ask for survives rmcp's types byte for byte,
        // so the SEP-1034 defaults and SEP-1330 enum shapes reach the client as written.
        let capabilities = json!({"sampling": {}, "elicitation": {}, "roots": {}});
        let empty = Map::new();
        let args: Map<String, Value> =
            serde_json::from_value(json!({"prompt": "p", "message": "m"})).unwrap();
        for name in interactive::TOOLS.iter().chain([&interactive::PROMPT]) {
            let round = Round {
                responses: &empty,
                state: None,
                capabilities: &capabilities,
            };
            let Ok(Step::Ask { requests, .. }) = interactive::step(name, &args, &round) else {
                panic!("{name} asks first");
            };
            for (_, request) in requests {
                let parsed: InputRequest = typed(request.clone()).unwrap();
                assert_eq!(serde_json::to_value(parsed).unwrap(), request, "{name}");
            }
        }
    }

    #[test]
    fn log_levels_order_by_severity() {
        assert!(severity(&LoggingLevel::Info) > severity(&LoggingLevel::Debug));
        assert!(severity(&LoggingLevel::Emergency) > severity(&LoggingLevel::Alert));
    }
}
