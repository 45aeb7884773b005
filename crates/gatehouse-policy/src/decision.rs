//! Decisions, reasons, and how several reasons combine into one decision.

use serde::{Deserialize, Serialize};

/// The six decisions of elicitation.md §3. Exhaustive on purpose: every caller must handle each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    AllowElicitationWithReceipt,
    HoldForElicitationEvidence,
    DenySensitiveFormElicitation,
    DenyUntrustedElicitationUrl,
    DenyTokenOrSecretTransit,
    KillSessionOnElicitationAbuse,
}

impl Decision {
    /// The stable snake_case name (CLI JSON, audit log, UI).
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::AllowElicitationWithReceipt => "allow_elicitation_with_receipt",
            Decision::HoldForElicitationEvidence => "hold_for_elicitation_evidence",
            Decision::DenySensitiveFormElicitation => "deny_sensitive_form_elicitation",
            Decision::DenyUntrustedElicitationUrl => "deny_untrusted_elicitation_url",
            Decision::DenyTokenOrSecretTransit => "deny_token_or_secret_transit",
            Decision::KillSessionOnElicitationAbuse => "kill_session_on_elicitation_abuse",
        }
    }

    /// Higher is stricter. Allow < hold < the denials < kill.
    pub fn severity(self) -> u8 {
        match self {
            Decision::AllowElicitationWithReceipt => 0,
            Decision::HoldForElicitationEvidence => 1,
            Decision::DenySensitiveFormElicitation => 2,
            Decision::DenyUntrustedElicitationUrl => 2,
            Decision::DenyTokenOrSecretTransit => 3,
            Decision::KillSessionOnElicitationAbuse => 4,
        }
    }
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why: a stable snake_case code and a sentence for people. `decision` is what this reason
/// alone would decide.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    pub code: &'static str,
    pub detail: String,
    #[serde(skip)]
    pub decision: Decision,
}

impl Reason {
    pub fn new(decision: Decision, code: &'static str, detail: impl Into<String>) -> Reason {
        Reason {
            code,
            detail: detail.into(),
            decision,
        }
    }
}

/// One decision and every reason behind it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Assessment {
    pub decision: Decision,
    pub reasons: Vec<Reason>,
    /// A hold the policy lets the user override explicitly (every hold reason is overridable).
    pub override_allowed: bool,
}

impl Assessment {
    pub fn allow() -> Assessment {
        Assessment {
            decision: Decision::AllowElicitationWithReceipt,
            reasons: Vec::new(),
            override_allowed: false,
        }
    }

    /// Adds a reason; the decision becomes the most severe seen.
    pub fn push(&mut self, reason: Reason) {
        if reason.decision.severity() > self.decision.severity() {
            self.decision = reason.decision;
        }
        self.reasons.push(reason);
    }

    pub fn merge(&mut self, other: Assessment) {
        for reason in other.reasons {
            self.push(reason);
        }
    }

    pub fn is_allowed(&self) -> bool {
        self.decision == Decision::AllowElicitationWithReceipt
    }
}
