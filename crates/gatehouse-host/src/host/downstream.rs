//! The AI clients that use the host through a gateway: which are connected now (sessions the
//! gateway opens and closes) and their recent calls (read from the audit log, which records
//! each call's caller). What the desktop app's Clients view shows.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::Value;

use super::{ApiError, Change, Host};
use crate::audit_event::gate::ToolCall;
use crate::audit_event::read_payload;
use crate::caller::{Caller, DownstreamTransport};

/// How many recent calls a client row carries.
pub const RECENT_CALLS: usize = 10;
/// How many client rows at most (the most recently seen first): a flood of made-up client ids
/// cannot grow the view without bound.
pub const MAX_CLIENT_ROWS: usize = 100;

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

/// The client rows: every client with an open session or a call in `records` (audit records,
/// oldest first), most recently active first, at most [`MAX_CLIENT_ROWS`].
pub(crate) fn rows(sessions: &Sessions, records: &[Value]) -> Vec<ClientRow> {
    // client -> (last activity order, row)
    let mut rows: BTreeMap<String, (usize, ClientRow)> = BTreeMap::new();
    let row = |client: &str| ClientRow {
        client: client.to_string(),
        connected: Vec::new(),
        claimed: None,
        recent_calls: Vec::new(),
    };
    for (order, record) in records.iter().enumerate() {
        // A call from the person (no caller), or a record that does not parse, is no client's.
        let Some(Ok(ToolCall {
            decision,
            name,
            caller: Some(caller),
            ..
        })) = read_payload::<ToolCall>(record)
        else {
            continue;
        };
        let call = RecentCall {
            time: record["time"].as_str().unwrap_or_default().to_string(),
            server: name,
            tool: decision.tool().to_string(),
            decision: decision.code().to_string(),
            code: decision.reason().map(|r| r.as_str().to_string()),
            transport: caller.transport.as_str().to_string(),
        };
        let client = caller.client.as_str();
        let entry = rows
            .entry(client.to_string())
            .or_insert_with(|| (order, row(client)));
        entry.0 = order;
        if let Some(claimed) = caller.claimed {
            entry.1.claimed = Some(claimed);
        }
        entry.1.recent_calls.insert(0, call);
        entry.1.recent_calls.truncate(RECENT_CALLS);
    }
    let now = records.len();
    for caller in sessions.open_callers() {
        let entry = rows
            .entry(caller.client.clone())
            .or_insert_with(|| (now, row(&caller.client)));
        entry.0 = entry.0.max(now);
        entry.1.connected.push(caller.transport);
        if caller.claimed.is_some() {
            entry.1.claimed = caller.claimed.clone();
        }
    }
    let mut rows: Vec<(usize, ClientRow)> = rows.into_values().collect();
    rows.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| b.1.connected.len().cmp(&a.1.connected.len()))
    });
    rows.truncate(MAX_CLIENT_ROWS);
    rows.into_iter().map(|(_, row)| row).collect()
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

    /// The AI clients connected now or seen in the audit log, with their recent calls.
    pub fn clients(&self) -> Result<Vec<ClientRow>, ApiError> {
        let records = self.audit(None, Some(crate::gatekeeper::events::TOOL_CALL.into()))?;
        Ok(rows(&self.sessions, &records))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(client: &str, tool: &str, decision: &str) -> Value {
        let mut call = ToolCall::sample(tool, decision == "denied");
        call.caller = Some(Caller::new(
            client,
            DownstreamTransport::Stdio,
            Some(&format!("{client} app")),
        ));
        json!({"event": "tool_call", "time": format!("t-{tool}"), "data": call})
    }

    #[test]
    fn rows_hold_each_clients_calls_newest_first_and_its_open_sessions() {
        let sessions = Arc::new(Sessions::default());
        let mut records = vec![json!({"event": "admission", "data": {}})];
        records.push(call("cursor", "echo", "allowed"));
        for n in 0..12 {
            records.push(call("claude_code", &format!("t{n}"), "allowed"));
        }
        records.push(call("claude_code", "fail", "denied"));
        // A call from the CLI itself has no caller and is no client's.
        records.push(json!({"event": "tool_call", "data": {"tool": "echo"}}));
        let _open = sessions.open(
            Caller::new("vscode", DownstreamTransport::Http, Some("Code 1.99")),
            Box::new(|| {}),
        );
        let rows = rows(&sessions, &records);
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
        assert_eq!(rows(&sessions, &[]).len(), 1);
        drop(guard);
        assert!(rows(&sessions, &[]).is_empty());
        assert!(closed.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[test]
    fn rows_are_bounded() {
        let sessions = Arc::new(Sessions::default());
        let records: Vec<Value> = (0..MAX_CLIENT_ROWS + 50)
            .map(|n| call(&format!("c{n}"), "echo", "allowed"))
            .collect();
        let rows = rows(&sessions, &records);
        assert_eq!(rows.len(), MAX_CLIENT_ROWS);
        assert_eq!(rows[0].client, format!("c{}", MAX_CLIENT_ROWS + 49));
    }
}
