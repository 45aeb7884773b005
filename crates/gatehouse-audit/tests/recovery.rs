//! Opening a log that was left damaged: continuing the chain, repairing a torn tail, and
//! recording (never hiding) records removed from the end.

#[path = "support/fixture.rs"]
mod fixture;

use std::fs;

use fixture::{assert_intact, first_broken, lines, log_with, new_log, sha256_hex, t, write_lines};
use gatehouse_audit::{
    AuditLog, BreakKind, EVENT_HEAD_MISMATCH, EVENT_TORN_TAIL, HeadProblem, head_path, read, verify,
};
use serde_json::{Value, json};

const TORN: &[u8] = b"{\"seq\":4,\"time\":\"2026-05-01T12:00:04Z\",\"event\":\"tool_c";

fn with_torn_tail(torn: &[u8]) -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>) {
    let (dir, path) = log_with(3);
    let intact = fs::read(&path).unwrap();
    let mut bytes = intact.clone();
    bytes.extend_from_slice(torn);
    fs::write(&path, &bytes).unwrap();
    (dir, path, intact)
}

#[test]
fn open_creates_the_log_its_directory_and_head() {
    let (_dir, path) = new_log();
    let (log, report) = AuditLog::open(&path, t(0)).unwrap();
    assert!(report.created);
    assert_eq!(report.last_seq, 0);
    assert!(report.recovery.is_empty());
    assert_eq!(log.last().seq, 0);
    assert_eq!(fs::read(&path).unwrap(), b"");
    let head: Value = serde_json::from_slice(&fs::read(head_path(&path)).unwrap()).unwrap();
    assert_eq!(head, json!({"seq": 0, "hash": "0".repeat(64)}));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&head_path(&path)), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
    }
    let (_log, again) = AuditLog::open(&path, t(1)).unwrap();
    assert!(!again.created);
}

#[test]
fn appending_after_reopen_continues_the_chain() {
    let (_dir, path) = log_with(3);
    let (mut log, report) = AuditLog::open(&path, t(10)).unwrap();
    assert_eq!(report.last_seq, 3);
    assert!(report.recovery.is_empty());
    let appended = log
        .append("bundle_accepted", None, json!({"bundle": "acme@4"}), t(11))
        .unwrap();
    assert_eq!(appended.seq, 4);
    let all = lines(&path);
    assert_eq!(appended.hash, sha256_hex(&all[3]));
    let record: Value = serde_json::from_slice(&all[3]).unwrap();
    assert_eq!(record["prev"], json!(sha256_hex(&all[2])));
    assert_eq!(assert_intact(&path), 4);
}

#[test]
fn open_moves_a_torn_tail_to_a_side_file_and_records_it() {
    let (_dir, path, intact) = with_torn_tail(TORN);
    let (mut log, report) = AuditLog::open(&path, t(20)).unwrap();

    let torn = report
        .recovery
        .torn_tail
        .clone()
        .expect("the torn tail is reported");
    assert_eq!(report.recovery.head_mismatch, None);
    assert_eq!(torn.seq, 4);
    assert_eq!(torn.bytes, TORN.len() as u64);
    assert_eq!(torn.sha256, sha256_hex(TORN));
    assert_eq!(torn.side_file, path.with_file_name("audit.jsonl.torn-4"));
    assert_eq!(
        fs::read(&torn.side_file).unwrap(),
        TORN,
        "the side file holds exactly the torn bytes"
    );

    // The log is its intact part plus one record saying what happened.
    let all = lines(&path);
    assert!(fs::read(&path).unwrap().starts_with(&intact));
    assert_eq!(all.len(), 4);
    let note: Value = serde_json::from_slice(&all[3]).unwrap();
    assert_eq!(note["seq"], json!(4));
    assert_eq!(note["event"], json!(EVENT_TORN_TAIL));
    assert_eq!(note["time"], json!("2026-05-01T12:00:20Z"));
    assert_eq!(note["prev"], json!(sha256_hex(&all[2])));
    assert_eq!(
        note["data"],
        json!({"bytes": TORN.len(), "sha256": sha256_hex(TORN), "side_file": "audit.jsonl.torn-4"})
    );
    assert_eq!(report.last_seq, 4);

    // The chain continues and verifies, with the repair noted.
    assert_eq!(
        log.append("tool_call", Some("demo"), json!({}), t(21))
            .unwrap()
            .seq,
        5
    );
    let report = verify(&path).unwrap();
    assert!(report.ok, "{report}");
    assert_eq!(report.records, 5);
    assert_eq!(report.repairs.len(), 1);
    assert_eq!(report.repairs[0].seq, 4);
    assert_eq!(report.repairs[0].bytes, Some(TORN.len() as u64));
    assert!(report.to_string().contains("torn last line"), "{report}");
}

