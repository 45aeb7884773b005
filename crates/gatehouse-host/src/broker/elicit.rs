//! One elicitation from arrival to answer: tied to the requests it belongs to, assessed by the
//! policy (and the broker's own holds), asked or refused, receipted, then answered.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use gatehouse_policy::{Assessment, Decision, Mode, Reason, assess_form, assess_url};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::receipt::random_id;
use super::{ElicitationAnswer, ElicitationBroker, ElicitationRecord, Session};
use crate::caller::{Attribution, Caller};
use crate::consent::{Prompt, PromptBody, PromptUpdate};
use crate::tap::OutRequest;

/// How an elicitation reached the host, which decides what it is tied to.
#[derive(Debug, Clone)]
pub enum Arrival {
    /// 2025-11-25 `elicitation/create`.
    Request(Association),
    /// Listed in a `-32042` error answering host call `call`.
    Required { call: u64 },
    /// 2026-07-28: an input request in round `round` of host call `call`.
    Input {
        call: u64,
        key: String,
        round: usize,
    },
}

/// What the transport says about which of our requests a server request belongs to.
#[derive(Debug, Clone)]
pub enum Association {
    /// Arrived on the SSE stream of the POST that carried this JSON-RPC id.
    Stream(Value),
    /// Arrived on a stream tied to no request of ours (the GET stream).
    Unassociated,
    /// The transport cannot tell (stdio): only the requests in flight are known.
    Unknown,
}

/// How the host knows which request an elicitation belongs to (its stable snake_case code is
/// what receipts carry as `correlation.basis`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CorrelationBasis {
    /// The transport said so: it came on the request's SSE stream.
    SseStream,
    /// Inferred: these were our requests in flight (stdio).
    InFlight,
    /// Listed in a -32042 error to this request.
    ErrorResponse,
    /// An input request in this request's result (2026-07-28).
    MrtrResult,
    /// Tied to nothing.
    None,
}

/// Which request an elicitation belongs to, and how the host knows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Correlation {
    pub basis: CorrelationBasis,
    pub requests: Vec<OutRequest>,
}

impl Correlation {
    /// Sent as a request while our requests were in flight (`elicitation/create`), rather
    /// than listed in a result or error: the call that asked is still running.
    pub fn during_request(&self) -> bool {
        match self.basis {
            CorrelationBasis::SseStream | CorrelationBasis::InFlight => true,
            CorrelationBasis::ErrorResponse
            | CorrelationBasis::MrtrResult
            | CorrelationBasis::None => false,
        }
    }

    /// Listed in the result or error of the request it belongs to (retried after it).
    pub fn in_answer(&self) -> bool {
        match self.basis {
            CorrelationBasis::ErrorResponse | CorrelationBasis::MrtrResult => true,
            CorrelationBasis::SseStream | CorrelationBasis::InFlight | CorrelationBasis::None => {
                false
            }
        }
    }
}

/// What the receipt and the answer need, gathered while the prompt is handled.
pub(super) struct Handling {
    pub(super) prompt: Prompt,
    pub(super) correlation: Correlation,
    pub(super) calls: Vec<u64>,
    pub(super) elicitation_id: Option<String>,
    pub(super) input_key: Option<String>,
    pub(super) round: Option<usize>,
    pub(super) action: ElicitationAction,
    pub(super) content: Option<Map<String, Value>>,
    pub(super) overridden: bool,
    pub(super) note: Option<String>,
    /// Denied by policy: counted as abuse once the receipt is written.
    pub(super) denied: bool,
}

