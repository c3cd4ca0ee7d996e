//! Auto rollover (SPEC R2): high pressure only allows it; every other condition is named
//! when it does not hold; a conversation starts at most one.

use ext_core::context_pressure::PressureLevel;
use ext_core::rollover::{check, RolloverBlocker, RolloverFacts, Rollovers, MAX_ROLLOVER_SOURCES};
use proptest::prelude::*;

/// Every condition of R2 holds.
fn ready() -> RolloverFacts {
    RolloverFacts { level: Some(PressureLevel::Auto), project: true, auto_on: true, active_target: true, ..RolloverFacts::default() }
}

// R: R2 — high pressure with everything else clear allows a rollover; below the auto level,
// or with no reading at all, nothing starts.
#[test]
fn only_pressure_at_the_auto_level_or_above_allows_a_rollover_r2() {
    assert_eq!(check(&ready()), Ok(()));
    assert_eq!(check(&RolloverFacts { level: Some(PressureLevel::HighRisk), ..ready() }), Ok(()));
    for level in [PressureLevel::Normal, PressureLevel::Warn, PressureLevel::Prepare, PressureLevel::Recommend] {
        assert_eq!(check(&RolloverFacts { level: Some(level), ..ready() }), Err(RolloverBlocker::PressureBelowAuto), "{level:?}");
    }
    assert_eq!(check(&RolloverFacts { level: None, ..ready() }), Err(RolloverBlocker::NoReading));
}

// R: S7, H6 (issue 26 Found 1) — spent recovery budgets stand for the pressure condition
// (no reading or a low one is no blocker then); every other condition still holds it back.
#[test]
fn spent_recovery_budgets_allow_a_rollover_like_auto_pressure_and_nothing_else_s7() {
    let spent = RolloverFacts { level: None, recovery_spent: true, ..ready() };
    assert_eq!(check(&spent), Ok(()));
    assert_eq!(check(&RolloverFacts { level: Some(PressureLevel::Normal), ..spent }), Ok(()));
    assert_eq!(check(&RolloverFacts { project: false, ..spent }), Err(RolloverBlocker::NotProject));
    assert_eq!(check(&RolloverFacts { auto_on: false, ..spent }), Err(RolloverBlocker::AutoOff));
    assert_eq!(check(&RolloverFacts { streaming: true, ..spent }), Err(RolloverBlocker::Busy));
}

// R: R2 — each other condition, alone, blocks with its own reason code.
#[test]
fn each_condition_alone_blocks_with_its_reason_r2() {
    let cases: [(RolloverFacts, RolloverBlocker, &str); 11] = [
        (RolloverFacts { project: false, ..ready() }, RolloverBlocker::NotProject, "not_project"),
        (RolloverFacts { auto_on: false, ..ready() }, RolloverBlocker::AutoOff, "auto_off"),
        (RolloverFacts { workspace_working: true, ..ready() }, RolloverBlocker::WorkspaceWorking, "workspace_working"),
        (RolloverFacts { streaming: true, ..ready() }, RolloverBlocker::Busy, "busy"),
        (RolloverFacts { tool_running: true, ..ready() }, RolloverBlocker::Busy, "busy"),
        (RolloverFacts { permission_card: true, ..ready() }, RolloverBlocker::PermissionCard, "permission_card"),
        (RolloverFacts { human_draft: true, ..ready() }, RolloverBlocker::HumanDraft, "human_draft"),
        (RolloverFacts { delivery_uncertain: true, ..ready() }, RolloverBlocker::DeliveryUncertain, "delivery_uncertain"),
        (RolloverFacts { journal_behind: true, ..ready() }, RolloverBlocker::JournalBehind, "journal_behind"),
        (RolloverFacts { handoff_in_flight: true, ..ready() }, RolloverBlocker::HandoffInFlight, "handoff_in_flight"),
        (RolloverFacts { active_target: false, ..ready() }, RolloverBlocker::NotActiveTarget, "not_active_target"),
    ];
    for (facts, blocker, code) in cases {
        assert_eq!(check(&facts), Err(blocker), "{facts:?}");
        assert_eq!(blocker.code(), code);
    }
}

