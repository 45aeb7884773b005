//! The admins' lock: a locked admin bundle, and the front-end settings that would widen what
//! it decides (other trust roots, demo mode, a user policy), refused at start and again before
//! each admission.

use std::path::{Path, PathBuf};

use time::OffsetDateTime;

use super::BundleSource;
use super::bundles::load_dir;
use crate::error::HostError;

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
