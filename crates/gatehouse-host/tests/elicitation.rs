//! The elicitation broker against real connections: the demo server (admitted under the
//! DEMO-ONLY trust root) and the misbehaving fixture, with a consent UI and a URL opener that
//! record everything the host showed and opened.
//!
//! - the kill switch: too many elicitations, or too many denials, in one session close the
//!   connection and suspend the server until the user resumes it;
//! - an elicitation tied to no request of ours (SEP-2260) is held and never shown;
//! - URL completions: another server's, or a duplicate, are ignored and audited; the real one
//!   completes the prompt;
//! - prompts are asked one at a time, in arrival order;
//! - the request timeout pauses while a person is asked; the human timeout cancels;
//! - receipts carry what elicitation.md §4 lists, and the audit chain verifies.
//!
//! The demo server is found like the CLI's demo mode finds it (`gatehouse_testkit::demo`):
//! `$GATEHOUSE_DEMO_SERVER`, else `gatehouse-demo-server` in the target directory this test was
//! built into (build it with `cargo build -p gatehouse-demo-server`).

use gatehouse_host::audit_event::session::{
    AttributionKind, CompletedVia, ElicitationCompleted, ElicitationCompletionIgnored,
    ElicitationReceipt, IgnoredWhy, ReceiptCaller, ServerResumed, ServerSuspended, SessionKilled,
};
use gatehouse_host::broker::{CorrelationBasis, ElicitationAnswer};
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gatehouse_audit::Record;
use gatehouse_desk::{CardState, PromptCard, PromptDesk, WindowAnswer, WindowReply};
use gatehouse_host::broker::BrokerOptions;
use gatehouse_host::config::StdioSpec;
use gatehouse_host::consent::{
    ConsentAnswer, ConsentReply, PromptBody, PromptUpdate, UiFuture, WaitChoice, WaitPhase,
};
use gatehouse_host::gatekeeper::events;
use gatehouse_host::tap::Direction;
use gatehouse_host::{
    CallOptions, ConnectOptions, Connection, ConsentUi, ElicitationBroker, ElicitationRecord, Era,
    EraPreference, HostError, HostEvent, Prompt, ServerSpec, UrlOpener,
};
use gatehouse_policy::policy::DEFAULT_POLICY_TOML;
use gatehouse_policy::{Decision, FieldError, Mode, Policy};
use gatehouse_testkit as kit;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

const ERAS: [Era; 2] = [Era::V2025_11_25, Era::V2026_07_28];
const DEMO_SERVER_ID: &str = "urn:gatehouse:demo-server";
const DEMO_BUNDLE: &str = "DEMO-ONLY-gatehouse-demo@1";
const USER: &str = "elicitation-test-user";

// ---------------------------------------------------------------------------------------------
// The consent UI and the URL opener under test control.

/// What the test user answers, one entry per prompt they are asked.
#[derive(Debug, Clone)]
enum Answer {
    /// Submit the form: the schema's defaults with these answers over them.
    Submit(Value),
    /// Open the URL.
    Open,
    /// Open the URL, explicitly overriding a hold (as the "ask anyway" control does).
    OpenOverriding,
    Decline,
    /// Never answer (the human timeout has to end it).
    Never,
}

/// One `ask` call, as the UI saw it.
#[derive(Debug, Clone)]
struct Asked {
    prompt: Prompt,
    started: Instant,
    /// When the answer was returned (`None` while the user is still "thinking").
    answered: Option<Instant>,
}

/// A consent UI that answers from a queue (cancel when it runs out), after an optional delay,
/// and records every prompt it was asked and every update it was sent.
struct TestUi {
    answers: Mutex<VecDeque<Answer>>,
    delay: Duration,
    asked: Mutex<Vec<Asked>>,
    updates: Mutex<Vec<PromptUpdate>>,
}

impl TestUi {
    fn new(answers: impl IntoIterator<Item = Answer>) -> Arc<TestUi> {
        TestUi::slow(answers, Duration::ZERO)
    }

    fn slow(answers: impl IntoIterator<Item = Answer>, delay: Duration) -> Arc<TestUi> {
        Arc::new(TestUi {
            answers: Mutex::new(answers.into_iter().collect()),
            delay,
            asked: Mutex::new(Vec::new()),
            updates: Mutex::new(Vec::new()),
        })
    }

    fn asked(&self) -> Vec<Asked> {
        self.asked.lock().unwrap().clone()
    }

    fn updates(&self) -> Vec<PromptUpdate> {
        self.updates.lock().unwrap().clone()
    }

    fn opened(&self, prompt_id: u64) -> bool {
        self.updates()
            .iter()
            .any(|u| matches!(u, PromptUpdate::Opened { prompt_id: p, .. } if *p == prompt_id))
    }

    fn completed(&self, prompt_id: u64) -> Vec<&'static str> {
        self.updates()
            .iter()
            .filter_map(|u| match u {
                PromptUpdate::Completed { prompt_id: p, via } if *p == prompt_id => {
                    Some(via.as_str())
                }
                _ => None,
            })
            .collect()
    }

    fn refused(&self) -> Vec<Prompt> {
        self.updates()
            .into_iter()
            .filter_map(|u| match u {
                PromptUpdate::Refused { prompt } => Some(*prompt),
                _ => None,
            })
            .collect()
    }

    fn suspended(&self) -> Vec<(String, String)> {
        self.updates()
            .into_iter()
            .filter_map(|u| match u {
                PromptUpdate::Suspended { server, detail } => Some((server, detail)),
                _ => None,
            })
            .collect()
    }
}

impl ConsentUi for TestUi {
    fn ask<'a>(
        &'a self,
        prompt: &'a Prompt,
        problems: &'a [FieldError],
    ) -> UiFuture<'a, ConsentAnswer> {
        Box::pin(async move {
            let index = {
                let mut asked = self.asked.lock().unwrap();
                asked.push(Asked {
                    prompt: prompt.clone(),
                    started: Instant::now(),
                    answered: None,
                });
                asked.len() - 1
            };
            assert!(
                problems.is_empty(),
                "the test's answer broke the form: {problems:?}"
            );
            let answer = self
                .answers
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or(Answer::Decline);
            tokio::time::sleep(self.delay).await;
            let override_hold = matches!(answer, Answer::OpenOverriding);
            let reply = match (answer, &prompt.body) {
                (Answer::Never, _) => std::future::pending().await,
                (Answer::OpenOverriding, _) => ConsentReply::Open,
                (Answer::Decline, _) => ConsentReply::Decline,
                (Answer::Open, _) => ConsentReply::Open,
                (Answer::Submit(content), PromptBody::Form { defaults, .. }) => {
                    let mut merged = defaults.clone();
                    merged.extend(content.as_object().cloned().unwrap_or_default());
                    ConsentReply::Submit(merged)
                }
                (Answer::Submit(_), _) => ConsentReply::Cancel,
            };
            self.asked.lock().unwrap()[index].answered = Some(Instant::now());
            ConsentAnswer {
                reply,
                override_hold,
            }
        })
    }

    fn waiting(&self, _prompt_id: u64, _phase: WaitPhase) -> UiFuture<'_, WaitChoice> {
        // The test user never presses Retry or Cancel: completion or the timeout ends a wait.
        Box::pin(std::future::pending())
    }

    fn update(&self, update: PromptUpdate) {
        self.updates.lock().unwrap().push(update);
    }
}

/// Records every URL handed to the "browser"; with `submit`, also submits the demo's connect
/// page, as a person would.
#[derive(Default)]
struct TestOpener {
    opened: Mutex<Vec<String>>,
    submit: AtomicBool,
}

impl TestOpener {
    fn opened(&self) -> Vec<String> {
        self.opened.lock().unwrap().clone()
    }
}

impl UrlOpener for TestOpener {
    fn open(&self, url: &str) -> Result<(), String> {
        self.opened.lock().unwrap().push(url.to_string());
        if self.submit.load(Ordering::SeqCst) {
            let status = post(url);
            assert_eq!(status, 200, "POST {url}");
        }
        Ok(())
    }
}

