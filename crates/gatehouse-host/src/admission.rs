//! Admission: which trust-root bundles are installed, and whether a server is admitted, decided
//! before any MCP message is exchanged with it.
//!
//! The decisions themselves are `gatehouse-attest`'s (pure); this module does the I/O around
//! them: reading bundle directories and the highest-version record, fetching an HTTP server's
//! attestation, resolving and hashing a stdio server's executable.
//!
//! Fail closed: a bundle that cannot be read or verified is reported and not loaded; if it was
//! an admin (system) bundle, the posture becomes deny-by-default whatever the user asked for,
//! because the admin's intent is then unknown.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gatehouse_attest::bundle::{
    Bundle, BundleError, MAX_BUNDLE_BYTES, Posture, ServerPolicy, TrustStore, VerifiedBundle,
};
use gatehouse_attest::origin::OriginBinding;

use crate::error::HostError;
use gatehouse_attest::{Admitted, Reason, Refusal, VerifyContext};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use crate::config::{ServerSpec, write_atomically};
use crate::fetch::{AttestationSource, fetch_attestation};

/// Where admins install bundles. Root-owned: the first bundle of an id is trusted because an
/// admin put it here.
pub const SYSTEM_TRUST_ROOTS: &str = "/etc/gatehouse/trust-roots";

/// In a trust-roots directory: the highest version ever installed per bundle id, so a bundle
/// that is later deleted cannot be replaced by an older one.
pub const VERSIONS_FILE: &str = ".versions.json";

/// Where a loaded bundle came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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

