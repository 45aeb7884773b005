//! Consent on the terminal: prompts on stderr, answers from the controlling terminal
//! (`/dev/tty`), never from standard input. Whatever runs the command can write to its stdin
//! (an agent with a shell tool piping `y` into `gatehouse call`), so stdin is not the person;
//! without a controlling terminal every question is declined (a sign-in cancelled), and
//! `--answers FILE` is the one explicit way to answer without one. Server text is printed
//! through `output::safe_line` (control characters and escapes neutralized), never
//! interpreted; the identity banner comes from the host.

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::sync::Mutex;

use gatehouse_host::consent::{
    ConsentAnswer, ConsentReply, ConsentUi, Prompt, PromptBody, PromptUpdate, UiFuture, WaitChoice,
    WaitPhase,
};
use gatehouse_policy::form::{Field, FieldKind};
use gatehouse_policy::{Decision, FieldError};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::output::safe_line;
use gatehouse_host::auth::{SignInAnswer, SignInCode, SignInReason, SignInRequest, SignInUi};

/// The controlling terminal's device: what the person at it types, whatever stdin is.
#[cfg(unix)]
const TERMINAL: &str = "/dev/tty";
#[cfg(windows)]
const TERMINAL: &str = "CONIN$";

/// Where answers come from. The terminal is opened at the first question, not before, so a
/// command that never asks never reads it.
enum Answers {
    Unopened,
    /// Lines from the terminal, read by one thread for the whole process so that an abandoned
    /// wait never leaves a stray reader behind.
    Terminal(mpsc::UnboundedReceiver<String>),
    /// There is no controlling terminal (or it cannot be read): why, for the refusal.
    Missing(String),
}

/// Asks the person at the controlling terminal.
pub struct TerminalConsent {
    answers: tokio::sync::Mutex<Answers>,
    color: bool,
    /// Refused prompts already printed (a refusal is reported once).
    printed: Mutex<Vec<u64>>,
}

