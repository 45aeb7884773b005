//! Payloads of the gate's events: admissions, decisions on tool calls, prompts and resource
//! reads, approvals, pin mismatches, trust reloads, durability changes and lock refusals.

#[allow(unused_imports)]
use super::{AuditEvent, EventPayload};
