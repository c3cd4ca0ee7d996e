//! Issue 25: facts, not whole generations. The page's layout label (`generation`) gates
//! nothing; what gates every delivery is whether the facts the page needs resolve
//! (`PageReport::unresolved`). A page mixing the markup of two generations (label `mixed`
//! or none) whose facts resolve is woken like a known one; a page where one needed fact is
//! missing or ambiguous gets nothing typed, and the HUD view names that fact.

use ext_core::auto_gate::WakeWithheld;
use ext_core::continuity::{ContinuityInput, PageReport, Unresolved, UnresolvedWhy};
use ext_core::json_read::WriteJson;
use ext_core::settle_tracker::{PaneEventKind, SettledStatus};

use super::continuity::{bound_with_auto, confirm, drain, event, idle_page, task, TAB};

const SCOPE: &str = "chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0";

fn unresolved(fact: &str, why: UnresolvedWhy) -> Option<Unresolved> {
    Some(Unresolved { fact: fact.into(), why })
}

fn delivered(log: &[String]) -> Vec<&str> {
    log.iter().filter_map(|line| line.strip_prefix("deliver ")).map(|line| line.lines().next().unwrap_or("")).collect()
}

#[test]
fn a_page_of_mixed_markup_whose_facts_resolve_is_woken_once_and_labelled() {
    let (mut c, mut log) = bound_with_auto(true);
    // One generation's turn wrappers with another's submit button: no detection rule
    // holds, the composer resolved (label `mixed`), every needed fact resolved.
    let mixed = PageReport { generation: Some("mixed".into()), unresolved: None, ..idle_page() };
    c.handle(1, ContinuityInput::PageReported { tab: TAB, report: mixed });
    c.handle(2, event(1, PaneEventKind::Working));
    c.handle(3, event(2, PaneEventKind::Settled(SettledStatus::Done)));
    drain(&mut c, 3, &[task("t1")], &mut log);
    assert_eq!(delivered(&log), ["tab=7 id=wake:w1#2/0.0.0"], "{log:?}");
    let view = c.page_view(TAB).expect("chat page has a view");
    assert_eq!(view.layout.as_deref(), Some("mixed"), "the label is shown");
    assert_eq!(view.unresolved, None);
    assert_eq!(view.withheld.as_ref().map(|w| w.code), None);
    let json = view.write_json();
    assert_eq!((json["layout"].clone(), json["unresolved"].clone()), (serde_json::json!("mixed"), serde_json::Value::Null));
    confirm(&mut c, 4, "wake:w1#2");
    drain(&mut c, 4, &[task("t1")], &mut log);
    assert_eq!(c.in_flight(SCOPE), None, "confirmed");

    // No label at all (no rule holds and the page says nothing more) with every fact
    // resolved: still woken — the label is a diagnostic, never a gate.
    log.clear();
    let unlabelled = PageReport { generation: None, unresolved: None, ..c.page(TAB).cloned().unwrap_or_else(idle_page) };
    c.handle(5, ContinuityInput::PageReported { tab: TAB, report: unlabelled });
    c.handle(6, event(3, PaneEventKind::Working));
    c.handle(7, event(4, PaneEventKind::Settled(SettledStatus::Done)));
    drain(&mut c, 7, &[task("t2")], &mut log);
    assert_eq!(delivered(&log), ["tab=7 id=wake:w1#4/0.0.1"], "{log:?}");
    assert_eq!(c.page_view(TAB).and_then(|v| v.layout), None);
}

#[test]
fn an_unresolved_fact_types_nothing_names_the_fact_and_the_wake_follows_once_it_resolves() {
    let (mut c, mut log) = bound_with_auto(true);
    // A known layout label does not help: Send is ambiguous (two candidates in the form).
    let ambiguous = PageReport { unresolved: unresolved("send", UnresolvedWhy::Ambiguous), ..idle_page() };
    c.handle(1, ContinuityInput::PageReported { tab: TAB, report: ambiguous.clone() });
    c.handle(2, event(1, PaneEventKind::Working));
    c.handle(3, event(2, PaneEventKind::Settled(SettledStatus::Done)));
    drain(&mut c, 3, &[task("t1")], &mut log);
    assert!(delivered(&log).is_empty(), "nothing typed: {log:?}");
    assert_eq!(c.in_flight(SCOPE), None);
    let view = c.page_view(TAB).expect("view");
    assert_eq!(view.withheld.as_ref().map(|w| w.code), Some(WakeWithheld::FactUnresolved));
    assert_eq!(view.unresolved, unresolved("send", UnresolvedWhy::Ambiguous));
    assert_eq!(view.layout.as_deref(), Some("chatgpt.classic"));
    let json = view.write_json();
    assert_eq!(json["unresolved"], serde_json::json!({"fact": "send", "why": "ambiguous"}));
    assert_eq!(json["withheld"]["code"], "fact_unresolved");

    // The page resolves (the second Send is gone): the held wake goes out, once.
    log.clear();
    c.handle(5, ContinuityInput::PageReported { tab: TAB, report: PageReport { unresolved: None, ..ambiguous } });
    drain(&mut c, 5, &[task("t1")], &mut log);
    assert_eq!(delivered(&log), ["tab=7 id=wake:w1#2/0.0.0"], "{log:?}");
    c.handle(6, ContinuityInput::PageReported { tab: TAB, report: idle_page() });
    drain(&mut c, 6, &[task("t1")], &mut log);
    assert_eq!(delivered(&log).len(), 1, "not again: {log:?}");
    assert_eq!(c.page_view(TAB).and_then(|v| v.unresolved), None);
}

