//! Desktop notifications over `org.freedesktop.Notifications`: why Gatehouse needs the person
//! while its window is closed ("echo is asking for your input"). A click on the notification
//! (its "default" action, on servers that support actions) reaches the host as
//! [`TrayAction::Open`].
//!
//! The words are ours: a [`Notice`] is one of a few closed kinds, and the only outside text in
//! it (a server's name, its verified identity) is cut to a bounded length, stripped of control
//! characters and, where the server renders body markup, escaped.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use zbus::message::Type as MessageType;
use zbus::zvariant::Value;
use zbus::{MatchRule, MessageStream};

use crate::{ActionHandler, Bus, PresenceError, PresenceErrorCode, TrayAction, bounded_line};

const NAME: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";
/// Server and identity names are cut to this many characters.
const MAX_NAME: usize = 80;
/// How many sent notifications we remember to match clicks against: older ones are long gone
/// from the screen.
const REMEMBERED: usize = 32;
/// Signals queued for the listener before the oldest are dropped.
const SIGNAL_QUEUE: usize = 64;

/// Why Gatehouse shows a notification. Closed: every text a notification can carry is written
/// here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    /// A consent card waits: `server` asks for the person's input. `identity` is the server's
    /// verified identity (publisher, signer) when it has one; `vouched_by` the bundle that
    /// vouches for it when the server publishes no attestation of its own, so the notification
    /// never reads as the server's own word.
    ConsentWaiting {
        server: String,
        identity: Option<String>,
        vouched_by: Option<String>,
    },
    /// A sign-in card waits: `server` needs the person to sign in.
    SignInWaiting { server: String },
    /// The window closed and nothing shows a tray icon: say that serving goes on.
    StillServing,
    /// Gatehouse stopped serving (an explicit quit).
    Quitting,
}

impl Notice {
    /// A stable code for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Notice::ConsentWaiting { .. } => "consent_waiting",
            Notice::SignInWaiting { .. } => "sign_in_waiting",
            Notice::StillServing => "still_serving",
            Notice::Quitting => "quitting",
        }
    }

    /// The one-line summary (plain text: servers never render markup in it).
    pub fn summary(&self) -> String {
        match self {
            Notice::ConsentWaiting { server, .. } => {
                format!(
                    "{} is asking for your input",
                    bounded_line(server, MAX_NAME)
                )
            }
            Notice::SignInWaiting { server } => {
                format!("{} needs you to sign in", bounded_line(server, MAX_NAME))
            }
            Notice::StillServing => "Gatehouse is still running".to_string(),
            Notice::Quitting => "Gatehouse stopped".to_string(),
        }
    }

    /// The body, as plain text (escaped by [`Notifier::send`] where the server reads markup).
    pub fn body(&self) -> String {
        match self {
            Notice::ConsentWaiting {
                server,
                identity,
                vouched_by,
            } => {
                let server = bounded_line(server, MAX_NAME);
                let who = match (identity, vouched_by) {
                    (Some(id), Some(bundle)) if !bounded_line(id, MAX_NAME).is_empty() => format!(
                        "{server} ({}: vouched for by {}; the server publishes no attestation)",
                        bounded_line(id, MAX_NAME),
                        bounded_line(bundle, MAX_NAME)
                    ),
                    (Some(id), None) if !bounded_line(id, MAX_NAME).is_empty() => {
                        format!("{server} (verified: {})", bounded_line(id, MAX_NAME))
                    }
                    _ => server,
                };
                format!(
                    "{who} is waiting for your answer in Gatehouse. Open Gatehouse to allow or decline."
                )
            }
            Notice::SignInWaiting { server } => format!(
                "{} needs you to sign in before it can answer your AI client. Open Gatehouse to sign in.",
                bounded_line(server, MAX_NAME)
            ),
            Notice::StillServing => "Gatehouse keeps serving your AI clients in the background. \
                 Quit it from the Gatehouse window or with `gatehouse-desktop --quit`."
                .to_string(),
            Notice::Quitting => "AI clients can no longer reach your servers through Gatehouse \
                 until you start it again."
                .to_string(),
        }
    }
}

/// Escapes text for the notification body markup (a small subset of HTML): `&`, `<`, `>`.
pub fn escape_markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// The id the notification server gave a notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NoticeId(pub u32);

/// Called with the notification the person clicked; runs on a D-Bus task: keep it short.
pub type ClickHandler = Arc<dyn Fn(NoticeId) + Send + Sync>;

/// Notifications we sent: the id and the unique bus name of the server that took it (only
/// that server's signals about it count).
type Sent = Arc<Mutex<VecDeque<(u32, String)>>>;

/// Sends notifications and turns clicks on them into [`TrayAction::Open`].
pub struct Notifier {
    conn: zbus::Connection,
    sent: Sent,
    listener: tokio::task::JoinHandle<()>,
}

impl Notifier {
    /// Starts listening for clicks on our notifications: each click is
    /// `on_action(TrayAction::Open)`. The notification server need not run yet (it is often
    /// started on the first call).
    pub async fn new(bus: &Bus, on_action: ActionHandler) -> Result<Notifier, PresenceError> {
        Notifier::with_clicks(bus, Arc::new(move |_| on_action(TrayAction::Open))).await
    }

