//! Answers against the every-type schema: valid answers pass, each kind of invalid answer is
//! refused naming the field. Table-driven; failures are reported by case name.

mod common;

use common::{corpus, report};
use gatehouse_policy::FormSchema;
use serde_json::{Map, Value, json};

fn every_type() -> FormSchema {
    let cases: Vec<Value> = serde_json::from_str(&corpus("forms.json")).unwrap();
    let case = cases
        .iter()
        .find(|c| c["name"] == "everything_server_every_type")
        .expect("the every-type schema is in the corpus");
    FormSchema::parse(&case["schema"]).expect("the every-type schema parses")
}

fn valid() -> Map<String, Value> {
    json!({
        "name": "Ada Lovelace",
        "check": true,
        "firstLine": "It was a dark and stormy night.",
        "email": "ada@example.com",
        "homepage": "https://ada.example.org/",
        "birthdate": "1815-12-10",
        "integer": 42,
        "number": 2.5,
        "untitledSingleSelectEnum": "Joey",
        "untitledMultipleSelectEnum": ["Guitar", "Drums"],
        "titledSingleSelectEnum": "hero-2",
        "titledMultipleSelectEnum": ["fish-1", "fish-3"],
        "legacyTitledEnum": "pet-5"
    })
    .as_object()
    .unwrap()
    .clone()
}

