//! Reading records back: all of them, filtered by server or event, or exported verbatim.
//! Reading does not check the chain (that is [`verify`](crate::verify)); it does refuse a line
//! that is not a record, naming it, rather than skip it.

use std::io::{self, Write};
use std::path::Path;

use crate::record::{Record, parse_line};
use crate::scan::{Line, Lines};
use crate::verify::Snapshot;
use crate::{AuditError, MAX_RECORD_BYTES};

/// Which records to keep: every condition given must hold (`--server ID`, `--type EVENT`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Keep records about this server id only.
    pub server: Option<String>,
    /// Keep records of this event type only.
    pub event: Option<String>,
}

impl Filter {
    /// Keeps everything.
    pub fn all() -> Filter {
        Filter::default()
    }

    pub fn matches(&self, record: &Record) -> bool {
        self.server
            .as_deref()
            .is_none_or(|server| record.server.as_deref() == Some(server))
            && self
                .event
                .as_deref()
                .is_none_or(|event| record.event == event)
    }

    /// The records that match, in log order.
    pub fn apply(&self, records: Vec<Record>) -> Vec<Record> {
        records.into_iter().filter(|r| self.matches(r)).collect()
    }
}

/// How [`export`] writes records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// One record per line, each line byte for byte as in the log.
    Jsonl,
    /// A JSON array whose members are the log's lines byte for byte (one per line), so the
    /// records' hashes can still be recomputed from the export.
    JsonArray,
}

/// Every record in the log at `path`, in order.
pub fn read(path: impl AsRef<Path>) -> Result<Vec<Record>, AuditError> {
    let path = path.as_ref();
    let mut records = Vec::new();
    for_each_line(path, |_, record| {
        records.push(record);
        Ok(())
    })
    .map_err(|e| match e {
        LineError::Log(e) => e,
        // The sink above cannot fail; mapped for completeness.
        LineError::Sink(source) => AuditError::Read {
            path: path.to_path_buf(),
            source,
        },
    })?;
    Ok(records)
}

/// Writes the records that match `filter` to `out` in `format`; returns how many. Records are
/// not re-serialized: each is the log's line as it is on disk.
pub fn export(
    path: impl AsRef<Path>,
    filter: &Filter,
    format: ExportFormat,
    out: &mut dyn Write,
) -> Result<u64, AuditError> {
    let path = path.as_ref();
    let sink_err = |source| AuditError::Export {
        path: path.to_path_buf(),
        source,
    };
    let mut count = 0u64;
    if format == ExportFormat::JsonArray {
        out.write_all(b"[").map_err(sink_err)?;
    }
    for_each_line(path, |bytes, record| {
        if !filter.matches(&record) {
            return Ok(());
        }
        let result = match format {
            ExportFormat::Jsonl => out.write_all(bytes).and_then(|()| out.write_all(b"\n")),
            ExportFormat::JsonArray => {
                let sep: &[u8] = if count == 0 { b"\n" } else { b",\n" };
                out.write_all(sep).and_then(|()| out.write_all(bytes))
            }
        };
        count += 1;
        result
    })
    .map_err(|e| match e {
        LineError::Log(e) => e,
        LineError::Sink(source) => sink_err(source),
    })?;
    if format == ExportFormat::JsonArray {
        let end: &[u8] = if count == 0 { b"]\n" } else { b"\n]\n" };
        out.write_all(end).map_err(sink_err)?;
    }
    Ok(count)
}

/// A failure while walking lines: the log's, or the caller's sink's (kept apart so an export
/// that cannot write its output is not reported as a problem with the log).
enum LineError {
    Log(AuditError),
    Sink(io::Error),
}

/// Calls `f` with each line's bytes and its record, in order.
fn for_each_line(
    path: &Path,
    mut f: impl FnMut(&[u8], Record) -> io::Result<()>,
) -> Result<(), LineError> {
    let read_err = |source| {
        LineError::Log(AuditError::Read {
            path: path.to_path_buf(),
            source,
        })
    };
    let snapshot = Snapshot::take(path)
        .map_err(LineError::Log)?
        .ok_or_else(|| {
            LineError::Log(AuditError::NotFound {
                path: path.to_path_buf(),
            })
        })?;
    let mut lines = Lines::of_file(&snapshot.file, snapshot.len).map_err(read_err)?;
    let mut line_no = 0u64;
    while let Some(line) = lines.next_line().map_err(read_err)? {
        line_no += 1;
        let bad = |reason: String| {
            LineError::Log(AuditError::BadRecord {
                path: path.to_path_buf(),
                line: line_no,
                reason,
            })
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
        let record = parse_line(&bytes).map_err(bad)?;
        f(&bytes, record).map_err(LineError::Sink)?;
    }
    Ok(())
}
