//! A hashed requirements file (`pip-compile --generate-hashes`, `uv pip compile
//! --generate-hashes`) turned into a PyPI binding's closure for one interpreter: which wheel of
//! each pinned requirement that interpreter installs, by the hashes the admin reviewed.
//!
//! Read strictly: every requirement is `name==version` with at least one `--hash=sha256:…`;
//! ranges, `===`, extras, URLs, editables and options that change where packages come from are
//! refused by name, with what to write instead. Markers are evaluated only for the few
//! variables a closure for one interpreter needs. A requirement only an sdist serves is refused:
//! Gatehouse never builds from source.

use gatehouse_attest::package::{ArtifactHash, PinnedPackage};

use crate::names::{is_pep440, normalize_pypi_name};

/// Most requirements read from one file (the binding's closure limit).
pub const MAX_REQUIREMENTS: usize = 4096;

/// One pinned requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// PEP 503-normalised.
    pub name: String,
    /// The exact version after `==`.
    pub version: String,
    /// The SHA-256 digests the line lists, in order, without duplicates.
    pub hashes: Vec<[u8; 32]>,
    /// The marker after `;`, as written (trimmed), with its parsed form.
    pub marker: Option<Marker>,
    /// The (first) line it is on, from 1.
    pub line: usize,
}

impl Requirement {
    /// Whether the requirement applies in `env` (no marker: always).
    pub fn applies(&self, env: &Environment) -> bool {
        self.marker.as_ref().is_none_or(|m| m.evaluate(env))
    }
}

/// The marker variables evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerVariable {
    PythonVersion,
    SysPlatform,
    PlatformSystem,
    ImplementationName,
}

impl MarkerVariable {
    fn parse(text: &str) -> Option<MarkerVariable> {
        match text {
            "python_version" => Some(MarkerVariable::PythonVersion),
            "sys_platform" => Some(MarkerVariable::SysPlatform),
            "platform_system" => Some(MarkerVariable::PlatformSystem),
            "implementation_name" => Some(MarkerVariable::ImplementationName),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// `VARIABLE op "value"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerClause {
    pub variable: MarkerVariable,
    pub op: MarkerOp,
    pub value: String,
}

/// A marker as clauses joined by `and` inside alternatives joined by `or` (`and` binds
/// tighter, as in PEP 508).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub text: String,
    pub any_of: Vec<Vec<MarkerClause>>,
}

impl Marker {
    pub fn evaluate(&self, env: &Environment) -> bool {
        self.any_of
            .iter()
            .any(|all| all.iter().all(|c| c.evaluate(env)))
    }
}

impl MarkerClause {
    fn evaluate(&self, env: &Environment) -> bool {
        use std::cmp::Ordering;
        let ordering = match self.variable {
            MarkerVariable::PythonVersion => {
                // Parsed at read time: digits and dots only.
                let want: Vec<u32> = self
                    .value
                    .split('.')
                    .map(|p| p.parse().unwrap_or(0))
                    .collect();
                let have = [env.python.0, env.python.1];
                let len = want.len().max(2);
                let at = |v: &[u32], i: usize| v.get(i).copied().unwrap_or(0);
                (0..len)
                    .map(|i| at(&have, i).cmp(&at(&want, i)))
                    .find(|o| *o != Ordering::Equal)
                    .unwrap_or(Ordering::Equal)
            }
            MarkerVariable::SysPlatform => env.platform.os.sys_platform().cmp(self.value.as_str()),
            MarkerVariable::PlatformSystem => {
                env.platform.os.platform_system().cmp(self.value.as_str())
            }
            MarkerVariable::ImplementationName => {
                env.implementation.name().cmp(self.value.as_str())
            }
        };
        match self.op {
            MarkerOp::Eq => ordering == Ordering::Equal,
            MarkerOp::Ne => ordering != Ordering::Equal,
            MarkerOp::Lt => ordering == Ordering::Less,
            MarkerOp::Le => ordering != Ordering::Greater,
            MarkerOp::Gt => ordering == Ordering::Greater,
            MarkerOp::Ge => ordering != Ordering::Less,
        }
    }
}

/// Why a requirements file is refused. Each names the line and what to write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequirementsError {
    #[error(
        "line {line}: the option {option} is not read: {why}; remove it (every package must be pinned by name==version and --hash, and the binding decides where files come from)"
    )]
    OptionRefused {
        line: usize,
        option: String,
        why: &'static str,
    },
    #[error(
        "line {line}: {text:?} is not a pinned requirement ({why}); write NAME==VERSION --hash=sha256:HEX, as `pip-compile --generate-hashes` or `uv pip compile --generate-hashes` does"
    )]
    NotPinned {
        line: usize,
        text: String,
        why: &'static str,
    },
    #[error("line {line}: {name} has no --hash=sha256:…; generate the file with --generate-hashes")]
    MissingHash { line: usize, name: String },
    #[error(
        "line {line}: {hash:?} is not sha256:<64 hex digits>; only SHA-256 hashes are read (regenerate with --generate-hashes)"
    )]
    BadHash { line: usize, hash: String },
    #[error(
        "line {line}: the marker {marker:?} is not evaluated ({why}); only python_version, sys_platform, platform_system and implementation_name compared with a quoted value, joined by and/or, are read: resolve for one interpreter instead"
    )]
    MarkerUnsupported {
        line: usize,
        marker: String,
        why: String,
    },
    #[error("the file has more than {MAX_REQUIREMENTS} requirements")]
    TooMany,
}

