//! The tray icon: a StatusNotifierItem (`org.kde.StatusNotifierItem`, what KDE, most GNOME
//! setups with the AppIndicator extension, XFCE, Cinnamon and others show) with a
//! `com.canonical.dbusmenu` menu: "Open Gatehouse" and "Quit Gatehouse". Left click opens.
//!
//! The item is exported on the connection under a well-known name
//! `org.kde.StatusNotifierItem-<pid>-<n>` and registered with
//! `org.kde.StatusNotifierWatcher`. Without a watcher (plain X11, GNOME without the
//! extension) the item stays exported but unseen: [`TrayHandle::shown`] says so and the host
//! relies on notifications and the window. A watcher that appears (or restarts) later gets the
//! item registered again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use zbus::object_server::SignalEmitter;
use zbus::zvariant::{self, OwnedObjectPath, Value};
use zbus::{fdo, interface};

use crate::{ActionHandler, Bus, PresenceError, PresenceErrorCode, TrayAction, bounded_line};

const ITEM_PATH: &str = "/StatusNotifierItem";
const MENU_PATH: &str = "/MenuBar";
const WATCHER_NAME: &str = "org.kde.StatusNotifierWatcher";
const WATCHER_PATH: &str = "/StatusNotifierWatcher";
/// Tries at registering with a watcher that just appeared, and the pause before the next.
const REGISTER_ATTEMPTS: u32 = 3;
const REGISTER_BACKOFF: std::time::Duration = std::time::Duration::from_millis(300);
/// The longest tooltip line or title shown: the shell truncates anyway; we bound what we send.
const MAX_TEXT: usize = 120;

/// The app icon, read at build time; sent as pixmaps so the tray shows it without an installed
/// icon theme entry.
const ICON_PNGS: [&[u8]; 2] = [
    include_bytes!("../../../src-tauri/icons/32x32.png"),
    include_bytes!("../../../src-tauri/icons/128x128.png"),
];

/// What the tray shows.
#[derive(Clone, Debug)]
pub struct TraySpec {
    /// The item's title ("Gatehouse").
    pub title: String,
    /// The tooltip line ("Serving 2 AI clients"); [`TrayHandle::set_status`] changes it.
    pub status: String,
    /// An icon theme name, used by hosts that prefer names (the pixmaps are always sent too).
    pub icon_name: String,
}

impl Default for TraySpec {
    fn default() -> TraySpec {
        TraySpec {
            title: "Gatehouse".to_string(),
            status: "Gatehouse is running".to_string(),
            icon_name: "gatehouse".to_string(),
        }
    }
}

/// One ARGB32 pixmap as the StatusNotifierItem spec sends it: width, height, and the pixels in
/// network byte order (A, R, G, B per pixel).
pub type Pixmap = (i32, i32, Vec<u8>);

/// Decodes a PNG into an ARGB32 pixmap. The app's own icons are RGBA; other layouts are
/// normalized to 8-bit with alpha first.
pub fn png_to_argb32(png_bytes: &[u8]) -> Result<Pixmap, String> {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    decoder.set_transformations(
        png::Transformations::normalize_to_color8() | png::Transformations::ALPHA,
    );
    let mut reader = decoder.read_info().map_err(|e| format!("not a PNG: {e}"))?;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| "the PNG is too large to decode".to_string())?;
    // The icon is ours and small; refuse anything larger than a 512×512 RGBA image.
    if size > 512 * 512 * 4 {
        return Err(format!(
            "the PNG decodes to {size} bytes, more than a tray icon needs"
        ));
    }
    let mut buf = vec![0; size];
    let info = reader
        .next_frame(&mut buf)
        .map_err(|e| format!("the PNG does not decode: {e}"))?;
    let rgba: Vec<u8> = match info.color_type {
        png::ColorType::Rgba => buf[..info.buffer_size()].to_vec(),
        png::ColorType::GrayscaleAlpha => buf[..info.buffer_size()]
            .chunks_exact(2)
            .flat_map(|p| [p[0], p[0], p[0], p[1]])
            .collect(),
        other => {
            return Err(format!(
                "the PNG decodes to {other:?}, not a colour with alpha"
            ));
        }
    };
    let argb = rgba
        .chunks_exact(4)
        .flat_map(|p| [p[3], p[0], p[1], p[2]])
        .collect::<Vec<u8>>();
    let (w, h) = (info.width, info.height);
    if argb.len() != (w as usize) * (h as usize) * 4 {
        return Err("the PNG's pixel data does not match its size".to_string());
    }
    let w = i32::try_from(w).map_err(|_| "the PNG is too wide".to_string())?;
    let h = i32::try_from(h).map_err(|_| "the PNG is too tall".to_string())?;
    Ok((w, h, argb))
}

