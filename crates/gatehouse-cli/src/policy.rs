//! `gatehouse policy show|check-url|check-form`: the elicitation policy, tried on one URL or
//! one form schema without any server. The JSON shapes and exit codes are a stable contract:
//! exit 0 when the decision is `allow_elicitation_with_receipt`, 1 for any other decision, 2
//! for usage errors (unreadable file, invalid JSON, bad policy file).

use std::io::Read;
use std::path::Path;

use gatehouse_policy::{
    Assessment, Decision, ElicitationContext, Mode, Policy, ServerStanding, TransportKind,
    assess_form, assess_url,
};
use serde_json::{Value, json};

use crate::cli::PolicyCommand;
use crate::commands::Context;
use crate::failure::Failure;
use crate::output;

/// The policy for this command: `--policy FILE` (or GATEHOUSE_POLICY), else the shipped
/// default. A file that cannot be read or is invalid is `policy_invalid` (exit 2), the code
/// the host (and so the desktop app and every other command) gives for the same file.
pub fn load_policy(path: Option<&Path>) -> Result<Policy, Failure> {
    gatehouse_host::load_policy(path).map_err(|message| Failure {
        code: gatehouse_host::ErrorCode::PolicyInvalid,
        message,
        exit: 2,
    })
}

pub fn run(context: &Context, command: PolicyCommand) -> Result<u8, Failure> {
    let policy = load_policy(context.policy_path.as_deref())?;
    match command {
        PolicyCommand::Show => {
            show(context, &policy);
            Ok(0)
        }
        PolicyCommand::CheckUrl {
            url,
            local_server,
            allow_hosts,
        } => Ok(check_url(
            context,
            &policy,
            &url,
            local_server,
            &allow_hosts,
        )),
        PolicyCommand::CheckForm { schema } => check_form(context, &policy, &schema),
    }
}

fn show(context: &Context, policy: &Policy) {
    let source = match &context.policy_path {
        Some(path) => path.display().to_string(),
        None => "built-in".to_string(),
    };
    if context.json {
        output::print_json(&json!({
            "version": policy.version,
            "source": source,
            "policy": policy,
        }));
    } else {
        println!(
            "policy   {}",
            output::safe(&policy.version).replace('\n', "\\n")
        );
        match &context.policy_path {
            Some(path) => println!("source   {}", path.display()),
            None => println!("source   built-in (policies/default.toml, shipped with gatehouse)"),
        }
    }
}

/// Everything but the content is in order: the commands judge the URL or the schema only.
fn context_for(mode: Mode, local: bool) -> ElicitationContext {
    ElicitationContext {
        standing: ServerStanding::Admitted,
        transport: if local {
            TransportKind::Stdio
        } else {
            TransportKind::Http {
                loopback: false,
                authorized: true,
            }
        },
        mode,
        mode_declared: true,
        tied_to_request: true,
    }
}

fn exit_for(decision: Decision) -> u8 {
    if decision == Decision::AllowElicitationWithReceipt {
        0
    } else {
        1
    }
}

fn print_assessment(assessment: &Assessment) {
    println!("decision: {}", assessment.decision);
    for reason in &assessment.reasons {
        println!(
            "  {}: {}",
            reason.code,
            output::safe(&reason.detail).replace('\n', "\\n")
        );
    }
}

fn check_url(context: &Context, policy: &Policy, url: &str, local: bool, allow: &[String]) -> u8 {
    let assessed = assess_url(policy, &context_for(Mode::Url, local), url, allow);
    let assessment = &assessed.assessment;
    let display = &assessed.display;
    if context.json {
        output::print_json(&json!({
            "decision": assessment.decision.as_str(),
            "reasons": assessment.reasons,
            "display": {
                "full": display.full,
                "host": display.host,
                "host_unicode": display.host_unicode,
            },
        }));
    } else {
        print_assessment(assessment);
        println!("full          {}", output::safe_name(&display.full));
        println!("host          {}", output::safe_name(&display.host));
        println!("host_unicode  {}", output::safe_name(&display.host_unicode));
    }
    exit_for(assessment.decision)
}

/// The schema, and the message when the file holds elicitation params or a whole request.
fn read_schema(path: &Path) -> Result<(Value, Option<String>), Failure> {
    let text = if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Failure::usage(format!("cannot read the schema from stdin: {e}")))?;
        text
    } else {
        std::fs::read_to_string(path).map_err(|e| {
            Failure::usage(format!(
                "cannot read the schema file {}: {e}",
                path.display()
            ))
        })?
    };
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        Failure::usage(format!(
            "the schema file {} is not JSON: {e}",
            path.display()
        ))
    })?;
    // Elicitation params ({message, requestedSchema}) or a whole request ({params: …}) too.
    let params = if value.get("requestedSchema").is_some() {
        Some(&value)
    } else {
        value
            .get("params")
            .filter(|p| p.get("requestedSchema").is_some())
    };
    let message = params
        .and_then(|p| p.get("message"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let nested = params.and_then(|p| p.get("requestedSchema")).cloned();
    Ok((nested.unwrap_or(value), message))
}

fn check_form(context: &Context, policy: &Policy, path: &Path) -> Result<u8, Failure> {
    let (schema, message) = read_schema(path)?;
    let assessed = assess_form(
        policy,
        &context_for(Mode::Form, true),
        message.as_deref(),
        &schema,
    );
    let assessment = &assessed.assessment;
    if context.json {
        let fields: Vec<Value> = assessed
            .fields
            .iter()
            .map(|f| json!({"name": f.name, "sensitive": f.sensitive}))
            .collect();
        output::print_json(&json!({
            "decision": assessment.decision.as_str(),
            "reasons": assessment.reasons,
            "fields": fields,
        }));
    } else {
        print_assessment(assessment);
        if !assessed.fields.is_empty() {
            println!("fields:");
            for field in &assessed.fields {
                let verdict = match (&field.sensitive, &field.matched) {
                    (true, Some(term)) => format!("SENSITIVE ({})", output::safe_name(term)),
                    (true, None) => "SENSITIVE".to_string(),
                    (false, _) => "ok".to_string(),
                };
                println!("  {}  {verdict}", output::safe_name(&field.name));
            }
        }
    }
    Ok(exit_for(assessment.decision))
}
