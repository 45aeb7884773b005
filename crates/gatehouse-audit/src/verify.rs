//! The checker: walks the whole chain and names the first broken record.

use std::collections::BTreeMap;
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
use crate::rotate::retention_span;
use crate::scan::{Line, Lines};
use crate::segment::{Continues, SegmentFile, file_name, same_file, segment_path};
use crate::stream::sealed_before;
use crate::{AuditError, MAX_RECORD_BYTES};

/// The result of [`verify`]. Serializes as the `--json` output of `gatehouse audit verify`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// No broken record was found.
    pub ok: bool,
    /// How many records, from the first kept, were checked and found intact (all of them when
    /// `ok`).
    pub records: u64,
    /// How many sealed segments were checked (0: the log never rotated, or retention removed
    /// every segment).
    pub segments: u64,
    /// The last intact record: copy it somewhere the log's writer cannot reach, and a later
    /// rewrite of the log up to this point shows (see the crate docs).
    pub tip: Option<Anchor>,
    pub first_broken: Option<Broken>,
    /// Segments removed by retention: not a break, the chain starts after them.
    pub removed: Option<RetentionNote>,
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
    /// The sealed segment file (its name) `line` is in; `None` for the active log file.
    pub segment: Option<String>,
    pub kind: BreakKind,
    pub detail: String,
}

