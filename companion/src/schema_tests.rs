//! Every earlier schema of `state.db` and `oauth.db` opens with today's code, rows and
//! all; a newer one is refused untouched; opening is idempotent.

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::{params, Connection};

use super::*;
use crate::api::attribution::PairStore;
use crate::bridge::store::BridgeStore;
use crate::db::StateDb;
use crate::inbox::store::InboxStore;
use crate::journal::store::JournalStore;
use crate::retention::Retention;
use crate::tools::audit::AuditLog;
use crate::tools::exec::ExecRuns;
use crate::tools::roots::RootStore;
use crate::tools::sessions::ExecSessions;
use crate::work_memory::store::WorkMemoryStore;

/// A file at `version` of `schema`, built from the first `version` migrations, stamped
/// `stamp` (0: as an install from before versioning has it).
fn build(path: &Path, schema: &Schema, version: usize, stamp: usize) -> Connection {
    let mut conn = Connection::open(path).expect("open a fixture");
    let tx = conn.transaction().expect("begin");
    for migration in &schema.migrations[..version] {
        apply(&tx, &migration.step).expect("apply a migration");
    }
    tx.pragma_update(None, "user_version", stamp).expect("stamp");
    tx.commit().expect("commit");
    conn
}

/// One row in every `state.db` table that exists at `version`, with that version's columns.
fn fill(conn: &Connection, version: usize) {
    let mut sql = Vec::new();
    if version >= 1 {
        sql.push("INSERT INTO events (boot_id, at, event, data) VALUES ('boot-old', 1, 'agent_settled', '{\"pane_id\":\"w1:p1\"}');");
        sql.push("INSERT INTO kv (key, value) VALUES ('log_id', '\"0123456789abcdef0123456789abcdef\"'), ('catalog', '{\"old\":true}');");
    }
    if version >= 2 {
        sql.push(
            "INSERT INTO inbox_tasks (task_id, dispatch_id, turn_id, browser_session_ref, workspace_id, pane_id, prompt_preview,
                state, after_seq, created_at, finished_at, result, guidance, acked_at)
             VALUES ('task-1', 'disp-1', NULL, 'chat-1', 'w1', 'w1:p1', 'build it', 'completed', 1, 10, 20, '{\"trigger\":\"agent_settled\",\"seq\":1,\"status\":\"idle\",\"tail_truncated\":false}', NULL, NULL);
             INSERT INTO inbox_cursor (id, seq) VALUES (1, 1);",
        );
    }
    if version >= 3 {
        sql.push(
            "INSERT INTO journal_chains (continuity_id, project_id, title, created_at, updated_at) VALUES ('hc-1', 'proj', 'Old chat', 1, 2);
             INSERT INTO journal_conversations (conversation_id, continuity_id, conversation_url, title, updated_at)
                VALUES ('conv-1', 'hc-1', 'https://chatgpt.com/c/conv-1', 'Old chat', 2);
             INSERT INTO journal_chain_workspaces (workspace_id, continuity_id) VALUES ('w1', 'hc-1');
             INSERT INTO journal_turns (turn_id, continuity_id, message_id, conversation_id, role, text, workspace_id, observed_at, recorded_at)
                VALUES (1, 'hc-1', 'm1', 'conv-1', 'user', 'an old question', 'w1', 1, 2);
             INSERT INTO journal_fts (rowid, text) VALUES (1, 'an old question');",
        );
    }
    if version >= 4 {
        sql.push(
            "INSERT INTO wm_chains (continuity_id, project_ref, repo_id, work_chain_id, provider, account_ref, space_ref, session_ref, bound_at, updated_at)
                VALUES ('wc-1', 'proj', 'repo', 'main', 'chatgpt', NULL, NULL, 'chat-1', 1, 2);
             INSERT INTO wm_turns (continuity_id, provider, session_ref, provider_message_ref, role, text, observed_at)
                VALUES ('wc-1', 'chatgpt', 'chat-1', 'm1', 'user', 'an old turn', 1);
             INSERT INTO wm_evidence (continuity_id, kind, content, sha256, created_at) VALUES ('wc-1', 'note', 'seen', 'abc', 1);
             INSERT INTO wm_checkpoints (continuity_id, revision, summary, checkpoint_json, sha256, created_at)
                VALUES ('wc-1', 1, 'so far', '{}', 'def', 1);
             INSERT INTO wm_fts (body, continuity_id, source_kind, source_id) VALUES ('an old turn', 'wc-1', 'turn', '1');
             INSERT INTO wm_fts (body, continuity_id, source_kind, source_id) VALUES ('an old turn', 'wc-1', 'turn', 'm1');
             INSERT INTO wm_fts (body, continuity_id, source_kind, source_id) VALUES ('so far', 'wc-1', 'checkpoint', 'r1');",
        );
    }
    if version >= 5 {
        sql.push(
            "INSERT INTO bridge_calls (conversation, message, call_index, call_hash, tool, claimed_at, outcome_kind, outcome)
                VALUES ('conv-1', 'm2', 0, 'h0', 'herdr_read', 1, NULL, NULL);
             INSERT INTO bridge_results (delivery_id, conversation, message, calls, text, created_at, delivered_at)
                VALUES ('del-1', 'conv-1', 'm2', 1, 'results text', 1, NULL);",
        );
    }
    if version >= 6 {
        sql.push(
            "INSERT INTO tool_audit (at, tool, caller, root, target, outcome, detail) VALUES (1, 'herdr_fs_write', 'mcp', '/r', '/r/a', 'ok', '');
             INSERT INTO exec_runs (key, fingerprint, boot_id, started_at, result) VALUES ('k1', 'f1', 'boot-old', 1, NULL);
             INSERT INTO exec_sessions (id, owner, boot_id, cwd, command, started_at, state, exit_code, ended_at)
                VALUES ('s1', 'mcp', 'boot-old', '/r', 'make', 1, 'exited', 0, 2);",
        );
    }
    if version >= 7 {
        sql.push(
            "INSERT INTO bridge_batches (batch_id, conversation, message, calls, decidable, pending, hashes, asked_at)
                VALUES ('b1', 'conv-1', 'm3', 1, '[]', '[]', '[]', 1);
             INSERT INTO bridge_decisions (batch_id, call_index, decision, decided_at) VALUES ('b1', 0, 'approve', 1);
             INSERT INTO bridge_rounds (conversation, human_turn, used) VALUES ('conv-1', 'h1', 3);",
        );
    }
    if version >= 8 {
        sql.push("INSERT INTO retention_limits (store, value) VALUES ('journal_turns', 777);");
    }
    if version >= 9 {
        sql.push(
            "INSERT INTO journal_legacy_restores (source_continuity_id, packet_id, continuity_id, sha256, source_message_id, recorded_at)
                VALUES ('hc-1', 'pk-1', 'hl-1', 'abc', 'm1', 1);",
        );
    }
    if version >= 10 {
        sql.push("INSERT INTO mcp_session_chats (session, browser_session_ref, subject, paired_at) VALUES ('mcp-s1', 'chat-1', 'sub', 1);");
    }
    if version >= 11 {
        sql.push("INSERT INTO wm_goals (session_ref, goal, todos, updated_at) VALUES ('chat-1', 'ship it', '[]', 5);");
    }
    if version >= 12 {
        sql.push("INSERT INTO roots (path, added_at) VALUES ('/old/root', 1);");
    }
    if version >= 13 {
        sql.push("UPDATE exec_sessions SET pgid = 4242, start_identity = 'st' WHERE id = 's1';");
    }
    if version >= 14 {
        sql.push("UPDATE wm_checkpoints SET journal_continuity_id = 'hc-1', journal_message_id = 'm1' WHERE continuity_id = 'wc-1';");
    }
    conn.execute_batch(&sql.concat()).expect("fill the fixture");
}

