//! What the broker knows about one connection: its standing and transport, its calls and
//! their records, whether a person is being asked, and its kill switch.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use gatehouse_policy::{AbuseTracker, ElicitationContext, Mode, ServerStanding, TransportKind};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{ElicitationBroker, ElicitationRecord};
use crate::Era;
use crate::admission::{Status, Verdict};
use crate::consent::IdentityBanner;
use crate::tap::{EraCell, InFlight};

/// The sign-in an HTTP connection runs under: its authorization server and, when the token
/// names one, the subject.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Authorization {
    pub issuer: Option<String>,
    pub subject: Option<String>,
}

/// What the broker knows about one connection.
pub struct Session {
    broker: Arc<ElicitationBroker>,
    pub(super) server: String,
    pub(super) verdict: Arc<Verdict>,
    pub(super) banner: Mutex<IdentityBanner>,
    standing: ServerStanding,
    transport: Mutex<TransportKind>,
    /// Who the user is signed in as at this server (MCP authorization), for receipts.
    pub(super) authorization: Mutex<Option<Authorization>>,
    pub(super) allowed_hosts: Vec<String>,
    era: Arc<EraCell>,
    pub(super) inflight: Arc<InFlight>,
    pub(super) abuse: Mutex<AbuseTracker>,
    calls: Mutex<HashMap<u64, Vec<ElicitationRecord>>>,
    /// Prompts being asked or URL flows being waited on; request timeouts pause meanwhile.
    busy: AtomicUsize,
    idle: Notify,
    /// A record was added to a call ([`Session::next_url_in_call`] waits on it).
    recorded: Notify,
    pub(super) kill: CancellationToken,
    pub(super) killed: Mutex<Option<String>>,
    /// Cancelled when the connection is closed ([`ElicitationBroker::end_session`]): nothing
    /// asked for it can be answered any more.
    pub(super) ended: CancellationToken,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// Marks a session busy (a human is involved) for as long as it lives.
pub(super) struct Busy<'a>(&'a Session);

impl<'a> Busy<'a> {
    pub(super) fn new(session: &'a Session) -> Busy<'a> {
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
    /// The connection signed in (or stepped up): elicitations now come from an authenticated
    /// user's session (SEP-2343 lifts its hold on remote servers), and receipts name the
    /// authorization server and subject.
    pub fn set_authorization(&self, authorization: Authorization) {
        if let TransportKind::Http { authorized, .. } =
            &mut *self.transport.lock().expect("session poisoned")
        {
            *authorized = true;
        }
        *self.authorization.lock().expect("session poisoned") = Some(authorization);
    }

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

    pub(super) fn caller_of(&self, call: u64) -> Option<crate::caller::Caller> {
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

    pub(super) fn record_for_calls(&self, calls: &[u64], record: &ElicitationRecord) {
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
                r.mode == gatehouse_policy::Mode::Url
                    && r.action == super::ElicitationAnswer::Accept
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

    pub(super) fn update_record(&self, receipt_id: &str, f: impl Fn(&mut ElicitationRecord)) {
        let mut map = self.calls.lock().expect("session poisoned");
        for records in map.values_mut() {
            for record in records.iter_mut().filter(|r| r.receipt_id == receipt_id) {
                f(record);
            }
        }
    }

    pub(super) fn context(&self, mode: Mode, tied_to_request: bool) -> ElicitationContext {
        ElicitationContext {
            standing: self.standing,
            transport: *self.transport.lock().expect("session poisoned"),
            mode,
            // Gatehouse declares both modes on every connection.
            mode_declared: true,
            tied_to_request,
        }
    }

    pub(super) fn era(&self) -> Era {
        self.era.get().unwrap_or(Era::V2025_11_25)
    }
}

impl ElicitationBroker {
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
            transport: Mutex::new(transport),
            authorization: Mutex::new(None),
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
