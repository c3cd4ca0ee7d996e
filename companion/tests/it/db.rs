//! `state.db` durability and threading (issue 7; SPEC N3, P9, I4), on real SQLite files
//! and against the real runtime binary.

use std::time::{Duration, Instant};

use companion::db::StateDb;
use companion::inbox::store::InboxStore;
use serde_json::{json, Value};

use crate::support::{LineClient, TestHome, PROCESS_WAIT};

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

// R: N3 — SQLite calls wait on locks (busy timeout) and on the disk (fsync under FULL);
// run on the async workers they stall every other client. With state.db's write lock held
// elsewhere, writes wait, and a ping sent after them must still be answered first.
#[test]
fn a_waiting_state_db_write_never_stalls_other_requests_n3() {
    let home = TestHome::new();
    let _runtime = home.start_runtime();
    let mut client = LineClient::connect(&home.socket());
    let deadline = Instant::now() + PROCESS_WAIT;
    while client.call("counts", "inbox.counts", json!({"browser_session_ref": "chat-a"})).get("result").is_none() {
        assert!(Instant::now() < deadline, "the inbox never opened");
        std::thread::sleep(Duration::from_millis(20));
    }
    let blocker = rusqlite::Connection::open(home.home().join("state.db")).expect("open state.db");
    blocker.busy_timeout(PROCESS_WAIT).expect("busy timeout");
    blocker.execute_batch("BEGIN IMMEDIATE").expect("take the write lock");
    // More waiting writes than the runtime has async workers.
    let acks: Vec<String> = (0..6).map(|n| format!("ack{n}")).collect();
    for id in &acks {
        let line = json!({"id": id, "method": "inbox.ack", "params": {"browser_session_ref": "chat-a", "task_ids": ["t"]}});
        client.send_raw(line.to_string().as_bytes());
    }
    // Give the writes a moment to reach SQLite (no assertion depends on this pause: the
    // ping must come first however long it is), then ping on a second connection.
    std::thread::sleep(Duration::from_millis(300));
    let mut other = LineClient::connect(&home.socket());
    // (A runtime whose workers are stuck in SQLite answers nothing: the read times out.)
    let pong = other.call("ping", "ping", json!({}));
    assert_eq!(pong["result"]["type"], "pong", "{pong}");
    blocker.execute_batch("ROLLBACK").expect("release the write lock");
    let mut answered = Vec::new();
    while answered.len() < acks.len() {
        let message = client.next().expect("runtime closed the connection");
        if let Some(id) = message.get("id").and_then(Value::as_str) {
            assert_eq!(message["result"]["unknown"], json!(["t"]), "{message}");
            answered.push(id.to_owned());
        }
    }
    answered.sort();
    assert_eq!(answered, acks, "every waiting write completes once the lock is free");
}

// R: issue 28 — a state.db written by a newer runtime (a higher `PRAGMA user_version` than
// this binary's schema knows) is refused untouched, and the user is told what to do: the
// `roots` commands fail with the reason and `doctor` names it as a failing check. Failed
// before: there was no schema version, so an older binary opened and wrote the file.
#[test]
fn an_older_binary_refuses_a_newer_state_db_and_says_what_to_do() {
    let home = TestHome::new();
    std::fs::create_dir_all(home.home()).expect("home");
    let path = home.home().join("state.db");
    let newer = companion::schema::STATE_DB.current() + 1;
    {
        let conn = rusqlite::Connection::open(&path).expect("open");
        conn.execute_batch("CREATE TABLE from_the_future (x INTEGER); INSERT INTO from_the_future VALUES (7);").expect("a newer table");
        conn.pragma_update(None, "user_version", newer).expect("stamp");
    }
    let roots = crate::support::output_within(&mut home.command(&["roots", "list"]), "roots list");
    let stderr = String::from_utf8_lossy(&roots.stderr);
    assert!(!roots.status.success(), "refused: {stderr}");
    assert!(stderr.contains(&format!("schema version {newer}")) && stderr.contains("Install that newer version again"), "{stderr}");
    let doctor = crate::support::output_within(
        &mut home.command(&["doctor", "--browser", "chromium", "--user-data-dir", home.home().to_str().expect("utf-8")]),
        "doctor",
    );
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(text.contains(&format!("FAIL  storage: {} has schema version {newer}", path.display())), "{text}");
    let conn = rusqlite::Connection::open(&path).expect("open");
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).expect("version");
    let tables: i64 = conn.query_row("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'", [], |r| r.get(0)).expect("tables");
    assert_eq!((version, tables), (newer, 1), "left untouched: no downgrade, no table created");
}

/// A `state.db` from a newer herdr-companion at `home`'s path (one table of its own).
fn newer_state_db(home: &TestHome) -> i64 {
    std::fs::create_dir_all(home.home()).expect("home");
    let newer = companion::schema::STATE_DB.current() + 1;
    let conn = rusqlite::Connection::open(home.home().join("state.db")).expect("open");
    conn.execute_batch("CREATE TABLE from_the_future (x INTEGER); INSERT INTO from_the_future VALUES (7);").expect("a newer table");
    conn.pragma_update(None, "user_version", newer).expect("stamp");
    newer
}

// Review sqlite28 MED 1: the runtime used to start on a newer state.db with every store
// closed and tell each client "not ready, retry in a moment"; it refuses to start instead,
// saying why on stderr and in runtime.log, and never binds its socket.
#[test]
fn the_runtime_refuses_to_start_on_a_newer_state_db_and_says_why() {
    let home = TestHome::new();
    let newer = newer_state_db(&home);
    let out = crate::support::output_within(&mut home.command(&["runtime"]), "the runtime");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refused to start: {stderr}");
    assert!(stderr.contains(&format!("schema version {newer}")) && stderr.contains("Install that newer version again"), "{stderr}");
    let log = home.runtime_log();
    let refusal = log.lines().find(|line| line.contains(companion::log::REFUSED_TO_START)).unwrap_or_default();
    assert!(refusal.contains(&format!("schema version {newer}")) && refusal.contains("move"), "runtime.log says why: {log}");
    assert!(!home.socket().exists(), "no socket for a runtime that did not start");
}

// Review sqlite28 MED 1: the host that starts such a runtime tells the extension why (its
// message becomes the HUD's line) instead of "did not come up", as
// `runtime_refused_to_start` — a code the extension does not retry on a timer.
#[test]
fn the_host_passes_on_why_the_runtime_it_started_refused_to_start() {
    use std::process::Stdio;
    let home = TestHome::new();
    let newer = newer_state_db(&home);
    let mut host = crate::support::ChildGuard::spawn(
        home.command(&["host", crate::support::ORIGIN])
            .env_remove("HERDR_COMPANION_AUTOSTART")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
        "the host",
    );
    let mut stdout = crate::support::FrameReader::new(host.child.stdout.take().expect("stdout"));
    let error = stdout.next().expect("a host_error frame");
    assert_eq!(
        (error["event"].as_str(), error["data"]["code"].as_str()),
        (Some("host_error"), Some("runtime_refused_to_start")),
        "{error}"
    );
    let message = error["data"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("the companion runtime refused to start:"), "{message}");
    assert!(message.contains(&format!("schema version {newer}")) && message.contains("Install that newer version again"), "{message}");
    assert_eq!(host.wait_within(PROCESS_WAIT).code(), Some(1));
}
