//! Asking the user a form from `prompts/get` and `resources/read`, in the request's era:
//!
//! * 2025-11-25: an `elicitation/create` request to the client while the request is handled.
//! * 2026-07-28 (MRTR): an `input_required` result with the form under a fixed key and a fixed
//!   `requestState`; the client retries with the answer under that key in `inputResponses`
//!   and the `requestState` echoed unchanged.
//!
//! The state is a constant, not a secret: everything the retry needs travels in the request
//! itself (its arguments or URI, and the answer), so there is nothing to seal. Checking that it
//! comes back unchanged lets hosts prove they echo it.

use rmcp::{
    ErrorData, RoleServer,
    model::{
        ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest, InputRequests,
        InputRequiredResult, InputResponses,
    },
    service::RequestContext,
};
use serde_json::Value;

use super::elicitation::{form, is_modern};

/// One form to ask: where its answer goes and what the user sees.
pub struct FormRequest<'a> {
    /// The `inputRequests` / `inputResponses` key (2026-07-28).
    pub key: &'a str,
    /// The `requestState` sent with the form and expected back on the retry (2026-07-28).
    pub state: &'a str,
    pub message: &'a str,
    pub schema: Value,
}

/// What the request's client said so far (2026-07-28 retries carry these).
#[derive(Default)]
pub struct Retry {
    pub responses: Option<InputResponses>,
    pub state: Option<String>,
}

/// The outcome of [`ask`].
pub enum Asked {
    /// The client answered the form, in either era.
    Answer(ElicitResult),
    /// 2026-07-28: return this and wait for the retry.
    InputRequired(InputRequiredResult),
}

/// Ask `request` in the era of `context`.
///
/// # Errors
///
/// `-32602` for a 2026-07-28 retry whose `requestState` is not the one sent or whose answer is
/// not an elicitation result; `-32600` when a 2025-11-25 client fails the elicitation request;
/// an internal error when the request is cancelled while waiting.
pub async fn ask(
    context: &RequestContext<RoleServer>,
    request: FormRequest<'_>,
    retry: Retry,
) -> Result<Asked, ErrorData> {
    let params = form(request.message, request.schema.clone())?;
    if is_modern(context) {
        return modern(&request, params, retry);
    }
    tokio::select! {
        () = context.ct.cancelled() => Err(ErrorData::internal_error("cancelled", None)),
        answer = context.peer.create_elicitation(params) => answer
            .map(Asked::Answer)
            .map_err(|error| ErrorData::invalid_request(format!("elicitation failed: {error}"), None)),
    }
}

fn modern(
    request: &FormRequest<'_>,
    params: ElicitRequestParams,
    retry: Retry,
) -> Result<Asked, ErrorData> {
    if let Some(state) = retry.state.as_deref()
        && state != request.state
    {
        return Err(unknown_state());
    }
    let Some(answer) = retry
        .responses
        .and_then(|mut responses| responses.remove(request.key))
    else {
        let mut requests = InputRequests::new();
        requests.insert(
            request.key.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        );
        return Ok(Asked::InputRequired(InputRequiredResult::new(
            Some(requests),
            Some(request.state.to_owned()),
        )));
    };
    // An answer without the state it belongs to is a retry of something else.
    if retry.state.is_none() {
        return Err(unknown_state());
    }
    serde_json::from_value(answer)
        .map(Asked::Answer)
        .map_err(|error| {
            ErrorData::invalid_params(
                format!(
                    "inputResponses.{} is not an elicitation result: {error}",
                    request.key
                ),
                None,
            )
        })
}

fn unknown_state() -> ErrorData {
    ErrorData::invalid_params(
        "requestState is missing or is not the one this server sent for this request",
        None,
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request() -> FormRequest<'static> {
        FormRequest {
            key: "k",
            state: "s",
            message: "m",
            schema: json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        }
    }

    fn run(retry: Retry) -> Result<Asked, ErrorData> {
        let params = form("m", request().schema).unwrap();
        modern(&request(), params, retry)
    }

    fn answer() -> Option<InputResponses> {
        Some(InputResponses::from([(
            "k".to_owned(),
            json!({"action": "accept", "content": {"a": "x"}}),
        )]))
    }

    #[test]
    fn the_first_round_asks_with_key_and_state() {
        let Ok(Asked::InputRequired(result)) = run(Retry::default()) else {
            panic!("expected input_required");
        };
        assert_eq!(result.request_state.as_deref(), Some("s"));
        assert!(result.input_requests.unwrap().contains_key("k"));
    }

    #[test]
    fn the_retry_returns_the_answer() {
        let retry = Retry {
            responses: answer(),
            state: Some("s".into()),
        };
        let Ok(Asked::Answer(answer)) = run(retry) else {
            panic!("expected the answer");
        };
        assert_eq!(answer.content, Some(json!({"a": "x"})));
    }

    #[test]
    fn forged_or_missing_state_and_junk_answers_are_refused() {
        for retry in [
            Retry {
                responses: answer(),
                state: Some("forged".into()),
            },
            Retry {
                responses: answer(),
                state: None,
            },
            Retry {
                responses: Some(InputResponses::from([("k".to_owned(), json!(42))])),
                state: Some("s".into()),
            },
        ] {
            assert!(run(retry).is_err());
        }
    }
}
