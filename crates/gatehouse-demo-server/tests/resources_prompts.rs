//! Resources, resource templates, prompts, completions and subscriptions against rmcp 3.9's own
//! client, in both eras, over stdio and Streamable HTTP: what is listed, what reads return,
//! the forms `plan_trip` and the diary ask (elicitation/create in 2025-11-25, input_required
//! rounds in 2026-07-28), the ticking counter, and the hostile content behind its flag.

mod common;

use std::{process::Stdio, sync::Arc, time::Duration};

use base64::{Engine as _, engine::general_purpose::STANDARD as BASE64};
use common::{BIN, HttpServer, SERVER_ENV, TIMEOUT};
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient,
    model::{
        ClientCapabilities, ClientConfig, ContentBlock, ElicitRequest, ElicitRequestParams,
        ElicitResult, ElicitationAction, ElicitationCapability, ErrorCode,
        FormElicitationCapability, GetPromptRequestParams, GetPromptResponse, GetPromptResult,
        Implementation, InputRequest, InputRequiredResult, InputResponses, ProtocolVersion,
        ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ResourceContents,
        ResourceUpdatedNotificationParam, ServerNotification, SubscribeRequestParams,
        SubscriptionFilter, UnsubscribeRequestParams,
    },
    service::{NotificationContext, RequestContext, RunningService, ServiceError},
    transport::{
        StreamableHttpClientTransport, TokioChildProcess,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];

const RESOURCES: [&str; 6] = [
    "demo://docs/welcome.txt",
    "demo://docs/guide.md",
    "demo://images/logo.png",
    "demo://data/sample.bin",
    "demo://counter",
    "demo://private/diary",
];
const HOSTILE_RESOURCES: [&str; 4] = [
    "demo://hostile/huge.txt",
    "demo://hostile/not-base64.bin",
    "demo://hostile/lying.png",
    "demo://hostile/markup.html",
];
const PROMPTS: [&str; 4] = ["summarize", "review_code", "describe_logo", "plan_trip"];

type Answer = dyn Fn(&ElicitRequestParams) -> ElicitResult + Send + Sync;

/// A client that answers every elicitation with `answer` and reports what it saw.
struct Tester {
    answer: Arc<Answer>,
    asked: mpsc::UnboundedSender<ElicitRequestParams>,
    updates: mpsc::UnboundedSender<String>,
}

struct Seen {
    asked: mpsc::UnboundedReceiver<ElicitRequestParams>,
    updates: mpsc::UnboundedReceiver<String>,
}

impl Seen {
    async fn update(&mut self) -> String {
        tokio::time::timeout(TIMEOUT, self.updates.recv())
            .await
            .expect("no notifications/resources/updated in time")
            .expect("client gone")
    }

    fn drain_updates(&mut self) -> usize {
        let mut count = 0;
        while self.updates.try_recv().is_ok() {
            count += 1;
        }
        count
    }

    fn asked(&mut self) -> Vec<ElicitRequestParams> {
        let mut asked = Vec::new();
        while let Ok(params) = self.asked.try_recv() {
            asked.push(params);
        }
        asked
    }
}

impl ClientHandler for Tester {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let answer = (self.answer)(&request);
        let _ = self.asked.send(request);
        Ok(answer)
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.updates.send(params.uri);
    }

    fn get_info(&self) -> ClientConfig {
        let elicitation = ElicitationCapability::new().with_form(FormElicitationCapability::new());
        ClientConfig::new(
            ClientCapabilities::builder()
                .enable_elicitation_with(elicitation)
                .build(),
            Implementation::new("resources-prompts-tests", "0"),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }
}

fn tester(
    answer: impl Fn(&ElicitRequestParams) -> ElicitResult + Send + Sync + 'static,
) -> (Tester, Seen) {
    let (asked, asked_rx) = mpsc::unbounded_channel();
    let (updates, updates_rx) = mpsc::unbounded_channel();
    (
        Tester {
            answer: Arc::new(answer),
            asked,
            updates,
        },
        Seen {
            asked: asked_rx,
            updates: updates_rx,
        },
    )
}

fn never_asked() -> (Tester, Seen) {
    tester(|_| ElicitResult::new(ElicitationAction::Cancel))
}

fn accept(content: Value) -> ElicitResult {
    ElicitResult::new(ElicitationAction::Accept).with_content(content)
}

type Client = RunningService<RoleClient, Tester>;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Era {
    Legacy,
    Modern,
}

const ERAS: [Era; 2] = [Era::Legacy, Era::Modern];