impl RequirementsError {
    pub fn code(&self) -> &'static str {
        match self {
            RequirementsError::OptionRefused { .. } => "option_refused",
            RequirementsError::NotPinned { .. } => "not_pinned",
            RequirementsError::MissingHash { .. } => "missing_hash",
            RequirementsError::BadHash { .. } => "bad_hash",
            RequirementsError::MarkerUnsupported { .. } => "marker_unsupported",
            RequirementsError::TooMany => "too_many_requirements",
        }
    }
}

/// Why a global option is refused.
fn option_refusal(option: &str) -> &'static str {
    match option {
        "-i" | "--index-url" | "--extra-index-url" | "--no-index" | "-f" | "--find-links" => {
            "it changes where packages come from"
        }
        "-e" | "--editable" => "an editable install is a local path, not pinned bytes",
        "-r" | "--requirement" | "-c" | "--constraint" => {
            "another file is not read; put every requirement in this one"
        }
        "--pre" | "--prefer-binary" | "--only-binary" | "--no-binary" => {
            "it changes resolution; the file must already pin every package"
        }
        "--trusted-host" => "it turns off TLS checks",
        _ => "unknown option",
    }
}

/// The logical lines: `\` continuations joined, comments and blank lines dropped, each with
/// its first physical line number.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let (start, mut acc) = current.take().unwrap_or((i + 1, String::new()));
        match raw.strip_suffix('\\') {
            Some(head) => {
                acc.push_str(head);
                acc.push(' ');
                current = Some((start, acc));
            }
            None => {
                acc.push_str(raw);
                out.push((start, acc));
            }
        }
    }
    if let Some(last) = current {
        out.push(last);
    }
    out.into_iter()
        .filter_map(|(line, text)| {
            // A comment starts at `#` at the start or after whitespace (pip's rule).
            let cut = text
                .char_indices()
                .find(|&(i, c)| {
                    c == '#'
                        && (i == 0
                            || text[..i]
                                .chars()
                                .next_back()
                                .is_some_and(char::is_whitespace))
                })
                .map_or(text.len(), |(i, _)| i);
            let kept = text[..cut].trim();
            (!kept.is_empty()).then(|| (line, kept.to_string()))
        })
        .collect()
}

/// Reads a hashed requirements file.
pub fn parse_requirements(text: &str) -> Result<Vec<Requirement>, RequirementsError> {
    let mut out = Vec::new();
    for (line, text) in logical_lines(text) {
        if text.starts_with('-') {
            let option = text
                .split(|c: char| c == '=' || c.is_whitespace())
                .next()
                .unwrap_or_default();
            // Only tightens what pip does; the file is read as hashed either way.
            if option == "--require-hashes" && text == option {
                continue;
            }
            return Err(RequirementsError::OptionRefused {
                line,
                option: option.to_string(),
                why: option_refusal(option),
            });
        }
        // The requirement runs up to the first option token; what follows is options.
        let tokens: Vec<&str> = text.split_whitespace().collect();
        let split = tokens
            .iter()
            .position(|t| t.starts_with('-'))
            .unwrap_or(tokens.len());
        let spec = tokens[..split].join(" ");
        let mut hashes = Vec::new();
        for option in &tokens[split..] {
            let Some(value) = option.strip_prefix("--hash=") else {
                let name = option.split('=').next().unwrap_or_default();
                return Err(RequirementsError::OptionRefused {
                    line,
                    option: name.to_string(),
                    why: if name == "--hash" {
                        "write it as --hash=sha256:HEX"
                    } else {
                        "only --hash=sha256:HEX may follow a requirement"
                    },
                });
            };
            let digest = value
                .strip_prefix("sha256:")
                .filter(|h| h.len() == 64)
                .and_then(|h| hex::decode(h).ok())
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
                .ok_or_else(|| RequirementsError::BadHash {
                    line,
                    hash: value.to_string(),
                })?;
            if !hashes.contains(&digest) {
                hashes.push(digest);
            }
        }
        let (requirement, marker) = match spec.split_once(';') {
            Some((r, m)) => (r.trim(), Some(parse_marker(line, m.trim())?)),
            None => (spec.trim(), None),
        };
        let (name, version) = parse_pin(line, requirement)?;
        if hashes.is_empty() {
            return Err(RequirementsError::MissingHash { line, name });
        }
        if out.len() == MAX_REQUIREMENTS {
            return Err(RequirementsError::TooMany);
        }
        out.push(Requirement {
            name,
            version,
            hashes,
            marker,
            line,
        });
    }
    Ok(out)
}

/// `name==version`, nothing else.
fn parse_pin(line: usize, text: &str) -> Result<(String, String), RequirementsError> {
    let refuse = |why| RequirementsError::NotPinned {
        line,
        text: text.to_string(),
        why,
    };
    if text.contains("://") || text.contains(" @") || text.contains("@ ") {
        return Err(refuse("a URL or direct reference, not a registry version"));
    }
    if text.contains('[') {
        return Err(refuse(
            "extras are not read: list every package the extra adds as its own pinned line",
        ));
    }
    if text.contains("===") {
        return Err(refuse(
            "=== is arbitrary string equality; write == with a PEP 440 version",
        ));
    }
    if text.contains(',') {
        return Err(refuse("a range of versions; pin one with =="));
    }
    let Some((name, version)) = text.split_once("==") else {
        return Err(refuse(
            "no == version (ranges such as >=, ~=, != and bare names are not pins)",
        ));
    };
    let (name, version) = (name.trim(), version.trim());
    if name.contains(['<', '>', '!', '~', '=']) {
        return Err(refuse("a range of versions; pin one with =="));
    }
    if version.contains('*') {
        return Err(refuse("a wildcard version; pin one with =="));
    }
    let name = normalize_pypi_name(name).ok_or_else(|| refuse("not a PEP 508 project name"))?;
    if !is_pep440(version) {
        return Err(refuse("the version is not a normalised PEP 440 version"));
    }
    Ok((name, version.to_string()))
}

