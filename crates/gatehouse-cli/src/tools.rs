//! `connect`, `tools` (and `tools pin`), `call` and `trace`.

use gatehouse_attest::gate::ToolStatus;
use gatehouse_host::CallOptions;
use gatehouse_host::host::Acknowledgement;
use gatehouse_review::Primitive;
use serde_json::{Value, json};

use crate::cli::{CallArgs, Target, ToolsAction, ToolsArgs, TraceArgs};
use crate::commands::{Context, terminal_consent};
use crate::failure::Failure;
use crate::gated::{Reviewer, print_listing, print_pins, split_gated};
use crate::output;
use crate::target::{EventLog, connect, ctrl_c_token, host_with_target, json_object, on_target};

pub async fn connect_command(context: &Context, target: &Target) -> Result<u8, Failure> {
    let (host, name, spec) = host_with_target(
        context,
        terminal_consent(),
        target.server.as_deref(),
        &target.adhoc,
    )?;
    let log = EventLog::start(context, &host);
    let admission = connect(context, &host, &name, &spec).await?;
    let summary = host.server_summary(&name).await;
    let tools = host.gated_tools(&name).await;
    let events = log.finish().await;
    host.shutdown().await;
    let summary = summary?;
    let tools = tools?;
    let allowed = tools
        .iter()
        .filter(|t| t.status == ToolStatus::Allowed)
        .count();
    if context.json {
        output::print_json(&json!({
            "server": name,
            "connected": true,
            "admission": admission.json,
            "summary": summary,
            "tools": tools.len(),
            "tools_allowed": allowed,
            "events": events,
        }));
    } else {
        output::print_verdict(&admission.headline, &admission.detail, &admission.json);
        output::print_summary(&name, &summary, tools.len());
        println!("  tools allowed:   {allowed} of {}", tools.len());
    }
    Ok(0)
}

pub async fn tools(context: &Context, args: &ToolsArgs) -> Result<u8, Failure> {
    if let Some(ToolsAction::Pin {
        target,
        tools,
        accept_findings,
    }) = &args.action
    {
        return pin_tools(context, target, tools, acknowledgement(*accept_findings)).await;
    }
    let listed = on_target(context, &args.target, async |host, name| {
        let tools = host.gated_tools(name).await?;
        let others = host.other_tools(name).await;
        Ok::<_, gatehouse_host::host::ApiError>((tools, others))
    })
    .await?;
    let (gated, others) = listed.found;
    let own: Vec<String> = gated.iter().map(|g| g.tool.name.to_string()).collect();
    let reviewer = Reviewer::new(others, &own);
    let reviewed: Vec<_> = gated
        .into_iter()
        .map(|g| (reviewer.review(Primitive::Tool, g.tool), g.status))
        .collect();
    let tools = split_gated(reviewed);
    print_listing(
        context,
        &listed.name,
        &listed.verdict,
        &listed.headline,
        &tools,
        ("tools", "tool"),
        |tools| {
            output::print_tools(&tools.allowed);
            output::print_gated(&tools.hidden, &tools.blocked);
        },
    );
    Ok(0)
}

/// `--accept-findings` as the host takes it.
pub(crate) fn acknowledgement(accept_findings: bool) -> Acknowledgement {
    if accept_findings {
        Acknowledgement::HighFindings
    } else {
        Acknowledgement::NotGiven
    }
}

async fn pin_tools(
    context: &Context,
    target: &Target,
    names: &[String],
    acknowledgement: Acknowledgement,
) -> Result<u8, Failure> {
    let pinned = on_target(context, target, async |host, name| {
        host.approve_tools_with(name, names, acknowledgement).await
    })
    .await?;
    print_pins(context, &pinned.name, "tool", &pinned.found);
    Ok(0)
}

