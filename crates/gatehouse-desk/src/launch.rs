//! How the desktop app was started, shared by the window (`gatehouse-desktop`) and the
//! background host (`gatehouse-background`): the same options, the same paths (so the CLI,
//! the window and the host share `servers.json`, the audit log and the trust roots), and the
//! desk opened the same way in both.

use std::path::PathBuf;
use std::sync::Arc;

use gatehouse_attest::bundle::Posture;
use gatehouse_host::{SYSTEM_TRUST_ROOTS, SandboxTools, SecretStore, UrlOpener, system_clock};

use crate::client_files::{ClientSetup, locate_gatehouse};
use crate::events::EventHub;
use crate::{Desk, DeskOptions, DeskPaths};

/// How the app was started.
#[derive(Clone, Default)]
pub struct Launch {
    /// The embedded demo: the DEMO-ONLY trust root and the demo server.
    pub demo: bool,
    /// An elicitation policy file instead of the shipped default.
    pub policy: Option<PathBuf>,
    /// The posture asked for on the command line; a locked admin bundle's wins over it.
    pub posture: Option<Posture>,
    /// The demo server's executable, instead of the one found next to the app (tests).
    pub demo_server: Option<PathBuf>,
    /// Paths to use instead of the user's directories (tests).
    pub paths: Option<DeskPaths>,
    /// Where consented URLs go instead of the system browser (tests).
    pub opener: Option<Arc<dyn UrlOpener>>,
    /// The keychain, or a stand-in (tests).
    pub secrets: Option<Arc<dyn SecretStore>>,
    /// Connect every server at start, so the Servers view shows verdicts at once.
    pub connect_at_start: bool,
    /// When `main` began.
    pub started: Option<std::time::Instant>,
    /// Serve AI clients' `gatehouse serve` on the bridge socket (gatehouse_gateway::bridge).
    pub bridge: bool,
    /// Where saved resources go, instead of `$GATEHOUSE_DOWNLOAD_DIR` or the user's download
    /// directory (tests).
    pub downloads: Option<PathBuf>,
    /// The AI clients' directories and the `gatehouse` their files will launch, instead of
    /// the user's home and config directories and the one found beside the app or on PATH
    /// (tests).
    pub clients: Option<ClientSetup>,
    /// The package-sources file instead of the one beside the system trust roots
    /// (`GATEHOUSE_PACKAGE_SOURCES`, as for the CLI's `--package-sources`).
    pub package_sources: Option<PathBuf>,
    /// The confinement's tools (`GATEHOUSE_BWRAP`, `GATEHOUSE_SANDBOX_INIT`, as for the CLI),
    /// instead of the ones the host finds.
    pub sandbox: SandboxTools,
}

const USAGE: &str = "[--demo] [--policy FILE] [--posture deny-by-default|warn] [--no-bridge]";

impl Launch {
    /// From the command line: `--demo`, `--policy FILE`, `--posture POSTURE`, `--no-bridge`
    /// (or `GATEHOUSE_DEMO=1`, `GATEHOUSE_POLICY`, `GATEHOUSE_POSTURE`, as for the CLI),
    /// `GATEHOUSE_PACKAGE_SOURCES`, `GATEHOUSE_BWRAP` and `GATEHOUSE_SANDBOX_INIT`. The first
    /// argument is the program's name.
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Launch, String> {
        Launch::from_args_with(args, |_| false).map(|(launch, _)| launch)
    }

