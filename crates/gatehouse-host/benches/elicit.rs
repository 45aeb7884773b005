//! The host's own latency per elicitation (issue target: request received → decision → prompt
//! ready, under 1 ms, excluding the human), against the demo server over stdio.
//!
//! The broker stamps every prompt with `ready_in`: from the elicitation's arrival in the broker
//! (correlation, the policy's assessment, the abuse window, building the prompt and its banner)
//! to the prompt being ready for the UI. The UI here records `ready_in` and answers at once;
//! each benchmark calls a tool that elicits once and reports (through `iter_custom`) the summed
//! `ready_in` of those elicitations, not the wall time of the calls:
//!
//! - `ready/form …`: `book_table`, a form with every field type, accepted;
//! - `ready/url denied`: `open_link` with an https URL on a host the demo bundle does not list
//!   for the demo server: refused before anyone is asked (the prompt is ready for the refusal
//!   card);
//! - `ready/url declined`: `connect_account`, a URL to the demo's own loopback page, declined.
//!
//! For context, `roundtrip/book_table` is the wall time of a whole accepted `book_table` call
//! (tool gate and its audit record, the elicitation and its receipt, both synced to disk).
//!
//! Run: `cargo build --release -p gatehouse-demo-server`, then
//! `cargo bench -p gatehouse-host --bench elicit`. The demo server is `$GATEHOUSE_DEMO_SERVER`,
//! else `gatehouse-demo-server` in the target directory the bench was built into. The audit
//! log goes to a temporary directory (`$TMPDIR`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use gatehouse_host::broker::BrokerOptions;
use gatehouse_host::config::StdioSpec;
use gatehouse_host::consent::{
    ConsentAnswer, ConsentReply, PromptBody, PromptUpdate, UiFuture, WaitChoice, WaitPhase,
};
use gatehouse_host::demo::demo_bundle;
use gatehouse_host::tap::system_clock;
use gatehouse_host::{
    Approvals, Auditor, CallOptions, ConnectOptions, Connection, ConsentUi, ElicitationBroker, Era,
    EraPreference, Gatekeeper, MemoryStore, Prompt, ServerSpec, TrafficTap, Trust, TrustSettings,
    UrlOpener,
};
use gatehouse_policy::{Decision, FieldError, Policy};
use rmcp::model::JsonObject;
use serde_json::json;
use time::OffsetDateTime;
use tokio::runtime::Runtime;

/// An https URL on a host the demo bundle does not allow for the demo server.
const DENIED_URL: &str = "https://accounts.example.com/login?next=%2Fhome";

fn demo_server() -> PathBuf {
    gatehouse_testkit::demo::server()
}

/// Records `ready_in` of every prompt, asked or refused; accepts forms (the schema's defaults
/// plus the required fields without one) and declines URLs, at once.
#[derive(Default)]
struct ReadyUi {
    ready: Mutex<Vec<Duration>>,
}

impl ReadyUi {
    fn take(&self) -> Vec<Duration> {
        std::mem::take(&mut *self.ready.lock().unwrap())
    }
}

impl ConsentUi for ReadyUi {
    fn ask<'a>(
        &'a self,
        prompt: &'a Prompt,
        _problems: &'a [FieldError],
    ) -> UiFuture<'a, ConsentAnswer> {
        self.ready.lock().unwrap().push(prompt.ready_in);
        let reply = match &prompt.body {
            PromptBody::Form { defaults, .. } => {
                let mut content = defaults.clone();
                content.insert("name".into(), json!("Ada Lovelace"));
                content.insert("date".into(), json!("2026-12-24"));
                ConsentReply::Submit(content)
            }
            _ => ConsentReply::Decline,
        };
        Box::pin(async move { ConsentAnswer::plain(reply) })
    }

    fn waiting(&self, _prompt_id: u64, _phase: WaitPhase) -> UiFuture<'_, WaitChoice> {
        Box::pin(async { WaitChoice::Cancel })
    }

    fn update(&self, update: PromptUpdate) {
        if let PromptUpdate::Refused { prompt } = update {
            self.ready.lock().unwrap().push(prompt.ready_in);
        }
    }
}

/// Nothing is ever opened: URLs are declined or refused.
struct NoBrowser;

impl UrlOpener for NoBrowser {
    fn open(&self, url: &str) -> Result<(), String> {
        panic!("the bench never opens a URL, but was asked to open {url}");
    }
}

struct Bench {
    runtime: Runtime,
    ui: Arc<ReadyUi>,
    connections: Vec<(Era, Connection)>,
    _state: tempfile::TempDir,
}