#[test]
fn a_manual_continue_is_refused_while_a_fact_is_unresolved_saying_why() {
    let (mut c, mut log) = bound_with_auto(false);
    let two_sends = PageReport { unresolved: unresolved("send", UnresolvedWhy::Ambiguous), ..idle_page() };
    c.handle(1, ContinuityInput::PageReported { tab: TAB, report: two_sends.clone() });
    c.handle(2, ContinuityInput::Continue { tab: TAB });
    drain(&mut c, 2, &[], &mut log);
    assert!(delivered(&log).is_empty(), "{log:?}");
    assert_eq!(c.in_flight(SCOPE), None);
    assert!(log.iter().any(|line| line.contains("withheld_fact_unresolved")), "{log:?}");
    // Resolved: the same press types the Continue.
    log.clear();
    c.handle(3, ContinuityInput::PageReported { tab: TAB, report: PageReport { unresolved: None, ..two_sends } });
    c.handle(4, ContinuityInput::Continue { tab: TAB });
    drain(&mut c, 4, &[], &mut log);
    assert_eq!(delivered(&log).len(), 1, "{log:?}");
}

#[test]
fn an_unresolved_composer_withholds_and_the_view_names_it() {
    let (mut c, mut log) = bound_with_auto(true);
    // Two editors match the winning composer probe: the adapter reports no composer and
    // names the fact.
    let page = PageReport { composer: false, unresolved: unresolved("composer", UnresolvedWhy::Ambiguous), ..idle_page() };
    c.handle(1, ContinuityInput::PageReported { tab: TAB, report: page });
    c.handle(2, event(1, PaneEventKind::Working));
    c.handle(3, event(2, PaneEventKind::Settled(SettledStatus::Done)));
    drain(&mut c, 3, &[task("t1")], &mut log);
    assert!(delivered(&log).is_empty(), "{log:?}");
    let view = c.page_view(TAB).expect("view");
    assert_eq!(view.unresolved, unresolved("composer", UnresolvedWhy::Ambiguous));
    assert!(view.withheld.is_some(), "held back");

    // A page that reported a composer but no word on its facts (an adapter that did not
    // say) is not typed into either: no report's default is "unresolved".
    log.clear();
    let silent = PageReport { url: idle_page().url, composer: true, ..PageReport::default() };
    assert_eq!(silent.unresolved, Some(Unresolved::no_profile()));
    c.handle(4, ContinuityInput::PageReported { tab: TAB, report: silent });
    drain(&mut c, 4, &[task("t1")], &mut log);
    assert!(delivered(&log).is_empty(), "{log:?}");
    assert_eq!(c.page_view(TAB).and_then(|v| v.withheld).map(|w| w.code), Some(WakeWithheld::FactUnresolved));
}

#[test]
fn a_persisted_unknown_layout_reason_reads_as_fact_unresolved() {
    use ext_core::json_read::ReadJson;
    // A withheld mark or scheduler written before issue 25 named the reason `unknown_layout`.
    assert_eq!(WakeWithheld::read_json(&serde_json::json!("unknown_layout")), Ok(WakeWithheld::FactUnresolved));
    assert_eq!(WakeWithheld::read_json(&serde_json::json!("fact_unresolved")), Ok(WakeWithheld::FactUnresolved));
    assert_eq!(WakeWithheld::FactUnresolved.write_json(), serde_json::json!("fact_unresolved"));
}

#[test]
fn page_facts_unresolved_is_read_strictly() {
    let read = |value: serde_json::Value| Unresolved::read_page_facts(&value);
    assert_eq!(read(serde_json::json!({"unresolved": null, "unresolved_why": null})), Ok(None));
    assert_eq!(read(serde_json::json!({"unresolved": null})), Ok(None));
    assert_eq!(read(serde_json::json!({})), Ok(Some(Unresolved::no_profile())), "not said: unresolved");
    assert_eq!(
        read(serde_json::json!({"unresolved": "message_id", "unresolved_why": "missing"})),
        Ok(unresolved("message_id", UnresolvedWhy::Missing))
    );
    assert_eq!(read(serde_json::json!({"unresolved": "profile", "unresolved_why": "missing"})), Ok(Some(Unresolved::no_profile())));
    for bad in [
        serde_json::json!({"unresolved": "send"}),
        serde_json::json!({"unresolved": "send", "unresolved_why": null}),
        serde_json::json!({"unresolved": "send", "unresolved_why": "Missing"}),
        serde_json::json!({"unresolved_why": "missing"}),
        serde_json::json!({"unresolved": null, "unresolved_why": "ambiguous"}),
        serde_json::json!({"unresolved": "layout", "unresolved_why": "missing"}),
        serde_json::json!({"unresolved": "x".repeat(65), "unresolved_why": "missing"}),
        serde_json::json!({"unresolved": 3, "unresolved_why": "missing"}),
        serde_json::json!({"unresolved": ["send"], "unresolved_why": "missing"}),
    ] {
        let problem = read(bad.clone()).expect_err("rejected");
        assert!(problem.contains("unresolved"), "{bad}: {problem}");
    }
}
