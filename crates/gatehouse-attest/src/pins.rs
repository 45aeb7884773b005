//! Tool pins: the SHA-256 of the RFC 8785 (JCS) form of a whole tool definition, as the server
//! sent it (name, title, description, inputSchema, outputSchema, annotations, anything else).
//! Pinning only the description would miss a changed schema or annotation.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The pin of a prompt definition (name, title, description, arguments, anything else): the
/// same rule as for tools.
pub fn prompt_pin(prompt: &Value) -> String {
    tool_pin(prompt)
}

/// The pin of a tool definition, as written in bundles: `sha256:<64 lower-case hex>`.
pub fn tool_pin(tool: &Value) -> String {
    format_pin(&tool_digest(tool))
}

/// The raw SHA-256 behind [`tool_pin`], for comparing pins without formatting them.
pub fn tool_digest(tool: &Value) -> [u8; 32] {
    let canonical = serde_jcs::to_vec(tool).expect("a JSON value always canonicalizes");
    Sha256::digest(canonical).into()
}

/// The written form of a digest: `sha256:<64 lower-case hex>` (the inverse of [`parse_pin`]).
pub fn format_pin(digest: &[u8; 32]) -> String {
    format!("sha256:{}", hex::encode(digest))
}

/// Checks the written form of a pin.
pub fn parse_pin(pin: &str) -> Result<[u8; 32], String> {
    let hex_part = pin
        .strip_prefix("sha256:")
        .ok_or_else(|| format!("the pin {pin:?} does not start with \"sha256:\""))?;
    if hex_part.len() != 64 || hex_part.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(format!(
            "the pin {pin:?} is not sha256: followed by 64 lower-case hex digits"
        ));
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(hex_part, &mut out).map_err(|_| format!("the pin {pin:?} is not hex"))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_matter_but_any_change_does() {
        let a = json!({"name": "get_forecast", "description": "d", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}});
        let b = json!({"inputSchema": {"properties": {"city": {"type": "string"}}, "type": "object"}, "description": "d", "name": "get_forecast"});
        assert_eq!(tool_pin(&a), tool_pin(&b));
        let mut changed = a.clone();
        changed["inputSchema"]["properties"]["city"]["type"] = json!("number");
        assert_ne!(tool_pin(&a), tool_pin(&changed));
        let mut annotated = a.clone();
        annotated["annotations"] = json!({"destructiveHint": true});
        assert_ne!(tool_pin(&a), tool_pin(&annotated));
        assert_eq!(parse_pin(&tool_pin(&a)), Ok(tool_digest(&a)));
        assert_eq!(format_pin(&tool_digest(&a)), tool_pin(&a));
    }

    #[test]
    fn pins_are_parsed_strictly() {
        let good = format!("sha256:{}", "ab".repeat(32));
        assert!(parse_pin(&good).is_ok());
        for bad in [
            "ab".repeat(32),
            format!("sha256:{}", "AB".repeat(32)),
            format!("sha256:{}", "ab".repeat(31)),
            "sha256:zz".into(),
        ] {
            assert!(parse_pin(&bad).is_err(), "{bad}");
        }
    }
}
