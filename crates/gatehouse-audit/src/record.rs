//! One record: how a line is written, how it is parsed back (strictly), and the hash that chains
//! records together.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};
use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

use crate::{AuditError, MAX_EVENT_BYTES, MAX_RECORD_BYTES, MAX_SERVER_BYTES};

/// The `prev` of the first record: 64 zeros.
pub const ZERO_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The event the log writes when it moved a torn last line to a side file.
pub const EVENT_TORN_TAIL: &str = "audit_torn_tail";

/// The event the log writes when its head file did not match the log (records were removed).
pub const EVENT_HEAD_MISMATCH: &str = "audit_head_mismatch";

/// The event the log writes when batched writers of an earlier boot left their markers: the
/// machine stopped while their last records may not have reached the disk. Also when a batched
/// writer's flush failed (then its data holds `flush_failed`, a count, and `durable_seq`).
pub const EVENT_SHORT_TAIL: &str = "audit_short_tail";

/// The event that starts every active file after the first: it names the sealed segment the
/// chain continues from (`segment`, `number`, `first_seq`, `last_seq`, `last_hash`, `bytes`),
/// and its `prev` is that `last_hash`.
pub const EVENT_ROTATED: &str = "audit_rotated";

/// The event [`crate::AuditLog::prune`] writes before it deletes sealed segments: `removed`
/// lists each (`segment`, `number`, `first_seq`, `last_seq`, `last_hash`); `through` and
/// `through_hash` are the newest removed segment's number and last hash; `first` the oldest
/// segment number this record and the retention records it saw account for (1 normally).
pub const EVENT_RETENTION: &str = "audit_retention";

/// A point in the chain: a record's `seq` and the SHA-256 (lower-case hex) of its line. This is
/// what the head file holds, and what to copy elsewhere to detect a rewrite later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Anchor {
    pub seq: u64,
    pub hash: String,
}

impl Anchor {
    /// The anchor before the first record: seq 0, 64 zeros.
    pub fn genesis() -> Anchor {
        Anchor {
            seq: 0,
            hash: ZERO_HASH.to_string(),
        }
    }
}

/// A record as read back from the log.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// 1 for the first record, +1 for each record after it.
    pub seq: u64,
    /// When the caller said the event happened (UTC).
    pub time: OffsetDateTime,
    /// snake_case event type, e.g. `admission_decision`.
    pub event: String,
    /// The server the record is about, when there is one.
    pub server: Option<String>,
    /// SHA-256 (lower-case hex) of the previous record's line, or [`ZERO_HASH`].
    pub prev: String,
    /// The caller's data.
    pub data: Map<String, Value>,
}

/// Serializes with the line's field names and order (`time` as RFC 3339), so `--json` output
/// looks like the log.
impl Serialize for Record {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let time = self
            .time
            .format(&Rfc3339)
            .map_err(serde::ser::Error::custom)?;
        let fields = if self.server.is_some() { 6 } else { 5 };
        let mut s = serializer.serialize_struct("Record", fields)?;
        s.serialize_field("seq", &self.seq)?;
        s.serialize_field("time", &time)?;
        s.serialize_field("event", &self.event)?;
        if let Some(server) = &self.server {
            s.serialize_field("server", server)?;
        }
        s.serialize_field("prev", &self.prev)?;
        s.serialize_field("data", &self.data)?;
        s.end()
    }
}

/// The line as written. Field order here is the order on disk.
#[derive(Serialize)]
struct LineOut<'a> {
    seq: u64,
    time: &'a str,
    event: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    server: Option<&'a str>,
    prev: &'a str,
    data: &'a Map<String, Value>,
}

/// What a caller (or the log itself) asks to record; the log adds `seq` and `prev`.
pub(crate) struct Entry<'a> {
    pub time: &'a str,
    pub event: &'a str,
    pub server: Option<&'a str>,
    pub data: &'a Map<String, Value>,
}

