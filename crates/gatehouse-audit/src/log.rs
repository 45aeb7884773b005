//! The writer's API: [`AuditLog`] opens (and repairs) the log and appends records, one
//! process or several, under an exclusive OS file lock, made durable as its [`Durability`]
//! says.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Instant;

use serde_json::Value;
use time::OffsetDateTime;

use crate::AuditError;
use crate::durability::{
    Durability, Fdatasync, HandleFiles, Syncer, boot_id, mark_flush_failed, write_marker,
};
use crate::head::prepare_head;
use crate::record::{Anchor, Entry, check_event_name, check_server, format_time, json_kind};
use crate::report::{Appended, Flushed, OpenReport};
use crate::segment::{Pruned, Retention, Rotation};
use crate::writer::{Writer, open_log_file};

/// An open audit log. Each handle holds its own file descriptor and lock, so handles in several
/// threads or processes can append to one file and the chain stays whole. A batched handle
/// also owns its flusher thread; dropping the handle flushes and stops it.
pub struct AuditLog {
    shared: Arc<Shared>,
    flusher: Option<JoinHandle<()>>,
    path: PathBuf,
    /// The last record this handle wrote or saw (informational: another handle may have
    /// appended since).
    last: Anchor,
}

impl fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuditLog")
            .field("path", &self.path)
            .field("last", &self.last)
            .finish_non_exhaustive()
    }
}

/// What a handle's appends and its flusher share.
struct Shared {
    path: PathBuf,
    writer: Mutex<Writer>,
    /// Wakes the flusher: a batch's first record, a full batch, a change of mode, a close.
    wake: Condvar,
    /// Held for a whole flush, so one handle's heads are written in order.
    flushing: Mutex<()>,
}

impl AuditLog {
    /// Opens the log at `path` for appending in the [`Durability::Sync`] mode, creating it
    /// (mode 0600, and its directory, mode 0700) if missing. See [`AuditLog::open_with`].
    pub fn open(
        path: impl AsRef<Path>,
        now: OffsetDateTime,
    ) -> Result<(AuditLog, OpenReport), AuditError> {
        AuditLog::open_with(path, now, Durability::Sync)
    }

    /// Opens the log at `path` for appending with `durability`, creating it if missing.
    ///
    /// Only the end is checked, so opening is cheap whatever the log's size: a torn last line
    /// is moved to a side file and recorded, a head file that does not match is recorded, and
    /// markers of batched writers stopped by a restart of the machine are recorded (see
    /// [`Recovery`]); `now` is the time of those records. A break in the middle of the chain
    /// is left for [`verify`](crate::verify) to name: appending after it hides nothing,
    /// because the chain before a break is never rewritten.
    pub fn open_with(
        path: impl AsRef<Path>,
        now: OffsetDateTime,
        durability: Durability,
    ) -> Result<(AuditLog, OpenReport), AuditError> {
        AuditLog::open_with_syncer(path, now, durability, Arc::new(Fdatasync))
    }

    /// [`AuditLog::open_with`], making the log file durable through `syncer` rather than
    /// `fdatasync`: for tests that need a disk that fails.
    pub fn open_with_syncer(
        path: impl AsRef<Path>,
        now: OffsetDateTime,
        durability: Durability,
        syncer: Arc<dyn Syncer>,
    ) -> Result<(AuditLog, OpenReport), AuditError> {
        check_durability(durability)?;
        let path = path.as_ref().to_path_buf();
        let time = format_time(now)?;
        let (file, created) = open_log_file(&path)?;
        let mut writer = Writer::new(path.clone(), file, boot_id(), syncer);
        let (recovery, last, _) = writer.locked(|w| w.write_locked(&time, None))?;
        let report = OpenReport {
            created,
            last_seq: last.seq,
            recovery,
        };
        let mut log = AuditLog {
            shared: Arc::new(Shared {
                path: path.clone(),
                writer: Mutex::new(writer),
                wake: Condvar::new(),
                flushing: Mutex::new(()),
            }),
            flusher: None,
            path,
            last,
        };
        log.set_durability(durability)?;
        Ok((log, report))
    }

    /// [`AuditLog::open_with`], rotating as `rotation` says (`None`: never, one file as before
    /// segments existed). See the crate docs, "Segments".
    pub fn open_rotating(
        path: impl AsRef<Path>,
        now: OffsetDateTime,
        durability: Durability,
        rotation: Option<Rotation>,
    ) -> Result<(AuditLog, OpenReport), AuditError> {
        let (mut log, report) = AuditLog::open_with(path, now, durability)?;
        log.set_rotation(rotation);
        Ok((log, report))
    }

    /// Changes when this handle rotates (`None`: never). Each handle rotates by its own
    /// setting; any of them continues the one chain.
    pub fn set_rotation(&mut self, rotation: Option<Rotation>) {
        self.shared
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .rotation = rotation;
    }

    /// When this handle rotates.
    pub fn rotation(&self) -> Option<Rotation> {
        self.shared
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .rotation
    }

