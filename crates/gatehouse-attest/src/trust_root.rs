//! The ATSA trust-root shape, `{scheme, keys}`: the clearance scheme and the signer keys a host
//! trusts. Gatehouse's admin bundles carry exactly this shape in their signed part.
//!
//! Loading is where ambiguity is refused: a root with no keys, duplicate key ids, a level name
//! or alias used twice, equal ranks, a key that is not a valid strong Ed25519 point, or an
//! approval naming anything but a canonical level name is an error, never "allow all".

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::VerifyingKey;
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("trust root: {0}")]
pub struct TrustRootError(pub String);

fn err<T>(detail: impl Into<String>) -> Result<T, TrustRootError> {
    Err(TrustRootError(detail.into()))
}

/// A clearance level: its canonical name, its rank, and other names for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Level {
    pub name: String,
    pub rank: i64,
    pub aliases: Vec<String>,
}

/// A named, totally ordered set of levels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheme {
    pub name: String,
    pub levels: Vec<Level>,
}

impl Scheme {
    /// The level a name or alias denotes, compared byte for byte.
    pub fn resolve(&self, name: &str) -> Option<&Level> {
        self.levels
            .iter()
            .find(|l| l.name == name || l.aliases.iter().any(|a| a == name))
    }
}

/// When a signer key stops being valid. An unparseable date is kept so that rule 4 refuses
/// documents signed by that key (fail closed) with a detail naming the bad value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotAfter {
    At(OffsetDateTime),
    Unparseable(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignerKey {
    pub id: String,
    pub public_key: VerifyingKey,
    pub not_after: Option<NotAfter>,
    /// Canonical level names only.
    pub approved_clearances: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustRoot {
    pub scheme: Scheme,
    pub keys: Vec<SignerKey>,
}

/// Decodes standard base64 with padding, exactly `N` bytes; anything lenient (URL-safe
/// alphabet, missing padding, whitespace, trailing bits) is refused.
pub fn decode_exact<const N: usize>(text: &str) -> Result<[u8; N], String> {
    let bytes = STANDARD
        .decode(text)
        .map_err(|e| format!("not standard base64 with padding ({e})"))?;
    <[u8; N]>::try_from(bytes.as_slice())
        .map_err(|_| format!("{} bytes, expected exactly {N}", bytes.len()))
}

/// Parses and checks a raw Ed25519 public key: 32 bytes, a valid point, not of small order.
pub fn parse_public_key(text: &str) -> Result<VerifyingKey, String> {
    let bytes = decode_exact::<32>(text)?;
    let key = VerifyingKey::from_bytes(&bytes)
        .map_err(|_| "not a valid Ed25519 public key".to_string())?;
    if key.is_weak() {
        return Err(
            "a weak (small-order) Ed25519 key, which would accept forged signatures".into(),
        );
    }
    Ok(key)
}

fn string<'a>(value: &'a Value, what: &str) -> Result<&'a str, TrustRootError> {
    match value.as_str() {
        Some(s) if !s.is_empty() => Ok(s),
        _ => err(format!("{what} must be a non-empty string")),
    }
}

fn strings(value: Option<&Value>, what: &str) -> Result<Vec<String>, TrustRootError> {
    match value {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| string(v, what).map(str::to_string))
            .collect(),
        Some(_) => err(format!("{what} must be an array of strings")),
    }
}