#[test]
fn open_treats_a_last_line_that_is_not_a_record_as_torn() {
    let garbage = b"\0\0\0\0\0\0\0\n";
    let (_dir, path, _) = with_torn_tail(garbage);
    let (_log, report) = AuditLog::open(&path, t(20)).unwrap();
    let torn = report.recovery.torn_tail.unwrap();
    assert_eq!(fs::read(&torn.side_file).unwrap(), garbage);
    assert_eq!(assert_intact(&path), 4);
}

#[test]
fn a_torn_first_record_is_repaired() {
    let (_dir, path) = new_log();
    AuditLog::open(&path, t(0)).unwrap();
    fs::write(&path, &TORN[..10]).unwrap();
    let (_log, report) = AuditLog::open(&path, t(1)).unwrap();
    assert_eq!(report.recovery.torn_tail.unwrap().seq, 1);
    assert_eq!(report.last_seq, 1);
    assert_eq!(assert_intact(&path), 1);
}

#[test]
fn an_earlier_side_file_is_never_overwritten() {
    let (_dir, path, _) = with_torn_tail(TORN);
    let earlier = path.with_file_name("audit.jsonl.torn-4");
    fs::write(&earlier, "evidence from before").unwrap();
    let (_log, report) = AuditLog::open(&path, t(20)).unwrap();
    let torn = report.recovery.torn_tail.unwrap();
    assert_eq!(torn.side_file, path.with_file_name("audit.jsonl.torn-4-1"));
    assert_eq!(fs::read(&earlier).unwrap(), b"evidence from before");
    assert_eq!(fs::read(&torn.side_file).unwrap(), TORN);
}

#[test]
fn append_repairs_a_torn_tail_left_by_another_writer() {
    // Another process died mid-write while this handle was open.
    let (_dir, path) = log_with(3);
    let (mut log, _) = AuditLog::open(&path, t(10)).unwrap();
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend_from_slice(TORN);
    fs::write(&path, &bytes).unwrap();
    let appended = log.append("tool_call", None, json!({}), t(11)).unwrap();
    assert_eq!(appended.seq, 5);
    let torn = appended
        .recovery
        .torn_tail
        .expect("the repair is reported to the caller");
    assert_eq!(fs::read(&torn.side_file).unwrap(), TORN);
    assert_eq!(assert_intact(&path), 5);
}

#[test]
fn open_does_not_repair_a_log_that_ends_cleanly() {
    let (_dir, path) = log_with(3);
    let before = fs::read(&path).unwrap();
    let (_log, report) = AuditLog::open(&path, t(10)).unwrap();
    assert!(report.recovery.is_empty());
    assert_eq!(fs::read(&path).unwrap(), before);
    let siblings = fs::read_dir(path.parent().unwrap()).unwrap().count();
    assert_eq!(siblings, 2, "only the log and its head");
}

#[test]
fn open_records_records_removed_from_the_end() {
    let (_dir, path) = log_with(5);
    let mut all = lines(&path);
    all.truncate(3);
    write_lines(&path, &all);

    let (mut log, report) = AuditLog::open(&path, t(30)).unwrap();
    let mismatch = report
        .recovery
        .head_mismatch
        .expect("the truncation is reported");
    assert_eq!(mismatch.problem, HeadProblem::Ahead);
    assert_eq!(mismatch.seq, 4);
    assert_eq!(mismatch.head.as_ref().map(|h| h.seq), Some(5));
    assert_eq!(mismatch.log_last.seq, 3);
    assert!(
        mismatch.detail.contains("2 record(s) were removed"),
        "{}",
        mismatch.detail
    );

    let note: Value = serde_json::from_slice(&lines(&path)[3]).unwrap();
    assert_eq!(note["event"], json!(EVENT_HEAD_MISMATCH));
    assert_eq!(note["data"]["problem"], json!("ahead"));
    assert_eq!(note["data"]["head_seq"], json!(5));
    assert_eq!(note["data"]["log_seq"], json!(3));

    // Appending goes on, and the loss stays visible to verify.
    log.append("tool_call", None, json!({}), t(31)).unwrap();
    let broken = first_broken(&path);
    assert_eq!(
        (broken.line, broken.seq, broken.kind),
        (4, Some(4), BreakKind::Truncated)
    );
    // Reopening does not record it again: the head matches the log once more.
    let (_log, again) = AuditLog::open(&path, t(32)).unwrap();
    assert!(again.recovery.is_empty());
}

#[test]
fn open_records_a_missing_head() {
    let (_dir, path) = log_with(2);
    fs::remove_file(head_path(&path)).unwrap();
    let (_log, report) = AuditLog::open(&path, t(30)).unwrap();
    assert_eq!(
        report.recovery.head_mismatch.unwrap().problem,
        HeadProblem::Missing
    );
    assert_eq!(first_broken(&path).kind, BreakKind::Truncated);
}