/// The installed trust roots and the effective posture.
#[derive(Debug)]
pub struct Trust {
    store: TrustStore,
    sources: BTreeMap<String, (BundleSource, Option<PathBuf>)>,
    posture: Posture,
    posture_reason: String,
    locked_by: Option<String>,
    problems: Vec<BundleProblem>,
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
struct LoadedDir {
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
    fn lock(&self) -> Option<AdminLock> {
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

/// A locked admin bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminLock {
    /// `bundleId@version`.
    pub label: String,
    /// Why it did not verify (a bundle error code), when it did not.
    pub unverified: Option<&'static str>,
}

impl AdminLock {
    /// The label, with why it did not verify when it did not.
    fn describe(&self) -> String {
        match self.unverified {
            None => self.label.clone(),
            Some(code) => format!(
                "{} (it no longer verifies: {code}; it still locks until the admins replace it)",
                self.label
            ),
        }
    }
}

fn load_dir(
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

/// What a front end was asked for that would widen the admins' policy if it were honoured.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Widening {
    /// An admin directory other than the system's (`--trust-roots`, `GATEHOUSE_TRUST_ROOTS`).
    pub trust_roots: Option<PathBuf>,
    /// Demo mode (`--demo`, `GATEHOUSE_DEMO`): the demo root, whose private keys are public.
    pub demo: bool,
    /// A policy file of the user's (`--policy`, `GATEHOUSE_POLICY`).
    pub policy: Option<PathBuf>,
}

/// What a front end was asked for, held against the admins' lock at start and again before
/// each admission: a lock installed while the app runs refuses what it forbids from then on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockGuard {
    /// The system's own admin directory (never one the user named).
    pub system_dir: PathBuf,
    pub asked: Widening,
}

impl LockGuard {
    /// [`refuse_widening_under_lock`] at `now`.
    pub fn check(&self, now: OffsetDateTime) -> Result<(), HostError> {
        refuse_widening_under_lock(&self.system_dir, &self.asked, now)
    }
}

/// The lock of the admin directory `dir` at `now` (the same checks as [`Trust::load`]): a
/// locked bundle that verifies, else one that claims `locked` and no longer verifies.
pub fn admin_lock(dir: &Path, now: OffsetDateTime) -> Option<AdminLock> {
    load_dir(dir, BundleSource::System, now, &mut Vec::new()).lock()
}

/// Refuses, naming the lock, anything in `asked` that would widen what a locked admin bundle
/// decides. `system_dir` is always the system's own admin directory (never one the user named),
/// so `--trust-roots` elsewhere cannot hide its lock: under it, another directory is itself a
/// widening. A locked bundle in the directory `--trust-roots` names forbids demo mode and a
/// user policy too. A locked bundle that no longer verifies (expired, say) still locks.
pub fn refuse_widening_under_lock(
    system_dir: &Path,
    asked: &Widening,
    now: OffsetDateTime,
) -> Result<(), HostError> {
    let elsewhere = asked
        .trust_roots
        .as_deref()
        .filter(|dir| !same_dir(dir, system_dir));
    if elsewhere.is_none() && !asked.demo && asked.policy.is_none() {
        return Ok(());
    }
    let system_lock = admin_lock(system_dir, now);
    let lock = system_lock
        .clone()
        .map(|lock| (lock, system_dir))
        .or_else(|| elsewhere.and_then(|dir| admin_lock(dir, now).map(|lock| (lock, dir))));
    let Some((lock, dir)) = lock else {
        return Ok(());
    };
    let mut what = Vec::new();
    if let (Some(dir), Some(_)) = (elsewhere, &system_lock) {
        what.push(format!(
            "other admin trust roots ({}, from --trust-roots or GATEHOUSE_TRUST_ROOTS)",
            dir.display()
        ));
    }
    if asked.demo {
        what.push("demo mode (--demo), whose keys are public".to_string());
    }
    if let Some(policy) = &asked.policy {
        what.push(format!(
            "a user elicitation policy ({}, from --policy or GATEHOUSE_POLICY)",
            policy.display()
        ));
    }
    if what.is_empty() {
        return Ok(());
    }
    Err(HostError::LockedByAdmin {
        detail: format!(
            "{} cannot be used: the admin bundle {} in {} is locked, so only the admins' settings apply; run without them, or ask your admin",
            what.join(", and "),
            lock.describe(),
            dir.display()
        ),
        bundle: lock.label,
    })
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
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

    pub fn posture(&self) -> Posture {
        self.posture
    }

    pub fn posture_reason(&self) -> &str {
        &self.posture_reason
    }

    /// The label of the locked admin bundle, if one is locked.
    pub fn locked_by(&self) -> Option<&str> {
        self.locked_by.as_deref()
    }

    pub fn problems(&self) -> &[BundleProblem] {
        &self.problems
    }

    pub fn source(&self, bundle_id: &str) -> Option<BundleSource> {
        self.sources.get(bundle_id).map(|(s, _)| *s)
    }

    /// The SHA-256 of each loaded bundle's signed part: what tells two loads apart when
    /// their summaries agree.
    pub(crate) fn digests(&self) -> Vec<String> {
        self.store
            .bundles()
            .iter()
            .map(VerifiedBundle::signed_sha256_hex)
            .collect()
    }

    /// What is loaded, for display.
    pub fn summaries(&self) -> Vec<BundleSummary> {
        self.store
            .bundles()
            .iter()
            .map(|b| {
                let c = b.content();
                let (source, path) = self
                    .sources
                    .get(&c.bundle_id)
                    .cloned()
                    .unwrap_or((BundleSource::System, None));
                BundleSummary {
                    bundle: b.label(),
                    bundle_id: c.bundle_id.clone(),
                    version: c.version,
                    expires: c
                        .expires
                        .format(&time::format_description::well_known::Rfc3339)
                        .unwrap_or_default(),
                    posture: c.posture,
                    locked: c.locked,
                    source,
                    path: path.map(|p| p.display().to_string()),
                    signers: b.signers().to_vec(),
                    servers: c.servers.iter().map(|s| s.id.clone()).collect(),
                }
            })
            .collect()
    }

    /// Decides whether `spec` is admitted, at `now`. HTTP servers: the attestation is fetched
    /// from the endpoint's origin. stdio servers: an installed bundle must bind the command,
    /// its arguments and the SHA-256 of the resolved executable.
    pub async fn admit(
        &self,
        server: &str,
        spec: &ServerSpec,
        now: OffsetDateTime,
        fetch_timeout: Duration,
    ) -> Verdict {
        let mut verdict = match spec {
            ServerSpec::Http(http) => {
                self.admit_http(server, http.url.as_str(), now, fetch_timeout)
                    .await
            }
            ServerSpec::Stdio(stdio) => {
                let path_env = stdio
                    .env
                    .iter()
                    .find(|(k, _)| k == "PATH")
                    .map(|(_, v)| v.clone().into())
                    .or_else(|| std::env::var_os("PATH"));
                let (command, args, cwd) =
                    (stdio.command.clone(), stdio.args.clone(), stdio.cwd.clone());
                let this = self.stdio_candidates();
                let (resolved, workdir) = tokio::task::spawn_blocking(move || {
                    (
                        stdio_check(&this, &command, &args, cwd.as_deref(), path_env.as_deref()),
                        working_directory(cwd.as_deref()),
                    )
                })
                .await
                .unwrap_or_else(|e| {
                    (
                        StdioCheck::Failed {
                            program: None,
                            detail: format!("the executable check failed: {e}"),
                        },
                        None,
                    )
                });
                self.admit_stdio(server, spec, resolved, workdir.as_deref(), now)
            }
        };
        verdict.posture = self.posture;
        verdict.proceeds = verdict.status == Status::Admitted || self.posture == Posture::Warn;
        verdict
    }

    async fn admit_http(
        &self,
        server: &str,
        endpoint: &str,
        now: OffsetDateTime,
        fetch_timeout: Duration,
    ) -> Verdict {
        let mut verdict = Verdict::new(server, "http");
        // Credentials in the query are not part of what identifies the server, and the key is
        // written to the audit log (suspensions).
        verdict.approval_key = match url::Url::parse(endpoint) {
            Ok(url) => format!("url:{}", crate::launch_risk::redact_url(&url)),
            Err(_) => format!("url:{endpoint}"),
        };
        let source = match AttestationSource::for_endpoint(endpoint) {
            Ok(source) => source,
            Err(error) => {
                return verdict.refused(
                    AdmissionReason::AttestationUnavailable,
                    format!("{error} ({})", error.code()),
                );
            }
        };
        verdict.origin = Some(source.origin.clone());
        let bytes = match fetch_attestation(&source, fetch_timeout).await {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                return verdict.unattested(format!(
                    "no attestation document: {} answered 404",
                    source.url
                ));
            }
            Err(error) => {
                return verdict.refused(
                    AdmissionReason::AttestationUnavailable,
                    format!("{error} ({})", error.code()),
                );
            }
        };
        let claimed = ClaimedDocument::parse(&bytes);
        verdict.claimed.publisher = claimed.publisher.clone();
        let Some(bundle) = self.bundle_for_document(&claimed) else {
            return self.no_trust_roots(verdict);
        };
        let policy = bundle
            .content()
            .servers
            .iter()
            .find(|s| Some(&s.id) == claimed.id.as_ref());
        let required = required_clearance(bundle, policy);
        let context = VerifyContext {
            origin: Some(&source.origin),
            required_clearance: &required,
            now,
        };
        match gatehouse_attest::verify(Some(&bytes), &bundle.content().trust_root, &context) {
            Err(refusal) => verdict.refused_by(&refusal, Some(bundle)),
            Ok(admitted) => {
                // The entry that governs the *verified* id, not the one the bytes claimed.
                let policy = bundle
                    .content()
                    .servers
                    .iter()
                    .find(|s| s.id == admitted.id());
                let origins = policy.map(|p| p.origins.as_slice()).unwrap_or_default();
                match gatehouse_attest::origin::bind_http_origin(&admitted, origins) {
                    Err(refusal) => verdict.refused_by(&refusal, Some(bundle)),
                    Ok(binding) => {
                        verdict.origin_binding = Some(binding);
                        self.admitted(verdict, admitted, bundle, policy.cloned())
                    }
                }
            }
        }
    }

