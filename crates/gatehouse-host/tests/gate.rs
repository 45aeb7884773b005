//! The gate against real server processes (docs/atsa.md §4): a denied call sends nothing, a
//! changed pinned tool is blocked until re-approved, an unattested server is never started
//! under deny-by-default, a decision the audit log cannot record is a refusal (and a pin
//! mismatch found meanwhile is recorded once the log is back), and users cannot approve tools
//! under deny-by-default.
//!
//! What reached the server is proven twice: by the bytes the host wrote to its stdin, and by the
//! fixture itself, which logs every message it receives (misbehaving_stdio.py, modes `record`
//! and `pin-change`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use gatehouse_attest::bundle::Posture;
use gatehouse_attest::gate::{GateReason, ToolStatus};
use gatehouse_audit::Record;
use gatehouse_host::config::StdioSpec;
use gatehouse_host::gatekeeper::events;
use gatehouse_host::{CallOptions, Connection, HostError, ServerSpec};
use gatehouse_testkit as kit;
use serde_json::Value;
use time::OffsetDateTime;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/misbehaving_stdio.py")
}

fn fixture(mode: &str) -> ServerSpec {
    ServerSpec::Stdio(StdioSpec {
        command: "python3".into(),
        args: vec![script().display().to_string(), mode.into()],
        env: Vec::new(),
        cwd: None,
    })
}

/// The fixture, creating `marker` when (if ever) its process starts.
fn fixture_with_marker(mode: &str, marker: &Path) -> ServerSpec {
    let ServerSpec::Stdio(mut spec) = fixture(mode) else {
        unreachable!()
    };
    spec.env.push((
        "GATEHOUSE_FIXTURE_MARKER".into(),
        marker.display().to_string(),
    ));
    ServerSpec::Stdio(spec)
}

/// Every name a look-alike of the approved "t", each a different tool name byte for byte.
const LOOK_ALIKES: [&str; 12] = [
    "T",
    "t ",
    " t",
    "t\u{200b}",
    "\u{200b}t",
    "\u{202e}t",
    "t\0",
    "../t",
    "t;rm -rf /",
    "\u{442}",  // Cyrillic te
    "\u{ff54}", // fullwidth t
    "",
];

/// The test kit's rig, with this file's way of connecting.
struct Host(kit::rig::Rig);

impl std::ops::Deref for Host {
    type Target = kit::rig::Rig;
    fn deref(&self) -> &kit::rig::Rig {
        &self.0
    }
}

impl Host {
    /// No bundle other than `demo_bundle`, approvals in memory, the audit log in a temp dir.
    fn new(posture: Option<Posture>, demo_bundle: Option<Vec<u8>>) -> Host {
        Host(kit::rig::Rig::new(posture, demo_bundle))
    }

    fn warn() -> Host {
        Host(kit::rig::Rig::warn())
    }

    async fn connect(&self, name: &str, spec: &ServerSpec) -> Result<Connection, HostError> {
        self.0.connect(name, spec, &self.options()).await
    }

    /// The server's whole stderr log, once the server has closed (call after `close()`): the
    /// fixture's last line is "stdin closed", written after every message it received was
    /// logged; the host copies stderr to the file in a task of its own, so wait (bounded) for
    /// that line to arrive.
    async fn final_log(&self, name: &str) -> String {
        for _ in 0..400 {
            let log = std::fs::read_to_string(self.stderr_log(name)).unwrap_or_default();
            if log.contains("stdin closed") {
                return log;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!(
            "the server {name} never logged \"stdin closed\": {:?}",
            std::fs::read_to_string(self.stderr_log(name))
        );
    }
}

/// The tool names of the tools/call requests the fixture received, as it logged them (JSON
/// strings).
fn calls_received(log: &str) -> Vec<&str> {
    log.lines()
        .filter_map(|line| line.strip_prefix("received tools/call "))
        .collect()
}

fn text(outcome: &gatehouse_host::ToolOutcome) -> &str {
    &outcome.result.content[0].as_text().unwrap().text
}

fn str_field<'a>(record: &'a Record, field: &str) -> &'a str {
    record.data[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} in {record:?}"))
}

fn assert_denied(error: &HostError, tool: &str, reason: &str) {
    match error {
        HostError::ToolDenied {
            tool: denied,
            reason: why,
            ..
        } => {
            assert_eq!(denied, tool, "{error}");
            assert_eq!(why.as_str(), reason, "{error}");
        }
        other => panic!("{tool:?}: expected ToolDenied ({reason}), got {other:?}"),
    }
}

