//! Semantic Auto of one conversation (SPEC J1–J3, M6, M7): when to ask the turn-end judge,
//! what its verdict does, and the bound on automatic continues.

use ext_core::semantic_auto::{
    fingerprint, EndedTurn, JudgeMode, SemanticAuto, SemanticInput, SemanticOutput, SemanticWithheld, StoppedTurn, Verdict,
};
use proptest::prelude::*;

fn reply(n: u32) -> EndedTurn {
    EndedTurn {
        assistant_text: format!("Reply {n}: I fixed the parser. Next I will run the integration tests."),
        user_text: "fix it".into(),
    }
}

fn ended(turn: EndedTurn) -> SemanticInput {
    SemanticInput::TurnEnded { turn, auto_on: true, chatgpt: true, queue_waiting: false }
}

fn drain(m: &mut SemanticAuto) -> Vec<SemanticOutput> {
    std::iter::from_fn(|| m.poll()).collect()
}

fn verdict(fp: &str, verdict: Verdict) -> SemanticInput {
    SemanticInput::Verdict {
        fingerprint: fp.to_owned(),
        verdict,
        source: "script".into(),
        reason: "a pending step on the last line".into(),
    }
}

// R: J1, J2 — a finished reply is judged once; only "continue" continues, and the continue
// names the judge and its reason.
#[test]
fn a_reply_is_judged_once_and_only_continue_continues_j2() {
    let mut m = SemanticAuto::new(JudgeMode::InAuto, 3);
    m.handle(ended(reply(1)));
    let fp = fingerprint(&reply(1).assistant_text);
    assert!(matches!(drain(&mut m).as_slice(), [SemanticOutput::Judge { fingerprint, .. }] if *fingerprint == fp));
    // The same reply again (a reload re-reports the ended turn): not asked twice.
    m.handle(ended(reply(1)));
    assert_eq!(drain(&mut m), [SemanticOutput::Withheld(SemanticWithheld::Busy)]);
    m.handle(verdict(&fp, Verdict::Continue));
    let out = drain(&mut m);
    assert!(
        matches!(&out[1], SemanticOutput::Continue { subject, source, reason } if *subject == format!("judge:{fp}") && source == "script" && reason.contains("pending")),
        "{out:?}"
    );
    m.handle(SemanticInput::ContinueResolved { confirmed: true });
    m.handle(ended(reply(1)));
    assert_eq!(drain(&mut m), [SemanticOutput::Withheld(SemanticWithheld::JudgedBefore)]);
    // Done and uncertain stop (fail closed).
    for (n, v) in [(2, Verdict::Done), (3, Verdict::Uncertain)] {
        m.handle(ended(reply(n)));
        drain(&mut m);
        m.handle(verdict(&fingerprint(&reply(n).assistant_text), v));
        assert!(!drain(&mut m).iter().any(|o| matches!(o, SemanticOutput::Continue { .. })));
    }
}

// R: M6, M7, Q2 — nothing is asked off ChatGPT, with Auto off, in manual mode, or while
// messages are queued; a short reply is not judged.
#[test]
fn the_gate_names_why_a_reply_is_not_judged_m6_m7() {
    let cases = [
        (JudgeMode::ManualOnly, true, true, false, SemanticWithheld::ModeOff),
        (JudgeMode::InAuto, false, true, false, SemanticWithheld::AutoOff),
        (JudgeMode::InAuto, true, false, false, SemanticWithheld::NotChatGpt),
        (JudgeMode::InAuto, true, true, true, SemanticWithheld::QueueFirst),
    ];
    for (mode, auto_on, chatgpt, queue_waiting, why) in cases {
        let mut m = SemanticAuto::new(mode, 3);
        m.handle(SemanticInput::TurnEnded { turn: reply(1), auto_on, chatgpt, queue_waiting });
        assert_eq!(drain(&mut m), [SemanticOutput::Withheld(why)]);
    }
    let mut m = SemanticAuto::new(JudgeMode::InAuto, 3);
    m.handle(ended(EndedTurn { assistant_text: "Done.".into(), user_text: String::new() }));
    assert_eq!(drain(&mut m), [SemanticOutput::Withheld(SemanticWithheld::ShortReply)]);
}

