//! The downstream MCP server: one server for an AI client, offering the gate's allowed tools
//! of every live upstream connection under [`crate::names`], and running each call through
//! the host (gated, audited with the client named, elicitations through the broker).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use gatehouse_attest::gate::ToolStatus;
use gatehouse_host::host::{ApiError, Host};
use gatehouse_host::{
    CallOptions, CallProgress, Caller, DownstreamTransport, ErrorCode, HostEvent,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    CompletionInfo, ContentBlock, GetPromptRequestParams, GetPromptResponse, Implementation,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ReadResourceRequestParams,
    ReadResourceResponse, RequestParamsMeta, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio::sync::{broadcast, mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::headless::{HeadlessConsent, Unanswered, absent_person_note};
use crate::names::{NameTable, Naming};

/// How long a listing waits for the upstream servers' first connection before it offers what
/// is ready (the rest follows with `notifications/tools/list_changed`).
pub const DEFAULT_STARTUP_WAIT: Duration = Duration::from_secs(10);

const INSTRUCTIONS: &str = "Gatehouse: the tools and prompts of the MCP servers Gatehouse admitted, offered as SERVER__NAME (or under their own names when Gatehouse offers one server's), and their resources under the servers' own URIs. Every call, prompt and read passes Gatehouse's gate and is recorded in its audit log; a refused call returns a tool error that says why and what to do.";

/// What is offered: the renamed definitions of the allowed tools, in order, and the table
/// that resolves the name of every tool of a live connection, allowed or not: a call to a
/// hidden or blocked tool goes to the gate, which refuses and records it with the client.
#[derive(Debug, Default, Clone, PartialEq)]
struct Offer {
    table: NameTable,
    tools: Vec<Tool>,
}

/// Sends the call's progress to the downstream client under the client's own token, until
/// the call drops its end of the channel.
fn forward_progress(
    mut progress: mpsc::Receiver<CallProgress>,
    token: ProgressToken,
    peer: rmcp::Peer<RoleServer>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(update) = progress.recv().await {
            let mut note = ProgressNotificationParam::new(token.clone(), update.progress);
            if let Some(total) = update.total {
                note = note.with_total(total);
            }
            if let Some(message) = update.message {
                note = note.with_message(message);
            }
            if peer.notify_progress(note).await.is_err() {
                return;
            }
        }
    })
}

/// How many progress notifications of one call may wait to be sent.
const PROGRESS_QUEUE: usize = 64;

/// One downstream client's server.
pub struct Gateway {
    host: Arc<Host>,
    client: String,
    transport: DownstreamTransport,
    offer: Mutex<Offer>,
    /// Flips to true when the first connection of every upstream server ended either way.
    started: watch::Receiver<bool>,
    startup_wait: Duration,
    /// Calls under way, so the host is not closed under a call that is still cancelling.
    calls: watch::Sender<usize>,
    /// Cancelled when the client's session ended: stops the change watcher (a long-lived
    /// host outlives its gateway clients).
    ended: CancellationToken,
    /// Lists the client as connected on the host while the session lives.
    session: Mutex<Option<gatehouse_host::host::downstream::SessionGuard>>,
    /// The one server whose tools are offered, under their own names; every server's when
    /// `None`.
    only: Option<String>,
    /// Resources this client subscribed to on its session: (server, URI).
    subscriptions: Mutex<std::collections::HashSet<(String, String)>>,
    /// This session's number on the host, whose subscriptions it holds
    /// ([`gatehouse_host::Subscriber::Client`]).
    subscriber_session: u64,
    /// The last `subscriptions/listen` stream number handed out (0 is the session itself).
    streams: std::sync::atomic::AtomicU64,
    /// The host's consent UI when no person is at hand (`serve` without the app): a call that
    /// needed the person says so in its result.
    unattended: Option<Arc<HeadlessConsent>>,
}

/// Counts a call as under way while it lives.
struct CallUnderWay<'a>(&'a watch::Sender<usize>);