    fn admit_stdio(
        &self,
        server: &str,
        spec: &ServerSpec,
        check: StdioCheck,
        workdir: Option<&Path>,
        now: OffsetDateTime,
    ) -> Verdict {
        let mut verdict = Verdict::new(server, "stdio");
        verdict.command = Some(spec.describe());
        // Until admitted, approvals and suspensions are keyed by what actually runs: the
        // resolved program (when it resolves), the arguments and the working directory it runs
        // in, so a symlink, a PATH change or another directory cannot inherit another server's
        // approvals or escape its suspension.
        let resolved = match &check {
            StdioCheck::Failed { program, .. } => program.clone(),
            StdioCheck::Unbound { program }
            | StdioCheck::ArgsDiffer { program, .. }
            | StdioCheck::BinaryChanged { program, .. }
            | StdioCheck::Ambiguous { program, .. }
            | StdioCheck::Bound { program, .. } => Some(program.clone()),
        };
        verdict.approval_key = unattested_stdio_key(spec, resolved.as_deref(), workdir);
        let (bundle_id, policy_id, program) = match check {
            StdioCheck::Failed { detail, .. } => {
                return verdict.refused(AdmissionReason::StdioBindingMismatch, detail);
            }
            StdioCheck::Unbound { program } => {
                return verdict.unattested(format!(
                    "no installed bundle binds the command {} (stdio servers are admitted only through an admin bundle's stdio binding)",
                    program.display()
                ));
            }
            StdioCheck::ArgsDiffer { program, bound } => {
                return verdict.refused(
                    AdmissionReason::StdioBindingMismatch,
                    format!(
                        "{} is bound with the arguments {bound:?}, but configured with others; the bundle binds the exact command line",
                        program.display()
                    ),
                );
            }
            StdioCheck::Ambiguous { program, bindings } => {
                return verdict.refused(
                    AdmissionReason::StdioBindingMismatch,
                    format!(
                        "{} with these arguments is bound under more than one server id ({}); Gatehouse will not pick an identity for it: ask the admins to keep one binding",
                        program.display(),
                        bindings.join(", ")
                    ),
                );
            }
            StdioCheck::BinaryChanged {
                program,
                expected,
                actual,
            } => {
                return verdict.refused(
                    AdmissionReason::BinaryChanged,
                    format!(
                        "{} has SHA-256 {actual}, but the bundle binds {expected}: the executable changed since the admin approved it; ask the admin to re-approve it (update stdio.sha256)",
                        program.display()
                    ),
                );
            }
            StdioCheck::Bound {
                bundle_id,
                policy_id,
                program,
            } => (bundle_id, policy_id, program),
        };
        // The binding hashes the executable, not its environment: a code-loading variable
        // (LD_PRELOAD, NODE_OPTIONS, PYTHONPATH, PATH…) or a working directory would change
        // what runs under the verified identity. The binding format cannot allow them, so a
        // bound server may not set them.
        if let ServerSpec::Stdio(s) = spec {
            let settings = crate::launch_risk::risky_settings(
                s.env.iter().map(|(k, v)| (k, v)),
                s.cwd.as_ref().and_then(|c| c.to_str()),
            );
            if !settings.is_empty() {
                return verdict.refused(
                    AdmissionReason::StdioBindingMismatch,
                    format!(
                        "{} is bound by an admin bundle, but its configuration also sets {}, which change what runs; a bound server runs with none of these: remove them from its entry",
                        program.display(),
                        settings
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
        }
        verdict.program = Some(program.clone());
        verdict.command = Some(
            std::iter::once(program.display().to_string())
                .chain(match spec {
                    ServerSpec::Stdio(s) => s.args.clone(),
                    ServerSpec::Http(_) => Vec::new(),
                })
                .collect::<Vec<_>>()
                .join(" "),
        );
        let Some((bundle, policy)) = self
            .store
            .bundles()
            .iter()
            .filter(|b| b.content().bundle_id == bundle_id)
            .find_map(|b| {
                b.content()
                    .servers
                    .iter()
                    .find(|s| s.id == policy_id)
                    .map(|s| (b, s))
            })
        else {
            return verdict.refused(
                AdmissionReason::StdioBindingMismatch,
                "the binding vanished while checking".into(),
            );
        };
        let attestation = &policy
            .stdio
            .as_ref()
            .expect("a bound policy has a stdio binding")
            .attestation;
        let document = serde_json::to_vec(attestation).expect("serializes");
        verdict.claimed.publisher = ClaimedDocument::of(attestation).publisher;
        let required = required_clearance(bundle, Some(policy));
        let context = VerifyContext {
            origin: None,
            required_clearance: &required,
            now,
        };
        match gatehouse_attest::verify(Some(&document), &bundle.content().trust_root, &context) {
            Err(refusal) => verdict.refused_by(&refusal, Some(bundle)),
            Ok(admitted) if admitted.id() != policy.id => verdict.refused(
                AdmissionReason::StdioBindingMismatch,
                format!(
                    "the bound attestation is for {:?}, but the bundle entry is {:?}",
                    admitted.id(),
                    policy.id
                ),
            ),
            Ok(admitted) => self.admitted(verdict, admitted, bundle, Some(policy.clone())),
        }
    }

    fn admitted(
        &self,
        mut verdict: Verdict,
        admitted: Admitted,
        bundle: &VerifiedBundle,
        policy: Option<ServerPolicy>,
    ) -> Verdict {
        let source = self
            .source(&bundle.content().bundle_id)
            .unwrap_or(BundleSource::System);
        verdict.status = Status::Admitted;
        verdict.detail = match &policy {
            Some(_) => format!("admitted by {}", bundle.label()),
            None => format!(
                "admitted by {}, which lists no tools for it: every tool is hidden until an admin adds an allow-list",
                bundle.label()
            ),
        };
        verdict.identity = Some(Identity {
            id: admitted.id().to_string(),
            clearance: admitted.clearance().to_string(),
            asserted_clearance: admitted.asserted_clearance().to_string(),
            signer_key_id: admitted.signer_key_id().to_string(),
            bundle: bundle.label(),
            bundle_source: source,
            demo: source == BundleSource::Demo,
            body_sha256: admitted.body_sha256_hex(),
        });
        verdict.approval_key = format!("id:{}", admitted.id());
        verdict.bundle = Some(bundle.label());
        verdict.demo = source == BundleSource::Demo;
        verdict.policy = policy;
        verdict.proof = Some(admitted);
        verdict
    }

    fn no_trust_roots(&self, verdict: Verdict) -> Verdict {
        verdict.refused(
            AdmissionReason::Atsa(Reason::SignerNotTrusted),
            "no trust-root bundle is installed, so no signer is trusted; ask your admin for one (gatehouse bundle install)".into(),
        )
    }

    /// The bundle whose trust root judges a document: the one governing its claimed id, else
    /// the one holding its signer key, else any (so rules 0–3 still give the precise reason).
    fn bundle_for_document(&self, claimed: &ClaimedDocument) -> Option<&VerifiedBundle> {
        let bundles = self.store.bundles();
        if let Some(id) = &claimed.id
            && let Some((bundle, _)) = self.store.server(id)
        {
            return Some(bundle);
        }
        claimed
            .signer_key_id
            .as_ref()
            .and_then(|key| {
                bundles
                    .iter()
                    .find(|b| b.content().trust_root.key(key).is_some())
            })
            .or_else(|| bundles.first())
    }

    fn stdio_candidates(&self) -> Vec<Candidate> {
        self.store
            .bundles()
            .iter()
            .flat_map(|b| {
                b.content().servers.iter().filter_map(move |s| {
                    s.stdio.as_ref().map(|binding| Candidate {
                        bundle_id: b.content().bundle_id.clone(),
                        policy_id: s.id.clone(),
                        command: binding.command.clone(),
                        args: binding.args.clone(),
                        sha256: binding.sha256,
                    })
                })
            })
            .collect()
    }
}

/// The approval and suspension key of a stdio server that is not admitted, the one key
/// function for every such verdict: the whole command line (`python3 a.py` and `python3 b.py`
/// share an executable but are different servers), with the program as resolved when it
/// resolves, credentials redacted, and the directory it runs in (`workdir`, see
/// [`working_directory`]): `python3 -m srv` runs another `srv` in another directory.
fn unattested_stdio_key(
    spec: &ServerSpec,
    resolved: Option<&Path>,
    workdir: Option<&Path>,
) -> String {
    let ServerSpec::Stdio(s) = spec else {
        return format!("stdio:{}", spec.describe());
    };
    let program = resolved
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| s.command.clone());
    // Unknown (the host's own directory is gone): a key no known directory shares.
    let cwd = workdir.map_or_else(
        || "(unknown working directory)".to_string(),
        |d| d.display().to_string(),
    );
    let key = serde_json::json!({
        "program": program,
        "args": crate::launch_risk::redact_args(&s.args),
        "cwd": cwd,
    });
    format!("stdio:{key}")
}

/// The directory a stdio server not admitted runs in: its configured `cwd` (relative to the
/// host's own directory), or the host's directory when it sets none, resolved when it
/// exists; `None` when the host's own directory cannot be read. (An admitted server runs in
/// `/` whatever this says.)
pub fn working_directory(cwd: Option<&Path>) -> Option<PathBuf> {
    let dir = match cwd {
        Some(dir) if dir.is_absolute() => dir.to_path_buf(),
        Some(dir) => std::env::current_dir().ok()?.join(dir),
        None => std::env::current_dir().ok()?,
    };
    Some(std::fs::canonicalize(&dir).unwrap_or(dir))
}

fn required_clearance(bundle: &VerifiedBundle, policy: Option<&ServerPolicy>) -> String {
    policy
        .and_then(|p| p.required_clearance.clone())
        .unwrap_or_else(|| bundle.content().required_clearance.clone())
}

/// What a document claims, read before verification: only to pick the bundle that judges it
/// and to show the publisher as claimed. Nothing here is trusted.
#[derive(Debug, Default)]
struct ClaimedDocument {
    id: Option<String>,
    publisher: Option<String>,
    signer_key_id: Option<String>,
}

impl ClaimedDocument {
    fn parse(bytes: &[u8]) -> ClaimedDocument {
        gatehouse_attest::json::parse_strict(
            bytes,
            gatehouse_attest::MAX_DOCUMENT_BYTES,
            gatehouse_attest::MAX_DEPTH,
        )
        .map(|v| ClaimedDocument::of(&v))
        .unwrap_or_default()
    }

    fn of(document: &Value) -> ClaimedDocument {
        let text = |key: &str| {
            document
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        ClaimedDocument {
            id: text("id"),
            publisher: text("publisher"),
            signer_key_id: text("signerKeyId"),
        }
    }
}

/// A stdio binding, copied out of the trust store for the blocking check.
#[derive(Debug, Clone)]
struct Candidate {
    bundle_id: String,
    policy_id: String,
    command: String,
    args: Vec<String>,
    sha256: [u8; 32],
}

#[derive(Debug)]
enum StdioCheck {
    /// The check could not be made; `program` when the command resolved.
    Failed {
        program: Option<PathBuf>,
        detail: String,
    },
    Unbound {
        program: PathBuf,
    },
    ArgsDiffer {
        program: PathBuf,
        bound: Vec<String>,
    },
    BinaryChanged {
        program: PathBuf,
        expected: String,
        actual: String,
    },
    /// Bound more than once, under different server ids: which identity it has is not ours to
    /// pick.
    Ambiguous {
        program: PathBuf,
        bindings: Vec<String>,
    },
    Bound {
        bundle_id: String,
        policy_id: String,
        program: PathBuf,
    },
}

/// Resolves a command the way `execvp` would (a name with a slash is a path, relative to the
/// working directory; otherwise the first executable file on PATH), then canonicalizes it so
/// symlinks cannot stand in for the bound file.
pub fn resolve_program(
    command: &str,
    cwd: Option<&Path>,
    path_env: Option<&OsStr>,
) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    let found = if command.contains('/') {
        let path = Path::new(command);
        let path = match cwd {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.to_path_buf(),
        };
        executable(&path).then_some(path)
    } else {
        path_env.and_then(|paths| {
            std::env::split_paths(paths)
                .map(|dir| dir.join(command))
                .find(|p| executable(p))
        })
    };
    let found = found.ok_or_else(|| {
        format!("{command:?} is not an executable file (looked on PATH and relative to the working directory)")
    })?;
    std::fs::canonicalize(&found).map_err(|e| format!("cannot resolve {}: {e}", found.display()))
}

/// SHA-256 of a file's bytes, streamed.
pub fn file_sha256(path: &Path) -> Result<[u8; 32], String> {
    let mut file =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = file
            .read(&mut buffer)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hasher.finalize().into())
}

fn stdio_check(
    candidates: &[Candidate],
    command: &str,
    args: &[String],
    cwd: Option<&Path>,
    path_env: Option<&OsStr>,
) -> StdioCheck {
    let program = match resolve_program(command, cwd, path_env) {
        Ok(program) => program,
        Err(detail) => {
            return StdioCheck::Failed {
                program: None,
                detail,
            };
        }
    };
    let same_program: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| {
            resolve_program(&c.command, None, std::env::var_os("PATH").as_deref())
                .is_ok_and(|p| p == program)
        })
        .collect();
    let bound: Vec<&&Candidate> = same_program.iter().filter(|c| c.args == args).collect();
    let ids: std::collections::BTreeSet<&str> =
        bound.iter().map(|c| c.policy_id.as_str()).collect();
    if ids.len() > 1 {
        return StdioCheck::Ambiguous {
            program,
            bindings: bound
                .iter()
                .map(|c| format!("{} in {}", c.policy_id, c.bundle_id))
                .collect(),
        };
    }
    let Some(candidate) = bound.first() else {
        return match same_program.first() {
            Some(c) => StdioCheck::ArgsDiffer {
                program,
                bound: c.args.clone(),
            },
            None => StdioCheck::Unbound { program },
        };
    };
    match file_sha256(&program) {
        Err(detail) => StdioCheck::Failed {
            program: Some(program),
            detail,
        },
        Ok(actual) if actual != candidate.sha256 => StdioCheck::BinaryChanged {
            program,
            expected: hex::encode(candidate.sha256),
            actual: hex::encode(actual),
        },
        Ok(_) => StdioCheck::Bound {
            bundle_id: candidate.bundle_id.clone(),
            policy_id: candidate.policy_id.clone(),
            program,
        },
    }
}

