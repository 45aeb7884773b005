//! The elicitation tools. Each works in both protocol eras, decided per request:
//!
//! * 2025-11-25: the server sends `elicitation/create` requests while it handles the call, and
//!   `connect_account_required` answers with error `-32042` (URLElicitationRequiredError).
//!   Submitting a connect page sends `notifications/elicitation/complete` to the client that
//!   was asked.
//! * 2026-07-28 (MRTR): the call returns `resultType: "input_required"` with `inputRequests`
//!   (and, for the connect tools, a `requestState` of `connect:{id}`), and the client retries
//!   with `inputResponses`. URL elicitations carry no `elicitationId` and nothing is notified.
//!
//! The tools send what they are asked to whatever the client declared: a host must hold or
//! refuse an elicitation in a mode it did not declare, and this fixture lets it prove that.

use std::time::Duration;

use rmcp::{
    ErrorData, RoleServer,
    handler::server::{
        tool::{InputResponses, RequestState},
        wrapper::Parameters,
    },
    model::{
        CallToolResponse, CallToolResult, ContentBlock, CustomNotification, ElicitRequest,
        ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, ErrorCode,
        InputRequest, InputRequests, InputRequiredResult, ProtocolVersion, ServerNotification,
    },
    schemars::JsonSchema,
    service::RequestContext,
    tool, tool_router,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::DemoServer;
use crate::pages::{Issuer, Ticket, fresh_elicitation_id, is_id};

/// JSON-RPC error code of URLElicitationRequiredError (2025-11-25 only; rmcp has no constant).
pub const URL_ELICITATION_REQUIRED: ErrorCode = ErrorCode(-32042);

/// The message of a `-32042` error.
pub const URL_ELICITATION_REQUIRED_MESSAGE: &str = "This request requires more information.";

/// The message of the `book_table` form.
pub const BOOKING_MESSAGE: &str = "Book a table at the demo restaurant";
/// The message of the `ask_password` form.
pub const PASSWORD_MESSAGE: &str = "Sign in to your demo account";

/// `inputRequests` keys (2026-07-28).
pub const BOOKING_KEY: &str = "booking";
pub const PASSWORD_KEY: &str = "password";
pub const CONNECT_KEY: &str = "connect";
pub const LINK_KEY: &str = "link";

/// `requestState` of the connect tools is this prefix and the connect id.
pub const CONNECT_STATE_PREFIX: &str = "connect:";

/// How long a 2025-11-25 `connect_account` waits for the page after the user consented.
pub const CONNECT_WAIT: Duration = Duration::from_secs(120);

/// How many connect ids `connect_account_required` keeps pending per connection.
const MAX_PENDING_PER_CONNECTION: usize = 8;

const DEFAULT_SERVICE: &str = "demo-calendar";
const DEFAULT_SPOOF_COUNT: u32 = 2;
const MAX_SPOOF_COUNT: u32 = 20;
const DEFAULT_LINK_MESSAGE: &str = "Open this link";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ConnectArgs {
    /// The account to connect.
    #[serde(default = "default_service")]
    pub service: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SpoofArgs {
    /// How many completions to send (at most 20).
    #[serde(default = "default_spoof_count")]
    #[schemars(range(max = 20))]
    pub count: u32,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct OpenLinkArgs {
    /// The URL to ask the user to open, sent unchanged.
    pub url: String,
    /// The text shown with the URL.
    #[serde(default = "default_link_message")]
    pub message: String,
}

fn default_service() -> String {
    DEFAULT_SERVICE.to_owned()
}

fn default_spoof_count() -> u32 {
    DEFAULT_SPOOF_COUNT
}

fn default_link_message() -> String {
    DEFAULT_LINK_MESSAGE.to_owned()
}

/// The `book_table` form: every field type of the MCP form subset, with defaults.
pub fn booking_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "description": "Who the table is for",
                     "minLength": 1, "maxLength": 60},
            "email": {"type": "string", "title": "Email", "format": "email"},
            "date": {"type": "string", "title": "Date", "format": "date"},
            "arrival": {"type": "string", "title": "Arrival", "format": "date-time"},
            "website": {"type": "string", "title": "Website", "format": "uri"},
            "party_size": {"type": "integer", "title": "Party size", "minimum": 1, "maximum": 12,
                           "default": 2},
            "budget": {"type": "number", "title": "Budget per person", "minimum": 0.0,
                       "maximum": 1000.0, "default": 50.5},
            "vegetarian": {"type": "boolean", "title": "Vegetarian", "default": false},
            "seating": {"type": "string", "title": "Seating",
                        "enum": ["indoor", "outdoor", "bar"], "default": "indoor"},
            "occasion": {"type": "string", "title": "Occasion", "oneOf": [
                {"const": "none", "title": "No occasion"},
                {"const": "birthday", "title": "Birthday"},
                {"const": "anniversary", "title": "Anniversary"},
                {"const": "business", "title": "Business meal"},
            ], "default": "none"},
            "cuisine": {"type": "string", "title": "Cuisine",
                        "enum": ["italian", "japanese", "mexican"],
                        "enumNames": ["Italian", "Japanese", "Mexican"], "default": "italian"},
            "extras": {"type": "array", "title": "Extras", "minItems": 0, "maxItems": 3,
                       "items": {"type": "string", "enum": ["bread", "wine", "dessert", "coffee"]},
                       "default": ["bread"]},
            "allergies": {"type": "array", "title": "Allergies", "maxItems": 4, "items": {"anyOf": [
                {"const": "gluten", "title": "Gluten"},
                {"const": "nuts", "title": "Nuts"},
                {"const": "dairy", "title": "Dairy"},
                {"const": "shellfish", "title": "Shellfish"},
                {"const": "eggs", "title": "Eggs"},
            ]}},
        },
        "required": ["name", "date", "party_size"],
    })
}

