//! The conformance tools (and the prompt) that need input from the client: elicitation,
//! sampling and roots.
//!
//! Each is one pure step function, [`step`], from what the client answered so far to either
//! the input requests still needed or the final result. The handler runs it in the request's
//! era: in 2026-07-28 the requests become an `input_required` result and the client retries
//! with `inputResponses` and the echoed `requestState`; in 2025-11-25 the handler sends them
//! to the client itself and feeds the answers back into the next step.
//!
//! `requestState` is sealed ([`StateSeal`]): the payload travels in the clear, with a keyed
//! SipHash tag over the tool name and the payload. The key is random per process, so a state
//! is only accepted by the process and the tool that issued it, and any change to it is
//! refused with `-32602`.

use std::hash::{BuildHasher, Hash, Hasher, RandomState};

use serde_json::{Map, Value, json};

/// One tool's (or the prompt's) progress, as far as the client's answers take it.
#[derive(Debug, PartialEq)]
pub enum Step {
    /// These input requests (key, `{"method", "params"}`) are still needed; `state` is the
    /// payload to seal into `requestState`.
    Ask {
        requests: Vec<(String, Value)>,
        state: Option<String>,
    },
    /// The final result, as JSON (a `CallToolResult` or, for the prompt, a `GetPromptResult`).
    Done(Value),
}

/// What a step knows: the client's answers so far, the verified state payload and the
/// capabilities the client declared (as JSON).
pub struct Round<'a> {
    pub responses: &'a Map<String, Value>,
    pub state: Option<&'a str>,
    pub capabilities: &'a Value,
}

/// The tools driven by [`step`].
pub const TOOLS: [&str; 13] = [
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "test_streaming_elicitation",
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities",
];

/// The prompt driven by [`step`].
pub const PROMPT: &str = "test_input_required_result_prompt";

/// The capability a client must declare for an input request `{"method", ...}`.
pub fn required_capability(request: &Value) -> &'static str {
    match request.get("method").and_then(Value::as_str) {
        Some("sampling/createMessage") => "sampling",
        Some("roots/list") => "roots",
        _ => "elicitation",
    }
}

fn elicitation(message: &str, schema: Value) -> Value {
    json!({"method": "elicitation/create",
           "params": {"mode": "form", "message": message, "requestedSchema": schema}})
}

fn one_string_form(message: &str, field: &str) -> Value {
    elicitation(
        message,
        json!({"type": "object", "properties": {field: {"type": "string"}}, "required": [field]}),
    )
}

fn sampling(text: &str, max_tokens: u32) -> Value {
    json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        "maxTokens": max_tokens,
    }})
}

/// No `params`: rmcp's `roots/list` request has none, so this is what reaches the wire.
fn roots() -> Value {
    json!({"method": "roots/list"})
}

fn text_result(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}]})
}

fn ask(key: &str, request: Value, state: Option<&str>) -> Step {
    Step::Ask {
        requests: vec![(key.to_owned(), request)],
        state: state.map(str::to_owned),
    }
}

/// An elicitation answer: its action and content. Anything that is not an object with a
/// string `action` is invalid input (`-32602`).
fn elicit_answer<'a>(key: &str, value: &'a Value) -> Result<(&'a str, &'a Value), String> {
    let action = value
        .as_object()
        .and_then(|answer| answer.get("action"))
        .and_then(Value::as_str)
        .filter(|action| ["accept", "decline", "cancel"].contains(action))
        .ok_or_else(|| format!("inputResponses.{key} is not an elicitation result"))?;
    Ok((action, value.get("content").unwrap_or(&Value::Null)))
}

/// The text of a sampling answer (`CreateMessageResult`).
fn sampling_text<'a>(key: &str, value: &'a Value) -> Result<&'a str, String> {
    let content = value
        .as_object()
        .and_then(|answer| answer.get("content"))
        .ok_or_else(|| format!("inputResponses.{key} is not a sampling result"))?;
    // A single block or, since 2025-11-25, possibly an array of blocks.
    let block = content
        .as_array()
        .and_then(|blocks| blocks.first())
        .unwrap_or(content);
    Ok(block.get("text").and_then(Value::as_str).unwrap_or(""))
}

