//! Package servers fetched over the network through the real binary (issue 25):
//! package-sources.json points `npmRegistry` at a registry mirror on loopback (the test kit's,
//! serving the artifacts the install step fetched), with no seed directory. The closure is
//! fetched once, verified before anything is unpacked, installed with no install scripts, and
//! then launched with no network at all. A registry that serves other bytes, or none, stores
//! nothing; what a crash mid-install leaves is never used.

mod common;

use common::packages::{FILESYSTEM, VERSION, node_dir, seed};

use std::io::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use common::{Env, repo};
use gatehouse_host::ErrorCode;
use gatehouse_package::lockfile::{Platform, npm_closure};
use gatehouse_testkit::bundles;
use gatehouse_testkit::mirror::Mirror;
use serde_json::{Value, json};
use sha2::{Digest, Sha256, Sha512};

const DENY: [&str; 2] = ["--posture", "deny-by-default"];
const ID: &str = "urn:test:filesystem";

fn node_sha256() -> String {
    hex::encode(Sha256::digest(std::fs::read(common::node()).unwrap()))
}

/// The binding an admin writes from the test package's lockfile.
fn filesystem_binding() -> Value {
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
        "interpreter": {"kind": "node", "sha256": [node_sha256()]},
        "userArgs": [{"rule": "existing_directory_under_home", "access": "read_write", "min": 1, "max": 4}],
        "attestation": bundles::attestation(ID, None),
    })
}

fn install_bundle(env: &Env, id: &str, binding: Value, tools: &[&str]) {
    let mut signed = bundles::signed(json!([{
        "id": id,
        "package": binding,
        "allowedTools": tools,
    }]));
    signed["specVersion"] = json!(4);
    bundles::install(&env.trust_roots(), &signed);
}

/// The registry's path of an npm tarball: `<name>/-/<basename>-<version>.tgz`, the basename
/// without the scope (written out here, not taken from the host, so the host's layout is
/// checked against the registry's).
fn npm_tarball_path(name: &str, version: &str) -> String {
    let base = name.rsplit('/').next().unwrap_or(name);
    format!("{name}/-/{base}-{version}.tgz")
}

/// The mirror path of every distinct tarball of `binding` (root and closure), sorted: what a
/// fetch of the whole closure asks for, each once.
fn tarball_requests(binding: &Value) -> Vec<String> {
    let mut paths: Vec<String> = std::iter::once(binding)
        .chain(binding["closure"].as_array().unwrap())
        .map(|p| {
            format!(
                "/npm/{}",
                npm_tarball_path(p["name"].as_str().unwrap(), p["version"].as_str().unwrap())
            )
        })
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// The registry's file name of a tarball: `<basename>-<version>.tgz`.
fn tarball_file(name: &str, version: &str) -> String {
    let path = npm_tarball_path(name, version);
    path.rsplit('/').next().unwrap().to_string()
}

struct Fixture {
    env: Env,
    sources: PathBuf,
    docs: PathBuf,
}

impl Fixture {
    /// A user's machine whose package sources are `registry` only (no seed), with the
    /// filesystem server bound and configured the way Claude Desktop writes it.
    fn new(registry: &Mirror) -> Fixture {
        let env = Env::new();
        let sources = env.dir.path().join("package-sources.json");
        std::fs::write(
            &sources,
            serde_json::to_vec(&json!({"npmRegistry": registry.npm_url(), "network": true}))
                .unwrap(),
        )
        .unwrap();
        let docs = env.dir.path().join("docs");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::write(docs.join("note.txt"), "fetched by its hash").unwrap();
        install_bundle(
            &env,
            ID,
            filesystem_binding(),
            &["list_allowed_directories", "read_text_file"],
        );
        let fixture = Fixture { env, sources, docs };
        let docs = fixture.docs.display().to_string();
        fixture.configure(&["-y", &format!("{FILESYSTEM}@{VERSION}"), &docs]);
        fixture
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
                // no npm or npx on it, so nothing can run through them.
                cmd.env("PATH", format!("{}:/usr/bin:/bin", node_dir().display()));
                common::output_of(cmd)
            },
            &all,
        )
    }

    fn connect(&self) -> (i32, Value) {
        self.json(&["connect", "files"])
    }

    /// `list_allowed_directories` answers with the user's directory: the server runs.
    fn assert_call_works(&self, when: &str) {
        let (code, out) = self.json(&["call", "files", "list_allowed_directories"]);
        assert_eq!(code, 0, "{when}: {out}");
        let text = out["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        let canonical = std::fs::canonicalize(&self.docs).unwrap();
        assert!(
            text.contains(&canonical.display().to_string()),
            "{when}: {out}"
        );
    }

    fn store(&self) -> PathBuf {
        self.env.dir.path().join(".local/share/gatehouse/store")
    }
}

