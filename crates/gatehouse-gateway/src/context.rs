//! Prompts and resources for the AI client: what the gate allows of every live upstream
//! server, and each request through the host (gated and audited with the client named, its
//! elicitations through the broker, its content checked).
//!
//! Prompts are offered under the tools' naming rule (`SERVER__PROMPT`, or their own names for
//! `serve --server NAME`). Resource URIs cannot be renamed without breaking the links inside
//! content, so they are offered as the servers list them and routed back: a URI one server
//! lists exactly goes to it; otherwise the server of the template with the longest literal
//! start the URI begins with. A URI two servers list, or a template start two servers share,
//! is left out rather than guessed. With one server (`--server`), everything goes to it, so
//! what the client asks for is always decided (and recorded) by that server's gate.

use std::collections::{BTreeMap, HashMap};

use gatehouse_attest::uri_template::literal_prefix;
use gatehouse_host::connection::CompletionTarget;
use gatehouse_host::host::ApiError;
use gatehouse_host::host::context::ReadTarget;
use gatehouse_host::{CallOptions, HostEvent};
use rmcp::ErrorData;
use rmcp::model::{ErrorCode, Prompt, Resource, ResourceTemplate};
use serde_json::{Map, Value, json};

use crate::names::NameTable;
use crate::server::Gateway;

/// What is offered besides tools, computed afresh for each listing.
#[derive(Debug, Default, Clone)]
pub(crate) struct ContextOffer {
    pub prompt_table: NameTable,
    pub prompts: Vec<Prompt>,
    /// Offered URI → server.
    pub resources: BTreeMap<String, String>,
    pub resource_list: Vec<Resource>,
    /// Template → server.
    pub templates: BTreeMap<String, String>,
    pub template_list: Vec<ResourceTemplate>,
}

/// JSON-RPC "resource not found" (SEP-2164).
pub(crate) const RESOURCE_NOT_FOUND: i32 = -32002;

/// The host's error as the JSON-RPC error the client gets: the upstream server's own code
/// when it refused, otherwise what Gatehouse decided, with its stable code in `data`.
pub(crate) fn rpc_error(error: &ApiError) -> ErrorData {
    rpc_error_about(error, None)
}

/// [`rpc_error`] for a request about `uri`, which the error's data names (SEP-2164).
pub(crate) fn rpc_error_about(error: &ApiError, uri: Option<&str>) -> ErrorData {
    let mut data = json!({"gatehouse": error.code});
    if let Some(uri) = uri {
        data["uri"] = json!(uri);
    }
    let data = Some(data);
    match error.server_code {
        Some(code) => ErrorData::new(ErrorCode(code), error.message.clone(), data),
        // What the gate hides is not offered to the client: for it, the resource does not
        // exist (the refusal is still audited with the client named).
        None if matches!(error.code, "resource_not_admitted" | "resource_uri_refused") => {
            ErrorData::new(
                ErrorCode(RESOURCE_NOT_FOUND),
                format!(
                    "Gatehouse does not offer this resource: {} (code {})",
                    error.message, error.code
                ),
                data,
            )
        }
        None if matches!(
            error.code,
            "prompt_not_admitted" | "prompt_pin_mismatch" | "prompt_not_listed"
        ) =>
        {
            ErrorData::invalid_params(
                format!(
                    "Gatehouse does not offer this prompt: {} (code {})",
                    error.message, error.code
                ),
                data,
            )
        }
        None if error.refusal => ErrorData::invalid_request(
            format!(
                "Gatehouse refused this: {} (code {})",
                error.message, error.code
            ),
            data,
        ),
        None => ErrorData::internal_error(
            format!(
                "Gatehouse could not complete this: {} (code {})",
                error.message, error.code
            ),
            data,
        ),
    }
}

fn not_found(uri: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode(RESOURCE_NOT_FOUND),
        format!("no server connected through Gatehouse offers the resource {uri:?}"),
        Some(json!({"uri": uri})),
    )
}

impl Gateway {
    fn servers_offered(&self, live: Vec<String>) -> Vec<String> {
        match self.only() {
            Some(only) => live.into_iter().filter(|s| s == only).collect(),
            None => live,
        }
    }

