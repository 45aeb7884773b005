//! Approving definitions with high review findings (issue 27): in the warn posture a tool whose
//! current definition has a high finding stays hidden, and approving it needs the person's
//! explicit acknowledgement; without it the approval is refused naming every finding and
//! nothing is recorded, with it the approval's record names the findings. Clean tools are
//! approved as before, and deny-by-default is unaffected. The demo server runs twice,
//! unattested: plain as `demo`, and with `--poisoned-definitions` as `poisoned`.

use std::sync::Arc;

use gatehouse_attest::bundle::Posture;
use gatehouse_attest::gate::ToolStatus;
use gatehouse_host::host::{Acknowledgement, Host};
use gatehouse_host::{ErrorCode, ScriptedConsent};
use gatehouse_review::{FindingKind, Primitive, Severity};
use gatehouse_testkit as kit;
use serde_json::{Value, json};

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// A warn-posture host with the plain demo as `demo` and the poisoned one as `poisoned`,
/// both connected (so each knows the other's tools), and an admin bundle (posture warn) whose
/// one entry, a mail server nobody configured, allows `send_invoice`.
async fn warn_host(dir: &std::path::Path) -> Arc<Host> {
    let mut signed = kit::bundles::signed(json!([{
        "id": "urn:test:mail",
        "origins": ["https://mail.example"],
        "allowedTools": ["send_invoice"],
    }]));
    signed["posture"] = json!("warn");
    kit::bundles::install(&kit::host::paths(dir).system_trust_roots, &signed);
    kit::host::write_servers(
        dir,
        &json!({"mcpServers": {
            "demo": {"command": kit::demo::command()},
            "poisoned": {"command": kit::demo::command(), "args": ["--poisoned-definitions"]},
        }}),
    );
    let mut options = kit::host::options(dir);
    options.posture_override = Some(Posture::Warn);
    options.connect_timeout = std::time::Duration::from_secs(20);
    let host = kit::host::open(options, Arc::new(ScriptedConsent::new(Vec::new())));
    host.connect("demo").await.expect("demo connects");
    host.connect("poisoned").await.expect("poisoned connects");
    host
}

async fn status(host: &Host, server: &str, tool: &str) -> ToolStatus {
    host.gated_tools(server)
        .await
        .expect("tools listed")
        .into_iter()
        .find(|t| t.tool.name == tool)
        .unwrap_or_else(|| panic!("{server} lists {tool}"))
        .status
}

async fn definition(host: &Host, server: &str, tool: &str) -> Value {
    let gated = host.gated_tools(server).await.expect("tools listed");
    let tool = gated
        .into_iter()
        .find(|t| t.tool.name == tool)
        .unwrap_or_else(|| panic!("{server} lists {tool}"));
    serde_json::to_value(&tool.tool).unwrap()
}

/// The `tool_approved` records' data for `tool`.
fn approvals_of(dir: &std::path::Path, tool: &str) -> Vec<Value> {
    kit::host::records_of(dir, "tool_approved")
        .into_iter()
        .map(|r| r["data"].clone())
        .filter(|d| d["tool"] == tool)
        .collect()
}

#[tokio::test]
async fn other_tools_are_the_other_servers_and_every_poisoned_tool_has_its_high_finding() {
    let dir = tempfile::tempdir().unwrap();
    let host = warn_host(dir.path()).await;

    // The other live server's listed tools, and the bundle entries' allowed tools by id
    // (nothing configured is admitted as the mail entry); never the server's own.
    let others = host.other_tools("poisoned").await;
    assert!(
        others.contains(&("demo".into(), "echo".into())),
        "{others:?}"
    );
    let mail = ("urn:test:mail".to_string(), "send_invoice".to_string());
    assert!(others.contains(&mail), "{others:?}");
    assert!(
        others
            .iter()
            .all(|(server, _)| server == "demo" || server == "urn:test:mail"),
        "{others:?}"
    );
    let others = host.other_tools("demo").await;
    assert!(
        others.contains(&("poisoned".into(), "poison_secrecy".into())),
        "{others:?}"
    );
    assert!(others.contains(&mail), "{others:?}");
    assert!(others.iter().all(|(server, _)| server != "demo"));

    for (tool, kind) in [
        ("poison_zero_width", FindingKind::InvisibleCharacters),
        ("poison_tag_smuggled", FindingKind::InvisibleCharacters),
        ("poison_secrecy", FindingKind::ModelInstruction),
        ("poison_other_server_tool", FindingKind::OtherServerTool),
        (
            "poison_other_tool_instruction",
            FindingKind::OtherToolInstruction,
        ),
        ("poison_secret_field", FindingKind::SecretRequest),
    ] {
        let definition = definition(&host, "poisoned", tool).await;
        let findings = host
            .findings("poisoned", Primitive::Tool, &definition)
            .await;
        assert!(
            findings
                .iter()
                .any(|f| f.kind == kind && f.severity == Severity::High),
            "{tool}: {findings:?}"
        );
    }
    // The plain demo's every tool has none, though `poisoned` lists the same names: a
    // server's own names are never "another server's tool".
    let demo_tools = host.gated_tools("demo").await.expect("demo tools");
    assert!(demo_tools.len() > 4);
    for gated in demo_tools {
        let definition = serde_json::to_value(&gated.tool).unwrap();
        let findings = host.findings("demo", Primitive::Tool, &definition).await;
        assert_eq!(findings, Vec::new(), "demo {}", gated.tool.name);
    }
    let definition = definition(&host, "poisoned", "echo").await;
    let findings = host
        .findings("poisoned", Primitive::Tool, &definition)
        .await;
    assert_eq!(findings, Vec::new(), "poisoned echo");
    host.shutdown().await;
}

