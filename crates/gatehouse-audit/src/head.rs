//! The head sidecar, `<log>.head`: the anchor (`seq`, `hash`) of the last record, replaced
//! atomically after every append. Removing trailing records leaves the chain itself intact; the
//! head is what notices.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::AuditError;
use crate::record::{Anchor, is_hash, printable};

/// A head file larger than this is not one of ours.
const MAX_HEAD_BYTES: u64 = 4096;

/// `<log file name>.head`, next to the log.
pub fn head_path(log: &Path) -> PathBuf {
    sibling(log, ".head")
}

/// The temporary file the head is written to before it is renamed over `<log>.head`. One fixed
/// name is enough: it is only written while holding the log's exclusive lock.
fn head_temp_path(log: &Path) -> PathBuf {
    sibling(log, ".head.tmp")
}

/// `<log file name><suffix>` in the log's directory.
pub(crate) fn sibling(log: &Path, suffix: &str) -> PathBuf {
    let mut name: OsString = log.file_name().map(OsString::from).unwrap_or_default();
    name.push(suffix);
    log.with_file_name(name)
}

/// What the head file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeadState {
    /// No head file.
    Missing,
    /// A head file that is not `{"seq":…,"hash":…}`; the text says why.
    Unreadable(String),
    Present(Anchor),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HeadFile {
    seq: u64,
    hash: String,
}

/// Reads the head. A head that cannot be read at all (permissions, a directory in its place) is
/// an error, not a mismatch: nothing can be anchored until it is fixed.
pub(crate) fn read_head(log: &Path) -> Result<HeadState, AuditError> {
    let path = head_path(log);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(HeadState::Missing),
        Err(source) => return Err(AuditError::Head { path, source }),
    };
    let mut bytes = Vec::new();
    file.take(MAX_HEAD_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| AuditError::Head {
            path: path.clone(),
            source,
        })?;
    if bytes.len() as u64 > MAX_HEAD_BYTES {
        return Ok(HeadState::Unreadable(format!(
            "it is longer than {MAX_HEAD_BYTES} bytes"
        )));
    }
    Ok(match serde_json::from_slice::<HeadFile>(&bytes) {
        Ok(head) if is_hash(&head.hash) => HeadState::Present(Anchor {
            seq: head.seq,
            hash: head.hash,
        }),
        Ok(head) => HeadState::Unreadable(printable(&format!(
            "its hash {:?} is not 64 lower-case hex digits",
            head.hash
        ))),
        Err(e) => HeadState::Unreadable(printable(&format!("it is not a head: {e}"))),
    })
}

/// Replaces the head: temp file, fsync, rename, so a crash leaves either the old head or the
/// new one, never a partial file. The directory is not flushed: a crash can then at worst
/// bring back an older head, behind the log, which is accepted (the record at its seq still
/// has its hash). That saves one of the three disk flushes every append would otherwise cost.
/// The shared temp name is used under the log's exclusive lock only, and the head is replaced
/// whatever it says: the caller has just read the log's end under that lock, and `anchor` is
/// its last record (a sync-mode append, or a repair that recorded what it found).
pub(crate) fn write_head(log: &Path, anchor: &Anchor) -> Result<(), AuditError> {
    let temp = head_temp_path(log);
    prepare_head(log, &temp, anchor)?;
    install_head(log, &temp)
}

/// Writes the head for `anchor` to `temp`, flushed: the slow half of replacing the head.
pub(crate) fn prepare_head(log: &Path, temp: &Path, anchor: &Anchor) -> Result<(), AuditError> {
    let err = |source| AuditError::Head {
        path: head_path(log),
        source,
    };
    let mut line = serde_json::to_vec(&serde_json::json!({"seq": anchor.seq, "hash": anchor.hash}))
        .expect("a map of a number and a string serializes");
    line.push(b'\n');
    write_synced(temp, &line).map_err(err)
}

/// Creates or truncates `path` (owner-only), writes `bytes` and flushes them: the first half
/// of every replace-by-rename this crate does (the head, a batched writer's marker).
pub(crate) fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = private_file_options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Renames a prepared head over `<log>.head`: the quick, atomic half.
pub(crate) fn install_head(log: &Path, temp: &Path) -> Result<(), AuditError> {
    let path = head_path(log);
    fs::rename(temp, &path).map_err(|source| AuditError::Head { path, source })
}

