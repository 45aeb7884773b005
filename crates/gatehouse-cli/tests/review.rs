//! The definition review through the real binary (issue 27, part 5): no finding at all on the
//! real servers (server-everything, server-filesystem, server-memory and the demo, each
//! reviewed against all the others' tools), `bundle add-server` refusing to pin a poisoned
//! definition without `--accept-findings` and writing it with, and listings that show an
//! invisible character escaped, with the finding under the tool.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::packages::{FILESYSTEM, VERSION, node_dir, seed};
use common::{Env, demo_bin, output_of, repo};
use gatehouse_host::ErrorCode;
use serde_json::{Value, json};

const MEMORY: &str = "@modelcontextprotocol/server-memory";
const MEMORY_VERSION: &str = "2026.8.31";

/// An admin with a root and a signer key, a fresh bundle and the install step's seed as the
/// package source (network off).
struct Admin {
    env: Env,
    keys: PathBuf,
    bundle: PathBuf,
    sources: PathBuf,
}

/// What one command printed: exit code, stdout as its one JSON document, stderr.
struct Ran {
    code: i32,
    out: Value,
    err: String,
}

impl Admin {
    fn new() -> Admin {
        let env = Env::new();
        let keys = env.dir.path().join("keys");
        let bundle = env.dir.path().join("acme.json");
        let sources = env.dir.path().join("package-sources.json");
        std::fs::write(
            &sources,
            serde_json::to_vec(&json!({"seed": [seed()], "network": false})).unwrap(),
        )
        .unwrap();
        let admin = Admin {
            env,
            keys,
            bundle,
            sources,
        };
        for id in ["root", "signer"] {
            let keys = admin.keys.display().to_string();
            let ran = admin.run(&["bundle", "keygen", "--out", &keys, "--id", id]);
            assert_eq!(ran.code, 0, "{}", ran.out);
        }
        let ran = admin.run(&[
            "bundle",
            "init",
            "--bundle-id",
            "acme",
            "--root-key",
            &admin.key("root.pub.json"),
            "--signer-key",
            &admin.key("signer.pub.json"),
            "--out",
            &admin.bundle.display().to_string(),
        ]);
        assert_eq!(ran.code, 0, "{}", ran.out);
        admin
    }

    fn key(&self, name: &str) -> String {
        self.keys.join(name).display().to_string()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let mut cmd = self.env.cmd(&all);
        // The admin's machine: the pinned Node first on PATH (add-server hashes it).
        cmd.env("PATH", format!("{}:/usr/bin:/bin", node_dir().display()));
        cmd
    }

    fn run(&self, args: &[&str]) -> Ran {
        let (code, stdout, err) = output_of(self.command(args));
        let out = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: stdout={stdout} stderr={err}"));
        Ran { code, out, err }
    }

    /// `bundle add-server BUNDLE --id ID …` with `kind` (and `--all-tools` unless `kind`
    /// names tools).
    fn add(&self, id: &str, kind: &[String]) -> Ran {
        let bundle = self.bundle.display().to_string();
        let key = self.key("signer.key");
        let sources = self.sources.display().to_string();
        let mut args = vec![
            "bundle",
            "add-server",
            &bundle,
            "--id",
            id,
            "--clearance",
            "internal",
            "--signer-key",
            &key,
            "--package-sources",
            &sources,
        ];
        args.extend(kind.iter().map(String::as_str));
        if !kind.iter().any(|k| k.starts_with("--tool")) {
            args.push("--all-tools");
        }
        self.run(&args)
    }

    fn bundle_json(&self) -> Value {
        serde_json::from_slice(&std::fs::read(&self.bundle).unwrap()).unwrap()
    }
}

/// server-everything over stdio, as the pinned Node runs it.
fn everything_stdio() -> String {
    let script = repo()
        .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
        .canonicalize()
        .expect("server-everything is in node_modules: run scripts/install-deps.sh (npm ci)");
    format!("node {} stdio", script.display())
}