#[tokio::test]
async fn a_poisoned_tool_is_refused_without_acknowledgement_and_approved_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let host = warn_host(dir.path()).await;
    // Unapproved in the warn posture: hidden, not callable (the existing warn behaviour).
    assert_eq!(
        status(&host, "poisoned", "poison_secrecy").await,
        ToolStatus::Hidden
    );

    let error = host
        .approve_tools("poisoned", &strings(&["poison_secrecy"]))
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::FindingNotAcknowledged, "{error:?}");
    assert!(error.refusal, "{error:?}");
    assert!(error.message.contains("poison_secrecy"), "{error:?}");
    assert!(error.message.contains("model_instruction"), "{error:?}");
    assert!(error.message.contains("--accept-findings"), "{error:?}");
    assert!(approvals_of(dir.path(), "poison_secrecy").is_empty());
    assert_eq!(
        status(&host, "poisoned", "poison_secrecy").await,
        ToolStatus::Hidden
    );

    // Refused as a whole: a clean tool asked for with a poisoned one is not approved either,
    // and the refusal names every poisoned one (its excerpt escaped, never raw).
    let error = host
        .approve_tools_with(
            "poisoned",
            &strings(&["add", "poison_zero_width", "poison_secret_field"]),
            Acknowledgement::NotGiven,
        )
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::FindingNotAcknowledged, "{error:?}");
    for named in [
        "poison_zero_width",
        "invisible_characters",
        "poison_secret_field",
        "secret_request",
    ] {
        assert!(error.message.contains(named), "{named}: {error:?}");
    }
    assert!(!error.message.contains('\u{200B}'), "{error:?}");
    assert!(approvals_of(dir.path(), "add").is_empty());
    assert_eq!(status(&host, "poisoned", "add").await, ToolStatus::Hidden);

    // "Every listed tool" includes the poisoned ones: refused too.
    let error = host.approve_tools("poisoned", &[]).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::FindingNotAcknowledged, "{error:?}");

    // Acknowledged: approved, callable, and the record names the findings.
    let pins = host
        .approve_tools_with(
            "poisoned",
            &strings(&["poison_secrecy"]),
            Acknowledgement::HighFindings,
        )
        .await
        .expect("approved despite findings");
    assert_eq!(pins.len(), 1);
    assert_eq!(
        status(&host, "poisoned", "poison_secrecy").await,
        ToolStatus::Allowed
    );
    let records = approvals_of(dir.path(), "poison_secrecy");
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["pin"], pins[0].1.as_str());
    assert_eq!(records[0]["findings"], json!(["model_instruction"]));
    host.shutdown().await;
}

#[tokio::test]
async fn a_clean_tool_is_approved_as_before_and_its_record_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let host = warn_host(dir.path()).await;
    assert_eq!(status(&host, "poisoned", "echo").await, ToolStatus::Hidden);
    let pins = host
        .approve_tools("poisoned", &strings(&["echo"]))
        .await
        .expect("a clean tool needs no acknowledgement");
    assert_eq!(pins.len(), 1);
    assert_eq!(status(&host, "poisoned", "echo").await, ToolStatus::Allowed);
    let records = approvals_of(dir.path(), "echo");
    assert_eq!(records.len(), 1, "{records:?}");
    // No findings key at all: the record's bytes are what they were before findings existed.
    let keys: Vec<&String> = records[0].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["tool", "pin", "approval_key", "scope"],
        "{records:?}"
    );

    // The plain demo's every tool, and every prompt, approve as before.
    host.approve_tools("demo", &[]).await.expect("demo tools");
    host.approve_prompts("demo", &[])
        .await
        .expect("demo prompts");
    host.shutdown().await;
}

#[tokio::test]
async fn deny_by_default_refuses_an_acknowledged_approval_naming_the_posture() {
    let dir = tempfile::tempdir().unwrap();
    let host = kit::host::open(
        kit::host::demo_options(dir.path()),
        Arc::new(ScriptedConsent::new(Vec::new())),
    );
    let error = host
        .approve_tools_with("demo", &[], Acknowledgement::HighFindings)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::PostureForbids, "{error:?}");
    let error = host
        .approve_prompts_with("demo", &[], Acknowledgement::HighFindings)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::PostureForbids, "{error:?}");
    assert!(kit::host::records_of(dir.path(), "tool_approved").is_empty());
    host.shutdown().await;
}
