//! A live connection to one MCP server: connect in the right era, list tools (all pages,
//! refreshed after `list_changed`), call tools one round at a time, close politely.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, InputRequest, InputRequests,
    InputResponses, JsonObject, PaginatedRequestParams, ServerPeerInfo, Tool,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService, ServiceError};
use rmcp::transport::Transport;
use serde::Serialize;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use gatehouse_attest::gate::{Permit, ToolGate, ToolStatus};
use gatehouse_attest::pins::tool_pin;

use crate::admission::Verdict;
use crate::broker::{Arrival, ElicitationBroker, ElicitationRecord, Session, WaitOutcome};
use crate::client::{ElicitationMode, HostClient, HostEvent, answer_elicitation, brokered_event};
use crate::config::{ServerSpec, lookup_secret, resolve_secrets};
use crate::consent::WaitPhase;
use crate::error::explain;
use crate::gatekeeper::Gatekeeper;
use crate::gatekeeper::events;
use crate::http::{self, HttpLaunch};
use crate::secrets::{SecretStore, SecretValue, to_identifier};
use crate::stdio::{StdioLaunch, StdioTransport, TransportState};
use crate::tap::{EraCell, ProgressCount, Tapped, TrafficTap, Wire};
use crate::{Era, EraPreference, HostError};

/// The most `input_required` rounds one call may take (2026-07-28 MRTR), so a server cannot
/// keep the host asking forever.
pub const MAX_INPUT_ROUNDS: usize = 10;

/// The most times a call is retried after `-32042` (URL elicitation required, 2025-11-25).
pub const MAX_URL_RETRIES: usize = 3;

/// JSON-RPC error code of URLElicitationRequiredError (2025-11-25 only).
pub const URL_ELICITATION_REQUIRED: i32 = -32042;

/// How long a call's result waits for completions of URL flows it opened that were sent
/// before it on another stream ([`ElicitationBroker::settle_completions`]).
const COMPLETION_GRACE: Duration = Duration::from_secs(2);

/// A listing (tools, resources, prompts) stops with an error past this many pages…
pub const MAX_LIST_PAGES: usize = 100;
/// …or this many items in all…
pub const MAX_LIST_ITEMS: usize = 10_000;
/// …or at a cursor longer than this, or one the server already gave in the same listing.
pub const MAX_CURSOR_BYTES: usize = 8 * 1024;

#[derive(Debug, Clone)]
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
        }
    }
}

/// The outcome of one `tools/call` round.
#[derive(Debug, Clone)]
pub enum Round {
    Complete(CallToolResult),
    /// 2026-07-28 MRTR: answer `requests`, then retry with `request_state` echoed exactly.
    InputRequired {
        requests: InputRequests,
        request_state: Option<String>,
    },
}

/// Per-call options.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Cancelled by the user (Ctrl-C, a Cancel button): the request is abandoned and
    /// `notifications/cancelled` is sent.
    pub cancel: Option<CancellationToken>,
    /// Overrides the connection's request timeout.
    pub timeout: Option<Duration>,
    /// The downstream client that asked (the gateway), recorded with the gate's decision.
    pub caller: Option<crate::caller::Caller>,
    /// Where the server's progress for this call goes, in order (what arrived before the
    /// result is delivered before the call returns). Best effort: a full channel drops one.
    pub progress: Option<tokio::sync::mpsc::Sender<CallProgress>>,
}

/// A progress notification of one call's request.
#[derive(Debug, Clone, PartialEq)]
pub struct CallProgress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// The final result of a tool call.
#[derive(Debug, Clone)]
pub struct ToolOutcome {
    pub result: CallToolResult,
    /// How many requests the call took (more than one after MRTR rounds or -32042 retries).
    pub rounds: usize,
    /// Every elicitation the call caused, in order.
    pub elicitations: Vec<ElicitationRecord>,
}

impl ToolOutcome {
    pub fn is_error(&self) -> bool {
        self.result.is_error == Some(true)
    }
}

/// What the server said about itself. Everything here is claimed by the server, not verified.
#[derive(Debug, Clone, Serialize)]
pub struct ServerSummary {
    pub era: Era,
    pub protocol_version: String,
    pub transport: &'static str,
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
    tools_cache: Mutex<Option<Vec<Tool>>>,
    request_timeout: Duration,
    gatekeeper: Arc<Gatekeeper>,
    verdict: Arc<Verdict>,
    /// Present when a broker handles this connection's elicitations.
    session: Option<Arc<Session>>,
    /// The closed allow-list and the definitions last listed; checked before every call.
    tool_gate: Mutex<ToolGate>,
    /// Pin mismatches already recorded (tool, actual pin), so a repeated listing does not
    /// flood the audit log.
    mismatches_seen: Mutex<std::collections::HashSet<(String, String)>>,
}

/// A listed tool and what the gate says about it.
#[derive(Debug, Clone)]
pub struct GatedTool {
    pub tool: Tool,
    pub status: ToolStatus,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("server", &self.server)
            .field("era", &self.era)
            .finish_non_exhaustive()
    }
}

