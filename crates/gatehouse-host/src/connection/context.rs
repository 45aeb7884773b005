//! Prompts and resources: the two other server primitives, gated like tools. Listings are
//! bounded like `tools/list` and classified by the gate; a prompt or a read is decided (and
//! audited) before any byte is sent, then driven through the same rounds as a tool call
//! (2026-07-28 input requests, 2025-11-25 URL retries) with its elicitations on the broker;
//! what comes back is checked ([`crate::content`]) before a front end sees it. A server that
//! does not declare prompts or resources is never asked for them.

use std::collections::{BTreeMap, HashMap};

use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, CompletionContext, CompletionInfo, GetPromptRequestParams,
    GetPromptResult, JsonObject, PaginatedRequestParams, Prompt, ReadResourceRequestParams,
    ReadResourceResult, Reference, Resource, ResourceTemplate, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams,
};
use tokio::task::AbortHandle;

use gatehouse_attest::gate::{GateReason, ToolStatus};
use gatehouse_attest::resources::ResourceStatus;
use gatehouse_attest::uri_template::Template;

use super::call::{Answer, Ask};
use super::{CallOptions, Connection};
use crate::audit_event::gate::{ResourceAction, ResourceDecision, ResourceEntry, ResourceTarget};
use crate::broker::ElicitationRecord;
use crate::client::HostEvent;
use crate::content::{ContentView, MessageView, view_contents, view_messages};
use crate::gatekeeper::{Prompts, ResourceRequest, Resources};
use crate::{Era, HostError};

/// Most resources one connection may be subscribed to upstream at once.
pub const MAX_SUBSCRIPTIONS: usize = 64;
/// Most subscriptions one gateway session may hold on one connection (a quarter of the
/// upstream slots: one client cannot take them all from the others and the person).
pub const MAX_SUBSCRIPTIONS_PER_CLIENT: usize = MAX_SUBSCRIPTIONS / 4;

/// Who holds a resource subscription on the host. An upstream subscription lasts while
/// anyone holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Subscriber {
    /// The person, through the app or the CLI.
    Person,
    /// One gateway client's session: on the session itself (`stream` 0) or on one of its
    /// `subscriptions/listen` streams.
    Client { session: u64, stream: u64 },
}

impl Subscriber {
    /// The gateway session, for a client's subscription.
    pub fn session(&self) -> Option<u64> {
        match self {
            Subscriber::Person => None,
            Subscriber::Client { session, .. } => Some(*session),
        }
    }
}

/// Who holds each subscribed URI.
pub(crate) type Holders = std::sync::Mutex<HashMap<String, std::collections::BTreeSet<Subscriber>>>;
/// Most completion values passed on (the spec's own maximum per response).
pub const MAX_COMPLETION_VALUES: usize = CompletionInfo::MAX_VALUES;
/// Longest completion value passed on; longer ones are dropped.
pub const MAX_COMPLETION_CHARS: usize = 1024;

/// A listed prompt and what the gate says about it.
#[derive(Debug, Clone)]
pub struct GatedPrompt {
    pub prompt: Prompt,
    pub status: ToolStatus,
}

/// A listed resource and what the gate says about it.
#[derive(Debug, Clone)]
pub struct GatedResource {
    pub resource: Resource,
    pub status: ResourceStatus,
}

/// A listed resource template and what the gate says about it (display only: every read is
/// checked on the URI it expands to).
#[derive(Debug, Clone)]
pub struct GatedTemplate {
    pub template: ResourceTemplate,
    pub status: ResourceStatus,
}

/// A prompt got through the gate: the server's result, what may be shown of it, how many
/// requests it took and the elicitations it caused.
#[derive(Debug, Clone)]
pub struct PromptOutcome {
    pub result: GetPromptResult,
    pub messages: Vec<MessageView>,
    pub rounds: usize,
    pub elicitations: Vec<ElicitationRecord>,
}

