//! Check Herdr (SPEC M4: read the live workspace and bring it into the chat), the machine
//! of `ext-core/src/check_herdr.rs`: transcripts of its steps, its place in `Continuity`
//! (a second press never mixes two runs) and a property test of its promises — a press on a
//! locked or unbound chat starts nothing, each run ends once, and only with its own panes.

use expect_test::expect;
use ext_core::auto_gate::ActionLocked;
use ext_core::check_herdr::{CheckHerdr, CheckInput, CheckOutput, MAX_PANE_READS};
use ext_core::continuity::{ContinuityInput, ContinuityOutput, PaneInfo, RuntimeAnswer, RuntimeCall};
use proptest::prelude::*;

use crate::continuity::{bound_with_auto, TAB};

fn pane(id: &str, agent: Option<&str>) -> PaneInfo {
    PaneInfo { pane_id: id.into(), agent: agent.map(Into::into), agent_status: "idle".into() }
}

fn printed(output: &CheckOutput) -> String {
    match output {
        CheckOutput::Refused { tab, why } => format!("refused tab={tab} {why:?}"),
        CheckOutput::ReadPanes { tab, run, workspace_id } => format!("read_panes tab={tab} run={run} {workspace_id}"),
        CheckOutput::ReadPane { tab, run, pane_id } => format!("read_pane tab={tab} run={run} {pane_id}"),
        CheckOutput::Failed { tab, message } => format!("failed tab={tab} {message:?}"),
        CheckOutput::Summary { tab, seq, workspace_id, panes, texts } => {
            let panes: Vec<&str> = panes.iter().map(|p| p.pane_id.as_str()).collect();
            let texts: Vec<String> = texts.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
            format!("summary tab={tab} seq={seq} {workspace_id} panes={panes:?} texts={texts:?}")
        }
    }
}

/// A machine's transcript (also of `inbox_checks` and `handoff_transfer`): per step its
/// name, what the machine asked for after it (`-`: nothing) and what `state` says of it.
pub(crate) fn machine_transcript<M, I, O>(
    machine: &mut M,
    steps: Vec<(&str, I)>,
    handle: impl Fn(&mut M, I),
    poll: impl Fn(&mut M) -> Option<O>,
    print: impl Fn(&O) -> String,
    state: impl Fn(&M) -> String,
) -> String {
    let mut out = String::new();
    for (name, input) in steps {
        handle(machine, input);
        let said: Vec<String> = std::iter::from_fn(|| poll(machine)).map(|o| print(&o)).collect();
        let said = if said.is_empty() { "-".to_owned() } else { said.join(" | ") };
        out += format!("{name:<16} → {said}{}", state(machine)).trim_end();
        out.push('\n');
    }
    out
}

fn transcript(steps: Vec<(&str, CheckInput)>) -> String {
    let mut machine = CheckHerdr::default();
    let out = machine_transcript(&mut machine, steps, |m, i| m.handle(0, i), CheckHerdr::poll, printed, |_| String::new());
    assert_eq!(machine.next_deadline(), None, "no timers");
    out
}

fn press(tab: u32, locked: Option<ActionLocked>, workspace: Option<&str>) -> CheckInput {
    CheckInput::Pressed { tab, locked, workspace_id: workspace.map(Into::into) }
}

fn text(tab: u32, run: u64, pane: &str, body: Option<&str>) -> CheckInput {
    CheckInput::PaneText { tab, run, pane_id: pane.into(), text: body.map(|b| (pane.to_owned(), b.to_owned())) }
}

