//! The AI clients that use the host through a gateway: which are connected now (sessions the
//! gateway opens and closes) and their recent calls. What the desktop app's Clients view
//! shows.
//!
//! The recent calls are kept in memory ([`RecentCalls`]): each `tool_call` record the host
//! writes updates them, and they are seeded from the newest records of the audit log (a
//! bounded `tail`) the first time they are read and again whenever another writer's records
//! were seen in between (a gap in the seq), so the view costs by what it shows, not by the
//! log's length.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::{ApiError, Change, Host};
use crate::ErrorCode;
use crate::audit_event::gate::ToolCall;
use crate::caller::{Caller, DownstreamTransport};

/// How many recent calls a client row carries.
pub const RECENT_CALLS: usize = 10;
/// How many client rows at most (the most recently seen first): a flood of made-up client ids
/// cannot grow the view without bound.
pub const MAX_CLIENT_ROWS: usize = 100;
/// The newest `tool_call` records the recent calls are seeded from: enough to fill every row
/// the view can show. A client whose last call is older than these is not listed until it
/// calls again or connects.
pub const SEED_CALLS: usize = MAX_CLIENT_ROWS * RECENT_CALLS;
/// At most this many records (of any event) are examined to seed them, however rare tool
/// calls are in the log.
pub const SEED_SCAN: u64 = 20_000;

/// One AI client as the Clients view shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientRow {
    /// The id `serve --client` (or the client's token) gave it.
    pub client: String,
    /// Sessions open now, by transport.
    pub connected: Vec<DownstreamTransport>,
    /// What it said it is in its last handshake (claimed, not verified).
    pub claimed: Option<String>,
    /// Its last calls, newest first.
    pub recent_calls: Vec<RecentCall>,
}

/// One call of a client, from its audit record.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecentCall {
    pub time: String,
    /// The server's name in Gatehouse.
    pub server: String,
    pub tool: String,
    /// `allowed` or `denied`, as the gate decided.
    pub decision: String,
    /// The denial's reason code (`tool_not_admitted`…).
    pub code: Option<String>,
    pub transport: String,
}

/// Each AI client's last calls, in memory: at most [`MAX_CLIENT_ROWS`] clients of at most
/// [`RECENT_CALLS`] calls each.
#[derive(Debug, Default)]
pub struct RecentCalls {
    state: Mutex<Recent>,
}

#[derive(Debug, Default)]
struct Recent {
    /// False until seeded from the log, and again once a record this host did not write was
    /// seen: then the next read seeds them again.
    current: bool,
    /// The seq of the last record accounted for (written here or read at the seed).
    last_seq: u64,
    /// Counts calls, so rows sort by their client's last activity.
    tick: u64,
    clients: BTreeMap<String, ClientCalls>,
}

#[derive(Debug, Clone)]
struct ClientCalls {
    /// The tick of its last call.
    tick: u64,
    claimed: Option<String>,
    /// Newest first.
    calls: VecDeque<RecentCall>,
}

/// A client's calls as [`RecentCalls::snapshot`] hands them out.
#[derive(Debug, Clone)]
pub(crate) struct ClientActivity {
    client: String,
    tick: u64,
    claimed: Option<String>,
    calls: Vec<RecentCall>,
}

impl RecentCall {
    /// The call a `tool_call` record describes, with its caller; `None` for a call from the
    /// person (no caller: no client's).
    fn from_record(time: &str, call: &ToolCall) -> Option<(Caller, RecentCall)> {
        let caller = call.caller.clone()?;
        let recent = RecentCall {
            time: time.to_string(),
            server: call.name.clone(),
            tool: call.decision.tool().to_string(),
            decision: call.decision.code().to_string(),
            code: call.decision.reason().map(|r| r.as_str().to_string()),
            transport: caller.transport.as_str().to_string(),
        };
        Some((caller, recent))
    }
}

impl Recent {
    fn push(&mut self, caller: Caller, call: RecentCall) {
        self.tick += 1;
        let tick = self.tick;
        if !self.clients.contains_key(&caller.client) && self.clients.len() >= MAX_CLIENT_ROWS {
            // The least recently active client makes room (as the view shows at most this many).
            if let Some(oldest) = self
                .clients
                .iter()
                .min_by_key(|(_, c)| c.tick)
                .map(|(id, _)| id.clone())
            {
                self.clients.remove(&oldest);
            }
        }
        let entry = self
            .clients
            .entry(caller.client)
            .or_insert_with(|| ClientCalls {
                tick,
                claimed: None,
                calls: VecDeque::with_capacity(RECENT_CALLS),
            });
        entry.tick = tick;
        if caller.claimed.is_some() {
            entry.claimed = caller.claimed;
        }
        entry.calls.push_front(call);
        entry.calls.truncate(RECENT_CALLS);
    }

