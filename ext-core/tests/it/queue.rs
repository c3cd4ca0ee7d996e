//! The Queue's durable book (SPEC Q1–Q7, Q10): limits, merge order, confirmed removal and
//! the stored record, with a simulated storage that can fail.

use expect_test::expect;
use ext_core::queue::{QueueBook, QueueRefusal, MAX_AGE_MS, MAX_ITEMS, MAX_MERGED_CHARS, STORE_VERSION};
use proptest::prelude::*;

const C: &str = "chatgpt:c/abc";

fn book_with(texts: &[&str]) -> QueueBook {
    let mut book = QueueBook::new();
    for (n, text) in texts.iter().enumerate() {
        book.add(C, &format!("q:{n}"), text, 1_000 + n as u64).expect("add");
    }
    book
}

// R: Q1, Q3 — items keep insertion order and merge with exactly one blank line; text is
// normalized (CRLF → LF, trimmed).
#[test]
fn a_batch_merges_the_items_in_order_with_one_blank_line_q3() {
    let book = book_with(&["first\r\nline two  ", "\n second", "third"]);
    let batch = book.batch(C).expect("batch");
    assert_eq!(batch.text, "first\nline two\n\nsecond\n\nthird");
    assert_eq!(batch.item_ids, ["q:0", "q:1", "q:2"]);
    assert!(batch.id.starts_with("qb:"));
    assert_eq!(book.status(C).merged_chars, batch.text.chars().count());
    assert_eq!(book.status(C).oldest_at, Some(1_000));
    assert_eq!(QueueBook::new().batch(C), None, "nothing queued, no batch");
}