impl<'a> CallUnderWay<'a> {
    fn start(calls: &'a watch::Sender<usize>) -> CallUnderWay<'a> {
        calls.send_modify(|n| *n += 1);
        CallUnderWay(calls)
    }
}

impl Drop for CallUnderWay<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

impl Gateway {
    /// A server for one downstream client on `host`, which connects the upstream servers
    /// (see [`Host::connect_all`]) and says when what they offer may have changed.
    pub fn new(host: Arc<Host>, client: String, transport: DownstreamTransport) -> Gateway {
        Gateway {
            started: host.started(),
            client,
            transport,
            offer: Mutex::new(Offer::default()),
            startup_wait: DEFAULT_STARTUP_WAIT,
            calls: watch::channel(0).0,
            ended: CancellationToken::new(),
            session: Mutex::new(None),
            only: None,
            subscriptions: Mutex::new(Default::default()),
            subscriber_session: host.subscriber_session(),
            streams: std::sync::atomic::AtomicU64::new(0),
            unattended: None,
            host,
        }
    }

    pub(crate) fn host(&self) -> &Arc<Host> {
        &self.host
    }

    pub(crate) fn only(&self) -> Option<&str> {
        self.only.as_deref()
    }

    pub(crate) fn subscriptions(&self) -> &Mutex<std::collections::HashSet<(String, String)>> {
        &self.subscriptions
    }

    /// This client's subscriber on the host, on its session (`stream` 0) or a listen stream.
    pub(crate) fn subscriber(&self, stream: u64) -> gatehouse_host::Subscriber {
        gatehouse_host::Subscriber::Client {
            session: self.subscriber_session,
            stream,
        }
    }

