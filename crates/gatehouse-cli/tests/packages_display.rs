//! What a person sees of a package server (issue 25): `servers list` shows the binding a
//! config ran from the store (ecosystem, package, version, closure size, files verified, the
//! user's own arguments), only for a server admitted that way; `bundle inspect` shows every
//! entry's package binding for a reviewer, in JSON and as one line.

mod common;

use common::packages::{FILESYSTEM, VERSION, node_dir, seed, sha256_file};

use std::path::{Path, PathBuf};

use common::{Env, repo};
use gatehouse_package::lockfile::{Platform, npm_closure};
use gatehouse_testkit::bundles;
use serde_json::{Value, json};

const DENY: [&str; 2] = ["--posture", "deny-by-default"];
const ID: &str = "urn:test:filesystem";

/// Packages in the test lockfile's closure of server-filesystem, the bound one included.
fn closure_size() -> usize {
    let lock: Value = serde_json::from_slice(
        &std::fs::read(repo().join("tests/packages/npm/server-filesystem/package-lock.json"))
            .unwrap(),
    )
    .unwrap();
    npm_closure(&lock, FILESYSTEM, VERSION, Platform::current())
        .unwrap()
        .closure
        .len()
        + 1
}

/// The binding an admin writes from the test package's lockfile, with `node_sha256` as the
/// interpreter's allowed set.
fn filesystem_binding(node_sha256: &[String]) -> Value {
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
        "interpreter": {"kind": "node", "sha256": node_sha256},
        "userArgs": [{"rule": "existing_directory_under_home", "access": "read_write", "min": 1, "max": 4}],
        "attestation": bundles::attestation(ID, None),
    })
}

/// Installs a bundle binding the package and, beside it, a plain stdio entry (the demo
/// server); returns the bundle file.
fn install_bundle(env: &Env, binding: Value) -> PathBuf {
    let demo = common::demo_bin();
    let mut signed = bundles::signed(json!([
        {
            "id": ID,
            "package": binding,
            "allowedTools": ["list_allowed_directories", "read_text_file"],
        },
        bundles::stdio_entry(
            "urn:test:demo",
            &demo,
            &sha256_file(Path::new(&demo)),
            bundles::attestation("urn:test:demo", None),
        ),
    ]));
    signed["specVersion"] = json!(4);
    bundles::install(&env.trust_roots(), &signed)
}

struct Fixture {
    env: Env,
    sources: PathBuf,
    docs: PathBuf,
    bundle: PathBuf,
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
        let bundle = install_bundle(&env, filesystem_binding(&[sha256_file(&common::node())]));
        Fixture {
            env,
            sources,
            docs,
            bundle,
        }
    }

    /// servers.json as Claude Desktop writes it: the package server as `npx ARGS`, and a
    /// plain stdio server beside it.
    fn configure(&self, args: &[&str]) {
        let config = json!({"mcpServers": {
            "files": {"command": "npx", "args": args},
            "plain": {"command": common::demo_bin()},
        }});
        std::fs::write(self.env.config(), serde_json::to_vec(&config).unwrap()).unwrap();
    }

    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut all = vec!["--package-sources", self.sources.to_str().unwrap()];
        all.extend_from_slice(&DENY);
        all.extend_from_slice(args);
        let mut cmd = self.env.cmd(&all);
        // The pinned Node first on PATH, as an admin's machine has its reviewed Node; no npx
        // on it at all, so nothing can run through the launcher.
        cmd.env("PATH", format!("{}:/usr/bin:/bin", node_dir().display()));
        cmd
    }

    fn json(&self, args: &[&str]) -> (i32, Value) {
        common::json_of(|all| common::output_of(self.command(all)), args)
    }

    fn text(&self, args: &[&str]) -> (i32, String, String) {
        common::output_of(self.command(args))
    }

    fn docs(&self) -> String {
        self.docs.display().to_string()
    }
}

fn row<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row {name}: {list}"))
}

#[test]
fn servers_list_shows_the_binding_of_a_package_server_and_only_of_it() {
    let fixture = Fixture::new();
    let docs = fixture.docs();
    fixture.configure(&["-y", &format!("{FILESYSTEM}@{VERSION}"), &docs]);
    let (code, out) = fixture.json(&["connect", "files"]);
    assert_eq!(code, 0, "{out}");

    let (code, list) = fixture.json(&["servers", "list"]);
    assert_eq!(code, 0, "{list}");
    let files = row(&list, "files");
    let package = &files["package"];
    assert_eq!(package["ecosystem"], "npm", "{list}");
    assert_eq!(package["package"], FILESYSTEM, "{list}");
    assert_eq!(package["version"], VERSION, "{list}");
    assert_eq!(package["closure"], json!(closure_size()), "{list}");
    let files_verified = package["files_verified"].as_u64().unwrap();
    assert!(files_verified > 100, "{list}");
    let canonical = std::fs::canonicalize(&fixture.docs).unwrap();
    assert_eq!(
        package["user_args"],
        json!([canonical.display().to_string()]),
        "{list}"
    );
    assert_eq!(package["launcher"], "npx", "{list}");
    // The same as the admission the row carries.
    assert_eq!(files["admission"]["package"], *package, "{list}");
    // A plain stdio server (admitted by its own binding) has no package field at all.
    let plain = row(&list, "plain");
    assert_eq!(plain["admission"]["status"], "admitted", "{list}");
    assert!(plain.get("package").is_none(), "{list}");
    assert!(plain["admission"].get("package").is_none(), "{list}");

    // The person's view: one line under the server.
    let (code, stdout, stderr) = fixture.text(&["servers", "list"]);
    assert_eq!(code, 0, "{stdout} {stderr}");
    let expected = format!(
        "npm {FILESYSTEM} {VERSION} · {} packages · tree verified ({files_verified} files) · your args: {}",
        closure_size(),
        canonical.display()
    );
    assert!(stdout.contains(&expected), "{expected}\n{stdout}");
    assert_eq!(stdout.matches("tree verified").count(), 1, "{stdout}");
}