fn assert_admitted(code: i32, out: &Value, when: &str) {
    assert_eq!(code, 0, "{when}: {out}");
    assert_eq!(out["admission"]["status"], "admitted", "{when}: {out}");
}

/// The names in the store directory (none when it does not exist), but its lock file (which
/// every install creates and keeps).
fn store_names(store: &Path) -> Vec<String> {
    let mut names: Vec<String> = match std::fs::read_dir(store) {
        Ok(dir) => dir
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name != ".lock")
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => panic!("{}: {e}", store.display()),
    };
    names.sort();
    names
}

fn is_key(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The one installed entry's key; fails unless the store holds exactly one entry and nothing
/// else (no leftover of an install).
fn only_entry(store: &Path) -> String {
    let names = store_names(store);
    assert!(
        names.len() == 1 && is_key(&names[0]),
        "one entry and nothing else: {names:?}"
    );
    names[0].clone()
}

fn assert_nothing_stored(store: &Path, when: &str) {
    let names = store_names(store);
    assert!(names.is_empty(), "{when}: the store holds {names:?}");
}

#[test]
fn the_first_connect_fetches_each_tarball_once_and_launches_need_no_network() {
    let mirror = Mirror::start(seed());
    let fixture = Fixture::new(&mirror);
    assert!(
        mirror.requests().is_empty(),
        "nothing is fetched before a connect"
    );

    let (code, out) = fixture.connect();
    assert_admitted(code, &out, "first connect");
    let expected = tarball_requests(&filesystem_binding());
    assert!(expected.len() > 50, "{expected:?}");
    let requests = mirror.requests();
    let mut distinct = requests.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        distinct, expected,
        "every tarball of the closure is fetched, and nothing else is asked for"
    );
    let repeated: Vec<String> = expected
        .iter()
        .filter_map(|path| {
            let times = requests.iter().filter(|r| *r == path).count();
            (times > 1).then(|| format!("{path} x{times}"))
        })
        .collect();
    assert!(
        repeated.is_empty(),
        "each tarball is fetched once, even when the closure installs it at several paths: {repeated:?}"
    );
    only_entry(&fixture.store());

    // Installed: a launch reads the store only.
    let (code, out) = fixture.connect();
    assert_admitted(code, &out, "second connect");
    fixture.assert_call_works("second launch");
    assert_eq!(
        mirror.requests(),
        requests,
        "a launch of an installed package fetches nothing"
    );

    // The registry gone: the installed package still runs.
    mirror.stop();
    let (code, out) = fixture.connect();
    assert_admitted(code, &out, "registry unreachable");
    fixture.assert_call_works("registry unreachable");
    only_entry(&fixture.store());
}

