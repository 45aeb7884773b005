//! Sealing the active file as a segment (rotation) and deleting old segments (retention),
//! both under the log's exclusive lock. See the crate docs, "Segments", for the steps and what
//! a crash between any two of them leaves.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use time::OffsetDateTime;

use crate::AuditError;
use crate::durability::RotationStep;
use crate::head::{head_path, private_file_options, sync_dir, write_head};
use crate::record::{
    Anchor, EVENT_RETENTION, EVENT_ROTATED, Record, encode, format_time, line_hash, parse_line,
};
use crate::scan::{Line, Lines, find_hash_of_seq, scan_tail};
use crate::segment::{
    Continues, Pruned, RemovedSegment, Rotated, file_name, first_record, list_segments, object,
    rotating_path, same_file, segment_path, undo_rotation,
};
use crate::writer::{Known, Writer, ident, lock, own_entry, stamp};

/// Most segments one prune removes: its record lists each, and must stay well under the line
/// limit. The rest go at the next prune.
const MAX_PRUNE_SEGMENTS: usize = 1000;

impl Writer {
    /// Seals the active file (`len` bytes, last record `last`) as the next segment and puts a
    /// new active file in its place that starts with the `audit_rotated` record. Called under
    /// the exclusive lock of the active file; returns holding the lock of the new one (which
    /// becomes this handle's file) and the rotation record's anchor.
    pub(crate) fn rotate(
        &mut self,
        time: &str,
        last: &Anchor,
        len: u64,
    ) -> Result<(Anchor, Rotated), AuditError> {
        let log = self.path.clone();
        let write_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| AuditError::Write { path, source }
        };
        // A rotation that died earlier is undone first: its leftovers would take the names.
        undo_rotation(&log, &self.file).map_err(write_err(&log))?;
        let first = first_record(&self.file).map_err(|source| AuditError::Read {
            path: log.clone(),
            source,
        })?;
        let first_seq = first.as_ref().map_or(last.seq, |(r, _)| r.seq);
        let continued = first.as_ref().and_then(|(r, _)| Continues::of(r));
        let listed = list_segments(&log)?.last().map_or(0, |s| s.number);
        let number = listed
            .max(continued.map_or(0, |c| c.number))
            .checked_add(1)
            .ok_or_else(|| AuditError::SeqExhausted { path: log.clone() })?;
        let segment = segment_path(&log, number);

        // 1. Everything in the active file on stable storage: it is about to be sealed.
        self.sync.sync_data(&self.file).map_err(write_err(&log))?;
        self.sync.rotation_step(RotationStep::Sealed);

