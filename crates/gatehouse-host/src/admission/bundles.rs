//! Loading the trust-root bundles: the admin, user and demo directories, each bundle file
//! bounded and verified, the highest-version record that refuses rollback, and the posture
//! that results.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};

use gatehouse_attest::bundle::{
    Bundle, BundleError, MAX_BUNDLE_BYTES, Posture, TrustStore, VerifiedBundle,
};
use serde::Serialize;
use time::OffsetDateTime;

use super::{AdminLock, Trust};
use crate::files::write_atomically;

/// Where admins install bundles. Root-owned: the first bundle of an id is trusted because an
/// admin put it here.
pub const SYSTEM_TRUST_ROOTS: &str = "/etc/gatehouse/trust-roots";

/// In a trust-roots directory: the highest version ever installed per bundle id, so a bundle
/// that is later deleted cannot be replaced by an older one.
pub const VERSIONS_FILE: &str = ".versions.json";

/// Where a loaded bundle came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BundleSource {
    /// The admin directory (`/etc/gatehouse/trust-roots` or `--trust-roots`).
    System,
    /// The user's own directory; ignored under a locked bundle.
    User,
    /// The built-in demo bundle, signed with published DEMO-ONLY keys; only in demo mode.
    Demo,
}

/// What to load.
#[derive(Debug, Clone, Default)]
pub struct TrustSettings {
    /// The admin directory.
    pub system_dir: PathBuf,
    /// The user's directory, if any.
    pub user_dir: Option<PathBuf>,
    /// `--posture`; ignored under a locked bundle or when an admin bundle failed to load.
    pub posture_override: Option<Posture>,
    /// Demo mode: the demo bundle's bytes (see [`crate::demo`]).
    pub demo_bundle: Option<Vec<u8>>,
}

/// A bundle that was not loaded, and why.
#[derive(Debug, Clone, Serialize)]
pub struct BundleProblem {
    pub source: BundleSource,
    pub path: Option<String>,
    pub code: &'static str,
    pub message: String,
}

/// A loaded bundle, for display.
#[derive(Debug, Clone, Serialize)]
pub struct BundleSummary {
    pub bundle: String,
    pub bundle_id: String,
    pub version: u64,
    pub expires: String,
    pub posture: Posture,
    pub locked: bool,
    pub source: BundleSource,
    pub path: Option<String>,
    pub signers: Vec<String>,
    pub servers: Vec<String>,
}

/// The highest version of a bundle id ever installed, and the SHA-256 of its signed part, so
/// neither an older version nor a different bundle under the same version can come back after
/// the installed file is removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct VersionRecord {
    pub version: u64,
    pub sha256: String,
}

/// Checks a verified bundle against the record: the same version must be the same bundle.
pub fn check_record(
    bundle: &VerifiedBundle,
    record: Option<&VersionRecord>,
) -> Result<(), BundleError> {
    match record {
        Some(r)
            if r.version == bundle.content().version && r.sha256 != bundle.signed_sha256_hex() =>
        {
            Err(BundleError::SameVersionChanged {
                bundle_id: bundle.content().bundle_id.clone(),
                version: r.version,
            })
        }
        _ => Ok(()),
    }
}

/// Reads a directory's highest-version record. Missing is empty; unreadable or malformed is
/// an error (it guards against rollback, so it must not silently vanish).
pub fn read_versions(dir: &Path) -> Result<BTreeMap<String, VersionRecord>, String> {
    let path = dir.join(VERSIONS_FILE);
    let text = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    serde_json::from_slice(&text).map_err(|e| {
        format!(
            "{} is not a {{\"bundle-id\": {{\"version\", \"sha256\"}}}} object ({e}); restore it from backup or reinstall the current bundles",
            path.display()
        )
    })
}

/// Records an installed bundle as the highest seen for its id in `dir` (never lowers it).
pub fn record_version(dir: &Path, bundle: &VerifiedBundle) -> Result<(), String> {
    let mut versions = read_versions(dir)?;
    let record = VersionRecord {
        version: bundle.content().version,
        sha256: bundle.signed_sha256_hex(),
    };
    let entry = versions
        .entry(bundle.content().bundle_id.clone())
        .or_insert_with(|| record.clone());
    if record.version >= entry.version {
        *entry = record;
    }
    let mut text = serde_json::to_string_pretty(&versions).expect("serializes");
    text.push('\n');
    write_atomically(&dir.join(VERSIONS_FILE), text.as_bytes(), 0o644)
        .map_err(|e| format!("cannot write {}: {e}", dir.join(VERSIONS_FILE).display()))
}

/// Reads one bundle file, refusing anything larger than [`MAX_BUNDLE_BYTES`].
pub fn read_bundle_file(path: &Path) -> Result<Vec<u8>, String> {
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_BUNDLE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if bytes.len() > MAX_BUNDLE_BYTES {
        return Err(format!(
            "{} is larger than {} bytes; it is not a bundle",
            path.display(),
            MAX_BUNDLE_BYTES
        ));
    }
    Ok(bytes)
}

