//! The audit commands through the real binary on logs that rotated into segments: `show
//! --last N` (the newest N, filtered), `show` and `export` streaming across segments (the
//! export byte for byte the segments' lines), `verify` across segments (a missing one is a
//! break), `audit settings`, and retention applied when a host opens the log: the policy's,
//! and a bundle's longer one winning over it.

mod common;

use std::path::{Path, PathBuf};

use common::Env;
use gatehouse_audit::{AuditLog, Durability, Rotation};
use gatehouse_testkit::bundles;
use serde_json::{Value, json};
use time::{Duration, OffsetDateTime};

/// A log at `dir/audit.jsonl` rotated every 4 KiB, with `count` records (events `alpha` and
/// `beta`, servers `s0`…`s2`) written at `time(i)`. Returns the log's path.
fn write_log(
    path: &Path,
    count: usize,
    time: impl Fn(usize) -> OffsetDateTime,
    first: usize,
) -> PathBuf {
    let (mut log, _) = AuditLog::open_rotating(
        path,
        time(first),
        Durability::batched(),
        Some(Rotation {
            segment_max_bytes: 4096,
        }),
    )
    .unwrap();
    for i in first..first + count {
        let event = if i % 4 == 0 { "beta" } else { "alpha" };
        let server = format!("s{}", i % 3);
        log.append(event, Some(&server), json!({"i": i}), time(i))
            .unwrap();
    }
    path.to_path_buf()
}

fn at(days_ago: i64) -> impl Fn(usize) -> OffsetDateTime {
    let base = OffsetDateTime::now_utc() - Duration::days(days_ago);
    move |i| base + Duration::seconds(i as i64)
}

/// The sealed segments, oldest first, then the file being written.
fn files(log: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = gatehouse_audit::segments(log)
        .unwrap()
        .into_iter()
        .map(|s| s.path)
        .collect();
    files.push(log.to_path_buf());
    files
}

fn seqs(records: &Value) -> Vec<u64> {
    records
        .as_array()
        .unwrap_or_else(|| panic!("no records in {records}"))
        .iter()
        .map(|r| r["seq"].as_u64().unwrap())
        .collect()
}

fn audit(env: &Env, log: &Path, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["--audit", log.to_str().unwrap()];
    all.extend_from_slice(args);
    env.run(&all)
}

fn audit_json(env: &Env, log: &Path, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["--audit", log.to_str().unwrap()];
    all.extend_from_slice(args);
    env.json(&all)
}