/// Every table's rows, as text, by table (the FTS shadow tables left out).
fn contents(conn: &Connection) -> BTreeMap<String, Vec<String>> {
    let tables: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '%fts_%' AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )
        .expect("tables")
        .query_map([], |r| r.get(0))
        .expect("tables")
        .collect::<rusqlite::Result<_>>()
        .expect("tables");
    let mut out = BTreeMap::new();
    for table in tables {
        let mut statement = conn.prepare(&format!("SELECT * FROM {table}")).expect("select");
        let width = statement.column_count();
        let rows = statement
            .query_map([], |r| {
                (0..width).map(|i| r.get::<_, rusqlite::types::Value>(i).map(|v| format!("{v:?}"))).collect::<rusqlite::Result<Vec<_>>>()
            })
            .expect("rows")
            .map(|row| row.map(|cells| cells.join("|")))
            .collect::<rusqlite::Result<Vec<_>>>()
            .expect("rows");
        out.insert(table, rows);
    }
    out
}

/// Each table's columns, by table.
fn columns(conn: &Connection) -> BTreeMap<String, Vec<String>> {
    contents(conn)
        .into_keys()
        .map(|table| {
            let names = conn
                .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
                .expect("columns")
                .query_map([], |r| r.get(0))
                .expect("columns")
                .collect::<rusqlite::Result<Vec<String>>>()
                .expect("columns");
            (table, names)
        })
        .collect()
}

