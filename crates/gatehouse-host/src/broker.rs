//! The elicitation broker: every elicitation, in either era, gets one policy decision, goes to
//! the user through a [`ConsentUi`] with a host-drawn identity banner, is answered only with
//! what the user approved, and leaves a receipt in the audit log before the answer is sent.
//!
//! One broker serves a whole process (one queue of prompts, one pending map); each connection
//! has a [`Session`] with what the broker needs to know about that server. URL completions
//! (`notifications/elicitation/complete`, 2025-11-25) are matched in a pending map keyed by
//! (server, elicitationId); anything else is ignored, audited, and counted as abuse.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gatehouse_policy::{
    AbuseEvent, AbuseTracker, Assessment, Decision, ElicitationContext, FieldError, Mode, Policy,
    Reason, ServerStanding, TransportKind, UrlDisplay, assess_form, assess_url, check_answers,
};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde::Serialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::Era;
use crate::admission::{Status, Verdict};
use crate::consent::{
    ConsentAnswer, ConsentReply, ConsentUi, IdentityBanner, Prompt, PromptBody, PromptUpdate,
    UrlOpener, WaitChoice, WaitPhase,
};
use crate::error::HostError;
use crate::gatekeeper::{Gatekeeper, events};
use crate::tap::{EraCell, InFlight, OutRequest};

/// How long a person has to answer a prompt or finish a URL flow before it is cancelled. Much
/// longer than a request timeout: people read, think and type.
pub const DEFAULT_HUMAN_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// How many times an invalid form answer is sent back to the user before the prompt is
/// cancelled.
const MAX_INVALID_ANSWERS: usize = 5;

pub type InstantClock = Arc<dyn Fn() -> Instant + Send + Sync>;

#[derive(Clone)]
pub struct BrokerOptions {
    pub human_timeout: Duration,
    /// The OS user, recorded in receipts.
    pub user: String,
    /// Monotonic time for the abuse windows; passed in so tests can drive it.
    pub now: InstantClock,
}

impl Default for BrokerOptions {
    fn default() -> Self {
        BrokerOptions {
            human_timeout: DEFAULT_HUMAN_TIMEOUT,
            user: os_user(),
            now: Arc::new(Instant::now),
        }
    }
}

/// The OS user name, from the environment the host was started in.
pub fn os_user() -> String {
    ["USER", "LOGNAME", "USERNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "unknown".into())
}

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

/// Which request an elicitation belongs to, and how the host knows.
#[derive(Debug, Clone, Serialize)]
pub struct Correlation {
    /// `sse_stream`: the transport said so. `in_flight`: inferred, these were our requests in
    /// flight. `error_response`: listed in a -32042 error to this request. `mrtr_result`: an
    /// input request in this request's result. `none`: tied to nothing.
    pub basis: &'static str,
    pub requests: Vec<OutRequest>,
}

impl Correlation {
    /// Sent as a request while our requests were in flight (`elicitation/create`), rather
    /// than listed in a result or error: the call that asked is still running.
    pub fn during_request(&self) -> bool {
        matches!(self.basis, "sse_stream" | "in_flight")
    }
}

/// One elicitation as handled: what the CLI prints with `--json` and the UI lists.
#[derive(Debug, Clone, Serialize)]
pub struct ElicitationRecord {
    pub receipt_id: String,
    pub prompt_id: u64,
    pub mode: &'static str,
    pub decision: Decision,
    pub reasons: Vec<Reason>,
    /// What the server was answered: `accept`, `decline` or `cancel`.
    pub action: &'static str,
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
    /// Something the user should know (why it was cancelled, what was not overridden).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// For a URL the user opened: whether its completion was seen (2025-11-25) or the retried
    /// request succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed: Option<bool>,
}

/// How a wait for URL flows ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// Every listed elicitation completed (2025-11-25).
    Completed,
    /// The user chose Retry.
    Retry,
    Cancelled,
    TimedOut,
    /// The session was killed meanwhile.
    Killed,
}

struct Pending {
    prompt: Prompt,
    completed: bool,
    /// Host calls waiting on it (for the result, and to be woken).
    calls: Vec<u64>,
}

/// The process-wide broker.
pub struct ElicitationBroker {
    policy: Arc<Policy>,
    ui: Arc<dyn ConsentUi>,
    opener: Arc<dyn UrlOpener>,
    gatekeeper: Arc<Gatekeeper>,
    options: BrokerOptions,
    /// Prompts are shown one at a time, in arrival order (tokio's mutex is fair).
    queue: tokio::sync::Mutex<()>,
    next_prompt: AtomicU64,
    next_call: AtomicU64,
    pending: Mutex<HashMap<(String, String), Pending>>,
    completions: Notify,
}

