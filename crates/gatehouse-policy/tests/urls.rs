//! The URL corpus (tests/corpus/urls.json): each case's URL, context and policy tweaks, and
//! the exact decision and set of reason codes expected. Failures are reported by case name.

mod common;

use std::collections::HashSet;

use common::{codes, corpus, good_context, report, sorted};
use gatehouse_policy::codes as all_codes;
use gatehouse_policy::{Mode, Policy, assess_url};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    url: String,
    local: bool,
    allow_hosts: Vec<String>,
    decision: String,
    codes: Vec<String>,
    #[serde(default)]
    policy: Option<Tweaks>,
    full: Option<String>,
    host: Option<String>,
    host_unicode: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Tweaks {
    require_allowlisted_host: Option<bool>,
    allowed_hosts: Option<Vec<String>>,
    allow_http_loopback_for_local_servers: Option<bool>,
    max_length: Option<usize>,
}

fn policy_for(tweaks: &Option<Tweaks>) -> Policy {
    let mut policy = Policy::default_policy();
    if let Some(t) = tweaks {
        if let Some(v) = t.require_allowlisted_host {
            policy.url.require_allowlisted_host = v;
        }
        if let Some(v) = &t.allowed_hosts {
            policy.url.allowed_hosts = v.clone();
        }
        if let Some(v) = t.allow_http_loopback_for_local_servers {
            policy.url.allow_http_loopback_for_local_servers = v;
        }
        if let Some(v) = t.max_length {
            policy.url.max_length = v;
        }
    }
    policy
}

fn cases() -> Vec<Case> {
    serde_json::from_str(&corpus("urls.json")).expect("urls.json parses")
}

#[test]
fn url_corpus() {
    let cases = cases();
    let mut failures = Vec::new();
    let mut names = HashSet::new();
    for case in &cases {
        assert!(
            names.insert(case.name.as_str()),
            "duplicate case name {}",
            case.name
        );
        let policy = policy_for(&case.policy);
        let context = good_context(Mode::Url, case.local);
        let assessment = assess_url(&policy, &context, &case.url, &case.allow_hosts);
        let got_codes = codes(&assessment.assessment.reasons);
        let want_codes = sorted(&case.codes);
        let mut problems = Vec::new();
        if assessment.assessment.decision.as_str() != case.decision {
            problems.push(format!(
                "decision {} (want {})",
                assessment.assessment.decision, case.decision
            ));
        }
        if got_codes != want_codes {
            problems.push(format!("codes {got_codes:?} (want {want_codes:?})"));
        }
        let display = &assessment.display;
        for (what, want, got) in [
            ("full", &case.full, &display.full),
            ("host", &case.host, &display.host),
            ("host_unicode", &case.host_unicode, &display.host_unicode),
        ] {
            if let Some(want) = want
                && want != got
            {
                problems.push(format!("display.{what} {got:?} (want {want:?})"));
            }
        }
        if !problems.is_empty() {
            let details: Vec<String> = assessment
                .assessment
                .reasons
                .iter()
                .map(|r| format!("{}: {}", r.code, r.detail))
                .collect();
            failures.push(format!(
                "  {}: {}\n      url {:?}\n      reasons {details:?}",
                case.name,
                problems.join("; "),
                case.url
            ));
        }
    }
    report("URL", cases.len(), &failures);
}

#[test]
fn the_corpus_is_big_and_covers_every_url_code() {
    let cases = cases();
    assert!(cases.len() >= 60, "only {} cases", cases.len());
    let allowed = cases
        .iter()
        .filter(|c| c.decision == "allow_elicitation_with_receipt")
        .count();
    assert!(allowed >= 20, "only {allowed} legitimate URLs");
    let used: HashSet<&str> = cases
        .iter()
        .flat_map(|c| &c.codes)
        .map(String::as_str)
        .collect();
    for (code, decision) in all_codes::ALL {
        if matches!(decision.as_str(), "deny_untrusted_elicitation_url") {
            assert!(used.contains(code), "no URL case expects {code}");
        }
    }
    assert!(used.contains(all_codes::SECRET_TOKEN_PREFIX));
    for code in &used {
        assert!(
            all_codes::decision_of(code).is_some(),
            "unknown code {code} in the corpus"
        );
    }
}

#[test]
fn details_name_both_host_forms_and_never_echo_secrets() {
    let policy = Policy::default_policy();
    let context = good_context(Mode::Url, false);
    let a = assess_url(&policy, &context, "https://\u{430}pple.com/", &[]);
    let punycode = a
        .assessment
        .reasons
        .iter()
        .find(|r| r.code == all_codes::URL_PUNYCODE_HOST)
        .unwrap();
    assert!(
        punycode.detail.contains("xn--pple-43d.com"),
        "{}",
        punycode.detail
    );
    assert!(
        punycode.detail.contains("\u{430}pple.com"),
        "{}",
        punycode.detail
    );

    let token = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
    let a = assess_url(
        &policy,
        &context,
        &format!("https://example.com/?t={token}"),
        &[],
    );
    for reason in &a.assessment.reasons {
        assert!(!reason.detail.contains(token), "{}", reason.detail);
    }
    let a = assess_url(&policy, &context, "https://u:hunter2@example.com/", &[]);
    for reason in &a.assessment.reasons {
        assert!(!reason.detail.contains("hunter2"), "{}", reason.detail);
    }
}

#[test]
fn evidence_holds_come_with_url_checks() {
    let policy = Policy::default_policy();
    let mut context = good_context(Mode::Url, false);
    context.tied_to_request = false;
    let a = assess_url(&policy, &context, "https://example.com/", &[]);
    assert_eq!(
        a.assessment.decision.as_str(),
        "hold_for_elicitation_evidence"
    );
    assert!(!a.assessment.override_allowed);
    let a = assess_url(&policy, &context, "https://github.com@evil.example/", &[]);
    assert_eq!(
        a.assessment.decision.as_str(),
        "deny_untrusted_elicitation_url"
    );
    assert_eq!(
        codes(&a.assessment.reasons),
        ["not_tied_to_request", "url_userinfo"]
    );
}
