//! The checker: walks the whole chain and names the first broken record.

use std::fmt;
use std::fs::File;
use std::io;
use std::path::Path;

use serde::Serialize;

use crate::durability::{boot_id, stale_markers};
use crate::head::{HeadState, head_path, read_head};
use crate::record::{
    Anchor, EVENT_HEAD_MISMATCH, EVENT_SHORT_TAIL, EVENT_TORN_TAIL, ZERO_HASH, line_hash,
    parse_line,
};
use crate::scan::{Line, Lines};
use crate::{AuditError, MAX_RECORD_BYTES};

/// The result of [`verify`]. Serializes as the `--json` output of `gatehouse audit verify`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// No broken record was found.
    pub ok: bool,
    /// How many records, from the first, were checked and found intact (all of them when `ok`).
    pub records: u64,
    /// The last intact record: copy it somewhere the log's writer cannot reach, and a later
    /// rewrite of the log up to this point shows (see the crate docs).
    pub tip: Option<Anchor>,
    pub first_broken: Option<Broken>,
    /// Torn tails repaired by the log before the first break (the `audit_torn_tail` records).
    /// They do not make the log broken: a torn line was never acknowledged to its writer.
    pub repairs: Vec<Repair>,
    /// Short tails: the machine stopped while batched writers had records not yet flushed, so
    /// the log may end before what they wrote. Not a break: nothing the head anchored is
    /// missing.
    pub short_tails: Vec<ShortTailNote>,
}

/// The first broken record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Broken {
    /// 1-based line number. For `truncated` found through the head file it may be one past the
    /// last line (the first record that is missing).
    pub line: u64,
    /// The record's seq, when the line could be read (or the missing record's seq).
    pub seq: Option<u64>,
    pub kind: BreakKind,
    pub detail: String,
}

/// Why the chain is broken at [`Broken::line`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakKind {
    /// The line is not a record: not JSON, a field missing, unknown or repeated, a value of the
    /// wrong form, or longer than the limit.
    BadJson,
    /// `prev` is not the SHA-256 of the line before: that line or this one was edited, or
    /// records were removed, inserted or reordered between them.
    BadPrev,
    /// `prev` matches but `seq` is not the previous seq + 1 (or the first record is not seq 1).
    BadSeq,
    /// The last line is incomplete: a write was cut short. Opening the log repairs it.
    TornTail,
    /// Records were removed from the end: the log ends before the head file's seq, the record
    /// at the head's seq is another one, the head file is missing or unreadable, or the log
    /// itself recorded finding this (`audit_head_mismatch`).
    Truncated,
}

impl BreakKind {
    pub fn code(self) -> &'static str {
        match self {
            BreakKind::BadJson => "bad_json",
            BreakKind::BadPrev => "bad_prev",
            BreakKind::BadSeq => "bad_seq",
            BreakKind::TornTail => "torn_tail",
            BreakKind::Truncated => "truncated",
        }
    }
}

impl fmt::Display for BreakKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A short tail: an `audit_short_tail` record, or markers of batched writers from an earlier
/// boot that no open has recorded yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShortTailNote {
    /// The `audit_short_tail` record's line and seq; `None` when only the markers say so (the
    /// next open of the log records it).
    pub line: Option<u64>,
    pub seq: Option<u64>,
    pub writers: u64,
    /// The last record known flushed when the loss was found (the head's seq).
    pub head_seq: Option<u64>,
    /// The widest window of those writers: what they may have lost at most.
    pub flush_ms: u64,
    pub flush_records: u64,
    /// How many of the writers had a flush fail rather than being stopped by a restart of the
    /// machine (0 for a power cut alone).
    pub flush_failed: u64,
    /// For a failed flush: the last seq those writers had made durable, when known.
    pub durable_seq: Option<u64>,
}

/// An `audit_torn_tail` record found while verifying.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Repair {
    pub line: u64,
    pub seq: u64,
    /// The torn bytes' length and side file, as the record states them.
    pub bytes: Option<u64>,
    pub side_file: Option<String>,
}

impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.first_broken {
            None => {
                write!(f, "audit log intact: {} record(s)", self.records)?;
                if let Some(tip) = &self.tip {
                    write!(f, "; last seq {}, hash {}", tip.seq, tip.hash)?;
                }
            }
            Some(broken) => {
                write!(f, "audit log broken at line {}", broken.line)?;
                if let Some(seq) = broken.seq {
                    write!(f, " (seq {seq})")?;
                }
                write!(f, ": {}: {}", broken.kind, broken.detail)?;
                write!(f, "\n{} record(s) before it are intact", self.records)?;
                if let Some(tip) = &self.tip {
                    write!(
                        f,
                        "; the last of them is seq {}, hash {}",
                        tip.seq, tip.hash
                    )?;
                }
            }
        }
        for short in &self.short_tails {
            let restarted = short.writers.saturating_sub(short.flush_failed);
            if short.flush_failed == 0 {
                write!(
                    f,
                    "\nnote: short tail: the machine stopped while {} writer(s) in the batched durability mode had the log open; records they wrote in their last {} ms (at most {} records)",
                    short.writers, short.flush_ms, short.flush_records
                )?;
                match short.head_seq {
                    Some(seq) => write!(f, " after seq {seq}")?,
                    None => write!(f, " before the restart")?,
                }
            } else {
                write!(
                    f,
                    "\nnote: short tail: a flush to disk failed in {} writer(s) in the batched durability mode",
                    short.flush_failed
                )?;
                if restarted > 0 {
                    write!(
                        f,
                        " and the machine stopped while {restarted} other(s) had the log open"
                    )?;
                }
                write!(
                    f,
                    "; records they wrote in their last {} ms (at most {} records)",
                    short.flush_ms, short.flush_records
                )?;
                match short.durable_seq.or(short.head_seq) {
                    Some(seq) => write!(f, " after seq {seq}")?,
                    None => write!(f, " before the failure")?,
                }
            }
            write!(f, " may be missing, which is not tampering")?;
            match (short.line, short.seq) {
                (Some(line), Some(seq)) => write!(f, " (recorded at line {line}, seq {seq})")?,
                _ => write!(f, " (the next start of Gatehouse records it)")?,
            }
        }
        for repair in &self.repairs {
            write!(
                f,
                "\nnote: line {} (seq {}) records a torn last line",
                repair.line, repair.seq
            )?;
            if let Some(bytes) = repair.bytes {
                write!(f, " of {bytes} bytes")?;
            }
            write!(f, " moved aside when the log was opened")?;
            if let Some(side) = &repair.side_file {
                // Escaped: the name comes from the log, and a terminal must not act on it.
                write!(f, " (to {side:?})")?;
            }
        }
        Ok(())
    }
}

