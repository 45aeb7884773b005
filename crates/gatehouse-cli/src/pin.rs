//! `servers pin NAME`: a person's own pin of an npx package server (the host decides and
//! writes; this shows the plan and asks).

use std::io::{BufRead, Write};

use serde_json::json;

use crate::commands::{Context, open_host, report, terminal_consent};
use crate::failure::Failure;
use crate::output;

pub async fn run(context: &Context, name: &str, yes: bool) -> Result<u8, Failure> {
    let host = open_host(context, terminal_consent())?;
    let result = pin(context, &host, name, yes).await;
    host.shutdown().await;
    result
}

async fn pin(
    context: &Context,
    host: &gatehouse_host::host::Host,
    name: &str,
    yes: bool,
) -> Result<u8, Failure> {
    let plan = host.plan_pin(name).await?;
    if context.json && !yes {
        output::print_json(&json!({"planned": plan, "pinned": false}));
        return Ok(0);
    }
    if !context.json {
        println!(
            "{name}: {} {}@{} — {} packages ({} files, verified), run by {}",
            plan.ecosystem.as_str(),
            plan.package,
            plan.version,
            plan.preview.closure,
            plan.preview.files,
            plan.preview
                .interpreter
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
        );
        if !plan.args.is_empty() {
            println!("  fixed arguments: {}", plan.args.join(" "));
        }
        if plan.user_args.is_some() {
            println!("  your arguments: existing directories under your home (any, 1 or more)");
        }
        println!("  tools it lists now, each pinned to this definition:");
        for tool in &plan.preview.tools {
            // Server text as data: control and invisible characters shown escaped.
            let description: String =
                output::safe_line(tool["description"].as_str().unwrap_or_default())
                    .chars()
                    .take(100)
                    .collect();
            println!(
                "    {} — {description}",
                output::safe_name(tool["name"].as_str().unwrap_or_default()),
            );
        }
    }
    if !yes && !ask("Pin it? [y/N] ") {
        report(context, json!({"pinned": false}), "Not pinned.");
        return Ok(1);
    }
    let pinned = host.pin(&plan).await?;
    report(
        context,
        json!({"planned": plan, "pinned": pinned}),
        &format!(
            "Pinned by you: {name} runs {}@{} from Gatehouse's store, {} tools allowed (bundle {}). A later version or a changed file is refused until you pin again.",
            plan.package,
            plan.version,
            pinned.tools.len(),
            pinned.bundle
        ),
    );
    Ok(0)
}

/// A yes from the person at the terminal; anything else (or no terminal) is no.
fn ask(question: &str) -> bool {
    print!("{question}");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(n) if n > 0 => matches!(line.trim(), "y" | "Y" | "yes"),
        _ => false,
    }
}