/// Opens every store of the runtime on `path`, as the runtime does.
fn open_every_store(path: &Path) {
    StateDb::open(path).expect("the event log opens");
    InboxStore::open(path).expect("the inbox opens");
    JournalStore::open(path).expect("the journal opens");
    WorkMemoryStore::open(path).expect("Work Memory opens");
    BridgeStore::open(path).expect("the bridge opens");
    AuditLog::open(path).expect("the audit opens");
    ExecRuns::open(path, "boot-new").expect("exec runs open");
    ExecSessions::open(path, "boot-new").expect("exec sessions open");
    Retention::open(path).expect("retention opens");
    PairStore::open(path).expect("the pairings open");
    RootStore::open(path).expect("the roots open");
}

/// The rows `fill` wrote at `version`, read through the stores' own APIs.
fn read_through_the_stores(path: &Path, version: usize) {
    let events = StateDb::open(path).expect("the event log opens");
    let replay = events.events_after(0, 10).expect("replay");
    assert_eq!(replay.iter().map(|e| (e.seq, e.event.as_str())).collect::<Vec<_>>(), [(1, "agent_settled")], "v{version}: the old event");
    assert_eq!(events.log_id().expect("log id"), "0123456789abcdef0123456789abcdef", "v{version}: the log keeps its id");
    assert_eq!(events.get("catalog").expect("kv"), Some(serde_json::json!({"old": true})));
    if version >= 2 {
        let inbox = InboxStore::open(path).expect("the inbox opens");
        assert_eq!(inbox.get("task-1").expect("task").map(|t| t.prompt_preview), Some("build it".to_owned()), "v{version}: the old task");
        assert_eq!(inbox.cursor().expect("cursor"), Some(1));
    }
    if version >= 3 {
        let journal = JournalStore::open(path).expect("the journal opens");
        assert_eq!(journal.chain("hc-1").expect("chain").and_then(|c| c.title), Some("Old chat".to_owned()), "v{version}: the old chain");
        assert_eq!(journal.recent_turns("hc-1").expect("turns").0.len(), 1, "v{version}: the old turn");
        assert_eq!(journal.workspaces_of("hc-1").expect("workspaces"), ["w1"]);
    }
    if version >= 4 {
        let memory = WorkMemoryStore::open(path).expect("Work Memory opens");
        assert_eq!(
            memory.chain_of_partition("proj", "repo", "main").expect("partition"),
            Some("wc-1".to_owned()),
            "v{version}: the old partition"
        );
        if version >= 11 {
            assert_eq!(memory.goal("chat-1").expect("goal").goal, Some("ship it".to_owned()), "v{version}: the old goal");
        }
    }
    if version >= 5 {
        let bridge = BridgeStore::open(path).expect("the bridge opens");
        assert_eq!(bridge.claimed_calls().expect("calls"), 1, "v{version}: the old claimed call");
        assert_eq!(bridge.results("del-1").expect("results").map(|r| r.text), Some("results text".to_owned()));
        if version >= 7 {
            assert_eq!(bridge.rounds_used("conv-1", "h1").expect("rounds"), 3, "v{version}: the old round count");
        }
    }
    if version >= 8 {
        assert_eq!(
            Retention::open(path).expect("retention opens").limits().expect("limits").journal_turns,
            777,
            "v{version}: the old limit"
        );
    }
    if version >= 10 {
        let pairs = PairStore::open(path).expect("the pairings open");
        assert_eq!(pairs.get("mcp-s1").expect("pairing").map(|p| p.session_ref), Some("chat-1".to_owned()), "v{version}: the old pairing");
    }
    if version >= 12 {
        assert_eq!(RootStore::open(path).expect("the roots open").list().expect("roots"), [std::path::PathBuf::from("/old/root")]);
    }
}

