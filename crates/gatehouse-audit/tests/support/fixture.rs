//! Shared by the integration tests: times, a log of known records, and line-level surgery.
#![allow(dead_code)] // each test binary uses a different part

use std::fs;
use std::path::{Path, PathBuf};

use gatehouse_audit::{AuditLog, Broken, verify};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::macros::datetime;

/// A fixed time plus `n` seconds: the crate never reads the clock, neither do its tests.
pub fn t(n: i64) -> OffsetDateTime {
    datetime!(2026-05-01 12:00 UTC) + time::Duration::seconds(n)
}

/// The log path inside a fresh directory (kept alive by the returned guard).
pub fn new_log() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state").join("audit.jsonl");
    (dir, path)
}

/// A log of `n` records: admission decisions and tool calls for servers "demo" and "other".
pub fn log_with(n: u64) -> (tempfile::TempDir, PathBuf) {
    let (dir, path) = new_log();
    let (mut log, _) = AuditLog::open(&path, t(0)).unwrap();
    for i in 1..=n {
        let (event, server) = if i % 2 == 1 {
            ("admission_decision", "demo")
        } else {
            ("tool_call", "other")
        };
        log.append(
            event,
            Some(server),
            json!({"i": i, "decision": "admitted"}),
            t(i as i64),
        )
        .unwrap();
    }
    (dir, path)
}

/// The log's lines without their newlines.
pub fn lines(path: &Path) -> Vec<Vec<u8>> {
    let bytes = fs::read(path).unwrap();
    let mut lines: Vec<Vec<u8>> = bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    assert_eq!(lines.pop(), Some(Vec::new()), "the log ends with a newline");
    lines
}

pub fn write_lines(path: &Path, lines: &[Vec<u8>]) {
    let mut bytes = Vec::new();
    for line in lines {
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
    }
    fs::write(path, bytes).unwrap();
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Parses a line, lets `edit` change it, and writes it back in the log's own form (compact,
/// fields in order), as a careful forger would.
pub fn edit_line(line: &[u8], edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Vec<u8> {
    let mut value: Value = serde_json::from_slice(line).unwrap();
    edit(value.as_object_mut().unwrap());
    serde_json::to_vec(&value).unwrap()
}

/// Verifies and returns the first broken record, failing the test if the log verifies.
pub fn first_broken(path: &Path) -> Broken {
    let report = verify(path).unwrap();
    assert!(!report.ok, "expected a broken log, got: {report}");
    report.first_broken.expect("not ok names a broken record")
}

/// Asserts the log verifies and returns how many records it holds.
pub fn assert_intact(path: &Path) -> u64 {
    let report = verify(path).unwrap();
    assert!(report.ok, "expected an intact log, got: {report}");
    report.records
}
