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
        std::os::unix::fs::symlink(real_python(), bin.join("python3")).unwrap();
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

/// The interpreter `python3` on PATH runs, resolved (through a version manager's shim too).
fn real_python() -> PathBuf {
    let out = Command::new("python3")
        .args([
            "-c",
            "import os, sys; print(os.path.realpath(sys.executable))",
        ])
        .output()
        .expect("python3 on PATH");
    assert!(out.status.success(), "{out:?}");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
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
