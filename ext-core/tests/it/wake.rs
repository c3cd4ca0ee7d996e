//! The wake scheduler of one scope (SPEC P8, M7, A3, X1) with a simulated clock.

use expect_test::{expect, Expect};
use ext_core::auto_gate::AutoState;
use ext_core::progress_push::ProgressConfig;
use ext_core::settle_tracker::{SettleOutcome, SettleOutput, WakeId};
use ext_core::wake::{render_message, InFlight, Language, MessageKind, PageFacts, SchedulerInput, SchedulerOutput, WakeScheduler};
use ext_core::Millis;
use proptest::prelude::*;

const SEC: Millis = 1000;
const MIN: Millis = 60 * SEC;

fn working(ws: &str) -> SchedulerInput {
    SchedulerInput::Settle(SettleOutput::ScopeWorking { workspace_id: ws.into(), at: 0 })
}

fn settled(ws: &str, seq: u64, outcome: SettleOutcome) -> SchedulerInput {
    SchedulerInput::Settle(SettleOutput::ScopeSettled {
        workspace_id: ws.into(),
        wake_id: WakeId { boot_id: "b1".into(), seq },
        outcome,
        at: 0,
    })
}

fn page(composer_present: bool, generating: bool, human_draft: bool) -> SchedulerInput {
    SchedulerInput::Page(PageFacts {
        composer_present,
        generating,
        permission_card: false,
        human_draft,
        facts_resolved: true,
        app_held: None,
        rate_limited: false,
        delivery_in_flight: false,
    })
}

fn idle_page() -> SchedulerInput {
    page(true, false, false)
}

fn bound(ws: &str) -> SchedulerInput {
    SchedulerInput::BindingChanged { workspace_id: Some(ws.into()), has_delivery_target: true }
}

fn auto(on: bool) -> SchedulerInput {
    SchedulerInput::AutoChanged { auto: if on { AutoState::On } else { AutoState::Off } }
}

struct Sim {
    now: Millis,
    scheduler: WakeScheduler,
    trace: String,
    summary: Option<String>,
    /// The driver's ledger: the record of the message in flight.
    ledger: Option<InFlight>,
}

impl Sim {
    fn new() -> Self {
        Self {
            now: 0,
            scheduler: WakeScheduler::new(ProgressConfig::default(), Language::En),
            trace: String::new(),
            summary: None,
            ledger: None,
        }
    }

    fn at(&mut self, t: Millis) -> &mut Self {
        self.advance_to(t);
        self
    }

    fn input(&mut self, input: SchedulerInput) -> &mut Self {
        self.trace.push_str(&format!("t={:>4}s <- {}\n", self.now / SEC, short(&input)));
        // The driver's facts and answers come from its ledger.
        let input = match input {
            SchedulerInput::Page(facts) => SchedulerInput::Page(PageFacts { delivery_in_flight: self.ledger.is_some(), ..facts }),
            SchedulerInput::DeliveryConfirmed { .. } => SchedulerInput::DeliveryConfirmed { message: self.ledger.take() },
            SchedulerInput::DeliveryFailed { .. } => SchedulerInput::DeliveryFailed { message: self.ledger.take() },
            other => other,
        };
        self.scheduler.handle(self.now, input);
        self.drain();
        self
    }

    fn drain(&mut self) {
        while let Some(out) = self.scheduler.poll() {
            match out {
                SchedulerOutput::CheckSummary { .. } => {
                    let summary = self.summary.clone();
                    self.scheduler.handle(self.now, SchedulerInput::SummaryChecked { summary });
                }
                SchedulerOutput::Deliver { kind, .. } => {
                    self.ledger = Some(InFlight::of(&kind));
                    self.trace.push_str(&format!("t={:>4}s    => DELIVER {kind:?}\n", self.now / SEC));
                }
                SchedulerOutput::WithheldChanged { reason } => {
                    let text = reason
                        .map_or_else(|| "(nothing held back)".to_owned(), |r| crate::locales::en(&ext_core::continuity::withheld_say(r)));
                    self.trace.push_str(&format!("t={:>4}s    => HUD: {text}\n", self.now / SEC));
                }
            }
        }
    }

    fn advance_to(&mut self, until: Millis) {
        while let Some(deadline) = self.scheduler.next_deadline() {
            if deadline > until {
                break;
            }
            self.now = self.now.max(deadline);
            self.scheduler.handle_timeout(self.now);
            self.drain();
        }
        self.now = self.now.max(until);
    }

    fn check(&mut self, expect: Expect) {
        expect.assert_eq(&self.trace);
    }
}

