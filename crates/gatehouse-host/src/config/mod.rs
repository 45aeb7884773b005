//! `servers.json`: the `mcpServers` format Claude Desktop, Cursor and VS Code use, plus our own
//! keys (`cwd`, `bearerTokenSecret`), and import from such files.
//!
//! Unknown keys are kept as they are, so a file shared with another client survives a round
//! trip through Gatehouse. Secrets are never stored here: a value may reference one as
//! `${secret:NAME}`, resolved from the [`SecretStore`] when connecting.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::HostError;
use crate::secrets::{SecretStore, SecretValue, validate_name};

mod import;

pub use import::{
    ImportRefusal, ImportReport, Quarantined, RefusedImport, import, import_servers_object,
};

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServersFile {
    #[serde(rename = "mcpServers", default)]
    pub servers: BTreeMap<String, ServerEntry>,
    /// Keys other clients put in the same file.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// One server as written in the file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerEntry {
    /// `stdio`, `http` (also `streamable-http`, `streamableHttp`); inferred when absent.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Name of a keychain secret sent as `Authorization: Bearer <secret>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_secret: Option<String>,
    /// MCP authorization settings (all optional; without them Gatehouse registers itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthEntry>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `oauth` of a server entry: how Gatehouse identifies itself to the server's authorization
/// server. Tokens never appear here: they live in the keychain.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OAuthEntry {
    /// A client id the authorization server issued out of band.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The keychain secret holding that client's secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_secret: Option<String>,
    /// An https URL of a Client ID Metadata Document describing Gatehouse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_metadata_url: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// The loopback port of a pre-registered client's redirect URI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_port: Option<u16>,
}

/// A validated server: what the host connects to.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerSpec {
    Stdio(StdioSpec),
    Http(HttpSpec),
}

#[derive(Debug, Clone, PartialEq)]
pub struct StdioSpec {
    pub command: String,
    pub args: Vec<String>,
    /// Values may hold `${secret:NAME}`.
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HttpSpec {
    pub url: url::Url,
    /// Values may hold `${secret:NAME}`.
    pub headers: Vec<(String, String)>,
    pub bearer_token_secret: Option<String>,
    /// How to sign in when the server requires MCP authorization (used only when neither a
    /// bearer token nor an Authorization header is configured).
    pub oauth: crate::auth::OAuthOptions,
}

impl HttpSpec {
    /// Whether the host signs in with OAuth: the server has no static credential configured.
    pub fn uses_oauth(&self) -> bool {
        self.bearer_token_secret.is_none()
            && !self
                .headers
                .iter()
                .any(|(name, _)| name.eq_ignore_ascii_case("authorization"))
    }
}

impl ServerSpec {
    /// An ad-hoc stdio server from a command line, split like a POSIX shell would (quotes and
    /// backslashes), but never run through a shell.
    pub fn adhoc_stdio(command_line: &str) -> Result<ServerSpec, HostError> {
        let words = shlex::split(command_line).ok_or_else(|| {
            HostError::Config(format!("--stdio {command_line:?}: unbalanced quotes"))
        })?;
        let (command, args) = words.split_first().ok_or_else(|| {
            HostError::Config("--stdio needs a command, e.g. --stdio 'my-server --flag'".into())
        })?;
        Ok(ServerSpec::Stdio(StdioSpec {
            command: command.clone(),
            args: args.to_vec(),
            env: Vec::new(),
            cwd: None,
        }))
    }

    /// An ad-hoc Streamable HTTP server.
    pub fn adhoc_http(url: &str) -> Result<ServerSpec, HostError> {
        Ok(ServerSpec::Http(HttpSpec {
            url: parse_server_url(url, "--url")?,
            headers: Vec::new(),
            bearer_token_secret: None,
            oauth: Default::default(),
        }))
    }

    /// One line for humans: the command line or the URL.
    /// The command line or URL as shown and audited: credential values in arguments and query
    /// parameters are `[redacted]` (references stay, they are not secret).
    pub fn describe(&self) -> String {
        match self {
            ServerSpec::Stdio(s) => std::iter::once(s.command.clone())
                .chain(crate::launch_risk::redact_args(&s.args))
                .map(|w| {
                    shlex::try_quote(&w)
                        .map(|q| q.into_owned())
                        .unwrap_or_else(|_| w.clone())
                })
                .collect::<Vec<_>>()
                .join(" "),
            ServerSpec::Http(h) => crate::launch_risk::redact_url(&h.url),
        }
    }

