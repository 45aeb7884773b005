//! One function per command; each is a thin call into gatehouse-host plus printing.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gatehouse_audit::OpenReport;
use gatehouse_host::admission::{self, SYSTEM_TRUST_ROOTS, Trust, TrustSettings};
use gatehouse_host::consent::ConsentUi;
use gatehouse_host::demo;
use gatehouse_host::host::{AddServer, ApiError, Host, HostOptions, HostPaths};
use gatehouse_host::secrets::{SecretValue, validate_name};
use gatehouse_host::security::{AUDIT_FILE, Finding};
use gatehouse_host::tap::system_clock;
use gatehouse_host::{
    CallOptions, ConnectOptions, Connection, ElicitationMode, HostError, HostEvent, KeyringStore,
    SecretStore, ServerSpec, ServersFile, TrafficTap, Verdict,
};
use serde_json::{Value, json};
use time::OffsetDateTime;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::cli::{
    AddArgs, Adhoc, CallArgs, Cli, Command, SecretCommand, ServersCommand, Target, ToolsAction,
    ToolsArgs, TraceArgs,
};
use crate::output::{self, Spinner};

/// A command that did not succeed: what to print and how to exit.
#[derive(Debug)]
pub struct Failure {
    pub code: gatehouse_host::ErrorCode,
    pub message: String,
    pub exit: u8,
}

impl Failure {
    pub fn usage(message: impl Into<String>) -> Self {
        Failure {
            code: gatehouse_host::ErrorCode::Usage,
            message: message.into(),
            exit: 2,
        }
    }
    pub fn exit_code(&self) -> u8 {
        self.exit
    }
}

impl From<HostError> for Failure {
    fn from(error: HostError) -> Self {
        Failure {
            code: error.code(),
            message: error.to_string(),
            exit: if error.is_refusal() { 1 } else { 2 },
        }
    }
}

impl From<ApiError> for Failure {
    fn from(error: ApiError) -> Self {
        Failure {
            exit: if error.refusal { 1 } else { 2 },
            code: error.code,
            message: error.message,
        }
    }
}

/// The tap keeps this many messages in memory.
const TAP_CAPACITY: usize = 10_000;

/// Name used for an ad-hoc server in logs and the traffic record.
const ADHOC: &str = "adhoc";

#[derive(Clone)]
pub struct Context {
    pub json: bool,
    pub config_path: PathBuf,
    pub options: ConnectOptions,
    pub tap: Arc<TrafficTap>,
    pub secrets: Arc<dyn SecretStore>,
    pub events: broadcast::Sender<HostEvent>,
    pub trust: TrustSettings,
    /// `--trust-roots` as given: under a locked admin bundle, another directory is refused.
    pub trust_roots_flag: Option<PathBuf>,
    pub demo: bool,
    pub audit_path: PathBuf,
    /// The elicitation policy file; `None` means the shipped default.
    pub policy_path: Option<PathBuf>,
    pub prompt_timeout: Duration,
    /// `--traffic-log`, for the host a command opens.
    pub traffic_log: Option<PathBuf>,
}

fn default_config_path() -> PathBuf {
    dirs::config_dir()
        .unwrap_or_else(|| PathBuf::from(".config"))
        .join("gatehouse")
        .join("servers.json")
}

fn default_log_dir() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("gatehouse").join("logs"))
}

pub(crate) fn data_dir() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from(".local/share"))
        .join("gatehouse")
}

/// What this command was started with that a locked admin bundle forbids. The lock is read
/// from the system's own admin directory, whatever --trust-roots says.
pub(crate) fn lock_guard(context: &Context) -> admission::LockGuard {
    admission::LockGuard {
        system_dir: PathBuf::from(SYSTEM_TRUST_ROOTS),
        asked: admission::Widening {
            trust_roots: context.trust_roots_flag.clone(),
            demo: context.demo,
            policy: context.policy_path.clone(),
        },
    }
}

/// The trust settings as of `now`: in demo mode, with the demo bundle built.
fn trust_settings(context: &Context, now: OffsetDateTime) -> Result<TrustSettings, Failure> {
    lock_guard(context).check(now)?;
    let mut settings = context.trust.clone();
    if context.demo {
        settings.demo_bundle = Some(demo::local_demo_bundle(now).map_err(Failure::usage)?);
    }
    Ok(settings)
}

fn warn_trust_problems(json: bool, trust: &Trust) {
    if !json {
        for problem in trust.problems() {
            eprintln!(
                "gatehouse: warning: a trust-root bundle was not loaded ({}): {}",
                problem.code, problem.message
            );
        }
    }
}

