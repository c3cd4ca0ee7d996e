//! One request pacer per ChatGPT account through the composed machine (issue 26 Found 3,
//! SPEC H7; field notes §1: reads ≥ 45 s apart held, 20 s apart got 429 after ~8 calls,
//! `Retry-After` up to 516 s): snapshot probes of every tab of an account are paced
//! together, a 429 from any source cools the account down, and during the cooldown no
//! backend read goes out and nothing automatic is typed — it goes after.

use ext_core::auto_gate::WakeWithheld;
use ext_core::binding::CatalogWorkspace;
use ext_core::continuity::{
    Continuity, ContinuityInput, ContinuityOutput, PageRecoveryReport, PageReport, ProbeAnswer, ProbeNode, RecoveryCommand, RuntimeAnswer,
    RuntimeCall, RECOVERY_TICK_MS,
};
use ext_core::request_pacer::{CooldownSource, PACE_MS, RETRY_AFTER_CAP_MS};
use ext_core::settle_tracker::{PaneEventKind, SettledStatus};
use ext_core::stale_view::ServerRole;
use proptest::prelude::*;

use crate::continuity::{bound_with_auto, drain, event, idle_page, restart, task, TAB};

const T0: u64 = 1_800_000_000_000;
const TAB2: u32 = 8;
const CONV2: &str = "https://chatgpt.com/c/1c2d3e4f-5061-7283-94a5-b6c7d8e9f0a1";

fn page(tab: u32, account: Option<&str>, generating: bool) -> PageReport {
    let url = if tab == TAB { idle_page().url } else { CONV2.to_owned() };
    PageReport { url, generating, account: account.map(str::to_owned), page_load: format!("load-{tab}"), ..idle_page() }
}

fn frozen(tab: u32) -> PageRecoveryReport {
    PageRecoveryReport {
        page_load: format!("load-{tab}"),
        assistant: true,
        assistant_id: None,
        assistant_len: 40,
        assistant_streaming: true,
        signature: "40:x".into(),
        user_waiting: false,
        send_timeout: false,
        retry_offered: false,
        rate_limited: false,
        ..PageRecoveryReport::default()
    }
}

fn unfinished() -> ProbeAnswer {
    ProbeAnswer::Node(ProbeNode { id: "a2".into(), role: ServerRole::Assistant, text_len: 40, finished: false, update_time_ms: Some(T0) })
}

/// Two ChatGPT conversations in two tabs, Auto on in both, both replies frozen mid-stream,
/// each page of `account`.
fn two_frozen_tabs(account: Option<&str>) -> Continuity {
    let (mut c, _) = bound_with_auto(true);
    c.handle(T0, ContinuityInput::PageReported { tab: TAB2, report: page(TAB2, account, true) });
    c.handle(T0, ContinuityInput::ToggleAuto { tab: TAB2 });
    for tab in [TAB, TAB2] {
        c.handle(T0, ContinuityInput::PageReported { tab, report: page(tab, account, true) });
        c.handle(T0, ContinuityInput::RecoveryFacts { tab, facts: frozen(tab) });
    }
    while c.poll().is_some() {}
    c
}

/// Runs the clock in recovery ticks until `until`, answering each probe with `answer`;
/// returns the probes as (time, tab).
fn run(c: &mut Continuity, from: u64, until: u64, answer: &ProbeAnswer) -> Vec<(u64, u32)> {
    let mut probes = Vec::new();
    let mut now = from;
    while now <= until {
        c.handle_timeout(now);
        while let Some(output) = c.poll() {
            if let ContinuityOutput::Recovery { tab, command: RecoveryCommand::Probe { .. } } = output {
                probes.push((now, tab));
                let page_load = format!("load-{tab}");
                c.handle(now, ContinuityInput::SnapshotResult { tab, page_load, answer: answer.clone() });
            }
        }
        now += RECOVERY_TICK_MS;
    }
    probes
}

fn gaps_at_least(probes: &[(u64, u32)], pace: u64) -> bool {
    probes.windows(2).all(|w| w[1].0 - w[0].0 >= pace)
}

