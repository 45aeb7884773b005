//! Opening the host (the lock guard, the policy, the trust roots, the security core, the
//! broker, the tap) and shutting it down.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::{Mutex, broadcast, watch};

use super::{ApiError, AuditWarning, Change, Host, HostOptions, Notifier, close_slot};
use crate::ErrorCode;
use crate::admission::TrustSettings;
use crate::broker::{BrokerOptions, ElicitationBroker};
use crate::consent::ConsentUi;
use crate::demo;
use crate::secrets::SecretStore;
use crate::security::{self, SecurityPaths};
use crate::tap::TrafficTap;

const TAP_CAPACITY: usize = 10_000;

impl Host {
    /// Opens the audit log and loads the trust roots and the policy. Fails, with what to fix,
    /// when any of them cannot be used: nothing is decided that cannot be recorded.
    /// Elicitations are put to the person through `consent`.
    pub fn open(
        options: HostOptions,
        secrets: Arc<dyn SecretStore>,
        consent: Arc<dyn ConsentUi>,
        notify: Notifier,
    ) -> Result<Arc<Host>, ApiError> {
        let paths = &options.paths;
        // Refused at start when a lock is in force, and before each admission after (a lock
        // installed while the app runs).
        let guard = crate::admission::LockGuard {
            system_dir: paths.system_trust_roots.clone(),
            asked: crate::admission::Widening {
                trust_roots: options.admin_trust_roots.clone(),
                demo: options.demo,
                policy: options.policy.clone(),
            },
        };
        guard.check((options.clock)())?;
        let policy = crate::config::load_policy(options.policy.as_deref())
            .map_err(|e| ApiError::new(ErrorCode::PolicyInvalid, e))?;
        let mut trust = TrustSettings {
            system_dir: options
                .admin_trust_roots
                .clone()
                .unwrap_or_else(|| paths.system_trust_roots.clone()),
            user_dir: paths.user_trust_roots.clone(),
            posture_override: options.posture_override,
            demo_bundle: None,
        };
        let now = (options.clock)();
        if options.demo {
            let server = options.demo_server()?;
            trust.demo_bundle = Some(
                demo::demo_bundle(&server, now)
                    .map_err(|e| ApiError::new(ErrorCode::DemoUnavailable, e))?,
            );
        }
        // The window learns what opening found from the result: if a step fails the desk does
        // not open, and that error is what the window shows.
        let opened = security::open(
            &trust,
            &SecurityPaths {
                audit: options.audit_path(),
                ..SecurityPaths::in_data_dir(&paths.data)
            },
            &policy.audit,
            guard,
            now,
            options.clock.clone(),
            |finding| {
                if let Some(tell) = &options.findings {
                    tell(&finding);
                }
            },
        )?;
        let gatekeeper = opened.gatekeeper;
        let sources = crate::packages::PackageSources::load(&options.package_sources_path())
            .map_err(|e| ApiError::new(ErrorCode::ConfigInvalid, e))?;
        let home = options
            .home
            .clone()
            .or_else(|| std::env::var_os("HOME").map(std::path::PathBuf::from))
            .unwrap_or_else(|| std::path::PathBuf::from("/nonexistent"));
        gatekeeper.set_confinement(crate::confine::ConfinementSettings {
            policy_mode: policy.confinement.mode,
            policy_is_default: options.policy.is_none(),
            tools: options.sandbox.clone(),
            home: home.clone(),
            data: paths.data.clone(),
        });
        gatekeeper.set_packages(Arc::new(crate::packages::Packages::new(
            paths.data.join(crate::packages::STORE_DIR),
            sources,
            home,
        )));
        let audit_warnings = AuditWarning::from_report(&opened.audit_report);
        let broker = ElicitationBroker::new(
            Arc::new(policy),
            consent,
            options.opener.clone(),
            gatekeeper.clone(),
            BrokerOptions {
                human_timeout: options.prompt_timeout,
                ..Default::default()
            },
        );
        let (events, _) = broadcast::channel(256);
        let servers_changed = watch::channel(0u64).0;
        let seen = servers_changed.clone();
        let front_end = notify;
        let notify: Notifier = Arc::new(move |change: Change| {
            if matches!(change, Change::Servers { .. }) {
                seen.send_modify(|n| *n = n.wrapping_add(1));
            }
            front_end(change);
        });
        let mut tap = TrafficTap::new(TAP_CAPACITY, options.clock.clone());
        if let Some(path) = &options.traffic_log {
            tap = tap.with_jsonl_file(path).map_err(|e| {
                ApiError::new(
                    ErrorCode::TrafficLogUnavailable,
                    format!("the traffic log {}: {e}", path.display()),
                )
            })?;
        }
        Ok(Arc::new(Host {
            tap: Arc::new(tap),
            options,
            trust,
            secrets,
            events,
            gatekeeper,
            audit_warnings,
            broker,
            slots: Mutex::new(BTreeMap::new()),
            notify,
            started: watch::channel(false).0,
            servers_changed,
            sessions: Arc::default(),
            subscriber_sessions: std::sync::atomic::AtomicU64::new(0),
            adhoc: std::sync::Mutex::default(),
            adhoc_confinement: std::sync::Mutex::default(),
        }))
    }

    /// Closes every connection (the app is quitting).
    pub async fn shutdown(&self) {
        let slots = std::mem::take(&mut *self.slots.lock().await);
        for (_, slot) in slots {
            close_slot(Some(slot)).await;
        }
        // A front end may exit without dropping the host (the desktop app does): make every
        // record durable now and end the batched mode, so no marker is left to be read, after
        // the next reboot, as records a power cut may have taken.
        if let Err(error) = self.gatekeeper.finish_audit() {
            tracing::warn!(%error, "the audit log could not be flushed at shutdown");
        }
    }
}
