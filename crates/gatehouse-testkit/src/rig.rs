//! The security core and the plumbing a [`Connection`] needs, assembled in a test's own
//! directories, for the tests that drive one connection (or a sign-in) below the [`Host`]:
//! trust loaded from empty trust-root directories (plus the demo bundle, or a posture, as the
//! test says), the audit log opened on its own (every record made durable at once), approvals
//! in memory, a traffic tap and a host-event channel. [`Rig::connect`] connects as the host
//! would; tests that want the whole host use [`crate::host`] instead.
//!
//! [`Host`]: gatehouse_host::host::Host

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_attest::bundle::Posture;
use gatehouse_audit::Record;
use gatehouse_host::connection::log_file_name;
use gatehouse_host::tap::system_clock;
use gatehouse_host::{
    Approvals, Auditor, ConnectOptions, Connection, Gatekeeper, HostError, HostEvent, MemoryStore,
    ServerSpec, TrafficTap, Trust, TrustSettings,
};
use tempfile::TempDir;
use tokio::sync::broadcast;

/// How many traffic entries the rig's tap keeps: more than any one test exchanges.
const TAP_CAPACITY: usize = 10_000;

/// A test's security core: see the module's documentation.
pub struct Rig {
    /// Every message in and out of every connection made through the rig.
    pub tap: Arc<TrafficTap>,
    /// The host events connections send (tool-list changes, resource updates…).
    pub events: broadcast::Sender<HostEvent>,
    /// Admission, the gates and the audit log.
    pub gatekeeper: Arc<Gatekeeper>,
    /// Where servers' stderr logs go ([`Rig::stderr_log`]).
    pub logs: TempDir,
    /// The state directory: `audit.jsonl`, `system-trust-roots/`, `user-trust-roots/` (both
    /// empty), and room for a test's own files.
    pub state: TempDir,
}

impl Rig {
    /// No bundle other than `demo_bundle`, under `posture` when given; the trust must load
    /// without problems.
    pub fn new(posture: Option<Posture>, demo_bundle: Option<Vec<u8>>) -> Rig {
        let logs = tempfile::tempdir().expect("a temporary directory for server logs");
        let state = tempfile::tempdir().expect("a temporary state directory");
        let system_dir = state.path().join("system-trust-roots");
        let user_dir = state.path().join("user-trust-roots");
        std::fs::create_dir(&system_dir).expect("the system trust-roots directory");
        std::fs::create_dir(&user_dir).expect("the user trust-roots directory");
        let trust = Trust::load(
            &TrustSettings {
                system_dir,
                user_dir: Some(user_dir),
                posture_override: posture,
                demo_bundle,
            },
            system_clock()(),
        );
        assert!(trust.problems().is_empty(), "{:?}", trust.problems());
        let (auditor, _) = Auditor::open(&state.path().join("audit.jsonl"), system_clock())
            .expect("the test's audit log opens");
        Rig {
            tap: Arc::new(TrafficTap::new(TAP_CAPACITY, system_clock())),
            events: broadcast::channel(256).0,
            gatekeeper: Arc::new(Gatekeeper::new(
                trust,
                auditor,
                Approvals::in_memory(),
                system_clock(),
            )),
            logs,
            state,
        }
    }

    /// No bundle, the warn posture: unattested servers are tolerated (never admitted).
    pub fn warn() -> Rig {
        let rig = Rig::new(Some(Posture::Warn), None);
        assert_eq!(rig.gatekeeper.posture(), Posture::Warn);
        rig
    }

    /// Demo mode: the demo bundle admits the demo server of [`crate::demo::server`], and
    /// nothing else is (deny-by-default).
    pub fn demo() -> Rig {
        let bundle = gatehouse_host::demo::demo_bundle(&crate::demo::server(), system_clock()())
            .expect("the demo bundle is made for the demo server");
        let rig = Rig::new(None, Some(bundle));
        assert_eq!(rig.gatekeeper.posture(), Posture::DenyByDefault);
        rig
    }

    /// The options the rig's connections use unless a test changes them: stderr logs in
    /// [`Rig::logs`], 20 seconds for the handshake and for each request, 300 ms for a server
    /// to leave on close.
    pub fn options(&self) -> ConnectOptions {
        ConnectOptions {
            log_dir: Some(self.logs.path().to_path_buf()),
            connect_timeout: Duration::from_secs(20),
            request_timeout: Duration::from_secs(20),
            shutdown_grace: Duration::from_millis(300),
            ..ConnectOptions::default()
        }
    }

    /// Connects `spec` as `name` with `options`, admission first, secrets in memory.
    pub async fn connect(
        &self,
        name: &str,
        spec: &ServerSpec,
        options: &ConnectOptions,
    ) -> Result<Connection, HostError> {
        Connection::connect(
            name,
            spec,
            Arc::new(MemoryStore::default()),
            self.tap.clone(),
            self.events.clone(),
            options,
            self.gatekeeper.clone(),
        )
        .await
    }

    /// The audit log.
    pub fn audit_path(&self) -> PathBuf {
        self.state.path().join("audit.jsonl")
    }

    /// Every audit record, oldest first.
    pub fn records(&self) -> Vec<Record> {
        crate::audit::typed(&self.audit_path())
    }

    /// The audit records of `event`, oldest first.
    pub fn records_of(&self, event: &str) -> Vec<Record> {
        crate::audit::typed_of(&self.audit_path(), event)
    }

    /// Where the server connected as `name` writes its stderr.
    pub fn stderr_log(&self, name: &str) -> PathBuf {
        self.logs.path().join(log_file_name(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warn_rig_has_an_empty_audit_log_and_its_directories() {
        let rig = Rig::warn();
        assert!(rig.audit_path().is_file());
        assert!(rig.records().is_empty());
        assert!(rig.state.path().join("system-trust-roots").is_dir());
        assert!(rig.state.path().join("user-trust-roots").is_dir());
        let options = rig.options();
        assert_eq!(options.log_dir.as_deref(), Some(rig.logs.path()));
        assert!(rig.stderr_log("x").starts_with(rig.logs.path()));
    }

    #[test]
    fn a_plain_rig_is_deny_by_default() {
        let rig = Rig::new(None, None);
        assert_eq!(rig.gatekeeper.posture(), Posture::DenyByDefault);
    }
}
