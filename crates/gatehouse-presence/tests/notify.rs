//! Notifications against a real session bus (a private dbus-daemon) and a recording
//! notification server written here.

mod support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use gatehouse_presence::{Bus, Notice, NoticeId, Notifier, PresenceErrorCode, TrayAction};
use support::{PrivateBus, next_action, recorder};
use zbus::interface;
use zbus::object_server::SignalEmitter;
use zbus::zvariant::OwnedValue;

/// One recorded `Notify` call.
#[derive(Clone, Debug)]
struct Notified {
    app_name: String,
    summary: String,
    body: String,
    actions: Vec<String>,
    expire_timeout: i32,
}

/// An org.freedesktop.Notifications server that records what it is asked to show.
struct Server {
    capabilities: Vec<String>,
    seen: Arc<Mutex<Vec<Notified>>>,
    next_id: u32,
    /// Never answers Notify (a hung daemon).
    hang: bool,
}

#[interface(name = "org.freedesktop.Notifications")]
impl Server {
    fn get_capabilities(&self) -> Vec<String> {
        self.capabilities.clone()
    }

    #[allow(clippy::too_many_arguments)]
    async fn notify(
        &mut self,
        app_name: String,
        _replaces_id: u32,
        _app_icon: String,
        summary: String,
        body: String,
        actions: Vec<String>,
        _hints: HashMap<String, OwnedValue>,
        expire_timeout: i32,
    ) -> u32 {
        if self.hang {
            std::future::pending::<()>().await;
        }
        self.seen.lock().unwrap().push(Notified {
            app_name,
            summary,
            body,
            actions,
            expire_timeout,
        });
        self.next_id += 1;
        self.next_id
    }

    fn close_notification(&self, _id: u32) {}

    #[zbus(out_args("name", "vendor", "version", "spec_version"))]
    fn get_server_information(&self) -> (String, String, String, String) {
        (
            "recorder".into(),
            "gatehouse tests".into(),
            "1".into(),
            "1.2".into(),
        )
    }

    #[zbus(signal)]
    async fn action_invoked(
        emitter: &SignalEmitter<'_>,
        id: u32,
        action_key: &str,
    ) -> zbus::Result<()>;

    #[zbus(signal)]
    async fn notification_closed(
        emitter: &SignalEmitter<'_>,
        id: u32,
        reason: u32,
    ) -> zbus::Result<()>;
}

struct Running {
    conn: zbus::Connection,
    seen: Arc<Mutex<Vec<Notified>>>,
}

impl Running {
    fn emitter(&self) -> SignalEmitter<'_> {
        SignalEmitter::new(&self.conn, "/org/freedesktop/Notifications").expect("the path")
    }

    /// A round trip to the bus: every signal this connection sent before has been routed.
    async fn flush(&self) {
        zbus::fdo::DBusProxy::new(&self.conn)
            .await
            .expect("the bus proxy")
            .get_id()
            .await
            .expect("a round trip");
    }
}

