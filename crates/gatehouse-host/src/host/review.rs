//! The definition review (issue 27) where it needs the host: which other servers' tools a
//! definition might name, its findings, and the approvals that must acknowledge high findings.
//! The review itself is `gatehouse-review`'s (pure); the refusal and the record are the
//! gatekeeper's ([`crate::gatekeeper::Gatekeeper::approve_reviewed`]).

use std::sync::Arc;

use gatehouse_review::{Context, Finding, Primitive};
use serde_json::Value;

use super::{ApiError, Host, Slot};
use crate::connection::Connection;
use crate::gatekeeper::Review;

pub use crate::gatekeeper::Acknowledgement;

impl Host {
    /// `(server, tool)` of every other server's tools known without connecting anything
    /// new: the tools listed by live connections to other configured servers, and the
    /// `allowedTools` of installed bundles' other entries, named by the server admitted as
    /// that entry when one is connected (by the entry's id otherwise). `server`'s own
    /// entry is left out when `server` is connected and admitted. Sorted, without repeats.
    pub async fn other_tools(&self, server: &str) -> Vec<(String, String)> {
        let (live, own_id) = {
            let slots = self.slots.lock().await;
            let connected = |name: &str| match slots.get(name) {
                Some(Slot::Connected(c)) => Some(c.clone()),
                _ => None,
            };
            let own_id = connected(server)
                .and_then(|c| c.verdict().identity.as_ref().map(|id| id.id.clone()));
            // A config that cannot be read leaves only the bundles: nothing here may fail an
            // approval or a listing.
            let live: Vec<(String, Arc<Connection>)> = self
                .specs()
                .unwrap_or_default()
                .into_iter()
                .filter(|(name, _, _)| name != server)
                .filter_map(|(name, _, _)| connected(&name).map(|c| (name, c)))
                .collect();
            (live, own_id)
        };
        let listed = futures::future::join_all(live.iter().map(|(_, c)| c.tools())).await;
        let mut pairs: Vec<(String, String)> = live
            .iter()
            .zip(listed)
            .flat_map(|((name, _), tools)| {
                tools
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |tool| (name.clone(), tool.name.to_string()))
            })
            .collect();
        let trust = self.gatekeeper.trust();
        for bundle in trust.bundles() {
            for entry in &bundle.content().servers {
                if own_id.as_deref() == Some(entry.id.as_str()) {
                    continue;
                }
                let admitted_as = live
                    .iter()
                    .find(|(_, c)| {
                        c.verdict()
                            .identity
                            .as_ref()
                            .is_some_and(|id| id.id == entry.id)
                    })
                    .map(|(name, _)| name.clone());
                let name = admitted_as.unwrap_or_else(|| entry.id.clone());
                pairs.extend(
                    entry
                        .allowed_tools
                        .iter()
                        .map(|tool| (name.clone(), tool.clone())),
                );
            }
        }
        pairs.sort();
        pairs.dedup();
        pairs
    }

    /// The findings of `definition` (a tool, prompt or resource of `server`, as listed),
    /// reviewed against [`Host::other_tools`]; for a tool, less the names `server` itself
    /// lists (two instances of one server, or two servers sharing a name, mentioning that
    /// name refer to their own tool), as its approval reviews it.
    pub async fn findings(
        &self,
        server: &str,
        primitive: Primitive,
        definition: &Value,
    ) -> Vec<Finding> {
        let own = match (primitive, self.connected_now(server).await) {
            // Listed already for the definition at hand: the cached listing.
            (Primitive::Tool, Some(connection)) => connection
                .tools()
                .await
                .unwrap_or_default()
                .iter()
                .map(|t| t.name.to_string())
                .collect(),
            _ => Vec::new(),
        };
        let others = self.other_tools(server).await;
        review_against(primitive, definition, &others, &own)
    }

    /// The findings of each of `tools`, `server`'s whole tool listing (as JSON), reviewed
    /// as [`Host::findings`] reviews one and as their approval reviews them: against
    /// [`Host::other_tools`] less the listing's own names. One lookup of the others for all.
    pub async fn review_tools(&self, server: &str, tools: &[Value]) -> Vec<Vec<Finding>> {
        let own: Vec<String> = tools
            .iter()
            .filter_map(|t| t.get("name").and_then(Value::as_str))
            .map(str::to_string)
            .collect();
        let others = self.other_tools(server).await;
        tools
            .iter()
            .map(|tool| review_against(Primitive::Tool, tool, &others, &own))
            .collect()
    }

    /// The connection to `server` if one is open now (never connecting).
    async fn connected_now(&self, server: &str) -> Option<Arc<Connection>> {
        match self.slots.lock().await.get(server) {
            Some(Slot::Connected(c)) => Some(c.clone()),
            _ => None,
        }
    }

    /// Approves tools as the user (warn posture only), as [`Host::approve_tools`], with the
    /// person's `acknowledgement` of high findings: without it a tool whose current
    /// definition has one is not approved (`finding_not_acknowledged`, listing them); with it
    /// the approval's record names them.
    pub async fn approve_tools_with(
        &self,
        server: &str,
        names: &[String],
        acknowledgement: Acknowledgement,
    ) -> Result<Vec<(String, String)>, ApiError> {
        let connection = self.connection(server).await?;
        let others = self.other_tools(server).await;
        let others: Vec<(&str, &str)> = others
            .iter()
            .map(|(s, t)| (s.as_str(), t.as_str()))
            .collect();
        let review = Review {
            other_tools: &others,
            acknowledgement,
        };
        let pins = connection.approve_tools_reviewed(names, &review).await;
        self.changed(server);
        Ok(pins?)
    }

    /// Approves prompts as the user (warn posture only), as [`Host::approve_prompts`], with
    /// the person's `acknowledgement` of high findings (see [`Host::approve_tools_with`]).
    pub async fn approve_prompts_with(
        &self,
        server: &str,
        names: &[String],
        acknowledgement: Acknowledgement,
    ) -> Result<Vec<(String, String)>, ApiError> {
        let connection = self.connection(server).await?;
        let others = self.other_tools(server).await;
        let others: Vec<(&str, &str)> = others
            .iter()
            .map(|(s, t)| (s.as_str(), t.as_str()))
            .collect();
        let review = Review {
            other_tools: &others,
            acknowledgement,
        };
        let pins = connection.approve_prompts_reviewed(names, &review).await;
        self.changed(server);
        Ok(pins?)
    }
}

/// `definition` reviewed against `others`, leaving out those named as one of `own`.
fn review_against(
    primitive: Primitive,
    definition: &Value,
    others: &[(String, String)],
    own: &[String],
) -> Vec<Finding> {
    let others: Vec<(&str, &str)> = others
        .iter()
        .filter(|(_, tool)| !own.iter().any(|o| o.eq_ignore_ascii_case(tool)))
        .map(|(s, t)| (s.as_str(), t.as_str()))
        .collect();
    gatehouse_review::review(
        primitive,
        definition,
        &Context {
            other_tools: &others,
        },
    )
}