    pub fn kind(&self) -> ServerKind {
        match self {
            ServerSpec::Stdio(_) => ServerKind::Stdio,
            ServerSpec::Http(_) => ServerKind::Http,
        }
    }
}

/// How a server is reached (its stable snake_case code is what the CLI's JSON, the window and
/// the audit log carry as `transport` or `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerKind {
    /// A program Gatehouse starts, spoken to over its stdin and stdout.
    Stdio,
    /// A Streamable HTTP endpoint.
    Http,
}

impl ServerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ServerKind::Stdio => "stdio",
            ServerKind::Http => "http",
        }
    }
}

impl std::fmt::Display for ServerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

fn parse_server_url(raw: &str, what: &str) -> Result<url::Url, HostError> {
    let url = url::Url::parse(raw)
        .map_err(|e| HostError::Config(format!("{what}: {raw:?} is not a URL ({e})")))?;
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(HostError::Config(format!(
                "{what}: {raw:?} uses scheme {other:?}; a Streamable HTTP server URL is http:// or https://"
            )));
        }
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(HostError::Config(format!(
            "{what}: the URL carries a user name or password; store the credential with `gatehouse secret set` and reference it with bearerTokenSecret"
        )));
    }
    Ok(url)
}

impl ServerEntry {
    /// Validates the entry into a [`ServerSpec`], naming the server and the field at fault.
    pub fn to_spec(&self, name: &str) -> Result<ServerSpec, HostError> {
        let err = |detail: String| HostError::Config(format!("server {name:?}: {detail}"));
        let kind = match self.kind.as_deref() {
            None => None,
            Some("stdio") => Some("stdio"),
            Some("http" | "streamable-http" | "streamableHttp" | "streamable_http") => Some("http"),
            Some("sse") => {
                return Err(err(
                    "type \"sse\" is the deprecated HTTP+SSE transport (2024-11-05), which Gatehouse does not speak; use the server's Streamable HTTP endpoint with type \"http\"".into(),
                ));
            }
            Some(other) => {
                return Err(err(format!(
                    "unknown type {other:?}; use \"stdio\" or \"http\""
                )));
            }
        };
        for secret in self.secret_references() {
            validate_name(&secret).map_err(|e| err(e.to_string()))?;
        }
        match (&self.command, &self.url, kind) {
            (Some(_), Some(_), _) => Err(err(
                "has both \"command\" and \"url\"; a server is either stdio (command) or HTTP (url)".into(),
            )),
            (None, None, _) => Err(err("has neither \"command\" (stdio) nor \"url\" (HTTP)".into())),
            (Some(_), None, Some("http")) => Err(err("type is \"http\" but there is no \"url\"".into())),
            (None, Some(_), Some("stdio")) => Err(err("type is \"stdio\" but there is no \"command\"".into())),
            (Some(command), None, _) => {
                if command.trim().is_empty() {
                    return Err(err("\"command\" is empty".into()));
                }
                if !self.headers.is_empty() || self.bearer_token_secret.is_some() || self.oauth.is_some() {
                    return Err(err("\"headers\", \"bearerTokenSecret\" and \"oauth\" apply to HTTP servers only; a stdio server takes credentials through \"env\"".into()));
                }
                // The person's own confinement (issue 28): the shape a bundle entry uses.
                if let Some(value) = self.other.get("confinement") {
                    gatehouse_confine::parse_confinement(value, &format!("mcpServers.{name}.confinement"))
                        .map_err(|e| err(e.to_string()))?;
                }
                Ok(ServerSpec::Stdio(StdioSpec {
                    command: command.clone(),
                    args: self.args.clone(),
                    env: self.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                    cwd: self.cwd.as_ref().map(PathBuf::from),
                }))
            }
            (None, Some(url), _) => {
                if !self.args.is_empty() || !self.env.is_empty() || self.cwd.is_some() {
                    return Err(err("\"args\", \"env\" and \"cwd\" apply to stdio servers only".into()));
                }
                if self.other.contains_key("confinement") {
                    return Err(err("\"confinement\" applies to stdio servers only: a remote server runs elsewhere; remove it".into()));
                }
                for name in self.headers.keys() {
                    reqwest::header::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| err(format!("header name {name:?} is not a valid HTTP header name")))?;
                    if name.eq_ignore_ascii_case("authorization") && self.bearer_token_secret.is_some() {
                        return Err(err("sets both an Authorization header and bearerTokenSecret; keep one".into()));
                    }
                }
                let oauth = match &self.oauth {
                    None => crate::auth::OAuthOptions::default(),
                    Some(entry) => {
                        if entry.client_secret_secret.is_some() && entry.client_id.is_none() {
                            return Err(err("\"oauth.clientSecretSecret\" needs \"oauth.clientId\" (the secret belongs to a pre-registered client)".into()));
                        }
                        if let Some(doc) = &entry.client_metadata_url {
                            let ok = url::Url::parse(doc).is_ok_and(|u| u.scheme() == "https" && u.path() != "/");
                            if !ok {
                                return Err(err(format!("\"oauth.clientMetadataUrl\" {doc:?} must be an https URL with a path")));
                            }
                        }
                        if self.bearer_token_secret.is_some() || self.headers.keys().any(|h| h.eq_ignore_ascii_case("authorization")) {
                            return Err(err("sets \"oauth\" and a static credential (bearerTokenSecret or an Authorization header); keep one".into()));
                        }
                        crate::auth::OAuthOptions {
                            client_id: entry.client_id.clone(),
                            client_secret_secret: entry.client_secret_secret.clone(),
                            client_metadata_url: entry.client_metadata_url.clone(),
                            scopes: entry.scopes.clone(),
                            redirect_port: entry.redirect_port.unwrap_or(0),
                        }
                    }
                };
                Ok(ServerSpec::Http(HttpSpec {
                    url: parse_server_url(url, &format!("server {name:?}: \"url\""))?,
                    headers: self.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                    bearer_token_secret: self.bearer_token_secret.clone(),
                    oauth,
                }))
            }
        }
    }

    /// Every secret name this entry references.
    pub fn secret_references(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .env
            .values()
            .chain(self.headers.values())
            .chain(self.args.iter())
            .chain(self.url.iter())
            .flat_map(|v| secret_refs(v))
            .collect();
        // Import stores a reference in a URL query form-encoded.
        if let Some(url) = self.url.as_deref().and_then(|u| url::Url::parse(u).ok()) {
            for (_, value) in url.query_pairs() {
                for name in secret_refs(&value) {
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
            }
        }
        names.extend(self.bearer_token_secret.clone());
        names.extend(
            self.oauth
                .as_ref()
                .and_then(|o| o.client_secret_secret.clone()),
        );
        names
    }
}

