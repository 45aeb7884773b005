//! Resources: `resources` (and `resources approve`), `read` and `subscribe`. Like `tools` and
//! `call`, each is a thin call into gatehouse-host plus printing: the gate decides (and
//! audits) before anything is sent, approvals are the host's ([`gatehouse_host::host::Host`]),
//! and what comes back was checked by the host ([`gatehouse_host::content`]) before it is
//! printed. Server text is printed through [`output::safe`]; images and binary data are
//! described, never written to the terminal.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use gatehouse_attest::resources::ResourceStatus;
use gatehouse_host::content::{ContentView, Display};
use gatehouse_host::host::context::ReadTarget as HostReadTarget;
use gatehouse_host::{HostError, HostEvent};
use gatehouse_review::Primitive;
use serde_json::json;
use tokio::sync::broadcast;

use crate::cli::{ReadArgs, ResourcesAction, ResourcesArgs, SubscribeArgs, Target};
use crate::commands::{Context, terminal_consent};
use crate::failure::Failure;
use crate::gated::{Reviewer, findings_json};
use crate::output;
use crate::target::{
    EventLog, call_options, connect, ctrl_c_token, host_with_target, json_error, on_target,
    server_and,
};

/// `--var NAME=VALUE` values (NAME not empty; VALUE may contain `=` and may be empty).
fn template_values(raw: &[String]) -> Result<BTreeMap<String, String>, Failure> {
    let mut values = BTreeMap::new();
    for pair in raw {
        let Some((name, value)) = pair.split_once('=').filter(|(name, _)| !name.is_empty()) else {
            return Err(Failure::usage(format!(
                "--var {pair:?}: expected NAME=VALUE, e.g. --var name=ideas"
            )));
        };
        if values.insert(name.to_string(), value.to_string()).is_some() {
            return Err(Failure::usage(format!("--var {name:?} is given twice")));
        }
    }
    Ok(values)
}

// ---- resources ----------------------------------------------------------------------------

pub async fn resources(context: &Context, args: &ResourcesArgs) -> Result<u8, Failure> {
    if let Some(ResourcesAction::Approve {
        target,
        uris,
        prefixes,
    }) = &args.action
    {
        return approve_resources(context, target, uris, prefixes).await;
    }
    let listed = on_target(context, &args.target, async |host, name| {
        let listed = host.gated_resources(name).await?;
        let others = host.other_tools(name).await;
        Ok::<_, gatehouse_host::host::ApiError>((listed, others))
    })
    .await?;
    let (name, verdict, headline) = (listed.name, listed.verdict, listed.headline);
    let ((resources, templates), others) = listed.found;
    let reviewer = Reviewer::new(others, &[]);
    let (mut allowed, mut allowed_templates, mut hidden) = (Vec::new(), Vec::new(), Vec::new());
    for gated in resources {
        match gated.status {
            ResourceStatus::Allowed => {
                allowed.push(reviewer.review(Primitive::Resource, gated.resource))
            }
            ResourceStatus::Hidden(reason) => {
                let reviewed = reviewer.review(Primitive::Resource, gated.resource);
                let resource = reviewed.item;
                hidden.push((
                    resource.uri,
                    resource.name,
                    false,
                    reason,
                    reviewed.findings,
                ))
            }
        }
    }
    for gated in templates {
        match gated.status {
            ResourceStatus::Allowed => {
                allowed_templates.push(reviewer.review(Primitive::Resource, gated.template))
            }
            ResourceStatus::Hidden(reason) => {
                let reviewed = reviewer.review(Primitive::Resource, gated.template);
                let template = reviewed.item;
                hidden.push((
                    template.uri_template,
                    template.name,
                    true,
                    reason,
                    reviewed.findings,
                ))
            }
        }
    }
    if context.json {
        output::print_json(&json!({
            "server": name,
            "admission": verdict,
            "resources": allowed,
            "templates": allowed_templates,
            "hidden": hidden.iter().map(|(uri, name, template, reason, _)| {
                let key = if *template { "uriTemplate" } else { "uri" };
                json!({key: uri, "name": name, "reason": reason.as_str()})
            }).collect::<Vec<_>>(),
            "findings": findings_json(
                allowed.iter().map(|r| ("uri", r.item.uri.as_str(), r.findings.as_slice()))
                    .chain(allowed_templates.iter().map(|r| {
                        ("uriTemplate", r.item.uri_template.as_str(), r.findings.as_slice())
                    }))
                    .chain(hidden.iter().map(|(uri, _, template, _, findings)| {
                        let key = if *template { "uriTemplate" } else { "uri" };
                        (key, uri.as_str(), findings.as_slice())
                    })),
            ),
        }));
    } else {
        println!("{name}: {}", output::safe(&headline));
        output::print_resources(&allowed, &allowed_templates);
        output::print_hidden_resources(&hidden);
    }
    Ok(0)
}

