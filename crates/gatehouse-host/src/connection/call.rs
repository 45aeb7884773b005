//! Tool calls: the gate's permit, one `tools/call` round at a time, 2026-07-28 input rounds
//! and 2025-11-25 URL-elicitation-required retries through the broker, and the call's progress.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, InputRequest, InputRequests, InputResponses, JsonObject,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
};
use rmcp::service::ServiceError;
use tokio_util::sync::CancellationToken;

use gatehouse_attest::gate::Permit;

use super::Connection;
use crate::audit_event::session::RetryWhy;
use crate::broker::{Arrival, ElicitationRecord, Session, WaitOutcome};
use crate::client::{answer_elicitation, brokered_event};
use crate::consent::WaitPhase;
use crate::gatekeeper::Tools;
use crate::{Era, HostError};

/// The most `input_required` rounds one call may take (2026-07-28 MRTR), so a server cannot
/// keep the host asking forever.
pub const MAX_INPUT_ROUNDS: usize = 10;

/// The most times a call is retried after `-32042` (URL elicitation required, 2025-11-25).
pub const MAX_URL_RETRIES: usize = 3;

/// JSON-RPC error code of URLElicitationRequiredError (2025-11-25 only).
pub const URL_ELICITATION_REQUIRED: i32 = -32042;

/// How long a call's result waits for completions of URL flows it opened that were sent
/// before it on another stream ([`crate::broker::ElicitationBroker::settle_completions`]).
const COMPLETION_GRACE: Duration = Duration::from_secs(2);

/// The outcome of one `tools/call` round.
#[derive(Debug, Clone)]
pub enum Round {
    Complete(CallToolResult),
    /// 2026-07-28 MRTR: answer `requests`, then retry with `request_state` echoed exactly.
    InputRequired {
        requests: InputRequests,
        request_state: Option<String>,
    },
}

/// Per-call options.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Cancelled by the user (Ctrl-C, a Cancel button): the request is abandoned and
    /// `notifications/cancelled` is sent.
    pub cancel: Option<CancellationToken>,
    /// Overrides the connection's request timeout.
    pub timeout: Option<Duration>,
    /// The downstream client that asked (the gateway), recorded with the gate's decision.
    pub caller: Option<crate::caller::Caller>,
    /// Where the server's progress for this call goes, in order (what arrived before the
    /// result is delivered before the call returns). Best effort: a full channel drops one.
    pub progress: Option<tokio::sync::mpsc::Sender<CallProgress>>,
}

/// A progress notification of one call's request.
#[derive(Debug, Clone, PartialEq)]
pub struct CallProgress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// The final result of a tool call.
#[derive(Debug, Clone)]
pub struct ToolOutcome {
    pub result: CallToolResult,
    /// How many requests the call took (more than one after MRTR rounds or -32042 retries).
    pub rounds: usize,
    /// Every elicitation the call caused, in order.
    pub elicitations: Vec<ElicitationRecord>,
}

impl ToolOutcome {
    pub fn is_error(&self) -> bool {
        self.result.is_error == Some(true)
    }
}

/// One request the host drives to its end, round by round: a tool call, a prompt or a
/// resource read. All three have the same 2026-07-28 input rounds and 2025-11-25 URL
/// retries; only the request and its result differ. Built from a permit's subject only.
#[derive(Debug, Clone)]
pub(crate) enum Ask {
    Tool(CallToolRequestParams),
    Prompt(GetPromptRequestParams),
    Read(ReadResourceRequestParams),
}

/// The final result of an [`Ask`].
#[derive(Debug, Clone)]
pub(crate) enum Answer {
    Tool(CallToolResult),
    Prompt(GetPromptResult),
    Read(ReadResourceResult),
}

