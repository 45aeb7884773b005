//! Rules 0–8 of ATSA 1.0, in order, stopping at the first failure.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, Signer, SigningKey};
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use crate::canonical;
use crate::json::parse_strict;
use crate::origin::same_origin;
use crate::trust_root::{NotAfter, TrustRoot, decode_exact};
use crate::{MAX_DEPTH, MAX_DOCUMENT_BYTES};

/// The ATSA error registry. The snake_case name and the code are stable: they appear unchanged
/// in the CLI's JSON, the audit log and the UI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// 0: `v` malformed or MAJOR ≠ 1.
    UnsupportedVersion,
    /// 1: no document, unparseable, schema-invalid, or no `mcp-server` capability.
    NotMcpServer,
    /// 2: `signerKeyId` or `signature` missing or empty.
    Unsigned,
    /// 3: `signerKeyId` not in the trust root.
    SignerNotTrusted,
    /// 4: the key's `notAfter` is at or before now, or unparseable.
    SignerExpired,
    /// 5: the clearance (by canonical name) is not approved for the key, or not in the scheme.
    SignerNotApproved,
    /// 6: the signature does not verify over the canonical body.
    BadSignature,
    /// 7: the clearance ranks below the required level.
    BelowRequired,
    /// 8: `netAllowedHosts` is non-empty and the connected origin is not in it.
    HostNotBound,
    /// 9: tool authorization: the tool is not on the server's allow-list.
    ToolNotAdmitted,
}

impl Reason {
    pub fn code(self) -> u8 {
        match self {
            Reason::UnsupportedVersion => 0,
            Reason::NotMcpServer => 1,
            Reason::Unsigned => 2,
            Reason::SignerNotTrusted => 3,
            Reason::SignerExpired => 4,
            Reason::SignerNotApproved => 5,
            Reason::BadSignature => 6,
            Reason::BelowRequired => 7,
            Reason::HostNotBound => 8,
            Reason::ToolNotAdmitted => 9,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::UnsupportedVersion => "unsupported_version",
            Reason::NotMcpServer => "not_mcp_server",
            Reason::Unsigned => "unsigned",
            Reason::SignerNotTrusted => "signer_not_trusted",
            Reason::SignerExpired => "signer_expired",
            Reason::SignerNotApproved => "signer_not_approved",
            Reason::BadSignature => "bad_signature",
            Reason::BelowRequired => "below_required",
            Reason::HostNotBound => "host_not_bound",
            Reason::ToolNotAdmitted => "tool_not_admitted",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a document was not admitted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    pub reason: Reason,
    /// For people: what exactly failed.
    pub detail: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (code {}): {}",
            self.reason,
            self.reason.code(),
            self.detail
        )
    }
}

impl std::error::Error for Refusal {}

fn refuse<T>(reason: Reason, detail: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal {
        reason,
        detail: detail.into(),
    })
}

/// What the host knows about the connection being admitted.
#[derive(Debug, Clone, Copy)]
pub struct VerifyContext<'a> {
    /// The origin the host connected to (`scheme://host[:port]`); `None` for stdio servers,
    /// which then cannot satisfy a non-empty `netAllowedHosts`.
    pub origin: Option<&'a str>,
    /// The level the server must reach, a name or alias in the trust root's scheme.
    pub required_clearance: &'a str,
    /// The time of the decision, passed in: the verifier never reads a clock.
    pub now: OffsetDateTime,
}

/// Proof that a document passed rules 0–8 against a trust root. Only [`verify`] makes one.
///
/// ```compile_fail
/// // The fields are private: an `Admitted` cannot be built outside this crate…
/// let forged = gatehouse_attest::Admitted { id: "urn:x".into() };
/// ```
///
/// ```compile_fail
/// // …nor copied into a second decision.
/// fn twice(a: &gatehouse_attest::Admitted) -> gatehouse_attest::Admitted { a.clone() }
/// ```
#[derive(Debug)]
#[must_use]
pub struct Admitted {
    id: String,
    publisher: String,
    version: String,
    clearance: String,
    asserted_clearance: String,
    signer_key_id: String,
    body_sha256: [u8; 32],
    origin: Option<String>,
    net_allowed_hosts: Vec<String>,
}

impl Admitted {
    /// The verified server identity.
    pub fn id(&self) -> &str {
        &self.id
    }
    /// Signed, but not bound to the key: show it as claimed.
    pub fn publisher(&self) -> &str {
        &self.publisher
    }
    pub fn version(&self) -> &str {
        &self.version
    }
    /// The canonical level name the clearance resolved to.
    pub fn clearance(&self) -> &str {
        &self.clearance
    }
    /// The clearance as written in the document (possibly an alias).
    pub fn asserted_clearance(&self) -> &str {
        &self.asserted_clearance
    }
    pub fn signer_key_id(&self) -> &str {
        &self.signer_key_id
    }
    /// SHA-256 of the canonical body: identifies exactly what was admitted.
    pub fn body_sha256(&self) -> &[u8; 32] {
        &self.body_sha256
    }
    pub fn body_sha256_hex(&self) -> String {
        self.body_sha256
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
    pub fn origin(&self) -> Option<&str> {
        self.origin.as_deref()
    }
    /// The signed `netAllowedHosts` (empty when the document names no origin).
    pub fn net_allowed_hosts(&self) -> &[String] {
        &self.net_allowed_hosts
    }
}

/// `v` is `1.MINOR` with ASCII digits.
fn is_version_1(v: &str) -> bool {
    v.strip_prefix("1.")
        .is_some_and(|minor| !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit()))
}