fn parse_marker(line: usize, text: &str) -> Result<Marker, RequirementsError> {
    let refuse = |why: String| RequirementsError::MarkerUnsupported {
        line,
        marker: text.to_string(),
        why,
    };
    if text.contains(['(', ')']) {
        return Err(refuse("parentheses".into()));
    }
    let mut any_of = Vec::new();
    for alternative in split_words(text, "or") {
        let mut all = Vec::new();
        for clause in split_words(&alternative, "and") {
            all.push(parse_clause(&clause).map_err(&refuse)?);
        }
        any_of.push(all);
    }
    Ok(Marker {
        text: text.to_string(),
        any_of,
    })
}

/// `text` split at the whole word `word` outside quotes.
fn split_words(text: &str, word: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut quote: Option<char> = None;
    for token in text.split_whitespace() {
        let outside = quote.is_none();
        for c in token.chars() {
            match quote {
                Some(q) if c == q => quote = None,
                None if c == '"' || c == '\'' => quote = Some(c),
                _ => {}
            }
        }
        if outside && token == word {
            parts.push(String::new());
        } else if let Some(last) = parts.last_mut() {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(token);
        }
    }
    parts
}

fn parse_clause(text: &str) -> Result<MarkerClause, String> {
    const OPS: [(&str, MarkerOp); 6] = [
        ("==", MarkerOp::Eq),
        ("!=", MarkerOp::Ne),
        ("<=", MarkerOp::Le),
        (">=", MarkerOp::Ge),
        ("<", MarkerOp::Lt),
        (">", MarkerOp::Gt),
    ];
    if text.contains("===") || text.contains("~=") {
        return Err(format!(
            "the operator in {text:?} (=== and ~= are not read)"
        ));
    }
    let Some((at, symbol, op)) = OPS
        .iter()
        .filter_map(|(s, op)| text.find(s).map(|at| (at, *s, *op)))
        .min_by_key(|(at, s, _)| (*at, std::cmp::Reverse(s.len())))
    else {
        return Err(format!(
            "{text:?} is not VARIABLE op \"value\" (in and not in are not read)"
        ));
    };
    let (left, right) = (text[..at].trim(), text[at + symbol.len()..].trim());
    let variable = MarkerVariable::parse(left).ok_or_else(|| {
        format!("the variable {left:?} (only python_version, sys_platform, platform_system, implementation_name, written first)")
    })?;
    let value = right
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .or_else(|| right.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))
        .filter(|v| !v.contains(['"', '\'']))
        .ok_or_else(|| format!("{right:?} is not one quoted value"))?;
    match variable {
        MarkerVariable::PythonVersion => {
            let numeric = !value.is_empty()
                && value.split('.').all(|p| {
                    !p.is_empty() && p.len() <= 4 && p.bytes().all(|b| b.is_ascii_digit())
                });
            if !numeric {
                return Err(format!("python_version compared with {value:?}, not X.Y"));
            }
        }
        _ if !matches!(op, MarkerOp::Eq | MarkerOp::Ne) => {
            return Err(format!(
                "{left} ordered with {symbol} (only == and != compare names)"
            ));
        }
        _ => {}
    }
    Ok(MarkerClause {
        variable,
        op,
        value: value.to_string(),
    })
}

/// A wheel file name (PEP 427): `{name}-{version}(-{build})?-{python}-{abi}-{platform}.whl`,
/// each tag field a `.`-separated set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelName {
    /// PEP 503-normalised.
    pub name: String,
    pub version: String,
    /// The build tag's leading number (`1` of `1abc`), when there is one.
    pub build: Option<u32>,
    pub python_tags: Vec<String>,
    pub abi_tags: Vec<String>,
    pub platform_tags: Vec<String>,
}

/// Reads a wheel file name; `None` when it is not one.
pub fn parse_wheel_name(file: &str) -> Option<WheelName> {
    let stem = file.strip_suffix(".whl")?;
    if file.contains('/') || stem.len() > 512 {
        return None;
    }
    let parts: Vec<&str> = stem.split('-').collect();
    let (name, version, build, tags) = match parts.as_slice() {
        [n, v, p, a, pl] => (*n, *v, None, [*p, *a, *pl]),
        [n, v, b, p, a, pl] => {
            let digits: String = b.chars().take_while(char::is_ascii_digit).collect();
            let valid = b.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
            (*n, *v, Some((digits.parse().ok()?, valid)), [*p, *a, *pl])
        }
        _ => return None,
    };
    let build = match build {
        Some((number, true)) => Some(number),
        Some((_, false)) => return None,
        None => None,
    };
    let set = |field: &str| -> Option<Vec<String>> {
        let tags: Vec<String> = field.split('.').map(str::to_string).collect();
        tags.iter()
            .all(|t| {
                !t.is_empty()
                    && t.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            })
            .then_some(tags)
    };
    let name = normalize_pypi_name(name)?;
    // Wheel versions may spell a local `+` as `_`: read the normal form only.
    if !is_pep440(version) {
        return None;
    }
    Some(WheelName {
        name,
        version: version.to_string(),
        build,
        python_tags: set(tags[0])?,
        abi_tags: set(tags[1])?,
        platform_tags: set(tags[2])?,
    })
}

