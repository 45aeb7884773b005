//! Signing in to servers that require MCP authorization, for every front end: sign in ahead
//! of a connection (`gatehouse auth login`), list the sign-ins without their secrets, and
//! remove one. A connection signs in by itself when a server asks (see `connection`).

use serde::Serialize;

use super::{ApiError, Host};
use crate::ErrorCode;
use crate::HostError;
use crate::auth::{self, Record, SignInReason};
use crate::config::ServerSpec;

/// One server's sign-in as `auth status` and the app show it: never a token or a secret.
#[derive(Debug, Clone, Serialize)]
pub struct SignInRow {
    pub server: String,
    pub resource: String,
    pub issuer: Option<String>,
    pub subject: Option<String>,
    pub client_id: String,
    pub registration: &'static str,
    pub scopes: Vec<String>,
    pub signed_in_at: String,
    /// Whether a refresh token is held (the sign-in renews itself silently).
    pub refreshable: bool,
    /// Seconds until the access token expires, when the server said (negative: expired).
    pub expires_in: Option<i64>,
}

impl SignInRow {
    fn of(server: &str, record: &Record, now: i64) -> SignInRow {
        use oauth2::TokenResponse;
        let token = record
            .credentials
            .as_ref()
            .and_then(|c| c.token_response.as_ref());
        let received = record
            .credentials
            .as_ref()
            .and_then(|c| c.token_received_at);
        SignInRow {
            server: server.to_string(),
            resource: record.resource.clone(),
            issuer: record.issuer.clone(),
            subject: record.subject.clone(),
            client_id: record.client_id.clone(),
            registration: record.registration.code(),
            scopes: record.scopes.clone(),
            signed_in_at: record.signed_in_at.clone(),
            refreshable: token.is_some_and(|t| t.refresh_token().is_some()),
            expires_in: match (token.and_then(|t| t.expires_in()), received) {
                (Some(lifetime), Some(at)) => Some(at as i64 + lifetime.as_secs() as i64 - now),
                _ => None,
            },
        }
    }
}

impl Host {
    fn http_spec(&self, name: &str) -> Result<crate::config::HttpSpec, ApiError> {
        match self.spec(name)?.0 {
            ServerSpec::Http(http) if http.uses_oauth() => Ok(http),
            ServerSpec::Http(_) => Err(ApiError::new(
                ErrorCode::ConfigInvalid,
                format!(
                    "server {name:?} is configured with a static credential (bearerTokenSecret or an Authorization header); signing in applies to servers without one"
                ),
            )),
            ServerSpec::Stdio(_) => Err(ApiError::new(
                ErrorCode::ConfigInvalid,
                format!(
                    "server {name:?} is a stdio server; MCP authorization applies to HTTP servers (stdio servers take credentials through env)"
                ),
            )),
        }
    }

    /// Signs in to `name` now (admission first, so the admin's issuer pin and the verified
    /// identity apply), asking for `scopes` on top of what the server names. Replaces a
    /// stored sign-in only once the new one completed.
    pub async fn sign_in(&self, name: &str, scopes: &[String]) -> Result<SignInRow, ApiError> {
        let http = self.http_spec(name)?;
        let spec = ServerSpec::Http(http.clone());
        let verdict = self.gatekeeper.admit(name, &spec).await?;
        if !verdict.proceeds {
            return Err(HostError::NotAdmitted {
                server: name.to_string(),
                status: verdict.status,
                reason: verdict
                    .reason
                    .unwrap_or(crate::error_code::ErrorCode::NotAdmitted),
                code: verdict.code,
                detail: verdict.detail.clone(),
            }
            .into());
        }
        let options = self.connect_options(name, false);
        let context = crate::connection::sign_in_context(
            name,
            &http,
            self.secrets.clone(),
            &self.gatekeeper,
            &verdict,
            &options,
            &self.tap,
        );
        let challenge = auth::probe_challenge(&http.url).await;
        context
            .sign_in(challenge.as_deref(), SignInReason::SignIn, scopes)
            .await?;
        self.sign_ins_of(&[name.to_string()])
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| ApiError::new(ErrorCode::KeychainFailed, "the sign-in was not stored"))
    }

    /// Every configured HTTP server's stored sign-in.
    pub async fn sign_ins(&self) -> Result<Vec<SignInRow>, ApiError> {
        let names: Vec<String> = self
            .specs()?
            .into_iter()
            .filter(|(_, spec, _)| matches!(spec, ServerSpec::Http(h) if h.uses_oauth()))
            .map(|(name, _, _)| name)
            .collect();
        self.sign_ins_of(&names).await
    }

    async fn sign_ins_of(&self, names: &[String]) -> Result<Vec<SignInRow>, ApiError> {
        let (secrets, names) = (self.secrets.clone(), names.to_vec());
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        tokio::task::spawn_blocking(move || {
            let mut rows = Vec::new();
            for name in names {
                if let Some(record) = auth::status(secrets.as_ref(), &name)? {
                    rows.push(SignInRow::of(&name, &record, now));
                }
            }
            Ok::<_, HostError>(rows)
        })
        .await
        .map_err(|e| ApiError::new(ErrorCode::KeychainFailed, e.to_string()))?
        .map_err(ApiError::from)
    }

    /// Removes `name`'s sign-in from the keychain (audited); `false` when there was none. A
    /// live connection keeps the token it holds until it closes: disconnect it too.
    pub async fn sign_out(&self, name: &str) -> Result<bool, ApiError> {
        let (secrets, gatekeeper, server) = (
            self.secrets.clone(),
            self.gatekeeper.clone(),
            name.to_string(),
        );
        let removed = tokio::task::spawn_blocking(move || {
            auth::logout(secrets.as_ref(), &gatekeeper, &server)
        })
        .await
        .map_err(|e| ApiError::new(ErrorCode::KeychainFailed, e.to_string()))??;
        if removed {
            self.disconnect(name).await;
        }
        Ok(removed)
    }
}
