//! What a confinement looks like to everyone outside this module: the view every front end
//! shows and the admission record carries, the reason an egress proxy refused, and what a
//! verdict hands the launch. Plain data with no imports from the rest of the host, so the
//! verdict and the audit events can name it without reaching the decision or the launch.

use std::path::PathBuf;

use gatehouse_confine::{ConfinementMode, Grants};
use serde::{Deserialize, Serialize};

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
    /// The sandbox started, but its self-check found it was not one (the host's network
    /// namespace, privileges not dropped, no working seccomp filter, or a home not hidden).
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

/// Why a connection through the proxy was refused (audited as the `egress_refused` record's reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EgressRefusal {
    /// The host and port are not in the server's grants.
    NotGranted,
    /// The request head was not a proxy request this proxy understands.
    MalformedRequest,
    /// Granted, but resolving or connecting failed (or took over 10 s).
    Unreachable,
}

impl EgressRefusal {
    pub const ALL: [EgressRefusal; 3] = [
        EgressRefusal::NotGranted,
        EgressRefusal::MalformedRequest,
        EgressRefusal::Unreachable,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EgressRefusal::NotGranted => "not_granted",
            EgressRefusal::MalformedRequest => "malformed_request",
            EgressRefusal::Unreachable => "unreachable",
        }
    }

    /// The HTTP status the client is answered with.
    pub(crate) fn status(self) -> u16 {
        match self {
            EgressRefusal::NotGranted => 403,
            EgressRefusal::MalformedRequest => 400,
            EgressRefusal::Unreachable => 502,
        }
    }
}

/// What a confined server runs with: the checked tools and the grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sandboxing {
    pub bwrap: PathBuf,
    pub init: PathBuf,
    pub grants: Grants,
    pub home: PathBuf,
    pub data: PathBuf,
    pub code: Vec<PathBuf>,
}