/// The bytes of one line (without the newline), checked to read back with [`parse_line`]:
/// the log never holds a line its own reader would refuse.
pub(crate) fn encode(entry: &Entry<'_>, seq: u64, prev: &str) -> Result<Vec<u8>, AuditError> {
    let line = serde_json::to_vec(&LineOut {
        seq,
        time: entry.time,
        event: entry.event,
        server: entry.server,
        prev,
        data: entry.data,
    })
    .map_err(|e| AuditError::Unreadable {
        event: entry.event.to_string(),
        reason: e.to_string(),
    })?;
    if line.len() > MAX_RECORD_BYTES {
        return Err(AuditError::RecordTooLarge {
            event: entry.event.to_string(),
            bytes: line.len(),
        });
    }
    parse_line(&line).map_err(|reason| AuditError::Unreadable {
        event: entry.event.to_string(),
        reason,
    })?;
    Ok(line)
}

/// SHA-256 of a line's bytes (without its newline), lower-case hex.
pub(crate) fn line_hash(line: &[u8]) -> String {
    hex::encode(Sha256::digest(line))
}

/// The line as parsed: every field required except `server`, nothing unknown, no key twice.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LineIn {
    seq: u64,
    time: String,
    event: String,
    #[serde(default)]
    server: Option<String>,
    prev: String,
    data: StrictObject,
}

/// Parses one line (without its newline). The error is a sentence for the verify report,
/// with control characters escaped: it can quote the line, and it is printed to terminals.
pub(crate) fn parse_line(line: &[u8]) -> Result<Record, String> {
    parse_line_unescaped(line).map_err(|reason| printable(&reason))
}

/// `text` with control characters written as `\u{…}` escapes.
pub(crate) fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    out
}

fn parse_line_unescaped(line: &[u8]) -> Result<Record, String> {
    let raw: LineIn = serde_json::from_slice(line).map_err(|e| format!("not a record: {e}"))?;
    if raw.seq == 0 {
        return Err("seq is 0; the first record is seq 1".to_string());
    }
    let time = OffsetDateTime::parse(&raw.time, &Rfc3339)
        .map_err(|e| format!("time {:?} is not RFC 3339: {e}", raw.time))?;
    if time.offset() != UtcOffset::UTC {
        return Err(format!("time {:?} is not in UTC", raw.time));
    }
    if !is_event_name(&raw.event) {
        return Err(format!("event {:?} is not snake_case", raw.event));
    }
    if let Some(server) = &raw.server
        && let Err(reason) = check_server(server)
    {
        return Err(format!("server {server:?}: {reason}"));
    }
    if !is_hash(&raw.prev) {
        return Err(format!(
            "prev {:?} is not 64 lower-case hex digits",
            raw.prev
        ));
    }
    Ok(Record {
        seq: raw.seq,
        time,
        event: raw.event,
        server: raw.server,
        prev: raw.prev,
        data: raw.data.0,
    })
}

/// The prefix of the log's own events ([`EVENT_TORN_TAIL`], [`EVENT_HEAD_MISMATCH`],
/// [`EVENT_SHORT_TAIL`], [`EVENT_ROTATED`], [`EVENT_RETENTION`]): [`crate::AuditLog::append`] refuses a caller's event that starts with
/// it, so no caller can forge one of these records.
pub const RESERVED_EVENT_PREFIX: &str = "audit_";

/// The check [`crate::AuditLog::append`] makes of a caller's event name: snake_case
/// (`[a-z][a-z0-9_]*`, at most [`MAX_EVENT_BYTES`]) and not starting with
/// [`RESERVED_EVENT_PREFIX`]. A caller with a closed set of names can test them all with it.
pub fn check_event_name(event: &str) -> Result<(), AuditError> {
    if !is_event_name(event) {
        return Err(AuditError::BadEvent {
            event: event.to_string(),
        });
    }
    if event.starts_with(RESERVED_EVENT_PREFIX) {
        return Err(AuditError::ReservedEvent {
            event: event.to_string(),
        });
    }
    Ok(())
}