impl From<&ServerSpec> for ServerEntry {
    fn from(spec: &ServerSpec) -> Self {
        match spec {
            ServerSpec::Stdio(s) => ServerEntry {
                command: Some(s.command.clone()),
                args: s.args.clone(),
                env: s.env.iter().cloned().collect(),
                cwd: s.cwd.as_ref().map(|p| p.display().to_string()),
                ..ServerEntry::default()
            },
            ServerSpec::Http(h) => ServerEntry {
                kind: Some("http".into()),
                url: Some(h.url.to_string()),
                headers: h.headers.iter().cloned().collect(),
                bearer_token_secret: h.bearer_token_secret.clone(),
                oauth: (h.oauth != Default::default()).then(|| OAuthEntry {
                    client_id: h.oauth.client_id.clone(),
                    client_secret_secret: h.oauth.client_secret_secret.clone(),
                    client_metadata_url: h.oauth.client_metadata_url.clone(),
                    scopes: h.oauth.scopes.clone(),
                    redirect_port: (h.oauth.redirect_port != 0).then_some(h.oauth.redirect_port),
                }),
                ..ServerEntry::default()
            },
        }
    }
}

const SECRET_OPEN: &str = "${secret:";

/// Names referenced as `${secret:NAME}` in a value.
fn secret_refs(value: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find(SECRET_OPEN) {
        let after = &rest[start + SECRET_OPEN.len()..];
        match after.find('}') {
            Some(end) => {
                names.push(after[..end].to_string());
                rest = &after[end + 1..];
            }
            None => {
                names.push(after.to_string());
                break;
            }
        }
    }
    names
}

