//! Text as sensitive-term matching reads it: split into words, look-alikes folded (compatibility
//! forms, accents, invisible characters, digit-for-letter spellings, UTS #39 skeletons).

/// Splits text into lowercase words at every separator (anything not a letter or digit), at
/// camelCase humps (`apiKey`, `APIKey`), and between letters and digits (`cvv2`, `2fa`).
pub(crate) fn words(text: &str) -> Vec<String> {
    #[derive(Clone, Copy, PartialEq)]
    enum Class {
        Upper,
        Lower,
        Digit,
    }
    let text = fold(text);
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
    let chars: Vec<char> = text.chars().collect();
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous: Option<Class> = None;
    for (i, &c) in chars.iter().enumerate() {
        // Scripts written without spaces: each character is a word, so a term spelled in
        // them ("密码") is found as a run inside a sentence ("请输入密码").
        if is_unspaced(c) {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            words.push(c.to_string());
            previous = None;
            continue;
        }
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

/// Text as matching sees it: compatibility forms unfolded (NFKD: full-width `ｐ４ｓｓ`,
/// mathematical `𝐩𝐚𝐬𝐬`, ligatures), accents and other combining marks dropped (`pássword`),
/// and invisible characters removed rather than read as separators (`pass\u{200B}word`,
/// soft hyphens, variation selectors), so they neither split nor hide a word.
pub(crate) fn fold(text: &str) -> String {
    use unicode_normalization::{UnicodeNormalization, char::is_combining_mark};
    text.nfkd()
        .filter(|&c| !is_combining_mark(c) && !is_invisible(c))
        .collect()
}

/// Unicode's default-ignorable code points: drawn as nothing.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{FFF0}'..='\u{FFF8}' | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E0FFF}')
}

/// Han ideographs and kana, written without spaces between words.
fn is_unspaced(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30FF}' | '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}'
        | '\u{F900}'..='\u{FAFF}' | '\u{20000}'..='\u{2FA1F}')
}

pub(super) fn skeleton(text: &str) -> String {
    unicode_security::skeleton(text)
        .flat_map(char::to_lowercase)
        .collect()
}

/// `text` with digit-for-letter substitutions read as letters (0→o, 1→i, 3→e, 4→a, 5→s,
/// 7→t, @→a, $→s) inside runs that also hold letters; `None` when nothing changes.
pub(crate) fn deleet(text: &str) -> Option<String> {
    let leet = |c: char| match c {
        '0' => Some('o'),
        '1' => Some('i'),
        '3' => Some('e'),
        '4' => Some('a'),
        '5' => Some('s'),
        '7' => Some('t'),
        '@' => Some('a'),
        '$' => Some('s'),
        _ => None,
    };
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut i = 0;
    while i < chars.len() {
        let in_run = |c: char| c.is_ascii_alphanumeric() || c == '@' || c == '$';
        if !in_run(chars[i]) {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && in_run(chars[i]) {
            i += 1;
        }
        let run = &chars[start..i];
        let has_letter = run.iter().any(|c| c.is_ascii_alphabetic());
        for &c in run {
            match leet(c).filter(|_| has_letter) {
                Some(letter) => {
                    out.push(letter);
                    changed = true;
                }
                None => out.push(c),
            }
        }
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_every_style() {
        let cases: &[(&str, &[&str])] = &[
            ("apiKey", &["api", "key"]),
            ("APIKey", &["api", "key"]),
            ("API_KEY", &["api", "key"]),
            ("x-api-key", &["x", "api", "key"]),
            ("client.secret", &["client", "secret"]),
            ("Pass Phrase", &["pass", "phrase"]),
            ("cvv2", &["cvv", "2"]),
            ("2faCode", &["2", "fa", "code"]),
            ("oneTimeCode", &["one", "time", "code"]),
            ("OAuth2Token", &["o", "auth", "2", "token"]),
            ("PASSWORD", &["password"]),
            ("  ", &[]),
        ];
        for (text, expected) in cases {
            assert_eq!(words(text), *expected, "{text}");
        }
    }
}
