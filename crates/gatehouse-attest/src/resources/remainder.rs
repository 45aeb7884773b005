//! The grammar of what may follow an allowed resource prefix (the *remainder*), and of a
//! prefix's own path.
//!
//! The host never decodes or normalizes a URI, but the server does, each in its own way: it
//! may cut the URI at `?` or `#` (or not), percent-decode once or repeatedly, decode overlong
//! UTF-8, apply Unicode normalization (NFKC turns `．` into `.` and `／` into `/`), read `\` as
//! a separator, trim trailing dots and spaces (Windows), drop characters it does not like,
//! drop `;params` (servlets) and resolve `.` and `..`. The grammar below is narrow enough that
//! none of these can step out of the prefix, so nothing has to be guessed about the server:
//!
//! - no `?` or `#` anywhere: a query or fragment never follows a prefix;
//! - one or more non-empty segments separated by single `/` (no leading `/`, no `//`; a
//!   trailing `/` is fine);
//! - literal characters: ASCII letters and digits, `-._~!$&'()*+,=@`, and `%` only as the
//!   start of a `%XX` escape (two hex digits);
//! - an escape never decodes to a control byte (0x00–0x1F, 0x7F), `/`, `\`, `.`, `%`, `?`,
//!   `#`, `:` or `;`;
//! - escapes of bytes 0x80 and above are decoded together per run and must be valid UTF-8,
//!   and each such character must be a letter or digit (`char::is_alphanumeric`) that NFKC
//!   leaves as it is;
//! - a segment with a `.` in it also has an ASCII letter or digit (after decoding), so no
//!   trimming or stripping of the other characters can leave `.` or `..` (this covers `.`,
//!   `..`, `...`, `..%20`, `.+.`, `.%C3%A9.`);
//! - the first segment has an ASCII letter or digit too, so no trimming or stripping can
//!   empty it and leave a path that starts with `/` (`%20/etc/passwd`, `-/etc/passwd`);
//! - no segment starts with `~` (or `%7E`), which `expanduser` reads as a home directory.
//!
//! A prefix's own path keeps to the same rules, except the last two: an admin wrote it, and
//! `https://example.com/~alice/` is an ordinary prefix.
//!
//! Everything here is pure.

use std::fmt;

use unicode_normalization::UnicodeNormalization;

/// Literal characters a remainder may hold besides ASCII letters and digits, `/` between
/// segments and `%` at the start of an escape.
pub const LITERAL_MARKS: &str = "-._~!$&'()*+,=@";

/// The remedy for a name the grammar can never take after a prefix.
const EXACT_ONLY: &str = "a name like this can only be allowed as an exact URI in allowedResources";

/// Why a remainder (or a prefix's path) could leave the prefix on some server's side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flaw {
    /// A `?` or `#`: a query or fragment after a prefix.
    QueryOrFragment(char),
    /// Nothing after the prefix.
    Empty,
    /// `//`, or a `/` right after the prefix.
    EmptySegment,
    /// A segment with a `.` and no ASCII letter or digit: `.`, `..`, `...`, `..%20`.
    DotSegment(String),
    /// A first segment without an ASCII letter or digit: `%20`, `-`, `+`.
    HollowFirstSegment(String),
    /// A segment that starts with `~`, literal or encoded.
    Tilde(String),
    /// A character written as itself that may not be.
    Literal(char),
    /// A `%` not followed by two hex digits.
    BadEscape(String),
    /// An escape of an ASCII byte that a server may read as syntax.
    EncodedByte { escape: String, byte: u8 },
    /// Escapes of bytes ≥ 0x80 that are not UTF-8 (overlong, cut short, surrogates).
    NotUtf8(String),
    /// Escapes that decode to a character that is not a letter or digit, or that NFKC
    /// changes.
    Character {
        escapes: String,
        c: char,
        nfkc: Option<String>,
    },
}

impl Flaw {
    /// What to do instead, for a URI that was read.
    pub fn remedy(&self) -> &'static str {
        match self {
            Flaw::QueryOrFragment(_) => {
                "read the URI without it, or have the exact URI listed in allowedResources"
            }
            Flaw::Empty => "list the exact URI in allowedResources",
            Flaw::EmptySegment => "remove the extra \"/\"",
            Flaw::DotSegment(_) => "name the resource by its own path, without dot steps",
            Flaw::HollowFirstSegment(_) | Flaw::Tilde(_) => EXACT_ONLY,
            Flaw::Literal(c) if !c.is_ascii() => {
                "percent-encode non-ASCII characters as UTF-8 (e.g. %C3%A9 for \u{e9})"
            }
            Flaw::Literal(c) if c.is_ascii_control() || *c == ' ' => {
                "percent-encode a space as %20; control characters are never allowed"
            }
            Flaw::Literal(':' | ';' | '\\') => EXACT_ONLY,
            Flaw::Literal(_) => "percent-encode it",
            Flaw::BadEscape(_)
            | Flaw::EncodedByte { .. }
            | Flaw::NotUtf8(_)
            | Flaw::Character { .. } => EXACT_ONLY,
        }
    }
}

