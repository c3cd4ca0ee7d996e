//! The durable parent inbox: the `inbox_tasks` table in `state.db` (SPEC I2–I4).
//!
//! Invariants:
//! - The row is the truth; Herdr's settle is only the trigger that moves it.
//! - A row leaves `running` at most once ([`InboxStore::finish`] updates only running
//!   rows), so a duplicate or replayed settle never writes a second terminal record.
//! - Every query is scoped by `browser_session_ref`; a task of another ref is never
//!   listed, counted or acknowledged (I3).
//! - Acknowledging is idempotent and decided per id: an unknown, foreign or running id is
//!   reported and skipped, never a reason to drop the rest of its call.
//! - The follower's cursor (`inbox_cursor`) only moves forward.

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension, Row, TransactionBehavior};
use serde::Serialize;
use serde_json::json;
use thiserror::Error;

use super::transition::TaskState;
use continuity_protocol::{Guidance, Task, TaskResult};

/// A store failure.
#[derive(Debug, Error)]
pub enum StoreError {
    /// SQLite refused an operation.
    #[error("state.db (parent inbox) error: {0}; check that the companion home is writable and the disk not full")]
    Sqlite(#[from] rusqlite::Error),
    /// The file's schema is newer than this runtime's, or could not be brought to it.
    #[error(transparent)]
    Schema(#[from] crate::schema::SchemaError),
    /// The call on the blocking pool was lost.
    #[error(transparent)]
    CallLost(#[from] crate::db::DbCallLost),
}

/// A new task, as recorded at dispatch.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTask {
    /// Runtime-chosen task id.
    pub task_id: String,
    /// Runtime-chosen id of this dispatch.
    pub dispatch_id: String,
    /// The chat turn that dispatched it, if the caller gave one.
    pub turn_id: Option<String>,
    /// The chat's stable session ref (I1).
    pub browser_session_ref: String,
    /// Target workspace.
    pub workspace_id: String,
    /// Target pane.
    pub pane_id: String,
    /// The first characters of the prompt (for lists and advisor summaries).
    pub prompt_preview: String,
    /// Only stream events above this seq may end the task.
    pub after_seq: i64,
    /// Unix ms.
    pub created_at: i64,
}

/// HUD counters of one session ref (I4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct Counts {
    /// Dispatched, not yet terminal.
    pub running: i64,
    /// Terminal, not yet acknowledged.
    pub unacked: i64,
    /// Terminal and acknowledged.
    pub acked: i64,
}

/// What `inbox.ack` did, per id (every requested id is in exactly one list).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AckOutcome {
    /// Newly acknowledged.
    pub acked: Vec<String>,
    /// Already acknowledged before (idempotent repeat).
    pub already_acked: Vec<String>,
    /// Not in the inbox at all (e.g. the id came from a `state.db` that was reset).
    pub unknown: Vec<String>,
    /// A task of another browser session (I3); not acknowledged.
    pub forbidden: Vec<String>,
    /// Still running: it has no terminal result yet, so nothing was delivered (I4).
    pub not_terminal: Vec<String>,
}

/// The inbox tables on their own connection to `state.db`.
#[derive(Debug)]
pub struct InboxStore {
    /// The connection (callers serialize access).
    conn: Connection,
}

const COLUMNS: &str = "task_id, dispatch_id, turn_id, browser_session_ref, workspace_id, pane_id, \
    prompt_preview, state, created_at, finished_at, result, guidance, acked_at";

/// A row this build cannot read as a task: a state it does not know (a newer runtime's) or
/// a result or guidance that is not the protocol's shape (edited by hand).
#[derive(Debug, thiserror::Error)]
#[error("inbox task {task_id} has a {column} this herdr-companion cannot read ({detail}); it is left in state.db for a companion that can, and not shown")]
struct UnreadableRow {
    task_id: String,
    column: &'static str,
    detail: String,
}