// R: R2 — a conversation starts one automatic rollover; the tab left open after the
// cut-over (no longer the active target) and the same conversation later (a failed
// transfer, pressure still high) never start a second one.
#[test]
fn a_conversation_starts_at_most_one_rollover_and_a_stale_source_none_r2() {
    let mut rollovers = Rollovers::default();
    assert_eq!(rollovers.try_start("chatgpt:a", &RolloverFacts { human_draft: true, ..ready() }), Err(RolloverBlocker::HumanDraft));
    assert_eq!(rollovers.sources().count(), 0, "a refused rollover is not remembered");
    assert_eq!(rollovers.try_start("chatgpt:a", &ready()), Ok(()));
    assert_eq!(rollovers.try_start("chatgpt:a", &ready()), Err(RolloverBlocker::AlreadyStarted));
    assert_eq!(rollovers.try_start("chatgpt:a", &RolloverFacts { active_target: false, ..ready() }), Err(RolloverBlocker::AlreadyStarted));
    // Restored after a worker restart: still remembered.
    let restored = Rollovers::from_sources(rollovers.sources().cloned());
    assert_eq!(restored, rollovers);
    let mut restored = restored;
    assert_eq!(restored.try_start("chatgpt:a", &ready()), Err(RolloverBlocker::AlreadyStarted));
    assert_eq!(restored.try_start("chatgpt:b", &ready()), Ok(()));
}

// The memory is bounded; the source that started longest ago is the one forgotten.
#[test]
fn the_memory_of_sources_is_bounded_oldest_first() {
    let mut rollovers = Rollovers::default();
    for i in 0..=MAX_ROLLOVER_SOURCES {
        assert_eq!(rollovers.try_start(&format!("chatgpt:{i:04}"), &ready()), Ok(()));
    }
    assert_eq!(rollovers.sources().count(), MAX_ROLLOVER_SOURCES);
    assert_eq!(rollovers.sources().next().map(String::as_str), Some("chatgpt:0001"));
    assert_eq!(rollovers.try_start(&format!("chatgpt:{MAX_ROLLOVER_SOURCES:04}"), &ready()), Err(RolloverBlocker::AlreadyStarted));
}

fn facts() -> impl Strategy<Value = RolloverFacts> {
    let level = prop_oneof![
        Just(None),
        Just(Some(PressureLevel::Normal)),
        Just(Some(PressureLevel::Warn)),
        Just(Some(PressureLevel::Prepare)),
        Just(Some(PressureLevel::Recommend)),
        Just(Some(PressureLevel::Auto)),
        Just(Some(PressureLevel::HighRisk)),
    ];
    (level, prop::array::uniform12(any::<bool>())).prop_map(|(level, b)| RolloverFacts {
        level,
        project: b[0],
        auto_on: b[1],
        workspace_working: b[2],
        streaming: b[3],
        tool_running: b[4],
        permission_card: b[5],
        human_draft: b[6],
        delivery_uncertain: b[7],
        handoff_in_flight: b[8],
        active_target: b[9],
        journal_behind: b[10],
        recovery_spent: b[11],
    })
}

/// The blockers of `facts`, computed field by field (the SPEC's list, not the code's order).
fn blocked(f: &RolloverFacts) -> bool {
    (!f.recovery_spent && f.level.is_none_or(|l| l < PressureLevel::Auto))
        || !f.project
        || !f.auto_on
        || f.workspace_working
        || f.streaming
        || f.tool_running
        || f.permission_card
        || f.human_draft
        || f.delivery_uncertain
        || f.journal_behind
        || f.handoff_in_flight
        || !f.active_target
}

proptest! {
    // R: R2 — Ok exactly when every condition holds; one more blocker never turns a refusal
    // into Ok; a sequence of checks starts at most one rollover per conversation.
    #[test]
    fn rollover_starts_only_when_every_condition_holds_and_once_per_conversation(
        steps in prop::collection::vec((0..3u8, facts(), 0..12usize), 1..40),
    ) {
        let mut rollovers = Rollovers::default();
        let mut started = [0u32; 3];
        for (conv, f, extra) in steps {
            prop_assert_eq!(check(&f).is_ok(), !blocked(&f), "{:?}", f);
            // Add one blocker (or none for extra == 11) and check monotonicity.
            let mut worse = f;
            match extra {
                0 if !worse.recovery_spent => worse.level = worse.level.map(|_| PressureLevel::Recommend),
                0 => worse.project = false,
                1 => worse.project = false,
                2 => worse.auto_on = false,
                3 => worse.workspace_working = true,
                4 => worse.streaming = true,
                5 => worse.tool_running = true,
                6 => worse.permission_card = true,
                7 => worse.human_draft = true,
                8 => worse.delivery_uncertain = true,
                9 => worse.active_target = false,
                10 => worse.journal_behind = true,
                _ => {}
            }
            if check(&f).is_err() {
                prop_assert!(check(&worse).is_err(), "a blocker added to {:?} let it through", f);
            }
            let key = format!("chatgpt:{conv}");
            if rollovers.try_start(&key, &f).is_ok() {
                prop_assert!(!blocked(&f));
                started[conv as usize] += 1;
            }
            prop_assert!(started[conv as usize] <= 1, "{} started {} rollovers", key, started[conv as usize]);
        }
    }
}
