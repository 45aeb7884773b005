//! The declaration: what a server may read, write and reach, and how strictly the machine must
//! enforce it. Independent of the mechanism (bubblewrap on Linux today; see ARCHITECTURE.md for
//! macOS and Windows), so bundles, servers.json and the admission record share one format.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// How strictly confinement is demanded. Ordered so that the strictest of several sources is the
/// maximum (`Off < Preferred < Required`), like the audit durability.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    Default,
)]
#[serde(rename_all = "snake_case")]
pub enum ConfinementMode {
    /// Never confined.
    Off,
    /// Confined wherever the machine can; otherwise runs unconfined, shown and audited. The
    /// default.
    #[default]
    Preferred,
    /// Confined, or refused with `confinement_unavailable`.
    Required,
}

impl ConfinementMode {
    pub const ALL: [ConfinementMode; 3] = [
        ConfinementMode::Off,
        ConfinementMode::Preferred,
        ConfinementMode::Required,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ConfinementMode::Off => "off",
            ConfinementMode::Preferred => "preferred",
            ConfinementMode::Required => "required",
        }
    }

    pub fn parse(s: &str) -> Option<ConfinementMode> {
        ConfinementMode::ALL.into_iter().find(|m| m.as_str() == s)
    }

    pub fn strictest(self, other: ConfinementMode) -> ConfinementMode {
        self.max(other)
    }
}

impl fmt::Display for ConfinementMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Longest path grant accepted, in bytes.
pub const MAX_PATH_GRANT_BYTES: usize = 1024;

/// Paths no grant may name: the sandbox's own `/proc` (the host's would show every process of the
/// user, and `/proc/PID/root` their whole view of the disk) and `/run/gatehouse` (where the init
/// and the proxy socket live; a grant there would hide them). Prefixes by whole segment.
const RESERVED_PATHS: &[&str] = &["/proc", "/run/gatehouse"];

/// A path a server is granted: absolute, or under the user's home written as `~` / `~/x`.
/// Kept as written (normalised only by dropping a trailing `/`) so it can be shown as declared
/// and resolved against whichever home the host runs under.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PathGrant(String);

