//! Gatehouse trust-root bundles: what an admin ships (docs/atsa.md §5, modelled on TUF's root).
//!
//! `{"signed": {...}, "signatures": [{"keyid", "sig"}]}`. The signatures are Ed25519 over the
//! RFC 8785 (JCS) form of `signed`. The `signed` part reuses the ATSA trust-root shape
//! (`scheme`, `keys`) unchanged and adds the bundle's identity, its own root keys and
//! threshold, expiry, posture, and per-server policy (allow-lists, tool pins, stdio bindings).
//!
//! Rules: valid when at least `threshold` distinct root keys of the bundle itself sign it (a key
//! id counts once); version N+1 replaces N only if a threshold of N's root keys AND of N+1's
//! root keys sign it; versions below the highest seen are refused (the host persists that
//! number); an expired bundle is refused; the first bundle of an id is trusted because an admin
//! installed it in a protected path. Pure: the caller passes `now`, the installed bundle and
//! the highest version seen.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use gatehouse_confine::ConfinementMode;
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::confinement::{EntryConfinement, parse_bundle_confinement, parse_entry_confinement};
use crate::json::parse_strict;
use crate::package::{PackageBinding, parse_package};
use crate::pins::parse_pin;
use crate::trust_root::{TrustRoot, decode_exact, parse_public_key};

/// The bundle `type` this version understands.
pub const BUNDLE_TYPE: &str = "gatehouse-trust-root";
/// Largest bundle file accepted.
pub const MAX_BUNDLE_BYTES: usize = 1024 * 1024;

/// What a bundle failed on. `code()` is the stable snake_case reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    #[error("invalid bundle: {0}")]
    Invalid(String),
    #[error(
        "bundle {bundle_id:?} version {version} expired at {expires}; ask the admin for a current bundle"
    )]
    Expired {
        bundle_id: String,
        version: u64,
        expires: String,
    },
    #[error(
        "bundle {bundle_id:?} version {version} has {valid} valid signature(s) from its root keys, needs {threshold}{detail}"
    )]
    ThresholdNotMet {
        bundle_id: String,
        version: u64,
        valid: usize,
        threshold: usize,
        detail: String,
    },
    #[error(
        "bundle {bundle_id:?} version {version} is older than version {highest}, already accepted on this machine; rollback refused"
    )]
    Rollback {
        bundle_id: String,
        version: u64,
        highest: u64,
    },
    #[error(
        "bundle {bundle_id:?} version {version} differs from the installed version {version} with the same number; a changed bundle needs a higher version"
    )]
    SameVersionChanged { bundle_id: String, version: u64 },
    #[error(
        "bundle {bundle_id:?} version {version} is not signed by {threshold} of the root keys of the installed version {installed} ({valid} valid); a rotation needs both the old and the new root keys"
    )]
    RotationNotAuthorized {
        bundle_id: String,
        version: u64,
        installed: u64,
        valid: usize,
        threshold: usize,
    },
    #[error("installed bundles conflict: {0}")]
    Conflict(String),
}

impl BundleError {
    pub fn code(&self) -> &'static str {
        match self {
            BundleError::Invalid(_) => "bundle_invalid",
            BundleError::Expired { .. } => "bundle_expired",
            BundleError::ThresholdNotMet { .. } => "bundle_threshold_not_met",
            BundleError::Rollback { .. } => "bundle_rollback",
            BundleError::SameVersionChanged { .. } => "bundle_version_reused",
            BundleError::RotationNotAuthorized { .. } => "bundle_rotation_not_authorized",
            BundleError::Conflict(_) => "bundle_conflict",
        }
    }
}

fn invalid<T>(detail: impl Into<String>) -> Result<T, BundleError> {
    Err(BundleError::Invalid(detail.into()))
}

/// How a host treats servers that are not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Posture {
    /// Refuse any failure and any unattested server.
    DenyByDefault,
    /// Show the failure; never treat it as success.
    Warn,
}

impl Posture {
    pub fn as_str(self) -> &'static str {
        match self {
            Posture::DenyByDefault => "deny-by-default",
            Posture::Warn => "warn",
        }
    }
    pub fn parse(text: &str) -> Option<Posture> {
        match text {
            "deny-by-default" => Some(Posture::DenyByDefault),
            "warn" => Some(Posture::Warn),
            _ => None,
        }
    }
}

/// A posture named on a command line or in an environment variable (CLI and desktop app
/// alike), with the one message that says what is accepted.
impl std::str::FromStr for Posture {
    type Err = String;

