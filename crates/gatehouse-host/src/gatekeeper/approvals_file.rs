//! The approvals file's format, apart from the store ([`super::approvals`]) and the primitives
//! ([`super::primitive`], each reading and adding its own field), so both import it one way.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// Approvals made by the user where the posture allows (warn), by server approval key: each
/// [`super::Primitive`] keeps its own in its own field.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct ApprovalsFile {
    pub(super) version: u32,
    /// Approval key → tool → pin.
    pub(super) servers: BTreeMap<String, BTreeMap<String, String>>,
    /// Approval key → prompt → pin (absent in files written before prompts were gated).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) prompts: BTreeMap<String, BTreeMap<String, String>>,
    /// Approval key → exact resource URIs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) resources: BTreeMap<String, BTreeSet<String>>,
    /// Approval key → resource URI prefixes (the bundle's prefix rule).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) resource_prefixes: BTreeMap<String, BTreeSet<String>>,
}