fn warn_audit_recovery(json: bool, report: &OpenReport) {
    if !json {
        if let Some(torn) = &report.recovery.torn_tail {
            eprintln!(
                "gatehouse: warning: the audit log's last record was torn (a crash mid-write); its {} bytes were moved to {} and recorded",
                torn.bytes,
                torn.side_file.display()
            );
        }
        if let Some(mismatch) = &report.recovery.head_mismatch {
            eprintln!(
                "gatehouse: warning: the audit log's head does not match its end ({}); records may have been removed. Run `gatehouse audit verify`",
                mismatch.problem.code()
            );
        }
        if let Some(short) = &report.recovery.short_tail {
            eprintln!(
                "gatehouse: warning: {}. This was recorded as record {}; it is not tampering",
                short.describe(),
                short.seq
            );
        }
    }
}

/// Loads the trust roots (and, in demo mode, builds the demo bundle) as of now.
pub fn load_trust(context: &Context) -> Result<Trust, Failure> {
    let now = OffsetDateTime::now_utc();
    let trust = Trust::load(&trust_settings(context, now)?, now);
    warn_trust_problems(context.json, &trust);
    Ok(trust)
}

/// The host's options for this command line: its servers file, trust roots, posture, audit
/// log, policy, timeouts and traffic log. What opening finds is printed as it is found.
pub(crate) fn host_options(context: &Context) -> HostOptions {
    let paths = HostPaths {
        config: context.config_path.clone(),
        data: data_dir(),
        logs: context
            .options
            .log_dir
            .clone()
            .unwrap_or_else(|| data_dir().join("logs")),
        user_trust_roots: context.trust.user_dir.clone(),
        system_trust_roots: PathBuf::from(SYSTEM_TRUST_ROOTS),
    };
    let mut options = HostOptions::new(paths, system_clock());
    options.demo = context.demo;
    options.posture_override = context.trust.posture_override;
    options.policy = context.policy_path.clone();
    options.prompt_timeout = context.prompt_timeout;
    options.request_timeout = context.options.request_timeout;
    options.connect_timeout = context.options.connect_timeout;
    options.audit_file = Some(context.audit_path.clone());
    options.admin_trust_roots = context.trust_roots_flag.clone();
    options.request_era = context.options.era;
    options.traffic_log = context.traffic_log.clone();
    let json = context.json;
    options.findings = Some(Arc::new(move |finding: &Finding<'_>| match finding {
        Finding::Trust(trust) => warn_trust_problems(json, trust),
        Finding::Audit(report) => warn_audit_recovery(json, report),
    }));
    options
}

/// The person at the terminal, for commands with no answers file.
pub(crate) fn terminal_consent() -> Arc<dyn ConsentUi> {
    crate::consent::Consent::new(None)
        .expect("the terminal needs no answers file")
        .ui()
}

/// The host a one-shot command runs on, asking the person through `consent`.
pub(crate) fn open_host(
    context: &Context,
    consent: Arc<dyn ConsentUi>,
) -> Result<Arc<Host>, Failure> {
    // Refused with the CLI's exit code for a refusal before anything opens; the host checks
    // again before each admission.
    lock_guard(context).check(OffsetDateTime::now_utc())?;
    let mut options = host_options(context);
    // One-shot commands sign in on the terminal. Never `serve`: its stdin is the MCP stream,
    // and a sign-in there has nobody to ask (it refuses with auth_required).
    options.sign_in = Some(crate::consent::TerminalConsent::shared());
    Ok(Host::open(
        options,
        context.secrets.clone(),
        consent,
        Arc::new(|_| {}),
    )?)
}

fn seconds(value: f64, what: &str) -> Result<Duration, Failure> {
    if value.is_finite() && value > 0.0 && value <= 86_400.0 {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(Failure::usage(format!(
            "{what} must be a number of seconds between 0 and 86400, not {value}"
        )))
    }
}

/// The flags (or their environment variables) that describe a host of their own: servers,
/// trust, posture, policy or audit log other than the user's defaults. `serve` with any of
/// them runs that host in-process instead of bridging to the desktop app's.
fn own_host_flags(cli: &Cli) -> Vec<&'static str> {
    [
        ("--config", cli.config.is_some()),
        ("--trust-roots", cli.trust_roots.is_some()),
        ("--posture", cli.posture.is_some()),
        ("--audit", cli.audit.is_some()),
        ("--policy", cli.policy.is_some()),
        ("--demo", cli.demo),
        ("--log-dir", cli.log_dir.is_some()),
    ]
    .into_iter()
    .filter_map(|(flag, given)| given.then_some(flag))
    .collect()
}

