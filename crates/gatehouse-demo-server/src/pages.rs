//! The connect pages: a small HTTP server on loopback standing in for the third-party page a
//! URL elicitation sends the user to.
//!
//! `connect_account` and `connect_account_required` issue a fresh, unguessable id (128 random
//! bits, hex) and send the user to `http://127.0.0.1:PORT/connect/{id}`. Submitting that page
//! (`POST /connect/{id}`) completes the id. For ids issued to a 2025-11-25 client, completing
//! also sends `notifications/elicitation/complete` to exactly the client that was asked; a
//! 2026-07-28 client learns the outcome by retrying its request instead.
//!
//! The server starts on first use, always on 127.0.0.1, and is shared by every connection (and
//! every HTTP session) of the process. Pages are static text: nothing a client or browser sends
//! is ever reflected into them. Every `GET` of a `/connect/` path counts as a hit and, when a
//! hits file is configured, is appended to it, so tests can prove a host never prefetched a URL.

use std::{
    collections::HashMap,
    fs::OpenOptions,
    io::Write,
    net::{Ipv4Addr, SocketAddr},
    path::PathBuf,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicU64, Ordering},
    },
};

use anyhow::Context;
use axum::{
    extract::State,
    http::{HeaderValue, Method, StatusCode, Uri, header},
    response::{IntoResponse, Response},
};
use rmcp::{
    Peer, RoleServer,
    model::{CustomNotification, ServerNotification},
};
use serde_json::json;
use tokio::{net::TcpListener, sync::OnceCell, sync::watch};

/// The path prefix of every connect page.
pub const CONNECT_PREFIX: &str = "/connect/";

/// The 2025-11-25 notification that tells a client a URL elicitation finished.
pub const ELICITATION_COMPLETE_METHOD: &str = "notifications/elicitation/complete";

/// Random bytes per id: 128 bits, so ids cannot be guessed.
const ID_BYTES: usize = 16;

/// Strict, since the page needs nothing but its own form.
const CONTENT_SECURITY_POLICY: &str =
    "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const CONNECTED_PAGE: &str = "<!doctype html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">\
<title>Gatehouse demo: connected</title></head>\n<body>\n<h1>Connected.</h1>\n\
<p>Connected. You can close this tab.</p>\n</body>\n</html>\n";

const NOT_FOUND_PAGE: &str = "<!doctype html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">\
<title>Gatehouse demo: not found</title></head>\n<body>\n<h1>Not found</h1>\n\
<p>This demo server never issued this page, or it has expired.</p>\n</body>\n</html>\n";

/// Where the page server listens and where it logs hits.
#[derive(Debug, Clone, Default)]
pub struct PageConfig {
    /// The port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Append `GET /connect/{id}` to this file for every page fetched.
    pub hits_file: Option<PathBuf>,
}

/// One MCP connection (a stdio process, or one 2025-11-25 HTTP session).
///
/// `connect_account_required` remembers its pending id per connection, and a 2025-11-25
/// completion goes only to the connection that was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnectionId(u64);

impl ConnectionId {
    /// An id no other connection of this process has.
    pub fn fresh() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// The tool that issued a connect id. A retry only counts for the tool that issued it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Issuer {
    /// `connect_account`: an `elicitation/create` request, or `input_required`.
    ConnectAccount,
    /// `connect_account_required`: error `-32042`, or `input_required`.
    ConnectAccountRequired,
}

/// What a tool knows about an issued id.
#[derive(Debug, Clone)]
pub struct Ticket {
    pub id: String,
    pub url: String,
    pub issuer: Issuer,
    pub service: String,
    pub connection: ConnectionId,
    /// Issued to a 2025-11-25 client, which is sent the completion notification.
    pub legacy: bool,
    /// The page was submitted.
    pub completed: bool,
    /// A tool call already reported this id as connected.
    pub consumed: bool,
}

