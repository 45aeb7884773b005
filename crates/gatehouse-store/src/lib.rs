//! Gatehouse's package store: the artifacts of a pinned closure (npm tarballs, wheels,
//! `.mcpb` bundles) verified against their hashes, unpacked safely into a content-addressed
//! tree, and checked against a manifest of every file before each launch (issue 25).
//!
//! Owns: artifact digests ([`verify_artifact`]), the archive readers and their checks
//! ([`check_tgz`], [`check_zip`]), the store's layout, atomic install and verification
//! ([`Store`]). No network, no launching: callers fetch the bytes and launch from
//! [`Store::tree_path`].
//!
//! # Layout
//!
//! - `<root>/<key>/tree/…`: the unpacked files (0644, or 0755 when executable in the archive;
//!   directories 0755). `<key>` is 64 lower-case hex digits derived by the caller from the
//!   binding (for example a SHA-256 of the closure's artifact hashes).
//! - `<root>/<key>/manifest.json`: `{"version":1,"files":[{"path","size","sha256",
//!   "executable"}…]}`, sorted by path.
//! - `<root>/.tmp-<key>-<pid>-<n>`: an install in progress; removed by [`Store::open`] or the
//!   next install, only while holding the lock.
//! - `<root>/.lock`: the advisory lock that serializes installs and removals across processes
//!   (the CLI and the desktop app share a store).
//!
//! # Invariants
//!
//! - Every artifact's hash is checked before any archive is read, and every entry of every
//!   archive is checked before anything is written: paths (no absolute, `..`, backslash, NUL,
//!   control characters, drive prefix, empty, duplicate, case-only duplicate, file/directory
//!   clash), types (regular files and directories only: links, devices and FIFOs are
//!   refused), counts and sizes (of the bytes actually read, against [`Limits`]).
//! - An entry appears at `<root>/<key>` only by one rename of a complete, fsync'd directory,
//!   so a crash never leaves a partial entry that a later open would use.
//! - [`Store::verify`] never follows links, and names the first changed, added or missing
//!   file in path order.

#![forbid(unsafe_code)]

mod archive;
mod digest;
mod error;
mod store;

pub use archive::{ArchiveKind, Entry, EntryKind, Limits, check_tgz, check_zip, normalize_path};
pub use digest::{Digest, verify_artifact};
pub use error::{Change, StoreError};
pub use store::{Artifact, Manifest, ManifestFile, Store};