    fn activity(&self) -> Vec<ClientActivity> {
        let mut clients: Vec<ClientActivity> = self
            .clients
            .iter()
            .map(|(client, c)| ClientActivity {
                client: client.clone(),
                tick: c.tick,
                claimed: c.claimed.clone(),
                calls: c.calls.iter().cloned().collect(),
            })
            .collect();
        clients.sort_by_key(|c| std::cmp::Reverse(c.tick));
        clients
    }
}

impl RecentCalls {
    fn state(&self) -> MutexGuard<'_, Recent> {
        // The state is rebuilt from the log when in doubt: a panic elsewhere cannot leave it
        // wrong for long, so a poisoned lock is taken over, marked for a new seed.
        self.state
            .lock()
            .unwrap_or_else(|poisoned: PoisonError<_>| {
                let mut state = poisoned.into_inner();
                state.current = false;
                state
            })
    }

    /// The host wrote record `seq` at `now`; `call` when it is a `tool_call` record. Called in
    /// the order the records were written (under the log's handle).
    pub(crate) fn wrote(&self, seq: u64, now: OffsetDateTime, call: Option<&ToolCall>) {
        let mut state = self.state();
        if !state.current || seq <= state.last_seq {
            // Not seeded yet (the seed will read it), or already read by the seed.
            return;
        }
        if seq != state.last_seq + 1 {
            // Another process (a headless `serve`) wrote in between: read the log again.
            state.current = false;
            return;
        }
        state.last_seq = seq;
        let time = now
            .to_offset(time::UtcOffset::UTC)
            .format(&Rfc3339)
            .unwrap_or_default();
        if let Some((caller, recent)) = call.and_then(|c| RecentCall::from_record(&time, c)) {
            state.push(caller, recent);
        }
    }

    /// Each client's calls, most recently active first. The log's last record is read first
    /// (one line from its end): when it is not the last one accounted for (another process
    /// wrote since, or nothing was read yet), they are seeded from the log at `path` again.
    /// Costs at most [`SEED_SCAN`] records read, whatever the log's length.
    pub(crate) fn snapshot(&self, path: &Path) -> Result<Vec<ClientActivity>, ApiError> {
        let mut state = self.state();
        let newest = newest_seq(path)?;
        if !state.current || newest != state.last_seq {
            seed(&mut state, path, newest)?;
        }
        Ok(state.activity())
    }
}

fn unreadable(e: gatehouse_audit::AuditError) -> ApiError {
    ApiError::new(
        ErrorCode::AuditUnreadable,
        format!("the AI clients' recent calls could not be read: {e}"),
    )
}

/// The seq of the log's last record (0 for an empty log).
fn newest_seq(path: &Path) -> Result<u64, ApiError> {
    let last = gatehouse_audit::tail_with(path, 1, &gatehouse_audit::Filter::all(), 1)
        .map_err(unreadable)?;
    Ok(last.records.last().map_or(0, |r| r.seq))
}

/// Rebuilds `state` from the newest records of the log, whose last seq was `newest`: the
/// newest [`SEED_CALLS`] `tool_call` records among at most [`SEED_SCAN`] examined. The caller
/// holds the state's lock, so a record this host writes meanwhile waits, and is then either
/// among those read (its seq is not above `last_seq`) or the next one.
fn seed(state: &mut Recent, path: &Path, newest: u64) -> Result<(), ApiError> {
    let calls = gatehouse_audit::tail_with(
        path,
        SEED_CALLS,
        &gatehouse_audit::Filter {
            server: None,
            event: Some(crate::gatekeeper::events::TOOL_CALL.to_string()),
        },
        SEED_SCAN,
    )
    .map_err(unreadable)?;
    let mut fresh = Recent::default();
    for record in &calls.records {
        fresh.last_seq = fresh.last_seq.max(record.seq);
        // A record that does not parse (written by another version) is no client's.
        let Ok(call) =
            serde::Deserialize::deserialize(serde_json::Value::Object(record.data.clone()))
        else {
            continue;
        };
        let call: ToolCall = call;
        let time = record.time.format(&Rfc3339).unwrap_or_default();
        if let Some((caller, recent)) = RecentCall::from_record(&time, &call) {
            fresh.push(caller, recent);
        }
    }
    fresh.last_seq = fresh.last_seq.max(newest);
    fresh.current = true;
    *state = fresh;
    Ok(())
}

struct Session {
    caller: Caller,
}

/// Open gateway sessions.
#[derive(Default)]
pub(crate) struct Sessions {
    next: std::sync::atomic::AtomicU64,
    open: Mutex<BTreeMap<u64, Session>>,
}

