//! Gatehouse's audit log: an append-only, hash-chained JSONL file that records every admission
//! decision, tool-call authorization, pin mismatch and bundle decision (docs/atsa.md §6), and
//! the checker that names its first broken record.
//!
//! Owns: the log's file format, appending (durably, from several processes), repairing a torn
//! end, the head sidecar, rotating into segments that continue one chain, deleting old segments
//! by a retention window, verifying across segments, and reading (newest first with [`tail`],
//! oldest first with [`stream`]), filtering and exporting.
//!
//! # Files
//!
//! - **The log** (e.g. `audit.jsonl`, mode 0600): one record per line, each a JSON object with
//!   fields in this order: `seq` (1, 2, …), `time` (RFC 3339, UTC, `Z`), `event` (snake_case),
//!   `server` (only when the record is about one), `prev` (SHA-256, lower-case hex, of the
//!   previous line's exact bytes without its newline; 64 zeros for seq 1) and `data` (a JSON
//!   object from the caller):
//!   `{"seq":2,"time":"2026-05-01T12:00:00Z","event":"tool_call","server":"demo","prev":"…","data":{…}}`
//! - **The head**, `<log>.head`: `{"seq":N,"hash":"…"}`, the anchor of the last record known
//!   to be on stable storage, replaced atomically (a temp file, fsync, rename): after every
//!   append in the sync mode, after every flush in the batched mode; `seq` 0 and 64 zeros for
//!   an empty log. Every head is renamed into place under the log's exclusive lock, and a
//!   batched flush leaves a head that anchors the same or a later record as it is (another
//!   writer flushed further), so the head never moves backwards (but to the log's real end
//!   after an `audit_head_mismatch` record says records were removed). The head may lag the
//!   log (a crash between a record's flush and the rename, or records of the batched mode not
//!   yet flushed); a head behind the log is accepted when the record at its seq has its hash.
//!   A head ahead of the log, or naming a record that hashes differently, means records were
//!   removed from the end.
//! - **Markers**, `<log>.batched-<pid>-<n>`: one per batched writer while it runs (the boot id
//!   and its window), so a restart of the machine that cut its last window short is recorded
//!   (`audit_short_tail`) rather than silent; see [`Durability`]. A writer whose flush failed
//!   says so in its marker (`"flush_failed": true` and the last seq it made durable, or, when
//!   that cannot be written, the name `<marker>.flush-failed`), and the marker is recorded the
//!   same way on any boot instead of being taken for a crashed process's.
//! - **Sealed segments**, `<log>.seg-000001`, `-000002`, … (mode 0600): earlier parts of the
//!   same chain, sealed by rotation, never written again; see "Segments".
//! - **`<log>.rotating`**: the next active file while a rotation writes it; left only by a
//!   rotation that died, and removed (undone) by the next open or rotation.
//! - **Torn side files**, `<log>.torn-<seq>`: the exact bytes of a torn last line, moved out of
//!   the log; `<seq>` is the seq of the `audit_torn_tail` record that describes it (`-1`, `-2`…
//!   is added rather than overwrite an older side file).
//!
//! # Segments
//!
//! Opened with a [`Rotation`] ([`AuditLog::open_rotating`] or [`AuditLog::set_rotation`]), an
//! append that would take the active file past `segment_max_bytes` first seals it as the next
//! segment, and the record goes into a new active file. The chain does not restart: the new
//! file's first record is a reserved `audit_rotated` record ([`EVENT_ROTATED`]) whose data
//! names the segment it continues (`segment` file name, `number`, `first_seq`, `last_seq`,
//! `last_hash`, `bytes`) and whose `prev` is that segment's last hash; seq keeps counting.
//! Concatenating the segments in order and then the active file gives one valid chain, and
//! every file after the first says which file comes before it, so a missing one is named.
//!
//! Rotation is done under the active file's exclusive lock, so several processes appending at
//! once extend one chain (a writer that waited for the lock finds the path names another file,
//! and opens it again; a flush never writes a head through a sealed file). The steps
//! ([`RotationStep`]):
//!
//! 1. `sealed`: the active file is flushed (`fdatasync`): every record in it is durable.
//! 2. `next_written`: `<log>.rotating` is created, locked, and holds the `audit_rotated` record,
//!    flushed, and the directory is flushed.
//! 3. `linked`: the active file also gets its segment name (a hard link, no copy).
//! 4. `renamed`: `<log>.rotating` is renamed over the log: the rotation has happened.
//! 5. `head_written`: the head anchors the `audit_rotated` record.
//!
//! A crash before step 4 leaves the log as it was, plus a segment name for the same file
//! and/or `<log>.rotating`; the next open (or rotation), under the lock, removes both: the
//! rotation is undone and nothing is lost (readers leave out a segment that is the active file
//! meanwhile). A crash after step 4 leaves a finished rotation whose head anchors the sealed
//! segment's last record, one behind, which is accepted like any head that lags. The head
//! keeps its form `{"seq":N,"hash":…}`: `N` is the global seq, and the file holding it is found
//! by seq (the active file, else the segments newest first), so a head written before a
//! rotation is still checked. Rotation needs hard links and atomic rename over an open file
//! (Unix); elsewhere, use the log without rotation.
//!
//! # Retention
//!
//! [`AuditLog::prune`] with a [`Retention`] of `keep_days` and the caller's `now` deletes only
//! whole sealed segments every record of which is older than `now - keep_days`, oldest first
//! and without a gap (never the active file, never past a missing segment, at most 1000 at a
//! time; times are the caller's and need not increase, so every record is checked, after one
//! look at a segment's last record rules most segments out). Before deleting, it appends a
//! reserved `audit_retention` record ([`EVENT_RETENTION`]), flushed and anchored by the head,
//! that names each segment (file, number, first and last seq, last hash), `through` (the
//! newest) and `through_hash`, and `first`: the oldest segment number accounted for, carried
//! over from a retention record inside the segments it removes, so the account survives its
//! own removal. A crash between the record and the deletions leaves segments the record names:
//! still accepted, and removed by the next prune. Keeping forever (`None` or 0 days) removes
//! nothing.
//!
//! [`verify`] walks every segment in order and then the active file. When the oldest file kept
//! continues a segment that is gone, retention records must account for every segment from 1
//! to it (the newest with the hash the chain continues from): then the report says "segments
//! 1–N removed by retention (record seq S)" ([`VerifyReport::removed`]) and checks the chain
//! from there. A segment missing without such a record, a segment missing in the middle
//! (retention removes only the oldest), or an active file that does not continue the newest
//! segment is a break ([`BreakKind::Truncated`] or [`BreakKind::BadPrev`]) that names the file.
//!
//! # Reading
//!
//! [`tail`] reads backward from the end of the active file and then the segments newest first
//! (one 64 KiB buffer plus a line, lines capped at [`MAX_RECORD_BYTES`]) and stops after the
//! newest `n` matches, at the oldest record kept, or after examining [`DEFAULT_TAIL_SCAN`]
//! records ([`tail_with`] sets the cap), saying which in [`Recent::end`]. [`stream`] yields
//! every matching record oldest → newest across the segments with one line in memory;
//! [`export`] writes from it; [`read`] collects it (every record in memory: small logs only).
//! Readers fix the end under a shared lock and open segments one at a time; a segment removed
//! by retention during a read ends `tail` there and fails a `stream` with its name.
//!
//! # Invariants
//!
//! - `append` returns `Ok` only after the line and its newline were written with one
//!   `write_all` (so a crash of the process loses nothing), and in the [`Durability::Sync`]
//!   mode only after `sync_data` returned and the head was replaced. In the
//!   [`Durability::Batched`] mode a flusher makes it durable within the window (group commit)
//!   and only then anchors it in the head; a failed flush makes every later append fail. On
//!   `Err` the record is not in the log (a partial line is truncated away; if even that
//!   fails, the next open or append treats it as a torn tail), so the caller can refuse the
//!   decision the record was for.
//! - Hashes are over the bytes written, never over a re-serialization. Before a line is
//!   written it is parsed back with the reader's own strict parser, so the log never holds a
//!   line that its reader refuses.
//! - Writers take an exclusive OS lock on the log (`File::lock`) and re-read its end and head
//!   under the lock before every append, so any number of handles, threads and processes
//!   extend one chain. Readers take a shared lock just long enough to note the length and the
//!   head, so they never see a half-written line. An append waits for the lock; it does not
//!   time out.
//! - What a power cut can take: nothing in the sync mode; in the batched mode at most the
//!   records of each writer's last window (`max_delay` or `max_records`), never a record the
//!   head anchored. The next open records `audit_short_tail` and [`verify`] reports a short
//!   tail, not a break. A failed flush can take the same window without a power cut (the
//!   kernel may drop pages it could not write); it is recorded the same way, with
//!   `flush_failed` (see [`Syncer`] for the seam the tests fail a flush through).
//! - Nothing is dropped silently. A torn last line is moved byte for byte to a side file and
//!   an `audit_torn_tail` record names its length, SHA-256 and side file. A head that does not
//!   match the log's end (records removed, head deleted) is recorded as `audit_head_mismatch`,
//!   and [`verify`] reports that record as `truncated` from then on. Both are also returned to
//!   the caller ([`Recovery`]) so the host can tell the user. The `audit_` event prefix is
//!   reserved for these records.
//! - [`AuditLog::open`] checks only the end of the log (cheap at any size, whatever the number
//!   of segments); [`verify`] checks everything. Appending after a break in the middle hides nothing: lines are never
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
//! misses the head. The same holds for segments: whoever can write the directory can delete old
//! segments and forge an `audit_retention` record (and the chain after it) that accounts for
//! them. To detect more, copy the anchor ([`VerifyReport::tip`] or the head file)
//! somewhere the log's writer cannot reach (another machine, a ticket, a signed message) and
//! check later that the record at that seq still has that hash. Nor does the chain say whether
//! a record's content is true: it records what the host decided, and times are the caller's,
//! not checked to increase. A record can exist for a decision that never took effect (the
//! process died after the flush, before `append` returned), never the reverse.
//!
//! # Never
//!
//! Reads the clock for a record or for retention (every time is passed in; the flusher uses a
//! monotonic timer only to schedule), rewrites or reorders existing lines (the only change to
//! written bytes is cutting a torn tail, after saving it), writes to a sealed segment, deletes
//! a segment without first recording it (`audit_retention`), writes secrets (the caller
//! decides what `data` holds; docs/product.md keeps secrets out of it), or checks the chain on
//! open.