    fn from_str(text: &str) -> Result<Posture, String> {
        Posture::parse(text).ok_or_else(|| format!("{text:?} is not deny-by-default or warn"))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootKey {
    pub id: String,
    pub public_key: VerifyingKey,
}

/// How a stdio server is bound: the exact launch command and the executable's digest, plus
/// the attestation the admin vouches for (stdio servers have no origin to fetch one from).
#[derive(Debug, Clone, PartialEq)]
pub struct StdioBinding {
    pub command: String,
    pub args: Vec<String>,
    pub sha256: [u8; 32],
    pub attestation: Value,
}

/// A remote server that publishes no attestation of its own, vouched for by the bundle's
/// admins (specVersion 6): the attestation they signed for it and the exact endpoints
/// (origin and path) where it counts. The server's own well-known document is never
/// consulted for these endpoints, and the entry's id is admitted nowhere else.
#[derive(Debug, Clone, PartialEq)]
pub struct VouchedRemote {
    /// Exact endpoint URLs (`scheme://host[:port]/path`, no query, fragment or userinfo),
    /// each at one of the entry's `origins`. The path is bound too: one origin may host
    /// several tenants' servers.
    pub endpoints: Vec<String>,
    /// When the admins' word lapses, whatever the bundle's own expiry.
    pub expires: OffsetDateTime,
    /// The attestation the admins signed (as a stdio binding carries one).
    pub attestation: Value,
}

/// Per-server policy.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerPolicy {
    pub id: String,
    pub origins: Vec<String>,
    pub stdio: Option<StdioBinding>,
    /// `vouched` (specVersion 6): an admin-signed attestation for a remote server that
    /// publishes none, admitted only at `endpoints`. Needs `origins`; never with `stdio` or
    /// `package`.
    pub vouched: Option<VouchedRemote>,
    /// `package` (specVersion 4): an npm, PyPI or MCPB package bound by its bytes instead of
    /// an executable. Never together with `stdio`.
    pub package: Option<PackageBinding>,
    pub required_clearance: Option<String>,
    /// The closed allow-list: exact tool names.
    pub allowed_tools: Vec<String>,
    /// Tool name → `sha256:<hex>` of the JCS of its whole definition.
    pub tool_pins: BTreeMap<String, String>,
    pub url_elicitation_domains: Vec<String>,
    /// `authorizationServers`: the issuers whose sign-ins count for this server (exact
    /// issuer URLs); empty: whichever the server names.
    pub authorization_servers: Vec<String>,
    /// `allowedPrompts` (specVersion 2): exact prompt names.
    pub allowed_prompts: Vec<String>,
    /// `promptPins` (specVersion 2): prompt name → `sha256:<hex>` of the JCS of its whole
    /// definition.
    pub prompt_pins: BTreeMap<String, String>,
    /// `allowedResources` (specVersion 2): exact resource URIs.
    pub allowed_resources: Vec<String>,
    /// `allowedResourcePrefixes` (specVersion 2): URI prefixes, each ending in `/`
    /// ([`crate::resources`] has the matching rule).
    pub allowed_resource_prefixes: Vec<String>,
    /// `toolDefinitions` (specVersion 6): tool name → the whole definition as the server
    /// listed it, so a reviewer sees what a pin stands for. Every name is in `toolPins` and
    /// every definition hashes to its pin.
    pub tool_definitions: BTreeMap<String, Value>,
    /// `promptDefinitions` (specVersion 6): as `toolDefinitions`, against `promptPins`.
    pub prompt_definitions: BTreeMap<String, Value>,
    /// `confinement` (specVersion 7): the mode this entry asks for and what the server may
    /// read, write and reach. Only on an entry this machine runs (`stdio` or `package`).
    pub confinement: Option<EntryConfinement>,
}

/// The checked content of `signed`.
#[derive(Debug, Clone, PartialEq)]
pub struct BundleContent {
    /// `specVersion`: 1, 2 (which adds prompt and resource allow-lists), 3 (which adds
    /// `audit`), 4 (which adds a server entry's `package`), 5 (which adds
    /// `audit.retainDays`), 6 (which adds a server entry's `vouched`, `toolDefinitions`
    /// and `promptDefinitions`) or 7 (which adds `confinement`, bundle-wide and per entry).
    pub spec_version: u64,
    pub bundle_id: String,
    pub version: u64,
    pub expires: OffsetDateTime,
    pub threshold: usize,
    pub root_keys: Vec<RootKey>,
    pub posture: Posture,
    pub locked: bool,
    pub required_clearance: String,
    pub trust_root: TrustRoot,
    pub servers: Vec<ServerPolicy>,
    /// `audit` (specVersion 3): how hosts under this bundle make audit records durable.
    /// `None` also when `audit` names only a retention (specVersion 5).
    pub audit: Option<AuditDurability>,
    /// `audit.retainDays` (specVersion 5): hosts under this bundle keep audit records at
    /// least this many days ([`MAX_RETAIN_DAYS`] at most).
    pub audit_retain_days: Option<u32>,
    /// `confinement.mode` (specVersion 7): the confinement every local server under this
    /// bundle gets at least (the strictest of the policy, the bundles and the entry wins).
    pub confinement_mode: Option<ConfinementMode>,
}

/// The longest retention a bundle may name, in days (100 years): beyond it an admin means
/// "forever", which is what a host's `retain_days = 0` says; a bundle cannot shorten it.
pub const MAX_RETAIN_DAYS: u32 = 36_500;

/// What a bundle requires of the audit log's durability (`signed.audit`):
/// `{"durability": "sync"}` or `{"durability": "batched", "flushMs": 50, "flushRecords": 128}`
/// (both numbers optional: the host's own window, or a narrower one of the user's, applies
/// where one is not given).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditDurability {
    /// Every record on stable storage before its decision takes effect.
    Sync,
    /// Records flushed in the background within at most this window.
    Batched {
        flush_ms: Option<u64>,
        flush_records: Option<u32>,
    },
}

impl AuditDurability {
    /// The widest window a bundle may allow, as the host's own limits.
    pub const MAX_FLUSH_MS: u64 = 1000;
    pub const MAX_FLUSH_RECORDS: u32 = 10_000;

    /// The stricter of two: sync over batched, else the smaller of each number given.
    pub fn strictest(self, other: AuditDurability) -> AuditDurability {
        fn min<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, None) => a,
                (None, b) => b,
            }
        }
        match (self, other) {
            (AuditDurability::Sync, _) | (_, AuditDurability::Sync) => AuditDurability::Sync,
            (
                AuditDurability::Batched {
                    flush_ms: a,
                    flush_records: m,
                },
                AuditDurability::Batched {
                    flush_ms: b,
                    flush_records: n,
                },
            ) => AuditDurability::Batched {
                flush_ms: min(a, b),
                flush_records: min(m, n),
            },
        }
    }
}

