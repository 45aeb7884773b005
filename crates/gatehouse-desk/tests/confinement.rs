//! The window's side of confinement (issue 28), through the one dispatcher on a real host: a
//! server's detail carries its confinement view; `server_confine` changes the person's
//! settings for a server they run unattested (warn posture), audited, and the detail then
//! shows the server running under them; a bad value is refused with the host's code and
//! nothing is written; the form is typed (an unknown field is refused). The demo server runs
//! unattested as `files`.

use std::path::Path;
use std::sync::Arc;

use gatehouse_attest::bundle::Posture;
use gatehouse_desk::{Desk, dispatch};
use gatehouse_host::MemoryStore;
use gatehouse_testkit as kit;
use serde_json::{Value, json};

/// bubblewrap must be installed: the detail is checked against a server really confined.
fn require_bwrap() {
    let found = std::process::Command::new("sh")
        .arg("-c")
        .arg("command -v bwrap")
        .output()
        .is_ok_and(|out| out.status.success());
    assert!(
        found,
        "bwrap is not installed; run scripts/install-deps.sh (or apt-get install bubblewrap)"
    );
}

fn open(dir: &Path) -> Arc<Desk> {
    kit::host::write_servers(
        dir,
        &json!({"mcpServers": {"files": {"command": kit::demo::command()}}}),
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

fn servers_json(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(kit::host::paths(dir).config).unwrap()).unwrap()
}

#[tokio::test]
async fn the_detail_carries_the_view_and_the_command_changes_it() {
    require_bwrap();
    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let proj = proj.to_str().unwrap().to_string();
    let desk = open(dir.path());

    // The default confinement of an unattested server: nothing of the person's, no network.
    let before = detail(&desk, "files").await;
    let view = &before["confinement"];
    assert_eq!(view["state"], "confined", "{view}");
    assert_eq!(view["grants_from"], "default", "{view}");
    assert_eq!(view["read"], json!([]));
    assert_eq!(view["write"], json!([]));
    assert_eq!(view["network"], json!({"kind": "none"}));
    assert_eq!(view["processes"], 0);
    assert_eq!(before["row"]["connected"], true, "{before}");

    // The person grants a directory and a host.
    let saved = call(
        &desk,
        "server_confine",
        json!({"name": "files", "confinement": {
            "read": [proj], "hosts": ["api.example.com:443"], "processes": 1,
        }}),
    )
    .await
    .unwrap_or_else(|e| panic!("server_confine: {e}"));
    assert_eq!(saved["grants_from"], "person", "{saved}");
    assert_eq!(saved["read"], json!([proj]), "{saved}");
    assert_eq!(
        saved["network"],
        json!({"kind": "hosts", "hosts": ["api.example.com:443"]})
    );
    assert_eq!(saved["processes"], 1);
    assert_eq!(
        servers_json(dir.path())["mcpServers"]["files"]["confinement"],
        json!({"read": [proj], "hosts": ["api.example.com:443"], "processes": 1})
    );
    let changes = kit::host::records_of(dir.path(), "confinement_changed");
    assert_eq!(changes.len(), 1, "{changes:?}");

    // The server was closed, and its detail shows it running under the new settings.
    let after = detail(&desk, "files").await;
    assert_eq!(after["confinement"], saved, "{after}");
    assert_eq!(after["row"]["connected"], true, "{after}");

    // "Unconfined": the person's own off, said as theirs.
    let off = call(
        &desk,
        "server_confine",
        json!({"name": "files", "confinement": {"unconfined": true}}),
    )
    .await
    .unwrap_or_else(|e| panic!("server_confine: {e}"));
    assert_eq!(off["state"], "unconfined", "{off}");
    assert_eq!(off["reason"], "person_turned_off", "{off}");
    assert_eq!(detail(&desk, "files").await["confinement"], off);

    // An empty form gives the default back and removes the settings.
    let reset = call(
        &desk,
        "server_confine",
        json!({"name": "files", "confinement": {}}),
    )
    .await
    .unwrap_or_else(|e| panic!("server_confine: {e}"));
    assert_eq!(reset["grants_from"], "default", "{reset}");
    assert_eq!(reset["state"], "confined", "{reset}");
    let entry = &servers_json(dir.path())["mcpServers"]["files"];
    assert!(entry.get("confinement").is_none(), "{entry}");
    assert_eq!(
        kit::host::records_of(dir.path(), "confinement_changed").len(),
        3
    );
}

#[tokio::test]
async fn a_bad_value_is_refused_with_the_hosts_code_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let desk = open(dir.path());
    let written = std::fs::read(kit::host::paths(dir.path()).config).unwrap();
    for (form, field) in [
        (json!({"hosts": ["*.example.com:443"]}), "hosts"),
        (json!({"hosts": ["api.example.com"]}), "hosts"),
        (json!({"hosts": ["http://api.example.com:80"]}), "hosts"),
        (json!({"read": ["relative/dir"]}), "read"),
        (json!({"write": ["/srv/../etc"]}), "write"),
    ] {
        let error = call(
            &desk,
            "server_confine",
            json!({"name": "files", "confinement": form}),
        )
        .await
        .expect_err(&format!("{form} was accepted"));
        let code = error["code"].as_str().unwrap_or_default();
        assert!(
            !code.is_empty() && code != "bad_arguments" && code != "internal",
            "{form}: {error}"
        );
        let message = error["message"].as_str().unwrap_or_default();
        assert!(message.contains(field), "{form}: {error}");
    }
    // The form is typed: what it does not have is refused before the host sees it.
    for form in [
        json!({"mode": "off"}),
        json!({"read": "/srv"}),
        json!({"processes": -1}),
        json!({"anyHost": "yes"}),
    ] {
        let error = call(
            &desk,
            "server_confine",
            json!({"name": "files", "confinement": form}),
        )
        .await
        .expect_err(&format!("{form} was accepted"));
        assert_eq!(error["code"], "bad_arguments", "{form}: {error}");
    }
    let error = call(&desk, "server_confine", json!({"name": "files"}))
        .await
        .expect_err("no form");
    assert_eq!(error["code"], "bad_arguments", "{error}");
    // A server that is not configured.
    let error = call(
        &desk,
        "server_confine",
        json!({"name": "nobody", "confinement": {"read": ["/srv"]}}),
    )
    .await
    .expect_err("an unknown server");
    assert!(error["code"].is_string(), "{error}");
    assert_eq!(
        std::fs::read(kit::host::paths(dir.path()).config).unwrap(),
        written
    );
    assert!(kit::host::records_of(dir.path(), "confinement_changed").is_empty());
}

#[tokio::test]
async fn an_admitted_servers_detail_shows_its_admissions_grants() {
    let dir = tempfile::tempdir().unwrap();
    let options = kit::host::demo_options(dir.path());
    let desk =
        Desk::open(options, Arc::new(MemoryStore::default()), Arc::new(|_| {})).expect("opens");
    let view = detail(&desk, "demo").await["confinement"].clone();
    assert_eq!(view["grants_from"], "admission", "{view}");
    assert_eq!(view["network"]["kind"], "any", "{view}");
}
