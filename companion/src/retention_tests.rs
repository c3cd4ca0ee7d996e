//! Reclaiming Work Memory deletes its search rows by rowid: the work of a reclaim does not
//! grow with the rest of the search index.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use continuity_protocol::LocalMethod;
use serde_json::{json, Value};

use super::*;
use crate::work_memory::store::WorkMemoryStore;

const NOW: i64 = 400 * DAY_MS;

fn wm(store: &mut WorkMemoryStore, method: LocalMethod, params: Value) -> Value {
    crate::work_memory::checked(method, params).expect("valid params").run(store).expect("work memory call")
}

/// A chain of 160 turns with a verified checkpoint at turn 120 (limit 100: 60 to reclaim),
/// and `filler` search rows of another chain; returns the SQLite steps of one reclaim and
/// the chain's turn rows left in the index.
fn reclaim_steps(filler: usize) -> (u64, i64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let mut memory = WorkMemoryStore::open(&path).expect("work memory");
    let retention = Retention::open(&path).expect("retention");
    retention.set_limits(&Limits { work_memory_turns: 100, ..DEFAULTS }).expect("limits");
    let session = "chatgpt:conv:c";
    wm(
        &mut memory,
        LocalMethod::WorkMemoryBind,
        json!({"continuity_id": "wc-1", "project_ref": "g-p-1", "repo_id": "repo", "work_chain_id": "c",
        "provider": "chatgpt", "session_ref": session, "bound_at": 1}),
    );
    let mut ids = Vec::new();
    for i in 0..160 {
        let added = wm(
            &mut memory,
            LocalMethod::WorkMemoryAppendTurn,
            json!({"continuity_id": "wc-1", "provider": "chatgpt", "session_ref": session,
            "provider_message_ref": format!("msg-{i}"), "role": "user", "text": format!("turn {i}"), "observed_at": 10}),
        );
        ids.push(added["message_id"].as_str().expect("an id").to_owned());
    }
    let put = wm(
        &mut memory,
        LocalMethod::WorkMemoryCheckpointPut,
        json!({"continuity_id": "wc-1", "expected_checkpoint_revision": 0, "summary": "so far", "checkpoint_json": "{}",
        "through_message_id": ids[120], "created_at": 20}),
    );
    assert_eq!(put["ok"], true, "{put}");
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.execute_batch("BEGIN").expect("begin");
    for n in 0..filler {
        conn.execute(
            "INSERT INTO wm_fts (rowid, body, continuity_id, source_kind, source_id) VALUES (?1, 'other text', 'wc-2', 'turn', 'm0')",
            [-(n as i64) - 1],
        )
        .expect("filler");
    }
    conn.execute_batch("COMMIT").expect("commit");
    let steps = Arc::new(AtomicU64::new(0));
    let counted = steps.clone();
    retention.conn().progress_handler(
        100,
        Some(move || {
            counted.fetch_add(1, Ordering::Relaxed);
            false
        }),
    );
    let reclaimed = retention.reclaim(NOW).expect("reclaim");
    assert_eq!(reclaimed.work_memory_turns, 60, "{reclaimed:?}");
    retention.conn().progress_handler(100, None::<fn() -> bool>);
    let indexed: i64 = conn
        .query_row("SELECT count(*) FROM wm_fts WHERE continuity_id = 'wc-1' AND source_kind = 'turn'", [], |r| r.get(0))
        .expect("count");
    (steps.load(Ordering::Relaxed), indexed)
}

/// Leftovers31 (failed before): every batch deleted its search rows with
/// `DELETE FROM wm_fts WHERE continuity_id = ?`, a scan of the whole index (its columns are
/// not indexed), so a reclaim's work grew with every chain's search rows. Now they go by
/// rowid (keyed by their source): the same reclaim next to 20 000 other rows does about the
/// same work, and removes exactly the reclaimed turns' rows.
#[test]
fn a_reclaim_deletes_search_rows_by_rowid_whatever_the_size_of_the_index() {
    let (small, indexed) = reclaim_steps(0);
    assert_eq!(indexed, 100, "the reclaimed turns' rows go, the others stay");
    let (large, indexed) = reclaim_steps(20_000);
    assert_eq!(indexed, 100);
    assert!(large < small * 2, "the reclaim scanned the search index: {large} steps next to 20 000 rows, {small} without");
}

/// An approval batch of two calls in chat `c` for reply `message`, asked at `asked_at`.
fn asked_batch(bridge: &mut crate::bridge::store::BridgeStore, batch_id: &str, message: &str, asked_at: i64) {
    let batch = crate::bridge::store::AskedBatch {
        conversation: "zai:c".to_owned(),
        message: message.to_owned(),
        calls: 2,
        decidable: vec![0, 1],
        pending: vec![0, 1],
        hashes: vec!["00000000000000a1".to_owned(), "00000000000000a2".to_owned()],
    };
    bridge.ask(batch_id, &batch, asked_at).expect("ask");
}

