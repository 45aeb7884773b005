//! The definition review in the real webview (issue 27): a poisoned server's tool cards show
//! each definition escaped (a zero-width character as `\u{200B}`, never drawn as nothing) with
//! its findings as text, and a hidden tool with a high finding is approved only through the
//! explicit "Approve despite findings", whose approval's record names the findings; a clean
//! tool keeps the plain Approve. The demo server with `--poisoned-definitions`, at a path no
//! bundle binds: unattested, connected only because the posture is warn.

use gatehouse_desktop_e2e::{App, Options, built, eventually};
use serde_json::{Value, json};

/// One app at a time: each brings up a display, a WebKit and the demo server.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread")]
async fn a_poisoned_tool_shows_its_findings_and_is_approved_only_despite_them() {
    let _one = SERIAL.lock().await;
    let work = tempfile::tempdir().expect("temp dir");
    let program = work.path().join("poisoned-server");
    std::fs::copy(built("gatehouse-demo-server"), &program).expect("copy the demo server");
    let app = App::launch(Options {
        servers: Some(json!({"mcpServers": {
            "poisoned": {"command": program, "args": ["--poisoned-definitions"]},
        }})),
        posture: Some("warn"),
        ..Options::default()
    })
    .await;
    let row = ".server-row[data-server=\"poisoned\"]";
    app.wait(&format!(
        "{row} [data-testid=status][data-status=unattested]"
    ))
    .await;
    app.settled_click(&format!("{row} .row-open")).await;
    let detail = "[data-testid=server-detail][data-server=\"poisoned\"]";

    // The zero-width character is shown escaped, and the card lists the high finding.
    let zero_width = format!("{detail} [data-tool=\"poison_zero_width\"][data-tool-status=hidden]");
    app.wait(&format!(
        "{zero_width} [data-testid=findings] [data-kind=invisible_characters][data-severity=high]"
    ))
    .await;
    let description = app.text(&format!("{zero_width} .tool-desc")).await;
    assert!(description.contains("mes\\u{200B}sage"), "{description:?}");
    assert!(!description.contains('\u{200B}'), "{description:?}");
    // The instruction in Unicode tags is shown as escapes too, with what it says.
    let tagged = format!("{detail} [data-tool=\"poison_tag_smuggled\"]");
    let description = app.text(&format!("{tagged} .tool-desc")).await;
    assert!(description.contains("\\u{E0049}"), "{description:?}");

    // The card with a high finding offers only the explicit approval.
    let secrecy = format!("{detail} [data-tool=\"poison_secrecy\"][data-tool-status=hidden]");
    app.wait(&format!(
        "{secrecy} [data-testid=findings] [data-kind=model_instruction]"
    ))
    .await;
    assert!(
        app.all(&format!("{secrecy} [data-action=approve-tool]"))
            .await
            .is_empty(),
        "no plain Approve on a tool with a high finding"
    );
    let despite = format!("{secrecy} [data-action=approve-tool-despite-findings]");
    assert_eq!(app.text(&despite).await.trim(), "Approve despite findings");
    app.reveal(&secrecy).await;
    app.screenshot("tool-findings").await;
    app.settled_click(&despite).await;
    app.wait(&format!(
        "{detail} [data-tool=\"poison_secrecy\"][data-tool-status=allowed] [data-kind=model_instruction]"
    ))
    .await;
    let record: Value = eventually("poison_secrecy's approval record", || async {
        app.audit()
            .into_iter()
            .find(|r| r["event"] == "tool_approved" && r["data"]["tool"] == "poison_secrecy")
    })
    .await;
    assert_eq!(record["data"]["findings"], json!(["model_instruction"]));

    // A clean tool: no findings, the plain Approve, and a record without findings.
    let echo = format!("{detail} [data-tool=\"echo\"][data-tool-status=hidden]");
    app.wait(&echo).await;
    assert!(
        app.all(&format!("{echo} [data-testid=findings]"))
            .await
            .is_empty()
    );
    app.settled_click(&format!("{echo} [data-action=approve-tool]"))
        .await;
    app.wait(&format!(
        "{detail} [data-tool=\"echo\"][data-tool-status=allowed]"
    ))
    .await;
    let record: Value = eventually("echo's approval record", || async {
        app.audit()
            .into_iter()
            .find(|r| r["event"] == "tool_approved" && r["data"]["tool"] == "echo")
    })
    .await;
    assert!(record["data"].get("findings").is_none(), "{record}");
    app.close().await;
}
