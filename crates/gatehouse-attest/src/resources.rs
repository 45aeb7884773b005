//! Resource authorization: decides whether a `resources/read` (or a subscription) for a URI may
//! leave the host.
//!
//! A bundle entry grants resources two ways (specVersion 2):
//! - `allowedResources`: exact URIs, compared byte for byte like tool names (no case folding,
//!   no percent-decoding, no normalization); an exact URI may hold a query;
//! - `allowedResourcePrefixes`: prefixes that end in `/`. A URI is under a prefix when it starts
//!   with the prefix's exact bytes and the rest (the *remainder*) keeps to a grammar narrow
//!   enough that no server, however it decodes, normalizes or splits a URI, can resolve it
//!   outside the prefix ([`remainder`]): no `?` or `#` at all (a query or fragment never
//!   follows a prefix); non-empty segments between single `/`; literally only ASCII letters,
//!   digits and `-._~!$&'()*+,=@`, and `%XX` escapes; no escape of a control byte, `/`, `\`,
//!   `.`, `%`, `?`, `#`, `:` or `;`; escapes of other bytes only as UTF-8 of letters and digits
//!   that NFKC leaves alone; a segment with a `.`, and the first segment, also have an ASCII
//!   letter or digit; no segment starts with `~`. A URI that starts with an allowed prefix but
//!   breaks the grammar is refused as `resource_uri_refused`, the detail naming the rule and
//!   what to do, never normalized into the prefix, because the server, not the host, decides
//!   what `..`, `%2e` or `．` means on its side. A prefix's own path keeps to the same
//!   grammar but for the first-segment and `~` rules (its authority, such as
//!   `example.com:8443`, is checked apart, and a `file:` prefix may start with a drive,
//!   `file:///C:/docs/`).
//!
//! Templates (`resources/templates/list`) are shown as allowed when their literal start lies
//! under an allowed prefix and nothing in them always adds a query, a fragment or path
//! parameters, but that is display only: every read is checked on the expanded URI
//! ([`crate::uri_template`]), so a template that expands to another scheme or server is
//! refused like any other URI. [`ResourcePermit`] can only be minted by [`ResourceGate::check`].
//! Pure: nothing here reads the network, the disk or a clock.

pub mod entries;
pub mod remainder;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

pub use self::entries::{MAX_URI_BYTES, check_exact_uri, check_prefix};
use crate::bundle::ServerPolicy;
use crate::gate::{Denial, GateReason, Scope};
use crate::names::{look_alike_fold, shown};

/// A resource allow-list: exact URIs and prefixes, each with where it came from.
#[derive(Debug, Clone, Default)]
pub struct ResourceAllowList {
    exact: BTreeMap<String, Arc<Scope>>,
    prefixes: BTreeMap<String, Arc<Scope>>,
}

impl ResourceAllowList {
    pub fn new() -> Self {
        Self::default()
    }

    /// What a bundle's server policy grants (entries already checked when it was parsed;
    /// checked again here so a hand-built policy cannot widen anything).
    pub fn from_policy(
        policy: &ServerPolicy,
        bundle_label: &str,
    ) -> Result<ResourceAllowList, String> {
        let mut list = ResourceAllowList::new();
        for uri in &policy.allowed_resources {
            list.allow_uri(uri, Scope::Bundle(bundle_label.to_string()))?;
        }
        for prefix in &policy.allowed_resource_prefixes {
            list.allow_prefix(prefix, Scope::Bundle(bundle_label.to_string()))?;
        }
        Ok(list)
    }

    /// Allows one exact URI (a later entry for the same URI replaces the earlier).
    pub fn allow_uri(&mut self, uri: &str, scope: Scope) -> Result<(), String> {
        check_exact_uri(uri)?;
        self.exact.insert(uri.to_string(), Arc::new(scope));
        Ok(())
    }

    /// Allows every URI under `prefix` whose remainder keeps to the grammar of [`remainder`].
    pub fn allow_prefix(&mut self, prefix: &str, scope: Scope) -> Result<(), String> {
        check_prefix(prefix)?;
        self.prefixes.insert(prefix.to_string(), Arc::new(scope));
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.prefixes.is_empty()
    }

