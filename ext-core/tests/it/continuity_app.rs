//! The chat's App on every message (issue 24; ext-core `continuity/app`): the binding
//! learns its App from the newest accepted human turn (one pill learned, several
//! ambiguous, none keeps it, our own marked turns never read), every delivery carries it
//! (wake, progress, Continue, queue batch, judge continue, handoff seed — the seed with its
//! source's App), and a page that cannot attach it gets nothing App-less: the delivery is
//! held with a named reason (HUD and Activity), retried on a bounded backoff and sent once
//! when attaching works. The property test drives human turns, settles, queue adds, page
//! answers (App failures among them), Forget App, time and worker restarts in any order.

use std::collections::BTreeMap;

use expect_test::expect;
use ext_core::auto_gate::WakeWithheld;
use ext_core::binding::CatalogWorkspace;
use ext_core::continuity::{
    app_retry_wait, AppAttachFailure, AppMention, Continuity, ContinuityInput, ContinuityOutput, DeliveryOutcome, InboxTask, JudgeAnswer,
    RuntimeAnswer, RuntimeCall, APP_RETRY_FIRST_MS, APP_RETRY_MAX_MS,
};
use ext_core::json_read::WriteJson;
use ext_core::semantic_auto::Verdict;
use ext_core::settle_tracker::{PaneEventKind, SettledStatus};
use ext_core::snapshot::Snapshot;
use proptest::prelude::*;

use super::continuity::{event, idle_page, task, TAB};
use super::continuity_handoff::{self as handoff, World as HandoffWorld};

const SCOPE: &str = "chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0";

fn herdr() -> AppMention {
    AppMention { keyword: "herdr".into(), name: "Herdr".into(), path: "connector://apps/herdr".into() }
}

fn github() -> AppMention {
    AppMention { keyword: "github".into(), name: "GitHub".into(), path: "connector://apps/github".into() }
}

/// The composed machine with a simulated runtime (each settle ends one task, which the
/// parent inbox lists until it is acked; the judge says `continue`) and
/// `chrome.storage.local`'s queue record.
struct W {
    c: Continuity,
    now: u64,
    log: Vec<String>,
    queue: Option<serde_json::Value>,
    tasks: Vec<InboxTask>,
    /// Every `deliver` posted: (id, app).
    posted: Vec<(String, Option<AppMention>)>,
    /// Every `inbox.ack`'s task ids.
    acked: Vec<String>,
}

impl W {
    fn new() -> Self {
        let mut w = W {
            c: Continuity::with_epoch("e"),
            now: 0,
            log: Vec::new(),
            queue: None,
            tasks: Vec::new(),
            posted: Vec::new(),
            acked: Vec::new(),
        };
        w.feed(ContinuityInput::LinkUp);
        w.feed(ContinuityInput::StreamHello { boot_id: "b1".into(), last_seq: None, agents: None, log_id: None, log_reset: false });
        w.feed(ContinuityInput::JudgeSettings { stored: Some(Ok(serde_json::json!({"mode": "in_auto", "max_continues": 3}))) });
        w.feed(ContinuityInput::PageReported { tab: TAB, report: idle_page() });
        w.feed(ContinuityInput::Bind { tab: TAB, workspace: CatalogWorkspace { workspace_id: "w1".into(), label: "api".into() } });
        w.feed(ContinuityInput::ToggleAuto { tab: TAB });
        w.log.clear();
        w
    }

    fn feed(&mut self, input: ContinuityInput) {
        self.c.handle(self.now, input);
        self.drain();
    }

    fn tick(&mut self, ms: u64) {
        let until = self.now + ms;
        while let Some(at) = self.c.next_deadline().filter(|at| *at <= until) {
            self.now = at.max(self.now);
            self.c.handle_timeout(self.now);
            self.drain();
        }
        self.now = until;
    }