// Found 3: two tabs of one account each stuck; their probes used to go every 15 s per
// conversation (two at once, ~8 a minute together). Now one per 45 s for the account.
#[test]
fn probes_of_two_tabs_of_one_account_are_45_s_apart() {
    let mut c = two_frozen_tabs(Some("user-1"));
    let probes = run(&mut c, T0, T0 + 10 * 60_000, &unfinished());
    assert!(probes.len() >= 8, "still probes: {probes:?}");
    assert!(gaps_at_least(&probes, PACE_MS), "{probes:?}");
    assert!(probes.iter().any(|p| p.1 == TAB) && probes.iter().any(|p| p.1 == TAB2), "both tabs get their turn: {probes:?}");
    // A page that has not named its account yet is paced with the named one (it may be it).
    let mut mixed = two_frozen_tabs(Some("user-1"));
    mixed.handle(T0, ContinuityInput::PageReported { tab: TAB2, report: page(TAB2, None, true) });
    let probes = run(&mut mixed, T0, T0 + 10 * 60_000, &unfinished());
    assert!(gaps_at_least(&probes, PACE_MS), "{probes:?}");
}

// Two accounts are paced apart: one account's slot never holds another's reads back.
#[test]
fn two_accounts_have_a_slot_each() {
    let mut c = two_frozen_tabs(Some("user-1"));
    c.handle(T0, ContinuityInput::PageReported { tab: TAB2, report: page(TAB2, Some("user-2"), true) });
    let probes = run(&mut c, T0, T0 + 5 * 60_000, &unfinished());
    let first = |tab| probes.iter().find(|p| p.1 == tab).map(|p| p.0);
    assert_eq!(first(TAB), first(TAB2), "both accounts probe as soon as suspect: {probes:?}");
    for tab in [TAB, TAB2] {
        let own: Vec<_> = probes.iter().copied().filter(|p| p.1 == tab).collect();
        assert!(gaps_at_least(&own, PACE_MS), "{own:?}");
    }
}

// Found 3: a probe answered 429 with `Retry-After: 516` cools the account for 516 s — no
// probe from any of its tabs until then, the HUD says until when — and the cooldown
// survives a worker restart (was: a fixed 30 s back-off for the one conversation).
#[test]
fn a_429_with_retry_after_holds_every_probe_of_the_account_for_that_long() {
    let mut c = two_frozen_tabs(Some("user-1"));
    let probes = run(&mut c, T0, T0 + 40_000, &unfinished());
    let (at, tab) = *probes.first().expect("a probe once suspect");
    c.handle(
        at + 1,
        ContinuityInput::RateLimited {
            tab,
            page_load: format!("load-{tab}"),
            source: CooldownSource::RetryAfter,
            retry_after_ms: Some(516_000),
        },
    );
    let until = at + 1 + 516_000;
    for t in [TAB, TAB2] {
        assert_eq!(c.page_view(t).and_then(|v| v.cooldown_until), Some(until), "every page of the account shows it");
    }
    let mut c = restart(&c, at + 2);
    for t in [TAB, TAB2] {
        c.handle(at + 2, ContinuityInput::PageReported { tab: t, report: page(t, Some("user-1"), true) });
        c.handle(at + 2, ContinuityInput::RecoveryFacts { tab: t, facts: frozen(t) });
    }
    while c.poll().is_some() {}
    let after = run(&mut c, at + 2, until + 60_000, &unfinished());
    assert!(after.iter().all(|p| p.0 >= until), "a probe during the cooldown: {after:?}");
    assert!(!after.is_empty(), "probes again after it");
    // A `Retry-After` of a day is held for the cap, one hour.
    let mut capped = two_frozen_tabs(Some("user-1"));
    capped.handle(
        T0,
        ContinuityInput::RateLimited {
            tab: TAB,
            page_load: "load-7".into(),
            source: CooldownSource::RetryAfter,
            retry_after_ms: Some(86_400_000),
        },
    );
    assert_eq!(capped.page_view(TAB).and_then(|v| v.cooldown_until), Some(T0 + RETRY_AFTER_CAP_MS));
}

