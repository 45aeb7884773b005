//! Trust as a long-lived host sees it: a locked admin bundle that front ends cannot widen, and
//! (below) bundles judged again at each admission.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gatehouse_desk::{Desk, DeskOptions, DeskPaths};
use gatehouse_host::admission::{Trust, TrustSettings};
use gatehouse_host::host::RowStatus;
use gatehouse_host::{Clock, MemoryStore};
use gatehouse_testkit as kit;
use gatehouse_testkit::bundles;
use serde_json::json;
use time::OffsetDateTime;
use time::macros::datetime;

const NOW: OffsetDateTime = datetime!(2026-11-24 12:00 UTC);

fn clock() -> Clock {
    Arc::new(|| NOW)
}

fn locked_admin_dir(dir: &Path) -> PathBuf {
    let admin = dir.join("admin");
    let mut signed = bundles::signed(json!([]));
    signed["locked"] = json!(true);
    bundles::install(&admin, &signed);
    admin
}

fn desk_paths(dir: &Path, admin: &Path) -> DeskPaths {
    DeskPaths {
        config: dir.join("servers.json"),
        data: dir.join("data"),
        logs: dir.join("logs"),
        user_trust_roots: None,
        system_trust_roots: admin.to_path_buf(),
    }
}

fn refused(options: DeskOptions) -> String {
    match open(options) {
        Ok(_) => panic!("the desk opened"),
        Err(error) => error,
    }
}

fn open(options: DeskOptions) -> Result<Arc<Desk>, String> {
    Desk::open(options, Arc::new(MemoryStore::default()), Arc::new(|_| {}))
        .map_err(|e| e.to_string())
}

#[test]
fn the_desk_refuses_demo_mode_and_a_user_policy_under_a_locked_admin_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let admin = locked_admin_dir(dir.path());
    let policy = dir.path().join("loose.toml");
    std::fs::write(&policy, gatehouse_policy::policy::DEFAULT_POLICY_TOML).unwrap();

    let mut demo = DeskOptions::new(desk_paths(dir.path(), &admin), clock());
    demo.demo = true;
    demo.demo_server = Some(PathBuf::from("/bin/sh"));
    let error = refused(demo);
    assert!(
        error.contains("locked_by_admin")
            && error.contains("test-bundle@1")
            && error.contains("--demo"),
        "{error}"
    );

    let mut with_policy = DeskOptions::new(desk_paths(dir.path(), &admin), clock());
    with_policy.policy = Some(policy.clone());
    let error = refused(with_policy);
    assert!(
        error.contains("locked_by_admin") && error.contains("GATEHOUSE_POLICY"),
        "{error}"
    );

    // Neither asked: the locked bundle decides and the desk opens.
    let desk = open(DeskOptions::new(desk_paths(dir.path(), &admin), clock()))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(desk.settings().locked_by.as_deref(), Some("test-bundle@1"));

    // Unlocked, the same policy is the user's to choose.
    let unlocked = dir.path().join("unlocked");
    bundles::install(&unlocked, &bundles::signed(json!([])));
    let mut options = DeskOptions::new(desk_paths(dir.path(), &unlocked), clock());
    options.policy = Some(policy);
    if let Err(error) = open(options) {
        panic!("{error}");
    }
}

