//! A mock OAuth authorization server on a loopback origin, with the MCP endpoint it guards at
//! `/mcp`, for the sign-in tests: protected-resource and authorization-server metadata,
//! dynamic registration, an authorization endpoint that redirects straight back with a code,
//! and a token endpoint; each [`Mode`] makes one part misbehave. Beside it, the sign-in UI
//! that approves every sign-in ([`Approve`]) and a browser that follows the redirect to the
//! host's loopback listener ([`Browser`]), each recording what it was given.
//!
//! The `/mcp` endpoint answers every request with the challenge ([`Mock::challenge`]) unless
//! the test serves its own ([`Mock::start_with_mcp`]), which can accept the tokens the mock
//! issued ([`Mock::accepts`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use gatehouse_host::auth::{SignInAnswer, SignInCode, SignInRequest, SignInUi, UiFuture};
use gatehouse_host::consent::UrlOpener;
use serde_json::{Value, json};

/// How the mock authorization server behaves.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// Everything in order; the token endpoint gives the fixed access token `t`, no expiry.
    Good,
    /// Everything in order; each token is new and unique to this mock ([`Mock::issued`]): the
    /// code exchange gives an access token expiring in 5 seconds (within rmcp's refresh
    /// margin, so the first request refreshes it), a refresh token and an id token; a refresh
    /// gives a new access and refresh token. Issued access tokens are [`Mock::accepts`]ed.
    Issuing,
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
    /// Tokens that expire at once, and a refresh token the server then rejects.
    RefreshRejected,
}

/// A running mock: its origin and what it issued.
#[derive(Clone)]
pub struct Mock {
    pub mode: Mode,
    /// `http://127.0.0.1:PORT`; the MCP endpoint is `{base}/mcp`.
    pub base: String,
    issued: Arc<Mutex<Vec<String>>>,
    valid: Arc<Mutex<Vec<String>>>,
}

impl Mock {
    /// Starts the mock in `mode` on a free loopback port; `/mcp` always answers with the
    /// challenge.
    pub async fn start(mode: Mode) -> Mock {
        Mock::start_with_mcp(mode, get(challenged).post(challenged)).await
    }

    /// Starts the mock with `mcp` serving `/mcp` (its state is the mock).
    pub async fn start_with_mcp(mode: Mode, mcp: MethodRouter<Mock>) -> Mock {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port for the mock");
        let mock = Mock {
            mode,
            base: format!(
                "http://{}",
                listener.local_addr().expect("the mock's address")
            ),
            issued: Default::default(),
            valid: Default::default(),
        };
        let app = Router::new()
            .route("/mcp", mcp)
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
        tokio::spawn(async move { axum::serve(listener, app).await });
        mock
    }

    /// The MCP endpoint's URL.
    pub fn mcp_url(&self) -> url::Url {
        url::Url::parse(&format!("{}/mcp", self.base)).expect("the mock's URL parses")
    }

    /// Every token the mock issued in [`Mode::Issuing`], in order.
    pub fn issued(&self) -> Vec<String> {
        self.issued.lock().expect("issued tokens").clone()
    }

    /// Whether `token` is an access token the mock issued.
    pub fn accepts(&self, token: &str) -> bool {
        self.valid
            .lock()
            .expect("valid tokens")
            .iter()
            .any(|t| t == token)
    }

    /// The 401 an MCP server answers without a valid token, naming the resource metadata.
    pub fn challenge(&self) -> Response {
        (
            StatusCode::UNAUTHORIZED,
            [(
                header::WWW_AUTHENTICATE,
                format!(
                    "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
                    self.base
                ),
            )],
        )
            .into_response()
    }

    /// A token that looks like one and is unique to this mock.
    fn issue(&self, kind: &str) -> String {
        let mut issued = self.issued.lock().expect("issued tokens");
        let port = self.base.rsplit(':').next().unwrap_or_default();
        let token = format!("{kind}-{}-{port}-Zq8xW3vR7tKp2LmN5yHc", issued.len() + 1);
        issued.push(token.clone());
        token
    }
}

