//! The continuity HUD's texts live in `extension/_locales` (A2, M4, M7, Q6): the core sends a
//! message key and its substitutions ([`Say`]). Here every key the core can produce is
//! checked in English and Chinese, with the substitutions its message uses, and the
//! transcripts render a `Say` in English exactly as `chrome.i18n.getMessage` would.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use ext_core::auto_gate::{ActionLocked, WakeWithheld};
use ext_core::binding::BindRefusal;
use ext_core::continuity::{locked_say, queue_refusal_say, withheld_say, JudgeTail, Say, MANUAL_REFUSALS};
use ext_core::queue::QueueRefusal;
use ext_core::scope::UnsupportedPage;
use ext_core::semantic_auto::SemanticWithheld;

type Messages = BTreeMap<String, serde_json::Value>;

fn load(name: &str) -> Messages {
    let path = format!("{}/../extension/_locales/{name}/messages.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {path}: {e}"))
}

fn locale(name: &str) -> &'static Messages {
    static EN: OnceLock<Messages> = OnceLock::new();
    static ZH: OnceLock<Messages> = OnceLock::new();
    match name {
        "en" => EN.get_or_init(|| load("en")),
        _ => ZH.get_or_init(|| load("zh_CN")),
    }
}

fn message<'a>(messages: &'a Messages, key: &str) -> Option<&'a str> {
    messages.get(key).and_then(|m| m["message"].as_str())
}

