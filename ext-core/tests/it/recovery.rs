//! The recovery planner (SPEC S1–S8, H5–H7): evidence first, budgets that survive
//! restarts, nothing from `unknown`.

use ext_core::recovery::{RecoveryAction, RecoveryFacts, RecoveryPlanner, RecoveryStatus, ASSISTANT_STALL_MS, PROBE_INTERVAL_MS, RELOAD_COOLDOWN_MS, REPLY_TIMEOUT_MS, SERVER_STALL_WAIT_MS};
use ext_core::stale_view::{DomMessage, DomView, ServerNode, ServerRole, Snapshot, ViewState};
use proptest::prelude::*;

const T0: u64 = 1_800_000_000_000;

fn streaming(load: &str, signature: &str) -> RecoveryFacts {
    RecoveryFacts {
        page_load: load.into(),
        generating: true,
        view: DomView { last_assistant: Some(DomMessage { id: None, text_len: 120, streaming: true }), user_waiting: false, reasoning: false },
        signature: signature.into(),
        auto_on: true,
        chatgpt: true,
        ..RecoveryFacts::default()
    }
}

fn waiting(load: &str) -> RecoveryFacts {
    RecoveryFacts {
        page_load: load.into(),
        view: DomView { last_assistant: Some(DomMessage { id: Some("a1".into()), text_len: 500, streaming: false }), user_waiting: true, reasoning: false },
        auto_on: true,
        chatgpt: true,
        ..RecoveryFacts::default()
    }
}

fn node(id: &str, role: ServerRole, finished: bool, at: u64) -> Snapshot {
    Snapshot::Read(ServerNode { id: id.into(), role, text_len: 900, finished, update_time: Some(at as f64) })
}

// R: S3, S8 — the DOM froze mid-reply while the server finished: after the stall, one
// probe, one safe reload; a restart before the reload was seen never reloads again.
#[test]
fn a_frozen_reply_the_server_finished_gets_one_reload_never_a_resubmit_s3() {
    let mut p = RecoveryPlanner::default();
    assert_eq!(p.page(T0, streaming("L1", "s1")), None);
    // A "connection interrupted" placeholder changes nothing that counts as progress.
    assert_eq!(p.page(T0 + 10_000, streaming("L1", "s1")), None);
    assert_eq!(p.tick(T0 + ASSISTANT_STALL_MS), Some(RecoveryAction::Probe));
    assert_eq!(p.snapshot(T0 + ASSISTANT_STALL_MS, &node("a2", ServerRole::Assistant, true, T0)), Some(RecoveryAction::ReloadPage));
    assert_eq!(p.pending().map(|x| &x.action), Some(&RecoveryAction::ReloadPage), "recorded before it is done");
    // The worker restarts before the page reloaded: nothing is repeated.
    let mut back = ext_core::json_read::from_str::<RecoveryPlanner>(&serde_json::to_string(&p).expect("json")).expect("read");
    back.restored();
    back.page(T0 + ASSISTANT_STALL_MS + 1, streaming("L1", "s1"));
    for dt in (0..10).map(|i| i * PROBE_INTERVAL_MS) {
        let now = T0 + ASSISTANT_STALL_MS + RELOAD_COOLDOWN_MS + dt;
        if back.tick(now) == Some(RecoveryAction::Probe) {
            let action = back.snapshot(now, &node("a2", ServerRole::Assistant, true, T0));
            assert_ne!(action, Some(RecoveryAction::ReloadPage), "the page reload is spent");
            if let Some(action) = action {
                assert_eq!(action, RecoveryAction::ReloadTab, "level 2 only after level 1");
                break;
            }
        }
    }
}

// R: S5 — unknown (a 403 challenge, a timeout) never leads to an action; it is probed
// again at most once per interval.
#[test]
fn an_unknown_snapshot_never_leads_to_an_action_s5() {
    let mut p = RecoveryPlanner::default();
    p.page(T0, streaming("L1", "s1"));
    let mut probes = 0;
    let mut now = T0 + ASSISTANT_STALL_MS;
    while now < T0 + 10 * 60_000 {
        if p.tick(now) == Some(RecoveryAction::Probe) {
            probes += 1;
            assert_eq!(p.snapshot(now, &Snapshot::Unknown { why: "403 challenge".into() }), None);
        }
        now += 1_000;
    }
    assert!(probes <= (10 * 60_000 / PROBE_INTERVAL_MS) as usize + 1, "rationed: {probes}");
    assert_eq!(p.status(), RecoveryStatus::Observed { state: ViewState::Unknown });
}

// R: a healthy idle tab makes no snapshot request (issue 10 acceptance 3).
#[test]
fn a_healthy_idle_page_is_never_probed() {
    let mut p = RecoveryPlanner::default();
    let idle = RecoveryFacts { page_load: "L1".into(), auto_on: true, chatgpt: true, ..RecoveryFacts::default() };
    p.page(T0, idle);
    for s in 0..3_600 {
        assert_eq!(p.tick(T0 + s * 1_000), None);
    }
    assert_eq!(p.probes(), 0);
}

