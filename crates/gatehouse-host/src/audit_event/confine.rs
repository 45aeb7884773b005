//! Records of confinement (issue 28): a connection the egress proxy refused, and the person
//! changing a server's confinement in `servers.json`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{AuditEvent, EventPayload};
use crate::confine::view::EgressRefusal;

/// A confined server tried to reach a host its grants do not name (or sent its proxy a
/// request it could not read). Bounded: at most a window's worth are written, the next one
/// written says how many were left out before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EgressRefused {
    /// The configured server name.
    pub name: String,
    /// The host asked for ("" when the request could not be read).
    pub host: String,
    pub port: u16,
    pub reason: EgressRefusal,
    /// Refusals not recorded (the flood bound) since the last one that was.
    pub suppressed_before: u32,
}

impl EventPayload for EgressRefused {
    const EVENT: AuditEvent = AuditEvent::EgressRefused;
}

/// The person changed an unattested server's confinement in `servers.json`: its
/// `confinement` object before and after (`null`: none, the default confinement).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfinementChanged {
    pub name: String,
    pub before: Value,
    pub after: Value,
}

impl EventPayload for ConfinementChanged {
    const EVENT: AuditEvent = AuditEvent::ConfinementChanged;
}
