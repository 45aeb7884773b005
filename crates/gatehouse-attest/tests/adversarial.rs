//! Attacks and edge cases beyond the published vectors. Documents are signed here with the
//! vector keys (seeds 0x11, 0x22, 0x33 and 0x44 repeated), so each case differs from a valid
//! document in exactly the way it names.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE};
use ed25519_dalek::{Signer, SigningKey};
use gatehouse_attest::{Reason, TrustRoot, VerifyContext, canonical, sign_document, verify};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use time::macros::datetime;

fn root() -> TrustRoot {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/vectors/atsa/_trust-root.json");
    TrustRoot::from_json(&std::fs::read(path).unwrap()).unwrap()
}

/// The signing key behind a trust-root key id (seeds per the vectors' README).
fn signer(id: &str) -> SigningKey {
    let root = root();
    let public = root.key(id).unwrap().public_key;
    [0x11u8, 0x22, 0x33, 0x44]
        .into_iter()
        .map(|seed| SigningKey::from_bytes(&[seed; 32]))
        .find(|k| k.verifying_key() == public)
        .unwrap()
}

fn base() -> Map<String, Value> {
    json!({
        "v": "1.0", "id": "urn:omcp:server:weather", "publisher": "Example Tools Ltd",
        "version": "2.3.1", "clearance": "internal", "capabilities": ["mcp-server"]
    })
    .as_object()
    .unwrap()
    .clone()
}

fn signed(doc: Map<String, Value>) -> Map<String, Value> {
    sign_document(&doc, "key-prod-2026", &signer("key-prod-2026")).unwrap()
}

fn check_at(
    doc: &Map<String, Value>,
    origin: Option<&str>,
    required: &str,
) -> Result<gatehouse_attest::Admitted, gatehouse_attest::Refusal> {
    let ctx = VerifyContext {
        origin,
        required_clearance: required,
        now: datetime!(2026-06-01 12:00 UTC),
    };
    verify(Some(&serde_json::to_vec(doc).unwrap()), &root(), &ctx)
}

fn check(
    doc: &Map<String, Value>,
) -> Result<gatehouse_attest::Admitted, gatehouse_attest::Refusal> {
    check_at(doc, Some("https://tools.example.com"), "internal")
}

/// Asserts admission (showing the refusal if there was one) and returns the admitted id.
fn admit(outcome: Result<gatehouse_attest::Admitted, gatehouse_attest::Refusal>) -> String {
    outcome
        .unwrap_or_else(|refusal| panic!("refused: {refusal}"))
        .id()
        .to_string()
}

fn reason(doc: &Map<String, Value>) -> Reason {
    match check(doc) {
        Ok(_) => panic!("admitted: {}", Value::Object(doc.clone())),
        Err(refusal) => refusal.reason,
    }
}

fn with(mut doc: Map<String, Value>, key: &str, value: Value) -> Map<String, Value> {
    doc.insert(key.into(), value);
    doc
}

#[test]
fn the_base_document_is_admitted() {
    let admitted = check(&signed(base())).unwrap();
    assert_eq!(admitted.clearance(), "internal");
    assert_eq!(admitted.signer_key_id(), "key-prod-2026");
    assert_eq!(admitted.body_sha256_hex().len(), 64);
}

#[test]
fn characters_outside_the_bmp_sort_by_utf16() {
    let doc = signed(with(
        base(),
        "capabilities",
        json!(["mcp-server", "\u{FF5E}wide", "\u{1F600}smile"]),
    ));
    admit(check(&doc));
    // A signer that sorted by UTF-8 bytes instead signed different bytes: refused.
    let mut byte_sorted = doc.clone();
    let body = String::from_utf8(canonical::body(&doc).unwrap()).unwrap();
    let wrong = body.replace(
        "\"\u{1F600}smile\",\"\u{FF5E}wide\"",
        "\"\u{FF5E}wide\",\"\u{1F600}smile\"",
    );
    assert_ne!(body, wrong);
    let signature = signer("key-prod-2026").sign(wrong.as_bytes());
    byte_sorted.insert(
        "signature".into(),
        json!(STANDARD.encode(signature.to_bytes())),
    );
    assert_eq!(reason(&byte_sorted), Reason::BadSignature);
}

#[test]
fn absent_and_null_are_different_documents() {
    let absent = signed(base());
    admit(check(&absent));
    // Adding a null after signing changes the body.
    assert_eq!(
        reason(&with(absent.clone(), "verification", Value::Null)),
        Reason::BadSignature
    );
    assert_eq!(
        reason(&with(absent, "netAllowedHosts", Value::Null)),
        Reason::BadSignature
    );
    // Signed with the null, it verifies.
    admit(check(&signed(with(base(), "verification", Value::Null))));
    admit(check(&signed(with(base(), "netAllowedHosts", Value::Null))));
}

