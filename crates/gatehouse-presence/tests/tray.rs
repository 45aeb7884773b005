//! The tray against a real session bus (a private dbus-daemon) and a StatusNotifierWatcher
//! stand-in written here, reading the item the way a tray host does.

mod support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use gatehouse_presence::{Bus, PresenceErrorCode, Tray, TrayAction, TraySpec};
use support::{PrivateBus, eventually, next_action, recorder};
use zbus::interface;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Structure, Value};

/// SNI's pixmap list, `a(iiay)`.
type Pixmaps = Vec<(i32, i32, Vec<u8>)>;
/// SNI's `ToolTip`, `(sa(iiay)ss)`.
type ToolTip = (String, Pixmaps, String, String);
/// dbusmenu's layout node, `(ia{sv}av)`.
type LayoutNode = (i32, HashMap<String, OwnedValue>, Vec<OwnedValue>);

/// A StatusNotifierWatcher that records which items registered.
struct Watcher {
    registered: Arc<Mutex<Vec<String>>>,
}

#[interface(name = "org.kde.StatusNotifierWatcher")]
impl Watcher {
    fn register_status_notifier_item(&self, service: String) {
        self.registered.lock().expect("watcher").push(service);
    }

    fn register_status_notifier_host(&self, _service: String) {}

    #[zbus(property)]
    fn is_status_notifier_host_registered(&self) -> bool {
        true
    }

    #[zbus(property)]
    fn protocol_version(&self) -> i32 {
        0
    }
}

/// Starts a watcher on its own connection; dropping the connection takes it away. Built with
/// the object exported before the name is taken, as a real watcher is.
async fn start_watcher(bus: &PrivateBus) -> (zbus::Connection, Arc<Mutex<Vec<String>>>) {
    let registered = Arc::new(Mutex::new(Vec::new()));
    let conn = zbus::connection::Builder::address(bus.address.as_str())
        .expect("the address")
        .serve_at(
            "/StatusNotifierWatcher",
            Watcher {
                registered: registered.clone(),
            },
        )
        .expect("exporting the watcher")
        .name("org.kde.StatusNotifierWatcher")
        .expect("the watcher name")
        .build()
        .await
        .expect("the watcher on the bus");
    (conn, registered)
}

async fn item_property(conn: &zbus::Connection, service: &str, name: &str) -> OwnedValue {
    let reply = conn
        .call_method(
            Some(service),
            "/StatusNotifierItem",
            Some("org.freedesktop.DBus.Properties"),
            "Get",
            &("org.kde.StatusNotifierItem", name),
        )
        .await
        .unwrap_or_else(|e| panic!("reading {name}: {e}"));
    reply.body().deserialize().expect("a variant")
}

/// The menu's items by label: (id, label) from `GetLayout(0, -1, [])`.
async fn menu_items(conn: &zbus::Connection, service: &str, menu: &str) -> Vec<(i32, String)> {
    let reply = conn
        .call_method(
            Some(service),
            menu,
            Some("com.canonical.dbusmenu"),
            "GetLayout",
            &(0i32, -1i32, Vec::<String>::new()),
        )
        .await
        .expect("GetLayout");
    let (_revision, (root_id, _props, children)): (u32, LayoutNode) = reply
        .body()
        .deserialize()
        .expect("the layout's shape (ia{sv}av)");
    assert_eq!(root_id, 0);
    let mut items = Vec::new();
    for child in children {
        let child: Structure = child.try_into().expect("a child is a structure");
        let fields = child.into_fields();
        let Value::I32(id) = fields[0] else {
            panic!("the child's id is an int32: {:?}", fields[0])
        };
        let props: HashMap<String, OwnedValue> = fields[1]
            .try_clone()
            .expect("clone")
            .try_into()
            .expect("the child's properties a{sv}");
        if let Some(label) = props.get("label") {
            let label: String = label
                .try_clone()
                .expect("clone")
                .try_into()
                .expect("a string label");
            items.push((id, label));
        }
    }
    items
}

