//! `bundle add-server --from-client CLIENT --config FILE` through the real binary (issue 27
//! part 3): each client's own config shape (Claude Desktop, Claude Code, Cursor, VS Code) with
//! an npx server, a uvx server, the demo server as a plain command, a remote URL, an env
//! secret and Gatehouse's own entry; the proposals are listed (nothing written), `--keep`
//! writes the chosen ones only (an npx server as a package binding resolved from a mirror of
//! the install step's seed, its directory argument a user-argument rule; the demo as a hashed
//! stdio binding), each refusal carries its stable code, and the secret's value never reaches
//! the bundle.

mod common;

use common::packages::{FILESYSTEM, VERSION, node_dir, seed};

use std::path::{Path, PathBuf};

use common::Env;
use gatehouse_testkit::mirror::Mirror;
use serde_json::{Value, json};

const PREFIX: &str = "urn:acme:imported";
const SECRET: &str = "ghp_n0t-a-real-token-but-secret";

struct Admin {
    env: Env,
    keys: PathBuf,
    bundle: PathBuf,
    docs: PathBuf,
    /// `--package-sources`: a mirror of the seed, for the tests that resolve a package.
    sources: Option<PathBuf>,
    _mirror: Option<Mirror>,
}

impl Admin {
    fn new() -> Admin {
        Admin::with_mirror(false)
    }

    fn with_mirror(mirrored: bool) -> Admin {
        let env = Env::new();
        let docs = env.dir.path().join("docs");
        std::fs::create_dir_all(&docs).unwrap();
        let (sources, mirror) = if mirrored {
            let mirror = Mirror::start(seed());
            let sources = env.dir.path().join("package-sources.json");
            std::fs::write(
                &sources,
                json!({"npmRegistry": mirror.npm_url(), "pypiIndex": mirror.pypi_url()})
                    .to_string(),
            )
            .unwrap();
            (Some(sources), Some(mirror))
        } else {
            (None, None)
        };
        let admin = Admin {
            keys: env.dir.path().join("keys"),
            bundle: env.dir.path().join("acme.json"),
            env,
            docs,
            sources,
            _mirror: mirror,
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

    fn key(&self, name: &str) -> String {
        self.keys.join(name).display().to_string()
    }

    /// The exit code and the last JSON document printed.
    fn run(&self, args: &[&str]) -> (i32, Value) {
        let mut all = vec!["--json"];
        if let Some(sources) = &self.sources {
            all.extend(["--package-sources", sources.to_str().unwrap()]);
        }
        all.extend_from_slice(args);
        let mut cmd = self.env.cmd(&all);
        if self.sources.is_some() {
            // The pinned Node first, for the package's tool listing.
            cmd.env("PATH", format!("{}:/usr/bin:/bin", node_dir().display()));
        }
        let (code, stdout, stderr) = common::output_of(cmd);
        let last = serde_json::Deserializer::from_str(&stdout)
            .into_iter::<Value>()
            .map(|v| v.unwrap_or_else(|e| panic!("{e}: stdout={stdout} stderr={stderr}")))
            .last()
            .unwrap_or_else(|| panic!("no JSON: stdout={stdout} stderr={stderr}"));
        (code, last)
    }

    fn add_from_client(&self, client: &str, config: &Path, extra: &[&str]) -> (i32, Value) {
        let signer = self.key("signer.key");
        let mut args = vec![
            "bundle",
            "add-server",
            self.bundle.to_str().unwrap(),
            "--id",
            PREFIX,
            "--clearance",
            "internal",
            "--signer-key",
            &signer,
            "--from-client",
            client,
            "--config",
            config.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    /// The client's config, in its own shape: `mcpServers` (Claude Desktop, Claude Code,
    /// Cursor) or `servers` with a `type` (VS Code).
    fn config(&self, client: &str) -> PathBuf {
        let docs = self.docs.display().to_string();
        let demo = common::demo_bin();
        let mut servers = json!({
            "files": {"command": "npx", "args": ["-y", format!("{FILESYSTEM}@{VERSION}"), docs]},
            "files-latest": {"command": "npx", "args": ["-y", FILESYSTEM, docs]},
            "time": {"command": "uvx", "args": ["mcp-server-time@2026.10.19", "--local-timezone", "UTC"]},
            "demo": {"command": demo, "args": [], "env": {"GITHUB_TOKEN": SECRET}},
            "linear": {"url": "https://mcp.linear.app/mcp",
                       "headers": {"Authorization": format!("Bearer {SECRET}")}},
            "gatehouse": {"command": "/usr/local/bin/gatehouse", "args": ["serve", "--client", client]},
        });
        let root = if client == "vscode" {
            for (_, entry) in servers.as_object_mut().unwrap() {
                let kind = if entry.get("url").is_some() {
                    "http"
                } else {
                    "stdio"
                };
                entry["type"] = json!(kind);
            }
            json!({"servers": servers})
        } else {
            json!({"mcpServers": servers})
        };
        let file = self.env.dir.path().join(format!("{client}.json"));
        std::fs::write(&file, serde_json::to_vec_pretty(&root).unwrap()).unwrap();
        file
    }
}

fn proposal<'a>(out: &'a Value, name: &str) -> &'a Value {
    out["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no proposal {name}: {out}"))
}

#[test]
fn each_client_shape_lists_its_servers_as_proposals_and_writes_nothing() {
    let admin = Admin::new();
    let before = std::fs::read(&admin.bundle).unwrap();
    for client in ["claude_desktop", "claude_code", "cursor", "vscode"] {
        let config = admin.config(client);
        let (code, out) = admin.add_from_client(client, &config, &[]);
        assert_eq!(code, 0, "{client}: {out}");
        let names: Vec<&str> = out["proposals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["files", "files-latest", "time", "demo", "linear"],
            "{client}: Gatehouse's own entry skipped: {out}"
        );
        assert_eq!(out["source"]["skipped_gatehouse"], json!(["gatehouse"]));

        let files = proposal(&out, "files");
        assert_eq!(files["kind"], "npm");
        assert_eq!(files["binds"], format!("{FILESYSTEM}@{VERSION}"));
        assert_eq!(
            files["user_args"],
            json!(["existing_directory_under_home:read_only:1:8"])
        );
        assert_eq!(files["args"], json!([]));
        assert_eq!(files["refused"], Value::Null);
        let latest = proposal(&out, "files-latest");
        assert_eq!(latest["refused"]["code"], "version_required", "{out}");
        let time = proposal(&out, "time");
        assert_eq!(time["kind"], "pypi");
        assert_eq!(time["binds"], "mcp-server-time==2026.10.19");
        assert_eq!(time["args"], json!(["--local-timezone", "UTC"]));
        let demo = proposal(&out, "demo");
        assert_eq!(demo["kind"], "stdio");
        assert_eq!(demo["secrets"][0]["name"], "GITHUB_TOKEN");
        let linear = proposal(&out, "linear");
        assert_eq!(linear["kind"], "url");
        assert_eq!(linear["secrets"][0]["name"], "Authorization");
        assert!(!out.to_string().contains(SECRET), "{out}");
        assert_eq!(std::fs::read(&admin.bundle).unwrap(), before);
    }
}

#[test]
fn keep_writes_the_chosen_ones_only_and_never_a_secret() {
    let admin = Admin::new();
    let config = admin.config("claude_desktop");
    let before = std::fs::read(&admin.bundle).unwrap();
    // A proposal without a version is refused before anything is written.
    let (code, out) = admin.add_from_client(
        "claude_desktop",
        &config,
        &["--all-tools", "--keep", "demo", "--keep", "files-latest"],
    );
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["code"], "version_required", "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("files-latest"),
        "{out}"
    );
    assert_eq!(std::fs::read(&admin.bundle).unwrap(), before);

