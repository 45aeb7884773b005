//! The content-addressed store: `<root>/<key>/manifest.json` and `<root>/<key>/tree/…`,
//! installed atomically (a temporary directory under the root, fsync'd, renamed into place in
//! one step) and checked against its manifest before each launch.
//!
//! Several processes share one store (the CLI and the desktop app): installs and removals take
//! an advisory lock on `<root>/.lock`, and leftovers of unfinished installs are removed only
//! while holding it, so one process never removes another's install in progress. Reading
//! (`contains`, `verify`) takes no lock: an entry appears and disappears only by one rename.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{ErrorKind, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::archive::{EntryKind, TreeBuilder, read_tgz, read_zip};
use crate::{ArchiveKind, Change, Limits, StoreError, normalize_path, verify_artifact};

/// Names of in-progress installs start with this; an entry name never does (keys are hex).
const TEMP_PREFIX: &str = ".tmp-";
/// The advisory lock file; never an entry (keys are hex) nor a leftover (no temp prefix).
const LOCK: &str = ".lock";
const MANIFEST: &str = "manifest.json";
const TREE: &str = "tree";
const MANIFEST_VERSION: u32 = 1;

/// One artifact of a closure, fetched but not yet trusted.
#[derive(Debug, Clone, Copy)]
pub struct Artifact<'a> {
    /// Where in the tree it is unpacked (`""` for the top, `node_modules/left-pad` for an npm
    /// dependency); checked like an archive path.
    pub dest: &'a str,
    pub kind: ArchiveKind,
    /// `sha512-<base64>` or `sha256:<hex>`, from the signed binding.
    pub expected: &'a str,
    pub bytes: &'a [u8],
}

/// The record of every file of an installed tree, sorted by path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub version: u32,
    pub files: Vec<ManifestFile>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestFile {
    /// Relative to the tree, `/`-separated.
    pub path: String,
    pub size: u64,
    /// Lower-case hex.
    pub sha256: String,
    /// Mode 0755 when true, else 0644.
    pub executable: bool,
}

/// A store rooted at one directory.
#[derive(Debug)]
pub struct Store {
    root: PathBuf,
    limits: Limits,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Store {
    /// Opens (creating) the store with the real limits and removes leftovers of installs that
    /// did not finish (a crash between unpacking and the rename), when no other install holds
    /// the store's lock; it never waits for the lock (an install in progress elsewhere keeps
    /// its temporary directory, and the next install cleans up instead).
    pub fn open(root: impl Into<PathBuf>) -> Result<Store, StoreError> {
        Store::open_with_limits(root, Limits::default())
    }

    /// As [`Store::open`], with other limits (tests).
    pub fn open_with_limits(root: impl Into<PathBuf>, limits: Limits) -> Result<Store, StoreError> {
        let root = root.into();
        create_dir_all(&root)?;
        let store = Store { root, limits };
        // Every install creates the lock file before writing anything, so without one there
        // is nothing to clean (opening never creates it: a store nothing was installed into
        // stays empty). A store whose lock file cannot be opened (a read-only, pre-seeded
        // one) can still be verified and launched from; an install would say what is wrong.
        if let Ok(file) = File::open(store.root.join(LOCK)) {
            match file.try_lock() {
                Ok(()) => store.remove_leftovers()?,
                // Another process is installing: its temporary directory is not a leftover.
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(e)) if e.kind() == ErrorKind::Unsupported => {}
                Err(TryLockError::Error(e)) => {
                    return Err(StoreError::StoreIo {
                        path: store.root.join(LOCK),
                        source: e,
                    });
                }
            }
        }
        Ok(store)
    }

    /// Removes every temporary directory in the root. Only called while holding the lock
    /// exclusively, so none of them belongs to an install in progress.
    fn remove_leftovers(&self) -> Result<(), StoreError> {
        for dirent in fs::read_dir(&self.root).map_err(StoreError::io(&self.root))? {
            let dirent = dirent.map_err(StoreError::io(&self.root))?;
            if dirent
                .file_name()
                .to_string_lossy()
                .starts_with(TEMP_PREFIX)
            {
                remove_any(&dirent.path())?;
            }
        }
        Ok(())
    }

