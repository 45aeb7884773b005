//! Confinement in bundles (specVersion 7): an entry's `confinement` and the bundle-wide
//! `confinement.mode`, each refused below version 7 and where it cannot apply, and the
//! strictest bundle mode over several installed bundles.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::SigningKey;
use gatehouse_attest::bundle::{Bundle, BundleError, TrustStore, VerifiedBundle, sign_bundle};
use gatehouse_attest::gatehouse_confine::{ConfinementMode, DEFAULT_MEMORY_MIB, Network};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::datetime;

const NOW: OffsetDateTime = datetime!(2026-11-21 12:00 UTC);
const LOCAL: &str = "urn:omcp:server:local";

fn admin(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[0xA0 + n; 32])
}

fn vectors_root() -> Value {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/vectors/atsa/_trust-root.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// A version 7 `signed` part with one stdio entry and one remote entry, neither confined.
fn signed(id: &str, key: u8) -> Value {
    let tr = vectors_root();
    json!({
        "type": "gatehouse-trust-root", "specVersion": 7, "bundleId": id, "version": 1,
        "expires": "2027-06-30T00:00:00Z",
        "root": {"threshold": 1, "keys": [{"id": format!("admin-{key}"),
                 "publicKey": STANDARD.encode(admin(key).verifying_key().to_bytes())}]},
        "posture": "deny-by-default", "locked": true, "requiredClearance": "internal",
        "scheme": tr["scheme"], "keys": tr["keys"],
        "servers": [
            {
                "id": format!("{LOCAL}:{id}"),
                "stdio": {"command": "/usr/local/bin/local-mcp", "args": [id],
                          "sha256": "ab".repeat(32), "attestation": {"body": {"id": LOCAL}}},
                "allowedTools": ["echo"]
            },
            {"id": format!("urn:omcp:server:weather:{id}"), "origins": ["https://tools.example.com"],
             "allowedTools": ["get_forecast"]}
        ]
    })
}

fn check(signed: &Value, key: u8) -> Result<VerifiedBundle, BundleError> {
    let signature = sign_bundle(signed, &format!("admin-{key}"), &admin(key)).unwrap();
    let bytes = serde_json::to_vec(&json!({"signed": signed, "signatures": [signature]})).unwrap();
    Bundle::parse(&bytes)?.verify(NOW, None, None)
}

fn refused(signed: &Value) -> String {
    let error = check(signed, 1).expect_err("refused");
    assert_eq!(error.code(), "bundle_invalid", "{error}");
    error.to_string()
}

#[test]
fn an_entry_confinement_is_read_from_version_7_and_refused_below_it() {
    let mut s = signed("acme", 1);
    s["servers"][0]["confinement"] = json!({
        "mode": "required", "read": ["~/projects"], "write": ["~/out/"],
        "hosts": ["api.example.com:443"], "processes": 2, "memoryMiB": 1024
    });
    let verified = check(&s, 1).unwrap();
    let entry = &verified.content().servers[0];
    let confinement = entry.confinement.as_ref().expect("parsed");
    assert_eq!(confinement.mode, Some(ConfinementMode::Required));
    let grants = &confinement.grants;
    assert_eq!(
        grants.read.iter().map(|p| p.as_str()).collect::<Vec<_>>(),
        ["~/projects"]
    );
    // A trailing "/" is dropped, as the shared parser says.
    assert_eq!(
        grants.write.iter().map(|p| p.as_str()).collect::<Vec<_>>(),
        ["~/out"]
    );
    assert!(grants.allows("api.example.com", 443));
    assert!(!grants.allows("api.example.com", 80));
    assert_eq!((grants.processes, grants.memory_mib), (2, 1024));
    // The other entry says nothing: no confinement of its own.
    assert!(verified.content().servers[1].confinement.is_none());

    // An empty confinement is a confinement with the defaults: nothing granted.
    let mut empty = signed("acme", 1);
    empty["servers"][0]["confinement"] = json!({});
    let verified = check(&empty, 1).unwrap();
    let confinement = verified.content().servers[0].confinement.clone().unwrap();
    assert_eq!(confinement.mode, None);
    assert_eq!(confinement.grants.network, Network::None);
    assert_eq!(confinement.grants.memory_mib, DEFAULT_MEMORY_MIB);

    // Below version 7 it is refused by name, with what to change: a host that did not read
    // it must never leave the admin believing the server is confined.
    for version in [1, 4, 6] {
        let mut old = s.clone();
        old["specVersion"] = json!(version);
        let error = refused(&old);
        assert!(
            error.contains(
                "signed.servers[0].confinement needs \"specVersion\": 7; raise the bundle's specVersion (and version) to use it"
            ),
            "{version}: {error}"
        );
    }
}

#[test]
fn a_remote_entry_cannot_be_confined_and_a_package_entry_can() {
    let mut s = signed("acme", 1);
    s["servers"][1]["confinement"] = json!({"hosts": "any"});
    let error = refused(&s);
    assert!(
        error.contains(
            "signed.servers[1].confinement: urn:omcp:server:weather:acme is a remote server"
        ) && error.contains("runs elsewhere"),
        "{error}"
    );
    // A package binding runs here: accepted.
    let mut package = signed("acme", 1);
    package["servers"][1] = json!({
        "id": "urn:omcp:server:filesystem",
        "package": {
            "ecosystem": "npm", "name": "@modelcontextprotocol/server-filesystem",
            "version": "2026.8.31",
            "artifact": format!("sha512-{}", STANDARD.encode([1u8; 64])),
            "closure": [],
            "entry": "dist/index.js",
            "interpreter": {"kind": "node", "sha256": ["cd".repeat(32)]},
            "attestation": {"body": {"id": "urn:omcp:server:filesystem"}}
        },
        "allowedTools": ["read_file"],
        "confinement": {"write": ["~/notes"]}
    });
    let verified = check(&package, 1).unwrap();
    let confinement = verified.content().servers[1].confinement.as_ref().unwrap();
    assert_eq!(confinement.grants.write[0].as_str(), "~/notes");
}

#[test]
fn a_bad_grant_is_refused_naming_where_it_is() {
    for (confinement, needle) in [
        (
            json!({"read": ["projects"]}),
            "signed.servers[0].confinement",
        ),
        (
            json!({"read": ["~/../.ssh"]}),
            "signed.servers[0].confinement",
        ),
        (
            json!({"hosts": ["*.example.com:443"]}),
            "signed.servers[0].confinement",
        ),
        (
            json!({"hosts": ["api.example.com"]}),
            "signed.servers[0].confinement",
        ),
        (json!({"reads": ["~/x"]}), "reads"),
        (json!({"mode": "strict"}), "strict"),
        (json!({"memoryMiB": 0}), "memoryMiB"),
        (json!("required"), "signed.servers[0].confinement"),
    ] {
        let mut s = signed("acme", 1);
        s["servers"][0]["confinement"] = confinement.clone();
        let error = refused(&s);
        assert!(error.contains(needle), "{confinement}: {error}");
    }
}

#[test]
fn the_bundle_mode_is_mode_only_from_version_7() {
    let with = |confinement: Value| {
        let mut s = signed("acme", 1);
        s["confinement"] = confinement;
        s
    };
    for mode in ConfinementMode::ALL {
        let verified = check(&with(json!({"mode": mode.as_str()})), 1).unwrap();
        assert_eq!(verified.content().confinement_mode, Some(mode));
    }
    assert_eq!(
        check(&signed("acme", 1), 1)
            .unwrap()
            .content()
            .confinement_mode,
        None
    );
    let mut old = with(json!({"mode": "required"}));
    old["specVersion"] = json!(6);
    assert!(
        refused(&old).contains(
            "signed.confinement needs \"specVersion\": 7; raise the bundle's specVersion (and version) to use it"
        ),
        "{}",
        refused(&old)
    );
    for (bad, needle) in [
        (
            json!({"mode": "required", "read": ["~/x"]}),
            "signed.confinement.read is not a setting of the bundle's confinement",
        ),
        (json!({}), "signed.confinement.mode is missing"),
        (
            json!({"mode": "Required"}),
            "signed.confinement.mode \"Required\" is not one of off, preferred, required",
        ),
        (
            json!({"mode": null}),
            "signed.confinement.mode must be a string",
        ),
        (
            json!({"mode": 2}),
            "signed.confinement.mode must be a string",
        ),
        (json!("required"), "signed.confinement must be an object"),
    ] {
        let error = refused(&with(bad.clone()));
        assert!(error.contains(needle), "{bad}: {error}");
    }
}

#[test]
fn the_strictest_bundle_mode_wins_named_by_the_bundles_that_set_it() {
    let bundle = |id: &str, key: u8, mode: Option<&str>| {
        let mut s = signed(id, key);
        if let Some(mode) = mode {
            s["confinement"] = json!({"mode": mode});
        }
        check(&s, key).unwrap()
    };
    let store =
        TrustStore::combine(vec![bundle("acme", 1, None), bundle("beta", 2, None)]).unwrap();
    assert_eq!(store.confinement_mode(), None);
    let store = TrustStore::combine(vec![
        bundle("acme", 1, Some("off")),
        bundle("beta", 2, Some("required")),
        bundle("gamma", 3, None),
    ])
    .unwrap();
    assert_eq!(
        store.confinement_mode(),
        Some((ConfinementMode::Required, vec!["beta@1".to_string()]))
    );
    let store = TrustStore::combine(vec![
        bundle("acme", 1, Some("preferred")),
        bundle("beta", 2, Some("preferred")),
        bundle("gamma", 3, Some("off")),
    ])
    .unwrap();
    assert_eq!(
        store.confinement_mode(),
        Some((
            ConfinementMode::Preferred,
            vec!["acme@1".to_string(), "beta@1".to_string()]
        ))
    );
    // "off" alone is still a mode a bundle set: shown, and the strictest is off.
    let store = TrustStore::combine(vec![bundle("acme", 1, Some("off"))]).unwrap();
    assert_eq!(
        store.confinement_mode(),
        Some((ConfinementMode::Off, vec!["acme@1".to_string()]))
    );
}

#[test]
fn a_version_above_7_is_refused_listing_the_versions() {
    let mut s = signed("acme", 1);
    s["specVersion"] = json!(8);
    assert!(
        refused(&s).contains("signed.specVersion must be 1, 2, 3, 4, 5, 6 or 7"),
        "{}",
        refused(&s)
    );
}
