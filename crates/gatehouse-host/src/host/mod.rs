//! The host API every front end calls: one long-lived host (one gatekeeper, one audit log, one
//! broker, live connections by name, the demo servers) behind one method per action. The
//! front ends add only their surface: the desktop app its window and card UI
//! (the `gatehouse-desk` crate), the gateway its downstream MCP server. Each passes in its paths, the
//! [`ConsentUi`] that asks its person, and a [`Notifier`] for [`Change`]s.
//!
//! Decisions never arrive here as events: a consent UI answers through its own typed calls.

mod auth;
pub mod context;
pub mod downstream;

pub use auth::SignInRow;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_attest::bundle::Posture;
use gatehouse_attest::gate::ToolStatus;
use gatehouse_audit::OpenReport;
use rmcp::model::Tool;
use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio::sync::{Mutex, broadcast, watch};

use crate::ErrorCode;
use crate::admission::{BundleProblem, BundleSummary, TrustSettings};
use crate::broker::{BrokerOptions, ElicitationBroker, ElicitationRecord};
use crate::caller::Caller;
use crate::config::{ServerEntry, ServerKind, ServersFile, import, validate_server_name};
use crate::consent::{ConsentUi, IdentityBanner, SystemBrowser, UrlOpener};
use crate::era::{Era, EraPreference};
use crate::gatekeeper::Gatekeeper;
use crate::secrets::{SecretStore, SecretValue};
use crate::security::{self, AUDIT_FILE, Finding, SecurityPaths};
use crate::tap::{Clock, TrafficEntry, TrafficTap};
use crate::{
    CallOptions, ConnectOptions, Connection, ElicitationMode, HostError, HostEvent, ServerSpec,
    demo,
};

pub use gatehouse_policy::FieldError;

/// What changed, for the window to refetch. Never a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A prompt card changed; `attention` when a new one needs the user.
    Prompts {
        prompt_id: u64,
        attention: bool,
    },
    Servers {
        name: String,
    },
    Audit,
    Traffic {
        server: String,
    },
    /// An AI client connected or left through a gateway.
    Clients,
}

/// How the host tells its front end that something changed.
pub type Notifier = Arc<dyn Fn(Change) + Send + Sync>;

/// Told what opening the trust roots and the audit log found (see [`HostOptions::findings`]).
pub type FindingsSink = Arc<dyn Fn(&Finding<'_>) + Send + Sync>;

/// An error for the window: a stable code and a sentence saying what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApiError {
    /// The stable code, serialized as its snake_case name.
    pub code: ErrorCode,
    pub message: String,
    /// The server or the gate said no (see [`HostError::is_refusal`]), rather than the
    /// config, the machine or the network failing: the CLI exits 1 for these, 2 otherwise.
    #[serde(skip)]
    pub refusal: bool,
    /// The JSON-RPC error code the server answered with, when the server (not Gatehouse)
    /// refused: the gateway passes it on unchanged.
    #[serde(skip)]
    pub server_code: Option<i32>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            refusal: false,
            server_code: None,
        }
    }
}