/// Checks the whole chain at `path` and its head file, and names the first broken record.
///
/// `Err` only when the log cannot be read at all (missing with no head either, permissions):
/// every problem with its contents is a [`VerifyReport`] with `ok: false`.
pub fn verify(path: impl AsRef<Path>) -> Result<VerifyReport, AuditError> {
    let path = path.as_ref();
    let Some(snapshot) = Snapshot::take(path)? else {
        // No log. A head file means there was one.
        return match read_head(path)? {
            HeadState::Missing => Err(AuditError::NotFound {
                path: path.to_path_buf(),
            }),
            head => Ok(VerifyReport {
                ok: false,
                records: 0,
                tip: None,
                first_broken: Some(Broken {
                    line: 1,
                    seq: Some(1),
                    kind: BreakKind::Truncated,
                    detail: format!(
                        "the log file is missing but its head file {} exists{}: the log was deleted",
                        file_name(&head_path(path)),
                        match head {
                            HeadState::Present(a) => format!(" and says seq {}", a.seq),
                            _ => String::new(),
                        }
                    ),
                }),
                repairs: Vec::new(),
                short_tails: Vec::new(),
            }),
        };
    };
    let mut report = walk(&snapshot, path).map_err(|source| AuditError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let stale =
        stale_markers(path, boot_id().as_deref(), false).map_err(|source| AuditError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    if !stale.is_empty() {
        report.short_tails.push(ShortTailNote {
            line: None,
            seq: None,
            writers: stale.len() as u64,
            head_seq: match &snapshot.head {
                HeadState::Present(anchor) => Some(anchor.seq),
                _ => None,
            },
            flush_ms: stale.iter().map(|m| m.flush_ms).max().unwrap_or(0),
            flush_records: stale
                .iter()
                .map(|m| u64::from(m.flush_records))
                .max()
                .unwrap_or(0),
            flush_failed: stale.iter().filter(|m| m.flush_failed).count() as u64,
            durable_seq: stale
                .iter()
                .filter(|m| m.flush_failed)
                .map(|m| m.durable_seq)
                .collect::<Option<Vec<u64>>>()
                .and_then(|seqs| seqs.into_iter().min()),
        });
    }
    Ok(report)
}

/// The chain walk. Stops at the first break; the head file is checked only when every line
/// is intact, since a break before the end already says the log cannot be trusted past it.
fn walk(snapshot: &Snapshot, path: &Path) -> io::Result<VerifyReport> {
    let mut report = VerifyReport {
        ok: true,
        records: 0,
        tip: None,
        first_broken: None,
        repairs: Vec::new(),
        short_tails: Vec::new(),
    };
    let head_seq = match &snapshot.head {
        HeadState::Present(anchor) => Some(anchor.seq),
        _ => None,
    };
    let mut hash_at_head_seq = None;
    let mut prev = ZERO_HASH.to_string();
    let mut lines = Lines::of_file(&snapshot.file, snapshot.len)?;
    let mut line_no: u64 = 0;
    while let Some(line) = lines.next_line()? {
        line_no += 1;
        let is_last = lines.at_end()?;
        let torn = |detail: String| Broken {
            line: line_no,
            seq: None,
            kind: BreakKind::TornTail,
            detail,
        };
        let bytes = match line {
            Line::Complete(bytes) => bytes,
            Line::Unterminated
            | Line::TooLong {
                terminated: false, ..
            } => {
                return Ok(report.broken(torn(
                    "the last line has no newline: a write was cut short (a crash or a full disk); opening the log with Gatehouse moves it to a side file and records that"
                        .to_string(),
                )));
            }
            Line::TooLong { bytes, .. } => {
                let detail =
                    format!("the line is {bytes} bytes, over the {MAX_RECORD_BYTES}-byte limit");
                return Ok(report.broken(if is_last {
                    torn(detail)
                } else {
                    Broken {
                        line: line_no,
                        seq: None,
                        kind: BreakKind::BadJson,
                        detail,
                    }
                }));
            }
        };
        let record = match parse_line(&bytes) {
            Ok(record) => record,
            // A crash can leave a last line whose bytes never reached the disk; open treats
            // that line as torn too, so verify names it the same way.
            Err(reason) if is_last => {
                return Ok(report.broken(torn(format!(
                    "the last line is not a complete record ({reason}); opening the log with Gatehouse moves it to a side file and records that"
                ))));
            }
            Err(reason) => {
                return Ok(report.broken(Broken {
                    line: line_no,
                    seq: None,
                    kind: BreakKind::BadJson,
                    detail: reason,
                }));
            }
        };
        let seq = Some(record.seq);
        if record.prev != prev {
            let detail = if line_no == 1 {
                "the first record's prev is not 64 zeros: records before it were removed, or it was edited".to_string()
            } else {
                format!(
                    "prev is not the SHA-256 of line {}: that line or this one was edited, or records were removed, inserted or reordered between them",
                    line_no - 1
                )
            };
            return Ok(report.broken(Broken {
                line: line_no,
                seq,
                kind: BreakKind::BadPrev,
                detail,
            }));
        }
        let expected = report.records + 1;
        if record.seq != expected {
            return Ok(report.broken(Broken {
                line: line_no,
                seq,
                kind: BreakKind::BadSeq,
                detail: format!("seq is {}, expected {expected}", record.seq),
            }));
        }
        if record.event == EVENT_HEAD_MISMATCH {
            let problem = record
                .data
                .get("problem")
                .and_then(|p| p.as_str())
                .filter(|p| p.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
                .unwrap_or("unknown");
            return Ok(report.broken(Broken {
                line: line_no,
                seq,
                kind: BreakKind::Truncated,
                detail: format!(
                    "the log recorded here that its head file did not match its end (problem: {problem}): records before this one were removed; the chain after it is not checked"
                ),
            }));
        }
        let hash = line_hash(&bytes);
        if record.event == EVENT_TORN_TAIL {
            report.repairs.push(Repair {
                line: line_no,
                seq: record.seq,
                bytes: record.data.get("bytes").and_then(|b| b.as_u64()),
                side_file: record
                    .data
                    .get("side_file")
                    .and_then(|s| s.as_str())
                    .map(str::to_string),
            });
        }
        if record.event == EVENT_SHORT_TAIL {
            let number = |key: &str| record.data.get(key).and_then(|v| v.as_u64());
            report.short_tails.push(ShortTailNote {
                line: Some(line_no),
                seq: Some(record.seq),
                writers: number("writers").unwrap_or(0),
                head_seq: number("head_seq"),
                flush_ms: number("flush_ms").unwrap_or(0),
                flush_records: number("flush_records").unwrap_or(0),
                flush_failed: number("flush_failed").unwrap_or(0),
                durable_seq: number("durable_seq"),
            });
        }
        if head_seq == Some(record.seq) {
            hash_at_head_seq = Some(hash.clone());
        }
        report.records += 1;
        report.tip = Some(Anchor {
            seq: record.seq,
            hash: hash.clone(),
        });
        prev = hash;
    }

    let last_seq = report.records;
    let head_name = file_name(&head_path(path));
    let missing_from = Broken {
        line: line_no + 1,
        seq: Some(last_seq + 1),
        kind: BreakKind::Truncated,
        detail: String::new(),
    };
    let broken = match &snapshot.head {
        HeadState::Missing if last_seq == 0 => None,
        HeadState::Missing => Some(Broken {
            detail: format!(
                "the head file {head_name} is missing, so removal of records from the end cannot be ruled out"
            ),
            ..missing_from
        }),
        HeadState::Unreadable(why) => Some(Broken {
            detail: format!(
                "the head file {head_name} is not readable as a head ({why}), so removal of records from the end cannot be ruled out"
            ),
            ..missing_from
        }),
        HeadState::Present(head) if head.seq > last_seq => Some(Broken {
            detail: format!(
                "the log ends at seq {last_seq} but its head file says seq {}: {} record(s) were removed from the end",
                head.seq,
                head.seq - last_seq
            ),
            ..missing_from
        }),
        HeadState::Present(head) if head.seq == 0 => (head.hash != ZERO_HASH).then(|| Broken {
            line: 1,
            seq: Some(1),
            kind: BreakKind::Truncated,
            detail: "the head file says seq 0 but its hash is not 64 zeros: it was altered"
                .to_string(),
        }),
        HeadState::Present(head) => (hash_at_head_seq.as_deref() != Some(head.hash.as_str()))
            .then(|| Broken {
                line: head.seq,
                seq: Some(head.seq),
                kind: BreakKind::Truncated,
                detail: format!(
                    "the record at seq {} is not the one the head file anchored: records from here on were removed and others written, this record was edited, or the head file was altered",
                    head.seq
                ),
            }),
    };
    Ok(match broken {
        Some(broken) => report.broken(broken),
        None => report,
    })
}

impl VerifyReport {
    fn broken(mut self, broken: Broken) -> VerifyReport {
        self.ok = false;
        self.first_broken = Some(broken);
        self
    }
}

/// A consistent view of the log for readers: its length and head file, taken together under a
/// shared lock, so no half-written line and no head from a later append is seen.
pub(crate) struct Snapshot {
    pub file: File,
    pub len: u64,
    pub head: HeadState,
    /// Whether the shared lock is still held (see [`Snapshot::take`]).
    held: bool,
}

impl Snapshot {
    /// `None` when there is no log. On Unix the lock is released at once: writers only ever
    /// add after `len`, so reading up to it needs no lock, and a long read does not hold up the
    /// gate. Windows locks are mandatory (a locked file cannot be read), so the lock is held
    /// until the snapshot is dropped.
    pub(crate) fn take(path: &Path) -> Result<Option<Snapshot>, AuditError> {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(AuditError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let meta = file.metadata().map_err(|source| AuditError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        if !meta.is_file() {
            return Err(AuditError::NotARegularFile {
                path: path.to_path_buf(),
            });
        }
        file.lock_shared().map_err(|source| AuditError::Lock {
            path: path.to_path_buf(),
            source,
        })?;
        let mut snapshot = Snapshot {
            len: 0,
            head: HeadState::Missing,
            held: true,
            file,
        };
        snapshot.len = snapshot
            .file
            .metadata()
            .map_err(|source| AuditError::Read {
                path: path.to_path_buf(),
                source,
            })?
            .len();
        snapshot.head = read_head(path)?;
        if cfg!(unix) {
            let _ = snapshot.file.unlock();
            snapshot.held = false;
        }
        Ok(Some(snapshot))
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        if self.held {
            let _ = self.file.unlock();
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
