//! The recovery planner (SPEC S1–S8, H5–H7): evidence first, budgets that survive
//! restarts, nothing from `unknown`.

use ext_core::recovery::{
    RecoveryAction, RecoveryFacts, RecoveryPlanner, RecoveryStatus, Spent, ASSISTANT_STALL_MS, HOUR_MS, MAX_RELOADS_PER_HOUR, MAX_RESENDS,
    MAX_RESUBMITS_PER_HOUR, PROBE_INTERVAL_MS, RELOAD_COOLDOWN_MS, REPLY_TIMEOUT_MS, RESEND_SPACING_MS, SERVER_STALL_WAIT_MS,
};
use ext_core::stale_view::{DomMessage, DomView, ServerNode, ServerRole, Snapshot, ViewState};
use proptest::prelude::*;

const T0: u64 = 1_800_000_000_000;

fn streaming(load: &str, signature: &str) -> RecoveryFacts {
    RecoveryFacts {
        page_load: load.into(),
        generating: true,
        view: DomView {
            last_assistant: Some(DomMessage { id: None, text_len: 120, streaming: true }),
            user_waiting: false,
            reasoning: false,
        },
        signature: signature.into(),
        auto_on: true,
        chatgpt: true,
        ..RecoveryFacts::default()
    }
}

