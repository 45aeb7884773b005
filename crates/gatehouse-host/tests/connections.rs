//! The host against real server processes: the misbehaving fixtures (tests/fixtures) next to
//! a healthy one, in one host, the way the app keeps several servers at once.
//!
//! The fixtures are unattested python servers, so the host runs in the warn posture (no
//! bundle, `--posture warn`) and approves the fixtures' tools as the user would; the gate
//! itself is tested in gate.rs.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gatehouse_attest::gate::ToolStatus;
use gatehouse_host::tap::system_clock;
use gatehouse_host::{CallOptions, Connection, Direction, HostEvent, ServerSpec, TrafficTap};
use gatehouse_testkit as kit;

fn fixture(mode: &str) -> ServerSpec {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/misbehaving_stdio.py");
    ServerSpec::adhoc_stdio(&format!("python3 {} {mode}", script.display())).unwrap()
}

/// The test kit's rig in the warn posture (no bundles, approvals in memory), with this file's
/// way of connecting.
struct Host(kit::rig::Rig);

impl std::ops::Deref for Host {
    type Target = kit::rig::Rig;
    fn deref(&self) -> &kit::rig::Rig {
        &self.0
    }
}

impl std::ops::DerefMut for Host {
    fn deref_mut(&mut self) -> &mut kit::rig::Rig {
        &mut self.0
    }
}

impl Host {
    fn new() -> Host {
        Host(kit::rig::Rig::warn())
    }

    /// Connects and approves every tool the server lists (the fixtures list only "t").
    async fn connect(&self, name: &str, mode: &str) -> Connection {
        let connection = self
            .0
            .connect(name, &fixture(mode), &self.options())
            .await
            .unwrap_or_else(|e| panic!("{name} ({mode}): {e}"));
        let approved = connection
            .approve_tools(&[])
            .await
            .unwrap_or_else(|e| panic!("{name} ({mode}): approving its tools: {e}"));
        assert_eq!(
            approved.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(),
            ["t"]
        );
        connection
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.stderr_log(name)).unwrap_or_default()
    }
}

#[tokio::test]
async fn a_broken_server_does_not_disturb_a_healthy_one() {
    let host = Host::new();
    let healthy = host.connect("healthy", "stderr-noise").await;
    for mode in [
        "non-json",
        "oversize",
        "invalid-utf8",
        "not-jsonrpc",
        "exit-mid-call",
    ] {
        let broken = host.connect(mode, mode).await;
        let error = broken
            .call_tool("t", None, &CallOptions::default())
            .await
            .unwrap_err();
        assert_eq!(error.code().as_str(), "transport_failed", "{mode}: {error}");
        // The broken connection stays broken, with the same explanation.
        let again = broken
            .call_tool("t", None, &CallOptions::default())
            .await
            .unwrap_err();
        assert_eq!(again.code().as_str(), "transport_failed", "{mode}: {again}");
        let ok = healthy
            .call_tool("t", None, &CallOptions::default())
            .await
            .unwrap();
        assert_eq!(
            ok.result.content[0].as_text().unwrap().text,
            "ok",
            "after {mode}"
        );
        broken.close().await;
    }
    // The tap kept every server's traffic apart.
    assert!(
        host.tap
            .entries(Some("healthy"))
            .iter()
            .all(|e| e.server == "healthy")
    );
    assert!(!host.tap.entries(Some("exit-mid-call")).is_empty());
    healthy.close().await;
}

#[tokio::test]
async fn stderr_is_logged_and_never_an_error() {
    let host = Host::new();
    let server = host.connect("noisy", "stderr-noise").await;
    let outcome = server
        .call_tool("t", None, &CallOptions::default())
        .await
        .unwrap();
    assert!(!outcome.is_error());
    server.close().await;
    let log = host.log("noisy");
    assert!(log.contains("ERROR: this is just noise"), "{log}");
}

#[tokio::test]
async fn a_timeout_cancels_the_request_on_the_wire() {
    let host = Host::new();
    let server = host.connect("silent", "never-answer").await;
    let options = CallOptions {
        timeout: Some(Duration::from_millis(500)),
        ..CallOptions::default()
    };
    let error = server.call_tool("t", None, &options).await.unwrap_err();
    assert_eq!(error.code().as_str(), "timeout");
    let cancelled =
        host.tap.entries(Some("silent")).into_iter().any(|e| {
            e.direction == Direction::Out && e.message["method"] == "notifications/cancelled"
        });
    assert!(cancelled, "no notifications/cancelled in the traffic");
    server.close().await;
    assert!(
        host.log("silent").contains("got notifications/cancelled"),
        "{}",
        host.log("silent")
    );
}

