//! Reads that cost by what they show: [`stream`] walks every record oldest → newest across
//! the segments in constant memory (what `read` and `export` use), and [`tail`] reads
//! backward from the end, across segments, and stops after the newest `n` matches or a cap on
//! the records examined.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufReader, Take};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::read::Filter;
use crate::record::{Record, parse_line};
use crate::scan::{Line, Lines, read_exact_at};
use crate::segment::{SegmentFile, list_segments, same_file};
use crate::verify::Snapshot;
use crate::{AuditError, MAX_RECORD_BYTES};

/// How much is read per step backward.
const CHUNK: usize = 64 * 1024;

/// The records [`tail`] examines at most unless told otherwise: about 80 MB of log at a
/// typical 420 bytes a record, a fraction of a second.
pub const DEFAULT_TAIL_SCAN: u64 = 200_000;

/// One record as [`stream`] yields it, with its line's exact bytes (no newline) for an export
/// that keeps the hashes checkable.
#[derive(Debug, Clone, PartialEq)]
pub struct Streamed {
    pub record: Record,
    pub line: Vec<u8>,
}

/// What [`tail`] found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recent {
    /// The newest matching records, oldest first.
    pub records: Vec<Record>,
    /// How many records were examined (matching or not).
    pub scanned: u64,
    pub end: TailEnd,
}

/// Why [`tail`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TailEnd {
    /// It found the `n` asked for.
    Filled,
    /// It reached the oldest record kept: there are no more matches.
    Start,
    /// It examined as many records as it may: older matches may exist (say so to the reader).
    ScanCap,
}

impl TailEnd {
    pub fn code(self) -> &'static str {
        match self {
            TailEnd::Filled => "filled",
            TailEnd::Start => "start",
            TailEnd::ScanCap => "scan_cap",
        }
    }
}

/// The newest `n` records that match `filter`, oldest first, reading backward from the end of
/// the active file and then through the sealed segments newest first; it examines at most
/// [`DEFAULT_TAIL_SCAN`] records. See [`tail_with`].
pub fn tail(path: impl AsRef<Path>, n: usize, filter: &Filter) -> Result<Recent, AuditError> {
    tail_with(path, n, filter, DEFAULT_TAIL_SCAN)
}

/// [`tail`] examining at most `max_scanned` records: a filter that matches rarely cannot make
/// it read a huge log unnoticed; [`Recent::end`] says [`TailEnd::ScanCap`] when the cap
/// stopped it. Memory: `n` records and one buffer of at most [`MAX_RECORD_BYTES`] plus 64 KiB.
/// Like [`read`](crate::read), it refuses a line that is not a record (naming its byte offset)
/// rather than skip it, and does not check the chain.
pub fn tail_with(
    path: impl AsRef<Path>,
    n: usize,
    filter: &Filter,
    max_scanned: u64,
) -> Result<Recent, AuditError> {
    let path = path.as_ref();
    let snapshot = Snapshot::take(path)?.ok_or_else(|| AuditError::NotFound {
        path: path.to_path_buf(),
    })?;
    let mut recent = Recent {
        records: Vec::new(),
        scanned: 0,
        end: TailEnd::Start,
    };
    if n == 0 {
        recent.end = TailEnd::Filled;
        return Ok(recent);
    }
    let segments = sealed_before(path, &snapshot.file)?;
    // The active file first (already open), then each segment, newest first, opened in turn.
    let files =
        std::iter::once(path.to_path_buf()).chain(segments.into_iter().rev().map(|s| s.path));
    'files: for (i, file_path) in files.enumerate() {
        let opened = if i == 0 {
            let file = snapshot
                .file
                .try_clone()
                .map_err(|source| AuditError::Read {
                    path: path.to_path_buf(),
                    source,
                })?;
            Some((file, snapshot.len))
        } else {
            open_segment(&file_path)?
        };
        // A segment removed by retention during this read: what is older is gone too.
        let Some((file, len)) = opened else { break };
        let read_err = |source| AuditError::Read {
            path: file_path.clone(),
            source,
        };
        let bad = |offset: u64, reason: String| AuditError::BadRecord {
            path: file_path.clone(),
            line: 0,
            reason: format!("the line at byte {offset}: {reason}"),
        };
        let mut lines = RevLines::new(&file, len).map_err(read_err)?;
        if !lines.ends_with_newline().map_err(read_err)? {
            return Err(bad(
                len,
                "the last line is incomplete (a torn write); opening the log with Gatehouse repairs it"
                    .to_string(),
            ));
        }
        while let Some(line) = lines.next_line().map_err(read_err)? {
            if recent.scanned >= max_scanned {
                recent.end = TailEnd::ScanCap;
                break 'files;
            }
            recent.scanned += 1;
            let (offset, bytes) = match line {
                RevLine::Complete { bytes, .. } if !filter.may_match(&bytes) => continue,
                RevLine::Complete { offset, bytes } => (offset, bytes),
                RevLine::TooLong { offset } => {
                    return Err(bad(
                        offset,
                        format!("the line is over the {MAX_RECORD_BYTES}-byte limit"),
                    ));
                }
            };
            let record = parse_line(&bytes).map_err(|reason| bad(offset, reason))?;
            if filter.matches(&record) {
                recent.records.push(record);
                if recent.records.len() >= n {
                    recent.end = TailEnd::Filled;
                    break 'files;
                }
            }
        }
    }
    recent.records.reverse();
    Ok(recent)
}

