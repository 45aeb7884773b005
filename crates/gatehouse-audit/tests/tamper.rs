//! `verify` against a log that was changed after it was written: each kind of change, and that
//! an untouched log passes.

#[path = "support/fixture.rs"]
mod fixture;

use std::fs;

use fixture::{
    assert_intact, edit_line, first_broken, lines, log_with, sha256_hex, t, write_lines,
};
use gatehouse_audit::{AuditLog, BreakKind, ZERO_HASH, head_path, verify};
use serde_json::{Value, json};

#[test]
fn intact_log_verifies() {
    let (_dir, path) = log_with(5);
    let report = verify(&path).unwrap();
    assert!(report.ok, "{report}");
    assert_eq!(report.records, 5);
    assert_eq!(report.first_broken, None);
    let tip = report.tip.unwrap();
    assert_eq!(tip.seq, 5);
    assert_eq!(tip.hash, sha256_hex(&lines(&path)[4]));
    let head: Value = serde_json::from_slice(&fs::read(head_path(&path)).unwrap()).unwrap();
    assert_eq!(head, json!({"seq": 5, "hash": tip.hash}));
}

#[test]
fn every_line_chains_to_the_one_before() {
    let (_dir, path) = log_with(4);
    let lines = lines(&path);
    let mut prev = ZERO_HASH.to_string();
    for (i, line) in lines.iter().enumerate() {
        let record: Value = serde_json::from_slice(line).unwrap();
        assert_eq!(record["seq"], json!(i + 1));
        assert_eq!(record["prev"], json!(prev));
        prev = sha256_hex(line);
    }
}

#[test]
fn empty_log_verifies() {
    let (_dir, path) = fixture::new_log();
    AuditLog::open(&path, t(0)).unwrap();
    let report = verify(&path).unwrap();
    assert!(report.ok);
    assert_eq!(report.records, 0);
    assert_eq!(report.tip, None);
}

#[test]
fn editing_any_field_of_a_middle_record_is_detected() {
    // Line 3 of 5 is edited the way a careful forger would (same compact form). An edit of
    // seq or prev shows on the line itself; any other edit changes the line's hash, which
    // line 4 still carries.
    type Edit = fn(&mut serde_json::Map<String, Value>);
    let edits: [(&str, Edit, u64, BreakKind); 8] = [
        (
            "seq",
            |r| {
                r.insert("seq".into(), json!(30));
            },
            3,
            BreakKind::BadSeq,
        ),
        (
            "prev",
            |r| {
                r.insert("prev".into(), json!("ab".repeat(32)));
            },
            3,
            BreakKind::BadPrev,
        ),
        (
            "time",
            |r| {
                r.insert("time".into(), json!("2026-05-01T11:00:00Z"));
            },
            4,
            BreakKind::BadPrev,
        ),
        (
            "event",
            |r| {
                r.insert("event".into(), json!("tool_call"));
            },
            4,
            BreakKind::BadPrev,
        ),
        (
            "server",
            |r| {
                r.insert("server".into(), json!("evil"));
            },
            4,
            BreakKind::BadPrev,
        ),
        (
            "server removed",
            |r| {
                r.remove("server");
            },
            4,
            BreakKind::BadPrev,
        ),
        (
            "data",
            |r| {
                r["data"]["decision"] = json!("refused");
            },
            4,
            BreakKind::BadPrev,
        ),
        (
            "data added",
            |r| {
                r["data"]["note"] = json!(1);
            },
            4,
            BreakKind::BadPrev,
        ),
    ];
    for (field, edit, line, kind) in edits {
        let (_dir, path) = log_with(5);
        let mut all = lines(&path);
        all[2] = edit_line(&all[2], edit);
        write_lines(&path, &all);
        let broken = first_broken(&path);
        assert_eq!(
            (broken.line, broken.kind),
            (line, kind),
            "edit of {field}: {broken:?}"
        );
    }
}

#[test]
fn every_single_byte_change_is_detected() {
    let (_dir, path) = log_with(3);
    let original = fs::read(&path).unwrap();
    for i in 0..original.len() {
        let mut changed = original.clone();
        // Flipping the low bit keeps most bytes printable, so many changes stay valid JSON.
        changed[i] ^= 1;
        fs::write(&path, &changed).unwrap();
        let report = verify(&path).unwrap();
        assert!(
            !report.ok,
            "byte {i} changed from {:?} went unnoticed",
            original[i] as char
        );
    }
    fs::write(&path, &original).unwrap();
    assert_intact(&path);
}

#[test]
fn deleting_a_middle_record_is_detected() {
    let (_dir, path) = log_with(5);
    let mut all = lines(&path);
    all.remove(2);
    write_lines(&path, &all);
    let broken = first_broken(&path);
    assert_eq!(
        (broken.line, broken.seq, broken.kind),
        (3, Some(4), BreakKind::BadPrev)
    );
    assert!(broken.detail.contains("line 2"), "{}", broken.detail);
}

