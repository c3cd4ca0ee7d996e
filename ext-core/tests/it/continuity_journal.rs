//! The Continuity Journal's writer and the context pressure through the composed machine
//! (SPEC C1, C3, R1): an ended turn of a bound chat → the persisted outbox →
//! `continuity.append`, one at a time, until the runtime answers; the page's visible thread
//! → the HUD's pressure with a message floor that never decreases. Transcripts print every
//! journal request and the HUD's journal line; the property test drives a runtime that
//! answers, fails, refuses and vanishes, and a worker that restarts.

use std::collections::{BTreeMap, BTreeSet};

use continuity_protocol::ErrorCode;
use expect_test::expect;
use ext_core::context_pressure::{PressureLevel, VisibleThread};
use ext_core::continuity::{
    CallError, Continuity, ContinuityInput, ContinuityOutput, JournalEntry, RuntimeAnswer, RuntimeCall, JOURNAL_RETRY_MS,
};
use proptest::prelude::*;

use crate::continuity::{bound_with_auto, idle_page, restart, TAB};

fn ended(c: &mut Continuity, now: u64, user: (&str, &str), reply: (&str, &str)) {
    c.handle(
        now,
        ContinuityInput::TurnEnded {
            tab: TAB,
            user_text: user.1.into(),
            assistant_text: reply.1.into(),
            user_marker: None,
            message_id: Some(reply.0.into()).filter(|id: &String| !id.is_empty()),
            user_message_id: Some(user.0.into()).filter(|id: &String| !id.is_empty()),
            pressed: false,
            user_stopped: false,
        },
    );
}

/// What the runtime does with the next append.
#[derive(Clone, Copy, Debug)]
enum Runtime {
    Records,
    Fails(ErrorCode),
}

/// Drains outputs into `log`; each `continuity.append` is answered as `runtime` says.
fn drain(c: &mut Continuity, now: u64, runtime: Runtime, log: &mut Vec<String>) {
    while let Some(output) = c.poll() {
        if let ContinuityOutput::Request { id, call } = output {
            let result = match call {
                RuntimeCall::JournalAppend(entry) => {
                    log.push(format!(
                        "append {} {} {:?} project={:?} workspace={:?}",
                        entry.role, entry.message_id, entry.text, entry.project_id, entry.workspace_id
                    ));
                    match runtime {
                        Runtime::Records => Ok(RuntimeAnswer::Appended { continuity_id: "hc-5f0c".into() }),
                        Runtime::Fails(code) => Err(CallError { code, message: "no".into() }),
                    }
                }
                _ => Ok(RuntimeAnswer::Subscribed),
            };
            c.handle(now, ContinuityInput::Answered { id, result });
        }
    }
}

fn journal_line(c: &Continuity) -> String {
    c.page_view(TAB).and_then(|v| v.journal).map_or("none".into(), |say| format!("{} {:?}", say.key, say.args))
}

