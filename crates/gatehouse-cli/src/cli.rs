//! The command line, as clap sees it.

use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use gatehouse_attest::bundle::Posture;
use gatehouse_clients::ClientId;
use gatehouse_host::EraPreference;

/// The whole command line. Every option group is taken here, before the command's name (as
/// in `gatehouse --demo tools demo`), and after the name by the commands it applies to
/// ([`groups`]); an environment variable stands for a flag at the top level only, so a flag
/// after the command name wins over both.
#[derive(Debug, Parser)]
#[command(
    name = "gatehouse",
    version,
    about = "Gatehouse: an MCP host that admits servers before it trusts them"
)]
pub struct Cli {
    #[command(flatten)]
    pub flags: Flags,

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
    /// Sign in to servers that require MCP authorization (OAuth), list and remove sign-ins.
    #[command(subcommand)]
    Auth(AuthCommand),
    /// Connect to a server and show what it says about itself.
    Connect(Target),
    /// List a server's tools (allowed, hidden by the allow-list, blocked by a pin change), or
    /// approve them with `tools pin`.
    Tools(ToolsArgs),
    /// Show the audit log, verify its chain, export it.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Show the loaded trust-root bundles and the posture.
    Trust,
    /// Call a tool: `call SERVER TOOL --args JSON`, or `call --stdio CMD TOOL --args JSON`.
    Call(CallArgs),
    /// Connect (and optionally call a tool), then print every JSON-RPC message exchanged.
    Trace(TraceArgs),
    /// Admin: create, sign, verify and inspect trust-root bundles.
    #[command(subcommand)]
    Bundle(BundleCommand),
    /// Server operators and admins: sign and verify ATSA attestation documents.
    #[command(subcommand)]
    Attest(AttestCommand),
    /// The client for the official MCP conformance suite (reads MCP_CONFORMANCE_SCENARIO).
    #[command(hide = false)]
    Conformance {
        /// The conformance server's URL (the suite appends it).
        url: String,
    },
    /// Show the elicitation policy and try it on a URL or a form schema (exit 0 allow, 1 not).
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Be one MCP server for an AI client, on stdin/stdout: the tools of admitted servers,
    /// offered as SERVER__TOOL, every call through the gate and the audit log.
    Serve(ServeArgs),
    /// Connect AI clients (Claude Desktop, Claude Code, Cursor, VS Code) through Gatehouse,
    /// and give them their own servers back.
    #[command(subcommand)]
    Clients(ClientsCommand),
    /// List a server's resources and resource templates (allowed, and hidden by the
    /// allow-list with the reason), or approve URIs with `resources approve`.
    Resources(ResourcesArgs),
    /// Read a resource through the gate: `read SERVER URI`, or `read SERVER --template T --var
    /// NAME=VALUE`.
    ///
    /// Also `read --stdio CMD URI`. Text is printed as text (control characters escaped);
    /// images and binary data are described in one line, never written to the terminal: save
    /// them with --out FILE.
    Read(ReadArgs),
    /// List a server's prompts and their arguments (allowed, hidden by the allow-list,
    /// blocked by a pin change), or approve them with `prompts pin`.
    Prompts(PromptsArgs),
    /// Get a prompt through the gate: `prompt SERVER NAME --args JSON`; prints each message
    /// as `role: text`.
    ///
    /// Also `prompt --stdio CMD NAME --args JSON`. Images and binary data in messages are
    /// described in one line, never written to the terminal.
    Prompt(PromptArgs),
    /// Complete an argument of a prompt (--prompt NAME) or a variable of a resource template
    /// (--template URI_TEMPLATE): prints the server's suggestions, one per line.
    Complete(CompleteArgs),
    /// Subscribe to a resource (`subscribe SERVER URI`) and print a line for each update.
    ///
    /// One line per notifications/resources/updated for the URI, until --count updates
    /// arrived (exit 0) or --wait seconds passed (exit 2); then it unsubscribes.
    Subscribe(SubscribeArgs),
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ResourcesArgs {
    #[command(subcommand)]
    pub action: Option<ResourcesAction>,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Debug, Subcommand)]
pub enum ResourcesAction {
    /// Approve exact resource URIs, or URI prefixes (warn posture only), so they can be read
    /// and subscribed to. A prefix follows the trust-root bundles' rule: it ends in "/", and it
    /// covers only names below it that no decoding or normalizing server could take outside
    /// it (no query or fragment, no "..", no encoded "/", "." or "%"; trust-roots/README.md).
    Approve {
        #[command(flatten)]
        target: Target,
        /// A URI to approve, exactly as the server lists it (or as a template expands to);
        /// repeat for each.
        #[arg(long = "uri", value_name = "URI", required_unless_present = "prefixes")]
        uris: Vec<String>,
        /// A URI prefix ending in "/" (e.g. the start of a template); repeat for each.
        #[arg(long = "prefix", value_name = "PREFIX")]
        prefixes: Vec<String>,
    },
}