    /// Releases the subscriptions this session (or one of its streams) holds, on a task of
    /// its own when dropped outside an async context's reach.
    fn release_subscriptions(&self, stream: Option<u64>) {
        if stream.is_none() {
            self.subscriptions
                .lock()
                .expect("subscriptions poisoned")
                .clear();
        }
        let (host, session) = (self.host.clone(), self.subscriber_session);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                host.release_subscriptions(session, stream).await;
            });
        }
    }

    /// Offers the tools of `server` only, under their own names ([`Naming::Plain`]): for a
    /// client configured with one entry per server.
    pub fn with_only(mut self, server: Option<String>) -> Gateway {
        self.only = server;
        self
    }

    pub(crate) fn naming(&self) -> Naming {
        match self.only {
            Some(_) => Naming::Plain,
            None => Naming::Prefixed,
        }
    }

    /// The client's session ended while the gateway lives on (its calls still draining):
    /// nothing more is sent to it, and it is no longer listed as connected. Dropping the
    /// gateway does the same.
    pub fn end(&self) {
        self.ended.cancel();
        self.session.lock().expect("session poisoned").take();
        self.release_subscriptions(None);
    }

    /// The host answers with `consent`, which asks nobody: each tool call that needed the
    /// person (an elicitation `consent` declined, or a sign-in nobody could do) gets a note
    /// in its result saying the app is not running and how to start it.
    pub fn with_unattended(mut self, consent: Option<Arc<HeadlessConsent>>) -> Gateway {
        self.unattended = consent;
        self
    }

    /// What the person was needed for in a call that is over: the elicitations the headless
    /// UI declined (by prompt id: this call's alone) and a sign-in nobody could be asked for.
    fn unanswered(
        &self,
        records: &[gatehouse_host::ElicitationRecord],
        error: Option<&ApiError>,
    ) -> Vec<Unanswered> {
        let Some(consent) = &self.unattended else {
            return Vec::new();
        };
        let mut needed: Vec<Unanswered> = records
            .iter()
            .filter_map(|record| consent.take(record.prompt_id))
            .collect();
        if error.is_some_and(|e| e.code == ErrorCode::AuthRequired) {
            needed.push(Unanswered::SignIn);
        }
        needed
    }

    pub fn with_startup_wait(mut self, wait: Duration) -> Gateway {
        self.startup_wait = wait;
        self
    }

    /// Computes the offer afresh; true when it differs from the last one.
    async fn refresh(&self) -> (Offer, bool) {
        let mut live = self.host.live_tools().await;
        if let Some(only) = &self.only {
            live.retain(|(server, _)| server == only);
        }
        let naming = self.naming();
        let (table, collisions) = NameTable::build(
            naming,
            live.iter().map(|(s, g)| (s.as_str(), g.tool.name.as_ref())),
        );
        for collision in &collisions {
            eprintln!(
                "gatehouse serve: not offering {:?}: the name stands for more than one tool ({:?})",
                collision.name, collision.pairs
            );
        }
        let tools = live
            .iter()
            .filter(|(_, gated)| gated.status == ToolStatus::Allowed)
            .filter_map(|(server, gated)| {
                let name = naming.name(server, &gated.tool.name);
                table.resolve(&name)?;
                let mut offered = gated.tool.clone();
                offered.name = name.into();
                Some(offered)
            })
            .collect();
        let offer = Offer { table, tools };
        let mut current = self.offer.lock().expect("offer poisoned");
        let changed = *current != offer;
        *current = offer.clone();
        (offer, changed)
    }

    /// Waits (at most `limit`) until no call is under way: when the client left, rmcp
    /// cancelled its calls, and each sends `notifications/cancelled` upstream as it ends.
    /// True when there were calls to wait for.
    pub async fn calls_ended(&self, limit: Duration) -> bool {
        let mut calls = self.calls.subscribe();
        let busy = *calls.borrow() > 0;
        let _ = tokio::time::timeout(limit, calls.wait_for(|n| *n == 0)).await;
        busy
    }

    pub(crate) async fn wait_for_start(&self) {
        let mut started = self.started.clone();
        let _ = tokio::time::timeout(self.startup_wait, started.wait_for(|s| *s)).await;
    }

    /// Options for what a client asked for: its cancellation and its name (so only live
    /// connections are used, and the gate records who asked).
    pub(crate) fn request_options(&self, context: &RequestContext<RoleServer>) -> CallOptions {
        CallOptions {
            cancel: Some(context.ct.clone()),
            caller: Some(self.caller(context)),
            ..CallOptions::default()
        }
    }

    fn caller(&self, context: &RequestContext<RoleServer>) -> Caller {
        self.caller_of(&context.peer, &context.extensions)
    }

    fn caller_of(
        &self,
        peer: &rmcp::Peer<RoleServer>,
        extensions: &rmcp::model::Extensions,
    ) -> Caller {
        let claimed = peer
            .peer_info()
            .map(|info| format!("{} {}", info.client_info.name, info.client_info.version));
        // Over HTTP the request's bearer token names the client, request by request.
        let client = extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<crate::tokens::HttpClient>())
            .map_or(self.client.as_str(), |c| c.0.as_str());
        Caller::new(client, self.transport, claimed.as_deref())
    }

    /// Sends `notifications/tools/list_changed` whenever what is offered changes, until the
    /// client is gone (its session ended, or its server was dropped).
    /// Sends `notifications/resources/updated` for each update of a resource this client
    /// subscribed to, until `until` completes, `tell` fails, or the client is gone.
    async fn forward_updates<F, Fut>(
        gateway: std::sync::Weak<Self>,
        until: impl std::future::Future<Output = ()>,
        mut tell: F,
    ) where
        F: FnMut(String) -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let Some(this) = gateway.upgrade() else {
            return;
        };
        let mut events = this.host.subscribe();
        let ended = this.ended.clone();
        drop(this);
        tokio::pin!(until);
        loop {
            let event = tokio::select! {
                event = events.recv() => match event {
                    Ok(event) => event,
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                () = ended.cancelled() => return,
                () = &mut until => return,
            };
            let Some(this) = gateway.upgrade() else {
                return;
            };
            let uri = this.update_for_client(&event);
            drop(this);
            if let Some(uri) = uri
                && !tell(uri).await
            {
                return;
            }
        }
    }

    async fn watch_changes(gateway: std::sync::Weak<Self>, peer: rmcp::Peer<RoleServer>) {
        Gateway::on_offer_changes(gateway, std::future::pending(), || async {
            peer.notify_tool_list_changed().await.is_ok()
        })
        .await;
    }

    /// Calls `tell` each time what is offered changed, until it returns false, `until`
    /// completes, or the client is gone. The offer as it stands when this starts is the one
    /// changes are measured against.
    async fn on_offer_changes<F, Fut>(
        gateway: std::sync::Weak<Self>,
        until: impl std::future::Future<Output = ()>,
        mut tell: F,
    ) where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let Some(this) = gateway.upgrade() else {
            return;
        };
        let mut events = this.host.subscribe();
        let mut servers = this.host.server_changes();
        let ended = this.ended.clone();
        drop(this);
        tokio::pin!(until);
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Ok(HostEvent::ToolsChanged { .. }) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Ok(_) => continue,
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                changed = servers.changed() => if changed.is_err() {
                    return;
                },
                () = ended.cancelled() => return,
                () = &mut until => return,
            }
            let Some(this) = gateway.upgrade() else {
                return;
            };
            let (_, changed) = this.refresh().await;
            drop(this);
            if changed && !tell().await {
                return;
            }
        }
    }
}

