//! Evidence about who is asking and why: the `hold_for_elicitation_evidence` checks.

use crate::codes::{self, reason};
use crate::decision::{Assessment, Decision};
use crate::policy::Policy;

/// What admission concluded about the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerStanding {
    /// Verified attestation against a pinned trust root.
    Admitted,
    /// No attestation; connected only because the posture is warn.
    Unattested,
    /// Refused by admission (reachable only in warn posture or by a bug): never trusted.
    NotAdmitted,
}

/// How the host reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    /// A stdio child process.
    Stdio,
    /// Streamable HTTP. `loopback`: the origin's host is a loopback address or `localhost`.
    /// `authorized`: the host sends MCP authorization (a bearer token) to it.
    Http { loopback: bool, authorized: bool },
}

/// The elicitation mode (`form`, `url`: the code receipts, records and events carry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Form,
    Url,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Form => "form",
            Mode::Url => "url",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything about an elicitation except its content.
#[derive(Debug, Clone)]
pub struct ElicitationContext {
    pub standing: ServerStanding,
    pub transport: TransportKind,
    pub mode: Mode,
    /// Whether the host declared this mode (Gatehouse declares form and url; a future UI might
    /// not).
    pub mode_declared: bool,
    /// Whether the elicitation is tied to an in-flight request of ours (SEP-2260): it arrived on
    /// that request's stream, while requests were in flight (stdio), or inside a result (MRTR).
    pub tied_to_request: bool,
}

impl ElicitationContext {
    /// Whether the server runs on this machine (stdio, or HTTP on loopback when the policy
    /// treats loopback as local).
    pub fn server_is_local(&self, policy: &Policy) -> bool {
        match self.transport {
            TransportKind::Stdio => true,
            TransportKind::Http { loopback, .. } => {
                loopback && policy.evidence.loopback_http_is_local
            }
        }
    }
}

/// The hold checks: standing, declared mode, request binding, and SEP-2343 (a remote server
/// without MCP authorization cannot bind an elicitation to a user).
pub fn check_evidence(policy: &Policy, context: &ElicitationContext) -> Assessment {
    let rules = &policy.evidence;
    let mut assessment = Assessment::allow();
    match context.standing {
        ServerStanding::Admitted => {}
        ServerStanding::Unattested => {
            if rules.hold_unattested {
                assessment.push(reason(
                    codes::SERVER_UNATTESTED,
                    "the server is not attested: it is connected only because the posture is warn",
                ));
            }
        }
        ServerStanding::NotAdmitted => assessment.push(reason(
            codes::SERVER_NOT_ADMITTED,
            "the server was refused by admission; nothing it asks for is trusted",
        )),
    }
    if !context.mode_declared {
        assessment.push(reason(
            codes::MODE_NOT_DECLARED,
            format!(
                "the server sent a {} elicitation, a mode this host did not declare",
                context.mode.as_str()
            ),
        ));
    }
    if !context.tied_to_request && rules.require_request_binding {
        assessment.push(reason(
            codes::NOT_TIED_TO_REQUEST,
            "the elicitation is not tied to a request of ours in flight (it arrived unprompted)",
        ));
    }
    if let TransportKind::Http {
        authorized: false, ..
    } = context.transport
        && !context.server_is_local(policy)
        && rules.remote_requires_authorization
    {
        assessment.push(reason(
            codes::NO_IDENTITY_BINDING,
            "the server is remote and the host sends it no MCP authorization, so it cannot tie \
             this elicitation to you (SEP-2343)",
        ));
    }
    assessment.override_allowed = override_allowed(policy, &assessment);
    assessment
}

/// Whether the user may explicitly override this assessment: it is a hold, and every hold
/// reason's code is in `evidence.user_may_override` (and never `server_not_admitted` or
/// `schema_outside_subset`, whatever the policy says).
pub fn override_allowed(policy: &Policy, assessment: &Assessment) -> bool {
    assessment.decision == Decision::HoldForElicitationEvidence
        && assessment
            .reasons
            .iter()
            .filter(|r| r.decision == Decision::HoldForElicitationEvidence)
            .all(|r| {
                !codes::NEVER_OVERRIDABLE.contains(&r.code)
                    && policy
                        .evidence
                        .user_may_override
                        .iter()
                        .any(|c| c == r.code)
            })
}
