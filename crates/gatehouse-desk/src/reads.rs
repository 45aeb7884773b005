//! The last few resource reads, kept in Rust so the window can save a binary item without
//! ever rendering it: a read returns a `read_id` next to its [`ReadView`], and
//! [`Desk::save_read`] writes one item's decoded bytes into the user's download directory
//! (which the shell resolves and passes in with [`Desk::set_download_dir`]). The shelf is
//! small and bounded ([`SHELF_SIZE`] reads); an older read must be read again.
//!
//! A saved file is named after the last path segment of the item's URI reduced to
//! `[A-Za-z0-9._-]` (no leading dots; `resource.bin` when nothing is left), never replaces a
//! file that exists (` (2)`, ` (3)`, … are added) and appears whole or not at all (written to
//! a temporary file, then linked into place).

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

use super::{Desk, DeskError};
use gatehouse_host::ErrorCode;
use gatehouse_host::content::{ContentView, Display, decode};
use gatehouse_host::host::context::{ReadTarget, ReadView};

/// How many reads the shelf keeps; the oldest goes first.
pub const SHELF_SIZE: usize = 8;

/// The file name used when a URI gives nothing usable.
pub const FALLBACK_NAME: &str = "resource.bin";

/// Longest file name (in bytes, all ASCII) derived from a URI, before any ` (N)`.
const MAX_NAME: usize = 120;

/// Most ` (N)` variants tried before giving up.
const MAX_VARIANTS: u32 = 10_000;

/// A read as the window gets it: the view and the id to save its items by.
#[derive(Debug, Clone, Serialize)]
pub struct ShelvedRead {
    #[serde(rename = "readId")]
    pub read_id: u64,
    #[serde(flatten)]
    pub view: ReadView,
}

struct Kept {
    id: u64,
    uri: String,
    items: Vec<ContentView>,
}

#[derive(Default)]
struct Shelf {
    next: u64,
    kept: VecDeque<Kept>,
    downloads: Option<PathBuf>,
}

/// The bounded shelf of recent reads, and where saves go.
#[derive(Default)]
pub struct ReadShelf {
    inner: Mutex<Shelf>,
}