impl Drop for Gateway {
    /// Stops the change watcher at once, also for HTTP sessions, which end by dropping their
    /// gateway.
    fn drop(&mut self) {
        self.ended.cancel();
        self.release_subscriptions(None);
    }
}

/// A refusal or failure as a tool error the model can read: what happened, the stable code,
/// what to do.
fn tool_error(offered: &str, error: &ApiError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!(
        "Gatehouse did not complete {offered}: {} (code {})",
        error.message, error.code
    ))])
}

/// The handler rmcp serves; shares the gateway with the change watcher.
#[derive(Clone)]
pub struct GatewayHandler(pub Arc<Gateway>);

impl ServerHandler for GatewayHandler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_completions()
                .enable_prompts()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(
            Implementation::new("gatehouse", env!("CARGO_PKG_VERSION")).with_title("Gatehouse"),
        )
        .with_instructions(INSTRUCTIONS)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let caller = self.0.caller_of(&context.peer, &context.extensions);
        *self.0.session.lock().expect("session poisoned") =
            Some(self.0.host.client_session(caller));
        let updates = context.peer.clone();
        tokio::spawn(Gateway::forward_updates(
            Arc::downgrade(&self.0),
            std::future::pending(),
            move |uri| {
                let peer = updates.clone();
                async move {
                    peer.notify_resource_updated(
                        rmcp::model::ResourceUpdatedNotificationParam::new(uri),
                    )
                    .await
                    .is_ok()
                }
            },
        ));
        tokio::spawn(Gateway::watch_changes(
            Arc::downgrade(&self.0),
            context.peer,
        ));
    }

    /// 2026-07-28 clients hear of changes on a `subscriptions/listen` stream instead of the
    /// session: the same changes, the same rule (only when what is offered changed).
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // rmcp keeps only what was asked and what get_info advertises (tools/list_changed).
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let tools = context.accepted().tools_list_changed == Some(true);
        let uris = context
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        // The stream holds its own subscriptions, released when it ends.
        let stream = 1 + self
            .0
            .streams
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let options = self.0.request_options(context.request_context());
        for uri in &uris {
            if let Err(error) = self.0.subscribe(uri, stream, &options).await {
                self.0.release_subscriptions(Some(stream));
                return Err(error);
            }
        }
        let watch_tools = async {
            if !tools {
                return context.cancelled().await;
            }
            // What is offered now is the baseline: the client listed it, or will.
            self.0.wait_for_start().await;
            self.0.refresh().await;
            Gateway::on_offer_changes(Arc::downgrade(&self.0), context.cancelled(), || async {
                context.sink().notify_tool_list_changed().await.is_ok()
            })
            .await;
        };
        let watch_resources = async {
            if uris.is_empty() {
                return context.cancelled().await;
            }
            Gateway::forward_updates(Arc::downgrade(&self.0), context.cancelled(), |uri| async {
                // Only the URIs this stream asked for.
                !uris.contains(&uri) || context.sink().notify_resource_updated(uri).await.is_ok()
            })
            .await;
        };
        tokio::join!(watch_tools, watch_resources);
        if !uris.is_empty() {
            self.0.release_subscriptions(Some(stream));
        }
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let options = self.0.request_options(&context);
        Ok(ListPromptsResult::with_all_items(
            self.0.prompt_offer(&options).await.prompts,
        ))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let _under_way = CallUnderWay::start(&self.0.calls);
        let options = self.0.request_options(&context);
        self.0
            .prompt(&request.name, request.arguments, &options)
            .await
            .map(GetPromptResponse::Complete)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let options = self.0.request_options(&context);
        Ok(ListResourcesResult::with_all_items(
            self.0.resource_offer(&options).await.resource_list,
        ))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let options = self.0.request_options(&context);
        Ok(ListResourceTemplatesResult::with_all_items(
            self.0.resource_offer(&options).await.template_list,
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let _under_way = CallUnderWay::start(&self.0.calls);
        let options = self.0.request_options(&context);
        self.0
            .read(&request.uri, &options)
            .await
            .map(ReadResourceResponse::Complete)
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let options = self.0.request_options(&context);
        self.0.subscribe(&request.uri, 0, &options).await
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.0.unsubscribe(&request.uri).await;
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let options = self.0.request_options(&context);
        let arguments = request
            .context
            .as_ref()
            .and_then(|c| c.arguments.clone())
            .unwrap_or_default();
        let values = self
            .0
            .completion(
                &request.r#ref,
                &request.argument.name,
                &request.argument.value,
                arguments,
                &options,
            )
            .await?;
        let info = CompletionInfo::new(values).map_err(|e| ErrorData::internal_error(e, None))?;
        Ok(CompleteResult::new(info))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.0.wait_for_start().await;
        let (offer, _) = self.0.refresh().await;
        Ok(ListToolsResult::with_all_items(offer.tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let gateway = &self.0;
        let _under_way = CallUnderWay::start(&gateway.calls);
        let name = request.name.to_string();
        let resolve = |offer: &Offer| {
            offer
                .table
                .resolve(&name)
                .map(|(s, t)| (s.to_string(), t.to_string()))
        };
        let known = resolve(&gateway.offer.lock().expect("offer poisoned"));
        let target = match known {
            Some(target) => Some(target),
            // Not in the last listing (the client did not list, or it changed): once afresh.
            None => {
                gateway.wait_for_start().await;
                resolve(&gateway.refresh().await.0)
            }
        };
        let Some((server, tool)) = target else {
            return Err(ErrorData::invalid_params(
                format!(
                    "no server connected through Gatehouse has a tool named {name:?}: list the tools again"
                ),
                None,
            ));
        };
        // Progress only when the client asked for it (rmcp moves `_meta` into the context).
        let asked = request
            .progress_token()
            .or_else(|| context.meta.get_progress_token());
        let (progress, forwarder) = match asked {
            Some(token) => {
                let (tx, rx) = mpsc::channel(PROGRESS_QUEUE);
                (
                    Some(tx),
                    Some(forward_progress(rx, token, context.peer.clone())),
                )
            }
            None => (None, None),
        };
        let options = CallOptions {
            cancel: Some(context.ct.clone()),
            caller: Some(gateway.caller(&context)),
            progress,
            ..CallOptions::default()
        };
        let (outcome, failed) = gateway
            .host
            .call_traced(&server, &tool, request.arguments, &options)
            .await;
        // The call's progress went out before its result.
        drop(options);
        if let Some(forwarder) = forwarder {
            let _ = forwarder.await;
        }
        let (mut result, needed) = match outcome {
            Ok(outcome) => {
                let needed = gateway.unanswered(&outcome.elicitations, None);
                (outcome.result, needed)
            }
            Err(error) => {
                let needed = gateway.unanswered(&failed, Some(&error));
                (tool_error(&name, &error), needed)
            }
        };
        // The client hears it in the result, beside what the server said (its `isError`
        // kept): the model can tell the person, who can start the app.
        if !needed.is_empty() {
            result
                .content
                .push(ContentBlock::text(absent_person_note(&server, &needed)));
        }
        Ok(CallToolResponse::Complete(result))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use gatehouse_host::DownstreamTransport;
    use gatehouse_host::host::ApiError;
    use gatehouse_testkit as kit;

    use super::{ErrorCode, Gateway};
    use crate::headless::{HeadlessConsent, Unanswered};

    #[tokio::test]
    async fn only_a_headless_gateway_notes_a_sign_in_nobody_could_be_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let consent = Arc::new(HeadlessConsent::new());
        let host = kit::host::open(kit::host::options(dir.path()), consent.clone());
        let headless = Gateway::new(host.clone(), "c".into(), DownstreamTransport::Stdio)
            .with_unattended(Some(consent));
        let attended = Gateway::new(host.clone(), "c".into(), DownstreamTransport::Stdio);
        let nobody = ApiError::new(ErrorCode::AuthRequired, "nobody can be asked here");
        let cancelled = ApiError::new(ErrorCode::SignInCancelled, "the person cancelled");
        assert_eq!(
            headless.unanswered(&[], Some(&nobody)),
            vec![Unanswered::SignIn]
        );
        // The person was asked (and said no), or it was not about signing in: nothing to add.
        assert!(headless.unanswered(&[], Some(&cancelled)).is_empty());
        assert!(headless.unanswered(&[], None).is_empty());
        assert!(attended.unanswered(&[], Some(&nobody)).is_empty());
        drop((headless, attended));
        host.shutdown().await;
    }
}