pub async fn run(cli: Cli) -> Result<u8, Failure> {
    let mut tap = TrafficTap::new(TAP_CAPACITY, system_clock());
    if let Some(path) = &cli.traffic_log {
        tap = tap
            .with_jsonl_file(path)
            .map_err(|e| Failure::usage(format!("--traffic-log {}: {e}", path.display())))?;
    }
    let (events, _) = broadcast::channel(256);
    let own_host = own_host_flags(&cli);
    let context = Context {
        json: cli.json,
        config_path: cli.config.clone().unwrap_or_else(default_config_path),
        options: ConnectOptions {
            era: cli.era,
            elicitation: ElicitationMode::DeclineAndLog,
            connect_timeout: seconds(cli.connect_timeout, "--connect-timeout")?,
            request_timeout: seconds(cli.timeout, "--timeout")?,
            log_dir: cli.log_dir.clone().or_else(default_log_dir),
            ..ConnectOptions::default()
        },
        tap: Arc::new(tap),
        secrets: Arc::new(KeyringStore),
        events,
        trust: TrustSettings {
            system_dir: cli
                .trust_roots
                .clone()
                .unwrap_or_else(|| PathBuf::from(SYSTEM_TRUST_ROOTS)),
            user_dir: dirs::config_dir().map(|d| d.join("gatehouse").join("trust-roots")),
            posture_override: cli.posture,
            demo_bundle: None,
        },
        trust_roots_flag: cli.trust_roots.clone(),
        demo: cli.demo,
        audit_path: cli
            .audit
            .clone()
            .unwrap_or_else(|| data_dir().join(AUDIT_FILE)),
        policy_path: cli.policy.clone(),
        prompt_timeout: seconds(cli.prompt_timeout, "--prompt-timeout")?,
        traffic_log: cli.traffic_log.clone(),
    };
    match cli.command {
        Command::Servers(command) => servers(&context, command).await,
        Command::Secret(command) => secret(&context, command).await,
        Command::Auth(command) => crate::auth::run(&context, command).await,
        Command::Connect(target) => connect_command(&context, &target).await,
        Command::Tools(args) => tools(&context, &args).await,
        Command::Audit(command) => crate::audit::run(&context, command),
        Command::Trust => trust_command(&context),
        Command::Call(args) => call(&context, &args).await,
        Command::Trace(args) => trace(&context, &args).await,
        Command::Bundle(command) => crate::admin::bundle(&context, command),
        Command::Attest(command) => crate::admin::attest_async(&context, command).await,
        Command::Conformance { url } => crate::conformance::run(&context, &url).await,
        Command::Policy(command) => crate::policy::run(&context, command),
        Command::Serve(args) => crate::serve::run(&context, &args, &own_host).await,
        Command::Clients(command) => crate::clients::run(&context, command).await,
        Command::Resources(args) => crate::context::resources(&context, &args).await,
        Command::Read(args) => crate::context::read(&context, &args).await,
        Command::Prompts(args) => crate::context::prompts(&context, &args).await,
        Command::Prompt(args) => crate::context::prompt(&context, &args).await,
        Command::Complete(args) => crate::context::complete(&context, &args).await,
        Command::Subscribe(args) => crate::context::subscribe(&context, &args).await,
    }
}

fn load_config(context: &Context) -> Result<ServersFile, Failure> {
    Ok(ServersFile::load(&context.config_path)?)
}

/// The server a command addresses: a configured name, or an ad-hoc --stdio / --url.
fn resolve_target(
    context: &Context,
    name: Option<&str>,
    adhoc: &Adhoc,
) -> Result<(String, ServerSpec), Failure> {
    match (name, adhoc.given()) {
        (Some(name), true) => Err(Failure::usage(format!(
            "give either a configured server ({name:?}) or --stdio/--url, not both"
        ))),
        (None, false) => Err(Failure::usage(
            "name a configured server, or give an ad-hoc one with --stdio 'CMD ARGS…' or --url URL",
        )),
        (Some(name), false) => {
            let config = load_config(context)?;
            // The demo under both its names, as the desktop app and the gateway offer it.
            if context.demo
                && [demo::DEMO_SERVER_NAME, demo::DEMO_LEGACY_NAME].contains(&name)
                && !config.servers.contains_key(name)
            {
                let spec = demo::demo_server_spec().map_err(Failure::usage)?;
                return Ok((name.to_string(), spec));
            }
            Ok((name.to_string(), config.spec(name, &context.config_path)?))
        }
        (None, true) => Ok((ADHOC.to_string(), adhoc_spec(adhoc)?)),
    }
}