fn lifecycle(era: EraPreference) -> ClientLifecycleMode {
    match era {
        EraPreference::Auto => ClientLifecycleMode::Auto {
            preferred_versions: vec![Era::V2026_07_28.protocol_version()],
            legacy_version: Some(Era::V2025_11_25.protocol_version()),
        },
        EraPreference::Only(Era::V2026_07_28) => ClientLifecycleMode::Discover {
            preferred_versions: vec![Era::V2026_07_28.protocol_version()],
        },
        EraPreference::Only(Era::V2025_11_25) => ClientLifecycleMode::Initialize,
    }
}

/// The working directory of every stdio server admitted through a bundle's binding: the root,
/// which only the system's administrators can write, so relative paths in a binding resolve to
/// the same files whoever starts the host, wherever.
pub const BOUND_SERVER_CWD: &str = "/";

/// How to start or reach a server, with its secrets resolved.
enum Launch {
    Stdio(StdioLaunch),
    Http(HttpLaunch),
}

/// Resolves every secret the spec references, off the async runtime (keychain calls block),
/// into a launch description. Returns the secrets used, for redaction.
async fn resolve(
    server: &str,
    spec: &ServerSpec,
    secrets: Arc<dyn SecretStore>,
    options: &ConnectOptions,
) -> Result<(Launch, Vec<(String, SecretValue)>), HostError> {
    let spec = spec.clone();
    let stderr_log = options
        .log_dir
        .as_ref()
        .map(|d| d.join(log_file_name(server)));
    let (grace, connect_timeout) = (options.shutdown_grace, options.connect_timeout);
    tokio::task::spawn_blocking(move || {
        let mut used = Vec::new();
        let mut resolve_all = |pairs: &[(String, String)]| {
            pairs
                .iter()
                .map(|(k, v)| Ok((k.clone(), resolve_secrets(v, secrets.as_ref(), &mut used)?)))
                .collect::<Result<Vec<_>, HostError>>()
        };
        let launch = match spec {
            ServerSpec::Stdio(s) => Launch::Stdio(StdioLaunch {
                env: resolve_all(&s.env)?,
                command: s.command,
                args: s
                    .args
                    .iter()
                    .map(|a| resolve_secrets(a, secrets.as_ref(), &mut used))
                    .collect::<Result<_, _>>()?,
                cwd: s.cwd,
                stderr_log,
                grace,
            }),
            ServerSpec::Http(h) => {
                let headers = resolve_all(&h.headers)?;
                let bearer = match &h.bearer_token_secret {
                    Some(name) => {
                        let value = lookup_secret(secrets.as_ref(), name)?;
                        used.push((name.clone(), value.clone()));
                        Some(value.expose().to_string())
                    }
                    None => None,
                };
                Launch::Http(HttpLaunch {
                    url: crate::config::resolve_url_secrets(&h.url, secrets.as_ref(), &mut used)?,
                    headers,
                    bearer,
                    connect_timeout,
                })
            }
        };
        Ok((launch, used))
    })
    .await
    .map_err(|e| HostError::Secret {
        name: "(keychain)".into(),
        detail: format!("the keychain lookup failed: {e}"),
    })?
}

/// Wraps `transport` in the tap and completes the MCP handshake in the chosen era, within the
/// connect timeout.
async fn handshake<T: Transport<RoleClient> + 'static>(
    server: &str,
    handler: HostClient,
    transport: T,
    wire: Wire,
    options: &ConnectOptions,
    state: &TransportState,
) -> Result<RunningService<RoleClient, HostClient>, HostError> {
    let tapped = Tapped::new(transport, server, wire);
    let result = tokio::time::timeout(
        options.connect_timeout,
        handler.serve_with_lifecycle(tapped, lifecycle(options.era)),
    )
    .await;
    let detail = match result {
        Ok(Ok(service)) => return Ok(service),
        Ok(Err(error)) => format!("during the handshake: {}", explain(&error)),
        Err(_) => format!(
            "no answer to the handshake within {}s (is it an MCP server? does it speak this protocol era?)",
            options.connect_timeout.as_secs_f64()
        ),
    };
    Err(HostError::Connect {
        server: server.to_string(),
        detail: with_stderr(state.fault().unwrap_or(detail), state),
    })
}

