//! Payloads of a session's events: sign-ins, elicitations, the kill switch and suspensions.

#[allow(unused_imports)]
use super::{AuditEvent, EventPayload};