/// [`install_head`] for a batched flush whose last durable record is `seq`, unless the head
/// already anchors that record or a later one: a head never moves backwards. Another handle,
/// in this process or another, may have flushed further meanwhile (its head too anchors only
/// records it made durable), or the head may say more than the log holds, which the next
/// look at the end records; either way that head stays, and `temp` is removed. A head that is
/// missing, is not a head, or cannot be read is replaced. Returns whether it was.
///
/// The caller holds the log's exclusive lock: every writer of the head does, so no other head
/// lands between the look and the rename.
pub(crate) fn install_head_if_newer(log: &Path, temp: &Path, seq: u64) -> Result<bool, AuditError> {
    if let Ok(HeadState::Present(current)) = read_head(log)
        && current.seq >= seq
    {
        // Best effort: a leftover is this handle's own file, replaced by its next flush.
        let _ = fs::remove_file(temp);
        return Ok(false);
    }
    install_head(log, temp)?;
    Ok(true)
}

/// Options that create files readable and writable by the owner only (on Unix).
pub(crate) fn private_file_options() -> OpenOptions {
    #[allow(unused_mut)] // only Unix sets a mode
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

/// Flushes the directory holding `log`, so a file created or renamed there survives a crash.
/// Windows has no equivalent call; NTFS journals the metadata.
pub(crate) fn sync_dir(log: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        let dir = match log.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = log;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        assert_eq!(read_head(&log).unwrap(), HeadState::Missing);
        let anchor = Anchor {
            seq: 7,
            hash: "ab".repeat(32),
        };
        write_head(&log, &anchor).unwrap();
        assert_eq!(read_head(&log).unwrap(), HeadState::Present(anchor));
        assert!(dir.path().join("audit.jsonl.head").is_file());
        assert!(!dir.path().join("audit.jsonl.head.tmp").exists());
    }

    #[test]
    fn a_flushed_head_never_replaces_a_later_one() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        let temp = dir.path().join("audit.jsonl.head.1-0.tmp");
        let anchor = |seq: u64| Anchor {
            seq,
            hash: format!("{seq:064x}"),
        };
        let install = |seq: u64| {
            prepare_head(&log, &temp, &anchor(seq)).unwrap();
            install_head_if_newer(&log, &temp, seq).unwrap()
        };
        // No head yet: installed.
        assert!(install(5));
        assert_eq!(read_head(&log).unwrap(), HeadState::Present(anchor(5)));
        assert!(!temp.exists());
        // An older record, or the same one: the head stays, and the temp file goes.
        for seq in [4, 0, 5] {
            assert!(!install(seq), "{seq}");
            assert_eq!(read_head(&log).unwrap(), HeadState::Present(anchor(5)));
            assert!(!temp.exists(), "{seq}");
        }
        // A later record: installed.
        assert!(install(9));
        assert_eq!(read_head(&log).unwrap(), HeadState::Present(anchor(9)));
        // A head that is not one, or none at all: replaced, even by an older record.
        fs::write(head_path(&log), r#"{"seq":100}"#).unwrap();
        assert!(install(3));
        assert_eq!(read_head(&log).unwrap(), HeadState::Present(anchor(3)));
        fs::remove_file(head_path(&log)).unwrap();
        assert!(install(2));
        assert_eq!(read_head(&log).unwrap(), HeadState::Present(anchor(2)));
    }

    #[test]
    fn a_head_that_is_not_one_is_unreadable() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        for bad in [
            "garbage".to_string(),
            r#"{"seq":1}"#.to_string(),
            r#"{"seq":1,"hash":"00"}"#.to_string(),
            format!(r#"{{"seq":1,"hash":"{}","x":1}}"#, "0".repeat(64)),
            "x".repeat(5000),
        ] {
            fs::write(head_path(&log), &bad).unwrap();
            assert!(
                matches!(read_head(&log).unwrap(), HeadState::Unreadable(_)),
                "{bad}"
            );
        }
    }
}