/// `signed.audit`: its durability (when `durability` is given) and its retention (when
/// `retainDays` is given; specVersion 5, where `durability` may then be left out).
fn parse_audit(
    value: &Value,
    spec_version: u64,
) -> Result<(Option<AuditDurability>, Option<u32>), BundleError> {
    let Some(object) = value.as_object() else {
        return invalid("signed.audit must be an object");
    };
    // Refused by name below version 5: a host that knows only versions 3 and 4 would refuse
    // the key as unknown, and one that ignored it would delete what the admin asked to keep.
    if object.contains_key("retainDays") && spec_version < 5 {
        return invalid(
            "signed.audit.retainDays needs \"specVersion\": 5; raise the bundle's specVersion (and version) to use it",
        );
    }
    for key in object.keys() {
        if !matches!(
            key.as_str(),
            "durability" | "flushMs" | "flushRecords" | "retainDays"
        ) {
            let known = if spec_version < 5 {
                "durability, flushMs, flushRecords"
            } else {
                "durability, flushMs, flushRecords, retainDays"
            };
            return invalid(format!("signed.audit.{key} is not a setting ({known})"));
        }
    }
    let retain_days = match object.get("retainDays") {
        None => None,
        Some(v) => match v.as_u64() {
            Some(n) if (1..=u64::from(MAX_RETAIN_DAYS)).contains(&n) => Some(n as u32),
            _ => {
                return invalid(format!(
                    "signed.audit.retainDays must be an integer from 1 to {MAX_RETAIN_DAYS} (days to keep audit records; a host's own retain_days = 0 keeps them forever)"
                ));
            }
        },
    };
    if retain_days.is_some() && !object.contains_key("durability") {
        if object.contains_key("flushMs") || object.contains_key("flushRecords") {
            return invalid(
                "signed.audit: flushMs and flushRecords apply only to \"durability\": \"batched\"; add it",
            );
        }
        return Ok((None, retain_days));
    }
    Ok((Some(parse_durability(object)?), retain_days))
}

fn parse_durability(
    object: &serde_json::Map<String, Value>,
) -> Result<AuditDurability, BundleError> {
    let number = |key: &str, max: u64| -> Result<Option<u64>, BundleError> {
        match object.get(key) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if (1..=max).contains(&n) => Ok(Some(n)),
                _ => invalid(format!(
                    "signed.audit.{key} must be an integer from 1 to {max}"
                )),
            },
        }
    };
    match object.get("durability").and_then(Value::as_str) {
        Some("sync") => {
            if object.contains_key("flushMs") || object.contains_key("flushRecords") {
                return invalid(
                    "signed.audit: flushMs and flushRecords apply only to \"durability\": \"batched\"",
                );
            }
            Ok(AuditDurability::Sync)
        }
        Some("batched") => Ok(AuditDurability::Batched {
            flush_ms: number("flushMs", AuditDurability::MAX_FLUSH_MS)?,
            flush_records: number(
                "flushRecords",
                u64::from(AuditDurability::MAX_FLUSH_RECORDS),
            )?
            .map(|n| n as u32),
        }),
        _ => invalid("signed.audit.durability must be \"sync\" or \"batched\""),
    }
}

/// A parsed, structurally valid bundle whose signatures are not yet checked.
#[derive(Debug, Clone)]
pub struct Bundle {
    content: BundleContent,
    signed_jcs: Vec<u8>,
    signatures: Vec<(String, String)>,
}

/// Proof that a bundle met its threshold, is current, and is no rollback or unauthorized
/// rotation of the installed one. Only [`Bundle::verify`] makes one.
///
/// ```compile_fail
/// fn forge(b: &gatehouse_attest::bundle::VerifiedBundle) -> gatehouse_attest::bundle::VerifiedBundle { b.clone() }
/// ```
#[derive(Debug)]
pub struct VerifiedBundle {
    content: BundleContent,
    signed_sha256: [u8; 32],
    signers: Vec<String>,
}

impl VerifiedBundle {
    pub fn content(&self) -> &BundleContent {
        &self.content
    }
    /// `bundleId@version`, as shown in verdicts and the audit log.
    pub fn label(&self) -> String {
        format!("{}@{}", self.content.bundle_id, self.content.version)
    }
    pub fn signed_sha256_hex(&self) -> String {
        hex::encode(self.signed_sha256)
    }
    /// Root key ids whose signatures counted.
    pub fn signers(&self) -> &[String] {
        &self.signers
    }
}

fn text<'a>(value: &'a Value, path: &str) -> Result<&'a str, BundleError> {
    match value.as_str() {
        Some(s) if !s.is_empty() => Ok(s),
        _ => invalid(format!("{path} must be a non-empty string")),
    }
}

fn texts(value: Option<&Value>, path: &str) -> Result<Vec<String>, BundleError> {
    match value {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| text(v, &format!("{path}[{i}]")).map(str::to_string))
            .collect(),
        Some(_) => invalid(format!("{path} must be an array of strings")),
    }
}

fn field<'a>(object: &'a Value, key: &str, path: &str) -> Result<&'a Value, BundleError> {
    object
        .get(key)
        .ok_or_else(|| BundleError::Invalid(format!("{path}.{key} is missing")))
}

