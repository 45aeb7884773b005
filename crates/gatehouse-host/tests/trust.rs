//! Trust as a long-lived host sees it: a locked admin bundle that front ends cannot widen, and
//! (below) bundles judged again at each admission.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::bundles;
use gatehouse_host::admission::{Trust, TrustSettings};
use gatehouse_host::desk::{Desk, DeskOptions, DeskPaths};
use gatehouse_host::{Clock, MemoryStore};
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
