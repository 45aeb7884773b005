//! The short soak: eight AI clients at once — the reference TypeScript client
//! (bench/ts-client/soak.mjs) over stdio to headless `gatehouse serve` processes, over stdio to
//! `gatehouse serve` bridged to the app's host (this test process holding the desktop app's
//! host and its bridge listener, as bridge.rs does), and over HTTP to `gatehouse serve --http`,
//! which hands its listener to the app's host — making a few thousand checked calls of the
//! demo's `echo` and `add`. Afterwards every call is in its host's audit log as one
//! `tool_call` naming its client and transport, the app's log rotated and every chain
//! verifies, and the app's host holds no more file descriptors or tokio tasks than before the
//! clients came. scripts/soak.sh is the long version.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{demo_bin, node, repo};
use gatehouse_desk::{Desk, DeskOptions, DeskPaths};
use gatehouse_gateway::bridge::{BridgeListener, socket_path_in};
use gatehouse_gateway::tokens::{self, TokenBook};
use gatehouse_host::MemoryStore;
use gatehouse_host::tap::system_clock;
use serde_json::Value;

/// The app's audit rotation size: the policy's `[audit] rotate_mib`, its least.
const ROTATE_MIB: u32 = 1;
/// Every K-th call is `add`, the rest `echo`.
const ADD_EVERY: usize = 10;
/// Calls outstanding at once on each client's session.
const IN_FLIGHT: usize = 2;
/// What the app's host may hold beyond its baseline once every client is gone. Measured: 0
/// more descriptors and 0 more tasks; the constant absorbs a timer or a pooled connection
/// that outlives a burst, while a leak of one per call or per session is hundreds.
const FD_SLACK: usize = 4;
const TASK_SLACK: usize = 4;

/// How an AI client reaches a host. Closed: each is started its own way below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// stdio to `gatehouse --demo serve --no-bridge`: a headless host of its own.
    Headless,
    /// stdio to `gatehouse serve`, bridged to the app's host in this process.
    Bridged,
    /// Streamable HTTP to `gatehouse serve --http`, which the app's host serves, with the
    /// client's token from the app's keychain.
    Http,
}

impl Route {
    /// Calls each client of this route makes: the app's host gets enough (about 400 bytes of
    /// log a call) to pass [`ROTATE_MIB`], so its log rotates during the run.
    fn calls(self) -> usize {
        match self {
            Route::Headless => 200,
            Route::Bridged | Route::Http => 600,
        }
    }
    /// The transport its calls are recorded with.
    fn transport(self) -> &'static str {
        match self {
            Route::Headless | Route::Bridged => "stdio",
            Route::Http => "http",
        }
    }
    fn code(self) -> &'static str {
        match self {
            Route::Headless => "headless",
            Route::Bridged => "bridged",
            Route::Http => "http",
        }
    }
}

/// The eight clients: two headless, four bridged, two over HTTP.
const CLIENTS: [Route; 8] = [
    Route::Headless,
    Route::Headless,
    Route::Bridged,
    Route::Bridged,
    Route::Bridged,
    Route::Bridged,
    Route::Http,
    Route::Http,
];

/// The user's machine: a home, a private runtime directory (the bridge socket's), the app's
/// directories and keychain, and an empty admin trust-root directory for the headless hosts.
struct Machine {
    dir: tempfile::TempDir,
    keychain: Arc<MemoryStore>,
}

