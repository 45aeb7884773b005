//! What the window shows of a tool definition (issue 27): its text escaped (invisible and
//! direction-changing characters as `\u{XXXX}`, never rendered), and the review's findings,
//! each as plain text. A server's detail carries one review per listed tool, keyed by the
//! tool's exact name (what the window sends back to call or approve it), for its Allowed,
//! Hidden and pin-change (Blocked) cards alike; a pin-change card's review is of the new
//! definition, the one the server lists now. A server's prompts come the same way: each
//! prompt's name, title, description and arguments escaped, with its findings.

use std::collections::BTreeMap;

use gatehouse_host::ConfinementView;
use gatehouse_review::{
    Context, Finding, FindingKind, Primitive, Severity, escape, has_high, review,
};
use serde::Serialize;
use serde_json::Value;

use crate::{Desk, DeskError, ServerDetail, Withheld};

/// One finding as the window shows it: every text field escaped, to be set as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FindingView {
    pub kind: FindingKind,
    pub severity: Severity,
    pub field: String,
    pub excerpt: String,
    pub detail: String,
}

impl From<&Finding> for FindingView {
    fn from(finding: &Finding) -> FindingView {
        // The review escapes already; escaping again is a no-op on its output, and keeps the
        // window's one rule here whatever a finding carries.
        FindingView {
            kind: finding.kind,
            severity: finding.severity,
            field: escape(&finding.field).into_owned(),
            excerpt: escape(&finding.excerpt).into_owned(),
            detail: escape(&finding.detail).into_owned(),
        }
    }
}

/// A tool card's text and findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolReview {
    /// The name as shown (escaped); the review's key is the exact name.
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub findings: Vec<FindingView>,
    /// A high finding: approving needs the explicit "Approve despite findings".
    pub needs_acknowledgement: bool,
    /// The call form's text: each top-level `inputSchema` property by its exact name (the
    /// argument's key a call sends), its text escaped.
    pub fields: BTreeMap<String, FieldReview>,
}

/// What the tool form shows of one input-schema property, escaped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldReview {
    /// The property's name as shown (escaped).
    pub shown_name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// The labels of its string `enum` values, escaped, in the schema's order (the values
    /// themselves are sent as they are).
    pub enum_labels: Vec<String>,
}

impl FieldReview {
    fn new(name: &str, property: &Value) -> FieldReview {
        let shown = |key: &str| {
            property
                .get(key)
                .and_then(Value::as_str)
                .map(|text| escape(text).into_owned())
        };
        FieldReview {
            shown_name: escape(name).into_owned(),
            title: shown("title"),
            description: shown("description"),
            enum_labels: property
                .get("enum")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .filter_map(Value::as_str)
                .map(|label| escape(label).into_owned())
                .collect(),
        }
    }
}

impl ToolReview {
    /// `definition` is the tool as listed, as JSON.
    fn new(name: &str, definition: &Value, findings: &[Finding]) -> ToolReview {
        let shown = |key: &str| {
            definition
                .get(key)
                .and_then(Value::as_str)
                .map(|text| escape(text).into_owned())
        };
        ToolReview {
            name: escape(name).into_owned(),
            title: shown("title"),
            description: shown("description"),
            findings: findings.iter().map(FindingView::from).collect(),
            needs_acknowledgement: has_high(findings),
            fields: definition
                .pointer("/inputSchema/properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(name, property)| (name.clone(), FieldReview::new(name, property)))
                .collect(),
        }
    }
}

/// A server's detail as the window gets it: [`ServerDetail`] plus each listed tool's review,
/// whether the person may approve tools (the warn posture), and its confinement.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DetailView {
    #[serde(flatten)]
    pub detail: ServerDetail,
    /// Exact tool name → its card's review.
    pub reviews: BTreeMap<String, ToolReview>,
    pub can_approve: bool,
    /// What the server can read, write and reach, or "unconfined" and why (issue 28). For a
    /// live connection, what its admission decided and it runs with; otherwise what it would
    /// run with now. None when the host cannot say (an unknown server).
    pub confinement: Option<ConfinementView>,
}

impl Desk {
    /// [`Host::server_detail`](gatehouse_host::host::Host::server_detail) with the reviews.
    pub async fn detail_view(&self, name: &str) -> Result<DetailView, DeskError> {
        let detail = self.host().server_detail(name).await?;
        Ok(self.view(name, detail).await)
    }

    /// [`Host::connect`](gatehouse_host::host::Host::connect) with the reviews.
    pub async fn connect_view(&self, name: &str) -> Result<DetailView, DeskError> {
        let detail = self.host().connect(name).await?;
        Ok(self.view(name, detail).await)
    }

