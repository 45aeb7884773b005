//! `connect`: import a client's servers, back its file up, point it at Gatehouse; `restore`:
//! put the backup back.
//!
//! All or nothing: the import is first tried against a copy of servers.json with a keychain
//! that stores nothing, so an entry that would be held back (quarantined, refused) or a name
//! taken by another server stops the connect before any file or secret is written. Only then
//! are the backup, the secrets, servers.json and the client's file written, in that order.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::backup::{BackupMeta, sha256_hex};
use super::document::{ClientDocument, changed_keys, entry};
use super::{BackupStore, ClientError, ClientErrorCode, Location};
use gatehouse_host::HostError;
use gatehouse_host::config::{ImportReport, ServerEntry, ServersFile, import};
use gatehouse_host::files::write_atomically;
use gatehouse_host::secrets::{SecretStore, SecretValue};

pub struct ConnectRequest<'a> {
    pub location: &'a Location,
    /// Gatehouse's servers.json.
    pub servers_path: &'a Path,
    /// The absolute path of the `gatehouse` binary the client will launch.
    pub gatehouse: &'a Path,
    /// Servers whose launch settings the user confirmed (`--allow-launch-settings`).
    pub confirmed: &'a [String],
    /// Replace servers of the same name already in servers.json.
    pub replace: bool,
}

