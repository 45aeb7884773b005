//! URL flows after consent: 2025-11-25 elicitation ids pending completion (matched per server;
//! anything else ignored and counted as abuse), waits for completions or the user's choice,
//! and the retries and results of the calls that opened them.

use std::time::Duration;

use gatehouse_policy::{AbuseEvent, Mode};

use super::elicit::Handling;
use super::session::Busy;
use super::{ElicitationAnswer, ElicitationBroker, ElicitationRecord, Session};
use crate::audit_event::session::{
    CompletedVia, ElicitationCompleted, ElicitationCompletionIgnored, ElicitationRetry, IgnoredWhy,
    RetryWhy,
};
use crate::consent::{Prompt, PromptUpdate, WaitChoice, WaitPhase};
use crate::error::HostError;

/// How a wait for URL flows ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// Every listed elicitation completed (2025-11-25).
    Completed,
    /// The user chose Retry.
    Retry,
    Cancelled,
    TimedOut,
    /// The session was killed meanwhile.
    Killed,
}

pub(super) struct Pending {
    prompt: Prompt,
    completed: bool,
    /// Host calls waiting on it (for the result, and to be woken).
    calls: Vec<u64>,
}

impl ElicitationBroker {
    pub(super) fn register_pending(&self, session: &Session, h: &Handling) {
        let Some(id) = &h.elicitation_id else { return };
        self.pending.lock().expect("pending poisoned").insert(
            (session.server.clone(), id.clone()),
            Pending {
                prompt: h.prompt.clone(),
                completed: false,
                calls: h.calls.clone(),
            },
        );
    }

    pub(super) fn unregister_pending(&self, session: &Session, h: &Handling) {
        if let Some(id) = &h.elicitation_id {
            self.pending
                .lock()
                .expect("pending poisoned")
                .remove(&(session.server.clone(), id.clone()));
        }
    }

    /// A `notifications/elicitation/complete` from `session`'s server. A match completes its
    /// prompt and wakes the call waiting on it; anything else (never issued, already completed,
    /// another server's) is ignored, audited, and counted as abuse.
    pub fn complete(&self, session: &Session, elicitation_id: &str) {
        let key = (session.server.clone(), elicitation_id.to_string());
        let outcome = {
            let mut pending = self.pending.lock().expect("pending poisoned");
            let elsewhere = pending
                .keys()
                .any(|(server, id)| id == elicitation_id && *server != session.server);
            match pending.get_mut(&key) {
                Some(p) if !p.completed => {
                    p.completed = true;
                    Ok((p.prompt.clone(), p.calls.clone()))
                }
                Some(_) => Err(IgnoredWhy::Duplicate),
                None if elsewhere => Err(IgnoredWhy::CrossServer),
                None => Err(IgnoredWhy::NeverIssued),
            }
        };
        match outcome {
            Ok((prompt, calls)) => {
                let recorded = self.gatekeeper.write_for(
                    &session.verdict,
                    &ElicitationCompleted {
                        receipt_id: prompt.receipt_id.clone(),
                        prompt_id: prompt.id,
                        elicitation_id: Some(elicitation_id.to_string()),
                        input_key: None,
                        name: session.server.clone(),
                        calls: Some(calls),
                        via: CompletedVia::Notification,
                    },
                );
                if let Err(error) = recorded {
                    // Unrecorded, it does not count: the prompt stays pending.
                    tracing::error!(%error, "completion not recorded; ignored");
                    if let Some(p) = self.pending.lock().expect("pending poisoned").get_mut(&key) {
                        p.completed = false;
                    }
                    return;
                }
                session.update_record(&prompt.receipt_id, |r| r.completed = Some(true));
                self.ui.update(PromptUpdate::Completed {
                    prompt_id: prompt.id,
                    via: CompletedVia::Notification.into(),
                });
                self.completions.notify_waiters();
            }
            Err(why) => {
                let now = (self.options.now)();
                let abuse = session
                    .abuse
                    .lock()
                    .expect("session poisoned")
                    .record(AbuseEvent::BogusCompletion, now);
                let _ = self.gatekeeper.write_for(
                    &session.verdict,
                    &ElicitationCompletionIgnored {
                        elicitation_id: elicitation_id.to_string(),
                        name: session.server.clone(),
                        why,
                        abuse: abuse.as_ref().map(|r| r.code.to_string()),
                    },
                );
                tracing::warn!(server = %session.server, elicitation_id, ?why, "completion ignored");
                if let Some(reason) = abuse {
                    self.kill(session, &reason);
                }
            }
        }
    }

    /// Whether this server's elicitation `id` has completed.
    pub fn is_completed(&self, session: &Session, id: &str) -> bool {
        self.pending
            .lock()
            .expect("pending poisoned")
            .get(&(session.server.clone(), id.to_string()))
            .is_some_and(|p| p.completed)
    }

