//! `gatehouse bundle add-server` with the confinement flags, through the real binary: the
//! flags land in the entry's `confinement` (specVersion 7) of a bundle that then signs,
//! verifies and inspects with them; a bad value is refused naming its flag before anything is
//! written; a remote server (`--url`) cannot be confined here; `bundle diff` reports the
//! confinement change kinds.

mod common;

use std::path::PathBuf;

use common::{Env, demo_bin};
use serde_json::{Value, json};

struct Admin {
    env: Env,
    keys: PathBuf,
    bundle: String,
}

impl Admin {
    /// Keys, and a bundle from `bundle init` with no servers yet.
    fn new() -> Admin {
        let env = Env::new();
        let keys = env.dir.path().join("keys");
        for id in ["root", "signer"] {
            let (code, out) = env.json(&[
                "bundle",
                "keygen",
                "--out",
                keys.to_str().unwrap(),
                "--id",
                id,
            ]);
            assert_eq!(code, 0, "{out}");
        }
        let bundle = env.dir.path().join("bundle.json");
        let bundle = bundle.to_str().unwrap().to_string();
        let admin = Admin { env, keys, bundle };
        let (code, out) = admin.env.json(&[
            "bundle",
            "init",
            "--bundle-id",
            "acme",
            "--root-key",
            &admin.key("root.pub.json"),
            "--signer-key",
            &admin.key("signer.pub.json"),
            "--out",
            &admin.bundle,
        ]);
        assert_eq!(code, 0, "{out}");
        admin
    }

    fn key(&self, name: &str) -> String {
        self.keys.join(name).to_str().unwrap().to_string()
    }

    /// `bundle add-server` for the demo server over stdio, with `extra` flags.
    fn add(&self, id: &str, extra: &[&str]) -> (i32, String, String) {
        let demo = demo_bin();
        let mut args = vec![
            "bundle",
            "add-server",
            &self.bundle,
            "--id",
            id,
            "--clearance",
            "internal",
            "--signer-key",
        ];
        let signer = self.key("signer.key");
        args.push(&signer);
        args.extend_from_slice(&["--stdio", &demo, "--all-tools", "--accept-findings"]);
        args.extend_from_slice(extra);
        self.env.run(&args)
    }

    fn signed(&self) -> Value {
        let bytes = std::fs::read(&self.bundle).unwrap();
        serde_json::from_slice::<Value>(&bytes).unwrap()["signed"].clone()
    }

    /// Writes `signed` as `name` and signs it with the root key.
    fn write_signed(&self, name: &str, signed: &Value) -> String {
        let path = self.env.dir.path().join(name);
        std::fs::write(
            &path,
            serde_json::to_vec_pretty(&json!({"signed": signed, "signatures": []})).unwrap(),
        )
        .unwrap();
        let path = path.to_str().unwrap().to_string();
        let (code, out) = self
            .env
            .json(&["bundle", "sign", "--key", &self.key("root.key"), &path]);
        assert_eq!(code, 0, "{out}");
        path
    }
}

