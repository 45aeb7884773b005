//! The demo server over Streamable HTTP, driven with a small reqwest client.

mod common;

use std::process::{Command, Stdio};

use common::{
    ALL_TOOLS, BIN, HttpClient, HttpServer, LEGACY, MODERN, TIMEOUT, initialize_params,
    modern_meta_with, only_text, tool_names,
};
use nix::{
    sys::signal::{Signal, kill},
    unistd::Pid,
};
use serde_json::{Value, json};

fn initialize_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params(LEGACY)})
}

#[test]
fn announces_exactly_where_it_listens() {
    let server = HttpServer::spawn(&[]);
    let rest = server
        .listening_line
        .strip_prefix("listening on http://127.0.0.1:")
        .unwrap_or_else(|| panic!("{:?}", server.listening_line));
    let port = rest.strip_suffix("/mcp").expect("ends with /mcp");
    let port: u16 = port.parse().expect("numeric port");
    assert_ne!(port, 0, "port 0 must be resolved to the real port");
}

#[test]
fn refuses_a_non_loopback_address_unless_allowed() {
    let output = Command::new(BIN)
        .args(["--http", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .output()
        .expect("run gatehouse-demo-server");
    assert!(!output.status.success());
    assert!(
        output.stdout.is_empty(),
        "nothing may be announced: {:?}",
        String::from_utf8_lossy(&output.stdout)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not a loopback address"), "{stderr}");
    assert!(stderr.contains("--allow-non-loopback"), "{stderr}");

    let output = Command::new(BIN)
        .args(["--http", "not-an-address"])
        .stdin(Stdio::null())
        .output()
        .expect("run gatehouse-demo-server");
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
}

#[tokio::test]
async fn legacy_session_initialize_then_tool_calls() {
    let server = HttpServer::spawn(&[]);
    let client = HttpClient::new(&server.url);
    let init = client.post(&initialize_body(), &[]).await;
    assert_eq!(init.status, 200);
    assert_eq!(init.result()["protocolVersion"], LEGACY);
    assert_eq!(init.result()["serverInfo"]["name"], "gatehouse-demo-server");
    let session = init.session_id.clone().expect("a 2025-11-25 session id");

    let initialized = client
        .post(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            &[
                ("Mcp-Session-Id", &session),
                ("MCP-Protocol-Version", LEGACY),
            ],
        )
        .await;
    assert_eq!(initialized.status, 202);

    let list = client
        .in_session(&session, 2, "tools/list", json!({}))
        .await;
    assert_eq!(tool_names(list.result()), ALL_TOOLS);
    let add = client
        .in_session(
            &session,
            3,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
        )
        .await;
    assert_eq!(only_text(add.result()), "5");
    let fail = client
        .in_session(
            &session,
            4,
            "tools/call",
            json!({"name": "fail", "arguments": {}}),
        )
        .await;
    assert_eq!(fail.result()["isError"], true);
    assert_eq!(only_text(fail.result()), "the fail tool always fails");
}

#[tokio::test]
async fn modern_era_discovers_and_refuses_initialize() {
    let server = HttpServer::spawn(&["--era", MODERN]);
    let client = HttpClient::new(&server.url);

    let discover = client.modern(1, "server/discover", json!({})).await;
    assert_eq!(discover.status, 200);
    assert_eq!(discover.result()["supportedVersions"], json!([MODERN]));
    assert!(discover.session_id.is_none(), "2026-07-28 has no sessions");

    let echo = client
        .modern(
            2,
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "over http"}}),
        )
        .await;
    assert_eq!(only_text(echo.result()), "over http");

    let init = client.post(&initialize_body(), &[]).await;
    assert_eq!(init.error()["code"], -32022, "{:?}", init);
    assert_eq!(init.error()["data"]["supported"], json!([MODERN]));
    assert!(init.session_id.is_none());
}

