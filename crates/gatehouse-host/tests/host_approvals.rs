//! The user's approvals through `Host`, the one door every front end takes (the CLI's
//! `tools pin`, `prompts pin` and `resources approve`, the window's approve buttons): exact
//! resource URIs and prefixes by one rule, in the warn posture only, every refusal naming why.
//! The demo server runs unattested from `servers.json` for the warn posture, and as the
//! built-in demo (deny-by-default under its DEMO-ONLY bundle) for the refusals.

use std::sync::Arc;

use gatehouse_attest::bundle::Posture;
use gatehouse_host::host::Host;
use gatehouse_host::{ErrorCode, ScriptedConsent};
use gatehouse_testkit as kit;
use serde_json::json;

const WELCOME: &str = "demo://docs/welcome.txt";
const GUIDE: &str = "demo://docs/guide.md";
const LOGO: &str = "demo://images/logo.png";

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// A host in the warn posture with the demo server listed (unattested) as `local`.
fn warn_host(dir: &std::path::Path) -> Arc<Host> {
    kit::host::write_servers(
        dir,
        &json!({"mcpServers": {"local": {"command": kit::demo::command()}}}),
    );
    let mut options = kit::host::options(dir);
    options.posture_override = Some(Posture::Warn);
    options.connect_timeout = std::time::Duration::from_secs(20);
    kit::host::open(options, Arc::new(ScriptedConsent::new(Vec::new())))
}

async fn allowed_uris(host: &Host, server: &str) -> Vec<String> {
    let groups = host.list_resources(server).await.expect("resources list");
    groups.allowed.into_iter().map(|r| r.uri).collect()
}

#[tokio::test]
async fn exact_uris_and_prefixes_are_approved_in_the_warn_posture() {
    let dir = tempfile::tempdir().unwrap();
    let host = warn_host(dir.path());
    assert_eq!(allowed_uris(&host, "local").await, Vec::<String>::new());

    host.approve_resources("local", &strings(&[LOGO]), &strings(&["demo://docs/"]))
        .await
        .expect("an exact URI and a prefix are approved in warn");
    let mut allowed = allowed_uris(&host, "local").await;
    allowed.sort();
    assert_eq!(allowed, strings(&[GUIDE, WELCOME, LOGO]));

    // A prefix that is not one (no trailing "/") is refused, naming why; nothing of the
    // request is recorded, not even its valid exact URI.
    let error = host
        .approve_resources(
            "local",
            &strings(&["demo://counter"]),
            &strings(&["demo://data"]),
        )
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ConfigInvalid, "{error:?}");
    assert!(error.message.contains("does not end in \"/\""), "{error:?}");
    assert!(
        !allowed_uris(&host, "local")
            .await
            .contains(&"demo://counter".to_string())
    );

    // Tools and prompts are pinned through the host too.
    let tools = host
        .approve_tools("local", &[])
        .await
        .expect("tools pinned");
    assert!(!tools.is_empty());
    assert!(tools.iter().all(|(_, pin)| pin.starts_with("sha256:")));
    let prompts = host
        .approve_prompts("local", &strings(&["summarize"]))
        .await
        .expect("a prompt pinned");
    assert_eq!(prompts.len(), 1);
    assert_eq!(prompts[0].0, "summarize");

    let error = host
        .approve_resources("nowhere", &strings(&[WELCOME]), &[])
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::UnknownServer, "{error:?}");
    host.shutdown().await;
}

#[tokio::test]
async fn deny_by_default_refuses_every_approval_naming_the_posture() {
    let dir = tempfile::tempdir().unwrap();
    let host = kit::host::open(
        kit::host::demo_options(dir.path()),
        Arc::new(ScriptedConsent::new(Vec::new())),
    );
    let before = allowed_uris(&host, "demo").await;

    for (uris, prefixes) in [
        (strings(&["demo://other/x"]), Vec::new()),
        (Vec::new(), strings(&["demo://other/"])),
    ] {
        let error = host
            .approve_resources("demo", &uris, &prefixes)
            .await
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::PostureForbids, "{error:?}");
        assert!(error.message.contains("deny-by-default"), "{error:?}");
    }
    assert_eq!(allowed_uris(&host, "demo").await, before);

    let error = host.approve_tools("demo", &[]).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::PostureForbids, "{error:?}");
    let error = host.approve_prompts("demo", &[]).await.unwrap_err();
    assert_eq!(error.code, ErrorCode::PostureForbids, "{error:?}");
    host.shutdown().await;
}
