//! What the package-server tests share: the install step's seed of real packages, the pinned
//! Node, digests.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{node, repo};

pub const FILESYSTEM: &str = "@modelcontextprotocol/server-filesystem";
pub const VERSION: &str = "2026.8.31";

/// The artifacts `scripts/install-deps.sh` fetched (`scripts/fetch-packages.mjs`): npm
/// tarballs under `npm/`, wheels under `pypi/`.
pub fn seed() -> PathBuf {
    let seed = repo().join("target/package-seed");
    assert!(
        seed.join("npm").join(FILESYSTEM).is_dir() && seed.join("pypi").is_dir(),
        "{} is missing: run scripts/install-deps.sh (it fetches the test packages)",
        seed.display()
    );
    seed
}

/// The directory of the pinned Node 22 (first on the CLI's PATH in these tests).
pub fn node_dir() -> PathBuf {
    node().parent().unwrap().to_path_buf()
}

/// Lower-case hex SHA-256 of a file's bytes.
pub fn sha256_file(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}
