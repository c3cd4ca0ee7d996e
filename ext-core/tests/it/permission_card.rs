//! The fail-closed permission-card classifier (SPEC M5, M6), with a regression test for each
//! herdr-mcp classifier bug of HERDR-MCP-FACTS §1.10 that applies to a classifier of card
//! facts (the DOM walk's are the page adapter's, e2e `permission-cards.spec.mjs`).

use ext_core::permission_card::{
    asked_connector, classify, CardButton, CardDecision, CardFacts, CardLedger, CardRefusal, PageCards, HERDR_CONNECTORS, MAX_CARDS,
    MAX_CARD_BUTTONS, MAX_WORDING_CHARS,
};
use proptest::prelude::*;

fn button(label: &str) -> CardButton {
    CardButton { label: label.into(), enabled: true, visible: true, opens_menu: false }
}

fn menu(label: &str) -> CardButton {
    CardButton { opens_menu: true, ..button(label) }
}

fn card(wording: &str, buttons: Vec<CardButton>) -> CardFacts {
    CardFacts { key: "turn-9#0".into(), wording: wording.into(), buttons }
}

const HERDR_ASK: &str = "Allow ChatGPT to use Herdr? This allows ChatGPT to run herdr_prompt in your workspace. See details";

fn herdr_card() -> CardFacts {
    card(HERDR_ASK, vec![button("Deny"), button("Allow"), menu("Allow options")])
}

fn decide(facts: &CardFacts) -> CardDecision {
    classify(facts, true, HERDR_CONNECTORS)
}

fn refusal(facts: &CardFacts) -> CardRefusal {
    match decide(facts) {
        CardDecision::Leave { reason } => reason,
        accept => panic!("accepted {facts:?}: {accept:?}"),
    }
}

// R: M5 — a clearly labelled Herdr card is accepted with its plain Allow, not the menu.
#[test]
fn a_herdr_card_is_accepted_with_its_plain_allow_m5() {
    assert_eq!(decide(&herdr_card()), CardDecision::Accept { index: 1, connector: "Herdr".into() });
    let zh = card("允许 ChatGPT 使用 Herdr？这将允许 ChatGPT 访问你的工作区。", vec![button("拒绝"), button("允许")]);
    assert!(matches!(decide(&zh), CardDecision::Accept { index: 1, .. }));
    // Labels are compared whole, whitespace collapsed and ASCII case ignored.
    let spaced = card(HERDR_ASK, vec![button(" deny "), button("ALLOW")]);
    assert!(matches!(decide(&spaced), CardDecision::Accept { index: 1, .. }));
}

// R: M5, M6 — every other card is left alone, with the reason.
#[test]
fn any_other_card_is_never_clicked_m5_m6() {
    assert_eq!(
        refusal(&card("Allow ChatGPT to use GitHub? This allows ChatGPT to create a branch.", vec![button("Deny"), button("Allow")])),
        CardRefusal::OtherConnector { connector: "GitHub".into() }
    );
    assert_eq!(
        refusal(&card("Do you want to continue with this action?", vec![button("Deny"), button("Allow")])),
        CardRefusal::NoPermissionWording
    );
    assert_eq!(refusal(&card("Allow ChatGPT to use Herdr?", vec![button("Allow")])), CardRefusal::NoDeny);
    assert_eq!(refusal(&card("Allow ChatGPT to use Herdr?", vec![button("Deny"), button("Always allow")])), CardRefusal::NoSingleAllow);
    assert_eq!(
        refusal(&card("Allow ChatGPT to use Herdr?", vec![button("Deny"), button("Allow"), button("Allow")])),
        CardRefusal::NoSingleAllow
    );
    assert_eq!(
        refusal(&card("Allow ChatGPT to use Herdr?", vec![button("Deny"), CardButton { enabled: false, ..button("Allow") }])),
        CardRefusal::AllowNotUsable
    );
    assert_eq!(
        refusal(&card("Allow ChatGPT to use Herdr?", vec![button("Deny"), CardButton { visible: false, ..button("Allow") }])),
        CardRefusal::AllowNotUsable
    );
    assert_eq!(refusal(&CardFacts { key: String::new(), ..herdr_card() }), CardRefusal::NoKey);
    assert_eq!(classify(&herdr_card(), false, HERDR_CONNECTORS), CardDecision::Leave { reason: CardRefusal::NotChatGpt });
    assert_eq!(asked_connector("Allow ChatGPT to use Herdr Continuity?"), Some("Herdr Continuity".into()));
    assert_eq!(asked_connector("Allow ChatGPT to use"), None);
}

