//! The start view (issue 28, `ext_core::worker::start_view`): the record the worker keeps
//! under `START_VIEW_KEY` for `worker.js` to post while a restarted worker's wasm compiles.
//! Transcripts: the record names the pages seen (bounded, allowed origins only) and, for each,
//! exactly the `hud` message a worker restored from the snapshot written with it posts at
//! that page's connect — also after a binding, Auto on and a page's facts, none of which a
//! restart shows before the page reports again. The property world checks the same at every
//! restart (`continuity_props.rs`, `check_start_view`).

use ext_core::binding::CatalogWorkspace;
use ext_core::continuity::{Continuity, PageReport};
use ext_core::snapshot::Snapshot;
use ext_core::worker::{
    start_view, PageInput, PortCommand, Worker, WorkerInput, WorkerOutput, PERSIST_DEBOUNCE_MS, START_LOCAL_KEYS, START_VIEW_KEY,
    START_VIEW_PAGES, STORAGE_KEY,
};
use serde_json::Value;

const VERSION: &str = "0.1.0";

fn parse(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

fn chat(n: u32) -> String {
    format!("https://chatgpt.com/c/0a000000-0000-4000-8000-{n:012}")
}

fn drain(worker: &mut Worker) -> Vec<WorkerOutput> {
    std::iter::from_fn(|| worker.poll()).collect()
}

/// What `now` + the persist debounce writes: the snapshot's and the start view's values.
fn written(worker: &mut Worker, now: u64) -> (Option<Value>, Option<Value>) {
    worker.handle(now + PERSIST_DEBOUNCE_MS, WorkerInput::Timer);
    let (mut snapshot, mut view) = (None, None);
    for output in drain(worker) {
        match output {
            WorkerOutput::StorageWrite { key, value, .. } if key == STORAGE_KEY => snapshot = Some(value),
            WorkerOutput::StorageWrite { token, key, value } if key == START_VIEW_KEY => {
                assert_eq!(token, 0, "fire and forget");
                view = Some(value);
            }
            _ => {}
        }
    }
    (snapshot, view)
}

/// A worker restored from `snapshot` as the shell starts it (`Start`; the page's port
/// connects before the timer that opens the native port): its first `hud` post to `url`.
fn restored_first_view(snapshot: &Value, url: &str) -> Value {
    let restored = Snapshot::read(snapshot).expect("the snapshot reads");
    let mut worker = Worker::new(VERSION, Continuity::from_snapshot(restored, 50_000, "e2"), parse);
    worker.handle(50_000, WorkerInput::Start);
    worker.handle(50_000, WorkerInput::PortConnected { port: 7, tab: Some(3), panel: false, url: url.to_owned() });
    let posts: Vec<Value> = drain(&mut worker)
        .into_iter()
        .filter_map(|output| match output {
            WorkerOutput::Post { port: 7, message } => Some(message),
            _ => None,
        })
        .collect();
    assert_eq!(posts.first().map(|m| m["type"].clone()), Some("profile".into()), "the live connect posts the profile first");
    posts.into_iter().find(|m| m["type"] == "hud").expect("a hud view at the connect")
}

fn without_marker(mut stored: Value) -> Value {
    let marker = stored.as_object_mut().and_then(|m| m.remove("provisional"));
    assert_eq!(marker, Some(Value::Bool(true)), "the start view is marked provisional");
    stored
}

fn report(url: &str) -> PageReport {
    PageReport {
        url: url.to_owned(),
        composer: true,
        generation: Some("chatgpt.classic".into()),
        page_load: "load-1".into(),
        user_turns: 1,
        last_human_turn_id: Some("u-1".into()),
        ..PageReport::default()
    }
}

#[test]
fn the_start_view_is_read_with_the_start_and_its_key_is_in_the_contracts() {
    assert!(START_LOCAL_KEYS.contains(&START_VIEW_KEY));
    let contracts = ext_core::contracts::contracts();
    assert_eq!(contracts["start_keys"]["view"], START_VIEW_KEY);
}

#[test]
fn a_bound_page_with_auto_on_is_shown_at_a_restart_exactly_what_the_restored_worker_posts() {
    let mut worker = Worker::new(VERSION, Continuity::with_epoch("e1"), parse);
    worker.handle(1_000, WorkerInput::Start);
    worker.handle(1_000, WorkerInput::Timer);
    worker.handle(1_000, WorkerInput::PortConnected { port: 1, tab: Some(1), panel: false, url: chat(1) });
    worker.handle(1_000, WorkerInput::PortConnected { port: 2, tab: None, panel: true, url: String::new() });
    worker.handle(1_000, WorkerInput::Page { port: 1, message: PageInput::Facts { url: chat(1), report: Some(report(&chat(1))) } });
    let workspace = CatalogWorkspace { workspace_id: "w1".into(), label: "api".into() };
    worker.handle(1_000, WorkerInput::Page { port: 2, message: PageInput::Command(PortCommand::Bind { tab_id: 1, workspace }) });
    worker.handle(1_000, WorkerInput::Page { port: 1, message: PageInput::Command(PortCommand::HudAction("toggle_auto")) });
    let live = drain(&mut worker);
    let auto_on =
        live.iter().any(|o| matches!(o, WorkerOutput::Post { port: 1, message } if message["view"]["continuity"]["auto"] == "on"));
    assert!(auto_on, "the live page shows Auto on: {live:?}");
    let (snapshot, record) = written(&mut worker, 1_000);
    let (snapshot, record) = (snapshot.expect("a snapshot write"), record.expect("the start view is written with it"));
    assert_eq!(record["version"], VERSION);
    let pages = record["pages"].as_object().expect("pages by URL");
    assert_eq!(pages.keys().collect::<Vec<_>>(), vec![&chat(1)], "only the page seen (a panel has none)");
    let stored = without_marker(pages[&chat(1)].clone());
    assert_eq!(stored, restored_first_view(&snapshot, &chat(1)));
    // A restart shows no Auto, binding or delivery before the page reports again.
    assert_eq!(stored["view"]["continuity"], Value::Null);
    assert_eq!(stored["view"]["companion"]["key"], "companionStarting");
    assert_eq!(stored, without_marker(start_view(VERSION)));
    // Auto off again: the stored view does not change (it shows no Auto), nothing is rewritten.
    worker.handle(2_000, WorkerInput::Page { port: 1, message: PageInput::Command(PortCommand::HudAction("toggle_auto")) });
    drain(&mut worker);
    let (snapshot, again) = written(&mut worker, 2_000);
    assert_eq!(again, None, "the record is written only when it changed");
    assert_eq!(stored, restored_first_view(&snapshot.expect("a snapshot write"), &chat(1)));
}

/// A fresh worker started at 1 000 ms, with the pages `chat(1..=pages)` connected.
fn started_with_pages(pages: u32) -> Worker {
    let mut worker = Worker::new(VERSION, Continuity::with_epoch("e1"), parse);
    worker.handle(1_000, WorkerInput::Start);
    for n in 1..=pages {
        worker.handle(1_000, WorkerInput::PortConnected { port: n, tab: Some(n), panel: false, url: chat(n) });
    }
    worker
}

#[test]
fn the_record_holds_the_pages_seen_last_of_allowed_origins_only() {
    let mut worker = started_with_pages(10);
    // A page that reports a URL of another site, or an over-long one, adds nothing.
    let long = format!("{}?{}", chat(11), "x".repeat(ext_core::limits::MAX_URL_CHARS));
    for url in ["https://evil.example/c/1".to_owned(), "https://chatgpt.com.evil.example/".to_owned(), long] {
        worker.handle(1_000, WorkerInput::Page { port: 1, message: PageInput::Facts { url, report: None } });
    }
    // A page that navigated reports its new URL: it is kept too.
    worker.handle(1_000, WorkerInput::Page { port: 10, message: PageInput::Facts { url: chat(12), report: None } });
    drain(&mut worker);
    let (_, record) = written(&mut worker, 1_000);
    let record = record.expect("written");
    let urls: Vec<&String> = record["pages"].as_object().expect("pages").keys().collect();
    let newest: Vec<String> = [12, 10, 9, 8, 7, 6, 5, 4].into_iter().map(chat).collect();
    assert_eq!(urls.len(), START_VIEW_PAGES);
    for url in &newest {
        assert!(urls.contains(&url), "{url} kept: {urls:?}");
    }
    // The pages seen again add nothing: nothing is written.
    worker.handle(3_000, WorkerInput::PortConnected { port: 20, tab: Some(12), panel: false, url: chat(12) });
    drain(&mut worker);
    assert_eq!(written(&mut worker, 3_000).1, None);
}

// Review 37 L7 (failed before: the first write of a new worker life held only the page that
// connected): the record was rebuilt from empty each worker life, dropping the pages that
// did not reconnect. The start hands the worker the record it read; of this version, its
// pages are kept (bounded as before); a record of another version seeds nothing.
#[test]
fn a_new_worker_life_keeps_the_pages_of_the_stored_record() {
    let mut first = started_with_pages(3);
    drain(&mut first);
    let stored = written(&mut first, 1_000).1.expect("written");
    let urls = |record: &Value| -> Vec<String> {
        let mut urls: Vec<String> = record["pages"].as_object().expect("pages").keys().cloned().collect();
        urls.sort();
        urls
    };
    let next_life = |record: Value| {
        let mut worker = Worker::new(VERSION, Continuity::with_epoch("e2"), parse);
        worker.handle(50_000, WorkerInput::StartView { record: Some(record) });
        worker.handle(50_000, WorkerInput::Start);
        worker.handle(50_000, WorkerInput::PortConnected { port: 4, tab: Some(4), panel: false, url: chat(4) });
        drain(&mut worker);
        written(&mut worker, 50_000).1.expect("written")
    };
    assert_eq!(urls(&next_life(stored.clone())), [1, 2, 3, 4].map(chat), "the pages that did not reconnect are kept");
    // Another version's record, or one that names pages of other sites or too many, seeds
    // only what this version may write.
    let mut older = stored.clone();
    older["version"] = "0.0.9".into();
    assert_eq!(urls(&next_life(older)), [chat(4)]);
    let mut crowded = stored;
    let pages = crowded["pages"].as_object_mut().expect("pages");
    let view = pages[&chat(1)].clone();
    pages.insert("https://evil.example/c/1".into(), view.clone());
    for n in 10..30 {
        pages.insert(chat(n), view.clone());
    }
    let seeded = urls(&next_life(crowded));
    assert_eq!(seeded.len(), START_VIEW_PAGES, "{seeded:?}");
    assert!(seeded.contains(&chat(4)) && seeded.iter().all(|u| u.starts_with("https://chatgpt.com/")), "{seeded:?}");
}
