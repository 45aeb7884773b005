//! AI clients' MCP config files (Claude Desktop, Claude Code, Cursor, VS Code): finding them,
//! connecting a client through Gatehouse, and restoring it.
//!
//! Connecting imports the client's servers into `servers.json` through [`gatehouse_host::config::import()`] (its
//! safety rules unchanged), keeps a byte-exact backup, then rewrites the client's file so its
//! only MCP server is `gatehouse serve --client ID`. Every other key of the client's file is
//! kept, in order. Paths come in from the caller (home, config and data directories, the
//! current directory), so nothing here reads the environment, and nothing prints.
//!
//! The files are parsed as strict JSON. VS Code reads its files as JSONC (comments, trailing
//! commas); such a file is refused with the line at fault rather than rewritten without its
//! comments.

mod backup;
mod connect;
mod document;
pub mod lockdown;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use backup::BackupStore;
pub use connect::{ConnectOutcome, ConnectRequest, RestoreOutcome, connect, restore};
pub use document::{ENTRY_NAME, serve_args};

use gatehouse_host::HostError;
use gatehouse_host::ImportReport;

/// The AI clients Gatehouse knows. A closed set: each has a stable snake_case code, used on the
/// command line, in JSON output and in the `serve --client` argument written to its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientId {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    Vscode,
}

impl ClientId {
    pub const ALL: [ClientId; 4] = [
        ClientId::ClaudeDesktop,
        ClientId::ClaudeCode,
        ClientId::Cursor,
        ClientId::Vscode,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ClientId::ClaudeDesktop => "claude_desktop",
            ClientId::ClaudeCode => "claude_code",
            ClientId::Cursor => "cursor",
            ClientId::Vscode => "vscode",
        }
    }

    pub fn display_name(self) -> &'static str {
        match self {
            ClientId::ClaudeDesktop => "Claude Desktop",
            ClientId::ClaudeCode => "Claude Code",
            ClientId::Cursor => "Cursor",
            ClientId::Vscode => "VS Code",
        }
    }
}

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ClientId {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        ClientId::ALL
            .into_iter()
            .find(|c| c.as_str() == text)
            .ok_or_else(|| {
                format!(
                    "unknown client {text:?}; one of: {}",
                    ClientId::ALL.map(ClientId::as_str).join(", ")
                )
            })
    }
}

/// Which of a client's files: most clients have one; Claude Code also reads a project's
/// `.mcp.json`, and VS Code also reads `mcp.servers` in its settings.json.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    User,
    Project,
    Settings,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Settings => "settings",
        }
    }
}

/// Where the clients' files are looked for: the home directory (`$HOME`), the user config
/// directory (`$XDG_CONFIG_HOME` on Linux) and the current directory (project files).
#[derive(Debug, Clone)]
pub struct Roots {
    pub home: PathBuf,
    pub config_dir: PathBuf,
    pub cwd: PathBuf,
}

/// One client config file and the path of its servers object inside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Location {
    pub client: ClientId,
    pub scope: Scope,
    pub path: PathBuf,
    /// Object keys from the root to the servers object, e.g. `["mcp", "servers"]`.
    #[serde(skip)]
    pub key: &'static [&'static str],
}

impl Location {
    /// Whether `connect` may rewrite this file. VS Code's settings.json is only reported: it
    /// is the user's whole editor configuration, usually with comments.
    pub fn connectable(&self) -> bool {
        self.scope != Scope::Settings
    }

    /// The name the backup files of this location use: the client's code, and for a project
    /// file a digest of its path (several projects may be connected).
    pub fn backup_stem(&self) -> String {
        match self.scope {
            Scope::Project => {
                let digest = backup::sha256_hex(self.path.to_string_lossy().as_bytes());
                format!("{}-project-{}", self.client, &digest[..16])
            }
            _ => self.client.as_str().to_string(),
        }
    }

    pub fn key_text(&self) -> String {
        self.key.join(".")
    }
}

