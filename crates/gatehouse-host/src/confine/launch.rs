//! One confined launch: the sandbox plan (what is bound where, the environment inside), the
//! per-server egress proxy when the server may reach named hosts, and the stdio launch
//! rewritten to run `bwrap` with our init in front of the server.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use gatehouse_confine::{
    Network, PROXY_PORT, SHARED_NETWORK_READ, SYSTEM_READ, SandboxPlan, bwrap_args,
};

use super::view::Sandboxing;
use super::proxy::{EgressProxy, RefusalSink};
use crate::HostError;
use crate::stdio::StdioLaunch;

/// What a confined launch keeps alive beside the server: its egress proxy (dropped with the
/// connection, which closes its socket).
#[derive(Default)]
pub(crate) struct SandboxedLaunch {
    pub proxy: Option<EgressProxy>,
}

impl std::fmt::Debug for SandboxedLaunch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxedLaunch")
            .field(
                "proxy",
                &self.proxy.as_ref().map(|p| p.socket_path().to_path_buf()),
            )
            .finish()
    }
}

/// Top-level directories the system binds whole: code under them needs no bind of its own.
fn under_system(path: &Path) -> bool {
    SYSTEM_READ
        .iter()
        .any(|s| !s.starts_with("/etc") && path.starts_with(s))
}

/// The server's own code to bind read-only: the program as named and as resolved (each its
/// installation prefix when it sits in a `bin` directory, e.g. a pyenv version or a
/// virtualenv), plus `extra` (a package's store tree, an unattested server's script files).
/// Never the home itself or anything above it, nor `/`.
pub(crate) fn code_paths(program: &Path, home: &Path, extra: &[PathBuf]) -> Vec<PathBuf> {
    let too_wide = |p: &Path| p.parent().is_none() || home.starts_with(p);
    let mut out: Vec<PathBuf> = Vec::new();
    let real = std::fs::canonicalize(program).ok();
    for path in std::iter::once(program.to_path_buf()).chain(real) {
        let prefix = path
            .parent()
            .filter(|dir| dir.file_name().is_some_and(|n| n == "bin"))
            .and_then(Path::parent)
            .filter(|prefix| !too_wide(prefix))
            .map(Path::to_path_buf)
            .unwrap_or(path);
        if !under_system(&prefix) && !too_wide(&prefix) && !out.contains(&prefix) {
            out.push(prefix);
        }
    }
    for path in extra {
        if !under_system(path) && !too_wide(path) && !out.contains(path) {
            out.push(path.clone());
        }
    }
    // A path inside another one is bound with it.
    let all = out.clone();
    out.retain(|p| !all.iter().any(|q| q != p && p.starts_with(q)));
    out
}

/// Directories that hold homes or many unrelated things: an unattested server's code is
/// bound as the folder just below one of these (or below the person's home, or `/`), never
/// one of them whole.
const SHARED_ROOTS: &[&str] = &[
    "/home",
    "/root",
    "/tmp",
    "/var",
    "/var/tmp",
    "/mnt",
    "/media",
    "/srv",
    "/opt",
    "/usr/local",
];

/// Never anyone's code, whatever a server names under them: the kernel's views, devices, the
/// system's configuration and boot files, and the runtime directory (sockets, other users').
const NEVER_CODE: &[&str] = &["/proc", "/sys", "/dev", "/etc", "/boot", "/run"];

/// The folders holding `paths`, for an unattested server: each path's highest ancestor
/// below the person's home, `/` or a shared root (`~/projects` for
/// `~/projects/srv/index.js`, `~/.pyenv` for a pyenv shim, `/opt/tool` for
/// `/opt/tool/bin/x`), so an interpreter finds its modules and a package its dependencies.
/// Never the home, `/`, a shared root or anything under the system's read-only part.
pub(crate) fn holding_folders(paths: &[PathBuf], home: &Path) -> Vec<PathBuf> {
    let stop = |dir: &Path| {
        dir.parent().is_none() || dir == home || SHARED_ROOTS.iter().any(|r| dir == Path::new(r))
    };
    let mut out: Vec<PathBuf> = Vec::new();
    for path in paths {
        if !path.is_absolute() || under_system(path) || stop(path) || home.starts_with(path) {
            continue;
        }
        let mut folder = path.as_path();
        while let Some(parent) = folder.parent() {
            if stop(parent) {
                break;
            }
            folder = parent;
        }
        let forbidden = NEVER_CODE.iter().any(|r| folder.starts_with(r));
        if !forbidden && !out.iter().any(|p| folder.starts_with(p)) {
            out.retain(|p| !p.starts_with(folder));
            out.push(folder.to_path_buf());
        }
    }
    out
}

