//! Secrets in transit: answers the user typed that look like credentials.

use serde_json::{Map, Value};

use base64::Engine as _;

use crate::codes::{self, reason};
use crate::decision::Assessment;
use crate::form::{FormSchema, Matcher, words};
use crate::policy::{Policy, TransitPolicy};

/// Words that make a field "generic-token-like": its answer may be a credential even though
/// the form was allowed ("key", "code", "auth"), so long high-entropy answers in it are refused.
pub const TOKEN_LIKE_WORDS: &[&str] = &[
    "token",
    "tokens",
    "key",
    "keys",
    "secret",
    "secrets",
    "code",
    "codes",
    "auth",
    "credential",
    "credentials",
    "pass",
    "password",
    "passcode",
    "pin",
    "sig",
    "signature",
    "bearer",
    "cookie",
    "session",
    "hash",
    "jwt",
    "apikey",
];

/// A credential prefix must be followed by at least this many token characters.
const PREFIX_MIN_REST: usize = 16;

/// Characters credentials are made of (base64url, plus dots as in `ya29.` and JWTs).
fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// Maximal runs of token characters.
fn runs(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !token_char(c))
        .filter(|run| !run.is_empty())
}

/// The first well-known credential prefix in `text`: a prefix (case-sensitive) that starts a
/// run of token characters and is followed by at least 16 more that look random (some digit or
/// capital: `sk-learn-tutorial-for-beginners` is words, not a key).
pub fn find_token_prefix<'p>(policy: &'p TransitPolicy, text: &str) -> Option<&'p str> {
    for run in runs(text) {
        for prefix in &policy.token_prefixes {
            if let Some(rest) = run.strip_prefix(prefix.as_str())
                && rest.len() >= PREFIX_MIN_REST
                && rest
                    .bytes()
                    .any(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
            {
                return Some(prefix);
            }
        }
    }
    None
}

/// A PEM block of private or secret key material: `-----BEGIN … PRIVATE KEY-----` (any key
/// type: RSA, EC, OPENSSH, ENCRYPTED, PGP … BLOCK) or a label with SECRET in it.
pub fn find_pem_block(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let after = &rest[start + "-----BEGIN ".len()..];
        let end = after.find("-----")?;
        let label = after[..end].trim();
        let upper = label.to_ascii_uppercase();
        if label.len() <= 64 && (upper.contains("PRIVATE") || upper.contains("SECRET")) {
            return Some(label.to_string());
        }
        rest = &after[end..];
    }
    None
}

/// A JWT (JWS compact form): three base64url segments whose first decodes to a JSON object
/// with an `alg`. The signature may be empty (`alg: none`).
pub fn find_jwt(text: &str) -> bool {
    runs(text).any(|run| {
        let mut parts = run.split('.');
        let (Some(header), Some(payload), Some(_signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return false;
        };
        if header.len() < 10 || payload.is_empty() {
            return false;
        }
        let Ok(bytes) =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(header.trim_end_matches('='))
        else {
            return false;
        };
        matches!(
            serde_json::from_slice::<Value>(&bytes),
            Ok(Value::Object(header)) if header.contains_key("alg")
        )
    })
}

/// Shannon entropy of `text` in bits per character.
pub fn entropy(text: &str) -> f64 {
    let mut counts: std::collections::HashMap<char, usize> = std::collections::HashMap::new();
    let mut total = 0usize;
    for c in text.chars() {
        *counts.entry(c).or_default() += 1;
        total += 1;
    }
    if total == 0 {
        return 0.0;
    }
    let n = total as f64;
    counts
        .values()
        .map(|&k| {
            let p = k as f64 / n;
            -p * p.log2()
        })
        .sum()
}

/// The first whitespace-separated word of `text` that is long and random enough to be a
/// credential under the policy.
fn high_entropy_word<'t>(policy: &TransitPolicy, text: &'t str) -> Option<&'t str> {
    text.split_whitespace().find(|word| {
        word.chars().count() >= policy.entropy_min_length
            && entropy(word) >= policy.entropy_bits_per_char
    })
}

fn describe(field: &str) -> String {
    format!("the answer to {field:?}")
}

/// Checks accepted form content before it is sent. Well-known token prefixes, PEM blocks and
/// JWT shapes anywhere; high-entropy strings in fields whose name/title/description look
/// secret-like (a sensitive term) or generic-token-like ([`TOKEN_LIKE_WORDS`]). Details name
/// the field and the kind of credential, never the answer.
pub fn check_answers(
    policy: &Policy,
    schema: &FormSchema,
    content: &Map<String, Value>,
) -> Assessment {
    let matcher = Matcher::new(&policy.form);
    let mut assessment = Assessment::allow();
    for (name, value) in content {
        let texts: Vec<&str> = match value {
            Value::String(text) => vec![text.as_str()],
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            _ => continue,
        };
        let field = schema.field(name);
        let secret_like = || {
            let title = field.and_then(|f| f.title.as_deref());
            let description = field.and_then(|f| f.description.as_deref());
            matcher.judge(name, title, description, None).is_some()
                || [Some(name.as_str()), title, description]
                    .into_iter()
                    .flatten()
                    .flat_map(words)
                    .any(|w| TOKEN_LIKE_WORDS.contains(&w.as_str()))
        };
        let mut seen = std::collections::HashSet::new();
        let mut push = |assessment: &mut Assessment, code: &'static str, detail: String| {
            if seen.insert(code) {
                assessment.push(reason(code, detail));
            }
        };
        for text in texts {
            if let Some(prefix) = find_token_prefix(&policy.transit, text) {
                push(
                    &mut assessment,
                    codes::SECRET_TOKEN_PREFIX,
                    format!(
                        "{} looks like a credential: it contains a token starting {prefix:?}",
                        describe(name)
                    ),
                );
            }
            if let Some(label) = find_pem_block(text) {
                push(
                    &mut assessment,
                    codes::SECRET_PEM_BLOCK,
                    format!("{} contains a PEM block ({label})", describe(name)),
                );
            }
            if find_jwt(text) {
                push(
                    &mut assessment,
                    codes::SECRET_JWT,
                    format!("{} contains a JSON Web Token", describe(name)),
                );
            }
            if high_entropy_word(&policy.transit, text).is_some() && secret_like() {
                push(
                    &mut assessment,
                    codes::SECRET_HIGH_ENTROPY,
                    format!(
                        "{} is a long random-looking string (at least {} bits per character) in a field that looks like it holds a secret",
                        describe(name),
                        policy.transit.entropy_bits_per_char
                    ),
                );
            }
        }
    }
    assessment
}