fn is_identifier(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// A name → pin map (`toolPins`, `promptPins`) whose every name is on `names`.
fn parse_pins(
    raw: Option<&Value>,
    names: &[String],
    path: &str,
    list: &str,
) -> Result<BTreeMap<String, String>, BundleError> {
    let mut out = BTreeMap::new();
    match raw {
        None | Some(Value::Null) => {}
        Some(Value::Object(pins)) => {
            for (name, pin) in pins {
                let pin = text(pin, &format!("{path}.{name}"))?;
                parse_pin(pin).map_err(|e| BundleError::Invalid(format!("{path}.{name}: {e}")))?;
                if !names.contains(name) {
                    return invalid(format!("{path} pins {name:?}, which is not in {list}"));
                }
                out.insert(name.clone(), pin.to_string());
            }
        }
        Some(_) => return invalid(format!("{path} must be an object of name to pin")),
    }
    Ok(out)
}

/// A list of distinct non-empty strings.
fn distinct_texts(value: Option<&Value>, path: &str) -> Result<Vec<String>, BundleError> {
    let items = texts(value, path)?;
    let unique: BTreeSet<&String> = items.iter().collect();
    if unique.len() != items.len() {
        return invalid(format!("{path} lists an entry twice"));
    }
    Ok(items)
}

/// The specVersion 2 keys of a server entry; refused by name in a version 1 bundle, so an
/// admin never believes a list is enforced by a host that would not read it.
const V2_SERVER_KEYS: [&str; 4] = [
    "allowedPrompts",
    "promptPins",
    "allowedResources",
    "allowedResourcePrefixes",
];

fn parse_server(raw: &Value, path: &str, spec_version: u64) -> Result<ServerPolicy, BundleError> {
    let id = text(field(raw, "id", path)?, &format!("{path}.id"))?.to_string();
    let origins = texts(raw.get("origins"), &format!("{path}.origins"))?;
    for origin in &origins {
        let url = url::Url::parse(origin).map_err(|e| {
            BundleError::Invalid(format!("{path}.origins: {origin:?} is not a URL ({e})"))
        })?;
        if !matches!(url.scheme(), "https" | "http") || !url.origin().is_tuple() {
            return invalid(format!(
                "{path}.origins: {origin:?} is not an http(s) origin"
            ));
        }
    }
    let stdio = match raw.get("stdio") {
        None | Some(Value::Null) => None,
        Some(stdio) => {
            let sp = format!("{path}.stdio");
            let command =
                text(field(stdio, "command", &sp)?, &format!("{sp}.command"))?.to_string();
            let args = texts(stdio.get("args"), &format!("{sp}.args"))?;
            let digest = text(field(stdio, "sha256", &sp)?, &format!("{sp}.sha256"))?;
            let mut sha256 = [0u8; 32];
            if digest.len() != 64
                || digest.bytes().any(|b| b.is_ascii_uppercase())
                || hex::decode_to_slice(digest, &mut sha256).is_err()
            {
                return invalid(format!("{sp}.sha256 must be 64 lower-case hex digits"));
            }
            let attestation = field(stdio, "attestation", &sp)?;
            if !attestation.is_object() {
                return invalid(format!(
                    "{sp}.attestation must be a signed attestation document (an object)"
                ));
            }
            Some(StdioBinding {
                command,
                args,
                sha256,
                attestation: attestation.clone(),
            })
        }
    };
    // Refused by name below version 4, like the V2 keys: a host that would not read it must
    // never leave an admin believing the package is bound.
    let package = match raw.get("package") {
        None => None,
        Some(_) if spec_version < 4 => {
            return invalid(format!(
                "{path}.package needs \"specVersion\": 4; raise the bundle's specVersion (and version) to use it"
            ));
        }
        Some(raw) => {
            Some(parse_package(raw, &format!("{path}.package")).map_err(BundleError::Invalid)?)
        }
    };
    if stdio.is_some() && package.is_some() {
        return invalid(format!(
            "{path} ({id}) has both stdio and package; a server is bound by its executable or by its package, so keep one"
        ));
    }
    let vouched = match raw.get("vouched") {
        None => None,
        Some(_) if spec_version < 6 => {
            return invalid(format!(
                "{path}.vouched needs \"specVersion\": 6; raise the bundle's specVersion (and version) to use it"
            ));
        }
        Some(raw) => Some(parse_vouched(raw, &format!("{path}.vouched"), &origins)?),
    };
    if vouched.is_some() && (stdio.is_some() || package.is_some()) {
        return invalid(format!(
            "{path} ({id}) is vouched for as a remote server and also has a stdio or package binding; a vouched entry binds endpoints only, so keep one"
        ));
    }
    if origins.is_empty() && stdio.is_none() && package.is_none() {
        return invalid(format!(
            "{path} ({id}) has neither origins nor a stdio or package binding, so nothing can match it"
        ));
    }
    let required_clearance = match raw.get("requiredClearance") {
        None | Some(Value::Null) => None,
        Some(v) => Some(text(v, &format!("{path}.requiredClearance"))?.to_string()),
    };
    let allowed_tools = distinct_texts(raw.get("allowedTools"), &format!("{path}.allowedTools"))?;
    let tool_pins = parse_pins(
        raw.get("toolPins"),
        &allowed_tools,
        &format!("{path}.toolPins"),
        "allowedTools",
    )?;
    if spec_version < 2
        && let Some(key) = V2_SERVER_KEYS.iter().find(|key| raw.get(**key).is_some())
    {
        return invalid(format!(
            "{path}.{key} needs \"specVersion\": 2; raise the bundle's specVersion (and version) to use it"
        ));
    }
    let allowed_prompts =
        distinct_texts(raw.get("allowedPrompts"), &format!("{path}.allowedPrompts"))?;
    let prompt_pins = parse_pins(
        raw.get("promptPins"),
        &allowed_prompts,
        &format!("{path}.promptPins"),
        "allowedPrompts",
    )?;
    let allowed_resources = distinct_texts(
        raw.get("allowedResources"),
        &format!("{path}.allowedResources"),
    )?;
    for uri in &allowed_resources {
        crate::resources::entries::check_exact_uri(uri)
            .map_err(|e| BundleError::Invalid(format!("{path}.allowedResources: {e}")))?;
    }
    let allowed_resource_prefixes = distinct_texts(
        raw.get("allowedResourcePrefixes"),
        &format!("{path}.allowedResourcePrefixes"),
    )?;
    for prefix in &allowed_resource_prefixes {
        crate::resources::entries::check_prefix(prefix)
            .map_err(|e| BundleError::Invalid(format!("{path}.allowedResourcePrefixes: {e}")))?;
    }
    let url_elicitation_domains = texts(
        raw.get("urlElicitationDomains"),
        &format!("{path}.urlElicitationDomains"),
    )?;
    let authorization_servers = texts(
        raw.get("authorizationServers"),
        &format!("{path}.authorizationServers"),
    )?;
    for issuer in &authorization_servers {
        let url = url::Url::parse(issuer).map_err(|e| {
            BundleError::Invalid(format!(
                "{path}.authorizationServers: {issuer:?} is not a URL ({e})"
            ))
        })?;
        let loopback = matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
        if !(url.scheme() == "https" || (url.scheme() == "http" && loopback))
            || url.query().is_some()
            || url.fragment().is_some()
        {
            return invalid(format!(
                "{path}.authorizationServers: {issuer:?} is not an issuer (an https URL without query or fragment; http only on loopback)"
            ));
        }
    }
    let tool_definitions = parse_definitions(
        raw.get("toolDefinitions"),
        &tool_pins,
        &format!("{path}.toolDefinitions"),
        "toolPins",
        crate::pins::tool_pin,
        spec_version,
    )?;
    let prompt_definitions = parse_definitions(
        raw.get("promptDefinitions"),
        &prompt_pins,
        &format!("{path}.promptDefinitions"),
        "promptPins",
        crate::pins::prompt_pin,
        spec_version,
    )?;
    let confinement = parse_entry_confinement(
        raw.get("confinement"),
        path,
        &id,
        stdio.is_some() || package.is_some(),
        spec_version,
    )
    .map_err(BundleError::Invalid)?;
    Ok(ServerPolicy {
        id,
        origins,
        stdio,
        vouched,
        package,
        required_clearance,
        allowed_tools,
        tool_pins,
        url_elicitation_domains,
        authorization_servers,
        allowed_prompts,
        prompt_pins,
        allowed_resources,
        allowed_resource_prefixes,
        tool_definitions,
        prompt_definitions,
        confinement,
    })
}

/// `toolDefinitions` / `promptDefinitions` (specVersion 6): name → whole definition. A
/// definition is only a copy for reviewers (the host enforces the pin, never the copy), so a
/// copy that does not hash to its pin, or one for a name with no pin, is refused: a bundle
/// that contradicts itself would show a reviewer something other than what is enforced.
fn parse_definitions(
    raw: Option<&Value>,
    pins: &BTreeMap<String, String>,
    path: &str,
    pins_key: &str,
    pin_of: fn(&Value) -> String,
    spec_version: u64,
) -> Result<BTreeMap<String, Value>, BundleError> {
    let mut out = BTreeMap::new();
    let definitions = match raw {
        None => return Ok(out),
        // Refused by name below version 6, like the other versioned keys.
        Some(_) if spec_version < 6 => {
            return invalid(format!(
                "{path} needs \"specVersion\": 6; raise the bundle's specVersion (and version) to use it"
            ));
        }
        Some(Value::Object(definitions)) => definitions,
        Some(_) => return invalid(format!("{path} must be an object of name to definition")),
    };
    for (name, definition) in definitions {
        let Some(pin) = pins.get(name) else {
            return invalid(format!(
                "{path} carries {name:?}, which {pins_key} does not pin; pin it or drop the definition"
            ));
        };
        if !definition.is_object() {
            return invalid(format!(
                "{path}.{name} must be the whole definition (an object)"
            ));
        }
        if definition.get("name").and_then(Value::as_str) != Some(name.as_str()) {
            return invalid(format!(
                "{path}.{name}: the definition's \"name\" is not {name:?}"
            ));
        }
        let carried = pin_of(definition);
        if &carried != pin {
            return invalid(format!(
                "{path}.{name} hashes to {carried}, not to its pin {pin} in {pins_key}; the bundle contradicts itself (re-run add-server to write both from the same listing)"
            ));
        }
        out.insert(name.clone(), definition.clone());
    }
    Ok(out)
}

/// The keys a `vouched` object may hold; anything else is refused, so a misspelt key never
/// leaves an admin believing it binds something.
const VOUCHED_KEYS: [&str; 3] = ["endpoints", "expires", "attestation"];

fn parse_vouched(
    raw: &Value,
    path: &str,
    origins: &[String],
) -> Result<VouchedRemote, BundleError> {
    let Some(object) = raw.as_object() else {
        return invalid(format!(
            "{path} must be an object with endpoints, expires and attestation"
        ));
    };
    if let Some(key) = object.keys().find(|k| !VOUCHED_KEYS.contains(&k.as_str())) {
        return invalid(format!(
            "{path}.{key} is not a key of vouched (endpoints, expires, attestation)"
        ));
    }
    if origins.is_empty() {
        return invalid(format!(
            "{path} needs the entry's origins: a vouched server is admitted only at origins the entry lists"
        ));
    }
    let endpoints = distinct_texts(raw.get("endpoints"), &format!("{path}.endpoints"))?;
    if endpoints.is_empty() {
        return invalid(format!(
            "{path}.endpoints must list at least one endpoint URL (the URL a client connects to)"
        ));
    }
    for endpoint in &endpoints {
        let url = url::Url::parse(endpoint).map_err(|e| {
            BundleError::Invalid(format!("{path}.endpoints: {endpoint:?} is not a URL ({e})"))
        })?;
        if !matches!(url.scheme(), "https" | "http")
            || url.query().is_some()
            || url.fragment().is_some()
            || !url.username().is_empty()
            || url.password().is_some()
        {
            return invalid(format!(
                "{path}.endpoints: {endpoint:?} must be an http(s) URL with no query, fragment or userinfo"
            ));
        }
        if url.as_str() != endpoint.as_str() {
            return invalid(format!(
                "{path}.endpoints: {endpoint:?} is not in normal form; write {:?}",
                url.as_str()
            ));
        }
        if !origins
            .iter()
            .any(|o| crate::origin::same_origin(o, &url.origin().ascii_serialization()))
        {
            return invalid(format!(
                "{path}.endpoints: {endpoint:?} is not at one of the entry's origins {origins:?}"
            ));
        }
    }
    let expires_text = text(field(raw, "expires", path)?, &format!("{path}.expires"))?;
    let expires = OffsetDateTime::parse(expires_text, &Rfc3339).map_err(|_| {
        BundleError::Invalid(format!(
            "{path}.expires {expires_text:?} is not an RFC 3339 time"
        ))
    })?;
    let attestation = field(raw, "attestation", path)?;
    if !attestation.is_object() {
        return invalid(format!(
            "{path}.attestation must be a signed attestation document (an object)"
        ));
    }
    Ok(VouchedRemote {
        endpoints,
        expires,
        attestation: attestation.clone(),
    })
}

fn parse_content(signed: &Value) -> Result<BundleContent, BundleError> {
    if !signed.is_object() {
        return invalid("\"signed\" must be an object");
    }
    let p = "signed";
    if signed.get("type").and_then(Value::as_str) != Some(BUNDLE_TYPE) {
        return invalid(format!("signed.type must be {BUNDLE_TYPE:?}"));
    }
    let spec_version = match signed.get("specVersion").and_then(Value::as_u64) {
        Some(version @ (1..=7)) => version,
        _ => {
            return invalid(
                "signed.specVersion must be 1, 2, 3, 4, 5, 6 or 7 (the versions this Gatehouse understands)",
            );
        }
    };
    let bundle_id = text(field(signed, "bundleId", p)?, "signed.bundleId")?.to_string();
    if !is_identifier(&bundle_id) {
        return invalid("signed.bundleId must be 1 to 128 characters from A-Z a-z 0-9 . _ -");
    }
    let version = match signed.get("version").and_then(Value::as_u64) {
        Some(v) if v >= 1 => v,
        _ => return invalid("signed.version must be an integer of at least 1"),
    };
    let expires_text = text(field(signed, "expires", p)?, "signed.expires")?;
    let expires = OffsetDateTime::parse(expires_text, &Rfc3339).map_err(|_| {
        BundleError::Invalid(format!(
            "signed.expires {expires_text:?} is not an RFC 3339 time"
        ))
    })?;
    let root = field(signed, "root", p)?;
    let Some(Value::Array(raw_root_keys)) = root.get("keys") else {
        return invalid("signed.root.keys must be an array");
    };
    let mut root_keys: Vec<RootKey> = Vec::new();
    for (i, raw) in raw_root_keys.iter().enumerate() {
        let id = text(
            field(raw, "id", "signed.root.keys[]")?,
            &format!("signed.root.keys[{i}].id"),
        )?
        .to_string();
        let public_key = parse_public_key(text(
            field(raw, "publicKey", "signed.root.keys[]")?,
            "publicKey",
        )?)
        .map_err(|e| BundleError::Invalid(format!("root key {id:?}: publicKey is {e}")))?;
        if root_keys.iter().any(|k| k.id == id) {
            return invalid(format!("the root key id {id:?} appears twice"));
        }
        if root_keys.iter().any(|k| k.public_key == public_key) {
            return invalid(format!(
                "root key {id:?} repeats another root key's public key; each key counts once"
            ));
        }
        root_keys.push(RootKey { id, public_key });
    }
    let threshold = match root.get("threshold").and_then(Value::as_u64) {
        Some(t) if t >= 1 && (t as usize) <= root_keys.len() => t as usize,
        _ => {
            return invalid(format!(
                "signed.root.threshold must be an integer from 1 to the number of root keys ({})",
                root_keys.len()
            ));
        }
    };
    let posture_text = text(field(signed, "posture", p)?, "signed.posture")?;
    let posture = Posture::parse(posture_text).ok_or_else(|| {
        BundleError::Invalid(format!(
            "signed.posture {posture_text:?} is not \"deny-by-default\" or \"warn\""
        ))
    })?;
    let locked = match signed.get("locked") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return invalid("signed.locked must be true or false"),
    };
    let trust_root =
        TrustRoot::from_value(signed).map_err(|e| BundleError::Invalid(e.to_string()))?;
    let required_clearance = text(
        field(signed, "requiredClearance", p)?,
        "signed.requiredClearance",
    )?
    .to_string();
    let resolves = |name: &str, path: &str| -> Result<(), BundleError> {
        match trust_root.scheme.resolve(name) {
            Some(_) => Ok(()),
            None => invalid(format!(
                "{path} {name:?} is not a level of scheme {:?}",
                trust_root.scheme.name
            )),
        }
    };
    resolves(&required_clearance, "signed.requiredClearance")?;
    let mut servers: Vec<ServerPolicy> = Vec::new();
    match signed.get("servers") {
        None => {}
        Some(Value::Array(raw_servers)) => {
            for (i, raw) in raw_servers.iter().enumerate() {
                let server = parse_server(raw, &format!("signed.servers[{i}]"), spec_version)?;
                if let Some(level) = &server.required_clearance {
                    resolves(level, &format!("signed.servers[{i}].requiredClearance"))?;
                }
                if servers.iter().any(|s| s.id == server.id) {
                    return invalid(format!("the server id {:?} appears twice", server.id));
                }
                servers.push(server);
            }
        }
        Some(_) => return invalid("signed.servers must be an array"),
    }
    // A host that understands only versions 1 and 2 refuses a version 3 bundle as a whole,
    // rather than load it and silently ignore what it says about the audit log.
    let (audit, audit_retain_days) = match signed.get("audit") {
        None => (None, None),
        Some(_) if spec_version < 3 => {
            return invalid(
                "signed.audit needs \"specVersion\": 3; raise the bundle's specVersion (and version) to use it",
            );
        }
        Some(value) => parse_audit(value, spec_version)?,
    };
    let confinement_mode = parse_bundle_confinement(signed.get("confinement"), spec_version)
        .map_err(BundleError::Invalid)?;
    Ok(BundleContent {
        spec_version,
        bundle_id,
        version,
        expires,
        threshold,
        root_keys,
        posture,
        locked,
        required_clearance,
        trust_root,
        servers,
        audit,
        audit_retain_days,
        confinement_mode,
    })
}

