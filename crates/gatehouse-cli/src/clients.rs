//! `gatehouse clients list | connect | restore`: thin over `gatehouse_clients`, which
//! takes every path from here (HOME, XDG_CONFIG_HOME and XDG_DATA_HOME through `dirs`, the
//! current directory, this binary's own path).

use std::path::PathBuf;

use gatehouse_clients::{
    self as clients, BackupStore, ClientError, ClientId, ClientStatus, ConnectRequest, Location,
    Roots, Scope,
};
use serde_json::json;

use crate::cli::ClientsCommand;
use crate::commands::{Context, data_dir};
use crate::failure::Failure;
use crate::output::{self, safe_line};

impl From<ClientError> for Failure {
    fn from(error: ClientError) -> Self {
        Failure {
            code: error.error_code(),
            exit: if error.is_refusal() { 1 } else { 2 },
            message: error.message,
        }
    }
}

fn roots() -> Result<Roots, Failure> {
    let home = dirs::home_dir()
        .ok_or_else(|| Failure::usage("cannot tell the home directory: set HOME"))?;
    Ok(Roots {
        config_dir: dirs::config_dir().unwrap_or_else(|| home.join(".config")),
        cwd: std::env::current_dir()
            .map_err(|e| Failure::usage(format!("cannot read the current directory: {e}")))?,
        home,
    })
}

fn backups() -> BackupStore {
    BackupStore::new(data_dir().join("clients"))
}

pub async fn run(context: &Context, command: ClientsCommand) -> Result<u8, Failure> {
    let roots = roots()?;
    let backups = backups();
    match command {
        ClientsCommand::List => list(context, &roots, &backups),
        ClientsCommand::Connect {
            client,
            project,
            allow_launch_settings,
            replace,
        } => {
            let location = clients::location(&roots, client, project)?;
            connect(
                context,
                &roots,
                location,
                backups,
                allow_launch_settings,
                replace,
            )
            .await
        }
        ClientsCommand::Token {
            client,
            rotate,
            revoke,
        } => token(context, &client, rotate, revoke),
        ClientsCommand::Lockdown { out, gatehouse } => {
            crate::lockdown::run(context, &out, gatehouse.as_deref())
        }
        ClientsCommand::Restore {
            client,
            project,
            force,
        } => {
            let location = clients::location(&roots, client, project)?;
            restore(context, &location, &backups, force)
        }
    }
}

fn list(context: &Context, roots: &Roots, backups: &BackupStore) -> Result<u8, Failure> {
    let rows = clients::list(roots, backups);
    if context.json {
        output::print_json(&json!({ "clients": rows }));
        return Ok(0);
    }
    for row in &rows {
        println!(
            "{:<15} {:<9} {}",
            row.client.as_str(),
            row.scope.as_str(),
            row.path.display()
        );
        println!("    {}", describe(row));
    }
    Ok(0)
}

fn describe(row: &ClientStatus) -> String {
    let mut parts = Vec::new();
    match (row.exists, row.servers, &row.problem) {
        (false, _, _) => parts.push("not found".to_string()),
        (true, _, Some(problem)) => parts.push(format!("cannot be read: {}", safe_line(problem))),
        (true, Some(n), None) if row.connected => {
            parts.push(format!("connected through Gatehouse ({n} server)"))
        }
        (true, Some(n), None) => parts.push(format!("{n} server(s) under \"{}\"", row.key)),
        (true, None, None) => {}
    }
    if row.scope == Scope::Settings {
        parts.push("listed only: connect rewrites mcp.json".into());
    }
    if row.backup {
        parts.push(format!(
            "backup waiting (`gatehouse clients restore {}{}`)",
            row.client,
            if row.scope == Scope::Project {
                " --project"
            } else {
                ""
            }
        ));
    }
    parts.join("; ")
}

/// Servers the client still launches itself after a connect: VS Code's settings.json
/// `mcp.servers`, which connect does not rewrite.
fn unmanaged_warnings(roots: &Roots, backups: &BackupStore, client: ClientId) -> Vec<String> {
    clients::list(roots, backups)
        .into_iter()
        .filter(|row| row.client == client && row.scope == Scope::Settings)
        .filter(|row| row.servers.unwrap_or(0) > 0 || row.problem.is_some())
        .map(|row| {
            format!(
                "{} still configures MCP servers under \"{}\" ({}), which {} launches itself, not through Gatehouse; move them into mcp.json and connect again",
                row.path.display(),
                row.key,
                row.servers
                    .map(|n| format!("{n} server(s)"))
                    .unwrap_or_else(|| "unreadable".into()),
                client.display_name()
            )
        })
        .collect()
}