async fn approve_resources(
    context: &Context,
    target: &Target,
    uris: &[String],
    prefixes: &[String],
) -> Result<u8, Failure> {
    let name = on_target(context, target, async |host, name| {
        host.approve_resources(name, uris, prefixes).await
    })
    .await?
    .name;
    if context.json {
        output::print_json(&json!({"server": name, "approved": uris, "prefixes": prefixes}));
    } else {
        for uri in uris {
            println!("approved {}", output::safe_name(uri));
        }
        for prefix in prefixes {
            println!("approved everything under {}", output::safe_name(prefix));
        }
    }
    Ok(0)
}

// ---- read ---------------------------------------------------------------------------------

/// What `read` reads: a URI, or a template and its values.
enum ReadTarget {
    Uri(String),
    Template(String, BTreeMap<String, String>),
}

fn read_target(args: &ReadArgs) -> Result<(Option<&str>, ReadTarget), Failure> {
    let adhoc = args.adhoc.given();
    match (&args.template, args.words.as_slice()) {
        (Some(template), words) => {
            let server = match (words, adhoc) {
                ([server], false) => Some(server.as_str()),
                ([], true) => None,
                ([], false) => {
                    return Err(Failure::usage(
                        "read --template needs a SERVER (or --stdio / --url)",
                    ));
                }
                _ => {
                    return Err(Failure::usage(
                        "with --template, give only the SERVER (or --stdio / --url), not a URI",
                    ));
                }
            };
            let values = template_values(&args.vars)?;
            Ok((server, ReadTarget::Template(template.clone(), values)))
        }
        (None, words) => {
            if words.is_empty() {
                return Err(Failure::usage(
                    "read needs SERVER URI (or URI with --stdio / --url, or --template)",
                ));
            }
            let (server, uri) = server_and("read", "URI", words, &args.adhoc)?;
            Ok((server, ReadTarget::Uri(uri.to_string())))
        }
    }
}

/// The item `--out` saves: the first image or binary one, else the first text; its index
/// and its bytes.
fn payload(contents: &[ContentView]) -> Result<Option<(usize, Vec<u8>)>, Failure> {
    let blob = contents
        .iter()
        .enumerate()
        .find_map(|(index, c)| match &c.display {
            Display::Image { base64, .. } | Display::Binary { base64, .. } => Some((index, base64)),
            Display::Text { .. } => None,
        });
    if let Some((index, data)) = blob {
        // The host checked it is strict base64; decoded again here for the bytes.
        let bytes = gatehouse_host::content::decode(data).map_err(|fault| Failure {
            code: fault.into(),
            message: format!("the content {:?} is not valid base64", contents[index].uri),
            exit: 1,
        })?;
        return Ok(Some((index, bytes)));
    }
    Ok(contents
        .iter()
        .enumerate()
        .find_map(|(index, c)| match &c.display {
            Display::Text { text } => Some((index, text.clone().into_bytes())),
            _ => None,
        }))
}

/// Writes `bytes` to `path` atomically: replacing it only with `force`, else never over an
/// existing file.
fn save(path: &Path, bytes: &[u8], force: bool) -> std::io::Result<()> {
    if force {
        return gatehouse_host::files::write_atomically(path, bytes, 0o644);
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"))?
        .to_string_lossy()
        .into_owned();
    gatehouse_host::files::write_new(dir, [name], bytes).map(drop)
}

fn exists_failure(path: &Path) -> Failure {
    Failure::usage(format!(
        "--out {} exists; use --force to replace it",
        path.display()
    ))
}

pub async fn read(context: &Context, args: &ReadArgs) -> Result<u8, Failure> {
    let (server, what) = read_target(args)?;
    // Refused before anything is asked of the server.
    if let Some(out) = &args.out
        && !args.force
        && std::fs::symlink_metadata(out).is_ok()
    {
        return Err(exists_failure(out));
    }
    let consent = crate::consent::Consent::new(args.answers.as_deref())?;
    let (host, name, spec) = host_with_target(context, consent.ui(), server, &args.adhoc)?;
    let log = EventLog::start(context, &host);
    connect(context, &host, &name, &spec).await?;
    let target = match &what {
        ReadTarget::Uri(uri) => HostReadTarget::Uri(uri.clone()),
        ReadTarget::Template(template, values) => HostReadTarget::Template {
            uri_template: template.clone(),
            values: values.clone(),
        },
    };
    let outcome = host
        .read_resource_with(&name, target, &call_options())
        .await;
    let _events = log.finish().await;
    host.shutdown().await;
    let notes = consent.notes_told(context.json);
    let (asked_uri, template) = match &what {
        ReadTarget::Uri(uri) => (Some(uri.clone()), None),
        ReadTarget::Template(template, values) => (
            None,
            Some(json!({"uriTemplate": template, "values": values})),
        ),
    };
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            let failure = Failure::from(error);
            if context.json {
                let mut document = json!({"server": name, "uri": asked_uri});
                if let Some(template) = template {
                    document["template"] = template;
                }
                return Ok(json_error(document, &failure, &notes));
            }
            return Err(failure);
        }
    };
    let mut saved = None;
    if let Some(out) = &args.out {
        let Some((index, bytes)) = payload(&outcome.contents)? else {
            return Err(Failure {
                code: gatehouse_host::ErrorCode::NothingToSave,
                message: format!("{} returned no content to save", outcome.uri),
                exit: 1,
            });
        };
        save(out, &bytes, args.force).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                exists_failure(out)
            } else {
                Failure {
                    code: gatehouse_host::ErrorCode::OutUnwritable,
                    message: format!("cannot write --out {}: {e}", out.display()),
                    exit: 2,
                }
            }
        })?;
        saved = Some((index, out.clone(), bytes.len()));
    }
    if context.json {
        let mut document = json!({
            "server": name,
            "uri": outcome.uri,
            "rounds": outcome.rounds,
            "contents": outcome.contents,
            "elicitations": outcome.elicitations,
            "answers_notes": notes,
        });
        if let Some(template) = template {
            document["template"] = template;
        }
        if let Some((index, path, bytes)) = &saved {
            document["saved"] = json!({
                "path": path,
                "bytes": bytes,
                "uri": outcome.contents[*index].uri,
            });
        }
        output::print_json(&document);
    } else {
        output::print_elicitations(&outcome.elicitations);
        let saved = saved
            .as_ref()
            .map(|(index, path, _)| (*index, path.as_path()));
        output::print_contents(&outcome.contents, saved);
    }
    Ok(0)
}