/// What submitting a page did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// No such id was issued (or it was withdrawn).
    Unknown,
    /// Completed just now.
    Completed,
    /// Completed before; nothing was sent again.
    AlreadyCompleted,
}

/// The issued ids and the page server that completes them. Cheap to clone: all clones share
/// one registry and one server.
#[derive(Clone)]
pub struct ConnectPages {
    shared: Arc<Shared>,
}

struct Shared {
    config: PageConfig,
    listening: OnceCell<SocketAddr>,
    issued: Mutex<HashMap<String, Issued>>,
    /// Serializes appends to the hits file.
    hits: Mutex<()>,
}

struct Issued {
    issuer: Issuer,
    service: String,
    url: String,
    connection: ConnectionId,
    /// 2025-11-25 only: the client to send `notifications/elicitation/complete` to.
    notify: Option<Peer<RoleServer>>,
    /// Set when the first POST claims the id, so a second POST sends nothing.
    claimed: bool,
    consumed: bool,
    /// `true` once the page was submitted (and any notification sent).
    done: watch::Sender<bool>,
}

impl Issued {
    fn ticket(&self, id: &str) -> Ticket {
        Ticket {
            id: id.to_owned(),
            url: self.url.clone(),
            issuer: self.issuer,
            service: self.service.clone(),
            connection: self.connection,
            legacy: self.notify.is_some(),
            // Submitted, even while the notification to the client is still being sent.
            completed: self.claimed,
            consumed: self.consumed,
        }
    }
}

impl ConnectPages {
    pub fn new(config: PageConfig) -> Self {
        Self {
            shared: Arc::new(Shared {
                config,
                listening: OnceCell::new(),
                issued: Mutex::new(HashMap::new()),
                hits: Mutex::new(()),
            }),
        }
    }

    /// The address the page server listens on, starting it on first use.
    ///
    /// # Errors
    ///
    /// When the port cannot be bound; the next call tries again.
    pub async fn listening(&self) -> anyhow::Result<SocketAddr> {
        self.shared
            .listening
            .get_or_try_init(|| self.start())
            .await
            .copied()
    }

