//! Appends that must fail, so the gate can refuse: bad input, and a log that cannot be
//! written. Each failure leaves the log as it was, and a good append afterwards still works.

#[path = "support/fixture.rs"]
mod fixture;

use std::fs;

use fixture::{assert_intact, log_with, new_log, t};
use gatehouse_audit::{AuditError, AuditLog, MAX_RECORD_BYTES, head_path};
use serde_json::{Value, json};

#[test]
fn event_names_must_be_snake_case() {
    let (_dir, path) = log_with(1);
    let (mut log, _) = AuditLog::open(&path, t(0)).unwrap();
    let before = fs::read(&path).unwrap();
    for bad in [
        "",
        "Tool_call",
        "tool-call",
        "1st",
        "_x",
        "tool call",
        "tool_call\n",
    ] {
        let err = log.append(bad, None, json!({}), t(1)).unwrap_err();
        assert!(matches!(err, AuditError::BadEvent { .. }), "{bad:?}: {err}");
    }
    assert_eq!(fs::read(&path).unwrap(), before);
    for good in [
        "admission_decision",
        "tool_call",
        "bundle_accepted",
        "pin_mismatch2",
    ] {
        log.append(good, None, json!({}), t(1)).unwrap();
    }
}

#[test]
fn the_audit_prefix_is_reserved_for_the_log() {
    let (_dir, path) = new_log();
    let (mut log, _) = AuditLog::open(&path, t(0)).unwrap();
    for reserved in ["audit_torn_tail", "audit_head_mismatch", "audit_anything"] {
        let err = log.append(reserved, None, json!({}), t(1)).unwrap_err();
        assert_eq!(err.code(), "reserved_event", "{reserved}");
    }
    log.append("auditor_viewed", None, json!({}), t(1)).unwrap();
}

#[test]
fn data_must_be_an_object() {
    let (_dir, path) = new_log();
    let (mut log, _) = AuditLog::open(&path, t(0)).unwrap();
    for bad in [json!(null), json!([1]), json!("x"), json!(1), json!(true)] {
        let err = log
            .append("tool_call", None, bad.clone(), t(1))
            .unwrap_err();
        assert!(
            matches!(err, AuditError::DataNotObject { .. }),
            "{bad}: {err}"
        );
    }
    log.append(
        "tool_call",
        None,
        json!({"nested": {"ok": [1, 2.5, null]}}),
        t(1),
    )
    .unwrap();
    assert_eq!(assert_intact(&path), 1);
}

#[test]
fn server_ids_must_be_printable() {
    let (_dir, path) = new_log();
    let (mut log, _) = AuditLog::open(&path, t(0)).unwrap();
    for bad in ["", "demo\nforged line", "\u{1b}[31mred", &"s".repeat(300)] {
        let err = log
            .append("tool_call", Some(bad), json!({}), t(1))
            .unwrap_err();
        assert_eq!(err.code(), "bad_server", "{bad:?}");
    }
    log.append("tool_call", Some("github.com/acme/tools"), json!({}), t(1))
        .unwrap();
}

#[test]
fn records_over_the_size_limit_are_refused() {
    let (_dir, path) = new_log();
    let (mut log, _) = AuditLog::open(&path, t(0)).unwrap();
    let big = json!({"blob": "x".repeat(MAX_RECORD_BYTES)});
    let err = log.append("tool_call", None, big, t(1)).unwrap_err();
    assert_eq!(err.code(), "record_too_large");
    assert_eq!(fs::read(&path).unwrap(), b"");
    log.append("tool_call", None, json!({"blob": "x".repeat(1000)}), t(1))
        .unwrap();
}

#[test]
fn data_that_would_not_read_back_is_refused() {
    let (_dir, path) = new_log();
    let (mut log, _) = AuditLog::open(&path, t(0)).unwrap();
    let mut deep = json!(1);
    for _ in 0..200 {
        deep = json!({ "d": deep });
    }
    let err = log
        .append("tool_call", None, json!({ "deep": deep }), t(1))
        .unwrap_err();
    assert_eq!(err.code(), "unreadable");
    assert_eq!(fs::read(&path).unwrap(), b"");
}

