//! What the user sees and answers: prompts with a host-drawn identity banner, the
//! [`ConsentUi`] trait the terminal, scripted and desktop front ends implement, and the
//! [`UrlOpener`] that hands consented URLs to the system browser.
//!
//! Everything a server wrote (message, field titles, URL) is carried as plain data; a UI shows
//! it as text, never as HTML, Markdown or a link. The banner is built from the admission
//! record only ([`IdentityBanner::from_verdict`]); the server's own claims are kept apart and
//! labelled as claimed.

use std::collections::VecDeque;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

use gatehouse_policy::{Assessment, FieldCheck, FieldError, FormSchema, UrlDisplay};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Era;
use crate::admission::{IdentitySource, Status, Verdict};
use crate::audit_event::session::CompletedVia;

pub type UiFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Who is asking, as admission established it. Drawn by the host, never by the server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IdentityBanner {
    /// The name the user configured for the server.
    pub server: String,
    /// What admission found (`admitted`, `unattested` or `refused`).
    pub status: Status,
    /// The verified server id from the attestation (admitted servers only).
    pub verified_id: Option<String>,
    pub clearance: Option<String>,
    pub signer: Option<String>,
    /// `bundleId@version` of the trust root that admitted it.
    pub bundle: Option<String>,
    /// Whose statement the verified identity is (admitted servers only): the server's own
    /// attestation, a bundle's binding, or the admins' vouch for a server that publishes none.
    pub attested_by: Option<IdentitySource>,
    /// The same, in words every front end shows as is ("vouched for by BUNDLE; the server
    /// publishes no attestation"), so none of them can call a vouch the server's own.
    pub established: Option<String>,
    /// Admitted through the DEMO-ONLY trust root.
    pub demo: bool,
    /// HTTP origin, or the exact command line for stdio.
    pub origin: Option<String>,
    pub command: Option<String>,
    /// Unverified: what the server says about itself.
    pub claimed: ClaimedNames,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClaimedNames {
    pub publisher: Option<String>,
    pub server_name: Option<String>,
    pub server_version: Option<String>,
}

impl IdentityBanner {
    pub fn from_verdict(verdict: &Verdict) -> IdentityBanner {
        let identity = verdict
            .identity
            .as_ref()
            .filter(|_| verdict.status == Status::Admitted);
        IdentityBanner {
            server: verdict.server.clone(),
            status: verdict.status,
            verified_id: identity.map(|i| i.id.clone()),
            clearance: identity.map(|i| i.clearance.clone()),
            signer: identity.map(|i| i.signer_key_id.clone()),
            bundle: identity.map(|i| i.bundle.clone()),
            attested_by: identity.map(|i| i.attested_by),
            established: identity.map(|i| i.attested_by.describe(&i.bundle)),
            demo: verdict.demo,
            origin: verdict.origin.clone(),
            command: verdict.command.clone(),
            claimed: ClaimedNames {
                publisher: verdict.claimed.publisher.clone(),
                server_name: verdict.claimed.server_name.clone(),
                server_version: verdict.claimed.server_version.clone(),
            },
        }
    }

    /// The banner as lines of plain text, for terminals and logs.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        match &self.verified_id {
            Some(id) => lines.push(format!(
                "Verified server: {id}{}",
                if self.demo { "  [DEMO trust root]" } else { "" }
            )),
            None => lines.push(format!(
                "UNVERIFIED server ({}): nobody vouches for who this is",
                self.status.as_str()
            )),
        }
        if let (Some(clearance), Some(signer), Some(bundle)) =
            (&self.clearance, &self.signer, &self.bundle)
        {
            lines.push(format!(
                "  clearance {clearance} · signed by {signer} · trust root {bundle}"
            ));
        }
        if let Some(established) = &self.established {
            lines.push(format!("  {established}"));
        }
        lines.push(format!("  configured as {:?}", self.server));
        if let Some(origin) = &self.origin {
            lines.push(format!("  origin {origin}"));
        }
        if let Some(command) = &self.command {
            lines.push(format!("  command {command}"));
        }
        let claimed: Vec<String> = [
            self.claimed
                .publisher
                .as_ref()
                .map(|p| format!("publisher {p:?}")),
            self.claimed
                .server_name
                .as_ref()
                .map(|n| format!("serverInfo {n:?}")),
            self.claimed
                .server_version
                .as_ref()
                .map(|v| format!("version {v:?}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !claimed.is_empty() {
            lines.push(format!("  claimed (not verified): {}", claimed.join(", ")));
        }
        lines
    }
}

/// What an elicitation asks for, after the policy looked at it.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum PromptBody {
    Form {
        schema: FormSchema,
        /// Pre-filled answers: the schema's defaults.
        defaults: Map<String, Value>,
        fields: Vec<FieldCheck>,
    },
    Url {
        /// Exactly what will be opened, and the host to highlight.
        display: UrlDisplay,
    },
    /// A form whose schema is outside MCP's subset: shown as a note, never half-rendered.
    Unsupported { detail: String },
}

