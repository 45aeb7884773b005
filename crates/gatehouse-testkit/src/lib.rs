//! The harness the host, gateway, CLI and desktop integration tests share (a dev-dependency
//! only; nothing shipped links it):
//!
//! - [`demo`]: where the demo server binary is (`$GATEHOUSE_DEMO_SERVER`, else the test's
//!   target directory);
//! - [`audit`]: an audit log's records, as JSON values or as `gatehouse_audit` records, all of
//!   them or one event's;
//! - [`host`]: the real [`gatehouse_host::host::Host`] opened in a test's directory, plain or in
//!   demo mode, with the consent UI the test gives;
//! - [`bundles`]: signed trust-root bundles and attestations under fixed test keys;
//! - [`rig`]: the security core (trust, audit log, gatekeeper, tap) assembled by hand, for the
//!   tests that drive a `Connection` or a sign-in below the host;
//! - [`raw`]: a raw line-JSON MCP client over a child process's stdio;
//! - [`sandbox`]: bubblewrap and the sandbox init, real or broken, for the confinement tests;
//! - `oauth` (feature `oauth`): a mock authorization server, an approving sign-in UI and a
//!   browser that follows its redirect;
//! - `mcp` (feature `mcp`): rmcp's client connected in-process to any rmcp server handler;
//! - `mirror` (feature `mirror`): an npm registry and PyPI index on a loopback port serving a
//!   seed directory, with a request log, tampering and stopping.

pub mod audit;
pub mod bundles;
pub mod demo;
pub mod host;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "mirror")]
pub mod mirror;
#[cfg(feature = "oauth")]
pub mod oauth;
pub mod raw;
pub mod rig;
pub mod sandbox;