impl std::fmt::Debug for ElicitationBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElicitationBroker")
            .field("policy", &self.policy.version)
            .finish_non_exhaustive()
    }
}

/// What the broker knows about one connection.
pub struct Session {
    broker: Arc<ElicitationBroker>,
    server: String,
    verdict: Arc<Verdict>,
    banner: Mutex<IdentityBanner>,
    standing: ServerStanding,
    transport: TransportKind,
    allowed_hosts: Vec<String>,
    era: Arc<EraCell>,
    inflight: Arc<InFlight>,
    abuse: Mutex<AbuseTracker>,
    calls: Mutex<HashMap<u64, Vec<ElicitationRecord>>>,
    /// Prompts being asked or URL flows being waited on; request timeouts pause meanwhile.
    busy: AtomicUsize,
    idle: Notify,
    /// A record was added to a call ([`Session::next_url_in_call`] waits on it).
    recorded: Notify,
    kill: CancellationToken,
    killed: Mutex<Option<String>>,
    /// Cancelled when the connection is closed ([`ElicitationBroker::end_session`]): nothing
    /// asked for it can be answered any more.
    ended: CancellationToken,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// Marks a session busy (a human is involved) for as long as it lives.
struct Busy<'a>(&'a Session);

impl<'a> Busy<'a> {
    fn new(session: &'a Session) -> Busy<'a> {
        session.busy.fetch_add(1, Ordering::SeqCst);
        Busy(session)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
        self.0.idle.notify_waiters();
    }
}

impl Session {
    pub fn server(&self) -> &str {
        &self.server
    }

    pub fn broker(&self) -> &Arc<ElicitationBroker> {
        &self.broker
    }

    /// Cancelled when the kill switch fires; the connection closes itself on it.
    pub fn kill_token(&self) -> CancellationToken {
        self.kill.clone()
    }

    /// Why the session was killed, if it was.
    pub fn killed(&self) -> Option<String> {
        self.killed.lock().expect("session poisoned").clone()
    }

    /// The server's own claims, learned in the handshake, for the banner (marked claimed).
    pub fn set_claimed(&self, name: Option<String>, version: Option<String>) {
        let mut banner = self.banner.lock().expect("session poisoned");
        banner.claimed.server_name = name;
        banner.claimed.server_version = version;
    }

    /// A new host-side call; elicitations tied to it are collected until [`Session::end_call`].
    pub fn begin_call(&self) -> u64 {
        let call = self.broker.next_call.fetch_add(1, Ordering::SeqCst) + 1;
        self.calls
            .lock()
            .expect("session poisoned")
            .insert(call, Vec::new());
        call
    }

    /// The elicitations of a call, so far.
    pub fn call_records(&self, call: u64) -> Vec<ElicitationRecord> {
        self.calls
            .lock()
            .expect("session poisoned")
            .get(&call)
            .cloned()
            .unwrap_or_default()
    }

    /// Host call `call` was made for a downstream client: its elicitations name it.
    /// Kept with the call's requests in flight, and forgotten with them.
    pub fn set_caller(&self, call: u64, caller: crate::caller::Caller) {
        self.inflight.set_caller(call, caller);
    }

    fn caller_of(&self, call: u64) -> Option<crate::caller::Caller> {
        self.inflight.caller_of(call)
    }

    pub fn end_call(&self, call: u64) -> Vec<ElicitationRecord> {
        self.inflight.forget_call(call);
        self.calls
            .lock()
            .expect("session poisoned")
            .remove(&call)
            .unwrap_or_default()
    }

    pub fn inflight(&self) -> &InFlight {
        &self.inflight
    }

    /// A guard that forgets call `call`'s requests in flight when dropped, so a call whose
    /// future is dropped before [`Session::end_call`] (an outer timeout, a closed window) leaves
    /// nothing behind that a late elicitation could be tied to.
    pub fn forget_on_drop(&self, call: u64) -> ForgetCall {
        ForgetCall {
            inflight: self.inflight.clone(),
            call,
        }
    }

    /// Whether a person is being asked, or a URL flow is being waited on.
    pub fn is_busy(&self) -> bool {
        self.busy.load(Ordering::SeqCst) > 0
    }