/// Why a server was not admitted: an ATSA registry reason, or one of the host's own checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdmissionReason {
    Atsa(Reason),
    /// The stdio executable's SHA-256 differs from the bundle's binding.
    BinaryChanged,
    /// The command line differs from the binding, or the binding is inconsistent.
    StdioBindingMismatch,
    /// The attestation could not be fetched (insecure origin, redirect elsewhere, too large,
    /// timeout, HTTP or network error).
    AttestationUnavailable,
}

impl AdmissionReason {
    pub fn as_str(self) -> &'static str {
        match self {
            AdmissionReason::Atsa(reason) => reason.as_str(),
            AdmissionReason::BinaryChanged => "binary_changed",
            AdmissionReason::StdioBindingMismatch => "stdio_binding_mismatch",
            AdmissionReason::AttestationUnavailable => "attestation_unavailable",
        }
    }
    /// The ATSA registry code, for registry reasons.
    pub fn code(self) -> Option<u8> {
        match self {
            AdmissionReason::Atsa(reason) => Some(reason.code()),
            AdmissionReason::BinaryChanged
            | AdmissionReason::StdioBindingMismatch
            | AdmissionReason::AttestationUnavailable => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Admitted,
    Refused,
    /// The server publishes no attestation (HTTP) or no bundle binds it (stdio).
    Unattested,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Admitted => "admitted",
            Status::Refused => "refused",
            Status::Unattested => "unattested",
        }
    }
}

