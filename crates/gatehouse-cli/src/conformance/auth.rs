//! The conformance client's authorization scenarios (`auth/*`): the host's own sign-in
//! (discovery, registration, PKCE, consent, browser, loopback redirect, token exchange,
//! step-up) with two stand-ins that exist only here. The "user" approves every sign-in, and
//! the "browser" does what the suite's authorization servers expect of a headless client: it
//! fetches the authorization URL without following it, and delivers the redirect it gets to
//! the host's loopback listener, the way a browser would. Tokens go to an in-memory keychain,
//! never the user's.

use std::sync::Arc;

use gatehouse_host::HostError;
use gatehouse_host::ServerSpec;
use gatehouse_host::auth::{SignInAnswer, SignInCode, SignInRequest, SignInUi, UiFuture};
use gatehouse_host::consent::UrlOpener;
use gatehouse_host::host::HostOptions;
use gatehouse_host::secrets::{MemoryStore, SecretStore, SecretValue};
use serde_json::Value;

/// The Client ID Metadata Document the suite's authorization servers expect.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// Where a pre-registered client's secret is kept for the run.
const CLIENT_SECRET_NAME: &str = "conformance-client-secret";

pub fn is_auth_scenario(scenario: &str) -> bool {
    scenario.starts_with("auth/")
}

/// The spec, secrets and host options of an `auth/*` scenario.
pub fn prepare(
    spec: &mut ServerSpec,
    options: &mut HostOptions,
    context: &Value,
) -> Result<Arc<dyn SecretStore>, HostError> {
    let secrets: Arc<dyn SecretStore> = Arc::new(MemoryStore::default());
    if let ServerSpec::Http(http) = spec {
        http.oauth.client_metadata_url = Some(CLIENT_METADATA_URL.into());
        if let Some(id) = context.get("client_id").and_then(Value::as_str) {
            http.oauth.client_id = Some(id.into());
            http.oauth.client_metadata_url = None;
            if let Some(secret) = context.get("client_secret").and_then(Value::as_str) {
                secrets.set(CLIENT_SECRET_NAME, &SecretValue::new(secret))?;
                http.oauth.client_secret_secret = Some(CLIENT_SECRET_NAME.into());
            }
        }
    }
    options.sign_in = Some(Arc::new(ApproveEverySignIn));
    options.opener = Arc::new(HeadlessBrowser);
    options.sign_in_timeout = std::time::Duration::from_secs(20);
    Ok(secrets)
}

struct ApproveEverySignIn;

impl SignInUi for ApproveEverySignIn {
    fn approve<'a>(&'a self, request: &'a SignInRequest) -> UiFuture<'a, SignInAnswer> {
        eprintln!(
            "conformance: sign-in to {} at {} (scopes: {}), approved without a person",
            request.server,
            request.authorization_host,
            request.scopes.join(" ")
        );
        Box::pin(async { SignInAnswer::Open })
    }

    fn waiting<'a>(&'a self, _: &'a SignInRequest) -> UiFuture<'a, ()> {
        Box::pin(std::future::pending())
    }

    fn finished(&self, request: &SignInRequest, failure: Option<SignInCode>) {
        match failure {
            None => eprintln!("conformance: signed in to {}", request.server),
            Some(code) => eprintln!("conformance: sign-in failed: {}", code.code()),
        }
    }
}

/// Fetches the authorization URL without following its redirect, then hands the redirect to
/// the loopback listener (only ever a loopback URL).
struct HeadlessBrowser;

impl UrlOpener for HeadlessBrowser {
    fn open(&self, url: &str) -> Result<(), String> {
        let url = url.to_string();
        // Called on the blocking pool, inside the runtime.
        tokio::runtime::Handle::current().block_on(async move {
            let client = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(std::time::Duration::from_secs(10))
                .build()
                .map_err(|e| e.to_string())?;
            let response = client.get(&url).send().await.map_err(|e| e.to_string())?;
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    format!(
                        "the authorization server answered {} without a redirect",
                        response.status()
                    )
                })?
                .to_string();
            let target = url::Url::parse(&location).map_err(|e| e.to_string())?;
            if target.host_str() != Some("127.0.0.1") {
                return Err(format!(
                    "the redirect goes to {location:?}, not to the loopback listener"
                ));
            }
            client.get(target).send().await.map_err(|e| e.to_string())?;
            Ok(())
        })
    }
}
