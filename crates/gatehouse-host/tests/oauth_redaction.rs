//! OAuth tokens never reach the traffic record or what a server's answer is passed on to,
//! even when the server (or a proxy in front of it) echoes them: the attack is a server that
//! puts the `Authorization` header it received into a tool result, and a tool that echoes
//! its argument, given the tokens themselves.
//!
//! The mock here is an authorization server and an MCP server on one loopback origin (as in
//! oauth.rs), the MCP side answering JSON-RPC only with a token the authorization server
//! issued. The connection signs in through the host's real sign-in path (discovery,
//! registration, consent, browser, redirect, code exchange, keychain), the first access token
//! expires at once so the first request refreshes it, and a second connection uses the stored
//! sign-in: the three ways a token reaches the host.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use gatehouse_attest::bundle::Posture;
use gatehouse_host::auth::{SignInAnswer, SignInCode, SignInRequest, SignInUi, UiFuture};
use gatehouse_host::config::HttpSpec;
use gatehouse_host::consent::UrlOpener;
use gatehouse_host::secrets::{MemoryStore, SecretStore};
use gatehouse_host::tap::system_clock;
use gatehouse_host::{
    Approvals, Auditor, CallOptions, ConnectOptions, Connection, Era, EraPreference, Gatekeeper,
    ServerSpec, TrafficTap, Trust, TrustSettings,
};
use serde_json::{Value, json};
use time::OffsetDateTime;

const SERVER: &str = "echo-proxy";

#[derive(Clone)]
struct Mock {
    base: String,
    /// Every token the authorization server issued, in order.
    issued: Arc<Mutex<Vec<String>>>,
    /// Access tokens the MCP side accepts.
    valid: Arc<Mutex<Vec<String>>>,
}

impl Mock {
    /// A token that looks like one and is unique to this mock.
    fn issue(&self, kind: &str) -> String {
        let mut issued = self.issued.lock().unwrap();
        let port = self.base.rsplit(':').next().unwrap_or_default();
        let token = format!("{kind}-{}-{port}-Zq8xW3vR7tKp2LmN5yHc", issued.len() + 1);
        issued.push(token.clone());
        token
    }
}

fn challenge(mock: &Mock) -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(
            header::WWW_AUTHENTICATE,
            format!(
                "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
                mock.base
            ),
        )],
    )
        .into_response()
}

