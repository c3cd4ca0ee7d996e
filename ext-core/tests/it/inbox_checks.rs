//! Inbox checks (SPEC I2: the parent inbox is the truth, a settle only a trigger; P9: a
//! reconnect loses no result; I4), the machine of `ext-core/src/inbox_checks.rs`:
//! transcripts of its steps, the due flag an earlier release saved in a scope, and a
//! property test — at most one check per scope out, reads only of due quiet scopes, wakes
//! only on a quiet scope still bound to the workspace read, and nothing answered while the
//! scope was busy is lost.

use expect_test::expect;
use ext_core::continuity::{Continuity, InboxTask};
use ext_core::inbox_checks::{CheckAnswer, DueBecause, InboxCheckInput, InboxCheckOutput, InboxChecks};
use ext_core::snapshot::Snapshot;
use proptest::prelude::*;

use crate::check_herdr::machine_transcript;
use crate::continuity::{bound_with_auto, task};

fn printed(output: &InboxCheckOutput) -> String {
    match output {
        InboxCheckOutput::Read { key, session_ref } => format!("read {key} ref={session_ref}"),
        InboxCheckOutput::NoInbox { key } => format!("no_inbox {key}"),
        InboxCheckOutput::Wake { key, first, tasks } => {
            let ids: Vec<&str> = tasks.iter().map(|t| t.task_id.as_str()).collect();
            format!("wake {key} first={first} tasks={ids:?}")
        }
    }
}

fn transcript(steps: Vec<(&str, InboxCheckInput)>) -> String {
    let state = |m: &InboxChecks| {
        let due = ["a", "b"].iter().filter(|k| m.is_due(k)).copied().collect::<Vec<_>>().join(",");
        let out = ["a", "b"].iter().filter(|k| m.in_flight(k)).copied().collect::<Vec<_>>().join(",");
        format!(" [due=[{due}] out=[{out}]]")
    };
    let mut machine = InboxChecks::default();
    let out = machine_transcript(&mut machine, steps, |m, i| m.handle(0, i), InboxChecks::poll, printed, state);
    assert_eq!(machine.next_deadline(), None, "no timers");
    out
}

fn due(key: &str, because: DueBecause) -> InboxCheckInput {
    InboxCheckInput::Due { key: key.into(), because }
}

fn quiet(key: &str, ws: &str) -> InboxCheckInput {
    InboxCheckInput::Quiet { key: key.into(), workspace_id: ws.into(), session_ref: format!("ref-{key}") }
}

fn answered(key: &str, tasks: &[&str], more: bool, bound_to: Option<&str>, quiet: bool) -> InboxCheckInput {
    let tasks = tasks.iter().map(|t| task(t)).collect();
    InboxCheckInput::Answered { key: key.into(), answer: CheckAnswer::Tasks { tasks, more }, bound_to: bound_to.map(Into::into), quiet }
}