impl Ask {
    fn method(&self) -> &'static str {
        match self {
            Ask::Tool(_) => "tools/call",
            Ask::Prompt(_) => "prompts/get",
            Ask::Read(_) => "resources/read",
        }
    }

    /// The tool or prompt name, or the URI: what the request is about, as the gate saw it.
    pub(crate) fn subject(&self) -> &str {
        match self {
            Ask::Tool(params) => &params.name,
            Ask::Prompt(params) => &params.name,
            Ask::Read(params) => &params.uri,
        }
    }

    pub(crate) fn what(&self) -> String {
        format!("{} {:?}", self.method(), self.subject())
    }

    fn answer_with(&mut self, responses: InputResponses, state: Option<String>) {
        match self {
            Ask::Tool(params) => {
                params.input_responses = Some(responses);
                params.request_state = state;
            }
            Ask::Prompt(params) => {
                params.input_responses = Some(responses);
                params.request_state = state;
            }
            Ask::Read(params) => {
                params.input_responses = Some(responses);
                params.request_state = state;
            }
        }
    }
}

impl Answer {
    fn is_error(&self) -> bool {
        matches!(self, Answer::Tool(result) if result.is_error == Some(true))
    }

    /// What the answer says, briefly, for the cards of the elicitations it caused.
    fn summary(&self) -> String {
        match self {
            Answer::Tool(result) => result_text(result),
            Answer::Prompt(result) => format!("a prompt of {} message(s)", result.messages.len()),
            Answer::Read(result) => format!("{} content item(s)", result.contents.len()),
        }
    }
}

/// One round of an [`Ask`].
enum Step {
    Complete(Answer),
    InputRequired {
        requests: InputRequests,
        request_state: Option<String>,
    },
}

impl Connection {
    /// The gate's decision for a call to `name`, recorded in the audit log before it takes
    /// effect. The tool list is fetched first if it never was (or changed), so pins are
    /// checked against what the server currently says.
    pub async fn authorize(
        &self,
        name: &str,
        caller: Option<&crate::caller::Caller>,
    ) -> Result<Permit, HostError> {
        let fresh = self
            .tools_cache
            .lock()
            .expect("tool cache poisoned")
            .is_some()
            && !self.tools_stale.load(Ordering::SeqCst);
        if !fresh {
            self.tools().await?;
        }
        let gate = self.tool_gate.lock().expect("tool gate poisoned");
        self.gatekeeper
            .authorize::<Tools>(&self.verdict, &gate, name, caller)
    }

