//! The 19 ATSA 1.0 conformance vectors (tests/vectors/atsa): every expected outcome reached and
//! every canonical body reproduced byte for byte.

use std::path::PathBuf;

use gatehouse_attest::{TrustRoot, VerifyContext, canonical, verify};
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/atsa")
}

#[test]
fn all_vectors_pass_and_bodies_match() {
    let root =
        TrustRoot::from_json(&std::fs::read(dir().join("_trust-root.json")).unwrap()).unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && !p.file_name().unwrap().to_str().unwrap().starts_with('_')
        })
        .collect();
    files.sort();
    assert_eq!(files.len(), 19, "the vector set is incomplete");
    for path in files {
        let vector: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let name = vector["name"].as_str().unwrap();
        assert_eq!(
            path.file_stem().unwrap(),
            name,
            "file name states the vector"
        );
        let document = match &vector["sad"] {
            Value::Null => None,
            sad => Some(serde_json::to_vec(sad).unwrap()),
        };
        if let (Some(Value::Object(sad)), Some(expected)) =
            (vector.get("sad"), vector["canonical_body"].as_str())
        {
            let body = canonical::body(sad).unwrap();
            assert_eq!(
                String::from_utf8(body).unwrap(),
                expected,
                "{name}: canonical body"
            );
        }
        let context = &vector["context"];
        let now = OffsetDateTime::parse(context["now"].as_str().unwrap(), &Rfc3339).unwrap();
        let ctx = VerifyContext {
            origin: context["origin"].as_str(),
            required_clearance: context["requiredClearance"].as_str().unwrap(),
            now,
        };
        let outcome = verify(document.as_deref(), &root, &ctx);
        let expect = &vector["expect"];
        if expect["admitted"].as_bool().unwrap() {
            let admitted = outcome.unwrap_or_else(|r| panic!("{name}: refused {r}"));
            assert_eq!(admitted.id(), vector["sad"]["id"].as_str().unwrap());
        } else {
            let refusal = outcome
                .err()
                .unwrap_or_else(|| panic!("{name}: admitted, expected a refusal"));
            assert_eq!(
                refusal.reason.as_str(),
                expect["reason"].as_str().unwrap(),
                "{name}: {}",
                refusal.detail
            );
            assert_eq!(
                u64::from(refusal.reason.code()),
                expect["code"].as_u64().unwrap(),
                "{name}"
            );
        }
    }
}
