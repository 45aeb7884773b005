//! A live connection to one MCP server: connect in the right era, list tools (all pages,
//! refreshed after `list_changed`), call tools one round at a time, close politely.
//!
//! Split by concern: how a server is started or reached (`launch.rs`), what it lists
//! (`listing.rs`), tool calls (`call.rs`); here the connection itself, its accessors and the
//! request and error helpers the others share.

mod call;
mod context;
mod launch;
mod listing;
mod progress;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{ServerPeerInfo, Tool};
use rmcp::service::{RunningService, ServiceError};
use serde::Serialize;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use gatehouse_attest::gate::{Kind, ToolGate};

use crate::admission::Verdict;
use crate::broker::{ElicitationBroker, Session};
use crate::client::{ElicitationMode, HostClient, HostEvent};
use crate::config::ServerSpec;
use crate::error::explain;
use crate::gatekeeper::{Gatekeeper, Prompts, Resources, Tools};
use crate::http;
use crate::secrets::SecretStore;
use crate::stdio::{StdioTransport, TransportState};
use crate::tap::{EraCell, ProgressCount, TrafficTap, Wire};
use crate::{Era, EraPreference, HostError};

pub use call::{
    CallOptions, CallProgress, MAX_INPUT_ROUNDS, MAX_URL_RETRIES, Round, ToolOutcome,
    URL_ELICITATION_REQUIRED, result_text,
};
pub(crate) use context::Subscribed;
pub use context::{
    CompletionTarget, GatedPrompt, GatedResource, GatedTemplate, MAX_COMPLETION_CHARS,
    MAX_COMPLETION_VALUES, MAX_SUBSCRIPTIONS, MAX_SUBSCRIPTIONS_PER_CLIENT, PromptOutcome,
    ResourceOutcome, Subscriber,
};
pub use launch::{BOUND_SERVER_CWD, log_file_name};
pub use listing::{ContextStale, GatedTool, MAX_CURSOR_BYTES, MAX_LIST_ITEMS, MAX_LIST_PAGES};
pub use progress::{Delivery, ProgressDispatcher, ProgressRegistration};

use launch::{Launch, handshake, resolve, transport_kind};

#[derive(Clone)]
pub struct ConnectOptions {
    pub era: EraPreference,
    pub elicitation: ElicitationMode,
    /// Handshake deadline.
    pub connect_timeout: Duration,
    /// Default deadline for one request; on expiry a cancellation is sent.
    pub request_timeout: Duration,
    /// Where each stdio server's stderr is appended, as `<dir>/<server>.stderr.log`.
    pub log_dir: Option<PathBuf>,
    /// stdio shutdown: wait this long after closing stdin, and again after SIGTERM.
    pub shutdown_grace: Duration,
    /// The elicitation broker (policy, consent, receipts). Without one every elicitation is
    /// answered per `elicitation` (declined, unless in conformance mode).
    pub broker: Option<Arc<ElicitationBroker>>,
    /// Who asks the user to sign in to a server that requires MCP authorization. Without one,
    /// such a server is refused (`auth_required`) unless a stored sign-in works.
    pub sign_in: Option<Arc<dyn crate::auth::SignInUi>>,
    /// Where authorization URLs open once the user agreed.
    pub opener: Arc<dyn crate::consent::UrlOpener>,
    /// How long the user has to finish a sign-in in the browser.
    pub sign_in_timeout: Duration,
    /// The person's own `confinement` of this server in `servers.json` (issue 28): used
    /// only when the server is not admitted by a bundle.
    pub person_confinement: Option<serde_json::Value>,
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("era", &self.era)
            .field("elicitation", &self.elicitation)
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("sign_in", &self.sign_in.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            era: EraPreference::Auto,
            elicitation: ElicitationMode::DeclineAndLog,
            connect_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(60),
            log_dir: None,
            shutdown_grace: Duration::from_secs(2),
            broker: None,
            sign_in: None,
            opener: Arc::new(crate::consent::SystemBrowser),
            sign_in_timeout: Duration::from_secs(300),
            person_confinement: None,
        }
    }
}

