//! Payloads of the gate's events: admissions, decisions on tool calls, prompts and resource
//! reads, approvals, pin mismatches, trust reloads, durability changes and lock refusals.
//!
//! Each type serializes to exactly the `data` object these records have always held (field
//! names and order), so logs written before and after read the same.

use gatehouse_attest::bundle::Posture;
use gatehouse_attest::gate::GateReason;
use gatehouse_attest::http_origin::OriginBinding;
use gatehouse_audit::Durability;
use serde::{Deserialize, Serialize};

use super::{AuditEvent, EventPayload};
use crate::admission::{BundleSource, Claimed, Identity, Status, Trust, Verdict};
use crate::caller::Caller;
use crate::config::ServerKind;

/// What admission did with a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdmissionDecision {
    Admitted,
    /// Not admitted, but the warn posture lets the host talk to it.
    AllowedByPosture,
    Refused,
}

/// `admission`: the verdict, as [`Verdict`] serializes (its `server` written as `name`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Admission {
    /// The configured name (or "adhoc").
    pub name: String,
    pub status: Status,
    pub proceeds: bool,
    pub posture: Posture,
    pub reason: Option<crate::ErrorCode>,
    pub code: Option<u8>,
    pub detail: String,
    pub identity: Option<Identity>,
    pub claimed: Claimed,
    pub transport: ServerKind,
    pub origin: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_binding: Option<OriginBinding>,
    pub command: Option<String>,
    /// A package server: the bound package, its closure and what was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<PackageSummary>,
    pub bundle: Option<String>,
    pub demo: bool,
    pub decision: AdmissionDecision,
    /// A stdio server's confinement as decided at this admission (issue 28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement: Option<crate::confine::view::ConfinementView>,
}

/// A package server's admission (issue 25): what is bound and what was checked.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PackageSummary {
    pub ecosystem: gatehouse_attest::package::Ecosystem,
    pub package: String,
    pub version: String,
    /// Packages in the closure, the bound one included.
    pub closure: usize,
    /// Files of the tree checked against the manifest at this admission.
    pub files_verified: usize,
    /// The user's own arguments, as passed (directories canonical).
    pub user_args: Vec<String>,
    /// How the config launched it (`npx`, `uvx`, `mcpb`).
    pub launcher: gatehouse_package::LauncherKind,
}

impl EventPayload for Admission {
    const EVENT: AuditEvent = AuditEvent::Admission;
}

impl From<&Verdict> for Admission {
    fn from(v: &Verdict) -> Admission {
        let decision = match (v.status, v.proceeds) {
            (Status::Admitted, _) => AdmissionDecision::Admitted,
            (_, true) => AdmissionDecision::AllowedByPosture,
            (_, false) => AdmissionDecision::Refused,
        };
        Admission {
            name: v.server.clone(),
            status: v.status,
            proceeds: v.proceeds,
            posture: v.posture,
            reason: v.reason,
            code: v.code,
            detail: v.detail.clone(),
            identity: v.identity.clone(),
            claimed: v.claimed.clone(),
            transport: v.transport,
            origin: v.origin.clone(),
            origin_binding: v.origin_binding,
            command: v.command.clone(),
            package: v.package.clone(),
            bundle: v.bundle.clone(),
            demo: v.demo,
            decision,
            confinement: v.confinement.clone(),
        }
    }
}

/// One gate decision (`tool_call`, `prompt_get`, `resource_read`): the primitive's own
/// decision (`decision` first, then what was asked for and why), then the server it was asked
/// of and, for a downstream client's request, who asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decided<D> {
    #[serde(flatten)]
    pub decision: D,
    /// The server's admission status.
    pub admission: Status,
    /// The server's configured name.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<Caller>,
}

/// `tool_call`.
pub type ToolCall = Decided<ToolDecision>;
/// `prompt_get`.
pub type PromptGet = Decided<PromptDecision>;
/// `resource_read`.
pub type ResourceRead = Decided<ResourceDecision>;

impl EventPayload for ToolCall {
    const EVENT: AuditEvent = AuditEvent::ToolCall;
}

impl EventPayload for PromptGet {
    const EVENT: AuditEvent = AuditEvent::PromptGet;
}

