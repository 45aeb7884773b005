//! When an appended record reaches stable storage, and how a power cut in the batched mode is
//! noticed afterwards.
//!
//! Both modes write the record into the file (one `write_all`, so it is in the OS page cache
//! and survives a crash of the process) before `append` returns; they differ in whether the
//! caller also waits for the disk:
//!
//! - [`Durability::Sync`]: `sync_data` and the head file are written before `append` returns.
//! - [`Durability::Batched`]: a background flusher makes everything written so far durable
//!   with one `sync_data` (group commit: every record written since the last flush shares it)
//!   at most `max_delay` after the first unflushed record, or as soon as `max_records` are
//!   waiting, then writes the head with the anchor of the last record it made durable, unless
//!   the head already anchors a later one (another writer flushed further: the head never moves
//!   backwards; the check and the rename are done under the log's exclusive lock). The head
//!   never claims more than the disk holds, so after a power cut the log is at least as long as
//!   the head says: nothing reads as removed.
//!
//! A power cut can still lose the last window of a batched writer. To say so rather than leave
//! it silent, each batched writer keeps a marker file, `<log>.batched-<pid>-<n>`, holding the
//! boot id of the running system; it is made durable before the writer appends and removed
//! after its last flush. A marker left from another boot means the machine stopped while that
//! writer had records that may not have reached the disk: the next open records
//! `audit_short_tail`, and `verify` reports a short tail (never a break). A marker from this
//! boot whose process is gone means only the process died, which loses nothing (the page
//! cache kept its writes); it is removed.
//!
//! A failed flush is the other way records the host acted on can miss the disk without the
//! machine stopping: after an `fdatasync` error the kernel may have dropped the pages it could
//! not write. So the writer says so in its marker before anything else (see
//! [`mark_flush_failed`]): the marker is rewritten with `"flush_failed": true` and the last seq
//! it made durable, or, when even that write fails, renamed to `<marker>.flush-failed` (a
//! change of name needs no data block). A marker that says so is reported like one of another
//! boot, whether its writer is alive or not (a failed writer never flushes again); the next
//! open records `audit_short_tail` with `flush_failed`, and `verify` reports the short tail.
//! When the disk refuses the rename too, the marker stays as it was (a failed writer never
//! removes it): on another boot it is reported as usual; on this boot, once its writer is
//! gone, it cannot be told from a killed process's and is removed. That case is left to the
//! failing process itself, which refused every later decision (`flush_failed`) and said why.

use std::fmt;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::head::{private_file_options, sync_dir, write_synced};

/// How an appended record is made durable. Serialized as `"sync"` / `"batched"` (with the
/// window) in reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Every record is on stable storage (and anchored by the head) before `append` returns.
    Sync,
    /// Every record is in the file before `append` returns, and on stable storage within
    /// `max_delay` or `max_records` records, whichever comes first.
    Batched {
        max_delay: Duration,
        max_records: u32,
    },
}

impl Durability {
    /// The batched window Gatehouse uses unless configured: 50 ms or 128 records.
    pub const DEFAULT_MAX_DELAY: Duration = Duration::from_millis(50);
    pub const DEFAULT_MAX_RECORDS: u32 = 128;
    /// The widest window a configuration may ask for: what a power cut may lose stays small.
    pub const LIMIT_MAX_DELAY: Duration = Duration::from_secs(1);
    pub const LIMIT_MAX_RECORDS: u32 = 10_000;

    /// The default batched mode.
    pub fn batched() -> Durability {
        Durability::Batched {
            max_delay: Self::DEFAULT_MAX_DELAY,
            max_records: Self::DEFAULT_MAX_RECORDS,
        }
    }