/// Keeps a session listed as connected until dropped.
pub struct SessionGuard {
    sessions: Arc<Sessions>,
    id: u64,
    on_close: Box<dyn Fn() + Send + Sync>,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.sessions
            .open
            .lock()
            .expect("sessions poisoned")
            .remove(&self.id);
        (self.on_close)();
    }
}

impl Sessions {
    pub(crate) fn open(
        self: &Arc<Self>,
        caller: Caller,
        on_close: Box<dyn Fn() + Send + Sync>,
    ) -> SessionGuard {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.open
            .lock()
            .expect("sessions poisoned")
            .insert(id, Session { caller });
        SessionGuard {
            sessions: self.clone(),
            id,
            on_close,
        }
    }

    fn open_callers(&self) -> Vec<Caller> {
        self.open
            .lock()
            .expect("sessions poisoned")
            .values()
            .map(|s| s.caller.clone())
            .collect()
    }
}

/// The client rows: every client with an open session or a recent call, most recently
/// active first (a connected client before one only seen), at most [`MAX_CLIENT_ROWS`].
pub(crate) fn rows(sessions: &Sessions, recent: Vec<ClientActivity>) -> Vec<ClientRow> {
    // client -> (connected now, last activity, row)
    let mut rows: BTreeMap<String, (bool, u64, ClientRow)> = BTreeMap::new();
    for activity in recent {
        rows.insert(
            activity.client.clone(),
            (
                false,
                activity.tick,
                ClientRow {
                    client: activity.client,
                    connected: Vec::new(),
                    claimed: activity.claimed,
                    recent_calls: activity.calls,
                },
            ),
        );
    }
    for caller in sessions.open_callers() {
        let entry = rows.entry(caller.client.clone()).or_insert_with(|| {
            (
                true,
                0,
                ClientRow {
                    client: caller.client.clone(),
                    connected: Vec::new(),
                    claimed: None,
                    recent_calls: Vec::new(),
                },
            )
        });
        entry.0 = true;
        entry.2.connected.push(caller.transport);
        if caller.claimed.is_some() {
            entry.2.claimed = caller.claimed.clone();
        }
    }
    let mut rows: Vec<(bool, u64, ClientRow)> = rows.into_values().collect();
    rows.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| b.1.cmp(&a.1))
            .then_with(|| b.2.connected.len().cmp(&a.2.connected.len()))
    });
    rows.truncate(MAX_CLIENT_ROWS);
    rows.into_iter().map(|(_, _, row)| row).collect()
}

impl Host {
    /// An AI client's gateway session opened: it is listed as connected until the guard
    /// drops.
    pub fn client_session(&self, caller: Caller) -> SessionGuard {
        let notify = self.notify.clone();
        (self.notify)(Change::Clients);
        self.sessions
            .open(caller, Box::new(move || notify(Change::Clients)))
    }

    /// The AI clients connected now or seen recently, with their recent calls: from memory,
    /// read from the log's newest records only when another writer added some.
    pub fn clients(&self) -> Result<Vec<ClientRow>, ApiError> {
        let recent = self
            .gatekeeper
            .recent_calls()
            .snapshot(&self.options.audit_path())?;
        Ok(rows(&self.sessions, recent))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_audit::{AuditLog, Durability};
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-11-27 12:00 UTC);

    fn call(client: &str, tool: &str, decision: &str) -> ToolCall {
        let mut call = ToolCall::sample(tool, decision == "denied");
        call.caller = Some(Caller::new(
            client,
            DownstreamTransport::Stdio,
            Some(&format!("{client} app")),
        ));
        call
    }

    fn pushed(calls: &[ToolCall]) -> Recent {
        let mut recent = Recent::default();
        for call in calls {
            if let Some((caller, c)) = RecentCall::from_record("t", call) {
                recent.push(caller, c);
            }
        }
        recent
    }

    #[test]
    fn rows_hold_each_clients_calls_newest_first_and_its_open_sessions() {
        let sessions = Arc::new(Sessions::default());
        let mut calls = vec![call("cursor", "echo", "allowed")];
        for n in 0..12 {
            calls.push(call("claude_code", &format!("t{n}"), "allowed"));
        }
        calls.push(call("claude_code", "fail", "denied"));
        // A call from the CLI itself has no caller and is no client's.
        calls.push(ToolCall::sample("echo", false));
        let _open = sessions.open(
            Caller::new("vscode", DownstreamTransport::Http, Some("Code 1.99")),
            Box::new(|| {}),
        );
        let rows = rows(&sessions, pushed(&calls).activity());
        let ids: Vec<&str> = rows.iter().map(|r| r.client.as_str()).collect();
        assert_eq!(ids, ["vscode", "claude_code", "cursor"]);
        assert_eq!(rows[0].connected, vec![DownstreamTransport::Http]);
        assert!(rows[0].recent_calls.is_empty());
        let claude = &rows[1];
        assert!(claude.connected.is_empty());
        assert_eq!(claude.recent_calls.len(), RECENT_CALLS);
        assert_eq!(claude.recent_calls[0].tool, "fail");
        assert_eq!(
            claude.recent_calls[0].code.as_deref(),
            Some("tool_not_admitted")
        );
        assert_eq!(claude.recent_calls[1].tool, "t11");
        assert_eq!(claude.claimed.as_deref(), Some("claude_code app"));
    }

