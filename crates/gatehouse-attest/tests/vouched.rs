//! `vouched` bundle entries (specVersion 6): an admins' attestation for a remote server that
//! publishes none, bound to exact endpoints. Each parse rule with an entry that passes and
//! entries that fail it, and the combination rule (one endpoint, one id).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::SigningKey;
use gatehouse_attest::bundle::{Bundle, BundleError, TrustStore, VerifiedBundle, sign_bundle};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::datetime;

const NOW: OffsetDateTime = datetime!(2026-11-21 12:00 UTC);
const ENDPOINT: &str = "https://mcp.example.com/mcp";

fn admin() -> SigningKey {
    SigningKey::from_bytes(&[0xA1; 32])
}

/// A bundle's `signed` part at `spec_version` with `servers`.
fn signed(bundle_id: &str, spec_version: u64, servers: Value) -> Value {
    json!({
        "type": "gatehouse-trust-root", "specVersion": spec_version, "bundleId": bundle_id,
        "version": 1, "expires": "2027-06-30T00:00:00Z",
        "root": {"threshold": 1, "keys": [{"id": "admin", "publicKey": STANDARD.encode(admin().verifying_key().to_bytes())}]},
        "posture": "deny-by-default", "locked": false, "requiredClearance": "internal",
        "scheme": {"name": "t", "levels": [{"name": "public", "rank": 0}, {"name": "internal", "rank": 1}]},
        "keys": [{"id": "signer", "publicKey": STANDARD.encode(SigningKey::from_bytes(&[0xB2; 32]).verifying_key().to_bytes()),
                  "notAfter": "2027-06-30T00:00:00Z", "approvedClearances": ["public", "internal"]}],
        "servers": servers,
    })
}

/// A vouched entry for `id` at [`ENDPOINT`], edited by `edit`.
fn entry(id: &str, edit: impl FnOnce(&mut Value)) -> Value {
    let mut entry = json!({
        "id": id, "origins": ["https://mcp.example.com"],
        "vouched": {"endpoints": [ENDPOINT], "expires": "2027-01-01T00:00:00Z",
                    "attestation": {"v": "1.0", "id": id}},
        "allowedTools": ["echo"],
    });
    edit(&mut entry);
    entry
}

fn load(signed: &Value) -> Result<VerifiedBundle, BundleError> {
    let signature = sign_bundle(signed, "admin", &admin()).unwrap();
    let bytes = serde_json::to_vec(&json!({"signed": signed, "signatures": [signature]})).unwrap();
    Bundle::parse(&bytes)?.verify(NOW, None, None)
}

