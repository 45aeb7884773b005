//! `gatehouse-demo-server`: the Gatehouse demo MCP server over stdio (default) or Streamable
//! HTTP (`--http ADDR`). See the library docs for what it serves and what it never does.

use std::{
    io::Write, net::SocketAddr, num::NonZeroUsize, path::PathBuf, process::ExitCode, time::Duration,
};

use anyhow::Context;
use clap::{CommandFactory, Parser};
use gatehouse_demo_server::{
    AttestationMode, DemoServer, Era, PageConfig,
    auth::{self, layer::AuthState},
    conformance, http, stdio,
};
use tracing_subscriber::EnvFilter;

#[derive(Debug, Parser)]
#[command(
    name = "gatehouse-demo-server",
    version,
    about = "The Gatehouse demo MCP server"
)]
struct Cli {
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio; port 0 picks a free port.
    /// The address is printed to stdout as `listening on http://IP:PORT/mcp`.
    #[arg(long, value_name = "ADDR", value_parser = http::parse_listen_addr)]
    http: Option<SocketAddr>,

    /// Allow --http to listen on an address other than loopback.
    #[arg(long, requires = "http")]
    allow_non_loopback: bool,

    /// Protocol era(s) to accept: 2025-11-25, 2026-07-28 or both.
    #[arg(long, value_name = "ERA", env = "GATEHOUSE_DEMO_ERA", default_value_t = Era::Both)]
    era: Era,

    /// Paginate tools/list, resources/list, resources/templates/list and prompts/list with N
    /// items per page (default: one page).
    #[arg(long, value_name = "N", env = "GATEHOUSE_DEMO_PAGE_SIZE")]
    page_size: Option<NonZeroUsize>,

    /// Increase demo://counter every MS milliseconds while a client is subscribed to it.
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 500,
        value_parser = clap::value_parser!(u64).range(1..=3_600_000)
    )]
    tick_ms: u64,

    /// Also serve hostile content, for testing how hosts cope: a 9 MiB text resource, a blob
    /// that is not base64, a PNG that is HTML, an HTML resource with script, a `{+target}`
    /// template and a prompt with markup and a 12 MiB image. Off by default.
    #[arg(long)]
    hostile_content: bool,

    /// Also list tools whose definitions carry each kind of finding Gatehouse's definition
    /// review looks for: a zero-width character, an instruction in Unicode tag characters,
    /// "do not tell the user", other servers' tools (demo__echo, send_invoice), instructions
    /// about another tool, and an `api_key` input field. For testing how hosts show and gate them; each tool
    /// only echoes its message. Off by default.
    #[arg(long)]
    poisoned_definitions: bool,

    /// Also list two hostile tools for testing a host's confinement: `escape`, which tries to
    /// read SSH keys and other servers' files, write outside its grants, reach hosts and the
    /// session bus it was not granted, run a shell and fork without bound, reporting each
    /// attempt; and `egress_flood`, which makes many connections through the proxy in
    /// $HTTP_PROXY. They really try: never use this outside a test. Off by default.
    #[arg(long)]
    escape_attempts: bool,

    /// Also serve the files under ROOT as file:// resources (and the template
    /// file://ROOT/{+path}), read CARELESSLY as many servers do: any file: URI is decoded
    /// repeatedly, NFKC-normalized and path-normalized, and whatever file results is read,
    /// inside ROOT or not. A test fixture for hosts' resource gates; never point it at data.
    #[arg(long, value_name = "ROOT")]
    careless_files: Option<PathBuf>,

    /// With --careless-files: append a JSON line {"uri", "path"} to FILE for every file: URI
    /// asked for (and the path it resolved to), before reading it.
    #[arg(long, value_name = "FILE", requires = "careless_files")]
    request_log: Option<PathBuf>,

    /// What --http serves at /.well-known/mcp-attestation: a document signed with the
    /// DEMO-ONLY signer key, one altered after signing, or none (404).
    #[arg(
        long,
        value_name = "MODE",
        env = "GATEHOUSE_DEMO_ATTESTATION",
        value_enum,
        default_value_t = AttestationMode::Signed
    )]
    attestation: AttestationMode,

    /// Serve the connect pages of the URL elicitation tools on 127.0.0.1:PORT; 0 picks a free
    /// port. The pages start on first use, in stdio and HTTP mode alike.
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    page_port: u16,

    /// Append a line `GET /connect/{id}` (`HEAD ...` for HEAD) to FILE for every fetch of a
    /// connect page, issued or not, so tests can tell whether a host fetched a URL it was only
    /// shown.
    #[arg(long, value_name = "FILE", env = "GATEHOUSE_DEMO_PAGE_HITS")]
    page_hits: Option<PathBuf>,

    /// Serve the conformance profile instead of the demo: the test surface of the official
    /// MCP conformance suite's server scenarios, in both eras. Needs --http; --era, --page-size,
    /// --attestation, --tick-ms, --hostile-content, --poisoned-definitions, --escape-attempts,
    /// --careless-files and the page options do not apply to it.
    #[arg(long)]
    conformance: bool,

    /// Require OAuth bearer tokens (MCP authorization): every request to /mcp needs a JWT
    /// access token from ISSUER, an http(s) URL, for this server's http://IP:PORT/mcp with the
    /// base scope. ISSUER's metadata and keys are fetched at startup. Needs --http.
    #[arg(
        long,
        value_name = "ISSUER",
        requires = "http",
        conflicts_with = "conformance",
        value_parser = auth::parse_issuer
    )]
    require_auth: Option<String>,

    /// With --require-auth: calling tool NAME also needs scope SCOPE (403 insufficient_scope
    /// without it). Repeatable.
    #[arg(
        long = "tool-scope",
        value_name = "NAME=SCOPE",
        requires = "require_auth",
        value_parser = auth::parse_tool_scope
    )]
    tool_scopes: Vec<(String, String)>,

    /// With --require-auth: the scope every MCP request needs [default: mcp:tools].
    #[arg(
        long,
        value_name = "SCOPE",
        requires = "require_auth",
        value_parser = auth::parse_scope
    )]
    base_scope: Option<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    check_tool_scopes(&cli);
    init_logging();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // One readable line, not a debug dump: hosts show this stderr to people.
            eprintln!("gatehouse-demo-server: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    if cli.conformance {
        return run_conformance(cli).await;
    }
    let careless_root = match &cli.careless_files {
        Some(root) => Some(
            root.canonicalize()
                .with_context(|| format!("--careless-files {}", root.display()))?,
        ),
        None => None,
    };
    let server = DemoServer::new(cli.era)
        .with_careless_files(careless_root, cli.request_log)
        .with_page_size(cli.page_size)
        .with_tick(Duration::from_millis(cli.tick_ms))
        .with_hostile_content(cli.hostile_content)
        .with_poisoned_definitions(cli.poisoned_definitions)
        .with_escape_attempts(cli.escape_attempts)
        .with_pages(PageConfig {
            port: cli.page_port,
            hits_file: cli.page_hits,
        });

    match cli.http {
        None => stdio::serve_stdio(server, shutdown_signal()).await,
        Some(addr) => {
            let listener = http::bind(addr, cli.allow_non_loopback).await?;
            let local = listener
                .local_addr()
                .context("listener has no local address")?;
            // Before announcing the address: a client must never meet a server that cannot
            // check its tokens yet.
            let auth = match &cli.require_auth {
                Some(issuer) => Some(
                    AuthState::discover(
                        issuer,
                        local,
                        cli.base_scope.as_deref().unwrap_or(auth::BASE_SCOPE),
                        cli.tool_scopes,
                    )
                    .await?,
                ),
                None => None,
            };
            print_listening(local)?;
            http::serve_http_with_auth(server, listener, cli.attestation, auth, shutdown_signal())
                .await
        }
    }
}

