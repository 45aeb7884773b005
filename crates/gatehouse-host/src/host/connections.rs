//! The host's connections by name: connecting (admission first) on the person's request,
//! reconnecting, describing a server with its tools by gate status, connecting every listed
//! server, disconnecting.

use std::sync::Arc;

use gatehouse_attest::gate::ToolStatus;
use rmcp::model::Tool;
use serde::Serialize;

use super::{Answering, ApiError, Change, Host, ServerRow, Slot, failed_row};
use crate::admission::Verdict;
use crate::client::ElicitationMode;
use crate::connection::{ConnectOptions, Connection, GatedTool, ServerSummary};
use crate::consent::IdentityBanner;
use crate::era::Era;
use crate::{ErrorCode, ServerSpec, demo};

#[derive(Debug, Clone, Serialize)]
pub struct BlockedTool {
    pub tool: Tool,
    pub reason: &'static str,
    pub expected: String,
    pub actual: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ToolGroups {
    pub allowed: Vec<Tool>,
    pub hidden: Vec<Tool>,
    pub blocked: Vec<BlockedTool>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ServerDetail {
    pub row: ServerRow,
    pub banner: Option<IdentityBanner>,
    pub era: Option<Era>,
    pub tools: ToolGroups,
}

impl Host {
    /// The live connection to `name`, connecting (admission first) when there is none.
    pub(crate) async fn connection(&self, name: &str) -> Result<Arc<Connection>, ApiError> {
        let (spec, demo) = self.spec(name)?;
        {
            let mut slots = self.slots.lock().await;
            match slots.get(name) {
                Some(Slot::Connected(c)) if c.session().is_none_or(|s| s.killed().is_none()) => {
                    return Ok(c.clone());
                }
                Some(Slot::Connecting) => {
                    return Err(ApiError::new(
                        ErrorCode::Connecting,
                        format!("{name:?} is still connecting; try again in a moment"),
                    ));
                }
                _ => {}
            }
            slots.insert(name.to_string(), Slot::Connecting);
        }
        (self.notify)(Change::Servers { name: name.into() });
        let options = self.connect_options(name, demo);
        let result = Connection::connect(
            name,
            &spec,
            self.secrets.clone(),
            self.tap.clone(),
            self.events.clone(),
            &options,
            self.gatekeeper.clone(),
        )
        .await;
        let outcome = {
            let mut slots = self.slots.lock().await;
            match result {
                Ok(connection) => {
                    let connection = Arc::new(connection);
                    slots.insert(name.to_string(), Slot::Connected(connection.clone()));
                    Ok(connection)
                }
                Err(error) => {
                    let row = failed_row(name, &spec, demo, &error);
                    slots.insert(name.to_string(), Slot::Failed(row));
                    Err(ApiError::from(error))
                }
            }
        };
        (self.notify)(Change::Servers { name: name.into() });
        (self.notify)(Change::Audit);
        (self.notify)(Change::Traffic {
            server: name.into(),
        });
        outcome
    }

    /// The detail of a server whose connection failed (admission or transport), if it did.
    async fn failed_detail(
        &self,
        name: &str,
        spec: &ServerSpec,
        demo: bool,
    ) -> Option<ServerDetail> {
        let slots = self.slots.lock().await;
        let slot @ Slot::Failed(_) = slots.get(name)? else {
            return None;
        };
        Some(ServerDetail {
            row: self.row_for(name, spec, demo, Some(slot)),
            banner: None,
            era: None,
            tools: ToolGroups::default(),
        })
    }

    /// Connects anew (the Connect / Reconnect button): a refused server is admitted afresh,
    /// a live connection is closed and replaced; then describes it.
    pub async fn connect(&self, name: &str) -> Result<ServerDetail, ApiError> {
        self.spec(name)?;
        let stale = {
            let mut slots = self.slots.lock().await;
            if let Some(Slot::Connecting) = slots.get(name) {
                return Err(ApiError::new(
                    ErrorCode::Connecting,
                    format!("{name:?} is still connecting; try again in a moment"),
                ));
            }
            slots.remove(name)
        };
        close_slot(stale).await;
        self.server_detail(name).await
    }

    /// Describes the server: identity and tools by gate status. Connects on first sight only;
    /// a server that failed admission is described as it failed, never re-admitted here (that
    /// is [`Host::connect`]), so looking at it cannot loop through admissions.
    pub async fn server_detail(&self, name: &str) -> Result<ServerDetail, ApiError> {
        let (spec, demo) = self.spec(name)?;
        if let Some(failed) = self.failed_detail(name, &spec, demo).await {
            return Ok(failed);
        }
        let connection = match self.connection(name).await {
            Ok(connection) => connection,
            Err(error) => return self.failed_detail(name, &spec, demo).await.ok_or(error),
        };
        let gated = connection.gated_tools().await?;
        let mut tools = ToolGroups::default();
        for gated in gated {
            match gated.status {
                ToolStatus::Allowed => tools.allowed.push(gated.tool),
                ToolStatus::Hidden => tools.hidden.push(gated.tool),
                ToolStatus::Blocked {
                    reason,
                    expected,
                    actual,
                } => tools.blocked.push(BlockedTool {
                    tool: gated.tool,
                    reason: reason.as_str(),
                    expected,
                    actual,
                }),
            }
        }
        let slots = self.slots.lock().await;
        Ok(ServerDetail {
            row: self.row_for(name, &spec, demo, slots.get(name)),
            banner: Some(IdentityBanner::from_verdict(connection.verdict())),
            era: Some(connection.era()),
            tools,
        })
    }

    /// Connects every listed server that is not connected (the window does this at start).
    /// All at once: a slow or refused server delays nothing else.
    pub async fn connect_all(&self) {
        let names: Vec<String> = match self.specs() {
            Ok(specs) => specs.into_iter().map(|(n, _, _)| n).collect(),
            Err(_) => return,
        };
        futures::future::join_all(names.iter().map(|name| self.connection(name))).await;
        self.started.send_replace(true);
    }

    /// The live connection to `name`, admitting and connecting it when there is none: for the
    /// host's own tests and the test kit, which look inside a connection. Front ends work by
    /// name through the methods around it.
    #[cfg(feature = "internals")]
    pub async fn live_connection(&self, name: &str) -> Result<Arc<Connection>, ApiError> {
        self.connection(name).await
    }

    /// Connects `name` unless it is connected (admission first) and lends its admission
    /// verdict to `read`: what a one-shot command shows about the server it works on. Lent,
    /// never handed out, as the verdict carries admission's proof.
    pub async fn with_verdict<R>(
        &self,
        name: &str,
        read: impl FnOnce(&Verdict) -> R,
    ) -> Result<R, ApiError> {
        let connection = self.connection(name).await?;
        Ok(read(connection.verdict()))
    }

    /// What the server said about itself in its handshake (connecting it first if needed).
    pub async fn server_summary(&self, name: &str) -> Result<ServerSummary, ApiError> {
        Ok(self.connection(name).await?.summary())
    }

    /// Every tool the server lists with the gate's status for it (allowed, hidden, or blocked
    /// with the expected and actual pins), connecting it first if needed.
    pub async fn gated_tools(&self, name: &str) -> Result<Vec<GatedTool>, ApiError> {
        Ok(self.connection(name).await?.gated_tools().await?)
    }

    /// How this host connects to `name`: its era, timeouts, broker, and who asks the user to
    /// sign in.
    pub(super) fn connect_options(&self, name: &str, demo: bool) -> ConnectOptions {
        ConnectOptions {
            era: if demo {
                demo::demo_era(name, self.options.request_era)
            } else {
                self.options.request_era
            },
            elicitation: match self.options.answering {
                Answering::Person => ElicitationMode::DeclineAndLog,
                Answering::SchemaDefaults => ElicitationMode::AcceptDefaults,
            },
            request_timeout: self.options.request_timeout,
            connect_timeout: self.options.connect_timeout,
            log_dir: Some(self.options.paths.logs.clone()),
            broker: match self.options.answering {
                Answering::Person => Some(self.broker.clone()),
                Answering::SchemaDefaults => None,
            },
            sign_in: self.options.sign_in.clone(),
            opener: self.options.opener.clone(),
            sign_in_timeout: self.options.sign_in_timeout,
            person_confinement: if demo {
                None
            } else {
                self.person_confinement(name)
            },
            ..ConnectOptions::default()
        }
    }

    /// Closes the connection to `name`, if any; the next use reconnects.
    pub async fn disconnect(&self, name: &str) {
        let stale = self.slots.lock().await.remove(name);
        if stale.is_some() {
            close_slot(stale).await;
            (self.notify)(Change::Servers { name: name.into() });
        }
    }
}

/// Closes a connection taken out of the slots in order. One a call still uses goes when that
/// call drops it (a stdio child is killed on drop).
pub(super) async fn close_slot(slot: Option<Slot>) {
    if let Some(Slot::Connected(connection)) = slot
        && let Ok(connection) = Arc::try_unwrap(connection)
    {
        connection.close().await;
    }
}
