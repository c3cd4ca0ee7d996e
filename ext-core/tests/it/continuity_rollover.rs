//! Automatic rollover through the composed machine (SPEC R2, with X1–X8 and B8 of the
//! transfer it starts): the page's pressure at the `auto` level only *allows* it; the HUD
//! names the condition that holds it back; when every condition holds, the HUD's Handoff
//! transfer starts by itself, once per conversation, never from a stale source tab. The
//! transcripts reuse the Handoff's simulated runtime and pages (`continuity_handoff`).

use expect_test::expect;
use ext_core::context_pressure::VisibleThread;
use ext_core::continuity::{ContinuityInput, PageRecoveryReport, PageReport, ProbeAnswer, ProbeNode, RECOVERY_TICK_MS};
use ext_core::recovery::RELOAD_COOLDOWN_MS;
use ext_core::settle_tracker::{PaneEventKind, SettledStatus, StreamEvent};
use ext_core::stale_view::ServerRole;
use proptest::prelude::*;

use super::continuity_handoff::{chat_url, page, Journal, World, NEW, OLD, SOURCE};

/// A thread at the `auto` level: 200 000 Latin characters ≈ 50 000 tokens, plus the
/// 32 000-token reserve = 82 000 (auto ≥ 80 000, high risk ≥ 92 000).
const FULL: VisibleThread = VisibleThread { turns: 10, latin_chars: 200_000, cjk_chars: 0, highest_turn: Some(9) };
/// A thread at the `recommend` level (≈ 72 000 tokens with the reserve).
const RECOMMEND: VisibleThread = VisibleThread { turns: 10, latin_chars: 160_000, cjk_chars: 0, highest_turn: Some(9) };

