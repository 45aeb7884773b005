//! A server's confinement in the window (issue 28): the server detail carries the host's
//! [`ConfinementView`] (what the server can read, write and reach, or "unconfined" and why),
//! and the person loosens the default confinement of a server they run unattested through one
//! typed command, `server_confine`. The host checks every value and records the change in the
//! audit log; for an admitted server it keeps the settings but its admission decides.

use gatehouse_host::ConfinementView;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::{Desk, DeskError};

/// The window's confinement form, typed: one path or `host:port` per entry, as the window's
/// textareas give them line by line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfinementForm {
    /// Paths the server may read: absolute, or `~/…` under the person's home.
    #[serde(default)]
    pub read: Vec<String>,
    /// Paths the server may read and write.
    #[serde(default)]
    pub write: Vec<String>,
    /// `host:port`s the server may reach.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Any host: the server shares the person's network.
    #[serde(default)]
    pub any_host: bool,
    /// Processes the server may start; absent, none.
    #[serde(default)]
    pub processes: Option<u32>,
    /// No confinement at all for this server (shown as turned off by the person).
    #[serde(default)]
    pub unconfined: bool,
}

impl ConfinementForm {
    /// The `confinement` JSON of `servers.json` this form describes; `None` for an empty
    /// form, which removes the person's settings (the server gets the default again).
    /// "Unconfined" sends the mode alone: grants mean nothing without a sandbox.
    pub fn to_settings(&self) -> Option<Value> {
        if self.unconfined {
            return Some(json!({"mode": "off"}));
        }
        let mut settings = Map::new();
        if !self.read.is_empty() {
            settings.insert("read".into(), json!(self.read));
        }
        if !self.write.is_empty() {
            settings.insert("write".into(), json!(self.write));
        }
        if self.any_host {
            settings.insert("hosts".into(), json!("any"));
        } else if !self.hosts.is_empty() {
            settings.insert("hosts".into(), json!(self.hosts));
        }
        if let Some(processes) = self.processes.filter(|n| *n > 0) {
            settings.insert("processes".into(), json!(processes));
        }
        (!settings.is_empty()).then_some(Value::Object(settings))
    }
}

impl Desk {
    /// Replaces the person's confinement settings for `name` with `form`: checked, audited
    /// and written by [`Host::set_confinement`](gatehouse_host::host::Host::set_confinement),
    /// which also closes its live connection, so what the window shows next is what the
    /// server runs with (it starts again under the new confinement when next used).
    pub async fn set_confinement(
        &self,
        name: &str,
        form: &ConfinementForm,
    ) -> Result<ConfinementView, DeskError> {
        self.host().set_confinement(name, form.to_settings()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_form_removes_the_settings_and_unconfined_sends_the_mode_alone() {
        assert_eq!(ConfinementForm::default().to_settings(), None);
        let zero = ConfinementForm {
            processes: Some(0),
            ..ConfinementForm::default()
        };
        assert_eq!(zero.to_settings(), None);
        let off = ConfinementForm {
            unconfined: true,
            read: vec!["~/proj".into()],
            ..ConfinementForm::default()
        };
        assert_eq!(off.to_settings(), Some(json!({"mode": "off"})));
    }

    #[test]
    fn fields_map_to_the_shared_json_shape() {
        let form = ConfinementForm {
            read: vec!["~/proj".into()],
            write: vec!["/srv/out".into()],
            hosts: vec!["api.example.com:443".into()],
            processes: Some(3),
            ..ConfinementForm::default()
        };
        assert_eq!(
            form.to_settings(),
            Some(json!({
                "read": ["~/proj"], "write": ["/srv/out"],
                "hosts": ["api.example.com:443"], "processes": 3,
            }))
        );
        let any = ConfinementForm {
            hosts: vec!["ignored.example:443".into()],
            any_host: true,
            ..ConfinementForm::default()
        };
        assert_eq!(any.to_settings(), Some(json!({"hosts": "any"})));
    }

    #[test]
    fn the_form_refuses_unknown_fields_and_wrong_types() {
        let parsed: ConfinementForm =
            serde_json::from_value(json!({"read": ["/a"], "anyHost": true})).unwrap();
        assert!(parsed.any_host);
        for bad in [
            json!({"mode": "off"}),
            json!({"read": "/a"}),
            json!({"processes": -1}),
            json!({"unconfined": "yes"}),
        ] {
            assert!(
                serde_json::from_value::<ConfinementForm>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }
}
