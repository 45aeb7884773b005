//! The fixed data of the conformance profile: texts, media, tool and prompt definitions and
//! resources, exactly as the conformance suite's server scenarios describe them.

use serde_json::{Value, json};

/// A 1x1 red pixel, PNG, base64.
pub const RED_PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

/// One millisecond of silence: 8 kHz, mono, 8-bit PCM WAV, base64.
pub const SILENCE_WAV: &str =
    "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

pub const SIMPLE_TEXT: &str = "This is a simple text response for testing.";
pub const EMBEDDED_RESOURCE_URI: &str = "test://embedded-resource";
pub const EMBEDDED_RESOURCE_TEXT: &str = "This is an embedded resource content.";
pub const ERROR_TEXT: &str = "This tool intentionally returns an error for testing";
pub const LOG_MESSAGES: [&str; 3] = [
    "Tool execution started",
    "Tool processing data",
    "Tool execution completed",
];

pub const STATIC_TEXT_URI: &str = "test://static-text";
pub const STATIC_TEXT: &str = "This is the content of the static text resource.";
pub const STATIC_BINARY_URI: &str = "test://static-binary";
pub const WATCHED_URI: &str = "test://watched-resource";
pub const WATCHED_TEXT: &str = "This is a watched resource.";
pub const TEMPLATE: &str = "test://template/{id}/data";
const TEMPLATE_PREFIX: &str = "test://template/";
const TEMPLATE_SUFFIX: &str = "/data";

/// The tool the pending `json-schema-2020-12` scenario looks for.
pub const JSON_SCHEMA_TOOL: &str = "json_schema_2020_12_tool";

fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}

fn tool(name: &str, description: &str, input_schema: Value) -> Value {
    json!({"name": name, "description": description, "inputSchema": input_schema})
}

fn string_arg(name: &str, description: &str) -> Value {
    json!({
        "type": "object",
        "properties": {name: {"type": "string", "description": description}},
        "required": [name],
    })
}

/// Every tool, in the order `tools/list` gives them (always the same order).
pub fn tools() -> Vec<Value> {
    vec![
        tool("test_simple_text", "Returns a fixed text.", no_args()),
        tool("test_image_content", "Returns a 1x1 PNG image.", no_args()),
        tool("test_audio_content", "Returns a short WAV clip.", no_args()),
        tool(
            "test_embedded_resource",
            "Returns an embedded text resource.",
            no_args(),
        ),
        tool(
            "test_multiple_content_types",
            "Returns text, an image and an embedded resource.",
            no_args(),
        ),
        tool(
            "test_tool_with_logging",
            "Sends three info log messages 50 ms apart, as the log level allows.",
            no_args(),
        ),
        tool(
            "test_error_handling",
            "Always returns a tool error.",
            no_args(),
        ),
        tool(
            "test_tool_with_progress",
            "Reports progress 0, 50 and 100 of 100, 50 ms apart, when given a progressToken.",
            no_args(),
        ),
        tool(
            "test_sampling",
            "Asks the client for an LLM completion of the prompt.",
            string_arg("prompt", "The prompt to send to the LLM"),
        ),
        tool(
            "test_elicitation",
            "Asks the user for a username and an email address.",
            string_arg("message", "The message to show the user"),
        ),
        tool(
            "test_elicitation_sep1034_defaults",
            "Asks the user with a form whose fields all have defaults (SEP-1034).",
            no_args(),
        ),
        tool(
            "test_elicitation_sep1330_enums",
            "Asks the user with a form using all five enum kinds (SEP-1330).",
            no_args(),
        ),
        tool(
            "test_missing_capability",
            "Needs the client's sampling capability; fails with -32021 without it.",
            no_args(),
        ),
        tool(
            "test_streaming_elicitation",
            "Asks the user for a name (input_required in 2026-07-28).",
            no_args(),
        ),
        tool(
            "test_logging_tool",
            "Logs one info message if the request allows it, then returns.",
            no_args(),
        ),
        tool(
            "test_trigger_tool_change",
            "Announces a tools list change to subscribers (the list itself is fixed).",
            no_args(),
        ),
        tool(
            "test_trigger_prompt_change",
            "Announces a prompts list change to subscribers (the list itself is fixed).",
            no_args(),
        ),
        tool(
            "test_input_required_result_elicitation",
            "Asks for the user's name and greets them.",
            no_args(),
        ),
        tool(
            "test_input_required_result_sampling",
            "Asks the client's LLM for the capital of France.",
            no_args(),
        ),
        tool(
            "test_input_required_result_list_roots",
            "Asks the client for its roots and lists them.",
            no_args(),
        ),
        tool(
            "test_input_required_result_request_state",
            "Asks for a confirmation and checks its requestState.",
            no_args(),
        ),
        tool(
            "test_input_required_result_multiple_inputs",
            "Asks for an elicitation, a sampling and the roots at once.",
            no_args(),
        ),
        tool(
            "test_input_required_result_multi_round",
            "Asks for a name, then for a favourite colour.",
            no_args(),
        ),
        tool(
            "test_input_required_result_tampered_state",
            "Asks for a confirmation with integrity-protected requestState.",
            no_args(),
        ),
        tool(
            "test_input_required_result_capabilities",
            "Asks only for inputs whose capability the client declared.",
            no_args(),
        ),
        tool(
            JSON_SCHEMA_TOOL,
            "Tool with JSON Schema 2020-12 features",
            json_schema_2020_12(),
        ),
    ]
}

