//! `gatehouse serve`: Gatehouse as one MCP server for an AI client, driven by the reference
//! TypeScript MCP client (@modelcontextprotocol/sdk from npm, tests/gateway/ts-client.mjs) as
//! Claude Desktop or Cursor would drive it: list, call, a hidden tool, a headless elicitation,
//! cancel, a pin change while serving. The upstream servers are the embedded demo (both eras)
//! and the misbehaving fixture.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{
    Env, client_run, demo_bin, fixture, node, offered as names, repo, result_text as text,
    ts_client_command,
};
use gatehouse_attest::gate::GateReason;
use gatehouse_host::Caller;
use gatehouse_host::audit_event::gate::{
    Admission, PromptDecision, PromptGet, ResourceDecision, ResourceRead, ToolCall, ToolDecision,
};
use gatehouse_host::audit_event::session::{ElicitationReceipt, ReceiptCaller};
use gatehouse_host::broker::ElicitationAnswer;
use gatehouse_testkit::audit::payloads;
use gatehouse_testkit::raw::RawClient;
use serde_json::{Value, json};

/// Runs the TypeScript client's `steps` against `gatehouse <args>` under `env` (the same
/// isolation as every CLI test) and returns one JSON value per step.
fn ts_client(env: &Env, steps: Value, args: &[&str]) -> Vec<Value> {
    let mut all: Vec<String> = vec![
        "--config".into(),
        env.config().display().to_string(),
        "--log-dir".into(),
        env.logs().display().to_string(),
    ];
    all.extend(args.iter().map(|a| a.to_string()));
    ts_client_launching(env, steps, env!("CARGO_BIN_EXE_gatehouse"), &all)
}

/// The TypeScript client launching `program args` as its MCP server, as a client's config
/// file says; the servers file is the test's (GATEHOUSE_CONFIG).
fn ts_client_launching(env: &Env, steps: Value, program: &str, args: &[String]) -> Vec<Value> {
    let mut command = ts_client_command(&steps);
    command.arg(program).args(args);
    env.isolate(&mut command);
    let (ok, lines, stderr) = client_run(command);
    assert!(ok, "the TypeScript client failed: {lines:?}\n{stderr}");
    assert_eq!(
        lines.len(),
        steps.as_array().unwrap().len(),
        "{lines:?}\n{stderr}"
    );
    lines
}

/// The `tool_call` records of `tool`, oldest first.
fn tool_calls(env: &Env, tool: &str) -> Vec<ToolCall> {
    payloads::<ToolCall>(&env.audit_log())
        .into_iter()
        .filter(|c| c.decision.tool() == tool)
        .collect()
}

/// The client a record names as the one that asked.
fn client(caller: &Option<Caller>) -> Option<&str> {
    caller.as_ref().map(|c| c.client.as_str())
}

