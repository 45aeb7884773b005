//! The admin workflow of trust-roots/README.md through the real binary, as an admin runs it:
//! keygen → init → sign by threshold → verify → install → rotate, and what a host then loads:
//! rollback and reuse refused (also after the installed file is gone), threshold and expiry,
//! the audit records of every install, a locked bundle over `--posture` and user trust roots,
//! a corrupt admin bundle forcing deny-by-default. And the README's commands are the CLI's.
//!
//! Every command runs with `GATEHOUSE_TRUST_ROOTS` at a temporary admin directory, `--audit` at
//! a temporary log, and `XDG_CONFIG_HOME`/`XDG_DATA_HOME` inside the test's own HOME.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Env, repo};
use gatehouse_host::ErrorCode;
use gatehouse_host::audit_event::EventPayload;
use gatehouse_host::audit_event::bundle::{BundleAccepted, BundleRefused};
use gatehouse_testkit::audit::payloads_in;
use serde_json::{Value, json};

/// An admin's working directory and one host's state, all under one temporary HOME.
struct Admin {
    env: Env,
}

impl Admin {
    fn new() -> Admin {
        Admin { env: Env::new() }
    }

    fn home(&self) -> &Path {
        self.env.dir.path()
    }

    /// A path in the working directory, as a string for the command line.
    fn path(&self, name: &str) -> String {
        self.home().join(name).display().to_string()
    }

    /// The admin trust-roots directory (what /etc/gatehouse/trust-roots is on a real host).
    fn trust_roots(&self) -> PathBuf {
        self.home().join("etc-gatehouse-trust-roots")
    }

    /// The user's own trust roots: $XDG_CONFIG_HOME/gatehouse/trust-roots.
    fn user_trust_roots(&self) -> PathBuf {
        self.home().join(".config/gatehouse/trust-roots")
    }

    fn installed(&self, bundle_id: &str) -> PathBuf {
        self.trust_roots().join(format!("{bundle_id}.json"))
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let audit = self.path("audit.jsonl");
        let mut all = vec!["--audit", audit.as_str()];
        all.extend_from_slice(args);
        let mut cmd = self.env.cmd(&all);
        cmd.env("GATEHOUSE_TRUST_ROOTS", self.trust_roots())
            .env("XDG_CONFIG_HOME", self.home().join(".config"))
            .env("XDG_DATA_HOME", self.home().join(".local/share"))
            .env_remove("GATEHOUSE_POSTURE")
            .env_remove("GATEHOUSE_AUDIT");
        cmd
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        common::output_of(self.cmd(args))
    }

    fn json(&self, args: &[&str]) -> (i32, Value) {
        common::json_of(|all| self.run(all), args)
    }

    fn ok(&self, args: &[&str]) -> Value {
        let (code, out) = self.json(args);
        assert_eq!(code, 0, "{args:?}: {out}");
        out
    }

    /// `bundle keygen --out keys --id ID`.
    fn keygen(&self, id: &str) {
        self.ok(&["bundle", "keygen", "--out", &self.path("keys"), "--id", id]);
    }

    fn public(&self, id: &str) -> String {
        self.path(&format!("keys/{id}.pub.json"))
    }

    /// `bundle init` with these root keys, threshold and extra options, signer key "signer".
    fn init(&self, bundle_id: &str, out: &str, roots: &[&str], threshold: u64, extra: &[&str]) {
        let (signer, threshold, out) =
            (self.public("signer"), threshold.to_string(), self.path(out));
        let publics: Vec<String> = roots.iter().map(|id| self.public(id)).collect();
        let mut args = vec!["bundle", "init", "--bundle-id", bundle_id];
        for public in &publics {
            args.extend(["--root-key", public.as_str()]);
        }
        args.extend([
            "--threshold",
            threshold.as_str(),
            "--signer-key",
            signer.as_str(),
            "--out",
            out.as_str(),
        ]);
        args.extend_from_slice(extra);
        self.ok(&args);
    }

    /// `bundle sign --key keys/ID.key FILE`, once per key.
    fn sign(&self, file: &str, keys: &[&str]) {
        for id in keys {
            let key = self.path(&format!("keys/{id}.key"));
            let out = self.ok(&["bundle", "sign", "--key", &key, &self.path(file)]);
            assert_eq!(out["signed_by"], *id);
        }
    }