/// What retention removed, as [`verify`] found it accounted for by `audit_retention` records:
/// segments `1..=through` are gone and the chain starts at `first_seq`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RetentionNote {
    pub through: u64,
    pub first_seq: u64,
    /// The `audit_retention` record that removed segment `through`.
    pub record_seq: u64,
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
    /// Records were removed: a segment is missing that no retention record accounts for, or
    /// from the end: the log ends before the head file's seq, the record
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
                if self.segments > 0 {
                    write!(
                        f,
                        " in {} sealed segment(s) and the active file",
                        self.segments
                    )?;
                }
                if let Some(tip) = &self.tip {
                    write!(f, "; last seq {}, hash {}", tip.seq, tip.hash)?;
                }
            }
            Some(broken) => {
                write!(f, "audit log broken at line {}", broken.line)?;
                if let Some(segment) = &broken.segment {
                    // Escaped: a file name is not trusted to be printable.
                    write!(f, " of segment {segment:?}")?;
                }
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
        if let Some(removed) = &self.removed {
            let range = if removed.through == 1 {
                "segment 1".to_string()
            } else {
                format!("segments 1–{}", removed.through)
            };
            write!(
                f,
                "\nnote: {range} removed by retention (record seq {}); the chain is checked from seq {}",
                removed.record_seq, removed.first_seq
            )?;
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
                segments: 0,
                tip: None,
                removed: None,
                first_broken: Some(Broken {
                    line: 1,
                    seq: Some(1),
                    segment: None,
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
    let segments = sealed_before(path, &snapshot.file)?;
    let mut report = walk(&snapshot, path, &segments).map_err(|source| AuditError::Read {
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

/// Most `audit_retention` records verify keeps in memory to account for removed segments (one
/// is written per prune that removed anything).
const MAX_RETENTION_RECORDS: usize = 100_000;

/// An `audit_retention` record as verify keeps it: the segments `first..=through` it accounts
/// for, the newest one's last hash, and its own seq.
struct RetentionSeen {
    first: u64,
    through_hash: String,
    seq: u64,
}

/// The segments before the oldest file present, which its `audit_rotated` record continues.
struct Gap {
    through: u64,
    hash: String,
    first_seq: u64,
    file: String,
}

/// One file of the chain, oldest first: a sealed segment or (last) the active file.
struct ChainFile<'a> {
    /// `None` for the active file.
    number: Option<u64>,
    name: String,
    path: &'a Path,
}

/// The chain walk over every sealed segment and then the active file. Stops at the first
/// break; the head file is checked only when every line is intact, since a break before the
/// end already says the log cannot be trusted past it.
fn walk(snapshot: &Snapshot, path: &Path, segments: &[SegmentFile]) -> io::Result<VerifyReport> {
    let mut report = VerifyReport {
        ok: true,
        records: 0,
        segments: 0,
        tip: None,
        first_broken: None,
        removed: None,
        repairs: Vec::new(),
        short_tails: Vec::new(),
    };
    let head_seq = match &snapshot.head {
        HeadState::Present(anchor) => Some(anchor.seq),
        _ => None,
    };
    let mut hash_at_head_seq = None;
    let mut prev = ZERO_HASH.to_string();
    let mut expected: u64 = 1;
    let mut gap: Option<Gap> = None;
    let mut retention: BTreeMap<u64, RetentionSeen> = BTreeMap::new();
    let mut previous: Option<ChainFile<'_>> = None;
    let mut line_no: u64 = 0;
    let files = segments
        .iter()
        .map(|s| ChainFile {
            number: Some(s.number),
            name: file_name(&s.path),
            path: &s.path,
        })
        .chain(std::iter::once(ChainFile {
            number: None,
            name: file_name(path),
            path,
        }));
    for (index, chain_file) in files.enumerate() {
        let is_active = chain_file.number.is_none();
        let segment = (!is_active).then(|| chain_file.name.clone());
        let opened;
        let (file, len) = if is_active {
            (&snapshot.file, snapshot.len)
        } else {
            match File::open(chain_file.path) {
                Ok(file) => {
                    let len = file.metadata()?.len();
                    opened = file;
                    report.segments += 1;
                    (&opened, len)
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Ok(report.broken(Broken {
                        line: 1,
                        seq: None,
                        segment,
                        kind: BreakKind::Truncated,
                        detail: "the segment was removed while it was being verified (by retention, or by hand); verify again".to_string(),
                    }));
                }
                Err(e) => return Err(e),
            }
        };
        let mut lines = Lines::of_file(file, len)?;
        line_no = 0;
        while let Some(line) = lines.next_line()? {
            line_no += 1;
            // Only the active file's last line can be torn by a crash; a sealed segment was
            // repaired before it was sealed, so anything wrong in it is a break.
            let is_last = is_active && lines.at_end()?;
            let at = |kind: BreakKind, seq: Option<u64>, detail: String| Broken {
                line: line_no,
                seq,
                segment: segment.clone(),
                kind,
                detail,
            };
            let bytes = match line {
                Line::Complete(bytes) => bytes,
                Line::Unterminated
                | Line::TooLong {
                    terminated: false, ..
                } if is_active => {
                    return Ok(report.broken(at(BreakKind::TornTail, None,
                        "the last line has no newline: a write was cut short (a crash or a full disk); opening the log with Gatehouse moves it to a side file and records that"
                            .to_string(),
                    )));
                }
                Line::Unterminated => {
                    return Ok(report.broken(at(
                        BreakKind::BadJson,
                        None,
                        "the segment's last line has no newline: a sealed segment is always whole, so it was cut or edited".to_string(),
                    )));
                }
                Line::TooLong { bytes, .. } => {
                    let detail = format!(
                        "the line is {bytes} bytes, over the {MAX_RECORD_BYTES}-byte limit"
                    );
                    let kind = if is_last {
                        BreakKind::TornTail
                    } else {
                        BreakKind::BadJson
                    };
                    return Ok(report.broken(at(kind, None, detail)));
                }
            };
            let record = match parse_line(&bytes) {
                Ok(record) => record,
                // A crash can leave a last line whose bytes never reached the disk; open treats
                // that line as torn too, so verify names it the same way.
                Err(reason) if is_last => {
                    return Ok(report.broken(at(BreakKind::TornTail, None, format!(
                        "the last line is not a complete record ({reason}); opening the log with Gatehouse moves it to a side file and records that"
                    ))));
                }
                Err(reason) => {
                    return Ok(report.broken(at(BreakKind::BadJson, None, reason)));
                }
            };
            let seq = Some(record.seq);
            if line_no == 1 {
                let continues = Continues::of(&record);
                match (&previous, continues) {
                    // The oldest file kept continues segments that are gone: retention must
                    // have removed them (checked at the end, once its records are seen).
                    (None, Some(c)) => {
                        prev = c.last_hash.clone();
                        expected = c.last_seq.saturating_add(1);
                        gap = Some(Gap {
                            through: c.number,
                            hash: c.last_hash,
                            first_seq: record.seq,
                            file: chain_file.name.clone(),
                        });
                    }
                    (None, None) => {}
                    (Some(before), Some(c)) => {
                        let before_number = before.number.unwrap_or(0);
                        if c.number > before_number {
                            let missing = (before_number + 1..=c.number)
                                .take(3)
                                .map(|n| file_name(&segment_path(path, n)))
                                .collect::<Vec<_>>()
                                .join(", ");
                            let more = if c.number - before_number > 3 {
                                ", …"
                            } else {
                                ""
                            };
                            return Ok(report.broken(at(BreakKind::Truncated, seq, format!(
                                "segment(s) {missing}{more} are missing: this file continues from {:?} but the one before it is {}; retention removes only the oldest segments, so they were deleted outside Gatehouse",
                                c.segment, before.name
                            ))));
                        }
                        if c.number < before_number {
                            return Ok(report.broken(at(BreakKind::BadPrev, seq, format!(
                                "this file says it continues segment {}, but the one before it is {}: segments were renamed or copied over",
                                c.number, before.name
                            ))));
                        }
                    }
                    (Some(before), None) => {
                        return Ok(report.broken(at(BreakKind::BadPrev, seq, format!(
                            "the first record is not an audit_rotated record continuing {}: the file was replaced, or the log started again beside old segments",
                            before.name
                        ))));
                    }
                }
            }
            if record.prev != prev {
                let detail = if line_no == 1 && index == 0 {
                    "the first record's prev is not 64 zeros: records before it were removed, or it was edited".to_string()
                } else if line_no == 1 {
                    format!(
                        "prev is not the SHA-256 of the last line of {}: that segment or this line was edited, or records were removed",
                        previous.as_ref().map_or(String::new(), |p| p.name.clone())
                    )
                } else {
                    format!(
                        "prev is not the SHA-256 of line {}: that line or this one was edited, or records were removed, inserted or reordered between them",
                        line_no - 1
                    )
                };
                return Ok(report.broken(at(BreakKind::BadPrev, seq, detail)));
            }
            if record.seq != expected {
                return Ok(report.broken(at(
                    BreakKind::BadSeq,
                    seq,
                    format!("seq is {}, expected {expected}", record.seq),
                )));
            }
            if record.event == EVENT_HEAD_MISMATCH {
                let problem = record
                    .data
                    .get("problem")
                    .and_then(|p| p.as_str())
                    .filter(|p| p.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
                    .unwrap_or("unknown");
                return Ok(report.broken(at(BreakKind::Truncated, seq, format!(
                    "the log recorded here that its head file did not match its end (problem: {problem}): records before this one were removed; the chain after it is not checked"
                ))));
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
            if let Some((first, through)) = retention_span(&record)
                && retention.len() < MAX_RETENTION_RECORDS
                && let Some(through_hash) = record.data.get("through_hash").and_then(|h| h.as_str())
            {
                retention.insert(
                    through,
                    RetentionSeen {
                        first,
                        through_hash: through_hash.to_string(),
                        seq: record.seq,
                    },
                );
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
            expected = record.seq.saturating_add(1);
        }
        previous = Some(chain_file);
    }

    if let Some(gap) = gap {
        match account_for(&gap, &retention) {
            Ok(record_seq) => {
                report.removed = Some(RetentionNote {
                    through: gap.through,
                    first_seq: gap.first_seq,
                    record_seq,
                });
            }
            Err(missing) => {
                return Ok(report.broken(Broken {
                    line: 1,
                    seq: Some(gap.first_seq),
                    segment: (gap.file != file_name(path)).then(|| gap.file.clone()),
                    kind: BreakKind::Truncated,
                    detail: format!(
                        "segment {} is missing and no audit_retention record says retention removed it (the chain here continues from segment {}): it was deleted outside Gatehouse",
                        file_name(&segment_path(path, missing)),
                        gap.through
                    ),
                }));
            }
        }
    }

    let last_seq = report.tip.as_ref().map_or(0, |t| t.seq);
    let head_name = file_name(&head_path(path));
    let missing_from = Broken {
        line: line_no + 1,
        seq: Some(last_seq + 1),
        segment: None,
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
            segment: None,
            kind: BreakKind::Truncated,
            detail: "the head file says seq 0 but its hash is not 64 zeros: it was altered"
                .to_string(),
        }),
        HeadState::Present(head) => (hash_at_head_seq.as_deref() != Some(head.hash.as_str()))
            .then(|| Broken {
                line: head.seq,
                seq: Some(head.seq),
                segment: None,
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

/// Whether retention records account for every segment before the oldest file kept: one for
/// the newest missing segment (with its last hash), and, for the segments before the first it
/// removed, another, and so on down to segment 1. `Ok` with the newest such record's seq, or
/// `Err` with the number of a segment nothing accounts for.
fn account_for(gap: &Gap, retention: &BTreeMap<u64, RetentionSeen>) -> Result<u64, u64> {
    let top = retention
        .get(&gap.through)
        .filter(|r| r.through_hash == gap.hash)
        .ok_or(gap.through)?;
    let mut first = top.first;
    // Each step goes strictly down, so this ends; the bound is belt and braces.
    for _ in 0..=retention.len() {
        if first <= 1 {
            return Ok(top.seq);
        }
        let before = first - 1;
        match retention.get(&before) {
            Some(r) if r.first <= before => first = r.first,
            _ => return Err(before),
        }
    }
    Err(first.saturating_sub(1))
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
    ///
    /// A rotation may replace the file at `path` while the shared lock is awaited: the
    /// snapshot is then of the sealed segment, so it is taken again (a few times at most; a
    /// snapshot of a just-sealed file is still consistent, only not the newest).
    pub(crate) fn take(path: &Path) -> Result<Option<Snapshot>, AuditError> {
        let mut tries = 0;
        loop {
            let Some(snapshot) = Snapshot::take_once(path)? else {
                return Ok(None);
            };
            tries += 1;
            let current = match (std::fs::metadata(path), snapshot.file.metadata()) {
                (Ok(at_path), Ok(open)) => !cfg!(unix) || same_file(&at_path, &open),
                _ => true,
            };
            if current || tries >= 8 {
                return Ok(Some(snapshot));
            }
        }
    }

    fn take_once(path: &Path) -> Result<Option<Snapshot>, AuditError> {
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
