//! The window's commands, by name: ONE dispatcher for every front end of the desk, the window
//! in the background host's process (over `desk.sock`) and the window on a local desk (tests).
//! Each command's arguments are parsed by serde into a struct of their own, keyed exactly as
//! the window sends them (camelCase, as Tauri named command arguments: `promptId`, `readId`),
//! and every failure is the `{code, message}` a [`DeskError`] serializes to.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use gatehouse_host::consent::WaitChoice;
use gatehouse_host::host::Acknowledgement;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::{
    CardState, ClientId, CompletionTarget, Desk, DeskError, NewServer, SignInReply, SignInState,
    WindowAnswer, WindowReply,
};

/// Why a command was not run at all: a stable code for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DispatchCode {
    /// No window command has this name.
    UnknownCommand,
    /// The arguments are not what the command takes.
    BadArguments,
    /// A command the process that owns the desk answers itself (`quit`, `ui_ready`).
    NotDispatched,
}

impl DispatchCode {
    pub fn as_str(self) -> &'static str {
        match self {
            DispatchCode::UnknownCommand => "unknown_command",
            DispatchCode::BadArguments => "bad_arguments",
            DispatchCode::NotDispatched => "not_dispatched",
        }
    }
}

/// A `{code, message}` error value, as the window gets every error.
pub fn error_value(code: &str, message: impl Into<String>) -> Value {
    json!({"code": code, "message": message.into()})
}

fn dispatch_error(code: DispatchCode, message: impl Into<String>) -> Value {
    error_value(code.as_str(), message)
}

/// The window's command names (the same list as src-tauri's `command_names.rs`, which grants
/// each to the window): a test checks the two agree.
pub const COMMANDS: &[&str] = &[
    "servers_list",
    "server_connect",
    "server_detail",
    "server_add",
    "servers_import",
    "server_resume",
    "server_confine",
    "tool_call",
    "server_prompts",
    "server_resources",
    "resource_read",
    "prompt_get",
    "argument_complete",
    "resource_subscribe",
    "resource_unsubscribe",
    "tools_approve",
    "prompts_approve",
    "resources_approve",
    "resource_save",
    "prompts_list",
    "prompt_validate",
    "prompt_answer",
    "prompt_wait_choice",
    "prompt_dismiss",
    "sign_in_cards",
    "sign_in_answer",
    "server_sign_ins",
    "server_sign_in",
    "server_sign_out",
    "audit_list",
    "audit_verify",
    "traffic_list",
    "clients_list",
    "pin_plan",
    "pin",
    "client_configs",
    "client_connect",
    "client_restore",
    "settings_get",
    "autostart_get",
    "autostart_set",
    "quit_preview",
    "quit",
    "ui_ready",
];

fn args<T: DeserializeOwned>(command: &str, args: Value) -> Result<T, Value> {
    // No arguments at all is an empty object, as Tauri read it.
    let args = match args {
        Value::Null => Value::Object(Map::new()),
        other => other,
    };
    serde_json::from_value(args).map_err(|e| {
        dispatch_error(
            DispatchCode::BadArguments,
            format!("invalid arguments for {command}: {e}"),
        )
    })
}

fn answer<T: Serialize>(result: Result<T, DeskError>) -> Result<Value, Value> {
    match result {
        Ok(value) => serde_json::to_value(value).map_err(|e| {
            error_value(
                "internal",
                format!("the answer could not be serialized: {e}"),
            )
        }),
        Err(error) => Err(serde_json::to_value(&error)
            .unwrap_or_else(|_| error_value("internal", error.message.clone()))),
    }
}

#[derive(Deserialize)]
struct NoArgs {}

#[derive(Deserialize)]
struct Name {
    name: String,
}

/// `server_confine`: the person's confinement settings for one server.
#[derive(Deserialize)]
struct Confine {
    name: String,
    confinement: crate::ConfinementForm,
}

#[derive(Deserialize)]
struct Entry {
    entry: NewServer,
}

