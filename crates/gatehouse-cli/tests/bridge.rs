//! `gatehouse serve` bridged to a running app: the app here is this test process holding the
//! desktop app's host (gatehouse_desk: the host with the card desk as its consent UI)
//! and its bridge listener; the client is the reference TypeScript client launching the real
//! `gatehouse serve`, as Claude Desktop would.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{client_run, demo_bin, offered, result_text as text, ts_client_command};
use gatehouse_desk::{CardState, Desk, DeskOptions, DeskPaths, WindowAnswer, WindowReply};
use gatehouse_gateway::bridge::{BridgeListener, socket_path_in};
use gatehouse_host::audit_event::gate::ToolCall;
use gatehouse_host::audit_event::session::{
    AttributionKind, ElicitationReceipt, ReceiptCaller, UnknownCaller,
};
use gatehouse_host::broker::{CorrelationBasis, ElicitationAnswer};
use gatehouse_host::tap::system_clock;
use gatehouse_host::{Caller, DownstreamTransport, MemoryStore};
use gatehouse_testkit::audit::payloads_in;
use serde_json::{Value, json};

/// The user's machine: a home, a runtime directory, and the app's own directories.
struct Machine {
    dir: tempfile::TempDir,
}

impl Machine {
    fn new() -> Machine {
        let machine = Machine {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(machine.runtime()).unwrap();
        std::fs::set_permissions(machine.runtime(), std::fs::Permissions::from_mode(0o700))
            .unwrap();
        machine
    }
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    fn runtime(&self) -> PathBuf {
        self.dir.path().join("run")
    }
    fn app(&self) -> PathBuf {
        self.dir.path().join("app")
    }
    /// The desktop app's host in demo mode, with its cards.
    fn open_app(&self) -> Arc<Desk> {
        self.open_app_with(None)
    }

    /// As [`Machine::open_app`], with `opener` as the system browser.
    fn open_app_with(&self, opener: Option<Arc<dyn gatehouse_host::UrlOpener>>) -> Arc<Desk> {
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
        if let Some(opener) = opener {
            options.opener = opener;
        }
        Desk::open(options, Arc::new(MemoryStore::default()), Arc::new(|_| {})).expect("app")
    }
    fn app_audit(&self) -> Vec<Value> {
        common::audit_records(&self.app().join("data/audit.jsonl"))
    }
    /// The audit log a `gatehouse` running its own host would write under this home.
    fn serve_own_audit(&self) -> PathBuf {
        self.home().join(".local/share/gatehouse/audit.jsonl")
    }
    /// `gatehouse serve ARGS` as an AI client launches it: the user's environment, nothing
    /// of Gatehouse's own set.
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
            .stdin(Stdio::null());
    }
    /// The TypeScript client running `steps` against `gatehouse serve args`: one JSON line
    /// per step, and what serve said on stderr.
    fn ts_client(&self, steps: &Value, args: &[&str]) -> (bool, Vec<Value>, String) {
        let mut command = ts_client_command(steps);
        command
            .arg(env!("CARGO_BIN_EXE_gatehouse"))
            .arg("serve")
            .args(args);
        self.environment(&mut command);
        client_run(command)
    }
    /// `gatehouse serve args` with no client at all: its exit code and stderr.
    fn serve_alone(&self, args: &[&str]) -> (i32, String) {
        let mut command = Command::new(env!("CARGO_BIN_EXE_gatehouse"));
        command.arg("serve").args(args);
        self.environment(&mut command);
        command.stdout(Stdio::null());
        let out = command.output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridged_client_uses_the_apps_servers_gate_audit_log_and_consent_cards() {
    let machine = Machine::new();
    let desk = machine.open_app();
    let listener = BridgeListener::bind(&socket_path_in(&machine.runtime())).expect("bridge");
    tokio::spawn(listener.serve(desk.host().clone()));
    desk.connect_all().await;

    let steps = json!([
        {"op": "list"},
        {"op": "call", "name": "demo__echo", "arguments": {"message": "through the app"}},
        {"op": "call", "name": "demo__book_table", "arguments": {}},
    ]);
    let client = {
        let steps = steps.clone();
        let machine = &machine;
        let args = ["--client", "claude_desktop"];
        let (ok, out, notes) = std::thread::scope(|scope| {
            let running = scope.spawn(move || machine.ts_client(&steps, &args));
            // The person answers the app's card while the client waits.
            let deadline = Instant::now() + Duration::from_secs(60);
            let card = loop {
                if let Some(card) = desk
                    .prompts()
                    .list()
                    .into_iter()
                    .find(|c| c.state == CardState::Asking)
                {
                    break card;
                }
                assert!(
                    !running.is_finished() && Instant::now() < deadline,
                    "no card was shown"
                );
                std::thread::sleep(Duration::from_millis(50));
            };
            // While its call waits, the client is listed as connected, over stdio.
            let clients = desk.clients().unwrap();
            let listed = clients
                .iter()
                .find(|c| c.client == "claude_desktop")
                .unwrap_or_else(|| panic!("not listed: {clients:?}"));
            assert_eq!(
                listed.connected,
                vec![gatehouse_host::DownstreamTransport::Stdio]
            );
            // The card names the server and the AI client whose call caused it.
            assert_eq!(card.prompt.server, "demo");
            let caller = card
                .prompt
                .attribution
                .client()
                .cloned()
                .expect("the caller is on the card");
            assert_eq!(caller.client, "claude_desktop");
            assert_eq!(caller.claimed.as_deref(), Some("ts-sdk-test-client 1.0.0"));
            let content = json!({"name": "Ada", "date": "2026-12-24", "party_size": 3});
            desk.prompts()
                .answer(
                    card.prompt.id,
                    WindowAnswer {
                        reply: WindowReply::Submit,
                        content: content.as_object().cloned(),
                        override_hold: false,
                    },
                )
                .expect("answered");
            running.join().unwrap()
        });
        (ok, out, notes)
    };
    let (ok, out, notes) = client;
    assert!(ok, "{notes}");
    assert!(notes.contains("bridged to the desktop app"), "{notes}");
    let names = offered(&out[0]);
    assert!(
        names.iter().any(|n| n == "demo__echo") && names.iter().any(|n| n == "demo-2025__echo"),
        "{names:?}"
    );
    assert_eq!(text(&out[1]), "through the app");
    let booked: Value = serde_json::from_str(&text(&out[2])).unwrap();
    assert_eq!(booked["action"], "accept", "{booked}");
    assert_eq!(booked["content"]["name"], "Ada");
    assert_eq!(booked["content"]["party_size"], 3);

    // One audit log: the app's, with the client named; serve opened no host of its own.
    let calls: Vec<ToolCall> = payloads_in(&machine.app_audit());
    assert_eq!(calls.len(), 2, "{calls:?}");
    for call in &calls {
        let caller = call.caller.as_ref().expect("the call names its client");
        assert_eq!(caller.client, "claude_desktop", "{call:?}");
        assert_eq!(caller.transport, DownstreamTransport::Stdio, "{call:?}");
    }
    let receipt = payloads_in::<ElicitationReceipt>(&machine.app_audit())
        .into_iter()
        .next()
        .expect("a receipt");
    assert_eq!(receipt.action, ElicitationAnswer::Accept, "{receipt:?}");
    assert_eq!(receipt_client(&receipt), Some("claude_desktop"));
    assert!(
        !machine.serve_own_audit().exists(),
        "serve wrote an audit log of its own"
    );
    // Gone, the client stays listed with its calls.
    let deadline = Instant::now() + Duration::from_secs(10);
    let row = loop {
        let clients = desk.clients().unwrap();
        let row = clients
            .into_iter()
            .find(|c| c.client == "claude_desktop")
            .unwrap();
        if row.connected.is_empty() || Instant::now() > deadline {
            break row;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(row.connected.is_empty(), "{row:?}");
    let tools: Vec<&str> = row.recent_calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(tools, ["book_table", "echo"]);
    desk.shutdown().await;
}

/// The client a receipt names as the one whose call caused the elicitation.
fn receipt_client(receipt: &ElicitationReceipt) -> Option<&str> {
    match &receipt.caller {
        Some(ReceiptCaller::Client(Caller { client, .. })) => Some(client),
        Some(ReceiptCaller::Unknown(_)) | None => None,
    }
}

/// The person's browser: records each URL it is handed, then loads the demo's connect page
/// and submits it, as the person would (tests/fixtures/browser_recorder.py).
struct SubmittingBrowser {
    log: PathBuf,
}

impl gatehouse_host::UrlOpener for SubmittingBrowser {
    fn open(&self, url: &str) -> Result<(), String> {
        let mut command = Command::new("python3");
        command
            .arg(common::fixture("browser_recorder.py"))
            .arg(url)
            .env("GATEHOUSE_BROWSER_LOG", &self.log)
            .env("GATEHOUSE_BROWSER_VISIT", "submit");
        let done = self.log.with_extension("done");
        std::thread::spawn(move || {
            let status = command.status();
            // The page was loaded and submitted (or failed): a line either way.
            let mut log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(done)
                .unwrap();
            let line = match status {
                Ok(status) if status.success() => "submitted\n".to_string(),
                other => format!("failed: {other:?}\n"),
            };
            std::io::Write::write_all(&mut log, line.as_bytes()).unwrap();
        });
        Ok(())
    }
}

/// Waits for a card of `server` in `state`, and returns it.
fn card_in(desk: &Desk, server: &str, state: CardState) -> gatehouse_desk::PromptCard {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(card) = desk
            .prompts()
            .list()
            .into_iter()
            .find(|c| c.prompt.server == server && c.state == state)
        {
            return card;
        }
        assert!(Instant::now() < deadline, "no {state:?} card of {server}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_elicitations_of_a_bridged_call_open_only_on_consent_and_the_call_resumes_in_both_eras()
{
    let machine = Machine::new();
    let opened = machine.dir.path().join("opened.log");
    let desk = machine.open_app_with(Some(Arc::new(SubmittingBrowser {
        log: opened.clone(),
    })));
    let listener = BridgeListener::bind(&socket_path_in(&machine.runtime())).expect("bridge");
    tokio::spawn(listener.serve(desk.host().clone()));
    desk.connect_all().await;
    let steps = json!([
        // 2025-11-25: -32042, then the retried call once the page reports completion.
        {"op": "call", "name": "demo-2025__connect_account_required", "arguments": {"service": "mail"}},
        // 2026-07-28: input_required with a URL; the person says when they are done.
        {"op": "call", "name": "demo__connect_account", "arguments": {"service": "files"}},
    ]);
    let (ok, out, notes) = std::thread::scope(|scope| {
        let running = scope.spawn(|| machine.ts_client(&steps, &["--client", "cursor"]));
        let legacy = card_in(&desk, "demo-2025", CardState::Asking);
        assert_eq!(legacy.prompt.attribution.client().unwrap().client, "cursor");
        assert!(
            std::fs::read_to_string(&opened)
                .unwrap_or_default()
                .is_empty(),
            "nothing is opened before consent"
        );
        let open = WindowAnswer {
            reply: WindowReply::Open,
            content: None,
            override_hold: false,
        };
        desk.prompts()
            .answer(legacy.prompt.id, open.clone())
            .expect("opened");
        let modern = card_in(&desk, "demo", CardState::Asking);
        assert_eq!(modern.prompt.attribution.client().unwrap().client, "cursor");
        desk.prompts()
            .answer(modern.prompt.id, open)
            .expect("opened");
        let waiting = card_in(&desk, "demo", CardState::Waiting);
        // The person submits the page, then says they are done.
        let done = opened.with_extension("done");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::fs::read_to_string(&done)
            .unwrap_or_default()
            .lines()
            .count()
            < 2
        {
            assert!(
                Instant::now() < deadline,
                "the second page was not submitted"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let submitted = std::fs::read_to_string(&done).unwrap();
        assert!(submitted.lines().all(|l| l == "submitted"), "{submitted}");
        desk.prompts()
            .wait_choice(
                waiting.prompt.id,
                gatehouse_host::consent::WaitChoice::Retry,
            )
            .expect("retry");
        running.join().unwrap()
    });
    assert!(ok, "{notes}");
    assert!(text(&out[0]).contains("mail"), "{}", out[0]);
    assert!(text(&out[1]).starts_with("connected files"), "{}", out[1]);
    let urls = std::fs::read_to_string(&opened).unwrap();
    assert_eq!(urls.lines().count(), 2, "each URL opened once: {urls}");
    assert!(
        urls.lines().all(|u| u.starts_with("http://127.0.0.1:")),
        "{urls}"
    );
    // Both receipts name the client.
    let receipts: Vec<ElicitationReceipt> = payloads_in(&machine.app_audit());
    assert_eq!(receipts.len(), 2, "{receipts:?}");
    for receipt in &receipts {
        assert_eq!(receipt.action, ElicitationAnswer::Accept, "{receipt:?}");
        assert_eq!(receipt_client(receipt), Some("cursor"), "{receipt:?}");
    }
    desk.shutdown().await;
}

/// Two AI clients bridged to one app, both calling the demo's 2025-11-25 stdio server: Claude
/// Code's long call is still running when Cursor's call asks. Over stdio the elicitation could
/// belong to either call, so the card (and the receipt) must blame neither, and say so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_two_clients_calls_in_flight_on_stdio_the_card_names_neither_as_the_cause() {
    let machine = Machine::new();
    let desk = machine.open_app();
    let listener = BridgeListener::bind(&socket_path_in(&machine.runtime())).expect("bridge");
    tokio::spawn(listener.serve(desk.host().clone()));
    desk.connect_all().await;
    let session = desk
        .live_connection("demo-2025")
        .await
        .expect("the legacy demo")
        .session()
        .expect("a broker session")
        .clone();

    // Claude Code: a call that runs far longer than this test.
    let mut command = ts_client_command(&json!([
        {"op": "call", "name": "demo-2025__slow", "arguments": {"steps": 100, "delay_ms": 10000}},
    ]));
    command
        .arg(env!("CARGO_BIN_EXE_gatehouse"))
        .args(["serve", "--client", "claude_code"]);
    machine.environment(&mut command);
    command.stdout(Stdio::null()).stderr(Stdio::null());
    let mut long = command.spawn().expect("the first client");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !session
        .inflight()
        .snapshot()
        .iter()
        .any(|r| r.tool.as_deref() == Some("slow"))
    {
        assert!(
            Instant::now() < deadline,
            "Claude Code's call never reached the server"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Cursor: a call that asks while Claude Code's runs.
    let steps = json!([{"op": "call", "name": "demo-2025__book_table", "arguments": {}}]);
    let (ok, out, notes) = std::thread::scope(|scope| {
        let running = scope.spawn(|| machine.ts_client(&steps, &["--client", "cursor"]));
        let card = card_in(&desk, "demo-2025", CardState::Asking);
        let attribution = &card.prompt.attribution;
        assert_eq!(attribution.code(), "unknown", "{attribution:?}");
        assert!(attribution.client().is_none(), "{attribution:?}");
        let gatehouse_host::Attribution::Unknown {
            clients, gatehouse, ..
        } = attribution
        else {
            unreachable!()
        };
        let named: Vec<&str> = clients.iter().map(|c| c.client.as_str()).collect();
        assert_eq!(named, ["claude_code", "cursor"]);
        assert!(!gatehouse);
        let sentence = attribution.sentence().unwrap();
        assert!(
            sentence.contains("Gatehouse cannot tell which one caused it"),
            "{sentence}"
        );
        desk.prompts()
            .answer(
                card.prompt.id,
                WindowAnswer {
                    reply: WindowReply::Decline,
                    content: None,
                    override_hold: false,
                },
            )
            .expect("declined");
        running.join().unwrap()
    });
    // Process ids this test started, by their handle.
    let _ = long.kill();
    let _ = long.wait();
    assert!(ok, "{notes}");
    let booked: Value = serde_json::from_str(&text(&out[0])).unwrap();
    assert_eq!(booked["action"], "decline", "{booked}");

    let receipt = payloads_in::<ElicitationReceipt>(&machine.app_audit())
        .into_iter()
        .next()
        .expect("a receipt");
    assert_eq!(
        receipt.caller,
        Some(ReceiptCaller::Unknown(UnknownCaller::Unknown)),
        "{receipt:?}"
    );
    assert_eq!(receipt.attribution, AttributionKind::Unknown, "{receipt:?}");
    assert_eq!(receipt.correlation.basis, CorrelationBasis::InFlight);
    let candidates: Vec<&str> = receipt
        .caller_candidates
        .as_ref()
        .expect("the candidates are listed")
        .clients
        .iter()
        .map(|c| c.client.as_str())
        .collect();
    assert_eq!(candidates, ["claude_code", "cursor"], "{receipt:?}");
    // The gate's records still name each call's own client.
    let calls: Vec<(String, String)> = payloads_in::<ToolCall>(&machine.app_audit())
        .into_iter()
        .map(|c| {
            (
                c.decision.tool().to_string(),
                c.caller.map(|c| c.client).unwrap_or_default(),
            )
        })
        .collect();
    assert!(
        calls.contains(&("slow".into(), "claude_code".into()))
            && calls.contains(&("book_table".into(), "cursor".into())),
        "{calls:?}"
    );
    desk.shutdown().await;
}

#[test]
fn without_the_app_serve_runs_its_own_host_and_says_so() {
    let machine = Machine::new();
    let (ok, out, notes) = machine.ts_client(&json!([{"op": "list"}]), &[]);
    assert!(ok, "{notes}");
    assert!(notes.contains("the desktop app is not running"), "{notes}");
    // No servers configured under this home: nothing offered, and the host was its own.
    assert_eq!(out[0]["names"], json!([]));
    assert!(machine.serve_own_audit().exists());

    // --no-bridge and the flags that describe another host never look for the app.
    let (ok, _, notes) = machine.ts_client(&json!([{"op": "list"}]), &["--no-bridge"]);
    assert!(ok && notes.contains("(--no-bridge)"), "{notes}");
}

#[test]
fn a_bridge_directory_others_can_use_stops_serve_instead_of_falling_back() {
    let machine = Machine::new();
    let dir = machine.runtime().join("gatehouse");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (code, notes) = machine.serve_alone(&[]);
    assert_eq!(code, 2, "{notes}");
    assert!(
        notes.contains("can be used by other users (mode 777)"),
        "{notes}"
    );
    assert!(notes.contains("--no-bridge"), "says what to do: {notes}");
    assert!(!machine.serve_own_audit().exists(), "no host ran");
}

/// Another user on the machine, pointed at this user's runtime directory: it can neither use
/// the bridge nor be fooled into treating this user's directory as its own. Needs root to
/// become that user, which the test command has.
#[test]
fn another_user_cannot_reach_the_apps_bridge() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test becomes another user (setpriv) and must run as root, as the test command does"
    );
    let machine = Machine::new();
    // Let the other user walk to the socket's directory, as on a machine where the runtime
    // directory's parents are searchable: only the bridge's own checks stand in the way.
    for dir in [machine.dir.path(), machine.runtime().as_path()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711)).unwrap();
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let desk = rt.block_on(async { machine.open_app() });
    let socket = socket_path_in(&machine.runtime());
    let listener = rt
        .block_on(async { BridgeListener::bind(&socket) })
        .unwrap();
    rt.spawn(listener.serve(desk.host().clone()));

    let nobody = |program: &str, args: &[&str]| {
        let mut command = Command::new("setpriv");
        command
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(program)
            .args(args)
            .env("XDG_RUNTIME_DIR", machine.runtime())
            .env("HOME", "/nonexistent")
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        let out = command.output().expect("setpriv (util-linux)");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // gatehouse serve as that user refuses a directory that is not its own.
    let gatehouse = std::env::temp_dir().join(format!("gatehouse-bridge-{}", std::process::id()));
    std::fs::copy(env!("CARGO_BIN_EXE_gatehouse"), &gatehouse).unwrap();
    std::fs::set_permissions(&gatehouse, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, notes) = nobody(gatehouse.to_str().unwrap(), &["serve"]);
    std::fs::remove_file(&gatehouse).unwrap();
    assert_eq!(code, 2, "{notes}");
    assert!(
        notes.contains("belongs to uid 0, not to you (uid 65534)"),
        "{notes}"
    );
    // And the socket itself is closed to it by the directory's mode.
    // (perl-base is part of every Debian system.)
    let probe = format!(
        "use Socket; socket(my $s, PF_UNIX, SOCK_STREAM, 0) or exit 1; \
         connect($s, pack_sockaddr_un({:?})) and exit 0; exit($!{{EACCES}} ? 13 : 1)",
        socket.display().to_string()
    );
    let (code, notes) = nobody("/usr/bin/perl", &["-e", &probe]);
    assert_eq!(code, 13, "the other user reached the socket: {notes}");
    // Nothing reached the app's host.
    assert!(
        machine
            .app_audit()
            .iter()
            .all(|r| r["event"] != "tool_call"),
        "{:?}",
        machine.app_audit()
    );
    rt.block_on(desk.shutdown());
}