#[derive(Debug, Args)]
pub struct ReadArgs {
    /// SERVER URI; just URI with --stdio / --url; just SERVER (or nothing with --stdio /
    /// --url) with --template.
    #[arg(value_name = "SERVER URI", num_args = 0..=2)]
    pub words: Vec<String>,
    #[command(flatten)]
    pub adhoc: Adhoc,
    /// Instead of a URI: one of the server's listed URI templates (exactly as listed),
    /// expanded with the --var values; the URI it expands to is read through the gate.
    #[arg(long, value_name = "URI_TEMPLATE")]
    pub template: Option<String>,
    /// A value for a --template variable, NAME=VALUE; repeat for each variable.
    #[arg(long = "var", value_name = "NAME=VALUE", requires = "template")]
    pub vars: Vec<String>,
    /// Save the content to FILE: the decoded bytes of the first image or binary item, else
    /// the first text. Written to a temporary file beside FILE, then renamed into place.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// With --out: replace FILE if it exists (default: refuse).
    #[arg(long, requires = "out")]
    pub force: bool,
    /// Answer elicitations from this file instead of asking on the terminal (as for `call`).
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct PromptsArgs {
    #[command(subcommand)]
    pub action: Option<PromptsAction>,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Debug, Subcommand)]
pub enum PromptsAction {
    /// Approve prompts as listed now (warn posture only): pins each definition, so a later
    /// change blocks the prompt again until re-approved.
    Pin {
        #[command(flatten)]
        target: Target,
        /// Approve only this prompt (exact name); repeat. Default: every listed prompt.
        #[arg(long = "prompt", value_name = "NAME")]
        prompts: Vec<String>,
        /// Approve even a prompt whose current definition has a high review finding; the
        /// approval's audit record names them (see `tools pin --accept-findings`).
        #[arg(long)]
        accept_findings: bool,
    },
}

#[derive(Debug, Args)]
pub struct PromptArgs {
    /// SERVER NAME, or just NAME with --stdio / --url.
    #[arg(value_name = "SERVER NAME", num_args = 1..=2, required = true)]
    pub words: Vec<String>,
    #[command(flatten)]
    pub adhoc: Adhoc,
    /// The prompt's arguments as a JSON object, e.g. '{"topic": "mcp"}'.
    #[arg(long, value_name = "JSON")]
    pub args: Option<String>,
    /// Answer elicitations from this file instead of asking on the terminal (as for `call`).
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("reference").required(true).args(["prompt", "template"])))]
pub struct CompleteArgs {
    #[command(flatten)]
    pub target: Target,
    /// Complete an argument of this prompt (exact name; it must be allowed).
    #[arg(long, value_name = "NAME")]
    pub prompt: Option<String>,
    /// Complete a variable of this resource template (exactly as listed; it must be under an
    /// allowed prefix).
    #[arg(long, value_name = "URI_TEMPLATE")]
    pub template: Option<String>,
    /// The argument (or template variable) to complete.
    #[arg(long = "arg", value_name = "NAME", required = true)]
    pub argument: String,
    /// What has been typed so far (default: nothing).
    #[arg(
        long,
        value_name = "PREFIX",
        default_value = "",
        hide_default_value = true
    )]
    pub value: String,
    /// Values of the other arguments already chosen, as a JSON object of strings, e.g.
    /// '{"topic": "mcp"}'.
    #[arg(long, value_name = "JSON")]
    pub context: Option<String>,
}