    /// A new unsigned version: `from` with `edit` applied to `signed` and no signatures.
    fn derive(&self, from: &str, to: &str, edit: impl FnOnce(&mut Value)) {
        let mut bundle: Value =
            serde_json::from_str(&std::fs::read_to_string(self.path(from)).unwrap()).unwrap();
        edit(&mut bundle["signed"]);
        bundle["signatures"] = json!([]);
        std::fs::write(
            self.path(to),
            serde_json::to_string_pretty(&bundle).unwrap(),
        )
        .unwrap();
    }

    fn public_key(&self, id: &str) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.public(id)).unwrap()).unwrap()
    }

    fn install(&self, file: &str, extra: &[&str]) -> (i32, Value) {
        let path = self.path(file);
        let mut args = vec!["bundle", "install", path.as_str()];
        args.extend_from_slice(extra);
        self.json(&args)
    }

    fn trust(&self, extra: &[&str]) -> Value {
        let mut args = extra.to_vec();
        args.push("trust");
        self.ok(&args)
    }

    /// `audit show --type EVENT --json`, for `P`'s event: the records' data as `P`.
    fn audit<P: EventPayload>(&self) -> Vec<P> {
        let event = P::EVENT.as_str();
        let out = self.ok(&["audit", "show", "--type", event]);
        let records = out["records"].as_array().unwrap();
        for r in records {
            assert_eq!(r["event"], event);
        }
        payloads_in(records)
    }
}

fn error_code(out: &Value) -> Option<&str> {
    out["error"]["code"].as_str()
}

fn bundle_labels(trust: &Value) -> Vec<String> {
    trust["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            format!(
                "{}:{}",
                b["bundle"].as_str().unwrap(),
                b["source"].as_str().unwrap()
            )
        })
        .collect()
}