// R: M7 — at most N continues in a row; a human turn or Herdr activity starts a new run;
// a continue that did not land does not count.
#[test]
fn automatic_continues_stop_after_the_bound_until_a_human_or_herdr_acts_m7() {
    let mut m = SemanticAuto::new(JudgeMode::InAuto, 2);
    let mut continues = 0;
    for n in 0..5 {
        m.handle(ended(reply(n)));
        drain(&mut m);
        m.handle(verdict(&fingerprint(&reply(n).assistant_text), Verdict::Continue));
        if drain(&mut m).iter().any(|o| matches!(o, SemanticOutput::Continue { .. })) {
            continues += 1;
            m.handle(SemanticInput::ContinueResolved { confirmed: true });
        }
    }
    assert_eq!(continues, 2);
    assert_eq!(m.streak(), 2);
    m.handle(SemanticInput::HumanTurn);
    m.handle(ended(reply(9)));
    assert!(matches!(drain(&mut m).as_slice(), [SemanticOutput::Judge { .. }]));
    m.handle(verdict(&fingerprint(&reply(9).assistant_text), Verdict::Continue));
    drain(&mut m);
    m.handle(SemanticInput::ContinueResolved { confirmed: false });
    assert_eq!(m.streak(), 0, "a continue that did not land does not count");
}

// R: B7 — judged fingerprints and the streak survive a worker restart; a judge call the
// old worker made is forgotten (its answer never comes) and the reply is not asked again.
#[test]
fn judged_replies_and_the_streak_survive_a_restart() {
    let mut m = SemanticAuto::new(JudgeMode::InAuto, 3);
    m.handle(ended(reply(1)));
    drain(&mut m);
    let mut back = ext_core::json_read::from_str::<SemanticAuto>(&serde_json::to_string(&m).expect("json")).expect("read");
    back.restored();
    back.handle(ended(reply(1)));
    assert_eq!(drain(&mut back), [SemanticOutput::Withheld(SemanticWithheld::JudgedBefore)]);
    back.handle(ended(reply(2)));
    assert!(matches!(drain(&mut back).as_slice(), [SemanticOutput::Judge { .. }]));
}

#[derive(Debug, Clone)]
enum Op {
    Ended { n: u8, queue: bool },
    Verdict(Verdict),
    Resolved(bool),
    Human,
    Herdr,
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..6, prop::bool::weighted(0.2)).prop_map(|(n, queue)| Op::Ended { n, queue }),
        4 => prop_oneof![Just(Verdict::Continue), Just(Verdict::Done), Just(Verdict::Uncertain)].prop_map(Op::Verdict),
        3 => any::<bool>().prop_map(Op::Resolved),
        1 => Just(Op::Human),
        1 => Just(Op::Herdr),
        1 => Just(Op::Restart),
    ]
}

