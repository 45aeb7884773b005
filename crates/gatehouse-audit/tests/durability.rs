//! The two durability modes: what each has on disk when `append` returns, what a crash of the
//! writing process (SIGKILL) leaves, and what a simulated power cut leaves and how `verify`
//! and the next open report it.

#[path = "support/fixture.rs"]
mod fixture;

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fixture::{assert_intact, new_log, t};
use gatehouse_audit::{
    AuditLog, BreakKind, Durability, EVENT_SHORT_TAIL, Syncer, head_path, read, verify,
};
use serde_json::json;

/// A window no test waits out: only explicit flushes (and closing) make records durable.
fn wide() -> Durability {
    Durability::Batched {
        max_delay: Duration::from_secs(1),
        max_records: 10_000,
    }
}

fn head_seq(log: &Path) -> u64 {
    let head: serde_json::Value =
        serde_json::from_slice(&fs::read(head_path(log)).unwrap()).unwrap();
    head["seq"].as_u64().unwrap()
}

fn markers(log: &Path) -> Vec<PathBuf> {
    let name = format!("{}.batched-", log.file_name().unwrap().to_string_lossy());
    let mut found: Vec<PathBuf> = fs::read_dir(log.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let file = p.file_name().unwrap().to_string_lossy().into_owned();
            file.starts_with(&name) && !file.ends_with(".tmp")
        })
        .collect();
    found.sort();
    found
}

fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_batched_record_is_in_the_file_when_append_returns_and_the_head_follows_the_flush() {
    let (_dir, path) = new_log();
    let (mut log, _) = AuditLog::open_with(&path, t(0), wide()).unwrap();
    assert_eq!(log.durability(), wide());
    for i in 1..=5 {
        log.append("tool_call", Some("demo"), json!({"i": i}), t(i))
            .unwrap();
    }
    // In the file (a reader sees all five, the chain is whole) but not yet anchored: the head
    // lags, which verify accepts.
    assert_eq!(read(&path).unwrap().len(), 5);
    assert_eq!(assert_intact(&path), 5);
    assert!(head_seq(&path) < 5);
    let flushed = log.flush().unwrap();
    assert_eq!(flushed.seq, 5);
    assert_eq!(flushed.len, fs::metadata(&path).unwrap().len());
    assert_eq!(head_seq(&path), 5);
    // The sync mode: anchored before append returns.
    log.set_durability(Durability::Sync).unwrap();
    log.append("tool_call", Some("demo"), json!({"i": 6}), t(6))
        .unwrap();
    assert_eq!(head_seq(&path), 6);
}

#[test]
fn the_flusher_flushes_within_its_window_without_being_asked() {
    let (_dir, path) = new_log();
    let mode = Durability::Batched {
        max_delay: Duration::from_millis(20),
        max_records: 10_000,
    };
    let (mut log, _) = AuditLog::open_with(&path, t(0), mode).unwrap();
    for i in 1..=3 {
        log.append("tool_call", None, json!({"i": i}), t(i))
            .unwrap();
    }
    wait_for("the head to anchor seq 3", || head_seq(&path) == 3);
    // A full batch is flushed without waiting for the delay.
    let mode = Durability::Batched {
        max_delay: Duration::from_secs(1),
        max_records: 4,
    };
    log.set_durability(mode).unwrap();
    for i in 4..=7 {
        log.append("tool_call", None, json!({"i": i}), t(i))
            .unwrap();
    }
    wait_for("the head to anchor seq 7", || head_seq(&path) == 7);
}

#[test]
fn closing_a_batched_log_flushes_it_and_removes_its_marker() {
    let (_dir, path) = new_log();
    let (mut log, _) = AuditLog::open_with(&path, t(0), wide()).unwrap();
    if cfg!(target_os = "linux") {
        assert_eq!(markers(&path).len(), 1, "a batched handle keeps a marker");
    }
    for i in 1..=10 {
        log.append("tool_call", None, json!({"i": i}), t(i))
            .unwrap();
    }
    drop(log);
    assert_eq!(head_seq(&path), 10);
    assert!(markers(&path).is_empty());
    let (_, report) = AuditLog::open(&path, t(20)).unwrap();
    assert!(report.recovery.is_empty(), "{report:?}");
}

