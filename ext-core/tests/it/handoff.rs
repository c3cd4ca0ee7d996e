//! Handoff to a new conversation (SPEC X1–X8, B8, C2): evidence before cut-over.

use ext_core::handoff::{Handoff, HandoffInput, HandoffOutput, HandoffRefusal, HandoffState, Package, SeedOutcome};
use proptest::prelude::*;

fn package() -> Package {
    Package {
        transfer_id: "t1".into(),
        continuity_id: "c1".into(),
        source_url: "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef/c/old".into(),
        message: "Continue the work of chain c1: …".into(),
        copy_prompt: "Continue the work of chain c1: …".into(),
    }
}

fn start() -> HandoffInput {
    HandoffInput::Start { conversation_id: "old".into(), source_url: package().source_url, workspace_working: false }
}

fn drain(h: &mut Handoff) -> Vec<HandoffOutput> {
    std::iter::from_fn(|| h.poll()).collect()
}

fn to_seeding(h: &mut Handoff) {
    h.handle(start()).expect("start");
    h.handle(HandoffInput::Confirmed(Ok("c1".into()))).expect("confirmed");
    h.handle(HandoffInput::Prepared(Ok(package()))).expect("prepared");
    h.handle(HandoffInput::TargetReady).expect("new chat ready");
    // The Project's new chat gets its id once the seed is sent.
    h.handle(HandoffInput::NewConversation { conversation_id: "new".into() }).expect("new chat");
}

// R: X6, B8 — the cut-over comes only with the new conversation's id and the seed's
// confirmation; the source's wakes pause during the transfer.
#[test]
fn cut_over_follows_both_confirmations_x6() {
    let mut h = Handoff::default();
    to_seeding(&mut h);
    let out = drain(&mut h);
    assert_eq!(out[0], HandoffOutput::PauseSource);
    assert!(out.contains(&HandoffOutput::SendSeed { subject: "handoff:t1".into(), text: package().message }));
    assert!(!out.iter().any(|o| matches!(o, HandoffOutput::CutOver { .. })), "opening a tab or sending is not success");
    h.handle(HandoffInput::Seed(SeedOutcome::Confirmed)).expect("seed");
    assert_eq!(drain(&mut h), [HandoffOutput::CutOver { new_conversation: "new".into() }]);
    assert_eq!(h.state(), &HandoffState::Done { new_conversation: "new".into() });
}

// R: B7 — a transfer in flight survives a worker restart in the state it had, and goes on
// from there without a second new conversation.
#[test]
fn a_transfer_in_flight_survives_a_restart_without_a_second_new_chat() {
    let mut h = Handoff::default();
    to_seeding(&mut h);
    drain(&mut h);
    // The hand-written writer (the snapshot's) writes serde's shape.
    assert_eq!(ext_core::json_read::WriteJson::write_json(&h), serde_json::to_value(&h).expect("json"));
    let mut back = ext_core::json_read::from_str::<Handoff>(&serde_json::to_string(&h).expect("json")).expect("read");
    assert_eq!(back.state(), h.state());
    back.handle(HandoffInput::Seed(SeedOutcome::Confirmed)).expect("seed");
    assert_eq!(drain(&mut back), [HandoffOutput::CutOver { new_conversation: "new".into() }]);
    for state in [
        HandoffState::Failed { reason: HandoffRefusal::JournalUnavailable { detail: "x".into() }, source_url: "u".into() },
        HandoffState::CopyPrompt { package: package() },
    ] {
        let text = serde_json::to_string(&state).expect("json");
        assert_eq!(ext_core::json_read::WriteJson::write_json(&state), serde_json::to_value(&state).expect("json"));
        assert_eq!(ext_core::json_read::from_str::<HandoffState>(&text).expect("read"), state);
    }
}

