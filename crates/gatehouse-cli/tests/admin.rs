//! The admin workflow through the real binary: keygen → init → sign by threshold → verify →
//! attest sign/verify → rotate. Exit codes and JSON shapes are the stable contract.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{Env, repo};
use serde_json::{Value, json};

fn keygen(env: &Env, dir: &Path, id: &str) -> Value {
    let (code, out) = env.json(&[
        "bundle",
        "keygen",
        "--out",
        dir.to_str().unwrap(),
        "--id",
        id,
    ]);
    assert_eq!(code, 0, "{out}");
    out
}

#[test]
fn an_admin_goes_from_keygen_to_a_verified_rotated_bundle() {
    let env = Env::new();
    let keys = env.dir.path().join("keys");
    let k = |name: &str| keys.join(name).to_str().unwrap().to_string();
    let a = keygen(&env, &keys, "admin-a");
    keygen(&env, &keys, "admin-b");
    keygen(&env, &keys, "admin-c");
    keygen(&env, &keys, "signer");
    // The private key file is the owner's alone, and never printed.
    let private = std::fs::read_to_string(keys.join("admin-a.key")).unwrap();
    let seed = serde_json::from_str::<Value>(&private).unwrap()["seed"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!a.to_string().contains(&seed));
    assert_eq!(
        std::fs::metadata(keys.join("admin-a.key"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    let (code, out) = env.json(&[
        "bundle",
        "keygen",
        "--out",
        keys.to_str().unwrap(),
        "--id",
        "admin-a",
    ]);
    assert_eq!(code, 2, "never overwrite a key: {out}");

    let v1 = env.dir.path().join("acme-v1.json");
    let v1s = v1.to_str().unwrap();
    let (code, out) = env.json(&[
        "bundle",
        "init",
        "--bundle-id",
        "acme",
        "--root-key",
        &k("admin-a.pub.json"),
        "--root-key",
        &k("admin-b.pub.json"),
        "--root-key",
        &k("admin-c.pub.json"),
        "--signer-key",
        &k("signer.pub.json"),
        "--out",
        v1s,
    ]);
    assert_eq!(code, 0, "{out}");
    // Unsigned, then one of the two required signatures: refused, with the reason.
    let (code, out) = env.json(&["bundle", "verify", v1s]);
    assert_eq!(
        (code, out["error"]["code"].as_str()),
        (1, Some("bundle_threshold_not_met")),
        "{out}"
    );
    assert_eq!(
        env.json(&["bundle", "sign", "--key", &k("admin-a.key"), v1s])
            .0,
        0
    );
    assert_eq!(
        env.json(&["bundle", "sign", "--key", &k("admin-a.key"), v1s])
            .0,
        0,
        "re-signing replaces, not duplicates"
    );
    assert_eq!(env.json(&["bundle", "verify", v1s]).0, 1);
    assert_eq!(
        env.json(&["bundle", "sign", "--key", &k("admin-b.key"), v1s])
            .0,
        0
    );
    let (code, out) = env.json(&["bundle", "verify", v1s]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["bundle"], "acme@1");
    assert_eq!(out["signers"], json!(["admin-a", "admin-b"]));

    // A server operator signs an attestation with the signer key; it verifies against the bundle.
    let sad = env.dir.path().join("sad.json");
    std::fs::write(&sad, r#"{"v": "1.0", "id": "urn:acme:weather", "publisher": "Acme", "version": "1.0.0",
        "clearance": "internal", "capabilities": ["mcp-server"], "netAllowedHosts": ["https://tools.acme.example"]}"#).unwrap();
    let signed_sad = env.dir.path().join("sad.signed.json");
    let (code, _, stderr) = env.run(&[
        "attest",
        "sign",
        "--key",
        &k("signer.key"),
        sad.to_str().unwrap(),
        "--out",
        signed_sad.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let verify = |sad: &Path, origin: &str| {
        env.json(&[
            "attest",
            "verify",
            "--sad",
            sad.to_str().unwrap(),
            "--trust-root",
            v1s,
            "--origin",
            origin,
            "--required",
            "internal",
        ])
    };
    let (code, out) = verify(&signed_sad, "https://tools.acme.example");
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["admitted", "reason", "code", "detail"]
    );
    assert_eq!(
        (
            out["admitted"].as_bool(),
            out["reason"].is_null(),
            out["code"].is_null()
        ),
        (Some(true), true, true)
    );
    let (code, out) = verify(&signed_sad, "https://elsewhere.example");
    assert_eq!(
        (code, out["reason"].as_str(), out["code"].as_u64()),
        (1, Some("host_not_bound"), Some(8))
    );
    let tampered = env.dir.path().join("sad.tampered.json");
    std::fs::write(
        &tampered,
        std::fs::read_to_string(&signed_sad)
            .unwrap()
            .replace("internal", "secret"),
    )
    .unwrap();
    let (code, out) = verify(&tampered, "https://tools.acme.example");
    assert_eq!(
        (code, out["reason"].as_str()),
        (1, Some("bad_signature")),
        "{out}"
    );
    let garbage = env.dir.path().join("garbage.json");
    std::fs::write(&garbage, "not json at all").unwrap();
    let (code, out) = verify(&garbage, "https://tools.acme.example");
    assert_eq!(
        (code, out["reason"].as_str()),
        (1, Some("not_mcp_server")),
        "a malformed document is a refusal"
    );
    let (code, _, _) = env.run(&[
        "attest",
        "verify",
        "--sad",
        "missing.json",
        "--trust-root",
        v1s,
        "--origin",
        "https://x",
        "--required",
        "internal",
    ]);
    assert_eq!(code, 2, "a missing file is a usage error");

    // Rotation: v2 drops admin-a for a new key; signed by b and c (a threshold of both roots).
    keygen(&env, &keys, "admin-d");
    let mut v2: Value = serde_json::from_str(&std::fs::read_to_string(&v1).unwrap()).unwrap();
    v2["signed"]["version"] = json!(2);
    let d: Value =
        serde_json::from_str(&std::fs::read_to_string(keys.join("admin-d.pub.json")).unwrap())
            .unwrap();
    v2["signed"]["root"]["keys"][0] = d;
    v2["signatures"] = json!([]);
    let v2p = env.dir.path().join("acme-v2.json");
    std::fs::write(&v2p, serde_json::to_string_pretty(&v2).unwrap()).unwrap();
    let v2s = v2p.to_str().unwrap();
    env.json(&["bundle", "sign", "--key", &k("admin-c.key"), v2s]);
    env.json(&["bundle", "sign", "--key", &k("admin-d.key"), v2s]);
    // c and d meet the new threshold, but of the old root only c signed.
    let (code, out) = env.json(&["bundle", "verify", v2s, "--previous", v1s]);
    assert_eq!(
        (code, out["error"]["code"].as_str()),
        (1, Some("bundle_rotation_not_authorized")),
        "{out}"
    );
    env.json(&["bundle", "sign", "--key", &k("admin-b.key"), v2s]);
    let (code, out) = env.json(&["bundle", "verify", v2s, "--previous", v1s]);
    assert_eq!(code, 0, "{out}");
    // And the old one is now a rollback.
    let (code, out) = env.json(&["bundle", "verify", v1s, "--previous", v2s]);
    assert_eq!(
        (code, out["error"]["code"].as_str()),
        (1, Some("bundle_rollback")),
        "{out}"
    );
    let (code, out) = env.json(&["bundle", "inspect", v2s]);
    assert_eq!(
        (code, out["bundle"].as_str(), out["valid"].as_bool()),
        (0, Some("acme@2"), Some(true))
    );
}

#[test]
fn attest_verify_takes_a_plain_trust_root_and_the_vectors() {
    let env = Env::new();
    let dir = repo().join("tests/vectors/atsa");
    for (vector, admitted, reason) in [
        ("admits-a-valid-document.json", true, None),
        ("rejects-tampered-body.json", false, Some("bad_signature")),
        ("rejects-expired-signer.json", false, Some("signer_expired")),
    ] {
        let data: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(vector)).unwrap()).unwrap();
        let sad = env.dir.path().join(vector);
        std::fs::write(&sad, serde_json::to_vec(&data["sad"]).unwrap()).unwrap();
        let (code, out) = env.json(&[
            "attest",
            "verify",
            "--sad",
            sad.to_str().unwrap(),
            "--trust-root",
            dir.join("_trust-root.json").to_str().unwrap(),
            "--origin",
            data["context"]["origin"].as_str().unwrap(),
            "--required",
            data["context"]["requiredClearance"].as_str().unwrap(),
            "--now",
            data["context"]["now"].as_str().unwrap(),
        ]);
        assert_eq!(out["admitted"].as_bool(), Some(admitted), "{vector}: {out}");
        assert_eq!(out["reason"].as_str(), reason, "{vector}");
        assert_eq!(code, if admitted { 0 } else { 1 });
    }
}
