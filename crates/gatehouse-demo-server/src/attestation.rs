//! The demo server's ATSA Server Attestation Document (SAD), signed with the DEMO-ONLY signer key.
//!
//! That key's private half is committed to the repository (`trust-roots/demo/`), so anyone can
//! sign anything with it: a document it signs proves nothing outside demo mode. It lets the host
//! and its tests exercise admission end to end against a server whose answer is known.

use serde_json::{Value, json};

/// The identity the demo server attests to.
pub const DEMO_SERVER_ID: &str = "urn:gatehouse:demo-server";

/// The id of the DEMO-ONLY signer key in the demo trust root.
pub const DEMO_SIGNER_KEY_ID: &str = "DEMO-ONLY-signer";

/// The clearance the demo server claims: a level the demo signer key is approved for.
pub const DEMO_CLEARANCE: &str = "internal";

/// Where an HTTP server publishes its SAD (ATSA §1), relative to its origin.
pub const WELL_KNOWN_PATH: &str = "/.well-known/mcp-attestation";

/// The publisher label; ATSA does not bind it to the key, so it can say what it likes.
const DEMO_PUBLISHER: &str = "Gatehouse demo server (DEMO ONLY)";

/// The publisher a tampered document claims after signing.
const TAMPERED_PUBLISHER: &str = "Gatehouse demo server (DEMO ONLY, altered after signing)";

/// The demo bundle template: its `signed` part carries the demo trust root (scheme and signer
/// keys) that demo mode trusts.
const DEMO_BUNDLE_TEMPLATE: &str =
    include_str!("../../../trust-roots/demo/DEMO-ONLY-bundle.template.json");

/// The trust root demo mode verifies the demo server against: the scheme and signer keys of
/// the DEMO-ONLY bundle, exactly as shipped.
pub fn demo_trust_root() -> gatehouse_attest::TrustRoot {
    let template: Value =
        serde_json::from_str(DEMO_BUNDLE_TEMPLATE).expect("the demo bundle template is JSON");
    gatehouse_attest::TrustRoot::from_value(&template["signed"])
        .expect("the demo bundle template holds a valid trust root")
}

/// The DEMO-ONLY signer key file. Embedded so the binary needs no files at run time; it is
/// public anyway.
const DEMO_SIGNER_KEY: &str = include_str!("../../../trust-roots/demo/DEMO-ONLY-signer.key");

/// What the demo serves at [`WELL_KNOWN_PATH`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AttestationMode {
    /// A document signed by the DEMO-ONLY signer key: admitted under the demo trust root.
    Signed,
    /// A signed document altered after signing: refused with `bad_signature`.
    Tampered,
    /// No document (HTTP 404): an unattested server.
    None,
}

impl AttestationMode {
    /// The document this mode serves for `origin`, or `None` when it serves none.
    pub fn document(self, origin: Option<&str>) -> Option<Value> {
        match self {
            AttestationMode::Signed => Some(signed_demo_attestation(origin)),
            AttestationMode::Tampered => Some(tampered_demo_attestation(origin)),
            AttestationMode::None => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AttestationMode::Signed => "signed",
            AttestationMode::Tampered => "tampered",
            AttestationMode::None => "none",
        }
    }
}

/// The unsigned SAD fields. `netAllowedHosts` binds the document to `origin` when one is given;
/// a stdio server has no origin, so the field is omitted.
pub fn demo_document(origin: Option<&str>) -> Value {
    let mut document = json!({
        "v": "1.0",
        "id": DEMO_SERVER_ID,
        "publisher": DEMO_PUBLISHER,
        "version": env!("CARGO_PKG_VERSION"),
        "clearance": DEMO_CLEARANCE,
        "capabilities": ["mcp-server", "tools"],
        "signerKeyId": DEMO_SIGNER_KEY_ID,
        "verification": "demo-only",
    });
    if let Some(origin) = origin {
        document["netAllowedHosts"] = json!([origin]);
    }
    document
}

/// [`demo_document`] signed with the embedded DEMO-ONLY signer key.
///
/// # Panics
///
/// Only if the embedded key file or the fixed document were broken, which the unit tests rule
/// out.
pub fn signed_demo_attestation(origin: Option<&str>) -> Value {
    let (key_id, key) = gatehouse_attest::keys::parse_private_key(DEMO_SIGNER_KEY.as_bytes())
        .expect("the embedded DEMO-ONLY signer key file parses");
    debug_assert_eq!(key_id, DEMO_SIGNER_KEY_ID);
    let Value::Object(document) = demo_document(origin) else {
        unreachable!("demo_document builds an object");
    };
    let signed = gatehouse_attest::sign_document(&document, DEMO_SIGNER_KEY_ID, &key)
        .expect("the demo document has a canonical body");
    Value::Object(signed)
}

