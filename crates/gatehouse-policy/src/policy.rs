//! The policy file: `policies/default.toml` ships with Gatehouse; admins can tighten it.

use gatehouse_confine::ConfinementMode;
use serde::{Deserialize, Serialize};

/// The shipped policy, exactly as in the repository's `policies/default.toml`.
pub const DEFAULT_POLICY_TOML: &str = include_str!("../../../policies/default.toml");

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("the policy file is not valid TOML or has an unknown or mistyped setting: {0}")]
    Parse(String),
    #[error("the policy file is invalid: {0}")]
    Invalid(String),
}

/// A loaded policy. Unknown keys are refused (a typo must not silently loosen anything).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Recorded in every receipt.
    pub version: String,
    pub evidence: EvidencePolicy,
    pub form: FormPolicy,
    pub url: UrlPolicy,
    pub transit: TransitPolicy,
    pub abuse: AbusePolicy,
    /// How audit records reach stable storage, when the log rotates and how long it is kept.
    /// Missing (or a key of it missing) in a policy file written before the setting existed:
    /// the shipped default (batched, 50 ms, 128 records; 64 MiB segments kept 180 days).
    #[serde(default)]
    pub audit: AuditPolicy,
    /// Whether local servers run confined. Missing in a policy file written before the
    /// setting existed: the shipped default (`preferred`).
    #[serde(default)]
    pub confinement: ConfinementPolicy,
}

/// `[confinement]`: the confinement this machine asks of every local (stdio) server it runs.
/// The strictest of this, every installed bundle's `confinement.mode` and the server's own
/// bundle entry applies, so a policy can make confinement stricter, never looser than a
/// bundle asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConfinementPolicy {
    /// `required`: a server that cannot be confined on this machine is refused
    /// (`confinement_unavailable`); `preferred` (the default): confined where the machine
    /// can, otherwise run unconfined, shown and audited; `off`: not confined unless a bundle
    /// or the entry asks for more.
    pub mode: ConfinementMode,
}

/// `[audit]`: the audit log's durability mode, segment size and retention. A trust-root
/// bundle's `audit` setting wins over this one; this one can only make it stricter (for
/// retention: a bundle can only make the log kept longer).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditPolicy {
    /// `batched` (the default) or `sync`.
    pub durability: AuditMode,
    /// Batched: a record reaches stable storage at most this many milliseconds after it was
    /// written (1 to 1000).
    pub flush_ms: u64,
    /// Batched: or as soon as this many records wait (1 to 10000), whichever comes first.
    pub flush_records: u32,
    /// The log is sealed into a segment and continued in a new file when it would pass this
    /// many MiB ([`AuditPolicy::ROTATE_MIB`]).
    pub rotate_mib: u32,
    /// Sealed segments whose every record is older than this many days are removed (the
    /// removal itself is recorded in the chain); 0 keeps every record forever. A bundle's
    /// longer retention wins.
    pub retain_days: u32,
}

impl AuditPolicy {
    /// The segment sizes a policy may choose, in MiB.
    pub const ROTATE_MIB: std::ops::RangeInclusive<u32> = 1..=1024;
    /// The longest retention a policy may name, in days (100 years, as a bundle's limit);
    /// 0 is "forever".
    pub const MAX_RETAIN_DAYS: u32 = 36_500;

    /// The retention as days to keep; `None` keeps every record forever (`retain_days = 0`).
    pub fn keep_days(&self) -> Option<u32> {
        (self.retain_days != 0).then_some(self.retain_days)
    }

    /// The segment size in bytes.
    pub fn rotate_bytes(&self) -> u64 {
        u64::from(self.rotate_mib) * 1024 * 1024
    }
}

impl Default for AuditPolicy {
    fn default() -> AuditPolicy {
        AuditPolicy {
            durability: AuditMode::Batched,
            flush_ms: 50,
            flush_records: 128,
            rotate_mib: 64,
            retain_days: 180,
        }
    }
}

