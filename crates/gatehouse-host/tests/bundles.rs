//! `Host::install_bundle`: the host decides a trust-root bundle's install (threshold,
//! rotation, rollback), records the decision with the typed payloads, and writes only what
//! it accepted.

use std::path::{Path, PathBuf};

use gatehouse_attest::bundle::sign_bundle;
use gatehouse_host::audit_event::bundle::{BundleAccepted, BundleRefused};
use gatehouse_host::audit_event::read_payload;
use gatehouse_host::host::Host;
use gatehouse_host::tap::system_clock;
use gatehouse_testkit::bundles::{root_key, signed};
use serde_json::{Value, json};
use time::OffsetDateTime;

struct Admin {
    dir: tempfile::TempDir,
}

impl Admin {
    fn new() -> Admin {
        Admin {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn trust_roots(&self) -> PathBuf {
        self.dir.path().join("trust-roots")
    }
    fn audit(&self) -> PathBuf {
        self.dir.path().join("audit.jsonl")
    }
    /// Writes a bundle file to install (outside the admin directory), signed over `signed`
    /// by the root key, or over `signature_over` when a test forges one.
    fn bundle_file(&self, name: &str, signed: &Value, signature_over: &Value) -> PathBuf {
        let signature = sign_bundle(signature_over, "root", &root_key()).unwrap();
        let path = self.dir.path().join(name);
        let bundle = json!({"signed": signed, "signatures": [signature]});
        std::fs::write(&path, serde_json::to_vec_pretty(&bundle).unwrap()).unwrap();
        path
    }
    fn install(&self, file: &Path) -> Result<BundleAccepted, gatehouse_host::host::ApiError> {
        Host::install_bundle(
            file,
            &self.trust_roots(),
            &self.audit(),
            OffsetDateTime::now_utc(),
            system_clock(),
        )
    }
    fn records(&self) -> Vec<Value> {
        gatehouse_testkit::audit::records(&self.audit())
    }
}

fn version(n: u64) -> Value {
    let mut bundle = signed(json!([]));
    bundle["version"] = json!(n);
    bundle
}

#[test]
fn a_good_bundle_is_recorded_then_written() {
    let admin = Admin::new();
    let file = admin.bundle_file("v1.json", &version(1), &version(1));
    let accepted = admin.install(&file).unwrap();
    let target = admin.trust_roots().join("test-bundle.json");
    assert_eq!(accepted.bundle, "test-bundle@1");
    assert_eq!(accepted.signers, vec!["root".to_string()]);
    assert_eq!(accepted.replaces, None);
    assert_eq!(accepted.into, target);
    // The bytes verified are the bytes written.
    assert_eq!(
        std::fs::read(&target).unwrap(),
        std::fs::read(&file).unwrap()
    );
    assert!(admin.trust_roots().join(".versions.json").exists());
    let records = admin.records();
    assert_eq!(records.len(), 1);
    let record: BundleAccepted = read_payload(&records[0]).unwrap().unwrap();
    assert_eq!(record, accepted);
    // The log's format is what it was: exactly these fields.
    let keys: Vec<&str> = records[0]["data"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["bundle", "signers", "sha256", "replaces", "into"]);

    // A rotation names what it replaces.
    let file = admin.bundle_file("v2.json", &version(2), &version(2));
    let accepted = admin.install(&file).unwrap();
    assert_eq!(accepted.replaces.as_deref(), Some("test-bundle@1"));
}

#[test]
fn a_rollback_is_refused_recorded_and_not_written() {
    let admin = Admin::new();
    let v1 = admin.bundle_file("v1.json", &version(1), &version(1));
    let v2 = admin.bundle_file("v2.json", &version(2), &version(2));
    admin.install(&v1).unwrap();
    admin.install(&v2).unwrap();
    let installed = std::fs::read(admin.trust_roots().join("test-bundle.json")).unwrap();
    let refusal = admin.install(&v1).unwrap_err();
    assert_eq!(refusal.code.as_str(), "bundle_rollback");
    assert!(refusal.refusal, "a rollback is a refusal (exit 1)");
    assert_eq!(
        std::fs::read(admin.trust_roots().join("test-bundle.json")).unwrap(),
        installed
    );
    let records = admin.records();
    assert_eq!(records.len(), 3);
    let record: BundleRefused = read_payload(&records[2]).unwrap().unwrap();
    assert_eq!(
        record,
        BundleRefused {
            bundle_id: Some("test-bundle".into()),
            version: Some(1),
            installed: Some("test-bundle@2".into()),
            highest_seen: Some(2),
            file: v1,
            into: admin.trust_roots(),
            reason: gatehouse_host::ErrorCode::BundleRollback,
            detail: refusal.message,
        }
    );
    let keys: Vec<&str> = records[2]["data"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "bundle_id",
            "version",
            "installed",
            "highest_seen",
            "file",
            "into",
            "reason",
            "detail"
        ]
    );
}

#[test]
fn a_bad_signature_is_refused_recorded_and_not_written() {
    let admin = Admin::new();
    // Version 2's content under version 1's signature.
    let forged = admin.bundle_file("forged.json", &version(2), &version(1));
    let refusal = admin.install(&forged).unwrap_err();
    assert!(refusal.refusal, "{refusal:?}");
    assert!(refusal.code.as_str().starts_with("bundle_"), "{refusal:?}");
    assert!(!admin.trust_roots().join("test-bundle.json").exists());
    assert!(!admin.trust_roots().join(".versions.json").exists());
    let records = admin.records();
    assert_eq!(records.len(), 1);
    let record: BundleRefused = read_payload(&records[0]).unwrap().unwrap();
    assert_eq!(record.reason, refusal.code);
    assert_eq!(record.bundle_id.as_deref(), Some("test-bundle"));
    assert_eq!(record.version, Some(2));
    assert_eq!(record.installed, None);
    assert_eq!(record.highest_seen, None);
}