/// A blocking `POST` with an empty body to a loopback `http://` URL; returns the status code.
fn post(url: &str) -> u16 {
    let parsed = url::Url::parse(url).unwrap();
    assert_eq!(parsed.scheme(), "http", "{url}");
    let host = parsed.host_str().unwrap().to_string();
    assert!(
        host == "127.0.0.1" || host == "localhost",
        "only loopback pages are submitted, not {url}"
    );
    let port = parsed.port_or_known_default().unwrap();
    let mut stream = std::net::TcpStream::connect((host.as_str(), port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "POST {} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        parsed.path()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {response:?}"))
}

// ---------------------------------------------------------------------------------------------
// The host: trust, audit log, connections.

fn fixture(mode: &str) -> ServerSpec {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/misbehaving_stdio.py");
    ServerSpec::Stdio(StdioSpec {
        command: "python3".into(),
        args: vec![script.display().to_string(), mode.into()],
        env: Vec::new(),
        cwd: None,
    })
}

/// The shipped policy with one `[abuse]` setting changed.
fn policy_with(setting: &str, value: usize) -> Policy {
    let line = DEFAULT_POLICY_TOML
        .lines()
        .find(|l| l.starts_with(&format!("{setting} =")))
        .unwrap_or_else(|| panic!("default.toml has no {setting}"));
    let text = DEFAULT_POLICY_TOML.replace(line, &format!("{setting} = {value}"));
    let policy = Policy::from_toml(&text).unwrap();
    assert_ne!(text, DEFAULT_POLICY_TOML);
    policy
}

/// The test kit's rig, with this file's brokers, connections and request timeout.
struct Host {
    rig: kit::rig::Rig,
    request_timeout: Duration,
}

impl std::ops::Deref for Host {
    type Target = kit::rig::Rig;
    fn deref(&self) -> &kit::rig::Rig {
        &self.rig
    }
}

impl Host {
    fn on(rig: kit::rig::Rig) -> Host {
        Host {
            rig,
            request_timeout: Duration::from_secs(20),
        }
    }

    /// Demo mode: the demo bundle admits the demo server (deny-by-default otherwise).
    fn demo() -> Host {
        Host::on(kit::rig::Rig::demo())
    }

    /// No bundle, the warn posture: unattested servers are tolerated.
    fn warn() -> Host {
        Host::on(kit::rig::Rig::warn())
    }

    fn broker(
        &self,
        policy: Policy,
        ui: &Arc<TestUi>,
        opener: &Arc<TestOpener>,
        human_timeout: Option<Duration>,
    ) -> Arc<ElicitationBroker> {
        self.broker_for(policy, ui.clone(), opener, human_timeout)
    }

    /// A broker asking through any consent UI (the desktop's PromptDesk, say).
    fn broker_for(
        &self,
        policy: Policy,
        ui: Arc<dyn ConsentUi>,
        opener: &Arc<TestOpener>,
        human_timeout: Option<Duration>,
    ) -> Arc<ElicitationBroker> {
        let mut options = BrokerOptions {
            user: USER.into(),
            ..BrokerOptions::default()
        };
        if let Some(timeout) = human_timeout {
            options.human_timeout = timeout;
        }
        ElicitationBroker::new(
            Arc::new(policy),
            ui,
            opener.clone(),
            self.gatekeeper.clone(),
            options,
        )
    }

    async fn connect(
        &self,
        name: &str,
        spec: &ServerSpec,
        broker: &Arc<ElicitationBroker>,
        era: EraPreference,
    ) -> Result<Connection, HostError> {
        let options = ConnectOptions {
            era,
            request_timeout: self.request_timeout,
            broker: Some(broker.clone()),
            ..self.options()
        };
        self.rig.connect(name, spec, &options).await
    }

    /// The demo server in `era`, admitted.
    async fn demo_connection(
        &self,
        name: &str,
        broker: &Arc<ElicitationBroker>,
        era: Era,
    ) -> Connection {
        let connection = self
            .connect(name, &kit::demo::spec(), broker, EraPreference::Only(era))
            .await
            .unwrap();
        assert!(
            connection.verdict().is_admitted(),
            "{}",
            connection.verdict().headline()
        );
        assert_eq!(connection.era(), era);
        connection
    }

    fn receipt(&self, receipt_id: &str) -> Record {
        self.records_of(events::ELICITATION_RECEIPT)
            .into_iter()
            .find(|r| r.data["receipt_id"] == receipt_id)
            .unwrap_or_else(|| panic!("no receipt {receipt_id} in the audit log"))
    }

    /// The JSON-RPC ids of the `tools/call` requests sent to `server`, in order.
    fn tool_call_ids(&self, server: &str) -> Vec<Value> {
        self.tap
            .entries(Some(server))
            .into_iter()
            .filter(|e| e.direction == Direction::Out && e.message["method"] == "tools/call")
            .map(|e| e.message["id"].clone())
            .collect()
    }
}

/// Polls `check` every 20 ms until it gives a value, for at most `within`.
async fn eventually<T>(what: &str, within: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn booking() -> Value {
    json!({"name": "Ada Lovelace", "email": "ada@example.com", "date": "2026-12-24",
           "party_size": 4, "seating": "outdoor", "extras": ["bread", "wine"]})
}

fn text(outcome: &gatehouse_host::ToolOutcome) -> String {
    outcome.result.content[0].as_text().unwrap().text.clone()
}

/// What the demo server says it received (book_table, ask_password, open_link report it).
fn received(outcome: &gatehouse_host::ToolOutcome) -> Value {
    serde_json::from_str(&text(outcome)).unwrap_or_else(|e| panic!("{e}: {}", text(outcome)))
}

fn reason_codes(record: &ElicitationRecord) -> Vec<&'static str> {
    record.reasons.iter().map(|r| r.code).collect()
}

fn str_of<'a>(record: &'a Record, field: &str) -> &'a str {
    record.data[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} in {record:?}"))
}

fn no_args() -> Option<Map<String, Value>> {
    None
}

// ---------------------------------------------------------------------------------------------
// 1. Rate limit → kill.

