//! The demo's prompts and the completions for their arguments (and for the notes template).
//!
//! `plan_trip` asks a form before it answers: the traveller (required) and the number of
//! nights (1 to 30, default 3). In 2025-11-25 it sends `elicitation/create` while it handles
//! `prompts/get`; in 2026-07-28 it returns `input_required` with the form under
//! [`TRIP_KEY`] and the `requestState` [`TRIP_STATE`], which the retry must echo. A decline or
//! cancel is not an error: the prompt then returns one message saying the user declined. With `--hostile-content` there is also
//! `markup_prompt`, whose text is markup and whose image is about 12 MiB.

use base64::{Engine as _, engine::general_purpose::STANDARD as BASE64};
use rmcp::{
    ErrorData, RoleServer,
    model::{
        CompleteRequestParams, CompleteResult, CompletionInfo, ContentBlock, ElicitResult,
        ElicitationAction, EmbeddedResource, GetPromptRequestParams, GetPromptResponse,
        GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Reference,
        ResourceContents, Role,
    },
    service::RequestContext,
};
use serde_json::{Value, json};

use super::{
    DemoServer,
    input::{self, Asked, FormRequest, Retry},
    png,
    resources::{GUIDE_MARKDOWN, GUIDE_URI, NOTE_NAMES, NOTE_TEMPLATE},
};

pub const SUMMARIZE: &str = "summarize";
pub const REVIEW_CODE: &str = "review_code";
pub const DESCRIBE_LOGO: &str = "describe_logo";
pub const PLAN_TRIP: &str = "plan_trip";
/// `--hostile-content` only.
pub const MARKUP_PROMPT: &str = "markup_prompt";

/// Completions of `summarize`'s `topic`, `length`, and `review_code`'s `language`.
pub const TOPICS: [&str; 5] = ["gatehouse", "mcp", "oauth", "resources", "prompts"];
pub const LENGTHS: [&str; 2] = ["short", "long"];
pub const LANGUAGES: [&str; 4] = ["rust", "python", "typescript", "go"];

/// The `plan_trip` form (2026-07-28 `inputRequests` key and `requestState`).
pub const TRIP_KEY: &str = "trip";
pub const TRIP_STATE: &str = "prompt:plan_trip";
pub const DEFAULT_NIGHTS: i64 = 3;
const MAX_NIGHTS: i64 = 30;

/// The text and image of `markup_prompt`.
pub const MARKUP_TEXT: &str = r#"<script>alert(1)</script><a href="javascript:alert(1)">x</a>"#;
/// 12 MiB of base64 (of 9 MiB of zero bytes): big, but under rmcp's 16 MiB message limit.
pub const MARKUP_IMAGE_BASE64_LEN: usize = 12 * 1024 * 1024;

fn argument(name: &str, description: &str, required: bool) -> PromptArgument {
    PromptArgument::new(name)
        .with_description(description)
        .with_required(required)
}

/// Everything `prompts/list` lists, in order.
pub fn prompts(hostile: bool) -> Vec<Prompt> {
    let mut prompts = vec![
        Prompt::new(
            SUMMARIZE,
            Some("Ask for a summary of a topic, short or long."),
            Some(vec![
                argument("topic", "What to summarize", true),
                argument("length", "\"short\" (default) or \"long\"", false),
            ]),
        )
        .with_title("Summarize"),
        Prompt::new(
            REVIEW_CODE,
            Some("Ask for a code review, with the demo guide attached as an embedded resource."),
            Some(vec![
                argument(
                    "language",
                    "The language of the code: rust, python, typescript, go...",
                    true,
                ),
                argument("code", "The code to review", true),
            ]),
        )
        .with_title("Review code"),
        Prompt::new(
            DESCRIBE_LOGO,
            Some("Ask for a description of the demo logo, sent as an image."),
            None,
        )
        .with_title("Describe the logo"),
        Prompt::new(
            PLAN_TRIP,
            Some("Plan a trip: first asks who is travelling and for how many nights."),
            Some(vec![argument(
                "destination",
                "Where to go (default: somewhere)",
                false,
            )]),
        )
        .with_title("Plan a trip"),
    ];
    if hostile {
        prompts.push(
            Prompt::new(
                MARKUP_PROMPT,
                Some("Markup in a text message and a very large image."),
                None,
            )
            .with_title("Markup"),
        );
    }
    prompts
}