#[tokio::test]
async fn a_denied_call_sends_nothing() {
    let host = Host::warn();
    let server = host.connect("record", &fixture("record")).await.unwrap();
    server.approve_tools(&["t".into()]).await.unwrap();
    let call = CallOptions::default();
    assert_eq!(
        text(&server.call_tool("t", None, &call).await.unwrap()),
        "ok"
    );
    let sent = server.bytes_sent();
    assert!(sent > 0);

    for name in LOOK_ALIKES {
        let error = server.call_tool(name, None, &call).await.unwrap_err();
        assert_denied(&error, name, "tool_not_admitted");
        // The denial was on disk before the error came back.
        let last = host.records().pop().unwrap();
        assert_eq!(last.event, events::TOOL_CALL);
        assert_eq!(last.data["tool"], Value::from(name), "{last:?}");
        assert_eq!(str_field(&last, "decision"), "denied");
        assert_eq!(str_field(&last, "reason"), "tool_not_admitted");
        assert_eq!(last.data["code"], Value::from(9));
    }
    assert_eq!(
        server.bytes_sent(),
        sent,
        "a denied call wrote to the server"
    );
    server.close().await;

    // The server saw exactly the one allowed call.
    let log = host.final_log("record").await;
    assert_eq!(calls_received(&log), ["\"t\""], "{log}");

    let calls = host.records_of(events::TOOL_CALL);
    let allowed: Vec<&Record> = calls
        .iter()
        .filter(|r| str_field(r, "decision") == "allowed")
        .collect();
    assert_eq!(allowed.len(), 1, "{calls:?}");
    assert_eq!(str_field(allowed[0], "tool"), "t");
    assert_eq!(str_field(allowed[0], "scope"), "user");
    assert_eq!(allowed[0].data["pinned"], Value::Bool(true));
    let denied: Vec<&str> = calls
        .iter()
        .filter(|r| str_field(r, "decision") == "denied")
        .inspect(|r| assert_eq!(str_field(r, "reason"), "tool_not_admitted"))
        .map(|r| str_field(r, "tool"))
        .collect();
    assert_eq!(denied, LOOK_ALIKES);
}

#[tokio::test]
async fn a_changed_pinned_tool_is_blocked_until_approved_again() {
    let host = Host::warn();
    let server = host
        .connect("pinned", &fixture("pin-change"))
        .await
        .unwrap();
    let pins = server.approve_tools(&["t".into()]).await.unwrap();
    assert_eq!(pins.len(), 1);
    let pin = pins[0].1.clone();
    let call = CallOptions::default();
    // The first call goes through; the fixture then changes t's description and sends
    // notifications/tools/list_changed.
    assert_eq!(
        text(&server.call_tool("t", None, &call).await.unwrap()),
        "ok"
    );

    // Wait (bounded) until the host has processed list_changed and re-listed the tools.
    let mut status = ToolStatus::Allowed;
    for _ in 0..400 {
        status = server
            .gated_tools()
            .await
            .unwrap()
            .into_iter()
            .find(|g| g.tool.name == "t")
            .expect("t is still listed")
            .status;
        if status != ToolStatus::Allowed {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let ToolStatus::Blocked {
        reason,
        expected,
        actual,
    } = status
    else {
        panic!("t was never blocked: {status:?}");
    };
    assert_eq!(reason, GateReason::ToolPinMismatch);
    assert_eq!(expected, pin);
    assert_ne!(actual, pin);

    let sent = server.bytes_sent();
    let error = server.call_tool("t", None, &call).await.unwrap_err();
    assert_denied(&error, "t", "tool_pin_mismatch");
    assert_eq!(
        server.bytes_sent(),
        sent,
        "a blocked call wrote to the server"
    );

    let mismatches = host.records_of(events::TOOL_PIN_MISMATCH);
    assert_eq!(mismatches.len(), 1, "{mismatches:?}");
    assert_eq!(str_field(&mismatches[0], "tool"), "t");
    assert_eq!(str_field(&mismatches[0], "expected"), pin);
    assert_eq!(str_field(&mismatches[0], "actual"), actual);
    assert_eq!(str_field(&mismatches[0], "scope"), "user");
    let last = host.records().pop().unwrap();
    assert_eq!(last.event, events::TOOL_CALL);
    assert_eq!(str_field(&last, "decision"), "denied");
    assert_eq!(str_field(&last, "reason"), "tool_pin_mismatch");

    // Approving the new definition lets the tool through again.
    let repinned = server.approve_tools(&["t".into()]).await.unwrap();
    assert_eq!(repinned, [("t".to_string(), actual)]);
    assert_eq!(
        text(&server.call_tool("t", None, &call).await.unwrap()),
        "ok"
    );
    server.close().await;

    // The server saw the call before the change and the one after re-approval, not the
    // blocked one.
    let log = host.final_log("pinned").await;
    assert_eq!(calls_received(&log), ["\"t\"", "\"t\""], "{log}");
    let approvals = host.records_of(events::TOOL_APPROVED);
    assert_eq!(approvals.len(), 2, "{approvals:?}");
}

#[tokio::test]
async fn deny_by_default_never_starts_an_unattested_server() {
    let host = Host::new(None, None);
    assert_eq!(host.gatekeeper.posture(), Posture::DenyByDefault);
    let marker = host.state.path().join("started");
    let error = host
        .connect("unattested", &fixture_with_marker("record", &marker))
        .await
        .unwrap_err();
    match &error {
        HostError::NotAdmitted { server, reason, .. } => {
            assert_eq!(server, "unattested");
            assert_eq!(reason.as_str(), "not_mcp_server");
        }
        other => panic!("expected NotAdmitted, got {other:?}"),
    }
    assert!(!marker.exists(), "the process was started");
    assert!(!host.stderr_log("unattested").exists());
    assert!(host.tap.entries(Some("unattested")).is_empty());

    let records = host.records();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].event, events::ADMISSION);
    assert_eq!(records[0].server.as_deref(), Some("unattested"));
    assert_eq!(str_field(&records[0], "decision"), "refused");
    assert_eq!(str_field(&records[0], "reason"), "not_mcp_server");

    // The marker works: under warn, the same server is started (and the admission says so).
    let warn = Host::warn();
    let marker = warn.state.path().join("started");
    let server = warn
        .connect("unattested", &fixture_with_marker("record", &marker))
        .await
        .unwrap();
    assert!(marker.exists(), "the marker is not written on start");
    assert!(!server.verdict().is_admitted());
    server.close().await;
    let admission = warn.records_of(events::ADMISSION);
    assert_eq!(str_field(&admission[0], "decision"), "allowed_by_posture");
}