#[test]
fn a_head_far_behind_a_batched_writer_is_accepted_by_another_writer() {
    let (_dir, path) = new_log();
    let (mut batched, _) = AuditLog::open_with(&path, t(0), wide()).unwrap();
    for i in 1..=300 {
        batched
            .append("tool_call", Some("a"), json!({"i": i}), t(i))
            .unwrap();
    }
    // Another process's writer finds the head 300 records behind: a lag, not a removal.
    let (mut other, report) = AuditLog::open(&path, t(400)).unwrap();
    assert!(report.recovery.is_empty(), "{report:?}");
    other
        .append("tool_call", Some("b"), json!({}), t(401))
        .unwrap();
    batched
        .append("tool_call", Some("a"), json!({}), t(402))
        .unwrap();
    drop(batched);
    assert_eq!(assert_intact(&path), 302);
}

#[test]
fn batched_handles_in_several_threads_keep_one_chain() {
    let (_dir, path) = new_log();
    AuditLog::open(&path, t(0)).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|w| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mode = Durability::Batched {
                    max_delay: Duration::from_millis(5),
                    max_records: 7,
                };
                let (mut log, _) = AuditLog::open_with(&path, t(0), mode).unwrap();
                for i in 0..100 {
                    log.append("tool_call", Some(&format!("w{w}")), json!({"i": i}), t(i))
                        .unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(assert_intact(&path), 400);
    assert_eq!(head_seq(&path), 400);
}

/// A disk on which, the first time a flush makes the log durable, another handle appends a
/// record in the sync mode, so the head anchors it: what another thread or process may do
/// between a batched flush's look at its end and the rename of its head.
#[derive(Debug)]
struct OtherWriterMidFlush {
    log: std::sync::Mutex<Option<PathBuf>>,
}

impl Syncer for OtherWriterMidFlush {
    fn sync_data(&self, file: &fs::File) -> std::io::Result<()> {
        let other = self.log.lock().unwrap().take();
        if let Some(path) = other {
            let (mut log, _) = AuditLog::open(&path, t(50)).unwrap();
            log.append("tool_call", Some("other"), json!({}), t(51))
                .unwrap();
        }
        file.sync_data()
    }
}

#[test]
fn a_flush_never_moves_the_head_back_over_a_later_one() {
    let (_dir, path) = new_log();
    let disk = std::sync::Arc::new(OtherWriterMidFlush {
        log: std::sync::Mutex::new(Some(path.clone())),
    });
    let (mut batched, _) = AuditLog::open_with_syncer(&path, t(0), wide(), disk.clone()).unwrap();
    let first = batched
        .append("tool_call", Some("batched"), json!({}), t(1))
        .unwrap();
    assert_eq!(first.seq, 1);
    // The flush makes seq 1 durable; while it does, the other handle appends seq 2 and
    // anchors the head to it. The flush's head for seq 1 must not replace that one.
    assert_eq!(batched.flush().unwrap().seq, 1);
    assert!(disk.log.lock().unwrap().is_none(), "the other handle ran");
    let head: serde_json::Value =
        serde_json::from_slice(&fs::read(head_path(&path)).unwrap()).unwrap();
    let tip = verify(&path).unwrap().tip.unwrap();
    assert_eq!(
        (head["seq"].as_u64(), head["hash"].as_str()),
        (Some(2), Some(&*tip.hash))
    );
    assert_eq!(tip.seq, 2);
    // The head it did not install is not left behind.
    let leftovers: Vec<_> = fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // The batched handle appends after the other's record, and its next flush moves the
    // head forward again.
    let third = batched
        .append("tool_call", Some("batched"), json!({}), t(2))
        .unwrap();
    assert_eq!(third.seq, 3);
    assert!(third.recovery.is_empty(), "{third:?}");
    assert_eq!(batched.flush().unwrap().seq, 3);
    assert_eq!(head_seq(&path), 3);
    drop(batched);
    assert_eq!(assert_intact(&path), 3);
    assert_eq!(head_seq(&path), 3);
    let (_, report) = AuditLog::open(&path, t(60)).unwrap();
    assert!(report.recovery.is_empty(), "{report:?}");
}

#[test]
fn a_flush_that_fails_refuses_every_later_append() {
    let (_dir, path) = new_log();
    let (mut log, _) = AuditLog::open_with(&path, t(0), wide()).unwrap();
    log.append("tool_call", None, json!({}), t(1)).unwrap();
    // The head cannot be replaced: a directory stands where it goes.
    let head = head_path(&path);
    let _ = fs::remove_file(&head);
    fs::create_dir(&head).unwrap();
    let error = log.flush().unwrap_err();
    assert_eq!(error.code(), "head", "{error}");
    let error = log.append("tool_call", None, json!({}), t(2)).unwrap_err();
    assert_eq!(error.code(), "flush_failed", "{error}");
    assert!(error.to_string().contains("no further decision"), "{error}");
    let kept = markers(&path);
    drop(log);
    // Not everything is known durable: the marker stays.
    assert_eq!(markers(&path), kept);
    // A good append works on a fresh handle once the disk is fixed.
    fs::remove_dir(&head).unwrap();
    let (mut log, _) = AuditLog::open(&path, t(3)).unwrap();
    log.append("tool_call", None, json!({}), t(4)).unwrap();
}

#[test]
fn a_window_outside_the_limits_is_refused_by_name() {
    let (_dir, path) = new_log();
    let error = AuditLog::open_with(
        &path,
        t(0),
        Durability::Batched {
            max_delay: Duration::from_secs(60),
            max_records: 10,
        },
    )
    .unwrap_err();
    assert_eq!(error.code(), "bad_durability");
    assert!(error.to_string().contains("60000 ms"), "{error}");
}

// --- Crashes: a child process appends until it is killed with SIGKILL. -----------------------

const CHILD_LOG: &str = "GATEHOUSE_AUDIT_DURABILITY_CHILD_LOG";
const CHILD_MODE: &str = "GATEHOUSE_AUDIT_DURABILITY_CHILD_MODE";

/// Runs only in a child spawned by the tests below: appends forever, printing each seq once
/// `append` returned (what the host would act on), and in `power` mode prints the flushed
/// length after record 50.
#[test]
fn child_appender() {
    let (Some(path), Ok(mode)) = (std::env::var_os(CHILD_LOG), std::env::var(CHILD_MODE)) else {
        return;
    };
    let durability = match mode.as_str() {
        "sync" => Durability::Sync,
        _ => wide(),
    };
    let (mut log, _) = AuditLog::open_with(&path, t(0), durability).unwrap();
    for i in 1u64.. {
        let appended = log
            .append("tool_call", Some("flood"), json!({"i": i}), t(i as i64))
            .unwrap();
        println!("appended {}", appended.seq);
        if mode == "power" && i == 50 {
            let flushed = log.flush().unwrap();
            println!("flushed {} {}", flushed.seq, flushed.len);
        }
        if mode == "power" && i == 80 {
            println!("waiting");
            std::thread::sleep(Duration::from_secs(600));
        }
    }
}

fn spawn_appender(path: &Path, mode: &str) -> (Child, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_appender",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(CHILD_LOG, path)
        .env(CHILD_MODE, mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdout)
}

/// Kills the appender with SIGKILL once it reported `at_least` records, then reads what it
/// reported before dying: the seqs it was told were appended.
fn kill_during_flood(path: &Path, mode: &str, at_least: u64) -> Vec<u64> {
    let (mut child, mut stdout) = spawn_appender(path, mode);
    let mut acknowledged = Vec::new();
    let mut line = String::new();
    while acknowledged.len() < at_least as usize {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "the child stopped"
        );
        if let Some(seq) = line.trim().strip_prefix("appended ") {
            acknowledged.push(seq.parse().unwrap());
        }
    }
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    // Lines already in the pipe were acknowledged before the kill, too.
    for line in stdout.lines() {
        if let Some(seq) = line.unwrap().trim().strip_prefix("appended ") {
            acknowledged.push(seq.parse().unwrap());
        }
    }
    acknowledged
}