fn adhoc_spec(adhoc: &Adhoc) -> Result<ServerSpec, Failure> {
    Ok(match (&adhoc.stdio, &adhoc.url) {
        (Some(command), None) => ServerSpec::adhoc_stdio(command)?,
        (None, Some(url)) => ServerSpec::adhoc_http(url)?,
        _ => return Err(Failure::usage("give one of --stdio or --url")),
    })
}

/// Collects host events while a command runs, printing progress and elicitations to stderr
/// in human mode.
pub(crate) struct EventLog {
    events: Arc<Mutex<Vec<HostEvent>>>,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl EventLog {
    pub(crate) fn start(context: &Context, host: &Host) -> EventLog {
        let events = Arc::new(Mutex::new(Vec::new()));
        let mut rx = host.subscribe();
        let sink = events.clone();
        let json = context.json;
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let keep = |event: HostEvent| {
                if !json {
                    output::print_event(&event);
                }
                sink.lock().expect("event log poisoned").push(event);
            };
            loop {
                tokio::select! {
                    biased;
                    event = rx.recv() => match event {
                        Ok(event) => keep(event),
                        Err(broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(broadcast::error::RecvError::Closed) => return,
                    },
                    _ = &mut stopped => {
                        // Everything sent before the stop is already in the channel.
                        while let Ok(event) = rx.try_recv() {
                            keep(event);
                        }
                        return;
                    }
                }
            }
        });
        EventLog { events, stop, task }
    }

    pub(crate) async fn finish(self) -> Vec<HostEvent> {
        let _ = self.stop.send(());
        let _ = self.task.await;
        std::mem::take(&mut *self.events.lock().expect("event log poisoned"))
    }
}

/// Opens the host for a one-shot command with the server it names on it: a configured one
/// (the demo's in `--demo`), or the ad-hoc `--stdio` / `--url` one.
pub(crate) fn host_with_target(
    context: &Context,
    consent: Arc<dyn ConsentUi>,
    name: Option<&str>,
    adhoc: &Adhoc,
) -> Result<(Arc<Host>, String, ServerSpec), Failure> {
    let (name, spec) = resolve_target(context, name, adhoc)?;
    let host = open_host(context, consent)?;
    if adhoc.given() {
        host.add_adhoc(&name, spec.clone());
    }
    Ok((host, name, spec))
}

/// The host's live connection to `name` (admitted first), with the CLI's spinner and its
/// warning for a server that is not admitted. When there is none, the host is shut down
/// before the failure is returned (what it recorded, such as traffic, stays readable).
pub(crate) async fn connect(
    context: &Context,
    host: &Host,
    name: &str,
    spec: &ServerSpec,
) -> Result<Arc<Connection>, Failure> {
    let spinner = Spinner::start(
        &format!("connecting to {name} ({})", spec.describe()),
        context.json,
    );
    let result = host.live_connection(name).await;
    spinner.stop();
    let connection = match result {
        Ok(connection) => connection,
        Err(error) => {
            host.shutdown().await;
            return Err(error.into());
        }
    };
    warn_not_admitted(context, name, connection.verdict());
    Ok(connection)
}

/// Says on stderr (not in JSON mode) that a server the posture let through is not admitted.
pub(crate) fn warn_not_admitted(context: &Context, name: &str, verdict: &Verdict) {
    if !context.json && !verdict.is_admitted() {
        eprintln!(
            "gatehouse: warning: {name} is NOT admitted ({}): {}",
            verdict.headline(),
            output::safe(&verdict.detail)
        );
    }
}

async fn connect_command(context: &Context, target: &Target) -> Result<u8, Failure> {
    let (host, name, spec) = host_with_target(
        context,
        terminal_consent(),
        target.server.as_deref(),
        &target.adhoc,
    )?;
    let log = EventLog::start(context, &host);
    let connection = connect(context, &host, &name, &spec).await?;
    let summary = connection.summary();
    let tools = connection.gated_tools().await;
    let events = log.finish().await;
    let verdict = serde_json::to_value(connection.verdict()).expect("verdict serializes");
    let headline = connection.verdict().headline();
    let detail = connection.verdict().detail.clone();
    drop(connection);
    host.shutdown().await;
    let tools = tools?;
    let allowed = tools
        .iter()
        .filter(|t| t.status == gatehouse_attest::gate::ToolStatus::Allowed)
        .count();
    if context.json {
        output::print_json(&json!({
            "server": name,
            "connected": true,
            "admission": verdict,
            "summary": summary,
            "tools": tools.len(),
            "tools_allowed": allowed,
            "events": events,
        }));
    } else {
        output::print_verdict(&headline, &detail, &verdict);
        output::print_summary(&name, &summary, tools.len());
        println!("  tools allowed:   {allowed} of {}", tools.len());
    }
    Ok(0)
}

