//! The gateway as an AI client sees it, in-process: the real host in demo mode (`demo` in
//! 2026-07-28, `demo-2025` in 2025-11-25, under the DEMO-ONLY bundle's allow-lists), one
//! gateway session per client, and rmcp's own client (the official SDK) on an in-memory pipe.
//! Each rule is tried with a request it lets through and one it refuses; every decision is
//! looked up in the audit log with the client that asked.

use std::path::Path;
use std::sync::Arc;

use gatehouse_gateway::{Gateway, GatewayHandler, HeadlessConsent};
use gatehouse_host::connection::MAX_SUBSCRIPTIONS_PER_CLIENT;
use gatehouse_host::host::Host;
use gatehouse_host::{Direction, DownstreamTransport};
use gatehouse_testkit as kit;
use kit::mcp::{Client, code};
use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, GetPromptRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ResourceContents, SubscribeRequestParams,
};
use serde_json::{Map, Value, json};

/// JSON-RPC "invalid params": what a name no server offers gets.
const INVALID_PARAMS: i32 = -32602;
/// JSON-RPC "resource not found" (SEP-2164): what a resource the gate hides gets.
const RESOURCE_NOT_FOUND: i32 = -32002;

/// The host in demo mode in `dir`, its servers connecting as `gatehouse serve` starts them.
fn demo_host(dir: &Path) -> Arc<Host> {
    let host = kit::host::open(
        kit::host::demo_options(dir),
        Arc::new(HeadlessConsent::new()),
    );
    host.connect_in_background(None);
    host
}

/// A client with id `client` on its own gateway session (every server, or `only` one), in
/// 2025-11-25.
async fn session(host: &Arc<Host>, client: &str, only: Option<&str>) -> (Client, Arc<Gateway>) {
    let gateway = Arc::new(
        Gateway::new(host.clone(), client.to_string(), DownstreamTransport::Stdio)
            .with_only(only.map(str::to_string)),
    );
    let running = kit::mcp::connect(
        GatewayHandler(gateway.clone()),
        client,
        ProtocolVersion::V_2025_11_25,
    )
    .await;
    (running, gateway)
}

/// Ends the client's session and the host.
async fn end(client: Client, gateway: Arc<Gateway>, host: Arc<Host>) {
    client.cancel().await.expect("the client leaves");
    gateway.end();
    host.shutdown().await;
}