fn assert_nothing_acknowledged_is_lost(path: &Path, acknowledged: &[u64]) {
    let records = read(path).unwrap();
    let last = records.last().map_or(0, |r| r.seq);
    assert!(
        acknowledged.iter().all(|&seq| seq <= last),
        "acknowledged up to {:?}, log ends at {last}",
        acknowledged.last()
    );
    // Every acknowledged record is the child's, in order.
    let flood: Vec<u64> = records
        .iter()
        .filter(|r| r.server.as_deref() == Some("flood"))
        .map(|r| r.seq)
        .collect();
    for seq in acknowledged {
        assert!(
            flood.contains(seq),
            "seq {seq} was acknowledged and is missing"
        );
    }
}

#[test]
fn sigkill_during_a_flood_loses_nothing_in_either_mode() {
    if std::env::var_os(CHILD_LOG).is_some() {
        return;
    }
    for mode in ["sync", "batched"] {
        let (_dir, path) = new_log();
        let acknowledged = kill_during_flood(&path, mode, 300);
        // What the dead process wrote is all there, and the chain verifies as it is.
        assert_intact(&path);
        assert_nothing_acknowledged_is_lost(&path, &acknowledged);
        // The next writer finds nothing to repair: only the process died, the machine did
        // not, so the page cache kept every write (its marker is simply tidied away).
        let (mut log, report) = AuditLog::open(&path, t(10_000)).unwrap();
        assert!(report.recovery.is_empty(), "{mode}: {report:?}");
        assert!(markers(&path).is_empty(), "{mode}");
        log.append("tool_call", Some("after"), json!({}), t(10_001))
            .unwrap();
        assert_intact(&path);
        assert!(verify(&path).unwrap().short_tails.is_empty());
    }
}