/// The verified identity of an admitted server.
#[derive(Debug, Clone, Serialize)]
pub struct Identity {
    pub id: String,
    pub clearance: String,
    pub asserted_clearance: String,
    pub signer_key_id: String,
    /// `bundleId@version`.
    pub bundle: String,
    pub bundle_source: BundleSource,
    /// Admitted through the demo bundle: label it "demo" wherever it is shown.
    pub demo: bool,
    pub body_sha256: String,
}

/// What the server says about itself and nobody verified.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Claimed {
    /// The attestation's `publisher`: signed, but not bound to the key.
    pub publisher: Option<String>,
    /// `serverInfo` from the handshake.
    pub server_name: Option<String>,
    pub server_version: Option<String>,
}

/// The admission decision for one server, as shown and audited.
#[derive(Debug, Serialize)]
pub struct Verdict {
    /// The configured name (or "adhoc").
    pub server: String,
    pub status: Status,
    /// Whether the host goes on to talk to the server: admitted, or not admitted under the
    /// warn posture (never treated as admitted: no bundle allow-list applies).
    pub proceeds: bool,
    pub posture: Posture,
    pub reason: Option<&'static str>,
    pub code: Option<u8>,
    pub detail: String,
    pub identity: Option<Identity>,
    pub claimed: Claimed,
    pub transport: &'static str,
    pub origin: Option<String>,
    /// HTTP only: which signed list named the origin (the document's `netAllowedHosts`, the
    /// bundle entry's `origins`, or both).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin_binding: Option<OriginBinding>,
    pub command: Option<String>,
    pub bundle: Option<String>,
    pub demo: bool,
    /// Under which key user tool approvals are stored for this server.
    #[serde(skip)]
    pub approval_key: String,
    #[serde(skip)]
    proof: Option<Admitted>,
    #[serde(skip)]
    policy: Option<ServerPolicy>,
    #[serde(skip)]
    program: Option<PathBuf>,
}