/// Replaces every `${secret:NAME}` in `value` with the secret, and returns which secrets were
/// used so the caller can redact them from the traffic record.
pub fn resolve_secrets(
    value: &str,
    store: &dyn SecretStore,
    used: &mut Vec<(String, SecretValue)>,
) -> Result<String, HostError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find(SECRET_OPEN) {
        out.push_str(&rest[..start]);
        let after = &rest[start + SECRET_OPEN.len()..];
        let end = after.find('}').ok_or_else(|| {
            HostError::Config(format!(
                "unterminated ${{secret:...}} reference in {value:?}"
            ))
        })?;
        let name = &after[..end];
        let secret = lookup_secret(store, name)?;
        out.push_str(secret.expose());
        used.push((name.to_string(), secret));
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `url` with `${secret:NAME}` in its query values replaced by the secrets, form-encoded (a
/// reference is stored encoded, as import writes it).
pub fn resolve_url_secrets(
    url: &url::Url,
    store: &dyn SecretStore,
    used: &mut Vec<(String, SecretValue)>,
) -> Result<url::Url, HostError> {
    if !url.query_pairs().any(|(_, v)| v.contains(SECRET_OPEN)) {
        return Ok(url.clone());
    }
    let pairs = url
        .query_pairs()
        .map(|(k, v)| Ok((k.into_owned(), resolve_secrets(&v, store, used)?)))
        .collect::<Result<Vec<_>, HostError>>()?;
    let mut resolved = url.clone();
    resolved.query_pairs_mut().clear().extend_pairs(pairs);
    Ok(resolved)
}

/// A secret that must exist.
pub fn lookup_secret(store: &dyn SecretStore, name: &str) -> Result<SecretValue, HostError> {
    store.get(name)?.ok_or_else(|| HostError::Secret {
        name: name.to_string(),
        detail: format!("not in the OS keychain; store it with `gatehouse secret set {name}`"),
    })
}

impl ServersFile {
    /// Reads the file; a missing file is an empty configuration.
    pub fn load(path: &Path) -> Result<ServersFile, HostError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ServersFile::default()),
            Err(e) => {
                return Err(HostError::Config(format!(
                    "cannot read {}: {e}",
                    path.display()
                )));
            }
        };
        Self::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<ServersFile, HostError> {
        let file: ServersFile = serde_json::from_str(text).map_err(|e| {
            HostError::Config(format!(
                "{}: line {} column {}: {}; expected {{\"mcpServers\": {{\"NAME\": {{\"command\": ...}} or {{\"url\": ...}}}}}}",
                path.display(),
                e.line(),
                e.column(),
                e
            ))
        })?;
        for (name, entry) in &file.servers {
            validate_server_name(name)
                .map_err(|e| HostError::Config(format!("{}: {e}", path.display())))?;
            entry
                .to_spec(name)
                .map_err(|e| HostError::Config(format!("{}: {e}", path.display())))?;
        }
        Ok(file)
    }

    /// Writes the file atomically ([`crate::files::write_atomically`]), mode 0600, so a crash never leaves half
    /// a file and other users cannot read it.
    pub fn save(&self, path: &Path) -> Result<(), HostError> {
        let mut text = serde_json::to_string_pretty(self).expect("config serializes");
        text.push('\n');
        crate::files::write_atomically(path, text.as_bytes(), 0o600)
            .map_err(|e| HostError::Config(format!("cannot write {}: {e}", path.display())))
    }

    pub fn spec(&self, name: &str, path: &Path) -> Result<ServerSpec, HostError> {
        match self.servers.get(name) {
            Some(entry) => entry.to_spec(name),
            None => Err(self.unknown(name, path)),
        }
    }

    /// The error for a server name that is not in this file, listing the names that are.
    pub fn unknown(&self, name: &str, path: &Path) -> HostError {
        HostError::UnknownServer {
            name: name.to_string(),
            config: path.display().to_string(),
            known: if self.servers.is_empty() {
                "none".into()
            } else {
                self.servers.keys().cloned().collect::<Vec<_>>().join(", ")
            },
        }
    }
}

/// Server names are shown in the UI and used in log file names: printable, no path separators,
/// at most 64 characters.
pub fn validate_server_name(name: &str) -> Result<(), HostError> {
    let ok = !name.trim().is_empty()
        && name.chars().count() <= 64
        && !name
            .chars()
            .any(|c| c.is_control() || c == '/' || c == '\\')
        && name != "."
        && name != "..";
    if ok {
        Ok(())
    } else {
        Err(HostError::Config(format!(
            "server name {name:?} is not allowed: use 1 to 64 printable characters without / or \\"
        )))
    }
}

