//! What the audit log's readers cost at a size: scripts/bench-audit-views.sh runs it.
//!
//! - `audit_views generate DATA_DIR RECORDS`: writes `DATA_DIR/audit.jsonl` as a host would
//!   after RECORDS gateway tool calls from 8 AI clients (batched durability, rotating into
//!   64 MiB segments), timed.
//! - `audit_views views DATA_DIR`: opens a host on DATA_DIR (no servers) and times the AI
//!   clients view (`Host::clients`) cold (seeded from the log's newest records) and warm, and
//!   the Audit view's listing (`Host::audit`, the newest page). Run it under `/usr/bin/time -v`
//!   for the process's peak memory.
//!
//! Prints one JSON object per run.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use gatehouse_audit::{AuditLog, Durability, Rotation};
use gatehouse_host::audit_event::gate::{Decided, ToolDecision};
use gatehouse_host::host::{Host, HostOptions, HostPaths};
use gatehouse_host::{Caller, DownstreamTransport, MemoryStore, ScriptedConsent, Status};
use serde_json::json;
use time::OffsetDateTime;

const CLIENTS: [&str; 8] = [
    "claude_code",
    "cursor",
    "vscode",
    "windsurf",
    "zed",
    "codex",
    "goose",
    "http_bot",
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["generate", dir, records] => generate(
            Path::new(dir),
            records.parse().expect("RECORDS is a number"),
        ),
        ["views", dir] => views(Path::new(dir)),
        _ => {
            eprintln!("usage: audit_views generate DATA_DIR RECORDS | audit_views views DATA_DIR");
            std::process::exit(2);
        }
    }
}

fn generate(dir: &Path, records: u64) {
    std::fs::create_dir_all(dir).expect("the data directory can be made");
    let path = dir.join("audit.jsonl");
    let start = OffsetDateTime::now_utc() - time::Duration::hours(1);
    let (mut log, _) = AuditLog::open_rotating(
        &path,
        start,
        Durability::batched(),
        Some(Rotation::default()),
    )
    .expect("the log opens");
    let began = Instant::now();
    for n in 0..records {
        let client = CLIENTS[(n % CLIENTS.len() as u64) as usize];
        let transport = if client == "http_bot" {
            DownstreamTransport::Http
        } else {
            DownstreamTransport::Stdio
        };
        let call = Decided {
            decision: ToolDecision::Allowed {
                tool: if n % 5 == 0 { "add" } else { "echo" }.into(),
                scope: "bundle:DEMO-ONLY-gatehouse-demo@1".into(),
                pinned: true,
            },
            admission: Status::Admitted,
            name: "demo".into(),
            caller: Some(Caller::new(
                client,
                transport,
                Some(&format!("{client} 1.{}", n % 7)),
            )),
        };
        let data = serde_json::to_value(&call).expect("a call serializes");
        let now = start + time::Duration::milliseconds(n as i64);
        log.append(
            "tool_call",
            Some("demo [urn:gatehouse:demo-server]"),
            data,
            now,
        )
        .expect("the record is written");
    }
    drop(log);
    let segments = gatehouse_audit::segments(&path).expect("segments listed");
    let bytes: u64 = segments.iter().map(|s| s.bytes).sum::<u64>()
        + std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!(
        "{}",
        json!({
            "generated": records,
            "seconds": began.elapsed().as_secs_f64(),
            "segments": segments.len(),
            "bytes": bytes,
            "bytes_per_record": bytes as f64 / records.max(1) as f64,
        })
    );
}

fn views(dir: &Path) {
    let root = dir.parent().unwrap_or(Path::new(".")).to_path_buf();
    let paths = HostPaths {
        config: root.join("config/servers.json"),
        data: dir.to_path_buf(),
        logs: root.join("logs"),
        user_trust_roots: None,
        system_trust_roots: root.join("no-system-trust-roots"),
    };
    let options = HostOptions::new(paths, gatehouse_host::system_clock());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let _guard = runtime.enter();
    let began = Instant::now();
    let host = Host::open(
        options,
        Arc::new(MemoryStore::default()),
        Arc::new(ScriptedConsent::new(Vec::new())),
        Arc::new(|_| {}),
    )
    .expect("the host opens");
    let opened = began.elapsed();
    let timed = |what: &dyn Fn() -> usize| {
        let began = Instant::now();
        let n = what();
        (began.elapsed().as_secs_f64() * 1000.0, n)
    };
    let (cold_ms, rows) = timed(&|| host.clients().expect("clients").len());
    let warm: Vec<f64> = (0..20)
        .map(|_| timed(&|| host.clients().expect("clients").len()).0)
        .collect();
    let (audit_ms, listed) = timed(&|| host.audit(None, None).expect("audit").len());
    let (audit_filtered_ms, filtered) = timed(&|| {
        host.audit(Some("nowhere".into()), None)
            .expect("audit")
            .len()
    });
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "{}",
        json!({
            "log": PathBuf::from(dir).join("audit.jsonl"),
            "host_open_ms": opened.as_secs_f64() * 1000.0,
            "clients_cold_ms": cold_ms,
            "clients_warm_median_ms": median(warm),
            "client_rows": rows,
            "audit_page_ms": audit_ms,
            "audit_page_records": listed,
            "audit_rare_filter_ms": audit_filtered_ms,
            "audit_rare_filter_records": filtered,
        })
    );
    runtime.block_on(host.shutdown());
}