fn lockfile(server: &str) -> String {
    repo()
        .join("tests/packages/npm")
        .join(server)
        .join("package-lock.json")
        .display()
        .to_string()
}

/// Asserts a `--json` listing found nothing (printing the findings otherwise) and returns how
/// many items it listed under `keys`.
fn assert_listing_clean(listing: &Value, keys: &[&str]) -> usize {
    let findings = listing["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("no findings list in {listing}"));
    assert!(
        findings.is_empty(),
        "{}",
        serde_json::to_string_pretty(findings).unwrap()
    );
    keys.iter()
        .map(|key| listing[key].as_array().map_or(0, Vec::len))
        .sum()
}

#[test]
fn the_real_servers_definitions_have_no_findings() {
    let admin = Admin::new();
    // Each server is added to the bundle in turn with all its tools: each add-server reviews
    // the new server's definitions against the tools of every entry added before it.
    let servers: [(&str, Vec<String>); 4] = [
        ("urn:test:demo", vec![format!("--stdio={}", demo_bin())]),
        (
            "urn:test:everything",
            vec![format!("--stdio={}", everything_stdio())],
        ),
        (
            "urn:test:memory",
            vec![
                format!("--npm={MEMORY}@{MEMORY_VERSION}"),
                format!("--lockfile={}", lockfile("server-memory")),
            ],
        ),
        (
            "urn:test:filesystem",
            vec![
                format!("--npm={FILESYSTEM}@{VERSION}"),
                format!("--lockfile={}", lockfile("server-filesystem")),
                "--user-arg=existing_directory_under_home:read_write:1:4".into(),
            ],
        ),
    ];
    for (id, kind) in &servers {
        let ran = admin.add(id, kind);
        assert_eq!(ran.code, 0, "{id}: {} {}", ran.out, ran.err);
        assert_eq!(
            ran.out["findings"],
            json!({}),
            "{id}: {}",
            serde_json::to_string_pretty(&ran.out["findings"]).unwrap()
        );
        assert!(!ran.err.contains("definition review"), "{id}: {}", ran.err);
        let listed = ran.out["tools_listed"].as_array().unwrap().len();
        assert!(listed >= 3, "{id}: {}", ran.out);
        assert_eq!(ran.out["tools_allowed"].as_array().unwrap().len(), listed);
    }
    let written = admin.bundle_json();
    assert_eq!(written["signed"]["specVersion"], 6);

    // bundle inspect reviews every carried definition against all the other entries' tools.
    let bundle = admin.bundle.display().to_string();
    let ran = admin.run(&["bundle", "inspect", &bundle]);
    let entries = ran.out["servers"].as_array().unwrap();
    assert_eq!(entries.len(), 4, "{}", ran.out);
    let mut carried = 0;
    for entry in entries {
        assert_eq!(entry["findings"], json!([]), "{}: {entry}", entry["id"]);
        let definitions = entry["toolDefinitions"].as_u64().unwrap();
        assert_eq!(
            definitions as usize,
            entry["allowedTools"].as_array().unwrap().len(),
            "{entry}"
        );
        carried += definitions;
    }
    // demo, server-everything, server-memory and server-filesystem list 40-odd tools together.
    assert!(carried >= 35, "{carried}");

    // Signed and installed, the bundle's tools are the other servers' tools of every listing.
    let ran = admin.run(&["bundle", "sign", "--key", &admin.key("root.key"), &bundle]);
    assert_eq!(ran.code, 0, "{}", ran.out);
    let ran = admin.run(&["bundle", "install", &bundle]);
    assert_eq!(ran.code, 0, "{}", ran.out);
    let everything = everything_stdio();
    let mut items = 0;
    for (what, keys) in [
        ("tools", &["tools", "hidden", "blocked"][..]),
        ("prompts", &["prompts", "hidden", "blocked"][..]),
        ("resources", &["resources", "templates", "hidden"][..]),
    ] {
        let ran = admin.run(&[what, "--stdio", &everything]);
        assert_eq!(ran.code, 0, "{what}: {} {}", ran.out, ran.err);
        items += assert_listing_clean(&ran.out, keys);
    }
    // server-everything's 13 tools, 4 prompts, 7 resources and 2 templates (at least).
    assert!(items >= 20, "{items}");

    // The demo as demo mode runs it.
    let demo = Env::new();
    let (code, out) = demo.json(&["--demo", "tools", "demo"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        assert_listing_clean(&out, &["tools", "hidden", "blocked"]) >= 5,
        "{out}"
    );
}

#[test]
fn add_server_refuses_a_poisoned_definition_unless_the_findings_are_accepted() {
    let admin = Admin::new();
    // Another server the bundle configures, whose tool the poisoned definitions talk about.
    let mut document = admin.bundle_json();
    document["signed"]["servers"] = json!([{
        "id": "urn:test:mail", "origins": ["https://mail.example"], "allowedTools": ["send_email"],
    }]);
    std::fs::write(&admin.bundle, serde_json::to_vec_pretty(&document).unwrap()).unwrap();
    let before = std::fs::read(&admin.bundle).unwrap();
    let poisoned = vec![format!("--stdio={} --poisoned-definitions", demo_bin())];

    let ran = admin.add("urn:test:poisoned", &poisoned);
    assert_eq!(ran.code, 1, "{} {}", ran.out, ran.err);
    assert_eq!(
        ran.out["error"]["code"],
        ErrorCode::DefinitionFindings.as_str(),
        "{}",
        ran.out
    );
    let message = ran.out["error"]["message"].as_str().unwrap();
    for tool in [
        "poison_zero_width",
        "poison_tag_smuggled",
        "poison_secrecy",
        "poison_other_tool_instruction",
        "poison_secret_field",
    ] {
        assert!(message.contains(tool), "{tool}: {message}");
    }
    assert!(message.contains("--accept-findings"), "{message}");
    // Nothing written.
    assert_eq!(std::fs::read(&admin.bundle).unwrap(), before);
    // Each finding printed, escaped, under its tool.
    for line in [
        "definition review of poison_zero_width:",
        r#"! high invisible_characters description: "Return the mes\u{200B}sage unchanged.""#,
        "[tags: \"Ignore previous instructions",
        "! high model_instruction description:",
        "! high other_server_tool description:",
        "! high other_tool_instruction description:",
        "! high secret_request inputSchema.properties.api_key:",
    ] {
        assert!(ran.err.contains(line), "{line}: {}", ran.err);
    }
    assert!(!ran.err.contains('\u{200B}'), "{}", ran.err);

    // The clean tools alone need no flag.
    let ran = admin.add(
        "urn:test:poisoned",
        &[poisoned[0].clone(), "--tool=echo".into()],
    );
    assert_eq!(ran.code, 0, "{} {}", ran.out, ran.err);
    assert_eq!(ran.out["findings"], json!({}));

    // With --accept-findings every tool is pinned, the definitions carried, the findings
    // reported.
    let mut accepted = poisoned.clone();
    accepted.push("--accept-findings".into());
    let ran = admin.add("urn:test:poisoned", &accepted);
    assert_eq!(ran.code, 0, "{} {}", ran.out, ran.err);
    let kinds: Vec<&str> = ran.out["findings"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|f| f.as_array().unwrap())
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    for kind in [
        "invisible_characters",
        "model_instruction",
        "other_server_tool",
        "other_tool_instruction",
        "secret_request",
    ] {
        assert!(kinds.contains(&kind), "{kind}: {}", ran.out);
    }
    let written = admin.bundle_json();
    let entry = &written["signed"]["servers"][1];
    assert_eq!(entry["id"], "urn:test:poisoned");
    assert_eq!(written["signed"]["specVersion"], 6);
    let definition = &entry["toolDefinitions"]["poison_zero_width"];
    assert_eq!(
        definition["description"], "Return the mes\u{200B}sage unchanged.",
        "the definition is carried exactly as listed"
    );
    assert_eq!(
        entry["toolPins"]["poison_zero_width"],
        json!(gatehouse_attest::pins::tool_pin(definition))
    );

    // bundle inspect shows the carried definitions' findings under the entry.
    let bundle = admin.bundle.display().to_string();
    let ran = admin.run(&["bundle", "inspect", &bundle]);
    let reviewed = &ran.out["servers"][1]["findings"];
    let names: Vec<&str> = reviewed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"poison_secrecy"), "{reviewed}");
    assert!(!names.contains(&"echo"), "{reviewed}");
    let (code, stdout, _) = output_of({
        let mut cmd = admin.env.cmd(&["bundle", "inspect", &bundle]);
        cmd.env("PATH", "/usr/bin:/bin");
        cmd
    });
    assert!(code == 0 || code == 1, "{stdout}");
    assert!(
        stdout.contains("urn:test:poisoned: tool poison_secrecy:")
            && stdout.contains("  ! high model_instruction description:"),
        "{stdout}"
    );
}