impl PromptBody {
    pub fn mode(&self) -> gatehouse_policy::Mode {
        match self {
            PromptBody::Form { .. } | PromptBody::Unsupported { .. } => {
                gatehouse_policy::Mode::Form
            }
            PromptBody::Url { .. } => gatehouse_policy::Mode::Url,
        }
    }
}

/// One elicitation as the user sees it.
#[derive(Debug, Clone, Serialize)]
pub struct Prompt {
    /// Unique in this process; UIs refer to prompts by it.
    pub id: u64,
    pub receipt_id: String,
    pub server: String,
    pub banner: IdentityBanner,
    pub era: Era,
    /// The server's message: plain text.
    pub message: String,
    /// The request that caused it, e.g. `tools/call "book_table"`.
    pub origin: Option<String>,
    /// Which downstream client (through the gateway) caused it, as far as the host can tell:
    /// a client is named only when the elicitation is tied to that client's request alone;
    /// with several clients' requests in flight on a transport that cannot say which one it
    /// belongs to, it is `unknown` and lists them.
    pub attribution: crate::caller::Attribution,
    pub assessment: Assessment,
    pub body: PromptBody,
    /// From the elicitation's arrival to this prompt being ready: the host's own latency,
    /// excluding the human (benchmarked).
    #[serde(skip)]
    pub ready_in: std::time::Duration,
}

impl Prompt {
    /// Whether the user is asked at all: allowed, or a hold the policy lets them override.
    pub fn askable(&self) -> bool {
        self.assessment.is_allowed() || self.assessment.override_allowed
    }
}

/// The user's answer to a prompt.
#[derive(Debug, Clone, PartialEq)]
pub enum ConsentReply {
    /// Submit the form with these answers (already reviewed by the user).
    Submit(Map<String, Value>),
    /// Open the URL in the system browser.
    Open,
    Decline,
    Cancel,
}

/// A reply plus whether the user explicitly overrode a hold. A hold is never overridden by a
/// plain Submit/Open: the UI must ask separately.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsentAnswer {
    pub reply: ConsentReply,
    pub override_hold: bool,
}

impl ConsentAnswer {
    pub fn plain(reply: ConsentReply) -> ConsentAnswer {
        ConsentAnswer {
            reply,
            override_hold: false,
        }
    }
}

/// What the host waits for after a URL was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitPhase {
    /// 2025-11-25: `notifications/elicitation/complete`; the call is retried automatically.
    Completion,
    /// 2026-07-28: nothing will arrive; the user retries when done.
    Retry,
    /// 2025-11-25 `elicitation/create`: the tool call that asked is still running and ends
    /// when the server hears back; the user can only cancel it (there is nothing to retry).
    InCall,
}

/// The user's choice while a URL flow is pending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitChoice {
    Retry,
    Cancel,
}