/// The MCP server: JSON-RPC over POST with JSON answers, and an `echo` tool that returns its
/// argument and, like a debugging proxy, the Authorization header the request carried.
async fn mcp(State(mock): State<Mock>, headers: HeaderMap, body: Bytes) -> Response {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let token = authorization.strip_prefix("Bearer ").unwrap_or_default();
    if !mock.valid.lock().unwrap().iter().any(|t| t == token) {
        return challenge(&mock);
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

async fn resource_metadata(State(mock): State<Mock>) -> Response {
    axum::Json(json!({
        "resource": format!("{}/mcp", mock.base),
        "authorization_servers": [mock.base],
    }))
    .into_response()
}

async fn server_metadata(State(mock): State<Mock>) -> Response {
    axum::Json(json!({
        "issuer": mock.base,
        "authorization_endpoint": format!("{}/authorize", mock.base),
        "token_endpoint": format!("{}/token", mock.base),
        "registration_endpoint": format!("{}/register", mock.base),
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
    }))
    .into_response()
}

async fn register(axum::Json(body): axum::Json<Value>) -> Response {
    (
        StatusCode::CREATED,
        axum::Json(json!({"client_id": "echo-client", "redirect_uris": body["redirect_uris"]})),
    )
        .into_response()
}

async fn authorize(
    State(mock): State<Mock>,
    Query(query): Query<std::collections::HashMap<String, String>>,
) -> Response {
    let redirect = format!(
        "{}?code=echo-code&state={}&iss={}",
        query["redirect_uri"],
        query["state"],
        url::form_urlencoded::byte_serialize(mock.base.as_bytes()).collect::<String>()
    );
    (StatusCode::FOUND, [(header::LOCATION, redirect)]).into_response()
}

/// The code exchange gives an access token that expires within rmcp's refresh margin (so the
/// first request refreshes it), a refresh token and an id token; a refresh gives new ones.
async fn token(
    State(mock): State<Mock>,
    axum::Form(form): axum::Form<std::collections::HashMap<String, String>>,
) -> Response {
    let access = mock.issue("access");
    let refresh = mock.issue("refresh");
    mock.valid.lock().unwrap().push(access.clone());
    let body = if form.get("grant_type").map(String::as_str) == Some("refresh_token") {
        json!({"access_token": access, "token_type": "Bearer", "expires_in": 3600,
               "refresh_token": refresh})
    } else {
        json!({"access_token": access, "token_type": "Bearer", "expires_in": 5,
               "refresh_token": refresh, "id_token": mock.issue("id")})
    };
    axum::Json(body).into_response()
}

async fn start() -> Mock {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mock = Mock {
        base: format!("http://{}", listener.local_addr().unwrap()),
        issued: Default::default(),
        valid: Default::default(),
    };
    let app = Router::new()
        .route(
            "/mcp",
            post(mcp)
                .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
                .delete(|| async { StatusCode::OK }),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(server_metadata),
        )
        .route("/register", post(register))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .with_state(mock.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    mock
}

/// Approves every sign-in.
struct Approve;

impl SignInUi for Approve {
    fn approve<'a>(&'a self, _: &'a SignInRequest) -> UiFuture<'a, SignInAnswer> {
        Box::pin(async { SignInAnswer::Open })
    }
    fn waiting<'a>(&'a self, _: &'a SignInRequest) -> UiFuture<'a, ()> {
        Box::pin(std::future::pending())
    }
    fn finished(&self, _: &SignInRequest, _: Option<SignInCode>) {}
}

/// Follows the authorization server's redirect to the loopback listener, as a person's
/// browser would.
struct Browser;

impl UrlOpener for Browser {
    fn open(&self, url: &str) -> Result<(), String> {
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        let url = url.to_string();
        tokio::runtime::Handle::current().block_on(async move {
            let client = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap();
            let response = client.get(&url).send().await.map_err(|e| e.to_string())?;
            let location = response.headers()[reqwest::header::LOCATION]
                .to_str()
                .unwrap()
                .to_string();
            client
                .get(location)
                .send()
                .await
                .map_err(|e| e.to_string())?;
            Ok(())
        })
    }
}

fn gatekeeper(state: &std::path::Path) -> Arc<Gatekeeper> {
    let trust_roots = state.join("trust-roots");
    std::fs::create_dir_all(&trust_roots).unwrap();
    let trust = Trust::load(
        &TrustSettings {
            system_dir: trust_roots,
            user_dir: None,
            posture_override: Some(Posture::Warn),
            demo_bundle: None,
        },
        OffsetDateTime::now_utc(),
    );
    let (auditor, _) = Auditor::open(&state.join("audit.jsonl"), system_clock()).unwrap();
    Arc::new(Gatekeeper::new(
        trust,
        auditor,
        Approvals::in_memory(),
        system_clock(),
    ))
}

fn options(sign_in: bool) -> ConnectOptions {
    ConnectOptions {
        era: EraPreference::Only(Era::V2025_11_25),
        connect_timeout: Duration::from_secs(30),
        request_timeout: Duration::from_secs(30),
        sign_in: sign_in.then(|| Arc::new(Approve) as Arc<dyn SignInUi>),
        opener: Arc::new(Browser),
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
    let state = tempfile::tempdir().unwrap();
    let gatekeeper = gatekeeper(state.path());
    let secrets: Arc<dyn SecretStore> = Arc::new(MemoryStore::default());
    let log = state.path().join("traffic.jsonl");
    let tap = Arc::new(
        TrafficTap::new(1000, system_clock())
            .with_jsonl_file(&log)
            .unwrap(),
    );

    // Signs in (code exchange: access, refresh and id token), refreshes at the first request
    // (a new access and refresh token), then echoes every one of them back.
    let first = echo(&mock, &secrets, &tap, &gatekeeper, true, "nothing yet").await;
    let issued = mock.issued.lock().unwrap().clone();
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
        mock.issued.lock().unwrap().len(),
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
