//! Retention (issue 26 Found 8 "storage grows without bound", SPEC W4) on real SQLite files:
//! the stores are filled past their limits through their own APIs, then reclaimed.

use companion::bridge::store::{BridgeStore, StoredResults};
use companion::inbox::store::InboxStore;
use companion::journal::store::JournalStore;
use companion::retention::{Limits, Reclaimed, Retention, DEFAULTS};
use companion::work_memory::store::WorkMemoryStore;
use companion::work_memory::WorkMemory;
use continuity_protocol::journal::ContinuityAppendParams;
use continuity_protocol::{LocalMethod, TurnRole};
use serde_json::{json, Value};

use crate::support::{output_within, LineClient, TestHome};

const DAY: i64 = 24 * 3600 * 1000;
const NOW: i64 = 400 * DAY;

fn journal_turn(conversation: &str, index: usize) -> ContinuityAppendParams {
    ContinuityAppendParams {
        continuity_id: None,
        conversation_id: conversation.to_owned(),
        message_id: format!("{conversation}-msg-{index}"),
        role: if index.is_multiple_of(2) { TurnRole::User } else { TurnRole::Assistant },
        text: format!("turn {index} of {conversation}"),
        observed_at: 1_000 + index as u64,
        project_id: None,
        workspace_id: None,
        conversation_url: None,
        title: None,
    }
}

fn wm(store: &mut WorkMemoryStore, method: LocalMethod, params: Value) -> Value {
    let call = companion::work_memory::checked(method, params).expect("valid params");
    call.run(store).expect("work memory call")
}

fn count(path: &std::path::Path, sql: &str) -> i64 {
    let conn = rusqlite::Connection::open(path).expect("open");
    conn.query_row(sql, [], |r| r.get(0)).expect("count")
}

