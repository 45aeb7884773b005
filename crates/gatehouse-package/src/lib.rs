//! Gatehouse's package decisions (issue 25): between a user's server config, written the way AI
//! clients write it (`npx -y NAME@VERSION ARGS`, `uvx NAME`, `uvx --from NAME==VERSION CMD`, a
//! path to a `.mcpb`), and the package binding an admin signed
//! ([`gatehouse_attest::package::PackageBinding`]).
//!
//! Owns:
//! - [`launcher`]: recognising npx, uvx (and `uv tool run`) and `.mcpb` commands and reading
//!   the package they ask for;
//! - [`matching`]: whether that request is the binding (name, version, console script, fixed
//!   arguments) and which arguments are the user's own;
//! - [`user_args`]: the user's arguments against the binding's closed rules, on the real file
//!   system;
//! - [`registry`]: an MCP Registry `server.json` read into `bundle add-server` proposals;
//! - [`layout`]: where each artifact is unpacked in the store tree, the tree's store key, the
//!   entry file, and the Python console-script resolution and bootstrap program.
//!
//! Pure decisions: no network, no process spawning, no state. The host fetches, installs
//! (`gatehouse_store`) and launches.
//!
//! # Invariants
//!
//! - A launcher option that changes what runs or where it comes from (another package, a
//!   registry or index, a shell command, an interpreter choice, extras, URLs, paths, git) is
//!   never dropped: the request is [`launcher::Parsed::Unsupported`], naming the option.
//! - Tags and ranges (`latest`, `^1`, `>=1`, `NAME===1.0`) are never resolved: only an exact
//!   version, or none (which runs the bound version), matches.
//! - Names compare exactly in their ecosystem's normal form (PyPI PEP 503-normalised), so a
//!   look-alike (`server-filesytem`, another scope) never matches.
//! - The binding's fixed arguments must be the request's first arguments, byte for byte; every
//!   argument after them must be covered by a user-argument rule, in order.
//! - A directory argument is passed on resolved (symlinks followed), strictly under the resolved
//!   home; `~` and relative paths are refused, never expanded.
//! - Equal trees have equal [`layout::store_key`]s and any change to what is unpacked where
//!   gives another key.
//! - Only validated ASCII identifiers and escaped string literals reach the Python bootstrap
//!   program, which runs under `-I -S` so modules come only from the standard library and the
//!   store tree.

#![forbid(unsafe_code)]

pub mod binding;
pub mod launcher;
pub mod layout;
pub mod lockfile;
pub mod matching;
pub mod mcpb;
mod names;
pub mod registry;
pub mod user_args;
pub mod wheels;

#[cfg(test)]
mod fixtures;

pub use launcher::{LauncherKind, PackageRequest, Parsed, parse_launcher};
pub use layout::{
    LAYOUT_VERSION, LayoutError, PlannedArtifact, console_script, entry_file, plan,
    python_bootstrap, python_bootstrap_as, store_key,
};
pub use matching::{Mismatch, match_request, normal_form};
pub use user_args::{UserArgReason, UserArgRefusal, check_user_args};