/// The bytes every bundle signature covers: RFC 8785 JCS of `signed`.
pub fn signing_bytes(signed: &Value) -> Result<Vec<u8>, BundleError> {
    serde_jcs::to_vec(signed)
        .map_err(|e| BundleError::Invalid(format!("cannot canonicalize \"signed\": {e}")))
}

/// A signature entry for a bundle: `{"keyid", "sig"}`.
pub fn sign_bundle(signed: &Value, key_id: &str, key: &SigningKey) -> Result<Value, BundleError> {
    let bytes = signing_bytes(signed)?;
    Ok(json!({"keyid": key_id, "sig": STANDARD.encode(key.sign(&bytes).to_bytes())}))
}

impl Bundle {
    /// Parses a bundle file strictly and checks its structure; signatures are checked by
    /// [`Bundle::verify`].
    pub fn parse(bytes: &[u8]) -> Result<Bundle, BundleError> {
        let value = parse_strict(bytes, MAX_BUNDLE_BYTES, crate::MAX_DEPTH)
            .map_err(|e| BundleError::Invalid(e.to_string()))?;
        let signed = value
            .get("signed")
            .ok_or_else(|| BundleError::Invalid("no \"signed\" part".into()))?;
        let content = parse_content(signed)?;
        let signed_jcs = signing_bytes(signed)?;
        let signatures = match value.get("signatures") {
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let keyid = text(
                        field(s, "keyid", "signatures[]")?,
                        &format!("signatures[{i}].keyid"),
                    )?;
                    let sig = text(
                        field(s, "sig", "signatures[]")?,
                        &format!("signatures[{i}].sig"),
                    )?;
                    Ok((keyid.to_string(), sig.to_string()))
                })
                .collect::<Result<Vec<_>, BundleError>>()?,
            None => Vec::new(),
            Some(_) => return invalid("\"signatures\" must be an array"),
        };
        Ok(Bundle {
            content,
            signed_jcs,
            signatures,
        })
    }

    pub fn content(&self) -> &BundleContent {
        &self.content
    }

    /// Distinct root key ids (of `keys`) whose signature verifies over `signed`.
    fn valid_signers(&self, keys: &[RootKey]) -> Vec<String> {
        let mut counted: Vec<String> = Vec::new();
        for (keyid, sig) in &self.signatures {
            if counted.contains(keyid) {
                continue;
            }
            let Some(key) = keys.iter().find(|k| &k.id == keyid) else {
                continue;
            };
            let Ok(sig) = decode_exact::<64>(sig) else {
                continue;
            };
            if key
                .public_key
                .verify_strict(&self.signed_jcs, &Signature::from_bytes(&sig))
                .is_ok()
            {
                counted.push(keyid.clone());
            }
        }
        counted
    }

    /// Checks an already-installed bundle as the base of a rotation: its own threshold only.
    /// Its expiry does not matter here: an expired bundle's root keys still authorize its
    /// successor (as in TUF), otherwise an expired root could never be replaced.
    pub fn verify_as_installed(&self) -> Result<VerifiedBundle, BundleError> {
        let c = &self.content;
        let signers = self.valid_signers(&c.root_keys);
        if signers.len() < c.threshold {
            return Err(BundleError::ThresholdNotMet {
                bundle_id: c.bundle_id.clone(),
                version: c.version,
                valid: signers.len(),
                threshold: c.threshold,
                detail: " (the installed bundle)".into(),
            });
        }
        Ok(VerifiedBundle {
            content: c.clone(),
            signed_sha256: Sha256::digest(&self.signed_jcs).into(),
            signers,
        })
    }

    /// Checks the bundle at `now` against what this machine already has: the installed bundle
    /// of the same id (for rotation) and the highest version ever accepted for that id (for
    /// rollback).
    pub fn verify(
        &self,
        now: OffsetDateTime,
        installed: Option<&VerifiedBundle>,
        highest_seen: Option<u64>,
    ) -> Result<VerifiedBundle, BundleError> {
        let c = &self.content;
        let (bundle_id, version) = (c.bundle_id.clone(), c.version);
        if now >= c.expires {
            return Err(BundleError::Expired {
                bundle_id,
                version,
                expires: c.expires.format(&Rfc3339).unwrap_or_default(),
            });
        }
        let signers = self.valid_signers(&c.root_keys);
        if signers.len() < c.threshold {
            let unknown: Vec<&str> = self
                .signatures
                .iter()
                .filter(|(id, _)| !c.root_keys.iter().any(|k| &k.id == id))
                .map(|(id, _)| id.as_str())
                .collect();
            let detail = if unknown.is_empty() {
                String::new()
            } else {
                format!(" (signatures from keys not in its root: {unknown:?})")
            };
            return Err(BundleError::ThresholdNotMet {
                bundle_id,
                version,
                valid: signers.len(),
                threshold: c.threshold,
                detail,
            });
        }
        if let Some(highest) = highest_seen
            && version < highest
        {
            return Err(BundleError::Rollback {
                bundle_id,
                version,
                highest,
            });
        }
        let signed_sha256: [u8; 32] = Sha256::digest(&self.signed_jcs).into();
        if let Some(installed) = installed.filter(|i| i.content.bundle_id == c.bundle_id) {
            let before = &installed.content;
            if version < before.version {
                return Err(BundleError::Rollback {
                    bundle_id,
                    version,
                    highest: before.version,
                });
            }
            if version == before.version {
                if signed_sha256 != installed.signed_sha256 {
                    return Err(BundleError::SameVersionChanged { bundle_id, version });
                }
            } else {
                let old_signers = self.valid_signers(&before.root_keys);
                if old_signers.len() < before.threshold {
                    return Err(BundleError::RotationNotAuthorized {
                        bundle_id,
                        version,
                        installed: before.version,
                        valid: old_signers.len(),
                        threshold: before.threshold,
                    });
                }
            }
        }
        Ok(VerifiedBundle {
            content: c.clone(),
            signed_sha256,
            signers,
        })
    }
}

