//! The demo's resources: fixed documents, a PNG and bytes, a counter that ticks while someone
//! is subscribed, notes behind a URI template, and a diary that asks a form before it opens.
//! With `--hostile-content` it also serves resources built to trip up hosts.
//!
//! Subscriptions to `demo://counter` come in both eras: `resources/subscribe` and
//! `resources/unsubscribe` within a 2025-11-25 connection ([`Subscriptions`]), and
//! `subscriptions/listen` streams in 2026-07-28. The counter ([`Counter`]) is one per server
//! process and ticks only while at least one subscription of either kind is open.
//!
//! The diary (`demo://private/diary`) asks `{"magic_word": string}` first: in 2025-11-25
//! with `elicitation/create` during `resources/read`, in 2026-07-28 with `input_required`
//! under [`DIARY_KEY`] and the `requestState` [`DIARY_STATE`]. The answer `open` (any case,
//! surrounding spaces ignored) opens it; any other answer, a decline or a cancel returns the
//! text [`DIARY_CLOSED_TEXT`], not an error.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Duration,
};

use base64::{Engine as _, engine::general_purpose::STANDARD as BASE64};
use rmcp::{
    ErrorData, Peer, RoleServer,
    model::{
        ElicitationAction, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
        Resource, ResourceContents, ResourceTemplate, ResourceUpdatedNotificationParam,
        SubscriptionFilter,
    },
    service::{RequestContext, SubscriptionContext},
};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{
    DemoServer,
    input::{self, Asked, FormRequest, Retry},
    png,
};

pub const WELCOME_URI: &str = "demo://docs/welcome.txt";
pub const GUIDE_URI: &str = "demo://docs/guide.md";
pub const LOGO_URI: &str = "demo://images/logo.png";
pub const SAMPLE_URI: &str = "demo://data/sample.bin";
pub const COUNTER_URI: &str = "demo://counter";
pub const DIARY_URI: &str = "demo://private/diary";

/// The notes template, and what its URIs start with.
pub const NOTE_TEMPLATE: &str = "demo://notes/{name}";
pub const NOTE_PREFIX: &str = "demo://notes/";
/// Every note there is, in completion order.
pub const NOTE_NAMES: [&str; 3] = ["groceries", "ideas", "todo"];

/// `--hostile-content` only.
pub const HUGE_URI: &str = "demo://hostile/huge.txt";
pub const NOT_BASE64_URI: &str = "demo://hostile/not-base64.bin";
pub const LYING_PNG_URI: &str = "demo://hostile/lying.png";
pub const MARKUP_HTML_URI: &str = "demo://hostile/markup.html";
pub const ANYTHING_TEMPLATE: &str = "{+target}";

/// The size of `demo://hostile/huge.txt`: 9 MiB, above common 4-8 MiB body limits and below
/// rmcp's 16 MiB message limit, so it reaches hosts and tests what they do with it.
pub const HUGE_TEXT_BYTES: usize = 9 * 1024 * 1024;
pub const NOT_BASE64_BLOB: &str = "%%% this is not base64 %%%";
pub const LYING_PNG_BYTES: &[u8] = b"<html><script>alert(1)</script></html>";
pub const MARKUP_HTML: &str =
    r#"<img src=x onerror=alert(1)><a href="https://evil.example">click</a>"#;

/// The diary form (2026-07-28 `inputRequests` key and `requestState`).
pub const DIARY_KEY: &str = "diary";
pub const DIARY_STATE: &str = "resource:demo://private/diary";
pub const DIARY_MESSAGE: &str = "The diary is locked.";
pub const DIARY_OPEN_TEXT: &str = "Dear diary: the demo works.";
pub const DIARY_CLOSED_TEXT: &str = "The diary stays closed.";

/// How often `demo://counter` ticks while subscribed, unless `--tick-ms` says otherwise.
pub const DEFAULT_TICK: Duration = Duration::from_millis(500);

/// Error messages quote at most this many characters of a URI a client sent.
const MAX_QUOTED_URI_CHARS: usize = 200;

const TEXT: &str = "text/plain";
const MARKDOWN: &str = "text/markdown";
const PNG: &str = "image/png";
const OCTETS: &str = "application/octet-stream";

