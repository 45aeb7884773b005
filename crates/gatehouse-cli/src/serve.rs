//! `gatehouse serve`: Gatehouse as one MCP server for an AI client, on stdio. The host runs in
//! this process (headless: elicitations are declined, see gatehouse_gateway::headless); the
//! client's calls pass the same gate and audit log as the CLI's own.

use std::path::PathBuf;
use std::sync::Arc;

use gatehouse_gateway::HeadlessConsent;
use gatehouse_host::admission::SYSTEM_TRUST_ROOTS;
use gatehouse_host::caller::{UNNAMED_CLIENT, validate_client_id};
use gatehouse_host::host::{Change, Host, HostOptions, HostPaths};
use gatehouse_host::tap::system_clock;
use tokio::sync::Notify;

use crate::cli::ServeArgs;
use crate::commands::{Context, Failure, data_dir};

pub async fn run(context: &Context, args: &ServeArgs) -> Result<u8, Failure> {
    let client = args.client.as_deref().unwrap_or(UNNAMED_CLIENT);
    validate_client_id(client).map_err(Failure::usage)?;
    if args.startup_wait < 0.0 || !args.startup_wait.is_finite() || args.startup_wait > 600.0 {
        return Err(Failure::usage(
            "--startup-wait must be between 0 and 600 seconds",
        ));
    }
    // Refused here with the CLI's exit code for a refusal; the host checks again before each
    // admission (a lock installed while it serves).
    crate::commands::lock_guard(context).check(time::OffsetDateTime::now_utc())?;
    let paths = HostPaths {
        config: context.config_path.clone(),
        data: data_dir(),
        logs: context
            .options
            .log_dir
            .clone()
            .unwrap_or_else(|| data_dir().join("logs")),
        user_trust_roots: context.trust.user_dir.clone(),
        system_trust_roots: PathBuf::from(SYSTEM_TRUST_ROOTS),
    };
    let mut options = HostOptions::new(paths, system_clock());
    options.demo = context.demo;
    options.posture_override = context.trust.posture_override;
    options.policy = context.policy_path.clone();
    options.prompt_timeout = context.prompt_timeout;
    options.request_timeout = context.options.request_timeout;
    options.audit_file = Some(context.audit_path.clone());
    options.admin_trust_roots = context.trust_roots_flag.clone();
    options.request_era = context.options.era;
    // The gateway hears of every change of a server's state; it then checks whether what it
    // offers changed.
    let changed = Arc::new(Notify::new());
    let notify = changed.clone();
    let host = Host::open(
        options,
        context.secrets.clone(),
        Arc::new(HeadlessConsent),
        Arc::new(move |change| {
            if matches!(change, Change::Servers { .. }) {
                notify.notify_one();
            }
        }),
    )
    .map_err(|e| Failure {
        code: e.code,
        message: e.message,
        exit: 2,
    })?;
    for problem in host.settings().problems {
        eprintln!(
            "gatehouse serve: warning: a trust-root bundle was not loaded ({}): {}",
            problem.code, problem.message
        );
    }
    gatehouse_gateway::stdio::serve_stdio(
        host,
        changed,
        client.to_string(),
        std::time::Duration::from_secs_f64(args.startup_wait),
    )
    .await
    .map_err(|message| Failure {
        code: "serve_failed",
        message,
        exit: 2,
    })?;
    Ok(0)
}