    /// The allowed prompts, resources and templates of every offered server.
    pub(crate) async fn context_offer(&self) -> ContextOffer {
        self.wait_for_start().await;
        let servers = self.servers_offered(self.host().live_servers().await);
        let naming = self.naming();
        // Every listed prompt is named (so a hidden one a model guesses still reaches the gate,
        // which refuses and records it with the client); only allowed ones are offered.
        let mut prompts: Vec<(String, Prompt, bool)> = Vec::new();
        let mut resources: Vec<(String, Resource)> = Vec::new();
        let mut templates: Vec<(String, ResourceTemplate)> = Vec::new();
        for server in &servers {
            if let Ok(groups) = self.host().list_prompts(server).await {
                prompts.extend(
                    groups
                        .allowed
                        .into_iter()
                        .map(|p| (server.clone(), p, true)),
                );
                prompts.extend(
                    groups
                        .hidden
                        .into_iter()
                        .chain(groups.blocked)
                        .map(|w| (server.clone(), w.item, false)),
                );
            }
            if let Ok(groups) = self.host().list_resources(server).await {
                resources.extend(groups.allowed.into_iter().map(|r| (server.clone(), r)));
                templates.extend(
                    groups
                        .templates
                        .into_iter()
                        .map(|t| (server.clone(), t.template)),
                );
            }
        }
        let (prompt_table, _collisions) = NameTable::build(
            naming,
            prompts
                .iter()
                .map(|(s, p, _)| (s.as_str(), p.name.as_str())),
        );
        let prompt_list = prompts
            .iter()
            .filter(|(_, _, allowed)| *allowed)
            .filter_map(|(server, prompt, _)| {
                let name = naming.name(server, &prompt.name);
                prompt_table.resolve(&name)?;
                let mut offered = prompt.clone();
                offered.name = name;
                Some(offered)
            })
            .collect();
        let mut offer = ContextOffer {
            prompt_table,
            prompts: prompt_list,
            ..ContextOffer::default()
        };
        let mut seen_uris: HashMap<String, usize> = HashMap::new();
        for (_, resource) in &resources {
            *seen_uris.entry(resource.uri.clone()).or_default() += 1;
        }
        for (server, resource) in resources {
            if seen_uris[&resource.uri] == 1 {
                offer.resources.insert(resource.uri.clone(), server);
                offer.resource_list.push(resource);
            }
        }
        let mut seen_templates: HashMap<String, usize> = HashMap::new();
        for (_, template) in &templates {
            *seen_templates
                .entry(template.uri_template.clone())
                .or_default() += 1;
        }
        for (server, template) in templates {
            if seen_templates[&template.uri_template] == 1 {
                offer
                    .templates
                    .insert(template.uri_template.clone(), server);
                offer.template_list.push(template);
            }
        }
        offer
    }

    /// The server a URI goes to, if any.
    async fn route_uri(&self, uri: &str) -> Option<String> {
        if let Some(only) = self.only() {
            return Some(only.to_string());
        }
        let offer = self.context_offer().await;
        if let Some(server) = offer.resources.get(uri) {
            return Some(server.clone());
        }
        let mut starts: Vec<(&str, &String)> = offer
            .templates
            .iter()
            .map(|(template, server)| (literal_prefix(template), server))
            .filter(|(start, _)| !start.is_empty() && uri.starts_with(start))
            .collect();
        starts.sort_by_key(|(start, _)| std::cmp::Reverse(start.len()));
        match starts.as_slice() {
            [(start, server), rest @ ..] if rest.first().is_none_or(|(s, _)| s != start) => {
                Some((*server).clone())
            }
            _ => None,
        }
    }

    /// Reads a resource through the host for this client.
    pub(crate) async fn read(
        &self,
        uri: &str,
        options: &CallOptions,
    ) -> Result<rmcp::model::ReadResourceResult, ErrorData> {
        let server = self.route_uri(uri).await.ok_or_else(|| not_found(uri))?;
        let view = self
            .host()
            .read_resource_with(&server, ReadTarget::Uri(uri.to_string()), options)
            .await
            .map_err(|e| rpc_error_about(&e, Some(uri)))?;
        Ok(view.result)
    }