fn problem_codes(trust: &Value) -> Vec<(String, String)> {
    trust["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["source"].as_str().unwrap().to_string(),
                p["code"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn install_rotate_and_refuse_rollback_as_the_readme_does() {
    let admin = Admin::new();
    for id in ["admin-a", "admin-b", "admin-c", "signer"] {
        admin.keygen(id);
    }
    admin.init(
        "acme",
        "acme-v1.json",
        &["admin-a", "admin-b", "admin-c"],
        2,
        &[],
    );
    admin.sign("acme-v1.json", &["admin-a", "admin-b"]);
    let out = admin.ok(&["bundle", "verify", &admin.path("acme-v1.json")]);
    assert_eq!(out["bundle"], "acme@1");

    // Install: exit 0, written as <bundleId>.json, the version recorded, listed by `trust`.
    let (code, out) = admin.install("acme-v1.json", &[]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["installed"], "acme@1");
    assert_eq!(out["signers"], json!(["admin-a", "admin-b"]));
    assert_eq!(
        std::fs::read(admin.installed("acme")).unwrap(),
        std::fs::read(admin.path("acme-v1.json")).unwrap(),
        "installed byte for byte"
    );
    let trust = admin.trust(&[]);
    assert_eq!(bundle_labels(&trust), ["acme@1:system"], "{trust}");
    assert_eq!(
        trust["bundles"][0]["signers"],
        json!(["admin-a", "admin-b"])
    );
    assert_eq!(trust["posture"], "deny-by-default");
    assert_eq!(trust["problems"], json!([]));

    // Rotation to a new root, signed only by the new keys: refused, nothing changes.
    for id in ["admin-d", "admin-e", "admin-f"] {
        admin.keygen(id);
    }
    let new_root = json!([
        admin.public_key("admin-d"),
        admin.public_key("admin-e"),
        admin.public_key("admin-f")
    ]);
    admin.derive("acme-v1.json", "acme-v2.json", |signed| {
        signed["version"] = json!(2);
        signed["root"]["keys"] = new_root;
    });
    admin.sign("acme-v2.json", &["admin-d", "admin-e"]);
    let out = admin.ok(&["bundle", "verify", &admin.path("acme-v2.json")]);
    assert_eq!(out["bundle"], "acme@2", "valid on its own");
    let before = std::fs::read(admin.installed("acme")).unwrap();
    let (code, out) = admin.install("acme-v2.json", &[]);
    assert_eq!(
        (code, error_code(&out)),
        (1, Some("bundle_rotation_not_authorized")),
        "{out}"
    );
    assert_eq!(std::fs::read(admin.installed("acme")).unwrap(), before);
    assert_eq!(bundle_labels(&admin.trust(&[])), ["acme@1:system"]);

    // Signed by a threshold of both roots: `verify --previous` agrees, and it installs.
    admin.sign("acme-v2.json", &["admin-a", "admin-b"]);
    let out = admin.ok(&[
        "bundle",
        "verify",
        &admin.path("acme-v2.json"),
        "--previous",
        &admin.path("acme-v1.json"),
    ]);
    assert_eq!(out["bundle"], "acme@2");
    let (code, out) = admin.install("acme-v2.json", &[]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        (out["installed"].as_str(), out["replaces"].as_str()),
        (Some("acme@2"), Some("acme@1"))
    );
    let trust = admin.trust(&[]);
    assert_eq!(bundle_labels(&trust), ["acme@2:system"], "{trust}");
    assert_eq!(trust["bundles"][0]["version"], 2);

    // Rollback: version 1 again is refused.
    let (code, out) = admin.install("acme-v1.json", &[]);
    assert_eq!(
        (code, error_code(&out)),
        (1, Some("bundle_rollback")),
        "{out}"
    );

    // The same version number with other content is refused: a change needs a new version.
    admin.derive("acme-v2.json", "acme-v2-changed.json", |signed| {
        signed["posture"] = json!("warn");
    });
    admin.sign(
        "acme-v2-changed.json",
        &["admin-a", "admin-b", "admin-d", "admin-e"],
    );
    let (code, out) = admin.install("acme-v2-changed.json", &[]);
    assert_eq!(
        (code, error_code(&out)),
        (1, Some("bundle_version_reused")),
        "{out}"
    );
    // The identical bundle again is fine (idempotent).
    let (code, out) = admin.install("acme-v2.json", &[]);
    assert_eq!(code, 0, "{out}");

    // Deleting the installed file does not reopen the door to version 1: .versions.json.
    std::fs::remove_file(admin.installed("acme")).unwrap();
    let versions: Value = serde_json::from_str(
        &std::fs::read_to_string(admin.trust_roots().join(".versions.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(versions["acme"]["version"], 2, "{versions}");
    let (code, out) = admin.install("acme-v1.json", &[]);
    assert_eq!(
        (code, error_code(&out)),
        (1, Some("bundle_rollback")),
        "{out}"
    );
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("older than version 2"),
        "{out}"
    );
    assert!(!admin.installed("acme").exists());

    // Every decision is in the audit log, refusals with their reason.
    let accepted: Vec<String> = admin
        .audit::<BundleAccepted>()
        .into_iter()
        .map(|d| d.bundle)
        .collect();
    assert_eq!(accepted, ["acme@1", "acme@2", "acme@2"]);
    let refused = admin.audit::<BundleRefused>();
    let reasons: Vec<ErrorCode> = refused.iter().map(|d| d.reason).collect();
    assert_eq!(
        reasons,
        [
            ErrorCode::BundleRotationNotAuthorized,
            ErrorCode::BundleRollback,
            ErrorCode::BundleVersionReused,
            ErrorCode::BundleRollback
        ]
    );
    assert_eq!(refused[0].installed.as_deref(), Some("acme@1"));
    assert_eq!(refused[3].installed, None, "the file was gone");
    assert_eq!(refused[3].highest_seen, Some(2));
    let (code, out) = admin.json(&["audit", "verify"]);
    assert_eq!((code, out["ok"].as_bool()), (0, Some(true)), "{out}");
}

#[test]
fn install_refuses_a_bundle_below_threshold_or_expired() {
    let admin = Admin::new();
    for id in ["admin-a", "admin-b", "admin-c", "signer"] {
        admin.keygen(id);
    }
    let roots = ["admin-a", "admin-b", "admin-c"];

    // One signature of the two required.
    admin.init("acme", "acme.json", &roots, 2, &[]);
    admin.sign("acme.json", &["admin-a"]);
    let (code, out) = admin.install("acme.json", &[]);
    assert_eq!(
        (code, error_code(&out)),
        (1, Some("bundle_threshold_not_met")),
        "{out}"
    );
    assert!(!admin.installed("acme").exists());
    assert!(!admin.trust_roots().join(".versions.json").exists());

    // Expired at init time (init allows a past --expires; verify and install refuse it).
    admin.init(
        "old",
        "old.json",
        &roots,
        2,
        &["--expires", "2020-01-01T00:00:00Z"],
    );
    admin.sign("old.json", &["admin-a", "admin-b"]);
    let (code, out) = admin.json(&["bundle", "verify", &admin.path("old.json")]);
    assert_eq!(
        (code, error_code(&out)),
        (1, Some("bundle_expired")),
        "{out}"
    );
    let (code, out) = admin.install("old.json", &[]);
    assert_eq!(
        (code, error_code(&out)),
        (1, Some("bundle_expired")),
        "{out}"
    );
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired at 2020-01-01T00:00:00Z"),
        "names the expiry: {out}"
    );
    assert!(!admin.installed("old").exists());

    // A current bundle judged after its expiry (--now): refused, naming the expiry.
    admin.sign("acme.json", &["admin-b"]);
    let expires = {
        let bundle: Value =
            serde_json::from_str(&std::fs::read_to_string(admin.path("acme.json")).unwrap())
                .unwrap();
        bundle["signed"]["expires"].as_str().unwrap().to_string()
    };
    let (code, out) = admin.install("acme.json", &["--now", "2100-01-01T00:00:00Z"]);
    assert_eq!(
        (code, error_code(&out)),
        (1, Some("bundle_expired")),
        "{out}"
    );
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("expired at {expires}")),
        "{out}"
    );
    let (code, out) = admin.install("acme.json", &[]);
    assert_eq!(code, 0, "now it installs: {out}");

    let refused = admin.audit::<BundleRefused>();
    let summary: Vec<(Option<&str>, ErrorCode)> = refused
        .iter()
        .map(|d| (d.bundle_id.as_deref(), d.reason))
        .collect();
    assert_eq!(
        summary,
        [
            (Some("acme"), ErrorCode::BundleThresholdNotMet),
            (Some("old"), ErrorCode::BundleExpired),
            (Some("acme"), ErrorCode::BundleExpired)
        ]
    );
    assert!(refused[1].detail.contains("2020-01-01T00:00:00Z"));
    let accepted = admin.audit::<BundleAccepted>();
    assert_eq!(accepted.len(), 1);
    assert_eq!(accepted[0].bundle, "acme@1");
    assert_eq!(accepted[0].signers, ["admin-a", "admin-b"]);
}

#[test]
fn a_locked_admin_bundle_overrides_posture_and_user_trust_roots() {
    let admin = Admin::new();
    for id in ["admin-a", "admin-b", "signer", "me"] {
        admin.keygen(id);
    }
    admin.init("acme", "acme-v1.json", &["admin-a", "admin-b"], 2, &[]);
    admin.sign("acme-v1.json", &["admin-a", "admin-b"]);
    assert_eq!(admin.install("acme-v1.json", &[]).0, 0);

    // The user's own bundle, installed into $XDG_CONFIG_HOME/gatehouse/trust-roots.
    admin.init("my-lab", "my-lab.json", &["me"], 1, &[]);
    admin.derive("my-lab.json", "my-lab.json", |signed| {
        signed["posture"] = json!("warn");
    });
    admin.sign("my-lab.json", &["me"]);
    let user_dir = admin.user_trust_roots().display().to_string();
    let out = admin.ok(&[
        "--trust-roots",
        &user_dir,
        "bundle",
        "install",
        &admin.path("my-lab.json"),
    ]);
    assert_eq!(out["installed"], "my-lab@1");
    assert!(admin.user_trust_roots().join("my-lab.json").exists());

    // Unlocked: the user's bundle loads, the strictest posture applies, --posture widens it.
    let trust = admin.trust(&[]);
    assert_eq!(
        bundle_labels(&trust),
        ["acme@1:system", "my-lab@1:user"],
        "{trust}"
    );
    assert_eq!(trust["posture"], "deny-by-default");
    assert_eq!(trust["locked_by"], Value::Null);
    let trust = admin.trust(&["--posture", "warn"]);
    assert_eq!(trust["posture"], "warn", "{trust}");

    // Version 2 is locked deny-by-default: --posture and the user's bundles are ignored.
    admin.derive("acme-v1.json", "acme-v2.json", |signed| {
        signed["version"] = json!(2);
        signed["locked"] = json!(true);
    });
    admin.sign("acme-v2.json", &["admin-a", "admin-b"]);
    let (code, out) = admin.install("acme-v2.json", &[]);
    assert_eq!(code, 0, "{out}");
    let trust = admin.trust(&["--posture", "warn"]);
    assert_eq!(trust["posture"], "deny-by-default", "{trust}");
    assert_eq!(trust["locked_by"], "acme@2");
    assert!(
        trust["posture_reason"]
            .as_str()
            .unwrap()
            .contains("--posture is ignored"),
        "{trust}"
    );
    assert_eq!(bundle_labels(&trust), ["acme@2:system"], "{trust}");
    assert_eq!(
        problem_codes(&trust),
        [("user".to_string(), "bundle_ignored_locked".to_string())]
    );
    let ignored = &trust["problems"][0];
    assert!(
        ignored["path"]
            .as_str()
            .unwrap()
            .ends_with(".config/gatehouse/trust-roots"),
        "{ignored}"
    );
    // GATEHOUSE_POSTURE is --posture by another name: ignored too.
    let out = admin
        .cmd(&["--json", "trust"])
        .env("GATEHOUSE_POSTURE", "warn")
        .output()
        .unwrap();
    let trust: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(trust["posture"], "deny-by-default", "{trust}");
}

/// Runs `admin`'s gatehouse command with `args` in a private mount namespace whose `/etc` is an
/// overlay holding `bundles` in /etc/gatehouse/trust-roots: the system's own admin directory,
/// which no flag can move, without touching the real one. Needs root (as CI and the
/// developers' machines have) and util-linux's `unshare`.
fn in_system_admin_dir(admin: &Admin, bundles: &[PathBuf], args: &[&str]) -> (i32, Value) {
    let scratch = tempfile::tempdir().unwrap();
    let (up, work) = (scratch.path().join("up"), scratch.path().join("work"));
    std::fs::create_dir_all(&up).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let copies: Vec<String> = bundles
        .iter()
        .map(|b| format!("cp '{}' /etc/gatehouse/trust-roots/ && ", b.display()))
        .collect();
    let script = format!(
        "mount -t overlay overlay -o lowerdir=/etc,upperdir='{}',workdir='{}' /etc && mkdir -p /etc/gatehouse/trust-roots && {}exec \"$@\"",
        up.display(),
        work.display(),
        copies.concat()
    );
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let inner = admin.cmd(&all);
    let mut cmd = Command::new("unshare");
    cmd.args(["-m", "sh", "-c", &script, "sh"])
        .arg(inner.get_program())
        .args(inner.get_args());
    for (key, value) in inner.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: {e}: stdout={stdout} stderr={}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), value)
}