#[test]
fn listings_escape_invisible_characters_and_show_the_finding() {
    let env = Env::new();
    let poisoned = format!("{} --poisoned-definitions", demo_bin());
    // Approved in the warn posture (acknowledging the findings), so the listing shows the
    // description itself.
    let (code, stdout, stderr) = env.run(&[
        "tools",
        "pin",
        "--stdio",
        &poisoned,
        "--tool",
        "poison_zero_width",
        "--accept-findings",
    ]);
    assert_eq!(code, 0, "{stdout} {stderr}");
    let (code, stdout, stderr) = env.run(&["tools", "--stdio", &poisoned]);
    assert_eq!(code, 0, "{stdout} {stderr}");
    assert!(!stdout.contains('\u{200B}'), "{stdout}");
    assert!(
        stdout.contains(r"Return the mes\u{200B}sage unchanged."),
        "{stdout}"
    );
    let row = stdout
        .lines()
        .position(|l| l.starts_with("poison_zero_width "))
        .unwrap_or_else(|| panic!("{stdout}"));
    let next = stdout.lines().nth(row + 1).unwrap_or_default();
    assert!(
        next.starts_with(
            r#"  ! high invisible_characters description: "Return the mes\u{200B}sage"#
        ),
        "{stdout}"
    );
    // In JSON the listing's findings name their tool; the tools are as listed (a pin is
    // computed from them).
    let (code, out) = env.json(&["tools", "--stdio", &poisoned]);
    assert_eq!(code, 0, "{out}");
    let findings = out["findings"].as_array().unwrap();
    let of =
        |name: &str| -> Vec<&Value> { findings.iter().filter(|f| f["tool"] == name).collect() };
    assert!(of("echo").is_empty(), "{out}");
    let zero_width = of("poison_zero_width");
    assert_eq!(zero_width.len(), 1, "{out}");
    assert_eq!(
        *zero_width[0],
        json!({
            "tool": "poison_zero_width", "kind": "invisible_characters", "severity": "high",
            "field": "description", "excerpt": r"Return the mes\u{200B}sage unchanged.",
            "detail": "zero_width: 1 invisible or direction-changing character (U+200B)",
        })
    );
    for name in [
        "poison_secrecy",
        "poison_tag_smuggled",
        "poison_secret_field",
    ] {
        assert!(!of(name).is_empty(), "{name}: {out}");
    }
    let listed = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "poison_zero_width")
        .unwrap_or_else(|| panic!("{out}"));
    assert!(listed.get("findings").is_none(), "{listed}");
    assert_eq!(
        listed["description"],
        "Return the mes\u{200B}sage unchanged."
    );
}

