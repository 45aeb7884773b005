//! A live connection to one MCP server: connect in the right era, list tools (all pages,
//! refreshed after `list_changed`), call tools one round at a time, close politely.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, InputRequest, InputRequests,
    InputResponses, JsonObject, ServerPeerInfo, Tool,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService, ServiceError};
use rmcp::transport::Transport;
use serde::Serialize;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use gatehouse_attest::gate::{Permit, ToolGate, ToolStatus};
use gatehouse_attest::pins::tool_pin;

use crate::admission::Verdict;
use crate::client::{ElicitationMode, HostClient, HostEvent, answer_elicitation};
use crate::config::{ServerSpec, lookup_secret, resolve_secrets};
use crate::error::explain;
use crate::gatekeeper::Gatekeeper;
use crate::http::{self, HttpLaunch};
use crate::secrets::{SecretStore, SecretValue, to_identifier};
use crate::stdio::{StdioLaunch, StdioTransport, TransportState};
use crate::tap::{EraCell, ProgressCount, Tapped, TrafficTap, Wire};
use crate::{Era, EraPreference, HostError};

/// The most `input_required` rounds one call may take (2026-07-28 MRTR), so a server cannot
/// keep the host asking forever.
pub const MAX_INPUT_ROUNDS: usize = 10;

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
}

/// The final result of a tool call.
#[derive(Debug, Clone)]
pub struct ToolOutcome {
    pub result: CallToolResult,
    /// How many requests the call took (more than one after MRTR rounds).
    pub rounds: usize,
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
    progress: Arc<ProgressCount>,
    tools_cache: Mutex<Option<Vec<Tool>>>,
    request_timeout: Duration,
    gatekeeper: Arc<Gatekeeper>,
    verdict: Verdict,
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
                args: s.args,
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
                    url: h.url,
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
                reason: verdict.reason.unwrap_or("not_admitted"),
                code: verdict.code,
                detail: verdict.detail.clone(),
            });
        }
        let (mut launch, used) = resolve(server, spec, secrets, options).await?;
        // Launch exactly the file that was hashed, not whatever PATH finds next time.
        if let (Launch::Stdio(stdio), Some(program)) = (&mut launch, verdict.program()) {
            stdio.command = program.display().to_string();
        }
        for (name, value) in &used {
            tap.redact(name, value.expose());
        }
        let tools_stale = Arc::new(AtomicBool::new(false));
        let wire = Wire {
            tap,
            era: Arc::new(EraCell::default()),
            progress: Arc::new(ProgressCount::default()),
        };
        let handler = HostClient::new(
            server,
            options.elicitation,
            events.clone(),
            tools_stale.clone(),
            wire.progress.clone(),
        );
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
            progress: wire.progress,
            tools_cache: Mutex::new(None),
            request_timeout: options.request_timeout,
            gatekeeper,
            verdict,
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
            let tools = self
                .guarded(
                    "tools/list",
                    &CallOptions::default(),
                    self.service.peer().list_all_tools(),
                )
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
    pub async fn authorize(&self, name: &str) -> Result<Permit, HostError> {
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
        self.gatekeeper.authorize(&self.verdict, &gate, name)
    }

    /// Calls a tool. Each round is one `tools/call` ([`Connection::call_tool_round`]); on
    /// 2026-07-28 an `input_required` result is answered (see [`ElicitationMode`]) and the call
    /// retried with a new id, the answers, and `requestState` echoed exactly (omitted when the
    /// server sent none), at most [`MAX_INPUT_ROUNDS`] times.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: &CallOptions,
    ) -> Result<ToolOutcome, HostError> {
        let permit = self.authorize(name).await?;
        let mut params = CallToolRequestParams::new(name.to_string());
        params.arguments = arguments;
        let what = format!("tools/call {name:?}");
        for round in 1..=MAX_INPUT_ROUNDS {
            match self
                .call_tool_round(&permit, params.clone(), options)
                .await?
            {
                Round::Complete(result) => {
                    return Ok(ToolOutcome {
                        result,
                        rounds: round,
                    });
                }
                Round::InputRequired {
                    requests,
                    request_state,
                } => {
                    params.input_responses = Some(self.answer_input_requests(requests, &what)?);
                    params.request_state = request_state;
                }
            }
        }
        Err(self.protocol(
            &what,
            &format!("no final result after {MAX_INPUT_ROUNDS} input_required rounds"),
        ))
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
        if params.name.as_ref() != permit.tool() {
            return Err(HostError::ToolDenied {
                server: self.server.clone(),
                tool: params.name.to_string(),
                reason: "tool_not_admitted",
                detail: format!(
                    "the permit is for {:?}, not this tool; each call needs its own authorization",
                    permit.tool()
                ),
            });
        }
        let what = format!("tools/call {:?}", params.name);
        match self.guarded(&what, options, self.service.peer().call_tool_once(params)).await? {
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
            CallToolResponse::Task(_) => {
                Err(self.protocol(&what, "the server answered with a task, but Gatehouse does not declare the tasks extension"))
            }
            _ => Err(self.protocol(&what, "the server answered with an unknown result type")),
        }
    }

    /// Answers the input requests of one `input_required` round, each as an elicitation under
    /// this connection's [`ElicitationMode`].
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
        self.guarded(
            "resources/list",
            &CallOptions::default(),
            self.service.peer().list_all_resources(),
        )
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
        self.guarded(
            "prompts/list",
            &CallOptions::default(),
            self.service.peer().list_all_prompts(),
        )
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

    async fn guarded<T>(
        &self,
        what: &str,
        options: &CallOptions,
        request: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, HostError> {
        let after = options.timeout.unwrap_or(self.request_timeout);
        let never = CancellationToken::new();
        let cancel = options.cancel.as_ref().unwrap_or(&never);
        let abandoned = tokio::select! {
            result = tokio::time::timeout(after, request) => match result {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(error)) => return Err(self.service_error(error, what)),
                Err(_) => HostError::Timeout { server: self.server.clone(), what: what.to_string(), after },
            },
            _ = cancel.cancelled() => HostError::Cancelled { server: self.server.clone(), what: what.to_string() },
        };
        // The abandoned request's `notifications/cancelled` is queued by rmcp when the future
        // drops; give the service loop a moment to put it on the wire before the caller
        // possibly exits.
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
        let _ = self.service.cancel().await;
    }
}

/// Tool definitions as JSON, the form pins are computed over.
fn definitions(tools: &[Tool]) -> Vec<serde_json::Value> {
    tools
        .iter()
        .map(|t| serde_json::to_value(t).expect("a tool serializes"))
        .collect()
}

fn with_stderr(detail: String, state: &TransportState) -> String {
    let tail = state.stderr_tail();
    match tail.iter().rev().find(|l| !l.trim().is_empty()) {
        Some(last) => format!("{detail} (last stderr line: {last:?})"),
        None => detail,
    }
}