/// The unattested server's arguments that are existing absolute paths (its script, its
/// package's directory, a folder it serves).
pub(crate) fn argument_paths(args: &[String]) -> Vec<PathBuf> {
    args.iter()
        .filter_map(|a| {
            // `--root=/srv/x` names a path too.
            let value = a.split_once('=').map_or(a.as_str(), |(_, v)| v);
            let path = PathBuf::from(value);
            (path.is_absolute() && path.exists()).then_some(path)
        })
        .collect()
}

/// The system's read-only part as it is on this machine: real directories and files bound,
/// symlinks (`/bin` → `usr/bin`) recreated as symlinks.
fn system_view(share_network: bool) -> (Vec<PathBuf>, Vec<(PathBuf, PathBuf)>) {
    let (mut read, mut links) = (Vec::new(), Vec::new());
    for candidate in SYSTEM_READ {
        let path = Path::new(candidate);
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(path) {
                    links.push((target, path.to_path_buf()));
                }
            }
            Ok(_) => read.push(path.to_path_buf()),
            Err(_) => {}
        }
    }
    if share_network {
        // Bound by content (a bind follows the link): `/etc/resolv.conf` often points into
        // `/run`, which is the sandbox's own.
        read.extend(
            SHARED_NETWORK_READ
                .iter()
                .map(PathBuf::from)
                .filter(|p| p.exists()),
        );
    }
    (read, links)
}

/// The plan of the self-check: the system, a scratch home and tmp, no network, no code.
pub(crate) fn minimal_plan(init: &Path, scratch: &Path) -> SandboxPlan {
    let (system_read, symlinks) = system_view(false);
    SandboxPlan {
        init: init.to_path_buf(),
        program: PathBuf::from("/bin/true"),
        args: Vec::new(),
        cwd: PathBuf::from("/"),
        system_read,
        symlinks,
        code_read: Vec::new(),
        read: Vec::new(),
        write: Vec::new(),
        user_home: PathBuf::from("/home/gatehouse-self-check"),
        private_home: scratch.to_path_buf(),
        private_tmp: scratch.to_path_buf(),
        // HOME is the private home, which the self-check expects to find empty.
        env: vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("HOME".into(), "/home/gatehouse-self-check".into()),
        ],
        proxy_socket: None,
        share_network: false,
        processes: 0,
        memory_mib: gatehouse_confine::DEFAULT_MEMORY_MIB,
    }
}

/// A directory of the host's own, created 0700 when missing.
fn private_dir(path: &Path) -> Result<(), String> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| format!("cannot restrict {}: {e}", path.display()))
}

/// The private home and tmp of `server` under the data directory: one per server name, kept
/// between runs (a server's cache survives a restart), never shared.
fn private_dirs(data: &Path, server: &str) -> Result<(PathBuf, PathBuf), String> {
    use sha2::Digest;
    let digest = hex::encode(sha2::Sha256::digest(server.as_bytes()));
    let id = format!(
        "{}-{}",
        crate::secrets::to_identifier(server, '_'),
        &digest[..8]
    );
    let root = data.join("sandbox").join(id);
    let (home, tmp) = (root.join("home"), root.join("tmp"));
    private_dir(&root)?;
    private_dir(&home)?;
    private_dir(&tmp)?;
    Ok((home, tmp))
}

/// Where proxy sockets live: `$XDG_RUNTIME_DIR/gatehouse/px` (short paths: a unix socket's
/// path is limited to 108 bytes), else the data directory's `px`.
fn socket_dir(data: &Path) -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(runtime) if runtime.is_absolute() && runtime.is_dir() => {
            runtime.join("gatehouse").join("px")
        }
        _ => data.join("px"),
    }
}

