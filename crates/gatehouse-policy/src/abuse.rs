//! Abuse of the elicitation channel, per server session. Time is passed in.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::codes::{self, reason};
use crate::decision::Reason;
use crate::policy::AbusePolicy;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbuseEvent {
    /// An elicitation arrived.
    Elicitation,
    /// An elicitation was denied by policy.
    Denial,
    /// A completion for an id never issued, already completed, or another server's.
    BogusCompletion,
}

/// Sliding-window counters; a `Some(reason)` from [`AbuseTracker::record`] means kill.
#[derive(Debug, Clone)]
pub struct AbuseTracker {
    policy: AbusePolicy,
    elicitations: VecDeque<Instant>,
    denials: VecDeque<Instant>,
    bogus: VecDeque<Instant>,
}

impl AbuseTracker {
    pub fn new(policy: &AbusePolicy) -> AbuseTracker {
        AbuseTracker {
            policy: policy.clone(),
            elicitations: VecDeque::new(),
            denials: VecDeque::new(),
            bogus: VecDeque::new(),
        }
    }

    /// Records an event at `now`; returns the kill reason when a limit is exceeded: more than
    /// `max_*` events of the kind within the last `window_seconds` (an event exactly
    /// `window_seconds` old has left the window). `now` should not go backwards; if it does,
    /// older events count as simultaneous (never as expired).
    pub fn record(&mut self, event: AbuseEvent, now: Instant) -> Option<Reason> {
        let window = Duration::from_secs(self.policy.window_seconds);
        let (events, max, code, what) = match event {
            AbuseEvent::Elicitation => (
                &mut self.elicitations,
                self.policy.max_elicitations,
                codes::ELICITATION_RATE_EXCEEDED,
                "elicitations",
            ),
            AbuseEvent::Denial => (
                &mut self.denials,
                self.policy.max_denials,
                codes::REPEATED_DENIALS,
                "denied elicitations",
            ),
            AbuseEvent::BogusCompletion => (
                &mut self.bogus,
                self.policy.max_bogus_completions,
                codes::BOGUS_COMPLETIONS,
                "completions for elicitations it never issued (or already completed)",
            ),
        };
        while let Some(&oldest) = events.front() {
            if now.saturating_duration_since(oldest) >= window {
                events.pop_front();
            } else {
                break;
            }
        }
        events.push_back(now);
        // Never keep more than one past the limit: memory stays bounded whatever the server does.
        while events.len() > max.saturating_add(1) {
            events.pop_front();
        }
        (events.len() > max).then(|| {
            reason(
                code,
                format!(
                    "the server sent more than {max} {what} within {} s",
                    self.policy.window_seconds
                ),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;

    fn new_tracker(max: usize) -> AbuseTracker {
        let mut policy = Policy::default_policy().abuse;
        policy.window_seconds = 10;
        policy.max_elicitations = max;
        policy.max_denials = max;
        policy.max_bogus_completions = max;
        AbuseTracker::new(&policy)
    }

    #[test]
    fn the_limit_is_more_than_max_within_the_window() {
        for (event, code) in [
            (AbuseEvent::Elicitation, codes::ELICITATION_RATE_EXCEEDED),
            (AbuseEvent::Denial, codes::REPEATED_DENIALS),
            (AbuseEvent::BogusCompletion, codes::BOGUS_COMPLETIONS),
        ] {
            let mut tracker = new_tracker(3);
            let t0 = Instant::now();
            for i in 0..3 {
                assert_eq!(
                    tracker.record(event, t0 + Duration::from_secs(i)),
                    None,
                    "{event:?} #{i}"
                );
            }
            let kill = tracker
                .record(event, t0 + Duration::from_secs(3))
                .expect("fourth kills");
            assert_eq!(kill.code, code);
            assert_eq!(
                kill.decision,
                crate::Decision::KillSessionOnElicitationAbuse
            );
            assert!(kill.detail.contains("more than 3"), "{}", kill.detail);
        }
    }

    #[test]
    fn events_leave_the_window() {
        let mut tracker = new_tracker(2);
        let t0 = Instant::now();
        assert!(tracker.record(AbuseEvent::Elicitation, t0).is_none());
        assert!(
            tracker
                .record(AbuseEvent::Elicitation, t0 + Duration::from_secs(5))
                .is_none()
        );
        // t0 is exactly 10 s old: out of the window, so this is the second, not the third.
        assert!(
            tracker
                .record(AbuseEvent::Elicitation, t0 + Duration::from_secs(10))
                .is_none()
        );
        // Three within 10 s (5, 10, 14.9).
        assert!(
            tracker
                .record(AbuseEvent::Elicitation, t0 + Duration::from_millis(14_900))
                .is_some()
        );
        // Slow and steady never trips.
        let mut slow = new_tracker(2);
        for i in 0..100 {
            assert!(
                slow.record(AbuseEvent::Elicitation, t0 + Duration::from_secs(6 * i))
                    .is_none()
            );
        }
    }

    #[test]
    fn kinds_are_counted_separately() {
        let mut tracker = new_tracker(1);
        let t0 = Instant::now();
        assert!(tracker.record(AbuseEvent::Elicitation, t0).is_none());
        assert!(tracker.record(AbuseEvent::Denial, t0).is_none());
        assert!(tracker.record(AbuseEvent::BogusCompletion, t0).is_none());
        assert!(tracker.record(AbuseEvent::Denial, t0).is_some());
    }

    #[test]
    fn zero_tolerance_kills_on_the_first_event() {
        let mut tracker = new_tracker(0);
        assert!(
            tracker
                .record(AbuseEvent::BogusCompletion, Instant::now())
                .is_some()
        );
    }

    #[test]
    fn a_clock_going_backwards_expires_nothing() {
        let mut tracker = new_tracker(1);
        let t0 = Instant::now() + Duration::from_secs(100);
        assert!(tracker.record(AbuseEvent::Elicitation, t0).is_none());
        assert!(
            tracker
                .record(AbuseEvent::Elicitation, t0 - Duration::from_secs(50))
                .is_some()
        );
    }

    #[test]
    fn memory_stays_bounded() {
        let mut tracker = new_tracker(3);
        let t0 = Instant::now();
        for _ in 0..10_000 {
            tracker.record(AbuseEvent::Elicitation, t0);
        }
        assert!(tracker.elicitations.len() <= 4);
    }
}