// R: S6 — a send-timeout error: server at the assistant → reload, never Retry; still at
// the user → Retry once; a second time the budget is spent → rollover recommended.
#[test]
fn a_send_timeout_checks_the_server_before_retry_s6() {
    let with_error = |load: &str| RecoveryFacts { send_timeout: Some(true), ..waiting(load) };
    let mut p = RecoveryPlanner::default();
    assert_eq!(p.page(T0, with_error("L1")), Some(RecoveryAction::Probe));
    assert_eq!(p.snapshot(T0, &node("a2", ServerRole::Assistant, true, T0)), Some(RecoveryAction::ReloadPage), "answered already: view sync");
    let mut p = RecoveryPlanner::default();
    assert_eq!(p.page(T0, with_error("L1")), Some(RecoveryAction::Probe));
    assert_eq!(p.snapshot(T0, &node("a1", ServerRole::Assistant, true, T0 - 90_000)), Some(RecoveryAction::ClickRetry), "not accepted: Retry once");
    // The error comes back after the Retry.
    p.page(T0 + 1_000, waiting("L1"));
    assert_eq!(p.page(T0 + PROBE_INTERVAL_MS + 1_000, with_error("L1")), Some(RecoveryAction::Probe));
    assert_eq!(p.snapshot(T0 + PROBE_INTERVAL_MS + 1_000, &node("a1", ServerRole::Assistant, true, T0 - 90_000)), None);
    assert_eq!(p.status(), RecoveryStatus::RolloverRecommended);
}

// R: S4 — no reply after a user turn: the server has the turn and is still updating → wait;
// it stopped updating → wait longer, then one reload; the server never got it and the page
// offers no Retry → the user decides (a reload would drop their turn from view).
#[test]
fn no_reply_after_a_user_turn_waits_for_a_stalled_server_then_reloads_once_s4() {
    let mut p = RecoveryPlanner::default();
    p.page(T0, waiting("L1"));
    let t = T0 + REPLY_TIMEOUT_MS;
    assert_eq!(p.tick(t), Some(RecoveryAction::Probe));
    assert_eq!(p.snapshot(t, &node("u2", ServerRole::User, false, t - 120_000)), None);
    assert!(matches!(p.status(), RecoveryStatus::WaitingForServer { .. }));
    let later = t + SERVER_STALL_WAIT_MS;
    assert_eq!(p.tick(later), Some(RecoveryAction::Probe));
    assert_eq!(p.snapshot(later, &node("u2", ServerRole::User, false, t - 120_000)), Some(RecoveryAction::ReloadPage));

    let mut q = RecoveryPlanner::default();
    q.page(T0, waiting("L1"));
    assert_eq!(q.tick(t), Some(RecoveryAction::Probe));
    assert_eq!(q.snapshot(t, &node("a1", ServerRole::Assistant, true, T0 - 5_000)), None);
    assert_eq!(q.status(), RecoveryStatus::NeedsUser);
}

// R: H7 — during a 429 cooldown not even a probe.
#[test]
fn nothing_during_a_rate_limit_cooldown_h7() {
    let mut p = RecoveryPlanner::default();
    p.page(T0, streaming("L1", "s1"));
    p.rate_limited(T0 + ASSISTANT_STALL_MS - 1);
    assert_eq!(p.tick(T0 + ASSISTANT_STALL_MS), None);
    assert_eq!(p.tick(T0 + ASSISTANT_STALL_MS + 29_000), None);
    assert_eq!(p.tick(T0 + ASSISTANT_STALL_MS + 30_000), Some(RecoveryAction::Probe));
}

// R: M5/M6 gate — Auto off or not ChatGPT: nothing; a human draft or a permission card
// blocks the action, not the evidence.
#[test]
fn the_gate_holds_back_actions_m6() {
    let mut p = RecoveryPlanner::default();
    p.page(T0, RecoveryFacts { auto_on: false, ..streaming("L1", "s1") });
    assert_eq!(p.tick(T0 + ASSISTANT_STALL_MS), None);
    let mut p = RecoveryPlanner::default();
    p.page(T0, RecoveryFacts { human_draft: true, ..streaming("L1", "s1") });
    assert_eq!(p.tick(T0 + ASSISTANT_STALL_MS), Some(RecoveryAction::Probe));
    assert_eq!(p.snapshot(T0 + ASSISTANT_STALL_MS, &node("a2", ServerRole::Assistant, true, T0)), None);
}

