//! A person's own pins from the window (issue 25): the Pin button asks for the plan
//! ([`Desk::pin_plan`]: the host resolves, installs into a scratch store, starts the server and
//! lists its tools; nothing of the person's changes), the window shows it, and the person's
//! Pin in that panel is the consent ([`Desk::pin_server`]). The host decides and writes; the
//! desk only keeps the last plan of each server, so what is pinned is what was shown.
//!
//! The plan goes to the window as data: each tool's name and description as strings (shown
//! as text) and its whole definition as JSON (shown as preformatted text), never as markup.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;

use gatehouse_attest::package::Ecosystem;
use gatehouse_host::host::{PackageState, PinPlan, ServerRow};
use serde::Serialize;
use serde_json::Value;

use super::{Desk, DeskError};

/// How many plans the desk keeps (the most recent of each server); the oldest goes first.
pub const KEPT_PLANS: usize = 8;

/// One tool a plan would allow and pin, as the server listed it in the scratch start.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedTool {
    /// The tool's name; empty when the server sent none (or not a string).
    pub name: String,
    /// Its description, when the server sent one as a string.
    pub description: Option<String>,
    /// The whole definition as listed (what the pin hashes), `inputSchema` included.
    pub definition: Value,
}

/// What a pin would write, for the confirmation panel.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PinPlanView {
    pub server: String,
    /// The server id the pin gives it (`urn:gatehouse:pinned:ECOSYSTEM:NAME`).
    pub id: String,
    pub ecosystem: Ecosystem,
    pub package: String,
    pub version: String,
    /// Packages in the closure, the bound one included.
    pub closure: usize,
    /// Files of the installed tree, each checked against the store's manifest.
    pub files: usize,
    /// The interpreter the binding names by its digest.
    pub interpreter: Option<PathBuf>,
    /// Arguments fixed by the pin.
    pub args: Vec<String>,
    /// The rule for the person's own arguments (directories under their home), if any.
    pub user_args: Option<Value>,
    pub tools: Vec<PlannedTool>,
}

impl PinPlanView {
    pub fn of(plan: &PinPlan) -> PinPlanView {
        PinPlanView {
            server: plan.server.clone(),
            id: plan.id.clone(),
            ecosystem: plan.ecosystem,
            package: plan.package.clone(),
            version: plan.version.clone(),
            closure: plan.preview.closure,
            files: plan.preview.files,
            interpreter: plan.preview.interpreter.clone(),
            args: plan.args.clone(),
            user_args: plan.user_args.clone(),
            tools: plan.preview.tools.iter().map(planned_tool).collect(),
        }
    }
}

/// A listed tool as data: a name or description that is not a string is not shown as one.
fn planned_tool(definition: &Value) -> PlannedTool {
    PlannedTool {
        name: definition["name"].as_str().unwrap_or_default().to_string(),
        description: definition["description"].as_str().map(str::to_owned),
        definition: definition.clone(),
    }
}

/// What the Pin in the panel did: the pin written, and the server as admission now sees it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PinnedView {
    pub server: String,
    pub id: String,
    /// The person's bundle and its new version (`pinned-by-you@N`).
    pub bundle: String,
    /// The tools allowed and pinned.
    pub tools: Vec<String>,
    /// What the server is as a package now (`pinned_by_you` once the bundle loads).
    pub package_state: Option<PackageState>,
    /// The server's row after connecting it again under the new pin.
    pub row: Option<ServerRow>,
}

/// The last plan of each server, at most [`KEPT_PLANS`].
#[derive(Default)]
pub struct PlanShelf {
    plans: Mutex<VecDeque<PinPlan>>,
}

impl PlanShelf {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<PinPlan>> {
        // A panic elsewhere leaves plain data: the plans are still whole.
        self.plans
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Keeps `plan` as its server's one plan, dropping the oldest beyond the bound.
    pub fn keep(&self, plan: PinPlan) {
        let mut plans = self.lock();
        plans.retain(|kept| kept.server != plan.server);
        plans.push_back(plan);
        while plans.len() > KEPT_PLANS {
            plans.pop_front();
        }
    }

    /// Takes the kept plan of `server`, if any.
    pub fn take(&self, server: &str) -> Option<PinPlan> {
        let mut plans = self.lock();
        let at = plans.iter().position(|plan| plan.server == server)?;
        plans.remove(at)
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

impl Desk {
    /// What pinning `name` would write, shown before the person confirms. The plan is kept,
    /// so the Pin that follows writes exactly it.
    pub async fn pin_plan(&self, name: &str) -> Result<PinPlanView, DeskError> {
        let plan = self.host.plan_pin(name).await?;
        let view = PinPlanView::of(&plan);
        self.plans.keep(plan);
        Ok(view)
    }

    /// Pins `name` (the person's confirmation in the window): the plan last shown for it, or
    /// a new one when none is kept (the app restarted since). Then connects it again, so
    /// admission decides under the new pin and the row says so.
    pub async fn pin_server(&self, name: &str) -> Result<PinnedView, DeskError> {
        let plan = match self.plans.take(name) {
            Some(plan) => plan,
            None => self.host.plan_pin(name).await?,
        };
        let pinned = match self.host.pin(&plan).await {
            Ok(pinned) => pinned,
            Err(error) => {
                // Kept for a second try: the plan is still what the window showed.
                self.plans.keep(plan);
                return Err(error);
            }
        };
        // A failed admission is in the row (status and reason); only the pin is this
        // command's to report.
        let _ = self.host.connect(name).await;
        let row = self
            .host
            .servers()
            .await?
            .into_iter()
            .find(|row| row.name == name);
        let package_state = self
            .host
            .package_states(&[name.to_string()])
            .into_iter()
            .next()
            .map(|(_, state)| state);
        (self.notify)(super::DeskEvent::Servers {
            name: name.to_string(),
        });
        Ok(PinnedView {
            server: pinned.server,
            id: pinned.id,
            bundle: pinned.bundle,
            tools: pinned.tools,
            package_state,
            row,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_is_data_whatever_the_server_put_in_it() {
        let tool = planned_tool(&json!({
            "name": "<img src=x onerror=alert(1)>",
            "description": "Reads <b>files</b>",
            "inputSchema": {"type": "object"},
        }));
        assert_eq!(tool.name, "<img src=x onerror=alert(1)>");
        assert_eq!(tool.description.as_deref(), Some("Reads <b>files</b>"));
        assert_eq!(tool.definition["inputSchema"]["type"], "object");
        // A name or description that is not a string is not shown as one.
        let odd = planned_tool(&json!({"name": {"x": 1}, "description": 7}));
        assert_eq!(odd.name, "");
        assert_eq!(odd.description, None);
        assert_eq!(odd.definition["name"]["x"], 1);
    }
}