#[test]
fn a_locked_admin_bundle_cannot_be_widened_by_demo_mode_a_user_policy_or_other_trust_roots() {
    let admin = Admin::new();
    for id in ["admin-a", "signer"] {
        admin.keygen(id);
    }
    admin.init("acme", "acme-v1.json", &["admin-a"], 1, &[]);
    admin.sign("acme-v1.json", &["admin-a"]);
    assert_eq!(admin.install("acme-v1.json", &[]).0, 0);
    let policy = admin.home().join("loose.toml");
    std::fs::copy(repo().join("policies/default.toml"), &policy).unwrap();
    let policy = policy.display().to_string();

    // Unlocked: demo mode and a user policy are the user's to choose.
    let trust = admin.trust(&["--demo"]);
    assert_eq!(
        bundle_labels(&trust),
        ["DEMO-ONLY-gatehouse-demo@1:demo", "acme@1:system"],
        "{trust}"
    );
    let trust = admin.trust(&["--policy", &policy]);
    assert_eq!(trust["locked_by"], Value::Null, "{trust}");

    admin.derive("acme-v1.json", "acme-v2.json", |signed| {
        signed["version"] = json!(2);
        signed["locked"] = json!(true);
    });
    admin.sign("acme-v2.json", &["admin-a"]);
    assert_eq!(admin.install("acme-v2.json", &[]).0, 0);

    // Locked: each widening is refused, naming the lock; nothing is loaded or decided.
    let refused = |args: &[&str], what: &str| {
        let (code, out) = admin.json(args);
        assert_eq!(code, 1, "{args:?}: {out}");
        assert_eq!(out["error"]["code"], "locked_by_admin", "{args:?}: {out}");
        let message = out["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("acme@2") && message.contains(what),
            "{args:?}: {message}"
        );
    };
    refused(&["--demo", "trust"], "--demo");
    refused(&["--demo", "connect", "demo"], "--demo");
    refused(&["--policy", &policy, "trust"], "GATEHOUSE_POLICY");
    let out = admin
        .cmd(&["--json", "trust"])
        .env("GATEHOUSE_POLICY", &policy)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["error"]["code"], "locked_by_admin", "{value}");
    // Without them, the locked bundle decides as before.
    let trust = admin.trust(&[]);
    assert_eq!(trust["locked_by"], "acme@2", "{trust}");

    // The system's own directory (an overlay /etc here): --trust-roots elsewhere, or
    // GATEHOUSE_TRUST_ROOTS, would replace the locked bundle with the user's choice.
    let locked = admin.installed("acme");
    let elsewhere = admin.home().join("my-roots");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let elsewhere = elsewhere.display().to_string();
    let (code, out) = in_system_admin_dir(
        &admin,
        std::slice::from_ref(&locked),
        &["--trust-roots", &elsewhere, "trust"],
    );
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["error"]["code"], "locked_by_admin", "{out}");
    let message = out["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("acme@2")
            && message.contains("/etc/gatehouse/trust-roots")
            && message.contains(&elsewhere),
        "{message}"
    );
    // Naming the system directory itself widens nothing.
    let (code, out) = in_system_admin_dir(
        &admin,
        std::slice::from_ref(&locked),
        &["--trust-roots", "/etc/gatehouse/trust-roots", "trust"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["locked_by"], "acme@2", "{out}");
    // An unlocked system bundle: the user may point elsewhere (tests and labs do).
    let unlocked = admin.home().join("acme-v1-installed.json");
    std::fs::copy(admin.path("acme-v1.json"), &unlocked).unwrap();
    let (code, out) = in_system_admin_dir(
        &admin,
        std::slice::from_ref(&unlocked),
        &["--trust-roots", &elsewhere, "trust"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["locked_by"], Value::Null, "{out}");
}

#[test]
fn a_corrupt_admin_bundle_forces_deny_by_default() {
    let admin = Admin::new();
    for id in ["admin-a", "signer"] {
        admin.keygen(id);
    }
    // A valid admin bundle whose own posture is warn.
    admin.init("acme", "acme.json", &["admin-a"], 1, &[]);
    admin.derive("acme.json", "acme.json", |signed| {
        signed["posture"] = json!("warn");
    });
    admin.sign("acme.json", &["admin-a"]);
    assert_eq!(admin.install("acme.json", &[]).0, 0);
    // Files that are not bundles by name are not read: hidden ones and other extensions.
    std::fs::write(admin.trust_roots().join("notes.txt"), "not a bundle").unwrap();
    std::fs::write(admin.trust_roots().join(".backup.json"), "{ not json").unwrap();
    let trust = admin.trust(&[]);
    assert_eq!(trust["posture"], "warn", "{trust}");
    assert_eq!(trust["problems"], json!([]));

    std::fs::write(admin.trust_roots().join("broken.json"), "{ not json").unwrap();
    for extra in [&[][..], &["--posture", "warn"][..]] {
        let trust = admin.trust(extra);
        assert_eq!(trust["posture"], "deny-by-default", "{extra:?}: {trust}");
        assert!(
            trust["posture_reason"]
                .as_str()
                .unwrap()
                .contains("could not be loaded"),
            "{trust}"
        );
        assert_eq!(
            problem_codes(&trust),
            [("system".to_string(), "bundle_invalid".to_string())]
        );
        assert!(
            trust["problems"][0]["path"]
                .as_str()
                .unwrap()
                .ends_with("broken.json")
        );
        // The good bundle is still loaded; only the posture falls back.
        assert_eq!(bundle_labels(&trust), ["acme@1:system"]);
    }
    // Human output names the problem too (and exits 0: `trust` reports, it does not refuse).
    let (code, stdout, _) = admin.run(&["--posture", "warn", "trust"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("posture: deny-by-default") && stdout.contains("bundle_invalid"),
        "{stdout}"
    );
}

/// Every refused install is recorded, even of a file that is not a bundle at all.
#[test]
fn an_unparseable_bundle_install_is_audited_too() {
    let admin = Admin::new();
    std::fs::write(admin.path("broken.json"), r#"{"signed": {}}"#).unwrap();
    let (code, out) = admin.install("broken.json", &[]);
    assert_eq!(
        (code, error_code(&out)),
        (1, Some("bundle_invalid")),
        "{out}"
    );
    let refused = admin.audit::<BundleRefused>();
    assert_eq!(refused.len(), 1, "{refused:?}");
}

/// Two admin bundles that conflict (here: both govern one server) are both dropped, and that
/// counts as an admin bundle failing to load: deny-by-default, whatever --posture says.
#[test]
fn conflicting_admin_bundles_force_deny_by_default() {
    let admin = Admin::new();
    for id in ["admin-a", "signer"] {
        admin.keygen(id);
    }
    let server =
        json!([{"id": "urn:acme:server:weather", "origins": ["https://weather.acme.example"]}]);
    for id in ["acme-one", "acme-two"] {
        let file = format!("{id}.json");
        admin.init(id, &file, &["admin-a"], 1, &[]);
        let servers = server.clone();
        admin.derive(&file, &file, |signed| signed["servers"] = servers);
        admin.sign(&file, &["admin-a"]);
        assert_eq!(admin.install(&file, &[]).0, 0);
    }
    let trust = admin.trust(&["--posture", "warn"]);
    assert_eq!(
        problem_codes(&trust),
        [("system".to_string(), "bundle_conflict".to_string())]
    );
    assert_eq!(trust["posture"], "deny-by-default", "{trust}");
}

// ---- The README's commands are the CLI's ------------------------------------------------------

/// What `gatehouse <path> --help` says: options (and whether each takes a value), subcommands,
/// and whether positional arguments are accepted.
struct Help {
    options: HashMap<String, bool>,
    subcommands: Vec<String>,
    takes_arguments: bool,
}

fn help(env: &Env, cache: &mut HashMap<Vec<String>, Help>, path: &[String]) -> Result<(), String> {
    if cache.contains_key(path) {
        return Ok(());
    }
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let (code, stdout, stderr) = env.run(&args);
    if code != 0 {
        return Err(format!(
            "`gatehouse {}` exits {code}: {stderr}",
            args.join(" ")
        ));
    }
    let expected = format!("Usage: gatehouse {}", path.join(" "));
    if !stdout.contains(expected.trim_end()) {
        return Err(format!("`gatehouse {}` is not a command", path.join(" ")));
    }
    let mut parsed = Help {
        options: HashMap::new(),
        subcommands: Vec::new(),
        takes_arguments: false,
    };
    let mut section = "";
    for line in stdout.lines() {
        if !line.starts_with(' ') {
            section = line.trim_end_matches(':');
            parsed.takes_arguments |= section == "Arguments";
            continue;
        }
        let item = line.trim_start();
        match section {
            "Commands" => {
                if let Some(name) = item.split_whitespace().next() {
                    parsed.subcommands.push(name.to_string());
                }
            }
            "Options" => {
                for part in item.split(", ") {
                    let Some(flag) = part.split_whitespace().next() else {
                        continue;
                    };
                    if !flag.starts_with('-') {
                        break;
                    }
                    let rest = &part[flag.len()..];
                    let takes_value = rest.starts_with(" <") || rest.starts_with(" [");
                    parsed.options.insert(flag.to_string(), takes_value);
                }
            }
            _ => {}
        }
    }
    cache.insert(path.to_vec(), parsed);
    Ok(())
}

/// Splits a shell command line into words: '…' and "…" quote (a "$(…)" inside double quotes
/// stays one word), a backslash escapes the next character.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == c {
                        break;
                    }
                    word.push(q);
                }
            }
            '\\' => {
                in_word = true;
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The `gatehouse …` invocations in a piece of shell: the words after `gatehouse`, up to a pipe,
/// redirect, `&&`, `;` or comment.
fn invocations(code: &str, top_level: &[String]) -> Vec<Vec<String>> {
    let words = shell_words(code);
    let mut found = Vec::new();
    let end = |w: &String| {
        matches!(w.as_str(), "|" | "||" | "&&" | ";" | ">" | ">>" | "<" | ")") || w.starts_with('#')
    };
    for (i, word) in words.iter().enumerate() {
        if word == "gatehouse" {
            found.push(
                words[i + 1..]
                    .iter()
                    .take_while(|w| !end(w))
                    .cloned()
                    .collect(),
            );
        }
    }
    // An inline mention without the program name, like `bundle verify NEW --previous OLD`.
    if found.is_empty() && words.len() >= 2 && top_level.contains(&words[0]) {
        found.push(words.iter().take_while(|w| !end(w)).cloned().collect());
    }
    found
}

/// Shell lines of fenced code blocks (continuations joined) and inline code spans.
fn code_in_markdown(text: &str) -> (Vec<String>, Vec<String>) {
    let (mut fenced, mut spans) = (Vec::new(), Vec::new());
    let mut prose = String::new();
    let mut fence: Option<String> = None;
    let mut pending = String::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            match fence.take() {
                Some(_) => {}
                None => {
                    fence = Some(trimmed.trim_start_matches('`').to_string());
                    spans_of(&std::mem::take(&mut prose), &mut spans);
                }
            }
            continue;
        }
        match &fence {
            Some(lang) if lang == "sh" => {
                if let Some(head) = trimmed.strip_suffix('\\') {
                    pending.push_str(head);
                    pending.push(' ');
                } else {
                    pending.push_str(trimmed);
                    fenced.push(std::mem::take(&mut pending));
                }
            }
            Some(_) => {}
            None => {
                prose.push_str(line);
                prose.push('\n');
            }
        }
    }
    spans_of(&prose, &mut spans);
    (fenced, spans)
}

