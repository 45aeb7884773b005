//! Attestation verification cost: the whole of rules 0–8 (strict parse, schema, canonical body,
//! verify_strict, origin match) against a bare `verify_strict` over the same canonical bytes.
//! Target: within 1.2× of the bare signature check. Run: `cargo bench -p gatehouse-attest`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ed25519_dalek::Signature;
use gatehouse_attest::trust_root::decode_exact;
use gatehouse_attest::{TrustRoot, VerifyContext, canonical, verify};
use serde_json::Value;
use time::macros::datetime;

fn vector(name: &str) -> Vec<u8> {
    std::fs::read(
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/vectors/atsa")
            .join(name),
    )
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let root = TrustRoot::from_json(&vector("_trust-root.json")).unwrap();
    let valid: Value = serde_json::from_slice(&vector("admits-when-origin-is-bound.json")).unwrap();
    let document = serde_json::to_vec(&valid["sad"]).unwrap();
    let body = canonical::body(valid["sad"].as_object().unwrap()).unwrap();
    let signature = Signature::from_bytes(
        &decode_exact::<64>(valid["sad"]["signature"].as_str().unwrap()).unwrap(),
    );
    let key = root.key("key-prod-2026").unwrap().public_key;
    let context = VerifyContext {
        origin: Some("https://tools.example.com"),
        required_clearance: "internal",
        now: datetime!(2026-06-01 12:00 UTC),
    };
    assert!(verify(Some(&document), &root, &context).is_ok());

    let mut group = c.benchmark_group("attestation");
    group.bench_function("bare verify_strict", |b| {
        b.iter(|| {
            key.verify_strict(black_box(&body), black_box(&signature))
                .is_ok()
        })
    });
    group.bench_function("verify (rules 0-8)", |b| {
        b.iter(|| {
            verify(Some(black_box(&document)), &root, &context)
                .map(|a| a.body_sha256()[0])
                .is_ok()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
