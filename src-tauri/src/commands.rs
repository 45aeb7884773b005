//! The window's commands: each is one call into the desk. Arguments arrive typed (serde
//! refuses anything else) and errors go back as `{code, message}`.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use gatehouse_desk::FieldError;
use gatehouse_desk::{
    AuditVerdict, CallOutcome, ClientConnected, ClientFileRow, ClientId, ClientRestored,
    CompletionTarget, Desk, DeskError, ImportOutcome, NewServer, PinPlanView, PinnedView,
    PromptCard, PromptGroups, PromptView, ResourceGroups, ServerDetail, ServerRow, ServerSignIn,
    Settings, ShelvedRead, SignInCards, SignInReply, SignInRow, WindowAnswer,
};
use gatehouse_host::TrafficEntry;
use gatehouse_host::consent::WaitChoice;
use gatehouse_host::host::downstream::ClientRow;
use serde_json::{Map, Value};
use tauri::{Runtime, State};

type DeskState<'a> = State<'a, Arc<Desk>>;
type Answer<T> = Result<T, DeskError>;

#[tauri::command]
async fn servers_list(desk: DeskState<'_>) -> Answer<Vec<ServerRow>> {
    desk.servers().await
}

#[tauri::command]
async fn server_connect(desk: DeskState<'_>, name: String) -> Answer<ServerDetail> {
    desk.connect(&name).await
}

#[tauri::command]
async fn server_detail(desk: DeskState<'_>, name: String) -> Answer<ServerDetail> {
    desk.server_detail(&name).await
}

#[tauri::command]
async fn server_add(desk: DeskState<'_>, entry: NewServer) -> Answer<ServerRow> {
    desk.add_server(entry).await
}

#[tauri::command]
async fn servers_import(
    desk: DeskState<'_>,
    text: String,
    confirmed: Option<Vec<String>>,
) -> Answer<ImportOutcome> {
    desk.import_servers(&text, &confirmed.unwrap_or_default())
        .await
}

#[tauri::command]
async fn server_resume(desk: DeskState<'_>, name: String) -> Answer<ServerRow> {
    desk.resume(&name).await
}

#[tauri::command]
async fn tool_call(
    desk: DeskState<'_>,
    server: String,
    tool: String,
    arguments: Map<String, Value>,
) -> Answer<CallOutcome> {
    desk.call_tool(&server, &tool, arguments).await
}

/// The server's prompts as the gate sees them: allowed, hidden, blocked (with reasons).
#[tauri::command]
async fn server_prompts(desk: DeskState<'_>, server: String) -> Answer<PromptGroups> {
    desk.list_prompts(&server).await
}

/// The server's resources and templates as the gate sees them, and the subscriptions.
#[tauri::command]
async fn server_resources(desk: DeskState<'_>, server: String) -> Answer<ResourceGroups> {
    desk.list_resources(&server).await
}

/// Reads `uri`, or `template` expanded with `values` (exactly one of the two), through the
/// gate; the result is kept for `resource_save` under its `readId`.
#[tauri::command]
async fn resource_read(
    desk: DeskState<'_>,
    server: String,
    uri: Option<String>,
    template: Option<String>,
    values: Option<BTreeMap<String, String>>,
) -> Answer<ShelvedRead> {
    desk.read(&server, uri, template, values).await
}

/// Gets a prompt through the gate; MCP prompt arguments are strings, so only strings pass.
#[tauri::command]
async fn prompt_get(
    desk: DeskState<'_>,
    server: String,
    name: String,
    arguments: Option<BTreeMap<String, String>>,
) -> Answer<PromptView> {
    let arguments: Map<String, Value> = arguments
        .unwrap_or_default()
        .into_iter()
        .map(|(key, value)| (key, Value::String(value)))
        .collect();
    desk.get_prompt(&server, &name, arguments).await
}

/// What an argument completion is for: `{"prompt": NAME}` or `{"template": URI_TEMPLATE}`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum CompleteFor {
    Prompt(String),
    Template(String),
}

