//! The init under the real bubblewrap, with the command line `gatehouse_confine::bwrap_args`
//! builds. Needs `bwrap` (the Debian package bubblewrap, installed by scripts/install-deps.sh)
//! and unprivileged user namespaces (or root, as in CI).

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::mpsc;

use gatehouse_confine::{SYSTEM_READ, SandboxPlan, bwrap_args};

const INIT: &str = env!("CARGO_BIN_EXE_gatehouse-sandbox-init");
/// The home path inside the sandbox; the private home is bound there.
const HOME_INSIDE: &str = "/home/sandbox-user";

struct Sandbox {
    _dirs: tempfile::TempDir,
    plan: SandboxPlan,
}

fn bwrap() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("bwrap"))
        .find(|p| p.is_file())
        .expect("bwrap is not on PATH: install the bubblewrap package (scripts/install-deps.sh)")
}

fn new_sandbox(program: &str, args: &[&str]) -> Sandbox {
    let dirs = tempfile::tempdir().unwrap();
    let home = dirs.path().join("home");
    let tmp = dirs.path().join("tmp");
    std::fs::create_dir(&home).unwrap();
    std::fs::create_dir(&tmp).unwrap();
    let mut system_read = Vec::new();
    let mut symlinks = Vec::new();
    for candidate in SYSTEM_READ {
        let path = Path::new(candidate);
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                symlinks.push((std::fs::read_link(path).unwrap(), path.to_path_buf()));
            }
            Ok(_) => system_read.push(path.to_path_buf()),
            Err(_) => {}
        }
    }
    let plan = SandboxPlan {
        init: PathBuf::from(INIT),
        program: PathBuf::from(program),
        args: args.iter().map(|a| a.to_string()).collect(),
        cwd: PathBuf::from("/"),
        system_read,
        symlinks,
        code_read: Vec::new(),
        read: Vec::new(),
        write: Vec::new(),
        user_home: PathBuf::from(HOME_INSIDE),
        private_home: home,
        private_tmp: tmp,
        env: vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("HOME".into(), HOME_INSIDE.into()),
            ("TMPDIR".into(), "/tmp".into()),
        ],
        proxy_socket: None,
        share_network: false,
        processes: 0,
        memory_mib: 1024,
    };
    Sandbox { _dirs: dirs, plan }
}

impl Sandbox {
    fn dir(&self) -> &Path {
        self._dirs.path()
    }

