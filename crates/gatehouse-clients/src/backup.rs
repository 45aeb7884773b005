//! Backups of client files, kept in Gatehouse's data directory (`…/gatehouse/clients/`):
//! `STEM.backup.json` (the client's file byte for byte), `STEM.written.json` (what Gatehouse
//! wrote, so a restore can say what changed since) and `STEM.meta.json` (where it goes back,
//! its mode, the SHA-256 of both, and which servers were imported). All mode 0600: a client's
//! file may hold credentials.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{ClientError, ClientErrorCode, ClientId, Location, Scope};
use gatehouse_host::files::write_atomically;

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// What a backup says about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackupMeta {
    pub client: ClientId,
    pub scope: Scope,
    /// The client's file, where the backup goes back to.
    pub path: PathBuf,
    /// The file's permission bits when it was backed up.
    pub mode: u32,
    pub backup_sha256: String,
    /// The SHA-256 of the bytes Gatehouse wrote into the client's file.
    pub written_sha256: String,
    /// The servers the connect imported into servers.json.
    pub imported: Vec<String>,
}

/// The directory of backups.
#[derive(Debug, Clone)]
pub struct BackupStore {
    dir: PathBuf,
}

impl BackupStore {
    pub fn new(dir: PathBuf) -> Self {
        BackupStore { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn file(&self, location: &Location, kind: &str) -> PathBuf {
        self.dir
            .join(format!("{}.{kind}.json", location.backup_stem()))
    }

    pub fn backup_path(&self, location: &Location) -> PathBuf {
        self.file(location, "backup")
    }

    fn written_path(&self, location: &Location) -> PathBuf {
        self.file(location, "written")
    }

    fn meta_path(&self, location: &Location) -> PathBuf {
        self.file(location, "meta")
    }

    /// Any of a backup's files: a half-written one counts, so it is never overwritten.
    pub fn exists(&self, location: &Location) -> bool {
        [
            self.backup_path(location),
            self.written_path(location),
            self.meta_path(location),
        ]
        .iter()
        .any(|p| p.exists())
    }

    /// Keeps `original` and what will be written, before the client's file is touched.
    pub fn save(
        &self,
        location: &Location,
        original: &[u8],
        written: &[u8],
        meta: &BackupMeta,
    ) -> Result<(), ClientError> {
        let meta_text = serde_json::to_vec_pretty(meta).expect("meta serializes");
        // The metadata last: a backup without it is incomplete and shows as such.
        for (path, bytes) in [
            (self.backup_path(location), original),
            (self.written_path(location), written),
            (self.meta_path(location), meta_text.as_slice()),
        ] {
            write_atomically(&path, bytes, 0o600)
                .map_err(|e| ClientError::io("write the backup", &path, e))?;
        }
        Ok(())
    }

    /// The backup: metadata, original bytes (checked against the metadata) and what Gatehouse
    /// wrote.
    pub fn load(&self, location: &Location) -> Result<(BackupMeta, Vec<u8>, Vec<u8>), ClientError> {
        let meta_path = self.meta_path(location);
        let meta_bytes = match std::fs::read(&meta_path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ClientError::new(
                    ClientErrorCode::ClientBackupMissing,
                    format!(
                        "there is no backup of {} ({}) to restore in {}; `gatehouse clients connect {}` makes one",
                        location.client.display_name(),
                        location.path.display(),
                        self.dir.display(),
                        location.client
                    ),
                ));
            }
            Err(e) => return Err(ClientError::io("read", &meta_path, e)),
        };
        let meta: BackupMeta = serde_json::from_slice(&meta_bytes).map_err(|e| {
            ClientError::new(
                ClientErrorCode::ClientIo,
                format!("{}: not a backup record: {e}", meta_path.display()),
            )
        })?;
        let read =
            |path: PathBuf| std::fs::read(&path).map_err(|e| ClientError::io("read", &path, e));
        let original = read(self.backup_path(location))?;
        if sha256_hex(&original) != meta.backup_sha256 {
            return Err(ClientError::new(
                ClientErrorCode::ClientIo,
                format!(
                    "{}: the backup does not match the SHA-256 recorded when it was made; it was changed or damaged, so it is not restored",
                    self.backup_path(location).display()
                ),
            ));
        }
        let written = read(self.written_path(location))?;
        Ok((meta, original, written))
    }

    /// Removes a backup's files (the metadata first, so a crash leaves no complete-looking one).
    pub fn remove(&self, location: &Location) -> Result<(), ClientError> {
        for path in [
            self.meta_path(location),
            self.written_path(location),
            self.backup_path(location),
        ] {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(ClientError::io("remove", &path, e)),
            }
        }
        Ok(())
    }
}
