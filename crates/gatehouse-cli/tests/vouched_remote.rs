//! An admin vouches for a real third-party remote server that publishes no attestation
//! (`@modelcontextprotocol/server-everything` in its Streamable HTTP mode, on loopback):
//! `bundle add-server --url` lists its live tools and writes the vouched entry, the bundle is
//! signed and installed, and in deny-by-default the server is admitted at that endpoint only,
//! with the entry's allow-list; another origin, an expired vouch and a rotation that drops the
//! entry are refused.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{Env, repo};
use serde_json::{Value, json};

const ID: &str = "urn:acme:everything-remote";
const VOUCHED: &str = "vouched for by acme@1; the server publishes no attestation";

/// server-everything's Streamable HTTP mode, bound to loopback on a free port. It listens on
/// `PORT` on every interface and prints no URL, so a preload binds it to 127.0.0.1 and prints
/// `listening on URL` once it listens.
fn everything_http(dir: &std::path::Path) -> (common::Running, String) {
    let preload = dir.join("loopback.cjs");
    std::fs::write(
        &preload,
        r#"const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || typeof args[0] === "string") args.splice(1, 0, "127.0.0.1");
  this.once("listening", () => {
    const { port } = this.address();
    process.stdout.write(`listening on http://127.0.0.1:${port}/mcp\n`);
  });
  return listen.apply(this, args);
};
"#,
    )
    .unwrap();
    let mut command = Command::new(common::node());
    command
        .arg("--require")
        .arg(&preload)
        .arg(repo().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
        .arg("streamableHttp")
        .env("PORT", "0");
    common::start_listening(command)
}

struct Admin {
    env: Env,
    keys: PathBuf,
    bundle: PathBuf,
}

impl Admin {
    fn new() -> Admin {
        let env = Env::new();
        let keys = env.dir.path().join("keys");
        let bundle = env.dir.path().join("acme.json");
        Admin { env, keys, bundle }
    }

    fn run(&self, args: &[&str]) -> (i32, Value) {
        common::json_of(
            |all| {
                let mut cmd = self.env.cmd(all);
                cmd.env("GATEHOUSE_POSTURE", "deny-by-default");
                common::output_of(cmd)
            },
            args,
        )
    }

    fn key(&self, name: &str) -> String {
        self.keys.join(name).display().to_string()
    }

    fn bundle(&self) -> &str {
        self.bundle.to_str().unwrap()
    }

    fn edit_bundle(&self, edit: impl FnOnce(&mut Value)) {
        let mut document: Value =
            serde_json::from_slice(&std::fs::read(&self.bundle).unwrap()).unwrap();
        edit(&mut document);
        document["signatures"] = json!([]);
        std::fs::write(&self.bundle, document.to_string()).unwrap();
    }

    fn sign_and_install(&self) {
        let (code, out) = self.run(&[
            "bundle",
            "sign",
            "--key",
            &self.key("root.key"),
            self.bundle(),
        ]);
        assert_eq!(code, 0, "{out}");
        let (code, out) = self.run(&["bundle", "install", self.bundle()]);
        assert_eq!(code, 0, "{out}");
    }

    fn configure(&self, url: &str) {
        std::fs::write(
            self.env.config(),
            json!({"mcpServers": {"everything": {"url": url}}}).to_string(),
        )
        .unwrap();
    }

    /// `servers list`'s row for the one configured server.
    fn row(&self) -> Value {
        let (code, out) = self.run(&["servers", "list"]);
        assert_eq!(code, 0, "{out}");
        out["servers"][0].clone()
    }
}