#[tokio::test]
async fn too_many_elicitations_kill_the_session_and_suspend_the_server_until_resumed() {
    for era in ERAS {
        let host = Host::demo();
        let ui = TestUi::new([
            Answer::Submit(booking()),
            Answer::Submit(booking()),
            Answer::Submit(booking()),
        ]);
        let opener = Arc::new(TestOpener::default());
        let broker = host.broker(policy_with("max_elicitations", 2), &ui, &opener, None);
        let name = "rate";
        let server = host.demo_connection(name, &broker, era).await;
        let call = CallOptions::default();

        // Within the limit: asked and answered.
        for n in 1..=2 {
            let outcome = server.call_tool("book_table", no_args(), &call).await;
            let outcome = outcome.unwrap_or_else(|e| panic!("{era} call {n}: {e}"));
            assert_eq!(received(&outcome)["action"], "accept", "{era} call {n}");
            assert_eq!(
                outcome.elicitations[0].decision.as_str(),
                "allow_elicitation_with_receipt"
            );
        }
        assert_eq!(ui.asked().len(), 2, "{era}");
        assert!(ui.suspended().is_empty());

        // The third elicitation in the window: refused unasked, the session killed.
        let (outcome, records) = server
            .call_tool_traced("book_table", no_args(), &call)
            .await;
        match &outcome {
            Err(HostError::SessionKilled { server: s, detail }) => {
                assert_eq!(s, name);
                assert!(detail.starts_with("elicitation_rate_exceeded"), "{detail}");
            }
            other => panic!("{era}: expected SessionKilled, got {other:?}"),
        }
        assert_eq!(records.len(), 1, "{era}: {records:?}");
        let third = &records[0];
        assert_eq!(
            third.decision.as_str(),
            "kill_session_on_elicitation_abuse",
            "{era}"
        );
        assert!(
            reason_codes(third).contains(&"elicitation_rate_exceeded"),
            "{third:?}"
        );
        assert_ne!(third.action, ElicitationAnswer::Accept);
        assert_eq!(ui.asked().len(), 2, "{era}: the third prompt was shown");
        let session = server.session().unwrap();
        assert!(
            session
                .killed()
                .is_some_and(|k| k.starts_with("elicitation_rate_exceeded")),
            "{:?}",
            session.killed()
        );
        assert!(session.kill_token().is_cancelled());

        // Audited: the receipt of the refused elicitation, the kill, the suspension.
        let receipt: ElicitationReceipt = kit::audit::payload_of(&host.receipt(&third.receipt_id));
        assert_eq!(receipt.decision, Decision::KillSessionOnElicitationAbuse);
        let killed: Vec<SessionKilled> = kit::audit::payloads(&host.audit_path());
        assert_eq!(killed.len(), 1, "{killed:?}");
        assert_eq!(killed[0].reason, "elicitation_rate_exceeded");
        assert_eq!(killed[0].name, name);
        let suspended: Vec<ServerSuspended> = kit::audit::payloads(&host.audit_path());
        assert_eq!(suspended.len(), 1, "{suspended:?}");
        assert_eq!(suspended[0].reason, "elicitation_rate_exceeded");
        assert_eq!(suspended[0].key, format!("id:{DEMO_SERVER_ID}"));
        // The user was told.
        let told = ui.suspended();
        assert_eq!(told.len(), 1, "{told:?}");
        assert_eq!(told[0].0, name);
        assert!(told[0].1.starts_with("elicitation_rate_exceeded"));
        assert!(
            ui.refused()
                .iter()
                .any(|p| p.receipt_id == third.receipt_id),
            "the refused prompt was not shown as refused"
        );

        // The connection is closed: nothing more goes out on it.
        let sent = server.bytes_sent();
        let error = server
            .call_tool("echo", json!({"message": "hi"}).as_object().cloned(), &call)
            .await
            .unwrap_err();
        assert!(
            matches!(error, HostError::SessionKilled { .. }),
            "{era}: {error:?}"
        );
        assert_eq!(
            server.bytes_sent(),
            sent,
            "{era}: sent on a killed connection"
        );

        // A new connection to the same server (under any name: suspensions follow the verified
        // id) is refused before the process starts: under a name never connected, nothing was
        // logged or sent (the killed connection's own tail may still reach the tap).
        for again in [name, "rate-alias"] {
            let error = host
                .connect(again, &kit::demo::spec(), &broker, EraPreference::Only(era))
                .await
                .unwrap_err();
            match &error {
                HostError::Suspended {
                    server: s, reason, ..
                } => {
                    assert_eq!(s, again);
                    assert_eq!(reason, "elicitation_rate_exceeded");
                }
                other => panic!("{era}: expected Suspended, got {other:?}"),
            }
        }
        assert!(
            host.tap.entries(Some("rate-alias")).is_empty()
                && !host.stderr_log("rate-alias").exists(),
            "the suspended server's process was started"
        );
        assert_eq!(host.records_of(events::SUSPENDED_REFUSED).len(), 2);

        // The user resumes it: audited, and connecting works again (with a fresh window).
        assert!(host.gatekeeper.resume(server.verdict()).unwrap());
        let resumed: Vec<ServerResumed> = kit::audit::payloads(&host.audit_path());
        assert_eq!(resumed.len(), 1, "{resumed:?}");
        assert_eq!(resumed[0].key, format!("id:{DEMO_SERVER_ID}"));
        assert!(!host.gatekeeper.resume(server.verdict()).unwrap());
        server.close().await;
        let ui_answers = [Answer::Submit(booking())];
        ui.answers.lock().unwrap().extend(ui_answers);
        let back = host.demo_connection(name, &broker, era).await;
        let outcome = back
            .call_tool("book_table", no_args(), &call)
            .await
            .unwrap();
        assert_eq!(received(&outcome)["action"], "accept");
        back.close().await;
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Repeated denials → kill.

#[tokio::test]
async fn a_flood_of_malformed_elicitations_is_counted_bounded_and_killed() {
    // Elicitations rmcp cannot parse (a schema outside the form subset) used to bypass the
    // abuse limits, and each kept its whole 64 KiB message on a card.
    let host = Host::warn();
    let ui = TestUi::new([]);
    let opener = Arc::new(TestOpener::default());
    let broker = host.broker(Policy::default_policy(), &ui, &opener, None);
    let name = "flood";
    let server = host
        .connect(
            name,
            &fixture("elicit-malformed-flood"),
            &broker,
            EraPreference::Auto,
        )
        .await
        .unwrap();
    server.approve_tools(&["t".into()]).await.unwrap();
    let _ = server.call_tool("t", None, &CallOptions::default()).await;

    let killed = eventually("the kill", Duration::from_secs(10), || {
        kit::audit::payloads::<SessionKilled>(&host.audit_path()).pop()
    })
    .await;
    assert_eq!(killed.reason, "repeated_denials");
    assert_eq!(host.records_of(events::SERVER_SUSPENDED).len(), 1);
    // max_denials = 3: the fourth denial kills; nothing after the kill is put on a card.
    let receipts: Vec<ElicitationReceipt> = kit::audit::payloads(&host.audit_path());
    assert!(
        (4..50).contains(&receipts.len()),
        "{} receipts",
        receipts.len()
    );
    assert!(
        receipts
            .iter()
            .all(|r| r.action == ElicitationAnswer::Decline)
    );
    let refused = ui.refused();
    assert!(
        !refused.is_empty() && refused.len() < 50,
        "{}",
        refused.len()
    );
    for prompt in &refused {
        assert!(
            prompt.message.len() <= gatehouse_host::broker::MAX_SHOWN_MESSAGE_BYTES + 100,
            "{} bytes kept",
            prompt.message.len()
        );
        assert!(
            prompt.message.starts_with("Please fill this in.")
                && prompt.message.contains("truncated by Gatehouse"),
            "{}",
            &prompt.message[prompt.message.len() - 80..]
        );
    }
    assert!(ui.asked().is_empty());
    server.close().await;
}

#[tokio::test]
async fn repeated_denials_kill_the_session() {
    for era in ERAS {
        let host = Host::demo();
        let ui = TestUi::new([]);
        let opener = Arc::new(TestOpener::default());
        let broker = host.broker(policy_with("max_denials", 1), &ui, &opener, None);
        let server = host.demo_connection("denials", &broker, era).await;
        let call = CallOptions::default();

        // One denial is within the limit: the server only gets decline.
        let first = server
            .call_tool("ask_password", no_args(), &call)
            .await
            .unwrap();
        assert_eq!(received(&first), json!({"action": "decline"}), "{era}");
        let record = &first.elicitations[0];
        assert_eq!(record.decision.as_str(), "deny_sensitive_form_elicitation");
        assert!(
            reason_codes(record).contains(&"sensitive_field"),
            "{record:?}"
        );
        assert!(server.session().unwrap().killed().is_none());
        assert!(host.records_of(events::SESSION_KILLED).is_empty());

        // The second is one too many.
        let (outcome, records) = server
            .call_tool_traced("ask_password", no_args(), &call)
            .await;
        match &outcome {
            Err(HostError::SessionKilled { detail, .. }) => {
                assert!(detail.starts_with("repeated_denials"), "{detail}")
            }
            other => panic!("{era}: expected SessionKilled, got {other:?}"),
        }
        assert_eq!(records.len(), 1, "{records:?}");
        assert_eq!(records[0].action, ElicitationAnswer::Decline);
        let killed: Vec<SessionKilled> = kit::audit::payloads(&host.audit_path());
        assert_eq!(killed.len(), 1, "{killed:?}");
        assert_eq!(killed[0].reason, "repeated_denials");
        assert_eq!(killed[0].decision, Decision::KillSessionOnElicitationAbuse);
        let suspended: Vec<ServerSuspended> = kit::audit::payloads(&host.audit_path());
        assert_eq!(suspended[0].reason, "repeated_denials");
        assert!(
            ui.asked().is_empty(),
            "a sensitive form was shown to the user"
        );
        assert_eq!(ui.suspended().len(), 1);
        // Both denials were receipted.
        let receipts: Vec<ElicitationReceipt> = kit::audit::payloads(&host.audit_path());
        assert_eq!(receipts.len(), 2, "{receipts:?}");
        for receipt in &receipts {
            assert_eq!(receipt.decision, Decision::DenySensitiveFormElicitation);
            assert_eq!(receipt.action, ElicitationAnswer::Decline);
        }
        server.close().await;
    }
}

// ---------------------------------------------------------------------------------------------
// 3. An elicitation tied to no request of ours (SEP-2260).

#[tokio::test]
async fn an_elicitation_tied_to_no_request_is_held_and_never_shown() {
    let host = Host::warn();
    let ui = TestUi::new([Answer::Submit(json!({"name": "Ada"}))]);
    let opener = Arc::new(TestOpener::default());
    let broker = host.broker(Policy::default_policy(), &ui, &opener, None);
    let name = "unprompted";
    let server = host
        .connect(
            name,
            &fixture("elicit-unprompted"),
            &broker,
            EraPreference::Auto,
        )
        .await
        .unwrap();
    assert!(!server.verdict().is_admitted());
    server.approve_tools(&["t".into()]).await.unwrap();
    let outcome = server
        .call_tool("t", None, &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(text(&outcome), "ok");
    assert!(
        outcome.elicitations.is_empty(),
        "the call completed before anything was elicited"
    );

    // 200 ms after the answer, the fixture elicits on its own.
    let receipt = eventually("the receipt", Duration::from_secs(5), || {
        kit::audit::payloads::<ElicitationReceipt>(&host.audit_path()).pop()
    })
    .await;
    assert_eq!(receipt.decision, Decision::HoldForElicitationEvidence);
    let codes: Vec<&str> = receipt.reasons.iter().map(|r| r.code.as_str()).collect();
    assert!(codes.contains(&"not_tied_to_request"), "{codes:?}");
    assert_eq!(receipt.correlation.basis, CorrelationBasis::None);
    assert!(receipt.correlation.requests.is_empty());
    assert_eq!(receipt.action, ElicitationAnswer::Decline);
    assert!(!receipt.overridden);
    assert_eq!(
        receipt.admission,
        gatehouse_host::admission::Status::Unattested
    );
    assert_eq!(receipt.server_id, None);

    // Never put to the user: shown as refused, the server got decline.
    assert!(
        ui.asked().is_empty(),
        "the user was asked: {:?}",
        ui.asked()
    );
    let refused = ui.refused();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].receipt_id, receipt.receipt_id);
    assert_eq!(refused[0].message, "Who are you?");
    assert!(!refused[0].askable());
    let log = eventually("the fixture's log", Duration::from_secs(5), || {
        let log = std::fs::read_to_string(host.stderr_log(name)).unwrap_or_default();
        log.contains("elicitation answered").then_some(log)
    })
    .await;
    assert!(log.contains("elicitation answered decline"), "{log}");
    server.close().await;
}

#[tokio::test]
async fn an_elicitation_after_the_host_gave_up_on_the_call_is_tied_to_no_request() {
    // A hostile server keeps a timed-out call's request "open" and elicits once the host has
    // cancelled it: the elicitation must not be tied to the dead call, and no later one either.
    let host = Host::warn();
    let ui = TestUi::new([Answer::Submit(json!({"name": "Ada"}))]);
    let opener = Arc::new(TestOpener::default());
    let broker = host.broker(Policy::default_policy(), &ui, &opener, None);
    let name = "late";
    let server = host
        .connect(
            name,
            &fixture("elicit-after-cancel"),
            &broker,
            EraPreference::Auto,
        )
        .await
        .unwrap();
    server.approve_tools(&["t".into()]).await.unwrap();
    let error = server
        .call_tool(
            "t",
            None,
            &CallOptions {
                timeout: Some(Duration::from_millis(300)),
                ..CallOptions::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(error.code().as_str(), "timeout", "{error}");

    let receipt = eventually("the receipt", Duration::from_secs(5), || {
        kit::audit::payloads::<ElicitationReceipt>(&host.audit_path()).pop()
    })
    .await;
    assert_eq!(
        receipt.correlation.basis,
        CorrelationBasis::None,
        "{receipt:?}"
    );
    assert!(receipt.correlation.requests.is_empty());
    assert_eq!(receipt.decision, Decision::HoldForElicitationEvidence);
    assert_eq!(receipt.action, ElicitationAnswer::Decline);
    assert!(ui.asked().is_empty(), "asked: {:?}", ui.asked());
    let refused = ui.refused();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].message, "Still there? Who are you?");
    let log = eventually("the fixture's log", Duration::from_secs(5), || {
        let log = std::fs::read_to_string(host.stderr_log(name)).unwrap_or_default();
        log.contains("elicitation answered").then_some(log)
    })
    .await;
    assert!(log.contains("elicitation answered decline"), "{log}");
    server.close().await;
}

#[tokio::test]
async fn a_hold_the_broker_adds_decides_anew_whether_the_user_may_override() {
    // An unattested server (warn posture: `server_unattested`, which the shipped policy lets
    // the user override) reuses an elicitationId. The broker's own hold,
    // `duplicate_elicitation_id`, is never overridable (no policy may list it): the second URL
    // must not be put to the user, while the first, held only as unattested, is.
    {
        let policy = Policy::default_policy();
        let host = Host::warn();
        let ui = TestUi::new([Answer::OpenOverriding, Answer::OpenOverriding]);
        let opener = Arc::new(TestOpener::default());
        let broker = host.broker(policy, &ui, &opener, None);
        let name = "dup";
        let server = host
            .connect(
                name,
                &fixture("elicit-url-dup"),
                &broker,
                EraPreference::Auto,
            )
            .await
            .unwrap();
        server.approve_tools(&["t".into()]).await.unwrap();
        let outcome = server
            .call_tool("t", None, &CallOptions::default())
            .await
            .unwrap();
        assert_eq!(text(&outcome), "ok");
        let receipts: Vec<ElicitationReceipt> = kit::audit::payloads(&host.audit_path());
        assert_eq!(receipts.len(), 2, "{receipts:?}");
        let codes: Vec<&str> = receipts[1]
            .reasons
            .iter()
            .map(|r| r.code.as_str())
            .collect();
        assert!(codes.contains(&"duplicate_elicitation_id"), "{codes:?}");
        assert!(codes.contains(&"server_unattested"), "{codes:?}");
        let asked: Vec<String> = ui
            .asked()
            .iter()
            .map(|a| a.prompt.message.clone())
            .collect();
        assert_eq!(asked, ["Connect your account (1)"]);
        assert!(ui.asked()[0].prompt.askable());
        assert_eq!(receipts[0].action, ElicitationAnswer::Accept);
        assert!(receipts[0].overridden);
        assert_eq!(receipts[1].action, ElicitationAnswer::Decline);
        assert_eq!(ui.refused().len(), 1);
        assert!(!ui.refused()[0].askable());
        assert!(!ui.refused()[0].assessment.override_allowed);
        server.close().await;
    }
}

// ---------------------------------------------------------------------------------------------
// 4. Completions: another server's, duplicates, never issued.

#[tokio::test]
async fn completions_count_only_for_the_server_that_was_asked_and_only_once() {
    let host = Host::demo();
    let ui = TestUi::new([Answer::Open]);
    // The browser only records: the page stays unsubmitted until the test submits it.
    let opener = Arc::new(TestOpener::default());
    let broker = host.broker(Policy::default_policy(), &ui, &opener, None);
    let a = Arc::new(
        host.demo_connection("account-a", &broker, Era::V2025_11_25)
            .await,
    );
    let b = host
        .demo_connection("account-b", &broker, Era::V2025_11_25)
        .await;
    let a_session = a.session().unwrap().clone();
    let b_session = b.session().unwrap().clone();

    let call = {
        let a = a.clone();
        tokio::spawn(async move {
            a.call_tool("connect_account", None, &CallOptions::default())
                .await
        })
    };
    let prompt = eventually("the consent prompt", Duration::from_secs(10), || {
        ui.asked().first().map(|a| a.prompt.clone())
    })
    .await;
    assert_eq!(prompt.server, "account-a");
    eventually("the URL opened", Duration::from_secs(10), || {
        ui.opened(prompt.id).then_some(())
    })
    .await;
    let receipt = host.receipt(&prompt.receipt_id);
    assert_eq!(
        str_of(&receipt, "decision"),
        "allow_elicitation_with_receipt"
    );
    assert_eq!(str_of(&receipt, "action"), "accept");
    let id = str_of(&receipt, "elicitation_id").to_string();
    let opened = opener.opened();
    assert_eq!(opened.len(), 1);
    assert!(
        opened[0].starts_with("http://127.0.0.1:")
            && opened[0].ends_with(&format!("/connect/{id}")),
        "{opened:?}"
    );

    // B claims A's completion: ignored, audited, and A's prompt stays pending.
    b_session.broker().complete(&b_session, &id);
    let ignored: Vec<ElicitationCompletionIgnored> = kit::audit::payloads(&host.audit_path());
    assert_eq!(ignored.len(), 1, "{ignored:?}");
    assert_eq!(ignored[0].why, IgnoredWhy::CrossServer);
    assert_eq!(ignored[0].elicitation_id, id);
    assert_eq!(ignored[0].name, "account-b");
    assert!(!a_session.broker().is_completed(&a_session, &id));
    assert!(ui.completed(prompt.id).is_empty());
    assert!(host.records_of(events::ELICITATION_COMPLETED).is_empty());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!call.is_finished(), "A's call ended without its page");

    // The page is submitted: the server's own completion completes A's prompt, and the call.
    let url = opened[0].clone();
    let status = tokio::task::spawn_blocking(move || post(&url))
        .await
        .unwrap();
    assert_eq!(status, 200);
    let outcome = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("A's call never returned")
        .unwrap()
        .unwrap();
    assert_eq!(
        text(&outcome),
        format!("connected demo-calendar (elicitation {id})")
    );
    assert_eq!(outcome.elicitations.len(), 1);
    assert_eq!(outcome.elicitations[0].completed, Some(true));
    assert_eq!(
        outcome.elicitations[0].elicitation_id.as_deref(),
        Some(id.as_str())
    );
    assert!(a_session.broker().is_completed(&a_session, &id));
    let completed: Vec<ElicitationCompleted> = kit::audit::payloads(&host.audit_path());
    assert_eq!(completed.len(), 1, "{completed:?}");
    assert_eq!(completed[0].elicitation_id.as_deref(), Some(id.as_str()));
    assert_eq!(completed[0].via, CompletedVia::Notification);
    assert_eq!(completed[0].receipt_id, prompt.receipt_id);
    assert_eq!(ui.completed(prompt.id), ["notification"]);

    // The same completion again, from A itself: a duplicate. And one never issued.
    a_session.broker().complete(&a_session, &id);
    a_session.broker().complete(&a_session, "never-issued");
    let ignored: Vec<ElicitationCompletionIgnored> = kit::audit::payloads(&host.audit_path());
    let whys: Vec<(&str, IgnoredWhy, &str)> = ignored
        .iter()
        .map(|r| (r.name.as_str(), r.why, r.elicitation_id.as_str()))
        .collect();
    assert_eq!(
        whys,
        [
            ("account-b", IgnoredWhy::CrossServer, id.as_str()),
            ("account-a", IgnoredWhy::Duplicate, id.as_str()),
            ("account-a", IgnoredWhy::NeverIssued, "never-issued"),
        ]
    );
    assert_eq!(host.records_of(events::ELICITATION_COMPLETED).len(), 1);
    assert_eq!(ui.completed(prompt.id), ["notification"]);
    // Within the bogus-completion limit: nobody was killed.
    assert!(a_session.killed().is_none() && b_session.killed().is_none());
    assert!(host.records_of(events::SESSION_KILLED).is_empty());

    drop(a_session);
    Arc::try_unwrap(a).unwrap().close().await;
    b.close().await;
}