impl ElicitationBroker {
    fn correlate(&self, session: &Session, arrival: &Arrival) -> (Correlation, Vec<u64>) {
        let (basis, requests) = match arrival {
            Arrival::Request(Association::Stream(id)) => match session.inflight.get(id) {
                Some(request) => (CorrelationBasis::SseStream, vec![request]),
                None => (CorrelationBasis::None, Vec::new()),
            },
            Arrival::Request(Association::Unassociated) => (CorrelationBasis::None, Vec::new()),
            Arrival::Request(Association::Unknown) => {
                let requests = session.inflight.snapshot();
                (
                    if requests.is_empty() {
                        CorrelationBasis::None
                    } else {
                        CorrelationBasis::InFlight
                    },
                    requests,
                )
            }
            Arrival::Required { call } => (
                CorrelationBasis::ErrorResponse,
                session.inflight.last_of_call(*call).into_iter().collect(),
            ),
            Arrival::Input { call, .. } => (
                CorrelationBasis::MrtrResult,
                session.inflight.last_of_call(*call).into_iter().collect(),
            ),
        };
        let mut calls: Vec<u64> = match arrival {
            Arrival::Required { call } | Arrival::Input { call, .. } => vec![*call],
            Arrival::Request(_) => requests.iter().filter_map(|r| r.call).collect(),
        };
        calls.dedup();
        (Correlation { basis, requests }, calls)
    }

    /// Which downstream client the elicitation can be put down to (see [`attribute`]).
    fn attribution(
        &self,
        session: &Session,
        arrival: &Arrival,
        correlation: &Correlation,
    ) -> Attribution {
        attribute(arrival, correlation, |call| session.caller_of(call))
    }

    fn new_prompt(
        &self,
        session: &Session,
        message: String,
        origin: Option<String>,
        attribution: Attribution,
        assessment: Assessment,
        body: PromptBody,
    ) -> Prompt {
        // A server's message can be 16 MiB; what a card keeps and shows is bounded (the policy
        // has already judged the whole of it).
        let message = truncate_for_display(message, MAX_SHOWN_MESSAGE_BYTES);
        Prompt {
            id: self.next_prompt.fetch_add(1, Ordering::SeqCst) + 1,
            receipt_id: random_id("rcpt-"),
            server: session.server.clone(),
            banner: session.banner.lock().expect("session poisoned").clone(),
            era: session.era(),
            message,
            origin,
            attribution,
            assessment,
            body,
            ready_in: Duration::ZERO,
        }
    }

    /// Handles one elicitation from start to answer. The answer is what the server gets; the
    /// record is what the caller shows. Nothing but `decline`/`cancel` is ever answered unless
    /// the user consented, and nothing is answered before its receipt is on disk.
    ///
    /// `withdrawn` is cancelled when the request can no longer be answered (the server
    /// cancelled it, or its connection ended): a prompt still asked then closes.
    pub async fn elicit(
        &self,
        session: &Session,
        params: &ElicitRequestParams,
        arrival: Arrival,
        withdrawn: &CancellationToken,
    ) -> (ElicitResult, ElicitationRecord) {
        let arrived = Instant::now();
        let (correlation, calls) = self.correlate(session, &arrival);
        let tied = !correlation.requests.is_empty()
            || matches!(arrival, Arrival::Required { .. } | Arrival::Input { .. });
        let origin = correlation.requests.first().map(|r| match &r.tool {
            Some(tool) => format!("{} {tool:?}", r.method),
            None => r.method.clone(),
        });
        let (elicitation_id, input_key, round) = match &arrival {
            Arrival::Input { key, round, .. } => (None, Some(key.clone()), Some(*round)),
            _ => match params {
                ElicitRequestParams::UrlElicitationParams { elicitation_id, .. }
                    if !elicitation_id.is_empty() =>
                {
                    (Some(elicitation_id.clone()), None, None)
                }
                _ => (None, None, None),
            },
        };

        let (message, mode, mut assessment, body) = match params {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => {
                let schema = serde_json::to_value(requested_schema).unwrap_or(Value::Null);
                let form = assess_form(
                    &self.policy,
                    &session.context(Mode::Form, tied),
                    Some(message),
                    &schema,
                );
                let body = match form.schema {
                    Some(schema) => PromptBody::Form {
                        defaults: schema.defaults(),
                        schema,
                        fields: form.fields,
                    },
                    None => PromptBody::Unsupported {
                        detail: form
                            .assessment
                            .reasons
                            .iter()
                            .find(|r| r.code == "schema_outside_subset")
                            .map(|r| r.detail.clone())
                            .unwrap_or_default(),
                    },
                };
                (message.clone(), Mode::Form, form.assessment, body)
            }
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                let checked = assess_url(
                    &self.policy,
                    &session.context(Mode::Url, tied),
                    url,
                    &session.allowed_hosts,
                );
                (
                    message.clone(),
                    Mode::Url,
                    checked.assessment,
                    PromptBody::Url {
                        display: checked.display,
                    },
                )
            }
            // rmcp's enum is non-exhaustive: a mode it learns later is never guessed at.
            _ => {
                let detail = "the elicitation uses a mode Gatehouse does not know; only form and url are declared";
                let mut assessment = Assessment::allow();
                assessment.push(Reason::new(
                    Decision::HoldForElicitationEvidence,
                    "mode_not_declared",
                    detail,
                ));
                (
                    String::new(),
                    Mode::Form,
                    assessment,
                    PromptBody::Unsupported {
                        detail: detail.into(),
                    },
                )
            }
        };

