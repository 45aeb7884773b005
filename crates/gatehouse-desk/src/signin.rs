//! The desktop [`SignInUi`]: a sign-in waits here, in Rust, as a card; the window is told that
//! something changed and fetches the cards ([`SignInDesk::cards`]); the user's Open or Cancel
//! comes back as a typed call by id ([`SignInDesk::answer`]), never as a webview event. A
//! reloaded window therefore finds every pending sign-in exactly as it was.
//!
//! A card lives from [`SignInUi::approve`] (asking: Open or Cancel) through
//! [`SignInUi::waiting`] (the browser is open: Cancel) to [`SignInUi::finished`], which removes
//! it and leaves a short result (signed in, or why not) for the window to show once.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio::sync::oneshot;

use gatehouse_host::ErrorCode;
use gatehouse_host::auth::{SignInAnswer, SignInCode, SignInRequest, SignInUi};
use gatehouse_host::consent::UiFuture;
use gatehouse_host::host::ApiError;

/// At most this many sign-ins wait for the user at once; one more is answered Cancel at
/// once, without a card (a server, or many, cannot stack sign-ins up without bound).
pub const MAX_SIGN_INS: usize = 8;

/// At most this many results of ended sign-ins are kept for the window to show.
pub const MAX_RESULTS: usize = 8;

/// What changed among the sign-in cards, for the window to refetch. Never a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInChange {
    pub sign_in_id: u64,
    /// The server the sign-in is for.
    pub server: String,
    /// A new card needs the user.
    pub attention: bool,
}

/// How the desk tells its window that a sign-in card changed.
pub type SignInNotifier = Arc<dyn Fn(SignInChange) + Send + Sync>;

/// Where a sign-in card is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SignInState {
    /// Waiting for Open or Cancel; nothing was opened yet.
    Asking,
    /// The authorization URL went to the browser; waiting for the sign-in to come back, or
    /// for Cancel.
    Waiting,
}

/// One pending sign-in as the window shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignInCard {
    pub id: u64,
    pub state: SignInState,
    /// Cancel was pressed while waiting; the sign-in is being stopped.
    pub cancelling: bool,
    /// Everything the user is shown, as the host built it: server, verdict, identity,
    /// resource, issuer, scopes, the full authorization URL and its host.
    pub request: SignInRequest,
    /// Milliseconds since the epoch when it was first shown.
    pub asked_at: u64,
}

/// How an ended sign-in went, shown once by the window.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignInResult {
    /// The card's id (a sign-in refused without a card gets an id of its own).
    pub id: u64,
    pub server: String,
    pub signed_in: bool,
    /// Why not, when not: a stable `SignInCode` code (`sign_in_cancelled`, …).
    pub code: Option<&'static str>,
}

/// What `sign_in_cards` answers: the pending cards, oldest first, and the latest results.
#[derive(Debug, Clone, Serialize)]
pub struct SignInCards {
    pub cards: Vec<SignInCard>,
    pub results: Vec<SignInResult>,
}

/// The user's decision on a card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignInReply {
    /// Open the authorization URL in the system browser (asking cards only).
    Open,
    /// Do not sign in (asking), or stop waiting for the browser (waiting).
    Cancel,
}

struct Slot {
    card: SignInCard,
    /// Answers `approve` while asking.
    answer: Option<oneshot::Sender<SignInAnswer>>,
    /// Ends `waiting` (a Cancel pressed before the wait began is kept until it begins).
    cancel: Option<oneshot::Sender<()>>,
    cancelled: Option<oneshot::Receiver<()>>,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    slots: BTreeMap<u64, Slot>,
    results: VecDeque<SignInResult>,
}

impl Inner {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The card of this sign-in: its authorization URL is unique (state, PKCE challenge).
    fn find(&self, request: &SignInRequest) -> Option<u64> {
        self.slots
            .iter()
            .find(|(_, s)| {
                s.card.request.url == request.url && s.card.request.server == request.server
            })
            .map(|(id, _)| *id)
    }
}

/// The sign-in cards of one desktop app.
pub struct SignInDesk {
    inner: Mutex<Inner>,
    notify: SignInNotifier,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}