    /// As [`Launch::from_args`], with the program's own flags: every argument `own` accepts is
    /// returned, in order, instead of being refused (e.g. the window's `--quit`).
    pub fn from_args_with(
        args: impl IntoIterator<Item = String>,
        own: impl Fn(&str) -> bool,
    ) -> Result<(Launch, Vec<String>), String> {
        let mut args = args.into_iter();
        let program = args
            .next()
            .map(|p| {
                std::path::Path::new(&p)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or(p)
            })
            .unwrap_or_else(|| "gatehouse-desktop".into());
        let usage = format!("usage: {program} {USAGE}");
        let posture = match std::env::var_os("GATEHOUSE_POSTURE") {
            None => None,
            Some(value) => Some(
                value
                    .to_str()
                    .ok_or_else(|| "GATEHOUSE_POSTURE is not UTF-8".to_string())
                    .and_then(str::parse::<Posture>)
                    .map_err(|e| format!("GATEHOUSE_POSTURE: {e}"))?,
            ),
        };
        let mut launch = Launch {
            demo: std::env::var("GATEHOUSE_DEMO").is_ok_and(|v| v == "1"),
            policy: std::env::var_os("GATEHOUSE_POLICY").map(PathBuf::from),
            posture,
            package_sources: package_sources_from(std::env::var_os("GATEHOUSE_PACKAGE_SOURCES"))?,
            sandbox: sandbox_tools_from(
                std::env::var_os("GATEHOUSE_BWRAP"),
                std::env::var_os("GATEHOUSE_SANDBOX_INIT"),
            )?,
            connect_at_start: true,
            bridge: true,
            ..Launch::default()
        };
        let mut mine = Vec::new();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--demo" => launch.demo = true,
                "--no-bridge" => launch.bridge = false,
                "--policy" => {
                    launch.policy = Some(
                        args.next()
                            .ok_or("--policy needs a file: --policy policy.toml")?
                            .into(),
                    )
                }
                "--posture" => {
                    let text = args
                        .next()
                        .ok_or("--posture needs deny-by-default or warn: --posture warn")?;
                    launch.posture = Some(
                        text.parse::<Posture>()
                            .map_err(|e| format!("--posture: {e}"))?,
                    );
                }
                "--help" | "-h" => return Err(usage),
                other if own(other) => mine.push(arg),
                other => return Err(format!("unknown argument {other:?}; {usage}")),
            }
        }
        Ok((launch, mine))
    }

    /// The command-line arguments that give another program (the background host started by
    /// the window, or the window started by the host) this launch's options. What came from
    /// the environment travels with the environment, which the child inherits.
    pub fn to_args(&self) -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = Vec::new();
        if self.demo {
            args.push("--demo".into());
        }
        if let Some(policy) = &self.policy {
            args.push("--policy".into());
            args.push(policy.clone().into_os_string());
        }
        if let Some(posture) = self.posture {
            args.push("--posture".into());
            args.push(posture.as_str().into());
        }
        if !self.bridge {
            args.push("--no-bridge".into());
        }
        args
    }
}

/// `GATEHOUSE_PACKAGE_SOURCES` as the CLI takes it: a file's path. Set but empty is refused,
/// as the CLI's `--package-sources` refuses an empty value, rather than read as unset.
pub fn package_sources_from(value: Option<std::ffi::OsString>) -> Result<Option<PathBuf>, String> {
    match value {
        None => Ok(None),
        Some(value) if value.is_empty() => Err(
            "GATEHOUSE_PACKAGE_SOURCES is empty: name a package-sources file, or unset it to use the system's"
                .into(),
        ),
        Some(value) => Ok(Some(PathBuf::from(value))),
    }
}

