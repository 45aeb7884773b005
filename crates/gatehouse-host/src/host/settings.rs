//! The Settings view: the posture and bundles in force, the policy, the paths, and what
//! opening the audit log repaired.

use gatehouse_attest::bundle::Posture;
use gatehouse_audit::OpenReport;
use serde::Serialize;
use serde_json::{Value, json};

use super::Host;
use crate::admission::{BundleProblem, BundleSummary, TrustSettings};

/// Something opening the audit log had to repair or record, for the user to act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditWarning {
    /// The event of the record the log wrote about it: `audit_torn_tail` or
    /// `audit_head_mismatch`, so the Audit view can filter for it.
    pub code: String,
    pub message: String,
}

impl AuditWarning {
    /// One warning per finding in the report; none for a log that opened clean.
    pub fn from_report(report: &OpenReport) -> Vec<AuditWarning> {
        let mut warnings = Vec::new();
        if let Some(torn) = &report.recovery.torn_tail {
            warnings.push(AuditWarning {
                code: gatehouse_audit::EVENT_TORN_TAIL.to_string(),
                message: format!(
                    "The audit log's last record was torn (a crash mid-write). Its {} bytes were moved to {} and the repair was recorded as record {}. Check the whole log with Verify chain in the Audit view, or run `gatehouse audit verify`.",
                    torn.bytes,
                    torn.side_file.display(),
                    torn.seq
                ),
            });
        }
        if let Some(short) = &report.recovery.short_tail {
            let message = if short.flush_failed == 0 {
                format!(
                    "The computer stopped (a power cut or a crash of the system) while Gatehouse was recording in the batched durability mode: audit records of the last {} ms (at most {} records) after record {} may be missing. This is not tampering; it was recorded as record {}.",
                    short.flush_ms,
                    short.flush_records,
                    short.head_seq.map_or("?".to_string(), |s| s.to_string()),
                    short.seq
                )
            } else {
                // A failed flush (a disk error), not only a restart: say which.
                format!(
                    "Audit records may be missing: {}. This is not tampering; it was recorded as record {}.",
                    short.describe(),
                    short.seq
                )
            };
            warnings.push(AuditWarning {
                code: gatehouse_audit::EVENT_SHORT_TAIL.to_string(),
                message,
            });
        }
        if let Some(mismatch) = &report.recovery.head_mismatch {
            warnings.push(AuditWarning {
                code: gatehouse_audit::EVENT_HEAD_MISMATCH.to_string(),
                message: format!(
                    "The audit log's head does not match its end ({}): {}. This was recorded as record {}. Run `gatehouse audit verify` (or Verify chain in the Audit view) and compare the log with any copy of it kept elsewhere.",
                    mismatch.problem.code(),
                    mismatch.detail,
                    mismatch.seq
                ),
            });
        }
        warnings
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    pub posture: Posture,
    pub posture_reason: String,
    pub locked_by: Option<String>,
    pub bundles: Vec<BundleSummary>,
    pub problems: Vec<BundleProblem>,
    pub policy: Value,
    pub paths: Value,
    pub demo: bool,
    /// What opening the audit log repaired or recorded when the app started; empty when it
    /// opened clean.
    pub audit_warnings: Vec<AuditWarning>,
    /// The audit log's durability mode, its rotation and retention (`retention`), and who
    /// chose each.
    pub audit: crate::durability::AuditSetting,
}

impl Settings {
    /// The audit log's durability, rotation and retention, and who chose each, as a host
    /// opened with `policy` and `trust` keeps it: for a front end that shows it without
    /// opening a host (`gatehouse audit settings`).
    pub fn audit_for(
        policy: &gatehouse_policy::AuditPolicy,
        trust: &crate::admission::Trust,
    ) -> crate::durability::AuditSetting {
        crate::durability::effective(policy, trust)
    }
}

impl Host {
    pub fn settings(&self) -> Settings {
        let trust = self.gatekeeper.trust();
        let paths = &self.options.paths;
        Settings {
            posture: trust.posture(),
            posture_reason: trust.posture_reason().to_string(),
            locked_by: trust.locked_by().map(str::to_string),
            bundles: trust.summaries(),
            problems: trust.problems().to_vec(),
            policy: json!({
                "path": self.options.policy,
                "source": if self.options.policy.is_some() { "file" } else { "shipped default" },
            }),
            paths: json!({
                "config": paths.config,
                "data": paths.data,
                "logs": paths.logs,
                "audit": self.options.audit_path(),
                "userTrustRoots": paths.user_trust_roots,
                "systemTrustRoots": paths.system_trust_roots,
            }),
            demo: self.options.demo,
            audit_warnings: self.audit_warnings.clone(),
            audit: self.gatekeeper.audit_setting(),
        }
    }

    /// The trust settings the host was opened with.
    pub fn trust_settings(&self) -> &TrustSettings {
        &self.trust
    }
}
