//! The progress dispatcher of one connection: each host call that wants its progress
//! registers where it goes, and the client handler hands every `notifications/progress` to the
//! one call whose current request carries its token, instead of every call filtering every
//! event of the host (the shape of rmcp's own `ProgressDispatcher`).
//!
//! rmcp gives every request a progress token of its own and sets it while sending, so a call
//! learns its token only when the request crosses the wire: the tap tells the dispatcher
//! ([`ProgressDispatcher::sent`]) which token the call's current request was sent with. A call
//! that takes several rounds sends several requests; only the current one's progress counts,
//! as before. rmcp's dispatcher does not fit as it is: it registers a token before the request
//! exists, and its handler waits on a full subscriber, where this one must never block.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use serde_json::Value;
use tokio::sync::mpsc;

use super::CallProgress;

/// Routes the server's progress notifications of one connection to the calls they belong to.
#[derive(Debug, Default)]
pub struct ProgressDispatcher {
    routes: Mutex<Routes>,
}

#[derive(Debug, Default)]
struct Routes {
    /// Each registered call: where its progress goes and the token of its current request.
    calls: HashMap<u64, Route>,
    /// The token of each registered call's current request → the call and where its
    /// progress goes.
    tokens: HashMap<ProgressToken, (u64, mpsc::Sender<CallProgress>)>,
}

#[derive(Debug)]
struct Route {
    to: mpsc::Sender<CallProgress>,
    token: Option<ProgressToken>,
}

impl Routes {
    /// Removes `token`'s entry if it is `call`'s (another call may have been given the same
    /// token since, by a server-side reuse or a reconnect; its entry stays).
    fn unroute(&mut self, token: &ProgressToken, call: u64) -> Option<mpsc::Sender<CallProgress>> {
        if self.tokens.get(token).is_some_and(|(c, _)| *c == call) {
            self.tokens.remove(token).map(|(_, to)| to)
        } else {
            None
        }
    }
}

/// What delivering one notification did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Queued for the call whose current request carries the token.
    Delivered,
    /// No registered call's current request carries the token (a call that asked for no
    /// progress, an earlier round's request, a call that ended, a token the host never sent).
    Unrouted,
    /// The call's queue was full: this notification is dropped, the handler never waits.
    Full,
    /// The call stopped reading its progress.
    Closed,
}

impl ProgressDispatcher {
    /// Host call `call` wants its progress in `to`, in order, until the returned registration
    /// is dropped (when the call ends, however it ends). Nothing is routed to it until one of
    /// its requests is sent ([`ProgressDispatcher::sent`]).
    pub fn register(
        self: &Arc<Self>,
        call: u64,
        to: mpsc::Sender<CallProgress>,
    ) -> ProgressRegistration {
        let replaced = {
            let mut routes = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
            let replaced = routes.calls.insert(call, Route { to, token: None });
            let stale = replaced
                .as_ref()
                .and_then(|r| r.token.as_ref())
                .and_then(|t| routes.unroute(t, call));
            (replaced, stale)
        };
        // Senders are dropped outside the lock.
        drop(replaced);
        ProgressRegistration {
            dispatcher: self.clone(),
            call,
        }
    }

    /// The tap saw host call `call`'s request go out with `_meta.progressToken` `token`: from
    /// now on that token's progress is the call's, and its earlier request's is no one's.
    /// Nothing happens for a call that did not register.
    pub fn sent(&self, call: u64, token: Option<&Value>) {
        let token = token.and_then(|t| serde_json::from_value::<ProgressToken>(t.clone()).ok());
        let stale = {
            let mut routes = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(route) = routes.calls.get_mut(&call) else {
                return;
            };
            let old = std::mem::replace(&mut route.token, token.clone());
            let to = route.to.clone();
            let stale = old.and_then(|old| routes.unroute(&old, call));
            let replaced = token.and_then(|token| routes.tokens.insert(token, (call, to)));
            (stale, replaced)
        };
        drop(stale);
    }