/// Every file Gatehouse looks at, in a fixed order.
pub fn locations(roots: &Roots) -> Vec<Location> {
    let location = |client, scope, path: PathBuf, key| Location {
        client,
        scope,
        path,
        key,
    };
    vec![
        location(
            ClientId::ClaudeDesktop,
            Scope::User,
            roots
                .config_dir
                .join("Claude")
                .join("claude_desktop_config.json"),
            &["mcpServers"],
        ),
        location(
            ClientId::ClaudeCode,
            Scope::User,
            roots.home.join(".claude.json"),
            &["mcpServers"],
        ),
        location(
            ClientId::ClaudeCode,
            Scope::Project,
            roots.cwd.join(".mcp.json"),
            &["mcpServers"],
        ),
        location(
            ClientId::Cursor,
            Scope::User,
            roots.home.join(".cursor").join("mcp.json"),
            &["mcpServers"],
        ),
        location(
            ClientId::Vscode,
            Scope::User,
            roots.config_dir.join("Code").join("User").join("mcp.json"),
            &["servers"],
        ),
        location(
            ClientId::Vscode,
            Scope::Settings,
            roots
                .config_dir
                .join("Code")
                .join("User")
                .join("settings.json"),
            &["mcp", "servers"],
        ),
    ]
}

/// The location `connect` and `restore` act on: the client's user file, or with `project`
/// Claude Code's `.mcp.json` in the current directory.
pub fn location(roots: &Roots, client: ClientId, project: bool) -> Result<Location, ClientError> {
    let scope = if project { Scope::Project } else { Scope::User };
    locations(roots)
        .into_iter()
        .find(|l| l.client == client && l.scope == scope)
        .ok_or_else(|| {
            ClientError::new(
                ClientErrorCode::Usage,
                format!("{client} has no project file; --project applies to claude_code only"),
            )
        })
}

/// What `list` says about one file.
#[derive(Debug, Clone, Serialize)]
pub struct ClientStatus {
    pub client: ClientId,
    pub scope: Scope,
    pub path: PathBuf,
    /// The key of the servers object, e.g. `mcpServers` or `mcp.servers`.
    pub key: String,
    pub exists: bool,
    /// How many MCP servers the file configures; `None` when it could not be read.
    pub servers: Option<usize>,
    /// Its only server is Gatehouse's `serve --client` entry.
    pub connected: bool,
    /// A backup from `connect` is waiting to be restored.
    pub backup: bool,
    /// Why the file could not be read (not JSON, JSONC, servers not an object).
    pub problem: Option<String>,
}

/// Every client file this machine has or could have, with what is in it.
pub fn list(roots: &Roots, backups: &BackupStore) -> Vec<ClientStatus> {
    locations(roots)
        .into_iter()
        .map(|location| status(&location, backups))
        .collect()
}

fn status(location: &Location, backups: &BackupStore) -> ClientStatus {
    let mut status = ClientStatus {
        client: location.client,
        scope: location.scope,
        path: location.path.clone(),
        key: location.key_text(),
        exists: location.path.exists(),
        servers: None,
        connected: false,
        backup: location.connectable() && backups.exists(location),
        problem: None,
    };
    if !status.exists {
        return status;
    }
    match document::ClientDocument::read(location) {
        Ok(doc) => {
            status.servers = Some(doc.servers().map(|s| s.len()).unwrap_or(0));
            status.connected = doc.is_connected(location.client);
        }
        Err(error) => status.problem = Some(error.message),
    }
    status
}

/// Stable snake_case codes for what `connect` and `restore` refuse or fail on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientErrorCode {
    /// The client's file does not exist: nothing to connect.
    ClientConfigMissing,
    /// The client's file is not strict JSON (or its servers entry is not an object).
    ClientConfigInvalid,
    /// Its only server is already Gatehouse's entry.
    ClientAlreadyConnected,
    /// A backup from an earlier connect exists; restore it first.
    ClientBackupExists,
    /// Some of the client's servers would not be imported (quarantined or refused): nothing
    /// was changed, so no server silently disappears from the client.
    ClientImportIncomplete,
    /// A server of the same name with other settings is already in servers.json.
    ClientServerConflict,
    /// No backup to restore.
    ClientBackupMissing,
    /// The client's file changed since Gatehouse wrote it.
    ClientChangedSinceConnect,
    /// Reading or writing a file failed.
    ClientIo,
    /// Bad arguments.
    Usage,
}

