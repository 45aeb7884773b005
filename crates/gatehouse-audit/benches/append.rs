//! One `append` of a typical tool-call record, in each durability mode, on a log in the
//! system's temporary directory (the same disk as the real log on the standard machine), plus
//! the batched mode with the record's data as the host builds it. `cargo bench -p
//! gatehouse-audit --bench append`.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use gatehouse_audit::{AuditLog, Durability};
use serde_json::json;
use time::macros::datetime;

fn record() -> serde_json::Value {
    json!({
        "tool": "echo", "decision": "allowed", "reason": "allowed", "scope": "bundle",
        "pin": format!("sha256:{}", "ab".repeat(32)), "admission": "admitted", "name": "demo",
        "caller": {"client": "claude-code", "name": "Claude Code"}
    })
}

fn append(c: &mut Criterion) {
    let mut group = c.benchmark_group("append");
    for (name, durability) in [
        ("batched_default", Durability::batched()),
        ("sync", Durability::Sync),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = AuditLog::open_with(
            dir.path().join("audit.jsonl"),
            datetime!(2026-11-26 12:00 UTC),
            durability,
        )
        .unwrap();
        let now = datetime!(2026-11-26 12:00:01 UTC);
        if durability == Durability::Sync {
            group
                .measurement_time(Duration::from_secs(5))
                .sample_size(20);
        }
        group.bench_function(name, |b| {
            b.iter(|| {
                log.append("tool_call", Some("demo"), record(), now)
                    .unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, append);
criterion_main!(benches);
