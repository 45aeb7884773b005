//! The servers the host knows (the demo's in demo mode, `servers.json`, ad-hoc ones from a
//! command line) and the rows the Servers view and `servers list` show for them.

use serde::Serialize;

use super::{ApiError, DEMO_LEGACY_NAME, Host, Slot};
use crate::ErrorCode;
use crate::audit_event::gate::PackageSummary;
use crate::config::{ServerKind, ServersFile};
use crate::{HostError, ServerSpec, demo};

/// A server's state as the Servers view shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ServerRow {
    pub name: String,
    pub transport: ServerKind,
    pub target: String,
    pub demo: bool,
    pub status: RowStatus,
    pub reason: Option<RowReason>,
    pub headline: String,
    /// A live connection exists (admitted, or unattested under the warn posture).
    pub connected: bool,
    /// A package server admitted from the store: what is bound and what the last admission
    /// checked. Absent for every other row, so their shape is unchanged. Boxed: a failed
    /// connection's slot holds a row, and most rows have none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<Box<PackageSummary>>,
}

/// Where a server stands, as the Servers view and `servers list` show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RowStatus {
    Admitted,
    Refused,
    /// No attestation, or no bundle binds it (connected only in the warn posture).
    Unattested,
    /// The kill switch stopped it; `resume` lifts that.
    Suspended,
    Connecting,
    NotConnected,
    /// The connection failed for another reason (spawn, network, handshake).
    Error,
}

impl From<crate::admission::Status> for RowStatus {
    fn from(status: crate::admission::Status) -> RowStatus {
        match status {
            crate::admission::Status::Admitted => RowStatus::Admitted,
            crate::admission::Status::Refused => RowStatus::Refused,
            crate::admission::Status::Unattested => RowStatus::Unattested,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RowReason {
    pub code: String,
    pub detail: String,
}

impl Host {
    pub(super) fn config(&self) -> Result<ServersFile, ApiError> {
        Ok(ServersFile::load(&self.options.paths.config)?)
    }

    /// Every server the window lists: the demo ones first in demo mode, then `servers.json`.
    pub(super) fn specs(&self) -> Result<Vec<(String, ServerSpec, bool)>, ApiError> {
        self.specs_in(&self.config()?)
    }

    /// [`Host::specs`] with `config` as the `servers.json` read.
    pub(super) fn specs_in(
        &self,
        config: &ServersFile,
    ) -> Result<Vec<(String, ServerSpec, bool)>, ApiError> {
        let mut specs = Vec::new();
        if self.options.demo {
            let spec = demo::demo_server_spec_at(&self.options.demo_server()?);
            for name in [demo::DEMO_SERVER_NAME, DEMO_LEGACY_NAME] {
                if !config.servers.contains_key(name) {
                    specs.push((name.to_string(), spec.clone(), true));
                }
            }
        }
        for (name, entry) in &config.servers {
            specs.push((name.clone(), entry.to_spec(name)?, false));
        }
        Ok(specs)
    }

    /// The server `name` is the same program as, in another era: in demo mode, `demo-2025`
    /// is the embedded demo (`demo`) spoken to in 2025-11-25, with the same resources. A
    /// gateway offers such a pair's shared URIs once, from the one returned. `None` for every
    /// configured server (a `servers.json` entry named like the demo replaces it).
    pub fn demo_twin(&self, name: &str) -> Option<&'static str> {
        if name != DEMO_LEGACY_NAME
            || !self.options.demo
            || self
                .adhoc
                .lock()
                .expect("adhoc poisoned")
                .contains_key(name)
        {
            return None;
        }
        let specs = self.specs().ok()?;
        let is_demo = |wanted: &str| specs.iter().any(|(n, _, demo)| n == wanted && *demo);
        (is_demo(DEMO_LEGACY_NAME) && is_demo(demo::DEMO_SERVER_NAME))
            .then_some(demo::DEMO_SERVER_NAME)
    }

    pub(super) fn spec(&self, name: &str) -> Result<(ServerSpec, bool), ApiError> {
        if let Some(spec) = self.adhoc.lock().expect("adhoc poisoned").get(name) {
            return Ok((spec.clone(), false));
        }
        self.specs()?
            .into_iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, spec, demo)| (spec, demo))
            .ok_or_else(|| {
                ApiError::new(
                    ErrorCode::UnknownServer,
                    format!("no server named {name:?}; add it in Servers first"),
                )
            })
    }

    pub(super) fn row_for(
        &self,
        name: &str,
        spec: &ServerSpec,
        demo: bool,
        slot: Option<&Slot>,
    ) -> ServerRow {
        let connected = matches!(slot, Some(Slot::Connected(_)));
        let base = |status, reason: Option<RowReason>, headline: String| ServerRow {
            name: name.to_string(),
            transport: spec.kind(),
            target: spec.describe(),
            demo,
            status,
            reason,
            headline,
            connected,
            package: None,
        };
        match slot {
            None => base(RowStatus::NotConnected, None, "not connected yet".into()),
            Some(Slot::Connecting) => base(RowStatus::Connecting, None, "connecting…".into()),
            Some(Slot::Failed(row)) => row.clone(),
            Some(Slot::Connected(connection)) => {
                let verdict = connection.verdict();
                let status = if connection.session().is_some_and(|s| s.killed().is_some()) {
                    RowStatus::Suspended
                } else {
                    verdict.status.into()
                };
                ServerRow {
                    package: verdict.package.clone().map(Box::new),
                    ..base(
                        status,
                        verdict.reason.map(|code| RowReason {
                            code: code.to_string(),
                            detail: verdict.detail.clone(),
                        }),
                        verdict.headline(),
                    )
                }
            }
        }
    }

    /// Every server and what is known of its admission.
    pub async fn servers(&self) -> Result<Vec<ServerRow>, ApiError> {
        let specs = self.specs()?;
        let slots = self.slots.lock().await;
        Ok(specs
            .iter()
            .map(|(name, spec, demo)| self.row_for(name, spec, *demo, slots.get(name)))
            .collect())
    }

    /// Makes `spec` available as `name` for this host's life, without listing it anywhere:
    /// a server given on a command line. It stands before a listed server of that name.
    pub fn add_adhoc(&self, name: &str, spec: ServerSpec) {
        self.adhoc
            .lock()
            .expect("adhoc poisoned")
            .insert(name.to_string(), spec);
    }

    /// Whether `name` is a server the host knows (servers.json, or the demo's in demo mode).
    pub fn has_server(&self, name: &str) -> bool {
        self.spec(name).is_ok()
    }
}

pub(super) fn failed_row(
    name: &str,
    spec: &ServerSpec,
    demo: bool,
    error: &HostError,
) -> ServerRow {
    let (status, headline) = match error {
        HostError::NotAdmitted { status, .. } => (
            RowStatus::from(*status),
            format!("not admitted: {}", error.code()),
        ),
        HostError::Suspended { .. } => (
            RowStatus::Suspended,
            "suspended after elicitation abuse".into(),
        ),
        _ => (RowStatus::Error, "could not connect".into()),
    };
    ServerRow {
        name: name.to_string(),
        transport: spec.kind(),
        target: spec.describe(),
        demo,
        status,
        reason: Some(RowReason {
            code: error.code().to_string(),
            detail: error.to_string(),
        }),
        headline,
        connected: false,
        package: None,
    }
}