/// A power cut, simulated: the batched writer is stopped for good (SIGKILL) after records it
/// never flushed; the file loses everything after the last flush (as the disk never had it),
/// and the system comes back with another boot id (the marker is rewritten as if written by
/// the boot before).
#[test]
fn a_power_cut_in_the_batched_mode_is_a_short_tail_not_tampering() {
    if std::env::var_os(CHILD_LOG).is_some() || !cfg!(target_os = "linux") {
        return;
    }
    for torn in [false, true] {
        let (_dir, path) = new_log();
        let (mut child, mut stdout) = spawn_appender(&path, "power");
        let mut flushed = None;
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                stdout.read_line(&mut line).unwrap() > 0,
                "the child stopped"
            );
            if let Some(rest) = line.trim().strip_prefix("flushed ") {
                let (seq, len) = rest.split_once(' ').unwrap();
                flushed = Some((seq.parse::<u64>().unwrap(), len.parse::<u64>().unwrap()));
            }
            if line.trim() == "waiting" {
                break;
            }
        }
        let (flushed_seq, flushed_len) = flushed.unwrap();
        assert_eq!(flushed_seq, 50);
        assert_eq!(read(&path).unwrap().len(), 80, "written, not all flushed");
        child.kill().unwrap();
        child.wait().unwrap();

        // The disk had the log up to the flush (plus, when torn, part of the next line).
        let keep = if torn { flushed_len + 17 } else { flushed_len };
        let file = fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(keep).unwrap();
        drop(file);
        assert_eq!(
            head_seq(&path),
            50,
            "the head anchors only what was flushed"
        );
        let marker = markers(&path).pop().expect("the batched writer's marker");
        let mut content: serde_json::Value =
            serde_json::from_slice(&fs::read(&marker).unwrap()).unwrap();
        content["boot_id"] = json!("00000000-0000-0000-0000-000000000000");
        fs::write(&marker, serde_json::to_vec(&content).unwrap()).unwrap();

        // Verify, before anyone opened the log again: a short tail, and no record missing
        // that the head anchored.
        let report = verify(&path).unwrap();
        assert_eq!(report.short_tails.len(), 1, "{report}");
        let short = &report.short_tails[0];
        assert_eq!((short.line, short.head_seq), (None, Some(50)));
        assert_eq!((short.flush_ms, short.flush_records), (1000, 10_000));
        if torn {
            let broken = report.first_broken.as_ref().unwrap();
            assert_eq!(broken.kind, BreakKind::TornTail, "{report}");
        } else {
            assert!(report.ok, "{report}");
            assert_eq!(report.records, 50);
        }
        assert!(report.to_string().contains("short tail"), "{report}");
        assert!(report.to_string().contains("not tampering"), "{report}");

        // The next start repairs a torn line (its record is seq 51) and records the short
        // tail after it, once.
        let (mut log, opened) = AuditLog::open(&path, t(10_000)).unwrap();
        let short = opened.recovery.short_tail.clone().expect("recorded");
        assert_eq!(
            (short.writers, short.head_seq, short.log_seq),
            (1, Some(50), if torn { 51 } else { 50 })
        );
        assert_eq!(opened.recovery.torn_tail.is_some(), torn);
        assert!(opened.recovery.head_mismatch.is_none(), "{opened:?}");
        assert!(markers(&path).is_empty());
        log.append("tool_call", Some("after"), json!({}), t(10_001))
            .unwrap();
        let report = verify(&path).unwrap();
        assert!(report.ok, "{report}");
        assert_eq!(report.short_tails.len(), 1);
        assert_eq!(report.short_tails[0].seq, Some(short.seq));
        let recorded = read(&path)
            .unwrap()
            .into_iter()
            .filter(|r| r.event == EVENT_SHORT_TAIL)
            .count();
        assert_eq!(recorded, 1);
        drop(log);
        // Opening again does not record it again.
        let (_, again) = AuditLog::open(&path, t(10_002)).unwrap();
        assert!(again.recovery.is_empty(), "{again:?}");
    }
}

