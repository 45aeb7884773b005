//! The context every command runs in: the flags it was given, resolved to paths and
//! durations, and the host a one-shot command opens from them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_audit::OpenReport;
use gatehouse_host::consent::ConsentUi;
use gatehouse_host::demo;
use gatehouse_host::host::{Host, HostOptions, HostPaths};
use gatehouse_host::{
    AUDIT_FILE, EraPreference, Finding, KeyringStore, LockGuard, SYSTEM_TRUST_ROOTS, SandboxTools,
    SecretStore, Trust, TrustSettings, Verdict, Widening, system_clock,
};
use serde_json::Value;
use time::OffsetDateTime;

use crate::cli::Flags;
use crate::output;

pub use crate::failure::Failure;

#[derive(Clone)]
pub struct Context {
    pub json: bool,
    pub config_path: PathBuf,
    /// The keychain, for the hosts a command opens and the commands that store secrets.
    pub secrets: Arc<dyn SecretStore>,
    /// `--era`, for the host (which era each request is sent in).
    pub era: EraPreference,
    /// `--connect-timeout` and `--timeout`, checked when the command line is read.
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    /// `--log-dir` as given; [`host_options`] picks the default otherwise.
    pub log_dir: Option<PathBuf>,
    pub trust: TrustSettings,
    /// `--trust-roots` as given: under a locked admin bundle, another directory is refused.
    pub trust_roots_flag: Option<PathBuf>,
    /// `--package-sources`.
    pub package_sources: Option<PathBuf>,
    pub demo: bool,
    pub audit_path: PathBuf,
    /// The elicitation policy file; `None` means the shipped default.
    pub policy_path: Option<PathBuf>,
    pub prompt_timeout: Duration,
    /// `--traffic-log`, for the host a command opens.
    pub traffic_log: Option<PathBuf>,
    /// `GATEHOUSE_BWRAP` and `GATEHOUSE_SANDBOX_INIT`: the confinement's tools, instead of
    /// the ones the host finds (bubblewrap on PATH, the init beside `gatehouse`).
    pub sandbox: SandboxTools,
}

impl Context {
    /// The context the command line describes.
    pub(crate) fn from_flags(flags: &Flags) -> Result<Context, Failure> {
        // A traffic log that cannot be opened is a usage error before any command runs.
        if let Some(path) = &flags.connect.traffic_log {
            // The host opens it for real; this only checks it can be, before anything runs.
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| Failure::usage(format!("--traffic-log {}: {e}", path.display())))?;
        }
        Ok(Context {
            json: flags.output.json,
            config_path: flags
                .servers_file
                .config
                .clone()
                .unwrap_or_else(default_config_path),
            secrets: Arc::new(KeyringStore),
            era: flags.connect.era.unwrap_or_default(),
            connect_timeout: seconds(
                flags.connect.connect_timeout.unwrap_or(30.0),
                "--connect-timeout",
            )?,
            request_timeout: seconds(flags.connect.timeout.unwrap_or(60.0), "--timeout")?,
            log_dir: flags.connect.log_dir.clone(),
            trust: TrustSettings {
                system_dir: flags
                    .trust_roots
                    .trust_roots
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(SYSTEM_TRUST_ROOTS)),
                user_dir: dirs::config_dir().map(|d| d.join("gatehouse").join("trust-roots")),
                posture_override: flags.admission.posture,
                demo_bundle: None,
            },
            trust_roots_flag: flags.trust_roots.trust_roots.clone(),
            package_sources: flags.trust_roots.package_sources.clone(),
            demo: flags.admission.demo,
            audit_path: flags
                .audit
                .audit
                .clone()
                .unwrap_or_else(|| data_dir().join(AUDIT_FILE)),
            policy_path: flags.policy.policy.clone(),
            prompt_timeout: seconds(
                flags.connect.prompt_timeout.unwrap_or(600.0),
                "--prompt-timeout",
            )?,
            traffic_log: flags.connect.traffic_log.clone(),
            sandbox: sandbox_tools(
                std::env::var_os("GATEHOUSE_BWRAP"),
                std::env::var_os("GATEHOUSE_SANDBOX_INIT"),
            )?,
        })
    }
}

