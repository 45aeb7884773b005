//! The gatekeeper: admission, the tool gate and the audit log, wired together so that every
//! decision is recorded on disk before it takes effect, and a decision that cannot be recorded
//! is a refusal.

use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};

use gatehouse_attest::bundle::Posture;
use gatehouse_attest::gate::{Denial, PinMismatch};
use gatehouse_audit::{AuditLog, Durability, OpenReport, Retention};
use serde_json::{Value, json};
use time::OffsetDateTime;

pub use crate::audit_event::AuditEvent;
use crate::audit_event::EventPayload;
use crate::audit_event::gate::{
    Admission, Decided, DurabilityChanged, LockRefused, TrustReloaded, TrustState,
};

use crate::HostError;
use crate::admission::{LockGuard, Trust, TrustSettings, Verdict};
use crate::config::ServerSpec;
use crate::fetch::DEFAULT_FETCH_TIMEOUT;
use crate::tap::Clock;

mod approvals;
mod approvals_file;
mod primitive;
mod suspensions;

pub use approvals::{Acknowledgement, Approvals, Review};
pub use approvals_file::ApprovalsFile;
pub use primitive::{NamedPin, Pinned, Primitive, Prompts, ResourceRequest, Resources, Tools};
pub use suspensions::{Suspension, Suspensions};

/// Audit event names as `&str`, for readers (filters, tests): each is [`AuditEvent::as_str`] of
/// its event. Writers pass an [`AuditEvent`]; see [`crate::audit_event`].
pub mod events {
    use super::AuditEvent;
    pub const ADMISSION: &str = AuditEvent::Admission.as_str();
    pub const TOOL_CALL: &str = AuditEvent::ToolCall.as_str();
    pub const OAUTH_SIGNED_IN: &str = AuditEvent::OauthSignedIn.as_str();
    pub const OAUTH_SIGN_IN_FAILED: &str = AuditEvent::OauthSignInFailed.as_str();
    pub const OAUTH_REFRESHED: &str = AuditEvent::OauthRefreshed.as_str();
    pub const OAUTH_LOGGED_OUT: &str = AuditEvent::OauthLoggedOut.as_str();
    pub const TOOL_PIN_MISMATCH: &str = AuditEvent::ToolPinMismatch.as_str();
    pub const TOOL_APPROVED: &str = AuditEvent::ToolApproved.as_str();
    pub const PROMPT_GET: &str = AuditEvent::PromptGet.as_str();
    pub const RESOURCE_READ: &str = AuditEvent::ResourceRead.as_str();
    pub const PROMPT_PIN_MISMATCH: &str = AuditEvent::PromptPinMismatch.as_str();
    pub const PROMPT_APPROVED: &str = AuditEvent::PromptApproved.as_str();
    pub const RESOURCE_APPROVED: &str = AuditEvent::ResourceApproved.as_str();
    pub const BUNDLE_ACCEPTED: &str = AuditEvent::BundleAccepted.as_str();
    pub const BUNDLE_REFUSED: &str = AuditEvent::BundleRefused.as_str();
    pub const ELICITATION_RECEIPT: &str = AuditEvent::ElicitationReceipt.as_str();
    pub const ELICITATION_COMPLETED: &str = AuditEvent::ElicitationCompleted.as_str();
    pub const ELICITATION_COMPLETION_IGNORED: &str =
        AuditEvent::ElicitationCompletionIgnored.as_str();
    pub const ELICITATION_RETRY: &str = AuditEvent::ElicitationRetry.as_str();
    pub const SESSION_KILLED: &str = AuditEvent::SessionKilled.as_str();
    pub const SERVER_SUSPENDED: &str = AuditEvent::ServerSuspended.as_str();
    pub const SERVER_RESUMED: &str = AuditEvent::ServerResumed.as_str();
    pub const SUSPENDED_REFUSED: &str = AuditEvent::SuspendedRefused.as_str();
    pub const TRUST_RELOADED: &str = AuditEvent::TrustReloaded.as_str();
    pub const DURABILITY_CHANGED: &str = AuditEvent::DurabilityChanged.as_str();
    pub const LOCK_REFUSED: &str = AuditEvent::LockRefused.as_str();
    pub const EGRESS_REFUSED: &str = AuditEvent::EgressRefused.as_str();
    pub const CONFINEMENT_CHANGED: &str = AuditEvent::ConfinementChanged.as_str();
}