#[test]
fn signatures_are_decoded_strictly() {
    let doc = signed(base());
    let raw = STANDARD.decode(doc["signature"].as_str().unwrap()).unwrap();
    let variants = [
        URL_SAFE.encode(&raw),
        STANDARD_NO_PAD.encode(&raw),
        STANDARD.encode(&raw[..63]),
        STANDARD.encode([raw.as_slice(), &[0]].concat()),
        format!(" {}", doc["signature"].as_str().unwrap()),
    ];
    for variant in variants {
        if variant == doc["signature"].as_str().unwrap() {
            continue; // URL_SAFE equals STANDARD when no + or / occurs
        }
        assert_eq!(
            reason(&with(doc.clone(), "signature", json!(variant))),
            Reason::BadSignature,
            "{variant}"
        );
    }
    assert_eq!(
        reason(&with(doc.clone(), "signature", json!(""))),
        Reason::Unsigned
    );
    assert_eq!(
        reason(&with(doc, "signature", json!(42))),
        Reason::NotMcpServer
    );
}

#[test]
fn a_signature_from_a_weak_key_cannot_be_trusted() {
    // A trust root that lists the identity point is refused when loaded, so a signature made
    // "by" it (valid for many messages) never gets as far as verification.
    let mut raw: Value = serde_json::from_slice(
        &std::fs::read(
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/vectors/atsa/_trust-root.json"),
        )
        .unwrap(),
    )
    .unwrap();
    raw["keys"][0]["publicKey"] = json!(STANDARD.encode({
        let mut identity = [0u8; 32];
        identity[0] = 1;
        identity
    }));
    let error = TrustRoot::from_value(&raw).unwrap_err();
    assert!(error.to_string().contains("weak"), "{error}");
}

#[test]
fn aliases_resolve_but_never_widen() {
    // key-restricted is approved for "public" only.
    let restricted = |clearance: &str| {
        sign_document(
            &with(base(), "clearance", json!(clearance)),
            "key-restricted",
            &signer("key-restricted"),
        )
        .unwrap()
    };
    let admitted = check_at(&restricted("unclassified"), None, "public").unwrap();
    assert_eq!(
        (admitted.clearance(), admitted.asserted_clearance()),
        ("public", "unclassified")
    );
    assert_eq!(
        check_at(&restricted("conf"), None, "public")
            .unwrap_err()
            .reason,
        Reason::SignerNotApproved
    );
    assert_eq!(
        check_at(&restricted("Unclassified"), None, "public")
            .unwrap_err()
            .reason,
        Reason::SignerNotApproved
    );
    // The required level may be an alias too.
    admit(check_at(
        &signed(with(base(), "clearance", json!("conf"))),
        None,
        "conf",
    ));
    assert_eq!(
        check_at(&signed(base()), None, "conf").unwrap_err().reason,
        Reason::BelowRequired
    );
    assert_eq!(
        check_at(&signed(base()), None, "top-secret")
            .unwrap_err()
            .reason,
        Reason::BelowRequired
    );
}

#[test]
fn origins_are_normalized_before_matching() {
    let bound = |hosts: Value| signed(with(base(), "netAllowedHosts", hosts));
    let doc = bound(json!(["https://Tools.Example.com:443/some/path"]));
    for origin in [
        "https://tools.example.com",
        "https://TOOLS.example.com/",
        "https://tools.example.com:443/mcp",
    ] {
        admit(check_at(&doc, Some(origin), "internal"));
    }
    for origin in [
        "http://tools.example.com",
        "https://tools.example.com:8443",
        "https://tools.example.com.evil.net",
        "https://evil.net",
    ] {
        assert_eq!(
            check_at(&doc, Some(origin), "internal").unwrap_err().reason,
            Reason::HostNotBound,
            "{origin}"
        );
    }
    assert_eq!(
        check_at(&doc, None, "internal").unwrap_err().reason,
        Reason::HostNotBound,
        "stdio has no origin"
    );
    let v6 = bound(json!(["http://[0:0:0:0:0:0:0:1]:8080"]));
    admit(check_at(&v6, Some("http://[::1]:8080/mcp"), "internal"));
    assert_eq!(
        check_at(&v6, Some("http://127.0.0.1:8080"), "internal")
            .unwrap_err()
            .reason,
        Reason::HostNotBound
    );
    // An empty list binds nothing.
    admit(check_at(
        &bound(json!([])),
        Some("https://anywhere.example"),
        "internal",
    ));
}

