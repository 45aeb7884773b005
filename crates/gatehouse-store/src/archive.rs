//! Reading npm tarballs and zips (wheels, `.mcpb`) into checked entries, without writing.
//!
//! Every entry is checked before anything is written: its path (see [`normalize_path`]), its
//! type (regular files and directories only), the number of entries and the sizes of the bytes
//! actually read (never the header's claim). The result is held in memory, bounded by
//! [`Limits::max_total_bytes`].

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Read};
use std::rc::Rc;

use crate::StoreError;

/// Bounds on what one install may unpack. [`Limits::default`] holds the real ones; tests
/// pass small ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Entries per archive (every header counts, directories and skipped ones too).
    pub max_entries: usize,
    /// Bytes of one unpacked file.
    pub max_file_bytes: u64,
    /// Bytes of all unpacked files of one install.
    pub max_total_bytes: u64,
    /// Bytes of one entry's path.
    pub max_path_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_entries: 100_000,
            max_file_bytes: 256 * 1024 * 1024,
            max_total_bytes: 512 * 1024 * 1024,
            max_path_bytes: 1024,
        }
    }
}

/// The kind of an artifact's archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveKind {
    /// An npm tarball: gzip'd tar whose entries share one first component (`package/`),
    /// which is stripped.
    NpmTgz,
    /// A zip: a wheel or an `.mcpb` bundle, unpacked as is.
    Zip,
}

/// One checked entry, its path normalised and relative.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    pub kind: EntryKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    Dir,
    /// A regular file; `executable` means mode 0755, else 0644 (setuid, setgid and sticky
    /// bits are never kept).
    File {
        data: Vec<u8>,
        executable: bool,
    },
}

/// Checks a path from an archive and returns it normalised: `/`-separated components, `.`
/// and empty components dropped, no trailing slash. Refuses absolute paths, `..`,
/// backslashes, NUL, other control characters, non-UTF-8 and names that normalise to
/// nothing.
pub fn normalize_path(raw: &[u8], limits: &Limits) -> Result<String, StoreError> {
    let shown = || String::from_utf8_lossy(raw).into_owned();
    let unsafe_path = |reason| StoreError::ArchiveUnsafePath {
        path: shown(),
        reason,
    };
    if raw.len() > limits.max_path_bytes {
        return Err(unsafe_path("the path is too long"));
    }
    let text = std::str::from_utf8(raw).map_err(|_| unsafe_path("the path is not UTF-8"))?;
    if text.contains('\0') {
        return Err(unsafe_path("the path contains NUL"));
    }
    // A backslash is a separator on Windows and a trap everywhere else.
    if text.contains('\\') {
        return Err(unsafe_path("the path contains a backslash"));
    }
    if text.chars().any(char::is_control) {
        return Err(unsafe_path("the path contains a control character"));
    }
    if text.starts_with('/') {
        return Err(unsafe_path("the path is absolute"));
    }
    let mut parts = Vec::new();
    for part in text.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(unsafe_path("the path contains `..`")),
            // A drive prefix (`C:`) makes a path absolute on Windows.
            p if p.len() == 2 && p.ends_with(':') && parts.is_empty() => {
                return Err(unsafe_path("the path starts with a drive prefix"));
            }
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err(unsafe_path("the path is empty"));
    }
    Ok(parts.join("/"))
}

/// Records entries and refuses duplicates, a path that is both a file and a directory, and
/// two paths that differ only in case (one file on case-insensitive file systems).
#[derive(Default)]
pub(crate) struct TreeBuilder {
    entries: BTreeMap<String, EntryKind>,
    folded: HashMap<String, String>,
    total: u64,
}

impl TreeBuilder {
    pub(crate) fn add(&mut self, entry: Entry, limits: &Limits) -> Result<(), StoreError> {
        let conflict = |reason| StoreError::ArchiveUnsafePath {
            path: entry.path.clone(),
            reason,
        };
        // Every ancestor is a directory.
        let mut end = 0;
        while let Some(i) = entry.path[end..].find('/') {
            let ancestor = &entry.path[..end + i];
            self.fold(ancestor, &entry.path)?;
            match self.entries.get(ancestor) {
                Some(EntryKind::File { .. }) => {
                    return Err(conflict("a parent of the path is a file"));
                }
                Some(EntryKind::Dir) => {}
                None => {
                    self.entries.insert(ancestor.to_owned(), EntryKind::Dir);
                }
            }
            end += i + 1;
        }
        self.fold(&entry.path, &entry.path)?;
        match (&entry.kind, self.entries.get(&entry.path)) {
            (_, None) => {}
            (EntryKind::Dir, Some(EntryKind::Dir)) => return Ok(()),
            (EntryKind::Dir, Some(EntryKind::File { .. })) => {
                return Err(conflict("the path is both a file and a directory"));
            }
            (EntryKind::File { .. }, Some(EntryKind::Dir)) => {
                return Err(conflict("the path is both a file and a directory"));
            }
            (EntryKind::File { .. }, Some(EntryKind::File { .. })) => {
                return Err(conflict("the path occurs twice"));
            }
        }
        if let EntryKind::File { data, .. } = &entry.kind {
            self.total += data.len() as u64;
            if self.total > limits.max_total_bytes {
                return Err(StoreError::ArchiveTooLarge {
                    what: "the total of unpacked files".into(),
                    limit: limits.max_total_bytes,
                });
            }
        }
        self.entries.insert(entry.path, entry.kind);
        Ok(())
    }

