//! Where a server's sign-in lives: one keychain entry per server (never servers.json, logs,
//! traffic or audit), holding the client registration and the tokens, bound to the
//! authorization server (issuer) that issued them. rmcp reads and writes the tokens through
//! [`CredentialStore`]; a save outside a sign-in is a silent refresh and is audited as one.
//! Every token that passes through here (read from the keychain, received by a code exchange,
//! renewed by a refresh) is registered with the traffic tap's redaction before rmcp can send
//! it, so a server that echoes it shows `[secret:…]` instead ([`KeychainCredentials::redacting`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::HostError;
use crate::secrets::{SecretStore, SecretValue, to_identifier};
use crate::tap::TrafficTap;

/// How the client identity was obtained, in the spec's order of preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Registration {
    Preregistered,
    MetadataDocument,
    Dynamic,
}

impl Registration {
    pub fn code(self) -> &'static str {
        match self {
            Registration::Preregistered => "preregistered",
            Registration::MetadataDocument => "metadata_document",
            Registration::Dynamic => "dynamic",
        }
    }
}

/// The keychain entry of one server.
#[derive(Clone, Serialize, Deserialize)]
pub struct Record {
    /// The MCP server URL (the `resource`) the tokens were issued for.
    pub resource: String,
    pub issuer: Option<String>,
    pub client_id: String,
    pub registration: Registration,
    pub redirect_uri: String,
    /// The scopes the client registered for (an authorization server may refuse a
    /// registered client any other).
    #[serde(default)]
    pub registered_scopes: Vec<String>,
    pub scopes: Vec<String>,
    /// The subject the token names, when it names one (shown by `auth status`, receipts).
    #[serde(default)]
    pub subject: Option<String>,
    pub signed_in_at: String,
    pub credentials: Option<StoredCredentials>,
}

impl std::fmt::Debug for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Record")
            .field("resource", &self.resource)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// The keychain entry name for a server: readable, and unique per exact server name.
pub fn entry_name(server: &str) -> String {
    let digest = Sha256::digest(server.as_bytes());
    let mut ident = to_identifier(server, '_');
    ident.truncate(80);
    format!("gatehouse-oauth.{ident}.{}", &hex::encode(digest)[..12])
}

/// A short, one-way fingerprint of a token for the audit log: enough to tell two tokens
/// apart, useless to anyone who reads the log.
pub fn fingerprint(secret: &str) -> String {
    format!(
        "sha256:{}",
        &hex::encode(Sha256::digest(secret.as_bytes()))[..16]
    )
}

pub fn load(secrets: &dyn SecretStore, server: &str) -> Result<Option<Record>, HostError> {
    let name = entry_name(server);
    match secrets.get(&name)? {
        None => Ok(None),
        Some(value) => serde_json::from_str(value.expose())
            .map(Some)
            .map_err(|e| HostError::Secret {
                name,
                detail: format!(
                    "the stored sign-in is unreadable ({e}); sign in again with `gatehouse auth login {server}`"
                ),
            }),
    }
}

pub fn save(secrets: &dyn SecretStore, server: &str, record: &Record) -> Result<(), HostError> {
    let text = serde_json::to_string(record).map_err(|e| HostError::Secret {
        name: entry_name(server),
        detail: format!("cannot encode the sign-in: {e}"),
    })?;
    secrets.set(&entry_name(server), &SecretValue::new(text))
}

pub fn delete(secrets: &dyn SecretStore, server: &str) -> Result<(), HostError> {
    secrets.delete(&entry_name(server))
}

/// Called when rmcp saves tokens outside a sign-in (a refresh), before they are stored: the
/// host audits it, and a refresh that cannot be recorded is not stored (`Err`: why).
pub type RefreshHook = Arc<dyn Fn(&Record) -> Result<(), String> + Send + Sync>;

/// Every token a sign-in holds, each with what it is: the access token, the refresh token and
/// an OpenID Connect id token when the token response carried one.
pub fn tokens(credentials: &StoredCredentials) -> Vec<(&'static str, String)> {
    use oauth2::TokenResponse;
    let Some(response) = credentials.token_response.as_ref() else {
        return Vec::new();
    };
    let mut tokens = vec![("access_token", response.access_token().secret().to_string())];
    if let Some(refresh) = response.refresh_token() {
        tokens.push(("refresh_token", refresh.secret().to_string()));
    }
    if let Some(id_token) = response
        .extra_fields()
        .0
        .get("id_token")
        .and_then(serde_json::Value::as_str)
    {
        tokens.push(("id_token", id_token.to_string()));
    }
    tokens
}