#[test]
fn a_refused_append_between_batched_ones_leaves_the_rest_to_be_flushed() {
    let (_dir, path) = new_log();
    let (mut log, _) = AuditLog::open_with(&path, t(0), wide()).unwrap();
    for i in 1..=3 {
        log.append("tool_call", None, json!({"i": i}), t(i))
            .unwrap();
    }
    // Refused before a byte is written; the handle forgets the end it knew.
    let huge = "x".repeat(gatehouse_audit::MAX_RECORD_BYTES);
    let error = log
        .append("tool_call", None, json!({"text": huge}), t(4))
        .unwrap_err();
    assert_eq!(error.code(), "record_too_large", "{error}");
    // The flush reads the end again and anchors what was written.
    let flushed = log.flush().unwrap();
    assert_eq!(flushed.seq, 3);
    assert_eq!(head_seq(&path), 3);
    log.append("tool_call", None, json!({"i": 5}), t(5))
        .unwrap();
    drop(log);
    assert_eq!(assert_intact(&path), 4);
    assert_eq!(head_seq(&path), 4);
}

// --- A disk that fails a flush: the writer's marker says so, and a later open records it. ----

/// A disk whose `fdatasync` starts failing (EIO) when told to, as a failing disk's does.
#[derive(Debug, Default)]
struct FailingDisk {
    failing: std::sync::atomic::AtomicBool,
}