fn waiting(load: &str) -> RecoveryFacts {
    RecoveryFacts {
        page_load: load.into(),
        view: DomView {
            last_assistant: Some(DomMessage { id: Some("a1".into()), text_len: 500, streaming: false }),
            user_waiting: true,
            reasoning: false,
        },
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
    assert_eq!(
        p.snapshot(T0, &node("a2", ServerRole::Assistant, true, T0)),
        Some(RecoveryAction::ReloadPage),
        "answered already: view sync"
    );
    let mut p = RecoveryPlanner::default();
    assert_eq!(p.page(T0, with_error("L1")), Some(RecoveryAction::Probe));
    assert_eq!(
        p.snapshot(T0, &node("a1", ServerRole::Assistant, true, T0 - 90_000)),
        Some(RecoveryAction::ClickRetry),
        "not accepted: Retry once"
    );
    // The error comes back after the Retry.
    p.page(T0 + 1_000, waiting("L1"));
    assert_eq!(p.page(T0 + PROBE_INTERVAL_MS + 1_000, with_error("L1")), Some(RecoveryAction::Probe));
    assert_eq!(p.snapshot(T0 + PROBE_INTERVAL_MS + 1_000, &node("a1", ServerRole::Assistant, true, T0 - 90_000)), None);
    assert_eq!(p.status(), RecoveryStatus::RolloverRecommended { why: Spent::Incident });
}

/// One stale view on `load` at `t`: a frozen reply, the stall, the probe, the server ahead.
fn stale_view(p: &mut RecoveryPlanner, load: &str, t: u64) -> Option<RecoveryAction> {
    p.page(t, streaming(load, &format!("{load}@{t}")));
    let at = t + ASSISTANT_STALL_MS;
    assert_eq!(p.tick(at), Some(RecoveryAction::Probe), "the stall on {load} is probed");
    p.snapshot(at, &node(&format!("a{t}"), ServerRole::Assistant, true, at))
}

/// A healthy turn on `load`: a reply streams and finishes; the turn ends.
fn healthy_turn(p: &mut RecoveryPlanner, load: &str, t: u64, human: bool) -> bool {
    p.page(t, streaming(load, &format!("h{t}")));
    p.page(t + 5_000, RecoveryFacts { generating: false, ..streaming(load, &format!("h{t}+")) });
    p.turn_ended(human)
}

// R: S7, H6 (issue 26 Found 1: recovery worked once per conversation, ever; failed before,
// the second stale view got the tab reload and the third nothing) — budgets are per
// incident: a healthy turn renews them, so a second stale view, hours or minutes later,
// gets the page reload again; across incidents at most MAX_RELOADS_PER_HOUR reloads in any
// rolling hour, then a rollover is recommended for the hour's reason.
#[test]
fn budgets_renew_after_a_healthy_turn_and_stay_bounded_per_hour_s7() {
    let mut p = RecoveryPlanner::default();
    let mut t = T0;
    let mut reloads = Vec::new();
    for i in 0..MAX_RELOADS_PER_HOUR {
        let load = format!("L{i}");
        let action = stale_view(&mut p, &load, t);
        assert_eq!(action, Some(RecoveryAction::ReloadPage), "stale view {i}: the page reload again, never the tab first");
        reloads.push(t);
        assert_eq!(p.reloads_left(t + ASSISTANT_STALL_MS), 1u32.min((MAX_RELOADS_PER_HOUR - 1 - i) as u32), "after reload {i}");
        // The page reloads and shows the server's reply; then a healthy turn (the human's
        // first, then one of ours whose reply streamed and finished here).
        t += ASSISTANT_STALL_MS + RELOAD_COOLDOWN_MS;
        let next = format!("L{i}b");
        p.page(t, RecoveryFacts { generating: false, ..streaming(&next, "done") });
        assert!(healthy_turn(&mut p, &next, t + 1_000, i == 0), "a healthy turn renews the budgets");
        assert_eq!(p.reloads_left(t + 2_000), 2u32.min((MAX_RELOADS_PER_HOUR - 1 - i) as u32), "renewed, within the hour's bound");
        t += 60_000;
    }
    // Within the same hour a fourth stale view gets nothing: the hour's bound.
    assert!(t + ASSISTANT_STALL_MS - reloads[0] < HOUR_MS);
    assert_eq!(stale_view(&mut p, "L9", t), None);
    assert_eq!(p.status(), RecoveryStatus::RolloverRecommended { why: Spent::Hour });
    assert_eq!(p.reloads_left(t + ASSISTANT_STALL_MS), 0);
    // A turn of ours that ends on a page load where no reply streamed (a reload showing the
    // server's reply) renews nothing; the human's turn always does.
    p.page(t + ASSISTANT_STALL_MS + 1_000, RecoveryFacts { generating: false, ..streaming("L9r", "done") });
    assert!(!p.turn_ended(false));
    assert_eq!(p.status(), RecoveryStatus::RolloverRecommended { why: Spent::Hour });
    // Once the first reload is an hour old, the next stale view is reloaded again.
    let later = reloads[0] + HOUR_MS;
    assert!(healthy_turn(&mut p, "L10", later, true));
    assert_eq!(stale_view(&mut p, "L10", later + 1_000), Some(RecoveryAction::ReloadPage));
}

/// A user turn of ours waits after the finished assistant `a1`; the page offers no Retry.
fn ours_waiting(load: &str) -> RecoveryFacts {
    RecoveryFacts { ours_waiting: true, ..waiting(load) }
}

// R: S4 (issue 26 Found 2: "request not accepted" without a Retry card only set needs_user;
// failed before, no action came) — a message of ours the server never accepted is sent
// again, proven by each probe's snapshot (the server's current node is still the page's
// last assistant message), at most MAX_RESENDS times per incident, RESEND_SPACING_MS apart;
// never on a snapshot that could not be read or that shows the turn, never a human's turn.
#[test]
fn a_message_of_ours_the_server_never_accepted_is_resent_paced_and_bounded_s4() {
    let not_accepted = node("a1", ServerRole::Assistant, true, T0 - 5_000);
    let mut p = RecoveryPlanner::default();
    p.page(T0, ours_waiting("L1"));
    let mut t = T0 + REPLY_TIMEOUT_MS;
    let mut resends = Vec::new();
    while t < T0 + 10 * 60_000 {
        if p.tick(t) == Some(RecoveryAction::Probe) {
            match p.snapshot(t, &not_accepted) {
                Some(RecoveryAction::Resend) => resends.push(t),
                None => {}
                other => panic!("{other:?}"),
            }
        }
        t += 1_000;
    }
    assert_eq!(resends.len(), MAX_RESENDS as usize, "{resends:?}");
    assert!(resends.windows(2).all(|w| w[1] - w[0] >= RESEND_SPACING_MS), "paced: {resends:?}");
    assert_eq!(p.status(), RecoveryStatus::RolloverRecommended { why: Spent::Incident });
    assert_eq!(p.resends_left(t), 0);

    // No proof, no resend: a snapshot that could not be read, one that holds the turn (the
    // server at the user, or at a newer assistant), and a human's turn.
    let no_proof = [
        (ours_waiting("L1"), Snapshot::Unknown { why: "timeout".into() }),
        (ours_waiting("L1"), node("u2", ServerRole::User, false, T0 + REPLY_TIMEOUT_MS)),
        (ours_waiting("L1"), node("a2", ServerRole::Assistant, true, T0)),
        (waiting("L1"), not_accepted.clone()),
    ];
    for (facts, snapshot) in no_proof {
        let mut q = RecoveryPlanner::default();
        q.page(T0, facts);
        let mut t = T0 + REPLY_TIMEOUT_MS;
        while t < T0 + 5 * 60_000 {
            if q.tick(t) == Some(RecoveryAction::Probe) {
                assert_ne!(q.snapshot(t, &snapshot), Some(RecoveryAction::Resend), "{snapshot:?}");
            }
            t += 1_000;
        }
    }
    // The hour's bound holds across incidents: renewed budgets, still at most
    // MAX_RESUBMITS_PER_HOUR resubmissions in the hour.
    let mut p = RecoveryPlanner::default();
    let mut sent = 0;
    let mut t = T0;
    for i in 0..4 {
        p.page(t, ours_waiting(&format!("R{i}")));
        let end = t + 5 * 60_000;
        while t < end {
            if p.tick(t) == Some(RecoveryAction::Probe) && p.snapshot(t, &not_accepted) == Some(RecoveryAction::Resend) {
                sent += 1;
            }
            t += 1_000;
        }
        if i < 3 {
            p.turn_ended(true);
        }
    }
    assert!(t - T0 < HOUR_MS);
    assert_eq!(sent, MAX_RESUBMITS_PER_HOUR);
    assert_eq!(p.status(), RecoveryStatus::RolloverRecommended { why: Spent::Hour });
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
    Page {
        load: u8,
        generating: bool,
        waiting: bool,
        signature: u8,
        error: Option<bool>,
        draft: bool,
        ours: bool,
    },
    Snapshot(u8),
    RateLimited,
    Restart,
    /// A turn ended on the page: the human's (`true`) or one of ours.
    TurnEnded(bool),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..3, any::<bool>(), any::<bool>(), 0u8..3, prop::option::of(any::<bool>()), prop::bool::weighted(0.1), any::<bool>())
            .prop_map(|(load, generating, waiting, signature, error, draft, ours)| Op::Page { load, generating, waiting, signature, error, draft, ours }),
        4 => (0u8..6).prop_map(Op::Snapshot),
        1 => Just(Op::RateLimited),
        1 => Just(Op::Restart),
        2 => any::<bool>().prop_map(Op::TurnEnded),
        4 => prop_oneof![(1_000u64..90_000), (600_000u64..1_800_000)].prop_map(Op::Advance),
    ]
}