    /// `"sync"` or `"batched"`: the stable code shared by the CLI, the audit log and the UI.
    pub fn code(self) -> &'static str {
        match self {
            Durability::Sync => "sync",
            Durability::Batched { .. } => "batched",
        }
    }

    /// The stricter of two: `Sync` over any batched mode, else the smaller delay and the
    /// smaller record count.
    pub fn strictest(self, other: Durability) -> Durability {
        match (self, other) {
            (Durability::Sync, _) | (_, Durability::Sync) => Durability::Sync,
            (
                Durability::Batched {
                    max_delay: a,
                    max_records: m,
                },
                Durability::Batched {
                    max_delay: b,
                    max_records: n,
                },
            ) => Durability::Batched {
                max_delay: a.min(b),
                max_records: m.min(n),
            },
        }
    }

    /// Why this mode cannot be used, if it cannot (a zero or too wide window).
    pub fn problem(self) -> Option<String> {
        match self {
            Durability::Sync => None,
            Durability::Batched {
                max_delay,
                max_records,
            } => {
                if max_delay.is_zero() || max_delay > Self::LIMIT_MAX_DELAY {
                    Some(format!(
                        "the flush delay must be from 1 to {} ms, not {} ms",
                        Self::LIMIT_MAX_DELAY.as_millis(),
                        max_delay.as_millis()
                    ))
                } else if max_records == 0 || max_records > Self::LIMIT_MAX_RECORDS {
                    Some(format!(
                        "the flush record count must be from 1 to {}, not {max_records}",
                        Self::LIMIT_MAX_RECORDS
                    ))
                } else {
                    None
                }
            }
        }
    }
}

impl Serialize for Durability {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        match self {
            Durability::Sync => {
                let mut s = serializer.serialize_struct("Durability", 1)?;
                s.serialize_field("mode", "sync")?;
                s.end()
            }
            Durability::Batched {
                max_delay,
                max_records,
            } => {
                let mut s = serializer.serialize_struct("Durability", 3)?;
                s.serialize_field("mode", "batched")?;
                s.serialize_field("flush_ms", &(max_delay.as_millis() as u64))?;
                s.serialize_field("flush_records", max_records)?;
                s.end()
            }
        }
    }
}

/// Makes what was written to the log file durable: [`Fdatasync`] (`File::sync_data`) unless
/// another is passed to [`AuditLog::open_with_syncer`](crate::AuditLog::open_with_syncer).
/// The seam exists so a test can have the disk fail the way a real one does (an `fdatasync`
/// that returns an error) and see what the log records about it. Only the log file's syncs go
/// through it (the flusher's, a sync-mode append's, a repair's); the head and marker files are
/// synced directly.
///
/// It is also told when each step of a rotation is done ([`Syncer::rotation_step`]), so a test
/// can kill the process between any two steps and see that nothing is lost.
pub trait Syncer: fmt::Debug + Send + Sync {
    fn sync_data(&self, file: &File) -> io::Result<()>;

    /// Called after each step of a rotation (the real one does nothing).
    fn rotation_step(&self, _step: RotationStep) {}
}

/// The steps of a rotation, in order (see the crate docs, "Segments").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RotationStep {
    /// The active file was flushed: every record in it is on stable storage.
    Sealed,
    /// `<log>.rotating` holds the `audit_rotated` record, flushed.
    NextWritten,
    /// The active file has its segment name too (a hard link), flushed.
    Linked,
    /// `<log>.rotating` was renamed over the log: the new active file is in place.
    Renamed,
    /// The head anchors the `audit_rotated` record.
    HeadWritten,
}

impl RotationStep {
    pub const ALL: [RotationStep; 5] = [
        RotationStep::Sealed,
        RotationStep::NextWritten,
        RotationStep::Linked,
        RotationStep::Renamed,
        RotationStep::HeadWritten,
    ];

    pub fn code(self) -> &'static str {
        match self {
            RotationStep::Sealed => "sealed",
            RotationStep::NextWritten => "next_written",
            RotationStep::Linked => "linked",
            RotationStep::Renamed => "renamed",
            RotationStep::HeadWritten => "head_written",
        }
    }
}

/// The real [`Syncer`]: `fdatasync` (`File::sync_data`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Fdatasync;

impl Syncer for Fdatasync {
    fn sync_data(&self, file: &File) -> io::Result<()> {
        file.sync_data()
    }
}

