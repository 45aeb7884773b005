//! The server a one-shot command addresses, on a host of its own: resolving the name or the
//! ad-hoc `--stdio`/`--url`, connecting with the spinner, the host's events while it runs,
//! and the small parsers those commands share.

use std::sync::{Arc, Mutex};

use gatehouse_host::consent::ConsentUi;
use gatehouse_host::demo;
use gatehouse_host::host::Host;
use gatehouse_host::{CallOptions, HostEvent, ServerSpec, ServersFile};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::cli::{Adhoc, Target};
use crate::commands::{Admission, Context, open_host, terminal_consent, warn_not_admitted};
use crate::failure::Failure;
use crate::output::{self, Spinner};

/// Name used for an ad-hoc server in logs and the traffic record.
const ADHOC: &str = "adhoc";

fn load_config(context: &Context) -> Result<ServersFile, Failure> {
    Ok(ServersFile::load(&context.config_path)?)
}

/// The server a command addresses: a configured name, or an ad-hoc --stdio / --url.
fn resolve_target(
    context: &Context,
    name: Option<&str>,
    adhoc: &Adhoc,
) -> Result<(String, ServerSpec), Failure> {
    match (name, adhoc.given()) {
        (Some(name), true) => Err(Failure::usage(format!(
            "give either a configured server ({name:?}) or --stdio/--url, not both"
        ))),
        (None, false) => Err(Failure::usage(
            "name a configured server, or give an ad-hoc one with --stdio 'CMD ARGS…' or --url URL",
        )),
        (Some(name), false) => {
            let config = load_config(context)?;
            // The demo under both its names, as the desktop app and the gateway offer it.
            if context.demo
                && [demo::DEMO_SERVER_NAME, demo::DEMO_LEGACY_NAME].contains(&name)
                && !config.servers.contains_key(name)
            {
                let spec = demo::demo_server_spec().map_err(Failure::usage)?;
                return Ok((name.to_string(), spec));
            }
            Ok((name.to_string(), config.spec(name, &context.config_path)?))
        }
        (None, true) => Ok((ADHOC.to_string(), adhoc_spec(adhoc)?)),
    }
}

pub(crate) fn adhoc_spec(adhoc: &Adhoc) -> Result<ServerSpec, Failure> {
    Ok(match (&adhoc.stdio, &adhoc.url) {
        (Some(command), None) => ServerSpec::adhoc_stdio(command)?,
        (None, Some(url)) => ServerSpec::adhoc_http(url)?,
        _ => return Err(Failure::usage("give one of --stdio or --url")),
    })
}

/// Collects host events while a command runs, printing progress and elicitations to stderr
/// in human mode.
pub(crate) struct EventLog {
    events: Arc<Mutex<Vec<HostEvent>>>,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl EventLog {
    pub(crate) fn start(context: &Context, host: &Host) -> EventLog {
        let events = Arc::new(Mutex::new(Vec::new()));
        let mut rx = host.subscribe();
        let sink = events.clone();
        let json = context.json;
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let keep = |event: HostEvent| {
                if !json {
                    output::print_event(&event);
                }
                sink.lock().expect("event log poisoned").push(event);
            };
            loop {
                tokio::select! {
                    biased;
                    event = rx.recv() => match event {
                        Ok(event) => keep(event),
                        Err(broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(broadcast::error::RecvError::Closed) => return,
                    },
                    _ = &mut stopped => {
                        // Everything sent before the stop is already in the channel.
                        while let Ok(event) = rx.try_recv() {
                            keep(event);
                        }
                        return;
                    }
                }
            }
        });
        EventLog { events, stop, task }
    }

    pub(crate) async fn finish(self) -> Vec<HostEvent> {
        let _ = self.stop.send(());
        let _ = self.task.await;
        std::mem::take(&mut *self.events.lock().expect("event log poisoned"))
    }
}

/// Opens the host for a one-shot command with the server it names on it: a configured one
/// (the demo's in `--demo`), or the ad-hoc `--stdio` / `--url` one.
pub(crate) fn host_with_target(
    context: &Context,
    consent: Arc<dyn ConsentUi>,
    name: Option<&str>,
    adhoc: &Adhoc,
) -> Result<(Arc<Host>, String, ServerSpec), Failure> {
    let (name, spec) = resolve_target(context, name, adhoc)?;
    let host = open_host(context, consent)?;
    if adhoc.given() {
        host.add_adhoc(&name, spec.clone());
    }
    Ok((host, name, spec))
}

