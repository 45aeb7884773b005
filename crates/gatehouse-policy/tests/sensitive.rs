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

/// Unicode tricks: full-width and mathematical letters, full-width digits for letters,
/// accents, invisible characters inside a word, and words in scripts without spaces.
#[test]
fn unicode_spellings_of_secret_words_are_denied() {
    let names = [
        "ｐ４ｓｓｗ０ｒｄ",
        "ｐａｓｓｗｏｒｄ",
        "ＡＰＩ＿ＫＥＹ",
        "𝐩𝐚𝐬𝐬𝐰𝐨𝐫𝐝",
        "pássword",
        "pa\u{301}ssword",
        "pass\u{200B}word",
        "pa\u{AD}ssword",
        "pass\u{2060}word",
        "new\u{200C}password\u{FE0F}hint",
        "se\u{200D}cret",
        "p\u{430}ssword",
        "passwort",
        "contraseña",
        "mot_de_passe",
        "пароль",
        "密码",
        "パスワード",
        "비밀번호",
    ];
    for name in names {
        assert_eq!(
            decide(None, &field(name)),
            Decision::DenySensitiveFormElicitation,
            "field {name:?}"
        );
    }
    for message in [
        "Enter your ｐａｓｓｗｏｒｄ",
        "Enter your pass\u{200B}word",
        "请输入密码",
        "パスワードを入力してください",
        "비밀번호를 입력하세요",
        "Введите пароль",
    ] {
        assert_eq!(
            decide(Some(message), &field("value")),
            Decision::DenySensitiveFormElicitation,
            "message {message:?}"
        );
    }
    // Folding does not invent words: accented and full-width ordinary words stay ordinary.
    for name in [
        "ｃｏｍｐａｓｓ",
        "café_name",
        "résumé",
        "ｔｏｋｅｎ＿ｃｏｕｎｔ",
        "住所",
        "名前",
    ] {
        assert_eq!(
            decide(None, &field(name)),
            Decision::AllowElicitationWithReceipt,
            "field {name:?}"
        );
    }
}

/// Credential names of well-known services, second factors and account recovery.
#[test]
fn service_credentials_second_factors_and_recovery_answers_are_denied() {
    for name in [
        "github_pat",
        "githubPat",
        "ghp",
        "glpat",
        "xoxb",
        "slack_xoxp",
        "sk_key",
        "openai_key",
        "anthropicKey",
        "STRIPE_KEY",
        "aws_key",
        "two_factor_code",
        "authenticatorCode",
        "sms_code",
        "loginCode",
        "unlock_code",
        "security_answer",
        "securityQuestion",
        "mothers_maiden_name",
        "recovery_words",
    ] {
        assert_eq!(
            decide(None, &field(name)),
            Decision::DenySensitiveFormElicitation,
            "field {name:?}"
        );
    }
    for message in [
        "Paste your OpenAI key",
        "Please provide your AWS key",
        "Paste your sk-... key here",
        "Enter your GitHub PAT",
        "Enter the 6-digit code from your authenticator app",
        "Enter the code from Google Authenticator",
        "Enter the code we sent by SMS",
        "Type the code we emailed you",
        "What is your mother's maiden name?",
        "Answer your security question to continue",
        "Enter your wallet recovery words",
    ] {
        assert_eq!(
            decide(Some(message), &field("value")),
            Decision::DenySensitiveFormElicitation,
            "message {message:?}"
        );
    }
}

/// Words that are secrets only when asked for ("pin", "2fa", "bearer", "jwt"): prose that
/// asks is denied, names and prose that merely use the word are asked.
#[test]
fn words_that_are_secrets_only_when_asked_for() {
    for message in [
        "Enter your PIN",
        "What is your PIN?",
        "Enter your card's PIN to continue",
        "Please type in your bank PIN",
        "Confirm your p1n",
        "Enter your 2FA",
        "What's your MFA?",
        "Paste your bearer here",
        "Provide your JWT",
        "Enter the two-factor from your phone",
        "To finish, your PIN",
    ] {
        assert_eq!(
            decide(Some(message), &field("value")),
            Decision::DenySensitiveFormElicitation,
            "message {message:?}"
        );
    }
    // The same in a field's description over an innocent name.
    let described = json!({"type": "object", "properties": {"value": {"type": "string",
        "description": "Enter your PIN"}}});
    assert_eq!(
        decide(None, &described),
        Decision::DenySensitiveFormElicitation
    );
    for message in [
        "Pin this note to the top?",
        "Which topic should I pin?",
        "Drop your pin on the map",
        "Confirm the pin location",
        "Do not give us your phone number, pin, or other sensitive info",
        "We don't need your 2FA for this",
        "Enable 2FA on your account?",
        "Should the JWT expire after an hour?",
        "Pick the flag bearer for the parade",
    ] {
        assert_eq!(
            decide(Some(message), &field("value")),
            Decision::AllowElicitationWithReceipt,
            "message {message:?}"
        );
    }
    let toggles = json!({"type": "object", "properties": {
        "enable_2fa": {"type": "boolean", "title": "Enable 2FA"},
        "mfa_enabled": {"type": "boolean"},
        "jwt_expiry_minutes": {"type": "integer"},
        "bearer_of_news": {"type": "string"}}});
    assert_eq!(
        decide(None, &toggles),
        Decision::AllowElicitationWithReceipt
    );
}

