//! `--require-auth`: the real binary as a protected resource, against an issuer served by the
//! test itself (OpenID Connect discovery and a JWKS, keys generated here).

mod common;

use std::{
    net::TcpListener as StdListener,
    process::{Command, Output, Stdio},
    sync::{
        Arc, Mutex, OnceLock,
        atomic::{AtomicUsize, Ordering},
        mpsc,
    },
    thread,
    time::{SystemTime, UNIX_EPOCH},
};

use aws_lc_rs::{
    encoding::{AsDer, Pkcs8V1Der},
    rand::SystemRandom,
    rsa::{KeyPair, KeySize},
    signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair},
};
use axum::{Json, Router, extract::State, routing::get};
use base64::{
    Engine,
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
};
use common::{ALL_TOOLS, BIN, HttpServer, LEGACY, SERVER_ENV, TIMEOUT, initialize_params};
use jsonwebtoken::{Algorithm, EncodingKey, Header, jwk::Jwk};
use rmcp::{
    ClientLifecycleMode, ClientServiceExt, RoleClient,
    model::{CallToolRequestParams, ClientConfig, ProtocolVersion},
    service::RunningService,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};

const ADMIN_TOOL: &str = "add";

/// A signing key and its public JWK.
struct Signer {
    kid: String,
    alg: Algorithm,
    key: EncodingKey,
    jwk: Value,
}

impl Signer {
    /// RS256, what `oidc-provider` signs access tokens with by default.
    fn rsa(kid: &str) -> Self {
        let pair = KeyPair::generate(KeySize::Rsa2048).expect("RSA key");
        let pkcs8 = AsDer::<Pkcs8V1Der>::as_der(&pair).expect("PKCS#8");
        let base64 = STANDARD.encode(pkcs8.as_ref());
        let lines: Vec<&str> = base64
            .as_bytes()
            .chunks(64)
            .map(|line| std::str::from_utf8(line).unwrap())
            .collect();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            lines.join("\n")
        );
        let key = EncodingKey::from_rsa_pem(pem.as_bytes()).expect("RSA PEM");
        Self::new(kid, Algorithm::RS256, key)
    }

    fn ec(kid: &str) -> Self {
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .expect("EC key");
        Self::new(
            kid,
            Algorithm::ES256,
            EncodingKey::from_ec_der(pkcs8.as_ref()),
        )
    }

    fn new(kid: &str, alg: Algorithm, key: EncodingKey) -> Self {
        let mut jwk = Jwk::from_encoding_key(&key, alg).expect("JWK");
        jwk.common.key_id = Some(kid.to_owned());
        let mut jwk = serde_json::to_value(jwk).unwrap();
        jwk["use"] = json!("sig");
        Self {
            kid: kid.to_owned(),
            alg,
            key,
            jwk,
        }
    }

    fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        header.typ = Some("at+jwt".into());
        jsonwebtoken::encode(&header, claims, &self.key).expect("sign")
    }
}

/// The issuer's RSA key, shared by every test in this binary.
fn issuer_key() -> &'static Signer {
    static KEY: OnceLock<Signer> = OnceLock::new();
    KEY.get_or_init(|| Signer::rsa("issuer-rsa-1"))
}

/// What the in-test issuer serves.
struct IssuerState {
    issuer: String,
    /// The `issuer` its metadata names (normally `issuer`).
    claimed_issuer: String,
    /// Serve only RFC 8414 metadata, at the path-inserted well-known URL.
    rfc8414_only: bool,
    jwks: Mutex<Vec<Value>>,
    jwks_fetches: AtomicUsize,
}

/// A tiny OpenID provider: metadata and JWKS, on its own thread and runtime so it answers
/// while a test blocks waiting for the server to start.
struct Issuer {
    url: String,
    state: Arc<IssuerState>,
}

impl Issuer {
    fn start() -> Self {
        Self::start_with(|_| {})
    }