/// [`signed_demo_attestation`] with `publisher` changed after signing. Rules 0–5 still pass
/// (the publisher is not checked before the signature), so it is refused at rule 6,
/// `bad_signature`: the case of a document altered in transit or by its server.
pub fn tampered_demo_attestation(origin: Option<&str>) -> Value {
    let mut document = signed_demo_attestation(origin);
    document["publisher"] = Value::String(TAMPERED_PUBLISHER.to_owned());
    document
}

#[cfg(test)]
mod tests {
    use gatehouse_attest::{Reason, VerifyContext, verify};
    use time::OffsetDateTime;

    use super::*;

    const DEMO_SIGNER_PUB: &str =
        include_str!("../../../trust-roots/demo/DEMO-ONLY-signer.pub.json");

    fn check(document: &Value, origin: Option<&str>) -> Result<String, Reason> {
        let bytes = serde_json::to_vec(document).unwrap();
        let context = VerifyContext {
            origin,
            required_clearance: DEMO_CLEARANCE,
            now: OffsetDateTime::now_utc(),
        };
        verify(Some(&bytes), &demo_trust_root(), &context)
            .map(|admitted| admitted.id().to_owned())
            .map_err(|refusal| refusal.reason)
    }

    #[test]
    fn embedded_key_is_the_demo_signer() {
        let (id, key) =
            gatehouse_attest::keys::parse_private_key(DEMO_SIGNER_KEY.as_bytes()).unwrap();
        assert_eq!(id, DEMO_SIGNER_KEY_ID);
        let public: Value = serde_json::from_str(DEMO_SIGNER_PUB).unwrap();
        assert_eq!(
            gatehouse_attest::keys::public_key_document(&id, &key.verifying_key()),
            public
        );
    }

    #[test]
    fn unsigned_fields_are_the_spec() {
        let stdio = demo_document(None);
        assert_eq!(stdio["v"], "1.0");
        assert_eq!(stdio["id"], DEMO_SERVER_ID);
        assert_eq!(stdio["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(stdio["clearance"], DEMO_CLEARANCE);
        assert_eq!(stdio["capabilities"], json!(["mcp-server", "tools"]));
        assert_eq!(stdio["signerKeyId"], DEMO_SIGNER_KEY_ID);
        assert_eq!(stdio["verification"], "demo-only");
        assert!(stdio.get("netAllowedHosts").is_none());
        assert!(stdio.get("signature").is_none());
        let http = demo_document(Some("http://127.0.0.1:8080"));
        assert_eq!(http["netAllowedHosts"], json!(["http://127.0.0.1:8080"]));
    }

    #[test]
    fn signed_stdio_document_is_admitted_without_an_origin() {
        let signed = signed_demo_attestation(None);
        assert!(signed["signature"].is_string());
        assert_eq!(check(&signed, None), Ok(DEMO_SERVER_ID.to_owned()));
        // Not bound to an origin, so any connection may present it.
        assert_eq!(
            check(&signed, Some("http://127.0.0.1:1")),
            Ok(DEMO_SERVER_ID.to_owned())
        );
    }

    #[test]
    fn signed_http_document_is_bound_to_its_origin() {
        let signed = signed_demo_attestation(Some("http://[::1]:4000"));
        assert_eq!(
            check(&signed, Some("http://[::1]:4000")),
            Ok(DEMO_SERVER_ID.to_owned())
        );
        assert_eq!(
            check(&signed, Some("http://[::1]:4001")),
            Err(Reason::HostNotBound)
        );
        assert_eq!(check(&signed, None), Err(Reason::HostNotBound));
    }

    #[test]
    fn tampered_document_fails_only_the_signature() {
        let tampered = tampered_demo_attestation(None);
        assert_ne!(tampered["publisher"], DEMO_PUBLISHER);
        assert_eq!(check(&tampered, None), Err(Reason::BadSignature));
    }

    #[test]
    fn modes_serve_what_they_say() {
        let origin = Some("http://127.0.0.1:9");
        assert_eq!(
            AttestationMode::Signed.document(origin),
            Some(signed_demo_attestation(origin))
        );
        assert_eq!(
            AttestationMode::Tampered.document(origin),
            Some(tampered_demo_attestation(origin))
        );
        assert_eq!(AttestationMode::None.document(origin), None);
    }
}
