//! What confinement costs (issue 28), in one run: the demo server admitted by a bundle entry
//! that binds it, started and called **confined** (bubblewrap, the sandbox init, seccomp and
//! rlimits; its own network namespace, nothing granted) and **unconfined** (the same entry and
//! host with the policy's confinement `off`).
//!
//! Two measures, each interleaved so drift on a noisy machine hits both alike:
//! - start-up: `Connection::connect` (admission, the sandbox plan, spawn, the MCP handshake)
//!   to an initialized session, then closed; `BENCH_STARTS` times each (default 30);
//! - the `echo` round trip on one connection: `BENCH_BATCHES` batches (default 5) of
//!   `BENCH_ITERATIONS` calls (default 2000) each, after a warm-up.
//!
//! Percentiles are nearest-rank over the pooled samples. The probe that checks the machine can
//! confine runs once per process and is outside the measured loops (a first connect warms it).
//!
//! Run: scripts/bench-confine.sh (release demo server and sandbox init, then
//! `cargo bench -p gatehouse-host --bench confine`). `cargo test --benches` runs one tiny round.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gatehouse_audit::Durability;
use gatehouse_confine::ConfinementMode;
use gatehouse_host::config::StdioSpec;
use gatehouse_host::confine::ConfinementSettings;
use gatehouse_host::tap::system_clock;
use gatehouse_host::{
    Approvals, Auditor, CallOptions, ConfinementState, ConnectOptions, Connection, Era,
    EraPreference, Gatekeeper, MemoryStore, SandboxTools, ServerSpec, TrafficTap, Trust,
    TrustSettings,
};
use gatehouse_testkit::bundles;
use rmcp::model::JsonObject;
use serde_json::json;
use sha2::Digest as _;
use time::OffsetDateTime;

const WARMUP: usize = 200;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The release build when the bench script made it, else the test kit's (debug) one.
fn built(name: &str, env: &str) -> PathBuf {
    if let Some(path) = std::env::var_os(env) {
        return PathBuf::from(path);
    }
    let release = repo().join("target/release").join(name);
    if release.exists() {
        return release;
    }
    let debug = repo().join("target/debug").join(name);
    assert!(
        debug.exists(),
        "{name} is missing: run scripts/bench-confine.sh (it builds it)"
    );
    debug
}

fn arguments() -> JsonObject {
    json!({"message": "hello"}).as_object().unwrap().clone()
}

/// A host's security core with one bundle binding the demo server (no grants: confined means
/// no network, no home, no processes) and the policy's confinement `mode`.
fn gatekeeper(state: &Path, demo: &Path, init: &Path, mode: ConfinementMode) -> Arc<Gatekeeper> {
    let dir = state.join(mode.as_str());
    let trust_roots = dir.join("trust-roots");
    let sha = hex::encode(sha2::Sha256::digest(std::fs::read(demo).unwrap()));
    let entry = bundles::confined_stdio_entry(
        "demo-bench",
        &demo.display().to_string(),
        &[],
        &sha,
        &["echo"],
        json!({}),
    );
    bundles::install(
        &trust_roots,
        &bundles::signed_with_confinement(json!([entry]), None),
    );
    let now = OffsetDateTime::now_utc();
    let trust = Trust::load(
        &TrustSettings {
            system_dir: trust_roots,
            user_dir: None,
            posture_override: None,
            demo_bundle: None,
        },
        now,
    );
    assert!(trust.problems().is_empty(), "{:?}", trust.problems());
    let (auditor, _) = Auditor::open_with(
        &dir.join("audit.jsonl"),
        system_clock(),
        Durability::batched(),
    )
    .expect("audit log");
    let gatekeeper = Arc::new(Gatekeeper::new(
        trust,
        auditor,
        Approvals::in_memory(),
        system_clock(),
    ));
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    gatekeeper.set_confinement(ConfinementSettings {
        policy_mode: mode,
        policy_is_default: false,
        tools: SandboxTools {
            bwrap: None,
            init: Some(init.to_path_buf()),
        },
        home,
        data: dir.join("data"),
    });
    gatekeeper
}

async fn connect(demo: &Path, gatekeeper: Arc<Gatekeeper>, confined: bool) -> Connection {
    let spec = ServerSpec::Stdio(StdioSpec {
        command: demo.display().to_string(),
        args: Vec::new(),
        env: Vec::new(),
        cwd: None,
    });
    let options = ConnectOptions {
        era: EraPreference::Only(Era::V2025_11_25),
        ..ConnectOptions::default()
    };
    let connection = Connection::connect(
        "bench",
        &spec,
        Arc::new(MemoryStore::default()),
        Arc::new(TrafficTap::new(10_000, system_clock())),
        tokio::sync::broadcast::channel(16).0,
        &options,
        gatekeeper,
    )
    .await
    .expect("connect");
    let state = connection
        .verdict()
        .confinement
        .as_ref()
        .map(|view| view.state);
    let want = if confined {
        ConfinementState::Confined
    } else {
        ConfinementState::Unconfined
    };
    assert_eq!(state, Some(want), "{}", connection.verdict().headline());
    connection
}