// ---------------------------------------------------------------------------------------------
// 5. One prompt at a time, in arrival order.

#[tokio::test]
async fn prompts_are_asked_one_at_a_time_in_arrival_order() {
    let host = Host::demo();
    let ui = TestUi::slow(
        [
            Answer::Submit(booking()),
            Answer::Submit(booking()),
            Answer::Submit(booking()),
        ],
        Duration::from_millis(300),
    );
    let opener = Arc::new(TestOpener::default());
    let broker = host.broker(Policy::default_policy(), &ui, &opener, None);
    let names = ["queue-1", "queue-2", "queue-3"];
    let mut connections = Vec::new();
    for name in names {
        connections.push(Arc::new(
            host.demo_connection(name, &broker, Era::V2025_11_25).await,
        ));
    }

    // The first call's prompt is being answered; the second and third arrive meanwhile, in
    // that order (each waits until the previous one reached the broker's queue).
    let mut calls = Vec::new();
    for (i, connection) in connections.iter().enumerate() {
        let c = connection.clone();
        calls.push(tokio::spawn(async move {
            c.call_tool("book_table", None, &CallOptions::default())
                .await
        }));
        let session = connection.session().unwrap().clone();
        eventually(
            "the elicitation to reach the broker",
            Duration::from_secs(10),
            || (session.is_busy() || ui.asked().len() > i).then_some(()),
        )
        .await;
    }
    for call in calls {
        let outcome = call.await.unwrap().unwrap();
        assert_eq!(received(&outcome)["action"], "accept");
    }

    let asked = ui.asked();
    let servers: Vec<&str> = asked.iter().map(|a| a.prompt.server.as_str()).collect();
    assert_eq!(servers, names, "not asked in arrival order");
    for pair in asked.windows(2) {
        let answered = pair[0].answered.expect("answered");
        assert!(
            pair[1].started >= answered,
            "{} was asked before {} was answered",
            pair[1].prompt.server,
            pair[0].prompt.server
        );
    }
    for connection in connections {
        Arc::try_unwrap(connection).unwrap().close().await;
    }
}