/// Registers every token of `credentials` with `tap`'s redaction, labelled
/// `oauth:SERVER:KIND` (so a message shows `[secret:oauth:SERVER:access_token]`).
pub fn redact_tokens(tap: &TrafficTap, server: &str, credentials: &StoredCredentials) {
    for (kind, token) in tokens(credentials) {
        tap.redact(&format!("oauth:{server}:{kind}"), &token);
    }
}

/// rmcp's view of a server's keychain entry. Keychain calls block, so each runs on the
/// blocking pool.
#[derive(Clone)]
pub struct KeychainCredentials {
    server: String,
    secrets: Arc<dyn SecretStore>,
    /// The record being built by a sign-in: tokens are kept here until the sign-in completes,
    /// so a failed sign-in stores nothing.
    pending: Arc<std::sync::Mutex<Option<Record>>>,
    signing_in: Arc<AtomicBool>,
    on_refresh: Option<RefreshHook>,
    /// Where every token read or saved is registered for redaction: the traffic tap the
    /// server's connection records into.
    tap: Option<Arc<TrafficTap>>,
    /// The entry as last read or written: rmcp asks for the token before every request, and
    /// a keychain round trip (D-Bus) per request is neither fast nor needed. `None`: not read
    /// yet.
    cache: Arc<std::sync::Mutex<Option<Option<Record>>>>,
}

impl KeychainCredentials {
    pub fn new(server: &str, secrets: Arc<dyn SecretStore>) -> KeychainCredentials {
        KeychainCredentials {
            server: server.to_string(),
            secrets,
            pending: Default::default(),
            signing_in: Default::default(),
            on_refresh: None,
            tap: None,
            cache: Default::default(),
        }
    }

    pub fn on_refresh(mut self, hook: RefreshHook) -> KeychainCredentials {
        self.on_refresh = Some(hook);
        self
    }

    /// Registers every token this store hands rmcp or is given by it (loaded, exchanged,
    /// refreshed) with `tap`'s redaction, before rmcp can send it.
    pub fn redacting(mut self, tap: Arc<TrafficTap>) -> KeychainCredentials {
        self.tap = Some(tap);
        self
    }

    fn register(&self, credentials: Option<&StoredCredentials>) {
        if let (Some(tap), Some(credentials)) = (&self.tap, credentials) {
            redact_tokens(tap, &self.server, credentials);
        }
    }

    /// From now until [`Self::commit`], tokens rmcp saves are held in memory for `record`.
    pub fn begin_sign_in(&self, record: Record) {
        *self.pending.lock().unwrap_or_else(|p| p.into_inner()) = Some(record);
        self.signing_in.store(true, Ordering::SeqCst);
    }

    /// The sign-in's record with the tokens rmcp saved, written to the keychain.
    pub async fn commit(&self) -> Result<Record, HostError> {
        let record = self
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| HostError::Secret {
                name: entry_name(&self.server),
                detail: "no sign-in in progress".into(),
            })?;
        self.signing_in.store(false, Ordering::SeqCst);
        self.write(record.clone()).await?;
        Ok(record)
    }

    pub fn abandon(&self) {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        self.signing_in.store(false, Ordering::SeqCst);
    }

    fn remember(&self, record: Option<Record>) {
        *self.cache.lock().unwrap_or_else(|p| p.into_inner()) = Some(record);
    }

    async fn write(&self, record: Record) -> Result<(), HostError> {
        let (secrets, server, to_store) =
            (self.secrets.clone(), self.server.clone(), record.clone());
        blocking(move || save(secrets.as_ref(), &server, &to_store)).await?;
        self.remember(Some(record));
        Ok(())
    }

    /// The entry, from the cache once read.
    async fn stored(&self) -> Result<Option<Record>, AuthError> {
        if let Some(cached) = self.cache.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            return Ok(cached);
        }
        let (secrets, server) = (self.secrets.clone(), self.server.clone());
        let record = blocking(move || load(secrets.as_ref(), &server))
            .await
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?;
        self.remember(record.clone());
        Ok(record)
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, HostError> + Send + 'static,
) -> Result<T, HostError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| HostError::Secret {
            name: "(keychain)".into(),
            detail: format!("the keychain call failed: {e}"),
        })?
}

