//! ATSA documents (`gatehouse_attest::verify`) against fixed trust roots, two ways:
//! - the bytes as a server would serve them, against the conformance vectors' trust root
//!   (tests/vectors/atsa/_trust-root.json); an admitted document's identity and body hash must
//!   be those of its own canonical body;
//! - the bytes as a document that a trusted key then signs (`sign_document`), against a root
//!   that trusts that key for every level: so mutations reach the rules past the signature
//!   (clearance, required level, origin binding). Signer and verifier must agree on the
//!   canonical body: a document the trusted key signed is never refused as `bad_signature`.
#![no_main]

use std::sync::LazyLock;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::SigningKey;
use gatehouse_attest::json::parse_strict;
use gatehouse_attest::{
    MAX_DEPTH, MAX_DOCUMENT_BYTES, Reason, TrustRoot, VerifyContext, canonical, sign_document,
    verify,
};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use time::macros::datetime;

static VECTORS_ROOT: LazyLock<TrustRoot> = LazyLock::new(|| {
    TrustRoot::from_json(include_bytes!("../../tests/vectors/atsa/_trust-root.json"))
        .expect("the vectors' trust root loads")
});

const FUZZ_KEY_ID: &str = "fuzz-signer";
static FUZZ_KEY: LazyLock<SigningKey> = LazyLock::new(|| SigningKey::from_bytes(&[0x5a; 32]));
static FUZZ_ROOT: LazyLock<TrustRoot> = LazyLock::new(|| {
    let mut root: Value =
        serde_json::from_slice(include_bytes!("../../tests/vectors/atsa/_trust-root.json"))
            .expect("the vectors' trust root is JSON");
    root["keys"] = json!([{
        "id": FUZZ_KEY_ID,
        "publicKey": STANDARD.encode(FUZZ_KEY.verifying_key().as_bytes()),
        "approvedClearances": ["public", "internal", "confidential", "secret"],
    }]);
    TrustRoot::from_value(&root).expect("the fuzz trust root loads")
});

/// The vectors' decision time, and the contexts a host uses: an HTTP origin, and stdio.
fn contexts() -> [VerifyContext<'static>; 2] {
    let now = datetime!(2026-06-01 12:00 UTC);
    [
        VerifyContext {
            origin: Some("https://tools.example.com"),
            required_clearance: "internal",
            now,
        },
        VerifyContext {
            origin: None,
            required_clearance: "public",
            now,
        },
    ]
}

fuzz_target!(|data: &[u8]| {
    for context in contexts() {
        if let Ok(admitted) = verify(Some(data), &VECTORS_ROOT, &context) {
            let Ok(Value::Object(document)) = parse_strict(data, MAX_DOCUMENT_BYTES, MAX_DEPTH)
            else {
                panic!("admitted a document that is not a strict JSON object");
            };
            let body = canonical::body(&document).expect("an admitted document canonicalizes");
            assert_eq!(admitted.body_sha256(), &<[u8; 32]>::from(Sha256::digest(&body)));
            assert_eq!(Some(admitted.id()), document["id"].as_str());
        }
    }

    let Ok(Value::Object(document)) = parse_strict(data, MAX_DOCUMENT_BYTES, MAX_DEPTH) else {
        return;
    };
    let Ok(signed) = sign_document(&document, FUZZ_KEY_ID, &FUZZ_KEY) else {
        return;
    };
    let bytes = serde_json::to_vec(&Value::Object(signed)).expect("a document serializes");
    for context in contexts() {
        match verify(Some(&bytes), &FUZZ_ROOT, &context) {
            Ok(admitted) => assert_eq!(admitted.signer_key_id(), FUZZ_KEY_ID),
            Err(refusal) => assert_ne!(
                refusal.reason,
                Reason::BadSignature,
                "a document signed by the trusted key was refused: {refusal}"
            ),
        }
    }
});
