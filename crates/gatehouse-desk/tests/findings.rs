//! The window's side of the definition review (issue 27), through the one dispatcher: a
//! server's detail carries a review per listed tool whose text is escaped (a zero-width or
//! tag character never reaches the window raw) with its findings; a hidden tool with a high
//! finding is approved only with the explicit acknowledgement (`tools_approve`'s typed
//! `acknowledgement`), and a pin-change card's review is of the definition listed now. The
//! demo runs twice, unattested, in the warn posture: plain as `demo`, poisoned as `poisoned`.

use std::path::Path;
use std::sync::Arc;

use gatehouse_attest::bundle::Posture;
use gatehouse_desk::{Desk, dispatch};
use gatehouse_host::MemoryStore;
use gatehouse_testkit as kit;
use serde_json::{Value, json};

fn open(dir: &Path) -> Arc<Desk> {
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
    Desk::open(options, Arc::new(MemoryStore::default()), Arc::new(|_| {})).expect("desk opens")
}

async fn call(desk: &Arc<Desk>, command: &str, args: Value) -> Result<Value, Value> {
    // On the heap, as the shells run it (in a task): the dispatcher's future is large.
    Box::pin(dispatch(desk, command, args)).await
}

async fn detail(desk: &Arc<Desk>, name: &str) -> Value {
    call(desk, "server_detail", json!({"name": name}))
        .await
        .unwrap_or_else(|e| panic!("server_detail {name}: {e}"))
}

fn names(detail: &Value, group: &str) -> Vec<String> {
    detail["tools"][group]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let t = if group == "blocked" { &t["tool"] } else { t };
            t["name"].as_str().unwrap().to_string()
        })
        .collect()
}

fn kinds(review: &Value) -> Vec<String> {
    review["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn the_detail_escapes_every_definition_text_and_carries_the_findings() {
    let dir = tempfile::tempdir().unwrap();
    let desk = open(dir.path());
    detail(&desk, "demo").await;
    let poisoned = detail(&desk, "poisoned").await;
    assert_eq!(poisoned["canApprove"], true);
    let reviews = &poisoned["reviews"];

    // Every listed tool has its review, keyed by its exact name.
    let mut listed = names(&poisoned, "allowed");
    listed.extend(names(&poisoned, "hidden"));
    let keys: Vec<&String> = reviews.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), listed.len(), "{keys:?}");
    assert!(listed.iter().all(|n| reviews.get(n).is_some()), "{keys:?}");

    // The zero-width character is shown escaped, never raw; the raw Tool still carries it
    // (it is what a call names), and nothing the window shows does.
    let zero_width = &reviews["poison_zero_width"];
    let description = zero_width["description"].as_str().unwrap();
    assert!(description.contains("mes\\u{200B}sage"), "{description}");
    assert!(!description.contains('\u{200B}'));
    assert_eq!(kinds(zero_width), ["invisible_characters"]);
    assert_eq!(zero_width["needsAcknowledgement"], true);
    let shown = reviews.to_string();
    assert!(
        !shown
            .chars()
            .any(|c| c == '\u{200B}' || ('\u{E0000}'..='\u{E0FFF}').contains(&c)),
        "a review carries a raw invisible character"
    );
    let tagged = reviews["poison_tag_smuggled"]["description"]
        .as_str()
        .unwrap();
    assert!(tagged.contains("\\u{E0049}"), "{tagged}");

    for (tool, kind) in [
        ("poison_secrecy", "model_instruction"),
        ("poison_other_tool_instruction", "other_tool_instruction"),
        ("poison_secret_field", "secret_request"),
    ] {
        let review = &reviews[tool];
        assert!(kinds(review).iter().any(|k| k == kind), "{tool}: {review}");
        assert_eq!(review["needsAcknowledgement"], true, "{tool}");
        let finding = &review["findings"][0];
        for field in ["severity", "field", "excerpt", "detail"] {
            assert!(finding[field].is_string(), "{tool}: {finding}");
        }
    }
    // A clean tool: no findings, approved as before.
    assert_eq!(reviews["echo"]["findings"], json!([]));
    assert_eq!(reviews["echo"]["needsAcknowledgement"], false);
    let demo = detail(&desk, "demo").await;
    for (name, review) in demo["reviews"].as_object().unwrap() {
        assert_eq!(review["findings"], json!([]), "demo {name}");
    }
    desk.shutdown().await;
}