/// Fills two chains past the journal and Work Memory limits — one with a verified checkpoint
/// part-way, one without any — plus old delivered and undelivered bridge results and old
/// acknowledged and unacknowledged inbox tasks; then reclaims. Behind the checkpoint the
/// oldest rows go (never the anchor, never the goal); the chain without a checkpoint keeps
/// every row; undelivered results and unacknowledged tasks stay. A checkpoint whose stored
/// digest no longer recomputes protects nothing from being kept: it is not trusted, so
/// nothing behind it is reclaimed either. Failed before: there was no retention at all.
#[test]
fn reclaims_only_behind_a_verified_checkpoint_and_ages_out_finished_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let mut journal = JournalStore::open(&path).expect("journal");
    let mut memory = WorkMemoryStore::open(&path).expect("work memory");
    let mut bridge = BridgeStore::open(&path).expect("bridge");
    let _inbox = InboxStore::open(&path).expect("inbox");
    let retention = Retention::open(&path).expect("retention");
    let limits = Limits { journal_turns: 100, work_memory_turns: 100, bridge_result_days: 30, inbox_days: 30 };
    retention.set_limits(&limits).expect("limits");

    let turns = 160;
    let mut chains = Vec::new();
    for conversation in ["kept", "checked"] {
        journal.append_batch((0..turns).map(|i| journal_turn(conversation, i)), 2_000).expect("journal fill");
        let chain = journal.chain_of_conversation(conversation).expect("read").map(|c| c.continuity_id).expect("journaled");
        wm(
            &mut memory,
            LocalMethod::WorkMemoryBind,
            json!({"continuity_id": chain, "project_ref": "g-p-1", "repo_id": "repo", "work_chain_id": conversation,
            "provider": "chatgpt", "session_ref": format!("chatgpt:conv:{conversation}"), "bound_at": 1}),
        );
        for i in 0..turns {
            wm(
                &mut memory,
                LocalMethod::WorkMemoryAppendTurn,
                json!({"continuity_id": chain, "provider": "chatgpt", "session_ref": format!("chatgpt:conv:{conversation}"),
                "provider_message_ref": format!("{conversation}-msg-{i}"), "role": "user", "text": format!("turn {i}"), "observed_at": 10}),
            );
        }
        chains.push(chain);
    }
    // The "checked" chain gets a checkpoint through its turn 120 (of 160).
    let checked = &chains[1];
    let anchor: i64 = count(&path, "SELECT id FROM wm_turns WHERE provider_message_ref = 'checked-msg-120'");
    let put = wm(
        &mut memory,
        LocalMethod::WorkMemoryCheckpointPut,
        json!({"continuity_id": checked, "expected_checkpoint_revision": 0,
        "summary": "goal and decisions so far", "checkpoint_json": "{}", "through_message_id": format!("m{anchor}"), "created_at": 20}),
    );
    assert_eq!(put["ok"], true, "{put}");

    let results = |id: &str| StoredResults { delivery_id: id.to_owned(), text: format!("results {id}"), calls: 1, delivered: false };
    bridge.store_results("c1", "m1", &results("old-delivered"), NOW - 40 * DAY).expect("store");
    bridge.delivered("old-delivered", NOW - 40 * DAY).expect("delivered");
    bridge.store_results("c1", "m2", &results("old-undelivered"), NOW - 40 * DAY).expect("store");
    bridge.store_results("c1", "m3", &results("new-delivered"), NOW - DAY).expect("store");
    bridge.delivered("new-delivered", NOW - DAY).expect("delivered");
    let conn = rusqlite::Connection::open(&path).expect("open");
    for (task, acked_at) in [("acked-old", Some(NOW - 40 * DAY)), ("acked-new", Some(NOW - DAY)), ("unacked-old", None)] {
        conn.execute(
            "INSERT INTO inbox_tasks (task_id, dispatch_id, browser_session_ref, workspace_id, pane_id, prompt_preview, state, after_seq, created_at, finished_at, result, acked_at)
             VALUES (?1, ?1, 'chatgpt:conv:c1', 'w1', 'w1:p1', 'do it', 'done', 0, ?2, ?2, '{}', ?3)",
            rusqlite::params![task, NOW - 50 * DAY, acked_at],
        )
        .expect("inbox row");
    }

    let before = retention.sizes().expect("sizes");
    assert_eq!(
        before.iter().map(|s| (s.store, s.rows)).collect::<Vec<_>>(),
        vec![("journal", 320), ("work_memory", 321), ("bridge_results", 3), ("inbox", 3)]
    );

    let reclaimed = retention.reclaim(NOW).expect("reclaim");
    assert_eq!(
        reclaimed,
        Reclaimed {
            journal_turns: 60,
            work_memory_turns: 60,
            work_memory_evidence: 0,
            work_memory_checkpoints: 0,
            bridge_results: 1,
            bridge_calls: 0,
            bridge_batches: 0,
            inbox_tasks: 1,
            exec_runs: 0,
            withheld: 120
        },
        "60 of each store behind the checkpoint; the chain without one withholds 60 + 60"
    );
    let in_chain = |table: &str, chain: &str| count(&path, &format!("SELECT count(*) FROM {table} WHERE continuity_id = '{chain}'"));
    assert_eq!(
        (in_chain("journal_turns", &chains[0]), in_chain("wm_turns", &chains[0])),
        (160, 160),
        "nothing behind no checkpoint is lost"
    );
    assert_eq!((in_chain("journal_turns", checked), in_chain("wm_turns", checked)), (100, 100));
    let kept = |sql: &str| count(&path, sql) == 1;
    assert!(kept(&format!("SELECT count(*) FROM wm_turns WHERE id = {anchor}")), "the anchor stays");
    assert!(kept("SELECT count(*) FROM journal_turns WHERE message_id = 'checked-msg-0'"), "the goal (first user turn) stays");
    assert!(kept("SELECT count(*) FROM journal_turns WHERE message_id = 'checked-msg-61'"), "the oldest after the 60 reclaimed stays");
    assert!(!kept("SELECT count(*) FROM journal_turns WHERE message_id = 'checked-msg-60'"));
    assert_eq!(count(&path, "SELECT count(*) FROM journal_fts WHERE journal_fts MATCH 'turn'"), 260, "the search index follows");
    assert_eq!(count(&path, "SELECT count(*) FROM wm_fts WHERE source_kind = 'turn'"), 260);
    assert!(kept("SELECT count(*) FROM bridge_results WHERE delivery_id = 'old-undelivered'"), "an undelivered result stays");
    // An aged-out result keeps a tombstone: a replay finds it delivered, with no text.
    // Failed before: the row was deleted, so a replay rebuilt it undelivered and counted the round again.
    let tombstone = bridge.results("old-delivered").expect("read").expect("a tombstone stays");
    assert!(tombstone.delivered && tombstone.text.is_empty(), "{tombstone:?}");
    assert!(kept("SELECT count(*) FROM inbox_tasks WHERE task_id = 'unacked-old'"), "an unacknowledged task stays");
    assert!(!kept("SELECT count(*) FROM inbox_tasks WHERE task_id = 'acked-old'"));

    // Work Memory still resumes the checked chain from its checkpoint.
    let resumed =
        wm(&mut memory, LocalMethod::WorkMemoryResume, json!({"project_ref": "g-p-1", "repo_id": "repo", "work_chain_id": "checked"}));
    assert_eq!(resumed["ok"], true, "{resumed}");

    // A second run has nothing left to take but still withholds the unchecked chain.
    assert_eq!(retention.reclaim(NOW).expect("again"), Reclaimed { withheld: 120, ..Reclaimed::default() });

    // A checkpoint whose stored digest does not recompute is not trusted.
    conn.execute("UPDATE wm_checkpoints SET summary = 'edited behind our back'", []).expect("tamper");
    journal.append_batch((turns..turns + 20).map(|i| journal_turn("checked", i)), 3_000).expect("more");
    let after_tamper = retention.reclaim(NOW).expect("tampered");
    assert_eq!(after_tamper.journal_turns, 0, "nothing goes behind an unverified checkpoint");
    let _ = WorkMemory::open(&path).expect("still opens");
}

