//! The sensitive-form check, both sides: what a phishing form hides behind (the message, the
//! schema's own title and description, choice titles, glued and digit-for-letter spellings,
//! service token names) and ordinary forms that merely contain such letters, which must keep
//! working (zero false positives).

mod common;

use common::good_context;
use gatehouse_policy::{Decision, Mode, Policy, assess_form};
use serde_json::{Value, json};

fn decide(message: Option<&str>, schema: &Value) -> Decision {
    let policy = Policy::default_policy();
    assess_form(&policy, &good_context(Mode::Form, false), message, schema)
        .assessment
        .decision
}

fn field(name: &str) -> Value {
    json!({"type": "object", "properties": {name: {"type": "string"}}})
}

#[test]
fn secrets_asked_for_anywhere_the_user_reads_are_denied() {
    let value = field("value");
    let cases: Vec<(&str, Option<&str>, Value)> = vec![
        ("message", Some("Enter your password"), value.clone()),
        (
            "message, glued",
            Some("Paste your githubtoken below"),
            value.clone(),
        ),
        (
            "message, digits for letters",
            Some("Your p4ssw0rd please"),
            value.clone(),
        ),
        (
            "message, seed phrase",
            Some("Type the 12 words of your seed phrase"),
            value.clone(),
        ),
        (
            "message, one-time code",
            Some("Enter the verification code we texted you"),
            value.clone(),
        ),
        (
            "schema title",
            None,
            json!({"type": "object", "title": "API key", "properties": {"v": {"type": "string"}}}),
        ),
        (
            "schema description",
            None,
            json!({"type": "object", "description": "Your GitHub personal access token",
                   "properties": {"v": {"type": "string"}}}),
        ),
        (
            "choice title",
            None,
            json!({"type": "object", "properties": {"v": {"type": "string",
                   "oneOf": [{"const": "a", "title": "Password"}, {"const": "b", "title": "SMS"}]}}}),
        ),
        (
            "legacy enumNames",
            None,
            json!({"type": "object", "properties": {"v": {"type": "string",
                   "enum": ["a", "b"], "enumNames": ["Recovery code", "Skip"]}}}),
        ),
    ];
    let mut fields = vec![
        "githubtoken",
        "GitHubToken",
        "slackBotToken",
        "awsSecretAccessKey",
        "openaiapikey",
        "OPENAI_API_KEY",
        "hf_token",
        "npmToken",
        "p4ssw0rd",
        "s3cr3t",
        "api_k3y",
        "Pa$$word",
        "passWord",
        "pass_word",
        "dbpasswd",
        "0tp",
        "deployKey",
        "ssh_key",
        "keystore",
    ];
    fields.sort();
    for (what, message, schema) in cases {
        assert_eq!(
            decide(message, &schema),
            Decision::DenySensitiveFormElicitation,
            "{what}: {message:?} {schema}"
        );
    }
    for name in fields {
        assert_eq!(
            decide(None, &field(name)),
            Decision::DenySensitiveFormElicitation,
            "field {name:?}"
        );
    }
}

#[test]
fn ordinary_forms_that_merely_contain_such_letters_are_asked() {
    let names = [
        "compass",
        "passenger",
        "bypass",
        "passage",
        "compassion",
        "keyboard",
        "monkey",
        "turkey",
        "keynote",
        "tokenizer",
        "max_tokens",
        "token_count",
        "spinach",
        "opinion",
        "shipping",
        "topic",
        "hotpot",
        "secretary",
        "author",
        "authority",
        "zip_code",
        "promo_code",
        "discount_code",
        "country",
        "v1_endpoint",
        "ipv4_address",
        "x509_subject",
        "s3_bucket",
        "h264_profile",
        "utf8_mode",
        "sha1_digest",
        "port_443",
        "ec2_region",
        "t3_size",
        "base64_image",
        "oauth2_scope",
        "room_101",
        "seat_7a",
        "appointment",
    ];
    for name in names {
        assert_eq!(
            decide(None, &field(name)),
            Decision::AllowElicitationWithReceipt,
            "field {name:?}"
        );
    }
    let messages = [
        "Book a table for tonight",
        "Which color do you prefer?",
        "Confirm your shipping address",
        "How many tokens should the summary use?",
        "Pick a passenger seat",
        "Enter the discount code from your receipt",
        "Describe the compass heading in degrees (0-359)",
        "Room 101 or 4B?",
    ];
    for message in messages {
        assert_eq!(
            decide(Some(message), &field("value")),
            Decision::AllowElicitationWithReceipt,
            "message {message:?}"
        );
    }
    let choices = json!({"type": "object", "title": "Travel class",
        "description": "Choose how you fly",
        "properties": {"class": {"type": "string",
            "oneOf": [{"const": "e", "title": "Economy"}, {"const": "b", "title": "Business"},
                      {"const": "k", "title": "Keyboard shortcuts"}]}}});
    assert_eq!(
        decide(Some("Pick a class"), &choices),
        Decision::AllowElicitationWithReceipt
    );
}