// Found 3 (H7): a 429 seen in the page's Resource Timing — a request of ChatGPT's own app —
// starts the cooldown: the settle's wake waits (it was typed at once), the HUD names the
// reason and the time, and the wake goes once the cooldown ends.
#[test]
fn a_resource_timing_429_holds_a_settle_wake_until_the_cooldown_ends() {
    let (mut c, mut log) = bound_with_auto(true);
    c.handle(
        1,
        ContinuityInput::RateLimited { tab: TAB, page_load: "load-1".into(), source: CooldownSource::ResourceTiming, retry_after_ms: None },
    );
    c.handle(2, event(1, PaneEventKind::Working));
    c.handle(3, event(2, PaneEventKind::Settled(SettledStatus::Done)));
    drain(&mut c, 3, &[task("t1")], &mut log);
    assert!(log.iter().all(|l| !l.starts_with("deliver")), "typed during the cooldown: {log:?}");
    let view = c.page_view(TAB).expect("view");
    assert_eq!(view.withheld.map(|w| w.code), Some(WakeWithheld::RateLimited));
    assert_eq!(view.cooldown_until, Some(30_001), "no Retry-After: the first back-off step");
    let due = c.next_deadline().expect("the cooldown's end");
    assert!(due <= 30_001);
    c.handle_timeout(30_001);
    drain(&mut c, 30_001, &[task("t1")], &mut log);
    assert_eq!(log.iter().filter(|l| l.starts_with("deliver")).count(), 1, "{log:?}");
    assert_eq!(c.page_view(TAB).and_then(|v| v.cooldown_until), None);
}

fn agent_output(seq: u64, tail: &str) -> ContinuityInput {
    ContinuityInput::AgentOutput {
        workspace_id: "w1".into(),
        pane_id: "w1:p1".into(),
        agent: Some("claude".into()),
        tail: tail.into(),
        seq,
        stale: false,
    }
}

fn run_until(c: &mut Continuity, until: u64, log: &mut Vec<String>) {
    while let Some(due) = c.next_deadline().filter(|d| *d <= until) {
        c.handle_timeout(due);
        drain(c, due, &[], log);
    }
}

// Found 3: ChatGPT's visible rate-limit notice starts the account's cooldown for every
// write too: new agent output's progress waits (it was typed at once) and goes after it.
// A manual Continue still goes (the user decided; the HUD shows the cooldown).
#[test]
fn the_page_notice_holds_progress_until_the_cooldown_ends_but_not_a_manual_continue() {
    let (mut c, mut log) = bound_with_auto(true);
    c.handle(0, ContinuityInput::ProgressSettings { tick_sec: 5, fallback_sec: 3_600 });
    c.handle(1_000, event(1, PaneEventKind::Working));
    c.handle(2_000, agent_output(2, "claude ready"));
    drain(&mut c, 2_000, &[], &mut log);
    c.handle(
        3_000,
        ContinuityInput::RecoveryFacts {
            tab: TAB,
            facts: PageRecoveryReport { rate_limited: true, assistant_streaming: false, ..frozen(TAB) },
        },
    );
    c.handle(4_000, agent_output(3, "claude ready\nrunning cargo test… 41 passed"));
    drain(&mut c, 4_000, &[], &mut log);
    run_until(&mut c, 32_000, &mut log);
    assert!(log.iter().all(|l| !l.starts_with("deliver")), "progress typed during the cooldown: {log:?}");
    assert_eq!(c.page_view(TAB).and_then(|v| v.cooldown_until), Some(33_000));
    assert_eq!(c.page_view(TAB).and_then(|v| v.withheld).map(|w| w.code), Some(WakeWithheld::RateLimited));
    // The notice is gone; the cooldown ends; the progress goes.
    c.handle(32_500, ContinuityInput::RecoveryFacts { tab: TAB, facts: PageRecoveryReport { assistant_streaming: false, ..frozen(TAB) } });
    run_until(&mut c, 45_000, &mut log);
    assert_eq!(log.iter().filter(|l| l.starts_with("deliver tab=7 id=progress:w1/")).count(), 1, "{log:?}");
    // Manual: a second cooldown, then the user's own Continue is typed anyway.
    let mut manual = bound_with_auto(false).0;
    manual.handle(
        1,
        ContinuityInput::RateLimited {
            tab: TAB,
            page_load: "load-1".into(),
            source: CooldownSource::ResourceTiming,
            retry_after_ms: Some(300_000),
        },
    );
    manual.handle(2, ContinuityInput::Continue { tab: TAB });
    let mut out = Vec::new();
    drain(&mut manual, 2, &[], &mut out);
    assert_eq!(out.iter().filter(|l| l.starts_with("deliver tab=7 id=continue:w1/")).count(), 1, "{out:?}");
}

