//! The writer: [`AuditLog`] opens (and repairs) the log and appends records, one process or
//! several, under an exclusive OS file lock.

use std::fs::{self, DirBuilder, File};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use crate::AuditError;
use crate::head::{HeadState, private_file_options, read_head, sibling, sync_dir, write_head};
use crate::record::{
    Anchor, EVENT_HEAD_MISMATCH, EVENT_TORN_TAIL, Entry, ZERO_HASH, check_server, encode,
    format_time, is_event_name, json_kind, line_hash,
};
use crate::scan::{Tail, find_hash_of_seq, read_exact_at, scan_tail};

/// An open audit log. Each handle holds its own file descriptor and lock, so handles in several
/// threads or processes can append to one file and the chain stays whole.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    file: File,
    /// The last record this handle saw (informational: every append re-reads the real end
    /// under the lock, because another handle may have appended since).
    last: Anchor,
}

/// What [`AuditLog::open`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpenReport {
    /// The log did not exist and was created.
    pub created: bool,
    /// `seq` of the last record, after any recovery records were written.
    pub last_seq: u64,
    /// What had to be repaired or recorded; the host should tell the user when not empty.
    pub recovery: Recovery,
}

/// A record made durable by [`AuditLog::append`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Appended {
    pub seq: u64,
    /// SHA-256 of the record's line, lower-case hex.
    pub hash: String,
    /// Recovery done first, under the same lock (another process crashed mid-write, or the
    /// log's end was removed). Usually empty.
    pub recovery: Recovery,
}

/// Damage found at the end of the log and what was written about it. Nothing is dropped
/// silently: each finding is also a record in the log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Recovery {
    pub torn_tail: Option<TornTail>,
    pub head_mismatch: Option<HeadMismatch>,
}

impl Recovery {
    pub fn is_empty(&self) -> bool {
        self.torn_tail.is_none() && self.head_mismatch.is_none()
    }
}

/// A last line that a crash (or a full disk) cut short. Its bytes were moved, unchanged, to
/// `side_file`, the log was truncated to its last complete record, and an `audit_torn_tail`
/// record with `seq` was appended holding `bytes`, `sha256` and the side file's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TornTail {
    /// The `audit_torn_tail` record's seq (also the seq the torn record would have had).
    pub seq: u64,
    pub bytes: u64,
    /// SHA-256 of the torn bytes, lower-case hex.
    pub sha256: String,
    /// `<log file name>.torn-<seq>` next to the log (`-1`, `-2`… appended if that exists).
    pub side_file: PathBuf,
}

/// The head file did not match the log's end: records were removed (or the head was lost or
/// altered). Recorded as an `audit_head_mismatch` record with `seq`; `verify` reports that
/// record as `truncated` from then on, so the loss stays visible.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeadMismatch {
    /// The `audit_head_mismatch` record's seq.
    pub seq: u64,
    pub problem: HeadProblem,
    /// What the head file said, when it could be read.
    pub head: Option<Anchor>,
    /// The log's last record when the mismatch was found.
    pub log_last: Anchor,
    pub detail: String,
}

/// How the head file disagreed with the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HeadProblem {
    /// No head file, yet the log holds records.
    Missing,
    /// The head file is not a head.
    Unreadable,
    /// The head names a seq beyond the log's end: trailing records were removed.
    Ahead,
    /// The record at the head's seq hashes differently: the end was rewritten, or the head was.
    Different,
}

impl HeadProblem {
    pub fn code(self) -> &'static str {
        match self {
            HeadProblem::Missing => "missing",
            HeadProblem::Unreadable => "unreadable",
            HeadProblem::Ahead => "ahead",
            HeadProblem::Different => "different",
        }
    }
}

impl AuditLog {
    /// Opens the log at `path` for appending, creating it (mode 0600, and its directory, mode
    /// 0700) if missing.
    ///
    /// Only the end is checked, so opening is cheap whatever the log's size: a torn last line
    /// is moved to a side file and recorded, and a head file that does not match is recorded
    /// (see [`Recovery`]); `now` is the time of those records. A break in the middle of the
    /// chain is left for [`verify`](crate::verify) to name: appending after it hides nothing,
    /// because the chain before a break is never rewritten.
    pub fn open(
        path: impl AsRef<Path>,
        now: OffsetDateTime,
    ) -> Result<(AuditLog, OpenReport), AuditError> {
        let path = path.as_ref().to_path_buf();
        let time = format_time(now)?;
        let (file, created) = open_log_file(&path)?;
        let mut log = AuditLog {
            path,
            file,
            last: Anchor::genesis(),
        };
        let (recovery, last) = log.locked(|log| log.write_locked(&time, None))?;
        let report = OpenReport {
            created,
            last_seq: last.seq,
            recovery,
        };
        log.last = last;
        Ok((log, report))
    }