#[test]
fn unknown_fields_are_ignored_and_unsigned() {
    let doc = signed(with(base(), "homepage", json!("https://a.example")));
    admit(check(&doc));
    // Changing or removing an unknown field does not break the signature: it was never signed.
    admit(check(&with(
        doc.clone(),
        "homepage",
        json!({"nested": [1, 2]}),
    )));
    let mut removed = doc;
    removed.remove("homepage");
    admit(check(&removed));
}

#[test]
fn malformed_documents_are_not_mcp_servers() {
    let ctx = VerifyContext {
        origin: None,
        required_clearance: "internal",
        now: datetime!(2026-06-01 12:00 UTC),
    };
    let refuse = |bytes: &[u8]| verify(Some(bytes), &root(), &ctx).unwrap_err();
    let valid = serde_json::to_string(&signed(base())).unwrap();
    let duplicated = valid.replacen(
        "\"clearance\":\"internal\"",
        "\"clearance\":\"public\",\"clearance\":\"internal\"",
        1,
    );
    assert_ne!(valid, duplicated);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (duplicated.into_bytes(), "duplicate key"),
        (b"[]".to_vec(), "not a JSON object"),
        (b"{\"v\": \"1.0\"".to_vec(), "not valid JSON"),
        (
            vec![b' '; gatehouse_attest::MAX_DOCUMENT_BYTES + 1],
            "limit",
        ),
        (
            format!(
                "{{\"v\":\"1.0\",\"x\":{}{}}}",
                "[".repeat(40),
                "]".repeat(40)
            )
            .into_bytes(),
            "deeper",
        ),
    ];
    for (bytes, needle) in cases {
        let refusal = refuse(&bytes);
        assert_eq!(refusal.reason, Reason::NotMcpServer, "{needle}");
        assert!(
            refusal.detail.contains(needle),
            "{needle}: {}",
            refusal.detail
        );
    }
    for (field, value, expected) in [
        ("id", json!(7), Reason::NotMcpServer),
        ("publisher", json!(""), Reason::NotMcpServer),
        ("capabilities", json!("mcp-server"), Reason::NotMcpServer),
        ("capabilities", json!(["mcp-client"]), Reason::NotMcpServer),
        ("capabilities", json!(["MCP-Server"]), Reason::NotMcpServer),
        ("netAllowedHosts", json!([1]), Reason::NotMcpServer),
        ("v", json!(1), Reason::UnsupportedVersion),
        ("v", json!("2.0"), Reason::UnsupportedVersion),
    ] {
        assert_eq!(
            reason(&signed(with(base(), field, value.clone()))),
            expected,
            "{field}={value}"
        );
    }
    let mut missing = signed(base());
    missing.remove("version");
    assert_eq!(reason(&missing), Reason::NotMcpServer);
}

#[test]
fn expiry_is_inclusive_of_not_after() {
    let doc = sign_document(&base(), "key-expired", &signer("key-expired")).unwrap();
    let at = |now| {
        let ctx = VerifyContext {
            origin: None,
            required_clearance: "internal",
            now,
        };
        verify(Some(&serde_json::to_vec(&doc).unwrap()), &root(), &ctx)
    };
    admit(at(datetime!(2025-12-31 23:59:59 UTC)));
    assert_eq!(
        at(datetime!(2026-01-01 00:00:00 UTC)).unwrap_err().reason,
        Reason::SignerExpired
    );
}

#[test]
fn a_replayed_signature_on_another_document_fails() {
    let weather = signed(base());
    let other = with(base(), "id", json!("urn:omcp:server:payments"));
    let replayed = with(other, "signature", weather["signature"].clone());
    assert_eq!(
        reason(&with(replayed, "signerKeyId", json!("key-prod-2026"))),
        Reason::BadSignature
    );
}

/// A signed field and a replacement value that keeps every earlier rule satisfied.
fn field_change() -> impl Strategy<Value = (String, Value)> {
    let text = "[a-zA-Z0-9 ._:/-]{1,24}";
    prop_oneof![
        text.prop_map(|s| ("id".to_string(), json!(format!("urn:x:{s}")))),
        text.prop_map(|s| ("publisher".to_string(), json!(s))),
        text.prop_map(|s| ("version".to_string(), json!(s))),
        (1u32..1000).prop_map(|m| ("v".to_string(), json!(format!("1.{m}")))),
        prop::sample::select(vec![
            "public",
            "unclassified",
            "confidential",
            "conf",
            "secret"
        ])
        .prop_map(|c| ("clearance".to_string(), json!(c))),
        text.prop_map(|s| ("capabilities".to_string(), json!(["mcp-server", s]))),
        text.prop_map(|s| ("verification".to_string(), json!(s))),
        Just(("verification".to_string(), Value::Null)),
        Just((
            "netAllowedHosts".to_string(),
            json!(["https://tools.example.com", "https://b.example"])
        )),
        Just(("netAllowedHosts".to_string(), json!([]))),
    ]
}