    fn drain(&mut self) {
        while let Some(output) = self.c.poll() {
            match output {
                ContinuityOutput::Request { id, call } => {
                    let result = match call {
                        RuntimeCall::InboxPending { .. } => RuntimeAnswer::InboxPending { tasks: self.tasks.clone(), more: false },
                        RuntimeCall::InboxAck { task_ids, .. } => {
                            self.log.push(format!("inbox.ack {task_ids:?}"));
                            self.tasks.retain(|t| !task_ids.contains(&t.task_id));
                            self.acked.extend(task_ids);
                            RuntimeAnswer::Counts { counts: Default::default() }
                        }
                        RuntimeCall::InboxCounts { .. } => RuntimeAnswer::Counts { counts: Default::default() },
                        RuntimeCall::Workspaces => RuntimeAnswer::Workspaces {
                            workspaces: vec![CatalogWorkspace { workspace_id: "w1".into(), label: "api".into() }],
                        },
                        RuntimeCall::JudgeTurnEnd { .. } => RuntimeAnswer::Verdict(JudgeAnswer {
                            verdict: Verdict::Continue,
                            source: "llm".into(),
                            reason: "it named its next step".into(),
                            priors: Vec::new(),
                        }),
                        _ => RuntimeAnswer::Subscribed,
                    };
                    self.c.handle(self.now, ContinuityInput::Answered { id, result: Ok(result) });
                }
                ContinuityOutput::Deliver { id, app, .. } => {
                    self.log.push(format!("deliver {} app={}", stem(&id), app.as_ref().map_or("-", |a| a.keyword.as_str())));
                    self.posted.push((id, app));
                }
                ContinuityOutput::Notice { say, .. } => self.log.push(format!("notice {}", crate::locales::en(&say))),
                ContinuityOutput::Activity(entry) => {
                    let json = entry.write_json();
                    let field = |name: &str| json[name].as_str().map_or("-".to_owned(), |s| stem(s).to_owned());
                    self.log.push(format!("activity {} {} {} {}", field("kind"), field("outcome"), field("reason"), field("id")));
                }
                ContinuityOutput::QueueRead { op } => {
                    let stored = Ok(self.queue.clone());
                    self.c.handle(self.now, ContinuityInput::QueueRead { op, stored });
                }
                ContinuityOutput::QueueWrite { op, record } => {
                    self.queue = Some(record);
                    self.c.handle(self.now, ContinuityInput::QueueWritten { op, result: Ok(()) });
                }
                _ => {}
            }
        }
    }

    /// The page shows a new human (unmarked) user turn `turn` carrying `apps`.
    fn human(&mut self, turn: &str, apps: Vec<AppMention>) {
        let mut page = self.c.page(TAB).cloned().unwrap_or_else(idle_page);
        page.user_turns += 1;
        page.last_user_turn_id = Some(turn.into());
        page.last_human_turn_id = Some(turn.into());
        page.human_apps = apps;
        self.feed(ContinuityInput::PageReported { tab: TAB, report: page });
    }

    /// The page reports again as it is (a repeated fact).
    fn report_again(&mut self) {
        let page = self.c.page(TAB).cloned().unwrap_or_else(idle_page);
        self.feed(ContinuityInput::PageReported { tab: TAB, report: page });
    }

    /// The workspace works, then settles (a wake follows).
    fn settle(&mut self, seq: u64) {
        self.feed(event(seq, PaneEventKind::Working));
        self.tasks.push(task(&format!("t{seq}")));
        self.feed(event(seq + 1, PaneEventKind::Settled(SettledStatus::Done)));
    }

    fn active(&self) -> Option<(String, Option<AppMention>)> {
        self.c.ledger().active().next().map(|d| (d.id.clone(), d.app.clone()))
    }

    /// The page answers the active delivery with `outcome`.
    fn answer(&mut self, outcome: DeliveryOutcome) {
        let (id, _) = self.active().expect("a delivery on its way");
        self.feed(ContinuityInput::DeliveryReport { tab: TAB, id, outcome });
    }

    /// The page sent the active delivery and shows it as a (marked) user turn.
    fn lands(&mut self) {
        let (id, _) = self.active().expect("a delivery on its way");
        self.feed(ContinuityInput::DeliveryReport { tab: TAB, id: id.clone(), outcome: DeliveryOutcome::Submitted });
        let mut page = self.c.page(TAB).cloned().unwrap_or_else(idle_page);
        page.user_turns += 1;
        page.last_user_turn_id = Some(format!("msg-{id}"));
        page.markers.push(id);
        self.feed(ContinuityInput::PageReported { tab: TAB, report: page });
    }

    fn withheld(&self) -> Option<WakeWithheld> {
        self.c.page_view(TAB).and_then(|v| v.withheld).map(|w| w.code)
    }

    fn app(&self) -> Option<String> {
        self.c.bindings().list().next().and_then(|b| b.app.as_ref()).map(|a| a.keyword.clone())
    }

    fn note(&mut self, what: &str) {
        let view = self.c.page_view(TAB).expect("a chat page has a view");
        let withheld = view.withheld.map_or("-".to_owned(), |w| w.code.wire_name().to_owned());
        let forget = view.actions.iter().any(|a| a.id == "forget_app");
        let app = view.app.map_or("-".to_owned(), |a| a.keyword);
        self.log.push(format!("{what}: app={app} ambiguous={} withheld={withheld} forget_button={forget}", view.app_ambiguous));
    }

    fn restart(&mut self) {
        let text = self.c.snapshot().to_json().expect("persist");
        self.c = Continuity::from_snapshot(Snapshot::parse(&text).expect("restore"), self.now, "r");
        self.log.push("-- worker restarted".into());
        self.feed(ContinuityInput::LinkUp);
        self.report_again();
    }
}

/// A delivery id's stem (`wake:w1#2`), without the ledger's unique tail.
fn stem(id: &str) -> &str {
    id.split('/').next().unwrap_or(id)
}

