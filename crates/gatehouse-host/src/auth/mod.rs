//! MCP authorization (OAuth 2.1) for remote servers, on rmcp's `auth` support.
//!
//! rmcp does discovery (RFC 9728 protected resource metadata, RFC 8414 / OIDC authorization
//! server metadata with the issuer checks of both eras), client registration in the spec's
//! order (pre-registered, Client ID Metadata Document, dynamic with `application_type:
//! native`), PKCE S256 (refusing an authorization server that does not advertise it),
//! `resource` on every request, scope selection, RFC 9207 `iss` checks and refresh. The host
//! adds what rmcp leaves to it: the admin's pin on which authorization servers count, the
//! user's consent before any browser opens, the system browser and the loopback redirect,
//! the keychain, the audit log, and step-up when a server asks for more scope.

mod checks;
pub mod client;
mod flow;
pub mod loopback;
pub mod store;

use serde::{Deserialize, Serialize};

pub use checks::{Refusal, SignInCode, check_authorization_url, check_issuer};
pub use client::{AuthTransportClient, Challenge, Challenges, Recording};
pub use flow::{
    MAX_STEP_UPS, NETWORK_TIMEOUT, SignInContext, challenge_scopes, logout, probe_challenge, status,
};
pub use store::{Record, Registration};

/// What a server's config says about signing in (all optional: with none, the client
/// registers dynamically or through the authorization server's metadata).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OAuthOptions {
    /// A client id issued out of band (`oauth.clientId`).
    pub client_id: Option<String>,
    /// The keychain secret holding that client's secret (`oauth.clientSecretSecret`).
    pub client_secret_secret: Option<String>,
    /// An https URL of a Client ID Metadata Document (`oauth.clientMetadataUrl`).
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for instead of the server's challenge or `scopes_supported`.
    pub scopes: Vec<String>,
    /// The loopback redirect port (`oauth.redirectPort`), for a pre-registered client whose
    /// redirect URI is fixed; 0 (default) takes any free port.
    pub redirect_port: u16,
}

/// Why the user is asked to sign in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignInReason {
    /// The server requires authorization and there is no usable sign-in.
    SignIn,
    /// The server needs more scope for what was asked.
    StepUp,
}

impl SignInReason {
    pub fn code(self) -> &'static str {
        match self {
            SignInReason::SignIn => "sign_in",
            SignInReason::StepUp => "step_up",
        }
    }
}

/// What the user is shown before the browser opens: everything as text.
#[derive(Debug, Clone, Serialize)]
pub struct SignInRequest {
    pub server: String,
    /// The MCP server's verified identity (`urn:…`), when it was admitted.
    pub identity: Option<String>,
    /// "admitted as …" or "unattested: …": the admission verdict's headline.
    pub verdict: String,
    /// The MCP server URL the tokens are for (RFC 8707 `resource`).
    pub resource: String,
    pub issuer: Option<String>,
    /// The host of the authorization URL: what the browser will show in its address bar.
    pub authorization_host: String,
    pub url: String,
    pub scopes: Vec<String>,
    pub reason: SignInReason,
}

/// The user's answer before the browser opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignInAnswer {
    Open,
    Cancel,
}

pub use crate::consent::UiFuture;

/// How a front end asks the user (desktop card, terminal, or the conformance client's
/// headless stand-in).
pub trait SignInUi: Send + Sync {
    /// Shows the request; resolves with the user's choice.
    fn approve<'a>(&'a self, request: &'a SignInRequest) -> UiFuture<'a, SignInAnswer>;
    /// After the browser opened: resolves when the user cancels. May never resolve; the
    /// host also ends the wait when the redirect arrives or the sign-in times out.
    fn waiting<'a>(&'a self, request: &'a SignInRequest) -> UiFuture<'a, ()>;
    /// The sign-in ended (`None`: signed in; `Some(code)`: why not).
    fn finished(&self, request: &SignInRequest, failure: Option<SignInCode>);
}