#[derive(Deserialize)]
struct Import {
    text: String,
    confirmed: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct ToolCall {
    server: String,
    tool: String,
    arguments: Map<String, Value>,
}

#[derive(Deserialize)]
struct OnServer {
    server: String,
}

#[derive(Deserialize)]
struct Read {
    server: String,
    uri: Option<String>,
    template: Option<String>,
    values: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
struct PromptGet {
    server: String,
    name: String,
    arguments: Option<BTreeMap<String, String>>,
}

/// What an argument completion is for: `{"prompt": NAME}` or `{"template": URI_TEMPLATE}`.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum CompleteFor {
    Prompt(String),
    Template(String),
}

#[derive(Deserialize)]
struct Complete {
    server: String,
    target: CompleteFor,
    argument: String,
    value: String,
    context: Option<HashMap<String, String>>,
}

#[derive(Deserialize)]
struct Subscription {
    server: String,
    uri: String,
}

/// An approval of tools or prompts by name, with the person's acknowledgement of high
/// review findings ("Approve despite findings"); absent, nothing is acknowledged.
#[derive(Deserialize)]
struct Approve {
    server: String,
    names: Vec<String>,
    #[serde(default = "not_acknowledged")]
    acknowledgement: Acknowledgement,
}

fn not_acknowledged() -> Acknowledgement {
    Acknowledgement::NotGiven
}

#[derive(Deserialize)]
struct Uris {
    server: String,
    uris: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Save {
    read_id: u64,
    index: usize,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Validate {
    prompt_id: u64,
    content: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    prompt_id: u64,
    answer: WindowAnswer,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Choice {
    Retry,
    Cancel,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WaitChoiceArgs {
    prompt_id: u64,
    choice: Choice,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptId {
    prompt_id: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SignInAnswer {
    sign_in_id: u64,
    reply: SignInReply,
}

#[derive(Deserialize)]
struct AuditList {
    server: Option<String>,
    event: Option<String>,
}

#[derive(Deserialize)]
struct TrafficList {
    server: Option<String>,
}

#[derive(Deserialize)]
struct Client {
    client: ClientId,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AutostartSet {
    on: bool,
    from: crate::AutostartChoice,
}

#[derive(Deserialize)]
struct Restore {
    client: ClientId,
    force: Option<bool>,
}

/// Runs the window command `command` with `args` (an object, or null for none) on `desk`.
pub async fn dispatch(desk: &Arc<Desk>, command: &str, raw: Value) -> Result<Value, Value> {
    match command {
        "servers_list" => {
            let NoArgs {} = args(command, raw)?;
            answer(desk.servers().await)
        }
        "server_connect" => {
            let a: Name = args(command, raw)?;
            answer(desk.connect_view(&a.name).await)
        }
        "server_detail" => {
            let a: Name = args(command, raw)?;
            answer(desk.detail_view(&a.name).await)
        }
        "server_add" => {
            let a: Entry = args(command, raw)?;
            answer(desk.add_server(a.entry).await)
        }
        "servers_import" => {
            let a: Import = args(command, raw)?;
            answer(
                desk.import_servers(&a.text, &a.confirmed.unwrap_or_default())
                    .await,
            )
        }
        "server_resume" => {
            let a: Name = args(command, raw)?;
            answer(desk.resume(&a.name).await)
        }
        "server_confine" => {
            let a: Confine = args(command, raw)?;
            answer(desk.set_confinement(&a.name, &a.confinement).await)
        }
        "tool_call" => {
            let a: ToolCall = args(command, raw)?;
            answer(desk.call_tool(&a.server, &a.tool, a.arguments).await)
        }
        "server_prompts" => {
            let a: OnServer = args(command, raw)?;
            answer(desk.prompts_view(&a.server).await)
        }
        "server_resources" => {
            let a: OnServer = args(command, raw)?;
            answer(desk.list_resources(&a.server).await)
        }
        "resource_read" => {
            let a: Read = args(command, raw)?;
            answer(desk.read(&a.server, a.uri, a.template, a.values).await)
        }
        "prompt_get" => {
            // MCP prompt arguments are strings, so only strings pass.
            let a: PromptGet = args(command, raw)?;
            let arguments: Map<String, Value> = a
                .arguments
                .unwrap_or_default()
                .into_iter()
                .map(|(key, value)| (key, Value::String(value)))
                .collect();
            // The result's description is the server's text: escaped before the window.
            let view = desk
                .get_prompt(&a.server, &a.name, arguments)
                .await
                .map(|mut view| {
                    view.description = view
                        .description
                        .map(|d| gatehouse_review::escape(&d).into_owned());
                    view
                });
            answer(view)
        }
        "argument_complete" => {
            let a: Complete = args(command, raw)?;
            let target = match a.target {
                CompleteFor::Prompt(name) => CompletionTarget::Prompt(name),
                CompleteFor::Template(uri_template) => CompletionTarget::Template(uri_template),
            };
            answer(
                desk.complete(
                    &a.server,
                    target,
                    &a.argument,
                    &a.value,
                    a.context.unwrap_or_default(),
                )
                .await,
            )
        }
        "resource_subscribe" => {
            let a: Subscription = args(command, raw)?;
            answer(desk.subscribe_resource(&a.server, &a.uri).await)
        }
        "resource_unsubscribe" => {
            let a: Subscription = args(command, raw)?;
            answer(desk.unsubscribe_resource(&a.server, &a.uri).await)
        }
        "tools_approve" => {
            let a: Approve = args(command, raw)?;
            answer(
                desk.approve_tools_with(&a.server, &a.names, a.acknowledgement)
                    .await,
            )
        }
        "prompts_approve" => {
            let a: Approve = args(command, raw)?;
            answer(
                desk.approve_prompts_with(&a.server, &a.names, a.acknowledgement)
                    .await,
            )
        }
        "resources_approve" => {
            // The window approves exact URIs, no prefixes.
            let a: Uris = args(command, raw)?;
            answer(desk.approve_resources(&a.server, &a.uris, &[]).await)
        }
        "resource_save" => {
            let a: Save = args(command, raw)?;
            answer(desk.save_read(a.read_id, a.index).await)
        }
        "prompts_list" => {
            let NoArgs {} = args(command, raw)?;
            answer(Ok(desk.prompts().list()))
        }
        "prompt_validate" => {
            let a: Validate = args(command, raw)?;
            answer(desk.prompts().validate(a.prompt_id, &a.content))
        }
        "prompt_answer" => {
            let a: Answer = args(command, raw)?;
            answer(desk.prompts().answer(a.prompt_id, a.answer))
        }
        "prompt_wait_choice" => {
            let a: WaitChoiceArgs = args(command, raw)?;
            let choice = match a.choice {
                Choice::Retry => WaitChoice::Retry,
                Choice::Cancel => WaitChoice::Cancel,
            };
            answer(desk.prompts().wait_choice(a.prompt_id, choice))
        }
        "prompt_dismiss" => {
            let a: PromptId = args(command, raw)?;
            answer(desk.prompts().dismiss(a.prompt_id))
        }
        "sign_in_cards" => {
            let NoArgs {} = args(command, raw)?;
            answer(Ok(desk.sign_in_desk().cards()))
        }
        "sign_in_answer" => {
            let a: SignInAnswer = args(command, raw)?;
            answer(desk.sign_in_desk().answer(a.sign_in_id, a.reply))
        }
        "server_sign_ins" => {
            let NoArgs {} = args(command, raw)?;
            answer(desk.server_sign_ins().await)
        }
        "server_sign_in" => {
            let a: Name = args(command, raw)?;
            answer(desk.sign_in(&a.name, &[]).await)
        }
        "server_sign_out" => {
            let a: Name = args(command, raw)?;
            answer(desk.sign_out(&a.name).await)
        }
        "audit_list" => {
            let a: AuditList = args(command, raw)?;
            answer(desk.audit(a.server, a.event))
        }
        "audit_verify" => {
            let NoArgs {} = args(command, raw)?;
            answer(desk.verify_audit())
        }
        "traffic_list" => {
            let a: TrafficList = args(command, raw)?;
            answer(Ok(desk.traffic(a.server.as_deref())))
        }
        "clients_list" => {
            let NoArgs {} = args(command, raw)?;
            answer(desk.clients())
        }
        "pin_plan" => {
            let a: Name = args(command, raw)?;
            answer(desk.pin_plan(&a.name).await)
        }
        "pin" => {
            let a: Name = args(command, raw)?;
            answer(desk.pin_server(&a.name).await)
        }
        "client_configs" => {
            let NoArgs {} = args(command, raw)?;
            answer(desk.client_files().await)
        }
        "client_connect" => {
            let a: Client = args(command, raw)?;
            answer(desk.client_connect(a.client).await)
        }
        "client_restore" => {
            let a: Restore = args(command, raw)?;
            answer(
                desk.client_restore(a.client, a.force.unwrap_or(false))
                    .await,
            )
        }
        "settings_get" => {
            let NoArgs {} = args(command, raw)?;
            answer(Ok(desk.settings()))
        }
        "autostart_get" => {
            let NoArgs {} = args(command, raw)?;
            answer(Ok(desk.autostart_state()))
        }
        "autostart_set" => {
            // A refused change is reported inside the view, with the state as it now is.
            let a: AutostartSet = args(command, raw)?;
            answer(Ok(desk.set_autostart(a.on, a.from)))
        }
        "quit_preview" => {
            let NoArgs {} = args(command, raw)?;
            answer(quit_plan(desk).await)
        }
        "quit" | "ui_ready" => Err(dispatch_error(
            DispatchCode::NotDispatched,
            format!("{command} is answered by the process that holds the desk, not by the desk"),
        )),
        other => Err(dispatch_error(
            DispatchCode::UnknownCommand,
            format!(
                "{:?} is not a window command (see docs/desktop-api.md)",
                other.chars().take(80).collect::<String>()
            ),
        )),
    }
}

/// What quitting Gatehouse stops, as the window shows it before the person confirms.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuitPlan {
    /// AI clients connected now (through `gatehouse serve`), by the id they go by.
    pub clients: Vec<String>,
    /// Servers with a live connection.
    pub servers: Vec<String>,
    /// Consent cards waiting for the person: each is declined.
    pub cards: usize,
    /// Sign-ins waiting for the person: each is cancelled.
    pub sign_ins: usize,
}

/// What quitting would stop now.
pub async fn quit_plan(desk: &Arc<Desk>) -> Result<QuitPlan, DeskError> {
    let clients = desk
        .clients()?
        .into_iter()
        .filter(|row| !row.connected.is_empty())
        .map(|row| row.client)
        .collect();
    let servers = desk
        .servers()
        .await?
        .into_iter()
        .filter(|row| row.connected)
        .map(|row| row.name)
        .collect();
    Ok(QuitPlan {
        clients,
        servers,
        cards: desk.prompts().pending(),
        sign_ins: desk.sign_in_desk().pending(),
    })
}

/// Declines every consent card still asking, cancels every URL wait and every pending
/// sign-in (each goes to its server as the person's decline, with its receipt in the audit
/// log as any answer has): what quitting does before it closes the connections. Returns how
/// many were ended.
pub fn end_open_cards(desk: &Desk) -> usize {
    let mut ended = 0;
    for card in desk.prompts().list() {
        let id = card.prompt.id;
        let done = match card.state {
            CardState::Asking => desk
                .prompts()
                .answer(
                    id,
                    WindowAnswer {
                        reply: WindowReply::Decline,
                        content: None,
                        override_hold: false,
                    },
                )
                .is_ok(),
            CardState::Waiting => desk.prompts().wait_choice(id, WaitChoice::Cancel).is_ok(),
            _ => false,
        };
        ended += usize::from(done);
    }
    for card in desk.sign_in_desk().cards().cards {
        if matches!(card.state, SignInState::Asking | SignInState::Waiting)
            && desk
                .sign_in_desk()
                .answer(card.id, SignInReply::Cancel)
                .is_ok()
        {
            ended += 1;
        }
    }
    ended
}