async fn start_once(demo: &Path, gatekeeper: Arc<Gatekeeper>, confined: bool) -> Duration {
    let started = Instant::now();
    let connection = connect(demo, gatekeeper, confined).await;
    let elapsed = started.elapsed();
    connection.close().await;
    elapsed
}

async fn echo_batch(
    demo: &Path,
    gatekeeper: Arc<Gatekeeper>,
    confined: bool,
    iterations: usize,
    warmup: usize,
) -> Vec<Duration> {
    let connection = connect(demo, gatekeeper, confined).await;
    let options = CallOptions::default();
    for _ in 0..warmup {
        connection
            .call_tool("echo", Some(arguments()), &options)
            .await
            .unwrap();
    }
    let mut latencies = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let t = Instant::now();
        let outcome = connection
            .call_tool("echo", Some(arguments()), &options)
            .await
            .unwrap();
        latencies.push(t.elapsed());
        assert!(!outcome.is_error());
    }
    connection.close().await;
    latencies
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank - 1]
}

fn summary(mut samples: Vec<Duration>) -> (Duration, Duration, Duration) {
    samples.sort();
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    (percentile(&samples, 50.0), percentile(&samples, 90.0), mean)
}

fn main() {
    let quick = !std::env::args().any(|a| a == "--bench");
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (starts, batches, iterations, warmup) = if quick {
        (2, 1, 20, 5)
    } else {
        (
            env("BENCH_STARTS", 30),
            env("BENCH_BATCHES", 5),
            env("BENCH_ITERATIONS", 2000),
            WARMUP,
        )
    };
    let demo = built("gatehouse-demo-server", "GATEHOUSE_DEMO_BIN");
    let init = built("gatehouse-sandbox-init", "GATEHOUSE_SANDBOX_INIT");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let state = tempfile::tempdir().expect("temp dir");
    let confined = gatekeeper(state.path(), &demo, &init, ConfinementMode::Preferred);
    let unconfined = gatekeeper(state.path(), &demo, &init, ConfinementMode::Off);
    // Warm both (the machine's probe runs once per process; page cache).
    runtime.block_on(start_once(&demo, confined.clone(), true));
    runtime.block_on(start_once(&demo, unconfined.clone(), false));

    let (mut start_c, mut start_u) = (Vec::new(), Vec::new());
    for i in 0..starts {
        // Alternate which goes first.
        let order = if i % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for confine in order {
            let (gk, out) = if confine {
                (confined.clone(), &mut start_c)
            } else {
                (unconfined.clone(), &mut start_u)
            };
            out.push(runtime.block_on(start_once(&demo, gk, confine)));
        }
    }
    let (mut echo_c, mut echo_u) = (Vec::new(), Vec::new());
    for batch in 0..batches {
        let order = if batch % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for confine in order {
            let (gk, out) = if confine {
                (confined.clone(), &mut echo_c)
            } else {
                (unconfined.clone(), &mut echo_u)
            };
            out.extend(runtime.block_on(echo_batch(&demo, gk, confine, iterations, warmup)));
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let (sc50, sc90, scm) = summary(start_c);
    let (su50, su90, sum) = summary(start_u);
    let (ec50, ec90, ecm) = summary(echo_c);
    let (eu50, eu90, eum) = summary(echo_u);
    println!("Start-up, connect → initialized ({starts} each, interleaved):\n");
    println!("| demo server | p50 | p90 | mean |");
    println!("|---|---:|---:|---:|");
    println!(
        "| unconfined | {:.1} ms | {:.1} ms | {:.1} ms |",
        ms(su50),
        ms(su90),
        ms(sum)
    );
    println!(
        "| confined | {:.1} ms | {:.1} ms | {:.1} ms |",
        ms(sc50),
        ms(sc90),
        ms(scm)
    );
    println!(
        "| added by confinement | {:+.1} ms | {:+.1} ms | {:+.1} ms |\n",
        ms(sc50) - ms(su50),
        ms(sc90) - ms(su90),
        ms(scm) - ms(sum)
    );
    println!("echo round trip ({batches} batches × {iterations}, interleaved):\n");
    println!("| demo server | p50 | p90 | mean |");
    println!("|---|---:|---:|---:|");
    println!(
        "| unconfined | {:.1} µs | {:.1} µs | {:.1} µs |",
        us(eu50),
        us(eu90),
        us(eum)
    );
    println!(
        "| confined | {:.1} µs | {:.1} µs | {:.1} µs |",
        us(ec50),
        us(ec90),
        us(ecm)
    );
}
