//! Gatehouse's audit log: an append-only, hash-chained JSONL file that records every admission
//! decision, tool-call authorization, pin mismatch and bundle decision (docs/atsa.md §6), and
//! the checker that names its first broken record.
//!
//! Owns: the log's file format, appending (durably, from several processes), repairing a torn
//! end, the head sidecar, verifying, reading, filtering and exporting.
//!
//! # Files
//!
//! - **The log** (e.g. `audit.jsonl`, mode 0600): one record per line, each a JSON object with
//!   fields in this order: `seq` (1, 2, …), `time` (RFC 3339, UTC, `Z`), `event` (snake_case),
//!   `server` (only when the record is about one), `prev` (SHA-256, lower-case hex, of the
//!   previous line's exact bytes without its newline; 64 zeros for seq 1) and `data` (a JSON
//!   object from the caller):
//!   `{"seq":2,"time":"2026-05-01T12:00:00Z","event":"tool_call","server":"demo","prev":"…","data":{…}}`
//! - **The head**, `<log>.head`: `{"seq":N,"hash":"…"}`, the last record's seq and line hash,
//!   replaced atomically (`<log>.head.tmp`, fsync, rename) after every append; `seq` 0 and 64
//!   zeros for an empty log. A crash between a record's flush and the rename leaves the head
//!   one record behind; a head behind the log is accepted when the record at its seq has its
//!   hash. A head ahead of the log, or naming a record that hashes differently, means records
//!   were removed from the end.
//! - **Torn side files**, `<log>.torn-<seq>`: the exact bytes of a torn last line, moved out of
//!   the log; `<seq>` is the seq of the `audit_torn_tail` record that describes it (`-1`, `-2`…
//!   is added rather than overwrite an older side file).
//!
//! # Invariants
//!
//! - `append` returns `Ok` only after the line and its newline were written with one
//!   `write_all`, `sync_data` returned, and the head was replaced. On `Err` the record is not in
//!   the log (a partial line is truncated away; if even that fails, the next open or append
//!   treats it as a torn tail), so the caller can refuse the decision the record was for.
//! - Hashes are over the bytes written, never over a re-serialization. Before a line is
//!   written it is parsed back with the reader's own strict parser, so the log never holds a
//!   line that its reader refuses.
//! - Writers take an exclusive OS lock on the log (`File::lock`) and re-read its end and head
//!   under the lock before every append, so any number of handles, threads and processes
//!   extend one chain. Readers take a shared lock just long enough to note the length and the
//!   head, so they never see a half-written line. An append waits for the lock; it does not
//!   time out.
//! - Nothing is dropped silently. A torn last line is moved byte for byte to a side file and
//!   an `audit_torn_tail` record names its length, SHA-256 and side file. A head that does not
//!   match the log's end (records removed, head deleted) is recorded as `audit_head_mismatch`,
//!   and [`verify`] reports that record as `truncated` from then on. Both are also returned to
//!   the caller ([`Recovery`]) so the host can tell the user. The `audit_` event prefix is
//!   reserved for these records.
//! - [`AuditLog::open`] checks only the end of the log (cheap at any size); [`verify`] checks
//!   everything. Appending after a break in the middle hides nothing: lines are never
//!   rewritten, so `verify` still names the first broken one.
//! - Strict reading: unknown or repeated fields, duplicate keys inside `data`, a non-UTC time,
//!   a non-snake_case event or a malformed hash make a line `bad_json`, not a record.
//!
//! # What the chain does not protect against
//!
//! The chain is unkeyed. Anyone who can write both the log and its head file (the same user
//! account, malware running as it, root) can rewrite history: edit records, recompute every
//! `prev` after them, and write a matching head; or cut the log and write a head for the new
//! end. `verify` cannot tell. It detects accidental damage, careless edits, and a tamperer who
//! misses the head; to detect more, copy the anchor ([`VerifyReport::tip`] or the head file)
//! somewhere the log's writer cannot reach (another machine, a ticket, a signed message) and
//! check later that the record at that seq still has that hash. Nor does the chain say whether
//! a record's content is true: it records what the host decided, and times are the caller's,
//! not checked to increase. A record can exist for a decision that never took effect (the
//! process died after the flush, before `append` returned), never the reverse.
//!
//! # Never
//!
//! Reads the clock (every time is passed in), rewrites or reorders existing lines (the only
//! change to written bytes is cutting a torn tail, after saving it), writes secrets (the caller
//! decides what `data` holds; docs/product.md keeps secrets out of it), or checks the chain on
//! open.

mod error;
mod head;
mod log;
mod read;
mod record;
mod scan;
mod verify;

pub use error::AuditError;
pub use head::head_path;
pub use log::{Appended, AuditLog, HeadMismatch, HeadProblem, OpenReport, Recovery, TornTail};
pub use read::{ExportFormat, Filter, export, read};
pub use record::{Anchor, EVENT_HEAD_MISMATCH, EVENT_TORN_TAIL, Record, ZERO_HASH};
pub use verify::{BreakKind, Broken, Repair, VerifyReport, verify};

/// Longest line (one record, without its newline) written or read: 1 MiB. Records are
/// decisions, not payloads; the cap keeps a reader's memory bounded whatever is in the file.
pub const MAX_RECORD_BYTES: usize = 1024 * 1024;

/// Longest event name.
pub const MAX_EVENT_BYTES: usize = 64;

/// Longest server id.
pub const MAX_SERVER_BYTES: usize = 256;