/// `retention.get` / `retention.set` through the real runtime: the defaults and bounds, a
/// value outside its bound refused with the bound in the message, a good one stored.
#[test]
fn retention_methods_show_and_set_limits_within_bounds() {
    let home = TestHome::new();
    let _runtime = home.start_runtime();
    let mut client = LineClient::connect(&home.socket());
    let got = client.call("r1", "retention.get", json!({}));
    assert_eq!(got["result"]["type"], "retention", "{got}");
    assert_eq!(got["result"]["limits"]["journal_turns"], DEFAULTS.journal_turns);
    assert_eq!(got["result"]["bounds"]["inbox_days"], json!({"min": 1, "max": 3650, "default": 30}));
    let stores: Vec<&str> =
        got["result"]["sizes"].as_array().map(|s| s.iter().filter_map(|s| s["store"].as_str()).collect()).unwrap_or_default();
    assert_eq!(stores, ["journal", "work_memory", "bridge_results", "inbox"]);
    let refused = client.call("r2", "retention.set", json!({"limits": {"inbox_days": 0}}));
    assert_eq!(refused["error"]["code"], "bad_request", "{refused}");
    assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains("from 1 to 3650")), "{refused}");
    // An unknown param is refused by name, not ignored (failed before: it was ignored).
    let stray = client.call("r2b", "retention.set", json!({"limits": {"inbox_days": 7}, "limit": {"inbox_days": 1}}));
    assert_eq!(stray["error"]["code"], "bad_request", "{stray}");
    assert!(stray["error"]["message"].as_str().is_some_and(|m| m.contains("`limit`")), "{stray}");
    let set = client.call("r3", "retention.set", json!({"limits": {"inbox_days": 7, "journal_turns": 2000}}));
    assert_eq!(
        set["result"]["limits"],
        json!({"journal_turns": 2000, "work_memory_turns": DEFAULTS.work_memory_turns, "bridge_result_days": 30, "inbox_days": 7}),
        "{set}"
    );
    // Truthful (leftovers30 #5): the answer says whether reclaiming goes on after it; here
    // nothing was over the limits, so it is done.
    assert_eq!(set["result"]["reclaiming"], false, "{set}");
    let again = client.call("r4", "retention.get", json!({}));
    assert_eq!(again["result"]["limits"]["inbox_days"], 7, "kept in state.db");

    // The doctor prints each store's size and limit, and the extension's last hello.
    let hello = client.call("h", "hello", json!({"protocol": 1, "extension_version": "0.1.0"}));
    assert_eq!(hello["result"]["compatible"], false);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let doctor = output_within(
        &mut home.command(&["doctor", "--browser", "chromium", "--user-data-dir", home.home().to_str().expect("utf-8")]),
        "doctor",
    );
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        text.contains(
            "ok    storage journal: 0 rows, 0 bytes of text (limit 2000 turns per chain, reclaimed behind a verified checkpoint)"
        ),
        "{text}"
    );
    assert!(text.contains("ok    storage inbox: 0 rows, 0 bytes of text (acknowledged tasks aged out after 7 days)"), "{text}");
    assert!(
        text.contains("FAIL  extension 0.1.0 (protocol 1) does not match the runtime") && text.contains("fix: update the extension"),
        "{text}"
    );
}