#[tokio::test]
async fn a_decision_the_audit_log_cannot_record_is_a_refusal() {
    // The log's writer notices on its next append that its path no longer names the file it
    // has open, opens the path again and refuses anything but a writable regular file (by
    // mode bits, so this holds for root too).
    enum Obstacle {
        ReadOnlyFile,
        Directory,
    }
    for obstacle in [Obstacle::ReadOnlyFile, Obstacle::Directory] {
        let host = Host::warn();
        let server = host.connect("audited", &fixture("record")).await.unwrap();
        server.approve_tools(&["t".into()]).await.unwrap();
        let audit = host.audit_path();
        std::fs::remove_file(&audit).unwrap();
        match obstacle {
            Obstacle::ReadOnlyFile => {
                std::fs::write(&audit, b"").unwrap();
                let mut permissions = std::fs::metadata(&audit).unwrap().permissions();
                permissions.set_readonly(true);
                std::fs::set_permissions(&audit, permissions).unwrap();
            }
            Obstacle::Directory => std::fs::create_dir(&audit).unwrap(),
        }

        let sent = server.bytes_sent();
        let call = CallOptions::default();
        for name in ["t", "T"] {
            let error = server.call_tool(name, None, &call).await.unwrap_err();
            assert!(
                matches!(error, HostError::AuditUnavailable { .. }),
                "{name:?}: {error:?}"
            );
        }
        assert_eq!(
            server.bytes_sent(),
            sent,
            "an unrecorded call wrote to the server"
        );

        // Once the log can be written again, so can the decision, and the call goes out.
        match obstacle {
            Obstacle::ReadOnlyFile => std::fs::remove_file(&audit).unwrap(),
            Obstacle::Directory => std::fs::remove_dir(&audit).unwrap(),
        }
        assert_eq!(
            text(&server.call_tool("t", None, &call).await.unwrap()),
            "ok"
        );
        server.close().await;
        let log = host.final_log("audited").await;
        assert_eq!(calls_received(&log), ["\"t\""], "{log}");
        let last = host.records().pop().unwrap();
        assert_eq!(last.event, events::TOOL_CALL);
        assert_eq!(str_field(&last, "decision"), "allowed");
    }
}