#[test]
fn every_earlier_state_db_opens_at_the_current_version_with_every_row() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fresh = dir.path().join("fresh.db");
    open_every_store(&fresh);
    let today = columns(&Connection::open(&fresh).expect("open"));
    let current = STATE_DB.migrations.len();
    for version in 1..=current {
        // As versioned by an earlier runtime, and as an install from before versioning has
        // it (the same tables, user_version 0).
        for stamp in [version, 0] {
            let path = dir.path().join(format!("v{version}-stamp{stamp}.db"));
            let before = {
                let conn = build(&path, &STATE_DB, version, stamp);
                fill(&conn, version);
                contents(&conn)
            };
            open_every_store(&path);
            let conn = Connection::open(&path).expect("open");
            assert_eq!(
                super::version(&conn).expect("version"),
                STATE_DB.current(),
                "v{version} (stamped {stamp}) is brought to the current version"
            );
            assert_eq!(columns(&conn), today, "v{version} (stamped {stamp}) has today's tables and columns");
            let after = contents(&conn);
            // Migration 16 ran (its file had search rows, from before it):
            let keyed = version >= 4 && (version < 16 || stamp == 0);
            if keyed {
                // Migration 16: a search row is keyed by its source; one without a source
                // is dropped (review 37 L8, failed before: kept under a negative rowid that
                // no reclaim reaches, and search returned it).
                let rowid = |id: &str| -> i64 {
                    conn.query_row("SELECT rowid FROM wm_fts WHERE source_id = ?1", [id], |r| r.get(0)).expect("a search row")
                };
                let checkpoint: i64 = conn.query_row("SELECT rowid FROM wm_checkpoints", [], |r| r.get(0)).expect("checkpoint");
                use crate::work_memory::store::{fts_rowid, FtsSource};
                assert_eq!((rowid("m1"), rowid("r1")), (fts_rowid(FtsSource::Turn, 1), fts_rowid(FtsSource::Checkpoint, checkpoint)));
                let orphans: i64 =
                    conn.query_row("SELECT count(*) FROM wm_fts WHERE source_id = '1' OR rowid < 0", [], |r| r.get(0)).expect("count");
                assert_eq!(orphans, 0, "v{version} (stamped {stamp}): the search row whose source is gone is dropped");
            }
            // The one row a migration drops: migration 16's search row without a source.
            let dropped = |table: &str, row: &str| keyed && table == "wm_fts" && row.ends_with("|Text(\"1\")");
            for (table, rows) in &before {
                let kept = after.get(table).expect("the table is still there");
                let rows: Vec<&String> = rows.iter().filter(|row| !dropped(table, row)).collect();
                for row in &rows {
                    // A row gains the later columns (NULL) at the end; what it held stays.
                    assert!(
                        kept.iter().any(|k| k.starts_with(row.as_str())),
                        "v{version} (stamped {stamp}): {table} lost {row}; now {kept:?}"
                    );
                }
                assert_eq!(kept.len(), rows.len(), "v{version} (stamped {stamp}): {table} keeps its row count");
            }
            drop(conn);
            read_through_the_stores(&path, version);
        }
    }
}

#[test]
fn an_install_from_before_versioning_with_only_some_tables_gains_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    // What the oldest runtimes left: the event log only, with a row.
    let conn = build(&path, &STATE_DB, 1, 0);
    fill(&conn, 1);
    drop(conn);
    let mut conn = open_state_db(&path).expect("open");
    assert_eq!(super::version(&conn).expect("version"), STATE_DB.current());
    assert_eq!(migrate(&mut conn, &path, &STATE_DB).expect("again"), STATE_DB.current(), "nothing left to do");
    read_through_the_stores(&path, 1);
}

#[test]
fn an_exec_sessions_table_from_before_its_owner_column_gains_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    {
        let conn = Connection::open(&path).expect("open");
        conn.execute_batch(
            "CREATE TABLE exec_sessions (id TEXT PRIMARY KEY, boot_id TEXT NOT NULL, cwd TEXT NOT NULL, command TEXT NOT NULL,
                started_at INTEGER NOT NULL, state TEXT NOT NULL, exit_code INTEGER, ended_at INTEGER);
             INSERT INTO exec_sessions VALUES ('s1', 'b', '/w', 'ls', 1, 'exited', 0, 2);",
        )
        .expect("the first exec_sessions shape");
    }
    let conn = open_state_db(&path).expect("opened");
    let owner: String = conn.query_row("SELECT owner FROM exec_sessions WHERE id = 's1'", [], |r| r.get(0)).expect("the old row");
    assert_eq!(owner, "mcp");
    conn.execute(
        "INSERT INTO exec_sessions (id, owner, boot_id, cwd, command, started_at, state) VALUES ('s2', 'bridge:x', 'b', '/w', 'ls', 3, 'running')",
        [],
    )
    .expect("a new session as the store writes it");
}

