//! The host's prompts and resources, for every front end: listings grouped by what the gate
//! says (as tools are), reads and prompts with their checked content and the verified
//! identity of who sent them, argument completion, subscriptions, and the user's approvals in
//! the warn posture (of tools too: every approval of every primitive is here). Each method is
//! one call into the live connection; errors are `ApiError`s with the host's stable codes.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rmcp::model::{
    CompletionInfo, GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceTemplate,
};
use serde::Serialize;
use serde_json::{Map, Value};

use gatehouse_attest::gate::ToolStatus;
use gatehouse_attest::resources::ResourceStatus;
use gatehouse_attest::uri_template::Template;

use super::{ApiError, Change, Host};
use crate::broker::ElicitationRecord;
use crate::connection::{
    CallOptions, CompletionTarget, GatedPrompt, GatedResource, GatedTemplate, Subscriber,
};
use crate::consent::IdentityBanner;
use crate::content::{ContentView, MessageView};

/// A listed item the gate does not let through, and why (a stable reason code).
#[derive(Debug, Clone, Serialize)]
pub struct Withheld<T> {
    pub item: T,
    pub reason: &'static str,
}

/// A server's prompts, grouped by the gate.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PromptGroups {
    pub allowed: Vec<Prompt>,
    /// Not on the allow-list.
    pub hidden: Vec<Withheld<Prompt>>,
    /// On the allow-list, but its pinned definition changed (or is not listed).
    pub blocked: Vec<Withheld<Prompt>>,
}

/// A resource template with its variables, for a form.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateRow {
    pub template: ResourceTemplate,
    pub variables: Vec<String>,
}

/// A server's resources and templates, grouped by the gate.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ResourceGroups {
    pub allowed: Vec<Resource>,
    pub hidden: Vec<Withheld<Resource>>,
    pub templates: Vec<TemplateRow>,
    pub hidden_templates: Vec<Withheld<TemplateRow>>,
    /// The URIs this connection is subscribed to.
    pub subscriptions: Vec<String>,
}

/// Who sent a result: the server's name and what admission verified about it.
#[derive(Debug, Clone, Serialize)]
pub struct Sender {
    pub server: String,
    pub banner: IdentityBanner,
}

/// A resource read, ready to show.
#[derive(Debug, Clone, Serialize)]
pub struct ReadView {
    pub sender: Sender,
    pub uri: String,
    /// The server's result as it came (checked: within the size cap, blobs base64), for a
    /// front end that passes it on (the gateway).
    #[serde(skip)]
    pub result: ReadResourceResult,
    pub contents: Vec<ContentView>,
    pub rounds: usize,
    pub elicitations: Vec<ElicitationRecord>,
}

/// A prompt got, ready to show.
#[derive(Debug, Clone, Serialize)]
pub struct PromptView {
    pub sender: Sender,
    pub prompt: String,
    /// The server's result as it came (checked), for the gateway.
    #[serde(skip)]
    pub result: GetPromptResult,
    pub description: Option<String>,
    pub messages: Vec<MessageView>,
    pub rounds: usize,
    pub elicitations: Vec<ElicitationRecord>,
}

/// What to read: a URI, or one of the server's templates with values for its variables.
#[derive(Debug, Clone)]
pub enum ReadTarget {
    Uri(String),
    Template {
        uri_template: String,
        values: BTreeMap<String, String>,
    },
}

fn template_row(template: ResourceTemplate) -> TemplateRow {
    let variables = Template::parse(&template.uri_template)
        .map(|t| t.variables())
        .unwrap_or_default();
    TemplateRow {
        template,
        variables,
    }
}

impl Host {
    /// The servers with a live connection (not killed), in list order: whose prompts and
    /// resources a gateway offers.
    pub async fn live_servers(&self) -> Vec<String> {
        let slots = self.slots.lock().await;
        let Ok(specs) = self.specs() else {
            return Vec::new();
        };
        specs
            .into_iter()
            .filter(|(name, _, _)| {
                matches!(slots.get(name), Some(super::Slot::Connected(c))
                    if c.session().is_none_or(|s| s.killed().is_none()))
            })
            .map(|(name, _, _)| name)
            .collect()
    }

