//! The `gatehouse` binary as a user and a script drive it: real processes, the demo server,
//! the misbehaving fixtures, exit codes and JSON shapes.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{Env, Running, demo_bin, demo_http, fixture, start_listening};
use serde_json::Value;

/// Every tool the demo server lists, sorted.
const DEMO_TOOLS: [&str; 10] = [
    "add",
    "ask_password",
    "book_table",
    "connect_account",
    "connect_account_required",
    "echo",
    "fail",
    "open_link",
    "slow",
    "spoof_completion",
];
#[test]
fn demo_over_stdio_in_every_era() {
    let env = Env::new();
    let demo = demo_bin();
    env.approve(&["--stdio", &demo]);
    for (era, expected) in [
        ("auto", "2026-07-28"),
        ("2026-07-28", "2026-07-28"),
        ("2025-11-25", "2025-11-25"),
    ] {
        let (code, connect) = env.json(&["--era", era, "connect", "--stdio", &demo]);
        assert_eq!(code, 0, "{connect}");
        assert_eq!(connect["summary"]["era"], expected);
        assert_eq!(connect["summary"]["name"], "gatehouse-demo-server");
        assert_eq!(connect["tools"], DEMO_TOOLS.len());

        let (code, tools) = env.json(&["--era", era, "tools", "--stdio", &demo]);
        assert_eq!(code, 0);
        let mut names: Vec<&str> = tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, DEMO_TOOLS);

        let (code, add) = env.json(&[
            "--era",
            era,
            "call",
            "--stdio",
            &demo,
            "add",
            "--args",
            r#"{"a": 2, "b": 3.5}"#,
        ]);
        assert_eq!(code, 0);
        assert_eq!(add["result"]["content"][0]["text"], "5.5");
        assert_eq!(add["is_error"], false);

        let (code, fail) = env.json(&[
            "--era",
            era,
            "call",
            "--stdio",
            &demo,
            "fail",
            "--args",
            r#"{"message": "nope"}"#,
        ]);
        assert_eq!(code, 1, "isError exits 1");
        assert_eq!(fail["is_error"], true);
        assert_eq!(fail["result"]["content"][0]["text"], "nope");

        let (code, missing) = env.json(&["--era", era, "call", "--stdio", &demo, "no_such_tool"]);
        assert_eq!(code, 1, "a gate refusal exits 1");
        assert_eq!(missing["error"]["code"], "tool_not_admitted");
    }
}

#[test]
fn human_output_and_progress() {
    let env = Env::new();
    let demo = demo_bin();
    env.approve(&["--stdio", &demo]);
    let (code, stdout, stderr) = env.run(&[
        "call",
        "--stdio",
        &demo,
        "slow",
        "--args",
        r#"{"steps": 3, "delay_ms": 20}"#,
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.trim(), "done after 3 steps");
    assert!(stderr.contains("progress 3/3 step 3 of 3"), "{stderr}");
    let (code, stdout, _) = env.run(&["connect", "--stdio", &demo]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("claimed by the server, not verified"),
        "{stdout}"
    );
}

#[test]
fn demo_over_http_in_both_eras() {
    let env = Env::new();
    let (_server, url) = demo_http(&[]);
    env.approve(&["--url", &url]);
    for (era, expected) in [("auto", "2026-07-28"), ("2025-11-25", "2025-11-25")] {
        let (code, out) = env.json(&[
            "--era",
            era,
            "call",
            "--url",
            &url,
            "echo",
            "--args",
            r#"{"message": "über"}"#,
        ]);
        assert_eq!(code, 0, "{out}");
        assert_eq!(out["result"]["content"][0]["text"], "über");
        let (_, connect) = env.json(&["--era", era, "connect", "--url", &url]);
        assert_eq!(connect["summary"]["era"], expected);
    }
}

#[test]
fn era_override_against_a_single_era_server() {
    let env = Env::new();
    let legacy = format!("{} --era 2025-11-25", demo_bin());
    let (code, out) = env.json(&["connect", "--stdio", &legacy]);
    assert_eq!(code, 0, "auto falls back: {out}");
    assert_eq!(out["summary"]["era"], "2025-11-25");
    let (code, out) = env.json(&["--era", "2026-07-28", "connect", "--stdio", &legacy]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["code"], "connect_failed");

    let modern = format!("{} --era 2026-07-28", demo_bin());
    let (code, out) = env.json(&["connect", "--stdio", &modern]);
    assert_eq!(
        (code, out["summary"]["era"].as_str()),
        (0, Some("2026-07-28"))
    );
    let (code, _) = env.json(&["--era", "2025-11-25", "connect", "--stdio", &modern]);
    assert_eq!(code, 2);
}

#[test]
fn tools_list_follows_every_page() {
    let env = Env::new();
    let paged = format!("{} --page-size 1", demo_bin());
    let (code, tools) = env.json(&["tools", "--stdio", &paged]);
    assert_eq!(code, 0);
    // Unapproved, every listed tool is hidden from callers but still shown to developers.
    assert_eq!(tools["tools"].as_array().unwrap().len(), 0);
    assert_eq!(tools["hidden"].as_array().unwrap().len(), DEMO_TOOLS.len());
    let (_, stdout, _) = env.run(&["--json", "trace", "--stdio", &paged]);
    let lists = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["direction"] == "out" && e["message"]["method"] == "tools/list")
        .count();
    assert_eq!(lists, DEMO_TOOLS.len(), "one tools/list per page");
}