/// A bound chat with Auto on whose page shows ChatGPT's rate-limit notice at 3 s: the first
/// step's 30 s cooldown holds the account. Returns the notice's report, to show it again.
fn rate_limit_notice_shown() -> (Continuity, Vec<String>, PageRecoveryReport) {
    let (mut c, mut log) = bound_with_auto(true);
    let notice = PageRecoveryReport { rate_limited: true, assistant_streaming: false, ..frozen(TAB) };
    c.handle(3_000, ContinuityInput::RecoveryFacts { tab: TAB, facts: notice.clone() });
    drain(&mut c, 3_000, &[], &mut log);
    assert_eq!(c.page_view(TAB).and_then(|v| v.cooldown_until), Some(33_000));
    (c, log, notice)
}

// Leftovers of issue 26: ChatGPT's rate-limit notice that stays on the page is one 429. It
// counts when it appears; while it stays, every report of it changes nothing and each
// cooldown's end holds the account again for the same step (nothing automatic is typed
// under it). The next real 429 after it is the second step, not the cap. Failed before: each
// cooldown end stepped the back-off (30 s, then 60 s, 120 s) and each report ≥ 10 s apart
// stepped the recovery planner's, as if every look were a new 429.
#[test]
fn a_notice_that_stays_on_the_page_counts_once() {
    let (mut c, mut log, notice) = rate_limit_notice_shown();
    let mut now = 3_000;
    while now < 300_000 {
        now += 15_000;
        run_until(&mut c, now, &mut log);
        let facts = PageRecoveryReport { signature: format!("{now}:x"), ..notice.clone() };
        c.handle(now, ContinuityInput::RecoveryFacts { tab: TAB, facts });
        drain(&mut c, now, &[], &mut log);
        let until = c.page_view(TAB).and_then(|v| v.cooldown_until);
        assert!(until.is_some_and(|u| u > now && u - now <= 30_000), "at +{now} the notice holds for one step: {until:?}");
    }
    let steps: Vec<u64> = c.snapshot_value()["recovery"]
        .as_object()
        .map(|planners| planners.values().filter_map(|p| p["rate_limit"]["step"].as_u64()).collect())
        .unwrap_or_default();
    assert_eq!(steps, [1], "the recovery planner counted the notice once");
    // The notice goes; the cooldown ends; a new 429 is the second step (60 s).
    c.handle(now, ContinuityInput::RecoveryFacts { tab: TAB, facts: PageRecoveryReport { assistant_streaming: false, ..frozen(TAB) } });
    run_until(&mut c, now + 31_000, &mut log);
    now += 31_000;
    assert_eq!(c.page_view(TAB).and_then(|v| v.cooldown_until), None, "the cooldown ended with the notice");
    let rate_limited =
        ContinuityInput::RateLimited { tab: TAB, page_load: "load-7".into(), source: CooldownSource::ResourceTiming, retry_after_ms: None };
    c.handle(now, rate_limited);
    assert_eq!(c.page_view(TAB).and_then(|v| v.cooldown_until), Some(now + 60_000));
}