#[test]
fn a_state_db_from_a_newer_runtime_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let newer = STATE_DB.migrations.len() + 1;
    let conn = build(&path, &STATE_DB, 1, newer);
    fill(&conn, 1);
    let before = contents(&conn);
    drop(conn);
    let bytes = std::fs::read(&path).expect("the file");
    let refusal = StateDb::open(&path).expect_err("a newer file is refused");
    let text = refusal.to_string();
    assert!(
        matches!(refusal, crate::db::DbError::Schema(SchemaError::Newer { found, current, .. }) if found == STATE_DB.current() + 1 && current == STATE_DB.current()),
        "{text}"
    );
    assert!(text.contains("newer herdr-companion") && text.contains("move") && text.contains("state.db"), "says what to do: {text}");
    for refused in [
        InboxStore::open(&path).err().map(|e| e.to_string()),
        JournalStore::open(&path).err().map(|e| e.to_string()),
        WorkMemoryStore::open(&path).err().map(|e| e.to_string()),
        BridgeStore::open(&path).err().map(|e| e.to_string()),
        ExecSessions::open(&path, "b").err().map(|e| e.to_string()),
        RootStore::open(&path).err().map(|e| e.to_string()),
        Retention::open(&path).err().map(|e| e.to_string()),
    ] {
        assert!(refused.as_deref().is_some_and(|e| e.contains("newer herdr-companion")), "every store refuses: {refused:?}");
    }
    // Not a byte changed: not even the switch to WAL (the header) was written.
    assert!(std::fs::read(&path).expect("the file") == bytes, "the refused file's bytes changed");
    assert!(!dir.path().join("state.db-wal").exists(), "no WAL was created next to the refused file");
    let conn = Connection::open(&path).expect("open");
    assert_eq!(super::version(&conn).expect("version"), STATE_DB.current() + 1, "not downgraded");
    assert_eq!(contents(&conn), before, "no table created, no row changed");
}

#[test]
fn opening_twice_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let conn = build(&path, &STATE_DB, STATE_DB.migrations.len(), STATE_DB.migrations.len());
    fill(&conn, STATE_DB.migrations.len());
    drop(conn);
    open_every_store(&path);
    let mut conn = Connection::open(&path).expect("open");
    let before = (contents(&conn), columns(&conn));
    assert_eq!(migrate(&mut conn, &path, &STATE_DB).expect("again"), STATE_DB.current());
    drop(conn);
    open_every_store(&path);
    let conn = Connection::open(&path).expect("open");
    assert_eq!((contents(&conn), columns(&conn)), before);
    assert_eq!(super::version(&conn).expect("version"), STATE_DB.current());
}

#[test]
fn connections_opening_a_new_file_at_once_migrate_it_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    // A fifth connection holds the write lock while the openers start, so that they all
    // read version 0 on their fast path and then queue for the lock: each must read the
    // version again under it, and only the first finds 0 (without that re-read every one
    // of them would run the steps and report 0).
    let holder = Connection::open(&path).expect("open");
    holder.pragma_update(None, "journal_mode", "WAL").expect("wal");
    holder.execute_batch("BEGIN IMMEDIATE").expect("hold the write lock");
    let start = std::sync::Arc::new(std::sync::Barrier::new(5));
    let openers: Vec<_> = (0..4)
        .map(|_| {
            let path = path.clone();
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                open_state_db_reporting(&path).map(|(conn, found)| (found, super::version(&conn)))
            })
        })
        .collect();
    start.wait();
    // Well inside the openers' 5 s busy timeout; an opener that is slower than this to
    // reach its first read takes the fast path afterwards, which the assertion allows.
    std::thread::sleep(std::time::Duration::from_millis(300));
    holder.execute_batch("COMMIT").expect("release");
    let mut found = Vec::new();
    for opener in openers {
        let (from, version) = opener.join().expect("the opener finished").expect("opened");
        assert_eq!(version.expect("version"), STATE_DB.current());
        found.push(from);
    }
    found.sort_unstable();
    let current = STATE_DB.current();
    assert_eq!(found, vec![0, current, current, current], "exactly one opener migrated the file from 0");
}

