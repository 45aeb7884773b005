//! OAuth tokens never reach the traffic record or what a server's answer is passed on to,
//! even when the server (or a proxy in front of it) echoes them: the attack is a server that
//! puts the `Authorization` header it received into a tool result, and a tool that echoes
//! its argument, given the tokens themselves.
//!
//! The mock is the test kit's authorization server (`oauth::Mock`, issuing unique tokens) with an
//! MCP server of this file's on its loopback origin (as in
//! oauth.rs), the MCP side answering JSON-RPC only with a token the authorization server
//! issued. The connection signs in through the host's real sign-in path (discovery,
//! registration, consent, browser, redirect, code exchange, keychain), the first access token
//! expires at once so the first request refreshes it, and a second connection uses the stored
//! sign-in: the three ways a token reaches the host.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use gatehouse_host::auth::SignInUi;
use gatehouse_host::config::HttpSpec;
use gatehouse_host::secrets::{MemoryStore, SecretStore};
use gatehouse_host::tap::system_clock;
use gatehouse_host::{
    CallOptions, ConnectOptions, Connection, Era, EraPreference, Gatekeeper, ServerSpec, TrafficTap,
};
use gatehouse_testkit as kit;
use kit::oauth::{Approve, Browser, Mock, Mode};
use serde_json::{Value, json};

const SERVER: &str = "echo-proxy";

/// The MCP server: JSON-RPC over POST with JSON answers, and an `echo` tool that returns its
/// argument and, like a debugging proxy, the Authorization header the request carried.
async fn mcp(State(mock): State<Mock>, headers: HeaderMap, body: Bytes) -> Response {
    let (accepted, authorization) = kit::oauth::bearer(&mock, &headers);
    if !accepted {
        return mock.challenge();
    }
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let Some(id) = message.get("id").cloned() else {
        // A notification.
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match message["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": SERVER, "version": "1.0.0"},
        }),
        "tools/list" => json!({"tools": [{
            "name": "echo",
            "description": "Echoes its text, and the request's Authorization header",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        }]}),
        "tools/call" => {
            let text = message["params"]["arguments"]["text"]
                .as_str()
                .unwrap_or_default();
            json!({"content": [{
                "type": "text",
                "text": format!("you said: {text}; your request carried Authorization: {authorization}"),
            }]})
        }
        "ping" => json!({}),
        other => {
            return axum::Json(json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": format!("no method {other}")}}))
            .into_response();
        }
    };
    (
        [("mcp-session-id", "echo-session")],
        axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})),
    )
        .into_response()
}

/// The mock authorization server issuing unique tokens, with the echoing MCP server above at
/// `/mcp` on the same origin.
async fn start() -> Mock {
    Mock::start_with_mcp(
        Mode::Issuing,
        post(mcp)
            .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
            .delete(|| async { StatusCode::OK }),
    )
    .await
}

fn options(sign_in: bool) -> ConnectOptions {
    ConnectOptions {
        era: EraPreference::Only(Era::V2025_11_25),
        connect_timeout: Duration::from_secs(30),
        request_timeout: Duration::from_secs(30),
        sign_in: sign_in.then(|| Arc::new(Approve::default()) as Arc<dyn SignInUi>),
        opener: Arc::new(Browser::default()),
        sign_in_timeout: Duration::from_secs(30),
        ..ConnectOptions::default()
    }
}

/// Connects (signing in when `sign_in`), calls `echo` with `text`, and returns what the caller
/// got: the tool result as JSON.
async fn echo(
    mock: &Mock,
    secrets: &Arc<dyn SecretStore>,
    tap: &Arc<TrafficTap>,
    gatekeeper: &Arc<Gatekeeper>,
    sign_in: bool,
    text: &str,
) -> Value {
    let spec = ServerSpec::Http(HttpSpec {
        url: url::Url::parse(&format!("{}/mcp", mock.base)).unwrap(),
        headers: Vec::new(),
        bearer_token_secret: None,
        oauth: Default::default(),
    });
    let connection = Connection::connect(
        SERVER,
        &spec,
        secrets.clone(),
        tap.clone(),
        tokio::sync::broadcast::channel(64).0,
        &options(sign_in),
        gatekeeper.clone(),
    )
    .await
    .unwrap_or_else(|e| panic!("connecting: {e}"));
    connection.approve_tools(&[]).await.unwrap();
    let arguments = json!({"text": text}).as_object().cloned();
    let outcome = connection
        .call_tool("echo", arguments, &CallOptions::default())
        .await
        .unwrap_or_else(|e| panic!("calling echo: {e}"));
    let result = serde_json::to_value(&outcome.result).unwrap();
    connection.close().await;
    result
}