    /// Like [`Notifier::new`], telling which notification was clicked.
    pub async fn with_clicks(bus: &Bus, on_click: ClickHandler) -> Result<Notifier, PresenceError> {
        let conn = bus.connection().clone();
        let rule = MatchRule::builder()
            .msg_type(MessageType::Signal)
            .interface(NAME)
            .and_then(|r| r.path(PATH))
            .map(|r| r.build())
            .map_err(|e| {
                PresenceError::from_zbus(
                    "the notification match rule",
                    PresenceErrorCode::DbusFailed,
                    e,
                )
            })?;
        let stream = MessageStream::for_match_rule(rule, &conn, Some(SIGNAL_QUEUE))
            .await
            .map_err(|e| {
                PresenceError::from_zbus(
                    "listening for notification clicks",
                    PresenceErrorCode::DbusFailed,
                    e,
                )
            })?;
        let sent: Sent = Arc::new(Mutex::new(VecDeque::with_capacity(REMEMBERED)));
        let listener = crate::spawn(listen(stream, sent.clone(), on_click))?;
        Ok(Notifier {
            conn,
            sent,
            listener,
        })
    }

    /// Shows `notice`. No notification server → `no_notification_server`; one that does not
    /// answer → `timeout` (each call is bounded by [`crate::CALL_TIMEOUT`]).
    pub async fn send(&self, notice: &Notice) -> Result<NoticeId, PresenceError> {
        let caps: Vec<String> = self
            .conn
            .call_method(Some(NAME), PATH, Some(NAME), "GetCapabilities", &())
            .await
            .and_then(|reply| reply.body().deserialize::<Vec<String>>())
            .map_err(|e| {
                PresenceError::from_zbus(
                    "asking the notification server what it shows",
                    PresenceErrorCode::NoNotificationServer,
                    e,
                )
            })?;
        let has = |cap: &str| caps.iter().take(64).any(|c| c == cap);
        let body = if has("body-markup") {
            escape_markup(&notice.body())
        } else {
            notice.body()
        };
        let actions: Vec<&str> = if has("actions") {
            vec!["default", "Open Gatehouse"]
        } else {
            Vec::new()
        };
        let mut hints = std::collections::HashMap::<&str, Value<'_>>::new();
        // Normal urgency: a waiting card matters, but the window shows it too.
        hints.insert("urgency", Value::U8(1));
        let reply = self
            .conn
            .call_method(
                Some(NAME),
                PATH,
                Some(NAME),
                "Notify",
                &(
                    "Gatehouse",
                    0u32,
                    "gatehouse",
                    notice.summary(),
                    body,
                    actions,
                    hints,
                    -1i32,
                ),
            )
            .await
            .map_err(|e| {
                PresenceError::from_zbus(
                    "showing a notification",
                    PresenceErrorCode::NoNotificationServer,
                    e,
                )
            })?;
        let id: u32 = reply.body().deserialize().map_err(|e| {
            PresenceError::from_zbus(
                "the notification server's answer",
                PresenceErrorCode::DbusFailed,
                e,
            )
        })?;
        let server = reply
            .header()
            .sender()
            .map(|s| s.to_string())
            .unwrap_or_default();
        let mut sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        if sent.len() == REMEMBERED {
            sent.pop_front();
        }
        sent.push_back((id, server));
        Ok(NoticeId(id))
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

/// Reports `ActionInvoked(id, "default")` for one of our notifications, from the server that
/// showed it; forgets closed ones.
async fn listen(mut stream: MessageStream, sent: Sent, on_click: ClickHandler) {
    while let Some(message) = stream.next().await {
        let Ok(message) = message else { continue };
        let header = message.header();
        let (Some(member), Some(sender)) = (header.member(), header.sender()) else {
            continue;
        };
        let sender = sender.as_str();
        match member.as_str() {
            "ActionInvoked" => {
                let Ok((id, action)) = message.body().deserialize::<(u32, String)>() else {
                    continue;
                };
                let ours = sent
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .iter()
                    .any(|(i, s)| *i == id && s == sender);
                if ours && action == "default" {
                    on_click(NoticeId(id));
                }
            }
            "NotificationClosed" => {
                let Ok((id, _reason)) = message.body().deserialize::<(u32, u32)>() else {
                    continue;
                };
                sent.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .retain(|(i, s)| !(*i == id && s == sender));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped() {
        assert_eq!(
            escape_markup("<b>evil</b>&"),
            "&lt;b&gt;evil&lt;/b&gt;&amp;"
        );
        assert_eq!(escape_markup("plain"), "plain");
        assert_eq!(escape_markup("&amp;"), "&amp;amp;");
    }

    #[test]
    fn notice_text_is_bounded_and_names_the_server() {
        let n = Notice::ConsentWaiting {
            server: "echo".into(),
            identity: Some("Example Corp".into()),
            vouched_by: None,
        };
        assert_eq!(n.summary(), "echo is asking for your input");
        assert!(
            n.body()
                .starts_with("echo (verified: Example Corp) is waiting")
        );
        let vouched = Notice::ConsentWaiting {
            server: "linear".into(),
            identity: Some("urn:acme:linear".into()),
            vouched_by: Some("acme@3".into()),
        };
        assert!(
            vouched.body().starts_with(
                "linear (urn:acme:linear: vouched for by acme@3; the server publishes no attestation) is waiting"
            ),
            "{}",
            vouched.body()
        );
        assert!(!vouched.body().contains("verified"));
        let unverified = Notice::ConsentWaiting {
            server: "echo".into(),
            identity: None,
            vouched_by: None,
        };
        assert!(!unverified.body().contains("verified"));
        let blank = Notice::ConsentWaiting {
            server: "echo".into(),
            identity: Some("\n\t".into()),
            vouched_by: Some("acme@3".into()),
        };
        assert!(!blank.body().contains("verified"), "{}", blank.body());
        let long = Notice::SignInWaiting {
            server: format!("a\nb{}", "x".repeat(500)),
        };
        assert!(long.summary().chars().count() < MAX_NAME + 30);
        assert!(!long.summary().contains('\n'));
        assert_eq!(long.kind(), "sign_in_waiting");
    }
}
