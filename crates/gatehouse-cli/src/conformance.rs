//! `gatehouse conformance URL`: the client the official MCP conformance suite drives.
//!
//! The suite starts a scenario server, runs this command with the server's URL, and scores
//! what it sees on the wire. The era comes from `MCP_CONFORMANCE_PROTOCOL_VERSION` (never
//! auto: several legacy mocks answer `server/discover` with an empty success), the scenario
//! from `MCP_CONFORMANCE_SCENARIO`, and per-scenario data from `MCP_CONFORMANCE_CONTEXT`.
//! This is the only mode in which elicitations are answered without a person: form
//! elicitations are accepted with the schema's defaults, because that is what the suite checks.
//!
//! Every scenario goes through a `Host`, as every other command does, but one opened with the
//! ephemeral preset (`HostOptions::ephemeral`): the suite's mocks run under a trust, approvals
//! and suspensions of their own in a scratch directory, never the user's (see `run`). The
//! per-scenario part only decides which requests to make.

use std::sync::Arc;

use gatehouse_host::host::{Answering, Host, HostOptions};
// The one front end that drives a connection request by request: the suite scores the MRTR
// rounds themselves (see `request_state`), which `Host` deliberately does not offer.
use gatehouse_host::protocol::{self, Connection, MAX_INPUT_ROUNDS, Round};
use gatehouse_host::{
    CallOptions, Era, EraPreference, HostError, ScriptedConsent, ServerSpec, system_clock,
};
use rmcp::model::{CallToolRequestParams, JsonObject, Tool};
use serde_json::{Map, Value, json};

use crate::commands::{Context, Failure};

mod auth;
use crate::output::Spinner;

/// The name the suite's server has on the conformance host (in the audit log and traffic).
const SERVER: &str = "conformance";

pub async fn run(context: &Context, url: &str) -> Result<u8, Failure> {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").map_err(|_| {
        Failure::usage(
            "MCP_CONFORMANCE_SCENARIO is not set; this command is run by the MCP conformance suite",
        )
    })?;
    let version =
        std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_else(|_| "2025-11-25".into());
    let era = if version.as_str() >= Era::V2026_07_28.as_str() {
        Era::V2026_07_28
    } else {
        Era::V2025_11_25
    };
    let scenario_context: Value = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(raw) => serde_json::from_str(&raw)
            .map_err(|e| Failure::usage(format!("MCP_CONFORMANCE_CONTEXT is not JSON: {e}")))?,
        Err(_) => Value::Null,
    };
    eprintln!("conformance: scenario {scenario}, protocol {version} (era {era})");

    let mut spec = ServerSpec::adhoc_http(url)?;
    // The suite's scenario servers are unattested local mocks: this client runs on a host of
    // its own in the warn posture with no trust roots and approves the tools it is shown (in
    // its scratch directory, never in the user's approvals). Admission and the tool gate still
    // run, and audit, every call; they just let the mocks through. A locked admin bundle
    // forbids exactly that, so under one this command refuses to run.
    let installed = crate::commands::load_trust(context)?;
    if let Some(label) = installed.locked_by() {
        return Err(Failure {
            code: gatehouse_host::ErrorCode::PostureForbids,
            message: format!(
                "the admin bundle {label} is locked (deny-by-default), and the conformance client talks to unattested servers; run the suite on a machine without a locked bundle"
            ),
            exit: 1,
        });
    }
    let mut options = HostOptions::ephemeral(system_clock())?;
    options.audit_file = Some(context.audit_path.clone());
    options.request_era = EraPreference::Only(era);
    options.answering = Answering::SchemaDefaults;
    options.connect_timeout = context.connect_timeout;
    options.request_timeout = context.request_timeout;
    options.traffic_log = context.traffic_log.clone();
    let mut secrets = context.secrets.clone();
    // Authorization scenarios: the host's own sign-in, with a headless user and browser and
    // an in-memory keychain (never the user's).
    if auth::is_auth_scenario(&scenario) {
        secrets = auth::prepare(&mut spec, &mut options, &scenario_context)?;
    }
    // Nobody is asked: elicitations are answered with the schema's defaults (`Answering`),
    // without the broker this consent UI would serve.
    let host = Host::open(
        options,
        secrets,
        Arc::new(ScriptedConsent::new(Vec::new())),
        Arc::new(|_| {}),
    )?;
    host.add_adhoc(SERVER, spec.clone());
    let outcome = match connect(context, &host, &spec).await {
        Ok(connection) => {
            // Approved through the host, as every front end approves.
            let outcome = match host.approve_tools(SERVER, &[]).await {
                Ok(_) => exercise(&host, &connection, &scenario, &scenario_context).await,
                Err(e) => Err(e.into()),
            };
            drop(connection);
            outcome
        }
        Err(failure) => Err(failure),
    };
    // Closes the connection and makes every audit record durable.
    host.shutdown().await;
    outcome?;
    eprintln!("conformance: done");
    Ok(0)
}

