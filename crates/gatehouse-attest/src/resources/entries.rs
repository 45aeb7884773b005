//! The checks of a bundle's resource entries (`allowedResources`, `allowedResourcePrefixes`)
//! and the URI length limit: what the bundle checks when it is parsed and what the gate and
//! URI templates bound, apart from [`super`] so the bundle and templates import them without
//! importing the gate.

use super::remainder;
use crate::names::shown;

/// Longest URI the gate considers (longer ones are refused, not truncated).
pub const MAX_URI_BYTES: usize = 8 * 1024;

/// Checks an `allowedResources` entry: an absolute URI (`scheme:` first) of printable ASCII.
pub fn check_exact_uri(uri: &str) -> Result<(), String> {
    if uri.len() > MAX_URI_BYTES {
        return Err(format!("a URI of {} bytes is over the limit", uri.len()));
    }
    if !has_scheme(uri) {
        return Err(format!(
            "{} is not an absolute URI (it must start with a scheme such as file: or https:)",
            shown(uri)
        ));
    }
    if let Some(c) = uri.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(format!(
            "{} contains {c:?}; URIs are listed as printable ASCII (percent-encode the rest)",
            shown(uri)
        ));
    }
    Ok(())
}

/// Checks an `allowedResourcePrefixes` entry: an absolute URI ending in `/`, without a query
/// or fragment, whose authority (if it has one) is plain and whose path follows the remainder
/// grammar ([`remainder`]) itself, so no prefix starts out with a step a server could take.
pub fn check_prefix(prefix: &str) -> Result<(), String> {
    check_exact_uri(prefix)?;
    if prefix.contains(['?', '#']) {
        return Err(format!(
            "the prefix {} has a query or fragment; a prefix is a path, and nothing after a \"?\" or \"#\" is ever covered",
            shown(prefix)
        ));
    }
    if !prefix.ends_with('/') {
        return Err(format!(
            "the prefix {} does not end in \"/\"; a prefix covers the URIs below a path, so \"demo://notes\" must be written \"demo://notes/\" (it would otherwise also cover \"demo://notes-private\")",
            shown(prefix)
        ));
    }
    let (scheme, after) = prefix.split_once(':').unwrap_or(("", prefix));
    let path = match after.strip_prefix("//") {
        Some(rest) => {
            // The authority runs to the first "/", which a prefix ending in "/" has.
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            if let Some(c) = authority.chars().find(|c| !is_authority_char(*c)) {
                return Err(format!(
                    "the prefix {} has {:?} in its authority ({}); an authority is a host \
                     name or address, with an optional user and port",
                    shown(prefix),
                    c.to_string(),
                    shown(authority)
                ));
            }
            path
        }
        None => after,
    };
    // "/srv/docs/" and "notes/" alike: the path's segments, with their trailing "/".
    let path = path.strip_prefix('/').unwrap_or(path);
    if let Err(flaw) = remainder::check_prefix_path(path, scheme.eq_ignore_ascii_case("file")) {
        return Err(format!(
            "the prefix {} {flaw}; write a prefix's path plainly: non-empty segments of ASCII \
             letters, digits, {} and %XX escapes of other characters",
            shown(prefix),
            remainder::LITERAL_MARKS
        ));
    }
    Ok(())
}

/// Characters of a prefix's authority: RFC 3986's unreserved and sub-delimiters, `:` before a
/// port, `@` after a user and `[` `]` around an IPv6 address; no `%` and no `\`.
fn is_authority_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=:@[]".contains(c)
}

fn has_scheme(uri: &str) -> bool {
    let Some((scheme, _)) = uri.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}