// ---- subscribe ----------------------------------------------------------------------------

/// How a subscription's wait ended.
enum Waited {
    Done,
    TimedOut,
    Interrupted,
    Closed,
}

pub async fn subscribe(context: &Context, args: &SubscribeArgs) -> Result<u8, Failure> {
    let (server, uri) = server_and("subscribe", "URI", &args.words, &args.adhoc)?;
    let uri = uri.to_string();
    if !(args.wait.is_finite() && args.wait > 0.0 && args.wait <= 86_400.0) {
        return Err(Failure::usage(format!(
            "--wait must be a number of seconds between 0 and 86400, not {}",
            args.wait
        )));
    }
    let wait = Duration::from_secs_f64(args.wait);
    let (host, name, spec) = host_with_target(context, terminal_consent(), server, &args.adhoc)?;
    connect(context, &host, &name, &spec).await?;
    // Listening before subscribing, so an update right after the answer is not missed.
    let mut events = host.subscribe();
    if let Err(error) = host.subscribe_resource(&name, &uri).await {
        host.shutdown().await;
        return Err(error.into());
    }
    if !context.json {
        eprintln!(
            "subscribed to {} on {name}; waiting up to {}s for {} update(s) (Ctrl-C to stop)",
            output::safe_line(&uri),
            args.wait,
            args.count
        );
    }
    let deadline = tokio::time::Instant::now() + wait;
    let interrupted = ctrl_c_token();
    let mut updates = 0u64;
    let waited = loop {
        if updates >= args.count {
            break Waited::Done;
        }
        let event = tokio::select! {
            _ = tokio::time::sleep_until(deadline) => break Waited::TimedOut,
            _ = interrupted.cancelled() => break Waited::Interrupted,
            event = events.recv() => event,
        };
        match event {
            Ok(HostEvent::ResourceUpdated {
                server: from,
                uri: updated,
            }) if from == name && updated == uri => {
                updates += 1;
                if !context.json {
                    println!(
                        "updated {} ({updates}/{})",
                        output::safe_line(&updated),
                        args.count
                    );
                }
            }
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => break Waited::Closed,
        }
    };
    let unsubscribed = host.unsubscribe_resource(&name, &uri).await;
    host.shutdown().await;
    let failure = match waited {
        Waited::Done => None,
        Waited::TimedOut => Some(Failure {
            code: gatehouse_host::ErrorCode::Timeout,
            message: format!(
                "{updates} of {} update(s) of {uri:?} arrived within {}s (--wait); unsubscribed",
                args.count, args.wait
            ),
            exit: 2,
        }),
        Waited::Interrupted => Some(Failure::from(HostError::Cancelled {
            server: name.clone(),
            what: format!("the subscription to {uri:?}"),
        })),
        Waited::Closed => Some(Failure {
            code: gatehouse_host::ErrorCode::TransportFailed,
            message: format!("the connection to {name} ended while waiting for updates"),
            exit: 2,
        }),
    };
    if let (None, Err(error)) = (&failure, unsubscribed)
        && !context.json
    {
        eprintln!(
            "gatehouse: warning: unsubscribing from {} failed: {}",
            output::safe_line(&uri),
            error.message
        );
    }
    if context.json {
        let mut document = json!({"server": name, "uri": uri, "updates": updates});
        if let Some(failure) = &failure {
            document["error"] = json!({"code": failure.code, "message": failure.message});
            output::print_json(&document);
            return Ok(failure.exit);
        }
        output::print_json(&document);
        return Ok(0);
    }
    match failure {
        Some(failure) => Err(failure),
        None => Ok(0),
    }
}
