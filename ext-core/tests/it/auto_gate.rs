//! Auto scopes, HUD locks and withheld reasons (SPEC M1–M4, M7, B5).

use expect_test::expect;
use ext_core::auto_gate::{wake_gate, ActionLocked, AutoGate, AutoState, HudAction, WakeFacts, WakeWithheld};
use ext_core::scope::{classify_url, Scope, Site};
use proptest::prelude::*;

const PROJECT_HOME: &str = "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef/project";
const PROJECT_CHAT: &str = "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef/c/6a1b2c3d-0000-4000-8000-00000000000a";
const HANDOFF_TARGET: &str = "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef/c/6a1b2c3d-0000-4000-8000-00000000000b";

fn project() -> Scope {
    Scope::Project { project_id: "g-p-0123456789abcdef0123456789abcdef".into() }
}

#[test]
fn new_scopes_default_to_auto_off() {
    // M1.
    let gate = AutoGate::new();
    assert_eq!(gate.state(&project()), AutoState::Off);
    let chat = Scope::Conversation { site: Site::Zai, conversation_id: "abc".into() };
    assert_eq!(gate.state(&chat), AutoState::Off);
}

#[test]
fn project_auto_needs_the_global_option_and_the_toggle_shared_by_project_id() {
    // M2: both layers; the toggle is keyed by project_id, so another conversation of the
    // same Project (e.g. after a handoff) inherits it.
    let mut gate = AutoGate::new();
    gate.set_scope_auto(&project(), true);
    assert_eq!(gate.state(&project()), AutoState::ProjectAutoNotAllowed);
    gate.set_allow_project_auto(true);
    assert_eq!(gate.state(&project()), AutoState::On);
    let other_conversation = classify_url(HANDOFF_TARGET).scope().expect("project scope");
    assert_eq!(gate.state(&other_conversation), AutoState::On);
    gate.set_scope_auto(&project(), false);
    assert_eq!(gate.state(&project()), AutoState::Off);
}

#[test]
fn conversation_auto_is_per_conversation_and_ignores_the_project_option() {
    // M3.
    let mut gate = AutoGate::new();
    let a = classify_url("https://chat.deepseek.com/a/chat/s/aaa").scope().expect("scope");
    let b = classify_url("https://chat.deepseek.com/a/chat/s/bbb").scope().expect("scope");
    gate.set_scope_auto(&a, true);
    assert_eq!(gate.state(&a), AutoState::On);
    assert_eq!(gate.state(&b), AutoState::Off);
}