    /// Resolves once nobody is being asked.
    pub async fn until_idle(&self) {
        loop {
            let idle = self.idle.notified();
            if !self.is_busy() {
                return;
            }
            idle.await;
        }
    }

    fn record_for_calls(&self, calls: &[u64], record: &ElicitationRecord) {
        {
            let mut map = self.calls.lock().expect("session poisoned");
            for call in calls {
                if let Some(records) = map.get_mut(call) {
                    records.push(record.clone());
                }
            }
        }
        self.recorded.notify_waiters();
    }

    /// Resolves once a URL flow that `call` opened with `elicitation/create` and that has not
    /// completed has not been waited on yet (not in `seen`): its record.
    pub async fn next_url_in_call(&self, call: u64, seen: &[u64]) -> ElicitationRecord {
        loop {
            let recorded = self.recorded.notified();
            let open = self.call_records(call).into_iter().find(|r| {
                r.mode == "url"
                    && r.action == "accept"
                    && r.completed == Some(false)
                    && r.correlation.during_request()
                    && !seen.contains(&r.prompt_id)
            });
            if let Some(record) = open {
                return record;
            }
            recorded.await;
        }
    }

    fn update_record(&self, receipt_id: &str, f: impl Fn(&mut ElicitationRecord)) {
        let mut map = self.calls.lock().expect("session poisoned");
        for records in map.values_mut() {
            for record in records.iter_mut().filter(|r| r.receipt_id == receipt_id) {
                f(record);
            }
        }
    }

    fn context(&self, mode: Mode, tied_to_request: bool) -> ElicitationContext {
        ElicitationContext {
            standing: self.standing,
            transport: self.transport,
            mode,
            // Gatehouse declares both modes on every connection.
            mode_declared: true,
            tied_to_request,
        }
    }

    fn era(&self) -> Era {
        self.era.get().unwrap_or(Era::V2025_11_25)
    }
}

/// What the receipt and the answer need, gathered while the prompt is handled.
struct Handling {
    prompt: Prompt,
    correlation: Correlation,
    calls: Vec<u64>,
    elicitation_id: Option<String>,
    input_key: Option<String>,
    round: Option<usize>,
    action: ElicitationAction,
    content: Option<Map<String, Value>>,
    overridden: bool,
    note: Option<String>,
    /// Denied by policy: counted as abuse once the receipt is written.
    denied: bool,
}

fn action_str(action: &ElicitationAction) -> &'static str {
    match action {
        ElicitationAction::Accept => "accept",
        ElicitationAction::Decline => "decline",
        _ => "cancel",
    }
}

fn random_id(prefix: &str) -> String {
    let mut bytes = [0u8; 16];
    // The OS RNG; a receipt id only has to be unique, but unguessable costs nothing.
    getrandom::fill(&mut bytes).expect("the OS random number generator works");
    format!("{prefix}{}", hex::encode(bytes))
}

