//! MCPB package servers through the real binary (issue 25): a `.mcpb` built by the official
//! `mcpb pack` from a tiny Node server, bound with `bundle add-server --mcpb`, signed and
//! installed; a config whose command is the path to the `.mcpb` runs the reviewed bytes from
//! the store with the pinned Node, and another `.mcpb` at the same path is refused.

mod common;

use common::packages::node_dir;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Env, repo};
use gatehouse_host::ErrorCode;
use serde_json::{Value, json};

const DENY: [&str; 2] = ["--posture", "deny-by-default"];
const ID: &str = "urn:test:hello-mcpb";

/// A stdio MCP server in plain Node: `initialize`, `tools/list` (one tool, `hello`),
/// `tools/call`; -32601 for anything else. `GREETING` is what `hello` answers.
fn server_js(greeting: &str) -> String {
    format!(
        r#"const readline = require("readline");
const GREETING = {greeting:?};
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
const tool = {{name: "hello", description: "Says hello.",
  inputSchema: {{type: "object", properties: {{name: {{type: "string"}}}}}}}};
readline.createInterface({{input: process.stdin}}).on("line", (line) => {{
  let m;
  try {{ m = JSON.parse(line); }} catch (e) {{ return; }}
  if (m.id === undefined) return;
  if (m.method === "initialize") {{
    send({{jsonrpc: "2.0", id: m.id, result: {{protocolVersion: "2025-11-25",
      capabilities: {{tools: {{}}}}, serverInfo: {{name: "hello", version: "1.0.0"}}}}}});
  }} else if (m.method === "tools/list") {{
    send({{jsonrpc: "2.0", id: m.id, result: {{tools: [tool]}}}});
  }} else if (m.method === "tools/call" && m.params && m.params.name === "hello") {{
    const who = (m.params.arguments && m.params.arguments.name) || "world";
    send({{jsonrpc: "2.0", id: m.id, result: {{content: [{{type: "text", text: GREETING + ", " + who}}]}}}});
  }} else {{
    send({{jsonrpc: "2.0", id: m.id, error: {{code: -32601, message: "Method not found"}}}});
  }}
}});
"#
    )
}

/// Packs `hello.mcpb` into `out` with the official CLI, from a directory holding a manifest
/// (server type node, entry `server/index.js`) and the server.
fn pack(work: &Path, out: &Path, greeting: &str) {
    let src = work.join(format!("src-{}", greeting.len()));
    std::fs::create_dir_all(src.join("server")).unwrap();
    let manifest = json!({
        "manifest_version": "0.3", "name": "hello", "version": "1.0.0",
        "description": "A test server.", "author": {"name": "Gatehouse tests"},
        "server": {"type": "node", "entry_point": "server/index.js",
                   "mcp_config": {"command": "node", "args": ["${__dirname}/server/index.js"]}},
    });
    std::fs::write(
        src.join("manifest.json"),
        serde_json::to_vec_pretty(&manifest).unwrap(),
    )
    .unwrap();
    std::fs::write(src.join("server/index.js"), server_js(greeting)).unwrap();
    let mcpb = repo().join("node_modules/.bin/mcpb");
    assert!(
        mcpb.is_file(),
        "{} is missing: run npm ci (the root package.json pins @anthropic-ai/mcpb)",
        mcpb.display()
    );
    let output = Command::new(&mcpb)
        .arg("pack")
        .arg(&src)
        .arg(out)
        .env("PATH", format!("{}:/usr/bin:/bin", node_dir().display()))
        .output()
        .unwrap();
    assert!(output.status.success(), "mcpb pack: {output:?}");
    assert!(out.is_file());
}

struct Admin<'a> {
    env: &'a Env,
    keys: PathBuf,
    bundle: PathBuf,
}

impl Admin<'_> {
    fn run(&self, args: &[&str]) -> (i32, Value) {
        common::json_of(
            |all| {
                let mut cmd = self.env.cmd(all);
                cmd.env("PATH", format!("{}:/usr/bin:/bin", node_dir().display()));
                common::output_of(cmd)
            },
            args,
        )
    }

    fn key(&self, name: &str) -> String {
        self.keys.join(name).display().to_string()
    }

    fn new(env: &Env) -> Admin<'_> {
        let admin = Admin {
            env,
            keys: env.dir.path().join("keys"),
            bundle: env.dir.path().join("acme.json"),
        };
        for id in ["root", "signer"] {
            let keys = admin.keys.display().to_string();
            let (code, out) = admin.run(&["bundle", "keygen", "--out", &keys, "--id", id]);
            assert_eq!(code, 0, "{out}");
        }
        let (code, out) = admin.run(&[
            "bundle",
            "init",
            "--bundle-id",
            "acme",
            "--root-key",
            &admin.key("root.pub.json"),
            "--signer-key",
            &admin.key("signer.pub.json"),
            "--out",
            admin.bundle.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{out}");
        admin
    }

    fn add(&self, extra: &[&str]) -> (i32, Value) {
        let mut args = vec![
            "bundle",
            "add-server",
            self.bundle.to_str().unwrap(),
            "--id",
            ID,
            "--clearance",
            "internal",
        ];
        let signer = self.key("signer.key");
        args.extend(["--signer-key", &signer]);
        args.extend_from_slice(extra);
        self.run(&args)
    }

    fn sign_and_install(&self) {
        let root = self.key("root.key");
        let bundle = self.bundle.to_str().unwrap();
        let (code, out) = self.run(&["bundle", "sign", "--key", &root, bundle]);
        assert_eq!(code, 0, "{out}");
        let (code, out) = self.run(&["bundle", "install", bundle]);
        assert_eq!(code, 0, "{out}");
    }
}

