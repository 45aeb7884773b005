//! An MCP Registry `server.json` (the document an admin downloaded from the official registry)
//! read into proposals for `gatehouse bundle add-server --from-registry`: one per package or
//! remote, each saying what it would bind, with which fixed and user arguments, and which
//! secrets it needs. Pure: nothing is fetched or run here.
//!
//! What the document says is a description, never a command: `runtimeHint` and
//! `runtimeArguments` are never executed, secret inputs are only named, and anything that
//! cannot be bound exactly (a range, a tag, an unknown registry or transport, an MCPB without
//! its hash) is a refusal with a stable code, never a guess.

use serde_json::{Map, Value};

/// Why a document, or one of its packages or remotes, cannot be proposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistryErrorCode {
    /// Not JSON, not an object, or a required field missing or of the wrong type.
    DocumentInvalid,
    /// A `registryType` Gatehouse has no binding for (oci, nuget, cargo, go, anything else).
    RegistryTypeUnsupported,
    /// A package from a registry other than the public one its type names.
    RegistrySourceUnsupported,
    /// `latest`, a range or a wildcard where an exact version is needed.
    VersionNotExact,
    /// An MCPB package without `fileSha256`.
    HashMissing,
    /// A `fileSha256` that is not 64 lower-case hex digits.
    HashInvalid,
    /// A transport other than stdio for a package, or other than streamable-http/sse for a
    /// remote.
    TransportUnsupported,
    /// A required argument without a fixed value that is not a directory.
    ArgumentUnsupported,
    /// A remote URL that is not http(s), or keeps a `{variable}` without a default.
    UrlInvalid,
}

impl RegistryErrorCode {
    pub const ALL: [RegistryErrorCode; 9] = [
        RegistryErrorCode::DocumentInvalid,
        RegistryErrorCode::RegistryTypeUnsupported,
        RegistryErrorCode::RegistrySourceUnsupported,
        RegistryErrorCode::VersionNotExact,
        RegistryErrorCode::HashMissing,
        RegistryErrorCode::HashInvalid,
        RegistryErrorCode::TransportUnsupported,
        RegistryErrorCode::ArgumentUnsupported,
        RegistryErrorCode::UrlInvalid,
    ];

    pub fn code(self) -> &'static str {
        match self {
            RegistryErrorCode::DocumentInvalid => "registry_document_invalid",
            RegistryErrorCode::RegistryTypeUnsupported => "registry_type_unsupported",
            RegistryErrorCode::RegistrySourceUnsupported => "registry_source_unsupported",
            RegistryErrorCode::VersionNotExact => "registry_version_not_exact",
            RegistryErrorCode::HashMissing => "registry_hash_missing",
            RegistryErrorCode::HashInvalid => "registry_hash_invalid",
            RegistryErrorCode::TransportUnsupported => "registry_transport_unsupported",
            RegistryErrorCode::ArgumentUnsupported => "registry_argument_unsupported",
            RegistryErrorCode::UrlInvalid => "registry_url_invalid",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryError {
    pub code: RegistryErrorCode,
    pub message: String,
}

impl RegistryError {
    fn new(code: RegistryErrorCode, message: impl Into<String>) -> Self {
        RegistryError {
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for RegistryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code.code())
    }
}

/// What a proposal binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProposalKind {
    Npm,
    Pypi,
    Mcpb,
    /// A `remotes[]` entry: a vouched remote endpoint.
    Remote,
}

impl ProposalKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProposalKind::Npm => "npm",
            ProposalKind::Pypi => "pypi",
            ProposalKind::Mcpb => "mcpb",
            ProposalKind::Remote => "url",
        }
    }
}

/// A named input the document describes (an environment variable or a header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub name: String,
    pub default: Option<String>,
    pub required: bool,
}