// ---------------------------------------------------------------------------------------------
// 6. Human time vs the request timeout.

#[tokio::test]
async fn the_request_timeout_pauses_while_a_person_is_asked() {
    let mut host = Host::demo();
    host.request_timeout = Duration::from_secs(1);
    let ui = TestUi::slow([Answer::Submit(booking())], Duration::from_millis(2500));
    let opener = Arc::new(TestOpener::default());
    let broker = host.broker(Policy::default_policy(), &ui, &opener, None);
    let server = host
        .demo_connection("patient", &broker, Era::V2025_11_25)
        .await;
    let call = CallOptions::default();

    let started = Instant::now();
    let outcome = server
        .call_tool("book_table", no_args(), &call)
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(2500));
    assert_eq!(received(&outcome)["action"], "accept");
    assert_eq!(received(&outcome)["content"]["name"], "Ada Lovelace");

    // The same 1 s timeout does fire when nobody is being asked.
    let args = json!({"steps": 4, "delay_ms": 500}).as_object().cloned();
    let error = server.call_tool("slow", args, &call).await.unwrap_err();
    assert!(
        matches!(&error, HostError::Timeout { after, .. } if *after == Duration::from_secs(1)),
        "{error:?}"
    );
    server.close().await;
}

#[tokio::test]
async fn a_person_who_never_answers_is_timed_out_and_the_server_gets_cancel() {
    for era in ERAS {
        let host = Host::demo();
        let ui = TestUi::new([Answer::Never]);
        let opener = Arc::new(TestOpener::default());
        let broker = host.broker(
            Policy::default_policy(),
            &ui,
            &opener,
            Some(Duration::from_millis(500)),
        );
        let server = host.demo_connection("absent", &broker, era).await;
        let started = Instant::now();
        let outcome = server
            .call_tool("book_table", no_args(), &CallOptions::default())
            .await
            .unwrap();
        assert!(started.elapsed() >= Duration::from_millis(500));
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(received(&outcome), json!({"action": "cancel"}), "{era}");
        let record = &outcome.elicitations[0];
        assert_eq!(record.action, ElicitationAnswer::Cancel);
        let note = record.note.as_deref().unwrap_or_default();
        assert!(
            note.contains("no answer within 0.5 s") && note.contains("cancelled"),
            "{era}: {note:?}"
        );
        assert_eq!(ui.asked().len(), 1);
        // The broker gave up: the card is closed with why, not left offering an answer.
        let closed: Vec<String> = ui
            .updates()
            .into_iter()
            .filter_map(|u| match u {
                PromptUpdate::Closed { prompt_id, outcome } if prompt_id == record.prompt_id => {
                    Some(outcome.to_string())
                }
                _ => None,
            })
            .collect();
        assert_eq!(closed.len(), 1, "{era}: {closed:?}");
        assert!(closed[0].contains("no answer within 0.5 s"), "{closed:?}");
        let receipt = host.receipt(&record.receipt_id);
        assert_eq!(str_of(&receipt, "action"), "cancel");
        assert_eq!(str_of(&receipt, "note"), note);
        server.close().await;
    }
}