// R: X2, X3 — refused while the workspace works, without a chain, or while one is in
// flight.
// R: X8 — a seed the page certainly refused twice (not sent, not sent): browser control is
// confirmed unavailable, so Copy Prompt offers the same bytes.
#[test]
fn a_seed_refused_twice_offers_copy_prompt_x8() {
    let mut h = Handoff::default();
    to_seeding(&mut h);
    drain(&mut h);
    h.handle(HandoffInput::Seed(SeedOutcome::NotSent)).expect("seed");
    assert!(matches!(drain(&mut h).as_slice(), [HandoffOutput::SendSeed { .. }]), "one retry after a certain failure");
    assert_eq!(h.copy_prompt(), None);
    h.handle(HandoffInput::Seed(SeedOutcome::NotSent)).expect("seed");
    assert_eq!(h.copy_prompt(), Some(package().message.as_str()));
    assert!(drain(&mut h).is_empty(), "no third seed, no cut-over");
}

#[test]
fn a_start_is_refused_with_its_reason_x2() {
    let mut h = Handoff::default();
    assert_eq!(
        h.handle(HandoffInput::Start { conversation_id: "old".into(), source_url: String::new(), workspace_working: true }),
        Err(HandoffRefusal::WorkspaceWorking)
    );
    assert_eq!(
        h.handle(HandoffInput::Start { conversation_id: String::new(), source_url: String::new(), workspace_working: false }),
        Err(HandoffRefusal::NoContinuity)
    );
    h.handle(start()).expect("start");
    assert_eq!(h.handle(start()), Err(HandoffRefusal::InFlight));
}

// R: X5 — the journal unavailable: fail, keep the source and its full URL.
#[test]
fn a_journal_failure_keeps_the_source_x5() {
    let mut h = Handoff::default();
    h.handle(start()).expect("start");
    h.handle(HandoffInput::Confirmed(Err("journal_unavailable".into()))).expect("answer");
    assert_eq!(
        h.state(),
        &HandoffState::Failed {
            reason: HandoffRefusal::JournalUnavailable { detail: "journal_unavailable".into() },
            source_url: package().source_url
        }
    );
    assert!(drain(&mut h).contains(&HandoffOutput::ResumeSource));
}

// R: X7, X8 — an uncertain seed keeps the old target and never offers Copy Prompt;
// "Resume handoff" probes: present → cut over; absent → the seed goes again. Browser
// control unavailable → Copy Prompt with the same bytes.
#[test]
fn an_uncertain_seed_is_resumed_from_evidence_and_copy_prompt_only_without_browser_control_x7_x8() {
    let mut h = Handoff::default();
    to_seeding(&mut h);
    h.handle(HandoffInput::Seed(SeedOutcome::Uncertain)).expect("seed");
    assert_eq!(h.copy_prompt(), None);
    h.handle(HandoffInput::BrowserControlUnavailable).expect("input");
    assert_eq!(h.copy_prompt(), None, "never after an uncertain seed");
    drain(&mut h);
    h.handle(HandoffInput::Resume { seed_present: false }).expect("resume");
    assert!(matches!(drain(&mut h).as_slice(), [HandoffOutput::SendSeed { .. }]));
    h.handle(HandoffInput::Seed(SeedOutcome::Uncertain)).expect("seed");
    h.handle(HandoffInput::Resume { seed_present: true }).expect("resume");
    assert_eq!(drain(&mut h), [HandoffOutput::CutOver { new_conversation: "new".into() }]);

    let mut c = Handoff::default();
    c.handle(start()).expect("start");
    c.handle(HandoffInput::Confirmed(Ok("c1".into()))).expect("ok");
    c.handle(HandoffInput::Prepared(Ok(package()))).expect("ok");
    c.handle(HandoffInput::BrowserControlUnavailable).expect("ok");
    assert_eq!(c.copy_prompt(), Some(package().message.as_str()), "byte-identical to the automatic message");
    let mut bad = Handoff::default();
    bad.handle(start()).expect("start");
    bad.handle(HandoffInput::Confirmed(Ok("c1".into()))).expect("ok");
    bad.handle(HandoffInput::Prepared(Ok(Package { copy_prompt: "other".into(), ..package() }))).expect("ok");
    assert!(matches!(bad.state(), HandoffState::Failed { reason: HandoffRefusal::BadPackage, .. }));
}