proptest! {
    #[test]
    fn changing_any_signed_field_breaks_the_signature((field, value) in field_change()) {
        let doc = signed(with(base(), "verification", json!("tested")));
        prop_assume!(doc.get(&field) != Some(&value));
        let tampered = with(doc, &field, value);
        let refusal = check_at(&tampered, Some("https://tools.example.com"), "public").unwrap_err();
        prop_assert_eq!(refusal.reason, Reason::BadSignature, "{}", refusal.detail);
    }
}

/// The HTTP origin rule on top of rule 8: an origin must be named by the document's
/// `netAllowedHosts` or the bundle entry's `origins` (and by each that is not empty).
mod http_origin_binding {
    use super::*;
    use gatehouse_attest::http_origin::{OriginBinding, bind_http_origin};

    const HERE: &str = "https://tools.example.com";
    const ELSEWHERE: &str = "https://attacker.example.net";

    fn bind(
        doc: &Map<String, Value>,
        origin: &str,
        entry_origins: &[&str],
    ) -> Result<OriginBinding, Reason> {
        let admitted = check_at(doc, Some(origin), "internal").map_err(|r| r.reason)?;
        let entry: Vec<String> = entry_origins.iter().map(|s| s.to_string()).collect();
        bind_http_origin(&admitted, &entry).map_err(|r| r.reason)
    }

    #[test]
    fn a_document_without_hosts_copied_to_any_origin_is_refused_without_entry_origins() {
        // A stdio server's attestation, as a bundle carries it: no netAllowedHosts. ATSA rule 8
        // alone admits it anywhere; served by an attacker over HTTP it must bind nothing.
        let copied = signed(base());
        assert!(check_at(&copied, Some(ELSEWHERE), "internal").is_ok());
        assert_eq!(bind(&copied, ELSEWHERE, &[]), Err(Reason::HostNotBound));
        assert_eq!(bind(&copied, HERE, &[]), Err(Reason::HostNotBound));
    }

    #[test]
    fn entry_origins_alone_bind_a_document_without_hosts_only_at_those_origins() {
        let doc = signed(base());
        assert_eq!(bind(&doc, HERE, &[HERE]), Ok(OriginBinding::Bundle));
        assert_eq!(
            bind(&doc, "HTTPS://Tools.Example.com:443", &[HERE]),
            Ok(OriginBinding::Bundle)
        );
        assert_eq!(bind(&doc, ELSEWHERE, &[HERE]), Err(Reason::HostNotBound));
        assert_eq!(
            bind(
                &doc,
                "https://tools.example.com.attacker.example.net",
                &[HERE]
            ),
            Err(Reason::HostNotBound)
        );
    }

    #[test]
    fn document_hosts_alone_bind_only_at_those_origins() {
        let doc = signed(with(base(), "netAllowedHosts", json!([HERE])));
        assert_eq!(bind(&doc, HERE, &[]), Ok(OriginBinding::Document));
        // Rule 8 already refuses another origin; the binding never sees an admitted one.
        assert_eq!(bind(&doc, ELSEWHERE, &[]), Err(Reason::HostNotBound));
    }

    #[test]
    fn both_lists_must_name_the_origin_when_both_are_given() {
        let other = "https://other.example.com";
        let doc = signed(with(base(), "netAllowedHosts", json!([HERE, other])));
        assert_eq!(
            bind(&doc, HERE, &[HERE]),
            Ok(OriginBinding::DocumentAndBundle)
        );
        // The signer allows `other`, the admins do not: the narrower list wins.
        assert_eq!(bind(&doc, other, &[HERE]), Err(Reason::HostNotBound));
        // The admins allow `ELSEWHERE`, the signer does not.
        assert_eq!(
            bind(&doc, ELSEWHERE, &[ELSEWHERE]),
            Err(Reason::HostNotBound)
        );
    }

    #[test]
    fn a_document_admitted_without_an_origin_binds_no_http_connection() {
        let doc = signed(base());
        let admitted = check_at(&doc, None, "internal").unwrap();
        let refusal = bind_http_origin(&admitted, &[HERE.to_string()]).unwrap_err();
        assert_eq!(refusal.reason, Reason::HostNotBound);
    }

    #[test]
    fn codes_are_stable() {
        for (binding, code) in [
            (OriginBinding::Document, "document"),
            (OriginBinding::Bundle, "bundle"),
            (OriginBinding::DocumentAndBundle, "document_and_bundle"),
        ] {
            assert_eq!(binding.as_str(), code);
            assert_eq!(serde_json::to_value(binding).unwrap(), code);
        }
    }
}
