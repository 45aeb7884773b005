//! What a front end opens the host with: its paths ([`HostPaths`]) and its settings
//! ([`HostOptions`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_attest::bundle::Posture;

use super::ApiError;
use crate::ErrorCode;
use crate::connection::ConnectOptions;
use crate::consent::{SystemBrowser, UrlOpener};
use crate::demo;
use crate::era::EraPreference;
use crate::security::{AUDIT_FILE, Finding};
use crate::tap::Clock;

/// Told what opening the trust roots and the audit log found (see [`HostOptions::findings`]).
pub type FindingsSink = Arc<dyn Fn(&Finding<'_>) + Send + Sync>;

/// Where the host keeps things: from the shell's path resolver, the CLI's defaults, or a
/// test's temp dir.
#[derive(Debug, Clone)]
pub struct HostPaths {
    /// `servers.json`.
    pub config: PathBuf,
    /// The audit log, approvals, suspensions.
    pub data: PathBuf,
    /// Servers' stderr logs.
    pub logs: PathBuf,
    /// User-level trust roots (ignored under a locked admin bundle).
    pub user_trust_roots: Option<PathBuf>,
    /// System trust roots, normally `/etc/gatehouse/trust-roots`.
    pub system_trust_roots: PathBuf,
}

impl HostPaths {
    pub fn audit(&self) -> PathBuf {
        self.data.join(AUDIT_FILE)
    }
}

#[derive(Clone)]
pub struct HostOptions {
    pub paths: HostPaths,
    /// The embedded demo: the DEMO-ONLY trust root and the demo server in both eras.
    pub demo: bool,
    /// The demo server's executable, instead of [`demo::locate_demo_server`]'s.
    pub demo_server: Option<PathBuf>,
    pub posture_override: Option<Posture>,
    /// The elicitation policy file; `None` is the shipped default.
    pub policy: Option<PathBuf>,
    pub prompt_timeout: Duration,
    pub request_timeout: Duration,
    pub clock: Clock,
    /// Where consented URLs go: the system browser in the app.
    pub opener: Arc<dyn UrlOpener>,
    /// The audit log, instead of the one in the data directory (the CLI's `--audit`).
    pub audit_file: Option<PathBuf>,
    /// An admin directory to load instead of `paths.system_trust_roots` (the CLI's
    /// `--trust-roots`): a widening a locked bundle in the system's directory refuses.
    pub admin_trust_roots: Option<PathBuf>,
    /// The era to speak to configured servers (the CLI's `--era`; the demo's `demo-2025`
    /// always speaks 2025-11-25).
    pub request_era: EraPreference,
    /// How long a server gets for its handshake.
    pub connect_timeout: Duration,
    /// Also append every JSON-RPC message to this JSONL file (the CLI's `--traffic-log`).
    pub traffic_log: Option<PathBuf>,
    /// Told what opening the trust roots and the audit log found, as each step completes (so
    /// a front end can show it even when a later step fails the opening).
    pub findings: Option<FindingsSink>,
    /// Who asks the user to sign in to a server that requires MCP authorization; without
    /// one, such servers are refused (`auth_required`) unless a stored sign-in works.
    pub sign_in: Option<Arc<dyn crate::auth::SignInUi>>,
    /// How long the user has to finish a sign-in in the browser.
    pub sign_in_timeout: Duration,
    /// Who answers the elicitations of this host's servers.
    pub answering: Answering,
    /// The package-sources file to read instead of the one beside the system trust roots
    /// (`/etc/gatehouse/package-sources.json`): the CLI's `--package-sources`, a test's
    /// mirror.
    pub package_sources: Option<PathBuf>,
    /// The user's home, for package user-argument rules (`existing_directory_under_home`);
    /// `None` is `$HOME`.
    pub home: Option<PathBuf>,
    /// bubblewrap and the sandbox init that confine stdio servers (issue 28); `None` in
    /// either discovers it (see [`crate::SandboxTools`]).
    pub sandbox: crate::SandboxTools,
    /// The scratch directory of an [`HostOptions::ephemeral`] host, kept (and removed) with
    /// the options the host holds.
    pub(super) scratch: Option<Arc<tempfile::TempDir>>,
}

/// Who answers a server's elicitations on a host's connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Answering {
    /// The person, through the front end's consent UI and the broker (policy, receipts).
    #[default]
    Person,
    /// Nobody: form elicitations are accepted with the schema's defaults and URL ones
    /// declined, with no broker. The conformance client only: that is what the suite checks.
    SchemaDefaults,
}

impl HostOptions {
    pub(super) fn demo_server(&self) -> Result<PathBuf, ApiError> {
        match &self.demo_server {
            Some(path) => Ok(path.clone()),
            None => {
                demo::locate_demo_server().map_err(|e| ApiError::new(ErrorCode::DemoUnavailable, e))
            }
        }
    }

    /// The package-sources file in use: the override, else the one beside the system's
    /// admin trust roots.
    pub fn package_sources_path(&self) -> PathBuf {
        self.package_sources.clone().unwrap_or_else(|| {
            self.paths
                .system_trust_roots
                .parent()
                .unwrap_or(&self.paths.system_trust_roots)
                .join(crate::packages::SOURCES_FILE)
        })
    }

    /// The audit log in use.
    pub fn audit_path(&self) -> PathBuf {
        self.audit_file
            .clone()
            .unwrap_or_else(|| self.paths.audit())
    }

    pub fn new(paths: HostPaths, clock: Clock) -> HostOptions {
        HostOptions {
            paths,
            demo: false,
            demo_server: None,
            posture_override: None,
            policy: None,
            prompt_timeout: crate::broker::DEFAULT_HUMAN_TIMEOUT,
            request_timeout: Duration::from_secs(60),
            clock,
            opener: Arc::new(SystemBrowser),
            audit_file: None,
            admin_trust_roots: None,
            request_era: EraPreference::Auto,
            connect_timeout: ConnectOptions::default().connect_timeout,
            traffic_log: None,
            findings: None,
            sign_in: None,
            sign_in_timeout: ConnectOptions::default().sign_in_timeout,
            answering: Answering::Person,
            package_sources: None,
            home: None,
            sandbox: crate::SandboxTools::default(),
            scratch: None,
        }
    }
}