/// The audit log, shared by every connection of a process.
pub struct Auditor {
    log: Mutex<AuditLog>,
    clock: Clock,
    /// How long sealed segments are kept: pruned at open and after each rotation (the
    /// strictest of the policy and the bundles, re-applied when the trust is reloaded).
    retention: Mutex<Retention>,
    /// Each AI client's last calls, updated as `tool_call` records are written, so the
    /// Clients view does not read the log.
    recent: crate::host::downstream::RecentCalls,
}

impl std::fmt::Debug for Auditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auditor").finish_non_exhaustive()
    }
}

impl Auditor {
    /// Opens (or creates) the log in the sync mode (admin commands, tests). The report says
    /// whether a torn last record was found and set aside, so the caller can tell the user.
    pub fn open(path: &Path, clock: Clock) -> Result<(Auditor, OpenReport), HostError> {
        Auditor::open_with(path, clock, Durability::Sync)
    }

    /// Opens (or creates) the log with `durability` (see [`crate::durability`]).
    pub fn open_with(
        path: &Path,
        clock: Clock,
        durability: Durability,
    ) -> Result<(Auditor, OpenReport), HostError> {
        let (log, report) = AuditLog::open_with(path, clock(), durability).map_err(|e| {
            HostError::AuditUnavailable {
                detail: e.to_string(),
            }
        })?;
        Ok((Auditor::new(log, clock, Retention::forever()), report))
    }

    /// Opens (or creates) the log with `durability`, rotating into segments and keeping them
    /// as `kept` says (see [`crate::durability::retention`]): sealed segments past the
    /// retention are removed now, and again after each rotation.
    pub fn open_keeping(
        path: &Path,
        clock: Clock,
        durability: Durability,
        kept: &crate::durability::RetentionSetting,
    ) -> Result<(Auditor, OpenReport), HostError> {
        let now = clock();
        let (mut log, report) =
            AuditLog::open_rotating(path, now, durability, Some(kept.rotation())).map_err(|e| {
                HostError::AuditUnavailable {
                    detail: e.to_string(),
                }
            })?;
        prune(&mut log, now, &kept.retention());
        Ok((Auditor::new(log, clock, kept.retention()), report))
    }

    fn new(log: AuditLog, clock: Clock, retention: Retention) -> Auditor {
        Auditor {
            log: Mutex::new(log),
            clock,
            retention: Mutex::new(retention),
            recent: Default::default(),
        }
    }

    /// Keeps sealed segments as `retention` says from the next rotation (or open) on.
    pub fn set_retention(&self, retention: Retention) {
        *self
            .retention
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = retention;
    }

    /// Each AI client's last calls (see [`crate::host::downstream`]).
    pub(crate) fn recent_calls(&self) -> &crate::host::downstream::RecentCalls {
        &self.recent
    }

    /// The mode records are made durable in.
    pub fn durability(&self) -> Result<Durability, HostError> {
        Ok(self.log()?.durability())
    }

    /// Changes the mode (a bundle that requires another was installed).
    pub fn set_durability(&self, durability: Durability) -> Result<(), HostError> {
        self.log()?
            .set_durability(durability)
            .map_err(|e| HostError::AuditUnavailable {
                detail: e.to_string(),
            })
    }

    /// Makes every record written so far durable and ends the batched mode (its flusher
    /// idles, its marker goes): for a front end about to exit without dropping the log. A
    /// record after this is synced on its own.
    pub fn finish(&self) -> Result<(), HostError> {
        self.set_durability(Durability::Sync)
    }