proptest! {
    /// S4, S5, S7, H5, H7 (issue 26 acceptance 3: budgets bounded per hour across any
    /// interleaving): random faults, snapshots, timings, healthy turns that renew the
    /// budgets, and restarts never exceed the budgets of an incident (one Retry, two
    /// resends, one page reload, one tab reload between renewals), never exceed the hourly
    /// bounds in any rolling hour (MAX_RELOADS_PER_HOUR reloads, MAX_RESUBMITS_PER_HOUR
    /// Retry clicks and resends), never act on `unknown` without a send-timeout error, never
    /// click Retry when the server is ahead (no resubmit), never resend without the
    /// snapshot proving the server lacks our waiting turn, and never probe during a 429
    /// cooldown.
    #[test]
    fn budgets_hold_per_incident_and_per_hour_and_unknown_never_acts(ops in prop::collection::vec(op(), 1..120)) {
        let mut p = RecoveryPlanner::default();
        let mut now = T0;
        // Per incident: Retry, page reload, tab reload, resend.
        let mut counts = [0u32; 4];
        let mut reloads: Vec<u64> = Vec::new();
        let mut resubmits: Vec<u64> = Vec::new();
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
                Op::Page { load, generating, waiting, signature, error, draft, ours } => {
                    facts = RecoveryFacts {
                        page_load: format!("L{load}"),
                        generating,
                        view: DomView { last_assistant: Some(DomMessage { id: Some("a1".into()), text_len: 500, streaming: generating }), user_waiting: waiting, reasoning: false },
                        signature: format!("s{signature}"),
                        send_timeout: error,
                        human_draft: draft,
                        ours_waiting: ours && waiting,
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
                    if action == Some(RecoveryAction::Resend) {
                        // Proof: the server's current node is the page's last assistant
                        // message, finished, and the waiting turn is ours.
                        prop_assert!(i == 1 && facts.ours_waiting && facts.view.user_waiting && facts.send_timeout.is_none(), "resend without proof: {i} {facts:?}");
                    }
                }
                Op::RateLimited => p.rate_limited(now),
                Op::Restart => {
                    p = ext_core::json_read::from_str::<RecoveryPlanner>(&serde_json::to_string(&p).expect("json")).expect("read");
                    p.restored();
                    probe_out = false;
                    action = p.page(now, facts.clone());
                }
                Op::TurnEnded(human) => {
                    if p.turn_ended(human) {
                        counts = [0; 4];
                    }
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
                Some(RecoveryAction::ClickRetry) => {
                    counts[0] += 1;
                    resubmits.push(now);
                }
                Some(RecoveryAction::ReloadPage) => {
                    counts[1] += 1;
                    reloads.push(now);
                }
                Some(RecoveryAction::ReloadTab) => {
                    counts[2] += 1;
                    reloads.push(now);
                }
                Some(RecoveryAction::Resend) => {
                    counts[3] += 1;
                    resubmits.push(now);
                }
                None => {}
            }
            prop_assert!(counts[..3].iter().all(|c| *c <= 1) && counts[3] <= MAX_RESENDS, "S7: incident budgets exceeded {counts:?}");
            prop_assert!(counts[2] == 0 || counts[1] == 1, "H5: tab reload before page reload");
            let in_hour = |times: &[u64]| times.iter().filter(|at| now - **at < HOUR_MS).count();
            prop_assert!(in_hour(&reloads) <= MAX_RELOADS_PER_HOUR, "reloads in an hour: {reloads:?} at {now}");
            prop_assert!(in_hour(&resubmits) <= MAX_RESUBMITS_PER_HOUR, "resubmissions in an hour: {resubmits:?} at {now}");
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