#[test]
fn a_run_reads_the_agent_panes_and_ends_once_with_what_answered() {
    let out = transcript(vec![
        ("locked", press(7, Some(ActionLocked::AutoIsOn), Some("w1"))),
        ("no composer", press(7, Some(ActionLocked::NoComposerOnThisPage), None)),
        ("unbound", press(7, None, None)),
        ("press", press(7, None, Some("w1"))),
        (
            "panes",
            CheckInput::Panes { tab: 7, run: 1, panes: Ok(vec![pane("p1", Some("codex")), pane("p2", None), pane("p3", Some("claude"))]) },
        ),
        ("p3 fails", text(7, 1, "p3", None)),
        ("p3 again", text(7, 1, "p3", Some("late"))),
        ("p1", text(7, 1, "p1", Some("$ make"))),
        ("p1 again", text(7, 1, "p1", Some("$ make"))),
        ("press", press(7, None, Some("w1"))),
        ("panes fail", CheckInput::Panes { tab: 7, run: 2, panes: Err("herdr is down".into()) }),
        ("press", press(7, None, Some("w1"))),
        ("no panes", CheckInput::Panes { tab: 7, run: 3, panes: Ok(vec![pane("p2", None)]) }),
    ]);
    expect![[r#"
        locked           → refused tab=7 Locked(AutoIsOn)
        no composer      → refused tab=7 Locked(NoComposerOnThisPage)
        unbound          → refused tab=7 NotBound
        press            → read_panes tab=7 run=1 w1
        panes            → read_pane tab=7 run=1 p1 | read_pane tab=7 run=1 p3
        p3 fails         → -
        p3 again         → -
        p1               → summary tab=7 seq=1 w1 panes=["p1", "p2", "p3"] texts=["p1=\"$ make\""]
        p1 again         → -
        press            → read_panes tab=7 run=2 w1
        panes fail       → failed tab=7 "herdr is down"
        press            → read_panes tab=7 run=3 w1
        no panes         → summary tab=7 seq=2 w1 panes=["p2"] texts=[]
    "#]]
    .assert_eq(&out);
}

#[test]
fn a_new_press_replaces_the_run_and_answers_of_the_old_one_are_not_read() {
    let panes = |names: &[&str]| Ok(names.iter().map(|n| pane(n, Some("codex"))).collect());
    let out = transcript(vec![
        ("press", press(7, None, Some("w1"))),
        ("panes", CheckInput::Panes { tab: 7, run: 1, panes: panes(&["p1", "p2"]) }),
        ("press again", press(7, None, Some("w1"))),
        ("old p1", text(7, 1, "p1", Some("old"))),
        ("old panes", CheckInput::Panes { tab: 7, run: 1, panes: panes(&["p9"]) }),
        ("other tab", press(8, None, Some("w2"))),
        ("panes", CheckInput::Panes { tab: 7, run: 2, panes: panes(&["p1"]) }),
        ("tab 8 gone", CheckInput::PageGone { tab: 8 }),
        ("tab 8 panes", CheckInput::Panes { tab: 8, run: 3, panes: panes(&["q1"]) }),
        ("p1", text(7, 2, "p1", Some("new"))),
        ("press", press(7, None, Some("w1"))),
        ("link down", CheckInput::LinkDown),
        ("its panes", CheckInput::Panes { tab: 7, run: 4, panes: panes(&["p1"]) }),
    ]);
    expect![[r#"
        press            → read_panes tab=7 run=1 w1
        panes            → read_pane tab=7 run=1 p1 | read_pane tab=7 run=1 p2
        press again      → read_panes tab=7 run=2 w1
        old p1           → -
        old panes        → -
        other tab        → read_panes tab=8 run=3 w2
        panes            → read_pane tab=7 run=2 p1
        tab 8 gone       → -
        tab 8 panes      → -
        p1               → summary tab=7 seq=1 w1 panes=["p1"] texts=["p1=\"new\""]
        press            → read_panes tab=7 run=4 w1
        link down        → -
        its panes        → -
    "#]]
    .assert_eq(&out);
}

#[test]
fn at_most_eight_agent_panes_are_read() {
    let mut machine = CheckHerdr::default();
    machine.handle(0, press(7, None, Some("w1")));
    let _ = machine.poll();
    let panes = (0..12).map(|n| pane(&format!("p{n:02}"), Some("codex"))).collect();
    machine.handle(0, CheckInput::Panes { tab: 7, run: 1, panes: Ok(panes) });
    let reads = std::iter::from_fn(|| machine.poll()).filter(|o| matches!(o, CheckOutput::ReadPane { .. })).count();
    assert_eq!(reads, MAX_PANE_READS);
}

/// Through `Continuity`: a second press while the first run still reads inserts one
/// summary, of the second run's panes. Failed before (the runs were told apart by tab
/// only): the first run's late read ended the second run at once, with no panes, and the
/// second run's answers were then dropped.
#[test]
fn a_second_press_during_a_run_inserts_one_summary_of_its_own_panes() {
    let (mut c, _log) = bound_with_auto(false);
    let mut requests = Vec::new();
    let mut inserts = Vec::new();
    let take = |c: &mut ext_core::continuity::Continuity, requests: &mut Vec<_>, inserts: &mut Vec<String>| {
        while let Some(output) = c.poll() {
            match output {
                ContinuityOutput::Request { id, call: call @ (RuntimeCall::Panes { .. } | RuntimeCall::PaneRead { .. }) } => {
                    requests.push((id, call))
                }
                ContinuityOutput::Insert { text, .. } => inserts.push(text),
                _ => {}
            }
        }
    };
    c.handle(1, ContinuityInput::CheckHerdr { tab: TAB });
    take(&mut c, &mut requests, &mut inserts);
    let (first_panes, _) = requests.remove(0);
    let answer = RuntimeAnswer::Panes { panes: vec![pane("w1:p1", Some("codex"))] };
    c.handle(2, ContinuityInput::Answered { id: first_panes, result: Ok(answer) });
    take(&mut c, &mut requests, &mut inserts);
    let (first_read, _) = requests.remove(0);
    // Pressed again while the first run's read is out.
    c.handle(3, ContinuityInput::CheckHerdr { tab: TAB });
    take(&mut c, &mut requests, &mut inserts);
    let (second_panes, _) = requests.remove(0);
    let text = RuntimeAnswer::PaneText { pane_id: "w1:p1".into(), text: "first run".into() };
    c.handle(4, ContinuityInput::Answered { id: first_read, result: Ok(text) });
    take(&mut c, &mut requests, &mut inserts);
    assert!(inserts.is_empty(), "the first run's late read ends nothing: {inserts:?}");
    let answer = RuntimeAnswer::Panes { panes: vec![pane("w1:p2", Some("claude"))] };
    c.handle(5, ContinuityInput::Answered { id: second_panes, result: Ok(answer) });
    take(&mut c, &mut requests, &mut inserts);
    let (second_read, call) = requests.remove(0);
    assert!(matches!(&call, RuntimeCall::PaneRead { pane_id, .. } if pane_id == "w1:p2"), "{call:?}");
    let text = RuntimeAnswer::PaneText { pane_id: "w1:p2".into(), text: "second run".into() };
    c.handle(6, ContinuityInput::Answered { id: second_read, result: Ok(text) });
    take(&mut c, &mut requests, &mut inserts);
    assert_eq!(inserts.len(), 1, "{inserts:?}");
    assert!(inserts[0].contains("## w1:p2 (claude, idle)") && inserts[0].contains("second run"), "{}", inserts[0]);
    assert!(!inserts[0].contains("first run") && !inserts[0].contains("w1:p1"), "{}", inserts[0]);
}

/// One step of the property world: a press, or an answer to a call the machine made (or
/// to one of an earlier run), a page gone, the link lost.
#[derive(Debug, Clone)]
enum Op {
    Press {
        tab: u32,
        locked: bool,
        bound: bool,
    },
    /// Answer the `n`-th outstanding call (modulo their count), ok or failed.
    Answer {
        n: usize,
        ok: bool,
    },
    /// Replay the `n`-th answer already given (a late or duplicated answer).
    Replay {
        n: usize,
    },
    PageGone {
        tab: u32,
    },
    LinkDown,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (1u32..3, proptest::bool::weighted(0.2), proptest::bool::weighted(0.85))
            .prop_map(|(tab, locked, bound)| Op::Press { tab, locked, bound }),
        4 => (any::<usize>(), proptest::bool::weighted(0.8)).prop_map(|(n, ok)| Op::Answer { n, ok }),
        1 => (any::<usize>()).prop_map(|n| Op::Replay { n }),
        1 => (1u32..3).prop_map(|tab| Op::PageGone { tab }),
        1 => Just(Op::LinkDown),
    ]
}

/// The panes the world's runtime lists for a run: a mix of agent and plain panes (more
/// agents than are read, now and then).
fn listing(run: u64) -> Vec<PaneInfo> {
    (0..(run % 11)).map(|n| pane(&format!("r{run}p{n}"), (n % 3 != 2).then_some("codex"))).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// M4: a locked or unbound press starts nothing and is answered with its reason; every
    /// run ends at most once, only after its list and every read of it answered, with its
    /// own panes only; at most eight reads per run; summary numbers (nonce ids) never repeat.
    #[test]
    fn every_run_ends_once_with_its_own_panes(ops in proptest::collection::vec(op(), 1..60)) {
        let mut machine = CheckHerdr::default();
        // Calls out: (tab, run, Some(pane) for a read / None for the list).
        let mut out: Vec<(u32, u64, Option<String>)> = Vec::new();
        let mut given: Vec<CheckInput> = Vec::new();
        // Per run: its tab, reads asked, reads answered, whether it ended.
        let mut runs: std::collections::BTreeMap<u64, (u32, Vec<String>, Vec<String>, bool)> = Default::default();
        let mut seqs = Vec::new();
        for op in ops {
            let input = match op {
                Op::Press { tab, locked, bound } => press(tab, locked.then_some(ActionLocked::AutoIsOn), bound.then_some("w1")),
                Op::Answer { n, ok } => {
                    if out.is_empty() { continue }
                    let (tab, run, read) = out.remove(n % out.len());
                    let input = match read {
                        None => CheckInput::Panes { tab, run, panes: if ok { Ok(listing(run)) } else { Err("down".into()) } },
                        Some(pane) => {
                            if let Some(r) = runs.get_mut(&run) { r.2.push(pane.clone()) }
                            text(tab, run, &pane, ok.then_some("tail"))
                        }
                    };
                    given.push(input.clone());
                    input
                }
                Op::Replay { n } => match given.get(n % given.len().max(1)) { Some(input) => input.clone(), None => continue },
                Op::PageGone { tab } => CheckInput::PageGone { tab },
                Op::LinkDown => {
                    // The composition answers every call of the lost link first, as errors.
                    for (tab, run, read) in std::mem::take(&mut out) {
                        let input = match read {
                            None => CheckInput::Panes { tab, run, panes: Err("disconnected".into()) },
                            Some(pane) => {
                                if let Some(r) = runs.get_mut(&run) { r.2.push(pane.clone()) }
                                text(tab, run, &pane, None)
                            }
                        };
                        machine.handle(0, input);
                    }
                    CheckInput::LinkDown
                }
            };
            let pressed = match &input { CheckInput::Pressed { tab, locked, workspace_id } => Some((*tab, locked.is_some() || workspace_id.is_none())), _ => None };
            machine.handle(0, input);
            // The outputs of that input (and of the link's answers before it).
            while let Some(output) = machine.poll() {
                match output {
                    CheckOutput::Refused { tab, .. } => prop_assert_eq!(pressed, Some((tab, true)), "refused without a refused press"),
                    CheckOutput::ReadPanes { tab, run, .. } => {
                        prop_assert_eq!(pressed, Some((tab, false)), "a run starts only from an open press of a bound chat");
                        prop_assert!(runs.insert(run, (tab, Vec::new(), Vec::new(), false)).is_none(), "run {} started twice", run);
                        out.push((tab, run, None));
                    }
                    CheckOutput::ReadPane { tab, run, pane_id } => {
                        let r = runs.get_mut(&run).expect("a read of a started run");
                        prop_assert_eq!(r.0, tab);
                        prop_assert!(!r.3, "a read after the run ended");
                        prop_assert!(listing(run).iter().any(|p| p.pane_id == pane_id && p.agent.is_some()), "only its own agent panes");
                        r.1.push(pane_id.clone());
                        prop_assert!(r.1.len() <= MAX_PANE_READS);
                        out.push((tab, run, Some(pane_id)));
                    }
                    CheckOutput::Failed { tab, .. } => {
                        // Only the tab's newest run can fail, while it waits for its list.
                        let newest = runs.iter_mut().rev().find(|(_, r)| r.0 == tab).map(|(_, r)| r);
                        let r = newest.expect("a failure of a started run");
                        prop_assert!(!r.3 && r.1.is_empty(), "a failure ends a run waiting for its list");
                        r.3 = true;
                    }
                    CheckOutput::Summary { tab, seq, panes, texts, .. } => {
                        prop_assert!(seqs.last().is_none_or(|last| *last < seq), "nonce ids grow: {:?} then {}", seqs, seq);
                        seqs.push(seq);
                        // Its run: the one whose listing these panes are.
                        let run = panes.first().and_then(|p| p.pane_id[1..].split('p').next()?.parse::<u64>().ok());
                        let run = match run {
                            Some(run) => run,
                            // An empty listing: the tab's newest run.
                            None => *runs.iter().rev().find(|(_, r)| r.0 == tab).map(|(k, _)| k).expect("a run to end"),
                        };
                        prop_assert_eq!(&panes, &listing(run), "its own panes");
                        let r = runs.get_mut(&run).expect("a started run");
                        prop_assert_eq!(r.0, tab);
                        prop_assert!(!r.3, "run {} ended twice", run);
                        r.3 = true;
                        for read in &r.1 {
                            prop_assert!(r.2.contains(read), "ended before the read of {} answered", read);
                        }
                        for (pane, _) in texts.iter() {
                            prop_assert!(r.1.contains(pane), "a text of a pane it did not read: {}", pane);
                        }
                    }
                }
            }
        }
    }
}