/// Progress of a prompt after it was answered, for UIs that keep cards on screen.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "update", rename_all = "snake_case")]
pub enum PromptUpdate {
    /// The policy refused the elicitation (or a hold was not overridden): show what and why.
    Refused { prompt: Box<Prompt> },
    /// The URL was handed to the system browser; waiting.
    Opened { prompt_id: u64, phase: WaitPhase },
    /// The correlated completion arrived (or the retried request succeeded).
    Completed { prompt_id: u64, via: CardVia },
    /// The originating tool call finished: its result, attached to the prompt.
    Result {
        prompt_id: u64,
        is_error: bool,
        text: String,
    },
    /// The prompt ended without completing (cancelled, timed out, connection closed).
    Closed {
        prompt_id: u64,
        outcome: CloseReason,
    },
    /// An answer broke the schema; nothing was sent.
    Invalid {
        prompt_id: u64,
        problems: Vec<FieldError>,
    },
    /// The server abused the elicitation channel: the connection was closed and the server
    /// suspended.
    Suspended { server: String, detail: String },
}

/// How a card learned its URL flow completed, as the window and the terminal name it.
///
/// The audit record's [`CompletedVia`] says the same thing in the log's own words
/// (`retried_request_succeeded`); the card has always said `result`, so it keeps its own codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CardVia {
    /// The server's `notifications/elicitation/complete`.
    Notification,
    /// The retried request succeeded.
    Result,
}

impl CardVia {
    pub fn as_str(self) -> &'static str {
        match self {
            CardVia::Notification => "notification",
            CardVia::Result => "result",
        }
    }
}

impl std::fmt::Display for CardVia {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<CompletedVia> for CardVia {
    fn from(via: CompletedVia) -> CardVia {
        match via {
            CompletedVia::Notification => CardVia::Notification,
            CompletedVia::RetriedRequestSucceeded => CardVia::Result,
        }
    }
}

/// Why a card closed without completing, with what its sentence needs. Its [`Display`] is
/// the one place each reason is worded: the window, the terminal and the receipt's note all
/// show that text.
///
/// [`Display`]: std::fmt::Display
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum CloseReason {
    /// Nobody answered within the human timeout.
    HumanTimeout { after: Duration },
    /// The kill switch closed the session.
    SessionKilled,
    /// The connection to the server closed.
    ConnectionClosed,
    /// The server withdrew the request that asked (or that request's connection ended).
    RequestWithdrawn,
    /// The call the prompt belongs to failed (cancelled, timed out, refused): its error text.
    CallFailed { error: String },
    /// The future asking was dropped: the call it belongs to was abandoned.
    Abandoned,
    /// The server was suspended for elicitation abuse.
    ServerSuspended { detail: String },
}

/// The stable code of a [`CloseReason`], for the window to tell reasons apart without reading
/// the sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CloseCode {
    HumanTimeout,
    SessionKilled,
    ConnectionClosed,
    RequestWithdrawn,
    CallFailed,
    Abandoned,
    ServerSuspended,
}

impl CloseCode {
    pub fn as_str(self) -> &'static str {
        match self {
            CloseCode::HumanTimeout => "human_timeout",
            CloseCode::SessionKilled => "session_killed",
            CloseCode::ConnectionClosed => "connection_closed",
            CloseCode::RequestWithdrawn => "request_withdrawn",
            CloseCode::CallFailed => "call_failed",
            CloseCode::Abandoned => "abandoned",
            CloseCode::ServerSuspended => "server_suspended",
        }
    }
}

impl CloseReason {
    pub fn code(&self) -> CloseCode {
        match self {
            CloseReason::HumanTimeout { .. } => CloseCode::HumanTimeout,
            CloseReason::SessionKilled => CloseCode::SessionKilled,
            CloseReason::ConnectionClosed => CloseCode::ConnectionClosed,
            CloseReason::RequestWithdrawn => CloseCode::RequestWithdrawn,
            CloseReason::CallFailed { .. } => CloseCode::CallFailed,
            CloseReason::Abandoned => CloseCode::Abandoned,
            CloseReason::ServerSuspended { .. } => CloseCode::ServerSuspended,
        }
    }
}

impl std::fmt::Display for CloseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CloseReason::HumanTimeout { after } => {
                write!(f, "no answer within {} s; cancelled", after.as_secs_f64())
            }
            CloseReason::SessionKilled => f.write_str("the session was killed; cancelled"),
            CloseReason::ConnectionClosed => f.write_str("the connection was closed; cancelled"),
            CloseReason::RequestWithdrawn => {
                f.write_str("the server withdrew the request, or its connection ended; cancelled")
            }
            CloseReason::CallFailed { error } => f.write_str(error),
            CloseReason::Abandoned => {
                f.write_str("the request it belongs to was abandoned; cancelled")
            }
            CloseReason::ServerSuspended { detail } => {
                write!(f, "the server was suspended: {detail}")
            }
        }
    }
}