fn trust_command(context: &Context) -> Result<u8, Failure> {
    let trust = load_trust(context)?;
    let bundles = trust.summaries();
    if context.json {
        output::print_json(&json!({
            "posture": trust.posture(),
            "posture_reason": trust.posture_reason(),
            "locked_by": trust.locked_by(),
            "bundles": bundles,
            "problems": trust.problems(),
        }));
    } else {
        println!("posture: {} ({})", trust.posture(), trust.posture_reason());
        if bundles.is_empty() {
            println!("no trust-root bundles loaded");
        }
        for b in &bundles {
            let demo = if b.source == gatehouse_host::admission::BundleSource::Demo {
                " [DEMO]"
            } else {
                ""
            };
            println!(
                "  {}{demo}  {:?}, expires {}, {}{}, servers: {}",
                b.bundle,
                b.source,
                b.expires,
                b.posture,
                if b.locked { ", locked" } else { "" },
                b.servers.join(", ")
            );
        }
        for p in trust.problems() {
            println!("  not loaded ({}): {}", p.code, p.message);
        }
    }
    Ok(0)
}

/// What a one-shot listing or approval command found on its server: the server's name, its
/// admission verdict (JSON and headline), and what `work` returned.
pub(crate) struct OnTarget<T> {
    pub name: String,
    pub verdict: Value,
    pub headline: String,
    pub found: T,
}

/// Opens the host with the server `target` names, connects (admission first), runs `work` on
/// the connection and shuts the host down: the shape of `tools`, `prompts`, `resources` and
/// their approvals.
pub(crate) async fn on_target<T, F, Fut>(
    context: &Context,
    target: &Target,
    work: F,
) -> Result<OnTarget<T>, Failure>
where
    F: FnOnce(Arc<Connection>) -> Fut,
    Fut: std::future::Future<Output = Result<T, HostError>>,
{
    let (host, name, spec) = host_with_target(
        context,
        terminal_consent(),
        target.server.as_deref(),
        &target.adhoc,
    )?;
    let connection = connect(context, &host, &name, &spec).await?;
    let verdict = serde_json::to_value(connection.verdict()).expect("verdict serializes");
    let headline = connection.verdict().headline();
    // `work` owns the connection, so it is released before the host shuts down.
    let found = work(connection).await;
    host.shutdown().await;
    Ok(OnTarget {
        name,
        verdict,
        headline,
        found: found?,
    })
}

/// Items the gate classified, split: allowed, hidden, and blocked with the reason and the
/// expected and actual pins.
pub(crate) struct Split<T> {
    pub allowed: Vec<T>,
    pub hidden: Vec<T>,
    pub blocked: Vec<(T, gatehouse_attest::gate::GateReason, String, String)>,
}

pub(crate) fn split_gated<T>(
    items: impl IntoIterator<Item = (T, gatehouse_attest::gate::ToolStatus)>,
) -> Split<T> {
    use gatehouse_attest::gate::ToolStatus;
    let mut split = Split {
        allowed: Vec::new(),
        hidden: Vec::new(),
        blocked: Vec::new(),
    };
    for (item, status) in items {
        match status {
            ToolStatus::Allowed => split.allowed.push(item),
            ToolStatus::Hidden => split.hidden.push(item),
            ToolStatus::Blocked {
                reason,
                expected,
                actual,
            } => split.blocked.push((item, reason, expected, actual)),
        }
    }
    split
}

impl<T: serde::Serialize> Split<T> {
    /// The blocked items as JSON, each under `key` with its reason and pins.
    pub(crate) fn blocked_json(&self, key: &str) -> Vec<Value> {
        self.blocked
            .iter()
            .map(|(item, reason, expected, actual)| {
                json!({key: item, "reason": reason.as_str(), "expected": expected, "actual": actual})
            })
            .collect()
    }
}