/// The message of the refusal of a version 6 bundle whose one entry is `entry`.
fn refusal(entry: Value) -> String {
    match load(&signed("acme", 6, json!([entry]))) {
        Ok(_) => panic!("accepted"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn a_vouched_entry_parses_with_its_endpoints_expiry_and_attestation() {
    let bundle = load(&signed("acme", 6, json!([entry("urn:x:remote", |_| {})]))).unwrap();
    let server = &bundle.content().servers[0];
    let vouched = server.vouched.as_ref().expect("vouched");
    assert_eq!(vouched.endpoints, [ENDPOINT]);
    assert_eq!(vouched.expires, datetime!(2027-01-01 00:00 UTC));
    assert_eq!(vouched.attestation["id"], "urn:x:remote");
    assert!(server.stdio.is_none() && server.package.is_none());
    // Entries without one are unchanged.
    let plain = load(&signed(
        "acme",
        6,
        json!([{"id": "urn:x:plain", "origins": ["https://a.example"], "allowedTools": []}]),
    ))
    .unwrap();
    assert!(plain.content().servers[0].vouched.is_none());
}

#[test]
fn vouched_needs_spec_version_6_and_says_so() {
    for version in [1, 4, 5] {
        let error = load(&signed("acme", version, json!([entry("urn:x:r", |_| {})])))
            .unwrap_err()
            .to_string();
        assert!(error.contains("\"specVersion\": 6"), "{version}: {error}");
    }
}

#[test]
fn unknown_keys_in_vouched_are_refused() {
    let error = refusal(entry("urn:x:r", |e| {
        e["vouched"]["endpoint"] = json!(ENDPOINT)
    }));
    assert!(error.contains("vouched.endpoint is not a key"), "{error}");
    let error = refusal(entry("urn:x:r", |e| e["vouched"] = json!([ENDPOINT])));
    assert!(error.contains("must be an object"), "{error}");
}

#[test]
fn vouched_needs_the_entry_s_origins() {
    let error = refusal(entry("urn:x:r", |e| {
        e.as_object_mut().unwrap().remove("origins");
    }));
    assert!(error.contains("needs the entry's origins"), "{error}");
}

#[test]
fn endpoints_must_be_listed() {
    let error = refusal(entry("urn:x:r", |e| e["vouched"]["endpoints"] = json!([])));
    assert!(error.contains("at least one endpoint"), "{error}");
    let error = refusal(entry("urn:x:r", |e| {
        e["vouched"]["endpoints"] = json!([ENDPOINT, ENDPOINT]);
    }));
    assert!(error.contains("twice"), "{error}");
}

#[test]
fn endpoints_are_plain_http_urls_without_query_fragment_or_userinfo() {
    for bad in [
        "ftp://mcp.example.com/mcp",
        "https://mcp.example.com/mcp?tenant=alice",
        "https://mcp.example.com/mcp#x",
        "https://user:pw@mcp.example.com/mcp",
        "https://user@mcp.example.com/mcp",
    ] {
        let error = refusal(entry("urn:x:r", |e| {
            e["vouched"]["endpoints"] = json!([bad]);
        }));
        assert!(
            error.contains("must be an http(s) URL with no query, fragment or userinfo"),
            "{bad}: {error}"
        );
    }
    let error = refusal(entry("urn:x:r", |e| {
        e["vouched"]["endpoints"] = json!(["not a url"]);
    }));
    assert!(error.contains("is not a URL"), "{error}");
}

#[test]
fn endpoints_must_be_in_normal_form() {
    // Each of these is the same endpoint to a URL parser; the bundle holds the one spelling
    // the host compares against.
    for bad in [
        "HTTPS://MCP.example.com/mcp",
        "https://mcp.example.com:443/mcp",
        "https://mcp.example.com/a/../mcp",
    ] {
        let error = refusal(entry("urn:x:r", |e| {
            e["vouched"]["endpoints"] = json!([bad]);
        }));
        assert!(error.contains("not in normal form"), "{bad}: {error}");
        assert!(error.contains(ENDPOINT), "{bad}: {error}");
    }
}

#[test]
fn endpoints_must_be_at_one_of_the_entry_s_origins() {
    for elsewhere in [
        "https://evil.example.com/mcp",
        "http://mcp.example.com/mcp",
        "https://mcp.example.com:8443/mcp",
    ] {
        let error = refusal(entry("urn:x:r", |e| {
            e["vouched"]["endpoints"] = json!([elsewhere]);
        }));
        assert!(
            error.contains("is not at one of the entry's origins"),
            "{elsewhere}: {error}"
        );
    }
    // Another path at a listed origin is fine: the path is bound by the endpoint itself.
    load(&signed(
        "acme",
        6,
        json!([entry("urn:x:r", |e| {
            e["vouched"]["endpoints"] = json!(["https://mcp.example.com/@alice/mcp"]);
        })]),
    ))
    .unwrap();
}

#[test]
fn expires_is_an_rfc3339_time() {
    for bad in [
        json!("next year"),
        json!(1_900_000_000),
        json!("2027-01-01"),
    ] {
        let error = refusal(entry("urn:x:r", |e| e["vouched"]["expires"] = bad.clone()));
        assert!(error.contains("expires"), "{bad}: {error}");
    }
    let error = refusal(entry("urn:x:r", |e| {
        e["vouched"].as_object_mut().unwrap().remove("expires");
    }));
    assert!(error.contains("expires"), "{error}");
}

#[test]
fn the_attestation_is_an_object() {
    for bad in [json!("eyJ…"), json!([]), json!(null)] {
        let error = refusal(entry("urn:x:r", |e| {
            e["vouched"]["attestation"] = bad.clone()
        }));
        assert!(error.contains("attestation"), "{bad}: {error}");
    }
}

#[test]
fn vouched_is_never_with_a_stdio_or_package_binding() {
    let error = refusal(entry("urn:x:r", |e| {
        e["stdio"] = json!({"command": "/usr/bin/x", "args": [], "sha256": "00".repeat(32),
                            "attestation": {"v": "1.0"}});
    }));
    assert!(error.contains("vouched"), "{error}");
}

#[test]
fn one_endpoint_vouched_under_two_ids_does_not_combine() {
    let a = load(&signed("acme", 6, json!([entry("urn:x:one", |_| {})]))).unwrap();
    let b = load(&signed("beta", 6, json!([entry("urn:x:two", |_| {})]))).unwrap();
    let error = TrustStore::combine(vec![a, b]).unwrap_err();
    assert!(matches!(error, BundleError::Conflict(_)), "{error}");
    assert!(error.to_string().contains(ENDPOINT), "{error}");

    // Another path at the same origin is another endpoint: they combine.
    let a = load(&signed("acme", 6, json!([entry("urn:x:one", |_| {})]))).unwrap();
    let c = load(&signed(
        "gamma",
        6,
        json!([entry("urn:x:three", |e| {
            e["vouched"]["endpoints"] = json!(["https://mcp.example.com/@bob/mcp"]);
        })]),
    ))
    .unwrap();
    let store = TrustStore::combine(vec![a, c]).unwrap();
    assert_eq!(store.bundles().len(), 2);
}
