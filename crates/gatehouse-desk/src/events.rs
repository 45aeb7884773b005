//! What the window is told: the desk's change notices as window events (`gatehouse://…`,
//! docs/desktop-api.md), carrying no decision. One [`EventHub`] per desk fans them out to
//! whoever shows them: the window in this process (tests), or every window connected to the
//! background host, and the host itself (a new card while no window is open starts one).

use std::sync::Arc;

use gatehouse_host::HostEvent;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::{DeskEvent, Notifier, SignInChange, SignInNotifier};

/// Window event names (see docs/desktop-api.md).
pub const PROMPTS: &str = "gatehouse://prompts";
pub const SERVERS: &str = "gatehouse://servers";
pub const AUDIT: &str = "gatehouse://audit";
pub const TRAFFIC: &str = "gatehouse://traffic";
pub const CLIENTS: &str = "gatehouse://clients";
pub const SIGN_INS: &str = "gatehouse://sign-ins";
/// A subscribed resource changed on its server: `{server, uri}`.
pub const RESOURCES: &str = "gatehouse://resources";
/// The background host's own state, told by the window to its page: `{state, message}`
/// (`quitting`: the host is quitting on purpose; `gone`: the connection to it ended).
pub const HOST: &str = "gatehouse://host";

/// Every "refetch" event: what a window that missed some (it lagged) is sent once each.
pub const REFETCH_ALL: &[&str] = &[PROMPTS, SERVERS, AUDIT, TRAFFIC, CLIENTS, SIGN_INS];

/// How many events wait for a slow listener before it lags (and is told to refetch all).
pub const HUB_CAPACITY: usize = 256;

/// One event for the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowEvent {
    pub event: String,
    pub payload: Value,
    /// A new card needs the person: raise the window (or start one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attention: Option<Attention>,
}

/// Which card asks for the person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Attention {
    Consent {
        prompt_id: u64,
    },
    SignIn {
        sign_in_id: u64,
        server: String,
    },
    /// The person asked for the window (the tray's Open, a notification's click).
    Open,
}

impl WindowEvent {
    fn plain(event: &str, payload: Value) -> WindowEvent {
        WindowEvent {
            event: event.to_string(),
            payload,
            attention: None,
        }
    }

    /// The window event of one of the desk's change notices.
    pub fn of_change(change: DeskEvent) -> WindowEvent {
        match change {
            DeskEvent::Prompts {
                prompt_id,
                attention,
            } => WindowEvent {
                event: PROMPTS.into(),
                payload: json!({"promptId": prompt_id}),
                attention: attention.then_some(Attention::Consent { prompt_id }),
            },
            DeskEvent::Servers { name } => WindowEvent::plain(SERVERS, json!({"name": name})),
            DeskEvent::Audit => WindowEvent::plain(AUDIT, json!({})),
            DeskEvent::Traffic { server } => WindowEvent::plain(TRAFFIC, json!({"server": server})),
            DeskEvent::Clients => WindowEvent::plain(CLIENTS, json!({})),
        }
    }

    /// The window event of a sign-in card's change.
    pub fn of_sign_in(change: SignInChange) -> WindowEvent {
        WindowEvent {
            event: SIGN_INS.into(),
            payload: json!({"signInId": change.sign_in_id}),
            attention: change.attention.then(|| Attention::SignIn {
                sign_in_id: change.sign_in_id,
                server: change.server.clone(),
            }),
        }
    }

    /// A resource the person subscribed to changed: `{server, uri}`, nothing more.
    pub fn of_resource(server: &str, uri: &str) -> WindowEvent {
        WindowEvent::plain(RESOURCES, json!({"server": server, "uri": uri}))
    }

    /// The host's own state for the page (see [`HOST`]).
    pub fn host(state: HostState, message: &str) -> WindowEvent {
        WindowEvent::plain(HOST, json!({"state": state, "message": message}))
    }
}

/// The background host's state as the page's banner shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostState {
    /// Quitting on purpose: the window closes too.
    Quitting,
    /// The connection to the host ended without a quit: nothing the window does can work.
    Gone,
    /// The person asked for the window: it comes to the front.
    Raise,
}

/// Fans one desk's window events out to every listener (bounded: a listener that falls
/// [`HUB_CAPACITY`] behind lags and should refetch everything).
#[derive(Clone)]
pub struct EventHub {
    sender: broadcast::Sender<WindowEvent>,
}

impl Default for EventHub {
    fn default() -> Self {
        EventHub::new()
    }
}

impl EventHub {
    pub fn new() -> EventHub {
        EventHub {
            sender: broadcast::channel(HUB_CAPACITY).0,
        }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<WindowEvent> {
        self.sender.subscribe()
    }

    /// Sends to every listener now (none listening is fine: nothing is shown).
    pub fn send(&self, event: WindowEvent) {
        let _ = self.sender.send(event);
    }

    /// The desk's [`Notifier`], sending here.
    pub fn notifier(&self) -> Notifier {
        let hub = self.clone();
        Arc::new(move |change| hub.send(WindowEvent::of_change(change)))
    }

    /// The desk's [`SignInNotifier`], sending here.
    pub fn sign_in_notifier(&self) -> SignInNotifier {
        let hub = self.clone();
        Arc::new(move |change| hub.send(WindowEvent::of_sign_in(change)))
    }
}

/// Passes the host's resource updates (for resources the person subscribed to) on to the
/// hub, until the host's event stream closes.
pub async fn forward_resource_updates(hub: EventHub, mut updates: broadcast::Receiver<HostEvent>) {
    use broadcast::error::RecvError;
    loop {
        match updates.recv().await {
            Ok(HostEvent::ResourceUpdated { server, uri }) => {
                hub.send(WindowEvent::of_resource(&server, &uri))
            }
            Ok(_) | Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_become_the_events_the_page_listens_for_and_only_new_cards_ask_for_attention() {
        let asking = WindowEvent::of_change(DeskEvent::Prompts {
            prompt_id: 7,
            attention: true,
        });
        assert_eq!(asking.event, PROMPTS);
        assert_eq!(asking.payload, json!({"promptId": 7}));
        assert_eq!(asking.attention, Some(Attention::Consent { prompt_id: 7 }));
        let answered = WindowEvent::of_change(DeskEvent::Prompts {
            prompt_id: 7,
            attention: false,
        });
        assert_eq!(answered.attention, None);
        let sign_in = WindowEvent::of_sign_in(SignInChange {
            sign_in_id: 3,
            server: "notes".into(),
            attention: true,
        });
        assert_eq!(sign_in.event, SIGN_INS);
        assert_eq!(sign_in.payload, json!({"signInId": 3}));
        // On the wire an event without attention carries no such key.
        let wire = serde_json::to_value(&answered).unwrap();
        assert_eq!(wire, json!({"event": PROMPTS, "payload": {"promptId": 7}}));
        let wire = serde_json::to_value(&sign_in).unwrap();
        assert_eq!(
            wire["attention"],
            json!({"kind": "sign_in", "sign_in_id": 3, "server": "notes"})
        );
    }
}