/// Connects to the suite's server on the conformance host (admission first).
async fn connect(
    context: &Context,
    host: &Host,
    spec: &ServerSpec,
) -> Result<Arc<Connection>, Failure> {
    let spinner = Spinner::start(
        &format!("connecting to the conformance server ({})", spec.describe()),
        context.json,
    );
    let result = protocol::connection(host, SERVER).await;
    spinner.stop();
    let connection = result?;
    let admission = crate::commands::Admission::of(connection.verdict());
    crate::commands::warn_not_admitted(context, SERVER, &admission);
    Ok(connection)
}

async fn exercise(
    host: &Host,
    connection: &Connection,
    scenario: &str,
    context: &Value,
) -> Result<(), Failure> {
    let tools = connection.tools().await?;
    eprintln!("conformance: {} tool(s): {}", tools.len(), names(&tools));
    match scenario {
        // Listing is the test: the network `$ref` in the schema must never be fetched.
        "json-schema-ref-no-deref" => Ok(()),
        "sep-2322-client-request-state" => Ok(request_state(connection).await?),
        "json-schema-2020-12-preservation" => {
            let focal = tools
                .iter()
                .find(|t| t.name == "json_schema_2020_12_tool")
                .ok_or_else(|| missing_tool("json_schema_2020_12_tool"))?;
            let arguments = json!({"schema": Value::Object((*focal.input_schema).clone())});
            Ok(call(connection, "json_schema_echo", object(arguments)).await?)
        }
        "http-standard-headers" => {
            call_all(connection, &tools).await?;
            // Approved like the tools: in memory, under this mode's own warn posture.
            let uris: Vec<String> = connection
                .resources()
                .await?
                .into_iter()
                .map(|r| r.uri)
                .collect();
            host.approve_resources(SERVER, &uris, &[]).await?;
            for uri in &uris {
                connection
                    .read_resource(uri, &CallOptions::default())
                    .await?;
            }
            host.approve_prompts(SERVER, &[]).await?;
            for prompt in connection.prompts().await? {
                connection
                    .get_prompt(&prompt.name, None, &CallOptions::default())
                    .await?;
            }
            Ok(())
        }
        _ => match context.get("toolCalls").and_then(Value::as_array) {
            Some(calls) => {
                for planned in calls {
                    let name = planned["name"].as_str().unwrap_or_default();
                    call(
                        connection,
                        name,
                        planned.get("arguments").cloned().and_then(object),
                    )
                    .await?;
                }
                Ok(())
            }
            None => Ok(call_all(connection, &tools).await?),
        },
    }
}

fn names(tools: &[Tool]) -> String {
    tools
        .iter()
        .map(|t| t.name.as_ref())
        .collect::<Vec<_>>()
        .join(", ")
}

fn missing_tool(name: &str) -> HostError {
    HostError::Protocol {
        server: "conformance".into(),
        what: "tools/list".into(),
        detail: format!("no tool named {name}"),
    }
}

