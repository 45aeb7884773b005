//! Gatehouse's presence on the desktop while no window is open: a tray icon
//! ([`tray`], a StatusNotifierItem with a com.canonical.dbusmenu menu), desktop notifications
//! ([`notify`], org.freedesktop.Notifications) and start at login ([`autostart`], an XDG
//! autostart entry).
//!
//! The background host holds no GTK or WebKit (that is the point of running it apart from the
//! window), so the tray and the notifications speak D-Bus directly with zbus, the same zbus
//! the keychain already builds. Every D-Bus call is bounded by [`CALL_TIMEOUT`]; a desktop
//! without a tray host or a notification server is an ordinary outcome the caller can log,
//! never a panic or a hang.
//!
//! The async functions need a tokio runtime (the background host's): background tasks (the
//! tray's re-registration, the notifications' action listener) run on it.

pub mod autostart;
pub mod notify;
pub mod tray;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use notify::{Notice, NoticeId, Notifier};
pub use tray::{Tray, TrayHandle, TraySpec};

/// The longest any one D-Bus step (connecting, a method call) may take. A session bus or a
/// desktop service that does not answer must not stall the host that serves AI clients.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// What the person asked for through the tray or a notification. Closed: the host matches on
/// it, never on menu labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TrayAction {
    /// Open (or raise) the window: left click on the icon, "Open Gatehouse", or a click on a
    /// notification.
    Open,
    /// "Quit Gatehouse": stop serving.
    Quit,
}

impl TrayAction {
    /// A stable code for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            TrayAction::Open => "open",
            TrayAction::Quit => "quit",
        }
    }
}

/// Called with each [`TrayAction`]. It runs on a D-Bus task: keep it short (send the action on
/// a channel to the host's loop).
pub type ActionHandler = Arc<dyn Fn(TrayAction) + Send + Sync>;

/// One connection to the session bus, shared by the tray and the notifier (cheap to clone).
#[derive(Clone, Debug)]
pub struct Bus {
    conn: zbus::Connection,
}

impl Bus {
    /// The person's session bus (`DBUS_SESSION_BUS_ADDRESS`, else the default
    /// `$XDG_RUNTIME_DIR/bus`).
    pub async fn session() -> Result<Bus, PresenceError> {
        let builder = zbus::connection::Builder::session().map_err(|e| {
            PresenceError::new(
                PresenceErrorCode::NoSessionBus,
                format!("no session bus address: {e}"),
            )
        })?;
        Bus::build(builder, "the session bus").await
    }

    /// The bus at `address` (a D-Bus address such as `unix:path=...`); tests use a private
    /// `dbus-daemon`.
    pub async fn at(address: &str) -> Result<Bus, PresenceError> {
        let builder = zbus::connection::Builder::address(address).map_err(|e| {
            PresenceError::new(
                PresenceErrorCode::NoSessionBus,
                format!("not a D-Bus address ({address:?}): {e}"),
            )
        })?;
        Bus::build(builder, address).await
    }

    async fn build(
        builder: zbus::connection::Builder<'_>,
        which: &str,
    ) -> Result<Bus, PresenceError> {
        let connecting = builder.method_timeout(CALL_TIMEOUT).build();
        match tokio::time::timeout(CALL_TIMEOUT, connecting).await {
            Ok(Ok(conn)) => Ok(Bus { conn }),
            Ok(Err(e)) => Err(PresenceError::new(
                PresenceErrorCode::NoSessionBus,
                format!("could not connect to {which}: {e}"),
            )),
            Err(_) => Err(PresenceError::new(
                PresenceErrorCode::Timeout,
                format!("{which} did not finish the D-Bus handshake within {CALL_TIMEOUT:?}"),
            )),
        }
    }

    /// This connection's unique name on the bus (`:1.42`), for logs and tests.
    pub fn unique_name(&self) -> Option<String> {
        self.conn.unique_name().map(|n| n.to_string())
    }

    pub(crate) fn connection(&self) -> &zbus::Connection {
        &self.conn
    }
}

/// What went wrong talking to the desktop, by a stable code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PresenceErrorCode {
    /// No session bus to talk to (headless, or `DBUS_SESSION_BUS_ADDRESS` unset/stale).
    NoSessionBus,
    /// Nothing owns org.freedesktop.Notifications (no notification daemon).
    NoNotificationServer,
    /// A D-Bus step took longer than [`CALL_TIMEOUT`].
    Timeout,
    /// The bus or a desktop service refused or failed a call.
    DbusFailed,
    /// Called outside a tokio runtime.
    NoRuntime,
}