/// The `ask_password` form: one secret field, which hosts should refuse to ask for.
pub fn password_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "password": {"type": "string", "title": "Account password",
                         "description": "The password of your demo account"},
        },
        "required": ["password"],
    })
}

pub(super) fn form(message: &str, schema: Value) -> Result<ElicitRequestParams, ErrorData> {
    let requested_schema: ElicitationSchema = serde_json::from_value(schema).map_err(|error| {
        ErrorData::internal_error(format!("invalid form schema: {error}"), None)
    })?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message.to_owned(),
        requested_schema,
    })
}

fn url_elicitation(message: String, url: String, elicitation_id: String) -> ElicitRequestParams {
    ElicitRequestParams::UrlElicitationParams {
        meta: None,
        message,
        url,
        elicitation_id,
    }
}

fn connect_message(service: &str) -> String {
    format!("Connect your {service} account to the Gatehouse demo server")
}

pub(super) fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
}

fn text(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text.into())]).into()
}

fn tool_error(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(text.into())]).into()
}

fn cancelled() -> ErrorData {
    ErrorData::internal_error("cancelled", None)
}

/// `accept`, `decline` or `cancel`, as on the wire.
fn action_name(action: &ElicitationAction) -> String {
    serde_json::to_value(action)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{action:?}").to_lowercase())
}

/// The tool result that shows exactly which answer the server received.
fn answer_json(result: &ElicitResult) -> CallToolResponse {
    match serde_json::to_string(result) {
        Ok(json) => text(json),
        Err(error) => tool_error(format!("could not serialize the answer: {error}")),
    }
}

fn input_required(
    key: &str,
    params: ElicitRequestParams,
    request_state: Option<String>,
) -> CallToolResponse {
    let mut requests = InputRequests::new();
    requests.insert(
        key.to_owned(),
        InputRequest::Elicitation(ElicitRequest::new(params)),
    );
    InputRequiredResult::new(Some(requests), request_state).into()
}

fn connect_input_required(ticket: &Ticket) -> CallToolResponse {
    // No elicitationId in 2026-07-28: rmcp's empty one is stripped on the wire (`wire`).
    let params = url_elicitation(
        connect_message(&ticket.service),
        ticket.url.clone(),
        String::new(),
    );
    input_required(
        CONNECT_KEY,
        params,
        Some(format!("{CONNECT_STATE_PREFIX}{}", ticket.id)),
    )
}

fn connected(service: &str, id: &str) -> CallToolResponse {
    text(format!("connected {service} (elicitation {id})"))
}

