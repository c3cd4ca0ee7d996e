//! Dispatches find their chat (issue 24): every message the extension types ends with a
//! marker naming the chat's `browser_session_ref`, and the runtime hears which bound chats
//! generate a reply (`chats.report`), the evidence for a `herdr_prompt` without a ref.

use ext_core::binding::CatalogWorkspace;
use ext_core::continuity::{
    browser_session_ref, marker_line, ChatFact, Continuity, ContinuityInput, ContinuityOutput, RuntimeAnswer, RuntimeCall,
    CHATS_REPORT_REFRESH_MS,
};
use ext_core::scope::{Scope, Site};
use ext_core::settle_tracker::{PaneEventKind, SettledStatus};

use crate::continuity::{bound_with_auto, confirm, drain, event, idle_page, task, TAB};

const REF: &str = "chatgpt:conv:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0";

/// The `chats.report` calls among the outputs (each answered), as `(reporter, chats)`.
fn reports(c: &mut Continuity, now: u64) -> Vec<(String, Vec<ChatFact>)> {
    let mut seen = Vec::new();
    while let Some(output) = c.poll() {
        if let ContinuityOutput::Request { id, call } = output {
            let answer = match call {
                RuntimeCall::ChatsReport { reporter, chats } => {
                    seen.push((reporter, chats));
                    RuntimeAnswer::ChatsReported
                }
                RuntimeCall::Workspaces => {
                    RuntimeAnswer::Workspaces { workspaces: vec![CatalogWorkspace { workspace_id: "w1".into(), label: "api".into() }] }
                }
                RuntimeCall::InboxAck { .. } | RuntimeCall::InboxCounts { .. } => RuntimeAnswer::Counts { counts: Default::default() },
                RuntimeCall::InboxPending { .. } => RuntimeAnswer::InboxPending { tasks: Vec::new(), more: false },
                _ => RuntimeAnswer::Subscribed,
            };
            c.handle(now, ContinuityInput::Answered { id, result: Ok(answer) });
        }
    }
    seen
}

fn fact(generating: bool) -> Vec<ChatFact> {
    vec![ChatFact { session_ref: REF.into(), generating }]
}

#[test]
fn the_marker_line_names_the_delivery_and_the_chats_session_ref_or_fails_closed() {
    assert_eq!(marker_line("wake:w1#2/e.0.1", Some(REF)).as_deref(), Some(&*format!("[herdr-continuity wake:w1#2/e.0.1 ref={REF}]")));
    assert_eq!(marker_line("handoff:ho-1/e.0.1", None).as_deref(), Some("[herdr-continuity handoff:ho-1/e.0.1]"));
    for bad in ["", "chatgpt:conv:a b", "chatgpt:conv:a]b", "x\ny"] {
        assert_eq!(marker_line("wake:w1#2/e.0.1", Some(bad)), None, "{bad:?}");
    }
    let project = Scope::Project { project_id: "g-p-0123456789abcdef0123456789abcdef".into() };
    let conversation = Scope::Conversation { site: Site::Zai, conversation_id: "7c1d".into() };
    for scope in [project, conversation] {
        assert_eq!(Scope::from_key(&scope.key()), Some(scope.clone()), "the key reads back");
    }
    assert_eq!(browser_session_ref(&Scope::from_key("project:g-p-1").expect("a project key")), "chatgpt:project:g-p-1");
    for bad in ["", "project:", "handoff:chatgpt:x", "mars:1", "chatgpt"] {
        assert_eq!(Scope::from_key(bad), None, "{bad:?}");
    }
}

#[test]
fn a_wake_ends_with_a_marker_naming_the_chats_session_ref_and_says_where_the_ref_is() {
    let (mut c, mut log) = bound_with_auto(true);
    c.handle(1, event(1, PaneEventKind::Working));
    c.handle(2, event(2, PaneEventKind::Settled(SettledStatus::Idle)));
    drain(&mut c, 2, &[task("t1")], &mut log);
    let wake = log.iter().find(|l| l.starts_with("deliver ")).expect("a wake was typed");
    assert!(wake.ends_with(&format!("\n[herdr-continuity wake:w1#2/0.0.0 ref={REF}]")), "{wake}");
    assert!(wake.contains("call herdr_prompt with browser_session_ref set to the ref= value on this message's last line"), "{wake}");
    assert!(wake.contains("This is a scheduling signal, not evidence that the work succeeded"), "{wake}");
    // Confirmation still goes by the delivery id the page reads off the marker.
    confirm(&mut c, 3, "wake:w1#2");
    drain(&mut c, 3, &[task("t1")], &mut log);
    assert!(c.ledger().active().next().is_none(), "the wake is confirmed");
}