/// Prints approved pins (`what` is "tool" or "prompt").
pub(crate) fn print_pins(context: &Context, name: &str, what: &str, pins: &[(String, String)]) {
    if context.json {
        output::print_json(&json!({
            "server": name,
            "approved": pins.iter().map(|(n, p)| json!({what: n, "pin": p})).collect::<Vec<_>>(),
        }));
    } else {
        for (item, pin) in pins {
            println!("approved {} ({pin})", output::safe(item));
        }
        if pins.is_empty() {
            println!("{name} lists no {what}s; nothing approved");
        }
    }
}

async fn tools(context: &Context, args: &ToolsArgs) -> Result<u8, Failure> {
    if let Some(ToolsAction::Pin { target, tools }) = &args.action {
        return pin_tools(context, target, tools).await;
    }
    let listed = on_target(context, &args.target, async |connection| {
        connection.gated_tools().await
    })
    .await?;
    let tools = split_gated(listed.found.into_iter().map(|g| (g.tool, g.status)));
    if context.json {
        output::print_json(&json!({
            "server": listed.name,
            "admission": listed.verdict,
            "tools": tools.allowed,
            "hidden": tools.hidden,
            "blocked": tools.blocked_json("tool"),
        }));
    } else {
        println!("{}: {}", listed.name, output::safe(&listed.headline));
        output::print_tools(&tools.allowed);
        output::print_gated(&tools.hidden, &tools.blocked);
    }
    Ok(0)
}

async fn pin_tools(context: &Context, target: &Target, names: &[String]) -> Result<u8, Failure> {
    let pinned = on_target(context, target, async |connection| {
        connection.approve_tools(names).await
    })
    .await?;
    print_pins(context, &pinned.name, "tool", &pinned.found);
    Ok(0)
}

fn parse_arguments(raw: Option<&str>) -> Result<Option<serde_json::Map<String, Value>>, Failure> {
    json_object(raw, "--args", r#"{"message": "hi"}"#)
}

/// A JSON object given on the command line (`flag` names it in the error, `example` shows one).
pub(crate) fn json_object(
    raw: Option<&str>,
    flag: &str,
    example: &str,
) -> Result<Option<serde_json::Map<String, Value>>, Failure> {
    let Some(raw) = raw else { return Ok(None) };
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(other) => Err(Failure::usage(format!(
            "{flag} must be a JSON object like '{example}', not {}",
            output::json_kind(&other)
        ))),
        Err(e) => Err(Failure::usage(format!("{flag} is not valid JSON: {e}"))),
    }
}

/// Cancelled on Ctrl-C, so an interrupted call sends `notifications/cancelled`.
pub(crate) fn ctrl_c_token() -> CancellationToken {
    let token = CancellationToken::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            trigger.cancel();
        }
    });
    token
}

async fn call(context: &Context, args: &CallArgs) -> Result<u8, Failure> {
    let (server, tool) = match (args.words.as_slice(), args.adhoc.given()) {
        ([tool], true) => (None, tool.clone()),
        ([server, tool], false) => (Some(server.as_str()), tool.clone()),
        ([_], false) => {
            return Err(Failure::usage(
                "call needs SERVER TOOL (or TOOL with --stdio / --url)",
            ));
        }
        (_, true) => {
            return Err(Failure::usage(
                "with --stdio or --url, give only the TOOL name",
            ));
        }
        _ => return Err(Failure::usage("call needs SERVER TOOL")),
    };
    let arguments = parse_arguments(args.args.as_deref())?;
    let consent = crate::consent::Consent::new(args.answers.as_deref())?;
    let (host, name, spec) = host_with_target(context, consent.ui(), server, &args.adhoc)?;
    let log = EventLog::start(context, &host);
    let connection = connect(context, &host, &name, &spec).await?;
    let options = CallOptions {
        cancel: Some(ctrl_c_token()),
        ..CallOptions::default()
    };
    let (outcome, failed_records) = connection
        .call_tool_traced(&tool, arguments, &options)
        .await;
    let events = log.finish().await;
    drop(connection);
    host.shutdown().await;
    let notes = consent.notes();
    if !context.json {
        for note in &notes {
            eprintln!("gatehouse: answers file: {note}");
        }
    }
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            if context.json {
                // One JSON document: the error, and what was asked before it.
                let failure = Failure::from(error);
                output::print_json(&json!({
                    "server": name,
                    "tool": tool,
                    "error": {"code": failure.code, "message": failure.message},
                    "elicitations": failed_records,
                    "answers_notes": notes,
                }));
                return Ok(failure.exit);
            }
            output::print_elicitations(&failed_records);
            return Err(error.into());
        }
    };
    if context.json {
        output::print_json(&json!({
            "server": name,
            "tool": tool,
            "is_error": outcome.is_error(),
            "rounds": outcome.rounds,
            "result": outcome.result,
            "elicitations": outcome.elicitations,
            "answers_notes": notes,
            "events": events,
        }));
    } else {
        output::print_elicitations(&outcome.elicitations);
        output::print_result(&outcome.result);
    }
    if outcome.is_error() {
        if !context.json {
            eprintln!("gatehouse: the tool {tool:?} returned an error result (isError)");
        }
        return Ok(1);
    }
    Ok(0)
}