impl Bench {
    fn new() -> Bench {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        let state = tempfile::tempdir().unwrap();
        let now = OffsetDateTime::now_utc();
        let trust_roots = state.path().join("trust-roots");
        std::fs::create_dir(&trust_roots).unwrap();
        let demo = demo_server();
        let trust = Trust::load(
            &TrustSettings {
                system_dir: trust_roots,
                user_dir: None,
                posture_override: None,
                demo_bundle: Some(demo_bundle(&demo, now).expect("demo bundle")),
            },
            now,
        );
        assert!(trust.problems().is_empty(), "{:?}", trust.problems());
        let (auditor, _) =
            Auditor::open(&state.path().join("audit.jsonl"), system_clock()).expect("audit log");
        let gatekeeper = Arc::new(Gatekeeper::new(
            trust,
            auditor,
            Approvals::in_memory(),
            system_clock(),
        ));
        // The shipped policy, except that the abuse limits must not end a session that elicits
        // thousands of times a second.
        let mut policy = Policy::default_policy();
        policy.abuse.window_seconds = 1;
        policy.abuse.max_elicitations = 1_000_000;
        policy.abuse.max_denials = 1_000_000;
        let ui = Arc::new(ReadyUi::default());
        let broker = ElicitationBroker::new(
            Arc::new(policy),
            ui.clone(),
            Arc::new(NoBrowser),
            gatekeeper.clone(),
            BrokerOptions::default(),
        );
        let spec = ServerSpec::Stdio(StdioSpec {
            command: demo.display().to_string(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
        });
        let mut connections = Vec::new();
        for era in [Era::V2025_11_25, Era::V2026_07_28] {
            let options = ConnectOptions {
                era: EraPreference::Only(era),
                broker: Some(broker.clone()),
                ..ConnectOptions::default()
            };
            let connection = runtime
                .block_on(Connection::connect(
                    &format!("bench-{era}"),
                    &spec,
                    Arc::new(MemoryStore::default()),
                    Arc::new(TrafficTap::new(10_000, system_clock())),
                    tokio::sync::broadcast::channel(16).0,
                    &options,
                    gatekeeper.clone(),
                ))
                .expect("connect");
            assert!(
                connection.verdict().is_admitted(),
                "{}",
                connection.verdict().headline()
            );
            connections.push((era, connection));
        }
        Bench {
            runtime,
            ui,
            connections,
            _state: state,
        }
    }

    fn connection(&self, era: Era) -> &Connection {
        &self
            .connections
            .iter()
            .find(|(e, _)| *e == era)
            .expect("connected in every era")
            .1
    }

    /// Calls `tool` once; checks it elicited once, with `decision` and `action`.
    async fn call(
        &self,
        era: Era,
        tool: &str,
        arguments: Option<JsonObject>,
        decision: Decision,
        action: &str,
    ) {
        let outcome = self
            .connection(era)
            .call_tool(tool, arguments, &CallOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert_eq!(outcome.elicitations.len(), 1, "{tool}");
        let record = &outcome.elicitations[0];
        assert_eq!(record.decision, decision, "{tool}: {record:?}");
        assert_eq!(record.action.as_str(), action, "{tool}: {record:?}");
    }

    /// The summed `ready_in` of `iters` calls.
    fn ready(
        &self,
        iters: u64,
        era: Era,
        tool: &str,
        arguments: &Option<JsonObject>,
        decision: Decision,
        action: &str,
    ) -> Duration {
        self.ui.take();
        self.runtime.block_on(async {
            for _ in 0..iters {
                self.call(era, tool, arguments.clone(), decision, action)
                    .await;
            }
        });
        let ready = self.ui.take();
        assert_eq!(ready.len() as u64, iters, "one prompt per call");
        ready.iter().sum()
    }
}

fn bench(c: &mut Criterion) {
    let bench = Bench::new();
    let open_link = json!({"url": DENIED_URL}).as_object().cloned();
    let none: Option<JsonObject> = None;
    let allow = Decision::AllowElicitationWithReceipt;

    let mut ready = c.benchmark_group("ready");
    for era in [Era::V2025_11_25, Era::V2026_07_28] {
        ready.bench_function(format!("form book_table {era}"), |b| {
            b.iter_custom(|iters| bench.ready(iters, era, "book_table", &none, allow, "accept"))
        });
    }
    ready.bench_function("url denied open_link 2025-11-25", |b| {
        b.iter_custom(|iters| {
            bench.ready(
                iters,
                Era::V2025_11_25,
                "open_link",
                &open_link,
                Decision::DenyUntrustedElicitationUrl,
                "decline",
            )
        })
    });
    ready.bench_function("url declined connect_account 2025-11-25", |b| {
        b.iter_custom(|iters| {
            bench.ready(
                iters,
                Era::V2025_11_25,
                "connect_account",
                &none,
                allow,
                "decline",
            )
        })
    });
    ready.finish();

    let mut roundtrip = c.benchmark_group("roundtrip");
    for era in [Era::V2025_11_25, Era::V2026_07_28] {
        roundtrip.bench_function(format!("book_table {era}"), |b| {
            b.iter_custom(|iters| {
                bench.ui.take();
                let started = Instant::now();
                bench.runtime.block_on(async {
                    for _ in 0..iters {
                        bench.call(era, "book_table", None, allow, "accept").await;
                    }
                });
                started.elapsed()
            })
        });
    }
    roundtrip.finish();

    let Bench {
        runtime,
        connections,
        ..
    } = bench;
    runtime.block_on(async {
        for (_, connection) in connections {
            connection.close().await;
        }
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
