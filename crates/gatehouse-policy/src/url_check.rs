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

/// Where a URL's host leads, judged on the host as the URL parser reads it (so `2130706433`,
/// `0x7f.1` and `127.1` are 127.0.0.1); names are never resolved. The one classification the
/// elicitation's URL check and the host's sign-in check share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HostClass {
    /// This machine, written plainly: the name `localhost`, 127.0.0.0/8, `::1`. The only hosts
    /// the policy's loopback exceptions (plain http, an IP literal) can ever name.
    Loopback,
    /// This machine written any other way: names under `.localhost` (and `localhost.`), the
    /// unspecified addresses (`0.0.0.0`, `::`, which browsers send to this machine), and IPv6
    /// forms embedding a loopback IPv4 address (`::ffff:127.0.0.1`, `::127.0.0.1`).
    ThisMachine,
    /// An address that is not on the internet: private (10/8, 172.16/12, 192.168/16,
    /// fc00::/7), shared (100.64/10), link-local (169.254/16, where cloud metadata answers;
    /// fe80::/10), "this network" (0/8), benchmarking, documentation, multicast, broadcast and
    /// reserved ranges, and IPv6 forms embedding such an IPv4 address (IPv4-mapped,
    /// -compatible, NAT64, 6to4) or hiding one (Teredo, local-use NAT64).
    LocalNetwork,
    /// Any other IP address.
    PublicAddress,
    /// Any other name.
    Name,
}

impl HostClass {
    /// On this machine, however it is written.
    pub fn is_this_machine(self) -> bool {
        matches!(self, HostClass::Loopback | HostClass::ThisMachine)
    }

    /// Not on the internet: this machine or a local network.
    pub fn is_local(self) -> bool {
        matches!(
            self,
            HostClass::Loopback | HostClass::ThisMachine | HostClass::LocalNetwork
        )
    }
}

/// The class of a host: see [`HostClass`].
pub fn host_class(host: &Host<&str>) -> HostClass {
    match host {
        Host::Domain(domain) => {
            let lower = domain.to_ascii_lowercase();
            if lower == "localhost" {
                return HostClass::Loopback;
            }
            let trimmed = lower.trim_end_matches('.');
            if trimmed == "localhost" || trimmed.ends_with(".localhost") {
                HostClass::ThisMachine
            } else {
                HostClass::Name
            }
        }
        Host::Ipv4(ip) => ipv4_class(*ip),
        Host::Ipv6(ip) => ipv6_class(*ip),
    }
}

fn ipv4_class(ip: std::net::Ipv4Addr) -> HostClass {
    let [a, b, c, _] = ip.octets();
    if ip.is_loopback() {
        HostClass::Loopback
    } else if ip.is_unspecified() {
        HostClass::ThisMachine
    } else if a == 0
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240
    {
        HostClass::LocalNetwork
    } else {
        HostClass::PublicAddress
    }
}