/// A `--tool-scope` naming a tool the demo does not have is a usage error (exit code 2), like
/// clap's own: it is almost certainly a typo that would leave the intended tool unprotected.
fn check_tool_scopes(cli: &Cli) {
    if cli.tool_scopes.is_empty() {
        return;
    }
    let names = DemoServer::new(Era::Both).tool_names();
    for (tool, _) in &cli.tool_scopes {
        if !names.contains(tool) {
            Cli::command()
                .error(
                    clap::error::ErrorKind::ValueValidation,
                    format!(
                        "--tool-scope names the tool {tool:?}, which this server does not have; \
                         its tools are {}",
                        names.join(", ")
                    ),
                )
                .exit();
        }
    }
}

/// `--conformance`: the conformance fixture over Streamable HTTP.
async fn run_conformance(cli: Cli) -> anyhow::Result<()> {
    let Some(addr) = cli.http else {
        anyhow::bail!(
            "--conformance serves Streamable HTTP only; add --http ADDR (e.g. --http 127.0.0.1:0)"
        );
    };
    let listener = http::bind(addr, cli.allow_non_loopback).await?;
    let local = listener
        .local_addr()
        .context("listener has no local address")?;
    print_listening(local)?;
    conformance::serve_http(listener, shutdown_signal()).await
}

/// Print `listening on http://IP:PORT/mcp`: tests that asked for port 0 read it to learn the
/// port, so it is the only thing ever written to stdout in HTTP mode.
fn print_listening(local: SocketAddr) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    // Same origin as the attestation is bound to, so clients that read it connect there.
    writeln!(
        stdout,
        "listening on {}{}",
        http::origin(local),
        http::MCP_PATH
    )?;
    stdout.flush()?;
    Ok(())
}

/// Logs go to stderr: in stdio mode stdout belongs to JSON-RPC.
fn init_logging() {
    use std::io::IsTerminal;
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// Resolves on Ctrl-C / SIGINT or SIGTERM.
async fn shutdown_signal() {
    let interrupt = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::warn!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => tracing::info!("interrupted"),
        () = terminate => tracing::info!("terminated"),
    }
}
