//! One admin bundle, authored with `bundle add-server` for two real packages of two
//! ecosystems (`@modelcontextprotocol/server-everything@2026.8.31` from its lockfile,
//! `mcp-server-time==2026.10.19` from its hashed requirements), signed and installed; the
//! user's Claude-Desktop-shaped config says `npx -y …` and `uvx …`; a real MCP client (the
//! TypeScript SDK's) calls their allowed tools through `gatehouse serve`, in deny-by-default,
//! with the network off (the install step's seed is the only source).

mod common;

use std::path::PathBuf;

use common::{Env, repo};
use serde_json::{Value, json};

const EVERYTHING: &str = "@modelcontextprotocol/server-everything";

struct Machine {
    env: Env,
    sources: PathBuf,
    bin: PathBuf,
    keys: PathBuf,
    bundle: PathBuf,
}

impl Machine {
    fn new() -> Machine {
        let env = Env::new();
        let seed = repo().join("target/package-seed");
        assert!(
            seed.join("npm").join(EVERYTHING).is_dir(),
            "{} is missing: run scripts/install-deps.sh",
            seed.display()
        );
        let sources = env.dir.path().join("package-sources.json");
        std::fs::write(
            &sources,
            json!({"seed": [seed], "network": false}).to_string(),
        )
        .unwrap();
        // python3 first on PATH is the real interpreter (not a version manager's shim), then
        // the pinned Node; no npx or uvx anywhere.
        let bin = env.dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(common::python3(), bin.join("python3")).unwrap();
        let keys = env.dir.path().join("keys");
        let bundle = env.dir.path().join("acme.json");
        Machine {
            env,
            sources,
            bin,
            keys,
            bundle,
        }
    }

    fn path_env(&self) -> String {
        format!(
            "{}:{}:/usr/bin:/bin",
            self.bin.display(),
            common::node().parent().unwrap().display()
        )
    }

    fn run(&self, args: &[&str]) -> (i32, Value) {
        common::json_of(
            |all| {
                let mut cmd = self.env.cmd(all);
                cmd.env("PATH", self.path_env())
                    .env("GATEHOUSE_PACKAGE_SOURCES", &self.sources)
                    .env("GATEHOUSE_POSTURE", "deny-by-default");
                common::output_of(cmd)
            },
            args,
        )
    }

    fn key(&self, name: &str) -> String {
        self.keys.join(name).display().to_string()
    }
}