// Regression (HERDR-MCP-FACTS §1.10): herdr-mcp took a label that is exactly "OK", "Yes" or
// "Continue", or any short label starting with "allow", for Allow. Only a plain Allow is.
#[test]
fn ok_yes_continue_and_allow_prefixed_labels_are_not_allow() {
    for label in ["OK", "Yes", "Continue", "Allow once", "Allow for this chat", "Allow Herdr", "Approve", "Grant", "同意", "授权"] {
        assert_eq!(refusal(&card(HERDR_ASK, vec![button("Deny"), button(label)])), CardRefusal::NoSingleAllow, "{label}");
    }
}

// Regression (§1.10): herdr-mcp's deny pattern took "Cancel", "Decline", "Block" and a bare
// "No" (`no\b`) for the card's Deny. Only a plain Deny makes the card one we accept.
#[test]
fn cancel_no_decline_and_block_are_not_deny() {
    for label in ["Cancel", "No", "Decline", "Block", "Not now", "取消", "不允许"] {
        assert_eq!(refusal(&card(HERDR_ASK, vec![button(label), button("Allow")])), CardRefusal::NoDeny, "{label}");
    }
}

// Regression (§1.10): herdr-mcp accepted any dialog whose text matched
// `allow|permission|grant|approve`; the wording must ask for a named connector, once.
#[test]
fn permission_words_without_a_named_connector_are_not_a_card() {
    for wording in [
        "Grant permission to continue?",
        "This action needs your approval. Allow?",
        "允许此操作？",
        "Allow ChatGPT to use Gmail? Allow ChatGPT to use Herdr?",
        "Allow ChatGPT to use ?",
    ] {
        assert_eq!(refusal(&card(wording, vec![button("Deny"), button("Allow")])), CardRefusal::NoPermissionWording, "{wording}");
    }
}

// Regression (§1.10, policy drift): herdr-mcp never checked the connector's name, so it
// clicked Allow on every connector's card. Another connector, or a name that merely
// contains "Herdr", is left to the user.
#[test]
fn another_connector_is_never_accepted() {
    for name in ["Gmail", "GitHub", "Herdr Helper", "Not Herdr", "herdr-evil"] {
        let wording = format!("Allow ChatGPT to use {name}? This allows ChatGPT to read your data.");
        assert_eq!(refusal(&card(&wording, vec![button("Deny"), button("Allow")])), CardRefusal::OtherConnector { connector: name.into() });
    }
}

// Regression (§1.10): the chevron split button ("Allow options", `aria-haspopup`) and an
// unlabelled icon button are never the Allow, and a menu opener labelled "Allow" does not
// count as one; with only a menu opener the card has no Allow to click.
#[test]
fn a_menu_opener_is_never_the_allow() {
    assert_eq!(refusal(&card(HERDR_ASK, vec![button("Deny"), menu("Allow")])), CardRefusal::NoSingleAllow);
    assert_eq!(refusal(&card(HERDR_ASK, vec![button("Deny"), button(""), menu("Allow options")])), CardRefusal::NoSingleAllow);
    assert_eq!(refusal(&card(HERDR_ASK, vec![menu("Deny"), button("Allow")])), CardRefusal::NoDeny);
    // The menu's own Allow beside the plain one does not make two.
    assert!(matches!(
        decide(&card(HERDR_ASK, vec![button("Deny"), button("Allow"), menu("Allow")])),
        CardDecision::Accept { index: 1, .. }
    ));
}