fn spans_of(prose: &str, spans: &mut Vec<String>) {
    for (i, part) in prose.split('`').enumerate() {
        if i % 2 == 1 {
            spans.push(part.replace('\n', " "));
        }
    }
}

/// Walks one invocation through the CLI's help: every word must be a subcommand, an option the
/// command has (skipping its value), or a positional argument the command accepts.
fn check_invocation(
    env: &Env,
    cache: &mut HashMap<Vec<String>, Help>,
    words: &[String],
) -> Result<(), String> {
    let shown = format!("gatehouse {}", words.join(" "));
    let mut path: Vec<String> = Vec::new();
    help(env, cache, &path)?;
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let current = &cache[&path];
        if word.starts_with('-') && word.len() > 1 {
            let name = word.split('=').next().unwrap();
            match current.options.get(name) {
                None => {
                    return Err(format!(
                        "{shown}: `gatehouse {}` has no option {name}",
                        path.join(" ")
                    ));
                }
                Some(true) if !word.contains('=') => {
                    words.next();
                }
                Some(_) => {}
            }
        } else if current.subcommands.contains(word) {
            path.push(word.clone());
            help(env, cache, &path).map_err(|e| format!("{shown}: {e}"))?;
        } else if !current.takes_arguments {
            return Err(format!(
                "{shown}: {word:?} is not a subcommand of `gatehouse {}` (it has: {})",
                path.join(" "),
                current.subcommands.join(", ")
            ));
        }
    }
    Ok(())
}