impl From<HostError> for ApiError {
    fn from(error: HostError) -> Self {
        let server_code = match &error {
            HostError::ServerError { code, .. } => Some(*code),
            _ => None,
        };
        ApiError {
            refusal: error.is_refusal(),
            server_code,
            ..ApiError::new(error.code(), error.to_string())
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

/// Where the host keeps things: from the shell's path resolver, the CLI's defaults, or a
/// test's temp dir.
#[derive(Debug, Clone)]
pub struct HostPaths {
    /// `servers.json`.
    pub config: PathBuf,
    /// The audit log, approvals, suspensions.
    pub data: PathBuf,
    /// Servers' stderr logs.
    pub logs: PathBuf,
    /// User-level trust roots (ignored under a locked admin bundle).
    pub user_trust_roots: Option<PathBuf>,
    /// System trust roots, normally `/etc/gatehouse/trust-roots`.
    pub system_trust_roots: PathBuf,
}

impl HostPaths {
    pub fn audit(&self) -> PathBuf {
        self.data.join(AUDIT_FILE)
    }
}

#[derive(Clone)]
pub struct HostOptions {
    pub paths: HostPaths,
    /// The embedded demo: the DEMO-ONLY trust root and the demo server in both eras.
    pub demo: bool,
    /// The demo server's executable, instead of [`demo::locate_demo_server`]'s.
    pub demo_server: Option<PathBuf>,
    pub posture_override: Option<Posture>,
    /// The elicitation policy file; `None` is the shipped default.
    pub policy: Option<PathBuf>,
    pub prompt_timeout: Duration,
    pub request_timeout: Duration,
    pub clock: Clock,
    /// Where consented URLs go: the system browser in the app.
    pub opener: Arc<dyn UrlOpener>,
    /// The audit log, instead of the one in the data directory (the CLI's `--audit`).
    pub audit_file: Option<PathBuf>,
    /// An admin directory to load instead of `paths.system_trust_roots` (the CLI's
    /// `--trust-roots`): a widening a locked bundle in the system's directory refuses.
    pub admin_trust_roots: Option<PathBuf>,
    /// The era to speak to configured servers (the CLI's `--era`; the demo's `demo-2025`
    /// always speaks 2025-11-25).
    pub request_era: EraPreference,
    /// How long a server gets for its handshake.
    pub connect_timeout: Duration,
    /// Also append every JSON-RPC message to this JSONL file (the CLI's `--traffic-log`).
    pub traffic_log: Option<PathBuf>,
    /// Told what opening the trust roots and the audit log found, as each step completes (so
    /// a front end can show it even when a later step fails the opening).
    pub findings: Option<FindingsSink>,
    /// Who asks the user to sign in to a server that requires MCP authorization; without
    /// one, such servers are refused (`auth_required`) unless a stored sign-in works.
    pub sign_in: Option<Arc<dyn crate::auth::SignInUi>>,
    /// How long the user has to finish a sign-in in the browser.
    pub sign_in_timeout: Duration,
}

impl HostOptions {
    fn demo_server(&self) -> Result<PathBuf, ApiError> {
        match &self.demo_server {
            Some(path) => Ok(path.clone()),
            None => {
                demo::locate_demo_server().map_err(|e| ApiError::new(ErrorCode::DemoUnavailable, e))
            }
        }
    }

    /// The audit log in use.
    pub fn audit_path(&self) -> PathBuf {
        self.audit_file
            .clone()
            .unwrap_or_else(|| self.paths.audit())
    }

    pub fn new(paths: HostPaths, clock: Clock) -> HostOptions {
        HostOptions {
            paths,
            demo: false,
            demo_server: None,
            posture_override: None,
            policy: None,
            prompt_timeout: crate::broker::DEFAULT_HUMAN_TIMEOUT,
            request_timeout: Duration::from_secs(60),
            clock,
            opener: Arc::new(SystemBrowser),
            audit_file: None,
            admin_trust_roots: None,
            request_era: EraPreference::Auto,
            connect_timeout: ConnectOptions::default().connect_timeout,
            traffic_log: None,
            findings: None,
            sign_in: None,
            sign_in_timeout: ConnectOptions::default().sign_in_timeout,
        }
    }
}

pub use crate::demo::DEMO_LEGACY_NAME;

/// A server's state as the Servers view shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ServerRow {
    pub name: String,
    pub transport: ServerKind,
    pub target: String,
    pub demo: bool,
    pub status: RowStatus,
    pub reason: Option<RowReason>,
    pub headline: String,
    /// A live connection exists (admitted, or unattested under the warn posture).
    pub connected: bool,
}

/// Where a server stands, as the Servers view and `servers list` show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RowStatus {
    Admitted,
    Refused,
    /// No attestation, or no bundle binds it (connected only in the warn posture).
    Unattested,
    /// The kill switch stopped it; `resume` lifts that.
    Suspended,
    Connecting,
    NotConnected,
    /// The connection failed for another reason (spawn, network, handshake).
    Error,
}

impl From<crate::admission::Status> for RowStatus {
    fn from(status: crate::admission::Status) -> RowStatus {
        match status {
            crate::admission::Status::Admitted => RowStatus::Admitted,
            crate::admission::Status::Refused => RowStatus::Refused,
            crate::admission::Status::Unattested => RowStatus::Unattested,
        }
    }
}

/// A listed server's admission verdict, decided without connecting ([`Host::admissions`]).
#[derive(Debug, Serialize)]
pub struct Admission {
    pub name: String,
    pub transport: ServerKind,
    pub target: String,
    /// The embedded demo (`demo`, `demo-2025` in demo mode) rather than a `servers.json` entry.
    pub demo: bool,
    /// The keychain secrets its `servers.json` entry references (none for the demo's).
    pub secrets: Vec<String>,
    pub verdict: crate::Verdict,
}

/// What [`Host::resume_server`] did.
#[derive(Debug, Clone, Serialize)]
pub struct Resumed {
    pub row: ServerRow,
    /// It was suspended, and no longer is.
    pub resumed: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct RowReason {
    pub code: String,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct BlockedTool {
    pub tool: Tool,
    pub reason: &'static str,
    pub expected: String,
    pub actual: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ToolGroups {
    pub allowed: Vec<Tool>,
    pub hidden: Vec<Tool>,
    pub blocked: Vec<BlockedTool>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ServerDetail {
    pub row: ServerRow,
    pub banner: Option<IdentityBanner>,
    pub era: Option<Era>,
    pub tools: ToolGroups,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallOutcome {
    pub is_error: bool,
    pub text: String,
    pub result: Value,
    pub elicitations: Vec<ElicitationRecord>,
}

/// A server to add from the window.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewServer {
    pub name: String,
    pub kind: crate::config::ServerKind,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub url: Option<String>,
    /// Goes to the keychain; the file only names it.
    #[serde(default)]
    pub bearer_token: Option<String>,
}

/// A server to add with everything `servers add` can say ([`Host::add_server_entry`]).
#[derive(Debug, Clone)]
pub struct AddServer {
    pub name: String,
    pub spec: ServerSpec,
    /// More environment variables for a stdio server (values may hold `${secret:NAME}`).
    pub env: Vec<(String, String)>,
    /// HTTP headers (values may hold `${secret:NAME}`).
    pub headers: Vec<(String, String)>,
    /// The working directory of a stdio server.
    pub cwd: Option<String>,
    /// A keychain secret, stored already, sent as the bearer token.
    pub bearer_token_secret: Option<String>,
    /// A bearer token to store in the keychain (as `NAME-bearer`) and send.
    pub bearer_token: Option<String>,
    /// Replace a listed server of the same name (never the demo's, in demo mode).
    pub replace: bool,
}

impl AddServer {
    pub fn new(name: impl Into<String>, spec: ServerSpec) -> AddServer {
        AddServer {
            name: name.into(),
            spec,
            env: Vec::new(),
            headers: Vec::new(),
            cwd: None,
            bearer_token_secret: None,
            bearer_token: None,
            replace: false,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ImportOutcome {
    pub imported: Vec<String>,
    pub skipped: Vec<String>,
    pub secrets_moved: Vec<String>,
    pub warnings: Vec<String>,
    /// Held back until the user confirms each by name (`confirmed`), with the exact settings.
    pub quarantined: Vec<crate::config::Quarantined>,
    pub refused: Vec<crate::config::RefusedImport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AuditVerdict {
    pub ok: bool,
    pub records: u64,
    pub problem: Option<ApiError>,
}

/// Something opening the audit log had to repair or record, for the user to act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditWarning {
    /// The event of the record the log wrote about it: `audit_torn_tail` or
    /// `audit_head_mismatch`, so the Audit view can filter for it.
    pub code: String,
    pub message: String,
}

impl AuditWarning {
    /// One warning per finding in the report; none for a log that opened clean.
    pub fn from_report(report: &OpenReport) -> Vec<AuditWarning> {
        let mut warnings = Vec::new();
        if let Some(torn) = &report.recovery.torn_tail {
            warnings.push(AuditWarning {
                code: gatehouse_audit::EVENT_TORN_TAIL.to_string(),
                message: format!(
                    "The audit log's last record was torn (a crash mid-write). Its {} bytes were moved to {} and the repair was recorded as record {}. Check the whole log with Verify chain in the Audit view, or run `gatehouse audit verify`.",
                    torn.bytes,
                    torn.side_file.display(),
                    torn.seq
                ),
            });
        }
        if let Some(short) = &report.recovery.short_tail {
            let message = if short.flush_failed == 0 {
                format!(
                    "The computer stopped (a power cut or a crash of the system) while Gatehouse was recording in the batched durability mode: audit records of the last {} ms (at most {} records) after record {} may be missing. This is not tampering; it was recorded as record {}.",
                    short.flush_ms,
                    short.flush_records,
                    short.head_seq.map_or("?".to_string(), |s| s.to_string()),
                    short.seq
                )
            } else {
                // A failed flush (a disk error), not only a restart: say which.
                format!(
                    "Audit records may be missing: {}. This is not tampering; it was recorded as record {}.",
                    short.describe(),
                    short.seq
                )
            };
            warnings.push(AuditWarning {
                code: gatehouse_audit::EVENT_SHORT_TAIL.to_string(),
                message,
            });
        }
        if let Some(mismatch) = &report.recovery.head_mismatch {
            warnings.push(AuditWarning {
                code: gatehouse_audit::EVENT_HEAD_MISMATCH.to_string(),
                message: format!(
                    "The audit log's head does not match its end ({}): {}. This was recorded as record {}. Run `gatehouse audit verify` (or Verify chain in the Audit view) and compare the log with any copy of it kept elsewhere.",
                    mismatch.problem.code(),
                    mismatch.detail,
                    mismatch.seq
                ),
            });
        }
        warnings
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    pub posture: Posture,
    pub posture_reason: String,
    pub locked_by: Option<String>,
    pub bundles: Vec<BundleSummary>,
    pub problems: Vec<BundleProblem>,
    pub policy: Value,
    pub paths: Value,
    pub demo: bool,
    /// What opening the audit log repaired or recorded when the app started; empty when it
    /// opened clean.
    pub audit_warnings: Vec<AuditWarning>,
    /// The audit log's durability mode and who chose it.
    pub audit: crate::durability::AuditSetting,
}

enum Slot {
    Connecting,
    Connected(Arc<Connection>),
    Failed(ServerRow),
}

/// The long-lived host: what every front end calls.
pub struct Host {
    options: HostOptions,
    trust: TrustSettings,
    tap: Arc<TrafficTap>,
    secrets: Arc<dyn SecretStore>,
    events: broadcast::Sender<HostEvent>,
    gatekeeper: Arc<Gatekeeper>,
    audit_warnings: Vec<AuditWarning>,
    broker: Arc<ElicitationBroker>,
    slots: Mutex<BTreeMap<String, Slot>>,
    notify: Notifier,
    /// True once the first [`Host::connect_all`] ended: every listed server's first
    /// connection went one way or the other.
    started: watch::Sender<bool>,
    /// Counts changes of any server's state, for front ends that share the host (each
    /// gateway client) and cannot all be its one [`Notifier`].
    servers_changed: watch::Sender<u64>,
    /// The gateway sessions open now.
    sessions: Arc<downstream::Sessions>,
    /// The last subscriber session handed out ([`Host::subscriber_session`]).
    subscriber_sessions: std::sync::atomic::AtomicU64,
    /// Servers given on a command line (`--stdio`, `--url`) rather than listed: they stand
    /// before listed ones of the same name and are never saved.
    adhoc: std::sync::Mutex<BTreeMap<String, ServerSpec>>,
}

const TAP_CAPACITY: usize = 10_000;

/// How much longer than the connect timeout a downstream client's request waits for a server
/// that is connecting (a sign-in's consent can take the person a moment).
const LIVE_WAIT_MARGIN: Duration = Duration::from_secs(5);

impl Host {
    /// Opens the audit log and loads the trust roots and the policy. Fails, with what to fix,
    /// when any of them cannot be used: nothing is decided that cannot be recorded.
    /// Elicitations are put to the person through `consent`.
    pub fn open(
        options: HostOptions,
        secrets: Arc<dyn SecretStore>,
        consent: Arc<dyn ConsentUi>,
        notify: Notifier,
    ) -> Result<Arc<Host>, ApiError> {
        let paths = &options.paths;
        // Refused at start when a lock is in force, and before each admission after (a lock
        // installed while the app runs).
        let guard = crate::admission::LockGuard {
            system_dir: paths.system_trust_roots.clone(),
            asked: crate::admission::Widening {
                trust_roots: options.admin_trust_roots.clone(),
                demo: options.demo,
                policy: options.policy.clone(),
            },
        };
        guard.check((options.clock)())?;
        let policy = crate::config::load_policy(options.policy.as_deref())
            .map_err(|e| ApiError::new(ErrorCode::PolicyInvalid, e))?;
        let mut trust = TrustSettings {
            system_dir: options
                .admin_trust_roots
                .clone()
                .unwrap_or_else(|| paths.system_trust_roots.clone()),
            user_dir: paths.user_trust_roots.clone(),
            posture_override: options.posture_override,
            demo_bundle: None,
        };
        let now = (options.clock)();
        if options.demo {
            let server = options.demo_server()?;
            trust.demo_bundle = Some(
                demo::demo_bundle(&server, now)
                    .map_err(|e| ApiError::new(ErrorCode::DemoUnavailable, e))?,
            );
        }
        // The window learns what opening found from the result: if a step fails the desk does
        // not open, and that error is what the window shows.
        let opened = security::open(
            &trust,
            &SecurityPaths {
                audit: options.audit_path(),
                ..SecurityPaths::in_data_dir(&paths.data)
            },
            &policy.audit,
            guard,
            now,
            options.clock.clone(),
            |finding| {
                if let Some(tell) = &options.findings {
                    tell(&finding);
                }
            },
        )?;
        let gatekeeper = opened.gatekeeper;
        let audit_warnings = AuditWarning::from_report(&opened.audit_report);
        let broker = ElicitationBroker::new(
            Arc::new(policy),
            consent,
            options.opener.clone(),
            gatekeeper.clone(),
            BrokerOptions {
                human_timeout: options.prompt_timeout,
                ..Default::default()
            },
        );
        let (events, _) = broadcast::channel(256);
        let servers_changed = watch::channel(0u64).0;
        let seen = servers_changed.clone();
        let front_end = notify;
        let notify: Notifier = Arc::new(move |change: Change| {
            if matches!(change, Change::Servers { .. }) {
                seen.send_modify(|n| *n = n.wrapping_add(1));
            }
            front_end(change);
        });
        let mut tap = TrafficTap::new(TAP_CAPACITY, options.clock.clone());
        if let Some(path) = &options.traffic_log {
            tap = tap.with_jsonl_file(path).map_err(|e| {
                ApiError::new(
                    ErrorCode::TrafficLogUnavailable,
                    format!("the traffic log {}: {e}", path.display()),
                )
            })?;
        }
        Ok(Arc::new(Host {
            tap: Arc::new(tap),
            options,
            trust,
            secrets,
            events,
            gatekeeper,
            audit_warnings,
            broker,
            slots: Mutex::new(BTreeMap::new()),
            notify,
            started: watch::channel(false).0,
            servers_changed,
            sessions: Arc::default(),
            subscriber_sessions: std::sync::atomic::AtomicU64::new(0),
            adhoc: std::sync::Mutex::default(),
        }))
    }

    fn config(&self) -> Result<ServersFile, ApiError> {
        Ok(ServersFile::load(&self.options.paths.config)?)
    }

    /// Every server the window lists: the demo ones first in demo mode, then `servers.json`.
    fn specs(&self) -> Result<Vec<(String, ServerSpec, bool)>, ApiError> {
        self.specs_in(&self.config()?)
    }

    /// [`Host::specs`] with `config` as the `servers.json` read.
    fn specs_in(&self, config: &ServersFile) -> Result<Vec<(String, ServerSpec, bool)>, ApiError> {
        let mut specs = Vec::new();
        if self.options.demo {
            let spec = demo::demo_server_spec_at(&self.options.demo_server()?);
            for name in [demo::DEMO_SERVER_NAME, DEMO_LEGACY_NAME] {
                if !config.servers.contains_key(name) {
                    specs.push((name.to_string(), spec.clone(), true));
                }
            }
        }
        for (name, entry) in &config.servers {
            specs.push((name.clone(), entry.to_spec(name)?, false));
        }
        Ok(specs)
    }

    /// The server `name` is the same program as, in another era: in demo mode, `demo-2025`
    /// is the embedded demo (`demo`) spoken to in 2025-11-25, with the same resources. A
    /// gateway offers such a pair's shared URIs once, from the one returned. `None` for every
    /// configured server (a `servers.json` entry named like the demo replaces it).
    pub fn demo_twin(&self, name: &str) -> Option<&'static str> {
        if name != DEMO_LEGACY_NAME
            || !self.options.demo
            || self
                .adhoc
                .lock()
                .expect("adhoc poisoned")
                .contains_key(name)
        {
            return None;
        }
        let specs = self.specs().ok()?;
        let is_demo = |wanted: &str| specs.iter().any(|(n, _, demo)| n == wanted && *demo);
        (is_demo(DEMO_LEGACY_NAME) && is_demo(demo::DEMO_SERVER_NAME))
            .then_some(demo::DEMO_SERVER_NAME)
    }

    fn spec(&self, name: &str) -> Result<(ServerSpec, bool), ApiError> {
        if let Some(spec) = self.adhoc.lock().expect("adhoc poisoned").get(name) {
            return Ok((spec.clone(), false));
        }
        self.specs()?
            .into_iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, spec, demo)| (spec, demo))
            .ok_or_else(|| {
                ApiError::new(
                    ErrorCode::UnknownServer,
                    format!("no server named {name:?}; add it in Servers first"),
                )
            })
    }

    fn row_for(&self, name: &str, spec: &ServerSpec, demo: bool, slot: Option<&Slot>) -> ServerRow {
        let connected = matches!(slot, Some(Slot::Connected(_)));
        let base = |status, reason: Option<RowReason>, headline: String| ServerRow {
            name: name.to_string(),
            transport: spec.kind(),
            target: spec.describe(),
            demo,
            status,
            reason,
            headline,
            connected,
        };
        match slot {
            None => base(RowStatus::NotConnected, None, "not connected yet".into()),
            Some(Slot::Connecting) => base(RowStatus::Connecting, None, "connecting…".into()),
            Some(Slot::Failed(row)) => row.clone(),
            Some(Slot::Connected(connection)) => {
                let verdict = connection.verdict();
                let status = if connection.session().is_some_and(|s| s.killed().is_some()) {
                    RowStatus::Suspended
                } else {
                    verdict.status.into()
                };
                base(
                    status,
                    verdict.reason.map(|code| RowReason {
                        code: code.to_string(),
                        detail: verdict.detail.clone(),
                    }),
                    verdict.headline(),
                )
            }
        }
    }

    /// Every server and what is known of its admission.
    pub async fn servers(&self) -> Result<Vec<ServerRow>, ApiError> {
        let specs = self.specs()?;
        let slots = self.slots.lock().await;
        Ok(specs
            .iter()
            .map(|(name, spec, demo)| self.row_for(name, spec, *demo, slots.get(name)))
            .collect())
    }

    /// Every listed server (the demo's first in demo mode, as [`Host::servers`]) with its
    /// admission decided now, one after another, without connecting: an attestation fetched,
    /// a binary hashed, each verdict audited, nothing said to the servers themselves.
    /// Connections and their slots are left as they are.
    pub async fn admissions(&self) -> Result<Vec<Admission>, ApiError> {
        let config = self.config()?;
        let mut admissions = Vec::new();
        for (name, spec, demo) in self.specs_in(&config)? {
            let secrets = match config.servers.get(&name) {
                Some(entry) if !demo => entry.secret_references(),
                _ => Vec::new(),
            };
            let verdict = self.gatekeeper.admit(&name, &spec).await?;
            admissions.push(Admission {
                transport: spec.kind(),
                target: spec.describe(),
                name,
                demo,
                secrets,
                verdict,
            });
        }
        (self.notify)(Change::Audit);
        Ok(admissions)
    }

    /// The live connection to `name`, connecting (admission first) when there is none.
    async fn connection(&self, name: &str) -> Result<Arc<Connection>, ApiError> {
        let (spec, demo) = self.spec(name)?;
        {
            let mut slots = self.slots.lock().await;
            match slots.get(name) {
                Some(Slot::Connected(c)) if c.session().is_none_or(|s| s.killed().is_none()) => {
                    return Ok(c.clone());
                }
                Some(Slot::Connecting) => {
                    return Err(ApiError::new(
                        ErrorCode::Connecting,
                        format!("{name:?} is still connecting; try again in a moment"),
                    ));
                }
                _ => {}
            }
            slots.insert(name.to_string(), Slot::Connecting);
        }
        (self.notify)(Change::Servers { name: name.into() });
        let options = self.connect_options(name, demo);
        let result = Connection::connect(
            name,
            &spec,
            self.secrets.clone(),
            self.tap.clone(),
            self.events.clone(),
            &options,
            self.gatekeeper.clone(),
        )
        .await;
        let outcome = {
            let mut slots = self.slots.lock().await;
            match result {
                Ok(connection) => {
                    let connection = Arc::new(connection);
                    slots.insert(name.to_string(), Slot::Connected(connection.clone()));
                    Ok(connection)
                }
                Err(error) => {
                    let row = failed_row(name, &spec, demo, &error);
                    slots.insert(name.to_string(), Slot::Failed(row));
                    Err(ApiError::from(error))
                }
            }
        };
        (self.notify)(Change::Servers { name: name.into() });
        (self.notify)(Change::Audit);
        (self.notify)(Change::Traffic {
            server: name.into(),
        });
        outcome
    }

    /// The connection a request with `options` uses. The person's own requests (no caller)
    /// connect a server that is not connected, admitting it first; a downstream client's
    /// request (a caller) uses live connections only ([`Host::live`]), so no AI client can
    /// make the host re-run admission, fetch attestations, respawn a crashed server or put
    /// up a sign-in by asking for something.
    pub(crate) async fn connection_for(
        &self,
        name: &str,
        options: &CallOptions,
    ) -> Result<Arc<Connection>, ApiError> {
        match options.caller {
            Some(_) => self.live(name).await,
            None => self.connection(name).await,
        }
    }

    /// The live connection to `name`, never connecting: waits (at most the connect timeout
    /// and a margin) while the host is starting or the server is connecting, then answers
    /// with the connection or `server_not_connected`.
    pub async fn live(&self, name: &str) -> Result<Arc<Connection>, ApiError> {
        self.spec(name)?;
        let wait = self.options.connect_timeout + LIVE_WAIT_MARGIN;
        let deadline = tokio::time::Instant::now() + wait;
        let mut changes = self.servers_changed.subscribe();
        let mut started = self.started.subscribe();
        loop {
            changes.borrow_and_update();
            let has_started = *started.borrow_and_update();
            let down = {
                let slots = self.slots.lock().await;
                match slots.get(name) {
                    Some(Slot::Connected(c))
                        if c.session().is_none_or(|s| s.killed().is_none()) =>
                    {
                        return Ok(c.clone());
                    }
                    Some(Slot::Connecting) => None,
                    // Not tried yet: the host's first connect may be on its way.
                    None if !has_started => None,
                    Some(Slot::Failed(row)) => Some(row.headline.clone()),
                    Some(Slot::Connected(_)) => {
                        Some("its connection was closed (the server was suspended)".to_string())
                    }
                    None => Some("it was never connected".to_string()),
                }
            };
            if let Some(why) = down {
                return Err(ApiError::new(
                    ErrorCode::ServerNotConnected,
                    format!(
                        "{name:?} is not connected ({why}); an AI client's request never connects or re-admits a server: connect it in Gatehouse (the app's Connect, or `gatehouse connect {name}`)"
                    ),
                ));
            }
            tokio::select! {
                _ = changes.changed() => {}
                _ = started.changed() => {}
                () = tokio::time::sleep_until(deadline) => {
                    return Err(ApiError::new(
                        ErrorCode::Connecting,
                        format!(
                            "{name:?} is still connecting after {}s; try again in a moment",
                            wait.as_secs()
                        ),
                    ));
                }
            }
        }
    }

    /// The detail of a server whose connection failed (admission or transport), if it did.
    async fn failed_detail(
        &self,
        name: &str,
        spec: &ServerSpec,
        demo: bool,
    ) -> Option<ServerDetail> {
        let slots = self.slots.lock().await;
        let slot @ Slot::Failed(_) = slots.get(name)? else {
            return None;
        };
        Some(ServerDetail {
            row: self.row_for(name, spec, demo, Some(slot)),
            banner: None,
            era: None,
            tools: ToolGroups::default(),
        })
    }

    /// Connects anew (the Connect / Reconnect button): a refused server is admitted afresh,
    /// a live connection is closed and replaced; then describes it.
    pub async fn connect(&self, name: &str) -> Result<ServerDetail, ApiError> {
        self.spec(name)?;
        let stale = {
            let mut slots = self.slots.lock().await;
            if let Some(Slot::Connecting) = slots.get(name) {
                return Err(ApiError::new(
                    ErrorCode::Connecting,
                    format!("{name:?} is still connecting; try again in a moment"),
                ));
            }
            slots.remove(name)
        };
        close_slot(stale).await;
        self.server_detail(name).await
    }

    /// Describes the server: identity and tools by gate status. Connects on first sight only;
    /// a server that failed admission is described as it failed, never re-admitted here (that
    /// is [`Host::connect`]), so looking at it cannot loop through admissions.
    pub async fn server_detail(&self, name: &str) -> Result<ServerDetail, ApiError> {
        let (spec, demo) = self.spec(name)?;
        if let Some(failed) = self.failed_detail(name, &spec, demo).await {
            return Ok(failed);
        }
        let connection = match self.connection(name).await {
            Ok(connection) => connection,
            Err(error) => return self.failed_detail(name, &spec, demo).await.ok_or(error),
        };
        let gated = connection.gated_tools().await?;
        let mut tools = ToolGroups::default();
        for gated in gated {
            match gated.status {
                ToolStatus::Allowed => tools.allowed.push(gated.tool),
                ToolStatus::Hidden => tools.hidden.push(gated.tool),
                ToolStatus::Blocked {
                    reason,
                    expected,
                    actual,
                } => tools.blocked.push(BlockedTool {
                    tool: gated.tool,
                    reason: reason.as_str(),
                    expected,
                    actual,
                }),
            }
        }
        let slots = self.slots.lock().await;
        Ok(ServerDetail {
            row: self.row_for(name, &spec, demo, slots.get(name)),
            banner: Some(IdentityBanner::from_verdict(connection.verdict())),
            era: Some(connection.era()),
            tools,
        })
    }

    /// Connects every listed server that is not connected (the window does this at start).
    /// All at once: a slow or refused server delays nothing else.
    pub async fn connect_all(&self) {
        let names: Vec<String> = match self.specs() {
            Ok(specs) => specs.into_iter().map(|(n, _, _)| n).collect(),
            Err(_) => return,
        };
        futures::future::join_all(names.iter().map(|name| self.connection(name))).await;
        self.started.send_replace(true);
    }

    /// Connects the listed servers never tried yet (or only `only`, for a gateway that offers
    /// one server's tools; an unknown name connects nothing), on a task of its own: a gateway
    /// starts serving at once, and its first listing waits for [`Host::started`]. A server
    /// that failed or was refused stays so: a client connecting (each bridged or HTTP
    /// session) never re-runs admission; the person's connect does. Must run inside a Tokio
    /// runtime.
    pub fn connect_in_background(self: &Arc<Self>, only: Option<String>) {
        let host = self.clone();
        tokio::spawn(async move {
            let names: Vec<String> = match (&only, host.specs()) {
                (Some(name), _) => vec![name.clone()],
                (None, Ok(specs)) => specs.into_iter().map(|(n, _, _)| n).collect(),
                (None, Err(_)) => Vec::new(),
            };
            let untried: Vec<String> = {
                let slots = host.slots.lock().await;
                names
                    .into_iter()
                    .filter(|name| !slots.contains_key(name))
                    .collect()
            };
            futures::future::join_all(
                untried
                    .iter()
                    .filter(|name| host.has_server(name))
                    .map(|name| host.connection(name)),
            )
            .await;
            host.started.send_replace(true);
        });
    }

    /// Makes `spec` available as `name` for this host's life, without listing it anywhere:
    /// a server given on a command line. It stands before a listed server of that name.
    pub fn add_adhoc(&self, name: &str, spec: ServerSpec) {
        self.adhoc
            .lock()
            .expect("adhoc poisoned")
            .insert(name.to_string(), spec);
    }

    /// The live connection to `name`, admitting and connecting it when there is none: for
    /// a front end that reads the connection itself (the CLI's one-shot commands).
    pub async fn live_connection(&self, name: &str) -> Result<Arc<Connection>, ApiError> {
        self.connection(name).await
    }

    /// Whether `name` is a server the host knows (servers.json, or the demo's in demo mode).
    pub fn has_server(&self, name: &str) -> bool {
        self.spec(name).is_ok()
    }

    /// An AI client's gateway session opened: it is listed as connected until the guard
    /// drops.
    pub fn client_session(&self, caller: Caller) -> downstream::SessionGuard {
        let notify = self.notify.clone();
        (self.notify)(Change::Clients);
        self.sessions
            .open(caller, Box::new(move || notify(Change::Clients)))
    }

    /// The AI clients connected now or seen in the audit log, with their recent calls.
    pub fn clients(&self) -> Result<Vec<downstream::ClientRow>, ApiError> {
        let records = self.audit(None, Some(crate::gatekeeper::events::TOOL_CALL.into()))?;
        Ok(downstream::rows(&self.sessions, &records))
    }

    /// Flips to true when the first [`Host::connect_all`] has ended.
    pub fn started(&self) -> watch::Receiver<bool> {
        self.started.subscribe()
    }

    /// Changes whenever a server's state changed (connecting, admitted, refused, suspended,
    /// resumed, added): what a front end offers may have changed with it.
    pub fn server_changes(&self) -> watch::Receiver<u64> {
        self.servers_changed.subscribe()
    }

    /// Every tool of every live connection with the gate's status for it, by server in list
    /// order: allowed (admitted servers' allow-listed tools and, in the warn posture, the
    /// approved tools of unattested ones), hidden or pin-blocked. Servers that failed, are
    /// suspended or are still connecting have none; one whose listing failed has none until
    /// it lists again. What a gateway offers (the allowed ones) and resolves calls against.
    pub async fn live_tools(&self) -> Vec<(String, crate::connection::GatedTool)> {
        let live: Vec<(String, Arc<Connection>)> = {
            let slots = self.slots.lock().await;
            let Ok(specs) = self.specs() else {
                return Vec::new();
            };
            specs
                .into_iter()
                .filter_map(|(name, _, _)| match slots.get(&name) {
                    Some(Slot::Connected(c))
                        if c.session().is_none_or(|s| s.killed().is_none()) =>
                    {
                        Some((name, c.clone()))
                    }
                    _ => None,
                })
                .collect()
        };
        let listed = futures::future::join_all(live.iter().map(|(_, c)| c.gated_tools())).await;
        live.into_iter()
            .zip(listed)
            .flat_map(|((name, _), gated)| {
                gated
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |tool| (name.clone(), tool))
            })
            .collect()
    }

    /// Calls a tool for a front end that wants the outcome as the host produced it (the
    /// gateway): gated and audited as every call, with `options.caller` in the record.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        options: &CallOptions,
    ) -> Result<crate::ToolOutcome, ApiError> {
        let connection = self.connection_for(server, options).await?;
        let outcome = connection.call_tool(tool, arguments, options).await;
        (self.notify)(Change::Audit);
        (self.notify)(Change::Traffic {
            server: server.into(),
        });
        Ok(outcome?)
    }

    /// What servers do that a front end passes on (progress, list changes, logs).
    pub fn subscribe(&self) -> broadcast::Receiver<HostEvent> {
        self.events.subscribe()
    }

    /// Calls a tool; elicitations it causes become prompt cards meanwhile.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallOutcome, ApiError> {
        let connection = self.connection(server).await?;
        let (outcome, _records) = connection
            .call_tool_traced(tool, Some(arguments), &CallOptions::default())
            .await;
        (self.notify)(Change::Audit);
        (self.notify)(Change::Traffic {
            server: server.into(),
        });
        (self.notify)(Change::Servers {
            name: server.into(),
        });
        let outcome = outcome?;
        let text = crate::connection::result_text(&outcome.result);
        Ok(CallOutcome {
            is_error: outcome.is_error(),
            text,
            result: serde_json::to_value(&outcome.result).unwrap_or(Value::Null),
            elicitations: outcome.elicitations,
        })
    }

    /// Adds a server to `servers.json`; a bearer token goes to the keychain first.
    pub async fn add_server(&self, new: NewServer) -> Result<ServerRow, ApiError> {
        validate_server_name(&new.name)?;
        self.check_name_free(&self.config()?, &new.name, false)?;
        let spec = match (new.kind, &new.command, &new.url) {
            (ServerKind::Stdio, Some(command), None) if !command.trim().is_empty() => {
                ServerSpec::Stdio(crate::config::StdioSpec {
                    command: command.trim().to_string(),
                    args: new.args.clone(),
                    env: Vec::new(),
                    cwd: None,
                })
            }
            (ServerKind::Http, None, Some(url)) => ServerSpec::adhoc_http(url.trim())?,
            _ => {
                return Err(ApiError::new(
                    ErrorCode::ServerInvalid,
                    "a stdio server needs a command (and optional arguments); an HTTP server needs a URL",
                ));
            }
        };
        if new.bearer_token.is_some() && new.kind != ServerKind::Http {
            return Err(ApiError::new(
                ErrorCode::ServerInvalid,
                "a bearer token only goes with an HTTP server",
            ));
        }
        self.add_server_entry(AddServer {
            bearer_token: new.bearer_token,
            ..AddServer::new(new.name, spec)
        })
        .await
    }

    /// Adds a server to `servers.json` with everything `servers add` can say (environment,
    /// headers, working directory, a stored bearer secret, replacing one of the same name):
    /// the one path every front end's add takes. A bearer token goes to the keychain first.
    pub async fn add_server_entry(&self, add: AddServer) -> Result<ServerRow, ApiError> {
        validate_server_name(&add.name)?;
        let mut config = self.config()?;
        self.check_name_free(&config, &add.name, add.replace)?;
        let mut entry = ServerEntry::from(&add.spec);
        entry.env.extend(add.env);
        entry.headers.extend(add.headers);
        if add.cwd.is_some() {
            entry.cwd = add.cwd;
        }
        if add.bearer_token_secret.is_some() {
            entry.bearer_token_secret = add.bearer_token_secret;
        }
        let token = add.bearer_token.as_deref().filter(|t| !t.is_empty());
        if token.is_some() {
            entry.bearer_token_secret = Some(format!("{}-bearer", add.name));
        }
        // Validated the way it will be read back, before anything is written: a refused entry
        // must not have replaced the keychain secret a listed server of this name uses.
        let spec = entry.to_spec(&add.name)?;
        if let (Some(token), Some(secret)) = (token, entry.bearer_token_secret.clone()) {
            let (store, value) = (self.secrets.clone(), SecretValue::new(token));
            off_runtime(move || store.set(&secret, &value)).await??;
        }
        config.servers.insert(add.name.clone(), entry);
        config.save(&self.options.paths.config)?;
        (self.notify)(Change::Servers {
            name: add.name.clone(),
        });
        Ok(self.row_for(&add.name, &spec, false, None))
    }

    /// Refuses `name` when a listed server has it (unless `replace`), or, in demo mode, when
    /// it is one of the demo's: an added "demo" would stand where the built-in one was.
    fn check_name_free(
        &self,
        config: &ServersFile,
        name: &str,
        replace: bool,
    ) -> Result<(), ApiError> {
        if self.options.demo && [demo::DEMO_SERVER_NAME, DEMO_LEGACY_NAME].contains(&name) {
            return Err(ApiError::new(
                ErrorCode::ServerExists,
                format!(
                    "{name:?} is the built-in demo server's name in demo mode; choose another name"
                ),
            ));
        }
        if config.servers.contains_key(name) && !replace {
            return Err(ApiError::new(
                ErrorCode::ServerExists,
                format!("a server named {name:?} exists; choose another name"),
            ));
        }
        Ok(())
    }

    /// Imports an `mcpServers` (or VS Code) file's content; literal credentials move to the
    /// keychain. Entries that set what a server runs are imported only when named in
    /// `confirmed` (the user saw their exact settings in an earlier report).
    pub async fn import_servers(
        &self,
        text: &str,
        confirmed: &[String],
    ) -> Result<ImportOutcome, ApiError> {
        let report = self
            .import_servers_from(
                text,
                std::path::Path::new("the imported file"),
                false,
                confirmed,
            )
            .await?;
        Ok(ImportOutcome {
            imported: report.imported,
            skipped: report.skipped,
            secrets_moved: report.secrets_moved,
            warnings: report.warnings,
            quarantined: report.quarantined,
            refused: report.refused,
        })
    }

    /// [`Host::import_servers`] of the file `source` (named in what import reports), with
    /// listed servers of the same names replaced when `replace`: the one path every front
    /// end's import takes.
    pub async fn import_servers_from(
        &self,
        text: &str,
        source: &std::path::Path,
        replace: bool,
        confirmed: &[String],
    ) -> Result<crate::config::ImportReport, ApiError> {
        // In demo mode the demo's names are taken, as for Add: an imported "demo" would stand
        // in the list where the built-in one was. Checked before anything (a secret) moves, in
        // every shape import accepts.
        if self.options.demo
            && let Ok(root) = serde_json::from_str::<Value>(text)
            && let Some(Value::Object(servers)) = crate::config::import_servers_object(&root)
            && let Some(taken) = [demo::DEMO_SERVER_NAME, DEMO_LEGACY_NAME]
                .into_iter()
                .find(|name| servers.contains_key(*name))
        {
            return Err(ApiError::new(
                ErrorCode::ServerExists,
                format!(
                    "the file names a server {taken:?}, which is the built-in demo server's name in demo mode; rename it in the file and import again (nothing was imported)"
                ),
            ));
        }
        let mut config = self.config()?;
        let (store, text, source, confirmed) = (
            self.secrets.clone(),
            text.to_string(),
            source.to_path_buf(),
            confirmed.to_vec(),
        );
        let (report, config) = off_runtime(move || {
            import(
                &text,
                &source,
                &mut config,
                store.as_ref(),
                replace,
                &confirmed,
            )
            .map(|report| (report, config))
        })
        .await??;
        config.save(&self.options.paths.config)?;
        (self.notify)(Change::Servers {
            name: String::new(),
        });
        Ok(report)
    }

    /// How this host connects to `name`: its era, timeouts, broker, and who asks the user to
    /// sign in.
    fn connect_options(&self, name: &str, demo: bool) -> ConnectOptions {
        ConnectOptions {
            era: if demo {
                demo::demo_era(name, self.options.request_era)
            } else {
                self.options.request_era
            },
            elicitation: ElicitationMode::DeclineAndLog,
            request_timeout: self.options.request_timeout,
            connect_timeout: self.options.connect_timeout,
            log_dir: Some(self.options.paths.logs.clone()),
            broker: Some(self.broker.clone()),
            sign_in: self.options.sign_in.clone(),
            opener: self.options.opener.clone(),
            sign_in_timeout: self.options.sign_in_timeout,
            ..ConnectOptions::default()
        }
    }

    /// Closes the connection to `name`, if any; the next use reconnects.
    pub async fn disconnect(&self, name: &str) {
        let stale = self.slots.lock().await.remove(name);
        if stale.is_some() {
            close_slot(stale).await;
            (self.notify)(Change::Servers { name: name.into() });
        }
    }

    /// Lifts a suspension (after the kill switch); the next use reconnects.
    pub async fn resume(&self, name: &str) -> Result<ServerRow, ApiError> {
        Ok(self.resume_server(name).await?.row)
    }

    /// [`Host::resume`], also saying whether `name` was suspended. Admission (audited)
    /// computes the key the suspension was recorded under; nothing connects.
    pub async fn resume_server(&self, name: &str) -> Result<Resumed, ApiError> {
        let (spec, demo) = self.spec(name)?;
        let verdict = self.gatekeeper.admit(name, &spec).await?;
        let resumed = self.gatekeeper.resume(&verdict)?;
        let stale = self.slots.lock().await.remove(name);
        close_slot(stale).await;
        (self.notify)(Change::Servers { name: name.into() });
        (self.notify)(Change::Audit);
        Ok(Resumed {
            row: self.row_for(name, &spec, demo, None),
            resumed,
        })
    }

    /// Audit records, oldest first, filtered by server id and event type.
    pub fn audit(
        &self,
        server: Option<String>,
        event: Option<String>,
    ) -> Result<Vec<Value>, ApiError> {
        let records = gatehouse_audit::read(self.options.audit_path())
            .map_err(|e| ApiError::new(ErrorCode::AuditUnreadable, e.to_string()))?;
        let filter = gatehouse_audit::Filter { server, event };
        Ok(filter
            .apply(records)
            .iter()
            .map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
            .collect())
    }

    /// Verifies the audit log's hash chain.
    pub fn verify_audit(&self) -> Result<AuditVerdict, ApiError> {
        let report = gatehouse_audit::verify(self.options.audit_path())
            .map_err(|e| ApiError::new(ErrorCode::AuditUnreadable, e.to_string()))?;
        Ok(AuditVerdict {
            ok: report.ok,
            records: report.records,
            problem: report
                .first_broken
                .as_ref()
                .map(|b| ApiError::new(b.kind.into(), format!("line {}: {}", b.line, b.detail))),
        })
    }

    /// The raw JSON-RPC recorded for one server, or all.
    pub fn traffic(&self, server: Option<&str>) -> Vec<TrafficEntry> {
        self.tap.entries(server)
    }

    pub fn settings(&self) -> Settings {
        let trust = self.gatekeeper.trust();
        let paths = &self.options.paths;
        Settings {
            posture: trust.posture(),
            posture_reason: trust.posture_reason().to_string(),
            locked_by: trust.locked_by().map(str::to_string),
            bundles: trust.summaries(),
            problems: trust.problems().to_vec(),
            policy: json!({
                "path": self.options.policy,
                "source": if self.options.policy.is_some() { "file" } else { "shipped default" },
            }),
            paths: json!({
                "config": paths.config,
                "data": paths.data,
                "logs": paths.logs,
                "audit": self.options.audit_path(),
                "userTrustRoots": paths.user_trust_roots,
                "systemTrustRoots": paths.system_trust_roots,
            }),
            demo: self.options.demo,
            audit_warnings: self.audit_warnings.clone(),
            audit: self.gatekeeper.audit_setting(),
        }
    }

    /// The trust settings the host was opened with.
    pub fn trust_settings(&self) -> &TrustSettings {
        &self.trust
    }

    /// Closes every connection (the app is quitting).
    pub async fn shutdown(&self) {
        let slots = std::mem::take(&mut *self.slots.lock().await);
        for (_, slot) in slots {
            close_slot(Some(slot)).await;
        }
        // A front end may exit without dropping the host (the desktop app does): make every
        // record durable now and end the batched mode, so no marker is left to be read, after
        // the next reboot, as records a power cut may have taken.
        if let Err(error) = self.gatekeeper.finish_audit() {
            tracing::warn!(%error, "the audit log could not be flushed at shutdown");
        }
    }
}

/// Closes a connection taken out of the slots in order. One a call still uses goes when that
/// call drops it (a stdio child is killed on drop).
async fn close_slot(slot: Option<Slot>) {
    if let Some(Slot::Connected(connection)) = slot
        && let Ok(connection) = Arc::try_unwrap(connection)
    {
        connection.close().await;
    }
}

fn failed_row(name: &str, spec: &ServerSpec, demo: bool, error: &HostError) -> ServerRow {
    let (status, headline) = match error {
        HostError::NotAdmitted { status, .. } => (
            RowStatus::from(*status),
            format!("not admitted: {}", error.code()),
        ),
        HostError::Suspended { .. } => (
            RowStatus::Suspended,
            "suspended after elicitation abuse".into(),
        ),
        _ => (RowStatus::Error, "could not connect".into()),
    };
    ServerRow {
        name: name.to_string(),
        transport: spec.kind(),
        target: spec.describe(),
        demo,
        status,
        reason: Some(RowReason {
            code: error.code().to_string(),
            detail: error.to_string(),
        }),
        headline,
        connected: false,
    }
}

/// Runs `work` on the blocking pool: keychain calls (Secret Service over D-Bus) block, and
/// must not stall the runtime that serves the window and the gateway's clients.
async fn off_runtime<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| {
        ApiError::new(
            ErrorCode::SecretUnavailable,
            format!("the keychain task failed: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gatekeeper::Auditor;
    use crate::secrets::MemoryStore;

    fn paths(dir: &std::path::Path) -> HostPaths {
        HostPaths {
            config: dir.join("servers.json"),
            data: dir.join("data"),
            logs: dir.join("logs"),
            user_trust_roots: None,
            system_trust_roots: dir.join("no-system-roots"),
        }
    }

    fn clock() -> Clock {
        Arc::new(|| time::macros::datetime!(2026-11-21 12:00 UTC))
    }

    fn no_consent() -> Arc<dyn ConsentUi> {
        Arc::new(crate::consent::ScriptedConsent::new(Vec::new()))
    }

    fn open_desk(dir: &std::path::Path) -> Arc<Host> {
        Host::open(
            HostOptions::new(paths(dir), clock()),
            Arc::new(MemoryStore::default()),
            no_consent(),
            Arc::new(|_| {}),
        )
        .expect("the host opens")
    }

    fn open_with_policy(dir: &std::path::Path, policy: Option<PathBuf>) -> Result<(), ApiError> {
        let mut options = HostOptions::new(paths(dir), clock());
        options.policy = policy;
        Host::open(
            options,
            Arc::new(MemoryStore::default()),
            no_consent(),
            Arc::new(|_| {}),
        )
        .map(|_| ())
    }

    /// An audit log with three records, as an earlier run of the app left it.
    fn audit_log_with_records(dir: &std::path::Path) -> PathBuf {
        let audit = paths(dir).audit();
        let (auditor, _) = Auditor::open(&audit, clock()).unwrap();
        for n in 0..3 {
            auditor
                .record(crate::AuditEvent::ToolCall, Some("demo"), json!({ "n": n }))
                .unwrap();
        }
        audit
    }

    fn warning_codes(desk: &Host) -> Vec<String> {
        desk.settings()
            .audit_warnings
            .into_iter()
            .map(|w| w.code)
            .collect()
    }

    #[test]
    fn settings_report_a_torn_audit_tail_found_at_open_once() {
        let dir = tempfile::tempdir().unwrap();
        let audit = audit_log_with_records(dir.path());
        // A crash mid-write: half a record, no newline.
        let mut bytes = std::fs::read(&audit).unwrap();
        bytes.extend_from_slice(br#"{"seq":4,"time":"2026-"#);
        std::fs::write(&audit, &bytes).unwrap();

        let desk = open_desk(dir.path());
        let settings = desk.settings();
        assert_eq!(settings.audit_warnings.len(), 1, "{settings:?}");
        let warning = &settings.audit_warnings[0];
        assert_eq!(warning.code, gatehouse_audit::EVENT_TORN_TAIL);
        assert!(
            warning.message.contains("audit.jsonl.torn-4"),
            "names the side file: {}",
            warning.message
        );
        assert!(
            warning.message.contains("gatehouse audit verify"),
            "says what to do: {}",
            warning.message
        );
        let json = serde_json::to_value(&settings).unwrap();
        assert_eq!(
            json["auditWarnings"][0]["code"], "audit_torn_tail",
            "{json}"
        );
        assert_eq!(
            json["auditWarnings"][0]["message"],
            warning.message.as_str()
        );
        drop(desk);

        // The repair is done and recorded: the next start has nothing to report.
        assert!(warning_codes(&open_desk(dir.path())).is_empty());
    }

    #[test]
    fn settings_report_an_audit_head_that_does_not_match_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let audit = audit_log_with_records(dir.path());
        std::fs::remove_file(gatehouse_audit::head_path(&audit)).unwrap();

        let desk = open_desk(dir.path());
        let settings = desk.settings();
        assert_eq!(
            warning_codes(&desk),
            [gatehouse_audit::EVENT_HEAD_MISMATCH],
            "{settings:?}"
        );
        let message = &settings.audit_warnings[0].message;
        assert!(message.contains("(missing)"), "{message}");
        assert!(message.contains("gatehouse audit verify"), "{message}");
    }

    #[test]
    fn settings_have_no_audit_warning_for_a_new_or_clean_log() {
        let dir = tempfile::tempdir().unwrap();
        assert!(warning_codes(&open_desk(dir.path())).is_empty(), "new log");
        audit_log_with_records(dir.path());
        let desk = open_desk(dir.path());
        assert!(warning_codes(&desk).is_empty(), "clean log");
        let json = serde_json::to_value(desk.settings()).unwrap();
        assert_eq!(json["auditWarnings"], json!([]));
    }

    #[test]
    fn a_policy_file_that_cannot_be_used_stops_the_desk_with_policy_invalid_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            open_with_policy(dir.path(), None).is_ok(),
            "shipped default"
        );

        let missing = dir.path().join("missing.toml");
        let error = open_with_policy(dir.path(), Some(missing.clone())).unwrap_err();
        assert_eq!(error.code.as_str(), "policy_invalid");
        assert!(
            error.message.contains(&missing.display().to_string()),
            "{}",
            error.message
        );

        let broken = dir.path().join("broken.toml");
        std::fs::write(&broken, "this is = = not toml").unwrap();
        let error = open_with_policy(dir.path(), Some(broken.clone())).unwrap_err();
        assert_eq!(error.code.as_str(), "policy_invalid");
        assert!(error.message.contains("broken.toml"), "{}", error.message);

        // The shipped default, as a file, is accepted.
        let good = dir.path().join("default.toml");
        std::fs::write(&good, gatehouse_policy::policy::DEFAULT_POLICY_TOML).unwrap();
        open_with_policy(dir.path(), Some(good)).expect("the shipped policy as a file");
    }

    /// A keychain that records the thread of every call it gets.
    #[derive(Default)]
    struct ThreadRecordingStore {
        inner: MemoryStore,
        threads: std::sync::Mutex<Vec<std::thread::ThreadId>>,
    }

    impl SecretStore for ThreadRecordingStore {
        fn get(&self, name: &str) -> Result<Option<SecretValue>, HostError> {
            self.threads
                .lock()
                .unwrap()
                .push(std::thread::current().id());
            self.inner.get(name)
        }
        fn set(&self, name: &str, value: &SecretValue) -> Result<(), HostError> {
            self.threads
                .lock()
                .unwrap()
                .push(std::thread::current().id());
            self.inner.set(name, value)
        }
        fn delete(&self, name: &str) -> Result<(), HostError> {
            self.threads
                .lock()
                .unwrap()
                .push(std::thread::current().id());
            self.inner.delete(name)
        }
    }

    // A single-threaded runtime runs every task on this test's thread: a keychain call made
    // there would stall the window and every gateway client while D-Bus answers.
    #[tokio::test(flavor = "current_thread")]
    async fn adding_and_importing_servers_call_the_keychain_off_the_runtime() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(ThreadRecordingStore::default());
        let host = Host::open(
            HostOptions::new(paths(dir.path()), clock()),
            store.clone(),
            no_consent(),
            Arc::new(|_| {}),
        )
        .expect("the host opens");
        host.add_server(NewServer {
            name: "remote".into(),
            kind: ServerKind::Http,
            command: None,
            args: Vec::new(),
            url: Some("https://mcp.example/mcp".into()),
            bearer_token: Some("tok".into()),
        })
        .await
        .expect("added");
        let imported = host
            .import_servers(
                r#"{"mcpServers": {"api": {"url": "https://api.example/mcp", "headers": {"Authorization": "Bearer tok123"}}}}"#,
                &[],
            )
            .await
            .expect("imported");
        assert_eq!(imported.secrets_moved.len(), 1, "{imported:?}");
        let runtime = std::thread::current().id();
        let threads = store.threads.lock().unwrap().clone();
        assert!(threads.len() >= 2, "{threads:?}");
        assert!(threads.iter().all(|t| *t != runtime), "{threads:?}");
        assert!(store.inner.get("remote-bearer").unwrap().is_some());
    }

    #[tokio::test]
    async fn a_refused_replace_leaves_the_listed_servers_keychain_secret_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(crate::MemoryStore::default());
        let host = Host::open(
            HostOptions::new(paths(dir.path()), clock()),
            store.clone(),
            no_consent(),
            Arc::new(|_| {}),
        )
        .expect("the host opens");
        let spec = ServerSpec::adhoc_http("https://mcp.example/mcp").unwrap();
        host.add_server_entry(AddServer {
            bearer_token: Some("old".into()),
            ..AddServer::new("remote", spec.clone())
        })
        .await
        .expect("added");
        // Both an Authorization header and a bearer token: refused when read back.
        let refused = host
            .add_server_entry(AddServer {
                bearer_token: Some("new".into()),
                headers: vec![("Authorization".into(), "Bearer x".into())],
                replace: true,
                ..AddServer::new("remote", spec.clone())
            })
            .await
            .expect_err("an entry with two credentials is refused");
        assert!(refused.message.contains("Authorization"), "{refused}");
        let kept = store.get("remote-bearer").unwrap().expect("still stored");
        assert_eq!(kept.expose(), "old");
        // A valid replace does store the new token.
        host.add_server_entry(AddServer {
            bearer_token: Some("new".into()),
            replace: true,
            ..AddServer::new("remote", spec)
        })
        .await
        .expect("replaced");
        assert_eq!(store.get("remote-bearer").unwrap().unwrap().expose(), "new");
    }
}
