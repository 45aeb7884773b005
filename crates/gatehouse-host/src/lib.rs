//! The Gatehouse runtime: everything between a server spec and a tool result.
//!
//! It owns the server configuration (`servers.json` in the `mcpServers` format), secrets
//! (behind [`SecretStore`], the OS keychain in production), connections to MCP servers through
//! rmcp over stdio and Streamable HTTP in both protocol eras, and the traffic tap that records
//! every JSON-RPC message in and out.
//!
//! Invariants:
//! - every message that crosses a transport passes through the `tap` before rmcp sees it or
//!   after rmcp produced it; secrets resolved from the keychain are redacted from the record;
//! - a misbehaving server (bad framing, oversize messages, exit, silence, HTTP errors) ends in a
//!   [`HostError`] for that call or that server, never a panic of the host;
//! - tool calls go out one round at a time (`call_tool_once`), so every MRTR round is the host's
//!   decision.
//!
//! It never reads the clock directly in the tap (a [`Clock`] is passed in), never prints, and
//! never renders server text: that is the caller's job.

/// Declares runtime modules: `pub` with the `internals` feature (on for the host's own tests
/// and benches, through the test kit), crate-private otherwise, so a front end built on its
/// own cannot name them and goes through [`host::Host`] and the re-exports below.
macro_rules! runtime_modules {
    ($($module:ident),* $(,)?) => {
        $(
            #[cfg(feature = "internals")]
            pub mod $module;
            #[cfg(not(feature = "internals"))]
            // What only the tests use is dead (or an unused re-export) in a build without them.
            #[allow(dead_code, unused_imports)]
            pub(crate) mod $module;
        )*
    };
}

// The same list as `RUNTIME_MODULES` in tests/one_door.rs (plus `http`, always private):
// keep them in step.
runtime_modules!(
    admission,
    broker,
    client,
    confine,
    connection,
    durability,
    era,
    error,
    error_code,
    gatekeeper,
    launch_risk,
    packages,
    security,
    stdio,
    tap,
);

// What front ends use by module path (their rules on their own, or their UI's contracts).
pub mod audit_event;
pub mod auth;
pub mod caller;
pub mod config;
pub mod consent;
pub mod content;
pub mod demo;
pub mod fetch;
pub mod files;
pub mod host;
pub(crate) mod http;
pub mod secrets;

/// What a protocol test client needs beyond [`host::Host`]: a connection it drives request
/// by request (MRTR rounds: authorize, one round, answer the input requests, retry). Only the
/// conformance client uses it, because the suite scores exactly those steps on the wire;
/// every other front end works through `Host` by server name.
pub mod protocol {
    use std::sync::Arc;

    pub use crate::connection::{Connection, MAX_INPUT_ROUNDS, Round};
    use crate::host::{ApiError, Host};

    /// The host's live connection to `name`, admitting and connecting it when there is none.
    pub async fn connection(host: &Host, name: &str) -> Result<Arc<Connection>, ApiError> {
        host.connection(name).await
    }
}

// The front ends' contract: what they name from the root.
pub use admission::{BundleSource, IdentitySource, LockGuard, Status, Widening};
pub use admission::{SYSTEM_TRUST_ROOTS, Trust, TrustSettings, Verdict};
pub use audit_event::AuditEvent;
pub use broker::ElicitationRecord;
pub use caller::{Attribution, Caller, DownstreamTransport};
pub use client::HostEvent;
pub use config::{ImportReport, load_policy};
pub use config::{ServerSpec, ServersFile};
pub use confine::{
    ConfinementState, ConfinementView, EgressRefusal, GrantSource, NetworkView, SandboxTools,
    UnconfinedReason,
};
pub use connection::{
    CallOptions, CallProgress, CompletionTarget, GatedPrompt, GatedResource, GatedTemplate,
    GatedTool, ServerSummary, Subscriber, ToolOutcome,
};
pub use consent::{ConsentUi, Prompt, ScriptedConsent, SystemBrowser, UrlOpener};
pub use era::{Era, EraPreference};
pub use error::HostError;
pub use error_code::ErrorCode;
pub use secrets::{KeyringStore, MemoryStore, SecretStore};
pub use security::{AUDIT_FILE, Finding};
pub use tap::{Clock, Direction, TrafficEntry, TrafficTap, system_clock};

// Runtime parts the host's tests, benches and the test kit name from the root; no front end.
#[cfg(feature = "internals")]
pub use broker::{BrokerOptions, ElicitationBroker, Session};
#[cfg(feature = "internals")]
pub use client::ElicitationMode;
#[cfg(feature = "internals")]
pub use connection::{ConnectOptions, Connection};
#[cfg(feature = "internals")]
pub use gatekeeper::{Approvals, Auditor, Gatekeeper};

/// The largest single JSON-RPC message accepted from a server, in bytes (16 MiB).
///
/// The same figure rmcp uses for HTTP bodies and SSE events, applied to stdio lines too, so a
/// server cannot make the host buffer without bound on any transport.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