/// What the server said about itself. Everything here is claimed by the server, not verified.
#[derive(Debug, Clone, Serialize)]
pub struct ServerSummary {
    pub era: Era,
    pub protocol_version: String,
    pub transport: crate::config::ServerKind,
    pub target: String,
    pub name: Option<String>,
    pub title: Option<String>,
    pub version: Option<String>,
    pub instructions: Option<String>,
    pub capabilities: serde_json::Value,
}

pub struct Connection {
    server: String,
    spec: ServerSpec,
    service: RunningService<RoleClient, HostClient>,
    era: Era,
    state: Arc<TransportState>,
    events: broadcast::Sender<HostEvent>,
    mode: ElicitationMode,
    tools_stale: Arc<AtomicBool>,
    tools_refresh: tokio::sync::Mutex<()>,
    progress: Arc<ProgressCount>,
    /// Where each call's progress goes, by the token its current request was sent with.
    dispatcher: Arc<ProgressDispatcher>,
    tools_cache: Mutex<Option<Vec<Tool>>>,
    /// Prompt, resource and template listings, each kept until the server says it changed.
    prompts_listing: listing::Listing<rmcp::model::Prompt>,
    resources_listing: listing::Listing<rmcp::model::Resource>,
    templates_listing: listing::Listing<rmcp::model::ResourceTemplate>,
    context_stale: Arc<listing::ContextStale>,
    request_timeout: Duration,
    gatekeeper: Arc<Gatekeeper>,
    verdict: Arc<Verdict>,
    /// Present when a broker handles this connection's elicitations.
    session: Option<Arc<Session>>,
    /// The closed allow-list and the definitions last listed; checked before every call.
    tool_gate: Mutex<ToolGate>,
    /// The prompt allow-list and the prompt definitions last listed.
    prompt_gate: Mutex<ToolGate>,
    /// The resource allow-list (exact URIs and prefixes).
    resource_gate: Mutex<gatehouse_attest::resources::ResourceGate>,
    /// Resources subscribed to: URI → the 2026-07-28 listen stream's task (none in
    /// 2025-11-25, where updates arrive as notifications the client handler filters by URI).
    subscribed: context::Subscribed,
    /// Who holds each subscription (the person, gateway sessions).
    holders: context::Holders,
    /// Held while subscriptions change, so two holders of one URI subscribe upstream once.
    subscribing: tokio::sync::Mutex<()>,
    /// Pin mismatches already recorded (kind, name, actual pin), so a repeated listing does
    /// not flood the audit log.
    mismatches_seen: Mutex<std::collections::HashSet<(Kind, String, String)>>,
    /// A server reached with MCP authorization: how to step up when it asks for more scope.
    oauth: Option<OAuthLink>,
    /// A confined server's egress proxy (issue 28): kept as long as the connection, its
    /// socket removed with it.
    sandboxed: crate::confine::SandboxedLaunch,
}

/// What a sign-in for `server` needs, from its config, its admission and the front end.
pub(crate) fn sign_in_context(
    server: &str,
    spec: &crate::config::HttpSpec,
    secrets: Arc<dyn SecretStore>,
    gatekeeper: &Arc<Gatekeeper>,
    verdict: &Verdict,
    options: &ConnectOptions,
    tap: &Arc<TrafficTap>,
) -> crate::auth::SignInContext {
    crate::auth::SignInContext {
        server: server.to_string(),
        url: spec.url.clone(),
        options: spec.oauth.clone(),
        secrets,
        gatekeeper: gatekeeper.clone(),
        identity: verdict.identity.as_ref().map(|i| i.id.clone()),
        verdict: verdict.headline(),
        audit_server: verdict.audit_server(),
        allowed_issuers: verdict
            .policy()
            .map(|p| p.authorization_servers.clone())
            .unwrap_or_default(),
        ui: options.sign_in.clone(),
        opener: options.opener.clone(),
        timeout: options.sign_in_timeout,
        network_timeout: crate::auth::NETWORK_TIMEOUT,
        tap: Some(tap.clone()),
    }
}

