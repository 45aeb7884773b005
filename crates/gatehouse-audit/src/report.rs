//! What opening, appending and flushing the log report: the torn tail set aside, a short
//! tail or a head that disagrees, what a flush made durable. Apart from [`crate::log`] so the
//! writer, which finds these, and the log, which hands them out, import one way.

use std::path::PathBuf;

use serde::Serialize;

use crate::record::Anchor;
use crate::segment::Rotated;

/// What a flush made durable: the last record on stable storage and the log's length after
/// it. A power cut keeps at least this much of the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Flushed {
    pub seq: u64,
    pub hash: String,
    pub len: u64,
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
    /// The active file was sealed as a segment first (rotation), and this record is in the new
    /// one: the host prunes after it.
    pub rotated: Option<Rotated>,
}

/// Damage found at the end of the log and what was written about it. Nothing is dropped
/// silently: each finding is also a record in the log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Recovery {
    pub torn_tail: Option<TornTail>,
    pub head_mismatch: Option<HeadMismatch>,
    /// Batched writers of an earlier boot left their markers: the machine stopped (a power
    /// cut, a crash of the OS) while their last records may not have reached the disk. Or a
    /// batched writer's flush failed (its marker says so), which may have lost them too.
    pub short_tail: Option<ShortTail>,
}

impl Recovery {
    pub fn is_empty(&self) -> bool {
        self.torn_tail.is_none() && self.head_mismatch.is_none() && self.short_tail.is_none()
    }
}

/// Found at open: `writers` batched handles had the log open when the machine stopped, or
/// (`flush_failed` of them) had a flush fail. Records they wrote in their last window (up to
/// `flush_ms` and `flush_records`) after the head's anchor may be missing; nothing before
/// `head_seq` is. Recorded as an `audit_short_tail` record with `seq`; `verify` reports it as a
/// short tail, not as a break.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShortTail {
    pub seq: u64,
    pub writers: u64,
    /// The head file's seq when the loss was found: the last record known flushed.
    pub head_seq: Option<u64>,
    /// The log's last record before the `audit_short_tail` record.
    pub log_seq: u64,
    pub flush_ms: u64,
    pub flush_records: u32,
    /// How many of the `writers` had a flush fail (an `fdatasync` or head write error) rather
    /// than being stopped by a restart of the machine. 0 for a power cut alone.
    pub flush_failed: u64,
    /// For a failed flush: the last seq those writers had made durable themselves, when their
    /// markers say (the lowest of them). Records after it that they wrote may be missing.
    pub durable_seq: Option<u64>,
}

impl ShortTail {
    /// What happened and what may be missing, as one sentence for a warning (no capital, no
    /// full stop): the host and the CLI add where it was recorded.
    pub fn describe(&self) -> String {
        let seq = |s: Option<u64>| s.map_or("?".to_string(), |s| s.to_string());
        let window = format!(
            "{} ms (at most {} records)",
            self.flush_ms, self.flush_records
        );
        let restarted = self.writers.saturating_sub(self.flush_failed);
        if self.flush_failed == 0 {
            format!(
                "the machine stopped while {} Gatehouse process(es) had the audit log open in the batched durability mode; records of their last {window} after seq {} may be missing",
                self.writers,
                seq(self.head_seq)
            )
        } else {
            let after = seq(self.durable_seq.or(self.head_seq));
            let mut text = format!(
                "writing the audit log to disk failed in {} Gatehouse process(es) in the batched durability mode (a failed fdatasync or head write); records they wrote in their last {window} after seq {after} may never have reached the disk",
                self.flush_failed
            );
            if restarted > 0 {
                text.push_str(&format!(
                    ", and the machine stopped while {restarted} other(s) had the log open, whose records after seq {} may be missing too",
                    seq(self.head_seq)
                ));
            }
            text
        }
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