/// The Python implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Implementation {
    CPython,
}

impl Implementation {
    /// The wheel-tag prefix.
    pub fn tag(self) -> &'static str {
        match self {
            Implementation::CPython => "cp",
        }
    }
    /// `implementation_name`.
    pub fn name(self) -> &'static str {
        match self {
            Implementation::CPython => "cpython",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    Linux,
}

impl Os {
    pub fn sys_platform(self) -> &'static str {
        match self {
            Os::Linux => "linux",
        }
    }
    pub fn platform_system(self) -> &'static str {
        match self {
            Os::Linux => "Linux",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    X86_64,
    Aarch64,
}

impl Arch {
    /// As platform tags spell it.
    pub fn tag(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Platform {
    pub os: Os,
    pub arch: Arch,
}

/// The interpreter a closure is chosen for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Environment {
    /// (major, minor).
    pub python: (u32, u32),
    pub implementation: Implementation,
    pub platform: Platform,
    /// The C library's (major, minor): manylinux wheels need at most this.
    pub glibc: (u32, u32),
}

/// How well a wheel's (python, abi) pair fits, higher first; `None` when it does not.
/// The order follows pip's tag priority: the interpreter's own ABI, then the stable ABI of
/// this and older versions, then pure Python for this version, for any 3, for older ones.
fn interpreter_rank(python: &str, abi: &str, env: &Environment) -> Option<u32> {
    let (major, minor) = env.python;
    if major != 3 {
        return None;
    }
    let cp = env.implementation.tag();
    let version_of = |tag: &str, prefix: &str| -> Option<u32> {
        let digits = tag.strip_prefix(prefix)?.strip_prefix('3')?;
        if digits.is_empty() || digits.starts_with('0') && digits.len() > 1 {
            return None;
        }
        digits.parse().ok()
    };
    let own = format!("{cp}3{minor}");
    match abi {
        _ if abi == own => (python == own).then_some(1000),
        "abi3" => {
            let n = version_of(python, cp).filter(|n| *n <= minor && *n >= 2)?;
            Some(900 - 2 * (minor - n))
        }
        "none" => {
            if python == own {
                Some(899)
            } else if python == "py3" {
                Some(300)
            } else {
                let n = version_of(python, "py")?;
                match n.cmp(&minor) {
                    std::cmp::Ordering::Equal => Some(400),
                    std::cmp::Ordering::Less => Some(200 + n.min(99)),
                    std::cmp::Ordering::Greater => None,
                }
            }
        }
        _ => None,
    }
}

/// How specific a platform tag is for `env`, higher first; `any` is 0.
fn platform_rank(tag: &str, env: &Environment) -> Option<u32> {
    if tag == "any" {
        return Some(0);
    }
    match env.platform.os {
        Os::Linux => {
            let arch = env.platform.arch.tag();
            let glibc = if let Some(rest) = tag.strip_prefix("manylinux_") {
                let (x, rest) = rest.split_once('_')?;
                let (y, tag_arch) = rest.split_once('_')?;
                if tag_arch != arch {
                    return None;
                }
                let numeric = |s: &str| {
                    (!s.is_empty() && s.len() <= 4 && s.bytes().all(|b| b.is_ascii_digit()))
                        .then(|| s.parse::<u32>().ok())
                        .flatten()
                };
                (numeric(x)?, numeric(y)?)
            } else {
                // The legacy aliases (PEP 600).
                let (alias, tag_arch) = tag.split_once('_')?;
                if tag_arch != arch {
                    return None;
                }
                match alias {
                    "manylinux1" => (2, 5),
                    "manylinux2010" => (2, 12),
                    "manylinux2014" => (2, 17),
                    // linux_ARCH is a local build, not portable: never chosen.
                    _ => return None,
                }
            };
            (glibc <= env.glibc).then(|| 1 + (glibc.0.min(9) * 100 + glibc.1.min(99)))
        }
    }
}

/// Whether `env` can install `w`, and how much it prefers it (higher is better); `None` when
/// it cannot. The interpreter fit counts before the platform's specificity.
pub fn compatible(w: &WheelName, env: &Environment) -> Option<u32> {
    let mut best = None;
    for python in &w.python_tags {
        for abi in &w.abi_tags {
            let Some(rank) = interpreter_rank(python, abi, env) else {
                continue;
            };
            for platform in &w.platform_tags {
                // A compiled ABI on `any` is not a real wheel: refuse rather than guess.
                if platform == "any" && abi != "none" {
                    continue;
                }
                if let Some(p) = platform_rank(platform, env) {
                    let score = rank * 1000 + p;
                    best = best.max(Some(score));
                }
            }
        }
    }
    best
}

/// Why no wheel could be chosen for a requirement. Stable snake_case codes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WheelsError {
    #[error(
        "{requirement} (line {line}): none of the wheels with its hashes installs on Python {python} for this platform (seen: {seen:?}); add the hash of a wheel built for it (or bind another version)"
    )]
    NoWheelForPlatform {
        requirement: String,
        line: usize,
        python: String,
        seen: Vec<String>,
    },
    #[error(
        "{requirement} (line {line}): only a source distribution has its hashes ({files:?}); Gatehouse installs wheels only and never builds from source: pin a version that publishes a wheel"
    )]
    SourceOnly {
        requirement: String,
        line: usize,
        files: Vec<String>,
    },
    #[error(
        "{requirement} (line {line}): the files {files:?} are this version's wheels, but none has a hash the line lists; regenerate the file with --generate-hashes (or check where these files came from)"
    )]
    HashNotListed {
        requirement: String,
        line: usize,
        files: Vec<String>,
    },
    #[error(
        "{requirement} (line {line}): a hash it lists is the file {file}, which is not a wheel of {requirement}; the requirements file pairs a hash with the wrong package: regenerate it"
    )]
    WrongPackage {
        requirement: String,
        line: usize,
        file: String,
    },
    #[error(
        "{requirement} (line {line}): no file has any of its hashes; fetch its wheels first (or regenerate the file)"
    )]
    NoFile { requirement: String, line: usize },
    #[error(
        "{requirement} (line {line}): the wheels {files:?} fit equally well and are different files; which one installs would be a guess: list one wheel's hash for this platform"
    )]
    Ambiguous {
        requirement: String,
        line: usize,
        files: Vec<String>,
    },
    #[error(
        "{name} is required twice for this interpreter (lines {first} and {second}); one version of each project is installed"
    )]
    Duplicate {
        name: String,
        first: usize,
        second: usize,
    },
}

