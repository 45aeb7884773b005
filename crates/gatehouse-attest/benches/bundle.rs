//! Bundle verification cost: a root of 3 keys with threshold 3, signed by all 3, so `verify`
//! checks three Ed25519 signatures over the JCS of `signed`. `verify` alone (parsed once) and
//! parse plus verify, as the host does when it loads a bundle file.
//! Run: `cargo bench -p gatehouse-attest --bench bundle`.

use std::hint::black_box;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use criterion::{Criterion, criterion_group, criterion_main};
use ed25519_dalek::SigningKey;
use gatehouse_attest::bundle::{Bundle, sign_bundle};
use serde_json::{Value, json};
use time::macros::datetime;

fn admin(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[0xA0 + n; 32])
}

/// Like tests/bundles.rs: the vectors' scheme and signer keys, one server policy.
fn bundle_bytes() -> Vec<u8> {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/vectors/atsa/_trust-root.json");
    let root: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let signed = json!({
        "type": "gatehouse-trust-root", "specVersion": 1, "bundleId": "acme", "version": 1,
        "expires": "2027-06-30T00:00:00Z",
        "root": {"threshold": 3, "keys": (1..=3).map(|n| json!({
            "id": format!("admin-{n}"),
            "publicKey": STANDARD.encode(admin(n).verifying_key().to_bytes())
        })).collect::<Vec<_>>()},
        "posture": "deny-by-default", "locked": true, "requiredClearance": "internal",
        "scheme": root["scheme"], "keys": root["keys"],
        "servers": [{
            "id": "urn:omcp:server:weather", "origins": ["https://tools.example.com"],
            "requiredClearance": "internal",
            "allowedTools": ["get_forecast", "list_stations"],
            "toolPins": {"get_forecast": format!("sha256:{}", "ab".repeat(32))},
            "urlElicitationDomains": ["auth.example.com"]
        }]
    });
    let signatures: Vec<Value> = (1..=3)
        .map(|n| sign_bundle(&signed, &format!("admin-{n}"), &admin(n)).unwrap())
        .collect();
    serde_json::to_vec(&json!({"signed": signed, "signatures": signatures})).unwrap()
}

fn bench(c: &mut Criterion) {
    let bytes = bundle_bytes();
    let now = datetime!(2026-11-21 12:00 UTC);
    let bundle = Bundle::parse(&bytes).unwrap();
    assert_eq!(bundle.verify(now, None, None).unwrap().signers().len(), 3);

    let mut group = c.benchmark_group("bundle_verify");
    group.bench_function("three_signatures", |b| {
        b.iter(|| black_box(&bundle).verify(now, None, None).is_ok())
    });
    group.finish();

    let mut group = c.benchmark_group("bundle_parse_and_verify");
    group.bench_function("three_signatures", |b| {
        b.iter(|| {
            Bundle::parse(black_box(&bytes))
                .and_then(|bundle| bundle.verify(now, None, None))
                .is_ok()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