/// The audit log's durability modes (the audit crate's `Durability`, without its window).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditMode {
    /// Every record is on stable storage before its decision takes effect.
    Sync,
    /// Every record is in the file before its decision takes effect, and on stable storage
    /// within `flush_ms` or `flush_records`.
    Batched,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EvidencePolicy {
    /// Hold elicitations from servers that are not attested (warn posture).
    pub hold_unattested: bool,
    /// Hold elicitations not tied to an in-flight request of ours.
    pub require_request_binding: bool,
    /// SEP-2343: hold elicitations from remote servers the host sends no MCP authorization to.
    pub remote_requires_authorization: bool,
    /// An HTTP server on loopback runs on this machine and counts as local.
    pub loopback_http_is_local: bool,
    /// Hold reason codes the user may override explicitly.
    pub user_may_override: Vec<String>,
}

/// The shipped `form.request_terms` (policies/default.toml lists the same; a test checks).
pub(crate) const DEFAULT_REQUEST_TERMS: &[&str] = &["2fa", "mfa", "two factor", "bearer", "jwt"];

fn default_request_terms() -> Vec<String> {
    DEFAULT_REQUEST_TERMS
        .iter()
        .map(|t| t.to_string())
        .collect()
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FormPolicy {
    /// Terms that mark a field as asking for a secret, matched on normalized words of names,
    /// titles and descriptions (any case, any separator).
    pub sensitive_terms: Vec<String>,
    /// Like `sensitive_terms`, but matched in names and titles only: words common in ordinary
    /// prose ("pin a message", "do not give us your pin") that would misfire in descriptions.
    pub name_only_terms: Vec<String>,
    /// Words that are a secret only when prose asks for one ("enter your 2FA"), never in
    /// names ("enable_2fa" is a toggle). `name_only_terms` are judged this way in prose too.
    /// Missing in a policy file written before the list existed: the shipped list applies.
    #[serde(default = "default_request_terms")]
    pub request_terms: Vec<String>,
    /// `format` values that mark a field as a secret.
    pub sensitive_formats: Vec<String>,
    /// Largest number of fields a form may have.
    pub max_fields: usize,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UrlPolicy {
    pub max_length: usize,
    /// Hosts (and their subdomains) allowed for every server, in addition to the bundle's
    /// `urlElicitationDomains`.
    pub allowed_hosts: Vec<String>,
    /// When true, a URL whose host is on neither list is denied even if no list names hosts.
    pub require_allowlisted_host: bool,
    /// Plain http to loopback for servers running on this machine.
    pub allow_http_loopback_for_local_servers: bool,
    /// Query parameter names that carry secrets or pre-authenticate (case-insensitive).
    pub secret_query_params: Vec<String>,
    /// Query parameter names that redirect (case-insensitive).
    pub redirect_params: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TransitPolicy {
    /// Prefixes of well-known credential formats.
    pub token_prefixes: Vec<String>,
    /// Shannon entropy (bits per character) above which a long answer in a secret-like field is
    /// treated as a credential.
    pub entropy_bits_per_char: f64,
    pub entropy_min_length: usize,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AbusePolicy {
    pub window_seconds: u64,
    /// Elicitations per window beyond which the session is killed.
    pub max_elicitations: usize,
    /// Denied elicitations per window beyond which the session is killed.
    pub max_denials: usize,
    /// Completions for ids never issued (or duplicate, or another server's) per window beyond
    /// which the session is killed.
    pub max_bogus_completions: usize,
}

impl Policy {
    /// Parses and validates a policy file.
    pub fn from_toml(text: &str) -> Result<Policy, PolicyError> {
        let policy: Policy = toml::from_str(text)
            .map_err(|e| PolicyError::Parse(e.to_string().trim().to_string()))?;
        let problems = policy.problems();
        if problems.is_empty() {
            Ok(policy)
        } else {
            Err(PolicyError::Invalid(problems.join("; ")))
        }
    }

    /// The shipped default policy.
    pub fn default_policy() -> Policy {
        Policy::from_toml(DEFAULT_POLICY_TOML).expect("the shipped policy is valid")
    }

    /// Every way this policy is unusable, one sentence each (empty when it is fine).
    fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let mut problem = |text: String| problems.push(text);

        if self.version.trim().is_empty() {
            problem("version must not be empty".into());
        } else if self.version.chars().any(char::is_control) || self.version.len() > 200 {
            problem("version must be one line of at most 200 bytes".into());
        }

        for (i, code) in self.evidence.user_may_override.iter().enumerate() {
            let at = format!("evidence.user_may_override[{i}]");
            if crate::codes::NEVER_OVERRIDABLE.contains(&code.as_str()) {
                problem(format!("{at}: {code:?} can never be overridden"));
            } else if !crate::codes::OVERRIDABLE.contains(&code.as_str()) {
                problem(format!(
                    "{at}: {code:?} is not a hold reason code (one of {})",
                    crate::codes::OVERRIDABLE.join(", ")
                ));
            }
        }

        terms(
            &mut problem,
            "form.sensitive_terms",
            &self.form.sensitive_terms,
            true,
        );
        terms(
            &mut problem,
            "form.name_only_terms",
            &self.form.name_only_terms,
            false,
        );
        terms(
            &mut problem,
            "form.request_terms",
            &self.form.request_terms,
            false,
        );
        names(
            &mut problem,
            "form.sensitive_formats",
            &self.form.sensitive_formats,
            false,
        );
        if !(1..=1000).contains(&self.form.max_fields) {
            problem(format!(
                "form.max_fields must be between 1 and 1000, not {}",
                self.form.max_fields
            ));
        }

        if !(64..=65_536).contains(&self.url.max_length) {
            problem(format!(
                "url.max_length must be between 64 and 65536, not {}",
                self.url.max_length
            ));
        }
        for (i, host) in self.url.allowed_hosts.iter().enumerate() {
            if let Err(why) = check_allowed_host(host) {
                problem(format!("url.allowed_hosts[{i}] {host:?}: {why}"));
            }
        }
        names(
            &mut problem,
            "url.secret_query_params",
            &self.url.secret_query_params,
            true,
        );
        names(
            &mut problem,
            "url.redirect_params",
            &self.url.redirect_params,
            true,
        );

        names(
            &mut problem,
            "transit.token_prefixes",
            &self.transit.token_prefixes,
            true,
        );
        for (i, prefix) in self.transit.token_prefixes.iter().enumerate() {
            if prefix.chars().count() < 2 {
                problem(format!(
                    "transit.token_prefixes[{i}] {prefix:?} is too short (at least 2 characters)"
                ));
            }
        }
        let bits = self.transit.entropy_bits_per_char;
        if !(bits.is_finite() && (1.0..=6.0).contains(&bits)) {
            problem(format!(
                "transit.entropy_bits_per_char must be between 1.0 and 6.0, not {bits}"
            ));
        }
        if !(8..=4096).contains(&self.transit.entropy_min_length) {
            problem(format!(
                "transit.entropy_min_length must be between 8 and 4096, not {}",
                self.transit.entropy_min_length
            ));
        }

        if !(1..=86_400).contains(&self.abuse.window_seconds) {
            problem(format!(
                "abuse.window_seconds must be between 1 and 86400, not {}",
                self.abuse.window_seconds
            ));
        }
        if self.abuse.max_elicitations == 0 {
            problem("abuse.max_elicitations must be at least 1 (0 would kill every session that elicits)".into());
        }

        // Checked in the sync mode too: switching modes must not turn up a bad window later.
        if !(1..=1000).contains(&self.audit.flush_ms) {
            problem(format!(
                "audit.flush_ms must be between 1 and 1000, not {}",
                self.audit.flush_ms
            ));
        }
        if !(1..=10_000).contains(&self.audit.flush_records) {
            problem(format!(
                "audit.flush_records must be between 1 and 10000, not {}",
                self.audit.flush_records
            ));
        }
        if !AuditPolicy::ROTATE_MIB.contains(&self.audit.rotate_mib) {
            problem(format!(
                "audit.rotate_mib must be between {} and {} (MiB per segment), not {}",
                AuditPolicy::ROTATE_MIB.start(),
                AuditPolicy::ROTATE_MIB.end(),
                self.audit.rotate_mib
            ));
        }
        if self.audit.retain_days > AuditPolicy::MAX_RETAIN_DAYS {
            problem(format!(
                "audit.retain_days must be between 1 and {} days, or 0 to keep every record forever, not {}",
                AuditPolicy::MAX_RETAIN_DAYS,
                self.audit.retain_days
            ));
        }
        problems
    }
}

/// A list of words or phrases: no empty entries, none that normalize to nothing.
fn terms(problem: &mut impl FnMut(String), at: &str, list: &[String], non_empty: bool) {
    names(problem, at, list, non_empty);
    for (i, term) in list.iter().enumerate() {
        if !term.trim().is_empty() && crate::form::words(term).is_empty() {
            problem(format!("{at}[{i}] {term:?} has no letters or digits"));
        }
    }
}

/// A list of names: no blank entries, no whitespace or control characters inside parameter
/// names and prefixes; optionally the list itself must not be empty.
fn names(problem: &mut impl FnMut(String), at: &str, list: &[String], non_empty: bool) {
    if non_empty && list.is_empty() {
        problem(format!(
            "{at} must not be empty (that would turn the check off)"
        ));
    }
    for (i, name) in list.iter().enumerate() {
        if name.trim().is_empty() {
            problem(format!("{at}[{i}] is empty"));
        } else if name.chars().any(char::is_control) {
            problem(format!("{at}[{i}] {name:?} contains control characters"));
        }
    }
}

/// An allow-list entry: a lowercase ASCII host name (IDNs in punycode), no scheme, port,
/// path, wildcard or trailing dot; not an IP address.
pub(crate) fn check_allowed_host(host: &str) -> Result<(), &'static str> {
    if host.is_empty() {
        return Err("is empty");
    }
    if !host.is_ascii() {
        return Err("must be ASCII (write internationalized names in punycode, xn--…)");
    }
    if host.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err("must be lowercase");
    }
    if host.contains("://") || host.contains('/') || host.contains(':') || host.contains('@') {
        return Err("must be a bare host name (no scheme, port, path or userinfo)");
    }
    if host.contains('*') {
        return Err("wildcards are not supported (an entry already covers its subdomains)");
    }
    if host.ends_with('.') || host.starts_with('.') || host.contains("..") {
        return Err("must not start or end with a dot or contain an empty label");
    }
    match url::Host::parse(host) {
        Ok(url::Host::Domain(domain)) if domain == host => {}
        Ok(url::Host::Domain(_)) => return Err("is not in canonical form"),
        Ok(_) => {
            return Err("IP addresses cannot be allow-listed (IP-literal URLs are always refused)");
        }
        Err(_) => return Err("is not a valid host name"),
    }
    match idna::domain_to_ascii_strict(host) {
        Ok(ascii) if ascii == host => Ok(()),
        _ => Err("is not a valid host name (letters, digits and hyphens; punycode must decode)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_policy_is_valid() {
        let policy = Policy::default_policy();
        assert!(!policy.version.is_empty());
    }

    #[test]
    fn a_policy_file_without_request_terms_gets_the_shipped_list() {
        let shipped = Policy::default_policy();
        assert_eq!(shipped.form.request_terms, DEFAULT_REQUEST_TERMS);
        let start = DEFAULT_POLICY_TOML.find("request_terms = ").unwrap();
        let end = start + DEFAULT_POLICY_TOML[start..].find('\n').unwrap();
        let older = with(|t| t.replace(&DEFAULT_POLICY_TOML[start..end], "")).unwrap();
        assert_eq!(older.form.request_terms, DEFAULT_REQUEST_TERMS);
        let emptied =
            with(|t| t.replace(&DEFAULT_POLICY_TOML[start..end], "request_terms = []")).unwrap();
        assert!(emptied.form.request_terms.is_empty());
        let blank =
            with(|t| t.replace(&DEFAULT_POLICY_TOML[start..end], "request_terms = [\" \"]"))
                .unwrap_err();
        assert!(
            blank.to_string().contains("form.request_terms[0]"),
            "{blank}"
        );
    }

    fn with(edit: impl Fn(&str) -> String) -> Result<Policy, PolicyError> {
        Policy::from_toml(&edit(DEFAULT_POLICY_TOML))
    }

    #[test]
    fn unknown_settings_are_refused() {
        let error = with(|t| t.replace("[abuse]", "[abuse]\nmax_elicitation = 3")).unwrap_err();
        let audit = with(|t| t.replace("flush_ms = 50", "flush_ms = 0")).unwrap_err();
        assert!(
            audit
                .to_string()
                .contains("audit.flush_ms must be between 1 and 1000, not 0"),
            "{audit}"
        );
        let audit =
            with(|t| t.replace("durability = \"batched\"", "durability = \"later\"")).unwrap_err();
        assert!(audit.to_string().contains("later"), "{audit}");
        let sync =
            with(|t| t.replace("durability = \"batched\"", "durability = \"sync\"")).unwrap();
        assert_eq!(sync.audit.durability, AuditMode::Sync);
        // A file from before [audit] existed gets the shipped default.
        let old = with(|t| t[..t.find("[audit]").unwrap()].to_string()).unwrap();
        assert_eq!(old.audit, AuditPolicy::default());
        assert_eq!(Policy::default_policy().audit, AuditPolicy::default());
        assert!(matches!(error, PolicyError::Parse(_)), "{error}");
        assert!(error.to_string().contains("max_elicitation"), "{error}");
    }

    #[test]
    fn rotation_and_retention_are_checked_and_default_for_older_files() {
        let shipped = Policy::default_policy().audit;
        assert_eq!((shipped.rotate_mib, shipped.retain_days), (64, 180));
        assert_eq!(shipped.keep_days(), Some(180));
        assert_eq!(shipped.rotate_bytes(), 64 * 1024 * 1024);
        // Inside the ranges, at both ends; 0 days is "forever".
        for (rotate, retain, keep) in [(1, 0, None), (1024, 36_500, Some(36_500)), (2, 1, Some(1))]
        {
            let policy = with(|t| {
                t.replace("rotate_mib = 64", &format!("rotate_mib = {rotate}"))
                    .replace("retain_days = 180", &format!("retain_days = {retain}"))
            })
            .unwrap();
            assert_eq!(policy.audit.rotate_mib, rotate);
            assert_eq!(policy.audit.keep_days(), keep);
        }
        for (from, to, says) in [
            (
                "rotate_mib = 64",
                "rotate_mib = 0",
                "audit.rotate_mib must be between 1 and 1024",
            ),
            ("rotate_mib = 64", "rotate_mib = 1025", "not 1025"),
            (
                "retain_days = 180",
                "retain_days = 36501",
                "audit.retain_days must be between 1 and 36500 days, or 0",
            ),
            ("retain_days = 180", "retain_days = -1", "retain_days"),
            (
                "retain_days = 180",
                "retain_days = \"forever\"",
                "retain_days",
            ),
            // A near miss of a key is refused, not ignored (it would keep the default).
            ("retain_days = 180", "retain_day = 30", "retain_day"),
        ] {
            let error = with(|t| t.replace(from, to)).expect_err(to);
            assert!(error.to_string().contains(says), "{to}: {error}");
        }
        // A file from before the keys existed: the shipped rotation and retention.
        let older = with(|t| {
            t.lines()
                .filter(|l| !l.starts_with("rotate_mib") && !l.starts_with("retain_days"))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap();
        assert_eq!(older.audit, AuditPolicy::default());
    }

    #[test]
    fn the_confinement_mode_is_one_of_three_and_defaults_to_preferred() {
        assert_eq!(
            Policy::default_policy().confinement.mode,
            ConfinementMode::Preferred
        );
        for mode in ConfinementMode::ALL {
            let policy = with(|t| {
                t.replace(
                    "mode = \"preferred\"",
                    &format!("mode = \"{}\"", mode.as_str()),
                )
            })
            .unwrap();
            assert_eq!(policy.confinement.mode, mode);
        }
        // A file from before [confinement] existed, or with the section but no mode.
        let older = with(|t| t[..t.find("[confinement]").unwrap()].to_string()).unwrap();
        assert_eq!(older.confinement.mode, ConfinementMode::Preferred);
        let bare = with(|t| t.replace("mode = \"preferred\"", "")).unwrap();
        assert_eq!(bare.confinement.mode, ConfinementMode::Preferred);
        for (to, says) in [
            ("mode = \"strict\"", "strict"),
            ("mode = \"Required\"", "Required"),
            ("mode = \"\"", "mode"),
            ("mode = true", "mode"),
            // A near miss of the key is refused, not ignored (it would keep the default).
            ("modes = \"required\"", "modes"),
            ("mode = \"required\"\nread = [\"~/x\"]", "read"),
        ] {
            let error = with(|t| t.replace("mode = \"preferred\"", to)).expect_err(to);
            assert!(matches!(error, PolicyError::Parse(_)), "{to}: {error}");
            assert!(error.to_string().contains(says), "{to}: {error}");
        }
    }

    #[test]
    fn missing_settings_are_refused() {
        let error = with(|t| {
            t.lines()
                .filter(|l| !l.starts_with("window_seconds"))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_err();
        assert!(error.to_string().contains("window_seconds"), "{error}");
    }

    #[test]
    fn invalid_values_are_refused_with_what_is_wrong() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "window_seconds = 60",
                "window_seconds = 0",
                "abuse.window_seconds",
            ),
            (
                "max_elicitations = 10",
                "max_elicitations = 0",
                "abuse.max_elicitations",
            ),
            (
                "entropy_bits_per_char = 3.5",
                "entropy_bits_per_char = nan",
                "entropy_bits_per_char",
            ),
            (
                "entropy_bits_per_char = 3.5",
                "entropy_bits_per_char = 0.1",
                "entropy_bits_per_char",
            ),
            (
                "entropy_min_length = 20",
                "entropy_min_length = 2",
                "entropy_min_length",
            ),
            ("max_fields = 20", "max_fields = 0", "form.max_fields"),
            ("max_length = 4096", "max_length = 10", "url.max_length"),
            (
                "allowed_hosts = []",
                "allowed_hosts = [\"GitHub.com\"]",
                "lowercase",
            ),
            (
                "allowed_hosts = []",
                "allowed_hosts = [\"*.github.com\"]",
                "wildcard",
            ),
            (
                "allowed_hosts = []",
                "allowed_hosts = [\"https://github.com\"]",
                "bare host",
            ),
            (
                "allowed_hosts = []",
                "allowed_hosts = [\"127.0.0.1\"]",
                "IP addresses",
            ),
            (
                "allowed_hosts = []",
                "allowed_hosts = [\"bücher.example\"]",
                "ASCII",
            ),
            (
                "allowed_hosts = []",
                "allowed_hosts = [\"github.com.\"]",
                "dot",
            ),
            (
                "allowed_hosts = []",
                "allowed_hosts = [\"xn--zz.example\"]",
                "not a valid host name",
            ),
            (
                "user_may_override = [",
                "user_may_override = [\"schema_outside_subset\", ",
                "never be overridden",
            ),
            (
                "user_may_override = [",
                "user_may_override = [\"sensitive_field\", ",
                "not a hold reason code",
            ),
            ("version = \"", "version = \"\" #", "version"),
        ];
        for (from, to, expected) in cases {
            assert!(
                DEFAULT_POLICY_TOML.contains(from),
                "default.toml lacks {from:?}"
            );
            let error = with(|t| t.replacen(from, to, 1)).expect_err(to);
            assert!(
                error.to_string().contains(expected),
                "{to}: expected {expected:?} in {error}"
            );
        }
    }

    #[test]
    fn a_tightened_policy_loads() {
        let policy = with(|t| {
            t.replace(
                "allowed_hosts = []",
                "allowed_hosts = [\"github.com\", \"xn--bcher-kva.example\"]",
            )
            .replace(
                "require_allowlisted_host = false",
                "require_allowlisted_host = true",
            )
            .replace(
                "user_may_override = [\"server_unattested\", \"no_identity_binding\"]",
                "user_may_override = []",
            )
        })
        .unwrap();
        assert!(policy.url.require_allowlisted_host);
        assert_eq!(policy.url.allowed_hosts.len(), 2);
        assert!(policy.evidence.user_may_override.is_empty());
    }
}