        // A 2025-11-25 URL elicitation must carry an id unique for this server.
        if mode == Mode::Url && matches!(arrival, Arrival::Request(_) | Arrival::Required { .. }) {
            match &elicitation_id {
                None => assessment.push(Reason::new(
                    Decision::HoldForElicitationEvidence,
                    "missing_elicitation_id",
                    "a 2025-11-25 URL elicitation must carry an elicitationId; without one its completion cannot be tied to it",
                )),
                Some(id) => {
                    let key = (session.server.clone(), id.clone());
                    let reused = self.pending.lock().expect("pending poisoned").contains_key(&key);
                    if reused && !matches!(arrival, Arrival::Required { .. }) {
                        assessment.push(Reason::new(
                            Decision::HoldForElicitationEvidence,
                            "duplicate_elicitation_id",
                            format!("this server already used elicitationId {id:?}; ids must be unique"),
                        ));
                    }
                }
            }
        }

        if let Some(reason) = self.count_elicitation(session) {
            assessment.push(reason);
        }

        // The broker's own holds (mode, elicitationId) and the abuse tracker added reasons after
        // the policy decided: whether the user may override is decided again over all of them.
        assessment.override_allowed = gatehouse_policy::override_allowed(&self.policy, &assessment);
        let attribution = self.attribution(session, &arrival, &correlation);
        let mut prompt = self.new_prompt(session, message, origin, attribution, assessment, body);
        prompt.ready_in = arrived.elapsed();
        let mut handling = Handling {
            prompt,
            correlation,
            calls,
            elicitation_id,
            input_key,
            round,
            action: ElicitationAction::Decline,
            content: None,
            overridden: false,
            note: None,
            denied: false,
        };

        match handling.prompt.assessment.decision {
            Decision::AllowElicitationWithReceipt => {
                self.ask(session, &mut handling, withdrawn).await
            }
            Decision::HoldForElicitationEvidence => {
                if handling.prompt.assessment.override_allowed {
                    self.ask(session, &mut handling, withdrawn).await;
                } else {
                    self.ui.update(PromptUpdate::Refused {
                        prompt: Box::new(handling.prompt.clone()),
                    });
                }
            }
            Decision::DenySensitiveFormElicitation
            | Decision::DenyUntrustedElicitationUrl
            | Decision::DenyTokenOrSecretTransit => {
                self.ui.update(PromptUpdate::Refused {
                    prompt: Box::new(handling.prompt.clone()),
                });
                handling.denied = true;
            }
            Decision::KillSessionOnElicitationAbuse => {
                self.ui.update(PromptUpdate::Refused {
                    prompt: Box::new(handling.prompt.clone()),
                });
            }
        }