impl PathGrant {
    /// Absolute ("/srv/data") or under the user's home ("~" or "~/x"). Refused: relative, "~user",
    /// "." or ".." segments, empty segments ("//"), NUL/control characters, over 1024 bytes, "/"
    /// itself, and the reserved `/proc` and `/run/gatehouse` (and anything under them; `/run`
    /// itself too, since it would hide `/run/gatehouse`). A trailing "/" is dropped.
    pub fn parse(s: &str) -> Result<PathGrant, GrantError> {
        let value = s.to_string();
        if s.is_empty() {
            return Err(GrantError::EmptyPath);
        }
        if s.len() > MAX_PATH_GRANT_BYTES {
            return Err(GrantError::PathTooLong {
                len: s.len(),
                max: MAX_PATH_GRANT_BYTES,
            });
        }
        if s.chars().any(char::is_control) {
            return Err(GrantError::PathControlCharacter { value });
        }
        if s.contains("//") {
            return Err(GrantError::EmptySegment { value });
        }
        let trimmed = if s.len() > 1 {
            s.strip_suffix('/').unwrap_or(s)
        } else {
            s
        };
        let rest = if trimmed == "~" {
            ""
        } else if let Some(rest) = trimmed.strip_prefix("~/") {
            rest
        } else if trimmed.starts_with('~') {
            return Err(GrantError::OtherUsersHome { value });
        } else if let Some(rest) = trimmed.strip_prefix('/') {
            if rest.is_empty() {
                return Err(GrantError::RootPath);
            }
            rest
        } else {
            return Err(GrantError::RelativePath { value });
        };
        if !rest.is_empty() {
            for segment in rest.split('/') {
                match segment {
                    "" => return Err(GrantError::EmptySegment { value }),
                    "." | ".." => return Err(GrantError::DotSegment { value }),
                    _ => {}
                }
            }
        }
        if trimmed.starts_with('/') {
            let hits_reserved = RESERVED_PATHS
                .iter()
                .any(|r| under(trimmed, r) || under(r, trimmed));
            if hits_reserved {
                return Err(GrantError::ReservedPath { value });
            }
        }
        Ok(PathGrant(trimmed.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the grant is written relative to the user's home.
    pub fn is_under_home(&self) -> bool {
        self.0.starts_with('~')
    }

    /// The grant on this machine: `~` replaced by `home`. Pure (no filesystem access); the host
    /// checks existence and symlinks.
    pub fn resolve(&self, home: &Path) -> PathBuf {
        if self.0 == "~" {
            home.to_path_buf()
        } else if let Some(rest) = self.0.strip_prefix("~/") {
            home.join(rest)
        } else {
            PathBuf::from(&self.0)
        }
    }
}

/// Whether `path` is `base` or below it, by whole segments.
fn under(path: &str, base: &str) -> bool {
    path == base
        || path
            .strip_prefix(base)
            .is_some_and(|rest| rest.starts_with('/'))
}

impl fmt::Display for PathGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl serde::Serialize for PathGrant {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for PathGrant {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        PathGrant::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// One host and port a server may reach. `host` is normalised: a lowercase DNS name without a
/// trailing dot, a dotted-quad IPv4 address, or an IPv6 address in its canonical text without
/// brackets.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostGrant {
    pub host: String,
    pub port: u16,
}

impl HostGrant {
    /// "host:port": DNS name (LDH labels, lowercased, one trailing dot dropped) or IPv4 or
    /// "[IPv6]"; port 1..=65535 required. Refused: wildcards, userinfo, schemes, paths, non-ASCII
    /// (write punycode).
    pub fn parse(s: &str) -> Result<HostGrant, GrantError> {
        let value = s.to_string();
        if s.is_empty() {
            return Err(GrantError::BadHost { value });
        }
        if !s.is_ascii() {
            return Err(GrantError::NonAsciiHost { value });
        }
        if s.contains("://") {
            return Err(GrantError::HostWithScheme { value });
        }
        if s.contains('@') {
            return Err(GrantError::HostWithUserInfo { value });
        }
        if s.contains('*') {
            return Err(GrantError::WildcardHost { value });
        }
        if s.contains(['/', '?', '#']) {
            return Err(GrantError::HostWithPath { value });
        }
        let Some((host, port)) = split_host_port(s) else {
            return Err(GrantError::MissingPort { value });
        };
        let Some(port) = parse_port(port) else {
            return Err(GrantError::BadPort { value });
        };
        let Some(host) = normalize_host(host) else {
            return Err(GrantError::BadHost { value });
        };
        Ok(HostGrant { host, port })
    }

    /// An ATSA `netAllowedHosts` origin "https://h[:p]" / "http://h[:p]" (default 443 / 80; a
    /// path of "" or "/" only). Other schemes refused.
    pub fn from_origin(origin: &str) -> Result<HostGrant, GrantError> {
        let value = origin.to_string();
        if !origin.is_ascii() {
            return Err(GrantError::NonAsciiHost { value });
        }
        let Some((scheme, rest)) = origin.split_once("://") else {
            return Err(GrantError::BadOrigin { value });
        };
        let default_port = if scheme.eq_ignore_ascii_case("https") {
            443
        } else if scheme.eq_ignore_ascii_case("http") {
            80
        } else {
            return Err(GrantError::OriginScheme { value });
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.contains(['/', '?', '#']) {
            return Err(GrantError::HostWithPath { value });
        }
        if authority.contains('@') {
            return Err(GrantError::HostWithUserInfo { value });
        }
        if authority.contains('*') {
            return Err(GrantError::WildcardHost { value });
        }
        let (host, port) = match split_host_port(authority) {
            Some((host, port)) => match parse_port(port) {
                Some(port) => (host, port),
                None => return Err(GrantError::BadPort { value }),
            },
            // An unbracketed IPv6 address is not an origin's host.
            None if authority.contains(':') => return Err(GrantError::BadHost { value }),
            None => (authority, default_port),
        };
        let Some(host) = normalize_host(host) else {
            return Err(GrantError::BadHost { value });
        };
        Ok(HostGrant { host, port })
    }

    /// `host` as a client asked for it (normalised the same way) and `port`.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        port == self.port && normalize_host(host).is_some_and(|h| h == self.host)
    }
}

impl fmt::Display for HostGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl serde::Serialize for HostGrant {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for HostGrant {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        HostGrant::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Splits "host:port" / "[v6]:port" at the port's colon. None when there is no port (including
/// an unbracketed IPv6 address, whose colons are not a port separator).
pub(crate) fn split_host_port(s: &str) -> Option<(&str, &str)> {
    if s.starts_with('[') {
        let close = s.find(']')?;
        let port = s[close + 1..].strip_prefix(':')?;
        Some((&s[..=close], port))
    } else {
        let (host, port) = s.rsplit_once(':')?;
        if host.contains(':') {
            return None;
        }
        Some((host, port))
    }
}

/// A decimal port 1..=65535, digits only (no sign, no spaces); leading zeros are refused so one
/// port has one spelling.
pub(crate) fn parse_port(s: &str) -> Option<u16> {
    if s.is_empty() || s.len() > 5 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if s.len() > 1 && s.starts_with('0') {
        return None;
    }
    match s.parse::<u16>() {
        Ok(0) | Err(_) => None,
        Ok(port) => Some(port),
    }
}

/// Normalises a host as a client wrote it (lowercase ASCII, one trailing dot dropped, brackets of
/// an IPv6 literal removed for comparison); None when it is not a valid host.
///
/// Names whose last label is numeric ("1.2.3.04", "0x7f.1", "127.1") are not DNS names but
/// addresses some resolvers read loosely; they are accepted only as strict dotted-quad IPv4, so
/// one address never has two spellings that compare differently.
pub fn normalize_host(host: &str) -> Option<String> {
    if !host.is_ascii() || host.is_empty() {
        return None;
    }
    if let Some(inner) = host.strip_prefix('[') {
        let inner = inner.strip_suffix(']')?;
        return inner.parse::<Ipv6Addr>().ok().map(|a| a.to_string());
    }
    if host.contains(':') {
        // An IPv6 address as stored in a grant (without brackets). Zones ("%eth0") do not parse.
        return host.parse::<Ipv6Addr>().ok().map(|a| a.to_string());
    }
    let name = host.strip_suffix('.').unwrap_or(host);
    if name.is_empty() || name.len() > 253 {
        return None;
    }
    let last = name.rsplit('.').next().unwrap_or(name);
    if looks_numeric(last) {
        // Std's parser takes exactly four decimal octets without leading zeros.
        return name.parse::<Ipv4Addr>().ok().map(|a| a.to_string());
    }
    let lower = name.to_ascii_lowercase();
    let ldh = lower.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    });
    ldh.then_some(lower)
}

/// WHATWG's "ends in a number": all decimal digits, or 0x followed by hex digits.
fn looks_numeric(label: &str) -> bool {
    if !label.is_empty() && label.bytes().all(|b| b.is_ascii_digit()) {
        return true;
    }
    let lower = label.to_ascii_lowercase();
    lower
        .strip_prefix("0x")
        .is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// What the server may reach over the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    /// No network at all (loopback of its own namespace only).
    None,
    /// Only these hosts and ports, through the per-server proxy.
    Hosts(Vec<HostGrant>),
    /// The machine's network, unfiltered (shares the host's network namespace).
    Any,
}

/// Everything a confined server is granted beyond the system and its own code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grants {
    /// Readable paths.
    pub read: Vec<PathGrant>,
    /// Writable (and readable) paths.
    pub write: Vec<PathGrant>,
    pub network: Network,
    /// 0: the server may start no processes (threads only).
    pub processes: u32,
    /// Data-segment bound in MiB.
    pub memory_mib: u32,
}

pub const DEFAULT_MEMORY_MIB: u32 = 4096;
pub const MAX_MEMORY_MIB: u32 = 65536;
pub const MAX_PROCESSES: u32 = 1024;
pub const MAX_PATH_GRANTS: usize = 64;
pub const MAX_HOST_GRANTS: usize = 64;

impl Default for Grants {
    fn default() -> Self {
        Grants {
            read: Vec::new(),
            write: Vec::new(),
            network: Network::None,
            processes: 0,
            memory_mib: DEFAULT_MEMORY_MIB,
        }
    }
}

impl Grants {
    /// Widens self by other: paths and hosts unioned (deduplicated, order kept), Any dominates,
    /// processes and memory the larger.
    pub fn widen(&mut self, other: &Grants) {
        union_into(&mut self.read, &other.read);
        union_into(&mut self.write, &other.write);
        self.network = match (&self.network, &other.network) {
            (Network::Any, _) | (_, Network::Any) => Network::Any,
            (Network::None, Network::None) => Network::None,
            (Network::Hosts(mine), Network::None) => Network::Hosts(mine.clone()),
            (Network::None, Network::Hosts(theirs)) => {
                let mut hosts = Vec::new();
                union_into(&mut hosts, theirs);
                Network::Hosts(hosts)
            }
            (Network::Hosts(mine), Network::Hosts(theirs)) => {
                let mut hosts = mine.clone();
                union_into(&mut hosts, theirs);
                Network::Hosts(hosts)
            }
        };
        self.processes = self.processes.max(other.processes);
        self.memory_mib = self.memory_mib.max(other.memory_mib);
    }

    /// Whether a connection to `host:port` (as the client wrote the host) is granted.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        match &self.network {
            Network::None => false,
            Network::Any => true,
            Network::Hosts(hosts) => hosts.iter().any(|h| h.matches(host, port)),
        }
    }

    /// The granted hosts; empty unless `Network::Hosts`.
    pub fn hosts(&self) -> &[HostGrant] {
        match &self.network {
            Network::Hosts(hosts) => hosts,
            Network::None | Network::Any => &[],
        }
    }
}

fn union_into<T: Clone + PartialEq>(into: &mut Vec<T>, from: &[T]) {
    for item in from {
        if !into.contains(item) {
            into.push(item.clone());
        }
    }
}

/// The keys of the JSON form, in the order they are written.
pub const CONFINEMENT_KEYS: &[&str] = &["mode", "read", "write", "hosts", "processes", "memoryMiB"];

/// The JSON form shared by a bundle entry's `confinement` (specVersion 7) and a servers.json
/// entry's `confinement`: {"mode"?: "required"|"preferred"|"off", "read"?: [PATH], "write"?:
/// [PATH], "hosts"?: ["host:port", …] | "any", "processes"?: N, "memoryMiB"?: N}. Unknown keys
/// refused; `path` names the JSON location in errors ("signed.servers[0].confinement").
/// Duplicate paths and hosts are kept once; an empty "hosts" list means no network.
pub fn parse_confinement(
    value: &Value,
    path: &str,
) -> Result<(Option<ConfinementMode>, Grants), GrantError> {
    let at = |key: &str| format!("{path}.{key}");
    let Some(object) = value.as_object() else {
        return Err(GrantError::NotAnObject {
            at: path.to_string(),
        });
    };
    if let Some(key) = object
        .keys()
        .find(|k| !CONFINEMENT_KEYS.contains(&k.as_str()))
    {
        return Err(GrantError::UnknownKey {
            at: path.to_string(),
            key: key.clone(),
        });
    }
    let mut grants = Grants::default();
    let mode = match object.get("mode") {
        None => None,
        Some(Value::String(s)) => match ConfinementMode::parse(s) {
            Some(mode) => Some(mode),
            None => {
                return Err(GrantError::BadMode {
                    at: at("mode"),
                    value: s.clone(),
                });
            }
        },
        Some(_) => {
            return Err(GrantError::WrongType {
                at: at("mode"),
                expected: "one of \"required\", \"preferred\", \"off\"",
            });
        }
    };
    for (key, list) in [("read", &mut grants.read), ("write", &mut grants.write)] {
        let Some(v) = object.get(key) else { continue };
        let items = string_array(v, &at(key), "a list of paths such as [\"~/notes\"]")?;
        if items.len() > MAX_PATH_GRANTS {
            return Err(GrantError::TooMany {
                at: at(key),
                count: items.len(),
                max: MAX_PATH_GRANTS,
            });
        }
        for (i, item) in items.into_iter().enumerate() {
            let grant = PathGrant::parse(item).map_err(|e| e.at(format!("{}[{i}]", at(key))))?;
            if !list.contains(&grant) {
                list.push(grant);
            }
        }
    }
    match object.get("hosts") {
        None => {}
        Some(Value::String(s)) if s == "any" => grants.network = Network::Any,
        Some(v) => {
            let items = string_array(
                v,
                &at("hosts"),
                "\"any\" or a list such as [\"api.example.com:443\"]",
            )?;
            if items.len() > MAX_HOST_GRANTS {
                return Err(GrantError::TooMany {
                    at: at("hosts"),
                    count: items.len(),
                    max: MAX_HOST_GRANTS,
                });
            }
            let mut hosts = Vec::new();
            for (i, item) in items.into_iter().enumerate() {
                let grant =
                    HostGrant::parse(item).map_err(|e| e.at(format!("{}[{i}]", at("hosts"))))?;
                if !hosts.contains(&grant) {
                    hosts.push(grant);
                }
            }
            if !hosts.is_empty() {
                grants.network = Network::Hosts(hosts);
            }
        }
    }
    if let Some(v) = object.get("processes") {
        grants.processes = bounded_number(v, &at("processes"), 0, MAX_PROCESSES)?;
    }
    if let Some(v) = object.get("memoryMiB") {
        grants.memory_mib = bounded_number(v, &at("memoryMiB"), 1, MAX_MEMORY_MIB)?;
    }
    Ok((mode, grants))
}

fn string_array<'a>(
    value: &'a Value,
    at: &str,
    expected: &'static str,
) -> Result<Vec<&'a str>, GrantError> {
    let wrong = || GrantError::WrongType {
        at: at.to_string(),
        expected,
    };
    let Some(items) = value.as_array() else {
        return Err(wrong());
    };
    items.iter().map(|v| v.as_str().ok_or_else(wrong)).collect()
}