    fn log(&self) -> Result<std::sync::MutexGuard<'_, AuditLog>, HostError> {
        self.log.lock().map_err(|_| HostError::AuditUnavailable {
            detail: "the audit log handle was poisoned by a crash in another thread".into(),
        })
    }

    /// Appends a record of `payload`'s event and returns once it is in the log file (and, in
    /// the sync mode, on stable storage); an error means the decision it records must not
    /// take effect.
    pub fn write<P: crate::audit_event::EventPayload>(
        &self,
        server: Option<&str>,
        payload: &P,
    ) -> Result<u64, HostError> {
        let data = serde_json::to_value(payload).map_err(|e| HostError::AuditUnavailable {
            detail: format!("a {} record could not be serialized: {e}", P::EVENT),
        })?;
        self.record(P::EVENT, server, data)
    }

    /// Appends a record and returns once it is in the log file (and, in the sync mode, on
    /// stable storage); an error means the decision it records must not take effect. Private:
    /// every record is written from its payload type ([`Auditor::write`]).
    fn record(
        &self,
        event: AuditEvent,
        server: Option<&str>,
        data: Value,
    ) -> Result<u64, HostError> {
        let now = (self.clock)();
        let mut log = self.log()?;
        let server = server.map(|s| bounded_text(s, MAX_RECORD_TEXT_BYTES));
        let data = bounded_data(data);
        // What the Clients view keeps of it: read from the data as written.
        let call = (event == AuditEvent::ToolCall)
            .then(|| {
                <crate::audit_event::gate::ToolCall as serde::Deserialize>::deserialize(&data).ok()
            })
            .flatten();
        let appended = log
            .append(event.as_str(), server.as_deref(), data, now)
            .map_err(|e| HostError::AuditUnavailable {
                detail: e.to_string(),
            })?;
        // Still under the handle's lock, so the recent calls see the seqs in order.
        if let Some(rotated) = &appended.rotated {
            self.recent.wrote(rotated.record_seq, now, None);
        }
        self.recent.wrote(appended.seq, now, call.as_ref());
        if appended.rotated.is_some() {
            let retention = *self
                .retention
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(seq) = prune(&mut log, now, &retention) {
                self.recent.wrote(seq, now, None);
            }
        }
        Ok(appended.seq)
    }
}

/// Removes the sealed segments past `retention` (recorded in the chain first); returns the
/// seq of that record. A failure is logged, not returned: the decision being recorded is
/// already in the log, and a segment that could not be removed is only kept longer.
fn prune(log: &mut AuditLog, now: OffsetDateTime, retention: &Retention) -> Option<u64> {
    match log.prune(now, retention) {
        Ok(pruned) => pruned.record_seq,
        Err(error) => {
            tracing::warn!(%error, "old audit log segments could not be removed");
            None
        }
    }
}

/// Record data above this many bytes (as JSON) has its long strings cut: far below the audit
/// log's 1 MiB line limit, so a record whose content a server chose (an elicitationId, a URL,
/// a message) is always written, truncated, never refused and lost.
pub const MAX_RECORD_DATA_BYTES: usize = 64 * 1024;
/// In a record that was too large, each string is cut to this many bytes.
pub const MAX_RECORD_TEXT_BYTES: usize = 1024;

fn bounded_text(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…[truncated: {} bytes]", &text[..cut], text.len() - cut)
}

/// `data`, or when it is larger than [`MAX_RECORD_DATA_BYTES`], the same shape with every long
/// string cut and a `truncated` note (the original size and its SHA-256, so the cut can be
/// told apart from what was said); if even that is too large, only the note and the first
/// keys' short values.
pub fn bounded_data(data: Value) -> Value {
    let original = serde_json::to_vec(&data).unwrap_or_default();
    if original.len() <= MAX_RECORD_DATA_BYTES {
        return data;
    }
    use sha2::Digest;
    let note = json!({
        "original_bytes": original.len(),
        "original_sha256": hex::encode(sha2::Sha256::digest(&original)),
    });
    fn cut(value: Value) -> Value {
        match value {
            Value::String(s) => Value::String(bounded_text(&s, MAX_RECORD_TEXT_BYTES)),
            Value::Array(items) => Value::Array(items.into_iter().take(64).map(cut).collect()),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .take(64)
                    .map(|(k, v)| (bounded_text(&k, MAX_RECORD_TEXT_BYTES), cut(v)))
                    .collect(),
            ),
            other => other,
        }
    }
    let mut bounded = match cut(data) {
        Value::Object(map) => map,
        other => serde_json::Map::from_iter([("value".to_string(), other)]),
    };
    bounded.insert("truncated".into(), note.clone());
    let bounded = Value::Object(bounded);
    if serde_json::to_vec(&bounded).map_or(0, |b| b.len()) <= MAX_RECORD_DATA_BYTES {
        return bounded;
    }
    json!({ "truncated": note })
}

