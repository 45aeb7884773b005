//! `gatehouse`: the headless face of the Gatehouse MCP host, for developers, admins and
//! scripts. Every command is a thin call into `gatehouse-host`; the contract (commands,
//! options, JSON shapes, exit codes) is stable because scripts depend on it.
//!
//! Exit codes: 0 success; 1 the server or the gate refused, or the tool returned `isError`;
//! 2 usage, config or connection error.

mod add_server;
mod add_server_remote;
mod admin;
mod audit;
mod auth;
mod bundle_diff;
mod cli;
mod clients;
mod commands;
mod confinement;
mod confinement_text;
mod conformance;
mod consent;
mod dispatch;
mod entry;
mod failure;
mod from_client;
mod from_registry;
mod gated;
mod lockdown;
mod output;
mod pin;
mod policy;
mod prompts;
mod proposals;
mod resources;
mod secret;
mod serve;
mod servers;
mod target;
mod tools;
mod trust;

use std::process::ExitCode;

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so `gatehouse … | head` makes println! panic on the closed
    // pipe. Restoring SIGPIPE needs unsafe code (forbidden here), so end quietly instead, with
    // the status a SIGPIPE death would give (128 + 13).
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default_hook(info);
    }));
    let cli = match cli::parse() {
        Ok(cli) => cli,
        Err(error) => {
            // clap prints help/version to stdout with exit 0, usage errors to stderr with 2.
            let code = if error.use_stderr() { 2 } else { 0 };
            let _ = error.print();
            return ExitCode::from(code);
        }
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // rmcp logs transport failures that the host reports itself, with advice; its own
        // lines only repeat them, so they are off unless asked for with GATEHOUSE_LOG.
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("GATEHOUSE_LOG")
                .unwrap_or_else(|_| "warn,rmcp=off".into()),
        )
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("gatehouse: error: cannot start the async runtime: {error}");
            return ExitCode::from(2);
        }
    };
    let json = cli.flags.output.json;
    let outcome = runtime.block_on(dispatch::run(cli));
    let code = match outcome {
        Ok(code) => code,
        Err(failure) => {
            output::print_failure(&failure, json);
            failure.exit_code()
        }
    };
    // Don't wait for stray blocking tasks (a hung keychain call) at exit.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    ExitCode::from(code)
}
