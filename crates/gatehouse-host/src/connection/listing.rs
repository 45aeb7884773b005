//! What a server offers: tools (cached until `list_changed`, seen through the gate, approved
//! by the user), resources and prompts (cached the same way, [`Listing`]), every listing
//! bounded in pages, items and cursors.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::service::ServiceError;

use gatehouse_attest::gate::{Kind, ToolGate, ToolStatus};
use gatehouse_attest::pins::tool_pin;

use super::{CallOptions, Connection};
use crate::gatekeeper::{NamedPin, Pinned, Review, Tools};
use crate::{ErrorCode, HostError};

/// A listing (tools, resources, prompts) stops with an error past this many pages…
pub const MAX_LIST_PAGES: usize = 100;
/// …or this many items in all…
pub const MAX_LIST_ITEMS: usize = 10_000;
/// …or at a cursor longer than this, or one the server already gave in the same listing.
pub const MAX_CURSOR_BYTES: usize = 8 * 1024;

/// Which of a connection's prompt and resource listings the server said changed
/// (`notifications/prompts/list_changed`, `notifications/resources/list_changed`, which also
/// covers templates). Shared with the client handler that hears the notifications.
#[derive(Debug, Default)]
pub struct ContextStale {
    pub(crate) prompts: AtomicBool,
    pub(crate) resources: AtomicBool,
    pub(crate) templates: AtomicBool,
}

impl ContextStale {
    pub(crate) fn prompts_changed(&self) {
        self.prompts.store(true, Ordering::SeqCst);
    }

    pub(crate) fn resources_changed(&self) {
        self.resources.store(true, Ordering::SeqCst);
        self.templates.store(true, Ordering::SeqCst);
    }
}

/// One cached listing (prompts, resources or templates): fetched once and kept until the
/// server says it changed, a fetch fails, or (where the server cannot tell the host: a
/// 2026-07-28 server sends list changes only on `subscriptions/listen` streams, and the host
/// holds none for them) it is older than a maximum age. So a client's burst of reads or
/// prompts does not make the host list every page of every server for each one. A reconnect
/// starts afresh (a new connection has a new cache).
pub(crate) struct Listing<T> {
    items: Mutex<Option<(Vec<T>, Instant)>>,
    /// One refresh at a time: a caller that comes while another refreshes waits for its list.
    refresh: tokio::sync::Mutex<()>,
}

/// How long a 2026-07-28 server's prompt and resource listings are kept.
pub(crate) const MODERN_LISTING_MAX_AGE: Duration = Duration::from_secs(30);

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Listing {
            items: Mutex::new(None),
            refresh: tokio::sync::Mutex::new(()),
        }
    }
}

impl<T: Clone> Listing<T> {
    /// The cached items, or what `fetch` lists when there are none, `stale` was set (it is
    /// cleared first, so a change announced during the fetch is not lost) or they are older
    /// than `max_age`. A failed fetch leaves the listing stale, to be tried again next time.
    pub(crate) async fn get<F, Fut>(
        &self,
        stale: &AtomicBool,
        max_age: Option<Duration>,
        fetch: F,
    ) -> Result<Vec<T>, HostError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Vec<T>, HostError>>,
    {
        let _refreshing = self.refresh.lock().await;
        if !stale.swap(false, Ordering::SeqCst)
            && let Some((items, at)) = self.items.lock().expect("listing poisoned").clone()
            && max_age.is_none_or(|age| at.elapsed() < age)
        {
            return Ok(items);
        }
        match fetch().await {
            Ok(items) => {
                *self.items.lock().expect("listing poisoned") =
                    Some((items.clone(), Instant::now()));
                Ok(items)
            }
            Err(error) => {
                stale.store(true, Ordering::SeqCst);
                Err(error)
            }
        }
    }
}

/// A listed tool and what the gate says about it.
#[derive(Debug, Clone)]
pub struct GatedTool {
    pub tool: Tool,
    pub status: ToolStatus,
}

impl Connection {
    /// Every tool, across all pages. Cached until the server sends `list_changed`; a refresh
    /// that fails (the request, or recording a pin mismatch it found) is tried again next time.
    pub async fn tools(&self) -> Result<Vec<Tool>, HostError> {
        // One refresh at a time: a caller that came while another refreshed waits for its
        // list instead of taking the cache the other just found stale (two front ends, or a
        // gateway listing while a list_changed is handled).
        let _refreshing = self.tools_refresh.lock().await;
        if !self.tools_stale.swap(false, Ordering::SeqCst)
            && let Some(tools) = self
                .tools_cache
                .lock()
                .expect("tool cache poisoned")
                .clone()
        {
            return Ok(tools);
        }
        let mut signed_in = false;
        let refreshed = loop {
            self.clear_challenge();
            let peer = self.service.peer();
            let listed = self
                .list_pages("tools/list", |cursor| async move {
                    peer.list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
                        .await
                        .map(|page| (page.tools, page.next_cursor))
                })
                .await;
            match listed {
                // A server that wants a (new) sign-in for listing: once, then list again.
                Err(HostError::Transport { .. }) if !signed_in => match self.reauthorize().await {
                    Ok(true) => signed_in = true,
                    Ok(false) => break listed,
                    Err(e) => break Err(e),
                },
                listed => break listed,
            }
        }
        .and_then(|tools| {
            self.observe(&tools)?;
            Ok(tools)
        });
        match refreshed {
            Ok(tools) => {
                *self.tools_cache.lock().expect("tool cache poisoned") = Some(tools.clone());
                Ok(tools)
            }
            Err(error) => {
                // The cached list is no longer known to be current.
                self.tools_stale.store(true, Ordering::SeqCst);
                Err(error)
            }
        }
    }