/// The `state.db` under a test home (wherever the runtime keeps it).
fn find_state_db(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|name| name == "state.db") {
            return Some(path);
        }
        if path.is_dir() {
            if let Some(found) = find_state_db(&path) {
                return Some(found);
            }
        }
    }
    None
}

/// Review fix30 MED 2 (failed before): once `retention.set` stored the limits its answer is a
/// success — reading the sizes afterwards is best-effort: when it fails the answer leaves
/// `sizes` out (the page keeps the ones it shows) instead of answering an error that reads
/// as "not saved".
#[test]
fn a_retention_set_whose_sizes_cannot_be_read_still_answers_that_the_limits_are_stored() {
    let home = TestHome::new();
    let _runtime = home.start_runtime();
    let mut client = LineClient::connect(&home.socket());
    // A store whose sizes cannot be read (its text column is not where sizes looks).
    let db = find_state_db(home.dir.path()).expect("state.db");
    let conn = rusqlite::Connection::open(&db).expect("open");
    conn.execute_batch("ALTER TABLE inbox_tasks RENAME COLUMN prompt_preview TO preview").expect("rename");
    drop(conn);
    let broken = client.call("r2", "retention.get", json!({}));
    assert!(broken["error"]["message"].as_str().is_some_and(|m| m.contains("prompt_preview")), "sizes fail: {broken}");
    let set = client.call("r3", "retention.set", json!({"limits": {"inbox_days": 9}}));
    assert_eq!(set["result"]["limits"]["inbox_days"], 9, "a success: {set}");
    assert!(set["result"].get("sizes").is_none(), "no sizes rather than wrong ones: {set}");
    let conn = rusqlite::Connection::open(&db).expect("open");
    let stored: i64 = conn.query_row("SELECT value FROM retention_limits WHERE store = 'inbox_days'", [], |r| r.get(0)).expect("stored");
    assert_eq!(stored, 9);
}