#[test]
fn the_runtime_hears_which_bound_chats_generate_refreshed_while_one_does_and_again_after_a_link_up() {
    let mut c = Continuity::with_epoch("ep1");
    c.handle(0, ContinuityInput::LinkUp);
    c.handle(0, ContinuityInput::PageReported { tab: TAB, report: idle_page() });
    assert_eq!(reports(&mut c, 0), vec![("ep1".to_owned(), Vec::new())], "nothing is bound: the empty list, once");
    c.handle(0, ContinuityInput::Bind { tab: TAB, workspace: CatalogWorkspace { workspace_id: "w1".into(), label: "api".into() } });
    assert_eq!(reports(&mut c, 0), vec![("ep1".to_owned(), fact(false))], "the bound chat, idle");

    // It starts generating: told at once, and again every refresh while it lasts.
    let mut generating = idle_page();
    generating.generating = true;
    c.handle(100, ContinuityInput::PageReported { tab: TAB, report: generating.clone() });
    assert_eq!(reports(&mut c, 100), vec![("ep1".to_owned(), fact(true))]);
    c.handle(200, ContinuityInput::PageReported { tab: TAB, report: generating.clone() });
    assert_eq!(reports(&mut c, 200), Vec::new(), "unchanged and fresh: nothing");
    assert_eq!(c.next_deadline(), Some(100 + CHATS_REPORT_REFRESH_MS));
    c.handle_timeout(100 + CHATS_REPORT_REFRESH_MS);
    assert_eq!(reports(&mut c, 100 + CHATS_REPORT_REFRESH_MS), vec![("ep1".to_owned(), fact(true))], "refreshed");

    // It stops: told at once; no refresh is due for an idle chat.
    let later = 100 + CHATS_REPORT_REFRESH_MS + 5;
    c.handle(later, ContinuityInput::PageReported { tab: TAB, report: idle_page() });
    assert_eq!(reports(&mut c, later), vec![("ep1".to_owned(), fact(false))]);
    assert!(c.next_deadline().is_none_or(|at| at > later + CHATS_REPORT_REFRESH_MS), "no refresh while nothing generates");

    // The link drops: nothing is sent; on link-up the list goes out whole again.
    c.handle(later + 1, ContinuityInput::LinkDown);
    c.handle(later + 2, ContinuityInput::PageReported { tab: TAB, report: generating });
    assert_eq!(reports(&mut c, later + 2), Vec::new(), "offline");
    c.handle(later + 3, ContinuityInput::LinkUp);
    assert_eq!(reports(&mut c, later + 3), vec![("ep1".to_owned(), fact(true))]);

    // The tab goes away: the chat is no longer reported.
    c.handle(later + 4, ContinuityInput::PageGone { tab: TAB });
    assert_eq!(reports(&mut c, later + 4), vec![("ep1".to_owned(), Vec::new())]);
}

#[test]
fn an_older_runtime_without_chats_report_is_not_asked_again_until_the_next_link_up() {
    let mut c = Continuity::with_epoch("ep1");
    c.handle(0, ContinuityInput::LinkUp);
    c.handle(0, ContinuityInput::PageReported { tab: TAB, report: idle_page() });
    c.handle(0, ContinuityInput::Bind { tab: TAB, workspace: CatalogWorkspace { workspace_id: "w1".into(), label: "api".into() } });
    let mut asked = 0;
    while let Some(output) = c.poll() {
        if let ContinuityOutput::Request { id, call } = output {
            let result = match call {
                RuntimeCall::ChatsReport { .. } => {
                    asked += 1;
                    Err(ext_core::continuity::CallError {
                        code: continuity_protocol::ErrorCode::UnknownMethod,
                        message: "unknown method chats.report".into(),
                    })
                }
                _ => Ok(RuntimeAnswer::Subscribed),
            };
            c.handle(0, ContinuityInput::Answered { id, result });
        }
    }
    assert!(asked >= 1);
    let mut generating = idle_page();
    generating.generating = true;
    c.handle(1, ContinuityInput::PageReported { tab: TAB, report: generating });
    assert_eq!(reports(&mut c, 1), Vec::new(), "not asked again");
    c.handle(2, ContinuityInput::LinkUp);
    assert_eq!(reports(&mut c, 2), vec![("ep1".to_owned(), fact(true))], "asked again after a link-up");
}

#[test]
fn bound_chats_are_reported_in_ref_order_whatever_order_they_were_bound_in() {
    use ext_core::continuity::PageReport;
    let conversation = |id: &str| PageReport { url: format!("https://chatgpt.com/c/{id}"), ..idle_page() };
    let (late, early) = ("ffffffff-2222-4333-8444-555555555555", "11111111-2222-4333-8444-555555555555");
    let mut c = Continuity::with_epoch("ep1");
    c.handle(0, ContinuityInput::LinkUp);
    for (tab, id, workspace) in [(1, late, "w1"), (2, early, "w2")] {
        c.handle(0, ContinuityInput::PageReported { tab, report: conversation(id) });
        let workspace = CatalogWorkspace { workspace_id: workspace.into(), label: workspace.into() };
        c.handle(0, ContinuityInput::Bind { tab, workspace });
    }
    let refs = |chats: &[ChatFact]| chats.iter().map(|f| f.session_ref.clone()).collect::<Vec<_>>();
    let last = reports(&mut c, 0).pop().expect("a chats.report");
    assert_eq!(refs(&last.1), vec![format!("chatgpt:conv:{early}"), format!("chatgpt:conv:{late}")]);
}