/// One row as the wire's `task`: a state this build does not know, or a result or guidance
/// that is not the protocol's shape, is an [`UnreadableRow`] error naming the task and the
/// column (never read as absent).
fn record(row: &Row<'_>) -> rusqlite::Result<Task> {
    let task_id: String = row.get(0)?;
    let unreadable = |column: usize, name: &'static str, detail: String| {
        rusqlite::Error::FromSqlConversionFailure(
            column,
            rusqlite::types::Type::Text,
            Box::new(UnreadableRow { task_id: task_id.clone(), column: name, detail }),
        )
    };
    fn typed<T: serde::de::DeserializeOwned>(
        row: &Row<'_>,
        column: usize,
        name: &'static str,
        unreadable: &dyn Fn(usize, &'static str, String) -> rusqlite::Error,
    ) -> rusqlite::Result<Option<T>> {
        let text: Option<String> = row.get(column)?;
        text.map(|text| serde_json::from_str(&text)).transpose().map_err(|error| unreadable(column, name, error.to_string()))
    }
    let state: String = row.get(7)?;
    let state = TaskState::parse(&state).map_err(|error| unreadable(7, "state", error.to_string()))?;
    Ok(Task {
        dispatch_id: row.get(1)?,
        turn_id: row.get(2)?,
        browser_session_ref: row.get(3)?,
        workspace_id: row.get(4)?,
        pane_id: row.get(5)?,
        prompt_preview: row.get(6)?,
        state,
        created_at: row.get(8)?,
        finished_at: row.get(9)?,
        result: typed(row, 10, "result", &unreadable)?,
        guidance: typed(row, 11, "guidance", &unreadable)?,
        acked_at: row.get(12)?,
        task_id,
    })
}

/// The rows of a list that read as tasks. A row this build cannot read ([`UnreadableRow`])
/// is left out with a line in runtime.log naming it, so one such row never hides the
/// others (a failed read would stop every finished task of the chat from reaching it);
/// any other error fails the read.
fn readable(rows: impl Iterator<Item = rusqlite::Result<Task>>) -> rusqlite::Result<Vec<Task>> {
    let mut tasks = Vec::new();
    for row in rows {
        match row {
            Ok(task) => tasks.push(task),
            Err(rusqlite::Error::FromSqlConversionFailure(_, _, error)) if error.is::<UnreadableRow>() => {
                tracing::warn!("{error}");
            }
            Err(error) => return Err(error),
        }
    }
    Ok(tasks)
}