    /// Deletes the oldest sealed segments whose every record is older than `now` minus
    /// `retention`'s days (never the active file, never a segment after a gap, at most 1000 at
    /// once), after appending an `audit_retention` record that names each (file, first and
    /// last seq, last hash), flushed and anchored by the head, so [`verify`](crate::verify)
    /// tells "removed by retention" from "missing". Keeping forever removes nothing. `now` is
    /// the caller's clock (and the record's time).
    pub fn prune(
        &mut self,
        now: OffsetDateTime,
        retention: &Retention,
    ) -> Result<Pruned, AuditError> {
        let Some(days) = retention.window() else {
            return Ok(Pruned::default());
        };
        let time = format_time(now)?;
        let mut writer = self.shared.writer()?;
        if let Some(detail) = &writer.batch.failed {
            return Err(AuditError::FlushFailed {
                path: self.path.clone(),
                detail: detail.clone(),
            });
        }
        let pruned = writer.locked(|w| w.prune_locked(&time, now, days))?;
        if let Some(known) = &writer.known {
            self.last = known.last.clone();
        }
        Ok(pruned)
    }

    /// Appends one record. It is in the file (one `write_all` of the line and its newline)
    /// before this returns, so a crash of this process loses nothing. In the sync mode it is
    /// also on stable storage and anchored by the head; in the batched mode the flusher does
    /// that within the window. On `Err` the decision the record is for must not take effect,
    /// and the record is not in the log (a partial line is truncated away). After a flush
    /// failed, every append fails.
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
        check_event_name(event)?;
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
        let mut writer = self.shared.writer()?;
        if let Some(detail) = &writer.batch.failed {
            return Err(AuditError::FlushFailed {
                path: self.path.clone(),
                detail: detail.clone(),
            });
        }
        let (recovery, anchor, rotated) = writer.locked(|w| w.write_locked(&time, Some(&entry)))?;
        if let Durability::Batched { max_records, .. } = writer.durability {
            let batch = &mut writer.batch;
            batch.pending = batch.pending.saturating_add(1);
            if batch.since.is_none() {
                batch.since = Some(Instant::now());
                self.shared.wake.notify_one();
            } else if batch.pending >= max_records {
                self.shared.wake.notify_one();
            }
        }
        drop(writer);
        self.last = anchor.clone();
        Ok(Appended {
            seq: anchor.seq,
            hash: anchor.hash,
            recovery,
            rotated,
        })
    }

    /// Makes every record this handle wrote durable now and anchors the head to the last one
    /// (in the sync mode they already are). Returns what is durable.
    pub fn flush(&self) -> Result<Flushed, AuditError> {
        self.shared.flush()
    }

    /// The mode appends are made durable in.
    pub fn durability(&self) -> Durability {
        self.shared
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .durability
    }

    /// Changes the mode. To the batched mode: the handle's marker is made durable first (see
    /// the crate docs on power cuts) and the flusher starts. To the sync mode: what is pending
    /// is flushed, and every append after this is durable before it returns.
    pub fn set_durability(&mut self, durability: Durability) -> Result<(), AuditError> {
        check_durability(durability)?;
        let mut writer = self.shared.writer()?;
        if writer.durability == durability {
            return Ok(());
        }
        // After a failed flush nothing changes: a new marker would hide that it failed.
        if let Some(detail) = &writer.batch.failed {
            return Err(AuditError::FlushFailed {
                path: self.path.clone(),
                detail: detail.clone(),
            });
        }
        match durability {
            Durability::Batched { .. } => {
                let boot_id = writer.boot_id.clone();
                let files = writer
                    .files
                    .get_or_insert_with(|| HandleFiles::new(&self.path));
                if let Some(boot) = &boot_id {
                    write_marker(&files.marker, &self.path, boot, durability).map_err(
                        |source| AuditError::Write {
                            path: files.marker.clone(),
                            source,
                        },
                    )?;
                    files.marked = Some(durability);
                }
                writer.durability = durability;
                drop(writer);
                if self.flusher.is_none() {
                    let shared = self.shared.clone();
                    let flusher = thread::Builder::new()
                        .name("audit-flush".into())
                        .spawn(move || run_flusher(&shared))
                        .map_err(|source| AuditError::Write {
                            path: self.path.clone(),
                            source,
                        })?;
                    self.flusher = Some(flusher);
                }
                self.shared.wake.notify_one();
            }
            Durability::Sync => {
                writer.durability = durability;
                drop(writer);
                self.shared.flush()?;
                self.shared.remove_marker();
            }
        }
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The last record this handle wrote or saw (others may have appended since).
    pub fn last(&self) -> &Anchor {
        &self.last
    }
}

impl Drop for AuditLog {
    /// Flushes what is pending and stops the flusher; the marker goes only when everything
    /// this handle wrote is durable.
    fn drop(&mut self) {
        if let Some(flusher) = self.flusher.take() {
            self.shared
                .writer
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .batch
                .stop = true;
            self.shared.wake.notify_all();
            let _ = flusher.join();
        }
        self.shared.remove_marker();
    }
}

fn check_durability(durability: Durability) -> Result<(), AuditError> {
    match durability.problem() {
        Some(detail) => Err(AuditError::BadDurability { detail }),
        None => Ok(()),
    }
}

