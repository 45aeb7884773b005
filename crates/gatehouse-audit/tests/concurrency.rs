//! Several writers on one log: handles in one thread, threads, and processes. The exclusive
//! lock plus re-reading the end under it must keep one unbroken chain.

#[path = "support/fixture.rs"]
mod fixture;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use fixture::{assert_intact, new_log, t};
use gatehouse_audit::{AuditLog, Filter, read};
use serde_json::json;

/// Set in a child process spawned by `processes_appending_keep_one_chain`.
const CHILD_LOG: &str = "GATEHOUSE_AUDIT_TEST_CHILD_LOG";
const CHILD_NAME: &str = "GATEHOUSE_AUDIT_TEST_CHILD_NAME";

fn append_n(path: &Path, writer: &str, n: u64) -> Vec<u64> {
    let (mut log, _) = AuditLog::open(path, t(0)).unwrap();
    (0..n)
        .map(|i| {
            log.append("tool_call", Some(writer), json!({"i": i}), t(i as i64))
                .unwrap()
                .seq
        })
        .collect()
}

#[test]
fn two_handles_appending_in_turn_keep_one_chain() {
    let (_dir, path) = new_log();
    let (mut a, _) = AuditLog::open(&path, t(0)).unwrap();
    let (mut b, _) = AuditLog::open(&path, t(0)).unwrap();
    for i in 0..20 {
        let sa = a
            .append("tool_call", Some("a"), json!({"i": i}), t(i))
            .unwrap()
            .seq;
        let sb = b
            .append("tool_call", Some("b"), json!({"i": i}), t(i))
            .unwrap()
            .seq;
        assert_eq!((sa, sb), (2 * i as u64 + 1, 2 * i as u64 + 2));
    }
    // A handle that sat idle while the other wrote picks up where the log is.
    for _ in 0..3 {
        b.append("tool_call", Some("b"), json!({}), t(50)).unwrap();
    }
    assert_eq!(
        a.append("tool_call", Some("a"), json!({}), t(51))
            .unwrap()
            .seq,
        44
    );
    assert_eq!(assert_intact(&path), 44);
}

#[test]
fn threads_appending_at_once_keep_one_chain() {
    let (_dir, path) = new_log();
    AuditLog::open(&path, t(0)).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|w| {
            let path = path.clone();
            thread::spawn(move || append_n(&path, &format!("thread-{w}"), 25))
        })
        .collect();
    let mut all = BTreeSet::new();
    for handle in threads {
        let seqs = handle.join().unwrap();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
        all.extend(seqs);
    }
    assert_eq!(all, (1..=100).collect::<BTreeSet<u64>>());
    assert_eq!(assert_intact(&path), 100);
    for w in 0..4 {
        let filter = Filter {
            server: Some(format!("thread-{w}")),
            event: None,
        };
        assert_eq!(filter.apply(read(&path).unwrap()).len(), 25);
    }
}

#[test]
fn processes_appending_at_once_keep_one_chain() {
    if std::env::var_os(CHILD_LOG).is_some() {
        return; // this copy is a child; it runs `child_writer` only
    }
    let (_dir, path) = new_log();
    AuditLog::open(&path, t(0)).unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..2)
        .map(|c| {
            Command::new(&exe)
                .args(["--exact", "child_writer", "--test-threads=1", "--nocapture"])
                .env(CHILD_LOG, &path)
                .env(CHILD_NAME, format!("process-{c}"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // Start together, so the writers contend for the lock.
    wait_for_children_ready(&path, 2);
    fs::write(go_file(&path), "").unwrap();
    append_n(&path, "parent", PER_WRITER);
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "child failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(assert_intact(&path), 3 * PER_WRITER);
    let records = read(&path).unwrap();
    for writer in ["parent", "process-0", "process-1"] {
        let count = records
            .iter()
            .filter(|r| r.server.as_deref() == Some(writer))
            .count();
        assert_eq!(count as u64, PER_WRITER, "{writer}");
    }
}

const PER_WRITER: u64 = 100;

fn go_file(log: &Path) -> std::path::PathBuf {
    log.with_file_name("go")
}

fn ready_file(log: &Path, name: &str) -> std::path::PathBuf {
    log.with_file_name(format!("ready-{name}"))
}

fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

fn wait_for_children_ready(log: &Path, n: usize) {
    wait_for("the children", || {
        (0..n).all(|c| ready_file(log, &format!("process-{c}")).exists())
    });
}

/// The body of a child process in `processes_appending_at_once_keep_one_chain`; does nothing
/// when run as an ordinary test.
#[test]
fn child_writer() {
    if let (Some(path), Some(name)) = (std::env::var_os(CHILD_LOG), std::env::var(CHILD_NAME).ok())
    {
        let path = Path::new(&path);
        fs::write(ready_file(path, &name), "").unwrap();
        wait_for("the go signal", || go_file(path).exists());
        append_n(path, &name, PER_WRITER);
    }
}