proptest! {
    /// M7, J2, Q2: whatever the order of replies, verdicts, deliveries and restarts: never
    /// more than N landed automatic continues in a row without a human turn or Herdr
    /// activity; a continue follows only a "continue" verdict for the reply asked about;
    /// nothing is asked while messages are queued; a reply is asked about at most once.
    #[test]
    fn auto_never_continues_more_than_n_times_in_a_row(max in 1u32..5, ops in prop::collection::vec(op(), 1..80)) {
        let mut m = SemanticAuto::new(JudgeMode::InAuto, max);
        let mut asked: Option<String> = None;
        let mut asked_ever: Vec<String> = Vec::new();
        let mut out_continue = false;
        let mut landed_in_a_row = 0u32;
        for op in ops {
            match op {
                Op::Ended { n, queue } => {
                    let turn = EndedTurn { assistant_text: format!("Reply {n}: part done; next I will check the remaining files."), user_text: String::new() };
                    m.handle(SemanticInput::TurnEnded { turn, auto_on: true, chatgpt: true, queue_waiting: queue });
                }
                Op::Verdict(v) => {
                    if let Some(fp) = asked.take() {
                        m.handle(SemanticInput::Verdict { fingerprint: fp, verdict: v, source: "llm".into(), reason: String::new() });
                        if v != Verdict::Continue {
                            // No continue may follow this verdict.
                            for o in drain(&mut m) {
                                prop_assert!(!matches!(o, SemanticOutput::Continue { .. }), "continued on {v:?}");
                            }
                        }
                    }
                }
                Op::Resolved(confirmed) => {
                    if std::mem::take(&mut out_continue) {
                        m.handle(SemanticInput::ContinueResolved { confirmed });
                        if confirmed {
                            landed_in_a_row += 1;
                        }
                    }
                }
                Op::Human => { m.handle(SemanticInput::HumanTurn); landed_in_a_row = 0; }
                Op::Herdr => { m.handle(SemanticInput::HerdrActivity); landed_in_a_row = 0; }
                Op::Restart => {
                    m = ext_core::json_read::from_str::<SemanticAuto>(&serde_json::to_string(&m).expect("json")).expect("read");
                    m.restored();
                    asked = None;
                }
            }
            prop_assert!(landed_in_a_row <= max, "M7: {landed_in_a_row} continues in a row, bound {max}");
            for o in drain(&mut m) {
                match o {
                    SemanticOutput::Judge { fingerprint, .. } => {
                        prop_assert!(!asked_ever.contains(&fingerprint), "asked twice about {fingerprint}");
                        asked_ever.push(fingerprint.clone());
                        asked = Some(fingerprint);
                    }
                    SemanticOutput::Continue { .. } => {
                        prop_assert!(!out_continue, "two continues out at once");
                        out_continue = true;
                    }
                    SemanticOutput::Superseded { fingerprint, .. } => {
                        prop_assert_eq!(asked.take(), Some(fingerprint));
                    }
                    SemanticOutput::Decided { .. } | SemanticOutput::Withheld(_) => {}
                }
            }
        }
    }
}

fn stop(user_turns: u32) -> SemanticInput {
    SemanticInput::UserStopped { at: StoppedTurn { user_turns, user_turn_id: None } }
}

// R: issue 26 Found 4 — the user pressed Stop on a reply that already announced its next
// step: it is not judged and never continued; a judge call already out for the
// conversation is dropped (its "continue" does nothing); a human turn is a new decision.
#[test]
fn a_reply_the_user_stopped_is_never_judged_or_continued_until_a_human_turn() {
    let mut m = SemanticAuto::new(JudgeMode::InAuto, 3);
    m.handle(stop(1));
    m.handle(ended(reply(1)));
    assert_eq!(drain(&mut m), [SemanticOutput::Withheld(SemanticWithheld::UserStopped)]);
    assert_eq!(m.stopped(), Some(&StoppedTurn { user_turns: 1, user_turn_id: None }));
    // It survives a worker restart.
    let mut m = ext_core::json_read::from_str::<SemanticAuto>(&serde_json::to_string(&m).expect("json")).expect("read");
    m.restored();
    m.handle(ended(reply(1)));
    assert_eq!(drain(&mut m), [SemanticOutput::Withheld(SemanticWithheld::UserStopped)]);
    // The human writes again: their reply is judged and may be continued.
    m.handle(SemanticInput::HumanTurn);
    m.handle(ended(reply(2)));
    let fp = fingerprint(&reply(2).assistant_text);
    assert!(matches!(drain(&mut m).as_slice(), [SemanticOutput::Judge { .. }]));
    // A Stop while the judge thinks: the call is dropped, its verdict does nothing.
    m.handle(stop(2));
    assert_eq!(drain(&mut m), [SemanticOutput::Superseded { fingerprint: fp.clone(), by_stop: true }]);
    m.handle(verdict(&fp, Verdict::Continue));
    assert_eq!(drain(&mut m), []);
}