async fn challenged(State(mock): State<Mock>) -> Response {
    mock.challenge()
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
    if mock.mode == Mode::NoPkce
        && let Some(metadata) = metadata.as_object_mut()
    {
        metadata.remove("code_challenge_methods_supported");
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
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let (Some(redirect_uri), Some(state)) = (query.get("redirect_uri"), query.get("state")) else {
        return (
            StatusCode::BAD_REQUEST,
            "redirect_uri and state are required",
        )
            .into_response();
    };
    let redirect = format!(
        "{redirect_uri}?code=mock-code&state={state}&iss={}",
        url::form_urlencoded::byte_serialize(mock.base.as_bytes()).collect::<String>()
    );
    (StatusCode::FOUND, [(header::LOCATION, redirect)]).into_response()
}

async fn token(
    State(mock): State<Mock>,
    axum::Form(form): axum::Form<HashMap<String, String>>,
) -> Response {
    let refreshing = form.get("grant_type").map(String::as_str) == Some("refresh_token");
    match mock.mode {
        Mode::GarbageToken => (StatusCode::OK, "this is not a token response").into_response(),
        Mode::RefreshRejected if refreshing => (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant", "error_description": "expired"})),
        )
            .into_response(),
        Mode::RefreshRejected => axum::Json(json!({
            "access_token": "t1", "token_type": "Bearer", "expires_in": 1, "refresh_token": "r1"
        }))
        .into_response(),
        Mode::Issuing => {
            let access = mock.issue("access");
            let refresh = mock.issue("refresh");
            mock.valid
                .lock()
                .expect("valid tokens")
                .push(access.clone());
            let body = if refreshing {
                json!({"access_token": access, "token_type": "Bearer", "expires_in": 3600,
                       "refresh_token": refresh})
            } else {
                json!({"access_token": access, "token_type": "Bearer", "expires_in": 5,
                       "refresh_token": refresh, "id_token": mock.issue("id")})
            };
            axum::Json(body).into_response()
        }
        _ => axum::Json(json!({"access_token": "t", "token_type": "Bearer"})).into_response(),
    }
}

/// Approves every sign-in and records the URL of each it was asked about.
#[derive(Default)]
pub struct Approve {
    pub asked: Mutex<Vec<String>>,
}

impl SignInUi for Approve {
    fn approve<'a>(&'a self, request: &'a SignInRequest) -> UiFuture<'a, SignInAnswer> {
        self.asked.lock().expect("asked").push(request.url.clone());
        Box::pin(async { SignInAnswer::Open })
    }
    fn waiting<'a>(&'a self, _: &'a SignInRequest) -> UiFuture<'a, ()> {
        Box::pin(std::future::pending())
    }
    fn finished(&self, _: &SignInRequest, _: Option<SignInCode>) {}
}

/// A browser that records what it was given and follows the authorization server's redirect
/// to the loopback listener, as a person's browser would. It goes nowhere but loopback
/// (`http://127.0.0.1:`), whatever a test's server asks for.
#[derive(Default)]
pub struct Browser {
    pub opened: Mutex<Vec<String>>,
}

impl UrlOpener for Browser {
    fn open(&self, url: &str) -> Result<(), String> {
        self.opened.lock().expect("opened").push(url.to_string());
        if !url.starts_with("http://127.0.0.1:") {
            return Err(format!("the test browser does not go to {url}"));
        }
        let url = url.to_string();
        // The opener is called from a blocking context on the test's multi-threaded runtime.
        tokio::runtime::Handle::current().block_on(async move {
            let client = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| e.to_string())?;
            let response = client.get(&url).send().await.map_err(|e| e.to_string())?;
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .ok_or_else(|| format!("{url} did not redirect"))?
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

/// Whether a request's headers carry a bearer token the mock issued; the `Authorization`
/// header's value (empty when absent) either way.
pub fn bearer(mock: &Mock, headers: &HeaderMap) -> (bool, String) {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let token = authorization.strip_prefix("Bearer ").unwrap_or_default();
    (mock.accepts(token), authorization)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_mock_challenges_and_issues_unique_tokens_it_then_accepts() {
        let mock = Mock::start(Mode::Issuing).await;
        let client = reqwest::Client::new();
        let mcp = client.post(mock.mcp_url()).send().await.unwrap();
        assert_eq!(mcp.status(), reqwest::StatusCode::UNAUTHORIZED);
        let tokens: Value = client
            .post(format!("{}/token", mock.base))
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body("grant_type=authorization_code&code=mock-code")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let access = tokens["access_token"].as_str().unwrap();
        assert!(mock.accepts(access));
        assert!(!mock.accepts("t"));
        assert_eq!(mock.issued().len(), 3, "access, refresh and id token");
    }
}
