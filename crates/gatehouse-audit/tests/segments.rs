//! Segments: rotation continuing one chain (one writer, several processes, a SIGKILL between
//! each step), retention, verify across segments (a missing or tampered segment), and the
//! reads that cross them (`tail`, `stream`, `export`).

#[path = "support/fixture.rs"]
mod fixture;

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use fixture::{assert_intact, edit_line, first_broken, lines, new_log, t, write_lines};
use gatehouse_audit::{
    AuditLog, BreakKind, Durability, EVENT_RETENTION, EVENT_ROTATED, ExportFormat, Fdatasync,
    Filter, Retention, Rotation, RotationStep, Syncer, TailEnd, export, head_path, read,
    segment_path, segments, stream, tail, tail_with, verify,
};
use serde_json::json;
use time::OffsetDateTime;

/// Small segments, so a few hundred records make many of them.
const SMALL: Rotation = Rotation {
    segment_max_bytes: 2048,
};

fn day(n: i64) -> OffsetDateTime {
    t(0) + time::Duration::days(n)
}

/// Appends `n` records (odd: admission_decision/demo, even: tool_call/other) at `time(i)`.
fn append_records(log: &mut AuditLog, n: u64, time: impl Fn(u64) -> OffsetDateTime) {
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
            time(i),
        )
        .unwrap();
    }
}

/// A log of `n` caller records rotating at `rotation`, record `i` at `t(i)`.
fn rotating_log(n: u64, rotation: Rotation) -> (tempfile::TempDir, PathBuf) {
    let (dir, path) = new_log();
    let (mut log, _) =
        AuditLog::open_rotating(&path, t(0), Durability::Sync, Some(rotation)).unwrap();
    append_records(&mut log, n, |i| t(i as i64));
    (dir, path)
}

fn caller_records(path: &Path) -> Vec<gatehouse_audit::Record> {
    read(path)
        .unwrap()
        .into_iter()
        .filter(|r| !r.event.starts_with("audit_"))
        .collect()
}

#[test]
fn an_append_past_the_limit_seals_the_file_and_the_chain_goes_on() {
    let (_dir, path) = new_log();
    let (mut log, _) = AuditLog::open_rotating(&path, t(0), Durability::Sync, Some(SMALL)).unwrap();
    let mut rotations = Vec::new();
    for i in 1..=40u64 {
        let before = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let appended = log
            .append("tool_call", Some("demo"), json!({"i": i}), t(i as i64))
            .unwrap();
        let after = fs::metadata(&path).unwrap().len();
        match &appended.rotated {
            // Rotated only when this record would have passed the limit.
            Some(rotated) => {
                assert_eq!(fs::metadata(&rotated.segment).unwrap().len(), before);
                assert_eq!(rotated.record_seq + 1, appended.seq);
                assert_eq!(rotated.last_seq + 1, rotated.record_seq);
                rotations.push(rotated.clone());
            }
            None => assert!(after <= SMALL.segment_max_bytes, "{after}"),
        }
    }
    assert!(rotations.len() >= 3, "{rotations:?}");
    // Every sealed segment stays within the limit; numbers count up from 1.
    let sealed = segments(&path).unwrap();
    assert_eq!(
        sealed.iter().map(|s| s.number).collect::<Vec<_>>(),
        (1..=rotations.len() as u64).collect::<Vec<_>>()
    );
    for s in &sealed {
        assert!(s.bytes <= SMALL.segment_max_bytes, "{s:?}");
        assert_eq!(s.path, segment_path(&path, s.number));
    }
    // The new active file starts with the record that names the segment it continues.
    let first: serde_json::Value = serde_json::from_slice(&lines(&path)[0]).unwrap();
    assert_eq!(first["event"], EVENT_ROTATED);
    assert_eq!(first["data"]["number"], rotations.len() as u64);
    // One chain: seq counts on, verify walks every segment, reads see every record in order.
    let report = verify(&path).unwrap();
    assert!(report.ok, "{report}");
    assert_eq!(report.segments, rotations.len() as u64);
    assert_eq!(report.records, 40 + rotations.len() as u64);
    let seqs: Vec<u64> = read(&path).unwrap().iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (1..=40 + rotations.len() as u64).collect::<Vec<_>>());
    let ours: Vec<u64> = caller_records(&path)
        .iter()
        .map(|r| r.data["i"].as_u64().unwrap())
        .collect();
    assert_eq!(ours, (1..=40).collect::<Vec<_>>());
    assert!(report.to_string().contains("sealed segment(s)"), "{report}");
}