#[derive(Debug, Args)]
pub struct SubscribeArgs {
    /// SERVER URI, or just URI with --stdio / --url.
    #[arg(value_name = "SERVER URI", num_args = 1..=2, required = true)]
    pub words: Vec<String>,
    #[command(flatten)]
    pub adhoc: Adhoc,
    /// Stop after this many updates.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub count: u64,
    /// Seconds to wait for the updates; when they have not all arrived by then, the command
    /// unsubscribes and fails (exit 2). (--timeout is the global per-request timeout.)
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub wait: f64,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Which client this is, as recorded with each of its calls (a-z, 0-9, _ and -; for
    /// example claude_desktop). Default: unnamed.
    #[arg(long, value_name = "ID")]
    pub client: Option<String>,
    /// Seconds the first tool listing waits for the servers to connect; slower ones are
    /// offered when they are ready (notifications/tools/list_changed).
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub startup_wait: f64,
    /// Run the host in this process even when the desktop app is running (by default the
    /// client is bridged to the app: its servers, gate, audit log and consent dialog).
    #[arg(long)]
    pub no_bridge: bool,
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (loopback only: 127.0.0.1:PORT,
    /// [::1]:PORT or localhost:PORT). Each request needs a client's bearer token from
    /// `gatehouse clients token CLIENT`, which names the client in the audit log. While the
    /// desktop app runs, its host serves the address (its consent dialog, gate and audit log);
    /// if the app quits meanwhile, a host in this process takes over the same address.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Offer the tools of this one server only, under their own names instead of
    /// SERVER__TOOL (for a client configured with one entry per server). Only this server
    /// is connected, unless the desktop app's host serves the client.
    #[arg(long, value_name = "NAME")]
    pub server: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ClientsCommand {
    /// The AI clients' MCP config files on this machine: how many servers each has, whether it
    /// is connected through Gatehouse, whether a backup waits to be restored.
    List,
    /// Import a client's servers into servers.json (as `servers import` does), back its file
    /// up, and rewrite it so its only MCP server is `gatehouse serve --client CLIENT`. Nothing
    /// changes unless every server comes in.
    Connect {
        /// claude_desktop, claude_code, cursor or vscode.
        #[arg(value_parser = <ClientId as std::str::FromStr>::from_str)]
        client: ClientId,
        /// Claude Code only: the project's .mcp.json in the current directory instead of
        /// ~/.claude.json.
        #[arg(long)]
        project: bool,
        /// Import this server although it sets code-loading environment variables or a
        /// working directory (see `servers import`). Repeat for each server.
        #[arg(long = "allow-launch-settings", value_name = "NAME")]
        allow_launch_settings: Vec<String>,
        /// Replace servers of the same name already in servers.json (default: refuse).
        #[arg(long)]
        replace: bool,
    },
    /// The bearer token an AI client sends to `gatehouse serve --http`: made on first use and
    /// kept in the OS keychain; printed so it can go in the client's configuration.
    Token {
        /// The client's id as the audit log names it (a-z, 0-9, _ and -), e.g. claude_code.
        client: String,
        /// Replace the token; the old one stops working within seconds, also for a running
        /// server.
        #[arg(long, conflicts_with = "revoke")]
        rotate: bool,
        /// Delete the token.
        #[arg(long)]
        revoke: bool,
    },
    /// Write the managed settings an admin distributes (MDM) so each AI client allows
    /// Gatehouse and nothing else: Claude Code's managed-mcp.json, VS Code's policy, Cursor's
    /// permissions file, Claude Desktop's managed servers.
    Lockdown {
        /// The directory to write them into (one subdirectory per client).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The `gatehouse` command the clients run (default: this executable's path).
        #[arg(long, value_name = "PATH")]
        gatehouse: Option<PathBuf>,
    },
    /// Put back the client's file as it was before `connect`, byte for byte. The servers
    /// imported into servers.json stay there.
    Restore {
        #[arg(value_parser = <ClientId as std::str::FromStr>::from_str)]
        client: ClientId,
        /// Claude Code only: the project's .mcp.json in the current directory.
        #[arg(long)]
        project: bool,
        /// Restore even though the file changed since Gatehouse wrote it (those changes are lost).
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// The effective policy: its version and where it came from (--policy, or the default).
    Show,
    /// Judge a URL as a URL-mode elicitation would be judged. Judges the URL only: the server
    /// is taken as admitted, the mode declared, the request bound, and (without
    /// --local-server) as remote with MCP authorization.
    CheckUrl {
        url: String,
        /// The server runs on this machine (stdio): plain http to loopback may be allowed.
        #[arg(long)]
        local_server: bool,
        /// A host the server may send users to (and its subdomains), as a bundle's
        /// urlElicitationDomains would; repeat.
        #[arg(long = "allow-host", value_name = "HOST")]
        allow_hosts: Vec<String>,
    },
    /// Judge a form's requestedSchema (a JSON file, or - for stdin; elicitation params with a
    /// requestedSchema are accepted too), from an admitted local server.
    CheckForm {
        #[arg(value_name = "SCHEMA_FILE")]
        schema: PathBuf,
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
    /// Re-enable a server the kill switch suspended for abusing elicitations (audited).
    Resume { name: String },
    /// Pin a configured npx or uvx package server yourself, without an admin: resolve its closure,
    /// install it into a scratch store, start it and show what would be pinned (package,
    /// version, closure size, tools and their definitions); once you confirm, write the
    /// binding into your own bundle (signed with your key in the keychain). It then runs from
    /// Gatehouse's store in deny-by-default, "pinned by you".
    Pin {
        name: String,
        /// Pin without asking (with --json, without --yes only the plan is printed).
        #[arg(long)]
        yes: bool,
    },
    /// Import servers from a Claude Desktop, Cursor or VS Code config file.
    Import {
        path: PathBuf,
        /// Replace servers that already exist (default: skip them).
        #[arg(long)]
        replace: bool,
        /// Import this server although it sets code-loading environment variables (LD_PRELOAD,
        /// NODE_OPTIONS, PATH…) or a working directory; without it such an entry is held back
        /// and its exact settings are shown. Repeat for each server.
        #[arg(long = "allow-launch-settings", value_name = "NAME")]
        allow_launch_settings: Vec<String>,
    },
    /// Show or loosen the confinement of a server you run unattested (warn posture): what it
    /// may read, write and reach. Without options it shows the confinement; with them it
    /// replaces your settings for the server (audited). An admitted server's confinement
    /// comes from its admission and your settings do not apply to it.
    Confine(ConfineArgs),
}

/// `servers confine NAME`: the person's own confinement settings for one server.
#[derive(Debug, Args)]
pub struct ConfineArgs {
    pub name: String,
    /// A path the server may read: absolute, or under your home as ~/DIR (repeatable).
    #[arg(long = "read", value_name = "PATH")]
    pub read: Vec<String>,
    /// A path the server may read and write: absolute, or ~/DIR (repeatable).
    #[arg(long = "write", value_name = "PATH")]
    pub write: Vec<String>,
    /// A host the server may reach, HOST:PORT (repeatable); without any, no network.
    #[arg(long = "host", value_name = "HOST:PORT", conflicts_with = "any_host")]
    pub hosts: Vec<String>,
    /// Let the server reach any host (it shares your network).
    #[arg(long)]
    pub any_host: bool,
    /// How many processes the server may start (default 0: none, threads only).
    #[arg(long, value_name = "N")]
    pub processes: Option<u32>,
    /// The server's memory bound in MiB (default 4096).
    #[arg(long, value_name = "N")]
    pub memory_mib: Option<u32>,
    /// Run the server without confinement (shown as "unconfined: you turned it off").
    #[arg(
        long,
        conflicts_with_all = ["read", "write", "hosts", "any_host", "processes", "memory_mib"]
    )]
    pub unconfined: bool,
    /// Remove your settings: the server gets the default confinement again.
    #[arg(
        long,
        conflicts_with_all = ["read", "write", "hosts", "any_host", "processes", "memory_mib", "unconfined"]
    )]
    pub reset: bool,
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
pub enum AuthCommand {
    /// Sign in to a configured HTTP server now: shows the authorization URL, opens it in the
    /// system browser once you agree, and stores the tokens in the OS keychain.
    Login {
        server: String,
        /// Ask for this scope too (repeatable), on top of what the server names.
        #[arg(long = "scope", value_name = "SCOPE")]
        scopes: Vec<String>,
    },
    /// List the stored sign-ins (authorization server, subject, scopes, expiry), never tokens.
    Status,
    /// Remove a server's sign-in from the keychain.
    Logout { server: String },
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
#[command(args_conflicts_with_subcommands = true)]
pub struct ToolsArgs {
    #[command(subcommand)]
    pub action: Option<ToolsAction>,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Debug, Subcommand)]
pub enum ToolsAction {
    /// Approve tools as listed now (warn posture only): pins each definition, so a later
    /// change blocks the tool again until re-approved.
    Pin {
        #[command(flatten)]
        target: Target,
        /// Approve only this tool (exact name); repeat. Default: every listed tool.
        #[arg(long = "tool", value_name = "NAME")]
        tools: Vec<String>,
        /// Approve even a tool whose current definition has a high review finding (hidden
        /// characters, instructions aimed at the model, other servers' tools, a field asking
        /// for a secret). Without it such a tool is refused, naming the findings; with it the
        /// approval's audit record names them.
        #[arg(long)]
        accept_findings: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Check the whole hash chain; names the first broken record. Exit 1 if broken.
    Verify {
        /// The log (default: --audit or $XDG_DATA_HOME/gatehouse/audit.jsonl).
        file: Option<PathBuf>,
    },
    /// Show records, optionally only one server's or one event type's, oldest first. The
    /// log is read as it is printed, across its segments.
    Show {
        file: Option<PathBuf>,
        #[arg(long, value_name = "ID")]
        server: Option<String>,
        #[arg(long = "type", value_name = "EVENT")]
        event: Option<String>,
        /// Only the newest N matching records (1 to 100000), still oldest first: read from
        /// the end, so it costs by N rather than by the log's length. With a rare --server or
        /// --type, at most 200000 records are examined, and the output says when that cap
        /// stopped it.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000))]
        last: Option<u64>,
    },
    /// How the audit log is kept: its durability, segment size and retention, and who chose
    /// each (the policy's [audit] table, or a trust-root bundle's signed.audit).
    Settings,
    /// Write the records (filtered like `show`) as JSON lines or one JSON array.
    Export {
        file: Option<PathBuf>,
        #[arg(long, value_name = "ID")]
        server: Option<String>,
        #[arg(long = "type", value_name = "EVENT")]
        event: Option<String>,
        /// jsonl (one record per line) or json (an array).
        #[arg(long, value_enum, default_value_t = ExportFormatArg::Jsonl)]
        format: ExportFormatArg,
        /// Write here instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
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
    /// Answer elicitations from this file instead of asking on the terminal: a JSON list
    /// consumed in order, each {"mode": "form"|"url", "action": "accept"|"decline"|"cancel",
    /// "content": {...}} ("override": true takes an overridable hold). An accepted URL entry
    /// means "open it".
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
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

#[derive(Debug, Subcommand)]
pub enum BundleCommand {
    /// Create an Ed25519 key pair: DIR/ID.key (private, mode 0600, never printed) and DIR/ID.pub.json.
    Keygen {
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The key id, as bundles and signatures name it.
        #[arg(long, default_value = "admin")]
        id: String,
    },
    /// Write a new, unsigned bundle to edit and sign.
    Init {
        #[arg(long)]
        bundle_id: String,
        /// A root key (ID.pub.json from `bundle keygen`); repeat for each.
        #[arg(long = "root-key", value_name = "PUB.json", required = true)]
        root_keys: Vec<PathBuf>,
        /// How many root keys must sign (default: a majority).
        #[arg(long)]
        threshold: Option<u64>,
        /// A signer key for attestations (ID.pub.json), approved for every level; repeat.
        #[arg(long = "signer-key", value_name = "PUB.json", required = true)]
        signer_keys: Vec<PathBuf>,
        /// Expiry (RFC 3339); default one year from now.
        #[arg(long)]
        expires: Option<String>,
        #[arg(long, value_name = "BUNDLE")]
        out: PathBuf,
    },
    /// Add (or replace) this key's signature on a bundle, in place.
    Sign {
        #[arg(long, value_name = "KEY")]
        key: PathBuf,
        bundle: PathBuf,
    },
    /// Check a bundle: structure, threshold, expiry and, with --previous, rotation and rollback.
    Verify {
        bundle: PathBuf,
        /// The bundle it replaces.
        #[arg(long, value_name = "OLD")]
        previous: Option<PathBuf>,
        /// Decide as of this time (RFC 3339) instead of now.
        #[arg(long)]
        now: Option<String>,
    },
    /// Install a bundle into the admin directory (--trust-roots, default
    /// /etc/gatehouse/trust-roots), enforcing threshold, expiry, rotation and rollback.
    Install {
        bundle: PathBuf,
        #[arg(long)]
        now: Option<String>,
    },
    /// Add (or replace) a server entry bound to a package's exact bytes: resolve the closure
    /// from a lockfile (npm) or a hashed requirements file (PyPI) you reviewed, or from the
    /// registry now, install it into a scratch
    /// store, start it in a throwaway home, list its tools, and write the binding, the pins of
    /// the chosen tools and the entry's attestation signed with --signer-key. The bundle's
    /// signatures are dropped: `bundle sign` it again.
    AddServer(Box<AddServerArgs>),
    /// What a rotation changes, entry by entry: servers, bindings, origins, allow-lists, pins
    /// (both definitions where the bundles carry them), keys, clearances, thresholds, expiry,
    /// lock. Exits 3 when anything widens access.
    Diff { old: PathBuf, new: PathBuf },
    /// Show what a bundle says and who signed it.
    Inspect {
        bundle: PathBuf,
        #[arg(long)]
        now: Option<String>,
    },
}

#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("kind").required(true).args(["npm", "pypi", "mcpb", "stdio", "url", "from_registry", "from_client"])))]
pub struct AddServerArgs {
    /// The bundle to edit (from `bundle init`).
    pub bundle: PathBuf,
    /// The server id (`urn:…`) the entry and its attestation carry.
    #[arg(long)]
    pub id: String,
    /// The clearance level the attestation asserts (one of the bundle's levels the signer key
    /// is approved for).
    #[arg(long)]
    pub clearance: String,
    /// The attestation signer's private key (from `bundle keygen`).
    #[arg(long = "signer-key", value_name = "KEY")]
    pub signer_key: PathBuf,
    /// An npm package: `NAME@VERSION` (with --lockfile).
    #[arg(long, value_name = "NAME@VERSION")]
    pub npm: Option<String>,
    /// A PyPI package: `NAME==VERSION` (with --requirements).
    #[arg(long, value_name = "NAME==VERSION")]
    pub pypi: Option<String>,
    /// An MCP bundle file, `NAME.mcpb`: bound by its SHA-256, its manifest's version, server
    /// type and entry point; the config names it by its path.
    #[arg(long, value_name = "FILE")]
    pub mcpb: Option<PathBuf>,
    /// The package-lock.json that pins the npm package's closure (`npm install
    /// --package-lock-only --ignore-scripts NAME@VERSION` in an empty directory). Without it,
    /// npm's resolver resolves the closure from the registry now (no script runs).
    #[arg(long, value_name = "FILE")]
    pub lockfile: Option<PathBuf>,
    /// The hashed, wheels-only requirements file that pins the PyPI package's closure.
    /// Without it, pip's resolver resolves it from the index now for the python3 on PATH
    /// (wheels only, nothing installed).
    #[arg(long, value_name = "FILE")]
    pub requirements: Option<PathBuf>,
    /// What runs: npm, the file inside the package (default: its only `bin`); PyPI, a console
    /// script (default: the package's name) or `module:function`; MCPB, a file in the bundle
    /// (default: the manifest's entry point).
    #[arg(long)]
    pub entry: Option<String>,
    /// A fixed argument, before the user's own; repeat in order.
    #[arg(long = "arg", value_name = "ARG", allow_hyphen_values = true)]
    pub args: Vec<String>,
    /// Arguments the user supplies: `existing_directory_under_home[:read_only|read_write][:MIN:MAX]`
    /// or `one_of:V1,V2[:MIN:MAX]`; repeat in order.
    #[arg(long = "user-arg", value_name = "RULE")]
    pub user_args: Vec<String>,
    /// Another allowed interpreter digest (SHA-256 hex), beside the one on this machine: the
    /// next update's.
    #[arg(long = "interpreter-sha256", value_name = "HEX")]
    pub interpreter_sha256: Vec<String>,
    /// A tool to allow, pinned to the definition the server lists now; repeat.
    #[arg(long = "tool", value_name = "NAME")]
    pub tools: Vec<String>,
    /// Allow and pin every tool it lists now.
    #[arg(long, conflicts_with = "tools")]
    pub all_tools: bool,
    /// A prompt to allow; repeat.
    #[arg(long = "prompt", value_name = "NAME")]
    pub prompts: Vec<String>,
    /// A resource URI prefix to allow; repeat.
    #[arg(long = "resource-prefix", value_name = "PREFIX")]
    pub resource_prefixes: Vec<String>,
    /// A plain stdio server: `'CMD ARGS'`, bound by its resolved executable's SHA-256 and its
    /// exact arguments (a stdio binding).
    #[arg(long, value_name = "'CMD ARGS'")]
    pub stdio: Option<String>,
    /// The publisher the attestation names (default: the package's name).
    #[arg(long)]
    pub publisher: Option<String>,
    /// A remote MCP server that publishes no attestation: its endpoint URL. The entry vouches
    /// for it at exactly this origin and path (specVersion 6); its tools are listed live.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// How long the vouching holds, in days (a vouched entry only; default 90).
    #[arg(long = "vouch-days", value_name = "DAYS")]
    pub vouch_days: Option<u32>,
    /// An authorization server (issuer URL) whose sign-ins count for this server; repeat.
    #[arg(long = "authorization-server", value_name = "ISSUER")]
    pub authorization_servers: Vec<String>,
    /// A domain URL elicitations of this server may open; repeat.
    #[arg(long = "url-domain", value_name = "DOMAIN")]
    pub url_domains: Vec<String>,
    /// A header sent to the server while listing its tools (`NAME: VALUE`; never written into
    /// the bundle); repeat.
    #[arg(long = "header", value_name = "'NAME: VALUE'")]
    pub headers: Vec<String>,
    /// An MCP Registry `server.json` file: each of its packages and remotes becomes an entry.
    #[arg(long = "from-registry", value_name = "SERVER.json")]
    pub from_registry: Option<PathBuf>,
    /// An AI client's MCP servers (claude_desktop, claude_code, cursor, vscode): an entry is
    /// proposed for each; keep the ones you want with --keep.
    #[arg(long = "from-client", value_name = "CLIENT", value_parser = <ClientId as std::str::FromStr>::from_str)]
    pub from_client: Option<ClientId>,
    /// The client's config file (default: where the client keeps it).
    #[arg(long, value_name = "FILE", requires = "from_client")]
    pub config: Option<PathBuf>,
    /// With --from-registry or --from-client: the proposals to write (by the name shown);
    /// without it nothing is written and the proposals are listed.
    #[arg(long = "keep", value_name = "NAME")]
    pub keep: Vec<String>,
    /// Pin definitions although the review found something high in them (each finding is
    /// printed; this says you read them).
    #[arg(long = "accept-findings")]
    pub accept_findings: bool,
    /// The entry's confinement mode (specVersion 7): `required` (refused where this machine
    /// cannot confine it), `preferred` or `off`; the strictest of the policy, the bundles and
    /// the entry applies. Not for --url: a remote server runs elsewhere.
    #[arg(long = "confinement", value_name = "MODE")]
    pub confinement: Option<String>,
    /// A path the confined server may read (`~/…` or absolute); repeat.
    #[arg(long = "read", value_name = "PATH")]
    pub read: Vec<String>,
    /// A path the confined server may read and write (`~/…` or absolute); repeat.
    #[arg(long = "write", value_name = "PATH")]
    pub write: Vec<String>,
    /// A host the confined server may reach, `HOST:PORT` (beside its attestation's
    /// netAllowedHosts); repeat.
    #[arg(long = "host", value_name = "HOST:PORT")]
    pub hosts: Vec<String>,
    /// The confined server may reach any host (its network is shared, not proxied).
    #[arg(long = "any-host", conflicts_with = "hosts")]
    pub any_host: bool,
    /// How many processes the confined server may start (default 0: threads only).
    #[arg(long = "processes", value_name = "N")]
    pub processes: Option<u32>,
    /// The confined server's memory bound in MiB (default 4096).
    #[arg(long = "memory-mib", value_name = "N")]
    pub memory_mib: Option<u32>,
}

#[derive(Debug, Subcommand)]
pub enum AttestCommand {
    /// Sign an attestation document (SAD) with a signer key; prints the signed document.
    Sign {
        #[arg(long, value_name = "KEY")]
        key: PathBuf,
        sad: PathBuf,
        /// Write here instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Fetch a server's attestation from {origin}/.well-known/mcp-attestation (HTTPS; http
    /// only for loopback; same-origin redirects only; 64 KiB cap) and print it.
    Fetch {
        /// The server's MCP endpoint or origin.
        url: String,
        /// Write here instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Verify an attestation document against a trust root (a bundle or a plain {scheme, keys}).
    Verify {
        #[arg(long, value_name = "FILE")]
        sad: PathBuf,
        #[arg(long, value_name = "FILE")]
        trust_root: PathBuf,
        /// The origin the server is reached at.
        #[arg(long, value_name = "URL")]
        origin: String,
        /// The clearance level the server must reach.
        #[arg(long, value_name = "LEVEL")]
        required: String,
        /// Decide as of this time (RFC 3339) instead of now.
        #[arg(long)]
        now: Option<String>,
    },
}

/// `audit export --format`: a closed set, parsed (and refused by name) by clap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormatArg {
    /// One record per line, byte for byte as in the log.
    Jsonl,
    /// A JSON array of the log's lines.
    Json,
}

/// `--json`.
#[derive(Debug, Clone, Default, Args)]
pub struct OutputArgs {
    /// Machine-readable output: one JSON document on stdout (JSON lines for `trace`).
    #[arg(long)]
    pub json: bool,
}

/// `--config`: the servers file.
#[derive(Debug, Clone, Default, Args)]
pub struct ServersFileArgs {
    /// The servers file (mcpServers format). Default: $XDG_CONFIG_HOME/gatehouse/servers.json.
    #[arg(long, env = "GATEHOUSE_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// `--trust-roots`: the admin bundles' directory.
#[derive(Debug, Clone, Default, Args)]
pub struct TrustRootsArgs {
    /// The admin trust-root bundles directory. Default: /etc/gatehouse/trust-roots.
    #[arg(long, env = "GATEHOUSE_TRUST_ROOTS", value_name = "DIR")]
    pub trust_roots: Option<PathBuf>,
    /// Where bound packages' artifacts come from (a mirror, seed directories, no network).
    /// Default: package-sources.json beside the admin trust-roots directory.
    #[arg(long, env = "GATEHOUSE_PACKAGE_SOURCES", value_name = "FILE")]
    pub package_sources: Option<PathBuf>,
}

/// How servers are admitted: `--posture`, `--demo`.
#[derive(Debug, Clone, Default, Args)]
pub struct AdmissionArgs {
    /// What to do with servers that are not admitted: deny-by-default (refuse them) or warn
    /// (show why, connect anyway, never treat them as admitted). Ignored under a locked bundle.
    #[arg(long, env = "GATEHOUSE_POSTURE", value_name = "POSTURE", value_parser = <Posture as std::str::FromStr>::from_str)]
    pub posture: Option<Posture>,

    /// Demo mode: also trust the DEMO-ONLY bundle for the embedded demo server, available as
    /// the servers "demo" (2026-07-28) and "demo-2025" (2025-11-25). Verdicts it supports are
    /// labelled DEMO.
    #[arg(long)]
    pub demo: bool,
}

/// `--audit`: the audit log.
#[derive(Debug, Clone, Default, Args)]
pub struct AuditArgs {
    /// The audit log. Default: $XDG_DATA_HOME/gatehouse/audit.jsonl.
    #[arg(long, env = "GATEHOUSE_AUDIT", value_name = "FILE")]
    pub audit: Option<PathBuf>,
}

/// `--policy`: the elicitation policy.
#[derive(Debug, Clone, Default, Args)]
pub struct PolicyArgs {
    /// The elicitation policy file (TOML). Default: the shipped policies/default.toml.
    #[arg(long, env = "GATEHOUSE_POLICY", value_name = "FILE")]
    pub policy: Option<PathBuf>,
}

/// How a command talks to a server: era, timeouts, logs.
#[derive(Debug, Clone, Default, Args)]
pub struct ConnectArgs {
    /// Protocol era: auto (try 2026-07-28, fall back to 2025-11-25), 2025-11-25 or 2026-07-28.
    /// Default: auto.
    #[arg(long, value_name = "ERA")]
    pub era: Option<EraPreference>,

    /// Seconds to wait for one request before cancelling it (default 60).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,

    /// Seconds to wait for the handshake (default 30).
    #[arg(long, value_name = "SECS")]
    pub connect_timeout: Option<f64>,

    /// Also append every JSON-RPC message to this JSONL file.
    #[arg(long, value_name = "FILE")]
    pub traffic_log: Option<PathBuf>,

    /// Where stdio servers' stderr logs go. Default: $XDG_DATA_HOME/gatehouse/logs.
    #[arg(long, value_name = "DIR")]
    pub log_dir: Option<PathBuf>,

    /// Seconds a person has to answer an elicitation or finish a URL flow (default 600).
    /// Separate from --timeout: while someone is being asked, request timeouts pause.
    #[arg(long, value_name = "SECONDS")]
    pub prompt_timeout: Option<f64>,
}

/// Every option group, as taken before the command's name.
#[derive(Debug, Clone, Default, Args)]
pub struct Flags {
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub servers_file: ServersFileArgs,
    #[command(flatten)]
    pub trust_roots: TrustRootsArgs,
    #[command(flatten)]
    pub admission: AdmissionArgs,
    #[command(flatten)]
    pub audit: AuditArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// An option group a command takes after its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Output,
    ServersFile,
    TrustRoots,
    Admission,
    Audit,
    Policy,
    Connect,
}

impl Group {
    fn augment(self, command: clap::Command) -> clap::Command {
        match self {
            Group::Output => OutputArgs::augment_args(command),
            Group::ServersFile => ServersFileArgs::augment_args(command),
            Group::TrustRoots => TrustRootsArgs::augment_args(command),
            Group::Admission => AdmissionArgs::augment_args(command),
            Group::Audit => AuditArgs::augment_args(command),
            Group::Policy => PolicyArgs::augment_args(command),
            Group::Connect => ConnectArgs::augment_args(command),
        }
    }
}

/// What opening a host reads: servers, trust, audit log, policy.
const HOST: &[Group] = &[
    Group::Output,
    Group::ServersFile,
    Group::TrustRoots,
    Group::Admission,
    Group::Audit,
    Group::Policy,
];
/// A host and a connection to a server on it.
const SERVER: &[Group] = &[
    Group::Output,
    Group::ServersFile,
    Group::TrustRoots,
    Group::Admission,
    Group::Audit,
    Group::Policy,
    Group::Connect,
];

/// The option groups the command at `path` (its names from the top, space-separated) takes
/// after its name. Every command is named here: an unnamed one is a mistake caught as soon as
/// the command line is built (the help tests build it).
pub fn groups(path: &str) -> &'static [Group] {
    use Group::*;
    match path {
        // Only a choice of subcommand.
        "servers" | "secret" | "auth" | "audit" | "bundle" | "attest" | "policy" | "clients" => &[],
        "servers list" | "servers add" | "servers remove" | "servers resume" | "servers import"
        | "servers pin" | "servers confine" => HOST,
        "secret set" | "secret delete" => &[Output],
        "auth login" => SERVER,
        "auth status" | "auth logout" => HOST,
        "connect" | "tools" | "tools pin" | "call" | "trace" | "resources"
        | "resources approve" | "read" | "prompts" | "prompts pin" | "prompt" | "complete"
        | "subscribe" | "conformance" => SERVER,
        // serve prints no documents of its own: its stdout is the MCP stream.
        "serve" => &SERVER[1..],
        "audit verify" | "audit show" | "audit export" => &[Output, Audit],
        "audit settings" => &[Output, TrustRoots, Admission, Audit, Policy],
        "trust" => &[Output, TrustRoots, Admission, Policy],
        "bundle keygen" | "bundle init" | "bundle sign" | "bundle verify" | "bundle inspect"
        | "bundle diff" => &[Output],
        "bundle install" => &[Output, TrustRoots, Audit],
        // TrustRoots for --package-sources: where the closure is fetched from.
        "bundle add-server" => &[Output, TrustRoots],
        "attest sign" | "attest fetch" | "attest verify" => &[Output],
        "policy show" | "policy check-url" | "policy check-form" => &[Output, Policy],
        "clients list" | "clients token" | "clients lockdown" => &[Output],
        "clients connect" | "clients restore" => &[Output, ServersFile],
        other => {
            panic!("the command {other:?} is not in cli::groups: name the option groups it takes")
        }
    }
}

/// Where the shared options start in a command's help.
const SHARED_ORDER: usize = 1000;

/// The command line as parsed: [`Cli`]'s, with each command's option groups added after its
/// name (without their environment variables, which are read at the top level only).
pub fn command() -> clap::Command {
    fn attach(command: clap::Command, path: &str) -> clap::Command {
        let mut command = command;
        if !path.is_empty() {
            for group in groups(path) {
                let args = group.augment(clap::Command::new("group"));
                for arg in args.get_arguments() {
                    // Listed after the command's own options, in the groups' order.
                    let order = SHARED_ORDER + command.get_arguments().count();
                    command = command.arg(arg.clone().env(None).display_order(order));
                }
            }
        }
        let names: Vec<String> = command
            .get_subcommands()
            .map(|sub| sub.get_name().to_string())
            .collect();
        for name in names {
            let sub_path = if path.is_empty() {
                name.clone()
            } else {
                format!("{path} {name}")
            };
            command = command.mut_subcommand(&name, |sub| attach(sub, &sub_path));
        }
        command
    }
    attach(Cli::command(), "")
}

/// Parses the process's arguments: the command, and the option groups given before and after
/// its name merged (after wins).
pub fn parse() -> Result<Cli, clap::Error> {
    parse_from(std::env::args_os())
}

/// [`parse`] for these arguments (the first is the program's name).
pub fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let matches = command().try_get_matches_from(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    let mut level = &matches;
    while let Some((_, sub)) = level.subcommand() {
        cli.flags.take_given(sub);
        level = sub;
    }
    Ok(cli)
}

/// The value of `id` when it was given on the command line at this level.
fn given<T: Clone + Send + Sync + 'static>(matches: &ArgMatches, id: &str) -> Option<T> {
    if !matches.try_contains_id(id).unwrap_or(false)
        || matches.value_source(id) != Some(ValueSource::CommandLine)
    {
        return None;
    }
    matches.try_get_one::<T>(id).ok().flatten().cloned()
}

impl Flags {
    /// Takes the flags given at a command's level over those given before it.
    fn take_given(&mut self, matches: &ArgMatches) {
        fn set<T: Clone + Send + Sync + 'static>(slot: &mut Option<T>, m: &ArgMatches, id: &str) {
            if let Some(value) = given(m, id) {
                *slot = Some(value);
            }
        }
        if given::<bool>(matches, "json") == Some(true) {
            self.output.json = true;
        }
        if given::<bool>(matches, "demo") == Some(true) {
            self.admission.demo = true;
        }
        set(&mut self.servers_file.config, matches, "config");
        set(&mut self.trust_roots.trust_roots, matches, "trust_roots");
        set(
            &mut self.trust_roots.package_sources,
            matches,
            "package_sources",
        );
        set(&mut self.admission.posture, matches, "posture");
        set(&mut self.audit.audit, matches, "audit");
        set(&mut self.policy.policy, matches, "policy");
        set(&mut self.connect.era, matches, "era");
        set(&mut self.connect.timeout, matches, "timeout");
        set(
            &mut self.connect.connect_timeout,
            matches,
            "connect_timeout",
        );
        set(&mut self.connect.traffic_log, matches, "traffic_log");
        set(&mut self.connect.log_dir, matches, "log_dir");
        set(&mut self.connect.prompt_timeout, matches, "prompt_timeout");
    }
}