#[test]
fn a_locked_admin_bundle_never_loads_the_demo_root_even_when_asked_to() {
    // The backstop behind the front ends' refusal: Trust itself drops the demo bundle.
    let dir = tempfile::tempdir().unwrap();
    let admin = locked_admin_dir(dir.path());
    let demo = gatehouse_host::demo::demo_bundle(Path::new("/bin/sh"), NOW).unwrap();
    let settings = TrustSettings {
        system_dir: admin,
        user_dir: None,
        posture_override: None,
        demo_bundle: Some(demo.clone()),
    };
    let trust = Trust::load(&settings, NOW);
    let labels: Vec<String> = trust.summaries().into_iter().map(|b| b.bundle).collect();
    assert_eq!(labels, ["test-bundle@1"]);
    let codes: Vec<&str> = trust.problems().iter().map(|p| p.code).collect();
    assert_eq!(codes, ["demo_ignored_locked"]);
    assert_eq!(trust.locked_by(), Some("test-bundle@1"));
    assert!(
        trust.posture_reason().contains("locked"),
        "{}",
        trust.posture_reason()
    );

    // Without the lock the demo bundle loads.
    let open_dir = dir.path().join("open");
    bundles::install(&open_dir, &bundles::signed(json!([])));
    let trust = Trust::load(
        &TrustSettings {
            system_dir: open_dir,
            ..settings
        },
        NOW,
    );
    assert!(trust.problems().is_empty(), "{:?}", trust.problems());
    assert_eq!(trust.summaries().len(), 2);
}

// ---------------------------------------------------------------------------------------------
// A running desk judges the installed bundles at each admission.

const ID: &str = "urn:test:weather";

/// A desk whose clock the test moves, with one configured stdio server, "weather": a copy of
/// the demo server that the admin bundle binds.
struct Running {
    dir: tempfile::TempDir,
    admin: PathBuf,
    program: PathBuf,
    now: Arc<std::sync::Mutex<OffsetDateTime>>,
    desk: Arc<Desk>,
}

impl Running {
    fn start(signed: &serde_json::Value) -> Running {
        Self::start_with(signed, |_, _| {})
    }

    /// [`Running::start`], with the desk's options edited first (`dir`: the test's directory).
    fn start_with(
        signed: &serde_json::Value,
        edit: impl FnOnce(&Path, &mut DeskOptions),
    ) -> Running {
        let dir = tempfile::tempdir().unwrap();
        let admin = dir.path().join("admin");
        let program = dir.path().join("weather-mcp");
        std::fs::copy(kit::demo::server(), &program).unwrap();
        let mut signed = signed.clone();
        signed["servers"] = Self::servers(&program, &signed["servers"]);
        bundles::install(&admin, &signed);
        std::fs::write(
            dir.path().join("servers.json"),
            serde_json::to_vec(&json!({"mcpServers": {"weather": {"command": program}}})).unwrap(),
        )
        .unwrap();
        let now = Arc::new(std::sync::Mutex::new(NOW));
        let clock_now = now.clone();
        let clock: Clock = Arc::new(move || *clock_now.lock().unwrap());
        let mut options = DeskOptions::new(desk_paths(dir.path(), &admin), clock);
        edit(dir.path(), &mut options);
        let desk = open(options).unwrap_or_else(|e| panic!("{e}"));
        Running {
            dir,
            admin,
            program,
            now,
            desk,
        }
    }

    /// `servers` with "BIND" replaced by the binding of the copied demo server ("BIND_TWIN":
    /// the same binding under another id).
    fn servers(program: &Path, servers: &serde_json::Value) -> serde_json::Value {
        let sha256: String = gatehouse_host::admission::file_sha256(program)
            .unwrap()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let entry = bundles::stdio_entry(
            ID,
            &program.display().to_string(),
            &sha256,
            bundles::attestation(ID, None),
        );
        let mut twin = entry.clone();
        twin["id"] = json!("urn:test:twin");
        twin["stdio"]["attestation"] = bundles::attestation("urn:test:twin", None);
        json!(
            servers
                .as_array()
                .unwrap()
                .iter()
                .map(|s| match s.as_str() {
                    Some("BIND") => entry.clone(),
                    Some("BIND_TWIN") => twin.clone(),
                    _ => s.clone(),
                })
                .collect::<Vec<_>>()
        )
    }

    /// Installs a new version of the bundle while the desk runs.
    fn rotate(&self, signed: &serde_json::Value) {
        let mut signed = signed.clone();
        signed["servers"] = Self::servers(&self.program, &signed["servers"]);
        bundles::install(&self.admin, &signed);
    }