pub const WELCOME_TEXT: &str = "Welcome to the Gatehouse demo server!\n\
\n\
It is a fixture for trying and testing Gatehouse: its tools, resources and prompts answer the \
same way every time, so you can see exactly what a host does with them.\n\
\n\
Start with the guide (demo://docs/guide.md), subscribe to demo://counter, or read a note.\n\
Nothing here is real data, and it is a demo: never trust it with yours.\n";

pub const GUIDE_MARKDOWN: &str = "# Guide to the demo server\n\
\n\
The demo server shows what an MCP server can offer a host such as [Gatehouse](https://example.com).\n\
\n\
## Resources\n\
\n\
- `demo://docs/welcome.txt`: a few friendly lines of plain text.\n\
- `demo://images/logo.png`: a 16x16 PNG.\n\
- `demo://data/sample.bin`: the bytes 0 to 63.\n\
- `demo://counter`: subscribe and watch it count.\n\
- `demo://notes/{name}`: notes by name (groceries, ideas, todo).\n\
- `demo://private/diary`: asks before it opens.\n\
\n\
## Prompts\n\
\n\
Try `summarize`, `review_code`, `describe_logo` and `plan_trip`.\n\
\n\
Hosts show this file as text: the <b>bold</b> tag is part of the text, not markup to render.\n";

/// How many blank notebook pages (`demo://notes/page-0` …) the demo has.
pub const NOTEBOOK_PAGES: u8 = 100;

/// The text of note `name`, if there is one.
pub fn note_text(name: &str) -> Option<&'static str> {
    match name {
        "groceries" => Some("Groceries: bread, milk, apples and coffee."),
        "ideas" => Some(
            "Ideas: a gate that greets every visitor by name; a counter that only counts \
             while someone watches.",
        ),
        "todo" => Some(
            "To do: read the welcome note, subscribe to demo://counter, try the plan_trip prompt.",
        ),
        // A notebook of blank pages (not listed; reached through the template): enough
        // distinct URIs for a client to hold many subscriptions, as the limit tests need.
        page if page
            .strip_prefix("page-")
            .and_then(|n| n.parse::<u8>().ok())
            .is_some_and(|n| n < NOTEBOOK_PAGES && page == format!("page-{n}")) =>
        {
            Some("A blank page of the demo's notebook.")
        }
        _ => None,
    }
}

/// The bytes of `demo://data/sample.bin`: 0 to 63.
pub fn sample_bytes() -> Vec<u8> {
    (0..64).collect()
}

/// The text of `demo://hostile/huge.txt`: numbered lines, exactly [`HUGE_TEXT_BYTES`] long.
pub fn huge_text() -> String {
    let mut text = String::with_capacity(HUGE_TEXT_BYTES + 128);
    let mut line = 0u32;
    while text.len() < HUGE_TEXT_BYTES {
        line += 1;
        // Writing to a String cannot fail.
        let _ = writeln!(
            text,
            "line {line:07}: the Gatehouse demo server repeats itself to test how hosts \
             handle very large resources."
        );
    }
    // Every character is ASCII, so any byte length is a character boundary.
    text.truncate(HUGE_TEXT_BYTES);
    text
}

fn resource(uri: &str, name: &str, title: &str, description: &str, mime: &str) -> Resource {
    Resource::new(uri, name)
        .with_title(title)
        .with_description(description)
        .with_mime_type(mime)
}