/// No token anywhere in `text`, and the redaction marker of this server's tokens instead.
fn assert_redacted(what: &str, text: &str, tokens: &[String]) {
    for token in tokens {
        assert!(
            !text.contains(token.as_str()),
            "{what} holds {token}: {text}"
        );
    }
    assert!(
        text.contains(&format!("[secret:oauth:{SERVER}:")),
        "{what} has no redaction marker: {text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn oauth_tokens_a_server_echoes_are_redacted_from_traffic_and_results() {
    let mock = start().await;
    let rig = kit::rig::Rig::warn();
    let gatekeeper = rig.gatekeeper.clone();
    let secrets: Arc<dyn SecretStore> = Arc::new(MemoryStore::default());
    let log = rig.state.path().join("traffic.jsonl");
    let tap = Arc::new(
        TrafficTap::new(1000, system_clock())
            .with_jsonl_file(&log)
            .unwrap(),
    );

    // Signs in (code exchange: access, refresh and id token), refreshes at the first request
    // (a new access and refresh token), then echoes every one of them back.
    let first = echo(&mock, &secrets, &tap, &gatekeeper, true, "nothing yet").await;
    let issued = mock.issued();
    assert_eq!(issued.len(), 5, "a sign-in and a refresh: {issued:?}");
    let header_token = issued[3].clone();
    assert!(header_token.starts_with("access-"), "{issued:?}");
    assert_redacted("the first result", &first.to_string(), &issued);
    let all = issued.join(" ");
    let echoed = echo(&mock, &secrets, &tap, &gatekeeper, false, &all).await;
    assert_redacted("the result passed on", &echoed.to_string(), &issued);

    let traffic = serde_json::to_string(&tap.entries(None)).unwrap();
    assert_redacted("the traffic view", &traffic, &issued);
    let file = std::fs::read_to_string(&log).unwrap();
    assert_redacted("the traffic log", &file, &issued);
    // Each kind of token was named: the refreshed access token the server echoed from the
    // header, and the exchanged ones (id token included) the tool echoed from its argument.
    for kind in ["access_token", "refresh_token", "id_token"] {
        assert!(
            file.contains(&format!("[secret:oauth:{SERVER}:{kind}]")),
            "{kind}: {file}"
        );
    }

    // A new host process: a fresh tap that has seen no sign-in and no refresh, and a
    // connection that uses the stored sign-in (no one could be asked to sign in again).
    let fresh = Arc::new(TrafficTap::new(1000, system_clock()));
    let stored = gatehouse_host::auth::status(secrets.as_ref(), SERVER)
        .unwrap()
        .expect("the sign-in is stored");
    let stored_json = serde_json::to_string(&stored.credentials).unwrap();
    assert!(stored_json.contains(header_token.as_str()));
    let again = echo(&mock, &secrets, &fresh, &gatekeeper, false, &all).await;
    assert_eq!(
        mock.issued().len(),
        5,
        "the stored token was used, not a new sign-in or refresh"
    );
    // The tokens the keychain held are redacted; the older ones it no longer holds were never
    // loaded into this tap (the server got them from the argument and echoed them back).
    let loaded: Vec<String> = issued
        .iter()
        .filter(|t| stored_json.contains(t.as_str()))
        .cloned()
        .collect();
    assert_eq!(loaded.len(), 2, "{loaded:?}");
    assert_redacted("the result after loading", &again.to_string(), &loaded);
    let traffic = serde_json::to_string(&fresh.entries(None)).unwrap();
    assert_redacted("the traffic view after loading", &traffic, &loaded);
}