#[test]
fn deleting_the_first_record_is_detected() {
    let (_dir, path) = log_with(3);
    let mut all = lines(&path);
    all.remove(0);
    write_lines(&path, &all);
    let broken = first_broken(&path);
    assert_eq!(
        (broken.line, broken.seq, broken.kind),
        (1, Some(2), BreakKind::BadPrev)
    );
}

#[test]
fn inserting_a_forged_record_is_detected() {
    // The forgery chains correctly from line 2; the record after it does not chain from it.
    let (_dir, path) = log_with(5);
    let mut all = lines(&path);
    let forged = edit_line(&all[2], |r| {
        r.insert(
            "data".into(),
            json!({"decision": "admitted", "forged": true}),
        );
    });
    all.insert(2, forged);
    write_lines(&path, &all);
    let broken = first_broken(&path);
    assert_eq!(
        (broken.line, broken.seq, broken.kind),
        (4, Some(3), BreakKind::BadPrev)
    );
}

#[test]
fn inserting_a_forged_record_and_rechaining_the_rest_is_caught_by_the_head() {
    // A forger who renumbers and rehashes everything after the insertion, but cannot write
    // the head file, is caught there.
    let (_dir, path) = log_with(5);
    let mut all = lines(&path);
    all.insert(2, all[2].clone());
    for i in 2..all.len() {
        let prev = sha256_hex(&all[i - 1]);
        all[i] = edit_line(&all[i], |r| {
            r.insert("seq".into(), json!(i + 1));
            r.insert("prev".into(), json!(prev));
        });
    }
    write_lines(&path, &all);
    let broken = first_broken(&path);
    assert_eq!(
        (broken.line, broken.seq, broken.kind),
        (5, Some(5), BreakKind::Truncated)
    );
}

#[test]
fn swapping_two_records_is_detected() {
    let (_dir, path) = log_with(5);
    let mut all = lines(&path);
    all.swap(1, 2);
    write_lines(&path, &all);
    let broken = first_broken(&path);
    assert_eq!(
        (broken.line, broken.seq, broken.kind),
        (2, Some(3), BreakKind::BadPrev)
    );
}

#[test]
fn truncating_trailing_records_is_detected_via_the_head() {
    let (_dir, path) = log_with(5);
    let mut all = lines(&path);
    all.truncate(3);
    write_lines(&path, &all);
    let report = verify(&path).unwrap();
    assert!(!report.ok);
    assert_eq!(report.records, 3);
    let broken = report.first_broken.unwrap();
    assert_eq!(
        (broken.line, broken.seq, broken.kind),
        (4, Some(4), BreakKind::Truncated)
    );
    assert!(
        broken.detail.contains("2 record(s) were removed"),
        "{}",
        broken.detail
    );
}

#[test]
fn truncating_and_deleting_the_head_is_detected() {
    let (_dir, path) = log_with(5);
    let mut all = lines(&path);
    all.truncate(3);
    write_lines(&path, &all);
    fs::remove_file(head_path(&path)).unwrap();
    let broken = first_broken(&path);
    assert_eq!(broken.kind, BreakKind::Truncated);
    assert!(broken.detail.contains("missing"), "{}", broken.detail);
}

#[test]
fn a_garbled_head_is_detected() {
    let (_dir, path) = log_with(2);
    fs::write(head_path(&path), "{}").unwrap();
    assert_eq!(first_broken(&path).kind, BreakKind::Truncated);
}

#[test]
fn editing_the_last_record_is_detected_via_the_head() {
    let (_dir, path) = log_with(5);
    let mut all = lines(&path);
    all[4] = edit_line(&all[4], |r| {
        r["data"]["decision"] = json!("refused");
    });
    write_lines(&path, &all);
    let broken = first_broken(&path);
    assert_eq!(
        (broken.line, broken.seq, broken.kind),
        (5, Some(5), BreakKind::Truncated)
    );
}

#[test]
fn a_middle_line_that_is_not_a_record_is_bad_json() {
    let bad_lines: [&[u8]; 5] = [
        b"not json",
        b"",
        b"{\"seq\":3}",
        b"[1,2,3]",
        b"{\"seq\":3,\"seq\":3}",
    ];
    for bad in bad_lines {
        let (_dir, path) = log_with(5);
        let mut all = lines(&path);
        all[2] = bad.to_vec();
        write_lines(&path, &all);
        let broken = first_broken(&path);
        assert_eq!(
            (broken.line, broken.seq, broken.kind),
            (3, None, BreakKind::BadJson)
        );
    }
}

