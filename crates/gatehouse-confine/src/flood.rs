//! Bounding the audit of refused connections: a server that hammers a refused host gets its first
//! refusals recorded one by one, then one record per window saying how many were left out. Pure:
//! the caller passes the time in milliseconds.

/// Refusals recorded one by one in each window.
pub const REFUSALS_RECORDED_PER_WINDOW: u32 = 20;
/// The window's length.
pub const REFUSAL_WINDOW_MS: u64 = 60_000;

/// Counts refusals and decides which are recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusalWindow {
    limit: u32,
    window_ms: u64,
    /// When the current window started; None before the first refusal.
    started_ms: Option<u64>,
    recorded_in_window: u32,
    suppressed: u32,
    total: u64,
}

/// What to do with one refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalNote {
    /// Record it; `suppressed_before` refusals since the last record were left out.
    Record { suppressed_before: u32 },
    /// Leave it out (counted; reported by the next record or [`RefusalWindow::take_suppressed`]).
    Suppress,
}

impl RefusalWindow {
    /// At most `limit` records per `window_ms`. A limit of 0 records nothing one by one.
    pub fn new(limit: u32, window_ms: u64) -> Self {
        RefusalWindow {
            limit,
            window_ms,
            started_ms: None,
            recorded_in_window: 0,
            suppressed: 0,
            total: 0,
        }
    }

    /// Counts one refusal at `now_ms` and says whether to record it.
    pub fn note(&mut self, now_ms: u64) -> RefusalNote {
        self.total = self.total.saturating_add(1);
        // A clock that went back counts as still inside the window (saturating_sub gives 0).
        let expired = self
            .started_ms
            .is_none_or(|start| now_ms.saturating_sub(start) >= self.window_ms);
        if expired {
            self.started_ms = Some(now_ms);
            self.recorded_in_window = 0;
        }
        if self.recorded_in_window < self.limit {
            self.recorded_in_window += 1;
            RefusalNote::Record {
                suppressed_before: std::mem::take(&mut self.suppressed),
            }
        } else {
            self.suppressed = self.suppressed.saturating_add(1);
            RefusalNote::Suppress
        }
    }

    /// Refusals ever noted, recorded or not.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Refusals left out and not yet reported by a record; for the final record when the server
    /// stops. Resets the count.
    pub fn take_suppressed(&mut self) -> u32 {
        std::mem::take(&mut self.suppressed)
    }
}

impl Default for RefusalWindow {
    fn default() -> Self {
        RefusalWindow::new(REFUSALS_RECORDED_PER_WINDOW, REFUSAL_WINDOW_MS)
    }
}
