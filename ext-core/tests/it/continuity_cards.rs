//! ChatGPT's tool-permission cards through the composed machine (SPEC M5, M6;
//! HERDR-MCP-FACTS §1.10): a page's `permission_cards` report → the classifier → one
//! `card_allow` per accepted key, persisted before it leaves; every other card left to the
//! user with the HUD's reason; z.ai / DeepSeek never get a card command. Transcripts print
//! every card command, persist and Activity entry.

use ext_core::continuity::{Continuity, ContinuityInput, ContinuityOutput, PageRecoveryReport, PageReport, RecoveryCommand};
use ext_core::json_read::WriteJson;
use ext_core::permission_card::{CardButton, CardFacts, PageCards};
use proptest::prelude::*;

use crate::continuity::{bound_with_auto, idle_page, restart, TAB};

const ZAI: &str = "https://chat.z.ai/c/7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f";
const DEEPSEEK: &str = "https://chat.deepseek.com/a/chat/s/5f0e7a1c-2b3d-4e5f-8a9b-0c1d2e3f4a5b";

fn button(label: &str) -> CardButton {
    CardButton { label: label.into(), enabled: true, visible: true, opens_menu: false }
}

/// The tool a card of `connector` names (the fixture's: `herdr_prompt` for Herdr).
fn tool_of(connector: &str) -> &'static str {
    if connector == "Herdr" {
        "herdr_prompt"
    } else {
        "search_messages"
    }
}

fn card(key: &str, connector: &str) -> CardFacts {
    CardFacts {
        key: key.into(),
        wording: format!(
            "Allow ChatGPT to use {connector}? This allows ChatGPT to run {} with your {connector} connector.",
            tool_of(connector)
        ),
        buttons: vec![button("Deny"), button("Allow"), CardButton { opens_menu: true, ..button("Allow options") }],
    }
}

fn cards(load: &str, list: Vec<CardFacts>) -> ContinuityInput {
    cards_at(crate::continuity::CONV, load, list)
}

fn cards_at(url: &str, load: &str, list: Vec<CardFacts>) -> ContinuityInput {
    ContinuityInput::PermissionCards { tab: TAB, cards: PageCards { page_load: load.into(), url: url.into(), cards: list } }
}

/// Feeds `input` and prints what came out that a card test cares about.
fn step(c: &mut Continuity, now: u64, input: ContinuityInput, log: &mut Vec<String>) {
    c.handle(now, input);
    while let Some(output) = c.poll() {
        match output {
            ContinuityOutput::CardAllow { tab, key, index } => {
                // The key is in the snapshot the shell writes before it posts the command.
                let durable = c.snapshot_value()["cards"]["accepted"].as_array().is_some_and(|a| a.iter().any(|k| k == key.as_str()));
                log.push(format!("(card_allow tab={tab} key={key} index={index} durable={durable})"));
            }
            ContinuityOutput::Persist => log.push("(persist)".into()),
            ContinuityOutput::Activity(entry) => {
                let json = entry.write_json();
                let tool = json["tool"].as_str().map(|t| format!(" tool={t}")).unwrap_or_default();
                log.push(format!("activity {} {} {} {}{tool}", json["kind"], json["outcome"], json["reason"], json["id"]));
            }
            ContinuityOutput::Deliver { id, .. } => log.push(format!("(deliver {id})")),
            ContinuityOutput::Recovery { command, .. } => log.push(format!("(recovery {command:?})")),
            _ => {}
        }
    }
}

fn hud_card(c: &Continuity) -> String {
    c.page_view(TAB).and_then(|v| v.card).map_or("none".into(), |line| format!("{}", line.write_json()))
}