/// Reclaim on one thread while another connection commits inserts in a loop: every reclaim
/// succeeds. Failed before: reclaim opened a deferred transaction, read, then upgraded to a
/// write, and SQLite answered SQLITE_BUSY_SNAPSHOT whenever the other connection had
/// committed in between (the busy timeout does not retry that), so the hourly reclaim of a
/// busy runtime failed.
#[test]
fn reclaim_succeeds_while_another_connection_commits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let mut journal = JournalStore::open(&path).expect("journal");
    let _memory = WorkMemoryStore::open(&path).expect("work memory");
    let _bridge = BridgeStore::open(&path).expect("bridge");
    let _inbox = InboxStore::open(&path).expect("inbox");
    let retention = Retention::open(&path).expect("retention");
    for index in 0..300 {
        journal.append(&journal_turn("busy", index), 1_000).expect("append");
    }
    drop(journal);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let committed = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writer = {
        let path = path.clone();
        let stop = stop.clone();
        let committed = committed.clone();
        std::thread::spawn(move || {
            let conn = companion::db::open_connection(&path).expect("writer");
            conn.execute_batch("CREATE TABLE IF NOT EXISTS scratch (n INTEGER)").expect("scratch");
            let mut n = 0_i64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                conn.execute("INSERT INTO scratch (n) VALUES (?1)", [n]).expect("insert");
                n += 1;
                committed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                // A busy runtime, not a lock hog: the busy handler of the other connection
                // gets its turn.
                std::thread::sleep(std::time::Duration::from_micros(500));
            }
        })
    };
    // Reclaim until the writer has committed 500 times meanwhile (at most 60 s).
    let mut failures = Vec::new();
    let mut runs = 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while committed.load(std::sync::atomic::Ordering::Relaxed) < 500 && std::time::Instant::now() < deadline {
        if committed.load(std::sync::atomic::Ordering::Relaxed) > 0 {
            runs += 1;
            if let Err(error) = retention.reclaim(NOW) {
                failures.push(error.to_string());
            }
        } else {
            std::thread::yield_now();
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().expect("writer thread");
    assert!(
        committed.load(std::sync::atomic::Ordering::Relaxed) >= 500 && runs > 0,
        "the writer committed 500 times while reclaim ran {runs} times"
    );
    assert!(failures.is_empty(), "reclaim failed {} of {runs} times: {:?}", failures.len(), failures.first());
}

/// Store sizes count bytes, not characters: a journal turn of 4 CJK characters is 12 bytes
/// of UTF-8. Failed before: `length(text)` counted 4.
#[test]
fn sizes_count_bytes_of_text_not_characters() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let mut journal = JournalStore::open(&path).expect("journal");
    let retention = Retention::open(&path).expect("retention");
    let mut turn = journal_turn("bytes", 0);
    turn.text = "续写对话".to_owned();
    journal.append(&turn, 1_000).expect("append");
    let sizes = retention.sizes().expect("sizes");
    let journal_size = sizes.iter().find(|size| size.store == "journal").expect("journal size");
    assert_eq!((journal_size.rows, journal_size.bytes), (1, "续写对话".len() as u64));
}

/// A reclaim of more rows than one batch removes them all, batch by batch, and withholds
/// nothing it removed: 1 300 turns of a chain with a verified checkpoint at its turn 1 250,
/// limit 100, leave exactly the 100 newest (the anchor among them).
#[test]
fn reclaim_removes_more_than_a_batch_in_batches() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let mut memory = WorkMemoryStore::open(&path).expect("work memory");
    let retention = Retention::open(&path).expect("retention");
    retention.set_limits(&Limits { journal_turns: 100, work_memory_turns: 100, bridge_result_days: 30, inbox_days: 30 }).expect("limits");
    let chain = "chain-batch";
    wm(
        &mut memory,
        LocalMethod::WorkMemoryBind,
        json!({"continuity_id": chain, "project_ref": "g-p-1", "repo_id": "repo", "work_chain_id": "batch",
        "provider": "chatgpt", "session_ref": "chatgpt:conv:batch", "bound_at": 1}),
    );
    for i in 0..1_300 {
        wm(
            &mut memory,
            LocalMethod::WorkMemoryAppendTurn,
            json!({"continuity_id": chain, "provider": "chatgpt", "session_ref": "chatgpt:conv:batch",
            "provider_message_ref": format!("batch-msg-{i}"), "role": "user", "text": format!("turn {i}"), "observed_at": 10}),
        );
    }
    let anchor: i64 = count(&path, "SELECT id FROM wm_turns WHERE provider_message_ref = 'batch-msg-1250'");
    wm(
        &mut memory,
        LocalMethod::WorkMemoryCheckpointPut,
        json!({"continuity_id": chain, "expected_checkpoint_revision": 0,
        "summary": "so far", "checkpoint_json": "{}", "through_message_id": format!("m{anchor}"), "created_at": 20}),
    );
    let reclaimed = retention.reclaim(NOW).expect("reclaim");
    assert_eq!((reclaimed.work_memory_turns, reclaimed.withheld), (1_200, 0));
    assert_eq!(count(&path, "SELECT count(*) FROM wm_turns"), 100);
    assert_eq!(count(&path, &format!("SELECT count(*) FROM wm_turns WHERE id = {anchor}")), 1);
}