fn required_string<'a>(doc: &'a Map<String, Value>, field: &str) -> Result<&'a str, Refusal> {
    match doc.get(field) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(Value::String(_)) => refuse(Reason::NotMcpServer, format!("\"{field}\" is empty")),
        Some(_) => refuse(Reason::NotMcpServer, format!("\"{field}\" is not a string")),
        None => refuse(
            Reason::NotMcpServer,
            format!("the required field \"{field}\" is missing"),
        ),
    }
}

/// `None` when absent or null; the string otherwise; a refusal for any other type.
fn optional_string<'a>(
    doc: &'a Map<String, Value>,
    field: &str,
) -> Result<Option<&'a str>, Refusal> {
    match doc.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => refuse(Reason::NotMcpServer, format!("\"{field}\" is not a string")),
    }
}

fn string_array<'a>(value: &'a Value, field: &str) -> Result<Vec<&'a str>, Refusal> {
    let Value::Array(items) = value else {
        return refuse(Reason::NotMcpServer, format!("\"{field}\" is not an array"));
    };
    items
        .iter()
        .map(|item| {
            item.as_str().ok_or_else(|| Refusal {
                reason: Reason::NotMcpServer,
                detail: format!("\"{field}\" has a member that is not a string"),
            })
        })
        .collect()
}