    let (code, out) = admin.add_from_client(
        "claude_desktop",
        &config,
        &["--all-tools", "--keep", "demo"],
    );
    assert_eq!(code, 0, "{out}");
    let id = format!("{PREFIX}:demo");
    assert_eq!(out["written"], json!([id]));
    let bytes = std::fs::read_to_string(&admin.bundle).unwrap();
    let document: Value = serde_json::from_str(&bytes).unwrap();
    let servers = document["signed"]["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "the chosen one only: {document}");
    assert_eq!(servers[0]["id"], id);
    assert!(servers[0]["stdio"]["sha256"].is_string(), "{document}");
    assert!(!bytes.contains(SECRET));
    assert!(!bytes.contains("GITHUB_TOKEN"));
}

#[test]
fn a_kept_npx_server_becomes_a_package_binding_with_a_user_directory_rule() {
    common::require_tools(&["npm"]);
    let admin = Admin::with_mirror(true);
    let config = admin.config("claude_code");
    let (code, out) =
        admin.add_from_client("claude_code", &config, &["--all-tools", "--keep", "files"]);
    assert_eq!(code, 0, "{out}");
    let id = format!("{PREFIX}:files");
    assert_eq!(out["written"], json!([id]), "{out}");
    let bytes = std::fs::read_to_string(&admin.bundle).unwrap();
    let document: Value = serde_json::from_str(&bytes).unwrap();
    let servers = document["signed"]["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "the chosen one only: {document}");
    let entry = &servers[0];
    assert_eq!(entry["id"], id);
    let package = &entry["package"];
    assert_eq!(package["ecosystem"], "npm", "{entry}");
    assert_eq!(package["name"], FILESYSTEM);
    assert_eq!(package["version"], VERSION);
    assert!(
        package["artifact"].as_str().unwrap().starts_with("sha512-"),
        "{entry}"
    );
    // The directory the user's config named is not bound: each user picks their own, under
    // their home, read-only.
    assert!(
        package.get("args").is_none_or(|a| a == &json!([])),
        "{entry}"
    );
    let rule = &package["userArgs"][0];
    assert_eq!(rule["rule"], "existing_directory_under_home", "{entry}");
    assert_eq!(rule["access"], "read_only", "{entry}");
    assert!(!bytes.contains(admin.docs.to_str().unwrap()));
    assert!(!entry["allowedTools"].as_array().unwrap().is_empty());
    assert!(!bytes.contains(SECRET));

    // Written, the bundle signs and parses.
    let bundle = admin.bundle.to_str().unwrap();
    let (code, out) = admin.run(&["bundle", "sign", "--key", &admin.key("root.key"), bundle]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = admin.run(&["bundle", "inspect", bundle]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_config_that_is_not_strict_json_or_is_missing_is_refused_with_its_code() {
    let admin = Admin::new();
    let before = std::fs::read(&admin.bundle).unwrap();
    let bad = admin.env.dir.path().join("bad.json");
    std::fs::write(&bad, "{\"mcpServers\": {},}").unwrap();
    let (code, out) = admin.add_from_client("cursor", &bad, &[]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["code"], "client_config_invalid", "{out}");
    let missing = admin.env.dir.path().join("missing.json");
    let (code, out) = admin.add_from_client("cursor", &missing, &[]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["code"], "client_config_missing", "{out}");
    assert_eq!(std::fs::read(&admin.bundle).unwrap(), before);
}
