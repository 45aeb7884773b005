//! The store's refusals: one closed enum, each variant with a stable snake_case code and a
//! message that says what was wrong and what to do.

use std::path::PathBuf;

/// What changed in an installed tree compared with its manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A file of the manifest has other bytes, another size or another mode.
    Modified,
    /// A file (or a link or any other non-directory) is in the tree but not in the manifest.
    Added,
    /// A file of the manifest is not in the tree.
    Missing,
}

impl Change {
    /// Stable snake_case name.
    pub fn code(self) -> &'static str {
        match self {
            Change::Modified => "modified",
            Change::Added => "added",
            Change::Missing => "missing",
        }
    }
}

/// Why an artifact, an archive or a store entry was refused.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "artifact digest {digest:?} is not a supported form ({reason}); use npm's SRI form \
         `sha512-<base64>` or `sha256:<64 hex digits>`"
    )]
    ArtifactDigestInvalid {
        digest: String,
        reason: &'static str,
    },

    #[error(
        "artifact bytes do not match the binding: expected {expected}, got {actual}; the \
         registry or mirror served other bytes than the ones pinned: nothing was unpacked; \
         check the source, or re-pin if the package was deliberately republished"
    )]
    ArtifactMismatch { expected: String, actual: String },

    #[error(
        "archive entry {path:?} has an unsafe path ({reason}); the package tries to write \
         outside its directory or uses a name that cannot be stored: nothing was unpacked; \
         report it to the package's maintainers and do not bind this version"
    )]
    ArchiveUnsafePath { path: String, reason: &'static str },

    #[error(
        "archive entry {path:?} is a {kind}; links are never unpacked because they can point \
         outside the store: nothing was unpacked; bind a version without links"
    )]
    ArchiveLink { path: String, kind: &'static str },

    #[error(
        "archive entry {path:?} is a {kind}; only regular files and directories are \
         unpacked: nothing was unpacked; bind a version without such entries"
    )]
    ArchiveEntryType { path: String, kind: &'static str },

    #[error(
        "archive is too large: {what} exceeds the limit of {limit}; nothing was unpacked; \
         the package may be an archive bomb: do not bind it"
    )]
    ArchiveTooLarge { what: String, limit: u64 },

    #[error(
        "archive cannot be read: {detail}; nothing was unpacked; the artifact is damaged or \
         not of the declared kind (npm tarball `.tgz`, wheel or `.mcpb` zip)"
    )]
    ArchiveMalformed { detail: String },

    #[error(
        "store key {key:?} is not 64 lower-case hex digits; the key is derived from the \
         binding's artifact hashes: this is a bug in the caller"
    )]
    StoreKeyInvalid { key: String },

    #[error(
        "store entry {key} is not installed; install the binding's closure first \
         (with network, or from a pre-seeded store)"
    )]
    StoreEntryMissing { key: String },

    #[error(
        "store entry {key} has a {change} file {path:?} compared with its manifest; \
         something changed the installed package: it will not be launched; remove the entry \
         and install it again, and find out what changed it",
        change = change.code()
    )]
    StoreEntryChanged {
        key: String,
        path: String,
        change: Change,
    },

    #[error(
        "store entry {key} has a manifest that cannot be read ({detail}); remove the entry \
         and install it again"
    )]
    StoreManifestInvalid { key: String, detail: String },

    #[error(
        "store I/O failed at {path}: {source}; check the store directory's permissions and \
         free space, then retry"
    )]
    StoreIo {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl StoreError {
    /// Stable snake_case code, for audit records and `--json` output.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::ArtifactDigestInvalid { .. } => "artifact_digest_invalid",
            StoreError::ArtifactMismatch { .. } => "artifact_mismatch",
            StoreError::ArchiveUnsafePath { .. } => "archive_unsafe_path",
            StoreError::ArchiveLink { .. } => "archive_link",
            StoreError::ArchiveEntryType { .. } => "archive_entry_type",
            StoreError::ArchiveTooLarge { .. } => "archive_too_large",
            StoreError::ArchiveMalformed { .. } => "archive_malformed",
            StoreError::StoreKeyInvalid { .. } => "store_key_invalid",
            StoreError::StoreEntryMissing { .. } => "store_entry_missing",
            StoreError::StoreEntryChanged { .. } => "store_entry_changed",
            StoreError::StoreManifestInvalid { .. } => "store_manifest_invalid",
            StoreError::StoreIo { .. } => "store_io",
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> StoreError {
        let path = path.into();
        move |source| StoreError::StoreIo { path, source }
    }
}
