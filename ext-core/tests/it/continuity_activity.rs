//! The Activity timeline's entries (issue 13, SPEC O1): every automatic wake the loop sent
//! or held back, with its reason and delivery id, once per change (P8, M1, M7, B7).

use ext_core::continuity::{Continuity, ContinuityInput};
use ext_core::settle_tracker::{PaneEventKind, SettledStatus};

use super::continuity::{bound_with_auto, confirm, drain_logging, event, idle_page, not_sent, restart, task, TAB};

fn run(c: &mut Continuity, now: u64, log: &mut Vec<String>) {
    drain_logging(c, now, &[task("t1")], log, true);
}

/// Only the timeline's lines (and the deliveries' ids) of a transcript.
fn timeline(log: &[String]) -> String {
    log.iter()
        .filter_map(|line| {
            line.strip_prefix("activity ")
                .map(str::to_owned)
                .or_else(|| line.strip_prefix("deliver ").map(|d| format!("(deliver {})", d.lines().next().unwrap_or_default())))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn settle(c: &mut Continuity, log: &mut Vec<String>) {
    c.handle(1, event(1, PaneEventKind::Working));
    c.handle(2, event(2, PaneEventKind::Settled(SettledStatus::Done)));
    run(c, 2, log);
}

#[test]
fn a_settle_with_auto_on_records_the_wake_sent_with_its_reason_and_id_then_confirmed() {
    let (mut c, mut log) = bound_with_auto(true);
    settle(&mut c, &mut log);
    confirm(&mut c, 4, "wake:w1#2");
    run(&mut c, 4, &mut log);
    expect_test::expect![[r#"
        (deliver tab=7 id=wake:w1#2/0.0.0)
        chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 wake sent settled wake:w1#2/0.0.0
        chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 wake confirmed marker_seen wake:w1#2/0.0.0"#]]
    .assert_eq(&timeline(&log));
}

#[test]
fn a_human_draft_holds_the_wake_back_once_not_once_per_page_fact_and_a_new_reason_is_a_new_entry() {
    let (mut c, mut log) = bound_with_auto(true);
    let draft = ext_core::continuity::PageReport { draft: true, ..idle_page() };
    c.handle(0, ContinuityInput::PageReported { tab: TAB, report: draft.clone() });
    settle(&mut c, &mut log);
    // The user keeps typing: the page reports the same state again and again (M7).
    for at in 3..6 {
        c.handle(at, ContinuityInput::PageReported { tab: TAB, report: draft.clone() });
        run(&mut c, at, &mut log);
    }
    // They send their own message: the page generates a reply (a new reason).
    let generating = ext_core::continuity::PageReport { generating: true, user_turns: 1, ..idle_page() };
    c.handle(6, ContinuityInput::PageReported { tab: TAB, report: generating.clone() });
    c.handle(7, ContinuityInput::PageReported { tab: TAB, report: generating });
    run(&mut c, 7, &mut log);
    // The reply ends: the wake goes.
    c.handle(8, ContinuityInput::PageReported { tab: TAB, report: ext_core::continuity::PageReport { user_turns: 1, ..idle_page() } });
    run(&mut c, 8, &mut log);
    expect_test::expect![[r#"
        chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 wake withheld human_draft wake:w1#2
        chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 wake withheld page_generating wake:w1#2
        (deliver tab=7 id=wake:w1#2/0.0.0)
        chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 wake sent settled wake:w1#2/0.0.0"#]]
    .assert_eq(&timeline(&log));
}

#[test]
fn with_auto_off_a_settle_is_withheld_saying_so_once_across_a_worker_restart_and_goes_when_auto_is_turned_on() {
    let (mut c, mut log) = bound_with_auto(false);
    settle(&mut c, &mut log);
    // B7: the restarted worker sees the same pending wake and the same reason: no new entry.
    let mut c = restart(&c, 3);
    c.handle(3, ContinuityInput::LinkUp);
    c.handle(3, ContinuityInput::PageReported { tab: TAB, report: idle_page() });
    run(&mut c, 3, &mut log);
    c.handle(4, ContinuityInput::ToggleAuto { tab: TAB });
    run(&mut c, 4, &mut log);
    expect_test::expect![[r#"
        chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 wake withheld auto_off wake:w1#2
        (deliver tab=7 id=wake:w1#2/r.1.0)
        chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 wake sent settled wake:w1#2/r.1.0"#]]
    .assert_eq(&timeline(&log));
}

#[test]
fn a_wake_the_page_could_not_send_is_recorded_failed_then_held_for_its_retry_then_sent_again() {
    let (mut c, mut log) = bound_with_auto(true);
    settle(&mut c, &mut log);
    not_sent(&mut c, 3, "wake:w1#2");
    run(&mut c, 3, &mut log);
    let retry_at = 3 + ext_core::wake::RETRY_BACKOFF_MS[0];
    c.handle_timeout(retry_at);
    run(&mut c, retry_at, &mut log);
    expect_test::expect![[r#"
        (deliver tab=7 id=wake:w1#2/0.0.0)
        chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 wake sent settled wake:w1#2/0.0.0
        chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 wake failed send_button_missing wake:w1#2/0.0.0
        chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 wake withheld delivery_retry_pending wake:w1#2
        (deliver tab=7 id=wake:w1#2/0.0.1)
        chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 wake sent settled wake:w1#2/0.0.1"#]]
    .assert_eq(&timeline(&log));
}

/// Every code an entry can carry, the kinds and the outcomes have a text in both locales of
/// the side panel (issue 13: English and Chinese; a code without one would show the bare code).
#[test]
fn every_activity_code_has_an_english_and_a_chinese_text() {
    use ext_core::auto_gate::WakeWithheld;
    use ext_core::json_read::ReadJson;
    // The wake gate's reasons, each checked to be one of its wire names.
    let withheld = [
        "not_bound",
        "no_active_conversation",
        "auto_off",
        "project_auto_not_allowed",
        "handoff_in_progress",
        "no_real_state_change",
        "unconfirmed_delivery",
        "page_generating",
        "permission_card",
        "human_draft",
        "no_composer",
        "fact_unresolved",
        "delivery_retry_pending",
        "delivery_failed_repeatedly",
    ];
    for code in withheld {
        assert!(WakeWithheld::read_json(&serde_json::Value::from(code)).is_ok(), "{code} is not a WakeWithheld name");
    }
    let kinds =
        ["wake", "progress", "queue_batch", "judge_continue", "recovery_reload", "recovery_retry", "bridge_call", "permission_card"];
    let outcomes = ["sent", "confirmed", "not_confirmed", "withheld", "failed"];
    let keys = withheld
        .iter()
        .chain(ext_core::continuity::REASON_CODES)
        .map(|code| format!("activityReason_{code}"))
        .chain(kinds.iter().map(|kind| format!("activityKind_{kind}")))
        .chain(outcomes.iter().map(|outcome| format!("activityOutcome_{outcome}")));
    for locale in ["en", "zh_CN"] {
        let path = format!("{}/../extension/_locales/{locale}/messages.json", env!("CARGO_MANIFEST_DIR"));
        let messages: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("a locale")).expect("JSON");
        let missing: Vec<String> =
            keys.clone().filter(|key| messages[key.as_str()]["message"].as_str().is_none_or(str::is_empty)).collect();
        assert!(missing.is_empty(), "{locale} has no text for {missing:?}");
    }
}

/// B7: a worker restart while a human draft holds the wake back records nothing new — not
/// the "no composer" the restored scheduler sees before the page reports again, and not
/// the draft again once it does.
#[test]
fn a_worker_restart_while_a_draft_holds_the_wake_records_nothing_new() {
    let (mut c, mut log) = bound_with_auto(true);
    let draft = ext_core::continuity::PageReport { draft: true, ..idle_page() };
    c.handle(0, ContinuityInput::PageReported { tab: TAB, report: draft.clone() });
    settle(&mut c, &mut log);
    let mut c = restart(&c, 3);
    c.handle(3, ContinuityInput::LinkUp);
    run(&mut c, 3, &mut log);
    c.handle(4, ContinuityInput::PageReported { tab: TAB, report: draft });
    run(&mut c, 4, &mut log);
    expect_test::expect!["chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 wake withheld human_draft wake:w1#2"].assert_eq(&timeline(&log));
}