#[test]
fn a_refused_package_config_lists_no_binding() {
    let fixture = Fixture::new();
    // Another version than the bound one: refused, and nothing claims to be verified.
    fixture.configure(&["-y", &format!("{FILESYSTEM}@2025.1.1"), &fixture.docs()]);
    let (code, list) = fixture.json(&["servers", "list"]);
    assert_eq!(code, 0, "{list}");
    let files = row(&list, "files");
    assert_eq!(files["admission"]["status"], "refused", "{list}");
    assert!(files.get("package").is_none(), "{list}");
    let (code, stdout, stderr) = fixture.text(&["servers", "list"]);
    assert_eq!(code, 0, "{stdout} {stderr}");
    assert!(!stdout.contains("tree verified"), "{stdout}");
}

#[test]
fn bundle_inspect_shows_each_package_binding() {
    let fixture = Fixture::new();
    let bundle = fixture.bundle.to_str().unwrap();
    let (code, out) = fixture.json(&["bundle", "inspect", bundle]);
    assert_eq!(code, 0, "{out}");
    let servers = out["servers"].as_array().unwrap();
    let package = &servers.iter().find(|s| s["id"] == ID).unwrap()["package"];
    assert_eq!(package["ecosystem"], "npm", "{out}");
    assert_eq!(package["name"], FILESYSTEM, "{out}");
    assert_eq!(package["version"], VERSION, "{out}");
    assert_eq!(package["closure"], json!(closure_size()), "{out}");
    assert_eq!(package["entry"], "dist/index.js", "{out}");
    assert_eq!(
        package["interpreter"],
        json!({"kind": "node", "allowedDigests": 1, "package": null}),
        "{out}"
    );
    assert_eq!(
        package["userArgs"],
        json!([{"rule": "existing_directory_under_home", "access": "read_write", "min": 1, "max": 4}]),
        "{out}"
    );
    assert!(
        package["artifact"].as_str().unwrap().starts_with("sha512-"),
        "{out}"
    );
    // The stdio entry has no package binding.
    let demo = servers.iter().find(|s| s["id"] == "urn:test:demo").unwrap();
    assert!(demo["package"].is_null(), "{out}");
    assert!(demo["stdio"].is_object(), "{out}");

    let (code, stdout, stderr) = fixture.text(&["bundle", "inspect", bundle]);
    assert_eq!(code, 0, "{stdout} {stderr}");
    let line = format!(
        "{ID}: npm {FILESYSTEM}@{VERSION} · {} packages · entry dist/index.js · node (1 allowed digest) · user args: existing_directory_under_home read_write 1..4",
        closure_size()
    );
    assert!(stdout.contains(&line), "{line}\n{stdout}");
    assert!(!stdout.contains("urn:test:demo: "), "{stdout}");
}

#[test]
fn bundle_inspect_counts_every_allowed_interpreter_digest_and_one_of_rules() {
    let fixture = Fixture::new();
    let mut binding = filesystem_binding(&["ab".repeat(32), "cd".repeat(32)]);
    binding["userArgs"] =
        json!([{"rule": "one_of", "values": ["--fast", "--slow"], "min": 0, "max": 1}]);
    let bundle = install_bundle(&fixture.env, binding);
    let bundle = bundle.to_str().unwrap();
    let (code, out) = fixture.json(&["bundle", "inspect", bundle]);
    assert_eq!(code, 0, "{out}");
    let package = &out["servers"][0]["package"];
    assert_eq!(package["interpreter"]["allowedDigests"], 2, "{out}");
    assert_eq!(
        package["userArgs"],
        json!([{"rule": "one_of", "values": ["--fast", "--slow"], "min": 0, "max": 1}]),
        "{out}"
    );
    let (code, stdout, stderr) = fixture.text(&["bundle", "inspect", bundle]);
    assert_eq!(code, 0, "{stdout} {stderr}");
    assert!(
        stdout.contains("node (2 allowed digests) · user args: one_of [--fast, --slow] 0..1"),
        "{stdout}"
    );
}