// R: Q6 — over-limit input is refused whole with a message that says what to do; nothing
// is truncated and the queue is unchanged.
#[test]
fn over_limit_input_is_refused_whole_with_a_clear_message_q6() {
    let mut book = QueueBook::new();
    for n in 0..MAX_ITEMS {
        book.add(C, &format!("q:{n}"), "x", 0).expect("within limits");
    }
    let full = book.add(C, "q:extra", "one more", 0).expect_err("full");
    assert_eq!(full, QueueRefusal::TooManyItems { count: MAX_ITEMS });
    assert_eq!(book.items(C).len(), MAX_ITEMS);

    let mut book = book_with(&["short"]);
    let long = "y".repeat(MAX_MERGED_CHARS);
    let refusal = book.add(C, "q:long", &long, 0).expect_err("too long");
    assert_eq!(refusal, QueueRefusal::TooLong { merged_chars: 5 + 2 + MAX_MERGED_CHARS });
    assert_eq!(book.items(C).len(), 1, "nothing of the long text was kept");
    expect![[r#"queued text would be 24007 characters, more than 24000: shorten it or wait for the queue to be sent"#]]
        .assert_eq(&refusal.to_string());

    assert_eq!(book.add(C, "q:blank", " \r\n\t ", 0), Err(QueueRefusal::EmptyText));
    assert_eq!(book.add("", "q:x", "text", 0), Err(QueueRefusal::NoConversation));
    assert_eq!(book.add(C, "q:0", "same id", 0), Err(QueueRefusal::BadId));
    // Exactly at the limit is allowed.
    let mut book = QueueBook::new();
    book.add(C, "q:a", &"z".repeat(MAX_MERGED_CHARS - 3), 0).expect("a");
    book.add(C, "q:b", "z", 0).expect("exactly the limit with the separator");
    assert_eq!(book.status(C).merged_chars, MAX_MERGED_CHARS);
}

// R: Q5 — only a confirmed batch is removed, and only its items: what was queued while it
// was being sent stays, in order. The same items give the same batch id after a restart.
#[test]
fn removing_a_confirmed_batch_keeps_what_was_queued_meanwhile_q5() {
    let mut book = book_with(&["a", "b"]);
    let batch = book.batch(C).expect("batch");
    let reread = QueueBook::parse(Some(&book.to_json())).expect("parse");
    assert_eq!(reread.batch(C), Some(batch.clone()), "a restart computes the same batch");
    book.add(C, "q:late", "c", 5_000).expect("add while sending");
    assert_eq!(book.remove(C, &batch.item_ids), 2);
    assert_eq!(book.batch(C).map(|b| b.text), Some("c".to_owned()));
    assert_eq!(book.remove(C, &batch.item_ids), 0, "removing twice removes nothing more");
}

// R: Q7 — clear empties only this conversation and says what it held.
#[test]
fn clear_empties_only_this_conversation_q7() {
    let mut book = book_with(&["a", "b"]);
    book.add("chatgpt:c/other", "q:o", "other", 0).expect("other");
    let cleared = book.clear(C);
    assert_eq!(cleared.len(), 2);
    assert!(book.items(C).is_empty());
    assert_eq!(book.items("chatgpt:c/other").len(), 1);
}

// R: Q4-adjacent (nothing is lost) — a stored record that cannot be read is refused, so
// the caller never writes over it; a newer version is not guessed at.
#[test]
fn an_unreadable_or_newer_record_is_refused_never_replaced() {
    for (raw, detail) in [
        ("{not json", "not JSON"),
        (r#"{"version": 2, "conversations": {}}"#, "written by a newer version"),
        (r#"{"conversations": {}}"#, "no version"),
        (r#"{"version": 1, "conversations": {"k": [{"id": "q:1", "text": "t"}]}}"#, "an item without time"),
        (
            r#"{"version": 1, "conversations": {"k": [{"id": "q:1", "text": "t", "created_at": 1}, {"id": "q:1", "text": "u", "created_at": 2}]}}"#,
            "a bad or repeated item id",
        ),
    ] {
        assert_eq!(QueueBook::parse(Some(raw)), Err(QueueRefusal::StorageUnreadable { detail: detail.to_owned() }), "{raw}");
    }
    assert_eq!(QueueBook::parse(None), Ok(QueueBook::new()), "never written: empty");
    let json = book_with(&["kept"]).to_json();
    let value: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(value["version"], STORE_VERSION);
    assert_eq!(value["conversations"][C][0]["text"], "kept");
}

// R: the 7-day limit — only older items expire, and they are returned so the HUD can say so.
#[test]
fn items_older_than_seven_days_expire_and_are_named() {
    let mut book = QueueBook::new();
    book.add(C, "q:old", "old", 0).expect("old");
    book.add(C, "q:new", "new", MAX_AGE_MS).expect("new");
    assert!(book.expire(MAX_AGE_MS).is_empty(), "exactly seven days is kept");
    let gone = book.expire(MAX_AGE_MS + 1);
    assert_eq!(gone.iter().map(|(c, i)| (c.as_str(), i.id.as_str())).collect::<Vec<_>>(), [(C, "q:old")]);
    assert_eq!(book.items(C).len(), 1);
}

/// One step of a user and a flaky storage against the book.
#[derive(Debug, Clone)]
enum Op {
    Add {
        conv: u8,
        len: usize,
    },
    SendAndConfirm {
        conv: u8,
    },
    Clear {
        conv: u8,
    },
    /// The next read of the stored record fails (a storage error or a corrupted write).
    FailRead,
    /// The worker restarts: the book is read back from storage.
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u8..2, 1usize..3_000).prop_map(|(conv, len)| Op::Add { conv, len }),
        2 => (0u8..2).prop_map(|conv| Op::SendAndConfirm { conv }),
        1 => (0u8..2).prop_map(|conv| Op::Clear { conv }),
        1 => Just(Op::FailRead),
        1 => Just(Op::Restart),
    ]
}

proptest! {
    /// Q3, Q5, Q6: across random adds, confirmed batches, clears, storage read failures and
    /// restarts, the stored queue equals the model: nothing lost, duplicated or reordered;
    /// a batch carries exactly the items queued before it, in order; a refused change
    /// writes nothing.
    #[test]
    fn the_stored_queue_never_loses_duplicates_or_reorders(ops in prop::collection::vec(op(), 1..60)) {
        let convs = ["chatgpt:c/one", "chatgpt:p/g-p-x/c/two"];
        let mut stored: Option<String> = None;
        let mut model: [Vec<String>; 2] = [Vec::new(), Vec::new()];
        let mut fail_next_read = false;
        let mut next_id = 0u32;
        let mut sent: Vec<String> = Vec::new();
        for op in ops {
            // Every change re-reads storage first.
            let read = if std::mem::take(&mut fail_next_read) { None } else { Some(QueueBook::parse(stored.as_deref())) };
            let mut book = match read {
                Some(Ok(book)) => book,
                // A failed read: the change is refused and nothing is written.
                Some(Err(_)) | None => continue,
            };
            match op {
                Op::Add { conv, len } => {
                    next_id += 1;
                    let text = format!("m{next_id}:{}", "t".repeat(len));
                    let c = usize::from(conv);
                    match book.add(convs[c], &format!("q:{next_id}"), &text, 0) {
                        Ok(_) => model[c].push(text),
                        Err(QueueRefusal::TooManyItems { .. } | QueueRefusal::TooLong { .. }) => {
                            let merged: usize = model[c].iter().map(|t| t.chars().count() + 2).sum::<usize>() + text.len();
                            prop_assert!(model[c].len() >= MAX_ITEMS || merged > MAX_MERGED_CHARS, "refused within limits");
                        }
                        Err(other) => prop_assert!(false, "unexpected refusal {other:?}"),
                    }
                }
                Op::SendAndConfirm { conv } => {
                    let c = usize::from(conv);
                    if let Some(batch) = book.batch(convs[c]) {
                        prop_assert_eq!(&batch.text, &model[c].join("\n\n"));
                        prop_assert!(!sent.contains(&batch.id), "a confirmed batch came back");
                        sent.push(batch.id.clone());
                        book.remove(convs[c], &batch.item_ids);
                        model[c].clear();
                    } else {
                        prop_assert!(model[c].is_empty());
                    }
                }
                Op::Clear { conv } => {
                    let c = usize::from(conv);
                    prop_assert_eq!(book.clear(convs[c]).len(), model[c].len());
                    model[c].clear();
                }
                Op::FailRead => {
                    fail_next_read = true;
                    continue;
                }
                Op::Restart => {}
            }
            stored = Some(book.to_json());
            let reread = QueueBook::parse(stored.as_deref()).expect("what we wrote reads back");
            for (c, conv) in convs.iter().enumerate() {
                let texts: Vec<&str> = reread.items(conv).iter().map(|i| i.text.as_str()).collect();
                prop_assert_eq!(texts, model[c].iter().map(String::as_str).collect::<Vec<_>>());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The queue in the composed continuity loop, with a simulated `chrome.storage.local`.

mod flow {
    use ext_core::continuity::{Continuity, ContinuityInput, ContinuityOutput, DeliveryOutcome, PageReport};
    use ext_core::delivery_ledger::{TYPING_DEADLINE_MS, UNCERTAIN_GIVE_UP_MS};
    use ext_core::queue::QueueBook;
    use ext_core::settle_tracker::{PaneEventKind, SettledStatus};

    use crate::continuity::{bound_with_auto, event, idle_page, restart, TAB};

    const KEY: &str = "chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0";

    /// The browser around the machine: storage that can fail, and a log of what the page
    /// was told.
    #[derive(Default)]
    struct Browser {
        stored: Option<String>,
        fail_reads: u32,
        fail_writes: u32,
        log: Vec<String>,
    }

    impl Browser {
        fn drain(&mut self, c: &mut Continuity, now: u64) {
            while let Some(output) = c.poll() {
                match output {
                    ContinuityOutput::QueueRead { op } => {
                        let stored = if self.fail_reads > 0 {
                            self.fail_reads -= 1;
                            Err("storage error".to_owned())
                        } else {
                            // As the worker does (worker/storage.rs): text that is not JSON is
                            // passed on as text, a record that is not a queue.
                            Ok(self.stored.as_deref().map(|text| serde_json::from_str(text).unwrap_or_else(|_| text.into())))
                        };
                        c.handle(now, ContinuityInput::QueueRead { op, stored });
                    }
                    ContinuityOutput::QueueWrite { op, record } => {
                        let result = if self.fail_writes > 0 {
                            self.fail_writes -= 1;
                            Err("quota".to_owned())
                        } else {
                            self.stored = Some(record.to_string());
                            Ok(())
                        };
                        c.handle(now, ContinuityInput::QueueWritten { op, result });
                    }
                    ContinuityOutput::Request { id, .. } => c.handle(
                        now,
                        ContinuityInput::Answered {
                            id,
                            result: Ok(ext_core::continuity::RuntimeAnswer::InboxPending { tasks: Vec::new(), more: false }),
                        },
                    ),
                    ContinuityOutput::Deliver { id, text, .. } => {
                        self.log.push(format!("deliver {}: {text:?}", id.split('/').next().unwrap_or("")))
                    }
                    ContinuityOutput::QueueAccepted { text, .. } => self.log.push(format!("accepted {text:?}")),
                    ContinuityOutput::Notice { say, .. } => self.log.push(format!("notice {}", crate::locales::en(&say))),
                    _ => {}
                }
            }
        }

        fn queued(&self) -> Vec<String> {
            QueueBook::parse(self.stored.as_deref()).expect("readable").items(KEY).iter().map(|i| i.text.clone()).collect()
        }

        fn take_log(&mut self) -> String {
            std::mem::take(&mut self.log).join("\n")
        }
    }

    fn page(generating: bool) -> PageReport {
        PageReport { generating, ..idle_page() }
    }

    fn feed(c: &mut Continuity, b: &mut Browser, now: u64, input: ContinuityInput) {
        c.handle(now, input);
        b.drain(c, now);
    }

    fn queue_id(c: &Continuity) -> String {
        c.ledger().active().find(|d| d.id.starts_with("qb:")).map(|d| d.id.clone()).expect("a queue batch in flight")
    }

    fn landed(c: &mut Continuity, b: &mut Browser, now: u64, id: &str, turns: u32) {
        feed(c, b, now, ContinuityInput::DeliveryReport { tab: TAB, id: id.to_owned(), outcome: DeliveryOutcome::Submitted });
        feed(
            c,
            b,
            now,
            ContinuityInput::PageReported {
                tab: TAB,
                report: PageReport { user_turns: turns, markers: vec![id.to_owned()], ..idle_page() },
            },
        );
    }

    // R: Q1, Q2, Q3, Q5 — text queued while a reply streams is sent once, after the turn
    // ends, merged in order; the composer is emptied only once the text is stored; the
    // items leave storage only when the batch is confirmed; and the user's queued turn goes
    // before a wake that became due at the same time.
    #[test]
    fn queued_while_streaming_goes_once_after_the_turn_merged_in_order_before_a_wake_q2() {
        let (mut c, _) = bound_with_auto(true);
        let mut b = Browser::default();
        feed(&mut c, &mut b, 1, ContinuityInput::PageReported { tab: TAB, report: page(true) });
        feed(&mut c, &mut b, 2, ContinuityInput::QueueAdd { tab: TAB, text: "first, then".into(), whole_chars: None });
        feed(&mut c, &mut b, 3, ContinuityInput::QueueAdd { tab: TAB, text: "second\r\n".into(), whole_chars: None });
        // The workspace settles while the reply still streams: the wake waits too.
        feed(&mut c, &mut b, 4, event(1, PaneEventKind::Working));
        feed(&mut c, &mut b, 4, event(2, PaneEventKind::Settled(SettledStatus::Idle)));
        expect_test::expect![[r#"
            accepted "first, then"
            notice Queued. It is sent as your next message when the reply ends.
            accepted "second\r\n"
            notice Queued. It is sent as your next message when the reply ends."#]]
        .assert_eq(&b.take_log());
        assert_eq!(c.page_view(TAB).and_then(|v| v.queue).map(|q| (q.count, q.state)), Some((2, "waiting")));
        // The turn ends.
        feed(&mut c, &mut b, 10, ContinuityInput::PageReported { tab: TAB, report: page(false) });
        let id = queue_id(&c);
        expect_test::expect![[r#"deliver qb:477d4da4bc03723c: "first, then\n\nsecond\n[herdr-continuity qb:477d4da4bc03723c/0.0.0 ref=chatgpt:conv:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0]""#]]
            .assert_eq(&b.take_log());
        assert_eq!(b.queued(), ["first, then", "second"], "kept until confirmed");
        landed(&mut c, &mut b, 11, &id, 1);
        assert!(b.queued().is_empty(), "removed once confirmed");
        // The wake follows on the next idle report, never the batch again.
        feed(
            &mut c,
            &mut b,
            20,
            ContinuityInput::PageReported { tab: TAB, report: PageReport { user_turns: 1, markers: vec![id], ..idle_page() } },
        );
        let log = b.take_log();
        assert!(log.starts_with("deliver wake:w1#2"), "{log}");
        assert!(!log.contains("qb:"), "{log}");
    }

    // R: Q4 — a send that did not go through keeps the batch and sends it again once;
    // nothing is deleted.
    #[test]
    fn a_blocked_send_keeps_the_batch_and_sends_it_again_once_q4() {
        let (mut c, _) = bound_with_auto(false);
        let mut b = Browser::default();
        feed(&mut c, &mut b, 1, ContinuityInput::QueueAdd { tab: TAB, text: "run the tests".into(), whole_chars: None });
        let id = queue_id(&c);
        feed(
            &mut c,
            &mut b,
            2,
            ContinuityInput::DeliveryReport {
                tab: TAB,
                id,
                outcome: DeliveryOutcome::NotSubmitted { reason: "send_button_missing".into() },
            },
        );
        assert_eq!(b.queued(), ["run the tests"]);
        feed(&mut c, &mut b, 3, ContinuityInput::PageReported { tab: TAB, report: idle_page() });
        let log = b.take_log();
        assert_eq!(log.matches("deliver qb:").count(), 2, "{log}");
        let again = queue_id(&c);
        landed(&mut c, &mut b, 4, &again, 1);
        assert!(b.queued().is_empty());
    }

    // R: Q4, fail closed — a failed storage read refuses the add (the composer keeps the
    // text: no `accepted`) and never overwrites what is stored; a failed write likewise.
    #[test]
    fn a_storage_read_error_leaves_the_queue_intact_and_the_text_in_the_composer_q4() {
        let (mut c, _) = bound_with_auto(false);
        let mut b = Browser { stored: Some(r#"{"version":1,"conversations":{"chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0":[{"id":"q:old","text":"kept","created_at":0}]}}"#.into()), ..Browser::default() };
        feed(&mut c, &mut b, 0, ContinuityInput::PageReported { tab: TAB, report: page(true) });
        b.fail_reads = 1;
        let before = b.stored.clone();
        feed(&mut c, &mut b, 1, ContinuityInput::QueueAdd { tab: TAB, text: "new".into(), whole_chars: None });
        let log = b.take_log();
        assert!(!log.contains("accepted"), "{log}");
        assert!(log.contains("could not be read or saved (storage error)"), "{log}");
        assert_eq!(b.stored, before, "nothing written after a failed read");
        b.fail_writes = 1;
        feed(&mut c, &mut b, 2, ContinuityInput::QueueAdd { tab: TAB, text: "new".into(), whole_chars: None });
        assert!(!b.take_log().contains("accepted"));
        assert_eq!(b.stored, before);
        feed(&mut c, &mut b, 3, ContinuityInput::QueueAdd { tab: TAB, text: "new".into(), whole_chars: None });
        assert!(b.take_log().contains("accepted \"new\""));
        assert_eq!(b.queued(), ["kept", "new"]);
        // An unreadable record is never replaced.
        b.stored = Some("{garbage".into());
        feed(&mut c, &mut b, 4, ContinuityInput::QueueAdd { tab: TAB, text: "more".into(), whole_chars: None });
        assert_eq!(b.stored.as_deref(), Some("{garbage"));
        assert_eq!(c.page_view(TAB).and_then(|v| v.queue).map(|q| q.state), Some("unreadable"));
    }

    // R: Q6 — over-limit input is refused with a message in the HUD; nothing is stored.
    #[test]
    fn over_limit_input_is_refused_with_a_message_in_the_hud_q6() {
        let (mut c, _) = bound_with_auto(false);
        let mut b = Browser::default();
        feed(&mut c, &mut b, 0, ContinuityInput::PageReported { tab: TAB, report: page(true) });
        feed(&mut c, &mut b, 1, ContinuityInput::QueueAdd { tab: TAB, text: "x".repeat(24_001), whole_chars: None });
        let log = b.take_log();
        assert!(log.contains("notice Not queued: the queued text would be 24001 characters, more than 24000."), "{log}");
        assert!(b.queued().is_empty());
    }

    // R: Q6 — a composer text too long for one page message comes as its start and its
    // whole length: refused naming that length, its start never queued as the text.
    #[test]
    fn a_cut_composer_text_is_refused_with_its_whole_length_and_its_start_is_not_queued_q6() {
        let (mut c, _) = bound_with_auto(false);
        let mut b = Browser::default();
        feed(&mut c, &mut b, 0, ContinuityInput::PageReported { tab: TAB, report: page(true) });
        feed(&mut c, &mut b, 1, ContinuityInput::QueueAdd { tab: TAB, text: "x".repeat(24_001), whole_chars: Some(90_000) });
        let log = b.take_log();
        assert!(log.contains("notice Not queued: the queued text would be 90000 characters, more than 24000."), "{log}");
        // A page that names a whole length under the limit still sent only a start.
        feed(&mut c, &mut b, 2, ContinuityInput::QueueAdd { tab: TAB, text: "short".into(), whole_chars: Some(10) });
        let log = b.take_log();
        assert!(log.contains("notice Not queued: the queued text would be 24001 characters, more than 24000."), "{log}");
        assert!(b.queued().is_empty());
        // The queue still takes a whole text.
        feed(&mut c, &mut b, 3, ContinuityInput::QueueAdd { tab: TAB, text: "run the tests".into(), whole_chars: None });
        assert_eq!(b.queued(), ["run the tests"]);
    }

    // R: B7, Q5 — a worker restart with a batch in flight: the confirmation that arrives
    // after it still removes exactly that batch, and nothing is typed again.
    #[test]
    fn a_batch_in_flight_survives_a_worker_restart_and_is_removed_once_confirmed() {
        let (mut c, _) = bound_with_auto(false);
        let mut b = Browser::default();
        feed(&mut c, &mut b, 1, ContinuityInput::QueueAdd { tab: TAB, text: "next step".into(), whole_chars: None });
        let id = queue_id(&c);
        let mut c = restart(&c, 5);
        b.drain(&mut c, 5);
        b.take_log();
        feed(
            &mut c,
            &mut b,
            6,
            ContinuityInput::PageReported { tab: TAB, report: PageReport { user_turns: 1, markers: vec![id], ..idle_page() } },
        );
        assert!(b.queued().is_empty(), "the marker confirmed it after the restart");
        assert!(!b.take_log().contains("deliver"));
    }

    // R: Q8 — a batch that may have landed is not resent by itself; the HUD says so, and a
    // Queue click with an empty composer sends it again.
    #[test]
    fn an_unconfirmed_batch_waits_for_the_user_and_an_empty_queue_click_retries_it_q8() {
        let (mut c, _) = bound_with_auto(false);
        let mut b = Browser::default();
        feed(&mut c, &mut b, 1, ContinuityInput::QueueAdd { tab: TAB, text: "deploy".into(), whole_chars: None });
        b.take_log();
        let give_up = 1 + TYPING_DEADLINE_MS + UNCERTAIN_GIVE_UP_MS + 1;
        while let Some(at) = c.next_deadline().filter(|at| *at <= give_up) {
            c.handle_timeout(at);
            b.drain(&mut c, at);
        }
        let log = b.take_log();
        assert!(log.contains("could not tell whether your queued messages reached this chat"), "{log}");
        assert!(!log.contains("deliver"), "{log}");
        assert_eq!(c.page_view(TAB).and_then(|v| v.queue).map(|q| q.state), Some("undelivered"));
        assert_eq!(b.queued(), ["deploy"]);
        feed(&mut c, &mut b, give_up + 1, ContinuityInput::QueueAdd { tab: TAB, text: "  ".into(), whole_chars: None });
        let log = b.take_log();
        assert!(log.contains("deliver qb:"), "{log}");
    }

    // R: Q7 — clearing (confirmed in the HUD) empties this conversation's queue.
    #[test]
    fn clearing_empties_the_conversations_queue_q7() {
        let (mut c, _) = bound_with_auto(false);
        let mut b = Browser::default();
        feed(&mut c, &mut b, 0, ContinuityInput::PageReported { tab: TAB, report: page(true) });
        feed(&mut c, &mut b, 1, ContinuityInput::QueueAdd { tab: TAB, text: "a".into(), whole_chars: None });
        feed(&mut c, &mut b, 2, ContinuityInput::QueueClear { tab: TAB, question: Some("queueClearConfirm".into()) });
        assert!(b.queued().is_empty());
        assert!(b.take_log().ends_with("notice The queue of this conversation is cleared."));
        feed(&mut c, &mut b, 3, ContinuityInput::PageReported { tab: TAB, report: idle_page() });
        assert!(!b.take_log().contains("deliver"));
    }
}

proptest! {
    /// Q1: a queued text is kept as typed, with its line ends made LF — CRLF and a lone CR
    /// each become one LF — and its surrounding whitespace trimmed (the same as the plain
    /// `replace` definition).
    #[test]
    fn q1_normalize_text_makes_line_ends_lf_and_trims(text in "[a \r\n\t中]{0,24}") {
        let reference = text.replace("\r\n", "\n").replace('\r', "\n").trim().to_owned();
        prop_assert_eq!(ext_core::queue::normalize_text(&text), reference);
    }
}

// Review38 L5: a record kept aside sits three levels down in the stored list; one nested to
// the shell's depth limit made the list unreadable (then read as one older copy, so a
// removal took every record). Such a record is refused before the list is written.
#[test]
fn a_record_nested_too_deep_for_the_list_is_not_kept_aside() {
    use ext_core::queue::{aside_records, aside_with, ASIDE_RECORD_MAX_DEPTH};
    let nested = |levels: u32| (0..levels).fold(serde_json::json!("q"), |inner, _| serde_json::json!([inner]));
    let kept = aside_with(None, nested(ASIDE_RECORD_MAX_DEPTH), 5).expect("at the limit it is kept");
    let refused = aside_with(Some(kept.clone()), nested(ASIDE_RECORD_MAX_DEPTH + 1), 6).expect_err("one deeper is refused");
    assert!(refused.contains("nests deeper than 61 levels"), "{refused}");
    // The list that holds the deepest record kept still crosses the shell's limit: 64 levels.
    fn depth(value: &serde_json::Value) -> u32 {
        match value {
            serde_json::Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
            serde_json::Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }
    assert_eq!(depth(&kept), ext_core::limits::MAX_JSON_DEPTH);
    assert_eq!(aside_records(Some(kept)).len(), 1);
}
