//! What the gate classified, split for printing: allowed, hidden, blocked; and approved pins.

use gatehouse_attest::gate::{GateReason, ToolStatus};
use serde_json::{Value, json};

use crate::commands::Context;
use crate::output;

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
pub(crate) fn print_listing<T: serde::Serialize>(
    context: &Context,
    server: &str,
    admission: &Value,
    headline: &str,
    split: &Split<T>,
    (plural, key): (&str, &str),
    human: impl FnOnce(&Split<T>),
) {
    if context.json {
        output::print_json(&json!({
            "server": server,
            "admission": admission,
            plural: split.allowed,
            "hidden": split.hidden,
            "blocked": split.blocked_json(key),
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
