//! `--require-auth ISSUER`: the demo as an OAuth 2.1 protected resource (MCP authorization,
//! server side).
//!
//! The MCP endpoint then accepts only requests bearing a JWT access token issued by ISSUER for
//! this server: signed with a key from the issuer's JWKS (RS256/384/512, PS256/384/512,
//! ES256/384 or EdDSA, never `none` or an HMAC), `iss` equal to ISSUER, `aud` naming the
//! server's canonical MCP URL (RFC 8707), unexpired, and carrying the base scope
//! ([`BASE_SCOPE`] unless told otherwise). Calling a tool named with `--tool-scope NAME=SCOPE`
//! additionally needs SCOPE; without it the answer is 403 `insufficient_scope`, so clients can
//! step up. The server's RFC 9728 protected resource metadata tells clients where to get tokens.
//!
//! This module is the pure part: configuration, keys, token checks and the answers to refusals,
//! with the time passed in. [`issuer`] discovers the issuer's metadata and fetches its keys;
//! [`layer`] is the axum middleware and the metadata routes.

pub mod issuer;
pub mod layer;

use std::collections::BTreeMap;

use axum::http::StatusCode;
use jsonwebtoken::{
    Algorithm, DecodingKey, Validation,
    errors::ErrorKind,
    jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse},
};
use serde_json::{Map, Value, json};

/// The scope every MCP request needs unless `--base-scope` says otherwise.
pub const BASE_SCOPE: &str = "mcp:tools";

/// Clock skew tolerated on `exp` and `nbf`, in seconds.
pub const LEEWAY_SECS: u64 = 30;

/// Where the RFC 9728 protected resource metadata is served: this path followed by the MCP
/// endpoint's path (the form RFC 9728 defines), and this path alone for clients that only try
/// the root.
pub const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The `resource_name` of the protected resource metadata.
pub const RESOURCE_NAME: &str = "Gatehouse demo server";

/// Parse `--require-auth`: an absolute `http` or `https` URL without query or fragment (RFC
/// 8414 section 2). The string is kept exactly as given: it must equal the issuer's `iss`.
///
/// # Errors
///
/// When `value` is not such a URL.
pub fn parse_issuer(value: &str) -> Result<String, String> {
    let url = url::Url::parse(value)
        .map_err(|error| format!("expected an http(s) issuer URL, got {value:?}: {error}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "expected an http(s) issuer URL, got the scheme {:?} in {value:?}",
            url.scheme()
        ));
    }
    if url.host().is_none() {
        return Err(format!("the issuer URL {value:?} has no host"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(format!(
            "an issuer URL has no query or fragment (RFC 8414), got {value:?}"
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "the issuer URL {value:?} must not carry credentials"
        ));
    }
    Ok(value.to_owned())
}

/// Parse a scope token (RFC 6749 section 3.3): printable ASCII without space, `"` or `\`.
///
/// # Errors
///
/// When `value` is empty or has another character.
pub fn parse_scope(value: &str) -> Result<String, String> {
    if value.is_empty() {
        return Err("a scope cannot be empty".to_owned());
    }
    if let Some(bad) = value
        .chars()
        .find(|&c| !matches!(c, '\x21' | '\x23'..='\x5b' | '\x5d'..='\x7e'))
    {
        return Err(format!(
            "{value:?} is not a scope: it contains {bad:?} (a scope is printable ASCII without \
             spaces, quotes or backslashes)"
        ));
    }
    Ok(value.to_owned())
}

/// Parse `--tool-scope NAME=SCOPE`.
///
/// # Errors
///
/// When there is no `=`, the name is empty or the scope is not a scope token.
pub fn parse_tool_scope(value: &str) -> Result<(String, String), String> {
    let Some((name, scope)) = value.split_once('=') else {
        return Err(format!("expected NAME=SCOPE, got {value:?}"));
    };
    if name.is_empty() {
        return Err(format!(
            "expected NAME=SCOPE with a tool name, got {value:?}"
        ));
    }
    Ok((name.to_owned(), parse_scope(scope)?))
}

/// What the protected resource requires, fixed at startup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthConfig {
    /// The issuer, exactly as given and as tokens must name it in `iss`.
    pub issuer: String,
    /// The canonical MCP endpoint, `http://IP:PORT/mcp`: tokens must name it in `aud`.
    pub resource: String,
    /// The absolute URL of the protected resource metadata, sent in every challenge.
    pub resource_metadata: String,
    /// The scope every request needs.
    pub base_scope: String,
    /// Tool name to the scope calling it additionally needs.
    pub tool_scopes: BTreeMap<String, String>,
}