    /// Gives the gate the tool definitions just listed, and records new pin mismatches.
    fn observe(&self, tools: &[Tool]) -> Result<(), HostError> {
        self.observe_listing::<Tools>(&self.tool_gate, &definitions(tools))
    }

    /// Gives `gate` (of `P`) the definitions just listed, and records the pin mismatches not
    /// recorded before (a mismatch counts as recorded only once its record is on disk).
    pub(super) fn observe_listing<P: Pinned>(
        &self,
        gate: &Mutex<ToolGate>,
        definitions: &[serde_json::Value],
    ) -> Result<(), HostError> {
        let mismatches = gate.lock().expect("gate poisoned").observe(definitions);
        let mut seen = self.mismatches_seen.lock().expect("mismatch set poisoned");
        let new: Vec<_> = mismatches
            .into_iter()
            .filter(|m| !seen.contains(&(P::KIND, m.tool.clone(), m.actual.clone())))
            .collect();
        self.gatekeeper
            .record_pin_mismatches::<P>(&self.verdict, &new)?;
        seen.extend(new.into_iter().map(|m| (P::KIND, m.tool, m.actual)));
        Ok(())
    }

    /// Every listed tool with the gate's view of it: allowed, hidden (not on the allow-list)
    /// or blocked (its pinned definition changed). Only `Allowed` tools can be called.
    pub async fn gated_tools(&self) -> Result<Vec<GatedTool>, HostError> {
        let tools = self.tools().await?;
        let gate = self.tool_gate.lock().expect("tool gate poisoned");
        Ok(tools
            .into_iter()
            .map(|tool| GatedTool {
                status: gate.status(&tool.name),
                tool,
            })
            .collect())
    }

    /// The tools that may be called.
    pub async fn allowed_tools(&self) -> Result<Vec<Tool>, HostError> {
        Ok(self
            .gated_tools()
            .await?
            .into_iter()
            .filter(|t| t.status == ToolStatus::Allowed)
            .map(|t| t.tool)
            .collect())
    }

    /// Approves tools as the user (warn posture only): pins their current definitions, so a
    /// later change blocks them again. `names` empty means every listed tool. Returns the
    /// pins recorded.
    pub async fn approve_tools(
        &self,
        names: &[String],
    ) -> Result<Vec<(String, String)>, HostError> {
        self.approve_tools_reviewed(names, &Review::ALONE).await
    }

    /// As [`Connection::approve_tools`], reviewing each definition against `review` (other
    /// servers' tools, the person's acknowledgement of high findings) first.
    pub async fn approve_tools_reviewed(
        &self,
        names: &[String],
        review: &Review<'_>,
    ) -> Result<Vec<(String, String)>, HostError> {
        let tools = self.tools().await?;
        self.approve_listed::<Tools>(&self.tool_gate, &definitions(&tools), names, review)
    }

    /// Approves the listed definitions of `P` named in `names` (every one when empty) with
    /// their pins, once reviewed, then puts a fresh gate that has seen them in `gate`. The
    /// definitions reviewed are the ones pinned: the same listing.
    pub(super) fn approve_listed<P: Pinned<Entry = NamedPin>>(
        &self,
        gate: &Mutex<ToolGate>,
        definitions: &[serde_json::Value],
        names: &[String],
        review: &Review<'_>,
    ) -> Result<Vec<NamedPin>, HostError> {
        let pins = self.pins_to_approve(definitions, names, P::KIND)?;
        self.gatekeeper
            .approve_reviewed::<P>(&self.verdict, &pins, definitions, review)?;
        let mut fresh = self.gatekeeper.gate::<P>(&self.verdict);
        let _ = fresh.observe(definitions);
        *gate.lock().expect("gate poisoned") = fresh;
        Ok(pins)
    }