fn parse_arguments(raw: Option<&str>) -> Result<Option<serde_json::Map<String, Value>>, Failure> {
    json_object(raw, "--args", r#"{"message": "hi"}"#)
}

pub async fn call(context: &Context, args: &CallArgs) -> Result<u8, Failure> {
    let (server, tool) = match (args.words.as_slice(), args.adhoc.given()) {
        ([tool], true) => (None, tool.clone()),
        ([server, tool], false) => (Some(server.as_str()), tool.clone()),
        ([_], false) => {
            return Err(Failure::usage(
                "call needs SERVER TOOL (or TOOL with --stdio / --url)",
            ));
        }
        (_, true) => {
            return Err(Failure::usage(
                "with --stdio or --url, give only the TOOL name",
            ));
        }
        _ => return Err(Failure::usage("call needs SERVER TOOL")),
    };
    let arguments = parse_arguments(args.args.as_deref())?;
    let consent = crate::consent::Consent::new(args.answers.as_deref())?;
    let (host, name, spec) = host_with_target(context, consent.ui(), server, &args.adhoc)?;
    let log = EventLog::start(context, &host);
    connect(context, &host, &name, &spec).await?;
    let options = CallOptions {
        cancel: Some(ctrl_c_token()),
        ..CallOptions::default()
    };
    let (outcome, failed_records) = host.call_traced(&name, &tool, arguments, &options).await;
    let events = log.finish().await;
    host.shutdown().await;
    let notes = consent.notes_told(context.json);
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            if context.json {
                // One JSON document: the error, and what was asked before it.
                let failure = Failure::from(error);
                output::print_json(&json!({
                    "server": name,
                    "tool": tool,
                    "error": {"code": failure.code, "message": failure.message},
                    "elicitations": failed_records,
                    "answers_notes": notes,
                }));
                return Ok(failure.exit);
            }
            output::print_elicitations(&failed_records);
            return Err(error.into());
        }
    };
    if context.json {
        output::print_json(&json!({
            "server": name,
            "tool": tool,
            "is_error": outcome.is_error(),
            "rounds": outcome.rounds,
            "result": outcome.result,
            "elicitations": outcome.elicitations,
            "answers_notes": notes,
            "events": events,
        }));
    } else {
        output::print_elicitations(&outcome.elicitations);
        output::print_result(&outcome.result);
    }
    if outcome.is_error() {
        if !context.json {
            eprintln!("gatehouse: the tool {tool:?} returned an error result (isError)");
        }
        return Ok(1);
    }
    Ok(0)
}

pub async fn trace(context: &Context, args: &TraceArgs) -> Result<u8, Failure> {
    let arguments = parse_arguments(args.args.as_deref())?;
    // Elicitations during a traced call are asked on the terminal, like `call`.
    let (host, name, spec) = host_with_target(
        context,
        terminal_consent(),
        args.target.server.as_deref(),
        &args.target.adhoc,
    )?;
    let log = EventLog::start(context, &host);
    let mut exit = 0;
    let mut failure = None;
    match connect(context, &host, &name, &spec).await {
        Ok(_) => {
            // Listed first, so the traffic shows tools/list before the call.
            if let Err(e) = host.gated_tools(&name).await {
                failure = Some(Failure::from(e));
            } else if let Some(tool) = &args.tool {
                match host
                    .call(
                        &name,
                        tool,
                        arguments,
                        &CallOptions {
                            cancel: Some(ctrl_c_token()),
                            ..CallOptions::default()
                        },
                    )
                    .await
                {
                    Ok(outcome) if outcome.is_error() => exit = 1,
                    Ok(_) => {}
                    Err(e) => failure = Some(e.into()),
                }
            }
        }
        Err(e) => failure = Some(e),
    }
    host.shutdown().await;
    log.finish().await;
    // The traffic is printed even when the run failed: that is when it is most useful.
    let entries = host.traffic(Some(&name));
    if context.json {
        for entry in &entries {
            println!(
                "{}",
                serde_json::to_string(entry).expect("entry serializes")
            );
        }
    } else {
        output::print_traffic(&entries);
    }
    match failure {
        Some(failure) => Err(failure),
        None => Ok(exit),
    }
}