/// More ordinary look-alikes, each a row that must stay asked.
#[test]
fn more_ordinary_look_alikes_are_asked() {
    for name in [
        "pinned",
        "pinecone",
        "seedless_grapes",
        "authorName",
        "card_holder_name",
        "cardholder_name",
        "secret_santa_name",
        "passkey_supported",
        "security_level",
        "question",
        "answer",
        "login_name",
        "code_language",
        "sms_opt_in",
        "authentication_method",
        "private_note",
        "license_plate",
        "keyphrase_extraction",
        "maiden_voyage",
        "awesome_keys",
    ] {
        assert_eq!(
            decide(None, &field(name)),
            Decision::AllowElicitationWithReceipt,
            "field {name:?}"
        );
    }
    for message in [
        "Send me the summary by SMS?",
        "Which login name should the account use?",
        "Enter the code language (python, rust)",
        "Pick a secret santa partner",
        "What is your favourite pinecone shape?",
    ] {
        assert_eq!(
            decide(Some(message), &field("value")),
            Decision::AllowElicitationWithReceipt,
            "message {message:?}"
        );
    }
}

/// A field called nothing but a credential word or one of its short forms (`pw`, `pass`,
/// `pin`, `key`, `2fa`…) asks for a secret as plainly as `password` or `api_key` does: the
/// phishing form just uses the short name. Refused in any case and separator style, with
/// digits for letters, in the title too, whatever the field's type; ordinary names that merely
/// contain those letters, or use the word among others, are asked.
#[test]
fn a_name_that_is_only_a_credential_word_or_its_short_form_is_denied() {
    use gatehouse_policy::form::WHOLE_NAME_TERMS;
    let mut names: Vec<String> = WHOLE_NAME_TERMS.iter().map(|t| t.to_string()).collect();
    names.extend(
        [
            "PW",
            "Pwd",
            "PASS",
            "Pass",
            "PIN",
            "TAN",
            "OTP",
            "MFA",
            "2FA",
            "CVV",
            "Key",
            "KEY",
            "Secret",
            "TOKEN",
            "p_w",
            "P-W",
            "pa55",
            "p4ss",
            "pa$$",
            "k3y",
            "ｐｗ",
            "ＰＩＮ",
            // Look-alike letters, compared by skeleton on both sides (Latin `m` is `rn`).
            "mf\u{0430}",
            "p\u{0461}d",
        ]
        .map(String::from),
    );
    for name in &names {
        assert_eq!(
            decide(None, &field(name)),
            Decision::DenySensitiveFormElicitation,
            "field {name:?}"
        );
    }
    // The title alone, over an innocent name, and fields of other types.
    for schema in [
        json!({"type": "object", "properties": {"value": {"type": "string", "title": "PW"}}}),
        json!({"type": "object", "properties": {"value": {"type": "string", "title": "Pass"}}}),
        json!({"type": "object", "properties": {"value": {"type": "string", "title": "2FA"}}}),
        json!({"type": "object", "properties": {"pin": {"type": "integer"}}}),
        json!({"type": "object", "properties": {"tan": {"type": "number"}}}),
        json!({"type": "object", "properties": {"key": {"type": "string",
               "enum": ["a", "b"]}}}),
    ] {
        assert_eq!(
            decide(None, &schema),
            Decision::DenySensitiveFormElicitation,
            "{schema}"
        );
    }
    // Whatever the policy's own lists say: an admin's file that lists only `password` still
    // refuses `pw` and `pwd`.
    let mut narrow = Policy::default_policy();
    narrow.form.sensitive_terms = vec!["password".into()];
    narrow.form.name_only_terms = Vec::new();
    narrow.form.request_terms = Vec::new();
    for name in ["pw", "pwd", "pin", "token"] {
        let decision = assess_form(
            &narrow,
            &good_context(Mode::Form, false),
            None,
            &field(name),
        )
        .assessment
        .decision;
        assert_eq!(
            decision,
            Decision::DenySensitiveFormElicitation,
            "field {name:?}"
        );
    }

    for name in [
        "passenger",
        "pinned",
        "keyboard",
        "name",
        "email",
        "party_size",
        "passport_country",
        "tangerine",
        "pass_count",
        "pw_hash_algorithm",
        "key_signature",
        "keys",
        "keynote",
        "pattern",
        "patio",
        "credit_limit",
        "bearing",
        "pinyin",
        "tango",
        "enable_2fa",
        "mfa_enabled",
        "token_count",
        "secretary",
        "country_code",
        "seed",
    ] {
        assert_eq!(
            decide(None, &field(name)),
            Decision::AllowElicitationWithReceipt,
            "field {name:?}"
        );
    }
    // Titles and choices that use the word among others, and a choice that is only the word
    // (a choice is a value to pick, not a field to fill in).
    for schema in [
        json!({"type": "object", "properties": {"size": {"type": "integer",
               "title": "Party size"}}}),
        json!({"type": "object", "properties": {"note": {"type": "string",
               "title": "Key signature"}}}),
        json!({"type": "object", "properties": {"grade": {"type": "string",
               "oneOf": [{"const": "p", "title": "Pass"}, {"const": "f", "title": "Fail"}]}}}),
    ] {
        assert_eq!(
            decide(None, &schema),
            Decision::AllowElicitationWithReceipt,
            "{schema}"
        );
    }
}
