//! Admin trust bundles (`Bundle::parse`, then `verify`, rotation against itself, `TrustStore`
//! and each server's allow list), two ways:
//! - the bytes as a bundle file;
//! - the bytes' `signed` part signed by two fixed root keys (`fuzz-root-1`, `fuzz-root-2`, the
//!   root keys of the seed bundles in fuzz/seeds/bundle), so mutations reach what lies past the
//!   signatures. Then a bundle that parses, is not expired, and lists enough of those keys to
//!   meet its threshold must verify, and must verify again against itself as installed.
#![no_main]

use std::sync::LazyLock;

use ed25519_dalek::SigningKey;
use gatehouse_attest::bundle::{Bundle, TrustStore, sign_bundle};
use gatehouse_attest::gate::AllowList;
use gatehouse_attest::json::parse_strict;
use gatehouse_attest::{MAX_DEPTH, bundle::MAX_BUNDLE_BYTES};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::datetime;

static ROOT_KEYS: LazyLock<[(&str, SigningKey); 2]> = LazyLock::new(|| {
    [
        ("fuzz-root-1", SigningKey::from_bytes(&[1; 32])),
        ("fuzz-root-2", SigningKey::from_bytes(&[2; 32])),
    ]
});

const NOW: OffsetDateTime = datetime!(2026-06-01 12:00 UTC);

/// Whether a JSON number with a fraction or exponent is anywhere in `value`: serde_json does
/// not promise that such a number reads back bit for bit after writing, so a re-signed bundle
/// holding one may rightly fail its signature.
fn has_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(map) => map.values().any(has_float),
        _ => false,
    }
}

/// Everything a host does with a bundle after parsing it; returns whether it verified.
fn exercise(bundle: &Bundle) -> bool {
    let _ = bundle.verify_as_installed();
    let Ok(verified) = bundle.verify(NOW, None, None) else {
        return false;
    };
    let content = verified.content();
    let again = bundle.verify(NOW, Some(&verified), Some(content.version));
    assert!(
        again.is_ok(),
        "a bundle does not verify against itself installed: {again:?}"
    );
    let label = verified.label();
    for server in &content.servers {
        let _ = AllowList::from_policy(server, &label);
    }
    let ids: Vec<String> = content.servers.iter().map(|s| s.id.clone()).collect();
    if let Ok(store) = TrustStore::combine(vec![verified]) {
        for id in ids {
            assert!(store.server(&id).is_some(), "server {id:?} lost in the store");
        }
        let _ = (store.posture(), store.locked());
    }
    true
}

fuzz_target!(|data: &[u8]| {
    if let Ok(bundle) = Bundle::parse(data) {
        exercise(&bundle);
    }

    let Ok(mut value) = parse_strict(data, MAX_BUNDLE_BYTES, MAX_DEPTH) else {
        return;
    };
    let Some(signed) = value.get("signed").cloned() else {
        return;
    };
    let signatures: Vec<Value> = ROOT_KEYS
        .iter()
        .filter_map(|(id, key)| sign_bundle(&signed, id, key).ok())
        .collect();
    if signatures.len() != ROOT_KEYS.len() {
        return;
    }
    value["signatures"] = json!(signatures);
    let bytes = serde_json::to_vec(&value).expect("a bundle serializes");
    let Ok(bundle) = Bundle::parse(&bytes) else {
        return;
    };
    let content = bundle.content();
    let ours = content
        .root_keys
        .iter()
        .filter(|root| {
            ROOT_KEYS
                .iter()
                .any(|(id, key)| root.id == *id && root.public_key == key.verifying_key())
        })
        .count();
    let should_verify = NOW < content.expires && ours >= content.threshold && !has_float(&signed);
    let verified = exercise(&bundle);
    if should_verify {
        assert!(verified, "a bundle signed by its root keys does not verify: {:?}", bundle.verify(NOW, None, None));
    }
});