#[test]
fn times_are_recorded_in_utc() {
    let (_dir, path) = new_log();
    let (mut log, _) = AuditLog::open(&path, t(0)).unwrap();
    let in_paris = time::macros::datetime!(2026-05-01 14:00 +02:00);
    log.append("tool_call", None, json!({}), in_paris).unwrap();
    let line: Value = serde_json::from_slice(&fixture::lines(&path)[0]).unwrap();
    assert_eq!(line["time"], json!("2026-05-01T12:00:00Z"));
}

#[test]
fn open_fails_when_the_log_path_is_a_directory() {
    let (_dir, path) = new_log();
    fs::create_dir_all(&path).unwrap();
    let err = AuditLog::open(&path, t(0)).unwrap_err();
    assert_eq!(err.code(), "not_a_regular_file");
    assert!(err.to_string().contains("audit.jsonl"), "{err}");
}

#[test]
fn open_fails_when_the_log_directory_cannot_be_created() {
    let (dir, _) = new_log();
    let blocker = dir.path().join("state");
    fs::write(&blocker, "a file where the directory should be").unwrap();
    let err = AuditLog::open(blocker.join("audit.jsonl"), t(0)).unwrap_err();
    assert_eq!(err.code(), "create_dir");
}

#[test]
fn open_fails_when_the_log_is_read_only() {
    // Refused by its mode bits, not by the OS, so this holds for root too.
    let (_dir, path) = log_with(1);
    let mut perms = fs::metadata(&path).unwrap().permissions();
    perms.set_readonly(true);
    fs::set_permissions(&path, perms).unwrap();
    let err = AuditLog::open(&path, t(0)).unwrap_err();
    assert_eq!(err.code(), "read_only");
    assert!(err.to_string().contains("read-only"), "{err}");
}

#[cfg(unix)]
#[test]
fn open_fails_when_the_log_is_not_a_regular_file() {
    // Records sent to /dev/null would be "written" and lost.
    let (_dir, path) = new_log();
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink("/dev/null", &path).unwrap();
    let err = AuditLog::open(&path, t(0)).unwrap_err();
    assert_eq!(err.code(), "not_a_regular_file");
}

#[cfg(unix)]
#[test]
fn append_fails_when_the_log_is_replaced_by_a_directory() {
    let (_dir, path) = log_with(2);
    let (mut log, _) = AuditLog::open(&path, t(0)).unwrap();
    fs::remove_file(&path).unwrap();
    fs::create_dir(&path).unwrap();
    let err = log.append("tool_call", None, json!({}), t(1)).unwrap_err();
    assert_eq!(err.code(), "not_a_regular_file", "{err}");
    assert_eq!(log.last().seq, 2, "in-memory state unchanged");
}

#[test]
fn append_fails_and_takes_the_record_back_when_the_head_cannot_be_written() {
    let (_dir, path) = log_with(2);
    let (mut log, _) = AuditLog::open(&path, t(0)).unwrap();
    let log_before = fs::read(&path).unwrap();
    let head_before = fs::read(head_path(&path)).unwrap();
    // The head is written to a temp file first; a directory in its place makes that fail.
    let temp = path.with_file_name("audit.jsonl.head.tmp");
    fs::create_dir(&temp).unwrap();

    let err = log
        .append("tool_call", None, json!({"decision": "admitted"}), t(1))
        .unwrap_err();
    assert_eq!(err.code(), "head", "{err}");
    assert_eq!(
        fs::read(&path).unwrap(),
        log_before,
        "the record was taken back"
    );
    assert_eq!(fs::read(head_path(&path)).unwrap(), head_before);
    assert_eq!(log.last().seq, 2);

    fs::remove_dir(&temp).unwrap();
    assert_eq!(
        log.append("tool_call", None, json!({}), t(2)).unwrap().seq,
        3
    );
    assert_eq!(assert_intact(&path), 3);
}

#[test]
fn append_fails_when_the_head_cannot_be_read() {
    let (_dir, path) = log_with(1);
    let (mut log, _) = AuditLog::open(&path, t(0)).unwrap();
    let before = fs::read(&path).unwrap();
    fs::remove_file(head_path(&path)).unwrap();
    fs::create_dir(head_path(&path)).unwrap();
    let err = log.append("tool_call", None, json!({}), t(1)).unwrap_err();
    assert_eq!(err.code(), "head", "{err}");
    assert_eq!(fs::read(&path).unwrap(), before);
}