// C1: both turns of an ended reply are written, the user turn first, and the HUD names the
// chain; the same reply reported again writes nothing more.
#[test]
fn an_ended_turn_is_journaled_once_and_the_hud_names_the_chain_c1() {
    let (mut c, mut log) = bound_with_auto(false);
    log.push(journal_line(&c));
    ended(&mut c, 1, ("u-1", "Add the config loader"), ("a-1", "The loader is in."));
    drain(&mut c, 1, Runtime::Records, &mut log);
    log.push(journal_line(&c));
    ended(&mut c, 2, ("u-1", "Add the config loader"), ("a-1", "The loader is in."));
    drain(&mut c, 2, Runtime::Records, &mut log);
    expect![[r#"
        journalNothingYet []
        append user u-1 "Add the config loader" project=None workspace=Some("w1")
        append assistant a-1 "The loader is in." project=None workspace=Some("w1")
        journalRecorded ["hc-5f0c"]"#]]
    .assert_eq(&log.join("\n"));
}

// C1: nothing is journaled for an unbound chat, a turn without an id or text, or the HUD's
// Send tool results replay.
#[test]
fn only_finished_turns_of_bound_chats_with_ids_are_journaled() {
    let mut c = Continuity::new();
    let mut log = Vec::new();
    c.handle(0, ContinuityInput::LinkUp);
    c.handle(0, ContinuityInput::PageReported { tab: TAB, report: idle_page() });
    ended(&mut c, 1, ("u-1", "hello"), ("a-1", "hi"));
    drain(&mut c, 1, Runtime::Records, &mut log);
    assert!(log.is_empty(), "an unbound chat is not journaled: {log:?}");
    assert_eq!(journal_line(&c), "none");

    let (mut c, mut log) = bound_with_auto(false);
    ended(&mut c, 1, ("", "no id"), ("a-1", "   "));
    c.handle(
        2,
        ContinuityInput::TurnEnded {
            tab: TAB,
            user_text: "x".into(),
            assistant_text: "y".into(),
            user_marker: None,
            message_id: Some("a-2".into()),
            user_message_id: Some("u-2".into()),
            pressed: true,
            user_stopped: false,
        },
    );
    drain(&mut c, 2, Runtime::Records, &mut log);
    assert!(log.is_empty(), "no id, an empty text and a replay are not journaled: {log:?}");
}

fn actions(c: &Continuity) -> Vec<String> {
    c.page_view(TAB).map(|v| v.actions.iter().map(|a| a.id.to_string()).collect()).unwrap_or_default()
}

// Past MAX_OPTED opt-ins the oldest is forgotten; that used to happen silently (the
// notice said only "Journal on"), so a chat stopped being journaled without a word.
#[test]
fn opting_in_one_chat_too_many_says_which_chat_is_no_longer_journaled() {
    let mut c = Continuity::new();
    c.handle(0, ContinuityInput::LinkUp);
    let conversation = |i: usize| format!("https://chatgpt.com/c/0b1c2d3e-4f50-6172-8394-{i:012x}");
    let mut notices = Vec::new();
    for i in 0..=ext_core::continuity::MAX_OPTED {
        let now = i as u64 + 1;
        c.handle(
            now,
            ContinuityInput::PageReported { tab: TAB, report: ext_core::continuity::PageReport { url: conversation(i), ..idle_page() } },
        );
        c.handle(now, ContinuityInput::JournalOpt(ext_core::continuity::JournalOpt { tab: TAB, on: true }));
        while let Some(output) = c.poll() {
            if let ContinuityOutput::Notice { say, .. } = output {
                notices.push((say.key, say.args));
            }
        }
    }
    let last = notices.pop().expect("a notice for the last opt-in");
    assert!(notices.iter().all(|(key, _)| key == "journalOptedIn"), "the first {} opt-ins forget nothing", ext_core::continuity::MAX_OPTED);
    assert_eq!(
        last,
        ("journalOptedInForgot".to_owned(), vec!["chatgpt:0b1c2d3e-4f50-6172-8394-000000000000".to_owned(), "256".to_owned()])
    );
}

// X3: an unbound chat is journaled once the user opts it in (from that moment, without a
// workspace), no longer once opted out, and on after it is bound — into the same
// conversation, so its chain keeps what was journaled before the binding. The opt-in
// survives a worker restart.
#[test]
fn a_chat_opted_in_before_binding_is_journaled_from_then_on_and_kept_when_bound_x3() {
    let mut c = Continuity::new();
    let mut log = Vec::new();
    c.handle(0, ContinuityInput::LinkUp);
    c.handle(0, ContinuityInput::PageReported { tab: TAB, report: idle_page() });
    drain(&mut c, 0, Runtime::Records, &mut log);
    log.push(format!("actions {:?} line {}", actions(&c), journal_line(&c)));
    ended(&mut c, 1, ("u-0", "before the opt-in"), ("a-0", "not journaled"));
    c.handle(2, ContinuityInput::JournalOpt(ext_core::continuity::JournalOpt { tab: TAB, on: true }));
    drain(&mut c, 2, Runtime::Records, &mut log);
    log.push(format!("actions {:?} line {}", actions(&c), journal_line(&c)));
    ended(&mut c, 3, ("u-1", "Split the parser"), ("a-1", "Split."));
    drain(&mut c, 3, Runtime::Records, &mut log);
    let mut c = restart(&c, 4);
    c.handle(4, ContinuityInput::PageReported { tab: TAB, report: idle_page() });
    c.handle(4, ContinuityInput::LinkUp);
    drain(&mut c, 4, Runtime::Records, &mut log);
    log.push(format!("after a restart: actions {:?} line {}", actions(&c), journal_line(&c)));
    c.handle(5, ContinuityInput::JournalOpt(ext_core::continuity::JournalOpt { tab: TAB, on: false }));
    ended(&mut c, 6, ("u-2", "opted out"), ("a-2", "not journaled"));
    drain(&mut c, 6, Runtime::Records, &mut log);
    log.push(format!("opted out: actions {:?} line {}", actions(&c), journal_line(&c)));
    c.handle(7, ContinuityInput::JournalOpt(ext_core::continuity::JournalOpt { tab: TAB, on: true }));
    c.handle(
        7,
        ContinuityInput::Bind {
            tab: TAB,
            workspace: ext_core::binding::CatalogWorkspace { workspace_id: "w1".into(), label: "api".into() },
        },
    );
    drain(&mut c, 7, Runtime::Records, &mut log);
    ended(&mut c, 8, ("u-3", "Now test it"), ("a-3", "Tested."));
    drain(&mut c, 8, Runtime::Records, &mut log);
    log.push(format!("bound: actions {:?} line {}", actions(&c), journal_line(&c)));
    expect![[r#"
        actions ["toggle_auto", "continue", "check_herdr", "llm_judge", "journal_opt_in", "handoff"] line none
        actions ["toggle_auto", "continue", "check_herdr", "llm_judge", "journal_opt_out", "handoff"] line journalNothingYet []
        append user u-1 "Split the parser" project=None workspace=None
        append assistant a-1 "Split." project=None workspace=None
        after a restart: actions ["toggle_auto", "continue", "check_herdr", "llm_judge", "journal_opt_out", "handoff"] line journalRecorded ["hc-5f0c"]
        opted out: actions ["toggle_auto", "continue", "check_herdr", "llm_judge", "journal_opt_in", "handoff"] line none
        append user u-3 "Now test it" project=None workspace=Some("w1")
        append assistant a-3 "Tested." project=None workspace=Some("w1")
        bound: actions ["toggle_auto", "continue", "check_herdr", "llm_judge", "handoff", "goal"] line journalRecorded ["hc-5f0c"]"#]]
    .assert_eq(&log.join("\n"));
}

// C1: while the companion is away the turns wait in the outbox, which survives a worker
// restart; the link coming back writes them in order.
#[test]
fn unconfirmed_turns_wait_in_the_outbox_across_a_restart_c1() {
    let (mut c, mut log) = bound_with_auto(false);
    c.handle(1, ContinuityInput::LinkDown);
    ended(&mut c, 2, ("u-1", "first"), ("a-1", "one"));
    ended(&mut c, 3, ("u-2", "second"), ("a-2", "two"));
    drain(&mut c, 3, Runtime::Records, &mut log);
    log.push(journal_line(&c));
    let mut c = restart(&c, 4);
    c.handle(4, ContinuityInput::PageReported { tab: TAB, report: idle_page() });
    log.push(journal_line(&c));
    c.handle(5, ContinuityInput::LinkUp);
    drain(&mut c, 5, Runtime::Records, &mut log);
    log.push(journal_line(&c));
    expect![[r#"
        journalWaiting ["4", "offline"]
        journalWaiting ["4", "offline"]
        append user u-1 "first" project=None workspace=Some("w1")
        append assistant a-1 "one" project=None workspace=Some("w1")
        append user u-2 "second" project=None workspace=Some("w1")
        append assistant a-2 "two" project=None workspace=Some("w1")
        journalRecorded ["hc-5f0c"]"#]]
    .assert_eq(&log.join("\n"));
}

// C1: a store that cannot write keeps the turn and tries again after JOURNAL_RETRY_MS; a
// final refusal (`continuity_conflict`) drops only that turn and says so.
#[test]
fn a_failed_append_is_retried_and_a_refused_one_is_dropped_visibly() {
    let (mut c, mut log) = bound_with_auto(false);
    ended(&mut c, 1, ("u-1", "first"), ("", ""));
    drain(&mut c, 1, Runtime::Fails(ErrorCode::ContinuityStoreUnavailable), &mut log);
    log.push(journal_line(&c));
    assert_eq!(c.next_deadline(), Some(1 + JOURNAL_RETRY_MS), "the retry is a core timer");
    c.handle_timeout(1 + JOURNAL_RETRY_MS);
    drain(&mut c, 1 + JOURNAL_RETRY_MS, Runtime::Fails(ErrorCode::ContinuityConflict), &mut log);
    log.push(journal_line(&c));
    ended(&mut c, 40_000, ("u-2", "second"), ("", ""));
    drain(&mut c, 40_000, Runtime::Records, &mut log);
    log.push(journal_line(&c));
    expect![[r#"
        append user u-1 "first" project=None workspace=Some("w1")
        journalWaiting ["1", "continuity_store_unavailable"]
        append user u-1 "first" project=None workspace=Some("w1")
        journalDropped ["1"]
        append user u-2 "second" project=None workspace=Some("w1")
        journalDropped ["1"]"#]]
    .assert_eq(&log.join("\n"));
}

// C3: a Project chat's turns carry the Project id (the runtime joins a new chat of the
// Project to its chain), and the text is cut to the runtime's 64 KiB at a char boundary.
#[test]
fn a_project_chat_carries_its_project_and_a_long_turn_fits_the_cap() {
    let (mut c, mut log) = bound_with_auto(false);
    let url = "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef-herdr/c/6a1b2c3d-0000-4000-8000-000000000001";
    c.handle(1, ContinuityInput::PageReported { tab: 8, report: ext_core::continuity::PageReport { url: url.into(), ..idle_page() } });
    c.handle(
        1,
        ContinuityInput::Bind { tab: 8, workspace: ext_core::binding::CatalogWorkspace { workspace_id: "w2".into(), label: "web".into() } },
    );
    drain(&mut c, 1, Runtime::Records, &mut log);
    let long = "é".repeat(40_000);
    c.handle(
        2,
        ContinuityInput::TurnEnded {
            tab: 8,
            user_text: long,
            assistant_text: String::new(),
            user_marker: None,
            message_id: None,
            user_message_id: Some("u-9".into()),
            pressed: false,
            user_stopped: false,
        },
    );
    let mut entries: Vec<JournalEntry> = Vec::new();
    while let Some(output) = c.poll() {
        if let ContinuityOutput::Request { call: RuntimeCall::JournalAppend(entry), .. } = output {
            entries.push(entry);
        }
    }
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].project_id.as_deref(), Some("g-p-0123456789abcdef0123456789abcdef"));
    assert_eq!(entries[0].workspace_id.as_deref(), Some("w2"));
    assert_eq!(entries[0].text.len(), 65_536, "cut to 64 KiB, at a character boundary");
}

// R1: the HUD shows the conversation's pressure; the message floor (the highest turn
// index seen) never decreases, across a restart and when the page shows fewer turns.
#[test]
fn the_pressure_level_shows_and_its_floor_survives_a_restart_r1() {
    let (mut c, _) = bound_with_auto(false);
    let pressure = |c: &Continuity| c.page_view(TAB).and_then(|v| v.pressure);
    assert_eq!(pressure(&c), None, "no level before the page reported its thread");
    c.handle(
        1,
        ContinuityInput::ThreadFacts {
            tab: TAB,
            thread: VisibleThread { turns: 10, latin_chars: 40_000, cjk_chars: 0, highest_turn: Some(199) },
        },
    );
    let first = pressure(&c).expect("a level");
    assert_eq!(first.messages, 200);
    assert_eq!(first.tokens, 10_000 + 1_000 * 190 + 32_000);
    assert_eq!(first.level, PressureLevel::HighRisk);
    let mut c = restart(&c, 2);
    c.handle(2, ContinuityInput::PageReported { tab: TAB, report: idle_page() });
    c.handle(
        2,
        ContinuityInput::ThreadFacts {
            tab: TAB,
            thread: VisibleThread { turns: 4, latin_chars: 16_000, cjk_chars: 0, highest_turn: None },
        },
    );
    let after = pressure(&c).expect("a level");
    assert_eq!(after.messages, 200, "the floor never decreases");
    assert_eq!(after.tokens, 4_000 + 1_000 * 196 + 32_000, "each turn not shown counts as the shown ones' average");
    // Another conversation in the tab: the old figure is not shown for it.
    let other = "https://chatgpt.com/c/0b1c2d3e-4f50-6172-8394-000000000002";
    c.handle(3, ContinuityInput::PageReported { tab: TAB, report: ext_core::continuity::PageReport { url: other.into(), ..idle_page() } });
    assert_eq!(pressure(&c), None);
}

#[derive(Clone, Debug)]
enum Step {
    /// A reply ends: a new user turn and reply (or the last ones reported again).
    Turn {
        again: bool,
    },
    LinkDown,
    LinkUp,
    /// The runtime answers the append in flight.
    Answer(u8),
    Restart,
    Tick,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => any::<bool>().prop_map(|again| Step::Turn { again }),
        1 => Just(Step::LinkDown),
        2 => Just(Step::LinkUp),
        5 => (0u8..10).prop_map(Step::Answer),
        1 => Just(Step::Restart),
        1 => Just(Step::Tick),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    // C1 as a property: whatever the runtime and the worker do, every ended turn is in the
    // runtime's record, refused for good, or still in the outbox — never lost; at most one
    // append is in flight; turns are written in the order they ended; and once the runtime
    // answers again every kept turn gets written.
    #[test]
    fn no_ended_turn_is_lost_and_one_append_is_in_flight(steps in prop::collection::vec(step(), 1..60)) {
        let (mut c, _) = bound_with_auto(false);
        let mut now = 1;
        let mut made: Vec<String> = Vec::new();
        let mut recorded: BTreeSet<String> = BTreeSet::new();
        let mut refused: BTreeSet<String> = BTreeSet::new();
        let mut in_flight: BTreeMap<u64, String> = BTreeMap::new();
        let mut order: Vec<String> = Vec::new();
        let mut link = true;
        let mut n = 0;
        for step in steps {
            now += 1_000;
            match step {
                Step::Turn { again } => {
                    if !again || n == 0 {
                        n += 1;
                        made.push(format!("u-{n}"));
                        made.push(format!("a-{n}"));
                    }
                    let (u, a) = (format!("u-{n}"), format!("a-{n}"));
                    ended(&mut c, now, (&u, "question"), (&a, "answer"));
                }
                Step::LinkDown => {
                    link = false;
                    c.handle(now, ContinuityInput::LinkDown);
                    in_flight.clear();
                }
                Step::LinkUp => {
                    link = true;
                    c.handle(now, ContinuityInput::LinkUp);
                }
                Step::Answer(how) => {
                    if let Some((id, key)) = in_flight.pop_first() {
                        let result = match how {
                            0..=5 => { recorded.insert(key); Ok(RuntimeAnswer::Appended { continuity_id: "hc-1".into() }) }
                            6 => { refused.insert(key); Err(CallError { code: ErrorCode::ContinuityConflict, message: "no".into() }) }
                            7 => { recorded.insert(key); Err(CallError { code: ErrorCode::Timeout, message: "lost answer".into() }) }
                            _ => Err(CallError { code: ErrorCode::ContinuityStoreUnavailable, message: "disk".into() }),
                        };
                        c.handle(now, ContinuityInput::Answered { id, result });
                    }
                }
                Step::Restart => {
                    c = restart(&c, now);
                    c.handle(now, ContinuityInput::PageReported { tab: TAB, report: idle_page() });
                    in_flight.clear();
                    if link {
                        c.handle(now, ContinuityInput::LinkUp);
                    }
                }
                Step::Tick => c.handle_timeout(now + JOURNAL_RETRY_MS),
            }
            while let Some(output) = c.poll() {
                if let ContinuityOutput::Request { id, call } = output {
                    match call {
                        RuntimeCall::JournalAppend(entry) => {
                            prop_assert!(link, "an append while the companion is away");
                            in_flight.insert(id, entry.message_id.clone());
                            order.push(entry.message_id);
                        }
                        _ => c.handle(now, ContinuityInput::Answered { id, result: Ok(RuntimeAnswer::Subscribed) }),
                    }
                }
            }
            prop_assert!(in_flight.len() <= 1, "two appends in flight: {in_flight:?}");
        }
        // Order: the first write of each turn follows the order the turns ended.
        let mut firsts: Vec<&String> = Vec::new();
        for key in &order {
            if !firsts.contains(&key) {
                firsts.push(key);
            }
        }
        let ended_order: Vec<&String> = made.iter().filter(|k| firsts.contains(k)).collect();
        prop_assert_eq!(firsts, ended_order, "written out of order");
        // The runtime comes back and answers everything.
        in_flight.clear();
        c.handle(now, ContinuityInput::LinkDown);
        c.handle(now + 1, ContinuityInput::LinkUp);
        for _ in 0..(2 * made.len() + 4) {
            while let Some(output) = c.poll() {
                if let ContinuityOutput::Request { id, call } = output {
                    let result = match call {
                        RuntimeCall::JournalAppend(entry) => {
                            recorded.insert(entry.message_id);
                            Ok(RuntimeAnswer::Appended { continuity_id: "hc-1".into() })
                        }
                        _ => Ok(RuntimeAnswer::Subscribed),
                    };
                    c.handle(now + 1, ContinuityInput::Answered { id, result });
                }
            }
        }
        for key in &made {
            prop_assert!(recorded.contains(key) || refused.contains(key), "turn {} was lost", key);
        }
        let line = if made.is_empty() { "journalNothingYet" } else if refused.is_empty() { "journalRecorded" } else { "journalDropped" };
        prop_assert_eq!(journal_line(&c).split(' ').next().map(str::to_owned), Some(line.to_owned()));
    }
}

// R1: a conversation's floor survives when more conversations than are kept report, also
// when its key is the first in the map's order (the one just written is never evicted).
#[test]
fn the_floor_just_raised_is_kept_when_the_map_is_full() {
    let (mut c, _) = bound_with_auto(false);
    let thread = VisibleThread { turns: 2, latin_chars: 80, cjk_chars: 0, highest_turn: Some(99) };
    for i in (0..140u32).rev() {
        let url = format!("https://chatgpt.com/c/0b1c2d3e-4f50-6172-8394-{i:012}");
        c.handle(1, ContinuityInput::PageReported { tab: TAB, report: ext_core::continuity::PageReport { url, ..idle_page() } });
        c.handle(1, ContinuityInput::ThreadFacts { tab: TAB, thread });
        let shown = c.page_view(TAB).and_then(|v| v.pressure).expect("a level");
        assert_eq!(shown.messages, 100, "conversation {i} keeps its floor");
    }
    let c = restart(&c, 2);
    let kept = c.snapshot().to_json().expect("persist");
    assert!(kept.contains("0b1c2d3e-4f50-6172-8394-000000000000"), "the newest conversation's floor is persisted");
}

// R1: the page counts CJK characters with exactly the core's ranges (content-turns.js's `CJK`).
#[test]
fn the_page_counts_cjk_with_the_cores_ranges() {
    let source =
        std::fs::read_to_string(format!("{}/../extension/content-turns.js", env!("CARGO_MANIFEST_DIR"))).expect("content-turns.js");
    let line = source.lines().find(|l| l.trim_start().starts_with("const CJK = /[")).expect("the CJK pattern");
    let body = line.split("/[").nth(1).and_then(|rest| rest.split("]/").next()).expect("a character class");
    let code = |s: &str| -> u32 {
        let hex = s.trim_start_matches("\\u").trim_start_matches('{').trim_end_matches('}');
        u32::from_str_radix(hex, 16).expect("hex")
    };
    let mut ranges = Vec::new();
    for part in body.split("\\u").filter(|p| !p.is_empty()).collect::<Vec<_>>().chunks(2) {
        let (from, to) = (code(part[0].trim_end_matches('-')), code(part[1]));
        ranges.push((from, to));
    }
    assert!(ranges.len() >= 8, "{ranges:?}");
    let is = |n: u32| char::from_u32(n).is_some_and(ext_core::context_pressure::is_cjk);
    for (from, to) in &ranges {
        assert!(is(*from) && is(*to), "{from:x}-{to:x} is CJK in the core");
    }
    let in_page = |n: u32| ranges.iter().any(|(from, to)| (*from..=*to).contains(&n));
    for n in (0x2000..0x30000).step_by(7).chain([0x3000, 0x303F, 0x3040, 0x4DBF, 0x4E00, 0xD7AF, 0xD7B0, 0x20000, 0x2FA1F, 0x2FA20]) {
        if char::from_u32(n).is_some() {
            assert_eq!(in_page(n), is(n), "U+{n:X}: the page and the core agree");
        }
    }
}
