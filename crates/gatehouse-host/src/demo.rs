//! Demo mode: a trust-root bundle for the embedded demo server, signed at start-up with the
//! DEMO-ONLY keys published in `trust-roots/demo/`.
//!
//! Why at start-up: the bundle binds the demo server's executable by SHA-256, which differs on
//! every build. The bundle is then loaded through the same verification as an installed one
//! (threshold signatures, expiry, the attestation's signature), so demo mode exercises the real
//! path; what it cannot give is trust, because anyone can sign with these keys. Every verdict
//! it supports is labelled "demo", and it is only ever loaded when demo mode is asked for.

use std::path::{Path, PathBuf};

use gatehouse_attest::bundle::sign_bundle;
use gatehouse_attest::keys::parse_private_key;
use gatehouse_attest::sign_document;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::admission::file_sha256;
use crate::config::{ServerSpec, StdioSpec};

const TEMPLATE: &str = include_str!("../../../trust-roots/demo/DEMO-ONLY-bundle.template.json");
const ROOT_KEYS: [&str; 2] = [
    include_str!("../../../trust-roots/demo/DEMO-ONLY-root-1.key"),
    include_str!("../../../trust-roots/demo/DEMO-ONLY-root-2.key"),
];
const SIGNER_KEY: &str = include_str!("../../../trust-roots/demo/DEMO-ONLY-signer.key");

/// The demo server's name in demo mode.
pub const DEMO_SERVER_NAME: &str = "demo";

/// The demo server under two names: one speaks whatever it negotiates (2026-07-28), the
/// other only 2025-11-25, so both eras' elicitation flows can be tried side by side. Every
/// front end offers both.
pub const DEMO_LEGACY_NAME: &str = "demo-2025";

/// The era a demo server name speaks: `demo-2025` only 2025-11-25, `demo` what it is asked.
pub fn demo_era(name: &str, asked: crate::EraPreference) -> crate::EraPreference {
    if name == DEMO_LEGACY_NAME {
        crate::EraPreference::Only(crate::Era::V2025_11_25)
    } else {
        asked
    }
}

/// The demo server's executable name.
pub const DEMO_SERVER_BINARY: &str = "gatehouse-demo-server";

/// Where the desktop .deb installs the demo server.
pub const PACKAGED_DEMO_SERVER: &str = "/usr/lib/gatehouse/gatehouse-demo-server";

/// Finds the demo server: `$GATEHOUSE_DEMO_SERVER`, else next to the running executable, else
/// where the .deb installs it.
pub fn locate_demo_server() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("GATEHOUSE_DEMO_SERVER") {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let candidate = exe
        .parent()
        .map(|dir| dir.join(DEMO_SERVER_BINARY))
        .ok_or("this executable has no directory")?;
    // Where the .deb installs it.
    let packaged = Path::new(PACKAGED_DEMO_SERVER);
    if candidate.is_file() {
        Ok(candidate)
    } else if packaged.is_file() {
        Ok(packaged.to_path_buf())
    } else {
        Err(format!(
            "demo mode needs {DEMO_SERVER_BINARY} next to this program ({} is missing); build it with `cargo build --workspace` or set GATEHOUSE_DEMO_SERVER",
            candidate.display()
        ))
    }
}

/// The demo bundle, bound to `demo_server` (hashed now), valid for 30 days from `now`.
pub fn demo_bundle(demo_server: &Path, now: OffsetDateTime) -> Result<Vec<u8>, String> {
    let program = std::fs::canonicalize(demo_server)
        .map_err(|e| format!("cannot resolve {}: {e}", demo_server.display()))?;
    let sha256 = file_sha256(&program)?;
    let template: Value = serde_json::from_str(TEMPLATE).expect("the demo template is JSON");
    let mut signed = template["signed"].clone();
    signed["demoOnly"] = json!(true);
    signed["expires"] = json!(
        (now + time::Duration::days(30))
            .replace_nanosecond(0)
            .expect("0 ns is valid")
            .format(&Rfc3339)
            .expect("formats")
    );
    let (signer_id, signer) = parse_private_key(SIGNER_KEY.as_bytes())?;
    // specVersion 7: the entry declares its confinement (issue 28). The demo's connect page
    // listens on loopback, so it shares the network; everything else is confined.
    signed["specVersion"] = json!(7);
    let server = &mut signed["servers"][0];
    server["confinement"] = json!({"hosts": "any"});
    server["stdio"]["command"] = json!(program.display().to_string());
    server["stdio"]["sha256"] = json!(hex::encode(sha256));
    let mut attestation = server["stdio"]["attestation"]
        .as_object()
        .cloned()
        .expect("the template's attestation is an object");
    attestation.insert("version".into(), json!(env!("CARGO_PKG_VERSION")));
    let attestation =
        sign_document(&attestation, &signer_id, &signer).map_err(|e| e.to_string())?;
    server["stdio"]["attestation"] = Value::Object(attestation);
    let mut signatures = Vec::new();
    for key in ROOT_KEYS {
        let (id, key) = parse_private_key(key.as_bytes())?;
        signatures.push(sign_bundle(&signed, &id, &key).map_err(|e| e.to_string())?);
    }
    let bundle = json!({"signed": signed, "signatures": signatures});
    Ok(serde_json::to_vec_pretty(&bundle).expect("serializes"))
}

/// The demo server as a stdio server spec: exactly the command line the demo bundle binds
/// (the located executable, no arguments).
pub fn demo_server_spec() -> Result<ServerSpec, String> {
    Ok(demo_server_spec_at(&locate_demo_server()?))
}

/// The demo server at `program` as a stdio server spec (what [`demo_bundle`] binds).
pub fn demo_server_spec_at(program: &Path) -> ServerSpec {
    ServerSpec::Stdio(StdioSpec {
        command: program.display().to_string(),
        args: Vec::new(),
        env: Vec::new(),
        cwd: None,
    })
}

/// The demo bundle for the demo server found by [`locate_demo_server`], as of `now`.
pub fn local_demo_bundle(now: OffsetDateTime) -> Result<Vec<u8>, String> {
    demo_bundle(&locate_demo_server()?, now)
}