    async fn reconnect(&self) -> gatehouse_desk::ServerDetail {
        self.desk
            .connect("weather")
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn reloads(&self) -> Vec<serde_json::Value> {
        self.records("trust_reloaded")
    }

    fn records(&self, event: &str) -> Vec<serde_json::Value> {
        kit::audit::records_of(&self.dir.path().join("data").join("audit.jsonl"), event)
    }
}

fn version(n: u64, servers: serde_json::Value) -> serde_json::Value {
    let mut signed = bundles::signed(servers);
    signed["version"] = json!(n);
    signed
}

#[tokio::test]
async fn a_rotation_installed_while_the_desk_runs_applies_at_the_next_admission() {
    let running = Running::start(&version(1, json!(["BIND"])));
    let detail = running.reconnect().await;
    assert_eq!(detail.row.status, RowStatus::Admitted, "{:?}", detail.row);
    assert_eq!(
        detail.banner.as_ref().unwrap().bundle.as_deref(),
        Some("test-bundle@1")
    );
    assert!(running.reloads().is_empty(), "nothing changed yet");

    // Version 2 drops the server: the next admission refuses it.
    running.rotate(&version(2, json!([])));
    let detail = running.reconnect().await;
    assert_ne!(detail.row.status, RowStatus::Admitted, "{:?}", detail.row);
    assert!(!detail.row.connected);
    let reloads = running.reloads();
    assert_eq!(reloads.len(), 1, "{reloads:?}");
    assert_eq!(
        reloads[0]["data"]["after"]["bundles"][0]["bundle"],
        "test-bundle@2"
    );
    assert_eq!(running.desk.settings().bundles[0].bundle, "test-bundle@2");

    // Version 3 binds it again and adds `locked`: admitted, and the lock is in force.
    let mut v3 = version(3, json!(["BIND"]));
    v3["locked"] = json!(true);
    running.rotate(&v3);
    let detail = running.reconnect().await;
    assert_eq!(detail.row.status, RowStatus::Admitted, "{:?}", detail.row);
    assert_eq!(
        running.desk.settings().locked_by.as_deref(),
        Some("test-bundle@3")
    );

    // Version 4 replaces the signer key the attestation is signed with by another.
    let mut v4 = version(4, json!(["BIND"]));
    let other = ed25519_dalek::SigningKey::from_bytes(&[33; 32]);
    v4["keys"] = json!([{"id": "signer-2027", "publicKey": bundles::b64(&other),
        "notAfter": "2099-01-01T00:00:00Z", "approvedClearances": ["public", "internal"]}]);
    running.rotate(&v4);
    let detail = running.reconnect().await;
    assert_eq!(detail.row.status, RowStatus::Refused, "{:?}", detail.row);
    assert_eq!(
        detail.row.reason.as_ref().unwrap().code,
        "signer_not_trusted",
        "{:?}",
        detail.row
    );
    assert_eq!(running.reloads().len(), 3);
    running.desk.shutdown().await;
}

#[tokio::test]
async fn a_bundle_that_expires_while_the_desk_runs_stops_admitting() {
    let mut v1 = version(1, json!(["BIND"]));
    v1["expires"] = json!("2026-12-01T00:00:00Z");
    let running = Running::start(&v1);
    let detail = running.reconnect().await;
    assert_eq!(detail.row.status, RowStatus::Admitted, "{:?}", detail.row);

    // No file changed; only time passed.
    *running.now.lock().unwrap() = datetime!(2026-12-01 00:00:01 UTC);
    let detail = running.reconnect().await;
    assert_ne!(detail.row.status, RowStatus::Admitted, "{:?}", detail.row);
    let settings = running.desk.settings();
    assert!(settings.bundles.is_empty(), "{:?}", settings.bundles);
    assert!(
        settings.problems.iter().any(|p| p.code.contains("expired")),
        "{:?}",
        settings.problems
    );
    let reloads = running.reloads();
    assert_eq!(reloads.len(), 1, "{reloads:?}");
    running.desk.shutdown().await;
}

#[tokio::test]
async fn a_bound_server_may_not_set_what_changes_what_runs() {
    let running = Running::start(&version(1, json!(["BIND"])));
    let config = running.dir.path().join("servers.json");
    let program = running.program.display().to_string();
    for (entry, admitted) in [
        (
            json!({"command": program, "env": {"LOG_LEVEL": "debug"}}),
            true,
        ),
        (
            json!({"command": program, "env": {"NODE_OPTIONS": "--require /tmp/evil.js"}}),
            false,
        ),
        (
            json!({"command": program, "env": {"LD_PRELOAD": "/tmp/evil.so"}}),
            false,
        ),
        (
            json!({"command": program, "env": {"PATH": "/tmp/evil:/usr/bin"}}),
            false,
        ),
        (json!({"command": program, "cwd": "/tmp"}), false),
        // What a launcher fetches and runs (`npx`, `uvx`, `docker run`) and where it reads
        // its configuration from.
        (
            json!({"command": program, "env": {"npm_config_registry": "https://evil.example/"}}),
            false,
        ),
        (
            json!({"command": program, "env": {"UV_INDEX_URL": "https://evil.example/simple"}}),
            false,
        ),
        (
            json!({"command": program, "env": {"HOME": "/tmp/evil-home"}}),
            false,
        ),
        (
            json!({"command": program, "env": {"DOCKER_HOST": "tcp://evil.example:2375"}}),
            false,
        ),
        (
            json!({"command": program, "env": {"GITHUB_TOKEN": "t", "PYTHONUNBUFFERED": "1"}}),
            true,
        ),
    ] {
        std::fs::write(
            &config,
            serde_json::to_vec(&json!({"mcpServers": {"weather": entry}})).unwrap(),
        )
        .unwrap();
        let detail = running.reconnect().await;
        if admitted {
            assert_eq!(
                detail.row.status,
                RowStatus::Admitted,
                "{entry}: {:?}",
                detail.row
            );
        } else {
            assert_eq!(
                detail.row.status,
                RowStatus::Refused,
                "{entry}: {:?}",
                detail.row
            );
            let reason = detail.row.reason.as_ref().unwrap();
            assert_eq!(reason.code, "stdio_binding_mismatch", "{entry}");
            let setting = entry["env"]
                .as_object()
                .and_then(|e| e.keys().next().cloned())
                .unwrap_or_else(|| "cwd".into());
            assert!(reason.detail.contains(&setting), "{}", reason.detail);
        }
    }
    running.desk.shutdown().await;
}

#[tokio::test]
async fn one_command_bound_under_two_ids_is_refused_not_first_wins() {
    // Within one bundle: admission finds two identities for the same command line.
    let running = Running::start(&version(1, json!(["BIND", "BIND_TWIN"])));
    let settings = running.desk.settings();
    assert!(settings.problems.is_empty(), "{:?}", settings.problems);
    let detail = running.reconnect().await;
    assert_eq!(detail.row.status, RowStatus::Refused, "{:?}", detail.row);
    let reason = detail.row.reason.as_ref().unwrap();
    assert_eq!(reason.code, "stdio_binding_mismatch");
    assert!(
        reason.detail.contains("more than one server id")
            && reason.detail.contains(ID)
            && reason.detail.contains("urn:test:twin"),
        "{}",
        reason.detail
    );
    running.desk.shutdown().await;

    // Across two installed bundles: they cannot be combined, whichever loads first.
    let dir = tempfile::tempdir().unwrap();
    let admin = dir.path().join("admin");
    let binding = |id: &str| {
        bundles::stdio_entry(
            id,
            "/opt/acme/weather-mcp",
            &"00".repeat(32),
            bundles::attestation(id, None),
        )
    };
    bundles::install(&admin, &bundles::signed(json!([binding(ID)])));
    let mut other = bundles::signed(json!([binding("urn:test:twin")]));
    other["bundleId"] = json!("other-bundle");
    let bytes = serde_json::to_vec(&json!({
        "signed": other,
        "signatures": [gatehouse_attest::bundle::sign_bundle(&other, "root", &bundles::root_key()).unwrap()],
    }))
    .unwrap();
    std::fs::write(admin.join("other-bundle.json"), bytes).unwrap();
    let trust = Trust::load(
        &TrustSettings {
            system_dir: admin,
            user_dir: None,
            posture_override: None,
            demo_bundle: None,
        },
        NOW,
    );
    assert!(trust.summaries().is_empty(), "{:?}", trust.summaries());
    let problems: Vec<String> = trust.problems().iter().map(|p| p.message.clone()).collect();
    assert!(
        problems.iter().any(|m| m.contains("is bound as")),
        "{problems:?}"
    );
}

#[tokio::test]
async fn a_lock_installed_while_the_desk_runs_refuses_the_user_policy_it_was_started_with() {
    // The desk started with the user's own elicitation policy, allowed then (no lock). The
    // admins then install a locked version: from the next admission on, that policy is a
    // widening of a locked bundle, refused like at start, not kept until a restart.
    let with_policy = |dir: &Path, options: &mut DeskOptions| {
        let policy = dir.join("loose.toml");
        std::fs::write(&policy, gatehouse_policy::policy::DEFAULT_POLICY_TOML).unwrap();
        options.policy = Some(policy);
    };
    let running = Running::start_with(&version(1, json!(["BIND"])), with_policy);
    let detail = running.reconnect().await;
    assert_eq!(detail.row.status, RowStatus::Admitted, "{:?}", detail.row);

    let mut locked = version(2, json!(["BIND"]));
    locked["locked"] = json!(true);
    running.rotate(&locked);
    let detail = running.reconnect().await;
    assert!(!detail.row.connected, "{:?}", detail.row);
    let reason = detail.row.reason.as_ref().unwrap();
    assert_eq!(reason.code, "locked_by_admin", "{:?}", detail.row);
    assert!(
        reason.detail.contains("test-bundle@2") && reason.detail.contains("GATEHOUSE_POLICY"),
        "{}",
        reason.detail
    );
    let refusals = running.records("lock_refused");
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert_eq!(refusals[0]["data"]["code"], "locked_by_admin");
    running.desk.shutdown().await;

    // The same rotation under a desk started without a policy of the user's: admitted.
    let running = Running::start(&version(1, json!(["BIND"])));
    running.rotate(&locked);
    let detail = running.reconnect().await;
    assert_eq!(detail.row.status, RowStatus::Admitted, "{:?}", detail.row);
    assert!(running.records("lock_refused").is_empty());
    running.desk.shutdown().await;
}

#[test]
fn a_locked_admin_bundle_that_no_longer_verifies_still_locks() {
    // The admins' locked bundle expires (nobody rotated it in time). It admits nothing any
    // more, but the lock is not lifted with it: whether the admins meant to lift it is
    // unknown, so the user's own roots, the demo root, other trust roots and a user policy
    // stay refused.
    const LATER: OffsetDateTime = datetime!(2026-12-02 12:00 UTC);
    let dir = tempfile::tempdir().unwrap();
    let admin = dir.path().join("admin");
    let mut locked = bundles::signed(json!([]));
    locked["locked"] = json!(true);
    locked["expires"] = json!("2026-12-01T00:00:00Z");
    bundles::install(&admin, &locked);
    let user = dir.path().join("user");
    let mut own = bundles::signed(json!([]));
    own["bundleId"] = json!("users-own");
    bundles::install(&user, &own);
    let demo = gatehouse_host::demo::demo_bundle(Path::new("/bin/sh"), LATER).unwrap();
    let settings = TrustSettings {
        system_dir: admin.clone(),
        user_dir: Some(user.clone()),
        posture_override: Some(gatehouse_attest::bundle::Posture::Warn),
        demo_bundle: Some(demo),
    };

    let trust = Trust::load(&settings, LATER);
    assert!(trust.summaries().is_empty(), "{:?}", trust.summaries());
    assert_eq!(trust.locked_by(), Some("test-bundle@1"));
    assert_eq!(
        trust.posture(),
        gatehouse_attest::bundle::Posture::DenyByDefault
    );
    let mut codes: Vec<&str> = trust.problems().iter().map(|p| p.code).collect();
    codes.sort();
    assert_eq!(
        codes,
        [
            "bundle_expired",
            "bundle_ignored_locked",
            "demo_ignored_locked"
        ]
    );

    let asked = gatehouse_host::admission::Widening {
        trust_roots: Some(user.clone()),
        demo: true,
        policy: Some(dir.path().join("loose.toml")),
    };
    let error =
        gatehouse_host::admission::refuse_widening_under_lock(&admin, &asked, LATER).unwrap_err();
    assert_eq!(error.code().as_str(), "locked_by_admin");
    let message = error.to_string();
    assert!(
        message.contains("test-bundle@1")
            && message.contains("bundle_expired")
            && message.contains("--trust-roots")
            && message.contains("--demo")
            && message.contains("GATEHOUSE_POLICY"),
        "{message}"
    );
    let mut options = DeskOptions::new(desk_paths(dir.path(), &admin), Arc::new(|| LATER));
    options.policy = Some(dir.path().join("loose.toml"));
    std::fs::write(
        dir.path().join("loose.toml"),
        gatehouse_policy::policy::DEFAULT_POLICY_TOML,
    )
    .unwrap();
    let error = refused(options);
    assert!(error.contains("locked_by_admin"), "{error}");

    // Still valid, the same bundle locks as before.
    assert!(gatehouse_host::admission::refuse_widening_under_lock(&admin, &asked, NOW).is_err());

    // An expired bundle that was not locked locks nothing.
    let open_dir = dir.path().join("expired-open");
    let mut unlocked = locked.clone();
    unlocked["locked"] = json!(false);
    bundles::install(&open_dir, &unlocked);
    gatehouse_host::admission::refuse_widening_under_lock(&open_dir, &asked, LATER)
        .unwrap_or_else(|e| panic!("{e}"));

    // A stale locked copy next to the current, unlocked version of the same bundle (recorded
    // as installed) is an old version, not the admins' word: no lock.
    let rotated = dir.path().join("rotated");
    let mut v1 = bundles::signed(json!([]));
    v1["locked"] = json!(true);
    bundles::install(&rotated, &v1);
    std::fs::rename(
        rotated.join("test-bundle.json"),
        rotated.join("old-copy.json"),
    )
    .unwrap();
    let mut v2 = bundles::signed(json!([]));
    v2["version"] = json!(2);
    let path = bundles::install(&rotated, &v2);
    let installed = gatehouse_attest::bundle::Bundle::parse(&std::fs::read(path).unwrap())
        .unwrap()
        .verify(NOW, None, None)
        .unwrap();
    gatehouse_host::admission::record_version(&rotated, &installed).unwrap();
    gatehouse_host::admission::refuse_widening_under_lock(&rotated, &asked, NOW)
        .unwrap_or_else(|e| panic!("{e}"));
    let trust = Trust::load(
        &TrustSettings {
            system_dir: rotated,
            ..settings
        },
        NOW,
    );
    assert_eq!(trust.locked_by(), None);
    let codes: Vec<&str> = trust.problems().iter().map(|p| p.code).collect();
    assert_eq!(codes, ["bundle_rollback"]);
}

#[tokio::test]
async fn a_changed_bundle_is_judged_as_installed_even_under_the_same_version_and_servers() {
    // What a summary shows (label, servers, signers, expiry) stays the same; the binding's
    // hash changes (a bundle hand-copied over the installed one, with no versions record to
    // refuse it). Admission decides with the bundle on disk, not the one it loaded first.
    let running = Running::start(&version(1, json!(["BIND"])));
    let detail = running.reconnect().await;
    assert_eq!(detail.row.status, RowStatus::Admitted, "{:?}", detail.row);

    let mut same_label = version(1, json!(["BIND"]));
    same_label["servers"] = Running::servers(&running.program, &same_label["servers"]);
    same_label["servers"][0]["stdio"]["sha256"] = json!("ab".repeat(32));
    bundles::install(&running.admin, &same_label);
    let detail = running.reconnect().await;
    assert_eq!(detail.row.status, RowStatus::Refused, "{:?}", detail.row);
    assert_eq!(detail.row.reason.as_ref().unwrap().code, "binary_changed");
    let reloads = running.reloads();
    assert_eq!(reloads.len(), 1, "{reloads:?}");
    assert_ne!(
        reloads[0]["data"]["before"]["sha256"],
        reloads[0]["data"]["after"]["sha256"]
    );
    running.desk.shutdown().await;
}

#[tokio::test]
async fn a_bundle_that_requires_sync_audit_applies_at_start_and_when_installed_while_running() {
    // Version 1 says nothing: the shipped policy's batched mode.
    let running = Running::start(&version(1, json!(["BIND"])));
    let setting = running.desk.settings().audit;
    assert_eq!(setting.durability, gatehouse_audit::Durability::batched());
    assert_eq!(setting.set_by, ["policy"]);

    // Version 2 (specVersion 3) requires sync: the next admission switches the log, records
    // the change, and every record from then on is anchored before its decision takes effect.
    let mut v2 = version(2, json!(["BIND"]));
    v2["specVersion"] = json!(3);
    v2["audit"] = json!({"durability": "sync"});
    running.rotate(&v2);
    let detail = running.reconnect().await;
    assert_eq!(detail.row.status, RowStatus::Admitted, "{:?}", detail.row);
    let changes = running.records("durability_changed");
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["data"]["before"]["mode"], "batched");
    assert_eq!(changes[0]["data"]["after"], json!({"mode": "sync"}));
    assert_eq!(
        changes[0]["data"]["set_by"],
        json!(["policy", "test-bundle@2"])
    );
    let setting = running.desk.settings().audit;
    assert_eq!(setting.durability, gatehouse_audit::Durability::Sync);
    let log = running.dir.path().join("data").join("audit.jsonl");
    let head: serde_json::Value =
        serde_json::from_slice(&std::fs::read(log.with_file_name("audit.jsonl.head")).unwrap())
            .unwrap();
    let last = std::fs::read_to_string(&log).unwrap().lines().count() as u64;
    assert_eq!(head["seq"], last, "sync: the head anchors the last record");

