//! The audit log of the write and exec tools (table `tool_audit` in `state.db`): every call
//! of `herdr_fs_edit`, `herdr_fs_write`, `herdr_fs_patch`, `herdr_exec`,
//! `herdr_exec_start` and `herdr_exec_kill` — run, refused or failed — is one row with the
//! tool, the caller, the root, the path or command, the outcome and the time. The runtime
//! method `tools.audit` serves the newest rows (the side panel shows them).
//!
//! Invariants: a `started` row is written before the tool runs, and a call whose row cannot
//! be written is refused before it runs; the row is then updated with the outcome before
//! the tool's answer goes out (an answer the caller saw is in the log; a row left
//! `started` is a call the runtime did not finish). At most [`AUDIT_RETENTION`] rows are
//! kept, the oldest dropped first. The path, the whole argv (as JSON) or every path of a
//! patch is kept whole up to [`MAX_AUDIT_WHOLE_CHARS`] characters; a longer one is its
//! first [`MAX_AUDIT_TARGET_CHARS`] characters and the SHA-256 of the whole.

use std::path::Path;

use rusqlite::params;
use serde_json::{json, Value};

use crate::db::{off_worker, DbError, SharedConnection};

/// Rows kept.
pub const AUDIT_RETENTION: i64 = 2_000;
/// Longest path or command kept in a row, in characters.
pub const MAX_AUDIT_TARGET_CHARS: usize = 500;
/// Longest path or command kept whole, in characters.
pub const MAX_AUDIT_WHOLE_CHARS: usize = 8_192;
/// Most rows one `tools.audit` returns.
pub const MAX_AUDIT_PAGE: u64 = 200;

/// One audit row, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    /// The tool.
    pub tool: String,
    /// `mcp` or `bridge:<browser_session_ref>`.
    pub caller: String,
    /// The root the call acted in (`""` when it never got that far).
    pub root: String,
    /// The path, or the command as JSON.
    pub target: String,
    /// `ok`, `refused`, `failed`, `replayed` (an idempotent replay) or `interrupted`.
    pub outcome: String,
    /// One line: the exit code, the error's text, what changed.
    pub detail: String,
}

/// The audit table.
#[derive(Debug)]
pub struct AuditLog {
    conn: SharedConnection,
}

