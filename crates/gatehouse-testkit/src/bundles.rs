//! Signed trust-root bundles and attestations for tests, with fixed test keys: the root key
//! (seed 11) signs bundles, the signer key (seed 22) signs attestations. [`signed`] is the
//! signed part of bundle `test-bundle`, edited by the test and written by [`install`].

use std::path::{Path, PathBuf};

use base64::Engine;
use ed25519_dalek::SigningKey;
use gatehouse_attest::bundle::sign_bundle;
use gatehouse_attest::sign_document;
use serde_json::{Value, json};

/// `key`'s public half, base64 as bundles hold it.
pub fn b64(key: &SigningKey) -> String {
    base64::engine::general_purpose::STANDARD.encode(key.verifying_key().to_bytes())
}

/// The bundles' root key (`root`).
pub fn root_key() -> SigningKey {
    SigningKey::from_bytes(&[11; 32])
}

/// The attestations' signer key (`signer`).
pub fn signer_key() -> SigningKey {
    SigningKey::from_bytes(&[22; 32])
}

/// An attestation for `id`, signed by the signer key; `hosts` becomes `netAllowedHosts`.
pub fn attestation(id: &str, hosts: Option<&[&str]>) -> Value {
    let mut sad = json!({
        "v": "1.0", "id": id, "publisher": "Test Publisher",
        "version": "1", "clearance": "internal", "capabilities": ["mcp-server"]
    });
    if let Some(hosts) = hosts {
        sad["netAllowedHosts"] = json!(hosts);
    }
    Value::Object(sign_document(sad.as_object().unwrap(), "signer", &signer_key()).unwrap())
}

/// The signed part of bundle `test-bundle`: version 1, unlocked, deny-by-default, expiring in
/// 2099, trusting the signer key, with `servers`. Edit it before [`install`].
pub fn signed(servers: Value) -> Value {
    json!({
        "type": "gatehouse-trust-root", "specVersion": 1, "bundleId": "test-bundle",
        "version": 1, "expires": "2099-01-01T00:00:00Z",
        "root": {"threshold": 1, "keys": [{"id": "root", "publicKey": b64(&root_key())}]},
        "posture": "deny-by-default", "locked": false, "requiredClearance": "internal",
        "scheme": {"name": "t", "levels": [{"name": "public", "rank": 0}, {"name": "internal", "rank": 1}]},
        "keys": [{"id": "signer", "publicKey": b64(&signer_key()), "notAfter": "2099-01-01T00:00:00Z",
                  "approvedClearances": ["public", "internal"]}],
        "servers": servers,
    })
}

/// Writes `signed`, signed by the root key, to `dir/test-bundle.json` (replacing it in one
/// rename, as an install does).
pub fn install(dir: &Path, signed: &Value) -> PathBuf {
    let bundle = json!({"signed": signed, "signatures": [sign_bundle(signed, "root", &root_key()).unwrap()]});
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("test-bundle.json");
    let tmp = dir.join(".test-bundle.json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&bundle).unwrap()).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    path
}

/// A stdio binding for `id`, as an admin writes it for a local server: no `origins`.
pub fn stdio_entry(id: &str, command: &str, sha256: &str, attestation: Value) -> Value {
    json!({
        "id": id,
        "stdio": {"command": command, "args": [], "sha256": sha256, "attestation": attestation},
        "allowedTools": ["echo"],
    })
}

/// The bundle `specVersion` that carries `confinement` (bundle-wide and per entry).
pub const CONFINEMENT_SPEC_VERSION: u64 = 7;

/// A stdio binding for `id` running `command` with `args`, allowed `tools`, with the
/// `confinement` object given (`{"mode"?, "read"?, "write"?, "hosts"?, "processes"?,
/// "memoryMiB"?}`). A bundle holding it needs `specVersion` [`CONFINEMENT_SPEC_VERSION`]:
/// see [`signed_with_confinement`].
pub fn confined_stdio_entry(
    id: &str,
    command: &str,
    args: &[&str],
    sha256: &str,
    tools: &[&str],
    confinement: Value,
) -> Value {
    let mut entry = stdio_entry(id, command, sha256, attestation(id, None));
    entry["stdio"]["args"] = json!(args);
    entry["allowedTools"] = json!(tools);
    entry["confinement"] = confinement;
    entry
}

/// [`signed`] at specVersion [`CONFINEMENT_SPEC_VERSION`], with the bundle-wide confinement
/// `mode` when given (`"required"`, `"preferred"` or `"off"`).
pub fn signed_with_confinement(servers: Value, mode: Option<&str>) -> Value {
    let mut signed = signed(servers);
    signed["specVersion"] = json!(CONFINEMENT_SPEC_VERSION);
    if let Some(mode) = mode {
        signed["confinement"] = json!({"mode": mode});
    }
    signed
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_host::admission::{Trust, TrustSettings};

    #[test]
    fn an_installed_bundle_loads_as_the_deny_by_default_test_bundle() {
        let dir = tempfile::tempdir().unwrap();
        let entry = stdio_entry(
            "urn:test:weather",
            "/usr/bin/weather-mcp",
            &"00".repeat(32),
            attestation("urn:test:weather", Some(&["api.example.com"])),
        );
        let path = install(dir.path(), &signed(json!([entry])));
        assert_eq!(path, dir.path().join("test-bundle.json"));
        let now = gatehouse_host::tap::system_clock()();
        let trust = Trust::load(
            &TrustSettings {
                system_dir: dir.path().to_path_buf(),
                user_dir: None,
                posture_override: None,
                demo_bundle: None,
            },
            now,
        );
        assert!(trust.problems().is_empty(), "{:?}", trust.problems());
        let labels: Vec<String> = trust.summaries().into_iter().map(|b| b.bundle).collect();
        assert_eq!(labels, ["test-bundle@1"]);
        assert_eq!(
            trust.posture(),
            gatehouse_attest::bundle::Posture::DenyByDefault
        );
    }

    #[test]
    fn a_confined_entry_loads_only_at_the_confinement_spec_version() {
        let entry = confined_stdio_entry(
            "urn:test:confined",
            "/usr/bin/confined-mcp",
            &["--flag"],
            &"00".repeat(32),
            &["echo", "escape"],
            json!({"write": ["~/work"], "hosts": ["127.0.0.1:8080"]}),
        );
        assert_eq!(entry["stdio"]["args"], json!(["--flag"]));
        assert_eq!(entry["allowedTools"], json!(["echo", "escape"]));
        let load = |signed: &Value| {
            let dir = tempfile::tempdir().unwrap();
            install(dir.path(), signed);
            let trust = Trust::load(
                &TrustSettings {
                    system_dir: dir.path().to_path_buf(),
                    user_dir: None,
                    posture_override: None,
                    demo_bundle: None,
                },
                gatehouse_host::tap::system_clock()(),
            );
            trust.problems().len()
        };
        let servers = json!([entry]);
        assert_eq!(load(&signed_with_confinement(servers.clone(), None)), 0);
        assert_eq!(
            load(&signed_with_confinement(servers.clone(), Some("required"))),
            0
        );
        // Below specVersion 7 the entry's confinement is refused.
        assert_eq!(load(&signed(servers)), 1);
    }
}
