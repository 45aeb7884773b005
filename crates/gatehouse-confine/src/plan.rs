//! The sandbox as a command line: what the host hands bubblewrap, and what bubblewrap hands our
//! in-sandbox init. Pure: the host decides which paths exist; this only orders them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Where the init is bound inside the sandbox.
pub const INIT_PATH: &str = "/run/gatehouse/init";
/// Where the per-server proxy's unix socket is bound inside the sandbox.
pub const PROXY_SOCKET_PATH: &str = "/run/gatehouse/proxy.sock";
/// The forwarder's port on the sandbox's own loopback.
pub const PROXY_PORT: u16 = 3128;
/// The directory holding the init and the proxy socket (a tmpfs `/run` holds only it).
pub const RUN_DIR: &str = "/run/gatehouse";

/// Candidates the host binds read-only when they exist (symlinks recreated as symlinks).
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/mime.types",
    "/etc/os-release",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
];

/// Added when the network is shared ("hosts": "any").
pub const SHARED_NETWORK_READ: &[&str] = &["/etc/resolv.conf", "/etc/hosts"];

/// Everything the host decided about one server's sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPlan {
    /// Host path of gatehouse-sandbox-init.
    pub init: PathBuf,
    /// Absolute; the same path inside.
    pub program: PathBuf,
    pub args: Vec<String>,
    /// "/" or inside a bound path.
    pub cwd: PathBuf,
    /// Existing real dirs/files.
    pub system_read: Vec<PathBuf>,
    /// (target as read by readlink, link path), e.g. ("usr/lib", "/lib").
    pub symlinks: Vec<(PathBuf, PathBuf)>,
    /// The server's own code (exe file, store tree, interpreter prefix).
    pub code_read: Vec<PathBuf>,
    /// Resolved, existing grants.
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
    /// The user's real HOME path (the private home is bound here).
    pub user_home: PathBuf,
    /// Host dir, rw.
    pub private_home: PathBuf,
    /// Host dir, rw, bound at /tmp.
    pub private_tmp: PathBuf,
    /// The complete environment inside.
    pub env: Vec<(String, String)>,
    /// Some for `Network::Hosts`: host path of the per-server proxy socket.
    pub proxy_socket: Option<PathBuf>,
    /// `Network::Any`.
    pub share_network: bool,
    pub processes: u32,
    pub memory_mib: u32,
}

/// How one path is bound among the private dirs, the server's code and its grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Bind {
    // At the same path the later kind wins: a grant of the home itself over the private home, a
    // write grant over a read grant, and the server's own code stays read-only even when a write
    // grant names it.
    Private,
    Read,
    Write,
    Code,
}