// R: issue 26 — a human turn supersedes a judge call out for an older reply: its verdict
// is never acted on, and the human's own reply is judged.
#[test]
fn a_human_turn_drops_the_judge_call_for_the_older_reply() {
    let mut m = SemanticAuto::new(JudgeMode::InAuto, 3);
    m.handle(ended(reply(1)));
    let fp = fingerprint(&reply(1).assistant_text);
    drain(&mut m);
    m.handle(SemanticInput::HumanTurn);
    assert_eq!(drain(&mut m), [SemanticOutput::Superseded { fingerprint: fp.clone(), by_stop: false }]);
    m.handle(verdict(&fp, Verdict::Continue));
    assert_eq!(drain(&mut m), []);
    m.handle(ended(reply(2)));
    assert!(matches!(drain(&mut m).as_slice(), [SemanticOutput::Judge { .. }]));
}

#[derive(Debug, Clone)]
enum StopOp {
    Ended(u8),
    Verdict { stale: bool, v: Verdict },
    Resolved(bool),
    Stop,
    Human,
    Herdr,
    Restart,
}

fn stop_op() -> impl Strategy<Value = StopOp> {
    prop_oneof![
        4 => (0u8..8).prop_map(StopOp::Ended),
        4 => (prop::bool::weighted(0.3), prop_oneof![Just(Verdict::Continue), Just(Verdict::Done), Just(Verdict::Uncertain)]).prop_map(|(stale, v)| StopOp::Verdict { stale, v }),
        2 => any::<bool>().prop_map(StopOp::Resolved),
        2 => Just(StopOp::Stop),
        1 => Just(StopOp::Human),
        1 => Just(StopOp::Herdr),
        1 => Just(StopOp::Restart),
    ]
}

proptest! {
    /// Issue 26 acceptance 3: no automatic message after a Stop. Whatever the order of
    /// replies, verdicts (also late ones for any reply asked about before), deliveries,
    /// Herdr activity and restarts: from the user's Stop until the next human turn the
    /// machine puts out no continue, and asks the judge nothing.
    #[test]
    fn no_automatic_message_after_a_stop(ops in prop::collection::vec(stop_op(), 1..100)) {
        let mut m = SemanticAuto::new(JudgeMode::InAuto, 10);
        let mut asked: Vec<String> = Vec::new();
        let mut stopped = false;
        let mut out_continue = false;
        for op in ops {
            match op {
                StopOp::Ended(n) => m.handle(ended(reply(u32::from(n)))),
                StopOp::Verdict { stale, v } => {
                    let fp = if stale { asked.first() } else { asked.last() };
                    if let Some(fp) = fp.cloned() {
                        m.handle(verdict(&fp, v));
                    }
                }
                StopOp::Resolved(confirmed) => {
                    if std::mem::take(&mut out_continue) {
                        m.handle(SemanticInput::ContinueResolved { confirmed });
                    }
                }
                StopOp::Stop => { m.handle(stop(1)); stopped = true; }
                StopOp::Human => { m.handle(SemanticInput::HumanTurn); stopped = false; }
                StopOp::Herdr => m.handle(SemanticInput::HerdrActivity),
                StopOp::Restart => {
                    m = ext_core::json_read::from_str::<SemanticAuto>(&serde_json::to_string(&m).expect("json")).expect("read");
                    m.restored();
                }
            }
            prop_assert_eq!(m.stopped().is_some(), stopped);
            for o in drain(&mut m) {
                match o {
                    SemanticOutput::Continue { .. } => {
                        prop_assert!(!stopped, "continued after the user's Stop");
                        out_continue = true;
                    }
                    SemanticOutput::Judge { fingerprint, .. } => {
                        prop_assert!(!stopped, "asked the judge after the user's Stop");
                        asked.push(fingerprint);
                    }
                    _ => {}
                }
            }
        }
    }
}

// R: issue 26 Found 4 (review 4) — fewer user turns with another id (a stale second tab, a
// switch to an older edit branch) is not a newer human turn: the Stop holds. More turns, or
// the same number with another id (an edited message), is.
#[test]
fn a_stop_is_ended_only_by_a_user_turn_at_least_as_far_on() {
    let at = StoppedTurn { user_turns: 3, user_turn_id: Some("a".into()) };
    assert!(!at.is_older_than(2, Some("b")));
    assert!(!at.is_older_than(3, Some("a")));
    assert!(!at.is_older_than(2, None));
    assert!(at.is_older_than(3, Some("b")));
    assert!(at.is_older_than(4, Some("a")));
}
