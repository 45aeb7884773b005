//! Whether this machine can confine: bubblewrap and the init found, and a sandbox built with
//! them once really is one. Checked once per (bwrap, init) pair per process.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use super::UnconfinedReason;

/// The init's file name, as `cargo build -p gatehouse-sandbox` and the .deb put it.
pub const INIT_BINARY: &str = "gatehouse-sandbox-init";
/// Where the .deb installs the init.
pub const PACKAGED_INIT: &str = "/usr/lib/gatehouse/gatehouse-sandbox-init";

/// The tools that build a sandbox; `None` discovers them: `bwrap` on `PATH`; the init beside
/// the current executable, then in its parent directory (a test binary in `deps/`), then
/// [`PACKAGED_INIT`]. Front ends fill them from `GATEHOUSE_BWRAP` and
/// `GATEHOUSE_SANDBOX_INIT`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SandboxTools {
    pub bwrap: Option<PathBuf>,
    pub init: Option<PathBuf>,
}

/// The tools found and checked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Checked {
    pub bwrap: PathBuf,
    pub init: PathBuf,
}

/// Why the machine cannot confine, with one sentence naming what to do.
pub(crate) type Unavailable = (UnconfinedReason, String);

/// The init where discovery finds it, if anywhere.
pub fn discover_init() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok();
    let dir = exe.as_deref().and_then(Path::parent);
    dir.map(|d| d.join(INIT_BINARY))
        .into_iter()
        .chain(dir.and_then(Path::parent).map(|d| d.join(INIT_BINARY)))
        .chain(std::iter::once(PathBuf::from(PACKAGED_INIT)))
        .find(|p| p.is_file())
}

fn discover_bwrap() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("bwrap"))
        .find(|p| p.is_file())
}

/// Finds the tools and checks them (once per pair; the result is kept for the process).
pub(crate) fn check(tools: &SandboxTools) -> Result<Checked, Unavailable> {
    let bwrap = match &tools.bwrap {
        Some(path) => path.clone(),
        None => discover_bwrap().ok_or_else(|| {
            (
                UnconfinedReason::BubblewrapMissing,
                "bubblewrap (bwrap) is not installed: install it (Debian and Ubuntu: apt install bubblewrap) or set GATEHOUSE_BWRAP to it".to_string(),
            )
        })?,
    };
    if !bwrap.is_file() {
        return Err((
            UnconfinedReason::BubblewrapMissing,
            format!(
                "bubblewrap is not at {}: install it (apt install bubblewrap) or point GATEHOUSE_BWRAP at it",
                bwrap.display()
            ),
        ));
    }
    let init = match &tools.init {
        Some(path) => path.clone(),
        None => discover_init().ok_or_else(|| {
            (
                UnconfinedReason::InitMissing,
                format!(
                    "Gatehouse's {INIT_BINARY} is missing (not beside this program nor at {PACKAGED_INIT}): reinstall Gatehouse"
                ),
            )
        })?,
    };
    if !init.is_file() {
        return Err((
            UnconfinedReason::InitMissing,
            format!(
                "Gatehouse's {INIT_BINARY} is not at {}: reinstall Gatehouse",
                init.display()
            ),
        ));
    }
    let checked = Checked { bwrap, init };
    static CHECKS: OnceLock<Mutex<HashMap<Checked, Result<(), Unavailable>>>> = OnceLock::new();
    let cache = CHECKS.get_or_init(Default::default);
    if let Some(done) = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&checked)
    {
        return done.clone().map(|()| checked.clone());
    }
    // Outside the lock: the check starts a process, and another pair may be checked at once
    // (two checks of one pair agree; the second result is the same).
    let result = self_check(&checked);
    cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(checked.clone(), result.clone());
    result.map(|()| checked)
}