/// Argument `name` as a string; `None` when absent (or JSON null).
fn optional<'a>(args: &'a JsonObject, name: &str) -> Result<Option<&'a str>, ErrorData> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(value)) => Ok(Some(value)),
        Some(_) => Err(ErrorData::invalid_params(
            format!("argument {name} must be a string"),
            None,
        )),
    }
}

/// Argument `name`, which must be present and not blank.
fn required<'a>(args: &'a JsonObject, name: &str) -> Result<&'a str, ErrorData> {
    optional(args, name)?
        .filter(|value| !value.trim().is_empty())
        .ok_or_else(|| {
            ErrorData::invalid_params(format!("missing required argument: {name}"), None)
        })
}

fn user_text(text: impl Into<String>) -> PromptMessage {
    PromptMessage::new_text(Role::User, text)
}

/// `summarize`: one user message.
pub fn summarize(args: &JsonObject) -> Result<GetPromptResult, ErrorData> {
    let topic = required(args, "topic")?;
    let length = optional(args, "length")?.unwrap_or("short");
    if !LENGTHS.contains(&length) {
        return Err(ErrorData::invalid_params(
            "argument length must be \"short\" or \"long\"",
            None,
        ));
    }
    Ok(GetPromptResult::new(vec![user_text(format!(
        "Summarize {topic} in a {length} summary."
    ))])
    .with_description(format!("A {length} summary of {topic}")))
}

/// `review_code`: the code in a text message, then the guide as an embedded resource.
pub fn review_code(args: &JsonObject) -> Result<GetPromptResult, ErrorData> {
    let language = required(args, "language")?;
    let code = required(args, "code")?;
    let guide = ResourceContents::text(GUIDE_MARKDOWN, GUIDE_URI).with_mime_type("text/markdown");
    Ok(GetPromptResult::new(vec![
        user_text(format!("Review this {language} code:\n\n{code}")),
        PromptMessage::new(
            Role::User,
            ContentBlock::Resource(EmbeddedResource::new(guide)),
        ),
    ])
    .with_description(format!("A review of {language} code")))
}

/// `describe_logo`: a text message, then the logo as an image.
pub fn describe_logo() -> GetPromptResult {
    GetPromptResult::new(vec![
        user_text("Describe this logo in one sentence."),
        PromptMessage::new(
            Role::User,
            ContentBlock::image(BASE64.encode(png::logo()), "image/png"),
        ),
    ])
    .with_description("A description of the demo logo")
}

/// `markup_prompt` (hostile): markup as text, and ~12 MiB of image data.
pub fn markup_prompt() -> GetPromptResult {
    // "AAAA" is the base64 of three zero bytes, so any multiple of four is valid base64.
    let image = "A".repeat(MARKUP_IMAGE_BASE64_LEN);
    GetPromptResult::new(vec![
        user_text(MARKUP_TEXT),
        PromptMessage::new(Role::User, ContentBlock::image(image, "image/png")),
    ])
    .with_description("Markup and a very large image")
}

/// The `plan_trip` form.
pub fn trip_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "traveller": {"type": "string", "title": "Traveller",
                          "description": "Who is travelling?", "minLength": 1},
            "nights": {"type": "integer", "title": "Nights", "description": "How many nights?",
                       "minimum": 1, "maximum": MAX_NIGHTS, "default": DEFAULT_NIGHTS},
        },
        "required": ["traveller"],
    })
}

fn trip_message(destination: &str) -> String {
    format!("Plan a trip to {destination}")
}

/// The `plan_trip` result for `answer`.
///
/// # Errors
///
/// `-32602` when an accepted answer has no traveller or nights out of range.
pub fn plan_trip(destination: &str, answer: &ElicitResult) -> Result<GetPromptResult, ErrorData> {
    if answer.action != ElicitationAction::Accept {
        let action = match answer.action {
            ElicitationAction::Cancel => "cancel",
            _ => "decline",
        };
        return Ok(GetPromptResult::new(vec![user_text(format!(
            "The user declined to plan the trip ({action})."
        ))])
        .with_description("The user declined"));
    }
    let content = answer.content.as_ref();
    let field = |name: &str| content.and_then(|content| content.get(name));
    let traveller = field("traveller")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|traveller| !traveller.is_empty())
        .ok_or_else(|| ErrorData::invalid_params("the answer has no traveller", None))?;
    let nights = match field("nights") {
        None | Some(Value::Null) => DEFAULT_NIGHTS,
        Some(value) => whole_number(value)
            .filter(|nights| (1..=MAX_NIGHTS).contains(nights))
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    format!("nights must be a whole number from 1 to {MAX_NIGHTS}"),
                    None,
                )
            })?,
    };
    Ok(GetPromptResult::new(vec![user_text(format!(
        "Plan a trip to {destination} for {traveller}, {nights} nights."
    ))])
    .with_description(trip_message(destination)))
}