    /// Calls a tool. Each round is one `tools/call` ([`Connection::call_tool_round`]):
    /// - 2026-07-28: an `input_required` result is answered (each input request through the
    ///   broker's policy and consent) and the call retried with a new id, the answers, and
    ///   `requestState` echoed exactly (omitted when the server sent none), at most
    ///   [`MAX_INPUT_ROUNDS`] rounds; after a consented URL the user retries (or cancels).
    /// - 2025-11-25: a `-32042` error's URL elicitations are put to the user, opened after
    ///   consent, and the call retried once all of them completed (or the user retries), at
    ///   most [`MAX_URL_RETRIES`] times; a server that repeats a URL already completed is
    ///   refused.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: &CallOptions,
    ) -> Result<ToolOutcome, HostError> {
        self.call_tool_traced(name, arguments, options).await.0
    }

    /// [`Connection::call_tool`], also returning the elicitations the call caused when it
    /// failed (on success they are in the outcome). A server that answers 403
    /// `insufficient_scope` gets a step-up sign-in and the call again, at most
    /// [`crate::auth::MAX_STEP_UPS`] times; the gate decides every attempt.
    pub async fn call_tool_traced(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: &CallOptions,
    ) -> (Result<ToolOutcome, HostError>, Vec<ElicitationRecord>) {
        let mut step_ups = 0;
        let (outcome, records) = loop {
            self.clear_challenge();
            let (outcome, records) = match self.authorize(name, options.caller.as_ref()).await {
                Ok(permit) => {
                    let mut params = CallToolRequestParams::new(permit.tool().to_string());
                    params.arguments = arguments.clone();
                    self.attempt(Ask::Tool(params), options).await
                }
                Err(error) => (Err(error), Vec::new()),
            };
            match self.step_up_after(&outcome, &mut step_ups).await {
                Ok(true) => continue,
                Ok(false) => break (outcome, records),
                Err(error) => break (Err(error), records),
            }
        };
        let outcome = outcome.map(|(answer, rounds, elicitations)| match answer {
            Answer::Tool(result) => Ok(ToolOutcome {
                result,
                rounds,
                elicitations,
            }),
            _ => Err(self.protocol(&format!("tools/call {name:?}"), "unexpected result kind")),
        });
        (outcome.and_then(|o| o), records)
    }

    /// After an attempt: whether to make it again because a step-up sign-in (or a new one)
    /// succeeded after the server answered 401/403, at most [`crate::auth::MAX_STEP_UPS`]
    /// times per request. The caller asks the gate again for every attempt.
    pub(crate) async fn step_up_after<T>(
        &self,
        outcome: &Result<T, HostError>,
        step_ups: &mut u32,
    ) -> Result<bool, HostError> {
        match outcome {
            Err(HostError::Transport { .. }) if *step_ups < crate::auth::MAX_STEP_UPS => {
                let again = self.reauthorize().await?;
                if again {
                    *step_ups += 1;
                }
                Ok(again)
            }
            _ => Ok(false),
        }
    }

    /// Drives one request the gate allowed to its end inside the broker session (so its
    /// elicitations are tied to it, receipted and shown on cards): the answer, the rounds it
    /// took and its elicitations; on failure, the elicitations it caused.
    pub(crate) async fn attempt(
        &self,
        ask: Ask,
        options: &CallOptions,
    ) -> (
        Result<(Answer, usize, Vec<ElicitationRecord>), HostError>,
        Vec<ElicitationRecord>,
    ) {
        let call = self.session.as_ref().map(|s| {
            let call = s.begin_call();
            if let Some(caller) = &options.caller {
                s.set_caller(call, caller.clone());
            }
            (s.clone(), call)
        });
        let Some((session, call)) = call else {
            let outcome = self
                .drive(ask, options, None)
                .await
                .map(|(answer, rounds)| (answer, rounds, Vec::new()));
            return (outcome, Vec::new());
        };
        let _forget = session.forget_on_drop(call);
        // The user may cancel the call from a URL flow it opened while it runs; that cancels
        // the request like any other cancel (notifications/cancelled).
        let cancel = options
            .cancel
            .as_ref()
            .map(CancellationToken::child_token)
            .unwrap_or_default();
        let options = CallOptions {
            cancel: Some(cancel.clone()),
            ..options.clone()
        };
        let why = Mutex::new(None);
        let what = ask.what();
        // The server's progress for the call's current request goes straight to the caller's
        // channel, by its token ([`super::ProgressDispatcher`]), until the result; dropped with
        // this future if the call is. Progress reported before the result is queued there
        // before `drive` returns (`round_raw` settles it).
        let progress = options
            .progress
            .clone()
            .map(|to| self.dispatcher.register(call, to));
        let outcome = tokio::select! {
            biased;
            outcome = self.drive(ask, &options, Some(call)) => outcome,
            never = self.watch_urls_in_call(&session, call, &what, &cancel, &why) => match never {},
        };
        drop(progress);
        // Cancelled because a URL flow ended without completing: say which way it ended.
        let outcome = match (outcome, why.into_inner().expect("why poisoned")) {
            (Err(HostError::Cancelled { .. }), Some(error)) => Err(error),
            (outcome, _) => outcome,
        };
        // A kill that fired on notifications received before the result wins over it.
        let outcome = match (outcome, session.killed()) {
            (Ok(_), Some(_)) => Err(self.killed_error()),
            (outcome, _) => outcome,
        };
        if outcome.is_ok() {
            let open = session.call_records(call);
            session
                .broker()
                .settle_completions(&session, &open, COMPLETION_GRACE)
                .await;
        }
        let mut records = session.end_call(call);
        match &outcome {
            Ok((answer, _)) => session.broker().attach_result(
                &session,
                &mut records,
                answer.is_error(),
                &answer.summary(),
            ),
            Err(error) => session.broker().close_prompts(&records, error),
        }
        match outcome {
            Ok((answer, rounds)) => (Ok((answer, rounds, records)), Vec::new()),
            Err(error) => (Err(error), records),
        }
    }

    async fn drive(
        &self,
        mut ask: Ask,
        options: &CallOptions,
        call: Option<u64>,
    ) -> Result<(Answer, usize), HostError> {
        let what = ask.what();
        let mut url_retries = 0;
        let mut completed_urls: Vec<String> = Vec::new();
        // 2026-07-28: URLs the user already consented to in this call → their prompt.
        let mut consented: std::collections::HashMap<String, u64> = Default::default();
        for round in 1..=MAX_INPUT_ROUNDS {
            if let (Some(session), Some(call)) = (&self.session, call) {
                session
                    .inflight()
                    .expect_request(ask.method(), ask.subject(), call);
            }
            let answer = self.round_raw(ask.clone(), options).await;
            match answer {
                Ok(Step::Complete(answer)) => return Ok((answer, round)),
                Ok(Step::InputRequired {
                    requests,
                    request_state,
                }) => {
                    let (responses, waiting_on) = self
                        .answer_round(requests, &what, call, round, &mut consented)
                        .await?;
                    if let (Some(prompt), Some(session), Some(call)) =
                        (waiting_on, &self.session, call)
                    {
                        match session
                            .broker()
                            .wait(session, prompt, &[], WaitPhase::Retry)
                            .await
                        {
                            WaitOutcome::Retry | WaitOutcome::Completed => {
                                session.broker().record_retry(
                                    session,
                                    call,
                                    round,
                                    RetryWhy::UserRetry,
                                    &[],
                                )?;
                            }
                            other => return Err(self.wait_failed(&what, other)),
                        }
                    }
                    ask.answer_with(responses, request_state);
                }
                Err(RoundError::UrlRequired(data)) => {
                    let (Some(session), Some(call)) = (&self.session, call) else {
                        return Err(self.service_error(ServiceError::McpError(data), &what));
                    };
                    if url_retries >= MAX_URL_RETRIES {
                        return Err(HostError::ElicitationIncomplete {
                            server: self.server.clone(),
                            what,
                            detail: format!(
                                "the server still requires URL elicitations after {MAX_URL_RETRIES} retries; giving up"
                            ),
                        });
                    }
                    let (prompt, ids, urls) = self
                        .handle_url_required(session, call, &data, &what, &completed_urls)
                        .await?;
                    let outcome = session
                        .broker()
                        .wait(session, prompt, &ids, WaitPhase::Completion)
                        .await;
                    let why = match outcome {
                        WaitOutcome::Completed => RetryWhy::Completed,
                        WaitOutcome::Retry => RetryWhy::UserRetry,
                        other => return Err(self.wait_failed(&what, other)),
                    };
                    url_retries += 1;
                    completed_urls.extend(urls);
                    let receipts: Vec<String> = session
                        .call_records(call)
                        .into_iter()
                        .filter(|r| r.elicitation_id.as_ref().is_some_and(|id| ids.contains(id)))
                        .map(|r| r.receipt_id)
                        .collect();
                    session
                        .broker()
                        .record_retry(session, call, url_retries, why, &receipts)?;
                }
                Err(RoundError::Host(error)) => return Err(error),
            }
        }
        Err(self.protocol(
            &what,
            &format!("no final result after {MAX_INPUT_ROUNDS} rounds"),
        ))
    }

    /// While a call runs, waits on each URL flow it opened through `elicitation/create`
    /// (2025-11-25): the card offers Cancel until the completion arrives, and Cancel cancels
    /// the call. Never resolves; the call's own end drops it.
    async fn watch_urls_in_call(
        &self,
        session: &Arc<Session>,
        call: u64,
        what: &str,
        cancel: &CancellationToken,
        why: &Mutex<Option<HostError>>,
    ) -> std::convert::Infallible {
        let mut seen = Vec::new();
        loop {
            let record = session.next_url_in_call(call, &seen).await;
            seen.push(record.prompt_id);
            let ids: Vec<String> = record.elicitation_id.into_iter().collect();
            loop {
                match session
                    .broker()
                    .wait(session, record.prompt_id, &ids, WaitPhase::InCall)
                    .await
                {
                    WaitOutcome::Completed => {}
                    // Enter in a console: keep waiting.
                    WaitOutcome::Retry => continue,
                    // The kill ends the call by itself.
                    WaitOutcome::Killed => return std::future::pending().await,
                    // Cancelled, or no completion within the time a person has: the call
                    // is cancelled (notifications/cancelled), the card closed with why.
                    outcome @ (WaitOutcome::Cancelled | WaitOutcome::TimedOut) => {
                        *why.lock().expect("why poisoned") = Some(self.wait_failed(what, outcome));
                        cancel.cancel();
                        return std::future::pending().await;
                    }
                }
                break;
            }
        }
    }

    fn wait_failed(&self, what: &str, outcome: WaitOutcome) -> HostError {
        match outcome {
            WaitOutcome::Cancelled => HostError::Cancelled {
                server: self.server.clone(),
                what: what.to_string(),
            },
            WaitOutcome::Killed => self.killed_error(),
            WaitOutcome::TimedOut => HostError::ElicitationIncomplete {
                server: self.server.clone(),
                what: what.to_string(),
                detail: "the URL flow did not complete within the time a person has to finish it"
                    .into(),
            },
            WaitOutcome::Completed | WaitOutcome::Retry => {
                self.protocol(what, "unexpected wait outcome")
            }
        }
    }

    /// Puts each URL elicitation of a `-32042` error to the user. Returns the prompt to wait
    /// on, the elicitation ids and the URLs; an error when any was refused, declined or
    /// cancelled, or when the server repeats a URL already completed.
    async fn handle_url_required(
        &self,
        session: &Arc<Session>,
        call: u64,
        data: &rmcp::model::ErrorData,
        what: &str,
        completed_urls: &[String],
    ) -> Result<(u64, Vec<String>, Vec<String>), HostError> {
        let entries = data
            .data
            .as_ref()
            .and_then(|d| d.get("elicitations"))
            .and_then(serde_json::Value::as_array)
            .cloned()
            .unwrap_or_default();
        if entries.is_empty() {
            return Err(self.protocol(
                what,
                "the server answered -32042 (URL elicitation required) without listing any elicitations",
            ));
        }
        let mut prompt = None;
        let mut ids = Vec::new();
        let mut urls = Vec::new();
        for entry in entries {
            let params: rmcp::model::ElicitRequestParams = serde_json::from_value(entry.clone())
                .map_err(|e| {
                    self.protocol(
                        what,
                        &format!("a -32042 elicitation is not a URL elicitation: {e}"),
                    )
                })?;
            let rmcp::model::ElicitRequestParams::UrlElicitationParams { url, .. } = &params else {
                return Err(self.protocol(
                    what,
                    "a -32042 error listed a form elicitation; only URL elicitations may be listed",
                ));
            };
            if completed_urls.contains(url) {
                return Err(HostError::ElicitationIncomplete {
                    server: self.server.clone(),
                    what: what.to_string(),
                    detail: format!(
                        "the server asks again for a URL elicitation already completed ({url}); not retrying"
                    ),
                });
            }
            let url = url.clone();
            let (_, record) = session
                .broker()
                // Asked within the host's own call: it ends with the call (a dropped call
                // closes the card).
                .elicit(
                    session,
                    &params,
                    Arrival::Required { call },
                    &CancellationToken::new(),
                )
                .await;
            if record.action != crate::broker::ElicitationAnswer::Accept {
                return Err(HostError::ElicitationIncomplete {
                    server: self.server.clone(),
                    what: what.to_string(),
                    detail: format!(
                        "the URL elicitation the server requires was not completed: {} ({}){}",
                        record.action,
                        record.decision,
                        record.note.map(|n| format!("; {n}")).unwrap_or_default()
                    ),
                });
            }
            prompt.get_or_insert(record.prompt_id);
            ids.extend(record.elicitation_id);
            urls.push(url);
        }
        Ok((prompt.unwrap_or_default(), ids, urls))
    }

    /// One `tools/call` request (`call_tool_once`) for a tool the gate let through
    /// ([`Connection::authorize`]): the final result, or what the server needs before the call
    /// can complete. The caller decides what happens next; rmcp never retries on its own.
    pub async fn call_tool_round(
        &self,
        permit: &Permit,
        params: CallToolRequestParams,
        options: &CallOptions,
    ) -> Result<Round, HostError> {
        let what = format!("tools/call {:?}", params.name);
        match self.call_round_raw(permit, params, options).await {
            Ok(round) => Ok(round),
            Err(RoundError::UrlRequired(data)) => {
                Err(self.service_error(ServiceError::McpError(data), &what))
            }
            Err(RoundError::Host(error)) => Err(error),
        }
    }

    async fn call_round_raw(
        &self,
        permit: &Permit,
        params: CallToolRequestParams,
        options: &CallOptions,
    ) -> Result<Round, RoundError> {
        if params.name.as_ref() != permit.tool() {
            return Err(RoundError::Host(HostError::ToolDenied {
                server: self.server.clone(),
                tool: params.name.to_string(),
                reason: crate::error_code::ErrorCode::ToolNotAdmitted,
                detail: format!(
                    "the permit is for {:?}, not this tool; each call needs its own authorization",
                    permit.tool()
                ),
            }));
        }
        match self.round_raw(Ask::Tool(params), options).await? {
            Step::Complete(Answer::Tool(result)) => Ok(Round::Complete(result)),
            Step::InputRequired {
                requests,
                request_state,
            } => Ok(Round::InputRequired {
                requests,
                request_state,
            }),
            Step::Complete(_) => Err(RoundError::Host(
                self.protocol("tools/call", "unexpected result kind"),
            )),
        }
    }

    /// One request of an [`Ask`] (`call_tool_once`, `get_prompt_once`, `read_resource_once`):
    /// rmcp never retries on its own; the driver decides what happens next.
    async fn round_raw(&self, ask: Ask, options: &CallOptions) -> Result<Step, RoundError> {
        let what = ask.what();
        let peer = self.service.peer();
        let sent = match ask {
            Ask::Tool(params) => {
                self.await_request(&what, options, async {
                    peer.call_tool_once(params).await.map(|response| match response {
                        CallToolResponse::Complete(result) => Ok(Step::Complete(Answer::Tool(result))),
                        CallToolResponse::InputRequired(required) => Ok(Step::InputRequired {
                            requests: required.input_requests.unwrap_or_default(),
                            request_state: required.request_state,
                        }),
                        CallToolResponse::Task(_) => Err("the server answered with a task, but Gatehouse does not declare the tasks extension"),
                        _ => Err("the server answered with an unknown result type"),
                    })
                })
                .await
            }
            Ask::Prompt(params) => {
                self.await_request(&what, options, async {
                    peer.get_prompt_once(params).await.map(|response| match response {
                        GetPromptResponse::Complete(result) => Ok(Step::Complete(Answer::Prompt(result))),
                        GetPromptResponse::InputRequired(required) => Ok(Step::InputRequired {
                            requests: required.input_requests.unwrap_or_default(),
                            request_state: required.request_state,
                        }),
                        _ => Err("the server answered with an unknown result type"),
                    })
                })
                .await
            }
            Ask::Read(params) => {
                self.await_request(&what, options, async {
                    peer.read_resource_once(params).await.map(|response| match response {
                        ReadResourceResponse::Complete(result) => Ok(Step::Complete(Answer::Read(result))),
                        ReadResourceResponse::InputRequired(required) => Ok(Step::InputRequired {
                            requests: required.input_requests.unwrap_or_default(),
                            request_state: required.request_state,
                        }),
                        _ => Err("the server answered with an unknown result type"),
                    })
                })
                .await
            }
        };
        let step = match sent.map_err(RoundError::Host)? {
            Ok(Ok(step)) => step,
            Ok(Err(why)) => return Err(RoundError::Host(self.protocol(&what, why))),
            Err(ServiceError::McpError(data))
                if data.code.0 == URL_ELICITATION_REQUIRED && self.era == Era::V2025_11_25 =>
            {
                return Err(RoundError::UrlRequired(data));
            }
            Err(error) => return Err(RoundError::Host(self.service_error(error, &what))),
        };
        if matches!(step, Step::Complete(_)) {
            // Progress that arrived before the result is reported before it; bounded, so a
            // handler that never runs cannot hold the result back.
            let _ = tokio::time::timeout(Duration::from_secs(2), self.progress.settle()).await;
        }
        Ok(step)
    }

    /// Answers the input requests of one `input_required` round: through the broker when there
    /// is one (a URL already consented to in this call is not asked again), else under this
    /// connection's [`ElicitationMode`]. Returns the responses and, when a URL was consented
    /// to, the prompt whose Retry the next round waits for.
    async fn answer_round(
        &self,
        requests: InputRequests,
        what: &str,
        call: Option<u64>,
        round: usize,
        consented: &mut std::collections::HashMap<String, u64>,
    ) -> Result<(InputResponses, Option<u64>), HostError> {
        let (Some(session), Some(call)) = (&self.session, call) else {
            return Ok((self.answer_input_requests(requests, what)?, None));
        };
        let mut responses = InputResponses::new();
        let mut waiting_on = None;
        for (key, request) in requests {
            let InputRequest::Elicitation(elicit) = request else {
                return Err(self.protocol(
                    what,
                    &format!("input request {key:?} asks for something other than an elicitation (sampling, roots), which Gatehouse does not declare"),
                ));
            };
            if let rmcp::model::ElicitRequestParams::UrlElicitationParams { url, .. } =
                &elicit.params
                && let Some(prompt) = consented.get(url)
            {
                // Still pending out of band: the consent stands, nothing is opened again.
                waiting_on.get_or_insert(*prompt);
                responses.insert(
                    key,
                    serde_json::to_value(rmcp::model::ElicitResult::new(
                        rmcp::model::ElicitationAction::Accept,
                    ))
                    .expect("ElicitResult serializes"),
                );
                continue;
            }
            let (result, record) = session
                .broker()
                .elicit(
                    session,
                    &elicit.params,
                    Arrival::Input {
                        call,
                        key: key.clone(),
                        round,
                    },
                    &CancellationToken::new(),
                )
                .await;
            let _ = self
                .events
                .send(brokered_event(&self.server, &elicit.params, &record));
            if session.killed().is_some() {
                return Err(self.killed_error());
            }
            if record.mode == gatehouse_policy::Mode::Url
                && record.action == crate::broker::ElicitationAnswer::Accept
                && let rmcp::model::ElicitRequestParams::UrlElicitationParams { url, .. } =
                    &elicit.params
            {
                consented.insert(url.clone(), record.prompt_id);
                waiting_on.get_or_insert(record.prompt_id);
            }
            responses.insert(
                key,
                serde_json::to_value(result).expect("ElicitResult serializes"),
            );
        }
        Ok((responses, waiting_on))
    }

    /// Answers the input requests of one `input_required` round without a broker, each as an
    /// elicitation under this connection's [`ElicitationMode`].
    pub fn answer_input_requests(
        &self,
        requests: InputRequests,
        what: &str,
    ) -> Result<InputResponses, HostError> {
        let mut responses = InputResponses::new();
        for (key, request) in requests {
            let value = match request {
                InputRequest::Elicitation(elicit) => {
                    let result =
                        answer_elicitation(&self.server, self.mode, &elicit.params, &self.events);
                    serde_json::to_value(result).expect("ElicitResult serializes")
                }
                // Sampling, roots and anything newer: not declared, so not answerable.
                _ => {
                    return Err(self.protocol(
                        what,
                        &format!("input request {key:?} asks for something other than an elicitation (sampling, roots), which Gatehouse does not declare"),
                    ));
                }
            };
            responses.insert(key, value);
        }
        Ok(responses)
    }
}

/// Why a round ended without a result.
enum RoundError {
    /// 2025-11-25 `-32042`: URL elicitations must complete before a retry.
    UrlRequired(rmcp::model::ErrorData),
    Host(HostError),
}

/// The text of a tool result, for attaching to prompts.
pub fn result_text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}