#[derive(Debug, Clone)]
enum Op {
    Page { load: u8, generating: bool, waiting: bool, signature: u8, error: Option<bool>, draft: bool },
    Snapshot(u8),
    RateLimited,
    Restart,
    HumanTurn,
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..3, any::<bool>(), any::<bool>(), 0u8..3, prop::option::of(any::<bool>()), prop::bool::weighted(0.1))
            .prop_map(|(load, generating, waiting, signature, error, draft)| Op::Page { load, generating, waiting, signature, error, draft }),
        4 => (0u8..6).prop_map(Op::Snapshot),
        1 => Just(Op::RateLimited),
        1 => Just(Op::Restart),
        1 => Just(Op::HumanTurn),
        4 => (1_000u64..90_000).prop_map(Op::Advance),
    ]
}

proptest! {
    /// S5, S7, H5, H7: random faults, snapshots, timings and restarts never exceed the
    /// budgets (one Retry, one page reload, one tab reload between human turns), never act
    /// on `unknown` without a send-timeout error, never click Retry when the server is
    /// ahead (no resubmit), and never probe during a 429 cooldown.
    #[test]
    fn budgets_hold_and_unknown_never_acts(ops in prop::collection::vec(op(), 1..80)) {
        let mut p = RecoveryPlanner::default();
        let mut now = T0;
        let mut counts = [0u32; 3];
        let mut facts = RecoveryFacts { page_load: "L0".into(), auto_on: true, chatgpt: true, ..RecoveryFacts::default() };
        let mut probe_out = false;
        let snapshots = [
            Snapshot::Unknown { why: "timeout".into() },
            node("a1", ServerRole::Assistant, true, T0),
            node("a2", ServerRole::Assistant, true, T0),
            node("a2", ServerRole::Assistant, false, T0),
            node("u2", ServerRole::User, false, T0),
            Snapshot::Read(ServerNode { id: "t".into(), role: ServerRole::Other, text_len: 0, finished: true, update_time: None }),
        ];
        for op in ops {
            let mut action = None;
            match op {
                Op::Page { load, generating, waiting, signature, error, draft } => {
                    facts = RecoveryFacts {
                        page_load: format!("L{load}"),
                        generating,
                        view: DomView { last_assistant: Some(DomMessage { id: Some("a1".into()), text_len: 500, streaming: generating }), user_waiting: waiting, reasoning: false },
                        signature: format!("s{signature}"),
                        send_timeout: error,
                        human_draft: draft,
                        ..facts
                    };
                    action = p.page(now, facts.clone());
                }
                Op::Snapshot(i) => {
                    let snapshot = &snapshots[usize::from(i)];
                    let was_out = std::mem::take(&mut probe_out);
                    action = p.snapshot(now, snapshot);
                    if !was_out {
                        prop_assert_eq!(&action, &None, "acted on a snapshot nobody asked for");
                    }
                    if matches!(snapshot, Snapshot::Unknown { .. }) && facts.send_timeout.is_none() {
                        prop_assert_eq!(&action, &None, "S5: acted on unknown");
                    }
                    if i == 2 || i == 3 {
                        prop_assert_ne!(&action, &Some(RecoveryAction::ClickRetry), "Retry while the server has the answer");
                    }
                }
                Op::RateLimited => p.rate_limited(now),
                Op::Restart => {
                    p = ext_core::json_read::from_str::<RecoveryPlanner>(&serde_json::to_string(&p).expect("json")).expect("read");
                    p.restored();
                    probe_out = false;
                    action = p.page(now, facts.clone());
                }
                Op::HumanTurn => {
                    p.human_turn();
                    counts = [0; 3];
                }
                Op::Advance(ms) => {
                    now += ms;
                    action = p.tick(now);
                }
            }
            match action {
                Some(RecoveryAction::Probe) => {
                    prop_assert!(p.cooling_until(now).is_none(), "H7: probe during a cooldown");
                    probe_out = true;
                }
                Some(RecoveryAction::ClickRetry) => counts[0] += 1,
                Some(RecoveryAction::ReloadPage) => counts[1] += 1,
                Some(RecoveryAction::ReloadTab) => counts[2] += 1,
                None => {}
            }
            prop_assert!(counts.iter().all(|c| *c <= 1), "S7: budgets exceeded {counts:?}");
            prop_assert!(counts[2] == 0 || counts[1] == 1, "H5: tab reload before page reload");
        }
    }
}

// Regression (seen in e2e: a probe at the first token of every reply after an idle page):
// a reply that starts after a long quiet spell is progress, not a stall.
#[test]
fn a_reply_starting_after_a_long_idle_is_not_a_stall() {
    let mut p = RecoveryPlanner::default();
    let idle = RecoveryFacts { generating: false, ..streaming("L1", "s1") };
    assert_eq!(p.page(T0, idle), None);
    assert_eq!(p.page(T0 + 10 * ASSISTANT_STALL_MS, streaming("L1", "s1")), None, "the reply just started");
    assert_eq!(p.tick(T0 + 10 * ASSISTANT_STALL_MS + 1_000), None);
    assert_eq!(p.tick(T0 + 11 * ASSISTANT_STALL_MS), Some(RecoveryAction::Probe), "a real stall is still seen");
}