    fn run(&self) -> Output {
        Command::new(bwrap())
            .args(bwrap_args(&self.plan))
            .output()
            .expect("bwrap runs")
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn describe(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    )
}

fn self_check(share_network: bool) -> serde_json::Value {
    let mut sandbox = new_sandbox(INIT, &[]);
    sandbox.plan.share_network = share_network;
    // The self-check replaces the init's usual arguments: bwrap's args up to INIT_PATH, then it.
    let mut args = bwrap_args(&sandbox.plan);
    let init_at = args
        .windows(2)
        .position(|w| w[0] == "--" && w[1] == gatehouse_confine::INIT_PATH)
        .unwrap();
    args.truncate(init_at + 2);
    args.push("--self-check".into());
    let out = Command::new(bwrap()).args(&args).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let line = text(&out.stdout);
    assert_eq!(line.lines().count(), 1, "one JSON line: {line}");
    serde_json::from_str(line.trim()).unwrap()
}

fn own_namespace(kind: &str) -> String {
    std::fs::read_link(format!("/proc/self/ns/{kind}"))
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn self_check_inside_shows_its_own_namespaces_no_new_privs_and_a_working_filter() {
    let report = self_check(false);
    let net = report["net_ns"].as_str().unwrap();
    assert!(net.starts_with("net:["), "{report}");
    assert_ne!(net, own_namespace("net"), "{report}");
    assert_ne!(report["user_ns"].as_str().unwrap(), own_namespace("user"));
    assert_eq!(report["no_new_privs"], true, "{report}");
    assert_eq!(report["seccomp_ok"], true, "{report}");
    assert_eq!(
        report["home_entries"], 0,
        "the private home is fresh: {report}"
    );
    assert!(report["uid"].is_u64(), "{report}");
}

#[test]
fn self_check_with_a_shared_network_shows_the_hosts_net_namespace() {
    let report = self_check(true);
    assert_eq!(report["net_ns"].as_str().unwrap(), own_namespace("net"));
    assert_ne!(report["user_ns"].as_str().unwrap(), own_namespace("user"));
}

#[test]
fn self_check_outside_a_sandbox_shows_the_callers_namespaces() {
    let out = Command::new(INIT).arg("--self-check").output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["net_ns"].as_str().unwrap(), own_namespace("net"));
    assert_eq!(report["user_ns"].as_str().unwrap(), own_namespace("user"));
}

#[test]
fn without_processes_a_program_that_starts_none_runs() {
    let sandbox = new_sandbox("/bin/sh", &["-c", "exit 0"]);
    let out = sandbox.run();
    assert!(out.status.success(), "{}", describe(&out));
}

#[test]
fn without_processes_a_fork_is_refused() {
    // `; echo` keeps the shell from exec'ing /bin/true in its own place: it must fork.
    let sandbox = new_sandbox("/bin/sh", &["-c", "/bin/true; echo forked-and-back"]);
    let out = sandbox.run();
    assert!(!out.status.success(), "{}", describe(&out));
    assert!(
        !text(&out.stdout).contains("forked-and-back"),
        "{}",
        describe(&out)
    );
    // dash's words for the refused fork ("Cannot fork").
    assert!(text(&out.stderr).contains("fork"), "{}", describe(&out));
}

#[test]
fn with_processes_a_fork_works() {
    let mut sandbox = new_sandbox("/bin/sh", &["-c", "/bin/true; echo forked-and-back"]);
    sandbox.plan.processes = 4;
    let out = sandbox.run();
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(text(&out.stdout).trim(), "forked-and-back");
}

#[test]
fn a_new_namespace_is_refused_even_with_processes() {
    // unshare(1) calls unshare(2) in its own process, then execs: no fork needed.
    let mut sandbox = new_sandbox("/usr/bin/unshare", &["--user", "--", "/bin/true"]);
    sandbox.plan.processes = 4;
    let out = sandbox.run();
    assert!(!out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("Operation not permitted"),
        "{}",
        describe(&out)
    );
}

/// A unix-socket listener standing in for the host's egress proxy: echoes what it reads and
/// reports the first chunk it saw.
fn echo_proxy(path: &Path) -> mpsc::Receiver<Vec<u8>> {
    let listener = UnixListener::bind(path).unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 1024];
                let mut first = true;
                loop {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if first {
                                let _ = tx.send(buf[..n].to_vec());
                                first = false;
                            }
                            if conn.write_all(&buf[..n]).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    rx
}

const TALK_TO_PROXY: &str = "exec 3<>/dev/tcp/127.0.0.1/3128 || exit 3; \
     echo hi-through-the-proxy >&3; read -r line <&3; echo \"got $line\"";

#[test]
fn with_a_proxy_bytes_reach_the_unix_socket_and_come_back() {
    let mut sandbox = new_sandbox("/usr/bin/bash", &["-c", TALK_TO_PROXY]);
    let socket = sandbox.dir().join("px.sock");
    let seen = echo_proxy(&socket);
    sandbox.plan.proxy_socket = Some(socket);
    let out = sandbox.run();
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(text(&out.stdout).trim(), "got hi-through-the-proxy");
    assert_eq!(seen.recv().unwrap(), b"hi-through-the-proxy\n");
}

#[test]
fn without_a_proxy_the_sandbox_has_no_way_out() {
    let sandbox = new_sandbox("/usr/bin/bash", &["-c", TALK_TO_PROXY]);
    let out = sandbox.run();
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    assert!(!text(&out.stdout).contains("got"), "{}", describe(&out));
}

fn limits_line(limits: &str, name: &str) -> String {
    limits
        .lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_else(|| panic!("no {name} in {limits}"))
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_program_runs_with_the_granted_data_limit_no_cores_and_bounded_files() {
    let mut sandbox = new_sandbox("/bin/cat", &["/proc/self/limits"]);
    for (memory_mib, bytes) in [(256, "268435456"), (512, "536870912")] {
        sandbox.plan.memory_mib = memory_mib;
        let out = sandbox.run();
        assert!(out.status.success(), "{}", describe(&out));
        let limits = text(&out.stdout);
        assert_eq!(
            limits_line(&limits, "Max data size"),
            format!("Max data size {bytes} {bytes} bytes")
        );
        assert_eq!(
            limits_line(&limits, "Max core file size"),
            "Max core file size 0 0 bytes"
        );
        let files = limits_line(&limits, "Max open files");
        let soft: u64 = files.split(' ').nth(3).unwrap().parse().unwrap();
        assert!(soft <= 4096, "{files}");
    }
}

#[test]
fn the_program_runs_in_place_with_sigpipe_at_its_default() {
    // The init's pid is the program's (exec in place, no extra process), and the SIGPIPE the
    // Rust runtime ignored is not passed on to the server.
    let sandbox = new_sandbox(
        "/usr/bin/bash",
        &[
            "-c",
            "echo pid=$$; while read -r k v; do [ \"$k\" = SigIgn: ] && echo ign=$v; done < /proc/self/status; exit 0",
        ],
    );
    let out = sandbox.run();
    assert!(out.status.success(), "{}", describe(&out));
    let stdout = text(&out.stdout);
    // bwrap's own pid-1 reaper is 1; the init, now the program, is its first child.
    assert!(stdout.contains("pid=2"), "{stdout}");
    let ign = stdout.lines().find_map(|l| l.strip_prefix("ign=")).unwrap();
    let mask = u64::from_str_radix(ign, 16).unwrap();
    assert_eq!(mask & (1 << (13 - 1)), 0, "SIGPIPE ignored: {ign}");
}

#[test]
fn a_proxy_socket_that_is_not_a_socket_stops_the_init_before_the_program() {
    let mut sandbox = new_sandbox("/bin/sh", &["-c", "echo the-program-ran"]);
    let not_a_socket = sandbox.dir().join("px.sock");
    std::fs::write(&not_a_socket, b"").unwrap();
    sandbox.plan.proxy_socket = Some(not_a_socket);
    let out = sandbox.run();
    assert_eq!(out.status.code(), Some(125), "{}", describe(&out));
    assert!(!text(&out.stdout).contains("the-program-ran"));
    let stderr = text(&out.stderr);
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("gatehouse-sandbox-init:") && l.contains("proxy.sock")),
        "{stderr}"
    );
}

