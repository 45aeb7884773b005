//! The writer's file work, done under the log's exclusive OS lock: find the real end, repair
//! and record what is wrong with it, write a record, and (in the sync mode) the head.

use std::fs::{self, DirBuilder, File};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::AuditError;
use crate::MAX_RECORD_BYTES;
use crate::durability::{Durability, HandleFiles, Syncer, stale_markers};
use crate::head::{
    HeadState, head_path, install_head_if_newer, private_file_options, read_head, sibling,
    sync_dir, write_head,
};
use crate::record::{
    Anchor, EVENT_HEAD_MISMATCH, EVENT_SHORT_TAIL, EVENT_TORN_TAIL, Entry, ZERO_HASH, encode,
    line_hash,
};
use crate::report::{Flushed, HeadMismatch, HeadProblem, Recovery, ShortTail, TornTail};
use crate::scan::{Tail, read_exact_at, scan_tail};
use crate::segment::{Rotated, Rotation, object};

/// One handle's file and what it knows of it. Used only under the handle's mutex
/// (`log::Shared`), and its file work only under the OS lock.
#[derive(Debug)]
pub(crate) struct Writer {
    pub path: PathBuf,
    /// Shared with the flusher, which syncs it without the OS lock (a sync needs none).
    pub file: Arc<File>,
    /// How `file` is made durable (`fdatasync` outside tests).
    pub sync: Arc<dyn Syncer>,
    pub durability: Durability,
    /// The end as this handle left it; `None` until the first look, and after a failure.
    pub known: Option<Known>,
    pub batch: Batch,
    /// This handle's marker and private head file, once it has been batched.
    pub files: Option<HandleFiles>,
    /// The running system's boot id, read once at open.
    pub boot_id: Option<String>,
    /// The open file's device and inode, to tell with one `stat` of the path whether the path
    /// still names it.
    pub(crate) ident: Option<(u64, u64)>,
    /// When to seal the active file as a segment; `None`: never.
    pub rotation: Option<Rotation>,
    /// The file's length as the lock was taken (from that same `stat`), for this append.
    seen_len: Option<u64>,
}

/// How many times one append opens the log again because the path names another file (a
/// rotation, or the log replaced) before it gives up.
const MAX_REOPEN: u32 = 1000;

/// The device and inode of an open file.
pub(crate) fn ident(file: &File) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        file.metadata().ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        None
    }
}

/// The log's end as this handle last wrote or read it. When the file's length and the head
/// file's identity are unchanged at the next append, nobody else wrote either, so the end
/// need not be read again: this is what makes an append cost one write.
#[derive(Debug, Clone)]
pub(crate) struct Known {
    pub len: u64,
    pub last: Anchor,
    pub head: Option<Stamp>,
}

/// A file's identity and last change, as `stat` gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: i64,
    mtime_nsec: i64,
}

/// The stamp of the file at `path`; `None` when it cannot be had (then the end is always read).
pub(crate) fn stamp(path: &Path) -> Option<Stamp> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = fs::metadata(path).ok()?;
        Some(Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
        })
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// The batched mode's bookkeeping.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    /// Records written since the last flush.
    pub pending: u32,
    /// When the first of them was written (a monotonic timer for scheduling only; record
    /// times are always the caller's).
    pub since: Option<std::time::Instant>,
    /// Why a flush failed. From then on every append fails: a decision is never taken on a
    /// record that may not become durable.
    pub failed: Option<String>,
    /// The handle is closing: flush and stop.
    pub stop: bool,
    /// What the last flush made durable.
    pub flushed: Option<Flushed>,
}

impl Writer {
    pub(crate) fn new(
        path: PathBuf,
        file: File,
        boot_id: Option<String>,
        sync: Arc<dyn Syncer>,
    ) -> Writer {
        Writer {
            path,
            ident: ident(&file),
            file: Arc::new(file),
            sync,
            durability: Durability::Sync,
            known: None,
            batch: Batch::default(),
            files: None,
            boot_id,
            seen_len: None,
            rotation: None,
        }
    }