async fn trace(context: &Context, args: &TraceArgs) -> Result<u8, Failure> {
    let arguments = parse_arguments(args.args.as_deref())?;
    // Elicitations during a traced call are asked on the terminal, like `call`.
    let (host, name, spec) = host_with_target(
        context,
        terminal_consent(),
        args.target.server.as_deref(),
        &args.target.adhoc,
    )?;
    let log = EventLog::start(context, &host);
    let mut exit = 0;
    let mut failure = None;
    match connect(context, &host, &name, &spec).await {
        Ok(connection) => {
            if let Err(e) = connection.tools().await {
                failure = Some(Failure::from(e));
            } else if let Some(tool) = &args.tool {
                match connection
                    .call_tool(
                        tool,
                        arguments,
                        &CallOptions {
                            cancel: Some(ctrl_c_token()),
                            ..CallOptions::default()
                        },
                    )
                    .await
                {
                    Ok(outcome) if outcome.is_error() => exit = 1,
                    Ok(_) => {}
                    Err(e) => failure = Some(e.into()),
                }
            }
        }
        Err(e) => failure = Some(e),
    }
    host.shutdown().await;
    log.finish().await;
    // The traffic is printed even when the run failed: that is when it is most useful.
    let entries = host.traffic(Some(&name));
    if context.json {
        for entry in &entries {
            println!(
                "{}",
                serde_json::to_string(entry).expect("entry serializes")
            );
        }
    } else {
        output::print_traffic(&entries);
    }
    match failure {
        Some(failure) => Err(failure),
        None => Ok(exit),
    }
}

async fn servers(context: &Context, command: ServersCommand) -> Result<u8, Failure> {
    let path = &context.config_path;
    match command {
        ServersCommand::List => {
            // Each server's admission is decided (and audited) now by the host: an
            // attestation fetched, a binary hashed. Nothing is said to the servers themselves.
            let host = open_host(context, terminal_consent())?;
            let admissions = host.admissions().await;
            host.shutdown().await;
            let rows: Vec<Value> = admissions?
                .into_iter()
                .map(|admission| {
                    json!({
                        "name": admission.name,
                        "transport": admission.transport,
                        "target": admission.target,
                        "secrets": admission.secrets,
                        "admission": admission.verdict,
                        "verdict": admission.verdict.headline(),
                    })
                })
                .collect();
            if context.json {
                output::print_json(&json!({"config": path, "servers": rows}));
            } else {
                output::print_servers(path, &rows);
            }
            Ok(0)
        }
        ServersCommand::Add(args) => {
            let add = add_server(&args)?;
            let host = open_host(context, terminal_consent())?;
            let added = host.add_server_entry(add).await;
            host.shutdown().await;
            added.map_err(|error| add_failure(error, &args, path))?;
            report(
                context,
                json!({"added": args.name, "config": path}),
                &format!("added {:?} to {}", args.name, path.display()),
            );
            Ok(0)
        }
        ServersCommand::Remove { name } => {
            let mut config = load_config(context)?;
            if config.servers.remove(&name).is_none() {
                return Err(config.unknown(&name, path).into());
            }
            config.save(path)?;
            report(
                context,
                json!({"removed": name, "config": path}),
                &format!("removed {name:?} from {}", path.display()),
            );
            Ok(0)
        }
        ServersCommand::Resume { name } => {
            // A configured server, or the demo's in --demo; nothing connects.
            let (host, name, _) =
                host_with_target(context, terminal_consent(), Some(&name), &Adhoc::default())?;
            let resumed = host.resume_server(&name).await;
            host.shutdown().await;
            let resumed = resumed?.resumed;
            report(
                context,
                json!({"server": name, "resumed": resumed}),
                &if resumed {
                    format!("{name:?} is no longer suspended")
                } else {
                    format!("{name:?} was not suspended")
                },
            );
            Ok(0)
        }
        ServersCommand::Import {
            path: source,
            replace,
            allow_launch_settings,
        } => {
            let text = std::fs::read_to_string(&source)
                .map_err(|e| HostError::Config(format!("cannot read {}: {e}", source.display())))?;
            let host = open_host(context, terminal_consent())?;
            let imported = host
                .import_servers_from(&text, &source, replace, &allow_launch_settings)
                .await;
            host.shutdown().await;
            let report_data = imported?;
            if context.json {
                output::print_json(&json!({"config": path, "import": report_data}));
            } else {
                output::print_import(&source, path, &report_data);
            }
            Ok(0)
        }
    }
}