#[test]
fn outside_bwrap_a_missing_proxy_socket_also_stops_the_init() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("absent.sock");
    let out = Command::new(INIT)
        .args([
            "--memory-mib",
            "64",
            "--processes",
            "0",
            "--proxy-port",
            "1",
        ])
        .arg("--proxy-socket")
        .arg(&missing)
        .args(["--", "/bin/sh", "-c", "echo the-program-ran"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", describe(&out));
    assert!(!text(&out.stdout).contains("the-program-ran"));
    assert!(text(&out.stderr).starts_with("gatehouse-sandbox-init:"));
}

#[test]
fn bad_arguments_and_a_missing_program_exit_125_with_a_message() {
    for args in [
        &["--processes", "0", "--", "/bin/true"][..],
        &["--memory-mib", "64", "--processes", "0", "--", "bin/true"],
        &["--memory-mib", "64", "--processes", "0"],
        &[
            "--memory-mib",
            "64",
            "--processes",
            "0",
            "--",
            "/nonexistent/server",
        ],
        &["--self-check", "extra"],
    ] {
        let out = Command::new(INIT).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(125), "{args:?}: {}", describe(&out));
        let stderr = text(&out.stderr);
        assert!(
            stderr.starts_with("gatehouse-sandbox-init: "),
            "{args:?}: {stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
    // The same grammar with a real program runs it.
    let out = Command::new(INIT)
        .args(["--memory-mib", "64", "--processes", "0", "--", "/bin/true"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
}
