//! PyPI package servers through the real binary (issue 25): a Claude-Desktop-shaped config that
//! says `uvx mcp-server-time --local-timezone UTC` (or `@VERSION`, or `--from NAME==VERSION`),
//! bound by a signed bundle to the closure an admin's hashed requirements file pins, with the
//! wheels for this machine's Python chosen by `gatehouse_package::wheels`, installed from the
//! artifacts the install step fetched (a seed directory, network off), and run by the pinned
//! `python3 -I -S` on the stored console script, never through uvx.

mod common;

use common::packages::sha256_file;

use std::path::PathBuf;
use std::process::Command;

use common::{Env, repo};
use gatehouse_host::ErrorCode;
use gatehouse_host::audit_event::gate::Admission;
use gatehouse_package::wheels::{
    Arch, Environment, Implementation, Os, Platform, choose, parse_requirements,
};
use gatehouse_testkit::audit::payloads_in;
use gatehouse_testkit::bundles;
use serde_json::{Value, json};

const DENY: [&str; 2] = ["--posture", "deny-by-default"];
const TIME: &str = "mcp-server-time";
const VERSION: &str = "2026.10.19";
const ID: &str = "urn:test:time";

/// The artifacts `scripts/install-deps.sh` fetched (`scripts/fetch-packages.mjs`).
fn seed() -> PathBuf {
    let seed = repo().join("target/package-seed");
    assert!(
        seed.join("pypi")
            .join(format!("mcp_server_time-{VERSION}-py3-none-any.whl"))
            .is_file(),
        "{} is missing: run scripts/install-deps.sh (it fetches the test packages)",
        seed.display()
    );
    seed
}

/// The machine's `python3` (as the tests' own PATH finds it), resolved to its binary, and
/// what `wheels::choose` needs to know of it.
struct Python {
    binary: PathBuf,
    env: Environment,
}

fn python() -> Python {
    let out = Command::new("python3")
        .args([
            "-I",
            "-S",
            "-c",
            "import os, sys; print(os.path.realpath(sys.executable)); \
             print(sys.version_info[0], sys.version_info[1]); \
             print(os.confstr('CS_GNU_LIBC_VERSION'))",
        ])
        .output()
        .expect("python3 on PATH (the PyPI package tests run the system's Python)");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let binary = PathBuf::from(lines[0]);
    let mut version = lines[1].split(' ').map(|n| n.parse::<u32>().unwrap());
    let python = (version.next().unwrap(), version.next().unwrap());
    let glibc = lines[2]
        .strip_prefix("glibc ")
        .expect("a glibc Linux (the seed holds manylinux wheels)");
    let (major, minor) = glibc.split_once('.').unwrap();
    let glibc = (major.parse().unwrap(), minor.parse().unwrap());
    assert!(
        (11..=13).contains(&python.1),
        "the seed holds wheels for CPython 3.11-3.13, not {python:?}"
    );
    Python {
        binary: binary.canonicalize().unwrap(),
        env: Environment {
            python,
            implementation: Implementation::CPython,
            platform: Platform {
                os: Os::Linux,
                arch: Arch::X86_64,
            },
            glibc,
        },
    }
}

/// The binding an admin writes from the hashed requirements file, for `python`.
fn time_binding(python: &Python, interpreter_sha256: &str) -> Value {
    let text = std::fs::read_to_string(
        repo().join("tests/packages/pypi/mcp-server-time/requirements.txt"),
    )
    .unwrap();
    let requirements = parse_requirements(&text).unwrap();
    let files: Vec<(String, String)> = std::fs::read_dir(seed().join("pypi"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "whl"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                sha256_file(&p),
            )
        })
        .collect();
    let pinned = choose(&requirements, &files, &python.env).unwrap();
    assert_eq!(
        pinned.len(),
        requirements.len(),
        "no markers in this closure"
    );
    let (root, closure): (Vec<_>, Vec<_>) = pinned.into_iter().partition(|p| p.name == TIME);
    assert_eq!(root.len(), 1);
    json!({
        "ecosystem": "pypi",
        "name": TIME,
        "version": VERSION,
        "artifact": root[0].artifact.to_text(),
        "closure": closure.iter().map(|p| json!({
            "name": p.name, "version": p.version, "artifact": p.artifact.to_text(),
        })).collect::<Vec<_>>(),
        "entry": TIME,
        "interpreter": {"kind": "python", "sha256": [interpreter_sha256]},
        "args": ["--local-timezone", "UTC"],
        "attestation": bundles::attestation(ID, None),
    })
}

