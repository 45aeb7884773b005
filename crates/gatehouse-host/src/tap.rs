//! The traffic tap: every JSON-RPC message in and out, per server, with direction, time and
//! era, in a bounded in-memory ring and optionally a JSONL file.
//!
//! The tap sits between rmcp and the transport ([`Tapped`]), so it sees exactly what goes on
//! the wire as JSON-RPC, never HTTP headers (and so never an `Authorization` header). Secret
//! values the host resolved from the keychain, and every OAuth token of a sign-in, are
//! replaced by `[secret:NAME]` wherever they appear in a recorded message, in memory and in the
//! file. What a server sends is redacted the same way before anything of the host reads it
//! ([`Tapped`]): a server or proxy that echoes a credential (an `Authorization` header in an
//! error, an argument) hands it to no client, model or screen.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};

use rmcp::RoleClient;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, GetMeta, NumberOrString,
    RequestParamsMeta, ServerJsonRpcMessage, ServerNotification,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::Era;
use crate::connection::ProgressDispatcher;

/// Where the tap reads the time from. Passed in so tests can fix it.
pub type Clock = Arc<dyn Fn() -> OffsetDateTime + Send + Sync>;

/// The wall clock.
pub fn system_clock() -> Clock {
    Arc::new(OffsetDateTime::now_utc)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Host to server.
    Out,
    /// Server to host.
    In,
}

/// One recorded message.
#[derive(Debug, Clone, Serialize)]
pub struct TrafficEntry {
    /// Position in this tap, across servers, starting at 1.
    pub seq: u64,
    /// RFC 3339, UTC.
    pub time: String,
    pub server: String,
    pub direction: Direction,
    /// The era the message belongs to; `None` only before the first handshake message.
    pub era: Option<Era>,
    pub message: Value,
}

/// A message as recorded: compact JSON text and the raw time. Parsing and formatting wait
/// until someone reads the traffic, so recording stays cheap on every round trip.
struct Recorded {
    seq: u64,
    time: OffsetDateTime,
    server: Arc<str>,
    direction: Direction,
    era: Option<Era>,
    text: String,
}

impl Recorded {
    fn entry(&self) -> TrafficEntry {
        TrafficEntry {
            seq: self.seq,
            time: self
                .time
                .format(&Rfc3339)
                .unwrap_or_else(|_| "invalid-time".into()),
            server: self.server.to_string(),
            direction: self.direction,
            era: self.era,
            message: serde_json::from_str(&self.text)
                .unwrap_or_else(|_| Value::String(self.text.clone())),
        }
    }
}

struct Ring {
    next_seq: u64,
    entries: VecDeque<Recorded>,
    /// The sum of the entries' text lengths.
    bytes: usize,
}

/// What the ring keeps of all messages together, by default: a hostile server's 16 MiB
/// messages cannot hold more than this in memory.
pub const DEFAULT_RING_BYTES: usize = 64 * 1024 * 1024;
/// What the ring keeps of one message; the rest is cut, with a note (the message itself goes to
/// the client unchanged).
pub const MAX_ENTRY_BYTES: usize = 1024 * 1024;

/// A secret to keep out of the record: its label, and its text as it appears inside a JSON
/// string (escaped the way serde_json escapes it).
struct Redaction {
    label: String,
    raw: String,
    escaped: String,
}

pub struct TrafficTap {
    capacity: usize,
    byte_budget: usize,
    clock: Clock,
    ring: Mutex<Ring>,
    file: Option<Mutex<BufWriter<File>>>,
    redactions: RwLock<Vec<Redaction>>,
}

impl std::fmt::Debug for TrafficTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrafficTap")
            .field("capacity", &self.capacity)
            .field("byte_budget", &self.byte_budget)
            .finish_non_exhaustive()
    }
}

impl TrafficTap {
    /// A tap keeping the last `capacity` messages (at least one), and at most
    /// [`DEFAULT_RING_BYTES`] of them.
    pub fn new(capacity: usize, clock: Clock) -> Self {
        TrafficTap {
            capacity: capacity.max(1),
            byte_budget: DEFAULT_RING_BYTES,
            clock,
            ring: Mutex::new(Ring {
                next_seq: 1,
                entries: VecDeque::new(),
                bytes: 0,
            }),
            file: None,
            redactions: RwLock::new(Vec::new()),
        }
    }

    /// Keeps at most `bytes` of message text in memory (the oldest entries go first).
    pub fn with_byte_budget(mut self, bytes: usize) -> Self {
        self.byte_budget = bytes.max(1);
        self
    }

    /// The bytes of message text held in memory now.
    pub fn held_bytes(&self) -> usize {
        self.ring.lock().expect("tap poisoned").bytes
    }

    /// Also appends every entry as one JSON line to `path` (created if missing).
    pub fn with_jsonl_file(mut self, path: &Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        self.file = Some(Mutex::new(BufWriter::new(file)));
        Ok(self)
    }

