//! Reading records back: all of them, filtered by server or event, or exported verbatim (both
//! through [`stream`](crate::stream), across the segments).
//! Reading does not check the chain (that is [`verify`](crate::verify)); it does refuse a line
//! that is not a record, naming it, rather than skip it.

use std::io::Write;
use std::path::Path;

use serde_json::Value;

use crate::AuditError;
use crate::record::Record;
use crate::stream::stream;

/// Which records to keep: every condition given must hold (`--server ID`, `--type EVENT`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Keep records about this server id only.
    pub server: Option<String>,
    /// Keep records of this event type only.
    pub event: Option<String>,
}

impl Filter {
    /// Keeps everything.
    pub fn all() -> Filter {
        Filter::default()
    }

    pub fn matches(&self, record: &Record) -> bool {
        self.server
            .as_deref()
            .is_none_or(|server| record.server.as_deref() == Some(server))
            && self
                .event
                .as_deref()
                .is_none_or(|event| record.event == event)
    }

    /// Whether the line can hold a matching record, by a look at its bytes before parsing
    /// them: `false` only when it has no backslash (so every JSON string in it is written
    /// literally) and lacks the `"server":…` or `"event":…` member the filter asks for, which a
    /// matching record's line must then hold. A quick `false` saves the parse of a record that
    /// cannot match, which is most of the cost of a filtered read; such a line is not checked
    /// further.
    pub(crate) fn may_match(&self, line: &[u8]) -> bool {
        if line.contains(&b'\\') {
            return true;
        }
        let holds = |key: &str, value: &Option<String>| match value {
            None => true,
            Some(value) => {
                let needle = format!("\"{key}\":{}", Value::String(value.clone()));
                contains(line, needle.as_bytes())
            }
        };
        holds("server", &self.server) && holds("event", &self.event)
    }

    /// The records that match, in log order.
    pub fn apply(&self, records: Vec<Record>) -> Vec<Record> {
        records.into_iter().filter(|r| self.matches(r)).collect()
    }
}

/// How [`export`] writes records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// One record per line, each line byte for byte as in the log.
    Jsonl,
    /// A JSON array whose members are the log's lines byte for byte (one per line), so the
    /// records' hashes can still be recomputed from the export.
    JsonArray,
}

/// Every record in the log at `path`, oldest first, across its segments. It holds them all in
/// memory (about 2 KB a record once parsed): for tests and small logs. Anything that shows
/// records to a person uses [`tail`](crate::tail) (the newest few) or
/// [`stream`](crate::stream) (all of them, one at a time).
pub fn read(path: impl AsRef<Path>) -> Result<Vec<Record>, AuditError> {
    stream(path, &Filter::all())?
        .map(|item| item.map(|s| s.record))
        .collect()
}

/// Writes the records that match `filter` to `out` in `format`, oldest first across the
/// segments, one at a time (constant memory); returns how many. Records are not
/// re-serialized: each is the log's line as it is on disk.
pub fn export(
    path: impl AsRef<Path>,
    filter: &Filter,
    format: ExportFormat,
    out: &mut dyn Write,
) -> Result<u64, AuditError> {
    let path = path.as_ref();
    let sink_err = |source| AuditError::Export {
        path: path.to_path_buf(),
        source,
    };
    let records = stream(path, filter)?;
    let mut count = 0u64;
    if format == ExportFormat::JsonArray {
        out.write_all(b"[").map_err(sink_err)?;
    }
    for item in records {
        let bytes = item?.line;
        match format {
            ExportFormat::Jsonl => out.write_all(&bytes).and_then(|()| out.write_all(b"\n")),
            ExportFormat::JsonArray => {
                let sep: &[u8] = if count == 0 { b"\n" } else { b",\n" };
                out.write_all(sep).and_then(|()| out.write_all(&bytes))
            }
        }
        .map_err(sink_err)?;
        count += 1;
    }
    if format == ExportFormat::JsonArray {
        let end: &[u8] = if count == 0 { b"]\n" } else { b"\n]\n" };
        out.write_all(end).map_err(sink_err)?;
    }
    Ok(count)
}

/// Whether `needle` occurs in `haystack`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    haystack
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == first)
        .any(|(i, _)| haystack[i + 1..].starts_with(rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quick_look_never_rules_out_a_line_that_matches() {
        let filter = Filter {
            server: Some("demo".into()),
            event: Some("tool_call".into()),
        };
        let line = r#"{"seq":1,"time":"2026-05-01T12:00:00Z","event":"tool_call","server":"demo","prev":"00","data":{}}"#;
        assert!(filter.may_match(line.as_bytes()));
        // Another server or event: ruled out without parsing.
        assert!(!filter.may_match(line.replace("demo", "other").as_bytes()));
        assert!(!filter.may_match(line.replace("tool_call", "admission").as_bytes()));
        // The member inside data is not ruled out (the parse that follows rules it out).
        let in_data = r#"{"seq":1,"time":"t","event":"x","server":"other","prev":"00","data":{"server":"demo"}}"#;
        let server = Filter {
            server: Some("demo".into()),
            event: None,
        };
        assert!(server.may_match(in_data.as_bytes()));
        assert!(!server.may_match(in_data.replace("demo", "else").as_bytes()));
        // Escapes anywhere: always parsed (\u0064emo is "demo").
        let escaped = r#"{"seq":1,"time":"t","event":"tool_call","server":"\u0064emo","prev":"00","data":{}}"#;
        assert!(filter.may_match(escaped.as_bytes()));
        // No filter: everything may match.
        assert!(Filter::all().may_match(b"anything"));
    }
}
