//! The host's own unit tests (opening, settings, adding and importing servers).

use std::path::PathBuf;

use serde_json::json;

use super::*;
use crate::HostError;
use crate::config::ServerKind;
use crate::consent::ConsentUi;
use crate::gatekeeper::Auditor;
use crate::secrets::{MemoryStore, SecretValue};
use crate::tap::Clock;

fn paths(dir: &std::path::Path) -> HostPaths {
    HostPaths {
        config: dir.join("servers.json"),
        data: dir.join("data"),
        logs: dir.join("logs"),
        user_trust_roots: None,
        system_trust_roots: dir.join("no-system-roots"),
    }
}

fn clock() -> Clock {
    Arc::new(|| time::macros::datetime!(2026-11-21 12:00 UTC))
}

fn no_consent() -> Arc<dyn ConsentUi> {
    Arc::new(crate::consent::ScriptedConsent::new(Vec::new()))
}

fn open_desk(dir: &std::path::Path) -> Arc<Host> {
    Host::open(
        HostOptions::new(paths(dir), clock()),
        Arc::new(MemoryStore::default()),
        no_consent(),
        Arc::new(|_| {}),
    )
    .expect("the host opens")
}

fn open_with_policy(dir: &std::path::Path, policy: Option<PathBuf>) -> Result<(), ApiError> {
    let mut options = HostOptions::new(paths(dir), clock());
    options.policy = policy;
    Host::open(
        options,
        Arc::new(MemoryStore::default()),
        no_consent(),
        Arc::new(|_| {}),
    )
    .map(|_| ())
}

/// An audit log with three records, as an earlier run of the app left it.
fn audit_log_with_records(dir: &std::path::Path) -> PathBuf {
    let audit = paths(dir).audit();
    let (auditor, _) = Auditor::open(&audit, clock()).unwrap();
    for n in 0..3 {
        auditor
            .write(
                Some("demo"),
                &crate::audit_event::gate::ToolCall::sample(&format!("t{n}"), false),
            )
            .unwrap();
    }
    audit
}

fn warning_codes(desk: &Host) -> Vec<String> {
    desk.settings()
        .audit_warnings
        .into_iter()
        .map(|w| w.code)
        .collect()
}

#[test]
fn settings_report_a_torn_audit_tail_found_at_open_once() {
    let dir = tempfile::tempdir().unwrap();
    let audit = audit_log_with_records(dir.path());
    // A crash mid-write: half a record, no newline.
    let mut bytes = std::fs::read(&audit).unwrap();
    bytes.extend_from_slice(br#"{"seq":4,"time":"2026-"#);
    std::fs::write(&audit, &bytes).unwrap();

    let desk = open_desk(dir.path());
    let settings = desk.settings();
    assert_eq!(settings.audit_warnings.len(), 1, "{settings:?}");
    let warning = &settings.audit_warnings[0];
    assert_eq!(warning.code, gatehouse_audit::EVENT_TORN_TAIL);
    assert!(
        warning.message.contains("audit.jsonl.torn-4"),
        "names the side file: {}",
        warning.message
    );
    assert!(
        warning.message.contains("gatehouse audit verify"),
        "says what to do: {}",
        warning.message
    );
    let json = serde_json::to_value(&settings).unwrap();
    assert_eq!(
        json["auditWarnings"][0]["code"], "audit_torn_tail",
        "{json}"
    );
    assert_eq!(
        json["auditWarnings"][0]["message"],
        warning.message.as_str()
    );
    drop(desk);

    // The repair is done and recorded: the next start has nothing to report.
    assert!(warning_codes(&open_desk(dir.path())).is_empty());
}

#[test]
fn settings_report_an_audit_head_that_does_not_match_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let audit = audit_log_with_records(dir.path());
    std::fs::remove_file(gatehouse_audit::head_path(&audit)).unwrap();

    let desk = open_desk(dir.path());
    let settings = desk.settings();
    assert_eq!(
        warning_codes(&desk),
        [gatehouse_audit::EVENT_HEAD_MISMATCH],
        "{settings:?}"
    );
    let message = &settings.audit_warnings[0].message;
    assert!(message.contains("(missing)"), "{message}");
    assert!(message.contains("gatehouse audit verify"), "{message}");
}