impl Verdict {
    fn new(server: &str, transport: &'static str) -> Verdict {
        Verdict {
            server: server.to_string(),
            status: Status::Refused,
            proceeds: false,
            posture: Posture::DenyByDefault,
            reason: None,
            code: None,
            detail: String::new(),
            identity: None,
            claimed: Claimed::default(),
            transport,
            origin: None,
            origin_binding: None,
            command: None,
            bundle: None,
            demo: false,
            approval_key: String::new(),
            proof: None,
            policy: None,
            program: None,
        }
    }

    fn refused(mut self, reason: AdmissionReason, detail: String) -> Verdict {
        self.status = Status::Refused;
        self.reason = Some(reason.as_str());
        self.code = reason.code();
        self.detail = detail;
        self
    }

    fn refused_by(mut self, refusal: &Refusal, bundle: Option<&VerifiedBundle>) -> Verdict {
        self.bundle = bundle.map(VerifiedBundle::label);
        self.refused(
            AdmissionReason::Atsa(refusal.reason),
            refusal.detail.clone(),
        )
    }

    fn unattested(mut self, detail: String) -> Verdict {
        let reason = AdmissionReason::Atsa(Reason::NotMcpServer);
        self.status = Status::Unattested;
        self.reason = Some(reason.as_str());
        self.code = reason.code();
        self.detail = detail;
        self
    }