#[test]
fn oauth_db_from_before_versioning_keeps_its_clients_and_a_newer_one_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("oauth.db");
    let conn = build(&path, &OAUTH_DB, 1, 0);
    conn.execute(
        "INSERT INTO clients (client_id, secret_hash, auth_method, name, redirect_uris, created_at) VALUES ('c1', NULL, 'none', 'ChatGPT', '[]', 1)",
        params![],
    )
    .expect("a client");
    let before = contents(&conn);
    drop(conn);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    drop(crate::mcp::oauth::store::OAuthStore::open_path(&path).expect("opens"));
    drop(crate::mcp::oauth::store::OAuthStore::open_path(&path).expect("opens again"));
    let conn = Connection::open(&path).expect("open");
    assert_eq!(super::version(&conn).expect("version"), OAUTH_DB.current());
    assert_eq!(contents(&conn), before, "the client is kept");
    conn.pragma_update(None, "user_version", OAUTH_DB.current() + 1).expect("stamp newer");
    drop(conn);
    let refusal = crate::mcp::oauth::store::OAuthStore::open_path(&path).err().map(|e| e.to_string());
    assert!(refusal.as_deref().is_some_and(|e| e.contains("newer herdr-companion") && e.contains("oauth.db")), "{refusal:?}");
}

#[test]
fn doctor_names_the_schema_version_and_fails_on_a_newer_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    drop(open_state_db(&path).expect("open"));
    let current = crate::doctor::storage_checks(&path);
    assert!(current.iter().all(|c| c.fix.is_none()), "{current:?}");
    assert!(current.iter().any(|c| c.what.contains(&format!("schema version {} (current)", STATE_DB.current()))), "{current:?}");
    Connection::open(&path).expect("open").pragma_update(None, "user_version", STATE_DB.current() + 1).expect("stamp newer");
    let newer = crate::doctor::storage_checks(&path);
    let failed: Vec<_> = newer.iter().filter(|c| c.fix.is_some()).collect();
    assert_eq!(failed.len(), 1, "{newer:?}");
    assert!(failed[0].what.contains("newer than this herdr-companion"), "{newer:?}");
    assert!(failed[0].fix.as_deref().is_some_and(|fix| fix.contains("install the newer herdr-companion")), "{newer:?}");
    // A newer version that reshaped a table the size lines count is still named as newer
    // (the version is read first), not as an unreadable file.
    Connection::open(&path)
        .expect("open")
        .execute_batch("DROP TABLE journal_turns; CREATE TABLE journal_turns (turn_id INTEGER PRIMARY KEY, body TEXT NOT NULL);")
        .expect("a newer shape");
    let reshaped = crate::doctor::storage_checks(&path);
    assert_eq!(reshaped.len(), 1, "{reshaped:?}");
    assert!(reshaped[0].what.contains("newer than this herdr-companion") && !reshaped[0].what.contains("cannot read"), "{reshaped:?}");
}

/// The runtime's sources without their tests (`*tests.rs` files, `#[cfg(test)]` modules).
fn runtime_sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read src").flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") && !path.to_string_lossy().ends_with("tests.rs") {
                out.push(path);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    files
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(&file).expect("read source");
            let code = text.split("#[cfg(test)]\nmod ").next().unwrap_or_default().to_owned();
            (file.strip_prefix(&src).expect("under src").display().to_string(), code)
        })
        .collect()
}

#[test]
fn only_the_schema_module_creates_or_alters_a_table() {
    let sources = runtime_sources();
    assert!(sources.len() > 20, "the sources were not found");
    let offenders: Vec<&str> = sources
        .iter()
        .filter(|(file, code)| {
            file != "schema.rs"
                && ["CREATE TABLE", "ALTER TABLE", "CREATE INDEX", "CREATE VIRTUAL TABLE"].iter().any(|ddl| code.contains(ddl))
        })
        .map(|(file, _)| file.as_str())
        .collect();
    assert!(offenders.is_empty(), "a schema change is a migration in schema.rs: {offenders:?}");
}

#[test]
fn every_sqlite_connection_is_opened_through_the_schema() {
    // Only these open a connection themselves: `db::open_connection` (used by
    // `schema::open_state_db`), the OAuth store (then `schema::migrate`), and doctor's
    // read-only look.
    let opening: Vec<String> = runtime_sources()
        .into_iter()
        .filter(|(file, code)| {
            (code.contains("Connection::open") || code.contains("open_connection("))
                && !["db.rs", "schema.rs", "doctor.rs", "mcp/oauth/store.rs"].contains(&file.as_str())
        })
        .map(|(file, _)| file)
        .collect();
    assert!(opening.is_empty(), "open state.db through crate::schema::open_state_db: {opening:?}");
}
