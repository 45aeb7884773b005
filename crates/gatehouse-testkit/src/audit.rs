//! Reading a test's audit log: every record (oldest first) or one event's, as the JSON the
//! log holds ([`records`], [`records_of`]) or as [`gatehouse_audit::Record`]s ([`typed`],
//! [`typed_of`]).

use std::path::Path;

use gatehouse_audit::Record;
use serde_json::Value;

/// Every record of the audit log at `path`, oldest first; none when there is no log. Panics
/// on a line that is not JSON, naming it.
pub fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The records of [`records`] whose `event` is `event`.
pub fn records_of(path: &Path, event: &str) -> Vec<Value> {
    records(path)
        .into_iter()
        .filter(|r| r["event"] == event)
        .collect()
}

/// Every record of the audit log at `path` through `gatehouse_audit::read`, which must
/// succeed (the log exists and each line is a record).
pub fn typed(path: &Path) -> Vec<Record> {
    gatehouse_audit::read(path).unwrap()
}

/// The records of [`typed`] whose event is `event`.
pub fn typed_of(path: &Path, event: &str) -> Vec<Record> {
    typed(path)
        .into_iter()
        .filter(|r| r.event == event)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_log_has_no_records() {
        let dir = tempfile::tempdir().unwrap();
        assert!(records(&dir.path().join("audit.jsonl")).is_empty());
        assert!(records_of(&dir.path().join("audit.jsonl"), "admission").is_empty());
    }

    #[test]
    fn records_are_read_in_order_and_filtered_by_event() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::fs::write(
            &path,
            "{\"event\":\"a\",\"n\":1}\n{\"event\":\"b\",\"n\":2}\n{\"event\":\"a\",\"n\":3}\n",
        )
        .unwrap();
        let all = records(&path);
        assert_eq!(all.len(), 3);
        let a: Vec<_> = records_of(&path, "a")
            .iter()
            .map(|r| r["n"].clone())
            .collect();
        assert_eq!(a, [1, 3]);
    }

    #[test]
    #[should_panic(expected = "not json")]
    fn a_line_that_is_not_json_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::fs::write(&path, "{\"event\":\"a\"}\nnot json\n").unwrap();
        records(&path);
    }

    #[test]
    fn typed_records_are_the_logs_own() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let now = gatehouse_host::tap::system_clock();
        let (mut log, _) = gatehouse_audit::AuditLog::open(&path, now()).unwrap();
        log.append(
            "tool_call",
            Some("demo"),
            serde_json::json!({"tool": "echo"}),
            now(),
        )
        .unwrap();
        log.append("admission", Some("demo"), serde_json::json!({}), now())
            .unwrap();
        drop(log);
        let calls = typed_of(&path, "tool_call");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].data["tool"], "echo");
        assert_eq!(typed(&path).len(), records(&path).len());
        assert_eq!(records_of(&path, "admission").len(), 1);
    }
}