/// The root URIs of a `roots/list` answer.
fn root_uris(key: &str, value: &Value) -> Result<Vec<String>, String> {
    let roots = value
        .get("roots")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("inputResponses.{key} is not a roots/list result"))?;
    Ok(roots
        .iter()
        .filter_map(|root| root.get("uri").and_then(Value::as_str))
        .map(str::to_owned)
        .collect())
}

fn content_string<'a>(content: &'a Value, field: &str) -> Option<&'a str> {
    content.get(field).and_then(Value::as_str)
}

/// The SEP-1034 form: a default for every primitive type.
pub fn sep1034_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "description": "User status",
                       "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "description": "Verified user", "default": true},
        },
    })
}

/// The SEP-1330 form: all five enum kinds.
pub fn sep1330_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                           "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array",
                              "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"},
            ]}},
        },
    })
}

fn user_response_form(message: &str) -> Value {
    elicitation(
        message,
        json!({
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }),
    )
}

/// One elicitation, answered with `Elicitation completed: action=..., content=...`.
fn single_elicitation(
    round: &Round<'_>,
    key: &str,
    request: Value,
    prefix: &str,
) -> Result<Step, String> {
    match round.responses.get(key) {
        None => Ok(ask(key, request, None)),
        Some(answer) => {
            let (action, content) = elicit_answer(key, answer)?;
            Ok(Step::Done(text_result(format!(
                "{prefix}action={action}, content={content}"
            ))))
        }
    }
}

