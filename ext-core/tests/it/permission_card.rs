//! The fail-closed permission-card classifier (SPEC M5, M6).

use ext_core::permission_card::{asked_connector, CardButton, CardDecision, CardFacts, CardLedger, CardRefusal, HERDR_CONNECTORS};
use proptest::prelude::*;

fn button(label: &str) -> CardButton {
    CardButton { label: label.into(), enabled: true, visible: true, opens_menu: false }
}

fn card(wording: &str, buttons: Vec<CardButton>) -> CardFacts {
    CardFacts { key: format!("turn-9|{wording}"), wording: wording.into(), buttons }
}

fn herdr_card() -> CardFacts {
    card(
        "Allow ChatGPT to use Herdr? This allows ChatGPT to run herdr_prompt in your workspace. See details",
        vec![button("Deny"), button("Allow"), CardButton { label: "Allow options".into(), opens_menu: true, ..button("") }],
    )
}

// R: M5 — a clearly labelled Herdr card is accepted once, with its plain Allow, not the
// menu; the same card is never clicked twice.
#[test]
fn a_herdr_card_is_accepted_once_with_its_plain_allow_m5() {
    let mut ledger = CardLedger::default();
    assert_eq!(ledger.decide(&herdr_card(), true, HERDR_CONNECTORS), CardDecision::Accept { index: 1, connector: "Herdr".into() });
    assert_eq!(ledger.decide(&herdr_card(), true, HERDR_CONNECTORS), CardDecision::Leave { reason: CardRefusal::AcceptedBefore });
    let zh = card("允许 ChatGPT 使用 Herdr？这将允许 ChatGPT 访问你的工作区。", vec![button("拒绝"), button("允许")]);
    assert!(matches!(CardLedger::default().decide(&zh, true, HERDR_CONNECTORS), CardDecision::Accept { index: 1, .. }));
}

// R: M5 — every other card is left alone, with the reason.
#[test]
fn any_other_card_is_never_clicked_m5_m6() {
    let leave = |facts: &CardFacts, chatgpt: bool| match CardLedger::default().decide(facts, chatgpt, HERDR_CONNECTORS) {
        CardDecision::Leave { reason } => reason,
        accept => panic!("accepted {facts:?}: {accept:?}"),
    };
    assert_eq!(leave(&card("Allow ChatGPT to use GitHub? This allows ChatGPT to create a branch.", vec![button("Deny"), button("Allow")]), true), CardRefusal::OtherConnector { connector: "GitHub".into() });
    assert_eq!(leave(&card("Do you want to continue with this action?", vec![button("Deny"), button("Allow")]), true), CardRefusal::NoPermissionWording);
    assert_eq!(leave(&card("Allow ChatGPT to use Herdr?", vec![button("Allow")]), true), CardRefusal::NoDeny);
    assert_eq!(leave(&card("Allow ChatGPT to use Herdr?", vec![button("Deny"), button("Always allow")]), true), CardRefusal::NoSingleAllow);
    assert_eq!(leave(&card("Allow ChatGPT to use Herdr?", vec![button("Deny"), button("Allow"), button("Allow")]), true), CardRefusal::NoSingleAllow);
    assert_eq!(leave(&card("Allow ChatGPT to use Herdr?", vec![button("Deny"), CardButton { enabled: false, ..button("Allow") }]), true), CardRefusal::AllowNotUsable);
    assert_eq!(leave(&card("Allow ChatGPT to use Herdr?", vec![button("Deny"), CardButton { visible: false, ..button("Allow") }]), true), CardRefusal::AllowNotUsable);
    assert_eq!(leave(&herdr_card(), false), CardRefusal::NotChatGpt);
    assert_eq!(asked_connector("Allow ChatGPT to use Herdr Continuity?"), Some("Herdr Continuity".into()));
    assert_eq!(asked_connector("Allow ChatGPT to use"), None);
}

proptest! {
    /// M5: whatever the wording and buttons, an accepted card names one of our connectors,
    /// has a Deny, and the clicked button is an enabled, visible, plain Allow.
    #[test]
    fn only_a_complete_herdr_card_is_ever_accepted(
        connector in prop_oneof![Just("Herdr"), Just("herdr"), Just("GitHub"), Just("")],
        zh: bool,
        labels in prop::collection::vec((prop_oneof![Just("Allow"), Just("允许"), Just("Deny"), Just("拒绝"), Just("Always allow"), Just("OK"), Just("")], any::<bool>(), any::<bool>(), any::<bool>()), 0..5),
    ) {
        let wording = if zh { format!("允许 ChatGPT 使用 {connector}？") } else { format!("Allow ChatGPT to use {connector}?") };
        let buttons: Vec<CardButton> = labels.iter().map(|(l, e, v, m)| CardButton { label: (*l).into(), enabled: *e, visible: *v, opens_menu: *m }).collect();
        let facts = card(&wording, buttons.clone());
        if let CardDecision::Accept { index, connector: named } = CardLedger::default().decide(&facts, true, HERDR_CONNECTORS) {
            prop_assert!(named.eq_ignore_ascii_case("herdr"));
            let b = &buttons[index];
            prop_assert!(b.enabled && b.visible && !b.opens_menu && (b.label == "Allow" || b.label == "允许"));
            prop_assert!(buttons.iter().any(|b| (b.label == "Deny" || b.label == "拒绝") && !b.opens_menu));
        }
    }
}
