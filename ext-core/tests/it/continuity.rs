//! The composed continuity loop (SPEC P8, M1, M7, I3, I4, B7, A3): bind → settle → inbox
//! read → idle page → one delivery with a marker → confirmation → `inbox.ack`.

use ext_core::binding::CatalogWorkspace;
use ext_core::continuity::{
    Continuity, ContinuityInput, ContinuityOutput, InboxTask, PageReport, RuntimeAnswer,
    RuntimeCall,
};
use ext_core::settle_tracker::{PaneEventKind, SettledStatus, StreamEvent};

const CONV: &str = "https://chatgpt.com/c/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0";
const TAB: u32 = 7;

fn idle_page() -> PageReport {
    PageReport { url: CONV.into(), composer: true, ..PageReport::default() }
}

fn event(seq: u64, kind: PaneEventKind) -> ContinuityInput {
    ContinuityInput::StreamEvent(StreamEvent {
        boot_id: "b1".into(),
        seq,
        workspace_id: "w1".into(),
        pane_id: "w1:p1".into(),
        kind,
        at: seq,
    })
}

/// Drains outputs, answering every inbox.pending with `tasks` and every other call with a
/// neutral answer; returns the delivered (tab, id, text) and the ack calls seen.
fn drain(c: &mut Continuity, now: u64, tasks: &[InboxTask], log: &mut Vec<String>) {
    while let Some(output) = c.poll() {
        match output {
            ContinuityOutput::Request { id, call } => {
                log.push(format!("request {}", serde_json::to_string(&call).expect("json")));
                let answer = match call {
                    RuntimeCall::InboxPending { .. } => RuntimeAnswer::InboxPending { tasks: tasks.to_vec() },
                    RuntimeCall::Workspaces => RuntimeAnswer::Workspaces {
                        workspaces: vec![CatalogWorkspace { workspace_id: "w1".into(), label: "api".into() }],
                    },
                    RuntimeCall::InboxAck { .. } | RuntimeCall::InboxCounts { .. } => RuntimeAnswer::Counts { counts: Default::default() },
                    _ => RuntimeAnswer::Subscribed,
                };
                c.handle(now, ContinuityInput::Answered { id, result: Ok(answer) });
            }
            ContinuityOutput::Deliver { tab, id, text } => log.push(format!("deliver tab={tab} id={id}\n{text}")),
            ContinuityOutput::ViewsChanged | ContinuityOutput::Persist => {}
            other => log.push(format!("{other:?}")),
        }
    }
}

fn bound_with_auto(auto: bool) -> (Continuity, Vec<String>) {
    let mut c = Continuity::new();
    let mut log = Vec::new();
    c.handle(0, ContinuityInput::LinkUp);
    c.handle(0, ContinuityInput::StreamHello { boot_id: "b1".into() });
    c.handle(0, ContinuityInput::PageReported { tab: TAB, report: idle_page() });
    c.handle(0, ContinuityInput::Bind { tab: TAB, workspace: CatalogWorkspace { workspace_id: "w1".into(), label: "api".into() } });
    if auto {
        c.handle(0, ContinuityInput::ToggleAuto { tab: TAB });
    }
    drain(&mut c, 0, &[], &mut log);
    log.clear();
    (c, log)
}

fn task(id: &str) -> InboxTask {
    InboxTask { task_id: id.into(), state: "completed".into(), pane_id: "w1:p1".into(), prompt_preview: "fix the tests".into(), result: Some("all green".into()) }
}