    /// The lock file, created if missing and opened anew each time: `flock`-style locks
    /// belong to one open file, so two `Store` values (or two threads) exclude each other
    /// just as two processes do.
    fn lock_file(&self) -> Result<File, StoreError> {
        let path = self.root.join(LOCK);
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            // An existing lock file in a directory this user may not write still locks.
            .or_else(|e| File::open(&path).map_err(|_| e))
            .map_err(StoreError::io(&path))
    }

    /// Waits for the store's lock, held until the returned file is dropped (or the process
    /// ends). `None` where the platform has no file locks: installing still works there
    /// (the rename is atomic and a lost race verifies the winner's entry), but nothing is
    /// cleaned, because a temporary directory might be another install's.
    fn lock_exclusive(&self) -> Result<Option<File>, StoreError> {
        let file = self.lock_file()?;
        match file.lock() {
            Ok(()) => Ok(Some(file)),
            Err(e) if e.kind() == ErrorKind::Unsupported => Ok(None),
            Err(e) => Err(StoreError::StoreIo {
                path: self.root.join(LOCK),
                source: e,
            }),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The installed tree of `key` (where modules come from at launch). It does not check it:
    /// call [`Store::verify`] first.
    pub fn tree_path(&self, key: &str) -> Result<PathBuf, StoreError> {
        Ok(self.entry_path(key)?.join(TREE))
    }

    /// Whether `key` is installed (its directory exists; not whether it is intact).
    pub fn contains(&self, key: &str) -> Result<bool, StoreError> {
        Ok(self.entry_path(key)?.is_dir())
    }

    fn entry_path(&self, key: &str) -> Result<PathBuf, StoreError> {
        if key.len() != 64 || !key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(StoreError::StoreKeyInvalid {
                key: key.to_owned(),
            });
        }
        Ok(self.root.join(key))
    }

    /// Installs a closure under `key`: verifies every artifact's hash, then checks every
    /// archive, before anything is written; unpacks into a temporary directory, writes the
    /// manifest, fsyncs, and renames it to `<root>/<key>`, holding the store's lock from the
    /// check for an installed entry to the rename. An entry already installed (or installed
    /// by another process while this one waited for the lock) is verified instead and its
    /// manifest returned.
    pub fn install(&self, key: &str, artifacts: &[Artifact<'_>]) -> Result<Manifest, StoreError> {
        let entry = self.entry_path(key)?;
        if entry.is_dir() {
            return self.verify(key);
        }
        for artifact in artifacts {
            verify_artifact(artifact.bytes, artifact.expected)?;
        }
        let mut tree = TreeBuilder::default();
        for artifact in artifacts {
            let dest = if artifact.dest.is_empty() {
                String::new()
            } else {
                normalize_path(artifact.dest.as_bytes(), &self.limits)?
            };
            match artifact.kind {
                ArchiveKind::NpmTgz => read_tgz(artifact.bytes, &self.limits, &dest, &mut tree)?,
                ArchiveKind::Zip => read_zip(artifact.bytes, &self.limits, &dest, &mut tree)?,
            }
        }
        let entries = tree.into_entries();

        // Everything above is checking bytes in memory; only the writing is serialized.
        let lock = self.lock_exclusive()?;
        if entry.is_dir() {
            return self.verify(key);
        }
        if lock.is_some() {
            self.remove_leftovers()?;
        }
        let temp = self.temp_path(key);
        let result = (|| {
            create_dir_0755(&temp)?;
            let tree_dir = temp.join(TREE);
            create_dir_0755(&tree_dir)?;
            let mut files = Vec::new();
            let mut dirs = vec![tree_dir.clone()];
            // Sorted by path, so every directory comes before what it holds.
            for entry in &entries {
                let path = tree_dir.join(&entry.path);
                match &entry.kind {
                    EntryKind::Dir => {
                        fs::create_dir(&path).map_err(StoreError::io(&path))?;
                        set_mode(&path, 0o755)?;
                        dirs.push(path);
                    }
                    EntryKind::File { data, executable } => {
                        write_new_file(&path, data, *executable)?;
                        files.push(ManifestFile {
                            path: entry.path.clone(),
                            size: data.len() as u64,
                            sha256: hex::encode(Sha256::digest(data)),
                            executable: *executable,
                        });
                    }
                }
            }
            let manifest = Manifest {
                version: MANIFEST_VERSION,
                files,
            };
            let mut json =
                serde_json::to_vec_pretty(&manifest).map_err(|e| StoreError::StoreIo {
                    path: temp.join(MANIFEST),
                    source: std::io::Error::other(e),
                })?;
            json.push(b'\n');
            write_new_file(&temp.join(MANIFEST), &json, false)?;
            dirs.push(temp.clone());
            for dir in dirs.iter().rev() {
                sync_dir(dir)?;
            }
            Ok(manifest)
        })();
        let manifest = match result {
            Ok(m) => m,
            Err(e) => {
                let _ = remove_any(&temp);
                return Err(e);
            }
        };
        if let Err(e) = fs::rename(&temp, &entry) {
            let _ = remove_any(&temp);
            // Another installer won the race: its entry is as good as ours if it verifies.
            if entry.is_dir() {
                return self.verify(key);
            }
            return Err(StoreError::StoreIo {
                path: entry,
                source: e,
            });
        }
        sync_dir(&self.root)?;
        drop(lock);
        Ok(manifest)
    }

    /// Removes the entry of `key` (for example after `store_entry_changed`, before installing
    /// it again). It is first renamed to a temporary name in one step, so a crash midway
    /// leaves a leftover that the next open removes, never a partial entry. It holds the
    /// store's lock, so no other process's cleanup races it for that temporary directory.
    pub fn remove(&self, key: &str) -> Result<(), StoreError> {
        let entry = self.entry_path(key)?;
        let _lock = self.lock_exclusive()?;
        if !entry.is_dir() {
            return Ok(());
        }
        let doomed = self.temp_path(key);
        fs::rename(&entry, &doomed).map_err(StoreError::io(&entry))?;
        sync_dir(&self.root)?;
        remove_any(&doomed)
    }

    fn temp_path(&self, key: &str) -> PathBuf {
        self.root.join(format!(
            "{TEMP_PREFIX}{key}-{}-{}",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ))
    }

    /// Walks the installed tree of `key` and compares it with its manifest: a changed, added
    /// or missing file (links and special files count as added; so does a setuid bit) is
    /// `store_entry_changed` naming the first such path in path order.
    pub fn verify(&self, key: &str) -> Result<Manifest, StoreError> {
        let entry = self.entry_path(key)?;
        if !entry.is_dir() {
            return Err(StoreError::StoreEntryMissing {
                key: key.to_owned(),
            });
        }
        let manifest_path = entry.join(MANIFEST);
        let invalid = |detail: String| StoreError::StoreManifestInvalid {
            key: key.to_owned(),
            detail,
        };
        let text = fs::read(&manifest_path).map_err(|e| invalid(e.to_string()))?;
        let manifest: Manifest =
            serde_json::from_slice(&text).map_err(|e| invalid(e.to_string()))?;
        if manifest.version != MANIFEST_VERSION {
            return Err(invalid(format!("unknown version {}", manifest.version)));
        }
        let expected: BTreeMap<&str, &ManifestFile> = manifest
            .files
            .iter()
            .map(|f| (f.path.as_str(), f))
            .collect();
        if expected.len() != manifest.files.len() {
            return Err(invalid("a path occurs twice".into()));
        }
        let mut found = BTreeMap::new();
        walk(&entry.join(TREE), "", &mut found)?;
        let changed = |path: &str, change| StoreError::StoreEntryChanged {
            key: key.to_owned(),
            path: path.to_owned(),
            change,
        };
        // Go through the union of both in path order, so the first problem named is stable.
        let mut all: Vec<&str> = expected.keys().copied().collect();
        all.extend(found.keys().map(String::as_str));
        all.sort_unstable();
        all.dedup();
        let mut to_hash = Vec::with_capacity(expected.len());
        for path in all {
            match (expected.get(path), found.get(path)) {
                (Some(_), None) => return Err(changed(path, Change::Missing)),
                (None, Some(_)) | (Some(_), Some(Found::Other)) => {
                    return Err(changed(path, Change::Added));
                }
                (Some(want), Some(Found::File { path: disk, mode })) => {
                    to_hash.push((*want, disk.as_path(), *mode));
                }
                (None, None) => {}
            }
        }
        // Hashing is the cost of a launch (thousands of files): spread it over the cores, then
        // name the first changed file in path order, as a sequential check would.
        let workers = std::thread::available_parallelism()
            .map(std::num::NonZeroUsize::get)
            .unwrap_or(1)
            .clamp(1, 8);
        let chunk = to_hash.len().div_ceil(workers).max(1);
        let outcomes: Vec<Result<Option<usize>, StoreError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = to_hash
                .chunks(chunk)
                .enumerate()
                .map(|(n, files)| {
                    scope.spawn(move || {
                        for (i, (want, disk, mode)) in files.iter().enumerate() {
                            if !file_matches(want, disk, *mode)? {
                                return Ok(Some(n * chunk + i));
                            }
                        }
                        Ok(None)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(StoreError::StoreIo {
                            path: entry.clone(),
                            source: std::io::Error::other("a verifying thread failed"),
                        })
                    })
                })
                .collect()
        });
        // Chunks are in path order, so the first chunk with a problem holds the first one.
        for outcome in outcomes {
            if let Some(i) = outcome? {
                return Err(changed(&to_hash[i].0.path, Change::Modified));
            }
        }
        Ok(manifest)
    }
}

