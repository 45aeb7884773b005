//! Asking the user: one prompt at a time, form answers validated and checked for credentials,
//! a consented URL opened only once its receipt is on record, and cards closed when nobody
//! will read the answer any more.

use std::sync::Arc;

use gatehouse_policy::{Decision, FieldError, check_answers};
use rmcp::model::ElicitationAction;
use tokio_util::sync::CancellationToken;

use super::elicit::Handling;
use super::session::Busy;
use super::{ElicitationBroker, ElicitationRecord, Session};
use crate::consent::{
    CloseReason, ConsentAnswer, ConsentReply, ConsentUi, PromptBody, PromptUpdate, WaitPhase,
};
use crate::{Era, HostError};

/// How many times an invalid form answer is sent back to the user before the prompt is
/// cancelled.
const MAX_INVALID_ANSWERS: usize = 5;

impl ElicitationBroker {
    /// Asks the user (queued behind earlier prompts), validates and checks what they answered,
    /// and for a URL opens it once the consent is on record.
    pub(super) async fn ask(
        &self,
        session: &Session,
        h: &mut Handling,
        withdrawn: &CancellationToken,
    ) {
        let _busy = Busy::new(session);
        let _turn = self.queue.lock().await;
        // It ended while waiting its turn behind other prompts: nobody is asked.
        if let Some(why) = ended_why(session, withdrawn) {
            h.action = ElicitationAction::Cancel;
            h.note = Some(why.to_string());
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
                        self.gave_up(h, CloseReason::HumanTimeout { after: self.options.human_timeout });
                        ConsentAnswer::plain(ConsentReply::Cancel)
                    }
                },
                _ = session.kill.cancelled() => {
                    self.gave_up(h, CloseReason::SessionKilled);
                    ConsentAnswer::plain(ConsentReply::Cancel)
                }
                _ = session.ended.cancelled() => {
                    self.gave_up(h, CloseReason::ConnectionClosed);
                    ConsentAnswer::plain(ConsentReply::Cancel)
                }
                _ = withdrawn.cancelled() => {
                    self.gave_up(h, CloseReason::RequestWithdrawn);
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

    /// The broker stopped asking (the human timeout, the kill switch, the connection or the
    /// request ended): the card closes with why, so no UI goes on offering an answer nobody
    /// will read. The receipt's note is the card's sentence.
    fn gave_up(&self, h: &mut Handling, reason: CloseReason) {
        h.note = Some(reason.to_string());
        self.ui.update(PromptUpdate::Closed {
            prompt_id: h.prompt.id,
            outcome: reason,
        });
    }

    /// The call gave up on its prompts (cancelled, timed out, failed): each card closes with
    /// the call's error.
    pub fn close_prompts(&self, records: &[ElicitationRecord], error: &HostError) {
        for record in records {
            self.ui.update(PromptUpdate::Closed {
                prompt_id: record.prompt_id,
                outcome: CloseReason::CallFailed {
                    error: error.to_string(),
                },
            });
        }
    }
}

/// Why nothing may be asked any more for this request, if so.
fn ended_why(session: &Session, withdrawn: &CancellationToken) -> Option<CloseReason> {
    if session.kill.is_cancelled() {
        Some(CloseReason::SessionKilled)
    } else if session.ended.is_cancelled() {
        Some(CloseReason::ConnectionClosed)
    } else if withdrawn.is_cancelled() {
        Some(CloseReason::RequestWithdrawn)
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
                outcome: CloseReason::Abandoned,
            });
        }
    }
}
