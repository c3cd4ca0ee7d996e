//! Progress push (SPEC P2–P6, P8) with a simulated clock.

use expect_test::{expect, Expect};
use ext_core::progress_push::{ProgressConfig, ProgressInput, ProgressOutput, ProgressPush};
use ext_core::Millis;
use proptest::prelude::*;

const MIN: Millis = 60_000;

/// A simulated clock around one machine. The "runtime" answers each summary check with the
/// summary in force at that time; the "page" confirms each send unless told otherwise.
struct Sim {
    now: Millis,
    push: ProgressPush,
    summaries: Vec<(Millis, &'static str)>,
    deliver: bool,
    trace: String,
    checks: u32,
}

impl Sim {
    fn new() -> Self {
        Self {
            now: 0,
            push: ProgressPush::new(ProgressConfig::default()),
            summaries: vec![],
            deliver: true,
            trace: String::new(),
            checks: 0,
        }
    }

    fn summary_at(&self, t: Millis) -> Option<String> {
        self.summaries.iter().rev().find(|(from, _)| *from <= t).map(|(_, s)| s.to_string())
    }

    fn input(&mut self, input: ProgressInput) {
        self.trace.push_str(&format!("{:>5}s  <- {input:?}\n", self.now / 1000));
        self.push.handle(self.now, input);
        self.drain();
    }

    fn drain(&mut self) {
        while let Some(out) = self.push.poll() {
            match out {
                ProgressOutput::CheckSummary => {
                    // Checks are frequent: count them instead of printing each.
                    self.checks += 1;
                    let summary = self.summary_at(self.now);
                    self.push.handle(self.now, ProgressInput::SummaryChecked { summary });
                }
                other => {
                    self.trace.push_str(&format!("{:>5}s  => {other:?} (checks so far: {})\n", self.now / 1000, self.checks));
                    let summary = match other {
                        ProgressOutput::SendProgress { summary } => Some(summary),
                        _ => None,
                    };
                    let fallback = summary.is_none();
                    let answer = if self.deliver { ProgressInput::Delivered { summary } } else { ProgressInput::NotDelivered { fallback } };
                    self.push.handle(self.now, answer);
                }
            }
        }
    }

