//! Payloads of bundle installation's events.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{AuditEvent, EventPayload};

/// A trust-root bundle was installed into an admin directory (`bundle install`), written
/// before the file is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleAccepted {
    /// `BUNDLE_ID@VERSION`.
    pub bundle: String,
    /// The root keys whose signatures counted.
    pub signers: Vec<String>,
    /// SHA-256 (hex) of the signed content, as the highest-version record keeps it.
    pub sha256: String,
    /// The installed bundle of that id it replaces (`BUNDLE_ID@VERSION`), if any.
    pub replaces: Option<String>,
    /// The file written.
    pub into: PathBuf,
}

impl EventPayload for BundleAccepted {
    const EVENT: AuditEvent = AuditEvent::BundleAccepted;
}

/// A bundle install was refused; nothing was written. Each field the decision got as far as
/// reading is set, the rest are null.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleRefused {
    pub bundle_id: Option<String>,
    pub version: Option<u64>,
    /// The installed bundle of that id (`BUNDLE_ID@VERSION`), when one verifies.
    pub installed: Option<String>,
    /// The highest version recorded for that id.
    pub highest_seen: Option<u64>,
    /// The bundle file given.
    pub file: PathBuf,
    /// The admin directory it was to go into.
    pub into: PathBuf,
    /// The refusal's stable code.
    pub reason: crate::ErrorCode,
    pub detail: String,
}

impl EventPayload for BundleRefused {
    const EVENT: AuditEvent = AuditEvent::BundleRefused;
}