impl fmt::Display for Flaw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Flaw::QueryOrFragment(c) => write!(
                f,
                "contains {:?}: a query or fragment never follows an allowed prefix, because a \
                 server may cut the URI there, or not, and resolve a path such as \
                 \"x?/../../secret\" either way",
                c.to_string()
            ),
            Flaw::Empty => f.write_str("is empty: a prefix covers what is below it, not itself"),
            Flaw::EmptySegment => f.write_str(
                "contains an empty path segment (\"//\", or a \"/\" right after the prefix), \
                 which a server may read as its root or collapse into another path",
            ),
            Flaw::DotSegment(segment) => write!(
                f,
                "has the path segment {segment:?}, a \".\" or \"..\" step or one a server can \
                 trim down to it (a segment with a \".\" needs an ASCII letter or digit)"
            ),
            Flaw::HollowFirstSegment(segment) => write!(
                f,
                "starts with the path segment {segment:?}, which has no ASCII letter or digit: \
                 a server that trims or strips the other characters is left with a path that \
                 starts with \"/\", which it may read from its root"
            ),
            Flaw::Tilde(segment) => write!(
                f,
                "has the path segment {segment:?}, which starts with \"~\", which a server that \
                 expands a home directory reads as one"
            ),
            Flaw::Literal(c) => {
                let what = match c {
                    ':' => "which a server may read as a Windows drive (\"C:\") or an NTFS stream",
                    ';' => {
                        "which servlet-style servers read as path parameters (\"..;/\" is \"../\")"
                    }
                    '\\' => "which Windows servers read as a path separator",
                    c if c.is_ascii_control() || *c == ' ' => "a space or control character",
                    c if !c.is_ascii() => "a non-ASCII character written as itself",
                    _ => {
                        "which is not allowed after a prefix (only ASCII letters, digits, \
                         -._~!$&'()*+,=@ and %XX escapes are)"
                    }
                };
                if c.is_ascii_graphic() {
                    write!(f, "contains {:?}, {what}", c.to_string())
                } else {
                    write!(
                        f,
                        "contains {:?} ({}), {what}",
                        c.to_string(),
                        code_point(*c)
                    )
                }
            }
            Flaw::BadEscape(text) => write!(
                f,
                "contains {text:?}, a \"%\" not followed by two hex digits, which decoders read \
                 in different ways"
            ),
            Flaw::EncodedByte { escape, byte } => {
                let what = match byte {
                    b'.' => {
                        "an encoded \".\", which a server may decode into a path step (%2E%2E is \"..\")"
                    }
                    b'/' | b'\\' => {
                        "an encoded path separator, which a server may decode into a path step"
                    }
                    b'%' => {
                        "an encoded \"%\", which a server that decodes twice reads as another \
                         escape (%252E is %2E, then \".\")"
                    }
                    b'?' | b'#' => {
                        "an encoded query or fragment mark, which a server that decodes first \
                         cuts the path at"
                    }
                    b':' => {
                        "an encoded \":\", which a server may read as a Windows drive or an NTFS stream"
                    }
                    b';' => "an encoded \";\", which servlet-style servers read as path parameters",
                    _ => {
                        "an encoded control character, at which servers and file systems cut \
                         or which they strip"
                    }
                };
                write!(f, "contains {escape}, {what}")
            }
            Flaw::NotUtf8(escapes) => write!(
                f,
                "contains {escapes}, escapes that are not valid UTF-8 (a lenient decoder reads \
                 the overlong %C0%AE as \".\")"
            ),
            Flaw::Character { escapes, c, nfkc } => match nfkc {
                Some(nfkc) => write!(
                    f,
                    "contains {escapes}, which decodes to {:?} ({}), which Unicode \
                     normalization (NFKC) turns into {nfkc:?}",
                    c.to_string(),
                    code_point(*c)
                ),
                None => write!(
                    f,
                    "contains {escapes}, which decodes to {:?} ({}), not a letter or digit \
                     (look-alikes of \"/\", \"\\\" and \".\" become them on some servers)",
                    c.to_string(),
                    code_point(*c)
                ),
            },
        }
    }
}

fn code_point(c: char) -> String {
    format!("U+{:04X}", c as u32)
}

/// Where a path is checked: after a prefix, or as a prefix's own path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Remainder,
    Prefix,
}

/// Checks what follows an allowed prefix.
pub fn check(rest: &str) -> Result<(), Flaw> {
    if let Some(c) = rest.chars().find(|c| matches!(c, '?' | '#')) {
        return Err(Flaw::QueryOrFragment(c));
    }
    if rest.is_empty() {
        return Err(Flaw::Empty);
    }
    check_segments(rest, Place::Remainder)
}