enum Found {
    File {
        path: PathBuf,
        mode: u32,
    },
    /// A link, a device, a FIFO, a socket: never part of an installed tree.
    Other,
}

fn walk(dir: &Path, rel: &str, found: &mut BTreeMap<String, Found>) -> Result<(), StoreError> {
    for dirent in fs::read_dir(dir).map_err(StoreError::io(dir))? {
        let dirent = dirent.map_err(StoreError::io(dir))?;
        let name = dirent.file_name().to_string_lossy().into_owned();
        let rel_path = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        let path = dirent.path();
        // Never follows links: a link is reported, not walked.
        let meta = fs::symlink_metadata(&path).map_err(StoreError::io(&path))?;
        let file_type = meta.file_type();
        if file_type.is_dir() {
            walk(&path, &rel_path, found)?;
        } else if file_type.is_file() {
            found.insert(
                rel_path,
                Found::File {
                    path,
                    mode: mode_of(&meta),
                },
            );
        } else {
            found.insert(rel_path, Found::Other);
        }
    }
    Ok(())
}

fn file_matches(want: &ManifestFile, path: &Path, mode: u32) -> Result<bool, StoreError> {
    let want_mode = if want.executable { 0o755 } else { 0o644 };
    if cfg!(unix) && mode & 0o7777 != want_mode {
        return Ok(false);
    }
    let data = fs::read(path).map_err(StoreError::io(path))?;
    Ok(data.len() as u64 == want.size && hex::encode(Sha256::digest(&data)) == want.sha256)
}

