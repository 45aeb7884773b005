//! How the gate shows a name in a denial (every odd character visible) and the look-alike fold
//! that explains, never allows. Apart from the gate so that the bundle's and the resources'
//! checks can quote names without importing the gate.

use std::fmt::Write as _;

/// Longest part of a name quoted in a detail; the full name stays in [`Denial::tool`].
const SHOWN_CHARS: usize = 128;

/// A name as people should read it: quoted with Rust's escapes, so NUL, zero-width and bidi
/// characters are visible; when printable non-ASCII remains, also as code points, because a
/// Cyrillic "о" prints just like "o".
pub(crate) fn shown(name: &str) -> String {
    let (head, total) = match name.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => (&name[..cut], Some(name.chars().count())),
        None => (name, None),
    };
    let quoted = format!("{head:?}");
    let mut out = quoted.clone();
    if !quoted.is_ascii() {
        out.push_str(" (as code points: ");
        for c in quoted.chars() {
            if c.is_ascii() {
                out.push(c);
            } else {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
        out.push(')');
    }
    if let Some(total) = total {
        let _ = write!(out, " (the first {SHOWN_CHARS} of {total} characters)");
    }
    out
}

/// Invisible format characters: zero-width, joiners, direction marks and overrides, word
/// joiner and invisible operators, isolates, byte-order mark, soft hyphen.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{FEFF}'
    )
}

/// Common Cyrillic and Greek letters (lower case) that print like a Latin letter.
fn homoglyph(c: char) -> char {
    match c {
        'а' | 'α' => 'a',
        'в' | 'β' => 'b',
        'с' => 'c',
        'ԁ' => 'd',
        'е' | 'ε' => 'e',
        'һ' | 'н' => 'h',
        'і' | 'ι' => 'i',
        'ј' => 'j',
        'к' | 'κ' => 'k',
        'ӏ' => 'l',
        'м' => 'm',
        'о' | 'ο' => 'o',
        'р' | 'ρ' => 'p',
        'ԛ' => 'q',
        'ѕ' => 's',
        'т' | 'τ' => 't',
        'υ' => 'u',
        'ν' => 'v',
        'ԝ' => 'w',
        'х' | 'χ' => 'x',
        'у' => 'y',
        other => other,
    }
}

/// The look-alike fold, used only to explain a denial, never to allow: drops invisible and
/// control characters, maps fullwidth ASCII to ASCII, lower-cases, maps common homoglyphs to
/// Latin, trims whitespace.
pub(crate) fn look_alike_fold(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if is_invisible(c) || c.is_control() {
            continue;
        }
        let c = match c {
            '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            '\u{3000}' => ' ',
            c => c,
        };
        out.extend(c.to_lowercase().map(homoglyph));
    }
    out.trim().to_string()
}