/// Opens a sealed segment for reading; `None` when it no longer exists (retention removed it
/// after it was listed).
fn open_segment(path: &Path) -> Result<Option<(File, u64)>, AuditError> {
    let read_err = |source| AuditError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(read_err(source)),
    };
    let len = file.metadata().map_err(read_err)?.len();
    Ok(Some((file, len)))
}

/// The sealed segments, oldest first, without the active file (open as `active`) should a
/// rotation that died, or one finishing after the snapshot, have given it a segment name.
pub(crate) fn sealed_before(path: &Path, active: &File) -> Result<Vec<SegmentFile>, AuditError> {
    let active = active.metadata().map_err(|source| AuditError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut segments = list_segments(path)?;
    segments.retain(|s| {
        std::fs::metadata(&s.path)
            .map(|m| !same_file(&m, &active))
            .unwrap_or(true)
    });
    Ok(segments)
}

/// Every record that matches `filter`, oldest → newest, across the sealed segments and the
/// active file, one line in memory at a time. The end is fixed when the stream starts (records
/// appended later are not included). A line that is not a record ends the stream with an
/// error naming its file and line; so does a segment removed by retention while the stream
/// was reading it (read again).
pub fn stream(path: impl AsRef<Path>, filter: &Filter) -> Result<Stream, AuditError> {
    let path = path.as_ref();
    let snapshot = Snapshot::take(path)?.ok_or_else(|| AuditError::NotFound {
        path: path.to_path_buf(),
    })?;
    let segments = sealed_before(path, &snapshot.file)?;
    let active = snapshot
        .file
        .try_clone()
        .map_err(|source| AuditError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    let mut pending: VecDeque<Source> = segments.into_iter().map(Source::Segment).collect();
    pending.push_back(Source::Active {
        path: path.to_path_buf(),
        file: active,
        len: snapshot.len,
    });
    Ok(Stream {
        filter: filter.clone(),
        pending,
        current: None,
        done: false,
        _snapshot: snapshot,
    })
}

/// The iterator [`stream`] returns.
pub struct Stream {
    filter: Filter,
    pending: VecDeque<Source>,
    current: Option<Current>,
    done: bool,
    /// Holds the shared lock where locks are mandatory (Windows) until the stream ends.
    _snapshot: Snapshot,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("filter", &self.filter)
            .field("files_left", &self.pending.len())
            .finish_non_exhaustive()
    }
}

enum Source {
    Segment(SegmentFile),
    Active { path: PathBuf, file: File, len: u64 },
}

struct Current {
    path: PathBuf,
    lines: Lines<BufReader<Take<File>>>,
    line_no: u64,
}

impl Stream {
    fn open(source: Source) -> Result<Current, AuditError> {
        let (path, file, len) = match source {
            Source::Active { path, file, len } => (path, file, len),
            Source::Segment(seg) => match open_segment(&seg.path)? {
                Some((file, len)) => (seg.path, file, len),
                None => {
                    return Err(AuditError::Read {
                        source: io::Error::new(
                            io::ErrorKind::NotFound,
                            "the segment was removed by retention while the log was being read; read again",
                        ),
                        path: seg.path,
                    });
                }
            },
        };
        let lines = Lines::of_owned(file, len).map_err(|source| AuditError::Read {
            path: path.clone(),
            source,
        })?;
        Ok(Current {
            path,
            lines,
            line_no: 0,
        })
    }

    fn next_record(&mut self) -> Result<Option<Streamed>, AuditError> {
        loop {
            let current = match &mut self.current {
                Some(current) => current,
                None => match self.pending.pop_front() {
                    Some(source) => self.current.insert(Stream::open(source)?),
                    None => return Ok(None),
                },
            };
            let Some(line) = current
                .lines
                .next_line()
                .map_err(|source| AuditError::Read {
                    path: current.path.clone(),
                    source,
                })?
            else {
                self.current = None;
                continue;
            };
            current.line_no += 1;
            let bad = |reason: String| AuditError::BadRecord {
                path: current.path.clone(),
                line: current.line_no,
                reason,
            };
            let bytes = match line {
                Line::Complete(bytes) => bytes,
                Line::Unterminated => {
                    return Err(bad(
                        "the last line is incomplete (a torn write); opening the log with Gatehouse repairs it"
                            .to_string(),
                    ));
                }
                Line::TooLong { bytes, .. } => {
                    return Err(bad(format!(
                        "the line is {bytes} bytes, over the {MAX_RECORD_BYTES}-byte limit"
                    )));
                }
            };
            if !self.filter.may_match(&bytes) {
                continue;
            }
            let record = parse_line(&bytes).map_err(bad)?;
            if self.filter.matches(&record) {
                return Ok(Some(Streamed {
                    record,
                    line: bytes,
                }));
            }
        }
    }
}

impl Iterator for Stream {
    type Item = Result<Streamed, AuditError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_record() {
            Ok(Some(item)) => Some(Ok(item)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// A line found reading backward.
pub(crate) enum RevLine {
    /// `bytes` (without the newline) start at byte `offset`.
    Complete { offset: u64, bytes: Vec<u8> },
    /// Longer than [`MAX_RECORD_BYTES`]; skipped without being kept.
    TooLong { offset: u64 },
}

/// Reads the lines of `file[..len]` last to first, through one buffer of at most 64 KiB plus
/// one line (a line over the limit is skipped, not kept).
pub(crate) struct RevLines<'a> {
    file: &'a File,
    len: u64,
    /// Where `buf` starts in the file: `buf` is `file[pos..pos + buf.len()]`, and it ends just
    /// after a newline (or is empty).
    pos: u64,
    buf: Vec<u8>,
}

impl<'a> RevLines<'a> {
    pub(crate) fn new(file: &'a File, len: u64) -> io::Result<RevLines<'a>> {
        Ok(RevLines {
            file,
            len,
            pos: len,
            buf: Vec::new(),
        })
    }

    /// Whether the region ends with a newline (or is empty): otherwise its last line is torn.
    pub(crate) fn ends_with_newline(&self) -> io::Result<bool> {
        if self.len == 0 {
            return Ok(true);
        }
        let mut last = [0u8];
        read_exact_at(self.file, &mut last, self.len - 1)?;
        Ok(last[0] == b'\n')
    }

    /// Prepends up to [`CHUNK`] bytes from before `pos` to the buffer.
    fn load(&mut self) -> io::Result<()> {
        let start = self.pos.saturating_sub(CHUNK as u64);
        let n = (self.pos - start) as usize;
        let mut chunk = vec![0u8; n + self.buf.len()];
        read_exact_at(self.file, &mut chunk[..n], start)?;
        chunk[n..].copy_from_slice(&self.buf);
        self.buf = chunk;
        self.pos = start;
        Ok(())
    }

    pub(crate) fn next_line(&mut self) -> io::Result<Option<RevLine>> {
        loop {
            if self.buf.is_empty() {
                if self.pos == 0 {
                    return Ok(None);
                }
                self.load()?;
                continue;
            }
            let body = &self.buf[..self.buf.len() - 1];
            let start = body.iter().rposition(|&b| b == b'\n').map(|i| i + 1);
            if start.is_some() || self.pos == 0 {
                let start = start.unwrap_or(0);
                let offset = self.pos + start as u64;
                let line = if body.len() - start > MAX_RECORD_BYTES {
                    RevLine::TooLong { offset }
                } else {
                    RevLine::Complete {
                        offset,
                        bytes: body[start..].to_vec(),
                    }
                };
                self.buf.truncate(start);
                return Ok(Some(line));
            }
            if self.buf.len() > MAX_RECORD_BYTES + 1 {
                return self.skip_long().map(Some);
            }
            self.load()?;
        }
    }

    /// Skips the rest of a line over the limit, backward, keeping one chunk at a time.
    fn skip_long(&mut self) -> io::Result<RevLine> {
        self.buf.clear();
        loop {
            if self.pos == 0 {
                return Ok(RevLine::TooLong { offset: 0 });
            }
            self.load()?;
            if let Some(i) = self.buf.iter().rposition(|&b| b == b'\n') {
                self.buf.truncate(i + 1);
                return Ok(RevLine::TooLong {
                    offset: self.pos + i as u64 + 1,
                });
            }
            self.buf.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn backward(bytes: &[u8]) -> Vec<String> {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        let mut lines = RevLines::new(&file, bytes.len() as u64).unwrap();
        let mut out = Vec::new();
        while let Some(line) = lines.next_line().unwrap() {
            out.push(match line {
                RevLine::Complete { offset, bytes } if bytes.len() > 1000 => {
                    format!("{offset}:<{} bytes kept>", bytes.len())
                }
                RevLine::Complete { offset, bytes } => {
                    format!("{offset}:{}", String::from_utf8(bytes).unwrap())
                }
                RevLine::TooLong { offset } => format!("{offset}:<long>"),
            });
        }
        out
    }

    #[test]
    fn reads_lines_last_to_first_with_their_offsets() {
        assert_eq!(backward(b"ab\n\ncde\n"), ["4:cde", "3:", "0:ab"]);
        assert!(backward(b"").is_empty());
        assert_eq!(backward(b"\n"), ["0:"]);
    }

    #[test]
    fn lines_across_chunk_boundaries_come_back_whole() {
        let mut bytes = Vec::new();
        let mut expected = Vec::new();
        for i in 0..5000u32 {
            let line = format!("line {i} {}", "x".repeat((i % 97) as usize));
            expected.push(format!("{}:{line}", bytes.len()));
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
        }
        expected.reverse();
        assert_eq!(backward(&bytes), expected);
    }

    #[test]
    fn a_line_over_the_limit_is_skipped_not_kept() {
        let mut bytes = b"first\n".to_vec();
        bytes.extend(vec![b'x'; MAX_RECORD_BYTES + 10]);
        bytes.extend_from_slice(b"\nlast\n");
        let long_at = 6;
        let last_at = 6 + MAX_RECORD_BYTES as u64 + 11;
        assert_eq!(
            backward(&bytes),
            [
                format!("{last_at}:last"),
                format!("{long_at}:<long>"),
                "0:first".to_string()
            ]
        );
        // A long first line.
        let mut bytes = vec![b'y'; MAX_RECORD_BYTES + 2];
        bytes.extend_from_slice(b"\nz\n");
        assert_eq!(
            backward(&bytes),
            [
                format!("{}:z", MAX_RECORD_BYTES + 3),
                "0:<long>".to_string()
            ]
        );
    }
}