    /// Waits until every one of `ids` (this server's elicitation ids) completed, or the user
    /// chose Retry or Cancel on `prompt`, or the human timeout passed, or the session died.
    /// With `ids` empty (2026-07-28) only the user's choice ends it.
    pub async fn wait(
        &self,
        session: &Session,
        prompt_id: u64,
        ids: &[String],
        phase: WaitPhase,
    ) -> WaitOutcome {
        let _busy = Busy::new(session);
        let all_done = async {
            if ids.is_empty() {
                return std::future::pending::<()>().await;
            }
            loop {
                let changed = self.completions.notified();
                if ids.iter().all(|id| self.is_completed(session, id)) {
                    return;
                }
                changed.await;
            }
        };
        tokio::select! {
            () = all_done => WaitOutcome::Completed,
            choice = self.ui.waiting(prompt_id, phase) => match choice {
                WaitChoice::Retry => WaitOutcome::Retry,
                WaitChoice::Cancel => WaitOutcome::Cancelled,
            },
            () = tokio::time::sleep(self.options.human_timeout) => WaitOutcome::TimedOut,
            () = session.kill.cancelled() => WaitOutcome::Killed,
        }
    }

    /// A call's result arrived while URL flows it opened still await their completion. Over
    /// Streamable HTTP a server may send the completion on its standalone stream and the result
    /// on the request's, so the result can overtake a completion sent before it: give those
    /// completions `grace` to land. Bounded, and only for accepted URLs, so a server that
    /// never sends one costs at most `grace` on such calls.
    pub async fn settle_completions(
        &self,
        session: &Session,
        records: &[ElicitationRecord],
        grace: Duration,
    ) {
        let ids: Vec<&str> = records
            .iter()
            .filter(|r| {
                r.mode == Mode::Url
                    && r.action == ElicitationAnswer::Accept
                    && r.completed == Some(false)
            })
            .filter_map(|r| r.elicitation_id.as_deref())
            .collect();
        if ids.is_empty() {
            return;
        }
        let all_done = async {
            loop {
                let changed = self.completions.notified();
                if ids.iter().all(|id| self.is_completed(session, id)) {
                    return;
                }
                changed.await;
            }
        };
        let _ = tokio::time::timeout(grace, all_done).await;
    }

    /// The connection closed: its pending elicitations can no longer complete.
    pub fn end_session(&self, session: &Session) {
        session.ended.cancel();
        self.pending
            .lock()
            .expect("pending poisoned")
            .retain(|(server, _), _| *server != session.server);
    }

    /// Records a retry of the originating request after URL elicitations.
    pub fn record_retry(
        &self,
        session: &Session,
        call: u64,
        attempt: usize,
        why: RetryWhy,
        receipts: &[String],
    ) -> Result<(), HostError> {
        self.gatekeeper
            .write_for(
                &session.verdict,
                &ElicitationRetry {
                    name: session.server.clone(),
                    call,
                    attempt,
                    why,
                    receipts: receipts.to_vec(),
                },
            )
            .map(|_| ())
    }

    /// The originating call finished: attach its result to the prompts it caused.
    /// A URL flow the call had to be retried after (`-32042`, or a 2026-07-28 input request)
    /// has completed once the retried call succeeded (2026-07-28 learns it only this way):
    /// recorded, linked to its receipt. A 2025-11-25 `elicitation/create` URL flow is not: its
    /// `accept` is consent, not completion, and the server may answer the call at once, so
    /// only its completion notification completes it.
    pub fn attach_result(
        &self,
        session: &Session,
        records: &mut [ElicitationRecord],
        is_error: bool,
        text: &str,
    ) {
        for record in records.iter_mut() {
            let retried_after = record.correlation.in_answer();
            if record.completed == Some(false) && retried_after && !is_error {
                let recorded = self.gatekeeper.write_for(
                    &session.verdict,
                    &ElicitationCompleted {
                        receipt_id: record.receipt_id.clone(),
                        prompt_id: record.prompt_id,
                        elicitation_id: record.elicitation_id.clone(),
                        input_key: Some(record.input_key.clone()),
                        name: session.server.clone(),
                        calls: None,
                        via: CompletedVia::RetriedRequestSucceeded,
                    },
                );
                if recorded.is_ok() {
                    record.completed = Some(true);
                    self.ui.update(PromptUpdate::Completed {
                        prompt_id: record.prompt_id,
                        via: CompletedVia::RetriedRequestSucceeded.into(),
                    });
                }
            }
            self.ui.update(PromptUpdate::Result {
                prompt_id: record.prompt_id,
                is_error,
                text: text.to_string(),
            });
        }
    }
}