    /// The server's prompts as the gate sees them.
    pub async fn list_prompts(&self, server: &str) -> Result<PromptGroups, ApiError> {
        self.list_prompts_with(server, &CallOptions::default())
            .await
    }

    /// [`Host::list_prompts`] for a downstream client (live connections only).
    pub async fn list_prompts_with(
        &self,
        server: &str,
        options: &CallOptions,
    ) -> Result<PromptGroups, ApiError> {
        let connection = self.connection_for(server, options).await?;
        let mut groups = PromptGroups::default();
        for gated in connection.gated_prompts().await? {
            match gated.status {
                ToolStatus::Allowed => groups.allowed.push(gated.prompt),
                ToolStatus::Hidden => groups.hidden.push(Withheld {
                    item: gated.prompt,
                    reason: "prompt_not_admitted",
                }),
                ToolStatus::Blocked { reason, .. } => groups.blocked.push(Withheld {
                    item: gated.prompt,
                    reason: reason.as_str(),
                }),
            }
        }
        Ok(groups)
    }

    /// Every prompt the server lists with the gate's status for it (blocked ones with the
    /// expected and actual pins): for a front end that shows the pins (the CLI).
    pub async fn gated_prompts(&self, server: &str) -> Result<Vec<GatedPrompt>, ApiError> {
        Ok(self.connection(server).await?.gated_prompts().await?)
    }

    /// Every resource and template the server lists with the gate's status for each.
    pub async fn gated_resources(
        &self,
        server: &str,
    ) -> Result<(Vec<GatedResource>, Vec<GatedTemplate>), ApiError> {
        Ok(self.connection(server).await?.gated_resources().await?)
    }

    /// The server's resources and templates as the gate sees them.
    pub async fn list_resources(&self, server: &str) -> Result<ResourceGroups, ApiError> {
        self.list_resources_with(server, &CallOptions::default())
            .await
    }

    /// [`Host::list_resources`] for a downstream client (live connections only).
    pub async fn list_resources_with(
        &self,
        server: &str,
        options: &CallOptions,
    ) -> Result<ResourceGroups, ApiError> {
        let connection = self.connection_for(server, options).await?;
        let (resources, templates) = connection.gated_resources().await?;
        let mut groups = ResourceGroups {
            subscriptions: connection.subscriptions(),
            ..ResourceGroups::default()
        };
        for gated in resources {
            match gated.status {
                ResourceStatus::Allowed => groups.allowed.push(gated.resource),
                ResourceStatus::Hidden(reason) => groups.hidden.push(Withheld {
                    item: gated.resource,
                    reason: reason.as_str(),
                }),
            }
        }
        for gated in templates {
            let row = template_row(gated.template);
            match gated.status {
                ResourceStatus::Allowed => groups.templates.push(row),
                ResourceStatus::Hidden(reason) => groups.hidden_templates.push(Withheld {
                    item: row,
                    reason: reason.as_str(),
                }),
            }
        }
        Ok(groups)
    }

    fn sender(&self, server: &str, connection: &crate::connection::Connection) -> Sender {
        Sender {
            server: server.to_string(),
            banner: IdentityBanner::from_verdict(connection.verdict()),
        }
    }

    pub(super) fn changed(&self, server: &str) {
        (self.notify)(Change::Audit);
        (self.notify)(Change::Traffic {
            server: server.into(),
        });
    }

    /// Reads a resource (or a template's expansion) through the gate; elicitations it
    /// causes are asked through the front end's consent UI meanwhile.
    pub async fn read_resource(
        &self,
        server: &str,
        target: ReadTarget,
    ) -> Result<ReadView, ApiError> {
        self.read_resource_with(server, target, &CallOptions::default())
            .await
    }