    /// From now on, `value` is recorded as `[secret:NAME]`, and replaced so in what servers
    /// send ([`Tapped`]).
    pub fn redact(&self, name: &str, value: &str) {
        if value.is_empty() {
            return;
        }
        // Registered again on every use (an OAuth token is, before each request): a read
        // lock answers that.
        if self
            .redactions
            .read()
            .expect("redactions poisoned")
            .iter()
            .any(|r| r.raw == value)
        {
            return;
        }
        let escaped = serde_json::to_string(value).expect("a string serializes");
        let escaped = escaped[1..escaped.len() - 1].to_string();
        let mut redactions = self.redactions.write().expect("redactions poisoned");
        if !redactions.iter().any(|r| r.raw == value) {
            redactions.push(Redaction {
                label: format!("[secret:{name}]"),
                raw: value.to_string(),
                escaped,
            });
            // Longest first, so a secret that contains another is replaced whole.
            redactions.sort_by_key(|r| std::cmp::Reverse(r.raw.len()));
        }
    }

    /// Whether any secret is registered for redaction.
    pub fn redacts(&self) -> bool {
        !self
            .redactions
            .read()
            .expect("redactions poisoned")
            .is_empty()
    }

    /// Whether compact JSON `text` holds a registered secret anywhere.
    pub fn holds_secret(&self, text: &str) -> bool {
        self.redactions
            .read()
            .expect("redactions poisoned")
            .iter()
            .any(|r| text.contains(&r.escaped))
    }

    /// Replaces every registered secret inside the strings (and object keys) of `value` by
    /// its `[secret:NAME]` label; whether anything changed. Only string contents change, so
    /// the message keeps its shape.
    pub fn scrub(&self, value: &mut Value) -> bool {
        let redactions = self.redactions.read().expect("redactions poisoned");
        if redactions.is_empty() {
            return false;
        }
        scrub_value(&redactions, value)
    }

    /// Records a message given as compact JSON text.
    pub fn record_text(
        &self,
        server: &Arc<str>,
        direction: Direction,
        era: Option<Era>,
        mut text: String,
    ) {
        {
            let redactions = self.redactions.read().expect("redactions poisoned");
            for redaction in redactions.iter() {
                if text.contains(&redaction.escaped) {
                    text = text.replace(&redaction.escaped, &redaction.label);
                }
            }
        }
        let time = (self.clock)();
        let mut ring = self.ring.lock().expect("tap poisoned");
        let recorded = Recorded {
            seq: ring.next_seq,
            time,
            server: server.clone(),
            direction,
            era,
            text,
        };
        ring.next_seq += 1;
        if let Some(file) = &self.file {
            let line = serde_json::to_string(&recorded.entry()).expect("entry serializes");
            let mut file = file.lock().expect("tap file poisoned");
            // The tap is diagnostics: a full disk must not break the connection, so a failed
            // write is logged, not returned.
            let result = file
                .write_all(line.as_bytes())
                .and_then(|()| file.write_all(b"\n"))
                .and_then(|()| file.flush());
            if let Err(error) = result {
                tracing::warn!(%error, "could not write the traffic log");
            }
        }
        let mut recorded = recorded;
        let limit = MAX_ENTRY_BYTES.min(self.byte_budget);
        if recorded.text.len() > limit {
            // Kept as text (no longer JSON) with a note saying how much is missing.
            let total = recorded.text.len();
            let mut cut = limit.saturating_sub(128);
            while !recorded.text.is_char_boundary(cut) {
                cut -= 1;
            }
            recorded.text.truncate(cut);
            recorded.text.push_str(&format!(
                " … [truncated by Gatehouse: {} of {total} bytes not kept]",
                total - cut
            ));
        }
        while ring.entries.len() >= self.capacity
            || (!ring.entries.is_empty() && ring.bytes + recorded.text.len() > self.byte_budget)
        {
            let Some(old) = ring.entries.pop_front() else {
                break;
            };
            ring.bytes -= old.text.len();
        }
        ring.bytes += recorded.text.len();
        ring.entries.push_back(recorded);
    }

    /// The recorded entries, oldest first, for one server or all.
    pub fn entries(&self, server: Option<&str>) -> Vec<TrafficEntry> {
        let ring = self.ring.lock().expect("tap poisoned");
        ring.entries
            .iter()
            .filter(|e| server.is_none_or(|s| &*e.server == s))
            .map(Recorded::entry)
            .collect()
    }
}

fn scrub_text(redactions: &[Redaction], text: &mut String) -> bool {
    let mut changed = false;
    for redaction in redactions {
        if text.contains(&redaction.raw) {
            *text = text.replace(&redaction.raw, &redaction.label);
            changed = true;
        }
    }
    changed
}

