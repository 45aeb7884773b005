//! The elicitation broker: every elicitation, in either era, gets one policy decision, goes to
//! the user through a [`ConsentUi`] with a host-drawn identity banner, is answered only with
//! what the user approved, and leaves a receipt in the audit log before the answer is sent.
//!
//! One broker serves a whole process (one queue of prompts, one pending map); each connection
//! has a [`Session`] with what the broker needs to know about that server. URL completions
//! (`notifications/elicitation/complete`, 2025-11-25) are matched in a pending map keyed by
//! (server, elicitationId); anything else is ignored, audited, and counted as abuse.
//!
//! Split by concern: a connection's [`Session`] (`session.rs`), one elicitation from arrival
//! to answer (`elicit.rs`), asking the user (`ask.rs`), URL flows and their completions
//! (`url_flow.rs`), receipts and records (`receipt.rs`), the kill switch (`abuse.rs`); here the
//! broker itself and its options.

mod abuse;
mod ask;
mod elicit;
mod receipt;
mod session;
mod url_flow;

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gatehouse_policy::Policy;
use tokio::sync::Notify;

use crate::consent::{ConsentUi, UrlOpener};
use crate::gatekeeper::Gatekeeper;

pub use elicit::{
    Arrival, Association, Correlation, CorrelationBasis, MAX_SHOWN_MESSAGE_BYTES,
    truncate_for_display,
};
pub use receipt::{ElicitationAnswer, ElicitationRecord};
pub use session::{Authorization, ForgetCall, Session};
pub use url_flow::WaitOutcome;

use url_flow::Pending;

/// How long a person has to answer a prompt or finish a URL flow before it is cancelled. Much
/// longer than a request timeout: people read, think and type.
pub const DEFAULT_HUMAN_TIMEOUT: Duration = Duration::from_secs(10 * 60);

pub type InstantClock = Arc<dyn Fn() -> Instant + Send + Sync>;

#[derive(Clone)]
pub struct BrokerOptions {
    pub human_timeout: Duration,
    /// The OS user, recorded in receipts.
    pub user: String,
    /// Monotonic time for the abuse windows; passed in so tests can drive it.
    pub now: InstantClock,
}

impl Default for BrokerOptions {
    fn default() -> Self {
        BrokerOptions {
            human_timeout: DEFAULT_HUMAN_TIMEOUT,
            user: os_user(),
            now: Arc::new(Instant::now),
        }
    }
}

/// The OS user name, from the environment the host was started in.
pub fn os_user() -> String {
    ["USER", "LOGNAME", "USERNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "unknown".into())
}

/// The process-wide broker.
pub struct ElicitationBroker {
    policy: Arc<Policy>,
    ui: Arc<dyn ConsentUi>,
    opener: Arc<dyn UrlOpener>,
    gatekeeper: Arc<Gatekeeper>,
    options: BrokerOptions,
    /// Prompts are shown one at a time, in arrival order (tokio's mutex is fair).
    queue: tokio::sync::Mutex<()>,
    next_prompt: AtomicU64,
    next_call: AtomicU64,
    pending: Mutex<HashMap<(String, String), Pending>>,
    completions: Notify,
}

impl std::fmt::Debug for ElicitationBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElicitationBroker")
            .field("policy", &self.policy.version)
            .finish_non_exhaustive()
    }
}

impl ElicitationBroker {
    pub fn new(
        policy: Arc<Policy>,
        ui: Arc<dyn ConsentUi>,
        opener: Arc<dyn UrlOpener>,
        gatekeeper: Arc<Gatekeeper>,
        options: BrokerOptions,
    ) -> Arc<ElicitationBroker> {
        Arc::new(ElicitationBroker {
            policy,
            ui,
            opener,
            gatekeeper,
            options,
            queue: tokio::sync::Mutex::new(()),
            next_prompt: AtomicU64::new(0),
            next_call: AtomicU64::new(0),
            pending: Mutex::new(HashMap::new()),
            completions: Notify::new(),
        })
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub fn ui(&self) -> &Arc<dyn ConsentUi> {
        &self.ui
    }
}