/// Run one step of `name` (a tool of [`TOOLS`] or [`PROMPT`]) with `args`.
///
/// `Err` is an invalid-params message: an answer that is not what was asked for.
pub fn step(name: &str, args: &Map<String, Value>, round: &Round<'_>) -> Result<Step, String> {
    let responses = round.responses;
    match name {
        "test_sampling" => {
            let prompt = args
                .get("prompt")
                .and_then(Value::as_str)
                .ok_or("test_sampling needs the string argument prompt")?;
            match responses.get("sampling") {
                None => Ok(ask("sampling", sampling(prompt, 100), None)),
                Some(answer) => Ok(Step::Done(text_result(format!(
                    "LLM response: {}",
                    sampling_text("sampling", answer)?
                )))),
            }
        }
        "test_elicitation" => {
            let message = args
                .get("message")
                .and_then(Value::as_str)
                .ok_or("test_elicitation needs the string argument message")?;
            single_elicitation(
                round,
                "user_response",
                user_response_form(message),
                "User response: ",
            )
        }
        "test_elicitation_sep1034_defaults" => single_elicitation(
            round,
            "defaults",
            elicitation("Please review your details", sep1034_schema()),
            "Elicitation completed: ",
        ),
        "test_elicitation_sep1330_enums" => single_elicitation(
            round,
            "enums",
            elicitation("Please choose your options", sep1330_schema()),
            "Elicitation completed: ",
        ),
        "test_streaming_elicitation" => single_elicitation(
            round,
            "user_name",
            one_string_form("What is your name?", "name"),
            "Elicitation completed: ",
        ),
        "test_input_required_result_elicitation" => match responses.get("user_name") {
            None => Ok(ask(
                "user_name",
                one_string_form("What is your name?", "name"),
                None,
            )),
            Some(answer) => {
                let (action, content) = elicit_answer("user_name", answer)?;
                Ok(Step::Done(text_result(
                    match content_string(content, "name") {
                        Some(name) if action == "accept" => format!("Hello, {name}!"),
                        _ => format!("No name given (action={action})"),
                    },
                )))
            }
        },
        "test_input_required_result_sampling" => match responses.get("capital_question") {
            None => Ok(ask(
                "capital_question",
                sampling("What is the capital of France?", 100),
                None,
            )),
            Some(answer) => Ok(Step::Done(text_result(format!(
                "The model said: {}",
                sampling_text("capital_question", answer)?
            )))),
        },
        "test_input_required_result_list_roots" => match responses.get("client_roots") {
            None => Ok(ask("client_roots", roots(), None)),
            Some(answer) => {
                let uris = root_uris("client_roots", answer)?;
                Ok(Step::Done(text_result(format!(
                    "Client roots: {}",
                    uris.join(", ")
                ))))
            }
        },
        "test_input_required_result_request_state"
        | "test_input_required_result_tampered_state" => {
            let confirm = || {
                elicitation(
                    "Please confirm",
                    json!({"type": "object", "properties": {"ok": {"type": "boolean"}},
                           "required": ["ok"]}),
                )
            };
            match (round.state, responses.get("confirm")) {
                (Some("confirm"), Some(answer)) => {
                    let (action, content) = elicit_answer("confirm", answer)?;
                    let ok = content.get("ok").and_then(Value::as_bool);
                    Ok(Step::Done(text_result(format!(
                        "state-ok: action={action}, ok={}",
                        ok.map_or("unset".to_owned(), |ok| ok.to_string())
                    ))))
                }
                // No (or another step's) state, or no answer yet: ask (again).
                _ => Ok(ask("confirm", confirm(), Some("confirm"))),
            }
        }
        "test_input_required_result_multiple_inputs" => {
            let wanted = [
                ("user_name", one_string_form("What is your name?", "name")),
                ("greeting", sampling("Generate a greeting", 50)),
                ("client_roots", roots()),
            ];
            let missing: Vec<(String, Value)> = wanted
                .into_iter()
                .filter(|(key, _)| round.state != Some("multiple") || !responses.contains_key(*key))
                .map(|(key, request)| (key.to_owned(), request))
                .collect();
            if !missing.is_empty() {
                return Ok(Step::Ask {
                    requests: missing,
                    state: Some("multiple".to_owned()),
                });
            }
            let (action, content) = elicit_answer("user_name", &responses["user_name"])?;
            let greeting = sampling_text("greeting", &responses["greeting"])?;
            let uris = root_uris("client_roots", &responses["client_roots"])?;
            Ok(Step::Done(text_result(format!(
                "name: {} (action={action}); greeting: {greeting}; roots: {}",
                content_string(content, "name").unwrap_or("(none)"),
                uris.join(", ")
            ))))
        }
        "test_input_required_result_multi_round" => {
            let step1 = || one_string_form("Step 1: What is your name?", "name");
            match round.state {
                Some("round1") => match responses.get("step1") {
                    None => Ok(ask("step1", step1(), Some("round1"))),
                    Some(answer) => {
                        let (_, content) = elicit_answer("step1", answer)?;
                        let name = content_string(content, "name").unwrap_or("(none)");
                        Ok(ask(
                            "step2",
                            one_string_form("Step 2: What is your favorite color?", "color"),
                            Some(&format!("round2:{name}")),
                        ))
                    }
                },
                Some(state) if state.starts_with("round2:") => {
                    let name = &state["round2:".len()..];
                    match responses.get("step2") {
                        None => Ok(ask(
                            "step2",
                            one_string_form("Step 2: What is your favorite color?", "color"),
                            Some(state),
                        )),
                        Some(answer) => {
                            let (_, content) = elicit_answer("step2", answer)?;
                            let color = content_string(content, "color").unwrap_or("(none)");
                            Ok(Step::Done(text_result(format!(
                                "{name}'s favorite color is {color}"
                            ))))
                        }
                    }
                }
                _ => Ok(ask("step1", step1(), Some("round1"))),
            }
        }
        "test_input_required_result_capabilities" => {
            let declared = |capability: &str| round.capabilities.get(capability).is_some();
            let wanted = [
                ("user_name", one_string_form("What is your name?", "name")),
                ("greeting", sampling("Generate a greeting", 50)),
                ("client_roots", roots()),
            ];
            let needed: Vec<(String, Value)> = wanted
                .into_iter()
                .filter(|(_, request)| declared(required_capability(request)))
                .map(|(key, request)| (key.to_owned(), request))
                .collect();
            let missing: Vec<(String, Value)> = needed
                .iter()
                .filter(|(key, _)| !responses.contains_key(key))
                .cloned()
                .collect();
            if !missing.is_empty() {
                return Ok(Step::Ask {
                    requests: missing,
                    state: None,
                });
            }
            let keys: Vec<&str> = needed.iter().map(|(key, _)| key.as_str()).collect();
            Ok(Step::Done(text_result(format!(
                "received inputs for: [{}]",
                keys.join(", ")
            ))))
        }
        PROMPT => match responses.get("user_context") {
            None => Ok(ask(
                "user_context",
                one_string_form("What context should the prompt use?", "context"),
                None,
            )),
            Some(answer) => {
                let (action, content) = elicit_answer("user_context", answer)?;
                let context = content_string(content, "context").unwrap_or("(none)");
                Ok(Step::Done(json!({
                    "description": "A prompt built from the user's context",
                    "messages": [{"role": "user", "content": {"type": "text",
                        "text": format!("Use this context (action={action}): {context}")}}],
                })))
            }
        },
        other => Err(format!("{other} takes no input")),
    }
}