/// An integer, also when a client sent it as `3.0`.
fn whole_number(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| {
        value
            .as_f64()
            .filter(|number| number.fract() == 0.0 && number.abs() <= 1e9)
            // Whole and small, so the conversion is exact.
            .map(|number| number as i64)
    })
}

/// The values that complete `argument`'s `value` for `reference`, by case-insensitive prefix.
/// Anything this server does not complete gets no values.
pub fn completions(reference: &Reference, argument: &str, value: &str) -> Vec<String> {
    let candidates: &[&str] = match reference {
        Reference::Resource(template) if template.uri == NOTE_TEMPLATE && argument == "name" => {
            &NOTE_NAMES
        }
        Reference::Prompt(prompt) => match (prompt.name.as_str(), argument) {
            (SUMMARIZE, "topic") => &TOPICS,
            (SUMMARIZE, "length") => &LENGTHS,
            (REVIEW_CODE, "language") => &LANGUAGES,
            _ => &[],
        },
        _ => &[],
    };
    let prefix = value.to_lowercase();
    candidates
        .iter()
        .filter(|candidate| candidate.starts_with(&prefix))
        .map(|candidate| (*candidate).to_owned())
        .collect()
}

impl DemoServer {
    pub(super) async fn prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let result = match request.name.as_str() {
            SUMMARIZE => summarize(&args)?,
            REVIEW_CODE => review_code(&args)?,
            DESCRIBE_LOGO => describe_logo(),
            MARKUP_PROMPT if self.hostile => markup_prompt(),
            PLAN_TRIP => {
                let destination = optional(&args, "destination")?
                    .map(str::trim)
                    .filter(|destination| !destination.is_empty())
                    .unwrap_or("somewhere");
                let form = FormRequest {
                    key: TRIP_KEY,
                    state: TRIP_STATE,
                    message: &trip_message(destination),
                    schema: trip_schema(),
                };
                let retry = Retry {
                    responses: request.input_responses,
                    state: request.request_state,
                };
                match input::ask(&context, form, retry).await? {
                    Asked::InputRequired(result) => return Ok(result.into()),
                    Asked::Answer(answer) => plan_trip(destination, &answer)?,
                }
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("prompt not found: {other}"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }

    pub(super) fn complete_argument(
        &self,
        request: &CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorData> {
        let values = completions(
            &request.r#ref,
            &request.argument.name,
            &request.argument.value,
        );
        let completion = CompletionInfo::with_all_values(values)
            .map_err(|error| ErrorData::internal_error(error, None))?;
        Ok(CompleteResult::new(completion))
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{PromptReference, ResourceTemplateReference};

    use super::*;

    fn args(value: Value) -> JsonObject {
        value.as_object().unwrap().clone()
    }

    fn text(result: &GetPromptResult, index: usize) -> &str {
        &result.messages[index].content.as_text().unwrap().text
    }

    #[test]
    fn summarize_fills_in_its_arguments() {
        let result = summarize(&args(json!({"topic": "mcp"}))).unwrap();
        assert_eq!(text(&result, 0), "Summarize mcp in a short summary.");
        let result = summarize(&args(json!({"topic": "oauth", "length": "long"}))).unwrap();
        assert_eq!(text(&result, 0), "Summarize oauth in a long summary.");
    }

    #[test]
    fn bad_arguments_are_invalid_params_naming_them() {
        for (value, name) in [
            (json!({}), "topic"),
            (json!({"topic": "  "}), "topic"),
            (json!({"topic": 1}), "topic"),
            (json!({"topic": "mcp", "length": "medium"}), "length"),
        ] {
            let error = summarize(&args(value.clone())).unwrap_err();
            assert_eq!(
                error.code,
                rmcp::model::ErrorCode::INVALID_PARAMS,
                "{value}"
            );
            assert!(error.message.contains(name), "{value}: {}", error.message);
        }
        let error = review_code(&args(json!({"language": "rust"}))).unwrap_err();
        assert!(error.message.contains("code"));
    }

    #[test]
    fn review_code_embeds_the_guide() {
        let result =
            review_code(&args(json!({"language": "rust", "code": "fn main() {}"}))).unwrap();
        assert_eq!(result.messages.len(), 2);
        assert!(text(&result, 0).starts_with("Review this rust code:"));
        let embedded = result.messages[1].content.as_resource().unwrap();
        let ResourceContents::TextResourceContents { uri, text, .. } = &embedded.resource else {
            panic!("text resource");
        };
        assert_eq!(uri, GUIDE_URI);
        assert_eq!(text, GUIDE_MARKDOWN);
    }

    #[test]
    fn the_markup_image_is_valid_base64() {
        let result = markup_prompt();
        let image = result.messages[1].content.as_image().unwrap();
        assert_eq!(image.data.len(), MARKUP_IMAGE_BASE64_LEN);
        assert_eq!(image.data.len() % 4, 0);
        assert_eq!(BASE64.decode(&image.data[..400]).unwrap(), vec![0; 300]);
    }

    fn accepted(content: Value) -> ElicitResult {
        ElicitResult::new(ElicitationAction::Accept).with_content(content)
    }

    #[test]
    fn plan_trip_reports_the_answer_or_the_decline() {
        let result = plan_trip(
            "Lisbon",
            &accepted(json!({"traveller": "Ada", "nights": 4})),
        )
        .unwrap();
        assert_eq!(text(&result, 0), "Plan a trip to Lisbon for Ada, 4 nights.");
        let result = plan_trip("somewhere", &accepted(json!({"traveller": "Ada"}))).unwrap();
        assert_eq!(
            text(&result, 0),
            "Plan a trip to somewhere for Ada, 3 nights."
        );
        let result = plan_trip("x", &accepted(json!({"traveller": "Ada", "nights": 2.0}))).unwrap();
        assert_eq!(text(&result, 0), "Plan a trip to x for Ada, 2 nights.");
        for action in [ElicitationAction::Decline, ElicitationAction::Cancel] {
            let result = plan_trip("x", &ElicitResult::new(action)).unwrap();
            assert_eq!(result.messages.len(), 1);
            assert!(text(&result, 0).contains("declined"));
        }
        for content in [
            json!({}),
            json!({"traveller": ""}),
            json!({"traveller": "Ada", "nights": 0}),
            json!({"traveller": "Ada", "nights": 31}),
            json!({"traveller": "Ada", "nights": 1.5}),
            json!({"traveller": "Ada", "nights": "2"}),
        ] {
            assert!(
                plan_trip("x", &accepted(content.clone())).is_err(),
                "{content}"
            );
        }
    }

    #[test]
    fn the_trip_form_fits_rmcp() {
        let form = super::super::elicitation::form("m", trip_schema()).unwrap();
        let value = serde_json::to_value(form).unwrap();
        assert_eq!(value["requestedSchema"], trip_schema());
    }

    #[test]
    fn completions_go_by_prefix() {
        let prompt = |name: &str| Reference::Prompt(PromptReference::new(name));
        let notes = Reference::Resource(ResourceTemplateReference::new(NOTE_TEMPLATE));
        assert_eq!(completions(&notes, "name", ""), NOTE_NAMES);
        assert_eq!(completions(&notes, "name", "I"), ["ideas"]);
        assert_eq!(completions(&prompt(SUMMARIZE), "topic", "o"), ["oauth"]);
        assert_eq!(completions(&prompt(SUMMARIZE), "topic", "pr"), ["prompts"]);
        assert_eq!(completions(&prompt(SUMMARIZE), "length", "l"), ["long"]);
        assert_eq!(
            completions(&prompt(REVIEW_CODE), "language", "t"),
            ["typescript"]
        );
        assert!(completions(&prompt(REVIEW_CODE), "code", "").is_empty());
        assert!(completions(&prompt("nope"), "topic", "").is_empty());
        let other = Reference::Resource(ResourceTemplateReference::new("demo://other/{name}"));
        assert!(completions(&other, "name", "").is_empty());
    }

    #[test]
    fn hostile_prompts_are_listed_only_with_the_flag() {
        let names = |hostile| {
            prompts(hostile)
                .into_iter()
                .map(|prompt| prompt.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(false),
            [SUMMARIZE, REVIEW_CODE, DESCRIBE_LOGO, PLAN_TRIP]
        );
        assert_eq!(names(true).last().map(String::as_str), Some(MARKUP_PROMPT));
    }
}
