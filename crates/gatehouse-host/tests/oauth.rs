//! Sign-in against authorization servers that misbehave: each failure is a clear error with
//! its code, nothing is stored in the keychain, the browser never opens before the checks
//! pass, and every refusal is audited. The mock here stands in for a hostile server; the
//! real sign-in (a real OpenID provider) is tested in gatehouse-cli/tests/oauth.rs, and the
//! protocol's own checks in the conformance suite's authorization scenarios.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use gatehouse_attest::bundle::Posture;
use gatehouse_host::admission::{Trust, TrustSettings};
use gatehouse_host::audit_event::session::{
    OauthRefreshed, OauthSignInFailed, OauthSignedIn, SignInFailure,
};
use gatehouse_host::auth::{
    SignInAnswer, SignInCode, SignInContext, SignInReason, SignInRequest, SignInUi, UiFuture,
};
use gatehouse_host::consent::UrlOpener;
use gatehouse_host::secrets::{MemoryStore, SecretStore};
use gatehouse_host::tap::system_clock;
use gatehouse_host::{Approvals, Auditor, Gatekeeper, HostError};
use serde_json::{Value, json};
use time::OffsetDateTime;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// The resource metadata names an authorization server at a link-local address.
    LinkLocalAuthorizationServer,
    /// The authorization server does not advertise PKCE.
    NoPkce,
    /// The token endpoint answers something that is not a token response.
    GarbageToken,
    /// The authorization server's metadata never arrives.
    Hanging,
    /// The authorization endpoint is plain http on a public host.
    InsecureAuthorizationEndpoint,
    /// The authorization endpoint is on the user's network (a router's admin page), not at
    /// the MCP server's own address.
    LocalNetworkAuthorizationEndpoint,
    /// Everything is in order (used with an issuer pin that excludes it).
    Good,
    /// Tokens that expire at once, and a refresh token the server then rejects.
    RefreshRejected,
}

#[derive(Clone)]
struct Mock {
    mode: Mode,
    base: String,
}