/// `chrome.i18n.getMessage(key, args)` over `messages`: `$1`…`$9` replaced, `$$` is `$`.
fn render(messages: &Messages, say: &Say) -> String {
    let template = message(messages, &say.key).unwrap_or_else(|| panic!("no message {:?}", say.key));
    let mut out = String::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek().copied()) {
            ('$', Some('$')) => {
                out.push('$');
                chars.next();
            }
            ('$', Some(d @ '1'..='9')) => {
                let index = d.to_digit(10).map_or(0, |d| d as usize - 1);
                out.push_str(say.args.get(index).map_or("", String::as_str));
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// The English text the HUD shows for `say` (transcripts print it).
pub fn en(say: &Say) -> String {
    render(locale("en"), say)
}

/// The Chinese text the HUD shows for `say`.
pub fn zh(say: &Say) -> String {
    render(locale("zh_CN"), say)
}

/// The highest `$N` a message uses.
fn placeholders(text: &str) -> usize {
    let bytes = text.as_bytes();
    (1..bytes.len()).filter(|&i| bytes[i - 1] == b'$' && bytes[i].is_ascii_digit()).map(|i| usize::from(bytes[i] - b'0')).max().unwrap_or(0)
}

/// Every `Say` the core can produce, one per key (with its substitutions filled).
fn every_say() -> Vec<Say> {
    let mut all: Vec<Say> = WakeWithheld::ALL.iter().map(|w| withheld_say(*w)).collect();
    all.extend(ActionLocked::ALL.iter().map(|l| locked_say(*l)));
    // The side panel's "cannot be bound" line and a refused bind.
    all.extend(UnsupportedPage::ALL.iter().map(|u| Say::new(&BindRefusal::UnsupportedPage(*u).message_key(), vec![])));
    all.push(Say::new(&BindRefusal::EmptyWorkspaceId.message_key(), vec![]));
    all.extend(MANUAL_REFUSALS.iter().map(|w| Say::coded("manualRefused", w.wire_name(), vec![])));
    // What the HUD's lines append or list (continuity::hud_lines, the bridge card).
    all.push(Say::new("hudGuidanceNote", vec!["note".into()]));
    all.push(Say::new("hudRecoveryReasoning", vec![]));
    all.push(Say::new("hudBridgeDetailMore", vec!["12".into()]));
    // A manual Continue the page did not send for another reason (manual::continue_not_sent).
    all.push(Say::new("manualNotSent", vec![]));
    // The side panel's queue records kept aside (worker::aside).
    all.extend(ext_core::worker::ASIDE_TEXTS.iter().map(|(key, n)| Say::new(key, vec!["x".into(); *n])));
    // The journal opt-in's notices (continuity::journal::journal_opt).
    all.push(Say::new("journalOptedIn", vec![]));
    all.push(Say::new("journalOptedOut", vec![]));
    all.push(Say::new("journalOptedInForgot", vec!["chatgpt:1".into(), "256".into()]));
    for refusal in [
        QueueRefusal::NoConversation,
        QueueRefusal::EmptyText,
        QueueRefusal::TooManyItems { count: 20 },
        QueueRefusal::TooLong { merged_chars: 9 },
        QueueRefusal::TooManyConversations,
        QueueRefusal::BadId,
        QueueRefusal::StorageUnreadable { detail: "d".into() },
        QueueRefusal::RecordUnreadable { detail: "d".into() },
        QueueRefusal::QueueChanged,
        QueueRefusal::AsideFailed { detail: "d".into() },
    ] {
        all.push(queue_refusal_say(&refusal));
    }
    // The queue view's states (the HUD and the Queue button render `queueLine_<state>` with
    // the count and the characters) and the clear question.
    for state in ["waiting", "sending", "undelivered", "unreadable", "aside_failed", "storage_failed", "empty"] {
        all.push(Say::coded("queueLine", state, vec!["2".into(), "40".into()]));
    }
    all.push(Say::new("queueClearConfirm", vec!["2".into()]));
    all.push(Say::new("queueClearUnreadable", vec![]));
    all.push(Say::new("queueClearStorageFailed", vec![]));
    all.push(Say::new("queueClearAsideFailed", vec![]));
    for note in ["queued", "cleared", "expired", "undelivered", "resending"] {
        all.push(Say::coded("queueNote", note, vec![]));
    }
    all.push(Say::coded("queueNote", "cleared_aside", vec![ext_core::queue::ASIDE_KEY.into()]));
    all.push(Say::coded("queueNote", "cleared_forced", vec!["quota".into()]));
    // The stored queue cannot be read: Auto and Goal mode say so (continuity/semantic, goal).
    all.push(Say::coded("semanticWithheld", "queue_unreadable", vec![]));
    all.push(Say::coded("semanticWithheld", "queue_storage_failed", vec![]));
    for tail in [JudgeTail::None, JudgeTail::Stops, JudgeTail::Sent { n: 1, max: 3 }, JudgeTail::NotFree, JudgeTail::AutoOff] {
        let n = if matches!(tail, JudgeTail::Sent { .. }) { 5 } else { 3 };
        all.push(Say::new(tail.key(), vec!["x".into(); n]));
    }
    all.push(Say::new("judgeLine_priors", vec!["x".into(); 4]));
    // JudgeSettings::read's problem codes (the options page shows `judgeProblem_<code>`).
    for problem in ["not_json", "bad_mode", "bad_max"] {
        let record = match problem {
            "bad_mode" => serde_json::json!({"mode": "x", "max_continues": 3}),
            _ => serde_json::json!({"mode": "off", "max_continues": 0}),
        };
        let stored = if problem == "not_json" { Err(&()) } else { Ok(&record) };
        let (_, read) = ext_core::semantic_auto::JudgeSettings::read(Some(stored));
        assert_eq!(read, Some(problem), "the core names this problem");
        all.push(Say::coded("judgeSettingsBad", problem, vec![]));
        all.push(Say::coded("judgeProblem", problem, vec![]));
    }
    all.extend(
        SemanticWithheld::ALL
            .iter()
            .filter(|w| {
                matches!(
                    w,
                    SemanticWithheld::QueueFirst
                        | SemanticWithheld::StreakLimit
                        | SemanticWithheld::JudgedBefore
                        | SemanticWithheld::ShortReply
                )
            })
            .map(|w| Say::coded("semanticWithheld", w.wire_name(), vec![])),
    );
    for (key, n) in [
        ("semanticNotBound", 0),
        ("hudUserStopped", 0),
        ("judgeOff", 0),
        ("judgeNoVerdict", 0),
        ("judgeUnavailable", 1),
        ("judgeFailed", 1),
        ("checkHerdrFailed", 1),
        // The JSON bridge (continuity/bridge): a refused Run / Skip, the prompt's failure.
        ("bridgeDecideFailed", 2),
        ("bridgePromptFailed", 1),
        ("noticeBridgePromptFailed", 0),
        ("deliveryAbandoned", 0),
        ("deliveryNotSaved", 0),
        // The chat's App (continuity/app): the HUD's Forget App.
        ("appForgotten", 0),
        // The journal line (C1).
        ("journalRecorded", 1),
        ("journalNothingYet", 0),
        ("journalWaiting", 2),
        ("journalDropped", 1),
        ("journalMissed", 2),
        // The HUD's Handoff (X1–X8).
        ("handoffRefused_workspace_working", 0),
        ("handoffRefused_in_flight", 0),
        ("handoffRefused_delivery_in_flight", 0),
        ("handoffRefused_no_continuity", 0),
        ("handoffResumeNoTarget", 0),
        ("handoffDone", 1),
        ("handoffLine_confirming", 0),
        ("handoffLine_preparing", 0),
        ("handoffLine_opening", 0),
        ("handoffLine_seeding", 0),
        ("handoffLine_seed_unconfirmed", 0),
        ("handoffLine_seed_uncertain", 0),
        ("handoffLine_copy_prompt", 0),
        ("handoffLine_done", 1),
        ("handoffLine_tab_unknown", 0),
        ("handoffFailed_journal_unavailable", 2),
        ("handoffFailed_bad_package", 1),
        ("handoffFailed_seed_failed", 1),
        // Goal mode (J7): each decision's last argument is the priors, as advice.
        ("goalSet", 1),
        ("goalCleared", 0),
        ("goalSetFailed", 1),
        ("goalClearUnstored", 1),
        ("goalAdopted", 1),
        ("goalPageBusy", 0),
        ("goalWhy_todos_open", 3),
        ("goalWhy_todos_done", 2),
        ("goalWhy_nothing_open", 1),
        ("goalWhy_tasks_running", 2),
        ("goalWhy_workspace_blocked", 1),
        ("goalWhy_evidence_unavailable", 2),
        ("goalWhy_no_goal", 1),
        ("goalWhy_auto_off", 1),
        ("goalWhy_user_stopped", 1),
        ("goalWhy_queue_first", 1),
        ("goalWhy_queue_unreadable", 1),
        ("goalWhy_queue_storage_failed", 1),
        ("goalWhy_busy", 1),
        ("goalWhy_superseded", 1),
        ("goalWhy_round_limit", 2),
    ] {
        all.push(Say::new(key, vec!["x".into(); n]));
    }
    all
}

#[test]
fn every_continuity_text_exists_in_english_and_chinese_with_its_substitutions() {
    for name in ["en", "zh_CN"] {
        let messages = locale(name);
        for say in every_say() {
            let text = message(messages, &say.key).unwrap_or_else(|| panic!("{name} has no message {:?}", say.key));
            assert!(text.chars().count() > 4, "{name} {:?} says what happened: {text:?}", say.key);
            // No message names a substitution the core does not send (a queue line may leave
            // out one of the two figures every queue line gets).
            assert!(placeholders(text) <= say.args.len(), "{name} {:?} names more than the core sends: {text:?}", say.key);
            let english = message(locale("en"), &say.key).unwrap_or_default();
            assert_eq!(placeholders(text), placeholders(english), "{name} {:?} uses what English uses", say.key);
            if !say.key.starts_with("queueLine_") {
                assert_eq!(placeholders(text), say.args.len(), "{name} {:?} uses every substitution: {text:?}", say.key);
            }
        }
    }
}

#[test]
fn every_key_the_core_names_is_in_the_list_above() {
    // A new `Say::new("…")` / `Say::coded("…", …)` in ext-core must join `every_say`, so
    // that its texts are checked: the sources are scanned for the literals.
    let listed: Vec<String> = every_say().into_iter().map(|s| s.key).collect();
    let dir = format!("{}/src/continuity", env!("CARGO_MANIFEST_DIR"));
    let mut found = 0;
    for entry in std::fs::read_dir(&dir).expect("read src/continuity") {
        let path = entry.expect("entry").path();
        let source = std::fs::read_to_string(&path).expect("read source");
        for (pattern, coded) in [("Say::new(\"", false), ("Say::coded(\"", true)] {
            for piece in source.split(pattern).skip(1) {
                let name = piece.split('"').next().unwrap_or_default();
                if name.is_empty() || name.contains(' ') {
                    continue;
                }
                let known =
                    if coded { listed.iter().any(|k| k.starts_with(&format!("{name}_"))) } else { listed.iter().any(|k| k == name) };
                assert!(known, "{}: {pattern}{name}… is not checked by every_say", path.display());
                found += 1;
            }
        }
    }
    // The scan itself must see the core's keys (a renamed constructor would leave it blind).
    assert!(found >= 10, "the scan found only {found} key literals in src/continuity");
}

/// R1: the HUD's context-pressure line (`Pressure`, rendered by content-hud-lines.js) has its text
/// with the tokens, the messages and the level, and a text for every level.
#[test]
fn every_pressure_level_has_its_texts() {
    for name in ["en", "zh_CN"] {
        let line = message(locale(name), "hudPressure").unwrap_or_else(|| panic!("{name} has no hudPressure"));
        assert_eq!(placeholders(line), 3, "{name} hudPressure: {line:?}");
        for level in ext_core::context_pressure::PressureLevel::ALL {
            let key = format!("pressureLevel_{}", level.wire_name());
            let text = message(locale(name), &key).unwrap_or_else(|| panic!("{name} has no message {key:?}"));
            assert_eq!(placeholders(text), 0, "{name} {key:?}: {text:?}");
        }
    }
}

/// Issue 26: the HUD's rate-limit line (`cooldown_until` of the page view, rendered by
/// content-hud-lines.js with the local time) and the withheld reason, in English and Chinese.
#[test]
fn the_cooldown_line_has_its_texts() {
    for name in ["en", "zh_CN"] {
        let line = message(locale(name), "hudCooldownUntil").unwrap_or_else(|| panic!("{name} has no hudCooldownUntil"));
        assert_eq!(placeholders(line), 1, "{name} hudCooldownUntil names the time: {line:?}");
        let reason = message(locale(name), "withheld_rate_limited").unwrap_or_else(|| panic!("{name} has no withheld_rate_limited"));
        assert_eq!(placeholders(reason), 0, "{name} withheld_rate_limited: {reason:?}");
    }
}

/// R2: the HUD's automatic-rollover line (`rollover` of the page view, rendered by
/// content-hud-lines.js) has a text for every blocker code and for `started`, without substitutions.
#[test]
fn every_rollover_line_has_its_texts() {
    let mut codes: Vec<&str> = ext_core::rollover::RolloverBlocker::ALL.iter().map(|b| b.code()).collect();
    codes.push("started");
    for name in ["en", "zh_CN"] {
        for code in &codes {
            let key = format!("hudRollover_{code}");
            let text = message(locale(name), &key).unwrap_or_else(|| panic!("{name} has no message {key:?}"));
            assert_eq!(placeholders(text), 0, "{name} {key:?}: {text:?}");
        }
    }
}

/// M5: the HUD's permission-card line (`CardLine`, rendered by content-hud-lines.js) has a text for
/// every refusal code and for an accepted and a gone card, in English and Chinese, naming
/// the connector only where the line carries one (and the time after it, then the tool an
/// accepted card names); the Activity timeline's tool cell.
#[test]
fn every_permission_card_line_has_its_texts() {
    let mut lines: Vec<(String, usize)> = ext_core::permission_card::CardRefusal::CODES
        .iter()
        .map(|code| (format!("card_refused_{code}"), usize::from(*code == "other_connector" || *code == "not_bound")))
        .collect();
    lines.extend([
        ("hudCardAccepted".to_owned(), 3),
        ("hudCardAcceptedUnnamed".to_owned(), 2),
        ("hudCardGone".to_owned(), 2),
        ("hudCardAcceptedBefore".to_owned(), 1),
        ("activityTool".to_owned(), 1),
    ]);
    for name in ["en", "zh_CN"] {
        for (key, args) in &lines {
            let text = message(locale(name), key).unwrap_or_else(|| panic!("{name} has no message {key:?}"));
            assert_eq!(placeholders(text), *args, "{name} {key:?}: {text:?}");
        }
    }
}

/// Issue 23: the HUD's JSON bridge part (`BridgeView`, rendered by content-hud-lines.js) — the
/// approval card, its tags and buttons, the rounds and the round-limit lines, the pill —
/// has its texts in English and Chinese with the substitutions content-hud-lines.js passes.
#[test]
fn every_bridge_approval_text_is_there() {
    let lines = [
        ("hudBridgeApprovalLabel", 0),
        ("hudBridgeApproval", 1),
        ("hudBridgeMutating", 0),
        ("hudBridgeReadOnly", 0),
        ("hudBridgeTarget", 1),
        ("bridgeRun", 0),
        ("bridgeSkip", 0),
        ("bridgeRunLabel", 2),
        ("bridgeSkipLabel", 2),
        ("hudBridgeRounds", 2),
        ("hudBridgeRoundLimit", 2),
        ("pillBridgeApproval", 1),
    ];
    for name in ["en", "zh_CN"] {
        for (key, args) in lines {
            let text = message(locale(name), key).unwrap_or_else(|| panic!("{name} has no message {key:?}"));
            assert_eq!(placeholders(text), args, "{name} {key:?}: {text:?}");
        }
    }
}

#[test]
fn a_say_renders_like_chrome_i18n() {
    let say = queue_refusal_say(&QueueRefusal::TooManyItems { count: 20 });
    expect_test::expect![
        "Not queued: 20 of 20 messages are already waiting. Wait until they are sent, or clear the queue (right-click Queue)."
    ]
    .assert_eq(&en(&say));
    let zh = render(locale("zh_CN"), &say);
    expect_test::expect!["未加入队列：已有 20/20 条消息在等待。请等它们发出，或右键“排队”清空队列。"].assert_eq(&zh);
}