fn scrub_value(redactions: &[Redaction], value: &mut Value) -> bool {
    match value {
        Value::String(text) => scrub_text(redactions, text),
        Value::Array(items) => items.iter_mut().fold(false, |changed, item| {
            scrub_value(redactions, item) | changed
        }),
        Value::Object(object) => {
            let mut changed = false;
            if object
                .keys()
                .any(|key| redactions.iter().any(|r| key.contains(&r.raw)))
            {
                let entries = std::mem::take(object);
                for (mut key, item) in entries {
                    scrub_text(redactions, &mut key);
                    object.insert(key, item);
                }
                changed = true;
            }
            object.values_mut().fold(changed, |changed, item| {
                scrub_value(redactions, item) | changed
            })
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// The era a connection is in, shared by its tap wrapper and the connection. Before the
/// handshake settles, the tap infers it from the handshake message it sees.
#[derive(Debug, Default)]
pub struct EraCell(Mutex<Option<Era>>);

impl EraCell {
    pub fn get(&self) -> Option<Era> {
        *self.0.lock().expect("era cell poisoned")
    }
    pub fn set(&self, era: Era) {
        *self.0.lock().expect("era cell poisoned") = Some(era);
    }
}

/// Progress (and elicitation completion) notifications received vs handled, per connection. rmcp runs each notification
/// handler in a task of its own, so a progress notification that arrived before a result may
/// be handled after it; a caller that waits for `handled` to reach `received` sees every
/// progress event of its call (handed to it by the connection's [`ProgressDispatcher`], and on
/// the host's events) before the result.
#[derive(Debug, Default)]
pub struct ProgressCount {
    received: std::sync::atomic::AtomicU64,
    handled: std::sync::atomic::AtomicU64,
    changed: tokio::sync::Notify,
}

impl ProgressCount {
    pub fn received(&self) {
        self.received
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    pub fn handled(&self) {
        self.handled
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.changed.notify_waiters();
    }
    /// Waits until every progress notification received so far has been handled.
    pub async fn settle(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        let target = self.received.load(SeqCst);
        loop {
            let changed = self.changed.notified();
            if self.handled.load(SeqCst) >= target {
                return;
            }
            changed.await;
        }
    }
}

/// A request of ours the server has not answered yet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutRequest {
    /// The JSON-RPC id, as sent.
    pub id: Value,
    pub method: String,
    /// What the request is about: the tool's name for `tools/call`, the prompt's name for
    /// `prompts/get`, the URI for `resources/read`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The host-side call it belongs to ([`InFlight::expect_call`]).
    #[serde(skip)]
    pub call: Option<u64>,
    /// `_meta.progressToken` as sent (rmcp gives every request one): the server's progress
    /// notifications for this request carry it.
    #[serde(skip)]
    pub progress_token: Option<Value>,
}

/// At most this many unanswered requests are remembered per connection.
pub const MAX_IN_FLIGHT: usize = 1024;

/// Requests in flight on one connection, as seen on the wire: what an `elicitation/create`
/// can be tied to (SEP-2260). Host-side calls announce themselves before sending, so the
/// next `tools/call` of that tool on the wire is attributed to them.
#[derive(Debug, Default)]
pub struct InFlight {
    requests: Mutex<Vec<OutRequest>>,
    /// (method, subject, host call) announced and not yet seen on the wire.
    expected: Mutex<VecDeque<(&'static str, String, u64)>>,
    /// The last request sent for each host call, answered or not.
    last: Mutex<std::collections::HashMap<u64, OutRequest>>,
    /// The downstream client of each host call a gateway made.
    callers: Mutex<std::collections::HashMap<u64, crate::caller::Caller>>,
}

impl InFlight {
    /// The next `tools/call` of `tool` sent belongs to host call `call`.
    pub fn expect_call(&self, tool: &str, call: u64) {
        self.expect_request("tools/call", tool, call);
    }

    /// The next `method` request about `subject` (a tool or prompt name, a resource URI)
    /// sent belongs to host call `call`.
    pub fn expect_request(&self, method: &'static str, subject: &str, call: u64) {
        self.expected
            .lock()
            .expect("in-flight poisoned")
            .push_back((method, subject.to_string(), call));
    }

    /// Host call `call` was made for a downstream client (the gateway); forgotten with the
    /// call.
    pub fn set_caller(&self, call: u64, caller: crate::caller::Caller) {
        self.callers
            .lock()
            .expect("in-flight poisoned")
            .insert(call, caller);
    }

    pub fn caller_of(&self, call: u64) -> Option<crate::caller::Caller> {
        self.callers
            .lock()
            .expect("in-flight poisoned")
            .get(&call)
            .cloned()
    }

    /// Forgets everything of host call `call`: its announcements, its caller, its last request
    /// and every request of it still unanswered. Called whenever the call ends, for any reason
    /// (answered, timed out, cancelled, killed, dropped), so a later `elicitation/create` can
    /// never be tied to a request the host gave up on.
    pub fn forget_call(&self, call: u64) {
        self.callers
            .lock()
            .expect("in-flight poisoned")
            .remove(&call);
        self.expected
            .lock()
            .expect("in-flight poisoned")
            .retain(|(_, _, c)| *c != call);
        self.last.lock().expect("in-flight poisoned").remove(&call);
        self.requests
            .lock()
            .expect("in-flight poisoned")
            .retain(|r| r.call != Some(call));
    }

    /// Records a request (or a cancellation) going out. Returns the host call the request
    /// belongs to and its `_meta.progressToken`, when it is attributed to one.
    fn sent(&self, message: Outgoing) -> Option<(u64, Option<Value>)> {
        let (id, method, tool, progress_token) = match message {
            // The host gave up on a request (timeout, user cancel, dropped future): it is no
            // longer in flight, whatever the server does with it.
            Outgoing::Cancelled { request_id } => {
                self.requests
                    .lock()
                    .expect("in-flight poisoned")
                    .retain(|r| r.id != request_id);
                return None;
            }
            Outgoing::Request {
                id,
                method,
                subject,
                progress_token,
            } => (id, method, subject, progress_token),
        };
        let method = method.as_str();
        let call = tool.as_ref().and_then(|tool| {
            let mut expected = self.expected.lock().expect("in-flight poisoned");
            let position = expected
                .iter()
                .position(|(m, t, _)| *m == method && t == tool)?;
            expected.remove(position).map(|(_, _, call)| call)
        });
        let request = OutRequest {
            id,
            method: method.to_string(),
            tool,
            call,
            progress_token,
        };
        if let Some(call) = call {
            self.last
                .lock()
                .expect("in-flight poisoned")
                .insert(call, request.clone());
        }
        let mut requests = self.requests.lock().expect("in-flight poisoned");
        // Bounded whatever the server does: requests it never answers and the host never
        // cancelled (there should be none) are dropped oldest first.
        if requests.len() >= MAX_IN_FLIGHT {
            requests.remove(0);
        }
        let attributed = request
            .call
            .map(|call| (call, request.progress_token.clone()));
        requests.push(request);
        attributed
    }

    /// The last request sent for host call `call`.
    pub fn last_of_call(&self, call: u64) -> Option<OutRequest> {
        self.last
            .lock()
            .expect("in-flight poisoned")
            .get(&call)
            .cloned()
    }

    /// The server answered request `id` (a result or an error).
    fn answered(&self, id: &Value) {
        self.requests
            .lock()
            .expect("in-flight poisoned")
            .retain(|r| &r.id != id);
    }

    /// Every request not answered yet, oldest first.
    pub fn snapshot(&self) -> Vec<OutRequest> {
        self.requests.lock().expect("in-flight poisoned").clone()
    }

    /// The in-flight request with this JSON-RPC id.
    pub fn get(&self, id: &Value) -> Option<OutRequest> {
        self.requests
            .lock()
            .expect("in-flight poisoned")
            .iter()
            .find(|r| &r.id == id)
            .cloned()
    }
}

/// What the in-flight table needs of a message going out, read from the typed message (the
/// tap does not parse back the text it serialized).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outgoing {
    Request {
        id: Value,
        method: String,
        /// The tool's or prompt's name, or the resource's URI.
        subject: Option<String>,
        /// `_meta.progressToken` as it goes on the wire.
        progress_token: Option<Value>,
    },
    /// `notifications/cancelled` for this request id.
    Cancelled { request_id: Value },
}

fn id_value(id: &NumberOrString) -> Value {
    match id {
        NumberOrString::Number(n) => Value::from(*n),
        NumberOrString::String(s) => Value::String(s.to_string()),
    }
}

impl Outgoing {
    /// What `message` means for the in-flight table; `None` for anything else (a response,
    /// another notification).
    pub(crate) fn of(message: &ClientJsonRpcMessage) -> Option<Outgoing> {
        match message {
            ClientJsonRpcMessage::Request(request) => {
                let subject = match &request.request {
                    ClientRequest::CallToolRequest(r) => Some(r.params.name.to_string()),
                    ClientRequest::GetPromptRequest(r) => Some(r.params.name.clone()),
                    ClientRequest::ReadResourceRequest(r) => Some(r.params.uri.clone()),
                    _ => None,
                };
                // rmcp writes the request's own `_meta` over its params' on the wire.
                let params_token = match &request.request {
                    ClientRequest::CallToolRequest(r) => r.params.meta(),
                    ClientRequest::GetPromptRequest(r) => r.params.meta(),
                    ClientRequest::ReadResourceRequest(r) => r.params.meta(),
                    _ => None,
                }
                .and_then(|meta| meta.0.get("progressToken").cloned());
                let progress_token = request
                    .request
                    .get_meta()
                    .0
                    .get("progressToken")
                    .cloned()
                    .or(params_token);
                Some(Outgoing::Request {
                    id: id_value(&request.id),
                    method: request.request.method().to_string(),
                    subject,
                    progress_token,
                })
            }
            ClientJsonRpcMessage::Notification(notification) => match &notification.notification {
                ClientNotification::CancelledNotification(cancelled) => cancelled
                    .params
                    .request_id
                    .as_ref()
                    .map(|id| Outgoing::Cancelled {
                        request_id: id_value(id),
                    }),
                _ => None,
            },
            _ => None,
        }
    }
}

/// What a transport can hand the tap besides the messages: their text as it crossed the wire.
/// The tap records every message as text, so a transport that reads lines (stdio) lends it the
/// line it parsed instead of having the message serialized again, and one that writes lines
/// takes the text the tap serialized instead of serializing it a second time.
pub trait WireText: Transport<RoleClient> {
    /// The line the last message `receive` returned was parsed from, once; `None` when this
    /// transport keeps no text.
    fn take_received_text(&mut self) -> Option<String> {
        None
    }

    /// Sends `item`, whose compact JSON is `text`.
    fn send_text(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
        text: String,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let _ = text;
        self.send(item)
    }
}

/// The stdio transport reads and writes lines: it lends the line it parsed and writes the text
/// the tap serialized.
impl WireText for crate::stdio::StdioTransport {
    fn take_received_text(&mut self) -> Option<String> {
        crate::stdio::StdioTransport::take_received_text(self)
    }

    fn send_text(
        &mut self,
        _item: TxJsonRpcMessage<RoleClient>,
        text: String,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let mut line = text.into_bytes();
        line.push(b'\n');
        self.write_line(line)
    }
}

/// rmcp's HTTP transports: their messages arrive as parsed JSON, with no line to lend.
impl<W: rmcp::transport::worker::Worker<Role = RoleClient>> WireText
    for rmcp::transport::worker::WorkerTransport<W>
{
}

/// What a connection's transport wrapper shares with the rest of the connection: the tap, the
/// era as it settles, the progress count, the requests in flight and where each call's
/// progress goes.
#[derive(Debug, Clone)]
pub struct Wire {
    pub tap: Arc<TrafficTap>,
    pub era: Arc<EraCell>,
    pub progress: Arc<ProgressCount>,
    pub inflight: Arc<InFlight>,
    /// Told the token of each host call's request as it goes out.
    pub dispatcher: Arc<ProgressDispatcher>,
}

/// A transport wrapped so the tap records every message crossing it.
pub struct Tapped<T> {
    inner: T,
    server: Arc<str>,
    wire: Wire,
}

impl<T> Tapped<T> {
    pub fn new(inner: T, server: &str, wire: Wire) -> Self {
        Tapped {
            inner,
            server: server.into(),
            wire,
        }
    }
}

impl<T: WireText> Transport<RoleClient> for Tapped<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let ClientJsonRpcMessage::Request(request) = &item {
            match &request.request {
                ClientRequest::DiscoverRequest(_) => self.wire.era.set(Era::V2026_07_28),
                ClientRequest::InitializeRequest(_) => self.wire.era.set(Era::V2025_11_25),
                _ => {}
            }
        }
        if let Some(outgoing) = Outgoing::of(&item)
            && let Some((call, token)) = self.wire.inflight.sent(outgoing)
        {
            // Sent before the server can answer, so no progress of it arrives unrouted.
            self.wire.dispatcher.sent(call, token.as_ref());
        }
        // Serialized once: the same text is recorded and (where the transport writes text)
        // sent.
        let text = serde_json::to_string(&item).unwrap_or_default();
        self.wire.tap.record_text(
            &self.server,
            Direction::Out,
            self.wire.era.get(),
            text.clone(),
        );
        self.inner.send_text(item, text)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let mut item = self.inner.receive().await?;
        let line = self.inner.take_received_text();
        // The line as it arrived is the record, unless a secret must be looked for: that
        // needs the message's own compact serialization, where a secret the server wrote with
        // other escapes (`\u0061` for `a`) reads as the text the redaction matches.
        let mut text = match line {
            Some(line) if !self.wire.tap.redacts() => line,
            _ => serde_json::to_string(&item).unwrap_or_default(),
        };
        // A credential the server echoes (a token from the Authorization header it got, a
        // secret passed as an argument) goes no further than here: the host, the UI, the
        // gateway's clients and the traffic record all get the message with it redacted.
        if self.wire.tap.holds_secret(&text)
            && let Ok(mut value) = serde_json::from_str::<Value>(&text)
            && self.wire.tap.scrub(&mut value)
        {
            match serde_json::from_value::<RxJsonRpcMessage<RoleClient>>(value.clone()) {
                Ok(scrubbed) => {
                    item = scrubbed;
                    text = value.to_string();
                }
                // Only string contents changed, so this takes a secret that is also a word
                // of the protocol (a method name, a content type). The record is still
                // redacted below.
                Err(error) => {
                    tracing::warn!(server = %self.server, %error, "a message holding a secret could not be redacted")
                }
            }
        }
        if let ServerJsonRpcMessage::Notification(notification) = &item {
            match &notification.notification {
                ServerNotification::ProgressNotification(_) => self.wire.progress.received(),
                // Completions decide whether a call retries or a session dies: the call waits
                // for those that arrived before its result, like progress.
                ServerNotification::CustomNotification(custom)
                    if custom.method == "notifications/elicitation/complete" =>
                {
                    self.wire.progress.received()
                }
                _ => {}
            }
        }
        match &item {
            ServerJsonRpcMessage::Response(response) => {
                self.wire.inflight.answered(&id_value(&response.id));
            }
            ServerJsonRpcMessage::Error(error) => {
                if let Some(id) = &error.id {
                    self.wire.inflight.answered(&id_value(id));
                }
            }
            _ => {}
        }
        self.wire
            .tap
            .record_text(&self.server, Direction::In, self.wire.era.get(), text);
        Some(item)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(
        tap: &TrafficTap,
        server: &str,
        direction: Direction,
        era: Option<Era>,
        message: Value,
    ) {
        tap.record_text(&Arc::from(server), direction, era, message.to_string());
    }

    fn fixed_clock() -> Clock {
        Arc::new(|| time::macros::datetime!(2026-11-21 10:00:00 UTC))
    }

    #[test]
    fn ring_keeps_the_newest_entries_and_filters_by_server() {
        let tap = TrafficTap::new(3, fixed_clock());
        for i in 0..5 {
            let server = if i % 2 == 0 { "a" } else { "b" };
            record(
                &tap,
                server,
                Direction::Out,
                Some(Era::V2025_11_25),
                json!({"i": i}),
            );
        }
        let all = tap.entries(None);
        assert_eq!(all.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![3, 4, 5]);
        assert_eq!(all[0].time, "2026-11-21T10:00:00Z");
        let a = tap.entries(Some("a"));
        assert_eq!(
            a.iter()
                .map(|e| e.message["i"].as_i64().unwrap())
                .collect::<Vec<_>>(),
            vec![2, 4]
        );
    }

    #[test]
    fn secrets_are_redacted_in_memory_and_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("traffic.jsonl");
        let tap = TrafficTap::new(10, fixed_clock())
            .with_jsonl_file(&path)
            .unwrap();
        tap.redact("api", "sk-live-123");
        tap.redact("quoted", "pa\"ss\\word");
        record(
            &tap,
            "s",
            Direction::In,
            None,
            json!({"result": {"content": [{"text": "token is sk-live-123!"}]}, "n": 1}),
        );
        record(
            &tap,
            "s",
            Direction::In,
            None,
            json!({"echo": "x pa\"ss\\word y"}),
        );
        let entry = &tap.entries(None)[0];
        assert_eq!(
            entry.message["result"]["content"][0]["text"],
            "token is [secret:api]!"
        );
        let file = std::fs::read_to_string(&path).unwrap();
        assert!(!file.contains("sk-live-123"), "{file}");
        assert!(file.contains("[secret:api]"));
        assert_eq!(file.lines().count(), 2);
        // A secret that JSON escapes is found in its escaped form too.
        assert_eq!(tap.entries(None)[1].message["echo"], "x [secret:quoted] y");
        assert!(!file.contains("ss\\\\word"), "{file}");
    }

    /// A transport that hands out scripted server messages and keeps what was sent.
    struct Scripted {
        incoming: VecDeque<Value>,
        sent: Arc<Mutex<Vec<String>>>,
    }

    impl WireText for Scripted {}

    /// A transport that reads scripted lines as the stdio transport does: it parses each and
    /// lends the tap the line itself.
    struct Lines {
        incoming: VecDeque<String>,
        last: Option<String>,
    }

    impl Transport<RoleClient> for Lines {
        type Error = std::io::Error;

        fn send(
            &mut self,
            _item: TxJsonRpcMessage<RoleClient>,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            std::future::ready(Ok(()))
        }

        async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
            let line = self.incoming.pop_front()?;
            let message = serde_json::from_str(&line).unwrap();
            self.last = Some(line);
            Some(message)
        }

        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    impl WireText for Lines {
        fn take_received_text(&mut self) -> Option<String> {
            self.last.take()
        }
    }

    /// The line as the server wrote it is the record, when no secret is registered (nothing
    /// serialized again); with one registered, the message's own serialization is what the
    /// redaction reads, so a secret the server spelled with other JSON escapes is still found.
    #[tokio::test]
    async fn the_record_is_the_line_unless_a_secret_must_be_looked_for() {
        // The server spells the secret `s3cr3t-T0k3n` with a `\u` escape for its `s`.
        let spelled = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\u0073\u0033cr3t-T0k3n"}]}}"#;
        let spaced = r#"{ "jsonrpc": "2.0", "id": 2, "result": {"content": []} }"#;
        let tap = Arc::new(TrafficTap::new(10, fixed_clock()));
        let mut tapped = Tapped::new(
            Lines {
                incoming: VecDeque::from([spaced.to_string(), spelled.to_string()]),
                last: None,
            },
            "s",
            wire(&tap),
        );
        tapped.receive().await.unwrap();
        let first = tap.entries(None);
        assert_eq!(
            first[0].message,
            serde_json::from_str::<Value>(spaced).unwrap()
        );
        // Without a secret registered, the escaped spelling reaches the record unchanged
        // (there is nothing to redact).
        tapped.receive().await.unwrap();
        assert!(
            serde_json::to_string(&tap.entries(None)[1].message)
                .unwrap()
                .contains("s3cr3t-T0k3n")
        );

        let tap = Arc::new(TrafficTap::new(10, fixed_clock()));
        tap.redact("api", "s3cr3t-T0k3n");
        let mut tapped = Tapped::new(
            Lines {
                incoming: VecDeque::from([spelled.to_string()]),
                last: None,
            },
            "s",
            wire(&tap),
        );
        let item = tapped.receive().await.unwrap();
        let read = serde_json::to_string(&item).unwrap();
        assert!(!read.contains("s3cr3t-T0k3n"), "{read}");
        assert!(read.contains("[secret:api]"), "{read}");
        let recorded = serde_json::to_string(&tap.entries(None)[0].message).unwrap();
        assert!(!recorded.contains("s3cr3t-T0k3n"), "{recorded}");
    }

    fn outgoing(message: Value) -> Outgoing {
        let typed: ClientJsonRpcMessage = serde_json::from_value(message).unwrap();
        Outgoing::of(&typed).expect("a request or a cancellation")
    }

    /// What the in-flight table reads from a typed message is what the same message says on
    /// the wire (its serialization), for each kind it records, progress tokens included
    /// (rmcp's own `_meta` written over the params').
    #[test]
    fn the_in_flight_table_reads_typed_messages_as_the_wire_shows_them() {
        let wire_view = |typed: &ClientJsonRpcMessage| {
            let value = serde_json::to_value(typed).unwrap();
            if value["method"] == "notifications/cancelled" {
                return Outgoing::Cancelled {
                    request_id: value["params"]["requestId"].clone(),
                };
            }
            let method = value["method"].as_str().unwrap().to_string();
            let subject = match method.as_str() {
                "tools/call" | "prompts/get" => value["params"]["name"].as_str(),
                "resources/read" => value["params"]["uri"].as_str(),
                _ => None,
            }
            .map(str::to_string);
            Outgoing::Request {
                id: value["id"].clone(),
                method,
                subject,
                progress_token: value.pointer("/params/_meta/progressToken").cloned(),
            }
        };
        let messages = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {"a": 1}}}),
            json!({"jsonrpc": "2.0", "id": "x-2", "method": "tools/call", "params": {"name": "t", "_meta": {"progressToken": "mine"}}}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/get", "params": {"name": "p", "_meta": {"progressToken": 9}}}),
            json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "file:///a"}}),
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}),
        ];
        for message in messages {
            let mut typed: ClientJsonRpcMessage = serde_json::from_value(message).unwrap();
            assert_eq!(Outgoing::of(&typed), Some(wire_view(&typed)), "{typed:?}");
            // rmcp's own token, set on the request (as it does for every request it sends),
            // wins over the params' on the wire: the table must read the same.
            if let ClientJsonRpcMessage::Request(request) = &mut typed {
                request
                    .request
                    .get_meta_mut()
                    .set_progress_token(rmcp::model::ProgressToken(NumberOrString::Number(77)));
                assert_eq!(Outgoing::of(&typed), Some(wire_view(&typed)), "{typed:?}");
                let Some(Outgoing::Request { progress_token, .. }) = Outgoing::of(&typed) else {
                    panic!("a request");
                };
                assert_eq!(progress_token, Some(json!(77)));
            }
        }
        // A response is not the table's business.
        let response: ClientJsonRpcMessage =
            serde_json::from_value(json!({"jsonrpc": "2.0", "id": 1, "result": {}})).unwrap();
        assert_eq!(Outgoing::of(&response), None);
    }

    impl Transport<RoleClient> for Scripted {
        type Error = std::io::Error;

        fn send(
            &mut self,
            item: TxJsonRpcMessage<RoleClient>,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            self.sent
                .lock()
                .unwrap()
                .push(serde_json::to_string(&item).unwrap());
            std::future::ready(Ok(()))
        }

        async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
            let next = self.incoming.pop_front()?;
            Some(serde_json::from_value(next).unwrap())
        }

        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    fn wire(tap: &Arc<TrafficTap>) -> Wire {
        Wire {
            tap: tap.clone(),
            era: Default::default(),
            progress: Default::default(),
            inflight: Default::default(),
            dispatcher: Default::default(),
        }
    }

    /// A server echoes a credential it was sent (an OAuth token from its Authorization header,
    /// a secret argument): what the host reads, and so every client, screen and model it passes
    /// the answer to, has the label instead; what the host sends is not changed.
    #[tokio::test]
    async fn a_secret_a_server_echoes_is_redacted_before_the_host_reads_it() {
        let tap = Arc::new(TrafficTap::new(10, fixed_clock()));
        tap.redact("oauth:s:access_token", "at-Zq8xW3vR7tKp2LmN");
        let sent = Arc::new(Mutex::new(Vec::new()));
        let echoed = json!({"jsonrpc": "2.0", "id": 1, "result": {
            "content": [{"type": "text", "text": "Authorization: Bearer at-Zq8xW3vR7tKp2LmN"}],
            "structuredContent": {"at-Zq8xW3vR7tKp2LmN": ["at-Zq8xW3vR7tKp2LmN", 7]},
        }});
        let ordinary = json!({"jsonrpc": "2.0", "id": 2, "result": {
            "content": [{"type": "text", "text": "at-Zq8xW3 is not the token"}],
        }});
        let mut tapped = Tapped::new(
            Scripted {
                incoming: VecDeque::from([echoed, ordinary.clone()]),
                sent: sent.clone(),
            },
            "s",
            wire(&tap),
        );
        let request: ClientJsonRpcMessage = serde_json::from_value(json!({"jsonrpc": "2.0",
            "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "at-Zq8xW3vR7tKp2LmN"}}}))
        .unwrap();
        tapped.send(request).await.unwrap();
        assert!(sent.lock().unwrap()[0].contains("at-Zq8xW3vR7tKp2LmN"));

        let got = serde_json::to_value(tapped.receive().await.unwrap()).unwrap();
        assert_eq!(
            got["result"]["content"][0]["text"],
            "Authorization: Bearer [secret:oauth:s:access_token]"
        );
        assert_eq!(
            got["result"]["structuredContent"],
            json!({"[secret:oauth:s:access_token]": ["[secret:oauth:s:access_token]", 7]})
        );
        assert_eq!(got["id"], 1);
        // A message without the secret passes unchanged.
        let got = serde_json::to_value(tapped.receive().await.unwrap()).unwrap();
        assert_eq!(got, ordinary);

        let record = serde_json::to_string(&tap.entries(None)).unwrap();
        assert!(!record.contains("at-Zq8xW3vR7tKp2LmN"), "{record}");
        assert_eq!(record.matches("[secret:oauth:s:access_token]").count(), 4);
    }

    /// A call's progress is routed by the token its current request went out with, as the tap
    /// sees it; a call retried in another round moves to the new request's token.
    #[tokio::test]
    async fn a_calls_progress_follows_the_token_of_its_current_request() {
        let tap = Arc::new(TrafficTap::new(10, fixed_clock()));
        let wire = wire(&tap);
        let mut tapped = Tapped::new(
            Scripted {
                incoming: VecDeque::new(),
                sent: Default::default(),
            },
            "s",
            wire.clone(),
        );
        let (tx, mut rx) = tokio::sync::mpsc::channel(8);
        let _registration = wire.dispatcher.register(7, tx);
        let call = |id: u64, token: u64| -> ClientJsonRpcMessage {
            serde_json::from_value(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "t", "_meta": {"progressToken": token}}}))
            .unwrap()
        };
        let note = |token: u64, progress: f64| {
            rmcp::model::ProgressNotificationParam::new(
                serde_json::from_value(json!(token)).unwrap(),
                progress,
            )
        };
        // Another call's request (not announced for call 7) routes nothing to it.
        tapped.send(call(1, 100)).await.unwrap();
        wire.inflight.expect_call("t", 7);
        tapped.send(call(2, 200)).await.unwrap();
        use crate::connection::Delivery;
        assert_eq!(wire.dispatcher.deliver(&note(100, 1.0)), Delivery::Unrouted);
        assert_eq!(
            wire.dispatcher.deliver(&note(200, 1.0)),
            Delivery::Delivered
        );
        // The next round.
        wire.inflight.expect_call("t", 7);
        tapped.send(call(3, 300)).await.unwrap();
        assert_eq!(wire.dispatcher.deliver(&note(200, 2.0)), Delivery::Unrouted);
        assert_eq!(
            wire.dispatcher.deliver(&note(300, 1.0)),
            Delivery::Delivered
        );
        let got: Vec<f64> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|p| p.progress)
            .collect();
        assert_eq!(got, vec![1.0, 1.0]);
    }

    #[test]
    fn a_request_the_host_gave_up_on_is_no_longer_in_flight() {
        let inflight = InFlight::default();
        inflight.expect_call("t", 7);
        inflight.sent(outgoing(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}}),
        ));
        inflight.sent(outgoing(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        ));
        assert_eq!(inflight.snapshot().len(), 2);
        assert_eq!(inflight.get(&json!(1)).unwrap().call, Some(7));
        // Cancelled on the wire: gone, whatever the server does next.
        inflight.sent(outgoing(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})));
        assert!(inflight.get(&json!(2)).is_none());
        // The call ended (timeout, kill, dropped future): its unanswered request is gone too.
        inflight.forget_call(7);
        assert!(inflight.snapshot().is_empty());
        assert!(inflight.last_of_call(7).is_none());
    }

    #[test]
    fn unanswered_requests_are_bounded() {
        let inflight = InFlight::default();
        for id in 0..(MAX_IN_FLIGHT + 10) {
            inflight.sent(outgoing(
                json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
            ));
        }
        let all = inflight.snapshot();
        assert_eq!(all.len(), MAX_IN_FLIGHT);
        assert_eq!(all[0].id, json!(10), "the oldest are dropped first");
    }

    #[test]
    fn the_ring_holds_at_most_its_byte_budget_and_cuts_huge_messages() {
        let tap = TrafficTap::new(10_000, fixed_clock()).with_byte_budget(3 * 1024 * 1024);
        let server: Arc<str> = Arc::from("hostile");
        for n in 0..20 {
            let text = format!("{{\"n\":{n},\"x\":\"{}\"}}", "a".repeat(8 * 1024 * 1024));
            tap.record_text(&server, Direction::In, None, text);
            assert!(tap.held_bytes() <= 3 * 1024 * 1024, "{}", tap.held_bytes());
        }
        let entries = tap.entries(None);
        assert!(!entries.is_empty() && entries.len() < 20);
        let last = entries.last().unwrap();
        assert_eq!(last.seq, 20, "the newest entry is kept");
        let text = last.message.as_str().unwrap();
        assert!(text.starts_with("{\"n\":19,"), "{}", &text[..20]);
        assert!(text.len() <= MAX_ENTRY_BYTES);
        assert!(
            text.ends_with("bytes not kept]"),
            "{}",
            &text[text.len() - 60..]
        );
        // Ordinary messages are kept whole and as JSON.
        record(
            &tap,
            "ok",
            Direction::In,
            None,
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        );
        assert_eq!(tap.entries(Some("ok"))[0].message["id"], 1);
    }
}
