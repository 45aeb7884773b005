//! The host's prompts and resources, for every front end: listings grouped by what the gate
//! says (as tools are), reads and prompts with their checked content and the verified
//! identity of who sent them, argument completion, subscriptions, and the user's approvals in
//! the warn posture. Each method is one call into the live connection; errors are `ApiError`s
//! with the host's stable codes.

use std::collections::{BTreeMap, HashMap};

use rmcp::model::{GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceTemplate};
use serde::Serialize;
use serde_json::{Map, Value};

use gatehouse_attest::gate::ToolStatus;
use gatehouse_attest::resources::ResourceStatus;
use gatehouse_attest::uri_template::Template;

use super::{ApiError, Change, Host};
use crate::broker::ElicitationRecord;
use crate::connection::{CallOptions, CompletionTarget};
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
        let connection = self.connection(server).await?;
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

    /// The server's resources and templates as the gate sees them.
    pub async fn list_resources(&self, server: &str) -> Result<ResourceGroups, ApiError> {
        let connection = self.connection(server).await?;
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

    fn sender(&self, server: &str, connection: &crate::Connection) -> Sender {
        Sender {
            server: server.to_string(),
            banner: IdentityBanner::from_verdict(connection.verdict()),
        }
    }

    fn changed(&self, server: &str) {
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
        let connection = self.connection(server).await?;
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

    /// [`Host::get_prompt`] with per-request options (the gateway's).
    pub async fn get_prompt_with(
        &self,
        server: &str,
        prompt: &str,
        arguments: Map<String, Value>,
        options: &CallOptions,
    ) -> Result<PromptView, ApiError> {
        let connection = self.connection(server).await?;
        let outcome = connection
            .get_prompt(
                prompt,
                (!arguments.is_empty()).then_some(arguments),
                options,
            )
            .await;
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
        let connection = self.connection(server).await?;
        let completion = connection
            .complete(&target, argument, value, &context)
            .await?;
        Ok(completion.values)
    }

    /// Subscribes to a resource's updates (they arrive as [`crate::HostEvent::ResourceUpdated`]).
    pub async fn subscribe_resource(&self, server: &str, uri: &str) -> Result<(), ApiError> {
        let connection = self.connection(server).await?;
        let subscribed = connection.subscribe_resource(uri).await;
        self.changed(server);
        Ok(subscribed?)
    }

    pub async fn unsubscribe_resource(&self, server: &str, uri: &str) -> Result<(), ApiError> {
        let connection = self.connection(server).await?;
        Ok(connection.unsubscribe_resource(uri).await?)
    }

    /// Approves prompts as the user (warn posture only); returns the pins recorded.
    pub async fn approve_prompts(
        &self,
        server: &str,
        names: &[String],
    ) -> Result<Vec<(String, String)>, ApiError> {
        let connection = self.connection(server).await?;
        let pins = connection.approve_prompts(names).await;
        self.changed(server);
        Ok(pins?)
    }

    /// Approves exact resource URIs as the user (warn posture only).
    pub async fn approve_resources(&self, server: &str, uris: &[String]) -> Result<(), ApiError> {
        let connection = self.connection(server).await?;
        let approved = connection.approve_resources(uris);
        self.changed(server);
        Ok(approved?)
    }
}