/// The running system's boot id (Linux), or `None` where there is none: then no markers are
/// written and a power cut in the batched mode cannot be told apart afterwards.
pub(crate) fn boot_id() -> Option<String> {
    let text = fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = text.trim();
    (!id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-'))
        .then(|| id.to_string())
}

/// What a marker file says.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MarkerFile {
    boot_id: String,
    pid: u32,
    flush_ms: u64,
    flush_records: u32,
    /// A flush of this writer failed: what it wrote after `durable_seq` may never reach the
    /// disk. Written only when true, so other markers read as they always did.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    flush_failed: bool,
    /// The last seq this writer's own flushes made durable, when it had flushed at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    durable_seq: Option<u64>,
}

impl MarkerFile {
    /// The marker of this process for a batched `durability`; `None` for the sync mode.
    fn new(boot_id: &str, durability: Durability) -> Option<MarkerFile> {
        let Durability::Batched {
            max_delay,
            max_records,
        } = durability
        else {
            return None;
        };
        Some(MarkerFile {
            boot_id: boot_id.to_string(),
            pid: std::process::id(),
            flush_ms: max_delay.as_millis() as u64,
            flush_records: max_records,
            flush_failed: false,
            durable_seq: None,
        })
    }
}

/// Distinguishes the markers (and private head files) of several handles in one process.
static HANDLE: AtomicU64 = AtomicU64::new(0);

/// `<log>.batched-<pid>-<n>` and `<log>.head.<pid>-<n>.tmp` for one batched handle.
#[derive(Debug)]
pub(crate) struct HandleFiles {
    pub marker: PathBuf,
    pub head_temp: PathBuf,
    /// The window the marker holds while it exists (`None` before it is written and after it
    /// is removed): what a failed flush rewrites it with.
    pub marked: Option<Durability>,
}

impl HandleFiles {
    pub(crate) fn new(log: &Path) -> HandleFiles {
        let n = HANDLE.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        HandleFiles {
            marker: crate::head::sibling(log, &format!("{MARKER_INFIX}{pid}-{n}")),
            head_temp: crate::head::sibling(log, &format!(".head.{pid}-{n}.tmp")),
            marked: None,
        }
    }
}

const MARKER_INFIX: &str = ".batched-";

/// What a marker renamed after a failed flush ends with (see [`mark_flush_failed`]).
const FLUSH_FAILED_SUFFIX: &str = ".flush-failed";

/// `<path><suffix>`.
fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Writes the marker, durably (file and directory), before the handle's first batched append.
pub(crate) fn write_marker(
    path: &Path,
    log: &Path,
    boot_id: &str,
    durability: Durability,
) -> io::Result<()> {
    let Some(marker) = MarkerFile::new(boot_id, durability) else {
        return Ok(());
    };
    // Written under another name and renamed, so a concurrent open never sees it half made.
    let temp = suffixed(path, ".tmp");
    write_synced(
        &temp,
        &serde_json::to_vec(&marker).expect("a marker serializes"),
    )?;
    fs::rename(&temp, path)?;
    sync_dir(log)
}

/// Says in the marker at `path` (holding `window`) that a flush of its writer failed, with the
/// last seq its flushes made durable. Called once, on the first failed flush; the writer never
/// flushes or removes its marker again.
///
/// The disk that just failed a flush is likely to fail this too, so there are two ways, the
/// second needing no data block: the marker is rewritten (a temp file renamed over it), else
/// renamed to `<marker>.flush-failed`. Neither needs its flush to succeed: an open on this boot
/// reads what the OS holds, and on another boot any marker, even an empty one, is reported
/// already. When both fail the error is returned and the marker is left as it was.
pub(crate) fn mark_flush_failed(
    path: &Path,
    log: &Path,
    boot_id: &str,
    window: Durability,
    durable_seq: Option<u64>,
) -> io::Result<()> {
    let Some(mut marker) = MarkerFile::new(boot_id, window) else {
        return Ok(());
    };
    marker.flush_failed = true;
    marker.durable_seq = durable_seq;
    let bytes = serde_json::to_vec(&marker).expect("a marker serializes");
    let temp = suffixed(path, ".tmp");
    let rewritten = private_file_options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&temp)
        .and_then(|mut file| {
            file.write_all(&bytes)?;
            // Best effort: see above.
            let _ = file.sync_all();
            Ok(())
        })
        .and_then(|()| fs::rename(&temp, path));
    let marked = match rewritten {
        Ok(()) => Ok(()),
        Err(_) => {
            let _ = fs::remove_file(&temp);
            fs::rename(path, suffixed(path, FLUSH_FAILED_SUFFIX))
        }
    };
    let _ = sync_dir(log);
    marked
}

