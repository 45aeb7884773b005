//! `gatehouse serve --http` while the desktop app runs: the app here is this test process
//! holding the desktop app's host (gatehouse_desk: the host with the card desk as its consent
//! UI) and its bridge listener, given the app's client tokens. `serve` is the real binary in a
//! private D-Bus session with a gnome-keyring (for the host it falls back to); the HTTP client
//! is the reference TypeScript client.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use common::{client_run, demo_bin, offered, result_text as text, ts_client_command};
use gatehouse_desk::{CardState, Desk, DeskOptions, DeskPaths, WindowAnswer, WindowReply};
use gatehouse_gateway::bridge::{BridgeListener, socket_path_in};
use gatehouse_gateway::tokens::{self, TokenBook};
use gatehouse_host::audit_event::gate::ToolCall;
use gatehouse_host::audit_event::session::{ElicitationReceipt, ReceiptCaller};
use gatehouse_host::broker::ElicitationAnswer;
use gatehouse_host::secrets::SecretValue;
use gatehouse_host::tap::system_clock;
use gatehouse_host::{DownstreamTransport, MemoryStore, SecretStore};
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
    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
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
        Desk::open(options, Arc::new(MemoryStore::default()), Arc::new(|_| {})).expect("app")
    }
    fn app_audit(&self) -> Vec<Value> {
        common::audit_records(&self.app().join("data/audit.jsonl"))
    }
    /// The audit log a `gatehouse` running its own host writes under this home.
    fn serve_own_audit(&self) -> PathBuf {
        self.home().join(".local/share/gatehouse/audit.jsonl")
    }
}

/// In a private D-Bus session with an unlocked gnome-keyring: makes claude_code's token, waits
/// until the test has given the app the same token, then becomes `gatehouse serve --http`
/// (its pid written first, so the test can end it).
const SCRIPT: &str = r#"set -eu
eval "$(printf 'test-password' | gnome-keyring-daemon --unlock --components=secrets --daemonize)"
"$1" clients token claude_code > "$2/claude_code.token"
until [ -e "$2/go" ]; do sleep 0.05; done
echo $$ > "$2/serve.pid"
exec "$1" serve --http 127.0.0.1:0
"#;

/// `gatehouse serve --http` as the person starts it for a URL-only AI client.
struct Serve {
    child: Child,
    lines: Receiver<String>,
    token: String,
    work: PathBuf,
}

