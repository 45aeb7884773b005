//! The desktop [`ConsentUi`]: prompts live here, in Rust, as cards; the window is told that
//! something changed and fetches the cards; the user's decision comes back as a typed call
//! ([`PromptDesk::answer`], [`PromptDesk::wait_choice`]), never as a webview event. A reloaded
//! window therefore finds every pending prompt exactly as it was.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use gatehouse_policy::form::FieldError;
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::oneshot;

use gatehouse_host::ErrorCode;
use gatehouse_host::consent::{
    CardVia, CloseCode, CloseReason, ConsentAnswer, ConsentReply, ConsentUi, Prompt, PromptBody,
    PromptUpdate, UiFuture, WaitChoice, WaitPhase,
};

use super::{DeskError, DeskEvent, Notifier};

/// Where a card is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CardState {
    /// Waiting for Submit / Open / Decline / Cancel.
    Asking,
    /// The policy refused it; nothing was sent or opened.
    Refused,
    /// Answered; the call goes on.
    Answered,
    /// The URL was opened; waiting for completion or for the user's Retry.
    Waiting,
    Completed,
    /// Ended without completing.
    Closed,
}

impl CardState {
    fn finished(self) -> bool {
        match self {
            CardState::Refused | CardState::Completed | CardState::Closed => true,
            CardState::Answered => true,
            CardState::Asking | CardState::Waiting => false,
        }
    }
}

/// The originating call's result, attached to its prompt.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CardResult {
    pub is_error: bool,
    pub text: String,
}

/// One prompt as the window shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptCard {
    pub prompt: Prompt,
    pub state: CardState,
    /// Why the previous answer was not sent (it broke the schema).
    pub problems: Vec<FieldError>,
    pub phase: Option<WaitPhase>,
    /// `notification` or `result`.
    pub completed_via: Option<CardVia>,
    pub result: Option<CardResult>,
    /// Why it closed, as the card words it ([`CloseReason`]'s text).
    pub outcome: Option<String>,
    /// The same reason's stable code.
    pub outcome_code: Option<CloseCode>,
    /// Milliseconds since the epoch when it was first shown.
    pub asked_at: u64,
}

struct Slot {
    card: PromptCard,
    answer: Option<oneshot::Sender<ConsentAnswer>>,
    choice: Option<oneshot::Sender<WaitChoice>>,
    /// A choice made after the card showed it was waiting (the URL opened) but before the
    /// host's wait began: kept for that wait rather than refused, so an early Cancel is not
    /// lost. Only for the first wait, and only one.
    early: Early,
}

/// Where a card stands on choices made before the host's first wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Early {
    /// The host has not waited yet; nothing chosen.
    NotWaited,
    /// Chosen before the host waited; handed to its first wait.
    Chosen(WaitChoice),
    /// The host has waited at least once: a choice needs a wait under way.
    Waited,
}

/// The answer a window sends for an asking card.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WindowAnswer {
    pub reply: WindowReply,
    #[serde(default)]
    pub content: Option<Map<String, Value>>,
    #[serde(default)]
    pub override_hold: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowReply {
    Submit,
    Open,
    Decline,
    Cancel,
}

/// The prompts of one desktop app.
pub struct PromptDesk {
    slots: Mutex<BTreeMap<u64, Slot>>,
    notify: Notifier,
}

/// At most this many cards are kept; the oldest finished ones go first.
pub const MAX_CARDS: usize = 200;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}