fn user(env: &Env, args: &[&str]) -> (i32, Value) {
    let mut all: Vec<&str> = DENY.to_vec();
    all.extend_from_slice(args);
    common::json_of(
        |all| {
            let mut cmd = env.cmd(all);
            cmd.env("PATH", format!("{}:/usr/bin:/bin", node_dir().display()));
            common::output_of(cmd)
        },
        &all,
    )
}

#[test]
fn a_packed_mcpb_is_bound_installed_and_run_and_another_file_at_its_path_is_refused() {
    let env = Env::new();
    let admin = Admin::new(&env);
    let bundles = env.dir.path().join("bundles");
    std::fs::create_dir_all(&bundles).unwrap();
    let file = bundles.join("hello.mcpb");
    pack(env.dir.path(), &file, "Hello");
    let file_arg = format!("--mcpb={}", file.display());

    // A tool the server does not list: refused by name, the bundle untouched.
    let before = std::fs::read(&admin.bundle).unwrap();
    let (code, out) = admin.add(&[&file_arg, "--tool=goodbye"]);
    assert_ne!(code, 0, "{out}");
    let message = out["error"]["message"].as_str().unwrap();
    assert!(message.contains("hello"), "{out}");
    assert_eq!(std::fs::read(&admin.bundle).unwrap(), before);

    let (code, out) = admin.add(&[&file_arg, "--tool=hello"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["tools_listed"], json!(["hello"]), "{out}");
    assert_eq!(out["tools_allowed"], json!(["hello"]), "{out}");
    let written: Value = serde_json::from_slice(&std::fs::read(&admin.bundle).unwrap()).unwrap();
    let package = &written["signed"]["servers"][0]["package"];
    assert_eq!(package["ecosystem"], "mcpb", "{package}");
    assert_eq!(package["name"], "hello", "{package}");
    assert_eq!(package["version"], "1.0.0", "{package}");
    assert_eq!(package["entry"], "server/index.js", "{package}");
    assert_eq!(package["interpreter"]["kind"], "node", "{package}");
    assert!(package["attestation"].is_object(), "{package}");
    admin.sign_and_install();

    let config = json!({"mcpServers": {"x": {"command": file.display().to_string()}}});
    std::fs::write(env.config(), serde_json::to_vec(&config).unwrap()).unwrap();
    let (code, out) = user(&env, &["call", "x", "hello", "--args", r#"{"name":"Ada"}"#]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(common::result_text(&out), "Hello, Ada", "{out}");
    // Not listed by the bundle: a method the server does not offer reaches no tool.
    let (code, out) = user(&env, &["call", "x", "goodbye"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["error"]["code"], "tool_not_admitted", "{out}");

    // A real MCP client (the TypeScript SDK's) through `gatehouse serve`: the bound tool is
    // offered and answers from the store.
    let steps = json!([
        {"op": "list"},
        {"op": "call", "name": "x__hello", "arguments": {"name": "Grace"}},
    ]);
    let mut command = common::ts_client_command(&steps);
    command.arg(env!("CARGO_BIN_EXE_gatehouse")).args([
        "--config",
        env.config().to_str().unwrap(),
        "serve",
    ]);
    env.isolate(&mut command);
    command
        .env("GATEHOUSE_POSTURE", "deny-by-default")
        .env("PATH", format!("{}:/usr/bin:/bin", node_dir().display()));
    let (ok, lines, stderr) = common::client_run(command);
    assert!(ok, "{lines:?}\n{stderr}");
    assert_eq!(
        common::offered(&lines[0]),
        vec!["x__hello".to_string()],
        "{lines:?}"
    );
    assert_eq!(common::result_text(&lines[1]), "Hello, Grace", "{lines:?}");

    // Another .mcpb at the same path (same name and version, other code), after the reviewed
    // one was installed: refused, never run from the old tree or the new file.
    let reviewed = std::fs::read(&file).unwrap();
    std::fs::remove_file(&file).unwrap();
    pack(env.dir.path(), &file, "Pwned!");
    assert_ne!(std::fs::read(&file).unwrap(), reviewed);
    let (code, out) = user(&env, &["call", "x", "hello"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out["error"]["code"],
        ErrorCode::ArtifactMismatch.as_str(),
        "{out}"
    );
    // The refusal is the file's, not a missing one: with the reviewed bytes back it runs.
    std::fs::write(&file, &reviewed).unwrap();
    let (code, out) = user(&env, &["call", "x", "hello"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(common::result_text(&out), "Hello, world", "{out}");
}