impl ClientErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientErrorCode::ClientConfigMissing => "client_config_missing",
            ClientErrorCode::ClientConfigInvalid => "client_config_invalid",
            ClientErrorCode::ClientAlreadyConnected => "client_already_connected",
            ClientErrorCode::ClientBackupExists => "client_backup_exists",
            ClientErrorCode::ClientImportIncomplete => "client_import_incomplete",
            ClientErrorCode::ClientServerConflict => "client_server_conflict",
            ClientErrorCode::ClientBackupMissing => "client_backup_missing",
            ClientErrorCode::ClientChangedSinceConnect => "client_changed_since_connect",
            ClientErrorCode::ClientIo => "client_io",
            ClientErrorCode::Usage => "usage",
        }
    }

    /// A refusal (exit 1) rather than a usage, config or I/O error (exit 2).
    pub fn is_refusal(self) -> bool {
        matches!(
            self,
            ClientErrorCode::ClientAlreadyConnected
                | ClientErrorCode::ClientBackupExists
                | ClientErrorCode::ClientImportIncomplete
                | ClientErrorCode::ClientServerConflict
                | ClientErrorCode::ClientChangedSinceConnect
        )
    }
}

/// The codes of the same names in the one set of error codes.
impl From<ClientErrorCode> for gatehouse_host::ErrorCode {
    fn from(code: ClientErrorCode) -> Self {
        use gatehouse_host::ErrorCode as Code;
        match code {
            ClientErrorCode::ClientConfigMissing => Code::ClientConfigMissing,
            ClientErrorCode::ClientConfigInvalid => Code::ClientConfigInvalid,
            ClientErrorCode::ClientAlreadyConnected => Code::ClientAlreadyConnected,
            ClientErrorCode::ClientBackupExists => Code::ClientBackupExists,
            ClientErrorCode::ClientImportIncomplete => Code::ClientImportIncomplete,
            ClientErrorCode::ClientServerConflict => Code::ClientServerConflict,
            ClientErrorCode::ClientBackupMissing => Code::ClientBackupMissing,
            ClientErrorCode::ClientChangedSinceConnect => Code::ClientChangedSinceConnect,
            ClientErrorCode::ClientIo => Code::ClientIo,
            ClientErrorCode::Usage => Code::Usage,
        }
    }
}

/// Why `connect` or `restore` did nothing (or, for a host error after the backup, what failed).
#[derive(Debug)]
pub struct ClientError {
    pub code: ClientErrorCode,
    pub message: String,
    /// The import's report when the import is why connect refused (boxed: errors stay small).
    pub import: Option<Box<ImportReport>>,
    /// An error from the host (keychain, servers.json): its own code and exit status.
    pub host: Option<Box<HostError>>,
}

impl ClientError {
    pub fn new(code: ClientErrorCode, message: impl Into<String>) -> Self {
        ClientError {
            code,
            message: message.into(),
            import: None,
            host: None,
        }
    }

    pub fn io(what: &str, path: &Path, error: std::io::Error) -> Self {
        ClientError::new(
            ClientErrorCode::ClientIo,
            format!("cannot {what} {}: {error}", path.display()),
        )
    }

    /// The stable code: the host error's own when there is one.
    pub fn error_code(&self) -> gatehouse_host::ErrorCode {
        match &self.host {
            Some(host) => host.code(),
            None => self.code.into(),
        }
    }

    pub fn is_refusal(&self) -> bool {
        match &self.host {
            Some(host) => host.is_refusal(),
            None => self.code.is_refusal(),
        }
    }
}