#[async_trait::async_trait]
impl CredentialStore for KeychainCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        if self.signing_in.load(Ordering::SeqCst) {
            let credentials = self
                .pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .and_then(|r| r.credentials.clone());
            self.register(credentials.as_ref());
            return Ok(credentials);
        }
        match self.stored().await {
            Ok(record) => {
                let credentials = record.and_then(|r| r.credentials);
                self.register(credentials.as_ref());
                Ok(credentials)
            }
            // No keychain (no Secret Service in this session): no stored sign-in, so requests
            // go out without a token; a sign-in then fails at storing, saying why. Nothing is
            // sent that should not be.
            Err(e) => {
                tracing::warn!(server = %self.server, "no stored sign-in: {e}");
                self.remember(None);
                Ok(None)
            }
        }
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        // Exchanged or refreshed: redacted from now on, whether or not it is stored.
        self.register(Some(&credentials));
        if self.signing_in.load(Ordering::SeqCst) {
            if let Some(record) = self
                .pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_mut()
            {
                record.scopes = credentials.granted_scopes.clone();
                record.credentials = Some(credentials);
            }
            return Ok(());
        }
        // A refresh: the record keeps its registration; only the tokens change. Read from the
        // keychain, not the cache: a sign-in removed meanwhile (by `auth logout` in another
        // process) must stay removed, not come back with the new tokens.
        self.cache.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(mut record) = self.stored().await? else {
            return Err(AuthError::CredentialStoreError(
                "the sign-in was removed from the keychain during a refresh".into(),
            ));
        };
        if !credentials.granted_scopes.is_empty() {
            record.scopes = credentials.granted_scopes.clone();
        }
        record.credentials = Some(credentials);
        // Recorded before it takes effect; an unrecorded refresh is not kept.
        if let Some(hook) = &self.on_refresh {
            hook(&record).map_err(AuthError::CredentialStoreError)?;
        }
        self.write(record)
            .await
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        if self.signing_in.load(Ordering::SeqCst) {
            if let Some(record) = self
                .pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_mut()
            {
                record.credentials = None;
            }
            return Ok(());
        }
        let (secrets, server) = (self.secrets.clone(), self.server.clone());
        blocking(move || delete(secrets.as_ref(), &server))
            .await
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?;
        self.remember(None);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::MemoryStore;

    fn record() -> Record {
        Record {
            resource: "https://mcp.example/mcp".into(),
            issuer: Some("https://as.example".into()),
            client_id: "c1".into(),
            registration: Registration::Dynamic,
            redirect_uri: "http://127.0.0.1:1/callback".into(),
            registered_scopes: Vec::new(),
            scopes: vec!["mcp:tools".into()],
            subject: None,
            signed_in_at: "2026-11-26T00:00:00Z".into(),
            credentials: None,
        }
    }

    fn credentials(client: &str) -> StoredCredentials {
        StoredCredentials::new(client.into(), None, vec!["a".into(), "b".into()], Some(1))
    }

    #[test]
    fn entry_names_are_valid_secret_names_and_distinct_per_server() {
        for server in ["docs", "my server/with:odd chars", "a".repeat(300).as_str()] {
            crate::secrets::validate_name(&entry_name(server)).unwrap();
        }
        assert_ne!(entry_name("a b"), entry_name("a_b"));
    }

    #[tokio::test]
    async fn a_sign_in_stores_nothing_until_committed_and_nothing_when_abandoned() {
        let secrets: Arc<dyn SecretStore> = Arc::new(MemoryStore::default());
        let store = KeychainCredentials::new("s", secrets.clone());
        store.begin_sign_in(record());
        store.save(credentials("c1")).await.unwrap();
        assert!(load(secrets.as_ref(), "s").unwrap().is_none());
        assert_eq!(store.load().await.unwrap().unwrap().client_id, "c1");
        store.abandon();
        assert!(load(secrets.as_ref(), "s").unwrap().is_none());

        store.begin_sign_in(record());
        store.save(credentials("c1")).await.unwrap();
        let committed = store.commit().await.unwrap();
        assert_eq!(committed.scopes, vec!["a", "b"]);
        let stored = load(secrets.as_ref(), "s").unwrap().unwrap();
        assert_eq!(stored.credentials.unwrap().client_id, "c1");
    }

    #[tokio::test]
    async fn a_save_outside_a_sign_in_is_a_refresh_and_calls_the_hook() {
        let secrets: Arc<dyn SecretStore> = Arc::new(MemoryStore::default());
        save(secrets.as_ref(), "s", &record()).unwrap();
        let seen = Arc::new(std::sync::Mutex::new(0));
        let counter = seen.clone();
        let store =
            KeychainCredentials::new("s", secrets.clone()).on_refresh(Arc::new(move |_| {
                *counter.lock().unwrap() += 1;
                Ok(())
            }));
        store.save(credentials("c1")).await.unwrap();
        assert_eq!(*seen.lock().unwrap(), 1);
        assert!(
            load(secrets.as_ref(), "s")
                .unwrap()
                .unwrap()
                .credentials
                .is_some()
        );
        store.clear().await.unwrap();
        assert!(load(secrets.as_ref(), "s").unwrap().is_none());
        // A refresh after the sign-in was removed (logout meanwhile) is an error, not a
        // resurrection.
        assert!(store.save(credentials("c1")).await.is_err());
    }

    fn tokens_of(access: &str, refresh: &str, id: Option<&str>) -> StoredCredentials {
        use oauth2::{AccessToken, RefreshToken, basic::BasicTokenType};
        use rmcp::transport::auth::{OAuthTokenResponse, VendorExtraTokenFields};
        let mut extra = VendorExtraTokenFields::default();
        if let Some(id) = id {
            extra.0.insert("id_token".into(), serde_json::json!(id));
        }
        let mut response = OAuthTokenResponse::new(
            AccessToken::new(access.into()),
            BasicTokenType::Bearer,
            extra,
        );
        response.set_refresh_token(Some(RefreshToken::new(refresh.into())));
        StoredCredentials::new("c1".into(), Some(response), vec!["a".into()], Some(1))
    }

    /// What the tap records of a message that carries `text`.
    fn recorded(tap: &TrafficTap, text: &str) -> String {
        let server: Arc<str> = Arc::from("s");
        tap.record_text(
            &server,
            crate::tap::Direction::In,
            None,
            serde_json::json!({"echo": text}).to_string(),
        );
        let entries = tap.entries(None);
        entries.last().unwrap().message["echo"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Every token rmcp is handed or hands over is registered with the tap before it can be
    /// sent: exchanged in a sign-in (access, refresh and id token), renewed by a refresh, and
    /// read back from the keychain by a process whose tap never saw either.
    #[tokio::test]
    async fn every_token_exchanged_refreshed_or_loaded_is_redacted_from_the_traffic() {
        let secrets: Arc<dyn SecretStore> = Arc::new(MemoryStore::default());
        let tap = Arc::new(TrafficTap::new(10, crate::tap::system_clock()));
        let store = KeychainCredentials::new("s", secrets.clone())
            .on_refresh(Arc::new(|_| Ok(())))
            .redacting(tap.clone());
        assert_eq!(recorded(&tap, "at-1 rt-1 id-1"), "at-1 rt-1 id-1");

        store.begin_sign_in(record());
        store
            .save(tokens_of("at-1", "rt-1", Some("id-1")))
            .await
            .unwrap();
        store.commit().await.unwrap();
        assert_eq!(
            recorded(&tap, "at-1 rt-1 id-1"),
            "[secret:oauth:s:access_token] [secret:oauth:s:refresh_token] [secret:oauth:s:id_token]"
        );

        store.save(tokens_of("at-2", "rt-2", None)).await.unwrap();
        assert_eq!(
            recorded(&tap, "at-2 rt-2"),
            "[secret:oauth:s:access_token] [secret:oauth:s:refresh_token]"
        );

        let fresh = Arc::new(TrafficTap::new(10, crate::tap::system_clock()));
        let later = KeychainCredentials::new("s", secrets.clone()).redacting(fresh.clone());
        assert_eq!(recorded(&fresh, "at-2 rt-2"), "at-2 rt-2");
        assert!(later.load().await.unwrap().is_some());
        assert_eq!(
            recorded(&fresh, "at-2 rt-2 at-1"),
            "[secret:oauth:s:access_token] [secret:oauth:s:refresh_token] at-1",
            "what the keychain holds, and nothing it no longer does"
        );
    }

    #[tokio::test]
    async fn a_refresh_that_cannot_be_audited_is_not_stored() {
        let secrets: Arc<dyn SecretStore> = Arc::new(MemoryStore::default());
        save(secrets.as_ref(), "s", &record()).unwrap();
        let store = KeychainCredentials::new("s", secrets.clone())
            .on_refresh(Arc::new(|_| Err("the audit log is full".into())));
        let error = store.save(credentials("c1")).await.unwrap_err();
        assert!(error.to_string().contains("audit log is full"), "{error}");
        assert!(
            load(secrets.as_ref(), "s")
                .unwrap()
                .unwrap()
                .credentials
                .is_none(),
            "the unaudited tokens were stored"
        );
    }
}