impl Machine {
    fn new() -> Machine {
        let machine = Machine {
            dir: tempfile::tempdir().unwrap(),
            keychain: Arc::new(MemoryStore::default()),
        };
        for dir in [machine.runtime(), machine.home(), machine.no_roots()] {
            std::fs::create_dir_all(&dir).unwrap();
        }
        std::fs::set_permissions(machine.runtime(), std::fs::Permissions::from_mode(0o700))
            .unwrap();
        machine
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn home(&self) -> PathBuf {
        self.path("home")
    }
    fn runtime(&self) -> PathBuf {
        self.path("run")
    }
    fn no_roots(&self) -> PathBuf {
        self.path("no-roots")
    }
    fn app(&self) -> PathBuf {
        self.path("app")
    }
    fn app_audit(&self) -> PathBuf {
        self.app().join("data/audit.jsonl")
    }
    /// The audit log of the headless host of client `label`.
    fn headless_audit(&self, label: &str) -> PathBuf {
        self.path(&format!("{label}.audit.jsonl"))
    }
    /// The shipped policy with the least rotation size, for the app's host.
    fn policy(&self) -> PathBuf {
        let shipped = std::fs::read_to_string(repo().join("policies/default.toml")).unwrap();
        let line = shipped
            .lines()
            .find(|l| l.starts_with("rotate_mib = "))
            .expect("the shipped policy sets [audit] rotate_mib");
        let policy = self.path("policy.toml");
        let ours = shipped.replacen(line, &format!("rotate_mib = {ROTATE_MIB}"), 1);
        std::fs::write(&policy, ours).unwrap();
        policy
    }
    /// The desktop app's host in demo mode, with its cards.
    fn open_app(&self) -> Arc<Desk> {
        let app = self.app();
        let mut options = DeskOptions::new(
            DeskPaths {
                config: app.join("servers.json"),
                data: app.join("data"),
                logs: app.join("logs"),
                user_trust_roots: None,
                system_trust_roots: app.join("system-trust-roots"),
            },
            system_clock(),
        );
        options.demo = true;
        options.demo_server = Some(demo_bin().into());
        options.policy = Some(self.policy());
        Desk::open(options, self.keychain.clone(), Arc::new(|_| {})).expect("app")
    }
    /// The app's list of clients with an HTTP token.
    fn token_index(&self) -> PathBuf {
        tokens::index_path(&self.app().join("data"))
    }
    /// Client `label`'s HTTP token, made in the app's keychain as `gatehouse clients token`
    /// makes it.
    fn token(&self, label: &str) -> String {
        tokens::issue(&*self.keychain, &self.token_index(), label, false)
            .expect("a token")
            .0
    }
    /// `command` as an AI client launches it: the user's environment, nothing of Gatehouse's.
    fn environment(&self, command: &mut Command) {
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("GATEHOUSE_") {
                command.env_remove(&key);
            }
        }
        command
            .env("HOME", self.home())
            .env("XDG_RUNTIME_DIR", self.runtime())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .env("GATEHOUSE_DEMO_SERVER", demo_bin())
            .stdin(Stdio::null());
    }
    /// The soak driver as client `label` making `calls` calls through `route` (over HTTP, to
    /// `url`).
    fn client(&self, label: &str, route: Route, calls: usize, url: Option<&str>) -> Child {
        let mut command = Command::new(node());
        command
            .arg(repo().join("bench/ts-client/soak.mjs"))
            .args(["--calls", &calls.to_string()])
            .args(["--add-every", &ADD_EVERY.to_string()])
            .args(["--in-flight", &IN_FLIGHT.to_string()])
            .args(["--label", label])
            .args(["--deadline-s", "300"])
            .arg("--");
        self.environment(&mut command);
        let gatehouse = env!("CARGO_BIN_EXE_gatehouse");
        match route {
            Route::Headless => {
                command
                    .arg(gatehouse)
                    .arg("--trust-roots")
                    .arg(self.no_roots())
                    .arg("--audit")
                    .arg(self.headless_audit(label))
                    .args(["--demo", "serve", "--no-bridge", "--client", label]);
            }
            Route::Bridged => {
                command.arg(gatehouse).args(["serve", "--client", label]);
            }
            Route::Http => {
                command
                    .arg(url.expect("serve --http's URL"))
                    .env("GATEWAY_TOKEN", self.token(label));
            }
        }
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        command.spawn().expect("node (scripts/install-deps.sh)")
    }
}

/// `gatehouse serve --http 127.0.0.1:0`, bridged: it binds the listener and hands it to the
/// app's host, which serves it until this process ends ([`ServeHttp::stop`]).
struct ServeHttp {
    child: Child,
    url: String,
}

