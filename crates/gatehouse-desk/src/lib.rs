//! The desktop app's front end on the [`Host`]: the host with [`PromptDesk`] as its consent UI
//! and [`SignInDesk`] as its sign-in UI (prompts and sign-ins are cards kept here; the window is
//! told only that something changed and answers through typed calls). The Tauri shell adds the
//! window: it passes in the paths from its path resolver, a [`Notifier`] that turns [`Change`]s
//! into window events, and a [`SignInNotifier`] for the sign-in cards. Resource reads are kept
//! on a small shelf ([`reads`]) so the window can save a binary item by its read id. A
//! person's own pins ([`pins`]) and the AI clients' config files ([`client_files`]) are the
//! window's side of `gatehouse servers pin` and `gatehouse clients connect | restore`.

pub mod autostart;
pub mod client_files;
pub mod confinement;
pub mod dispatch;
pub mod events;
pub mod launch;
pub mod pins;
pub mod prompts;
pub mod reads;
pub mod review;
pub mod signin;
pub mod wire;

use std::ops::Deref;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use gatehouse_host::secrets::SecretStore;
use gatehouse_host::{ServerSpec, ServersFile};

pub use autostart::{AutostartChoice, AutostartSetup, AutostartView};
pub use client_files::{
    BroughtServer, BroughtState, ClientConnected, ClientFileRow, ClientRestored, ClientSetup,
    locate_gatehouse,
};
pub use confinement::ConfinementForm;
pub use dispatch::{QuitPlan, dispatch};
pub use events::{EventHub, WindowEvent};
pub use gatehouse_clients::{ClientId, Scope as ClientScope};
pub use gatehouse_host::CompletionTarget;
pub use gatehouse_host::host::SignInRow;
pub use gatehouse_host::host::context::{
    PromptGroups, PromptView, ReadTarget, ReadView, ResourceGroups, Sender, TemplateRow, Withheld,
};
pub use gatehouse_host::host::{
    ApiError as DeskError, AuditVerdict, AuditWarning, BlockedTool, CallOutcome,
    Change as DeskEvent, DEMO_LEGACY_NAME, Host, HostOptions as DeskOptions,
    HostPaths as DeskPaths, ImportOutcome, NewServer, Notifier, RowReason, ServerDetail, ServerRow,
    Settings, ToolGroups,
};
pub use gatehouse_host::host::{PackageState, RowStatus};
pub use gatehouse_host::{ConfinementState, ConfinementView, GrantSource, NetworkView};
pub use gatehouse_policy::FieldError;
pub use launch::Launch;
pub use pins::{PinPlanView, PinnedView, PlannedTool};
pub use prompts::{CardState, PromptCard, PromptDesk, WindowAnswer, WindowReply};
pub use reads::{ReadShelf, ShelvedRead};
pub use review::{
    ArgumentReview, DetailView, FieldReview, FindingView, PromptReview, PromptsView, ToolReview,
};
pub use signin::{
    SignInCard, SignInCards, SignInChange, SignInDesk, SignInNotifier, SignInReply, SignInResult,
    SignInState,
};

/// The desktop host: the [`Host`] (every server action, through `Deref`) and its cards.
pub struct Desk {
    host: Arc<Host>,
    prompts: Arc<PromptDesk>,
    sign_ins: Arc<SignInDesk>,
    /// `servers.json`, to tell which servers sign in.
    config: PathBuf,
    /// The last few resource reads, for saving their binary items.
    reads: ReadShelf,
    /// The data directory (the AI clients' backups are under it, as for the CLI).
    data: PathBuf,
    /// The keychain, for the secrets a client's connect moves out of its file.
    secrets: Arc<dyn SecretStore>,
    /// Tells the window what changed (a pin, a client's servers).
    notify: Notifier,
    /// The last pin plan of each server, so the Pin writes what the window showed.
    plans: pins::PlanShelf,
    /// The AI clients' directories and the `gatehouse` they launch, from the shell.
    clients: client_files::ClientsSlot,
    /// Start at login: where the entry goes and what it starts (set by the opener).
    autostart: autostart::AutostartSlot,
}

/// A configured HTTP server that signs in with MCP authorization (it has no static
/// credential), and its stored sign-in, if any.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerSignIn {
    pub server: String,
    pub sign_in: Option<SignInRow>,
}

impl Desk {
    /// Opens the host with the desk's cards as its consent and sign-in UIs; fails as
    /// [`Host::open`] does. Sign-in cards are announced as a change of their server.
    pub fn open(
        options: DeskOptions,
        secrets: Arc<dyn SecretStore>,
        notify: Notifier,
    ) -> Result<Arc<Desk>, DeskError> {
        let servers = notify.clone();
        let sign_ins: SignInNotifier = Arc::new(move |change: SignInChange| {
            servers(DeskEvent::Servers {
                name: change.server,
            })
        });
        Desk::open_with_sign_ins(options, secrets, notify, sign_ins)
    }

    /// [`Desk::open`], with sign-in cards announced through `sign_ins`. The desk's
    /// [`SignInDesk`] is the host's sign-in UI (`options.sign_in`).
    pub fn open_with_sign_ins(
        mut options: DeskOptions,
        secrets: Arc<dyn SecretStore>,
        notify: Notifier,
        sign_ins: SignInNotifier,
    ) -> Result<Arc<Desk>, DeskError> {
        let prompts = PromptDesk::new(notify.clone());
        let sign_ins = SignInDesk::new(sign_ins);
        options.sign_in = Some(sign_ins.clone());
        let config = options.paths.config.clone();
        let data = options.paths.data.clone();
        let host = Host::open(options, secrets.clone(), prompts.clone(), notify.clone())?;
        Ok(Arc::new(Desk {
            host,
            prompts,
            sign_ins,
            config,
            reads: ReadShelf::new(),
            data,
            secrets,
            notify,
            plans: pins::PlanShelf::default(),
            clients: client_files::ClientsSlot::default(),
            autostart: autostart::AutostartSlot::default(),
        }))
    }

    pub fn prompts(&self) -> &Arc<PromptDesk> {
        &self.prompts
    }

    /// The sign-in cards (not [`Host::sign_ins`], the stored sign-ins).
    pub fn sign_in_desk(&self) -> &Arc<SignInDesk> {
        &self.sign_ins
    }

    /// Every server in `servers.json` that signs in with MCP authorization (HTTP, no
    /// bearerTokenSecret or Authorization header), in file order, with its stored sign-in.
    pub async fn server_sign_ins(&self) -> Result<Vec<ServerSignIn>, DeskError> {
        let config = ServersFile::load(&self.config)?;
        let names: Vec<String> = config
            .servers
            .iter()
            .filter(|(name, entry)| {
                matches!(entry.to_spec(name), Ok(ServerSpec::Http(http)) if http.uses_oauth())
            })
            .map(|(name, _)| name.clone())
            .collect();
        let mut stored = self.host.sign_ins().await?;
        Ok(names
            .into_iter()
            .map(|server| {
                let sign_in = stored
                    .iter()
                    .position(|row| row.server == server)
                    .map(|at| stored.swap_remove(at));
                ServerSignIn { server, sign_in }
            })
            .collect())
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
