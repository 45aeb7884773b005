//! The consent UI of a gateway with no person at hand (`gatehouse serve` without the desktop
//! app): every elicitation is declined. The broker has already judged it, written its receipt
//! and told the server `decline`; nothing is forwarded to the downstream client, whose own UI
//! could not show the verified identity banner, so a model's client can never answer for the
//! person. A line on stderr (the client's log) says what was declined.

use std::future::ready;

use gatehouse_host::consent::{
    ConsentAnswer, ConsentReply, PromptUpdate, UiFuture, WaitChoice, WaitPhase,
};
use gatehouse_host::host::FieldError;
use gatehouse_host::{ConsentUi, Prompt};

/// Declines every prompt; ends every URL wait.
#[derive(Debug, Default, Clone, Copy)]
pub struct HeadlessConsent;

impl ConsentUi for HeadlessConsent {
    fn ask<'a>(
        &'a self,
        prompt: &'a Prompt,
        _problems: &'a [FieldError],
    ) -> UiFuture<'a, ConsentAnswer> {
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
