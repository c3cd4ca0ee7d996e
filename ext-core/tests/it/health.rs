//! Page health meters (SPEC H1–H4).

use ext_core::health::{Activity, HealthLevel, HealthMeter, HealthSample, HEAP_CRITICAL_BYTES, QUIET_MS, SUSTAINED_MS};
use proptest::prelude::*;

fn storm() -> HealthSample {
    // 500 callbacks in 5 s = 6 000 per minute: high.
    HealthSample { callbacks: 500, ..HealthSample::default() }
}

fn calm() -> HealthSample {
    HealthSample { callbacks: 5, drift_ms: 40, ..HealthSample::default() }
}

// R: H1 — one spike is recorded, never acted on; pressure that lasts makes a live-turn
// reload eligible only without assistant progress.
#[test]
fn a_spike_is_recorded_and_only_sustained_pressure_counts_h1_h3() {
    let mut m = HealthMeter::default();
    m.sample(0, calm(), Activity::default());
    m.sample(5_000, storm(), Activity::default());
    m.sample(10_000, calm(), Activity::default());
    assert_eq!(m.spikes(), 1);
    assert!(!m.sustained(10_000));
    assert!(!m.live_turn_reload_eligible(60_000, None));
    assert_eq!(m.level(10_000), HealthLevel::Warn, "the window shows it");
    let mut t = 15_000;
    while t <= 15_000 + SUSTAINED_MS {
        m.sample(t, storm(), Activity { busy: true, ..Activity::default() });
        t += 5_000;
    }
    assert!(m.sustained(t - 5_000));
    assert!(m.live_turn_reload_eligible(t - 5_000, Some(0)));
    assert!(!m.live_turn_reload_eligible(t - 5_000, Some(t - 6_000)), "the assistant still progresses");
    assert_eq!(m.level(t), HealthLevel::High);
}

// R: H4 — a critical heap allows a maintenance reload only after quiet; input, a tool, a
// card or an unconfirmed delivery block it.
#[test]
fn a_critical_heap_waits_for_quiet_and_blockers_hold_it_h4() {
    let heavy = HealthSample { heap_used: Some(HEAP_CRITICAL_BYTES), heap_limit: Some(4 * HEAP_CRITICAL_BYTES), ..calm() };
    let mut m = HealthMeter::default();
    m.sample(0, heavy, Activity { human_input: true, ..Activity::default() });
    assert!(m.heap_critical());
    assert!(!m.maintenance_reload_eligible(QUIET_MS - 1, Activity::default()));
    assert!(m.maintenance_reload_eligible(QUIET_MS, Activity::default()));
    assert!(!m.maintenance_reload_eligible(QUIET_MS, Activity { permission_card: true, ..Activity::default() }));
    let ratio = HealthSample { heap_used: Some(800), heap_limit: Some(1_000), ..calm() };
    let mut r = HealthMeter::default();
    r.sample(0, ratio, Activity::default());
    assert!(r.heap_critical(), "0.8 of the limit");
    let mut n = HealthMeter::default();
    n.sample(0, calm(), Activity::default());
    assert!(!n.heap_critical(), "no heap figures: never critical");
}

proptest! {
    /// H1, H4: a run of high samples shorter than the sustained time never makes a reload
    /// eligible; a maintenance reload is never eligible within the quiet time of a blocker.
    #[test]
    fn spikes_never_act_and_blockers_hold(steps in prop::collection::vec((any::<bool>(), any::<bool>(), 1_000u64..10_000), 1..60)) {
        let mut m = HealthMeter::default();
        let mut now = 0;
        let mut high_run_start: Option<u64> = None;
        let mut last_block: Option<u64> = None;
        for (high, blocked, gap) in steps {
            now += gap;
            let sample = if high { storm() } else { calm() };
            let sample = HealthSample { heap_used: Some(HEAP_CRITICAL_BYTES), ..sample };
            let activity = Activity { busy: blocked, ..Activity::default() };
            m.sample(now, sample, activity);
            high_run_start = if high { high_run_start.or(Some(now)) } else { None };
            if blocked { last_block = Some(now); }
            if m.live_turn_reload_eligible(now, None) {
                prop_assert!(high_run_start.is_some_and(|s| now - s >= SUSTAINED_MS), "acted on a spike");
            }
            if m.maintenance_reload_eligible(now, activity) {
                prop_assert!(!blocked && last_block.is_none_or(|b| now - b >= QUIET_MS));
            }
        }
    }
}