impl ServeHttp {
    fn start(machine: &Machine) -> ServeHttp {
        let mut command = Command::new(env!("CARGO_BIN_EXE_gatehouse"));
        command.args(["serve", "--http", "127.0.0.1:0"]);
        machine.environment(&mut command);
        command.stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut said = Vec::new();
        let line = loop {
            let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
            else {
                panic!("serve --http did not say where it listens: {said:?}")
            };
            if let Some(rest) = line.strip_prefix("gatehouse serve: listening on ") {
                break rest.to_string();
            }
            said.push(line);
        };
        assert!(
            line.contains("served by the desktop app's host"),
            "serve --http did not hand its listener to the app: {line}"
        );
        let url = line.split([' ', ',']).next().unwrap().to_string();
        ServeHttp { child, url }
    }
    /// SIGTERM, then waits (bounded) for it to end.
    fn stop(mut self) {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap());
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "serve --http did not stop");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for ServeHttp {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// A driver's summary line, once it ended; it must have succeeded.
fn summary(child: Child, label: &str) -> Value {
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{label}: {stdout}\n{stderr}");
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{label}: {e}: {stdout}"))
}

/// Runs the clients to their ends, all at once; their summaries, each checked.
fn run_all(clients: Vec<(String, Route, Child)>) -> Vec<(String, Route, Value)> {
    std::thread::scope(|scope| {
        let waiting: Vec<_> = clients
            .into_iter()
            .map(|(label, route, child)| {
                scope.spawn(move || {
                    let summary = summary(child, &label);
                    (label, route, summary)
                })
            })
            .collect();
        waiting.into_iter().map(|w| w.join().unwrap()).collect()
    })
}

/// Open file descriptors of this process (the app's host).
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Whether the app's host lists any client session as open.
fn sessions_open(desk: &Desk) -> bool {
    desk.clients()
        .unwrap()
        .iter()
        .any(|row| !row.connected.is_empty())
}

/// Waits (bounded) until the app's host has no client session open and holds at most `fds`
/// file descriptors and `tasks` tasks; returns whether a session is open and what it holds.
async fn settle(desk: &Desk, fds: usize, tasks: usize) -> (bool, usize, usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = (sessions_open(desk), open_fds(), alive_tasks());
        if (!now.0 && now.1 <= fds && now.2 <= tasks) || Instant::now() > deadline {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `gatehouse ARGS` to its end: exit code, stdout, stderr.
fn gatehouse(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gatehouse"));
    command.args(args).stdin(Stdio::null());
    common::output_of(command)
}

/// Client and transport -> calls.
type Counts = BTreeMap<(String, String), usize>;

/// The `tool_call` records of the log at `path` (every segment, through `gatehouse audit
/// export`), counted by the client and transport each names.
fn calls_by_client(path: &Path) -> Counts {
    let (code, out, err) = gatehouse(&["audit".as_ref(), "export".as_ref(), path.as_os_str()]);
    assert_eq!(code, 0, "audit export {}: {err}", path.display());
    let mut counts = Counts::new();
    for line in out.lines() {
        let record: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if record["event"] != "tool_call" {
            continue;
        }
        let caller = &record["data"]["caller"];
        let (Some(client), Some(transport)) =
            (caller["client"].as_str(), caller["transport"].as_str())
        else {
            panic!("a call that names no client: {record}")
        };
        *counts
            .entry((client.to_string(), transport.to_string()))
            .or_insert(0) += 1;
    }
    counts
}

/// `gatehouse audit verify` on the log at `path`: whether it passed, and what it said.
fn verify(path: &Path) -> (bool, String) {
    let (code, out, err) = gatehouse(&["audit".as_ref(), "verify".as_ref(), path.as_os_str()]);
    (code == 0, format!("{out}{err}"))
}

/// The sealed segments of the log at `path` (`audit.jsonl.seg-000001`, …), oldest first,
/// then the log itself.
fn log_files(path: &Path) -> Vec<PathBuf> {
    let prefix = format!("{}.seg-", path.file_name().unwrap().to_string_lossy());
    let mut files: Vec<PathBuf> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
        })
        .collect();
    files.sort();
    files.push(path.to_path_buf());
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_clients_over_stdio_the_bridge_and_http_are_all_audited_and_leave_nothing_behind() {
    let machine = Machine::new();
    let desk = machine.open_app();
    let book = Arc::new(TokenBook::new(
        machine.keychain.clone(),
        machine.token_index(),
    ));
    let listener = BridgeListener::bind(&socket_path_in(&machine.runtime()))
        .expect("bridge")
        .with_tokens(book);
    tokio::spawn(listener.serve(desk.host().clone()));
    desk.connect_all().await;

    // The HTTP clients' tokens, made before serve --http starts (it refuses to serve none).
    let labels: Vec<String> = CLIENTS
        .iter()
        .enumerate()
        .map(|(n, route)| format!("{}_{}", route.code(), n + 1))
        .collect();
    for (label, route) in labels.iter().zip(CLIENTS) {
        if route == Route::Http {
            machine.token(label);
        }
    }
    machine.token("warmup_http");

    // A bridged client and an HTTP client first, so what the host sets up once (not per
    // session) is in the baseline; then the baseline, with their sessions closed.
    let http = ServeHttp::start(&machine);
    let warm = run_all(vec![
        (
            "warmup".into(),
            Route::Bridged,
            machine.client("warmup", Route::Bridged, 3, None),
        ),
        (
            "warmup_http".into(),
            Route::Http,
            machine.client("warmup_http", Route::Http, 3, Some(&http.url)),
        ),
    ]);
    http.stop();
    for (label, _, summary) in &warm {
        assert_eq!(summary["failed"], 0, "{label}: {summary}");
    }
    let (open, fds, tasks) = settle(&desk, usize::MAX, usize::MAX).await;
    assert!(!open, "a warm-up client's session never closed");

    // All eight at once.
    let http = ServeHttp::start(&machine);
    let running = labels
        .into_iter()
        .zip(CLIENTS)
        .map(|(label, route)| {
            let child = machine.client(&label, route, route.calls(), Some(&http.url));
            (label, route, child)
        })
        .collect();
    let summaries = run_all(running);
    for (label, route, summary) in &summaries {
        assert_eq!(summary["failed"], 0, "{label}: {summary}");
        assert_eq!(summary["calls"], route.calls(), "{label}: {summary}");
        assert_eq!(
            summary["add"],
            route.calls() / ADD_EVERY,
            "{label}: {summary}"
        );
    }
    http.stop();

    // Every client gone, the app's host is back to its baseline.
    let (open, fds_after, tasks_after) = settle(&desk, fds + FD_SLACK, tasks + TASK_SLACK).await;
    assert!(!open, "a client's session is still open on the app's host");
    assert!(
        fds_after <= fds + FD_SLACK,
        "the app's host holds {fds_after} file descriptors, {fds} before the clients"
    );
    assert!(
        tasks_after <= tasks + TASK_SLACK,
        "the app's host runs {tasks_after} tasks, {tasks} before the clients"
    );
    eprintln!("baseline: {fds} fds, {tasks} tasks; after: {fds_after} fds, {tasks_after} tasks");
    desk.shutdown().await;

    // Every call audited once, naming its client and transport, in its host's log; every
    // chain verifies.
    let mut expected: BTreeMap<PathBuf, Counts> = BTreeMap::new();
    for (label, route, summary) in warm.iter().chain(&summaries) {
        let log = match route {
            Route::Headless => machine.headless_audit(label),
            Route::Bridged | Route::Http => machine.app_audit(),
        };
        // What the driver made (checked above against what it was asked).
        let calls = usize::try_from(summary["calls"].as_u64().unwrap()).unwrap();
        expected
            .entry(log)
            .or_default()
            .insert((label.clone(), route.transport().to_string()), calls);
    }
    for (log, clients) in &expected {
        assert_eq!(&calls_by_client(log), clients, "{}", log.display());
        let (ok, said) = verify(log);
        assert!(ok, "{}: {said}", log.display());
    }
    // The app's log rotated during the run, and verify checked across its segments.
    let files = log_files(&machine.app_audit());
    assert!(files.len() > 1, "the app's log did not rotate: {files:?}");
    let (_, said) = verify(&machine.app_audit());
    assert!(said.contains("sealed segment"), "{said}");

    // The checks can fail: one call's client changed, in whichever file holds it, breaks
    // the chain.
    let needle = "\"client\":\"bridged_3\"";
    let file = files
        .iter()
        .find(|f| std::fs::read_to_string(f).unwrap().contains(needle))
        .expect("a call of bridged_3 in the app's log");
    let text = std::fs::read_to_string(file).unwrap();
    std::fs::write(file, text.replacen(needle, "\"client\":\"bridged_4\"", 1)).unwrap();
    let (ok, said) = verify(&machine.app_audit());
    assert!(!ok, "a changed record verified: {said}");
}
