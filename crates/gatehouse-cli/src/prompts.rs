//! Prompts and completion: `prompts` (and `prompts pin`), `prompt` and `complete` (of a
//! prompt's or a resource template's argument). Like `tools` and `call`, each is a thin call
//! into gatehouse-host plus printing: the gate decides (and audits) before anything is sent,
//! approvals are the host's ([`gatehouse_host::host::Host`]), and what comes back was checked
//! by the host before it is printed through [`output::safe`].

use std::collections::HashMap;

use gatehouse_host::CompletionTarget;
use gatehouse_review::Primitive;
use serde_json::{Value, json};

use crate::cli::{CompleteArgs, PromptArgs, PromptsAction, PromptsArgs, Target};
use crate::commands::{Context, terminal_consent};
use crate::failure::Failure;
use crate::gated::{Reviewer, print_listing, print_pins, split_gated};
use crate::output;
use crate::target::{
    EventLog, call_options, connect, host_with_target, json_error, json_object, on_target,
    server_and,
};

// ---- prompts ------------------------------------------------------------------------------

pub async fn prompts(context: &Context, args: &PromptsArgs) -> Result<u8, Failure> {
    if let Some(PromptsAction::Pin {
        target,
        prompts,
        accept_findings,
    }) = &args.action
    {
        let acknowledgement = crate::tools::acknowledgement(*accept_findings);
        return pin_prompts(context, target, prompts, acknowledgement).await;
    }
    let listed = on_target(context, &args.target, async |host, name| {
        let prompts = host.gated_prompts(name).await?;
        // Not listing tools just to leave this server's own names out: a listing records
        // pin mismatches, which a prompt listing must not cause.
        let others = host.other_tools(name).await;
        Ok::<_, gatehouse_host::host::ApiError>((prompts, Reviewer::new(others, &[])))
    })
    .await?;
    let (gated, reviewer) = listed.found;
    let reviewed: Vec<_> = gated
        .into_iter()
        .map(|g| (reviewer.review(Primitive::Prompt, g.prompt), g.status))
        .collect();
    let prompts = split_gated(reviewed);
    print_listing(
        context,
        &listed.name,
        &listed.verdict,
        &listed.headline,
        &prompts,
        ("prompts", "prompt"),
        |prompts| {
            output::print_prompts(&prompts.allowed);
            output::print_gated_prompts(&prompts.hidden, &prompts.blocked);
        },
    );
    Ok(0)
}

async fn pin_prompts(
    context: &Context,
    target: &Target,
    names: &[String],
    acknowledgement: gatehouse_host::host::Acknowledgement,
) -> Result<u8, Failure> {
    let pinned = on_target(context, target, async |host, name| {
        host.approve_prompts_with(name, names, acknowledgement)
            .await
    })
    .await?;
    print_pins(context, &pinned.name, "prompt", &pinned.found);
    Ok(0)
}

// ---- prompt -------------------------------------------------------------------------------

pub async fn prompt(context: &Context, args: &PromptArgs) -> Result<u8, Failure> {
    let (server, prompt) = server_and("prompt", "NAME", &args.words, &args.adhoc)?;
    let prompt = prompt.to_string();
    let arguments = json_object(args.args.as_deref(), "--args", r#"{"topic": "mcp"}"#)?;
    let consent = crate::consent::Consent::new(args.answers.as_deref())?;
    let (host, name, spec) = host_with_target(context, consent.ui(), server, &args.adhoc)?;
    let log = EventLog::start(context, &host);
    connect(context, &host, &name, &spec).await?;
    // The arguments exactly as given: `--args '{}'` is sent as `{}`, no `--args` as none.
    let outcome = host
        .get_prompt_as_given(&name, &prompt, arguments, &call_options())
        .await;
    let _events = log.finish().await;
    host.shutdown().await;
    let notes = consent.notes_told(context.json);
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            let failure = Failure::from(error);
            if context.json {
                let document = json!({"server": name, "prompt": prompt});
                return Ok(json_error(document, &failure, &notes));
            }
            return Err(failure);
        }
    };
    if context.json {
        output::print_json(&json!({
            "server": name,
            "prompt": prompt,
            "rounds": outcome.rounds,
            "description": outcome.description,
            "messages": outcome.messages,
            "elicitations": outcome.elicitations,
            "answers_notes": notes,
        }));
    } else {
        output::print_elicitations(&outcome.elicitations);
        output::print_messages(&outcome.messages);
    }
    Ok(0)
}

// ---- complete -----------------------------------------------------------------------------

pub async fn complete(context: &Context, args: &CompleteArgs) -> Result<u8, Failure> {
    let target = match (&args.prompt, &args.template) {
        (Some(prompt), None) => CompletionTarget::Prompt(prompt.clone()),
        (None, Some(template)) => CompletionTarget::Template(template.clone()),
        _ => {
            return Err(Failure::usage(
                "give exactly one of --prompt NAME or --template URI_TEMPLATE",
            ));
        }
    };
    let mut chosen = HashMap::new();
    for (key, value) in json_object(args.context.as_deref(), "--context", r#"{"topic": "mcp"}"#)?
        .unwrap_or_default()
    {
        match value {
            Value::String(value) => {
                chosen.insert(key, value);
            }
            other => {
                return Err(Failure::usage(format!(
                    "--context: the value of {key:?} must be a string, not {}",
                    output::json_kind(&other)
                )));
            }
        }
    }
    let (host, name, spec) = host_with_target(
        context,
        terminal_consent(),
        args.target.server.as_deref(),
        &args.target.adhoc,
    )?;
    connect(context, &host, &name, &spec).await?;
    let completion = host
        .completion_with(
            &name,
            target,
            &args.argument,
            &args.value,
            chosen,
            &Default::default(),
        )
        .await;
    host.shutdown().await;
    let completion = completion?;
    if context.json {
        output::print_json(&json!({
            "values": completion.values,
            "total": completion.total,
            "hasMore": completion.has_more,
        }));
    } else {
        for value in &completion.values {
            println!("{}", output::safe_line(value));
        }
        if completion.has_more == Some(true) {
            let total = completion
                .total
                .map(|t| format!(" ({t} in all)"))
                .unwrap_or_default();
            eprintln!("gatehouse: the server has more values{total}; type more of the value");
        }
    }
    Ok(0)
}
