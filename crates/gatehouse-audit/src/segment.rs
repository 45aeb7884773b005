//! Sealed segments: naming and listing them, what an `audit_rotated` record says, the
//! rotation and retention settings, and the reports of both.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::head::sibling;
use crate::record::{EVENT_ROTATED, Record, is_hash, line_hash, parse_line};
use crate::{AuditError, MAX_RECORD_BYTES};

/// What sealed segment files are called: `<log file name>.seg-<number>`, the number zero-padded
/// to six digits (more when it needs them), so a directory listing sorts them too.
const SEGMENT_INFIX: &str = ".seg-";

/// Most segment files a listing takes in (about 64 TiB of log at the default size); a
/// directory with more is refused rather than read without bound.
const MAX_SEGMENTS: usize = 1_000_000;

/// When the log rotates: an append that would take the active file past `segment_max_bytes`
/// first seals it as the next segment and continues the chain in a new active file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rotation {
    pub segment_max_bytes: u64,
}

impl Rotation {
    /// 64 MiB: about 150,000 records of a typical size.
    pub const DEFAULT_SEGMENT_MAX_BYTES: u64 = 64 * 1024 * 1024;
    /// A smaller size acts as this one: each segment holds at least a few records.
    pub const MIN_SEGMENT_BYTES: u64 = 1024;

    /// `mib` MiB (the policy's `rotate_mib`).
    pub fn from_mib(mib: u32) -> Rotation {
        Rotation {
            segment_max_bytes: u64::from(mib) * 1024 * 1024,
        }
    }

    /// The size used: at least [`Rotation::MIN_SEGMENT_BYTES`].
    pub(crate) fn limit(self) -> u64 {
        self.segment_max_bytes.max(Self::MIN_SEGMENT_BYTES)
    }
}

impl Default for Rotation {
    fn default() -> Rotation {
        Rotation {
            segment_max_bytes: Self::DEFAULT_SEGMENT_MAX_BYTES,
        }
    }
}

/// How long sealed segments are kept: `keep_days` `None` (or `Some(0)`) keeps them forever.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Retention {
    pub keep_days: Option<u32>,
}

impl Retention {
    pub fn forever() -> Retention {
        Retention { keep_days: None }
    }

    pub fn days(days: u32) -> Retention {
        Retention {
            keep_days: Some(days),
        }
    }

    /// The days kept, `None` for forever (`Some(0)` means forever too).
    pub fn window(self) -> Option<u32> {
        self.keep_days.filter(|&d| d > 0)
    }

    /// The longer of two (forever beats any number): nothing is deleted that either asks to
    /// keep.
    pub fn longest(self, other: Retention) -> Retention {
        match (self.window(), other.window()) {
            (Some(a), Some(b)) => Retention::days(a.max(b)),
            _ => Retention::forever(),
        }
    }
}

/// A sealed segment file beside the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SegmentFile {
    pub number: u64,
    pub path: PathBuf,
    pub bytes: u64,
}

/// An append sealed the active file as a segment first (the host prunes after it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rotated {
    pub segment: PathBuf,
    pub number: u64,
    pub first_seq: u64,
    pub last_seq: u64,
    /// The `audit_rotated` record that starts the new active file.
    pub record_seq: u64,
}

/// What [`AuditLog::prune`](crate::AuditLog::prune) removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Pruned {
    /// The `audit_retention` record naming them; `None` when nothing was old enough.
    pub record_seq: Option<u64>,
    pub removed: Vec<RemovedSegment>,
}

/// One segment removed by retention, as its `audit_retention` record names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemovedSegment {
    /// The file name.
    pub segment: String,
    pub number: u64,
    pub first_seq: u64,
    pub last_seq: u64,
    pub last_hash: String,
}

/// `<log>.seg-<number>` (six digits at least).
pub fn segment_path(log: &Path, number: u64) -> PathBuf {
    sibling(log, &format!("{SEGMENT_INFIX}{number:06}"))
}

/// The file name of `path`, for records and reports.
pub(crate) fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `<log>.rotating`: the next active file while a rotation writes it. Its existence while the
/// lock on the log is free means a rotation died; see [`undo_rotation`].
pub(crate) fn rotating_path(log: &Path) -> PathBuf {
    sibling(log, ".rotating")
}