#[test]
fn a_dependency_served_with_other_bytes_is_refused_naming_the_pinned_hash_and_stores_nothing() {
    let seed = seed();
    let mirror = Mirror::start(&seed);
    let fixture = Fixture::new(&mirror);
    let binding = filesystem_binding();
    // A dependency, not the bound package: every artifact is checked, not only the root.
    let victim = binding["closure"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| !p["name"].as_str().unwrap().starts_with('@'))
        .unwrap()
        .clone();
    let (name, version) = (
        victim["name"].as_str().unwrap(),
        victim["version"].as_str().unwrap(),
    );
    let file = tarball_file(name, version);
    // What a compromised registry serves: a well-formed tarball, just not the pinned one (the
    // bound package's own bytes).
    let other =
        std::fs::read(seed.join("npm").join(npm_tarball_path(FILESYSTEM, VERSION))).unwrap();
    mirror.set_tamper(&file, other);

    let (code, out) = fixture.connect();
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out["error"]["code"],
        ErrorCode::ArtifactMismatch.as_str(),
        "{out}"
    );
    let message = out["error"]["message"].as_str().unwrap();
    let pinned = victim["artifact"].as_str().unwrap();
    assert!(message.contains(pinned), "names the pinned hash: {message}");
    assert!(
        mirror
            .requests()
            .iter()
            .any(|r| r.ends_with(&format!("/{file}"))),
        "the tampered file was fetched: {:?}",
        mirror.requests()
    );
    // Nothing was unpacked: no entry, no leftover of one.
    assert_nothing_stored(&fixture.store(), "after the mismatch");

    // The registry serving the pinned bytes again: installed and admitted.
    mirror.set_tamper(
        &file,
        std::fs::read(seed.join("npm").join(npm_tarball_path(name, version))).unwrap(),
    );
    let (code, out) = fixture.connect();
    assert_admitted(code, &out, "the registry fixed");
    only_entry(&fixture.store());
}

#[test]
fn an_unreachable_registry_before_install_is_package_unavailable_and_stores_nothing() {
    let mirror = Mirror::start(seed());
    let fixture = Fixture::new(&mirror);
    mirror.stop();

    let (code, out) = fixture.connect();
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out["error"]["code"],
        ErrorCode::PackageUnavailable.as_str(),
        "{out}"
    );
    let message = out["error"]["message"].as_str().unwrap();
    assert!(message.contains(FILESYSTEM), "names the package: {message}");
    assert!(message.contains("package-sources.json"), "{message}");
    assert_nothing_stored(&fixture.store(), "registry unreachable");
    assert!(mirror.requests().is_empty());

    // A call (which connects first) is refused the same way and launches nothing.
    let (code, out) = fixture.json(&["call", "files", "list_allowed_directories"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out["error"]["code"],
        ErrorCode::PackageUnavailable.as_str(),
        "{out}"
    );
    assert_nothing_stored(&fixture.store(), "call with the registry unreachable");
}

const SCRIPTED: &str = "scripted-server";
const SCRIPTED_VERSION: &str = "1.0.0";

/// A stdio MCP server small enough to read: a 2025-11-25 server answering `initialize` and
/// `tools/list` (no tools); anything else (the host's `server/discover` probe) is an unknown
/// method, as for any server of that era.
const SCRIPTED_INDEX: &str = r#"const lines = require("readline").createInterface({ input: process.stdin });
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
lines.on("line", (line) => {
  const message = JSON.parse(line);
  if (message.id === undefined) return;
  if (message.method === "initialize") {
    send({ id: message.id, result: {
      protocolVersion: "2025-11-25",
      capabilities: { tools: {} },
      serverInfo: { name: "scripted", version: "1.0.0" },
    } });
  } else if (message.method === "tools/list") {
    send({ id: message.id, result: { tools: [] } });
  } else {
    send({ id: message.id, error: { code: -32601, message: "Method not found" } });
  }
});
"#;

/// An npm tarball as `npm pack` writes one: every file under `package/`.
fn npm_tarball(files: &[(&str, &[u8], u32)]) -> Vec<u8> {
    let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gzip);
    for (path, data, mode) in files {
        let mut header = tar::Header::new_ustar();
        header.set_path(format!("package/{path}")).unwrap();
        header.set_size(data.len() as u64);
        header.set_mode(*mode);
        header.set_mtime(499162500);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        tar.append(&header, *data).unwrap();
    }
    let mut gzip = tar.into_inner().unwrap();
    gzip.flush().unwrap();
    gzip.finish().unwrap()
}

fn sri_sha512(bytes: &[u8]) -> String {
    format!(
        "sha512-{}",
        base64::engine::general_purpose::STANDARD.encode(Sha512::digest(bytes))
    )
}