impl AuthConfig {
    /// The configuration for a server at `origin` (`http://IP:PORT`) whose MCP endpoint is at
    /// `mcp_path`. A tool named twice keeps the last scope given.
    pub fn new(
        issuer: impl Into<String>,
        origin: &str,
        mcp_path: &str,
        base_scope: impl Into<String>,
        tool_scopes: impl IntoIterator<Item = (String, String)>,
    ) -> Self {
        Self {
            issuer: issuer.into(),
            resource: format!("{origin}{mcp_path}"),
            resource_metadata: format!("{origin}{RESOURCE_METADATA_PATH}{mcp_path}"),
            base_scope: base_scope.into(),
            tool_scopes: tool_scopes.into_iter().collect(),
        }
    }

    /// The base scope, then every tool scope, without repeats.
    pub fn scopes_supported(&self) -> Vec<String> {
        self.supported().map(str::to_owned).collect()
    }

    fn supported(&self) -> impl Iterator<Item = &str> {
        let mut seen = Vec::new();
        std::iter::once(self.base_scope.as_str())
            .chain(self.tool_scopes.values().map(String::as_str))
            .filter(move |scope| {
                let new = !seen.contains(scope);
                seen.push(*scope);
                new
            })
    }

    /// The RFC 9728 protected resource metadata document.
    pub fn resource_metadata_document(&self) -> Value {
        json!({
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "scopes_supported": self.scopes_supported(),
            "bearer_methods_supported": ["header"],
            "resource_name": RESOURCE_NAME,
        })
    }

    /// The scope calling `tool` needs beyond the base scope, if any.
    pub fn tool_scope(&self, tool: &str) -> Option<&str> {
        self.tool_scopes.get(tool).map(String::as_str)
    }
}

/// One verification key from the issuer's JWKS.
#[derive(Clone)]
struct Key {
    kid: Option<String>,
    decoding: DecodingKey,
    /// The algorithms tokens signed with this key may name: those of its type (and curve),
    /// narrowed to the key's own `alg` when it has one. Never `none` or an HMAC.
    algorithms: Vec<Algorithm>,
}

/// The issuer's usable verification keys.
#[derive(Clone, Default)]
pub struct Keys {
    keys: Vec<Key>,
    /// Keys skipped as unusable, with why (for logs).
    pub skipped: Vec<String>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field(
                "kids",
                &self
                    .keys
                    .iter()
                    .map(|key| key.kid.as_deref())
                    .collect::<Vec<_>>(),
            )
            .field("skipped", &self.skipped)
            .finish()
    }
}

impl Keys {
    /// The usable keys of a JWKS document (`{"keys": [...]}`). Keys this server cannot or must
    /// not use (symmetric keys, encryption keys, unknown types or curves) are skipped, not fatal.
    ///
    /// # Errors
    ///
    /// When the document has no `keys` array.
    pub fn from_jwks(document: &Value) -> Result<Self, String> {
        let entries = document
            .get("keys")
            .and_then(Value::as_array)
            .ok_or("the JWKS has no \"keys\" array")?;
        let mut keys = Keys::default();
        for (index, entry) in entries.iter().enumerate() {
            let name = entry
                .get("kid")
                .and_then(Value::as_str)
                .map_or_else(|| format!("key #{index}"), |kid| format!("key {kid:?}"));
            match serde_json::from_value::<Jwk>(entry.clone())
                .map_err(|error| error.to_string())
                .and_then(|jwk| Key::from_jwk(&jwk))
            {
                Ok(key) => keys.keys.push(key),
                Err(why) => keys.skipped.push(format!("{name}: {why}")),
            }
        }
        Ok(keys)
    }

