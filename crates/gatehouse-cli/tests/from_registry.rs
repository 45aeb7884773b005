//! `bundle add-server --from-registry server.json` through the real binary (issue 27 part 2):
//! the registry's own published examples listed as proposals (nothing written), bad documents
//! refused with their codes, and kept proposals written through the same add-server paths:
//! an npm package resolved from a mirror of the install step's seed, a PyPI package from the
//! seed with the admin's hashed requirements, an MCPB downloaded from loopback and checked
//! against `fileSha256` first, a remote (the demo server over HTTP on loopback) as a vouched
//! entry. Each refusal carries its stable code. Secrets are never in the bundle's bytes.

mod common;

use common::packages::{FILESYSTEM, VERSION, node_dir, seed};

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Env, repo};
use gatehouse_testkit::mirror::Mirror;
use serde_json::{Value, json};

const PREFIX: &str = "urn:acme:registry";

fn fixture(name: &str) -> PathBuf {
    repo()
        .join("crates/gatehouse-cli/tests/fixtures/registry")
        .join(name)
}

struct Admin {
    env: Env,
    keys: PathBuf,
    bundle: PathBuf,
    sources: Option<PathBuf>,
    /// The CLI's PATH.
    path: String,
    _mirror: Option<Mirror>,
}

/// Where an admin's packages come from.
enum Sources {
    /// The machine's defaults (nothing is fetched by the tests that use this).
    None,
    /// A mirror of the seed serving the npm registry and PyPI protocols.
    Mirror,
    /// The seed directory itself, network off (PyPI wheels by file name).
    Seed,
}

impl Admin {
    fn new(with_mirror: bool) -> Admin {
        Admin::with(if with_mirror {
            Sources::Mirror
        } else {
            Sources::None
        })
    }