impl Era {
    fn mode(self) -> ClientLifecycleMode {
        match self {
            Era::Legacy => ClientLifecycleMode::Initialize,
            Era::Modern => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        }
    }

    fn version(self) -> ProtocolVersion {
        match self {
            Era::Legacy => ProtocolVersion::V_2025_11_25,
            Era::Modern => ProtocolVersion::V_2026_07_28,
        }
    }

    /// What `-32002` resource-not-found becomes on the wire in this era (rmcp maps it to
    /// `-32602` for 2026-07-28, as that revision says).
    fn not_found(self) -> ErrorCode {
        match self {
            Era::Legacy => ErrorCode::RESOURCE_NOT_FOUND,
            Era::Modern => ErrorCode::INVALID_PARAMS,
        }
    }
}

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

fn http_transport(url: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(url))
}

async fn stdio(era: Era, handler: Tester, args: &[&str]) -> Client {
    let client = tokio::time::timeout(
        TIMEOUT,
        handler.serve_with_lifecycle(stdio_transport(args), era.mode()),
    )
    .await
    .expect("connecting timed out")
    .unwrap_or_else(|error| panic!("{era:?}: {error}"));
    assert_eq!(client.peer_info().unwrap().protocol_version, era.version());
    client
}

async fn http(era: Era, handler: Tester, server: &HttpServer) -> Client {
    let client = tokio::time::timeout(
        TIMEOUT,
        handler.serve_with_lifecycle(http_transport(&server.url), era.mode()),
    )
    .await
    .expect("connecting timed out")
    .unwrap_or_else(|error| panic!("{era:?}: {error}; stderr:\n{}", server.stderr()));
    assert_eq!(client.peer_info().unwrap().protocol_version, era.version());
    client
}

async fn timed<T>(what: &str, future: impl Future<Output = Result<T, ServiceError>>) -> T {
    tokio::time::timeout(TIMEOUT, future)
        .await
        .unwrap_or_else(|_| panic!("{what} timed out"))
        .unwrap_or_else(|error| panic!("{what}: {error}"))
}

async fn timed_err<T: std::fmt::Debug>(
    what: &str,
    future: impl Future<Output = Result<T, ServiceError>>,
) -> ErrorData {
    match tokio::time::timeout(TIMEOUT, future)
        .await
        .unwrap_or_else(|_| panic!("{what} timed out"))
    {
        Err(ServiceError::McpError(error)) => error,
        other => panic!("{what}: expected a JSON-RPC error, got {other:?}"),
    }
}

async fn read(client: &Client, uri: &str) -> ReadResourceResult {
    timed(
        uri,
        client.read_resource(ReadResourceRequestParams::new(uri)),
    )
    .await
}

/// The single contents of `uri`: (mimeType, text or decoded blob).
async fn read_one(client: &Client, uri: &str) -> (Option<String>, Result<String, String>) {
    let result = read(client, uri).await;
    assert_eq!(result.contents.len(), 1, "{uri}: {result:?}");
    match &result.contents[0] {
        ResourceContents::TextResourceContents {
            uri: got,
            mime_type,
            text,
            ..
        } => {
            assert_eq!(got, uri);
            (mime_type.clone(), Ok(text.clone()))
        }
        ResourceContents::BlobResourceContents {
            uri: got,
            mime_type,
            blob,
            ..
        } => {
            assert_eq!(got, uri);
            (mime_type.clone(), Err(blob.clone()))
        }
        other => panic!("{uri}: unexpected contents {other:?}"),
    }
}

async fn text_of(client: &Client, uri: &str) -> String {
    read_one(client, uri)
        .await
        .1
        .unwrap_or_else(|blob| panic!("{uri} is a blob: {blob:.80}"))
}

fn prompt(name: &str, arguments: Value) -> GetPromptRequestParams {
    GetPromptRequestParams::new(name).with_arguments(arguments.as_object().unwrap().clone())
}

fn message_text(result: &GetPromptResult, index: usize) -> &str {
    &result.messages[index]
        .content
        .as_text()
        .unwrap_or_else(|| panic!("message {index} is text: {result:?}"))
        .text
}

/// The single form of an `input_required` result, under `key`.
fn form_of(result: &InputRequiredResult, key: &str) -> (String, Value) {
    let requests = result.input_requests.as_ref().expect("inputRequests");
    assert_eq!(requests.keys().collect::<Vec<_>>(), [key]);
    match &requests[key] {
        InputRequest::Elicitation(ElicitRequest {
            params:
                ElicitRequestParams::FormElicitationParams {
                    message,
                    requested_schema,
                    ..
                },
            ..
        }) => (
            message.clone(),
            serde_json::to_value(requested_schema).unwrap(),
        ),
        other => panic!("expected a form elicitation, got {other:?}"),
    }
}