#[test]
fn a_settle_wakes_the_idle_page_once_with_its_own_tasks_and_acks_after_confirmation() {
    let (mut c, mut log) = bound_with_auto(true);
    let tasks = [task("t1")];
    c.handle(1, event(1, PaneEventKind::Working));
    c.handle(2, event(2, PaneEventKind::Settled(SettledStatus::Done)));
    drain(&mut c, 2, &tasks, &mut log);
    // A replay of the same settle (reconnect) does nothing (P9).
    c.handle(3, event(2, PaneEventKind::Settled(SettledStatus::Done)));
    drain(&mut c, 3, &tasks, &mut log);
    assert_eq!(c.in_flight("chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0").map(|d| d.id.as_str()), Some("wake:w1#2"));
    c.handle(4, ContinuityInput::DeliveryResult { tab: TAB, id: "wake:w1#2".into(), ok: true });
    drain(&mut c, 4, &tasks, &mut log);
    expect_test::expect![[r#"
        request {"call":"inbox_pending","session_ref":"chatgpt:conv:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"}
        deliver tab=7 id=wake:w1#2
        [Herdr] Workspace w1 settled (done). This is a scheduling signal, not evidence that the work succeeded. Re-read the live Herdr and Git state, inspect the agents' output, the diff and the tests, then decide: continue, rework, merge or stop.
        Terminal tasks of this chat (1):
        - t1 [completed] pane w1:p1: fix the tests → all green
        [herdr-continuity wake:w1#2]
        DeliverySeen { tab: 7, id: "wake:w1#2" }
        request {"call":"inbox_ack","session_ref":"chatgpt:conv:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0","task_ids":["t1"]}"#]]
    .assert_eq(&log.join("\n"));
    let view = c.page_view(TAB).expect("chat page has a view");
    assert_eq!(view.wake_count, 1);
    assert_eq!(view.scope_state, "settled");
}

#[test]
fn with_auto_off_nothing_is_delivered_and_the_hud_says_why() {
    // M1, M7: Auto off never submits.
    let (mut c, mut log) = bound_with_auto(false);
    c.handle(1, event(1, PaneEventKind::Working));
    c.handle(2, event(2, PaneEventKind::Settled(SettledStatus::Idle)));
    drain(&mut c, 2, &[task("t1")], &mut log);
    assert!(log.iter().all(|l| !l.starts_with("deliver")), "{log:?}");
    assert!(log.iter().all(|l| !l.contains("inbox_ack")), "I4: no ack without a wake");
    let view = c.page_view(TAB).expect("view");
    assert_eq!(view.withheld.map(|w| w.code), Some(ext_core::auto_gate::WakeWithheld::AutoOff));
}

#[test]
fn a_human_draft_holds_the_wake_and_a_failed_delivery_is_retried_without_acking() {
    let (mut c, mut log) = bound_with_auto(true);
    c.handle(0, ContinuityInput::PageReported { tab: TAB, report: PageReport { draft: true, ..idle_page() } });
    c.handle(1, event(1, PaneEventKind::Working));
    c.handle(2, event(2, PaneEventKind::Settled(SettledStatus::Idle)));
    drain(&mut c, 2, &[task("t1")], &mut log);
    assert!(log.iter().all(|l| !l.starts_with("deliver")), "held by the draft: {log:?}");
    assert_eq!(
        c.page_view(TAB).and_then(|v| v.withheld).map(|w| w.code),
        Some(ext_core::auto_gate::WakeWithheld::HumanDraft)
    );
    // The user clears the draft: the wake goes out.
    c.handle(3, ContinuityInput::PageReported { tab: TAB, report: idle_page() });
    drain(&mut c, 3, &[task("t1")], &mut log);
    assert_eq!(log.iter().filter(|l| l.starts_with("deliver")).count(), 1);
    // The page could not confirm it: no ack (I4), retried after the backoff when idle.
    c.handle(4, ContinuityInput::DeliveryResult { tab: TAB, id: "wake:w1#2".into(), ok: false });
    drain(&mut c, 4, &[task("t1")], &mut log);
    assert!(log.iter().all(|l| !l.contains("inbox_ack")));
    let due = c.next_deadline().expect("a retry is scheduled");
    c.handle_timeout(due);
    drain(&mut c, due, &[task("t1")], &mut log);
    assert_eq!(log.iter().filter(|l| l.starts_with("deliver")).count(), 2, "{log:?}");
    c.handle(due + 1, ContinuityInput::DeliveryResult { tab: TAB, id: "wake:w1#2".into(), ok: true });
    drain(&mut c, due + 1, &[task("t1")], &mut log);
    assert_eq!(log.iter().filter(|l| l.contains("inbox_ack")).count(), 1);
}

#[test]
fn an_unconfirmed_delivery_survives_a_worker_restart_and_is_confirmed_from_the_page_markers() {
    // B7 + "never send twice": the snapshot carries the in-flight delivery.
    let (mut c, mut log) = bound_with_auto(true);
    c.handle(1, event(1, PaneEventKind::Working));
    c.handle(2, event(2, PaneEventKind::Settled(SettledStatus::Idle)));
    drain(&mut c, 2, &[task("t1")], &mut log);
    let snapshot = serde_json::to_string(&c).expect("serialize");
    let mut restored: Continuity = serde_json::from_str(&snapshot).expect("restore");
    let mut after = Vec::new();
    restored.handle(10, ContinuityInput::LinkUp);
    restored.handle(10, ContinuityInput::PageReported { tab: TAB, report: PageReport { markers: vec!["wake:w1#2".into()], ..idle_page() } });
    drain(&mut restored, 10, &[], &mut after);
    assert!(after.iter().all(|l| !l.starts_with("deliver")), "not sent again: {after:?}");
    assert!(after.iter().any(|l| l.contains(r#""call":"inbox_ack""#) && l.contains("t1")), "{after:?}");
    assert!(after.iter().any(|l| l.contains(r#""call":"subscribe","after_seq":2"#)), "resumes after the high-water mark: {after:?}");
}

#[test]
fn another_chat_bound_elsewhere_is_not_woken_by_this_workspace() {
    // I3 / routing: a settle of w2 does not touch a chat bound to w1.
    let (mut c, mut log) = bound_with_auto(true);
    for (seq, kind) in [(1, PaneEventKind::Working), (2, PaneEventKind::Settled(SettledStatus::Idle))] {
        c.handle(seq, ContinuityInput::StreamEvent(StreamEvent { boot_id: "b1".into(), seq, workspace_id: "w2".into(), pane_id: "w2:p1".into(), kind, at: seq }));
    }
    drain(&mut c, 2, &[task("t9")], &mut log);
    assert!(log.is_empty(), "{log:?}");
}

#[test]
fn a_wake_confirmed_after_a_worker_restart_before_the_link_is_up_is_acked_on_link_up() {
    // I4, P6: the restarted worker confirms the wake from the page's markers before the
    // companion link is back; the ack must not be lost, it goes out on the next link-up,
    // once, and is not repeated after the runtime answered it.
    let (mut c, mut log) = bound_with_auto(true);
    c.handle(1, event(1, PaneEventKind::Working));
    c.handle(2, event(2, PaneEventKind::Settled(SettledStatus::Idle)));
    drain(&mut c, 2, &[task("t1")], &mut log);
    assert_eq!(log.iter().filter(|l| l.starts_with("deliver")).count(), 1);
    let saved = serde_json::to_string(&c).expect("persist");
    let mut restarted: Continuity = serde_json::from_str(&saved).expect("restore");
    log.clear();
    // The page (reconnected first) shows the marker: confirmed while the link is still down.
    restarted.handle(10, ContinuityInput::PageReported {
        tab: TAB,
        report: PageReport { markers: vec!["wake:w1#2".into()], user_turns: 1, ..idle_page() },
    });
    drain(&mut restarted, 10, &[], &mut log);
    assert!(log.iter().all(|l| !l.contains("inbox_ack")), "offline: nothing sent yet: {log:?}");
    assert_eq!(restarted.page_view(TAB).expect("view").wake_count, 1);
    restarted.handle(11, ContinuityInput::LinkUp);
    drain(&mut restarted, 11, &[], &mut log);
    assert_eq!(log.iter().filter(|l| l.contains(r#""call":"inbox_ack""#) && l.contains(r#"["t1"]"#)).count(), 1, "{log:?}");
    // Answered: a later reconnect sends no second ack.
    log.clear();
    restarted.handle(12, ContinuityInput::LinkDown);
    restarted.handle(13, ContinuityInput::LinkUp);
    drain(&mut restarted, 13, &[], &mut log);
    assert!(log.iter().all(|l| !l.contains("inbox_ack")), "{log:?}");
}