        let denied = handling.denied;
        let (record, content) = self.finish(session, handling);
        // After the receipt, so the log reads: what was denied, then the kill it caused.
        if denied {
            self.count_denial(session);
        }
        if record.decision == Decision::KillSessionOnElicitationAbuse {
            let reason = record
                .reasons
                .iter()
                .find(|r| r.decision == Decision::KillSessionOnElicitationAbuse)
                .cloned();
            if let Some(reason) = reason {
                self.kill(session, &reason);
            }
        }
        let result = match (record.action, content) {
            (ElicitationAnswer::Accept, Some(content)) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
            }
            (ElicitationAnswer::Accept, None) => ElicitResult::new(ElicitationAction::Accept),
            (ElicitationAnswer::Decline, _) => ElicitResult::new(ElicitationAction::Decline),
            (ElicitationAnswer::Cancel, _) => ElicitResult::new(ElicitationAction::Cancel),
        };
        (result, record)
    }

    /// An `elicitation/create` whose params rmcp could not parse (schema outside the subset,
    /// unknown mode): refused with -32602, shown to the user as a note, and receipted.
    pub fn unsupported(&self, session: &Session, raw: &Value, detail: &str) -> ElicitationRecord {
        let message = raw
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut assessment = Assessment::allow();
        assessment.push(Reason::new(
            Decision::HoldForElicitationEvidence,
            "schema_outside_subset",
            detail,
        ));
        // A malformed elicitation is an elicitation, and a refused one: it counts against the
        // same limits, so a flood of them ends the session like any other.
        if let Some(reason) = self.count_elicitation(session) {
            assessment.push(reason);
        }
        let arrival = Arrival::Request(Association::Unknown);
        let (correlation, calls) = self.correlate(session, &arrival);
        let attribution = self.attribution(session, &arrival, &correlation);
        let prompt = self.new_prompt(
            session,
            message,
            None,
            attribution,
            assessment,
            PromptBody::Unsupported {
                detail: detail.to_string(),
            },
        );
        self.ui.update(PromptUpdate::Refused {
            prompt: Box::new(prompt.clone()),
        });
        let h = Handling {
            prompt,
            correlation,
            calls,
            elicitation_id: None,
            input_key: None,
            round: None,
            action: ElicitationAction::Decline,
            content: None,
            overridden: false,
            note: Some("refused with -32602 (invalid params)".into()),
            denied: true,
        };
        let (record, _) = self.finish(session, h);
        match record
            .reasons
            .iter()
            .find(|r| r.decision == Decision::KillSessionOnElicitationAbuse)
            .cloned()
        {
            Some(reason) => self.kill(session, &reason),
            None => self.count_denial(session),
        }
        record
    }
}

/// Which downstream client an elicitation can be put down to, from what it is tied to:
/// `caller_of` gives the client a host call was made for (`None`: the person's own call).
///
/// A `-32042` error or a 2026-07-28 input request answers one host call, and an
/// `elicitation/create` on a POST's SSE stream belongs to that one request: their client is
/// the one named. An `elicitation/create` on stdio can belong to any request in flight: a
/// client is named only when every one of them was made for that same client; a request made
/// for no client (the person's own call, a listing) counts as another party. Never "the first
/// call's client".
pub(super) fn attribute(
    arrival: &Arrival,
    correlation: &Correlation,
    caller_of: impl Fn(u64) -> Option<Caller>,
) -> Attribution {
    match arrival {
        Arrival::Required { call } | Arrival::Input { call, .. } => {
            Attribution::of([caller_of(*call)])
        }
        Arrival::Request(_) => Attribution::of(
            correlation
                .requests
                .iter()
                .map(|request| request.call.and_then(&caller_of)),
        ),
    }
}

/// At most this many bytes of a server's message are kept on a prompt and shown.
pub const MAX_SHOWN_MESSAGE_BYTES: usize = 4096;

