//! Gatehouse as one MCP server for AI clients (`gatehouse serve`): the client connects to the
//! gateway; the gateway offers the gate's allowed tools, prompts and resources of the upstream
//! servers the host admitted, and every call, prompt and read passes the host's gate and
//! audit, with the client named.

pub mod bridge;
mod context;
pub mod headless;
pub mod http;
pub mod names;
pub mod routing;
pub mod server;
pub mod stdio;
pub mod tokens;

pub use headless::HeadlessConsent;
pub use server::{Gateway, GatewayHandler};
