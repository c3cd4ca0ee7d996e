//! Goal mode of one scope (SPEC J7): priors advise, evidence and guards decide; one
//! continue per ended turn at most; every decision names what decided.

use expect_test::expect;
use ext_core::goal_supervisor::{
    Evidence, GoalAction, GoalInput, GoalOutput, GoalSupervisor, GoalWhy, Priors, WorkspaceState, ANSWER_TIMEOUT_MS,
};
use proptest::prelude::*;

fn evidence(open: u32, done: u32) -> Evidence {
    Evidence { goal: Some("ship the parser".into()), todo_open: open, todo_done: done, open_tasks: 0, workspace: WorkspaceState::Idle }
}

fn continue_prior() -> Priors {
    Priors(vec![("can_continue".into(), 97), ("task_completed".into(), 3)])
}

fn ended(auto_on: bool) -> GoalInput {
    GoalInput::TurnEnded { auto_on, queue_waiting: false }
}

/// One line per output.
fn trace(m: &mut GoalSupervisor) -> String {
    let mut out = String::new();
    while let Some(o) = m.poll() {
        let line = match o {
            GoalOutput::FetchEvidence { turn } => format!("fetch_evidence turn={turn}"),
            GoalOutput::AskPriors { turn } => format!("ask_priors turn={turn}"),
            GoalOutput::Decided(d) => {
                format!("{:?} turn={} goalWhy_{} {:?} advice=[{}]", d.action, d.turn, d.why.code(), d.why.args(), d.priors.line())
            }
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// A turn answered with `evidence` and the "continue" prior.
fn answered(m: &mut GoalSupervisor, now: u64, turn: u64, evidence: Result<Evidence, String>) -> String {
    m.handle(now, ended(true));
    m.handle(now, GoalInput::Evidence { turn, evidence });
    m.handle(now, GoalInput::Priors { turn, priors: Some(continue_prior()) });
    trace(m)
}

// R: J7 — with a goal set and Auto on, Goal mode continues while the goal's TODO items are
// open, and stops when they are done, even against a strong "continue" prior.
#[test]
fn continues_while_todos_are_open_and_stops_when_done_against_the_prior_j7() {
    let mut m = GoalSupervisor::new(8, 0);
    m.handle(0, GoalInput::GoalSet { text: "  ship the parser ".into() });
    assert_eq!(m.goal(), Some("ship the parser"));
    let mut log = answered(&mut m, 1_000, 1, Ok(evidence(2, 1)));
    m.handle(1_100, GoalInput::ContinueResolved { confirmed: true });
    log += &answered(&mut m, 2_000, 2, Ok(evidence(0, 3)));
    expect![[r#"
        fetch_evidence turn=1
        ask_priors turn=1
        Continue turn=1 goalWhy_todos_open ["2", "1"] advice=[can_continue 97%, task_completed 3%]
        fetch_evidence turn=2
        ask_priors turn=2
        Stop turn=2 goalWhy_todos_done ["3"] advice=[can_continue 97%, task_completed 3%]
    "#]]
    .assert_eq(&log);
    assert_eq!(m.rounds(), 1);
}

// R: J7 — evidence missing, late or failed stops (fail closed); no goal at the runtime
// clears the goal; nothing open stops; a blocked workspace stops; running tasks wait.
#[test]
fn each_piece_of_evidence_names_its_decision_j7() {
    let mut m = GoalSupervisor::new(8, 0);
    m.handle(0, GoalInput::GoalSet { text: "ship".into() });
    let mut log = answered(&mut m, 10, 1, Err("goal.evidence: scope is not bound".into()));
    log += &answered(&mut m, 20, 2, Ok(evidence(0, 0)));
    log += &answered(&mut m, 30, 3, Ok(Evidence { workspace: WorkspaceState::Blocked, ..evidence(2, 0) }));
    log += &answered(&mut m, 40, 4, Ok(Evidence { open_tasks: 2, workspace: WorkspaceState::Working, ..evidence(1, 0) }));
    // The evidence never comes: the deadline decides, fail closed.
    m.handle(50, ended(true));
    m.handle(50, GoalInput::Priors { turn: 5, priors: None });
    assert_eq!(m.next_deadline(), Some(50 + ANSWER_TIMEOUT_MS));
    m.handle(49 + ANSWER_TIMEOUT_MS, GoalInput::Tick);
    log += &trace(&mut m);
    m.handle(50 + ANSWER_TIMEOUT_MS, GoalInput::Tick);
    log += &trace(&mut m);
    log += &answered(&mut m, 60_000, 6, Ok(Evidence { goal: None, ..evidence(3, 0) }));
    assert_eq!(m.goal(), None);
    // No goal: an ended turn is not Goal mode's.
    m.handle(70_000, ended(true));
    log += &trace(&mut m);
    expect![[r#"
        fetch_evidence turn=1
        ask_priors turn=1
        Stop turn=1 goalWhy_evidence_unavailable ["goal.evidence: scope is not bound"] advice=[]
        fetch_evidence turn=2
        ask_priors turn=2
        Stop turn=2 goalWhy_nothing_open [] advice=[can_continue 97%, task_completed 3%]
        fetch_evidence turn=3
        ask_priors turn=3
        Stop turn=3 goalWhy_workspace_blocked [] advice=[can_continue 97%, task_completed 3%]
        fetch_evidence turn=4
        ask_priors turn=4
        Stop turn=4 goalWhy_tasks_running ["2"] advice=[can_continue 97%, task_completed 3%]
        fetch_evidence turn=5
        ask_priors turn=5
        Stop turn=5 goalWhy_evidence_unavailable ["the runtime did not answer in time"] advice=[]
        fetch_evidence turn=6
        ask_priors turn=6
        Stop turn=6 goalWhy_no_goal [] advice=[can_continue 97%, task_completed 3%]
    "#]]
    .assert_eq(&log);
}

// R: J7, M7 — the guards: Auto off, the user's Stop until a human turn, queued messages,
// a continue still out, the round limit; and the cooldown holds a continue back and asks
// the evidence afresh when it ends.
#[test]
fn guards_say_no_and_the_cooldown_asks_again_j7() {
    let mut m = GoalSupervisor::new(2, 10_000);
    m.handle(0, GoalInput::GoalSet { text: "ship".into() });
    m.handle(0, ended(false));
    m.handle(0, GoalInput::TurnEnded { auto_on: true, queue_waiting: true });
    m.handle(0, GoalInput::UserStopped);
    m.handle(0, ended(true));
    m.handle(0, GoalInput::HumanTurn);
    let mut log = trace(&mut m);
    log += &answered(&mut m, 100, 4, Ok(evidence(2, 0)));
    // The continue is still out.
    m.handle(200, ended(true));
    log += &trace(&mut m);
    m.handle(300, GoalInput::ContinueResolved { confirmed: true });
    // Within the cooldown: held, then asked afresh; the fresh evidence decides.
    log += &answered(&mut m, 400, 6, Ok(evidence(2, 0)));
    assert_eq!(m.next_deadline(), Some(10_100));
    m.handle(10_100, GoalInput::Tick);
    m.handle(10_200, GoalInput::Evidence { turn: 6, evidence: Ok(evidence(1, 1)) });
    log += &trace(&mut m);
    m.handle(10_300, GoalInput::ContinueResolved { confirmed: true });
    // Two rounds: the bound.
    m.handle(30_000, ended(true));
    log += &trace(&mut m);
    // Auto switched off while the evidence is out.
    m.handle(30_100, GoalInput::HumanTurn);
    m.handle(30_200, ended(true));
    m.handle(30_300, GoalInput::AutoOff);
    m.handle(30_400, GoalInput::Evidence { turn: 8, evidence: Ok(evidence(2, 0)) });
    log += &trace(&mut m);
    expect![[r#"
        Stop turn=1 goalWhy_auto_off [] advice=[]
        Stop turn=2 goalWhy_queue_first [] advice=[]
        Stop turn=3 goalWhy_user_stopped [] advice=[]
        fetch_evidence turn=4
        ask_priors turn=4
        Continue turn=4 goalWhy_todos_open ["2", "0"] advice=[can_continue 97%, task_completed 3%]
        Stop turn=5 goalWhy_busy [] advice=[]
        fetch_evidence turn=6
        ask_priors turn=6
        fetch_evidence turn=6
        Continue turn=6 goalWhy_todos_open ["1", "1"] advice=[can_continue 97%, task_completed 3%]
        Stop turn=7 goalWhy_round_limit ["2"] advice=[]
        fetch_evidence turn=8
        ask_priors turn=8
        Stop turn=8 goalWhy_auto_off [] advice=[]
    "#]]
    .assert_eq(&log);
}

#[derive(Debug, Clone)]
enum Op {
    Set,
    Clear,
    Ended { auto_on: bool, queue: bool },
    Evidence { stale: bool, open: u32, done: u32, tasks: u32, working: bool, fail: bool },
    Priors { stale: bool, can_continue: u8 },
    Stop,
    Human,
    AutoOff,
    Resolved(bool),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => Just(Op::Set),
        1 => Just(Op::Clear),
        4 => (any::<bool>(), prop::bool::weighted(0.2)).prop_map(|(a, q)| Op::Ended { auto_on: a || q, queue: q }),
        4 => (prop::bool::weighted(0.2), 0u32..3, 0u32..3, 0u32..2, any::<bool>(), prop::bool::weighted(0.1))
            .prop_map(|(stale, open, done, tasks, working, fail)| Op::Evidence { stale, open, done, tasks, working, fail }),
        3 => (prop::bool::weighted(0.2), 0u8..=100).prop_map(|(stale, can_continue)| Op::Priors { stale, can_continue }),
        1 => Just(Op::Stop),
        1 => Just(Op::Human),
        1 => Just(Op::AutoOff),
        2 => any::<bool>().prop_map(Op::Resolved),
        2 => (0u64..40_000).prop_map(Op::Advance),
    ]
}

proptest! {
    /// J7: whatever the order of turns, answers (also stale ones), Stops, human turns,
    /// Auto switches, deliveries and time: a continue follows only evidence of open TODO
    /// items of the goal for that very turn (the priors never decide); never with Auto off,
    /// after the user's Stop until a human turn, while a continue is out, within the
    /// cooldown, past the round limit, or without a goal; at most one per ended turn; and
    /// every turn is decided at most once.
    #[test]
    fn priors_advise_evidence_and_guards_decide(max in 1u32..4, ops in prop::collection::vec(op(), 1..120)) {
        let cooldown = 5_000;
        let mut m = GoalSupervisor::new(max, cooldown);
        let mut now = 1u64;
        let mut turns = 0u64;
        let (mut stopped, mut auto_off_since_turn, mut out) = (false, false, false);
        let mut rounds = 0u32;
        let mut last_continue: Option<u64> = None;
        // The first evidence given for a turn since its last fetch (what the machine reads).
        let mut evidence_of: Vec<(u64, bool)> = Vec::new();
        let mut decided: Vec<u64> = Vec::new();
        let mut goal = false;
        for op in ops {
            match op {
                Op::Set => { m.handle(now, GoalInput::GoalSet { text: "ship".into() }); if !goal { rounds = 0; } goal = true; }
                Op::Clear => { m.handle(now, GoalInput::GoalCleared); goal = false; rounds = 0; }
                Op::Ended { auto_on, queue } => {
                    if goal { turns += 1; }
                    auto_off_since_turn = !auto_on;
                    m.handle(now, GoalInput::TurnEnded { auto_on, queue_waiting: queue });
                }
                Op::Evidence { stale, open, done, tasks, working, fail } => {
                    let turn = if stale { turns.saturating_sub(1) } else { turns };
                    let e = Evidence { goal: Some("ship".into()), todo_open: open, todo_done: done, open_tasks: tasks, workspace: if working { WorkspaceState::Working } else { WorkspaceState::Idle } };
                    let opens = !fail && open > 0 && !(tasks > 0 && working);
                    if !evidence_of.iter().any(|(t, _)| *t == turn) {
                        evidence_of.push((turn, opens));
                    }
                    m.handle(now, GoalInput::Evidence { turn, evidence: if fail { Err("failed".into()) } else { Ok(e) } });
                }
                Op::Priors { stale, can_continue } => {
                    let turn = if stale { turns.saturating_sub(1) } else { turns };
                    m.handle(now, GoalInput::Priors { turn, priors: Some(Priors(vec![("can_continue".into(), can_continue)])) });
                }
                Op::Stop => { stopped = true; m.handle(now, GoalInput::UserStopped); }
                Op::Human => { stopped = false; rounds = u32::from(out); m.handle(now, GoalInput::HumanTurn); }
                Op::AutoOff => { auto_off_since_turn = true; m.handle(now, GoalInput::AutoOff); }
                Op::Resolved(confirmed) => {
                    if std::mem::take(&mut out) && !confirmed { rounds = rounds.saturating_sub(1); }
                    m.handle(now, GoalInput::ContinueResolved { confirmed });
                }
                Op::Advance(ms) => { now += ms; m.handle(now, GoalInput::Tick); }
            }
            while let Some(o) = m.poll() {
                if let GoalOutput::FetchEvidence { turn } = o {
                    evidence_of.retain(|(t, _)| *t != turn);
                }
                if let GoalOutput::Decided(d) = o {
                    prop_assert!(!decided.contains(&d.turn), "turn {} decided twice", d.turn);
                    decided.push(d.turn);
                    if d.action == GoalAction::Continue {
                        prop_assert!(goal, "continued without a goal");
                        prop_assert!(!stopped, "continued after the user's Stop");
                        prop_assert!(!auto_off_since_turn, "continued with Auto off");
                        prop_assert!(!out, "a second continue while one is out");
                        prop_assert!(rounds < max, "continued past the round limit");
                        prop_assert!(last_continue.is_none_or(|at| now >= at + cooldown), "continued within the cooldown");
                        prop_assert!(evidence_of.contains(&(d.turn, true)), "continued without evidence of open TODO items for turn {}", d.turn);
                        let opened = matches!(d.why, GoalWhy::TodosOpen { open, .. } if open > 0);
                        prop_assert!(opened, "a continue not decided by open TODO items");
                        out = true;
                        rounds += 1;
                        last_continue = Some(now);
                    }
                }
            }
        }
    }
}