#[tokio::test]
async fn a_user_abort_cancels_the_request() {
    let host = Host::new();
    let server = host.connect("silent", "never-answer").await;
    let cancel = tokio_util::sync::CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let options = CallOptions {
        cancel: Some(cancel),
        ..CallOptions::default()
    };
    let error = server.call_tool("t", None, &options).await.unwrap_err();
    assert_eq!(error.code().as_str(), "cancelled");
    server.close().await;
    assert!(host.log("silent").contains("got notifications/cancelled"));
}

#[tokio::test]
async fn list_changed_refreshes_the_tool_list() {
    let host = Host::new();
    let mut events = host.events.subscribe();
    let server = host.connect("changing", "list-changed").await;
    assert_eq!(server.tools().await.unwrap().len(), 1);
    // Cached: no second tools/list goes out while nothing changed.
    assert_eq!(server.tools().await.unwrap().len(), 1);
    server
        .call_tool("t", None, &CallOptions::default())
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match tokio::time::timeout(Duration::from_secs(5), events.recv()).await {
            Ok(Ok(HostEvent::ToolsChanged { server })) => {
                assert_eq!(server, "changing");
                break;
            }
            Ok(Ok(_)) if Instant::now() < deadline => continue,
            other => panic!("no ToolsChanged event: {other:?}"),
        }
    }
    let names: Vec<String> = server
        .tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, ["t", "t2"]);
    let lists = host
        .tap
        .entries(Some("changing"))
        .iter()
        .filter(|e| e.direction == Direction::Out && e.message["method"] == "tools/list")
        .count();
    assert_eq!(lists, 2);
    // The new tool is listed, but nobody approved it: not callable.
    let statuses: Vec<(String, ToolStatus)> = server
        .gated_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|g| (g.tool.name.to_string(), g.status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("t".to_string(), ToolStatus::Allowed),
            ("t2".to_string(), ToolStatus::Hidden)
        ]
    );
    server.close().await;
}

#[tokio::test]
async fn shutdown_closes_stdin_then_sigterm_then_sigkill() {
    let host = Host::new();
    let server = host.connect("stubborn", "stubborn").await;
    let started = Instant::now();
    server.close().await;
    let elapsed = started.elapsed();
    let log = host.log("stubborn");
    let pid: i32 = log
        .split("pid ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid in {log}"));
    let stdin_closed = log
        .find("stdin closed")
        .expect("stdin was not closed first");
    let sigterm = log.find("got SIGTERM").expect("no SIGTERM was sent");
    assert!(stdin_closed < sigterm, "{log}");
    // Only SIGKILL ends this process; close() waited for it, so it is gone (and reaped).
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "process {pid} survived close()"
    );
    // Two grace periods (300 ms each) plus slack; not a timing assertion on speed, only that
    // close() did not hang.
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
}

#[tokio::test]
async fn auto_era_falls_back_to_initialize_for_a_legacy_server() {
    let host = Host::new();
    let server = host.connect("legacy", "stderr-noise").await;
    assert_eq!(server.era(), gatehouse_host::Era::V2025_11_25);
    let methods: Vec<String> = host
        .tap
        .entries(Some("legacy"))
        .iter()
        .filter(|e| e.direction == Direction::Out)
        .filter_map(|e| e.message["method"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        &methods[..3],
        ["server/discover", "initialize", "notifications/initialized"]
    );
    server.close().await;
}

// Multi-thread, as in the CLI: handler tasks then really run in parallel with the response path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_progress_event_is_delivered_before_the_result() {
    // rmcp handles each notification in a task of its own; without the host's barrier the last
    // progress events of a burst can land after `call_tool` has returned.
    let host = Host::new();
    let mut events = host.events.subscribe();
    let server = host.connect("burst", "progress-burst").await;
    for round in 0..20 {
        let outcome = server
            .call_tool("t", None, &CallOptions::default())
            .await
            .unwrap();
        assert_eq!(outcome.result.content[0].as_text().unwrap().text, "burst");
        let mut progress = 0;
        while let Ok(event) = events.try_recv() {
            if matches!(event, HostEvent::Progress { .. }) {
                progress += 1;
            }
        }
        assert_eq!(
            progress, 50,
            "round {round}: progress events missing when the result arrived"
        );
    }
    server.close().await;
}

