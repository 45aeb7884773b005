//! The Gatehouse runtime: everything between a server spec and a tool result.
//!
//! It owns the server configuration (`servers.json` in the `mcpServers` format), secrets
//! (behind [`SecretStore`], the OS keychain in production), connections to MCP servers through
//! rmcp over stdio and Streamable HTTP in both protocol eras, and the traffic tap that records
//! every JSON-RPC message in and out.
//!
//! Invariants:
//! - every message that crosses a transport passes through the [`tap`] before rmcp sees it or
//!   after rmcp produced it; secrets resolved from the keychain are redacted from the record;
//! - a misbehaving server (bad framing, oversize messages, exit, silence, HTTP errors) ends in a
//!   [`HostError`] for that call or that server, never a panic of the host;
//! - tool calls go out one round at a time (`call_tool_once`), so every MRTR round is the host's
//!   decision.
//!
//! It never reads the clock directly in the tap (a [`Clock`] is passed in), never prints, and
//! never renders server text: that is the caller's job.

pub mod admission;
pub mod audit_event;
pub mod auth;
pub mod broker;
pub mod caller;
pub mod client;
pub mod config;
pub mod connection;
pub mod consent;
pub mod content;
pub mod demo;
pub mod durability;
pub mod era;
pub mod error;
pub mod error_code;
pub mod fetch;
pub mod files;
pub mod gatekeeper;
pub mod host;
pub(crate) mod http;
pub mod launch_risk;
pub mod secrets;
pub mod security;
pub mod stdio;
pub mod tap;

pub use admission::{SYSTEM_TRUST_ROOTS, Trust, TrustSettings, Verdict};
pub use audit_event::AuditEvent;
pub use broker::{BrokerOptions, ElicitationBroker, ElicitationRecord, Session};
pub use caller::{Attribution, Caller, DownstreamTransport};
pub use client::{ElicitationMode, HostEvent};
pub use config::{ServerSpec, ServersFile};
pub use connection::{
    CallOptions, CallProgress, CompletionTarget, ConnectOptions, Connection, GatedTool,
    MAX_INPUT_ROUNDS, Round, Subscriber, ToolOutcome,
};
pub use consent::{ConsentUi, Prompt, ScriptedConsent, SystemBrowser, UrlOpener};
pub use era::{Era, EraPreference};
pub use error::HostError;
pub use error_code::ErrorCode;
pub use gatekeeper::{Approvals, Auditor, Gatekeeper};
pub use secrets::{KeyringStore, MemoryStore, SecretStore};
pub use tap::{Clock, Direction, TrafficEntry, TrafficTap, system_clock};
// What the front ends print and pass back: they name these from the root.
pub use admission::{BundleSource, LockGuard, Status, Widening};
pub use config::{ImportReport, load_policy};
pub use connection::ServerSummary;
pub use security::{AUDIT_FILE, Finding};

/// The largest single JSON-RPC message accepted from a server, in bytes (16 MiB).
///
/// The same figure rmcp uses for HTTP bodies and SSE events, applied to stdio lines too, so a
/// server cannot make the host buffer without bound on any transport.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