    // Version 3 drops the requirement: back to the policy's batched mode, recorded again.
    running.rotate(&version(3, json!(["BIND"])));
    running.reconnect().await;
    assert_eq!(running.records("durability_changed").len(), 2);
    assert_eq!(
        running.desk.settings().audit.durability,
        gatehouse_audit::Durability::batched()
    );
    // Batched again: records after the head's anchor, and a marker while it runs.
    let markers = |dir: &Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                let name = name.to_string_lossy();
                name.starts_with("audit.jsonl.batched-") && !name.ends_with(".tmp")
            })
            .count()
    };
    let data = running.dir.path().join("data");
    if cfg!(target_os = "linux") {
        assert_eq!(markers(&data), 1);
    }
    // Shutting down (what the app does on exit, without dropping the desk) makes every
    // record durable and leaves no marker behind.
    running.desk.shutdown().await;
    let head: serde_json::Value =
        serde_json::from_slice(&std::fs::read(log.with_file_name("audit.jsonl.head")).unwrap())
            .unwrap();
    let last = std::fs::read_to_string(&log).unwrap().lines().count() as u64;
    assert_eq!(head["seq"], last);
    assert_eq!(markers(&data), 0);

    // A desk started under a sync bundle opens the log in sync at once.
    let running = Running::start(&v2);
    assert_eq!(
        running.desk.settings().audit.durability,
        gatehouse_audit::Durability::Sync
    );
    assert!(running.records("durability_changed").is_empty());
    running.desk.shutdown().await;
}