/// Everything after "bwrap": options, then "--", INIT_PATH, init args, "--", program, args.
///
/// Order (later mounts cover earlier ones at or below the same path): namespaces and process
/// options; `--clearenv` and the environment; system paths read-only; symlinks; `/proc`, `/dev`,
/// a tmpfs `/run` with `/run/gatehouse` (before the grants, so a granted socket under `/run`
/// survives); then, parents before children, the private home at the user's home path, the
/// private tmp at `/tmp`, the server's code and its grants (so a write grant under a read grant
/// stays writable, a read grant under a write grant stays read-only, a grant under the home
/// covers the private home and a grant above it, such as "/home", does not); the init
/// read-only; the proxy socket; `--chdir`.
pub fn bwrap_args(plan: &SandboxPlan) -> Vec<OsString> {
    let mut out: Vec<OsString> = Vec::new();
    let mut push = |items: &[&dyn AsRefOs]| {
        for item in items {
            out.push(item.to_os());
        }
    };
    push(&[
        &"--die-with-parent",
        &"--new-session",
        &"--unshare-user",
        &"--unshare-pid",
        &"--unshare-ipc",
        &"--unshare-uts",
        &"--unshare-cgroup-try",
    ]);
    if !plan.share_network {
        push(&[&"--unshare-net"]);
    }
    push(&[&"--cap-drop", &"ALL", &"--clearenv"]);
    for (key, value) in &plan.env {
        push(&[&"--setenv", key, value]);
    }
    for path in &plan.system_read {
        push(&[&"--ro-bind", path, path]);
    }
    for (target, link) in &plan.symlinks {
        push(&[&"--symlink", target, link]);
    }
    push(&[
        &"--proc", &"/proc", &"--dev", &"/dev", &"--tmpfs", &"/run", &"--dir", &RUN_DIR,
    ]);

    // (depth of the destination, kind, source, destination)
    let mut binds: Vec<(usize, Bind, &Path, &Path)> = vec![
        (
            depth(&plan.user_home),
            Bind::Private,
            &plan.private_home,
            &plan.user_home,
        ),
        (
            depth(Path::new("/tmp")),
            Bind::Private,
            &plan.private_tmp,
            Path::new("/tmp"),
        ),
    ];
    for (kind, list) in [
        (Bind::Code, &plan.code_read),
        (Bind::Read, &plan.read),
        (Bind::Write, &plan.write),
    ] {
        for path in list {
            binds.push((depth(path), kind, path, path));
        }
    }
    // Parents before children, so a grant of "/home" cannot cover the private home. Stable:
    // among equal depth and kind, the host's order is kept.
    binds.sort_by_key(|(depth, kind, _, _)| (*depth, *kind));
    for (_, kind, source, dest) in binds {
        let option = match kind {
            Bind::Read | Bind::Code => "--ro-bind",
            Bind::Private | Bind::Write => "--bind",
        };
        push(&[&option, &source, &dest]);
    }

    push(&[&"--ro-bind", &plan.init, &INIT_PATH]);
    if let Some(socket) = &plan.proxy_socket {
        push(&[&"--bind", socket, &PROXY_SOCKET_PATH]);
    }
    push(&[&"--chdir", &plan.cwd, &"--", &INIT_PATH]);
    for arg in init_args(plan) {
        out.push(arg.into());
    }
    out.push("--".into());
    out.push(plan.program.clone().into_os_string());
    out.extend(plan.args.iter().map(OsString::from));
    out
}

fn depth(path: &Path) -> usize {
    path.components().count()
}

/// Anything that becomes one argument.
trait AsRefOs {
    fn to_os(&self) -> OsString;
}
impl AsRefOs for &str {
    fn to_os(&self) -> OsString {
        OsString::from(*self)
    }
}
impl AsRefOs for String {
    fn to_os(&self) -> OsString {
        OsString::from(self)
    }
}
impl AsRefOs for PathBuf {
    fn to_os(&self) -> OsString {
        self.clone().into_os_string()
    }
}
impl AsRefOs for &Path {
    fn to_os(&self) -> OsString {
        self.as_os_str().to_os_string()
    }
}

/// The init's own arguments (shared with gatehouse-sandbox's parser, so both sides agree):
/// ["--memory-mib", N, "--processes", N, ("--proxy-port", PROXY_PORT, "--proxy-socket",
/// PROXY_SOCKET_PATH)?]
pub fn init_args(plan: &SandboxPlan) -> Vec<String> {
    let mut out = vec![
        "--memory-mib".to_string(),
        plan.memory_mib.to_string(),
        "--processes".to_string(),
        plan.processes.to_string(),
    ];
    if plan.proxy_socket.is_some() {
        out.extend([
            "--proxy-port".to_string(),
            PROXY_PORT.to_string(),
            "--proxy-socket".to_string(),
            PROXY_SOCKET_PATH.to_string(),
        ]);
    }
    out
}

/// The arguments the init starts its forwarder with (itself again):
/// ["--forward", "--proxy-port", PORT, "--proxy-socket", SOCKET]. Parsed by [`parse_init_args`].
pub fn forward_args(port: u16, socket: &Path) -> Vec<String> {
    vec![
        "--forward".to_string(),
        "--proxy-port".to_string(),
        port.to_string(),
        "--proxy-socket".to_string(),
        socket.to_string_lossy().into_owned(),
    ]
}

/// What the init is asked to run: the server, with its bounds and optional proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitArgs {
    pub memory_mib: u32,
    pub processes: u32,
    /// (port on the sandbox's loopback, unix socket of the host's proxy).
    pub proxy: Option<(u16, PathBuf)>,
    pub program: PathBuf,
    pub args: Vec<String>,
}