impl ElicitationBroker {
    pub fn new(
        policy: Arc<Policy>,
        ui: Arc<dyn ConsentUi>,
        opener: Arc<dyn UrlOpener>,
        gatekeeper: Arc<Gatekeeper>,
        options: BrokerOptions,
    ) -> Arc<ElicitationBroker> {
        Arc::new(ElicitationBroker {
            policy,
            ui,
            opener,
            gatekeeper,
            options,
            queue: tokio::sync::Mutex::new(()),
            next_prompt: AtomicU64::new(0),
            next_call: AtomicU64::new(0),
            pending: Mutex::new(HashMap::new()),
            completions: Notify::new(),
        })
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub fn ui(&self) -> &Arc<dyn ConsentUi> {
        &self.ui
    }

    /// A session for a connection to an admitted (or, in warn, tolerated) server.
    pub fn session(
        self: &Arc<Self>,
        verdict: Arc<Verdict>,
        transport: TransportKind,
        era: Arc<EraCell>,
        inflight: Arc<InFlight>,
    ) -> Arc<Session> {
        let standing = match (verdict.status, verdict.is_admitted()) {
            (Status::Admitted, true) => ServerStanding::Admitted,
            (Status::Unattested, _) => ServerStanding::Unattested,
            _ => ServerStanding::NotAdmitted,
        };
        let allowed_hosts = verdict
            .policy()
            .filter(|_| standing == ServerStanding::Admitted)
            .map(|p| p.url_elicitation_domains.clone())
            .unwrap_or_default();
        Arc::new(Session {
            broker: self.clone(),
            server: verdict.server.clone(),
            banner: Mutex::new(IdentityBanner::from_verdict(&verdict)),
            verdict,
            standing,
            transport,
            allowed_hosts,
            era,
            inflight,
            abuse: Mutex::new(AbuseTracker::new(&self.policy.abuse)),
            calls: Mutex::new(HashMap::new()),
            busy: AtomicUsize::new(0),
            idle: Notify::new(),
            recorded: Notify::new(),
            kill: CancellationToken::new(),
            killed: Mutex::new(None),
            ended: CancellationToken::new(),
        })
    }

    fn correlate(&self, session: &Session, arrival: &Arrival) -> (Correlation, Vec<u64>) {
        let (basis, requests) = match arrival {
            Arrival::Request(Association::Stream(id)) => match session.inflight.get(id) {
                Some(request) => ("sse_stream", vec![request]),
                None => ("none", Vec::new()),
            },
            Arrival::Request(Association::Unassociated) => ("none", Vec::new()),
            Arrival::Request(Association::Unknown) => {
                let requests = session.inflight.snapshot();
                (
                    if requests.is_empty() {
                        "none"
                    } else {
                        "in_flight"
                    },
                    requests,
                )
            }
            Arrival::Required { call } => (
                "error_response",
                session.inflight.last_of_call(*call).into_iter().collect(),
            ),
            Arrival::Input { call, .. } => (
                "mrtr_result",
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

    fn new_prompt(
        &self,
        session: &Session,
        message: String,
        origin: Option<String>,
        caller: Option<crate::caller::Caller>,
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
            caller,
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

        let now = (self.options.now)();
        let abuse = session
            .abuse
            .lock()
            .expect("session poisoned")
            .record(AbuseEvent::Elicitation, now);
        if let Some(reason) = abuse {
            assessment.push(reason);
        }

        // The broker's own holds (mode, elicitationId) and the abuse tracker added reasons after
        // the policy decided: whether the user may override is decided again over all of them.
        assessment.override_allowed = gatehouse_policy::override_allowed(&self.policy, &assessment);
        let caller = calls.iter().find_map(|call| session.caller_of(*call));
        let mut prompt = self.new_prompt(session, message, origin, caller, assessment, body);
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
            ("accept", Some(content)) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
            }
            ("accept", None) => ElicitResult::new(ElicitationAction::Accept),
            ("decline", _) => ElicitResult::new(ElicitationAction::Decline),
            _ => ElicitResult::new(ElicitationAction::Cancel),
        };
        (result, record)
    }

    fn count_denial(&self, session: &Session) {
        let now = (self.options.now)();
        let abuse = session
            .abuse
            .lock()
            .expect("session poisoned")
            .record(AbuseEvent::Denial, now);
        if let Some(reason) = abuse {
            self.kill(session, &reason);
        }
    }

    /// Asks the user (queued behind earlier prompts), validates and checks what they answered,
    /// and for a URL opens it once the consent is on record.
    async fn ask(&self, session: &Session, h: &mut Handling, withdrawn: &CancellationToken) {
        let _busy = Busy::new(session);
        let _turn = self.queue.lock().await;
        // It ended while waiting its turn behind other prompts: nobody is asked.
        if let Some(why) = ended_why(session, withdrawn) {
            h.action = ElicitationAction::Cancel;
            h.note = Some(why.into());
            return;
        }
        let held = h.prompt.assessment.decision == Decision::HoldForElicitationEvidence;
        let mut problems: Vec<FieldError> = Vec::new();
        for _ in 0..=MAX_INVALID_ANSWERS {
            // Whatever ends this wait, the card closes: a dropped future (the call it belongs
            // to was abandoned) included.
            let shown = ShownCard {
                ui: self.ui.clone(),
                prompt_id: h.prompt.id,
                open: true,
            };
            let answer = tokio::select! {
                answer = tokio::time::timeout(self.options.human_timeout, self.ui.ask(&h.prompt, &problems)) => match answer {
                    Ok(answer) => answer,
                    Err(_) => {
                        let note = format!("no answer within {} s; cancelled", self.options.human_timeout.as_secs_f64());
                        self.gave_up(h, note);
                        ConsentAnswer::plain(ConsentReply::Cancel)
                    }
                },
                _ = session.kill.cancelled() => {
                    self.gave_up(h, "the session was killed; cancelled".into());
                    ConsentAnswer::plain(ConsentReply::Cancel)
                }
                _ = session.ended.cancelled() => {
                    self.gave_up(h, ENDED_CONNECTION.into());
                    ConsentAnswer::plain(ConsentReply::Cancel)
                }
                _ = withdrawn.cancelled() => {
                    self.gave_up(h, ENDED_REQUEST.into());
                    ConsentAnswer::plain(ConsentReply::Cancel)
                }
            };
            shown.answered();
            if held
                && !answer.override_hold
                && matches!(answer.reply, ConsentReply::Submit(_) | ConsentReply::Open)
            {
                h.note = Some("held by policy and not explicitly overridden; declined".into());
                h.action = ElicitationAction::Decline;
                self.ui.update(PromptUpdate::Refused {
                    prompt: Box::new(h.prompt.clone()),
                });
                return;
            }
            // Only a consent given with the override overrides; a decline never does.
            h.overridden = held
                && answer.override_hold
                && matches!(answer.reply, ConsentReply::Submit(_) | ConsentReply::Open);
            match (answer.reply, &h.prompt.body) {
                (ConsentReply::Decline, _) => {
                    h.action = ElicitationAction::Decline;
                    return;
                }
                (ConsentReply::Cancel, _) => {
                    h.action = ElicitationAction::Cancel;
                    return;
                }
                (ConsentReply::Submit(content), PromptBody::Form { schema, .. }) => {
                    if let Err(errors) = schema.validate(&content) {
                        self.ui.update(PromptUpdate::Invalid {
                            prompt_id: h.prompt.id,
                            problems: errors.clone(),
                        });
                        problems = errors;
                        continue;
                    }
                    let transit = check_answers(&self.policy, schema, &content);
                    if !transit.is_allowed() {
                        h.prompt.assessment.merge(transit);
                        h.action = ElicitationAction::Decline;
                        h.note = Some(
                            "an answer looks like a credential; nothing was sent, the server got decline".into(),
                        );
                        self.ui.update(PromptUpdate::Refused {
                            prompt: Box::new(h.prompt.clone()),
                        });
                        h.denied = true;
                        return;
                    }
                    h.action = ElicitationAction::Accept;
                    h.content = Some(content);
                    return;
                }
                (ConsentReply::Open, PromptBody::Url { display }) => {
                    h.action = ElicitationAction::Accept;
                    // The consent is on record before anything is opened.
                    let url = display.full.clone();
                    if let Err(error) = self.write_receipt(session, h) {
                        h.action = ElicitationAction::Cancel;
                        h.note = Some(format!("{error}; nothing was opened"));
                        return;
                    }
                    self.register_pending(session, h);
                    let opener = self.opener.clone();
                    let opened = tokio::task::spawn_blocking(move || opener.open(&url))
                        .await
                        .unwrap_or_else(|e| Err(format!("the browser launcher crashed: {e}")));
                    match opened {
                        Ok(()) => {
                            let phase = match h.prompt.era {
                                Era::V2025_11_25 if h.correlation.during_request() => {
                                    WaitPhase::InCall
                                }
                                Era::V2025_11_25 if h.elicitation_id.is_some() => {
                                    WaitPhase::Completion
                                }
                                _ => WaitPhase::Retry,
                            };
                            self.ui.update(PromptUpdate::Opened {
                                prompt_id: h.prompt.id,
                                phase,
                            });
                        }
                        Err(error) => {
                            // "The browser failed to load" is a cancel in the spec's words.
                            h.action = ElicitationAction::Cancel;
                            h.note = Some(error);
                            self.unregister_pending(session, h);
                        }
                    }
                    return;
                }
                // A reply that does not fit the prompt (Open for a form, Submit for a URL, or
                // anything for an unsupported schema) is a cancel, never a guess.
                (_, _) => {
                    h.action = ElicitationAction::Cancel;
                    h.note = Some("the answer did not fit the prompt; cancelled".into());
                    return;
                }
            }
        }
        h.action = ElicitationAction::Cancel;
        h.note = Some(format!(
            "the answers broke the form's schema {} times; cancelled",
            MAX_INVALID_ANSWERS + 1
        ));
    }

    fn register_pending(&self, session: &Session, h: &Handling) {
        let Some(id) = &h.elicitation_id else { return };
        self.pending.lock().expect("pending poisoned").insert(
            (session.server.clone(), id.clone()),
            Pending {
                prompt: h.prompt.clone(),
                completed: false,
                calls: h.calls.clone(),
            },
        );
    }

    fn unregister_pending(&self, session: &Session, h: &Handling) {
        if let Some(id) = &h.elicitation_id {
            self.pending
                .lock()
                .expect("pending poisoned")
                .remove(&(session.server.clone(), id.clone()));
        }
    }

    fn receipt_data(&self, session: &Session, h: &Handling) -> Value {
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
        json!({
            "receipt_id": h.prompt.receipt_id,
            "prompt_id": h.prompt.id,
            "name": session.server,
            "server_id": verdict.identity.as_ref().filter(|_| verdict.is_admitted()).map(|i| i.id.clone()),
            "admission": verdict.status.as_str(),
            "origin": verdict.origin,
            "command": verdict.command,
            "caller": h.prompt.caller,
            "user": self.options.user,
            "session_id": Value::Null,
            "era": h.prompt.era.as_str(),
            "correlation": h.correlation,
            "elicitation_id": h.elicitation_id,
            "input_key": h.input_key,
            "round": h.round,
            "mode": h.prompt.body.mode(),
            "decision": h.prompt.assessment.decision.as_str(),
            "reasons": h.prompt.assessment.reasons,
            "overridden": h.overridden,
            "url": url,
            "host": host,
            "host_unicode": host_unicode,
            "action": action_str(&h.action),
            "content_sha256": content_sha256,
            "note": h.note,
            "policy_version": self.policy.version,
            "bundle": verdict.bundle,
        })
    }

    fn write_receipt(&self, session: &Session, h: &Handling) -> Result<u64, HostError> {
        self.gatekeeper.audit(
            events::ELICITATION_RECEIPT,
            &session.verdict,
            self.receipt_data(session, h),
        )
    }

    /// Writes the receipt (unless the URL path already did) and builds the record. When the
    /// receipt cannot be written the answer becomes `decline`: nothing unrecorded is sent.
    fn finish(
        &self,
        session: &Session,
        mut h: Handling,
    ) -> (ElicitationRecord, Option<Map<String, Value>>) {
        let already = h.action == ElicitationAction::Accept && h.prompt.body.mode() == "url";
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
            action: action_str(&h.action),
            overridden: h.overridden,
            completed: (h.prompt.body.mode() == "url" && h.action == ElicitationAction::Accept)
                .then_some(false),
            url,
            elicitation_id: h.elicitation_id.clone(),
            input_key: h.input_key.clone(),
            round: h.round,
            correlation: h.correlation.clone(),
            note: h.note.clone(),
        };
        session.record_for_calls(&h.calls, &record);
        (record, h.content.take())
    }

    /// A `notifications/elicitation/complete` from `session`'s server. A match completes its
    /// prompt and wakes the call waiting on it; anything else (never issued, already completed,
    /// another server's) is ignored, audited, and counted as abuse.
    pub fn complete(&self, session: &Session, elicitation_id: &str) {
        let key = (session.server.clone(), elicitation_id.to_string());
        let outcome = {
            let mut pending = self.pending.lock().expect("pending poisoned");
            let elsewhere = pending
                .keys()
                .any(|(server, id)| id == elicitation_id && *server != session.server);
            match pending.get_mut(&key) {
                Some(p) if !p.completed => {
                    p.completed = true;
                    Ok((p.prompt.clone(), p.calls.clone()))
                }
                Some(_) => Err("duplicate"),
                None if elsewhere => Err("cross_server"),
                None => Err("never_issued"),
            }
        };
        match outcome {
            Ok((prompt, calls)) => {
                let recorded = self.gatekeeper.audit(
                    events::ELICITATION_COMPLETED,
                    &session.verdict,
                    json!({
                        "receipt_id": prompt.receipt_id,
                        "prompt_id": prompt.id,
                        "elicitation_id": elicitation_id,
                        "name": session.server,
                        "calls": calls,
                        "via": "notification",
                    }),
                );
                if let Err(error) = recorded {
                    // Unrecorded, it does not count: the prompt stays pending.
                    tracing::error!(%error, "completion not recorded; ignored");
                    if let Some(p) = self.pending.lock().expect("pending poisoned").get_mut(&key) {
                        p.completed = false;
                    }
                    return;
                }
                session.update_record(&prompt.receipt_id, |r| r.completed = Some(true));
                self.ui.update(PromptUpdate::Completed {
                    prompt_id: prompt.id,
                    via: "notification",
                });
                self.completions.notify_waiters();
            }
            Err(why) => {
                let now = (self.options.now)();
                let abuse = session
                    .abuse
                    .lock()
                    .expect("session poisoned")
                    .record(AbuseEvent::BogusCompletion, now);
                let _ = self.gatekeeper.audit(
                    events::ELICITATION_COMPLETION_IGNORED,
                    &session.verdict,
                    json!({
                        "elicitation_id": elicitation_id,
                        "name": session.server,
                        "why": why,
                        "abuse": abuse.as_ref().map(|r| r.code),
                    }),
                );
                tracing::warn!(server = %session.server, elicitation_id, why, "completion ignored");
                if let Some(reason) = abuse {
                    self.kill(session, &reason);
                }
            }
        }
    }

    /// Whether this server's elicitation `id` has completed.
    pub fn is_completed(&self, session: &Session, id: &str) -> bool {
        self.pending
            .lock()
            .expect("pending poisoned")
            .get(&(session.server.clone(), id.to_string()))
            .is_some_and(|p| p.completed)
    }

    /// Waits until every one of `ids` (this server's elicitation ids) completed, or the user
    /// chose Retry or Cancel on `prompt`, or the human timeout passed, or the session died.
    /// With `ids` empty (2026-07-28) only the user's choice ends it.
    pub async fn wait(
        &self,
        session: &Session,
        prompt_id: u64,
        ids: &[String],
        phase: WaitPhase,
    ) -> WaitOutcome {
        let _busy = Busy::new(session);
        let all_done = async {
            if ids.is_empty() {
                return std::future::pending::<()>().await;
            }
            loop {
                let changed = self.completions.notified();
                if ids.iter().all(|id| self.is_completed(session, id)) {
                    return;
                }
                changed.await;
            }
        };
        tokio::select! {
            () = all_done => WaitOutcome::Completed,
            choice = self.ui.waiting(prompt_id, phase) => match choice {
                WaitChoice::Retry => WaitOutcome::Retry,
                WaitChoice::Cancel => WaitOutcome::Cancelled,
            },
            () = tokio::time::sleep(self.options.human_timeout) => WaitOutcome::TimedOut,
            () = session.kill.cancelled() => WaitOutcome::Killed,
        }
    }

    /// A call's result arrived while URL flows it opened still await their completion. Over
    /// Streamable HTTP a server may send the completion on its standalone stream and the result
    /// on the request's, so the result can overtake a completion sent before it: give those
    /// completions `grace` to land. Bounded, and only for accepted URLs, so a server that
    /// never sends one costs at most `grace` on such calls.
    pub async fn settle_completions(
        &self,
        session: &Session,
        records: &[ElicitationRecord],
        grace: Duration,
    ) {
        let ids: Vec<&str> = records
            .iter()
            .filter(|r| r.mode == "url" && r.action == "accept" && r.completed == Some(false))
            .filter_map(|r| r.elicitation_id.as_deref())
            .collect();
        if ids.is_empty() {
            return;
        }
        let all_done = async {
            loop {
                let changed = self.completions.notified();
                if ids.iter().all(|id| self.is_completed(session, id)) {
                    return;
                }
                changed.await;
            }
        };
        let _ = tokio::time::timeout(grace, all_done).await;
    }

    /// The connection closed: its pending elicitations can no longer complete.
    pub fn end_session(&self, session: &Session) {
        session.ended.cancel();
        self.pending
            .lock()
            .expect("pending poisoned")
            .retain(|(server, _), _| *server != session.server);
    }

    /// Records a retry of the originating request after URL elicitations.
    pub fn record_retry(
        &self,
        session: &Session,
        call: u64,
        attempt: usize,
        why: &str,
        receipts: &[String],
    ) -> Result<(), HostError> {
        self.gatekeeper
            .audit(
                events::ELICITATION_RETRY,
                &session.verdict,
                json!({"name": session.server, "call": call, "attempt": attempt, "why": why, "receipts": receipts}),
            )
            .map(|_| ())
    }

    /// The originating call finished: attach its result to the prompts it caused.
    /// A URL flow the call had to be retried after (`-32042`, or a 2026-07-28 input request)
    /// has completed once the retried call succeeded (2026-07-28 learns it only this way):
    /// recorded, linked to its receipt. A 2025-11-25 `elicitation/create` URL flow is not: its
    /// `accept` is consent, not completion, and the server may answer the call at once, so
    /// only its completion notification completes it.
    pub fn attach_result(
        &self,
        session: &Session,
        records: &mut [ElicitationRecord],
        is_error: bool,
        text: &str,
    ) {
        for record in records.iter_mut() {
            let retried_after =
                matches!(record.correlation.basis, "error_response" | "mrtr_result");
            if record.completed == Some(false) && retried_after && !is_error {
                let recorded = self.gatekeeper.audit(
                    events::ELICITATION_COMPLETED,
                    &session.verdict,
                    json!({
                        "receipt_id": record.receipt_id,
                        "prompt_id": record.prompt_id,
                        "elicitation_id": record.elicitation_id,
                        "input_key": record.input_key,
                        "name": session.server,
                        "via": "retried_request_succeeded",
                    }),
                );
                if recorded.is_ok() {
                    record.completed = Some(true);
                    self.ui.update(PromptUpdate::Completed {
                        prompt_id: record.prompt_id,
                        via: "result",
                    });
                }
            }
            self.ui.update(PromptUpdate::Result {
                prompt_id: record.prompt_id,
                is_error,
                text: text.to_string(),
            });
        }
    }

    /// The broker stopped asking (the human timeout, the kill switch, the connection or the
    /// request ended): the card closes with why, so no UI goes on offering an answer nobody
    /// will read.
    fn gave_up(&self, h: &mut Handling, note: String) {
        self.ui.update(PromptUpdate::Closed {
            prompt_id: h.prompt.id,
            outcome: note.clone(),
        });
        h.note = Some(note);
    }

    /// The call gave up on its prompts (cancelled, timed out, failed).
    pub fn close_prompts(&self, records: &[ElicitationRecord], outcome: &str) {
        for record in records {
            self.ui.update(PromptUpdate::Closed {
                prompt_id: record.prompt_id,
                outcome: outcome.to_string(),
            });
        }
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
        let now = (self.options.now)();
        let abuse = session
            .abuse
            .lock()
            .expect("session poisoned")
            .record(AbuseEvent::Elicitation, now);
        if let Some(reason) = abuse {
            assessment.push(reason);
        }
        let (correlation, calls) = self.correlate(session, &Arrival::Request(Association::Unknown));
        let caller = calls.iter().find_map(|call| session.caller_of(*call));
        let prompt = self.new_prompt(
            session,
            message,
            None,
            caller,
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

    /// The kill switch: audited, the server suspended, the connection closed.
    fn kill(&self, session: &Session, reason: &Reason) {
        {
            let mut killed = session.killed.lock().expect("session poisoned");
            if killed.is_some() {
                return;
            }
            *killed = Some(format!("{}: {}", reason.code, reason.detail));
        }
        let _ = self.gatekeeper.audit(
            events::SESSION_KILLED,
            &session.verdict,
            json!({"name": session.server, "decision": Decision::KillSessionOnElicitationAbuse.as_str(), "reason": reason.code, "detail": reason.detail}),
        );
        if let Err(error) = self
            .gatekeeper
            .suspend(&session.verdict, reason.code, &reason.detail)
        {
            tracing::error!(%error, "could not record the suspension");
        }
        self.ui.update(PromptUpdate::Suspended {
            server: session.server.clone(),
            detail: format!("{}: {}", reason.code, reason.detail),
        });
        session.kill.cancel();
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

const ENDED_CONNECTION: &str = "the connection was closed; cancelled";
const ENDED_REQUEST: &str = "the server withdrew the request, or its connection ended; cancelled";

/// Why nothing may be asked any more for this request, if so.
fn ended_why(session: &Session, withdrawn: &CancellationToken) -> Option<&'static str> {
    if session.kill.is_cancelled() {
        Some("the session was killed; cancelled")
    } else if session.ended.is_cancelled() {
        Some(ENDED_CONNECTION)
    } else if withdrawn.is_cancelled() {
        Some(ENDED_REQUEST)
    } else {
        None
    }
}

/// A card being asked. Dropped before [`ShownCard::answered`] (the future asking it was
/// dropped: its call was abandoned), it tells the UI the card is closed.
struct ShownCard {
    ui: Arc<dyn ConsentUi>,
    prompt_id: u64,
    open: bool,
}

impl ShownCard {
    fn answered(mut self) {
        self.open = false;
    }
}

impl Drop for ShownCard {
    fn drop(&mut self) {
        if self.open {
            self.ui.update(PromptUpdate::Closed {
                prompt_id: self.prompt_id,
                outcome: "the request it belongs to was abandoned; cancelled".into(),
            });
        }
    }
}

/// See [`Session::forget_on_drop`].
#[must_use = "the call's requests are forgotten when this is dropped"]
pub struct ForgetCall {
    inflight: Arc<InFlight>,
    call: u64,
}

impl Drop for ForgetCall {
    fn drop(&mut self) {
        self.inflight.forget_call(self.call);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
