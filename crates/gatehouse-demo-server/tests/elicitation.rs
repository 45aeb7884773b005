//! The elicitation tools against rmcp 3.9's own client, in both eras: 2025-11-25 with
//! `elicitation/create` requests, `-32042` and completion notifications, and 2026-07-28 with
//! `input_required` results driven round by round with `call_tool_once`. The connect pages are
//! fetched and submitted over real HTTP.

mod common;

use std::{path::Path, process::Stdio, sync::Arc, time::Duration};

use common::{BIN, HttpClient, HttpServer, SERVER_ENV, StdioServer, TIMEOUT, modern_meta_with};
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
        CustomNotification, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
        ElicitationCapability, FormElicitationCapability, Implementation, InputRequest,
        InputRequiredResult, InputResponses, ProtocolVersion, UrlElicitationCapability,
    },
    service::{NotificationContext, RequestContext, RunningService, ServiceError},
    transport::{
        StreamableHttpClientTransport, TokioChildProcess,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const COMPLETE: &str = "notifications/elicitation/complete";

type Answer = dyn Fn(&ElicitRequestParams) -> ElicitResult + Send + Sync;

/// A client that answers every elicitation with `answer` and reports what it saw.
struct Recorder {
    answer: Arc<Answer>,
    requests: mpsc::UnboundedSender<ElicitRequestParams>,
    completions: mpsc::UnboundedSender<String>,
}

/// What a [`Recorder`] saw, in arrival order.
struct Seen {
    requests: mpsc::UnboundedReceiver<ElicitRequestParams>,
    completions: mpsc::UnboundedReceiver<String>,
}

impl Seen {
    async fn request(&mut self) -> ElicitRequestParams {
        tokio::time::timeout(TIMEOUT, self.requests.recv())
            .await
            .expect("no elicitation request in time")
            .expect("client gone")
    }

    async fn completion(&mut self) -> String {
        tokio::time::timeout(TIMEOUT, self.completions.recv())
            .await
            .expect("no completion notification in time")
            .expect("client gone")
    }

    /// Nothing more arrives within a short while.
    async fn assert_quiet(&mut self) {
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            self.requests.try_recv().is_err(),
            "unexpected elicitation request"
        );
        assert!(
            self.completions.try_recv().is_err(),
            "unexpected completion notification"
        );
    }
}

impl ClientHandler for Recorder {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let answer = (self.answer)(&request);
        let _ = self.requests.send(request);
        Ok(answer)
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        if notification.method == COMPLETE {
            let id = notification.params.as_ref().expect("params")["elicitationId"]
                .as_str()
                .expect("elicitationId string")
                .to_owned();
            let _ = self.completions.send(id);
        }
    }

    fn get_info(&self) -> ClientConfig {
        let elicitation = ElicitationCapability::new()
            .with_form(FormElicitationCapability::new())
            .with_url(UrlElicitationCapability::new());
        ClientConfig::new(
            ClientCapabilities::builder()
                .enable_elicitation_with(elicitation)
                .build(),
            Implementation::new("elicitation-tests", "0"),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }
}

fn recorder(
    answer: impl Fn(&ElicitRequestParams) -> ElicitResult + Send + Sync + 'static,
) -> (Recorder, Seen) {
    let (requests, requests_rx) = mpsc::unbounded_channel();
    let (completions, completions_rx) = mpsc::unbounded_channel();
    (
        Recorder {
            answer: Arc::new(answer),
            requests,
            completions,
        },
        Seen {
            requests: requests_rx,
            completions: completions_rx,
        },
    )
}

fn accept() -> ElicitResult {
    ElicitResult::new(ElicitationAction::Accept)
}

fn decline() -> ElicitResult {
    ElicitResult::new(ElicitationAction::Decline)
}

type Client = RunningService<RoleClient, Recorder>;

fn stdio_transport(args: &[&str]) -> TokioChildProcess {
    let mut command = tokio::process::Command::new(BIN);
    command.args(args);
    for key in SERVER_ENV {
        command.env_remove(key);
    }
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn gatehouse-demo-server");
    transport
}

fn modern() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    }
}

/// A 2025-11-25 client (the `initialize` handshake) on the default, dual-era server.
async fn legacy_stdio(handler: Recorder, args: &[&str]) -> Client {
    let client = tokio::time::timeout(
        TIMEOUT,
        handler.serve_with_lifecycle(stdio_transport(args), ClientLifecycleMode::Initialize),
    )
    .await
    .expect("connecting timed out")
    .expect("initialize");
    assert_eq!(
        client.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2025_11_25
    );
    client
}