#[tokio::test]
async fn users_cannot_approve_tools_under_deny_by_default() {
    // A server a bundle admits under deny-by-default: the fixture behind a wrapper script that
    // the demo bundle binds (its path, no arguments, its SHA-256). The bundle allows echo, add
    // and slow; the fixture lists only "t".
    let bin = tempfile::tempdir().unwrap();
    let wrapper = bin.path().join("fixture-server");
    let script = script().display().to_string();
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec python3 {} record\n",
            shlex::try_quote(&script).unwrap()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let bundle = gatehouse_host::demo::demo_bundle(&wrapper, OffsetDateTime::now_utc()).unwrap();
    let host = Host::new(None, Some(bundle));
    assert_eq!(host.gatekeeper.posture(), Posture::DenyByDefault);
    let spec = ServerSpec::Stdio(StdioSpec {
        command: wrapper.display().to_string(),
        args: Vec::new(),
        env: Vec::new(),
        cwd: None,
    });
    let server = host.connect("bound", &spec).await.unwrap();
    assert!(
        server.verdict().is_admitted(),
        "{}",
        server.verdict().headline()
    );

    for names in [Vec::new(), vec!["t".to_string()]] {
        let error = server.approve_tools(&names).await.unwrap_err();
        assert!(
            matches!(error, HostError::PostureForbids { .. }),
            "{names:?}: {error:?}"
        );
    }
    assert!(host.records_of(events::TOOL_APPROVED).is_empty());
    let statuses: Vec<ToolStatus> = server
        .gated_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|g| g.status)
        .collect();
    assert_eq!(statuses, [ToolStatus::Hidden]);

    let sent = server.bytes_sent();
    let error = server
        .call_tool("t", None, &CallOptions::default())
        .await
        .unwrap_err();
    assert_denied(&error, "t", "tool_not_admitted");
    assert_eq!(server.bytes_sent(), sent);
    server.close().await;
    let log = host.final_log("bound").await;
    assert!(calls_received(&log).is_empty(), "{log}");
}

#[tokio::test]
async fn a_pin_mismatch_found_while_the_audit_log_is_down_is_recorded_once_it_is_back() {
    let host = Host::warn();
    let server = host
        .connect("pinned", &fixture("pin-change"))
        .await
        .unwrap();
    let pins = server.approve_tools(&["t".into()]).await.unwrap();
    let call = CallOptions::default();
    assert_eq!(
        text(&server.call_tool("t", None, &call).await.unwrap()),
        "ok"
    );

    // The log goes away; the re-listing after list_changed finds the mismatch but cannot
    // record it.
    let audit = host.audit_path();
    std::fs::remove_file(&audit).unwrap();
    std::fs::create_dir(&audit).unwrap();
    let mut listed = Ok(Vec::new());
    for _ in 0..400 {
        listed = server.gated_tools().await;
        if listed.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        matches!(listed, Err(HostError::AuditUnavailable { .. })),
        "{listed:?}"
    );

    // Back: the next look at the tools records the mismatch, and the tool stays blocked.
    std::fs::remove_dir(&audit).unwrap();
    let status = server
        .gated_tools()
        .await
        .unwrap()
        .into_iter()
        .find(|g| g.tool.name == "t")
        .unwrap()
        .status;
    assert!(
        matches!(
            &status,
            ToolStatus::Blocked { reason: GateReason::ToolPinMismatch, expected, .. } if *expected == pins[0].1
        ),
        "{status:?}"
    );
    assert_eq!(
        server
            .tools()
            .await
            .unwrap()
            .iter()
            .find(|t| t.name == "t")
            .and_then(|t| t.description.as_deref()),
        Some("a tool (changed after its first call)"),
        "the tool list shown is the current one"
    );
    let mismatches = host.records_of(events::TOOL_PIN_MISMATCH);
    assert_eq!(mismatches.len(), 1, "{mismatches:?}");
    assert_eq!(str_field(&mismatches[0], "expected"), pins[0].1);
    let error = server.call_tool("t", None, &call).await.unwrap_err();
    assert_denied(&error, "t", "tool_pin_mismatch");
    server.close().await;
    let log = host.final_log("pinned").await;
    assert_eq!(calls_received(&log), ["\"t\""], "{log}");
}

/// Approvals belong to a whole command line: `python3 a.py` and `python3 b.py` share an
/// executable but are different servers, so approving one approves nothing of the other.
#[tokio::test]
async fn approvals_do_not_carry_over_to_another_command_line_of_the_same_program() {
    let host = Host::warn();
    let first = host.connect("first", &fixture("record")).await.unwrap();
    first.approve_tools(&["t".into()]).await.unwrap();
    first.close().await;
    let other = host
        .connect("other", &fixture("stderr-noise"))
        .await
        .unwrap();
    let error = other
        .call_tool("t", None, &CallOptions::default())
        .await
        .unwrap_err();
    assert_denied(&error, "t", "tool_not_admitted");
    other.close().await;
    // The same command line again keeps its approval.
    let again = host.connect("again", &fixture("record")).await.unwrap();
    assert_eq!(
        text(
            &again
                .call_tool("t", None, &CallOptions::default())
                .await
                .unwrap()
        ),
        "ok"
    );
    again.close().await;
}