/// How long the self-check may take: bubblewrap starts in milliseconds; a hung one means
/// it cannot work here.
const SELF_CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs the init's `--self-check` in a minimal sandbox and compares its network namespace
/// with this process's own.
fn self_check(tools: &Checked) -> Result<(), Unavailable> {
    let ours = std::fs::read_link("/proc/self/ns/net").ok();
    let scratch = tempfile::tempdir().map_err(|e| {
        (
            UnconfinedReason::SelfCheckFailed,
            format!("no scratch directory for the sandbox self-check: {e}"),
        )
    })?;
    let args = self_check_args(&tools.init, scratch.path());
    let output = run_with_timeout(&tools.bwrap, &args, SELF_CHECK_TIMEOUT).map_err(|e| {
        (
            UnconfinedReason::BubblewrapMissing,
            format!("{} could not be run: {e}", tools.bwrap.display()),
        )
    })?;
    let (status, stdout, stderr) = output;
    if !status {
        let said = stderr.lines().last().unwrap_or("").trim().to_string();
        let namespaces = said.contains("namespace")
            || said.contains("Operation not permitted")
            || said.contains("Permission denied");
        return Err(if namespaces {
            (
                UnconfinedReason::UserNamespacesUnavailable,
                format!(
                    "bubblewrap cannot create a sandbox here ({said}): enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap)"
                ),
            )
        } else {
            (
                UnconfinedReason::SelfCheckFailed,
                format!(
                    "the sandbox self-check failed ({}): check bubblewrap and reinstall Gatehouse",
                    if said.is_empty() { "no message" } else { &said }
                ),
            )
        });
    }
    let line = stdout.lines().next().unwrap_or("");
    let report: serde_json::Value = serde_json::from_str(line).unwrap_or(serde_json::Value::Null);
    judge_report(&report, ours.as_deref(), line)
}

/// Whether the init's `--self-check` report (`line`, parsed as `report`) describes a sandbox:
/// its own network namespace, `no_new_privs` set, the seccomp filter really refusing a new
/// process, and an empty private home. Anything missing or else is not a sandbox.
fn judge_report(
    report: &serde_json::Value,
    ours: Option<&Path>,
    line: &str,
) -> Result<(), Unavailable> {
    let failed = |why: String| Err((UnconfinedReason::SelfCheckFailed, why));
    let inside = report.get("net_ns").and_then(serde_json::Value::as_str);
    match (inside, ours) {
        (Some(inside), Some(ours)) if Path::new(inside) != ours => {}
        (Some(_), Some(_)) => {
            return failed(
                "the sandbox self-check saw the host's own network namespace: this bubblewrap does not isolate; check it is Debian's bubblewrap".into(),
            );
        }
        _ => {
            return failed(format!(
                "the sandbox self-check printed no network namespace ({:?}): reinstall Gatehouse",
                line.chars().take(200).collect::<String>()
            ));
        }
    }
    let flag = |key: &str| report.get(key).and_then(serde_json::Value::as_bool);
    if flag("no_new_privs") != Some(true) {
        return failed(
            "the sandbox self-check found no_new_privs unset: this bubblewrap does not drop privileges; check it is Debian's bubblewrap".into(),
        );
    }
    if flag("seccomp_ok") != Some(true) {
        return failed(
            "the sandbox init could not make its seccomp filter refuse a new process (the kernel needs seccomp filters, CONFIG_SECCOMP_FILTER): reinstall Gatehouse or use a kernel with seccomp".into(),
        );
    }
    if report
        .get("home_entries")
        .and_then(serde_json::Value::as_u64)
        != Some(0)
    {
        return failed(
            "the sandbox self-check did not see an empty private home: this bubblewrap does not hide the home directory; check it is Debian's bubblewrap".into(),
        );
    }
    Ok(())
}

/// A minimal sandbox (the system read-only, a tmpfs home, no network) running the init's
/// `--self-check`.
fn self_check_args(init: &Path, scratch: &Path) -> Vec<OsString> {
    let plan = super::launch::minimal_plan(init, scratch);
    let mut args = gatehouse_confine::bwrap_args(&plan);
    // Everything up to and including the init's path; then the self-check alone.
    if let Some(at) = args
        .windows(2)
        .position(|w| w[0] == "--" && w[1] == gatehouse_confine::INIT_PATH)
    {
        args.truncate(at + 2);
    }
    args.push("--self-check".into());
    args
}