    /// Appends one record and returns once it is on disk: the line and its newline are written
    /// with one `write_all`, then `sync_data`, then the head file is replaced. Only an `Ok`
    /// means the record is durable; on `Err` the decision it records must not take effect, and
    /// the record is not in the log (a partial line is truncated away).
    ///
    /// `event` must be snake_case (`[a-z][a-z0-9_]*`) and must not start with `audit_` (the
    /// log's own records); `server` must be printable; `data` must be a JSON object.
    pub fn append(
        &mut self,
        event: &str,
        server: Option<&str>,
        data: Value,
        now: OffsetDateTime,
    ) -> Result<Appended, AuditError> {
        if !is_event_name(event) {
            return Err(AuditError::BadEvent {
                event: event.to_string(),
            });
        }
        if event.starts_with("audit_") {
            return Err(AuditError::ReservedEvent {
                event: event.to_string(),
            });
        }
        if let Some(server) = server {
            check_server(server).map_err(|reason| AuditError::BadServer {
                server: server.to_string(),
                reason,
            })?;
        }
        let data = match data {
            Value::Object(map) => map,
            other => {
                return Err(AuditError::DataNotObject {
                    found: json_kind(&other),
                });
            }
        };
        let time = format_time(now)?;
        let entry = Entry {
            time: &time,
            event,
            server,
            data: &data,
        };
        let (recovery, anchor) = self.locked(|log| log.write_locked(&time, Some(&entry)))?;
        self.last = anchor.clone();
        Ok(Appended {
            seq: anchor.seq,
            hash: anchor.hash,
            recovery,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The last record this handle wrote or saw (others may have appended since).
    pub fn last(&self) -> &Anchor {
        &self.last
    }

    /// Runs `f` holding the exclusive lock. If the path no longer names the file this handle
    /// has open (the log was deleted or replaced), the path is opened again first, so records
    /// never go to an unlinked file nobody will read.
    fn locked<T>(
        &mut self,
        f: impl FnOnce(&AuditLog) -> Result<T, AuditError>,
    ) -> Result<T, AuditError> {
        lock(&self.file, &self.path)?;
        if !self.is_current() {
            let _ = self.file.unlock();
            self.file = open_log_file(&self.path)?.0;
            lock(&self.file, &self.path)?;
        }
        let result = f(self);
        // Unlocking can only fail if the descriptor is bad; closing it would release the lock.
        let _ = self.file.unlock();
        result
    }

    #[cfg(unix)]
    fn is_current(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        match (fs::metadata(&self.path), self.file.metadata()) {
            (Ok(at_path), Ok(open)) => at_path.dev() == open.dev() && at_path.ino() == open.ino(),
            _ => false,
        }
    }

    /// Stable std has no file identity outside Unix, so elsewhere the check is skipped: a log
    /// deleted while open is only noticed (as a head mismatch) the next time it is opened.
    #[cfg(not(unix))]
    fn is_current(&self) -> bool {
        true
    }

    /// Under the lock: find the real end, repair and record what is wrong with it, then write
    /// `entry` (if any) and the head. Returns the recovery done and the last record's anchor.
    fn write_locked(
        &self,
        time: &str,
        entry: Option<&Entry<'_>>,
    ) -> Result<(Recovery, Anchor), AuditError> {
        let len = self
            .file
            .metadata()
            .map_err(|source| AuditError::Read {
                path: self.path.clone(),
                source,
            })?
            .len();
        let tail = scan_tail(&self.file, len, &self.path)?;
        let head = read_head(&self.path)?;
        let (mut last, last_prev) = match &tail.last {
            Some((record, hash)) => (
                Anchor {
                    seq: record.seq,
                    hash: hash.clone(),
                },
                record.prev.clone(),
            ),
            None => (Anchor::genesis(), ZERO_HASH.to_string()),
        };
        let mismatch = self.check_head(&head, &last, &last_prev, tail.complete_len)?;
        let mut head_stale = head == HeadState::Missing;
        let mut recovery = Recovery::default();

        if tail.is_torn() {
            let seq = self.next_seq(&last)?;
            let torn = self.save_torn(&tail, seq)?;
            let side_name = torn
                .side_file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let data = object(json!({
                "bytes": torn.bytes,
                "sha256": torn.sha256,
                "side_file": side_name,
            }));
            last = self.write_record(&self.own_entry(time, EVENT_TORN_TAIL, &data), &last)?;
            recovery.torn_tail = Some(torn);
            head_stale = true;
        }

        if let Some((problem, head_anchor, detail)) = mismatch {
            let data = object(json!({
                "problem": problem.code(),
                "head_seq": head_anchor.as_ref().map(|a| a.seq),
                "head_hash": head_anchor.as_ref().map(|a| a.hash.clone()),
                "log_seq": last.seq,
                "log_hash": last.hash,
            }));
            let log_last = last.clone();
            last = self.write_record(&self.own_entry(time, EVENT_HEAD_MISMATCH, &data), &last)?;
            recovery.head_mismatch = Some(HeadMismatch {
                seq: last.seq,
                problem,
                head: head_anchor,
                log_last,
                detail,
            });
            head_stale = true;
        }

        let Some(entry) = entry else {
            if head_stale {
                write_head(&self.path, &last)?;
            }
            return Ok((recovery, last));
        };
        let before = self.end()?;
        let anchor = self.write_record(entry, &last)?;
        if let Err(e) = write_head(&self.path, &anchor) {
            // The head must anchor every acknowledged record, so a record it cannot anchor is
            // taken back and the append fails as a whole.
            rollback(&self.file, before);
            return Err(e);
        }
        Ok((recovery, anchor))
    }

    fn own_entry<'a>(
        &self,
        time: &'a str,
        event: &'static str,
        data: &'a Map<String, Value>,
    ) -> Entry<'a> {
        Entry {
            time,
            event,
            server: None,
            data,
        }
    }

    fn next_seq(&self, last: &Anchor) -> Result<u64, AuditError> {
        last.seq
            .checked_add(1)
            .ok_or_else(|| AuditError::SeqExhausted {
                path: self.path.clone(),
            })
    }

    fn end(&self) -> Result<u64, AuditError> {
        self.file
            .metadata()
            .map(|m| m.len())
            .map_err(|source| AuditError::Read {
                path: self.path.clone(),
                source,
            })
    }

    /// Writes one record after `last` at the end of the file, flushed. On failure the file is
    /// truncated back to where it was, so no partial line is left behind.
    fn write_record(&self, entry: &Entry<'_>, last: &Anchor) -> Result<Anchor, AuditError> {
        let seq = self.next_seq(last)?;
        let mut line = encode(entry, seq, &last.hash)?;
        let hash = line_hash(&line);
        line.push(b'\n');
        let mut handle = &self.file;
        let start = handle
            .seek(SeekFrom::End(0))
            .map_err(|source| AuditError::Write {
                path: self.path.clone(),
                source,
            })?;
        if let Err(source) = handle.write_all(&line).and_then(|()| self.file.sync_data()) {
            rollback(&self.file, start);
            return Err(AuditError::Write {
                path: self.path.clone(),
                source,
            });
        }
        Ok(Anchor { seq, hash })
    }

    /// Compares the head file with the log's last record (`last`, whose `prev` is `last_prev`).
    /// The head may lag: a crash between the record's flush and the head's rename leaves it one
    /// record behind, which `last_prev` settles without reading further; a lag of more needs
    /// failed head writes and is settled by a scan.
    fn check_head(
        &self,
        head: &HeadState,
        last: &Anchor,
        last_prev: &str,
        complete_len: u64,
    ) -> Result<Option<(HeadProblem, Option<Anchor>, String)>, AuditError> {
        let h = match head {
            HeadState::Missing if last.seq == 0 => return Ok(None),
            HeadState::Missing => {
                return Ok(Some((
                    HeadProblem::Missing,
                    None,
                    format!(
                        "the head file is missing but the log holds {} records: records may have been removed from its end",
                        last.seq
                    ),
                )));
            }
            HeadState::Unreadable(why) => {
                return Ok(Some((
                    HeadProblem::Unreadable,
                    None,
                    format!(
                        "the head file is not readable as a head ({why}): records may have been removed from the log's end"
                    ),
                )));
            }
            HeadState::Present(h) => h,
        };
        let matches = if h.seq == last.seq {
            h.hash == last.hash
        } else if h.seq > last.seq {
            false
        } else if h.seq == 0 {
            h.hash == ZERO_HASH
        } else if h.seq + 1 == last.seq {
            h.hash == last_prev
        } else {
            find_hash_of_seq(&self.file, complete_len, h.seq)
                .map_err(|source| AuditError::Read {
                    path: self.path.clone(),
                    source,
                })?
                .is_some_and(|hash| hash == h.hash)
        };
        Ok(if matches {
            None
        } else if h.seq > last.seq {
            Some((
                HeadProblem::Ahead,
                Some(h.clone()),
                format!(
                    "the head file says the log reaches seq {} but it ends at seq {}: {} record(s) were removed from its end",
                    h.seq,
                    last.seq,
                    h.seq - last.seq
                ),
            ))
        } else {
            Some((
                HeadProblem::Different,
                Some(h.clone()),
                format!(
                    "the record at seq {} is not the one the head file anchored: the log's end was removed and rewritten, or the head file was altered",
                    h.seq
                ),
            ))
        })
    }

    /// Moves the torn bytes (`tail.complete_len..tail.len`) to a new side file, flushed, then
    /// truncates the log to its last complete record, flushed. The side file is complete before
    /// the log is cut, so a crash in between loses nothing.
    fn save_torn(&self, tail: &Tail, seq: u64) -> Result<TornTail, AuditError> {
        let (side_file, mut side) = self.create_side_file(seq)?;
        let save_err = |source| AuditError::SaveTorn {
            path: side_file.clone(),
            source,
        };
        let copied = copy_range(&self.file, tail.complete_len, tail.len, &mut side)
            .and_then(|sha| side.sync_all().map(|()| sha))
            .and_then(|sha| sync_dir(&self.path).map(|()| sha));
        let sha256 = match copied {
            Ok(sha) => sha,
            Err(source) => {
                drop(side);
                let _ = fs::remove_file(&side_file);
                return Err(save_err(source));
            }
        };
        self.file
            .set_len(tail.complete_len)
            .and_then(|()| self.file.sync_data())
            .map_err(|source| AuditError::Write {
                path: self.path.clone(),
                source,
            })?;
        Ok(TornTail {
            seq,
            bytes: tail.len - tail.complete_len,
            sha256,
            side_file,
        })
    }

    /// `<log>.torn-<seq>`, or `<log>.torn-<seq>-<n>` if that exists: an earlier side file is
    /// evidence and is never overwritten.
    fn create_side_file(&self, seq: u64) -> Result<(PathBuf, File), AuditError> {
        for n in 0..1000u32 {
            let suffix = match n {
                0 => format!(".torn-{seq}"),
                n => format!(".torn-{seq}-{n}"),
            };
            let path = sibling(&self.path, &suffix);
            match private_file_options()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(file) => return Ok((path, file)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(source) => return Err(AuditError::SaveTorn { path, source }),
            }
        }
        Err(AuditError::SaveTorn {
            path: sibling(&self.path, &format!(".torn-{seq}")),
            source: io::Error::new(
                io::ErrorKind::AlreadyExists,
                "1000 side files with this name exist",
            ),
        })
    }
}

/// Opens (or creates) the log for reading and writing. Refuses anything but a writable regular
/// file: a record "written" to /dev/null or into a read-only archive would be a lie.
fn open_log_file(path: &Path) -> Result<(File, bool), AuditError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let mut builder = DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder
            .create(dir)
            .map_err(|source| AuditError::CreateDir {
                path: dir.to_path_buf(),
                source,
            })?;
    }
    match fs::metadata(path) {
        Ok(meta) => check_log_metadata(&meta, path)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(AuditError::Open {
                path: path.to_path_buf(),
                source,
            });
        }
    }
    let open_err = |source| AuditError::Open {
        path: path.to_path_buf(),
        source,
    };
    let mut options = private_file_options();
    options.read(true).write(true);
    let (file, created) = match options.clone().create_new(true).open(path) {
        Ok(file) => (file, true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            (options.open(path).map_err(open_err)?, false)
        }
        Err(source) => return Err(open_err(source)),
    };
    // Checked again on the open file: the path may have changed since the first look.
    check_log_metadata(&file.metadata().map_err(open_err)?, path)?;
    if created {
        sync_dir(path).map_err(open_err)?;
    }
    Ok((file, created))
}