/// What the property test feeds.
#[derive(Debug, Clone)]
enum Op {
    /// Time passes (ms), timers fire.
    Wait(u64),
    /// A tab's reply freezes mid-stream (suspect after the stall time) or streams on.
    Stream { tab: u32, frozen: bool },
    /// A page reports a 429 (Resource Timing / notice), with or without `Retry-After`.
    RateLimited { tab: u32, retry_after_s: Option<u64>, notice: bool },
    /// The workspace works and settles (a wake is due).
    Settle,
    /// New agent output while working (progress is due).
    Output,
    /// A page goes idle (its composer free).
    Idle { tab: u32 },
    /// The next probe answer is a 429 (with `Retry-After` in s) or a node.
    NextProbe429(Option<u64>),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let tab = prop_oneof![Just(TAB), Just(TAB2)];
    let op = prop_oneof![
        4 => (1u64..90_000).prop_map(Op::Wait),
        2 => (tab.clone(), any::<bool>()).prop_map(|(tab, frozen)| Op::Stream { tab, frozen }),
        1 => (tab.clone(), prop::option::of(0u64..900), any::<bool>()).prop_map(|(tab, retry_after_s, notice)| Op::RateLimited { tab, retry_after_s, notice }),
        1 => Just(Op::Settle),
        1 => Just(Op::Output),
        2 => tab.prop_map(|tab| Op::Idle { tab }),
        1 => prop::option::of(0u64..900).prop_map(Op::NextProbe429),
    ];
    prop::collection::vec(op, 1..60)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    /// Issue 26 acceptance 3: across any interleaving of two tabs of one account, probes of
    /// the account are never closer than the pacing interval, none goes during a cooldown,
    /// and nothing automatic is typed into a page of the account during a cooldown.
    #[test]
    fn requests_are_paced_per_account_and_nothing_automatic_is_typed_in_a_cooldown(ops in ops(), named in any::<bool>()) {
        let account = named.then_some("user-1");
        let mut c = two_frozen_tabs(account);
        c.handle(T0, ContinuityInput::ProgressSettings { tick_sec: 5, fallback_sec: 3_600 });
        let mut now = T0;
        let mut last_probe: Option<u64> = None;
        let mut next_answer = unfinished();
        let mut seq = 0u64;
        let mut working = false;
        for op in ops {
            // The cooldown in force as this step starts (what every page of the account shows).
            let cooling_before = c.page_view(TAB).and_then(|v| v.cooldown_until);
            match op {
                Op::Wait(ms) => {
                    let until = now + ms;
                    while let Some(due) = c.next_deadline().filter(|d| *d <= until) {
                        now = due.max(now);
                        c.handle_timeout(now);
                        check(&mut c, now, cooling_before.filter(|u| *u > now), &mut last_probe, &mut next_answer)?;
                    }
                    now = until;
                    c.handle_timeout(now);
                }
                Op::Stream { tab, frozen: f } => {
                    let facts = if f { frozen(tab) } else { PageRecoveryReport { signature: format!("{now}:y"), assistant_len: 41, ..frozen(tab) } };
                    c.handle(now, ContinuityInput::PageReported { tab, report: page(tab, account, true) });
                    c.handle(now, ContinuityInput::RecoveryFacts { tab, facts });
                }
                Op::RateLimited { tab, retry_after_s, notice } => {
                    if notice {
                        c.handle(now, ContinuityInput::RecoveryFacts { tab, facts: PageRecoveryReport { rate_limited: true, assistant_streaming: false, ..frozen(tab) } });
                    } else {
                        let source = if retry_after_s.is_some() { CooldownSource::RetryAfter } else { CooldownSource::ResourceTiming };
                        c.handle(now, ContinuityInput::RateLimited { tab, page_load: format!("load-{tab}"), source, retry_after_ms: retry_after_s.map(|s| s * 1000) });
                    }
                }
                Op::Settle => {
                    seq += 2;
                    c.handle(now, event(seq - 1, PaneEventKind::Working));
                    c.handle(now, event(seq, PaneEventKind::Settled(SettledStatus::Idle)));
                    working = false;
                }
                Op::Output => {
                    if !working {
                        seq += 1;
                        c.handle(now, event(seq, PaneEventKind::Working));
                        working = true;
                    }
                    seq += 1;
                    c.handle(now, agent_output(seq, &format!("line {seq}")));
                }
                Op::Idle { tab } => c.handle(now, ContinuityInput::PageReported { tab, report: page(tab, account, false) }),
                Op::NextProbe429(retry) => {
                    next_answer = ProbeAnswer::Failed("http_429".into());
                    if let Some(s) = retry {
                        // The shell feeds the header first (ext-shell driver), then the answer.
                        next_answer = ProbeAnswer::Failed(format!("http_429:{s}"));
                    }
                }
            }
            check(&mut c, now, cooling_before.filter(|u| *u > now), &mut last_probe, &mut next_answer)?;
        }
    }
}