/// A resource read through the gate.
#[derive(Debug, Clone)]
pub struct ResourceOutcome {
    /// The URI the gate allowed (for a template, the expansion).
    pub uri: String,
    pub result: ReadResourceResult,
    pub contents: Vec<ContentView>,
    pub rounds: usize,
    pub elicitations: Vec<ElicitationRecord>,
}

/// What an argument completion is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionTarget {
    /// An argument of this prompt.
    Prompt(String),
    /// A variable of this resource template (its `uriTemplate`, as listed).
    Template(String),
}

/// What a server declared, read from its handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Offer {
    Prompts,
    Resources,
    Subscriptions,
    Completions,
}

impl Connection {
    fn offers(&self, offer: Offer) -> bool {
        let Some(info) = self.peer_info() else {
            return false;
        };
        let capabilities = &info.capabilities;
        match offer {
            Offer::Prompts => capabilities.prompts.is_some(),
            Offer::Resources => capabilities.resources.is_some(),
            Offer::Subscriptions => capabilities
                .resources
                .as_ref()
                .is_some_and(|r| r.subscribe == Some(true)),
            Offer::Completions => capabilities.completions.is_some(),
        }
    }

    /// How long prompt and resource listings are kept without a `list_changed`: as long as
    /// the connection lasts in 2025-11-25, where the server tells the session; a while in
    /// 2026-07-28, where it tells only listen streams the host does not hold for listings.
    fn listing_max_age(&self) -> Option<std::time::Duration> {
        match self.era {
            Era::V2025_11_25 => None,
            Era::V2026_07_28 => Some(super::listing::MODERN_LISTING_MAX_AGE),
        }
    }

    fn require(&self, offer: Offer, what: &'static str) -> Result<(), HostError> {
        if self.offers(offer) {
            Ok(())
        } else {
            Err(HostError::NotOffered {
                server: self.server.clone(),
                what,
            })
        }
    }

    /// Every prompt, across all pages (none, without a request, from a server that declares
    /// no prompts), kept until the server says the list changed. Each listing fetched is
    /// given to the prompt gate and pin mismatches are audited.
    pub async fn prompts(&self) -> Result<Vec<Prompt>, HostError> {
        if !self.offers(Offer::Prompts) {
            return Ok(Vec::new());
        }
        self.prompts_listing
            .get(&self.context_stale.prompts, self.listing_max_age(), || {
                self.list_prompts()
            })
            .await
    }

    async fn list_prompts(&self) -> Result<Vec<Prompt>, HostError> {
        let peer = self.service.peer();
        let prompts = self
            .list_pages("prompts/list", |cursor| async move {
                peer.list_prompts(Some(PaginatedRequestParams::default().with_cursor(cursor)))
                    .await
                    .map(|page| (page.prompts, page.next_cursor))
            })
            .await?;
        self.observe_listing::<Prompts>(&self.prompt_gate, &prompt_definitions(&prompts))?;
        Ok(prompts)
    }

    /// Every prompt with the gate's view of it: allowed, hidden or blocked (pin changed).
    pub async fn gated_prompts(&self) -> Result<Vec<GatedPrompt>, HostError> {
        let prompts = self.prompts().await?;
        let gate = self.prompt_gate.lock().expect("prompt gate poisoned");
        Ok(prompts
            .into_iter()
            .map(|prompt| GatedPrompt {
                status: gate.status(&prompt.name),
                prompt,
            })
            .collect())
    }