#[test]
fn an_admin_binds_an_npm_and_a_pypi_server_and_a_real_client_calls_them_through_serve() {
    let machine = Machine::new();
    let keys = machine.keys.display().to_string();
    for id in ["root", "signer"] {
        let (code, out) = machine.run(&["bundle", "keygen", "--out", &keys, "--id", id]);
        assert_eq!(code, 0, "{out}");
    }
    let bundle = machine.bundle.to_str().unwrap();
    let (code, out) = machine.run(&[
        "bundle",
        "init",
        "--bundle-id",
        "acme",
        "--root-key",
        &machine.key("root.pub.json"),
        "--signer-key",
        &machine.key("signer.pub.json"),
        "--out",
        bundle,
    ]);
    assert_eq!(code, 0, "{out}");
    let signer = machine.key("signer.key");
    let lock = repo().join("tests/packages/npm/server-everything/package-lock.json");
    let (code, out) = machine.run(&[
        "bundle",
        "add-server",
        bundle,
        "--id",
        "urn:acme:everything",
        "--clearance",
        "internal",
        "--signer-key",
        &signer,
        "--npm",
        &format!("{EVERYTHING}@2026.8.31"),
        "--lockfile",
        lock.to_str().unwrap(),
        "--tool",
        "echo",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out["tools_listed"].as_array().unwrap().len() > 3, "{out}");
    let requirements = repo().join("tests/packages/pypi/mcp-server-time/requirements.txt");
    let (code, out) = machine.run(&[
        "bundle",
        "add-server",
        bundle,
        "--id",
        "urn:acme:time",
        "--clearance",
        "internal",
        "--signer-key",
        &signer,
        "--pypi",
        "mcp-server-time==2026.10.19",
        "--requirements",
        requirements.to_str().unwrap(),
        "--arg=--local-timezone",
        "--arg=UTC",
        "--tool",
        "get_current_time",
    ]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = machine.run(&["bundle", "sign", "--key", &machine.key("root.key"), bundle]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = machine.run(&["bundle", "install", bundle]);
    assert_eq!(code, 0, "{out}");

    // The user's config, as Claude Desktop writes it.
    let config = json!({"mcpServers": {
        "everything": {"command": "npx", "args": ["-y", format!("{EVERYTHING}@2026.8.31")]},
        "time": {"command": "uvx", "args": ["mcp-server-time", "--local-timezone", "UTC"]},
    }});
    std::fs::write(machine.env.config(), config.to_string()).unwrap();

    let steps = json!([
        {"op": "list"},
        {"op": "call", "name": "everything__echo", "arguments": {"message": "from the store"}},
        {"op": "call", "name": "time__get_current_time", "arguments": {"timezone": "UTC"}},
        // Listed by the server, not allowed by the bundle: not offered, refused if guessed.
        {"op": "call", "name": "time__convert_time", "arguments":
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "UTC"}},
    ]);
    let mut command = common::ts_client_command(&steps);
    command.arg(env!("CARGO_BIN_EXE_gatehouse")).args([
        "--config",
        machine.env.config().to_str().unwrap(),
        "serve",
    ]);
    machine.env.isolate(&mut command);
    command
        .env("GATEHOUSE_POSTURE", "deny-by-default")
        .env("GATEHOUSE_PACKAGE_SOURCES", &machine.sources)
        .env("PATH", machine.path_env());
    let (ok, lines, stderr) = common::client_run(command);
    assert!(ok, "{lines:?}\n{stderr}");
    let offered = common::offered(&lines[0]);
    for name in ["everything__echo", "time__get_current_time"] {
        assert!(offered.contains(&name.to_string()), "{offered:?}");
    }
    assert!(
        !offered.contains(&"time__convert_time".to_string()),
        "{offered:?}"
    );
    assert!(
        common::result_text(&lines[1]).contains("from the store"),
        "{lines:?}"
    );
    assert!(common::result_text(&lines[2]).contains("UTC"), "{lines:?}");
    assert_eq!(lines[3]["result"]["isError"], true, "{}", lines[3]);
    assert!(
        common::result_text(&lines[3]).contains("(code tool_not_admitted)"),
        "{}",
        lines[3]
    );
}

#[test]
fn add_server_binds_a_plain_stdio_server_by_its_executable_and_arguments() {
    let machine = Machine::new();
    let keys = machine.keys.display().to_string();
    for id in ["root", "signer"] {
        let (code, out) = machine.run(&["bundle", "keygen", "--out", &keys, "--id", id]);
        assert_eq!(code, 0, "{out}");
    }
    let bundle = machine.bundle.to_str().unwrap();
    let (code, out) = machine.run(&[
        "bundle",
        "init",
        "--bundle-id",
        "acme",
        "--root-key",
        &machine.key("root.pub.json"),
        "--signer-key",
        &machine.key("signer.pub.json"),
        "--out",
        bundle,
    ]);
    assert_eq!(code, 0, "{out}");
    let demo = common::demo_bin();
    let signer = machine.key("signer.key");
    let add = |tool: &str| {
        machine.run(&[
            "bundle",
            "add-server",
            bundle,
            "--id",
            "urn:acme:demo",
            "--clearance",
            "internal",
            "--signer-key",
            &signer,
            "--stdio",
            &demo,
            "--tool",
            tool,
        ])
    };
    let before = std::fs::read(&machine.bundle).unwrap();
    let (code, out) = add("no_such_tool");
    assert_ne!(code, 0, "{out}");
    assert!(
        out["error"]["message"].as_str().unwrap().contains("echo"),
        "{out}"
    );
    assert_eq!(std::fs::read(&machine.bundle).unwrap(), before);
    let (code, out) = add("echo");
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["tools_allowed"], json!(["echo"]), "{out}");
    let written: Value = serde_json::from_slice(&std::fs::read(&machine.bundle).unwrap()).unwrap();
    let stdio = &written["signed"]["servers"][0]["stdio"];
    assert_eq!(
        stdio["sha256"],
        common::packages::sha256_file(&std::fs::canonicalize(&demo).unwrap()),
        "{stdio}"
    );
    let (code, out) = machine.run(&["bundle", "sign", "--key", &machine.key("root.key"), bundle]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = machine.run(&["bundle", "install", bundle]);
    assert_eq!(code, 0, "{out}");

    let config = json!({"mcpServers": {"demo": {"command": demo}}});
    std::fs::write(machine.env.config(), config.to_string()).unwrap();
    let (code, out) = machine.run(&["call", "demo", "echo", "--args", r#"{"message": "bound"}"#]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["result"]["content"][0]["text"], "bound", "{out}");
    let (code, out) = machine.run(&["call", "demo", "add", "--args", r#"{"a": 1, "b": 2}"#]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["error"]["code"], "tool_not_admitted", "{out}");
}