#[test]
fn settings_have_no_audit_warning_for_a_new_or_clean_log() {
    let dir = tempfile::tempdir().unwrap();
    assert!(warning_codes(&open_desk(dir.path())).is_empty(), "new log");
    audit_log_with_records(dir.path());
    let desk = open_desk(dir.path());
    assert!(warning_codes(&desk).is_empty(), "clean log");
    let json = serde_json::to_value(desk.settings()).unwrap();
    assert_eq!(json["auditWarnings"], json!([]));
}

#[test]
fn a_policy_file_that_cannot_be_used_stops_the_desk_with_policy_invalid_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        open_with_policy(dir.path(), None).is_ok(),
        "shipped default"
    );

    let missing = dir.path().join("missing.toml");
    let error = open_with_policy(dir.path(), Some(missing.clone())).unwrap_err();
    assert_eq!(error.code.as_str(), "policy_invalid");
    assert!(
        error.message.contains(&missing.display().to_string()),
        "{}",
        error.message
    );

    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "this is = = not toml").unwrap();
    let error = open_with_policy(dir.path(), Some(broken.clone())).unwrap_err();
    assert_eq!(error.code.as_str(), "policy_invalid");
    assert!(error.message.contains("broken.toml"), "{}", error.message);

    // The shipped default, as a file, is accepted.
    let good = dir.path().join("default.toml");
    std::fs::write(&good, gatehouse_policy::policy::DEFAULT_POLICY_TOML).unwrap();
    open_with_policy(dir.path(), Some(good)).expect("the shipped policy as a file");
}

/// A keychain that records the thread of every call it gets.
#[derive(Default)]
struct ThreadRecordingStore {
    inner: MemoryStore,
    threads: std::sync::Mutex<Vec<std::thread::ThreadId>>,
}

impl SecretStore for ThreadRecordingStore {
    fn get(&self, name: &str) -> Result<Option<SecretValue>, HostError> {
        self.threads
            .lock()
            .unwrap()
            .push(std::thread::current().id());
        self.inner.get(name)
    }
    fn set(&self, name: &str, value: &SecretValue) -> Result<(), HostError> {
        self.threads
            .lock()
            .unwrap()
            .push(std::thread::current().id());
        self.inner.set(name, value)
    }
    fn delete(&self, name: &str) -> Result<(), HostError> {
        self.threads
            .lock()
            .unwrap()
            .push(std::thread::current().id());
        self.inner.delete(name)
    }
}

// A single-threaded runtime runs every task on this test's thread: a keychain call made
// there would stall the window and every gateway client while D-Bus answers.
#[tokio::test(flavor = "current_thread")]
async fn adding_and_importing_servers_call_the_keychain_off_the_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(ThreadRecordingStore::default());
    let host = Host::open(
        HostOptions::new(paths(dir.path()), clock()),
        store.clone(),
        no_consent(),
        Arc::new(|_| {}),
    )
    .expect("the host opens");
    host.add_server(NewServer {
        name: "remote".into(),
        kind: ServerKind::Http,
        command: None,
        args: Vec::new(),
        url: Some("https://mcp.example/mcp".into()),
        bearer_token: Some("tok".into()),
    })
    .await
    .expect("added");
    let imported = host
        .import_servers(
            r#"{"mcpServers": {"api": {"url": "https://api.example/mcp", "headers": {"Authorization": "Bearer tok123"}}}}"#,
            &[],
        )
        .await
        .expect("imported");
    assert_eq!(imported.secrets_moved.len(), 1, "{imported:?}");
    let runtime = std::thread::current().id();
    let threads = store.threads.lock().unwrap().clone();
    assert!(threads.len() >= 2, "{threads:?}");
    assert!(threads.iter().all(|t| *t != runtime), "{threads:?}");
    assert!(store.inner.get("remote-bearer").unwrap().is_some());
}