/// A consent front end: the terminal, an answers file, the desktop app.
pub trait ConsentUi: Send + Sync {
    /// Shows `prompt` and waits for the user. `problems` is non-empty when the previous answer
    /// to this same prompt broke the schema. Called one prompt at a time, in arrival order.
    fn ask<'a>(
        &'a self,
        prompt: &'a Prompt,
        problems: &'a [FieldError],
    ) -> UiFuture<'a, ConsentAnswer>;

    /// After a URL was opened: resolves when the user chooses Retry or Cancel. It may never
    /// resolve; the host also ends the wait on completion or the human timeout.
    fn waiting(&self, prompt_id: u64, phase: WaitPhase) -> UiFuture<'_, WaitChoice>;

    /// A prompt changed state.
    fn update(&self, update: PromptUpdate);
}

/// Hands a URL to the system browser: never a shell, never a webview of the app.
pub trait UrlOpener: Send + Sync {
    fn open(&self, url: &str) -> Result<(), String>;
}

/// The system browser through `webbrowser` (built `hardened`: http and https only). It honours
/// `$BROWSER`, which is how tests record what was opened.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemBrowser;

impl UrlOpener for SystemBrowser {
    fn open(&self, url: &str) -> Result<(), String> {
        let options = {
            let mut options = webbrowser::BrowserOptions::new();
            options.with_suppress_output(true);
            options
        };
        webbrowser::open_browser_with_options(webbrowser::Browser::Default, url, &options)
            .map_err(|e| format!("the system browser could not open the URL: {e}"))
    }
}