    fn start_with(configure: impl FnOnce(&mut IssuerOptions)) -> Self {
        let mut options = IssuerOptions::default();
        configure(&mut options);
        let listener = StdListener::bind("127.0.0.1:0").expect("bind the issuer");
        listener.set_nonblocking(true).unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let url = format!("{origin}{}", options.path);
        let state = Arc::new(IssuerState {
            issuer: url.clone(),
            claimed_issuer: options.claimed_issuer.unwrap_or_else(|| url.clone()),
            rfc8414_only: options.rfc8414_only,
            jwks: Mutex::new(vec![issuer_key().jwk.clone()]),
            jwks_fetches: AtomicUsize::new(0),
        });
        let metadata_path = if options.rfc8414_only {
            format!("/.well-known/oauth-authorization-server{}", options.path)
        } else {
            format!("{}/.well-known/openid-configuration", options.path)
        };
        let router = Router::new()
            .route(&metadata_path, get(metadata))
            .route("/jwks", get(jwks))
            .with_state(state.clone());
        let (ready, started) = mpsc::channel();
        thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                ready.send(()).unwrap();
                axum::serve(listener, router).await.unwrap();
            });
        });
        started.recv().unwrap();
        Self { url, state }
    }

    fn add_key(&self, signer: &Signer) {
        self.state.jwks.lock().unwrap().push(signer.jwk.clone());
    }

    fn jwks_fetches(&self) -> usize {
        self.state.jwks_fetches.load(Ordering::SeqCst)
    }

    /// Claims the issuer would put in an access token for `resource` with `scope`.
    fn claims(&self, resource: &str, scope: &str) -> Value {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        json!({
            "iss": self.url,
            "aud": resource,
            "sub": "alice",
            "client_id": "gatehouse-test",
            "scope": scope,
            "jti": "test",
            "iat": now,
            "exp": now + 600,
        })
    }

    /// A token signed with the issuer's key.
    fn token(&self, resource: &str, scope: &str) -> String {
        issuer_key().sign(&self.claims(resource, scope))
    }
}

#[derive(Default)]
struct IssuerOptions {
    path: String,
    claimed_issuer: Option<String>,
    rfc8414_only: bool,
}

async fn metadata(State(state): State<Arc<IssuerState>>) -> Json<Value> {
    let origin = state
        .issuer
        .split('/')
        .take(3)
        .collect::<Vec<_>>()
        .join("/");
    let mut document = json!({
        "issuer": state.claimed_issuer,
        "jwks_uri": format!("{origin}/jwks"),
        "authorization_endpoint": format!("{}/auth", state.issuer),
        "token_endpoint": format!("{}/token", state.issuer),
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
    });
    if !state.rfc8414_only {
        document["subject_types_supported"] = json!(["public"]);
        document["id_token_signing_alg_values_supported"] = json!(["RS256"]);
    }
    Json(document)
}

async fn jwks(State(state): State<Arc<IssuerState>>) -> Json<Value> {
    state.jwks_fetches.fetch_add(1, Ordering::SeqCst);
    Json(json!({"keys": *state.jwks.lock().unwrap()}))
}

/// The demo server requiring tokens from `issuer`, `add` needing `mcp:admin`.
fn protected_server(issuer: &Issuer) -> HttpServer {
    HttpServer::spawn(&[
        "--require-auth",
        &issuer.url,
        "--tool-scope",
        &format!("{ADMIN_TOOL}=mcp:admin"),
    ])
}

fn resource_metadata_url(server: &HttpServer) -> String {
    format!(
        "{}/.well-known/oauth-protected-resource/mcp",
        server.origin()
    )
}

fn http() -> reqwest::Client {
    reqwest::Client::builder().timeout(TIMEOUT).build().unwrap()
}

/// A raw JSON-RPC POST to the MCP endpoint.
async fn post(
    server: &HttpServer,
    token: Option<&str>,
    body: &Value,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = http()
        .post(&server.url)
        .header("Accept", "application/json, text/event-stream")
        .json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("POST to the MCP endpoint")
}

fn challenge(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("www-authenticate")
        .unwrap_or_else(|| panic!("no WWW-Authenticate on {}", response.status()))
        .to_str()
        .unwrap()
        .to_owned()
}