#[tokio::test]
async fn approving_a_tool_with_a_high_finding_needs_the_typed_acknowledgement() {
    let dir = tempfile::tempdir().unwrap();
    let desk = open(dir.path());
    detail(&desk, "demo").await;
    assert!(names(&detail(&desk, "poisoned").await, "hidden").contains(&"poison_secrecy".into()));

    // Without an acknowledgement (absent or "not_given"): refused, naming the finding.
    for args in [
        json!({"server": "poisoned", "names": ["poison_secrecy"]}),
        json!({"server": "poisoned", "names": ["poison_secrecy"], "acknowledgement": "not_given"}),
    ] {
        let error = call(&desk, "tools_approve", args).await.unwrap_err();
        assert_eq!(error["code"], "finding_not_acknowledged", "{error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("model_instruction"),
            "{error}"
        );
    }
    // Only the typed values count: anything else is not an acknowledgement.
    for bad in [json!(true), json!("yes"), json!("High_Findings")] {
        let error = call(
            &desk,
            "tools_approve",
            json!({"server": "poisoned", "names": ["poison_secrecy"], "acknowledgement": bad}),
        )
        .await
        .unwrap_err();
        assert_eq!(error["code"], "bad_arguments", "{error}");
    }
    assert!(names(&detail(&desk, "poisoned").await, "hidden").contains(&"poison_secrecy".into()));

    // "Approve despite findings": approved, now allowed, and its record names the finding.
    let pins = call(
        &desk,
        "tools_approve",
        json!({"server": "poisoned", "names": ["poison_secrecy"], "acknowledgement": "high_findings"}),
    )
    .await
    .expect("approved despite findings");
    assert_eq!(pins[0][0], "poison_secrecy");
    let after = detail(&desk, "poisoned").await;
    assert!(names(&after, "allowed").contains(&"poison_secrecy".into()));
    // Still shown with its finding once allowed.
    assert_eq!(
        kinds(&after["reviews"]["poison_secrecy"]),
        ["model_instruction"]
    );
    let records = kit::host::records_of(dir.path(), "tool_approved");
    let record = records
        .iter()
        .find(|r| r["data"]["tool"] == "poison_secrecy")
        .expect("its approval is recorded");
    assert_eq!(record["data"]["findings"], json!(["model_instruction"]));

    // A clean tool needs nothing.
    call(
        &desk,
        "tools_approve",
        json!({"server": "poisoned", "names": ["echo"]}),
    )
    .await
    .expect("a clean tool is approved as before");
    desk.shutdown().await;
}

#[tokio::test]
async fn a_pin_change_card_shows_the_findings_of_the_new_definition() {
    let dir = tempfile::tempdir().unwrap();
    let desk = open(dir.path());
    call(
        &desk,
        "tools_approve",
        json!({"server": "poisoned", "names": ["echo"]}),
    )
    .await
    .expect("echo approved");
    desk.shutdown().await;
    drop(desk);

    // The person had approved another definition of poison_secrecy than the one listed now.
    let file = kit::host::paths(dir.path()).data.join("approvals.json");
    let mut approvals: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("the approvals file")).unwrap();
    let servers = approvals["servers"].as_object_mut().unwrap();
    assert_eq!(servers.len(), 1, "{servers:?}");
    let pins = servers.values_mut().next().unwrap();
    pins["poison_secrecy"] = json!(format!("sha256:{}", "0".repeat(64)));
    std::fs::write(&file, serde_json::to_vec(&approvals).unwrap()).unwrap();

    let desk = open(dir.path());
    detail(&desk, "demo").await;
    let poisoned = detail(&desk, "poisoned").await;
    assert!(
        names(&poisoned, "blocked").contains(&"poison_secrecy".into()),
        "{poisoned}"
    );
    let review = &poisoned["reviews"]["poison_secrecy"];
    assert_eq!(kinds(review), ["model_instruction"], "{review}");
    assert_eq!(review["needsAcknowledgement"], true);
    desk.shutdown().await;
}
