//! `gatehouse serve --http`: the gateway on Streamable HTTP, with client tokens in a real
//! gnome-keyring (private D-Bus session), driven by the reference TypeScript client over HTTP
//! and by raw requests an attacker would send.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Env, client_run, offered, ts_client_command};
use serde_json::{Value, json};

/// A `gatehouse --demo serve --http` inside a private D-Bus session with an unlocked
/// gnome-keyring, where `clients token` made tokens for claude_code and cursor first. The
/// script revokes cursor's token when the test creates `do-revoke`.
struct Server {
    child: Child,
    work: tempfile::TempDir,
    url: String,
    env: Env,
}

const SCRIPT: &str = r#"set -eu
eval "$(printf 'test-password' | gnome-keyring-daemon --unlock --components=secrets --daemonize)"
"$1" clients token claude_code > "$2/claude_code.token"
"$1" --json clients token cursor > "$2/cursor.json"
"$1" --demo --log-dir "$2/logs" serve --http 127.0.0.1:0 &
serve=$!
until [ -e "$2/do-revoke" ]; do sleep 0.05; done
"$1" clients token cursor --revoke > "$2/revoked"
wait $serve
"#;

impl Server {
    fn start() -> Server {
        for tool in ["dbus-run-session", "gnome-keyring-daemon"] {
            let found = Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {tool}"))
                .status()
                .unwrap()
                .success();
            assert!(
                found,
                "{tool} is not installed; run scripts/install-deps.sh (or apt-get install dbus gnome-keyring)"
            );
        }
        let env = Env::new();
        let work = tempfile::tempdir().unwrap();
        let mut command = Command::new("dbus-run-session");
        command
            .args(["--", "bash", "-c", SCRIPT, "session"])
            .arg(env!("CARGO_BIN_EXE_gatehouse"))
            .arg(work.path());
        env.isolate(&mut command);
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
        let url = loop {
            let line = rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("serve --http said where it listens");
            if let Some(rest) = line.strip_prefix("gatehouse serve: listening on ") {
                break rest.split_whitespace().next().unwrap().to_string();
            }
        };
        Server {
            child,
            work,
            url,
            env,
        }
    }
    fn token(&self, client: &str) -> String {
        match client {
            "claude_code" => std::fs::read_to_string(self.work.path().join("claude_code.token"))
                .unwrap()
                .trim()
                .to_string(),
            "cursor" => {
                let made: Value = serde_json::from_str(
                    &std::fs::read_to_string(self.work.path().join("cursor.json")).unwrap(),
                )
                .unwrap();
                assert_eq!(made["issued"], "made");
                made["token"].as_str().unwrap().to_string()
            }
            other => panic!("no token for {other}"),
        }
    }
    fn audit(&self) -> Vec<Value> {
        common::audit_records(&self.env.audit_log())
    }
    fn addr(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_string()
    }
    fn revoke_cursor(&self) {
        std::fs::write(self.work.path().join("do-revoke"), b"").unwrap();
        let revoked = self.work.path().join("revoked");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::fs::read_to_string(&revoked).map_or(true, |s| s.is_empty()) {
            assert!(Instant::now() < deadline, "the revoke did not happen");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The TypeScript client over Streamable HTTP with `token` as its bearer.
fn ts_client(url: &str, token: Option<&str>, steps: &Value) -> (bool, Vec<Value>, String) {
    let mut command = ts_client_command(steps);
    command.arg(url).stdin(Stdio::null());
    match token {
        Some(token) => command.env("GATEWAY_TOKEN", token),
        None => command.env_remove("GATEWAY_TOKEN"),
    };
    client_run(command)
}

/// One raw HTTP/1.1 POST of `body` to /mcp with `headers`: the status and the body.
fn raw_post(addr: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
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
    stream.write_all(request.as_bytes()).unwrap();
    // A server may answer and close before it read a body it refuses.
    let _ = stream.write_all(body);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {response:?}"));
    (status, response)
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

fn tool_calls(server: &Server) -> Vec<Value> {
    server
        .audit()
        .into_iter()
        .filter(|r| r["event"] == "tool_call")
        .collect()
}

#[test]
fn clients_reach_the_gate_over_http_with_their_own_tokens_and_nothing_else_gets_in() {
    let server = Server::start();
    let steps = json!([
        {"op": "list"},
        {"op": "call", "name": "demo__echo", "arguments": {"message": "over http"}},
    ]);
    let (ok, out, notes) = ts_client(&server.url, Some(&server.token("claude_code")), &steps);
    assert!(ok, "{notes}");
    let names = offered(&out[0]);
    assert!(
        names.iter().any(|n| n == "demo__echo") && !names.iter().any(|n| n == "demo__fail"),
        "{names:?}"
    );
    assert_eq!(out[1]["result"]["content"][0]["text"], "over http");
    let (ok, out, notes) = ts_client(&server.url, Some(&server.token("cursor")), &steps);
    assert!(ok, "{notes}");
    assert_eq!(out[1]["result"]["content"][0]["text"], "over http");
    // Each call is recorded with the client its token belongs to, over http.
    let calls = tool_calls(&server);
    let callers: Vec<(&str, &str)> = calls
        .iter()
        .map(|c| {
            (
                c["data"]["caller"]["client"].as_str().unwrap(),
                c["data"]["caller"]["transport"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(callers, vec![("claude_code", "http"), ("cursor", "http")]);

    // Claude Code's own CLI, configured the way the README says, finds it; with a wrong
    // token it does not.
    let home = tempfile::tempdir().unwrap();
    let bearer = format!("Authorization: Bearer {}", server.token("claude_code"));
    let wrong = "Authorization: Bearer ghgw_not-a-token";
    for (name, header) in [("gatehouse", bearer.as_str()), ("impostor", wrong)] {
        let (code, out, err) = common::claude(
            home.path(),
            &[
                "mcp",
                "add",
                "-s",
                "user",
                "--transport",
                "http",
                name,
                &server.url,
                "--header",
                header,
            ],
            |_| {},
        );
        assert_eq!(code, 0, "{out}{err}");
    }
    let (_, listed, stderr) = common::claude(home.path(), &["mcp", "list"], |_| {});
    let line = |name: &str| {
        listed
            .lines()
            .find(|l| l.starts_with(&format!("{name}:")))
            .unwrap_or_else(|| panic!("no {name} in {listed}{stderr}"))
            .to_string()
    };
    assert!(line("gatehouse").contains("Connected"), "{listed}");
    let impostor = line("impostor");
    assert!(
        !impostor.contains("✔") && impostor.contains("401"),
        "{listed}"
    );

    // No token, a wrong one, a token in the wrong scheme: 401 before any MCP.
    let addr = server.addr();
    let good = format!("Bearer {}", server.token("claude_code"));
    let host = ("Host", addr.as_str());
    for auth in [
        None,
        Some(
            "Bearer ghgw_0000000000000000000000000000000000000000000000000000000000000000"
                .to_string(),
        ),
        Some(format!("Basic {}", server.token("claude_code"))),
        Some(format!("Bearer {}x", server.token("claude_code"))),
    ] {
        let mut headers = vec![host];
        if let Some(auth) = &auth {
            headers.push(("Authorization", auth.as_str()));
        }
        let (status, response) = raw_post(&addr, &headers, INITIALIZE.as_bytes());
        assert_eq!(status, 401, "{auth:?}: {response}");
        assert!(
            response.contains("WWW-Authenticate: Bearer")
                || response.contains("www-authenticate: Bearer"),
            "{response}"
        );
        assert!(
            response.contains("gatehouse clients token CLIENT"),
            "{response}"
        );
    }
    // With the token: a page on another site (DNS rebinding, or a cross-origin POST) is refused.
    for (name, value) in [("Host", "evil.example"), ("Origin", "http://evil.example")] {
        let mut headers = vec![("Authorization", good.as_str())];
        if name == "Host" {
            headers.push((name, value));
        } else {
            headers.push(host);
            headers.push((name, value));
        }
        let (status, response) = raw_post(&addr, &headers, INITIALIZE.as_bytes());
        assert!(
            status == 403 || status == 400,
            "{name}: {value}: {response}"
        );
    }
    // The token and this listener's own names pass.
    let origin = format!("http://{addr}");
    let (status, response) = raw_post(
        &addr,
        &[
            host,
            ("Authorization", good.as_str()),
            ("Origin", origin.as_str()),
        ],
        INITIALIZE.as_bytes(),
    );
    assert_eq!(status, 200, "{response}");
    // A body over the cap.
    let big = vec![b' '; 5 * 1024 * 1024];
    let (status, response) = raw_post(&addr, &[host, ("Authorization", good.as_str())], &big);
    assert_eq!(status, 413, "{response}");

    // A token revoked while the server runs stops working within seconds.
    server.revoke_cursor();
    let cursor = format!("Bearer {}", server.token("cursor"));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, _) = raw_post(
            &addr,
            &[host, ("Authorization", cursor.as_str())],
            INITIALIZE.as_bytes(),
        );
        if status == 401 {
            break;
        }
        assert!(Instant::now() < deadline, "the revoked token still works");
        std::thread::sleep(Duration::from_millis(250));
    }
    let (status, _) = raw_post(
        &addr,
        &[host, ("Authorization", good.as_str())],
        INITIALIZE.as_bytes(),
    );
    assert_eq!(status, 200, "the other client's token still works");
    assert_eq!(
        tool_calls(&server).len(),
        2,
        "nothing refused reached the gate"
    );
}

fn serve_alone(env: &Env, args: &[&str]) -> (i32, String) {
    let mut command = env.cmd(args);
    command.stdout(Stdio::null());
    let (code, _, stderr) = common::output_of(command);
    (code, stderr)
}

#[test]
fn serve_http_listens_on_loopback_only_and_never_without_a_token() {
    let env = Env::new();
    for addr in ["0.0.0.0:0", "192.0.2.1:8080", "[::]:0", "example.com:80"] {
        let (code, stderr) = serve_alone(&env, &["--demo", "serve", "--http", addr]);
        assert_eq!(code, 2, "{addr}: {stderr}");
        assert!(stderr.contains("--http"), "{addr}: {stderr}");
    }
    // No client has a token: refused before listening, with what to do.
    let (code, stderr) = serve_alone(&env, &["--demo", "serve", "--http", "127.0.0.1:0"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("gatehouse clients token CLIENT"),
        "{stderr}"
    );
}

#[test]
fn without_the_app_an_http_clients_call_that_needed_the_person_says_so_in_its_result() {
    let server = Server::start();
    let steps = json!([
        {"op": "call", "name": "demo__book_table", "arguments": {}},
        {"op": "call", "name": "demo__echo", "arguments": {"message": "plain"}},
    ]);
    let (ok, out, notes) = ts_client(&server.url, Some(&server.token("claude_code")), &steps);
    assert!(ok, "{notes}");
    let content = out[0]["result"]["content"].as_array().unwrap();
    let note = content.last().unwrap()["text"].as_str().unwrap();
    assert!(
        note.contains("the Gatehouse app is not running")
            && note.contains("The server \"demo\" needed a form to fill in")
            && note.contains("gatehouse-desktop"),
        "{}",
        out[0]
    );
    assert_eq!(
        out[1]["result"]["content"],
        json!([{"type": "text", "text": "plain"}]),
        "{}",
        out[1]
    );
}