#[test]
fn an_ai_client_gets_the_gates_tools_under_server_names_and_every_call_is_gated_with_the_client_named()
 {
    let env = Env::new();
    let steps = json!([
        {"op": "list"},
        {"op": "call", "name": "demo__echo", "arguments": {"message": "through the gate"}},
        {"op": "call", "name": "demo-2025__add", "arguments": {"a": 2, "b": 3}},
        // Hidden by the demo bundle's allow-list: not offered, and a model that guesses the
        // name reaches the gate, which refuses and records it.
        {"op": "call", "name": "demo__fail", "arguments": {}},
        // Not a tool of any server.
        {"op": "call", "name": "demo__no_such_tool", "arguments": {}},
        // Look-alikes of an offered name are not it.
        {"op": "call", "name": "demo__Echo", "arguments": {"message": "x"}},
        {"op": "call", "name": "demo_echo", "arguments": {"message": "x"}},
    ]);
    let out = ts_client(&env, steps, &["--demo", "serve", "--client", "ts_test"]);

    let offered = names(&out[0]);
    for name in [
        "demo__echo",
        "demo__book_table",
        "demo-2025__echo",
        "demo-2025__add",
    ] {
        assert!(offered.contains(&name.to_string()), "{name} in {offered:?}");
    }
    assert!(
        !offered.iter().any(|n| n.ends_with("__fail")),
        "hidden tools are never offered: {offered:?}"
    );
    for name in &offered {
        assert!(
            name.len() <= 64
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
            "{name}"
        );
    }
    // The definitions are the ones the gate checked, renamed only: as `gatehouse tools` shows.
    let (_, direct) = env.json(&["--demo", "tools", "demo"]);
    let mut checked = direct["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "echo")
        .unwrap()
        .clone();
    checked["name"] = json!("demo__echo");
    let echo = out[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "demo__echo")
        .unwrap();
    assert_eq!(echo, &checked);

    assert_eq!(text(&out[1]), "through the gate");
    assert_eq!(text(&out[2]), "5");

    // The denial is a tool result the model can read: what happened, the code, what to do.
    assert_eq!(out[3]["result"]["isError"], json!(true), "{}", out[3]);
    let denial = text(&out[3]);
    assert!(
        denial.contains("Gatehouse did not complete demo__fail") && denial.contains("code tool_"),
        "{denial}"
    );
    for unknown in &out[4..7] {
        assert_eq!(unknown["error"]["code"], json!(-32602), "{unknown}");
        assert!(
            unknown["error"]["message"]
                .as_str()
                .unwrap()
                .contains("list the tools again")
        );
    }

    // Every decision is in the audit log with the client that asked.
    let echo_calls = tool_calls(&env, "echo");
    assert_eq!(echo_calls.len(), 1, "{echo_calls:?}");
    assert!(
        matches!(echo_calls[0].decision, ToolDecision::Allowed { .. }),
        "{echo_calls:?}"
    );
    let caller = echo_calls[0].caller.as_ref().expect("the caller is named");
    assert_eq!(caller.client, "ts_test");
    assert_eq!(caller.transport, gatehouse_host::DownstreamTransport::Stdio);
    assert_eq!(caller.claimed.as_deref(), Some("ts-sdk-test-client 1.0.0"));
    let add = tool_calls(&env, "add");
    assert_eq!(add.len(), 1);
    assert_eq!(add[0].name, "demo-2025");
    let fail = tool_calls(&env, "fail");
    assert_eq!(fail.len(), 1, "{fail:?}");
    assert!(
        matches!(fail[0].decision, ToolDecision::Denied { .. }),
        "{fail:?}"
    );
    assert_eq!(client(&fail[0].caller), Some("ts_test"));
    // Look-alikes never reached any server.
    assert!(tool_calls(&env, "Echo").is_empty() && tool_calls(&env, "no_such_tool").is_empty());
}

#[test]
fn without_a_consent_ui_an_elicitation_is_declined_never_forwarded_and_receipted() {
    let env = Env::new();
    let steps = json!([
        {"op": "call", "name": "demo-2025__book_table", "arguments": {}},
        {"op": "call", "name": "demo__book_table", "arguments": {}},
    ]);
    let out = ts_client(&env, steps, &["--demo", "serve", "--client", "ts_test"]);
    // The client declared no elicitation capability and was asked nothing: both eras' demo
    // servers heard "decline" from Gatehouse.
    for call in &out {
        let said = text(call);
        assert!(said.to_lowercase().contains("decline"), "{call}");
    }
    let receipts: Vec<ElicitationReceipt> = payloads(&env.audit_log());
    assert_eq!(receipts.len(), 2, "{receipts:?}");
    for receipt in &receipts {
        assert_eq!(receipt.action, ElicitationAnswer::Decline, "{receipt:?}");
        // The receipt names the AI client whose call caused the elicitation.
        let Some(ReceiptCaller::Client(caller)) = &receipt.caller else {
            panic!("the receipt names no client: {receipt:?}");
        };
        assert_eq!(caller.client, "ts_test", "{receipt:?}");
        assert_eq!(caller.claimed.as_deref(), Some("ts-sdk-test-client 1.0.0"));
    }
}

#[test]
fn a_client_that_gives_up_cancels_the_upstream_call() {
    let env = Env::new();
    let steps = json!([
        {"op": "call", "name": "demo-2025__slow", "arguments": {"steps": 60, "delay_ms": 500}, "abortAfterMs": 1500},
        {"op": "call", "name": "demo-2025__echo", "arguments": {"message": "still serving"}},
    ]);
    let out = ts_client(&env, steps, &["--demo", "serve"]);
    assert!(out[0]["error"].is_object(), "{}", out[0]);
    assert_eq!(text(&out[1]), "still serving");
    // The demo server stopped its slow tool on Gatehouse's notifications/cancelled.
    let log = env.logs().join("demo-2025.stderr.log");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let said = std::fs::read_to_string(&log).unwrap_or_default();
        if said.contains("slow tool cancelled") {
            break;
        }
        assert!(Instant::now() < deadline, "no cancel upstream: {said}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let slow = tool_calls(&env, "slow");
    assert_eq!(client(&slow[0].caller), Some("unnamed"));
}

/// Adds "pinned": the fixture server whose one tool, `t`, changes its description after its
/// first call and says so (notifications/tools/list_changed).
fn add_pin_change_server(env: &Env) {
    let (code, _, stderr) = env.run(&[
        "servers",
        "add",
        "pinned",
        "--stdio",
        &format!(
            "{} {} pin-change",
            common::python3(),
            fixture("misbehaving_stdio.py")
        ),
    ]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn a_pin_change_while_serving_withdraws_the_tool_tells_the_client_and_the_gate_refuses_it() {
    let env = Env::new();
    add_pin_change_server(&env);
    // Unattested, in the warn posture: offered only once the user approved (pinned) it.
    let before = ts_client(&env, json!([{"op": "list"}]), &["serve"]);
    assert!(names(&before[0]).is_empty(), "{}", before[0]);
    env.approve(&["pinned"]);

    let steps = json!([
        {"op": "list"},
        {"op": "waitListChanged", "atLeast": 1, "timeoutMs": 1000},
        {"op": "mark"},
        // The fixture changes the tool's description after its first call and says so.
        {"op": "call", "name": "pinned__t", "arguments": {}},
        {"op": "waitListChanged", "atLeast": 1, "timeoutMs": 10000},
        {"op": "list"},
        {"op": "call", "name": "pinned__t", "arguments": {}},
    ]);
    let out = ts_client(&env, steps, &["serve", "--client", "cursor"]);
    assert_eq!(names(&out[0]), vec!["pinned__t"]);
    // out[1]: the notice of the server's first connection, if the listing did not see it
    // first; out[2] marks what came before the change.
    let out = &out[3..];
    assert_eq!(text(&out[0]), "ok");
    assert_eq!(
        out[1]["seen"],
        json!(true),
        "list_changed went downstream: {}",
        out[1]
    );
    assert!(
        names(&out[2]).is_empty(),
        "a pin-blocked tool is not offered: {}",
        out[2]
    );
    assert_eq!(out[3]["result"]["isError"], json!(true), "{}", out[3]);
    assert!(
        text(&out[3]).contains("code tool_pin_mismatch"),
        "{}",
        out[3]
    );
    let calls = tool_calls(&env, "t");
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(
        matches!(calls[1].decision, ToolDecision::Denied { .. }),
        "{calls:?}"
    );
    assert_eq!(client(&calls[1].caller), Some("cursor"));
}

#[test]
fn serve_refuses_a_bad_client_id_before_starting() {
    let env = Env::new();
    let (code, _, stderr) = env.run(&["serve", "--client", "Claude Desktop"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("client id"), "{stderr}");
}

#[test]
fn serve_for_one_server_offers_its_tools_under_their_own_names_through_the_same_gate() {
    let env = Env::new();
    let steps = json!([
        {"op": "list"},
        {"op": "call", "name": "echo", "arguments": {"message": "one server"}},
        // Hidden by the bundle: not offered, refused at the gate, under its own name too.
        {"op": "call", "name": "fail", "arguments": {}},
        // The prefixed name and the other server's tools are not this gateway's.
        {"op": "call", "name": "demo__echo", "arguments": {"message": "x"}},
    ]);
    let out = ts_client(
        &env,
        steps,
        &["--demo", "serve", "--client", "one", "--server", "demo"],
    );
    let offered = names(&out[0]);
    assert!(offered.contains(&"echo".to_string()), "{offered:?}");
    assert!(offered.contains(&"book_table".to_string()), "{offered:?}");
    assert!(
        !offered.iter().any(|n| n.contains("__") || n == "fail"),
        "only the demo's allowed tools, unprefixed: {offered:?}"
    );
    assert_eq!(text(&out[1]), "one server");
    assert!(
        text(&out[2]).contains("Gatehouse did not complete fail")
            && text(&out[2]).contains("code tool_"),
        "{:?}",
        out[2]
    );
    assert_eq!(out[3]["error"]["code"], json!(-32602), "{}", out[3]);
    let calls = tool_calls(&env, "echo");
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].name, "demo");
    assert_eq!(client(&calls[0].caller), Some("one"));
    let denied = tool_calls(&env, "fail");
    assert!(
        matches!(denied[0].decision, ToolDecision::Denied { .. }),
        "{denied:?}"
    );
    // Only the one server was started: the other demo server was never admitted.
    let admitted = |name: &str| {
        payloads::<Admission>(&env.audit_log())
            .iter()
            .any(|a| a.name == name)
    };
    assert!(admitted("demo") && !admitted("demo-2025"));

    let (code, _, stderr) = env.run(&["--demo", "serve", "--server", "nosuch"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("no server named \"nosuch\""), "{stderr}");
}

#[test]
fn a_client_connected_with_gatehouse_clients_reaches_its_own_servers_through_the_gate() {
    let env = Env::new();
    let desktop = env
        .dir
        .path()
        .join(".config/Claude/claude_desktop_config.json");
    std::fs::create_dir_all(desktop.parent().unwrap()).unwrap();
    std::fs::write(
        &desktop,
        json!({"mcpServers": {"mine": {"command": demo_bin(), "args": []}}}).to_string(),
    )
    .unwrap();
    let (code, stdout, stderr) = env.run(&["clients", "connect", "claude_desktop"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    // What Claude Desktop will launch, exactly as written into its file.
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&desktop).unwrap()).unwrap();
    let entry = &written["mcpServers"]["gatehouse"];
    let program = entry["command"].as_str().unwrap().to_string();
    let args: Vec<String> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    // The imported server is unattested: in the warn posture it is offered once approved.
    let steps = json!([{"op": "list"}]);
    let out = ts_client_launching(&env, steps.clone(), &program, &args);
    assert!(
        names(&out[0]).is_empty(),
        "nothing before approval: {}",
        out[0]
    );
    env.approve(&["mine"]);
    let steps = json!([
        {"op": "list"},
        {"op": "call", "name": "mine__echo", "arguments": {"message": "from claude desktop"}},
    ]);
    let out = ts_client_launching(&env, steps, &program, &args);
    assert!(
        names(&out[0]).contains(&"mine__echo".to_string()),
        "{}",
        out[0]
    );
    assert_eq!(text(&out[1]), "from claude desktop");
    let calls = tool_calls(&env, "echo");
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].name, "mine");
    assert_eq!(client(&calls[0].caller), Some("claude_desktop"));
}

/// The MCP Inspector's CLI mode (npm @modelcontextprotocol/inspector, pinned): another client
/// no one here wrote, launching `gatehouse serve` the way its users do.
/// Whether it succeeded, its stdout (the JSON result) and its stderr (serve's notes).
fn inspector(env: &Env, method_args: &[&str]) -> (bool, String, String) {
    let mut command = Command::new(node());
    command
        .arg(
            repo().join(
                "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
            ),
        )
        .arg("--cli")
        .arg(env!("CARGO_BIN_EXE_gatehouse"))
        // The Inspector takes --config for itself: the servers file goes by environment.
        .args(["--log-dir", &env.logs().display().to_string()])
        .args(["--demo", "serve", "--client", "inspector"])
        .args(method_args);
    env.isolate(&mut command);
    let out = command.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_mcp_inspector_cli_lists_and_calls_through_serve() {
    let env = Env::new();
    let (ok, listed, notes) = inspector(&env, &["--method", "tools/list"]);
    assert!(ok, "{listed}{notes}");
    let listed: Value = serde_json::from_str(&listed).unwrap_or_else(|e| panic!("{e}: {listed}"));
    let offered: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        offered.contains(&"demo__echo") && offered.contains(&"demo-2025__echo"),
        "{offered:?}"
    );
    assert!(!offered.contains(&"demo__fail"), "{offered:?}");

    let (ok, called, notes) = inspector(
        &env,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "demo__echo",
            "--tool-arg",
            "message=inspected",
        ],
    );
    assert!(ok, "{called}{notes}");
    let called: Value = serde_json::from_str(&called).unwrap_or_else(|e| panic!("{e}: {called}"));
    assert_eq!(called["content"][0]["text"], "inspected");
    let calls = tool_calls(&env, "echo");
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(client(&calls[0].caller), Some("inspector"));
    assert!(
        calls[0]
            .caller
            .as_ref()
            .and_then(|c| c.claimed.as_ref())
            .is_some(),
        "{calls:?}"
    );
}

#[test]
fn progress_passes_from_the_upstream_server_to_the_client_under_the_clients_token() {
    let env = Env::new();
    let steps = json!([
        {"op": "call", "name": "demo-2025__slow", "arguments": {"steps": 3, "delay_ms": 50}, "progress": true},
        {"op": "call", "name": "demo__slow", "arguments": {"steps": 2, "delay_ms": 50}, "progress": true},
        // A client that asks for no progress gets none.
        {"op": "call", "name": "demo-2025__slow", "arguments": {"steps": 2, "delay_ms": 50}},
    ]);
    let out = ts_client(&env, steps, &["--demo", "serve"]);
    let progress = |call: &Value| -> Vec<(f64, Option<f64>)> {
        call["progress"]
            .as_array()
            .unwrap_or_else(|| panic!("no progress in {call}"))
            .iter()
            .map(|p| (p["progress"].as_f64().unwrap(), p["total"].as_f64()))
            .collect()
    };
    // The SDK hands a progress notification to its handler a microtask late, after a
    // response read in the same chunk has retired the token (typescript-sdk issue #2580):
    // the last step can be lost on a busy machine. What reaches the model is in order; that
    // every step goes out, before the result, is checked on the wire below.
    let in_order_prefix = |got: Vec<(f64, Option<f64>)>, steps: u32| {
        let want: Vec<(f64, Option<f64>)> = (1..=steps)
            .map(|k| (f64::from(k), Some(f64::from(steps))))
            .collect();
        assert!(
            got.len() + 1 >= want.len() && want.starts_with(&got),
            "{got:?} is not {want:?} (or it without its last step)"
        );
    };
    in_order_prefix(progress(&out[0]), 3);
    in_order_prefix(progress(&out[1]), 2);
    assert!(out[2].get("progress").is_none());
    assert!(text(&out[2]).contains("done"), "{}", out[2]);
}

#[test]
fn every_progress_step_goes_out_under_the_clients_token_before_the_result() {
    let env = Env::new();
    let mut raw = raw_demo(&env);
    for (id, tool, token) in [
        (2, "demo-2025__slow", json!("client-token-7")),
        (3, "demo__slow", json!(41)),
    ] {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": tool, "arguments": {"steps": 3, "delay_ms": 20},
            "_meta": {"progressToken": token}}});
        raw.send_line(call.to_string().as_bytes());
        let mut seen = Vec::new();
        let result = loop {
            let message = raw.next_message();
            if message["id"] == json!(id) {
                break message;
            }
            if message["method"] == "notifications/progress" {
                seen.push(message["params"].clone());
            }
        };
        assert!(result["result"]["isError"] != json!(true), "{result}");
        let steps: Vec<(Value, f64, f64)> = seen
            .iter()
            .map(|p| {
                (
                    p["progressToken"].clone(),
                    p["progress"].as_f64().unwrap(),
                    p["total"].as_f64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            steps,
            vec![
                (token.clone(), 1.0, 3.0),
                (token.clone(), 2.0, 3.0),
                (token.clone(), 3.0, 3.0)
            ],
            "{tool}"
        );
    }
}