impl TrustRoot {
    /// Reads `{scheme, keys}` from a JSON value (other fields are ignored).
    pub fn from_value(root: &Value) -> Result<TrustRoot, TrustRootError> {
        let scheme = root
            .get("scheme")
            .ok_or_else(|| TrustRootError("no \"scheme\"".into()))?;
        let scheme_name =
            string(scheme.get("name").unwrap_or(&Value::Null), "scheme.name")?.to_string();
        let Some(Value::Array(raw_levels)) = scheme.get("levels") else {
            return err("scheme.levels must be an array");
        };
        let mut levels: Vec<Level> = Vec::new();
        for (i, raw) in raw_levels.iter().enumerate() {
            let name = string(
                raw.get("name").unwrap_or(&Value::Null),
                &format!("scheme.levels[{i}].name"),
            )?;
            let rank = raw.get("rank").and_then(Value::as_i64).ok_or_else(|| {
                TrustRootError(format!("scheme.levels[{i}].rank must be an integer"))
            })?;
            let aliases = strings(raw.get("aliases"), &format!("scheme.levels[{i}].aliases"))?;
            levels.push(Level {
                name: name.to_string(),
                rank,
                aliases,
            });
        }
        if levels.is_empty() {
            return err("the scheme has no levels");
        }
        let mut names: Vec<&str> = Vec::new();
        for level in &levels {
            for name in std::iter::once(&level.name).chain(&level.aliases) {
                if names.contains(&name.as_str()) {
                    return err(format!(
                        "the clearance name {name:?} is used twice (as a level or an alias); names must be unambiguous"
                    ));
                }
                names.push(name);
            }
        }
        for (i, a) in levels.iter().enumerate() {
            if let Some(b) = levels[i + 1..].iter().find(|b| b.rank == a.rank) {
                return err(format!(
                    "levels {:?} and {:?} have the same rank {}; the order must be total",
                    a.name, b.name, a.rank
                ));
            }
        }
        let scheme = Scheme {
            name: scheme_name,
            levels,
        };

        let Some(Value::Array(raw_keys)) = root.get("keys") else {
            return err("\"keys\" must be an array");
        };
        if raw_keys.is_empty() {
            return err(
                "there are no signer keys; a trust root that trusts no one cannot admit anything, so it is refused as a likely mistake",
            );
        }
        let mut keys: Vec<SignerKey> = Vec::new();
        for (i, raw) in raw_keys.iter().enumerate() {
            let id = string(
                raw.get("id").unwrap_or(&Value::Null),
                &format!("keys[{i}].id"),
            )?
            .to_string();
            if keys.iter().any(|k| k.id == id) {
                return err(format!("the key id {id:?} appears twice"));
            }
            let public_key = parse_public_key(string(
                raw.get("publicKey").unwrap_or(&Value::Null),
                &format!("keys[{i}].publicKey"),
            )?)
            .map_err(|e| TrustRootError(format!("key {id:?}: publicKey is {e}")))?;
            let not_after = match raw.get("notAfter") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(match OffsetDateTime::parse(s, &Rfc3339) {
                    Ok(at) => NotAfter::At(at),
                    Err(_) => NotAfter::Unparseable(s.clone()),
                }),
                Some(other) => Some(NotAfter::Unparseable(other.to_string())),
            };
            let approved_clearances = strings(
                raw.get("approvedClearances"),
                &format!("keys[{i}].approvedClearances"),
            )?;
            for approved in &approved_clearances {
                match scheme.resolve(approved) {
                    Some(level) if &level.name == approved => {}
                    Some(level) => {
                        return err(format!(
                            "key {id:?} approves {approved:?}, an alias of {:?}; approvals name canonical levels, so an alias cannot widen a key's scope",
                            level.name
                        ));
                    }
                    None => {
                        return err(format!(
                            "key {id:?} approves {approved:?}, which is not a level of scheme {:?}",
                            scheme.name
                        ));
                    }
                }
            }
            keys.push(SignerKey {
                id,
                public_key,
                not_after,
                approved_clearances,
            });
        }
        Ok(TrustRoot { scheme, keys })
    }

    /// Reads a trust root from JSON text.
    pub fn from_json(bytes: &[u8]) -> Result<TrustRoot, TrustRootError> {
        let value = crate::json::parse_strict(bytes, 1024 * 1024, crate::MAX_DEPTH)
            .map_err(|e| TrustRootError(e.to_string()))?;
        Self::from_value(&value)
    }

    pub fn key(&self, id: &str) -> Option<&SignerKey> {
        self.keys.iter().find(|k| k.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KEY: &str = "0EqyMnQrtKs6E2i9RhXk5tAiSrcaAWuvhSCjMsl3hzc=";

    fn root(keys: Value, levels: Value) -> Result<TrustRoot, TrustRootError> {
        TrustRoot::from_value(&json!({"scheme": {"name": "s", "levels": levels}, "keys": keys}))
    }

    fn levels() -> Value {
        json!([{"name": "public", "rank": 0, "aliases": ["open"]}, {"name": "internal", "rank": 10}])
    }

    #[test]
    fn a_good_root_loads() {
        let root = root(
            json!([{"id": "k", "publicKey": KEY, "approvedClearances": ["public"]}]),
            levels(),
        )
        .unwrap();
        assert_eq!(root.scheme.resolve("open").unwrap().name, "public");
        assert!(root.scheme.resolve("OPEN").is_none(), "names are exact");
        assert!(root.key("k").is_some());
    }

    #[test]
    fn ambiguity_and_weak_keys_are_refused_at_load() {
        let ok_key = json!([{"id": "k", "publicKey": KEY}]);
        let cases = [
            (json!([]), levels(), "no signer keys"),
            (
                json!([{"id": "k", "publicKey": KEY}, {"id": "k", "publicKey": KEY}]),
                levels(),
                "appears twice",
            ),
            (
                ok_key.clone(),
                json!([{"name": "a", "rank": 0}, {"name": "b", "rank": 0}]),
                "same rank",
            ),
            (
                ok_key.clone(),
                json!([{"name": "a", "rank": 0, "aliases": ["b"]}, {"name": "b", "rank": 1}]),
                "used twice",
            ),
            (ok_key.clone(), json!([]), "no levels"),
            (
                json!([{"id": "k", "publicKey": KEY, "approvedClearances": ["open"]}]),
                levels(),
                "an alias cannot widen",
            ),
            (
                json!([{"id": "k", "publicKey": KEY, "approvedClearances": ["top"]}]),
                levels(),
                "not a level",
            ),
            // The identity point: small order, would accept forged signatures.
            (
                json!([{"id": "k", "publicKey": "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}]),
                levels(),
                "weak",
            ),
            (
                json!([{"id": "k", "publicKey": "0EqyMnQrtKs6E2i9RhXk5tAiSrcaAWuvhSCjMsl3hzc"}]),
                levels(),
                "base64",
            ),
            (
                json!([{"id": "k", "publicKey": "0EqyMnQrtKs6E2i9RhXk5tAiSrcaAWuvhSCjMsl3hw=="}]),
                levels(),
                "31 bytes",
            ),
        ];
        for (keys, levels, needle) in cases {
            let error = root(keys.clone(), levels).unwrap_err().to_string();
            assert!(error.contains(needle), "{keys}: {error}");
        }
    }

    #[test]
    fn base64_is_strict() {
        assert!(decode_exact::<3>("AQID").is_ok());
        assert!(decode_exact::<3>("AQI D").is_err());
        assert!(decode_exact::<2>("AQI").is_err(), "unpadded");
        assert!(decode_exact::<2>("AQI=").is_ok());
        assert!(
            decode_exact::<2>("AQJ=").is_err(),
            "non-canonical trailing bits"
        );
        assert!(decode_exact::<3>("-_-_").is_err(), "url-safe alphabet");
    }
}