#[test]
fn hud_locks_by_page_and_auto() {
    // M4: Continue / Check Herdr / LLM judge locked with Auto on, Handoff not; B5: root and
    // Project home offer scope controls only.
    let mut gate = AutoGate::new();
    gate.set_allow_project_auto(true);
    let mut table = String::new();
    let actions = [HudAction::Continue, HudAction::CheckHerdr, HudAction::LlmJudge, HudAction::Handoff, HudAction::ToggleAuto];
    for auto_on in [false, true] {
        gate.set_scope_auto(&project(), auto_on);
        for (name, url) in [("root", "https://chatgpt.com/"), ("project home", PROJECT_HOME), ("project chat", PROJECT_CHAT)] {
            let page = classify_url(url);
            let cells: Vec<String> = actions
                .iter()
                .map(|a| match gate.hud_action(&page, *a) {
                    Ok(()) => format!("{a:?}=ok"),
                    Err(lock) => format!("{a:?}={lock:?}"),
                })
                .collect();
            table.push_str(&format!("auto={auto_on} {name}: {}\n", cells.join(" ")));
        }
    }
    expect![[r#"
        auto=false root: Continue=NoComposerOnThisPage CheckHerdr=NoComposerOnThisPage LlmJudge=NoComposerOnThisPage Handoff=NoComposerOnThisPage ToggleAuto=NoScopeOnThisPage
        auto=false project home: Continue=NoComposerOnThisPage CheckHerdr=NoComposerOnThisPage LlmJudge=NoComposerOnThisPage Handoff=NoComposerOnThisPage ToggleAuto=ok
        auto=false project chat: Continue=ok CheckHerdr=ok LlmJudge=ok Handoff=ok ToggleAuto=ok
        auto=true root: Continue=NoComposerOnThisPage CheckHerdr=NoComposerOnThisPage LlmJudge=NoComposerOnThisPage Handoff=NoComposerOnThisPage ToggleAuto=NoScopeOnThisPage
        auto=true project home: Continue=NoComposerOnThisPage CheckHerdr=NoComposerOnThisPage LlmJudge=NoComposerOnThisPage Handoff=NoComposerOnThisPage ToggleAuto=ok
        auto=true project chat: Continue=AutoIsOn CheckHerdr=AutoIsOn LlmJudge=AutoIsOn Handoff=ok ToggleAuto=ok
    "#]].assert_eq(&table);
}

fn all_clear() -> WakeFacts {
    WakeFacts {
        bound: true,
        has_delivery_target: true,
        auto: AutoState::On,
        handoff_in_progress: false,
        real_state_change: true,
        unconfirmed_delivery: false,
        facts_resolved: true,
        page_generating: false,
        permission_card: false,
        human_draft: false,
        composer_present: true,
        app_held: None,
        rate_limited: false,
    }
}

#[test]
fn auto_on_with_a_human_draft_withholds_and_says_why() {
    // M7 and the issue's acceptance line.
    let facts = WakeFacts { human_draft: true, ..all_clear() };
    assert_eq!(wake_gate(&facts), Err(WakeWithheld::HumanDraft));
    expect!["Waiting: the composer has your unsent text. Send or clear it and the update follows."]
        .assert_eq(&crate::locales::en(&ext_core::continuity::withheld_say(WakeWithheld::HumanDraft)));
    assert_eq!(wake_gate(&all_clear()), Ok(()));
}

#[test]
fn every_withheld_reason_and_lock_is_listed_once() {
    // Their texts are `_locales` messages (checked in `locales`); here the lists they are
    // checked from hold every variant exactly once.
    assert_eq!(WakeWithheld::ALL.len(), 21);
    for (i, reason) in WakeWithheld::ALL.iter().enumerate() {
        assert!(!WakeWithheld::ALL[..i].contains(reason), "{reason:?} twice");
    }
    assert_eq!(ActionLocked::ALL, [ActionLocked::AutoIsOn, ActionLocked::NoComposerOnThisPage, ActionLocked::NoScopeOnThisPage]);
}

fn any_auto() -> impl Strategy<Value = AutoState> {
    prop_oneof![Just(AutoState::Off), Just(AutoState::On), Just(AutoState::ProjectAutoNotAllowed)]
}

proptest! {
    /// M7: the gate passes only when every condition holds; with Auto not on it never passes.
    #[test]
    fn gate_passes_exactly_when_every_m7_condition_holds(
        bound: bool, target: bool, auto in any_auto(), handoff: bool, change: bool,
        unconfirmed: bool, generating: bool, draft: bool, composer: bool, resolved: bool, app_held: bool,
        rate_limited: bool, card: bool,
    ) {
        let facts = WakeFacts {
            bound, has_delivery_target: target, auto, handoff_in_progress: handoff,
            real_state_change: change, unconfirmed_delivery: unconfirmed,
            page_generating: generating, permission_card: card, human_draft: draft, composer_present: composer,
            facts_resolved: resolved, app_held: app_held.then_some(WakeWithheld::AppPickerNotOpened),
            rate_limited,
        };
        let expected = bound && target && auto == AutoState::On && !handoff && change
            && !unconfirmed && !generating && !draft && composer && resolved && !app_held && !rate_limited && !card;
        prop_assert_eq!(wake_gate(&facts).is_ok(), expected);
    }
}