/// One package or remote of the document, as `add-server` would take it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    /// Unique within the document, `[a-z0-9-]`: what `--keep` names and the id's suffix.
    pub name: String,
    pub kind: ProposalKind,
    /// npm `NAME@VERSION`, PyPI `NAME==VERSION`, the MCPB's URL or the remote's URL.
    pub target: String,
    /// The MCPB's version when the document gives one (the manifest's is bound).
    pub version: Option<String>,
    /// The document's `fileSha256`, lower-case hex.
    pub file_sha256: Option<String>,
    /// Fixed arguments, in order (`--arg`).
    pub args: Vec<String>,
    /// User-argument rules (`--user-arg`), in order.
    pub user_args: Vec<String>,
    /// Inputs marked secret: keychain references, never written.
    pub secrets: Vec<Input>,
    /// Other inputs (environment variables, headers): reported, never written.
    pub settings: Vec<Input>,
    /// What was read but not used, said plainly (runtime hints, optional arguments).
    pub notes: Vec<String>,
    /// Why it cannot be written; listed all the same.
    pub refused: Option<RegistryError>,
}

/// The document's name and version, and a proposal for each package and remote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerDocument {
    pub name: String,
    pub version: Option<String>,
    pub proposals: Vec<Proposal>,
}

/// Where the public registries are; a package elsewhere under the same name may be another
/// package entirely, and the store fetches from its own configured sources.
const NPM_REGISTRY: &str = "https://registry.npmjs.org";
const PYPI_INDEX: &str = "https://pypi.org";

/// Reads `server.json` bytes into proposals. A document-level problem is an error; a problem
/// with one package or remote refuses that proposal only.
pub fn read_server_json(bytes: &[u8]) -> Result<ServerDocument, RegistryError> {
    let invalid = |m: String| RegistryError::new(RegistryErrorCode::DocumentInvalid, m);
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        invalid(format!(
            "server.json is not JSON (line {} column {}: {e})",
            e.line(),
            e.column()
        ))
    })?;
    let root = value
        .as_object()
        .ok_or_else(|| invalid("server.json is not a JSON object".into()))?;
    let name = root
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| invalid("server.json has no \"name\"".into()))?
        .to_string();
    let version = root
        .get("version")
        .and_then(Value::as_str)
        .map(String::from);
    let list = |key: &str| -> Result<Vec<&Map<String, Value>>, RegistryError> {
        match root.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| {
                    i.as_object()
                        .ok_or_else(|| invalid(format!("an item of \"{key}\" is not an object")))
                })
                .collect(),
            Some(_) => Err(invalid(format!("\"{key}\" is not a list"))),
        }
    };
    let packages = list("packages")?;
    let remotes = list("remotes")?;
    if packages.is_empty() && remotes.is_empty() {
        return Err(invalid(format!(
            "{name} lists no packages and no remotes: there is nothing to bind (it may have a custom installation; see its websiteUrl)"
        )));
    }
    let mut proposals: Vec<Proposal> = packages.into_iter().map(package).collect();
    proposals.extend(remotes.into_iter().map(remote));
    unique_names(&mut proposals);
    Ok(ServerDocument {
        name,
        version,
        proposals,
    })
}

fn empty(kind: ProposalKind, name: String, target: String) -> Proposal {
    Proposal {
        name,
        kind,
        target,
        version: None,
        file_sha256: None,
        args: Vec::new(),
        user_args: Vec::new(),
        secrets: Vec::new(),
        settings: Vec::new(),
        notes: Vec::new(),
        refused: None,
    }
}

fn text<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    object.get(key).and_then(Value::as_str)
}