fn input() -> impl Strategy<Value = HandoffInput> {
    prop_oneof![
        2 => any::<bool>().prop_map(|w| HandoffInput::Start { conversation_id: "old".into(), source_url: "u".into(), workspace_working: w }),
        2 => any::<bool>().prop_map(|ok| HandoffInput::Confirmed(if ok { Ok("c1".into()) } else { Err("x".into()) })),
        2 => any::<bool>().prop_map(|ok| HandoffInput::Prepared(if ok { Ok(package()) } else { Err("x".into()) })),
        1 => Just(HandoffInput::BrowserControlUnavailable),
        2 => Just(HandoffInput::TargetReady),
        2 => prop_oneof![Just("n1"), Just("n2")].prop_map(|id| HandoffInput::NewConversation { conversation_id: id.into() }),
        3 => prop_oneof![Just(SeedOutcome::Confirmed), Just(SeedOutcome::NotSent), Just(SeedOutcome::Uncertain)].prop_map(HandoffInput::Seed),
        1 => any::<bool>().prop_map(|seed_present| HandoffInput::Resume { seed_present }),
        1 => Just(HandoffInput::Start { conversation_id: String::new(), source_url: "u".into(), workspace_working: false }),
    ]
}

proptest! {
    /// X6, X7, X8: in any order of answers, a cut-over follows a seed confirmation (or a
    /// seed seen present on resume) and a known new conversation; at most one cut-over per
    /// transfer; Copy Prompt never while a seed sent may have landed (only after each seed
    /// certainly did not).
    #[test]
    fn cut_over_never_precedes_confirmation(inputs in prop::collection::vec(input(), 1..40)) {
        let mut h = Handoff::default();
        let mut seed_evidence = false;
        let mut seeds_sent = 0;
        let mut seeds_open = 0;
        let mut cut_overs = 0;
        for input in inputs {
            let evidence = matches!(input, HandoffInput::Seed(SeedOutcome::Confirmed) | HandoffInput::Resume { seed_present: true });
            let starts = matches!(input, HandoffInput::Start { .. });
            // A seed may go only when none is known to be in the thread: the first one, or
            // after a certain absence.
            let may_seed = matches!(input, HandoffInput::TargetReady | HandoffInput::NewConversation { .. } | HandoffInput::Seed(SeedOutcome::NotSent) | HandoffInput::Resume { seed_present: false });
            let input_kind = match &input { HandoffInput::Seed(o) => Some(*o), _ => None };
            let was_seeding = matches!(h.state(), HandoffState::Seeding { .. });
            let accepted = h.handle(input).is_ok();
            if starts && accepted {
                seed_evidence = false;
                seeds_sent = 0;
                seeds_open = 0;
                cut_overs = 0;
            }
            if evidence {
                seed_evidence = true;
            }
            if was_seeding && matches!(input_kind, Some(SeedOutcome::NotSent)) {
                seeds_open = 0;
            }
            for out in std::iter::from_fn(|| h.poll()) {
                match out {
                    HandoffOutput::SendSeed { .. } => {
                        prop_assert!(may_seed, "a seed sent without a certain absence");
                        seeds_sent += 1;
                        seeds_open = 1;
                        seed_evidence = false;
                    }
                    HandoffOutput::CutOver { .. } => {
                        prop_assert!(seed_evidence, "X6: cut over without the seed's confirmation");
                        cut_overs += 1;
                        prop_assert!(cut_overs <= 1, "two cut-overs for one transfer");
                    }
                    _ => {}
                }
            }
            if h.copy_prompt().is_some() {
                prop_assert_eq!(seeds_open, 0, "X8: Copy Prompt while a seed may have landed ({} sent)", seeds_sent);
            }
        }
    }
}