/// A marker whose records may be missing: left by a batched writer of another boot (the
/// machine stopped while that writer may have had records the disk never got), or by one whose
/// flush failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StaleMarker {
    pub path: PathBuf,
    pub flush_ms: u64,
    pub flush_records: u32,
    /// The writer's flush failed (what the marker says, or its `.flush-failed` name).
    pub flush_failed: bool,
    /// The last seq that writer made durable, when its marker says.
    pub durable_seq: Option<u64>,
    /// The writer's private head file, removed with a failed writer's marker.
    pub head_temp: PathBuf,
}

/// The markers next to `log` that say records may be missing: markers of another boot (or
/// unreadable ones: a power cut can leave a marker empty), and markers of any boot that say a
/// flush failed. Markers of this boot whose process is gone and that say nothing of a failed
/// flush are removed when `tidy` (only the process died, which loses nothing), and so are
/// their private head files.
pub(crate) fn stale_markers(
    log: &Path,
    boot_id: Option<&str>,
    tidy: bool,
) -> io::Result<Vec<StaleMarker>> {
    let Some(boot_id) = boot_id else {
        return Ok(Vec::new());
    };
    let dir = match log.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let Some(log_name) = log.file_name().and_then(|n| n.to_str()) else {
        return Ok(Vec::new());
    };
    let prefix = format!("{log_name}{MARKER_INFIX}");
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut stale = Vec::new();
    // Bounded: a directory flooded with marker-like names cannot stall an open.
    for entry in entries.take(10_000) {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(id) = name
            .strip_prefix(&prefix)
            .filter(|id| !id.ends_with(".tmp"))
        else {
            continue;
        };
        let (id, renamed) = match id.strip_suffix(FLUSH_FAILED_SUFFIX) {
            Some(id) => (id, true),
            None => (id, false),
        };
        let path = entry.path();
        let head_temp = crate::head::sibling(log, &format!(".head.{id}.tmp"));
        let marker = read_marker(&path);
        match marker {
            Some(m) if m.boot_id == boot_id && !m.flush_failed && !renamed => {
                if tidy && !process_alive(m.pid) {
                    let _ = fs::remove_file(&path);
                    let _ = fs::remove_file(&head_temp);
                }
            }
            Some(m) => stale.push(StaleMarker {
                path,
                flush_ms: m.flush_ms,
                flush_records: m.flush_records,
                flush_failed: m.flush_failed || renamed,
                durable_seq: m.durable_seq,
                head_temp,
            }),
            None => stale.push(StaleMarker {
                path,
                flush_ms: Durability::LIMIT_MAX_DELAY.as_millis() as u64,
                flush_records: Durability::LIMIT_MAX_RECORDS,
                flush_failed: renamed,
                durable_seq: None,
                head_temp,
            }),
        }
    }
    stale.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(stale)
}