    /// Hands one notification to the call whose current request carries its token, without
    /// waiting: a full queue drops it (best effort, like the caller's channel always was).
    pub fn deliver(&self, params: &ProgressNotificationParam) -> Delivery {
        let to = self
            .routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .tokens
            .get(&params.progress_token)
            .map(|(_, to)| to.clone());
        let Some(to) = to else {
            return Delivery::Unrouted;
        };
        match to.try_send(CallProgress {
            progress: params.progress,
            total: params.total,
            message: params.message.clone(),
        }) {
            Ok(()) => Delivery::Delivered,
            Err(mpsc::error::TrySendError::Full(_)) => Delivery::Full,
            Err(mpsc::error::TrySendError::Closed(_)) => Delivery::Closed,
        }
    }

    /// How many calls are registered.
    pub fn registered(&self) -> usize {
        self.routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .calls
            .len()
    }

    fn unregister(&self, call: u64) {
        let removed = {
            let mut routes = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
            let route = routes.calls.remove(&call);
            let routed = route
                .as_ref()
                .and_then(|r| r.token.as_ref())
                .and_then(|t| routes.unroute(t, call));
            (route, routed)
        };
        drop(removed);
    }
}

/// A call's registration with the [`ProgressDispatcher`]; dropping it (the call returned,
/// failed, was cancelled or its future dropped) unregisters the call and its token.
#[derive(Debug)]
pub struct ProgressRegistration {
    dispatcher: Arc<ProgressDispatcher>,
    call: u64,
}

