//! Which durability the audit log runs in, and how long it keeps records: what the user's
//! policy asks (`[audit]`) and what the installed trust-root bundles require
//! (`signed.audit`), combined so that a bundle's choice always applies and the user can only
//! make it stricter. For retention the strictest is the longest: nothing anyone asked to keep
//! is deleted. Under a locked bundle the user cannot bring a policy file at all, so nothing
//! can lower it. The segment size is the policy's alone (it changes no record's fate).

use std::time::Duration;

use gatehouse_attest::bundle::AuditDurability;
use gatehouse_audit::Durability;
use gatehouse_policy::{AuditMode, AuditPolicy};
use serde::Serialize;

use crate::admission::Trust;

/// The audit log's durability and who chose it, as the CLI, the desktop and the log show it;
/// with its retention and rotation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditSetting {
    #[serde(flatten)]
    pub durability: Durability,
    /// `policy` (the user's policy file or the shipped default), then the label of every
    /// bundle that requires a durability.
    pub set_by: Vec<String>,
    /// How long records are kept and how large a segment grows.
    pub retention: RetentionSetting,
}

/// The audit log's retention (the longest anyone asked for) and rotation, and who chose them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RetentionSetting {
    /// Sealed segments whose every record is older than this many days are removed; `None`
    /// keeps every record forever (`null` in JSON).
    pub keep_days: Option<u32>,
    /// Who chose `keep_days`: `policy` when the user's policy (or the shipped default) asks
    /// for it, and the label of every bundle whose `retainDays` is that long.
    pub set_by: Vec<String>,
    /// The segment size in MiB (the policy's `rotate_mib`).
    pub rotate_mib: u32,
}

impl RetentionSetting {
    /// The audit crate's retention.
    pub fn retention(&self) -> gatehouse_audit::Retention {
        gatehouse_audit::Retention {
            keep_days: self.keep_days,
        }
    }

    /// The audit crate's rotation.
    pub fn rotation(&self) -> gatehouse_audit::Rotation {
        gatehouse_audit::Rotation::from_mib(self.rotate_mib)
    }

    /// One line for people: `180 days (set by policy), 64 MiB segments`.
    pub fn describe(&self) -> String {
        let keep = match self.keep_days {
            None => "kept forever".to_string(),
            Some(1) => "kept 1 day".to_string(),
            Some(days) => format!("kept {days} days"),
        };
        format!(
            "{keep} (set by {}), sealed into a new segment every {} MiB",
            self.set_by.join(", "),
            self.rotate_mib
        )
    }
}

/// The longest of the user's retention and every bundle's, and who asked for it; the
/// policy's segment size.
pub fn retention(policy: &AuditPolicy, trust: &Trust) -> RetentionSetting {
    longest(policy, trust.audit_retention())
}

/// [`retention`] with the bundles' longest retention and their labels given.
fn longest(policy: &AuditPolicy, bundles: Option<(u32, Vec<String>)>) -> RetentionSetting {
    let policy_only = || vec!["policy".to_string()];
    let (keep_days, set_by) = match (policy.keep_days(), bundles) {
        // The user keeps everything, or no bundle says: the policy decides alone.
        (None, _) => (None, policy_only()),
        (Some(days), None) => (Some(days), policy_only()),
        (Some(days), Some((bundle, labels))) => match days.cmp(&bundle) {
            std::cmp::Ordering::Greater => (Some(days), policy_only()),
            std::cmp::Ordering::Less => (Some(bundle), labels),
            std::cmp::Ordering::Equal => {
                let mut set_by = policy_only();
                set_by.extend(labels);
                (Some(days), set_by)
            }
        },
    };
    RetentionSetting {
        keep_days,
        set_by,
        rotate_mib: policy.rotate_mib,
    }
}

/// The user's choice as the audit crate's mode.
pub fn from_policy(policy: &AuditPolicy) -> Durability {
    match policy.durability {
        AuditMode::Sync => Durability::Sync,
        AuditMode::Batched => Durability::Batched {
            max_delay: Duration::from_millis(policy.flush_ms),
            max_records: policy.flush_records,
        },
    }
}

/// The strictest of the user's choice and every bundle's requirement. A bundle's batched
/// window leaves out what it does not set, and the user's numbers fill it in.
pub fn effective(policy: &AuditPolicy, trust: &Trust) -> AuditSetting {
    let user = from_policy(policy);
    let mut set_by = vec!["policy".to_string()];
    let durability = match trust.audit_durability() {
        None => user,
        Some((required, labels)) => {
            set_by.extend(labels);
            let required = match required {
                AuditDurability::Sync => Durability::Sync,
                AuditDurability::Batched {
                    flush_ms,
                    flush_records,
                } => Durability::Batched {
                    max_delay: Duration::from_millis(flush_ms.unwrap_or(policy.flush_ms)),
                    max_records: flush_records.unwrap_or(policy.flush_records),
                },
            };
            user.strictest(required)
        }
    };
    AuditSetting {
        durability,
        set_by,
        retention: retention(policy, trust),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_choice_maps_to_the_audit_mode() {
        assert_eq!(
            from_policy(&AuditPolicy::default()),
            Durability::Batched {
                max_delay: Duration::from_millis(50),
                max_records: 128
            }
        );
        let sync = AuditPolicy {
            durability: AuditMode::Sync,
            ..AuditPolicy::default()
        };
        assert_eq!(from_policy(&sync), Durability::Sync);
    }

    #[test]
    fn the_longest_retention_wins_and_names_who_asked_for_it() {
        let policy = |retain_days| AuditPolicy {
            retain_days,
            rotate_mib: 8,
            ..AuditPolicy::default()
        };
        let acme = || Some((365, vec!["acme@7".to_string()]));
        let check = |policy: AuditPolicy, bundles, keep: Option<u32>, by: &[&str]| {
            let setting = longest(&policy, bundles);
            assert_eq!(setting.keep_days, keep, "{setting:?}");
            assert_eq!(setting.set_by, by, "{setting:?}");
            assert_eq!(setting.rotate_mib, 8);
        };
        // A bundle's longer retention beats a shorter policy…
        check(policy(30), acme(), Some(365), &["acme@7"]);
        // …a shorter one never shortens the policy's…
        check(policy(400), acme(), Some(400), &["policy"]);
        // …and keeping forever beats any number.
        check(policy(0), acme(), None, &["policy"]);
        check(policy(365), acme(), Some(365), &["policy", "acme@7"]);
        check(policy(180), None, Some(180), &["policy"]);
        check(policy(0), None, None, &["policy"]);
        let setting = longest(&policy(30), acme());
        assert_eq!(setting.retention().keep_days, Some(365));
        assert_eq!(setting.rotation().segment_max_bytes, 8 * 1024 * 1024);
        assert_eq!(
            setting.describe(),
            "kept 365 days (set by acme@7), sealed into a new segment every 8 MiB"
        );
        assert_eq!(
            longest(&policy(0), None).describe(),
            "kept forever (set by policy), sealed into a new segment every 8 MiB"
        );
    }
}
