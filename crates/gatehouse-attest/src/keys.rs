//! Key files for admins and server operators: an Ed25519 private key (the 32-byte seed) with
//! its id, and the matching public key in the trust-root shape. Formats only; generating
//! randomness and writing files (mode 0600) is the caller's job.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{SigningKey, VerifyingKey};
use serde_json::{Value, json};

use crate::json::parse_strict;
use crate::trust_root::decode_exact;

pub const PRIVATE_KEY_TYPE: &str = "gatehouse-ed25519-private-key";

/// The private key file's content. Keep it secret: it is never printed by Gatehouse.
pub fn private_key_document(id: &str, key: &SigningKey) -> String {
    let value = json!({
        "type": PRIVATE_KEY_TYPE,
        "id": id,
        "seed": STANDARD.encode(key.to_bytes()),
        "note": "Ed25519 private key for Gatehouse signing. Keep it offline and readable only by its owner."
    });
    let mut text = serde_json::to_string_pretty(&value).expect("serializes");
    text.push('\n');
    text
}

/// `{"id", "publicKey"}`: the entry for `root.keys` or `keys` in a bundle.
pub fn public_key_document(id: &str, key: &VerifyingKey) -> Value {
    json!({"id": id, "publicKey": STANDARD.encode(key.to_bytes())})
}

/// Reads a private key file: its id and key.
pub fn parse_private_key(bytes: &[u8]) -> Result<(String, SigningKey), String> {
    let value = parse_strict(bytes, 64 * 1024, 4).map_err(|e| format!("not a key file: {e}"))?;
    if value.get("type").and_then(Value::as_str) != Some(PRIVATE_KEY_TYPE) {
        return Err(format!(
            "not a Gatehouse private key file (\"type\" is not {PRIVATE_KEY_TYPE:?}); create one with `gatehouse bundle keygen`"
        ));
    }
    let id = value
        .get("id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or("the key file has no \"id\"")?;
    let seed = value
        .get("seed")
        .and_then(Value::as_str)
        .ok_or("the key file has no \"seed\"")?;
    let seed = decode_exact::<32>(seed).map_err(|e| format!("the seed is {e}"))?;
    Ok((id.to_string(), SigningKey::from_bytes(&seed)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_keys_round_trip_and_reject_other_files() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let text = private_key_document("admin-a", &key);
        let (id, parsed) = parse_private_key(text.as_bytes()).unwrap();
        assert_eq!(
            (id.as_str(), parsed.to_bytes()),
            ("admin-a", key.to_bytes())
        );
        assert!(
            parse_private_key(br#"{"id": "x", "publicKey": "AA=="}"#)
                .unwrap_err()
                .contains("bundle keygen")
        );
        let short = text.replace(&STANDARD.encode(key.to_bytes()), "AAAA");
        assert!(
            parse_private_key(short.as_bytes())
                .unwrap_err()
                .contains("seed")
        );
    }
}