/// Opens the controlling terminal and starts its reader. Fails when the process has none (a
/// pipe, a daemon, an agent's shell tool: `setsid`, no tty) or cannot read it.
fn open_terminal() -> std::io::Result<mpsc::UnboundedReceiver<String>> {
    let terminal = std::fs::File::open(TERMINAL)?;
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("consent-terminal".into())
        .spawn(move || {
            for line in BufReader::new(terminal).lines() {
                match line {
                    Ok(line) => {
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                    Err(_) => return,
                }
            }
            // End of input (Ctrl-D, the terminal hung up): the channel closes, and every later
            // question reads as cancel.
        })?;
    Ok(rx)
}

impl Default for TerminalConsent {
    fn default() -> Self {
        Self::new()
    }
}

impl TerminalConsent {
    /// The one terminal of this process: every question (consent and sign-in) reads the same
    /// controlling terminal through the same reader.
    pub fn shared() -> std::sync::Arc<TerminalConsent> {
        static SHARED: std::sync::OnceLock<std::sync::Arc<TerminalConsent>> =
            std::sync::OnceLock::new();
        SHARED
            .get_or_init(|| std::sync::Arc::new(TerminalConsent::new()))
            .clone()
    }

    fn new() -> TerminalConsent {
        TerminalConsent {
            answers: tokio::sync::Mutex::new(Answers::Unopened),
            color: std::io::stderr().is_terminal(),
            printed: Mutex::new(Vec::new()),
        }
    }

    /// Whether there is a person to ask: the controlling terminal, opened on first use. `Err`
    /// says why not (the process has no controlling terminal).
    async fn terminal(&self) -> Result<(), String> {
        let mut answers = self.answers.lock().await;
        if matches!(*answers, Answers::Unopened) {
            *answers = match open_terminal() {
                Ok(lines) => Answers::Terminal(lines),
                Err(e) => Answers::Missing(format!("{TERMINAL}: {e}")),
            };
        }
        match &*answers {
            Answers::Missing(why) => Err(why.clone()),
            _ => Ok(()),
        }
    }

    /// Asks `question` and reads one line typed at the terminal; `None` at the end of input or
    /// without a terminal.
    async fn read(&self, question: &str) -> Option<String> {
        if self.terminal().await.is_err() {
            return None;
        }
        eprint!("{question} ");
        let _ = std::io::stderr().flush();
        match &mut *self.answers.lock().await {
            Answers::Terminal(lines) => lines.recv().await.map(|l| l.trim().to_string()),
            _ => None,
        }
    }

    fn bold(&self, text: &str) -> String {
        if self.color {
            format!("\x1b[1m{text}\x1b[0m")
        } else {
            format!("[{text}]")
        }
    }

    fn header(&self, prompt: &Prompt) {
        eprintln!();
        eprintln!(
            "──── elicitation #{} from {} ────",
            prompt.id,
            safe_line(&prompt.server)
        );
        for line in prompt.banner.lines() {
            eprintln!("{}", safe_line(&line));
        }
        if let Some(origin) = &prompt.origin {
            eprintln!("caused by: {}", safe_line(origin));
        }
        // A client is named only when the elicitation is tied to its call alone; otherwise
        // the line says Gatehouse cannot tell which one caused it.
        if let Some(sentence) = prompt.attribution.sentence() {
            eprintln!("AI client: {}", safe_line(&sentence));
        }
        eprintln!(
            "the server says (its own words): {}",
            safe_line(&prompt.message)
        );
    }

    fn reasons(&self, prompt: &Prompt) {
        eprintln!("policy decision: {}", prompt.assessment.decision);
        for reason in &prompt.assessment.reasons {
            eprintln!("  - {}: {}", reason.code, safe_line(&reason.detail));
        }
    }

    fn show_url(&self, prompt: &Prompt) {
        if let PromptBody::Url { display } = &prompt.body {
            eprintln!(
                "URL (exactly what will be opened): {}",
                safe_line(&display.full)
            );
            eprintln!("host: {}", self.bold(&safe_line(&display.host)));
            if display.host_unicode != display.host {
                eprintln!(
                    "WARNING: the host is internationalized; it displays as {} but is {}",
                    safe_line(&display.host_unicode),
                    safe_line(&display.host)
                );
            }
        }
    }

    async fn ask_field(&self, field: &Field, current: Option<&Value>) -> Option<Option<Value>> {
        let label = field.title.as_deref().unwrap_or(&field.name);
        let mut hint = String::new();
        match &field.kind {
            FieldKind::Text { format, .. } => {
                if let Some(format) = format {
                    hint = format!(" ({format:?})").to_lowercase();
                }
            }
            FieldKind::Number {
                integer,
                minimum,
                maximum,
            } => {
                hint = format!(
                    " ({}{}{})",
                    if *integer { "integer" } else { "number" },
                    minimum.map(|m| format!(", min {m}")).unwrap_or_default(),
                    maximum.map(|m| format!(", max {m}")).unwrap_or_default()
                );
            }
            FieldKind::Boolean => hint = " (y/n)".into(),
            FieldKind::Select { choices } => {
                hint = format!(
                    " (one of: {})",
                    choices
                        .iter()
                        .map(|c| format!("{} = {}", safe_line(&c.value), safe_line(&c.title)))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            FieldKind::MultiSelect { choices, .. } => {
                hint = format!(
                    " (comma-separated, from: {})",
                    choices
                        .iter()
                        .map(|c| format!("{} = {}", safe_line(&c.value), safe_line(&c.title)))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        if let Some(description) = &field.description {
            eprintln!("  {}", safe_line(description));
        }
        let shown = current
            .map(|v| format!(" [{}]", safe_line(&v.to_string())))
            .unwrap_or_default();
        let required = if field.required { " *" } else { "" };
        let line = self
            .read(&format!("{}{required}{hint}{shown}:", safe_line(label)))
            .await?;
        if line.is_empty() {
            return Some(current.cloned());
        }
        if line == "-" {
            return Some(None);
        }
        Some(Some(match &field.kind {
            FieldKind::Text { .. } | FieldKind::Select { .. } => Value::String(line),
            FieldKind::Number { .. } => serde_json::from_str::<Value>(&line)
                .ok()
                .filter(Value::is_number)
                .unwrap_or(Value::String(line)),
            FieldKind::Boolean => match line.to_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => Value::String(line),
            },
            FieldKind::MultiSelect { .. } => Value::Array(
                line.split(',')
                    .map(|s| Value::String(s.trim().to_string()))
                    .filter(|v| v.as_str() != Some(""))
                    .collect(),
            ),
        }))
    }

    async fn ask_form(
        &self,
        prompt: &Prompt,
        fields: &[Field],
        defaults: &Map<String, Value>,
    ) -> ConsentAnswer {
        let mut content = defaults.clone();
        loop {
            eprintln!("Fill in the form (Enter keeps the value shown, '-' clears it):");
            for field in fields {
                match self.ask_field(field, content.get(&field.name)).await {
                    None => return ConsentAnswer::plain(ConsentReply::Cancel),
                    Some(Some(value)) => {
                        content.insert(field.name.clone(), value);
                    }
                    Some(None) => {
                        content.remove(&field.name);
                    }
                }
            }
            eprintln!("You are about to send to {}:", safe_line(&prompt.server));
            for (key, value) in &content {
                eprintln!("  {} = {}", safe_line(key), safe_line(&value.to_string()));
            }
            let Some(choice) = self.read("[s]ubmit, [e]dit, [d]ecline or [c]ancel?").await else {
                return ConsentAnswer::plain(ConsentReply::Cancel);
            };
            match choice.to_lowercase().as_str() {
                "s" | "submit" => {
                    return self
                        .confirm_override(prompt, ConsentReply::Submit(content))
                        .await;
                }
                "e" | "edit" => continue,
                "d" | "decline" => return ConsentAnswer::plain(ConsentReply::Decline),
                _ => return ConsentAnswer::plain(ConsentReply::Cancel),
            }
        }
    }

    /// A held prompt needs the word "override" typed, on top of the ordinary consent.
    async fn confirm_override(&self, prompt: &Prompt, reply: ConsentReply) -> ConsentAnswer {
        if prompt.assessment.decision != Decision::HoldForElicitationEvidence {
            return ConsentAnswer::plain(reply);
        }
        eprintln!("The policy HOLDS this elicitation for the reasons above; you may override it.");
        let typed = self.read("Type 'override' to go ahead anyway:").await;
        if typed.as_deref() == Some("override") {
            ConsentAnswer {
                reply,
                override_hold: true,
            }
        } else {
            ConsentAnswer::plain(ConsentReply::Decline)
        }
    }
}

impl ConsentUi for TerminalConsent {
    fn ask<'a>(
        &'a self,
        prompt: &'a Prompt,
        problems: &'a [FieldError],
    ) -> UiFuture<'a, ConsentAnswer> {
        Box::pin(async move {
            self.header(prompt);
            if !prompt.assessment.is_allowed() {
                self.reasons(prompt);
            }
            self.show_url(prompt);
            if let PromptBody::Form { .. } | PromptBody::Url { .. } = &prompt.body
                && let Err(why) = self.terminal().await
            {
                eprintln!(
                    "DECLINED: there is no terminal to ask on ({}). Answers are read only from the controlling terminal, never from standard input. Run the command in a terminal, or answer from a file with --answers FILE.",
                    safe_line(&why)
                );
                return ConsentAnswer::plain(ConsentReply::Decline);
            }
            for problem in problems {
                eprintln!(
                    "  invalid answer for {}: {}",
                    safe_line(&problem.field),
                    safe_line(&problem.problem)
                );
            }
            match &prompt.body {
                PromptBody::Form {
                    schema, defaults, ..
                } => self.ask_form(prompt, &schema.fields, defaults).await,
                PromptBody::Url { .. } => {
                    let Some(choice) = self
                        .read("Open it in your browser? [o]pen, [d]ecline or [c]ancel:")
                        .await
                    else {
                        return ConsentAnswer::plain(ConsentReply::Cancel);
                    };
                    match choice.to_lowercase().as_str() {
                        "o" | "open" => self.confirm_override(prompt, ConsentReply::Open).await,
                        "d" | "decline" => ConsentAnswer::plain(ConsentReply::Decline),
                        _ => ConsentAnswer::plain(ConsentReply::Cancel),
                    }
                }
                PromptBody::Unsupported { .. } => ConsentAnswer::plain(ConsentReply::Cancel),
            }
        })
    }

    fn waiting(&self, prompt_id: u64, phase: WaitPhase) -> UiFuture<'_, WaitChoice> {
        Box::pin(async move {
            let question = match phase {
                WaitPhase::Completion => format!(
                    "Waiting for elicitation #{prompt_id} to complete in the browser. Press Enter to retry now, or type c to cancel:"
                ),
                WaitPhase::Retry => format!(
                    "When you are done in the browser (elicitation #{prompt_id}), press Enter to retry, or type c to cancel:"
                ),
                // Enter answers Retry, which the host takes as "keep waiting" in this phase.
                WaitPhase::InCall => format!(
                    "Waiting for elicitation #{prompt_id} to complete in the browser; the tool call goes on when it does. Type c to cancel the call, or press Enter to keep waiting:"
                ),
            };
            match self.read(&question).await {
                Some(line)
                    if line.eq_ignore_ascii_case("c") || line.eq_ignore_ascii_case("cancel") =>
                {
                    WaitChoice::Cancel
                }
                Some(_) => WaitChoice::Retry,
                // No more input while the call runs: it may still finish, so keep waiting
                // (its result, the human timeout or the request timeout ends it).
                None if phase == WaitPhase::InCall => std::future::pending().await,
                None => WaitChoice::Cancel,
            }
        })
    }

    fn update(&self, update: PromptUpdate) {
        match update {
            PromptUpdate::Refused { prompt } => {
                {
                    let mut printed = self.printed.lock().expect("printed poisoned");
                    if printed.contains(&prompt.id) {
                        return;
                    }
                    printed.push(prompt.id);
                }
                self.header(&prompt);
                self.show_url(&prompt);
                eprintln!("REFUSED: nothing was sent but a decline.");
                self.reasons(&prompt);
            }
            PromptUpdate::Opened { prompt_id, .. } => {
                eprintln!("elicitation #{prompt_id}: opened in your browser")
            }
            PromptUpdate::Completed { prompt_id, via } => {
                eprintln!("elicitation #{prompt_id}: completed ({via})")
            }
            PromptUpdate::Result {
                prompt_id,
                is_error,
                ..
            } => eprintln!(
                "elicitation #{prompt_id}: the tool call it belongs to finished{}",
                if is_error { " with an error" } else { "" }
            ),
            PromptUpdate::Closed { prompt_id, outcome } => {
                eprintln!(
                    "elicitation #{prompt_id}: closed ({})",
                    safe_line(&outcome.to_string())
                )
            }
            PromptUpdate::Invalid { .. } => {}
            PromptUpdate::Suspended { server, detail } => eprintln!(
                "{}: connection closed and server SUSPENDED for elicitation abuse: {}",
                safe_line(&server),
                safe_line(&detail)
            ),
        }
    }
}

/// The consent front end a command uses: an answers file, or the terminal.
pub enum Consent {
    Scripted(std::sync::Arc<gatehouse_host::ScriptedConsent>),
    Terminal(std::sync::Arc<TerminalConsent>),
}

impl Consent {
    pub fn new(answers: Option<&std::path::Path>) -> Result<Consent, crate::failure::Failure> {
        Ok(match answers {
            Some(path) => Consent::Scripted(std::sync::Arc::new(
                gatehouse_host::ScriptedConsent::load(path)
                    .map_err(crate::failure::Failure::usage)?,
            )),
            None => Consent::Terminal(TerminalConsent::shared()),
        })
    }

    /// The consent UI the command's host asks through.
    pub fn ui(&self) -> std::sync::Arc<dyn ConsentUi> {
        match self {
            Consent::Scripted(s) => s.clone(),
            Consent::Terminal(t) => t.clone(),
        }
    }

    /// What the answers file could not answer (mismatched or missing entries).
    pub fn notes(&self) -> Vec<String> {
        match self {
            Consent::Scripted(s) => s.notes(),
            Consent::Terminal(_) => Vec::new(),
        }
    }

    /// [`Consent::notes`], each also told on stderr in human mode (in JSON mode they go into
    /// the command's one document instead).
    pub fn notes_told(&self, json: bool) -> Vec<String> {
        let notes = self.notes();
        if !json {
            for note in &notes {
                eprintln!("gatehouse: answers file: {note}");
            }
        }
        notes
    }
}

/// Sign-in on the terminal: the whole authorization URL, its host, the authorization server
/// and the server's verified identity, then y/N before the browser opens.
impl SignInUi for TerminalConsent {
    fn approve<'a>(&'a self, request: &'a SignInRequest) -> UiFuture<'a, SignInAnswer> {
        Box::pin(async move {
            eprintln!();
            let what = match request.reason {
                SignInReason::SignIn => "sign in to",
                SignInReason::StepUp => "grant more access to",
            };
            eprintln!("──── {what} {} ────", safe_line(&request.server));
            eprintln!("server: {}", safe_line(&request.verdict));
            eprintln!("resource: {}", safe_line(&request.resource));
            eprintln!(
                "authorization server: {}",
                safe_line(request.issuer.as_deref().unwrap_or("(no issuer published)"))
            );
            if !request.scopes.is_empty() {
                eprintln!("access asked for: {}", safe_line(&request.scopes.join(" ")));
            }
            eprintln!(
                "URL (exactly what will be opened): {}",
                safe_line(&request.url)
            );
            eprintln!(
                "host: {}",
                self.bold(&safe_line(&request.authorization_host))
            );
            if let Err(why) = self.terminal().await {
                eprintln!(
                    "CANCELLED: there is no terminal to ask on ({}). A sign-in is answered only at the controlling terminal, never from standard input: run `gatehouse auth login {}` in a terminal.",
                    safe_line(&why),
                    safe_line(&request.server)
                );
                return SignInAnswer::Cancel;
            }
            match self.read("Open it in your browser to sign in? [y/N]").await {
                Some(line)
                    if line.eq_ignore_ascii_case("y") || line.eq_ignore_ascii_case("yes") =>
                {
                    SignInAnswer::Open
                }
                _ => SignInAnswer::Cancel,
            }
        })
    }

    fn waiting<'a>(&'a self, request: &'a SignInRequest) -> UiFuture<'a, ()> {
        Box::pin(async move {
            let question = format!(
                "Waiting for the sign-in to {} in your browser; type c to cancel:",
                safe_line(&request.server)
            );
            loop {
                match self.read(&question).await {
                    Some(line)
                        if line.eq_ignore_ascii_case("c")
                            || line.eq_ignore_ascii_case("cancel") =>
                    {
                        return;
                    }
                    Some(_) => continue,
                    // No more input: the browser may still finish; the timeout ends the wait.
                    None => std::future::pending::<()>().await,
                }
            }
        })
    }

    fn finished(&self, request: &SignInRequest, failure: Option<SignInCode>) {
        match failure {
            None => eprintln!("signed in to {}", safe_line(&request.server)),
            Some(code) => eprintln!(
                "sign-in to {} not completed ({})",
                safe_line(&request.server),
                code.code()
            ),
        }
    }
}