fn initialize_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params(LEGACY)})
}

fn call_body(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

/// Initialize a 2025-11-25 session with `token`; returns the session id.
async fn open_session(server: &HttpServer, token: &str) -> String {
    let init = post(server, Some(token), &initialize_body(), &[]).await;
    assert_eq!(
        init.status(),
        200,
        "initialize; stderr:\n{}",
        server.stderr()
    );
    let session = init
        .headers()
        .get("mcp-session-id")
        .expect("session id")
        .to_str()
        .unwrap()
        .to_owned();
    let initialized = post(
        server,
        Some(token),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        &[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", LEGACY),
        ],
    )
    .await;
    assert_eq!(initialized.status(), 202);
    session
}

/// The JSON-RPC response in a JSON or SSE body.
async fn json_rpc(response: reqwest::Response) -> Value {
    let sse = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"));
    let text = response.text().await.unwrap();
    if sse {
        common::sse_messages(&text).pop().expect("an SSE message")
    } else {
        serde_json::from_str(&text).expect("JSON body")
    }
}

fn rmcp_transport(url: &str, token: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(token),
    )
}

async fn rmcp_connect(url: &str, token: &str) -> RunningService<RoleClient, ClientConfig> {
    let mode = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    };
    tokio::time::timeout(
        TIMEOUT,
        ClientConfig::default().serve_with_lifecycle(rmcp_transport(url, token), mode),
    )
    .await
    .expect("connecting timed out")
    .expect("rmcp client connects with a good token")
}

fn args(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[tokio::test]
async fn serves_protected_resource_metadata_without_a_token() {
    let issuer = Issuer::start();
    let server = protected_server(&issuer);
    assert!(
        server
            .listening_line
            .starts_with("listening on http://127.0.0.1:"),
        "{}",
        server.listening_line
    );
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let response = http()
            .get(format!("{}{path}", server.origin()))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json")
        );
        let document: Value = response.json().await.unwrap();
        assert_eq!(
            document,
            json!({
                "resource": server.url,
                "authorization_servers": [issuer.url],
                "scopes_supported": ["mcp:tools", "mcp:admin"],
                "bearer_methods_supported": ["header"],
                "resource_name": "Gatehouse demo server",
            }),
            "{path}"
        );
    }
    // The attestation is still served, without a token too.
    let attestation = http()
        .get(format!("{}/.well-known/mcp-attestation", server.origin()))
        .send()
        .await
        .unwrap();
    assert_eq!(attestation.status(), 200);
}

