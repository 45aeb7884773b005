//! Which durability the audit log runs in: what the user's policy asks (`[audit]`) and what
//! the installed trust-root bundles require (`signed.audit`), combined so that a bundle's
//! choice always applies and the user can only make it stricter. Under a locked bundle the
//! user cannot bring a policy file at all, so nothing can lower it.

use std::time::Duration;

use gatehouse_attest::bundle::AuditDurability;
use gatehouse_audit::Durability;
use gatehouse_policy::{AuditMode, AuditPolicy};
use serde::Serialize;

use crate::admission::Trust;

/// The audit log's durability and who chose it, as the CLI, the desktop and the log show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditSetting {
    #[serde(flatten)]
    pub durability: Durability,
    /// `policy` (the user's policy file or the shipped default), then the label of every
    /// bundle that requires a durability.
    pub set_by: Vec<String>,
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
    AuditSetting { durability, set_by }
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
}