/// The app icon in the sizes we ship, decoded once per tray.
fn app_pixmaps() -> Vec<Pixmap> {
    ICON_PNGS
        .iter()
        .filter_map(|png| match png_to_argb32(png) {
            Ok(p) => Some(p),
            Err(e) => {
                tracing::warn!("tray icon: {e}");
                None
            }
        })
        .collect()
}

/// The SNI `Status` values we use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ItemStatus {
    Active,
    NeedsAttention,
}

impl ItemStatus {
    fn as_str(self) -> &'static str {
        match self {
            ItemStatus::Active => "Active",
            ItemStatus::NeedsAttention => "NeedsAttention",
        }
    }
}

/// What the item shows, shared between the exported object and the handle.
struct ItemState {
    title: String,
    tooltip: String,
    icon_name: String,
    status: ItemStatus,
}

struct Item {
    state: Arc<Mutex<ItemState>>,
    pixmaps: Vec<Pixmap>,
    on_action: ActionHandler,
}

impl Item {
    fn read<T>(&self, f: impl FnOnce(&ItemState) -> T) -> T {
        // A poisoned lock only means a panic elsewhere mid-update; the strings are still whole.
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        f(&state)
    }
}

#[interface(name = "org.kde.StatusNotifierItem")]
impl Item {
    #[zbus(property)]
    fn category(&self) -> &str {
        "ApplicationStatus"
    }

    #[zbus(property)]
    fn id(&self) -> &str {
        "gatehouse"
    }

    #[zbus(property)]
    fn title(&self) -> String {
        self.read(|s| s.title.clone())
    }

    #[zbus(property)]
    fn status(&self) -> String {
        self.read(|s| s.status.as_str().to_string())
    }

    #[zbus(property)]
    fn window_id(&self) -> i32 {
        0
    }

    #[zbus(property)]
    fn icon_theme_path(&self) -> &str {
        ""
    }

    #[zbus(property)]
    fn icon_name(&self) -> String {
        self.read(|s| s.icon_name.clone())
    }

    #[zbus(property)]
    fn icon_pixmap(&self) -> Vec<Pixmap> {
        self.pixmaps.clone()
    }

    #[zbus(property)]
    fn overlay_icon_name(&self) -> &str {
        ""
    }

    #[zbus(property)]
    fn overlay_icon_pixmap(&self) -> Vec<Pixmap> {
        Vec::new()
    }

    #[zbus(property)]
    fn attention_icon_name(&self) -> String {
        self.read(|s| s.icon_name.clone())
    }

    #[zbus(property)]
    fn attention_icon_pixmap(&self) -> Vec<Pixmap> {
        self.pixmaps.clone()
    }

    #[zbus(property)]
    fn attention_movie_name(&self) -> &str {
        ""
    }

    #[zbus(property)]
    fn tool_tip(&self) -> (String, Vec<Pixmap>, String, String) {
        self.read(|s| {
            (
                String::new(),
                Vec::new(),
                s.title.clone(),
                s.tooltip.clone(),
            )
        })
    }

    /// The menu is ours (dbusmenu), not a click target.
    #[zbus(property)]
    fn item_is_menu(&self) -> bool {
        false
    }

    #[zbus(property)]
    fn menu(&self) -> OwnedObjectPath {
        OwnedObjectPath::try_from(MENU_PATH).unwrap_or_default()
    }

    /// Left click.
    fn activate(&self, _x: i32, _y: i32) {
        (self.on_action)(TrayAction::Open);
    }

    /// Middle click: the same as a left click (nothing else to offer).
    fn secondary_activate(&self, _x: i32, _y: i32) {
        (self.on_action)(TrayAction::Open);
    }

    /// Hosts that draw no dbusmenu ask the item to show its menu: we have no toolkit to draw
    /// one, and opening the window gives the same choices.
    fn context_menu(&self, _x: i32, _y: i32) {
        (self.on_action)(TrayAction::Open);
    }

    fn scroll(&self, _delta: i32, _orientation: &str) {}

