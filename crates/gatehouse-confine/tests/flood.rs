//! Bounding the audit of refusals.

use gatehouse_confine::{
    REFUSAL_WINDOW_MS, REFUSALS_RECORDED_PER_WINDOW, RefusalNote, RefusalWindow,
};
use proptest::prelude::*;

const RECORD: RefusalNote = RefusalNote::Record {
    suppressed_before: 0,
};

#[test]
fn the_first_refusals_are_recorded_then_suppressed_until_the_window_ends() {
    let mut w = RefusalWindow::new(3, 1000);
    assert_eq!(w.note(0), RECORD);
    assert_eq!(w.note(10), RECORD);
    assert_eq!(w.note(20), RECORD);
    assert_eq!(w.note(30), RefusalNote::Suppress, "limit reached");
    assert_eq!(w.note(999), RefusalNote::Suppress, "still the same window");
    assert_eq!(w.total(), 5);
    // The first refusal after the window reports what was left out.
    assert_eq!(
        w.note(1000),
        RefusalNote::Record {
            suppressed_before: 2
        }
    );
    assert_eq!(w.note(1001), RECORD);
    assert_eq!(w.total(), 7);
    assert_eq!(w.take_suppressed(), 0);
}

#[test]
fn take_suppressed_reports_once_for_the_final_record() {
    let mut w = RefusalWindow::new(1, 100);
    assert_eq!(w.note(0), RECORD);
    assert_eq!(w.note(1), RefusalNote::Suppress);
    assert_eq!(w.note(2), RefusalNote::Suppress);
    assert_eq!(w.take_suppressed(), 2);
    assert_eq!(w.take_suppressed(), 0, "reported once");
    // Taken ones are not reported again by the next record.
    assert_eq!(w.note(500), RECORD);
    assert_eq!(w.total(), 4);
}

#[test]
fn a_clock_that_goes_back_stays_in_the_window() {
    let mut w = RefusalWindow::new(1, 100);
    assert_eq!(w.note(1000), RECORD);
    assert_eq!(w.note(5), RefusalNote::Suppress);
    assert_eq!(w.note(1099), RefusalNote::Suppress);
    assert_eq!(
        w.note(1100),
        RefusalNote::Record {
            suppressed_before: 2
        }
    );
}

#[test]
fn a_zero_limit_records_nothing_one_by_one() {
    let mut w = RefusalWindow::new(0, 100);
    for t in [0, 50, 200, 10_000] {
        assert_eq!(w.note(t), RefusalNote::Suppress);
    }
    assert_eq!((w.total(), w.take_suppressed()), (4, 4));
}

#[test]
fn the_default_is_the_published_bound() {
    let mut w = RefusalWindow::default();
    for i in 0..REFUSALS_RECORDED_PER_WINDOW {
        assert_eq!(w.note(u64::from(i)), RECORD);
    }
    assert_eq!(w.note(1), RefusalNote::Suppress);
    assert_eq!(
        w.note(REFUSAL_WINDOW_MS),
        RefusalNote::Record {
            suppressed_before: 1
        }
    );
}

proptest! {
    #[test]
    fn every_refusal_is_counted_and_none_is_lost(
        limit in 0u32..5,
        window in 1u64..50,
        steps in prop::collection::vec(0u64..30, 0..200),
    ) {
        let mut w = RefusalWindow::new(limit, window);
        let mut now = 0;
        let (mut recorded, mut reported) = (0u64, 0u64);
        let mut per_window: std::collections::BTreeMap<u64, u32> = Default::default();
        let mut window_start = None::<u64>;
        for step in &steps {
            now += step;
            if let RefusalNote::Record { suppressed_before } = w.note(now) {
                recorded += 1;
                reported += u64::from(suppressed_before);
                let start = match window_start {
                    Some(s) if now - s < window => s,
                    _ => now,
                };
                window_start = Some(start);
                *per_window.entry(start).or_default() += 1;
            }
        }
        let left = u64::from(w.take_suppressed());
        prop_assert_eq!(w.total(), steps.len() as u64);
        prop_assert_eq!(recorded + reported + left, steps.len() as u64);
        prop_assert!(per_window.values().all(|&n| n <= limit));
    }
}
