//! A sign-in, from a server's challenge to tokens in the keychain, and the use of a stored
//! sign-in. Order matters and fails closed: discovery, then the admin's issuer pin (before any
//! registration or browser), then registration, then the user's consent to the exact URL,
//! then the system browser and the loopback redirect, then the code exchange; only a complete
//! sign-in is stored and audited as one.

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
};

use super::checks::{Refusal, SignInCode, check_authorization_url, check_issuer};
use super::loopback::{Listener, Redirect};
use super::store::{self, KeychainCredentials, Record, Registration, fingerprint};
use super::{OAuthOptions, SignInAnswer, SignInReason, SignInRequest, SignInUi};
use crate::audit_event::EventPayload;
use crate::audit_event::session::{
    OauthLoggedOut, OauthRefreshed, OauthSignInFailed, OauthSignedIn, SignInFailure,
};
use crate::consent::UrlOpener;
use crate::gatekeeper::Gatekeeper;
use crate::secrets::SecretStore;
use crate::tap::TrafficTap;
use crate::{HostError, config::lookup_secret};

/// The name Gatehouse registers under.
pub const CLIENT_NAME: &str = "Gatehouse";
/// Step-ups for one request before giving up: a server that keeps asking for more scope
/// after being given what it asked for is not going to be satisfied.
pub const MAX_STEP_UPS: u32 = 2;
/// Error texts from an authorization server are cut to this many bytes.
const MAX_SERVER_TEXT: usize = 300;

/// Everything a sign-in for one server needs.
#[derive(Clone)]
pub struct SignInContext {
    pub server: String,
    /// The MCP server URL: the `resource`.
    pub url: url::Url,
    pub options: OAuthOptions,
    pub secrets: Arc<dyn SecretStore>,
    pub gatekeeper: Arc<Gatekeeper>,
    /// The verified identity (`urn:…`) when the server was admitted.
    pub identity: Option<String>,
    /// The admission verdict's headline, for the consent banner.
    pub verdict: String,
    /// The audit record's server field.
    pub audit_server: String,
    /// The bundle's `authorizationServers` for this server (empty: not pinned).
    pub allowed_issuers: Vec<String>,
    /// Who asks the user; `None`: no one can (headless), so a sign-in is refused.
    pub ui: Option<Arc<dyn SignInUi>>,
    pub opener: Arc<dyn UrlOpener>,
    /// How long the user has to complete the sign-in in the browser.
    pub timeout: Duration,
    /// How long each exchange with the authorization server may take (discovery,
    /// registration, the token request): one that never answers fails the sign-in.
    pub network_timeout: Duration,
    /// The traffic tap this server's connection records into: every token of the sign-in
    /// (loaded, exchanged, refreshed) and the client secret are redacted from it, and from
    /// what the server sends. `None` only where no connection's traffic is recorded.
    pub tap: Option<Arc<TrafficTap>>,
}

/// The default for [`SignInContext::network_timeout`].
pub const NETWORK_TIMEOUT: Duration = Duration::from_secs(30);

