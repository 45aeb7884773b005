//! Registry name and version grammars, the same rules the bundle parser applies to bindings
//! (`gatehouse_attest::package`), so a config is read exactly as strictly as a binding is.

/// npm's rules for a new package name: lower case, URL-safe, at most 214 characters, an
/// optional `@scope/`, neither part starting with `.` or `_`.
pub(crate) fn is_npm_name(name: &str) -> bool {
    fn part(p: &str) -> bool {
        !p.is_empty()
            && !p.starts_with(['.', '_'])
            && p.bytes().all(|b| {
                b.is_ascii_lowercase()
                    || b.is_ascii_digit()
                    || matches!(b, b'-' | b'.' | b'_' | b'~')
            })
    }
    name.len() <= 214
        && match name.strip_prefix('@') {
            Some(scoped) => {
                matches!(scoped.split_once('/'), Some((scope, rest)) if part(scope) && part(rest))
            }
            None => part(name),
        }
}

/// PEP 508 project names, returned PEP 503-normalised (lower case, runs of `-_.` as one `-`).
pub(crate) fn normalize_pypi_name(name: &str) -> Option<String> {
    let valid = name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_alphanumeric());
    if !valid {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    let mut separator = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            separator = true;
        } else {
            if separator {
                out.push('-');
                separator = false;
            }
            out.push(c.to_ascii_lowercase());
        }
    }
    Some(out)
}

/// A `.mcpb` file name stem.
pub(crate) fn is_file_stem(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A console-script name as wheels declare them.
pub(crate) fn is_script_name(name: &str) -> bool {
    name.len() <= 128
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn numeric(part: &str) -> bool {
    !part.is_empty()
        && part.bytes().all(|b| b.is_ascii_digit())
        && (part == "0" || !part.starts_with('0'))
}

/// SemVer 2.0 exactly: `MAJOR.MINOR.PATCH[-pre][+build]`.
pub(crate) fn is_semver(version: &str) -> bool {
    let (rest, build) = match version.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (version, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (rest, None),
    };
    let ident =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| numeric(p))
        && pre.is_none_or(|p| {
            p.split('.')
                .all(|i| ident(i) && (!i.bytes().all(|b| b.is_ascii_digit()) || numeric(i)))
        })
        && build.is_none_or(|b| b.split('.').all(ident))
}

/// PEP 440 in its normalised form: `[N!]N(.N)*[{a|b|rc}N][.postN][.devN][+local]`.
pub(crate) fn is_pep440(version: &str) -> bool {
    let (public, local) = match version.split_once('+') {
        Some((p, l)) => (p, Some(l)),
        None => (version, None),
    };
    if local.is_some_and(|l| {
        !l.split('.').all(|s| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
    }) {
        return false;
    }
    let rest = match public.split_once('!') {
        Some((epoch, rest)) if numeric(epoch) => rest,
        Some(_) => return false,
        None => public,
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (rest, dev) = match rest.split_once(".dev") {
        Some((r, d)) => (r, Some(d)),
        None => (rest, None),
    };
    let (rest, post) = match rest.split_once(".post") {
        Some((r, p)) => (r, Some(p)),
        None => (rest, None),
    };
    if dev.is_some_and(|d| !digits(d)) || post.is_some_and(|p| !digits(p)) {
        return false;
    }
    let split = rest
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(rest.len());
    let (release, pre) = rest.split_at(split);
    let pre_ok = pre.is_empty()
        || ["rc", "a", "b"]
            .iter()
            .any(|tag| pre.strip_prefix(tag).is_some_and(digits));
    pre_ok && release.split('.').all(digits)
}

/// A Python identifier, ASCII only (nothing else may reach generated Python source).
pub(crate) fn is_identifier(s: &str) -> bool {
    s.bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// `a.b.c` of ASCII identifiers.
pub(crate) fn is_dotted(s: &str) -> bool {
    s.split('.').all(is_identifier)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammars_accept_the_registry_forms_and_refuse_look_alikes() {
        assert!(is_npm_name("@modelcontextprotocol/server-filesystem"));
        assert!(is_npm_name("left-pad"));
        for bad in ["Left-pad", "@scope", "@/x", ".x", "_x", "a b", "@s/x/y", ""] {
            assert!(!is_npm_name(bad), "{bad}");
        }
        assert_eq!(
            normalize_pypi_name("MCP_Server..time").as_deref(),
            Some("mcp-server-time")
        );
        for bad in ["-x", "x-", "a b", "x[cli]", "é", ""] {
            assert_eq!(normalize_pypi_name(bad), None, "{bad}");
        }
        assert!(is_semver("2026.8.31") && is_semver("1.0.0-beta.1+b.2"));
        for bad in ["1.2", "01.2.3", "v1.2.3", "1.2.3 ", "=1.2.3", ""] {
            assert!(!is_semver(bad), "{bad}");
        }
        assert!(is_pep440("2026.10.19") && is_pep440("1!2.0rc1.post1.dev2+local.7"));
        for bad in ["=1.0", "1.0RC1", "1.0 ", "", "v1"] {
            assert!(!is_pep440(bad), "{bad}");
        }
        assert!(is_dotted("a._b.c9") && !is_dotted("a..b") && !is_dotted("9a"));
        assert!(!is_identifier("é") && !is_identifier(""));
        assert!(is_script_name("mcp-server-time") && !is_script_name("-x"));
        assert!(is_file_stem("hello-world") && !is_file_stem(".x") && !is_file_stem(""));
    }
}