/// The input schema of [`JSON_SCHEMA_TOOL`], with every keyword the scenario checks.
fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            },
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false,
    })
}

/// The prompts `prompts/list` gives.
pub fn prompts() -> Value {
    json!([
        {"name": "test_simple_prompt", "description": "A prompt without arguments."},
        {"name": "test_prompt_with_arguments", "description": "A prompt with two arguments.",
         "arguments": [
             {"name": "arg1", "description": "First test argument", "required": true},
             {"name": "arg2", "description": "Second test argument", "required": true},
         ]},
        {"name": "test_prompt_with_embedded_resource",
         "description": "A prompt embedding the resource named.",
         "arguments": [
             {"name": "resourceUri", "description": "URI of the resource to embed",
              "required": true},
         ]},
        {"name": "test_prompt_with_image", "description": "A prompt with an image."},
        {"name": "test_input_required_result_prompt",
         "description": "A prompt that first asks the user for context."},
    ])
}

pub fn resources() -> Value {
    json!([
        {"uri": STATIC_TEXT_URI, "name": "static-text", "description": "A static text resource.",
         "mimeType": "text/plain"},
        {"uri": STATIC_BINARY_URI, "name": "static-binary",
         "description": "A static binary resource (a PNG image).", "mimeType": "image/png"},
        {"uri": WATCHED_URI, "name": "watched-resource",
         "description": "A resource clients may subscribe to.", "mimeType": "text/plain"},
    ])
}

pub fn resource_templates() -> Value {
    json!([
        {"uriTemplate": TEMPLATE, "name": "template-data",
         "description": "JSON data for any id.", "mimeType": "application/json"},
    ])
}

/// The contents of the resource at `uri`, or `None` when there is no such resource.
pub fn read_resource(uri: &str) -> Option<Value> {
    let content = match uri {
        STATIC_TEXT_URI => json!({"uri": uri, "mimeType": "text/plain", "text": STATIC_TEXT}),
        STATIC_BINARY_URI => json!({"uri": uri, "mimeType": "image/png", "blob": RED_PIXEL_PNG}),
        WATCHED_URI => json!({"uri": uri, "mimeType": "text/plain", "text": WATCHED_TEXT}),
        _ => {
            let id = template_id(uri)?;
            let data =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            json!({"uri": uri, "mimeType": "application/json", "text": data.to_string()})
        }
    };
    Some(json!({"contents": [content]}))
}