/// What a connection keeps of its sign-in.
struct OAuthLink {
    context: crate::auth::SignInContext,
    client: crate::auth::AuthTransportClient,
    challenges: crate::auth::Challenges,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("server", &self.server)
            .field("era", &self.era)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Admits the server (recorded in the audit log before anything else happens), then
    /// starts or reaches it and completes the handshake in the chosen era. A server that is
    /// not admitted is never contacted under deny-by-default: `NotAdmitted`, and for stdio
    /// the process is not even started.
    pub async fn connect(
        server: &str,
        spec: &ServerSpec,
        secrets: Arc<dyn SecretStore>,
        tap: Arc<TrafficTap>,
        events: broadcast::Sender<HostEvent>,
        options: &ConnectOptions,
        gatekeeper: Arc<Gatekeeper>,
    ) -> Result<Connection, HostError> {
        let mut verdict = gatekeeper
            .admit_as(server, spec, options.person_confinement.as_ref())
            .await?;
        if !verdict.proceeds {
            return Err(HostError::NotAdmitted {
                server: server.to_string(),
                status: verdict.status,
                reason: verdict
                    .reason
                    .unwrap_or(crate::error_code::ErrorCode::NotAdmitted),
                code: verdict.code,
                detail: verdict.detail.clone(),
            });
        }
        if let Some(suspension) = gatekeeper.suspension(&verdict) {
            gatekeeper.write_for(
                &verdict,
                &crate::audit_event::session::SuspendedRefused {
                    name: server.to_string(),
                    reason: suspension.reason.clone(),
                    since: suspension.since.clone(),
                },
            )?;
            return Err(HostError::Suspended {
                server: server.to_string(),
                reason: suspension.reason,
                detail: suspension.detail,
                since: suspension.since,
            });
        }
        let (mut launch, used) = resolve(server, spec, secrets.clone(), options).await?;
        // Launch exactly the file that was hashed, not whatever PATH finds next time, in a
        // fixed directory: the binding hashes only the executable, and an interpreter resolves
        // relative scripts, `-m` modules and project files (`.npmrc`, `package.json`) in its
        // working directory, which would otherwise be wherever the host was started (a cloned
        // repository, say). Admission already refused a bound entry that sets a `cwd`.
        if let (Launch::Stdio(stdio), Some(program)) = (&mut launch, verdict.program()) {
            stdio.command = program.display().to_string();
            stdio.cwd = Some(PathBuf::from(BOUND_SERVER_CWD));
        }
        // A package server runs the bound interpreter on the verified tree, never the
        // configured launcher; what the environment could add to its module path is removed.
        if let (Launch::Stdio(stdio), Some(package)) = (&mut launch, verdict.package_launch()) {
            stdio.command = package.program.display().to_string();
            stdio.args = package.args.clone();
            stdio.cwd = Some(PathBuf::from(BOUND_SERVER_CWD));
            stdio.env_remove_prefixes = crate::packages::MODULE_ENV_PREFIXES
                .iter()
                .map(|k| (*k).to_string())
                .collect();
        }
        // A confined server runs under bubblewrap and our init, with its egress proxy when
        // it may reach named hosts (issue 28).
        let mut sandboxed = crate::confine::SandboxedLaunch::default();
        if let (Launch::Stdio(stdio), Some(sandbox)) = (&mut launch, verdict.sandbox.as_ref()) {
            sandboxed = crate::confine::sandbox_launch(
                server,
                stdio,
                sandbox,
                !verdict.is_admitted(),
                gatekeeper.clock(),
                gatekeeper.egress_sink(&verdict),
            )
            .await?;
        }
        for (name, value) in &used {
            tap.redact(name, value.expose());
        }
        let tools_stale = Arc::new(AtomicBool::new(false));
        let context_stale = Arc::new(listing::ContextStale::default());
        let subscribed: context::Subscribed = Default::default();
        let wire = Wire {
            tap,
            era: Arc::new(EraCell::default()),
            progress: Arc::new(ProgressCount::default()),
            inflight: Default::default(),
            dispatcher: Default::default(),
        };
        let (session_tx, session_rx) = tokio::sync::watch::channel(None);
        let make_handler = || {
            let handler = HostClient::new(
                server,
                options.elicitation,
                events.clone(),
                tools_stale.clone(),
                wire.progress.clone(),
                wire.dispatcher.clone(),
            )
            .with_subscriptions(subscribed.clone())
            .with_context_stale(context_stale.clone());
            if options.broker.is_some() {
                handler.with_pending_session(session_rx.clone())
            } else {
                handler
            }
        };
        let handler = make_handler();
        let mut oauth = None;
        let (service, state) = match launch {
            Launch::Stdio(launch) => {
                let (transport, state) = StdioTransport::spawn(server, &launch)?;
                (
                    handshake(server, handler, transport, wire.clone(), options, &state).await?,
                    state,
                )
            }
            Launch::Http(launch) => match spec {
                ServerSpec::Http(http_spec) if http_spec.uses_oauth() => {
                    let state = Arc::new(TransportState::default());
                    let context = sign_in_context(
                        server,
                        http_spec,
                        secrets,
                        &gatekeeper,
                        &verdict,
                        options,
                        &wire.tap,
                    );
                    let challenges = crate::auth::Challenges::default();
                    let client = rmcp::transport::AuthClient::new(
                        crate::auth::Recording::new(
                            http::client(server, &launch)?,
                            challenges.clone(),
                        ),
                        context.manager().await?,
                    );
                    let transport = http::transport_with(server, &launch, client.clone())?;
                    let first =
                        handshake(server, handler, transport, wire.clone(), options, &state).await;
                    let service = match (first, challenges.take()) {
                        (Ok(service), _) => service,
                        // The server wants a sign-in: ask, then connect again with the tokens.
                        (Err(_), Some(challenge)) => {
                            let reason = crate::auth::SignInReason::SignIn;
                            let manager = context
                                .sign_in(Some(&challenge.header), reason, &[])
                                .await
                                .map_err(|e| match e {
                                    HostError::SignIn {
                                        server,
                                        code,
                                        detail,
                                    } => HostError::SignIn {
                                        server,
                                        code,
                                        detail: format!(
                                            "the server requires authorization (HTTP 401), and signing in did not complete: {detail}"
                                        ),
                                    },
                                    other => other,
                                })?;
                            *client.auth_manager.lock().await = manager;
                            let transport = http::transport_with(server, &launch, client.clone())?;
                            handshake(
                                server,
                                make_handler(),
                                transport,
                                wire.clone(),
                                options,
                                &state,
                            )
                            .await?
                        }
                        (Err(e), None) => return Err(e),
                    };
                    oauth = Some(OAuthLink {
                        context,
                        client,
                        challenges,
                    });
                    (service, state)
                }
                _ => {
                    let state = Arc::new(TransportState::default());
                    let transport = http::transport(server, &launch)?;
                    (
                        handshake(server, handler, transport, wire.clone(), options, &state)
                            .await?,
                        state,
                    )
                }
            },
        };

        let info = service
            .peer()
            .peer_info()
            .ok_or_else(|| HostError::Protocol {
                server: server.to_string(),
                what: "handshake".into(),
                detail: "the handshake completed without server information".into(),
            })?;
        let era = Era::of(&info.protocol_version);
        if let EraPreference::Only(wanted) = options.era
            && wanted != era
        {
            return Err(HostError::Connect {
                server: server.to_string(),
                detail: format!(
                    "asked for protocol {wanted}, but the server negotiated {}",
                    info.protocol_version
                ),
            });
        }
        wire.era.set(era);
        if let Some(implementation) = &info.server_info {
            verdict.claimed.server_name = Some(implementation.name.clone());
            verdict.claimed.server_version = Some(implementation.version.clone());
        }
        let verdict = Arc::new(verdict);
        let session = options.broker.as_ref().map(|broker| {
            broker.session(
                verdict.clone(),
                transport_kind(spec),
                wire.era.clone(),
                wire.inflight.clone(),
            )
        });
        if let (Some(session), Some(link)) = (&session, &oauth)
            && let Some(authorization) = link.context.authorization().await
        {
            session.set_authorization(authorization);
        }
        if let Some(session) = &session {
            let _ = session_tx.send(Some(session.clone()));
            // The kill switch closes the connection from wherever it fires.
            let kill = session.kill_token();
            let closing = service.cancellation_token();
            tokio::spawn(async move {
                kill.cancelled().await;
                closing.cancel();
            });
        }
        let tool_gate = Mutex::new(gatekeeper.gate::<Tools>(&verdict));
        let prompt_gate = Mutex::new(gatekeeper.gate::<Prompts>(&verdict));
        let resource_gate = Mutex::new(gatekeeper.gate::<Resources>(&verdict));
        Ok(Connection {
            server: server.to_string(),
            spec: spec.clone(),
            service,
            era,
            state,
            events,
            mode: options.elicitation,
            tools_stale,
            tools_refresh: tokio::sync::Mutex::new(()),
            progress: wire.progress,
            dispatcher: wire.dispatcher,
            tools_cache: Mutex::new(None),
            prompts_listing: Default::default(),
            resources_listing: Default::default(),
            templates_listing: Default::default(),
            context_stale,
            request_timeout: options.request_timeout,
            gatekeeper,
            verdict,
            session,
            tool_gate,
            prompt_gate,
            resource_gate,
            subscribed,
            holders: Default::default(),
            subscribing: tokio::sync::Mutex::new(()),
            mismatches_seen: Mutex::new(Default::default()),
            oauth,
            sandboxed,
        })
    }