impl Serve {
    /// Starts it; `give_token` hands the app the token serve's keychain holds.
    fn start(machine: &Machine, give_token: impl FnOnce(&str)) -> Serve {
        common::require_tools(&["dbus-run-session", "gnome-keyring-daemon"]);
        let work = machine.work();
        std::fs::create_dir_all(&work).unwrap();
        let mut command = Command::new("dbus-run-session");
        command
            .args(["--", "bash", "-c", SCRIPT, "session"])
            .arg(env!("CARGO_BIN_EXE_gatehouse"))
            .arg(&work);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("GATEHOUSE_") {
                command.env_remove(&key);
            }
        }
        command
            .env("HOME", machine.home())
            .env("XDG_RUNTIME_DIR", machine.runtime())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                let _ = tx.send(line);
            }
        });
        let token_file = work.join("claude_code.token");
        let deadline = Instant::now() + Duration::from_secs(60);
        let token = loop {
            let token = std::fs::read_to_string(&token_file).unwrap_or_default();
            if token.trim().starts_with(tokens::TOKEN_PREFIX) {
                break token.trim().to_string();
            }
            assert!(Instant::now() < deadline, "no token was made");
            std::thread::sleep(Duration::from_millis(50));
        };
        give_token(&token);
        std::fs::write(work.join("go"), b"").unwrap();
        Serve {
            child,
            lines,
            token,
            work,
        }
    }

    /// Waits for a line of serve's stderr that contains `needle`, and returns it.
    fn said(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let line = self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| panic!("serve never said {needle:?}"));
            if line.contains(needle) {
                return line;
            }
        }
    }

    fn url(line: &str) -> String {
        line.split("listening on ")
            .nth(1)
            .and_then(|rest| rest.split([',', ' ']).next())
            .unwrap_or_else(|| panic!("no URL in {line:?}"))
            .to_string()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        // serve itself (the pid the script wrote), then its session.
        if let Ok(pid) = std::fs::read_to_string(self.work.join("serve.pid"))
            && let Ok(pid) = pid.trim().parse::<i32>()
        {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The TypeScript client over Streamable HTTP with `token` as its bearer.
fn ts_client(url: &str, token: &str, steps: &Value) -> (bool, Vec<Value>, String) {
    let mut command = ts_client_command(steps);
    command
        .arg(url)
        .env("GATEWAY_TOKEN", token)
        .stdin(Stdio::null());
    client_run(command)
}

/// One raw HTTP/1.1 POST of an MCP initialize with `headers`: the status code.
fn raw_initialize(addr: &str, headers: &[(&str, &str)]) -> u16 {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {response:?}"))
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

#[test]
fn an_http_client_through_serve_uses_the_apps_cards_gate_and_audit_log_until_the_app_quits() {
    let machine = Machine::new();
    let app = tokio::runtime::Runtime::new().unwrap();
    let desk = app.block_on(async { machine.open_app() });
    // The app's keychain and client list (its data directory).
    let store = Arc::new(MemoryStore::default());
    let index = tokens::index_path(&machine.app().join("data"));
    let book = Arc::new(TokenBook::new(store.clone(), index.clone()));
    let listener = app
        .block_on(async {
            BridgeListener::bind(&socket_path_in(&machine.runtime()))
                .map(|listener| listener.with_tokens(book))
        })
        .expect("bridge");
    app.spawn(listener.serve(desk.host().clone()));
    app.block_on(desk.connect_all());

    let serve = Serve::start(&machine, |token| {
        // The same person's keychain: the app finds the token serve's `clients token` made.
        store
            .set(
                &tokens::secret_name("claude_code"),
                &SecretValue::new(token.to_string()),
            )
            .unwrap();
        let (same, _) = tokens::issue(store.as_ref(), &index, "claude_code", false).unwrap();
        assert_eq!(same, token);
    });
    let line = serve.said("listening on ");
    assert!(line.contains("served by the desktop app's host"), "{line}");
    let url = Serve::url(&line);
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();

    // An HTTP client's call asks: the card is on the app's desk, the person answers there.
    let steps = json!([
        {"op": "list"},
        {"op": "call", "name": "demo__echo", "arguments": {"message": "over http, on the app"}},
        {"op": "call", "name": "demo__book_table", "arguments": {}},
    ]);
    let (ok, out, notes) = std::thread::scope(|scope| {
        let running = scope.spawn(|| ts_client(&url, &serve.token, &steps));
        let card = card_in(&desk, "demo", CardState::Asking);
        let caller = card
            .prompt
            .attribution
            .client()
            .cloned()
            .expect("the caller is on the card");
        assert_eq!(caller.client, "claude_code");
        assert_eq!(caller.transport, DownstreamTransport::Http);
        let content = json!({"name": "Ada", "date": "2026-12-24", "party_size": 2});
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
    assert!(ok, "{notes}");
    let names = offered(&out[0]);
    assert!(names.iter().any(|n| n == "demo__echo"), "{names:?}");
    assert_eq!(text(&out[1]), "over http, on the app");
    let booked: Value = serde_json::from_str(&text(&out[2])).unwrap();
    assert_eq!(booked["action"], "accept", "{booked}");
    assert_eq!(booked["content"]["name"], "Ada");
    assert_eq!(
        out[2]["result"]["content"].as_array().unwrap().len(),
        1,
        "the app asked the person: no note: {}",
        out[2]
    );

    // One audit log, the app's: each call with its token's client, over http.
    let calls: Vec<ToolCall> = payloads_in(&machine.app_audit());
    assert_eq!(calls.len(), 2, "{calls:?}");
    for call in &calls {
        let caller = call.caller.as_ref().expect("the call names its client");
        assert_eq!(caller.client, "claude_code", "{call:?}");
        assert_eq!(caller.transport, DownstreamTransport::Http, "{call:?}");
    }
    let receipt = payloads_in::<ElicitationReceipt>(&machine.app_audit())
        .into_iter()
        .next()
        .expect("a receipt");
    assert_eq!(receipt.action, ElicitationAnswer::Accept, "{receipt:?}");
    assert!(
        matches!(&receipt.caller, Some(ReceiptCaller::Client(c)) if c.client == "claude_code"),
        "{receipt:?}"
    );
    assert!(
        !machine.serve_own_audit().exists(),
        "serve opened no host of its own"
    );

    // The app's HTTP keeps the rules: no token, a wrong one, another site's Host or Origin.
    let bearer = format!("Bearer {}", serve.token);
    let host = ("Host", addr.as_str());
    assert_eq!(raw_initialize(&addr, &[host]), 401);
    assert_eq!(
        raw_initialize(&addr, &[host, ("Authorization", "Bearer ghgw_not-a-token")]),
        401
    );
    for (name, value) in [("Host", "evil.example"), ("Origin", "http://evil.example")] {
        let mut headers = vec![("Authorization", bearer.as_str()), (name, value)];
        if name == "Origin" {
            headers.push(host);
        }
        let status = raw_initialize(&addr, &headers);
        assert!(status == 403 || status == 400, "{name}: {value}: {status}");
    }
    assert_eq!(
        raw_initialize(&addr, &[host, ("Authorization", bearer.as_str())]),
        200
    );
    assert_eq!(
        payloads_in::<ToolCall>(&machine.app_audit()).len(),
        2,
        "nothing refused reached the gate"
    );

    // The app quits: serve says so and serves the same address with a host of its own
    // (headless; its own keychain's tokens, its own audit log and servers: none here).
    app.block_on(desk.shutdown());
    app.shutdown_timeout(Duration::from_secs(10));
    let line = serve.said("stopped serving");
    assert!(line.contains(&url), "{line}");
    assert!(line.contains("declines elicitations"), "{line}");
    serve.said("listening on ");
    let (ok, out, notes) = ts_client(&url, &serve.token, &json!([{"op": "list"}]));
    assert!(ok, "{notes}");
    assert_eq!(out[0]["names"], json!([]), "served by serve's own host");
    assert!(machine.serve_own_audit().exists());
}