fn short(input: &SchedulerInput) -> String {
    match input {
        SchedulerInput::Settle(SettleOutput::ScopeWorking { workspace_id, .. }) => format!("{workspace_id} working"),
        SchedulerInput::Settle(SettleOutput::ScopeSettled { workspace_id, wake_id, outcome, .. }) => {
            format!("{workspace_id} settled {outcome:?} (wake {}#{})", wake_id.boot_id, wake_id.seq)
        }
        SchedulerInput::Page(p) => format!("page composer={} generating={} draft={}", p.composer_present, p.generating, p.human_draft),
        SchedulerInput::DeliveryConfirmed { .. } => "DeliveryConfirmed".to_owned(),
        SchedulerInput::DeliveryFailed { .. } => "DeliveryFailed".to_owned(),
        other => format!("{other:?}"),
    }
}

#[test]
fn auto_on_with_a_human_draft_submits_nothing_and_the_hud_says_why() {
    // Issue acceptance + M7: the wake waits for the draft to go, then goes once.
    let mut sim = Sim::new();
    sim.input(bound("w1")).input(auto(true)).input(page(true, false, true));
    sim.input(working("w1"));
    sim.at(5 * SEC).input(settled("w1", 7, SettleOutcome::Done));
    sim.at(40 * SEC).input(page(true, false, false));
    sim.at(41 * SEC).input(SchedulerInput::DeliveryConfirmed { message: None });
    // A replay of the same settle after a reconnect is not sent again.
    sim.input(settled("w1", 7, SettleOutcome::Done));
    sim.check(expect![[r#"
        t=   0s <- BindingChanged { workspace_id: Some("w1"), has_delivery_target: true }
        t=   0s    => HUD: Not sent: Auto is off for this chat. Turn Auto on, or continue by hand.
        t=   0s <- AutoChanged { auto: On }
        t=   0s    => HUD: (nothing held back)
        t=   0s <- page composer=true generating=false draft=true
        t=   0s <- w1 working
        t=   5s <- w1 settled Done (wake b1#7)
        t=   5s    => HUD: Waiting: the composer has your unsent text. Send or clear it and the update follows.
        t=  40s <- page composer=true generating=false draft=false
        t=  40s    => DELIVER Wake { wake_id: WakeId { boot_id: "b1", seq: 7 }, outcome: Done }
        t=  40s    => HUD: (nothing held back)
        t=  41s <- DeliveryConfirmed
        t=  41s <- w1 settled Done (wake b1#7)
    "#]]);
}

#[test]
fn a_settle_waits_for_the_page_to_stop_generating_and_progress_never_interrupts() {
    // P4 progress while working, P8 settle stops progress and wakes once, M7 not generating.
    let mut sim = Sim::new();
    sim.input(bound("w1")).input(auto(true)).input(idle_page());
    sim.input(working("w1"));
    sim.summary = Some("ran 40 of 120 tests".into());
    sim.at(61 * SEC);
    sim.input(SchedulerInput::DeliveryConfirmed { message: None }).input(page(true, true, false));
    sim.summary = Some("ran 120 of 120 tests".into());
    sim.at(2 * MIN + SEC);
    sim.at(2 * MIN + 30 * SEC).input(settled("w1", 9, SettleOutcome::Blocked));
    sim.at(3 * MIN).input(idle_page());
    sim.input(SchedulerInput::DeliveryConfirmed { message: None });
    sim.at(60 * MIN);
    sim.check(expect![[r#"
        t=   0s <- BindingChanged { workspace_id: Some("w1"), has_delivery_target: true }
        t=   0s    => HUD: Not sent: Auto is off for this chat. Turn Auto on, or continue by hand.
        t=   0s <- AutoChanged { auto: On }
        t=   0s    => HUD: (nothing held back)
        t=   0s <- page composer=true generating=false draft=false
        t=   0s <- w1 working
        t=  60s    => DELIVER Progress { summary: "ran 40 of 120 tests" }
        t=  61s <- DeliveryConfirmed
        t=  61s <- page composer=true generating=true draft=false
        t= 150s <- w1 settled Blocked (wake b1#9)
        t= 150s    => HUD: Waiting: the page is still generating a reply; the update is sent when it finishes.
        t= 180s <- page composer=true generating=false draft=false
        t= 180s    => DELIVER Wake { wake_id: WakeId { boot_id: "b1", seq: 9 }, outcome: Blocked }
        t= 180s    => HUD: (nothing held back)
        t= 180s <- DeliveryConfirmed
    "#]]);
}

#[test]
fn with_auto_off_nothing_is_delivered_and_the_hud_says_why() {
    // M1, M7.
    let mut sim = Sim::new();
    sim.input(bound("w1")).input(idle_page());
    sim.input(working("w1"));
    sim.summary = Some("halfway".into());
    sim.at(30 * MIN).input(settled("w1", 3, SettleOutcome::Idle));
    sim.at(31 * MIN);
    sim.check(expect![[r#"
        t=   0s <- BindingChanged { workspace_id: Some("w1"), has_delivery_target: true }
        t=   0s    => HUD: Not sent: Auto is off for this chat. Turn Auto on, or continue by hand.
        t=   0s <- page composer=true generating=false draft=false
        t=   0s <- w1 working
        t=1800s <- w1 settled Idle (wake b1#3)
    "#]]);
}

#[test]
fn failed_deliveries_back_off_then_wait_for_a_reload() {
    // M7: never an unbounded loop.
    let mut sim = Sim::new();
    sim.input(bound("w1")).input(auto(true)).input(idle_page());
    sim.input(working("w1")).input(settled("w1", 2, SettleOutcome::Idle));
    for _ in 0..4 {
        sim.input(SchedulerInput::DeliveryFailed { message: None });
        let next = sim.scheduler.next_deadline();
        sim.trace.push_str(&format!("       next deadline: {:?}\n", next.map(|d| d / SEC)));
        if let Some(deadline) = next {
            sim.at(deadline);
        }
    }
    sim.at(30 * MIN);
    sim.input(page(false, false, false)).input(idle_page());
    sim.input(SchedulerInput::DeliveryConfirmed { message: None });
    sim.check(expect![[r#"
        t=   0s <- BindingChanged { workspace_id: Some("w1"), has_delivery_target: true }
        t=   0s    => HUD: Not sent: Auto is off for this chat. Turn Auto on, or continue by hand.
        t=   0s <- AutoChanged { auto: On }
        t=   0s    => HUD: (nothing held back)
        t=   0s <- page composer=true generating=false draft=false
        t=   0s <- w1 working
        t=   0s <- w1 settled Idle (wake b1#2)
        t=   0s    => DELIVER Wake { wake_id: WakeId { boot_id: "b1", seq: 2 }, outcome: Idle }
        t=   0s <- DeliveryFailed
        t=   0s    => HUD: Waiting: sending to the page failed; it is retried in a few seconds.
               next deadline: Some(15)
        t=  15s    => DELIVER Wake { wake_id: WakeId { boot_id: "b1", seq: 2 }, outcome: Idle }
        t=  15s    => HUD: (nothing held back)
        t=  15s <- DeliveryFailed
        t=  15s    => HUD: Waiting: sending to the page failed; it is retried in a few seconds.
               next deadline: Some(45)
        t=  45s    => DELIVER Wake { wake_id: WakeId { boot_id: "b1", seq: 2 }, outcome: Idle }
        t=  45s    => HUD: (nothing held back)
        t=  45s <- DeliveryFailed
        t=  45s    => HUD: Waiting: sending to the page failed; it is retried in a few seconds.
               next deadline: Some(105)
        t= 105s    => DELIVER Wake { wake_id: WakeId { boot_id: "b1", seq: 2 }, outcome: Idle }
        t= 105s    => HUD: (nothing held back)
        t= 105s <- DeliveryFailed
        t= 105s    => HUD: Not sent: delivery failed several times. Reload the conversation to retry.
               next deadline: None
        t=1800s <- page composer=false generating=false draft=false
        t=1800s    => HUD: Waiting: the chat composer is not available. Open or reload the conversation.
        t=1800s <- page composer=true generating=false draft=false
        t=1800s    => DELIVER Wake { wake_id: WakeId { boot_id: "b1", seq: 2 }, outcome: Idle }
        t=1800s    => HUD: (nothing held back)
        t=1800s <- DeliveryConfirmed
    "#]]);
}

#[test]
fn a_page_whose_facts_resolve_again_gets_a_fresh_delivery_budget() {
    // M7 without a reload: the page's needed facts stopped resolving and resolve again (the
    // user imported a profile override that fixes them, the page re-rendered): the held
    // wake goes out once more, exactly once, instead of waiting for a reload.
    let unresolved = SchedulerInput::Page(PageFacts {
        composer_present: true,
        generating: false,
        permission_card: false,
        human_draft: false,
        facts_resolved: false,
        app_held: None,
        rate_limited: false,
        delivery_in_flight: false,
    });
    let mut sim = Sim::new();
    sim.input(bound("w1")).input(auto(true)).input(idle_page());
    sim.input(working("w1")).input(settled("w1", 2, SettleOutcome::Idle));
    for _ in 0..4 {
        sim.input(SchedulerInput::DeliveryFailed { message: None });
        if let Some(deadline) = sim.scheduler.next_deadline() {
            sim.at(deadline);
        }
    }
    assert_eq!(sim.scheduler.next_deadline(), None, "given up until the page changes");
    let before = sim.trace.matches("=> DELIVER").count();
    sim.at(30 * MIN).input(unresolved).input(idle_page());
    assert_eq!(sim.trace.matches("=> DELIVER").count(), before + 1, "{}", sim.trace);
    sim.input(SchedulerInput::DeliveryConfirmed { message: None }).input(idle_page());
    assert_eq!(sim.trace.matches("=> DELIVER").count(), before + 1, "sent once: {}", sim.trace);
}

#[test]
fn a_delivery_in_flight_across_a_restart_waits_for_its_answer() {
    let mut sim = Sim::new();
    sim.input(bound("w1")).input(auto(true)).input(idle_page());
    sim.input(working("w1")).input(settled("w1", 2, SettleOutcome::Idle));
    let json = serde_json::to_string(&sim.scheduler).expect("serializes");
    sim.scheduler = ext_core::json_read::from_str(&json).expect("restores");
    sim.trace.push_str("  -- service worker restarted --\n");
    sim.input(settled("w1", 2, SettleOutcome::Idle));
    sim.input(working("w1")).input(settled("w1", 5, SettleOutcome::Done));
    sim.input(SchedulerInput::DeliveryConfirmed { message: None });
    sim.input(SchedulerInput::DeliveryConfirmed { message: None });
    sim.check(expect![[r#"
        t=   0s <- BindingChanged { workspace_id: Some("w1"), has_delivery_target: true }
        t=   0s    => HUD: Not sent: Auto is off for this chat. Turn Auto on, or continue by hand.
        t=   0s <- AutoChanged { auto: On }
        t=   0s    => HUD: (nothing held back)
        t=   0s <- page composer=true generating=false draft=false
        t=   0s <- w1 working
        t=   0s <- w1 settled Idle (wake b1#2)
        t=   0s    => DELIVER Wake { wake_id: WakeId { boot_id: "b1", seq: 2 }, outcome: Idle }
          -- service worker restarted --
        t=   0s <- w1 settled Idle (wake b1#2)
        t=   0s <- w1 working
        t=   0s <- w1 settled Done (wake b1#5)
        t=   0s    => HUD: Waiting: the last message typed here is not yet confirmed on the page; the next one follows once it is. If this stays, check the chat before sending anything else.
        t=   0s <- DeliveryConfirmed
        t=   0s    => DELIVER Wake { wake_id: WakeId { boot_id: "b1", seq: 5 }, outcome: Done }
        t=   0s    => HUD: (nothing held back)
        t=   0s <- DeliveryConfirmed
    "#]]);
}

#[test]
fn wake_texts_are_scheduling_signals_not_claims_of_success() {
    // A3, in both languages; blocked results are diagnosed further.
    let kind = MessageKind::Wake { wake_id: WakeId { boot_id: "b1".into(), seq: 1 }, outcome: SettleOutcome::Blocked };
    let texts = format!(
        "{}\n{}\n{}\n",
        render_message(Language::En, "w1", &kind),
        render_message(Language::Zh, "w1", &kind),
        render_message(Language::En, "w1", &MessageKind::Fallback { quiet_for_ms: 20 * MIN }),
    );
    expect![[r#"
        [Herdr] Workspace w1 settled (blocked). This is a scheduling signal, not evidence that the work succeeded. At least one agent is blocked: diagnose why before anything else. Re-read the live Herdr and Git state, inspect the agents' output, the diff and the tests, then decide: continue, rework, merge or stop. To give an agent work for this chat, call herdr_prompt with browser_session_ref set to the ref= value on this message's last line.
        [Herdr] workspace w1 已收工（blocked）。这只是调度信号，不代表任务已成功。有 Agent 处于阻塞状态：请先诊断原因。请重新读取实时 Herdr/Git 状态，检查 Agent 输出、diff 和测试，再决定继续、返工、合并还是停止。如需为本会话给 Agent 派活，调用 herdr_prompt，browser_session_ref 取本消息最后一行 ref= 后面的值。
        [Herdr status] Workspace w1 is still working; no new summary for 20 min. If that is unexpected, check the live Herdr state.
    "#]].assert_eq(&texts);
}

#[derive(Debug, Clone)]
enum Op {
    Working,
    Settle(u64),
    Page(bool, bool, bool),
    Auto(bool),
    Confirm,
    Fail,
    Advance(Millis),
    Restart,
    Summary(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::Working),
        3 => (1u64..6).prop_map(Op::Settle),
        3 => (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(a, b, c)| Op::Page(a, b, c)),
        1 => any::<bool>().prop_map(Op::Auto),
        2 => Just(Op::Confirm),
        1 => Just(Op::Fail),
        3 => (1..(25 * MIN)).prop_map(Op::Advance),
        1 => Just(Op::Restart),
        1 => (0u8..3).prop_map(Op::Summary),
    ]
}

proptest! {
    /// M7/P8: with Auto off no Deliver ever; never a Deliver while the page generates or
    /// holds a draft or another delivery is unanswered; a confirmed wake id is never
    /// delivered again.
    #[test]
    fn deliveries_respect_the_gate_and_never_repeat(ops in proptest::collection::vec(op(), 1..80)) {
        let mut s = WakeScheduler::new(ProgressConfig::default(), Language::En);
        let mut now: Millis = 0;
        s.handle(now, bound("w1"));
        let mut auto_on = false;
        let mut facts = PageFacts::default();
        let mut awaiting: Option<MessageKind> = None;
        let mut confirmed: Vec<WakeId> = vec![];
        let summaries = [None, Some("a"), Some("b")];
        let mut summary: Option<&str> = None;
        for op in ops {
            match op {
                Op::Working => s.handle(now, working("w1")),
                Op::Settle(seq) => s.handle(now, settled("w1", seq, SettleOutcome::Idle)),
                Op::Page(c, g, d) => { facts = PageFacts { composer_present: c, generating: g, permission_card: false, human_draft: d, facts_resolved: true, app_held: None, rate_limited: false, delivery_in_flight: awaiting.is_some() }; s.handle(now, SchedulerInput::Page(facts)); }
                Op::Auto(on) => { auto_on = on; s.handle(now, auto(on)); }
                // The driver answers what its ledger holds, naming it.
                Op::Confirm => {
                    if let Some(kind) = awaiting.take() {
                        if let MessageKind::Wake { wake_id, .. } = &kind { confirmed.push(wake_id.clone()); }
                        s.handle(now, SchedulerInput::DeliveryConfirmed { message: Some(InFlight::of(&kind)) });
                    }
                }
                Op::Fail => {
                    if let Some(kind) = awaiting.take() {
                        s.handle(now, SchedulerInput::DeliveryFailed { message: Some(InFlight::of(&kind)) });
                    }
                }
                Op::Advance(ms) => {
                    let until = now + ms;
                    while let Some(d) = s.next_deadline() {
                        if d > until { break; }
                        now = now.max(d);
                        s.handle_timeout(now);
                        // Answer summary checks inline.
                        let mut pending = vec![];
                        while let Some(out) = s.poll() { pending.push(out); }
                        for out in pending {
                            if let SchedulerOutput::CheckSummary { .. } = out {
                                s.handle(now, SchedulerInput::SummaryChecked { summary: summary.map(str::to_string) });
                            } else {
                                check_output(&out, auto_on, facts, &mut awaiting, &confirmed)?;
                            }
                        }
                    }
                    now = until;
                }
                Op::Restart => {
                    let json = serde_json::to_string(&s).expect("serializes");
                    s = ext_core::json_read::from_str(&json).expect("restores");
                }
                Op::Summary(i) => summary = summaries[usize::from(i)],
            }
            while let Some(out) = s.poll() {
                if let SchedulerOutput::CheckSummary { .. } = out { continue; }
                check_output(&out, auto_on, facts, &mut awaiting, &confirmed)?;
            }
        }
    }
}

fn check_output(
    out: &SchedulerOutput,
    auto_on: bool,
    facts: PageFacts,
    awaiting: &mut Option<MessageKind>,
    confirmed: &[WakeId],
) -> Result<(), TestCaseError> {
    if let SchedulerOutput::Deliver { kind, .. } = out {
        prop_assert!(auto_on, "delivered with Auto off: {:?}", kind);
        prop_assert!(facts.composer_present && !facts.generating && !facts.human_draft, "page not ready: {:?}", facts);
        prop_assert!(awaiting.is_none(), "second delivery while {:?} unanswered", awaiting);
        if let MessageKind::Wake { wake_id, .. } = kind {
            prop_assert!(!confirmed.contains(wake_id), "wake {:?} delivered twice", wake_id);
        }
        *awaiting = Some(kind.clone());
    }
    Ok(())
}