    /// Runs `f` holding the exclusive lock. If the path no longer names the file this handle
    /// has open (the log was deleted or replaced), the path is opened again first, so records
    /// never go to an unlinked file nobody will read.
    pub(crate) fn locked<T>(
        &mut self,
        f: impl FnOnce(&mut Writer) -> Result<T, AuditError>,
    ) -> Result<T, AuditError> {
        lock(&self.file, &self.path)?;
        // Checked again after every wait for a lock: a rotation may seal the file just opened
        // before its lock is had, and a sealed file must never be written again.
        let mut reopened = 0;
        loop {
            self.seen_len = self.current_len();
            if self.seen_len.is_some() {
                break;
            }
            let _ = self.file.unlock();
            reopened += 1;
            if reopened > MAX_REOPEN {
                return Err(AuditError::Lock {
                    path: self.path.clone(),
                    source: io::Error::other(format!(
                        "the log file was replaced {MAX_REOPEN} times while this writer waited for its lock"
                    )),
                });
            }
            let file = open_log_file(&self.path)?.0;
            self.ident = ident(&file);
            self.file = Arc::new(file);
            self.known = None;
            lock(&self.file, &self.path)?;
        }
        let result = f(self);
        self.seen_len = None;
        if result.is_err() {
            self.known = None;
        }
        // Unlocking can only fail if the descriptor is bad; closing it would release the lock.
        let _ = self.file.unlock();
        result
    }

    /// Installs a batched flush's head, prepared in `temp` for the record at `seq` (already
    /// durable), under the exclusive lock, unless the head anchors that record or a later one
    /// (see [`install_head_if_newer`]): without the lock, an older flush's rename could land
    /// after a newer one's and move the head back. Only the lock, not [`Writer::locked`]: the
    /// flush anchors what this handle's file holds, without reading the end or opening the
    /// path again. When installed, the new head's stamp is noted (under the lock, so it is this
    /// head's), so this handle's next append knows the head is its own and does not read the
    /// end again; when not, the head is another's and the next append looks.
    pub(crate) fn install_flushed_head(
        &mut self,
        temp: &Path,
        seq: u64,
    ) -> Result<bool, AuditError> {
        lock(&self.file, &self.path)?;
        if self.current_len().is_none() {
            // A rotation sealed this file: it synced it first and anchored the head to its
            // own, later record, so this head would only move it back.
            let _ = fs::remove_file(temp);
            let _ = self.file.unlock();
            return Ok(false);
        }
        let installed = install_head_if_newer(&self.path, temp, seq);
        if let (Ok(true), Some(known)) = (&installed, &mut self.known) {
            known.head = stamp(&head_path(&self.path));
        }
        let _ = self.file.unlock();
        installed
    }

    /// The file's length, when the path still names the file this handle has open (one
    /// `stat`: the path's identity is compared with the one noted at open).
    #[cfg(unix)]
    fn current_len(&self) -> Option<u64> {
        use std::os::unix::fs::MetadataExt;
        let at_path = fs::metadata(&self.path).ok()?;
        (Some((at_path.dev(), at_path.ino())) == self.ident).then_some(at_path.len())
    }

    /// Stable std has no file identity outside Unix, so elsewhere the check is skipped: a log
    /// deleted while open is only noticed (as a head mismatch) the next time it is opened.
    #[cfg(not(unix))]
    fn current_len(&self) -> Option<u64> {
        self.file.metadata().ok().map(|m| m.len())
    }