impl EventPayload for ResourceRead {
    const EVENT: AuditEvent = AuditEvent::ResourceRead;
}

/// The gate's decision on a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum ToolDecision {
    Allowed {
        tool: String,
        /// The allow-list scope that allowed it (`bundle:acme@7`, `user`).
        scope: String,
        pinned: bool,
    },
    Denied {
        tool: String,
        reason: GateReason,
        /// The ATSA registry code, where the reason has one (`null` otherwise).
        code: Option<u8>,
        detail: String,
    },
}

impl ToolCall {
    /// A call of `tool` to the demo server, allowed or denied as not admitted (test records).
    #[cfg(test)]
    pub(crate) fn sample(tool: &str, denied: bool) -> ToolCall {
        let tool = tool.to_string();
        let decision = if denied {
            ToolDecision::Denied {
                detail: format!("the tool {tool:?} is not on this server's allow-list"),
                tool,
                reason: GateReason::ToolNotAdmitted,
                code: GateReason::ToolNotAdmitted.code(),
            }
        } else {
            ToolDecision::Allowed {
                tool,
                scope: "bundle:demo@1".into(),
                pinned: false,
            }
        };
        Decided {
            decision,
            admission: Status::Admitted,
            name: "demo".into(),
            caller: None,
        }
    }
}

impl ToolDecision {
    /// The tool asked for.
    pub fn tool(&self) -> &str {
        match self {
            ToolDecision::Allowed { tool, .. } | ToolDecision::Denied { tool, .. } => tool,
        }
    }

    /// Why it was denied; `None` when allowed.
    pub fn reason(&self) -> Option<GateReason> {
        match self {
            ToolDecision::Allowed { .. } => None,
            ToolDecision::Denied { reason, .. } => Some(*reason),
        }
    }

    /// `allowed` or `denied`, as the record's `decision` says.
    pub fn code(&self) -> &'static str {
        match self {
            ToolDecision::Allowed { .. } => "allowed",
            ToolDecision::Denied { .. } => "denied",
        }
    }
}

/// The gate's decision on a `prompts/get`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum PromptDecision {
    Allowed {
        prompt: String,
        scope: String,
        pinned: bool,
    },
    Denied {
        prompt: String,
        reason: GateReason,
        detail: String,
    },
}

/// What a resource request was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceAction {
    Read,
    Subscribe,
    /// An argument completion for a resource template.
    Complete,
}

/// What a resource decision names: a URI, or (a refused completion) a listed template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceTarget {
    Uri(String),
    Template(String),
}

/// The gate's decision on a resource request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum ResourceDecision {
    Allowed {
        action: ResourceAction,
        uri: String,
        scope: String,
        /// The prefix that allowed it; `null` for an exact entry.
        prefix: Option<String>,
    },
    Denied {
        action: ResourceAction,
        #[serde(flatten)]
        target: ResourceTarget,
        reason: GateReason,
        detail: String,
    },
}

/// Who approved: only ever the user (a bundle's entries are not approvals).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalScope {
    User,
}

/// A user approval (`tool_approved`, `prompt_approved`, `resource_approved`): what was
/// approved, under which approval key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approved<E> {
    #[serde(flatten)]
    pub entry: E,
    pub approval_key: String,
    pub scope: ApprovalScope,
    /// The codes of the high findings of the approved definition that the person
    /// acknowledged (`gatehouse_review::FindingKind::code`); absent when there were none, so
    /// a record without findings is byte for byte what it was before findings existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
}

/// A tool approved with the pin of its current definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolPin {
    pub tool: String,
    pub pin: String,
}

/// A prompt approved with the pin of its current definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptPin {
    pub prompt: String,
    pub pin: String,
}

/// An approved exact resource URI or URI prefix (the bundle's two kinds of entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceEntry {
    Uri(String),
    Prefix(String),
}

impl ResourceEntry {
    pub fn as_str(&self) -> &str {
        match self {
            ResourceEntry::Uri(s) | ResourceEntry::Prefix(s) => s,
        }
    }
}

impl EventPayload for Approved<ToolPin> {
    const EVENT: AuditEvent = AuditEvent::ToolApproved;
}

impl EventPayload for Approved<PromptPin> {
    const EVENT: AuditEvent = AuditEvent::PromptApproved;
}