fn cut(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// The target as stored: whole, or its head and the SHA-256 of the whole (module invariants).
fn stored_target(text: &str) -> String {
    use sha2::Digest;
    if text.chars().count() <= MAX_AUDIT_WHOLE_CHARS {
        return text.to_owned();
    }
    let digest = sha2::Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{} … ({} chars, sha256 {hex})", cut(text, MAX_AUDIT_TARGET_CHARS), text.chars().count())
}

impl AuditLog {
    /// Opens `state.db` at `path` on a connection of its own (tests; the runtime shares
    /// the write tools' connection, see [`AuditLog::on`]).
    pub fn open(path: &Path) -> Result<Self, DbError> {
        Ok(Self::on(crate::db::open_shared(path)?))
    }

    /// The audit log on `conn`, a connection to `state.db` at the current schema.
    pub fn on(conn: SharedConnection) -> Self {
        Self { conn }
    }

    /// Records one call at `at` (unix ms).
    pub async fn record(&self, entry: AuditEntry, at: i64) -> Result<(), DbError> {
        self.start(entry, at).await.map(|_| ())
    }

    /// Updates row `seq` (from [`AuditLog::start`]) with the call's outcome.
    pub async fn finish(&self, seq: i64, entry: AuditEntry) -> Result<(), DbError> {
        let conn = self.conn.clone();
        off_worker(move || -> Result<(), DbError> {
            let conn = conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let changed = conn.execute(
                "UPDATE tool_audit SET root = ?2, target = ?3, outcome = ?4, detail = ?5 WHERE seq = ?1",
                params![
                    seq,
                    cut(&entry.root, MAX_AUDIT_TARGET_CHARS),
                    stored_target(&entry.target),
                    entry.outcome,
                    cut(&entry.detail, MAX_AUDIT_TARGET_CHARS)
                ],
            )?;
            if changed == 1 {
                Ok(())
            } else {
                Err(DbError::Sqlite(rusqlite::Error::QueryReturnedNoRows))
            }
        })
        .await
    }

    /// Writes a row for one call at `at` (unix ms), as `entry.outcome` says (`started` before
    /// a call runs); its `seq`.
    pub async fn start(&self, entry: AuditEntry, at: i64) -> Result<i64, DbError> {
        let conn = self.conn.clone();
        off_worker(move || -> Result<i64, DbError> {
            let conn = conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            conn.execute(
                "INSERT INTO tool_audit (at, tool, caller, root, target, outcome, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    at,
                    entry.tool,
                    cut(&entry.caller, 200),
                    cut(&entry.root, MAX_AUDIT_TARGET_CHARS),
                    stored_target(&entry.target),
                    entry.outcome,
                    cut(&entry.detail, MAX_AUDIT_TARGET_CHARS)
                ],
            )?;
            let seq = conn.last_insert_rowid();
            conn.execute("DELETE FROM tool_audit WHERE seq <= (SELECT MAX(seq) FROM tool_audit) - ?1", params![AUDIT_RETENTION])?;
            Ok(seq)
        })
        .await
    }

    /// The newest `limit` rows (newest first), older than `before` when given.
    pub async fn page(&self, limit: u64, before: Option<i64>) -> Result<Vec<Value>, DbError> {
        let conn = self.conn.clone();
        let limit = i64::try_from(limit.clamp(1, MAX_AUDIT_PAGE)).unwrap_or(50);
        off_worker(move || -> Result<Vec<Value>, DbError> {
            let conn = conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut stmt = conn.prepare(
                "SELECT seq, at, tool, caller, root, target, outcome, detail FROM tool_audit WHERE seq < ?1 ORDER BY seq DESC LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![before.unwrap_or(i64::MAX), limit], |r| {
                Ok(json!({
                    "seq": r.get::<_, i64>(0)?,
                    "at": r.get::<_, i64>(1)?,
                    "tool": r.get::<_, String>(2)?,
                    "caller": r.get::<_, String>(3)?,
                    "root": r.get::<_, String>(4)?,
                    "target": r.get::<_, String>(5)?,
                    "outcome": r.get::<_, String>(6)?,
                    "detail": r.get::<_, String>(7)?,
                }))
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn rows_come_back_newest_first_and_pages_go_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = AuditLog::open(&dir.path().join("state.db")).expect("open");
        for n in 0..3 {
            let entry = AuditEntry {
                tool: "herdr_exec".into(),
                caller: "mcp".into(),
                root: "/r".into(),
                target: format!("[\"{n}\"]"),
                outcome: "ok".into(),
                detail: "exit 0".into(),
            };
            log.record(entry, n).await.expect("record");
        }
        let page = log.page(2, None).await.expect("page");
        assert_eq!(page.len(), 2);
        assert_eq!(page[0]["target"], "[\"2\"]");
        let older = log.page(10, page[1]["seq"].as_i64()).await.expect("older");
        assert_eq!(older.len(), 1);
        assert_eq!(older[0]["at"], 0);
    }

    #[tokio::test]
    async fn a_started_row_is_updated_with_the_outcome_and_a_long_argv_keeps_its_hash() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = AuditLog::open(&dir.path().join("state.db")).expect("open");
        let argv = format!("[\"echo\",\"{}\"]", "x".repeat(2_000));
        let entry = AuditEntry {
            tool: "herdr_exec".into(),
            caller: "mcp".into(),
            root: String::new(),
            target: argv.clone(),
            outcome: "started".into(),
            detail: String::new(),
        };
        let seq = log.start(entry.clone(), 1).await.expect("start");
        let page = log.page(1, None).await.expect("page");
        assert_eq!((page[0]["outcome"].as_str(), page[0]["target"].as_str()), (Some("started"), Some(argv.as_str())));
        log.finish(seq, AuditEntry { outcome: "ok".into(), detail: "exit 0".into(), ..entry.clone() }).await.expect("finish");
        let page = log.page(5, None).await.expect("page");
        assert_eq!(page.len(), 1);
        assert_eq!((page[0]["outcome"].as_str(), page[0]["detail"].as_str()), (Some("ok"), Some("exit 0")));
        let huge = "y".repeat(MAX_AUDIT_WHOLE_CHARS + 1);
        log.record(AuditEntry { target: huge.clone(), ..entry }, 2).await.expect("record");
        let stored = log.page(1, None).await.expect("page")[0]["target"].as_str().unwrap_or_default().to_owned();
        assert!(stored.starts_with(&huge[..MAX_AUDIT_TARGET_CHARS]) && stored.contains("sha256 ") && stored.len() < 700, "{stored}");
    }
}