// R: M5 — a Herdr card with Auto off is accepted once: persisted first, one click; the same
// report again, the card re-rendered and a worker restart never click it again.
#[test]
fn a_herdr_card_with_auto_off_is_clicked_once_across_restarts_m5() {
    let (mut c, mut log) = bound_with_auto(false);
    step(&mut c, 10, cards("load-1", vec![card("t1#0:h", "Herdr")]), &mut log);
    log.push(format!("hud {}", hud_card(&c)));
    step(&mut c, 11, cards("load-1", vec![card("t1#0:h", "Herdr")]), &mut log);
    step(&mut c, 12, ContinuityInput::PageReported { tab: TAB, report: PageReport { permission_card: true, ..idle_page() } }, &mut log);
    assert!(c.permission_card_waiting(TAB), "a card shown waits for the user");
    step(&mut c, 13, ContinuityInput::CardResult { tab: TAB, key: "t1#0:h".into(), clicked: true }, &mut log);
    let mut c = restart(&c, 20);
    step(&mut c, 20, ContinuityInput::PageReported { tab: TAB, report: PageReport { permission_card: true, ..idle_page() } }, &mut log);
    step(&mut c, 21, cards("load-1", vec![card("t1#0:h", "Herdr")]), &mut log);
    log.push(format!("hud {}", hud_card(&c)));
    step(&mut c, 22, cards("load-1", vec![]), &mut log);
    step(&mut c, 22, ContinuityInput::PageReported { tab: TAB, report: idle_page() }, &mut log);
    expect_test::expect![[r#"
        activity "permission_card" "sent" "herdr_card" "t1#0:h" tool=herdr_prompt
        (persist)
        (card_allow tab=7 key=t1#0:h index=1 durable=true)
        hud {"at":10,"code":"","connector":"Herdr","state":"accepted","tool":"herdr_prompt"}
        activity "permission_card" "confirmed" "allow_clicked" "t1#0:h" tool=herdr_prompt
        hud {"at":null,"code":"","connector":"Herdr","state":"accepted_before","tool":"herdr_prompt"}"#]]
    .assert_eq(&log.join("\n"));
    assert!(!c.permission_card_waiting(TAB), "the card went away");
}

// R: M5 — another connector's card and an ambiguous one are never clicked; the HUD says
// why, and the Activity timeline has one entry per card and reason, not per report.
#[test]
fn another_connector_and_an_ambiguous_card_are_left_with_the_reason_m5() {
    let (mut c, mut log) = bound_with_auto(true);
    step(&mut c, 10, cards("load-1", vec![card("t1#0:g", "Gmail")]), &mut log);
    log.push(format!("hud {}", hud_card(&c)));
    step(&mut c, 11, cards("load-1", vec![card("t1#0:g", "Gmail")]), &mut log);
    let always = CardFacts { buttons: vec![button("Deny"), button("Always allow")], ..card("t2#0:a", "Herdr") };
    step(&mut c, 12, cards("load-1", vec![always]), &mut log);
    log.push(format!("hud {}", hud_card(&c)));
    let disabled = CardFacts { buttons: vec![button("Deny"), CardButton { enabled: false, ..button("Allow") }], ..card("t3#0:d", "Herdr") };
    step(&mut c, 13, cards("load-1", vec![disabled]), &mut log);
    log.push(format!("hud {}", hud_card(&c)));
    expect_test::expect![[r#"
        activity "permission_card" "withheld" "other_connector" "t1#0:g"
        hud {"at":null,"code":"other_connector","connector":"Gmail","state":"refused","tool":""}
        activity "permission_card" "withheld" "no_single_allow" "t2#0:a" tool=herdr_prompt
        hud {"at":null,"code":"no_single_allow","connector":"","state":"refused","tool":"herdr_prompt"}
        activity "permission_card" "withheld" "allow_not_usable" "t3#0:d" tool=herdr_prompt
        hud {"at":null,"code":"allow_not_usable","connector":"","state":"refused","tool":"herdr_prompt"}"#]]
    .assert_eq(&log.join("\n"));
}

// R: M5 (issue 23) — a Herdr card is accepted only on a bound chat: on an unbound
// conversation, on ChatGPT's root page (no conversation) and on a chat whose binding was
// removed, the card is left to the user, the HUD says why (`not_bound`) and the Activity
// timeline has one entry for it; nothing is clicked and nothing is written to the ledger.
#[test]
fn a_herdr_card_on_an_unbound_chat_is_left_alone_with_the_reason_m5() {
    let mut c = Continuity::new();
    let mut log = Vec::new();
    step(&mut c, 0, ContinuityInput::PageReported { tab: TAB, report: idle_page() }, &mut log);
    step(&mut c, 1, cards("load-1", vec![card("t1#0:h", "Herdr")]), &mut log);
    log.push(format!("hud {}", hud_card(&c)));
    step(&mut c, 2, cards("load-1", vec![card("t1#0:h", "Herdr")]), &mut log);
    const ROOT: &str = "https://chatgpt.com/";
    step(&mut c, 3, ContinuityInput::PageReported { tab: TAB, report: PageReport { url: ROOT.into(), ..idle_page() } }, &mut log);
    step(&mut c, 4, cards_at(ROOT, "load-1", vec![card("t2#0:h", "Herdr")]), &mut log);
    log.push(format!("hud {}", hud_card(&c)));
    // Bound, then unbound: a new card of the same chat is left alone again.
    let (mut b, _) = bound_with_auto(true);
    b.handle(5, ContinuityInput::Unbind { scope_key: crate::continuity::SCOPE.into() });
    while b.poll().is_some() {}
    step(&mut b, 6, cards("load-1", vec![card("t3#0:h", "Herdr")]), &mut log);
    log.push(format!("hud {}", hud_card(&b)));
    assert!(c.snapshot_value()["cards"]["accepted"].as_array().is_none_or(Vec::is_empty), "nothing accepted");
    expect_test::expect![[r#"
        activity "permission_card" "withheld" "not_bound" "t1#0:h" tool=herdr_prompt
        hud {"at":null,"code":"not_bound","connector":"Herdr","state":"refused","tool":"herdr_prompt"}
        hud {"at":null,"code":"not_bound","connector":"Herdr","state":"refused","tool":"herdr_prompt"}
        activity "permission_card" "withheld" "not_bound" "t3#0:h" tool=herdr_prompt
        hud {"at":null,"code":"not_bound","connector":"Herdr","state":"refused","tool":"herdr_prompt"}"#]]
    .assert_eq(&log.join("\n"));
}

// R: M5 — a bound Project's conversation: its Herdr card is accepted (the Project's
// binding covers every conversation in it), and the HUD names the tool.
#[test]
fn a_herdr_card_in_a_bound_projects_conversation_is_accepted_m5() {
    use ext_core::binding::CatalogWorkspace;
    const PROJECT_CHAT: &str = "https://chatgpt.com/g/g-p-5f0c2e7a9b1d4c3e8f6a0b2c4d6e8f01-demo/c/3b9f1c2d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
    let mut c = Continuity::new();
    let mut log = Vec::new();
    c.handle(0, ContinuityInput::PageReported { tab: TAB, report: PageReport { url: PROJECT_CHAT.into(), ..idle_page() } });
    c.handle(0, ContinuityInput::Bind { tab: TAB, workspace: CatalogWorkspace { workspace_id: "w1".into(), label: "api".into() } });
    while c.poll().is_some() {}
    step(&mut c, 1, cards_at(PROJECT_CHAT, "load-1", vec![card("t1#0:h", "Herdr")]), &mut log);
    log.push(format!("hud {}", hud_card(&c)));
    expect_test::expect![[r#"
        activity "permission_card" "sent" "herdr_card" "t1#0:h" tool=herdr_prompt
        (persist)
        (card_allow tab=7 key=t1#0:h index=1 durable=true)
        hud {"at":1,"code":"","connector":"Herdr","state":"accepted","tool":"herdr_prompt"}"#]]
    .assert_eq(&log.join("\n"));
}

// R: M6 — a z.ai or DeepSeek page never gets a card command, whatever it reports.
#[test]
fn z_ai_and_deepseek_never_get_a_card_command_m6() {
    for url in [ZAI, DEEPSEEK] {
        let mut c = Continuity::new();
        let mut log = Vec::new();
        step(&mut c, 0, ContinuityInput::PageReported { tab: TAB, report: PageReport { url: url.into(), ..idle_page() } }, &mut log);
        step(&mut c, 1, cards_at(url, "load-1", vec![card("t1#0:h", "Herdr")]), &mut log);
        assert!(!log.iter().any(|l| l.contains("card_allow")), "{url}: {log:?}");
        let line = c.page_view(TAB).and_then(|v| v.card).expect("the HUD says why");
        assert_eq!((line.state, line.code), ("refused", "not_chatgpt"), "{url}");
    }
}

// A report of an earlier page load is not acted on; the page found the card gone → the HUD
// says so and the key stays spent (never clicked later).
#[test]
fn a_stale_report_is_ignored_and_a_gone_card_stays_spent() {
    let (mut c, mut log) = bound_with_auto(false);
    step(&mut c, 5, cards("load-0", vec![card("t1#0:h", "Herdr")]), &mut log);
    assert!(log.is_empty(), "a report of another page load: {log:?}");
    step(&mut c, 10, cards("load-1", vec![card("t1#0:h", "Herdr")]), &mut log);
    assert_eq!(log.iter().filter(|l| l.starts_with("(card_allow")).count(), 1, "{log:?}");
    log.clear();
    step(&mut c, 11, ContinuityInput::CardResult { tab: TAB, key: "t1#0:h".into(), clicked: false }, &mut log);
    log.push(format!("hud {}", hud_card(&c)));
    step(&mut c, 12, cards("load-1", vec![card("t1#0:h", "Herdr")]), &mut log);
    expect_test::expect![[r#"
        activity "permission_card" "failed" "card_gone" "t1#0:h" tool=herdr_prompt
        hud {"at":11,"code":"","connector":"Herdr","state":"gone","tool":"herdr_prompt"}"#]]
    .assert_eq(&log.join("\n"));
}

// M5 / S6: a card waiting blocks recovery — the send-timeout page whose server is still at
// the user would get ChatGPT's Retry clicked, but not while a card is shown (the page's own
// `permission_card` fact is false here: the card report alone is enough).
#[test]
fn a_waiting_card_blocks_recovery() {
    use ext_core::continuity::{ProbeAnswer, ProbeNode};
    let facts = PageRecoveryReport {
        page_load: "load-1".into(),
        assistant: true,
        send_timeout: true,
        retry_offered: true,
        ..PageRecoveryReport::default()
    };
    let user = ProbeAnswer::Node(ProbeNode {
        id: "u2".into(),
        role: ext_core::stale_view::ServerRole::User,
        text_len: 20,
        finished: true,
        update_time_ms: Some(1),
    });
    let run = |with_card: bool| {
        let (mut c, mut log) = bound_with_auto(true);
        if with_card {
            step(&mut c, 1, cards("load-1", vec![card("t1#0:g", "Gmail")]), &mut log);
        }
        step(&mut c, 2, ContinuityInput::RecoveryFacts { tab: TAB, facts: facts.clone() }, &mut log);
        step(&mut c, 3, ContinuityInput::SnapshotResult { tab: TAB, page_load: "load-1".into(), answer: user.clone() }, &mut log);
        log.iter().filter(|l| l.starts_with("(recovery")).cloned().collect::<Vec<_>>().join(" ")
    };
    assert_eq!(run(false), "(recovery Probe { conversation_id: \"0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0\" }) (recovery ClickRetry)");
    assert_eq!(run(true), "(recovery Probe { conversation_id: \"0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0\" })", "a card waiting: no Retry");
}

/// One step of the property test.
#[derive(Clone, Debug)]
enum Op {
    /// The page (0: ChatGPT, 1: z.ai, 2: DeepSeek) reports these cards.
    Report { site: u8, cards: Vec<(u8, u8, u8)> },
    /// The page answers the newest card_allow.
    Answer { clicked: bool },
    /// The worker restarts (the snapshot is written and read back).
    Restart,
    /// Auto is switched.
    ToggleAuto,
}

/// A card from three small numbers: its key, its connector and wording, its buttons.
fn shaped(key: u8, wording: u8, buttons: u8) -> CardFacts {
    let wording = match wording % 5 {
        0 | 1 => "Allow ChatGPT to use Herdr? This allows ChatGPT to run herdr_prompt.",
        2 => "Allow ChatGPT to use Gmail?",
        3 => "ChatGPT wants to run an action.",
        _ => "允许 ChatGPT 使用 Herdr？",
    };
    let all = [
        button("Deny"),
        button("Allow"),
        button("Always allow"),
        CardButton { enabled: false, ..button("Allow") },
        CardButton { visible: false, ..button("Allow") },
        CardButton { opens_menu: true, ..button("Allow") },
        button("拒绝"),
        button("Cancel"),
    ];
    let list = (0..all.len()).filter(|i| buttons & (1 << i) != 0).map(|i| all[i].clone()).collect();
    CardFacts { key: format!("t{}#0", key % 6), wording: wording.into(), buttons: list }
}

/// Whether `card` has every part M5 requires (checked here independently of the classifier).
fn complete_herdr_card(card: &CardFacts) -> bool {
    let plain = |b: &CardButton, labels: &[&str]| !b.opens_menu && labels.contains(&b.label.as_str());
    let allows: Vec<&CardButton> = card.buttons.iter().filter(|b| plain(b, &["Allow", "允许"])).collect();
    (card.wording.starts_with("Allow ChatGPT to use Herdr?") || card.wording.starts_with("允许 ChatGPT 使用 Herdr？"))
        && allows.len() == 1
        && allows[0].enabled
        && allows[0].visible
        && card.buttons.iter().any(|b| plain(b, &["Deny", "拒绝"]))
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..3, prop::collection::vec((any::<u8>(), any::<u8>(), any::<u8>()), 0..3)).prop_map(|(site, cards)| Op::Report { site, cards }),
        2 => any::<bool>().prop_map(|clicked| Op::Answer { clicked }),
        1 => Just(Op::Restart),
        1 => Just(Op::ToggleAuto),
    ]
}

proptest! {
    /// M5, M6: over random card shapes and sequences (repeats, restarts, Auto switched, z.ai
    /// and DeepSeek pages), a card is clicked only when it has every required part, only
    /// on ChatGPT, each key at most once, and always with its key persisted first.
    #[test]
    fn cards_are_clicked_only_when_complete_once_per_key_and_only_on_chatgpt(ops in prop::collection::vec(op(), 1..24)) {
        let (mut c, _) = bound_with_auto(false);
        let mut clicked: Vec<String> = Vec::new();
        let mut shown: Vec<CardFacts> = Vec::new();
        let mut site = 0u8;
        for (n, op) in ops.into_iter().enumerate() {
            let now = 100 + n as u64;
            match op {
                Op::Report { site: s, cards } => {
                    site = s;
                    let url = [crate::continuity::CONV, ZAI, DEEPSEEK][usize::from(s)];
                    c.handle(now, ContinuityInput::PageReported { tab: TAB, report: PageReport { url: url.into(), ..idle_page() } });
                    shown = cards.iter().map(|(k, w, b)| shaped(*k, *w, *b)).collect();
                    c.handle(now, cards_at(url, "load-1", shown.clone()));
                }
                Op::Answer { clicked: yes } => {
                    if let Some(key) = clicked.last().cloned() {
                        c.handle(now, ContinuityInput::CardResult { tab: TAB, key, clicked: yes });
                    }
                }
                Op::Restart => {
                    c = restart(&c, now);
                    let url = [crate::continuity::CONV, ZAI, DEEPSEEK][usize::from(site)];
                    c.handle(now, ContinuityInput::PageReported { tab: TAB, report: PageReport { url: url.into(), ..idle_page() } });
                    c.handle(now, cards_at(url, "load-1", shown.clone()));
                }
                Op::ToggleAuto => c.handle(now, ContinuityInput::ToggleAuto { tab: TAB }),
            }
            while let Some(output) = c.poll() {
                let page_changed = matches!(output, ContinuityOutput::Recovery { command: RecoveryCommand::ClickRetry | RecoveryCommand::ReloadPage, .. });
                prop_assert!(!page_changed, "recovery acted on a card page");
                if let ContinuityOutput::CardAllow { key, index, .. } = output {
                    prop_assert_eq!(site, 0, "a card command off ChatGPT");
                    let card = shown.iter().find(|card| card.key == key).expect("the key of a card shown");
                    prop_assert!(complete_herdr_card(card), "clicked an incomplete card {:?}", card);
                    let allow = &card.buttons[index];
                    prop_assert!(!allow.opens_menu && (allow.label == "Allow" || allow.label == "允许"), "clicked {:?}", allow);
                    prop_assert!(!clicked.contains(&key), "{} clicked twice", key);
                    let durable = c.snapshot_value()["cards"]["accepted"].as_array().is_some_and(|a| a.iter().any(|k| k == key.as_str()));
                    prop_assert!(durable, "{} not persisted before its command", key);
                    clicked.push(key);
                }
            }
        }
    }
}