/// Leftovers30 #5: `retention.set` reclaims only within a time budget before it answers (a
/// large `state.db` once outlasted the worker's 10 s wait, and the options page said "not
/// saved" after a save that succeeded); the rest goes on after the answer. With no budget
/// one batch runs and the reclaim says it is not finished; what is left goes at the next.
#[test]
fn a_reclaim_within_a_budget_stops_between_batches_and_says_whether_it_finished() {
    let (_dir, path, retention) = inbox_world();
    let batch = companion::retention::BATCH as usize;
    acked_tasks(&path, batch + 100, 50);
    let (first, finished) = retention.reclaim_within(NOW, std::time::Duration::ZERO).expect("reclaim");
    assert_eq!((first.inbox_tasks, finished), (batch as u64, false), "one batch, then it stops and says so");
    let (rest, finished) = retention.reclaim_within(NOW, std::time::Duration::from_secs(3_600)).expect("reclaim");
    assert_eq!((rest.inbox_tasks, finished), (100, true));
    let (none, finished) = retention.reclaim_within(NOW, std::time::Duration::ZERO).expect("reclaim");
    assert_eq!((none, finished), (Reclaimed::default(), true), "nothing left is finished at once");
}

/// A `state.db` with the inbox's tables (kept while the directory is), and its retention.
fn inbox_world() -> (tempfile::TempDir, std::path::PathBuf, Retention) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    InboxStore::open(&path).expect("inbox");
    let retention = Retention::open(&path).expect("retention");
    (dir, path, retention)
}

/// `count` inbox tasks acknowledged `days_ago` days before `NOW`.
fn acked_tasks(path: &std::path::Path, count: usize, days_ago: i64) {
    let mut conn = rusqlite::Connection::open(path).expect("open");
    let tx = conn.transaction().expect("tx");
    for i in 0..count {
        tx.execute(
            "INSERT INTO inbox_tasks (task_id, dispatch_id, browser_session_ref, workspace_id, pane_id, prompt_preview, state, after_seq, created_at, finished_at, result, acked_at)
             VALUES (?1, ?1, 'chatgpt:conv:c1', 'w1', 'w1:p1', 'do it', 'done', 0, ?2, ?2, '{}', ?2)",
            rusqlite::params![format!("acked-{days_ago}-{i}"), NOW - days_ago * DAY],
        )
        .expect("inbox row");
    }
    tx.commit().expect("commit");
}

/// Review fix30 MED 1 (failed before): a reclaim read the limits once at its start, so an
/// older `retention.set`'s reclaim went on deleting under limits the user had replaced
/// since. Each batch reads the stored limits in its own transaction: 3 batches of tasks
/// acknowledged 50 days ago, `inbox_days = 7`; after the first batch the user stores 365 —
/// only the first batch's rows are gone. LOW 1: a batch that finished the work says so,
/// even when the budget is spent.
#[test]
fn each_reclaim_batch_reads_the_limits_in_force_and_the_last_batch_says_it_finished() {
    let (_dir, path, retention) = inbox_world();
    let user = Retention::open(&path).expect("the options page's connection");
    let batch = companion::retention::BATCH;
    retention.set_limits(&Limits { inbox_days: 7, ..DEFAULTS }).expect("limits");
    acked_tasks(&path, 3 * batch as usize, 50);
    let mut batches = 0;
    let (reclaimed, finished) = retention
        .reclaim_observed(NOW, std::time::Duration::MAX, &mut |_| {
            batches += 1;
            if batches == 1 {
                user.set_limits(&Limits { inbox_days: 365, ..DEFAULTS }).expect("the user's new limits");
            }
        })
        .expect("reclaim");
    assert_eq!((reclaimed.inbox_tasks, finished), (batch, true), "only the first batch went");
    assert_eq!(count(&path, "SELECT count(*) FROM inbox_tasks"), 2 * batch as i64);

    // LOW 1: the batch that removed the last rows finished the work, budget spent or not.
    user.set_limits(&Limits { inbox_days: 7, ..DEFAULTS }).expect("limits");
    let (first, finished) = retention.reclaim_within(NOW, std::time::Duration::ZERO).expect("reclaim");
    assert_eq!((first.inbox_tasks, finished), (batch, false));
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.execute("DELETE FROM inbox_tasks WHERE rowid IN (SELECT rowid FROM inbox_tasks LIMIT 100)", []).expect("fewer than a batch left");
    let (last, finished) = retention.reclaim_within(NOW, std::time::Duration::ZERO).expect("reclaim");
    assert_eq!((last.inbox_tasks, finished), (batch - 100, true), "the last batch finished it");
}