    /// Gets a prompt through the host for this client.
    pub(crate) async fn prompt(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        options: &CallOptions,
    ) -> Result<rmcp::model::GetPromptResult, ErrorData> {
        let offer = self.context_offer().await;
        let (server, prompt) = match self.only() {
            // One server: its gate decides every name (and records the refusals).
            Some(only) => (
                only.to_string(),
                offer
                    .prompt_table
                    .resolve(name)
                    .map_or(name.to_string(), |(_, p)| p.to_string()),
            ),
            None => offer
                .prompt_table
                .resolve(name)
                .map(|(s, p)| (s.to_string(), p.to_string()))
                .ok_or_else(|| {
                    ErrorData::invalid_params(
                        format!(
                            "no server connected through Gatehouse has a prompt named {name:?}: list the prompts again"
                        ),
                        None,
                    )
                })?,
        };
        let view = self
            .host()
            .get_prompt_with(&server, &prompt, arguments.unwrap_or_default(), options)
            .await
            .map_err(|e| rpc_error(&e))?;
        Ok(view.result)
    }

    /// Argument completion for an offered prompt or template.
    pub(crate) async fn completion(
        &self,
        reference: &rmcp::model::Reference,
        argument: &str,
        value: &str,
        context: HashMap<String, String>,
    ) -> Result<Vec<String>, ErrorData> {
        let offer = self.context_offer().await;
        let (server, target) = match reference {
            rmcp::model::Reference::Prompt(prompt) => {
                let resolved = offer
                    .prompt_table
                    .resolve(&prompt.name)
                    .map(|(s, p)| (s.to_string(), p.to_string()));
                match (resolved, self.only()) {
                    (Some((server, name)), _) => (server, CompletionTarget::Prompt(name)),
                    (None, Some(only)) => (
                        only.to_string(),
                        CompletionTarget::Prompt(prompt.name.clone()),
                    ),
                    (None, None) => {
                        return Err(ErrorData::invalid_params(
                            format!("no prompt named {:?} is offered", prompt.name),
                            None,
                        ));
                    }
                }
            }
            rmcp::model::Reference::Resource(template) => {
                let server = match self.only() {
                    Some(only) => Some(only.to_string()),
                    None => offer.templates.get(&template.uri).cloned(),
                };
                let server = server.ok_or_else(|| {
                    ErrorData::invalid_params(
                        format!("no resource template {:?} is offered", template.uri),
                        None,
                    )
                })?;
                (server, CompletionTarget::Template(template.uri.clone()))
            }
            _ => {
                return Err(ErrorData::invalid_params(
                    "completion for this kind of reference is not offered",
                    None,
                ));
            }
        };
        self.host()
            .complete(&server, target, argument, value, context)
            .await
            .map_err(|e| rpc_error(&e))
    }

    /// Subscribes this client to a resource's updates (the upstream subscription is shared
    /// by everyone on the host and lasts while the connection does).
    pub(crate) async fn subscribe(&self, uri: &str) -> Result<(), ErrorData> {
        let server = self.route_uri(uri).await.ok_or_else(|| not_found(uri))?;
        self.host()
            .subscribe_resource(&server, uri)
            .await
            .map_err(|e| rpc_error_about(&e, Some(uri)))?;
        self.subscriptions()
            .lock()
            .expect("subscriptions poisoned")
            .insert((server, uri.to_string()));
        Ok(())
    }

    pub(crate) fn unsubscribe(&self, uri: &str) {
        self.subscriptions()
            .lock()
            .expect("subscriptions poisoned")
            .retain(|(_, u)| u != uri);
    }

    /// The URI of an update this client subscribed to, if `event` is one.
    pub(crate) fn update_for_client(&self, event: &HostEvent) -> Option<String> {
        let HostEvent::ResourceUpdated { server, uri } = event else {
            return None;
        };
        self.subscriptions()
            .lock()
            .expect("subscriptions poisoned")
            .contains(&(server.clone(), uri.clone()))
            .then(|| uri.clone())
    }
}