impl From<HostError> for ClientError {
    fn from(error: HostError) -> Self {
        ClientError {
            code: ClientErrorCode::ClientIo,
            message: error.to_string(),
            import: None,
            host: Some(Box::new(error)),
        }
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ClientError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(dir: &Path) -> Roots {
        Roots {
            home: dir.join("home"),
            config_dir: dir.join("home/.config"),
            cwd: dir.join("project"),
        }
    }

    #[test]
    fn client_codes_round_trip_and_unknown_ones_are_named() {
        for client in ClientId::ALL {
            assert_eq!(client.as_str().parse::<ClientId>().unwrap(), client);
            assert_eq!(
                serde_json::to_value(client).unwrap(),
                serde_json::json!(client.as_str())
            );
        }
        let error = "claude".parse::<ClientId>().unwrap_err();
        assert!(
            error.contains("claude_desktop, claude_code, cursor, vscode"),
            "{error}"
        );
    }

    #[test]
    fn each_error_code_is_the_shared_code_of_its_name() {
        for code in [
            ClientErrorCode::ClientConfigMissing,
            ClientErrorCode::ClientConfigInvalid,
            ClientErrorCode::ClientAlreadyConnected,
            ClientErrorCode::ClientBackupExists,
            ClientErrorCode::ClientImportIncomplete,
            ClientErrorCode::ClientServerConflict,
            ClientErrorCode::ClientBackupMissing,
            ClientErrorCode::ClientChangedSinceConnect,
            ClientErrorCode::ClientIo,
            ClientErrorCode::Usage,
        ] {
            assert_eq!(
                gatehouse_host::ErrorCode::from(code).as_str(),
                code.as_str()
            );
        }
    }

    #[test]
    fn locations_follow_each_clients_documented_paths() {
        let dir = Path::new("/x");
        let found: Vec<(String, &str, String)> = locations(&roots(dir))
            .iter()
            .map(|l| (l.path.display().to_string(), l.scope.as_str(), l.key_text()))
            .collect();
        let expect = |p: &str, s: &'static str, k: &str| (p.to_string(), s, k.to_string());
        assert_eq!(
            found,
            [
                expect(
                    "/x/home/.config/Claude/claude_desktop_config.json",
                    "user",
                    "mcpServers"
                ),
                expect("/x/home/.claude.json", "user", "mcpServers"),
                expect("/x/project/.mcp.json", "project", "mcpServers"),
                expect("/x/home/.cursor/mcp.json", "user", "mcpServers"),
                expect("/x/home/.config/Code/User/mcp.json", "user", "servers"),
                expect(
                    "/x/home/.config/Code/User/settings.json",
                    "settings",
                    "mcp.servers"
                ),
            ]
        );
        assert!(location(&roots(dir), ClientId::Cursor, true).is_err());
        let project = location(&roots(dir), ClientId::ClaudeCode, true).unwrap();
        assert!(project.backup_stem().starts_with("claude_code-project-"));
        assert_eq!(
            location(&roots(dir), ClientId::ClaudeCode, false)
                .unwrap()
                .backup_stem(),
            "claude_code"
        );
    }

    #[test]
    fn list_counts_servers_and_names_unreadable_files() {
        let dir = tempfile::tempdir().unwrap();
        let roots = roots(dir.path());
        let backups = BackupStore::new(dir.path().join("data/clients"));
        let cursor = roots.home.join(".cursor/mcp.json");
        std::fs::create_dir_all(cursor.parent().unwrap()).unwrap();
        std::fs::write(
            &cursor,
            r#"{"mcpServers": {"a": {"command": "x"}, "b": {"url": "https://h/mcp"}}}"#,
        )
        .unwrap();
        let settings = roots.config_dir.join("Code/User/settings.json");
        std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
        std::fs::write(&settings, "{\n  // a comment\n  \"mcp\": {}\n}\n").unwrap();
        let rows = list(&roots, &backups);
        let cursor_row = rows.iter().find(|r| r.client == ClientId::Cursor).unwrap();
        assert_eq!((cursor_row.exists, cursor_row.servers), (true, Some(2)));
        assert!(!cursor_row.connected && !cursor_row.backup);
        let settings_row = rows.iter().find(|r| r.scope == Scope::Settings).unwrap();
        assert_eq!(settings_row.servers, None);
        assert!(
            settings_row.problem.as_deref().unwrap().contains("line 2"),
            "{settings_row:?}"
        );
        let desktop = rows
            .iter()
            .find(|r| r.client == ClientId::ClaudeDesktop)
            .unwrap();
        assert_eq!((desktop.exists, desktop.servers), (false, None));
    }
}