impl EventPayload for Approved<ResourceEntry> {
    const EVENT: AuditEvent = AuditEvent::ResourceApproved;
}

/// A pinned definition that differs from its pin (`tool_pin_mismatch`,
/// `prompt_pin_mismatch`), first seen in a fresh listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinMismatched<N> {
    #[serde(flatten)]
    pub subject: N,
    /// The pin, `sha256:<hex>`.
    pub expected: String,
    /// The listed definition's pin.
    pub actual: String,
    /// The allow-list scope of the pin.
    pub scope: String,
    /// The server's configured name.
    pub name: String,
}

/// The tool a record is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolName {
    pub tool: String,
}

/// The prompt a record is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptName {
    pub prompt: String,
}

impl EventPayload for PinMismatched<ToolName> {
    const EVENT: AuditEvent = AuditEvent::ToolPinMismatch;
}

impl EventPayload for PinMismatched<PromptName> {
    const EVENT: AuditEvent = AuditEvent::PromptPinMismatch;
}

/// `lock_refused`: a locked admin bundle forbids what the front end was started with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockRefused {
    pub code: String,
    pub detail: String,
}

impl EventPayload for LockRefused {
    const EVENT: AuditEvent = AuditEvent::LockRefused;
}

/// `trust_reloaded`: what the trust decided with before and after a reload that changed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustReloaded {
    pub before: TrustState,
    pub after: TrustState,
}

impl EventPayload for TrustReloaded {
    const EVENT: AuditEvent = AuditEvent::TrustReloaded;
}

/// What a trust decides with: the bundles, their digests, the posture and the problems.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustState {
    pub bundles: Vec<BundleState>,
    /// The SHA-256 of each bundle's signed part.
    pub sha256: Vec<String>,
    pub posture: Posture,
    pub locked_by: Option<String>,
    pub problems: Vec<TrustProblem>,
}

impl From<&Trust> for TrustState {
    fn from(trust: &Trust) -> TrustState {
        TrustState {
            bundles: trust
                .summaries()
                .into_iter()
                .map(|b| BundleState {
                    bundle: b.bundle,
                    locked: b.locked,
                    expires: b.expires,
                    servers: b.servers,
                    signers: b.signers,
                    source: b.source,
                })
                .collect(),
            sha256: trust.digests(),
            posture: trust.posture(),
            locked_by: trust.locked_by().map(str::to_string),
            problems: trust
                .problems()
                .iter()
                .map(|p| TrustProblem {
                    code: p.code.to_string(),
                    message: p.message.clone(),
                })
                .collect(),
        }
    }
}

/// One loaded bundle, as a trust reload compares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleState {
    /// `bundleId@version`.
    pub bundle: String,
    pub locked: bool,
    pub expires: String,
    pub servers: Vec<String>,
    pub signers: Vec<String>,
    pub source: BundleSource,
}

/// A bundle that was not loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustProblem {
    pub code: String,
    pub message: String,
}

/// `durability_changed`: the audit log's mode before and after, and who chose the new one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DurabilityChanged {
    pub before: DurabilityMode,
    pub after: DurabilityMode,
    pub set_by: Vec<String>,
}

impl EventPayload for DurabilityChanged {
    const EVENT: AuditEvent = AuditEvent::DurabilityChanged;
}

/// A durability as the audit crate serializes it: `{"mode": "sync"}` or `{"mode": "batched",
/// "flush_ms": …, "flush_records": …}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DurabilityMode {
    pub mode: Mode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_records: Option<u32>,
}

/// How records are made durable (the audit crate's `Durability::code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Sync,
    Batched,
}

impl From<Durability> for DurabilityMode {
    fn from(durability: Durability) -> DurabilityMode {
        let (flush_ms, flush_records) = match durability {
            Durability::Sync => (None, None),
            Durability::Batched {
                max_delay,
                max_records,
            } => (Some(max_delay.as_millis() as u64), Some(max_records)),
        };
        DurabilityMode {
            mode: match durability {
                Durability::Sync => Mode::Sync,
                Durability::Batched { .. } => Mode::Batched,
            },
            flush_ms,
            flush_records,
        }
    }
}

#[cfg(test)]
mod tests;