/// `[a-z][a-z0-9_]*`, at most [`MAX_EVENT_BYTES`].
pub(crate) fn is_event_name(event: &str) -> bool {
    let mut bytes = event.bytes();
    event.len() <= MAX_EVENT_BYTES
        && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// A server id is shown to people and filtered on: it must be non-empty, bounded and free of
/// control characters (which could rewrite a terminal line).
pub(crate) fn check_server(server: &str) -> Result<(), &'static str> {
    if server.is_empty() {
        Err("it is empty")
    } else if server.len() > MAX_SERVER_BYTES {
        Err("it is longer than 256 bytes")
    } else if server.chars().any(char::is_control) {
        Err("it holds control characters")
    } else {
        Ok(())
    }
}

/// 64 lower-case hex digits.
pub(crate) fn is_hash(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The `time` field: RFC 3339 in UTC (`Z`), whatever offset the caller's time carries.
pub(crate) fn format_time(now: OffsetDateTime) -> Result<String, AuditError> {
    now.checked_to_offset(UtcOffset::UTC)
        .and_then(|utc| utc.format(&Rfc3339).ok())
        .ok_or_else(|| AuditError::BadTime {
            time: now.to_string(),
        })
}

/// The name of a JSON value's type, for error messages.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A JSON object parsed with duplicate keys refused at every depth. `serde_json` keeps the last
/// of two equal keys; another reader might keep the first, so a line with duplicates could mean
/// different things to different tools. Gatehouse never writes one.
struct StrictObject(Map<String, Value>);

impl<'de> Deserialize<'de> for StrictObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match deserializer.deserialize_map(StrictVisitor)? {
            Value::Object(map) => Ok(StrictObject(map)),
            _ => Err(de::Error::custom("data is not an object")),
        }
    }
}