/// Everything a connection needs to be admitted and to gate its tool calls.
pub struct Gatekeeper {
    /// The trust admission decides with; replaced whole when bundles are loaded again.
    trust: RwLock<Arc<Trust>>,
    /// How to load it again before each admission; `None` keeps the first one (tests,
    /// conformance mode).
    reload: Option<TrustSettings>,
    /// What the front end was started with that a lock forbids, checked again before each
    /// admission: a lock installed while it runs refuses it from then on.
    guard: Option<LockGuard>,
    /// The user's `[audit]` choice, combined with each reload's bundles; `None` keeps the
    /// mode the log was opened in.
    audit_policy: Option<gatehouse_policy::AuditPolicy>,
    audit: Auditor,
    approvals: Approvals,
    suspensions: Suspensions,
    clock: Clock,
    /// Package servers' store and sources; set once when the host opens. Without it a
    /// package config is judged as a plain stdio command (unbound).
    packages: std::sync::OnceLock<Arc<crate::packages::Packages>>,
    /// What confinement decides with (issue 28); set once when the host opens. Without it
    /// (the runtime's own tests) no confinement is decided and stdio servers run as started.
    confinement: std::sync::OnceLock<Arc<crate::confine::ConfinementSettings>>,
}

impl std::fmt::Debug for Gatekeeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gatekeeper")
            .field("posture", &self.trust().posture())
            .finish_non_exhaustive()
    }
}

impl Gatekeeper {
    /// The trust roots and posture admission decides with, as of the last (re)load.
    pub fn trust(&self) -> Arc<Trust> {
        self.trust.read().expect("trust poisoned").clone()
    }

    pub fn new(trust: Trust, audit: Auditor, approvals: Approvals, clock: Clock) -> Gatekeeper {
        Gatekeeper {
            trust: RwLock::new(Arc::new(trust)),
            reload: None,
            guard: None,
            audit_policy: None,
            audit,
            approvals,
            suspensions: Suspensions::in_memory(),
            clock,
            packages: std::sync::OnceLock::new(),
            confinement: std::sync::OnceLock::new(),
        }
    }

    /// Gives admission what confinement decides with (once; a second call is ignored).
    pub fn set_confinement(&self, settings: crate::confine::ConfinementSettings) {
        let _ = self.confinement.set(Arc::new(settings));
    }

    /// What confinement decides with, when the host set it.
    pub fn confinement_settings(&self) -> Option<&crate::confine::ConfinementSettings> {
        self.confinement.get().map(|s| &**s)
    }

    /// Writes an `egress_refused` record for `verdict`'s server: what its egress proxy's
    /// refusals go through. A record that cannot be written is logged (the connection was
    /// refused either way).
    pub(crate) fn egress_sink(
        self: &Arc<Self>,
        verdict: &Verdict,
    ) -> crate::confine::proxy::RefusalSink {
        let gatekeeper = Arc::downgrade(self);
        let (audit_server, name) = (verdict.audit_server(), verdict.server.clone());
        Arc::new(move |refusal: crate::confine::proxy::Refusal| {
            let Some(gatekeeper) = gatekeeper.upgrade() else {
                return;
            };
            let record = crate::audit_event::confine::EgressRefused {
                name: name.clone(),
                host: refusal.host,
                port: refusal.port,
                reason: refusal.reason,
                suppressed_before: refusal.suppressed_before,
            };
            if let Err(error) = gatekeeper.write(Some(&audit_server), &record) {
                tracing::warn!(%error, server = %name, "an egress refusal could not be recorded");
            }
        })
    }

    /// The clock records are written with.
    pub(crate) fn clock(&self) -> Clock {
        self.clock.clone()
    }

    /// Gives admission the package runtime (once; a second call is ignored).
    pub fn set_packages(&self, packages: Arc<crate::packages::Packages>) {
        let _ = self.packages.set(packages);
    }

    /// The package runtime, when the host has one.
    pub fn packages(&self) -> Option<&Arc<crate::packages::Packages>> {
        self.packages.get()
    }

    /// Loads the trust again from `settings` before each admission, at that admission's time,
    /// with the same verification as at start: an expired bundle stops admitting, and an
    /// installed rotation (a key or server dropped, `locked` added) applies at once.
    pub fn reloading(mut self, settings: TrustSettings) -> Gatekeeper {
        self.reload = Some(settings);
        self
    }

