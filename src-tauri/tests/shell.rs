//! The desktop shell end to end under tauri's mock runtime (no display): the real
//! `tauri.conf.json` and capabilities (so the real ACL), the real command handler and desk,
//! and the demo server in both eras. Everything goes through IPC the way the window sends
//! it; the only stand-ins are the browser (a recorder), the keychain (memory) and the paths
//! (a temp dir).
//!
//! Needs the demo server next to the test's target directory:
//! `cargo build -p gatehouse-demo-server` (or `cargo build --workspace`) first.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gatehouse_attest::bundle::Posture;
use gatehouse_desk::{Desk, DeskPaths};
use gatehouse_desktop::commands::names::ALL;
use gatehouse_desktop::{Backend, Launch, MAIN_WINDOW, events};
use gatehouse_host::audit_event::gate::Admission;
use gatehouse_host::{MemoryStore, UrlOpener};
use gatehouse_testkit as kit;
use serde_json::{Value, json};
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{INVOKE_KEY, MockRuntime, get_ipc_response, mock_builder};
use tauri::webview::InvokeRequest;
use tauri::{App, Listener, Manager, WebviewWindow};

/// How long anything may take: a connect hashes and spawns the demo server.
const WAIT: Duration = Duration::from_secs(30);

/// The demo server's verified id (trust-roots/demo/DEMO-ONLY-bundle.template.json).
const DEMO_ID: &str = "urn:gatehouse:demo-server";

type Reply = Result<Value, Value>;

/// The browser: records what it was handed, opens nothing.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl UrlOpener for Recorder {
    fn open(&self, url: &str) -> Result<(), String> {
        self.0.lock().unwrap().push(url.to_string());
        Ok(())
    }
}

