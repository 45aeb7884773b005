//! Text as the rules read it: invisible characters classified and escaped, text folded for
//! matching, excerpts clipped.

use std::borrow::Cow;

/// Why a code point is invisible; the order is the order of concern (the first class found
/// names the finding's sub-id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum InvisibleClass {
    /// U+E0000–E007F: each one an ASCII character the reader cannot see.
    Tag,
    /// Bidi embeddings, overrides and isolates, and the Arabic letter mark.
    Bidi,
    /// Zero-width spaces and joiners, word joiner, invisible operators, BOM.
    ZeroWidth,
    /// U+FE00–FE0F and U+E0100–E01EF.
    VariationSelector,
    /// Soft hyphen, Mongolian vowel separator, fillers and the other default-ignorables.
    Other,
}

impl InvisibleClass {
    pub(crate) fn code(self) -> &'static str {
        match self {
            InvisibleClass::Tag => "tags",
            InvisibleClass::Bidi => "bidi",
            InvisibleClass::ZeroWidth => "zero_width",
            InvisibleClass::VariationSelector => "variation_selector",
            InvisibleClass::Other => "other_invisible",
        }
    }
}

/// The class of an invisible or direction-changing code point; `None` for visible ones.
pub(crate) fn invisible_class(c: char) -> Option<InvisibleClass> {
    Some(match c {
        '\u{E0000}'..='\u{E007F}' => InvisibleClass::Tag,
        '\u{202A}'..='\u{202E}'
        | '\u{2066}'..='\u{2069}'
        | '\u{061C}'
        | '\u{200E}'
        | '\u{200F}' => InvisibleClass::Bidi,
        '\u{200B}'..='\u{200D}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}' => InvisibleClass::ZeroWidth,
        '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}' => InvisibleClass::VariationSelector,
        '\u{00AD}'
        | '\u{034F}'
        | '\u{115F}'
        | '\u{1160}'
        | '\u{17B4}'
        | '\u{17B5}'
        | '\u{180B}'..='\u{180F}'
        | '\u{2065}'
        | '\u{206A}'..='\u{206F}'
        | '\u{3164}'
        | '\u{FFA0}'
        | '\u{FFF0}'..='\u{FFF8}'
        | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}'
        | '\u{E0080}'..='\u{E00FF}'
        | '\u{E01F0}'..='\u{E0FFF}' => InvisibleClass::Other,
        _ => return None,
    })
}

pub(crate) fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(crate::is_invisible) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if crate::is_invisible(c) {
            out.push_str(&format!("\\u{{{:04X}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The ASCII that Unicode tag characters in `text` spell (U+E0020–E007E map to ' '–'~');
/// empty when there are none.
pub(crate) fn decode_tags(text: &str) -> String {
    text.chars()
        .filter_map(|c| match c {
            '\u{E0020}'..='\u{E007E}' => char::from_u32(c as u32 - 0xE0000),
            _ => None,
        })
        .collect()
}

/// Text as the rules match it: compatibility forms unfolded (NFKC: full-width, mathematical
/// letters, ligatures), lower-case, invisible characters removed (so `ig\u{200B}nore` is
/// "ignore"), typographic quotes made ASCII, whitespace runs one space.
pub(crate) fn fold(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let mut out = String::with_capacity(text.len());
    let mut space = true;
    for c in text.nfkc().flat_map(char::to_lowercase) {
        if crate::is_invisible(c) {
            continue;
        }
        let c = match c {
            '\u{2018}' | '\u{2019}' | '\u{201B}' | '\u{2032}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201F}' | '\u{2033}' => '"',
            c => c,
        };
        if c.is_whitespace() {
            if !space {
                out.push(' ');
            }
            space = true;
        } else {
            out.push(c);
            space = false;
        }
    }
    if out.ends_with(' ') {
        out.pop();
    }
    out
}

/// At most `max_bytes` of `text`, cut at a character boundary.
pub(crate) fn cap(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `text` cut to at most `max` characters, "…" marking the cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The escaped text around byte range `start..end` of `text`, at most `max` characters, with
/// "…" where text was left out on either side.
pub(crate) fn window(text: &str, start: usize, end: usize, max: usize) -> String {
    let matched = escape(&text[start..end]).into_owned();
    let matched_len = matched.chars().count();
    if matched_len >= max {
        return clip(&matched, max);
    }
    // Context is shared between both sides; a "…" marker takes one character on each.
    let room = max - matched_len;
    let side = room.saturating_sub(2) / 2;
    let lead_chars: Vec<char> = escape(&text[..start]).chars().collect();
    let lead_cut = lead_chars.len() > side;
    let lead: String = lead_chars[lead_chars.len().saturating_sub(side)..]
        .iter()
        .collect();
    let trail_room = room.saturating_sub(lead.chars().count() + 2);
    let trail_full = escape(&text[end..]);
    let trail: String = trail_full.chars().take(trail_room).collect();
    let trail_cut = trail.len() < trail_full.len();
    let mut out = String::new();
    if lead_cut {
        out.push('…');
    }
    out.push_str(&lead);
    out.push_str(&matched);
    out.push_str(&trail);
    if trail_cut {
        out.push('…');
    }
    clip(&out, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold_removes_invisibles_and_unfolds_compatibility_forms() {
        assert_eq!(
            fold("Ig\u{200B}nore  ＰＲＥＶＩＯＵＳ\n instructions "),
            "ignore previous instructions"
        );
        assert_eq!(fold("Don\u{2019}t"), "don't");
        assert_eq!(fold("plain text"), "plain text");
    }

    #[test]
    fn tags_decode_to_ascii() {
        let smuggled: String = "hi!"
            .chars()
            .map(|c| char::from_u32(c as u32 + 0xE0000).unwrap_or(c))
            .collect();
        assert_eq!(decode_tags(&format!("visible{smuggled}")), "hi!");
        assert_eq!(decode_tags("no tags here"), "");
    }

    #[test]
    fn cap_and_clip_respect_character_boundaries() {
        assert_eq!(cap("ééé", 3), "é");
        assert_eq!(cap("abc", 10), "abc");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abc", 4), "abc");
    }

    #[test]
    fn window_keeps_the_match_and_marks_cuts() {
        let text = format!("{}MATCH{}", "a".repeat(200), "b".repeat(200));
        let w = window(&text, 200, 205, 40);
        assert!(w.contains("MATCH"), "{w}");
        assert!(w.starts_with('…') && w.ends_with('…'), "{w}");
        assert!(w.chars().count() <= 40, "{w}");
        assert_eq!(window("short MATCH end", 6, 11, 120), "short MATCH end");
    }
}
