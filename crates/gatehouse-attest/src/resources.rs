//! Resource authorization: decides whether a `resources/read` (or a subscription) for a URI may
//! leave the host.
//!
//! A bundle entry grants resources two ways (specVersion 2):
//! - `allowedResources`: exact URIs, compared byte for byte like tool names (no case folding,
//!   no percent-decoding, no normalization);
//! - `allowedResourcePrefixes`: prefixes that end in `/`. A URI is under a prefix when it starts
//!   with the prefix's exact bytes and the rest is a *plain* path: printable ASCII without
//!   spaces, `\`, `#` or `//`; no `.` or `..` segment; no percent-encoded `.`, `/` or `\`
//!   (`%2e`, `%2f`, `%5c` in any case). A URI that starts with an allowed prefix but fails
//!   these is refused as `resource_uri_refused`, never normalized into the prefix, because the
//!   server, not the host, decides what `..` means on its side.
//!
//! Templates (`resources/templates/list`) are shown as allowed when their literal start lies
//! under an allowed prefix, but that is display only: every read is checked on the expanded
//! URI ([`crate::uri_template`]), so a template that expands to another scheme or server is
//! refused like any other URI. [`ResourcePermit`] can only be minted by [`ResourceGate::check`].
//! Pure: nothing here reads the network, the disk or a clock.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use crate::bundle::ServerPolicy;
use crate::gate::{Denial, GateReason, Scope, look_alike_fold, shown};

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

/// Checks an `allowedResourcePrefixes` entry: an absolute URI ending in `/`, with a path that
/// is already plain (no dot segments or encoded separators of its own).
pub fn check_prefix(prefix: &str) -> Result<(), String> {
    check_exact_uri(prefix)?;
    if !prefix.ends_with('/') {
        return Err(format!(
            "the prefix {} does not end in \"/\"; a prefix covers the URIs below a path, so \"demo://notes\" must be written \"demo://notes/\" (it would otherwise also cover \"demo://notes-private\")",
            shown(prefix)
        ));
    }
    if prefix.contains(['?', '#']) {
        return Err(format!(
            "the prefix {} has a query or fragment; a prefix is a path",
            shown(prefix)
        ));
    }
    let path = prefix
        .split_once("://")
        .map(|(_, rest)| rest)
        .unwrap_or(prefix);
    // An empty authority (`file:///srv/`) leaves one leading "/" that is not an empty segment.
    let path = path.strip_prefix('/').unwrap_or(path);
    if let Err(why) = plain_path(path.strip_suffix('/').unwrap_or(path), false) {
        return Err(format!("the prefix {} {why}", shown(prefix)));
    }
    Ok(())
}

fn has_scheme(uri: &str) -> bool {
    let Some((scheme, _)) = uri.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Why `rest` (what follows a prefix) is not a plain path, if it is not. `allow_query` lets
/// a `?query` follow the path (reads may carry one; prefixes may not).
fn plain_path(rest: &str, allow_query: bool) -> Result<(), String> {
    if let Some(c) = rest.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(format!(
            "contains {c:?} (only printable ASCII without spaces)"
        ));
    }
    if rest.contains(['\\', '#']) {
        return Err("contains \"\\\" or \"#\"".into());
    }
    let lower = rest.to_ascii_lowercase();
    if let Some(encoded) = ["%2e", "%2f", "%5c"].iter().find(|e| lower.contains(**e)) {
        return Err(format!(
            "contains {encoded}, an encoded \".\", \"/\" or \"\\\", which a server may decode into a path step"
        ));
    }
    let path = match rest.split_once('?') {
        Some((path, _)) if allow_query => path,
        Some(_) => return Err("contains \"?\"".into()),
        None => rest,
    };
    // After a prefix ending in "/", a leading "/" is an empty segment too.
    if path.contains("//") || path.starts_with('/') {
        return Err("contains an empty path segment (\"//\")".into());
    }
    if path
        .split('/')
        .any(|segment| segment == "." || segment == "..")
    {
        return Err("contains a \".\" or \"..\" path segment".into());
    }
    Ok(())
}

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

    /// Allows every plain URI under `prefix`.
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

    /// The per-read check: an exact entry, else the longest prefix the URI starts with and
    /// whose remainder is a plain path. Nothing is decoded or normalized.
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
            return match plain_path(&uri[prefix.len()..], true) {
                Ok(()) => Ok(ResourcePermit {
                    uri: uri.to_string(),
                    scope: Arc::clone(scope),
                    prefix: Some(prefix.clone()),
                }),
                Err(why) => Err(deny(
                    GateReason::ResourceUriRefused,
                    format!(
                        "the URI {} starts with the allowed prefix {} but the rest {why}; \
                         Gatehouse does not normalize URIs, so it refuses one that could leave \
                         the prefix on the server's side",
                        shown(uri),
                        shown(prefix)
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

    /// Classification of a listed URI template, by its literal start (display only: reads
    /// are checked on the expanded URI). A template whose literal start is an exact allowed
    /// URI or lies under an allowed prefix is shown as allowed.
    pub fn template_status(&self, template: &str) -> ResourceStatus {
        let literal = crate::uri_template::literal_prefix(template);
        let covered = self.allow.prefixes.keys().any(|prefix| {
            literal.starts_with(prefix.as_str())
                && plain_path(&literal[prefix.len()..], true).is_ok()
        });
        if covered {
            ResourceStatus::Allowed
        } else {
            ResourceStatus::Hidden(GateReason::ResourceNotAdmitted)
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
            "demo://notes/search?q=x",
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
        assert!(check_prefix("demo://notes/").is_ok());
        assert!(check_prefix("file:///srv/").is_ok());
        for bad in [
            "demo://notes",
            "demo://notes/?q=",
            "demo://a/../b/",
            "demo://a/%2e%2e/",
            "demo://a//b/",
            "notes/",
        ] {
            assert!(check_prefix(bad).is_err(), "{bad:?}");
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
        for hidden in [
            "{+target}",
            "demo://{+target}",
            "demo://notesx/{n}",
            "https://x/{a}",
        ] {
            assert_eq!(
                gate.template_status(hidden),
                ResourceStatus::Hidden(GateReason::ResourceNotAdmitted),
                "{hidden}"
            );
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