/// Verifies a Server Attestation Document (`None` when the server published none) against
/// `root`, applying rules 0–8 in order and stopping at the first failure.
pub fn verify(
    document: Option<&[u8]>,
    root: &TrustRoot,
    context: &VerifyContext<'_>,
) -> Result<Admitted, Refusal> {
    let Some(bytes) = document else {
        return refuse(Reason::NotMcpServer, "no attestation document");
    };
    let value = parse_strict(bytes, MAX_DOCUMENT_BYTES, MAX_DEPTH).map_err(|e| Refusal {
        reason: Reason::NotMcpServer,
        detail: format!("the document is not valid JSON: {e}"),
    })?;
    let Value::Object(doc) = value else {
        return refuse(Reason::NotMcpServer, "the document is not a JSON object");
    };

    // Rule 0: a version this verifier understands.
    match doc.get("v") {
        Some(Value::String(v)) if is_version_1(v) => {}
        Some(Value::String(v)) => {
            return refuse(
                Reason::UnsupportedVersion,
                format!("version {v:?} is not ATSA 1.x (expected \"1.MINOR\")"),
            );
        }
        Some(other) => {
            return refuse(
                Reason::UnsupportedVersion,
                format!("\"v\" is {other}, not a \"1.MINOR\" string"),
            );
        }
        None => return refuse(Reason::UnsupportedVersion, "the document has no \"v\""),
    }

    // Rule 1: an MCP server's document, schema-valid.
    let id = required_string(&doc, "id")?;
    let publisher = required_string(&doc, "publisher")?;
    let version = required_string(&doc, "version")?;
    let asserted_clearance = required_string(&doc, "clearance")?;
    let capabilities = match doc.get("capabilities") {
        Some(value) => string_array(value, "capabilities")?,
        None => {
            return refuse(
                Reason::NotMcpServer,
                "the required field \"capabilities\" is missing",
            );
        }
    };
    if !capabilities.contains(&"mcp-server") {
        return refuse(
            Reason::NotMcpServer,
            "\"capabilities\" does not contain \"mcp-server\"",
        );
    }
    let allowed_hosts = match doc.get("netAllowedHosts") {
        None | Some(Value::Null) => Vec::new(),
        Some(value) => string_array(value, "netAllowedHosts")?,
    };
    optional_string(&doc, "verification")?;
    let signer_key_id = optional_string(&doc, "signerKeyId")?;
    let signature = optional_string(&doc, "signature")?;

    // Rule 2: signed at all.
    let (Some(signer_key_id), Some(signature)) = (
        signer_key_id.filter(|s| !s.is_empty()),
        signature.filter(|s| !s.is_empty()),
    ) else {
        return refuse(
            Reason::Unsigned,
            "\"signerKeyId\" or \"signature\" is missing or empty",
        );
    };

    // Rule 3: by a key the host trusts.
    let Some(key) = root.key(signer_key_id) else {
        return refuse(
            Reason::SignerNotTrusted,
            format!("the signer key {signer_key_id:?} is not in the trust root"),
        );
    };

    // Rule 4: that is still valid.
    match &key.not_after {
        None => {}
        Some(NotAfter::At(not_after)) if context.now < *not_after => {}
        Some(NotAfter::At(not_after)) => {
            return refuse(
                Reason::SignerExpired,
                format!("the signer key {signer_key_id:?} expired at {not_after}"),
            );
        }
        Some(NotAfter::Unparseable(raw)) => {
            return refuse(
                Reason::SignerExpired,
                format!("the signer key {signer_key_id:?} has an unreadable notAfter {raw:?}"),
            );
        }
    }

    // Rule 5: approved for the clearance, by canonical name, so an alias cannot widen it.
    let Some(level) = root.scheme.resolve(asserted_clearance) else {
        return refuse(
            Reason::SignerNotApproved,
            format!(
                "the clearance {asserted_clearance:?} is not a level of scheme {:?}",
                root.scheme.name
            ),
        );
    };
    if !key
        .approved_clearances
        .iter()
        .any(|approved| approved == &level.name)
    {
        return refuse(
            Reason::SignerNotApproved,
            format!(
                "the signer key {signer_key_id:?} is not approved for clearance {:?}",
                level.name
            ),
        );
    }

    // Rule 6: the signature covers the canonical body.
    let body = canonical::body(&doc).map_err(|e| Refusal {
        reason: Reason::NotMcpServer,
        detail: e.to_string(),
    })?;
    let signature = decode_exact::<64>(signature).map_err(|e| Refusal {
        reason: Reason::BadSignature,
        detail: format!("the signature is {e}"),
    })?;
    if key
        .public_key
        .verify_strict(&body, &Signature::from_bytes(&signature))
        .is_err()
    {
        return refuse(
            Reason::BadSignature,
            format!(
                "the signature does not verify over the canonical body with key {signer_key_id:?}"
            ),
        );
    }

    // Rule 7: high enough for this host.
    let Some(required) = root.scheme.resolve(context.required_clearance) else {
        return refuse(
            Reason::BelowRequired,
            format!(
                "the required clearance {:?} is not a level of scheme {:?}",
                context.required_clearance, root.scheme.name
            ),
        );
    };
    if level.rank < required.rank {
        return refuse(
            Reason::BelowRequired,
            format!(
                "clearance {:?} is below the required {:?}",
                level.name, required.name
            ),
        );
    }

    // Rule 8: bound to the origin the host connected to, when the document says where.
    if !allowed_hosts.is_empty() {
        let bound = context
            .origin
            .is_some_and(|origin| allowed_hosts.iter().any(|entry| same_origin(entry, origin)));
        if !bound {
            return refuse(
                Reason::HostNotBound,
                format!(
                    "the connection ({}) is not one of the document's netAllowedHosts {allowed_hosts:?}",
                    context.origin.unwrap_or("stdio, no origin")
                ),
            );
        }
    }

    Ok(Admitted {
        id: id.to_string(),
        publisher: publisher.to_string(),
        version: version.to_string(),
        clearance: level.name.clone(),
        asserted_clearance: asserted_clearance.to_string(),
        signer_key_id: signer_key_id.to_string(),
        body_sha256: Sha256::digest(&body).into(),
        origin: context.origin.map(str::to_string),
        net_allowed_hosts: allowed_hosts.iter().map(|h| h.to_string()).collect(),
    })
}

/// Signs a document (for server operators and tests): sets `signerKeyId` and replaces
/// `signature` with an Ed25519 signature over the canonical body.
pub fn sign_document(
    document: &Map<String, Value>,
    key_id: &str,
    key: &SigningKey,
) -> Result<Map<String, Value>, canonical::CanonicalError> {
    let mut signed = document.clone();
    signed.remove("signature");
    signed.insert("signerKeyId".into(), Value::String(key_id.to_string()));
    let body = canonical::body(&signed)?;
    let signature = key.sign(&body);
    signed.insert(
        "signature".into(),
        Value::String(STANDARD.encode(signature.to_bytes())),
    );
    Ok(signed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_are_the_registry() {
        let all = [
            Reason::UnsupportedVersion,
            Reason::NotMcpServer,
            Reason::Unsigned,
            Reason::SignerNotTrusted,
            Reason::SignerExpired,
            Reason::SignerNotApproved,
            Reason::BadSignature,
            Reason::BelowRequired,
            Reason::HostNotBound,
            Reason::ToolNotAdmitted,
        ];
        for (i, reason) in all.into_iter().enumerate() {
            assert_eq!(reason.code() as usize, i);
            assert_eq!(serde_json::to_value(reason).unwrap(), reason.as_str());
        }
    }

    #[test]
    fn version_pattern() {
        for ok in ["1.0", "1.1", "1.10", "1.0123"] {
            assert!(is_version_1(ok), "{ok}");
        }
        for bad in [
            "1", "1.", "2.0", "01.0", "1.0.0", "1.x", " 1.0", "1.٣", "1.0\n",
        ] {
            assert!(!is_version_1(bad), "{bad:?}");
        }
    }
}
