//! A server's confinement (issue 28): what it would run with now, and the person's own
//! loosening of an unattested server in `servers.json`.

use serde_json::Value;

use super::{ApiError, Change, Host, close_slot};
use crate::audit_event::confine::ConfinementChanged;
use crate::confine::ConfinementView;
use crate::{ErrorCode, ServerSpec};

/// The key of a `servers.json` entry that holds the person's confinement.
pub(crate) const CONFINEMENT_KEY: &str = "confinement";

impl Host {
    /// The person's `confinement` of `name` in `servers.json`, as written: `None` for a
    /// server given on the command line, the built-in demo, or an entry without one.
    pub(crate) fn person_confinement(&self, name: &str) -> Option<Value> {
        if self
            .adhoc
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(name)
        {
            return self
                .adhoc_confinement
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(name)
                .cloned();
        }
        self.config()
            .ok()?
            .servers
            .get(name)?
            .other
            .get(CONFINEMENT_KEY)
            .cloned()
    }

    /// Adds an ad-hoc server that, unadmitted, runs confined with `confinement` (the shape
    /// of a `servers.json` entry's): a preview's scratch store and home.
    pub(crate) fn add_adhoc_confined(&self, name: &str, spec: ServerSpec, confinement: Value) {
        self.adhoc_confinement
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(name.to_string(), confinement);
        self.add_adhoc(name, spec);
    }

    /// What `name` would run with now: its admission and the confinement decided with it,
    /// without starting it (the admission is audited, as every admission is). An HTTP
    /// server's is `not_applicable`; a server refused for another reason is that refusal.
    pub async fn confinement_of(&self, name: &str) -> Result<ConfinementView, ApiError> {
        let (spec, _) = self.spec(name)?;
        if let ServerSpec::Http(_) = spec {
            return Ok(ConfinementView::not_applicable());
        }
        let person = self.person_confinement(name);
        let verdict = self
            .gatekeeper
            .admit_as(name, &spec, person.as_ref())
            .await?;
        (self.notify)(Change::Audit);
        match verdict.confinement {
            Some(view) => Ok(view),
            None => Err(ApiError::new(
                verdict.reason.unwrap_or(ErrorCode::NotAdmitted),
                format!(
                    "{name} is not admitted ({}), so it would not run: {}",
                    verdict.headline(),
                    verdict.detail
                ),
            )),
        }
    }

    /// Sets the person's own `confinement` of the stdio server `name` in `servers.json`
    /// (`None` removes it: the default confinement). Validated first (the same shape as a
    /// bundle entry's), recorded (`confinement_changed`, before and after) before the file
    /// is written; a live connection is closed so the next use runs with it. It applies
    /// only while the server is not admitted by a bundle (an admitted server runs with what
    /// its admission grants, and the view says the person's is ignored).
    pub async fn set_confinement(
        &self,
        name: &str,
        confinement: Option<Value>,
    ) -> Result<ConfinementView, ApiError> {
        let path = &self.options.paths.config;
        let mut config = self.config()?;
        let in_file = !self
            .adhoc
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(name);
        let Some(entry) = config.servers.get_mut(name).filter(|_| in_file) else {
            return Err(ApiError::new(
                ErrorCode::UnknownServer,
                format!(
                    "{name:?} is not an entry of {}: only servers listed there have a confinement you set (add it with `gatehouse servers add` first)",
                    path.display()
                ),
            ));
        };
        if let ServerSpec::Http(_) = entry.to_spec(name)? {
            return Err(ApiError::new(
                ErrorCode::ServerInvalid,
                format!(
                    "{name:?} is a remote (HTTP) server: it runs elsewhere, so Gatehouse does not confine it"
                ),
            ));
        }
        let after = match &confinement {
            None => None,
            Some(value) => {
                let at = format!("mcpServers.{name}.confinement");
                let (mode, grants) = gatehouse_confine::parse_confinement(value, &at)
                    .map_err(|e| ApiError::new(ErrorCode::ConfigInvalid, e.to_string()))?;
                Some(gatehouse_confine::confinement_to_json(mode, &grants))
            }
        };
        let before = entry.other.get(CONFINEMENT_KEY).cloned();
        match &after {
            Some(value) => {
                entry.other.insert(CONFINEMENT_KEY.into(), value.clone());
            }
            None => {
                entry.other.remove(CONFINEMENT_KEY);
            }
        }
        self.gatekeeper.write(
            Some(name),
            &ConfinementChanged {
                name: name.to_string(),
                before: before.unwrap_or(Value::Null),
                after: after.unwrap_or(Value::Null),
            },
        )?;
        config.save(path)?;
        let stale = self.slots.lock().await.remove(name);
        close_slot(stale).await;
        (self.notify)(Change::Servers { name: name.into() });
        (self.notify)(Change::Audit);
        self.confinement_of(name).await
    }
}