fn bounded_number(value: &Value, at: &str, min: u32, max: u32) -> Result<u32, GrantError> {
    let out_of_range = || GrantError::OutOfRange {
        at: at.to_string(),
        value: value.to_string(),
        min,
        max,
    };
    let Some(n) = value.as_u64() else {
        return Err(out_of_range());
    };
    match u32::try_from(n) {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(out_of_range()),
    }
}

/// The inverse of [`parse_confinement`]: only non-default fields written; `mode` when Some.
pub fn confinement_to_json(mode: Option<ConfinementMode>, grants: &Grants) -> Value {
    let mut out = Map::new();
    if let Some(mode) = mode {
        out.insert("mode".into(), Value::String(mode.as_str().into()));
    }
    let strings = |list: &[PathGrant]| {
        Value::Array(
            list.iter()
                .map(|p| Value::String(p.as_str().into()))
                .collect(),
        )
    };
    if !grants.read.is_empty() {
        out.insert("read".into(), strings(&grants.read));
    }
    if !grants.write.is_empty() {
        out.insert("write".into(), strings(&grants.write));
    }
    match &grants.network {
        Network::None => {}
        Network::Hosts(hosts) if hosts.is_empty() => {}
        Network::Hosts(hosts) => {
            let list = hosts.iter().map(|h| Value::String(h.to_string())).collect();
            out.insert("hosts".into(), Value::Array(list));
        }
        Network::Any => {
            out.insert("hosts".into(), Value::String("any".into()));
        }
    }
    if grants.processes != 0 {
        out.insert("processes".into(), Value::from(grants.processes));
    }
    if grants.memory_mib != DEFAULT_MEMORY_MIB {
        out.insert("memoryMiB".into(), Value::from(grants.memory_mib));
    }
    Value::Object(out)
}