impl InboxStore {
    /// Opens (creating if needed) the inbox tables in the database at `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        // FULL: an acknowledgement or terminal result, once answered, survives power loss.
        let conn = crate::schema::open_state_db(path)?;
        Ok(Self { conn })
    }

    /// Events of the log (`state.db` `events`) with `seq > after`, oldest first, at most
    /// `limit`, read on the inbox's own connection.
    pub fn events_after(&self, after: i64, limit: i64) -> Result<Vec<crate::db::StoredEvent>, crate::db::DbError> {
        crate::db::events_after(&self.conn, after, limit)
    }

    /// The event log's last seq (0 when empty).
    pub fn last_event_seq(&self) -> Result<i64, crate::db::DbError> {
        crate::db::last_seq(&self.conn)
    }

    /// This connection's `PRAGMA synchronous` (2 = FULL).
    pub fn synchronous(&self) -> Result<i64, StoreError> {
        Ok(self.conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?)
    }

    /// Records a dispatched task as `running`.
    pub fn insert_running(&mut self, task: &NewTask) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO inbox_tasks (task_id, dispatch_id, turn_id, browser_session_ref, workspace_id,
                pane_id, prompt_preview, state, after_seq, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'running', ?8, ?9)",
            params![
                task.task_id,
                task.dispatch_id,
                task.turn_id,
                task.browser_session_ref,
                task.workspace_id,
                task.pane_id,
                task.prompt_preview,
                task.after_seq,
                task.created_at
            ],
        )?;
        Ok(())
    }

    /// Removes a task whose prompt Herdr refused (it never ran).
    pub fn forget(&mut self, task_id: &str) -> Result<(), StoreError> {
        self.conn.execute("DELETE FROM inbox_tasks WHERE task_id = ?1 AND state = 'running'", params![task_id])?;
        Ok(())
    }

    /// Running tasks of `pane_id` that an event with `seq` may end, oldest first.
    pub fn running_on_pane(&self, pane_id: &str, seq: i64) -> Result<Vec<Task>, StoreError> {
        let mut statement = self.conn.prepare(&format!(
            "SELECT {COLUMNS} FROM inbox_tasks WHERE pane_id = ?1 AND state = 'running' AND after_seq < ?2
             ORDER BY created_at, rowid"
        ))?;
        let rows = statement.query_map(params![pane_id, seq], record)?;
        Ok(readable(rows)?)
    }

    /// Moves a running task to a terminal state; false when it was not running (a
    /// duplicate trigger), in which case nothing is written.
    pub fn finish(&mut self, task_id: &str, state: TaskState, finished_at: i64, result: &TaskResult) -> Result<bool, StoreError> {
        let changed = self.conn.execute(
            "UPDATE inbox_tasks SET state = ?2, finished_at = ?3, result = ?4
             WHERE task_id = ?1 AND state = 'running'",
            params![task_id, state.as_str(), finished_at, json!(result).to_string()],
        )?;
        Ok(changed == 1)
    }

    /// Attaches parent guidance to a terminal, unacknowledged task; false otherwise.
    pub fn set_guidance(&mut self, task_id: &str, guidance: &Guidance) -> Result<bool, StoreError> {
        let changed = self.conn.execute(
            "UPDATE inbox_tasks SET guidance = ?2
             WHERE task_id = ?1 AND state != 'running' AND acked_at IS NULL",
            params![task_id, json!(guidance).to_string()],
        )?;
        Ok(changed == 1)
    }

    /// One task by id.
    pub fn get(&self, task_id: &str) -> Result<Option<Task>, StoreError> {
        Ok(self.conn.query_row(&format!("SELECT {COLUMNS} FROM inbox_tasks WHERE task_id = ?1"), params![task_id], record).optional()?)
    }

    /// `session_ref`'s unacknowledged terminal tasks, oldest terminal first, at most `limit`.
    pub fn pending(&self, session_ref: &str, limit: usize) -> Result<Vec<Task>, StoreError> {
        let mut statement = self.conn.prepare(&format!(
            "SELECT {COLUMNS} FROM inbox_tasks
             WHERE browser_session_ref = ?1 AND state != 'running' AND acked_at IS NULL
             ORDER BY finished_at, rowid LIMIT ?2"
        ))?;
        let rows = statement.query_map(params![session_ref, limit as i64], record)?;
        Ok(readable(rows)?)
    }

    /// `session_ref`'s tasks, newest first, at most `limit`.
    pub fn list(&self, session_ref: &str, limit: usize) -> Result<Vec<Task>, StoreError> {
        let mut statement = self.conn.prepare(&format!(
            "SELECT {COLUMNS} FROM inbox_tasks WHERE browser_session_ref = ?1
             ORDER BY created_at DESC, rowid DESC LIMIT ?2"
        ))?;
        let rows = statement.query_map(params![session_ref, limit as i64], record)?;
        Ok(readable(rows)?)
    }

    /// `session_ref`'s running tasks, oldest first, at most `limit`.
    pub fn running(&self, session_ref: &str, limit: usize) -> Result<Vec<Task>, StoreError> {
        let mut statement = self.conn.prepare(&format!(
            "SELECT {COLUMNS} FROM inbox_tasks WHERE browser_session_ref = ?1 AND state = 'running'
             ORDER BY created_at, rowid LIMIT ?2"
        ))?;
        let rows = statement.query_map(params![session_ref, limit as i64], record)?;
        Ok(readable(rows)?)
    }

    /// `session_ref`'s open tasks in `workspace_id` — running, or ended and not yet
    /// acknowledged — oldest first, at most `limit`, and how many there are in all (the
    /// handoff seed's open work).
    pub fn open_in_workspace(&self, session_ref: &str, workspace_id: &str, limit: usize) -> Result<(Vec<Task>, u64), StoreError> {
        let filter = "browser_session_ref = ?1 AND workspace_id = ?2 AND (state = 'running' OR acked_at IS NULL)";
        let mut statement =
            self.conn.prepare(&format!("SELECT {COLUMNS} FROM inbox_tasks WHERE {filter} ORDER BY created_at, rowid LIMIT ?3"))?;
        let rows = statement.query_map(params![session_ref, workspace_id, limit as i64], record)?;
        let tasks: Vec<Task> = readable(rows)?;
        let total: i64 =
            self.conn
                .query_row(&format!("SELECT count(*) FROM inbox_tasks WHERE {filter}"), params![session_ref, workspace_id], |r| r.get(0))?;
        Ok((tasks, total.max(0) as u64))
    }

    /// HUD counters of `session_ref`.
    pub fn counts(&self, session_ref: &str) -> Result<Counts, StoreError> {
        Ok(self.conn.query_row(
            "SELECT
                COALESCE(SUM(state = 'running'), 0),
                COALESCE(SUM(state != 'running' AND acked_at IS NULL), 0),
                COALESCE(SUM(acked_at IS NOT NULL), 0)
             FROM inbox_tasks WHERE browser_session_ref = ?1",
            params![session_ref],
            |r| Ok(Counts { running: r.get(0)?, unacked: r.get(1)?, acked: r.get(2)? }),
        )?)
    }

    /// Acknowledges `task_ids` for `session_ref` (I4), each id on its own: one unknown,
    /// foreign (I3) or running id never keeps the others from being acknowledged. Repeats
    /// are no-ops. One transaction, so the answer matches what was committed.
    pub fn ack(&mut self, session_ref: &str, task_ids: &[String], now: i64) -> Result<AckOutcome, StoreError> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut outcome = AckOutcome::default();
        let mut answered = std::collections::HashSet::new();
        for task_id in task_ids {
            if !answered.insert(task_id) {
                continue; // a repeated id is answered once
            }
            let row: Option<(String, String, Option<i64>)> = tx
                .query_row("SELECT browser_session_ref, state, acked_at FROM inbox_tasks WHERE task_id = ?1", params![task_id], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .optional()?;
            let list = match row {
                None => &mut outcome.unknown,
                Some((owner, _, _)) if owner != session_ref => &mut outcome.forbidden,
                Some((_, state, _)) if state == TaskState::Running => &mut outcome.not_terminal,
                Some((_, _, Some(_))) => &mut outcome.already_acked,
                Some((_, _, None)) => {
                    tx.execute("UPDATE inbox_tasks SET acked_at = ?2 WHERE task_id = ?1", params![task_id, now])?;
                    &mut outcome.acked
                }
            };
            list.push(task_id.clone());
        }
        tx.commit()?;
        Ok(outcome)
    }

    /// The follower's position in the event log, if it ever ran.
    pub fn cursor(&self) -> Result<Option<i64>, StoreError> {
        Ok(self.conn.query_row("SELECT seq FROM inbox_cursor WHERE id = 1", [], |r| r.get(0)).optional()?)
    }

    /// Moves the follower's position forward (never back).
    pub fn advance_cursor(&mut self, seq: i64) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO inbox_cursor (id, seq) VALUES (1, ?1)
             ON CONFLICT(id) DO UPDATE SET seq = MAX(seq, excluded.seq)",
            params![seq],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, session_ref: &str, pane: &str, after_seq: i64) -> NewTask {
        NewTask {
            task_id: id.to_owned(),
            dispatch_id: format!("d-{id}"),
            turn_id: None,
            browser_session_ref: session_ref.to_owned(),
            workspace_id: "w1".to_owned(),
            pane_id: pane.to_owned(),
            prompt_preview: "do it".to_owned(),
            after_seq,
            created_at: 1,
        }
    }

    fn result(status: Option<&str>) -> TaskResult {
        TaskResult {
            trigger: continuity_protocol::TaskTrigger::AgentSettled,
            seq: 1,
            status: status.map(str::to_owned),
            previous_status: None,
            agent: None,
            workspace_label: None,
            cwd: None,
            tail: None,
            tail_truncated: false,
        }
    }

    fn store() -> (tempfile::TempDir, InboxStore) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = InboxStore::open(&dir.path().join("state.db")).expect("open");
        (dir, store)
    }

    #[test]
    fn a_task_finishes_once_and_is_pending_only_for_its_ref_until_acked_i2_i3_i4() {
        let (_dir, mut store) = store();
        store.insert_running(&task("t1", "chat-a", "w1:p1", 5)).expect("insert");
        store.insert_running(&task("t2", "chat-b", "w1:p2", 5)).expect("insert");
        assert!(store.running_on_pane("w1:p1", 5).expect("query").is_empty(), "an event at after_seq predates the dispatch");
        assert_eq!(store.running_on_pane("w1:p1", 6).expect("query").len(), 1);
        assert!(store.finish("t1", TaskState::Completed, 10, &result(Some("idle"))).expect("finish"));
        assert!(!store.finish("t1", TaskState::Blocked, 11, &result(None)).expect("finish"), "terminal states are final");
        let pending = store.pending("chat-a", 10).expect("pending");
        assert_eq!(pending.len(), 1);
        assert_eq!((pending[0].state.as_str(), pending[0].finished_at), ("completed", Some(10)));
        assert!(store.pending("chat-b", 10).expect("pending").is_empty());
        assert_eq!(store.counts("chat-a").expect("counts"), Counts { running: 0, unacked: 1, acked: 0 });
        assert_eq!(store.counts("chat-b").expect("counts"), Counts { running: 1, unacked: 0, acked: 0 });

        let refused = store.ack("chat-b", &["t1".to_owned(), "t2".to_owned(), "nope".to_owned()], 20).expect("ack");
        assert_eq!(
            refused,
            AckOutcome {
                forbidden: vec!["t1".into()],
                not_terminal: vec!["t2".into()],
                unknown: vec!["nope".into()],
                ..AckOutcome::default()
            }
        );
        assert_eq!(store.counts("chat-a").expect("counts").unacked, 1, "a refused id is not acked");

        let first = store.ack("chat-a", &["t1".to_owned(), "t1".to_owned()], 20).expect("ack");
        assert_eq!(first, AckOutcome { acked: vec!["t1".into()], ..AckOutcome::default() }, "a repeated id is answered once");
        let again = store.ack("chat-a", &["t1".to_owned()], 21).expect("ack twice");
        assert_eq!((again.acked.len(), again.already_acked.as_slice()), (0, ["t1".to_owned()].as_slice()));
        assert!(store.pending("chat-a", 10).expect("pending").is_empty());
        assert_eq!(store.counts("chat-a").expect("counts"), Counts { running: 0, unacked: 0, acked: 1 });
        assert!(
            !store.set_guidance("t1", &Guidance { kind: continuity_protocol::GuidanceKind::Drift, note: None }).expect("guidance"),
            "no guidance after ack"
        );
    }

    #[test]
    fn x9_open_tasks_of_a_workspace_are_running_or_unacked_of_the_ref_only_oldest_first() {
        let (_dir, mut store) = store();
        for (id, session, pane) in
            [("t1", "chat-a", "w1:p1"), ("t2", "chat-a", "w1:p2"), ("t3", "chat-a", "w1:p1"), ("t4", "chat-b", "w1:p1")]
        {
            store.insert_running(&task(id, session, pane, 5)).expect("insert");
        }
        let mut other = task("t5", "chat-a", "w2:p1", 5);
        other.workspace_id = "w2".to_owned();
        store.insert_running(&other).expect("insert");
        assert!(store.finish("t1", TaskState::Completed, 10, &result(None)).expect("finish"));
        assert!(store.finish("t3", TaskState::Failed, 11, &result(None)).expect("finish"));
        store.ack("chat-a", &["t3".to_owned()], 12).expect("ack");
        let (open, total) = store.open_in_workspace("chat-a", "w1", 10).expect("open");
        let ids: Vec<&str> = open.iter().map(|t| t.task_id.as_str()).collect();
        assert_eq!((ids, total), (vec!["t1", "t2"], 2), "t3 is acknowledged, t4 another ref's (I3), t5 another workspace's");
        let (first, total) = store.open_in_workspace("chat-a", "w1", 1).expect("open");
        assert_eq!((first.len(), total), (1, 2), "the cap lists fewer, the count names all");
    }

    #[test]
    fn the_cursor_only_moves_forward() {
        let (_dir, mut store) = store();
        assert_eq!(store.cursor().expect("cursor"), None);
        store.advance_cursor(7).expect("advance");
        store.advance_cursor(3).expect("advance");
        assert_eq!(store.cursor().expect("cursor"), Some(7));
    }

    /// A row is read as the protocol's typed `Task`: a state this build does not know, or
    /// a result that is not a `TaskResult`, is an error naming the column, never a task
    /// with a made-up state or a silently dropped result.
    #[test]
    /// Review contracts28 #3 (failed before: one unreadable row failed the whole read, so
    /// every other finished task of the chat stopped reaching it).
    fn an_unreadable_row_is_never_read_as_a_task_and_never_hides_the_others() {
        let (_dir, mut store) = store();
        for (id, at) in [("t1", 10), ("t2", 11)] {
            store.insert_running(&task(id, "chat-a", "w1:p1", 5)).expect("insert");
            assert!(store.finish(id, TaskState::Completed, at, &result(Some("idle"))).expect("finish"));
        }
        let read = store.pending("chat-a", 10).expect("pending");
        assert_eq!((read[0].state, read[0].result.as_ref().and_then(|r| r.status.as_deref())), (TaskState::Completed, Some("idle")));

        // A result that is not the protocol's shape: t1 is left out, t2 still reads.
        store.conn.execute("UPDATE inbox_tasks SET result = '{\"status\": \"idle\"}' WHERE task_id = 't1'", []).expect("update");
        let ids = |tasks: Vec<Task>| tasks.into_iter().map(|t| t.task_id).collect::<Vec<_>>();
        assert_eq!(ids(store.pending("chat-a", 10).expect("pending")), ["t2"]);
        assert_eq!(ids(store.list("chat-a", 10).expect("list")), ["t2"]);
        let error = store.get("t1").expect_err("asked by id, the row is an error naming it").to_string();
        assert!(error.contains("t1") && error.contains("result"), "{error}");

        // A state this build does not know (a newer runtime's): the same.
        store.conn.execute("UPDATE inbox_tasks SET state = 'paused', result = NULL WHERE task_id = 't1'", []).expect("update");
        assert_eq!(ids(store.pending("chat-a", 10).expect("pending")), ["t2"]);
        let error = store.get("t1").expect_err("an unknown state is refused").to_string();
        assert!(error.contains("paused") && error.contains("t1"), "{error}");
        // Left in the table for a build that can read it.
        let kept: i64 = store.conn.query_row("SELECT count(*) FROM inbox_tasks", [], |r| r.get(0)).expect("count");
        assert_eq!(kept, 2);
    }
}
