//! The desktop app's front end on the [`Host`]: the host with [`PromptDesk`] as its consent UI
//! (prompts are cards kept here; the window is told only that something changed and answers
//! through typed calls). The Tauri shell adds the window: it passes in the paths from its path
//! resolver and a [`Notifier`] that turns [`Change`]s into window events.

pub mod prompts;

use std::ops::Deref;
use std::sync::Arc;

use crate::secrets::SecretStore;

pub use crate::host::{
    ApiError as DeskError, AuditVerdict, AuditWarning, BlockedTool, CallOutcome,
    Change as DeskEvent, DEMO_LEGACY_NAME, Host, HostOptions as DeskOptions,
    HostPaths as DeskPaths, ImportOutcome, NewServer, Notifier, RowReason, ServerDetail, ServerRow,
    Settings, ToolGroups,
};
pub use gatehouse_policy::FieldError;
pub use prompts::{CardState, PromptCard, PromptDesk, WindowAnswer, WindowReply};

/// The desktop host: the [`Host`] (every server action, through `Deref`) and its cards.
pub struct Desk {
    host: Arc<Host>,
    prompts: Arc<PromptDesk>,
}

impl Desk {
    /// Opens the host with the desk's cards as its consent UI; fails as [`Host::open`] does.
    pub fn open(
        options: DeskOptions,
        secrets: Arc<dyn SecretStore>,
        notify: Notifier,
    ) -> Result<Arc<Desk>, DeskError> {
        let prompts = PromptDesk::new(notify.clone());
        let host = Host::open(options, secrets, prompts.clone(), notify)?;
        Ok(Arc::new(Desk { host, prompts }))
    }

    pub fn prompts(&self) -> &Arc<PromptDesk> {
        &self.prompts
    }

    /// The host itself, for a front end that shares it (the gateway's bridge).
    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }
}

impl Deref for Desk {
    type Target = Host;

    fn deref(&self) -> &Host {
        &self.host
    }
}
