//! The demo server's handler: four deterministic tools, the elicitation tools
//! ([`elicitation`]), resources and their subscriptions ([`resources`]), prompts and
//! completions ([`prompts`]), server identity, era rules and optional list pagination.

pub mod careless;
pub mod elicitation;
pub mod escape;
mod input;
pub mod png;
pub mod poisoned;
pub mod prompts;
pub mod resources;

use std::{borrow::Cow, num::NonZeroUsize, path::PathBuf, sync::Arc, time::Duration};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{
        CacheScope, CallToolResult, CompleteRequestParams, CompleteResult, ContentBlock,
        DiscoverResult, GetPromptRequestParams, GetPromptResponse, Implementation,
        ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
        PaginatedRequestParams, ProgressNotificationParam, PromptsCapability, ProtocolVersion,
        ReadResourceRequestParams, ReadResourceResponse, ResourcesCapability, ResultType,
        ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter,
        UnsubscribeRequestParams,
    },
    schemars::JsonSchema,
    service::{RequestContext, SubscriptionContext},
    tool, tool_handler, tool_router,
};
use serde::Deserialize;

use crate::{
    era::{Era, discover_not_found},
    pages::{ConnectPages, ConnectionId, PageConfig},
};
use careless::CarelessFiles;
use resources::{Counter, DEFAULT_TICK, Subscriptions};

/// The name the server reports in `serverInfo`.
pub const SERVER_NAME: &str = "gatehouse-demo-server";

/// The `instructions` text the server reports.
pub const INSTRUCTIONS: &str = "This is the Gatehouse demo MCP server, a fixture for trying and \
testing Gatehouse. Tools: echo (returns its message), add (sums two numbers), slow (reports \
progress step by step and can be cancelled), fail (always returns a tool error), book_table (a \
form elicitation using every field type), ask_password (a form asking for a password), \
connect_account and connect_account_required (URL elicitations to a demo page on this computer), \
open_link (a URL elicitation to the URL given) and spoof_completion (sends elicitation completions \
for ids it never issued). Resources: demo://docs/welcome.txt, demo://docs/guide.md, \
demo://images/logo.png, demo://data/sample.bin, demo://counter (subscribe to watch it count), \
demo://private/diary (asks before it opens) and notes at demo://notes/{name}. Prompts: summarize, \
review_code, describe_logo and plan_trip (asks who is travelling first). It is a demo: never trust \
it with real data.";

/// Default message of the `fail` tool.
pub const DEFAULT_FAIL_MESSAGE: &str = "the fail tool always fails";