    /// [`Host::read_resource`] with per-request options (a downstream client's caller and
    /// cancellation, from the gateway).
    pub async fn read_resource_with(
        &self,
        server: &str,
        target: ReadTarget,
        options: &CallOptions,
    ) -> Result<ReadView, ApiError> {
        let connection = self.connection_for(server, options).await?;
        let outcome = match &target {
            ReadTarget::Uri(uri) => connection.read_resource(uri, options).await,
            ReadTarget::Template {
                uri_template,
                values,
            } => {
                connection
                    .read_template(uri_template, values, options)
                    .await
            }
        };
        self.changed(server);
        let outcome = outcome?;
        Ok(ReadView {
            sender: self.sender(server, &connection),
            uri: outcome.uri,
            result: outcome.result,
            contents: outcome.contents,
            rounds: outcome.rounds,
            elicitations: outcome.elicitations,
        })
    }

    /// Gets a prompt through the gate with `arguments` (strings, as MCP prompt arguments are).
    pub async fn get_prompt(
        &self,
        server: &str,
        prompt: &str,
        arguments: Map<String, Value>,
    ) -> Result<PromptView, ApiError> {
        self.get_prompt_with(server, prompt, arguments, &CallOptions::default())
            .await
    }

    /// [`Host::get_prompt`] with per-request options (the gateway's): no arguments, or an
    /// empty object, is sent as none.
    pub async fn get_prompt_with(
        &self,
        server: &str,
        prompt: &str,
        arguments: Map<String, Value>,
        options: &CallOptions,
    ) -> Result<PromptView, ApiError> {
        let arguments = (!arguments.is_empty()).then_some(arguments);
        self.get_prompt_as_given(server, prompt, arguments, options)
            .await
    }

    /// [`Host::get_prompt_with`] sending the arguments exactly as given: `Some` of an empty
    /// object is sent as `{}` (the CLI's `--args '{}'`), `None` as no field.
    pub async fn get_prompt_as_given(
        &self,
        server: &str,
        prompt: &str,
        arguments: Option<Map<String, Value>>,
        options: &CallOptions,
    ) -> Result<PromptView, ApiError> {
        let connection = self.connection_for(server, options).await?;
        let outcome = connection.get_prompt(prompt, arguments, options).await;
        self.changed(server);
        let outcome = outcome?;
        Ok(PromptView {
            sender: self.sender(server, &connection),
            prompt: prompt.to_string(),
            description: outcome.result.description.clone(),
            result: outcome.result,
            messages: outcome.messages,
            rounds: outcome.rounds,
            elicitations: outcome.elicitations,
        })
    }

    /// Completion values for an argument of an allowed prompt or template.
    pub async fn complete(
        &self,
        server: &str,
        target: CompletionTarget,
        argument: &str,
        value: &str,
        context: HashMap<String, String>,
    ) -> Result<Vec<String>, ApiError> {
        self.complete_with(
            server,
            target,
            argument,
            value,
            context,
            &CallOptions::default(),
        )
        .await
    }

    /// [`Host::complete`] with per-request options (the gateway's: a denial is recorded with
    /// the client that asked, and only a live connection is used).
    pub async fn complete_with(
        &self,
        server: &str,
        target: CompletionTarget,
        argument: &str,
        value: &str,
        context: HashMap<String, String>,
        options: &CallOptions,
    ) -> Result<Vec<String>, ApiError> {
        let completion = self
            .completion_with(server, target, argument, value, context, options)
            .await?;
        Ok(completion.values)
    }

    /// [`Host::complete_with`] with the whole answer: the values, and the server's total and
    /// whether it has more (the CLI says so).
    pub async fn completion_with(
        &self,
        server: &str,
        target: CompletionTarget,
        argument: &str,
        value: &str,
        context: HashMap<String, String>,
        options: &CallOptions,
    ) -> Result<CompletionInfo, ApiError> {
        let connection = self.connection_for(server, options).await?;
        Ok(connection
            .complete(&target, argument, value, &context, options)
            .await?)
    }

    /// Subscribes the person to a resource's updates (they arrive as
    /// [`crate::HostEvent::ResourceUpdated`]).
    pub async fn subscribe_resource(&self, server: &str, uri: &str) -> Result<(), ApiError> {
        self.subscribe_resource_for(server, uri, Subscriber::Person, &CallOptions::default())
            .await
    }

