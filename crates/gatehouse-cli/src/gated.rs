//! What the gate classified, split for printing: allowed, hidden, blocked; and approved pins.

use gatehouse_attest::gate::{GateReason, ToolStatus};
use serde_json::{Value, json};

use crate::commands::Context;
use crate::output;
pub(crate) use crate::output::Reviewed;

/// Items the gate classified, split: allowed, hidden, and blocked with the reason and the
/// expected and actual pins.
pub(crate) struct Split<T> {
    pub allowed: Vec<T>,
    pub hidden: Vec<T>,
    pub blocked: Vec<(T, GateReason, String, String)>,
}

pub(crate) fn split_gated<T>(items: impl IntoIterator<Item = (T, ToolStatus)>) -> Split<T> {
    let mut split = Split {
        allowed: Vec::new(),
        hidden: Vec::new(),
        blocked: Vec::new(),
    };
    for (item, status) in items {
        match status {
            ToolStatus::Allowed => split.allowed.push(item),
            ToolStatus::Hidden => split.hidden.push(item),
            ToolStatus::Blocked {
                reason,
                expected,
                actual,
            } => split.blocked.push((item, reason, expected, actual)),
        }
    }
    split
}

impl<T: serde::Serialize> Split<T> {
    /// The blocked items as JSON, each under `key` with its reason and pins.
    pub(crate) fn blocked_json(&self, key: &str) -> Vec<Value> {
        self.blocked
            .iter()
            .map(|(item, reason, expected, actual)| {
                json!({key: item, "reason": reason.as_str(), "expected": expected, "actual": actual})
            })
            .collect()
    }
}

/// Prints a listing the gate classified: in JSON the server, its admission, the allowed items
/// under `plural`, the hidden and the blocked (each under `key`); for people the server's
/// headline, then what `human` prints of the split.
pub(crate) fn print_listing<T: serde::Serialize + Named>(
    context: &Context,
    server: &str,
    admission: &Value,
    headline: &str,
    split: &Split<Reviewed<T>>,
    (plural, key): (&str, &str),
    human: impl FnOnce(&Split<Reviewed<T>>),
) {
    if context.json {
        let items = split
            .allowed
            .iter()
            .chain(&split.hidden)
            .chain(split.blocked.iter().map(|(item, ..)| item));
        output::print_json(&json!({
            "server": server,
            "admission": admission,
            plural: split.allowed,
            "hidden": split.hidden,
            "blocked": split.blocked_json(key),
            "findings": findings_json(items.map(|r| (key, r.item.listed_name(), r.findings.as_slice()))),
        }));
    } else {
        println!("{server}: {}", output::safe(headline));
        human(split);
    }
}

/// Prints approved pins (`what` is "tool" or "prompt").
pub(crate) fn print_pins(context: &Context, name: &str, what: &str, pins: &[(String, String)]) {
    if context.json {
        output::print_json(&json!({
            "server": name,
            "approved": pins.iter().map(|(n, p)| json!({what: n, "pin": p})).collect::<Vec<_>>(),
        }));
    } else {
        for (item, pin) in pins {
            println!("approved {} ({pin})", output::safe(item));
        }
        if pins.is_empty() {
            println!("{name} lists no {what}s; nothing approved");
        }
    }
}

/// A listed item's name, as its listing's `findings` name it.
pub(crate) trait Named {
    fn listed_name(&self) -> &str;
}

impl Named for rmcp::model::Tool {
    fn listed_name(&self) -> &str {
        &self.name
    }
}

impl Named for rmcp::model::Prompt {
    fn listed_name(&self) -> &str {
        &self.name
    }
}

/// A listing's `findings`: one object per finding, naming its item under `key` (`tool`,
/// `prompt`, `uri`, `uriTemplate`) with the finding's own keys; empty when nothing was found.
pub(crate) fn findings_json<'a>(
    items: impl Iterator<Item = (&'a str, &'a str, &'a [gatehouse_review::Finding])>,
) -> Vec<Value> {
    items
        .flat_map(|(key, name, findings)| {
            findings.iter().map(move |finding| {
                let mut object = json!({key: name});
                if let (Some(object), Value::Object(finding)) =
                    (object.as_object_mut(), json!(finding))
                {
                    object.extend(finding);
                }
                object
            })
        })
        .collect()
}

/// Reviews one server's listed definitions against the other servers' tools.
pub(crate) struct Reviewer {
    others: Vec<(String, String)>,
}

impl Reviewer {
    /// `others` as `Host::other_tools` gives them; `own` are the names the reviewed server
    /// itself lists, left out of the others: two instances of one server (or two servers
    /// sharing a tool name) mentioning that name refer to their own tool, not the other's.
    pub(crate) fn new(others: Vec<(String, String)>, own: &[String]) -> Reviewer {
        let pairs: Vec<(&str, &str)> = others
            .iter()
            .map(|(server, tool)| (server.as_str(), tool.as_str()))
            .collect();
        let own: Vec<&str> = own.iter().map(String::as_str).collect();
        let others = gatehouse_review::without_own(&pairs, &own)
            .into_iter()
            .map(|(server, tool)| (server.to_string(), tool.to_string()))
            .collect();
        Reviewer { others }
    }

    pub(crate) fn findings(
        &self,
        primitive: gatehouse_review::Primitive,
        definition: &Value,
    ) -> Vec<gatehouse_review::Finding> {
        let others: Vec<(&str, &str)> = self
            .others
            .iter()
            .map(|(server, tool)| (server.as_str(), tool.as_str()))
            .collect();
        gatehouse_review::review(
            primitive,
            definition,
            &gatehouse_review::Context {
                other_tools: &others,
            },
        )
    }

    pub(crate) fn review<T: serde::Serialize>(
        &self,
        primitive: gatehouse_review::Primitive,
        item: T,
    ) -> Reviewed<T> {
        // A definition that does not serialize has nothing to review; rmcp's types always do.
        let definition = serde_json::to_value(&item).unwrap_or(Value::Null);
        let findings = self.findings(primitive, &definition);
        Reviewed { item, findings }
    }
}