impl Shared {
    fn writer(&self) -> Result<MutexGuard<'_, Writer>, AuditError> {
        self.writer.lock().map_err(|_| AuditError::FlushFailed {
            path: self.path.clone(),
            detail: "a thread panicked while appending to the audit log".into(),
        })
    }

    /// One flush: note this handle's end, `sync_data` the file (no lock needed: the sync
    /// covers every byte written before it, by any process), then write the head anchoring
    /// that end through this handle's private temp file, and rename it over the head under
    /// the log's lock unless the head already anchors a later record. Appends go on
    /// meanwhile; what they write waits for the next flush. A failure is kept: every later
    /// append fails.
    fn flush(&self) -> Result<Flushed, AuditError> {
        let _order = self.flushing.lock().unwrap_or_else(PoisonError::into_inner);
        let (file, sync, path, temp, target) = {
            let mut writer = self.writer()?;
            if let Some(detail) = &writer.batch.failed {
                return Err(AuditError::FlushFailed {
                    path: writer.path.clone(),
                    detail: detail.clone(),
                });
            }
            let target = match writer.end_target() {
                Ok(target) => target,
                Err(e) => {
                    // Kept, so appends refuse and the flusher does not retry in a loop.
                    failed(&mut writer, &e);
                    writer.batch.pending = 0;
                    writer.batch.since = None;
                    return Err(e);
                }
            };
            if writer.batch.pending == 0
                && (writer.durability == Durability::Sync
                    || writer.batch.flushed.as_ref() == Some(&target))
            {
                return Ok(target);
            }
            writer.batch.pending = 0;
            writer.batch.since = None;
            let temp = writer.files.as_ref().map(|f| f.head_temp.clone());
            (
                writer.file.clone(),
                writer.sync.clone(),
                writer.path.clone(),
                temp,
                target,
            )
        };
        let anchor = Anchor {
            seq: target.seq,
            hash: target.hash.clone(),
        };
        let temp = temp.unwrap_or_else(|| crate::head::sibling(&path, ".head.tmp"));
        let prepared = sync
            .sync_data(&file)
            .map_err(|source| AuditError::Write {
                path: path.clone(),
                source,
            })
            .and_then(|()| prepare_head(&path, &temp, &anchor));
        // Installed under the handle's mutex (the OS lock is this handle's descriptor's, which
        // its appends share) and the log's exclusive lock, and only over a head that anchors
        // an earlier record: another handle may have flushed further meanwhile, and the head
        // never moves backwards. Either way `target` is durable.
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        match prepared.and_then(|()| writer.install_flushed_head(&temp, anchor.seq)) {
            Ok(_) => {
                writer.batch.flushed = Some(target.clone());
                Ok(target)
            }
            Err(e) => {
                failed(&mut writer, &e);
                Err(e)
            }
        }
    }

    fn remove_marker(&self) {
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if writer.batch.failed.is_none()
            && writer.batch.pending == 0
            && let Some(files) = &mut writer.files
        {
            let _ = fs::remove_file(&files.marker);
            files.marked = None;
        }
    }
}

/// A flush failed: records this handle wrote since its last good flush may never reach the
/// disk, even if the machine keeps running (the kernel may drop pages it could not write).
/// Kept, so every later append refuses; and said in the handle's marker, so whoever opens the
/// log next records it rather than take the marker for a crashed process's and remove it.
fn failed(writer: &mut Writer, error: &AuditError) {
    writer.batch.failed = Some(error.to_string());
    let durable_seq = writer.batch.flushed.as_ref().map(|f| f.seq);
    if let (Some(files), Some(boot)) = (&mut writer.files, &writer.boot_id)
        && let Some(window) = files.marked
    {
        // When even this fails the marker is left as it was: it is never removed now.
        let _ = mark_flush_failed(&files.marker, &writer.path, boot, window, durable_seq);
        files.marked = None;
    }
}

/// The flusher: sleeps until a batch's first record, then flushes when the batch is full or
/// its first record is `max_delay` old, whichever comes first; on close, flushes and stops.
fn run_flusher(shared: &Shared) {
    loop {
        let stop = {
            let mut writer = shared.writer.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                if writer.batch.stop {
                    break true;
                }
                let due = match (writer.durability, writer.batch.since) {
                    (
                        Durability::Batched {
                            max_delay,
                            max_records,
                        },
                        Some(since),
                    ) => {
                        let age = since.elapsed();
                        if writer.batch.pending >= max_records || age >= max_delay {
                            break false;
                        }
                        Some(max_delay - age)
                    }
                    _ => None,
                };
                writer = match due {
                    Some(wait) => {
                        shared
                            .wake
                            .wait_timeout(writer, wait)
                            .unwrap_or_else(PoisonError::into_inner)
                            .0
                    }
                    None => shared
                        .wake
                        .wait(writer)
                        .unwrap_or_else(PoisonError::into_inner),
                };
            }
        };
        // A failure is kept in the batch; the next append reports it.
        let _ = shared.flush();
        if stop {
            return;
        }
    }
}