    async fn view(&self, name: &str, detail: ServerDetail) -> DetailView {
        let tools = &detail.tools;
        // A tool that does not serialize has nothing to review; rmcp's types always do.
        let json = |tool| serde_json::to_value(tool).unwrap_or(Value::Null);
        let definitions: Vec<Value> = (tools.allowed.iter().map(json))
            .chain(tools.hidden.iter().map(json))
            .chain(tools.blocked.iter().map(|b| json(&b.tool)))
            .collect();
        let findings = self.host().review_tools(name, &definitions).await;
        let reviews = definitions
            .iter()
            .zip(&findings)
            .filter_map(|(definition, findings)| {
                let name = definition.get("name")?.as_str()?;
                Some((
                    name.to_string(),
                    ToolReview::new(name, definition, findings),
                ))
            })
            .collect();
        let confinement = self.confinement(name, &detail).await;
        DetailView {
            can_approve: self.host().settings().posture == gatehouse_attest::bundle::Posture::Warn,
            detail,
            reviews,
            confinement,
        }
    }
}

impl Desk {
    /// The confinement the detail shows: a live connection's, from its own admission record
    /// (what it really runs with), lent without connecting anew. A server that is not
    /// connected shows none: looking at a refused server must never admit it again (only
    /// Connect does), and its row's reason already says why it is not running.
    async fn confinement(&self, name: &str, detail: &ServerDetail) -> Option<ConfinementView> {
        detail.banner.as_ref()?;
        self.host()
            .with_verdict(name, |verdict| verdict.confinement.clone())
            .await
            .ok()
            .flatten()
    }
}

/// A prompt argument as the window shows it: the exact name (the key a form sends back) and
/// its text escaped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArgumentReview {
    /// Exact, as the server listed it: what `prompt_get` and `argument_complete` send back.
    pub name: String,
    /// The name as shown (escaped).
    pub shown_name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub required: bool,
}

/// A prompt card: the exact name, every text escaped, and the review's findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptReview {
    /// Exact, as the server listed it: what `prompt_get` and `prompts_approve` send back.
    pub name: String,
    /// The name as shown (escaped).
    pub shown_name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub arguments: Vec<ArgumentReview>,
    pub findings: Vec<FindingView>,
    /// A high finding: approving needs the explicit "Approve despite findings".
    pub needs_acknowledgement: bool,
}

impl PromptReview {
    /// `definition` is the prompt as listed, as JSON.
    fn new(definition: &Value, findings: &[Finding]) -> PromptReview {
        let shown = |value: &Value, key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .map(|text| escape(text).into_owned())
        };
        let name = definition
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let arguments = definition
            .get("arguments")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter_map(|argument| {
                let name = argument.get("name")?.as_str()?;
                Some(ArgumentReview {
                    name: name.to_string(),
                    shown_name: escape(name).into_owned(),
                    title: shown(argument, "title"),
                    description: shown(argument, "description"),
                    required: argument.get("required").and_then(Value::as_bool) == Some(true),
                })
            })
            .collect();
        PromptReview {
            name: name.to_string(),
            shown_name: escape(name).into_owned(),
            title: shown(definition, "title"),
            description: shown(definition, "description"),
            arguments,
            findings: findings.iter().map(FindingView::from).collect(),
            needs_acknowledgement: has_high(findings),
        }
    }
}

/// A server's prompts as the window gets them (`server_prompts`): grouped by the gate as
/// [`PromptGroups`](crate::PromptGroups), each prompt as its card shows it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PromptsView {
    pub allowed: Vec<PromptReview>,
    pub hidden: Vec<Withheld<PromptReview>>,
    pub blocked: Vec<Withheld<PromptReview>>,
}

impl Desk {
    /// [`Host::list_prompts`](gatehouse_host::host::Host::list_prompts) as the window shows
    /// it: every text escaped in here, before it reaches the window, and each prompt reviewed
    /// against the other servers' tools as its approval reviews it.
    pub async fn prompts_view(&self, server: &str) -> Result<PromptsView, DeskError> {
        let groups = self.host().list_prompts(server).await?;
        let others = self.host().other_tools(server).await;
        let others: Vec<(&str, &str)> = others
            .iter()
            .map(|(s, t)| (s.as_str(), t.as_str()))
            .collect();
        let context = Context {
            other_tools: &others,
        };
        let withheld = |w: &Withheld<_>| Withheld {
            item: prompt_card(&w.item, &context),
            reason: w.reason,
        };
        Ok(PromptsView {
            allowed: groups
                .allowed
                .iter()
                .map(|p| prompt_card(p, &context))
                .collect(),
            hidden: groups.hidden.iter().map(withheld).collect(),
            blocked: groups.blocked.iter().map(withheld).collect(),
        })
    }
}

/// One listed prompt's card, reviewed against `context`.
fn prompt_card<T: Serialize>(prompt: &T, context: &Context) -> PromptReview {
    // A prompt that does not serialize has nothing to show; rmcp's types always do.
    let definition = serde_json::to_value(prompt).unwrap_or(Value::Null);
    let findings = review(Primitive::Prompt, &definition, context);
    PromptReview::new(&definition, &findings)
}