fn cut(text: &str) -> String {
    if text.len() <= MAX_SERVER_TEXT {
        return text.to_string();
    }
    let mut end = MAX_SERVER_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

impl SignInContext {
    fn fail(&self, code: SignInCode, detail: impl Into<String>) -> HostError {
        HostError::SignIn {
            server: self.server.clone(),
            code,
            detail: detail.into(),
        }
    }

    /// An rmcp error, as the code and sentence the user sees.
    fn auth_error(&self, error: AuthError) -> HostError {
        let (code, detail) = match &error {
            AuthError::PkceUnsupported => (
                SignInCode::PkceUnsupported,
                "the authorization server does not advertise PKCE with S256, which MCP requires; Gatehouse will not sign in there".to_string(),
            ),
            AuthError::AuthorizationServerMismatch { .. }
            | AuthError::AuthorizationServerMissingIssuer { .. } => {
                (SignInCode::IssuerMismatch, cut(&error.to_string()))
            }
            AuthError::RegistrationFailed(_) => (SignInCode::RegistrationFailed, cut(&error.to_string())),
            AuthError::TokenExchangeFailed(_) => {
                (SignInCode::TokenExchangeFailed, cut(&error.to_string()))
            }
            AuthError::TokenRefreshFailed(_) | AuthError::TokenRefreshRejected(_) => {
                (SignInCode::RefreshFailed, cut(&error.to_string()))
            }
            AuthError::CredentialStoreError(_) => (SignInCode::KeychainFailed, cut(&error.to_string())),
            AuthError::AuthorizationRequired => (
                SignInCode::AuthRequired,
                "the server requires signing in".to_string(),
            ),
            AuthError::NoAuthorizationSupport
            | AuthError::MetadataError(_)
            | AuthError::DiscoveryRequestFailed { .. }
            | AuthError::ProtectedResourceMetadataInvalid { .. }
            | AuthError::AuthorizationServersUnavailable { .. }
            | AuthError::HttpError(_) => (SignInCode::DiscoveryFailed, cut(&error.to_string())),
            _ => (SignInCode::SignInFailed, cut(&error.to_string())),
        };
        self.fail(code, detail)
    }

    fn audit<P: EventPayload>(&self, payload: &P) -> Result<(), HostError> {
        self.gatekeeper
            .write(Some(&self.audit_server), payload)
            .map(|_| ())
    }

    /// Records a refusal or failure, then returns it.
    fn refused(&self, issuer: Option<&str>, reason: SignInReason, error: HostError) -> HostError {
        let failed = OauthSignInFailed {
            name: self.server.clone(),
            resource: self.url.to_string(),
            issuer: issuer.map(String::from),
            reason,
            code: SignInFailure::of(&error),
            detail: error.to_string(),
        };
        match self.audit(&failed) {
            Ok(()) => error,
            Err(audit) => audit,
        }
    }

    fn store(&self) -> KeychainCredentials {
        let ctx = self.clone();
        let store = KeychainCredentials::new(&self.server, self.secrets.clone());
        let store = match &self.tap {
            Some(tap) => store.redacting(tap.clone()),
            None => store,
        };
        store.on_refresh(Arc::new(move |record: &Record| {
            let token = record
                .credentials
                .as_ref()
                .and_then(|c| c.token_response.as_ref())
                .map(|t| fingerprint(rmcp_token(t)));
            ctx.audit(&OauthRefreshed {
                name: ctx.server.clone(),
                issuer: record.issuer.clone(),
                scopes: record.scopes.clone(),
                token,
            })
            .map_err(|e| e.to_string())
        }))
    }

    /// The sign-in this server's connection runs under, when it holds tokens for this URL.
    pub async fn authorization(&self) -> Option<crate::broker::Authorization> {
        let record = self.stored().await.ok()??;
        let has_token = record
            .credentials
            .as_ref()
            .is_some_and(|c| c.token_response.is_some());
        (has_token && record.resource == self.url.as_str()).then_some(
            crate::broker::Authorization {
                issuer: record.issuer,
                subject: record.subject,
            },
        )
    }

    async fn stored(&self) -> Result<Option<Record>, HostError> {
        let (secrets, server) = (self.secrets.clone(), self.server.clone());
        tokio::task::spawn_blocking(move || store::load(secrets.as_ref(), &server))
            .await
            .map_err(|e| self.fail(SignInCode::KeychainFailed, e.to_string()))?
    }

    /// An authorization manager for this server: with the stored sign-in when there is one
    /// (its issuer still allowed by the bundle, and still the server's authorization server:
    /// rmcp discards tokens from an issuer the server no longer names), else empty, so the
    /// first request goes out without a token and the server's 401 says how to sign in.
    pub async fn manager(&self) -> Result<AuthorizationManager, HostError> {
        let mut manager = AuthorizationManager::new(self.url.as_str())
            .await
            .map_err(|e| self.auth_error(e))?;
        manager.set_credential_store(self.store());
        // No keychain here (no Secret Service in this session) is no stored sign-in: the
        // first request goes out without a token, as for a server never signed in to.
        let Ok(Some(record)) = self.stored().await else {
            return Ok(manager);
        };
        if record.resource != self.url.as_str() {
            // Tokens for another URL are never sent here (RFC 8707: audience-bound).
            return Ok(manager);
        }
        if let Err(refusal) = check_issuer(&self.allowed_issuers, record.issuer.as_deref()) {
            let error = self.fail(
                refusal.into(),
                format!(
                    "the stored sign-in is from {}, which the admin bundle no longer allows for this server; sign in again with `gatehouse auth login {}`",
                    record.issuer.as_deref().unwrap_or("an unnamed authorization server"),
                    self.server
                ),
            );
            return Err(self.refused(record.issuer.as_deref(), SignInReason::SignIn, error));
        }
        manager
            .initialize_from_store()
            .await
            .map_err(|e| self.auth_error(e))?;
        Ok(manager)
    }

    /// Signs in interactively: `challenge` is the server's `WWW-Authenticate` (when it sent
    /// one), `scopes` extra scopes to ask for on top of what the server names (step-up).
    pub async fn sign_in(
        &self,
        challenge: Option<&str>,
        reason: SignInReason,
        scopes: &[String],
    ) -> Result<AuthorizationManager, HostError> {
        let mut issuer = None;
        let result = self
            .sign_in_inner(challenge, reason, scopes, &mut issuer)
            .await;
        result.map_err(|e| match e {
            // Already audited (an audit failure is itself the error).
            HostError::AuditUnavailable { .. } => e,
            e => self.refused(issuer.as_deref(), reason, e),
        })
    }

    async fn sign_in_inner(
        &self,
        challenge: Option<&str>,
        reason: SignInReason,
        extra_scopes: &[String],
        issuer_seen: &mut Option<String>,
    ) -> Result<AuthorizationManager, HostError> {
        let Some(ui) = self.ui.clone() else {
            return Err(self.fail(
                SignInCode::AuthRequired,
                format!(
                    "the server requires signing in, and nobody can be asked here; run `gatehouse auth login {}`",
                    self.server
                ),
            ));
        };
        let mut manager = AuthorizationManager::new(self.url.as_str())
            .await
            .map_err(|e| self.auth_error(e))?;
        let resolution = manager.resolve_metadata_from_challenge(challenge);
        let resolution = self
            .bounded(SignInCode::DiscoveryFailed, "discovery", resolution)
            .await?
            .map_err(|e| self.auth_error(e))?;
        let metadata = resolution.metadata;
        // MCP: a client MUST refuse an authorization server whose metadata does not
        // advertise PKCE with S256 (rmcp only refuses one that advertises other methods).
        // Endpoints synthesized for a 2025-03-26 server that publishes no metadata at all
        // have nothing to advertise; that era's rule (PKCE always used) applies.
        let advertises_s256 = metadata
            .code_challenge_methods_supported
            .as_ref()
            .is_some_and(|methods| methods.iter().any(|m| m == "S256"));
        if resolution.source.is_discovered() && !advertises_s256 {
            return Err(self.fail(
                SignInCode::PkceUnsupported,
                "the authorization server's metadata does not advertise PKCE with S256 (code_challenge_methods_supported), which MCP requires; Gatehouse will not sign in there",
            ));
        }
        let issuer = metadata.issuer.clone();
        *issuer_seen = issuer.clone();
        // The admin's pin, before anything is registered or shown.
        if let Err(refusal) = check_issuer(&self.allowed_issuers, issuer.as_deref()) {
            return Err(self.fail(
                refusal.into(),
                format!(
                    "the server sends sign-ins to {}, which is not among the authorization servers the admin bundle allows for it ({})",
                    issuer.as_deref().unwrap_or("an authorization server without an issuer"),
                    self.allowed_issuers.join(", ")
                ),
            ));
        }
        let endpoint = metadata.authorization_endpoint.clone();
        // rmcp uses a metadata document only where the server advertises them; the record
        // says which registration was used, so the host reads the same flag.
        let metadata_documents = metadata
            .additional_fields
            .get("client_id_metadata_document_supported")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        manager.set_metadata(metadata);
        let store = self.store();
        manager.set_credential_store(store.clone());

        // A keychain that cannot be read holds no client to reuse; storing the sign-in at
        // the end will say what is wrong with it.
        let stored = self.stored().await.ok().flatten();
        let client_secret = match &self.options.client_secret_secret {
            Some(name) => {
                let (secrets, lookup) = (self.secrets.clone(), name.clone());
                let value =
                    tokio::task::spawn_blocking(move || lookup_secret(secrets.as_ref(), &lookup))
                        .await
                        .map_err(|e| self.fail(SignInCode::KeychainFailed, e.to_string()))??;
                if let Some(tap) = &self.tap {
                    tap.redact(name, value.expose());
                }
                Some(value.expose().to_string())
            }
            None => None,
        };
        let mut scopes: Vec<String> = if !self.options.scopes.is_empty() {
            self.options.scopes.clone()
        } else {
            // The challenge's scopes when it names any, else the resource's scopes_supported
            // (the spec's order); never both, which would ask for more than the server needs.
            manager.select_initial_scopes(&[]).await
        };
        if reason == SignInReason::StepUp {
            // The union: a step-up must not lose what was already granted.
            for scope in stored
                .iter()
                .flat_map(|r| r.scopes.iter())
                .chain(extra_scopes)
            {
                if !scopes.contains(scope) {
                    scopes.push(scope.clone());
                }
            }
        } else {
            for scope in extra_scopes {
                if !scopes.contains(scope) {
                    scopes.push(scope.clone());
                }
            }
        }
        // A client registered dynamically earlier with this issuer is reused when its
        // redirect port is free again and it registered for every scope asked now; a client
        // is never reused across issuers.
        let reusable = stored.as_ref().filter(|r| {
            r.registration == Registration::Dynamic
                && r.issuer == issuer
                && self.options.client_id.is_none()
                && scopes.iter().all(|s| r.registered_scopes.contains(s))
        });
        let (listener, reused) = match reusable.and_then(|r| port_of(&r.redirect_uri)) {
            Some(port) => match Listener::bind(port).await {
                Ok(l) => (l, reusable.map(|r| r.client_id.clone())),
                Err(_) => (self.bind(self.options.redirect_port).await?, None),
            },
            None => (self.bind(self.options.redirect_port).await?, None),
        };
        let redirect_uri = listener.redirect_uri();

        let mut request = AuthorizationRequest::new(redirect_uri.clone())
            .with_client_name(CLIENT_NAME)
            .with_application_type("native")
            .with_scopes(scopes.clone());
        let registration = match (&self.options.client_id, &reused) {
            (Some(id), _) => {
                request = request.with_preregistered_client(id);
                if let Some(secret) = &client_secret {
                    request = request.with_client_secret(secret);
                }
                Registration::Preregistered
            }
            (None, Some(id)) => {
                request = request.with_preregistered_client(id);
                Registration::Dynamic
            }
            (None, None) => match &self.options.client_metadata_url {
                Some(url) if metadata_documents => {
                    request = request.with_client_metadata_url(url);
                    Registration::MetadataDocument
                }
                _ => Registration::Dynamic,
            },
        };
        let session = self
            .bounded(
                SignInCode::RegistrationFailed,
                "registration",
                AuthorizationSession::new(manager, request),
            )
            .await?
            .map_err(|(_, e)| self.auth_error(e))?;
        let auth_url = session.get_authorization_url().to_string();
        let parsed = check_authorization_url(&auth_url, &endpoint, &self.url).map_err(|refusal| {
            let detail = match refusal {
                Refusal::LocalAuthorizationUrl => format!(
                    "the authorization URL {auth_url:?} leads to this machine or a local network, and the MCP server {} is not there: its metadata may not send your browser to a local service",
                    self.url
                ),
                _ => format!(
                    "the authorization URL {auth_url:?} is not an https URL (or http to loopback) at the authorization server's endpoint {endpoint:?}"
                ),
            };
            self.fail(refusal.into(), detail)
        })?;
        let state = parsed
            .query_pairs()
            .find(|(k, _)| k == "state")
            .map(|(_, v)| v.into_owned())
            .ok_or_else(|| {
                self.fail(
                    SignInCode::SignInFailed,
                    "the authorization URL has no state",
                )
            })?;
        let granted_scopes = parsed
            .query_pairs()
            .find(|(k, _)| k == "scope")
            .map(|(_, v)| {
                v.split(' ')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_else(|| scopes.clone());
        let prompt = SignInRequest {
            server: self.server.clone(),
            identity: self.identity.clone(),
            verdict: self.verdict.clone(),
            resource: self.url.to_string(),
            issuer: issuer.clone(),
            authorization_host: parsed.host_str().unwrap_or_default().to_string(),
            url: auth_url.clone(),
            scopes: granted_scopes,
            reason,
        };
        if ui.approve(&prompt).await == SignInAnswer::Cancel {
            ui.finished(&prompt, Some(SignInCode::SignInCancelled));
            return Err(self.fail(
                SignInCode::SignInCancelled,
                "the user cancelled the sign-in",
            ));
        }
        let client_id = session
            .get_credentials()
            .await
            .map(|(id, _)| id)
            .unwrap_or_default();
        store.begin_sign_in(Record {
            resource: self.url.to_string(),
            issuer: issuer.clone(),
            client_id: client_id.clone(),
            registration,
            redirect_uri,
            registered_scopes: match (&reused, registration) {
                (Some(_), _) => stored
                    .as_ref()
                    .map(|r| r.registered_scopes.clone())
                    .unwrap_or_default(),
                (None, Registration::Dynamic) => scopes.clone(),
                (None, _) => Vec::new(),
            },
            scopes: prompt.scopes.clone(),
            subject: None,
            signed_in_at: now_text(),
            credentials: None,
        });
        let outcome = self.complete(&ui, &prompt, listener, &state, session).await;
        let manager = match outcome {
            Ok(manager) => manager,
            Err(e) => {
                store.abandon();
                ui.finished(
                    &prompt,
                    Some(match &e {
                        HostError::SignIn { code, .. } => *code,
                        _ => SignInCode::SignInFailed,
                    }),
                );
                return Err(e);
            }
        };
        let mut record = store.commit().await?;
        let token = record
            .credentials
            .as_ref()
            .and_then(|c| c.token_response.as_ref())
            .map(rmcp_token);
        record.subject = token.and_then(subject_of);
        if record.subject.is_some() {
            let (secrets, server, to_store) =
                (self.secrets.clone(), self.server.clone(), record.clone());
            tokio::task::spawn_blocking(move || store::save(secrets.as_ref(), &server, &to_store))
                .await
                .map_err(|e| self.fail(SignInCode::KeychainFailed, e.to_string()))??;
        }
        self.audit(&OauthSignedIn {
            name: self.server.clone(),
            resource: record.resource,
            issuer: record.issuer,
            client_id: record.client_id,
            registration: record.registration,
            scopes: record.scopes,
            reason,
            subject: record.subject,
            token: token.map(fingerprint),
        })?;
        ui.finished(&prompt, None);
        Ok(manager)
    }

    /// `work` within the network timeout, or the sign-in fails saying which step hung.
    async fn bounded<T>(
        &self,
        code: SignInCode,
        step: &str,
        work: impl Future<Output = T>,
    ) -> Result<T, HostError> {
        tokio::time::timeout(self.network_timeout, work)
            .await
            .map_err(|_| {
                self.fail(
                    code,
                    format!(
                        "the authorization server did not answer {step} within {}s",
                        self.network_timeout.as_secs()
                    ),
                )
            })
    }

    async fn bind(&self, port: u16) -> Result<Listener, HostError> {
        Listener::bind(port).await.map_err(|e| {
            self.fail(
                SignInCode::RedirectUnavailable,
                format!("cannot listen for the sign-in redirect on 127.0.0.1:{port}: {e}"),
            )
        })
    }

    /// Browser, redirect, code exchange.
    async fn complete(
        &self,
        ui: &Arc<dyn SignInUi>,
        prompt: &SignInRequest,
        listener: Listener,
        state: &str,
        session: AuthorizationSession,
    ) -> Result<AuthorizationManager, HostError> {
        let redirect = {
            let wait = listener.accept(state);
            tokio::pin!(wait);
            let opener = self.opener.clone();
            let url = prompt.url.clone();
            // The browser may take a while to hand the URL over (or, for $BROWSER, run to the
            // end): it runs beside the listener, never before it.
            let open = tokio::task::spawn_blocking(move || opener.open(&url));
            let mut open = Some(open);
            let deadline = tokio::time::sleep(self.timeout);
            tokio::pin!(deadline);
            let cancelled = ui.waiting(prompt);
            tokio::pin!(cancelled);
            loop {
                tokio::select! {
                    result = &mut wait => break result.map_err(|e| self.fail(SignInCode::SignInFailed, e))?,
                    opened = async { open.as_mut().expect("polled only while present").await }, if open.is_some() => {
                        open = None;
                        match opened {
                            Ok(Ok(())) => {}
                            Ok(Err(e)) => return Err(self.fail(SignInCode::BrowserFailed, e)),
                            Err(e) => return Err(self.fail(SignInCode::BrowserFailed, e.to_string())),
                        }
                    }
                    _ = &mut cancelled => {
                        return Err(self.fail(SignInCode::SignInCancelled, "the user cancelled the sign-in"));
                    }
                    _ = &mut deadline => {
                        return Err(self.fail(
                            SignInCode::SignInTimedOut,
                            format!("the sign-in was not completed within {}s", self.timeout.as_secs()),
                        ));
                    }
                }
            }
        };
        match redirect {
            Redirect::Error { error, description } => Err(self.fail(
                SignInCode::AuthorizationDenied,
                format!(
                    "the authorization server answered {}{}",
                    cut(&error),
                    description
                        .map(|d| format!(": {}", cut(&d)))
                        .unwrap_or_default()
                ),
            )),
            Redirect::Code {
                code,
                state,
                issuer,
            } => {
                let exchange =
                    session.handle_callback_with_issuer(&code, &state, issuer.as_deref());
                self.bounded(
                    SignInCode::TokenExchangeFailed,
                    "the token request",
                    exchange,
                )
                .await?
                .map_err(|e| self.auth_error(e))?;
                Ok(session.auth_manager)
            }
        }
    }
}

fn port_of(uri: &str) -> Option<u16> {
    url::Url::parse(uri).ok()?.port()
}

fn rmcp_token(token: &rmcp::transport::auth::OAuthTokenResponse) -> &str {
    use oauth2::TokenResponse;
    token.access_token().secret()
}

/// The `sub` of a JWT access token, read (not verified: the token came straight from the
/// token endpoint) for the receipts and `auth status`. Opaque tokens name no subject.
fn subject_of(token: &str) -> Option<String> {
    use base64::Engine;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("sub").and_then(|s| s.as_str()).map(cut)
}

fn now_text() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// The server's own challenge for an unauthenticated request, so that a sign-in started by
/// the user (`auth login`) asks for what the server names, like one the server started.
/// `None` when the server does not answer 401 with a challenge (then the protected resource
/// metadata's `scopes_supported` decides, as the spec says).
pub async fn probe_challenge(url: &url::Url) -> Option<String> {
    let builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10));
    let client = crate::fetch::loopback_path(builder, url).build().ok()?;
    let response = client
        .post(url.as_str())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#)
        .send()
        .await
        .ok()?;
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return None;
    }
    response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(cut)
}