/// Everything `resources/list` lists, in order.
pub fn resources(hostile: bool) -> Vec<Resource> {
    let size = |len: usize| u64::try_from(len).unwrap_or(u64::MAX);
    let mut resources = vec![
        resource(
            WELCOME_URI,
            "welcome.txt",
            "Welcome",
            "A few friendly lines about the demo server",
            TEXT,
        )
        .with_size(size(WELCOME_TEXT.len())),
        resource(
            GUIDE_URI,
            "guide.md",
            "Guide",
            "What the demo server offers, in Markdown",
            MARKDOWN,
        )
        .with_size(size(GUIDE_MARKDOWN.len())),
        resource(
            LOGO_URI,
            "logo.png",
            "Logo",
            "The demo server's 16x16 logo",
            PNG,
        )
        .with_size(size(png::logo().len())),
        resource(
            SAMPLE_URI,
            "sample.bin",
            "Sample bytes",
            "64 bytes: 0 to 63",
            OCTETS,
        )
        .with_size(64),
        resource(
            COUNTER_URI,
            "counter",
            "Counter",
            "\"count: N\"; N goes up while someone is subscribed",
            TEXT,
        ),
        resource(
            DIARY_URI,
            "diary",
            "Private diary",
            "Asks for the magic word before it opens",
            TEXT,
        ),
    ];
    if hostile {
        resources.extend([
            resource(HUGE_URI, "huge.txt", "Huge text", "9 MiB of text", TEXT)
                .with_size(size(HUGE_TEXT_BYTES)),
            resource(
                NOT_BASE64_URI,
                "not-base64.bin",
                "Not base64",
                "A blob that is not valid base64",
                OCTETS,
            ),
            resource(
                LYING_PNG_URI,
                "lying.png",
                "Lying PNG",
                "Says image/png, holds HTML",
                PNG,
            ),
            resource(
                MARKUP_HTML_URI,
                "markup.html",
                "Markup",
                "HTML with an event handler and a link",
                "text/html",
            ),
        ]);
    }
    resources
}

/// Everything `resources/templates/list` lists, in order.
pub fn resource_templates(hostile: bool) -> Vec<ResourceTemplate> {
    let mut templates = vec![
        ResourceTemplate::new(NOTE_TEMPLATE, "note")
            .with_title("Note")
            .with_description("A note by name: groceries, ideas or todo")
            .with_mime_type(TEXT),
    ];
    if hostile {
        templates.push(
            ResourceTemplate::new(ANYTHING_TEMPLATE, "anything")
                .with_description("expands to whatever it is given"),
        );
    }
    templates
}

/// The URIs [`resources`] lists, without building the list: [`exists`] runs once per URI of
/// a `subscriptions/listen` filter, which a client may make long.
const LISTED: [&str; 6] = [
    WELCOME_URI,
    GUIDE_URI,
    LOGO_URI,
    SAMPLE_URI,
    COUNTER_URI,
    DIARY_URI,
];
const LISTED_HOSTILE: [&str; 4] = [HUGE_URI, NOT_BASE64_URI, LYING_PNG_URI, MARKUP_HTML_URI];

/// Whether `uri` is a resource this server has (listed, or a note that exists).
pub fn exists(uri: &str, hostile: bool) -> bool {
    LISTED.contains(&uri)
        || (hostile && LISTED_HOSTILE.contains(&uri))
        || uri.strip_prefix(NOTE_PREFIX).and_then(note_text).is_some()
}

/// The contents of every resource whose answer does not depend on state or the user.
fn fixed_contents(uri: &str, hostile: bool) -> Option<ResourceContents> {
    let text =
        |text: String, mime: &str| Some(ResourceContents::text(text, uri).with_mime_type(mime));
    let blob =
        |blob: String, mime: &str| Some(ResourceContents::blob(blob, uri).with_mime_type(mime));
    match uri {
        WELCOME_URI => text(WELCOME_TEXT.to_owned(), TEXT),
        GUIDE_URI => text(GUIDE_MARKDOWN.to_owned(), MARKDOWN),
        LOGO_URI => blob(BASE64.encode(png::logo()), PNG),
        SAMPLE_URI => blob(BASE64.encode(sample_bytes()), OCTETS),
        HUGE_URI if hostile => text(huge_text(), TEXT),
        NOT_BASE64_URI if hostile => blob(NOT_BASE64_BLOB.to_owned(), OCTETS),
        LYING_PNG_URI if hostile => blob(BASE64.encode(LYING_PNG_BYTES), PNG),
        MARKUP_HTML_URI if hostile => text(MARKUP_HTML.to_owned(), "text/html"),
        _ => {
            let note = uri.strip_prefix(NOTE_PREFIX).and_then(note_text)?;
            text(note.to_owned(), TEXT)
        }
    }
}

/// `-32002` naming `uri` (rmcp sends it as `-32602` to 2026-07-28 peers, as that era says).
pub fn not_found(uri: &str) -> ErrorData {
    let quoted: String = uri.chars().take(MAX_QUOTED_URI_CHARS).collect();
    let ellipsis = if quoted.len() < uri.len() { "..." } else { "" };
    ErrorData::resource_not_found(
        format!("Resource not found: {quoted}{ellipsis}"),
        Some(json!({ "uri": uri })),
    )
}