#[tokio::test]
async fn legacy_era_answers_discover_like_a_legacy_server() {
    let server = HttpServer::spawn(&["--era", LEGACY]);
    let client = HttpClient::new(&server.url);

    let discover = client.modern(7, "server/discover", json!({})).await;
    assert_eq!(discover.status, 400);
    assert_eq!(discover.response()["id"], 7, "the error is correlated");
    assert_eq!(discover.error()["code"], -32601);

    let init = client.post(&initialize_body(), &[]).await;
    assert_eq!(init.result()["protocolVersion"], LEGACY);
    let session = init.session_id.clone().expect("session id");
    let echo = client
        .in_session(
            &session,
            2,
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "legacy"}}),
        )
        .await;
    assert_eq!(only_text(echo.result()), "legacy");

    // Stateless 2026-07-28 requests are refused too.
    let list = client.modern(3, "tools/list", json!({})).await;
    assert_eq!(list.error()["code"], -32022, "{list:?}");
}

#[tokio::test]
async fn both_eras_serve_both_lifecycles() {
    let server = HttpServer::spawn(&[]);
    let client = HttpClient::new(&server.url);
    let discover = client.modern(1, "server/discover", json!({})).await;
    let versions = discover.result()["supportedVersions"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        versions.contains(&json!(LEGACY)) && versions.contains(&json!(MODERN)),
        "{versions:?}"
    );
    let init = client.post(&initialize_body(), &[]).await;
    assert_eq!(init.result()["protocolVersion"], LEGACY);
}

#[tokio::test]
async fn slow_streams_progress_before_its_result() {
    let server = HttpServer::spawn(&[]);
    let client = HttpClient::new(&server.url);
    let meta = modern_meta_with(json!({"progressToken": "http-progress"}));
    let exchange = client
        .modern(
            5,
            "tools/call",
            json!({"name": "slow", "arguments": {"steps": 3, "delay_ms": 5}, "_meta": meta}),
        )
        .await;
    assert_eq!(exchange.status, 200);
    assert!(
        exchange.content_type.starts_with("text/event-stream"),
        "{exchange:?}"
    );
    let (response, progress) = exchange.messages.split_last().expect("messages");
    assert_eq!(only_text(&response["result"]), "done after 3 steps");
    let steps: Vec<(f64, String)> = progress
        .iter()
        .map(|message| {
            assert_eq!(message["method"], "notifications/progress");
            assert_eq!(message["params"]["progressToken"], "http-progress");
            assert_eq!(message["params"]["total"].as_f64(), Some(3.0));
            (
                message["params"]["progress"].as_f64().unwrap(),
                message["params"]["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            (1.0, "step 1 of 3".into()),
            (2.0, "step 2 of 3".into()),
            (3.0, "step 3 of 3".into())
        ]
    );
}

#[tokio::test]
async fn page_size_paginates_over_http() {
    let server = HttpServer::spawn(&["--page-size", "2"]);
    let client = HttpClient::new(&server.url);
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    for id in 1..=5 {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let page = client.modern(id, "tools/list", params).await;
        assert_eq!(tool_names(page.result()).len(), 2, "{page:?}");
        names.extend(tool_names(page.result()));
        cursor = page.result()["nextCursor"].as_str().map(str::to_owned);
        assert_eq!(cursor.is_some(), id < 5, "page {id}: {page:?}");
    }
    assert_eq!(names, ALL_TOOLS);
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_shuts_down_gracefully() {
    let mut server = HttpServer::spawn(&[]);
    let client = HttpClient::new(&server.url);
    // Leave a session open: shutdown must not wait for it forever.
    let init = client.post(&initialize_body(), &[]).await;
    assert!(init.session_id.is_some());

    kill(Pid::from_raw(server.pid() as i32), Signal::SIGTERM).expect("send SIGTERM");
    let started = std::time::Instant::now();
    let (status, extra_stdout) = tokio::task::block_in_place(|| server.wait());
    assert!(
        status.success(),
        "exit status {status}; stderr:\n{}",
        server.stderr()
    );
    assert!(started.elapsed() < TIMEOUT);
    assert!(
        extra_stdout.is_empty(),
        "stdout had more than the listening line: {extra_stdout:?}"
    );
}