fn unknown(id: u64) -> ApiError {
    ApiError::new(
        ErrorCode::UnknownSignIn,
        format!("there is no sign-in {id} waiting; it may have ended already"),
    )
}

impl SignInDesk {
    pub fn new(notify: SignInNotifier) -> Arc<SignInDesk> {
        Arc::new(SignInDesk {
            inner: Mutex::new(Inner::default()),
            notify,
        })
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().expect("sign-in desk poisoned")
    }

    fn changed(&self, sign_in_id: u64, server: &str, attention: bool) {
        (self.notify)(SignInChange {
            sign_in_id,
            server: server.to_string(),
            attention,
        });
    }

    /// The pending cards, oldest first, and the results of the latest ended sign-ins.
    pub fn cards(&self) -> SignInCards {
        let inner = self.inner();
        SignInCards {
            cards: inner.slots.values().map(|s| s.card.clone()).collect(),
            results: inner.results.iter().cloned().collect(),
        }
    }

    /// How many sign-ins wait for the user.
    pub fn pending(&self) -> usize {
        self.inner().slots.len()
    }

    /// The user's Open or Cancel on card `id`. Open only answers an asking card. Cancel
    /// answers an asking card, stops a waiting one, and removes a card nothing waits on any
    /// more (so a card can always be cleared).
    pub fn answer(&self, id: u64, reply: SignInReply) -> Result<(), ApiError> {
        let server = {
            let mut inner = self.inner();
            let slot = inner.slots.get_mut(&id).ok_or_else(|| unknown(id))?;
            let server = slot.card.request.server.clone();
            let keep = match (slot.card.state, reply) {
                (SignInState::Asking, SignInReply::Open) => {
                    let sent = slot
                        .answer
                        .take()
                        .is_some_and(|sender| sender.send(SignInAnswer::Open).is_ok());
                    if sent {
                        let (tx, rx) = oneshot::channel();
                        slot.card.state = SignInState::Waiting;
                        slot.cancel = Some(tx);
                        slot.cancelled = Some(rx);
                    }
                    // Not sent: the sign-in that asked is gone, and nothing will open.
                    sent
                }
                (SignInState::Asking, SignInReply::Cancel) => {
                    if let Some(sender) = slot.answer.take() {
                        let _ = sender.send(SignInAnswer::Cancel);
                    }
                    false
                }
                (SignInState::Waiting, SignInReply::Cancel) => {
                    let told = slot.cancel.take().is_some_and(|tx| tx.send(()).is_ok());
                    slot.card.cancelling = told;
                    // Not told: nothing waits on this card any more; Cancel clears it.
                    told
                }
                (SignInState::Waiting, SignInReply::Open) => {
                    return Err(ApiError::new(
                        ErrorCode::SignInNotAsking,
                        format!(
                            "sign-in {id} is already open in the browser; finish it there, or cancel it"
                        ),
                    ));
                }
            };
            if !keep {
                inner.slots.remove(&id);
                if reply == SignInReply::Open {
                    drop(inner);
                    self.changed(id, &server, false);
                    return Err(unknown(id));
                }
            }
            server
        };
        self.changed(id, &server, false);
        Ok(())
    }

    fn result(&self, id: Option<u64>, request: &SignInRequest, failure: Option<SignInCode>) {
        let id = {
            let mut inner = self.inner();
            let id = id.unwrap_or_else(|| inner.id());
            inner.results.push_back(SignInResult {
                id,
                server: request.server.clone(),
                signed_in: failure.is_none(),
                code: failure.map(SignInCode::code),
            });
            while inner.results.len() > MAX_RESULTS {
                inner.results.pop_front();
            }
            id
        };
        self.changed(id, &request.server, false);
    }
}

/// Removes an asking card whose `approve` went away unanswered (the connection that asked
/// was dropped): nobody would hear the answer.
struct Unanswered<'a> {
    desk: &'a SignInDesk,
    id: u64,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        let removed = {
            let mut inner = self.desk.inner();
            match inner.slots.get(&self.id) {
                Some(slot) if slot.card.state == SignInState::Asking => {
                    inner.slots.remove(&self.id).map(|s| s.card.request.server)
                }
                _ => None,
            }
        };
        if let Some(server) = removed {
            self.desk.changed(self.id, &server, false);
        }
    }
}