/// `gatehouse --demo serve` with raw pipes (the test kit's raw client), for a client that
/// misbehaves, initialized in the 2025-11-25 era.
fn raw_demo(env: &Env) -> RawClient {
    RawClient::initialized(env.cmd(&["--demo", "serve", "--client", "raw"]), "raw")
}

/// A 2026-07-28 request on the raw pipe: `method` with `params` and the era's `_meta`.
fn modern(id: u64, method: &str, mut params: Value) -> Vec<u8> {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-modern", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        .to_string()
        .into_bytes()
}

#[test]
fn a_2026_client_hears_of_a_changed_offer_on_the_subscription_stream_that_asked_for_it() {
    let env = Env::new();
    add_pin_change_server(&env);
    env.approve(&["pinned"]);
    let mut raw = RawClient::spawn(env.cmd(&["serve", "--client", "modern"]));
    raw.send_line(&modern(1, "tools/list", json!({})));
    let listed = raw.answer(1);
    assert_eq!(
        listed["result"]["tools"][0]["name"], "pinned__t",
        "{listed}"
    );
    // Two streams: one asks for tool changes, one only for prompt changes (not offered).
    raw.send_line(&modern(
        2,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    ));
    raw.send_line(&modern(
        3,
        "subscriptions/listen",
        json!({"notifications": {"promptsListChanged": true}}),
    ));
    // Both streams are open once acknowledged: only then is the change made, so that the
    // test does not race the gateway's handling of the two requests (a change before a
    // stream exists is, rightly, not sent on it).
    let mut acknowledged = Vec::new();
    let mut changed_on = Vec::new();
    while acknowledged.len() < 2 {
        let message = raw.next_message();
        if message["method"] == "notifications/subscriptions/acknowledged" {
            acknowledged.push((
                message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].clone(),
                message["params"]["notifications"].clone(),
            ));
        }
    }
    // The fixture changes its tool's description after the first call and says so: the pin
    // blocks the tool, so what is offered changed.
    raw.send_line(&modern(
        4,
        "tools/call",
        json!({"name": "pinned__t", "arguments": {}}),
    ));
    let mut called = false;
    while !called || changed_on.is_empty() {
        let message = raw.next_message();
        let tagged = message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].clone();
        match message["method"].as_str() {
            Some("notifications/subscriptions/acknowledged") => {
                acknowledged.push((tagged, message["params"]["notifications"].clone()));
            }
            Some("notifications/tools/list_changed") => changed_on.push(tagged),
            _ if message["id"] == json!(4) => {
                assert_eq!(message["result"]["content"][0]["text"], "ok", "{message}");
                called = true;
            }
            _ => {}
        }
    }
    // Everything sent before the answer to a later request has been seen.
    raw.send_line(&modern(5, "ping", json!({})));
    loop {
        let message = raw.next_message();
        if message["method"] == "notifications/tools/list_changed" {
            changed_on
                .push(message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].clone());
        }
        if message["id"] == json!(5) {
            break;
        }
    }
    assert_eq!(
        changed_on,
        vec![json!(2)],
        "only the stream that asked, once"
    );
    acknowledged.sort_by_key(|(id, _)| id.as_u64());
    assert_eq!(
        acknowledged,
        vec![
            (json!(2), json!({"toolsListChanged": true})),
            // Accepted: nothing the gateway offers was asked for.
            (json!(3), json!({})),
        ]
    );
    // And the listing now leaves the pin-blocked tool out.
    raw.send_line(&modern(6, "tools/list", json!({})));
    let listed = raw.answer(6);
    assert_eq!(listed["result"]["tools"], json!([]), "{listed}");
}