#[test]
fn duplicate_keys_or_unknown_fields_in_a_record_are_bad_json() {
    // Even with a correct chain after it: a line two readers could read differently is refused.
    for forge in [
        |s: String| s.replace("\"decision\":", "\"decision\":\"refused\",\"decision\":"),
        |s: String| s.replace("\"seq\":", "\"extra\":1,\"seq\":"),
    ] {
        let (_dir, path) = log_with(5);
        let mut all = lines(&path);
        all[2] = forge(String::from_utf8(all[2].clone()).unwrap()).into_bytes();
        let prev = sha256_hex(&all[2]);
        all[3] = edit_line(&all[3], |r| {
            r.insert("prev".into(), json!(prev));
        });
        write_lines(&path, &all);
        let broken = first_broken(&path);
        assert_eq!(
            (broken.line, broken.kind),
            (3, BreakKind::BadJson),
            "{broken:?}"
        );
    }
}

#[test]
fn torn_tail_is_detected_by_verify() {
    let (_dir, path) = log_with(3);
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend_from_slice(b"{\"seq\":4,\"time\":\"2026-05-01T12:0");
    fs::write(&path, &bytes).unwrap();
    let report = verify(&path).unwrap();
    assert_eq!(report.records, 3);
    let broken = report.first_broken.unwrap();
    assert_eq!((broken.line, broken.kind), (4, BreakKind::TornTail));
}

#[test]
fn a_last_line_that_is_not_a_record_is_a_torn_tail() {
    // Bytes that never reached the disk can read back as zeros, newline included.
    let (_dir, path) = log_with(3);
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend_from_slice(b"\0\0\0\0\0\n");
    fs::write(&path, &bytes).unwrap();
    let broken = first_broken(&path);
    assert_eq!((broken.line, broken.kind), (4, BreakKind::TornTail));
}

#[test]
fn a_head_one_record_behind_is_accepted() {
    // A crash between the record's flush and the head's rename leaves the head one behind.
    let (_dir, path) = log_with(5);
    let all = lines(&path);
    fs::write(
        head_path(&path),
        json!({"seq": 4, "hash": sha256_hex(&all[3])}).to_string(),
    )
    .unwrap();
    assert_eq!(assert_intact(&path), 5);
}

#[test]
fn a_head_behind_with_a_wrong_hash_is_detected() {
    let (_dir, path) = log_with(5);
    fs::write(
        head_path(&path),
        json!({"seq": 2, "hash": "ab".repeat(32)}).to_string(),
    )
    .unwrap();
    let broken = first_broken(&path);
    assert_eq!(
        (broken.line, broken.seq, broken.kind),
        (2, Some(2), BreakKind::Truncated)
    );
}

#[test]
fn a_deleted_log_with_its_head_left_is_detected() {
    let (_dir, path) = log_with(2);
    fs::remove_file(&path).unwrap();
    let broken = first_broken(&path);
    assert_eq!((broken.line, broken.kind), (1, BreakKind::Truncated));
    assert!(broken.detail.contains("says seq 2"), "{}", broken.detail);
}

#[test]
fn verifying_a_log_that_never_existed_is_an_error() {
    let (_dir, path) = fixture::new_log();
    let err = verify(&path).unwrap_err();
    assert_eq!(err.code(), "not_found");
    assert!(err.to_string().contains("audit.jsonl"), "{err}");
}

#[test]
fn verify_report_serializes_for_the_cli() {
    let (_dir, path) = log_with(3);
    let ok = serde_json::to_value(verify(&path).unwrap()).unwrap();
    assert_eq!(ok["ok"], json!(true));
    assert_eq!(ok["records"], json!(3));
    assert_eq!(ok["first_broken"], Value::Null);
    assert_eq!(ok["tip"]["seq"], json!(3));

    let mut all = lines(&path);
    all.swap(0, 1);
    write_lines(&path, &all);
    let report = verify(&path).unwrap();
    let broken = serde_json::to_value(&report).unwrap();
    assert_eq!(broken["ok"], json!(false));
    assert_eq!(broken["records"], json!(0));
    assert_eq!(broken["first_broken"]["line"], json!(1));
    assert_eq!(broken["first_broken"]["seq"], json!(2));
    assert_eq!(broken["first_broken"]["kind"], json!("bad_prev"));
    assert!(broken["first_broken"]["detail"].is_string());

    let text = report.to_string();
    assert!(
        text.starts_with("audit log broken at line 1 (seq 2): bad_prev: "),
        "{text}"
    );
}

#[test]
fn verify_display_for_an_intact_log_names_the_tip() {
    let (_dir, path) = log_with(2);
    let report = verify(&path).unwrap();
    let tip = report.tip.clone().unwrap();
    assert_eq!(
        report.to_string(),
        format!(
            "audit log intact: 2 record(s); last seq 2, hash {}",
            tip.hash
        )
    );
}