#[test]
fn without_rotation_the_log_stays_one_file() {
    let (_dir, path) = fixture::log_with(200);
    assert!(segments(&path).unwrap().is_empty());
    let report = verify(&path).unwrap();
    assert!(report.ok && report.segments == 0 && report.removed.is_none());
}

#[test]
fn a_reopened_log_keeps_rotating_where_it_left_off() {
    let (_dir, path) = rotating_log(30, SMALL);
    let before = segments(&path).unwrap().len();
    let (mut log, report) =
        AuditLog::open_rotating(&path, t(100), Durability::Sync, Some(SMALL)).unwrap();
    assert!(report.recovery.is_empty(), "{report:?}");
    append_records(&mut log, 30, |i| t(100 + i as i64));
    assert!(segments(&path).unwrap().len() > before);
    assert_eq!(caller_records(&path).len(), 60);
    assert_intact(&path);
}

#[test]
fn a_batched_writer_rotates_and_its_lagging_head_is_accepted() {
    let (_dir, path) = new_log();
    let (mut log, _) = AuditLog::open_rotating(
        &path,
        t(0),
        Durability::Batched {
            max_delay: Duration::from_secs(1),
            max_records: 10_000,
        },
        Some(SMALL),
    )
    .unwrap();
    append_records(&mut log, 50, |i| t(i as i64));
    log.flush().unwrap();
    drop(log);
    assert!(segments(&path).unwrap().len() >= 3);
    assert_intact(&path);
    // A head written before the last rotation (it anchors a record in a sealed segment) is
    // behind the log, not a sign of removal: the next open finds that record's hash.
    let sealed = segments(&path).unwrap();
    let last_sealed = sealed.last().unwrap();
    let seg_lines = lines(&last_sealed.path);
    let line = seg_lines.last().unwrap();
    let record: serde_json::Value = serde_json::from_slice(line).unwrap();
    fs::write(
        head_path(&path),
        json!({"seq": record["seq"], "hash": fixture::sha256_hex(line)}).to_string(),
    )
    .unwrap();
    let (_, report) = AuditLog::open(&path, t(99)).unwrap();
    assert!(report.recovery.is_empty(), "{report:?}");
    // The same head with another hash is a mismatch.
    fs::write(
        head_path(&path),
        json!({"seq": record["seq"], "hash": "ab".repeat(32)}).to_string(),
    )
    .unwrap();
    let (_, report) = AuditLog::open(&path, t(99)).unwrap();
    assert!(report.recovery.head_mismatch.is_some(), "{report:?}");
}

// ---- several processes appending across rotations ----

const CHILD_LOG: &str = "GATEHOUSE_AUDIT_SEGMENTS_CHILD_LOG";
const CHILD_NAME: &str = "GATEHOUSE_AUDIT_SEGMENTS_CHILD_NAME";
const CHILD_KILL_AT: &str = "GATEHOUSE_AUDIT_SEGMENTS_KILL_AT";
const PER_WRITER: u64 = 150;

fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(2));
    }
}

fn append_as(path: &Path, writer: &str, n: u64) {
    let (mut log, _) = AuditLog::open_rotating(path, t(0), Durability::Sync, Some(SMALL)).unwrap();
    for i in 0..n {
        log.append("tool_call", Some(writer), json!({"i": i}), t(i as i64))
            .unwrap();
    }
}

/// The body of a child in `processes_appending_across_rotations_keep_one_chain`.
#[test]
fn child_rotating_writer() {
    if let (Some(path), Ok(name)) = (std::env::var_os(CHILD_LOG), std::env::var(CHILD_NAME))
        && std::env::var_os(CHILD_KILL_AT).is_none()
    {
        let path = Path::new(&path);
        fs::write(path.with_file_name(format!("ready-{name}")), "").unwrap();
        wait_for("go", || path.with_file_name("go").exists());
        append_as(path, &name, PER_WRITER);
    }
}