/// A recording server, its object exported before it takes the name (as a real one is).
async fn start_server(bus: &PrivateBus, capabilities: &[&str], hang: bool) -> Running {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let conn = zbus::connection::Builder::address(bus.address.as_str())
        .expect("the address")
        .serve_at(
            "/org/freedesktop/Notifications",
            Server {
                capabilities: capabilities.iter().map(|c| c.to_string()).collect(),
                seen: seen.clone(),
                next_id: 100,
                hang,
            },
        )
        .expect("exporting the server")
        .name("org.freedesktop.Notifications")
        .expect("the notifications name")
        .build()
        .await
        .expect("the server on the bus");
    Running { conn, seen }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notice_reaches_the_server_escaped_and_its_click_opens_the_window() {
    let bus = PrivateBus::start();
    let server = start_server(&bus, &["body", "body-markup", "actions"], false).await;
    let presence = Bus::at(&bus.address).await.expect("the presence bus");
    let (clicks_tx, clicks) = std::sync::mpsc::channel();
    let clicks_tx = Mutex::new(clicks_tx);
    let on_click: gatehouse_presence::notify::ClickHandler = Arc::new(move |id: NoticeId| {
        let _ = clicks_tx.lock().unwrap().send(id);
    });
    let notifier = Notifier::with_clicks(&presence, on_click)
        .await
        .expect("the notifier");

    let notice = Notice::ConsentWaiting {
        server: "<b>evil</b>&".into(),
        identity: Some("Example & <i>Co</i>".into()),
        vouched_by: None,
    };
    let id = notifier.send(&notice).await.expect("sent");
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let n = &seen[0];
    assert_eq!(n.app_name, "Gatehouse");
    // The summary is plain text everywhere: as given.
    assert_eq!(n.summary, "<b>evil</b>& is asking for your input");
    // The body is markup on this server: nothing in it can format or break out.
    assert!(
        n.body.starts_with(
            "&lt;b&gt;evil&lt;/b&gt;&amp; (verified: Example &amp; &lt;i&gt;Co&lt;/i&gt;)"
        ),
        "{}",
        n.body
    );
    assert!(!n.body.contains('<') && !n.body.contains('>'), "{}", n.body);
    assert_eq!(
        n.actions,
        vec!["default".to_string(), "Open Gatehouse".to_string()]
    );
    assert_eq!(n.expire_timeout, -1);

    // Signals that must not open anything: another notification's id, another action, a
    // closed notification, and the right id from someone who is not the server.
    let other = notifier
        .send(&Notice::SignInWaiting {
            server: "mail".into(),
        })
        .await
        .expect("second notice");
    let imposter = bus.connect().await;
    SignalEmitter::new(&imposter, "/org/freedesktop/Notifications")
        .unwrap()
        .emit(
            "org.freedesktop.Notifications",
            "ActionInvoked",
            &(id.0, "default"),
        )
        .await
        .expect("the imposter's signal");
    Running {
        conn: imposter,
        seen: Arc::default(),
    }
    .flush()
    .await;
    let e = server.emitter();
    Server::action_invoked(&e, 4242, "default").await.unwrap();
    Server::action_invoked(&e, id.0, "snooze").await.unwrap();
    Server::notification_closed(&e, other.0, 2).await.unwrap();
    Server::action_invoked(&e, other.0, "default")
        .await
        .unwrap();
    // The real click, then a click on a third notice: signals are handled in order, so once
    // the third arrives every signal before it has been handled.
    Server::action_invoked(&e, id.0, "default").await.unwrap();
    let third = notifier
        .send(&Notice::StillServing)
        .await
        .expect("third notice");
    Server::action_invoked(&e, third.0, "default")
        .await
        .unwrap();
    let first = clicks.recv_timeout(support::WAIT).expect("the real click");
    let second = clicks
        .recv_timeout(support::WAIT)
        .expect("the third's click");
    assert_eq!((first, second), (id, third), "only the real clicks count");
    assert!(clicks.try_recv().is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_on_a_notice_is_an_open_action() {
    let bus = PrivateBus::start();
    let server = start_server(&bus, &["actions"], false).await;
    let presence = Bus::at(&bus.address).await.expect("the presence bus");
    let (on_action, actions) = recorder();
    let notifier = Notifier::new(&presence, on_action)
        .await
        .expect("the notifier");
    let id = notifier
        .send(&Notice::ConsentWaiting {
            server: "echo".into(),
            identity: None,
            vouched_by: None,
        })
        .await
        .expect("sent");
    Server::action_invoked(&server.emitter(), id.0, "default")
        .await
        .unwrap();
    assert_eq!(next_action(&actions), TrayAction::Open);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_server_gets_plain_text_and_no_actions() {
    let bus = PrivateBus::start();
    let server = start_server(&bus, &["body"], false).await;
    let presence = Bus::at(&bus.address).await.expect("the presence bus");
    let (on_action, _actions) = recorder();
    let notifier = Notifier::new(&presence, on_action)
        .await
        .expect("the notifier");
    notifier
        .send(&Notice::SignInWaiting {
            server: "a&b <c>".into(),
        })
        .await
        .expect("sent");
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    // Without body-markup the server shows text as is: escaping would show "&amp;".
    assert!(
        seen[0].body.starts_with("a&b <c> needs you to sign in"),
        "{}",
        seen[0].body
    );
    assert!(
        seen[0].actions.is_empty(),
        "this server cannot show actions"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_server_or_a_hung_one_is_an_error_with_a_code() {
    let bus = PrivateBus::start();
    let presence = Bus::at(&bus.address).await.expect("the presence bus");
    let (on_action, _actions) = recorder();
    let notifier = Notifier::new(&presence, on_action)
        .await
        .expect("no server needed to start");
    let err = notifier
        .send(&Notice::Quitting)
        .await
        .expect_err("nobody shows it");
    assert_eq!(err.code(), PresenceErrorCode::NoNotificationServer, "{err}");
    assert!(err.to_string().contains("no_notification_server"), "{err}");

    // A server that takes the call and never answers: the call ends with `timeout`.
    let _server = start_server(&bus, &["body"], true).await;
    let err = notifier
        .send(&Notice::Quitting)
        .await
        .expect_err("never answered");
    assert_eq!(err.code(), PresenceErrorCode::Timeout, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bus_that_never_answers_the_handshake_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("silent");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    // Accept and hold connections without a word.
    let held = std::thread::spawn(move || {
        let mut kept = Vec::new();
        if let Ok((s, _)) = listener.accept() {
            kept.push(s);
            std::thread::sleep(gatehouse_presence::CALL_TIMEOUT * 2);
        }
    });
    let err = Bus::at(&format!("unix:path={}", path.display()))
        .await
        .expect_err("no handshake");
    assert_eq!(err.code(), PresenceErrorCode::Timeout, "{err}");
    drop(held);
}