fn flag(object: &Map<String, Value>, key: &str) -> bool {
    object.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn package(object: &Map<String, Value>) -> Proposal {
    let registry_type = text(object, "registryType").unwrap_or("");
    let identifier = text(object, "identifier").unwrap_or("");
    let kind = match registry_type {
        "npm" => Some(ProposalKind::Npm),
        "pypi" => Some(ProposalKind::Pypi),
        "mcpb" => Some(ProposalKind::Mcpb),
        _ => None,
    };
    let mut proposal = empty(
        kind.unwrap_or(ProposalKind::Npm),
        slug(last_segment(identifier)),
        identifier.to_string(),
    );
    if let Err(refusal) = fill_package(&mut proposal, object, kind, registry_type, identifier) {
        proposal.refused = Some(refusal);
    }
    proposal
}

fn fill_package(
    proposal: &mut Proposal,
    object: &Map<String, Value>,
    kind: Option<ProposalKind>,
    registry_type: &str,
    identifier: &str,
) -> Result<(), RegistryError> {
    let kind = kind.ok_or_else(|| {
        let why = match registry_type {
            "oci" => {
                "OCI images run in a container runtime Gatehouse does not launch, and no binding pins an image's bytes yet; bind the server's npm, PyPI or MCPB package instead"
            }
            "nuget" => {
                "NuGet packages run through dnx, which resolves .NET packages at run time; Gatehouse has no .NET binding, so their bytes cannot be pinned"
            }
            "cargo" | "go" => {
                "source packages are built on the user's machine; Gatehouse binds the bytes that run, so bind a prebuilt MCPB or bind the built executable with --stdio"
            }
            "" => "the package has no registryType",
            _ => "Gatehouse binds npm, PyPI and MCPB packages only",
        };
        RegistryError::new(
            RegistryErrorCode::RegistryTypeUnsupported,
            format!("registryType {registry_type:?} ({identifier}) is not supported: {why}"),
        )
    })?;
    if identifier.is_empty() {
        return Err(RegistryError::new(
            RegistryErrorCode::DocumentInvalid,
            format!("a {registry_type} package has no identifier"),
        ));
    }
    let transport = object
        .get("transport")
        .and_then(|t| t.get("type"))
        .and_then(Value::as_str);
    match transport {
        Some("stdio") | None => {}
        Some(other) => {
            return Err(RegistryError::new(
                RegistryErrorCode::TransportUnsupported,
                format!(
                    "{identifier}: transport {other:?} is not supported for a package: Gatehouse runs bound packages over stdio (a remote is bound by its URL in \"remotes\")"
                ),
            ));
        }
    }
    if let Some(base) = text(object, "registryBaseUrl") {
        let public = match kind {
            ProposalKind::Npm => Some(NPM_REGISTRY),
            ProposalKind::Pypi => Some(PYPI_INDEX),
            _ => None,
        };
        if let Some(public) = public
            && base.trim_end_matches('/') != public
        {
            return Err(RegistryError::new(
                RegistryErrorCode::RegistrySourceUnsupported,
                format!(
                    "{identifier} comes from {base}, not {public}: the store fetches from its configured sources, where the same name may be another package; bind it with --{} and a lockfile you reviewed",
                    kind.as_str()
                ),
            ));
        }
    }
    proposal.file_sha256 = match text(object, "fileSha256") {
        Some(hash) if is_sha256_hex(hash) => Some(hash.to_string()),
        Some(hash) => {
            return Err(RegistryError::new(
                RegistryErrorCode::HashInvalid,
                format!("{identifier}: fileSha256 {hash:?} is not 64 lower-case hex digits"),
            ));
        }
        None => None,
    };
    let version = text(object, "version");
    match kind {
        ProposalKind::Npm | ProposalKind::Pypi => {
            let version = version.ok_or_else(|| {
                RegistryError::new(
                    RegistryErrorCode::VersionNotExact,
                    format!("{identifier} names no version; an exact version is bound"),
                )
            })?;
            exact_version(identifier, version)?;
            proposal.target = match kind {
                ProposalKind::Npm => format!("{identifier}@{version}"),
                _ => format!("{identifier}=={version}"),
            };
            proposal.version = Some(version.to_string());
        }
        ProposalKind::Mcpb => {
            if proposal.file_sha256.is_none() {
                return Err(RegistryError::new(
                    RegistryErrorCode::HashMissing,
                    format!(
                        "{identifier}: an MCPB package needs fileSha256 (the registry requires it); without it the downloaded file cannot be checked"
                    ),
                ));
            }
            if !(identifier.starts_with("https://") || identifier.starts_with("http://")) {
                return Err(RegistryError::new(
                    RegistryErrorCode::UrlInvalid,
                    format!("{identifier}: an MCPB identifier is the URL of the .mcpb file"),
                ));
            }
            if let Some(version) = version {
                exact_version(identifier, version)?;
                proposal.version = Some(version.to_string());
            }
            proposal.name = slug(
                last_segment(identifier)
                    .strip_suffix(".mcpb")
                    .unwrap_or(last_segment(identifier)),
            );
        }
        // Packages map to npm, pypi or mcpb only.
        ProposalKind::Remote => {}
    }
    if object.contains_key("runtimeHint") || object.contains_key("runtimeArguments") {
        proposal.notes.push(format!(
            "runtimeHint/runtimeArguments ignored: the store runs the bound package itself, never through {}",
            text(object, "runtimeHint").unwrap_or("a launcher")
        ));
    }
    arguments(proposal, object)?;
    for input in inputs(object, "environmentVariables") {
        let (input, secret) = input;
        if secret {
            proposal.secrets.push(input);
        } else {
            proposal.settings.push(input);
        }
    }
    Ok(())
}

fn arguments(proposal: &mut Proposal, object: &Map<String, Value>) -> Result<(), RegistryError> {
    let Some(list) = object.get("packageArguments") else {
        return Ok(());
    };
    let list = list.as_array().ok_or_else(|| {
        RegistryError::new(
            RegistryErrorCode::DocumentInvalid,
            "\"packageArguments\" is not a list",
        )
    })?;
    for argument in list {
        let argument = argument.as_object().ok_or_else(|| {
            RegistryError::new(
                RegistryErrorCode::DocumentInvalid,
                "an item of \"packageArguments\" is not an object",
            )
        })?;
        let kind = text(argument, "type").unwrap_or("");
        let label = text(argument, "name")
            .or_else(|| text(argument, "valueHint"))
            .unwrap_or("(unnamed)")
            .to_string();
        let value = text(argument, "value");
        if value.is_some_and(|v| v.contains('{')) && argument.contains_key("variables") {
            return Err(RegistryError::new(
                RegistryErrorCode::ArgumentUnsupported,
                format!(
                    "argument {label}: its value is built from variables the user fills in; bind it with --arg and --user-arg yourself"
                ),
            ));
        }
        match (kind, value) {
            ("positional", Some(value)) => proposal.args.push(value.to_string()),
            ("named", Some(value)) => {
                proposal.args.push(label.clone());
                proposal.args.push(value.to_string());
            }
            ("positional", None) if flag(argument, "isRequired") => {
                if !describes_directory(argument) {
                    return Err(RegistryError::new(
                        RegistryErrorCode::ArgumentUnsupported,
                        format!(
                            "required argument {label} has no fixed value and is not a directory: Gatehouse lets users supply directories under their home only; give it with --arg, or bind it with --user-arg one_of:…"
                        ),
                    ));
                }
                let max = if flag(argument, "isRepeated") { 8 } else { 1 };
                proposal
                    .user_args
                    .push(format!("existing_directory_under_home:read_only:1:{max}"));
            }
            ("named", None) if flag(argument, "isRequired") => {
                return Err(RegistryError::new(
                    RegistryErrorCode::ArgumentUnsupported,
                    format!(
                        "required argument {label} has no fixed value: a user-supplied value after a flag is not bound; give it with --arg"
                    ),
                ));
            }
            ("positional" | "named", None) => proposal
                .notes
                .push(format!("optional argument {label} not passed")),
            _ => {
                return Err(RegistryError::new(
                    RegistryErrorCode::DocumentInvalid,
                    format!(
                        "argument {label}: type {kind:?} is neither \"positional\" nor \"named\""
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A path argument the user picks: `format: filepath`, or named or described as a directory.
fn describes_directory(argument: &Map<String, Value>) -> bool {
    if text(argument, "format") == Some("filepath") {
        return true;
    }
    ["valueHint", "name", "description"].iter().any(|key| {
        text(argument, key).is_some_and(|t| {
            let t = t.to_ascii_lowercase();
            ["dir", "folder", "path"].iter().any(|w| t.contains(w))
        })
    })
}

/// `(input, is_secret)` of each named item of `key`.
fn inputs(object: &Map<String, Value>, key: &str) -> Vec<(Input, bool)> {
    object
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .filter_map(|item| {
            let name = text(item, "name")?.to_string();
            let secret = flag(item, "isSecret");
            Some((
                Input {
                    name,
                    // A secret's default is never carried: it could be a real credential.
                    default: if secret {
                        None
                    } else {
                        text(item, "default").map(String::from)
                    },
                    required: flag(item, "isRequired"),
                },
                secret,
            ))
        })
        .collect()
}

fn remote(object: &Map<String, Value>) -> Proposal {
    let kind = text(object, "type")
        .or_else(|| text(object, "transport_type"))
        .unwrap_or("");
    let raw_url = text(object, "url").unwrap_or("");
    let mut proposal = empty(
        ProposalKind::Remote,
        format!("remote-{}", slug(kind)),
        raw_url.to_string(),
    );
    let filled = (|| -> Result<(), RegistryError> {
        if !matches!(kind, "streamable-http" | "sse") {
            return Err(RegistryError::new(
                RegistryErrorCode::TransportUnsupported,
                format!(
                    "remote {raw_url}: transport {kind:?} is not supported (streamable-http or sse)"
                ),
            ));
        }
        proposal.target = substitute(raw_url, object.get("variables"))?;
        let scheme_ok =
            proposal.target.starts_with("https://") || proposal.target.starts_with("http://");
        if !scheme_ok {
            return Err(RegistryError::new(
                RegistryErrorCode::UrlInvalid,
                format!("remote {raw_url:?} is not an http(s) URL"),
            ));
        }
        for (input, secret) in inputs(object, "headers") {
            if secret {
                proposal.secrets.push(input);
            } else {
                proposal.settings.push(input);
            }
        }
        if kind == "sse" {
            proposal
                .notes
                .push("an SSE endpoint: Gatehouse connects with Streamable HTTP".into());
        }
        Ok(())
    })();
    if let Err(refusal) = filled {
        proposal.refused = Some(refusal);
    }
    proposal
}

/// `{name}` in a remote URL replaced by its variable's default; one left without a default
/// refuses (the URL bound is the one the admin reviews, never filled in later).
fn substitute(url: &str, variables: Option<&Value>) -> Result<String, RegistryError> {
    let mut out = String::new();
    let mut rest = url;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let end = after.find('}').ok_or_else(|| {
            RegistryError::new(
                RegistryErrorCode::UrlInvalid,
                format!("remote {url:?}: an unclosed {{"),
            )
        })?;
        let name = &after[..end];
        let value = variables
            .and_then(|v| v.get(name))
            .and_then(|v| v.get("default"))
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty() && !v.contains(['/', '{', '}', '@', '?', '#']))
            .ok_or_else(|| {
                RegistryError::new(
                    RegistryErrorCode::UrlInvalid,
                    format!(
                        "remote {url:?}: variable {{{name}}} has no plain default; bind the URL you mean with --url"
                    ),
                )
            })?;
        out.push_str(value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// An exact version: not a tag, range or wildcard (`latest`, `^1`, `~1`, `>=1`, `1.x`, `1.*`,
/// `1 - 2`, `a || b`).
pub fn exact_version(identifier: &str, version: &str) -> Result<(), RegistryError> {
    let refuse = || {
        RegistryError::new(
            RegistryErrorCode::VersionNotExact,
            format!(
                "{identifier}: version {version:?} is not exact (a tag, range or wildcard); server.json must name the exact version to bind"
            ),
        )
    };
    let starts_with_digit = version.chars().next().is_some_and(|c| c.is_ascii_digit());
    let allowed = version
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '_' | '!'));
    let wildcard = version
        .split(['.', '-', '+'])
        .any(|part| matches!(part, "x" | "X" | "*" | ""));
    if starts_with_digit && allowed && !wildcard {
        Ok(())
    } else {
        Err(refuse())
    }
}

fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn last_segment(identifier: &str) -> &str {
    identifier
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(identifier)
}

/// `[a-z0-9-]`, runs of anything else as one `-`; never empty.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-').to_string();
    if out.is_empty() {
        "server".to_string()
    } else {
        out
    }
}

/// Names made unique in document order: the second `x` becomes `x-2`.
fn unique_names(proposals: &mut [Proposal]) {
    let mut seen: Vec<String> = Vec::new();
    for proposal in proposals.iter_mut() {
        let mut name = proposal.name.clone();
        let mut n = 2;
        while seen.contains(&name) {
            name = format!("{}-{n}", proposal.name);
            n += 1;
        }
        proposal.name = name.clone();
        seen.push(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(value: Value) -> Result<ServerDocument, RegistryError> {
        read_server_json(value.to_string().as_bytes())
    }

    fn one(package: Value) -> Proposal {
        read(json!({"name": "io.example/x", "packages": [package]}))
            .unwrap()
            .proposals
            .remove(0)
    }

    fn refused(package: Value) -> RegistryErrorCode {
        one(package).refused.expect("refused").code
    }

    #[test]
    fn codes_are_distinct_snake_case() {
        let mut codes: Vec<&str> = RegistryErrorCode::ALL.iter().map(|c| c.code()).collect();
        assert!(
            codes
                .iter()
                .all(|c| c.chars().all(|c| c == '_' || c.is_ascii_lowercase()))
        );
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), RegistryErrorCode::ALL.len());
    }

    #[test]
    fn an_npm_package_becomes_name_at_version_with_its_fixed_arguments() {
        let p = one(json!({
            "registryType": "npm", "registryBaseUrl": "https://registry.npmjs.org",
            "identifier": "@modelcontextprotocol/server-filesystem", "version": "2026.8.31",
            "transport": {"type": "stdio"}, "runtimeHint": "npx",
            "runtimeArguments": [{"type": "positional", "value": "--yes"}],
            "packageArguments": [
                {"type": "positional", "value": "mcp"},
                {"type": "named", "name": "--port", "value": "8080"},
                {"type": "positional", "valueHint": "target_dir", "isRequired": true, "isRepeated": true},
                {"type": "named", "name": "--mode", "default": "local"}
            ],
            "environmentVariables": [
                {"name": "API_KEY", "isSecret": true, "default": "sk-not-carried"},
                {"name": "LOG_LEVEL", "default": "info"}
            ]
        }));
        assert_eq!(p.refused, None);
        assert_eq!(p.kind, ProposalKind::Npm);
        assert_eq!(p.name, "server-filesystem");
        assert_eq!(
            p.target,
            "@modelcontextprotocol/server-filesystem@2026.8.31"
        );
        assert_eq!(p.args, ["mcp", "--port", "8080"]);
        assert_eq!(p.user_args, ["existing_directory_under_home:read_only:1:8"]);
        assert_eq!(p.secrets[0].name, "API_KEY");
        assert_eq!(p.secrets[0].default, None);
        assert_eq!(p.settings[0].default.as_deref(), Some("info"));
        assert!(p.notes.iter().any(|n| n.contains("runtimeHint")));
        assert!(p.notes.iter().any(|n| n.contains("--mode")));
    }

    #[test]
    fn a_pypi_package_becomes_name_equals_version() {
        let p = one(
            json!({"registryType": "pypi", "identifier": "mcp-server-time",
                           "version": "2026.10.19", "transport": {"type": "stdio"}}),
        );
        assert_eq!(p.refused, None);
        assert_eq!(p.target, "mcp-server-time==2026.10.19");
    }

    #[test]
    fn versions_must_be_exact() {
        for good in ["1.0.2", "0.4.0-beta", "2026.8.31", "1.0.post1", "1!2.0"] {
            assert!(exact_version("x", good).is_ok(), "{good}");
        }
        for bad in [
            "latest", "^1.2.3", "~1.2.3", ">=1.2.3", "1.x", "1.*", "*", "", "1 - 2", "1||2",
            "v1.0", "next",
        ] {
            assert_eq!(
                exact_version("x", bad).unwrap_err().code,
                RegistryErrorCode::VersionNotExact,
                "{bad}"
            );
        }
        assert_eq!(
            refused(json!({"registryType": "npm", "identifier": "a", "version": "latest"})),
            RegistryErrorCode::VersionNotExact
        );
        assert_eq!(
            refused(json!({"registryType": "npm", "identifier": "a"})),
            RegistryErrorCode::VersionNotExact
        );
    }

    #[test]
    fn unknown_registry_types_are_refused_with_the_reason() {
        for kind in ["oci", "nuget", "cargo", "go", "brew", ""] {
            let p = one(json!({"registryType": kind, "identifier": "a", "version": "1.0.0"}));
            let refusal = p.refused.expect("refused");
            assert_eq!(
                refusal.code,
                RegistryErrorCode::RegistryTypeUnsupported,
                "{kind}"
            );
        }
        let p = one(json!({"registryType": "oci", "identifier": "docker.io/a/b:1"}));
        assert!(p.refused.unwrap().message.contains("container"));
    }

    #[test]
    fn mcpb_needs_a_well_formed_hash_and_a_url() {
        let hash = "fe333e598595000ae021bd27117db32ec69af6987f507ba7a63c90638ff633ce";
        let p = one(json!({"registryType": "mcpb",
            "identifier": "https://example.com/releases/text-editor.mcpb", "fileSha256": hash}));
        assert_eq!(p.refused, None);
        assert_eq!(p.name, "text-editor");
        assert_eq!(p.file_sha256.as_deref(), Some(hash));
        assert_eq!(
            refused(json!({"registryType": "mcpb", "identifier": "https://e.com/a.mcpb"})),
            RegistryErrorCode::HashMissing
        );
        assert_eq!(
            refused(
                json!({"registryType": "mcpb", "identifier": "https://e.com/a.mcpb",
                           "fileSha256": hash.to_uppercase()})
            ),
            RegistryErrorCode::HashInvalid
        );
        assert_eq!(
            refused(json!({"registryType": "mcpb", "identifier": "a.mcpb", "fileSha256": hash})),
            RegistryErrorCode::UrlInvalid
        );
    }

    #[test]
    fn other_sources_and_transports_are_refused() {
        assert_eq!(
            refused(
                json!({"registryType": "npm", "identifier": "a", "version": "1.0.0",
                           "registryBaseUrl": "https://npm.evil.example"})
            ),
            RegistryErrorCode::RegistrySourceUnsupported
        );
        assert_eq!(
            refused(
                json!({"registryType": "npm", "identifier": "a", "version": "1.0.0",
                           "transport": {"type": "streamable-http", "url": "http://localhost:3000/mcp"}})
            ),
            RegistryErrorCode::TransportUnsupported
        );
        assert_eq!(
            refused(
                json!({"registryType": "npm", "identifier": "a", "version": "1.0.0",
                "packageArguments": [{"type": "positional", "valueHint": "api_region", "isRequired": true}]})
            ),
            RegistryErrorCode::ArgumentUnsupported
        );
    }

    #[test]
    fn remotes_substitute_defaults_and_keep_secrets_out() {
        let doc = read(json!({"name": "io.example/r", "remotes": [
            {"type": "streamable-http", "url": "https://{host}/mcp",
             "headers": [{"name": "Authorization", "isSecret": true, "isRequired": true},
                         {"name": "X-Region", "default": "us-east-1"}],
             "variables": {"host": {"default": "api.example.com"}}},
            {"type": "sse", "url": "https://api.example.com/sse"},
            {"type": "websocket", "url": "wss://api.example.com/ws"},
            {"type": "streamable-http", "url": "https://{tenant}.example.com/mcp"},
            {"type": "streamable-http", "url": "https://{host}/mcp",
             "variables": {"host": {"default": "evil.example/x"}}}
        ]}))
        .unwrap();
        let p = &doc.proposals;
        assert_eq!(p[0].target, "https://api.example.com/mcp");
        assert_eq!(p[0].name, "remote-streamable-http");
        assert_eq!(p[0].secrets[0].name, "Authorization");
        assert_eq!(p[1].refused, None);
        assert_eq!(
            p[2].refused.as_ref().unwrap().code,
            RegistryErrorCode::TransportUnsupported
        );
        assert_eq!(
            p[3].refused.as_ref().unwrap().code,
            RegistryErrorCode::UrlInvalid
        );
        assert_eq!(
            p[4].refused.as_ref().unwrap().code,
            RegistryErrorCode::UrlInvalid
        );
        assert_eq!(p[3].name, "remote-streamable-http-2");
    }

    #[test]
    fn malformed_documents_are_refused() {
        for bad in [
            &b"{"[..],
            b"[]",
            b"{\"packages\": []}",
            b"{\"name\": \"a/b\"}",
            b"{\"name\": \"a/b\", \"packages\": {}}",
            b"{\"name\": \"a/b\", \"packages\": [1]}",
        ] {
            assert_eq!(
                read_server_json(bad).unwrap_err().code,
                RegistryErrorCode::DocumentInvalid,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn slugs_are_plain() {
        assert_eq!(slug("@Scope/Server_Everything"), "scope-server-everything");
        assert_eq!(slug("../.."), "server");
    }
}