/// What the init does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InitCommand {
    /// Bound itself and exec the server.
    Run(InitArgs),
    /// Print what the host's self-check needs to see, then exit.
    SelfCheck,
    /// Be the forwarder: accept on 127.0.0.1:port, pipe each connection to the socket.
    Forward { port: u16, socket: PathBuf },
}

/// Parses the init's argv (after argv[0]): init args, "--", program, args. Also "--self-check"
/// alone, and the forwarder's [`forward_args`]. Every option at most once.
pub fn parse_init_args(argv: &[String]) -> Result<InitCommand, String> {
    if argv.len() == 1 && argv[0] == "--self-check" {
        return Ok(InitCommand::SelfCheck);
    }
    let forward = argv.first().is_some_and(|a| a == "--forward");
    let options_end = argv.iter().position(|a| a == "--");
    let options = match (forward, options_end) {
        (true, _) => &argv[1..],
        (false, Some(end)) => &argv[..end],
        (false, None) => {
            return Err("expected the init's options, \"--\", then the server's program".into());
        }
    };
    let mut memory_mib = None;
    let mut processes = None;
    let mut port = None;
    let mut socket = None;
    let mut i = 0;
    while i < options.len() {
        let name = options[i].as_str();
        let Some(value) = options.get(i + 1) else {
            return Err(format!("option {name:?} needs a value"));
        };
        let duplicate = || format!("option {name:?} given twice");
        match name {
            "--memory-mib" => {
                let n = number(name, value, 1, crate::MAX_MEMORY_MIB)?;
                if memory_mib.replace(n).is_some() {
                    return Err(duplicate());
                }
            }
            "--processes" => {
                let n = number(name, value, 0, crate::MAX_PROCESSES)?;
                if processes.replace(n).is_some() {
                    return Err(duplicate());
                }
            }
            "--proxy-port" => {
                let n = number(name, value, 1, u32::from(u16::MAX))?;
                let n = u16::try_from(n).map_err(|_| format!("option {name:?}: bad port"))?;
                if port.replace(n).is_some() {
                    return Err(duplicate());
                }
            }
            "--proxy-socket" => {
                if !value.starts_with('/') {
                    return Err(format!(
                        "option {name:?} needs an absolute path, got {value:?}"
                    ));
                }
                if socket.replace(PathBuf::from(value)).is_some() {
                    return Err(duplicate());
                }
            }
            _ => return Err(format!("unknown option {name:?}")),
        }
        i += 2;
    }
    let proxy = match (port, socket) {
        (Some(port), Some(socket)) => Some((port, socket)),
        (None, None) => None,
        _ => return Err("--proxy-port and --proxy-socket go together".into()),
    };
    if forward {
        if memory_mib.is_some() || processes.is_some() {
            return Err("--forward takes only --proxy-port and --proxy-socket".into());
        }
        let Some((port, socket)) = proxy else {
            return Err("--forward needs --proxy-port and --proxy-socket".into());
        };
        return Ok(InitCommand::Forward { port, socket });
    }
    let (Some(memory_mib), Some(processes)) = (memory_mib, processes) else {
        return Err("--memory-mib and --processes are required".into());
    };
    let rest = match options_end {
        Some(end) => &argv[end + 1..],
        None => &[],
    };
    let Some((program, args)) = rest.split_first() else {
        return Err("no program after \"--\"".into());
    };
    if !program.starts_with('/') {
        return Err(format!(
            "the program must be an absolute path, got {program:?}"
        ));
    }
    Ok(InitCommand::Run(InitArgs {
        memory_mib,
        processes,
        proxy,
        program: PathBuf::from(program),
        args: args.to_vec(),
    }))
}

fn number(name: &str, value: &str, min: u32, max: u32) -> Result<u32, String> {
    let parsed = if value.bytes().all(|b| b.is_ascii_digit()) {
        value.parse::<u32>().ok()
    } else {
        None
    };
    match parsed {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "option {name:?} needs a whole number from {min} to {max}, got {value:?}"
        )),
    }
}