/// Seals and opens `requestState` values; see the module docs.
#[derive(Clone, Default)]
pub struct StateSeal {
    key: RandomState,
}

impl StateSeal {
    fn tag(&self, scope: &str, payload: &str) -> u64 {
        let mut hasher = self.key.build_hasher();
        scope.hash(&mut hasher);
        payload.hash(&mut hasher);
        hasher.finish()
    }

    /// `hex(payload).hex(tag)`, valid for `scope` (the tool or prompt name) only.
    pub fn seal(&self, scope: &str, payload: &str) -> String {
        format!("{}.{:016x}", hex::encode(payload), self.tag(scope, payload))
    }

    /// The payload of a state this seal issued for `scope`, or `None`.
    pub fn open(&self, scope: &str, state: &str) -> Option<String> {
        let (payload, tag) = state.split_once('.')?;
        let payload = String::from_utf8(hex::decode(payload).ok()?).ok()?;
        let tag = u64::from_str_radix(tag, 16)
            .ok()
            .filter(|_| tag.len() == 16)?;
        (tag == self.tag(scope, &payload)).then_some(payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, responses: Value, state: Option<&str>) -> Result<Step, String> {
        let responses = responses.as_object().unwrap().clone();
        let capabilities = json!({"sampling": {}, "elicitation": {}, "roots": {}});
        step(
            name,
            &Map::new(),
            &Round {
                responses: &responses,
                state,
                capabilities: &capabilities,
            },
        )
    }

    #[test]
    fn sealed_states_open_only_unchanged_and_in_scope() {
        let seal = StateSeal::default();
        let state = seal.seal("tool_a", "round2:Alice");
        assert_eq!(seal.open("tool_a", &state).as_deref(), Some("round2:Alice"));
        assert_eq!(seal.open("tool_b", &state), None);
        assert_eq!(seal.open("tool_a", &format!("{state}-TAMPERED")), None);
        assert_eq!(seal.open("tool_a", "round1"), None);
        // Another process (another key) refuses it too.
        assert_eq!(StateSeal::default().open("tool_a", &state), None);
    }

    #[test]
    fn multi_round_walks_three_rounds() {
        let name = "test_input_required_result_multi_round";
        let Step::Ask { requests, state } = run(name, json!({}), None).unwrap() else {
            panic!("round 1 asks");
        };
        assert_eq!(requests[0].0, "step1");
        let answer = json!({"step1": {"action": "accept", "content": {"name": "Alice"}}});
        let Step::Ask { requests, state } = run(name, answer, state.as_deref()).unwrap() else {
            panic!("round 2 asks");
        };
        assert_eq!(
            (requests[0].0.as_str(), state.as_deref()),
            ("step2", Some("round2:Alice"))
        );
        let answer = json!({"step2": {"action": "accept", "content": {"color": "blue"}}});
        assert_eq!(
            run(name, answer, state.as_deref()).unwrap(),
            Step::Done(text_result("Alice's favorite color is blue"))
        );
    }

    #[test]
    fn wrong_keys_are_asked_again_and_malformed_answers_refused() {
        let name = "test_input_required_result_elicitation";
        let wrong = json!({"wrong_key": {"action": "accept", "content": {}}});
        assert!(matches!(run(name, wrong, None), Ok(Step::Ask { .. })));
        assert!(run(name, json!({"user_name": 12345}), None).is_err());
        let extra = json!({"user_name": {"action": "accept", "content": {"name": "Alice"}},
                           "extra": {"action": "accept"}});
        assert_eq!(
            run(name, extra, None).unwrap(),
            Step::Done(text_result("Hello, Alice!"))
        );
    }

    #[test]
    fn capabilities_limit_what_is_asked() {
        let responses = Map::new();
        let capabilities = json!({"sampling": {}});
        let Step::Ask { requests, .. } = step(
            "test_input_required_result_capabilities",
            &Map::new(),
            &Round {
                responses: &responses,
                state: None,
                capabilities: &capabilities,
            },
        )
        .unwrap() else {
            panic!("asks");
        };
        let methods: Vec<&str> = requests
            .iter()
            .map(|(_, request)| request["method"].as_str().unwrap())
            .collect();
        assert_eq!(methods, ["sampling/createMessage"]);
    }
}