#[test]
fn the_every_type_schema_parses_into_every_kind() {
    let schema = every_type();
    assert_eq!(schema.fields.len(), 13);
    let kinds: Vec<String> = schema
        .fields
        .iter()
        .map(|f| {
            serde_json::to_value(&f.kind).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    for kind in ["text", "number", "boolean", "select", "multi_select"] {
        assert!(kinds.iter().any(|k| k == kind), "no {kind} in {kinds:?}");
    }
    let legacy = schema.field("legacyTitledEnum").unwrap();
    let value = serde_json::to_value(&legacy.kind).unwrap();
    assert_eq!(
        value["choices"][1],
        json!({"value": "pet-2", "title": "Dogs"})
    );
    let titled =
        serde_json::to_value(&schema.field("titledMultipleSelectEnum").unwrap().kind).unwrap();
    assert_eq!(
        titled["choices"][0],
        json!({"value": "fish-1", "title": "Tuna"})
    );
    assert_eq!(titled["min_items"], 1);
    assert!(schema.field("name").unwrap().required);
    assert!(!schema.field("email").unwrap().required);
}

#[test]
#[allow(clippy::approx_constant)] // 3.14 is the reference server's literal default, not pi
fn defaults_prefill_every_field_that_has_one() {
    let defaults = every_type().defaults();
    assert_eq!(defaults["integer"], 42);
    assert_eq!(defaults["number"], 3.14);
    assert_eq!(defaults["firstLine"], "It was a dark and stormy night.");
    assert_eq!(defaults["untitledMultipleSelectEnum"], json!(["Guitar"]));
    assert_eq!(defaults["legacyTitledEnum"], "pet-1");
    assert!(!defaults.contains_key("name"));
    assert_eq!(defaults.len(), 8);
    // The defaults themselves are valid answers once the required name is given.
    let mut answers = defaults.clone();
    answers.insert("name".into(), json!("Ada"));
    every_type().validate(&answers).unwrap();
}

#[test]
fn valid_answers_pass() {
    let schema = every_type();
    let cases: Vec<(&str, Map<String, Value>)> = vec![
        ("everything", valid()),
        (
            "only_the_required_field",
            json!({"name": "Ada"}).as_object().unwrap().clone(),
        ),
        ("integer_written_as_float", {
            let mut v = valid();
            v.insert("integer".into(), json!(42.0));
            v
        }),
        ("bounds_are_inclusive", {
            let mut v = valid();
            v.insert("integer".into(), json!(100));
            v.insert("number".into(), json!(0));
            v
        }),
        ("max_items_exactly", {
            let mut v = valid();
            v.insert(
                "untitledMultipleSelectEnum".into(),
                json!(["Guitar", "Piano", "Bass"]),
            );
            v
        }),
        ("leap_day", {
            let mut v = valid();
            v.insert("birthdate".into(), json!("2000-02-29"));
            v
        }),
        ("uri_with_any_scheme", {
            let mut v = valid();
            v.insert("homepage".into(), json!("mailto:ada@example.com"));
            v
        }),
    ];
    let mut failures = Vec::new();
    for (name, answers) in &cases {
        if let Err(errors) = schema.validate(answers) {
            failures.push(format!("  {name}: {errors:?}"));
        }
    }
    report("valid-answer", cases.len(), &failures);
}

#[test]
fn each_kind_of_invalid_answer_is_refused() {
    let schema = every_type();
    // (case, field, value or None to remove it, expected words in the problem)
    let cases: Vec<(&str, &str, Option<Value>, &str)> = vec![
        (
            "unknown_field",
            "favouriteColour",
            Some(json!("red")),
            "not a field",
        ),
        ("required_missing", "name", None, "required"),
        ("string_given_number", "name", Some(json!(7)), "string"),
        (
            "boolean_given_string",
            "check",
            Some(json!("true")),
            "true or false",
        ),
        (
            "integer_with_fraction",
            "integer",
            Some(json!(4.5)),
            "whole number",
        ),
        (
            "integer_given_string",
            "integer",
            Some(json!("42")),
            "number",
        ),
        (
            "integer_below_minimum",
            "integer",
            Some(json!(0)),
            "at least 1",
        ),
        (
            "integer_above_maximum",
            "integer",
            Some(json!(101)),
            "at most 100",
        ),
        (
            "number_above_maximum",
            "number",
            Some(json!(1000.5)),
            "at most 1000",
        ),
        (
            "number_below_minimum",
            "number",
            Some(json!(-0.1)),
            "at least 0",
        ),
        (
            "email_without_at",
            "email",
            Some(json!("ada.example.com")),
            "email",
        ),
        (
            "email_with_two_ats",
            "email",
            Some(json!("ada@lovelace@example.com")),
            "email",
        ),
        (
            "email_without_dot_domain",
            "email",
            Some(json!("ada@localhost")),
            "email",
        ),
        (
            "email_with_space",
            "email",
            Some(json!("ada lovelace@example.com")),
            "email",
        ),
        ("uri_relative", "homepage", Some(json!("/about")), "uri"),
        (
            "date_impossible",
            "birthdate",
            Some(json!("2026-02-30")),
            "date",
        ),
        (
            "date_wrong_shape",
            "birthdate",
            Some(json!("10/12/1815")),
            "date",
        ),
        (
            "single_select_not_a_choice",
            "untitledSingleSelectEnum",
            Some(json!("Gunther")),
            "not one of",
        ),
        (
            "titled_select_given_title",
            "titledSingleSelectEnum",
            Some(json!("Superman")),
            "not one of",
        ),
        (
            "legacy_select_given_name",
            "legacyTitledEnum",
            Some(json!("Cats")),
            "not one of",
        ),
        (
            "multi_select_too_few",
            "untitledMultipleSelectEnum",
            Some(json!([])),
            "at least 1",
        ),
        (
            "multi_select_too_many",
            "untitledMultipleSelectEnum",
            Some(json!(["Guitar", "Piano", "Violin", "Drums"])),
            "at most 3",
        ),
        (
            "multi_select_duplicate",
            "titledMultipleSelectEnum",
            Some(json!(["fish-1", "fish-1"])),
            "twice",
        ),
        (
            "multi_select_not_a_choice",
            "titledMultipleSelectEnum",
            Some(json!(["fish-9"])),
            "not one of",
        ),
        (
            "multi_select_given_string",
            "untitledMultipleSelectEnum",
            Some(json!("Guitar")),
            "list",
        ),
        (
            "multi_select_given_numbers",
            "untitledMultipleSelectEnum",
            Some(json!([1])),
            "string",
        ),
        ("null_answer", "firstLine", Some(Value::Null), "string"),
    ];
    let mut failures = Vec::new();
    for (name, field, value, expected) in &cases {
        let mut answers = valid();
        match value {
            Some(value) => {
                answers.insert(field.to_string(), value.clone());
            }
            None => {
                answers.remove(*field);
            }
        }
        match schema.validate(&answers) {
            Ok(()) => failures.push(format!("  {name}: accepted")),
            Err(errors) => {
                let hit = errors
                    .iter()
                    .any(|e| e.field == *field && e.problem.contains(expected));
                if !hit || errors.len() != 1 {
                    failures.push(format!(
                        "  {name}: {errors:?} (want one error on {field} mentioning {expected:?})"
                    ));
                }
            }
        }
    }
    report("invalid-answer", cases.len(), &failures);
}

#[test]
fn lengths_count_characters_not_bytes() {
    let schema = FormSchema::parse(&json!({
        "type": "object",
        "properties": {"code": {"type": "string", "minLength": 3, "maxLength": 3}}
    }))
    .unwrap();
    let answer = |text: &str| json!({"code": text}).as_object().unwrap().clone();
    schema.validate(&answer("élé")).unwrap(); // 3 characters, 6 bytes
    schema.validate(&answer("日本語")).unwrap();
    assert!(schema.validate(&answer("ab")).is_err());
    assert!(schema.validate(&answer("abcd")).is_err());
}

#[test]
fn date_time_answers() {
    let schema = FormSchema::parse(&json!({
        "type": "object",
        "properties": {"when": {"type": "string", "format": "date-time"}}
    }))
    .unwrap();
    let check = |text: &str| schema.validate(json!({"when": text}).as_object().unwrap());
    check("2026-12-01T09:30:00Z").unwrap();
    check("2026-12-01T09:30:00.5+01:00").unwrap();
    assert!(check("2026-12-01 09:30").is_err());
    assert!(check("2026-12-01T25:00:00Z").is_err());
    assert!(check("tomorrow").is_err());
}

#[test]
fn every_error_is_reported_at_once() {
    let schema = every_type();
    let answers = json!({"integer": "x", "email": "nope", "extra": 1});
    let errors = schema.validate(answers.as_object().unwrap()).unwrap_err();
    let mut fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    fields.sort();
    assert_eq!(fields, ["email", "extra", "integer", "name"]);
}
