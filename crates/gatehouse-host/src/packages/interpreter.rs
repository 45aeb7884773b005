//! The interpreter a package runs on, checked against the binding's allowed set at every
//! launch, and the places Node would look for modules outside the stored tree.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use gatehouse_attest::package::Interpreter;

use super::PackageFailure;

/// What identifies a file's bytes without reading them: a changed file changes its ctime
/// (writes, renames and chmods all do, and only root can set it back), so the digest of an
/// unchanged stamp is reused instead of hashing a 100 MB interpreter at every launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(path: &Path) -> std::io::Result<Stamp> {
        let m = std::fs::metadata(path)?;
        Ok(Stamp {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }
}

/// Digests of interpreter binaries, by path and stamp.
#[derive(Debug, Default)]
pub struct DigestCache {
    known: Mutex<HashMap<PathBuf, (Stamp, [u8; 32])>>,
}

impl DigestCache {
    /// The SHA-256 of `path`'s bytes (a resolved, canonical path).
    pub fn sha256(&self, path: &Path) -> Result<[u8; 32], String> {
        let before = Stamp::of(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if let Some((stamp, digest)) = self.known.lock().expect("cache poisoned").get(path)
            && *stamp == before
        {
            return Ok(*digest);
        }
        let digest = crate::admission::file_sha256(path)?;
        // Hashed while it changed: do not remember a digest of bytes that are gone.
        if Stamp::of(path).ok() == Some(before) {
            self.known
                .lock()
                .expect("cache poisoned")
                .insert(path.to_path_buf(), (before, digest));
        }
        Ok(digest)
    }
}

/// The system interpreter a kind runs on, found on the host's own `PATH`.
fn system_command(interpreter: &Interpreter) -> Option<&'static str> {
    match interpreter {
        Interpreter::Node { .. } => Some("node"),
        Interpreter::Python { .. } => Some("python3"),
        Interpreter::Binary => None,
    }
}

/// The system interpreter, when its digest is in the allowed set; otherwise why not.
pub fn system_interpreter(
    interpreter: &Interpreter,
    cache: &DigestCache,
    path_env: Option<&std::ffi::OsStr>,
) -> Result<PathBuf, PackageFailure> {
    let allowed = match interpreter {
        Interpreter::Node { sha256, .. } | Interpreter::Python { sha256 } => sha256,
        Interpreter::Binary => {
            return Err(PackageFailure::Interpreter {
                detail: "a binary server has no interpreter".into(),
            });
        }
    };
    let command = system_command(interpreter).unwrap_or("node");
    if allowed.is_empty() {
        return Err(PackageFailure::Interpreter {
            detail: format!(
                "the binding allows no system {command} (it names no interpreter digest)"
            ),
        });
    }
    let program = crate::admission::resolve_program(command, None, path_env).map_err(|e| {
        PackageFailure::Interpreter {
            detail: format!("{e}; install {command} (a version whose digest the binding lists)"),
        }
    })?;
    let program = std::fs::canonicalize(&program).unwrap_or(program);
    let digest = cache
        .sha256(&program)
        .map_err(|detail| PackageFailure::Interpreter { detail })?;
    if allowed.contains(&digest) {
        Ok(program)
    } else {
        Err(PackageFailure::Interpreter {
            detail: format!(
                "{} has SHA-256 {}, which the binding does not allow ({} allowed); the interpreter was updated or replaced: ask the admin to add this digest to interpreter.sha256 (or pin again, for your own pins)",
                program.display(),
                hex::encode(digest),
                allowed.len()
            ),
        })
    }
}

/// Directories outside the tree that Node would load modules from: a `node_modules` in any
/// ancestor of the tree (its resolution walks up to `/`), and the global folders
/// (`$HOME/.node_modules`, `$HOME/.node_libraries`, `<prefix>/lib/node`). Any that exists is
/// a refusal naming it: the tree must be the only place modules come from.
pub fn node_escape(tree: &Path, home: &Path, node: &Path) -> Option<PathBuf> {
    let mut places: Vec<PathBuf> = tree
        .ancestors()
        .skip(1)
        .map(|dir| dir.join("node_modules"))
        .collect();
    places.push(home.join(".node_modules"));
    places.push(home.join(".node_libraries"));
    if let Some(prefix) = node.parent().and_then(Path::parent) {
        places.push(prefix.join("lib").join("node"));
    }
    places
        .into_iter()
        .find(|p| std::fs::symlink_metadata(p).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_reused_until_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("interp");
        std::fs::write(&file, b"one").unwrap();
        let cache = DigestCache::default();
        let first = cache.sha256(&file).unwrap();
        assert_eq!(cache.sha256(&file).unwrap(), first);
        std::fs::write(&file, b"two, longer").unwrap();
        let second = cache.sha256(&file).unwrap();
        assert_ne!(first, second);
        assert_eq!(second, crate::admission::file_sha256(&file).unwrap());
    }

    #[test]
    fn node_modules_above_the_tree_is_an_escape() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("store/key/tree");
        std::fs::create_dir_all(&tree).unwrap();
        let home = dir.path().join("home");
        let node = dir.path().join("opt/node/bin/node");
        assert_eq!(node_escape(&tree, &home, &node), None);
        std::fs::create_dir_all(dir.path().join("store/node_modules")).unwrap();
        assert_eq!(
            node_escape(&tree, &home, &node),
            Some(dir.path().join("store/node_modules"))
        );
        std::fs::remove_dir(dir.path().join("store/node_modules")).unwrap();
        std::fs::create_dir_all(home.join(".node_libraries")).unwrap();
        assert_eq!(
            node_escape(&tree, &home, &node),
            Some(home.join(".node_libraries"))
        );
        std::fs::remove_dir(home.join(".node_libraries")).unwrap();
        std::fs::create_dir_all(dir.path().join("opt/node/lib/node")).unwrap();
        assert!(node_escape(&tree, &home, &node).is_some());
    }
}