    /// Under the lock: make sure of the end (re-read unless nothing changed since this handle
    /// last looked), then write `entry` (if any). In the sync mode the record is flushed and
    /// the head replaced before this returns; in the batched mode the record is only written
    /// (the flusher does the rest). Returns the recovery done and the last record's anchor.
    pub(crate) fn write_locked(
        &mut self,
        time: &str,
        entry: Option<&Entry<'_>>,
    ) -> Result<(Recovery, Anchor, Option<Rotated>), AuditError> {
        let len = match self.seen_len.take() {
            Some(len) => len,
            None => self.end()?,
        };
        let head_file = head_path(&self.path);
        let mut head_stamp = stamp(&head_file);
        let unchanged = entry.is_some()
            && head_stamp.is_some()
            && self
                .known
                .as_ref()
                .is_some_and(|k| k.len == len && k.head == head_stamp);
        let (recovery, last) = if unchanged {
            let known = self.known.as_ref().expect("checked above");
            (Recovery::default(), known.last.clone())
        } else {
            let (recovery, last, head_written) = self.check_end(time, len, entry.is_none())?;
            if head_written {
                head_stamp = stamp(&head_file);
            }
            (recovery, last)
        };
        let Some(entry) = entry else {
            self.known = Some(Known {
                len: self.end()?,
                last: last.clone(),
                head: head_stamp,
            });
            return Ok((recovery, last, None));
        };
        let mut last = last;
        let mut rotated = None;
        if let Some(rotation) = self.rotation {
            let limit = rotation.limit();
            let len_now = if unchanged && recovery.is_empty() {
                len
            } else {
                self.end()?
            };
            // Encoding twice costs a little, so only near the limit.
            if len_now > 0 && len_now.saturating_add(MAX_RECORD_BYTES as u64 + 1) > limit {
                let next = self.next_seq(&last)?;
                let size = encode(entry, next, &last.hash)?.len() as u64 + 1;
                if len_now.saturating_add(size) > limit {
                    let (anchor, info) = self.rotate(time, &last, len_now)?;
                    last = anchor;
                    rotated = Some(info);
                    head_stamp = stamp(&head_file);
                }
            }
        }
        let sync = self.durability == Durability::Sync;
        let (anchor, start, end) = self.write_record(entry, &last, sync)?;
        if sync {
            if let Err(e) = write_head(&self.path, &anchor) {
                // The head must anchor every acknowledged record, so a record it cannot
                // anchor is taken back and the append fails as a whole.
                rollback(&*self.sync, &self.file, start);
                return Err(e);
            }
            head_stamp = stamp(&head_file);
        }
        self.known = Some(Known {
            len: end,
            last: anchor.clone(),
            head: head_stamp,
        });
        Ok((recovery, anchor, rotated))
    }

    /// Reads the real end and the head, repairs and records what is wrong (a torn tail, a
    /// head that does not match, and at open markers of batched writers a power cut stopped),
    /// and writes the head if any of that changed it. Returns the recovery, the last record
    /// and whether the head was written.
    pub(crate) fn check_end(
        &mut self,
        time: &str,
        len: u64,
        opening: bool,
    ) -> Result<(Recovery, Anchor, bool), AuditError> {
        if opening {
            // A rotation that died part way is undone (the active file still holds every
            // record); under the lock, so it is not a live one.
            crate::segment::undo_rotation(&self.path, &self.file).map_err(|source| {
                AuditError::Write {
                    path: self.path.clone(),
                    source,
                }
            })?;
        }
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
            last = self
                .write_record(&own_entry(time, EVENT_TORN_TAIL, &data), &last, true)?
                .0;
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
            last = self
                .write_record(&own_entry(time, EVENT_HEAD_MISMATCH, &data), &last, true)?
                .0;
            recovery.head_mismatch = Some(HeadMismatch {
                seq: last.seq,
                problem,
                head: head_anchor,
                log_last,
                detail,
            });
            head_stale = true;
        }

        if opening {
            let stale =
                stale_markers(&self.path, self.boot_id.as_deref(), true).map_err(|source| {
                    AuditError::Read {
                        path: self.path.clone(),
                        source,
                    }
                })?;
            if !stale.is_empty() {
                let head_seq = match &head {
                    HeadState::Present(anchor) => Some(anchor.seq),
                    _ => None,
                };
                let flush_ms = stale.iter().map(|m| m.flush_ms).max().unwrap_or(0);
                let flush_records = stale.iter().map(|m| m.flush_records).max().unwrap_or(0);
                let failed: Vec<_> = stale.iter().filter(|m| m.flush_failed).collect();
                // The lowest durable seq the failed writers state; unknown if one does not.
                let durable_seq = failed
                    .iter()
                    .map(|m| m.durable_seq)
                    .collect::<Option<Vec<u64>>>()
                    .and_then(|seqs| seqs.into_iter().min());
                let mut data = object(json!({
                    "writers": stale.len(),
                    "head_seq": head_seq,
                    "log_seq": last.seq,
                    "flush_ms": flush_ms,
                    "flush_records": flush_records,
                }));
                // Only for a failed flush, so a power cut's record reads as it always did.
                if !failed.is_empty() {
                    data.insert("flush_failed".into(), json!(failed.len()));
                    data.insert("durable_seq".into(), json!(durable_seq));
                }
                let log_seq = last.seq;
                last = self
                    .write_record(&own_entry(time, EVENT_SHORT_TAIL, &data), &last, true)?
                    .0;
                // Recorded first, removed after: a crash in between records it twice, never
                // not at all. A failed writer never uses its private head file again.
                for marker in &stale {
                    let _ = fs::remove_file(&marker.path);
                    if marker.flush_failed {
                        let _ = fs::remove_file(&marker.head_temp);
                    }
                }
                recovery.short_tail = Some(ShortTail {
                    seq: last.seq,
                    writers: stale.len() as u64,
                    head_seq,
                    log_seq,
                    flush_ms,
                    flush_records,
                    flush_failed: failed.len() as u64,
                    durable_seq,
                });
                head_stale = true;
            }
        }