#[test]
fn an_admin_vouches_for_a_real_remote_server_and_it_is_admitted_there_only() {
    let admin = Admin::new();
    let (_server, url) = everything_http(admin.env.dir.path());
    let keys = admin.keys.display().to_string();
    for id in ["root", "signer"] {
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
        admin.bundle(),
    ]);
    assert_eq!(code, 0, "{out}");

    // A URL with credentials in it is refused before anything is listed.
    let with_user = url.replace("http://", "http://admin:pw@");
    let add = |url: &str| {
        admin.run(&[
            "bundle",
            "add-server",
            admin.bundle(),
            "--id",
            ID,
            "--clearance",
            "internal",
            "--signer-key",
            &admin.key("signer.key"),
            "--url",
            url,
            "--tool",
            "echo",
        ])
    };
    let (code, out) = add(&with_user);
    assert_ne!(code, 0, "{out}");
    assert!(out.to_string().contains("credentials"), "{out}");

    // A query is used for listing, not written.
    let (code, out) = add(&format!("{url}?from=admin"));
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["endpoint"], url, "{out}");
    assert_eq!(out["query_dropped"], true, "{out}");
    let listed: Vec<&str> = out["tools_listed"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        listed.contains(&"echo") && listed.contains(&"get-sum"),
        "{out}"
    );
    assert_eq!(out["tools_allowed"], json!(["echo"]), "{out}");
    let written: Value = serde_json::from_slice(&std::fs::read(&admin.bundle).unwrap()).unwrap();
    assert_eq!(written["signed"]["specVersion"], 6);
    let entry = &written["signed"]["servers"][0];
    let origin = url.trim_end_matches("/mcp");
    assert_eq!(entry["origins"], json!([origin]));
    assert_eq!(entry["vouched"]["endpoints"], json!([url]));
    assert_eq!(
        entry["vouched"]["attestation"]["netAllowedHosts"],
        json!([origin])
    );
    // serverInfo.version, as the server reported it when listed.
    assert_eq!(entry["vouched"]["attestation"]["version"], "2.0.0");
    assert!(entry["toolPins"]["echo"].is_string(), "{entry}");
    assert!(!written.to_string().contains("from=admin"));
    admin.sign_and_install();

    // Admitted at the vouched endpoint, and said to be vouched for, never the server's word.
    admin.configure(&url);
    let row = admin.row();
    assert_eq!(row["admission"]["status"], "admitted", "{row}");
    assert_eq!(
        row["admission"]["identity"]["attested_by"], "vouched",
        "{row}"
    );
    assert!(row["verdict"].as_str().unwrap().contains(VOUCHED), "{row}");
    let (code, out) = admin.run(&[
        "call",
        "everything",
        "echo",
        "--args",
        r#"{"message":"vouched hello"}"#,
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.to_string().contains("vouched hello"), "{out}");
    let (code, out) = admin.run(&[
        "call",
        "everything",
        "get-sum",
        "--args",
        r#"{"a":1,"b":2}"#,
    ]);
    assert_ne!(code, 0, "{out}");
    assert!(out.to_string().contains("tool_not_admitted"), "{out}");
    // Human output names how the identity was established.
    let (code, stdout, stderr) = common::output_of({
        let mut cmd = admin.env.cmd(&["servers", "list"]);
        cmd.env("GATEHOUSE_POSTURE", "deny-by-default");
        cmd
    });
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains(VOUCHED), "{stdout}");

    // The same server under another origin (localhost is not 127.0.0.1) is not admitted.
    admin.configure(&url.replace("127.0.0.1", "localhost"));
    let row = admin.row();
    assert_ne!(row["admission"]["status"], "admitted", "{row}");
    admin.configure(&url);

    // A vouch past its expiry (version 2 of the bundle) is refused by name.
    admin.edit_bundle(|d| {
        d["signed"]["version"] = json!(2);
        d["signed"]["servers"][0]["vouched"]["expires"] = json!("2026-01-01T00:00:00Z");
    });
    admin.sign_and_install();
    let row = admin.row();
    assert_eq!(row["admission"]["status"], "refused", "{row}");
    assert_eq!(row["admission"]["reason"], "vouch_expired", "{row}");
    let (code, out) = admin.run(&["call", "everything", "echo", "--args", r#"{"message":"x"}"#]);
    assert_ne!(code, 0, "{out}");

    // A rotation that drops the entry: nobody vouches for it any more.
    admin.edit_bundle(|d| {
        d["signed"]["version"] = json!(3);
        d["signed"]["servers"] = json!([]);
    });
    admin.sign_and_install();
    let row = admin.row();
    assert_eq!(row["admission"]["status"], "unattested", "{row}");
    let (code, out) = admin.run(&["call", "everything", "echo", "--args", r#"{"message":"x"}"#]);
    assert_ne!(code, 0, "{out}");
}