/// Completion values for an argument of an allowed prompt or template.
#[tauri::command]
async fn argument_complete(
    desk: DeskState<'_>,
    server: String,
    target: CompleteFor,
    argument: String,
    value: String,
    context: Option<HashMap<String, String>>,
) -> Answer<Vec<String>> {
    let target = match target {
        CompleteFor::Prompt(name) => CompletionTarget::Prompt(name),
        CompleteFor::Template(uri_template) => CompletionTarget::Template(uri_template),
    };
    desk.complete(
        &server,
        target,
        &argument,
        &value,
        context.unwrap_or_default(),
    )
    .await
}

#[tauri::command]
async fn resource_subscribe(desk: DeskState<'_>, server: String, uri: String) -> Answer<()> {
    desk.subscribe_resource(&server, &uri).await
}

#[tauri::command]
async fn resource_unsubscribe(desk: DeskState<'_>, server: String, uri: String) -> Answer<()> {
    desk.unsubscribe_resource(&server, &uri).await
}

/// Approves prompts by name as the user (warn posture only); returns `[name, pin]` pairs.
#[tauri::command]
async fn prompts_approve(
    desk: DeskState<'_>,
    server: String,
    names: Vec<String>,
) -> Answer<Vec<(String, String)>> {
    desk.approve_prompts(&server, &names).await
}

/// Approves exact resource URIs as the user (warn posture only); the window approves no
/// prefixes.
#[tauri::command]
async fn resources_approve(desk: DeskState<'_>, server: String, uris: Vec<String>) -> Answer<()> {
    desk.approve_resources(&server, &uris, &[]).await
}

/// Saves item `index` of a kept read into the download directory; returns the path written.
#[tauri::command]
async fn resource_save(desk: DeskState<'_>, read_id: u64, index: usize) -> Answer<PathBuf> {
    desk.save_read(read_id, index).await
}

#[tauri::command]
fn prompts_list(desk: DeskState<'_>) -> Vec<PromptCard> {
    desk.prompts().list()
}

#[tauri::command]
fn prompt_validate(
    desk: DeskState<'_>,
    prompt_id: u64,
    content: Map<String, Value>,
) -> Answer<Vec<FieldError>> {
    desk.prompts().validate(prompt_id, &content)
}

#[tauri::command]
fn prompt_answer(desk: DeskState<'_>, prompt_id: u64, answer: WindowAnswer) -> Answer<()> {
    desk.prompts().answer(prompt_id, answer)
}

#[derive(Debug, Clone, Copy, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum Choice {
    Retry,
    Cancel,
}

#[tauri::command]
fn prompt_wait_choice(desk: DeskState<'_>, prompt_id: u64, choice: Choice) -> Answer<()> {
    let choice = match choice {
        Choice::Retry => WaitChoice::Retry,
        Choice::Cancel => WaitChoice::Cancel,
    };
    desk.prompts().wait_choice(prompt_id, choice)
}

#[tauri::command]
fn prompt_dismiss(desk: DeskState<'_>, prompt_id: u64) -> Answer<()> {
    desk.prompts().dismiss(prompt_id)
}

/// The sign-ins waiting for the user (a reloaded window shows them again) and how the latest
/// ones ended.
#[tauri::command]
fn sign_in_cards(desk: DeskState<'_>) -> SignInCards {
    desk.sign_in_desk().cards()
}

/// Open or Cancel on a sign-in card, by its id.
#[tauri::command]
fn sign_in_answer(desk: DeskState<'_>, sign_in_id: u64, reply: SignInReply) -> Answer<()> {
    desk.sign_in_desk().answer(sign_in_id, reply)
}

/// Every configured server that signs in (HTTP without a static credential), with its stored
/// sign-in.
#[tauri::command]
async fn server_sign_ins(desk: DeskState<'_>) -> Answer<Vec<ServerSignIn>> {
    desk.server_sign_ins().await
}

/// Signs in to `name` now: the sign-in card asks first.
#[tauri::command]
async fn server_sign_in(desk: DeskState<'_>, name: String) -> Answer<SignInRow> {
    desk.sign_in(&name, &[]).await
}