impl FailingDisk {
    fn fail_from_now(&self) {
        self.failing
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Syncer for FailingDisk {
    fn sync_data(&self, file: &fs::File) -> std::io::Result<()> {
        if self.failing.load(std::sync::atomic::Ordering::SeqCst) {
            Err(std::io::Error::from_raw_os_error(5))
        } else {
            file.sync_data()
        }
    }
}

fn marker_json(marker: &Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(marker).unwrap()).unwrap()
}

const DYING_LOG: &str = "GATEHOUSE_AUDIT_DYING_WRITER_LOG";
const DYING_MODE: &str = "GATEHOUSE_AUDIT_DYING_WRITER_MODE";

/// Runs only in a child spawned by the tests below: a batched writer on `FailingDisk` appends
/// three records and flushes them, appends two more (acknowledged: the host acted on them),
/// then dies. In `flush_fails` mode the disk fails the next flush first and the writer is
/// dropped, which cannot close it cleanly; in `flushed` mode the two are flushed fine and the
/// process exits without closing the log, as a killed one would.
#[test]
fn child_dying_writer() {
    let (Some(path), Ok(mode)) = (std::env::var_os(DYING_LOG), std::env::var(DYING_MODE)) else {
        return;
    };
    let disk = std::sync::Arc::new(FailingDisk::default());
    let (mut log, _) = AuditLog::open_with_syncer(&path, t(0), wide(), disk.clone()).unwrap();
    for i in 1..=3 {
        log.append("tool_call", Some("dying"), json!({"i": i}), t(i))
            .unwrap();
    }
    println!("flushed {}", log.flush().unwrap().seq);
    for i in 4..=5 {
        log.append("tool_call", Some("dying"), json!({"i": i}), t(i))
            .unwrap();
    }
    if mode == "flush_fails" {
        disk.fail_from_now();
        println!("flush failed: {}", log.flush().unwrap_err().code());
        let refused = log.append("tool_call", None, json!({}), t(6)).unwrap_err();
        println!("append refused: {}", refused.code());
        drop(log);
    } else {
        println!("flushed {}", log.flush().unwrap().seq);
        std::process::exit(0);
    }
}

/// Runs the dying writer to its end; returns its pid and what it printed.
fn run_dying_writer(path: &Path, mode: &str) -> (u32, String) {
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_dying_writer",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(DYING_LOG, path)
        .env(DYING_MODE, mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the child writer failed");
    (pid, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The attack on the record: a flush fails (fdatasync EIO), so records the host already acted
/// on may never reach the disk; the writer then dies. The next open on the same boot sees a
/// dead writer's marker, which for a crash of the process alone means nothing was lost; here
/// it must not be tidied away in silence.
#[test]
fn a_dead_writer_whose_flush_failed_is_recorded_as_a_short_tail() {
    if std::env::var_os(DYING_LOG).is_some() || !cfg!(target_os = "linux") {
        return;
    }
    let (_dir, path) = new_log();
    let (pid, printed) = run_dying_writer(&path, "flush_fails");
    assert!(printed.contains("flushed 3"), "{printed}");
    assert!(printed.contains("flush failed: write"), "{printed}");
    assert!(
        printed.contains("append refused: flush_failed"),
        "{printed}"
    );
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the writer is dead"
    );
    assert_eq!((read(&path).unwrap().len(), head_seq(&path)), (5, 3));
    // The writer's marker is still there, and says its flush failed after seq 3.
    let marker = markers(&path).pop().expect("the failed writer's marker");
    let content = marker_json(&marker);
    assert_eq!(content["pid"], json!(pid), "{content}");
    assert_eq!(content["flush_failed"], json!(true), "{content}");
    assert_eq!(content["durable_seq"], json!(3), "{content}");

    // verify, before anyone opened the log again: intact, with a short tail to report.
    let report = verify(&path).unwrap();
    assert!(report.ok, "{report}");
    assert_eq!(report.short_tails.len(), 1, "{report}");
    let note = &report.short_tails[0];
    assert_eq!((note.line, note.flush_failed), (None, 1), "{report}");
    assert!(report.to_string().contains("flush"), "{report}");

    // The next open, on the same boot, records it and says so (the warning the host shows).
    let (mut log, opened) = AuditLog::open(&path, t(100)).unwrap();
    let short = opened
        .recovery
        .short_tail
        .clone()
        .expect("a failed flush of a dead writer is recorded, not tidied away");
    assert_eq!(
        (
            short.writers,
            short.flush_failed,
            short.durable_seq,
            short.head_seq,
            short.log_seq
        ),
        (1, 1, Some(3), Some(3), 5)
    );
    let warning = short.describe();
    assert!(warning.contains("failed"), "{warning}");
    assert!(warning.contains("after seq 3"), "{warning}");
    assert!(markers(&path).is_empty(), "recorded, then removed");
    let records = read(&path).unwrap();
    let recorded: Vec<_> = records
        .iter()
        .filter(|r| r.event == EVENT_SHORT_TAIL)
        .collect();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].seq, short.seq);
    assert_eq!(recorded[0].data["flush_failed"], json!(1));
    assert_eq!(recorded[0].data["durable_seq"], json!(3));
    log.append("tool_call", Some("after"), json!({}), t(101))
        .unwrap();
    let report = verify(&path).unwrap();
    assert!(report.ok, "{report}");
    assert_eq!(report.short_tails.len(), 1, "{report}");
    assert_eq!(report.short_tails[0].seq, Some(short.seq));
    assert_eq!(report.short_tails[0].flush_failed, 1);
    drop(log);
    let (_, again) = AuditLog::open(&path, t(102)).unwrap();
    assert!(again.recovery.is_empty(), "recorded once: {again:?}");
}

/// The passing side: a writer of this boot that flushed everything and then died (killed, not
/// closed) lost nothing; its marker is removed without a record.
#[test]
fn a_dead_writer_that_flushed_fine_is_tidied_away_in_silence() {
    if std::env::var_os(DYING_LOG).is_some() || !cfg!(target_os = "linux") {
        return;
    }
    let (_dir, path) = new_log();
    let (pid, printed) = run_dying_writer(&path, "flushed");
    assert!(printed.contains("flushed 5"), "{printed}");
    let marker = markers(&path)
        .pop()
        .expect("a killed writer leaves its marker");
    let content = marker_json(&marker);
    assert_eq!(content["pid"], json!(pid), "{content}");
    assert!(content.get("flush_failed").is_none(), "{content}");
    assert!(verify(&path).unwrap().short_tails.is_empty());

    let (_log, opened) = AuditLog::open(&path, t(100)).unwrap();
    assert!(opened.recovery.is_empty(), "{opened:?}");
    assert!(markers(&path).is_empty());
    assert!(
        read(&path)
            .unwrap()
            .iter()
            .all(|r| r.event != EVENT_SHORT_TAIL)
    );
}

/// A disk that refuses the marker's rewrite too: the marker is renamed instead (no data block
/// needed), and the next open records that; when even the rename fails, the marker is kept as
/// it was, never removed.
#[test]
fn a_marker_that_cannot_be_rewritten_is_renamed_or_else_kept() {
    if !cfg!(target_os = "linux") {
        return;
    }
    for rename_works in [true, false] {
        let (_dir, path) = new_log();
        let disk = std::sync::Arc::new(FailingDisk::default());
        let (mut log, _) = AuditLog::open_with_syncer(&path, t(0), wide(), disk.clone()).unwrap();
        log.append("tool_call", None, json!({"i": 1}), t(1))
            .unwrap();
        let marker = markers(&path).pop().unwrap();
        let before = fs::read(&marker).unwrap();
        // The rewrite goes through `<marker>.tmp`: a directory there makes it fail.
        let mut temp = marker.clone().into_os_string();
        temp.push(".tmp");
        fs::create_dir(&temp).unwrap();
        let mut renamed = marker.clone().into_os_string();
        renamed.push(".flush-failed");
        let renamed = PathBuf::from(renamed);
        if !rename_works {
            fs::create_dir(&renamed).unwrap();
            fs::write(renamed.join("x"), "occupied").unwrap();
        }
        disk.fail_from_now();
        assert_eq!(log.flush().unwrap_err().code(), "write");
        drop(log);
        if rename_works {
            assert!(!marker.exists() && renamed.is_file(), "{rename_works}");
            let (_log, opened) = AuditLog::open(&path, t(10)).unwrap();
            let short = opened.recovery.short_tail.expect("recorded");
            assert_eq!((short.flush_failed, short.durable_seq), (1, None));
            assert!(!renamed.exists());
        } else {
            assert_eq!(fs::read(&marker).unwrap(), before, "kept as it was");
        }
    }
}