    /// Keeps the audit log's durability the combination of `policy` and the bundles as they
    /// are reloaded: a bundle installed while the host runs that requires sync applies at
    /// the next admission.
    pub fn choosing_durability(mut self, policy: gatehouse_policy::AuditPolicy) -> Gatekeeper {
        self.audit_policy = Some(policy);
        self
    }

    /// See [`Auditor::finish`].
    pub fn finish_audit(&self) -> Result<(), HostError> {
        self.audit.finish()
    }

    /// Each AI client's last calls, kept as they are recorded.
    pub(crate) fn recent_calls(&self) -> &crate::host::downstream::RecentCalls {
        self.audit.recent_calls()
    }

    /// The audit log's durability now and who chose it.
    pub fn audit_setting(&self) -> crate::durability::AuditSetting {
        let policy = self.audit_policy.clone().unwrap_or_default();
        let mut setting = crate::durability::effective(&policy, &self.trust());
        if let Ok(durability) = self.audit.durability() {
            setting.durability = durability;
        }
        setting
    }

    /// Refuses every admission, from the first one a lock is found at, while an admin bundle
    /// is locked that forbids what `guard` says the front end was started with.
    pub fn guarding(mut self, guard: LockGuard) -> Gatekeeper {
        self.guard = Some(guard);
        self
    }

    /// Loads the trust again (when this gatekeeper reloads) as of `now` and, when what it
    /// decides changed, records that first. Returns the trust to decide with. Fails, recorded,
    /// when a lock forbids what the front end was started with.
    pub fn reload_trust(&self, now: OffsetDateTime) -> Result<Arc<Trust>, HostError> {
        if let Some(guard) = &self.guard
            && let Err(error) = guard.check(now)
        {
            let refused = LockRefused {
                code: error.code().to_string(),
                detail: error.to_string(),
            };
            self.audit.write(None, &refused)?;
            return Err(error);
        }
        let Some(settings) = &self.reload else {
            return Ok(self.trust());
        };
        let fresh = Trust::load(settings, now);
        let mut current = self.trust.write().expect("trust poisoned");
        let (before, after) = (TrustState::from(&**current), TrustState::from(&fresh));
        if before != after {
            self.audit.write(None, &TrustReloaded { before, after })?;
        }
        if let Some(policy) = &self.audit_policy {
            let wanted = crate::durability::effective(policy, &fresh);
            // Applies from the next rotation on (a bundle that keeps records longer takes
            // effect before anything more is removed).
            self.audit.set_retention(wanted.retention.retention());
            let now_in = self.audit.durability()?;
            if wanted.durability != now_in {
                self.audit.set_durability(wanted.durability)?;
                let changed = DurabilityChanged {
                    before: now_in.into(),
                    after: wanted.durability.into(),
                    set_by: wanted.set_by,
                };
                self.audit.write(None, &changed)?;
            }
        }
        // Always the fresh one: it is what is installed now, even where the summary above
        // cannot tell the difference.
        *current = Arc::new(fresh);
        Ok(current.clone())
    }

    /// Appends `payload`'s record (server field `server`) through [`Auditor::write`]:
    /// how the host's runtime (sign-ins, the broker, connections) records its events.
    pub fn write<P: EventPayload>(
        &self,
        server: Option<&str>,
        payload: &P,
    ) -> Result<u64, HostError> {
        self.audit.write(server, payload)
    }

    /// [`Gatekeeper::write`] under the verdict's server (its name and identity, as every
    /// record about an admitted or refused server names it).
    pub fn write_for<P: EventPayload>(
        &self,
        verdict: &Verdict,
        payload: &P,
    ) -> Result<u64, HostError> {
        self.write(Some(&verdict.audit_server()), payload)
    }

    pub fn posture(&self) -> Posture {
        self.trust().posture()
    }

    /// Decides admission and records it. `Err` only when the record could not be written (then
    /// nothing may proceed). The bundles are judged at this moment: loaded again first when
    /// this gatekeeper reloads.
    pub async fn admit(&self, server: &str, spec: &ServerSpec) -> Result<Verdict, HostError> {
        self.admit_as(server, spec, None).await
    }