#[tokio::test]
async fn requests_without_a_good_token_get_401_with_the_challenge() {
    let issuer = Issuer::start();
    let server = protected_server(&issuer);
    let metadata = resource_metadata_url(&server);

    let response = post(&server, None, &initialize_body(), &[]).await;
    assert_eq!(response.status(), 401);
    assert_eq!(
        challenge(&response),
        format!("Bearer resource_metadata=\"{metadata}\", scope=\"mcp:tools\"")
    );
    let body: Value = response.json().await.unwrap();
    assert!(body["error"].as_str().unwrap().contains("no bearer token"));

    for (method, expected) in [("GET", 401), ("DELETE", 401)] {
        let response = http()
            .request(method.parse().unwrap(), &server.url)
            .header("Accept", "text/event-stream")
            .header("Mcp-Session-Id", "whatever")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), expected, "{method}");
        assert!(challenge(&response).starts_with("Bearer resource_metadata="));
    }

    let invalid = format!(
        "Bearer error=\"invalid_token\", resource_metadata=\"{metadata}\", scope=\"mcp:tools\""
    );
    let stranger = Signer::ec("not-the-issuers");
    let wrong_key_type = Signer::ec(&issuer_key().kid);
    let cases = [
        ("garbage", "not.a.jwt".to_owned()),
        (
            "wrong audience",
            issuer.token("http://127.0.0.1:1/mcp", "mcp:tools"),
        ),
        ("another issuer", {
            let mut claims = issuer.claims(&server.url, "mcp:tools");
            claims["iss"] = json!("http://127.0.0.1:1");
            issuer_key().sign(&claims)
        }),
        ("expired", {
            let mut claims = issuer.claims(&server.url, "mcp:tools");
            claims["exp"] = json!(1_000_000_000);
            issuer_key().sign(&claims)
        }),
        (
            "unknown key",
            stranger.sign(&issuer.claims(&server.url, "mcp:tools")),
        ),
        (
            "another key under the issuer's kid",
            wrong_key_type.sign(&issuer.claims(&server.url, "mcp:tools")),
        ),
        ("claims altered after signing", {
            let token = issuer.token("http://127.0.0.1:1/mcp", "mcp:tools");
            let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
            let claims = issuer.claims(&server.url, "mcp:tools mcp:admin");
            parts[1] = URL_SAFE_NO_PAD.encode(claims.to_string());
            parts.join(".")
        }),
    ];
    for (case, token) in cases {
        let response = post(&server, Some(&token), &initialize_body(), &[]).await;
        assert_eq!(response.status(), 401, "{case}");
        assert_eq!(challenge(&response), invalid, "{case}");
        let body: Value = response.json().await.unwrap();
        assert!(
            body["error"].as_str().unwrap().starts_with("invalid token"),
            "{case}: {body}"
        );
    }
    // The token itself never reaches the logs.
    let secret_token = issuer.token("http://127.0.0.1:1/mcp", "mcp:tools");
    post(&server, Some(&secret_token), &initialize_body(), &[]).await;
    assert!(!server.stderr().contains(&secret_token));

    // A token without the base scope is good but not enough.
    let response = post(
        &server,
        Some(&issuer.token(&server.url, "openid")),
        &initialize_body(),
        &[],
    )
    .await;
    assert_eq!(response.status(), 403);
    assert_eq!(
        challenge(&response),
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"mcp:tools\", resource_metadata=\"{metadata}\""
        )
    );
}

#[tokio::test]
async fn the_rmcp_client_works_with_a_good_token() {
    let issuer = Issuer::start();
    let server = protected_server(&issuer);

    let client = rmcp_connect(&server.url, &issuer.token(&server.url, "mcp:tools")).await;
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|tool| tool.name.into_owned())
        .collect();
    assert_eq!(names, ALL_TOOLS);
    let echo = client
        .call_tool(
            CallToolRequestParams::new("echo").with_arguments(args(json!({"message": "hi"}))),
        )
        .await
        .expect("tools/call echo");
    assert_eq!(echo.content[0].as_text().expect("text").text, "hi");
    let refused = client
        .call_tool(
            CallToolRequestParams::new(ADMIN_TOOL).with_arguments(args(json!({"a": 1, "b": 2}))),
        )
        .await
        .expect_err("add needs mcp:admin");
    assert!(
        format!("{refused:?}").contains("insufficient_scope"),
        "{refused:?}"
    );
    let _ = tokio::time::timeout(TIMEOUT, client.cancel()).await;

    let admin = rmcp_connect(
        &server.url,
        &issuer.token(&server.url, "mcp:tools mcp:admin"),
    )
    .await;
    let sum = admin
        .call_tool(
            CallToolRequestParams::new(ADMIN_TOOL).with_arguments(args(json!({"a": 40, "b": 2}))),
        )
        .await
        .expect("tools/call add with mcp:admin");
    assert_eq!(sum.content[0].as_text().expect("text").text, "42");
    let _ = tokio::time::timeout(TIMEOUT, admin.cancel()).await;
}