#[test]
fn show_last_prints_the_newest_matching_records_across_segments_oldest_first() {
    let env = Env::new();
    let log = write_log(&env.dir.path().join("audit.jsonl"), 400, at(1), 0);
    assert!(files(&log).len() > 3, "the log rotated: {:?}", files(&log));
    let all = gatehouse_audit::read(&log).unwrap();
    let last = |filter: &dyn Fn(&gatehouse_audit::Record) -> bool, n: usize| -> Vec<u64> {
        let matching: Vec<u64> = all.iter().filter(|r| filter(r)).map(|r| r.seq).collect();
        matching[matching.len().saturating_sub(n)..].to_vec()
    };

    // People's lines: `#seq time event server …`, oldest first.
    let (code, out, err) = audit(&env, &log, &["audit", "show", "--last", "10"]);
    assert_eq!(code, 0, "{err}");
    let shown: Vec<u64> = out
        .lines()
        .map(|l| l[1..l.find(' ').unwrap()].parse().unwrap())
        .collect();
    assert_eq!(shown, last(&|_| true, 10));

    // JSON, filtered by server and type: the newest 10 of those, across segment boundaries.
    let (code, out) = audit_json(
        &env,
        &log,
        &[
            "audit", "show", "--last", "10", "--server", "s1", "--type", "beta",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let wanted = last(
        &|r| r.server.as_deref() == Some("s1") && r.event == "beta",
        10,
    );
    assert_eq!(seqs(&out["records"]), wanted);
    assert_eq!(out["end"], "filled", "{out}");
    assert_eq!(out["log"], json!(log));
    // The records are the log's, as `show` without --last prints them.
    let (_, everything) = audit_json(
        &env,
        &log,
        &["audit", "show", "--type", "beta", "--server", "s1"],
    );
    let every = everything["records"].as_array().unwrap();
    assert_eq!(
        out["records"].as_array().unwrap()[..],
        every[every.len() - 10..]
    );

    // More asked than there are: all of them, and the start of the log says so.
    let (code, out) = audit_json(
        &env,
        &log,
        &["audit", "show", "--last", "100000", "--type", "beta"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        seqs(&out["records"]),
        last(&|r| r.event == "beta", usize::MAX)
    );
    assert_eq!(out["end"], "start", "{out}");
    // Nothing matches: an empty list, and a line saying so for people.
    let (code, out) = audit_json(
        &env,
        &log,
        &["audit", "show", "--last", "5", "--type", "gamma"],
    );
    assert_eq!((code, seqs(&out["records"]).len()), (0, 0), "{out}");
    let (code, out, _) = audit(
        &env,
        &log,
        &["audit", "show", "--last", "5", "--type", "gamma"],
    );
    assert_eq!(code, 0);
    assert!(out.starts_with("no matching records in "), "{out}");

    // N out of range is a usage error; a log that is not there is `audit_not_found`-like (2).
    for bad in ["0", "100001", "-3", "ten"] {
        let (code, _, err) = audit(&env, &log, &["audit", "show", "--last", bad]);
        assert_eq!(code, 2, "--last {bad}: {err}");
    }
    let missing = env.dir.path().join("none.jsonl");
    let (code, _, err) = audit(&env, &missing, &["audit", "show", "--last", "3"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn show_and_export_stream_every_segment_byte_for_byte() {
    let env = Env::new();
    let log = write_log(&env.dir.path().join("audit.jsonl"), 300, at(1), 0);
    let files = files(&log);
    assert!(files.len() > 3, "{files:?}");
    let concatenated: Vec<u8> = files
        .iter()
        .flat_map(|f| std::fs::read(f).unwrap())
        .collect();

    // To standard output and to a file: the log's lines as they are, oldest first.
    let mut cmd = env.cmd(&["--audit", log.to_str().unwrap(), "audit", "export"]);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout == concatenated,
        "stdout differs from the segments"
    );
    let target = env.dir.path().join("export.jsonl");
    let (code, _, err) = audit(
        &env,
        &log,
        &["audit", "export", "--out", target.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        std::fs::read(&target).unwrap() == concatenated,
        "--out differs"
    );
    let records = concatenated
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    assert!(
        err.contains(&format!("exported {records} record(s)")),
        "{err}"
    );
    // A JSON array of the same lines.
    let (code, _, err) = audit(
        &env,
        &log,
        &[
            "audit",
            "export",
            "--format",
            "json",
            "--out",
            target.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let array: Vec<Value> = serde_json::from_slice(&std::fs::read(&target).unwrap()).unwrap();
    assert_eq!(array.len(), records);
    // An export that cannot be written leaves nothing behind.
    let nowhere = env.dir.path().join("no-such-dir/export.jsonl");
    let (code, _, err) = audit(
        &env,
        &log,
        &["audit", "export", "--out", nowhere.to_str().unwrap()],
    );
    assert_ne!(code, 0, "{err}");
    assert!(!nowhere.exists());

    // show: every record, oldest first, across segments (JSON and lines agree).
    let (code, out) = audit_json(&env, &log, &["audit", "show"]);
    assert_eq!(code, 0, "{out}");
    let all = seqs(&out["records"]);
    assert_eq!(all, (1..=all.len() as u64).collect::<Vec<_>>());
    assert_eq!(all.len(), records);
    let (code, lines, _) = audit(&env, &log, &["audit", "show"]);
    assert_eq!(code, 0);
    assert_eq!(lines.lines().count(), records);
    // An empty result is still one JSON document.
    let (code, out) = audit_json(&env, &log, &["audit", "show", "--type", "gamma"]);
    assert_eq!((code, out["records"].clone()), (0, json!([])), "{out}");
}

#[test]
fn verify_checks_the_chain_across_segments_and_names_a_missing_one() {
    let env = Env::new();
    let log = write_log(&env.dir.path().join("audit.jsonl"), 300, at(1), 0);
    let segments = gatehouse_audit::segments(&log).unwrap();
    assert!(segments.len() >= 3, "{segments:?}");
    let (code, report) = audit_json(&env, &log, &["audit", "verify"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["segments"], segments.len() as u64, "{report}");
    let (code, line, _) = audit(&env, &log, &["audit", "verify"]);
    assert_eq!(code, 0, "{line}");

    // A segment removed by hand (no retention record says so) is a break that names it.
    let middle = &segments[1].path;
    let name = middle.file_name().unwrap().to_str().unwrap().to_string();
    std::fs::remove_file(middle).unwrap();
    let (code, report) = audit_json(&env, &log, &["audit", "verify"]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["ok"], false, "{report}");
    assert!(report.to_string().contains(&name), "names {name}: {report}");
}

/// The shipped policy with `[audit] retain_days` set, written into the test's directory.
fn policy(env: &Env, retain_days: u32) -> PathBuf {
    let shipped = gatehouse_policy::policy::DEFAULT_POLICY_TOML;
    assert!(shipped.contains("retain_days = 180"));
    let path = env.dir.path().join(format!("policy-{retain_days}.toml"));
    std::fs::write(
        &path,
        shipped.replace("retain_days = 180", &format!("retain_days = {retain_days}")),
    )
    .unwrap();
    path
}

/// A log as a host left it over a year: segments of records 400 days old, then a segment of
/// records 10 days old (inside a 30-day window), then the file being written. Returns the
/// log and the number of old segments.
fn a_year_of_log(env: &Env) -> (PathBuf, usize) {
    let log = env.dir.path().join("data/audit.jsonl");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    write_log(&log, 200, at(400), 0);
    let old = gatehouse_audit::segments(&log).unwrap().len();
    assert!(old >= 2, "{old}");
    // Recent records seal the last old one and fill recent segments of their own.
    write_log(&log, 200, at(10), 200);
    (log, old)
}

/// Opens a host on `log` with `policy` (as every command that connects does): the retention
/// is applied at open.
fn open_host(env: &Env, log: &Path, policy: &Path) {
    let (code, out, err) = env.run(&[
        "--audit",
        log.to_str().unwrap(),
        "--policy",
        policy.to_str().unwrap(),
        "servers",
        "list",
    ]);
    assert_eq!(code, 0, "{out} {err}");
}

#[test]
fn the_policys_retention_removes_only_segments_wholly_past_it_and_verify_says_so() {
    let env = Env::new();
    let (log, old) = a_year_of_log(&env);
    let before = gatehouse_audit::segments(&log).unwrap();
    let recent_segments: Vec<PathBuf> = before[old..].iter().map(|s| s.path.clone()).collect();
    assert!(!recent_segments.is_empty());

    // Keeping forever (0) removes nothing; neither does a window longer than the log.
    for keep in [0, 500] {
        open_host(&env, &log, &policy(&env, keep));
        assert_eq!(
            gatehouse_audit::segments(&log).unwrap().len(),
            before.len(),
            "{keep}"
        );
    }
    let (code, settings) = audit_json(
        &env,
        &log,
        &[
            "--policy",
            policy(&env, 30).to_str().unwrap(),
            "audit",
            "settings",
        ],
    );
    assert_eq!(code, 0, "{settings}");
    assert_eq!(
        settings["audit"]["retention"]["keep_days"], 30,
        "{settings}"
    );
    assert_eq!(
        settings["audit"]["retention"]["set_by"],
        json!(["policy"]),
        "{settings}"
    );

    // 30 days: every segment whose records are all 400 days old goes; the segment with
    // records 10 days old, inside the window, stays, and so does the file being written.
    open_host(&env, &log, &policy(&env, 30));
    let after: Vec<PathBuf> = gatehouse_audit::segments(&log)
        .unwrap()
        .into_iter()
        .map(|s| s.path)
        .collect();
    for segment in &before[..old] {
        assert!(
            !segment.path.exists(),
            "{} was kept",
            segment.path.display()
        );
    }
    for segment in &recent_segments {
        assert!(
            segment.exists(),
            "{} inside the window was removed",
            segment.display()
        );
    }
    assert_eq!(after, recent_segments);
    // The chain still verifies, and says what retention removed (not a break).
    let (code, report) = audit_json(&env, &log, &["audit", "verify"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["ok"], true, "{report}");
    assert!(!report["removed"].is_null(), "{report}");
    let (code, removals) = audit_json(
        &env,
        &log,
        &["audit", "show", "--last", "1", "--type", "audit_retention"],
    );
    assert_eq!(code, 0, "{removals}");
    assert_eq!(
        removals["records"].as_array().unwrap().len(),
        1,
        "{removals}"
    );
    // Every record 10 days old is still there.
    let (_, recent) = audit_json(&env, &log, &["audit", "show", "--type", "alpha"]);
    let kept: Vec<u64> = recent["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["data"]["i"].as_u64().unwrap())
        .filter(|i| *i >= 200)
        .collect();
    assert_eq!(kept.len(), (200..400).filter(|i| i % 4 != 0).count());
}

#[test]
fn a_bundles_longer_retention_beats_a_shorter_policy() {
    let env = Env::new();
    let (log, _) = a_year_of_log(&env);
    let before = gatehouse_audit::segments(&log).unwrap();
    let mut signed = bundles::signed(json!([]));
    signed["specVersion"] = json!(5);
    signed["audit"] = json!({"retainDays": 36500});
    bundles::install(&env.trust_roots(), &signed);

    let short = policy(&env, 30);
    let (code, settings) = audit_json(
        &env,
        &log,
        &["--policy", short.to_str().unwrap(), "audit", "settings"],
    );
    assert_eq!(code, 0, "{settings}");
    assert_eq!(
        settings["audit"]["retention"]["keep_days"], 36500,
        "{settings}"
    );
    assert_eq!(
        settings["audit"]["retention"]["set_by"],
        json!(["test-bundle@1"]),
        "{settings}"
    );
    let (code, text, _) = audit(
        &env,
        &log,
        &["--policy", short.to_str().unwrap(), "audit", "settings"],
    );
    assert_eq!(code, 0);
    assert!(
        text.contains("retention: kept 36500 days (set by test-bundle@1)"),
        "{text}"
    );

    // The host opens under the bundle: nothing the admin asked to keep is removed.
    open_host(&env, &log, &short);
    let after = gatehouse_audit::segments(&log).unwrap();
    assert_eq!(after.len(), before.len());
    assert!(before.iter().all(|s| s.path.exists()));
    let (code, report) = audit_json(&env, &log, &["audit", "verify"]);
    assert_eq!(
        (code, report["removed"].clone()),
        (0, Value::Null),
        "{report}"
    );

    // A version 4 bundle may not say it: refused by name, so the policy's 30 days apply.
    signed["specVersion"] = json!(4);
    signed["version"] = json!(2);
    bundles::install(&env.trust_roots(), &signed);
    let (code, settings) = audit_json(
        &env,
        &log,
        &["--policy", short.to_str().unwrap(), "audit", "settings"],
    );
    assert_eq!(code, 0, "{settings}");
    assert_eq!(
        settings["audit"]["retention"]["keep_days"], 30,
        "{settings}"
    );
}

#[test]
fn audit_settings_show_the_shipped_defaults() {
    let env = Env::new();
    let log = env.dir.path().join("audit.jsonl");
    let (code, settings) = audit_json(&env, &log, &["audit", "settings"]);
    assert_eq!(code, 0, "{settings}");
    assert_eq!(
        settings["audit"],
        json!({
            "mode": "batched", "flush_ms": 50, "flush_records": 128, "set_by": ["policy"],
            "retention": {"keep_days": 180, "set_by": ["policy"], "rotate_mib": 64},
        })
    );
    // Reading the settings never creates the log.
    assert!(!log.exists());
}
