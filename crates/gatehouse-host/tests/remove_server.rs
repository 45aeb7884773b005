//! `Host::remove_server`, the one path every front end's remove takes: the `servers.json`
//! entry goes, its open connection is closed, the keychain secret it named stays, an unknown
//! name is `unknown_server`, and the demo's built-in server is refused in demo mode.

use std::sync::Arc;

use gatehouse_attest::bundle::Posture;
use gatehouse_host::host::{AddServer, Host};
use gatehouse_host::secrets::{MemoryStore, SecretStore};
use gatehouse_host::{ErrorCode, ScriptedConsent, ServerSpec, ServersFile};
use gatehouse_testkit as kit;
use serde_json::json;

fn consent() -> Arc<ScriptedConsent> {
    Arc::new(ScriptedConsent::new(Vec::new()))
}

async fn names(host: &Host) -> Vec<String> {
    let rows = host.servers().await.expect("servers listed");
    rows.into_iter().map(|row| row.name).collect()
}

#[tokio::test]
async fn a_listed_server_is_removed_and_its_keychain_secret_stays() {
    let dir = tempfile::tempdir().unwrap();
    kit::host::write_servers(
        dir.path(),
        &json!({"mcpServers": {"a": {"command": "/nonexistent/a"}, "b": {"command": "/nonexistent/b"}}}),
    );
    let store = Arc::new(MemoryStore::default());
    let host = Host::open(
        kit::host::options(dir.path()),
        store.clone(),
        consent(),
        Arc::new(|_| {}),
    )
    .expect("host opens");
    let mut web = AddServer::new(
        "web",
        ServerSpec::adhoc_http("https://mcp.example.com/").unwrap(),
    );
    web.bearer_token = Some("t0ken".into());
    host.add_server_entry(web).await.expect("web added");
    assert_eq!(names(&host).await, ["a", "b", "web"]);

    host.remove_server("a").await.expect("a removed");
    host.remove_server("web").await.expect("web removed");
    assert_eq!(names(&host).await, ["b"]);
    let file = ServersFile::load(&kit::host::paths(dir.path()).config).unwrap();
    assert_eq!(file.servers.keys().collect::<Vec<_>>(), ["b"]);
    // Another entry, or the user, may still use it: `secret delete` removes it.
    let kept = store.get("web-bearer").unwrap().expect("the secret stays");
    assert_eq!(kept.expose(), "t0ken");

    let error = host.remove_server("a").await.unwrap_err();
    assert_eq!(error.code, ErrorCode::UnknownServer, "{error:?}");
    assert!(error.message.contains("\"a\""), "{error:?}");
    assert_eq!(names(&host).await, ["b"]);
    host.shutdown().await;
}

#[tokio::test]
async fn removing_a_connected_server_closes_its_connection() {
    let dir = tempfile::tempdir().unwrap();
    kit::host::write_servers(
        dir.path(),
        &json!({"mcpServers": {"local": {"command": kit::demo::command()}}}),
    );
    let mut options = kit::host::options(dir.path());
    options.posture_override = Some(Posture::Warn);
    options.connect_timeout = std::time::Duration::from_secs(20);
    let host = kit::host::open(options, consent());
    host.live_connection("local").await.expect("connects");
    let row = |rows: Vec<gatehouse_host::host::ServerRow>| {
        rows.into_iter().find(|row| row.name == "local").unwrap()
    };
    assert!(row(host.servers().await.unwrap()).connected);

    host.remove_server("local").await.expect("removed");
    // Listed again under the same name: a connection left open would still be its slot.
    host.add_server_entry(AddServer::new(
        "local",
        ServerSpec::adhoc_stdio("/nonexistent/local").unwrap(),
    ))
    .await
    .expect("added again");
    assert!(!row(host.servers().await.unwrap()).connected);
    host.shutdown().await;
}

#[tokio::test]
async fn the_built_in_demo_is_refused_in_demo_mode() {
    let dir = tempfile::tempdir().unwrap();
    kit::host::write_servers(
        dir.path(),
        &json!({"mcpServers": {"mine": {"command": "/nonexistent/mine"}}}),
    );
    let host = kit::host::open(kit::host::demo_options(dir.path()), consent());
    for name in ["demo", "demo-2025"] {
        let error = host.remove_server(name).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::DemoNotRemovable, "{error:?}");
        assert!(error.message.contains("built-in demo"), "{error:?}");
    }
    assert_eq!(names(&host).await, ["demo", "demo-2025", "mine"]);
    host.remove_server("mine")
        .await
        .expect("a listed server goes");
    assert_eq!(names(&host).await, ["demo", "demo-2025"]);
    host.shutdown().await;

    // Outside demo mode the name is an ordinary unknown one.
    let host = kit::host::open(kit::host::options(dir.path()), consent());
    let error = host.remove_server("demo").await.unwrap_err();
    assert_eq!(error.code, ErrorCode::UnknownServer, "{error:?}");
    host.shutdown().await;
}