/// Leftovers (failed before): a batch the chat asked about and the user never finished
/// (no Run or Skip on every call, so no results message) was kept forever, with its
/// decisions. Now one asked (and last decided) more than `bridge_result_days` ago goes with
/// its decisions; a fresh one, one decided lately and one with a results message stay, and
/// the reply's claimed calls stay whatever happens to its batch.
#[test]
fn an_old_batch_the_user_never_answered_goes_and_a_fresh_or_answered_one_stays() {
    use continuity_protocol::BridgeDecision;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let mut bridge = crate::bridge::store::BridgeStore::open(&path).expect("bridge");
    let retention = Retention::open(&path).expect("retention");
    let old = NOW - 40 * DAY_MS;
    // Asked long ago, one call decided then, the other never: no results message.
    asked_batch(&mut bridge, "b-old", "m-old", old);
    bridge.decide("b-old", 0, BridgeDecision::Run, old).expect("decide");
    let claimed = crate::bridge::machine::CallKey {
        conversation: "zai:c".to_owned(),
        message: "m-old".to_owned(),
        index: 0,
        hash: "00000000000000a1".to_owned(),
    };
    assert!(bridge.claim(&claimed, "herdr_inspect", old).expect("claim"));
    // Asked yesterday.
    asked_batch(&mut bridge, "b-fresh", "m-fresh", NOW - DAY_MS);
    // Asked long ago, a call decided yesterday (the card stayed open).
    asked_batch(&mut bridge, "b-decided-lately", "m-lately", old);
    bridge.decide("b-decided-lately", 0, BridgeDecision::Skip, NOW - DAY_MS).expect("decide");
    // Asked long ago and answered: its results message is not delivered yet.
    asked_batch(&mut bridge, "b-undelivered", "m-undelivered", old);
    bridge.decide("b-undelivered", 0, BridgeDecision::Run, old).expect("decide");
    let results = crate::bridge::store::StoredResults {
        delivery_id: "b-undelivered".to_owned(),
        text: "HERDR_TOOL_RESULTS".to_owned(),
        calls: 2,
        delivered: false,
    };
    bridge.store_results("zai:c", "m-undelivered", &results, old).expect("results");

    let reclaimed = retention.reclaim(NOW).expect("reclaim");
    assert_eq!(reclaimed, Reclaimed { bridge_batches: 1, ..Reclaimed::default() });
    let conn = retention.conn();
    let ids = |table: &str| -> Vec<String> {
        let mut statement = conn.prepare(&format!("SELECT DISTINCT batch_id FROM {table} ORDER BY batch_id")).expect("prepare");
        let rows = statement.query_map([], |r| r.get(0)).expect("query");
        rows.collect::<rusqlite::Result<Vec<String>>>().expect("rows")
    };
    assert_eq!(ids("bridge_batches"), ["b-decided-lately", "b-fresh", "b-undelivered"], "{reclaimed:?}");
    assert_eq!(ids("bridge_decisions"), ["b-decided-lately", "b-undelivered"], "the old batch's decisions go with it");
    let calls: i64 = conn.query_row("SELECT count(*) FROM bridge_calls", [], |r| r.get(0)).expect("count");
    assert_eq!(calls, 1, "a claimed call stays: it never runs again");
}

/// Review of the above (failed before): a Skip is the user's answer that a call never runs.
/// Reclaimed with its batch, it was forgotten, and a replay of the reply asked again — or,
/// for a read with Auto on, ran the call the user had skipped. The Skip now stays as the
/// call's record, which a replay reads before any decision.
#[test]
fn a_skip_outlives_its_reclaimed_batch_as_the_calls_record() {
    use crate::bridge::machine::{CallKey, Recorded};
    use continuity_protocol::BridgeDecision;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let mut bridge = crate::bridge::store::BridgeStore::open(&path).expect("bridge");
    let retention = Retention::open(&path).expect("retention");
    let old = NOW - 40 * DAY_MS;
    asked_batch(&mut bridge, "b-old", "m-old", old);
    bridge.decide("b-old", 1, BridgeDecision::Skip, old).expect("decide");
    let reclaimed = retention.reclaim(NOW).expect("reclaim");
    assert_eq!(reclaimed.bridge_batches, 1, "{reclaimed:?}");
    let key =
        |index: usize, hash: &str| CallKey { conversation: "zai:c".to_owned(), message: "m-old".to_owned(), index, hash: hash.to_owned() };
    assert_eq!(
        bridge.recorded(&key(1, "00000000000000a2")).expect("recorded"),
        Recorded::Claimed(Some(crate::bridge::machine::skipped())),
        "the skipped call reads as skipped"
    );
    assert_eq!(bridge.recorded(&key(0, "00000000000000a1")).expect("recorded"), Recorded::New, "the undecided call is asked again");
    assert_eq!(bridge.decision("b-old", 1).expect("decision"), None, "the batch's decisions went with it");
    // A press on a card left open past the reclaim (it read the batch before) stores nothing.
    assert!(!bridge.decide("b-old", 0, BridgeDecision::Run, NOW).expect("decide"), "no batch, no decision");
    assert_eq!(bridge.decision("b-old", 0).expect("decision"), None);
}
