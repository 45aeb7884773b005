//! Strict JSON (`gatehouse_attest::json::parse_strict`), which every attestation document and
//! bundle goes through. Properties: strict parsing only narrows serde_json (whatever it accepts,
//! serde_json reads as the same value); what it accepts, written out, is accepted again; the
//! ATSA canonical body of an object is deterministic, strict JSON itself, and a fixed point
//! (canonicalizing the canonical body gives the same bytes).
#![no_main]

use gatehouse_attest::json::{JsonError, parse_strict};
use gatehouse_attest::{MAX_DEPTH, MAX_DOCUMENT_BYTES, canonical};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let value = match parse_strict(data, MAX_DOCUMENT_BYTES, MAX_DEPTH) {
        Ok(value) => value,
        Err(JsonError::TooLarge { size, max }) => {
            assert!(size > max && data.len() > MAX_DOCUMENT_BYTES);
            return;
        }
        Err(JsonError::Invalid(_)) => return,
    };
    let lax: Value = serde_json::from_slice(data).expect("parse_strict accepted what serde_json refuses");
    assert_eq!(lax, value, "serde_json reads the document differently");

    let written = serde_json::to_vec(&value).expect("a parsed value serializes");
    parse_strict(&written, usize::MAX, MAX_DEPTH).expect("a parsed value, written out, parses again");

    if let Value::Object(document) = &value {
        let first = canonical::body(document);
        assert_eq!(first, canonical::body(document), "the canonical body is not deterministic");
        if let Ok(body) = first {
            // The body keeps some of the fields as they are: it nests no deeper than the document.
            let reread = parse_strict(&body, usize::MAX, MAX_DEPTH)
                .expect("the canonical body is not strict JSON");
            let Value::Object(reread) = reread else {
                panic!("the canonical body is not an object");
            };
            assert_eq!(
                canonical::body(&reread).expect("the canonical body canonicalizes"),
                body,
                "the canonical body is not a fixed point"
            );
        }
    }
});