fn complete(contents: ResourceContents) -> ReadResourceResponse {
    ReadResourceResult::new(vec![contents]).into()
}

impl DemoServer {
    pub(super) async fn read(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if let Some(answer) = self
            .careless
            .as_ref()
            .and_then(|careless| careless.read(&request.uri))
        {
            return answer;
        }
        match request.uri.as_str() {
            COUNTER_URI => Ok(complete(ResourceContents::text(
                format!("count: {}", self.counter.value()),
                COUNTER_URI,
            ))),
            DIARY_URI => {
                let retry = Retry {
                    responses: request.input_responses,
                    state: request.request_state,
                };
                self.read_diary(&context, retry).await
            }
            uri => fixed_contents(uri, self.hostile)
                .map(complete)
                .ok_or_else(|| not_found(uri)),
        }
    }

    async fn read_diary(
        &self,
        context: &RequestContext<RoleServer>,
        retry: Retry,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let request = FormRequest {
            key: DIARY_KEY,
            state: DIARY_STATE,
            message: DIARY_MESSAGE,
            schema: diary_schema(),
        };
        let answer = match input::ask(context, request, retry).await? {
            Asked::InputRequired(result) => return Ok(result.into()),
            Asked::Answer(answer) => answer,
        };
        let text = if answer.action == ElicitationAction::Accept
            && opens_the_diary(answer.content.as_ref())
        {
            DIARY_OPEN_TEXT
        } else {
            DIARY_CLOSED_TEXT
        };
        Ok(complete(ResourceContents::text(text, DIARY_URI)))
    }

    /// `resources/subscribe` (2025-11-25): `demo://counter` starts sending updates to this
    /// connection; other resources never change, so subscribing to them only records it.
    pub(super) fn subscribe_legacy(
        &self,
        uri: &str,
        peer: &Peer<RoleServer>,
    ) -> Result<(), ErrorData> {
        if !exists(uri, self.hostile) {
            return Err(not_found(uri));
        }
        let mut uris = self.subscriptions.lock();
        if uris.contains_key(uri) {
            return Ok(());
        }
        let feed = (uri == COUNTER_URI).then(|| CounterFeed::start(&self.counter, peer.clone()));
        uris.insert(uri.to_owned(), feed);
        Ok(())
    }

    /// `resources/unsubscribe` (2025-11-25): stops `demo://counter` updates at once.
    pub(super) fn unsubscribe_legacy(&self, uri: &str) {
        // Dropping the feed ends its task and its hold on the counter.
        self.subscriptions.lock().remove(uri);
    }

    /// The part of a `subscriptions/listen` filter this server accepts: resource updates only
    /// for URIs it has, and the list-change flags as asked (rmcp keeps only advertised ones).
    pub(super) fn accepted_filter(&self, requested: &SubscriptionFilter) -> SubscriptionFilter {
        let mut accepted = requested.clone();
        accepted.resource_subscriptions = requested.resource_subscriptions.as_ref().map(|uris| {
            uris.iter()
                .filter(|uri| exists(uri, self.hostile))
                .cloned()
                .collect()
        });
        accepted
    }

    /// One `subscriptions/listen` stream (2026-07-28): counter updates until it ends.
    pub(super) async fn listen_stream(&self, context: SubscriptionContext) {
        let wants_counter = context
            .accepted()
            .resource_subscriptions
            .as_ref()
            .is_some_and(|uris| uris.iter().any(|uri| uri == COUNTER_URI));
        if !wants_counter {
            context.cancelled().await;
            return;
        }
        let (_subscriber, mut updates) = self.counter.subscribe();
        loop {
            let update = tokio::select! {
                () = context.cancelled() => return,
                update = updates.recv() => update,
            };
            if let Err(broadcast::error::RecvError::Closed) = update {
                return;
            }
            // A lagging stream still gets one update: all it says is "read it again".
            if let Err(error) = context.sink().notify_resource_updated(COUNTER_URI).await {
                tracing::debug!(%error, "counter update not sent on a listen stream");
                return;
            }
        }
    }
}

/// The diary form: one plain string field, deliberately not secret-looking.
pub fn diary_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "magic_word": {"type": "string", "title": "Magic word",
                                "description": "Say 'open' to read the diary"},
        },
        "required": ["magic_word"],
    })
}