fn responses(key: &str, answer: Value) -> InputResponses {
    InputResponses::from([(key.to_owned(), answer)])
}

async fn resource_uris(client: &Client) -> Vec<String> {
    timed("resources/list", client.list_all_resources())
        .await
        .into_iter()
        .map(|resource| resource.uri)
        .collect()
}

async fn template_uris(client: &Client) -> Vec<String> {
    timed(
        "resources/templates/list",
        client.list_all_resource_templates(),
    )
    .await
    .into_iter()
    .map(|template| template.uri_template)
    .collect()
}

async fn prompt_names(client: &Client) -> Vec<String> {
    timed("prompts/list", client.list_all_prompts())
        .await
        .into_iter()
        .map(|prompt| prompt.name)
        .collect()
}

/// Everything listed, checked in detail, across pages of 2.
async fn check_lists(client: &Client) {
    let info = client.peer_info().unwrap();
    let resources_capability = info.capabilities.resources.as_ref().expect("resources");
    assert_eq!(resources_capability.subscribe, Some(true));
    assert_eq!(resources_capability.list_changed, Some(false));
    assert_eq!(
        info.capabilities
            .prompts
            .as_ref()
            .expect("prompts")
            .list_changed,
        Some(false)
    );
    assert!(info.capabilities.completions.is_some());
    assert!(info.capabilities.tools.is_some());

    let resources = timed("resources/list", client.list_all_resources()).await;
    let uris: Vec<&str> = resources
        .iter()
        .map(|resource| resource.uri.as_str())
        .collect();
    assert_eq!(uris, RESOURCES);
    let welcome = &resources[0];
    assert_eq!(welcome.name, "welcome.txt");
    assert_eq!(welcome.title.as_deref(), Some("Welcome"));
    assert_eq!(welcome.mime_type.as_deref(), Some("text/plain"));
    let mimes: Vec<_> = resources
        .iter()
        .map(|resource| resource.mime_type.as_deref().unwrap())
        .collect();
    assert_eq!(
        mimes,
        [
            "text/plain",
            "text/markdown",
            "image/png",
            "application/octet-stream",
            "text/plain",
            "text/plain"
        ]
    );

    let templates = timed(
        "resources/templates/list",
        client.list_all_resource_templates(),
    )
    .await;
    assert_eq!(templates.len(), 1);
    let note = &templates[0];
    assert_eq!(note.uri_template, "demo://notes/{name}");
    assert_eq!(note.name, "note");
    assert_eq!(note.title.as_deref(), Some("Note"));
    assert_eq!(
        note.description.as_deref(),
        Some("A note by name: groceries, ideas or todo")
    );
    assert_eq!(note.mime_type.as_deref(), Some("text/plain"));

    let prompts = timed("prompts/list", client.list_all_prompts()).await;
    let names: Vec<&str> = prompts.iter().map(|prompt| prompt.name.as_str()).collect();
    assert_eq!(names, PROMPTS);
    let summarize = &prompts[0];
    assert_eq!(summarize.title.as_deref(), Some("Summarize"));
    assert!(summarize.description.is_some());
    let arguments: Vec<_> = summarize
        .arguments
        .as_ref()
        .unwrap()
        .iter()
        .map(|argument| (argument.name.as_str(), argument.required))
        .collect();
    assert_eq!(arguments, [("topic", Some(true)), ("length", Some(false))]);
    let review: Vec<_> = prompts[1]
        .arguments
        .as_ref()
        .unwrap()
        .iter()
        .map(|argument| (argument.name.as_str(), argument.required))
        .collect();
    assert_eq!(review, [("language", Some(true)), ("code", Some(true))]);
    assert!(prompts[2].arguments.is_none());
    let trip: Vec<_> = prompts[3]
        .arguments
        .as_ref()
        .unwrap()
        .iter()
        .map(|argument| (argument.name.as_str(), argument.required))
        .collect();
    assert_eq!(trip, [("destination", Some(false))]);
}