    fn with(sources: Sources) -> Admin {
        let env = Env::new();
        let file = env.dir.path().join("package-sources.json");
        let (sources, mirror) = match sources {
            Sources::None => (None, None),
            Sources::Mirror => {
                let mirror = Mirror::start(seed());
                std::fs::write(
                    &file,
                    json!({"npmRegistry": mirror.npm_url(), "pypiIndex": mirror.pypi_url()})
                        .to_string(),
                )
                .unwrap();
                (Some(file), Some(mirror))
            }
            Sources::Seed => {
                std::fs::write(
                    &file,
                    json!({"seed": [seed()], "network": false}).to_string(),
                )
                .unwrap();
                (Some(file), None)
            }
        };
        let admin = Admin {
            keys: env.dir.path().join("keys"),
            bundle: env.dir.path().join("acme.json"),
            env,
            sources,
            path: format!("{}:/usr/bin:/bin", node_dir().display()),
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

    /// The exit code and the last JSON document printed (with --keep, add-server prints one
    /// per entry written, then the summary).
    fn run(&self, args: &[&str]) -> (i32, Value) {
        let mut all = vec!["--json"];
        if let Some(sources) = &self.sources {
            all.extend(["--package-sources", sources.to_str().unwrap()]);
        }
        all.extend_from_slice(args);
        let mut cmd = self.env.cmd(&all);
        cmd.env("PATH", &self.path);
        let (code, stdout, stderr) = common::output_of(cmd);
        let last = serde_json::Deserializer::from_str(&stdout)
            .into_iter::<Value>()
            .map(|v| v.unwrap_or_else(|e| panic!("{e}: stdout={stdout} stderr={stderr}")))
            .last()
            .unwrap_or_else(|| panic!("no JSON: stdout={stdout} stderr={stderr}"));
        (code, last)
    }

    fn add_from_registry(&self, file: &Path, extra: &[&str]) -> (i32, Value) {
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
            "--from-registry",
            file.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    fn bundle_bytes(&self) -> Vec<u8> {
        std::fs::read(&self.bundle).unwrap()
    }

    fn entry(&self, id: &str) -> Option<Value> {
        let document: Value = serde_json::from_slice(&self.bundle_bytes()).unwrap();
        document["signed"]["servers"]
            .as_array()?
            .iter()
            .find(|s| s["id"] == id)
            .cloned()
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
fn each_published_example_is_listed_and_nothing_is_written() {
    let admin = Admin::new(false);
    let before = admin.bundle_bytes();
    for name in [
        "brave-search.json",
        "filesystem-multiple-packages.json",
        "remote-server.json",
        "python-package.json",
        "remote-and-package.json",
        "mcpb-package.json",
        "with-package.json",
        "with-remote.json",
    ] {
        let (code, out) = admin.add_from_registry(&fixture(name), &[]);
        assert_eq!(code, 0, "{name}: {out}");
        assert!(!out["proposals"].as_array().unwrap().is_empty(), "{out}");
        assert_eq!(out["written"], json!([]), "{out}");
        assert_eq!(admin.bundle_bytes(), before, "{name}");
    }

    let (_, out) = admin.add_from_registry(&fixture("brave-search.json"), &[]);
    let brave = proposal(&out, "server-brave-search");
    assert_eq!(brave["kind"], "npm");
    assert_eq!(
        brave["binds"],
        "@modelcontextprotocol/server-brave-search@1.0.2"
    );
    assert_eq!(brave["id"], format!("{PREFIX}:server-brave-search"));
    assert_eq!(brave["secrets"][0]["name"], "BRAVE_API_KEY");
    assert_eq!(
        brave["secrets"][0]["set_with"],
        "gatehouse secret set BRAVE_API_KEY"
    );

    let (_, out) = admin.add_from_registry(&fixture("filesystem-multiple-packages.json"), &[]);
    let npm = proposal(&out, "server-filesystem");
    assert_eq!(
        npm["user_args"],
        json!(["existing_directory_under_home:read_only:1:8"])
    );
    assert_eq!(npm["settings"], json!(["LOG_LEVEL=info"]));
    assert_eq!(npm["refused"], Value::Null);
    assert_eq!(npm["kind"], "npm");
    let oci = proposal(&out, "filesystem-1-0-2");
    assert_eq!(oci["refused"]["code"], "registry_type_unsupported", "{out}");

    let (_, out) = admin.add_from_registry(&fixture("python-package.json"), &[]);
    let weather = proposal(&out, "weather-mcp-server");
    assert_eq!(weather["binds"], "weather-mcp-server==0.5.0");
    assert_eq!(weather["secrets"][0]["name"], "WEATHER_API_KEY");
    assert!(
        weather["notes"].to_string().contains("runtimeHint"),
        "{out}"
    );

    let (_, out) = admin.add_from_registry(&fixture("remote-and-package.json"), &[]);
    let remote = proposal(&out, "remote-streamable-http");
    assert_eq!(remote["kind"], "url");
    assert_eq!(
        remote["binds"],
        "https://mcp.anonymous.modelcontextprotocol.io/http"
    );
    assert_eq!(remote["secrets"][0]["name"], "X-API-Key");
    assert_eq!(proposal(&out, "remote-sse")["refused"], Value::Null);

    let (_, out) = admin.add_from_registry(&fixture("with-remote.json"), &[]);
    assert_eq!(
        proposal(&out, "remote-streamable-http")["binds"],
        "https://api.example.com/mcp"
    );
    let (_, out) = admin.add_from_registry(&fixture("with-package.json"), &[]);
    assert_eq!(
        proposal(&out, "server-weather")["args"],
        json!(["--port", "8080"])
    );

    let (_, out) = admin.add_from_registry(&fixture("mcpb-package.json"), &[]);
    let mcpb = proposal(&out, "text-editor");
    assert_eq!(mcpb["kind"], "mcpb");
    assert!(
        mcpb["binds"].as_str().unwrap().contains("fe333e59"),
        "{out}"
    );
}

#[test]
fn bad_documents_are_refused_with_their_codes_and_nothing_is_written() {
    let admin = Admin::new(false);
    let before = admin.bundle_bytes();
    for (name, code) in [
        (
            "bad/package-version-latest.json",
            "registry_version_not_exact",
        ),
        ("bad/version-range.json", "registry_version_not_exact"),
        ("bad/mcpb-without-hash.json", "registry_hash_missing"),
        ("bad/oci-only.json", "registry_type_unsupported"),
        ("nuget-package.json", "registry_type_unsupported"),
        (
            "bad/unknown-transport.json",
            "registry_transport_unsupported",
        ),
        ("bad/malformed.json", "registry_document_invalid"),
    ] {
        let (exit, out) = admin.add_from_registry(&fixture(name), &[]);
        assert_eq!(exit, 2, "{name}: {out}");
        assert_eq!(out["error"]["code"], code, "{name}: {out}");
        assert_eq!(admin.bundle_bytes(), before, "{name}");
    }
    // The passing twin: a document with a good package next to a refused one lists.
    let (exit, out) = admin.add_from_registry(&fixture("filesystem-multiple-packages.json"), &[]);
    assert_eq!(exit, 0, "{out}");

    // --keep of an unknown name, or of a refused proposal (with the proposal's own code),
    // writes nothing.
    for (keep, code) in [
        ("nope", "usage"),
        ("filesystem-1-0-2", "registry_type_unsupported"),
    ] {
        let (exit, out) = admin.add_from_registry(
            &fixture("filesystem-multiple-packages.json"),
            &["--keep", "server-filesystem", "--keep", keep],
        );
        assert_eq!(exit, 2, "{out}");
        assert_eq!(out["error"]["code"], code, "{out}");
        assert!(
            out["error"]["message"].as_str().unwrap().contains(keep),
            "{out}"
        );
        assert_eq!(admin.bundle_bytes(), before);
    }
}

/// server.json for the seed's server-filesystem, in the registry's exact shape, with a secret
/// whose published default must never reach the bundle.
fn filesystem_document(dir: &Path) -> PathBuf {
    let document = json!({
        "$schema": "https://static.modelcontextprotocol.io/schemas/2025-10-17/server.schema.json",
        "name": "io.github.modelcontextprotocol/filesystem",
        "description": "Node.js server implementing Model Context Protocol (MCP) for filesystem operations.",
        "version": VERSION,
        "packages": [{
            "registryType": "npm",
            "registryBaseUrl": "https://registry.npmjs.org",
            "identifier": FILESYSTEM,
            "version": VERSION,
            "transport": {"type": "stdio"},
            "runtimeHint": "npx",
            "packageArguments": [{"type": "positional", "valueHint": "target_dir",
                "description": "Path to access", "isRequired": true, "isRepeated": true}],
            "environmentVariables": [
                {"name": "FS_TOKEN", "isSecret": true, "default": "s3cr3t-from-the-document"},
                {"name": "LOG_LEVEL", "default": "info"}
            ]
        }],
        "remotes": [{"type": "streamable-http", "url": "https://fs.example.com/mcp",
                     "headers": [{"name": "Authorization", "isSecret": true, "value": "Bearer s3cr3t-header"}]}]
    });
    let file = dir.join("server.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&document).unwrap()).unwrap();
    file
}

#[test]
fn a_kept_npm_proposal_is_written_and_parses_and_carries_no_secret() {
    common::require_tools(&["npm"]);
    let admin = Admin::new(true);
    let file = filesystem_document(admin.env.dir.path());
    let (code, out) = admin.add_from_registry(&file, &["--all-tools"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["proposals"].as_array().unwrap().len(), 2, "{out}");

    let (code, out) =
        admin.add_from_registry(&file, &["--all-tools", "--keep", "server-filesystem"]);
    assert_eq!(code, 0, "{out}");
    let id = format!("{PREFIX}:server-filesystem");
    assert_eq!(out["written"], json!([id]), "{out}");
    let entry = admin.entry(&id).expect("written");
    assert_eq!(entry["package"]["name"], FILESYSTEM);
    assert_eq!(entry["package"]["version"], VERSION);
    assert_eq!(
        entry["package"]["userArgs"][0]["rule"],
        "existing_directory_under_home"
    );
    assert!(!entry["allowedTools"].as_array().unwrap().is_empty());
    assert!(
        admin
            .entry(&format!("{PREFIX}:remote-streamable-http"))
            .is_none()
    );
    let bytes = String::from_utf8(admin.bundle_bytes()).unwrap();
    for secret in ["s3cr3t", "FS_TOKEN", "Authorization"] {
        assert!(!bytes.contains(secret), "{secret} in the bundle");
    }
    // Written, the bundle signs and installs: it parses as a bundle.
    let root = admin.key("root.key");
    let bundle = admin.bundle.to_str().unwrap();
    let (code, out) = admin.run(&["bundle", "sign", "--key", &root, bundle]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = admin.run(&["bundle", "inspect", bundle]);
    assert_eq!(code, 0, "{out}");
}

/// Serves `body` once per connection on loopback, for `count` connections.
fn serve(body: Vec<u8>, count: usize) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(count) {
            let mut stream = stream.unwrap();
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let _ = stream.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                )
                .as_bytes(),
            );
            let _ = stream.write_all(&body);
        }
    });
    format!("http://127.0.0.1:{port}/releases/hello.mcpb")
}

/// `hello.mcpb`, packed by the official CLI from a one-tool Node server.
fn pack(work: &Path) -> PathBuf {
    let src = work.join("src");
    std::fs::create_dir_all(src.join("server")).unwrap();
    let manifest = json!({
        "manifest_version": "0.3", "name": "hello", "version": "1.0.0",
        "description": "A test server.", "author": {"name": "Gatehouse tests"},
        "server": {"type": "node", "entry_point": "server/index.js",
                   "mcp_config": {"command": "node", "args": ["${__dirname}/server/index.js"]}},
    });
    std::fs::write(src.join("manifest.json"), manifest.to_string()).unwrap();
    std::fs::write(
        src.join("server/index.js"),
        r#"const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
require("readline").createInterface({input: process.stdin}).on("line", (line) => {
  let m; try { m = JSON.parse(line); } catch (e) { return; }
  if (m.id === undefined) return;
  if (m.method === "initialize") send({jsonrpc: "2.0", id: m.id, result: {protocolVersion: "2025-11-25", capabilities: {tools: {}}, serverInfo: {name: "hello", version: "1.0.0"}}});
  else if (m.method === "tools/list") send({jsonrpc: "2.0", id: m.id, result: {tools: [{name: "hello", description: "Says hello.", inputSchema: {type: "object"}}]}});
  else send({jsonrpc: "2.0", id: m.id, error: {code: -32601, message: "Method not found"}});
});
"#,
    )
    .unwrap();
    let out = work.join("hello.mcpb");
    let output = Command::new(repo().join("node_modules/.bin/mcpb"))
        .arg("pack")
        .arg(&src)
        .arg(&out)
        .env("PATH", format!("{}:/usr/bin:/bin", node_dir().display()))
        .output()
        .unwrap();
    assert!(output.status.success(), "mcpb pack: {output:?}");
    out
}

fn mcpb_document(dir: &Path, url: &str, sha256: &str) -> PathBuf {
    let file = dir.join(format!("mcpb-{}.json", &sha256[..8]));
    std::fs::write(
        &file,
        json!({
            "name": "io.example/hello", "description": "A test MCPB.", "version": "1.0.0",
            "packages": [{"registryType": "mcpb", "identifier": url, "fileSha256": sha256,
                          "transport": {"type": "stdio"}}]
        })
        .to_string(),
    )
    .unwrap();
    file
}

#[test]
fn an_mcpb_is_written_only_when_its_downloaded_bytes_match_file_sha256() {
    let admin = Admin::new(false);
    let dir = admin.env.dir.path();
    let mcpb = pack(dir);
    let bytes = std::fs::read(&mcpb).unwrap();
    let good = common::packages::sha256_file(&mcpb);
    let before = admin.bundle_bytes();

    // A hash that is not the file's: refused after the download, nothing written.
    let url = serve(bytes.clone(), 1);
    let wrong = "0".repeat(64);
    let (code, out) = admin.add_from_registry(
        &mcpb_document(dir, &url, &wrong),
        &["--all-tools", "--keep", "hello"],
    );
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["code"], "registry_hash_mismatch", "{out}");
    assert_eq!(admin.bundle_bytes(), before);

    let url = serve(bytes, 1);
    let (code, out) = admin.add_from_registry(
        &mcpb_document(dir, &url, &good),
        &["--all-tools", "--keep", "hello"],
    );
    assert_eq!(code, 0, "{out}");
    let entry = admin.entry(&format!("{PREFIX}:hello")).expect("written");
    assert_eq!(entry["package"]["ecosystem"], "mcpb", "{entry}");
    assert_eq!(entry["allowedTools"], json!(["hello"]));
}

const TIME: &str = "mcp-server-time";
const TIME_VERSION: &str = "2026.10.19";

#[test]
fn a_kept_pypi_proposal_is_bound_to_the_admins_requirements() {
    let mut admin = Admin::with(Sources::Seed);
    // Only the reviewed python3 on PATH: the binding hashes it as the interpreter.
    let bin = admin.env.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(common::python3(), bin.join("python3")).unwrap();
    admin.path = format!("{}:/usr/bin:/bin", bin.display());
    let document = |version: &str| {
        let file = admin.env.dir.path().join(format!("time-{version}.json"));
        std::fs::write(
            &file,
            json!({
                "name": "io.github.modelcontextprotocol/time",
                "description": "Time and timezone conversion.",
                "version": version,
                "packages": [{
                    "registryType": "pypi",
                    "registryBaseUrl": "https://pypi.org",
                    "identifier": TIME,
                    "version": version,
                    "transport": {"type": "stdio"},
                    "runtimeHint": "uvx",
                    "packageArguments": [
                        {"type": "named", "name": "--local-timezone", "value": "UTC"}
                    ]
                }]
            })
            .to_string(),
        )
        .unwrap();
        file
    };
    let requirements = repo().join("tests/packages/pypi/mcp-server-time/requirements.txt");
    let requirements = format!("--requirements={}", requirements.display());
    let keep = ["--tool", "get_current_time", "--keep", TIME, &requirements];

    // A version the reviewed requirements file does not pin: nothing written.
    let before = admin.bundle_bytes();
    let (code, out) = admin.add_from_registry(&document("2025.1.1"), &keep);
    assert_ne!(code, 0, "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains(TIME_VERSION),
        "{out}"
    );
    assert_eq!(admin.bundle_bytes(), before);

    let file = document(TIME_VERSION);
    let (code, out) = admin.add_from_registry(&file, &[]);
    assert_eq!(code, 0, "{out}");
    let listed = proposal(&out, TIME);
    assert_eq!(listed["kind"], "pypi");
    assert_eq!(listed["binds"], format!("{TIME}=={TIME_VERSION}"));
    assert_eq!(listed["args"], json!(["--local-timezone", "UTC"]));

    let (code, out) = admin.add_from_registry(&file, &keep);
    assert_eq!(code, 0, "{out}");
    let id = format!("{PREFIX}:{TIME}");
    assert_eq!(out["written"], json!([id]), "{out}");
    let entry = admin.entry(&id).expect("written");
    let package = &entry["package"];
    assert_eq!(package["ecosystem"], "pypi", "{entry}");
    assert_eq!(package["name"], TIME);
    assert_eq!(package["version"], TIME_VERSION);
    assert_eq!(package["entry"], TIME);
    assert_eq!(package["args"], json!(["--local-timezone", "UTC"]));
    assert!(
        package["artifact"].as_str().unwrap().starts_with("sha256:"),
        "{entry}"
    );
    assert!(
        !package["closure"].as_array().unwrap().is_empty(),
        "{entry}"
    );
    assert_eq!(
        package["interpreter"]["sha256"],
        json!([common::packages::sha256_file(std::path::Path::new(
            &common::python3()
        ))])
    );
    assert_eq!(entry["allowedTools"], json!(["get_current_time"]));
}

#[test]
fn a_kept_remote_proposal_becomes_a_vouched_entry_without_its_secret_header() {
    let admin = Admin::new(false);
    let (_server, url) = common::demo_http(&[]);
    let file = admin.env.dir.path().join("remote.json");
    let document = |remote: &str| {
        json!({
            "name": "io.example/demo",
            "description": "The demo server, remote.",
            "version": "1.0.0",
            "remotes": [{
                "type": "streamable-http",
                "url": remote,
                "headers": [{"name": "Authorization", "isSecret": true, "isRequired": true,
                             "value": "Bearer s3cr3t-remote-token"}]
            }]
        })
        .to_string()
    };
    // Not an http(s) URL: refused with its code, nothing written.
    let before = admin.bundle_bytes();
    std::fs::write(&file, document(&url.replace("http://", "ftp://"))).unwrap();
    let (code, out) = admin.add_from_registry(&file, &[]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(out["error"]["code"], "registry_url_invalid", "{out}");
    assert_eq!(admin.bundle_bytes(), before);

    std::fs::write(&file, document(&url)).unwrap();
    let (code, out) = admin.add_from_registry(&file, &[]);
    assert_eq!(code, 0, "{out}");
    let remote = &out["proposals"][0];
    assert_eq!(remote["kind"], "url", "{out}");
    assert_eq!(remote["binds"], url);
    assert_eq!(remote["secrets"][0]["name"], "Authorization");
    assert!(!out.to_string().contains("s3cr3t"), "{out}");
    let name = remote["name"].as_str().unwrap().to_string();

    let (code, out) = admin.add_from_registry(&file, &["--all-tools", "--keep", &name]);
    assert_eq!(code, 0, "{out}");
    let id = format!("{PREFIX}:{name}");
    assert_eq!(out["written"], json!([id]), "{out}");
    let entry = admin.entry(&id).expect("written");
    let origin = url::Url::parse(&url)
        .unwrap()
        .origin()
        .ascii_serialization();
    assert_eq!(entry["origins"], json!([origin]), "{entry}");
    assert_eq!(entry["vouched"]["endpoints"], json!([url]), "{entry}");
    assert!(entry["vouched"]["attestation"].is_object(), "{entry}");
    assert!(entry.get("package").is_none() && entry.get("stdio").is_none());
    assert!(!entry["allowedTools"].as_array().unwrap().is_empty());
    let bytes = String::from_utf8(admin.bundle_bytes()).unwrap();
    for secret in ["s3cr3t", "Authorization", "Bearer"] {
        assert!(!bytes.contains(secret), "{secret} in the bundle");
    }
}