        // 2. The next active file, under a temporary name, with the record that continues the
        //    chain, flushed. Locked before anyone can reach it by the log's name.
        let next_path = rotating_path(&log);
        let data = object(json!({
            "segment": file_name(&segment),
            "number": number,
            "first_seq": first_seq,
            "last_seq": last.seq,
            "last_hash": last.hash,
            "bytes": len,
        }));
        let seq = last
            .seq
            .checked_add(1)
            .ok_or_else(|| AuditError::SeqExhausted { path: log.clone() })?;
        let mut line = encode(&own_entry(time, EVENT_ROTATED, &data), seq, &last.hash)?;
        let anchor = Anchor {
            seq,
            hash: line_hash(&line),
        };
        line.push(b'\n');
        let next = private_file_options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&next_path)
            .map_err(write_err(&next_path))?;
        let written = lock(&next, &next_path).and_then(|()| {
            (&next)
                .write_all(&line)
                .and_then(|()| self.sync.sync_data(&next))
                .and_then(|()| sync_dir(&log))
                .map_err(write_err(&next_path))
        });
        if let Err(e) = written {
            let _ = fs::remove_file(&next_path);
            return Err(e);
        }
        self.sync.rotation_step(RotationStep::NextWritten);

        // 3. The active file gets its segment name too (a hard link: no copy, same bytes).
        if let Err(e) = fs::hard_link(&log, &segment).and_then(|()| sync_dir(&log)) {
            let _ = undo_rotation(&log, &self.file);
            return Err(AuditError::Write {
                path: segment,
                source: e,
            });
        }
        self.sync.rotation_step(RotationStep::Linked);

        // 4. The next file takes the log's name (atomic): from here the rotation is done.
        if let Err(e) = fs::rename(&next_path, &log).and_then(|()| sync_dir(&log)) {
            let _ = undo_rotation(&log, &self.file);
            return Err(AuditError::Write {
                path: log,
                source: e,
            });
        }
        self.sync.rotation_step(RotationStep::Renamed);

        // The old file is now only the segment: release it and write to the new one. Done
        // before the head, so a failure there still leaves this handle on the right file.
        let _ = self.file.unlock();
        self.ident = ident(&next);
        self.file = Arc::new(next);
        self.known = None;

        // 5. The head anchors the rotation record (before this step it anchors the sealed
        //    segment's last record, one behind: accepted like any lagging head).
        write_head(&log, &anchor)?;
        self.sync.rotation_step(RotationStep::HeadWritten);
        Ok((
            anchor.clone(),
            Rotated {
                segment,
                number,
                first_seq,
                last_seq: last.seq,
                record_seq: anchor.seq,
            },
        ))
    }

    /// The hash of the record with `seq`, searching the active file's first `len` bytes
    /// backward and then, when the record is older than the active file, the sealed segments
    /// newest first (a head written before a rotation names a record in the sealed segment).
    /// Costs by how far back `seq` is, not by the log's size.
    pub(crate) fn hash_of_seq(&self, len: u64, seq: u64) -> io::Result<Option<String>> {
        if let Some(hash) = find_hash_of_seq(&self.file, len, seq)? {
            return Ok(Some(hash));
        }
        match first_record(&self.file)? {
            Some((first, _)) if first.seq > seq => {}
            _ => return Ok(None),
        }
        let active = self.file.metadata()?;
        let segments = list_segments(&self.path).map_err(io::Error::other)?;
        for seg in segments.iter().rev() {
            let file = File::open(&seg.path)?;
            let meta = file.metadata()?;
            if same_file(&meta, &active) {
                continue;
            }
            if let Some(hash) = find_hash_of_seq(&file, meta.len(), seq)? {
                return Ok(Some(hash));
            }
            match first_record(&file)? {
                Some((first, _)) if first.seq > seq => continue,
                _ => return Ok(None),
            }
        }
        Ok(None)
    }

    /// Under the lock: deletes the oldest sealed segments whose every record is older than
    /// `cutoff`, after writing (flushed, with the head) an `audit_retention` record naming them.
    pub(crate) fn prune_locked(
        &mut self,
        time: &str,
        now: OffsetDateTime,
        keep_days: u32,
    ) -> Result<Pruned, AuditError> {
        let cutoff = now
            .checked_sub(time::Duration::days(i64::from(keep_days)))
            .ok_or_else(|| AuditError::BadTime {
                time: now.to_string(),
            })?;
        let len = self.end()?;
        let (_, last, _) = self.check_end(time, len, false)?;
        let active = self.file.metadata().map_err(|source| AuditError::Read {
            path: self.path.clone(),
            source,
        })?;
        let mut removed: Vec<RemovedSegment> = Vec::new();
        let mut first = None;
        for seg in list_segments(&self.path)? {
            if removed.len() >= MAX_PRUNE_SEGMENTS {
                break;
            }
            // Only a run without gaps from the oldest: a segment missing in between is a break
            // for verify to name, not something a prune may paper over.
            if let Some(prev) = removed.last()
                && prev.number.checked_add(1) != Some(seg.number)
            {
                break;
            }
            let Ok(file) = File::open(&seg.path) else {
                break;
            };
            let Ok(meta) = file.metadata() else { break };
            if same_file(&meta, &active) {
                break;
            }
            match old_segment(&file, meta.len(), &seg.path, cutoff)? {
                Some(old) => {
                    if removed.is_empty() {
                        first = Some(seg.number);
                    }
                    // A retention record inside this segment that accounts for the ones
                    // before the first removed now carries that account forward.
                    if let Some(accounted) = old.accounts_before(first) {
                        first = Some(accounted);
                    }
                    removed.push(RemovedSegment {
                        segment: file_name(&seg.path),
                        number: seg.number,
                        first_seq: old.first_seq,
                        last_seq: old.last_seq,
                        last_hash: old.last_hash,
                    });
                }
                None => break,
            }
        }
        let Some(through) = removed.last().cloned() else {
            return Ok(Pruned::default());
        };
        let first_number = removed.first().map_or(through.number, |r| r.number);
        let first = if first_number == 1 {
            1
        } else {
            first.unwrap_or(first_number)
        };
        let cutoff_text = format_time(cutoff)?;
        let data = object(json!({
            "keep_days": keep_days,
            "cutoff": cutoff_text,
            "removed": removed,
            "first": first,
            "through": through.number,
            "through_hash": through.last_hash,
        }));
        let (anchor, _, end) =
            self.write_record(&own_entry(time, EVENT_RETENTION, &data), &last, true)?;
        write_head(&self.path, &anchor)?;
        self.known = Some(Known {
            len: end,
            last: anchor.clone(),
            head: stamp(&head_path(&self.path)),
        });
        // Recorded first, deleted after: a crash in between leaves segments the record names,
        // which verify accepts and the next prune removes (naming them again).
        for seg in &removed {
            let path = segment_path(&self.path, seg.number);
            fs::remove_file(&path).map_err(|source| AuditError::Write { path, source })?;
        }
        sync_dir(&self.path).map_err(|source| AuditError::Write {
            path: self.path.clone(),
            source,
        })?;
        Ok(Pruned {
            record_seq: Some(anchor.seq),
            removed,
        })
    }
}