#[test]
fn a_due_check_is_read_once_the_scope_is_quiet_and_its_tasks_wake_once() {
    let out = transcript(vec![
        ("quiet, not due", quiet("a", "w1")),
        ("bound", due("a", DueBecause::Bound)),
        ("quiet", quiet("a", "w1")),
        ("grew meanwhile", due("a", DueBecause::UnackedGrew)),
        ("quiet again", quiet("a", "w1")),
        ("answer", answered("a", &["t2", "t1"], false, Some("w1"), true)),
        ("quiet", quiet("a", "w1")),
        ("read", quiet("a", "w1")),
        ("nothing", answered("a", &[], false, Some("w1"), true)),
        ("answer again", answered("a", &["t3"], false, Some("w1"), true)),
    ]);
    expect![[r#"
        quiet, not due   → - [due=[] out=[]]
        bound            → - [due=[a] out=[]]
        quiet            → read a ref=ref-a [due=[] out=[a]]
        grew meanwhile   → - [due=[a] out=[a]]
        quiet again      → - [due=[a] out=[a]]
        answer           → wake a first=t1 tasks=["t2", "t1"] [due=[a] out=[]]
        quiet            → read a ref=ref-a [due=[] out=[a]]
        read             → - [due=[] out=[a]]
        nothing          → - [due=[] out=[]]
        answer again     → - [due=[] out=[]]
    "#]]
    .assert_eq(&out);
}

#[test]
fn a_busy_or_rebound_scope_keeps_its_tasks_for_a_later_read() {
    let out = transcript(vec![
        ("reconnected", InboxCheckInput::Reconnected { keys: vec!["a".into(), "b".into()] }),
        ("a quiet", quiet("a", "w1")),
        ("reconnected", InboxCheckInput::Reconnected { keys: vec!["a".into(), "b".into()] }),
        ("a busy answer", answered("a", &["t1"], false, Some("w1"), false)),
        ("b quiet", quiet("b", "w2")),
        ("b settles", InboxCheckInput::SettleRead { key: "b".into() }),
        ("b rebound", answered("b", &["t9"], false, Some("w3"), true)),
        ("a quiet", quiet("a", "w1")),
        ("a paging", answered("a", &["t1"], true, Some("w1"), true)),
        ("a quiet", quiet("a", "w1")),
        (
            "a no inbox",
            InboxCheckInput::Answered { key: "a".into(), answer: CheckAnswer::NoInbox, bound_to: Some("w1".into()), quiet: true },
        ),
        ("a failed", InboxCheckInput::Answered { key: "a".into(), answer: CheckAnswer::Failed, bound_to: Some("w1".into()), quiet: true }),
        ("wake ended", due("a", DueBecause::WakeEndedWithTasks)),
        ("a unbound", InboxCheckInput::Unbound { key: "a".into() }),
        ("settle short", due("b", DueBecause::SettleReadIncomplete)),
    ]);
    expect![[r#"
        reconnected      → - [due=[a,b] out=[]]
        a quiet          → read a ref=ref-a [due=[b] out=[a]]
        reconnected      → - [due=[b] out=[a]]
        a busy answer    → - [due=[a,b] out=[]]
        b quiet          → read b ref=ref-b [due=[a] out=[b]]
        b settles        → - [due=[a] out=[b]]
        b rebound        → - [due=[a] out=[]]
        a quiet          → read a ref=ref-a [due=[] out=[a]]
        a paging         → wake a first=t1 tasks=["t1"] [due=[a] out=[]]
        a quiet          → read a ref=ref-a [due=[] out=[a]]
        a no inbox       → no_inbox a [due=[] out=[]]
        a failed         → - [due=[] out=[]]
        wake ended       → - [due=[a] out=[]]
        a unbound        → - [due=[] out=[]]
        settle short     → - [due=[b] out=[]]
    "#]]
    .assert_eq(&out);
}

/// A snapshot of an earlier release kept a due check as `scopes.*.inbox_check_due`: it is
/// due after the restore, and written in the snapshot's `inbox_checks` from then on.
#[test]
fn an_earlier_release_s_due_flag_restores_into_the_checks() {
    let (c, _) = bound_with_auto(false);
    let mut json = c.snapshot_value();
    let key = "chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0";
    json.as_object_mut().expect("an object").remove("inbox_checks");
    json["scopes"][key]["inbox_check_due"] = serde_json::Value::Bool(true);
    let restored = Continuity::from_snapshot(Snapshot::read(&json).expect("an earlier release's snapshot reads"), 1, "r");
    let written = restored.snapshot_value();
    assert_eq!(written["inbox_checks"]["due"], serde_json::json!([key]), "{written}");
    assert!(written["scopes"][key].get("inbox_check_due").is_none(), "the old place is read, never written");
}

#[derive(Debug, Clone)]
enum Op {
    Due(usize),
    Reconnected,
    SettleRead(usize),
    Unbound(usize),
    /// The scope is quiet (if the world's scope is bound and idle) and reported so.
    Quiet(usize),
    /// Work starts / ends in the scope's workspace.
    Busy(usize, bool),
    /// The scope is bound again, to another workspace.
    Rebind(usize),
    /// The runtime answers the scope's check (`n` new tasks, `more`, or a failure).
    Answer(usize, u8, bool, bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (0usize..2).prop_map(Op::Due),
        1 => Just(Op::Reconnected),
        1 => (0usize..2).prop_map(Op::SettleRead),
        1 => (0usize..2).prop_map(Op::Unbound),
        3 => (0usize..2).prop_map(Op::Quiet),
        1 => (0usize..2, any::<bool>()).prop_map(|(s, b)| Op::Busy(s, b)),
        1 => (0usize..2).prop_map(Op::Rebind),
        3 => (0usize..2, 0u8..3, proptest::bool::weighted(0.2), proptest::bool::weighted(0.9)).prop_map(|(s, n, m, ok)| Op::Answer(s, n, m, ok)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// I2, I4, P9: at most one check per scope out; a read only for a due scope reported
    /// quiet; a wake only from an answer on a quiet scope still bound to the workspace read;
    /// a result answered while the scope was busy is read again (the check stays due), so
    /// once the world is quiet every unacknowledged task the runtime holds wakes the scope.
    #[test]
    fn no_result_is_stranded_and_no_scope_has_two_checks_out(ops in proptest::collection::vec(op(), 1..60)) {
        let keys = ["a", "b"];
        let mut m = InboxChecks::default();
        // The world: per scope, bound workspace (None = unbound), busy, check out (workspace read).
        let mut bound: [Option<u32>; 2] = [Some(0), Some(0)];
        let mut busy = [false, false];
        let mut out: [Option<u32>; 2] = [None, None];
        // Tasks the runtime holds, unacknowledged, and those a wake took.
        let mut held: [Vec<String>; 2] = [Vec::new(), Vec::new()];
        let mut next_task = 0u32;
        m.handle(0, InboxCheckInput::Reconnected { keys: keys.iter().map(|k| k.to_string()).collect() });
        let step = |m: &mut InboxChecks, input: InboxCheckInput, out: &mut [Option<u32>; 2], bound: &[Option<u32>; 2], busy: &[bool; 2], held: &mut [Vec<String>; 2]| -> Result<(), TestCaseError> {
            let reported_quiet = match &input { InboxCheckInput::Quiet { key, .. } => Some(key.clone()), _ => None };
            let answered = match &input { InboxCheckInput::Answered { key, bound_to, quiet, .. } => Some((key.clone(), bound_to.clone(), *quiet)), _ => None };
            m.handle(0, input);
            while let Some(output) = m.poll() {
                match output {
                    InboxCheckOutput::Read { key, .. } => {
                        let s = keys.iter().position(|k| *k == key).expect("a known scope");
                        prop_assert_eq!(reported_quiet.as_deref(), Some(key.as_str()), "read only when reported quiet");
                        prop_assert!(out[s].is_none(), "two checks of {} out", key);
                        prop_assert!(bound[s].is_some() && !busy[s]);
                        out[s] = bound[s];
                    }
                    InboxCheckOutput::Wake { key, tasks, first } => {
                        let (answered_key, bound_to, quiet) = answered.clone().expect("a wake only from an answer");
                        prop_assert_eq!(&answered_key, &key);
                        prop_assert!(quiet, "a wake on a busy scope");
                        let s = keys.iter().position(|k| *k == key).expect("a known scope");
                        prop_assert_eq!(bound_to.map(|w| w.trim_start_matches('w').parse::<u32>().expect("a world workspace")), bound[s]);
                        prop_assert!(!tasks.is_empty());
                        prop_assert_eq!(Some(&first), tasks.iter().map(|t| &t.task_id).min());
                        held[s].retain(|t| !tasks.iter().any(|x| &x.task_id == t));
                    }
                    InboxCheckOutput::NoInbox { .. } => prop_assert!(false, "the world's runtime has an inbox"),
                }
                prop_assert!(keys.iter().all(|k| !(m.in_flight(k) && out[keys.iter().position(|x| x == k).expect("a world scope")].is_none())));
            }
            Ok(())
        };
        for op in ops {
            let input = match op {
                Op::Due(s) => {
                    if bound[s].is_none() { continue }
                    InboxCheckInput::Due { key: keys[s].into(), because: DueBecause::UnackedGrew }
                }
                Op::Reconnected => InboxCheckInput::Reconnected { keys: keys.iter().zip(bound).filter(|(_, b)| b.is_some()).map(|(k, _)| k.to_string()).collect() },
                Op::SettleRead(s) => {
                    // A settle's own read carries every held task of the scope.
                    held[s].clear();
                    InboxCheckInput::SettleRead { key: keys[s].into() }
                }
                Op::Unbound(s) => {
                    bound[s] = None;
                    held[s].clear();
                    InboxCheckInput::Unbound { key: keys[s].into() }
                }
                Op::Quiet(s) => {
                    if bound[s].is_none() || busy[s] || m.in_flight(keys[s]) || !m.is_due(keys[s]) { continue }
                    InboxCheckInput::Quiet { key: keys[s].into(), workspace_id: format!("w{}", bound[s].expect("bound")), session_ref: keys[s].into() }
                }
                Op::Busy(s, b) => { busy[s] = b; continue }
                Op::Rebind(s) => {
                    // Its chat's results stay in the inbox: the binding's own check reads them.
                    bound[s] = Some(bound[s].map_or(0, |w| w + 1));
                    InboxCheckInput::Due { key: keys[s].into(), because: DueBecause::Bound }
                }
                Op::Answer(s, n, more, ok) => {
                    let Some(_) = out[s].take() else { continue };
                    // New results landed in the runtime; it answers with all it holds.
                    for _ in 0..n { next_task += 1; held[s].push(format!("t{next_task:03}")); }
                    let answer = if ok {
                        let tasks: Vec<InboxTask> = held[s].iter().map(|t| task(t)).collect();
                        CheckAnswer::Tasks { tasks, more }
                    } else {
                        CheckAnswer::Failed
                    };
                    let (answer, quiet) = (answer, bound[s].is_some() && !busy[s]);
                    step(&mut m, InboxCheckInput::Answered { key: keys[s].into(), answer, bound_to: bound[s].map(|w| format!("w{w}")), quiet }, &mut out, &bound, &busy, &mut held)?;
                    // New results are announced (`inbox_changed`, I2), and a failed read is
                    // made due again by the next one: either way the check is due again.
                    if n == 0 && ok { continue }
                    InboxCheckInput::Due { key: keys[s].into(), because: DueBecause::UnackedGrew }
                }
            };
            if let InboxCheckInput::Due { key, .. } = &input {
                let s = keys.iter().position(|k| k == key).expect("a world scope");
                if bound[s].is_none() { continue }
            }
            step(&mut m, input, &mut out, &bound, &busy, &mut held)?;
        }
        // The world goes quiet: every bound scope's held tasks wake it, after at most a few
        // rounds of quiet reports and answers.
        busy = [false, false];
        for _ in 0..4 {
            for s in 0..2 {
                if bound[s].is_some() && m.is_due(keys[s]) && !m.in_flight(keys[s]) {
                    let input = InboxCheckInput::Quiet { key: keys[s].into(), workspace_id: format!("w{}", bound[s].expect("bound")), session_ref: keys[s].into() };
                    step(&mut m, input, &mut out, &bound, &busy, &mut held)?;
                }
                if out[s].take().is_some() {
                    let tasks: Vec<InboxTask> = held[s].iter().map(|t| task(t)).collect();
                    let input = InboxCheckInput::Answered { key: keys[s].into(), answer: CheckAnswer::Tasks { tasks, more: false }, bound_to: bound[s].map(|w| format!("w{w}")), quiet: true };
                    step(&mut m, input, &mut out, &bound, &busy, &mut held)?;
                }
            }
        }
        for s in 0..2 {
            if bound[s].is_some() {
                prop_assert!(held[s].is_empty(), "scope {} stranded {:?}", keys[s], held[s]);
            }
        }
    }
}