#[test]
fn trace_shows_every_message_with_direction_time_and_era() {
    let env = Env::new();
    let demo = demo_bin();
    env.approve(&["--stdio", &demo]);
    let traffic = env.dir.path().join("traffic.jsonl");
    let (code, stdout, stderr) = env.run(&[
        "--json",
        "--traffic-log",
        traffic.to_str().unwrap(),
        "--era",
        "2025-11-25",
        "trace",
        "--stdio",
        &demo,
        "--call",
        "echo",
        "--args",
        r#"{"message": "hi"}"#,
    ]);
    assert_eq!(code, 0, "{stderr}");
    let entries: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let methods: Vec<&str> = entries
        .iter()
        .filter_map(|e| e["message"]["method"].as_str())
        .collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call"
        ]
    );
    assert!(
        entries
            .iter()
            .all(|e| e["era"] == "2025-11-25" && e["server"] == "adhoc")
    );
    assert!(entries.iter().any(|e| e["direction"] == "in" && e["message"]["result"]["content"][0]["text"] == "hi"));
    assert!(
        entries
            .iter()
            .all(|e| e["time"].as_str().unwrap().ends_with('Z'))
    );
    let file = std::fs::read_to_string(&traffic).unwrap();
    assert_eq!(
        file.lines().count(),
        entries.len(),
        "the JSONL file has the same messages"
    );
}

