//! A person without an admin pins their own package server (issue 25): an imported config that
//! says `npx -y @modelcontextprotocol/server-filesystem DIR` is refused with a message that says
//! what to do; `servers pin` resolves the closure with npm against the registry (a mirror of
//! the install step's seed here), shows it, and writes the binding into the person's own bundle
//! signed with a key kept in a real gnome-keyring; the server then runs from the store in
//! deny-by-default, "pinned by you". A locked admin bundle refuses the pin.

mod common;

use common::packages::{FILESYSTEM, seed};

use std::path::PathBuf;
use std::process::Command;

use common::{Env, repo};
use gatehouse_host::ErrorCode;
use gatehouse_testkit::bundles;
use gatehouse_testkit::mirror::Mirror;
use serde_json::{Value, json};

struct Person {
    env: Env,
    sources: PathBuf,
    docs: PathBuf,
    /// First on PATH: `python3`, a link to the real interpreter (not a version manager's shim).
    bin: PathBuf,
    _mirror: Mirror,
}

impl Person {
    fn new() -> Person {
        common::require_tools(&["dbus-run-session", "gnome-keyring-daemon", "npm"]);
        let env = Env::new();
        let mirror = Mirror::start(seed());
        let sources = env.dir.path().join("package-sources.json");
        std::fs::write(
            &sources,
            json!({"npmRegistry": mirror.npm_url(), "pypiIndex": mirror.pypi_url()}).to_string(),
        )
        .unwrap();
        let bin = env.dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(common::python3(), bin.join("python3")).unwrap();
        let docs = env.dir.path().join("docs");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::write(docs.join("note.txt"), "mine").unwrap();
        Person {
            env,
            sources,
            docs,
            bin,
            _mirror: mirror,
        }
    }

    fn path_env(&self) -> String {
        let node = common::node();
        format!(
            "{}:{}:/usr/bin:/bin",
            self.bin.display(),
            node.parent().unwrap().display()
        )
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut all = vec![
            "--json",
            "--posture",
            "deny-by-default",
            "--package-sources",
            self.sources.to_str().unwrap(),
        ];
        all.extend_from_slice(args);
        let mut cmd = self.env.cmd(&all);
        cmd.env("PATH", self.path_env());
        cmd
    }

    fn json(&self, args: &[&str]) -> (i32, Value) {
        parse(common::output_of(self.command(args)))
    }

    /// `args` run with a real, unlocked gnome-keyring of its own (a private session bus).
    fn json_in_keyring(&self, args: &[&str]) -> (i32, Value) {
        let inner = self.command(args);
        let mut cmd = Command::new("dbus-run-session");
        cmd.arg("--")
            .arg("bash")
            .arg(repo().join("tests/fixtures/in_keyring.sh"))
            .arg(inner.get_program())
            .args(inner.get_args());
        for (key, value) in inner.get_envs() {
            match value {
                Some(value) => cmd.env(key, value),
                None => cmd.env_remove(key),
            };
        }
        parse(common::output_of(cmd))
    }
}

fn parse((code, stdout, stderr): (i32, String, String)) -> (i32, Value) {
    let value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: stdout={stdout} stderr={stderr}"));
    (code, value)
}