#[test]
fn an_npm_package_with_install_scripts_is_installed_without_running_them() {
    let env = Env::new();
    let markers = env.dir.path().join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    // Every lifecycle script npm runs on install, each leaving its own trace.
    let phases = ["preinstall", "install", "postinstall", "prepare"];
    let scripts: serde_json::Map<String, Value> = phases
        .iter()
        .map(|phase| {
            let marker = markers.join(phase);
            (
                (*phase).to_string(),
                json!(format!("echo ran > '{}'", marker.display())),
            )
        })
        .collect();
    let package_json = serde_json::to_vec_pretty(&json!({
        "name": SCRIPTED,
        "version": SCRIPTED_VERSION,
        "main": "index.js",
        "scripts": scripts,
    }))
    .unwrap();
    let tarball = npm_tarball(&[
        ("package.json", &package_json, 0o644),
        ("index.js", SCRIPTED_INDEX.as_bytes(), 0o644),
    ]);
    let seed = env.dir.path().join("registry");
    let path = seed
        .join("npm")
        .join(npm_tarball_path(SCRIPTED, SCRIPTED_VERSION));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &tarball).unwrap();
    let mirror = Mirror::start(&seed);

    let sources = env.dir.path().join("package-sources.json");
    std::fs::write(
        &sources,
        serde_json::to_vec(&json!({"npmRegistry": mirror.npm_url()})).unwrap(),
    )
    .unwrap();
    install_bundle(
        &env,
        "urn:test:scripted",
        json!({
            "ecosystem": "npm",
            "name": SCRIPTED,
            "version": SCRIPTED_VERSION,
            "artifact": sri_sha512(&tarball),
            "closure": [],
            "entry": "index.js",
            "interpreter": {"kind": "node", "sha256": [node_sha256()]},
            "attestation": bundles::attestation("urn:test:scripted", None),
        }),
        &["noop"],
    );
    let config = json!({"mcpServers": {"scripted": {
        "command": "npx", "args": ["-y", format!("{SCRIPTED}@{SCRIPTED_VERSION}")],
    }}});
    std::fs::write(env.config(), serde_json::to_vec(&config).unwrap()).unwrap();

    let mut args = vec!["--package-sources", sources.to_str().unwrap()];
    args.extend_from_slice(&DENY);
    args.extend_from_slice(&["connect", "scripted"]);
    let (code, out) = common::json_of(
        |all| {
            let mut cmd = env.cmd(all);
            cmd.env("PATH", format!("{}:/usr/bin:/bin", node_dir().display()));
            common::output_of(cmd)
        },
        &args,
    );
    assert_admitted(code, &out, "the scripted package");
    assert_eq!(
        mirror.requests(),
        vec![format!(
            "/npm/{}",
            npm_tarball_path(SCRIPTED, SCRIPTED_VERSION)
        )]
    );

    for phase in phases {
        assert!(
            !markers.join(phase).exists(),
            "the {phase} script ran: nothing may run at install"
        );
    }
    // Installed as shipped: the scripts are still in package.json, untouched, and the tree
    // holds only what the tarball holds.
    let store = env.dir.path().join(".local/share/gatehouse/store");
    let key = only_entry(&store);
    let package = store.join(&key).join("tree/node_modules").join(SCRIPTED);
    assert_eq!(
        std::fs::read(package.join("package.json")).unwrap(),
        package_json
    );
    assert_eq!(
        std::fs::read(package.join("index.js")).unwrap(),
        SCRIPTED_INDEX.as_bytes()
    );
    let mut names = store_names(&package);
    names.sort();
    assert_eq!(names, ["index.js", "package.json"]);
    assert_eq!(
        store_names(&store.join(&key).join("tree/node_modules")),
        [SCRIPTED]
    );
}