// ---------------------------------------------------------------------------------------------
// Hostile servers are bounded: listings, the traffic ring, stderr logs.

impl Host {
    async fn connect_only(&self, name: &str, mode: &str) -> Connection {
        self.0
            .connect(name, &fixture(mode), &self.options())
            .await
            .unwrap_or_else(|e| panic!("{name} ({mode}): {e}"))
    }
}

#[tokio::test]
async fn a_listing_that_repeats_its_cursor_or_never_ends_is_stopped() {
    let host = Host::new();
    let repeat = host.connect_only("repeat", "cursor-repeat").await;
    let error = repeat.tools().await.unwrap_err();
    assert_eq!(error.code().as_str(), "protocol_error", "{error}");
    assert!(
        error.to_string().contains("repeated the cursor \"again\""),
        "{error}"
    );
    // Nothing half-listed was taken as the list: asking again fails the same way.
    assert!(repeat.tools().await.is_err());
    // Two pages went out: the first, and the one with the cursor; then it stopped.
    let lists = host
        .tap
        .entries(Some("repeat"))
        .into_iter()
        .filter(|e| e.direction == Direction::Out && e.message["method"] == "tools/list")
        .count();
    assert_eq!(lists, 4, "two listings of two pages each");

    let forever = host.connect_only("forever", "cursor-forever").await;
    let error = forever.tools().await.unwrap_err();
    assert!(
        error.to_string().contains(&format!(
            "more than {} pages",
            gatehouse_host::connection::MAX_LIST_PAGES
        )),
        "{error}"
    );
    // The healthy case still lists every page.
    let healthy = host.connect("healthy", "record").await;
    assert_eq!(healthy.tools().await.unwrap().len(), 1);
    for c in [repeat, forever, healthy] {
        c.close().await;
    }
}

#[tokio::test]
async fn huge_messages_do_not_grow_the_traffic_ring_past_its_budget() {
    let mut host = Host::new();
    let budget = 20 * 1024 * 1024;
    host.tap = Arc::new(TrafficTap::new(10_000, system_clock()).with_byte_budget(budget));
    let server = host.connect("huge", "huge-results").await;
    for _ in 0..6 {
        let outcome = server
            .call_tool("t", None, &CallOptions::default())
            .await
            .unwrap();
        // The client gets the whole result; only the ring keeps less.
        let text = outcome.result.content[0].as_text().unwrap().text.len();
        assert_eq!(text, 8 * 1024 * 1024);
        assert!(host.tap.held_bytes() <= budget, "{}", host.tap.held_bytes());
    }
    let entries = host.tap.entries(Some("huge"));
    let last = entries.last().unwrap();
    assert_eq!(last.direction, Direction::In);
    assert!(
        last.message
            .as_str()
            .is_some_and(|t| t.ends_with("bytes not kept]")),
        "the newest result is kept, cut"
    );
    server.close().await;
}

#[tokio::test]
async fn a_server_flooding_stderr_gets_a_capped_rotated_log_and_keeps_working() {
    let host = Host::new();
    let server = host.connect("noisy", "stderr-flood").await;
    let outcome = server
        .call_tool("t", None, &CallOptions::default())
        .await
        .unwrap();
    assert!(!outcome.is_error());
    let dir = host.logs.path();
    let cap = gatehouse_host::stdio::MAX_STDERR_LOG_BYTES;
    let current = std::fs::metadata(dir.join("noisy.stderr.log"))
        .unwrap()
        .len();
    let rotated = std::fs::metadata(dir.join("noisy.stderr.log.1"))
        .unwrap()
        .len();
    assert!(
        current <= cap && rotated <= cap,
        "{current} and {rotated} bytes"
    );
    assert!(
        rotated > cap / 2,
        "the rotated log holds the flood: {rotated}"
    );
    assert!(host.log("noisy").contains("flood done"));
    // No third file.
    assert!(!dir.join("noisy.stderr.log.2").exists());
    server.close().await;
}
