//! The kill switch: denials counted against the session's abuse limits, and what passing one
//! does (audited, the server suspended, the connection closed).

use super::{ElicitationBroker, Session};
use crate::audit_event::session::SessionKilled;
use crate::consent::PromptUpdate;
use gatehouse_policy::{AbuseEvent, Decision, Reason};

impl ElicitationBroker {
    /// Counts an elicitation, well-formed or not, against the session's limits: the reason
    /// when one was crossed.
    pub(super) fn count_elicitation(&self, session: &Session) -> Option<Reason> {
        let now = (self.options.now)();
        session
            .abuse
            .lock()
            .expect("session poisoned")
            .record(AbuseEvent::Elicitation, now)
    }

    pub(super) fn count_denial(&self, session: &Session) {
        let now = (self.options.now)();
        let abuse = session
            .abuse
            .lock()
            .expect("session poisoned")
            .record(AbuseEvent::Denial, now);
        if let Some(reason) = abuse {
            self.kill(session, &reason);
        }
    }

    /// The kill switch: audited, the server suspended, the connection closed.
    pub(super) fn kill(&self, session: &Session, reason: &Reason) {
        {
            let mut killed = session.killed.lock().expect("session poisoned");
            if killed.is_some() {
                return;
            }
            *killed = Some(format!("{}: {}", reason.code, reason.detail));
        }
        let _ = self.gatekeeper.write_for(
            &session.verdict,
            &SessionKilled {
                name: session.server.clone(),
                decision: Decision::KillSessionOnElicitationAbuse,
                reason: reason.code.to_string(),
                detail: reason.detail.clone(),
            },
        );
        if let Err(error) = self
            .gatekeeper
            .suspend(&session.verdict, reason.code, &reason.detail)
        {
            tracing::error!(%error, "could not record the suspension");
        }
        self.ui.update(PromptUpdate::Suspended {
            server: session.server.clone(),
            detail: format!("{}: {}", reason.code, reason.detail),
        });
        session.kill.cancel();
    }
}