/// Runs `program args` with no stdin; its success, stdout and stderr, or an error when it
/// could not start or did not end in `timeout` (it is killed then).
fn run_with_timeout(
    program: &Path,
    args: &[OsString],
    timeout: Duration,
) -> std::io::Result<(bool, String, String)> {
    let mut child = std::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            let output = child.wait_with_output()?;
            return Ok((
                status.success(),
                String::from_utf8_lossy(&output.stdout).into_owned(),
                String::from_utf8_lossy(&output.stderr).into_owned(),
            ));
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no answer within {}s", timeout.as_secs()),
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_self_check_report_is_a_sandbox_only_when_every_sign_says_so() {
        let ours = Path::new("net:[4026531840]");
        let good = serde_json::json!({
            "net_ns": "net:[4026532999]", "user_ns": "user:[4026532998]", "uid": 0,
            "no_new_privs": true, "seccomp_ok": true, "home_entries": 0
        });
        assert!(judge_report(&good, Some(ours), "").is_ok());
        let with = |key: &str, value: serde_json::Value| {
            let mut report = good.clone();
            report[key] = value;
            judge_report(&report, Some(ours), "").unwrap_err()
        };
        for (key, value, says) in [
            (
                "net_ns",
                serde_json::json!("net:[4026531840]"),
                "own network namespace",
            ),
            ("net_ns", serde_json::Value::Null, "no network namespace"),
            ("no_new_privs", serde_json::json!(false), "no_new_privs"),
            ("no_new_privs", serde_json::Value::Null, "no_new_privs"),
            ("seccomp_ok", serde_json::json!(false), "seccomp"),
            ("home_entries", serde_json::json!(3), "empty private home"),
            (
                "home_entries",
                serde_json::Value::Null,
                "empty private home",
            ),
        ] {
            let (reason, why) = with(key, value);
            assert_eq!(reason, UnconfinedReason::SelfCheckFailed, "{key}");
            assert!(why.contains(says), "{key}: {why}");
        }
        assert!(judge_report(&serde_json::Value::Null, Some(ours), "garbage").is_err());
        assert!(judge_report(&good, None, "").is_err());
    }

    #[test]
    fn a_missing_bwrap_or_init_is_said_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let tools = SandboxTools {
            bwrap: Some(dir.path().join("no-bwrap")),
            init: Some(dir.path().join("no-init")),
        };
        assert_eq!(
            check(&tools).unwrap_err().0,
            UnconfinedReason::BubblewrapMissing
        );
        let bwrap = dir.path().join("bwrap");
        std::fs::write(&bwrap, "").unwrap();
        let tools = SandboxTools {
            bwrap: Some(bwrap),
            init: Some(dir.path().join("no-init")),
        };
        assert_eq!(check(&tools).unwrap_err().0, UnconfinedReason::InitMissing);
    }

    #[test]
    fn a_bwrap_that_fails_is_not_a_sandbox() {
        let dir = tempfile::tempdir().unwrap();
        let init = dir.path().join("init");
        std::fs::write(&init, "").unwrap();
        // `false` exits 1 with nothing said: not confined, whatever the reason.
        let tools = SandboxTools {
            bwrap: Some(PathBuf::from("/bin/false")),
            init: Some(init.clone()),
        };
        let (reason, detail) = check(&tools).unwrap_err();
        assert_eq!(reason, UnconfinedReason::SelfCheckFailed, "{detail}");
        // `true` exits 0 but prints no namespace: not a sandbox either.
        let tools = SandboxTools {
            bwrap: Some(PathBuf::from("/bin/true")),
            init: Some(init),
        };
        let (reason, detail) = check(&tools).unwrap_err();
        assert_eq!(reason, UnconfinedReason::SelfCheckFailed, "{detail}");
    }
}