#[tokio::test]
async fn a_refused_replace_leaves_the_listed_servers_keychain_secret_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(crate::MemoryStore::default());
    let host = Host::open(
        HostOptions::new(paths(dir.path()), clock()),
        store.clone(),
        no_consent(),
        Arc::new(|_| {}),
    )
    .expect("the host opens");
    let spec = ServerSpec::adhoc_http("https://mcp.example/mcp").unwrap();
    host.add_server_entry(AddServer {
        bearer_token: Some("old".into()),
        ..AddServer::new("remote", spec.clone())
    })
    .await
    .expect("added");
    // Both an Authorization header and a bearer token: refused when read back.
    let refused = host
        .add_server_entry(AddServer {
            bearer_token: Some("new".into()),
            headers: vec![("Authorization".into(), "Bearer x".into())],
            replace: true,
            ..AddServer::new("remote", spec.clone())
        })
        .await
        .expect_err("an entry with two credentials is refused");
    assert!(refused.message.contains("Authorization"), "{refused}");
    let kept = store.get("remote-bearer").unwrap().expect("still stored");
    assert_eq!(kept.expose(), "old");
    // A valid replace does store the new token.
    host.add_server_entry(AddServer {
        bearer_token: Some("new".into()),
        replace: true,
        ..AddServer::new("remote", spec)
    })
    .await
    .expect("replaced");
    assert_eq!(store.get("remote-bearer").unwrap().unwrap().expose(), "new");
}

#[test]
fn an_ephemeral_host_keeps_its_state_in_a_scratch_directory_it_removes() {
    let options = HostOptions::ephemeral(clock()).expect("a scratch directory");
    let scratch = options
        .paths
        .data
        .parent()
        .expect("the data directory is in the scratch directory")
        .to_path_buf();
    let host = Host::open(
        options,
        Arc::new(MemoryStore::default()),
        no_consent(),
        Arc::new(|_| {}),
    )
    .expect("the host opens");
    let settings = host.settings();
    assert_eq!(settings.posture, gatehouse_attest::bundle::Posture::Warn);
    assert!(settings.bundles.is_empty(), "{settings:?}");
    let trust = host.trust_settings();
    assert!(trust.system_dir.starts_with(&scratch), "{trust:?}");
    assert!(trust.user_dir.is_none(), "{trust:?}");
    assert!(scratch.join("data").join("audit.jsonl").is_file());
    drop(host);
    assert!(!scratch.exists(), "removed with the host");
}

/// The by-name methods a one-shot command uses name the server they do not know, and a call
/// to one has no elicitations to show; the demo's answers are the CLI's tests.
#[tokio::test]
async fn the_by_name_methods_refuse_a_server_the_host_does_not_know() {
    let dir = tempfile::tempdir().unwrap();
    let host = open_desk(dir.path());
    let unknown = |error: ApiError| {
        assert_eq!(error.code, crate::ErrorCode::UnknownServer, "{error}");
        assert!(error.message.contains("nowhere"), "{error}");
    };
    unknown(host.with_verdict("nowhere", |_| ()).await.unwrap_err());
    unknown(host.server_summary("nowhere").await.unwrap_err());
    unknown(host.gated_tools("nowhere").await.unwrap_err());
    unknown(host.gated_prompts("nowhere").await.unwrap_err());
    unknown(host.gated_resources("nowhere").await.unwrap_err());
    let (outcome, records) = host
        .call_traced("nowhere", "echo", None, &crate::CallOptions::default())
        .await;
    unknown(outcome.unwrap_err());
    assert!(records.is_empty());
    let completion = host
        .completion_with(
            "nowhere",
            crate::CompletionTarget::Prompt("greet".into()),
            "name",
            "a",
            Default::default(),
            &crate::CallOptions::default(),
        )
        .await;
    unknown(completion.unwrap_err());
    host.shutdown().await;
}
