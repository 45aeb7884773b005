//! What can go wrong opening, appending to or reading the log. Every variant names the file (and
//! the line or offset where it applies) and says what to do, because the host shows these to the
//! user as the reason a decision was refused.

use std::io;
use std::path::PathBuf;

/// An error from the audit log. A failed [`AuditLog::append`](crate::AuditLog::append) means the
/// record is not on disk: the caller must not let the decision it records take effect.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The log's directory could not be created.
    #[error(
        "cannot create the audit log directory {path}: {source}; check that the parent exists and is writable by this user"
    )]
    CreateDir { path: PathBuf, source: io::Error },

    /// The log file could not be opened (or created) for appending.
    #[error(
        "cannot open the audit log {path} for appending: {source}; check that it is a file writable by this user"
    )]
    Open { path: PathBuf, source: io::Error },

    /// The log path exists but is not a regular file (a directory, a device such as /dev/null,
    /// a pipe): records written there would not be kept.
    #[error(
        "the audit log {path} is not a regular file; move it aside so a new log can be created"
    )]
    NotARegularFile { path: PathBuf },

    /// The log file has no write permission bits: it was made read-only on purpose (archived),
    /// so it is not appended to, even by a user the OS would let write it.
    #[error(
        "the audit log {path} is read-only; make it writable (chmod u+w) or configure a new log path"
    )]
    ReadOnly { path: PathBuf },

    /// No log exists at the path (reading and verifying never create one).
    #[error("there is no audit log at {path}; check the path")]
    NotFound { path: PathBuf },

    /// The OS file lock that serializes writers (and snapshots for readers) failed.
    #[error("cannot lock the audit log {path}: {source}; the file system must support file locks")]
    Lock { path: PathBuf, source: io::Error },

    /// Reading the log failed.
    #[error("cannot read the audit log {path}: {source}")]
    Read { path: PathBuf, source: io::Error },

    /// Writing or flushing a record failed. The partial write, if any, was truncated away.
    #[error(
        "cannot write to the audit log {path}: {source}; the record is not on disk, so the decision must not take effect (check free space and permissions)"
    )]
    Write { path: PathBuf, source: io::Error },

    /// An export's output could not be written (the log itself is fine).
    #[error("cannot write the export of the audit log {path}: {source}")]
    Export { path: PathBuf, source: io::Error },

    /// The head sidecar could not be read or replaced. When this happens in an append, the
    /// record was removed again, so the append did not happen.
    #[error(
        "cannot read or replace the audit head file {path}: {source}; check that the log's directory is writable and the head is a regular file"
    )]
    Head { path: PathBuf, source: io::Error },

    /// The torn tail could not be saved to its side file, so it was left in place.
    #[error(
        "cannot save the torn end of the audit log to {path}: {source}; the log was left untouched: free space or fix permissions in its directory"
    )]
    SaveTorn { path: PathBuf, source: io::Error },

    /// The last complete record, which the next record must chain from, is not a record. This
    /// is not a crash artefact (a crash tears at most the one line being written).
    #[error(
        "the audit log {path} cannot be continued: the last complete line (at byte {offset}) is not a valid record: {reason}; run `gatehouse audit verify`, then move the log and its .head aside to start a new one"
    )]
    Unrecoverable {
        path: PathBuf,
        offset: u64,
        reason: String,
    },

    /// A record could not be read (by `read` or `export`; `verify` reports this instead).
    #[error(
        "audit log {path} line {line}: {reason}; run `gatehouse audit verify` for the chain's state"
    )]
    BadRecord {
        path: PathBuf,
        line: u64,
        reason: String,
    },

    /// The event name is not snake_case.
    #[error("event name {event:?} is not snake_case ([a-z][a-z0-9_]*, at most {max} bytes)", max = crate::MAX_EVENT_BYTES)]
    BadEvent { event: String },

    /// The event name uses the prefix reserved for the log's own records.
    #[error(
        "event name {event:?} starts with \"audit_\", which is reserved for the audit log's own records; choose another name"
    )]
    ReservedEvent { event: String },

    /// The server id is empty, too long or holds control characters.
    #[error("server id {server:?} cannot be recorded: {reason}")]
    BadServer {
        server: String,
        reason: &'static str,
    },

    /// `data` was not a JSON object.
    #[error("record data must be a JSON object, not {found}")]
    DataNotObject { found: &'static str },

    /// The encoded record would not fit the per-line limit.
    #[error(
        "the {event} record is {bytes} bytes, over the {max}-byte limit; record less data", max = crate::MAX_RECORD_BYTES
    )]
    RecordTooLarge { event: String, bytes: usize },

    /// The encoded record could not be read back (for example `data` nests too deeply), so it
    /// was not written: the log never holds a line its own reader refuses.
    #[error("the {event} record would not read back ({reason}); simplify its data")]
    Unreadable { event: String, reason: String },

    /// The time cannot be written as RFC 3339 in UTC (year outside 0000–9999).
    #[error(
        "time {time} cannot be recorded as RFC 3339 UTC; pass a time between years 0000 and 9999"
    )]
    BadTime { time: String },

    /// A batched flush failed (the disk refused a sync or the head could not be written).
    /// Records already written may not be durable; nothing more is appended, so nothing more
    /// is decided, until Gatehouse is restarted with a working disk.
    #[error(
        "the audit log {path} could not be made durable: {detail}; no further decision is taken. Check the disk (space, errors in the system log), then restart Gatehouse"
    )]
    FlushFailed { path: PathBuf, detail: String },

    /// The durability asked for cannot be used.
    #[error("the audit log's durability setting is not usable: {detail}")]
    BadDurability { detail: String },

    /// The log already holds `u64::MAX` records.
    #[error("the audit log {path} has used every sequence number; start a new log")]
    SeqExhausted { path: PathBuf },
}

impl AuditError {
    /// A stable snake_case code for JSON output and the UI.
    pub fn code(&self) -> &'static str {
        match self {
            AuditError::CreateDir { .. } => "create_dir",
            AuditError::Open { .. } => "open",
            AuditError::NotARegularFile { .. } => "not_a_regular_file",
            AuditError::ReadOnly { .. } => "read_only",
            AuditError::NotFound { .. } => "not_found",
            AuditError::Lock { .. } => "lock",
            AuditError::Read { .. } => "read",
            AuditError::Write { .. } => "write",
            AuditError::Export { .. } => "export",
            AuditError::Head { .. } => "head",
            AuditError::SaveTorn { .. } => "save_torn",
            AuditError::Unrecoverable { .. } => "unrecoverable",
            AuditError::BadRecord { .. } => "bad_record",
            AuditError::BadEvent { .. } => "bad_event",
            AuditError::ReservedEvent { .. } => "reserved_event",
            AuditError::BadServer { .. } => "bad_server",
            AuditError::DataNotObject { .. } => "data_not_object",
            AuditError::RecordTooLarge { .. } => "record_too_large",
            AuditError::Unreadable { .. } => "unreadable",
            AuditError::BadTime { .. } => "bad_time",
            AuditError::SeqExhausted { .. } => "seq_exhausted",
            AuditError::FlushFailed { .. } => "flush_failed",
            AuditError::BadDurability { .. } => "bad_durability",
        }
    }
}