    /// The exact URIs, in byte order.
    pub fn uris(&self) -> impl Iterator<Item = &str> {
        self.exact.keys().map(String::as_str)
    }

    /// The prefixes, in byte order.
    pub fn prefixes(&self) -> impl Iterator<Item = &str> {
        self.prefixes.keys().map(String::as_str)
    }
}

/// Proof that the gate let this exact URI through. Only [`ResourceGate::check`] makes one.
///
/// ```compile_fail
/// let forged = gatehouse_attest::resources::ResourcePermit { uri: "demo://x".into(), scope: std::sync::Arc::new(gatehouse_attest::gate::Scope::User), prefix: None };
/// ```
///
/// ```compile_fail
/// fn twice(p: &gatehouse_attest::resources::ResourcePermit) -> gatehouse_attest::resources::ResourcePermit { p.clone() }
/// ```
#[derive(Debug)]
#[must_use]
pub struct ResourcePermit {
    uri: String,
    scope: Arc<Scope>,
    prefix: Option<String>,
}

impl ResourcePermit {
    /// The allowed URI (byte-equal to the requested one).
    pub fn uri(&self) -> &str {
        &self.uri
    }
    pub fn scope(&self) -> &Scope {
        &self.scope
    }
    /// The prefix that allowed it; `None` for an exact entry.
    pub fn prefix(&self) -> Option<&str> {
        self.prefix.as_deref()
    }
}

/// How a listed resource or template is classified for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceStatus {
    Allowed,
    /// Not on the allow-list: not readable; shown to developers with the reason.
    Hidden(GateReason),
}

/// The per-server resource gate.
#[derive(Debug, Clone, Default)]
pub struct ResourceGate {
    allow: ResourceAllowList,
}

impl ResourceGate {
    pub fn new(allow: ResourceAllowList) -> Self {
        ResourceGate { allow }
    }

    pub fn allow_list(&self) -> &ResourceAllowList {
        &self.allow
    }

    /// The per-read check: an exact entry, else the longest prefix the URI starts with, whose
    /// remainder must keep to the grammar of [`remainder`]. Nothing is decoded or normalized.
    pub fn check(&self, uri: &str) -> Result<ResourcePermit, Denial> {
        let deny = |reason: GateReason, detail: String| Denial {
            reason,
            tool: uri.to_string(),
            detail,
        };
        if uri.len() > MAX_URI_BYTES {
            return Err(deny(
                GateReason::ResourceNotAdmitted,
                format!(
                    "the URI is {} bytes long; the gate considers at most {MAX_URI_BYTES}",
                    uri.len()
                ),
            ));
        }
        if let Some(scope) = self.allow.exact.get(uri) {
            return Ok(ResourcePermit {
                uri: uri.to_string(),
                scope: Arc::clone(scope),
                prefix: None,
            });
        }
        // Longest first, so the most specific entry's scope is the one recorded.
        let under = self
            .allow
            .prefixes
            .iter()
            .filter(|(prefix, _)| uri.len() > prefix.len() && uri.starts_with(prefix.as_str()))
            .max_by_key(|(prefix, _)| prefix.len());
        if let Some((prefix, scope)) = under {
            return match remainder::check(&uri[prefix.len()..]) {
                Ok(()) => Ok(ResourcePermit {
                    uri: uri.to_string(),
                    scope: Arc::clone(scope),
                    prefix: Some(prefix.clone()),
                }),
                Err(flaw) => Err(deny(
                    GateReason::ResourceUriRefused,
                    format!(
                        "the URI {} starts with the allowed prefix {} but the rest {flaw}; {}. \
                         Gatehouse never normalizes a URI: it refuses one that some server \
                         could resolve outside the prefix",
                        shown(uri),
                        shown(prefix),
                        flaw.remedy()
                    ),
                )),
            };
        }
        let mut detail = format!(
            "the resource {} is not on this server's resource allow-list",
            shown(uri)
        );
        if let Some(near) = self.look_alike_of(uri) {
            let _ = write!(
                detail,
                "; it differs from the allowed {} only by look-alike characters or case; URIs \
                 are compared byte for byte",
                shown(near)
            );
        }
        Err(deny(GateReason::ResourceNotAdmitted, detail))
    }