    /// The pins of the listed definitions (tools or prompts, as JSON) whose names are in
    /// `names`, every one when `names` is empty; a name the server does not list is refused,
    /// since there is no definition to approve.
    pub(super) fn pins_to_approve(
        &self,
        definitions: &[serde_json::Value],
        names: &[String],
        kind: Kind,
    ) -> Result<Vec<(String, String)>, HostError> {
        let pins: Vec<(String, String)> = definitions
            .iter()
            .filter_map(|value| {
                let name = value.get("name")?.as_str()?;
                (names.is_empty() || names.iter().any(|n| n == name))
                    .then(|| (name.to_string(), tool_pin(value)))
            })
            .collect();
        let (noun, reason) = (kind.noun(), ErrorCode::from(kind.not_listed()));
        match names.iter().find(|n| !pins.iter().any(|(p, _)| p == *n)) {
            Some(missing) => Err(HostError::ToolDenied {
                server: self.server.clone(),
                tool: missing.clone(),
                reason,
                detail: format!(
                    "the server does not list a {noun} of exactly this name, so there is no definition to approve"
                ),
            }),
            None => Ok(pins),
        }
    }

    /// Every page of a listing, bounded: a server that repeats a cursor, sends one too long, or
    /// never stops ends the listing with an error, and nothing half-listed is returned as whole.
    pub(super) async fn list_pages<T, F, Fut>(
        &self,
        what: &str,
        mut page: F,
    ) -> Result<Vec<T>, HostError>
    where
        F: FnMut(Option<String>) -> Fut,
        Fut: Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
    {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..MAX_LIST_PAGES {
            let (mut batch, next) = self
                .guarded(what, &CallOptions::default(), page(cursor.take()))
                .await?;
            if items.len() + batch.len() > MAX_LIST_ITEMS {
                return Err(self.protocol(
                    what,
                    &format!(
                        "the server listed more than {MAX_LIST_ITEMS} items; Gatehouse stops there"
                    ),
                ));
            }
            items.append(&mut batch);
            let Some(next) = next else {
                return Ok(items);
            };
            if next.len() > MAX_CURSOR_BYTES {
                return Err(self.protocol(
                    what,
                    &format!(
                        "the server sent a {}-byte cursor (the limit is {MAX_CURSOR_BYTES}); Gatehouse stops there",
                        next.len()
                    ),
                ));
            }
            if !seen.insert(next.clone()) {
                return Err(self.protocol(
                    what,
                    &format!(
                        "the server repeated the cursor {:?} within one listing, which would never end; Gatehouse stops there",
                        preview(&next)
                    ),
                ));
            }
            cursor = Some(next);
        }
        Err(self.protocol(
            what,
            &format!("the server listed more than {MAX_LIST_PAGES} pages; Gatehouse stops there"),
        ))
    }
}

/// Tool definitions as JSON, the form pins are computed over.
fn definitions(tools: &[Tool]) -> Vec<serde_json::Value> {
    tools
        .iter()
        .map(|t| serde_json::to_value(t).expect("a tool serializes"))
        .collect()
}

/// The start of a server-chosen string, for an error message.
fn preview(text: &str) -> String {
    text.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    #[tokio::test]
    async fn a_listing_is_fetched_once_until_the_server_says_it_changed_or_a_fetch_fails() {
        let listing: Listing<u32> = Listing::default();
        let stale = AtomicBool::new(false);
        let fetches = AtomicUsize::new(0);
        let fetch = |items: Vec<u32>| {
            let fetches = &fetches;
            move || async move {
                fetches.fetch_add(1, Ordering::SeqCst);
                Ok(items)
            }
        };
        assert_eq!(
            listing.get(&stale, None, fetch(vec![1])).await.unwrap(),
            [1]
        );
        // A burst: nothing fetched again.
        for _ in 0..10 {
            assert_eq!(
                listing.get(&stale, None, fetch(vec![9])).await.unwrap(),
                [1]
            );
        }
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
        // list_changed: the next one fetches, and keeps what it got.
        stale.store(true, Ordering::SeqCst);
        assert_eq!(
            listing.get(&stale, None, fetch(vec![2])).await.unwrap(),
            [2]
        );
        assert_eq!(
            listing.get(&stale, None, fetch(vec![3])).await.unwrap(),
            [2]
        );
        assert_eq!(fetches.load(Ordering::SeqCst), 2);
        // A failed fetch is tried again next time instead of serving what may be out of date.
        stale.store(true, Ordering::SeqCst);
        let failed = listing
            .get(&stale, None, || async {
                Err(HostError::Config("the server went away".into()))
            })
            .await;
        assert!(failed.is_err());
        assert!(stale.load(Ordering::SeqCst));
        assert_eq!(
            listing.get(&stale, None, fetch(vec![4])).await.unwrap(),
            [4]
        );
        // Where the server cannot say it changed, a listing older than its age is fetched.
        assert_eq!(
            listing
                .get(&stale, Some(Duration::ZERO), fetch(vec![5]))
                .await
                .unwrap(),
            [5]
        );
        assert_eq!(
            listing
                .get(&stale, Some(Duration::from_secs(3600)), fetch(vec![6]))
                .await
                .unwrap(),
            [5]
        );
    }
}
