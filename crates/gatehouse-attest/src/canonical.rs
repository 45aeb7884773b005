//! ATSA's canonical body: the bytes a Server Attestation Document's signature covers.
//!
//! Not RFC 8785. Only the registered fields are kept (`signature` and unknown fields are
//! dropped); an absent `signerKeyId` becomes `null`, every other registered field is kept when
//! present, a present `null` stays `null`; object keys are sorted by UTF-16 code units; each
//! array member is canonicalized and the members are sorted by their canonical strings (UTF-16
//! order), so membership, not order, is signed; strings are escaped as JavaScript's
//! `JSON.stringify` does. UTF-16 order differs from Rust's byte order only outside the BMP.

use std::cmp::Ordering;

use serde_json::{Map, Value};

/// The signed fields, in no particular order.
pub const REGISTERED_FIELDS: [&str; 9] = [
    "v",
    "id",
    "publisher",
    "version",
    "clearance",
    "capabilities",
    "signerKeyId",
    "netAllowedHosts",
    "verification",
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot canonicalize: {0}")]
pub struct CanonicalError(String);

/// The canonical body of a document (a JSON object) as UTF-8 bytes.
pub fn body(document: &Map<String, Value>) -> Result<Vec<u8>, CanonicalError> {
    let mut signed = Map::new();
    for field in REGISTERED_FIELDS {
        if let Some(value) = document.get(field) {
            signed.insert(field.to_string(), value.clone());
        }
    }
    if !signed.contains_key("signerKeyId") {
        signed.insert("signerKeyId".into(), Value::Null);
    }
    let mut out = String::new();
    write_value(&Value::Object(signed), &mut out)?;
    Ok(out.into_bytes())
}

/// Compares two strings by UTF-16 code units, as JavaScript's default sort does.
pub fn utf16_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

fn write_value(value: &Value, out: &mut String) -> Result<(), CanonicalError> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            // Registered fields are strings; integers are written as JavaScript would, and
            // anything fractional is refused rather than risk a formatting mismatch.
            if n.is_i64() || n.is_u64() {
                out.push_str(&n.to_string());
            } else {
                return Err(CanonicalError(format!("the number {n} is not an integer")));
            }
        }
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            let mut members = items
                .iter()
                .map(|item| {
                    let mut s = String::new();
                    write_value(item, &mut s).map(|()| s)
                })
                .collect::<Result<Vec<_>, _>>()?;
            members.sort_by(|a, b| utf16_cmp(a, b));
            out.push('[');
            out.push_str(&members.join(","));
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| utf16_cmp(a, b));
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_value(&map[key], out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

/// `JSON.stringify` string escaping: `"` and `\`, the short escapes, other controls as
/// `\u00xx` (lower-case hex); everything else, non-ASCII included, literal.
fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canon(value: Value) -> String {
        String::from_utf8(body(value.as_object().unwrap()).unwrap()).unwrap()
    }

    #[test]
    fn absent_signer_is_null_but_absent_optional_fields_are_omitted() {
        assert_eq!(
            canon(json!({"v": "1.0"})),
            r#"{"signerKeyId":null,"v":"1.0"}"#
        );
        assert_eq!(
            canon(json!({"v": "1.0", "verification": null, "netAllowedHosts": null})),
            r#"{"netAllowedHosts":null,"signerKeyId":null,"v":"1.0","verification":null}"#
        );
    }

    #[test]
    fn unknown_fields_and_the_signature_are_not_signed() {
        assert_eq!(
            canon(json!({"v": "1.0", "signature": "x", "extra": {"a": 1}, "signerKeyId": "k"})),
            r#"{"signerKeyId":"k","v":"1.0"}"#
        );
    }

    #[test]
    fn arrays_are_sorted_by_canonical_member_strings() {
        assert_eq!(
            canon(json!({"capabilities": ["z", "mcp-server", "a"]})),
            r#"{"capabilities":["a","mcp-server","z"],"signerKeyId":null}"#
        );
    }

    #[test]
    fn utf16_order_differs_from_byte_order_outside_the_bmp() {
        // U+FF5E (3 UTF-8 bytes, one UTF-16 unit 0xFF5E) vs U+1F600 (4 bytes, surrogates 0xD83D..):
        // bytes say U+FF5E < U+1F600, UTF-16 says the emoji comes first.
        let bmp = "\u{FF5E}";
        let astral = "\u{1F600}";
        assert!(bmp.as_bytes() < astral.as_bytes());
        assert_eq!(utf16_cmp(astral, bmp), Ordering::Less);
        assert_eq!(
            canon(json!({"capabilities": [bmp, astral]})),
            format!(r#"{{"capabilities":["{astral}","{bmp}"],"signerKeyId":null}}"#)
        );
    }

    #[test]
    fn strings_are_escaped_like_json_stringify() {
        assert_eq!(
            canon(json!({"id": "q\"b\\s\u{8}\u{c}\n\r\t\u{1}\u{1f}é\u{2028}/\u{7f}"})),
            "{\"id\":\"q\\\"b\\\\s\\b\\f\\n\\r\\t\\u0001\\u001fé\u{2028}/\u{7f}\",\"signerKeyId\":null}"
        );
    }

    #[test]
    fn fractional_numbers_are_refused() {
        assert!(body(json!({"v": 1.5}).as_object().unwrap()).is_err());
        assert!(body(json!({"v": 1}).as_object().unwrap()).is_ok());
    }
}