struct StrictValue(Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
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

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
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

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(StrictValue(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(de::Error::custom(format!("duplicate key {key:?}")));
            }
            let StrictValue(value) = access.next_value()?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use time::macros::datetime;

    fn entry_line(data: &Map<String, Value>) -> Vec<u8> {
        let entry = Entry {
            time: "2026-05-01T12:00:00Z",
            event: "tool_call",
            server: Some("demo"),
            data,
        };
        encode(&entry, 1, ZERO_HASH).unwrap()
    }

    #[test]
    fn encodes_fields_in_a_stable_order() {
        let mut data = Map::new();
        data.insert("z".into(), json!(1));
        data.insert("a".into(), json!(2));
        let line = String::from_utf8(entry_line(&data)).unwrap();
        assert_eq!(
            line,
            format!(
                r#"{{"seq":1,"time":"2026-05-01T12:00:00Z","event":"tool_call","server":"demo","prev":"{ZERO_HASH}","data":{{"z":1,"a":2}}}}"#
            )
        );
    }

    #[test]
    fn parses_what_it_writes() {
        let data = json!({"decision": "admitted", "n": 1.5, "list": [null, true]});
        let line = entry_line(data.as_object().unwrap());
        let record = parse_line(&line).unwrap();
        assert_eq!(record.seq, 1);
        assert_eq!(record.time, datetime!(2026-05-01 12:00 UTC));
        assert_eq!(record.server.as_deref(), Some("demo"));
        assert_eq!(Value::Object(record.data), data);
        assert_eq!(
            serde_json::to_vec(&parse_line(&line).unwrap()).unwrap(),
            line
        );
    }

    #[test]
    fn refuses_duplicate_keys_unknown_fields_and_missing_fields() {
        let ok = format!(
            r#"{{"seq":1,"time":"2026-05-01T12:00:00Z","event":"e","prev":"{ZERO_HASH}","data":{{"a":{{"b":1}}}}}}"#
        );
        assert!(parse_line(ok.as_bytes()).is_ok());
        let bad = [
            ok.replace(r#"{"b":1}"#, r#"{"b":1,"b":2}"#),
            ok.replace(r#""seq":1,"#, r#""seq":1,"seq":1,"#),
            ok.replace(r#""seq":1,"#, r#""seq":1,"extra":true,"#),
            ok.replace(r#""seq":1,"#, ""),
            ok.replace(r#","data":{"a":{"b":1}}"#, ""),
            ok.replace(r#""data":{"a":{"b":1}}"#, r#""data":[1]"#),
            ok.replace("\"seq\":1", "\"seq\":0"),
            ok.replace("\"seq\":1", "\"seq\":-1"),
            ok.replace("12:00:00Z", "12:00:00+01:00"),
            ok.replace("12:00:00Z", "yesterday"),
            ok.replace("\"event\":\"e\"", "\"event\":\"Bad-Name\""),
            ok.replace(ZERO_HASH, &ZERO_HASH.replace('0', "A")),
            ok.replace(ZERO_HASH, "00"),
            ok.clone() + "x",
        ];
        for line in bad {
            assert!(parse_line(line.as_bytes()).is_err(), "accepted {line}");
        }
    }

    #[test]
    fn parse_errors_never_carry_control_characters() {
        // An unknown field named ESC [2J (clear screen), written as a JSON escape.
        let line = format!(
            "{{\"seq\":1,\"time\":\"2026-05-01T12:00:00Z\",\"event\":\"e\",\"prev\":\"{ZERO_HASH}\",\"data\":{{}},\"\\u001b[2J\":1}}"
        );
        let reason = parse_line(line.as_bytes()).unwrap_err();
        assert!(!reason.chars().any(char::is_control), "{reason:?}");
        assert!(reason.contains("\\u{1b}"), "{reason}");
    }

    #[test]
    fn event_names_are_snake_case() {
        for good in ["a", "tool_call", "bundle_accepted", "x1_2"] {
            assert!(is_event_name(good), "{good}");
        }
        let too_long = "a".repeat(MAX_EVENT_BYTES + 1);
        for bad in [
            "",
            "_a",
            "1a",
            "Tool",
            "tool-call",
            "tool call",
            "tööl",
            too_long.as_str(),
        ] {
            assert!(!is_event_name(bad), "{bad}");
        }
    }

    #[test]
    fn the_logs_own_events_are_reserved() {
        for own in [EVENT_TORN_TAIL, EVENT_HEAD_MISMATCH, EVENT_SHORT_TAIL] {
            assert!(is_event_name(own), "{own}");
            assert!(own.starts_with(RESERVED_EVENT_PREFIX), "{own}");
            assert!(
                matches!(check_event_name(own), Err(AuditError::ReservedEvent { .. })),
                "{own}"
            );
        }
        assert!(check_event_name("tool_call").is_ok());
        assert!(matches!(
            check_event_name("Tool"),
            Err(AuditError::BadEvent { .. })
        ));
    }

    #[test]
    fn server_ids_are_bounded_and_printable() {
        assert!(check_server("github.com/acme/tools").is_ok());
        assert!(check_server("").is_err());
        assert!(check_server("a\nb").is_err());
        assert!(check_server("a\u{1b}[2J").is_err());
        assert!(check_server(&"s".repeat(MAX_SERVER_BYTES + 1)).is_err());
    }

    #[test]
    fn time_is_written_in_utc() {
        let paris = datetime!(2026-05-01 14:00 +02:00);
        assert_eq!(format_time(paris).unwrap(), "2026-05-01T12:00:00Z");
        let nanos = datetime!(2026-05-01 12:00:00.5 UTC);
        assert_eq!(format_time(nanos).unwrap(), "2026-05-01T12:00:00.5Z");
        let year_minus_one = time::Date::from_calendar_date(-1, time::Month::January, 1).unwrap();
        let before_rfc3339 = OffsetDateTime::new_utc(year_minus_one, time::Time::MIDNIGHT);
        assert!(matches!(
            format_time(before_rfc3339),
            Err(AuditError::BadTime { .. })
        ));
    }

    #[test]
    fn refuses_lines_that_would_not_read_back() {
        let mut deep = json!(1);
        for _ in 0..200 {
            deep = json!([deep]);
        }
        let mut data = Map::new();
        data.insert("deep".into(), deep);
        let entry = Entry {
            time: "2026-05-01T12:00:00Z",
            event: "tool_call",
            server: None,
            data: &data,
        };
        assert!(matches!(
            encode(&entry, 1, ZERO_HASH),
            Err(AuditError::Unreadable { .. })
        ));
    }
}