fn write_new_file(path: &Path, data: &[u8], executable: bool) -> Result<(), StoreError> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    let mut file = options.open(path).map_err(StoreError::io(path))?;
    file.write_all(data).map_err(StoreError::io(path))?;
    // Set after creation: the umask must not decide what the manifest records.
    set_mode(path, if executable { 0o755 } else { 0o644 })?;
    file.sync_all().map_err(StoreError::io(path))
}

fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(StoreError::io(dir))
}

fn create_dir_0755(path: &Path) -> Result<(), StoreError> {
    fs::create_dir(path).map_err(StoreError::io(path))?;
    set_mode(path, 0o755)
}

fn create_dir_all(path: &Path) -> Result<(), StoreError> {
    fs::create_dir_all(path).map_err(StoreError::io(path))
}

fn remove_any(path: &Path) -> Result<(), StoreError> {
    let meta = fs::symlink_metadata(path).map_err(StoreError::io(path))?;
    if meta.is_dir() {
        fs::remove_dir_all(path).map_err(StoreError::io(path))
    } else {
        fs::remove_file(path).map_err(StoreError::io(path))
    }
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> Result<(), StoreError> {
    use std::os::unix::fs::PermissionsExt as _;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(StoreError::io(path))
}

#[cfg(not(unix))]
fn set_mode(_path: &Path, _mode: u32) -> Result<(), StoreError> {
    Ok(())
}

#[cfg(unix)]
fn mode_of(meta: &fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    meta.permissions().mode()
}

#[cfg(not(unix))]
fn mode_of(_meta: &fs::Metadata) -> u32 {
    0
}
