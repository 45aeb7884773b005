//! The demo server over stdio, driven by hand with newline-delimited JSON-RPC.

mod common;

use std::time::Duration;

use common::{
    ALL_TOOLS, LEGACY, MODERN, StdioServer, initialize_params, modern_meta, modern_meta_with,
    only_text, tool_names,
};
use serde_json::{Value, json};

fn call_tool(server: &mut StdioServer, name: &str, arguments: Value) -> Value {
    server.call("tools/call", json!({"name": name, "arguments": arguments}))
}

#[test]
fn initialize_answers_with_2025_11_25_and_the_demo_identity() {
    let mut server = StdioServer::spawn(&[]);
    let result = server.initialize();
    assert_eq!(result["protocolVersion"], LEGACY);
    assert_eq!(result["serverInfo"]["name"], "gatehouse-demo-server");
    assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    let instructions = result["instructions"].as_str().expect("instructions");
    assert!(instructions.contains("Gatehouse demo"), "{instructions}");

    // The session is usable afterwards.
    assert_eq!(tool_names(&server.call("tools/list", json!({}))), ALL_TOOLS);
    assert!(server.close().success());
}

#[test]
fn legacy_era_answers_initialize() {
    let mut server = StdioServer::spawn(&["--era", LEGACY]);
    assert_eq!(server.initialize()["protocolVersion"], LEGACY);
    assert_eq!(
        only_text(&call_tool(&mut server, "echo", json!({"message": "hi"}))),
        "hi"
    );
}

#[test]
fn modern_era_refuses_initialize_and_ends_the_connection() {
    let mut server = StdioServer::spawn(&["--era", MODERN]);
    let error = server.call_err("initialize", initialize_params(LEGACY));
    assert_eq!(error["code"], -32022, "{error}");
    assert_eq!(error["data"]["requested"], LEGACY);
    assert_eq!(error["data"]["supported"], json!([MODERN]));
    // rmcp 3.9 treats a failed handshake as the end of the stdio connection.
    let status = server.wait();
    assert!(!status.success());
    assert!(
        server.stderr().contains("refused initialize"),
        "{}",
        server.stderr()
    );
}

#[test]
fn modern_era_answers_discover_and_stateless_requests() {
    let mut server = StdioServer::spawn(&["--era", MODERN]);
    let result = server.call("server/discover", json!({"_meta": modern_meta()}));
    assert_eq!(result["supportedVersions"], json!([MODERN]));
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "gatehouse-demo-server"
    );
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);

    let list = server.call("tools/list", json!({"_meta": modern_meta()}));
    assert_eq!(tool_names(&list), ALL_TOOLS);
    let echo = server.call(
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "sessionless"}, "_meta": modern_meta()}),
    );
    assert_eq!(only_text(&echo), "sessionless");
    assert_eq!(echo["resultType"], "complete");

    // A request still naming 2025-11-25 is outside this era.
    let error = server.call_err(
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": LEGACY,
                          "io.modelcontextprotocol/clientCapabilities": {}}}),
    );
    assert_eq!(error["code"], -32022, "{error}");
    assert!(server.close().success());
}

#[test]
fn both_eras_offer_discover_with_both_versions() {
    let mut server = StdioServer::spawn(&[]);
    let result = server.call("server/discover", json!({"_meta": modern_meta()}));
    let versions = result["supportedVersions"].as_array().expect("versions");
    assert!(versions.contains(&json!(LEGACY)), "{result}");
    assert!(versions.contains(&json!(MODERN)), "{result}");
    // Discover is only a probe: the client may still pick the legacy handshake.
    assert_eq!(server.initialize()["protocolVersion"], LEGACY);
}

#[test]
fn legacy_era_treats_discover_as_an_unknown_method() {
    let mut server = StdioServer::spawn(&["--era", LEGACY]);
    // A 2026-07-28 probe gets method-not-found, not a version error, like a real legacy server.
    let error = server.call_err("server/discover", json!({"_meta": modern_meta()}));
    assert_eq!(error["code"], -32601, "{error}");
    let mut legacy_meta = modern_meta();
    legacy_meta["io.modelcontextprotocol/protocolVersion"] = json!(LEGACY);
    let error = server.call_err("server/discover", json!({"_meta": legacy_meta}));
    assert_eq!(error["code"], -32601, "{error}");

    // The fallback a host performs next works on the same connection.
    assert_eq!(server.initialize()["protocolVersion"], LEGACY);
    let error = server.call_err("server/discover", json!({"_meta": modern_meta()}));
    assert_eq!(error["code"], -32601, "{error}");
    // 2026-07-28 requests are refused even inside the session.
    let error = server.call_err("tools/list", json!({"_meta": modern_meta()}));
    assert_eq!(error["code"], -32022, "{error}");
}