impl Recorder {
    fn opened(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

fn context() -> tauri::Context<MockRuntime> {
    tauri::generate_context!()
}

/// One IPC call as the window makes it, from the app's own origin.
fn invoke(window: &WebviewWindow<MockRuntime>, cmd: &str, args: Value) -> Reply {
    let request = InvokeRequest {
        cmd: cmd.into(),
        callback: CallbackFn(0),
        error: CallbackFn(1),
        url: "tauri://localhost".parse().unwrap(),
        body: InvokeBody::Json(args),
        headers: Default::default(),
        invoke_key: INVOKE_KEY.to_string(),
    };
    get_ipc_response(window, request).map(|body| {
        body.deserialize::<Value>()
            .unwrap_or_else(|e| panic!("{cmd}: the response is not JSON: {e}"))
    })
}

/// A command running on its own thread (`get_ipc_response` blocks until it resolves).
struct Running {
    what: String,
    reply: mpsc::Receiver<Reply>,
}

impl Running {
    /// Its reply, within [`WAIT`].
    fn reply(self) -> Reply {
        self.reply
            .recv_timeout(WAIT)
            .unwrap_or_else(|e| panic!("{} did not end within {WAIT:?}: {e}", self.what))
    }

    fn assert_still_running(&self) {
        if let Ok(reply) = self.reply.try_recv() {
            panic!("{} ended before it was answered: {reply:?}", self.what);
        }
    }
}

/// The app with its one window and the desk opened by `setup`.
struct Shell {
    app: App<MockRuntime>,
    window: WebviewWindow<MockRuntime>,
    browser: Arc<Recorder>,
    dir: tempfile::TempDir,
}

impl Shell {
    fn start() -> Shell {
        Shell::start_with(|_| {})
    }

    /// As `start`, with the launch changed by `adjust` first.
    fn start_with(adjust: impl FnOnce(&mut Launch)) -> Shell {
        let demo_server = kit::demo::server();
        let dir = tempfile::tempdir().unwrap();
        // Empty, so the machine's /etc/gatehouse is never read.
        let system_trust_roots = dir.path().join("system-trust-roots");
        std::fs::create_dir(&system_trust_roots).unwrap();
        let paths = DeskPaths {
            config: dir.path().join("config").join("servers.json"),
            data: dir.path().join("data"),
            logs: dir.path().join("data").join("logs"),
            user_trust_roots: Some(dir.path().join("config").join("trust-roots")),
            system_trust_roots,
        };
        let browser = Arc::new(Recorder::default());
        let mut launch = Launch {
            demo: true,
            demo_server: Some(demo_server),
            paths: Some(paths),
            opener: Some(browser.clone()),
            secrets: Some(Arc::new(MemoryStore::default())),
            connect_at_start: false,
            ..Launch::default()
        };
        adjust(&mut launch);
        let backend = Backend::local(launch).expect("the desk opens");
        let mut app = gatehouse_desktop::builder(mock_builder(), backend)
            .build(context())
            .expect("the app builds");
        // Tauri runs `setup` (which opens the desk and creates the window from
        // tauri.conf.json) when the event loop starts; the mock runtime's run_iteration
        // starts nothing else.
        #[allow(deprecated)]
        app.run_iteration(|_, _| {});
        assert!(
            app.try_state::<Arc<Desk>>().is_some(),
            "setup did not open the desk"
        );
        let window = app
            .get_webview_window(MAIN_WINDOW)
            .expect("tauri.conf.json creates the main window");
        Shell {
            app,
            window,
            browser,
            dir,
        }
    }

    fn invoke(&self, cmd: &str, args: Value) -> Reply {
        invoke(&self.window, cmd, args)
    }

    /// A command that must resolve.
    fn ok(&self, cmd: &str, args: Value) -> Value {
        self.invoke(cmd, args.clone())
            .unwrap_or_else(|e| panic!("{cmd} {args} was rejected: {e}"))
    }

    /// A command that must reject with `{code, message}`; returns the code.
    fn refused(&self, cmd: &str, args: Value) -> String {
        match self.invoke(cmd, args.clone()) {
            Ok(value) => panic!("{cmd} {args} resolved with {value}; it should be refused"),
            Err(error) => error["code"]
                .as_str()
                .unwrap_or_else(|| panic!("{cmd}: the error has no code: {error}"))
                .to_string(),
        }
    }

    fn spawn(&self, cmd: &str, args: Value) -> Running {
        let window = self.window.clone();
        let (tx, rx) = mpsc::channel();
        let command = cmd.to_string();
        let what = format!("{cmd} {args}");
        std::thread::spawn(move || {
            let _ = tx.send(invoke(&window, &command, args));
        });
        Running { what, reply: rx }
    }

    /// Polls `prompts_list` (as a reloaded window would) until a card matches.
    fn card(&self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let cards = self.ok("prompts_list", json!({}));
            let cards = cards.as_array().expect("prompts_list is a list");
            if let Some(card) = cards.iter().find(|c| matches(c)) {
                return card.clone();
            }
            assert!(
                Instant::now() < deadline,
                "no card {what} within {WAIT:?}; the cards: {cards:#?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The card of this id as `prompts_list` shows it now.
    fn card_now(&self, id: &Value) -> Value {
        let cards = self.ok("prompts_list", json!({}));
        cards
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["prompt"]["id"] == *id)
            .unwrap_or_else(|| panic!("card {id} is gone: {cards:#}"))
            .clone()
    }

    /// The payloads of `event` sent to the main window, from now on.
    fn record_events(&self, event: &str) -> Arc<Mutex<Vec<Value>>> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        self.window.listen(event, move |event| {
            let payload = serde_json::from_str(event.payload()).unwrap_or(Value::Null);
            sink.lock().unwrap().push(payload);
        });
        seen
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        if let Some(desk) = self.app.try_state::<Arc<Desk>>() {
            let desk = desk.inner().clone();
            tauri::async_runtime::block_on(desk.shutdown());
        }
    }
}

/// The ElicitResult the demo server says it received (its tools echo it as JSON text).
fn received(outcome: &Value) -> Value {
    let text = outcome["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {outcome}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn tool_names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .expect("a list of tools")
        .iter()
        .map(|t| t["name"].as_str().expect("a tool has a name").to_string())
        .collect()
}

fn booking() -> Value {
    json!({
        "name": "Ada Lovelace",
        "email": "ada@example.com",
        "date": "2026-12-24",
        "party_size": 4,
        "seating": "outdoor",
        "extras": ["bread", "wine"],
    })
}

#[test]
fn every_listed_command_is_registered_and_granted_and_nothing_else_is() {
    // Every command the API contract documents is in the list.
    let contract = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/desktop-api.md"),
    )
    .expect("docs/desktop-api.md");
    let documented: Vec<&str> = contract
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`').map(|(name, _)| name))
        .filter(|name| !name.contains("://"))
        .collect();
    assert!(documented.len() >= 10, "{documented:?}");
    // The window grants exactly the commands the one dispatcher runs.
    assert_eq!(ALL, gatehouse_desk::dispatch::COMMANDS);
    for name in &documented {
        assert!(ALL.contains(name), "{name} is documented but not listed");
    }
    for name in ALL {
        assert!(
            documented.contains(name),
            "{name} is listed but not documented"
        );
    }
    // The resources and prompts commands are among them.
    for name in [
        "server_prompts",
        "server_resources",
        "resource_read",
        "prompt_get",
        "argument_complete",
        "resource_subscribe",
        "resource_unsubscribe",
        "prompts_approve",
        "resources_approve",
        "resource_save",
    ] {
        assert!(ALL.contains(&name), "{name} is not listed");
    }
    // The window's capability grants exactly these commands and listening: nothing else.
    let capability: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("capabilities/main.json"),
        )
        .expect("capabilities/main.json"),
    )
    .expect("the capability is JSON");
    let mut granted: Vec<String> = capability["permissions"]
        .as_array()
        .expect("a list of permissions")
        .iter()
        .map(|p| p.as_str().expect("a permission by name").to_string())
        .collect();
    granted.sort();
    let mut expected: Vec<String> = ALL
        .iter()
        .map(|cmd| format!("allow-{}", cmd.replace('_', "-")))
        .chain([
            "core:event:allow-listen".into(),
            "core:event:allow-unlisten".into(),
        ])
        .collect();
    expected.sort();
    assert_eq!(granted, expected);

    let shell = Shell::start();
    // `quit` runs too, but ends the app: it has a test of its own.
    for &cmd in ALL.iter().filter(|cmd| **cmd != "quit") {
        // No arguments: either it runs (it needs none) or its arguments are refused as
        // missing. Never "not allowed" (not granted) or "not found" (not registered).
        match shell.invoke(cmd, json!({})) {
            Ok(_) => {}
            // Its arguments were refused as missing, by the dispatcher.
            Err(error) if error["code"] == "bad_arguments" => {
                let message = error["message"].as_str().unwrap_or_default();
                assert!(
                    message.contains("missing field") && message.contains(cmd),
                    "{cmd}: {error}"
                );
            }
            // Never "not allowed" (not granted) or "not found" (not registered).
            Err(Value::String(message)) => panic!("{cmd}: {message}"),
            // A desk error means the command ran.
            Err(error) => assert!(
                error["code"].is_string() && error["code"] != "unknown_command",
                "{cmd}: {error}"
            ),
        }
    }
    // What quitting would stop, before anything is connected.
    assert_eq!(
        shell.ok("quit_preview", json!({})),
        json!({"clients": [], "servers": [], "cards": 0, "signIns": 0})
    );
    for cmd in ["shell_exec", "plugin:shell|execute", "Servers_list"] {
        let error = shell.invoke(cmd, json!({})).unwrap_err();
        let message = error.as_str().unwrap_or_default();
        assert!(message.contains("not allowed"), "{cmd}: {error}");
    }
}

#[test]
fn the_window_may_listen_but_cannot_emit_events() {
    let shell = Shell::start();
    let seen = shell.record_events(events::PROMPTS);
    let listened = shell.invoke(
        "plugin:event|listen",
        json!({"event": events::PROMPTS, "target": {"kind": "Any"}, "handler": 7}),
    );
    let id = listened.expect("the window may listen");
    assert!(id.is_u64(), "listen returns an event id: {id}");
    shell
        .invoke(
            "plugin:event|unlisten",
            json!({"event": events::PROMPTS, "eventId": id}),
        )
        .expect("the window may unlisten");

    let forged = json!({"event": events::PROMPTS, "payload": {"promptId": 1, "reply": "submit"}});
    let error = shell
        .invoke("plugin:event|emit", forged.clone())
        .unwrap_err();
    assert!(
        error.as_str().is_some_and(|m| m.contains("not allowed")),
        "emit: {error}"
    );
    let to_main = json!({"target": {"kind": "AnyLabel", "label": MAIN_WINDOW},
                         "event": events::PROMPTS, "payload": {}});
    let error = shell.invoke("plugin:event|emit_to", to_main).unwrap_err();
    assert!(
        error.as_str().is_some_and(|m| m.contains("not allowed")),
        "emit_to: {error}"
    );
    assert!(
        seen.lock().unwrap().is_empty(),
        "a refused emit reached a listener: {:?}",
        seen.lock().unwrap()
    );
}

#[test]
fn the_demo_servers_are_listed_and_admitted_on_connect() {
    let shell = Shell::start();
    let servers_events = shell.record_events(events::SERVERS);
    let rows = shell.ok("servers_list", json!({}));
    let rows = rows.as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["demo", "demo-2025"], "{rows:#?}");
    for row in rows {
        assert_eq!(row["status"], "not_connected", "{row}");
        assert_eq!(row["demo"], true, "{row}");
        assert_eq!(row["transport"], "stdio", "{row}");
    }

    let detail = shell.ok("server_connect", json!({"name": "demo"}));
    assert_eq!(detail["row"]["status"], "admitted", "{detail:#}");
    assert_eq!(detail["row"]["reason"], Value::Null, "{detail:#}");
    let banner = &detail["banner"];
    assert_eq!(banner["verified_id"], DEMO_ID, "{banner:#}");
    assert_eq!(banner["status"], "admitted", "{banner:#}");
    assert_eq!(banner["demo"], true, "{banner:#}");
    assert_eq!(detail["era"], "2026-07-28", "{detail:#}");
    let allowed = tool_names(&detail["tools"]["allowed"]);
    let hidden = tool_names(&detail["tools"]["hidden"]);
    assert!(allowed.iter().any(|t| t == "book_table"), "{allowed:?}");
    assert!(hidden.iter().any(|t| t == "fail"), "{hidden:?}");
    assert!(!allowed.iter().any(|t| t == "fail"), "{allowed:?}");
    assert_eq!(detail["tools"]["blocked"], json!([]), "{detail:#}");

    let rows = shell.ok("servers_list", json!({}));
    assert_eq!(rows[0]["status"], "admitted", "{rows:#}");
    assert_eq!(rows[1]["status"], "not_connected", "{rows:#}");
    assert!(
        servers_events
            .lock()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "demo"),
        "no servers event for the connect"
    );

    let legacy = shell.ok("server_detail", json!({"name": "demo-2025"}));
    assert_eq!(legacy["row"]["status"], "admitted", "{legacy:#}");
    assert_eq!(legacy["era"], "2025-11-25", "{legacy:#}");

    assert_eq!(
        shell.refused("server_connect", json!({"name": "nope"})),
        "unknown_server"
    );

    let settings = shell.ok("settings_get", json!({}));
    assert_eq!(settings["demo"], true, "{settings:#}");
    let bundles = settings["bundles"].as_array().unwrap();
    let demo = bundles
        .iter()
        .find(|b| b["bundle_id"] == "DEMO-ONLY-gatehouse-demo")
        .unwrap_or_else(|| panic!("no demo bundle: {settings:#}"));
    assert!(
        demo["servers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == DEMO_ID),
        "{demo:#}"
    );
    assert_eq!(
        settings["paths"]["systemTrustRoots"],
        json!(shell.dir.path().join("system-trust-roots")),
        "{settings:#}"
    );
    assert_eq!(settings["problems"], json!([]), "{settings:#}");
    assert_eq!(settings["posture"], "deny-by-default", "{settings:#}");
    assert!(
        !settings["postureReason"]
            .as_str()
            .unwrap()
            .contains("--posture"),
        "{settings:#}"
    );
}

#[test]
fn sign_in_commands_take_typed_ids_and_replies_and_apply_only_to_servers_that_sign_in() {
    let shell = Shell::start();
    assert_eq!(
        shell.ok("sign_in_cards", json!({})),
        json!({"cards": [], "results": []})
    );
    // Only HTTP servers without a static credential sign in.
    std::fs::create_dir_all(shell.dir.path().join("config")).unwrap();
    std::fs::write(
        shell.dir.path().join("config").join("servers.json"),
        json!({"mcpServers": {
            "remote": {"url": "https://mcp.example/mcp"},
            "keyed": {"url": "https://api.example/mcp", "bearerTokenSecret": "keyed-bearer"},
        }})
        .to_string(),
    )
    .unwrap();
    assert_eq!(
        shell.ok("server_sign_ins", json!({})),
        json!([{"server": "remote", "signIn": null}])
    );
    // A decision names a card by its number and is one of two words.
    assert_eq!(
        shell.refused("sign_in_answer", json!({"signInId": 7, "reply": "open"})),
        "unknown_sign_in"
    );
    for bad in [
        json!({"signInId": 7, "reply": "Open"}),
        json!({"signInId": 7, "reply": "submit"}),
        json!({"signInId": "7", "reply": "cancel"}),
    ] {
        let error = shell.invoke("sign_in_answer", bad.clone()).unwrap_err();
        assert!(error["code"] == "bad_arguments", "{bad}: {error}");
    }
    assert_eq!(
        shell.refused("server_sign_in", json!({"name": "demo"})),
        "config_invalid"
    );
    assert_eq!(
        shell.refused("server_sign_in", json!({"name": "keyed"})),
        "config_invalid"
    );
    assert_eq!(
        shell.refused("server_sign_in", json!({"name": "missing"})),
        "unknown_server"
    );
    assert_eq!(
        shell.ok("server_sign_out", json!({"name": "remote"})),
        json!(false)
    );
    assert!(shell.browser.opened().is_empty());
}

#[test]
fn the_posture_asked_for_at_launch_reaches_admission_and_settings() {
    let shell = Shell::start_with(|launch| launch.posture = Some(Posture::Warn));
    let settings = shell.ok("settings_get", json!({}));
    assert_eq!(settings["posture"], "warn", "{settings:#}");
    assert_eq!(
        settings["postureReason"], "set by --posture",
        "{settings:#}"
    );
}

#[test]
fn looking_at_a_refused_server_never_readmits_it_only_connect_does() {
    let shell = Shell::start();
    // A copy of the demo server at a path no bundle binds: unattested under deny-by-default.
    let copy = shell.dir.path().join("unbound-server");
    std::fs::copy(kit::demo::server(), &copy).unwrap();
    let row = shell.ok(
        "server_add",
        json!({"entry": {"name": "unbound", "kind": "stdio", "command": copy.display().to_string()}}),
    );
    assert_eq!(row["status"], "not_connected", "{row:#}");
    assert_eq!(row["connected"], false, "{row:#}");
    let admissions = || {
        let records = shell.ok("audit_list", json!({"event": "admission"}));
        kit::audit::payloads_in::<Admission>(records.as_array().unwrap())
            .iter()
            .filter(|a| a.name == "unbound")
            .count()
    };

    // First sight connects once; looking again (what every refresh does) does not.
    let detail = shell.ok("server_detail", json!({"name": "unbound"}));
    assert_eq!(detail["row"]["status"], "unattested", "{detail:#}");
    assert_eq!(detail["row"]["connected"], false, "{detail:#}");
    assert_eq!(detail["banner"], Value::Null, "{detail:#}");
    assert_eq!(admissions(), 1);
    for _ in 0..3 {
        let again = shell.ok("server_detail", json!({"name": "unbound"}));
        assert_eq!(again["row"]["status"], "unattested", "{again:#}");
    }
    assert_eq!(admissions(), 1, "server_detail re-ran admission");

    // Connect is the explicit retry: admission runs again, once.
    let retried = shell.ok("server_connect", json!({"name": "unbound"}));
    assert_eq!(retried["row"]["status"], "unattested", "{retried:#}");
    assert_eq!(admissions(), 2);

    // A live connection says so, and Reconnect replaces it.
    let demo = shell.ok("server_detail", json!({"name": "demo"}));
    assert_eq!(demo["row"]["connected"], true, "{demo:#}");
    let again = shell.ok("server_connect", json!({"name": "demo"}));
    assert_eq!(again["row"]["status"], "admitted", "{again:#}");
}

#[test]
fn an_import_cannot_take_the_demo_servers_names_in_demo_mode() {
    let shell = Shell::start();
    let config = shell.dir.path().join("config").join("servers.json");
    let before = std::fs::read(&config).ok();
    // Every shape import accepts: Claude Desktop / Cursor, VS Code mcp.json, VS Code settings.
    let shapes: [fn(serde_json::Value) -> serde_json::Value; 3] = [
        |servers| json!({"mcpServers": servers}),
        |servers| json!({"servers": servers}),
        |servers| json!({"mcp": {"servers": servers}}),
    ];
    for shape in shapes {
        for name in ["demo", "demo-2025"] {
            let text = shape(json!({
                "fine": {"command": "/bin/true"},
                name: {"command": "/bin/true"},
            }))
            .to_string();
            assert_eq!(
                shell.refused("servers_import", json!({"text": text})),
                "server_exists",
                "{name} in {text}"
            );
            assert_eq!(std::fs::read(&config).ok(), before, "nothing imported");
        }
    }
    let rows = shell.ok("servers_list", json!({}));
    let names: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["demo", "demo-2025"], "{rows:#}");
    // The same file without the demo's names imports.
    let text = json!({"mcpServers": {"fine": {"command": "/bin/true"}}}).to_string();
    let outcome = shell.ok("servers_import", json!({"text": text}));
    assert_eq!(outcome["imported"], json!(["fine"]), "{outcome:#}");
}

#[test]
fn an_import_that_changes_what_runs_waits_for_a_typed_confirmation() {
    let shell = Shell::start();
    let text = json!({"mcpServers": {
        "hooked": {"command": "/bin/true", "env": {"NODE_OPTIONS": "--require /tmp/evil.js"}},
        "plain": {"command": "/bin/true"},
    }})
    .to_string();
    let outcome = shell.ok("servers_import", json!({"text": text}));
    assert_eq!(outcome["imported"], json!(["plain"]), "{outcome:#}");
    assert_eq!(
        outcome["quarantined"],
        json!([{"name": "hooked", "settings": [
            {"kind": "env", "name": "NODE_OPTIONS", "value": "--require /tmp/evil.js"}
        ]}]),
        "{outcome:#}"
    );
    // Confirmed by name, through the typed argument: imported.
    let outcome = shell.ok(
        "servers_import",
        json!({"text": text, "confirmed": ["hooked"]}),
    );
    assert_eq!(outcome["imported"], json!(["hooked"]), "{outcome:#}");
    assert_eq!(outcome["quarantined"], json!([]), "{outcome:#}");
}

#[test]
fn a_form_prompt_is_answered_through_ipc_and_reaches_the_server() {
    let shell = Shell::start();
    let prompt_events = shell.record_events(events::PROMPTS);
    let call = shell.spawn(
        "tool_call",
        json!({"server": "demo", "tool": "book_table", "arguments": {}}),
    );
    let card = shell.card("asking for book_table", |c| c["state"] == "asking");
    call.assert_still_running();
    let id = card["prompt"]["id"].clone();
    let prompt = &card["prompt"];
    assert_eq!(prompt["server"], "demo", "{card:#}");
    assert_eq!(
        prompt["message"], "Book a table at the demo restaurant",
        "{card:#}"
    );
    assert_eq!(prompt["banner"]["verified_id"], DEMO_ID, "{card:#}");
    assert_eq!(prompt["banner"]["demo"], true, "{card:#}");
    assert_eq!(
        prompt["assessment"]["decision"], "allow_elicitation_with_receipt",
        "{card:#}"
    );
    let body = &prompt["body"];
    assert_eq!(body["mode"], "form", "{card:#}");
    let defaults = &body["defaults"];
    assert_eq!(defaults["party_size"], 2, "{defaults:#}");
    assert_eq!(defaults["seating"], "indoor", "{defaults:#}");
    assert_eq!(defaults["extras"], json!(["bread"]), "{defaults:#}");
    assert_eq!(card["problems"], json!([]), "{card:#}");

    // The host's own validator, inline.
    for (bad, field) in [
        (
            json!({"name": "Ada", "date": "2026-12-24", "party_size": "four"}),
            "party_size",
        ),
        (
            json!({"name": "Ada", "date": "2026-12-24", "party_size": 40}),
            "party_size",
        ),
        (json!({"name": "Ada", "party_size": 2}), "date"),
    ] {
        let errors = shell.ok("prompt_validate", json!({"promptId": id, "content": bad}));
        let errors = errors.as_array().unwrap();
        assert!(
            errors.iter().any(|e| e["field"] == field),
            "{bad}: expected an error for {field}, got {errors:?}"
        );
    }
    assert_eq!(
        shell.ok(
            "prompt_validate",
            json!({"promptId": id, "content": booking()})
        ),
        json!([])
    );
    assert_eq!(
        shell.refused(
            "prompt_validate",
            json!({"promptId": 999_999, "content": {}})
        ),
        "unknown_prompt"
    );

    // A reloaded window finds the same card, still asking.
    let again = shell.card_now(&id);
    assert_eq!(again["state"], "asking", "{again:#}");
    assert_eq!(again["askedAt"], card["askedAt"]);
    call.assert_still_running();

    // Malformed answers are refused and leave the card asking.
    assert_eq!(
        shell.refused(
            "prompt_answer",
            json!({"promptId": id, "answer": {"reply": "open"}})
        ),
        "answer_invalid"
    );
    assert_eq!(
        shell.refused(
            "prompt_answer",
            json!({"promptId": id, "answer": {"reply": "submit"}})
        ),
        "answer_invalid"
    );
    assert_eq!(shell.card_now(&id)["state"], "asking");
    // Only finished cards can be dismissed.
    assert_eq!(
        shell.refused("prompt_dismiss", json!({"promptId": id})),
        "prompt_not_finished"
    );

    let answered = shell.ok(
        "prompt_answer",
        json!({"promptId": id, "answer": {"reply": "submit", "content": booking()}}),
    );
    assert_eq!(answered, Value::Null);
    let outcome = call.reply().expect("book_table resolves");
    assert_eq!(outcome["isError"], false, "{outcome:#}");
    assert_eq!(
        received(&outcome),
        json!({"action": "accept", "content": booking()}),
        "{outcome:#}"
    );
    let records = outcome["elicitations"].as_array().unwrap();
    assert_eq!(records.len(), 1, "{outcome:#}");
    assert_eq!(records[0]["action"], "accept", "{outcome:#}");
    assert_eq!(records[0]["prompt_id"], id, "{outcome:#}");

    assert_eq!(
        shell.refused(
            "prompt_answer",
            json!({"promptId": id, "answer": {"reply": "submit", "content": booking()}})
        ),
        "prompt_not_asking"
    );
    let done = shell.card_now(&id);
    assert_eq!(done["state"], "answered", "{done:#}");
    assert_eq!(done["result"]["isError"], false, "{done:#}");
    assert_eq!(done["result"]["text"], outcome["text"], "{done:#}");

    let seen = prompt_events.lock().unwrap().clone();
    assert!(
        seen.iter().any(|e| e["promptId"] == id),
        "no prompts event for card {id}: {seen:?}"
    );
    // Events say what changed, nothing more.
    for event in &seen {
        let keys: Vec<&String> = event.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["promptId"], "{event}");
    }

    assert_eq!(
        shell.ok("prompt_dismiss", json!({"promptId": id})),
        Value::Null
    );
    assert_eq!(shell.ok("prompts_list", json!({})), json!([]));
    let receipts = shell.ok("audit_list", json!({"event": "elicitation_receipt"}));
    assert_eq!(receipts.as_array().unwrap().len(), 1, "{receipts:#}");
    assert!(shell.browser.opened().is_empty());
}

#[test]
fn url_prompts_the_host_waits_on_can_be_cancelled_while_waiting() {
    // 2026-07-28 input_required (the user retries when done), 2025-11-25 -32042 (the host
    // waits for the completion notification) and 2025-11-25 elicitation/create (the call is
    // still running on the server): after the URL is opened, Cancel ends the call.
    for (server, tool, era, phase) in [
        ("demo", "connect_account", "2026-07-28", "retry"),
        (
            "demo-2025",
            "connect_account_required",
            "2025-11-25",
            "completion",
        ),
        ("demo-2025", "connect_account", "2025-11-25", "in_call"),
    ] {
        let shell = Shell::start();
        let call = shell.spawn(
            "tool_call",
            json!({"server": server, "tool": tool, "arguments": {"service": "files"}}),
        );
        let card = shell.card("asking", |c| c["state"] == "asking");
        let id = card["prompt"]["id"].clone();
        assert_eq!(card["prompt"]["era"], era, "{tool}: {card:#}");
        assert_eq!(card["prompt"]["body"]["mode"], "url", "{tool}: {card:#}");
        let full = card["prompt"]["body"]["display"]["full"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(full.starts_with("http://127.0.0.1:"), "{tool}: {full}");
        assert!(
            shell.browser.opened().is_empty(),
            "{tool}: opened before consent"
        );
        shell.ok(
            "prompt_answer",
            json!({"promptId": id, "answer": {"reply": "open"}}),
        );
        let waiting = shell.card("waiting after open", |c| {
            c["prompt"]["id"] == id && c["state"] == "waiting"
        });
        assert_eq!(waiting["phase"], phase, "{tool}: {waiting:#}");
        assert_eq!(shell.browser.opened(), vec![full], "{tool}");
        call.assert_still_running();
        if phase == "in_call" {
            // Nothing to retry while the server still holds the call.
            assert_eq!(
                shell.refused(
                    "prompt_wait_choice",
                    json!({"promptId": id, "choice": "retry"})
                ),
                "prompt_not_retryable",
                "{tool}"
            );
            call.assert_still_running();
        }
        shell.ok(
            "prompt_wait_choice",
            json!({"promptId": id, "choice": "cancel"}),
        );
        let error = call.reply().expect_err("a cancelled connect fails");
        assert_eq!(error["code"], "cancelled", "{tool}: {error:#}");
        if phase == "in_call" {
            // The server was told: the running request was cancelled on the wire.
            let traffic = shell.ok("traffic_list", json!({"server": server}));
            let cancelled = traffic.as_array().unwrap().iter().any(|entry| {
                entry["direction"] == "out"
                    && entry["message"]["method"] == "notifications/cancelled"
            });
            assert!(
                cancelled,
                "{tool}: no notifications/cancelled in {traffic:#}"
            );
        }
        let closed = shell.card_now(&id);
        assert_eq!(closed["state"], "closed", "{tool}: {closed:#}");
        assert_eq!(
            shell.refused(
                "prompt_wait_choice",
                json!({"promptId": id, "choice": "retry"})
            ),
            "prompt_not_waiting",
            "{tool}"
        );
    }
}

#[test]
fn a_sensitive_form_is_refused_without_asking_and_the_server_gets_decline() {
    let shell = Shell::start();
    let call = shell.spawn(
        "tool_call",
        json!({"server": "demo", "tool": "ask_password", "arguments": {}}),
    );
    let outcome = call.reply().expect("ask_password resolves");
    assert_eq!(
        received(&outcome),
        json!({"action": "decline"}),
        "{outcome:#}"
    );
    let cards = shell.ok("prompts_list", json!({}));
    let cards = cards.as_array().unwrap();
    assert_eq!(cards.len(), 1, "{cards:#?}");
    let card = &cards[0];
    assert_eq!(card["state"], "refused", "{card:#}");
    let assessment = &card["prompt"]["assessment"];
    assert_eq!(
        assessment["decision"], "deny_sensitive_form_elicitation",
        "{card:#}"
    );
    assert!(
        assessment["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["code"] == "sensitive_field"),
        "{card:#}"
    );
    let id = card["prompt"]["id"].clone();
    assert_eq!(
        shell.refused(
            "prompt_answer",
            json!({"promptId": id, "answer": {"reply": "submit", "content": {"password": "hunter2"}}})
        ),
        "prompt_not_asking"
    );
    assert_eq!(
        outcome["elicitations"][0]["action"], "decline",
        "{outcome:#}"
    );
    assert!(shell.browser.opened().is_empty());
}

#[test]
fn launch_arguments_are_parsed_strictly() {
    let args = |list: &[&str]| {
        std::iter::once("gatehouse-desktop")
            .chain(list.iter().copied())
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let launch = Launch::from_args(args(&["--demo", "--policy", "strict.toml"]))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(launch.demo);
    assert_eq!(launch.policy, Some(PathBuf::from("strict.toml")));
    assert!(launch.connect_at_start);
    assert!(launch.paths.is_none() && launch.opener.is_none() && launch.secrets.is_none());

    let launch = Launch::from_args(args(&["--policy", "a.toml", "--demo"]))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(launch.demo);
    assert_eq!(launch.policy, Some(PathBuf::from("a.toml")));

    let refused = |list: &[&str]| match Launch::from_args(args(list)) {
        Ok(_) => panic!("{list:?} was accepted"),
        Err(message) => message,
    };
    let launch = Launch::from_args(args(&["--posture", "warn"])).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(launch.posture, Some(Posture::Warn));
    let launch = Launch::from_args(args(&["--posture", "deny-by-default"]))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(launch.posture, Some(Posture::DenyByDefault));
    // A look-alike of a posture is not one.
    let message = refused(&["--posture", "Warn"]);
    assert!(
        message.contains("\"Warn\" is not deny-by-default or warn"),
        "{message}"
    );
    let message = refused(&["--posture"]);
    assert!(message.contains("--posture needs"), "{message}");
    let message = refused(&["--demo", "--evil"]);
    assert!(message.contains("unknown argument \"--evil\""), "{message}");
    assert!(message.contains("usage"), "{message}");
    let message = refused(&["--policy"]);
    assert!(message.contains("--policy needs a file"), "{message}");
    let message = refused(&["--help"]);
    assert!(message.contains("usage"), "{message}");
    let message = refused(&["demo"]);
    assert!(message.contains("unknown argument"), "{message}");
}

/// Polls `events` (as recorded by `record_events`) until one matches.
fn event_seen(events: &Arc<Mutex<Vec<Value>>>, what: &str, matches: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        if events.lock().unwrap().iter().any(&matches) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "no event {what} within {WAIT:?}: {:?}",
        events.lock().unwrap()
    );
}

#[test]
fn a_demo_resource_is_read_and_a_demo_prompt_got_through_ipc() {
    let downloads = tempfile::tempdir().unwrap();
    let saves = downloads.path().join("Downloads");
    let shell = Shell::start_with(|launch| launch.downloads = Some(saves.clone()));
    shell.ok("server_connect", json!({"name": "demo"}));

    // The listing, grouped by the gate.
    let resources = shell.ok("server_resources", json!({"server": "demo"}));
    let allowed: Vec<&str> = resources["allowed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    for uri in [
        "demo://docs/welcome.txt",
        "demo://docs/guide.md",
        "demo://images/logo.png",
        "demo://data/sample.bin",
        "demo://counter",
    ] {
        assert!(allowed.contains(&uri), "{uri} not allowed: {resources:#}");
    }
    assert_eq!(
        resources["templates"][0]["template"]["uriTemplate"], "demo://notes/{name}",
        "{resources:#}"
    );
    assert_eq!(resources["templates"][0]["variables"], json!(["name"]));
    assert_eq!(resources["subscriptions"], json!([]));
    let prompts = shell.ok("server_prompts", json!({"server": "demo"}));
    let names: Vec<&str> = prompts["allowed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["summarize", "review_code", "describe_logo", "plan_trip"],
        "{prompts:#}"
    );

    // Text, with who sent it.
    let read = shell.ok(
        "resource_read",
        json!({"server": "demo", "uri": "demo://docs/welcome.txt"}),
    );
    assert!(read["readId"].is_u64(), "{read:#}");
    assert_eq!(read["uri"], "demo://docs/welcome.txt");
    assert_eq!(read["sender"]["server"], "demo");
    assert_eq!(read["sender"]["banner"]["verified_id"], DEMO_ID, "{read:#}");
    let item = &read["contents"][0];
    assert_eq!(item["display"]["kind"], "text", "{read:#}");
    assert!(
        item["display"]["text"]
            .as_str()
            .unwrap()
            .starts_with("Welcome to the Gatehouse demo server!"),
        "{read:#}"
    );
    assert_eq!(
        shell.refused(
            "resource_save",
            json!({"readId": read["readId"], "index": 0})
        ),
        "not_binary"
    );

    // A checked image, and bytes offered for saving.
    let logo = shell.ok(
        "resource_read",
        json!({"server": "demo", "uri": "demo://images/logo.png"}),
    );
    assert_eq!(logo["contents"][0]["display"]["kind"], "image", "{logo:#}");
    assert_eq!(logo["contents"][0]["display"]["mime"], "image/png");
    let sample = shell.ok(
        "resource_read",
        json!({"server": "demo", "uri": "demo://data/sample.bin"}),
    );
    let display = &sample["contents"][0]["display"];
    assert_eq!(display["kind"], "binary", "{sample:#}");
    assert_eq!(display["size"], 64, "{sample:#}");
    let id = sample["readId"].clone();
    let first = shell.ok("resource_save", json!({"readId": id, "index": 0}));
    assert_eq!(first, json!(saves.join("sample.bin")));
    assert_eq!(
        std::fs::read(saves.join("sample.bin")).unwrap(),
        (0u8..64).collect::<Vec<_>>()
    );
    // Never over an existing file.
    let second = shell.ok("resource_save", json!({"readId": id, "index": 0}));
    assert_eq!(second, json!(saves.join("sample (2).bin")));
    assert_eq!(std::fs::read_dir(&saves).unwrap().count(), 2);
    assert_eq!(
        shell.refused("resource_save", json!({"readId": id, "index": 1})),
        "read_item_missing"
    );
    assert_eq!(
        shell.refused("resource_save", json!({"readId": 987_654, "index": 0})),
        "read_not_kept"
    );

    // A template with a completed value.
    let values = shell.ok(
        "argument_complete",
        json!({"server": "demo", "target": {"template": "demo://notes/{name}"},
               "argument": "name", "value": "gro"}),
    );
    assert_eq!(values, json!(["groceries"]));
    let note = shell.ok(
        "resource_read",
        json!({"server": "demo", "template": "demo://notes/{name}", "values": {"name": "groceries"}}),
    );
    assert_eq!(note["uri"], "demo://notes/groceries", "{note:#}");
    assert_eq!(
        note["contents"][0]["display"]["text"],
        "Groceries: bread, milk, apples and coffee."
    );
    // Exactly one of uri and template; typed arguments only.
    assert_eq!(
        shell.refused(
            "resource_read",
            json!({"server": "demo", "uri": "demo://counter", "template": "demo://notes/{name}"})
        ),
        "read_target_invalid"
    );
    assert_eq!(
        shell.refused("resource_read", json!({"server": "demo"})),
        "read_target_invalid"
    );
    assert_eq!(
        shell.refused(
            "resource_read",
            json!({"server": "demo", "uri": "demo://private/../etc/passwd"})
        ),
        "resource_not_admitted"
    );

    // A prompt, with a completed argument.
    let topics = shell.ok(
        "argument_complete",
        json!({"server": "demo", "target": {"prompt": "summarize"},
               "argument": "topic", "value": "m", "context": {}}),
    );
    assert_eq!(topics, json!(["mcp"]));
    let got = shell.ok(
        "prompt_get",
        json!({"server": "demo", "name": "summarize", "arguments": {"topic": "mcp"}}),
    );
    assert_eq!(got["prompt"], "summarize");
    assert_eq!(got["description"], "A short summary of mcp", "{got:#}");
    assert_eq!(got["sender"]["banner"]["verified_id"], DEMO_ID);
    assert_eq!(got["messages"][0]["role"], "user", "{got:#}");
    assert_eq!(
        got["messages"][0]["display"],
        json!({"kind": "text", "text": "Summarize mcp in a short summary."})
    );
    for bad in [
        json!({"server": "demo", "name": "summarize", "arguments": {"topic": 7}}),
        json!({"server": "demo", "name": 7}),
    ] {
        let error = shell.invoke("prompt_get", bad.clone()).unwrap_err();
        assert!(error["code"] == "bad_arguments", "{bad}: {error}");
    }
    let error = shell
        .invoke(
            "argument_complete",
            json!({"server": "demo", "target": {"tool": "echo"}, "argument": "x", "value": ""}),
        )
        .unwrap_err();
    assert!(error["code"] == "bad_arguments", "{error}");

    // Approvals are the user's only in the warn posture.
    assert_eq!(
        shell.refused(
            "prompts_approve",
            json!({"server": "demo", "names": ["summarize"]})
        ),
        "posture_forbids"
    );
    assert_eq!(
        shell.refused(
            "resources_approve",
            json!({"server": "demo", "uris": ["demo://elsewhere"]})
        ),
        "posture_forbids"
    );

    // A subscription's updates reach the window as notices naming the resource.
    let notices = shell.record_events(events::RESOURCES);
    assert_eq!(
        shell.ok(
            "resource_subscribe",
            json!({"server": "demo", "uri": "demo://counter"})
        ),
        Value::Null
    );
    event_seen(&notices, "for demo://counter", |e| {
        *e == json!({"server": "demo", "uri": "demo://counter"})
    });
    let listed = shell.ok("server_resources", json!({"server": "demo"}));
    assert_eq!(listed["subscriptions"], json!(["demo://counter"]));
    shell.ok(
        "resource_unsubscribe",
        json!({"server": "demo", "uri": "demo://counter"}),
    );
    let listed = shell.ok("server_resources", json!({"server": "demo"}));
    assert_eq!(listed["subscriptions"], json!([]));
}
