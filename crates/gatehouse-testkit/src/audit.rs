//! Reading a test's audit log: every record (oldest first) or one event's, as the JSON the
//! log holds ([`records`], [`records_of`]), as [`gatehouse_audit::Record`]s ([`typed`],
//! [`typed_of`]), or as the host's payload type of one event ([`payloads`],
//! [`payloads_with_server`], [`payloads_in`], [`payload_of`]), so a test reads a field by its
//! name in a type rather than a string key into `data`.

use std::path::Path;

use gatehouse_audit::Record;
use gatehouse_host::audit_event::{EventPayload, read_payload};
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

/// The records among `records` (each `{"event": …, "data": …}`: a log line, or a record of
/// `gatehouse audit show --json`) of `P`'s event, as `P`, in order. Panics on one that does
/// not parse, naming it.
pub fn payloads_in<P: EventPayload>(records: &[Value]) -> Vec<P> {
    records
        .iter()
        .filter_map(|r| {
            read_payload::<P>(r)
                .map(|p| p.unwrap_or_else(|e| panic!("a {} record: {e}: {r}", P::EVENT)))
        })
        .collect()
}

/// Every record of `P`'s event in the audit log at `path`, as `P`, oldest first.
pub fn payloads<P: EventPayload>(path: &Path) -> Vec<P> {
    payloads_in(&records(path))
}

/// [`payloads`] with each record's `server` field (the configured name, or its audit form
/// when the server was admitted under an identity; `None` when the record has none).
pub fn payloads_with_server<P: EventPayload>(path: &Path) -> Vec<(Option<String>, P)> {
    records(path)
        .iter()
        .filter_map(|r| {
            let payload =
                read_payload::<P>(r)?.unwrap_or_else(|e| panic!("a {} record: {e}: {r}", P::EVENT));
            Some((r["server"].as_str().map(String::from), payload))
        })
        .collect()
}

/// One [`gatehouse_audit::Record`] as `P`; panics when it is of another event or does not
/// parse.
pub fn payload_of<P: EventPayload>(record: &Record) -> P {
    let value = serde_json::json!({"event": record.event, "data": record.data});
    match read_payload::<P>(&value) {
        Some(Ok(payload)) => payload,
        Some(Err(e)) => panic!("a {} record: {e}: {value}", P::EVENT),
        None => panic!("a {} record, not {}", record.event, P::EVENT),
    }
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

    #[test]
    fn payloads_are_read_by_their_event_with_their_server() {
        use gatehouse_host::audit_event::session::{ServerResumed, ServerSuspended};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let (auditor, _) =
            gatehouse_host::Auditor::open(&path, gatehouse_host::tap::system_clock()).unwrap();
        let resumed = |name: &str| ServerResumed {
            name: name.into(),
            key: format!("key-{name}"),
        };
        auditor.write(Some("a"), &resumed("a")).unwrap();
        auditor
            .write(
                Some("b"),
                &ServerSuspended {
                    name: "b".into(),
                    reason: "repeated_denials".into(),
                    detail: "too many".into(),
                    key: "key-b".into(),
                },
            )
            .unwrap();
        auditor.write(None, &resumed("c")).unwrap();
        drop(auditor);

        assert_eq!(
            payloads::<ServerResumed>(&path),
            [resumed("a"), resumed("c")]
        );
        assert_eq!(
            payloads_with_server::<ServerResumed>(&path),
            [(Some("a".into()), resumed("a")), (None, resumed("c"))]
        );
        let suspended: Vec<ServerSuspended> = payloads(&path);
        assert_eq!(suspended.len(), 1);
        assert_eq!(suspended[0].detail, "too many");
        assert_eq!(
            payloads_in::<ServerResumed>(&records_of(&path, "server_suspended")),
            []
        );
        let typed = typed_of(&path, "server_resumed");
        assert_eq!(payload_of::<ServerResumed>(&typed[1]), resumed("c"));
    }

    #[test]
    #[should_panic(expected = "a server_resumed record")]
    fn a_record_that_does_not_parse_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::fs::write(
            &path,
            "{\"event\":\"server_resumed\",\"data\":{\"name\":\"a\"}}\n",
        )
        .unwrap();
        payloads::<gatehouse_host::audit_event::session::ServerResumed>(&path);
    }
}