#[test]
fn tools_list_describes_every_tool() {
    let mut server = StdioServer::spawn(&[]);
    server.initialize();
    let list = server.call("tools/list", json!({}));
    assert_eq!(tool_names(&list), ALL_TOOLS);
    assert!(list.get("nextCursor").is_none(), "{list}");
    let tools = list["tools"].as_array().unwrap();
    let tool = |name: &str| {
        tools
            .iter()
            .find(|tool| tool["name"] == name)
            .unwrap()
            .clone()
    };

    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert!(
            tool["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{tool}"
        );
    }
    let echo = tool("echo");
    assert_eq!(echo["inputSchema"]["required"], json!(["message"]));
    assert_eq!(
        echo["inputSchema"]["properties"]["message"]["type"],
        "string"
    );
    let add = tool("add");
    assert_eq!(add["inputSchema"]["properties"]["a"]["type"], "number");
    assert_eq!(add["inputSchema"]["properties"]["b"]["type"], "number");
    let slow = tool("slow")["inputSchema"].clone();
    assert!(
        slow.get("required").is_none_or(|r| r == &json!([])),
        "{slow}"
    );
    assert_eq!(slow["properties"]["steps"]["type"], "integer");
    assert_eq!(slow["properties"]["steps"]["default"], 5);
    assert_eq!(slow["properties"]["steps"]["maximum"], 100);
    assert_eq!(slow["properties"]["delay_ms"]["default"], 100);
    assert_eq!(slow["properties"]["delay_ms"]["maximum"], 10000);
    let fail = tool("fail")["inputSchema"].clone();
    assert_eq!(fail["properties"]["message"]["type"], "string");
}

#[test]
fn page_size_paginates_tools_list() {
    let mut server = StdioServer::spawn(&["--page-size", "1"]);
    server.initialize();
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let pages = ALL_TOOLS.len();
    for page in 1..=pages {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let list = server.call("tools/list", params);
        let page_names = tool_names(&list);
        assert_eq!(page_names.len(), 1, "page {page}: {list}");
        names.extend(page_names);
        cursor = list["nextCursor"].as_str().map(str::to_owned);
        assert_eq!(cursor.is_some(), page < pages, "page {page}: {list}");
    }
    assert_eq!(names, ALL_TOOLS);

    let error = server.call_err("tools/list", json!({"cursor": "not-a-cursor"}));
    assert_eq!(error["code"], -32602, "{error}");
}

#[test]
fn page_size_can_come_from_the_environment() {
    let mut server = StdioServer::spawn_with_env(&[], &[("GATEHOUSE_DEMO_PAGE_SIZE", "3")]);
    server.initialize();
    let first = server.call("tools/list", json!({}));
    assert_eq!(tool_names(&first), ALL_TOOLS[..3]);
    let cursor = first["nextCursor"]
        .as_str()
        .expect("a second page")
        .to_owned();
    let second = server.call("tools/list", json!({"cursor": cursor}));
    assert_eq!(tool_names(&second), ALL_TOOLS[3..6]);
    assert!(second.get("nextCursor").is_some(), "{second}");
}

