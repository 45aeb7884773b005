//! Input fields that ask for a secret: by name (high) or only by description (medium). The
//! ideas follow the elicitation policy's sensitive-field detection (words split at case
//! humps and separators, look-alikes folded), with the terms fixed here.

/// Single words that are a secret.
const WORDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "secret",
    "token",
    "mnemonic",
    "cvv",
    "cvc",
    "otp",
    "totp",
    "apikey",
    "privatekey",
    "seedphrase",
    "sshkey",
    "creditcard",
];

/// Word pairs that are a secret.
const PAIRS: &[(&str, &str)] = &[
    ("api", "key"),
    ("private", "key"),
    ("seed", "phrase"),
    ("recovery", "phrase"),
    ("secret", "key"),
    ("ssh", "key"),
    ("credit", "card"),
    ("card", "number"),
    ("security", "code"),
];

/// A word after the term that makes the field about the secret rather than the secret
/// itself (`secretName`, `password_policy`, `token_count`, `ssh_key_path`).
const ABOUT: &[&str] = &[
    "name",
    "names",
    "id",
    "ids",
    "ref",
    "reference",
    "arn",
    "count",
    "counts",
    "limit",
    "limits",
    "budget",
    "usage",
    "length",
    "type",
    "kind",
    "policy",
    "strength",
    "expiry",
    "expires",
    "expiration",
    "ttl",
    "required",
    "enabled",
    "changed",
    "field",
    "fields",
    "path",
    "file",
    "hint",
    "label",
    "provider",
    "store",
    "manager",
    "version",
];

/// A word before "token" that makes it not a credential (`page_token`, `max_tokens`).
const NOT_A_CREDENTIAL_TOKEN: &[&str] = &[
    "page",
    "next",
    "prev",
    "previous",
    "continuation",
    "pagination",
    "cursor",
    "max",
    "min",
    "num",
    "sync",
    "start",
    "end",
    "resume",
    "output",
    "input",
    "completion",
    "prompt",
];

/// Lower-case words of `text`, split at separators, case humps and letter/digit changes, and
/// with invisible characters and compatibility forms folded first.
pub(crate) fn words(text: &str) -> Vec<String> {
    use unicode_normalization::UnicodeNormalization;
    #[derive(Clone, Copy, PartialEq)]
    enum Class {
        Upper,
        Lower,
        Digit,
    }
    let class = |c: char| {
        if c.is_numeric() {
            Some(Class::Digit)
        } else if c.is_uppercase() {
            Some(Class::Upper)
        } else if c.is_alphabetic() {
            Some(Class::Lower)
        } else {
            None
        }
    };
    let chars: Vec<char> = text.nfkc().filter(|&c| !crate::is_invisible(c)).collect();
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous: Option<Class> = None;
    for (i, &c) in chars.iter().enumerate() {
        let Some(this) = class(c) else {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous = None;
            continue;
        };
        let next = chars.get(i + 1).copied().and_then(class);
        let split = match (previous, this) {
            (Some(Class::Lower), Class::Upper) => true,
            (Some(Class::Upper), Class::Upper) => next == Some(Class::Lower),
            (Some(Class::Digit), Class::Upper | Class::Lower) => true,
            (Some(Class::Upper | Class::Lower), Class::Digit) => true,
            _ => false,
        };
        if split && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        current.extend(c.to_lowercase());
        previous = Some(this);
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// The secret term `words` name, if any (e.g. "api key").
pub(crate) fn secret_term(words: &[String]) -> Option<String> {
    let about = |i: usize| words.get(i).is_some_and(|w| ABOUT.contains(&w.as_str()));
    for (i, word) in words.iter().enumerate() {
        if let Some(pair) = PAIRS
            .iter()
            .find(|(a, b)| word == a && words.get(i + 1).is_some_and(|w| w == b))
            && !about(i + 2)
        {
            return Some(format!("{} {}", pair.0, pair.1));
        }
        if WORDS.contains(&word.as_str()) && !about(i + 1) {
            if word == "token" && i > 0 && NOT_A_CREDENTIAL_TOKEN.contains(&words[i - 1].as_str()) {
                continue;
            }
            return Some(word.clone());
        }
    }
    None
}

/// Whether a description says the field is a pagination cursor (then "token" is no secret).
pub(crate) fn is_pagination(words: &[String]) -> bool {
    words.iter().any(|w| {
        matches!(
            w.as_str(),
            "cursor" | "pagination" | "paginate" | "page" | "pages"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(text: &str) -> Option<String> {
        secret_term(&words(text))
    }

    #[test]
    fn names_split_at_humps_and_separators() {
        assert_eq!(words("apiKey"), ["api", "key"]);
        assert_eq!(words("APIKey"), ["api", "key"]);
        assert_eq!(words("seed-phrase_2"), ["seed", "phrase", "2"]);
        assert_eq!(words("pass\u{200B}word"), ["password"]);
    }

    #[test]
    fn secret_terms_fire() {
        for (text, expected) in [
            ("password", "password"),
            ("apiKey", "api key"),
            ("PRIVATE_KEY", "private key"),
            ("seedPhrase", "seed phrase"),
            ("auth_token", "token"),
            ("ssh-key", "ssh key"),
            ("creditCardNumber", "credit card"),
            ("cvv", "cvv"),
            ("otp_code", "otp"),
            ("mnemonic", "mnemonic"),
            ("ＰＡＳＳＷＯＲＤ", "password"),
        ] {
            assert_eq!(term(text).as_deref(), Some(expected), "{text}");
        }
    }

    #[test]
    fn near_misses_do_not_fire() {
        for text in [
            "pageToken",
            "next_page_token",
            "maxTokens",
            "max_tokens",
            "tokens",
            "secretName",
            "password_policy",
            "ssh_key_path",
            "key",
            "keyword",
            "passage",
            "cursor",
            "token_count",
        ] {
            assert_eq!(term(text), None, "{text}");
        }
    }
}
