//! Payloads of bundle installation's events.

#[allow(unused_imports)]
use super::{AuditEvent, EventPayload};