/// The confinement's tools from `GATEHOUSE_BWRAP` and `GATEHOUSE_SANDBOX_INIT` as the CLI
/// takes them: unset, the host finds them; set but empty is refused rather than read as unset.
pub fn sandbox_tools_from(
    bwrap: Option<std::ffi::OsString>,
    init: Option<std::ffi::OsString>,
) -> Result<SandboxTools, String> {
    let path = |value: Option<std::ffi::OsString>, name: &str, what: &str| match value {
        None => Ok(None),
        Some(value) if value.is_empty() => Err(format!(
            "{name} is empty: name {what}, or unset it to let Gatehouse find it"
        )),
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

/// The user's paths, as Tauri's path resolver gave them to the app before the split (it uses
/// the same `dirs` rules), shared with the `gatehouse` CLI: `$XDG_CONFIG_HOME/gatehouse` for
/// `servers.json` and trust roots, `$XDG_DATA_HOME/gatehouse` for the audit log.
pub fn user_paths() -> Result<DeskPaths, String> {
    let config = dirs::config_dir()
        .ok_or("no config directory: set HOME (or XDG_CONFIG_HOME)")?
        .join("gatehouse");
    let data = dirs::data_dir()
        .ok_or("no data directory: set HOME (or XDG_DATA_HOME)")?
        .join("gatehouse");
    Ok(DeskPaths {
        config: config.join("servers.json"),
        logs: data.join("logs"),
        data,
        user_trust_roots: Some(config.join("trust-roots")),
        system_trust_roots: PathBuf::from(SYSTEM_TRUST_ROOTS),
    })
}

/// Where saved resources go: the launch's directory, else `$GATEHOUSE_DOWNLOAD_DIR`, else the
/// user's download directory, else `~/Downloads`.
pub fn download_dir(launch: &Launch) -> Option<PathBuf> {
    launch
        .downloads
        .clone()
        .or_else(|| {
            std::env::var_os("GATEHOUSE_DOWNLOAD_DIR")
                .filter(|dir| !dir.is_empty())
                .map(PathBuf::from)
        })
        .or_else(dirs::download_dir)
        .or_else(|| dirs::home_dir().map(|home| home.join("Downloads")))
}

/// Where the AI clients' files are (the home and config directories, as the CLI reads them)
/// and the `gatehouse` command line they will launch.
pub fn client_setup(launch: &Launch) -> Option<ClientSetup> {
    if let Some(setup) = &launch.clients {
        return Some(setup.clone());
    }
    let home = dirs::home_dir()?;
    let config_dir = dirs::config_dir().unwrap_or_else(|| home.join(".config"));
    let exe = std::env::current_exe().ok();
    let gatehouse = locate_gatehouse(exe.as_deref(), std::env::var_os("PATH").as_deref());
    Some(ClientSetup {
        home,
        config_dir,
        gatehouse,
    })
}

/// Opens the desk as the app does: the launch's options and paths (or the user's), the
/// keychain, and every change told to `hub`. The caller serves the bridge and connects the
/// servers (both need a runtime), and forwards resource updates with
/// [`crate::events::forward_resource_updates`].
pub fn open_desk(launch: &Launch, hub: &EventHub) -> Result<Arc<Desk>, String> {
    let paths = match launch.paths.clone() {
        Some(paths) => paths,
        None => user_paths()?,
    };
    let mut options = DeskOptions::new(paths, system_clock());
    options.demo = launch.demo;
    options.policy = launch.policy.clone();
    options.posture_override = launch.posture;
    options.demo_server = launch.demo_server.clone();
    options.package_sources = launch.package_sources.clone();
    options.sandbox = launch.sandbox.clone();
    if let Some(opener) = &launch.opener {
        options.opener = opener.clone();
    }
    let secrets = launch
        .secrets
        .clone()
        .unwrap_or_else(|| Arc::new(gatehouse_host::KeyringStore));
    // The desk's sign-in cards are the host's sign-in UI (`options.sign_in`).
    let desk = Desk::open_with_sign_ins(options, secrets, hub.notifier(), hub.sign_in_notifier())
        .map_err(|e| e.to_string())?;
    if let Some(dir) = download_dir(launch) {
        desk.set_download_dir(dir);
    }
    if let Some(setup) = client_setup(launch) {
        desk.set_client_setup(setup);
    }
    Ok(desk)
}

/// `$env` when set (and not empty), else `name` in this program's directory if it is there:
/// how the window finds the host and the host the window.
pub fn program_beside(env: &str, name: &str) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(env).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let exe = std::env::current_exe().ok()?;
    let beside = exe.parent()?.join(name);
    beside.is_file().then_some(beside)
}

/// Opens (truncating) the log file of a detached process in the private directory of the
/// sockets, making that directory (0700) if missing; `None` when it cannot (the output is
/// then dropped).
pub fn log_file(path: &std::path::Path) -> Option<std::fs::File> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent()?;
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return None,
    }
    std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .ok()
}