// Issue 24: the App is learned from the human's turn and rides on the settle wake; the HUD
// shows it and offers Forget App. It is persisted with the binding: after a worker restart
// the next wake carries it too.
#[test]
fn a_chat_learns_its_app_from_a_human_turn_and_every_wake_carries_it_across_restarts() {
    let mut w = W::new();
    w.note("bound, no pill yet");
    w.human("u-1", vec![herdr()]);
    w.note("human turn with @Herdr");
    w.settle(1);
    w.lands();
    w.restart();
    w.settle(3);
    w.lands();
    w.note("after two wakes");
    expect![[r#"
        bound, no pill yet: app=- ambiguous=false withheld=- forget_button=false
        human turn with @Herdr: app=herdr ambiguous=false withheld=- forget_button=true
        deliver wake:w1#2 app=herdr
        activity wake sent settled wake:w1#2
        activity wake confirmed marker_seen wake:w1#2
        inbox.ack ["t1"]
        -- worker restarted
        deliver wake:w1#4 app=herdr
        activity wake sent settled wake:w1#4
        activity wake confirmed marker_seen wake:w1#4
        inbox.ack ["t3"]
        after two wakes: app=herdr ambiguous=false withheld=- forget_button=true"#]]
    .assert_eq(&w.log.join("\n"));
}

// Our own marked turns never teach: the page's `last_human_turn_id` skips them, and a
// turn already read is not read again (not even after Forget App). A newer human turn
// without a pill keeps the App; a newer one with a pill teaches again.
#[test]
fn a_turn_is_read_once_our_own_turns_never_and_forget_app_holds_until_a_new_pill() {
    let mut w = W::new();
    w.human("u-1", vec![herdr()]);
    assert_eq!(w.app().as_deref(), Some("herdr"));
    // Our wake lands (a marked user turn): the newest human turn is still u-1, whatever
    // pills a later report of it names.
    w.settle(1);
    w.lands();
    let mut page = w.c.page(TAB).cloned().expect("page");
    page.human_apps = vec![github()];
    w.feed(ContinuityInput::PageReported { tab: TAB, report: page });
    assert_eq!(w.app().as_deref(), Some("herdr"), "the same human turn is not read again");
    w.human("u-2", Vec::new());
    assert_eq!(w.app().as_deref(), Some("herdr"), "a human turn without a pill keeps the App");
    w.feed(ContinuityInput::ForgetApp { tab: TAB });
    assert_eq!(w.app(), None);
    w.report_again();
    assert_eq!(w.app(), None, "a forgotten App is not learned again from the turn it came from");
    w.settle(3);
    assert_eq!(
        w.posted.last().map(|(id, app)| (stem(id).to_owned(), app.clone())),
        Some(("wake:w1#4".to_owned(), None)),
        "plain once forgotten"
    );
    w.lands();
    w.human("u-3", vec![github()]);
    assert_eq!(w.app().as_deref(), Some("github"));
    assert!(w.log.iter().any(|l| l.starts_with("notice This chat's App is forgotten")), "{:?}", w.log);
}

// Several Apps in the newest human turn: nothing is typed (`app_ambiguous` in the HUD and
// the timeline) until a newer human turn carries exactly one; a turn with none keeps the
// ambiguity; the same App twice is one App.
#[test]
fn several_apps_hold_every_message_until_a_human_turn_carries_exactly_one() {
    let mut w = W::new();
    w.human("u-1", vec![herdr(), herdr()]);
    w.note("the same pill twice");
    w.human("u-2", vec![herdr(), github()]);
    w.note("two Apps");
    w.settle(1);
    w.feed(ContinuityInput::QueueAdd { tab: TAB, text: "and the docs".into(), whole_chars: None });
    w.human("u-3", Vec::new());
    w.note("a turn without a pill");
    w.human("u-4", vec![github()]);
    w.note("one App again");
    w.lands();
    w.lands();
    let log: Vec<&String> = w.log.iter().filter(|l| !l.starts_with("notice")).collect();
    expect![[r#"
        the same pill twice: app=herdr ambiguous=false withheld=- forget_button=true
        two Apps: app=herdr ambiguous=true withheld=app_ambiguous forget_button=true
        activity wake withheld app_ambiguous wake:w1#2
        a turn without a pill: app=herdr ambiguous=true withheld=app_ambiguous forget_button=true
        deliver qb:0a6ee2cb169ccbe6 app=github
        activity queue_batch sent queued_turn qb:0a6ee2cb169ccbe6
        activity wake withheld unconfirmed_delivery wake:w1#2
        one App again: app=github ambiguous=false withheld=unconfirmed_delivery forget_button=true
        activity queue_batch confirmed marker_seen qb:0a6ee2cb169ccbe6
        deliver wake:w1#2 app=github
        activity wake sent settled wake:w1#2
        activity wake confirmed marker_seen wake:w1#2
        inbox.ack ["t1"]"#]]
    .assert_eq(&log.iter().map(|l| l.as_str()).collect::<Vec<_>>().join("\n"));
}

// A chat that never showed a pill keeps getting plain messages, exactly as before.
#[test]
fn a_chat_without_an_app_gets_plain_deliveries() {
    let mut w = W::new();
    w.human("u-1", Vec::new());
    w.settle(1);
    w.lands();
    w.feed(ContinuityInput::ToggleAuto { tab: TAB });
    w.feed(ContinuityInput::Continue { tab: TAB });
    w.lands();
    assert_eq!(
        w.posted.iter().map(|(id, app)| (stem(id), app.is_some())).collect::<Vec<_>>(),
        [("wake:w1#2", false), ("continue:w1", false)]
    );
    assert!(!w.withheld().is_some_and(|r| r.wire_name().starts_with("app_")), "nothing held for an App");
}

// Every kind the core starts carries the App: the settle wake, progress, the user's
// queued batch, semantic Auto's continue and the manual Continue.
#[test]
fn every_delivery_kind_carries_the_app() {
    let mut w = W::new();
    w.human("u-1", vec![herdr()]);
    // Progress: new output while the workspace works.
    w.feed(ContinuityInput::ProgressSettings { tick_sec: 30, fallback_sec: 600 });
    w.feed(event(1, PaneEventKind::Working));
    w.feed(ContinuityInput::AgentOutput {
        workspace_id: "w1".into(),
        pane_id: "w1:p1".into(),
        agent: Some("claude".into()),
        tail: "start".into(),
        seq: 0,
        stale: false,
    });
    w.feed(ContinuityInput::AgentOutput {
        workspace_id: "w1".into(),
        pane_id: "w1:p1".into(),
        agent: Some("claude".into()),
        tail: "start\nwrote the loader".into(),
        seq: 0,
        stale: false,
    });
    w.tick(31_000);
    w.lands();
    w.feed(event(2, PaneEventKind::Settled(SettledStatus::Done)));
    w.lands();
    w.feed(ContinuityInput::QueueAdd { tab: TAB, text: "now the docs".into(), whole_chars: None });
    w.lands();
    w.feed(ContinuityInput::TurnEnded {
        tab: TAB,
        user_text: "build it".into(),
        assistant_text: "The loader is in. Next I will write the route pool.".into(),
        user_marker: None,
        message_id: None,
        user_message_id: None,
        pressed: false,
        user_stopped: false,
    });
    w.lands();
    w.feed(ContinuityInput::ToggleAuto { tab: TAB });
    w.feed(ContinuityInput::Continue { tab: TAB });
    w.lands();
    let kinds: Vec<(String, Option<String>)> = w
        .posted
        .iter()
        .map(|(id, app)| (stem(id).split(':').next().unwrap_or_default().to_owned(), app.as_ref().map(|a| a.keyword.clone())))
        .collect();
    let herdr = Some("herdr".to_owned());
    assert_eq!(
        kinds,
        [
            ("progress".to_owned(), herdr.clone()),
            ("wake".into(), herdr.clone()),
            ("qb".into(), herdr.clone()),
            ("judge".into(), herdr.clone()),
            ("continue".into(), herdr)
        ]
    );
}

// The picker does not open: nothing App-less is typed. The wake is held (not a failed
// attempt), the HUD and the timeline name the reason, the core tries again after 30 s and
// then 60 s, and the wake goes exactly once when attaching works (its tasks acked once).
#[test]
fn a_wake_the_page_cannot_attach_the_app_to_is_held_named_retried_and_sent_once() {
    let mut w = W::new();
    w.human("u-1", vec![herdr()]);
    w.settle(1);
    w.answer(DeliveryOutcome::AppNotAttached { detail: AppAttachFailure::PickerNotOpened });
    w.note("picker broken");
    w.report_again();
    w.tick(APP_RETRY_FIRST_MS - 1);
    w.note("29.999 s later");
    w.tick(1);
    w.answer(DeliveryOutcome::AppNotAttached { detail: AppAttachFailure::NoPermission });
    w.note("no permission");
    w.tick(59_000);
    w.note("59 s later");
    w.tick(1_000);
    w.lands();
    w.note("attached");
    expect![[r#"
        deliver wake:w1#2 app=herdr
        activity wake sent settled wake:w1#2
        notice Herdr App could not be attached (picker did not open) · message held. It is retried by itself, at most every 5 minutes.
        activity wake failed app_picker_not_opened wake:w1#2
        activity wake withheld app_picker_not_opened wake:w1#2
        picker broken: app=herdr ambiguous=false withheld=app_picker_not_opened forget_button=true
        29.999 s later: app=herdr ambiguous=false withheld=app_picker_not_opened forget_button=true
        deliver wake:w1#2 app=herdr
        activity wake sent settled wake:w1#2
        notice Herdr App could not be attached (trusted typing is not allowed) · message held. Allow it on the options page; it is retried by itself.
        activity wake failed app_no_permission wake:w1#2
        activity wake withheld app_no_permission wake:w1#2
        no permission: app=herdr ambiguous=false withheld=app_no_permission forget_button=true
        59 s later: app=herdr ambiguous=false withheld=app_no_permission forget_button=true
        deliver wake:w1#2 app=herdr
        activity wake sent settled wake:w1#2
        activity wake confirmed marker_seen wake:w1#2
        inbox.ack ["t1"]
        attached: app=herdr ambiguous=false withheld=- forget_button=true"#]]
    .assert_eq(&w.log.join("\n"));
    assert!(w.posted.iter().all(|(_, app)| app.as_ref() == Some(&herdr())), "never App-less");
    assert_eq!(w.acked, ["t1"], "acked once");
    assert_eq!(w.c.page_view(TAB).map(|v| v.wake_count), Some(1));
}

// The backoff: 30 s, doubling, at most 5 min.
#[test]
fn the_app_retry_backoff_doubles_from_30_s_to_at_most_5_min() {
    let waits: Vec<u64> = (1..=7).map(app_retry_wait).collect();
    assert_eq!(waits, [30_000, 60_000, 120_000, 240_000, 300_000, 300_000, 300_000]);
    assert_eq!((APP_RETRY_FIRST_MS, APP_RETRY_MAX_MS), (30_000, 300_000));
    assert_eq!(app_retry_wait(u32::MAX), APP_RETRY_MAX_MS);
}

// A queue batch whose App cannot be attached stays queued (nothing lost), is held with the
// reason, and goes once, with its App, when attaching works.
#[test]
fn a_queue_batch_held_for_its_app_stays_queued_and_goes_once() {
    let mut w = W::new();
    w.human("u-1", vec![herdr()]);
    w.feed(ContinuityInput::QueueAdd { tab: TAB, text: "run the tests".into(), whole_chars: None });
    w.answer(DeliveryOutcome::AppNotAttached { detail: AppAttachFailure::OptionMissing });
    let book = ext_core::queue::QueueBook::read(w.queue.as_ref()).expect("queue record");
    assert_eq!(book.items("chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0").len(), 1, "still queued");
    assert_eq!(w.withheld(), Some(WakeWithheld::AppOptionMissing));
    w.report_again();
    assert_eq!(w.posted.len(), 1, "nothing typed while held");
    w.tick(APP_RETRY_FIRST_MS);
    w.lands();
    w.tick(1_000);
    let book = ext_core::queue::QueueBook::read(w.queue.as_ref()).expect("queue record");
    assert!(book.items("chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0").is_empty(), "sent once, removed");
    let stems: Vec<&str> = w.posted.iter().map(|(id, _)| stem(id)).collect();
    assert_eq!(stems.len(), 2);
    assert!(stems.iter().all(|s| s.starts_with("qb:")) && stems[0] == stems[1], "{stems:?}");
    assert!(w.posted.iter().all(|(_, app)| app.as_ref() == Some(&herdr())));
    assert!(w.log.iter().any(|l| l == &format!("activity queue_batch failed app_option_missing {}", stems[0])), "{:?}", w.log);
    assert_eq!(w.withheld(), None);
}

// A judge continue whose App cannot be attached is not dropped: it waits for the hold and
// goes once; a human turn meanwhile takes its place.
#[test]
fn a_judge_continue_held_for_its_app_goes_once_attaching_works() {
    let mut w = W::new();
    w.human("u-1", vec![herdr()]);
    let ended = ContinuityInput::TurnEnded {
        tab: TAB,
        user_text: "build it".into(),
        assistant_text: "The loader is in. Next I will write the route pool.".into(),
        user_marker: None,
        message_id: None,
        user_message_id: None,
        pressed: false,
        user_stopped: false,
    };
    w.feed(ended);
    w.answer(DeliveryOutcome::AppNotAttached { detail: AppAttachFailure::PillNotReadBack });
    assert_eq!(w.withheld(), Some(WakeWithheld::AppPillNotReadBack));
    w.report_again();
    w.tick(APP_RETRY_FIRST_MS);
    w.lands();
    let stems: Vec<&str> = w.posted.iter().map(|(id, _)| stem(id)).collect();
    assert_eq!(stems.len(), 2, "{:?}", w.log);
    assert!(stems.iter().all(|s| s.starts_with("judge:")) && stems[0] == stems[1], "{stems:?}");
    assert!(w.posted.iter().all(|(_, app)| app.as_ref() == Some(&herdr())));
    w.tick(APP_RETRY_MAX_MS);
    assert_eq!(w.posted.len(), 2, "sent once");
}

// "Forget App" while a judge continue is held for its App: the continue goes at once, plain
// (the hold it waited for is gone, and only a due hold retried it), and only once.
#[test]
fn forget_app_sends_a_judge_continue_held_for_the_app_plain_at_once() {
    let mut w = W::new();
    w.human("u-1", vec![herdr()]);
    w.feed(ContinuityInput::TurnEnded {
        tab: TAB,
        user_text: "build it".into(),
        assistant_text: "The loader is in. Next I will write the route pool.".into(),
        user_marker: None,
        message_id: None,
        user_message_id: None,
        pressed: false,
        user_stopped: false,
    });
    w.answer(DeliveryOutcome::AppNotAttached { detail: AppAttachFailure::PickerNotOpened });
    w.report_again();
    assert_eq!(w.posted.len(), 1, "{:?}", w.log);
    w.feed(ContinuityInput::ForgetApp { tab: TAB });
    assert_eq!(w.posted.len(), 2, "the held continue goes when the App is forgotten: {:?}", w.log);
    assert_eq!(stem(&w.posted[1].0), stem(&w.posted[0].0));
    assert!(stem(&w.posted[1].0).starts_with("judge:"), "{:?}", w.posted);
    assert_eq!(w.posted[1].1, None, "plain once forgotten");
    w.lands();
    w.tick(APP_RETRY_MAX_MS);
    assert_eq!(w.posted.len(), 2, "sent once: {:?}", w.log);
}

// A continue held for its App is given up, not stuck, when the user speaks (their turn
// takes its place) or the worker restarts (the hold is not persisted): the next reply is
// judged again.
#[test]
fn a_held_judge_continue_never_blocks_the_judge_after_a_human_turn_or_a_restart() {
    let judged = |w: &W| w.log.iter().filter(|l| l.starts_with("activity judge_continue sent")).count();
    let ended = |reply: &str, marker: Option<&str>| ContinuityInput::TurnEnded {
        tab: TAB,
        user_text: "build it".into(),
        assistant_text: format!("{reply} is in. Next I will write the route pool."),
        user_marker: marker.map(str::to_owned),
        message_id: None,
        user_message_id: None,
        pressed: false,
        user_stopped: false,
    };
    for restart in [false, true] {
        let mut w = W::new();
        w.human("u-1", vec![herdr()]);
        w.feed(ended("The loader", None));
        w.answer(DeliveryOutcome::AppNotAttached { detail: AppAttachFailure::PickerNotOpened });
        if restart {
            w.restart();
            w.feed(ended("The pool", Some("judge:x/e.0.0")));
        } else {
            w.feed(ended("The pool", None));
        }
        w.tick(APP_RETRY_FIRST_MS);
        assert_eq!(judged(&w), 2, "restart={restart}: the next reply was judged and continued: {:?}", w.log);
        assert!(w.posted.iter().all(|(_, app)| app.as_ref() == Some(&herdr())));
    }
}

// The manual Continue is refused while the App holds messages, saying why (not a layout
// problem).
#[test]
fn a_manual_continue_is_refused_with_the_app_reason_while_the_app_holds() {
    let mut w = W::new();
    w.feed(ContinuityInput::ToggleAuto { tab: TAB });
    w.human("u-1", vec![herdr(), github()]);
    w.log.clear();
    w.feed(ContinuityInput::Continue { tab: TAB });
    assert!(w.posted.is_empty());
    expect![[r#"
        notice Held: your last message carried several Apps, so it is not known which one to attach. Send a message with only the Herdr App pill (type @herdr and pick it), or press Forget App to send plain messages."#]]
    .assert_eq(&w.log.join("\n"));
}

// A manual Continue the page did not send — its own last look found a draft the worker's
// facts did not show yet, a reply had started, or Send was missing — is dropped, never
// retried, and the HUD says why and to press again (before, it was dropped silently: the
// press did nothing and said nothing).
#[test]
fn a_manual_continue_the_page_did_not_send_says_why_and_is_not_retried() {
    let mut w = W::new();
    w.feed(ContinuityInput::ToggleAuto { tab: TAB });
    w.log.clear();
    for reason in ["human_draft", "busy", "send_button_missing"] {
        w.feed(ContinuityInput::Continue { tab: TAB });
        w.answer(DeliveryOutcome::NotSubmitted { reason: reason.into() });
        w.report_again();
    }
    w.tick(10 * 60_000);
    expect![[r#"
        deliver continue:w1 app=-
        notice Not sent: the composer has your unsent text. Send or clear it, then press Continue again.
        deliver continue:w1 app=-
        notice Not sent: a reply is still being written or a permission card is waiting. Press Continue again when the page is idle.
        deliver continue:w1 app=-
        notice Not sent: the page did not take this Continue (it could not be typed or sent, or the page reloaded). Nothing follows by itself: press Continue again."#]]
    .assert_eq(&w.log.join("\n"));
    assert_eq!(w.posted.len(), 3, "one message per press, none retried");
}

// X6 with an App: the seed carries the source binding's App; a seed whose App cannot be
// attached is not a spent attempt (no Copy Prompt), it waits and goes with the App; after
// the cut-over the chat keeps the App.
#[test]
fn the_handoff_seed_carries_the_source_app_and_waits_for_it() {
    let mut w = HandoffWorld::new(false);
    let mut page = handoff::page(&handoff::chat_url(handoff::OLD), "src-1");
    page.user_turns = 1;
    page.last_user_turn_id = Some("u-1".into());
    page.last_human_turn_id = Some("u-1".into());
    page.human_apps = vec![herdr()];
    w.feed(ContinuityInput::PageReported { tab: handoff::SOURCE, report: page });
    w.feed(ContinuityInput::Handoff { tab: handoff::SOURCE });
    w.open_target();
    let seed_app = |w: &HandoffWorld| w.c.ledger().active().find(|d| d.id.starts_with("handoff:")).and_then(|d| d.app.clone());
    assert_eq!(seed_app(&w), Some(herdr()), "the seed carries the source's App");
    for failures in 1..=3 {
        let (tab, id, _) = w.seeds.last().cloned().expect("a seed");
        w.feed(ContinuityInput::DeliveryReport {
            tab,
            id,
            outcome: DeliveryOutcome::AppNotAttached { detail: AppAttachFailure::PickerNotOpened },
        });
        assert_eq!(w.c.page_view(handoff::SOURCE).and_then(|v| v.withheld).map(|x| x.code), Some(WakeWithheld::AppPickerNotOpened));
        w.feed(ContinuityInput::PageReported { tab: handoff::TARGET, report: handoff::page(&handoff::home_url(), "tgt-1") });
        assert_eq!(w.seeds.len(), usize::try_from(failures).unwrap_or(0), "nothing typed while held");
        w.tick(app_retry_wait(failures));
    }
    assert_eq!(w.seeds.len(), 4, "tried again after each wait, never given up to Copy Prompt: {:?}", w.log);
    assert_eq!(seed_app(&w), Some(herdr()));
    w.seed_submitted();
    w.seed_seen();
    assert_eq!(w.target().as_deref(), Some(handoff::NEW), "cut over");
    assert_eq!(w.c.bindings().list().next().and_then(|b| b.app.clone()), Some(herdr()), "the chat keeps its App");
}

// A conversation scope's cut-over moves its binding to the new conversation: the App goes
// with it (the seed carried it; its later wakes must too).
#[test]
fn a_conversation_cut_over_moves_the_app_with_the_binding() {
    let mut b = ext_core::binding::Bindings::new();
    let old = ext_core::scope::Scope::Conversation { site: ext_core::scope::Site::Zai, conversation_id: "c-old".into() };
    let page = ext_core::scope::PageKind::Chat { site: ext_core::scope::Site::Zai, conversation_id: "c-old".into() };
    b.handle(
        0,
        ext_core::binding::BindingInput::Bind {
            tab: 1,
            page,
            workspace: CatalogWorkspace { workspace_id: "w1".into(), label: "api".into() },
            target_held: false,
        },
    );
    assert!(b.learn_app(&old.key(), "u-1", &[herdr()]));
    b.handle(1, ext_core::binding::BindingInput::CutOver { scope: old, conversation_id: "c-new".into() });
    let moved = b.list().next().expect("the moved binding");
    assert_eq!((moved.active_conv_key.as_deref(), moved.app.clone()), (Some("c-new"), Some(herdr())));
}

// The snapshot keeps the App with the binding and reads a binding of an older release
// (without the App fields) as one without an App.
#[test]
fn the_app_is_persisted_with_the_binding_and_an_older_binding_has_none() {
    let mut w = W::new();
    w.human("u-1", vec![herdr()]);
    let text = w.c.snapshot().to_json().expect("persist");
    let back = Continuity::from_snapshot(Snapshot::parse(&text).expect("restore"), 1, "r");
    let binding = back.bindings().list().next().expect("binding");
    assert_eq!((binding.app.clone(), binding.app_turn.as_deref(), binding.app_ambiguous), (Some(herdr()), Some("u-1"), false));
    let mut value: serde_json::Value = serde_json::from_str(&text).expect("json");
    let bindings = value["bindings"]["bindings"].as_object_mut().expect("bindings by key");
    for binding in bindings.values_mut() {
        let fields = binding.as_object_mut().expect("binding");
        fields.remove("app");
        fields.remove("app_ambiguous");
        fields.remove("app_turn");
    }
    let older = Continuity::from_snapshot(Snapshot::parse(&value.to_string()).expect("an older binding reads"), 1, "r");
    assert_eq!(older.bindings().list().next().map(|b| (b.app.clone(), b.app_ambiguous)), Some((None, false)));
}

// ---- The property: whatever happens, with an App learned no `deliver` leaves without it
// (and none while the App is ambiguous), nothing is typed twice once it landed, and once
// attaching works again everything held goes: every settle's task reaches the chat and is
// acknowledged (by its wake, or an inbox wake after a delivery given up without evidence)
// and every queued item is sent (a batch given up on is sent again by the user's retry, Q8).

#[derive(Debug, Clone)]
enum Op {
    /// A human turn with 0, 1 (herdr), 1 (github) or 2 pills.
    Human(u8),
    Settle,
    Queue,
    /// The page answers the active delivery: 0 lands, 1 not submitted, 2..=5 App failures.
    Answer(u8),
    Tick(u64),
    Forget,
    Restart,
    /// A reload: the composer goes and comes back.
    Reload,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..4).prop_map(Op::Human),
        Just(Op::Settle),
        Just(Op::Queue),
        (0u8..6).prop_map(Op::Answer),
        prop_oneof![Just(1_000u64), Just(30_000), Just(61_000), Just(300_000)].prop_map(Op::Tick),
        Just(Op::Forget),
        Just(Op::Restart),
        Just(Op::Reload),
    ]
}

/// The spec's App of the binding, kept by the test from the facts it fed.
#[derive(Debug, Default, Clone, PartialEq)]
struct Model {
    app: Option<AppMention>,
    ambiguous: bool,
}

struct Run {
    w: W,
    model: Model,
    turns: u32,
    settles: u64,
    queued: Vec<String>,
    /// Delivery stems that landed, with how often.
    landed: BTreeMap<String, u32>,
}

impl Run {
    fn check_posts(&mut self, from: usize) -> Result<(), TestCaseError> {
        for (id, app) in self.w.posted.iter().skip(from) {
            prop_assert!(!self.model.ambiguous, "{} typed while the App is ambiguous", id);
            prop_assert_eq!(app, &self.model.app, "{} carries {:?}, the binding's App is {:?}", id, app, self.model.app);
            prop_assert!(
                !self.landed.contains_key(stem(id)) || !(id.starts_with("wake:") || id.starts_with("qb:")),
                "{} typed again after it landed",
                id
            );
        }
        Ok(())
    }

    fn step(&mut self, op: &Op) -> Result<(), TestCaseError> {
        let before = self.w.posted.len();
        match op {
            Op::Human(pills) => {
                self.turns += 1;
                let apps = match pills {
                    0 => Vec::new(),
                    1 => vec![herdr()],
                    2 => vec![github()],
                    _ => vec![herdr(), github()],
                };
                match apps.len() {
                    0 => {}
                    1 => self.model = Model { app: apps.first().cloned(), ambiguous: false },
                    _ => self.model.ambiguous = true,
                }
                let turn = format!("u-{}", self.turns);
                self.w.human(&turn, apps);
            }
            Op::Settle => {
                self.settles += 2;
                self.w.settle(self.settles);
            }
            Op::Queue => {
                let text = format!("item {}", self.queued.len());
                self.queued.push(text.clone());
                self.w.feed(ContinuityInput::QueueAdd { tab: TAB, text, whole_chars: None });
            }
            Op::Answer(how) => {
                if let Some((id, _)) = self.w.active() {
                    match how {
                        0 => {
                            *self.landed.entry(stem(&id).to_owned()).or_default() += 1;
                            self.w.lands();
                        }
                        1 => self.w.answer(DeliveryOutcome::NotSubmitted { reason: "send_button_missing".into() }),
                        n => {
                            let detail = [
                                AppAttachFailure::NoPermission,
                                AppAttachFailure::PickerNotOpened,
                                AppAttachFailure::OptionMissing,
                                AppAttachFailure::PillNotReadBack,
                            ][usize::from(n - 2)];
                            self.w.answer(DeliveryOutcome::AppNotAttached { detail });
                        }
                    }
                }
            }
            Op::Tick(ms) => self.w.tick(*ms),
            Op::Forget => {
                self.w.feed(ContinuityInput::ForgetApp { tab: TAB });
                self.model = Model::default();
            }
            Op::Restart => self.w.restart(),
            Op::Reload => {
                let mut page = self.w.c.page(TAB).cloned().unwrap_or_else(idle_page);
                page.composer = false;
                self.w.feed(ContinuityInput::PageReported { tab: TAB, report: page.clone() });
                page.composer = true;
                self.w.feed(ContinuityInput::PageReported { tab: TAB, report: page });
            }
        }
        self.check_posts(before)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]
    #[test]
    fn no_deliver_leaves_without_the_learned_app_and_nothing_held_is_lost_or_typed_twice(ops in proptest::collection::vec(op(), 1..40)) {
        let mut run = Run { w: W::new(), model: Model::default(), turns: 0, settles: 0, queued: Vec::new(), landed: BTreeMap::new() };
        for op in &ops {
            run.step(op)?;
        }
        // Attaching works again and the App is unambiguous: a human turn with one pill, a
        // reload (a fresh send budget), and the page takes whatever comes.
        run.step(&Op::Human(1))?;
        run.step(&Op::Reload)?;
        for _ in 0..40 {
            if run.w.active().is_some() {
                run.step(&Op::Answer(0))?;
            } else {
                run.step(&Op::Tick(300_000))?;
                run.step(&Op::Reload)?;
                // Q8: the user retries a batch given up on (an empty Queue press).
                run.w.feed(ContinuityInput::QueueAdd { tab: TAB, text: String::new(), whole_chars: None });
            }
        }
        prop_assert!(run.w.active().is_none(), "still on its way: {:?}", run.w.active());
        prop_assert!(run.landed.values().all(|n| *n == 1), "typed twice: {:?}", run.landed);
        let tasks: Vec<String> = (0..run.settles / 2).map(|n| format!("t{}", 2 * n + 2)).collect();
        let mut acked = run.w.acked.clone();
        acked.sort();
        acked.dedup();
        prop_assert_eq!(acked.len(), tasks.len(), "every settle's task reaches the chat: acked {:?}\n{}", run.w.acked, run.w.log.join("\n"));
        let book = ext_core::queue::QueueBook::read(run.w.queue.as_ref()).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        prop_assert!(book.items(SCOPE).is_empty(), "queued items left: {:?}", book.items(SCOPE));
        prop_assert!(run.queued.is_empty() || run.landed.keys().any(|k| k.starts_with("qb:")), "the queue never went");
    }
}
