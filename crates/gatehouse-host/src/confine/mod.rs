//! Confinement of stdio servers (issue 28): what a server may read, write and reach once it
//! runs, decided at admission and enforced by the operating system at launch.
//!
//! Split by concern: the decision (mode, grants, whether this machine can confine) is
//! `decide.rs`; finding bubblewrap and the init and checking once that they really build a
//! sandbox is `probe.rs`; the sandbox plan and the egress proxy of one launch are `launch.rs`;
//! the per-server proxy itself is `proxy.rs`. Here the view every front end shows.
//!
//! The declaration (`gatehouse_confine`) is independent of the mechanism; on Linux the
//! mechanism is bubblewrap plus our own in-sandbox init (seccomp, rlimits, the forwarder).

mod admit;
mod decide;
mod launch;
mod probe;
pub(crate) mod proxy;

use std::path::PathBuf;

use gatehouse_confine::ConfinementMode;
use serde::{Deserialize, Serialize};

pub(crate) use admit::confine_verdict;
pub(crate) use decide::Sandboxing;
pub(crate) use launch::{SandboxedLaunch, sandbox_launch};
pub use probe::{SandboxTools, discover_init};

/// Finds and checks bubblewrap and the init (once per pair per process).
pub(crate) fn check_tools(
    tools: &SandboxTools,
) -> Result<probe::Checked, (UnconfinedReason, String)> {
    probe::check(tools)
}

/// Whether a server runs confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfinementState {
    Confined,
    Unconfined,
    /// An HTTP server: it runs elsewhere, nothing here starts it.
    NotApplicable,
}

impl ConfinementState {
    pub fn as_str(self) -> &'static str {
        match self {
            ConfinementState::Confined => "confined",
            ConfinementState::Unconfined => "unconfined",
            ConfinementState::NotApplicable => "not_applicable",
        }
    }
}

/// Why a stdio server runs unconfined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnconfinedReason {
    /// The policy and every bundle say `off`.
    ModeOff,
    /// `bwrap` (Debian's `bubblewrap`) is not installed.
    BubblewrapMissing,
    /// bubblewrap could not create its namespaces: unprivileged user namespaces are refused.
    UserNamespacesUnavailable,
    /// Gatehouse's own `gatehouse-sandbox-init` is not where it is installed.
    InitMissing,
    /// The sandbox started, but it was not one (the same network namespace as the host).
    SelfCheckFailed,
    /// The person set `"mode": "off"` on this unattested server in `servers.json`.
    PersonTurnedOff,
}

impl UnconfinedReason {
    pub fn as_str(self) -> &'static str {
        match self {
            UnconfinedReason::ModeOff => "mode_off",
            UnconfinedReason::BubblewrapMissing => "bubblewrap_missing",
            UnconfinedReason::UserNamespacesUnavailable => "user_namespaces_unavailable",
            UnconfinedReason::InitMissing => "init_missing",
            UnconfinedReason::SelfCheckFailed => "self_check_failed",
            UnconfinedReason::PersonTurnedOff => "person_turned_off",
        }
    }
}

/// Which hosts a server can reach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NetworkView {
    /// No network at all (a loopback of its own).
    None,
    /// Only these `host:port`s, through Gatehouse's proxy.
    Hosts { hosts: Vec<String> },
    /// The host's network, unfiltered.
    Any,
}

/// Whose word the grants are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantSource {
    /// The admission: the bundle entry, the attestation's hosts, a package binding's
    /// directory arguments.
    Admission,
    /// The person's own `confinement` in `servers.json` (an unattested server).
    Person,
    /// Nothing granted: the default confinement.
    Default,
}

impl GrantSource {
    pub fn as_str(self) -> &'static str {
        match self {
            GrantSource::Admission => "admission",
            GrantSource::Person => "person",
            GrantSource::Default => "default",
        }
    }
}

/// A server's confinement as shown (the desktop's server detail, `servers list --json`) and
/// recorded (the admission record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfinementView {
    pub state: ConfinementState,
    /// The effective mode: the strictest of the policy, the bundles and the entry.
    pub mode: ConfinementMode,
    /// Who set that mode: `policy`, `default`, bundle labels (`id@version`), `you`.
    pub mode_set_by: Vec<String>,
    /// Why it runs unconfined (when it does).
    pub reason: Option<UnconfinedReason>,
    /// One sentence for people, shown as is.
    pub detail: String,
    /// What it can read (paths as shown: `~/…` under the home).
    pub read: Vec<String>,
    /// What it can write (and read).
    pub write: Vec<String>,
    /// Its own code, read-only.
    pub code: Vec<String>,
    pub network: NetworkView,
    /// Processes it may start (0: none, threads only).
    pub processes: u32,
    pub memory_mib: u32,
    pub grants_from: GrantSource,
}

impl ConfinementView {
    /// The view of an HTTP server: nothing here runs it.
    pub fn not_applicable() -> ConfinementView {
        ConfinementView {
            state: ConfinementState::NotApplicable,
            mode: ConfinementMode::Off,
            mode_set_by: Vec::new(),
            reason: None,
            detail:
                "a remote server runs elsewhere; confinement applies to servers Gatehouse starts"
                    .into(),
            read: Vec::new(),
            write: Vec::new(),
            code: Vec::new(),
            network: NetworkView::None,
            processes: 0,
            memory_mib: 0,
            grants_from: GrantSource::Default,
        }
    }

    /// Whether the server runs in a sandbox.
    pub fn is_confined(&self) -> bool {
        self.state == ConfinementState::Confined
    }
}

/// What confinement decides with, set once when the host opens.
#[derive(Debug, Clone)]
pub struct ConfinementSettings {
    /// The policy's `[confinement] mode`.
    pub policy_mode: ConfinementMode,
    /// The policy was the shipped default (its mode is shown as `default`).
    pub policy_is_default: bool,
    pub tools: SandboxTools,
    /// The user's home: where `~` grants resolve and the private home is bound.
    pub home: PathBuf,
    /// The host's data directory: private homes under `sandbox/`, proxy sockets' fallback.
    pub data: PathBuf,
}