const DEFAULT_SLOW_STEPS: u32 = 5;
const MAX_SLOW_STEPS: u32 = 100;
const DEFAULT_SLOW_DELAY_MS: u64 = 100;
const MAX_SLOW_DELAY_MS: u64 = 10_000;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct EchoArgs {
    /// The text to send back unchanged.
    pub message: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddArgs {
    /// The first addend.
    pub a: f64,
    /// The second addend.
    pub b: f64,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SlowArgs {
    /// How many steps to run (at most 100).
    #[serde(default = "default_slow_steps")]
    #[schemars(range(max = 100))]
    pub steps: u32,
    /// Milliseconds to wait before each step (at most 10000).
    #[serde(default = "default_slow_delay_ms")]
    #[schemars(range(max = 10000))]
    pub delay_ms: u64,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FailArgs {
    /// The error text to return.
    #[serde(default = "default_fail_message")]
    pub message: String,
}

fn default_slow_steps() -> u32 {
    DEFAULT_SLOW_STEPS
}

fn default_slow_delay_ms() -> u64 {
    DEFAULT_SLOW_DELAY_MS
}

fn default_fail_message() -> String {
    DEFAULT_FAIL_MESSAGE.to_owned()
}

/// The demo MCP server. Cheap to clone: Streamable HTTP builds one per session (see
/// [`DemoServer::for_new_connection`]); clones share the connect pages and the counter.
#[derive(Clone)]
pub struct DemoServer {
    era: Era,
    page_size: Option<NonZeroUsize>,
    pages: ConnectPages,
    connection: ConnectionId,
    tool_router: ToolRouter<Self>,
    /// `--hostile-content`: also serve the hostile resources, template and prompt.
    hostile: bool,
    /// `--careless-files`: also serve `file://` resources, read carelessly.
    careless: Option<Arc<CarelessFiles>>,
    /// `demo://counter`, one per server process.
    counter: Counter,
    /// This connection's `resources/subscribe` subscriptions (2025-11-25).
    subscriptions: Arc<Subscriptions>,
}

impl DemoServer {
    /// A server for `era` that lists all tools on one page and serves connect pages on any
    /// free loopback port, logging no hits.
    pub fn new(era: Era) -> Self {
        Self {
            era,
            page_size: None,
            pages: ConnectPages::new(PageConfig::default()),
            connection: ConnectionId::fresh(),
            tool_router: Self::tool_router() + Self::elicitation_router(),
            hostile: false,
            careless: None,
            counter: Counter::new(DEFAULT_TICK),
            subscriptions: Arc::default(),
        }
    }

    /// Also list the tools whose definitions carry each kind of review finding
    /// (`--poisoned-definitions`, [`poisoned`]). Call before cloning.
    pub fn with_poisoned_definitions(mut self, poisoned: bool) -> Self {
        if poisoned {
            self.tool_router += Self::poisoned_router();
        }
        self
    }

    /// Also list the hostile `escape` and `egress_flood` tools (`--escape-attempts`,
    /// [`escape`]): a confinement test's fixture. Call before cloning.
    pub fn with_escape_attempts(mut self, escape: bool) -> Self {
        if escape {
            self.tool_router += Self::escape_router();
        }
        self
    }

    /// Also serve the hostile resources, template and prompt (`--hostile-content`).
    pub fn with_hostile_content(mut self, hostile: bool) -> Self {
        self.hostile = hostile;
        self
    }

    /// Also serve the files under `root` as `file://` resources, read the careless way
    /// ([`careless`]), logging each URI asked for to `log` (`--careless-files`,
    /// `--request-log`). A test fixture: it reads any file the process can.
    pub fn with_careless_files(mut self, root: Option<PathBuf>, log: Option<PathBuf>) -> Self {
        self.careless = root.map(|root| Arc::new(CarelessFiles::new(root, log)));
        self
    }

    /// Tick `demo://counter` every `tick` while subscribed. Call before cloning: clones share
    /// the counter.
    pub fn with_tick(mut self, tick: Duration) -> Self {
        self.counter = Counter::new(tick);
        self
    }

    /// Serve the connect pages as `config` says. Call before cloning: clones share the pages.
    pub fn with_pages(mut self, config: PageConfig) -> Self {
        self.pages = ConnectPages::new(config);
        self
    }

    /// A copy for another MCP connection: same settings, connect pages and counter, but its
    /// own identity, so per-connection state (a pending `connect_account_required`, resource
    /// subscriptions) stays apart.
    pub fn for_new_connection(&self) -> Self {
        Self {
            connection: ConnectionId::fresh(),
            subscriptions: Arc::default(),
            ..self.clone()
        }
    }

    /// The connect pages this server issues URL elicitations for.
    pub fn pages(&self) -> &ConnectPages {
        &self.pages
    }

    /// Paginate `tools/list`, `resources/list`, `resources/templates/list` and `prompts/list`
    /// with `page_size` items per page, so clients exercise cursors.
    pub fn with_page_size(mut self, page_size: Option<NonZeroUsize>) -> Self {
        self.page_size = page_size;
        self
    }

    pub fn era(&self) -> Era {
        self.era
    }

    /// The names of every tool this server has, in `tools/list` order.
    pub fn tool_names(&self) -> Vec<String> {
        self.tool_router
            .list_all()
            .into_iter()
            .map(|tool| tool.name.into_owned())
            .collect()
    }
}

#[tool_router]
impl DemoServer {
    #[tool(description = "Return the message unchanged, as text.")]
    async fn echo(
        &self,
        Parameters(args): Parameters<EchoArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::success(vec![ContentBlock::text(
            args.message,
        )]))
    }

    #[tool(description = "Add two numbers and return the sum as text.")]
    async fn add(
        &self,
        Parameters(args): Parameters<AddArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let sum = args.a + args.b;
        if !sum.is_finite() {
            return Ok(CallToolResult::error(vec![ContentBlock::text(
                "the sum is too large to represent",
            )]));
        }
        Ok(CallToolResult::success(vec![ContentBlock::text(
            format_number(sum),
        )]))
    }

    #[tool(
        description = "Run `steps` steps (default 5, at most 100), waiting `delay_ms` milliseconds \
        (default 100, at most 10000) before each. Sends notifications/progress after every step \
        when the request has a progressToken. Stops when the request is cancelled."
    )]
    async fn slow(
        &self,
        Parameters(args): Parameters<SlowArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        // The schema states the limits, but clients do not have to validate against it. Out of
        // range is a tool error, as rmcp makes malformed arguments, so a model can correct itself.
        if args.steps > MAX_SLOW_STEPS {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "steps must be at most {MAX_SLOW_STEPS}"
            ))]));
        }
        if args.delay_ms > MAX_SLOW_DELAY_MS {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "delay_ms must be at most {MAX_SLOW_DELAY_MS}"
            ))]));
        }
        let progress_token = context.meta.get_progress_token();
        let delay = Duration::from_millis(args.delay_ms);
        for step in 1..=args.steps {
            tokio::select! {
                // rmcp cancels this token on notifications/cancelled (and on disconnect) and
                // drops whatever we return, so stopping is all that is left to do.
                () = context.ct.cancelled() => {
                    tracing::info!(step, steps = args.steps, "slow tool cancelled");
                    return Err(ErrorData::internal_error("cancelled", None));
                }
                () = tokio::time::sleep(delay) => {}
            }
            if let Some(token) = &progress_token {
                let progress = ProgressNotificationParam::new(token.clone(), f64::from(step))
                    .with_total(f64::from(args.steps))
                    .with_message(format!("step {step} of {}", args.steps));
                if let Err(error) = context.peer.notify_progress(progress).await {
                    // The client is gone or the stream closed; nobody is left to answer.
                    tracing::warn!(%error, "could not send progress; stopping");
                    return Err(ErrorData::internal_error("progress channel closed", None));
                }
            }
        }
        Ok(CallToolResult::success(vec![ContentBlock::text(format!(
            "done after {} steps",
            args.steps
        ))]))
    }

    #[tool(
        description = "Always fail: returns a tool result with isError true and the message \
        (default \"the fail tool always fails\")."
    )]
    async fn fail(
        &self,
        Parameters(args): Parameters<FailArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::error(vec![ContentBlock::text(
            args.message,
        )]))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for DemoServer {
    fn get_info(&self) -> ServerConfig {
        // Fixed lists: nothing is ever added or removed while the server runs.
        let mut resources = ResourcesCapability::default();
        resources.subscribe = Some(true);
        resources.list_changed = Some(false);
        let mut prompts = PromptsCapability::default();
        prompts.list_changed = Some(false);
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_completions()
                .enable_prompts_with(prompts)
                .enable_resources_with(resources)
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(
            Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION"))
                .with_title("Gatehouse demo server"),
        )
        .with_instructions(INSTRUCTIONS)
        .with_protocol_version(self.era.handshake_fallback())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.era.supported_versions()
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        // Reached inside an HTTP session; stdio and session-less HTTP are gated in `era`.
        if !self.era.serves_discover() {
            return Err(discover_not_found());
        }
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.tool_router.list_all();
        let cursor = request.and_then(|request| request.cursor);
        let (tools, next_cursor) = paginate(tools, cursor.as_deref(), self.page_size)?;
        // Same cache hints rmcp's generated list_tools gives 2026-07-28 peers.
        let modern = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        Ok(ListToolsResult {
            result_type: Some(ResultType::COMPLETE),
            meta: None,
            next_cursor,
            ttl_ms: modern.then_some(0),
            cache_scope: modern.then_some(CacheScope::Public),
            tools,
        })
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let cursor = request.and_then(|request| request.cursor);
        let mut listed = resources::resources(self.hostile);
        if let Some(careless) = &self.careless {
            listed.extend(careless.resources());
        }
        let (resources, next_cursor) = paginate(listed, cursor.as_deref(), self.page_size)?;
        let mut result = ListResourcesResult::with_all_items(resources);
        result.next_cursor = next_cursor;
        (result.ttl_ms, result.cache_scope) = list_cache_hints(&context);
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let cursor = request.and_then(|request| request.cursor);
        let mut listed = resources::resource_templates(self.hostile);
        if let Some(careless) = &self.careless {
            listed.push(careless.template());
        }
        let (templates, next_cursor) = paginate(listed, cursor.as_deref(), self.page_size)?;
        let mut result = ListResourceTemplatesResult::with_all_items(templates);
        result.next_cursor = next_cursor;
        (result.ttl_ms, result.cache_scope) = list_cache_hints(&context);
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.read(request, context).await
    }

    // resources/subscribe and resources/unsubscribe are the 2025-11-25 way; rmcp marks them
    // deprecated in favour of subscriptions/listen, which the demo serves too.
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscribe_legacy(&request.uri, &context.peer)
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.unsubscribe_legacy(&request.uri);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(self.accepted_filter(requested))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        self.listen_stream(context).await;
        Ok(())
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let cursor = request.and_then(|request| request.cursor);
        let (prompts, next_cursor) = paginate(
            prompts::prompts(self.hostile),
            cursor.as_deref(),
            self.page_size,
        )?;
        let mut result = ListPromptsResult::with_all_items(prompts);
        result.next_cursor = next_cursor;
        (result.ttl_ms, result.cache_scope) = list_cache_hints(&context);
        Ok(result)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.prompt(request, context).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.complete_argument(&request)
    }
}