#[test]
fn open_records_an_unreadable_head_and_replaces_it() {
    let (_dir, path) = log_with(2);
    fs::write(head_path(&path), "not a head").unwrap();
    let (_log, report) = AuditLog::open(&path, t(30)).unwrap();
    assert_eq!(
        report.recovery.head_mismatch.unwrap().problem,
        HeadProblem::Unreadable
    );
    let head: Value = serde_json::from_slice(&fs::read(head_path(&path)).unwrap()).unwrap();
    assert_eq!(head["seq"], json!(3));
    let (_log, again) = AuditLog::open(&path, t(31)).unwrap();
    assert!(again.recovery.is_empty());
}

#[test]
fn open_records_an_edited_last_record() {
    let (_dir, path) = log_with(2);
    let mut all = lines(&path);
    all[1] = fixture::edit_line(&all[1], |r| {
        r["data"]["decision"] = json!("refused");
    });
    write_lines(&path, &all);
    let (_log, report) = AuditLog::open(&path, t(30)).unwrap();
    assert_eq!(
        report.recovery.head_mismatch.unwrap().problem,
        HeadProblem::Different
    );
}

#[test]
fn a_head_left_behind_by_a_crash_is_not_a_mismatch() {
    // Crash after the record's flush, before the head's rename: the head is one behind.
    let (_dir, path) = log_with(3);
    let all = lines(&path);
    fs::write(
        head_path(&path),
        json!({"seq": 2, "hash": sha256_hex(&all[1])}).to_string(),
    )
    .unwrap();
    let (mut log, report) = AuditLog::open(&path, t(10)).unwrap();
    assert!(report.recovery.is_empty(), "{report:?}");
    log.append("tool_call", None, json!({}), t(11)).unwrap();
    assert_eq!(assert_intact(&path), 4);
}

#[test]
fn a_head_several_records_behind_is_checked_by_scanning() {
    let (_dir, path) = log_with(6);
    let all = lines(&path);
    fs::write(
        head_path(&path),
        json!({"seq": 2, "hash": sha256_hex(&all[1])}).to_string(),
    )
    .unwrap();
    let (_log, report) = AuditLog::open(&path, t(10)).unwrap();
    assert!(report.recovery.is_empty(), "{report:?}");

    fs::write(
        head_path(&path),
        json!({"seq": 2, "hash": sha256_hex(&all[2])}).to_string(),
    )
    .unwrap();
    let (_log, report) = AuditLog::open(&path, t(11)).unwrap();
    assert_eq!(
        report.recovery.head_mismatch.unwrap().problem,
        HeadProblem::Different
    );
}

#[test]
fn appending_after_a_broken_middle_does_not_hide_it() {
    let (_dir, path) = log_with(5);
    let mut all = lines(&path);
    all.remove(1);
    write_lines(&path, &all);
    // Only the end is checked on open; the head still names seq 5, which is the last line.
    let (mut log, report) = AuditLog::open(&path, t(10)).unwrap();
    assert!(report.recovery.is_empty());
    assert_eq!(
        log.append("tool_call", None, json!({}), t(11)).unwrap().seq,
        6
    );
    let broken = first_broken(&path);
    assert_eq!(
        (broken.line, broken.seq, broken.kind),
        (2, Some(3), BreakKind::BadPrev)
    );
}

#[test]
fn open_refuses_a_log_whose_last_complete_line_is_not_a_record() {
    // Two bad lines at the end are not a crash (a crash tears one line): nothing to chain
    // from, so open fails with what to do rather than guess.
    let (_dir, path) = log_with(3);
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend_from_slice(b"garbage\nmore garbage\n");
    fs::write(&path, &bytes).unwrap();
    let before = fs::read(&path).unwrap();
    let err = AuditLog::open(&path, t(10)).unwrap_err();
    assert_eq!(err.code(), "unrecoverable");
    assert!(err.to_string().contains("gatehouse audit verify"), "{err}");
    assert_eq!(fs::read(&path).unwrap(), before, "nothing was changed");
}

#[cfg(unix)]
#[test]
fn a_log_deleted_while_open_is_recreated_and_the_loss_recorded() {
    let (_dir, path) = log_with(3);
    let (mut log, _) = AuditLog::open(&path, t(10)).unwrap();
    fs::remove_file(&path).unwrap();
    let appended = log
        .append("tool_call", None, json!({"after": "delete"}), t(11))
        .unwrap();
    let mismatch = appended
        .recovery
        .head_mismatch
        .expect("the loss is reported");
    assert_eq!(mismatch.problem, HeadProblem::Ahead);
    assert_eq!(appended.seq, 2);
    let records = read(&path).unwrap();
    assert_eq!(records[0].event, EVENT_HEAD_MISMATCH);
    assert_eq!(records[1].data["after"], json!("delete"));
    assert_eq!(first_broken(&path).kind, BreakKind::Truncated);
}