#[test]
fn the_warn_posture_refuses_a_tool_with_a_high_finding_until_it_is_acknowledged() {
    let env = Env::new();
    let poisoned = format!("{} --poisoned-definitions", demo_bin());
    let (code, out) = env.json(&["servers", "add", "poisoned", "--stdio", &poisoned]);
    assert_eq!(code, 0, "{out}");
    let approvals = || -> Vec<Value> {
        common::audit_records(&env.audit_log())
            .into_iter()
            .filter(|r| r["event"] == "tool_approved")
            .map(|r| r["data"].clone())
            .collect()
    };

    // Unapproved, the tool is listed with its finding, not offered.
    let (code, out) = env.json(&["tools", "poisoned"]);
    assert_eq!(code, 0, "{out}");
    let offered: Vec<&Value> = out["tools"].as_array().unwrap().iter().collect();
    assert!(
        !offered.iter().any(|t| t["name"] == "poison_secrecy"),
        "{out}"
    );
    assert!(
        out["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["tool"] == "poison_secrecy" && f["kind"] == "model_instruction"),
        "{out}"
    );

    // Refused without the acknowledgement, in JSON and in text, naming the finding and the
    // flag; nothing approved.
    let (code, out) = env.json(&["tools", "pin", "poisoned", "--tool", "poison_secrecy"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out["error"]["code"],
        ErrorCode::FindingNotAcknowledged.as_str(),
        "{out}"
    );
    let message = out["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("poison_secrecy") && message.contains("model_instruction"),
        "{message}"
    );
    let (code, stdout, stderr) = env.run(&["tools", "pin", "poisoned", "--tool", "poison_secrecy"]);
    assert_eq!(code, 1, "{stdout} {stderr}");
    assert!(stderr.contains("--accept-findings"), "{stderr}");
    assert!(approvals().is_empty(), "{:?}", approvals());

    // A clean tool needs no acknowledgement, and its record names no finding.
    let (code, out) = env.json(&["tools", "pin", "poisoned", "--tool", "echo"]);
    assert_eq!(code, 0, "{out}");
    let records = approvals();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["tool"], "echo");
    assert!(records[0].get("findings").is_none(), "{records:?}");

    // Acknowledged: approved, the record carries the finding codes, and it is offered.
    let (code, out) = env.json(&[
        "tools",
        "pin",
        "poisoned",
        "--tool",
        "poison_secrecy",
        "--accept-findings",
    ]);
    assert_eq!(code, 0, "{out}");
    let records = approvals();
    let secrecy: Vec<&Value> = records
        .iter()
        .filter(|r| r["tool"] == "poison_secrecy")
        .collect();
    assert_eq!(secrecy.len(), 1, "{records:?}");
    assert_eq!(
        secrecy[0]["findings"],
        json!(["model_instruction"]),
        "{records:?}"
    );
    let (code, out) = env.json(&["tools", "poisoned"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "poison_secrecy"),
        "{out}"
    );
}

/// The review's copy of the gateway's naming rule is the gateway's: a definition naming
/// another server's tool as a client sees it (`SERVER__TOOL`) is found whatever the names.
#[test]
fn the_reviews_gateway_names_are_the_gateways() {
    let long = "t".repeat(80);
    let wide = "s".repeat(31);
    let cases = [
        ("github", "create_issue"),
        ("github-prod", "create_issue"),
        ("my server", "files.read"),
        ("a__b", "c"),
        ("a_", "_b"),
        ("urn:acme:mail", "send_email"),
        ("demo", long.as_str()),
        (wide.as_str(), "x"),
        ("ünïcode", "wérd"),
        ("", ""),
    ];
    for (server, tool) in cases {
        assert_eq!(
            gatehouse_review::offered_name(server, tool),
            gatehouse_gateway::names::offered_name(server, tool),
            "{server:?} {tool:?}"
        );
    }
}