fn object(value: Value) -> Option<JsonObject> {
    match value {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

async fn call(
    connection: &Connection,
    name: &str,
    arguments: Option<JsonObject>,
) -> Result<(), HostError> {
    let outcome = connection
        .call_tool(name, arguments, &CallOptions::default())
        .await?;
    eprintln!(
        "conformance: {name} -> {} round(s), isError={}",
        outcome.rounds,
        outcome.is_error()
    );
    Ok(())
}

/// Calls every tool the host kept (tools with invalid `x-mcp-header` annotations were already
/// dropped), with arguments made from each schema's required properties.
async fn call_all(connection: &Connection, tools: &[Tool]) -> Result<(), HostError> {
    for tool in tools {
        call(
            connection,
            &tool.name,
            Some(sample_arguments(&tool.input_schema)),
        )
        .await?;
    }
    Ok(())
}

/// A value of the right type for every required property: the default or first enum value
/// when the schema gives one.
fn sample_arguments(schema: &JsonObject) -> JsonObject {
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut arguments = Map::new();
    for name in required.iter().filter_map(Value::as_str) {
        let property = properties
            .and_then(|p| p.get(name))
            .cloned()
            .unwrap_or(Value::Null);
        let value = property
            .get("default")
            .cloned()
            .or_else(|| property.get("enum").and_then(|e| e.get(0)).cloned())
            .unwrap_or_else(|| match property.get("type").and_then(Value::as_str) {
                Some("integer") | Some("number") => json!(2),
                Some("boolean") => json!(true),
                Some("array") => json!([]),
                Some("object") => json!({}),
                _ => json!("conformance"),
            });
        arguments.insert(name.to_string(), value);
    }
    arguments
}

/// SEP-2322: a retry echoes `requestState` byte for byte under a new id, an unrelated call in
/// between carries none of it, a round without state retries without the key, and a result
/// without `resultType` is complete.
async fn request_state(connection: &Connection) -> Result<(), HostError> {
    let options = CallOptions::default();
    let permit = connection.authorize("test_mrtr_echo_state", None).await?;
    let first = connection
        .call_tool_round(
            &permit,
            CallToolRequestParams::new("test_mrtr_echo_state"),
            &options,
        )
        .await?;
    // An unrelated request while the first one waits for input: it must not share its state.
    call(connection, "test_mrtr_unrelated", None).await?;
    if let Round::InputRequired {
        requests,
        request_state,
    } = first
    {
        let mut retry = CallToolRequestParams::new("test_mrtr_echo_state");
        retry.input_responses =
            Some(connection.answer_input_requests(requests, "tools/call test_mrtr_echo_state")?);
        retry.request_state = request_state;
        let mut round = connection
            .call_tool_round(&permit, retry.clone(), &options)
            .await?;
        let mut rounds = 1;
        while let Round::InputRequired {
            requests,
            request_state,
        } = round
        {
            rounds += 1;
            if rounds > MAX_INPUT_ROUNDS {
                break;
            }
            retry.input_responses = Some(
                connection.answer_input_requests(requests, "tools/call test_mrtr_echo_state")?,
            );
            retry.request_state = request_state;
            round = connection
                .call_tool_round(&permit, retry.clone(), &options)
                .await?;
        }
    }
    call(connection, "test_mrtr_no_state", None).await?;
    call(connection, "test_mrtr_no_result_type", None).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_arguments_cover_required_properties_only() {
        let schema = object(json!({"type": "object", "properties": {
            "a": {"type": "number"}, "b": {"type": "number"}, "opt": {"type": "string"},
            "mode": {"type": "string", "enum": ["x", "y"]}, "n": {"type": "integer", "default": 7}
        }, "required": ["a", "b", "mode", "n"]}))
        .unwrap();
        assert_eq!(
            Value::Object(sample_arguments(&schema)),
            json!({"a": 2, "b": 2, "mode": "x", "n": 7})
        );
    }
}