/// Review fix30 MED 1: the reclaims a Save leaves for after its answer are merged into one
/// task (before: one spawn per Save, each under the limits of its start): a Save
/// while it runs asks it for one more pass, and once it ended the next Save starts one.
#[test]
fn background_reclaims_after_saves_are_one_task_asked_for_one_more_pass() {
    let dir = tempfile::tempdir().expect("tempdir");
    let retention = Retention::open(&dir.path().join("state.db")).expect("retention");
    assert!(retention.background_wanted(), "the first Save starts the task");
    assert!(!retention.background_wanted() && !retention.background_wanted(), "later Saves start none");
    assert!(retention.background_again(), "one more pass for them (merged)");
    assert!(!retention.background_again(), "then it ends");
    assert!(retention.background_wanted(), "the next Save starts it again");
}

// Issue 27: `exec_runs`, the idempotency keys of `herdr_exec`, grew without bound.
// Keys older than the retention days go, and over the count limit the oldest go, but never
// a key within its retry window (it could still be retried and must replay, not run).
#[tokio::test]
async fn exec_run_keys_age_out_and_are_bounded_but_never_inside_their_retry_window() {
    use companion::retention::{EXEC_RUNS_KEPT, EXEC_RUN_DAYS, EXEC_RUN_RETRY_MS};
    use companion::tools::exec::{Claim, ExecRuns};
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let runs = ExecRuns::open(&path, "boot1").expect("exec_runs");
    let retention = Retention::open(&path).expect("retention");
    // One finished key past the retention days, one unfinished claim just as old.
    let old = NOW - EXEC_RUN_DAYS * DAY - 1;
    assert_eq!(runs.claim("mcp:old".to_owned(), "f".to_owned(), old).await.expect("claim"), Claim::Claimed);
    runs.finish("mcp:old".to_owned(), &json!({"exit_code": 0})).await.expect("finish");
    assert_eq!(runs.claim("mcp:old-cut".to_owned(), "f".to_owned(), old).await.expect("claim"), Claim::Claimed);
    // Over the count limit: keys past the retry window, and as many inside it.
    let conn = rusqlite::Connection::open(&path).expect("open");
    let past_window = NOW - EXEC_RUN_RETRY_MS - DAY;
    let fresh = NOW - EXEC_RUN_RETRY_MS / 2;
    let extra = EXEC_RUNS_KEPT as i64 + 50;
    conn.execute_batch("BEGIN").expect("begin");
    for n in 0..extra {
        conn.execute(
            "INSERT INTO exec_runs (key, fingerprint, boot_id, started_at, result) VALUES (?1, 'f', 'boot1', ?2, '{}')",
            rusqlite::params![format!("mcp:past-{n}"), past_window + n],
        )
        .expect("insert");
        conn.execute(
            "INSERT INTO exec_runs (key, fingerprint, boot_id, started_at, result) VALUES (?1, 'f', 'boot1', ?2, '{}')",
            rusqlite::params![format!("mcp:fresh-{n}"), fresh + n],
        )
        .expect("insert");
    }
    conn.execute_batch("COMMIT").expect("commit");
    let reclaimed = retention.reclaim(NOW).expect("reclaim");
    // The two old keys, and every key past the window down to the limit.
    assert_eq!(reclaimed.exec_runs, 2 + extra as u64, "{reclaimed:?}");
    let left = |sql: &str| count(&path, sql);
    assert_eq!(left("SELECT count(*) FROM exec_runs WHERE key LIKE 'mcp:fresh-%'"), extra, "a key inside its retry window was reclaimed");
    assert_eq!(left("SELECT count(*) FROM exec_runs WHERE key LIKE 'mcp:past-%'"), 0);
    // A key kept still replays its first result instead of running again.
    assert!(matches!(runs.claim("mcp:fresh-0".to_owned(), "f".to_owned(), NOW).await.expect("claim"), Claim::Done(_)));
    assert_eq!(retention.reclaim(NOW).expect("again").exec_runs, 0, "nothing more to reclaim");
}