/// The bundle files of a directory: `*.json`, not hidden, sorted by name.
fn bundle_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot list {}: {e}", dir.display())),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension() == Some(OsStr::new("json"))
                && !p
                    .file_name()
                    .and_then(OsStr::to_str)
                    .is_some_and(|n| n.starts_with('.'))
        })
        .collect();
    files.sort();
    Ok(files)
}

fn bundle_problem(source: BundleSource, path: Option<&Path>, error: &BundleError) -> BundleProblem {
    BundleProblem {
        source,
        path: path.map(|p| p.display().to_string()),
        code: error.code(),
        message: error.to_string(),
    }
}

/// What a directory held: the bundles that verified, and the admins' locks among them.
pub(super) struct LoadedDir {
    bundles: Vec<(VerifiedBundle, PathBuf)>,
    /// Bundles that claim `locked` but did not verify (expired, say), with why, unless a
    /// bundle of the same id did verify.
    unverified_locks: Vec<(String, &'static str)>,
}

impl LoadedDir {
    /// The lock in force: a locked bundle that verified, else one that claims `locked` and no
    /// longer verifies. The latter admits nothing, but it still locks: whether the admins
    /// meant to lift the lock is unknown (fail closed), so it lapses only when they replace
    /// the bundle.
    pub(super) fn lock(&self) -> Option<AdminLock> {
        self.bundles
            .iter()
            .find(|(b, _)| b.content().locked)
            .map(|(b, _)| AdminLock {
                label: b.label(),
                unverified: None,
            })
            .or_else(|| {
                self.unverified_locks
                    .first()
                    .map(|(label, code)| AdminLock {
                        label: label.clone(),
                        unverified: Some(code),
                    })
            })
    }
}

pub(super) fn load_dir(
    dir: &Path,
    source: BundleSource,
    now: OffsetDateTime,
    problems: &mut Vec<BundleProblem>,
) -> LoadedDir {
    let io_problem = |message: String| BundleProblem {
        source,
        path: Some(dir.display().to_string()),
        code: "bundle_unreadable",
        message,
    };
    let mut loaded = LoadedDir {
        bundles: Vec::new(),
        unverified_locks: Vec::new(),
    };
    let versions = match read_versions(dir) {
        Ok(v) => v,
        Err(message) => {
            problems.push(io_problem(message));
            return loaded;
        }
    };
    let files = match bundle_files(dir) {
        Ok(files) => files,
        Err(message) => {
            problems.push(io_problem(message));
            return loaded;
        }
    };
    let mut claimed_locks = Vec::new();
    for path in files {
        let bytes = match read_bundle_file(&path) {
            Ok(bytes) => bytes,
            Err(message) => {
                problems.push(BundleProblem {
                    source,
                    path: Some(path.display().to_string()),
                    code: "bundle_unreadable",
                    message,
                });
                continue;
            }
        };
        let parsed = Bundle::parse(&bytes);
        let claims_lock = parsed.as_ref().ok().and_then(|b| {
            let c = b.content();
            c.locked.then(|| {
                (
                    c.bundle_id.clone(),
                    format!("{}@{}", c.bundle_id, c.version),
                )
            })
        });
        let verified = parsed.and_then(|bundle| {
            let record = versions.get(&bundle.content().bundle_id);
            let verified = bundle.verify(now, None, record.map(|r| r.version))?;
            check_record(&verified, record)?;
            Ok(verified)
        });
        match verified {
            Ok(bundle) => loaded.bundles.push((bundle, path)),
            Err(error) => {
                if let Some((id, label)) = claims_lock {
                    claimed_locks.push((id, label, error.code()));
                }
                problems.push(bundle_problem(source, Some(&path), &error))
            }
        }
    }
    // A stale copy of a bundle whose current version verified does not lock.
    loaded.unverified_locks = claimed_locks
        .into_iter()
        .filter(|(id, _, _)| {
            !loaded
                .bundles
                .iter()
                .any(|(b, _)| &b.content().bundle_id == id)
        })
        .map(|(_, label, code)| (label, code))
        .collect();
    loaded
}

impl Trust {
    /// Loads the demo bundle (in demo mode), the admin bundles, and (unless an admin bundle is
    /// locked) the user's, and works out the posture. Never fails: what cannot be loaded is
    /// in [`Trust::problems`], and the posture accounts for it.
    pub fn load(settings: &TrustSettings, now: OffsetDateTime) -> Trust {
        let mut problems = Vec::new();
        let mut system: Vec<(VerifiedBundle, BundleSource, Option<PathBuf>)> = Vec::new();
        let admin = load_dir(
            &settings.system_dir,
            BundleSource::System,
            now,
            &mut problems,
        );
        // A locked bundle that no longer verifies admits nothing (it failed, so the posture
        // is deny-by-default) but still keeps out the user's roots and the demo root.
        let locked_by = admin.lock().map(|lock| lock.label);
        for (bundle, path) in admin.bundles {
            system.push((bundle, BundleSource::System, Some(path)));
        }
        if let Some(bytes) = &settings.demo_bundle {
            // The demo root's private keys are public: a locked admin bundle never trusts it.
            // Front ends refuse `--demo` first (`refuse_widening_under_lock`); this is the
            // backstop.
            match (
                &locked_by,
                Bundle::parse(bytes).and_then(|b| b.verify(now, None, None)),
            ) {
                (Some(label), _) => problems.push(BundleProblem {
                    source: BundleSource::Demo,
                    path: None,
                    code: "demo_ignored_locked",
                    message: format!(
                        "the demo bundle is ignored: the admin bundle {label} is locked"
                    ),
                }),
                (None, Ok(bundle)) => system.insert(0, (bundle, BundleSource::Demo, None)),
                (None, Err(error)) => {
                    problems.push(bundle_problem(BundleSource::Demo, None, &error))
                }
            }
        }
        let mut admin_failed = problems
            .iter()
            .any(|p| p.source != BundleSource::User && p.code != "demo_ignored_locked");
        let mut all = system;
        match (&settings.user_dir, &locked_by) {
            (Some(dir), None) => {
                for (bundle, path) in load_dir(dir, BundleSource::User, now, &mut problems).bundles
                {
                    all.push((bundle, BundleSource::User, Some(path)));
                }
            }
            (Some(dir), Some(label)) if !bundle_files(dir).unwrap_or_default().is_empty() => {
                problems.push(BundleProblem {
                    source: BundleSource::User,
                    path: Some(dir.display().to_string()),
                    code: "bundle_ignored_locked",
                    message: format!(
                        "user trust roots in {} are ignored: the admin bundle {label} is locked",
                        dir.display()
                    ),
                });
            }
            _ => {}
        }
        // Conflicting bundles: which one to believe is not ours to guess. If the admin's
        // bundles agree among themselves, the user's are dropped; if not, all are, and the
        // posture falls to deny-by-default.
        let (admin, user): (Vec<_>, Vec<_>) = all
            .into_iter()
            .partition(|(_, s, _)| *s != BundleSource::User);
        let combinable = |set: &[(VerifiedBundle, BundleSource, Option<PathBuf>)]| {
            TrustStore::check_combinable(&set.iter().map(|(b, _, _)| b).collect::<Vec<_>>())
        };
        let together = TrustStore::check_combinable(
            &admin
                .iter()
                .chain(user.iter())
                .map(|(b, _, _)| b)
                .collect::<Vec<_>>(),
        );
        let kept = match together {
            Ok(()) => admin.into_iter().chain(user).collect::<Vec<_>>(),
            Err(error) => match combinable(&admin) {
                Ok(()) => {
                    problems.push(BundleProblem {
                        source: BundleSource::User,
                        path: settings.user_dir.as_ref().map(|d| d.display().to_string()),
                        code: error.code(),
                        message: format!("the user trust roots are ignored: {error}"),
                    });
                    admin
                }
                Err(error) => {
                    problems.push(bundle_problem(
                        BundleSource::System,
                        Some(&settings.system_dir),
                        &error,
                    ));
                    admin_failed = true;
                    Vec::new()
                }
            },
        };
        let mut sources = BTreeMap::new();
        let mut verified = Vec::new();
        for (bundle, source, path) in kept {
            sources.insert(bundle.content().bundle_id.clone(), (source, path));
            verified.push(bundle);
        }
        let store = TrustStore::combine(verified).expect("combinable: checked above");
        let strictest = store.posture();
        let (posture, posture_reason) = if admin_failed {
            (
                Posture::DenyByDefault,
                "an admin trust-root bundle could not be loaded, so Gatehouse denies by default until it is fixed".to_string(),
            )
        } else if let Some(label) = &locked_by {
            let note = if settings.posture_override.is_some() {
                " (--posture is ignored)"
            } else {
                ""
            };
            (
                strictest.unwrap_or(Posture::DenyByDefault),
                format!("set by the locked bundle {label}{note}"),
            )
        } else if let Some(posture) = settings.posture_override {
            (posture, "set by --posture".to_string())
        } else if let Some(posture) = strictest {
            (
                posture,
                "the strictest posture of the loaded bundles".into(),
            )
        } else {
            (
                Posture::DenyByDefault,
                "the default: no bundle is installed and no --posture was given".into(),
            )
        };
        Trust {
            store,
            sources,
            posture,
            posture_reason,
            locked_by,
            problems,
        }
    }
}
