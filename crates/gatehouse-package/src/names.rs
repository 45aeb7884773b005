//! Registry name and version grammars: the bundle parser's own (`gatehouse_attest::package`),
//! so a config is read exactly as strictly as a binding is, plus the Python names only a
//! config or a console-script entry uses.

pub(crate) use gatehouse_attest::package::{
    is_file_stem, is_pep440, is_semver, normalize_pypi_name,
};

/// npm's rules for a new package name (the bundle parser's own).
pub(crate) fn is_npm_name(name: &str) -> bool {
    gatehouse_attest::package::check_npm_name(name).is_ok()
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