#[tokio::test]
async fn a_tool_scope_is_enforced_with_a_step_up_challenge() {
    let issuer = Issuer::start();
    let server = protected_server(&issuer);
    let metadata = resource_metadata_url(&server);
    let token = issuer.token(&server.url, "openid mcp:tools");
    let session = open_session(&server, &token).await;
    let in_session = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", LEGACY),
    ];

    let echo = post(
        &server,
        Some(&token),
        &call_body(2, "echo", json!({"message": "ok"})),
        &in_session,
    )
    .await;
    assert_eq!(echo.status(), 200);
    assert_eq!(json_rpc(echo).await["result"]["content"][0]["text"], "ok");

    let expected = format!(
        "Bearer error=\"insufficient_scope\", scope=\"mcp:tools mcp:admin\", \
         resource_metadata=\"{metadata}\""
    );
    let add = post(
        &server,
        Some(&token),
        &call_body(3, ADMIN_TOOL, json!({"a": 2, "b": 3})),
        &in_session,
    )
    .await;
    assert_eq!(add.status(), 403);
    assert_eq!(challenge(&add), expected);
    let body: Value = add.json().await.unwrap();
    assert!(
        body["error"].as_str().unwrap().contains("mcp:admin"),
        "{body}"
    );

    // Hidden in a batch, it is found all the same.
    let batch = json!([
        call_body(4, "echo", json!({"message": "a"})),
        call_body(5, ADMIN_TOOL, json!({"a": 1, "b": 1})),
    ]);
    let response = post(&server, Some(&token), &batch, &in_session).await;
    assert_eq!(response.status(), 403);
    assert_eq!(challenge(&response), expected);

    // A body that is not JSON passes to rmcp, which refuses it as before.
    let response = http()
        .post(&server.url)
        .bearer_auth(&token)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .header("Mcp-Session-Id", &session)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert!(response.status().is_client_error(), "{}", response.status());
    assert!(response.headers().get("www-authenticate").is_none());

    // With the scope, in a fresh session, the call succeeds.
    let admin = issuer.token(&server.url, "mcp:tools mcp:admin");
    let session = open_session(&server, &admin).await;
    let add = post(
        &server,
        Some(&admin),
        &call_body(2, ADMIN_TOOL, json!({"a": 2, "b": 3})),
        &[
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", LEGACY),
        ],
    )
    .await;
    assert_eq!(add.status(), 200);
    assert_eq!(json_rpc(add).await["result"]["content"][0]["text"], "5");
}

#[tokio::test]
async fn an_unknown_key_fetches_the_jwks_again_at_most_once_per_interval() {
    let issuer = Issuer::start();
    let server = protected_server(&issuer);
    assert_eq!(issuer.jwks_fetches(), 1, "fetched once at startup");

    // The issuer rotates in a new key: the first token naming it triggers one fetch.
    let rotated = Signer::ec("rotated-1");
    issuer.add_key(&rotated);
    let token = rotated.sign(&issuer.claims(&server.url, "mcp:tools"));
    let response = post(&server, Some(&token), &initialize_body(), &[]).await;
    assert_eq!(response.status(), 200, "stderr:\n{}", server.stderr());
    assert_eq!(issuer.jwks_fetches(), 2);

    // Another new key right after: no fetch for 30 s, so it is refused.
    let again = Signer::ec("rotated-2");
    issuer.add_key(&again);
    let token = again.sign(&issuer.claims(&server.url, "mcp:tools"));
    for _ in 0..3 {
        let response = post(&server, Some(&token), &initialize_body(), &[]).await;
        assert_eq!(response.status(), 401);
    }
    let stranger = Signer::ec("never-published");
    let token = stranger.sign(&issuer.claims(&server.url, "mcp:tools"));
    assert_eq!(
        post(&server, Some(&token), &initialize_body(), &[])
            .await
            .status(),
        401
    );
    assert_eq!(issuer.jwks_fetches(), 2, "bounded re-fetching");
}

#[tokio::test]
async fn an_issuer_with_a_path_is_found_the_rfc_8414_way() {
    let issuer = Issuer::start_with(|options| {
        options.path = "/tenant/a".into();
        options.rfc8414_only = true;
    });
    let server = HttpServer::spawn(&["--require-auth", &issuer.url]);
    let response = post(
        &server,
        Some(&issuer.token(&server.url, "mcp:tools")),
        &initialize_body(),
        &[],
    )
    .await;
    assert_eq!(response.status(), 200, "stderr:\n{}", server.stderr());
    let document: Value = http()
        .get(resource_metadata_url(&server))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(document["scopes_supported"], json!(["mcp:tools"]));
    assert_eq!(document["authorization_servers"], json!([issuer.url]));
}

