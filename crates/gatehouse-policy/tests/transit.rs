//! Secrets in transit: answers that look like credentials are refused; ordinary answers pass.
//! Table-driven; failures are reported by case name. The tokens below are made-up examples in
//! the real formats.

mod common;

use common::report;
use gatehouse_policy::{FormSchema, Policy, check_answers};
use serde_json::{Value, json};

fn schema() -> FormSchema {
    FormSchema::parse(&json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "notes": {"type": "string", "title": "Notes"},
            "email": {"type": "string", "format": "email"},
            "when": {"type": "string", "format": "date"},
            "licenseKey": {"type": "string", "title": "License key"},
            "code": {"type": "string", "description": "The code from the invitation"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
            "count": {"type": "integer"}
        }
    }))
    .unwrap()
}

const JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";

#[test]
fn credentials_are_refused() {
    let policy = Policy::default_policy();
    let schema = schema();
    let cases: Vec<(&str, &str, Value, &str)> = vec![
        (
            "github_classic",
            "notes",
            json!("ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
            "secret_token_prefix",
        ),
        (
            "github_oauth",
            "notes",
            json!("gho_16C7e42F292c6912E7710c838347Ae178B4a"),
            "secret_token_prefix",
        ),
        (
            "github_fine_grained",
            "notes",
            json!("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGH"),
            "secret_token_prefix",
        ),
        (
            "gitlab",
            "notes",
            json!("glpat-xxXXxx1234567890ABCD"),
            "secret_token_prefix",
        ),
        (
            "slack_bot",
            "notes",
            json!("xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
            "secret_token_prefix",
        ),
        (
            "slack_app",
            "notes",
            json!("xapp-1-A0123456789-1234567890123-abcdef0123456789"),
            "secret_token_prefix",
        ),
        (
            "openai",
            "notes",
            json!("sk-proj-AbCdEf0123456789GhIjKlMnOp"),
            "secret_token_prefix",
        ),
        (
            "stripe_live",
            "notes",
            json!("sk_live_51H8AbCdEfGhIjKlMnOpQrStUv"),
            "secret_token_prefix",
        ),
        (
            "stripe_restricted",
            "notes",
            json!("rk_live_51H8AbCdEfGhIjKlMnOpQrStUv"),
            "secret_token_prefix",
        ),
        (
            "aws_access_key",
            "notes",
            json!("AKIAIOSFODNN7EXAMPLE"),
            "secret_token_prefix",
        ),
        (
            "aws_session_key",
            "notes",
            json!("ASIAIOSFODNN7EXAMPLE"),
            "secret_token_prefix",
        ),
        (
            "google_api_key",
            "notes",
            json!("AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"),
            "secret_token_prefix",
        ),
        (
            "google_oauth_token",
            "notes",
            json!("ya29.a0AfH6SMBx1234567890abcdefGHIJ"),
            "secret_token_prefix",
        ),
        (
            "npm",
            "notes",
            json!("npm_AbCdEf0123456789GhIjKlMnOpQrStUvWxYz"),
            "secret_token_prefix",
        ),
        (
            "pypi",
            "notes",
            json!("pypi-AgEIcHlwaS5vcmcCJGFiY2RlZjAxMjM0NTY3ODk"),
            "secret_token_prefix",
        ),
        (
            "hugging_face",
            "notes",
            json!("hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
            "secret_token_prefix",
        ),
        (
            "shopify",
            "notes",
            json!("shpat_0123456789abcdef0123456789abcdef"),
            "secret_token_prefix",
        ),
        (
            "token_inside_a_sentence",
            "notes",
            json!("my key is ghp_16C7e42F292c6912E7710c838347Ae178B4a thanks"),
            "secret_token_prefix",
        ),
        (
            "token_in_a_multi_select",
            "tags",
            json!(["a", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"]),
            "secret_token_prefix",
        ),
        (
            "token_in_an_unknown_field",
            "extra",
            json!("ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
            "secret_token_prefix",
        ),
        (
            "pem_private_key",
            "notes",
            json!(
                "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
            ),
            "secret_pem_block",
        ),
        (
            "pem_rsa_private_key",
            "notes",
            json!(
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"
            ),
            "secret_pem_block",
        ),
        (
            "pem_openssh_private_key",
            "notes",
            json!(
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----"
            ),
            "secret_pem_block",
        ),
        (
            "pem_pgp_private_block",
            "notes",
            json!(
                "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----"
            ),
            "secret_pem_block",
        ),
        ("jwt", "notes", json!(JWT), "secret_jwt"),
        (
            "jwt_alg_none",
            "notes",
            json!("eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZGEifQ."),
            "secret_jwt",
        ),
        (
            "jwt_after_bearer",
            "notes",
            json!(format!("Bearer {JWT}")),
            "secret_jwt",
        ),
        (
            "entropy_in_a_key_field",
            "licenseKey",
            json!("Zx8Qp2Lm9Vt4Rw7Ks1Nb6Hy3"),
            "secret_high_entropy",
        ),
        (
            "entropy_in_a_code_field",
            "code",
            json!("a9F3kQ7zP1xW8mB4vN6tR2yH"),
            "secret_high_entropy",
        ),
    ];
    let mut failures = Vec::new();
    for (name, field, value, code) in &cases {
        let content = json!({ *field: value }).as_object().unwrap().clone();
        let assessment = check_answers(&policy, &schema, &content);
        let codes: Vec<&str> = assessment.reasons.iter().map(|r| r.code).collect();
        if assessment.decision.as_str() != "deny_token_or_secret_transit" || !codes.contains(code) {
            failures.push(format!(
                "  {name}: {} {codes:?} (want {code})",
                assessment.decision
            ));
        }
        for reason in &assessment.reasons {
            if let Some(text) = value.as_str()
                && reason.detail.contains(text)
            {
                failures.push(format!(
                    "  {name}: the detail repeats the secret: {}",
                    reason.detail
                ));
            }
        }
    }
    report("credential", cases.len(), &failures);
}

#[test]
fn ordinary_answers_pass() {
    let policy = Policy::default_policy();
    let schema = schema();
    let cases: Vec<(&str, Value)> = vec![
        (
            "ordinary_form",
            json!({"name": "Ada Lovelace", "email": "ada@example.com", "when": "2026-12-01", "count": 3, "tags": ["a"]}),
        ),
        (
            "long_prose_in_notes",
            json!({"notes": "Please book a table near the window; we will arrive around 7pm with two children."}),
        ),
        (
            "random_looking_word_in_an_ordinary_field",
            json!({"notes": "Zx8Qp2Lm9Vt4Rw7Ks1Nb6Hy3"}),
        ),
        ("short_code", json!({"code": "WELCOME10"})),
        (
            "sentence_in_a_code_field",
            json!({"code": "the one printed on the back of the invitation card"}),
        ),
        (
            "prefix_words_not_a_key",
            json!({"notes": "sk-learn-tutorial-for-beginners and hf_hub_download"}),
        ),
        ("prefix_too_short", json!({"notes": "ghp_abc123"})),
        (
            "public_key_pem",
            json!({"notes": "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----"}),
        ),
        (
            "certificate_pem",
            json!({"notes": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"}),
        ),
        (
            "dotted_words_not_a_jwt",
            json!({"notes": "see section.subsection.paragraph for details"}),
        ),
        (
            "version_numbers",
            json!({"notes": "upgrade from 1.2.3 to 1.10.0"}),
        ),
        (
            "uuid_in_notes",
            json!({"notes": "550e8400-e29b-41d4-a716-446655440000"}),
        ),
        (
            "url_in_notes",
            json!({"notes": "https://example.com/some/long/path/to/a/page"}),
        ),
    ];
    let mut failures = Vec::new();
    for (name, content) in &cases {
        let assessment = check_answers(&policy, &schema, content.as_object().unwrap());
        if !assessment.is_allowed() {
            let codes: Vec<&str> = assessment.reasons.iter().map(|r| r.code).collect();
            failures.push(format!("  {name}: {} {codes:?}", assessment.decision));
        }
    }
    report("ordinary-answer", cases.len(), &failures);
}

#[test]
fn the_entropy_threshold_is_the_policy_s() {
    let mut policy = Policy::default_policy();
    let schema = schema();
    let content = json!({"licenseKey": "abcabcabcabcabcabcabcabc"}); // 24 chars, 1.58 bits
    assert!(check_answers(&policy, &schema, content.as_object().unwrap()).is_allowed());
    policy.transit.entropy_bits_per_char = 1.5;
    assert!(!check_answers(&policy, &schema, content.as_object().unwrap()).is_allowed());
    policy.transit.entropy_min_length = 30;
    assert!(check_answers(&policy, &schema, content.as_object().unwrap()).is_allowed());
}

#[test]
fn entropy_is_shannon_bits_per_character() {
    use gatehouse_policy::transit::entropy;
    assert_eq!(entropy(""), 0.0);
    assert_eq!(entropy("aaaa"), 0.0);
    assert!((entropy("abab") - 1.0).abs() < 1e-9);
    assert!((entropy("abcdefgh") - 3.0).abs() < 1e-9);
}