/// Whether an accepted diary answer says `open`.
fn opens_the_diary(content: Option<&Value>) -> bool {
    content
        .and_then(|content| content.get("magic_word"))
        .and_then(Value::as_str)
        .is_some_and(|hint| hint.trim().eq_ignore_ascii_case("open"))
}

/// The `demo://counter` value: one per server process, shared by all its connections.
#[derive(Clone)]
pub struct Counter {
    shared: Arc<CounterShared>,
}

struct CounterShared {
    tick: Duration,
    state: Mutex<CounterState>,
    /// Each new value, for every subscription of either era.
    updates: broadcast::Sender<u64>,
}

#[derive(Default)]
struct CounterState {
    value: u64,
    subscribers: usize,
    /// Whether a tick task is running; it ends itself at the first tick without subscribers.
    ticking: bool,
}

impl CounterShared {
    fn state(&self) -> MutexGuard<'_, CounterState> {
        // The state is two integers and a flag, consistent after any panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Counter {
    /// A counter at 0 that ticks every `tick` (at least 1 ms) while subscribed.
    pub fn new(tick: Duration) -> Self {
        let (updates, _) = broadcast::channel(16);
        Self {
            shared: Arc::new(CounterShared {
                tick: tick.max(Duration::from_millis(1)),
                state: Mutex::default(),
                updates,
            }),
        }
    }

    pub fn value(&self) -> u64 {
        self.shared.state().value
    }

    /// Count one more subscriber until the returned guard drops, and receive each new value.
    /// Starts the ticking if nobody was subscribed. Needs a Tokio runtime.
    pub fn subscribe(&self) -> (CounterSubscriber, broadcast::Receiver<u64>) {
        let mut state = self.shared.state();
        // Subscribed to the updates before counting, so no tick is missed.
        let updates = self.shared.updates.subscribe();
        state.subscribers += 1;
        if !state.ticking {
            state.ticking = true;
            tokio::spawn(tick(self.shared.clone()));
        }
        let subscriber = CounterSubscriber {
            shared: self.shared.clone(),
        };
        (subscriber, updates)
    }
}

async fn tick(shared: Arc<CounterShared>) {
    let start = tokio::time::Instant::now() + shared.tick;
    let mut interval = tokio::time::interval_at(start, shared.tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let value = {
            let mut state = shared.state();
            // Checked and increased under one lock: once the last subscriber is gone, the
            // value never moves again until someone subscribes.
            if state.subscribers == 0 {
                state.ticking = false;
                return;
            }
            state.value = state.value.saturating_add(1);
            state.value
        };
        // Nobody listening right now is fine: the next subscriber reads the value.
        let _ = shared.updates.send(value);
    }
}

/// Holds the counter ticking until dropped.
pub struct CounterSubscriber {
    shared: Arc<CounterShared>,
}

impl Drop for CounterSubscriber {
    fn drop(&mut self) {
        let mut state = self.shared.state();
        state.subscribers = state.subscribers.saturating_sub(1);
    }
}

/// The `resources/subscribe` subscriptions of one 2025-11-25 connection. Dropped with the
/// connection's server, which ends its counter feed.
#[derive(Default)]
pub struct Subscriptions {
    uris: Mutex<BTreeMap<String, Option<CounterFeed>>>,
}