    /// Jumps from deadline to deadline up to `until`.
    fn advance_to(&mut self, until: Millis) {
        while let Some(deadline) = self.push.next_deadline() {
            if deadline > until {
                break;
            }
            self.now = deadline.max(self.now);
            self.push.handle_timeout(self.now);
            self.drain();
        }
        self.now = until;
    }
}

fn check(sim: Sim, expect: Expect) {
    let mut trace = sim.trace;
    trace.push_str(&format!("checks: {}, next deadline: {:?}\n", sim.checks, sim.push.next_deadline()));
    expect.assert_eq(&trace);
}

#[test]
fn ticks_check_but_only_new_summaries_are_sent_and_one_fallback_after_quiet() {
    // P3 (tick = check), P4 (new non-empty summary only), P5 (one fallback after 20 min).
    let mut sim = Sim::new();
    sim.summaries = vec![(0, ""), (3 * MIN, "tests: 40/120 passing"), (9 * MIN, "tests: 120/120 passing")];
    sim.input(ProgressInput::ScopeWorking);
    sim.advance_to(60 * MIN);
    sim.input(ProgressInput::ScopeSettled);
    sim.advance_to(120 * MIN);
    check(
        sim,
        expect![[r#"
            0s  <- ScopeWorking
          180s  => SendProgress { summary: "tests: 40/120 passing" } (checks so far: 3)
          540s  => SendProgress { summary: "tests: 120/120 passing" } (checks so far: 9)
         1740s  => SendFallback { quiet_for_ms: 1200000 } (checks so far: 29)
         3600s  <- ScopeSettled
        checks: 60, next deadline: None
    "#]],
    );
}

#[test]
fn settle_stops_the_checks() {
    // P8: no deadline, no check, no send after settle.
    let mut sim = Sim::new();
    sim.summaries = vec![(0, "compiling")];
    sim.input(ProgressInput::ScopeWorking);
    sim.advance_to(MIN);
    sim.input(ProgressInput::ScopeSettled);
    sim.summaries.push((2 * MIN, "linking"));
    sim.advance_to(90 * MIN);
    check(
        sim,
        expect![[r#"
            0s  <- ScopeWorking
           60s  => SendProgress { summary: "compiling" } (checks so far: 1)
           60s  <- ScopeSettled
        checks: 1, next deadline: None
    "#]],
    );
}

#[test]
fn the_last_sent_summary_survives_a_restart_and_is_not_sent_again() {
    // P6: dedup survives a service-worker restart (snapshot → restore).
    let mut sim = Sim::new();
    sim.summaries = vec![(0, "step 1 of 3 done")];
    sim.input(ProgressInput::ScopeWorking);
    sim.advance_to(2 * MIN);
    let snapshot = serde_json::to_string(&sim.push).expect("serializes");
    sim.push = ext_core::json_read::from_str(&snapshot).expect("restores");
    sim.trace.push_str("  -- service worker restarted --\n");
    sim.advance_to(10 * MIN);
    sim.summaries.push((10 * MIN, "  step 1 of 3 done  "));
    sim.advance_to(12 * MIN);
    sim.summaries.push((12 * MIN, "step 2 of 3 done"));
    sim.advance_to(14 * MIN);
    check(
        sim,
        expect![[r#"
            0s  <- ScopeWorking
           60s  => SendProgress { summary: "step 1 of 3 done" } (checks so far: 1)
          -- service worker restarted --
          780s  => SendProgress { summary: "step 2 of 3 done" } (checks so far: 13)
        checks: 14, next deadline: Some(900000)
    "#]],
    );
}

#[test]
fn an_undelivered_fallback_is_offered_again_one_tick_later_not_in_a_loop() {
    let mut sim = Sim::new();
    sim.deliver = false;
    sim.input(ProgressInput::ScopeWorking);
    sim.advance_to(22 * MIN);
    sim.deliver = true;
    sim.advance_to(60 * MIN);
    check(
        sim,
        expect![[r#"
            0s  <- ScopeWorking
         1200s  => SendFallback { quiet_for_ms: 1200000 } (checks so far: 20)
         1260s  => SendFallback { quiet_for_ms: 1260000 } (checks so far: 21)
         1320s  => SendFallback { quiet_for_ms: 1320000 } (checks so far: 22)
         1380s  => SendFallback { quiet_for_ms: 1380000 } (checks so far: 23)
        checks: 60, next deadline: Some(3660000)
    "#]],
    );
}

#[derive(Debug, Clone)]
enum Op {
    Working,
    Settled,
    Advance(Millis),
    Summary(u8),
    Restart,
    FlipDelivery,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => Just(Op::Working),
        1 => Just(Op::Settled),
        4 => (1..(30 * MIN)).prop_map(Op::Advance),
        3 => (0u8..4).prop_map(Op::Summary),
        1 => Just(Op::Restart),
        1 => Just(Op::FlipDelivery),
    ]
}

proptest! {
    /// P4/P6: across any mix of working/settled phases, summary changes (including blank
    /// ones), failed deliveries and restarts, two delivered summaries in a row are never
    /// equal, nothing is offered while idle, and no message is offered while one is in flight.
    #[test]
    fn never_repeats_an_unchanged_summary(ops in proptest::collection::vec(op(), 1..60)) {
        let texts = ["", "a", "b", "  a "];
        let mut push = ProgressPush::new(ProgressConfig { tick_ms: 60_000, fallback_ms: 600_000 });
        let mut now: Millis = 0;
        let mut current: Option<&str> = None;
        let mut deliver = true;
        let mut delivered: Vec<String> = vec![];
        let mut fallbacks_in_quiet = 0u32;
        for op in ops {
            match op {
                Op::Working => push.handle(now, ProgressInput::ScopeWorking),
                Op::Settled => push.handle(now, ProgressInput::ScopeSettled),
                Op::Summary(i) => current = Some(texts[usize::from(i)]),
                Op::Restart => {
                    let json = serde_json::to_string(&push).expect("serializes");
                    push = ext_core::json_read::from_str(&json).expect("restores");
                }
                Op::FlipDelivery => deliver = !deliver,
                Op::Advance(ms) => {
                    let until = now + ms;
                    while let Some(d) = push.next_deadline() {
                        if d > until { break; }
                        now = now.max(d);
                        push.handle_timeout(now);
                        let mut step = 0;
                        while let Some(out) = push.poll() {
                            step += 1;
                            prop_assert!(step < 10, "runaway outputs");
                            match out {
                                ProgressOutput::CheckSummary => push.handle(now, ProgressInput::SummaryChecked { summary: current.map(str::to_string) }),
                                ProgressOutput::SendProgress { summary } => {
                                    prop_assert!(push.is_working());
                                    prop_assert!(!summary.is_empty());
                                    if deliver {
                                        prop_assert_ne!(delivered.last(), Some(&summary));
                                        delivered.push(summary.clone());
                                        fallbacks_in_quiet = 0;
                                        push.handle(now, ProgressInput::Delivered { summary: Some(summary) });
                                    } else {
                                        push.handle(now, ProgressInput::NotDelivered { fallback: false });
                                    }
                                }
                                ProgressOutput::SendFallback { .. } => {
                                    prop_assert!(push.is_working());
                                    if deliver {
                                        fallbacks_in_quiet += 1;
                                        push.handle(now, ProgressInput::Delivered { summary: None });
                                    } else {
                                        push.handle(now, ProgressInput::NotDelivered { fallback: true });
                                    }
                                }
                            }
                        }
                    }
                    now = until;
                }
            }
            prop_assert!(push.is_working() || push.next_deadline().is_none());
            // One fallback per quiet stretch, re-armed only by a delivered new summary or
            // a new working phase.
            prop_assert!(fallbacks_in_quiet <= 1 || matches!(op, Op::Working));
            if matches!(op, Op::Working) { fallbacks_in_quiet = 0; }
        }
    }
}