/// Drains one step's outputs: every probe at least the interval after the last one and
/// outside a cooldown, no automatic delivery while `cooling` (the cooldown in force before
/// the step) runs; probes answered as the test says, other calls neutrally.
fn check(
    c: &mut Continuity,
    now: u64,
    cooling: Option<u64>,
    last_probe: &mut Option<u64>,
    next_answer: &mut ProbeAnswer,
) -> Result<(), TestCaseError> {
    // A probe's answer comes back after the fetch, as in the shell: the outputs already
    // given (a wake typed in the same step) were carried out before the 429 was known.
    let mut answers: Vec<(_, String, ProbeAnswer, Option<u64>)> = Vec::new();
    loop {
        for (tab, page_load, answer, retry_after_s) in answers.drain(..) {
            if let Some(secs) = retry_after_s {
                c.handle(
                    now,
                    ContinuityInput::RateLimited {
                        tab,
                        page_load: page_load.clone(),
                        source: CooldownSource::RetryAfter,
                        retry_after_ms: Some(secs * 1000),
                    },
                );
            }
            c.handle(now, ContinuityInput::SnapshotResult { tab, page_load, answer });
        }
        let mut outputs = 0;
        while let Some(output) = c.poll() {
            outputs += 1;
            match output {
                ContinuityOutput::Recovery { tab, command: RecoveryCommand::Probe { .. } } => {
                    if let Some(last) = *last_probe {
                        prop_assert!(now - last >= PACE_MS, "probe at +{} after one at +{}", now - T0, last - T0);
                    }
                    prop_assert!(cooling.is_none(), "probe at +{} during a cooldown until +{:?}", now - T0, cooling.map(|u| u - T0));
                    let in_cooldown = c.page_view(tab).and_then(|v| v.cooldown_until);
                    prop_assert!(in_cooldown.is_none(), "probe asked while the account cools down");
                    *last_probe = Some(now);
                    let answer = std::mem::replace(next_answer, unfinished());
                    let page_load = format!("load-{tab}");
                    let (answer, retry_after_s) = match answer {
                        ProbeAnswer::Failed(why) if why.starts_with("http_429:") => {
                            let secs: u64 = why["http_429:".len()..].parse().unwrap_or(0);
                            (ProbeAnswer::Failed("http_429".into()), Some(secs))
                        }
                        other => (other, None),
                    };
                    answers.push((tab, page_load, answer, retry_after_s));
                }
                ContinuityOutput::Deliver { tab, id, .. } => {
                    prop_assert!(
                        cooling.is_none(),
                        "{id} typed into tab {tab} at +{} during a cooldown until +{:?}",
                        now - T0,
                        cooling.map(|u| u - T0)
                    );
                    let shown = c.page_view(tab).and_then(|v| v.cooldown_until);
                    prop_assert!(shown.is_none(), "{id} typed while the HUD says the account cools down");
                }
                ContinuityOutput::Request { id, call } => {
                    let answer = match call {
                        RuntimeCall::InboxPending { .. } => RuntimeAnswer::InboxPending { tasks: vec![task("t1")], more: false },
                        RuntimeCall::Workspaces => RuntimeAnswer::Workspaces {
                            workspaces: vec![CatalogWorkspace { workspace_id: "w1".into(), label: "api".into() }],
                        },
                        RuntimeCall::InboxAck { .. } | RuntimeCall::InboxCounts { .. } => {
                            RuntimeAnswer::Counts { counts: Default::default() }
                        }
                        _ => RuntimeAnswer::Subscribed,
                    };
                    c.handle(now, ContinuityInput::Answered { id, result: Ok(answer) });
                }
                ContinuityOutput::QueueRead { op } => c.handle(now, ContinuityInput::QueueRead { op, stored: Ok(None) }),
                _ => {}
            }
        }
        if outputs == 0 && answers.is_empty() {
            return Ok(());
        }
    }
}

// Review 35 L4: which page load's notice was counted lived in memory only; after a worker
// restart whose persisted cooldown had ended, the notice still on screen counted as a new
// 429 (one more back-off step per restart). Now it is persisted: the same notice on the same
// page load holds the account again for the current step, counted once.
// Failed before: a 60 s cooldown (the second step) and the planner's step 2.
#[test]
fn a_notice_still_shown_after_a_worker_restart_is_not_a_new_429() {
    let (c, mut log, notice) = rate_limit_notice_shown();
    // The worker sleeps past the cooldown's end, then starts again; the page reports again.
    let now = 100_000;
    let mut c = restart(&c, now);
    c.handle(now, ContinuityInput::LinkUp);
    run_until(&mut c, now, &mut log);
    let shown = c.page(TAB).cloned().unwrap_or_else(idle_page);
    c.handle(now, ContinuityInput::PageReported { tab: TAB, report: shown });
    c.handle(now, ContinuityInput::RecoveryFacts { tab: TAB, facts: notice });
    drain(&mut c, now, &[], &mut log);
    assert_eq!(c.page_view(TAB).and_then(|v| v.cooldown_until), Some(now + 30_000), "held again for the same step");
    let steps: Vec<u64> = c.snapshot_value()["recovery"]
        .as_object()
        .map(|planners| planners.values().filter_map(|p| p["rate_limit"]["step"].as_u64()).collect())
        .unwrap_or_default();
    assert_eq!(steps, [1], "the recovery planner counted the notice once");
}
