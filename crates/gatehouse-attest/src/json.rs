//! Strict JSON: a size cap, a depth cap, and duplicate object keys refused (two parsers could
//! otherwise disagree on which `clearance` a document asserts).

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonError {
    #[error("the document is {size} bytes, over the {max}-byte limit")]
    TooLarge { size: usize, max: usize },
    #[error("{0}")]
    Invalid(String),
}

/// Parses `bytes` as one JSON value, refusing documents over `max_bytes`, nested deeper than
/// `max_depth`, or with a key repeated in any object.
pub fn parse_strict(bytes: &[u8], max_bytes: usize, max_depth: usize) -> Result<Value, JsonError> {
    if bytes.len() > max_bytes {
        return Err(JsonError::TooLarge {
            size: bytes.len(),
            max: max_bytes,
        });
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = Strict {
        depth: 0,
        max_depth,
    }
    .deserialize(&mut deserializer)
    .map_err(|e| JsonError::Invalid(e.to_string()))?;
    deserializer
        .end()
        .map_err(|e| JsonError::Invalid(e.to_string()))?;
    Ok(value)
}

#[derive(Clone, Copy)]
struct Strict {
    depth: usize,
    max_depth: usize,
}

impl Strict {
    fn nested<E: serde::de::Error>(self) -> Result<Strict, E> {
        if self.depth >= self.max_depth {
            return Err(E::custom(format_args!(
                "nested deeper than {} levels",
                self.max_depth
            )));
        }
        Ok(Strict {
            depth: self.depth + 1,
            ..self
        })
    }
}

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.nested()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(inner)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.nested()?;
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(A::Error::custom(format_args!("duplicate key {key:?}")));
            }
            let value = map.next_value_seed(inner)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_json_and_keeps_null() {
        let value = parse_strict(br#"{"a": null, "b": [1, 2.5, "x", true]}"#, 1024, 4).unwrap();
        assert_eq!(value["a"], Value::Null);
        assert!(value.get("c").is_none());
    }

    #[test]
    fn refuses_duplicate_keys_at_any_depth() {
        for doc in [
            r#"{"a": 1, "a": 2}"#,
            r#"{"x": {"k": 1, "k": 1}}"#,
            r#"[{"k": 1, "k": 2}]"#,
        ] {
            let error = parse_strict(doc.as_bytes(), 1024, 8).unwrap_err();
            assert!(
                error.to_string().contains("duplicate key"),
                "{doc}: {error}"
            );
        }
    }

    #[test]
    fn refuses_deep_nesting_and_large_documents() {
        let deep = "[".repeat(5) + &"]".repeat(5);
        assert!(parse_strict(deep.as_bytes(), 1024, 5).is_ok());
        let deeper = "[".repeat(6) + &"]".repeat(6);
        assert!(
            parse_strict(deeper.as_bytes(), 1024, 5)
                .unwrap_err()
                .to_string()
                .contains("deeper")
        );
        assert_eq!(
            parse_strict(b"[1]", 2, 5),
            Err(JsonError::TooLarge { size: 3, max: 2 })
        );
    }

    #[test]
    fn refuses_trailing_data_and_bad_syntax() {
        assert!(parse_strict(b"{} {}", 1024, 5).is_err());
        assert!(parse_strict(b"{'a': 1}", 1024, 5).is_err());
        assert!(parse_strict(b"", 1024, 5).is_err());
        assert!(parse_strict(b"\xff", 1024, 5).is_err());
    }
}
