//! Trust-root bundles: threshold signatures over JCS, expiry, rollback, rotation, structure,
//! and how several installed bundles combine.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::SigningKey;
use gatehouse_attest::bundle::{
    AuditDurability, Bundle, BundleError, Posture, TrustStore, VerifiedBundle, sign_bundle,
};
use gatehouse_attest::{VerifyContext, verify};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::datetime;

const NOW: OffsetDateTime = datetime!(2026-11-21 12:00 UTC);

fn admin(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[0xA0 + n; 32])
}

fn public(key: &SigningKey) -> String {
    STANDARD.encode(key.verifying_key().to_bytes())
}

fn vectors_root() -> Value {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/vectors/atsa/_trust-root.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// A `signed` part: root keys admin(n) for each n in `root`, the vectors' scheme and keys.
fn signed(id: &str, version: u64, root: &[u8], threshold: u64) -> Value {
    let tr = vectors_root();
    json!({
        "type": "gatehouse-trust-root", "specVersion": 1, "bundleId": id, "version": version,
        "expires": "2027-06-30T00:00:00Z",
        "root": {"threshold": threshold, "keys": root.iter().map(|n| json!({"id": format!("admin-{n}"), "publicKey": public(&admin(*n))})).collect::<Vec<_>>()},
        "posture": "deny-by-default", "locked": true, "requiredClearance": "internal",
        "scheme": tr["scheme"], "keys": tr["keys"],
        "servers": [{
            "id": "urn:omcp:server:weather", "origins": ["https://tools.example.com"],
            "requiredClearance": "internal",
            "allowedTools": ["get_forecast", "list_stations"],
            "toolPins": {"get_forecast": format!("sha256:{}", "ab".repeat(32))},
            "urlElicitationDomains": ["auth.example.com"]
        }]
    })
}

fn bundle(signed: &Value, signers: &[u8]) -> Vec<u8> {
    let signatures: Vec<Value> = signers
        .iter()
        .map(|n| sign_bundle(signed, &format!("admin-{n}"), &admin(*n)).unwrap())
        .collect();
    serde_json::to_vec(&json!({"signed": signed, "signatures": signatures})).unwrap()
}

fn check(
    bytes: &[u8],
    installed: Option<&VerifiedBundle>,
    highest: Option<u64>,
) -> Result<VerifiedBundle, BundleError> {
    Bundle::parse(bytes)?.verify(NOW, installed, highest)
}

#[test]
fn a_threshold_of_distinct_root_keys_makes_a_bundle_valid() {
    let s = signed("acme", 1, &[1, 2, 3], 2);
    let verified = check(&bundle(&s, &[1, 3]), None, None).unwrap();
    assert_eq!(verified.label(), "acme@1");
    assert_eq!(verified.signers(), ["admin-1", "admin-3"]);
    assert_eq!(verified.content().posture, Posture::DenyByDefault);
    assert!(verified.content().locked);
}

#[test]
fn a_key_counts_once_and_strangers_count_not_at_all() {
    let s = signed("acme", 1, &[1, 2, 3], 2);
    let once = check(&bundle(&s, &[1, 1, 1]), None, None).unwrap_err();
    assert!(
        matches!(
            once,
            BundleError::ThresholdNotMet {
                valid: 1,
                threshold: 2,
                ..
            }
        ),
        "{once}"
    );
    // admin-9 signs under a root key id it does not hold; a valid signature by the wrong key.
    let mut forged: Value = serde_json::from_slice(&bundle(&s, &[1])).unwrap();
    forged["signatures"]
        .as_array_mut()
        .unwrap()
        .push(sign_bundle(&s, "admin-2", &admin(9)).unwrap());
    forged["signatures"]
        .as_array_mut()
        .unwrap()
        .push(sign_bundle(&s, "admin-9", &admin(9)).unwrap());
    let error = check(&serde_json::to_vec(&forged).unwrap(), None, None).unwrap_err();
    assert_eq!(error.code(), "bundle_threshold_not_met");
    assert!(error.to_string().contains("admin-9"), "{error}");
}

#[test]
fn tampering_after_signing_breaks_the_threshold() {
    let s = signed("acme", 1, &[1, 2, 3], 2);
    let mut tampered: Value = serde_json::from_slice(&bundle(&s, &[1, 2])).unwrap();
    tampered["signed"]["servers"][0]["allowedTools"]
        .as_array_mut()
        .unwrap()
        .push(json!("delete_everything"));
    assert_eq!(
        check(&serde_json::to_vec(&tampered).unwrap(), None, None)
            .unwrap_err()
            .code(),
        "bundle_threshold_not_met"
    );
    let mut widened: Value = serde_json::from_slice(&bundle(&s, &[1, 2])).unwrap();
    widened["signed"]["posture"] = json!("warn");
    assert_eq!(
        check(&serde_json::to_vec(&widened).unwrap(), None, None)
            .unwrap_err()
            .code(),
        "bundle_threshold_not_met"
    );
}

#[test]
fn signatures_cover_jcs_so_key_order_does_not_matter() {
    let s = signed("acme", 1, &[1, 2], 2);
    let signed_bytes = bundle(&s, &[1, 2]);
    // Re-emit `signed` with its keys in reverse order: the same JCS, still valid.
    let mut value: Value = serde_json::from_slice(&signed_bytes).unwrap();
    let reversed: serde_json::Map<String, Value> = value["signed"]
        .as_object()
        .unwrap()
        .iter()
        .rev()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    value["signed"] = Value::Object(reversed);
    check(&serde_json::to_vec_pretty(&value).unwrap(), None, None).unwrap();
}

#[test]
fn expired_bundles_are_refused_naming_the_expiry() {
    let mut s = signed("acme", 1, &[1], 1);
    s["expires"] = json!("2026-11-21T12:00:00Z");
    let error = check(&bundle(&s, &[1]), None, None).unwrap_err();
    assert_eq!(error.code(), "bundle_expired");
    assert!(
        error.to_string().contains("2026-11-21T12:00:00Z"),
        "{error}"
    );
    s["expires"] = json!("2026-11-21T12:00:01Z");
    check(&bundle(&s, &[1]), None, None).unwrap();
}

#[test]
fn rollback_is_refused() {
    let v6 = bundle(&signed("acme", 6, &[1], 1), &[1]);
    let error = check(&v6, None, Some(7)).unwrap_err();
    assert!(
        matches!(
            error,
            BundleError::Rollback {
                version: 6,
                highest: 7,
                ..
            }
        ),
        "{error}"
    );
    let v7 = check(&bundle(&signed("acme", 7, &[1], 1), &[1]), None, Some(7)).unwrap();
    assert_eq!(
        check(&v6, Some(&v7), None).unwrap_err().code(),
        "bundle_rollback"
    );
    // The same version again is fine only if it is the same bundle.
    check(
        &bundle(&signed("acme", 7, &[1], 1), &[1]),
        Some(&v7),
        Some(7),
    )
    .unwrap();
    let mut changed = signed("acme", 7, &[1], 1);
    changed["servers"][0]["allowedTools"] = json!(["get_forecast"]);
    changed["servers"][0]["toolPins"] = json!({});
    assert_eq!(
        check(&bundle(&changed, &[1]), Some(&v7), Some(7))
            .unwrap_err()
            .code(),
        "bundle_version_reused"
    );
}

#[test]
fn rotation_needs_thresholds_of_both_the_old_and_the_new_root() {
    let v1 = check(
        &bundle(&signed("acme", 1, &[1, 2, 3], 2), &[1, 2]),
        None,
        None,
    )
    .unwrap();
    // New root {2, 3, 4}: signed by 2 and 3, who are in both roots: allowed.
    let v2 = signed("acme", 2, &[2, 3, 4], 2);
    let rotated = check(&bundle(&v2, &[2, 3]), Some(&v1), Some(1)).unwrap();
    assert_eq!(rotated.label(), "acme@2");
    // Signed by 3 and 4: the new root agrees, the old root has only one signature.
    let error = check(&bundle(&v2, &[3, 4]), Some(&v1), Some(1)).unwrap_err();
    assert!(
        matches!(
            error,
            BundleError::RotationNotAuthorized {
                valid: 1,
                threshold: 2,
                installed: 1,
                ..
            }
        ),
        "{error}"
    );
    // An attacker who stole old keys 1 and 2 cannot install a root of their own without the
    // new root's threshold... and one made entirely of their keys fails the old threshold.
    let hostile = signed("acme", 2, &[8, 9], 2);
    assert_eq!(
        check(&bundle(&hostile, &[8, 9]), Some(&v1), Some(1))
            .unwrap_err()
            .code(),
        "bundle_rotation_not_authorized"
    );
    // Recovery from a lost key: old root 1,2,3 (2 of 3), key 1 lost: 2 and 3 sign v2 with a new key 5.
    let recovered = signed("acme", 2, &[2, 3, 5], 2);
    check(&bundle(&recovered, &[2, 3]), Some(&v1), Some(1)).unwrap();
}

#[test]
fn structural_mistakes_are_refused_with_the_path() {
    let base = signed("acme", 1, &[1, 2], 1);
    let weak = STANDARD.encode({
        let mut identity = [0u8; 32];
        identity[0] = 1;
        identity
    });
    let cases: Vec<(&str, Value, &str)> = vec![
        (".type", json!("tuf-root"), "signed.type"),
        (
            ".specVersion",
            json!(8),
            "specVersion must be 1, 2, 3, 4, 5, 6 or 7",
        ),
        (".bundleId", json!("acme prod"), "bundleId"),
        (".version", json!(0), "version"),
        (".expires", json!("next year"), "RFC 3339"),
        (".root/threshold", json!(0), "threshold"),
        (".root/threshold", json!(3), "threshold"),
        (".root/keys/1/id", json!("admin-1"), "appears twice"),
        (
            ".root/keys/1/publicKey",
            json!(public(&admin(1))),
            "counts once",
        ),
        (".root/keys/0/publicKey", json!(weak), "weak"),
        (".posture", json!("allow-all"), "posture"),
        (".locked", json!("yes"), "locked"),
        (".requiredClearance", json!("top-secret"), "not a level"),
        (".keys", json!([]), "no signer keys"),
        (
            ".servers/0/toolPins",
            json!({"other_tool": format!("sha256:{}", "ab".repeat(32))}),
            "not in allowedTools",
        ),
        (
            ".servers/0/toolPins",
            json!({"get_forecast": "md5:abc"}),
            "sha256:",
        ),
        (
            ".servers/0/origins",
            json!(["ftp://tools.example.com"]),
            "http(s) origin",
        ),
        (".servers/0/allowedTools", json!(["a", "a"]), "twice"),
        (
            ".servers/0/requiredClearance",
            json!("ultra"),
            "not a level",
        ),
    ];
    for (pointer, value, needle) in cases {
        // Paths into `signed`: JSON pointers written with dots for slashes.
        let mut s = base.clone();
        *s.pointer_mut(&pointer.replace('.', "/"))
            .unwrap_or_else(|| panic!("{pointer}")) = value;
        let error = check(&bundle(&s, &[1]), None, None).unwrap_err();
        assert_eq!(error.code(), "bundle_invalid", "{pointer}");
        assert!(error.to_string().contains(needle), "{pointer}: {error}");
    }
    // specVersion 2: prompt and resource allow-lists, each checked by path.
    let mut v1_with_prompts = base.clone();
    v1_with_prompts["servers"][0]["allowedPrompts"] = json!(["summarize"]);
    let error = check(&bundle(&v1_with_prompts, &[1]), None, None).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("allowedPrompts needs \"specVersion\": 2"),
        "{error}"
    );
    let mut v2 = base.clone();
    v2["specVersion"] = json!(2);
    v2["servers"][0]["allowedPrompts"] = json!(["summarize", "review_code"]);
    v2["servers"][0]["promptPins"] = json!({"summarize": format!("sha256:{}", "cd".repeat(32))});
    v2["servers"][0]["allowedResources"] = json!(["demo://docs/welcome.txt"]);
    v2["servers"][0]["allowedResourcePrefixes"] = json!(["demo://notes/"]);
    let verified = check(&bundle(&v2, &[1]), None, None).unwrap();
    let server = &verified.content().servers[0];
    assert_eq!(verified.content().spec_version, 2);
    assert_eq!(server.allowed_prompts, ["summarize", "review_code"]);
    assert_eq!(server.prompt_pins.len(), 1);
    assert_eq!(server.allowed_resources, ["demo://docs/welcome.txt"]);
    assert_eq!(server.allowed_resource_prefixes, ["demo://notes/"]);
    for (pointer, value, needle) in [
        (".servers/0/allowedPrompts", json!(["a", "a"]), "twice"),
        (
            ".servers/0/promptPins",
            json!({"other": format!("sha256:{}", "ab".repeat(32))}),
            "not in allowedPrompts",
        ),
        (
            ".servers/0/promptPins",
            json!({"summarize": "sha256:x"}),
            "sha256:",
        ),
        (
            ".servers/0/allowedResources",
            json!(["no-scheme"]),
            "absolute URI",
        ),
        (
            ".servers/0/allowedResourcePrefixes",
            json!(["demo://notes"]),
            "does not end in",
        ),
        (
            ".servers/0/allowedResourcePrefixes",
            json!(["demo://a/../b/"]),
            "path segment",
        ),
    ] {
        let mut s = v2.clone();
        *s.pointer_mut(&pointer.replace('.', "/"))
            .unwrap_or_else(|| panic!("{pointer}")) = value;
        let error = check(&bundle(&s, &[1]), None, None).unwrap_err();
        assert_eq!(error.code(), "bundle_invalid", "{pointer}");
        assert!(error.to_string().contains(needle), "{pointer}: {error}");
    }
    let mut stdio = base.clone();
    stdio["servers"][0]["stdio"] =
        json!({"command": "/opt/w", "sha256": "AB".repeat(32), "attestation": {}});
    assert!(
        check(&bundle(&stdio, &[1]), None, None)
            .unwrap_err()
            .to_string()
            .contains("lower-case hex")
    );
    assert!(
        check(br#"{"signatures": []}"#, None, None)
            .unwrap_err()
            .to_string()
            .contains("signed")
    );
    assert!(
        check(br#"{"signed": {}, "signed": {}}"#, None, None)
            .unwrap_err()
            .to_string()
            .contains("duplicate")
    );
}

#[test]
fn the_atsa_vectors_verify_against_a_bundle_trust_root() {
    let verified = check(&bundle(&signed("acme", 1, &[1], 1), &[1]), None, None).unwrap();
    let vector: Value = serde_json::from_slice(
        &std::fs::read(
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/vectors/atsa/admits-a-valid-document.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let ctx = VerifyContext {
        origin: Some("https://tools.example.com"),
        required_clearance: &verified.content().required_clearance,
        now: datetime!(2026-06-01 12:00 UTC),
    };
    let admitted = verify(
        Some(&serde_json::to_vec(&vector["sad"]).unwrap()),
        &verified.content().trust_root,
        &ctx,
    )
    .unwrap();
    assert_eq!(admitted.id(), "urn:omcp:server:weather");
}

#[test]
fn installed_bundles_combine_by_written_rules() {
    let a = || check(&bundle(&signed("acme", 1, &[1], 1), &[1]), None, None).unwrap();
    let mut other = signed("beta", 1, &[2], 1);
    other["servers"] = json!([{"id": "urn:beta:search", "origins": ["https://search.beta.example"], "allowedTools": ["search"]}]);
    other["posture"] = json!("warn");
    other["locked"] = json!(false);
    let b = || check(&bundle(&other, &[2]), None, None).unwrap();
    let store = TrustStore::combine(vec![b(), a()]).unwrap();
    assert_eq!(store.bundles()[0].label(), "acme@1", "sorted by bundle id");
    assert_eq!(
        store.posture(),
        Some(Posture::DenyByDefault),
        "the strictest posture wins"
    );
    assert!(store.locked());
    assert_eq!(store.server("urn:beta:search").unwrap().0.label(), "beta@1");
    assert!(store.server("urn:nobody").is_none());

    // The same signer key id with a different key: an error, not a coin toss.
    let mut clash = other.clone();
    clash["keys"][0]["publicKey"] = json!(public(&admin(7)));
    let error = TrustStore::combine(vec![a(), check(&bundle(&clash, &[2]), None, None).unwrap()])
        .unwrap_err();
    assert!(error.to_string().contains("key-prod-2026"), "{error}");
    // One server governed by two bundles: refused.
    let mut twice = other.clone();
    twice["servers"][0]["id"] = json!("urn:omcp:server:weather");
    assert_eq!(
        TrustStore::combine(vec![a(), check(&bundle(&twice, &[2]), None, None).unwrap()])
            .unwrap_err()
            .code(),
        "bundle_conflict"
    );
    // Two bundles with one id: refused.
    assert_eq!(
        TrustStore::combine(vec![a(), a()]).unwrap_err().code(),
        "bundle_conflict"
    );
    assert_eq!(TrustStore::combine(Vec::new()).unwrap().posture(), None);
}

#[test]
fn authorization_servers_are_issuer_urls_or_the_bundle_is_refused() {
    let mut s = signed("acme", 1, &[1, 2], 2);
    s["servers"][0]["authorizationServers"] =
        json!(["https://login.example.com", "http://127.0.0.1:9000"]);
    let verified = check(&bundle(&s, &[1, 2]), None, None).unwrap();
    assert_eq!(
        verified.content().servers[0].authorization_servers,
        ["https://login.example.com", "http://127.0.0.1:9000"]
    );
    // Absent: not pinned.
    let plain = check(&bundle(&signed("acme", 1, &[1, 2], 2), &[1, 2]), None, None).unwrap();
    assert!(plain.content().servers[0].authorization_servers.is_empty());

    for bad in [
        json!(["http://login.example.com"]),
        json!(["https://login.example.com?tenant=x"]),
        json!(["https://login.example.com#x"]),
        json!(["login.example.com"]),
        json!(["javascript:alert(1)"]),
        json!("https://login.example.com"),
        json!([42]),
    ] {
        let mut s = signed("acme", 1, &[1, 2], 2);
        s["servers"][0]["authorizationServers"] = bad.clone();
        match check(&bundle(&s, &[1, 2]), None, None) {
            Err(BundleError::Invalid(detail)) => {
                assert!(detail.contains("authorizationServers"), "{bad}: {detail}")
            }
            other => panic!("{bad}: expected a refusal, got {other:?}"),
        }
    }
}

#[test]
fn the_audit_retention_needs_specversion_5_and_the_longest_wins() {
    let with = |id: &str, key: u8, version: u64, audit: Value| {
        let mut s = signed(id, 1, &[key], 1);
        s["specVersion"] = json!(version);
        s["servers"] = json!([]);
        s["audit"] = audit;
        check(&bundle(&s, &[key]), None, None)
    };
    // Below version 5 it is refused by name, with what to change: a host that knew only
    // version 4 would not keep what the admin asked to keep.
    for version in [3, 4] {
        let error = with(
            "acme",
            1,
            version,
            json!({"durability": "sync", "retainDays": 400}),
        )
        .unwrap_err();
        assert!(
            error.to_string().contains(
                "signed.audit.retainDays needs \"specVersion\": 5; raise the bundle's specVersion"
            ),
            "{version}: {error}"
        );
    }
    // Version 5: alone, or beside a durability; both ends of the range.
    let alone = with("acme", 1, 5, json!({"retainDays": 365})).unwrap();
    assert_eq!(alone.content().audit, None);
    assert_eq!(alone.content().audit_retain_days, Some(365));
    let both = with(
        "beta",
        2,
        5,
        json!({"durability": "sync", "retainDays": 36500}),
    )
    .unwrap();
    assert_eq!(both.content().audit, Some(AuditDurability::Sync));
    assert_eq!(both.content().audit_retain_days, Some(36500));
    let short = with("gamma", 1, 5, json!({"retainDays": 1})).unwrap();
    assert_eq!(short.content().audit_retain_days, Some(1));
    // A version 5 bundle without it keeps the earlier meaning.
    let durability_only = with("acme", 1, 5, json!({"durability": "sync"})).unwrap();
    assert_eq!(durability_only.content().audit_retain_days, None);
    for (bad, says) in [
        (
            json!({"retainDays": 0}),
            "retainDays must be an integer from 1 to 36500",
        ),
        (
            json!({"retainDays": 36501}),
            "retainDays must be an integer from 1 to 36500",
        ),
        (json!({"retainDays": -5}), "retainDays must be an integer"),
        (json!({"retainDays": 30.5}), "retainDays must be an integer"),
        (
            json!({"retainDays": "365"}),
            "retainDays must be an integer",
        ),
        (json!({"retainDays": null}), "retainDays must be an integer"),
        (
            json!({"retainDays": 9_999_999_999u64}),
            "retainDays must be an integer",
        ),
        (
            json!({"retaindays": 30}),
            "signed.audit.retaindays is not a setting (durability, flushMs, flushRecords, retainDays)",
        ),
        (
            json!({"retainDays": 30, "flushMs": 20}),
            "apply only to \"durability\": \"batched\"",
        ),
        (json!({}), "signed.audit.durability must be"),
    ] {
        let error = with("acme", 1, 5, bad.clone()).unwrap_err();
        assert!(error.to_string().contains(says), "{bad}: {error}");
    }
    // Several bundles: the longest retention, named by the bundles that ask for it; a bundle
    // with none does not count.
    let store = TrustStore::combine(vec![alone, both]).unwrap();
    assert_eq!(
        store.audit_retention(),
        Some((36500, vec!["beta@1".to_string()]))
    );
    let again = |id: &str, key: u8| with(id, key, 5, json!({"retainDays": 365})).unwrap();
    let store = TrustStore::combine(vec![again("acme", 1), again("beta", 2), short]).unwrap();
    assert_eq!(
        store.audit_retention(),
        Some((365, vec!["acme@1".to_string(), "beta@1".to_string()]))
    );
    let store = TrustStore::combine(vec![durability_only]).unwrap();
    assert_eq!(store.audit_retention(), None);
}

#[test]
fn the_audit_durability_needs_specversion_3_and_the_strictest_bundle_wins() {
    let with = |version: u64, audit: Value| {
        let mut s = signed("acme", 1, &[1], 1);
        s["specVersion"] = json!(version);
        s["audit"] = audit;
        check(&bundle(&s, &[1]), None, None)
    };
    // A version 2 bundle may not say it: an older host would load it and ignore it.
    let error = with(2, json!({"durability": "sync"})).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("signed.audit needs \"specVersion\": 3"),
        "{error}"
    );
    let sync = with(3, json!({"durability": "sync"})).unwrap();
    assert_eq!(sync.content().audit, Some(AuditDurability::Sync));
    let batched = with(3, json!({"durability": "batched", "flushMs": 20})).unwrap();
    assert_eq!(
        batched.content().audit,
        Some(AuditDurability::Batched {
            flush_ms: Some(20),
            flush_records: None
        })
    );
    for (bad, says) in [
        (
            json!({"durability": "eventually"}),
            "must be \"sync\" or \"batched\"",
        ),
        (
            json!({"durability": "batched", "flushMs": 0}),
            "flushMs must be an integer from 1 to 1000",
        ),
        (
            json!({"durability": "batched", "flushMs": 5000}),
            "flushMs must be an integer from 1 to 1000",
        ),
        (
            json!({"durability": "batched", "flushRecords": 10001}),
            "flushRecords must be an integer from 1 to 10000",
        ),
        (
            json!({"durability": "sync", "flushMs": 10}),
            "apply only to",
        ),
        (
            json!({"durability": "sync", "fsync": true}),
            "signed.audit.fsync is not a setting",
        ),
        (json!("sync"), "signed.audit must be an object"),
    ] {
        let error = with(3, bad.clone()).unwrap_err();
        assert!(error.to_string().contains(says), "{bad}: {error}");
    }
    // Several bundles: sync over batched, the narrower window of two batched ones.
    let mut other = signed("beta", 1, &[2], 1);
    other["specVersion"] = json!(3);
    other["servers"] = json!([]);
    other["audit"] = json!({"durability": "batched", "flushMs": 200, "flushRecords": 16});
    let beta = || check(&bundle(&other, &[2]), None, None).unwrap();
    let store = TrustStore::combine(vec![batched, beta()]).unwrap();
    assert_eq!(
        store.audit_durability(),
        Some((
            AuditDurability::Batched {
                flush_ms: Some(20),
                flush_records: Some(16)
            },
            vec!["acme@1".to_string(), "beta@1".to_string()]
        ))
    );
    let store = TrustStore::combine(vec![sync, beta()]).unwrap();
    assert_eq!(store.audit_durability().unwrap().0, AuditDurability::Sync);
    let plain = check(&bundle(&signed("acme", 1, &[1], 1), &[1]), None, None).unwrap();
    assert_eq!(
        TrustStore::combine(vec![plain]).unwrap().audit_durability(),
        None
    );
}

/// A specVersion 4 server entry bound by an npm package (the shape of server-filesystem).
fn package_entry() -> Value {
    json!({
        "ecosystem": "npm",
        "name": "@modelcontextprotocol/server-filesystem",
        "version": "2026.8.31",
        "artifact": format!("sha512-{}", STANDARD.encode([1u8; 64])),
        "closure": [{"name": "zod", "version": "3.25.76",
                     "artifact": format!("sha512-{}", STANDARD.encode([2u8; 64]))}],
        "entry": "dist/index.js",
        "interpreter": {"kind": "node", "sha256": ["cd".repeat(32)]},
        "userArgs": [{"rule": "existing_directory_under_home", "access": "read_only", "min": 1, "max": 8}],
        "attestation": {"body": {"id": "urn:omcp:server:filesystem"}}
    })
}

#[test]
fn a_package_binding_needs_specversion_4_and_replaces_stdio() {
    let mut v3 = signed("acme", 1, &[1], 1);
    v3["specVersion"] = json!(3);
    v3["servers"] = json!([{"id": "urn:omcp:server:filesystem", "package": package_entry(), "allowedTools": ["read_file"]}]);
    let error = check(&bundle(&v3, &[1]), None, None).unwrap_err();
    assert_eq!(error.code(), "bundle_invalid");
    assert!(
        error
            .to_string()
            .contains("signed.servers[0].package needs \"specVersion\": 4"),
        "{error}"
    );

    let mut v4 = v3.clone();
    v4["specVersion"] = json!(4);
    let verified = check(&bundle(&v4, &[1]), None, None).unwrap();
    assert_eq!(verified.content().spec_version, 4);
    let server = &verified.content().servers[0];
    assert!(server.stdio.is_none() && server.origins.is_empty());
    let package = server.package.as_ref().unwrap();
    assert_eq!(package.package.version, "2026.8.31");
    assert_eq!(package.closure.len(), 1);

    // Both bindings on one entry: refused, naming the entry.
    let mut both = v4.clone();
    both["servers"][0]["stdio"] =
        json!({"command": "node", "sha256": "ab".repeat(32), "attestation": {}});
    let error = check(&bundle(&both, &[1]), None, None).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("signed.servers[0] (urn:omcp:server:filesystem) has both stdio and package"),
        "{error}"
    );
    // Nothing of the package is loosened by the whole-bundle parse: a refusal inside it names
    // the full path.
    for (pointer, value, needle) in [
        (
            "/servers/0/package/version",
            json!("latest"),
            "signed.servers[0].package.version \"latest\" is a tag",
        ),
        (
            "/servers/0/package/artifact",
            json!(format!("sha1-{}", STANDARD.encode([1u8; 20]))),
            "signed.servers[0].package.artifact is a sha1 hash",
        ),
        (
            "/servers/0/package/entry",
            json!("../x.js"),
            "signed.servers[0].package.entry",
        ),
        (
            "/servers/0/package/interpreter/sha256",
            json!([]),
            "signed.servers[0].package.interpreter.sha256 is empty",
        ),
    ] {
        let mut s = v4.clone();
        *s.pointer_mut(pointer).unwrap() = value;
        let error = check(&bundle(&s, &[1]), None, None).unwrap_err();
        assert!(error.to_string().contains(needle), "{pointer}: {error}");
    }

    // One package version bound under two ids by two bundles: a conflict, not a coin toss.
    let mut other = v4.clone();
    other["bundleId"] = json!("beta");
    other["servers"][0]["id"] = json!("urn:beta:files");
    let a = check(&bundle(&v4, &[1]), None, None).unwrap();
    let b = check(&bundle(&other, &[1]), None, None).unwrap();
    let error = TrustStore::combine(vec![a, b]).unwrap_err();
    assert_eq!(error.code(), "bundle_conflict");
    assert!(
        error
            .to_string()
            .contains("npm package @modelcontextprotocol/server-filesystem@2026.8.31"),
        "{error}"
    );
    // Another version of it is another binding.
    other["servers"][0]["package"]["version"] = json!("2026.9.1");
    let a = check(&bundle(&v4, &[1]), None, None).unwrap();
    let b = check(&bundle(&other, &[1]), None, None).unwrap();
    TrustStore::combine(vec![a, b]).unwrap();
}