/// A segment every record of which is older than the cutoff.
struct OldSegment {
    first_seq: u64,
    last_seq: u64,
    last_hash: String,
    /// The `(first, through)` of each `audit_retention` record inside it.
    retention: Vec<(u64, u64)>,
}

impl OldSegment {
    /// The oldest segment number accounted for, when a retention record in this segment (or
    /// one already removed with it) covers the segments before `first`.
    fn accounts_before(&self, first: Option<u64>) -> Option<u64> {
        let first = first?;
        self.retention
            .iter()
            .find(|(_, through)| through.checked_add(1) == Some(first))
            .map(|(accounted, _)| *accounted)
    }
}

/// Reads the segment when its last record is older than `cutoff` (one look at its end rules
/// out a recent one at once), and returns what the retention record needs if every record is.
/// `None` when a record is not older, or the segment is not clean (torn, unreadable): such a
/// segment is kept for verify to name.
fn old_segment(
    file: &File,
    len: u64,
    path: &Path,
    cutoff: OffsetDateTime,
) -> Result<Option<OldSegment>, AuditError> {
    let Ok(tail) = scan_tail(file, len, path) else {
        return Ok(None);
    };
    if tail.is_torn() {
        return Ok(None);
    }
    let Some((last, last_hash)) = tail.last else {
        return Ok(None);
    };
    if last.time >= cutoff {
        return Ok(None);
    }
    let read_err = |source| AuditError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut lines = Lines::of_file(file, len).map_err(read_err)?;
    let mut first_seq = None;
    let mut retention = Vec::new();
    while let Some(line) = lines.next_line().map_err(read_err)? {
        let Line::Complete(bytes) = line else {
            return Ok(None);
        };
        let Ok(record) = parse_line(&bytes) else {
            return Ok(None);
        };
        if record.time >= cutoff {
            return Ok(None);
        }
        first_seq.get_or_insert(record.seq);
        if let Some(span) = retention_span(&record) {
            retention.push(span);
        }
    }
    Ok(first_seq.map(|first_seq| OldSegment {
        first_seq,
        last_seq: last.seq,
        last_hash,
        retention,
    }))
}

/// `(first, through)` of an `audit_retention` record.
pub(crate) fn retention_span(record: &Record) -> Option<(u64, u64)> {
    if record.event != EVENT_RETENTION {
        return None;
    }
    let number = |key: &str| record.data.get(key).and_then(Value::as_u64);
    Some((number("first")?, number("through")?))
}