/// The elicitation policy: the shipped default, or the TOML file at `path`. The error names
/// the file and what is wrong with it; the desktop and the CLI report it under their own code.
pub fn load_policy(path: Option<&Path>) -> Result<gatehouse_policy::Policy, String> {
    let Some(path) = path else {
        return Ok(gatehouse_policy::Policy::default_policy());
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the policy file {}: {e}", path.display()))?;
    gatehouse_policy::Policy::from_toml(&text)
        .map_err(|e| format!("the policy file {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::MemoryStore;

    fn parse(text: &str) -> Result<ServersFile, HostError> {
        ServersFile::parse(text, Path::new("servers.json"))
    }

    #[test]
    fn reads_stdio_and_http_servers_and_keeps_unknown_keys() {
        let text = r#"{
          "mcpServers": {
            "files": {"command": "npx", "args": ["-y", "srv"], "env": {"K": "v"}, "disabled": false},
            "remote": {"type": "http", "url": "https://mcp.example/mcp", "headers": {"X-A": "b"}, "bearerTokenSecret": "tok"}
          },
          "globalShortcut": "Ctrl+Space"
        }"#;
        let file = parse(text).unwrap();
        let files = file.spec("files", Path::new("c")).unwrap();
        assert_eq!(files.describe(), "npx -y srv");
        let ServerSpec::Http(remote) = file.spec("remote", Path::new("c")).unwrap() else {
            panic!()
        };
        assert_eq!(remote.bearer_token_secret.as_deref(), Some("tok"));
        let round: Value = serde_json::to_value(&file).unwrap();
        assert_eq!(round["globalShortcut"], "Ctrl+Space");
        assert_eq!(round["mcpServers"]["files"]["disabled"], false);
    }

    #[test]
    fn invalid_entries_name_the_server_and_the_problem() {
        let cases = [
            (
                r#"{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}"#,
                "both \"command\" and \"url\"",
            ),
            (r#"{"mcpServers": {"a": {}}}"#, "neither"),
            (
                r#"{"mcpServers": {"a": {"type": "sse", "url": "http://h/sse"}}}"#,
                "deprecated HTTP+SSE",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "ftp://h"}}}"#,
                "scheme \"ftp\"",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "https://u:p@h"}}}"#,
                "user name or password",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "env": {"K": "${secret:bad name}"}}}}"#,
                "secret name",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "headers": {"A": "b"}}}}"#,
                "HTTP servers only",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "http://h", "headers": {"bad header": "b"}}}}"#,
                "not a valid HTTP header",
            ),
            (r#"{"mcpServers": {"a": {"command": 3}}}"#, "line 1 column"),
            (
                r#"{"mcpServers": {"a/b": {"command": "x"}}}"#,
                "not allowed",
            ),
        ];
        for (text, needle) in cases {
            let error = parse(text).unwrap_err().to_string();
            assert!(error.contains(needle), "{text}: {error}");
            assert!(error.contains("servers.json"), "{error}");
        }
        assert!(parse(r#"{"mcpServers": {"a": {"command": "x"}}}"#).is_ok());
    }

    #[test]
    fn unknown_server_lists_the_known_ones() {
        let file =
            parse(r#"{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}"#).unwrap();
        let error = file
            .spec("c", Path::new("servers.json"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("\"c\"") && error.contains("a, b"), "{error}");
    }

    #[test]
    fn secrets_resolve_and_missing_ones_say_how_to_add_them() {
        let store = MemoryStore::default();
        store.set("k", &SecretValue::new("s3cret")).unwrap();
        let mut used = Vec::new();
        assert_eq!(
            resolve_secrets("Bearer ${secret:k}!", &store, &mut used).unwrap(),
            "Bearer s3cret!"
        );
        assert_eq!(used[0].0, "k");
        let error = resolve_secrets("${secret:missing}", &store, &mut used)
            .unwrap_err()
            .to_string();
        assert!(error.contains("gatehouse secret set missing"), "{error}");
        assert!(resolve_secrets("${secret:k", &store, &mut used).is_err());
    }

    #[test]
    fn save_is_atomic_private_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("servers.json");
        let mut file = ServersFile::default();
        file.servers.insert(
            "a".into(),
            ServerEntry {
                command: Some("x".into()),
                ..Default::default()
            },
        );
        file.save(&path).unwrap();
        assert_eq!(ServersFile::load(&path).unwrap(), file);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1);
    }
}