async fn mcp(State(mock): State<Mock>) -> Response {
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

async fn resource_metadata(State(mock): State<Mock>) -> Response {
    let authorization_server = match mock.mode {
        Mode::LinkLocalAuthorizationServer => "http://169.254.169.254".to_string(),
        _ => mock.base.clone(),
    };
    axum::Json(json!({
        "resource": format!("{}/mcp", mock.base),
        "authorization_servers": [authorization_server],
    }))
    .into_response()
}

async fn server_metadata(State(mock): State<Mock>) -> Response {
    if mock.mode == Mode::Hanging {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
    let mut metadata = json!({
        "issuer": mock.base,
        "authorization_endpoint": match mock.mode {
            Mode::InsecureAuthorizationEndpoint => "http://login.example.com/authorize".to_string(),
            Mode::LocalNetworkAuthorizationEndpoint => {
                "https://192.168.1.1/cgi-bin/luci/admin/system/reboot".to_string()
            }
            _ => format!("{}/authorize", mock.base),
        },
        "token_endpoint": format!("{}/token", mock.base),
        "registration_endpoint": format!("{}/register", mock.base),
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
    });
    if mock.mode == Mode::NoPkce {
        metadata
            .as_object_mut()
            .unwrap()
            .remove("code_challenge_methods_supported");
    }
    axum::Json(metadata).into_response()
}

async fn register(axum::Json(body): axum::Json<Value>) -> Response {
    (
        StatusCode::CREATED,
        axum::Json(json!({"client_id": "mock-client", "redirect_uris": body["redirect_uris"]})),
    )
        .into_response()
}

async fn authorize(
    State(mock): State<Mock>,
    Query(query): Query<std::collections::HashMap<String, String>>,
) -> Response {
    let redirect = format!(
        "{}?code=mock-code&state={}&iss={}",
        query["redirect_uri"],
        query["state"],
        url::form_urlencoded::byte_serialize(mock.base.as_bytes()).collect::<String>()
    );
    let mut headers = HeaderMap::new();
    headers.insert(header::LOCATION, redirect.parse().unwrap());
    (StatusCode::FOUND, headers).into_response()
}

async fn token(
    State(mock): State<Mock>,
    axum::Form(form): axum::Form<std::collections::HashMap<String, String>>,
) -> Response {
    match (mock.mode, form.get("grant_type").map(String::as_str)) {
        (Mode::GarbageToken, _) => (StatusCode::OK, "this is not a token response").into_response(),
        (Mode::RefreshRejected, Some("refresh_token")) => (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant", "error_description": "expired"})),
        )
            .into_response(),
        (Mode::RefreshRejected, _) => axum::Json(json!({
            "access_token": "t1", "token_type": "Bearer", "expires_in": 1, "refresh_token": "r1"
        }))
        .into_response(),
        _ => axum::Json(json!({"access_token": "t", "token_type": "Bearer"})).into_response(),
    }
}

async fn start(mode: Mode) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mock = Mock {
        mode,
        base: base.clone(),
    };
    let app = Router::new()
        .route("/mcp", get(mcp).post(mcp))
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
        .with_state(mock);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

/// Approves every sign-in and records that it was asked.
#[derive(Default)]
struct Approve {
    asked: Mutex<Vec<String>>,
}

impl SignInUi for Approve {
    fn approve<'a>(&'a self, request: &'a SignInRequest) -> UiFuture<'a, SignInAnswer> {
        self.asked.lock().unwrap().push(request.url.clone());
        Box::pin(async { SignInAnswer::Open })
    }
    fn waiting<'a>(&'a self, _: &'a SignInRequest) -> UiFuture<'a, ()> {
        Box::pin(std::future::pending())
    }
    fn finished(&self, _: &SignInRequest, _: Option<SignInCode>) {}
}

/// A browser that records what it was given and follows the authorization server's redirect
/// to the loopback listener, as a person's browser would.
#[derive(Default)]
struct Browser {
    opened: Mutex<Vec<String>>,
}

impl UrlOpener for Browser {
    fn open(&self, url: &str) -> Result<(), String> {
        self.opened.lock().unwrap().push(url.to_string());
        if !url.starts_with("http://127.0.0.1:") {
            // Never anything but the mock, whatever a test's server asks for.
            return Err(format!("the test browser does not go to {url}"));
        }
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

struct Case {
    context: SignInContext,
    ui: Arc<Approve>,
    browser: Arc<Browser>,
    secrets: Arc<dyn SecretStore>,
    state: tempfile::TempDir,
}

fn setup(base: &str, allowed_issuers: &[&str]) -> Case {
    let state = tempfile::tempdir().unwrap();
    let trust_roots = state.path().join("trust-roots");
    std::fs::create_dir(&trust_roots).unwrap();
    let trust = Trust::load(
        &TrustSettings {
            system_dir: trust_roots,
            user_dir: None,
            posture_override: Some(Posture::Warn),
            demo_bundle: None,
        },
        OffsetDateTime::now_utc(),
    );
    let (auditor, _) = Auditor::open(&state.path().join("audit.jsonl"), system_clock()).unwrap();
    let gatekeeper = Arc::new(Gatekeeper::new(
        trust,
        auditor,
        Approvals::in_memory(),
        system_clock(),
    ));
    let ui = Arc::new(Approve::default());
    let browser = Arc::new(Browser::default());
    let secrets: Arc<dyn SecretStore> = Arc::new(MemoryStore::default());
    let context = SignInContext {
        server: "s".into(),
        url: url::Url::parse(&format!("{base}/mcp")).unwrap(),
        options: Default::default(),
        secrets: secrets.clone(),
        gatekeeper,
        identity: None,
        verdict: "unattested".into(),
        audit_server: "s".into(),
        allowed_issuers: allowed_issuers.iter().map(|s| s.to_string()).collect(),
        ui: Some(ui.clone()),
        opener: browser.clone(),
        timeout: Duration::from_secs(20),
        network_timeout: Duration::from_secs(2),
        tap: None,
    };
    Case {
        context,
        ui,
        browser,
        secrets,
        state,
    }
}

async fn challenge(base: &str) -> Option<String> {
    gatehouse_host::auth::probe_challenge(&url::Url::parse(&format!("{base}/mcp")).unwrap()).await
}

/// Signs in, expecting `code`; checks nothing was stored and the refusal was audited.
async fn refused(case: &Case, base: &str, code: SignInCode) {
    let challenge = challenge(base).await;
    assert!(challenge.is_some(), "the mock sends a challenge");
    let error = case
        .context
        .sign_in(challenge.as_deref(), SignInReason::SignIn, &[])
        .await
        .err()
        .expect("the sign-in must fail");
    match &error {
        HostError::SignIn { code: got, .. } => assert_eq!(*got, code, "{error}"),
        other => panic!("expected sign-in {code:?}, got {other}"),
    }
    assert!(
        gatehouse_host::auth::status(case.secrets.as_ref(), "s")
            .unwrap()
            .is_none(),
        "nothing may be stored after {code:?}"
    );
    let failed: Vec<OauthSignInFailed> =
        gatehouse_testkit::audit::payloads(&case.state.path().join("audit.jsonl"));
    let record = failed.first().expect("the refusal is audited");
    assert_eq!(record.code, SignInFailure::SignIn(code), "{record:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_authorization_server_at_a_link_local_address_is_refused_before_any_browser() {
    let base = start(Mode::LinkLocalAuthorizationServer).await;
    let case = setup(&base, &[]);
    refused(&case, &base, SignInCode::DiscoveryFailed).await;
    assert!(case.ui.asked.lock().unwrap().is_empty());
    assert!(case.browser.opened.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_authorization_server_without_pkce_is_refused_before_any_browser() {
    let base = start(Mode::NoPkce).await;
    let case = setup(&base, &[]);
    refused(&case, &base, SignInCode::PkceUnsupported).await;
    assert!(case.browser.opened.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_issuer_outside_the_bundle_pin_is_refused_before_registration_or_browser() {
    let base = start(Mode::Good).await;
    // A look-alike of the real issuer: same host and port, another scheme.
    let look_alike = base.replace("http://", "https://");
    let case = setup(&base, &[&look_alike, "https://login.example.com"]);
    refused(&case, &base, SignInCode::IssuerNotAllowed).await;
    assert!(case.ui.asked.lock().unwrap().is_empty());
    assert!(case.browser.opened.lock().unwrap().is_empty());

    // The same server with its issuer pinned signs in, and the tokens are stored.
    let pinned = setup(&base, &[&base]);
    let challenge = challenge(&base).await;
    pinned
        .context
        .sign_in(challenge.as_deref(), SignInReason::SignIn, &[])
        .await
        .expect("the pinned issuer signs in");
    assert_eq!(pinned.browser.opened.lock().unwrap().len(), 1);
    let record = gatehouse_host::auth::status(pinned.secrets.as_ref(), "s")
        .unwrap()
        .expect("stored");
    assert_eq!(record.issuer.as_deref(), Some(base.as_str()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_endpoint_that_answers_garbage_stores_nothing() {
    let base = start(Mode::GarbageToken).await;
    let case = setup(&base, &[]);
    refused(&case, &base, SignInCode::TokenExchangeFailed).await;
    // The user did consent and the browser did open: the failure came after.
    assert_eq!(case.browser.opened.lock().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_authorization_server_that_never_answers_fails_within_the_timeout() {
    let base = start(Mode::Hanging).await;
    let case = setup(&base, &[]);
    let started = std::time::Instant::now();
    refused(&case, &base, SignInCode::DiscoveryFailed).await;
    // Bounded by the 2 s network timeout, not the server's hour.
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(case.browser.opened.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_http_authorization_endpoint_on_a_public_host_is_never_shown_or_opened() {
    let base = start(Mode::InsecureAuthorizationEndpoint).await;
    let case = setup(&base, &[]);
    refused(&case, &base, SignInCode::InsecureAuthorizationUrl).await;
    assert!(case.ui.asked.lock().unwrap().is_empty());
    assert!(case.browser.opened.lock().unwrap().is_empty());
}

/// The server's metadata aims the browser at a device on the user's network: refused with
/// `local_authorization_url` before the user is asked or any browser opens. (A server on this
/// machine, as here, may still sign in on this machine: every other test's authorization
/// endpoint is the mock's own loopback address.)
#[tokio::test(flavor = "multi_thread")]
async fn an_authorization_endpoint_on_the_local_network_is_never_shown_or_opened() {
    let base = start(Mode::LocalNetworkAuthorizationEndpoint).await;
    let case = setup(&base, &[]);
    refused(&case, &base, SignInCode::LocalAuthorizationUrl).await;
    assert!(case.ui.asked.lock().unwrap().is_empty());
    assert!(case.browser.opened.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_refresh_token_means_signing_in_again_not_a_stale_token() {
    let base = start(Mode::RefreshRejected).await;
    let case = setup(&base, &[]);
    let challenge = challenge(&base).await;
    case.context
        .sign_in(challenge.as_deref(), SignInReason::SignIn, &[])
        .await
        .expect("the first sign-in works");
    // The access token has expired (it lived 1 s): the next request refreshes, the server
    // rejects the refresh token, and the host must ask for a new sign-in rather than send
    // the expired token.
    let manager = case
        .context
        .manager()
        .await
        .expect("the stored sign-in loads");
    let token = manager.get_access_token().await;
    assert!(
        matches!(
            token,
            Err(rmcp::transport::auth::AuthError::AuthorizationRequired)
        ),
        "{token:?}"
    );
    let log = case.state.path().join("audit.jsonl");
    assert!(!gatehouse_testkit::audit::payloads::<OauthSignedIn>(&log).is_empty());
    assert!(
        gatehouse_testkit::audit::payloads::<OauthRefreshed>(&log).is_empty(),
        "a rejected refresh is no refresh"
    );
}
