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
pub(crate) mod view;
mod decide;
mod launch;
mod probe;
pub(crate) mod proxy;

use std::path::PathBuf;

use gatehouse_confine::ConfinementMode;

pub(crate) use admit::confine_verdict;
pub use view::{
    ConfinementState, ConfinementView, EgressRefusal, GrantSource, NetworkView, UnconfinedReason,
};
pub(crate) use launch::{SandboxedLaunch, sandbox_launch};
pub use probe::{SandboxTools, discover_init};

/// Finds and checks bubblewrap and the init (once per pair per process).
pub(crate) fn check_tools(
    tools: &SandboxTools,
) -> Result<probe::Checked, (UnconfinedReason, String)> {
    probe::check(tools)
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
