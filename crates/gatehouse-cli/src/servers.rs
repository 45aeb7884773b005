//! `servers list | add | remove | resume | import | pin | confine`.

use std::path::Path;

use gatehouse_host::HostError;
use gatehouse_host::ServersFile;
use gatehouse_host::host::{AddServer, ApiError};
use serde_json::{Value, json};

use crate::cli::{AddArgs, Adhoc, ServersCommand};
use crate::commands::{Context, open_host, report, terminal_consent};
use crate::failure::Failure;
use crate::output;
use crate::target::{adhoc_spec, host_with_target};

pub async fn run(context: &Context, command: ServersCommand) -> Result<u8, Failure> {
    let path = &context.config_path;
    match command {
        ServersCommand::List => {
            // Each server's admission is decided (and audited) now by the host: an
            // attestation fetched, a binary hashed. Nothing is said to the servers themselves.
            let host = open_host(context, terminal_consent())?;
            let admissions = host.admissions().await;
            host.shutdown().await;
            let rows: Vec<Value> = admissions?
                .into_iter()
                .map(|admission| {
                    let mut row = json!({
                        "name": admission.name,
                        "transport": admission.transport,
                        "target": admission.target,
                        "secrets": admission.secrets,
                        "admission": admission.verdict,
                        "verdict": admission.verdict.headline(),
                    });
                    // A package server's binding, at the top where a person looks; other rows
                    // keep their shape.
                    if let Some(package) = &admission.verdict.package {
                        row["package"] = json!(package);
                    }
                    // What a stdio server can read, write and reach (none for a remote one).
                    if let Some(confinement) = &admission.verdict.confinement {
                        row["confinement"] = json!(confinement);
                    }
                    row
                })
                .collect();
            if context.json {
                output::print_json(&json!({"config": path, "servers": rows}));
            } else {
                output::print_servers(path, &rows);
            }
            Ok(0)
        }
        ServersCommand::Add(args) => {
            let add = add_server(&args)?;
            let host = open_host(context, terminal_consent())?;
            let added = host.add_server_entry(add).await;
            host.shutdown().await;
            added.map_err(|error| add_failure(error, &args, path))?;
            report(
                context,
                json!({"added": args.name, "config": path}),
                &format!("added {:?} to {}", args.name, path.display()),
            );
            Ok(0)
        }
        ServersCommand::Remove { name } => {
            // The host's remove: the keychain secrets the entry named stay, and the demo's
            // built-in server is refused in --demo.
            let host = open_host(context, terminal_consent())?;
            let removed = host.remove_server(&name).await;
            host.shutdown().await;
            removed?;
            report(
                context,
                json!({"removed": name, "config": path}),
                &format!("removed {name:?} from {}", path.display()),
            );
            Ok(0)
        }
        ServersCommand::Pin { name, yes } => crate::pin::run(context, &name, yes).await,
        ServersCommand::Confine(args) => crate::confinement::run(context, args).await,
        ServersCommand::Resume { name } => {
            // A configured server, or the demo's in --demo; nothing connects.
            let (host, name, _) =
                host_with_target(context, terminal_consent(), Some(&name), &Adhoc::default())?;
            let resumed = host.resume_server(&name).await;
            host.shutdown().await;
            let resumed = resumed?.resumed;
            report(
                context,
                json!({"server": name, "resumed": resumed}),
                &if resumed {
                    format!("{name:?} is no longer suspended")
                } else {
                    format!("{name:?} was not suspended")
                },
            );
            Ok(0)
        }
        ServersCommand::Import {
            path: source,
            replace,
            allow_launch_settings,
        } => {
            let text = std::fs::read_to_string(&source)
                .map_err(|e| HostError::Config(format!("cannot read {}: {e}", source.display())))?;
            let host = open_host(context, terminal_consent())?;
            let imported = host
                .import_servers_from(&text, &source, replace, &allow_launch_settings)
                .await;
            // Which imported servers are packages, and what each needs now.
            let packages = imported
                .as_ref()
                .map(|r| host.package_states(&r.imported))
                .unwrap_or_default();
            host.shutdown().await;
            let report_data = imported?;
            if context.json {
                output::print_json(&json!({
                    "config": path, "import": report_data,
                    "packages": output::package_states_json(&packages),
                }));
            } else {
                output::print_import(&source, path, &report_data);
                output::print_package_states(&packages);
            }
            Ok(0)
        }
    }
}

fn split_pair<'a>(raw: &'a str, flag: &str) -> Result<(&'a str, &'a str), Failure> {
    raw.split_once('=')
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| Failure::usage(format!("{flag} {raw:?}: expected KEY=VALUE")))
}

/// The server `servers add` describes, for the host to check and add.
fn add_server(args: &AddArgs) -> Result<AddServer, Failure> {
    let mut add = AddServer::new(args.name.clone(), adhoc_spec(&args.server)?);
    for raw in &args.env {
        let (k, v) = split_pair(raw, "--env")?;
        add.env.push((k.into(), v.into()));
    }
    for raw in &args.headers {
        let (k, v) = split_pair(raw, "--header")?;
        add.headers.push((k.into(), v.into()));
    }
    add.cwd = args.cwd.as_ref().map(|p| p.display().to_string());
    add.bearer_token_secret = args.bearer_secret.clone();
    add.replace = args.replace;
    Ok(add)
}

/// The host's refusal of `servers add`, saying how to replace a listed server from here.
fn add_failure(error: ApiError, args: &AddArgs, path: &Path) -> Failure {
    let listed = error.code == gatehouse_host::ErrorCode::ServerExists
        && ServersFile::load(path).is_ok_and(|config| config.servers.contains_key(&args.name));
    if listed {
        return HostError::Config(format!(
            "{}: a server named {:?} exists; use --replace to overwrite it",
            path.display(),
            args.name
        ))
        .into();
    }
    error.into()
}