/// `gatehouse auth status`: one line per server with a stored sign-in, without secrets.
pub fn status(secrets: &dyn SecretStore, server: &str) -> Result<Option<Record>, HostError> {
    store::load(secrets, server)
}

/// `gatehouse auth logout SERVER`: removes the sign-in from the keychain and audits it.
pub fn logout(
    secrets: &dyn SecretStore,
    gatekeeper: &Gatekeeper,
    server: &str,
) -> Result<bool, HostError> {
    let Some(record) = store::load(secrets, server)? else {
        return Ok(false);
    };
    gatekeeper.write(
        Some(server),
        &OauthLoggedOut {
            name: server.to_string(),
            issuer: record.issuer,
            client_id: record.client_id,
        },
    )?;
    store::delete(secrets, server)?;
    Ok(true)
}

/// Whether a server challenge asks for more scope, and which.
pub fn challenge_scopes(header: &str) -> Vec<String> {
    let lower = header.to_ascii_lowercase();
    let Some(at) = lower.find("scope=") else {
        return Vec::new();
    };
    let rest = &header[at + "scope=".len()..];
    let value = if let Some(quoted) = rest.strip_prefix('"') {
        quoted.split('"').next().unwrap_or_default()
    } else {
        rest.split([',', ' ']).next().unwrap_or_default()
    };
    value
        .split(' ')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn challenge_scopes_are_read_quoted_or_bare() {
        assert_eq!(
            challenge_scopes(
                r#"Bearer error="insufficient_scope", scope="a b", resource_metadata="x""#
            ),
            vec!["a", "b"]
        );
        assert_eq!(challenge_scopes("Bearer scope=a"), vec!["a"]);
        assert!(challenge_scopes("Bearer realm=\"x\"").is_empty());
    }

    #[test]
    fn the_subject_of_a_jwt_is_read_and_an_opaque_token_has_none() {
        use base64::Engine;
        let enc = |v: &serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
        };
        let jwt = format!(
            "{}.{}.sig",
            enc(&json!({"alg": "RS256"})),
            enc(&json!({"sub": "alice"}))
        );
        assert_eq!(subject_of(&jwt).as_deref(), Some("alice"));
        assert_eq!(subject_of("opaque-token"), None);
    }
}
