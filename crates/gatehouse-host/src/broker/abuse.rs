//! The kill switch: denials counted against the session's abuse limits, and what passing one
//! does (audited, the server suspended, the connection closed).

use gatehouse_policy::{AbuseEvent, Decision, Reason};
use serde_json::json;

use super::{ElicitationBroker, Session};
use crate::consent::PromptUpdate;
use crate::gatekeeper::AuditEvent;

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
        let _ = self.gatekeeper.audit(
            AuditEvent::SessionKilled,
            &session.verdict,
            json!({"name": session.server, "decision": Decision::KillSessionOnElicitationAbuse.as_str(), "reason": reason.code, "detail": reason.detail}),
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