    /// How many usable keys there are.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether a key with this `kid` is known.
    pub fn contains(&self, kid: &str) -> bool {
        self.keys.iter().any(|key| key.kid.as_deref() == Some(kid))
    }

    /// The key a token names. A token without `kid` may use the only key of a one-key set.
    fn find(&self, kid: Option<&str>) -> Result<&Key, Refusal> {
        match kid {
            Some(kid) => self
                .keys
                .iter()
                .find(|key| key.kid.as_deref() == Some(kid))
                .ok_or_else(|| Refusal::UnknownKey(kid.to_owned())),
            None => match self.keys.as_slice() {
                [only] => Ok(only),
                _ => Err(Refusal::InvalidToken(
                    "the token names no key (kid) and the issuer does not have exactly one".into(),
                )),
            },
        }
    }
}

impl Key {
    fn from_jwk(jwk: &Jwk) -> Result<Self, String> {
        if matches!(&jwk.common.public_key_use, Some(usage) if *usage != PublicKeyUse::Signature) {
            return Err("not a signing key (use is not \"sig\")".into());
        }
        let family: Vec<Algorithm> = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => vec![
                Algorithm::RS256,
                Algorithm::RS384,
                Algorithm::RS512,
                Algorithm::PS256,
                Algorithm::PS384,
                Algorithm::PS512,
            ],
            AlgorithmParameters::EllipticCurve(params) => match params.curve {
                EllipticCurve::P256 => vec![Algorithm::ES256],
                EllipticCurve::P384 => vec![Algorithm::ES384],
                ref other => return Err(format!("unsupported curve {other:?}")),
            },
            AlgorithmParameters::OctetKeyPair(params) => match params.curve {
                EllipticCurve::Ed25519 => vec![Algorithm::EdDSA],
                ref other => return Err(format!("unsupported curve {other:?}")),
            },
            // A shared secret in a public JWKS would let anyone mint tokens.
            AlgorithmParameters::OctetKey(_) => return Err("symmetric keys are never used".into()),
            _ => return Err("unsupported key type".into()),
        };
        let algorithms = match jwk.common.key_algorithm {
            None => family,
            Some(declared) => {
                let declared = key_algorithm(declared)
                    .ok_or_else(|| format!("unsupported algorithm {declared:?}"))?;
                if !family.contains(&declared) {
                    return Err(format!("algorithm {declared:?} does not fit the key type"));
                }
                vec![declared]
            }
        };
        let decoding = DecodingKey::from_jwk(jwk).map_err(|error| error.to_string())?;
        Ok(Self {
            kid: jwk.common.key_id.clone(),
            decoding,
            algorithms,
        })
    }
}

/// The signing algorithm a JWK's `alg` names, if it is one tokens may use.
fn key_algorithm(alg: KeyAlgorithm) -> Option<Algorithm> {
    Some(match alg {
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        _ => return None,
    })
}

/// Who a verified token speaks for, and what it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    pub sub: Option<String>,
    pub client_id: Option<String>,
    /// The granted scopes: `scope` split at spaces, or `scp` as given.
    pub scopes: Vec<String>,
    pub exp: u64,
}

impl Claims {
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|granted| granted == scope)
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No bearer token was sent: 401 without an error code.
    MissingToken,
    /// A token was sent but is not acceptable: 401 `invalid_token`.
    InvalidToken(String),
    /// The token names a key the JWKS does not have (yet): 401 `invalid_token`, but worth
    /// fetching the JWKS again first.
    UnknownKey(String),
    /// The token is good but lacks scopes this request needs: 403 `insufficient_scope`.
    InsufficientScope {
        /// The scopes to ask for: the base scope, the missing ones, and every other scope the
        /// token already has that this server knows.
        scope: String,
        /// The scopes that were missing.
        missing: Vec<String>,
    },
}

impl Refusal {
    pub fn status(&self) -> StatusCode {
        match self {
            Refusal::InsufficientScope { .. } => StatusCode::FORBIDDEN,
            _ => StatusCode::UNAUTHORIZED,
        }
    }

