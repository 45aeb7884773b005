//! The host API every front end calls: one long-lived host (one gatekeeper, one audit log, one
//! broker, live connections by name, the demo servers) behind one method per action. The
//! front ends add only their surface: the desktop app its window and card UI
//! ([`crate::desk`]), the gateway its downstream MCP server. Each passes in its paths, the
//! [`ConsentUi`] that asks its person, and a [`Notifier`] for [`Change`]s.
//!
//! Decisions never arrive here as events: a consent UI answers through its own typed calls.
//!
//! The map, one concern a file (each an `impl Host` block or the types it returns):
//! - `api.rs`: [`ApiError`], [`Change`], [`Notifier`]: what every front end gets back;
//! - `options.rs`: [`HostPaths`], [`HostOptions`]: what a front end opens the host with;
//!   `ephemeral.rs`: the preset of a host that keeps nothing (the conformance client's);
//! - `open.rs`: [`Host::open`] and [`Host::shutdown`];
//! - `servers.rs`: the servers the host knows (demo, `servers.json`, ad-hoc), their rows,
//!   the demo twin;
//! - `manage.rs`: admission-only server work: `admissions`, add, import, resume;
//! - `connections.rs`: connecting on the person's request, describing (the verdict, the
//!   summary, the gated tools by name), disconnecting;
//! - `live.rs`: what the gateway uses: live connections only, live tools, background
//!   connects, start and server changes, host events;
//! - `calls.rs`: tool calls; `context.rs`: prompts, resources, completions, subscriptions,
//!   approvals; `auth.rs`: sign-ins; `downstream.rs`: the gateway's AI client sessions;
//! - `records.rs`: the audit log and the traffic; `settings.rs`: the Settings view;
//! - `bundles.rs`: installing an admin's trust-root bundle (decision, audit, atomic write).

mod api;
mod auth;
mod bundles;
mod calls;
mod confinement;
mod connections;
pub mod context;
pub mod downstream;
mod ephemeral;
mod live;
mod manage;
mod open;
mod options;
mod package_files;
mod packages;
mod pin;
mod records;
mod review;
mod servers;
mod settings;
#[cfg(test)]
mod tests;

pub use api::{ApiError, Change, Notifier};
pub use auth::SignInRow;
pub use calls::CallOutcome;
pub use connections::{BlockedTool, ServerDetail, ToolGroups};
pub use manage::{AddServer, Admission, ImportOutcome, NewServer, Resumed};
pub use options::{Answering, FindingsSink, HostOptions, HostPaths};
pub use packages::{PackagePreview, RemotePreview};
pub use pin::{PIN_BUNDLE_ID, PIN_KEY_SECRET, PackageState, PinPlan, Pinned};
pub use records::AuditVerdict;
pub use review::Acknowledgement;
pub use servers::{RowReason, RowStatus, ServerRow};
pub use settings::{AuditWarning, Settings};

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::{Mutex, broadcast, watch};

use crate::admission::TrustSettings;
use crate::broker::ElicitationBroker;
use crate::connection::Connection;
use crate::gatekeeper::Gatekeeper;
use crate::secrets::SecretStore;
use crate::tap::TrafficTap;
use crate::{HostEvent, ServerSpec};

use connections::close_slot;
use servers::failed_row;

pub use gatehouse_policy::FieldError;

pub use crate::demo::DEMO_LEGACY_NAME;

enum Slot {
    Connecting,
    Connected(Arc<Connection>),
    Failed(ServerRow),
}

/// The long-lived host: what every front end calls.
pub struct Host {
    options: HostOptions,
    trust: TrustSettings,
    tap: Arc<TrafficTap>,
    secrets: Arc<dyn SecretStore>,
    events: broadcast::Sender<HostEvent>,
    gatekeeper: Arc<Gatekeeper>,
    audit_warnings: Vec<AuditWarning>,
    broker: Arc<ElicitationBroker>,
    slots: Mutex<BTreeMap<String, Slot>>,
    notify: Notifier,
    /// True once the first [`Host::connect_all`] ended: every listed server's first
    /// connection went one way or the other.
    started: watch::Sender<bool>,
    /// Counts changes of any server's state, for front ends that share the host (each
    /// gateway client) and cannot all be its one [`Notifier`].
    servers_changed: watch::Sender<u64>,
    /// The gateway sessions open now.
    sessions: Arc<downstream::Sessions>,
    /// The last subscriber session handed out ([`Host::subscriber_session`]).
    subscriber_sessions: std::sync::atomic::AtomicU64,
    /// Servers given on a command line (`--stdio`, `--url`) rather than listed: they stand
    /// before listed ones of the same name and are never saved.
    adhoc: std::sync::Mutex<BTreeMap<String, ServerSpec>>,
    /// The confinement an ad-hoc server runs with when it is not admitted (a preview's:
    /// its scratch store and home), in the shape of a `servers.json` entry's.
    adhoc_confinement: std::sync::Mutex<BTreeMap<String, serde_json::Value>>,
}