/// Connects the host to `name` (admitted first), with the CLI's spinner and its warning for
/// a server that is not admitted, and returns admission's verdict. When it cannot connect, the
/// host is shut down before the failure is returned (what it recorded, such as traffic, stays
/// readable).
pub(crate) async fn connect(
    context: &Context,
    host: &Host,
    name: &str,
    spec: &ServerSpec,
) -> Result<Admission, Failure> {
    let spinner = Spinner::start(
        &format!("connecting to {name} ({})", spec.describe()),
        context.json,
    );
    let result = host.with_verdict(name, Admission::of).await;
    spinner.stop();
    let admission = match result {
        Ok(admission) => admission,
        Err(error) => {
            host.shutdown().await;
            return Err(error.into());
        }
    };
    warn_not_admitted(context, name, &admission);
    Ok(admission)
}

/// What a one-shot listing or approval command found on its server: the server's name, its
/// admission verdict (JSON and headline), and what `work` returned.
pub(crate) struct OnTarget<T> {
    pub name: String,
    pub verdict: Value,
    pub headline: String,
    pub found: T,
}

/// Opens the host with the server `target` names, connects (admission first), runs `work`
/// and shuts the host down: the shape of `tools`, `prompts`, `resources` and their approvals.
/// `work` gets the host and the server's name, and asks the host for what it needs by name,
/// as every front end does.
pub(crate) async fn on_target<T, E>(
    context: &Context,
    target: &Target,
    work: impl AsyncFnOnce(&Host, &str) -> Result<T, E>,
) -> Result<OnTarget<T>, Failure>
where
    Failure: From<E>,
{
    let (host, name, spec) = host_with_target(
        context,
        terminal_consent(),
        target.server.as_deref(),
        &target.adhoc,
    )?;
    let admission = connect(context, &host, &name, &spec).await?;
    let found = work(&host, &name).await;
    host.shutdown().await;
    Ok(OnTarget {
        name,
        verdict: admission.json,
        headline: admission.headline,
        found: found?,
    })
}

/// A JSON object given on the command line (`flag` names it in the error, `example` shows one).
pub(crate) fn json_object(
    raw: Option<&str>,
    flag: &str,
    example: &str,
) -> Result<Option<serde_json::Map<String, Value>>, Failure> {
    let Some(raw) = raw else { return Ok(None) };
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(other) => Err(Failure::usage(format!(
            "{flag} must be a JSON object like '{example}', not {}",
            output::json_kind(&other)
        ))),
        Err(e) => Err(Failure::usage(format!("{flag} is not valid JSON: {e}"))),
    }
}

/// Cancelled on Ctrl-C, so an interrupted call sends `notifications/cancelled`.
pub(crate) fn ctrl_c_token() -> CancellationToken {
    let token = CancellationToken::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            trigger.cancel();
        }
    });
    token
}

/// Per-request options of a one-shot command: Ctrl-C cancels the request.
pub(crate) fn call_options() -> CallOptions {
    CallOptions {
        cancel: Some(ctrl_c_token()),
        ..CallOptions::default()
    }
}

/// `SERVER WORD`, or `WORD` with --stdio / --url; `what` names WORD in errors.
pub(crate) fn server_and<'a>(
    command: &str,
    what: &str,
    words: &'a [String],
    adhoc: &Adhoc,
) -> Result<(Option<&'a str>, &'a str), Failure> {
    match (words, adhoc.given()) {
        ([word], true) => Ok((None, word)),
        ([server, word], false) => Ok((Some(server), word)),
        ([_], false) => Err(Failure::usage(format!(
            "{command} needs SERVER {what} (or {what} with --stdio / --url)"
        ))),
        (_, true) => Err(Failure::usage(format!(
            "with --stdio or --url, give only the {what}"
        ))),
        _ => Err(Failure::usage(format!("{command} needs SERVER {what}"))),
    }
}

/// A refusal as one JSON document with what the command was about, as `call` prints it.
pub(crate) fn json_error(mut document: Value, failure: &Failure, notes: &[String]) -> u8 {
    document["error"] = json!({"code": failure.code, "message": failure.message});
    document["elicitations"] = json!([]);
    document["answers_notes"] = json!(notes);
    output::print_json(&document);
    failure.exit
}