fn install_bundle(env: &Env, binding: Value) {
    let mut signed = bundles::signed(json!([{
        "id": ID,
        "package": binding,
        "allowedTools": ["get_current_time"],
    }]));
    signed["specVersion"] = json!(4);
    bundles::install(&env.trust_roots(), &signed);
}

struct Fixture {
    env: Env,
    sources: PathBuf,
    /// Holds only `python3`, a link to the reviewed binary.
    bin: PathBuf,
    python: Python,
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
        let python = python();
        let bin = env.dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(&python.binary, bin.join("python3")).unwrap();
        install_bundle(&env, time_binding(&python, &sha256_file(&python.binary)));
        Fixture {
            env,
            sources,
            bin,
            python,
        }
    }

    /// servers.json as Claude Desktop writes it.
    fn configure(&self, args: &[&str], env: Option<Value>) {
        let mut server = json!({"command": "uvx", "args": args});
        if let Some(env) = env {
            server["env"] = env;
        }
        let config = json!({"mcpServers": {"time": server}});
        std::fs::write(self.env.config(), serde_json::to_vec(&config).unwrap()).unwrap();
    }

    fn json(&self, args: &[&str]) -> (i32, Value) {
        let mut all = vec!["--package-sources", self.sources.to_str().unwrap()];
        all.extend_from_slice(&DENY);
        all.extend_from_slice(args);
        common::json_of(
            |all| {
                let mut cmd = self.env.cmd(all);
                // The reviewed python3 first on PATH; no uvx anywhere on it, so nothing can
                // run through the launcher.
                cmd.env("PATH", format!("{}:/usr/bin:/bin", self.bin.display()));
                common::output_of(cmd)
            },
            &all,
        )
    }
}

#[test]
fn each_uvx_form_runs_the_bound_package_from_the_store_in_deny_by_default() {
    let fixture = Fixture::new();
    let from = format!("{TIME}=={VERSION}");
    let at = format!("{TIME}@{VERSION}");
    for args in [
        vec![TIME, "--local-timezone", "UTC"],
        vec![at.as_str(), "--local-timezone", "UTC"],
        vec!["--from", from.as_str(), TIME, "--local-timezone", "UTC"],
    ] {
        fixture.configure(&args, None);
        let (code, out) = fixture.json(&["connect", "time"]);
        assert_eq!(code, 0, "{args:?}: {out}");
        assert_eq!(out["admission"]["status"], "admitted", "{args:?}: {out}");

        let (code, out) = fixture.json(&[
            "call",
            "time",
            "get_current_time",
            "--args",
            r#"{"timezone":"UTC"}"#,
        ]);
        assert_eq!(code, 0, "{args:?}: {out}");
        let text = out["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(text.contains("\"timezone\": \"UTC\""), "{args:?}: {out}");
        assert!(text.contains("datetime"), "{args:?}: {out}");
    }

    // A tool the bundle does not list is refused by the gate.
    let (code, out) = fixture.json(&[
        "call",
        "time",
        "convert_time",
        "--args",
        r#"{"source_timezone":"UTC","time":"12:00","target_timezone":"UTC"}"#,
    ]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["error"]["code"], "tool_not_admitted", "{out}");

    // What ran is the reviewed python3 on the stored tree, not uvx.
    let (code, out) = fixture.json(&["audit", "show", "--type", "admission"]);
    assert_eq!(code, 0, "{out}");
    let admissions: Vec<Admission> = payloads_in(out["records"].as_array().unwrap());
    let admitted: Vec<&Admission> = admissions.iter().filter(|a| a.package.is_some()).collect();
    assert!(!admitted.is_empty(), "{out}");
    let python = fixture.python.binary.display().to_string();
    for admission in admitted {
        let package = admission.package.as_ref().unwrap();
        assert_eq!(package.package, TIME);
        assert_eq!(package.version, VERSION);
        let command = admission.command.as_deref().unwrap();
        assert!(command.starts_with(&python), "{command}");
        assert!(command.contains("/store/"), "{command}");
        assert!(!command.contains("uvx"), "{command}");
    }
}

