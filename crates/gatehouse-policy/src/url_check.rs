//! URL-mode checks: what will be opened, exactly, and whether it may be.

use std::borrow::Cow;

use serde::Serialize;
use unicode_security::{MixedScript, RestrictionLevel, RestrictionLevelDetection};
use url::{Host, Url};

use crate::codes::{self, reason};
use crate::decision::Assessment;
use crate::policy::UrlPolicy;

/// What the user is shown: the full URL exactly as it will be opened (normalized by the URL
/// parser), the host in ASCII (punycode) and in Unicode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UrlDisplay {
    pub full: String,
    pub host: String,
    pub host_unicode: String,
}

/// Facts about the requesting server that URL checks need.
#[derive(Debug, Clone, Default)]
pub struct UrlContext {
    /// The server runs on this machine (plain http to loopback is then allowed by policy).
    pub server_is_local: bool,
    /// The bundle's `urlElicitationDomains` for this server plus any `--allow-host`.
    pub allowed_hosts: Vec<String>,
}

/// Checks a URL. The display is filled even for denied URLs (with the raw text as `full` when
/// it does not parse), so the user can see what was refused.
pub fn check_url(policy: &UrlPolicy, raw: &str, context: &UrlContext) -> (Assessment, UrlDisplay) {
    let mut assessment = Assessment::allow();
    // What the URL parser strips from both ends anyway (C0 controls and spaces).
    let trimmed = raw.trim_matches(|c: char| c <= ' ');
    let mut too_long = raw.len() > policy.max_length;
    if trimmed.chars().any(char::is_control) {
        assessment.push(reason(
            codes::URL_UNPARSABLE,
            "the URL contains control characters (tabs, newlines…), which browsers silently drop",
        ));
    }
    let url = match Url::parse(trimmed) {
        Ok(url) => url,
        Err(error) => {
            if too_long {
                assessment.push(too_long_reason(policy, raw.len()));
            }
            assessment.push(reason(
                codes::URL_UNPARSABLE,
                format!("the URL does not parse: {error}"),
            ));
            let display = UrlDisplay {
                full: trimmed.to_string(),
                host: String::new(),
                host_unicode: String::new(),
            };
            return (assessment, display);
        }
    };
    let display = display_of(&url);
    too_long |= url.as_str().len() > policy.max_length;
    if too_long {
        assessment.push(too_long_reason(policy, raw.len().max(url.as_str().len())));
    }

    let scheme = url.scheme();
    if scheme != "https" && scheme != "http" {
        assessment.push(reason(
            codes::URL_SCHEME_NOT_ALLOWED,
            format!("{scheme}: URLs are never opened (only https, and http to this machine for local servers)"),
        ));
        return (assessment, display);
    }
    let Some(host) = url.host() else {
        assessment.push(reason(codes::URL_UNPARSABLE, "the URL has no host"));
        return (assessment, display);
    };
    let loopback = match host {
        Host::Ipv4(ip) => ip.is_loopback(),
        Host::Ipv6(ip) => ip.is_loopback(),
        Host::Domain(domain) => domain == "localhost",
    };
    let shown = &display.host;

    if scheme == "http" {
        let why = if !loopback {
            "plain http to another machine can be read and changed on the way"
        } else if !context.server_is_local {
            "plain http to this machine is allowed only for servers running on this machine"
        } else if !policy.allow_http_loopback_for_local_servers {
            "the policy does not allow plain http, even to this machine"
        } else {
            ""
        };
        if !why.is_empty() {
            assessment.push(reason(
                codes::URL_NOT_HTTPS,
                format!("the URL is not https ({shown}): {why}"),
            ));
        }
    }

    let raw_host = raw_host(trimmed);
    if !url.username().is_empty() || url.password().is_some() || raw_host.userinfo {
        let user = url.username();
        let shown_user = if user.is_empty() {
            String::new()
        } else {
            format!(" ({user:?})")
        };
        assessment.push(reason(
            codes::URL_USERINFO,
            format!(
                "the URL has userinfo{shown_user} before the host: it goes to {shown}, whatever the text before the @ suggests"
            ),
        ));
    }

    if let Some(written) = raw_host.host.as_deref() {
        let written_lower = written.to_lowercase();
        if written.contains('%')
            || (written_lower != *shown && written_lower != display.host_unicode)
        {
            assessment.push(reason(
                codes::URL_OBFUSCATED_HOST,
                format!("the host is written as {written:?} but the browser goes to {shown}"),
            ));
        }
    }

    match host {
        Host::Ipv4(_) | Host::Ipv6(_) => {
            if !(loopback && context.server_is_local) {
                assessment.push(reason(
                    codes::URL_IP_LITERAL,
                    format!("the host is an IP address ({shown}), not a name you can recognize"),
                ));
            }
        }
        Host::Domain(domain) => check_domain(&mut assessment, domain, &display.host_unicode),
    }

    check_allow_list(&mut assessment, policy, context, &host, shown);
    check_parameters(&mut assessment, policy, context, &url);
    (assessment, display)
}