fn source(edit: impl FnOnce(&mut PageReport)) -> PageReport {
    let mut report = page(&chat_url(OLD), "src-1");
    edit(&mut report);
    report
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

impl World {
    /// The source page reports, then its visible thread.
    fn source_reports(&mut self, report: PageReport, thread: VisibleThread) {
        self.feed(ContinuityInput::PageReported { tab: SOURCE, report });
        self.feed(ContinuityInput::ThreadFacts { tab: SOURCE, thread });
    }

    fn rollover(&mut self, what: &str) {
        let word = self.c.page_view(SOURCE).and_then(|v| v.rollover).unwrap_or("-");
        self.log.push(format!("{what}: rollover={word}"));
    }
}

// R2: each condition holds the rollover back and the HUD names it — the pressure below
// `auto`, a reply streaming, a permission card, the user's draft, a turn not yet in the
// journal — and once the last one clears, the transfer of the HUD's Handoff starts by
// itself, once: the chain confirmed live, the package, the new chat, the seed, the
// cut-over. The source (now retired) reporting again, even after a restart, starts nothing.
#[test]
fn a_project_conversation_rolls_over_once_when_every_condition_holds_r2() {
    let mut w = World::new(true);
    w.source_reports(source(|_| {}), RECOMMEND);
    w.rollover("recommend level");
    w.source_reports(source(|r| r.generating = true), FULL);
    w.rollover("auto level, reply streaming");
    w.source_reports(source(|r| r.permission_card = true), FULL);
    w.rollover("permission card");
    w.source_reports(source(|r| r.draft = true), FULL);
    w.rollover("user typing");
    // The reply ended while the journal is down: its turns wait in the outbox.
    w.journal = Journal::Down;
    w.feed(ContinuityInput::TurnEnded {
        tab: SOURCE,
        user_text: "go on".into(),
        assistant_text: "done".into(),
        user_marker: None,
        message_id: Some("a-9".into()),
        user_message_id: Some("u-9".into()),
        pressed: false,
        user_stopped: false,
    });
    w.source_reports(source(|_| {}), FULL);
    w.rollover("journal down");
    assert!(w.opened.is_empty(), "nothing started while a condition held");
    w.journal = Journal::Up;
    w.tick(30_000);
    w.rollover("journal written");
    w.complete_transfer();
    w.note("after the cut-over");
    w.source_reports(source(|_| {}), FULL);
    w.rollover("source again");
    w.restart();
    w.source_reports(source(|_| {}), FULL);
    w.rollover("source after a restart");
    expect![[r#"
        recommend level: rollover=-
        auto level, reply streaming: rollover=busy
        permission card: rollover=permission_card
        user typing: rollover=human_draft
        continuity.append user u-9
        journal down: rollover=journal_behind
        continuity.append user u-9
        continuity.append assistant a-9
        activity handoff sent rollover_started -
        activity handoff sent handoff_started -
        continuity.resolve 6a1b2c3d-0000-4000-8000-00000000000a
        browser_handoff.prepare hc-1 https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef-my-app/c/6a1b2c3d-0000-4000-8000-00000000000a workspace=w1 ref=chatgpt:project:g-p-0123456789abcdef0123456789abcdef queue=[]
        open_tab https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef/project?herdr_handoff=ho-1
        journal written: rollover=started
        activity handoff sent new_chat_opened -
        seed (after the snapshot write) tab=9 id=handoff:ho-1/e.0.0
        activity handoff sent seed_sent handoff:ho-1/e.0.0
        activity handoff confirmed marker_seen handoff:ho-1/e.0.0
        activity handoff confirmed cut_over handoff:ho-1/e.0.0
        notice tab=7 handoffDone ["6a1b2c3d-0000-4000-8000-0000000000ee"]
        notice tab=9 handoffDone ["6a1b2c3d-0000-4000-8000-0000000000ee"]
        after the cut-over: target=6a1b2c3d-0000-4000-8000-0000000000ee hud handoffLine_done ["6a1b2c3d-0000-4000-8000-0000000000ee"] button=none copy=none
        source again: rollover=started
        -- worker restarted
        source after a restart: rollover=started"#]]
    .assert_eq(&w.log.join("\n"));
    assert_eq!(w.opened.len(), 1, "one new chat");
    assert_eq!(w.target().as_deref(), Some(NEW));
}

// S7, H6 (issue 26 Found 1: spent recovery budgets were a HUD word that started nothing;
// failed before: no handoff). A Project conversation whose send keeps timing out with the
// server still at the user gets ChatGPT's Retry once; when the card comes back the
// incident's budgets are spent, and with Auto on and every R2 condition holding (no
// pressure reading needed) the controlled handoff starts by itself, once.
#[test]
fn spent_recovery_budgets_start_the_controlled_handoff_in_a_project_s7() {
    let mut w = World::new(true);
    w.probe = Some(ProbeAnswer::Node(ProbeNode {
        id: "u-9".into(),
        role: ServerRole::User,
        text_len: 20,
        finished: true,
        update_time_ms: Some(0),
    }));
    let card = PageRecoveryReport {
        page_load: "src-1".into(),
        assistant: true,
        assistant_id: Some("a-8".into()),
        assistant_len: 300,
        signature: "300:x".into(),
        user_waiting: true,
        send_timeout: true,
        retry_offered: true,
        ..PageRecoveryReport::default()
    };
    w.feed(ContinuityInput::PageReported { tab: SOURCE, report: source(|_| {}) });
    w.feed(ContinuityInput::RecoveryFacts { tab: SOURCE, facts: card.clone() });
    w.rollover("send timeout, Retry pressed");
    assert!(w.opened.is_empty());
    // The card stays: the Retry did not help; the next probe finds the budget spent.
    w.tick(RELOAD_COOLDOWN_MS + 3 * RECOVERY_TICK_MS);
    w.rollover("the card is back");
    let recovery = w.c.page_view(SOURCE).and_then(|v| v.recovery).map(|r| (r.state, r.reason));
    assert_eq!(recovery, Some(("rollover", "budgets_spent")));
    assert_eq!(w.opened.len(), 1, "the handoff started: {}", w.log.join("\n"));
    expect![[r#"
        recovery Probe { conversation_id: "6a1b2c3d-0000-4000-8000-00000000000a" }
        recovery ClickRetry
        send timeout, Retry pressed: rollover=-
        recovery Probe { conversation_id: "6a1b2c3d-0000-4000-8000-00000000000a" }
        activity handoff sent recovery_spent -
        activity handoff sent handoff_started -
        continuity.resolve 6a1b2c3d-0000-4000-8000-00000000000a
        browser_handoff.prepare hc-1 https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef-my-app/c/6a1b2c3d-0000-4000-8000-00000000000a workspace=w1 ref=chatgpt:project:g-p-0123456789abcdef0123456789abcdef queue=[]
        open_tab https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef/project?herdr_handoff=ho-1
        the card is back: rollover=started"#]].assert_eq(&w.log.join("\n"));
}

// R2: Project Auto off, then the bound workspace working, hold it back; the workspace
// settling lets it start.
#[test]
fn auto_off_and_a_working_workspace_hold_it_back_r2() {
    let mut w = World::new(false);
    w.source_reports(source(|_| {}), FULL);
    w.rollover("auto off");
    w.feed(event(1, PaneEventKind::Working));
    w.feed(ContinuityInput::ToggleAuto { tab: SOURCE });
    w.rollover("workspace working");
    assert!(w.opened.is_empty());
    w.feed(event(2, PaneEventKind::Settled(SettledStatus::Done)));
    w.rollover("workspace settled");
    assert_eq!(w.opened.len(), 1, "{}", w.log.join("\n"));
    assert!(w.log.iter().any(|l| l == "activity handoff sent rollover_started -"), "{}", w.log.join("\n"));
    assert_eq!(w.log.first().map(String::as_str), Some("auto off: rollover=auto_off"));
    assert!(w.log.iter().any(|l| l == "workspace working: rollover=workspace_working"), "{}", w.log.join("\n"));
}

// R2, B3: a conversation outside a Project is never rolled over (the HUD says why), and a
// Project tab that is not the Project's active target (the user moved on in another tab)
// starts nothing.
#[test]
fn outside_a_project_or_from_a_stale_tab_nothing_starts_r2() {
    let mut w = World::new(true);
    // Another tab of the Project becomes the active target (B3: the last visited).
    w.feed(ContinuityInput::PageReported { tab: 8, report: page(&chat_url("6a1b2c3d-0000-4000-8000-0000000000bb"), "o-1") });
    w.feed(ContinuityInput::ThreadFacts { tab: SOURCE, thread: FULL });
    w.rollover("a stale tab");
    let plain = "https://chatgpt.com/c/6a1b2c3d-0000-4000-8000-0000000000cc";
    w.feed(ContinuityInput::PageReported { tab: 12, report: page(plain, "p-1") });
    w.feed(ContinuityInput::ThreadFacts { tab: 12, thread: FULL });
    let word = w.c.page_view(12).and_then(|v| v.rollover).unwrap_or("-");
    w.log.push(format!("a chat outside a Project: rollover={word}"));
    expect![[r#"
        a stale tab: rollover=not_active_target
        a chat outside a Project: rollover=not_project"#]]
    .assert_eq(&w.log.join("\n"));
    assert!(w.opened.is_empty());
}

#[derive(Debug, Clone)]
enum Op {
    Report { generating: bool, card: bool, draft: bool },
    Thread(bool),
    ToggleAuto,
    Working,
    Settled,
    JournalDown(bool),
    TurnEnded,
    Tick(u32),
    Restart,
    OtherTabVisits,
    SourceVisits,
    Transfer,
    QueueAdd,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(generating, card, draft)| Op::Report { generating, card, draft }),
        3 => any::<bool>().prop_map(Op::Thread),
        1 => Just(Op::ToggleAuto),
        1 => Just(Op::Working),
        1 => Just(Op::Settled),
        1 => any::<bool>().prop_map(Op::JournalDown),
        2 => Just(Op::TurnEnded),
        2 => (1u32..60_000).prop_map(Op::Tick),
        1 => Just(Op::Restart),
        1 => Just(Op::OtherTabVisits),
        1 => Just(Op::SourceVisits),
        2 => Just(Op::Transfer),
        1 => Just(Op::QueueAdd),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// R2: whatever the order of page facts, Auto, workspace events, journal failures,
    /// restarts and transfer steps — a rollover starts only in a moment when the source's
    /// pressure is at the `auto` level, Project Auto is on, the workspace does not work, the
    /// page neither streams nor shows a permission card nor holds a draft, no message of ours
    /// to it is on its way, none of its turns waits for the journal, and it is the Project's
    /// active target; and the conversation
    /// starts at most one, across restarts.
    #[test]
    fn a_rollover_starts_only_when_every_condition_holds_and_once(ops in prop::collection::vec(op(), 1..50)) {
        let mut w = World::new(false);
        let mut auto = false;
        let mut working = false;
        let mut full = false;
        let mut seq = 0u64;
        let mut turn = 0u32;
        let mut started = 0usize;
        for op in ops {
            let log_from = w.log.len();
            match op {
                Op::Report { generating, card, draft } => {
                    w.feed(ContinuityInput::PageReported { tab: SOURCE, report: source(|r| { r.generating = generating; r.permission_card = card; r.draft = draft; }) });
                }
                Op::Thread(at_auto) => {
                    full = at_auto;
                    w.feed(ContinuityInput::ThreadFacts { tab: SOURCE, thread: if at_auto { FULL } else { RECOMMEND } });
                }
                Op::ToggleAuto => {
                    // The HUD's toggle acts on the page the tab reported (none yet after a
                    // restart: nothing to toggle).
                    auto ^= w.c.page(SOURCE).is_some();
                    w.feed(ContinuityInput::ToggleAuto { tab: SOURCE });
                }
                Op::Working => {
                    seq += 1;
                    working = true;
                    w.feed(event(seq, PaneEventKind::Working));
                }
                Op::Settled => {
                    seq += 1;
                    working = false;
                    w.feed(event(seq, PaneEventKind::Settled(SettledStatus::Idle)));
                }
                Op::JournalDown(down) => w.journal = if down { Journal::Down } else { Journal::Up },
                Op::TurnEnded => {
                    turn += 1;
                    w.feed(ContinuityInput::TurnEnded { tab: SOURCE, user_text: format!("u{turn}"), assistant_text: format!("a{turn}"), user_marker: None, message_id: Some(format!("a-{turn}")), user_message_id: Some(format!("u-{turn}")), pressed: false, user_stopped: false });
                }
                Op::Tick(ms) => w.tick(u64::from(ms)),
                Op::Restart => w.restart(),
                Op::OtherTabVisits => w.feed(ContinuityInput::PageReported { tab: 8, report: page(&chat_url("6a1b2c3d-0000-4000-8000-0000000000bb"), "o-1") }),
                Op::SourceVisits => w.feed(ContinuityInput::PageReported { tab: SOURCE, report: source(|_| {}) }),
                Op::QueueAdd => {
                    turn += 1;
                    w.feed(ContinuityInput::QueueAdd { tab: SOURCE, text: format!("queued {turn}"), whole_chars: None });
                }
                Op::Transfer => {
                    if !w.opened.is_empty() {
                        w.open_target();
                        if !w.seeds.is_empty() {
                            w.seed_submitted();
                            w.seed_seen();
                        }
                    }
                }
            }
            let now_started = w.log[log_from..].iter().filter(|l| l.as_str() == "activity handoff sent rollover_started -").count();
            if now_started > 0 {
                started += now_started;
                let report = w.c.page(SOURCE).cloned().unwrap_or_default();
                let snapshot: serde_json::Value = serde_json::from_str(&w.c.snapshot().to_json().expect("persist")).expect("json");
                let behind = snapshot["journal"]["outbox"].as_array().is_some_and(|o| o.iter().any(|e| e["conversation_id"] == OLD));
                prop_assert!(full, "below the auto level");
                prop_assert!(auto, "Project Auto off");
                prop_assert!(!working, "the workspace works");
                prop_assert!(!report.generating && !report.permission_card && !report.draft, "the page is busy: {:?}", report);
                prop_assert!(!behind, "turns wait for the journal");
                // While its transfer runs, nothing of ours goes to the source (none was on
                // its way at the start, and its wakes pause, X2); a transfer that failed at
                // once gives the source back its wakes.
                let in_flight = w.c.handoff_book().transfers.values().any(|t| t.machine.in_flight());
                let ours = w.c.ledger().active().filter(|d| !d.id.starts_with("handoff:")).count();
                prop_assert!(!in_flight || ours == 0, "a delivery to the source during its transfer");
                let target = w.target();
                prop_assert_eq!(target.as_deref(), Some(OLD), "not the active target");
            }
            prop_assert!(started <= 1, "a conversation started {} rollovers", started);
        }
    }
}

// X2 with R2: a rollover that starts in the moment the workspace settles (the wake still
// waits for its inbox read) pauses the source's wakes at once: the wake is not typed into the
// source during the transfer; it goes to the new conversation after the cut-over.
#[test]
fn a_settle_at_the_rollover_wakes_the_new_conversation_not_the_source_x2_r2() {
    let mut w = World::new(false);
    w.feed(event(1, PaneEventKind::Working));
    w.feed(ContinuityInput::ThreadFacts { tab: SOURCE, thread: FULL });
    w.feed(ContinuityInput::ToggleAuto { tab: SOURCE });
    w.log.push("-- the workspace settles".into());
    w.feed(event(2, PaneEventKind::Settled(SettledStatus::Idle)));
    w.complete_transfer();
    let delivered: Vec<String> =
        w.delivered.iter().map(|(tab, id, _)| format!("tab={tab} {}", id.split('/').next().unwrap_or_default())).collect();
    w.log.push(format!("delivered {delivered:?}"));
    expect![[r#"
        -- the workspace settles
        activity handoff sent rollover_started -
        activity handoff sent handoff_started -
        continuity.resolve 6a1b2c3d-0000-4000-8000-00000000000a
        browser_handoff.prepare hc-1 https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef-my-app/c/6a1b2c3d-0000-4000-8000-00000000000a workspace=w1 ref=chatgpt:project:g-p-0123456789abcdef0123456789abcdef queue=[]
        open_tab https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef/project?herdr_handoff=ho-1
        activity handoff sent new_chat_opened -
        seed (after the snapshot write) tab=9 id=handoff:ho-1/e.0.0
        activity handoff sent seed_sent handoff:ho-1/e.0.0
        activity handoff confirmed marker_seen handoff:ho-1/e.0.0
        activity handoff confirmed cut_over handoff:ho-1/e.0.0
        notice tab=7 handoffDone ["6a1b2c3d-0000-4000-8000-0000000000ee"]
        notice tab=9 handoffDone ["6a1b2c3d-0000-4000-8000-0000000000ee"]
        deliver tab=9 id=wake:w1#2/e.0.1 "[Herdr] Workspace w1 settled (idle). This is a scheduling signal, not evidence that the work succeeded. Re-read the live Herdr and Git state, inspect the agents' output, the diff and the tests, then decide: continue, rework, merge or stop. To give an agent work for this chat, call herdr_prompt with browser_session_ref set to the ref= value on this message's last line.\n[herdr-continuity wake:w1#2/e.0.1 ref=chatgpt:project:g-p-0123456789abcdef0123456789abcdef]"
        delivered ["tab=9 wake:w1#2"]"#]]
    .assert_eq(&w.log.join("\n"));
}