/// A file name for a server's log: the name with anything but `[A-Za-z0-9._-]` replaced.
pub fn log_file_name(server: &str) -> String {
    format!("{}.stderr.log", to_identifier(server, '_'))
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
        let mut verdict = gatekeeper.admit(server, spec).await?;
        if !verdict.proceeds {
            return Err(HostError::NotAdmitted {
                server: server.to_string(),
                status: verdict.status,
                reason: verdict.reason.unwrap_or("not_admitted"),
                code: verdict.code,
                detail: verdict.detail.clone(),
            });
        }
        if let Some(suspension) = gatekeeper.suspension(&verdict) {
            gatekeeper.audit(
                events::SUSPENDED_REFUSED,
                &verdict,
                serde_json::json!({"name": server, "reason": suspension.reason, "since": suspension.since}),
            )?;
            return Err(HostError::Suspended {
                server: server.to_string(),
                reason: suspension.reason,
                detail: suspension.detail,
                since: suspension.since,
            });
        }
        let (mut launch, used) = resolve(server, spec, secrets, options).await?;
        // Launch exactly the file that was hashed, not whatever PATH finds next time, in a
        // fixed directory: the binding hashes only the executable, and an interpreter resolves
        // relative scripts, `-m` modules and project files (`.npmrc`, `package.json`) in its
        // working directory, which would otherwise be wherever the host was started (a cloned
        // repository, say). Admission already refused a bound entry that sets a `cwd`.
        if let (Launch::Stdio(stdio), Some(program)) = (&mut launch, verdict.program()) {
            stdio.command = program.display().to_string();
            stdio.cwd = Some(PathBuf::from(BOUND_SERVER_CWD));
        }
        for (name, value) in &used {
            tap.redact(name, value.expose());
        }
        let tools_stale = Arc::new(AtomicBool::new(false));
        let wire = Wire {
            tap,
            era: Arc::new(EraCell::default()),
            progress: Arc::new(ProgressCount::default()),
            inflight: Default::default(),
        };
        let (session_tx, session_rx) = tokio::sync::watch::channel(None);
        let mut handler = HostClient::new(
            server,
            options.elicitation,
            events.clone(),
            tools_stale.clone(),
            wire.progress.clone(),
        );
        if options.broker.is_some() {
            handler = handler.with_pending_session(session_rx);
        }
        let (service, state) = match launch {
            Launch::Stdio(launch) => {
                let (transport, state) = StdioTransport::spawn(server, &launch)?;
                (
                    handshake(server, handler, transport, wire.clone(), options, &state).await?,
                    state,
                )
            }
            Launch::Http(launch) => {
                let state = Arc::new(TransportState::default());
                let transport = http::transport(server, &launch)?;
                (
                    handshake(server, handler, transport, wire.clone(), options, &state).await?,
                    state,
                )
            }
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
        let tool_gate = Mutex::new(ToolGate::new(gatekeeper.allow_list(&verdict)));
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
            tools_cache: Mutex::new(None),
            request_timeout: options.request_timeout,
            gatekeeper,
            verdict,
            session,
            tool_gate,
            mismatches_seen: Mutex::new(Default::default()),
        })
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
            transport: self.spec.transport_name(),
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

    /// Every tool, across all pages. Cached until the server sends `list_changed`; a refresh
    /// that fails (the request, or recording a pin mismatch it found) is tried again next time.
    pub async fn tools(&self) -> Result<Vec<Tool>, HostError> {
        // One refresh at a time: a caller that came while another refreshed waits for its
        // list instead of taking the cache the other just found stale (two front ends, or a
        // gateway listing while a list_changed is handled).
        let _refreshing = self.tools_refresh.lock().await;
        if !self.tools_stale.swap(false, Ordering::SeqCst)
            && let Some(tools) = self
                .tools_cache
                .lock()
                .expect("tool cache poisoned")
                .clone()
        {
            return Ok(tools);
        }
        let refreshed = async {
            let peer = self.service.peer();
            let tools = self
                .list_pages("tools/list", |cursor| async move {
                    peer.list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
                        .await
                        .map(|page| (page.tools, page.next_cursor))
                })
                .await?;
            self.observe(&tools)?;
            Ok(tools)
        }
        .await;
        match refreshed {
            Ok(tools) => {
                *self.tools_cache.lock().expect("tool cache poisoned") = Some(tools.clone());
                Ok(tools)
            }
            Err(error) => {
                // The cached list is no longer known to be current.
                self.tools_stale.store(true, Ordering::SeqCst);
                Err(error)
            }
        }
    }

    /// Gives the gate the definitions just listed, and records new pin mismatches (a mismatch
    /// counts as recorded only once its record is on disk).
    fn observe(&self, tools: &[Tool]) -> Result<(), HostError> {
        let values = definitions(tools);
        let mismatches = self
            .tool_gate
            .lock()
            .expect("tool gate poisoned")
            .observe(&values);
        let mut seen = self.mismatches_seen.lock().expect("mismatch set poisoned");
        let new: Vec<_> = mismatches
            .into_iter()
            .filter(|m| !seen.contains(&(m.tool.clone(), m.actual.clone())))
            .collect();
        self.gatekeeper.record_mismatches(&self.verdict, &new)?;
        seen.extend(new.into_iter().map(|m| (m.tool, m.actual)));
        Ok(())
    }

    /// Every listed tool with the gate's view of it: allowed, hidden (not on the allow-list)
    /// or blocked (its pinned definition changed). Only `Allowed` tools can be called.
    pub async fn gated_tools(&self) -> Result<Vec<GatedTool>, HostError> {
        let tools = self.tools().await?;
        let gate = self.tool_gate.lock().expect("tool gate poisoned");
        Ok(tools
            .into_iter()
            .map(|tool| GatedTool {
                status: gate.status(&tool.name),
                tool,
            })
            .collect())
    }

    /// The tools that may be called.
    pub async fn allowed_tools(&self) -> Result<Vec<Tool>, HostError> {
        Ok(self
            .gated_tools()
            .await?
            .into_iter()
            .filter(|t| t.status == ToolStatus::Allowed)
            .map(|t| t.tool)
            .collect())
    }

    /// Approves tools as the user (warn posture only): pins their current definitions, so a
    /// later change blocks them again. `names` empty means every listed tool. Returns the
    /// pins recorded.
    pub async fn approve_tools(
        &self,
        names: &[String],
    ) -> Result<Vec<(String, String)>, HostError> {
        let tools = self.tools().await?;
        let values = definitions(&tools);
        let mut pins = Vec::new();
        for (tool, value) in tools.iter().zip(&values) {
            if names.is_empty() || names.iter().any(|n| n.as_str() == tool.name.as_ref()) {
                pins.push((tool.name.to_string(), tool_pin(value)));
            }
        }
        for name in names {
            if !pins.iter().any(|(t, _)| t == name) {
                return Err(HostError::ToolDenied {
                    server: self.server.clone(),
                    tool: name.clone(),
                    reason: "tool_not_listed",
                    detail: "the server does not list a tool of exactly this name, so there is no definition to approve".into(),
                });
            }
        }
        self.gatekeeper.approve(&self.verdict, &pins)?;
        let mut gate = ToolGate::new(self.gatekeeper.allow_list(&self.verdict));
        let _ = gate.observe(&values);
        *self.tool_gate.lock().expect("tool gate poisoned") = gate;
        Ok(pins)
    }

    /// The gate's decision for a call to `name`, recorded in the audit log before it takes
    /// effect. The tool list is fetched first if it never was (or changed), so pins are
    /// checked against what the server currently says.
    pub async fn authorize(
        &self,
        name: &str,
        caller: Option<&crate::caller::Caller>,
    ) -> Result<Permit, HostError> {
        let fresh = self
            .tools_cache
            .lock()
            .expect("tool cache poisoned")
            .is_some()
            && !self.tools_stale.load(Ordering::SeqCst);
        if !fresh {
            self.tools().await?;
        }
        let gate = self.tool_gate.lock().expect("tool gate poisoned");
        self.gatekeeper
            .authorize(&self.verdict, &gate, name, caller)
    }

    /// Calls a tool. Each round is one `tools/call` ([`Connection::call_tool_round`]):
    /// - 2026-07-28: an `input_required` result is answered (each input request through the
    ///   broker's policy and consent) and the call retried with a new id, the answers, and
    ///   `requestState` echoed exactly (omitted when the server sent none), at most
    ///   [`MAX_INPUT_ROUNDS`] rounds; after a consented URL the user retries (or cancels).
    /// - 2025-11-25: a `-32042` error's URL elicitations are put to the user, opened after
    ///   consent, and the call retried once all of them completed (or the user retries), at
    ///   most [`MAX_URL_RETRIES`] times; a server that repeats a URL already completed is
    ///   refused.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: &CallOptions,
    ) -> Result<ToolOutcome, HostError> {
        self.call_tool_traced(name, arguments, options).await.0
    }

    /// [`Connection::call_tool`], also returning the elicitations the call caused when it
    /// failed (on success they are in the outcome).
    pub async fn call_tool_traced(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: &CallOptions,
    ) -> (Result<ToolOutcome, HostError>, Vec<ElicitationRecord>) {
        let permit = match self.authorize(name, options.caller.as_ref()).await {
            Ok(permit) => permit,
            Err(error) => return (Err(error), Vec::new()),
        };
        let call = self.session.as_ref().map(|s| {
            let call = s.begin_call();
            if let Some(caller) = &options.caller {
                s.set_caller(call, caller.clone());
            }
            (s.clone(), call)
        });
        let Some((session, call)) = call else {
            let outcome = self
                .drive_call(&permit, name, arguments, options, None)
                .await;
            return (outcome, Vec::new());
        };
        let _forget = session.forget_on_drop(call);
        // The user may cancel the call from a URL flow it opened while it runs; that cancels
        // the request like any other cancel (notifications/cancelled).
        let cancel = options
            .cancel
            .as_ref()
            .map(CancellationToken::child_token)
            .unwrap_or_default();
        let options = CallOptions {
            cancel: Some(cancel.clone()),
            ..options.clone()
        };
        let why = Mutex::new(None);
        let mut progress_events = options.progress.as_ref().map(|_| self.events.subscribe());
        let outcome = tokio::select! {
            biased;
            outcome = self.drive_call(&permit, name, arguments, &options, Some(call)) => outcome,
            never = self.watch_urls_in_call(&session, call, name, &cancel, &why) => match never {},
            never = self.pass_progress(&session, call, progress_events.as_mut(), options.progress.as_ref()) => match never {},
        };
        // Progress reported before the result (drive_call waited for it) is still queued.
        if let (Some(events), Some(to)) = (progress_events.as_mut(), options.progress.as_ref()) {
            while let Ok(event) = events.try_recv() {
                self.progress_of_call(&session, call, &event, to);
            }
        }
        // Cancelled because a URL flow ended without completing: say which way it ended.
        let outcome = match (outcome, why.into_inner().expect("why poisoned")) {
            (Err(HostError::Cancelled { .. }), Some(error)) => Err(error),
            (outcome, _) => outcome,
        };
        // A kill that fired on notifications received before the result wins over it.
        let outcome = match (outcome, session.killed()) {
            (Ok(_), Some(_)) => Err(self.killed_error()),
            (outcome, _) => outcome,
        };
        if outcome.is_ok() {
            let open = session.call_records(call);
            session
                .broker()
                .settle_completions(&session, &open, COMPLETION_GRACE)
                .await;
        }
        let mut records = session.end_call(call);
        match &outcome {
            Ok(o) => session.broker().attach_result(
                &session,
                &mut records,
                o.is_error(),
                &result_text(&o.result),
            ),
            Err(error) => session.broker().close_prompts(&records, &error.to_string()),
        }
        match outcome {
            Ok(mut o) => {
                o.elicitations = records;
                (Ok(o), Vec::new())
            }
            Err(error) => (Err(error), records),
        }
    }

    async fn drive_call(
        &self,
        permit: &Permit,
        name: &str,
        arguments: Option<JsonObject>,
        options: &CallOptions,
        call: Option<u64>,
    ) -> Result<ToolOutcome, HostError> {
        let mut params = CallToolRequestParams::new(name.to_string());
        params.arguments = arguments;
        let what = format!("tools/call {name:?}");
        let mut url_retries = 0;
        let mut completed_urls: Vec<String> = Vec::new();
        // 2026-07-28: URLs the user already consented to in this call → their prompt.
        let mut consented: std::collections::HashMap<String, u64> = Default::default();
        for round in 1..=MAX_INPUT_ROUNDS {
            if let (Some(session), Some(call)) = (&self.session, call) {
                session.inflight().expect_call(name, call);
            }
            let answer = self.call_round_raw(permit, params.clone(), options).await;
            match answer {
                Ok(Round::Complete(result)) => {
                    return Ok(ToolOutcome {
                        result,
                        rounds: round,
                        elicitations: Vec::new(),
                    });
                }
                Ok(Round::InputRequired {
                    requests,
                    request_state,
                }) => {
                    let (responses, waiting_on) = self
                        .answer_round(requests, &what, call, round, &mut consented)
                        .await?;
                    if let (Some(prompt), Some(session), Some(call)) =
                        (waiting_on, &self.session, call)
                    {
                        match session
                            .broker()
                            .wait(session, prompt, &[], WaitPhase::Retry)
                            .await
                        {
                            WaitOutcome::Retry | WaitOutcome::Completed => {
                                session.broker().record_retry(
                                    session,
                                    call,
                                    round,
                                    "user_retry",
                                    &[],
                                )?;
                            }
                            other => return Err(self.wait_failed(&what, other)),
                        }
                    }
                    params.input_responses = Some(responses);
                    params.request_state = request_state;
                }
                Err(RoundError::UrlRequired(data)) => {
                    let (Some(session), Some(call)) = (&self.session, call) else {
                        return Err(self.service_error(ServiceError::McpError(data), &what));
                    };
                    if url_retries >= MAX_URL_RETRIES {
                        return Err(HostError::ElicitationIncomplete {
                            server: self.server.clone(),
                            what,
                            detail: format!(
                                "the server still requires URL elicitations after {MAX_URL_RETRIES} retries; giving up"
                            ),
                        });
                    }
                    let (prompt, ids, urls) = self
                        .handle_url_required(session, call, &data, &what, &completed_urls)
                        .await?;
                    let outcome = session
                        .broker()
                        .wait(session, prompt, &ids, WaitPhase::Completion)
                        .await;
                    let why = match outcome {
                        WaitOutcome::Completed => "completed",
                        WaitOutcome::Retry => "user_retry",
                        other => return Err(self.wait_failed(&what, other)),
                    };
                    url_retries += 1;
                    completed_urls.extend(urls);
                    let receipts: Vec<String> = session
                        .call_records(call)
                        .into_iter()
                        .filter(|r| r.elicitation_id.as_ref().is_some_and(|id| ids.contains(id)))
                        .map(|r| r.receipt_id)
                        .collect();
                    session
                        .broker()
                        .record_retry(session, call, url_retries, why, &receipts)?;
                }
                Err(RoundError::Host(error)) => return Err(error),
            }
        }
        Err(self.protocol(
            &what,
            &format!("no final result after {MAX_INPUT_ROUNDS} rounds"),
        ))
    }

    /// While a call runs, waits on each URL flow it opened through `elicitation/create`
    /// (2025-11-25): the card offers Cancel until the completion arrives, and Cancel cancels
    /// the call. Never resolves; the call's own end drops it.
    /// Hands the server's progress for host call `call` to `to`: a notification counts when its
    /// token is the one the call's current request was sent with. Never resolves.
    async fn pass_progress(
        &self,
        session: &Arc<Session>,
        call: u64,
        events: Option<&mut broadcast::Receiver<HostEvent>>,
        to: Option<&tokio::sync::mpsc::Sender<CallProgress>>,
    ) -> std::convert::Infallible {
        let (Some(events), Some(to)) = (events, to) else {
            return std::future::pending().await;
        };
        loop {
            match events.recv().await {
                Ok(event) => self.progress_of_call(session, call, &event, to),
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return std::future::pending().await,
            }
        }
    }

    fn progress_of_call(
        &self,
        session: &Session,
        call: u64,
        event: &HostEvent,
        to: &tokio::sync::mpsc::Sender<CallProgress>,
    ) {
        let HostEvent::Progress {
            server,
            token,
            progress,
            total,
            message,
        } = event
        else {
            return;
        };
        let current = session.inflight().last_of_call(call);
        if *server == self.server && current.and_then(|r| r.progress_token).as_ref() == Some(token)
        {
            let _ = to.try_send(CallProgress {
                progress: *progress,
                total: *total,
                message: message.clone(),
            });
        }
    }

    async fn watch_urls_in_call(
        &self,
        session: &Arc<Session>,
        call: u64,
        name: &str,
        cancel: &CancellationToken,
        why: &Mutex<Option<HostError>>,
    ) -> std::convert::Infallible {
        let what = format!("tools/call {name:?}");
        let mut seen = Vec::new();
        loop {
            let record = session.next_url_in_call(call, &seen).await;
            seen.push(record.prompt_id);
            let ids: Vec<String> = record.elicitation_id.into_iter().collect();
            loop {
                match session
                    .broker()
                    .wait(session, record.prompt_id, &ids, WaitPhase::InCall)
                    .await
                {
                    WaitOutcome::Completed => {}
                    // Enter in a console: keep waiting.
                    WaitOutcome::Retry => continue,
                    // The kill ends the call by itself.
                    WaitOutcome::Killed => return std::future::pending().await,
                    // Cancelled, or no completion within the time a person has: the call
                    // is cancelled (notifications/cancelled), the card closed with why.
                    outcome @ (WaitOutcome::Cancelled | WaitOutcome::TimedOut) => {
                        *why.lock().expect("why poisoned") = Some(self.wait_failed(&what, outcome));
                        cancel.cancel();
                        return std::future::pending().await;
                    }
                }
                break;
            }
        }
    }

    fn wait_failed(&self, what: &str, outcome: WaitOutcome) -> HostError {
        match outcome {
            WaitOutcome::Cancelled => HostError::Cancelled {
                server: self.server.clone(),
                what: what.to_string(),
            },
            WaitOutcome::Killed => self.killed_error(),
            WaitOutcome::TimedOut => HostError::ElicitationIncomplete {
                server: self.server.clone(),
                what: what.to_string(),
                detail: "the URL flow did not complete within the time a person has to finish it"
                    .into(),
            },
            WaitOutcome::Completed | WaitOutcome::Retry => {
                self.protocol(what, "unexpected wait outcome")
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

    /// Puts each URL elicitation of a `-32042` error to the user. Returns the prompt to wait
    /// on, the elicitation ids and the URLs; an error when any was refused, declined or
    /// cancelled, or when the server repeats a URL already completed.
    async fn handle_url_required(
        &self,
        session: &Arc<Session>,
        call: u64,
        data: &rmcp::model::ErrorData,
        what: &str,
        completed_urls: &[String],
    ) -> Result<(u64, Vec<String>, Vec<String>), HostError> {
        let entries = data
            .data
            .as_ref()
            .and_then(|d| d.get("elicitations"))
            .and_then(serde_json::Value::as_array)
            .cloned()
            .unwrap_or_default();
        if entries.is_empty() {
            return Err(self.protocol(
                what,
                "the server answered -32042 (URL elicitation required) without listing any elicitations",
            ));
        }
        let mut prompt = None;
        let mut ids = Vec::new();
        let mut urls = Vec::new();
        for entry in entries {
            let params: rmcp::model::ElicitRequestParams = serde_json::from_value(entry.clone())
                .map_err(|e| {
                    self.protocol(
                        what,
                        &format!("a -32042 elicitation is not a URL elicitation: {e}"),
                    )
                })?;
            let rmcp::model::ElicitRequestParams::UrlElicitationParams { url, .. } = &params else {
                return Err(self.protocol(
                    what,
                    "a -32042 error listed a form elicitation; only URL elicitations may be listed",
                ));
            };
            if completed_urls.contains(url) {
                return Err(HostError::ElicitationIncomplete {
                    server: self.server.clone(),
                    what: what.to_string(),
                    detail: format!(
                        "the server asks again for a URL elicitation already completed ({url}); not retrying"
                    ),
                });
            }
            let url = url.clone();
            let (_, record) = session
                .broker()
                // Asked within the host's own call: it ends with the call (a dropped call
                // closes the card).
                .elicit(
                    session,
                    &params,
                    Arrival::Required { call },
                    &CancellationToken::new(),
                )
                .await;
            if record.action != "accept" {
                return Err(HostError::ElicitationIncomplete {
                    server: self.server.clone(),
                    what: what.to_string(),
                    detail: format!(
                        "the URL elicitation the server requires was not completed: {} ({}){}",
                        record.action,
                        record.decision,
                        record.note.map(|n| format!("; {n}")).unwrap_or_default()
                    ),
                });
            }
            prompt.get_or_insert(record.prompt_id);
            ids.extend(record.elicitation_id);
            urls.push(url);
        }
        Ok((prompt.unwrap_or_default(), ids, urls))
    }

    /// One `tools/call` request (`call_tool_once`) for a tool the gate let through
    /// ([`Connection::authorize`]): the final result, or what the server needs before the call
    /// can complete. The caller decides what happens next; rmcp never retries on its own.
    pub async fn call_tool_round(
        &self,
        permit: &Permit,
        params: CallToolRequestParams,
        options: &CallOptions,
    ) -> Result<Round, HostError> {
        let what = format!("tools/call {:?}", params.name);
        match self.call_round_raw(permit, params, options).await {
            Ok(round) => Ok(round),
            Err(RoundError::UrlRequired(data)) => {
                Err(self.service_error(ServiceError::McpError(data), &what))
            }
            Err(RoundError::Host(error)) => Err(error),
        }
    }

    async fn call_round_raw(
        &self,
        permit: &Permit,
        params: CallToolRequestParams,
        options: &CallOptions,
    ) -> Result<Round, RoundError> {
        if params.name.as_ref() != permit.tool() {
            return Err(RoundError::Host(HostError::ToolDenied {
                server: self.server.clone(),
                tool: params.name.to_string(),
                reason: "tool_not_admitted",
                detail: format!(
                    "the permit is for {:?}, not this tool; each call needs its own authorization",
                    permit.tool()
                ),
            }));
        }
        let what = format!("tools/call {:?}", params.name);
        let response = match self
            .await_request(&what, options, self.service.peer().call_tool_once(params))
            .await
            .map_err(RoundError::Host)?
        {
            Ok(response) => response,
            Err(ServiceError::McpError(data))
                if data.code.0 == URL_ELICITATION_REQUIRED && self.era == Era::V2025_11_25 =>
            {
                return Err(RoundError::UrlRequired(data));
            }
            Err(error) => return Err(RoundError::Host(self.service_error(error, &what))),
        };
        match response {
            CallToolResponse::Complete(result) => {
                // Progress that arrived before the result is reported before it; bounded, so a
                // handler that never runs cannot hold the result back.
                let _ = tokio::time::timeout(Duration::from_secs(2), self.progress.settle()).await;
                Ok(Round::Complete(result))
            }
            CallToolResponse::InputRequired(required) => Ok(Round::InputRequired {
                requests: required.input_requests.unwrap_or_default(),
                request_state: required.request_state,
            }),
            CallToolResponse::Task(_) => Err(RoundError::Host(self.protocol(
                &what,
                "the server answered with a task, but Gatehouse does not declare the tasks extension",
            ))),
            _ => Err(RoundError::Host(
                self.protocol(&what, "the server answered with an unknown result type"),
            )),
        }
    }

    /// Answers the input requests of one `input_required` round: through the broker when there
    /// is one (a URL already consented to in this call is not asked again), else under this
    /// connection's [`ElicitationMode`]. Returns the responses and, when a URL was consented
    /// to, the prompt whose Retry the next round waits for.
    async fn answer_round(
        &self,
        requests: InputRequests,
        what: &str,
        call: Option<u64>,
        round: usize,
        consented: &mut std::collections::HashMap<String, u64>,
    ) -> Result<(InputResponses, Option<u64>), HostError> {
        let (Some(session), Some(call)) = (&self.session, call) else {
            return Ok((self.answer_input_requests(requests, what)?, None));
        };
        let mut responses = InputResponses::new();
        let mut waiting_on = None;
        for (key, request) in requests {
            let InputRequest::Elicitation(elicit) = request else {
                return Err(self.protocol(
                    what,
                    &format!("input request {key:?} asks for something other than an elicitation (sampling, roots), which Gatehouse does not declare"),
                ));
            };
            if let rmcp::model::ElicitRequestParams::UrlElicitationParams { url, .. } =
                &elicit.params
                && let Some(prompt) = consented.get(url)
            {
                // Still pending out of band: the consent stands, nothing is opened again.
                waiting_on.get_or_insert(*prompt);
                responses.insert(
                    key,
                    serde_json::to_value(rmcp::model::ElicitResult::new(
                        rmcp::model::ElicitationAction::Accept,
                    ))
                    .expect("ElicitResult serializes"),
                );
                continue;
            }
            let (result, record) = session
                .broker()
                .elicit(
                    session,
                    &elicit.params,
                    Arrival::Input {
                        call,
                        key: key.clone(),
                        round,
                    },
                    &CancellationToken::new(),
                )
                .await;
            let _ = self
                .events
                .send(brokered_event(&self.server, &elicit.params, &record));
            if session.killed().is_some() {
                return Err(self.killed_error());
            }
            if record.mode == "url"
                && record.action == "accept"
                && let rmcp::model::ElicitRequestParams::UrlElicitationParams { url, .. } =
                    &elicit.params
            {
                consented.insert(url.clone(), record.prompt_id);
                waiting_on.get_or_insert(record.prompt_id);
            }
            responses.insert(
                key,
                serde_json::to_value(result).expect("ElicitResult serializes"),
            );
        }
        Ok((responses, waiting_on))
    }

    /// Answers the input requests of one `input_required` round without a broker, each as an
    /// elicitation under this connection's [`ElicitationMode`].
    pub fn answer_input_requests(
        &self,
        requests: InputRequests,
        what: &str,
    ) -> Result<InputResponses, HostError> {
        let mut responses = InputResponses::new();
        for (key, request) in requests {
            let value = match request {
                InputRequest::Elicitation(elicit) => {
                    let result =
                        answer_elicitation(&self.server, self.mode, &elicit.params, &self.events);
                    serde_json::to_value(result).expect("ElicitResult serializes")
                }
                // Sampling, roots and anything newer: not declared, so not answerable.
                _ => {
                    return Err(self.protocol(
                        what,
                        &format!("input request {key:?} asks for something other than an elicitation (sampling, roots), which Gatehouse does not declare"),
                    ));
                }
            };
            responses.insert(key, value);
        }
        Ok(responses)
    }

    /// Every resource, across all pages.
    pub async fn resources(&self) -> Result<Vec<rmcp::model::Resource>, HostError> {
        let peer = self.service.peer();
        self.list_pages("resources/list", |cursor| async move {
            peer.list_resources(Some(PaginatedRequestParams::default().with_cursor(cursor)))
                .await
                .map(|page| (page.resources, page.next_cursor))
        })
        .await
    }

    pub async fn read_resource(
        &self,
        uri: &str,
    ) -> Result<rmcp::model::ReadResourceResult, HostError> {
        let params = rmcp::model::ReadResourceRequestParams::new(uri.to_string());
        self.guarded(
            &format!("resources/read {uri:?}"),
            &CallOptions::default(),
            self.service.peer().read_resource(params),
        )
        .await
    }

    /// Every prompt, across all pages.
    pub async fn prompts(&self) -> Result<Vec<rmcp::model::Prompt>, HostError> {
        let peer = self.service.peer();
        self.list_pages("prompts/list", |cursor| async move {
            peer.list_prompts(Some(PaginatedRequestParams::default().with_cursor(cursor)))
                .await
                .map(|page| (page.prompts, page.next_cursor))
        })
        .await
    }

    pub async fn get_prompt(&self, name: &str) -> Result<rmcp::model::GetPromptResult, HostError> {
        let params = rmcp::model::GetPromptRequestParams::new(name.to_string());
        self.guarded(
            &format!("prompts/get {name:?}"),
            &CallOptions::default(),
            self.service.peer().get_prompt(params),
        )
        .await
    }

    /// Every page of a listing, bounded: a server that repeats a cursor, sends one too long, or
    /// never stops ends the listing with an error, and nothing half-listed is returned as whole.
    async fn list_pages<T, F, Fut>(&self, what: &str, mut page: F) -> Result<Vec<T>, HostError>
    where
        F: FnMut(Option<String>) -> Fut,
        Fut: Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
    {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..MAX_LIST_PAGES {
            let (mut batch, next) = self
                .guarded(what, &CallOptions::default(), page(cursor.take()))
                .await?;
            if items.len() + batch.len() > MAX_LIST_ITEMS {
                return Err(self.protocol(
                    what,
                    &format!(
                        "the server listed more than {MAX_LIST_ITEMS} items; Gatehouse stops there"
                    ),
                ));
            }
            items.append(&mut batch);
            let Some(next) = next else {
                return Ok(items);
            };
            if next.len() > MAX_CURSOR_BYTES {
                return Err(self.protocol(
                    what,
                    &format!(
                        "the server sent a {}-byte cursor (the limit is {MAX_CURSOR_BYTES}); Gatehouse stops there",
                        next.len()
                    ),
                ));
            }
            if !seen.insert(next.clone()) {
                return Err(self.protocol(
                    what,
                    &format!(
                        "the server repeated the cursor {:?} within one listing, which would never end; Gatehouse stops there",
                        preview(&next)
                    ),
                ));
            }
            cursor = Some(next);
        }
        Err(self.protocol(
            what,
            &format!("the server listed more than {MAX_LIST_PAGES} pages; Gatehouse stops there"),
        ))
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

/// Why a round ended without a result.
enum RoundError {
    /// 2025-11-25 `-32042`: URL elicitations must complete before a retry.
    UrlRequired(rmcp::model::ErrorData),
    Host(HostError),
}

/// How the broker sees the transport: stdio, or HTTP on loopback or not, with or without
/// MCP authorization (a bearer token or an Authorization header).
fn transport_kind(spec: &ServerSpec) -> gatehouse_policy::TransportKind {
    match spec {
        ServerSpec::Stdio(_) => gatehouse_policy::TransportKind::Stdio,
        ServerSpec::Http(http) => gatehouse_policy::TransportKind::Http {
            loopback: match http.url.host() {
                Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
                Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
                Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
                None => false,
            },
            authorized: http.bearer_token_secret.is_some()
                || http
                    .headers
                    .iter()
                    .any(|(name, _)| name.eq_ignore_ascii_case("authorization")),
        },
    }
}

/// The text of a tool result, for attaching to prompts.
pub fn result_text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Tool definitions as JSON, the form pins are computed over.
fn definitions(tools: &[Tool]) -> Vec<serde_json::Value> {
    tools
        .iter()
        .map(|t| serde_json::to_value(t).expect("a tool serializes"))
        .collect()
}

/// The start of a server-chosen string, for an error message.
fn preview(text: &str) -> String {
    text.chars().take(64).collect()
}

fn with_stderr(detail: String, state: &TransportState) -> String {
    let tail = state.stderr_tail();
    match tail.iter().rev().find(|l| !l.trim().is_empty()) {
        Some(last) => format!("{detail} (last stderr line: {last:?})"),
        None => detail,
    }
}
