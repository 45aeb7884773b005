//! The consent UI of a gateway with no person at hand (`gatehouse serve` without the desktop
//! app): every elicitation is declined. The broker has already judged it, written its receipt
//! and told the server `decline`; nothing is forwarded to the downstream client, whose own UI
//! could not show the verified identity banner, so a model's client can never answer for the
//! person. A line on stderr (the client's log) says what was declined, and the call's result
//! says so to the client ([`absent_person_note`]): the gateway asks [`HeadlessConsent::take`]
//! for each elicitation its call caused, by prompt id, so the note goes to exactly that call.

use std::collections::BTreeMap;
use std::future::ready;
use std::sync::Mutex;

use gatehouse_host::consent::{
    ConsentAnswer, ConsentReply, PromptBody, PromptUpdate, UiFuture, WaitChoice, WaitPhase,
};
use gatehouse_host::host::FieldError;
use gatehouse_host::{ConsentUi, Prompt};

/// How many declined prompts are remembered for their calls. A prompt whose call never came
/// back for it (cancelled, or its client gone) is forgotten oldest first past this.
pub const DECLINED_KEPT: usize = 1024;

/// What a call needed the person for and did not get (a closed set; never server text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unanswered {
    /// A form (a form-mode elicitation).
    Form,
    /// A page to open (a URL-mode elicitation).
    Url,
    /// Signing in to the server (MCP authorization).
    SignIn,
}

impl Unanswered {
    /// The stable code.
    pub fn as_str(self) -> &'static str {
        match self {
            Unanswered::Form => "form",
            Unanswered::Url => "url",
            Unanswered::SignIn => "sign_in",
        }
    }

    /// As the note words it.
    fn phrase(self) -> &'static str {
        match self {
            Unanswered::Form => "a form to fill in",
            Unanswered::Url => "a web page to open (URL)",
            Unanswered::SignIn => "signing in to the server",
        }
    }
}

/// Declines every prompt; ends every URL wait; remembers which prompts it declined.
#[derive(Debug, Default)]
pub struct HeadlessConsent {
    /// Prompt id -> what it asked for; ids only grow, so the first entry is the oldest.
    declined: Mutex<BTreeMap<u64, Unanswered>>,
}

impl HeadlessConsent {
    pub fn new() -> HeadlessConsent {
        HeadlessConsent::default()
    }

    /// What prompt `prompt_id` asked for, when this UI declined it; forgotten once taken.
    pub fn take(&self, prompt_id: u64) -> Option<Unanswered> {
        self.declined
            .lock()
            .expect("declined prompts poisoned")
            .remove(&prompt_id)
    }

    fn remember(&self, prompt_id: u64, kind: Unanswered) {
        let mut declined = self.declined.lock().expect("declined prompts poisoned");
        declined.insert(prompt_id, kind);
        while declined.len() > DECLINED_KEPT {
            declined.pop_first();
        }
    }
}

impl ConsentUi for HeadlessConsent {
    fn ask<'a>(
        &'a self,
        prompt: &'a Prompt,
        _problems: &'a [FieldError],
    ) -> UiFuture<'a, ConsentAnswer> {
        let kind = match prompt.body {
            PromptBody::Url { .. } => Unanswered::Url,
            PromptBody::Form { .. } | PromptBody::Unsupported { .. } => Unanswered::Form,
        };
        self.remember(prompt.id, kind);
        eprintln!(
            "gatehouse serve: declined an elicitation from {:?} (prompt {}): no consent UI is running; open the Gatehouse app to answer elicitations",
            prompt.server, prompt.id
        );
        Box::pin(ready(ConsentAnswer::plain(ConsentReply::Decline)))
    }

    fn waiting(&self, _prompt_id: u64, _phase: WaitPhase) -> UiFuture<'_, WaitChoice> {
        Box::pin(ready(WaitChoice::Cancel))
    }

    fn update(&self, _update: PromptUpdate) {}
}

/// The words a call's result carries when it needed the person and the app was not there to
/// ask them: which server (its configured name), what it needed, and how to start the app.
/// Built from Gatehouse's own words only: nothing the server said.
pub fn absent_person_note(server: &str, needed: &[Unanswered]) -> String {
    let mut kinds: Vec<Unanswered> = needed.to_vec();
    kinds.sort();
    kinds.dedup();
    let what = kinds
        .iter()
        .map(|k| k.phrase())
        .collect::<Vec<_>>()
        .join(" and ");
    format!(
        "Gatehouse could not ask the person: the Gatehouse app is not running. The server \
         {server:?} needed {what}, which Gatehouse declined for them. Ask the person to start \
         Gatehouse (run `gatehouse-desktop`, or open Gatehouse from the applications menu), \
         then call this tool again."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declined_prompt_is_taken_once_and_the_oldest_go_past_the_bound() {
        let ui = HeadlessConsent::new();
        ui.remember(7, Unanswered::Url);
        assert_eq!(ui.take(7), Some(Unanswered::Url));
        assert_eq!(ui.take(7), None, "taken once");
        assert_eq!(ui.take(8), None, "never declined");
        for id in 0..(DECLINED_KEPT as u64 + 10) {
            ui.remember(id, Unanswered::Form);
        }
        assert_eq!(ui.take(0), None, "the oldest was forgotten");
        assert_eq!(ui.take(DECLINED_KEPT as u64 + 9), Some(Unanswered::Form));
    }

    #[test]
    fn the_note_names_the_server_and_the_kinds_once_and_how_to_start_the_app() {
        let note = absent_person_note(
            "demo",
            &[Unanswered::Url, Unanswered::Form, Unanswered::Url],
        );
        assert!(note.contains("the Gatehouse app is not running"), "{note}");
        assert!(note.contains("\"demo\""), "{note}");
        assert_eq!(note.matches("URL").count(), 1, "{note}");
        assert!(note.contains("a form to fill in and a web page"), "{note}");
        assert!(note.contains("gatehouse-desktop"), "{note}");
        assert!(note.contains("call this tool again"), "{note}");
        let sign_in = absent_person_note("mail", &[Unanswered::SignIn]);
        assert!(sign_in.contains("signing in"), "{sign_in}");
        assert!(!sign_in.contains("form"), "{sign_in}");
    }
}