fn split_pair<'a>(raw: &'a str, flag: &str) -> Result<(&'a str, &'a str), Failure> {
    raw.split_once('=')
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| Failure::usage(format!("{flag} {raw:?}: expected KEY=VALUE")))
}

/// The server `servers add` describes, for the host to check and add.
fn add_server(args: &AddArgs) -> Result<AddServer, Failure> {
    let mut add = AddServer::new(args.name.clone(), adhoc_spec(&args.server)?);
    for raw in &args.env {
        let (k, v) = split_pair(raw, "--env")?;
        add.env.push((k.into(), v.into()));
    }
    for raw in &args.headers {
        let (k, v) = split_pair(raw, "--header")?;
        add.headers.push((k.into(), v.into()));
    }
    add.cwd = args.cwd.as_ref().map(|p| p.display().to_string());
    add.bearer_token_secret = args.bearer_secret.clone();
    add.replace = args.replace;
    Ok(add)
}

/// The host's refusal of `servers add`, saying how to replace a listed server from here.
fn add_failure(error: ApiError, args: &AddArgs, path: &Path) -> Failure {
    let listed = error.code == gatehouse_host::ErrorCode::ServerExists
        && ServersFile::load(path).is_ok_and(|config| config.servers.contains_key(&args.name));
    if listed {
        return HostError::Config(format!(
            "{}: a server named {:?} exists; use --replace to overwrite it",
            path.display(),
            args.name
        ))
        .into();
    }
    error.into()
}

/// Runs a keychain operation off the async runtime: Secret Service calls block on D-Bus.
async fn off_runtime<T: Send + 'static>(
    operation: impl FnOnce() -> Result<T, HostError> + Send + 'static,
) -> Result<T, Failure> {
    tokio::task::spawn_blocking(operation)
        .await
        .map_err(|e| Failure::usage(format!("keychain task failed: {e}")))?
        .map_err(Failure::from)
}

async fn secret(context: &Context, command: SecretCommand) -> Result<u8, Failure> {
    match command {
        SecretCommand::Set { name } => {
            validate_name(&name)?;
            let value = read_secret_value(&name)?;
            let (secrets, task_name) = (context.secrets.clone(), name.clone());
            off_runtime(move || secrets.set(&task_name, &value)).await?;
            report(
                context,
                json!({"stored": name}),
                &format!("stored secret {name:?} in the OS keychain"),
            );
            Ok(0)
        }
        SecretCommand::Delete { name } => {
            validate_name(&name)?;
            let (secrets, task_name) = (context.secrets.clone(), name.clone());
            off_runtime(move || secrets.delete(&task_name)).await?;
            report(
                context,
                json!({"deleted": name}),
                &format!("deleted secret {name:?}"),
            );
            Ok(0)
        }
    }
}

/// Reads a secret from stdin: with the terminal's echo off when stdin is a terminal, else the
/// whole input with one trailing newline removed.
fn read_secret_value(name: &str) -> Result<SecretValue, Failure> {
    let value = if std::io::stdin().is_terminal() {
        rpassword::prompt_password(format!("value for {name} (not echoed): "))
            .map_err(|e| Failure::usage(format!("cannot read the secret from the terminal: {e}")))?
    } else {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Failure::usage(format!("cannot read the secret from stdin: {e}")))?;
        let trimmed = text.strip_suffix('\n').unwrap_or(&text);
        trimmed.strip_suffix('\r').unwrap_or(trimmed).to_string()
    };
    if value.is_empty() {
        return Err(Failure::usage(format!(
            "the value for secret {name:?} is empty; nothing was stored"
        )));
    }
    Ok(SecretValue::new(value))
}

pub(crate) fn report(context: &Context, data: Value, human: &str) {
    if context.json {
        output::print_json(&data);
    } else {
        println!("{human}");
    }
}