/// One entry of an answers file.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedEntry {
    pub mode: ScriptedMode,
    pub action: ScriptedAction,
    /// Form answers; merged over the schema's defaults (a `null` removes a default).
    #[serde(default)]
    pub content: Option<Map<String, Value>>,
    /// Explicitly override a hold the policy allows overriding.
    #[serde(default, rename = "override")]
    pub override_hold: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptedMode {
    Form,
    Url,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptedAction {
    Accept,
    Decline,
    Cancel,
}

/// Consent from an answers file: a JSON list consumed in order, one entry per prompt the user
/// would have been asked. For tests and automation.
///
/// A prompt whose mode does not match the next entry, or that finds the list exhausted, is
/// cancelled, and the mismatch is reported in [`ScriptedConsent::notes`]. An invalid form
/// answer is not retried (that would consume the next entry): the prompt is cancelled.
/// While a URL flow waits: for a completion, the scripted user waits (5 s by default) and then
/// retries; for a 2026-07-28 retry, they retry after `retry_after`, doubling each time (up to
/// 32×).
pub struct ScriptedConsent {
    entries: Mutex<VecDeque<(usize, ScriptedEntry)>>,
    notes: Mutex<Vec<String>>,
    updates: Mutex<Vec<PromptUpdate>>,
    waits: Mutex<std::collections::HashMap<u64, u32>>,
    retry_after: Duration,
    completion_patience: Duration,
}

impl ScriptedConsent {
    pub fn new(entries: Vec<ScriptedEntry>) -> ScriptedConsent {
        ScriptedConsent {
            entries: Mutex::new(
                entries
                    .into_iter()
                    .enumerate()
                    .map(|(i, e)| (i + 1, e))
                    .collect(),
            ),
            notes: Mutex::new(Vec::new()),
            updates: Mutex::new(Vec::new()),
            waits: Mutex::new(std::collections::HashMap::new()),
            retry_after: Duration::from_millis(500),
            completion_patience: Duration::from_secs(5),
        }
    }

    pub fn with_retry_after(mut self, after: Duration) -> ScriptedConsent {
        self.retry_after = after;
        self
    }

    /// How long the scripted user waits for a completion notification before pressing Retry.
    pub fn with_completion_patience(mut self, patience: Duration) -> ScriptedConsent {
        self.completion_patience = patience;
        self
    }

    /// Parses an answers file; the error names the file and what is wrong.
    pub fn parse(text: &str, source: &str) -> Result<ScriptedConsent, String> {
        let entries: Vec<ScriptedEntry> = serde_json::from_str(text).map_err(|e| {
            format!(
                "the answers file {source} is not a JSON list of {{\"mode\": \"form\"|\"url\", \"action\": \"accept\"|\"decline\"|\"cancel\", \"content\": {{...}}}} entries: {e}"
            )
        })?;
        for (i, entry) in entries.iter().enumerate() {
            if entry.content.is_some()
                && (entry.mode != ScriptedMode::Form || entry.action != ScriptedAction::Accept)
            {
                return Err(format!(
                    "the answers file {source}, entry {}: \"content\" is only for an accepted form",
                    i + 1
                ));
            }
        }
        Ok(ScriptedConsent::new(entries))
    }

    pub fn load(path: &Path) -> Result<ScriptedConsent, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the answers file {}: {e}", path.display()))?;
        ScriptedConsent::parse(&text, &path.display().to_string())
    }

    /// Mismatches and exhaustion, for the caller to report.
    pub fn notes(&self) -> Vec<String> {
        self.notes.lock().expect("notes poisoned").clone()
    }

    /// Every update the host sent, in order.
    pub fn updates(&self) -> Vec<PromptUpdate> {
        self.updates.lock().expect("updates poisoned").clone()
    }

    /// Entries not consumed.
    pub fn remaining(&self) -> usize {
        self.entries.lock().expect("entries poisoned").len()
    }

    fn note(&self, note: String) {
        self.notes.lock().expect("notes poisoned").push(note);
    }

    fn next_answer(&self, prompt: &Prompt, problems: &[FieldError]) -> ConsentAnswer {
        if !problems.is_empty() {
            self.note(format!(
                "prompt {}: the answers broke the form's schema ({}); cancelled",
                prompt.id,
                problems
                    .iter()
                    .map(|p| format!("{}: {}", p.field, p.problem))
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
            return ConsentAnswer::plain(ConsentReply::Cancel);
        }
        let Some((number, entry)) = self.entries.lock().expect("entries poisoned").pop_front()
        else {
            self.note(format!(
                "prompt {}: the answers file has no entry left; cancelled",
                prompt.id
            ));
            return ConsentAnswer::plain(ConsentReply::Cancel);
        };
        let wanted = match prompt.body {
            PromptBody::Url { .. } => ScriptedMode::Url,
            PromptBody::Form { .. } | PromptBody::Unsupported { .. } => ScriptedMode::Form,
        };
        if entry.mode != wanted {
            self.note(format!(
                "prompt {}: answers file entry {number} is for a {:?} elicitation but the server asked for a {:?} one; cancelled",
                prompt.id, entry.mode, wanted
            ));
            return ConsentAnswer::plain(ConsentReply::Cancel);
        }
        let reply = match (entry.action, &prompt.body) {
            (ScriptedAction::Decline, _) => ConsentReply::Decline,
            (ScriptedAction::Cancel, _) => ConsentReply::Cancel,
            (ScriptedAction::Accept, PromptBody::Url { .. }) => ConsentReply::Open,
            (ScriptedAction::Accept, PromptBody::Form { defaults, .. }) => {
                let mut content = defaults.clone();
                for (key, value) in entry.content.unwrap_or_default() {
                    if value.is_null() {
                        content.remove(&key);
                    } else {
                        content.insert(key, value);
                    }
                }
                ConsentReply::Submit(content)
            }
            (ScriptedAction::Accept, PromptBody::Unsupported { .. }) => ConsentReply::Cancel,
        };
        ConsentAnswer {
            reply,
            override_hold: entry.override_hold,
        }
    }
}

impl ConsentUi for ScriptedConsent {
    fn ask<'a>(
        &'a self,
        prompt: &'a Prompt,
        problems: &'a [FieldError],
    ) -> UiFuture<'a, ConsentAnswer> {
        let answer = self.next_answer(prompt, problems);
        Box::pin(async move { answer })
    }

    fn waiting(&self, prompt_id: u64, phase: WaitPhase) -> UiFuture<'_, WaitChoice> {
        Box::pin(async move {
            match phase {
                // Waits for the completion; a server that never sends one (it may not: the
                // notification is optional) gets a Retry after a while, as a person would.
                WaitPhase::Completion => {
                    tokio::time::sleep(self.completion_patience).await;
                    WaitChoice::Retry
                }
                // Never chooses: the running call's own result ends the wait.
                WaitPhase::InCall => std::future::pending().await,
                WaitPhase::Retry => {
                    // Back off: the first retry comes quickly, later ones less often, so a
                    // slow page still completes within the round limit.
                    let waits = {
                        let mut waits = self.waits.lock().expect("waits poisoned");
                        let n = waits.entry(prompt_id).or_insert(0);
                        *n += 1;
                        *n
                    };
                    let factor = 1u32 << (waits - 1).min(5);
                    tokio::time::sleep(self.retry_after * factor).await;
                    WaitChoice::Retry
                }
            }
        })
    }

    fn update(&self, update: PromptUpdate) {
        self.updates.lock().expect("updates poisoned").push(update);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every reason, its code and the exact sentence the card has always shown.
    fn reasons() -> Vec<(CloseReason, &'static str, &'static str)> {
        vec![
            (
                CloseReason::HumanTimeout {
                    after: Duration::from_millis(500),
                },
                "human_timeout",
                "no answer within 0.5 s; cancelled",
            ),
            (
                CloseReason::HumanTimeout {
                    after: Duration::from_secs(300),
                },
                "human_timeout",
                "no answer within 300 s; cancelled",
            ),
            (
                CloseReason::SessionKilled,
                "session_killed",
                "the session was killed; cancelled",
            ),
            (
                CloseReason::ConnectionClosed,
                "connection_closed",
                "the connection was closed; cancelled",
            ),
            (
                CloseReason::RequestWithdrawn,
                "request_withdrawn",
                "the server withdrew the request, or its connection ended; cancelled",
            ),
            (
                CloseReason::CallFailed {
                    error: "demo: cancelled tools/call \"x\"".into(),
                },
                "call_failed",
                "demo: cancelled tools/call \"x\"",
            ),
            (
                CloseReason::Abandoned,
                "abandoned",
                "the request it belongs to was abandoned; cancelled",
            ),
            (
                CloseReason::ServerSuspended {
                    detail: "5 denials".into(),
                },
                "server_suspended",
                "the server was suspended: 5 denials",
            ),
        ]
    }

    #[test]
    fn each_close_reason_has_its_code_and_its_sentence() {
        for (reason, code, text) in reasons() {
            assert_eq!(reason.code().as_str(), code, "{reason:?}");
            assert_eq!(
                serde_json::to_value(reason.code()).unwrap(),
                Value::String(code.into()),
                "{reason:?}"
            );
            assert_eq!(
                serde_json::to_value(&reason).unwrap()["reason"],
                Value::String(code.into()),
                "{reason:?}"
            );
            assert_eq!(reason.to_string(), text, "{reason:?}");
        }
    }

    #[test]
    fn close_codes_tell_the_reasons_apart() {
        let mut codes: Vec<&str> = reasons()
            .iter()
            .map(|(r, _, _)| r.code().as_str())
            .collect();
        codes.sort();
        codes.dedup();
        // The two timeouts share one code; every other reason has its own.
        assert_eq!(codes.len(), reasons().len() - 1, "{codes:?}");
    }

    #[test]
    fn card_via_keeps_the_windows_words() {
        for (via, code) in [
            (CompletedVia::Notification, "notification"),
            (CompletedVia::RetriedRequestSucceeded, "result"),
        ] {
            let card = CardVia::from(via);
            assert_eq!(card.as_str(), code);
            assert_eq!(card.to_string(), code);
            assert_eq!(
                serde_json::to_value(card).unwrap(),
                Value::String(code.into())
            );
        }
        // The log's word is not the card's.
        assert_ne!(
            serde_json::to_value(CompletedVia::RetriedRequestSucceeded).unwrap(),
            serde_json::to_value(CardVia::Result).unwrap()
        );
    }
}