impl SignInUi for SignInDesk {
    fn approve<'a>(&'a self, request: &'a SignInRequest) -> UiFuture<'a, SignInAnswer> {
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut inner = self.inner();
            if inner.slots.len() >= MAX_SIGN_INS {
                None
            } else {
                let id = inner.id();
                inner.slots.insert(
                    id,
                    Slot {
                        card: SignInCard {
                            id,
                            state: SignInState::Asking,
                            cancelling: false,
                            request: request.clone(),
                            asked_at: now_ms(),
                        },
                        answer: Some(tx),
                        cancel: None,
                        cancelled: None,
                    },
                );
                Some(id)
            }
        };
        let Some(id) = id else {
            tracing::warn!(
                server = %request.server,
                "{MAX_SIGN_INS} sign-ins already wait for the user; this one is cancelled"
            );
            return Box::pin(std::future::ready(SignInAnswer::Cancel));
        };
        self.changed(id, &request.server, true);
        Box::pin(async move {
            let _unanswered = Unanswered { desk: self, id };
            // A dropped sender means the desk itself went away: the safe answer is cancel.
            rx.await.unwrap_or(SignInAnswer::Cancel)
        })
    }

    fn waiting<'a>(&'a self, request: &'a SignInRequest) -> UiFuture<'a, ()> {
        let cancelled = {
            let mut inner = self.inner();
            inner
                .find(request)
                .and_then(|id| inner.slots.get_mut(&id))
                .and_then(|slot| {
                    slot.card.state = SignInState::Waiting;
                    slot.cancelled.take()
                })
        };
        Box::pin(async move {
            match cancelled {
                Some(rx) => match rx.await {
                    Ok(()) => {}
                    // Nobody can cancel any more; the host ends the wait on the redirect or
                    // the timeout.
                    Err(_) => std::future::pending().await,
                },
                None => std::future::pending().await,
            }
        })
    }

    fn finished(&self, request: &SignInRequest, failure: Option<SignInCode>) {
        let id = {
            let mut inner = self.inner();
            let id = inner.find(request);
            if let Some(id) = id {
                inner.slots.remove(&id);
            }
            id
        };
        self.result(id, request, failure);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_host::auth::SignInReason;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn request(server: &str, n: u32) -> SignInRequest {
        SignInRequest {
            server: server.into(),
            identity: None,
            verdict: "unattested: no attestation".into(),
            resource: "http://127.0.0.1:9/mcp".into(),
            issuer: Some("http://127.0.0.1:8".into()),
            authorization_host: "127.0.0.1".into(),
            url: format!("http://127.0.0.1:8/auth?state={n}"),
            scopes: vec!["mcp:tools".into()],
            reason: SignInReason::SignIn,
        }
    }

    fn desk() -> (Arc<SignInDesk>, Arc<Mutex<Vec<SignInChange>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let desk = SignInDesk::new(Arc::new(move |c| sink.lock().unwrap().push(c)));
        (desk, seen)
    }

    async fn card_appears(desk: &SignInDesk, count: usize) -> Vec<SignInCard> {
        for _ in 0..200 {
            let cards = desk.cards().cards;
            if cards.len() >= count {
                return cards;
            }
            tokio::task::yield_now().await;
        }
        panic!("no card");
    }

    #[tokio::test]
    async fn open_then_cancel_while_waiting_ends_the_wait_and_finished_leaves_a_result() {
        let (desk, seen) = desk();
        let req = request("protected", 1);
        let asking = {
            let desk = desk.clone();
            let req = req.clone();
            tokio::spawn(async move { desk.approve(&req).await })
        };
        let cards = card_appears(&desk, 1).await;
        let id = cards[0].id;
        assert_eq!(cards[0].state, SignInState::Asking);
        assert!(
            seen.lock().unwrap()[0].attention,
            "a new card asks for attention"
        );
        desk.answer(id, SignInReply::Open).unwrap();
        assert_eq!(asking.await.unwrap(), SignInAnswer::Open);
        assert_eq!(desk.cards().cards[0].state, SignInState::Waiting);
        assert_eq!(
            desk.answer(id, SignInReply::Open)
                .unwrap_err()
                .code
                .as_str(),
            "sign_in_not_asking"
        );
        // Cancel pressed before the wait began still ends it.
        desk.answer(id, SignInReply::Cancel).unwrap();
        assert!(desk.cards().cards[0].cancelling);
        desk.waiting(&req).await;
        desk.finished(&req, Some(SignInCode::SignInCancelled));
        let after = desk.cards();
        assert!(after.cards.is_empty());
        assert_eq!(after.results.len(), 1);
        assert_eq!(after.results[0].id, id);
        assert!(!after.results[0].signed_in);
        assert_eq!(after.results[0].code, Some("sign_in_cancelled"));
        assert_eq!(
            desk.answer(id, SignInReply::Cancel)
                .unwrap_err()
                .code
                .as_str(),
            "unknown_sign_in"
        );
    }

    #[tokio::test]
    async fn cancel_on_an_asking_card_answers_cancel_and_removes_it() {
        let (desk, _) = desk();
        let req = request("protected", 2);
        let asking = {
            let desk = desk.clone();
            tokio::spawn(async move { desk.approve(&req).await })
        };
        let id = card_appears(&desk, 1).await[0].id;
        desk.answer(id, SignInReply::Cancel).unwrap();
        assert_eq!(asking.await.unwrap(), SignInAnswer::Cancel);
        assert!(desk.cards().cards.is_empty());
    }

    #[tokio::test]
    async fn an_abandoned_asking_card_goes_away_and_a_waiting_one_can_always_be_cleared() {
        let (desk, _) = desk();
        let req = request("protected", 3);
        let mut asking = desk.approve(&req);
        assert!(futures::poll!(asking.as_mut()).is_pending());
        assert_eq!(desk.pending(), 1);
        drop(asking);
        assert_eq!(desk.pending(), 0, "nobody would hear the answer");

        let asking = {
            let desk = desk.clone();
            let req = req.clone();
            tokio::spawn(async move { desk.approve(&req).await })
        };
        let id = card_appears(&desk, 1).await[0].id;
        desk.answer(id, SignInReply::Open).unwrap();
        asking.await.unwrap();
        // The wait began and ended (say the redirect came) but `finished` never did.
        let mut wait = desk.waiting(&req);
        assert!(futures::poll!(wait.as_mut()).is_pending());
        drop(wait);
        desk.answer(id, SignInReply::Cancel).unwrap();
        assert_eq!(desk.pending(), 0, "Cancel clears a card nothing waits on");
    }

    #[tokio::test]
    async fn pending_sign_ins_are_bounded_and_extra_ones_are_cancelled_without_a_card() {
        let attention = Arc::new(AtomicUsize::new(0));
        let seen = attention.clone();
        let desk = SignInDesk::new(Arc::new(move |c: SignInChange| {
            if c.attention {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        }));
        let mut waiting = Vec::new();
        for n in 0..(MAX_SIGN_INS as u32 + 3) {
            let desk = desk.clone();
            waiting.push(tokio::spawn(async move {
                desk.approve(&request("flood", n)).await
            }));
        }
        let mut extra = 0;
        for _ in 0..3 {
            // The extra ones resolve at once.
            loop {
                if let Some(i) = waiting.iter().position(|h| h.is_finished()) {
                    assert_eq!(waiting.remove(i).await.unwrap(), SignInAnswer::Cancel);
                    extra += 1;
                    break;
                }
                tokio::task::yield_now().await;
            }
        }
        assert_eq!(extra, 3);
        assert_eq!(desk.pending(), MAX_SIGN_INS);
        assert_eq!(attention.load(Ordering::SeqCst), MAX_SIGN_INS);
        for n in 0..(MAX_RESULTS as u32 + 4) {
            desk.finished(&request("other", 100 + n), None);
        }
        let results = desk.cards().results;
        assert_eq!(results.len(), MAX_RESULTS);
        assert!(results.iter().all(|r| r.signed_in && r.code.is_none()));
    }
}