#[test]
fn stdio_bad_input_ends_in_a_clear_error() {
    let env = Env::new();
    let cases = [
        ("non-json", "not JSON on stdout"),
        ("oversize", "over the 16 MiB limit"),
        ("invalid-utf8", "invalid UTF-8"),
        ("not-jsonrpc", "not a valid JSON-RPC message"),
        ("exit-mid-call", "exited (exit status: 3)"),
    ];
    for (mode, needle) in cases {
        let server = format!(
            "{} {} {mode}",
            common::python3(),
            fixture("misbehaving_stdio.py")
        );
        env.approve(&["--stdio", &server]);
        let (code, stdout, stderr) = env.run(&["--json", "call", "--stdio", &server, "t"]);
        assert_eq!(code, 2, "{mode}: {stderr}");
        let error: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(error["error"]["code"], "transport_failed", "{mode}");
        assert!(
            error["error"]["message"].as_str().unwrap().contains(needle),
            "{mode}: {error}"
        );
    }
    let banner = format!(
        "{} {} banner",
        common::python3(),
        fixture("misbehaving_stdio.py")
    );
    let (code, stdout, _) = env.run(&["--json", "connect", "--stdio", &banner]);
    assert_eq!(code, 2);
    assert!(
        stdout.contains("connect_failed") && stdout.contains("Starting server v1.0"),
        "{stdout}"
    );
    let (code, _, stderr) = env.run(&["connect", "--stdio", "/no/such/server-binary"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("could not start") && stderr.contains("PATH"),
        "{stderr}"
    );
}

#[test]
fn a_silent_server_times_out_and_is_told_so() {
    let env = Env::new();
    let server = format!(
        "{} {} never-answer",
        common::python3(),
        fixture("misbehaving_stdio.py")
    );
    env.approve(&["--stdio", &server]);
    let (code, _, stderr) = env.run(&["--timeout", "1", "call", "--stdio", &server, "t"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("no answer to tools/call \"t\" within 1s"),
        "{stderr}"
    );
    let log = std::fs::read_to_string(env.logs().join("adhoc.stderr.log")).unwrap();
    assert!(log.contains("got notifications/cancelled"), "{log}");
}

#[test]
fn ctrl_c_cancels_the_call_on_the_wire() {
    let env = Env::new();
    let server = format!(
        "{} {} never-answer",
        common::python3(),
        fixture("misbehaving_stdio.py")
    );
    env.approve(&["--stdio", &server]);
    let _ = std::fs::remove_file(env.logs().join("adhoc.stderr.log"));
    let child = env
        .cmd(&["call", "--stdio", &server, "t"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the call is in flight (the fixture logs its start), then interrupt.
    let log = env.logs().join("adhoc.stderr.log");
    for _ in 0..100 {
        if std::fs::read_to_string(&log).is_ok_and(|l| l.contains("started")) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cancelled by the user"), "{stderr}");
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("got notifications/cancelled")
    );
}

fn misbehaving_http(mode: &str, hits: &Path) -> (Running, String) {
    let mut command = Command::new("python3");
    command
        .arg(fixture("misbehaving_http.py"))
        .arg(mode)
        .arg(hits);
    start_listening(command)
}

#[test]
fn http_bad_input_ends_in_a_clear_error() {
    let env = Env::new();
    let cases = [
        ("status-500", "HTTP 500"),
        ("status-401", "requires authorization"),
        ("wrong-type", "text/html"),
        ("redirect", "same-origin"),
        ("call-500", "HTTP 503"),
    ];
    for (mode, needle) in cases {
        let hits = env.dir.path().join(format!("{mode}.hits"));
        let (_server, url) = misbehaving_http(mode, &hits);
        if mode == "call-500" {
            env.approve(&["--url", &url]);
        }
        let (code, out) = env.json(&["--connect-timeout", "10", "call", "--url", &url, "t"]);
        assert_eq!(code, 2, "{mode}: {out}");
        let message = out["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{mode}: {message}");
        assert!(!message.contains("rmcp::"), "no SDK type names: {message}");
        if mode == "redirect" {
            assert!(
                !hits.exists(),
                "the cross-origin redirect was followed: {:?}",
                std::fs::read_to_string(&hits)
            );
        }
    }
}

#[test]
fn servers_add_list_remove_and_import() {
    let env = Env::new();
    let (code, _) = env.json(&[
        "servers",
        "add",
        "demo",
        "--stdio",
        "gatehouse-demo-server --era both",
        "--env",
        "A=1",
    ]);
    assert_eq!(code, 0);
    let (code, _) = env.json(&[
        "servers",
        "add",
        "web",
        "--url",
        "https://mcp.example/mcp",
        "--bearer-secret",
        "web-token",
        "--header",
        "X-Team=blue",
    ]);
    assert_eq!(code, 0);
    let (code, out) = env.json(&["servers", "add", "demo", "--stdio", "x"]);
    assert_eq!(code, 2, "duplicate names need --replace: {out}");
    let (_, list) = env.json(&["servers", "list"]);
    let rows = list["servers"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["target"], "gatehouse-demo-server --era both");
    assert_eq!(rows[1]["secrets"][0], "web-token");
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(env.config()).unwrap()).unwrap();
    assert_eq!(file["mcpServers"]["demo"]["env"]["A"], "1");
    assert_eq!(file["mcpServers"]["web"]["bearerTokenSecret"], "web-token");

    let claude = env.dir.path().join("claude_desktop_config.json");
    std::fs::write(&claude, r#"{"mcpServers": {"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}}}"#).unwrap();
    let (code, out) = env.json(&["servers", "import", claude.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["import"]["imported"][0], "files");

    let (code, _) = env.json(&["servers", "remove", "demo"]);
    assert_eq!(code, 0);
    let (code, out) = env.json(&["servers", "remove", "demo"]);
    assert_eq!(
        (code, out["error"]["code"].as_str()),
        (2, Some("unknown_server"))
    );
    let (_, list) = env.json(&["servers", "list"]);
    assert_eq!(list["servers"].as_array().unwrap().len(), 2);
}

#[test]
fn demo_mode_lists_the_demo_servers_with_their_verdicts() {
    let env = Env::new();
    env.json(&["servers", "add", "mine", "--stdio", "x"]);
    let (code, list) = env.json(&["--demo", "servers", "list"]);
    assert_eq!(code, 0, "{list}");
    let rows = list["servers"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    // The demo's first, as the desktop app and `Host::servers` list them.
    assert_eq!(names, ["demo", "demo-2025", "mine"], "{list}");
    for row in &rows[..2] {
        assert_eq!(row["transport"], "stdio", "{row}");
        assert_eq!(row["secrets"], serde_json::json!([]), "{row}");
        assert_eq!(row["admission"]["status"], "admitted", "{row}");
        assert_eq!(
            row["admission"]["identity"]["bundle"], "DEMO-ONLY-gatehouse-demo@1",
            "{row}"
        );
        assert!(row["verdict"].is_string(), "{row}");
    }
    let (code, human, stderr) = env.run(&["--demo", "servers", "list"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(human.starts_with("demo  stdio  "), "{human}");
    assert!(human.contains("\ndemo-2025  stdio  "), "{human}");

    // Without --demo, only what servers.json lists.
    let (code, list) = env.json(&["servers", "list"]);
    assert_eq!(code, 0, "{list}");
    assert_eq!(list["servers"].as_array().unwrap().len(), 1, "{list}");
}

#[test]
fn demo_mode_refuses_to_import_a_server_named_like_the_demo() {
    let env = Env::new();
    let file = env.dir.path().join("claude_desktop_config.json");
    std::fs::write(
        &file,
        r#"{"mcpServers": {"demo": {"command": "npx", "args": ["other"]}, "files": {"command": "npx"}}}"#,
    )
    .unwrap();
    let (code, out) = env.json(&["--demo", "servers", "import", file.to_str().unwrap()]);
    assert_eq!(
        (code, out["error"]["code"].as_str()),
        (2, Some("server_exists")),
        "{out}"
    );
    assert!(!env.config().exists(), "nothing was imported");
    // Without --demo the name is free.
    let (code, out) = env.json(&["servers", "import", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out["import"]["imported"],
        serde_json::json!(["demo", "files"])
    );
}

#[test]
fn configured_servers_are_used_by_name() {
    let env = Env::new();
    env.json(&["servers", "add", "demo", "--stdio", &demo_bin()]);
    env.approve(&["demo"]);
    let (code, out) = env.json(&[
        "call",
        "demo",
        "echo",
        "--args",
        r#"{"message": "by name"}"#,
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["server"], "demo");
    assert_eq!(out["result"]["content"][0]["text"], "by name");
    let (code, out) = env.json(&["tools", "nope"]);
    assert_eq!(code, 2);
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("configured: demo"),
        "{out}"
    );
}

#[test]
fn a_broken_config_file_is_named_and_left_alone() {
    let env = Env::new();
    std::fs::write(env.config(), "{\"mcpServers\": {\"a\": {\"command\": 1}}}").unwrap();
    let (code, _, stderr) = env.run(&["servers", "list"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("servers.json: line 1 column"), "{stderr}");
    let (code, _, _) = env.run(&["servers", "add", "b", "--stdio", "x"]);
    assert_eq!(code, 2);
    assert_eq!(
        std::fs::read_to_string(env.config()).unwrap(),
        "{\"mcpServers\": {\"a\": {\"command\": 1}}}",
        "untouched"
    );
}

#[test]
fn usage_errors_exit_2_and_say_what_to_do() {
    let env = Env::new();
    let demo = demo_bin();
    let cases: [(&[&str], &str); 6] = [
        (&["call", "demo"], "SERVER TOOL"),
        (
            &["call", "--stdio", &demo, "echo", "--args", "[1]"],
            "JSON object",
        ),
        (
            &["call", "--stdio", &demo, "echo", "--args", "{"],
            "not valid JSON",
        ),
        (&["tools"], "--stdio"),
        (&["connect", "--url", "ftp://x"], "http:// or https://"),
        (
            &["--era", "2024-01-01", "tools", "x"],
            "unknown protocol era",
        ),
    ];
    for (args, needle) in cases {
        let (code, _, stderr) = env.run(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

#[test]
fn http_sessions_headers_and_delete_on_close() {
    let env = Env::new();
    let hits = env.dir.path().join("record.hits");
    let (_server, url) = misbehaving_http("record", &hits);
    env.approve(&["--url", &url]);
    std::fs::remove_file(&hits).unwrap();
    let (code, out) = env.json(&["--era", "2025-11-25", "call", "--url", &url, "t"]);
    assert_eq!(code, 0, "{out}");
    let log = std::fs::read_to_string(&hits).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(
        lines[0], "POST session=- version=- jsonrpc=initialize",
        "{log}"
    );
    let later: Vec<&&str> = lines[1..]
        .iter()
        .filter(|l| l.starts_with("POST"))
        .collect();
    assert!(!later.is_empty(), "{log}");
    for line in &later {
        assert!(
            line.contains("session=session-1 version=2025-11-25"),
            "every request after initialize carries the session and version: {log}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("POST") && l.ends_with("jsonrpc=tools/call")),
        "{log}"
    );
    // The GET stream is tried (the fixture answers 405, which must not be fatal).
    assert!(
        lines.iter().any(|l| l.starts_with("GET session=session-1")),
        "{log}"
    );
    assert_eq!(
        lines.last().unwrap(),
        &"DELETE session=session-1 version=2025-11-25 jsonrpc=-",
        "{log}"
    );
}

#[test]
fn a_closed_stdout_ends_quietly_not_in_a_panic() {
    let env = Env::new();
    // A pipe whose reading end is already closed: every write to stdout fails with EPIPE,
    // as with `gatehouse … | head -1` once head has exited.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = env
        .cmd(&["servers", "list"])
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_stdio_server_gets_no_controlling_terminal() {
    // The CLI asks for consent on its terminal; a server must not be able to draw on it or
    // type into it. The fixture tries to open /dev/tty at start and logs what happened.
    let env = Env::new();
    let probe = format!(
        "{} {} tty-probe",
        common::python3(),
        fixture("misbehaving_stdio.py")
    );
    // The test's own terminal works (so the probe can tell): a shell started the same way
    // opens it.
    let (code, stdout, stderr) = common::in_a_terminal(
        &{
            let mut c = std::process::Command::new("python3");
            c.args([
                "-c",
                "import os; os.close(os.open('/dev/tty', os.O_RDWR)); print('tty ok')",
            ]);
            c
        },
        "",
        None,
    );
    assert!(
        stdout.contains("tty ok"),
        "script gives no terminal here: {code} {stdout} {stderr}"
    );
    let (code, stdout, stderr) =
        common::in_a_terminal(&env.cmd(&["connect", "--stdio", &probe]), "", None);
    assert_eq!(code, 0, "{stdout} {stderr}");
    let log = std::fs::read_to_string(env.logs().join("adhoc.stderr.log")).unwrap();
    let line = log.lines().find(|l| l.starts_with("tty: ")).unwrap();
    assert_ne!(line, "tty: opened", "the server reached the terminal");
    assert!(line.contains("No such device or address"), "{line}");
}

#[test]
fn the_loopback_mcp_session_takes_the_attestation_s_path_not_an_environment_proxy() {
    // A proxy from the environment that counts who connects to it.
    let proxy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
    proxy.set_nonblocking(true).unwrap();
    let env = Env::new();
    let (_server, url) = demo_http(&[]);
    let mut cmd = env.cmd(&["--json", "connect", "--url", &url]);
    for var in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        cmd.env(var, &proxy_url);
    }
    cmd.env_remove("NO_PROXY").env_remove("no_proxy");
    let out = cmd.output().unwrap();
    let value: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert!(
        out.status.success(),
        "{value} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut through_proxy = 0;
    while proxy.accept().is_ok() {
        through_proxy += 1;
    }
    assert_eq!(through_proxy, 0, "the session went through the proxy");
}

#[test]
fn credentials_in_arguments_and_urls_never_reach_the_audit_log_or_the_output() {
    let env = Env::new();
    let secret_arg = "sk-live-5f9c2e7a1b";
    let secret_query = "qtok-83e1d0c4";
    let stdio = format!(
        "{} {} record --api-key={secret_arg}",
        common::python3(),
        fixture("misbehaving_stdio.py")
    );
    let out = env
        .cmd(&["--json", "connect", "--stdio", &stdio])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let (_server, url) = demo_http(&[]);
    let with_token = format!("{url}?access_token={secret_query}");
    let out2 = env
        .cmd(&["--json", "connect", "--url", &with_token])
        .output()
        .unwrap();
    assert!(out2.status.success(), "{out2:?}");
    let audit = std::fs::read_to_string(env.audit_log()).unwrap();
    assert!(audit.contains("--api-key=[redacted]"), "{audit}");
    for (what, bytes) in [
        ("the audit log", audit.as_bytes()),
        ("stdout", &out.stdout),
        ("stdout", &out2.stdout),
        ("stderr", &out2.stderr),
    ] {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !text.contains(secret_arg) && !text.contains(secret_query),
            "a credential in {what}: {text}"
        );
    }
}
