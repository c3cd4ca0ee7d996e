//! Continuity as a router (issue 28): the machines it steers are fed only inputs that
//! happened. A manual Continue in flight reaches the wake scheduler as another delivery in
//! flight, never as a page that generates; a handoff's hold on a Project's delivery target
//! reaches the binding table as a hold, never as a Project home page the tab does not show.

use ext_core::auto_gate::WakeWithheld;
use ext_core::continuity::ContinuityInput;
use ext_core::settle_tracker::{PaneEventKind, SettledStatus};

use crate::continuity::{bound_with_auto, confirm, drain, event, not_sent, task, TAB};

#[test]
fn a_wake_held_by_a_manual_continue_in_flight_says_so_and_goes_once_it_is_confirmed() {
    // The Continue button works with Auto off; Auto is turned on while it awaits its answer.
    let (mut c, mut log) = bound_with_auto(false);
    c.handle(1, ContinuityInput::Continue { tab: TAB });
    drain(&mut c, 1, &[], &mut log);
    assert_eq!(log.iter().filter(|l| l.starts_with("deliver tab=7 id=continue:w1/")).count(), 1, "{log:?}");
    c.handle(1, ContinuityInput::ToggleAuto { tab: TAB });
    log.clear();
    c.handle(2, event(1, PaneEventKind::Working));
    c.handle(3, event(2, PaneEventKind::Settled(SettledStatus::Done)));
    drain(&mut c, 3, &[task("t1")], &mut log);
    assert!(log.iter().all(|l| !l.starts_with("deliver")), "nothing is typed over the Continue: {log:?}");
    // The page is not generating: the scheduler was told what is true, another delivery of
    // the scope awaits its answer (failed before: the HUD said the page was generating).
    let withheld = c.page_view(TAB).and_then(|v| v.withheld).map(|w| w.code);
    assert_eq!(withheld, Some(WakeWithheld::UnconfirmedDelivery));
    confirm(&mut c, 4, "continue:w1");
    drain(&mut c, 4, &[task("t1")], &mut log);
    assert_eq!(log.iter().filter(|l| l.starts_with("deliver tab=7 id=wake:w1#2/")).count(), 1, "the wake is not lost: {log:?}");
}

/// Continuity never makes up what a tab shows: no page kind is built in `continuity/` from
/// fields taken elsewhere (what a tab shows comes from `classify_url` of its report only).
/// Failed before: `handoff.rs` told the binding table a Project's conversation was its home.
#[test]
fn continuity_builds_no_page_kind_of_its_own() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/continuity");
    let mut made_up = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("src/continuity is readable") {
        let path = entry.expect("a directory entry").path();
        let text = std::fs::read_to_string(&path).expect("a source file");
        for (n, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices("PageKind::") {
                let rest = &line[at..];
                let value = rest.split('}').next().unwrap_or(rest);
                if [".clone()", ".into()", "to_owned()", "String::"].iter().any(|copied| value.contains(copied)) {
                    made_up.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(made_up.is_empty(), "Continuity feeds a machine a page no tab shows; give it a real input instead:\n{}", made_up.join("\n"));
}

/// The delivery ledger is the only record of a message in flight: the snapshot holds the
/// wake in the ledger's delivery and nowhere else, and the answer naming that record brings
/// the wake back when the page could not send it.
#[test]
fn the_ledger_alone_records_a_wake_in_flight_and_its_answer_brings_the_wake_back() {
    let (mut c, mut log) = bound_with_auto(true);
    c.handle(1, event(1, PaneEventKind::Working));
    c.handle(2, event(2, PaneEventKind::Settled(SettledStatus::Done)));
    drain(&mut c, 2, &[task("t1")], &mut log);
    let json: serde_json::Value = serde_json::from_str(&c.snapshot().to_json().expect("persist")).expect("json");
    let scheduler = &json["scopes"]["chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"]["scheduler"];
    assert!(scheduler.get("in_flight").is_none() && scheduler["progress"].get("in_flight").is_none(), "a second record: {scheduler}");
    assert_eq!(json["ledger"]["active"][0]["message"]["kind"], "wake", "{}", json["ledger"]);
    log.clear();
    not_sent(&mut c, 3, "wake:w1#2");
    drain(&mut c, 3, &[task("t1")], &mut log);
    let due = c.next_deadline().expect("a retry is scheduled");
    c.handle_timeout(due);
    drain(&mut c, due, &[task("t1")], &mut log);
    assert_eq!(log.iter().filter(|l| l.starts_with("deliver tab=7 id=wake:w1#2/")).count(), 1, "offered again once: {log:?}");
}

/// A permission card waiting for the user's answer reaches the scheduler as what it is, not
/// as a generating page: the HUD names it, and the wake goes once it is answered.
#[test]
fn a_wake_held_by_a_permission_card_says_so_and_goes_once_it_is_answered() {
    let (mut c, mut log) = bound_with_auto(true);
    let card = ext_core::continuity::PageReport { permission_card: true, ..crate::continuity::idle_page() };
    c.handle(1, ContinuityInput::PageReported { tab: TAB, report: card });
    c.handle(2, event(1, PaneEventKind::Working));
    c.handle(3, event(2, PaneEventKind::Settled(SettledStatus::Done)));
    drain(&mut c, 3, &[task("t1")], &mut log);
    assert!(log.iter().all(|l| !l.starts_with("deliver")), "nothing is typed over the card: {log:?}");
    // Failed before: the HUD said the page was generating a reply.
    let withheld = c.page_view(TAB).and_then(|v| v.withheld).map(|w| w.code);
    assert_eq!(withheld, Some(WakeWithheld::PermissionCard));
    c.handle(4, ContinuityInput::PageReported { tab: TAB, report: crate::continuity::idle_page() });
    drain(&mut c, 4, &[task("t1")], &mut log);
    assert_eq!(log.iter().filter(|l| l.starts_with("deliver tab=7 id=wake:w1#2/")).count(), 1, "{log:?}");
}