/// The `{id}` of a URI matching [`TEMPLATE`]: one non-empty path segment.
pub fn template_id(uri: &str) -> Option<&str> {
    let id = uri
        .strip_prefix(TEMPLATE_PREFIX)?
        .strip_suffix(TEMPLATE_SUFFIX)?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// Completion candidates for an argument, filtered by the prefix typed so far.
pub fn complete(reference: &str, argument: &str, prefix: &str) -> Vec<String> {
    let candidates: &[&str] = match (reference, argument) {
        ("test_prompt_with_arguments", "arg1") => &["paris", "park", "party", "test1", "test2"],
        ("test_prompt_with_arguments", "arg2") => &["world", "wonder", "test"],
        (TEMPLATE, "id") => &["1", "2", "3", "123"],
        _ => &[],
    };
    candidates
        .iter()
        .filter(|candidate| candidate.starts_with(prefix))
        .map(|candidate| (*candidate).to_owned())
        .collect()
}

/// The result of a prompt that takes no input request, or `Err` with the message of an
/// invalid-params error.
pub fn get_prompt(name: &str, arguments: &serde_json::Map<String, Value>) -> Result<Value, String> {
    let argument = |key: &str| {
        arguments
            .get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("prompt {name} needs the string argument {key}"))
    };
    let user = |content: Value| json!({"role": "user", "content": content});
    let text = |text: &str| json!({"type": "text", "text": text});
    let messages = match name {
        "test_simple_prompt" => vec![user(text("This is a simple prompt for testing."))],
        "test_prompt_with_arguments" => {
            let (arg1, arg2) = (argument("arg1")?, argument("arg2")?);
            vec![user(text(&format!(
                "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
            )))]
        }
        "test_prompt_with_embedded_resource" => {
            let uri = argument("resourceUri")?;
            vec![
                user(json!({"type": "resource", "resource": {
                    "uri": uri, "mimeType": "text/plain",
                    "text": "Embedded resource content for testing.",
                }})),
                user(text("Please process the embedded resource above.")),
            ]
        }
        "test_prompt_with_image" => vec![
            user(json!({"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"})),
            user(text("Please analyze the image above.")),
        ],
        _ => return Err(format!("unknown prompt {name}")),
    };
    Ok(json!({"description": format!("The {name} prompt"), "messages": messages}))
}

/// The results of the tools that need neither input requests nor notifications.
pub fn simple_tool_result(name: &str) -> Option<Value> {
    let embedded = json!({"type": "resource", "resource": {
        "uri": EMBEDDED_RESOURCE_URI, "mimeType": "text/plain", "text": EMBEDDED_RESOURCE_TEXT,
    }});
    let image = json!({"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"});
    Some(match name {
        "test_simple_text" => json!({"content": [{"type": "text", "text": SIMPLE_TEXT}]}),
        "test_image_content" => json!({"content": [image]}),
        "test_audio_content" => {
            json!({"content": [{"type": "audio", "data": SILENCE_WAV, "mimeType": "audio/wav"}]})
        }
        "test_embedded_resource" => json!({"content": [embedded]}),
        "test_multiple_content_types" => json!({"content": [
            {"type": "text", "text": "Multiple content types test:"},
            image,
            {"type": "resource", "resource": {
                "uri": "test://mixed-content-resource", "mimeType": "application/json",
                "text": json!({"test": "data", "value": 123}).to_string(),
            }},
        ]}),
        "test_error_handling" => {
            json!({"isError": true, "content": [{"type": "text", "text": ERROR_TEXT}]})
        }
        JSON_SCHEMA_TOOL => {
            json!({"content": [{"type": "text", "text": "json_schema_2020_12_tool called"}]})
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_ids_are_one_segment() {
        assert_eq!(template_id("test://template/123/data"), Some("123"));
        assert_eq!(template_id("test://template//data"), None);
        assert_eq!(template_id("test://template/1/2/data"), None);
        assert_eq!(template_id("test://static-text"), None);
    }

    #[test]
    fn template_reads_substitute_the_id() {
        let read = read_resource("test://template/123/data").unwrap();
        let text = read["contents"][0]["text"].as_str().unwrap();
        let data: Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            data,
            json!({"id": "123", "templateTest": true, "data": "Data for ID: 123"})
        );
        assert!(read_resource("test://nonexistent").is_none());
    }

    #[test]
    fn tool_names_are_unique_and_valid() {
        let names: Vec<String> = tools()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
        for name in &names {
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
            );
        }
    }

    #[test]
    fn completions_filter_by_prefix() {
        assert_eq!(
            complete("test_prompt_with_arguments", "arg1", "par"),
            ["paris", "park", "party"]
        );
        assert!(complete("nope", "arg1", "").is_empty());
    }
}