#[tokio::test]
async fn lists_resources_templates_and_prompts_in_both_eras_over_stdio() {
    for era in ERAS {
        let client = stdio(era, never_asked().0, &["--page-size", "2"]).await;
        check_lists(&client).await;
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn lists_and_reads_over_http_in_both_eras() {
    let server = HttpServer::spawn(&["--page-size", "4"]);
    for era in ERAS {
        let client = http(era, never_asked().0, &server).await;
        check_lists(&client).await;
        let text = text_of(&client, "demo://notes/todo").await;
        assert!(text.starts_with("To do:"), "{text}");
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn reads_text_blobs_and_notes_in_both_eras() {
    for era in ERAS {
        let client = stdio(era, never_asked().0, &[]).await;

        let (mime, welcome) = read_one(&client, "demo://docs/welcome.txt").await;
        assert_eq!(mime.as_deref(), Some("text/plain"));
        assert!(welcome.unwrap().contains("Gatehouse demo server"));

        let (mime, guide) = read_one(&client, "demo://docs/guide.md").await;
        assert_eq!(mime.as_deref(), Some("text/markdown"));
        let guide = guide.unwrap();
        assert!(
            guide.contains("[Gatehouse](https://example.com)"),
            "{guide}"
        );
        assert!(guide.contains("<b>bold</b>"), "{guide}");

        let (mime, logo) = read_one(&client, "demo://images/logo.png").await;
        assert_eq!(mime.as_deref(), Some("image/png"));
        let logo = BASE64.decode(logo.unwrap_err()).expect("logo is base64");
        assert_eq!(logo[..8], PNG_SIGNATURE);
        assert_eq!(logo[12..16], *b"IHDR");
        assert_eq!(logo[16..24], [0, 0, 0, 16, 0, 0, 0, 16], "16x16");

        let (mime, sample) = read_one(&client, "demo://data/sample.bin").await;
        assert_eq!(mime.as_deref(), Some("application/octet-stream"));
        let sample = BASE64
            .decode(sample.unwrap_err())
            .expect("sample is base64");
        assert_eq!(sample, (0..64).collect::<Vec<u8>>());

        for (name, start) in [
            ("groceries", "Groceries:"),
            ("ideas", "Ideas:"),
            ("todo", "To do:"),
        ] {
            let (mime, text) = read_one(&client, &format!("demo://notes/{name}")).await;
            assert_eq!(mime.as_deref(), Some("text/plain"));
            assert!(text.unwrap().starts_with(start), "{name}");
        }

        assert_eq!(text_of(&client, "demo://counter").await, "count: 0");

        for uri in [
            "demo://nope",
            "demo://notes/secrets",
            "demo://hostile/huge.txt",
            "file:///etc/passwd",
        ] {
            let error = timed_err(
                uri,
                client.read_resource(ReadResourceRequestParams::new(uri)),
            )
            .await;
            assert_eq!(error.code, era.not_found(), "{era:?} {uri}: {error:?}");
            assert!(error.message.contains(uri), "{error:?}");
        }
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn completes_template_and_prompt_arguments() {
    for era in ERAS {
        let client = stdio(era, never_asked().0, &[]).await;
        let notes = |value: &'static str| {
            client.complete_resource_simple("demo://notes/{name}", "name", value)
        };
        assert_eq!(
            timed("complete", notes("")).await,
            ["groceries", "ideas", "todo"]
        );
        assert_eq!(timed("complete", notes("t")).await, ["todo"]);
        assert!(timed("complete", notes("x")).await.is_empty());

        let prompt = |name: &'static str, argument: &'static str, value: &'static str| {
            client.complete_prompt_simple(name, argument, value)
        };
        assert_eq!(
            timed("complete", prompt("summarize", "topic", "")).await,
            ["gatehouse", "mcp", "oauth", "resources", "prompts"]
        );
        assert_eq!(
            timed("complete", prompt("summarize", "topic", "r")).await,
            ["resources"]
        );
        assert_eq!(
            timed("complete", prompt("summarize", "length", "")).await,
            ["short", "long"]
        );
        assert_eq!(
            timed("complete", prompt("review_code", "language", "py")).await,
            ["python"]
        );
        assert!(
            timed("complete", prompt("review_code", "code", ""))
                .await
                .is_empty()
        );
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn prompts_fill_in_their_arguments_in_both_eras() {
    for era in ERAS {
        let client = stdio(era, never_asked().0, &[]).await;

        let result = timed(
            "summarize",
            client.get_prompt(prompt(
                "summarize",
                json!({"topic": "oauth", "length": "long"}),
            )),
        )
        .await;
        assert!(result.description.is_some());
        assert_eq!(result.messages.len(), 1);
        assert_eq!(
            message_text(&result, 0),
            "Summarize oauth in a long summary."
        );
        let result = timed(
            "summarize",
            client.get_prompt(prompt("summarize", json!({"topic": "mcp"}))),
        )
        .await;
        assert_eq!(
            message_text(&result, 0),
            "Summarize mcp in a short summary."
        );

        let error = timed_err(
            "summarize without topic",
            client.get_prompt(prompt("summarize", json!({"length": "short"}))),
        )
        .await;
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(error.message.contains("topic"), "{error:?}");

        let error = timed_err(
            "unknown prompt",
            client.get_prompt(prompt("nope", json!({}))),
        )
        .await;
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);

        let result = timed(
            "review_code",
            client.get_prompt(prompt(
                "review_code",
                json!({"language": "rust", "code": "fn main() {}"}),
            )),
        )
        .await;
        assert_eq!(result.messages.len(), 2);
        assert!(message_text(&result, 0).starts_with("Review this rust code:"));
        let ContentBlock::Resource(embedded) = &result.messages[1].content else {
            panic!("the second message embeds a resource: {result:?}");
        };
        let ResourceContents::TextResourceContents { uri, text, .. } = &embedded.resource else {
            panic!("the guide is text");
        };
        assert_eq!(uri, "demo://docs/guide.md");
        assert!(text.contains("<b>bold</b>"));

        let result = timed(
            "describe_logo",
            client.get_prompt(GetPromptRequestParams::new("describe_logo")),
        )
        .await;
        assert_eq!(result.messages.len(), 2);
        assert!(!message_text(&result, 0).is_empty());
        let image = result.messages[1].content.as_image().expect("an image");
        assert_eq!(image.mime_type, "image/png");
        assert_eq!(BASE64.decode(&image.data).unwrap()[..8], PNG_SIGNATURE);
        client.cancel().await.unwrap();
    }
}

fn trip_answer(params: &ElicitRequestParams) -> ElicitResult {
    let ElicitRequestParams::FormElicitationParams { message, .. } = params else {
        panic!("plan_trip asks a form");
    };
    assert_eq!(message, "Plan a trip to Lisbon");
    accept(json!({"traveller": "Ada", "nights": 5}))
}

fn check_trip_schema(schema: &Value) {
    assert_eq!(schema["required"], json!(["traveller"]));
    assert_eq!(schema["properties"]["traveller"]["type"], "string");
    assert_eq!(
        schema["properties"]["traveller"]["description"],
        "Who is travelling?"
    );
    assert_eq!(schema["properties"]["nights"]["type"], "integer");
    assert_eq!(schema["properties"]["nights"]["minimum"], 1);
    assert_eq!(schema["properties"]["nights"]["maximum"], 30);
}

#[tokio::test]
async fn plan_trip_elicits_during_prompts_get_in_2025() {
    let (handler, mut seen) = tester(trip_answer);
    let client = stdio(Era::Legacy, handler, &[]).await;
    let result = timed(
        "plan_trip",
        client.get_prompt(prompt("plan_trip", json!({"destination": "Lisbon"}))),
    )
    .await;
    assert_eq!(result.messages.len(), 1);
    assert_eq!(
        message_text(&result, 0),
        "Plan a trip to Lisbon for Ada, 5 nights."
    );
    let asked = seen.asked();
    assert_eq!(asked.len(), 1, "one elicitation/create");
    let ElicitRequestParams::FormElicitationParams {
        requested_schema, ..
    } = &asked[0]
    else {
        panic!("a form");
    };
    check_trip_schema(&serde_json::to_value(requested_schema).unwrap());
    client.cancel().await.unwrap();

    for action in [ElicitationAction::Decline, ElicitationAction::Cancel] {
        let (handler, _seen) = tester(move |_| ElicitResult::new(action.clone()));
        let client = stdio(Era::Legacy, handler, &[]).await;
        let result = timed(
            "plan_trip",
            client.get_prompt(GetPromptRequestParams::new("plan_trip")),
        )
        .await;
        assert_eq!(result.messages.len(), 1);
        assert!(message_text(&result, 0).contains("declined"), "{result:?}");
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn plan_trip_asks_with_input_required_in_2026() {
    let (handler, mut seen) = tester(trip_answer);
    let client = stdio(Era::Modern, handler, &[]).await;
    let params = prompt("plan_trip", json!({"destination": "Lisbon"}));

    // Round by round: the form under "trip", with a requestState to echo.
    let first = match timed("plan_trip", client.get_prompt_once(params.clone())).await {
        GetPromptResponse::InputRequired(result) => result,
        other => panic!("expected input_required, got {other:?}"),
    };
    assert_eq!(first.request_state.as_deref(), Some("prompt:plan_trip"));
    let (message, schema) = form_of(&first, "trip");
    assert_eq!(message, "Plan a trip to Lisbon");
    check_trip_schema(&schema);

    let retry = params
        .clone()
        .with_request_state("prompt:plan_trip")
        .with_input_responses(responses(
            "trip",
            json!({"action": "accept", "content": {"traveller": "Grace", "nights": 2}}),
        ));
    let GetPromptResponse::Complete(result) =
        timed("plan_trip retry", client.get_prompt_once(retry.clone())).await
    else {
        panic!("expected the prompt");
    };
    assert_eq!(
        message_text(&result, 0),
        "Plan a trip to Lisbon for Grace, 2 nights."
    );

    // A requestState the server never sent is refused.
    let forged = retry.with_request_state("prompt:something-else");
    let error = timed_err("forged state", client.get_prompt_once(forged)).await;
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);

    let declined = params
        .clone()
        .with_request_state("prompt:plan_trip")
        .with_input_responses(responses("trip", json!({"action": "decline"})));
    let GetPromptResponse::Complete(result) =
        timed("declined", client.get_prompt_once(declined)).await
    else {
        panic!("expected the prompt");
    };
    assert!(message_text(&result, 0).contains("declined"));
    assert!(
        seen.asked().is_empty(),
        "2026-07-28 sends no elicitation/create"
    );

    // rmcp's own MRTR driver answers through the client handler.
    let result = timed("plan_trip", client.get_prompt(params)).await;
    assert_eq!(
        message_text(&result, 0),
        "Plan a trip to Lisbon for Ada, 5 nights."
    );
    assert_eq!(seen.asked().len(), 1, "answered once, locally");
    client.cancel().await.unwrap();
}

fn diary_answer(hint: &'static str) -> impl Fn(&ElicitRequestParams) -> ElicitResult {
    move |params| {
        let ElicitRequestParams::FormElicitationParams {
            requested_schema, ..
        } = params
        else {
            panic!("the diary asks a form");
        };
        let schema = serde_json::to_value(requested_schema).unwrap();
        let field = &schema["properties"]["magic_word"];
        assert_eq!(field["type"], "string");
        assert!(field.get("format").is_none(), "not a password field");
        assert_eq!(field["description"], "Say 'open' to read the diary");
        accept(json!({ "magic_word": hint }))
    }
}

#[tokio::test]
async fn the_diary_asks_before_it_opens_in_both_eras() {
    for era in ERAS {
        for (hint, expected) in [
            ("open", "Dear diary: the demo works."),
            ("please", "The diary stays closed."),
        ] {
            let (handler, mut seen) = tester(diary_answer(hint));
            let client = stdio(era, handler, &[]).await;
            let text = text_of(&client, "demo://private/diary").await;
            assert_eq!(text, expected, "{era:?} {hint}");
            assert_eq!(seen.asked().len(), 1, "{era:?}: asked once");
            client.cancel().await.unwrap();
        }
    }

    // 2026-07-28, round by round.
    let client = stdio(Era::Modern, never_asked().0, &[]).await;
    let params = ReadResourceRequestParams::new("demo://private/diary");
    let ReadResourceResponse::InputRequired(first) =
        timed("diary", client.read_resource_once(params.clone())).await
    else {
        panic!("expected input_required");
    };
    assert_eq!(
        first.request_state.as_deref(),
        Some("resource:demo://private/diary")
    );
    let (_, schema) = form_of(&first, "diary");
    assert_eq!(schema["required"], json!(["magic_word"]));
    let declined = params
        .with_request_state("resource:demo://private/diary")
        .with_input_responses(responses("diary", json!({"action": "decline"})));
    let ReadResourceResponse::Complete(result) =
        timed("diary declined", client.read_resource_once(declined)).await
    else {
        panic!("expected the resource");
    };
    let ResourceContents::TextResourceContents { text, .. } = &result.contents[0] else {
        panic!("text");
    };
    assert_eq!(text, "The diary stays closed.");
    client.cancel().await.unwrap();
}

#[tokio::test]
#[allow(deprecated)] // resources/subscribe is the 2025-11-25 way, which this tests.
async fn counter_updates_follow_resources_subscribe_in_2025() {
    let (handler, mut seen) = never_asked();
    let client = stdio(Era::Legacy, handler, &["--tick-ms", "40"]).await;

    // Nobody subscribed: it does not tick.
    assert_eq!(text_of(&client, "demo://counter").await, "count: 0");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(text_of(&client, "demo://counter").await, "count: 0");

    timed(
        "subscribe",
        client.subscribe(SubscribeRequestParams::new("demo://counter")),
    )
    .await;
    assert_eq!(seen.update().await, "demo://counter");
    assert_eq!(seen.update().await, "demo://counter");
    let count = text_of(&client, "demo://counter").await;
    let value: u64 = count.strip_prefix("count: ").unwrap().parse().unwrap();
    assert!(value >= 2, "{count}");

    timed(
        "unsubscribe",
        client.unsubscribe(UnsubscribeRequestParams::new("demo://counter")),
    )
    .await;
    // Updates sent before the unsubscribe was answered may still be on their way.
    tokio::time::sleep(Duration::from_millis(200)).await;
    seen.drain_updates();
    let stopped = text_of(&client, "demo://counter").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(text_of(&client, "demo://counter").await, stopped);
    assert_eq!(seen.drain_updates(), 0, "no updates after unsubscribe");

    // Only resources this server has can be subscribed to.
    let error = timed_err(
        "subscribe to an unknown URI",
        client.subscribe(SubscribeRequestParams::new("demo://nope")),
    )
    .await;
    assert_eq!(error.code, ErrorCode::RESOURCE_NOT_FOUND);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn counter_updates_follow_subscriptions_listen_in_2026() {
    let client = stdio(Era::Modern, never_asked().0, &["--tick-ms", "40"]).await;
    let filter = SubscriptionFilter::builder()
        .resource_subscription("demo://counter")
        .resource_subscription("demo://nope")
        .build();
    let mut subscription = timed("subscriptions/listen", client.peer().listen(filter)).await;
    assert_eq!(
        subscription.acknowledged().resource_subscriptions,
        Some(vec!["demo://counter".to_owned()]),
        "only URIs the server has"
    );
    for _ in 0..2 {
        let notification = timed("next update", subscription.next())
            .await
            .expect("the stream is open");
        let ServerNotification::ResourceUpdatedNotification(update) = notification else {
            panic!("expected notifications/resources/updated, got {notification:?}");
        };
        assert_eq!(update.params.uri, "demo://counter");
    }
    assert_ne!(text_of(&client, "demo://counter").await, "count: 0");

    // Ending the stream stops the counter (the server learns of it asynchronously, so give
    // it a few chances on a loaded machine).
    timed("cancel the stream", subscription.cancel()).await;
    let mut stopped = false;
    for _ in 0..10 {
        let before = text_of(&client, "demo://counter").await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        if text_of(&client, "demo://counter").await == before {
            stopped = true;
            break;
        }
    }
    assert!(stopped, "the counter kept ticking after the stream ended");
    client.cancel().await.unwrap();
}

async fn check_hostile(client: &Client) {
    let mut expected: Vec<String> = RESOURCES.iter().map(|uri| uri.to_string()).collect();
    expected.extend(HOSTILE_RESOURCES.iter().map(|uri| uri.to_string()));
    assert_eq!(resource_uris(client).await, expected);
    assert_eq!(
        template_uris(client).await,
        ["demo://notes/{name}", "{+target}"]
    );
    let templates = timed("templates", client.list_all_resource_templates()).await;
    assert_eq!(templates[1].name, "anything");
    assert_eq!(
        templates[1].description.as_deref(),
        Some("expands to whatever it is given")
    );
    let mut prompts: Vec<String> = PROMPTS.iter().map(|name| name.to_string()).collect();
    prompts.push("markup_prompt".into());
    assert_eq!(prompt_names(client).await, prompts);

    let (mime, huge) = read_one(client, "demo://hostile/huge.txt").await;
    assert_eq!(mime.as_deref(), Some("text/plain"));
    assert_eq!(huge.unwrap().len(), 9 * 1024 * 1024);

    let (mime, blob) = read_one(client, "demo://hostile/not-base64.bin").await;
    assert_eq!(mime.as_deref(), Some("application/octet-stream"));
    assert_eq!(blob.unwrap_err(), "%%% this is not base64 %%%");

    let (mime, blob) = read_one(client, "demo://hostile/lying.png").await;
    assert_eq!(mime.as_deref(), Some("image/png"));
    assert_eq!(
        BASE64.decode(blob.unwrap_err()).unwrap(),
        b"<html><script>alert(1)</script></html>"
    );

    let (mime, html) = read_one(client, "demo://hostile/markup.html").await;
    assert_eq!(mime.as_deref(), Some("text/html"));
    assert_eq!(
        html.unwrap(),
        r#"<img src=x onerror=alert(1)><a href="https://evil.example">click</a>"#
    );

    // The catch-all template lists, but reads nothing.
    let error = timed_err(
        "anything",
        client.read_resource(ReadResourceRequestParams::new("anything/at/all")),
    )
    .await;
    assert!(error.message.contains("anything/at/all"), "{error:?}");

    let result = timed(
        "markup_prompt",
        client.get_prompt(GetPromptRequestParams::new("markup_prompt")),
    )
    .await;
    assert_eq!(result.messages.len(), 2);
    assert_eq!(
        message_text(&result, 0),
        r#"<script>alert(1)</script><a href="javascript:alert(1)">x</a>"#
    );
    let image = result.messages[1].content.as_image().expect("an image");
    assert_eq!(image.mime_type, "image/png");
    assert_eq!(image.data.len(), 12 * 1024 * 1024);
}

#[tokio::test]
async fn hostile_content_appears_only_with_its_flag() {
    // Without the flag: none of it.
    let client = stdio(Era::Legacy, never_asked().0, &[]).await;
    assert_eq!(resource_uris(&client).await, RESOURCES);
    assert_eq!(template_uris(&client).await, ["demo://notes/{name}"]);
    assert_eq!(prompt_names(&client).await, PROMPTS);
    let error = timed_err(
        "markup_prompt",
        client.get_prompt(GetPromptRequestParams::new("markup_prompt")),
    )
    .await;
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    client.cancel().await.unwrap();

    for era in ERAS {
        let client = stdio(era, never_asked().0, &["--hostile-content"]).await;
        check_hostile(&client).await;
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn hostile_content_over_http() {
    let server = HttpServer::spawn(&["--hostile-content"]);
    for era in ERAS {
        let client = http(era, never_asked().0, &server).await;
        check_hostile(&client).await;
        client.cancel().await.unwrap();
    }
    let plain = HttpServer::spawn(&[]);
    let client = http(Era::Modern, never_asked().0, &plain).await;
    assert_eq!(resource_uris(&client).await, RESOURCES);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn forms_and_subscriptions_over_http_in_both_eras() {
    let server = HttpServer::spawn(&["--tick-ms", "40"]);
    for era in ERAS {
        let (handler, mut seen) = tester(diary_answer("open"));
        let client = http(era, handler, &server).await;
        assert_eq!(
            text_of(&client, "demo://private/diary").await,
            "Dear diary: the demo works.",
            "{era:?}"
        );
        assert_eq!(seen.asked().len(), 1, "{era:?}: asked once");
        client.cancel().await.unwrap();

        let (handler, mut seen) = tester(trip_answer);
        let client = http(era, handler, &server).await;
        let result = timed(
            "plan_trip",
            client.get_prompt(prompt("plan_trip", json!({"destination": "Lisbon"}))),
        )
        .await;
        assert_eq!(
            message_text(&result, 0),
            "Plan a trip to Lisbon for Ada, 5 nights.",
            "{era:?}"
        );
        assert_eq!(seen.asked().len(), 1, "{era:?}: asked once");
        client.cancel().await.unwrap();
    }

    // The counter over a 2025-11-25 session: updates arrive on the session's stream.
    let (handler, mut seen) = never_asked();
    let client = http(Era::Legacy, handler, &server).await;
    #[allow(deprecated)] // resources/subscribe is the 2025-11-25 way, which this tests.
    let subscribing = client.subscribe(SubscribeRequestParams::new("demo://counter"));
    timed("subscribe", subscribing).await;
    assert_eq!(seen.update().await, "demo://counter");
    client.cancel().await.unwrap();

    // And over a 2026-07-28 listen stream.
    let client = http(Era::Modern, never_asked().0, &server).await;
    let filter = SubscriptionFilter::builder()
        .resource_subscription("demo://counter")
        .build();
    let mut subscription = timed("subscriptions/listen", client.peer().listen(filter)).await;
    let notification = timed("next update", subscription.next())
        .await
        .expect("the stream is open");
    assert!(
        matches!(
            notification,
            ServerNotification::ResourceUpdatedNotification(_)
        ),
        "{notification:?}"
    );
    timed("cancel the stream", subscription.cancel()).await;
    client.cancel().await.unwrap();
}
