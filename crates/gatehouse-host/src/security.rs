//! The security core both front ends stand on: the trust roots, the audit log, the user's tool
//! approvals and the suspended servers, wired into one [`Gatekeeper`]. The CLI and the desktop
//! app open it through [`open`], so they load and check the same things in the same order.
//!
//! Time is passed in, never read here: `now` judges the trust roots, the clock stamps audit
//! records.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gatehouse_audit::OpenReport;
use gatehouse_policy::AuditPolicy;
use time::OffsetDateTime;

use crate::HostError;
use crate::admission::{LockGuard, Trust, TrustSettings};
use crate::gatekeeper::{Approvals, Auditor, Gatekeeper, Suspensions};
use crate::tap::Clock;

/// The audit log's file name in the data directory.
pub const AUDIT_FILE: &str = "audit.jsonl";
/// The tool approvals' file name in the data directory.
pub const APPROVALS_FILE: &str = "approvals.json";
/// The suspended servers' file name in the data directory.
pub const SUSPENSIONS_FILE: &str = "suspended.json";

/// Where the security core keeps its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityPaths {
    pub audit: PathBuf,
    pub approvals: PathBuf,
    pub suspensions: PathBuf,
}

impl SecurityPaths {
    /// The usual files in a data directory.
    pub fn in_data_dir(data: &Path) -> SecurityPaths {
        SecurityPaths {
            audit: data.join(AUDIT_FILE),
            approvals: data.join(APPROVALS_FILE),
            suspensions: data.join(SUSPENSIONS_FILE),
        }
    }
}

/// What [`open`] found, handed to the caller as soon as it is known: a later step can still
/// fail, and the user must hear about a repaired audit log (or a bundle that was not loaded)
/// even then.
#[derive(Debug, Clone, Copy)]
pub enum Finding<'a> {
    /// The trust roots were loaded; what could not be is in [`Trust::problems`].
    Trust(&'a Trust),
    /// The audit log was opened; the report says what had to be repaired and recorded.
    Audit(&'a OpenReport),
}

/// An opened security core.
#[derive(Debug)]
pub struct Security {
    /// Admission, the tool gate and the audit log; the trust is [`Gatekeeper::trust`].
    pub gatekeeper: Arc<Gatekeeper>,
    /// What opening the audit log repaired or recorded; the user must be told when it is not
    /// empty.
    pub audit_report: OpenReport,
}

/// Loads the trust roots as of `now`, opens (and if need be repairs) the audit log, and loads
/// the approvals and suspensions. `found` sees each finding before the next step runs.
/// `guard` (what the front end was started with that a lock forbids; the front end refused it
/// already when a lock was in force at start) is checked again before each admission.
///
/// Fails with [`HostError::AuditUnavailable`] when the audit log cannot be opened (nothing is
/// decided that cannot be recorded), and with [`HostError::Config`] when the approvals or
/// suspensions file cannot be used (neither is ever treated as empty).
pub fn open(
    trust: &TrustSettings,
    paths: &SecurityPaths,
    audit: &AuditPolicy,
    guard: LockGuard,
    now: OffsetDateTime,
    clock: Clock,
    mut found: impl FnMut(Finding<'_>),
) -> Result<Security, HostError> {
    let settings = trust;
    let trust = Trust::load(settings, now);
    found(Finding::Trust(&trust));
    // The bundles just loaded and the user's policy choose the log's durability, and how
    // long it keeps records (pruned at open and after each rotation).
    let setting = crate::durability::effective(audit, &trust);
    let (auditor, audit_report) = Auditor::open_keeping(
        &paths.audit,
        clock.clone(),
        setting.durability,
        &setting.retention,
    )?;
    found(Finding::Audit(&audit_report));
    let approvals = Approvals::load(&paths.approvals)?;
    let suspensions = Suspensions::load(&paths.suspensions)?;
    Ok(Security {
        gatekeeper: Arc::new(
            Gatekeeper::new(trust, auditor, approvals, clock)
                .with_suspensions(suspensions)
                .reloading(settings.clone())
                .guarding(guard)
                .choosing_durability(audit.clone()),
        ),
        audit_report,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock() -> Clock {
        Arc::new(|| time::macros::datetime!(2026-11-21 12:00 UTC))
    }

    fn guard(dir: &Path) -> LockGuard {
        LockGuard {
            system_dir: dir.join("no-system-roots"),
            asked: Default::default(),
        }
    }

    fn settings(dir: &Path) -> TrustSettings {
        TrustSettings {
            system_dir: dir.join("no-system-roots"),
            ..TrustSettings::default()
        }
    }

    #[test]
    fn findings_come_in_order_and_survive_a_later_failure() {
        let dir = tempfile::tempdir().unwrap();
        let paths = SecurityPaths::in_data_dir(&dir.path().join("data"));
        std::fs::create_dir_all(dir.path().join("data")).unwrap();
        std::fs::write(&paths.approvals, "not json").unwrap();
        let mut seen = Vec::new();
        let error = open(
            &settings(dir.path()),
            &paths,
            &AuditPolicy::default(),
            guard(dir.path()),
            clock()(),
            clock(),
            |finding| {
                seen.push(match finding {
                    Finding::Trust(_) => "trust",
                    Finding::Audit(_) => "audit",
                })
            },
        )
        .unwrap_err();
        assert_eq!(seen, ["trust", "audit"]);
        assert_eq!(error.code().as_str(), "config_invalid");
        assert!(
            error.to_string().contains(APPROVALS_FILE),
            "names the file: {error}"
        );
    }

    #[test]
    fn an_audit_log_that_cannot_be_opened_fails_after_the_trust_was_reported() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the log should be: it cannot be opened as a file.
        let paths = SecurityPaths::in_data_dir(dir.path());
        std::fs::create_dir_all(&paths.audit).unwrap();
        let mut seen = Vec::new();
        let error = open(
            &settings(dir.path()),
            &paths,
            &AuditPolicy::default(),
            guard(dir.path()),
            clock()(),
            clock(),
            |finding| seen.push(matches!(finding, Finding::Trust(_))),
        )
        .unwrap_err();
        assert_eq!(seen, [true]);
        assert_eq!(error.code().as_str(), "audit_unavailable");
    }

    #[test]
    fn a_clean_start_creates_the_log_and_reports_nothing_to_repair() {
        let dir = tempfile::tempdir().unwrap();
        let paths = SecurityPaths::in_data_dir(&dir.path().join("data"));
        let security = open(
            &settings(dir.path()),
            &paths,
            &AuditPolicy::default(),
            guard(dir.path()),
            clock()(),
            clock(),
            |_| {},
        )
        .unwrap();
        assert!(security.audit_report.created);
        assert!(security.audit_report.recovery.is_empty());
        assert!(paths.audit.exists());
        assert!(security.gatekeeper.trust().problems().is_empty());
    }
}