/// The desktop's prompt desk, recording nothing else.
fn desk() -> Arc<PromptDesk> {
    PromptDesk::new(Arc::new(|_| {}))
}

/// The desk's card for `prompt_id`.
fn card(desk: &PromptDesk, prompt_id: u64) -> PromptCard {
    desk.list()
        .into_iter()
        .find(|c| c.prompt.id == prompt_id)
        .unwrap_or_else(|| panic!("no card {prompt_id} on the desk"))
}

/// Waits until the desk shows exactly one card waiting for an answer, and returns it.
async fn asking_card(desk: &PromptDesk) -> PromptCard {
    eventually("a card asking", Duration::from_secs(10), || {
        let asking: Vec<PromptCard> = desk
            .list()
            .into_iter()
            .filter(|c| c.state == CardState::Asking)
            .collect();
        (asking.len() == 1).then(|| asking[0].clone())
    })
    .await
}

/// Waits until the card is no longer open; asserts it was closed with one of `why` in its
/// outcome.
async fn closed_card(desk: &PromptDesk, prompt_id: u64, why: &[&str]) {
    let closed = eventually("the card closed", Duration::from_secs(20), || {
        let card = card(desk, prompt_id);
        (card.state != CardState::Asking).then_some(card)
    })
    .await;
    assert_eq!(closed.state, CardState::Closed, "{closed:?}");
    let outcome = closed.outcome.unwrap_or_default();
    assert!(why.iter().any(|w| outcome.contains(w)), "{outcome:?}");
    assert_eq!(desk.pending(), 0, "a card still waits for the user");
}

#[tokio::test]
async fn a_card_the_human_timeout_ended_is_closed_on_the_desk() {
    // Before, the broker cancelled toward the server but the desk went on offering the card.
    for era in ERAS {
        let host = Host::demo();
        let desk = desk();
        let opener = Arc::new(TestOpener::default());
        let broker = host.broker_for(
            Policy::default_policy(),
            desk.clone(),
            &opener,
            Some(Duration::from_millis(500)),
        );
        let server = host.demo_connection("absent", &broker, era).await;
        let outcome = server
            .call_tool("book_table", no_args(), &CallOptions::default())
            .await
            .unwrap();
        assert_eq!(received(&outcome), json!({"action": "cancel"}), "{era}");
        closed_card(
            &desk,
            outcome.elicitations[0].prompt_id,
            &["no answer within 0.5 s"],
        )
        .await;
        server.close().await;
    }
}