/// Removes `name`'s stored sign-in (and closes its connection); `false` when there was none.
#[tauri::command]
async fn server_sign_out(desk: DeskState<'_>, name: String) -> Answer<bool> {
    desk.sign_out(&name).await
}

#[tauri::command]
fn audit_list(
    desk: DeskState<'_>,
    server: Option<String>,
    event: Option<String>,
) -> Answer<Vec<Value>> {
    desk.audit(server, event)
}

#[tauri::command]
fn audit_verify(desk: DeskState<'_>) -> Answer<AuditVerdict> {
    desk.verify_audit()
}

#[tauri::command]
fn traffic_list(desk: DeskState<'_>, server: Option<String>) -> Vec<TrafficEntry> {
    desk.traffic(server.as_deref())
}

#[tauri::command]
fn clients_list(desk: DeskState<'_>) -> Answer<Vec<ClientRow>> {
    desk.clients()
}

/// What pinning `name` yourself would write (the host resolves, installs into a scratch
/// store and lists the tools; nothing of the person's changes). The desk keeps the plan.
#[tauri::command]
async fn pin_plan(desk: DeskState<'_>, name: String) -> Answer<PinPlanView> {
    desk.pin_plan(&name).await
}

/// The person's Pin in the confirmation panel: writes the plan last shown for `name`.
#[tauri::command]
async fn pin(desk: DeskState<'_>, name: String) -> Answer<PinnedView> {
    desk.pin_server(&name).await
}

/// The AI clients' config files (not the clients seen through `gatehouse serve`).
#[tauri::command]
async fn client_configs(desk: DeskState<'_>) -> Answer<Vec<ClientFileRow>> {
    desk.client_files().await
}

#[tauri::command]
async fn client_connect(desk: DeskState<'_>, client: ClientId) -> Answer<ClientConnected> {
    desk.client_connect(client).await
}

#[tauri::command]
async fn client_restore(
    desk: DeskState<'_>,
    client: ClientId,
    force: Option<bool>,
) -> Answer<ClientRestored> {
    desk.client_restore(client, force.unwrap_or(false)).await
}

#[tauri::command]
fn settings_get(desk: DeskState<'_>) -> Settings {
    desk.settings()
}

/// The window painted its first frame. With `GATEHOUSE_READY_FILE` set, the time since the
/// process started is appended to that file (the start-up benchmark reads it); otherwise it
/// is only logged.
#[tauri::command]
fn ui_ready(started: State<'_, crate::Started>) {
    let elapsed = started.0.elapsed();
    tracing::info!(ms = elapsed.as_secs_f64() * 1e3, "first paint");
    if let Some(path) = std::env::var_os("GATEHOUSE_READY_FILE") {
        use std::io::Write;
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(file, "{:.1}", elapsed.as_secs_f64() * 1e3);
        }
    }
}

/// Every command, registered once for the real and the mock runtime. The list must match
/// `command_names::ALL` (a test checks it), which grants them to the window.
pub fn handler<R: Runtime>() -> impl Fn(tauri::ipc::Invoke<R>) -> bool + Send + Sync + 'static {
    tauri::generate_handler![
        servers_list,
        server_connect,
        server_detail,
        server_add,
        servers_import,
        server_resume,
        tool_call,
        server_prompts,
        server_resources,
        resource_read,
        prompt_get,
        argument_complete,
        resource_subscribe,
        resource_unsubscribe,
        prompts_approve,
        resources_approve,
        resource_save,
        prompts_list,
        prompt_validate,
        prompt_answer,
        prompt_wait_choice,
        prompt_dismiss,
        sign_in_cards,
        sign_in_answer,
        server_sign_ins,
        server_sign_in,
        server_sign_out,
        audit_list,
        audit_verify,
        traffic_list,
        clients_list,
        pin_plan,
        pin,
        client_configs,
        client_connect,
        client_restore,
        settings_get,
        ui_ready,
    ]
}

pub mod names {
    include!("command_names.rs");
}