/// Checks the start of a remainder that something will be appended to (a template's
/// literal start): empty is fine, otherwise as [`check`].
pub fn check_start(rest: &str) -> Result<(), Flaw> {
    if rest.is_empty() {
        return Ok(());
    }
    check(rest)
}

/// Checks a prefix's own path (without its leading `/`, with its trailing `/`): empty is
/// fine, and in a `file:` URI a first segment that is a drive (`C:`) is skipped.
pub fn check_prefix_path(path: &str, file_scheme: bool) -> Result<(), Flaw> {
    let path = match path.split_once('/') {
        Some((drive, rest)) if file_scheme && is_drive(drive) => rest,
        _ => path,
    };
    if let Some(c) = path.chars().find(|c| matches!(c, '?' | '#')) {
        return Err(Flaw::QueryOrFragment(c));
    }
    if path.is_empty() {
        return Ok(());
    }
    check_segments(path, Place::Prefix)
}

fn is_drive(segment: &str) -> bool {
    let bytes = segment.as_bytes();
    bytes.len() == 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

fn check_segments(rest: &str, place: Place) -> Result<(), Flaw> {
    if rest.starts_with('/') {
        return Err(Flaw::EmptySegment);
    }
    let body = rest.strip_suffix('/').unwrap_or(rest);
    for (n, segment) in body.split('/').enumerate() {
        check_segment(segment, place, n == 0)?;
    }
    Ok(())
}

fn check_segment(segment: &str, place: Place, first: bool) -> Result<(), Flaw> {
    if segment.is_empty() {
        return Err(Flaw::EmptySegment);
    }
    let bytes = segment.as_bytes();
    let mut has_dot = false;
    let mut has_ascii_alnum = false;
    let mut starts_with_tilde = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let start = i;
            let byte = escape_at(segment, i)?;
            i += 3;
            if byte < 0x80 {
                if refused_when_decoded(byte) {
                    return Err(Flaw::EncodedByte {
                        escape: segment[start..i].to_string(),
                        byte,
                    });
                }
                has_ascii_alnum |= byte.is_ascii_alphanumeric();
                starts_with_tilde |= start == 0 && byte == b'~';
                continue;
            }
            // A run of escapes of high bytes is decoded together: it must be UTF-8.
            let mut run = vec![byte];
            while i < bytes.len() && bytes[i] == b'%' {
                let next = escape_at(segment, i)?;
                if next < 0x80 {
                    break;
                }
                run.push(next);
                i += 3;
            }
            let escapes = &segment[start..i];
            let text = std::str::from_utf8(&run).map_err(|_| Flaw::NotUtf8(escapes.to_string()))?;
            for c in text.chars() {
                check_decoded_char(c, escapes)?;
            }
            continue;
        }
        if b.is_ascii_alphanumeric() {
            has_ascii_alnum = true;
        } else if b == b'.' {
            has_dot = true;
        } else if !(b.is_ascii() && LITERAL_MARKS.as_bytes().contains(&b)) {
            let c = segment[i..].chars().next().unwrap_or('\u{fffd}');
            return Err(Flaw::Literal(c));
        }
        starts_with_tilde |= i == 0 && b == b'~';
        i += 1;
    }
    if has_dot && !has_ascii_alnum {
        return Err(Flaw::DotSegment(segment.to_string()));
    }
    if place == Place::Remainder {
        if starts_with_tilde {
            return Err(Flaw::Tilde(segment.to_string()));
        }
        if first && !has_ascii_alnum {
            return Err(Flaw::HollowFirstSegment(segment.to_string()));
        }
    }
    Ok(())
}

/// The byte of the `%XX` escape at `at`.
fn escape_at(segment: &str, at: usize) -> Result<u8, Flaw> {
    let hex = segment.as_bytes().get(at + 1..at + 3);
    match hex {
        Some([h, l]) if h.is_ascii_hexdigit() && l.is_ascii_hexdigit() => {
            Ok((hex_value(*h) << 4) | hex_value(*l))
        }
        _ => {
            let end = segment[at..]
                .char_indices()
                .nth(3)
                .map_or(segment.len(), |(n, _)| at + n);
            Err(Flaw::BadEscape(segment[at..end].to_string()))
        }
    }
}

fn hex_value(digit: u8) -> u8 {
    match digit {
        b'0'..=b'9' => digit - b'0',
        b'a'..=b'f' => digit - b'a' + 10,
        _ => digit - b'A' + 10,
    }
}

/// ASCII bytes that may not be written as an escape.
fn refused_when_decoded(byte: u8) -> bool {
    byte < 0x20
        || byte == 0x7f
        || matches!(byte, b'/' | b'\\' | b'.' | b'%' | b'?' | b'#' | b':' | b';')
}