#[tokio::test]
async fn the_legacy_era_and_another_base_scope_are_protected_too() {
    let issuer = Issuer::start();
    let server = HttpServer::spawn(&[
        "--era",
        LEGACY,
        "--require-auth",
        &issuer.url,
        "--base-scope",
        "mcp:read",
    ]);
    let metadata = resource_metadata_url(&server);
    let document: Value = http()
        .get(&metadata)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(document["scopes_supported"], json!(["mcp:read"]));

    // The legacy era's discover gate answers nothing before the token is checked.
    let discover = json!({"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": {}});
    let response = post(&server, None, &discover, &[]).await;
    assert_eq!(response.status(), 401);
    assert_eq!(
        challenge(&response),
        format!("Bearer resource_metadata=\"{metadata}\", scope=\"mcp:read\"")
    );
    let token = issuer.token(&server.url, "mcp:read");
    let response = post(&server, Some(&token), &discover, &[]).await;
    assert_eq!(response.status(), 400);
    assert_eq!(json_rpc(response).await["error"]["code"], -32601);

    // `mcp:tools` is not the base scope here.
    let response = post(
        &server,
        Some(&issuer.token(&server.url, "mcp:tools")),
        &initialize_body(),
        &[],
    )
    .await;
    assert_eq!(response.status(), 403);
    let session = open_session(&server, &token).await;
    assert!(!session.is_empty());
}

fn run(args: &[&str]) -> Output {
    let mut command = Command::new(BIN);
    command.args(args);
    for key in SERVER_ENV {
        command.env_remove(key);
    }
    command
        .stdin(Stdio::null())
        .output()
        .expect("run gatehouse-demo-server")
}

#[test]
fn startup_fails_when_the_issuer_is_unusable() {
    // Nothing listens on a port just released.
    let port = StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let output = run(&[
        "--http",
        "127.0.0.1:0",
        "--require-auth",
        &format!("http://127.0.0.1:{port}"),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty(), "nothing may be announced");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot reach the issuer"), "{stderr}");

    // Metadata naming another issuer is not this issuer's.
    let issuer = Issuer::start_with(|options| {
        options.claimed_issuer = Some("http://127.0.0.1:1".into());
    });
    let output = run(&["--http", "127.0.0.1:0", "--require-auth", &issuer.url]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("names the issuer"), "{stderr}");
}

#[test]
fn bad_auth_options_are_usage_errors() {
    let cases: [&[&str]; 6] = [
        &[
            "--http",
            "127.0.0.1:0",
            "--require-auth",
            "ftp://issuer.example",
        ],
        &["--http", "127.0.0.1:0", "--require-auth", "issuer.example"],
        &["--require-auth", "http://127.0.0.1:9"],
        &["--http", "127.0.0.1:0", "--tool-scope", "add=mcp:admin"],
        &[
            "--http",
            "127.0.0.1:0",
            "--require-auth",
            "http://127.0.0.1:9",
            "--tool-scope",
            "no_such_tool=mcp:admin",
        ],
        &[
            "--http",
            "127.0.0.1:0",
            "--conformance",
            "--require-auth",
            "http://127.0.0.1:9",
        ],
    ];
    for args in cases {
        let output = run(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
        assert!(!output.stderr.is_empty(), "{args:?}");
    }
    let output = run(&[
        "--http",
        "127.0.0.1:0",
        "--require-auth",
        "http://127.0.0.1:9",
        "--tool-scope",
        "add=bad scope",
    ]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn help_describes_the_mode() {
    let output = run(&["--help"]);
    let help = String::from_utf8_lossy(&output.stdout);
    for flag in [
        "--require-auth <ISSUER>",
        "--tool-scope <NAME=SCOPE>",
        "--base-scope",
    ] {
        assert!(help.contains(flag), "{flag}: {help}");
    }
}