    fn fold(&mut self, path: &str, shown: &str) -> Result<(), StoreError> {
        let key = path.to_lowercase();
        match self.folded.get(&key) {
            Some(existing) if existing != path => Err(StoreError::ArchiveUnsafePath {
                path: shown.to_owned(),
                reason: "the path differs from another only in case",
            }),
            Some(_) => Ok(()),
            None => {
                self.folded.insert(key, path.to_owned());
                Ok(())
            }
        }
    }

    pub(crate) fn into_entries(self) -> Vec<Entry> {
        self.entries
            .into_iter()
            .map(|(path, kind)| Entry { path, kind })
            .collect()
    }
}

/// Parses and checks an npm tarball without writing anything; entries come back sorted by
/// path, the first component stripped. A fuzz target can be one call of this.
pub fn check_tgz(bytes: &[u8], limits: &Limits) -> Result<Vec<Entry>, StoreError> {
    let mut tree = TreeBuilder::default();
    read_tgz(bytes, limits, "", &mut tree)?;
    Ok(tree.into_entries())
}

/// Parses and checks a zip (wheel, `.mcpb`) without writing anything; entries come back
/// sorted by path. A fuzz target can be one call of this.
pub fn check_zip(bytes: &[u8], limits: &Limits) -> Result<Vec<Entry>, StoreError> {
    let mut tree = TreeBuilder::default();
    read_zip(bytes, limits, "", &mut tree)?;
    Ok(tree.into_entries())
}

fn join(prefix: &str, path: String) -> String {
    if prefix.is_empty() {
        path
    } else {
        format!("{prefix}/{path}")
    }
}

fn malformed(detail: impl std::fmt::Display) -> StoreError {
    StoreError::ArchiveMalformed {
        detail: detail.to_string(),
    }
}

fn too_large_file(path: &str, limits: &Limits) -> StoreError {
    StoreError::ArchiveTooLarge {
        what: format!("file {path:?}"),
        limit: limits.max_file_bytes,
    }
}

/// Reads at most `limit + 1` bytes, so an over-long stream is seen without reading it all.
fn read_bounded(reader: &mut impl Read, limit: u64) -> io::Result<Vec<u8>> {
    let mut data = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut data)?;
    Ok(data)
}

/// Caps the bytes gunzipped, whatever the tar headers claim (long names, pax records and
/// skipped data included), and remembers that the cap was hit.
struct CappedReader<R> {
    inner: R,
    left: u64,
    hit: Rc<Cell<bool>>,
}

impl<R: Read> Read for CappedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            self.hit.set(true);
            return Err(io::Error::other("decompressed size limit reached"));
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