#[test]
fn what_a_crash_mid_install_leaves_is_removed_and_never_used() {
    let mirror = Mirror::start(seed());
    let fixture = Fixture::new(&mirror);
    let (code, out) = fixture.connect();
    assert_admitted(code, &out, "first install");
    let fetched = mirror.requests().len();
    let store = fixture.store();
    let key = only_entry(&store);

    // What a crash between unpacking and the rename leaves: the whole tree under a temporary
    // name (here with a changed entry point, so using it would be seen), and an earlier
    // crash's half-written tree with no manifest. A crash never leaves a final-named entry:
    // the rename is one step.
    let complete = store.join(format!(".tmp-{key}-4194303-0"));
    std::fs::rename(store.join(&key), &complete).unwrap();
    let entry_point = complete
        .join("tree/node_modules")
        .join(FILESYSTEM)
        .join("dist/index.js");
    let mut text = std::fs::read_to_string(&entry_point).unwrap();
    text.push_str("\n// written after the check\n");
    std::fs::write(&entry_point, &text).unwrap();
    let partial = store.join(format!(".tmp-{key}-4194302-7"));
    std::fs::create_dir_all(partial.join("tree/node_modules/half")).unwrap();
    std::fs::write(partial.join("tree/node_modules/half/index.js"), "junk").unwrap();

    let (code, out) = fixture.connect();
    assert_admitted(code, &out, "after the crash");
    // Installed again from the registry, not adopted from the leftovers.
    assert_eq!(
        mirror.requests().len(),
        fetched * 2,
        "the closure is fetched again"
    );
    assert_eq!(only_entry(&store), key, "the leftovers are gone");
    let installed = std::fs::read_to_string(
        store
            .join(&key)
            .join("tree/node_modules")
            .join(FILESYSTEM)
            .join("dist/index.js"),
    )
    .unwrap();
    assert!(!installed.contains("written after the check"));
    fixture.assert_call_works("after the crash");
}

#[test]
fn a_tarball_that_writes_outside_its_directory_is_refused_and_nothing_is_written() {
    let env = Env::new();
    let package_json =
        serde_json::to_vec(&json!({"name": SCRIPTED, "version": SCRIPTED_VERSION})).unwrap();
    // An entry named `package/../../../escaped.js`, written byte for byte (the tar crate's
    // own path setter refuses `..`, as a hostile packer would not).
    let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gzip);
    for (name, data) in [
        (&b"package/package.json"[..], &package_json[..]),
        (&b"package/../../../escaped.js"[..], &b"owned()"[..]),
    ] {
        let mut header = tar::Header::new_ustar();
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        tar.append(&header, data).unwrap();
    }
    let tarball = tar.into_inner().unwrap().finish().unwrap();
    let seed = env.dir.path().join("registry");
    let path = seed
        .join("npm")
        .join(npm_tarball_path(SCRIPTED, SCRIPTED_VERSION));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &tarball).unwrap();
    let mirror = Mirror::start(&seed);
    let sources = env.dir.path().join("package-sources.json");
    std::fs::write(
        &sources,
        serde_json::to_vec(&json!({"npmRegistry": mirror.npm_url()})).unwrap(),
    )
    .unwrap();
    install_bundle(
        &env,
        "urn:test:escaping",
        json!({
            "ecosystem": "npm", "name": SCRIPTED, "version": SCRIPTED_VERSION,
            "artifact": sri_sha512(&tarball), "closure": [], "entry": "index.js",
            "interpreter": {"kind": "node", "sha256": [node_sha256()]},
            "attestation": bundles::attestation("urn:test:escaping", None),
        }),
        &["noop"],
    );
    let config = json!({"mcpServers": {"escaping": {
        "command": "npx", "args": ["-y", format!("{SCRIPTED}@{SCRIPTED_VERSION}")],
    }}});
    std::fs::write(env.config(), serde_json::to_vec(&config).unwrap()).unwrap();
    let mut args = vec!["--package-sources", sources.to_str().unwrap()];
    args.extend_from_slice(&DENY);
    args.extend_from_slice(&["connect", "escaping"]);
    let (code, out) = common::json_of(
        |all| {
            let mut cmd = env.cmd(all);
            cmd.env("PATH", format!("{}:/usr/bin:/bin", node_dir().display()));
            common::output_of(cmd)
        },
        &args,
    );
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["error"]["code"], "archive_unsafe", "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("escaped.js"),
        "{out}"
    );
    assert_nothing_stored(
        &env.dir.path().join(".local/share/gatehouse/store"),
        "escaping",
    );
    let escaped: Vec<_> = walk_names(env.dir.path())
        .into_iter()
        .filter(|n| n == "escaped.js")
        .collect();
    assert!(escaped.is_empty(), "a file escaped the store");
}

/// Every file name under `dir`, recursively.
fn walk_names(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() && !path.is_symlink() {
            names.extend(walk_names(&path));
        } else {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    names
}
