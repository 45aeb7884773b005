//! `gatehouse policy show|check-url|check-form`: JSON shapes, human output, exit codes
//! (0 allow, 1 any other decision, 2 usage) and --policy / GATEHOUSE_POLICY.

mod common;

use std::path::PathBuf;

use common::Env;
use gatehouse_policy::policy::DEFAULT_POLICY_TOML;
use serde_json::{Value, json};

const GOOGLE: &str = "https://accounts.google.com/o/oauth2/v2/auth?client_id=123456789012-abc.apps.googleusercontent.com&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcallback&response_type=code&scope=openid%20email&state=xyz&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256";

fn env() -> Env {
    Env::new()
}

/// `gatehouse --json ARGS…` without any GATEHOUSE_POLICY from the machine.
fn json(env: &Env, args: &[&str]) -> (i32, Value) {
    let mut cmd = env.cmd(&[]);
    cmd.env_remove("GATEHOUSE_POLICY").arg("--json").args(args);
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout={stdout} stderr={}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), value)
}

fn human(env: &Env, args: &[&str]) -> (i32, String) {
    let mut cmd = env.cmd(&[]);
    cmd.env_remove("GATEHOUSE_POLICY").args(args);
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn write(env: &Env, name: &str, text: &str) -> PathBuf {
    let path = env.dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn codes(out: &Value) -> Vec<&str> {
    out["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap())
        .collect()
}

fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    keys
}

#[test]
fn check_url_passes_an_oauth_url_with_the_json_contract() {
    let env = env();
    let (code, out) = json(&env, &["policy", "check-url", GOOGLE]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(keys(&out), ["decision", "display", "reasons"]);
    assert_eq!(out["decision"], "allow_elicitation_with_receipt");
    assert_eq!(out["reasons"], json!([]));
    assert_eq!(keys(&out["display"]), ["full", "host", "host_unicode"]);
    assert_eq!(out["display"]["full"], GOOGLE);
    assert_eq!(out["display"]["host"], "accounts.google.com");
    assert_eq!(out["display"]["host_unicode"], "accounts.google.com");
}

#[test]
fn check_url_refuses_userinfo_phishing() {
    let env = env();
    let (code, out) = json(
        &env,
        &[
            "policy",
            "check-url",
            "https://github.com@evil.example/login",
        ],
    );
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["decision"], "deny_untrusted_elicitation_url");
    assert_eq!(codes(&out), ["url_userinfo"]);
    let reason = &out["reasons"][0];
    assert_eq!(keys(reason), ["code", "detail"]);
    assert!(
        reason["detail"].as_str().unwrap().contains("evil.example"),
        "{reason}"
    );
    assert_eq!(out["display"]["host"], "evil.example");

    let (code, text) = human(
        &env,
        &[
            "policy",
            "check-url",
            "https://github.com@evil.example/login",
        ],
    );
    assert_eq!(code, 1);
    assert!(
        text.starts_with("decision: deny_untrusted_elicitation_url\n"),
        "{text}"
    );
    assert!(text.contains("\n  url_userinfo: "), "{text}");
    assert!(text.contains("host          evil.example"), "{text}");
}

#[test]
fn check_url_shows_both_forms_of_a_punycode_host() {
    let env = env();
    let (code, out) = json(&env, &["policy", "check-url", "https://\u{430}pple.com/"]);
    assert_eq!(code, 1);
    assert_eq!(out["display"]["host"], "xn--pple-43d.com");
    assert_eq!(out["display"]["host_unicode"], "\u{430}pple.com");
    assert!(codes(&out).contains(&"url_punycode_host"), "{out}");
}

#[test]
fn check_url_local_server_and_allow_hosts() {
    let env = env();
    let loopback = "http://127.0.0.1:8765/connect/abc";
    let (code, out) = json(&env, &["policy", "check-url", loopback]);
    assert_eq!(code, 1, "{out}");
    assert!(codes(&out).contains(&"url_not_https"));
    let (code, out) = json(&env, &["policy", "check-url", "--local-server", loopback]);
    assert_eq!(code, 0, "{out}");

    let args = [
        "policy",
        "check-url",
        "--allow-host",
        "github.com",
        "--allow-host",
        "gitlab.com",
    ];
    let (code, out) = json(&env, &[&args[..], &["https://evil-github.com/"]].concat());
    assert_eq!(code, 1);
    assert_eq!(codes(&out), ["url_host_not_allowed"]);
    let (code, out) = json(
        &env,
        &[&args[..], &["https://api.github.com/login"]].concat(),
    );
    assert_eq!(code, 0, "{out}");
}

#[test]
fn check_url_secret_transit_is_its_own_decision() {
    let env = env();
    let (code, out) = json(
        &env,
        &[
            "policy",
            "check-url",
            "https://example.com/setup?t=ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        ],
    );
    assert_eq!(code, 1);
    assert_eq!(out["decision"], "deny_token_or_secret_transit");
    assert_eq!(codes(&out), ["secret_token_prefix"]);
    assert!(
        !out["reasons"]
            .to_string()
            .contains("ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
        "a detail repeats the token: {out}"
    );
}

#[test]
fn check_form_refuses_a_password_form_and_passes_an_ordinary_one() {
    let env = env();
    let password = write(
        &env,
        "password.json",
        r#"{"type": "object", "properties": {"username": {"type": "string"}, "password": {"type": "string"}}, "required": ["username"]}"#,
    );
    let (code, out) = json(&env, &["policy", "check-form", password.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(keys(&out), ["decision", "fields", "reasons"]);
    assert_eq!(out["decision"], "deny_sensitive_form_elicitation");
    assert_eq!(codes(&out), ["sensitive_field"]);
    assert_eq!(
        out["fields"],
        json!([{"name": "username", "sensitive": false}, {"name": "password", "sensitive": true}])
    );

    let (code, text) = human(&env, &["policy", "check-form", password.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        text.starts_with("decision: deny_sensitive_form_elicitation\n"),
        "{text}"
    );
    assert!(
        text.contains("  sensitive_field: field \"password\""),
        "{text}"
    );
    assert!(text.contains("  password  SENSITIVE (password)"), "{text}");
    assert!(text.contains("  username  ok"), "{text}");

    // Elicitation params with a requestedSchema are accepted too.
    let ordinary = write(
        &env,
        "booking.json",
        r#"{"message": "Book a table", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}, "email": {"type": "string", "format": "email"}, "partySize": {"type": "integer", "minimum": 1}}}}"#,
    );
    let (code, out) = json(&env, &["policy", "check-form", ordinary.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["decision"], "allow_elicitation_with_receipt");
    assert_eq!(out["fields"].as_array().unwrap().len(), 3);
}

#[test]
fn check_form_holds_a_schema_outside_the_subset() {
    let env = env();
    let nested = write(
        &env,
        "nested.json",
        r#"{"type": "object", "properties": {"address": {"type": "object", "properties": {"street": {"type": "string"}}}}}"#,
    );
    let (code, out) = json(&env, &["policy", "check-form", nested.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["decision"], "hold_for_elicitation_evidence");
    assert_eq!(codes(&out), ["schema_outside_subset"]);
    assert_eq!(out["fields"], json!([]));
}

#[test]
fn usage_errors_exit_2() {
    let env = env();
    let (code, out) = json(&env, &["policy", "check-form", "no-such-schema.json"]);
    assert_eq!(code, 2);
    assert_eq!(out["error"]["code"], "usage", "{out}");

    let broken = write(&env, "broken.json", "{not json");
    let (code, out) = json(&env, &["policy", "check-form", broken.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not JSON"),
        "{out}"
    );

    let bad_policy = write(
        &env,
        "bad.toml",
        &DEFAULT_POLICY_TOML.replace("window_seconds = 60", "window_seconds = 0"),
    );
    let (code, out) = json(
        &env,
        &[
            "--policy",
            bad_policy.to_str().unwrap(),
            "policy",
            "check-url",
            GOOGLE,
        ],
    );
    assert_eq!(code, 2);
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("window_seconds"),
        "{out}"
    );

    let typo = write(
        &env,
        "typo.toml",
        &DEFAULT_POLICY_TOML.replace("max_denials", "max_denial"),
    );
    let (code, out) = json(
        &env,
        &["--policy", typo.to_str().unwrap(), "policy", "show"],
    );
    assert_eq!(
        (code, &out["error"]["code"]),
        (2, &json!("policy_invalid")),
        "{out}"
    );

    let (code, out) = json(&env, &["--policy", "no-such-policy.toml", "policy", "show"]);
    assert_eq!(
        (code, &out["error"]["code"]),
        (2, &json!("policy_invalid")),
        "{out}"
    );
    // The same code from a command that opens the host, as from the desktop app.
    let (code, out) = json(
        &env,
        &["--policy", "no-such-policy.toml", "--demo", "tools", "demo"],
    );
    assert_eq!(
        (code, &out["error"]["code"]),
        (2, &json!("policy_invalid")),
        "{out}"
    );

    let (code, _) = human(&env, &["policy", "check-url"]);
    assert_eq!(code, 2, "a missing argument is a usage error");
}

#[test]
fn a_tightened_policy_changes_the_decision() {
    let env = env();
    let strict = DEFAULT_POLICY_TOML
        .replace(
            "require_allowlisted_host = false",
            "require_allowlisted_host = true",
        )
        .replace(
            "version = \"gatehouse-default-2026.1\"",
            "version = \"acme-strict-1\"",
        );
    assert_ne!(strict, DEFAULT_POLICY_TOML);
    let strict = write(&env, "strict.toml", &strict);
    let strict = strict.to_str().unwrap();

    let (code, out) = json(&env, &["--policy", strict, "policy", "check-url", GOOGLE]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(codes(&out), ["url_host_not_allowed"]);
    let (code, out) = json(
        &env,
        &[
            "--policy",
            strict,
            "policy",
            "check-url",
            "--allow-host",
            "google.com",
            GOOGLE,
        ],
    );
    assert_eq!(code, 0, "{out}");

    // The same through the environment.
    let mut cmd = env.cmd(&["--json", "policy", "check-url", GOOGLE]);
    cmd.env("GATEHOUSE_POLICY", strict);
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(1));

    let (code, out) = json(&env, &["--policy", strict, "policy", "show"]);
    assert_eq!(code, 0);
    assert_eq!(out["version"], "acme-strict-1");
    assert_eq!(out["source"], strict);
    assert_eq!(out["policy"]["url"]["require_allowlisted_host"], true);
}

#[test]
fn show_names_the_built_in_default() {
    let env = env();
    let (code, out) = json(&env, &["policy", "show"]);
    assert_eq!(code, 0);
    assert_eq!(out["version"], "gatehouse-default-2026.1");
    assert_eq!(out["source"], "built-in");
    let (code, text) = human(&env, &["policy", "show"]);
    assert_eq!(code, 0);
    assert!(text.contains("policy   gatehouse-default-2026.1"), "{text}");
    assert!(text.contains("source   built-in"), "{text}");
}

#[test]
fn check_form_judges_the_message_of_elicitation_params() {
    let env = env();
    let schema = r#"{"type": "object", "properties": {"value": {"type": "string"}}}"#;
    let phishing = write(
        &env,
        "phishing.json",
        &format!(r#"{{"message": "Enter your password", "requestedSchema": {schema}}}"#),
    );
    let (code, out) = json(&env, &["policy", "check-form", phishing.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["decision"], "deny_sensitive_form_elicitation", "{out}");
    let ordinary = write(
        &env,
        "ordinary.json",
        &format!(r#"{{"params": {{"message": "Pick a seat", "requestedSchema": {schema}}}}}"#),
    );
    let (code, out) = json(&env, &["policy", "check-form", ordinary.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["decision"], "allow_elicitation_with_receipt", "{out}");
}