/// `text` cut to at most `max` bytes (at a character boundary), with a visible note of what was
/// left out.
pub fn truncate_for_display(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let total = text.len();
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(&format!(
        " … [truncated by Gatehouse: {} of {total} bytes not shown]",
        total - cut
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caller::DownstreamTransport;
    use serde_json::json;

    fn request(id: u64, tool: &str, call: Option<u64>) -> OutRequest {
        OutRequest {
            id: json!(id),
            method: "tools/call".into(),
            tool: Some(tool.into()),
            call,
            progress_token: None,
        }
    }

    fn in_flight(requests: Vec<OutRequest>) -> Correlation {
        Correlation {
            basis: CorrelationBasis::InFlight,
            requests,
        }
    }

    /// Host calls 1 and 2 were made for Claude Code, 3 for Cursor, 4 by the person.
    fn caller_of(call: u64) -> Option<Caller> {
        match call {
            1 | 2 => Some(Caller::new("claude_code", DownstreamTransport::Stdio, None)),
            3 => Some(Caller::new("cursor", DownstreamTransport::Stdio, None)),
            _ => None,
        }
    }

    #[test]
    fn on_stdio_a_client_is_named_only_when_every_call_in_flight_is_its_own() {
        let stdio = Arrival::Request(Association::Unknown);
        let named = |requests| {
            attribute(&stdio, &in_flight(requests), caller_of)
                .client()
                .map(|c| c.client.clone())
        };
        assert_eq!(
            named(vec![request(10, "a", Some(1))]).as_deref(),
            Some("claude_code")
        );
        assert_eq!(
            named(vec![request(10, "a", Some(1)), request(11, "b", Some(2))]).as_deref(),
            Some("claude_code")
        );
        // Claude Code's call went out first: it is not blamed for Cursor's, nor the reverse.
        for requests in [
            vec![request(10, "a", Some(1)), request(11, "b", Some(3))],
            vec![request(11, "b", Some(3)), request(10, "a", Some(1))],
        ] {
            let attribution = attribute(&stdio, &in_flight(requests), caller_of);
            let Attribution::Unknown {
                clients, gatehouse, ..
            } = &attribution
            else {
                panic!("{attribution:?}");
            };
            assert_eq!(clients.len(), 2);
            assert!(!gatehouse);
        }
        // A client's call with the person's own call, or with a request of no call at all
        // (a listing): unknown.
        for other in [request(12, "c", Some(4)), request(13, "d", None)] {
            let attribution = attribute(
                &stdio,
                &in_flight(vec![request(10, "a", Some(1)), other]),
                caller_of,
            );
            assert_eq!(attribution.code(), "unknown", "{attribution:?}");
        }
        // Only the person's own calls, or nothing in flight: no client.
        assert_eq!(
            attribute(
                &stdio,
                &in_flight(vec![request(12, "c", Some(4))]),
                caller_of
            ),
            Attribution::None
        );
        assert_eq!(
            attribute(
                &stdio,
                &Correlation {
                    basis: CorrelationBasis::None,
                    requests: Vec::new()
                },
                caller_of
            ),
            Attribution::None
        );
    }

    #[test]
    fn a_request_the_transport_or_the_result_ties_it_to_decides_alone() {
        // The SSE stream of Cursor's POST: Cursor, whatever else is in flight.
        let stream = Arrival::Request(Association::Stream(json!(11)));
        let tied = Correlation {
            basis: CorrelationBasis::SseStream,
            requests: vec![request(11, "b", Some(3))],
        };
        assert_eq!(
            attribute(&stream, &tied, caller_of)
                .client()
                .map(|c| c.client.as_str()),
            Some("cursor")
        );
        // A -32042 error or an input request answers one host call.
        for arrival in [
            Arrival::Required { call: 3 },
            Arrival::Input {
                call: 3,
                key: "k".into(),
                round: 1,
            },
        ] {
            let correlation = Correlation {
                basis: CorrelationBasis::ErrorResponse,
                requests: vec![request(11, "b", Some(3))],
            };
            assert_eq!(
                attribute(&arrival, &correlation, caller_of)
                    .client()
                    .map(|c| c.client.as_str()),
                Some("cursor")
            );
            let own = Arrival::Required { call: 4 };
            assert_eq!(attribute(&own, &correlation, caller_of), Attribution::None);
        }
    }

    #[test]
    fn long_messages_are_cut_at_a_character_boundary_with_a_visible_note() {
        assert_eq!(truncate_for_display("short".into(), 10), "short");
        let long = "é".repeat(3000); // 6000 bytes, 2 bytes a character
        let cut = truncate_for_display(long, 4095);
        assert!(cut.starts_with(&"é".repeat(2047)));
        assert!(!cut.starts_with(&"é".repeat(2048)));
        assert!(
            cut.ends_with("[truncated by Gatehouse: 1906 of 6000 bytes not shown]"),
            "{cut}"
        );
    }
}