/// Rewrites `launch` to run the server confined as `sandbox` says: starts the egress proxy
/// when the server may reach named hosts, builds the plan, and makes the launch run
/// `bwrap` (still under `setsid`) with the plan's arguments. `script_args`: an unattested
/// server, whose existing absolute file arguments are its code.
pub(crate) async fn sandbox_launch(
    server: &str,
    launch: &mut StdioLaunch,
    sandbox: &Sandboxing,
    script_args: bool,
    clock: crate::tap::Clock,
    sink: RefusalSink,
) -> Result<SandboxedLaunch, HostError> {
    let fail = |detail: String| HostError::Spawn {
        server: server.to_string(),
        command: launch.command.clone(),
        detail: format!("the sandbox could not be prepared: {detail}"),
    };
    let program = crate::admission::resolve_launch_program(
        &launch.command,
        launch.cwd.as_deref(),
        &launch.env,
    )
    .map_err(|e| {
        fail(format!(
            "{e}; is it installed and on PATH (or give an absolute path)?"
        ))
    })?;
    let program = if program.is_absolute() {
        program
    } else {
        std::path::absolute(&program).map_err(|e| fail(e.to_string()))?
    };
    // Admission decided the code (shown in the view); a bound program is what it hashed.
    let code_read = if script_args {
        sandbox.code.clone()
    } else {
        code_paths(&program, &sandbox.home, &sandbox.code)
    };
    let grants = &sandbox.grants;
    let resolve = |paths: &[gatehouse_confine::PathGrant]| -> Vec<PathBuf> {
        paths
            .iter()
            .map(|g| g.resolve(&sandbox.home))
            .filter(|p| {
                let exists = p.exists();
                if !exists {
                    tracing::warn!(server, path = %p.display(), "a granted path does not exist; not bound");
                }
                exists
            })
            .collect()
    };
    let (read, write) = (resolve(&grants.read), resolve(&grants.write));
    let share_network = matches!(grants.network, Network::Any);
    let (system_read, symlinks) = system_view(share_network);
    let (private_home, private_tmp) = private_dirs(&sandbox.data, server).map_err(&fail)?;

    let mut env: Vec<(String, String)> = launch.env.clone();
    let mut set = |key: &str, value: String| {
        env.retain(|(k, _)| k != key);
        env.push((key.to_string(), value));
    };
    set("HOME", sandbox.home.display().to_string());
    set("TMPDIR", "/tmp".into());
    if !launch.env.iter().any(|(k, _)| k == "PATH") {
        set(
            "PATH",
            std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into()),
        );
    }
    for key in ["LANG", "LC_ALL"] {
        if let Ok(value) = std::env::var(key)
            && !launch.env.iter().any(|(k, _)| k == key)
        {
            set(key, value);
        }
    }
    let mut kept = SandboxedLaunch::default();
    if let Network::Hosts(_) = &grants.network {
        let dir = socket_dir(&sandbox.data);
        if let Some(parent) = dir.parent() {
            private_dir(parent).map_err(&fail)?;
        }
        let proxy = EgressProxy::start(server, grants.clone(), &dir, clock, sink)
            .await
            .map_err(|e| {
                fail(format!(
                    "the egress proxy did not start in {}: {e}",
                    dir.display()
                ))
            })?;
        let url = format!("http://127.0.0.1:{PROXY_PORT}");
        for key in [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
        ] {
            set(key, url.clone());
        }
        set("NO_PROXY", String::new());
        set("no_proxy", String::new());
        set("NODE_USE_ENV_PROXY", "1".into());
        kept.proxy = Some(proxy);
    }
    // The working directory inside: the configured one when the sandbox shows it, else `/`.
    let visible = |dir: &Path| {
        under_system(dir)
            || code_read
                .iter()
                .chain(&read)
                .chain(&write)
                .any(|p| dir.starts_with(p))
    };
    // An unattested server without a configured directory runs where the host runs, as it
    // would unconfined (admission bound that directory read-only as its code).
    let cwd = launch
        .cwd
        .clone()
        .or_else(|| script_args.then(|| std::env::current_dir().ok()).flatten())
        .filter(|dir| dir.is_absolute() && visible(dir))
        .unwrap_or_else(|| PathBuf::from("/"));
    let plan = SandboxPlan {
        init: sandbox.init.clone(),
        program,
        args: launch.args.clone(),
        cwd,
        system_read,
        symlinks,
        code_read,
        read,
        write,
        user_home: sandbox.home.clone(),
        private_home,
        private_tmp,
        env,
        proxy_socket: kept.proxy.as_ref().map(|p| p.socket_path().to_path_buf()),
        share_network,
        processes: grants.processes,
        memory_mib: grants.memory_mib,
    };
    let args = bwrap_args(&plan)
        .into_iter()
        .map(|a| {
            a.into_string()
                .map_err(|a| fail(format!("a path is not UTF-8: {}", a.to_string_lossy())))
        })
        .collect::<Result<Vec<_>, _>>()?;
    launch.command = sandbox.bwrap.display().to_string();
    launch.args = args;
    // The environment is inside the plan (bwrap clears its own before the init starts).
    launch.env = Vec::new();
    launch.cwd = Some(PathBuf::from("/"));
    Ok(kept)
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_unattested_servers_code_is_the_folder_holding_it_never_home_or_a_shared_root() {
        let home = Path::new("/home/u");
        let folders = holding_folders(
            &[
                PathBuf::from("/home/u/projects/srv/node_modules/x/dist/index.js"),
                PathBuf::from("/home/u/projects/other"),
                PathBuf::from("/home/u/.pyenv/shims/python3"),
                PathBuf::from("/opt/tool/bin/tool"),
                PathBuf::from("/tmp/t1/run/server.py"),
                PathBuf::from("/data/repo/server.py"),
                // Never bound: the home, above it, a shared root, system and kernel paths.
                PathBuf::from("/home/u"),
                PathBuf::from("/home"),
                PathBuf::from("/"),
                PathBuf::from("/usr/bin/python3"),
                PathBuf::from("/proc/self/root/x"),
                PathBuf::from("/etc/passwd"),
                PathBuf::from("relative/path"),
            ],
            home,
        );
        assert_eq!(
            folders,
            [
                PathBuf::from("/home/u/projects"),
                PathBuf::from("/home/u/.pyenv"),
                PathBuf::from("/opt/tool"),
                PathBuf::from("/tmp/t1"),
                PathBuf::from("/data"),
            ]
        );
    }

    #[test]
    fn path_arguments_are_found_also_after_an_equals_sign() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("server.py");
        std::fs::write(&file, "").unwrap();
        let args = [
            file.display().to_string(),
            format!("--root={}", dir.path().display()),
            "--flag".to_string(),
            dir.path().join("missing").display().to_string(),
        ];
        assert_eq!(argument_paths(&args), [file, dir.path().to_path_buf()]);
    }

    use super::*;

    #[test]
    fn code_is_the_program_or_its_prefix_never_the_home() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let prefix = dir.path().join("pyenv/versions/3.12");
        std::fs::create_dir_all(prefix.join("bin")).unwrap();
        std::fs::create_dir_all(home.join("bin")).unwrap();
        std::fs::write(prefix.join("bin/python3"), "").unwrap();
        std::fs::write(home.join("bin/tool"), "").unwrap();
        std::fs::write(home.join("server.py"), "").unwrap();
        assert_eq!(
            code_paths(&prefix.join("bin/python3"), &home, &[]),
            std::slice::from_ref(&prefix)
        );
        // `~/bin/tool`: its prefix would be the whole home, so only the file.
        assert_eq!(
            code_paths(&home.join("bin/tool"), &home, &[]),
            [home.join("bin/tool")]
        );
        // System programs need nothing of their own; an extra inside another is dropped.
        assert_eq!(
            code_paths(
                Path::new("/usr/bin/python3"),
                &home,
                &[
                    home.join("server.py"),
                    home.clone(),
                    dir.path().to_path_buf()
                ]
            ),
            [home.join("server.py")]
        );
    }
}