    /// Subscribes `subscriber` (a gateway session's, from [`Host::subscriber_session`]), the
    /// request decided and recorded with `options.caller`.
    pub async fn subscribe_resource_for(
        &self,
        server: &str,
        uri: &str,
        subscriber: Subscriber,
        options: &CallOptions,
    ) -> Result<(), ApiError> {
        let connection = self.connection_for(server, options).await?;
        let subscribed = connection
            .subscribe_resource(uri, subscriber, options.caller.as_ref())
            .await;
        self.changed(server);
        Ok(subscribed?)
    }

    pub async fn unsubscribe_resource(&self, server: &str, uri: &str) -> Result<(), ApiError> {
        let connection = self.connection(server).await?;
        Ok(connection
            .unsubscribe_resource(uri, Subscriber::Person)
            .await?)
    }

    /// Ends `subscriber`'s subscription, if its server is connected (a closed connection
    /// holds none).
    pub async fn unsubscribe_resource_for(
        &self,
        server: &str,
        uri: &str,
        subscriber: Subscriber,
    ) -> Result<(), ApiError> {
        let Some(connection) = self.connected(server).await else {
            return Ok(());
        };
        Ok(connection.unsubscribe_resource(uri, subscriber).await?)
    }

    /// A new gateway session's number, for its [`Subscriber::Client`] subscriptions.
    pub fn subscriber_session(&self) -> u64 {
        self.subscriber_sessions
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1
    }

    /// Ends every subscription of a gateway session (or of one of its streams) on every
    /// connection; upstream subscriptions nobody else holds end with them. Returns how many
    /// were released.
    pub async fn release_subscriptions(&self, session: u64, stream: Option<u64>) -> usize {
        let connections: Vec<Arc<crate::connection::Connection>> = {
            let slots = self.slots.lock().await;
            slots
                .values()
                .filter_map(|slot| match slot {
                    super::Slot::Connected(c) => Some(c.clone()),
                    _ => None,
                })
                .collect()
        };
        let mut released = 0;
        for connection in connections {
            released += connection.release_subscriptions(session, stream).await;
        }
        released
    }

    /// The connection to `server` if one is open now (never connecting).
    async fn connected(&self, server: &str) -> Option<Arc<crate::connection::Connection>> {
        match self.slots.lock().await.get(server) {
            Some(super::Slot::Connected(c)) => Some(c.clone()),
            _ => None,
        }
    }

    /// Approves tools as the user (warn posture only), pinning their current definitions;
    /// `names` empty means every listed tool. Returns the pins recorded. Here with the other
    /// approvals: every front end's approval of every primitive is one of these methods.
    pub async fn approve_tools(
        &self,
        server: &str,
        names: &[String],
    ) -> Result<Vec<(String, String)>, ApiError> {
        self.approve_tools_with(server, names, super::Acknowledgement::NotGiven)
            .await
    }

    /// Approves prompts as the user (warn posture only); `names` empty means every listed
    /// prompt. Returns the pins recorded.
    pub async fn approve_prompts(
        &self,
        server: &str,
        names: &[String],
    ) -> Result<Vec<(String, String)>, ApiError> {
        self.approve_prompts_with(server, names, super::Acknowledgement::NotGiven)
            .await
    }

    /// Approves exact resource URIs and URI prefixes (each ending in `/`, the bundle's prefix
    /// rule) as the user, in the warn posture only: the one rule for every front end (the
    /// window gives exact URIs only, the CLI either). Refused as a whole, naming why, under
    /// deny-by-default or for a prefix that is not one; nothing is recorded then.
    pub async fn approve_resources(
        &self,
        server: &str,
        uris: &[String],
        prefixes: &[String],
    ) -> Result<(), ApiError> {
        let connection = self.connection(server).await?;
        let approved = connection.approve_resource_entries(uris, prefixes);
        self.changed(server);
        Ok(approved?)
    }
}