fn check_log_metadata(meta: &fs::Metadata, path: &Path) -> Result<(), AuditError> {
    if !meta.is_file() {
        Err(AuditError::NotARegularFile {
            path: path.to_path_buf(),
        })
    } else if meta.permissions().readonly() {
        Err(AuditError::ReadOnly {
            path: path.to_path_buf(),
        })
    } else {
        Ok(())
    }
}

fn lock(file: &File, path: &Path) -> Result<(), AuditError> {
    file.lock().map_err(|source| AuditError::Lock {
        path: path.to_path_buf(),
        source,
    })
}

/// Best effort: if even this fails, the partial line stays and is handled as a torn tail by
/// the next open or append.
fn rollback(file: &File, len: u64) {
    let _ = file.set_len(len).and_then(|()| file.sync_data());
}

/// Copies `start..end` of `from` into `to`, returning the SHA-256 of the bytes copied.
fn copy_range(from: &File, start: u64, end: u64, to: &mut File) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut pos = start;
    while pos < end {
        let n = usize::try_from(end - pos).map_or(buf.len(), |left| left.min(buf.len()));
        read_exact_at(from, &mut buf[..n], pos)?;
        hasher.update(&buf[..n]);
        to.write_all(&buf[..n])?;
        pos += n as u64;
    }
    Ok(hex::encode(hasher.finalize()))
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
