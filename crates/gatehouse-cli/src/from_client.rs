//! `gatehouse bundle add-server --from-client CLIENT [--config FILE]`: an AI client's MCP
//! servers as proposals, written with `--keep`. npx/uvx/`.mcpb` configs become package
//! bindings (an exact version is required: the admin gives it, nothing is resolved from a
//! tag), plain commands stdio bindings (the executable hashed), URLs vouched remote entries;
//! Gatehouse's own entry is skipped. `env` values and headers are never read into a bundle:
//! their names are reported as secrets to set.

use std::path::{Path, PathBuf};

use gatehouse_clients::{ClientId, Location, Roots, Scope, locations};
use gatehouse_host::ErrorCode;
use gatehouse_package::{PackageRequest, Parsed, parse_launcher};
use serde_json::{Map, Value, json};

use crate::cli::AddServerArgs;
use crate::commands::Context;
use crate::failure::Failure;
use crate::proposals::{Prepared, Proposal, Target, coded, list_or_keep, slug, unique};

pub async fn run(context: &Context, args: &AddServerArgs, client: ClientId) -> Result<u8, Failure> {
    // The bundle and the signer are checked before anything is read or proposed, as for one
    // entry: a wrong key is said at once, not after the proposals are listed.
    crate::entry::open_bundle(args)?;
    let home = dirs::home_dir()
        .ok_or_else(|| Failure::usage("cannot tell the home directory: set HOME"))?;
    let roots = Roots {
        config_dir: dirs::config_dir().unwrap_or_else(|| home.join(".config")),
        cwd: std::env::current_dir()
            .map_err(|e| Failure::usage(format!("cannot read the current directory: {e}")))?,
        home: home.clone(),
    };
    let mut location: Location = locations(&roots)
        .into_iter()
        .find(|l| l.client == client && l.scope == Scope::User)
        .ok_or_else(|| Failure::usage(format!("{client} has no config file Gatehouse reads")))?;
    if let Some(path) = &args.config {
        location.path = path.clone();
    }
    let servers = read_servers(&location)?;
    let mut proposals: Vec<Proposal> = servers
        .iter()
        .filter_map(|(name, entry)| propose(name, entry, &home))
        .collect();
    unique(&mut proposals);
    let skipped: Vec<&String> = servers
        .iter()
        .filter(|(_, entry)| is_gatehouse(entry))
        .map(|(name, _)| name)
        .collect();
    let source = json!({
        "client": client.as_str(), "config": location.path, "skipped_gatehouse": skipped,
    });
    let text = format!("{} ({})", client.display_name(), location.path.display());
    list_or_keep(context, args, source, &text, proposals, prepare).await
}

/// The client's servers object: strict JSON (as `clients connect` reads it), the servers at
/// the location's key; none is an empty list.
fn read_servers(location: &Location) -> Result<Map<String, Value>, Failure> {
    let path = &location.path;
    let bytes = std::fs::read(path).map_err(|e| {
        let code = if e.kind() == std::io::ErrorKind::NotFound {
            ErrorCode::ClientConfigMissing
        } else {
            ErrorCode::ClientIo
        };
        coded(
            code,
            format!(
                "cannot read {}'s config {}: {e}; name the file with --config",
                location.client.display_name(),
                path.display()
            ),
        )
    })?;
    let root: Value = serde_json::from_slice(&bytes).map_err(|e| {
        coded(
            ErrorCode::ClientConfigInvalid,
            format!(
                "{}: not strict JSON (line {} column {}: {e}); remove comments and trailing commas",
                path.display(),
                e.line(),
                e.column()
            ),
        )
    })?;
    let mut value = &root;
    for key in location.key {
        match value.get(*key) {
            Some(next) => value = next,
            None => return Ok(Map::new()),
        }
    }
    value.as_object().cloned().ok_or_else(|| {
        coded(
            ErrorCode::ClientConfigInvalid,
            format!(
                "{}: \"{}\" is not an object",
                path.display(),
                location.key.join(".")
            ),
        )
    })
}

async fn prepare(proposal: Proposal) -> Result<Prepared, Failure> {
    Ok((proposal.target, None))
}

/// Gatehouse's own `gatehouse serve` entry: nothing to bind.
fn is_gatehouse(entry: &Value) -> bool {
    let command = entry.get("command").and_then(Value::as_str).unwrap_or("");
    let first = entry
        .get("args")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str);
    Path::new(command)
        .file_name()
        .is_some_and(|n| n == "gatehouse")
        && first == Some("serve")
}

