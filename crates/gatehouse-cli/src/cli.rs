//! The command line, as clap sees it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use gatehouse_host::EraPreference;

#[derive(Debug, Parser)]
#[command(
    name = "gatehouse",
    version,
    about = "Gatehouse: an MCP host that admits servers before it trusts them"
)]
pub struct Cli {
    /// The servers file (mcpServers format). Default: $XDG_CONFIG_HOME/gatehouse/servers.json.
    #[arg(long, global = true, env = "GATEHOUSE_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Machine-readable output: one JSON document on stdout (JSON lines for `trace`).
    #[arg(long, global = true)]
    pub json: bool,

    /// Protocol era: auto (try 2026-07-28, fall back to 2025-11-25), 2025-11-25 or 2026-07-28.
    #[arg(long, global = true, default_value = "auto", value_name = "ERA")]
    pub era: EraPreference,

    /// Seconds to wait for one request before cancelling it.
    #[arg(long, global = true, default_value_t = 60.0, value_name = "SECS")]
    pub timeout: f64,

    /// Seconds to wait for the handshake.
    #[arg(long, global = true, default_value_t = 30.0, value_name = "SECS")]
    pub connect_timeout: f64,

    /// Also append every JSON-RPC message to this JSONL file.
    #[arg(long, global = true, value_name = "FILE")]
    pub traffic_log: Option<PathBuf>,

    /// Where stdio servers' stderr logs go. Default: $XDG_DATA_HOME/gatehouse/logs.
    #[arg(long, global = true, value_name = "DIR")]
    pub log_dir: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List, add, remove and import configured servers.
    #[command(subcommand)]
    Servers(ServersCommand),
    /// Store secrets in the OS keychain.
    #[command(subcommand)]
    Secret(SecretCommand),
    /// Connect to a server and show what it says about itself.
    Connect(Target),
    /// List a server's tools.
    Tools(Target),
    /// Call a tool: `call SERVER TOOL --args JSON`, or `call --stdio CMD TOOL --args JSON`.
    Call(CallArgs),
    /// Connect (and optionally call a tool), then print every JSON-RPC message exchanged.
    Trace(TraceArgs),
    /// The client for the official MCP conformance suite (reads MCP_CONFORMANCE_SCENARIO).
    #[command(hide = false)]
    Conformance {
        /// The conformance server's URL (the suite appends it).
        url: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ServersCommand {
    /// List configured servers.
    List,
    /// Add a server.
    Add(AddArgs),
    /// Remove a server.
    Remove { name: String },
    /// Import servers from a Claude Desktop, Cursor or VS Code config file.
    Import {
        path: PathBuf,
        /// Replace servers that already exist (default: skip them).
        #[arg(long)]
        replace: bool,
    },
}

#[derive(Debug, Args)]
pub struct AddArgs {
    pub name: String,
    #[command(flatten)]
    pub server: Adhoc,
    /// Environment variable for a stdio server, KEY=VALUE (VALUE may be ${secret:NAME}).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Working directory for a stdio server.
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// HTTP header, NAME=VALUE (VALUE may be ${secret:NAME}).
    #[arg(long = "header", value_name = "NAME=VALUE")]
    pub headers: Vec<String>,
    /// Keychain secret sent as the bearer token (store it with `gatehouse secret set`).
    #[arg(long, value_name = "SECRET")]
    pub bearer_secret: Option<String>,
    /// Replace a server of the same name.
    #[arg(long)]
    pub replace: bool,
}

#[derive(Debug, Subcommand)]
pub enum SecretCommand {
    /// Store a secret; the value is read from stdin and never echoed.
    Set { name: String },
    /// Remove a secret.
    Delete { name: String },
}

/// An ad-hoc server instead of a configured one.
#[derive(Debug, Args, Clone, Default)]
pub struct Adhoc {
    /// A stdio server command line, e.g. --stdio 'npx -y @modelcontextprotocol/server-everything'.
    #[arg(long, value_name = "'CMD ARGS…'", conflicts_with = "url")]
    pub stdio: Option<String>,
    /// A Streamable HTTP server URL.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
}

impl Adhoc {
    pub fn given(&self) -> bool {
        self.stdio.is_some() || self.url.is_some()
    }
}

#[derive(Debug, Args)]
pub struct Target {
    /// A configured server name (or use --stdio / --url).
    pub server: Option<String>,
    #[command(flatten)]
    pub adhoc: Adhoc,
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// SERVER TOOL, or just TOOL with --stdio / --url.
    #[arg(value_name = "SERVER TOOL", num_args = 1..=2, required = true)]
    pub words: Vec<String>,
    #[command(flatten)]
    pub adhoc: Adhoc,
    /// The tool's arguments as a JSON object.
    #[arg(long, value_name = "JSON")]
    pub args: Option<String>,
}

#[derive(Debug, Args)]
pub struct TraceArgs {
    #[command(flatten)]
    pub target: Target,
    /// Also call this tool.
    #[arg(long = "call", value_name = "TOOL")]
    pub tool: Option<String>,
    /// Arguments for --call, as a JSON object.
    #[arg(long, value_name = "JSON", requires = "tool")]
    pub args: Option<String>,
}