impl ReadShelf {
    pub fn new() -> ReadShelf {
        ReadShelf::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shelf> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `view`'s items; returns the id to save them by.
    pub fn keep(&self, view: &ReadView) -> u64 {
        let mut shelf = self.lock();
        shelf.next += 1;
        let id = shelf.next;
        shelf.kept.push_back(Kept {
            id,
            uri: view.uri.clone(),
            items: view.contents.clone(),
        });
        while shelf.kept.len() > SHELF_SIZE {
            shelf.kept.pop_front();
        }
        id
    }

    pub fn set_download_dir(&self, dir: PathBuf) {
        self.lock().downloads = Some(dir);
    }

    pub fn download_dir(&self) -> Option<PathBuf> {
        self.lock().downloads.clone()
    }

    /// The file name and decoded bytes of item `index` of read `read_id`: binaries and
    /// images only (text is shown, not saved).
    pub fn item(&self, read_id: u64, index: usize) -> Result<(String, Vec<u8>), DeskError> {
        let shelf = self.lock();
        let kept = shelf
            .kept
            .iter()
            .find(|k| k.id == read_id)
            .ok_or_else(|| {
                DeskError::new(
                    ErrorCode::ReadNotKept,
                    format!(
                        "read {read_id} is no longer kept (Gatehouse keeps the last {SHELF_SIZE} reads); read the resource again, then save"
                    ),
                )
            })?;
        let item = kept.items.get(index).ok_or_else(|| {
            DeskError::new(
                ErrorCode::ReadItemMissing,
                format!(
                    "read {read_id} has {} item(s); there is no item {index}",
                    kept.items.len()
                ),
            )
        })?;
        let data = match &item.display {
            Display::Binary { base64, .. } | Display::Image { base64, .. } => base64,
            Display::Text { .. } => {
                return Err(DeskError::new(
                    ErrorCode::NotBinary,
                    format!("item {index} of read {read_id} is text; only binary content is saved"),
                ));
            }
        };
        let bytes = decode(data)
            .map_err(|fault| DeskError::new(fault.into(), "the item's data is not valid base64"))?;
        let uri = if item.uri.is_empty() {
            &kept.uri
        } else {
            &item.uri
        };
        Ok((file_name(uri), bytes))
    }
}

/// A file name from the last path segment of `uri` (query and fragment dropped), reduced to
/// `[A-Za-z0-9._-]` without leading dots, at most [`MAX_NAME`] bytes; [`FALLBACK_NAME`] when
/// nothing is left.
pub fn file_name(uri: &str) -> String {
    let path = uri.split(['?', '#']).next().unwrap_or_default();
    let segment = path.rsplit('/').next().unwrap_or_default();
    let reduced: String = segment
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .collect();
    let mut name = reduced.trim_start_matches('.').to_string();
    name.truncate(MAX_NAME);
    if name.is_empty() {
        FALLBACK_NAME.to_string()
    } else {
        name
    }
}

/// `name`, then `stem (2).ext`, `stem (3).ext`, …
fn variant(name: &str, n: u32) -> String {
    if n < 2 {
        return name.to_string();
    }
    match name.rfind('.') {
        Some(dot) if dot > 0 => format!("{} ({n}){}", &name[..dot], &name[dot..]),
        _ => format!("{name} ({n})"),
    }
}

/// Writes `bytes` into `dir` as `name` (or the first free ` (N)` variant), atomically and
/// never over an existing file; returns the path written.
pub fn save_new(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    gatehouse_host::files::write_new(dir, (1..=MAX_VARIANTS).map(|n| variant(name, n)), bytes)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => std::io::Error::new(
                e.kind(),
                format!("{name} and {MAX_VARIANTS} variants of it exist already"),
            ),
            _ => e,
        })
}

impl Desk {
    /// Where [`Desk::save_read`] writes (the shell's download directory).
    pub fn set_download_dir(&self, dir: PathBuf) {
        self.reads.set_download_dir(dir);
    }

    /// Reads a resource by `uri`, or a template with `values` for its variables (exactly one
    /// of `uri` and `template`), and keeps the result on the shelf for saving.
    pub async fn read(
        &self,
        server: &str,
        uri: Option<String>,
        template: Option<String>,
        values: Option<BTreeMap<String, String>>,
    ) -> Result<ShelvedRead, DeskError> {
        let target = match (uri, template) {
            (Some(uri), None) if values.is_none() => ReadTarget::Uri(uri),
            (None, Some(uri_template)) => ReadTarget::Template {
                uri_template,
                values: values.unwrap_or_default(),
            },
            _ => {
                return Err(DeskError::new(
                    ErrorCode::ReadTargetInvalid,
                    "give either a uri, or a template with values for its variables",
                ));
            }
        };
        let view = self.host.read_resource(server, target).await?;
        let read_id = self.reads.keep(&view);
        Ok(ShelvedRead { read_id, view })
    }

