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
    let inside = report.get("net_ns").and_then(serde_json::Value::as_str);
    match (inside, ours) {
        (Some(inside), Some(ours)) if Path::new(inside) != ours => Ok(()),
        (Some(_), Some(_)) => Err((
            UnconfinedReason::SelfCheckFailed,
            "the sandbox self-check saw the host's own network namespace: this bubblewrap does not isolate; check it is Debian's bubblewrap".into(),
        )),
        _ => Err((
            UnconfinedReason::SelfCheckFailed,
            format!(
                "the sandbox self-check printed no network namespace ({:?}): reinstall Gatehouse",
                line.chars().take(200).collect::<String>()
            ),
        )),
    }
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
