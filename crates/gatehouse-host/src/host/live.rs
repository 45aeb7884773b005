//! What a front end that shares the host (each gateway client) uses: live connections only
//! (a downstream client's request never connects or re-admits), the tools of every live
//! connection, connecting in the background, and the host's start and server changes.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, watch};

use super::{ApiError, Host, Slot};
use crate::ErrorCode;
use crate::connection::Connection;
use crate::{CallOptions, HostEvent};

/// How much longer than the connect timeout a downstream client's request waits for a server
/// that is connecting (a sign-in's consent can take the person a moment).
const LIVE_WAIT_MARGIN: Duration = Duration::from_secs(5);

impl Host {
    /// The connection a request with `options` uses. The person's own requests (no caller)
    /// connect a server that is not connected, admitting it first; a downstream client's
    /// request (a caller) uses live connections only ([`Host::live`]), so no AI client can
    /// make the host re-run admission, fetch attestations, respawn a crashed server or put
    /// up a sign-in by asking for something.
    pub(crate) async fn connection_for(
        &self,
        name: &str,
        options: &CallOptions,
    ) -> Result<Arc<Connection>, ApiError> {
        match options.caller {
            Some(_) => self.live(name).await,
            None => self.connection(name).await,
        }
    }

    /// The live connection to `name`, never connecting: waits (at most the connect timeout
    /// and a margin) while the host is starting or the server is connecting, then answers
    /// with the connection or `server_not_connected`.
    pub(crate) async fn live(&self, name: &str) -> Result<Arc<Connection>, ApiError> {
        self.spec(name)?;
        let wait = self.options.connect_timeout + LIVE_WAIT_MARGIN;
        let deadline = tokio::time::Instant::now() + wait;
        let mut changes = self.servers_changed.subscribe();
        let mut started = self.started.subscribe();
        loop {
            changes.borrow_and_update();
            let has_started = *started.borrow_and_update();
            let down = {
                let slots = self.slots.lock().await;
                match slots.get(name) {
                    Some(Slot::Connected(c))
                        if c.session().is_none_or(|s| s.killed().is_none()) =>
                    {
                        return Ok(c.clone());
                    }
                    Some(Slot::Connecting) => None,
                    // Not tried yet: the host's first connect may be on its way.
                    None if !has_started => None,
                    Some(Slot::Failed(row)) => Some(row.headline.clone()),
                    Some(Slot::Connected(_)) => {
                        Some("its connection was closed (the server was suspended)".to_string())
                    }
                    None => Some("it was never connected".to_string()),
                }
            };
            if let Some(why) = down {
                return Err(ApiError::new(
                    ErrorCode::ServerNotConnected,
                    format!(
                        "{name:?} is not connected ({why}); an AI client's request never connects or re-admits a server: connect it in Gatehouse (the app's Connect, or `gatehouse connect {name}`)"
                    ),
                ));
            }
            tokio::select! {
                _ = changes.changed() => {}
                _ = started.changed() => {}
                () = tokio::time::sleep_until(deadline) => {
                    return Err(ApiError::new(
                        ErrorCode::Connecting,
                        format!(
                            "{name:?} is still connecting after {}s; try again in a moment",
                            wait.as_secs()
                        ),
                    ));
                }
            }
        }
    }

    /// Connects the listed servers never tried yet (or only `only`, for a gateway that offers
    /// one server's tools; an unknown name connects nothing), on a task of its own: a gateway
    /// starts serving at once, and its first listing waits for [`Host::started`]. A server
    /// that failed or was refused stays so: a client connecting (each bridged or HTTP
    /// session) never re-runs admission; the person's connect does. Must run inside a Tokio
    /// runtime.
    pub fn connect_in_background(self: &Arc<Self>, only: Option<String>) {
        let host = self.clone();
        tokio::spawn(async move {
            let names: Vec<String> = match (&only, host.specs()) {
                (Some(name), _) => vec![name.clone()],
                (None, Ok(specs)) => specs.into_iter().map(|(n, _, _)| n).collect(),
                (None, Err(_)) => Vec::new(),
            };
            let untried: Vec<String> = {
                let slots = host.slots.lock().await;
                names
                    .into_iter()
                    .filter(|name| !slots.contains_key(name))
                    .collect()
            };
            futures::future::join_all(
                untried
                    .iter()
                    .filter(|name| host.has_server(name))
                    .map(|name| host.connection(name)),
            )
            .await;
            host.started.send_replace(true);
        });
    }

    /// Flips to true when the first [`Host::connect_all`] has ended.
    pub fn started(&self) -> watch::Receiver<bool> {
        self.started.subscribe()
    }

    /// Changes whenever a server's state changed (connecting, admitted, refused, suspended,
    /// resumed, added): what a front end offers may have changed with it.
    pub fn server_changes(&self) -> watch::Receiver<u64> {
        self.servers_changed.subscribe()
    }

    /// Every tool of every live connection with the gate's status for it, by server in list
    /// order: allowed (admitted servers' allow-listed tools and, in the warn posture, the
    /// approved tools of unattested ones), hidden or pin-blocked. Servers that failed, are
    /// suspended or are still connecting have none; one whose listing failed has none until
    /// it lists again. What a gateway offers (the allowed ones) and resolves calls against.
    pub async fn live_tools(&self) -> Vec<(String, crate::connection::GatedTool)> {
        let live: Vec<(String, Arc<Connection>)> = {
            let slots = self.slots.lock().await;
            let Ok(specs) = self.specs() else {
                return Vec::new();
            };
            specs
                .into_iter()
                .filter_map(|(name, _, _)| match slots.get(&name) {
                    Some(Slot::Connected(c))
                        if c.session().is_none_or(|s| s.killed().is_none()) =>
                    {
                        Some((name, c.clone()))
                    }
                    _ => None,
                })
                .collect()
        };
        let listed = futures::future::join_all(live.iter().map(|(_, c)| c.gated_tools())).await;
        live.into_iter()
            .zip(listed)
            .flat_map(|((name, _), gated)| {
                gated
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |tool| (name.clone(), tool))
            })
            .collect()
    }

    /// What servers do that a front end passes on (progress, list changes, logs).
    pub fn subscribe(&self) -> broadcast::Receiver<HostEvent> {
        self.events.subscribe()
    }
}
