//! The 429 back-off (SPEC H7).

use ext_core::rate_limit::{RateLimit, COOLDOWNS_MS, COUNT_WINDOW_MS, RESET_AFTER_MS};
use proptest::prelude::*;

// R: H7 — 30 s, 60 s, 120 s and no further; a burst counts once; quiet resets the steps.
#[test]
fn cooldowns_step_up_to_the_cap_and_a_burst_counts_once_h7() {
    let mut r = RateLimit::default();
    assert_eq!(r.cooling_until(0), None);
    assert!(r.observe(1_000));
    assert!(!r.observe(1_500), "same burst");
    assert_eq!(r.cooling_until(2_000), Some(31_000));
    assert!(r.observe(40_000));
    assert_eq!(r.cooling_until(40_000), Some(100_000));
    assert!(r.observe(110_000));
    assert_eq!(r.cooling_until(110_000), Some(230_000));
    assert!(r.observe(240_000));
    assert_eq!(r.cooling_until(240_000), Some(360_000), "capped at 120 s");
    assert_eq!(r.cooling_until(360_000), None);
    assert!(r.observe(240_000 + RESET_AFTER_MS));
    assert_eq!(r.cooling_until(240_000 + RESET_AFTER_MS), Some(240_000 + RESET_AFTER_MS + 30_000), "starts again after quiet");
}

proptest! {
    /// H7: the cooldown never exceeds the cap from the last 429, never shortens while it
    /// runs, and at most one 429 counts per window.
    #[test]
    fn the_cooldown_is_bounded_and_never_shortens(gaps in prop::collection::vec(0u64..200_000, 1..40)) {
        let mut r = RateLimit::default();
        let mut now = 0;
        let mut counted: Vec<u64> = Vec::new();
        for gap in gaps {
            let before = r.cooling_until(now);
            now += gap;
            if r.observe(now) {
                counted.push(now);
            }
            let until = r.cooling_until(now).expect("a cooldown runs right after a 429");
            prop_assert!(until <= now + COOLDOWNS_MS[2]);
            if let Some(b) = before.filter(|b| *b > now) {
                prop_assert!(until >= b, "shortened");
            }
        }
        prop_assert!(counted.windows(2).all(|w| w[1] - w[0] >= COUNT_WINDOW_MS));
    }
}