    /// The `WWW-Authenticate` challenge (RFC 6750 section 3, RFC 9728 section 5.1).
    pub fn www_authenticate(&self, cfg: &AuthConfig) -> String {
        let metadata = quoted(&cfg.resource_metadata);
        let base = quoted(&cfg.base_scope);
        match self {
            Refusal::MissingToken => {
                format!("Bearer resource_metadata={metadata}, scope={base}")
            }
            Refusal::InvalidToken(_) | Refusal::UnknownKey(_) => format!(
                "Bearer error=\"invalid_token\", resource_metadata={metadata}, scope={base}"
            ),
            Refusal::InsufficientScope { scope, .. } => format!(
                "Bearer error=\"insufficient_scope\", scope={}, resource_metadata={metadata}",
                quoted(scope)
            ),
        }
    }

    /// A short, token-free explanation for the response body and logs.
    pub fn reason(&self) -> String {
        match self {
            Refusal::MissingToken => "no bearer token: this server requires authorization".into(),
            Refusal::InvalidToken(why) => format!("invalid token: {why}"),
            Refusal::UnknownKey(kid) => {
                format!("invalid token: the issuer has no key {kid:?}")
            }
            Refusal::InsufficientScope { missing, .. } => {
                format!(
                    "insufficient scope: this request needs {}",
                    missing.join(" ")
                )
            }
        }
    }

    /// The JSON body of the refusal.
    pub fn body(&self) -> Value {
        json!({ "error": self.reason() })
    }
}

/// An RFC 7230 quoted-string. The values quoted here are URLs and scope tokens, which never
/// contain `"` or `\`; escape them anyway.
fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// The token of an `Authorization` header value. `None` when there is no bearer token at all
/// (no header, or another scheme); an empty or malformed bearer credential is an invalid token.
///
/// # Errors
///
/// When the header says `Bearer` but carries no usable token.
pub fn bearer_token(header: Option<&[u8]>) -> Result<Option<&str>, Refusal> {
    let Some(header) = header else {
        return Ok(None);
    };
    let Ok(header) = std::str::from_utf8(header) else {
        return Err(Refusal::InvalidToken(
            "the Authorization header is not text".into(),
        ));
    };
    let header = header.trim();
    let (scheme, rest) = header.split_once(' ').unwrap_or((header, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Ok(None);
    }
    let token = rest.trim();
    if token.is_empty() || token.contains(' ') {
        return Err(Refusal::InvalidToken(
            "the Authorization header has no single bearer token".into(),
        ));
    }
    Ok(Some(token))
}

/// Verify `token` against `keys` and `cfg` at Unix time `now`: signature, `iss`, `aud`, `exp`
/// and `nbf`. Scopes are [`authorize`]'s job.
///
/// # Errors
///
/// The [`Refusal`] to answer with.
pub fn verify(
    token: Option<&str>,
    now: u64,
    keys: &Keys,
    cfg: &AuthConfig,
) -> Result<Claims, Refusal> {
    let token = token.ok_or(Refusal::MissingToken)?;
    let invalid = |why: String| Refusal::InvalidToken(why);
    // `none` is no `Algorithm`, so a token naming it fails here.
    let header = jsonwebtoken::decode_header(token)
        .map_err(|error| invalid(format!("malformed token or header: {}", describe(&error))))?;
    let key = keys.find(header.kid.as_deref())?;
    if !key.algorithms.contains(&header.alg) {
        return Err(invalid(format!(
            "the algorithm {:?} is not allowed with the issuer's key",
            header.alg
        )));
    }
    // jsonwebtoken checks the signature (and the algorithm against the key type); the claims
    // are checked below, against the time given rather than the clock.
    let mut validation = Validation::new(header.alg);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.decoding, &validation)
        .map_err(|error| invalid(describe(&error)))?;
    let claims = data.claims;

    match claims.get("iss").and_then(Value::as_str) {
        Some(iss) if iss == cfg.issuer => {}
        Some(iss) => return Err(invalid(format!("issued by {iss:?}, not {:?}", cfg.issuer))),
        None => return Err(invalid("the token has no issuer (iss)".into())),
    }
    let audience_ok = match claims.get("aud") {
        Some(Value::String(aud)) => *aud == cfg.resource,
        Some(Value::Array(auds)) => auds.iter().any(|aud| aud.as_str() == Some(&cfg.resource)),
        _ => false,
    };
    if !audience_ok {
        return Err(invalid(format!(
            "the token's audience (aud) does not include {}",
            cfg.resource
        )));
    }
    let exp = numeric_date(&claims, "exp")?
        .ok_or_else(|| invalid("the token has no expiry (exp)".into()))?;
    if now >= exp.saturating_add(LEEWAY_SECS) {
        return Err(invalid("the token has expired".into()));
    }
    if let Some(nbf) = numeric_date(&claims, "nbf")?
        && nbf > now.saturating_add(LEEWAY_SECS)
    {
        return Err(invalid("the token is not valid yet (nbf)".into()));
    }
    let scopes = match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(scope)), _) => scope.split_whitespace().map(str::to_owned).collect(),
        (None, Some(Value::Array(scp))) => scp
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        (None, Some(Value::String(scp))) => scp.split_whitespace().map(str::to_owned).collect(),
        (None, None) => Vec::new(),
        _ => return Err(invalid("the token's scope claim is malformed".into())),
    };
    let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
    Ok(Claims {
        sub: text("sub"),
        client_id: text("client_id"),
        scopes,
        exp,
    })
}