    /// Whether a proof of admission backs this verdict.
    pub fn is_admitted(&self) -> bool {
        self.proof.is_some()
    }

    /// The bundle policy governing the admitted server.
    pub fn policy(&self) -> Option<&ServerPolicy> {
        self.policy.as_ref()
    }

    /// The resolved executable that was hashed: launch exactly this file.
    pub fn program(&self) -> Option<&Path> {
        self.program.as_deref()
    }

    /// One line for people: "admitted as urn:… (clearance internal, signer k, bundle b@1) [DEMO]".
    pub fn headline(&self) -> String {
        let demo = if self.demo { " [DEMO trust root]" } else { "" };
        match (&self.identity, self.status) {
            (Some(id), Status::Admitted) => format!(
                "admitted as {} (clearance {}, signer {}, bundle {}){demo}",
                id.id, id.clearance, id.signer_key_id, id.bundle
            ),
            (_, status) => {
                let reason = match (self.reason, self.code) {
                    (Some(r), Some(c)) => format!("{r} (code {c})"),
                    (Some(r), None) => r.to_string(),
                    _ => "no reason".into(),
                };
                let proceeding = if self.proceeds {
                    " — allowed by the warn posture, not admitted"
                } else {
                    ""
                };
                format!("{}: {reason}{proceeding}", status.as_str())
            }
        }
    }

    /// The audit record's data.
    pub fn audit_data(&self) -> Value {
        let decision = match (self.status, self.proceeds) {
            (Status::Admitted, _) => "admitted",
            (_, true) => "allowed_by_posture",
            (_, false) => "refused",
        };
        let mut data = serde_json::to_value(self).expect("verdict serializes");
        if let Value::Object(map) = &mut data {
            map.insert("decision".into(), Value::String(decision.into()));
            map.insert("name".into(), Value::String(self.server.clone()));
            map.remove("server");
        }
        data
    }

    /// The audit record's server field: the verified id when admitted, else the name.
    pub fn audit_server(&self) -> String {
        match &self.identity {
            Some(id) => id.id.clone(),
            None => self.server.clone(),
        }
    }
}