/// A 2026-07-28 client (`server/discover`, per-request metadata).
async fn modern_stdio(handler: Recorder, args: &[&str]) -> Client {
    let client = tokio::time::timeout(
        TIMEOUT,
        handler.serve_with_lifecycle(stdio_transport(args), modern()),
    )
    .await
    .expect("connecting timed out")
    .expect("discover");
    assert_eq!(
        client.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2026_07_28
    );
    client
}

fn http_transport(url: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(url))
}

fn params(name: &'static str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name).with_arguments(arguments.as_object().unwrap().clone())
}

async fn call(client: &Client, name: &'static str, arguments: Value) -> CallToolResult {
    tokio::time::timeout(TIMEOUT, client.call_tool(params(name, arguments)))
        .await
        .expect("tools/call timed out")
        .unwrap_or_else(|error| panic!("tools/call {name}: {error}"))
}

async fn call_err(client: &Client, name: &'static str, arguments: Value) -> ErrorData {
    let result = tokio::time::timeout(TIMEOUT, client.call_tool(params(name, arguments)))
        .await
        .expect("tools/call timed out");
    match result {
        Err(ServiceError::McpError(error)) => error,
        other => panic!("{name}: expected a JSON-RPC error, got {other:?}"),
    }
}

async fn call_once(client: &Client, params: CallToolRequestParams) -> CallToolResponse {
    tokio::time::timeout(TIMEOUT, client.call_tool_once(params))
        .await
        .expect("tools/call timed out")
        .expect("tools/call")
}

fn text(result: &CallToolResult) -> &str {
    assert_eq!(result.content.len(), 1, "{result:?}");
    &result.content[0].as_text().expect("text content").text
}

fn complete(response: CallToolResponse) -> CallToolResult {
    match response {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a complete result, got {other:?}"),
    }
}

fn input_required(response: CallToolResponse) -> InputRequiredResult {
    match response {
        CallToolResponse::InputRequired(result) => result,
        other => panic!("expected input_required, got {other:?}"),
    }
}

/// The single elicitation of an `input_required` result, under `key`.
fn elicitation(result: &InputRequiredResult, key: &str) -> ElicitRequestParams {
    let requests = result.input_requests.as_ref().expect("inputRequests");
    assert_eq!(
        requests.keys().collect::<Vec<_>>(),
        [key],
        "one input request"
    );
    match &requests[key] {
        InputRequest::Elicitation(ElicitRequest { params, .. }) => params.clone(),
        other => panic!("expected elicitation/create, got {other:?}"),
    }
}

fn url_of(params: &ElicitRequestParams) -> (String, String, String) {
    match params {
        ElicitRequestParams::UrlElicitationParams {
            message,
            url,
            elicitation_id,
            ..
        } => (message.clone(), url.clone(), elicitation_id.clone()),
        other => panic!("expected a URL elicitation, got {other:?}"),
    }
}

fn responses(key: &str, answer: Value) -> InputResponses {
    InputResponses::from([(key.to_owned(), answer)])
}