/// The answer under `key` in a 2026-07-28 retry, or the tool result to give instead.
fn modern_answer(
    responses: Option<rmcp::model::InputResponses>,
    key: &str,
) -> Option<Result<ElicitResult, CallToolResponse>> {
    let value = responses.and_then(|mut responses| responses.remove(key))?;
    Some(serde_json::from_value(value).map_err(|error| {
        tool_error(format!(
            "inputResponses.{key} is not an elicitation result: {error}"
        ))
    }))
}

/// The data of a `-32042` error for `ticket`.
fn url_required_error(ticket: &Ticket) -> ErrorData {
    ErrorData::new(
        URL_ELICITATION_REQUIRED,
        URL_ELICITATION_REQUIRED_MESSAGE,
        Some(json!({
            "elicitations": [{
                "mode": "url",
                "elicitationId": ticket.id,
                "url": ticket.url,
                "message": connect_message(&ticket.service),
            }]
        })),
    )
}

#[tool_router(router = elicitation_router, vis = "pub(crate)")]
impl DemoServer {
    #[tool(
        description = "Ask the user to book a table with a form that uses every form field type. \
        Returns the elicitation answer the server received, as JSON."
    )]
    async fn book_table(
        &self,
        context: RequestContext<RoleServer>,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let params = form(BOOKING_MESSAGE, booking_schema())?;
        self.elicit_and_report(&context, responses, BOOKING_KEY, params)
            .await
    }

    #[tool(
        description = "Ask the user for their demo account password with a form. Returns the \
        elicitation answer the server received, as JSON."
    )]
    async fn ask_password(
        &self,
        context: RequestContext<RoleServer>,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let params = form(PASSWORD_MESSAGE, password_schema())?;
        self.elicit_and_report(&context, responses, PASSWORD_KEY, params)
            .await
    }

    #[tool(
        description = "Ask the user to open a URL (URL elicitation) without fetching it. Returns \
        the elicitation answer the server received, as JSON."
    )]
    async fn open_link(
        &self,
        Parameters(args): Parameters<OpenLinkArgs>,
        context: RequestContext<RoleServer>,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let elicitation_id = if is_modern(&context) {
            String::new()
        } else {
            match fresh_elicitation_id() {
                Ok(id) => id,
                Err(error) => return Ok(tool_error(error.to_string())),
            }
        };
        // Exactly the URL given: hosts are tested on what they do with it.
        let params = url_elicitation(args.message, args.url, elicitation_id);
        self.elicit_and_report(&context, responses, LINK_KEY, params)
            .await
    }

    #[tool(
        description = "Connect an account through a URL elicitation to a demo page served on \
        127.0.0.1. Returns once the page is submitted (at most 120 s)."
    )]
    async fn connect_account(
        &self,
        Parameters(args): Parameters<ConnectArgs>,
        context: RequestContext<RoleServer>,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        if is_modern(&context) {
            return Ok(self
                .connect_modern(Issuer::ConnectAccount, &args.service, state, responses)
                .await);
        }
        let ticket = match self
            .pages
            .issue(
                Issuer::ConnectAccount,
                &args.service,
                self.connection,
                Some(context.peer.clone()),
            )
            .await
        {
            Ok(ticket) => ticket,
            Err(error) => return Ok(tool_error(format!("{error:#}"))),
        };
        let params = url_elicitation(
            connect_message(&args.service),
            ticket.url.clone(),
            ticket.id.clone(),
        );
        let answer = match self.elicit_legacy(&context, params).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(response)) => {
                self.pages.withdraw(&ticket.id);
                return Ok(response);
            }
            Err(error) => {
                self.pages.withdraw(&ticket.id);
                return Err(error);
            }
        };
        if answer.action != ElicitationAction::Accept {
            self.pages.withdraw(&ticket.id);
            return Ok(text(format!(
                "not connected: {}",
                action_name(&answer.action)
            )));
        }
        // Accept means consent, not done: wait for the page.
        let Some(mut done) = self.pages.watch(&ticket.id) else {
            return Ok(tool_error("not connected: the connect page was withdrawn"));
        };
        tokio::select! {
            () = context.ct.cancelled() => {
                self.pages.withdraw(&ticket.id);
                Err(cancelled())
            }
            () = tokio::time::sleep(CONNECT_WAIT) => {
                self.pages.withdraw(&ticket.id);
                Ok(tool_error(format!(
                    "not connected: the page was not submitted within {} s",
                    CONNECT_WAIT.as_secs()
                )))
            }
            submitted = done.wait_for(|done| *done) => {
                if submitted.is_ok() && self.pages.consume(&ticket.id) {
                    Ok(connected(&args.service, &ticket.id))
                } else {
                    Ok(tool_error("not connected: the connect page was withdrawn"))
                }
            }
        }
    }

    #[tool(
        description = "Connect an account, asking for the URL elicitation with error -32042 \
        (2025-11-25) or input_required (2026-07-28). Retry after the page is submitted."
    )]
    async fn connect_account_required(
        &self,
        Parameters(args): Parameters<ConnectArgs>,
        context: RequestContext<RoleServer>,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let issuer = Issuer::ConnectAccountRequired;
        if is_modern(&context) {
            return Ok(self
                .connect_modern(issuer, &args.service, state, responses)
                .await);
        }
        if let Some(ticket) = self.pages.pending(self.connection, issuer, &args.service) {
            if ticket.completed && self.pages.consume(&ticket.id) {
                return Ok(connected(&args.service, &ticket.id));
            }
            // Still pending: the same id again, never a new one.
            return Err(url_required_error(&ticket));
        }
        if self.pages.pending_count(self.connection, issuer) >= MAX_PENDING_PER_CONNECTION {
            return Ok(tool_error(format!(
                "not connected: {MAX_PENDING_PER_CONNECTION} connections are already pending"
            )));
        }
        match self
            .pages
            .issue(
                issuer,
                &args.service,
                self.connection,
                Some(context.peer.clone()),
            )
            .await
        {
            Ok(ticket) => Err(url_required_error(&ticket)),
            Err(error) => Ok(tool_error(format!("{error:#}"))),
        }
    }

    #[tool(
        description = "Send `count` (default 2, at most 20) notifications/elicitation/complete \
        for elicitation ids this server never issued."
    )]
    async fn spoof_completion(
        &self,
        Parameters(args): Parameters<SpoofArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if args.count > MAX_SPOOF_COUNT {
            return Ok(tool_error(format!(
                "count must be at most {MAX_SPOOF_COUNT}"
            )));
        }
        for sent in 0..args.count {
            let id = match fresh_elicitation_id() {
                Ok(random) => format!("spoofed-{random}"),
                Err(error) => return Ok(tool_error(error.to_string())),
            };
            let notification = ServerNotification::CustomNotification(CustomNotification::new(
                crate::pages::ELICITATION_COMPLETE_METHOD,
                Some(json!({ "elicitationId": id })),
            ));
            if let Err(error) = context.peer.send_notification(notification).await {
                return Ok(text(format!(
                    "sent {sent} of {} spoofed completions; sending failed: {error}",
                    args.count
                )));
            }
        }
        Ok(text(format!("sent {} spoofed completions", args.count)))
    }
}