/// Shows a value in a message: quoted and escaped, and cut short when long.
fn shown(value: &str) -> String {
    const MAX: usize = 80;
    if value.chars().count() <= MAX {
        format!("{value:?}")
    } else {
        let cut: String = value.chars().take(MAX).collect();
        format!("{cut:?}…")
    }
}

/// Why a confinement declaration was refused. Each message says what was wrong, where, and what
/// to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrantError {
    #[error("{at}: {error}")]
    At { at: String, error: Box<GrantError> },
    #[error("{at}: a confinement must be a JSON object such as {{\"read\": [\"~/notes\"]}}")]
    NotAnObject { at: String },
    #[error("{at}: unknown key {key:?}; the known keys are {}", CONFINEMENT_KEYS.join(", "))]
    UnknownKey { at: String, key: String },
    #[error("{at}: expected {expected}")]
    WrongType { at: String, expected: &'static str },
    #[error("{at}: mode {} is not one of \"required\", \"preferred\", \"off\"", shown(.value))]
    BadMode { at: String, value: String },
    #[error("{at}: {count} entries, more than the {max} allowed; grant a common parent instead")]
    TooMany {
        at: String,
        count: usize,
        max: usize,
    },
    #[error("{at}: {value} is not a whole number from {min} to {max}")]
    OutOfRange {
        at: String,
        value: String,
        min: u32,
        max: u32,
    },
    #[error("an empty path grants nothing; write an absolute path or one under \"~/\"")]
    EmptyPath,
    #[error("a path grant is {len} bytes, more than {max}")]
    PathTooLong { len: usize, max: usize },
    #[error("path {} holds a control character", shown(.value))]
    PathControlCharacter { value: String },
    #[error("path {} is relative; write an absolute path or one under \"~/\"", shown(.value))]
    RelativePath { value: String },
    #[error("path {} names another user's home; write \"~/…\" for the user's own home or an absolute path", shown(.value))]
    OtherUsersHome { value: String },
    #[error("path {} has an empty segment (\"//\"); write each directory once", shown(.value))]
    EmptySegment { value: String },
    #[error("path {} has a \".\" or \"..\" segment; write the path without them", shown(.value))]
    DotSegment { value: String },
    #[error("\"/\" would grant the whole disk; grant the directories the server needs")]
    RootPath,
    #[error("path {} is reserved for the sandbox itself (/proc, /run/gatehouse); grant another path", shown(.value))]
    ReservedPath { value: String },
    #[error("host {} has no port; write \"host:port\" such as \"api.example.com:443\"", shown(.value))]
    MissingPort { value: String },
    #[error("host {} has no valid port; write a port from 1 to 65535 without leading zeros", shown(.value))]
    BadPort { value: String },
    #[error("host {} is not a DNS name, an IPv4 address or a bracketed IPv6 address", shown(.value))]
    BadHost { value: String },
    #[error("host {} is not ASCII; write the name in punycode (xn--…)", shown(.value))]
    NonAsciiHost { value: String },
    #[error("host {} has a wildcard; name each host", shown(.value))]
    WildcardHost { value: String },
    #[error("host {} has user information (\"user@\"); write only \"host:port\"", shown(.value))]
    HostWithUserInfo { value: String },
    #[error("host {} has a scheme; write only \"host:port\"", shown(.value))]
    HostWithScheme { value: String },
    #[error("host {} has a path, query or fragment; write only the host and port", shown(.value))]
    HostWithPath { value: String },
    #[error("origin {} is not \"https://host[:port]\" or \"http://host[:port]\"", shown(.value))]
    BadOrigin { value: String },
    #[error("origin {} has a scheme other than https or http; name an https or http origin", shown(.value))]
    OriginScheme { value: String },
}