impl PresenceErrorCode {
    /// The stable snake_case code.
    pub fn as_str(self) -> &'static str {
        match self {
            PresenceErrorCode::NoSessionBus => "no_session_bus",
            PresenceErrorCode::NoNotificationServer => "no_notification_server",
            PresenceErrorCode::Timeout => "timeout",
            PresenceErrorCode::DbusFailed => "dbus_failed",
            PresenceErrorCode::NoRuntime => "no_runtime",
        }
    }
}

/// A failure with its code and what to do about it.
#[derive(Clone, Debug)]
pub struct PresenceError {
    code: PresenceErrorCode,
    detail: String,
}

impl PresenceError {
    pub(crate) fn new(code: PresenceErrorCode, detail: impl Into<String>) -> PresenceError {
        PresenceError {
            code,
            detail: detail.into(),
        }
    }

    /// A zbus failure of `what`, sorted into timeouts, a missing service and the rest.
    pub(crate) fn from_zbus(what: &str, missing: PresenceErrorCode, e: zbus::Error) -> Self {
        let code = match &e {
            zbus::Error::InputOutput(io) if io.kind() == std::io::ErrorKind::TimedOut => {
                PresenceErrorCode::Timeout
            }
            zbus::Error::MethodError(name, _, _)
                if matches!(
                    name.as_str(),
                    "org.freedesktop.DBus.Error.ServiceUnknown"
                        | "org.freedesktop.DBus.Error.NameHasNoOwner"
                ) =>
            {
                missing
            }
            _ => PresenceErrorCode::DbusFailed,
        };
        PresenceError::new(code, format!("{what}: {e}"))
    }

    /// The stable code.
    pub fn code(&self) -> PresenceErrorCode {
        self.code
    }
}

impl fmt::Display for PresenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hint = match self.code {
            PresenceErrorCode::NoSessionBus => {
                "the desktop session's D-Bus is not reachable: Gatehouse keeps serving without a tray icon or notifications"
            }
            PresenceErrorCode::NoNotificationServer => {
                "no notification daemon runs in this session: open the Gatehouse window to see waiting requests"
            }
            PresenceErrorCode::Timeout => {
                "the desktop did not answer in time: Gatehouse keeps serving; retry later"
            }
            PresenceErrorCode::DbusFailed => "the desktop refused the request",
            PresenceErrorCode::NoRuntime => {
                "call this from within the background host's tokio runtime"
            }
        };
        write!(f, "{} ({}): {hint}", self.detail, self.code.as_str())
    }
}

impl std::error::Error for PresenceError {}

/// Runs `fut` on the current tokio runtime, or says there is none (instead of panicking).
pub(crate) fn spawn<F>(fut: F) -> Result<tokio::task::JoinHandle<()>, PresenceError>
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let handle = tokio::runtime::Handle::try_current().map_err(|e| {
        PresenceError::new(
            PresenceErrorCode::NoRuntime,
            format!("no tokio runtime: {e}"),
        )
    })?;
    Ok(handle.spawn(fut))
}

/// `text` with control characters dropped and cut to `max` characters (with "…"), for
/// names that reach the desktop shell.
pub(crate) fn bounded_line(text: &str, max: usize) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let clean = clean.trim();
    if clean.chars().count() <= max {
        return clean.to_string();
    }
    let mut cut: String = clean.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_line_drops_controls_and_cuts() {
        assert_eq!(bounded_line("echo", 80), "echo");
        assert_eq!(bounded_line("a\nb\u{1b}[31mc", 80), "a b [31mc");
        let long = "x".repeat(200);
        let cut = bounded_line(&long, 80);
        assert_eq!(cut.chars().count(), 80);
        assert!(cut.ends_with('…'));
        // Multi-byte text is cut on character boundaries.
        assert_eq!(bounded_line(&"é".repeat(10), 5), "éééé…");
    }

    #[test]
    fn error_codes_are_stable() {
        let e = PresenceError::new(PresenceErrorCode::NoNotificationServer, "notify");
        assert_eq!(e.code().as_str(), "no_notification_server");
        assert!(e.to_string().contains("no_notification_server"));
        assert_eq!(TrayAction::Quit.as_str(), "quit");
    }
}