    /// Classification of a listed resource URI.
    pub fn status(&self, uri: &str) -> ResourceStatus {
        match self.check(uri) {
            Ok(_) => ResourceStatus::Allowed,
            Err(denial) => ResourceStatus::Hidden(denial.reason),
        }
    }

    /// Classification of a listed URI template (display only: reads are checked on the
    /// expanded URI). Shown as allowed when its literal start lies under an allowed prefix with
    /// a remainder that keeps to the grammar, and nothing in it always adds what the grammar
    /// refuses: a literal `?` or `#`, or a `{?x}`, `{&x}`, `{#x}` or `{;x}` expression, whose
    /// reads would all be refused.
    pub fn template_status(&self, template: &str) -> ResourceStatus {
        let hidden = ResourceStatus::Hidden(GateReason::ResourceNotAdmitted);
        let Ok(parsed) = crate::uri_template::Template::parse(template) else {
            return hidden;
        };
        if parsed.literals().any(|text| text.contains(['?', '#']))
            || parsed
                .operators()
                .any(|operator| matches!(operator, '?' | '&' | '#' | ';'))
        {
            return hidden;
        }
        let literal = crate::uri_template::literal_prefix(template);
        let covered = self.allow.prefixes.keys().any(|prefix| {
            literal.starts_with(prefix.as_str())
                && remainder::check_start(&literal[prefix.len()..]).is_ok()
        });
        if covered {
            ResourceStatus::Allowed
        } else {
            hidden
        }
    }