async fn connect(
    context: &Context,
    roots: &Roots,
    location: Location,
    backups: BackupStore,
    confirmed: Vec<String>,
    replace: bool,
) -> Result<u8, Failure> {
    let gatehouse = std::env::current_exe()
        .map_err(|e| Failure::usage(format!("cannot tell where this gatehouse binary is: {e}")))?;
    let (secrets, servers_path) = (context.secrets.clone(), context.config_path.clone());
    let (task_location, task_backups) = (location.clone(), backups.clone());
    // The keychain blocks on D-Bus: off the async runtime.
    let result = tokio::task::spawn_blocking(move || {
        clients::connect(
            &ConnectRequest {
                location: &task_location,
                servers_path: &servers_path,
                gatehouse: &gatehouse,
                confirmed: &confirmed,
                replace,
            },
            &task_backups,
            secrets.as_ref(),
        )
    })
    .await
    .map_err(|e| Failure::usage(format!("the connect task failed: {e}")))?;
    let config = &context.config_path;
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(mut error) => {
            let report = error.import.take();
            let failure = Failure::from(error);
            if context.json {
                // One document: the error, and the trial import's report that explains it
                // (what it would have imported and what it held back; nothing was written).
                output::print_json(&json!({
                    "client": location.client,
                    "scope": location.scope,
                    "path": location.path,
                    "config": config,
                    "changed": false,
                    "error": {"code": failure.code, "message": failure.message},
                    "import": report,
                }));
                return Ok(failure.exit);
            }
            if let Some(report) = &report {
                output::print_held_back(report);
            }
            return Err(failure);
        }
    };
    let warnings = unmanaged_warnings(roots, &backups, location.client);
    // Which of its servers are packages, and what each needs now (by the installed bundles;
    // nothing is admitted or started).
    let mut names = outcome.import.imported.clone();
    names.extend(outcome.already_configured.iter().cloned());
    let packages = match crate::commands::open_host(context, crate::commands::terminal_consent()) {
        Ok(host) => {
            let states = host.package_states(&names);
            host.shutdown().await;
            states
        }
        Err(_) => Vec::new(),
    };
    if context.json {
        output::print_json(&json!({
            "packages": output::package_states_json(&packages),
            "client": location.client,
            "scope": location.scope,
            "path": outcome.path,
            "config": config,
            "entry": outcome.entry,
            "backup": outcome.backup,
            "import": outcome.import,
            "already_configured": outcome.already_configured,
            "warnings": warnings,
        }));
        return Ok(0);
    }
    output::print_import(&outcome.path, config, &outcome.import);
    for name in &outcome.already_configured {
        println!("  = {name} (already in servers.json with the same settings)");
    }
    output::print_package_states(&packages);
    println!(
        "{} now launches Gatehouse as its only MCP server: {} {}",
        location.client.display_name(),
        outcome.entry["command"].as_str().unwrap_or_default(),
        clients::serve_args(location.client).join(" ")
    );
    println!(
        "backup: {} (`gatehouse clients restore {}{}` puts the file back)",
        outcome.backup.display(),
        location.client,
        if location.scope == Scope::Project {
            " --project"
        } else {
            ""
        }
    );
    for warning in &warnings {
        eprintln!("warning: {warning}");
    }
    Ok(0)
}

fn restore(
    context: &Context,
    location: &Location,
    backups: &BackupStore,
    force: bool,
) -> Result<u8, Failure> {
    let outcome = clients::restore(location, backups, force)?;
    let config: &PathBuf = &context.config_path;
    if context.json {
        output::print_json(&json!({
            "client": location.client,
            "scope": location.scope,
            "path": outcome.path,
            "restored": true,
            "forced": !outcome.changed.is_empty(),
            "changed": outcome.changed,
            "config": config,
            "kept_in_servers": outcome.kept_in_servers,
        }));
        return Ok(0);
    }
    println!(
        "restored {} from its backup, byte for byte",
        outcome.path.display()
    );
    if !outcome.changed.is_empty() {
        println!(
            "  (forced: these changes made since Gatehouse wrote it are gone: {})",
            outcome.changed.join(", ")
        );
    }
    if !outcome.kept_in_servers.is_empty() {
        println!(
            "the servers imported when connecting stay in {}: {} (`gatehouse servers remove NAME` removes one)",
            config.display(),
            outcome.kept_in_servers.join(", ")
        );
    }
    Ok(0)
}

/// `clients token CLIENT [--rotate | --revoke]`.
fn token(context: &Context, client: &str, rotate: bool, revoke: bool) -> Result<u8, Failure> {
    let index = gatehouse_gateway::tokens::index_path(&crate::commands::data_dir());
    let store = context.secrets.as_ref();
    let failed = |message: String| Failure {
        code: gatehouse_host::ErrorCode::ClientTokenFailed,
        message,
        exit: 2,
    };
    if revoke {
        let had = gatehouse_gateway::tokens::revoke(store, &index, client).map_err(failed)?;
        if context.json {
            println!("{}", serde_json::json!({"client": client, "revoked": had}));
        } else if had {
            println!("{client}'s token is revoked: gatehouse serve --http refuses it from now on");
        } else {
            println!("{client} had no token");
        }
        return Ok(0);
    }
    let (token, issued) =
        gatehouse_gateway::tokens::issue(store, &index, client, rotate).map_err(failed)?;
    let what = issued.as_str();
    if context.json {
        println!(
            "{}",
            serde_json::json!({"client": client, "token": token, "issued": what})
        );
    } else {
        println!("{token}");
        eprintln!(
            "gatehouse: {client}'s token ({what}, kept in the keychain). The client sends it to \
             gatehouse serve --http ADDR as the header  Authorization: Bearer TOKEN  on \
             http://ADDR/mcp"
        );
    }
    Ok(0)
}