#[tokio::test]
async fn a_card_closes_when_the_server_withdraws_its_elicitation() {
    let host = Host::warn();
    let desk = desk();
    let opener = Arc::new(TestOpener::default());
    let broker = host.broker_for(Policy::default_policy(), desk.clone(), &opener, None);
    let name = "withdraw";
    let server = Arc::new(
        host.connect(
            name,
            &fixture("elicit-withdraw"),
            &broker,
            EraPreference::Auto,
        )
        .await
        .unwrap(),
    );
    server.approve_tools(&["t".into()]).await.unwrap();
    let first = tokio::spawn({
        let server = server.clone();
        async move { server.call_tool("t", None, &CallOptions::default()).await }
    });
    let asked = asking_card(&desk).await;
    assert_eq!(asked.prompt.message, "What is your name?");
    // The server cancels its elicitation/create: nothing can answer it any more.
    let then = json!({"then": "cancel"}).as_object().cloned();
    let second = server
        .call_tool("t", then, &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(text(&second), "withdrawn");
    assert_eq!(text(&first.await.unwrap().unwrap()), "ok");
    closed_card(&desk, asked.prompt.id, &["withdrew the request"]).await;
    let receipt = host.receipt(&asked.prompt.receipt_id);
    assert_eq!(str_of(&receipt, "action"), "cancel");
    // The desk takes no answer for it any more.
    assert!(
        desk.answer(
            asked.prompt.id,
            WindowAnswer {
                reply: WindowReply::Decline,
                content: None,
                override_hold: false,
            },
        )
        .is_err()
    );
    Arc::into_inner(server).unwrap().close().await;
}

#[tokio::test]
async fn a_card_closes_when_its_connection_ends() {
    // The server exits while its elicitation is asked, and the host closes a connection whose
    // elicitation is asked: in both cases nobody can use the answer, so the card closes.
    let host = Host::warn();
    let desk = desk();
    let opener = Arc::new(TestOpener::default());
    let broker = host.broker_for(Policy::default_policy(), desk.clone(), &opener, None);
    let spec = fixture("elicit-withdraw");

    let exits = Arc::new(
        host.connect("exits", &spec, &broker, EraPreference::Auto)
            .await
            .unwrap(),
    );
    exits.approve_tools(&["t".into()]).await.unwrap();
    let first = tokio::spawn({
        let server = exits.clone();
        async move { server.call_tool("t", None, &CallOptions::default()).await }
    });
    let asked = asking_card(&desk).await;
    let then = json!({"then": "exit"}).as_object().cloned();
    let _ = exits.call_tool("t", then, &CallOptions::default()).await;
    assert!(first.await.unwrap().is_err(), "the server exited mid-call");
    // Closed by the broker (the request ended with the connection), then by the failed call
    // (the process exited): whichever said it last.
    closed_card(
        &desk,
        asked.prompt.id,
        &["connection ended", "the server process exited"],
    )
    .await;
    assert_eq!(
        str_of(&host.receipt(&asked.prompt.receipt_id), "action"),
        "cancel"
    );

    let closed = host
        .connect("closed", &spec, &broker, EraPreference::Auto)
        .await
        .unwrap();
    closed.approve_tools(&["t".into()]).await.unwrap();
    // The host stops waiting for the call (its future is dropped) while the card is asked;
    // the elicitation itself is the server's request and lives on until the connection ends.
    let call = CallOptions::default();
    let asked = tokio::select! {
        outcome = closed.call_tool("t", None, &call) => {
            panic!("the call ended before its elicitation was answered: {outcome:?}")
        }
        asked = asking_card(&desk) => asked,
    };
    closed.close().await;
    // Closing ends the connection's requests too: whichever of the two the broker heard
    // first says why (seen both ways on a loaded machine).
    closed_card(
        &desk,
        asked.prompt.id,
        &["connection was closed", "its connection ended"],
    )
    .await;
    assert_eq!(
        str_of(&host.receipt(&asked.prompt.receipt_id), "action"),
        "cancel"
    );
}

#[tokio::test]
async fn a_card_closes_when_the_call_it_belongs_to_is_abandoned() {
    // 2026-07-28: the input request is asked inside the host's own call. A caller that gives
    // up on the call (its future dropped) used to leave the card asking forever.
    let host = Host::demo();
    let desk = desk();
    let opener = Arc::new(TestOpener::default());
    let broker = host.broker_for(Policy::default_policy(), desk.clone(), &opener, None);
    let server = host
        .demo_connection("abandoned", &broker, Era::V2026_07_28)
        .await;
    let call = CallOptions::default();
    let asked = tokio::select! {
        outcome = server.call_tool("book_table", no_args(), &call) => {
            panic!("the call ended before its prompt was answered: {outcome:?}")
        }
        asked = asking_card(&desk) => asked,
    };
    closed_card(&desk, asked.prompt.id, &["abandoned"]).await;
    // The desk takes no answer for it any more.
    assert!(
        desk.answer(
            asked.prompt.id,
            WindowAnswer {
                reply: WindowReply::Decline,
                content: None,
                override_hold: false,
            },
        )
        .is_err()
    );
    server.close().await;
}

// ---------------------------------------------------------------------------------------------
// 7. Receipts.

#[tokio::test]
async fn a_receipt_too_large_for_the_log_is_written_truncated_never_lost() {
    let host = Host::warn();
    let ui = TestUi::new([]);
    let opener = Arc::new(TestOpener::default());
    let broker = host.broker(Policy::default_policy(), &ui, &opener, None);
    let server = host
        .connect(
            "huge",
            &fixture("elicit-huge-id"),
            &broker,
            EraPreference::Auto,
        )
        .await
        .unwrap();
    server.approve_tools(&["t".into()]).await.unwrap();
    let mut reported = host.events.subscribe();
    let outcome = server
        .call_tool("t", None, &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(text(&outcome), "ok");
    // What is shown and reported of the 1 MiB message is cut, visibly.
    let shown = gatehouse_host::broker::MAX_SHOWN_MESSAGE_BYTES + 100;
    let asked = ui.asked();
    assert_eq!(asked.len(), 1, "{} asked", asked.len());
    assert!(asked[0].prompt.message.len() <= shown);
    assert!(asked[0].prompt.message.contains("truncated by Gatehouse"));
    let mut reports = 0;
    while let Ok(event) = reported.try_recv() {
        if let HostEvent::Elicitation { message, .. } = event {
            assert!(message.len() <= shown, "{} bytes reported", message.len());
            assert!(
                message.starts_with("Connect mmm") && message.contains("truncated by Gatehouse")
            );
            reports += 1;
        }
    }
    assert_eq!(reports, 1);
    let receipts = host.records_of(events::ELICITATION_RECEIPT);
    assert_eq!(receipts.len(), 1, "the receipt was lost");
    let receipt = &receipts[0];
    let truncated = &receipt.data["truncated"];
    assert!(
        truncated["original_bytes"].as_u64().unwrap() > 2 * 1024 * 1024,
        "{truncated}"
    );
    assert_eq!(truncated["original_sha256"].as_str().unwrap().len(), 64);
    let id = str_of(receipt, "elicitation_id");
    assert!(
        id.len() < 2048 && id.contains("[truncated:"),
        "{} bytes",
        id.len()
    );
    assert_eq!(
        str_of(receipt, "url"),
        "https://accounts.example.com/connect"
    );
    assert_ne!(str_of(receipt, "action"), "accept");
    assert!(opener.opened().is_empty());
    server.close().await;
}

#[tokio::test]
async fn a_receipt_records_who_asked_what_for_which_request_and_the_chain_verifies() {
    for era in ERAS {
        let host = Host::demo();
        let ui = TestUi::new([Answer::Submit(booking())]);
        let opener = Arc::new(TestOpener::default());
        let policy = Policy::default_policy();
        let policy_version = policy.version.clone();
        let broker = host.broker(policy, &ui, &opener, None);
        let name = "receipts";
        let server = host.demo_connection(name, &broker, era).await;
        let outcome = server
            .call_tool("book_table", no_args(), &CallOptions::default())
            .await
            .unwrap();
        let got = received(&outcome);
        assert_eq!(got["action"], "accept");
        let record = &outcome.elicitations[0];
        let receipt = host.receipt(&record.receipt_id);
        let data: ElicitationReceipt = kit::audit::payload_of(&receipt);
        let ids = host.tool_call_ids(name);

        assert_eq!(receipt.event, events::ELICITATION_RECEIPT);
        assert_eq!(receipt.server.as_deref(), Some(DEMO_SERVER_ID));
        assert!(
            data.receipt_id.starts_with("rcpt-") && data.receipt_id.len() == 5 + 32,
            "{data:?}"
        );
        assert_eq!(data.prompt_id, record.prompt_id);
        assert_eq!(data.user, USER);
        assert_eq!(data.name, name);
        assert_eq!(data.server_id.as_deref(), Some(DEMO_SERVER_ID));
        assert_eq!(data.admission, gatehouse_host::admission::Status::Admitted);
        assert_eq!(data.bundle.as_deref(), Some(DEMO_BUNDLE));
        // stdio: the command line, no origin.
        assert_eq!(data.origin, None);
        assert_eq!(data.command, server.verdict().command.clone(), "{data:?}");
        assert!(
            data.command
                .as_deref()
                .is_some_and(|c| c.contains(gatehouse_host::demo::DEMO_SERVER_BINARY)),
            "{data:?}"
        );
        assert_eq!(data.era, era);
        assert_eq!(data.mode, Mode::Form);
        assert_eq!(data.decision, Decision::AllowElicitationWithReceipt);
        assert!(data.reasons.is_empty());
        assert_eq!(data.action, ElicitationAnswer::Accept);
        assert!(!data.overridden);
        assert_eq!(data.policy_version, policy_version);
        // Tied to the tools/call that caused it, by its JSON-RPC id.
        let correlation = &data.correlation;
        let (basis, caused_by) = match era {
            Era::V2025_11_25 => (CorrelationBasis::InFlight, &ids[0]),
            // The round whose result asked for input.
            Era::V2026_07_28 => (CorrelationBasis::MrtrResult, &ids[0]),
        };
        assert_eq!(correlation.basis, basis, "{era}: {correlation:?}");
        let requests: Vec<(&Value, &str, Option<&str>)> = correlation
            .requests
            .iter()
            .map(|r| (&r.id, r.method.as_str(), r.tool.as_deref()))
            .collect();
        assert_eq!(
            requests,
            [(caused_by, "tools/call", Some("book_table"))],
            "{era}"
        );
        if era == Era::V2026_07_28 {
            assert_eq!(ids.len(), 2, "one input_required round, then the retry");
            assert_eq!(data.input_key.as_deref(), Some("booking"));
            assert_eq!(data.round, Some(1));
        } else {
            assert_eq!(ids.len(), 1);
        }
        // The hash of exactly what the server received; the content itself is never stored.
        let sent = serde_json::to_vec(&got["content"]).unwrap();
        assert_eq!(
            data.content_sha256,
            Some(format!("sha256:{}", hex::encode(Sha256::digest(&sent))))
        );
        server.close().await;
        let log = std::fs::read_to_string(host.audit_path()).unwrap();
        assert!(!log.contains("Ada Lovelace"), "content was stored");

        let report = gatehouse_audit::verify(host.audit_path()).unwrap();
        assert!(report.ok, "{report}");
        assert_eq!(report.records as usize, host.records().len());

        // Rewriting what the receipt says breaks the chain at exactly that record.
        let line = log
            .lines()
            .position(|l| l.contains(&record.receipt_id) && l.contains("elicitation_receipt"))
            .unwrap();
        let tampered = log.replacen(r#""action":"accept""#, r#""action":"decline""#, 1);
        assert_ne!(tampered, log);
        std::fs::write(host.audit_path(), tampered).unwrap();
        let report = gatehouse_audit::verify(host.audit_path()).unwrap();
        assert!(!report.ok);
        assert_eq!(
            report.first_broken.as_ref().map(|b| b.line),
            Some(line as u64 + 1),
            "{report}"
        );
    }
}

#[tokio::test]
async fn a_card_names_the_ai_client_whose_call_caused_it_and_the_users_own_calls_name_none() {
    let host = Host::warn();
    let desk = desk();
    let opener = Arc::new(TestOpener::default());
    let broker = host.broker_for(Policy::default_policy(), desk.clone(), &opener, None);
    let server = Arc::new(
        host.connect(
            "asks",
            &fixture("elicit-withdraw"),
            &broker,
            EraPreference::Auto,
        )
        .await
        .unwrap(),
    );
    server.approve_tools(&["t".into()]).await.unwrap();
    let caller = gatehouse_host::Caller::new(
        "claude_code",
        gatehouse_host::DownstreamTransport::Stdio,
        Some("claude-code 2.1"),
    );
    for (who, expected) in [(Some(caller.clone()), Some("claude_code")), (None, None)] {
        let call = tokio::spawn({
            let server = server.clone();
            let options = CallOptions {
                caller: who,
                ..CallOptions::default()
            };
            async move { server.call_tool("t", None, &options).await }
        });
        let asked = asking_card(&desk).await;
        assert_eq!(
            asked.prompt.attribution.client().map(|c| c.client.as_str()),
            expected,
            "{:?}",
            asked.prompt
        );
        let kind = if expected.is_some() { "client" } else { "none" };
        assert_eq!(asked.prompt.attribution.code(), kind);
        desk.answer(
            asked.prompt.id,
            WindowAnswer {
                reply: WindowReply::Decline,
                content: None,
                override_hold: false,
            },
        )
        .unwrap();
        // The fixture answers its call only when told to end it; the receipt is written
        // before the answer goes out.
        let receipt = eventually("the receipt", Duration::from_secs(10), || {
            kit::audit::payloads::<ElicitationReceipt>(&host.audit_path())
                .into_iter()
                .find(|r| r.receipt_id == asked.prompt.receipt_id)
        })
        .await;
        let client = match &receipt.caller {
            Some(ReceiptCaller::Client(caller)) => Some(caller.client.as_str()),
            _ => None,
        };
        assert_eq!(client, expected, "{receipt:?}");
        let kind = match expected {
            Some(_) => AttributionKind::Client,
            None => AttributionKind::None,
        };
        assert_eq!(receipt.attribution, kind);
        assert!(receipt.caller_candidates.is_none());
        call.abort();
        let _ = call.await;
    }
    Arc::into_inner(server).unwrap().close().await;
}

/// On stdio in 2025-11-25 an `elicitation/create` can belong to any request in flight. With a
/// call of one AI client still running, another's call asks: the card must not blame the first
/// call's client (nor the second's), and must say it cannot tell; the receipt says the same.
#[tokio::test]
async fn with_calls_of_several_clients_in_flight_a_card_names_none_of_them_as_the_cause() {
    use gatehouse_host::{Attribution, Caller, DownstreamTransport};
    let mut host = Host::demo();
    // The long call must still be in flight when the other call asks, however slow the machine.
    host.request_timeout = Duration::from_secs(600);
    let desk = desk();
    let opener = Arc::new(TestOpener::default());
    let broker = host.broker_for(Policy::default_policy(), desk.clone(), &opener, None);
    let server = Arc::new(
        host.demo_connection("legacy", &broker, Era::V2025_11_25)
            .await,
    );
    let session = server.session().unwrap().clone();
    let claude = Caller::new(
        "claude_code",
        DownstreamTransport::Stdio,
        Some("claude-code 2.1"),
    );
    // A hostile local client may claim any name, markup included: it stays text.
    let cursor = Caller::new(
        "cursor",
        DownstreamTransport::Stdio,
        Some("<b>Cursor</b> 1.0"),
    );
    let unknown = |clients: Vec<Caller>, gatehouse| Attribution::Unknown {
        clients,
        more_clients: 0,
        gatehouse,
    };
    // (the client of the call left running, the client of the call that asks, the card)
    let cases = [
        (
            Some(claude.clone()),
            Some(cursor.clone()),
            unknown(vec![claude.clone(), cursor.clone()], false),
        ),
        (
            Some(cursor.clone()),
            Some(claude.clone()),
            unknown(vec![cursor.clone(), claude.clone()], false),
        ),
        // The person's own call from the app, and a client's.
        (
            None,
            Some(claude.clone()),
            unknown(vec![claude.clone()], true),
        ),
        (
            Some(claude.clone()),
            None,
            unknown(vec![claude.clone()], true),
        ),
        // Two calls of one client: that client, whichever of them asked.
        (
            Some(claude.clone()),
            Some(claude.clone()),
            Attribution::Client {
                caller: claude.clone(),
            },
        ),
    ];
    for (running_for, asking_for, expected) in cases {
        let running = tokio::spawn({
            let server = server.clone();
            let options = CallOptions {
                caller: running_for.clone(),
                ..CallOptions::default()
            };
            let args = json!({"steps": 100, "delay_ms": 10000})
                .as_object()
                .cloned();
            async move { server.call_tool("slow", args, &options).await }
        });
        eventually("the slow call on the wire", Duration::from_secs(20), || {
            session
                .inflight()
                .snapshot()
                .iter()
                .any(|r| r.tool.as_deref() == Some("slow"))
                .then_some(())
        })
        .await;
        let asking = tokio::spawn({
            let server = server.clone();
            let options = CallOptions {
                caller: asking_for.clone(),
                ..CallOptions::default()
            };
            async move { server.call_tool("book_table", no_args(), &options).await }
        });
        let asked = asking_card(&desk).await;
        let attribution = &asked.prompt.attribution;
        assert_eq!(
            attribution, &expected,
            "running for {running_for:?}, asking for {asking_for:?}"
        );
        let sentence = attribution.sentence().unwrap();
        if attribution.client().is_none() {
            assert!(
                sentence.contains("Gatehouse cannot tell which one caused it")
                    && !sentence.contains("during a call from"),
                "{sentence}"
            );
        }
        // What the window receives: the attribution, and no field naming one caller.
        let window = serde_json::to_value(&asked.prompt).unwrap();
        assert!(window.get("caller").is_none(), "{window}");
        assert_eq!(window["attribution"]["kind"], expected.code());

        desk.answer(
            asked.prompt.id,
            WindowAnswer {
                reply: WindowReply::Decline,
                content: None,
                override_hold: false,
            },
        )
        .unwrap();
        let outcome = asking.await.unwrap().unwrap();
        assert_eq!(received(&outcome)["action"], "decline");
        assert_eq!(outcome.elicitations.len(), 1);
        assert_eq!(outcome.elicitations[0].attribution, expected);
        assert_eq!(
            outcome.elicitations[0].correlation.basis,
            CorrelationBasis::InFlight
        );
        assert_eq!(outcome.elicitations[0].correlation.requests.len(), 2);

        let receipt: ElicitationReceipt =
            kit::audit::payload_of(&host.receipt(&asked.prompt.receipt_id));
        match &expected {
            Attribution::Client { caller } => {
                assert_eq!(receipt.attribution, AttributionKind::Client);
                assert_eq!(receipt.caller, Some(ReceiptCaller::Client(caller.clone())));
                assert!(receipt.caller_candidates.is_none());
            }
            Attribution::Unknown {
                clients, gatehouse, ..
            } => {
                assert_eq!(receipt.attribution, AttributionKind::Unknown);
                assert!(
                    matches!(receipt.caller, Some(ReceiptCaller::Unknown(_))),
                    "{receipt:?}"
                );
                let candidates = receipt.caller_candidates.as_ref().unwrap();
                let listed: Vec<&str> = candidates
                    .clients
                    .iter()
                    .map(|c| c.client.as_str())
                    .collect();
                let wanted: Vec<&str> = clients.iter().map(|c| c.client.as_str()).collect();
                assert_eq!(listed, wanted);
                assert_eq!(candidates.gatehouse, *gatehouse);
            }
            Attribution::None => unreachable!(),
        }

        running.abort();
        let _ = running.await;
        eventually("nothing in flight", Duration::from_secs(20), || {
            session.inflight().snapshot().is_empty().then_some(())
        })
        .await;
    }
    Arc::into_inner(server).unwrap().close().await;
}