mod durability;
mod error;
mod head;
mod log;
mod read;
mod record;
mod report;
mod rotate;
mod scan;
mod segment;
mod stream;
mod verify;
mod writer;

pub use durability::{Durability, Fdatasync, RotationStep, Syncer};
pub use error::AuditError;
pub use head::head_path;
pub use log::AuditLog;
pub use read::{ExportFormat, Filter, export, read};
pub use record::{
    Anchor, EVENT_HEAD_MISMATCH, EVENT_RETENTION, EVENT_ROTATED, EVENT_SHORT_TAIL, EVENT_TORN_TAIL,
    RESERVED_EVENT_PREFIX, Record, ZERO_HASH, check_event_name,
};
pub use report::{
    Appended, Flushed, HeadMismatch, HeadProblem, OpenReport, Recovery, ShortTail, TornTail,
};
pub use segment::{
    Pruned, RemovedSegment, Retention, Rotated, Rotation, SegmentFile, segment_path, segments,
};
pub use stream::{DEFAULT_TAIL_SCAN, Recent, Stream, Streamed, TailEnd, stream, tail, tail_with};
pub use verify::{BreakKind, Broken, Repair, RetentionNote, ShortTailNote, VerifyReport, verify};

/// Longest line (one record, without its newline) written or read: 1 MiB. Records are
/// decisions, not payloads; the cap keeps a reader's memory bounded whatever is in the file.
pub const MAX_RECORD_BYTES: usize = 1024 * 1024;

/// Longest event name.
pub const MAX_EVENT_BYTES: usize = 64;

/// Longest server id.
pub const MAX_SERVER_BYTES: usize = 256;