#[test]
fn the_flags_land_in_the_signed_bundle_and_inspect_shows_them() {
    let admin = Admin::new();
    let (code, stdout, stderr) = admin.add(
        "urn:acme:demo",
        &[
            "--confinement",
            "required",
            "--read",
            "~/projects",
            "--read",
            "/srv/reference",
            "--write",
            "~/out/",
            "--host",
            "API.example.com:443",
            "--host",
            "127.0.0.1:8080",
            "--processes",
            "2",
            "--memory-mib",
            "1024",
        ],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    let signed = admin.signed();
    assert_eq!(signed["specVersion"], 7, "{signed}");
    let confinement = &signed["servers"][0]["confinement"];
    assert_eq!(confinement["mode"], "required", "{confinement}");
    assert_eq!(confinement["read"], json!(["~/projects", "/srv/reference"]));
    // Normalised as the host reads it: the trailing "/" dropped, the host lowercased.
    assert_eq!(confinement["write"], json!(["~/out"]));
    assert_eq!(
        confinement["hosts"],
        json!(["api.example.com:443", "127.0.0.1:8080"])
    );
    assert_eq!(confinement["processes"], 2);
    assert_eq!(confinement["memoryMiB"], 1024);

    // Signed, it verifies, and inspect shows the entry's confinement, in JSON and one line.
    let path = admin.write_signed("bundle.json", &signed);
    let (code, out) = admin.env.json(&["bundle", "inspect", &path]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["valid"], true, "{out}");
    assert_eq!(out["specVersion"], 7);
    assert_eq!(out["servers"][0]["confinement"], *confinement);
    let (code, stdout, stderr) = admin.env.run(&["bundle", "inspect", &path]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains(
            "urn:acme:demo: confinement: required; reads ~/projects, /srv/reference; writes ~/out; hosts api.example.com:443, 127.0.0.1:8080; processes 2; memory 1024 MiB"
        ),
        "{stdout}"
    );

    // --any-host alone: the shared network, the mode left to the policy and the bundles.
    let (code, stdout, stderr) = admin.add("urn:acme:open", &["--any-host"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let signed = admin.signed();
    assert_eq!(signed["servers"][1]["confinement"], json!({"hosts": "any"}));
    let path = admin.write_signed("bundle.json", &signed);
    let (code, stdout, stderr) = admin.env.run(&["bundle", "inspect", &path]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("urn:acme:open: confinement: mode not set (the policy's and the bundles' apply); reads nothing; writes nothing; hosts any; processes 0; memory 4096 MiB"),
        "{stdout}"
    );
}

#[test]
fn an_entry_without_the_flags_carries_no_confinement_and_keeps_the_version() {
    let admin = Admin::new();
    let (code, stdout, stderr) = admin.add("urn:acme:demo", &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let signed = admin.signed();
    assert!(
        signed["servers"][0].get("confinement").is_none(),
        "{signed}"
    );
    // Carried definitions need 6; nothing here needs 7.
    assert_eq!(signed["specVersion"], 6, "{signed}");
}

#[test]
fn a_bad_flag_value_is_refused_naming_the_flag_and_nothing_is_written() {
    let admin = Admin::new();
    let before = std::fs::read(&admin.bundle).unwrap();
    for (flags, says) in [
        (&["--read", "projects"][..], "--read \"projects\""),
        (&["--read", "~/../.ssh"][..], "--read \"~/../.ssh\""),
        (&["--write", "/"][..], "--write \"/\""),
        (
            &["--host", "api.example.com"][..],
            "--host \"api.example.com\"",
        ),
        (
            &["--host", "*.example.com:443"][..],
            "--host \"*.example.com:443\"",
        ),
        (
            &["--host", "https://api.example.com:443"][..],
            "--host \"https://api.example.com:443\"",
        ),
        (&["--confinement", "strict"][..], "--confinement \"strict\""),
        (
            &["--confinement", "Required"][..],
            "--confinement \"Required\"",
        ),
        (&["--memory-mib", "0"][..], "--memory-mib 0"),
        (&["--memory-mib", "1000000"][..], "--memory-mib 1000000"),
        (&["--processes", "100000"][..], "--processes 100000"),
    ] {
        let (code, stdout, stderr) = admin.add("urn:acme:demo", flags);
        assert_eq!(code, 2, "{flags:?}: {stdout}{stderr}");
        let said = format!("{stdout}{stderr}");
        assert!(said.contains(says), "{flags:?}: {said}");
        assert_eq!(
            std::fs::read(&admin.bundle).unwrap(),
            before,
            "{flags:?} wrote the bundle"
        );
    }
    // Two network grants that contradict each other: refused by the parser of the arguments.
    let (code, stdout, stderr) = admin.add(
        "urn:acme:demo",
        &["--any-host", "--host", "api.example.com:443"],
    );
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("--any-host"), "{stderr}");
    // A remote server runs elsewhere: refused before anything is fetched (nothing listens at
    // this URL), naming the flags given.
    let (code, stdout, stderr) = admin.env.run(&[
        "bundle",
        "add-server",
        &admin.bundle,
        "--id",
        "urn:acme:remote",
        "--clearance",
        "internal",
        "--signer-key",
        &admin.key("signer.key"),
        "--url",
        "https://mcp.example.invalid/mcp",
        "--all-tools",
        "--read",
        "~/projects",
        "--processes",
        "1",
    ]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    let said = format!("{stdout}{stderr}");
    assert!(
        said.contains("--read, --processes: a remote server (--url) runs elsewhere"),
        "{said}"
    );
    assert_eq!(std::fs::read(&admin.bundle).unwrap(), before);
}

#[test]
fn bundle_diff_reports_confinement_changes_widening_or_narrowing() {
    let admin = Admin::new();
    let (code, stdout, stderr) = admin.add(
        "urn:acme:demo",
        &["--read", "~/projects", "--host", "api.example.com:443"],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    let mut v1 = admin.signed();
    v1["confinement"] = json!({"mode": "required"});
    let v1s = admin.write_signed("v1.json", &v1);

    // v2 opens the network, grants a write path and loosens the bundle's mode: exit 3.
    let mut v2 = v1.clone();
    v2["version"] = json!(2);
    v2["confinement"] = json!({"mode": "preferred"});
    v2["servers"][0]["confinement"]["hosts"] = json!("any");
    v2["servers"][0]["confinement"]["write"] = json!(["~/out"]);
    let v2s = admin.write_signed("v2.json", &v2);
    let (code, stdout, stderr) = admin.env.run(&["bundle", "diff", &v1s, &v2s]);
    assert_eq!(code, 3, "{stdout}{stderr}");
    for line in [
        "WIDENS  bundle_confinement_loosened: the bundle's confinement mode required became preferred",
        "WIDENS  confinement_network_any:",
        "WIDENS  confinement_write_granted: confinement write path \"~/out\" added",
    ] {
        assert!(stdout.contains(line), "{line}: {stdout}");
    }

    // v3 only takes away: the read path and the bundle mode raised back: exit 0.
    let mut v3 = v1.clone();
    v3["version"] = json!(3);
    v3["servers"][0]["confinement"]
        .as_object_mut()
        .unwrap()
        .remove("read");
    let v3s = admin.write_signed("v3.json", &v3);
    let (code, stdout, stderr) = admin.env.run(&["bundle", "diff", &v1s, &v3s]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("narrows confinement_read_removed"),
        "{stdout}"
    );
    let (code, out) = admin.env.json(&["bundle", "diff", &v2s, &v3s]);
    assert_eq!(code, 0, "{out}");
    let kinds: Vec<&str> = out["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    for kind in [
        "bundle_confinement_tightened",
        "confinement_network_restricted",
        "confinement_write_removed",
        "confinement_read_removed",
    ] {
        assert!(kinds.contains(&kind), "{kind}: {out}");
    }
}