    async fn start(&self) -> anyhow::Result<SocketAddr> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.shared.config.port));
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("could not start the connect page server on {addr}"))?;
        let local = listener
            .local_addr()
            .context("page server has no local address")?;
        let router = axum::Router::new()
            .fallback(serve_page)
            .with_state(self.clone());
        tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, router).await {
                tracing::warn!(%error, "connect page server stopped");
            }
        });
        // stderr only: in stdio mode stdout belongs to JSON-RPC.
        tracing::info!(%local, "serving connect pages");
        Ok(local)
    }

    /// Issue a fresh id for `service`. `notify` is the 2025-11-25 client to tell when the page
    /// is submitted; `None` for 2026-07-28, which has no completion notification.
    ///
    /// # Errors
    ///
    /// When the page server cannot start or no randomness is available.
    pub async fn issue(
        &self,
        issuer: Issuer,
        service: &str,
        connection: ConnectionId,
        notify: Option<Peer<RoleServer>>,
    ) -> anyhow::Result<Ticket> {
        let listening = self.listening().await?;
        let id = fresh_id()?;
        let url = format!("http://{listening}{CONNECT_PREFIX}{id}");
        let (done, _) = watch::channel(false);
        let issued = Issued {
            issuer,
            service: service.to_owned(),
            url,
            connection,
            notify,
            claimed: false,
            consumed: false,
            done,
        };
        let ticket = issued.ticket(&id);
        self.lock().insert(id, issued);
        Ok(ticket)
    }

    /// The id's current state, if it was issued and not withdrawn.
    pub fn ticket(&self, id: &str) -> Option<Ticket> {
        self.lock().get(id).map(|issued| issued.ticket(id))
    }

    /// The unconsumed 2025-11-25 id `issuer` gave `connection` for `service`, if any.
    pub fn pending(
        &self,
        connection: ConnectionId,
        issuer: Issuer,
        service: &str,
    ) -> Option<Ticket> {
        self.lock()
            .iter()
            .find(|(_, issued)| {
                issued.connection == connection
                    && issued.issuer == issuer
                    && issued.service == service
                    && issued.notify.is_some()
                    && !issued.consumed
            })
            .map(|(id, issued)| issued.ticket(id))
    }

    /// How many unconsumed 2025-11-25 ids `issuer` gave `connection`.
    pub fn pending_count(&self, connection: ConnectionId, issuer: Issuer) -> usize {
        self.lock()
            .values()
            .filter(|issued| {
                issued.connection == connection
                    && issued.issuer == issuer
                    && issued.notify.is_some()
                    && !issued.consumed
            })
            .count()
    }

    /// Mark a completed id as reported, so it cannot be reported twice. Returns whether it was
    /// completed and not consumed before. The id stays known, so the page stays idempotent.
    pub fn consume(&self, id: &str) -> bool {
        let mut issued = self.lock();
        match issued.get_mut(id) {
            // `claimed`, not `done`: a 2025-11-25 client retries the call as soon as the
            // completion notification arrives, which `complete` sends before it sets `done`.
            Some(entry) if entry.claimed && !entry.consumed => {
                entry.consumed = true;
                true
            }
            _ => false,
        }
    }

    /// Forget an id (declined, cancelled or timed out): its page answers 404 from now on.
    pub fn withdraw(&self, id: &str) {
        self.lock().remove(id);
    }

    /// A receiver that turns `true` when the page is submitted, or is closed when the id is
    /// withdrawn.
    pub fn watch(&self, id: &str) -> Option<watch::Receiver<bool>> {
        self.lock().get(id).map(|issued| issued.done.subscribe())
    }

    /// Submit the page for `id`: the first time, notify the 2025-11-25 client that was asked
    /// (if any), then wake whoever waits for it.
    pub async fn complete(&self, id: &str) -> Completion {
        let (notify, done) = {
            let mut issued = self.lock();
            let Some(entry) = issued.get_mut(id) else {
                return Completion::Unknown;
            };
            if entry.claimed {
                return Completion::AlreadyCompleted;
            }
            entry.claimed = true;
            (entry.notify.clone(), entry.done.clone())
        };
        if let Some(peer) = notify {
            // Sent before the waiting tool call is woken, so the client sees the completion
            // before that call's result.
            let notification = ServerNotification::CustomNotification(CustomNotification::new(
                ELICITATION_COMPLETE_METHOD,
                Some(json!({ "elicitationId": id })),
            ));
            if let Err(error) = peer.send_notification(notification).await {
                tracing::warn!(%error, "could not send {ELICITATION_COMPLETE_METHOD}");
            }
        }
        done.send_replace(true);
        tracing::info!("connect page submitted");
        Completion::Completed
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Issued>> {
        // A panic while holding the lock cannot leave the map half-updated: recover it.
        self.shared
            .issued
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn record_hit(&self, method: &Method, path: &str) {
        let Some(file) = &self.shared.config.hits_file else {
            return;
        };
        let _guard = self
            .shared
            .hits
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // `path` is the raw request path: percent-encoded, so it cannot break the line.
        let line = format!("{method} {path}\n");
        let written = OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
            .and_then(|mut file| {
                file.write_all(line.as_bytes())?;
                file.flush()
            });
        if let Err(error) = written {
            tracing::warn!(%error, "could not record a page hit");
        }
    }
}

/// 128 random bits, hex.
fn fresh_id() -> anyhow::Result<String> {
    let mut bytes = [0u8; ID_BYTES];
    getrandom::fill(&mut bytes).map_err(|error| anyhow::anyhow!("no randomness: {error}"))?;
    Ok(hex::encode(bytes))
}

/// A fresh id for elicitations that have no page (e.g. `open_link`).
pub fn fresh_elicitation_id() -> anyhow::Result<String> {
    fresh_id()
}

/// Whether `value` looks like an id this server issues: 32 lowercase hex digits.
pub fn is_id(value: &str) -> bool {
    value.len() == ID_BYTES * 2
        && value
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

/// Every request to the page server lands here; paths are matched by hand so that every GET of
/// a `/connect/` path counts as a hit, whatever follows the prefix.
async fn serve_page(State(pages): State<ConnectPages>, method: Method, uri: Uri) -> Response {
    let path = uri.path();
    let Some(id) = path.strip_prefix(CONNECT_PREFIX) else {
        return not_found();
    };
    match method {
        Method::GET | Method::HEAD => {
            pages.record_hit(&method, path);
            if is_id(id) && pages.ticket(id).is_some() {
                html(StatusCode::OK, connect_page(id))
            } else {
                not_found()
            }
        }
        Method::POST => {
            if !is_id(id) {
                return not_found();
            }
            match pages.complete(id).await {
                Completion::Unknown => not_found(),
                Completion::Completed | Completion::AlreadyCompleted => {
                    html(StatusCode::OK, CONNECTED_PAGE.to_owned())
                }
            }
        }
        _ => {
            let mut response = StatusCode::METHOD_NOT_ALLOWED.into_response();
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD, POST"));
            response
        }
    }
}

/// The page for `id`, which the caller checked is one of our hex ids: nothing else is inserted.
fn connect_page(id: &str) -> String {
    debug_assert!(is_id(id));
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">\
<title>Gatehouse demo: connect an account</title></head>\n<body>\n\
<h1>Connect your demo account</h1>\n\
<p>This page is served by the Gatehouse demo server on this computer. Submitting it completes \
the demo connection; nothing is sent anywhere else.</p>\n\
<form method=\"post\" action=\"{CONNECT_PREFIX}{id}\"><button type=\"submit\">Connect</button></form>\n\
</body>\n</html>\n"
    )
}

fn not_found() -> Response {
    html(StatusCode::NOT_FOUND, NOT_FOUND_PAGE.to_owned())
}

fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_fresh_128_bit_hex() {
        let a = fresh_id().unwrap();
        let b = fresh_id().unwrap();
        assert!(is_id(&a) && is_id(&b), "{a} {b}");
        assert_ne!(a, b);
        for bad in [
            "",
            "abc",
            "0123456789ABCDEF0123456789ABCDEF",
            &format!("{a}0"),
        ] {
            assert!(!is_id(bad), "{bad}");
        }
    }

    #[test]
    fn the_page_posts_back_to_itself() {
        let id = fresh_id().unwrap();
        let page = connect_page(&id);
        assert!(page.contains(&format!("<form method=\"post\" action=\"/connect/{id}\">")));
    }

    #[tokio::test]
    async fn completion_is_idempotent_and_withdrawal_forgets() {
        let pages = ConnectPages::new(PageConfig::default());
        let connection = ConnectionId::fresh();
        let ticket = pages
            .issue(Issuer::ConnectAccount, "svc", connection, None)
            .await
            .unwrap();
        assert!(
            ticket.url.starts_with("http://127.0.0.1:"),
            "{}",
            ticket.url
        );
        assert!(ticket.url.ends_with(&format!("/connect/{}", ticket.id)));
        assert!(!ticket.completed && !ticket.legacy);
        assert!(!pages.consume(&ticket.id), "not completed yet");

        assert_eq!(pages.complete(&ticket.id).await, Completion::Completed);
        assert_eq!(
            pages.complete(&ticket.id).await,
            Completion::AlreadyCompleted
        );
        assert!(pages.ticket(&ticket.id).unwrap().completed);
        assert!(pages.consume(&ticket.id));
        assert!(!pages.consume(&ticket.id), "consumed once");

        pages.withdraw(&ticket.id);
        assert!(pages.ticket(&ticket.id).is_none());
        assert_eq!(pages.complete(&ticket.id).await, Completion::Unknown);
    }
}