fn too_long_reason(policy: &UrlPolicy, length: usize) -> crate::decision::Reason {
    reason(
        codes::URL_TOO_LONG,
        format!(
            "the URL is {length} bytes long; the policy allows {}",
            policy.max_length
        ),
    )
}

fn display_of(url: &Url) -> UrlDisplay {
    let (host, host_unicode) = match url.host() {
        None => (String::new(), String::new()),
        Some(Host::Domain(domain)) => (domain.to_string(), idna::domain_to_unicode(domain).0),
        // As the URL serializes it (`[::ffff:7f00:1]`), which is what the user sees in `full`.
        Some(Host::Ipv4(_) | Host::Ipv6(_)) => {
            let host = url.host_str().unwrap_or_default().to_string();
            (host.clone(), host)
        }
    };
    UrlDisplay {
        full: url.as_str().to_string(),
        host,
        host_unicode,
    }
}

/// The host as written in the raw text, and whether an `@` came before it.
struct RawHost {
    host: Option<String>,
    userinfo: bool,
}

/// Finds the authority lexically, the way a special-scheme URL parser does: after `scheme:`
/// and any slashes or backslashes, up to the first `/`, `\`, `?` or `#`.
fn raw_host(text: &str) -> RawHost {
    let none = RawHost {
        host: None,
        userinfo: false,
    };
    let Some(colon) = text.find(':') else {
        return none;
    };
    let after = text[colon + 1..].trim_start_matches(['/', '\\']);
    let end = after.find(['/', '\\', '?', '#']).unwrap_or(after.len());
    let authority = &after[..end];
    let (userinfo, host_port) = match authority.rfind('@') {
        Some(at) => (true, &authority[at + 1..]),
        None => (false, authority),
    };
    let host = if host_port.starts_with('[') {
        match host_port.find(']') {
            Some(close) => &host_port[..=close],
            None => host_port,
        }
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    RawHost {
        host: Some(host.to_string()),
        userinfo,
    }
}

/// Punycode, mixed-script and confusable labels, judged on the Unicode form of each label: a
/// label is confusable when its UTS #39 skeleton is plain ASCII (it can pass for an ASCII
/// label: "аррӏе" for "apple") or its restriction level is past highly restrictive.
fn check_domain(assessment: &mut Assessment, ascii: &str, unicode: &str) {
    if ascii.split('.').any(|label| label.starts_with("xn--")) {
        assessment.push(reason(
            codes::URL_PUNYCODE_HOST,
            format!(
                "the host is an internationalized name that may imitate another: shown as {unicode:?}, really {ascii:?}"
            ),
        ));
    }
    let mut mixed = None;
    let mut confusable = None;
    for label in unicode.split('.').filter(|l| !l.is_ascii()) {
        if mixed.is_none() && !label.is_single_script() {
            mixed = Some(label);
        }
        let skeleton: String = unicode_security::skeleton(label).collect();
        let looks_ascii = skeleton.is_ascii();
        // Past "highly restrictive": characters not allowed in identifiers, or Latin mixed
        // with Cyrillic or Greek (UTS #39 §5.2).
        let restricted = label.detect_restriction_level() > RestrictionLevel::HighlyRestrictive;
        if confusable.is_none() && (looks_ascii || restricted) {
            confusable = Some((label, skeleton));
        }
    }
    if let Some(label) = mixed {
        assessment.push(reason(
            codes::URL_MIXED_SCRIPT_HOST,
            format!(
                "the host label {label:?} mixes scripts (as in a Cyrillic а among Latin letters)"
            ),
        ));
    }
    if let Some((label, skeleton)) = confusable {
        let looks_like = if skeleton.is_ascii() {
            format!(", which looks like {skeleton:?}")
        } else {
            String::new()
        };
        assessment.push(reason(
            codes::URL_CONFUSABLE_HOST,
            format!("the host label {label:?} uses look-alike characters{looks_like}"),
        ));
    }
}

/// An allow-list entry normalized for comparison: lowercase ASCII (punycode), no trailing
/// dot. Entries that are not host names (wildcards, URLs, ports) match nothing.
fn normalize_entry(entry: &str) -> Option<String> {
    let entry = entry.trim().trim_end_matches('.');
    if entry.is_empty() || entry.contains(['*', '/', '@', ' ']) {
        return None;
    }
    if let Ok(Host::Ipv4(_) | Host::Ipv6(_)) = Host::parse(entry) {
        return Some(entry.to_lowercase());
    }
    if entry.contains(':') {
        return None;
    }
    let ascii = idna::domain_to_ascii(entry).ok()?;
    (!ascii.is_empty()).then_some(ascii)
}

/// Exact label-boundary match: the host is an entry or a subdomain of one.
fn host_matches(host: &str, entry: &str) -> bool {
    host == entry
        || (host.len() > entry.len()
            && host.ends_with(entry)
            && host.as_bytes()[host.len() - entry.len() - 1] == b'.')
}

fn allowed_entries(policy: &UrlPolicy, context: &UrlContext) -> (Vec<String>, usize) {
    let given = context.allowed_hosts.len() + policy.allowed_hosts.len();
    let entries = context
        .allowed_hosts
        .iter()
        .chain(&policy.allowed_hosts)
        .filter_map(|e| normalize_entry(e))
        .collect();
    (entries, given)
}

fn check_allow_list(
    assessment: &mut Assessment,
    policy: &UrlPolicy,
    context: &UrlContext,
    host: &Host<&str>,
    shown: &str,
) {
    let (entries, given) = allowed_entries(policy, context);
    let host_text = match host {
        Host::Domain(domain) => domain.trim_end_matches('.').to_string(),
        Host::Ipv4(ip) => ip.to_string(),
        Host::Ipv6(ip) => ip.to_string(),
    };
    let is_domain = matches!(host, Host::Domain(_));
    if given == 0 && !policy.require_allowlisted_host {
        return;
    }
    let allowed = entries.iter().any(|entry| {
        if is_domain {
            host_matches(&host_text, entry)
        } else {
            host_text == *entry || shown == entry
        }
    });
    if allowed {
        return;
    }
    let detail = if given == 0 {
        format!("{shown} is not allow-listed, and the policy requires an allow-listed host")
    } else {
        let mut list: Vec<&str> = entries.iter().map(String::as_str).collect();
        list.sort_unstable();
        list.dedup();
        let list = if list.len() > 10 {
            format!("{} and {} more", list[..10].join(", "), list.len() - 10)
        } else {
            list.join(", ")
        };
        format!("{shown} is not one of the allowed hosts or their subdomains ({list})")
    };
    assessment.push(reason(codes::URL_HOST_NOT_ALLOWED, detail));
    if is_domain {
        // A near miss of an allowed host: "rnicrosoft.com" for "microsoft.com".
        let skeleton_of = |text: &str| -> String { unicode_security::skeleton(text).collect() };
        let unicode = idna::domain_to_unicode(&host_text).0;
        let host_skeleton = skeleton_of(&unicode);
        if let Some(entry) = entries.iter().find(|entry| {
            let entry_skeleton = skeleton_of(&idna::domain_to_unicode(entry).0);
            host_matches(&host_skeleton, &entry_skeleton)
        }) {
            assessment.push(reason(
                codes::URL_CONFUSABLE_HOST,
                format!("{shown} looks like the allowed host {entry} but is not it"),
            ));
        }
    }
}

/// Decodes `%XX` escapes (and nothing else); `None` when there are none.
pub(crate) fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return None;
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let mut changed = false;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            changed = true;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    changed.then(|| String::from_utf8_lossy(&out).into_owned())
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Whether this is an OAuth authorization request, whose `redirect_uri` is checked by the
/// authorization server against the client's registration: `client_id` plus `response_type`
/// (RFC 6749), or `client_id` on a path ending in `/authorize` (GitHub and Slack omit
/// `response_type`).
fn is_oauth_authorization(url: &Url, names: &[String]) -> bool {
    let has = |name: &str| names.iter().any(|n| n == name);
    has("client_id")
        && (has("response_type") || url.path().trim_end_matches('/').ends_with("/authorize"))
}

fn check_parameters(
    assessment: &mut Assessment,
    policy: &UrlPolicy,
    context: &UrlContext,
    url: &Url,
) {
    let mut pairs: Vec<(&'static str, Cow<'_, str>, Cow<'_, str>)> =
        url.query_pairs().map(|(k, v)| ("query", k, v)).collect();
    if let Some(fragment) = url.fragment() {
        pairs.extend(
            url::form_urlencoded::parse(fragment.as_bytes()).map(|(k, v)| ("fragment", k, v)),
        );
    }
    let names: Vec<String> = pairs.iter().map(|(_, k, _)| k.to_lowercase()).collect();
    let oauth = is_oauth_authorization(url, &names);
    let listed = |list: &[String], name: &str| list.iter().any(|p| p.eq_ignore_ascii_case(name));

    let mut secrets: Vec<String> = Vec::new();
    let mut redirects: Vec<String> = Vec::new();
    for ((place, key, value), name) in pairs.iter().zip(&names) {
        // `user[password]` is the parameter `password` too.
        let inner = name
            .strip_suffix(']')
            .and_then(|n| n.rsplit_once('['))
            .map(|(_, inner)| inner);
        let is = |list: &[String]| listed(list, name) || inner.is_some_and(|i| listed(list, i));
        if !value.is_empty() && is(&policy.secret_query_params) {
            let entry = format!("{key:?} ({place})");
            if !secrets.contains(&entry) {
                secrets.push(entry);
            }
        }
        if is(&policy.redirect_params)
            && !(oauth && name == "redirect_uri")
            && let Some(target) = redirect_target(url, value)
            && !target_allowed(policy, context, url, &target)
        {
            let shown = match target.host_str() {
                Some(host) => format!("{}://{host}", target.scheme()),
                None => format!("a {}: URL", target.scheme()),
            };
            redirects.push(format!("{key:?} sends you on to {shown}"));
        }
    }
    if !secrets.is_empty() {
        assessment.push(reason(
            codes::URL_SECRET_QUERY,
            format!(
                "the URL carries a secret or pre-authenticates the link: parameter {}",
                secrets.join(", ")
            ),
        ));
    }
    if !redirects.is_empty() {
        assessment.push(reason(
            codes::URL_OPEN_REDIRECT,
            format!("the URL redirects elsewhere: {}", redirects.join("; ")),
        ));
    }
}

/// Where a redirect parameter's value leads when resolved against the page (the way a
/// browser resolves a Location header), after up to two more rounds of percent-decoding
/// (servers that decode twice). The first candidate that leaves the page's host is returned.
fn redirect_target(page: &Url, value: &str) -> Option<Url> {
    let mut candidates = vec![value.to_string()];
    for _ in 0..2 {
        match percent_decode(candidates.last().expect("not empty")) {
            Some(decoded) => candidates.push(decoded),
            None => break,
        }
    }
    candidates.into_iter().find_map(|candidate| {
        let target = page.join(candidate.trim()).ok()?;
        let leaves = !matches!(target.scheme(), "http" | "https") || target.host() != page.host();
        leaves.then_some(target)
    })
}

/// A redirect target is fine on the page's own host, or on an allow-listed host.
fn target_allowed(policy: &UrlPolicy, context: &UrlContext, page: &Url, target: &Url) -> bool {
    if !matches!(target.scheme(), "http" | "https") {
        return false;
    }
    if target.host() == page.host() {
        return true;
    }
    let Some(Host::Domain(domain)) = target.host() else {
        return false;
    };
    let (entries, _) = allowed_entries(policy, context);
    entries
        .iter()
        .any(|entry| host_matches(domain.trim_end_matches('.'), entry))
}