        if head_stale {
            write_head(&self.path, &last)?;
        }
        Ok((recovery, last, head_stale))
    }

    /// What a flush now would make durable: the end as this handle knows it, or, after a
    /// failed append left it unknown, the last complete record read under the lock.
    pub(crate) fn end_target(&mut self) -> Result<Flushed, AuditError> {
        if let Some(known) = &self.known {
            return Ok(Flushed {
                seq: known.last.seq,
                hash: known.last.hash.clone(),
                len: known.len,
            });
        }
        self.locked(|w| {
            let len = w.end()?;
            let tail = scan_tail(&w.file, len, &w.path)?;
            let last = tail
                .last
                .map_or_else(Anchor::genesis, |(record, hash)| Anchor {
                    seq: record.seq,
                    hash,
                });
            Ok(Flushed {
                seq: last.seq,
                hash: last.hash,
                len: tail.complete_len,
            })
        })
    }

    fn next_seq(&self, last: &Anchor) -> Result<u64, AuditError> {
        last.seq
            .checked_add(1)
            .ok_or_else(|| AuditError::SeqExhausted {
                path: self.path.clone(),
            })
    }

    pub(crate) fn end(&self) -> Result<u64, AuditError> {
        self.file
            .metadata()
            .map(|m| m.len())
            .map_err(|source| AuditError::Read {
                path: self.path.clone(),
                source,
            })
    }

    /// Writes one record after `last` at the end of the file with one `write_all`, flushed
    /// when `sync`. On failure the file is truncated back to where it was, so no partial line
    /// is left behind. Returns the anchor and where the line starts and ends.
    pub(crate) fn write_record(
        &self,
        entry: &Entry<'_>,
        last: &Anchor,
        sync: bool,
    ) -> Result<(Anchor, u64, u64), AuditError> {
        let seq = self.next_seq(last)?;
        let mut line = encode(entry, seq, &last.hash)?;
        let hash = line_hash(&line);
        line.push(b'\n');
        let mut handle = &*self.file;
        let start = handle
            .seek(SeekFrom::End(0))
            .map_err(|source| AuditError::Write {
                path: self.path.clone(),
                source,
            })?;
        let written = handle.write_all(&line).and_then(|()| {
            if sync {
                self.sync.sync_data(&self.file)
            } else {
                Ok(())
            }
        });
        if let Err(source) = written {
            rollback(&*self.sync, &self.file, start);
            return Err(AuditError::Write {
                path: self.path.clone(),
                source,
            });
        }
        Ok((Anchor { seq, hash }, start, start + line.len() as u64))
    }

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
            self.hash_of_seq(complete_len, h.seq)
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
            .and_then(|()| self.sync.sync_data(&self.file))
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

pub(crate) fn own_entry<'a>(
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

/// Opens (or creates) the log for reading and writing. Refuses anything but a writable regular
/// file: a record "written" to /dev/null or into a read-only archive would be a lie.
pub(crate) fn open_log_file(path: &Path) -> Result<(File, bool), AuditError> {
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

pub(crate) fn lock(file: &File, path: &Path) -> Result<(), AuditError> {
    file.lock().map_err(|source| AuditError::Lock {
        path: path.to_path_buf(),
        source,
    })
}

/// Best effort: if even this fails, the partial line stays and is handled as a torn tail by
/// the next open or append.
fn rollback(sync: &dyn Syncer, file: &File, len: u64) {
    let _ = file.set_len(len).and_then(|()| sync.sync_data(file));
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
