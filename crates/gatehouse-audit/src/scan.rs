//! Reading the log file: forward, line by line with a length cap (verify, read), and backward
//! from the end to find the last record cheaply (open, append).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Take};
use std::path::Path;

use crate::record::{Record, line_hash, parse_line};
use crate::{AuditError, MAX_RECORD_BYTES};

/// How much is read per step when searching backward for a newline.
const CHUNK: usize = 64 * 1024;

/// One line of the file, as the forward reader found it.
pub(crate) enum Line {
    /// Ended by a newline (not included).
    Complete(Vec<u8>),
    /// The file ended before a newline: a torn write.
    Unterminated,
    /// Longer than [`MAX_RECORD_BYTES`]; its bytes were skipped, not kept in memory.
    TooLong { bytes: u64, terminated: bool },
}

/// Reads lines forward without ever holding more than [`MAX_RECORD_BYTES`] of one line.
pub(crate) struct Lines<R> {
    reader: R,
}

impl<'a> Lines<BufReader<Take<&'a File>>> {
    /// The first `len` bytes of `file`, from the start.
    pub(crate) fn of_file(file: &'a File, len: u64) -> io::Result<Self> {
        let mut handle = file;
        handle.seek(SeekFrom::Start(0))?;
        Ok(Lines {
            reader: BufReader::with_capacity(CHUNK, handle.take(len)),
        })
    }
}

impl Lines<BufReader<Take<File>>> {
    /// The first `len` bytes of `file`, from the start, owning the file.
    pub(crate) fn of_owned(file: File, len: u64) -> io::Result<Self> {
        let mut file = file;
        file.seek(SeekFrom::Start(0))?;
        Ok(Lines {
            reader: BufReader::with_capacity(CHUNK, file.take(len)),
        })
    }
}

impl<R: BufRead> Lines<R> {
    pub(crate) fn next_line(&mut self) -> io::Result<Option<Line>> {
        let mut kept = Vec::new();
        let mut total: u64 = 0;
        let mut too_long = false;
        loop {
            let available = self.reader.fill_buf()?;
            if available.is_empty() {
                return Ok(match (total, too_long) {
                    (0, _) => None,
                    (bytes, true) => Some(Line::TooLong {
                        bytes,
                        terminated: false,
                    }),
                    (_, false) => Some(Line::Unterminated),
                });
            }
            let (take, found) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (available.len(), false),
            };
            if !too_long {
                kept.extend_from_slice(&available[..take]);
                if kept.len() > MAX_RECORD_BYTES {
                    too_long = true;
                    kept = Vec::new();
                }
            }
            total += take as u64;
            self.reader.consume(take + usize::from(found));
            if found {
                return Ok(Some(if too_long {
                    Line::TooLong {
                        bytes: total,
                        terminated: true,
                    }
                } else {
                    Line::Complete(kept)
                }));
            }
        }
    }

    /// Whether nothing follows the line just read.
    pub(crate) fn at_end(&mut self) -> io::Result<bool> {
        Ok(self.reader.fill_buf()?.is_empty())
    }
}

/// The end of the log as found by [`scan_tail`].
pub(crate) struct Tail {
    /// Length of the complete records; any bytes after it are torn.
    pub complete_len: u64,
    /// The file's length when scanned.
    pub len: u64,
    /// The last complete record and the hash of its line; `None` for an empty log.
    pub last: Option<(Record, String)>,
}

impl Tail {
    pub(crate) fn is_torn(&self) -> bool {
        self.complete_len < self.len
    }
}

/// Finds the last complete record by reading backward from the end of the first `len` bytes.
///
/// The tail is torn when the file does not end with a newline, or when its last line is not a
/// record (a crash can leave a line whose bytes never reached the disk). Only that one line can
/// be a crash artefact: writers hold the lock and write one line at a time. So the line before
/// it must be a record; if it is not, the log cannot be continued safely and this says so.
pub(crate) fn scan_tail(file: &File, len: u64, path: &Path) -> Result<Tail, AuditError> {
    let read_err = |source| AuditError::Read {
        path: path.to_path_buf(),
        source,
    };
    if len == 0 {
        return Ok(Tail {
            complete_len: 0,
            len,
            last: None,
        });
    }
    let mut last_byte = [0u8];
    read_exact_at(file, &mut last_byte, len - 1).map_err(read_err)?;
    let complete_len = if last_byte[0] == b'\n' {
        let start = rfind_newline(file, len - 1)
            .map_err(read_err)?
            .map_or(0, |p| p + 1);
        if let Some(last) = read_record(file, start, len - 1).map_err(read_err)? {
            return Ok(Tail {
                complete_len: len,
                len,
                last: Some(last),
            });
        }
        start
    } else {
        rfind_newline(file, len)
            .map_err(read_err)?
            .map_or(0, |p| p + 1)
    };
    if complete_len == 0 {
        return Ok(Tail {
            complete_len,
            len,
            last: None,
        });
    }
    let end = complete_len - 1;
    let start = rfind_newline(file, end)
        .map_err(read_err)?
        .map_or(0, |p| p + 1);
    match read_line_at(file, start, end).map_err(read_err)? {
        None => Err(AuditError::Unrecoverable {
            path: path.to_path_buf(),
            offset: start,
            reason: format!("the line is longer than {MAX_RECORD_BYTES} bytes"),
        }),
        Some(bytes) => match parse_line(&bytes) {
            Ok(record) => Ok(Tail {
                complete_len,
                len,
                last: Some((record, line_hash(&bytes))),
            }),
            Err(reason) => Err(AuditError::Unrecoverable {
                path: path.to_path_buf(),
                offset: start,
                reason,
            }),
        },
    }
}