/// The sealed segments beside the log at `path`, oldest first. A segment that is the active
/// file itself (a rotation died after linking it) is left out; see [`same_file`].
pub fn segments(path: impl AsRef<Path>) -> Result<Vec<SegmentFile>, AuditError> {
    let path = path.as_ref();
    let active = fs::metadata(path).ok();
    let mut found = list_segments(path)?;
    if let Some(active) = active {
        found.retain(|s| {
            fs::metadata(&s.path)
                .map(|m| !same_file(&m, &active))
                .unwrap_or(false)
        });
    }
    Ok(found)
}

/// Every `<log>.seg-<digits>` beside the log, by number, the active file included if a
/// half-done rotation linked it.
pub(crate) fn list_segments(path: &Path) -> Result<Vec<SegmentFile>, AuditError> {
    let read_err = |source| AuditError::Read {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let Some(log_name) = path.file_name().and_then(|n| n.to_str()) else {
        return Ok(Vec::new());
    };
    let prefix = format!("{log_name}{SEGMENT_INFIX}");
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(read_err(source)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(read_err)?;
        let name = entry.file_name();
        let Some(digits) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        if digits.len() < 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(number) = digits.parse::<u64>() else {
            continue;
        };
        // Only the canonical spelling: `seg-0000001` beside `seg-000001` is not a second copy.
        if segment_path(path, number).file_name() != Some(name.as_os_str()) {
            continue;
        }
        let bytes = match entry.metadata() {
            Ok(meta) if meta.is_file() => meta.len(),
            _ => continue,
        };
        if found.len() >= MAX_SEGMENTS {
            return Err(read_err(io::Error::other(format!(
                "more than {MAX_SEGMENTS} segment files beside the log"
            ))));
        }
        found.push(SegmentFile {
            number,
            path: entry.path(),
            bytes,
        });
    }
    found.sort_by_key(|s| s.number);
    Ok(found)
}

/// Whether two `stat`s are of one file (a hard link). Off Unix, never: there a rotation
/// leftover is told by `<log>.rotating` alone.
pub(crate) fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        a.dev() == b.dev() && a.ino() == b.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        false
    }
}

/// Undoes a rotation that died before its new active file was renamed into place: removes the
/// segment name it linked to the active file (the active file keeps every record) and the
/// unfinished next file. Called under the log's exclusive lock, so no live rotation is undone
/// (a rotation holds that lock from its first step to its last). Returns whether anything was
/// left over.
pub(crate) fn undo_rotation(log: &Path, active: &File) -> io::Result<bool> {
    let mut undone = false;
    let active_meta = active.metadata()?;
    for seg in list_segments(log).map_err(io::Error::other)?.iter().rev() {
        if let Ok(meta) = fs::metadata(&seg.path)
            && same_file(&meta, &active_meta)
        {
            fs::remove_file(&seg.path)?;
            undone = true;
        }
    }
    match fs::remove_file(rotating_path(log)) {
        Ok(()) => undone = true,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    if undone {
        crate::head::sync_dir(log)?;
    }
    Ok(undone)
}

/// What an `audit_rotated` record says about the segment before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Continues {
    pub number: u64,
    pub segment: String,
    pub last_seq: u64,
    pub last_hash: String,
}

impl Continues {
    /// From the first record of a file; `None` when it is not an `audit_rotated` record or
    /// does not say what it must.
    pub(crate) fn of(record: &Record) -> Option<Continues> {
        if record.event != EVENT_ROTATED {
            return None;
        }
        let data = &record.data;
        let last_hash = data.get("last_hash")?.as_str()?;
        if !is_hash(last_hash) {
            return None;
        }
        Some(Continues {
            number: data.get("number")?.as_u64()?,
            segment: data.get("segment")?.as_str()?.to_string(),
            last_seq: data.get("last_seq")?.as_u64()?,
            last_hash: last_hash.to_string(),
        })
    }
}

/// The first record of `file` and the hash of its line; `None` when the file is empty or its
/// first line is not a record.
pub(crate) fn first_record(file: &File) -> io::Result<Option<(Record, String)>> {
    let mut handle = file;
    handle.seek(SeekFrom::Start(0))?;
    let mut reader = BufReader::with_capacity(8 * 1024, handle.take(MAX_RECORD_BYTES as u64 + 1));
    let mut line = Vec::new();
    reader.read_until(b'\n', &mut line)?;
    if line.pop() != Some(b'\n') {
        return Ok(None);
    }
    Ok(parse_line(&line).ok().map(|r| (r, line_hash(&line))))
}

/// `value` as a JSON object (the records this crate writes are built with `json!`).
pub(crate) fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