fn arguments(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

async fn call(client: &Client, name: &str, args: Value) -> Result<CallToolResult, ServiceError> {
    client
        .peer()
        .call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(arguments(args)))
        .await
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

/// The JSON-RPC error code of a refused request.
fn rpc_code(error: &ServiceError) -> i32 {
    match error {
        ServiceError::McpError(data) => data.code.0,
        other => panic!("not a JSON-RPC error: {other}"),
    }
}

/// The requests for `method` the host sent to `server` so far.
fn sent(host: &Host, server: &str, method: &str) -> Vec<Value> {
    host.traffic(Some(server))
        .into_iter()
        .filter(|e| e.direction == Direction::Out && e.message["method"] == json!(method))
        .map(|e| e.message)
        .collect()
}

/// The audit records of `event` whose `data.field` is `value`.
fn recorded(dir: &Path, event: &str, field: &str, value: &str) -> Vec<Value> {
    kit::host::records_of(dir, event)
        .into_iter()
        .filter(|r| r["data"][field] == value)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_offers_the_allowed_tools_of_both_eras_and_never_a_hidden_one() {
    let dir = tempfile::tempdir().unwrap();
    let host = demo_host(dir.path());
    let (client, gateway) = session(&host, "lister", None).await;
    let tools = client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    // Allowed by the bundle: offered under SERVER__TOOL, from both servers.
    for allowed in [
        "demo__echo",
        "demo__add",
        "demo-2025__echo",
        "demo-2025__add",
    ] {
        assert!(names.contains(&allowed), "{allowed} in {names:?}");
    }
    // `fail` is a tool of both servers the bundle does not allow: never offered.
    for hidden in ["demo__fail", "demo-2025__fail"] {
        assert!(!names.contains(&hidden), "{hidden} in {names:?}");
    }
    assert!(!names.iter().any(|n| n.ends_with("__fail")), "{names:?}");
    end(client, gateway, host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_call_succeeds_and_a_denied_one_is_refused_each_recorded_with_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let host = demo_host(dir.path());
    let (client, gateway) = session(&host, "caller_a", None).await;

    let echoed = call(
        &client,
        "demo__echo",
        json!({"message": "through the gate"}),
    )
    .await
    .unwrap();
    assert_ne!(echoed.is_error, Some(true), "{echoed:?}");
    assert_eq!(text(&echoed), "through the gate");
    let allowed = recorded(dir.path(), "tool_call", "tool", "echo");
    assert_eq!(allowed.len(), 1, "{allowed:?}");
    assert_eq!(allowed[0]["data"]["decision"], "allowed");
    assert_eq!(allowed[0]["data"]["caller"]["client"], "caller_a");
    assert_eq!(allowed[0]["data"]["name"], "demo", "{}", allowed[0]);

    // Hidden by the allow-list: a model that guesses the name reaches the gate, which refuses
    // with its code, sends nothing and records the client.
    let fails_sent = sent(&host, "demo", "tools/call").len();
    let denied = call(&client, "demo__fail", json!({})).await.unwrap();
    assert_eq!(denied.is_error, Some(true), "{denied:?}");
    let said = text(&denied);
    assert!(
        said.contains("Gatehouse did not complete demo__fail")
            && said.contains("(code tool_not_admitted)"),
        "{said}"
    );
    assert_eq!(sent(&host, "demo", "tools/call").len(), fails_sent);
    let refused = recorded(dir.path(), "tool_call", "tool", "fail");
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["data"]["decision"], "denied");
    assert_eq!(refused[0]["data"]["reason"], "tool_not_admitted");
    assert_eq!(refused[0]["data"]["caller"]["client"], "caller_a");
    end(client, gateway, host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_outside_the_allow_list_is_not_found_and_recorded_while_an_allowed_one_is_read()
{
    let dir = tempfile::tempdir().unwrap();
    let host = demo_host(dir.path());
    let (client, gateway) = session(&host, "reader", None).await;

    let read = client
        .peer()
        .read_resource(ReadResourceRequestParams::new("demo://docs/welcome.txt"))
        .await
        .unwrap();
    let texts: Vec<&str> = read
        .contents
        .iter()
        .filter_map(|c| match c {
            ResourceContents::TextResourceContents { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(!texts.is_empty() && !texts[0].is_empty(), "{read:?}");

    let reads_sent = || {
        sent(&host, "demo", "resources/read").len()
            + sent(&host, "demo-2025", "resources/read").len()
    };
    let before = reads_sent();
    // Under the allowed prefix `demo://notes/` (the notes template routes them to `demo`),
    // remainders that leave it: the gate refuses them, and for the client they do not exist.
    for escaping in [
        "demo://notes/../private/diary",
        "demo://notes/%2e%2e/docs/guide.md",
    ] {
        let refused = client
            .peer()
            .read_resource(ReadResourceRequestParams::new(escaping))
            .await
            .unwrap_err();
        assert_eq!(
            rpc_code(&refused),
            RESOURCE_NOT_FOUND,
            "{escaping}: {refused}"
        );
        assert_eq!(
            code(&refused),
            "resource_uri_refused",
            "{escaping}: {refused}"
        );
        let denied = recorded(dir.path(), "resource_read", "uri", escaping);
        assert_eq!(denied.len(), 1, "{escaping}: {denied:?}");
        assert_eq!(denied[0]["data"]["decision"], "denied");
        assert_eq!(denied[0]["data"]["caller"]["client"], "reader");
    }
    // URIs no server offers (one a look-alike of the prefix): not found, never routed.
    for unoffered in ["demo://secret", "demo://notes-private/x"] {
        let refused = client
            .peer()
            .read_resource(ReadResourceRequestParams::new(unoffered))
            .await
            .unwrap_err();
        assert_eq!(
            rpc_code(&refused),
            RESOURCE_NOT_FOUND,
            "{unoffered}: {refused}"
        );
    }
    assert_eq!(reads_sent(), before, "a refused read reached a server");
    // The read the gate allowed is recorded with the client too.
    let allowed = recorded(
        dir.path(),
        "resource_read",
        "uri",
        "demo://docs/welcome.txt",
    );
    assert_eq!(allowed.len(), 1, "{allowed:?}");
    assert_eq!(allowed[0]["data"]["decision"], "allowed");
    assert_eq!(allowed[0]["data"]["caller"]["client"], "reader");
    end(client, gateway, host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_prompt_is_got_and_a_name_no_server_offers_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let host = demo_host(dir.path());
    let (client, gateway) = session(&host, "prompter", None).await;

    let prompts = client.peer().list_all_prompts().await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert!(names.contains(&"demo__summarize"), "{names:?}");
    let got = client
        .peer()
        .get_prompt(
            GetPromptRequestParams::new("demo__summarize")
                .with_arguments(arguments(json!({"topic": "gates"}))),
        )
        .await
        .unwrap();
    assert!(!got.messages.is_empty(), "{got:?}");
    let allowed = recorded(dir.path(), "prompt_get", "prompt", "summarize");
    assert_eq!(allowed.len(), 1, "{allowed:?}");
    assert_eq!(allowed[0]["data"]["decision"], "allowed");
    assert_eq!(allowed[0]["data"]["caller"]["client"], "prompter");

    // A look-alike of the offered name is not it.
    let prompts_sent = sent(&host, "demo", "prompts/get").len();
    for look_alike in ["demo__Summarize", "demo_summarize", "summarize"] {
        let refused = client
            .peer()
            .get_prompt(
                GetPromptRequestParams::new(look_alike)
                    .with_arguments(arguments(json!({"topic": "gates"}))),
            )
            .await
            .unwrap_err();
        assert_eq!(
            rpc_code(&refused),
            INVALID_PARAMS,
            "{look_alike}: {refused}"
        );
    }
    assert_eq!(sent(&host, "demo", "prompts/get").len(), prompts_sent);
    end(client, gateway, host).await;
}

#[allow(deprecated)]
async fn subscribe(client: &Client, uri: &str) -> Result<(), ServiceError> {
    client
        .peer()
        .subscribe(SubscribeRequestParams::new(uri))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_past_the_clients_share_is_refused_and_another_client_still_subscribes() {
    let dir = tempfile::tempdir().unwrap();
    let host = demo_host(dir.path());
    let (greedy, greedy_gateway) = session(&host, "greedy", Some("demo-2025")).await;
    for page in 0..MAX_SUBSCRIPTIONS_PER_CLIENT {
        subscribe(&greedy, &format!("demo://notes/page-{page}"))
            .await
            .unwrap_or_else(|e| panic!("subscription {page} within the share: {e}"));
    }
    let refused = subscribe(
        &greedy,
        &format!("demo://notes/page-{MAX_SUBSCRIPTIONS_PER_CLIENT}"),
    )
    .await
    .unwrap_err();
    assert_eq!(code(&refused), "subscription_limit", "{refused}");
    let upstream = host.live_connection("demo-2025").await.unwrap();
    assert_eq!(upstream.subscriptions().len(), MAX_SUBSCRIPTIONS_PER_CLIENT);

    // The share is the client's, not the server's: another client subscribes.
    let (other, other_gateway) = session(&host, "other", Some("demo-2025")).await;
    subscribe(&other, "demo://counter").await.unwrap();
    assert_eq!(
        upstream.subscriptions().len(),
        MAX_SUBSCRIPTIONS_PER_CLIENT + 1
    );
    other.cancel().await.unwrap();
    other_gateway.end();
    end(greedy, greedy_gateway, host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_cannot_reach_a_tool_of_another_server_or_a_look_alike_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let host = demo_host(dir.path());
    // A client given one server (`serve --server demo-2025`): its tools under their own names.
    let (client, gateway) = session(&host, "narrow", Some("demo-2025")).await;
    let echoed = call(&client, "echo", json!({"message": "mine"}))
        .await
        .unwrap();
    assert_eq!(text(&echoed), "mine");
    assert_eq!(sent(&host, "demo-2025", "tools/call").len(), 1);

    let to_demo = sent(&host, "demo", "tools/call").len();
    for name in [
        // Another server's tool, under the full gateway's name for it.
        "demo__echo",
        // Look-alikes of the offered `echo`.
        "Echo",
        "echo ",
        "echo\u{200b}",
        "\u{435}cho", // Cyrillic ie
        "demo-2025__echo",
        "../echo",
    ] {
        let refused = call(&client, name, json!({"message": "x"}))
            .await
            .unwrap_err();
        assert_eq!(rpc_code(&refused), INVALID_PARAMS, "{name:?}: {refused}");
    }
    // Nothing reached either server, and nothing was allowed in the client's name.
    assert_eq!(sent(&host, "demo", "tools/call").len(), to_demo);
    assert_eq!(sent(&host, "demo-2025", "tools/call").len(), 1);
    let allowed: Vec<Value> = kit::host::records_of(dir.path(), "tool_call")
        .into_iter()
        .filter(|r| r["data"]["decision"] == "allowed")
        .collect();
    assert_eq!(allowed.len(), 1, "{allowed:?}");
    assert_eq!(allowed[0]["data"]["name"], "demo-2025", "{}", allowed[0]);
    assert_eq!(allowed[0]["data"]["caller"]["client"], "narrow");
    end(client, gateway, host).await;
}