impl PromptDesk {
    pub fn new(notify: Notifier) -> Arc<PromptDesk> {
        Arc::new(PromptDesk {
            slots: Mutex::new(BTreeMap::new()),
            notify,
        })
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Slot>> {
        self.slots.lock().expect("prompt desk poisoned")
    }

    /// Adds a card, dropping the oldest finished ones beyond [`MAX_CARDS`]: a server that floods
    /// refused elicitations cannot grow the desk without bound. Cards still waiting on the user
    /// are never dropped.
    fn insert(&self, id: u64, slot: Slot) {
        let mut slots = self.slots();
        slots.insert(id, slot);
        while slots.len() > MAX_CARDS {
            let Some(oldest) = slots
                .iter()
                .find(|(_, s)| s.card.state.finished())
                .map(|(id, _)| *id)
            else {
                break;
            };
            slots.remove(&oldest);
        }
    }

    fn changed(&self, prompt_id: u64, attention: bool) {
        (self.notify)(DeskEvent::Prompts {
            prompt_id,
            attention,
        });
    }

    /// Every card, oldest first.
    pub fn list(&self) -> Vec<PromptCard> {
        self.slots().values().map(|s| s.card.clone()).collect()
    }

    /// How many cards wait for the user.
    pub fn pending(&self) -> usize {
        self.slots()
            .values()
            .filter(|s| matches!(s.card.state, CardState::Asking | CardState::Waiting))
            .count()
    }

    /// The host's own validation of a form answer, for inline feedback. The same check runs
    /// again when the answer is submitted; this one decides nothing.
    pub fn validate(
        &self,
        prompt_id: u64,
        content: &Map<String, Value>,
    ) -> Result<Vec<FieldError>, DeskError> {
        let slots = self.slots();
        let slot = slots
            .get(&prompt_id)
            .ok_or_else(|| unknown_prompt(prompt_id))?;
        match &slot.card.prompt.body {
            PromptBody::Form { schema, .. } => {
                Ok(schema.validate(content).err().unwrap_or_default())
            }
            PromptBody::Url { .. } | PromptBody::Unsupported { .. } => Err(DeskError::new(
                ErrorCode::PromptNotAForm,
                format!("prompt {prompt_id} is not a form; there is nothing to validate"),
            )),
        }
    }

    /// The user's answer to an asking card.
    pub fn answer(&self, prompt_id: u64, answer: WindowAnswer) -> Result<(), DeskError> {
        let answer = {
            let mut slots = self.slots();
            let slot = slots
                .get_mut(&prompt_id)
                .ok_or_else(|| unknown_prompt(prompt_id))?;
            let reply = match (answer.reply, &slot.card.prompt.body, answer.content) {
                (WindowReply::Submit, PromptBody::Form { .. }, Some(content)) => {
                    ConsentReply::Submit(content)
                }
                (WindowReply::Submit, PromptBody::Form { .. }, None) => {
                    return Err(DeskError::new(
                        ErrorCode::AnswerInvalid,
                        "a submitted form needs its content",
                    ));
                }
                (WindowReply::Open, PromptBody::Url { .. }, None) => ConsentReply::Open,
                (WindowReply::Decline, _, None) => ConsentReply::Decline,
                (WindowReply::Cancel, _, None) => ConsentReply::Cancel,
                (reply, body, _) => {
                    return Err(DeskError::new(
                        ErrorCode::AnswerInvalid,
                        format!(
                            "{reply:?} is not an answer to a {} prompt (content only goes with a form's submit)",
                            body.mode()
                        ),
                    ));
                }
            };
            if slot.card.state != CardState::Asking {
                return Err(DeskError::new(
                    ErrorCode::PromptNotAsking,
                    format!(
                        "prompt {prompt_id} is not waiting for an answer (it is {:?})",
                        slot.card.state
                    ),
                ));
            }
            let Some(sender) = slot.answer.take() else {
                return Err(DeskError::new(
                    ErrorCode::PromptNotAsking,
                    format!("prompt {prompt_id} is no longer waiting for an answer"),
                ));
            };
            slot.card.state = CardState::Answered;
            slot.card.problems.clear();
            (
                sender,
                ConsentAnswer {
                    reply,
                    override_hold: answer.override_hold,
                },
            )
        };
        let (sender, answer) = answer;
        // The asking future is gone (timed out, connection closed): the card was closed by
        // the broker already, and the answer goes nowhere.
        let _ = sender.send(answer);
        self.changed(prompt_id, false);
        Ok(())
    }

    /// Retry or Cancel while a URL flow is pending.
    pub fn wait_choice(&self, prompt_id: u64, choice: WaitChoice) -> Result<(), DeskError> {
        let sender = {
            let mut slots = self.slots();
            let slot = slots
                .get_mut(&prompt_id)
                .ok_or_else(|| unknown_prompt(prompt_id))?;
            if slot.card.state == CardState::Waiting
                && choice == WaitChoice::Retry
                && slot.card.phase == Some(WaitPhase::InCall)
            {
                return Err(DeskError::new(
                    ErrorCode::PromptNotRetryable,
                    format!(
                        "prompt {prompt_id} cannot be retried: the tool call that asked is still running and goes on when the server hears back; wait, or cancel it"
                    ),
                ));
            }
            match (slot.card.state, slot.choice.take(), slot.early) {
                (CardState::Waiting, Some(sender), _) => sender,
                // Shown as waiting (opened) a moment before the host's wait began.
                (CardState::Waiting, None, Early::NotWaited) => {
                    slot.early = Early::Chosen(choice);
                    drop(slots);
                    self.changed(prompt_id, false);
                    return Ok(());
                }
                // A choice made early already waits for the host's first wait.
                (CardState::Waiting, None, _) => {
                    return Err(DeskError::new(
                        ErrorCode::PromptNotWaiting,
                        format!(
                            "prompt {prompt_id} already has a choice waiting for the host; wait for the card to change"
                        ),
                    ));
                }
                (state, _, _) => {
                    return Err(DeskError::new(
                        ErrorCode::PromptNotWaiting,
                        format!(
                            "prompt {prompt_id} is not waiting for completion (it is {state:?})"
                        ),
                    ));
                }
            }
        };
        let _ = sender.send(choice);
        self.changed(prompt_id, false);
        Ok(())
    }

    /// Removes a finished card.
    pub fn dismiss(&self, prompt_id: u64) -> Result<(), DeskError> {
        {
            let mut slots = self.slots();
            let slot = slots
                .get(&prompt_id)
                .ok_or_else(|| unknown_prompt(prompt_id))?;
            if !slot.card.state.finished() {
                return Err(DeskError::new(
                    ErrorCode::PromptNotFinished,
                    format!("prompt {prompt_id} still waits for you; answer or cancel it first"),
                ));
            }
            slots.remove(&prompt_id);
        }
        self.changed(prompt_id, false);
        Ok(())
    }

    fn with_card(&self, prompt_id: u64, f: impl FnOnce(&mut Slot)) -> bool {
        match self.slots().get_mut(&prompt_id) {
            Some(slot) => {
                f(slot);
                true
            }
            None => false,
        }
    }
}

impl PromptCard {
    /// Records why the card closed: its sentence and its code, from the one reason.
    fn closed_by(&mut self, reason: &CloseReason) {
        self.outcome = Some(reason.to_string());
        self.outcome_code = Some(reason.code());
    }
}

fn new_card(prompt: &Prompt, state: CardState) -> PromptCard {
    PromptCard {
        prompt: prompt.clone(),
        state,
        problems: Vec::new(),
        phase: None,
        completed_via: None,
        result: None,
        outcome: None,
        outcome_code: None,
        asked_at: now_ms(),
    }
}

impl ConsentUi for PromptDesk {
    fn ask<'a>(
        &'a self,
        prompt: &'a Prompt,
        problems: &'a [FieldError],
    ) -> UiFuture<'a, ConsentAnswer> {
        let (tx, rx) = oneshot::channel();
        {
            let mut slots = self.slots();
            let slot = slots.entry(prompt.id).or_insert_with(|| Slot {
                card: new_card(prompt, CardState::Asking),
                answer: None,
                choice: None,
                early: Early::NotWaited,
            });
            // Asked again after an invalid answer: the same card, with what was wrong.
            slot.card.state = CardState::Asking;
            slot.card.problems = problems.to_vec();
            slot.answer = Some(tx);
        }
        self.changed(prompt.id, true);
        Box::pin(async move {
            // A dropped sender means the desk itself went away: the safe answer is cancel.
            rx.await
                .unwrap_or_else(|_| ConsentAnswer::plain(ConsentReply::Cancel))
        })
    }

    fn waiting(&self, prompt_id: u64, phase: WaitPhase) -> UiFuture<'_, WaitChoice> {
        let (tx, rx) = oneshot::channel();
        self.with_card(prompt_id, |slot| {
            // A completion can land just before the wait starts: a finished card stays so.
            if !matches!(
                slot.card.state,
                CardState::Completed | CardState::Closed | CardState::Refused
            ) {
                slot.card.state = CardState::Waiting;
                slot.card.phase = Some(phase);
                match std::mem::replace(&mut slot.early, Early::Waited) {
                    Early::Chosen(choice) => {
                        let _ = tx.send(choice);
                    }
                    Early::NotWaited | Early::Waited => slot.choice = Some(tx),
                }
            }
        });
        self.changed(prompt_id, false);
        Box::pin(async move {
            match rx.await {
                Ok(choice) => choice,
                // Nobody can choose any more; the host ends the wait on completion or timeout.
                Err(_) => std::future::pending().await,
            }
        })
    }

    fn update(&self, update: PromptUpdate) {
        match update {
            PromptUpdate::Refused { prompt } => {
                let id = prompt.id;
                self.insert(
                    id,
                    Slot {
                        card: new_card(&prompt, CardState::Refused),
                        answer: None,
                        choice: None,
                        early: Early::NotWaited,
                    },
                );
                // Shown, but nothing to answer: no request for the user's attention, so a
                // server cannot flash the window once per refused elicitation.
                self.changed(id, false);
            }
            PromptUpdate::Opened { prompt_id, phase } => {
                self.with_card(prompt_id, |slot| {
                    slot.card.state = CardState::Waiting;
                    slot.card.phase = Some(phase);
                });
                self.changed(prompt_id, false);
            }
            PromptUpdate::Completed { prompt_id, via } => {
                self.with_card(prompt_id, |slot| {
                    slot.card.state = CardState::Completed;
                    slot.card.completed_via = Some(via);
                    slot.choice = None;
                });
                self.changed(prompt_id, false);
            }
            PromptUpdate::Result {
                prompt_id,
                is_error,
                text,
            } => {
                self.with_card(prompt_id, |slot| {
                    slot.card.result = Some(CardResult { is_error, text });
                });
                self.changed(prompt_id, false);
            }
            PromptUpdate::Closed { prompt_id, outcome } => {
                self.with_card(prompt_id, |slot| {
                    if !matches!(slot.card.state, CardState::Completed | CardState::Refused) {
                        slot.card.state = CardState::Closed;
                    }
                    slot.card.closed_by(&outcome);
                    slot.answer = None;
                    slot.choice = None;
                });
                self.changed(prompt_id, false);
            }
            PromptUpdate::Invalid {
                prompt_id,
                problems,
            } => {
                self.with_card(prompt_id, |slot| slot.card.problems = problems);
                self.changed(prompt_id, false);
            }
            PromptUpdate::Suspended { server, detail } => {
                let mut closed = Vec::new();
                for (id, slot) in self.slots().iter_mut() {
                    if slot.card.prompt.server == server && !slot.card.state.finished() {
                        slot.card.state = CardState::Closed;
                        slot.card.closed_by(&CloseReason::ServerSuspended {
                            detail: detail.clone(),
                        });
                        slot.answer = None;
                        slot.choice = None;
                        closed.push(*id);
                    }
                }
                for id in closed {
                    self.changed(id, false);
                }
                (self.notify)(DeskEvent::Servers { name: server });
            }
        }
    }
}