impl GrantError {
    /// A stable snake_case code.
    pub fn code(&self) -> &'static str {
        match self {
            GrantError::At { error, .. } => error.code(),
            GrantError::NotAnObject { .. } => "confinement_not_object",
            GrantError::UnknownKey { .. } => "confinement_unknown_key",
            GrantError::WrongType { .. } => "confinement_wrong_type",
            GrantError::BadMode { .. } => "confinement_bad_mode",
            GrantError::TooMany { .. } => "confinement_too_many",
            GrantError::OutOfRange { .. } => "confinement_out_of_range",
            GrantError::EmptyPath => "path_empty",
            GrantError::PathTooLong { .. } => "path_too_long",
            GrantError::PathControlCharacter { .. } => "path_control_character",
            GrantError::RelativePath { .. } => "path_relative",
            GrantError::OtherUsersHome { .. } => "path_other_users_home",
            GrantError::EmptySegment { .. } => "path_empty_segment",
            GrantError::DotSegment { .. } => "path_dot_segment",
            GrantError::RootPath => "path_root",
            GrantError::ReservedPath { .. } => "path_reserved",
            GrantError::MissingPort { .. } => "host_missing_port",
            GrantError::BadPort { .. } => "host_bad_port",
            GrantError::BadHost { .. } => "host_invalid",
            GrantError::NonAsciiHost { .. } => "host_non_ascii",
            GrantError::WildcardHost { .. } => "host_wildcard",
            GrantError::HostWithUserInfo { .. } => "host_userinfo",
            GrantError::HostWithScheme { .. } => "host_scheme",
            GrantError::HostWithPath { .. } => "host_path",
            GrantError::BadOrigin { .. } => "origin_invalid",
            GrantError::OriginScheme { .. } => "origin_scheme",
        }
    }

    /// The same error located at a JSON path (kept innermost-first when located twice).
    pub fn at(self, at: impl Into<String>) -> GrantError {
        match self {
            located @ GrantError::At { .. } => located,
            error => GrantError::At {
                at: at.into(),
                error: Box::new(error),
            },
        }
    }
}
