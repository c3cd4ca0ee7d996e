//! `state.db` durability and threading (issue 7; SPEC N3, P9, I4), on real SQLite files
//! and against the real runtime binary.

use companion::db::StateDb;
use companion::inbox::store::InboxStore;

/// `PRAGMA synchronous` value of FULL.
const SYNCHRONOUS_FULL: i64 = 2;

// R: N3, P9, I4 — with `synchronous=NORMAL` a WAL commit can be lost on power loss, so the
// event log's seq could go backwards and an acknowledged inbox item could come back.
#[test]
fn the_event_log_and_the_inbox_commit_with_synchronous_full() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let events = StateDb::open(&path).expect("open the event log");
    assert_eq!(events.synchronous().expect("pragma"), SYNCHRONOUS_FULL, "event log connection");
    let inbox = InboxStore::open(&path).expect("open the inbox");
    assert_eq!(inbox.synchronous().expect("pragma"), SYNCHRONOUS_FULL, "inbox connection");
}