/// A NumericDate claim (RFC 7519 section 2), fractions dropped.
fn numeric_date(claims: &Map<String, Value>, name: &str) -> Result<Option<u64>, Refusal> {
    match claims.get(name) {
        None => Ok(None),
        Some(value) => value
            .as_u64()
            .or_else(|| {
                value
                    .as_f64()
                    .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
                    .map(|seconds| seconds as u64)
            })
            .map(Some)
            .ok_or_else(|| Refusal::InvalidToken(format!("the token's {name} is not a date"))),
    }
}

fn describe(error: &jsonwebtoken::errors::Error) -> String {
    match error.kind() {
        ErrorKind::InvalidSignature => "bad signature".into(),
        ErrorKind::InvalidAlgorithm => "the algorithm does not fit the issuer's key".into(),
        ErrorKind::InvalidToken => "not a JWT".into(),
        _ => error.to_string(),
    }
}

/// Whether `claims` allow this request: the base scope always, and the scope of every tool in
/// `tools` (the tools a POST calls).
///
/// # Errors
///
/// [`Refusal::InsufficientScope`] naming the scopes to ask for.
pub fn authorize(claims: &Claims, tools: &[&str], cfg: &AuthConfig) -> Result<(), Refusal> {
    let mut required = vec![cfg.base_scope.as_str()];
    for scope in tools.iter().filter_map(|tool| cfg.tool_scope(tool)) {
        if !required.contains(&scope) {
            required.push(scope);
        }
    }
    let missing: Vec<String> = required
        .iter()
        .filter(|scope| !claims.has_scope(scope))
        .map(|scope| (*scope).to_owned())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    // Ask for everything needed without dropping what the token already allows (MCP's scope
    // challenge: a client re-authorizing with this list loses nothing).
    let mut scope = required;
    for known in cfg.supported() {
        if claims.has_scope(known) && !scope.contains(&known) {
            scope.push(known);
        }
    }
    Err(Refusal::InsufficientScope {
        scope: scope.join(" "),
        missing,
    })
}

/// [`verify`], then [`authorize`] for calls of `tools`.
///
/// # Errors
///
/// The [`Refusal`] to answer with.
pub fn check(
    token: Option<&str>,
    tools: &[&str],
    now: u64,
    keys: &Keys,
    cfg: &AuthConfig,
) -> Result<Claims, Refusal> {
    let claims = verify(token, now, keys, cfg)?;
    authorize(&claims, tools, cfg)?;
    Ok(claims)
}

/// The tools a JSON-RPC POST body calls: the `params.name` of each `tools/call` request, in a
/// single message or a batch. A body that is not JSON calls nothing (rmcp rejects it).
pub fn called_tools(body: &[u8]) -> Vec<String> {
    fn tool(message: &Value) -> Option<String> {
        if message.get("method").and_then(Value::as_str) != Some("tools/call") {
            return None;
        }
        message
            .get("params")
            .and_then(|params| params.get("name"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(batch)) => batch.iter().filter_map(tool).collect(),
        Ok(message) => tool(&message).into_iter().collect(),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