    #[zbus(signal)]
    async fn new_title(emitter: &SignalEmitter<'_>) -> zbus::Result<()>;

    #[zbus(signal)]
    async fn new_icon(emitter: &SignalEmitter<'_>) -> zbus::Result<()>;

    #[zbus(signal)]
    async fn new_tool_tip(emitter: &SignalEmitter<'_>) -> zbus::Result<()>;

    #[zbus(signal)]
    async fn new_status(emitter: &SignalEmitter<'_>, status: &str) -> zbus::Result<()>;
}

/// The menu's entries. Ids are the dbusmenu item ids; the root is 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    Open,
    Separator,
    Quit,
}

const ENTRIES: [Entry; 3] = [Entry::Open, Entry::Separator, Entry::Quit];

impl Entry {
    fn id(self) -> i32 {
        match self {
            Entry::Open => 1,
            Entry::Separator => 2,
            Entry::Quit => 3,
        }
    }

    fn from_id(id: i32) -> Option<Entry> {
        ENTRIES.into_iter().find(|e| e.id() == id)
    }

    fn action(self) -> Option<TrayAction> {
        match self {
            Entry::Open => Some(TrayAction::Open),
            Entry::Separator => None,
            Entry::Quit => Some(TrayAction::Quit),
        }
    }

    fn properties(self) -> Vec<(&'static str, Value<'static>)> {
        match self {
            Entry::Open => vec![
                ("label", Value::from("Open Gatehouse")),
                ("enabled", Value::from(true)),
                ("visible", Value::from(true)),
            ],
            Entry::Separator => vec![
                ("type", Value::from("separator")),
                ("visible", Value::from(true)),
            ],
            Entry::Quit => vec![
                ("label", Value::from("Quit Gatehouse")),
                ("enabled", Value::from(true)),
                ("visible", Value::from(true)),
            ],
        }
    }
}

/// The root item's properties.
fn root_properties() -> Vec<(&'static str, Value<'static>)> {
    vec![("children-display", Value::from("submenu"))]
}

/// The properties of item `id` among `wanted` (all when empty), or `None` for an unknown id.
fn properties_of(id: i32, wanted: &[String]) -> Option<HashMap<String, Value<'static>>> {
    let all = if id == 0 {
        root_properties()
    } else {
        Entry::from_id(id)?.properties()
    };
    Some(
        all.into_iter()
            .filter(|(name, _)| wanted.is_empty() || wanted.iter().any(|w| w == name))
            .map(|(name, value)| (name.to_string(), value))
            .collect(),
    )
}

/// One node of `GetLayout`'s `(ia{sv}av)`: the children are variants holding the same shape.
#[derive(serde::Serialize, zvariant::Type)]
struct LayoutNode {
    id: i32,
    properties: HashMap<String, Value<'static>>,
    children: Vec<Value<'static>>,
}

fn layout_of(id: i32, depth: i32, wanted: &[String]) -> Option<LayoutNode> {
    let properties = properties_of(id, wanted)?;
    let mut children = Vec::new();
    // Only the root has children; depth 0 asks for the node alone (-1: everything).
    if id == 0 && depth != 0 {
        for entry in ENTRIES {
            let child_props = properties_of(entry.id(), wanted).unwrap_or_default();
            let child = zvariant::StructureBuilder::new()
                .add_field(entry.id())
                .add_field(child_props)
                .add_field(Vec::<Value<'static>>::new())
                .build()
                .ok()?;
            children.push(Value::from(child));
        }
    }
    Some(LayoutNode {
        id,
        properties,
        children,
    })
}

struct Menu {
    on_action: ActionHandler,
}

#[interface(name = "com.canonical.dbusmenu")]
impl Menu {
    #[zbus(property)]
    fn version(&self) -> u32 {
        3
    }

    #[zbus(property)]
    fn text_direction(&self) -> &str {
        "ltr"
    }

    #[zbus(property)]
    fn status(&self) -> &str {
        "normal"
    }

    #[zbus(property)]
    fn icon_theme_path(&self) -> Vec<String> {
        Vec::new()
    }

    /// The menu tree under `parent_id`; the layout never changes, so its revision is 1.
    #[zbus(out_args("revision", "layout"))]
    fn get_layout(
        &self,
        parent_id: i32,
        recursion_depth: i32,
        property_names: Vec<String>,
    ) -> fdo::Result<(u32, LayoutNode)> {
        let node = layout_of(parent_id, recursion_depth, &property_names)
            .ok_or_else(|| fdo::Error::InvalidArgs(format!("no menu item {parent_id}")))?;
        Ok((1, node))
    }

    fn get_group_properties(
        &self,
        ids: Vec<i32>,
        property_names: Vec<String>,
    ) -> Vec<(i32, HashMap<String, Value<'static>>)> {
        // Empty ids means every item; unknown ids are left out, as the spec allows.
        let ids: Vec<i32> = if ids.is_empty() {
            std::iter::once(0)
                .chain(ENTRIES.iter().map(|e| e.id()))
                .collect()
        } else {
            ids.into_iter().take(64).collect()
        };
        ids.into_iter()
            .filter_map(|id| properties_of(id, &property_names).map(|p| (id, p)))
            .collect()
    }

    fn get_property(&self, id: i32, name: String) -> fdo::Result<Value<'static>> {
        properties_of(id, &[])
            .and_then(|mut p| p.remove(&name))
            .ok_or_else(|| fdo::Error::InvalidArgs(format!("no property {name:?} on item {id}")))
    }

    fn event(&self, id: i32, event_id: &str, _data: Value<'_>, _timestamp: u32) -> fdo::Result<()> {
        let entry = Entry::from_id(id)
            .ok_or_else(|| fdo::Error::InvalidArgs(format!("no menu item {id}")))?;
        if event_id == "clicked"
            && let Some(action) = entry.action()
        {
            (self.on_action)(action);
        }
        Ok(())
    }

    /// Several events at once; answers the ids it did not know.
    fn event_group(&self, events: Vec<(i32, String, Value<'_>, u32)>) -> Vec<i32> {
        let mut unknown = Vec::new();
        for (id, event_id, _, _) in events.into_iter().take(64) {
            match Entry::from_id(id) {
                Some(entry) => {
                    if event_id == "clicked"
                        && let Some(action) = entry.action()
                    {
                        (self.on_action)(action);
                    }
                }
                None => unknown.push(id),
            }
        }
        unknown
    }

    /// The menu never changes before it opens.
    fn about_to_show(&self, _id: i32) -> bool {
        false
    }

    #[zbus(out_args("updates_needed", "id_errors"))]
    fn about_to_show_group(&self, ids: Vec<i32>) -> (Vec<i32>, Vec<i32>) {
        let unknown = ids
            .into_iter()
            .take(64)
            .filter(|id| *id != 0 && Entry::from_id(*id).is_none())
            .collect();
        (Vec::new(), unknown)
    }

    #[zbus(signal)]
    async fn layout_updated(
        emitter: &SignalEmitter<'_>,
        revision: u32,
        parent: i32,
    ) -> zbus::Result<()>;
}

/// Starts tray icons.
pub struct Tray;

/// A counter making each item's bus name unique within the process.
static ITEM_COUNTER: AtomicU32 = AtomicU32::new(0);

impl Tray {
    /// Exports the item and its menu on `bus` and registers it with the tray host. No tray host
    /// is not an error: the handle's [`TrayHandle::shown`] is false until one appears.
    pub async fn start(
        bus: &Bus,
        spec: TraySpec,
        on_action: ActionHandler,
    ) -> Result<TrayHandle, PresenceError> {
        let conn = bus.connection().clone();
        let state = Arc::new(Mutex::new(ItemState {
            title: bounded_line(&spec.title, MAX_TEXT),
            tooltip: bounded_line(&spec.status, MAX_TEXT),
            icon_name: bounded_line(&spec.icon_name, MAX_TEXT),
            status: ItemStatus::Active,
        }));
        let item = Item {
            state: state.clone(),
            pixmaps: app_pixmaps(),
            on_action: on_action.clone(),
        };
        let server = conn.object_server();
        let exported = server.at(ITEM_PATH, item).await.map_err(|e| {
            PresenceError::from_zbus("exporting the tray item", PresenceErrorCode::DbusFailed, e)
        })?;
        if !exported {
            return Err(PresenceError::new(
                PresenceErrorCode::DbusFailed,
                "a tray item is already exported on this connection: start one tray per Bus",
            ));
        }
        if let Err(e) = server.at(MENU_PATH, Menu { on_action }).await {
            let _ = server.remove::<Item, _>(ITEM_PATH).await;
            return Err(PresenceError::from_zbus(
                "exporting the tray menu",
                PresenceErrorCode::DbusFailed,
                e,
            ));
        }
        let name = format!(
            "org.kde.StatusNotifierItem-{}-{}",
            std::process::id(),
            ITEM_COUNTER.fetch_add(1, Ordering::Relaxed) + 1
        );
        let handle = TrayHandle {
            conn: conn.clone(),
            state,
            name: name.clone(),
            shown: Arc::new(AtomicBool::new(false)),
            watcher_task: None,
        };
        if let Err(e) = conn.request_name(name.as_str()).await {
            handle.unexport().await;
            return Err(PresenceError::from_zbus(
                "taking the tray item's bus name",
                PresenceErrorCode::DbusFailed,
                e,
            ));
        }
        // Listen for the watcher before the first attempt, so one starting in between is seen.
        let dbus = match fdo::DBusProxy::new(&conn).await {
            Ok(p) => p,
            Err(e) => {
                handle.unexport().await;
                return Err(PresenceError::from_zbus(
                    "the bus",
                    PresenceErrorCode::DbusFailed,
                    e,
                ));
            }
        };
        let changes = match dbus
            .receive_name_owner_changed_with_args(&[(0, WATCHER_NAME)])
            .await
        {
            Ok(s) => s,
            Err(e) => {
                handle.unexport().await;
                return Err(PresenceError::from_zbus(
                    "watching for a tray host",
                    PresenceErrorCode::DbusFailed,
                    e,
                ));
            }
        };
        let mut handle = handle;
        match register(&conn, &name).await {
            Ok(()) => handle.shown.store(true, Ordering::SeqCst),
            Err(e) => tracing::info!("no tray shown yet ({}): {e}", e.code().as_str()),
        }
        let task = {
            let conn = conn.clone();
            let name = name.clone();
            let shown = handle.shown.clone();
            crate::spawn(follow_watcher(conn, name, shown, changes))
        };
        match task {
            Ok(task) => handle.watcher_task = Some(task),
            Err(e) => {
                handle.unexport().await;
                return Err(e);
            }
        }
        Ok(handle)
    }
}

/// Registers `name` with the StatusNotifierWatcher.
async fn register(conn: &zbus::Connection, name: &str) -> Result<(), PresenceError> {
    conn.call_method(
        Some(WATCHER_NAME),
        WATCHER_PATH,
        Some(WATCHER_NAME),
        "RegisterStatusNotifierItem",
        &(name,),
    )
    .await
    .map(|_| ())
    .map_err(|e| {
        PresenceError::from_zbus(
            "registering with the tray host (org.kde.StatusNotifierWatcher)",
            PresenceErrorCode::DbusFailed,
            e,
        )
    })
}

/// Registers again whenever a watcher takes the name; notes when it goes away. Ends with the
/// signal stream (the connection closing) or when the handle is dropped.
async fn follow_watcher(
    conn: zbus::Connection,
    name: String,
    shown: Arc<AtomicBool>,
    mut changes: fdo::NameOwnerChangedStream,
) {
    while let Some(signal) = changes.next().await {
        let Ok(args) = signal.args() else { continue };
        if args.new_owner().is_some() {
            // A watcher may take its name a moment before it answers calls: a few tries.
            for attempt in 1..=REGISTER_ATTEMPTS {
                match register(&conn, &name).await {
                    Ok(()) => {
                        tracing::info!("a tray host appeared: the tray icon is shown");
                        shown.store(true, Ordering::SeqCst);
                        break;
                    }
                    Err(e) if attempt < REGISTER_ATTEMPTS => {
                        tracing::debug!("the new tray host did not take the icon yet: {e}");
                        tokio::time::sleep(REGISTER_BACKOFF * attempt).await;
                    }
                    Err(e) => {
                        tracing::info!("a tray host appeared but refused the icon: {e}");
                        shown.store(false, Ordering::SeqCst);
                    }
                }
            }
        } else {
            tracing::info!("the tray host went away: no tray icon until it returns");
            shown.store(false, Ordering::SeqCst);
        }
    }
}

/// The running tray. Keep it while the tray should exist; dropping it stops following the tray
/// host (call [`TrayHandle::close`] to also take the icon away at once).
pub struct TrayHandle {
    conn: zbus::Connection,
    state: Arc<Mutex<ItemState>>,
    name: String,
    shown: Arc<AtomicBool>,
    watcher_task: Option<tokio::task::JoinHandle<()>>,
}

impl TrayHandle {
    /// Whether a tray host has the icon now. False on desktops without one: rely on
    /// notifications and the window there.
    pub fn shown(&self) -> bool {
        self.shown.load(Ordering::SeqCst)
    }

    /// The item's bus name (`org.kde.StatusNotifierItem-<pid>-<n>`).
    pub fn bus_name(&self) -> &str {
        &self.name
    }

    /// Changes the tooltip line ("Serving 2 AI clients"); control characters are dropped and
    /// the text is cut to 120 characters.
    pub async fn set_status(&self, text: &str) -> Result<(), PresenceError> {
        let text = bounded_line(text, MAX_TEXT);
        {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if state.tooltip == text {
                return Ok(());
            }
            state.tooltip = text;
        }
        let emitter = self.emitter()?;
        Item::new_tool_tip(&emitter).await.map_err(|e| {
            PresenceError::from_zbus(
                "announcing the new tooltip",
                PresenceErrorCode::DbusFailed,
                e,
            )
        })
    }

    /// Asks the tray host to draw attention to the icon (a consent card is waiting) or stop.
    pub async fn set_needs_attention(&self, on: bool) -> Result<(), PresenceError> {
        let status = if on {
            ItemStatus::NeedsAttention
        } else {
            ItemStatus::Active
        };
        {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if state.status == status {
                return Ok(());
            }
            state.status = status;
        }
        let emitter = self.emitter()?;
        Item::new_status(&emitter, status.as_str())
            .await
            .map_err(|e| {
                PresenceError::from_zbus(
                    "announcing the new status",
                    PresenceErrorCode::DbusFailed,
                    e,
                )
            })
    }

    /// Takes the icon away: stops following the tray host, unexports the item and its menu and
    /// gives up the bus name (the tray host drops the icon when the name goes).
    pub async fn close(mut self) {
        if let Some(task) = self.watcher_task.take() {
            task.abort();
        }
        self.unexport().await;
        self.shown.store(false, Ordering::SeqCst);
    }

    fn emitter(&self) -> Result<SignalEmitter<'static>, PresenceError> {
        SignalEmitter::new(&self.conn, ITEM_PATH)
            .map(|e| e.into_owned())
            .map_err(|e| {
                PresenceError::from_zbus("the tray item's path", PresenceErrorCode::DbusFailed, e)
            })
    }

    async fn unexport(&self) {
        let server = self.conn.object_server();
        let _ = server.remove::<Item, _>(ITEM_PATH).await;
        let _ = server.remove::<Menu, _>(MENU_PATH).await;
        let _ = self.conn.release_name(self.name.as_str()).await;
    }
}

impl Drop for TrayHandle {
    fn drop(&mut self) {
        if let Some(task) = self.watcher_task.take() {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_app_icons_decode_to_argb() {
        let pixmaps = app_pixmaps();
        assert_eq!(pixmaps.len(), 2);
        for (w, h, data) in &pixmaps {
            assert_eq!(data.len(), (*w as usize) * (*h as usize) * 4);
            assert!(data.iter().any(|b| *b != 0), "an all-transparent icon");
        }
        assert_eq!((pixmaps[0].0, pixmaps[0].1), (32, 32));
        assert_eq!((pixmaps[1].0, pixmaps[1].1), (128, 128));
    }

    #[test]
    fn argb_puts_alpha_first() {
        // A 1×1 RGBA PNG: red, half transparent.
        let mut png_bytes = Vec::new();
        {
            let mut enc = png::Encoder::new(&mut png_bytes, 1, 1);
            enc.set_color(png::ColorType::Rgba);
            enc.set_depth(png::BitDepth::Eight);
            let mut w = enc.write_header().expect("header");
            w.write_image_data(&[0xff, 0x00, 0x10, 0x80])
                .expect("pixel");
        }
        assert_eq!(
            png_to_argb32(&png_bytes),
            Ok((1, 1, vec![0x80, 0xff, 0x00, 0x10]))
        );
        assert!(png_to_argb32(b"not a png").is_err());
        assert!(png_to_argb32(&png_bytes[..png_bytes.len() / 2]).is_err());
    }

    #[test]
    fn menu_entries_map_to_actions() {
        assert_eq!(
            Entry::from_id(1).and_then(Entry::action),
            Some(TrayAction::Open)
        );
        assert_eq!(
            Entry::from_id(3).and_then(Entry::action),
            Some(TrayAction::Quit)
        );
        assert_eq!(Entry::from_id(2).and_then(Entry::action), None);
        assert_eq!(Entry::from_id(0), None);
        assert_eq!(Entry::from_id(-1), None);
        assert!(properties_of(99, &[]).is_none());
        let only_label = properties_of(1, &["label".to_string()]).expect("item 1");
        assert_eq!(only_label.len(), 1);
        let node = layout_of(0, 0, &[]).expect("root");
        assert!(node.children.is_empty(), "depth 0 is the node alone");
        assert_eq!(layout_of(0, -1, &[]).expect("root").children.len(), 3);
    }
}
