//! Receipts and records: what the audit log keeps of each elicitation, written before any
//! answer is sent, and the record callers are shown.

use gatehouse_policy::{Decision, Mode, Reason, UrlDisplay};
use rmcp::model::ElicitationAction;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::elicit::{Correlation, Handling};
use super::{ElicitationBroker, Session};
use crate::audit_event::session::{ElicitationReceipt, receipt_attribution};
use crate::caller::Attribution;
use crate::consent::PromptBody;
use crate::error::HostError;

/// One elicitation as handled: what the CLI prints with `--json` and the UI lists.
#[derive(Debug, Clone, Serialize)]
pub struct ElicitationRecord {
    pub receipt_id: String,
    pub prompt_id: u64,
    pub mode: Mode,
    pub decision: Decision,
    pub reasons: Vec<Reason>,
    /// What the server was answered.
    pub action: ElicitationAnswer,
    /// The user explicitly overrode a hold.
    pub overridden: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<UrlDisplay>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round: Option<usize>,
    pub correlation: Correlation,
    /// Which downstream client caused it, as far as the host can tell (`kind`: `none`,
    /// `client` or `unknown`).
    pub attribution: Attribution,
    /// Something the user should know (why it was cancelled, what was not overridden).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// For a URL the user opened: whether its completion was seen (2025-11-25) or the retried
    /// request succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed: Option<bool>,
}

/// What an elicitation was answered (its stable snake_case code is the receipt's `action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElicitationAnswer {
    Accept,
    Decline,
    Cancel,
}

impl ElicitationAnswer {
    pub fn of(action: &ElicitationAction) -> ElicitationAnswer {
        match action {
            ElicitationAction::Accept => ElicitationAnswer::Accept,
            ElicitationAction::Decline => ElicitationAnswer::Decline,
            // rmcp's action is open to new variants; anything else ends the request.
            _ => ElicitationAnswer::Cancel,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ElicitationAnswer::Accept => "accept",
            ElicitationAnswer::Decline => "decline",
            ElicitationAnswer::Cancel => "cancel",
        }
    }
}

impl std::fmt::Display for ElicitationAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

pub(super) fn random_id(prefix: &str) -> String {
    let mut bytes = [0u8; 16];
    // The OS RNG; a receipt id only has to be unique, but unguessable costs nothing.
    getrandom::fill(&mut bytes).expect("the OS random number generator works");
    format!("{prefix}{}", hex::encode(bytes))
}

impl ElicitationBroker {
    fn receipt(&self, session: &Session, h: &Handling) -> ElicitationReceipt {
        let verdict = &session.verdict;
        let (url, host, host_unicode) = match &h.prompt.body {
            PromptBody::Url { display } => (
                Some(display.full.clone()),
                Some(display.host.clone()),
                Some(display.host_unicode.clone()),
            ),
            _ => (None, None, None),
        };
        let content_sha256 = h.content.as_ref().map(|c| {
            let bytes = serde_json::to_vec(c).expect("content serializes");
            format!("sha256:{}", hex::encode(Sha256::digest(&bytes)))
        });
        // The client when the elicitation is tied to one, null when none is involved,
        // "unknown" when several were running (then `caller_candidates` lists them).
        let (attribution, caller, caller_candidates) = receipt_attribution(&h.prompt.attribution);
        ElicitationReceipt {
            receipt_id: h.prompt.receipt_id.clone(),
            prompt_id: h.prompt.id,
            name: session.server.clone(),
            server_id: verdict
                .identity
                .as_ref()
                .filter(|_| verdict.is_admitted())
                .map(|i| i.id.clone()),
            admission: verdict.status,
            origin: verdict.origin.clone(),
            command: verdict.command.clone(),
            caller,
            attribution,
            caller_candidates,
            user: self.options.user.clone(),
            session_id: None,
            era: h.prompt.era,
            correlation: h.correlation.clone(),
            elicitation_id: h.elicitation_id.clone(),
            input_key: h.input_key.clone(),
            round: h.round,
            mode: h.prompt.body.mode(),
            decision: h.prompt.assessment.decision,
            reasons: h.prompt.assessment.reasons.iter().map(Into::into).collect(),
            overridden: h.overridden,
            url,
            host,
            host_unicode,
            action: ElicitationAnswer::of(&h.action),
            content_sha256,
            note: h.note.clone(),
            policy_version: self.policy.version.clone(),
            bundle: verdict.bundle.clone(),
            authorization: session
                .authorization
                .lock()
                .expect("session poisoned")
                .clone(),
        }
    }

    pub(super) fn write_receipt(&self, session: &Session, h: &Handling) -> Result<u64, HostError> {
        self.gatekeeper
            .write_for(&session.verdict, &self.receipt(session, h))
    }

    /// Writes the receipt (unless the URL path already did) and builds the record. When the
    /// receipt cannot be written the answer becomes `decline`: nothing unrecorded is sent.
    pub(super) fn finish(
        &self,
        session: &Session,
        mut h: Handling,
    ) -> (ElicitationRecord, Option<Map<String, Value>>) {
        let already = h.action == ElicitationAction::Accept && h.prompt.body.mode() == Mode::Url;
        if !already && let Err(error) = self.write_receipt(session, &h) {
            h.action = ElicitationAction::Decline;
            h.content = None;
            h.note = Some(format!("{error}; declined"));
        }
        let url = match &h.prompt.body {
            PromptBody::Url { display } => Some(display.clone()),
            _ => None,
        };
        let record = ElicitationRecord {
            receipt_id: h.prompt.receipt_id.clone(),
            prompt_id: h.prompt.id,
            mode: h.prompt.body.mode(),
            decision: h.prompt.assessment.decision,
            reasons: h.prompt.assessment.reasons.clone(),
            action: ElicitationAnswer::of(&h.action),
            overridden: h.overridden,
            completed: (h.prompt.body.mode() == Mode::Url && h.action == ElicitationAction::Accept)
                .then_some(false),
            url,
            elicitation_id: h.elicitation_id.clone(),
            input_key: h.input_key.clone(),
            round: h.round,
            correlation: h.correlation.clone(),
            attribution: h.prompt.attribution.clone(),
            note: h.note.clone(),
        };
        session.record_for_calls(&h.calls, &record);
        (record, h.content.take())
    }
}