    /// Connections this server's egress proxy refused so far (recorded or not: the audit
    /// log's `egress_refused` records are bounded per window); 0 when it has no proxy.
    pub fn egress_refused(&self) -> u64 {
        self.sandboxed.proxy.as_ref().map_or(0, |p| p.refused())
    }

    /// Forgets any challenge seen before a request, so only that request's counts.
    pub(crate) fn clear_challenge(&self) {
        if let Some(link) = &self.oauth {
            link.challenges.take();
        }
    }

    /// After a request failed: when the server answered 401 (the sign-in expired or was
    /// revoked and could not be refreshed) or 403 `insufficient_scope` (step-up, for the union
    /// of the granted and the asked-for scopes), signs in again. `Ok(true)`: retry the
    /// request; `Ok(false)`: the failure was not an authorization challenge.
    pub(crate) async fn reauthorize(&self) -> Result<bool, HostError> {
        let Some(link) = &self.oauth else {
            return Ok(false);
        };
        let Some(challenge) = link.challenges.take() else {
            return Ok(false);
        };
        let (reason, wanted) = if challenge.insufficient_scope {
            (
                crate::auth::SignInReason::StepUp,
                crate::auth::challenge_scopes(&challenge.header),
            )
        } else {
            (crate::auth::SignInReason::SignIn, Vec::new())
        };
        let manager = link
            .context
            .sign_in(Some(&challenge.header), reason, &wanted)
            .await?;
        *link.client.auth_manager.lock().await = manager;
        if let (Some(session), Some(authorization)) =
            (&self.session, link.context.authorization().await)
        {
            session.set_authorization(authorization);
        }
        Ok(true)
    }