/// Starts `program args` detached, so that neither the window's end nor its terminal's ends
/// it: a process group of its own (a terminal's Ctrl+C and hang-up go to the foreground group
/// only), stdin from /dev/null, stdout and stderr to `log` (or nowhere: a closed terminal
/// must not break its writes), and reaped by a thread when it ends, which then runs
/// `on_exit`. (A new session would need `setsid` in `pre_exec`, which is unsafe code; the
/// host also ignores SIGHUP.)
pub fn spawn_detached(
    program: &std::path::Path,
    args: &[std::ffi::OsString],
    log: Option<std::fs::File>,
    on_exit: impl FnOnce() + Send + 'static,
) -> std::io::Result<u32> {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let (out, err) = match log.and_then(|f| f.try_clone().ok().map(|g| (f, g))) {
        Some((out, err)) => (Stdio::from(out), Stdio::from(err)),
        None => (Stdio::null(), Stdio::null()),
    };
    let mut child = std::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()?;
    let pid = child.id();
    std::thread::Builder::new()
        .name("gatehouse-reaper".into())
        .spawn(move || {
            let _ = child.wait();
            on_exit();
        })?;
    Ok(pid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    #[test]
    fn package_sources_come_from_a_named_file_and_an_empty_name_is_refused() {
        assert_eq!(package_sources_from(None), Ok(None));
        assert_eq!(
            package_sources_from(Some(OsString::from("mirror/package-sources.json"))),
            Ok(Some(PathBuf::from("mirror/package-sources.json")))
        );
        let empty = package_sources_from(Some(OsString::new())).unwrap_err();
        assert!(empty.contains("GATEHOUSE_PACKAGE_SOURCES"), "{empty}");
    }

    #[test]
    fn sandbox_tools_come_from_named_programs_and_an_empty_name_is_refused() {
        let unset = sandbox_tools_from(None, None).unwrap();
        assert_eq!((unset.bwrap, unset.init), (None, None));
        let set = sandbox_tools_from(
            Some(OsString::from("bin/bwrap")),
            Some(OsString::from("lib/gatehouse-sandbox-init")),
        )
        .unwrap();
        assert_eq!(set.bwrap, Some(PathBuf::from("bin/bwrap")));
        assert_eq!(set.init, Some(PathBuf::from("lib/gatehouse-sandbox-init")));
        let empty = sandbox_tools_from(Some(OsString::new()), None).unwrap_err();
        assert!(empty.contains("GATEHOUSE_BWRAP is empty"), "{empty}");
        let empty = sandbox_tools_from(None, Some(OsString::new())).unwrap_err();
        assert!(empty.contains("GATEHOUSE_SANDBOX_INIT is empty"), "{empty}");
    }

    fn args(list: &[&str]) -> Vec<String> {
        std::iter::once("gatehouse-background")
            .chain(list.iter().copied())
            .map(String::from)
            .collect()
    }

    #[test]
    fn the_options_given_on_travel_to_the_other_process_and_parse_back_the_same() {
        let (launch, _) = Launch::from_args_with(
            args(&[
                "--demo",
                "--policy",
                "p.toml",
                "--posture",
                "warn",
                "--no-bridge",
            ]),
            |_| false,
        )
        .unwrap();
        let again: Vec<String> = launch
            .to_args()
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        assert_eq!(
            again,
            [
                "--demo",
                "--policy",
                "p.toml",
                "--posture",
                "warn",
                "--no-bridge"
            ]
        );
        let bare = Launch {
            bridge: true,
            ..Launch::default()
        };
        assert!(bare.to_args().is_empty());
    }

    #[test]
    fn a_programs_own_flags_are_returned_and_others_refused() {
        let (launch, mine) =
            Launch::from_args_with(args(&["--quit", "--demo"]), |a| a == "--quit").unwrap();
        assert!(launch.demo);
        assert_eq!(mine, ["--quit"]);
        let refused = Launch::from_args_with(args(&["--quit"]), |_| false)
            .err()
            .unwrap();
        assert!(refused.contains("unknown argument \"--quit\""), "{refused}");
        assert!(refused.contains("usage: gatehouse-background"), "{refused}");
    }
}
