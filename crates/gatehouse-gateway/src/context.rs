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

use gatehouse_host::ErrorCode as Code;
use gatehouse_host::host::ApiError;
use gatehouse_host::host::context::ReadTarget;
use gatehouse_host::{CallOptions, CompletionTarget, HostEvent};
use rmcp::ErrorData;
use rmcp::model::{ErrorCode, Prompt, Resource, ResourceTemplate};
use serde_json::{Map, Value, json};
use std::collections::HashMap;

use crate::names::NameTable;
use crate::routing::Routes;
use crate::server::Gateway;

/// The prompts offered: every listed prompt named (allowed or not), the allowed ones listed.
#[derive(Debug, Default, Clone)]
pub(crate) struct PromptOffer {
    pub table: NameTable,
    pub prompts: Vec<Prompt>,
}

/// The resources and templates offered, and where each URI goes ([`Routes`]).
#[derive(Debug, Default, Clone)]
pub(crate) struct ResourceOffer {
    pub routes: Routes,
    pub resource_list: Vec<Resource>,
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
        None if matches!(
            error.code,
            Code::ResourceNotAdmitted | Code::ResourceUriRefused
        ) =>
        {
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
            Code::PromptNotAdmitted | Code::PromptPinMismatch | Code::PromptNotListed
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

    /// The prompts of every offered server, from the connections' listings (each kept by the
    /// host until its server says it changed). Only live connections are asked.
    pub(crate) async fn prompt_offer(&self, options: &CallOptions) -> PromptOffer {
        self.wait_for_start().await;
        let servers = self.servers_offered(self.host().live_servers().await);
        let naming = self.naming();
        // Every listed prompt is named (so a hidden one a model guesses still reaches the gate,
        // which refuses and records it with the client); only allowed ones are offered.
        let mut prompts: Vec<(String, Prompt, bool)> = Vec::new();
        for server in &servers {
            if let Ok(groups) = self.host().list_prompts_with(server, options).await {
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
        }
        let (table, _collisions) = NameTable::build(
            naming,
            prompts
                .iter()
                .map(|(s, p, _)| (s.as_str(), p.name.as_str())),
        );
        let prompts = prompts
            .iter()
            .filter(|(_, _, allowed)| *allowed)
            .filter_map(|(server, prompt, _)| {
                let name = naming.name(server, &prompt.name);
                table.resolve(&name)?;
                let mut offered = prompt.clone();
                offered.name = name;
                Some(offered)
            })
            .collect();
        PromptOffer { table, prompts }
    }

    /// The allowed resources and the templates of every offered server. A URI or template two
    /// servers list is left out, except between the demo's two eras, which are one server
    /// ([`gatehouse_host::host::Host::demo_twin`]): theirs are offered once, from the primary.
    pub(crate) async fn resource_offer(&self, options: &CallOptions) -> ResourceOffer {
        self.wait_for_start().await;
        let servers = self.servers_offered(self.host().live_servers().await);
        let mut resources: Vec<(String, Resource)> = Vec::new();
        let mut templates: Vec<(String, ResourceTemplate)> = Vec::new();
        for server in &servers {
            if let Ok(groups) = self.host().list_resources_with(server, options).await {
                resources.extend(groups.allowed.into_iter().map(|r| (server.clone(), r)));
                templates.extend(
                    groups
                        .templates
                        .into_iter()
                        .map(|t| (server.clone(), t.template)),
                );
            }
        }
        // The demo's legacy twin gives way to the primary where both list the same thing.
        let twins: HashMap<String, String> = servers
            .iter()
            .filter_map(|s| {
                let primary = self.host().demo_twin(s)?;
                servers
                    .iter()
                    .any(|p| p == primary)
                    .then(|| (s.clone(), primary.to_string()))
            })
            .collect();
        let routes = Routes::build(
            &resources
                .iter()
                .map(|(s, r)| (s.clone(), r.uri.clone()))
                .collect::<Vec<_>>(),
            &templates
                .iter()
                .map(|(s, t)| (s.clone(), t.uri_template.clone()))
                .collect::<Vec<_>>(),
            &twins,
        );
        ResourceOffer {
            resource_list: resources
                .into_iter()
                .filter(|(s, r)| routes.resources.get(&r.uri) == Some(s))
                .map(|(_, r)| r)
                .collect(),
            template_list: templates
                .into_iter()
                .filter(|(s, t)| routes.templates.get(&t.uri_template) == Some(s))
                .map(|(_, t)| t)
                .collect(),
            routes,
        }
    }

    /// The server a URI goes to, if any: the one that lists it, else the one whose template's
    /// literal start it begins with (the longest, and only when no other server's template
    /// starts the same). A URI two servers list goes nowhere.
    async fn route_uri(&self, uri: &str, options: &CallOptions) -> Option<String> {
        if let Some(only) = self.only() {
            self.wait_for_start().await;
            return Some(only.to_string());
        }
        let offer = self.resource_offer(options).await;
        offer.routes.route(uri).map(str::to_string)
    }

    /// Reads a resource through the host for this client.
    pub(crate) async fn read(
        &self,
        uri: &str,
        options: &CallOptions,
    ) -> Result<rmcp::model::ReadResourceResult, ErrorData> {
        let server = self
            .route_uri(uri, options)
            .await
            .ok_or_else(|| not_found(uri))?;
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
        let (server, prompt) = match self.only() {
            // One server, its prompts under their own names: its gate decides every name (and
            // records the refusals); nothing needs listing to route.
            Some(only) => {
                self.wait_for_start().await;
                (only.to_string(), name.to_string())
            }
            None => self
                .prompt_offer(options)
                .await
                .table
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
        options: &CallOptions,
    ) -> Result<Vec<String>, ErrorData> {
        let (server, target) = match reference {
            rmcp::model::Reference::Prompt(prompt) => match self.only() {
                Some(only) => {
                    self.wait_for_start().await;
                    (
                        only.to_string(),
                        CompletionTarget::Prompt(prompt.name.clone()),
                    )
                }
                None => self
                    .prompt_offer(options)
                    .await
                    .table
                    .resolve(&prompt.name)
                    .map(|(s, p)| (s.to_string(), CompletionTarget::Prompt(p.to_string())))
                    .ok_or_else(|| {
                        ErrorData::invalid_params(
                            format!("no prompt named {:?} is offered", prompt.name),
                            None,
                        )
                    })?,
            },
            rmcp::model::Reference::Resource(template) => {
                let server = match self.only() {
                    Some(only) => {
                        self.wait_for_start().await;
                        Some(only.to_string())
                    }
                    None => self
                        .resource_offer(options)
                        .await
                        .routes
                        .templates
                        .get(&template.uri)
                        .cloned(),
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
            .complete_with(&server, target, argument, value, context, options)
            .await
            .map_err(|e| rpc_error(&e))
    }

    /// Subscribes this client (on its session, `stream` 0, or on one of its listen streams)
    /// to a resource's updates. The host decides and records the request with the client
    /// named, counts it against this client's share, and keeps the upstream subscription
    /// while anyone holds it.
    pub(crate) async fn subscribe(
        &self,
        uri: &str,
        stream: u64,
        options: &CallOptions,
    ) -> Result<(), ErrorData> {
        let server = self
            .route_uri(uri, options)
            .await
            .ok_or_else(|| not_found(uri))?;
        self.host()
            .subscribe_resource_for(&server, uri, self.subscriber(stream), options)
            .await
            .map_err(|e| rpc_error_about(&e, Some(uri)))?;
        if stream == 0 {
            self.subscriptions()
                .lock()
                .expect("subscriptions poisoned")
                .insert((server, uri.to_string()));
        }
        Ok(())
    }

    /// Ends this client's session subscription to `uri`; the upstream one ends with its last
    /// holder.
    pub(crate) async fn unsubscribe(&self, uri: &str) {
        let servers: Vec<String> = {
            let mut subscriptions = self.subscriptions().lock().expect("subscriptions poisoned");
            let servers = subscriptions
                .iter()
                .filter(|(_, u)| u == uri)
                .map(|(s, _)| s.clone())
                .collect();
            subscriptions.retain(|(_, u)| u != uri);
            servers
        };
        for server in servers {
            let _ = self
                .host()
                .unsubscribe_resource_for(&server, uri, self.subscriber(0))
                .await;
        }
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