#[test]
fn a_client_sending_garbage_or_an_oversized_message_gets_errors_and_the_gateway_keeps_serving() {
    let env = Env::new();
    let mut client = raw_demo(&env);
    client.send_line(b"this is not json");
    client.send_line(br#"{"jsonrpc":"2.0","id":2,"method":"no/such/method"}"#);
    assert!(client.answer(2)["error"].is_object());
    // Over the 16 MiB line limit: dropped, never buffered whole.
    let mut huge = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"demo__echo","arguments":{"message":""#.to_vec();
    huge.extend(std::iter::repeat_n(b'a', 17 * 1024 * 1024));
    huge.extend(br#""}}}"#);
    client.send_line(&huge);
    client.send_line(br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"demo__echo","arguments":{"message":"still here"}}}"#);
    let echo = client.answer(4);
    assert_eq!(echo["result"]["content"][0]["text"], "still here", "{echo}");
    // The oversized call never reached the gate: one echo recorded, the small one.
    assert_eq!(tool_calls(&env, "echo").len(), 1);
}

#[test]
fn a_client_that_disconnects_mid_call_ends_the_upstream_call_and_gatehouse_exits() {
    let env = Env::new();
    let mut client = raw_demo(&env);
    client.send_line(br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo-2025__slow","arguments":{"steps":100,"delay_ms":300}}}"#);
    // The call is under way upstream (the gate recorded it), then the client goes away.
    let deadline = Instant::now() + Duration::from_secs(20);
    while tool_calls(&env, "slow").is_empty() {
        assert!(Instant::now() < deadline, "the call never reached the gate");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    drop(client.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(status) = client.child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "gatehouse serve kept running without its client"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The demo server heard the cancel before its connection was closed.
    let log = std::fs::read_to_string(env.logs().join("demo-2025.stderr.log")).unwrap_or_default();
    assert!(log.contains("slow tool cancelled"), "{log}");
}

#[test]
fn both_protocol_eras_work_downstream_with_gatehouse_itself_as_the_client() {
    let env = Env::new();
    let serve = format!(
        "{} --demo serve --client nested",
        env!("CARGO_BIN_EXE_gatehouse")
    );
    // The outer gatehouse sees the gateway as an unattested stdio server (warn posture). Run
    // confined it would have a private home (another audit log) and could start no demo
    // servers, so the person turns confinement off for it, as `servers confine` lets them.
    let (code, stdout, stderr) = env.run(&["servers", "add", "nested", "--stdio", &serve]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (code, stdout, stderr) = env.run(&["servers", "confine", "nested", "--unconfined"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    for era in ["2026-07-28", "2025-11-25"] {
        // Its tools are offered to the outer host once approved.
        let (code, stdout, stderr) = env.run(&["--era", era, "tools", "pin", "nested"]);
        assert_eq!(code, 0, "{era}: {stdout}{stderr}");
        let (code, connected) = env.json(&["--era", era, "connect", "nested"]);
        assert_eq!(code, 0, "{era}: {connected}");
        assert_eq!(connected["summary"]["protocol_version"], era, "{connected}");
        let (code, out) = env.json(&[
            "--era",
            era,
            "call",
            "nested",
            "demo__echo",
            "--args",
            r#"{"message":"nested"}"#,
        ]);
        assert_eq!(code, 0, "{era}: {out}");
        assert_eq!(out["result"]["content"][0]["text"], "nested", "{out}");
    }
    // Inside, each call passed the gate for the nested client.
    let nested: Vec<ToolCall> = tool_calls(&env, "echo")
        .into_iter()
        .filter(|c| client(&c.caller) == Some("nested"))
        .collect();
    assert_eq!(nested.len(), 2, "{nested:?}");
}

/// Claude Code's own `claude mcp` (the real CLI from npm) reads the entry `clients connect`
/// wrote into ~/.claude.json and finds Gatehouse serving there.
#[test]
fn claude_codes_own_mcp_commands_find_gatehouse_connected_after_clients_connect() {
    let env = Env::new();
    let home = env.dir.path();
    std::fs::write(
        home.join(".claude.json"),
        json!({"mcpServers": {"mine": {"type": "stdio", "command": demo_bin(), "args": []}}})
            .to_string(),
    )
    .unwrap();
    let (code, stdout, stderr) = env.run(&["clients", "connect", "claude_code"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (code, listed, stderr) = common::claude(home, &["mcp", "list"], |c| env.isolate(c));
    assert_eq!(code, 0, "{listed}{stderr}");
    let line = listed
        .lines()
        .find(|l| l.starts_with("gatehouse:"))
        .unwrap_or_else(|| panic!("Claude Code lists no gatehouse: {listed}{stderr}"));
    assert!(line.contains("serve --client claude_code"), "{line}");
    assert!(
        line.contains("Connected") && !line.contains("Failed"),
        "{line}"
    );
    assert!(
        !listed.lines().any(|l| l.starts_with("mine:")),
        "the client's own server now goes through Gatehouse: {listed}"
    );
    let (code, got, stderr) =
        common::claude(home, &["mcp", "get", "gatehouse"], |c| env.isolate(c));
    assert_eq!(code, 0, "{got}{stderr}");
    assert!(got.contains("Connected"), "{got}");
}

#[test]
fn an_ai_client_gets_the_gates_prompts_and_resources_and_nothing_else() {
    let env = Env::new();
    // Every server side by side: prompts under SERVER__NAME. The demo's two eras list the
    // same URIs but are one server: its resources are offered once, from `demo`.
    let steps = json!([
        {"op": "prompts"},
        {"op": "getPrompt", "name": "demo__summarize", "arguments": {"topic": "gateways"}},
        {"op": "getPrompt", "name": "demo__Summarize", "arguments": {"topic": "x"}},
        // Not offered under any name.
        {"op": "getPrompt", "name": "demo__markup_prompt", "arguments": {}},
        {"op": "complete", "ref": {"type": "ref/prompt", "name": "demo-2025__summarize"}, "argument": {"name": "topic", "value": "oa"}},
        {"op": "resources"},
    ]);
    let out = ts_client(&env, steps, &["--demo", "serve", "--client", "ts_test"]);
    let offered: Vec<&str> = out[0]["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for name in [
        "demo__summarize",
        "demo__plan_trip",
        "demo-2025__review_code",
    ] {
        assert!(offered.contains(&name), "{name} in {offered:?}");
    }
    let said = out[1]["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(said.contains("gateways"), "{}", out[1]);
    assert_eq!(out[2]["error"]["code"], json!(-32602), "{}", out[2]);
    assert_eq!(out[3]["error"]["code"], json!(-32602), "{}", out[3]);
    assert_eq!(out[4]["values"], json!(["oauth"]), "{}", out[4]);
    let uris = out[5]["uris"].as_array().unwrap();
    assert!(
        uris.contains(&json!("demo://docs/welcome.txt")),
        "{}",
        out[5]
    );
    let unique: std::collections::BTreeSet<&str> = uris.iter().filter_map(Value::as_str).collect();
    assert_eq!(unique.len(), uris.len(), "offered once: {}", out[5]);

    // One server: its resources under their own URIs, every read through its gate.
    let steps = json!([
        {"op": "resources"},
        {"op": "read", "uri": "demo://docs/welcome.txt"},
        {"op": "read", "uri": "demo://notes/ideas"},
        {"op": "read", "uri": "demo://notes/../secrets"},
        {"op": "read", "uri": "demo://hostile/markup.html"},
        {"op": "prompts"},
    ]);
    let out = ts_client(
        &env,
        steps,
        &["--demo", "serve", "--server", "demo", "--client", "ts_test"],
    );
    let uris = out[0]["uris"].as_array().unwrap();
    assert!(
        uris.contains(&json!("demo://docs/welcome.txt")),
        "{}",
        out[0]
    );
    assert_eq!(out[0]["templates"], json!(["demo://notes/{name}"]));
    assert!(
        out[1]["result"]["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| !t.is_empty()),
        "{}",
        out[1]
    );
    assert_eq!(out[2]["result"]["contents"][0]["uri"], "demo://notes/ideas");
    // What the gate does not allow does not exist for the client: -32002, audited.
    for refused in &out[3..5] {
        assert_eq!(refused["error"]["code"], json!(-32002), "{refused}");
    }
    assert!(
        out[5]["names"]
            .as_array()
            .unwrap()
            .contains(&json!("summarize")),
        "{}",
        out[5]
    );
    let reads: Vec<ResourceRead> = payloads(&env.audit_log());
    let denied: Vec<(&GateReason, &ResourceRead)> = reads
        .iter()
        .filter_map(|r| match &r.decision {
            ResourceDecision::Denied { reason, .. } => Some((reason, r)),
            ResourceDecision::Allowed { .. } => None,
        })
        .collect();
    assert_eq!(denied.len(), 2, "{reads:?}");
    assert_eq!(*denied[0].0, GateReason::ResourceUriRefused);
    assert_eq!(client(&denied[0].1.caller), Some("ts_test"));
    let prompts: Vec<PromptGet> = payloads(&env.audit_log());
    // A name the offer does not have never reaches a server (as for tools).
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    let PromptDecision::Allowed { prompt, .. } = &prompts[0].decision else {
        panic!("not allowed: {prompts:?}");
    };
    assert_eq!(prompt, "summarize");
    assert_eq!(client(&prompts[0].caller), Some("ts_test"));

    // An unattested server in the warn posture: its prompts are listed by the host but not
    // offered until the user pins them; a model that guesses one reaches the gate, which
    // refuses it and records the client.
    let (code, _, stderr) = env.run(&["servers", "add", "mine", "--stdio", &demo_bin()]);
    assert_eq!(code, 0, "{stderr}");
    let steps = json!([
        {"op": "prompts"},
        {"op": "getPrompt", "name": "mine__summarize", "arguments": {"topic": "x"}},
    ]);
    let out = ts_client(&env, steps, &["serve", "--client", "ts_test"]);
    assert_eq!(out[0]["names"], json!([]), "{}", out[0]);
    assert_eq!(out[1]["error"]["code"], json!(-32602), "{}", out[1]);
    let refused: Vec<(GateReason, PromptGet)> = payloads::<PromptGet>(&env.audit_log())
        .into_iter()
        .filter_map(|p| match p.decision {
            PromptDecision::Denied { reason, .. } => Some((reason, p)),
            PromptDecision::Allowed { .. } => None,
        })
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].0, GateReason::PromptNotAdmitted);
    assert_eq!(client(&refused[0].1.caller), Some("ts_test"));
    let (code, _, stderr) = env.run(&["prompts", "pin", "mine", "--prompt", "summarize"]);
    assert_eq!(code, 0, "{stderr}");
    let out = ts_client(&env, json!([{"op": "prompts"}]), &["serve"]);
    assert_eq!(out[0]["names"], json!(["mine__summarize"]), "{}", out[0]);
}

/// The note a call's result carries when it needed the person and the app was not running.
fn absent_person_note(call: &Value) -> Option<String> {
    call["result"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content in {call}"))
        .iter()
        .filter_map(|item| item["text"].as_str())
        .find(|text| text.contains("the Gatehouse app is not running"))
        .map(str::to_string)
}

#[test]
fn without_the_app_each_call_that_needed_the_person_says_so_in_its_result_and_no_other_call_does() {
    let env = Env::new();
    let steps = json!([
        {"op": "call", "name": "demo__book_table", "arguments": {}},
        {"op": "call", "name": "demo-2025__book_table", "arguments": {}},
        {"op": "call", "name": "demo__connect_account", "arguments": {"service": "files"}},
        {"op": "call", "name": "demo-2025__connect_account", "arguments": {"service": "mail"}},
        {"op": "call", "name": "demo-2025__connect_account_required", "arguments": {"service": "mail"}},
        {"op": "call", "name": "demo__echo", "arguments": {"message": "plain"}},
    ]);
    let out = ts_client(&env, steps, &["--demo", "serve", "--client", "ts_test"]);
    let expected = [
        ("demo", "a form to fill in"),
        ("demo-2025", "a form to fill in"),
        ("demo", "a web page to open (URL)"),
        ("demo-2025", "a web page to open (URL)"),
        ("demo-2025", "a web page to open (URL)"),
    ];
    for (call, (server, kind)) in out.iter().zip(expected) {
        let note = absent_person_note(call).unwrap_or_else(|| panic!("no note in {call}"));
        assert!(
            note.contains(&format!("The server {server:?} needed {kind}")),
            "{note}"
        );
        assert!(
            note.contains("gatehouse-desktop") && note.contains("applications menu"),
            "says how to start the app: {note}"
        );
        assert!(note.contains("call this tool again"), "{note}");
        // One note, after what the server (or Gatehouse's refusal) said.
        let content = call["result"]["content"].as_array().unwrap();
        assert!(content.len() >= 2, "{call}");
        assert_eq!(content.last().unwrap()["text"], note.as_str(), "{call}");
        assert_eq!(
            content
                .iter()
                .filter(|c| c["text"] == note.as_str())
                .count(),
            1,
            "{call}"
        );
    }
    // The forms were declined, which the servers answered without an error: kept so.
    for call in &out[..2] {
        assert_ne!(call["result"]["isError"], true, "{call}");
        assert!(text(call).to_lowercase().contains("decline"), "{call}");
    }
    // A call that needed nobody is exactly what the server said.
    assert_eq!(
        out[5]["result"]["content"],
        json!([{"type": "text", "text": "plain"}]),
        "{}",
        out[5]
    );
    // Each declined elicitation is receipted as before.
    let receipts: Vec<ElicitationReceipt> = payloads(&env.audit_log());
    assert_eq!(receipts.len(), 5, "{receipts:?}");
    assert!(
        receipts
            .iter()
            .all(|r| r.action == ElicitationAnswer::Decline),
        "{receipts:?}"
    );
}