fn unknown_prompt(prompt_id: u64) -> DeskError {
    DeskError::new(
        ErrorCode::UnknownPrompt,
        format!("there is no prompt {prompt_id}; it may have been dismissed"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_host::consent::{ClaimedNames, IdentityBanner, PromptBody};
    use gatehouse_policy::Assessment;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn refused(id: u64) -> Prompt {
        Prompt {
            id,
            receipt_id: format!("rcpt-{id}"),
            server: "flood".into(),
            banner: IdentityBanner {
                server: "flood".into(),
                status: gatehouse_host::Status::Unattested,
                verified_id: None,
                clearance: None,
                signer: None,
                bundle: None,
                attested_by: None,
                established: None,
                demo: false,
                origin: None,
                command: Some("flood".into()),
                claimed: ClaimedNames {
                    publisher: None,
                    server_name: None,
                    server_version: None,
                },
            },
            era: gatehouse_host::Era::V2025_11_25,
            message: "refused".into(),
            origin: None,
            attribution: gatehouse_host::caller::Attribution::None,
            assessment: Assessment::allow(),
            body: PromptBody::Unsupported {
                detail: "outside the subset".into(),
            },
            ready_in: std::time::Duration::ZERO,
        }
    }

    #[test]
    fn refused_cards_are_bounded_and_never_ask_for_attention() {
        let attention = Arc::new(AtomicUsize::new(0));
        let seen = attention.clone();
        let desk = PromptDesk::new(Arc::new(move |event| {
            if let DeskEvent::Prompts {
                attention: true, ..
            } = event
            {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        }));
        for id in 1..=(MAX_CARDS as u64 + 50) {
            desk.update(PromptUpdate::Refused {
                prompt: Box::new(refused(id)),
            });
        }
        let cards = desk.list();
        assert_eq!(cards.len(), MAX_CARDS);
        assert_eq!(
            cards.iter().map(|c| c.prompt.id).min(),
            Some(51),
            "the oldest go first"
        );
        assert_eq!(attention.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_choice_made_as_the_card_shows_waiting_reaches_the_hosts_first_wait() {
        let desk = PromptDesk::new(Arc::new(|_| {}));
        let prompt = refused(7);
        // The card asks; the person opens the URL; the host says it opened (the card now
        // shows waiting) a moment before its wait begins.
        let _asked = desk.ask(&prompt, &[]);
        desk.update(PromptUpdate::Opened {
            prompt_id: 7,
            phase: WaitPhase::Completion,
        });
        // Cancel clicked in that moment: kept, not refused.
        desk.wait_choice(7, WaitChoice::Cancel).unwrap();
        // A second early choice is refused rather than queued behind the first.
        assert_eq!(
            desk.wait_choice(7, WaitChoice::Retry)
                .unwrap_err()
                .code
                .as_str(),
            "prompt_not_waiting"
        );
        let choice = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            desk.waiting(7, WaitPhase::Completion),
        )
        .await
        .expect("the early choice resolves the wait at once");
        assert_eq!(choice, WaitChoice::Cancel);
        // After the first wait, a choice needs a wait under way, as before.
        desk.update(PromptUpdate::Opened {
            prompt_id: 7,
            phase: WaitPhase::Completion,
        });
        assert_eq!(
            desk.wait_choice(7, WaitChoice::Cancel)
                .unwrap_err()
                .code
                .as_str(),
            "prompt_not_waiting"
        );
        // A card that never showed waiting refuses a choice.
        let other = refused(8);
        let _other = desk.ask(&other, &[]);
        assert_eq!(
            desk.wait_choice(8, WaitChoice::Cancel)
                .unwrap_err()
                .code
                .as_str(),
            "prompt_not_waiting"
        );
    }

    /// The card as the window gets it.
    fn window_card(desk: &PromptDesk, id: u64) -> Value {
        let card = desk
            .list()
            .into_iter()
            .find(|c| c.prompt.id == id)
            .expect("the card is on the desk");
        serde_json::to_value(card).unwrap()
    }

    #[test]
    fn a_closed_card_carries_its_sentence_and_its_code() {
        let desk = PromptDesk::new(Arc::new(|_| {}));
        let prompt_1 = refused(1);
        let _asked_1 = desk.ask(&prompt_1, &[]);
        let card = window_card(&desk, 1);
        assert_eq!(card["outcome"], Value::Null);
        assert_eq!(card["outcomeCode"], Value::Null);
        desk.update(PromptUpdate::Closed {
            prompt_id: 1,
            outcome: CloseReason::HumanTimeout {
                after: std::time::Duration::from_millis(500),
            },
        });
        let card = window_card(&desk, 1);
        assert_eq!(card["state"], "closed");
        assert_eq!(card["outcome"], "no answer within 0.5 s; cancelled");
        assert_eq!(card["outcomeCode"], "human_timeout");

        // A suspension closes the server's open cards with its own reason.
        let prompt_2 = refused(2);
        let _asked_2 = desk.ask(&prompt_2, &[]);
        desk.update(PromptUpdate::Suspended {
            server: "flood".into(),
            detail: "5 denials".into(),
        });
        let card = window_card(&desk, 2);
        assert_eq!(card["state"], "closed");
        assert_eq!(card["outcome"], "the server was suspended: 5 denials");
        assert_eq!(card["outcomeCode"], "server_suspended");
        // The card closed before keeps its own reason.
        assert_eq!(window_card(&desk, 1)["outcomeCode"], "human_timeout");
    }

    #[test]
    fn a_completed_card_says_how_in_the_windows_words() {
        let desk = PromptDesk::new(Arc::new(|_| {}));
        for (id, via, word) in [
            (1, CardVia::Notification, "notification"),
            (2, CardVia::Result, "result"),
        ] {
            let prompt = refused(id);
            let _asked = desk.ask(&prompt, &[]);
            assert_eq!(window_card(&desk, id)["completedVia"], Value::Null);
            desk.update(PromptUpdate::Completed { prompt_id: id, via });
            let card = window_card(&desk, id);
            assert_eq!(card["state"], "completed");
            assert_eq!(card["completedVia"], word);
        }
    }
}