#[test]
fn echo_add_and_fail_return_their_results() {
    let mut server = StdioServer::spawn(&[]);
    server.initialize();

    let echo = call_tool(&mut server, "echo", json!({"message": "héllo, wörld"}));
    assert_eq!(only_text(&echo), "héllo, wörld");
    assert_eq!(echo["isError"], false);

    for (a, b, sum) in [
        (json!(2), json!(3), "5"),
        (json!(0.5), json!(0.25), "0.75"),
        (json!(-7), json!(2.5), "-4.5"),
    ] {
        let add = call_tool(&mut server, "add", json!({"a": a, "b": b}));
        assert_eq!(only_text(&add), sum, "{a} + {b}");
        assert_eq!(add["isError"], false);
    }

    let fail = call_tool(&mut server, "fail", json!({}));
    assert_eq!(fail["isError"], true);
    assert_eq!(only_text(&fail), "the fail tool always fails");
    let fail = call_tool(&mut server, "fail", json!({"message": "custom failure"}));
    assert_eq!(fail["isError"], true);
    assert_eq!(only_text(&fail), "custom failure");

    // rmcp reports malformed arguments as a tool error, and an unknown tool as invalid params.
    let bad = call_tool(&mut server, "add", json!({"a": "two", "b": 3}));
    assert_eq!(bad["isError"], true);
    assert!(
        only_text(&bad).contains("failed to deserialize parameters"),
        "{bad}"
    );
    let error = server.call_err("tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(error["code"], -32602, "{error}");
}

#[test]
fn slow_reports_progress_for_each_step() {
    let mut server = StdioServer::spawn(&[]);
    server.initialize();
    let result = server.call(
        "tools/call",
        json!({"name": "slow", "arguments": {"steps": 3, "delay_ms": 10},
               "_meta": {"progressToken": "tok-1"}}),
    );
    assert_eq!(only_text(&result), "done after 3 steps");
    let progress: Vec<&Value> = server
        .unsolicited
        .iter()
        .filter(|message| message["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{:?}", server.unsolicited);
    for (index, notification) in progress.iter().enumerate() {
        let step = index + 1;
        let params = &notification["params"];
        assert_eq!(params["progressToken"], "tok-1");
        assert_eq!(params["progress"].as_f64(), Some(step as f64));
        assert_eq!(params["total"].as_f64(), Some(3.0));
        assert_eq!(params["message"], format!("step {step} of 3"));
    }
}

#[test]
fn slow_without_a_progress_token_sends_no_progress() {
    let mut server = StdioServer::spawn(&[]);
    server.initialize();
    let result = server.call(
        "tools/call",
        json!({"name": "slow", "arguments": {"steps": 2, "delay_ms": 1}}),
    );
    assert_eq!(only_text(&result), "done after 2 steps");
    assert!(server.unsolicited.is_empty(), "{:?}", server.unsolicited);
}

#[test]
fn slow_reports_progress_on_the_modern_era_too() {
    let mut server = StdioServer::spawn(&["--era", MODERN]);
    let result = server.call(
        "tools/call",
        json!({"name": "slow", "arguments": {"steps": 2, "delay_ms": 1},
               "_meta": modern_meta_with(json!({"progressToken": 42}))}),
    );
    assert_eq!(only_text(&result), "done after 2 steps");
    let steps: Vec<f64> = server
        .unsolicited
        .iter()
        .filter(|message| message["method"] == "notifications/progress")
        .map(|message| {
            assert_eq!(message["params"]["progressToken"], 42);
            message["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(steps, [1.0, 2.0]);
}

#[test]
fn slow_rejects_arguments_over_the_limits() {
    let mut server = StdioServer::spawn(&[]);
    server.initialize();
    for (arguments, message) in [
        (json!({"steps": 101}), "steps must be at most 100"),
        (json!({"delay_ms": 10001}), "delay_ms must be at most 10000"),
    ] {
        let result = call_tool(&mut server, "slow", arguments);
        assert_eq!(result["isError"], true, "{result}");
        assert_eq!(only_text(&result), message);
    }
    assert!(
        server.unsolicited.is_empty(),
        "no steps ran: {:?}",
        server.unsolicited
    );
}

#[test]
fn slow_stops_when_cancelled() {
    let mut server = StdioServer::spawn(&[]);
    server.initialize();
    let id = server.start(
        "tools/call",
        json!({"name": "slow", "arguments": {"steps": 100, "delay_ms": 50},
               "_meta": {"progressToken": "cancel-me"}}),
    );
    let first = server.next();
    assert_eq!(first["method"], "notifications/progress", "{first}");
    assert_eq!(first["params"]["progress"].as_f64(), Some(1.0));
    server.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "test cancels"}),
    );

    // A step already under way may still report; after that the tool must be silent.
    // Uncancelled, 100 steps of 50 ms would keep reporting for five seconds.
    let mut after_cancel = Vec::new();
    while let Some(message) = server.try_next(Duration::from_millis(500)) {
        after_cancel.push(message);
        assert!(
            after_cancel.len() <= 2,
            "still running after cancel: {after_cancel:?}"
        );
    }
    for message in &after_cancel {
        assert_eq!(
            message["method"], "notifications/progress",
            "no response to a cancelled request: {message}"
        );
    }

    // The connection is still healthy.
    let echo = call_tool(&mut server, "echo", json!({"message": "still here"}));
    assert_eq!(only_text(&echo), "still here");
    assert!(
        server
            .unsolicited
            .iter()
            .all(|message| message.get("id") != Some(&json!(id))),
        "cancelled request answered: {:?}",
        server.unsolicited
    );
}

#[test]
fn closing_stdin_ends_the_server_cleanly() {
    let mut server = StdioServer::spawn(&[]);
    server.initialize();
    assert!(server.close().success());
}