/// The record in `start..end`, or `None` if those bytes are not one.
fn read_record(file: &File, start: u64, end: u64) -> io::Result<Option<(Record, String)>> {
    Ok(read_line_at(file, start, end)?
        .and_then(|bytes| parse_line(&bytes).ok().map(|r| (r, line_hash(&bytes)))))
}

/// The bytes in `start..end`, or `None` when that is longer than a record may be.
fn read_line_at(file: &File, start: u64, end: u64) -> io::Result<Option<Vec<u8>>> {
    let n = end - start;
    if n > MAX_RECORD_BYTES as u64 {
        return Ok(None);
    }
    let mut bytes = vec![0u8; n as usize];
    read_exact_at(file, &mut bytes, start)?;
    Ok(Some(bytes))
}

/// The offset of the last newline in `0..end`.
fn rfind_newline(file: &File, end: u64) -> io::Result<Option<u64>> {
    let mut buf = vec![0u8; CHUNK];
    let mut pos = end;
    while pos > 0 {
        let start = pos.saturating_sub(CHUNK as u64);
        let n = (pos - start) as usize;
        read_exact_at(file, &mut buf[..n], start)?;
        if let Some(i) = buf[..n].iter().rposition(|&b| b == b'\n') {
            return Ok(Some(start + i as u64));
        }
        pos = start;
    }
    Ok(None)
}

pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    let mut handle = file;
    handle.seek(SeekFrom::Start(offset))?;
    handle.read_exact(buf)
}

/// The hash of the line whose record has `seq`, searching the first `len` bytes backward from
/// their end. Used when the head lags the log by more than one record: the batched mode writes
/// the head once per flush, so the record sought is usually within the last few hundred lines,
/// and a log of any size is searched in time proportional to the lag, not to the log.
pub(crate) fn find_hash_of_seq(file: &File, len: u64, seq: u64) -> io::Result<Option<String>> {
    let mut end = len;
    // `end` is just past a newline (or 0): the line before it ends at `end - 1`.
    while end > 0 {
        let newline = end - 1;
        let start = rfind_newline(file, newline)?.map_or(0, |p| p + 1);
        if let Some(bytes) = read_line_at(file, start, newline)?
            && let Ok(record) = parse_line(&bytes)
        {
            if record.seq == seq {
                return Ok(Some(line_hash(&bytes)));
            }
            if record.seq < seq {
                return Ok(None);
            }
        }
        end = start;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn lines_of(bytes: &[u8]) -> Vec<String> {
        let mut lines = Lines {
            reader: BufReader::with_capacity(7, Cursor::new(bytes.to_vec())),
        };
        let mut out = Vec::new();
        while let Some(line) = lines.next_line().unwrap() {
            out.push(match line {
                Line::Complete(b) => String::from_utf8(b).unwrap(),
                Line::Unterminated => "<torn>".to_string(),
                Line::TooLong { bytes, terminated } => format!("<long {bytes} {terminated}>"),
            });
        }
        out
    }

    #[test]
    fn splits_lines_across_buffer_refills() {
        assert_eq!(
            lines_of(b"first line\n\nthird, longer than the buffer\n"),
            ["first line", "", "third, longer than the buffer"]
        );
        assert_eq!(lines_of(b"a\nb"), ["a", "<torn>"]);
        assert!(lines_of(b"").is_empty());
    }

    #[test]
    fn skips_over_long_lines_without_keeping_them() {
        let mut bytes = vec![b'x'; MAX_RECORD_BYTES + 5];
        bytes.push(b'\n');
        bytes.extend_from_slice(b"next\n");
        bytes.extend(vec![b'y'; MAX_RECORD_BYTES + 1]);
        assert_eq!(
            lines_of(&bytes),
            [
                format!("<long {} true>", MAX_RECORD_BYTES + 5),
                "next".to_string(),
                format!("<long {} false>", MAX_RECORD_BYTES + 1),
            ]
        );
    }
}