    /// An allowed URI or prefix equal to `uri` (or to its start) after the look-alike fold,
    /// for denial details only.
    fn look_alike_of(&self, uri: &str) -> Option<&str> {
        let folded = look_alike_fold(uri);
        if folded.is_empty() {
            return None;
        }
        self.allow
            .exact
            .keys()
            .find(|allowed| look_alike_fold(allowed) == folded)
            .or_else(|| {
                self.allow
                    .prefixes
                    .keys()
                    .find(|prefix| folded.starts_with(&look_alike_fold(prefix)))
            })
            .map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> ResourceGate {
        let mut list = ResourceAllowList::new();
        let scope = || Scope::Bundle("acme@1".into());
        list.allow_uri("demo://docs/welcome.txt", scope()).unwrap();
        list.allow_prefix("demo://notes/", scope()).unwrap();
        list.allow_prefix("file:///srv/docs/", scope()).unwrap();
        ResourceGate::new(list)
    }

    #[test]
    fn exact_uris_match_byte_for_byte_only() {
        let gate = gate();
        let permit = gate.check("demo://docs/welcome.txt").unwrap();
        assert_eq!(permit.uri(), "demo://docs/welcome.txt");
        assert_eq!(permit.prefix(), None);
        assert_eq!(permit.scope().label(), "bundle:acme@1");
        for other in [
            "demo://docs/Welcome.txt",
            "DEMO://docs/welcome.txt",
            "demo://docs/welcome.txt ",
            "demo://docs/welcome.txt?x=1",
            "demo://docs/welcome%2Etxt",
            "demo://docs/wеlcome.txt", // Cyrillic е
            "demo://docs/welcome.tx",
            "demo://docs/",
        ] {
            let denial = gate.check(other).unwrap_err();
            assert_eq!(denial.reason, GateReason::ResourceNotAdmitted, "{other:?}");
            assert_eq!(denial.tool, other);
        }
        let near = gate.check("demo://docs/wеlcome.txt").unwrap_err();
        assert!(near.detail.contains("look-alike"), "{}", near.detail);
    }

    #[test]
    fn a_prefix_covers_plain_paths_below_it_and_nothing_that_could_leave_it() {
        let gate = gate();
        for inside in [
            "demo://notes/groceries",
            "demo://notes/2026/todo.txt",
            "demo://notes/a%20b",
            "file:///srv/docs/readme.md",
        ] {
            let permit = gate
                .check(inside)
                .unwrap_or_else(|d| panic!("{inside}: {d}"));
            assert!(permit.prefix().is_some());
        }
        for escaping in [
            "demo://notes/../secrets",
            "demo://notes/a/../../b",
            "demo://notes/./x",
            "demo://notes/..",
            "demo://notes/%2e%2e/secrets",
            "demo://notes/%2E%2E/secrets",
            "demo://notes/a%2fb",
            "demo://notes/a%5Cb",
            "demo://notes/a\\b",
            "demo://notes//etc/passwd",
            "demo://notes/a b",
            "demo://notes/a\nb",
            "demo://notes/x#frag",
            "demo://notes/search?q=x",
            "file:///srv/docs/../../etc/passwd",
        ] {
            let denial = gate.check(escaping).unwrap_err();
            assert_eq!(
                denial.reason,
                GateReason::ResourceUriRefused,
                "{escaping:?}: {}",
                denial.detail
            );
        }
        for outside in [
            "demo://notes",
            "demo://notes/",
            "demo://notes-private/x",
            "demo://Notes/x",
            "other://notes/x",
            "https://evil.example/demo://notes/x",
            "file:///srv/docs-old/x",
            "file:///etc/passwd",
        ] {
            let denial = gate.check(outside).unwrap_err();
            assert_eq!(
                denial.reason,
                GateReason::ResourceNotAdmitted,
                "{outside:?}"
            );
        }
        let huge = format!("demo://notes/{}", "a".repeat(MAX_URI_BYTES));
        assert_eq!(
            gate.check(&huge).unwrap_err().reason,
            GateReason::ResourceNotAdmitted
        );
    }

    #[test]
    fn the_longest_prefix_decides_the_scope() {
        let mut list = ResourceAllowList::new();
        list.allow_prefix("demo://a/", Scope::Bundle("b@1".into()))
            .unwrap();
        list.allow_prefix("demo://a/b/", Scope::User).unwrap();
        let gate = ResourceGate::new(list);
        let permit = gate.check("demo://a/b/c").unwrap();
        assert_eq!(permit.prefix(), Some("demo://a/b/"));
        assert_eq!(permit.scope(), &Scope::User);
        assert_eq!(
            gate.check("demo://a/x").unwrap().scope().label(),
            "bundle:b@1"
        );
    }

    #[test]
    fn entries_are_checked_when_allowed() {
        assert!(check_exact_uri("demo://x").is_ok());
        assert!(check_exact_uri("https://example.com/a?b=c").is_ok());
        for bad in [
            "",
            "no-scheme",
            "/abs/path",
            "demo://a b",
            "1demo://x",
            "demo://é",
        ] {
            assert!(check_exact_uri(bad).is_err(), "{bad:?}");
        }
        for good in [
            "demo://notes/",
            "demo:notes/",
            "file:///srv/",
            "file:///srv/docs/",
            "file:///C:/Users/me/docs/",
            "https://example.com:8443/docs/",
            "https://user@example.com/",
            "https://[::1]:8080/api/v1.2/",
            "file:///srv/my%20docs/",
            "file:///srv/caf%C3%A9/",
            "file:///tmp/.tmpAbC123/docs/",
        ] {
            assert_eq!(check_prefix(good), Ok(()), "{good:?}");
        }
        for (bad, needle) in [
            ("demo://notes", "does not end in"),
            ("demo://notes/?q=", "query or fragment"),
            ("demo://notes/#/", "query or fragment"),
            ("demo://a/../b/", "path segment"),
            ("demo://a/./b/", "path segment"),
            ("demo://a/.../b/", "path segment"),
            ("demo://a/%2e%2e/", "an encoded \".\""),
            ("demo://a/%252e/", "decodes twice"),
            ("demo://a//b/", "empty path segment"),
            ("file:////srv/", "empty path segment"),
            ("file:///srv/a;b/", "path parameters"),
            ("file:///srv/C:/", "Windows drive"),
            ("demo://a/%EF%BC%8F/", "U+FF0F"),
            ("demo://ex%41mple/", "authority"),
            ("demo://a\\b/", "authority"),
            ("notes/", "absolute URI"),
        ] {
            let error = check_prefix(bad).unwrap_err();
            assert!(error.contains(needle), "{bad:?}: {error}");
        }
    }

    #[test]
    fn templates_are_shown_by_their_literal_start() {
        let gate = gate();
        assert_eq!(
            gate.template_status("demo://notes/{name}"),
            ResourceStatus::Allowed
        );
        assert_eq!(
            gate.template_status("demo://notes/{+path}"),
            ResourceStatus::Allowed
        );
        assert_eq!(
            gate.template_status("file:///srv/docs/{+path}"),
            ResourceStatus::Allowed
        );
        assert_eq!(
            gate.template_status("demo://notes/2026/{name}.txt"),
            ResourceStatus::Allowed
        );
        for hidden in [
            "{+target}",
            "demo://{+target}",
            "demo://notesx/{n}",
            "https://x/{a}",
            // Every read of these would be refused: a query, fragment or path parameters.
            "demo://notes/{name}{?version}",
            "demo://notes/search{?q,lang}",
            "demo://notes/{name}?fixed=1{&x}",
            "demo://notes/{name}?raw",
            "demo://notes/{name}#top",
            "demo://notes/{name}{#section}",
            "demo://notes/{name}{;v}",
            // A literal start that already leaves the prefix, or is not a template at all.
            "demo://notes/../{name}",
            "demo://notes/%2e%2e/{name}",
            "demo://notes//{name}",
            "demo://notes/{name",
        ] {
            assert_eq!(
                gate.template_status(hidden),
                ResourceStatus::Hidden(GateReason::ResourceNotAdmitted),
                "{hidden}"
            );
        }
    }

    /// What attackers put after an allowed prefix: each is refused as `resource_uri_refused`,
    /// whatever the server would have made of it.
    const ATTACKS: &[&str] = &[
        // Issue 23: the check stopped at "?"; a server that ignores the query leaves the prefix.
        "x?/../../secret.txt",
        "x?",
        "?/../../secret.txt",
        "x#/../../secret.txt",
        "x#",
        "%2e%2e/secret.txt",
        "%2E%2E/secret.txt",
        "x/%2e%2e/%2e%2e/secret.txt",
        ".%2e/secret.txt",
        // Double and triple encoding.
        "%252e%252e/secret.txt",
        "%25252e%25252e/secret.txt",
        "%25/x",
        "..%2fsecret.txt",
        "..%2F..%2Fsecret.txt",
        "..%5csecret.txt",
        "..%5C..%5Csecret.txt",
        // Overlong UTF-8 for "." and "/".
        "%c0%ae%c0%ae/secret.txt",
        "%e0%80%ae%e0%80%ae/secret.txt",
        "..%c0%afsecret.txt",
        // Fullwidth, dot-leader and slash look-alikes NFKC or best-fit turn into syntax.
        "..%ef%bc%8fsecret.txt",
        "%ef%bc%8e%ef%bc%8e/secret.txt",
        "%e2%80%a4%e2%80%a4/secret.txt",
        "%e2%80%a5/secret.txt",
        "..%e2%88%95secret.txt",
        "..%c2%a5secret.txt",
        "\u{ff0e}\u{ff0e}/secret.txt",
        // Servlet path parameters, Windows drives and streams, separators.
        "..;/secret.txt",
        "x/..;/..;/secret.txt",
        "C:/Windows/win.ini",
        "secret.txt::$DATA",
        "..\\secret.txt",
        // Dot segments, plain and trimmed.
        "x/./y",
        "x/../../secret.txt",
        ".../secret.txt",
        "..%20/secret.txt",
        ".+./secret.txt",
        // Empty segments and absolute paths, also after trimming or stripping, and homes.
        "/etc/passwd",
        "x//y",
        "%20/etc/passwd",
        "+/etc/passwd",
        "-/etc/passwd",
        "~/.ssh/id_ed25519",
        "~root/.ssh/id_ed25519",
        "%7Eroot/x",
        // Controls, spaces, raw non-ASCII, broken escapes.
        "x%00/../../secret.txt",
        "x%0a",
        "a b",
        "caf\u{e9}.txt",
        "x%2",
    ];

    #[test]
    fn attacker_remainders_under_a_prefix_are_refused_by_name() {
        let gate = gate();
        for rest in ATTACKS {
            let uri = format!("file:///srv/docs/{rest}");
            let denial = gate
                .check(&uri)
                .err()
                .unwrap_or_else(|| panic!("{uri:?} was allowed"));
            assert_eq!(
                denial.reason,
                GateReason::ResourceUriRefused,
                "{uri:?}: {}",
                denial.detail
            );
            assert_eq!(denial.tool, uri);
            // The detail names the rule and says what to do.
            let flaw = remainder::check(rest).unwrap_err();
            assert!(
                denial.detail.contains(&flaw.to_string()),
                "{}",
                denial.detail
            );
            assert!(denial.detail.contains(flaw.remedy()), "{}", denial.detail);
        }
        for (uri, needle) in [
            (
                "file:///srv/docs/x?/../../secret.txt",
                "query or fragment never follows",
            ),
            ("file:///srv/docs/%252e%252e/x", "decodes twice"),
            ("file:///srv/docs/%ef%bc%8e%ef%bc%8e/x", "U+FF0E"),
            ("file:///srv/docs/%e2%80%a4/x", "not a letter or digit"),
            ("file:///srv/docs/%c0%ae/x", "not valid UTF-8"),
            ("file:///srv/docs/..;/x", "path parameters"),
            ("file:///srv/docs/C:/x", "Windows drive"),
        ] {
            let detail = gate.check(uri).unwrap_err().detail;
            assert!(detail.contains(needle), "{uri}: {detail}");
        }
    }

    #[test]
    fn an_exact_entry_may_still_hold_a_query() {
        let mut list = ResourceAllowList::new();
        list.allow_uri("https://api.example/items?id=7", Scope::User)
            .unwrap();
        list.allow_prefix("https://api.example/", Scope::User)
            .unwrap();
        let gate = ResourceGate::new(list);
        assert_eq!(
            gate.check("https://api.example/items?id=7")
                .unwrap()
                .prefix(),
            None
        );
        assert_eq!(
            gate.check("https://api.example/items?id=8")
                .unwrap_err()
                .reason,
            GateReason::ResourceUriRefused
        );
    }

    const ORDINARY: &[&str] = &[
        "a/b/c.txt",
        "readme.md",
        "my%20file.txt",
        "caf%C3%A9.txt",
        "%E6%97%A5%E6%9C%AC.txt",
        "dir/",
        "dir/sub/",
        "v1.2/notes.md",
        ".bashrc",
        "a-b_c~d/(1)+x",
        "report%2B2026%40final.pdf",
        "it's,fine!=$&*@x",
    ];

    #[test]
    fn ordinary_names_under_a_prefix_still_read() {
        let gate = gate();
        for rest in ORDINARY {
            let uri = format!("file:///srv/docs/{rest}");
            let permit = gate
                .check(&uri)
                .unwrap_or_else(|d| panic!("{uri}: {}", d.detail));
            assert_eq!(permit.prefix(), Some("file:///srv/docs/"));
            assert_eq!(permit.uri(), uri);
        }
    }

    /// A careless server, every way at once: what it may make of a remainder, as paths
    /// relative to the prefix's directory.
    mod careless {
        use unicode_normalization::UnicodeNormalization;

        /// Percent-decodes once, reading bytes as UTF-8 leniently (overlong forms too).
        fn decode_once(text: &str, plus_is_space: bool) -> String {
            let bytes = text.as_bytes();
            let mut out = Vec::with_capacity(bytes.len());
            let mut i = 0;
            while i < bytes.len() {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
                match (bytes[i], hex) {
                    (b'%', Some(byte)) => {
                        out.push(byte);
                        i += 3;
                    }
                    (b'+', _) if plus_is_space => {
                        out.push(b' ');
                        i += 1;
                    }
                    (byte, _) => {
                        out.push(byte);
                        i += 1;
                    }
                }
            }
            lenient_utf8(&out)
        }

        /// UTF-8 as a careless decoder reads it: overlong forms accepted (`C0 AE` is ".").
        fn lenient_utf8(bytes: &[u8]) -> String {
            let mut out = String::new();
            let mut i = 0;
            while i < bytes.len() {
                let b = bytes[i];
                let (len, first) = match b {
                    0x00..=0x7f => (1, u32::from(b)),
                    0xc0..=0xdf => (2, u32::from(b & 0x1f)),
                    0xe0..=0xef => (3, u32::from(b & 0x0f)),
                    0xf0..=0xf7 => (4, u32::from(b & 0x07)),
                    _ => {
                        out.push('\u{fffd}');
                        i += 1;
                        continue;
                    }
                };
                let tail = bytes.get(i + 1..i + len);
                let code = tail
                    .filter(|t| t.iter().all(|c| c & 0xc0 == 0x80))
                    .map(|t| {
                        t.iter()
                            .fold(first, |code, c| (code << 6) | u32::from(c & 0x3f))
                    });
                match code.and_then(char::from_u32) {
                    Some(c) => {
                        out.push(c);
                        i += len;
                    }
                    None => {
                        out.push('\u{fffd}');
                        i += 1;
                    }
                }
            }
            out
        }

        /// Windows "best fit" and look-alike folding of separators and dots.
        fn best_fit(c: char) -> char {
            match c {
                '\u{2215}' | '\u{2044}' | '\u{ff0f}' => '/',
                '\u{a5}' | '\u{20a9}' | '\u{ff3c}' => '\\',
                '\u{ff0e}' | '\u{2024}' | '\u{fe52}' => '.',
                other => other,
            }
        }

        /// Every path the remainder may become, one per combination of careless steps.
        pub fn resolutions(rest: &str) -> Vec<String> {
            let mut out = Vec::new();
            for step in 0u32..(1 << 9) {
                let on = |bit: u32| step & (1 << bit) != 0;
                let mut text = rest.to_string();
                if on(0)
                    && let Some(at) = text.find(['?', '#'])
                {
                    text.truncate(at);
                }
                if on(1) {
                    // Decode until nothing changes (at most a few rounds).
                    for _ in 0..4 {
                        let next = decode_once(&text, on(2));
                        if next == text {
                            break;
                        }
                        text = next;
                    }
                }
                if on(3) {
                    text = text.nfkc().map(best_fit).collect();
                }
                if on(8) && text.starts_with('~') {
                    // expanduser: "~" or "~user" up to the first "/" is a home directory.
                    let end = text.find('/').unwrap_or(text.len());
                    text.replace_range(..end, "/home/someone");
                }
                if let Some(at) = text.find('\0') {
                    text.truncate(at);
                }
                text = text.replace('\\', "/");
                let segments: Vec<String> = text
                    .split('/')
                    .map(|segment| {
                        let mut segment = segment.to_string();
                        if on(4)
                            && let Some(at) = segment.find(';')
                        {
                            segment.truncate(at);
                        }
                        if on(5) {
                            segment = segment.trim().to_string();
                        }
                        if on(6) && segment.len() > 2 {
                            // Windows drops one trailing "." ("..." is "..").
                            if let Some(cut) = segment.strip_suffix('.') {
                                segment = cut.to_string();
                            }
                        }
                        if on(7) {
                            // A sanitizer: only ASCII letters, digits and dots survive.
                            segment.retain(|c| c.is_ascii_alphanumeric() || c == '.');
                        }
                        segment
                    })
                    .collect();
                out.push(segments.join("/"));
            }
            out
        }

        /// Whether `path` (relative to the prefix's directory) stays inside it: not absolute,
        /// no drive, and no ".." that climbs above where it started.
        pub fn stays_inside(path: &str) -> bool {
            if path.starts_with('/') {
                return false;
            }
            let first = path.split('/').next().unwrap_or("");
            if first.len() >= 2 && first.as_bytes()[1] == b':' {
                return false;
            }
            let mut depth = 0i32;
            for segment in path.split('/') {
                match segment {
                    "" | "." => {}
                    ".." => {
                        depth -= 1;
                        if depth < 0 {
                            return false;
                        }
                    }
                    _ => depth += 1,
                }
            }
            true
        }
    }

    #[test]
    fn the_careless_model_does_escape_with_what_the_gate_refuses() {
        // The model is not toothless: these leave the prefix on some careless server.
        for rest in [
            "x?/../../secret.txt",
            "x#/../../secret.txt",
            "%2e%2e/secret.txt",
            "%252e%252e/secret.txt",
            "%25252e%25252e/secret.txt",
            "..%2fsecret.txt",
            "..%5csecret.txt",
            "%c0%ae%c0%ae/secret.txt",
            "%ef%bc%8e%ef%bc%8e/secret.txt",
            "%e2%80%a4%e2%80%a4/secret.txt",
            "..%e2%88%95secret.txt",
            "..;/secret.txt",
            "C:/Windows/win.ini",
            ".../secret.txt",
            "..%20/secret.txt",
            ".+./secret.txt",
            "/etc/passwd",
            "%20/etc/passwd",
            "-/etc/passwd",
            "~/.ssh/id_ed25519",
        ] {
            assert!(
                careless::resolutions(rest)
                    .iter()
                    .any(|path| !careless::stays_inside(path)),
                "{rest}"
            );
        }
    }

    fn allowed_remainders_stay_inside(gate: &ResourceGate, rest: &str) -> Result<(), String> {
        if gate.check(&format!("file:///srv/docs/{rest}")).is_err() {
            return Ok(());
        }
        match careless::resolutions(rest)
            .into_iter()
            .find(|path| !careless::stays_inside(path))
        {
            Some(path) => Err(format!("{rest:?} was allowed and resolves to {path:?}")),
            None => Ok(()),
        }
    }

    /// Pieces attackers and ordinary names are made of.
    const PIECES: &[&str] = &[
        "a",
        "Z",
        "7",
        ".",
        "..",
        "/",
        "-",
        "_",
        "~",
        "+",
        "!",
        ";",
        ":",
        "\\",
        "?",
        "#",
        " ",
        "%",
        "2",
        "e",
        "E",
        "f",
        "c",
        "5",
        "%2e",
        "%2E",
        "%2f",
        "%5c",
        "%25",
        "%20",
        "%2B",
        "%41",
        "%c0%ae",
        "%ef%bc%8e",
        "%ef%bc%8f",
        "%e2%80%a4",
        "%e2%88%95",
        "%c2%a5",
        "%C3%A9",
        "%e1%85%9f",
        "%00",
        "%0a",
        "\u{e9}",
        "\u{ff0e}",
        "%3b",
        "%3A",
    ];

    #[test]
    fn every_allowed_pair_of_pieces_stays_inside_on_a_careless_server() {
        let gate = gate();
        let mut allowed = 0;
        for a in PIECES {
            for b in PIECES {
                for rest in [format!("{a}{b}"), format!("{a}/{b}"), format!("{a}{b}/x")] {
                    allowed_remainders_stay_inside(&gate, &rest).unwrap();
                    allowed += usize::from(gate.check(&format!("file:///srv/docs/{rest}")).is_ok());
                }
            }
        }
        assert!(
            allowed > 500,
            "only {allowed} allowed: the sample says little"
        );
    }

    mod property {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            #[test]
            fn no_allowed_remainder_leaves_the_prefix_on_a_careless_server(
                pieces in proptest::collection::vec(proptest::sample::select(PIECES), 1..8)
            ) {
                let rest: String = pieces.concat();
                let gate = gate();
                prop_assert_eq!(allowed_remainders_stay_inside(&gate, &rest), Ok(()));
            }

            #[test]
            fn ordinary_names_joined_by_slashes_are_allowed_and_stay_inside(
                names in proptest::collection::vec("[A-Za-z0-9][A-Za-z0-9._~-]{0,8}", 1..5)
            ) {
                let rest = names.join("/");
                let gate = gate();
                prop_assert!(gate.check(&format!("file:///srv/docs/{rest}")).is_ok(), "{}", rest);
                prop_assert_eq!(allowed_remainders_stay_inside(&gate, &rest), Ok(()));
            }
        }
    }

    #[test]
    fn an_empty_list_allows_nothing() {
        let gate = ResourceGate::default();
        assert!(gate.allow_list().is_empty());
        assert_eq!(
            gate.check("demo://docs/welcome.txt").unwrap_err().reason,
            GateReason::ResourceNotAdmitted
        );
    }
}