impl WheelsError {
    pub fn code(&self) -> &'static str {
        match self {
            WheelsError::NoWheelForPlatform { .. } => "no_wheel_for_platform",
            WheelsError::SourceOnly { .. } => "source_only",
            WheelsError::HashNotListed { .. } => "hash_not_listed",
            WheelsError::WrongPackage { .. } => "wrong_package",
            WheelsError::NoFile { .. } => "no_file",
            WheelsError::Ambiguous { .. } => "ambiguous_wheels",
            WheelsError::Duplicate { .. } => "duplicate_requirement",
        }
    }
}

fn is_sdist(file: &str) -> bool {
    [".tar.gz", ".zip", ".tar.bz2", ".tgz"]
        .iter()
        .any(|ext| file.ends_with(ext))
}

/// The pinned packages `env` installs: per requirement that applies, the most preferred
/// compatible wheel among `files` (file name, SHA-256 hex) whose hash the requirement lists.
/// In the requirements' order, names normalised, `path` none.
pub fn choose(
    requirements: &[Requirement],
    files: &[(String, String)],
    env: &Environment,
) -> Result<Vec<PinnedPackage>, WheelsError> {
    let digests: Vec<Option<[u8; 32]>> = files
        .iter()
        .map(|(_, h)| {
            hex::decode(h.to_ascii_lowercase())
                .ok()
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
        })
        .collect();
    let mut chosen: Vec<(PinnedPackage, usize)> = Vec::new();
    for req in requirements.iter().filter(|r| r.applies(env)) {
        let label = format!("{}=={}", req.name, req.version);
        if let Some((_, first)) = chosen.iter().find(|(p, _)| p.name == req.name) {
            return Err(WheelsError::Duplicate {
                name: req.name.clone(),
                first: *first,
                second: req.line,
            });
        }
        let listed: Vec<(&str, [u8; 32])> = files
            .iter()
            .zip(&digests)
            .filter_map(|((file, _), d)| {
                d.filter(|d| req.hashes.contains(d))
                    .map(|d| (file.as_str(), d))
            })
            .collect();
        let mut wheels = Vec::new();
        let mut sdists = Vec::new();
        for (file, digest) in &listed {
            match parse_wheel_name(file) {
                Some(w) if w.name == req.name && w.version == req.version => {
                    wheels.push((*file, *digest, w));
                }
                Some(_) => {
                    return Err(WheelsError::WrongPackage {
                        requirement: label,
                        line: req.line,
                        file: file.to_string(),
                    });
                }
                None if is_sdist(file) => sdists.push(file.to_string()),
                None => {
                    return Err(WheelsError::WrongPackage {
                        requirement: label,
                        line: req.line,
                        file: file.to_string(),
                    });
                }
            }
        }
        let mut ranked: Vec<(u32, u32, &str, [u8; 32])> = wheels
            .iter()
            .filter_map(|(f, d, w)| {
                compatible(w, env).map(|score| (score, w.build.unwrap_or(0), *f, *d))
            })
            .collect();
        ranked.sort_by(|a, b| (b.0, b.1).cmp(&(a.0, a.1)).then(a.2.cmp(b.2)));
        let Some(&(score, build, _, digest)) = ranked.first() else {
            if wheels.is_empty() && !sdists.is_empty() {
                return Err(WheelsError::SourceOnly {
                    requirement: label,
                    line: req.line,
                    files: sdists,
                });
            }
            if !wheels.is_empty() {
                return Err(WheelsError::NoWheelForPlatform {
                    requirement: label,
                    line: req.line,
                    python: format!("{}.{}", env.python.0, env.python.1),
                    seen: wheels.iter().map(|(f, _, _)| f.to_string()).collect(),
                });
            }
            let unlisted: Vec<String> = files
                .iter()
                .filter(|(f, _)| {
                    parse_wheel_name(f)
                        .is_some_and(|w| w.name == req.name && w.version == req.version)
                })
                .map(|(f, _)| f.clone())
                .collect();
            return Err(if unlisted.is_empty() {
                WheelsError::NoFile {
                    requirement: label,
                    line: req.line,
                }
            } else {
                WheelsError::HashNotListed {
                    requirement: label,
                    line: req.line,
                    files: unlisted,
                }
            });
        };
        let tied: Vec<&(u32, u32, &str, [u8; 32])> = ranked
            .iter()
            .filter(|r| r.0 == score && r.1 == build && r.3 != digest)
            .collect();
        if !tied.is_empty() {
            return Err(WheelsError::Ambiguous {
                requirement: label,
                line: req.line,
                files: ranked
                    .iter()
                    .filter(|r| r.0 == score && r.1 == build)
                    .map(|r| r.2.to_string())
                    .collect(),
            });
        }
        chosen.push((
            PinnedPackage {
                name: req.name.clone(),
                version: req.version.clone(),
                artifact: ArtifactHash::Sha256(digest),
                path: None,
            },
            req.line,
        ));
    }
    Ok(chosen.into_iter().map(|(p, _)| p).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CORE311: &str = "488319076ec92908b91fc6265ce761f1d78748f69f85518564fd16bf333e1b70";
    const CORE312: &str = "470bbc2495367f60d3ca849a8039e4c164701d10637e7743f4427d92651bdb6d";
    const CORE313: &str = "cbfde3ad127786f1dea1a6cd89a5eb824a16203f24743ad2b4e07506f43bc844";
    const CRYPTO: &str = "4061c0079120205fb760c58acab6443e217307dcf05e3702cf970e0689972856";
    const TZDATA: &str = "0a10eec6e13ef16b627fabed9a5f2ba61a62b1c67f327305f4e7e412a70b4aec";

    fn env(minor: u32, glibc: (u32, u32)) -> Environment {
        Environment {
            python: (3, minor),
            implementation: Implementation::CPython,
            platform: Platform {
                os: Os::Linux,
                arch: Arch::X86_64,
            },
            glibc,
        }
    }

    fn core(minor: u32) -> String {
        format!(
            "pydantic_core-2.50.5-cp3{minor}-cp3{minor}-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"
        )
    }

    fn requirements() -> String {
        format!(
            "# generated\n\
             pydantic-core==2.50.5 \\\n    --hash=sha256:{CORE311} \\\n    --hash=sha256:{CORE312} \\\n    --hash=sha256:{CORE313}\n\
             \n\
             cryptography==50.0.2 --hash=sha256:{CRYPTO}  # abi3\n\
             tzdata==2026.6 \\\n    --hash=sha256:{TZDATA}\n"
        )
    }

    fn files() -> Vec<(String, String)> {
        vec![
            (core(11), CORE311.into()),
            (core(12), CORE312.into()),
            (core(13), CORE313.into()),
            (
                "cryptography-50.0.2-cp311-abi3-manylinux_2_28_x86_64.whl".into(),
                CRYPTO.into(),
            ),
            ("tzdata-2026.6-py2.py3-none-any.whl".into(), TZDATA.into()),
        ]
    }

    fn digest(hex_text: &str) -> ArtifactHash {
        ArtifactHash::Sha256(hex::decode(hex_text).unwrap().try_into().unwrap())
    }

    #[test]
    fn a_hashed_file_is_read_with_continuations_comments_and_markers() {
        let reqs = parse_requirements(&requirements()).unwrap();
        assert_eq!(reqs.len(), 3);
        assert_eq!(reqs[0].name, "pydantic-core");
        assert_eq!(reqs[0].version, "2.50.5");
        assert_eq!(reqs[0].hashes.len(), 3);
        assert_eq!(reqs[0].line, 2);
        assert_eq!(reqs[1].line, 7);
        assert_eq!(reqs[2].name, "tzdata");

        let text = format!(
            "--require-hashes\nexceptiongroup==1.3.0 ; python_version < \"3.11\" --hash=sha256:{TZDATA}\n\
             pywin32==311 ; sys_platform == 'win32' or platform_system == \"Windows\" --hash=sha256:{TZDATA}\n\
             uvloop==0.21.0 ; sys_platform != \"win32\" and implementation_name == \"cpython\" --hash=sha256:{TZDATA}\n"
        );
        let reqs = parse_requirements(&text).unwrap();
        let on = |minor| {
            reqs.iter()
                .filter(|r| r.applies(&env(minor, (2, 36))))
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(on(11), vec!["uvloop"]);
        assert_eq!(on(10), vec!["exceptiongroup", "uvloop"]);
        assert_eq!(
            reqs[0].marker.as_ref().unwrap().text,
            "python_version < \"3.11\""
        );
    }

    #[test]
    fn anything_but_a_hashed_pin_is_refused_by_name() {
        let h = format!("--hash=sha256:{TZDATA}");
        for (text, code, says) in [
            (format!("mcp>=1.0 {h}"), "not_pinned", "range"),
            (format!("mcp~=1.0 {h}"), "not_pinned", "range"),
            (format!("mcp!=1.0 {h}"), "not_pinned", "range"),
            (format!("mcp==1.0,<2 {h}"), "not_pinned", "range"),
            (format!("mcp===1.0 {h}"), "not_pinned", "==="),
            (format!("mcp==1.* {h}"), "not_pinned", "wildcard"),
            (format!("mcp[cli]==1.0 {h}"), "not_pinned", "extras"),
            (format!("mcp {h}"), "not_pinned", "no =="),
            (
                format!("mcp @ https://example.com/mcp-1.0-py3-none-any.whl {h}"),
                "not_pinned",
                "URL",
            ),
            ("mcp==1.0".into(), "missing_hash", "--generate-hashes"),
            ("mcp==1.0 --hash=md5:abc".into(), "bad_hash", "SHA-256"),
            (
                format!("mcp==1.0 --hash=sha256:{}", &TZDATA[1..]),
                "bad_hash",
                "SHA-256",
            ),
            (
                format!("mcp==1.0 --hash sha256:{TZDATA}"),
                "option_refused",
                "--hash=",
            ),
            ("-e ./local".into(), "option_refused", "editable"),
            (
                "--index-url https://mirror.example/simple".into(),
                "option_refused",
                "where packages come from",
            ),
            ("-i https://x".into(), "option_refused", "-i"),
            (
                "--extra-index-url=https://x".into(),
                "option_refused",
                "--extra-index-url",
            ),
            ("-r other.txt".into(), "option_refused", "another file"),
            (
                format!("mcp==1.0 ; os_name == \"posix\" {h}"),
                "marker_unsupported",
                "os_name",
            ),
            (
                format!("mcp==1.0 ; python_version in \"3.11 3.12\" {h}"),
                "marker_unsupported",
                "in",
            ),
            (
                format!("mcp==1.0 ; (python_version < \"3.12\") {h}"),
                "marker_unsupported",
                "parentheses",
            ),
            (
                format!("mcp==1.0 ; sys_platform < \"linux\" {h}"),
                "marker_unsupported",
                "only == and !=",
            ),
            (
                format!("mcp==1.0 ; \"3.11\" == python_version {h}"),
                "marker_unsupported",
                "variable",
            ),
        ] {
            let error = parse_requirements(&text).unwrap_err();
            assert_eq!(error.code(), code, "{text}: {error}");
            assert!(error.to_string().contains(says), "{text}: {error}");
        }
        // The passing twins.
        for ok in [
            format!("mcp == 1.0 {h}"),
            format!("MCP_Server.Time==2026.10.19 {h}"),
            format!("mcp==1.0 ; python_version >= \"3.10\" {h}"),
        ] {
            assert!(parse_requirements(&ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn wheel_names_are_read_per_pep_427() {
        let w = parse_wheel_name(&core(12)).unwrap();
        assert_eq!(w.name, "pydantic-core");
        assert_eq!(w.version, "2.50.5");
        assert_eq!(w.build, None);
        assert_eq!(w.python_tags, vec!["cp312"]);
        assert_eq!(w.abi_tags, vec!["cp312"]);
        assert_eq!(
            w.platform_tags,
            vec!["manylinux2014_x86_64", "manylinux_2_17_x86_64"]
        );
        let w = parse_wheel_name("tzdata-2026.6-py2.py3-none-any.whl").unwrap();
        assert_eq!(w.python_tags, vec!["py2", "py3"]);
        let w = parse_wheel_name("foo-1.0-2b-py3-none-any.whl").unwrap();
        assert_eq!(w.build, Some(2));
        for bad in [
            "foo-1.0-py3-none-any.tar.gz",
            "foo-1.0-py3-none.whl",
            "foo-1.0-b2-py3-none-any.whl",
            "foo-1.0-1-2-py3-none-any.whl",
            "foo-v1-py3-none-any.whl",
            "foo-1.0-py3-none-ANY.whl",
            "foo-1.0-py3--any.whl",
            "../foo-1.0-py3-none-any.whl",
        ] {
            assert_eq!(parse_wheel_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn compatibility_follows_the_interpreter_and_glibc() {
        let wheel = |f: &str| parse_wheel_name(f).unwrap();
        let e312 = env(12, (2, 36));
        assert!(compatible(&wheel(&core(12)), &e312).is_some());
        assert_eq!(compatible(&wheel(&core(11)), &e312), None);
        assert_eq!(compatible(&wheel(&core(13)), &e312), None);
        let crypto = wheel("cryptography-50.0.2-cp311-abi3-manylinux_2_28_x86_64.whl");
        assert!(compatible(&crypto, &e312).is_some());
        assert!(compatible(&crypto, &env(11, (2, 28))).is_some());
        // abi3 from 3.11 does not serve 3.10; glibc 2.27 is too old for manylinux_2_28.
        assert_eq!(compatible(&crypto, &env(10, (2, 36))), None);
        assert_eq!(compatible(&crypto, &env(12, (2, 27))), None);
        // manylinux1 is glibc 2.5; the wrong architecture and linux_ARCH never fit.
        assert!(
            compatible(
                &wheel("a-1-cp312-cp312-manylinux1_x86_64.whl"),
                &env(12, (2, 5))
            )
            .is_some()
        );
        for never in [
            "a-1-cp312-cp312-manylinux_2_17_aarch64.whl",
            "a-1-cp312-cp312-linux_x86_64.whl",
            "a-1-cp312-cp312-macosx_11_0_arm64.whl",
            "a-1-cp312-cp312-win_amd64.whl",
            "a-1-py2-none-any.whl",
            "a-1-py313-none-any.whl",
            "a-1-cp312-abi3-any.whl",
            "a-1-pp310-pypy310_pp73-manylinux_2_17_x86_64.whl",
        ] {
            assert_eq!(compatible(&wheel(never), &e312), None, "{never}");
        }
        // The most specific wins: own ABI over abi3 over pure Python.
        let own = compatible(&wheel(&core(12)), &e312).unwrap();
        let abi3 = compatible(&wheel("a-1-cp312-abi3-manylinux_2_17_x86_64.whl"), &e312).unwrap();
        let older_abi3 = compatible(&crypto, &e312).unwrap();
        let pure = compatible(&wheel("a-1-py3-none-any.whl"), &e312).unwrap();
        assert!(own > abi3 && abi3 > older_abi3 && older_abi3 > pure);
        let newer_glibc =
            compatible(&wheel("a-1-cp312-cp312-manylinux_2_28_x86_64.whl"), &e312).unwrap();
        assert!(newer_glibc > own);
    }

    #[test]
    fn choose_picks_each_interpreters_wheel_by_the_listed_hashes() {
        let reqs = parse_requirements(&requirements()).unwrap();
        for (minor, core_hash) in [(11, CORE311), (12, CORE312), (13, CORE313)] {
            let chosen = choose(&reqs, &files(), &env(minor, (2, 36))).unwrap();
            assert_eq!(chosen.len(), 3);
            assert_eq!(chosen[0].name, "pydantic-core");
            assert_eq!(chosen[0].artifact, digest(core_hash), "3.{minor}");
            assert_eq!(chosen[1].artifact, digest(CRYPTO));
            assert_eq!(chosen[2].artifact, digest(TZDATA));
            assert_eq!(chosen[2].path, None);
        }
    }

    #[test]
    fn choose_refuses_with_stable_codes() {
        let reqs = parse_requirements(&requirements()).unwrap();
        // Python 3.10: the listed pydantic-core wheels are all for other interpreters.
        let error = choose(&reqs, &files(), &env(10, (2, 36))).unwrap_err();
        assert_eq!(error.code(), "no_wheel_for_platform");
        assert!(
            error.to_string().contains("pydantic-core==2.50.5"),
            "{error}"
        );
        assert!(error.to_string().contains(&core(13)), "{error}");
        // glibc too old for cryptography's manylinux_2_28.
        let error = choose(&reqs, &files(), &env(12, (2, 17))).unwrap_err();
        assert_eq!(error.code(), "no_wheel_for_platform");
        assert!(error.to_string().contains("cryptography"), "{error}");

        // Only an sdist has the hash.
        let sdist = format!("mcp==1.0 --hash=sha256:{TZDATA}");
        let error = choose(
            &parse_requirements(&sdist).unwrap(),
            &[("mcp-1.0.tar.gz".into(), TZDATA.into())],
            &env(12, (2, 36)),
        )
        .unwrap_err();
        assert_eq!(error.code(), "source_only");

        // The seed has the wheel, but with bytes the file does not list.
        let other = "ab".repeat(32);
        let error = choose(
            &parse_requirements(&format!("tzdata==2026.6 --hash=sha256:{other}")).unwrap(),
            &files(),
            &env(12, (2, 36)),
        )
        .unwrap_err();
        assert_eq!(error.code(), "hash_not_listed");
        assert!(
            error
                .to_string()
                .contains("tzdata-2026.6-py2.py3-none-any.whl")
        );

        // A hash of another package's wheel, and a look-alike file name with the right hash.
        let error = choose(
            &parse_requirements(&format!("tzdata==2026.6 --hash=sha256:{CRYPTO}")).unwrap(),
            &files(),
            &env(12, (2, 36)),
        )
        .unwrap_err();
        assert_eq!(error.code(), "wrong_package");
        let error = choose(
            &parse_requirements(&format!("tzdata==2026.6 --hash=sha256:{TZDATA}")).unwrap(),
            &[("tz_data-2026.6-py3-none-any.whl".into(), TZDATA.into())],
            &env(12, (2, 36)),
        )
        .unwrap_err();
        assert_eq!(error.code(), "wrong_package");
        // Another version under the right name is not this requirement's wheel either.
        let error = choose(
            &parse_requirements(&format!("tzdata==2026.5 --hash=sha256:{TZDATA}")).unwrap(),
            &files(),
            &env(12, (2, 36)),
        )
        .unwrap_err();
        assert_eq!(error.code(), "wrong_package");

        // Nothing with the hash at all.
        let error = choose(
            &parse_requirements(&format!("idna==3.20 --hash=sha256:{TZDATA}")).unwrap(),
            &[],
            &env(12, (2, 36)),
        )
        .unwrap_err();
        assert_eq!(error.code(), "no_file");

        // The same project twice for one interpreter; with exclusive markers it is fine.
        let twice = format!(
            "tzdata==2026.6 --hash=sha256:{TZDATA}\ntzdata==2026.6 --hash=sha256:{TZDATA}\n"
        );
        let error = choose(
            &parse_requirements(&twice).unwrap(),
            &files(),
            &env(12, (2, 36)),
        )
        .unwrap_err();
        assert_eq!(error.code(), "duplicate_requirement");
        let split = format!(
            "tzdata==2026.6 ; python_version < \"3.12\" --hash=sha256:{TZDATA}\n\
             tzdata==2026.6 ; python_version >= \"3.12\" --hash=sha256:{TZDATA}\n"
        );
        assert_eq!(
            choose(
                &parse_requirements(&split).unwrap(),
                &files(),
                &env(12, (2, 36))
            )
            .unwrap()
            .len(),
            1
        );

        // Two different files that fit equally well: a guess, refused.
        let two = format!("a==1 --hash=sha256:{TZDATA} --hash=sha256:{CRYPTO}");
        let error = choose(
            &parse_requirements(&two).unwrap(),
            &[
                ("a-1-py3-none-any.whl".into(), TZDATA.into()),
                ("A-1-py3-none-any.whl".into(), CRYPTO.into()),
            ],
            &env(12, (2, 36)),
        )
        .unwrap_err();
        assert_eq!(error.code(), "ambiguous_wheels");
    }
}