pub(crate) fn read_tgz(
    bytes: &[u8],
    limits: &Limits,
    prefix: &str,
    tree: &mut TreeBuilder,
) -> Result<(), StoreError> {
    let hit = Rc::new(Cell::new(false));
    // Headers and padding take at most two 512-byte blocks per entry besides long names,
    // which are bounded by the path limit.
    let overhead =
        (limits.max_entries as u64).saturating_mul(3 * 512 + limits.max_path_bytes as u64);
    let capped = CappedReader {
        inner: flate2::read::GzDecoder::new(bytes),
        left: limits.max_total_bytes.saturating_add(overhead),
        hit: Rc::clone(&hit),
    };
    let io_error = |e: io::Error| {
        if hit.get() {
            StoreError::ArchiveTooLarge {
                what: "the decompressed tarball".into(),
                limit: limits.max_total_bytes,
            }
        } else {
            malformed(format_args!("tarball: {e}"))
        }
    };
    let mut archive = tar::Archive::new(capped);
    let mut count = 0usize;
    for entry in archive.entries().map_err(io_error)? {
        let mut entry = entry.map_err(io_error)?;
        count += 1;
        if count > limits.max_entries {
            return Err(StoreError::ArchiveTooLarge {
                what: "the number of entries".into(),
                limit: limits.max_entries as u64,
            });
        }
        let header_type = entry.header().entry_type();
        // Global pax headers carry metadata the reader ignores; they name no file.
        if header_type == tar::EntryType::XGlobalHeader {
            continue;
        }
        let raw = entry.path_bytes().into_owned();
        let full = normalize_path(&raw, limits)?;
        let shown = String::from_utf8_lossy(&raw).into_owned();
        // npm strips the first component (`package/`) whatever it is called.
        let path = full.split_once('/').map(|(_, rest)| rest.to_owned());
        let kind = match header_type {
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let Some(path) = path else {
                    return Err(StoreError::ArchiveUnsafePath {
                        path: shown,
                        reason: "a file outside the package directory",
                    });
                };
                let data = read_bounded(&mut entry, limits.max_file_bytes).map_err(io_error)?;
                if data.len() as u64 > limits.max_file_bytes {
                    return Err(too_large_file(&path, limits));
                }
                let mode = entry.header().mode().map_err(io_error)?;
                tree.add(
                    Entry {
                        path: join(prefix, path),
                        kind: EntryKind::File {
                            data,
                            executable: mode & 0o111 != 0,
                        },
                    },
                    limits,
                )?;
                continue;
            }
            tar::EntryType::Directory => {
                if let Some(path) = path {
                    tree.add(
                        Entry {
                            path: join(prefix, path),
                            kind: EntryKind::Dir,
                        },
                        limits,
                    )?;
                }
                continue;
            }
            tar::EntryType::Symlink => Err("symbolic link"),
            tar::EntryType::Link => Err("hard link"),
            tar::EntryType::Char => Ok("character device"),
            tar::EntryType::Block => Ok("block device"),
            tar::EntryType::Fifo => Ok("FIFO"),
            _ => Ok("entry of an unsupported type"),
        };
        return Err(match kind {
            Err(kind) => StoreError::ArchiveLink { path: shown, kind },
            Ok(kind) => StoreError::ArchiveEntryType { path: shown, kind },
        });
    }
    Ok(())
}

const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;
const S_IFDIR: u32 = 0o040000;
const S_IFLNK: u32 = 0o120000;

pub(crate) fn read_zip(
    bytes: &[u8],
    limits: &Limits,
    prefix: &str,
    tree: &mut TreeBuilder,
) -> Result<(), StoreError> {
    let mut archive = zip::ZipArchive::new(io::Cursor::new(bytes))
        .map_err(|e| malformed(format_args!("zip: {e}")))?;
    if archive.len() > limits.max_entries {
        return Err(StoreError::ArchiveTooLarge {
            what: "the number of entries".into(),
            limit: limits.max_entries as u64,
        });
    }
    for i in 0..archive.len() {
        let mut file = archive
            .by_index(i)
            .map_err(|e| malformed(format_args!("zip entry {i}: {e}")))?;
        let raw = file.name_raw().to_vec();
        let shown = String::from_utf8_lossy(&raw).into_owned();
        let path = normalize_path(&raw, limits)?;
        let mode = file.unix_mode();
        let file_type = mode.map(|m| m & S_IFMT).filter(|t| *t != 0);
        let is_dir = raw.ends_with(b"/");
        match file_type {
            None => {}
            Some(S_IFREG) if !is_dir => {}
            Some(S_IFDIR) if is_dir => {}
            Some(S_IFLNK) => {
                return Err(StoreError::ArchiveLink {
                    path: shown,
                    kind: "symbolic link",
                });
            }
            Some(S_IFREG | S_IFDIR) => {
                return Err(malformed(format_args!(
                    "zip entry {shown:?}: its mode and its name disagree on whether it is a directory"
                )));
            }
            Some(_) => {
                return Err(StoreError::ArchiveEntryType {
                    path: shown,
                    kind: "special file (device, FIFO or socket)",
                });
            }
        }
        if is_dir {
            tree.add(
                Entry {
                    path: join(prefix, path),
                    kind: EntryKind::Dir,
                },
                limits,
            )?;
            continue;
        }
        let declared = file.size();
        if declared > limits.max_file_bytes {
            return Err(too_large_file(&path, limits));
        }
        // The bytes actually inflated are what count: a declared size can lie.
        let data = read_bounded(&mut file, limits.max_file_bytes)
            .map_err(|e| malformed(format_args!("zip entry {shown:?}: {e}")))?;
        if data.len() as u64 > limits.max_file_bytes {
            return Err(too_large_file(&path, limits));
        }
        if data.len() as u64 != declared {
            return Err(malformed(format_args!(
                "zip entry {shown:?} declares {declared} bytes but holds {}",
                data.len()
            )));
        }
        tree.add(
            Entry {
                path: join(prefix, path),
                kind: EntryKind::File {
                    data,
                    executable: mode.is_some_and(|m| m & 0o111 != 0),
                },
            },
            limits,
        )?;
    }
    Ok(())
}