    /// [`Gatekeeper::admit`], with the person's own `confinement` of this server in
    /// `servers.json` (it applies only when the server is not admitted by a bundle): the
    /// verdict carries the server's confinement, and a server whose confinement is required
    /// but unavailable is refused (`confinement_unavailable`).
    pub async fn admit_as(
        &self,
        server: &str,
        spec: &ServerSpec,
        person_confinement: Option<&Value>,
    ) -> Result<Verdict, HostError> {
        let now = (self.clock)();
        let trust = self.reload_trust(now)?;
        let mut verdict = trust
            .admit(
                server,
                spec,
                now,
                DEFAULT_FETCH_TIMEOUT,
                self.packages.get().map(|p| &**p),
            )
            .await;
        if let (Some(settings), ServerSpec::Stdio(stdio)) = (self.confinement.get(), spec)
            && verdict.proceeds
        {
            // Off the async runtime: the first check of a machine starts bubblewrap.
            let tools = settings.tools.clone();
            let checked = tokio::task::spawn_blocking(move || crate::confine::check_tools(&tools))
                .await
                .unwrap_or_else(|e| {
                    Err((
                        crate::confine::UnconfinedReason::SelfCheckFailed,
                        format!("the sandbox check did not finish: {e}"),
                    ))
                });
            crate::confine::confine_verdict(
                &mut verdict,
                &trust,
                settings,
                stdio,
                person_confinement,
                checked,
            );
        }
        self.audit
            .write(Some(&verdict.audit_server()), &Admission::from(&verdict))?;
        Ok(verdict)
    }

    /// The closed allow-list of `P` for a server: the bundle's entries for an admitted server,
    /// then, only in the warn posture, the user's approvals (which replace a bundle pin for
    /// the same name: in warn the user may re-approve a changed definition).
    pub fn allow_list<P: Primitive>(&self, verdict: &Verdict) -> P::AllowList {
        // A policy whose entries do not parse (already refused when the bundle loaded) grants
        // nothing: never a tool that should have been pinned, unpinned.
        let mut list = match (verdict.policy(), verdict.bundle.as_ref()) {
            (Some(policy), Some(bundle)) if verdict.is_admitted() => {
                P::from_policy(policy, bundle).unwrap_or_default()
            }
            _ => P::AllowList::default(),
        };
        if self.user_may_approve() {
            for entry in self.approvals.of::<P>(&verdict.approval_key) {
                P::allow_user(&mut list, &entry);
            }
        }
        list
    }

    /// A fresh gate of `P` for a server, over [`Gatekeeper::allow_list`].
    pub fn gate<P: Primitive>(&self, verdict: &Verdict) -> P::Gate {
        P::gate(self.allow_list::<P>(verdict))
    }

    /// The gate's decision on a request for `P`, recorded before it takes effect: `Err` when
    /// it was denied or could not be recorded.
    pub fn authorize<P: Primitive>(
        &self,
        verdict: &Verdict,
        gate: &P::Gate,
        request: P::Request<'_>,
        caller: Option<&crate::caller::Caller>,
    ) -> Result<P::Permit, HostError>
    where
        Decided<P::Decision>: EventPayload,
    {
        let decided = P::check(gate, request);
        self.record(verdict, P::decision(request, &decided), caller)?;
        decided.map_err(|denial| tool_denied(&verdict.server, denial))
    }

    /// Records a decision on a request to `verdict`'s server (with its caller, a downstream
    /// client's): [`Gatekeeper::authorize`]'s, or a refusal decided before the gate (a
    /// completion for a template the gate does not show as allowed).
    pub fn record<D>(
        &self,
        verdict: &Verdict,
        decision: D,
        caller: Option<&crate::caller::Caller>,
    ) -> Result<u64, HostError>
    where
        Decided<D>: EventPayload,
    {
        let payload = Decided {
            decision,
            admission: verdict.status,
            name: verdict.server.clone(),
            caller: caller.cloned(),
        };
        self.audit.write(Some(&verdict.audit_server()), &payload)
    }

    /// Records pin mismatches found in a fresh listing of `P`.
    pub fn record_pin_mismatches<P: Pinned>(
        &self,
        verdict: &Verdict,
        mismatches: &[PinMismatch],
    ) -> Result<(), HostError> {
        for m in mismatches {
            self.audit.write(
                Some(&verdict.audit_server()),
                &P::mismatch(m, &verdict.server),
            )?;
        }
        Ok(())
    }
}

fn tool_denied(server: &str, denial: Denial) -> HostError {
    HostError::ToolDenied {
        server: server.to_string(),
        tool: denial.tool,
        reason: denial.reason.into(),
        detail: denial.detail,
    }
}