fn ipv6_class(ip: std::net::Ipv6Addr) -> HostClass {
    let s = ip.segments();
    if ip.is_loopback() {
        return HostClass::Loopback;
    }
    if ip.is_unspecified() {
        return HostClass::ThisMachine;
    }
    let low = std::net::Ipv4Addr::from((u32::from(s[6]) << 16) | u32::from(s[7]));
    let embedded = match s {
        // IPv4-mapped and IPv4-compatible: the IPv4 address itself.
        [0, 0, 0, 0, 0, 0xffff, _, _] | [0, 0, 0, 0, 0, 0, _, _] => Some(low),
        // NAT64 (64:ff9b::/96): the IPv4 address behind the translator.
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(low),
        // 6to4 (2002::/16): the IPv4 address in the second and third segments.
        [0x2002, hi, lo, ..] => Some(std::net::Ipv4Addr::from(
            (u32::from(hi) << 16) | u32::from(lo),
        )),
        _ => None,
    };
    if let Some(v4) = embedded {
        return match ipv4_class(v4) {
            HostClass::Loopback => HostClass::ThisMachine,
            class => class,
        };
    }
    let local = (s[0] & 0xfe00) == 0xfc00 // unique local
        || (s[0] & 0xffc0) == 0xfe80 // link-local
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || ip.is_multicast()
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x2001 && s[1] == 0) // Teredo: hides an IPv4 address
        || (s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1) // local-use NAT64
        || (s[0] == 0x100 && s[1] == 0 && s[2] == 0 && s[3] == 0); // discard-only
    if local {
        HostClass::LocalNetwork
    } else {
        HostClass::PublicAddress
    }
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
    let class = host_class(&host);
    let loopback = class == HostClass::Loopback;
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
                let where_to = match class {
                    HostClass::Loopback | HostClass::ThisMachine => ", on this machine",
                    HostClass::LocalNetwork => ", on a local network",
                    HostClass::PublicAddress | HostClass::Name => "",
                };
                assessment.push(reason(
                    codes::URL_IP_LITERAL,
                    format!(
                        "the host is an IP address ({shown}{where_to}), not a name you can recognize"
                    ),
                ));
            }
        }
        Host::Domain(domain) => {
            // A name for this machine is this machine: a remote server may not aim the
            // browser at a local service by name any more than by address.
            if class.is_this_machine() && !context.server_is_local {
                assessment.push(reason(
                    codes::URL_LOCAL_HOST,
                    format!(
                        "the host {shown} is this machine, and the server asking is not on it: it could aim your browser at a local service"
                    ),
                ));
            }
            check_domain(&mut assessment, domain, &display.host_unicode)
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn class_of(url: &str) -> HostClass {
        let url = Url::parse(url).unwrap();
        host_class(&url.host().unwrap())
    }

    #[test]
    fn hosts_are_classed_as_the_browser_would_reach_them() {
        let cases: &[(&str, HostClass)] = &[
            ("http://localhost:3000/", HostClass::Loopback),
            ("http://LOCALHOST/", HostClass::Loopback),
            ("http://127.0.0.1/", HostClass::Loopback),
            ("http://127.8.9.10/", HostClass::Loopback),
            ("http://[::1]/", HostClass::Loopback),
            // The URL parser's other spellings of 127.0.0.1 are 127.0.0.1.
            ("http://2130706433/", HostClass::Loopback),
            ("http://0x7f.0.0.1/", HostClass::Loopback),
            ("http://127.1/", HostClass::Loopback),
            ("http://localhost./", HostClass::ThisMachine),
            ("http://cups.localhost/", HostClass::ThisMachine),
            ("http://0.0.0.0/", HostClass::ThisMachine),
            ("http://[::]/", HostClass::ThisMachine),
            ("http://[::ffff:127.0.0.1]/", HostClass::ThisMachine),
            ("http://10.0.0.5/", HostClass::LocalNetwork),
            ("http://172.16.0.1/", HostClass::LocalNetwork),
            ("http://192.168.1.1/", HostClass::LocalNetwork),
            ("http://3232235777/", HostClass::LocalNetwork),
            ("http://100.64.0.1/", HostClass::LocalNetwork),
            ("http://169.254.169.254/", HostClass::LocalNetwork),
            ("http://0.1.2.3/", HostClass::LocalNetwork),
            ("http://255.255.255.255/", HostClass::LocalNetwork),
            ("http://224.0.0.1/", HostClass::LocalNetwork),
            ("http://198.18.0.1/", HostClass::LocalNetwork),
            ("http://[fd00::1]/", HostClass::LocalNetwork),
            ("http://[fe80::1]/", HostClass::LocalNetwork),
            ("http://[::ffff:192.168.1.1]/", HostClass::LocalNetwork),
            ("http://[::ffff:169.254.169.254]/", HostClass::LocalNetwork),
            ("http://[64:ff9b::a9fe:a9fe]/", HostClass::LocalNetwork),
            ("http://[2002:c0a8:101::]/", HostClass::LocalNetwork),
            ("http://[2001:0:1::1]/", HostClass::LocalNetwork),
            ("https://93.184.216.34/", HostClass::PublicAddress),
            (
                "https://[2606:2800:220:1:248:1893:25c8:1946]/",
                HostClass::PublicAddress,
            ),
            ("https://[::ffff:93.184.216.34]/", HostClass::PublicAddress),
            ("https://login.example.com/", HostClass::Name),
            ("https://localhost.example.com/", HostClass::Name),
            ("https://mylocalhost/", HostClass::Name),
        ];
        for (url, class) in cases {
            assert_eq!(class_of(url), *class, "{url}");
        }
        assert!(HostClass::ThisMachine.is_this_machine() && HostClass::Loopback.is_local());
        assert!(!HostClass::LocalNetwork.is_this_machine() && HostClass::LocalNetwork.is_local());
        assert!(!HostClass::PublicAddress.is_local() && !HostClass::Name.is_local());
    }
}