/// Several installed bundles, combined under written rules:
/// - bundle ids are distinct;
/// - a signer key id claimed by two bundles must be the same public key (else an error, not a
///   coin toss);
/// - a server id is governed by one bundle only;
/// - the strictest posture wins (deny-by-default over warn), and one locked bundle locks all.
#[derive(Debug)]
pub struct TrustStore {
    bundles: Vec<VerifiedBundle>,
}

impl TrustStore {
    pub fn combine(mut bundles: Vec<VerifiedBundle>) -> Result<TrustStore, BundleError> {
        bundles.sort_by(|a, b| a.content.bundle_id.cmp(&b.content.bundle_id));
        Self::check_combinable(&bundles.iter().collect::<Vec<_>>())?;
        Ok(TrustStore { bundles })
    }

    /// The combination rules of [`TrustStore::combine`], without taking the bundles, so a
    /// host can try a subset first.
    pub fn check_combinable(bundles: &[&VerifiedBundle]) -> Result<(), BundleError> {
        for (i, a) in bundles.iter().enumerate() {
            for b in &bundles[i + 1..] {
                let (ac, bc) = (&a.content, &b.content);
                if ac.bundle_id == bc.bundle_id {
                    return Err(BundleError::Conflict(format!(
                        "two installed bundles are both {:?}",
                        ac.bundle_id
                    )));
                }
                for key in &ac.trust_root.keys {
                    if let Some(other) = bc.trust_root.key(&key.id)
                        && other.public_key != key.public_key
                    {
                        return Err(BundleError::Conflict(format!(
                            "signer key id {:?} is a different key in {} and {}",
                            key.id,
                            a.label(),
                            b.label()
                        )));
                    }
                }
                for server in &ac.servers {
                    // The same command line bound under two ids: the second must not silently
                    // lose (or win) depending on load order.
                    if let Some(binding) = &server.stdio
                        && let Some(other) = bc.servers.iter().find(|s| {
                            s.id != server.id
                                && s.stdio.as_ref().is_some_and(|o| {
                                    o.command == binding.command && o.args == binding.args
                                })
                        })
                    {
                        return Err(BundleError::Conflict(format!(
                            "the stdio command {:?} {:?} is bound as {:?} in {} and as {:?} in {}",
                            binding.command,
                            binding.args,
                            server.id,
                            a.label(),
                            other.id,
                            b.label()
                        )));
                    }
                    // Likewise one package version bound under two ids.
                    if let Some(binding) = &server.package
                        && let Some(other) = bc.servers.iter().find(|s| {
                            s.id != server.id
                                && s.package.as_ref().is_some_and(|o| {
                                    o.ecosystem == binding.ecosystem
                                        && o.package.name == binding.package.name
                                        && o.package.version == binding.package.version
                                })
                        })
                    {
                        return Err(BundleError::Conflict(format!(
                            "the {} package {}@{} is bound as {:?} in {} and as {:?} in {}",
                            binding.ecosystem.as_str(),
                            binding.package.name,
                            binding.package.version,
                            server.id,
                            a.label(),
                            other.id,
                            b.label()
                        )));
                    }
                    // One endpoint vouched for under two ids: the same rule.
                    if let Some(vouched) = &server.vouched
                        && let Some((other, endpoint)) = bc.servers.iter().find_map(|s| {
                            let theirs = s.vouched.as_ref()?;
                            let shared = vouched
                                .endpoints
                                .iter()
                                .find(|e| theirs.endpoints.contains(e))?;
                            (s.id != server.id).then_some((s, shared))
                        })
                    {
                        return Err(BundleError::Conflict(format!(
                            "the endpoint {endpoint:?} is vouched for as {:?} in {} and as {:?} in {}",
                            server.id,
                            a.label(),
                            other.id,
                            b.label()
                        )));
                    }
                    if bc.servers.iter().any(|s| s.id == server.id) {
                        return Err(BundleError::Conflict(format!(
                            "server {:?} is governed by both {} and {}",
                            server.id,
                            a.label(),
                            b.label()
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    pub fn bundles(&self) -> &[VerifiedBundle] {
        &self.bundles
    }

    /// The strictest posture of any bundle; `None` when there are no bundles.
    pub fn posture(&self) -> Option<Posture> {
        let postures: Vec<Posture> = self.bundles.iter().map(|b| b.content.posture).collect();
        if postures.contains(&Posture::DenyByDefault) {
            Some(Posture::DenyByDefault)
        } else {
            postures.first().copied()
        }
    }

    pub fn locked(&self) -> bool {
        self.bundles.iter().any(|b| b.content.locked)
    }

    /// The strictest audit durability any bundle requires, with the labels of the bundles
    /// that set one; `None` when none does.
    pub fn audit_durability(&self) -> Option<(AuditDurability, Vec<String>)> {
        let mut combined: Option<AuditDurability> = None;
        let mut labels = Vec::new();
        for bundle in &self.bundles {
            if let Some(audit) = bundle.content.audit {
                combined = Some(combined.map_or(audit, |c| c.strictest(audit)));
                labels.push(bundle.label());
            }
        }
        combined.map(|c| (c, labels))
    }

    /// The longest audit retention any bundle requires (the strictest: it keeps the most),
    /// with the labels of the bundles that name that many days; `None` when none sets one.
    pub fn audit_retention(&self) -> Option<(u32, Vec<String>)> {
        let longest = self
            .bundles
            .iter()
            .filter_map(|b| b.content.audit_retain_days)
            .max()?;
        let labels = self
            .bundles
            .iter()
            .filter(|b| b.content.audit_retain_days == Some(longest))
            .map(VerifiedBundle::label)
            .collect();
        Some((longest, labels))
    }

    /// The strictest confinement mode any bundle requires of every local server, with the
    /// labels of the bundles that set that mode; `None` when none sets one.
    pub fn confinement_mode(&self) -> Option<(ConfinementMode, Vec<String>)> {
        let strictest = self
            .bundles
            .iter()
            .filter_map(|b| b.content.confinement_mode)
            .max()?;
        let labels = self
            .bundles
            .iter()
            .filter(|b| b.content.confinement_mode == Some(strictest))
            .map(VerifiedBundle::label)
            .collect();
        Some((strictest, labels))
    }

    /// The bundle and policy governing a server id.
    pub fn server(&self, id: &str) -> Option<(&VerifiedBundle, &ServerPolicy)> {
        self.bundles.iter().find_map(|b| {
            b.content
                .servers
                .iter()
                .find(|s| s.id == id)
                .map(|s| (b, s))
        })
    }
}

impl fmt::Display for Posture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Posture;

    #[test]
    fn a_posture_is_named_exactly_or_refused_with_what_is_accepted() {
        assert_eq!("warn".parse::<Posture>(), Ok(Posture::Warn));
        assert_eq!(
            "deny-by-default".parse::<Posture>(),
            Ok(Posture::DenyByDefault)
        );
        for look_alike in ["Warn", "warn ", "deny_by_default", "allow", ""] {
            let error = look_alike.parse::<Posture>().unwrap_err();
            assert_eq!(
                error,
                format!("{look_alike:?} is not deny-by-default or warn")
            );
        }
    }
}