#[test]
fn processes_appending_across_rotations_keep_one_chain() {
    if std::env::var_os(CHILD_LOG).is_some() {
        return;
    }
    let (_dir, path) = new_log();
    AuditLog::open(&path, t(0)).unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..3)
        .map(|c| {
            Command::new(&exe)
                .args(["--exact", "child_rotating_writer", "--nocapture"])
                .env(CHILD_LOG, &path)
                .env(CHILD_NAME, format!("process-{c}"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    wait_for("the children", || {
        (0..3).all(|c| path.with_file_name(format!("ready-process-{c}")).exists())
    });
    fs::write(path.with_file_name("go"), "").unwrap();
    append_as(&path, "parent", PER_WRITER);
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "child failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let report = verify(&path).unwrap();
    assert!(report.ok, "{report}");
    assert!(report.segments >= 20, "{report}");
    let records = caller_records(&path);
    for writer in ["parent", "process-0", "process-1", "process-2"] {
        let mine: Vec<u64> = records
            .iter()
            .filter(|r| r.server.as_deref() == Some(writer))
            .map(|r| r.data["i"].as_u64().unwrap())
            .collect();
        assert_eq!(mine, (0..PER_WRITER).collect::<Vec<_>>(), "{writer}");
    }
    // Every segment number once, no leftovers of a rotation.
    let numbers: Vec<u64> = segments(&path).unwrap().iter().map(|s| s.number).collect();
    assert_eq!(numbers, (1..=numbers.len() as u64).collect::<Vec<_>>());
    assert!(!path.with_file_name("audit.jsonl.rotating").exists());
}

// ---- a SIGKILL between each step of a rotation ----

/// Stops the process at one rotation step: says so in a file, then waits to be killed.
#[derive(Debug)]
struct StopAt(RotationStep, PathBuf);

impl Syncer for StopAt {
    fn sync_data(&self, file: &fs::File) -> std::io::Result<()> {
        Fdatasync.sync_data(file)
    }

    fn rotation_step(&self, step: RotationStep) {
        if step == self.0 {
            fs::write(&self.1, step.code()).unwrap();
            loop {
                thread::sleep(Duration::from_secs(1));
            }
        }
    }
}

/// The body of a child in `a_kill_at_any_rotation_step_loses_nothing`: appends, printing each
/// acknowledged `i`, until the rotation stops it.
#[test]
fn child_killed_mid_rotation() {
    let (Some(path), Ok(step)) = (std::env::var_os(CHILD_LOG), std::env::var(CHILD_KILL_AT)) else {
        return;
    };
    let path = Path::new(&path);
    let step = RotationStep::ALL
        .into_iter()
        .find(|s| s.code() == step)
        .unwrap();
    let syncer = Arc::new(StopAt(step, path.with_file_name("stopped")));
    let (mut log, _) = AuditLog::open_with_syncer(path, t(0), Durability::Sync, syncer).unwrap();
    log.set_rotation(Some(SMALL));
    for i in 0..1000u64 {
        log.append("tool_call", Some("child"), json!({"i": i}), t(i as i64))
            .unwrap();
        println!("acked {i}");
    }
}

#[test]
fn a_kill_at_any_rotation_step_loses_nothing() {
    if std::env::var_os(CHILD_LOG).is_some() {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    for step in RotationStep::ALL {
        let (_dir, path) = rotating_log(20, SMALL);
        let sealed_before = segments(&path).unwrap().len();
        let mut child = Command::new(&exe)
            .args(["--exact", "child_killed_mid_rotation", "--nocapture"])
            .env(CHILD_LOG, &path)
            .env(CHILD_KILL_AT, step.code())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stopped = path.with_file_name("stopped");
        wait_for("the child to reach the step", || stopped.exists());
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let acked: Vec<u64> = BufReader::new(child.stdout.take().unwrap())
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| l.strip_prefix("acked ").and_then(|n| n.parse().ok()))
            .collect();
        assert!(!acked.is_empty(), "{step:?}");

        // Readers cope with the state as it was left.
        let seen = read(&path).unwrap();
        let seqs: Vec<u64> = seen.iter().map(|r| r.seq).collect();
        assert_eq!(
            seqs,
            (1..=seqs.len() as u64).collect::<Vec<_>>(),
            "{step:?}"
        );
        // The next open finishes or undoes it; nothing acknowledged is lost; the chain goes on.
        let (mut log, _) =
            AuditLog::open_rotating(&path, t(5000), Durability::Sync, Some(SMALL)).unwrap();
        assert!(
            !path.with_file_name("audit.jsonl.rotating").exists(),
            "{step:?}"
        );
        let child_seen: Vec<u64> = caller_records(&path)
            .iter()
            .filter(|r| r.server.as_deref() == Some("child"))
            .map(|r| r.data["i"].as_u64().unwrap())
            .collect();
        assert!(
            acked.iter().all(|i| child_seen.contains(i)),
            "{step:?}: acked {acked:?}, in the log {child_seen:?}"
        );
        append_records(&mut log, 30, |i| t(5000 + i as i64));
        drop(log);
        let report = verify(&path).unwrap();
        assert!(report.ok, "{step:?}: {report}");
        assert!(segments(&path).unwrap().len() > sealed_before, "{step:?}");
        let numbers: Vec<u64> = segments(&path).unwrap().iter().map(|s| s.number).collect();
        assert_eq!(
            numbers,
            (1..=numbers.len() as u64).collect::<Vec<_>>(),
            "{step:?}"
        );
        assert_eq!(
            read(&path).unwrap().len() as u64,
            report.records,
            "{step:?}"
        );
    }
}

// ---- retention ----

/// A log whose record `i` is on day `i / per_day`, rotating small: old days fill whole
/// segments.
fn log_over_days(n: u64, per_day: u64) -> (tempfile::TempDir, PathBuf, AuditLog) {
    let (dir, path) = new_log();
    let (mut log, _) =
        AuditLog::open_rotating(&path, day(0), Durability::Sync, Some(SMALL)).unwrap();
    append_records(&mut log, n, |i| day((i / per_day) as i64));
    (dir, path, log)
}

#[test]
fn prune_removes_only_whole_old_segments_and_says_so() {
    let (_dir, path, mut log) = log_over_days(200, 10); // days 0..=20
    let all = read(&path).unwrap();
    let before = segments(&path).unwrap();
    // Keep forever (or 0 days): nothing goes.
    for keep in [Retention::forever(), Retention::days(0)] {
        let pruned = log.prune(day(400), &keep).unwrap();
        assert!(pruned.removed.is_empty() && pruned.record_seq.is_none());
    }
    // A window that covers everything: nothing goes.
    assert!(
        log.prune(day(21), &Retention::days(30))
            .unwrap()
            .removed
            .is_empty()
    );
    assert_eq!(segments(&path).unwrap(), before);

    // Keep 10 days at day 20: records before day 10 may go, in whole segments only.
    let cutoff = day(10);
    let pruned = log.prune(day(20), &Retention::days(10)).unwrap();
    assert!(!pruned.removed.is_empty());
    let record_seq = pruned.record_seq.unwrap();
    for removed in &pruned.removed {
        assert!(!segment_path(&path, removed.number).exists());
        for r in all
            .iter()
            .filter(|r| (removed.first_seq..=removed.last_seq).contains(&r.seq))
        {
            assert!(r.time < cutoff, "{removed:?} held {r:?}");
        }
    }
    let through = pruned.removed.last().unwrap().number;
    assert_eq!(
        pruned.removed.iter().map(|r| r.number).collect::<Vec<_>>(),
        (1..=through).collect::<Vec<_>>()
    );
    // The first segment kept holds a record inside the window (or it would have gone).
    let kept = segments(&path).unwrap();
    assert_eq!(kept.first().unwrap().number, through + 1);
    // Nothing newer than the cutoff is gone.
    let now = read(&path).unwrap();
    for r in all.iter().filter(|r| r.time >= cutoff) {
        assert!(now.iter().any(|n| n.seq == r.seq), "lost {r:?}");
    }
    // The record names each segment; verify accepts the shorter chain and says why.
    let record = now.iter().find(|r| r.seq == record_seq).unwrap();
    assert_eq!(record.event, EVENT_RETENTION);
    assert_eq!(record.data["through"], through);
    assert_eq!(
        record.data["removed"].as_array().unwrap().len(),
        pruned.removed.len()
    );
    let report = verify(&path).unwrap();
    assert!(report.ok, "{report}");
    let note = report.removed.clone().unwrap();
    assert_eq!((note.through, note.record_seq), (through, record_seq));
    assert_eq!(note.first_seq, pruned.removed.last().unwrap().last_seq + 1);
    assert!(
        report
            .to_string()
            .contains(&format!("removed by retention (record seq {record_seq})")),
        "{report}"
    );
}

#[test]
fn prune_never_removes_the_active_file_and_chains_its_accounts() {
    let (_dir, path, mut log) = log_over_days(120, 10);
    // Everything is old: every sealed segment goes, the active file stays.
    let first = log.prune(day(1000), &Retention::days(1)).unwrap();
    assert!(!first.removed.is_empty());
    assert!(segments(&path).unwrap().is_empty());
    assert!(path.exists());
    assert!(verify(&path).unwrap().ok);
    // More records: the first retention record is sealed into a segment, which a later prune
    // removes too; verify still accounts for segment 1 on.
    append_records(&mut log, 120, |i| day(30 + (i / 10) as i64));
    let second = log.prune(day(2000), &Retention::days(1)).unwrap();
    assert!(second.removed.first().unwrap().number > first.removed.last().unwrap().number);
    let report = verify(&path).unwrap();
    assert!(report.ok, "{report}");
    assert_eq!(
        report.removed.unwrap().through,
        second.removed.last().unwrap().number
    );
    let report_text = verify(&path).unwrap().to_string();
    assert!(report_text.contains("segments 1–"), "{report_text}");
    // And the log goes on.
    append_records(&mut log, 5, |i| day(3000 + i as i64));
    assert!(verify(&path).unwrap().ok);
}

#[test]
fn a_segment_with_a_recent_record_is_kept_even_when_its_last_record_is_old() {
    let (_dir, path) = new_log();
    let (mut log, _) =
        AuditLog::open_rotating(&path, day(0), Durability::Sync, Some(SMALL)).unwrap();
    // Times are the caller's and need not increase: one recent record early in segment 1.
    append_records(&mut log, 60, |i| if i == 2 { day(100) } else { day(0) });
    let pruned = log.prune(day(50), &Retention::days(10)).unwrap();
    assert!(pruned.removed.is_empty(), "{pruned:?}");
    assert!(segment_path(&path, 1).exists());
}

// ---- verify across segments ----

#[test]
fn a_segment_deleted_by_hand_is_a_break_that_names_it() {
    for victim in [1u64, 2, 3] {
        let (_dir, path) = rotating_log(60, SMALL);
        let count = segments(&path).unwrap().len() as u64;
        assert!(count >= 4);
        let victim = if victim == 3 { count } else { victim };
        let name = segment_path(&path, victim)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        fs::remove_file(segment_path(&path, victim)).unwrap();
        let broken = first_broken(&path);
        assert_eq!(broken.kind, BreakKind::Truncated, "{victim}");
        assert!(broken.detail.contains(&name), "{victim}: {}", broken.detail);
    }
}

#[test]
fn a_retention_record_that_does_not_match_does_not_excuse_a_missing_segment() {
    let (_dir, path, mut log) = log_over_days(120, 10);
    log.prune(day(1000), &Retention::days(1)).unwrap();
    drop(log);
    assert!(verify(&path).unwrap().ok);
    // Rewrite the retention record's through_hash (and the chain after it, and the head, as a
    // careful forger would): the record no longer vouches for the segment the chain names.
    let mut all = lines(&path);
    let at = all
        .iter()
        .position(|l| String::from_utf8_lossy(l).contains(EVENT_RETENTION))
        .unwrap();
    all[at] = edit_line(&all[at], |r| {
        r.get_mut("data").unwrap()["through_hash"] = json!("cd".repeat(32));
    });
    for i in at + 1..all.len() {
        let prev = fixture::sha256_hex(&all[i - 1]);
        all[i] = edit_line(&all[i], |r| {
            r.insert("prev".into(), json!(prev));
        });
    }
    let last: serde_json::Value = serde_json::from_slice(all.last().unwrap()).unwrap();
    write_lines(&path, &all);
    fs::write(
        head_path(&path),
        json!({"seq": last["seq"], "hash": fixture::sha256_hex(all.last().unwrap())}).to_string(),
    )
    .unwrap();
    let broken = first_broken(&path);
    assert_eq!(broken.kind, BreakKind::Truncated);
    assert!(broken.detail.contains("seg-"), "{}", broken.detail);
}

#[test]
fn a_tampered_sealed_segment_fails_verify_at_that_segment() {
    // An edited record in the middle of segment 2: the next line's prev no longer matches.
    let (_dir, path) = rotating_log(60, SMALL);
    let seg = segment_path(&path, 2);
    let mut seg_lines = lines(&seg);
    seg_lines[2] = edit_line(&seg_lines[2], |r| {
        r.get_mut("data").unwrap()["decision"] = json!("denied");
    });
    write_lines(&seg, &seg_lines);
    let broken = first_broken(&path);
    assert_eq!(broken.kind, BreakKind::BadPrev);
    assert_eq!(broken.segment.as_deref(), Some("audit.jsonl.seg-000002"));
    assert_eq!(broken.line, 4);
    assert!(verify(&path).unwrap().to_string().contains("seg-000002"));

    // The last record of a segment edited: the next file's first record names the break.
    let (_dir, path) = rotating_log(60, SMALL);
    let seg = segment_path(&path, 1);
    let mut seg_lines = lines(&seg);
    let last = seg_lines.len() - 1;
    seg_lines[last] = edit_line(&seg_lines[last], |r| {
        r.get_mut("data").unwrap()["decision"] = json!("denied");
    });
    write_lines(&seg, &seg_lines);
    let broken = first_broken(&path);
    assert_eq!(broken.kind, BreakKind::BadPrev);
    assert_eq!(broken.segment.as_deref(), Some("audit.jsonl.seg-000002"));
    assert_eq!(broken.line, 1);

    // A record added to the end of a sealed segment.
    let (_dir, path) = rotating_log(60, SMALL);
    let seg = segment_path(&path, 1);
    let mut seg_lines = lines(&seg);
    seg_lines.push(seg_lines.last().unwrap().clone());
    write_lines(&seg, &seg_lines);
    assert!(!verify(&path).unwrap().ok);

    // Segments renamed out of order.
    let (_dir, path) = rotating_log(60, SMALL);
    let (a, b) = (segment_path(&path, 1), segment_path(&path, 2));
    let swap = path.with_file_name("swap");
    fs::rename(&a, &swap).unwrap();
    fs::rename(&b, &a).unwrap();
    fs::rename(&swap, &b).unwrap();
    assert!(!verify(&path).unwrap().ok);

    // Untouched, the same log verifies.
    let (_dir, path) = rotating_log(60, SMALL);
    assert!(verify(&path).unwrap().ok);
}

#[test]
fn an_active_file_that_restarts_the_chain_beside_segments_is_a_break() {
    let (_dir, path) = rotating_log(60, SMALL);
    fs::remove_file(&path).unwrap();
    fs::remove_file(head_path(&path)).unwrap();
    let (mut log, _) = AuditLog::open(&path, t(1000)).unwrap();
    log.append("tool_call", None, json!({}), t(1001)).unwrap();
    let broken = first_broken(&path);
    assert_eq!(broken.kind, BreakKind::BadPrev);
    assert_eq!(broken.segment, None);
}

// ---- reads across segments ----

fn filters() -> Vec<Filter> {
    vec![
        Filter::all(),
        Filter {
            server: Some("demo".into()),
            event: None,
        },
        Filter {
            server: None,
            event: Some("tool_call".into()),
        },
        Filter {
            server: Some("other".into()),
            event: Some("admission_decision".into()),
        },
    ]
}

#[test]
fn tail_is_the_last_n_of_read_for_every_size_filter_and_n() {
    for size in [0u64, 1, 2, 7, 40, 150] {
        for rotation in [SMALL, Rotation::default()] {
            let (_dir, path) = rotating_log(size, rotation);
            let all = read(&path).unwrap();
            for filter in filters() {
                let matching = filter.apply(all.clone());
                for n in [0usize, 1, 3, 10, 37, 1000] {
                    let recent = tail(&path, n, &filter).unwrap();
                    let expected = &matching[matching.len().saturating_sub(n)..];
                    assert_eq!(recent.records, expected, "size {size} {filter:?} n {n}");
                    let end = if n == 0 || matching.len() >= n {
                        TailEnd::Filled
                    } else {
                        TailEnd::Start
                    };
                    assert_eq!(recent.end, end, "size {size} {filter:?} n {n}");
                }
            }
        }
    }
}

#[test]
fn tail_crosses_segment_boundaries_and_stops_early() {
    let (_dir, path) = rotating_log(200, SMALL);
    let sealed = segments(&path).unwrap();
    assert!(sealed.len() >= 10);
    // The newest 30: more than the active file holds.
    let recent = tail(&path, 30, &Filter::all()).unwrap();
    assert_eq!(recent.end, TailEnd::Filled);
    assert_eq!(recent.scanned, 30);
    let all = read(&path).unwrap();
    assert_eq!(recent.records, all[all.len() - 30..]);
    // After retention removed old segments, tail ends at the oldest record kept.
    let (_dir, path, mut log) = log_over_days(200, 10);
    log.prune(day(15), &Retention::days(5)).unwrap();
    let all = read(&path).unwrap();
    let recent = tail(&path, 10_000, &Filter::all()).unwrap();
    assert_eq!(recent.end, TailEnd::Start);
    assert_eq!(recent.records, all);
}

#[test]
fn a_rare_filter_stops_at_the_scan_cap_and_says_so() {
    let (_dir, path) = new_log();
    let (mut log, _) = AuditLog::open_rotating(&path, t(0), Durability::Sync, Some(SMALL)).unwrap();
    log.append("tool_call", Some("rare"), json!({}), t(1))
        .unwrap();
    append_records(&mut log, 300, |i| t(1 + i as i64));
    let rare = Filter {
        server: Some("rare".into()),
        event: None,
    };
    let capped = tail_with(&path, 5, &rare, 50).unwrap();
    assert_eq!(capped.end, TailEnd::ScanCap);
    assert_eq!(capped.scanned, 50);
    assert!(capped.records.is_empty());
    let found = tail_with(&path, 5, &rare, 100_000).unwrap();
    assert_eq!(found.end, TailEnd::Start);
    assert_eq!(found.records.len(), 1);
    assert_eq!(found.scanned, read(&path).unwrap().len() as u64);
}

#[test]
fn tail_refuses_a_line_that_is_not_a_record() {
    let (_dir, path) = rotating_log(40, SMALL);
    let mut active = lines(&path);
    let at = active.len() - 2;
    active[at] = b"{\"not\":\"a record\"}".to_vec();
    write_lines(&path, &active);
    let err = tail(&path, 100, &Filter::all()).unwrap_err();
    assert_eq!(err.code(), "bad_record");
    assert!(err.to_string().contains("byte"), "{err}");
    // The newest record alone is still read.
    assert_eq!(tail(&path, 1, &Filter::all()).unwrap().records.len(), 1);
}

#[test]
fn stream_and_export_walk_every_segment_in_order() {
    let (_dir, path) = rotating_log(120, SMALL);
    let all = read(&path).unwrap();
    for filter in filters() {
        let streamed: Vec<_> = stream(&path, &filter)
            .unwrap()
            .map(|s| s.unwrap().record)
            .collect();
        assert_eq!(streamed, filter.apply(all.clone()), "{filter:?}");
    }
    // The export is every file's bytes, in order.
    let mut expected = Vec::new();
    for s in segments(&path).unwrap() {
        expected.extend(fs::read(&s.path).unwrap());
    }
    expected.extend(fs::read(&path).unwrap());
    let mut out = Vec::new();
    let count = export(&path, &Filter::all(), ExportFormat::Jsonl, &mut out).unwrap();
    assert_eq!(count, all.len() as u64);
    assert_eq!(out, expected);
    // A segment that is not records stops the stream with its name.
    fs::write(segment_path(&path, 2), "garbage\n").unwrap();
    let err = stream(&path, &Filter::all())
        .unwrap()
        .find_map(Result::err)
        .unwrap();
    assert!(err.to_string().contains("seg-000002"), "{err}");
}