    /// Whether this connection signed in (or reused a sign-in) with MCP authorization.
    pub fn uses_oauth(&self) -> bool {
        self.oauth.is_some()
    }

    /// The admission verdict this connection was made under.
    pub fn verdict(&self) -> &Verdict {
        &self.verdict
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    pub fn era(&self) -> Era {
        self.era
    }

    pub fn peer_info(&self) -> Option<Arc<ServerPeerInfo>> {
        self.service.peer().peer_info()
    }

    pub fn summary(&self) -> ServerSummary {
        let info = self.peer_info();
        let implementation = info.as_ref().and_then(|i| i.server_info.clone());
        ServerSummary {
            era: self.era,
            protocol_version: info
                .as_ref()
                .map(|i| i.protocol_version.to_string())
                .unwrap_or_default(),
            transport: self.spec.kind(),
            target: self.spec.describe(),
            name: implementation.as_ref().map(|i| i.name.clone()),
            title: implementation.as_ref().and_then(|i| i.title.clone()),
            version: implementation.as_ref().map(|i| i.version.clone()),
            instructions: info.as_ref().and_then(|i| i.instructions.clone()),
            capabilities: info
                .as_ref()
                .and_then(|i| serde_json::to_value(&i.capabilities).ok())
                .unwrap_or(serde_json::Value::Null),
        }
    }

    /// The last lines the server wrote to stderr (stdio servers).
    pub fn stderr_tail(&self) -> Vec<String> {
        self.state.stderr_tail()
    }

    /// Bytes written to the server so far: for stdio, every byte written to its stdin. Lets
    /// tests prove that a denied call sent nothing. HTTP connections are not counted and always
    /// report 0.
    pub fn bytes_sent(&self) -> u64 {
        self.state.bytes_sent()
    }

    async fn guarded<T>(
        &self,
        what: &str,
        options: &CallOptions,
        request: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, HostError> {
        self.await_request(what, options, request)
            .await?
            .map_err(|error| self.service_error(error, what))
    }

    /// Waits for a request: the server's answer (or rmcp's error), or the host gives up on a
    /// timeout, the user's cancel, or the kill switch. The request timeout pauses while a
    /// person is being asked on this connection (human-paced), and restarts once they are
    /// done.
    async fn await_request<T>(
        &self,
        what: &str,
        options: &CallOptions,
        request: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<Result<T, ServiceError>, HostError> {
        let after = options.timeout.unwrap_or(self.request_timeout);
        let never = CancellationToken::new();
        let cancel = options.cancel.as_ref().unwrap_or(&never);
        let kill = self
            .session
            .as_ref()
            .map(|s| s.kill_token())
            .unwrap_or_default();
        // Boxed so that dropping it below really drops the request (and queues its cancel).
        let mut request = Box::pin(request);
        let mut deadline = tokio::time::Instant::now() + after;
        let abandoned = loop {
            let timer = async {
                if let Some(session) = self.session.as_ref().filter(|s| s.is_busy()) {
                    session.until_idle().await;
                    return false;
                }
                tokio::time::sleep_until(deadline).await;
                true
            };
            tokio::select! {
                result = &mut request => return Ok(result),
                expired = timer => {
                    if !expired {
                        deadline = tokio::time::Instant::now() + after;
                    } else if !self.session.as_ref().is_some_and(|s| s.is_busy()) {
                        break HostError::Timeout { server: self.server.clone(), what: what.to_string(), after };
                    }
                }
                _ = cancel.cancelled() => break HostError::Cancelled { server: self.server.clone(), what: what.to_string() },
                _ = kill.cancelled() => return Err(self.killed_error()),
            }
        };
        // The abandoned request's `notifications/cancelled` is queued by rmcp when the future
        // drops; give the service loop a moment to put it on the wire before the caller
        // possibly exits.
        drop(request);
        tokio::time::sleep(Duration::from_millis(50)).await;
        Err(abandoned)
    }

    fn protocol(&self, what: &str, detail: &str) -> HostError {
        HostError::Protocol {
            server: self.server.clone(),
            what: what.to_string(),
            detail: detail.to_string(),
        }
    }

    fn service_error(&self, error: ServiceError, what: &str) -> HostError {
        match error {
            ServiceError::McpError(data) => HostError::ServerError {
                server: self.server.clone(),
                what: what.to_string(),
                code: data.code.0,
                message: data.message.to_string(),
            },
            ServiceError::Timeout { timeout } => HostError::Timeout {
                server: self.server.clone(),
                what: what.to_string(),
                after: timeout,
            },
            ServiceError::Cancelled { .. } => HostError::Cancelled {
                server: self.server.clone(),
                what: what.to_string(),
            },
            ServiceError::UnexpectedResponse => {
                self.protocol(what, "the server answered with the wrong result type")
            }
            ServiceError::InputRequiredRoundsExceeded { max_rounds } => self.protocol(
                what,
                &format!("no final result after {max_rounds} input_required rounds"),
            ),
            other => {
                let detail = self.state.fault().unwrap_or_else(|| explain(&other));
                HostError::Transport {
                    server: self.server.clone(),
                    detail: with_stderr(format!("{what} failed: {detail}"), &self.state),
                }
            }
        }
    }

    fn killed_error(&self) -> HostError {
        HostError::SessionKilled {
            server: self.server.clone(),
            detail: self
                .session
                .as_ref()
                .and_then(|s| s.killed())
                .unwrap_or_else(|| "elicitation abuse".into()),
        }
    }

    /// Closes the connection: for stdio, closes stdin, then SIGTERM, then SIGKILL; for HTTP,
    /// ends the streams and DELETEs the session where there is one.
    pub async fn close(self) {
        if let Some(session) = &self.session {
            session.broker().end_session(session);
        }
        let _ = self.service.cancel().await;
    }

    /// The broker session of this connection, if elicitations go through a broker.
    pub fn session(&self) -> Option<&Arc<Session>> {
        self.session.as_ref()
    }
}

fn with_stderr(detail: String, state: &TransportState) -> String {
    let tail = state.stderr_tail();
    match tail.iter().rev().find(|l| !l.trim().is_empty()) {
        Some(last) => format!("{detail} (last stderr line: {last:?})"),
        None => detail,
    }
}