    /// Gets a prompt the gate allows (the list is fetched first, so a pinned prompt is
    /// checked against what the server says now), through every round it needs.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        options: &CallOptions,
    ) -> Result<PromptOutcome, HostError> {
        self.require(Offer::Prompts, "prompts")?;
        let mut step_ups = 0;
        let (answer, rounds, elicitations) = loop {
            self.clear_challenge();
            self.prompts().await?;
            let permit = {
                let gate = self.prompt_gate.lock().expect("prompt gate poisoned");
                self.gatekeeper.authorize::<Prompts>(
                    &self.verdict,
                    &gate,
                    name,
                    options.caller.as_ref(),
                )?
            };
            let mut params = GetPromptRequestParams::new(permit.tool());
            params.arguments = arguments.clone();
            let (outcome, _records) = self.attempt(Ask::Prompt(params), options).await;
            if !self.step_up_after(&outcome, &mut step_ups).await? {
                break outcome?;
            }
        };
        let what = format!("prompts/get {name:?}");
        let Answer::Prompt(result) = answer else {
            return Err(self.protocol(&what, "unexpected result kind"));
        };
        let values: Vec<_> = result
            .messages
            .iter()
            .map(|m| serde_json::to_value(m).expect("a message serializes"))
            .collect();
        let messages =
            view_messages(&values).map_err(|(fault, at)| self.refused(&what, fault, &at))?;
        Ok(PromptOutcome {
            result,
            messages,
            rounds,
            elicitations,
        })
    }

    /// Every resource, across all pages (none, without a request, from a server that declares
    /// no resources), kept until the server says the list changed.
    pub async fn resources(&self) -> Result<Vec<Resource>, HostError> {
        if !self.offers(Offer::Resources) {
            return Ok(Vec::new());
        }
        let peer = self.service.peer();
        self.resources_listing
            .get(
                &self.context_stale.resources,
                self.listing_max_age(),
                || {
                    self.list_pages("resources/list", |cursor| {
                        let peer = peer.clone();
                        async move {
                            peer.list_resources(Some(
                                PaginatedRequestParams::default().with_cursor(cursor),
                            ))
                            .await
                            .map(|page| (page.resources, page.next_cursor))
                        }
                    })
                },
            )
            .await
    }

    /// Every resource template, across all pages, kept like [`Connection::resources`].
    pub async fn resource_templates(&self) -> Result<Vec<ResourceTemplate>, HostError> {
        if !self.offers(Offer::Resources) {
            return Ok(Vec::new());
        }
        let peer = self.service.peer();
        self.templates_listing
            .get(
                &self.context_stale.templates,
                self.listing_max_age(),
                || {
                    self.list_pages("resources/templates/list", |cursor| {
                        let peer = peer.clone();
                        async move {
                            peer.list_resource_templates(Some(
                                PaginatedRequestParams::default().with_cursor(cursor),
                            ))
                            .await
                            .map(|page| (page.resource_templates, page.next_cursor))
                        }
                    })
                },
            )
            .await
    }

    /// Resources and templates with the gate's view of each.
    pub async fn gated_resources(
        &self,
    ) -> Result<(Vec<GatedResource>, Vec<GatedTemplate>), HostError> {
        let resources = self.resources().await?;
        let templates = self.resource_templates().await?;
        let gate = self.resource_gate.lock().expect("resource gate poisoned");
        Ok((
            resources
                .into_iter()
                .map(|resource| GatedResource {
                    status: gate.status(&resource.uri),
                    resource,
                })
                .collect(),
            templates
                .into_iter()
                .map(|template| GatedTemplate {
                    status: gate.template_status(&template.uri_template),
                    template,
                })
                .collect(),
        ))
    }

    /// Reads a resource the gate allows, through every round it needs; the contents are
    /// checked (size cap, base64, image types) before they are returned.
    pub async fn read_resource(
        &self,
        uri: &str,
        options: &CallOptions,
    ) -> Result<ResourceOutcome, HostError> {
        self.require(Offer::Resources, "resources")?;
        let mut step_ups = 0;
        let (answer, rounds, elicitations) = loop {
            self.clear_challenge();
            let permit = {
                let gate = self.resource_gate.lock().expect("resource gate poisoned");
                self.gatekeeper.authorize::<Resources>(
                    &self.verdict,
                    &gate,
                    ResourceRequest {
                        uri,
                        action: ResourceAction::Read,
                    },
                    options.caller.as_ref(),
                )?
            };
            let params = ReadResourceRequestParams::new(permit.uri());
            let (outcome, _records) = self.attempt(Ask::Read(params), options).await;
            if !self.step_up_after(&outcome, &mut step_ups).await? {
                break outcome?;
            }
        };
        let what = format!("resources/read {uri:?}");
        let Answer::Read(result) = answer else {
            return Err(self.protocol(&what, "unexpected result kind"));
        };
        let values: Vec<_> = result
            .contents
            .iter()
            .map(|c| serde_json::to_value(c).expect("a resource content serializes"))
            .collect();
        let contents =
            view_contents(&values).map_err(|(fault, at)| self.refused(&what, fault, &at))?;
        Ok(ResourceOutcome {
            uri: uri.to_string(),
            result,
            contents,
            rounds,
            elicitations,
        })
    }

    /// Expands one of the server's listed templates with the user's values and reads the
    /// result through the gate like any URI.
    pub async fn read_template(
        &self,
        uri_template: &str,
        values: &BTreeMap<String, String>,
        options: &CallOptions,
    ) -> Result<ResourceOutcome, HostError> {
        let uri = self.expand_template(uri_template, values).await?;
        self.read_resource(&uri, options).await
    }

    /// The URI one of the server's listed templates expands to.
    pub async fn expand_template(
        &self,
        uri_template: &str,
        values: &BTreeMap<String, String>,
    ) -> Result<String, HostError> {
        self.require(Offer::Resources, "resources")?;
        let what = format!("resource template {uri_template:?}");
        if !self
            .resource_templates()
            .await?
            .iter()
            .any(|t| t.uri_template == uri_template)
        {
            return Err(self.protocol(&what, "the server does not list this template"));
        }
        let template =
            Template::parse(uri_template).map_err(|e| self.protocol(&what, &e.to_string()))?;
        if let Some(unknown) = values
            .keys()
            .find(|name| !template.variables().contains(name))
        {
            return Err(HostError::Config(format!(
                "the template {uri_template:?} has no variable {unknown:?}; its variables are {}",
                template.variables().join(", ")
            )));
        }
        template
            .expand(values)
            .map_err(|e| self.protocol(&what, &e.to_string()))
    }

    /// Argument completion for an allowed prompt or a template the gate shows as allowed;
    /// nothing is sent for a hidden one, and the refusal is recorded with the caller.
    /// Allowed completions are not recorded (one per keystroke). At most
    /// [`MAX_COMPLETION_VALUES`] values.
    pub async fn complete(
        &self,
        target: &CompletionTarget,
        argument: &str,
        value: &str,
        context: &HashMap<String, String>,
        options: &CallOptions,
    ) -> Result<CompletionInfo, HostError> {
        self.require(Offer::Completions, "completions")?;
        let caller = options.caller.as_ref();
        let reference = match target {
            CompletionTarget::Prompt(name) => {
                self.prompts().await?;
                let gate = self.prompt_gate.lock().expect("prompt gate poisoned");
                if gate.check(name).is_err() {
                    let _denied =
                        self.gatekeeper
                            .authorize::<Prompts>(&self.verdict, &gate, name, caller)?;
                }
                Reference::for_prompt(name.clone())
            }
            CompletionTarget::Template(uri_template) => {
                let listed = self
                    .resource_templates()
                    .await?
                    .iter()
                    .any(|t| &t.uri_template == uri_template);
                let status = self
                    .resource_gate
                    .lock()
                    .expect("resource gate poisoned")
                    .template_status(uri_template);
                if !listed || status != ResourceStatus::Allowed {
                    let detail = if listed {
                        "the template is not under an allowed resource prefix"
                    } else {
                        "the server does not list this template"
                    };
                    let denied = ResourceDecision::Denied {
                        action: ResourceAction::Complete,
                        target: ResourceTarget::Template(uri_template.clone()),
                        reason: GateReason::ResourceNotAdmitted,
                        detail: detail.into(),
                    };
                    self.gatekeeper.record(&self.verdict, denied, caller)?;
                    return Err(HostError::ToolDenied {
                        server: self.server.clone(),
                        tool: uri_template.clone(),
                        reason: crate::error_code::ErrorCode::ResourceNotAdmitted,
                        detail: detail.into(),
                    });
                }
                Reference::for_resource(uri_template.clone())
            }
        };
        let mut params = CompleteRequestParams::new(reference, ArgumentInfo::new(argument, value));
        if !context.is_empty() {
            params = params.with_context(CompletionContext::with_arguments(context.clone()));
        }
        let what = format!("completion/complete {argument:?}");
        let result = self
            .guarded(
                &what,
                &CallOptions::default(),
                self.service.peer().complete(params),
            )
            .await?;
        let mut completion = result.completion;
        completion
            .values
            .retain(|v| v.chars().count() <= MAX_COMPLETION_CHARS);
        completion.values.truncate(MAX_COMPLETION_VALUES);
        Ok(completion)
    }

    /// Subscribes `subscriber` to updates of a resource the gate allows. Every request is
    /// decided and recorded by the gate with its caller, also for a URI already subscribed.
    /// The upstream subscription is shared: `resources/subscribe` in 2025-11-25 (when the
    /// server declares subscriptions), a `subscriptions/listen` stream in 2026-07-28, sent
    /// for the first holder and ended with the last ([`Connection::unsubscribe_resource`],
    /// [`Connection::release_subscriptions`]). Updates arrive as
    /// [`HostEvent::ResourceUpdated`]. At most [`MAX_SUBSCRIPTIONS`] upstream, and at most
    /// [`MAX_SUBSCRIPTIONS_PER_CLIENT`] held by one gateway session, so one client cannot take
    /// every slot from the others and the person.
    pub async fn subscribe_resource(
        &self,
        uri: &str,
        subscriber: Subscriber,
        caller: Option<&crate::caller::Caller>,
    ) -> Result<(), HostError> {
        self.require(Offer::Resources, "resources")?;
        if self.era == Era::V2025_11_25 {
            self.require(Offer::Subscriptions, "resource subscriptions")?;
        }
        let permit = {
            let gate = self.resource_gate.lock().expect("resource gate poisoned");
            self.gatekeeper.authorize::<Resources>(
                &self.verdict,
                &gate,
                ResourceRequest {
                    uri,
                    action: ResourceAction::Subscribe,
                },
                caller,
            )?
        };
        let uri = permit.uri().to_string();
        // One change of the holders at a time: two holders of one URI subscribe upstream once.
        let _changing = self.subscribing.lock().await;
        {
            let holders = self.holders.lock().expect("holders poisoned");
            if holders
                .get(&uri)
                .is_some_and(|set| set.contains(&subscriber))
            {
                return Ok(());
            }
            if let Some(session) = subscriber.session() {
                let held = holders
                    .values()
                    .filter(|set| set.iter().any(|h| h.session() == Some(session)))
                    .count();
                if held >= MAX_SUBSCRIPTIONS_PER_CLIENT {
                    return Err(HostError::SubscriptionLimit {
                        server: self.server.clone(),
                        detail: format!(
                            "this AI client already holds {held} resource subscriptions on this server, the most one client may; unsubscribe from one first"
                        ),
                    });
                }
            }
        }
        let upstream = self
            .subscribed
            .lock()
            .expect("subscriptions poisoned")
            .contains_key(&uri);
        if !upstream {
            self.subscribe_upstream(&uri).await?;
        }
        self.holders
            .lock()
            .expect("holders poisoned")
            .entry(uri)
            .or_default()
            .insert(subscriber);
        Ok(())
    }

    /// Sends the upstream subscription for `uri` (the caller holds `subscribing`).
    async fn subscribe_upstream(&self, uri: &str) -> Result<(), HostError> {
        if self
            .subscribed
            .lock()
            .expect("subscriptions poisoned")
            .len()
            >= MAX_SUBSCRIPTIONS
        {
            return Err(HostError::SubscriptionLimit {
                server: self.server.clone(),
                detail: format!(
                    "this server already has {MAX_SUBSCRIPTIONS} resource subscriptions, the most Gatehouse keeps on one server; unsubscribe from one first"
                ),
            });
        }
        let uri = uri.to_string();
        let what = format!("subscribe {uri:?}");
        let peer = self.service.peer();
        let stream = match self.era {
            Era::V2025_11_25 => {
                // Registered first, so an update sent right after the answer is not dropped.
                self.subscribed
                    .lock()
                    .expect("subscriptions poisoned")
                    .insert(uri.clone(), None);
                #[allow(deprecated)]
                let sent = self
                    .guarded(
                        &what,
                        &CallOptions::default(),
                        peer.subscribe(SubscribeRequestParams::new(uri.clone())),
                    )
                    .await;
                if let Err(error) = sent {
                    self.subscribed
                        .lock()
                        .expect("subscriptions poisoned")
                        .remove(&uri);
                    return Err(error);
                }
                None
            }
            Era::V2026_07_28 => {
                let filter = SubscriptionFilter::builder()
                    .resource_subscriptions([uri.clone()])
                    .build();
                let mut subscription = self
                    .guarded(&what, &CallOptions::default(), peer.listen(filter))
                    .await?;
                let events = self.events.clone();
                let (server, watched) = (self.server.clone(), uri.clone());
                let task = tokio::spawn(async move {
                    while let Ok(Some(notification)) = subscription.next().await {
                        if let rmcp::model::ServerNotification::ResourceUpdatedNotification(n) =
                            notification
                            && n.params.uri == watched
                        {
                            let _ = events.send(HostEvent::ResourceUpdated {
                                server: server.clone(),
                                uri: n.params.uri,
                            });
                        }
                    }
                });
                Some(task.abort_handle())
            }
        };
        self.subscribed
            .lock()
            .expect("subscriptions poisoned")
            .insert(uri, stream);
        Ok(())
    }

    /// Ends `subscriber`'s subscription to `uri` (nothing to do for one it does not hold);
    /// the upstream subscription ends with its last holder.
    pub async fn unsubscribe_resource(
        &self,
        uri: &str,
        subscriber: Subscriber,
    ) -> Result<(), HostError> {
        let _changing = self.subscribing.lock().await;
        let last = {
            let mut holders = self.holders.lock().expect("holders poisoned");
            let Some(set) = holders.get_mut(uri) else {
                return Ok(());
            };
            if !set.remove(&subscriber) {
                return Ok(());
            }
            let last = set.is_empty();
            if last {
                holders.remove(uri);
            }
            last
        };
        if last {
            self.unsubscribe_upstream(uri).await
        } else {
            Ok(())
        }
    }

    /// Ends every subscription a gateway session holds (its own and its streams', or only
    /// the stream's when `stream` is given): the client left, or its stream ended. Upstream
    /// subscriptions nobody else holds end with them. Returns how many were released.
    pub async fn release_subscriptions(&self, session: u64, stream: Option<u64>) -> usize {
        let _changing = self.subscribing.lock().await;
        let held_by = |h: &Subscriber| match (h, stream) {
            (Subscriber::Client { session: s, .. }, None) => *s == session,
            (
                Subscriber::Client {
                    session: s,
                    stream: t,
                },
                Some(stream),
            ) => *s == session && *t == stream,
            (Subscriber::Person, _) => false,
        };
        let (released, emptied) = {
            let mut holders = self.holders.lock().expect("holders poisoned");
            let mut released = 0;
            let mut emptied = Vec::new();
            holders.retain(|uri, set| {
                let before = set.len();
                set.retain(|h| !held_by(h));
                released += before - set.len();
                if set.is_empty() {
                    emptied.push(uri.clone());
                }
                !set.is_empty()
            });
            (released, emptied)
        };
        for uri in emptied {
            // Best effort: a server that fails to answer has lost the client anyway.
            let _ = self.unsubscribe_upstream(&uri).await;
        }
        released
    }

    /// Ends the upstream subscription for `uri` (the caller holds `subscribing`).
    async fn unsubscribe_upstream(&self, uri: &str) -> Result<(), HostError> {
        let removed = self
            .subscribed
            .lock()
            .expect("subscriptions poisoned")
            .remove(uri);
        match removed {
            None => Ok(()),
            Some(Some(stream)) => {
                // Dropping the stream's subscription cancels the listen request.
                stream.abort();
                Ok(())
            }
            Some(None) => {
                #[allow(deprecated)]
                let sent = self
                    .service
                    .peer()
                    .unsubscribe(UnsubscribeRequestParams::new(uri));
                self.guarded(
                    &format!("unsubscribe {uri:?}"),
                    &CallOptions::default(),
                    sent,
                )
                .await
            }
        }
    }

    /// The URIs this connection is subscribed to, in order.
    pub fn subscriptions(&self) -> Vec<String> {
        let mut uris: Vec<_> = self
            .subscribed
            .lock()
            .expect("subscriptions poisoned")
            .keys()
            .cloned()
            .collect();
        uris.sort();
        uris
    }

    /// Approves prompts as the user (warn posture only), pinning their current definitions;
    /// `names` empty means every listed prompt. Returns the pins recorded.
    pub async fn approve_prompts(
        &self,
        names: &[String],
    ) -> Result<Vec<(String, String)>, HostError> {
        self.approve_prompts_reviewed(names, &crate::gatekeeper::Review::ALONE)
            .await
    }

    /// As [`Connection::approve_prompts`], reviewing each definition against `review` first.
    pub async fn approve_prompts_reviewed(
        &self,
        names: &[String],
        review: &crate::gatekeeper::Review<'_>,
    ) -> Result<Vec<(String, String)>, HostError> {
        let prompts = self.prompts().await?;
        self.approve_listed::<Prompts>(
            &self.prompt_gate,
            &prompt_definitions(&prompts),
            names,
            review,
        )
    }

    /// Approves exact resource URIs as the user (warn posture only).
    pub fn approve_resources(&self, uris: &[String]) -> Result<(), HostError> {
        self.approve_resource_entries(uris, &[])
    }

    /// Approves exact resource URIs and URI prefixes (each ending in `/`, the bundle's prefix
    /// rule) as the user (warn posture only).
    pub fn approve_resource_entries(
        &self,
        uris: &[String],
        prefixes: &[String],
    ) -> Result<(), HostError> {
        let entries: Vec<_> = (uris.iter().cloned().map(ResourceEntry::Uri))
            .chain(prefixes.iter().cloned().map(ResourceEntry::Prefix))
            .collect();
        self.gatekeeper
            .approve::<Resources>(&self.verdict, &entries)?;
        *self.resource_gate.lock().expect("resource gate poisoned") =
            self.gatekeeper.gate::<Resources>(&self.verdict);
        Ok(())
    }

    fn refused(&self, what: &str, fault: crate::content::ContentFault, at: &str) -> HostError {
        let detail = match fault {
            crate::content::ContentFault::ContentTooLarge => format!(
                "{at} takes the result over {} MiB, the most Gatehouse passes on; nothing of it is shown",
                crate::content::MAX_CONTENT_BYTES / (1024 * 1024)
            ),
            crate::content::ContentFault::ContentNotBase64 => {
                format!(
                    "{at} claims to be binary data but is not valid base64; nothing of it is shown"
                )
            }
        };
        HostError::ContentRefused {
            server: self.server.clone(),
            what: what.to_string(),
            reason: fault.into(),
            detail,
        }
    }
}

/// Listed prompts as JSON, the form the prompt gate hashes.
fn prompt_definitions(prompts: &[Prompt]) -> Vec<serde_json::Value> {
    prompts
        .iter()
        .map(|p| serde_json::to_value(p).expect("a prompt serializes"))
        .collect()
}

/// The kind of a stream task, so [`Connection`] can keep subscriptions in one map.
pub(crate) type Subscribed = std::sync::Arc<std::sync::Mutex<HashMap<String, Option<AbortHandle>>>>;