// The page's report is read whole or refused whole (a page shapes it through its DOM).
#[test]
fn a_cards_report_over_its_caps_is_refused_whole() {
    let report = |cards: serde_json::Value| serde_json::json!({"type": "permission_cards", "page_load": "load-1", "url": "https://chatgpt.com/", "cards": cards});
    let one = serde_json::json!({"key": "t#0", "wording": HERDR_ASK, "buttons": [
        {"label": "Deny", "enabled": true, "visible": true, "opens_menu": false},
        {"label": "Allow", "enabled": true, "visible": true, "opens_menu": false}]});
    let read = PageCards::read(&report(serde_json::json!([one]))).expect("a report within its caps");
    assert_eq!(read.cards[0].buttons[1].label, "Allow");
    assert!(PageCards::read(&report(serde_json::json!(vec![one.clone(); MAX_CARDS + 1]))).is_err(), "too many cards");
    let mut long = one.clone();
    long["wording"] = "x".repeat(MAX_WORDING_CHARS + 1).into();
    assert!(PageCards::read(&report(serde_json::json!([long]))).is_err(), "wording too long");
    let mut many = one.clone();
    many["buttons"] = serde_json::json!(vec![one["buttons"][0].clone(); MAX_CARD_BUTTONS + 1]);
    assert!(PageCards::read(&report(serde_json::json!([many]))).is_err(), "too many buttons");
    let mut odd = one.clone();
    odd["buttons"][0]["enabled"] = "yes".into();
    assert!(PageCards::read(&report(serde_json::json!([odd]))).is_err(), "a button of the wrong shape");
    assert!(PageCards::read(&serde_json::json!({"type": "permission_cards", "cards": []})).is_err(), "no page_load");
}

// The ledger remembers each accepted key (the newest 128), and reads back what it wrote.
#[test]
fn the_ledger_remembers_each_key_and_reads_back_what_it_wrote() {
    let mut ledger = CardLedger::default();
    for n in 0..130 {
        ledger.record(format!("k{n}"));
    }
    assert!(ledger.accepted("k2") && ledger.accepted("k129") && !ledger.accepted("k1") && !ledger.accepted("k130"));
    assert_eq!(ledger.len(), 128);
    let text = serde_json::to_string(&ext_core::json_read::WriteJson::write_json(&ledger)).expect("JSON");
    assert_eq!(ext_core::json_read::from_str::<CardLedger>(&text), Ok(ledger));
}

proptest! {
    /// M5: whatever the wording and buttons, an accepted card names one of our connectors,
    /// has a plain Deny, and the clicked button is an enabled, visible, plain Allow — the
    /// only one.
    #[test]
    fn only_a_complete_herdr_card_is_ever_accepted(
        connector in prop_oneof![Just("Herdr"), Just("herdr"), Just("GitHub"), Just(""), Just("Herdr Helper")],
        zh: bool,
        extra in prop_oneof![Just(""), Just(" This allows ChatGPT to run a tool."), Just(" Allow ChatGPT to use Gmail?")],
        labels in prop::collection::vec((prop_oneof![Just("Allow"), Just("允许"), Just("Deny"), Just("拒绝"), Just("Always allow"), Just("OK"), Just("Cancel"), Just("")], any::<bool>(), any::<bool>(), any::<bool>()), 0..6),
        chatgpt: bool,
    ) {
        let wording = if zh { format!("允许 ChatGPT 使用 {connector}？{extra}") } else { format!("Allow ChatGPT to use {connector}?{extra}") };
        let buttons: Vec<CardButton> = labels.iter().map(|(l, e, v, m)| CardButton { label: (*l).into(), enabled: *e, visible: *v, opens_menu: *m }).collect();
        let facts = card(&wording, buttons.clone());
        if let CardDecision::Accept { index, connector: named } = classify(&facts, chatgpt, HERDR_CONNECTORS) {
            prop_assert!(chatgpt);
            prop_assert!(named.eq_ignore_ascii_case("herdr"));
            prop_assert!(extra.is_empty() || !extra.contains("Gmail"));
            let b = &buttons[index];
            prop_assert!(b.enabled && b.visible && !b.opens_menu && (b.label == "Allow" || b.label == "允许"));
            prop_assert_eq!(buttons.iter().filter(|b| !b.opens_menu && (b.label == "Allow" || b.label == "允许")).count(), 1);
            prop_assert!(buttons.iter().any(|b| (b.label == "Deny" || b.label == "拒绝") && !b.opens_menu));
        }
    }
}