impl DemoServer {
    /// Elicit once, in the request's era, and report the answer as the tool result.
    async fn elicit_and_report(
        &self,
        context: &RequestContext<RoleServer>,
        responses: Option<rmcp::model::InputResponses>,
        key: &str,
        params: ElicitRequestParams,
    ) -> Result<CallToolResponse, ErrorData> {
        if is_modern(context) {
            return Ok(match modern_answer(responses, key) {
                None => input_required(key, params, None),
                Some(Ok(answer)) => answer_json(&answer),
                Some(Err(response)) => response,
            });
        }
        Ok(match self.elicit_legacy(context, params).await? {
            Ok(answer) => answer_json(&answer),
            Err(response) => response,
        })
    }

    /// Send a 2025-11-25 `elicitation/create` request. A failed request is a tool error (the
    /// inner `Err`); a cancelled call is a JSON-RPC error.
    async fn elicit_legacy(
        &self,
        context: &RequestContext<RoleServer>,
        params: ElicitRequestParams,
    ) -> Result<Result<ElicitResult, CallToolResponse>, ErrorData> {
        tokio::select! {
            () = context.ct.cancelled() => Err(cancelled()),
            answer = context.peer.create_elicitation(params) => Ok(answer.map_err(|error| {
                tool_error(format!("elicitation failed: {error}"))
            })),
        }
    }