/// The confinement's tools from `GATEHOUSE_BWRAP` and `GATEHOUSE_SANDBOX_INIT` (the values
/// given): unset leaves the host to find them; set but empty is refused rather than read as
/// unset, so a mistyped setting never silently means "the machine's own".
pub(crate) fn sandbox_tools(
    bwrap: Option<std::ffi::OsString>,
    init: Option<std::ffi::OsString>,
) -> Result<SandboxTools, Failure> {
    let path = |value: Option<std::ffi::OsString>, name: &str, what: &str| match value {
        None => Ok(None),
        Some(value) if value.is_empty() => Err(Failure::usage(format!(
            "{name} is empty: name {what}, or unset it to let Gatehouse find it"
        ))),
        Some(value) => Ok(Some(PathBuf::from(value))),
    };
    Ok(SandboxTools {
        bwrap: path(bwrap, "GATEHOUSE_BWRAP", "the bubblewrap program (bwrap)")?,
        init: path(
            init,
            "GATEHOUSE_SANDBOX_INIT",
            "the gatehouse-sandbox-init program",
        )?,
    })
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
pub(crate) fn lock_guard(context: &Context) -> LockGuard {
    LockGuard {
        system_dir: PathBuf::from(SYSTEM_TRUST_ROOTS),
        asked: Widening {
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
            .log_dir
            .clone()
            .or_else(default_log_dir)
            .unwrap_or_else(|| data_dir().join("logs")),
        user_trust_roots: context.trust.user_dir.clone(),
        system_trust_roots: PathBuf::from(SYSTEM_TRUST_ROOTS),
    };
    let mut options = HostOptions::new(paths, system_clock());
    options.demo = context.demo;
    options.posture_override = context.trust.posture_override;
    options.policy = context.policy_path.clone();
    options.prompt_timeout = context.prompt_timeout;
    options.request_timeout = context.request_timeout;
    options.connect_timeout = context.connect_timeout;
    options.audit_file = Some(context.audit_path.clone());
    options.admin_trust_roots = context.trust_roots_flag.clone();
    options.package_sources = context.package_sources.clone();
    options.request_era = context.era;
    options.traffic_log = context.traffic_log.clone();
    options.sandbox = context.sandbox.clone();
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
pub(crate) fn own_host_flags(flags: &Flags) -> Vec<&'static str> {
    [
        ("--config", flags.servers_file.config.is_some()),
        ("--trust-roots", flags.trust_roots.trust_roots.is_some()),
        ("--posture", flags.admission.posture.is_some()),
        ("--audit", flags.audit.audit.is_some()),
        ("--policy", flags.policy.policy.is_some()),
        ("--demo", flags.admission.demo),
        ("--log-dir", flags.connect.log_dir.is_some()),
    ]
    .into_iter()
    .filter_map(|(flag, given)| given.then_some(flag))
    .collect()
}

/// Admission's verdict on the server a command works on, as the CLI shows it (the host lends
/// the verdict itself only for the moment it is read).
pub(crate) struct Admission {
    pub admitted: bool,
    pub headline: String,
    pub detail: String,
    /// The verdict as `--json` prints it.
    pub json: Value,
}

impl Admission {
    pub(crate) fn of(verdict: &Verdict) -> Admission {
        Admission {
            admitted: verdict.is_admitted(),
            headline: verdict.headline(),
            detail: verdict.detail.clone(),
            json: serde_json::to_value(verdict).expect("verdict serializes"),
        }
    }
}

/// Says on stderr (not in JSON mode) that a server the posture let through is not admitted.
pub(crate) fn warn_not_admitted(context: &Context, name: &str, admission: &Admission) {
    if !context.json && !admission.admitted {
        eprintln!(
            "gatehouse: warning: {name} is NOT admitted ({}): {}",
            admission.headline,
            output::safe(&admission.detail)
        );
    }
}

pub(crate) fn report(context: &Context, data: Value, human: &str) {
    if context.json {
        output::print_json(&data);
    } else {
        println!("{human}");
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    #[test]
    fn sandbox_tools_come_from_named_programs_and_an_empty_name_is_refused() {
        let unset = sandbox_tools(None, None).map_err(|f| f.message).unwrap();
        assert_eq!((unset.bwrap, unset.init), (None, None));
        let set = sandbox_tools(
            Some(OsString::from("bin/bwrap")),
            Some(OsString::from("init")),
        )
        .map_err(|f| f.message)
        .unwrap();
        assert_eq!(set.bwrap, Some(PathBuf::from("bin/bwrap")));
        assert_eq!(set.init, Some(PathBuf::from("init")));
        for (bwrap, init, named) in [
            (Some(OsString::new()), None, "GATEHOUSE_BWRAP is empty"),
            (
                None,
                Some(OsString::new()),
                "GATEHOUSE_SANDBOX_INIT is empty",
            ),
        ] {
            let Err(failure) = sandbox_tools(bwrap, init) else {
                panic!("{named}: accepted")
            };
            assert!(failure.message.contains(named), "{}", failure.message);
            assert_eq!(failure.exit_code(), 2);
        }
    }
}