// Leftovers of issue 26: `wm_checkpoints` grew by one row (up to 72 KiB) per put, forever.
// A chain keeps its latest checkpoint and the newest WM_CHECKPOINTS_KEPT superseded ones
// (and their search rows), only while the latest verifies; the chain goes on from its
// latest revision. Failed before: every revision stayed.
#[test]
fn superseded_checkpoints_are_bounded_per_chain_behind_a_verified_latest() {
    use companion::retention::WM_CHECKPOINTS_KEPT;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let mut memory = WorkMemoryStore::open(&path).expect("work memory");
    let retention = Retention::open(&path).expect("retention");
    let puts = WM_CHECKPOINTS_KEPT + 31; // the latest, 100 superseded kept, 30 reclaimed
    for chain in ["checked", "tampered"] {
        wm(
            &mut memory,
            LocalMethod::WorkMemoryBind,
            json!({"continuity_id": chain, "project_ref": "g-p-1", "repo_id": "repo", "work_chain_id": chain,
            "provider": "chatgpt", "session_ref": format!("chatgpt:conv:{chain}"), "bound_at": 1}),
        );
        let turn = wm(
            &mut memory,
            LocalMethod::WorkMemoryAppendTurn,
            json!({"continuity_id": chain, "provider": "chatgpt", "session_ref": format!("chatgpt:conv:{chain}"),
            "provider_message_ref": format!("{chain}-msg-1"), "role": "user", "text": "the goal", "observed_at": 10}),
        );
        for revision in 0..puts {
            let put = wm(
                &mut memory,
                LocalMethod::WorkMemoryCheckpointPut,
                json!({"continuity_id": chain, "expected_checkpoint_revision": revision,
                "summary": format!("summary {revision}"), "checkpoint_json": "{}", "through_message_id": turn["message_id"], "created_at": 20}),
            );
            assert_eq!(put["ok"], true, "{put}");
        }
    }
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.execute("UPDATE wm_checkpoints SET summary = 'edited' WHERE continuity_id = 'tampered' AND revision = ?1", [puts as i64])
        .expect("tamper");
    let reclaimed = retention.reclaim(NOW).expect("reclaim");
    assert_eq!(reclaimed.work_memory_checkpoints, 30, "{reclaimed:?}");
    let rows = |chain: &str| count(&path, &format!("SELECT count(*) FROM wm_checkpoints WHERE continuity_id = '{chain}'"));
    assert_eq!(rows("checked"), WM_CHECKPOINTS_KEPT as i64 + 1);
    assert_eq!(rows("tampered"), puts as i64, "nothing goes behind a latest checkpoint that does not verify");
    assert_eq!(count(&path, "SELECT min(revision) FROM wm_checkpoints WHERE continuity_id = 'checked'"), 31);
    assert_eq!(
        count(&path, "SELECT count(*) FROM wm_fts WHERE continuity_id = 'checked' AND source_kind = 'checkpoint'"),
        WM_CHECKPOINTS_KEPT as i64 + 1,
        "the search index follows"
    );
    let next = wm(
        &mut memory,
        LocalMethod::WorkMemoryCheckpointPut,
        json!({"continuity_id": "checked", "expected_checkpoint_revision": puts,
        "summary": "next", "checkpoint_json": "{}", "through_message_id": "m1", "created_at": 30}),
    );
    assert_eq!(next["checkpoint"]["revision"], puts + 1, "{next}");
    assert_eq!(retention.reclaim(NOW).expect("again").work_memory_checkpoints, 1);
}