#[test]
fn another_version_a_module_path_and_another_interpreter_are_refused() {
    let fixture = Fixture::new();
    // The passing twin first: the bound version.
    fixture.configure(&[TIME, "--local-timezone", "UTC"], None);
    let (code, out) = fixture.json(&["connect", "time"]);
    assert_eq!(code, 0, "{out}");

    fixture.configure(
        &[&format!("{TIME}@2025.1.1"), "--local-timezone", "UTC"],
        None,
    );
    let (code, out) = fixture.json(&["connect", "time"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out["error"]["code"],
        ErrorCode::PackageVersionNotBound.as_str(),
        "{out}"
    );
    assert!(
        out["error"]["message"].as_str().unwrap().contains(VERSION),
        "{out}"
    );

    // A module path in the config's env: modules would come from outside the verified tree.
    fixture.configure(
        &[TIME, "--local-timezone", "UTC"],
        Some(json!({"PYTHONPATH": fixture.env.dir.path().join("evil")})),
    );
    let (code, out) = fixture.json(&["connect", "time"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("PYTHONPATH"),
        "{out}"
    );
    assert_eq!(
        out["error"]["code"],
        ErrorCode::StdioBindingMismatch.as_str(),
        "{out}"
    );
    // The same env without it is admitted.
    fixture.configure(
        &[TIME, "--local-timezone", "UTC"],
        Some(json!({"TZ_NOTE": "kept"})),
    );
    let (code, out) = fixture.json(&["connect", "time"]);
    assert_eq!(code, 0, "{out}");

    // A binding for a Python with other bytes: this python3 is not allowed.
    let other = Fixture::new();
    install_bundle(&other.env, time_binding(&other.python, &"ab".repeat(32)));
    other.configure(&[TIME, "--local-timezone", "UTC"], None);
    let (code, out) = other.json(&["connect", "time"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out["error"]["code"],
        ErrorCode::InterpreterNotAllowed.as_str(),
        "{out}"
    );
    let message = out["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&sha256_file(&other.python.binary)),
        "{message}"
    );
}

#[test]
fn bundle_add_server_binds_a_pypi_package_from_its_requirements_file() {
    let fixture = Fixture::new();
    // A fresh admin: no bundle installed yet.
    std::fs::remove_dir_all(fixture.env.trust_roots()).unwrap();
    let keys = fixture.env.dir.path().join("keys");
    let bundle = fixture.env.dir.path().join("acme.json");
    // The admin's machine: the reviewed python3 first on PATH, the seed as the only source.
    let run = |args: &[&str]| {
        let mut all = vec!["--package-sources", fixture.sources.to_str().unwrap()];
        all.extend_from_slice(args);
        common::json_of(
            |all| {
                let mut cmd = fixture.env.cmd(all);
                cmd.env("PATH", format!("{}:/usr/bin:/bin", fixture.bin.display()));
                common::output_of(cmd)
            },
            &all,
        )
    };
    let key = |name: &str| keys.join(name).display().to_string();
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
    let requirements = repo().join("tests/packages/pypi/mcp-server-time/requirements.txt");
    let add = |pypi: &str| {
        run(&[
            "bundle",
            "add-server",
            bundle.to_str().unwrap(),
            "--id",
            ID,
            "--clearance",
            "internal",
            "--signer-key",
            &key("signer.key"),
            &format!("--pypi={pypi}"),
            &format!("--requirements={}", requirements.display()),
            "--arg=--local-timezone",
            "--arg=UTC",
            "--tool=get_current_time",
        ])
    };
    // A version the requirements file does not pin: refused, naming the pinned one.
    let before = std::fs::read(&bundle).unwrap();
    let (code, out) = add(&format!("{TIME}==2025.1.1"));
    assert_ne!(code, 0, "{out}");
    let message = out["error"]["message"].as_str().unwrap();
    assert!(message.contains(VERSION), "{out}");
    assert!(message.contains("root_version_mismatch"), "{out}");
    assert_eq!(std::fs::read(&bundle).unwrap(), before);

    let (code, out) = add(&format!("{TIME}=={VERSION}"));
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["tools_allowed"], json!(["get_current_time"]), "{out}");
    let written: Value = serde_json::from_slice(&std::fs::read(&bundle).unwrap()).unwrap();
    let package = &written["signed"]["servers"][0]["package"];
    // What the hand-built binding of the other tests says, chosen here by add-server.
    let expected = time_binding(&fixture.python, &sha256_file(&fixture.python.binary));
    for field in [
        "ecosystem",
        "name",
        "version",
        "artifact",
        "closure",
        "entry",
        "interpreter",
        "args",
    ] {
        assert_eq!(package[field], expected[field], "{field}: {package}");
    }

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

    fixture.configure(&[TIME, "--local-timezone", "UTC"], None);
    let (code, out) = fixture.json(&["connect", "time"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["admission"]["identity"]["bundle"], "acme@1", "{out}");
    let (code, out) = fixture.json(&[
        "call",
        "time",
        "get_current_time",
        "--args",
        r#"{"timezone":"UTC"}"#,
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(common::result_text(&out).contains("datetime"), "{out}");
}