    /// The 2026-07-28 connect flow, the same for both connect tools.
    async fn connect_modern(
        &self,
        issuer: Issuer,
        service: &str,
        state: Option<String>,
        responses: Option<rmcp::model::InputResponses>,
    ) -> CallToolResponse {
        let Some(state) = state else {
            return match self
                .pages
                .issue(issuer, service, self.connection, None)
                .await
            {
                Ok(ticket) => connect_input_required(&ticket),
                Err(error) => tool_error(format!("{error:#}")),
            };
        };
        let ticket = state
            .strip_prefix(CONNECT_STATE_PREFIX)
            .filter(|id| is_id(id))
            .and_then(|id| self.pages.ticket(id))
            .filter(|ticket| ticket.issuer == issuer && !ticket.legacy && !ticket.consumed);
        let Some(ticket) = ticket else {
            return tool_error(
                "unknown requestState: this server never issued it to this tool, or it was \
                 already used",
            );
        };
        if ticket.service != service {
            return tool_error(format!(
                "requestState was issued for service {:?}, not {service:?}",
                ticket.service
            ));
        }
        let answer = match modern_answer(responses, CONNECT_KEY) {
            Some(Ok(answer)) => answer,
            Some(Err(response)) => return response,
            None => return tool_error(format!("inputResponses.{CONNECT_KEY} is missing")),
        };
        if answer.action != ElicitationAction::Accept {
            self.pages.withdraw(&ticket.id);
            return text(format!("not connected: {}", action_name(&answer.action)));
        }
        if ticket.completed && self.pages.consume(&ticket.id) {
            return connected(service, &ticket.id);
        }
        // Consented but not submitted yet: ask again, same URL, same state.
        connect_input_required(&ticket)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(schema: Value) {
        let parsed: ElicitationSchema = serde_json::from_value(schema.clone()).unwrap();
        assert_eq!(serde_json::to_value(&parsed).unwrap(), schema);
    }

    #[test]
    fn forms_reach_the_wire_unchanged() {
        round_trip(booking_schema());
        round_trip(password_schema());
    }

    #[test]
    fn the_booking_form_uses_every_field_type() {
        let schema: ElicitationSchema = serde_json::from_value(booking_schema()).unwrap();
        use rmcp::model::{
            EnumSchema, MultiSelectEnumSchema, PrimitiveSchemaDefinition as P,
            SingleSelectEnumSchema,
        };
        let kind = |name: &str| match &schema.properties[name] {
            P::String(_) => "string",
            P::Number(_) => "number",
            P::Integer(_) => "integer",
            P::Boolean(_) => "boolean",
            P::Enum(EnumSchema::Single(SingleSelectEnumSchema::Untitled(_))) => "untitled single",
            P::Enum(EnumSchema::Single(SingleSelectEnumSchema::Titled(_))) => "titled single",
            P::Enum(EnumSchema::Multi(MultiSelectEnumSchema::Untitled(_))) => "untitled multi",
            P::Enum(EnumSchema::Multi(MultiSelectEnumSchema::Titled(_))) => "titled multi",
            P::Enum(EnumSchema::Legacy(_)) => "legacy",
            _ => "other",
        };
        for (name, expected) in [
            ("name", "string"),
            ("email", "string"),
            ("budget", "number"),
            ("party_size", "integer"),
            ("vegetarian", "boolean"),
            ("seating", "untitled single"),
            ("occasion", "titled single"),
            ("cuisine", "legacy"),
            ("extras", "untitled multi"),
            ("allergies", "titled multi"),
        ] {
            assert_eq!(kind(name), expected, "{name}");
        }
    }

    #[test]
    fn actions_are_named_as_on_the_wire() {
        assert_eq!(action_name(&ElicitationAction::Accept), "accept");
        assert_eq!(action_name(&ElicitationAction::Decline), "decline");
        assert_eq!(action_name(&ElicitationAction::Cancel), "cancel");
    }
}