#[test]
fn every_gatehouse_command_in_the_docs_parses() {
    let env = Env::new();
    let mut cache = HashMap::new();
    help(&env, &mut cache, &[]).unwrap();
    let top_level: Vec<String> = cache[&Vec::new()].subcommands.clone();
    let mut checked = 0;
    let mut problems = Vec::new();
    for doc in [
        "trust-roots/README.md",
        "trust-roots/demo/README.md",
        "SECURITY.md",
    ] {
        let text = std::fs::read_to_string(repo().join(doc)).unwrap();
        let (fenced, spans) = code_in_markdown(&text);
        for code in fenced.iter().chain(&spans) {
            for words in invocations(code, &top_level) {
                checked += 1;
                if let Err(problem) = check_invocation(&env, &mut cache, &words) {
                    problems.push(format!("{doc}: {problem}"));
                }
            }
        }
    }
    assert!(
        checked >= 40,
        "only {checked} commands found: is the extraction broken?"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // And the README walks the whole admin workflow.
    let readme = std::fs::read_to_string(repo().join("trust-roots/README.md")).unwrap();
    for step in [
        "gatehouse bundle keygen",
        "gatehouse bundle init",
        "gatehouse bundle sign",
        "gatehouse bundle verify",
        "gatehouse bundle inspect",
        "sudo gatehouse bundle install",
        "--previous",
        "gatehouse attest sign",
        "gatehouse attest fetch",
        "gatehouse attest verify",
        "tools pin",
        "gatehouse trust",
    ] {
        assert!(readme.contains(step), "the README never shows {step:?}");
    }
}

#[test]
fn the_doc_checker_catches_drift() {
    let env = Env::new();
    let mut cache = HashMap::new();
    help(&env, &mut cache, &[]).unwrap();
    let top: Vec<String> = cache[&Vec::new()].subcommands.clone();
    let check = |cache: &mut HashMap<Vec<String>, Help>, line: &str| {
        let words = invocations(line, &top);
        assert_eq!(words.len(), 1, "{line}");
        check_invocation(&env, cache, &words[0])
    };
    for good in [
        "sudo gatehouse bundle install acme-prod.json",
        r#"XDG_DATA_HOME="$(mktemp -d)" gatehouse --trust-roots "$(mktemp -d)" --posture warn tools pin --stdio '/opt/x --era both' --tool echo"#,
        "gatehouse --json audit show --type bundle_refused | jq .",
        "bundle verify NEW --previous OLD",
    ] {
        assert_eq!(check(&mut cache, good), Ok(()), "{good}");
    }
    for bad in [
        "gatehouse bundle instal acme.json",
        "gatehouse bundle install --force acme.json",
        "gatehouse trust-roots list",
        "gatehouse attest verify --sad x --root y",
    ] {
        assert!(check(&mut cache, bad).is_err(), "{bad} should not parse");
    }
}
