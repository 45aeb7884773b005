//! The form corpus (tests/corpus/forms.json): each schema's expected decision, reason codes,
//! sensitive fields and, for schemas outside the subset, what the error must mention.
//! Failures are reported by case name.

mod common;

use std::collections::HashSet;

use common::{codes, corpus, good_context, report, sorted};
use gatehouse_policy::codes as all_codes;
use gatehouse_policy::{Mode, Policy, ServerStanding, assess_form};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    schema: Value,
    decision: String,
    codes: Vec<String>,
    sensitive: Vec<String>,
    error_contains: Option<String>,
}

fn cases() -> Vec<Case> {
    serde_json::from_str(&corpus("forms.json")).expect("forms.json parses")
}

#[test]
fn form_corpus() {
    let policy = Policy::default_policy();
    let context = good_context(Mode::Form, false);
    let cases = cases();
    let mut failures = Vec::new();
    let mut names = HashSet::new();
    for case in &cases {
        assert!(
            names.insert(case.name.as_str()),
            "duplicate case name {}",
            case.name
        );
        let assessment = assess_form(&policy, &context, None, &case.schema);
        let mut problems = Vec::new();
        if assessment.assessment.decision.as_str() != case.decision {
            problems.push(format!(
                "decision {} (want {})",
                assessment.assessment.decision, case.decision
            ));
        }
        let got_codes = codes(&assessment.assessment.reasons);
        if got_codes != sorted(&case.codes) {
            problems.push(format!(
                "codes {got_codes:?} (want {:?})",
                sorted(&case.codes)
            ));
        }
        let sensitive: Vec<&str> = assessment
            .fields
            .iter()
            .filter(|f| f.sensitive)
            .map(|f| f.name.as_str())
            .collect();
        if sensitive != case.sensitive {
            problems.push(format!(
                "sensitive {sensitive:?} (want {:?})",
                case.sensitive
            ));
        }
        let outside = assessment
            .assessment
            .reasons
            .iter()
            .find(|r| r.code == all_codes::SCHEMA_OUTSIDE_SUBSET);
        if outside.is_some() != assessment.schema.is_none() {
            problems.push("schema must be None exactly when outside the subset".into());
        }
        if outside.is_some() && !assessment.fields.is_empty() {
            problems.push("fields must be empty when outside the subset".into());
        }
        if let Some(expected) = &case.error_contains {
            match outside {
                Some(reason) if reason.detail.contains(expected.as_str()) => {}
                Some(reason) => {
                    problems.push(format!("error {:?} lacks {expected:?}", reason.detail))
                }
                None => problems.push(format!(
                    "no schema error (want one mentioning {expected:?})"
                )),
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
                "  {}: {}\n      reasons {details:?}",
                case.name,
                problems.join("; ")
            ));
        }
    }
    report("form", cases.len(), &failures);
}

#[test]
fn the_corpus_is_big_and_balanced() {
    let cases = cases();
    assert!(cases.len() >= 40, "only {} cases", cases.len());
    let count = |decision: &str| cases.iter().filter(|c| c.decision == decision).count();
    assert!(count("allow_elicitation_with_receipt") >= 5);
    assert!(count("deny_sensitive_form_elicitation") >= 30);
    assert!(count("hold_for_elicitation_evidence") >= 20);
}

#[test]
fn sensitive_details_name_the_field_and_the_term() {
    let policy = Policy::default_policy();
    let context = good_context(Mode::Form, false);
    let schema = json!({"type": "object", "properties": {"x-api-key": {"type": "string"}}});
    let a = assess_form(&policy, &context, None, &schema);
    let reason = &a.assessment.reasons[0];
    assert_eq!(reason.code, "sensitive_field");
    assert!(reason.detail.contains("\"x-api-key\""), "{}", reason.detail);
    assert!(reason.detail.contains("\"api key\""), "{}", reason.detail);
    assert_eq!(a.fields[0].matched.as_deref(), Some("api key"));

    let schema = json!({"type": "object", "properties": {"p": {"type": "string", "description": "Your account password"}}});
    let a = assess_form(&policy, &context, None, &schema);
    assert!(
        a.assessment.reasons[0].detail.contains("description"),
        "{:?}",
        a.assessment.reasons
    );
}

#[test]
fn an_admin_can_add_terms() {
    let mut policy = Policy::default_policy();
    let context = good_context(Mode::Form, false);
    let schema = json!({"type": "object", "properties": {"licenseKey": {"type": "string"}, "wachtwoord": {"type": "string"}}});
    assert!(
        assess_form(&policy, &context, None, &schema)
            .assessment
            .is_allowed()
    );
    policy.form.sensitive_terms.push("license key".into());
    policy.form.sensitive_terms.push("Wachtwoord".into());
    let a = assess_form(&policy, &context, None, &schema);
    assert_eq!(
        a.assessment.decision.as_str(),
        "deny_sensitive_form_elicitation"
    );
    assert!(a.fields.iter().all(|f| f.sensitive), "{:?}", a.fields);
    // And formats: an admin who considers every email a secret.
    policy.form.sensitive_formats.push("EMAIL".into());
    let schema =
        json!({"type": "object", "properties": {"e": {"type": "string", "format": "email"}}});
    assert!(
        !assess_form(&policy, &context, None, &schema)
            .assessment
            .is_allowed()
    );
}

#[test]
fn form_evidence_and_override() {
    let policy = Policy::default_policy();
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    let mut context = good_context(Mode::Form, false);
    context.standing = ServerStanding::Unattested;
    let a = assess_form(&policy, &context, None, &schema);
    assert_eq!(
        a.assessment.decision.as_str(),
        "hold_for_elicitation_evidence"
    );
    assert!(
        a.assessment.override_allowed,
        "server_unattested is overridable by default"
    );
    assert!(a.schema.is_some());
    assert_eq!(a.fields.len(), 1);

    // A schema hold is never overridable, whatever else is.
    let bad = json!({"type": "object", "properties": {"a": {"$ref": "#/x"}}});
    let a = assess_form(&policy, &context, None, &bad);
    assert_eq!(
        a.assessment.decision.as_str(),
        "hold_for_elicitation_evidence"
    );
    assert!(!a.assessment.override_allowed);

    // A denial is not a hold: nothing to override.
    let secret = json!({"type": "object", "properties": {"password": {"type": "string"}}});
    let a = assess_form(&policy, &context, None, &secret);
    assert_eq!(
        a.assessment.decision.as_str(),
        "deny_sensitive_form_elicitation"
    );
    assert!(!a.assessment.override_allowed);
}

#[test]
fn serialized_assessment_shape() {
    let policy = Policy::default_policy();
    let context = good_context(Mode::Form, false);
    let schema = json!({"type": "object", "properties": {"password": {"type": "string"}, "name": {"type": "string"}}});
    let value = serde_json::to_value(assess_form(&policy, &context, None, &schema)).unwrap();
    assert_eq!(value["decision"], "deny_sensitive_form_elicitation");
    assert_eq!(value["reasons"][0]["code"], "sensitive_field");
    assert!(value["reasons"][0].get("decision").is_none());
    assert_eq!(
        value["fields"][0],
        json!({"name": "password", "sensitive": true, "matched": "password"})
    );
    assert_eq!(
        value["fields"][1],
        json!({"name": "name", "sensitive": false})
    );
    assert_eq!(value["override_allowed"], false);
}
