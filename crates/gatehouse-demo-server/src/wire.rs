//! Putting 2026-07-28 `input_required` results on the wire the way the spec writes them.
//!
//! 2026-07-28 removed `elicitationId` from URL elicitations. rmcp 3.9 models the field as a
//! plain `String` and always serializes it, so a URL elicitation embedded in an
//! `input_required` result would carry `"elicitationId": ""`. The demo strips that empty field
//! on the way out: [`ModernWire`] wraps the service for stdio, and [`modern_wire_layer`] is
//! axum middleware for Streamable HTTP. Only empty ids inside `input_required` results are
//! touched; every other message passes unchanged.

use std::borrow::Cow;

use axum::{
    body::{Body, HttpBody, to_bytes},
    extract::Request,
    http::{StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use rmcp::{
    ErrorData, RoleServer, Service,
    model::{
        ClientNotification, ClientRequest, CustomResult, ProtocolVersion, ServerConfig,
        ServerResult,
    },
    service::{NotificationContext, RequestContext},
};
use serde_json::Value;

/// The largest JSON response the HTTP layer buffers to rewrite; larger ones pass unchanged.
const MAX_REWRITTEN_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Remove `"elicitationId": ""` from the URL elicitations of an `input_required` result.
/// Returns whether anything was removed.
pub fn strip_empty_elicitation_ids(result: &mut Value) -> bool {
    if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
        return false;
    }
    let Some(requests) = result
        .get_mut("inputRequests")
        .and_then(Value::as_object_mut)
    else {
        return false;
    };
    let mut stripped = false;
    for request in requests.values_mut() {
        if request.get("method").and_then(Value::as_str) != Some("elicitation/create") {
            continue;
        }
        let Some(params) = request.get_mut("params").and_then(Value::as_object_mut) else {
            continue;
        };
        let empty_id = params.get("elicitationId").and_then(Value::as_str) == Some("");
        if params.get("mode").and_then(Value::as_str) == Some("url") && empty_id {
            params.remove("elicitationId");
            stripped = true;
        }
    }
    stripped
}

/// [`strip_empty_elicitation_ids`] on a typed result: an `input_required` result becomes the
/// equivalent raw JSON without the empty ids.
fn shape(result: ServerResult) -> ServerResult {
    let ServerResult::InputRequiredResult(input_required) = &result else {
        return result;
    };
    match serde_json::to_value(input_required) {
        Ok(mut value) => {
            if strip_empty_elicitation_ids(&mut value) {
                ServerResult::CustomResult(CustomResult::new(value))
            } else {
                result
            }
        }
        Err(error) => {
            tracing::warn!(%error, "could not reshape an input_required result");
            result
        }
    }
}

/// Wraps an rmcp service so its `input_required` results carry no empty `elicitationId`.
pub struct ModernWire<S> {
    inner: S,
}

impl<S> ModernWire<S> {
    pub fn new(inner: S) -> Self {
        Self { inner }
    }
}

impl<S: Service<RoleServer>> Service<RoleServer> for ModernWire<S> {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        self.inner.handle_request(request, context).await.map(shape)
    }

    async fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.handle_notification(notification, context).await
    }

    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }
}

/// axum middleware doing what [`ModernWire`] does, for JSON responses of the MCP endpoint.
///
/// rmcp's Streamable HTTP service needs a `ServerHandler`, whose `tools/call` answer is typed,
/// so the rewrite happens on the response body. `input_required` results of the demo are
/// always plain JSON: its tools send nothing before them, so rmcp never streams them as SSE.
pub async fn modern_wire_layer(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if !is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    // Too large to buffer (a big resource or prompt): passed on unread. An input_required
    // result, the only thing rewritten, is never that large.
    let too_large = usize::try_from(body.size_hint().lower())
        .map_or(true, |size| size > MAX_REWRITTEN_BODY_BYTES);
    if too_large {
        return Response::from_parts(parts, body);
    }
    let bytes = match to_bytes(body, MAX_REWRITTEN_BODY_BYTES).await {
        Ok(bytes) => bytes,
        Err(error) => {
            tracing::warn!(%error, "could not read a JSON response to reshape it");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let mut message = match serde_json::from_slice::<Value>(&bytes) {
        Ok(message) => message,
        Err(_) => return Response::from_parts(parts, Body::from(bytes)),
    };
    let stripped = message
        .get_mut("result")
        .is_some_and(strip_empty_elicitation_ids);
    if !stripped {
        return Response::from_parts(parts, Body::from(bytes));
    }
    match serde_json::to_vec(&message) {
        Ok(body) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(body))
        }
        Err(_) => Response::from_parts(parts, Body::from(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{
        ElicitRequest, ElicitRequestParams, InputRequest, InputRequests, InputRequiredResult,
    };
    use serde_json::json;

    use super::*;

    fn url_request(id: &str) -> InputRequest {
        InputRequest::Elicitation(ElicitRequest::new(
            ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message: "m".into(),
                url: "https://example.invalid/".into(),
                elicitation_id: id.into(),
            },
        ))
    }

    #[test]
    fn rmcp_still_sends_an_empty_elicitation_id() {
        // If this fails, rmcp stopped sending the field and this module may go.
        let value = serde_json::to_value(url_request("")).unwrap();
        assert_eq!(value["params"]["elicitationId"], "");
    }

    #[test]
    fn only_empty_url_elicitation_ids_are_stripped() {
        let mut requests = InputRequests::new();
        requests.insert("a".into(), url_request(""));
        requests.insert("b".into(), url_request("kept"));
        let result = InputRequiredResult::new(Some(requests), Some("state".into()));
        let ServerResult::CustomResult(CustomResult(value)) =
            shape(ServerResult::InputRequiredResult(result))
        else {
            panic!("expected the reshaped result");
        };
        assert_eq!(
            value,
            json!({
                "resultType": "input_required",
                "inputRequests": {
                    "a": {"method": "elicitation/create",
                          "params": {"mode": "url", "message": "m", "url": "https://example.invalid/"}},
                    "b": {"method": "elicitation/create",
                          "params": {"mode": "url", "message": "m", "url": "https://example.invalid/",
                                     "elicitationId": "kept"}},
                },
                "requestState": "state",
            })
        );

        let mut complete = json!({"resultType": "complete", "content": []});
        assert!(!strip_empty_elicitation_ids(&mut complete));
    }
}
