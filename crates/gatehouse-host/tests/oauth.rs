//! Sign-in against authorization servers that misbehave: each failure is a clear error with
//! its code, nothing is stored in the keychain, the browser never opens before the checks
//! pass, and every refusal is audited. The test kit's mock (`oauth::Mock`, one `Mode` per way to
//! misbehave) stands in for a hostile server; the
//! real sign-in (a real OpenID provider) is tested in gatehouse-cli/tests/oauth.rs, and the
//! protocol's own checks in the conformance suite's authorization scenarios.

use std::sync::Arc;
use std::time::Duration;

use gatehouse_host::HostError;
use gatehouse_host::audit_event::session::{
    OauthRefreshed, OauthSignInFailed, OauthSignedIn, SignInFailure,
};
use gatehouse_host::auth::{SignInCode, SignInContext, SignInReason};
use gatehouse_host::secrets::{MemoryStore, SecretStore};
use gatehouse_testkit as kit;
use kit::oauth::{Approve, Browser, Mock, Mode};

struct Case {
    context: SignInContext,
    ui: Arc<Approve>,
    browser: Arc<Browser>,
    secrets: Arc<dyn SecretStore>,
    rig: kit::rig::Rig,
}

/// The mock in `mode`: its base URL.
async fn started(mode: Mode) -> String {
    Mock::start(mode).await.base
}

fn setup(base: &str, allowed_issuers: &[&str]) -> Case {
    let rig = kit::rig::Rig::warn();
    let ui = Arc::new(Approve::default());
    let browser = Arc::new(Browser::default());
    let secrets: Arc<dyn SecretStore> = Arc::new(MemoryStore::default());
    let context = SignInContext {
        server: "s".into(),
        url: url::Url::parse(&format!("{base}/mcp")).unwrap(),
        options: Default::default(),
        secrets: secrets.clone(),
        gatekeeper: rig.gatekeeper.clone(),
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
        rig,
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
    let failed: Vec<OauthSignInFailed> = kit::audit::payloads(&case.rig.audit_path());
    let record = failed.first().expect("the refusal is audited");
    assert_eq!(record.code, SignInFailure::SignIn(code), "{record:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_authorization_server_at_a_link_local_address_is_refused_before_any_browser() {
    let base = started(Mode::LinkLocalAuthorizationServer).await;
    let case = setup(&base, &[]);
    refused(&case, &base, SignInCode::DiscoveryFailed).await;
    assert!(case.ui.asked.lock().unwrap().is_empty());
    assert!(case.browser.opened.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_authorization_server_without_pkce_is_refused_before_any_browser() {
    let base = started(Mode::NoPkce).await;
    let case = setup(&base, &[]);
    refused(&case, &base, SignInCode::PkceUnsupported).await;
    assert!(case.browser.opened.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_issuer_outside_the_bundle_pin_is_refused_before_registration_or_browser() {
    let base = started(Mode::Good).await;
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
    let base = started(Mode::GarbageToken).await;
    let case = setup(&base, &[]);
    refused(&case, &base, SignInCode::TokenExchangeFailed).await;
    // The user did consent and the browser did open: the failure came after.
    assert_eq!(case.browser.opened.lock().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_authorization_server_that_never_answers_fails_within_the_timeout() {
    let base = started(Mode::Hanging).await;
    let case = setup(&base, &[]);
    let started = std::time::Instant::now();
    refused(&case, &base, SignInCode::DiscoveryFailed).await;
    // Bounded by the 2 s network timeout, not the server's hour.
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(case.browser.opened.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_http_authorization_endpoint_on_a_public_host_is_never_shown_or_opened() {
    let base = started(Mode::InsecureAuthorizationEndpoint).await;
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
    let base = started(Mode::LocalNetworkAuthorizationEndpoint).await;
    let case = setup(&base, &[]);
    refused(&case, &base, SignInCode::LocalAuthorizationUrl).await;
    assert!(case.ui.asked.lock().unwrap().is_empty());
    assert!(case.browser.opened.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_refresh_token_means_signing_in_again_not_a_stale_token() {
    let base = started(Mode::RefreshRejected).await;
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
    let log = case.rig.audit_path();
    assert!(!gatehouse_testkit::audit::payloads::<OauthSignedIn>(&log).is_empty());
    assert!(
        gatehouse_testkit::audit::payloads::<OauthRefreshed>(&log).is_empty(),
        "a rejected refresh is no refresh"
    );
}