async fn send_event(
    conn: &zbus::Connection,
    service: &str,
    menu: &str,
    id: i32,
) -> zbus::Result<()> {
    conn.call_method(
        Some(service),
        menu,
        Some("com.canonical.dbusmenu"),
        "Event",
        &(id, "clicked", Value::I32(0), 0u32),
    )
    .await
    .map(|_| ())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tray_registers_shows_its_icon_and_menu_and_reports_clicks() {
    let bus = PrivateBus::start();
    let (watcher, registered) = start_watcher(&bus).await;
    let presence = Bus::at(&bus.address).await.expect("the presence bus");
    let (on_action, actions) = recorder();
    let spec = TraySpec {
        status: "Serving 0 AI clients".into(),
        ..TraySpec::default()
    };
    let tray = Tray::start(&presence, spec, on_action)
        .await
        .expect("the tray starts");
    assert!(tray.shown(), "a watcher is on the bus: the icon is shown");
    let service = tray.bus_name().to_string();
    assert!(
        service.starts_with("org.kde.StatusNotifierItem-"),
        "{service}"
    );
    assert_eq!(registered.lock().unwrap().clone(), vec![service.clone()]);

    // What a tray host reads.
    let title: String = item_property(&watcher, &service, "Title")
        .await
        .try_into()
        .unwrap();
    assert_eq!(title, "Gatehouse");
    let status: String = item_property(&watcher, &service, "Status")
        .await
        .try_into()
        .unwrap();
    assert_eq!(status, "Active");
    let pixmaps: Pixmaps = item_property(&watcher, &service, "IconPixmap")
        .await
        .try_into()
        .expect("IconPixmap is a(iiay)");
    assert!(!pixmaps.is_empty(), "the icon is sent as pixmaps");
    for (w, h, data) in &pixmaps {
        assert!(*w > 0 && *h > 0);
        assert_eq!(
            data.len(),
            (*w * *h * 4) as usize,
            "ARGB32, 4 bytes a pixel"
        );
    }
    let menu: OwnedObjectPath = item_property(&watcher, &service, "Menu")
        .await
        .try_into()
        .unwrap();
    let (_, _, _, tip): ToolTip = item_property(&watcher, &service, "ToolTip")
        .await
        .try_into()
        .expect("ToolTip (sa(iiay)ss)");
    assert_eq!(tip, "Serving 0 AI clients");

    let items = menu_items(&watcher, &service, menu.as_str()).await;
    let id_of = |label: &str| {
        items
            .iter()
            .find(|(_, l)| l == label)
            .map(|(id, _)| *id)
            .unwrap_or_else(|| panic!("no {label:?} in the menu: {items:?}"))
    };
    let (open, quit) = (id_of("Open Gatehouse"), id_of("Quit Gatehouse"));

    send_event(&watcher, &service, menu.as_str(), quit)
        .await
        .expect("Event(quit)");
    assert_eq!(next_action(&actions), TrayAction::Quit);
    send_event(&watcher, &service, menu.as_str(), open)
        .await
        .expect("Event(open)");
    assert_eq!(next_action(&actions), TrayAction::Open);
    // Left click on the icon.
    watcher
        .call_method(
            Some(service.as_str()),
            "/StatusNotifierItem",
            Some("org.kde.StatusNotifierItem"),
            "Activate",
            &(10i32, 10i32),
        )
        .await
        .expect("Activate");
    assert_eq!(next_action(&actions), TrayAction::Open);

    // Unknown items are refused, and a non-click event on Quit does nothing (the next action
    // seen is the Open that follows, not a Quit).
    let err = send_event(&watcher, &service, menu.as_str(), 4242)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("InvalidArgs"), "{err}");
    watcher
        .call_method(
            Some(service.as_str()),
            menu.as_str(),
            Some("com.canonical.dbusmenu"),
            "Event",
            &(quit, "hovered", Value::I32(0), 0u32),
        )
        .await
        .expect("Event(hovered)");
    send_event(&watcher, &service, menu.as_str(), open)
        .await
        .expect("Event(open)");
    assert_eq!(next_action(&actions), TrayAction::Open);
    assert!(actions.try_recv().is_err(), "no other action was delivered");

    // The status line and attention change, with the signals a tray host listens for.
    let rule = zbus::MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .interface("org.kde.StatusNotifierItem")
        .unwrap()
        .build();
    let mut signals = zbus::MessageStream::for_match_rule(rule, &watcher, Some(16))
        .await
        .expect("listening to the item");
    tray.set_status("Serving 2 AI clients\n<b>")
        .await
        .expect("set_status");
    let signal = tokio::time::timeout(support::WAIT, signals.next())
        .await
        .expect("a signal arrives")
        .expect("the stream")
        .expect("a message");
    assert_eq!(signal.header().member().unwrap().as_str(), "NewToolTip");
    let (_, _, _, tip): ToolTip = item_property(&watcher, &service, "ToolTip")
        .await
        .try_into()
        .unwrap();
    assert_eq!(
        tip, "Serving 2 AI clients <b>",
        "control characters are dropped"
    );
    tray.set_needs_attention(true).await.expect("attention");
    let signal = tokio::time::timeout(support::WAIT, signals.next())
        .await
        .expect("a signal arrives")
        .expect("the stream")
        .expect("a message");
    assert_eq!(signal.header().member().unwrap().as_str(), "NewStatus");
    let status: String = item_property(&watcher, &service, "Status")
        .await
        .try_into()
        .unwrap();
    assert_eq!(status, "NeedsAttention");

    // Closing takes the item off the bus.
    tray.close().await;
    let gone = watcher
        .call_method(
            Some(service.as_str()),
            "/StatusNotifierItem",
            Some("org.freedesktop.DBus.Properties"),
            "Get",
            &("org.kde.StatusNotifierItem", "Title"),
        )
        .await;
    assert!(gone.is_err(), "the item is gone after close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_tray_host_the_icon_is_not_shown_until_one_appears() {
    let bus = PrivateBus::start();
    let presence = Bus::at(&bus.address).await.expect("the presence bus");
    let (on_action, _actions) = recorder();
    let tray = Tray::start(&presence, TraySpec::default(), on_action)
        .await
        .expect("no watcher is not an error");
    assert!(!tray.shown(), "nothing can show the icon");

    // A watcher starting later gets the item.
    let (watcher, registered) = start_watcher(&bus).await;
    eventually("the item registers with the new watcher", || {
        registered
            .lock()
            .unwrap()
            .contains(&tray.bus_name().to_string())
    })
    .await;
    eventually("the handle says shown", || tray.shown()).await;

    // The watcher going away is noticed; coming back registers again.
    drop(watcher);
    eventually("the handle says not shown", || !tray.shown()).await;
    let (_watcher, registered) = start_watcher(&bus).await;
    eventually("the item registers again", || {
        registered
            .lock()
            .unwrap()
            .contains(&tray.bus_name().to_string())
    })
    .await;
    eventually("shown again", || tray.shown()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_trays_on_one_connection_are_refused_and_no_bus_is_an_error() {
    let bus = PrivateBus::start();
    let presence = Bus::at(&bus.address).await.expect("the presence bus");
    let (on_action, _actions) = recorder();
    let _first = Tray::start(&presence, TraySpec::default(), on_action.clone())
        .await
        .expect("the first tray");
    let second = Tray::start(&presence, TraySpec::default(), on_action).await;
    assert_eq!(
        second.err().map(|e| e.code()),
        Some(PresenceErrorCode::DbusFailed)
    );

    let dir = tempfile::tempdir().unwrap();
    let missing = format!("unix:path={}", dir.path().join("no-bus").display());
    let err = Bus::at(&missing).await.expect_err("no bus there");
    assert_eq!(err.code(), PresenceErrorCode::NoSessionBus);
    assert!(err.to_string().contains("no_session_bus"), "{err}");
    let err = Bus::at("not an address").await.expect_err("a bad address");
    assert_eq!(err.code(), PresenceErrorCode::NoSessionBus);
}