    #[test]
    fn a_session_is_listed_until_its_guard_drops_and_says_so() {
        let sessions = Arc::new(Sessions::default());
        let closed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = closed.clone();
        let guard = sessions.open(
            Caller::new("a", DownstreamTransport::Stdio, None),
            Box::new(move || seen.store(true, std::sync::atomic::Ordering::SeqCst)),
        );
        assert_eq!(rows(&sessions, Vec::new()).len(), 1);
        drop(guard);
        assert!(rows(&sessions, Vec::new()).is_empty());
        assert!(closed.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[test]
    fn rows_and_the_memory_behind_them_are_bounded() {
        let sessions = Arc::new(Sessions::default());
        let calls: Vec<ToolCall> = (0..MAX_CLIENT_ROWS + 50)
            .map(|n| call(&format!("c{n}"), "echo", "allowed"))
            .collect();
        let recent = pushed(&calls);
        // The least recently active clients made room for the newer ones.
        assert_eq!(recent.clients.len(), MAX_CLIENT_ROWS);
        assert!(!recent.clients.contains_key("c49"));
        assert!(recent.clients.contains_key("c50"));
        let rows = rows(&sessions, recent.activity());
        assert_eq!(rows.len(), MAX_CLIENT_ROWS);
        assert_eq!(rows[0].client, format!("c{}", MAX_CLIENT_ROWS + 49));
    }

    #[test]
    fn written_calls_count_only_when_seeded_and_in_sequence() {
        let recent = RecentCalls::default();
        // Not seeded: nothing is kept (the seed will read it from the log).
        recent.wrote(1, NOW, Some(&call("a", "echo", "allowed")));
        assert!(recent.state().clients.is_empty());
        {
            let mut state = recent.state();
            state.current = true;
            state.last_seq = 1;
        }
        // Already read by the seed: not counted twice.
        recent.wrote(1, NOW, Some(&call("a", "echo", "allowed")));
        assert!(recent.state().clients.is_empty());
        recent.wrote(2, NOW, Some(&call("a", "echo", "allowed")));
        recent.wrote(3, NOW, None);
        recent.wrote(4, NOW, Some(&call("b", "add", "denied")));
        let activity = recent.state().activity();
        assert_eq!(activity.len(), 2);
        assert_eq!(activity[0].client, "b");
        assert_eq!(activity[0].calls[0].time, "2026-11-27T12:00:00Z");
        assert_eq!(activity[0].calls[0].decision, "denied");
        assert!(recent.state().current);
        // A gap: another process wrote record 5. The next read seeds from the log again.
        recent.wrote(6, NOW, Some(&call("a", "echo", "allowed")));
        assert!(!recent.state().current);
    }

    fn append(log: &mut AuditLog, call: Option<&ToolCall>) -> u64 {
        let (event, data) = match call {
            Some(call) => ("tool_call", serde_json::to_value(call).unwrap()),
            None => ("admission", serde_json::json!({"n": 1})),
        };
        log.append(event, Some("demo"), data, NOW).unwrap().seq
    }

    #[test]
    fn the_seed_reads_the_newest_calls_and_a_bounded_number_of_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let (mut log, _) = AuditLog::open_with(&path, NOW, Durability::batched()).unwrap();
        // An old call, then more other records than the seed examines, then recent calls.
        append(&mut log, Some(&call("old_client", "echo", "allowed")));
        for _ in 0..SEED_SCAN {
            append(&mut log, None);
        }
        for n in 0..15 {
            append(&mut log, Some(&call("a", &format!("t{n}"), "allowed")));
        }
        let last = append(&mut log, None);
        drop(log);
        let recent = RecentCalls::default();
        let activity = recent.snapshot(&path).unwrap();
        let ids: Vec<&str> = activity.iter().map(|a| a.client.as_str()).collect();
        // The old client is past what the seed examines: the view does not read the log whole.
        assert_eq!(ids, ["a"]);
        let tools: Vec<&str> = activity[0].calls.iter().map(|c| c.tool.as_str()).collect();
        assert_eq!(
            tools,
            [
                "t14", "t13", "t12", "t11", "t10", "t9", "t8", "t7", "t6", "t5"
            ]
        );
        assert_eq!(activity[0].calls[0].time, "2026-11-27T12:00:00Z");
        let state = recent.state();
        assert!(state.current);
        assert_eq!(state.last_seq, last);
    }
}