fn read_marker(path: &Path) -> Option<MarkerFile> {
    let mut bytes = Vec::new();
    File::open(path)
        .ok()?
        .take(4096)
        .read_to_end(&mut bytes)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn process_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stricter_mode_wins() {
        let wide = Durability::Batched {
            max_delay: Duration::from_millis(200),
            max_records: 64,
        };
        let narrow = Durability::Batched {
            max_delay: Duration::from_millis(20),
            max_records: 512,
        };
        assert_eq!(
            wide.strictest(narrow),
            Durability::Batched {
                max_delay: Duration::from_millis(20),
                max_records: 64
            }
        );
        assert_eq!(wide.strictest(Durability::Sync), Durability::Sync);
        assert_eq!(Durability::Sync.strictest(narrow), Durability::Sync);
    }

    #[test]
    fn windows_outside_the_limits_are_refused() {
        assert_eq!(Durability::batched().problem(), None);
        assert_eq!(Durability::Sync.problem(), None);
        for (ms, records) in [(0, 10), (1001, 10), (10, 0), (10, 10_001)] {
            let mode = Durability::Batched {
                max_delay: Duration::from_millis(ms),
                max_records: records,
            };
            assert!(mode.problem().is_some(), "{ms} ms, {records} records");
        }
    }

    #[test]
    fn markers_of_another_boot_are_stale_and_of_a_dead_process_are_tidied() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        let ours = HandleFiles::new(&log);
        write_marker(&ours.marker, &log, "boot-a", Durability::batched()).unwrap();
        // This boot, this (live) process: kept, not stale.
        assert!(
            stale_markers(&log, Some("boot-a"), true)
                .unwrap()
                .is_empty()
        );
        assert!(ours.marker.exists());
        // Another boot: stale, with the window it wrote.
        let stale = stale_markers(&log, Some("boot-b"), true).unwrap();
        assert_eq!(
            stale,
            [StaleMarker {
                path: ours.marker.clone(),
                flush_ms: 50,
                flush_records: 128,
                flush_failed: false,
                durable_seq: None,
                head_temp: ours.head_temp.clone(),
            }]
        );
        // A dead process of this boot: removed, with its private head file.
        let dead = crate::head::sibling(&log, ".batched-4294967294-0");
        fs::write(
            &dead,
            r#"{"boot_id":"boot-a","pid":4294967294,"flush_ms":50,"flush_records":128}"#,
        )
        .unwrap();
        let dead_head = crate::head::sibling(&log, ".head.4294967294-0.tmp");
        fs::write(&dead_head, "x").unwrap();
        assert!(
            stale_markers(&log, Some("boot-a"), true)
                .unwrap()
                .is_empty()
        );
        assert!(!dead.exists() && !dead_head.exists());
        // An empty marker (a power cut before its bytes reached the disk) counts as stale,
        // with the widest window.
        fs::write(&ours.marker, "").unwrap();
        let stale = stale_markers(&log, Some("boot-a"), true).unwrap();
        assert_eq!(stale.len(), 1);
        assert_eq!(stale[0].flush_records, Durability::LIMIT_MAX_RECORDS);
        // Without a boot id nothing can be told.
        assert!(stale_markers(&log, None, true).unwrap().is_empty());
    }

    #[test]
    fn a_marker_that_says_a_flush_failed_is_stale_on_this_boot_too() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        let ours = HandleFiles::new(&log);
        write_marker(&ours.marker, &log, "boot-a", Durability::batched()).unwrap();
        mark_flush_failed(&ours.marker, &log, "boot-a", Durability::batched(), Some(7)).unwrap();
        // This boot, a live process: stale all the same, and never tidied.
        let stale = stale_markers(&log, Some("boot-a"), true).unwrap();
        assert_eq!(stale.len(), 1);
        assert!(stale[0].flush_failed);
        assert_eq!(stale[0].durable_seq, Some(7));
        assert_eq!(stale[0].head_temp, ours.head_temp);
        // A dead process of this boot whose marker was renamed (the rewrite failed): stale,
        // with its head file named by its id.
        let renamed = crate::head::sibling(&log, ".batched-4294967294-3.flush-failed");
        fs::write(
            &renamed,
            r#"{"boot_id":"boot-a","pid":4294967294,"flush_ms":50,"flush_records":128}"#,
        )
        .unwrap();
        let stale = stale_markers(&log, Some("boot-a"), true).unwrap();
        assert_eq!(stale.len(), 2);
        let other = stale.iter().find(|m| m.path == renamed).unwrap();
        assert!(other.flush_failed);
        assert_eq!(other.durable_seq, None);
        assert_eq!(
            other.head_temp,
            crate::head::sibling(&log, ".head.4294967294-3.tmp")
        );
        assert!(renamed.exists() && ours.marker.exists());
    }
}
