//! The HTTP side of `--require-auth`: the middleware in front of the MCP endpoint and the
//! protected resource metadata routes.

use std::{
    net::SocketAddr,
    sync::{Arc, RwLock},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use axum::{
    Json, Router,
    body::{Body, Bytes, to_bytes},
    extract::{Request, State},
    http::{HeaderValue, Method, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
    routing::get,
};

use super::{
    AuthConfig, Claims, Keys, RESOURCE_METADATA_PATH, Refusal, authorize, bearer_token,
    called_tools,
    issuer::{Discovered, IssuerClient},
    verify,
};
use crate::endpoint::{MCP_PATH, origin};

/// The soonest the JWKS is fetched again for a token naming an unknown key.
pub const JWKS_REFETCH_INTERVAL: Duration = Duration::from_secs(30);

/// The largest POST body buffered to see which tools it calls: rmcp's own limit (4 MiB), so
/// nothing rmcp would accept is refused here.
const MAX_INSPECTED_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Everything the middleware needs, shared by all requests.
pub struct AuthState {
    config: AuthConfig,
    keys: RwLock<Arc<Keys>>,
    issuer: IssuerClient,
    jwks_uri: String,
    /// When the JWKS was last fetched again; `None` before the first time.
    last_refetch: tokio::sync::Mutex<Option<Instant>>,
}

impl AuthState {
    /// Discover `issuer` and fetch its keys, for a server listening at `local`.
    ///
    /// # Errors
    ///
    /// When the issuer cannot be reached or its metadata or keys are unusable.
    pub async fn discover(
        issuer: &str,
        local: SocketAddr,
        base_scope: &str,
        tool_scopes: impl IntoIterator<Item = (String, String)>,
    ) -> anyhow::Result<Arc<Self>> {
        let client = IssuerClient::new()?;
        let Discovered {
            metadata_url,
            jwks_uri,
            keys,
        } = client.discover(issuer).await?;
        tracing::info!(%issuer, %metadata_url, %jwks_uri, keys = keys.len(), "discovered the issuer");
        let config = AuthConfig::new(issuer, &origin(local), MCP_PATH, base_scope, tool_scopes);
        Ok(Arc::new(Self::new(config, keys, client, jwks_uri)))
    }

    pub fn new(config: AuthConfig, keys: Keys, issuer: IssuerClient, jwks_uri: String) -> Self {
        Self {
            config,
            keys: RwLock::new(Arc::new(keys)),
            issuer,
            jwks_uri,
            last_refetch: tokio::sync::Mutex::new(None),
        }
    }

    pub fn config(&self) -> &AuthConfig {
        &self.config
    }

    fn keys(&self) -> Arc<Keys> {
        self.keys
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// [`verify`] at the current time, fetching the JWKS again (at most once per
    /// [`JWKS_REFETCH_INTERVAL`]) when the token names a key it does not have.
    async fn verify_now(&self, token: Option<&str>) -> Result<Claims, Refusal> {
        match verify(token, unix_now(), &self.keys(), &self.config) {
            Err(Refusal::UnknownKey(kid)) => {
                if self.refresh_for(&kid).await {
                    verify(token, unix_now(), &self.keys(), &self.config)
                } else {
                    Err(Refusal::UnknownKey(kid))
                }
            }
            other => other,
        }
    }

    /// Fetch the JWKS again for `kid` unless that happened too recently. Returns whether the
    /// keys may have changed.
    async fn refresh_for(&self, kid: &str) -> bool {
        let mut last = self.last_refetch.lock().await;
        // Another request may have fetched it while this one waited.
        if self.keys().contains(kid) {
            return true;
        }
        if last.is_some_and(|at| at.elapsed() < JWKS_REFETCH_INTERVAL) {
            tracing::debug!(%kid, "unknown key; the JWKS was fetched again too recently");
            return false;
        }
        *last = Some(Instant::now());
        match self.issuer.fetch_keys(&self.jwks_uri).await {
            Ok(keys) => {
                tracing::info!(%kid, keys = keys.len(), "fetched the issuer's JWKS again");
                *self
                    .keys
                    .write()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(keys);
                true
            }
            Err(error) => {
                tracing::warn!("could not fetch the issuer's JWKS again: {error:#}");
                false
            }
        }
    }

    fn refuse(&self, refusal: &Refusal) -> Response {
        tracing::info!(status = %refusal.status(), "refused an MCP request: {}", refusal.reason());
        let mut response = (refusal.status(), Json(refusal.body())).into_response();
        if let Ok(value) = HeaderValue::from_str(&refusal.www_authenticate(&self.config)) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// The protected resource metadata routes: at [`RESOURCE_METADATA_PATH`] followed by the MCP
/// path (RFC 9728 section 3.1) and at [`RESOURCE_METADATA_PATH`] alone. No token needed.
pub fn metadata_routes(state: Arc<AuthState>) -> Router {
    let document = Bytes::from(state.config.resource_metadata_document().to_string());
    let serve = move || {
        let document = document.clone();
        async move { ([(header::CONTENT_TYPE, "application/json")], document).into_response() }
    };
    Router::new()
        .route(
            &format!("{RESOURCE_METADATA_PATH}{MCP_PATH}"),
            get(serve.clone()),
        )
        .route(RESOURCE_METADATA_PATH, get(serve))
}

/// axum middleware for the MCP endpoint: every request needs a valid bearer token with the
/// base scope; a POST calling a tool with its own scope needs that scope too.
pub async fn require_bearer(
    State(state): State<Arc<AuthState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let header = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes);
    let claims = match bearer_token(header) {
        Ok(token) => state.verify_now(token).await,
        Err(refusal) => Err(refusal),
    };
    let claims = match claims {
        Ok(claims) => claims,
        Err(refusal) => return state.refuse(&refusal),
    };

    // Only a POST can call tools, and its body only matters when some tool has its own scope.
    let mut tools = Vec::new();
    if request.method() == Method::POST && !state.config.tool_scopes.is_empty() {
        let (parts, body) = request.into_parts();
        let bytes = match to_bytes(body, MAX_INSPECTED_BODY_BYTES).await {
            Ok(bytes) => bytes,
            Err(_) => return (StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large").into_response(),
        };
        tools = called_tools(&bytes);
        request = Request::from_parts(parts, Body::from(bytes));
    }
    let tools: Vec<&str> = tools.iter().map(String::as_str).collect();
    if let Err(refusal) = authorize(&claims, &tools, &state.config) {
        return state.refuse(&refusal);
    }
    tracing::debug!(
        sub = claims.sub.as_deref().unwrap_or("-"),
        client_id = claims.client_id.as_deref().unwrap_or("-"),
        method = %request.method(),
        ?tools,
        "authorized an MCP request"
    );
    // rmcp hands the request parts to handlers, so tools could see who called.
    request.extensions_mut().insert(claims);
    next.run(request).await
}
