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
//!
//! Split by concern: loading the trust-root bundles (`bundles.rs`), the admins' lock and what
//! it refuses (`lock.rs`), the admission decision (`admit.rs`), the stdio executable checks
//! (`executable.rs`), remote servers the admins vouch for (`vouched.rs`) and the verdict it ends in (`verdict.rs`); here the loaded trust roots.

mod admit;
mod bundles;
mod claimed;
mod executable;
mod lock;
mod package;
mod verdict;
mod vouched;

use std::collections::BTreeMap;
use std::path::PathBuf;

use gatehouse_attest::bundle::{Posture, TrustStore, VerifiedBundle};

pub use bundles::{
    BundleProblem, BundleSource, BundleSummary, SYSTEM_TRUST_ROOTS, TrustSettings, VERSIONS_FILE,
    VersionRecord, check_record, read_bundle_file, read_versions, record_version,
};
pub use executable::{file_sha256, resolve_launch_program, resolve_program, working_directory};
pub use lock::{AdminLock, LockGuard, Widening, admin_lock, refuse_widening_under_lock};
pub use verdict::{AdmissionReason, Claimed, Identity, IdentitySource, Status, Verdict};

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

impl Trust {
    pub fn posture(&self) -> Posture {
        self.posture
    }

    pub fn posture_reason(&self) -> &str {
        &self.posture_reason
    }

    /// The strictest audit durability the loaded bundles require, and which bundles say so.
    pub fn audit_durability(
        &self,
    ) -> Option<(gatehouse_attest::bundle::AuditDurability, Vec<String>)> {
        self.store.audit_durability()
    }

    /// The longest audit retention the loaded bundles require (days), and which bundles say
    /// so.
    pub fn audit_retention(&self) -> Option<(u32, Vec<String>)> {
        self.store.audit_retention()
    }

    /// The strictest bundle-level confinement mode of the loaded bundles, and which bundles
    /// set it.
    pub fn confinement_mode(&self) -> Option<(gatehouse_confine::ConfinementMode, Vec<String>)> {
        self.store.confinement_mode()
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

    /// The loaded bundles, for what reads their entries (the definition review's other
    /// servers' tools).
    pub(crate) fn bundles(&self) -> &[VerifiedBundle] {
        self.store.bundles()
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
}