fn propose(name: &str, entry: &Value, home: &Path) -> Option<Proposal> {
    if is_gatehouse(entry) {
        return None;
    }
    let object = entry.as_object().cloned().unwrap_or_default();
    let mut secrets = names(&object, "env");
    secrets.extend(names(&object, "headers"));
    let url = object
        .get("url")
        .or_else(|| object.get("serverUrl"))
        .and_then(Value::as_str);
    let command = object.get("command").and_then(Value::as_str);
    let mut proposal = match (url, command) {
        (Some(url), _) => Proposal::new(slug(name), Target::Url(url.to_string())),
        (None, Some(command)) => {
            let args: Vec<String> = object
                .get("args")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|a| a.as_str().map(String::from))
                .collect();
            command_proposal(name, command, &args, home)
        }
        (None, None) => {
            let mut p = Proposal::new(slug(name), Target::Stdio(String::new()));
            p.refused = Some((
                ErrorCode::ClientServerUnrecognized,
                format!("{name}: neither a command nor a url"),
            ));
            p
        }
    };
    if object.contains_key("env") || object.contains_key("headers") {
        proposal.notes.push(
            "its env and headers values were not read into the proposal; set the secrets in the keychain".into(),
        );
    }
    proposal.secrets = secrets;
    Some(proposal)
}

/// The keys of `object[key]` (env variables, headers): their values are never looked at.
fn names(object: &Map<String, Value>, key: &str) -> Vec<String> {
    object
        .get(key)
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

fn command_proposal(name: &str, command: &str, args: &[String], home: &Path) -> Proposal {
    let package = |target: Target, request: &PackageRequest| {
        let mut p = Proposal::new(slug(name), target);
        split_user_args(&mut p, &request.args, home);
        p
    };
    match parse_launcher(command, args) {
        Parsed::Request(request) => match request.ecosystem {
            gatehouse_attest::package::Ecosystem::Npm => {
                let mut p = package(
                    Target::Npm(format!(
                        "{}@{}",
                        request.name,
                        request.version.as_deref().unwrap_or("VERSION")
                    )),
                    &request,
                );
                if request.version.is_none() {
                    p.refused = Some(no_version(name, &request.name, "npm", "@"));
                }
                p
            }
            gatehouse_attest::package::Ecosystem::Pypi => {
                let mut p = package(
                    Target::Pypi(format!(
                        "{}=={}",
                        request.name,
                        request.version.as_deref().unwrap_or("VERSION")
                    )),
                    &request,
                );
                p.entry = request.script.clone();
                if request.version.is_none() {
                    p.refused = Some(no_version(name, &request.name, "pypi", "=="));
                }
                p
            }
            gatehouse_attest::package::Ecosystem::Mcpb => {
                let file = request
                    .mcpb_file
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(command));
                package(Target::McpbFile(file), &request)
            }
        },
        Parsed::Unsupported { reason, .. } => {
            let mut p = Proposal::new(slug(name), Target::Stdio(command.to_string()));
            p.refused = Some((ErrorCode::LauncherUnsupported, format!("{name}: {reason}")));
            p
        }
        Parsed::NotALauncher => {
            let words: Vec<&str> = std::iter::once(command)
                .chain(args.iter().map(String::as_str))
                .collect();
            match shlex::try_join(words) {
                Ok(line) => Proposal::new(slug(name), Target::Stdio(line)),
                Err(_) => {
                    let mut p = Proposal::new(slug(name), Target::Stdio(command.to_string()));
                    p.refused = Some((
                        ErrorCode::ClientServerUnrecognized,
                        format!(
                            "{name}: its arguments cannot be written as one command line (a NUL byte)"
                        ),
                    ));
                    p
                }
            }
        }
    }
}

/// The package's arguments: an existing directory under the home becomes a user-argument
/// rule (each user picks their own); anything else is a fixed argument.
fn split_user_args(proposal: &mut Proposal, args: &[String], home: &Path) {
    let home = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_path_buf());
    let is_user_dir = |a: &String| {
        Path::new(a).is_absolute()
            && std::fs::canonicalize(a)
                .is_ok_and(|p| p.is_dir() && p.starts_with(&home) && p != home)
    };
    let first_dir = args.iter().position(is_user_dir);
    let (fixed, user) = args.split_at(first_dir.unwrap_or(args.len()));
    proposal.args = fixed.to_vec();
    if !user.is_empty() {
        if user.iter().all(is_user_dir) {
            proposal.user_args.push(format!(
                "existing_directory_under_home:read_only:1:{}",
                user.len().max(8)
            ));
            proposal.notes.push(format!(
                "{} director{} under the home made a user argument (each user picks their own)",
                user.len(),
                if user.len() == 1 { "y" } else { "ies" }
            ));
        } else {
            proposal.args = args.to_vec();
        }
    }
}

fn no_version(server: &str, package: &str, kind: &str, sep: &str) -> (ErrorCode, String) {
    (
        ErrorCode::VersionRequired,
        format!(
            "{server}: the config runs {package} without a version, so it runs whatever is newest; give the exact version you reviewed: add-server --{kind} {package}{sep}VERSION (nothing is resolved from a tag here)"
        ),
    )
}
