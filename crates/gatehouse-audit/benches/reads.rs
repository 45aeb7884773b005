//! Reads that cost by what they show, at 10,000 and 1,000,000 records of about 420 bytes
//! (the host's tool-call record), rotating at the default 64 MiB: `tail(10)` (the AI clients
//! view, `audit show --last 10`), `tail(10)` with a filter nothing matches (stopped by the
//! scan cap), `stream` of every record (`audit show`, `export`), and `read` at 10,000 only
//! (it holds every record; at 1,000,000 that is gigabytes, which is why nothing shown to a
//! person uses it). Each log is generated once in the system's temporary directory and removed
//! after. `cargo bench -p gatehouse-audit --bench reads`.

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use gatehouse_audit::{AuditLog, Durability, Filter, Rotation, read, segments, stream, tail};
use serde_json::json;
use time::macros::datetime;

/// The host's tool-call record, padded to about 420 bytes a line.
fn record(i: u64) -> serde_json::Value {
    json!({
        "tool": "echo", "decision": "allowed", "reason": "allowed", "scope": "bundle",
        "pin": format!("sha256:{}", "ab".repeat(32)), "admission": "admitted", "name": "demo",
        "caller": {"client": "claude-code", "name": "Claude Code"}, "call": i,
        "arguments_sha256": "cd".repeat(32),
    })
}

fn generate(records: u64) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let started = Instant::now();
    let (mut log, _) = AuditLog::open_rotating(
        &path,
        datetime!(2026-11-26 12:00 UTC),
        Durability::Batched {
            max_delay: Duration::from_secs(1),
            max_records: 10_000,
        },
        Some(Rotation::default()),
    )
    .unwrap();
    let now = datetime!(2026-11-26 12:00:01 UTC);
    for i in 0..records {
        let server = if i % 2 == 0 { "demo" } else { "other" };
        log.append("tool_call", Some(server), record(i), now)
            .unwrap();
    }
    log.flush().unwrap();
    drop(log);
    let bytes: u64 = segments(&path)
        .unwrap()
        .iter()
        .map(|s| s.bytes)
        .sum::<u64>()
        + std::fs::metadata(&path).unwrap().len();
    eprintln!(
        "generated {records} records, {} MB in {} segment(s) + the active file, in {:.1} s",
        bytes / 1_000_000,
        segments(&path).unwrap().len(),
        started.elapsed().as_secs_f64()
    );
    (dir, path)
}

fn reads(c: &mut Criterion) {
    for (label, records) in [("10k", 10_000u64), ("1m", 1_000_000)] {
        let (dir, path) = generate(records);
        let mut group = c.benchmark_group(format!("reads_{label}"));
        group.bench_function("tail_10", |b| {
            b.iter(|| tail(&path, 10, &Filter::all()).unwrap())
        });
        let demo = Filter {
            server: Some("demo".into()),
            event: None,
        };
        group.bench_function("tail_10_server", |b| {
            b.iter(|| tail(&path, 10, &demo).unwrap())
        });
        let nothing = Filter {
            server: Some("nobody".into()),
            event: None,
        };
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(10));
        group.bench_function("tail_10_no_match_capped", |b| {
            b.iter(|| tail(&path, 10, &nothing).unwrap())
        });
        group.bench_function("stream_all", |b| {
            b.iter(|| {
                stream(&path, &Filter::all())
                    .unwrap()
                    .map(|r| r.unwrap().line.len())
                    .sum::<usize>()
            })
        });
        if records <= 10_000 {
            group.bench_function("read_all", |b| b.iter(|| read(&path).unwrap().len()));
        }
        group.finish();
        // The 1,000,000-record log is about 420 MB: removed before the next is made.
        drop(path);
        dir.close().unwrap();
    }
}

criterion_group!(benches, reads);
criterion_main!(benches);