/// Claude Code's config (`~/.claude.json`) as the person has it, imported into Gatehouse.
fn import_claude_code_config(person: &Person) {
    let claude = person.env.dir.path().join(".claude.json");
    std::fs::write(
        &claude,
        json!({"mcpServers": {"files": {"type": "stdio", "command": "npx",
            "args": ["-y", FILESYSTEM, person.docs.display().to_string()], "env": {}}}})
        .to_string(),
    )
    .unwrap();
    // Connecting Claude Code imports its servers and says which are packages and what each
    // needs: this one can be pinned.
    let (code, out) = person.json(&["clients", "connect", "claude_code"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out["packages"],
        json!([{"name": "files", "state": "can_be_pinned"}]),
        "{out}"
    );
}

#[test]
fn a_person_pins_an_imported_npx_server_and_it_runs_from_the_store_in_deny_by_default() {
    let person = Person::new();
    import_claude_code_config(&person);

    // Before: refused, and the message says what the person can do.
    let (code, out) = person.json(&["connect", "files"]);
    assert_eq!(code, 1, "{out}");
    let message = out["error"]["message"].as_str().unwrap();
    assert!(message.contains("gatehouse servers pin files"), "{message}");

    // The plan alone (no --yes with --json) changes nothing.
    let (code, out) = person.json(&["servers", "pin", "files"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["pinned"], false, "{out}");
    assert_eq!(out["planned"]["package"], FILESYSTEM, "{out}");
    assert_eq!(out["planned"]["version"], "2026.8.31", "{out}");
    assert!(
        out["planned"]["preview"]["closure"].as_u64().unwrap() > 50,
        "{out}"
    );
    let tools = out["planned"]["preview"]["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .any(|t| t["name"] == "list_allowed_directories" && t["inputSchema"].is_object()),
        "{out}"
    );
    let own_bundle = person
        .env
        .dir
        .path()
        .join(".config/gatehouse/trust-roots/pinned-by-you.json");
    assert!(!own_bundle.exists());

    let (code, out) = person.json_in_keyring(&["servers", "pin", "files", "--yes"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["pinned"]["bundle"], "pinned-by-you@1", "{out}");

    // After: admitted by the person's own bundle, labelled, and the tools work through the
    // gate (no keychain needed to use a pin, only to make one).
    let (code, out) = person.json(&["connect", "files"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["admission"]["status"], "admitted", "{out}");
    assert_eq!(
        out["admission"]["identity"]["bundle_source"], "user",
        "{out}"
    );
    let (code, out) = person.json(&["servers", "list"]);
    assert_eq!(code, 0, "{out}");
    let row = &out["servers"][0];
    assert!(
        row["verdict"].as_str().unwrap().contains("[pinned by you]"),
        "{row}"
    );
    let (code, out) = person.json(&["call", "files", "list_allowed_directories"]);
    assert_eq!(code, 0, "{out}");
    let canonical = std::fs::canonicalize(&person.docs).unwrap();
    assert!(
        out.to_string().contains(&canonical.display().to_string()),
        "{out}"
    );

    // A config asking for another version is refused until the person pins again.
    let config = person.env.config();
    let text = std::fs::read_to_string(&config).unwrap();
    let other = text.replace(FILESYSTEM, &format!("{FILESYSTEM}@2025.1.1"));
    assert_ne!(text, other);
    std::fs::write(&config, other).unwrap();
    let (code, out) = person.json(&["connect", "files"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out["error"]["code"],
        ErrorCode::PackageVersionNotBound.as_str(),
        "{out}"
    );
}

#[test]
fn a_locked_admin_bundle_refuses_a_pin_of_your_own() {
    let person = Person::new();
    import_claude_code_config(&person);
    let mut signed = bundles::signed(json!([]));
    signed["locked"] = json!(true);
    bundles::install(&person.env.trust_roots(), &signed);

    let (code, out) = person.json(&["servers", "pin", "files", "--yes"]);
    assert_ne!(code, 0, "{out}");
    assert_eq!(
        out["error"]["code"],
        ErrorCode::LockedByAdmin.as_str(),
        "{out}"
    );
    let (code, out) = person.json(&["connect", "files"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ask your admin"),
        "{out}"
    );
}

#[test]
fn a_person_pins_a_uvx_server_resolved_by_pip_and_it_runs_from_the_store() {
    let person = Person::new();
    let config = json!({"mcpServers": {"time": {"command": "uvx",
        "args": ["mcp-server-time", "--local-timezone", "UTC"]}}});
    std::fs::write(person.env.config(), config.to_string()).unwrap();
    let (code, out) = person.json(&["connect", "time"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("gatehouse servers pin time"),
        "{out}"
    );

    let (code, out) = person.json_in_keyring(&["servers", "pin", "time", "--yes"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["planned"]["package"], "mcp-server-time", "{out}");
    assert_eq!(out["planned"]["version"], "2026.10.19", "{out}");
    assert_eq!(
        out["planned"]["args"],
        json!(["--local-timezone", "UTC"]),
        "{out}"
    );
    assert!(
        out["planned"]["preview"]["closure"].as_u64().unwrap() > 20,
        "{out}"
    );

    let (code, out) = person.json(&["connect", "time"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out["admission"]["identity"]["bundle_source"], "user",
        "{out}"
    );
    let (code, out) = person.json(&[
        "call",
        "time",
        "get_current_time",
        "--args",
        r#"{"timezone": "UTC"}"#,
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.to_string().contains("UTC"), "{out}");
    // The fixed arguments were pinned: other ones are refused.
    let config = json!({"mcpServers": {"time": {"command": "uvx",
        "args": ["mcp-server-time", "--local-timezone", "Europe/Paris"]}}});
    std::fs::write(person.env.config(), config.to_string()).unwrap();
    let (code, out) = person.json(&["connect", "time"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out["error"]["code"],
        ErrorCode::PackageVersionNotBound.as_str(),
        "{out}"
    );
}

/// The closure of a written entry, as comparable (name, version, artifact) triples.
fn closure_of(bundle: &std::path::Path, id: &str) -> Vec<(String, String, String)> {
    let document: Value = serde_json::from_slice(&std::fs::read(bundle).unwrap()).unwrap();
    let entry = document["signed"]["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap()
        .clone();
    let package = &entry["package"];
    let mut all: Vec<(String, String, String)> = package["closure"]
        .as_array()
        .unwrap()
        .iter()
        .chain(std::iter::once(package))
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["version"].as_str().unwrap().to_string(),
                p["artifact"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    all.sort();
    all.dedup();
    all
}

#[test]
fn add_server_without_a_lockfile_resolves_from_the_registry_the_closure_the_lockfile_pins() {
    let person = Person::new();
    let keys = person.env.dir.path().join("keys");
    let bundle = person.env.dir.path().join("acme.json");
    let keys_text = keys.display().to_string();
    for id in ["root", "signer"] {
        let (code, out) = person.json(&["bundle", "keygen", "--out", &keys_text, "--id", id]);
        assert_eq!(code, 0, "{out}");
    }
    let key = |name: &str| keys.join(name).display().to_string();
    let (code, out) = person.json(&[
        "bundle",
        "init",
        "--bundle-id",
        "acme",
        "--root-key",
        &key("root.pub.json"),
        "--signer-key",
        &key("signer.pub.json"),
        "--out",
        bundle.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    let add = |id: &str, extra: &[&str]| {
        let signer = key("signer.key");
        let mut args = vec![
            "bundle",
            "add-server",
            bundle.to_str().unwrap(),
            "--id",
            id,
            "--clearance",
            "internal",
            "--signer-key",
            &signer,
            "--all-tools",
        ];
        args.extend_from_slice(extra);
        person.json(&args)
    };
    let npm = format!("{FILESYSTEM}@2026.8.31");
    let lockfile = repo().join("tests/packages/npm/server-filesystem/package-lock.json");
    let (code, out) = add("urn:acme:files-resolved", &["--npm", &npm]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = add(
        "urn:acme:files-reviewed",
        &["--npm", &npm, "--lockfile", lockfile.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{out}");
    let resolved = closure_of(&bundle, "urn:acme:files-resolved");
    assert!(resolved.len() > 50, "{resolved:?}");
    assert_eq!(resolved, closure_of(&bundle, "urn:acme:files-reviewed"));

    let requirements = repo().join("tests/packages/pypi/mcp-server-time/requirements.txt");
    let time = [
        "--pypi",
        "mcp-server-time==2026.10.19",
        "--arg=--local-timezone",
        "--arg=UTC",
    ];
    let (code, out) = add("urn:acme:time-resolved", &time);
    assert_eq!(code, 0, "{out}");
    let mut reviewed = time.to_vec();
    reviewed.extend(["--requirements", requirements.to_str().unwrap()]);
    let (code, out) = add("urn:acme:time-reviewed", &reviewed);
    assert_eq!(code, 0, "{out}");
    let resolved = closure_of(&bundle, "urn:acme:time-resolved");
    assert!(resolved.len() > 20, "{resolved:?}");
    assert_eq!(resolved, closure_of(&bundle, "urn:acme:time-reviewed"));

    // A version the registry does not have: refused by name, the bundle untouched.
    let before = std::fs::read(&bundle).unwrap();
    let (code, out) = add(
        "urn:acme:missing",
        &["--npm", &format!("{FILESYSTEM}@2025.1.1")],
    );
    assert_ne!(code, 0, "{out}");
    assert_eq!(
        out["error"]["code"],
        ErrorCode::PackageResolveFailed.as_str(),
        "{out}"
    );
    assert_eq!(std::fs::read(&bundle).unwrap(), before);
}
