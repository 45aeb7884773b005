//! The background host as a real process (`gatehouse-background`, the demo, its own
//! directories and runtime directory, no session bus), driven over its window socket by the
//! window's own client (`gatehouse_desk::wire::DeskClient`) and by raw sockets for what a
//! client must not be able to do. The window it starts is a recorder script
//! (`$GATEHOUSE_WINDOW`).
//!
//! Needs the demo server: `cargo build -p gatehouse-demo-server` first.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use gatehouse_desk::events::SERVERS;
use gatehouse_desk::wire::{DeskClient, Heard, Role};
use gatehouse_testkit as kit;
use serde_json::{Value, json};

/// How long anything may take: a connect hashes and spawns the demo server.
const WAIT: Duration = Duration::from_secs(60);

struct Host {
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl Host {
    fn start() -> Host {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["config", "data", "home", "run"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        std::fs::set_permissions(
            dir.path().join("run"),
            std::fs::Permissions::from_mode(0o700),
        )
        .unwrap();
        let recorder = dir.path().join("window.sh");
        std::fs::write(
            &recorder,
            "#!/bin/sh\nprintf 'started %s\\n' \"$*\" >> \"$GATEHOUSE_TEST_WINDOW_LOG\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&recorder, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut host = Host { dir, child: None };
        host.child = Some(host.spawn());
        host
    }

    fn command(&self) -> Command {
        let dir = self.dir.path();
        let mut command = Command::new(env!("CARGO_BIN_EXE_gatehouse-background"));
        command
            .arg("--demo")
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .env("HOME", dir.join("home"))
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("XDG_DATA_HOME", dir.join("data"))
            .env("XDG_RUNTIME_DIR", dir.join("run"))
            .env("GATEHOUSE_DEMO_SERVER", kit::demo::server())
            .env("GATEHOUSE_WINDOW", dir.join("window.sh"))
            .env("GATEHOUSE_TEST_WINDOW_LOG", dir.join("window.log"))
            .env("BROWSER", "/bin/false")
            .stdin(Stdio::null());
        command
    }

    fn spawn(&self) -> Child {
        self.command()
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("gatehouse-background starts")
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("run/gatehouse/desk.sock")
    }

    fn bridge_socket(&self) -> PathBuf {
        self.dir.path().join("run/gatehouse/gateway.sock")
    }

    /// The windows the host started (the recorder's lines).
    fn windows_started(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("window.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Connects as `role` once the host listens.
    async fn connect(&self, role: Role) -> (DeskClient, tokio::sync::mpsc::Receiver<Heard>) {
        let deadline = Instant::now() + WAIT;
        loop {
            match DeskClient::connect(&self.socket(), role).await {
                Ok(connected) => return connected,
                Err(error) => {
                    assert!(
                        Instant::now() < deadline,
                        "the host did not listen within {WAIT:?}: {error}"
                    );
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    /// Waits for the host process to end; its exit status.
    fn wait_exit(&mut self) -> std::process::ExitStatus {
        let child = self.child.as_mut().expect("a host");
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                self.child = None;
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the host did not exit within {WAIT:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Waits for an event named `name` whose payload `matches`.
async fn heard(
    events: &mut tokio::sync::mpsc::Receiver<Heard>,
    name: &str,
    matches: impl Fn(&Value) -> bool,
) -> Value {
    let found = tokio::time::timeout(WAIT, async {
        while let Some(heard) = events.recv().await {
            match heard {
                Heard::Event(event) if event.event == name && matches(&event.payload) => {
                    return event.payload;
                }
                Heard::Event(_) => {}
                Heard::Closed(why) => panic!("the connection closed waiting for {name}: {why}"),
            }
        }
        panic!("no more events waiting for {name}");
    })
    .await;
    found.unwrap_or_else(|_| panic!("no {name} event within {WAIT:?}"))
}

/// Waits until the host (which connects every server at start) has `demo` connected.
async fn demo_connected(client: &DeskClient) {
    let deadline = Instant::now() + WAIT;
    loop {
        let rows = client.call("servers_list", Value::Null).await.unwrap();
        let demo = rows
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "demo")
            .cloned()
            .unwrap_or_default();
        if demo["connected"] == true {
            assert_eq!(demo["status"], "admitted", "{demo:#}");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "demo did not connect within {WAIT:?}: {demo:#}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One raw line exchange on the window socket: what the host answers `hello`.
fn raw_hello(socket: &Path, hello: &[u8]) -> Value {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    stream.write_all(hello).unwrap();
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn windows_run_commands_through_the_dispatcher_and_hear_events_and_one_host_serves() {
    let host = Host::start();
    let (window, mut events) = host.connect(Role::Window).await;
    assert_eq!(window.accepted().version, env!("CARGO_PKG_VERSION"));
    let rows = window.call("servers_list", Value::Null).await.unwrap();
    let names: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["demo", "demo-2025"], "{rows:#}");

    // Errors come back as the window gets them: {code, message}.
    let unknown = window.call("shell_exec", json!({})).await.unwrap_err();
    assert_eq!(unknown["code"], "unknown_command", "{unknown}");
    let bad = window
        .call("server_connect", json!({"name": 7}))
        .await
        .unwrap_err();
    assert_eq!(bad["code"], "bad_arguments", "{bad}");
    let refused = window
        .call("server_detail", json!({"name": "missing"}))
        .await
        .unwrap_err();
    assert_eq!(refused["code"], "unknown_server", "{refused}");

    // A second window hears the same events as the first.
    let (second, mut second_events) = host.connect(Role::Window).await;
    demo_connected(&second).await;
    let detail = second
        .call("server_connect", json!({"name": "demo"}))
        .await
        .unwrap();
    assert_eq!(detail["row"]["status"], "admitted", "{detail:#}");
    heard(&mut events, SERVERS, |p| p["name"] == "demo").await;
    heard(&mut second_events, SERVERS, |p| p["name"] == "demo").await;

    // Another host for the same user steps aside, saying so, and the first serves on.
    let second_host = host
        .command()
        .output()
        .expect("a second gatehouse-background runs");
    assert!(second_host.status.success(), "{second_host:?}");
    let said = String::from_utf8_lossy(&second_host.stderr);
    assert!(said.contains("already runs"), "{said}");
    assert!(window.call("servers_list", Value::Null).await.is_ok());
    assert!(host.windows_started().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_does_not_say_hello_properly_is_refused_and_served_nothing() {
    let host = Host::start();
    // The host listens once its window connects work.
    let _ = host.connect(Role::Control).await;
    let socket = host.socket();
    let reply = raw_hello(&socket, b"hello\n");
    assert_eq!(reply["error"]["code"], "desk_bad_hello", "{reply}");
    assert!(reply.get("accepted").is_none(), "{reply}");
    let reply = raw_hello(&socket, b"{\"gatehouse_desk\":2,\"role\":\"window\"}\n");
    assert_eq!(reply["error"]["code"], "desk_version_mismatch", "{reply}");
    let reply = raw_hello(&socket, b"{\"gatehouse_desk\":1,\"role\":\"admin\"}\n");
    assert_eq!(reply["error"]["code"], "desk_bad_hello", "{reply}");
    // A hello longer than the limit is not read to its end.
    let mut long = vec![b'x'; gatehouse_desk::wire::HELLO_LIMIT + 10];
    long.push(b'\n');
    let reply = raw_hello(&socket, &long);
    assert_eq!(reply["error"]["code"], "desk_line_too_long", "{reply}");
    // A request before a hello is a bad hello, not a command.
    let reply = raw_hello(
        &socket,
        b"{\"id\":1,\"command\":\"servers_list\",\"args\":{}}\n",
    );
    assert_eq!(reply["error"]["code"], "desk_bad_hello", "{reply}");
    let accepted = raw_hello(&socket, b"{\"gatehouse_desk\":1,\"role\":\"control\"}\n");
    assert!(accepted["accepted"]["pid"].is_u64(), "{accepted}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_windows_than_the_limit_are_refused() {
    let host = Host::start();
    let mut windows = Vec::new();
    for _ in 0..gatehouse_background::MAX_WINDOWS {
        windows.push(host.connect(Role::Window).await);
    }
    let refused = DeskClient::connect(&host.socket(), Role::Window)
        .await
        .err()
        .expect("one window too many is refused");
    assert_eq!(refused.code, "desk_too_many_windows", "{refused}");
    windows.pop();
    // The slot is free again once a window goes (the host notices the close).
    let deadline = Instant::now() + WAIT;
    loop {
        match DeskClient::connect(&host.socket(), Role::Window).await {
            Ok(_) => break,
            Err(error) => {
                assert_eq!(error.code, "desk_too_many_windows");
                assert!(Instant::now() < deadline, "the slot never came free");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_with_no_window_starts_the_window_and_quit_declines_it_and_ends_serving() {
    let mut host = Host::start();
    // A control connection is no window: what it causes still needs one.
    let (control, _) = host.connect(Role::Control).await;
    demo_connected(&control).await;
    let call = {
        let control = control.clone();
        tokio::spawn(async move {
            control
                .call(
                    "tool_call",
                    json!({"server": "demo", "tool": "book_table", "arguments": {}}),
                )
                .await
        })
    };
    let deadline = Instant::now() + WAIT;
    let card = loop {
        let cards = control.call("prompts_list", Value::Null).await.unwrap();
        if let Some(card) = cards
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["state"] == "asking")
        {
            break card.clone();
        }
        assert!(Instant::now() < deadline, "no card within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(card["prompt"]["server"], "demo", "{card:#}");
    // The window was started, with the host's own launch options.
    let deadline = Instant::now() + WAIT;
    while host.windows_started().is_empty() {
        assert!(Instant::now() < deadline, "no window was started");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(host.windows_started(), ["started --demo"]);
    assert!(host.bridge_socket().exists(), "the bridge serves");

    // A window connecting sees the pending card and what quitting would stop.
    let (window, mut events) = host.connect(Role::Window).await;
    let plan = window.call("quit_preview", Value::Null).await.unwrap();
    assert_eq!(plan["cards"], 1, "{plan:#}");
    assert!(
        plan["servers"].as_array().unwrap().contains(&json!("demo")),
        "{plan:#}"
    );
    let plan = window.call("quit", Value::Null).await.unwrap();
    assert_eq!(plan["cards"], 1, "{plan:#}");
    // The card was declined: the server heard a decline and the call ended.
    let outcome = tokio::time::timeout(WAIT, call)
        .await
        .expect("the call ends with the quit")
        .unwrap();
    if let Ok(outcome) = &outcome {
        assert_eq!(
            outcome["elicitations"][0]["action"], "decline",
            "{outcome:#}"
        );
    }
    heard(&mut events, "gatehouse://host", |p| {
        p["state"] == "quitting"
    })
    .await;
    let status = host.wait_exit();
    assert!(status.success(), "{status:?}");
    assert!(!host.socket().exists(), "desk.sock is left after the quit");
    assert!(
        !host.bridge_socket().exists(),
        "gateway.sock is left after the quit"
    );
    // The decline is in the audit log, which was flushed.
    let audit = std::fs::read_to_string(host.dir.path().join("data/gatehouse/audit.jsonl"))
        .unwrap_or_default();
    assert!(audit.contains("decline"), "{audit}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_quits_cleanly() {
    let mut host = Host::start();
    let _ = host.connect(Role::Control).await;
    let pid = nix::unistd::Pid::from_raw(host.child.as_ref().unwrap().id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = host.wait_exit();
    assert!(status.success(), "{status:?}");
    assert!(!host.socket().exists());
    assert!(!host.bridge_socket().exists());
}
