//! A message an earlier release kept in flight in the wake scheduler (and its progress
//! push) survives the upgrade (SPEC P8, P5, P6, B7): on restore it joins the ledger's
//! delivery, so that delivery's answer names it. A wake not sent is typed again exactly
//! once; a confirmed summary is remembered as sent; a fallback not sent is offered again.

use ext_core::continuity::{Continuity, ContinuityInput, PageReport};
use ext_core::snapshot::Snapshot;
use serde_json::{json, Value};

use crate::continuity::{drain, TAB};

const RELEASE_0_1_0: &str = include_str!("../fixtures/snapshot-release-0.1.0.json");
const CONV: &str = "https://chatgpt.com/c/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0";
const SCOPE: &str = "chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0";

/// The chat tab after the upgrade: idle, with `marker` (our unsent text) in its composer.
fn page(marker: Option<&str>) -> PageReport {
    PageReport {
        url: CONV.into(),
        composer: true,
        generation: Some("chatgpt.classic".into()),
        unresolved: None,
        page_load: "after-upgrade".into(),
        composer_marker: marker.map(str::to_owned),
        ..PageReport::default()
    }
}

fn restore(json: &str) -> Continuity {
    Continuity::from_snapshot(Snapshot::parse(json).expect("the old snapshot loads"), 100, "fresh")
}

/// Reports the tab with the old delivery's text still in its composer (not sent), then the
/// cleared composer, then runs the clock to `until`; returns every delivery typed.
fn not_sent_then_run(c: &mut Continuity, old_id: &str, until: u64) -> Vec<String> {
    let mut log = Vec::new();
    c.handle(101, ContinuityInput::LinkUp);
    c.handle(101, ContinuityInput::PageReported { tab: TAB, report: page(Some(old_id)) });
    drain(c, 101, &[], &mut log);
    c.handle(102, ContinuityInput::PageReported { tab: TAB, report: page(None) });
    drain(c, 102, &[], &mut log);
    while let Some(due) = c.next_deadline().filter(|due| *due <= until) {
        c.handle_timeout(due);
        drain(c, due, &[], &mut log);
    }
    log.into_iter().filter(|l| l.starts_with("deliver")).collect()
}

#[test]
fn a_wake_in_flight_in_a_release_0_1_0_snapshot_that_was_not_sent_is_typed_exactly_once() {
    let mut c = restore(RELEASE_0_1_0);
    let typed = not_sent_then_run(&mut c, "wake:w1#2", 10 * 60_000);
    // Failed before: the answer named no message, so the wake (no tasks) was never typed.
    assert_eq!(typed.iter().filter(|l| l.starts_with("deliver tab=7 id=wake:w1#2/")).count(), 1, "{typed:?}");
    assert_eq!(typed.len(), 1, "{typed:?}");
}

/// The 0.1.0 fixture with a progress message in flight instead of the wake.
fn with_progress_in_flight(old: Value) -> String {
    let mut snapshot: Value = serde_json::from_str(RELEASE_0_1_0).expect("json");
    let scope = &mut snapshot["scopes"][SCOPE];
    scope["in_flight"] = json!({ "id": "progress:w1#1", "tab": TAB, "kind": "progress", "task_ids": [], "at": 2 });
    scope["scheduler"]["in_flight"] = json!({ "kind": "progress" });
    scope["scheduler"]["progress"]["phase"] = json!({ "phase": "working", "since": 1, "next_check_at": 60_001, "fallback_due_at": null });
    scope["scheduler"]["progress"]["in_flight"] = old;
    snapshot["tracker"]["workspaces"]["w1"]["working"] = json!(true);
    snapshot.to_string()
}

#[test]
fn an_old_summary_in_flight_that_is_confirmed_is_remembered_as_sent() {
    let mut c = restore(&with_progress_in_flight(json!({ "kind": "summary", "text": "step 3 of 5 done" })));
    let report = PageReport { user_turns: 1, markers: vec!["progress:w1#1".into()], ..page(None) };
    c.handle(101, ContinuityInput::PageReported { tab: TAB, report });
    drain(&mut c, 101, &[], &mut Vec::new());
    assert!(c.in_flight(SCOPE).is_none(), "confirmed by its marker");
    let json: Value = serde_json::from_str(&c.snapshot().to_json().expect("persist")).expect("json");
    // P6: the same summary is never delivered twice in a row (failed before: not remembered,
    // so the next check typed it again).
    assert_eq!(json["scopes"][SCOPE]["scheduler"]["progress"]["last_sent"]["text"], "step 3 of 5 done", "{json}");
}

#[test]
fn an_old_fallback_in_flight_that_was_not_sent_is_offered_again() {
    let mut c = restore(&with_progress_in_flight(json!({ "kind": "fallback" })));
    let typed = not_sent_then_run(&mut c, "progress:w1#1", 100 + 2 * 60_000);
    // P5: the quiet stretch still gets its one fallback (failed before: never re-armed).
    assert_eq!(typed.iter().filter(|l| l.starts_with("deliver tab=7 id=progress:w1/")).count(), 1, "{typed:?}");
}