/// The cache hints of every list for 2026-07-28 peers (the same as `tools/list`): the lists
/// are the same for everyone, but fresh only now. Older peers get none.
fn list_cache_hints(context: &RequestContext<RoleServer>) -> (Option<u64>, Option<CacheScope>) {
    let modern = context
        .protocol_version()
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
    (modern.then_some(0), modern.then_some(CacheScope::Public))
}

/// Print a sum the way a person writes it: `5`, not `5.0`.
fn format_number(value: f64) -> String {
    // Rust's `Display` for f64 already omits a zero fraction and never uses exponents.
    format!("{value}")
}

/// Cut `items` into the page that starts at `cursor`.
///
/// The cursor is the decimal index of the first item on the page. It is opaque to clients,
/// and anything we did not hand out is refused rather than guessed at.
fn paginate<T>(
    mut items: Vec<T>,
    cursor: Option<&str>,
    page_size: Option<NonZeroUsize>,
) -> Result<(Vec<T>, Option<String>), ErrorData> {
    let Some(page_size) = page_size else {
        return Ok((items, None));
    };
    let start = match cursor {
        None => 0,
        Some(cursor) => cursor
            .parse::<usize>()
            .ok()
            .filter(|start| *start > 0 && *start < items.len())
            .ok_or_else(|| ErrorData::invalid_params(format!("invalid cursor {cursor:?}"), None))?,
    };
    let end = start.saturating_add(page_size.get()).min(items.len());
    let next_cursor = (end < items.len()).then(|| end.to_string());
    items.truncate(end);
    Ok((items.split_off(start), next_cursor))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(cursor: Option<&str>, size: usize) -> Result<(Vec<u8>, Option<String>), ErrorData> {
        paginate(vec![1, 2, 3, 4], cursor, NonZeroUsize::new(size))
    }

    #[test]
    fn pagination_walks_every_item_once() {
        assert_eq!(page(None, 3).unwrap(), (vec![1, 2, 3], Some("3".into())));
        assert_eq!(page(Some("3"), 3).unwrap(), (vec![4], None));
        assert_eq!(page(None, 4).unwrap(), (vec![1, 2, 3, 4], None));
        assert_eq!(
            paginate(vec![1, 2], None, None).unwrap(),
            (vec![1, 2], None)
        );
    }

    #[test]
    fn pagination_refuses_cursors_it_never_issued() {
        for cursor in ["0", "4", "-1", "abc", ""] {
            assert!(page(Some(cursor), 1).is_err(), "cursor {cursor:?}");
        }
    }

    #[test]
    fn sums_print_without_a_zero_fraction() {
        assert_eq!(format_number(5.0), "5");
        assert_eq!(format_number(-0.5), "-0.5");
        assert_eq!(format_number(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(format_number(1e21), "1000000000000000000000");
    }
}
