//! The AI clients view ([`Host::clients`]) and the Audit view's listing ([`Host::audit`]) on a
//! real host with the demo server: the clients' recent calls follow the calls as they are
//! made, include calls another process wrote into the same log, and are there again after a
//! restart (read from the log's newest records, not from the whole log).

use std::sync::Arc;

use gatehouse_host::audit_event::gate::{Decided, ToolDecision};
use gatehouse_host::host::Host;
use gatehouse_host::{Auditor, CallOptions, Caller, DownstreamTransport, ScriptedConsent, Status};
use gatehouse_testkit as kit;
use serde_json::{Map, Value, json};

fn consent() -> Arc<ScriptedConsent> {
    Arc::new(ScriptedConsent::new(Vec::new()))
}

fn args(value: Value) -> Option<Map<String, Value>> {
    match value {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

async fn call(host: &Host, caller: &Caller, tool: &str, arguments: Value) -> bool {
    let options = CallOptions {
        caller: Some(caller.clone()),
        ..CallOptions::default()
    };
    match host.call("demo", tool, args(arguments), &options).await {
        Ok(outcome) => !outcome.is_error(),
        Err(error) => {
            eprintln!("{tool}: {error:?}");
            false
        }
    }
}

/// (client, its calls' tools newest first) for each row.
fn summary(host: &Host) -> Vec<(String, Vec<String>)> {
    host.clients()
        .expect("the clients view reads")
        .into_iter()
        .map(|row| {
            (
                row.client,
                row.recent_calls.into_iter().map(|c| c.tool).collect(),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_clients_view_follows_calls_and_is_seeded_again_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let host = kit::host::open(kit::host::demo_options(dir.path()), consent());
    // As a gateway front end does: calls with a caller use the live connections.
    host.connect_all().await;
    let claude = Caller::new(
        "claude_code",
        DownstreamTransport::Stdio,
        Some("claude-code 2.1"),
    );
    let cursor = Caller::new("cursor", DownstreamTransport::Http, None);
    // Read once before any call (the view is seeded from the empty log), then calls are
    // counted as they are recorded.
    assert!(summary(&host).is_empty());
    for n in 0..12 {
        let echoed = call(&host, &claude, "echo", json!({"message": format!("m{n}")})).await;
        assert!(echoed, "echo {n}");
    }
    assert!(call(&host, &cursor, "add", json!({"a": 1, "b": 2})).await);
    // A tool the demo does not offer: denied, and shown as such.
    assert!(!call(&host, &claude, "no_such_tool", json!({})).await);
    let rows = host.clients().unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r.client.as_str()).collect();
    assert_eq!(ids, ["claude_code", "cursor"]);
    let claude_row = &rows[0];
    assert_eq!(claude_row.recent_calls.len(), 10);
    assert_eq!(claude_row.recent_calls[0].tool, "no_such_tool");
    assert_eq!(claude_row.recent_calls[0].decision, "denied");
    assert!(claude_row.recent_calls[0].code.is_some());
    assert_eq!(claude_row.recent_calls[1].tool, "echo");
    assert_eq!(claude_row.recent_calls[1].decision, "allowed");
    assert_eq!(claude_row.recent_calls[1].server, "demo");
    assert_eq!(claude_row.recent_calls[1].transport, "stdio");
    assert_eq!(claude_row.claimed.as_deref(), Some("claude-code 2.1"));
    assert_eq!(rows[1].recent_calls[0].tool, "add");
    assert_eq!(rows[1].recent_calls[0].transport, "http");
    // The calls in memory are the calls in the log.
    let logged = kit::host::records_of(dir.path(), "tool_call");
    assert_eq!(logged.len(), 14);
    assert_eq!(rows[0].recent_calls[0].time, logged[13]["time"]);

    // Another process (a headless `serve`) records a call in the same log: the view reads it.
    let (other, _) = Auditor::open(
        &kit::host::audit_log(dir.path()),
        gatehouse_host::system_clock(),
    )
    .unwrap();
    let from_elsewhere = Decided {
        decision: ToolDecision::Allowed {
            tool: "echo".into(),
            scope: "bundle:demo@1".into(),
            pinned: false,
        },
        admission: Status::Admitted,
        name: "demo".into(),
        caller: Some(Caller::new("vscode", DownstreamTransport::Stdio, None)),
    };
    other.write(Some("demo"), &from_elsewhere).unwrap();
    drop(other);
    let before_restart = summary(&host);
    assert_eq!(
        before_restart[0],
        ("vscode".to_string(), vec!["echo".to_string()])
    );
    assert_eq!(before_restart.len(), 3);
    // And the host's own next call is counted after it.
    assert!(call(&host, &cursor, "echo", json!({"message": "again"})).await);
    let rows = summary(&host);
    assert_eq!(rows[0].0, "cursor");
    assert_eq!(rows[0].1, ["echo", "add"]);
    let before_restart = rows;
    host.shutdown().await;
    drop(host);

    // A restart: the same rows, read from the log's newest records.
    let host = kit::host::open(kit::host::demo_options(dir.path()), consent());
    host.connect_all().await;
    assert_eq!(summary(&host), before_restart);
    // The Audit view lists the newest records, oldest first, filtered as asked.
    let calls = host.audit(None, Some("tool_call".into())).unwrap();
    assert_eq!(calls.len(), 16);
    assert!(
        calls
            .windows(2)
            .all(|w| w[0]["seq"].as_u64() < w[1]["seq"].as_u64())
    );
    let admissions = host.audit(Some("nowhere".into()), None).unwrap();
    assert!(admissions.is_empty());
    host.shutdown().await;
}

#[tokio::test]
async fn the_audit_view_lists_only_the_newest_page() {
    let dir = tempfile::tempdir().unwrap();
    let log = kit::host::audit_log(dir.path());
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let (auditor, _) = Auditor::open_with(
        &log,
        gatehouse_host::system_clock(),
        gatehouse_audit::Durability::batched(),
    )
    .unwrap();
    let page = Host::AUDIT_PAGE;
    let call = |n: usize| Decided {
        decision: ToolDecision::Allowed {
            tool: format!("t{n}"),
            scope: "user".into(),
            pinned: false,
        },
        admission: Status::Admitted,
        name: "demo".into(),
        caller: None,
    };
    for n in 0..page + 25 {
        auditor.write(Some("demo"), &call(n)).unwrap();
    }
    drop(auditor);
    let host = kit::host::open(kit::host::options(dir.path()), consent());
    let listed = host.audit(None, Some("tool_call".into())).unwrap();
    assert_eq!(listed.len(), page);
    assert_eq!(listed[0]["data"]["tool"], "t25");
    assert_eq!(listed[page - 1]["data"]["tool"], format!("t{}", page + 24));
    host.shutdown().await;
}