impl Subscriptions {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Option<CounterFeed>>> {
        // A map of URIs, consistent after any panic.
        self.uris.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Counter updates forwarded to one connection as `notifications/resources/updated`.
struct CounterFeed {
    _subscriber: CounterSubscriber,
    _stop: DropGuard,
}

impl CounterFeed {
    fn start(counter: &Counter, peer: Peer<RoleServer>) -> Self {
        let (subscriber, mut updates) = counter.subscribe();
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(async move {
            loop {
                let update = tokio::select! {
                    () = stopped.cancelled() => return,
                    update = updates.recv() => update,
                };
                if let Err(broadcast::error::RecvError::Closed) = update {
                    return;
                }
                let param = ResourceUpdatedNotificationParam::new(COUNTER_URI);
                if let Err(error) = peer.notify_resource_updated(param).await {
                    // The client is gone; the connection's end drops the subscription.
                    tracing::debug!(%error, "counter update not sent");
                    return;
                }
            }
        });
        Self {
            _subscriber: subscriber,
            _stop: stop.drop_guard(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_resource_reads_and_unknown_ones_do_not() {
        for hostile in [false, true] {
            for resource in resources(hostile) {
                let readable = fixed_contents(&resource.uri, hostile).is_some()
                    || [COUNTER_URI, DIARY_URI].contains(&resource.uri.as_str());
                assert!(readable, "{}", resource.uri);
                assert!(exists(&resource.uri, hostile));
            }
        }
        for uri in [
            "demo://notes/other",
            "demo://notes/",
            "demo://docs/welcome",
            "",
            "anything",
        ] {
            assert!(fixed_contents(uri, true).is_none(), "{uri}");
            assert!(!exists(uri, true), "{uri}");
        }
        // Hostile content only with the flag.
        assert!(fixed_contents(HUGE_URI, false).is_none());
        assert!(!exists(MARKUP_HTML_URI, false));
        let uris = |hostile| {
            resources(hostile)
                .into_iter()
                .map(|resource| resource.uri)
                .collect::<Vec<_>>()
        };
        assert_eq!(uris(false), LISTED);
        assert_eq!(uris(true), [&LISTED[..], &LISTED_HOSTILE[..]].concat());
        assert_eq!(resource_templates(false).len(), 1);
        assert_eq!(resource_templates(true).len(), 2);
    }

    #[test]
    fn notes_exist_by_name() {
        for name in NOTE_NAMES {
            assert!(exists(&format!("{NOTE_PREFIX}{name}"), false));
        }
    }

    #[test]
    fn the_huge_text_is_exactly_nine_mebibytes() {
        let text = huge_text();
        assert_eq!(text.len(), HUGE_TEXT_BYTES);
        assert!(text.starts_with("line 0000001: "));
    }

    #[test]
    fn blobs_are_base64_of_the_right_bytes() {
        let Some(ResourceContents::BlobResourceContents { blob, .. }) =
            fixed_contents(SAMPLE_URI, false)
        else {
            panic!("sample is a blob");
        };
        assert_eq!(BASE64.decode(blob).unwrap(), sample_bytes());
        let Some(ResourceContents::BlobResourceContents { blob, .. }) =
            fixed_contents(LYING_PNG_URI, true)
        else {
            panic!("lying.png is a blob");
        };
        assert_eq!(BASE64.decode(blob).unwrap(), LYING_PNG_BYTES);
        assert!(BASE64.decode(NOT_BASE64_BLOB).is_err());
    }

    #[test]
    fn only_open_opens_the_diary() {
        for hint in ["open", " OPEN ", "Open"] {
            assert!(
                opens_the_diary(Some(&json!({"magic_word": hint}))),
                "{hint}"
            );
        }
        for content in [
            json!({"magic_word": "close"}),
            json!({"magic_word": 1}),
            json!({"other": "open"}),
        ] {
            assert!(!opens_the_diary(Some(&content)), "{content}");
        }
        assert!(!opens_the_diary(None));
    }

    #[test]
    fn not_found_names_the_uri_and_caps_long_ones() {
        let error = not_found("demo://nope");
        assert_eq!(error.code, rmcp::model::ErrorCode::RESOURCE_NOT_FOUND);
        assert!(error.message.contains("demo://nope"));
        let long = "x".repeat(10_000);
        let error = not_found(&long);
        assert!(error.message.len() < 300);
        assert_eq!(error.data.unwrap()["uri"], long);
    }

    #[tokio::test]
    async fn the_counter_ticks_only_while_subscribed() {
        let counter = Counter::new(Duration::from_millis(10));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(counter.value(), 0, "no subscriber, no ticks");

        let (subscriber, mut updates) = counter.subscribe();
        let first = tokio::time::timeout(Duration::from_secs(5), updates.recv())
            .await
            .expect("a tick")
            .expect("an update");
        assert!(first >= 1);
        drop(subscriber);
        let stopped_at = counter.value();
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert_eq!(
            counter.value(),
            stopped_at,
            "stopped with the last subscriber"
        );

        // It starts again for a new subscriber, from where it stopped.
        let (_again, mut updates) = counter.subscribe();
        let next = tokio::time::timeout(Duration::from_secs(5), updates.recv())
            .await
            .expect("a tick")
            .expect("an update");
        assert_eq!(next, stopped_at + 1);
    }
}