fn is_hex_id(id: &str) -> bool {
    id.len() == 32
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The connect id at the end of a page URL on 127.0.0.1.
fn page_id(url: &str) -> String {
    let rest = url
        .strip_prefix("http://127.0.0.1:")
        .unwrap_or_else(|| panic!("not a loopback page: {url}"));
    let (port, id) = rest.split_once("/connect/").expect("a /connect/ path");
    assert!(port.parse::<u16>().is_ok_and(|port| port != 0), "{url}");
    assert!(is_hex_id(id), "{url}");
    id.to_owned()
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(TIMEOUT)
        .build()
        .expect("reqwest client")
}

async fn get_page(url: &str) -> (u16, String) {
    let response = http().get(url).send().await.expect("GET the page");
    let status = response.status().as_u16();
    (status, response.text().await.expect("page body"))
}

async fn post_page(url: &str) -> (u16, String) {
    let response = http().post(url).send().await.expect("POST the page");
    let status = response.status().as_u16();
    (status, response.text().await.expect("page body"))
}

fn hits(file: &Path) -> String {
    std::fs::read_to_string(file).unwrap_or_default()
}

fn booking_answer() -> Value {
    json!({
        "name": "Ada Lovelace",
        "email": "ada@example.com",
        "date": "2026-12-24",
        "arrival": "2026-12-24T19:30:00Z",
        "website": "https://example.com/ada",
        "party_size": 4,
        "budget": 80.5,
        "vegetarian": true,
        "seating": "outdoor",
        "occasion": "birthday",
        "cuisine": "japanese",
        "extras": ["bread", "wine"],
        "allergies": ["nuts"],
    })
}

// ---------------------------------------------------------------------------------------------
// 2025-11-25
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn book_table_reports_the_form_answer_it_received() {
    let content = booking_answer();
    let answer = content.clone();
    let (handler, mut seen) = recorder(move |_| accept().with_content(answer.clone()));
    let client = legacy_stdio(handler, &[]).await;

    let result = call(&client, "book_table", json!({})).await;
    assert_eq!(result.is_error, Some(false));
    let received: Value = serde_json::from_str(text(&result)).expect("JSON text");
    assert_eq!(received, json!({"action": "accept", "content": content}));

    let ElicitRequestParams::FormElicitationParams {
        message,
        requested_schema,
        ..
    } = seen.request().await
    else {
        panic!("expected a form");
    };
    assert_eq!(message, "Book a table at the demo restaurant");
    let schema = serde_json::to_value(&requested_schema).unwrap();
    assert_eq!(schema["required"], json!(["name", "date", "party_size"]));
    let properties = schema["properties"].as_object().unwrap();
    assert_eq!(
        properties.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "name",
            "email",
            "date",
            "arrival",
            "website",
            "party_size",
            "budget",
            "vegetarian",
            "seating",
            "occasion",
            "cuisine",
            "extras",
            "allergies"
        ]
    );
    assert_eq!(properties["name"]["minLength"], 1);
    assert_eq!(properties["name"]["maxLength"], 60);
    assert_eq!(properties["email"]["format"], "email");
    assert_eq!(properties["date"]["format"], "date");
    assert_eq!(properties["arrival"]["format"], "date-time");
    assert_eq!(properties["website"]["format"], "uri");
    assert_eq!(properties["party_size"]["type"], "integer");
    assert_eq!(properties["party_size"]["default"], 2);
    assert_eq!(properties["budget"]["default"], 50.5);
    assert_eq!(properties["vegetarian"]["default"], false);
    assert_eq!(
        properties["seating"]["enum"],
        json!(["indoor", "outdoor", "bar"])
    );
    assert_eq!(properties["occasion"]["default"], "none");
    assert!(properties["occasion"]["oneOf"].is_array());
    assert!(properties["cuisine"]["enumNames"].is_array());
    assert_eq!(properties["extras"]["items"]["type"], "string");
    assert_eq!(properties["extras"]["maxItems"], 3);
    assert_eq!(properties["extras"]["default"], json!(["bread"]));
    assert!(properties["allergies"]["items"]["anyOf"].is_array());
    assert_eq!(properties["allergies"]["maxItems"], 4);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn ask_password_reports_a_decline() {
    let (handler, mut seen) = recorder(|_| decline());
    let client = legacy_stdio(handler, &[]).await;
    let result = call(&client, "ask_password", json!({})).await;
    assert_eq!(text(&result), r#"{"action":"decline"}"#);

    let ElicitRequestParams::FormElicitationParams {
        requested_schema, ..
    } = seen.request().await
    else {
        panic!("expected a form");
    };
    let schema = serde_json::to_value(&requested_schema).unwrap();
    assert_eq!(
        schema["properties"]["password"],
        json!({"type": "string", "title": "Account password",
               "description": "The password of your demo account"})
    );
    assert_eq!(schema["required"], json!(["password"]));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn connect_account_completes_when_the_page_is_submitted() {
    let dir = tempfile::tempdir().unwrap();
    let hits_file = dir.path().join("hits.log");
    let (handler, mut seen) = recorder(|_| accept());
    let client = Arc::new(
        legacy_stdio(
            handler,
            &["--page-hits", hits_file.to_str().expect("UTF-8 temp path")],
        )
        .await,
    );

    let calling = {
        let client = client.clone();
        tokio::spawn(async move {
            call(&client, "connect_account", json!({"service": "calendar"})).await
        })
    };
    let (message, url, id) = url_of(&seen.request().await);
    assert_eq!(page_id(&url), id, "the page is named by the elicitation id");
    assert!(message.contains("calendar"), "{message}");
    assert!(!calling.is_finished(), "waits for the page after consent");

    let (status, page) = get_page(&url).await;
    assert_eq!(status, 200);
    assert!(
        page.contains(&format!("<form method=\"post\" action=\"/connect/{id}\">")),
        "{page}"
    );
    assert_eq!(hits(&hits_file), format!("GET /connect/{id}\n"));

    let (status, page) = post_page(&url).await;
    assert_eq!(status, 200);
    assert!(
        page.contains("Connected. You can close this tab."),
        "{page}"
    );
    assert_eq!(seen.completion().await, id);
    let result = tokio::time::timeout(TIMEOUT, calling)
        .await
        .expect("connect_account returns")
        .unwrap();
    assert_eq!(
        text(&result),
        format!("connected calendar (elicitation {id})")
    );

    // A second submission is idempotent and notifies nobody again.
    assert_eq!(post_page(&url).await.0, 200);
    seen.assert_quiet().await;

    // Ids never issued: 404, but fetching one is still a hit.
    let origin = url.split("/connect/").next().unwrap();
    let forged = format!("{origin}/connect/{}", "0".repeat(32));
    assert_eq!(post_page(&forged).await.0, 404);
    assert_eq!(get_page(&forged).await.0, 404);
    assert_eq!(get_page(&format!("{origin}/elsewhere")).await.0, 404);
    assert_eq!(
        hits(&hits_file),
        format!("GET /connect/{id}\nGET /connect/{}\n", "0".repeat(32))
    );
    seen.assert_quiet().await;
}

#[tokio::test]
async fn connect_account_reports_a_decline_and_forgets_the_page() {
    let (handler, mut seen) = recorder(|_| decline());
    let client = legacy_stdio(handler, &[]).await;
    let result = call(&client, "connect_account", json!({})).await;
    assert_eq!(text(&result), "not connected: decline");
    let (message, url, _) = url_of(&seen.request().await);
    assert!(message.contains("demo-calendar"), "the default service");
    assert_eq!(post_page(&url).await.0, 404);
    seen.assert_quiet().await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn connect_account_required_asks_with_32042_then_succeeds_on_retry() {
    let (handler, mut seen) = recorder(|_| accept());
    let client = legacy_stdio(handler, &[]).await;

    let error = call_err(&client, "connect_account_required", json!({})).await;
    assert_eq!(error.code.0, -32042);
    assert_eq!(error.message, "This request requires more information.");
    let data = error.data.expect("data");
    let elicitations = data["elicitations"].as_array().expect("elicitations");
    assert_eq!(elicitations.len(), 1, "{data}");
    let entry = &elicitations[0];
    assert_eq!(entry["mode"], "url");
    let id = entry["elicitationId"].as_str().unwrap().to_owned();
    let url = entry["url"].as_str().unwrap().to_owned();
    assert_eq!(page_id(&url), id);
    assert!(
        entry["message"]
            .as_str()
            .is_some_and(|m| m.contains("demo-calendar"))
    );

    // Retrying before the page is done: the same pending id, not a new one.
    let again = call_err(&client, "connect_account_required", json!({})).await;
    assert_eq!(again.code.0, -32042);
    assert_eq!(again.data.unwrap(), data);

    assert_eq!(post_page(&url).await.0, 200);
    assert_eq!(seen.completion().await, id);
    let result = call(&client, "connect_account_required", json!({})).await;
    assert_eq!(
        text(&result),
        format!("connected demo-calendar (elicitation {id})")
    );

    // Consumed: the next call starts over with a fresh id.
    let next = call_err(&client, "connect_account_required", json!({})).await;
    let next_id = next.data.unwrap()["elicitations"][0]["elicitationId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(next_id, id);
    // The server never sent an elicitation/create request for any of this.
    seen.assert_quiet().await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn spoof_completion_sends_ids_that_were_never_issued() {
    let (handler, mut seen) = recorder(|_| accept());
    let client = legacy_stdio(handler, &[]).await;
    let result = call(&client, "spoof_completion", json!({"count": 3})).await;
    assert_eq!(text(&result), "sent 3 spoofed completions");
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(seen.completion().await);
    }
    for id in &ids {
        let random = id.strip_prefix("spoofed-").expect("spoofed- prefix");
        assert!(is_hex_id(random), "{id}");
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3, "distinct ids");

    let too_many = call(&client, "spoof_completion", json!({"count": 21})).await;
    assert_eq!(too_many.is_error, Some(true));
    assert_eq!(text(&too_many), "count must be at most 20");
    seen.assert_quiet().await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn open_link_sends_the_url_unchanged() {
    let (handler, mut seen) = recorder(|_| accept());
    let client = legacy_stdio(handler, &[]).await;
    let phishing = "https://github.com@evil.example/login?next=%2F";
    let result = call(&client, "open_link", json!({"url": phishing})).await;
    assert_eq!(text(&result), r#"{"action":"accept"}"#);
    let (message, url, id) = url_of(&seen.request().await);
    assert_eq!(url, phishing);
    assert_eq!(message, "Open this link");
    assert!(is_hex_id(&id), "a fresh elicitation id: {id}");
    client.cancel().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// 2026-07-28
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn book_table_asks_with_input_required() {
    let (handler, mut seen) = recorder(|_| panic!("2026-07-28 sends no elicitation requests"));
    let client = modern_stdio(handler, &[]).await;

    let first = input_required(call_once(&client, params("book_table", json!({}))).await);
    assert!(first.request_state.is_none(), "no state needed");
    let ElicitRequestParams::FormElicitationParams {
        message,
        requested_schema,
        ..
    } = elicitation(&first, "booking")
    else {
        panic!("expected a form");
    };
    assert_eq!(message, "Book a table at the demo restaurant");
    assert_eq!(requested_schema.properties.len(), 13);

    let answer = json!({"action": "accept", "content": booking_answer()});
    let retry =
        params("book_table", json!({})).with_input_responses(responses("booking", answer.clone()));
    let result = complete(call_once(&client, retry).await);
    let received: Value = serde_json::from_str(text(&result)).unwrap();
    assert_eq!(received, answer);

    let cancel = params("book_table", json!({}))
        .with_input_responses(responses("booking", json!({"action": "cancel"})));
    let result = complete(call_once(&client, cancel).await);
    assert_eq!(text(&result), r#"{"action":"cancel"}"#);
    seen.assert_quiet().await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn connect_account_round_trips_until_the_page_is_submitted() {
    let (handler, mut seen) = recorder(|_| panic!("2026-07-28 sends no elicitation requests"));
    let client = modern_stdio(handler, &[]).await;
    let args = json!({"service": "mail"});

    let first = input_required(call_once(&client, params("connect_account", args.clone())).await);
    let (message, url, elicitation_id) = url_of(&elicitation(&first, "connect"));
    assert!(elicitation_id.is_empty(), "2026-07-28 has no elicitationId");
    assert!(message.contains("mail"), "{message}");
    let id = page_id(&url);
    let state = first.request_state.clone().expect("requestState");
    assert_eq!(state, format!("connect:{id}"));

    let retry = || {
        params("connect_account", args.clone())
            .with_request_state(state.clone())
            .with_input_responses(responses("connect", json!({"action": "accept"})))
    };
    // Consented, page not submitted yet: asked again with the same URL and state.
    let again = input_required(call_once(&client, retry()).await);
    assert_eq!(url_of(&elicitation(&again, "connect")).1, url);
    assert_eq!(again.request_state.as_deref(), Some(state.as_str()));

    assert_eq!(get_page(&url).await.0, 200);
    assert_eq!(post_page(&url).await.0, 200);
    let result = complete(call_once(&client, retry()).await);
    assert_eq!(result.is_error, Some(false));
    assert_eq!(text(&result), format!("connected mail (elicitation {id})"));

    // The state is spent.
    let replay = complete(call_once(&client, retry()).await);
    assert_eq!(replay.is_error, Some(true), "{replay:?}");
    // 2026-07-28 has no completion notification.
    seen.assert_quiet().await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn connect_account_refuses_forged_state_and_reports_a_decline() {
    let (handler, mut seen) = recorder(|_| panic!("2026-07-28 sends no elicitation requests"));
    let client = modern_stdio(handler, &[]).await;
    let accept = || responses("connect", json!({"action": "accept"}));

    for forged in [
        format!("connect:{}", "0".repeat(32)),
        "connect:../../etc".to_owned(),
        "something else".to_owned(),
    ] {
        let call = params("connect_account", json!({}))
            .with_request_state(forged.clone())
            .with_input_responses(accept());
        let result = complete(call_once(&client, call).await);
        assert_eq!(result.is_error, Some(true), "{forged}: {result:?}");
        assert!(text(&result).contains("requestState"), "{result:?}");
    }

    // A state issued by one connect tool is not valid for the other.
    let first = input_required(call_once(&client, params("connect_account", json!({}))).await);
    let state = first.request_state.clone().unwrap();
    let crossed = params("connect_account_required", json!({}))
        .with_request_state(state.clone())
        .with_input_responses(accept());
    assert_eq!(
        complete(call_once(&client, crossed).await).is_error,
        Some(true)
    );

    let declined = params("connect_account", json!({}))
        .with_request_state(state)
        .with_input_responses(responses("connect", json!({"action": "decline"})));
    let result = complete(call_once(&client, declined).await);
    assert_eq!(text(&result), "not connected: decline");
    assert_eq!(
        post_page(&url_of(&elicitation(&first, "connect")).1)
            .await
            .0,
        404,
        "a declined page is forgotten"
    );
    seen.assert_quiet().await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn connect_account_required_uses_input_required_in_2026() {
    let (handler, mut seen) = recorder(|_| panic!("2026-07-28 sends no elicitation requests"));
    let client = modern_stdio(handler, &[]).await;
    let first =
        input_required(call_once(&client, params("connect_account_required", json!({}))).await);
    let (_, url, _) = url_of(&elicitation(&first, "connect"));
    let id = page_id(&url);
    assert_eq!(post_page(&url).await.0, 200);
    let retry = params("connect_account_required", json!({}))
        .with_request_state(first.request_state.unwrap())
        .with_input_responses(responses("connect", json!({"action": "accept"})));
    let result = complete(call_once(&client, retry).await);
    assert_eq!(
        text(&result),
        format!("connected demo-calendar (elicitation {id})")
    );
    seen.assert_quiet().await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn open_link_and_spoof_completion_in_2026() {
    let (handler, mut seen) = recorder(|_| panic!("2026-07-28 sends no elicitation requests"));
    let client = modern_stdio(handler, &[]).await;
    let link = json!({"url": "https://xn--80ak6aa92e.com/", "message": "Sign in"});
    let first = input_required(call_once(&client, params("open_link", link.clone())).await);
    assert!(first.request_state.is_none());
    let (message, url, id) = url_of(&elicitation(&first, "link"));
    assert_eq!(
        (message.as_str(), url.as_str(), id.as_str()),
        ("Sign in", "https://xn--80ak6aa92e.com/", "")
    );
    let retry = params("open_link", link)
        .with_input_responses(responses("link", json!({"action": "decline"})));
    let result = complete(call_once(&client, retry).await);
    assert_eq!(text(&result), r#"{"action":"decline"}"#);

    let result = call(&client, "spoof_completion", json!({})).await;
    assert_eq!(text(&result), "sent 2 spoofed completions");
    for _ in 0..2 {
        assert!(seen.completion().await.starts_with("spoofed-"));
    }
    seen.assert_quiet().await;
    client.cancel().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Over Streamable HTTP, and on the wire
// ---------------------------------------------------------------------------------------------

/// Session-less 2026-07-28 requests each get a fresh server; the pages are shared by all.
#[tokio::test]
async fn connect_account_over_stateless_http() {
    let server = HttpServer::spawn(&[]);
    let (handler, mut seen) = recorder(|_| panic!("2026-07-28 sends no elicitation requests"));
    let client = tokio::time::timeout(
        TIMEOUT,
        handler.serve_with_lifecycle(http_transport(&server.url), modern()),
    )
    .await
    .expect("connecting timed out")
    .unwrap_or_else(|error| panic!("{error}; stderr:\n{}", server.stderr()));

    let first = input_required(call_once(&client, params("connect_account", json!({}))).await);
    let (_, url, _) = url_of(&elicitation(&first, "connect"));
    let id = page_id(&url);
    assert_eq!(post_page(&url).await.0, 200);
    let retry = params("connect_account", json!({}))
        .with_request_state(first.request_state.unwrap())
        .with_input_responses(responses("connect", json!({"action": "accept"})));
    let result = complete(call_once(&client, retry).await);
    assert_eq!(
        text(&result),
        format!("connected demo-calendar (elicitation {id})")
    );
    seen.assert_quiet().await;
    client.cancel().await.unwrap();
}

/// A 2025-11-25 HTTP session is one connection: its -32042 retry works, and the completion
/// reaches it on its standalone stream.
#[tokio::test]
async fn connect_account_required_over_an_http_session() {
    let server = HttpServer::spawn(&[]);
    let (handler, mut seen) = recorder(|_| accept());
    let client = tokio::time::timeout(
        TIMEOUT,
        handler.serve_with_lifecycle(http_transport(&server.url), ClientLifecycleMode::Initialize),
    )
    .await
    .expect("connecting timed out")
    .unwrap_or_else(|error| panic!("{error}; stderr:\n{}", server.stderr()));

    let error = call_err(&client, "connect_account_required", json!({})).await;
    assert_eq!(error.code.0, -32042);
    let data = error.data.unwrap();
    let id = data["elicitations"][0]["elicitationId"]
        .as_str()
        .unwrap()
        .to_owned();
    let url = data["elicitations"][0]["url"].as_str().unwrap().to_owned();

    // Another session does not share this one's pending id.
    let (other_handler, _other_seen) = recorder(|_| accept());
    let other = tokio::time::timeout(
        TIMEOUT,
        other_handler
            .serve_with_lifecycle(http_transport(&server.url), ClientLifecycleMode::Initialize),
    )
    .await
    .expect("connecting timed out")
    .expect("second session");
    let other_error = call_err(&other, "connect_account_required", json!({})).await;
    assert_ne!(
        other_error.data.unwrap()["elicitations"][0]["elicitationId"],
        json!(id)
    );

    assert_eq!(post_page(&url).await.0, 200);
    assert_eq!(seen.completion().await, id);
    let result = call(&client, "connect_account_required", json!({})).await;
    assert_eq!(
        text(&result),
        format!("connected demo-calendar (elicitation {id})")
    );
    other.cancel().await.unwrap();
    client.cancel().await.unwrap();
}

/// rmcp writes `"elicitationId": ""` into 2026-07-28 URL elicitations; the demo strips it.
#[tokio::test]
async fn modern_url_elicitations_carry_no_elicitation_id_on_the_wire() {
    let meta = modern_meta_with(json!({
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}}
    }));

    let mut stdio = StdioServer::spawn(&[]);
    for (name, key) in [("connect_account", "connect"), ("open_link", "link")] {
        let result = stdio.call(
            "tools/call",
            json!({"name": name, "arguments": {"url": "https://example.com/"}, "_meta": meta}),
        );
        assert_eq!(result["resultType"], "input_required", "{result}");
        let params = result["inputRequests"][key]["params"].as_object().unwrap();
        assert_eq!(params["mode"], "url");
        assert!(!params.contains_key("elicitationId"), "{result}");
    }

    let server = HttpServer::spawn(&[]);
    let http = HttpClient::new(&server.url);
    let exchange = http
        .modern(
            1,
            "tools/call",
            json!({"name": "connect_account", "arguments": {}, "_meta": meta}),
        )
        .await;
    assert_eq!(exchange.status, 200, "{exchange:?}");
    let result = exchange.result();
    assert_eq!(result["resultType"], "input_required", "{result}");
    let params = result["inputRequests"]["connect"]["params"]
        .as_object()
        .unwrap();
    assert!(!params.contains_key("elicitationId"), "{result}");
    assert!(
        result["requestState"]
            .as_str()
            .is_some_and(|s| s.starts_with("connect:"))
    );
}

/// Cancelling a 2025-11-25 connect_account that waits for its page ends the wait and forgets
/// the page.
#[tokio::test]
async fn cancelling_connect_account_forgets_the_page() {
    let (handler, mut seen) = recorder(|_| accept());
    let client = legacy_stdio(handler, &[]).await;
    let request = client
        .peer()
        .send_cancellable_request(
            rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params(
                "connect_account",
                json!({}),
            ))),
            Default::default(),
        )
        .await
        .expect("send tools/call");
    let (_, page, _) = url_of(&seen.request().await);
    request
        .cancel(Some("test cancels".into()))
        .await
        .expect("cancel");
    // The server stops waiting and withdraws the page. (GET to poll: a POST would complete it.)
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if get_page(&page).await.0 == 404 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "page still live after cancel"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    seen.assert_quiet().await;
    client.cancel().await.unwrap();
}