#[derive(Debug, Serialize)]
pub struct ConnectOutcome {
    /// The client's file that now launches Gatehouse (a symlink's target).
    pub path: PathBuf,
    pub backup: PathBuf,
    /// Gatehouse's entry, as written.
    pub entry: Value,
    pub import: ImportReport,
    /// Servers of the client that servers.json already held with the same settings.
    pub already_configured: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct RestoreOutcome {
    pub path: PathBuf,
    /// What had changed in the file since Gatehouse wrote it (restored anyway with --force).
    pub changed: Vec<String>,
    /// Servers the connect imported: they stay in servers.json.
    pub kept_in_servers: Vec<String>,
}

/// A keychain that stores nothing, for the trial import.
struct TrialKeychain;

impl SecretStore for TrialKeychain {
    fn get(&self, _: &str) -> Result<Option<SecretValue>, HostError> {
        Ok(None)
    }
    fn set(&self, _: &str, _: &SecretValue) -> Result<(), HostError> {
        Ok(())
    }
    fn delete(&self, _: &str) -> Result<(), HostError> {
        Ok(())
    }
}

fn file_mode(path: &Path) -> Result<u32, ClientError> {
    std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .map_err(|e| ClientError::io("read the metadata of", path, e))
}

/// Writes atomically and keeps `mode` exactly (the temporary file's mode is cut by the umask).
fn write_with_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<(), ClientError> {
    write_atomically(path, bytes, mode).map_err(|e| ClientError::io("write", path, e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| ClientError::io("set the mode of", path, e))
}

pub fn connect(
    request: &ConnectRequest<'_>,
    backups: &BackupStore,
    store: &dyn SecretStore,
) -> Result<ConnectOutcome, ClientError> {
    let location = request.location;
    let client = location.client;
    if !location.connectable() {
        return Err(ClientError::new(
            ClientErrorCode::Usage,
            format!(
                "{} is only listed, never rewritten",
                location.path.display()
            ),
        ));
    }
    if !request.gatehouse.is_absolute() {
        return Err(ClientError::new(
            ClientErrorCode::Usage,
            format!(
                "the gatehouse binary's path {} is not absolute",
                request.gatehouse.display()
            ),
        ));
    }
    let doc = ClientDocument::read(location)?;
    // A symlinked file (dotfiles) is written through, so the link stays a link.
    let path = std::fs::canonicalize(&location.path)
        .map_err(|e| ClientError::io("resolve", &location.path, e))?;
    if doc.is_connected(client) {
        return Err(ClientError::new(
            ClientErrorCode::ClientAlreadyConnected,
            format!(
                "{} is already connected through Gatehouse ({}); `gatehouse clients restore {client}` gives it its own servers back",
                client.display_name(),
                path.display()
            ),
        ));
    }
    if backups.exists(location) {
        return Err(ClientError::new(
            ClientErrorCode::ClientBackupExists,
            format!(
                "a backup of {} from an earlier connect is in {}; restore it first (`gatehouse clients restore {client}`), so it is never overwritten",
                client.display_name(),
                backups.dir().display()
            ),
        ));
    }
    let servers = doc.servers().cloned().unwrap_or_default();
    // Exactly the object that will be replaced is imported, whatever else the file holds.
    let import_text = json!({ "mcpServers": servers }).to_string();
    let mut config = ServersFile::load(request.servers_path)?;

    let mut trial = config.clone();
    let report = import(
        &import_text,
        &location.path,
        &mut trial,
        &TrialKeychain,
        request.replace,
        request.confirmed,
    )?;
    if !report.quarantined.is_empty() || !report.refused.is_empty() {
        let held: Vec<&str> = report
            .quarantined
            .iter()
            .map(|q| q.name.as_str())
            .chain(report.refused.iter().map(|r| r.name.as_str()))
            .collect();
        let mut error = ClientError::new(
            ClientErrorCode::ClientImportIncomplete,
            format!(
                "{} of {}'s servers would not be imported ({}), so nothing was changed: connecting would drop them from the client. For a held-back server, check its settings and connect again with --allow-launch-settings NAME; for a refused one, edit the client's file",
                held.len(),
                client.display_name(),
                held.join(", ")
            ),
        );
        error.import = Some(Box::new(report));
        return Err(error);
    }
    let mut already_configured = Vec::new();
    let mut conflicts = Vec::new();
    for name in &report.skipped {
        let theirs: Option<ServerEntry> = servers
            .get(name)
            .and_then(|raw| serde_json::from_value(raw.clone()).ok());
        if theirs.as_ref() == config.servers.get(name) {
            already_configured.push(name.clone());
        } else {
            conflicts.push(name.as_str());
        }
    }
    if !conflicts.is_empty() {
        let mut error = ClientError::new(
            ClientErrorCode::ClientServerConflict,
            format!(
                "servers.json already has other servers named {}; nothing was changed. Connect with --replace to replace them with {}'s, or rename them first",
                conflicts.join(", "),
                client.display_name()
            ),
        );
        error.import = Some(Box::new(report));
        return Err(error);
    }

    let written = doc.rewritten(client, request.gatehouse);
    let meta = BackupMeta {
        client,
        scope: location.scope,
        path: path.clone(),
        mode: file_mode(&path)?,
        backup_sha256: sha256_hex(&doc.bytes),
        written_sha256: sha256_hex(&written),
        imported: report.imported.clone(),
    };
    backups.save(location, &doc.bytes, &written, &meta)?;
    // From here on, a failure takes the backup away again: the client's file is unchanged.
    let mut finish = || -> Result<ImportReport, ClientError> {
        let report = import(
            &import_text,
            &location.path,
            &mut config,
            store,
            request.replace,
            request.confirmed,
        )?;
        if !report.quarantined.is_empty() || !report.refused.is_empty() {
            return Err(ClientError::new(
                ClientErrorCode::ClientImportIncomplete,
                "the import held back servers the trial import took; nothing was changed",
            ));
        }
        config.save(request.servers_path)?;
        write_with_mode(&path, &written, meta.mode)?;
        Ok(report)
    };
    let report = match finish() {
        Ok(report) => report,
        Err(error) => {
            let _ = backups.remove(location);
            return Err(error);
        }
    };
    Ok(ConnectOutcome {
        path,
        backup: backups.backup_path(location),
        entry: entry(client, request.gatehouse),
        import: report,
        already_configured,
    })
}

/// What changed between the bytes Gatehouse wrote and the file now.
fn describe_changes(written: &[u8], now: &[u8]) -> Vec<String> {
    let object = |bytes: &[u8]| serde_json::from_slice::<Map<String, Value>>(bytes).ok();
    match (object(written), object(now)) {
        (Some(before), Some(after)) => {
            let keys = changed_keys(&before, &after);
            if keys.is_empty() {
                vec!["its formatting (the same JSON content)".into()]
            } else {
                keys
            }
        }
        _ => vec!["it is no longer a JSON object".into()],
    }
}

pub fn restore(
    location: &Location,
    backups: &BackupStore,
    force: bool,
) -> Result<RestoreOutcome, ClientError> {
    let (meta, original, written) = backups.load(location)?;
    let changed = match std::fs::read(&meta.path) {
        Ok(now) if sha256_hex(&now) == meta.written_sha256 => Vec::new(),
        Ok(now) => describe_changes(&written, &now),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => vec!["the file was removed".into()],
        Err(e) => return Err(ClientError::io("read", &meta.path, e)),
    };
    if !changed.is_empty() && !force {
        return Err(ClientError::new(
            ClientErrorCode::ClientChangedSinceConnect,
            format!(
                "{} changed since Gatehouse wrote it ({}); restoring the backup would undo that. Nothing was changed; use --force to put the backup back anyway",
                meta.path.display(),
                changed.join(", ")
            ),
        ));
    }
    write_with_mode(&meta.path, &original, meta.mode)?;
    backups.remove(location)?;
    Ok(RestoreOutcome {
        path: meta.path,
        changed,
        kept_in_servers: meta.imported,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{ClientId, Roots, location};
    use super::*;
    use gatehouse_host::MemoryStore;

    struct World {
        dir: tempfile::TempDir,
        roots: Roots,
        backups: BackupStore,
    }

    impl World {
        fn new() -> World {
            let dir = tempfile::tempdir().unwrap();
            let roots = Roots {
                home: dir.path().join("home"),
                config_dir: dir.path().join("home/.config"),
                cwd: dir.path().join("project"),
            };
            let backups = BackupStore::new(dir.path().join("data/clients"));
            World {
                dir,
                roots,
                backups,
            }
        }
        fn servers_path(&self) -> PathBuf {
            self.dir.path().join("servers.json")
        }
        fn write(&self, client: ClientId, text: &str) -> Location {
            let location = location(&self.roots, client, false).unwrap();
            std::fs::create_dir_all(location.path.parent().unwrap()).unwrap();
            std::fs::write(&location.path, text).unwrap();
            location
        }
        fn connect(
            &self,
            location: &Location,
            confirmed: &[String],
            store: &MemoryStore,
        ) -> Result<ConnectOutcome, ClientError> {
            let servers_path = self.servers_path();
            connect(
                &ConnectRequest {
                    location,
                    servers_path: &servers_path,
                    gatehouse: Path::new("/usr/bin/gatehouse"),
                    confirmed,
                    replace: false,
                },
                &self.backups,
                store,
            )
        }
    }

    const CURSOR: &str = r#"{"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
        "gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "ghp_abc"}}
    }}"#;

    #[test]
    fn connect_then_restore_gives_back_the_exact_bytes() {
        let world = World::new();
        let location = world.write(ClientId::Cursor, CURSOR);
        std::fs::set_permissions(&location.path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let store = MemoryStore::default();
        let outcome = world.connect(&location, &[], &store).unwrap();
        assert_eq!(outcome.import.imported, ["files", "gh"]);
        assert_eq!(
            store.get("gh.GITHUB_TOKEN").unwrap().unwrap().expose(),
            "ghp_abc"
        );
        let now: Value = serde_json::from_slice(&std::fs::read(&location.path).unwrap()).unwrap();
        assert_eq!(
            now,
            json!({"mcpServers": {"gatehouse": {"command": "/usr/bin/gatehouse", "args": ["serve", "--client", "cursor"]}}})
        );
        assert_eq!(file_mode(&location.path).unwrap(), 0o640);
        let config = ServersFile::load(&world.servers_path()).unwrap();
        assert!(config.servers.contains_key("files") && config.servers.contains_key("gh"));

        // Connected: a second connect is refused, and so is one while the backup waits.
        let again = world.connect(&location, &[], &store).unwrap_err();
        assert_eq!(again.code, ClientErrorCode::ClientAlreadyConnected);

        let restored = restore(&location, &world.backups, false).unwrap();
        assert_eq!(restored.kept_in_servers, ["files", "gh"]);
        assert_eq!(std::fs::read_to_string(&location.path).unwrap(), CURSOR);
        assert_eq!(file_mode(&location.path).unwrap(), 0o640);
        assert!(!world.backups.exists(&location));
        let none = restore(&location, &world.backups, false).unwrap_err();
        assert_eq!(none.code, ClientErrorCode::ClientBackupMissing);
    }

    #[test]
    fn a_held_back_entry_changes_nothing_anywhere() {
        let world = World::new();
        let text = r#"{"mcpServers": {
            "plain": {"command": "x", "env": {"API_KEY": "k-1"}},
            "node": {"command": "node", "args": ["s.js"], "env": {"NODE_OPTIONS": "--require /tmp/evil.js"}}
        }}"#;
        let location = world.write(ClientId::ClaudeDesktop, text);
        let store = MemoryStore::default();
        let error = world.connect(&location, &[], &store).unwrap_err();
        assert_eq!(error.code, ClientErrorCode::ClientImportIncomplete);
        assert!(error.is_refusal());
        assert_eq!(error.import.as_ref().unwrap().quarantined[0].name, "node");
        assert_eq!(std::fs::read_to_string(&location.path).unwrap(), text);
        assert!(!world.servers_path().exists());
        assert_eq!(store.get("plain.API_KEY").unwrap(), None);
        assert!(!world.backups.exists(&location));

        // Confirmed by name, it goes through.
        let outcome = world
            .connect(&location, &["node".to_string()], &store)
            .unwrap();
        assert_eq!(outcome.import.imported, ["plain", "node"]);
    }

    #[test]
    fn a_name_taken_by_another_server_is_a_conflict_the_same_one_is_not() {
        let world = World::new();
        std::fs::write(
            world.servers_path(),
            r#"{"mcpServers": {"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}, "gh": {"command": "other"}}}"#,
        )
        .unwrap();
        let location = world.write(ClientId::Cursor, CURSOR);
        let store = MemoryStore::default();
        let error = world.connect(&location, &[], &store).unwrap_err();
        assert_eq!(error.code, ClientErrorCode::ClientServerConflict);
        assert!(
            error.message.contains("gh") && !error.message.contains("files"),
            "{}",
            error.message
        );
        assert_eq!(std::fs::read_to_string(&location.path).unwrap(), CURSOR);

        let same = world.write(ClientId::ClaudeDesktop, r#"{"mcpServers": {"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}}}"#);
        let outcome = world.connect(&same, &[], &store).unwrap();
        assert_eq!(outcome.already_configured, ["files"]);
    }

    #[test]
    fn restore_refuses_a_file_changed_since_unless_forced() {
        let world = World::new();
        let text = "{\n  \"numStartups\": 3,\n  \"mcpServers\": {}\n}\n";
        let location = world.write(ClientId::ClaudeCode, text);
        let store = MemoryStore::default();
        world.connect(&location, &[], &store).unwrap();
        let mut now: Map<String, Value> =
            serde_json::from_slice(&std::fs::read(&location.path).unwrap()).unwrap();
        now.insert("numStartups".into(), json!(4));
        now.insert("tipsHistory".into(), json!({}));
        let edited = serde_json::to_vec(&now).unwrap();
        std::fs::write(&location.path, &edited).unwrap();
        let error = restore(&location, &world.backups, false).unwrap_err();
        assert_eq!(error.code, ClientErrorCode::ClientChangedSinceConnect);
        assert!(
            error
                .message
                .contains("changed numStartups, added tipsHistory"),
            "{}",
            error.message
        );
        assert_eq!(std::fs::read(&location.path).unwrap(), edited);
        let forced = restore(&location, &world.backups, true).unwrap();
        assert_eq!(forced.changed.len(), 2);
        assert_eq!(std::fs::read_to_string(&location.path).unwrap(), text);
    }

    #[test]
    fn a_symlinked_file_is_written_through_the_link() {
        let world = World::new();
        let real = world.dir.path().join("dotfiles/cursor-mcp.json");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, CURSOR).unwrap();
        let location = location(&world.roots, ClientId::Cursor, false).unwrap();
        std::fs::create_dir_all(location.path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&real, &location.path).unwrap();
        world
            .connect(&location, &[], &MemoryStore::default())
            .unwrap();
        assert!(
            std::fs::symlink_metadata(&location.path)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_ne!(std::fs::read_to_string(&real).unwrap(), CURSOR);
        restore(&location, &world.backups, false).unwrap();
        assert_eq!(std::fs::read_to_string(&real).unwrap(), CURSOR);
    }
}