    /// Saves item `index` of read `read_id` into the download directory; returns the path.
    pub async fn save_read(&self, read_id: u64, index: usize) -> Result<PathBuf, DeskError> {
        let (name, bytes) = self.reads.item(read_id, index)?;
        let dir = self.reads.download_dir().ok_or_else(|| {
            DeskError::new(
                ErrorCode::NoDownloadDir,
                "Gatehouse found no download directory to save into",
            )
        })?;
        tokio::task::spawn_blocking(move || {
            save_new(&dir, &name, &bytes).map_err(|e| {
                DeskError::new(
                    ErrorCode::SaveFailed,
                    format!("could not save {name} in {}: {e}", dir.display()),
                )
            })
        })
        .await
        .map_err(|e| DeskError::new(ErrorCode::SaveFailed, e.to_string()))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_last_segment_reduced_to_a_safe_alphabet() {
        for (uri, name) in [
            ("demo://data/sample.bin", "sample.bin"),
            ("demo://images/logo.png?size=16#top", "logo.png"),
            ("file:///etc/../../passwd", "passwd"),
            ("demo://x/..", FALLBACK_NAME),
            ("demo://x/.bashrc", "bashrc"),
            ("demo://x/a b<c>|d.txt", "abcd.txt"),
            ("demo://x/", FALLBACK_NAME),
            ("", FALLBACK_NAME),
            ("demo://x/ünï.bin", "n.bin"),
            ("demo://x/..\\..\\evil.exe", "evil.exe"),
        ] {
            assert_eq!(file_name(uri), name, "{uri}");
        }
        assert_eq!(
            file_name(&format!("demo://x/{}", "a".repeat(500))).len(),
            MAX_NAME
        );
        assert_eq!(variant("sample.bin", 1), "sample.bin");
        assert_eq!(variant("sample.bin", 2), "sample (2).bin");
        assert_eq!(variant("resource", 3), "resource (3)");
    }

    #[test]
    fn saving_never_overwrites_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let downloads = dir.path().join("Downloads");
        let first = save_new(&downloads, "sample.bin", b"one").unwrap();
        let second = save_new(&downloads, "sample.bin", b"two").unwrap();
        let third = save_new(&downloads, "sample.bin", b"three").unwrap();
        assert_eq!(first, downloads.join("sample.bin"));
        assert_eq!(second, downloads.join("sample (2).bin"));
        assert_eq!(third, downloads.join("sample (3).bin"));
        assert_eq!(std::fs::read(&first).unwrap(), b"one");
        assert_eq!(std::fs::read(&second).unwrap(), b"two");
        let mut names: Vec<_> = std::fs::read_dir(&downloads)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["sample (2).bin", "sample (3).bin", "sample.bin"]);
    }

    fn view(uri: &str, contents: Vec<ContentView>) -> ReadView {
        use gatehouse_host::consent::{ClaimedNames, IdentityBanner};
        let banner = IdentityBanner {
            server: "s".into(),
            status: gatehouse_host::Status::Admitted,
            verified_id: None,
            clearance: None,
            signer: None,
            bundle: None,
            attested_by: None,
            established: None,
            demo: false,
            origin: None,
            command: None,
            claimed: ClaimedNames {
                publisher: None,
                server_name: None,
                server_version: None,
            },
        };
        ReadView {
            sender: gatehouse_host::host::context::Sender {
                server: "s".into(),
                banner,
            },
            uri: uri.into(),
            result: rmcp::model::ReadResourceResult::new(Vec::new()),
            contents,
            rounds: 1,
            elicitations: Vec::new(),
        }
    }

    #[test]
    fn the_shelf_keeps_the_last_reads_and_gives_binaries_only() {
        let shelf = ReadShelf::new();
        let binary = ContentView {
            uri: "demo://data/sample.bin".into(),
            mime: Some("application/octet-stream".into()),
            display: Display::Binary {
                size: 3,
                base64: "AAEC".into(),
                note: None,
            },
        };
        let text = ContentView {
            uri: String::new(),
            mime: None,
            display: Display::Text { text: "hi".into() },
        };
        let first = shelf.keep(&view("demo://data/sample.bin", vec![binary, text]));
        assert_eq!(
            shelf.item(first, 0).unwrap(),
            ("sample.bin".to_string(), vec![0, 1, 2])
        );
        assert_eq!(
            shelf.item(first, 1).unwrap_err().code.as_str(),
            "not_binary"
        );
        assert_eq!(
            shelf.item(first, 2).unwrap_err().code.as_str(),
            "read_item_missing"
        );
        for _ in 0..SHELF_SIZE {
            shelf.keep(&view("demo://other", Vec::new()));
        }
        assert_eq!(
            shelf.item(first, 0).unwrap_err().code.as_str(),
            "read_not_kept"
        );
        assert_eq!(shelf.lock().kept.len(), SHELF_SIZE);
    }
}