fn check_decoded_char(c: char, escapes: &str) -> Result<(), Flaw> {
    if !c.is_alphanumeric() {
        return Err(Flaw::Character {
            escapes: escapes.to_string(),
            c,
            nfkc: None,
        });
    }
    let mut buffer = [0u8; 4];
    let one: &str = c.encode_utf8(&mut buffer);
    let normalized: String = one.nfkc().collect();
    if normalized != one {
        return Err(Flaw::Character {
            escapes: escapes.to_string(),
            c,
            nfkc: Some(normalized),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flaws_name_their_rule() {
        let flaw = |rest: &str| check(rest).unwrap_err();
        assert_eq!(flaw("x?/../y"), Flaw::QueryOrFragment('?'));
        assert_eq!(flaw("x#y"), Flaw::QueryOrFragment('#'));
        assert_eq!(flaw(""), Flaw::Empty);
        assert_eq!(flaw("/x"), Flaw::EmptySegment);
        assert_eq!(flaw("a//b"), Flaw::EmptySegment);
        assert_eq!(flaw("a/../b"), Flaw::DotSegment("..".into()));
        assert_eq!(flaw("..%20/x"), Flaw::DotSegment("..%20".into()));
        assert_eq!(flaw(".+."), Flaw::DotSegment(".+.".into()));
        assert_eq!(flaw("%20/etc"), Flaw::HollowFirstSegment("%20".into()));
        assert_eq!(flaw("-/etc"), Flaw::HollowFirstSegment("-".into()));
        assert_eq!(flaw("~/x"), Flaw::Tilde("~".into()));
        assert_eq!(flaw("a/~root/x"), Flaw::Tilde("~root".into()));
        assert_eq!(flaw("%7Eroot/x"), Flaw::Tilde("%7Eroot".into()));
        // Only the first segment needs a letter or digit; later ones may be anything else.
        assert_eq!(check("a/-/%E6%97%A5/x~y"), Ok(()));
        assert_eq!(flaw("a:b"), Flaw::Literal(':'));
        assert_eq!(flaw("caf\u{e9}"), Flaw::Literal('\u{e9}'));
        assert_eq!(flaw("a%2"), Flaw::BadEscape("%2".into()));
        assert_eq!(flaw("a%zz"), Flaw::BadEscape("%zz".into()));
        assert_eq!(flaw("a%\u{e9}x"), Flaw::BadEscape("%\u{e9}x".into()));
        assert_eq!(
            flaw("%2e%2e"),
            Flaw::EncodedByte {
                escape: "%2e".into(),
                byte: b'.'
            }
        );
        assert_eq!(flaw("%c0%ae"), Flaw::NotUtf8("%c0%ae".into()));
        assert_eq!(
            flaw("%EF%BC%8F"),
            Flaw::Character {
                escapes: "%EF%BC%8F".into(),
                c: '\u{ff0f}',
                nfkc: None
            }
        );
        // A letter that NFKC changes: the Kelvin sign is "K".
        assert_eq!(
            flaw("%E2%84%AA"),
            Flaw::Character {
                escapes: "%E2%84%AA".into(),
                c: '\u{212a}',
                nfkc: Some("K".into())
            }
        );
        for (rest, needle) in [
            ("x?/../y", "query or fragment"),
            ("%2E%2E/x", "%2E, an encoded \".\""),
            ("%252e", "decodes twice"),
            ("..;/x", "path parameters"),
            ("C:/Windows", "Windows drive"),
            ("%E2%80%A4%E2%80%A4", "U+2024"),
        ] {
            let text = flaw(rest).to_string();
            assert!(text.contains(needle), "{rest}: {text}");
        }
    }

    #[test]
    fn prefix_paths_may_be_empty_and_start_with_a_drive_in_file_uris() {
        assert_eq!(check_prefix_path("", false), Ok(()));
        assert_eq!(check_prefix_path("srv/docs/", true), Ok(()));
        assert_eq!(check_prefix_path("C:/docs/", true), Ok(()));
        assert_eq!(check_prefix_path("C:/", true), Ok(()));
        assert_eq!(
            check_prefix_path("C:/docs/", false),
            Err(Flaw::Literal(':'))
        );
        assert_eq!(
            check_prefix_path("docs/C:/x/", true),
            Err(Flaw::Literal(':'))
        );
        assert_eq!(check_prefix_path("/x/", true), Err(Flaw::EmptySegment));
        // Home directories and name-less first segments are fine in a prefix.
        assert_eq!(check_prefix_path("~alice/", false), Ok(()));
        assert_eq!(check_prefix_path("%E6%97%A5/", false), Ok(()));
        assert_eq!(
            check_prefix_path("a/../", false),
            Err(Flaw::DotSegment("..".into()))
        );
    }
}