impl Drop for ProgressRegistration {
    fn drop(&mut self) {
        self.dispatcher.unregister(self.call);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;
    use serde_json::json;

    fn note(token: Value, progress: f64) -> ProgressNotificationParam {
        let token: ProgressToken = serde_json::from_value(token).unwrap();
        ProgressNotificationParam::new(token, progress).with_total(10.0)
    }

    fn drain(rx: &mut mpsc::Receiver<CallProgress>) -> Vec<f64> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|p| p.progress)
            .collect()
    }

    #[test]
    fn each_call_gets_only_the_progress_of_its_current_request() {
        let dispatcher = Arc::new(ProgressDispatcher::default());
        let (a_tx, mut a) = mpsc::channel(16);
        let (b_tx, mut b) = mpsc::channel(16);
        let a_reg = dispatcher.register(1, a_tx);
        let _b_reg = dispatcher.register(2, b_tx);
        // Nothing is routed before a request of the call is sent.
        assert_eq!(dispatcher.deliver(&note(json!(7), 0.0)), Delivery::Unrouted);
        dispatcher.sent(1, Some(&json!(7)));
        dispatcher.sent(2, Some(&json!("tok-8")));
        for step in 1..=3 {
            let step = f64::from(step);
            assert_eq!(
                dispatcher.deliver(&note(json!(7), step)),
                Delivery::Delivered
            );
            assert_eq!(
                dispatcher.deliver(&note(json!("tok-8"), step * 10.0)),
                Delivery::Delivered
            );
        }
        // A token the host never sent, and the number 8 that is not the string "tok-8".
        assert_eq!(
            dispatcher.deliver(&note(json!(99), 1.0)),
            Delivery::Unrouted
        );
        assert_eq!(
            dispatcher.deliver(&note(json!("7"), 1.0)),
            Delivery::Unrouted
        );
        assert_eq!(drain(&mut a), vec![1.0, 2.0, 3.0]);
        assert_eq!(drain(&mut b), vec![10.0, 20.0, 30.0]);
        let got = {
            dispatcher.deliver(&note(json!(7), 4.0));
            a.try_recv().unwrap()
        };
        assert_eq!(
            got,
            CallProgress {
                progress: 4.0,
                total: Some(10.0),
                message: None
            }
        );

        // The next round's request: its token is the call's, the earlier one's no one's.
        dispatcher.sent(1, Some(&json!(9)));
        assert_eq!(dispatcher.deliver(&note(json!(7), 5.0)), Delivery::Unrouted);
        assert_eq!(
            dispatcher.deliver(&note(json!(9), 1.0)),
            Delivery::Delivered
        );
        assert_eq!(drain(&mut a), vec![1.0]);

        // The call ends: its registration and token are gone, the other call's stay.
        drop(a_reg);
        assert_eq!(dispatcher.registered(), 1);
        assert_eq!(dispatcher.deliver(&note(json!(9), 2.0)), Delivery::Unrouted);
        assert!(a.try_recv().is_err());
        assert_eq!(
            dispatcher.deliver(&note(json!("tok-8"), 40.0)),
            Delivery::Delivered
        );
        assert_eq!(drain(&mut b), vec![40.0]);
        // Every sender of the ended call is dropped: its reader sees the end.
        assert!(matches!(
            a.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        ));
    }

    #[test]
    fn a_full_queue_drops_without_waiting() {
        let dispatcher = Arc::new(ProgressDispatcher::default());
        let (tx, mut rx) = mpsc::channel(2);
        let _reg = dispatcher.register(1, tx);
        dispatcher.sent(1, Some(&json!(1)));
        assert_eq!(
            dispatcher.deliver(&note(json!(1), 1.0)),
            Delivery::Delivered
        );
        assert_eq!(
            dispatcher.deliver(&note(json!(1), 2.0)),
            Delivery::Delivered
        );
        // Full: dropped at once (this test would hang if delivering waited for room).
        assert_eq!(dispatcher.deliver(&note(json!(1), 3.0)), Delivery::Full);
        assert_eq!(drain(&mut rx), vec![1.0, 2.0]);
        assert_eq!(
            dispatcher.deliver(&note(json!(1), 4.0)),
            Delivery::Delivered
        );
        assert_eq!(drain(&mut rx), vec![4.0]);
        // A reader that went away: nothing blocks either.
        drop(rx);
        assert_eq!(dispatcher.deliver(&note(json!(1), 5.0)), Delivery::Closed);
    }

    #[test]
    fn unregistered_calls_and_requests_without_a_token_route_nothing() {
        let dispatcher = Arc::new(ProgressDispatcher::default());
        // A call that asked for no progress: its requests are not routed.
        dispatcher.sent(3, Some(&json!(1)));
        assert_eq!(dispatcher.deliver(&note(json!(1), 1.0)), Delivery::Unrouted);
        let (tx, mut rx) = mpsc::channel(4);
        let _reg = dispatcher.register(4, tx);
        dispatcher.sent(4, Some(&json!(2)));
        // A request sent without a token: the earlier one's progress no longer counts.
        dispatcher.sent(4, None);
        assert_eq!(dispatcher.deliver(&note(json!(2), 1.0)), Delivery::Unrouted);
        assert!(rx.try_recv().is_err());
        let token = ProgressToken(NumberOrString::Number(5));
        dispatcher.sent(4, Some(&serde_json::to_value(&token).unwrap()));
        assert_eq!(
            dispatcher.deliver(&ProgressNotificationParam::new(token, 1.0)),
            Delivery::Delivered
        );
    }

    #[test]
    fn a_token_given_to_another_call_stays_with_it() {
        let dispatcher = Arc::new(ProgressDispatcher::default());
        let (a_tx, mut a) = mpsc::channel(4);
        let (b_tx, mut b) = mpsc::channel(4);
        let a_reg = dispatcher.register(1, a_tx);
        let _b_reg = dispatcher.register(2, b_tx);
        dispatcher.sent(1, Some(&json!(1)));
        dispatcher.sent(2, Some(&json!(1)));
        // Call 1 ending or moving on does not take call 2's route.
        dispatcher.sent(1, Some(&json!(3)));
        drop(a_reg);
        assert_eq!(
            dispatcher.deliver(&note(json!(1), 1.0)),
            Delivery::Delivered
        );
        assert_eq!(drain(&mut b), vec![1.0]);
        assert!(a.try_recv().is_err());
    }
}
