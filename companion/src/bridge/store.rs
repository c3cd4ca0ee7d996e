//! The bridge's rows in `state.db`: every call the bridge claimed (by its idempotency key,
//! with its outcome once it finished) and every results message it wrote (by reply, with
//! its stable id and whether it was confirmed delivered).
//!
//! Invariants: a call row is inserted before its tool runs and never deleted or claimed a
//! second time ([`BridgeStore::claim`] refuses an existing key); a results message, once
//! stored for a reply and its calls, is the answer to every replay of that reply.

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};

use super::machine::{CallKey, CallOutcome, Recorded};
use crate::db::DbError;

/// A stored results message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResults {
    /// Its stable id.
    pub delivery_id: String,
    /// The message.
    pub text: String,
    /// How many call lines the reply held.
    pub calls: u64,
    /// Whether `bridge.delivered` confirmed it.
    pub delivered: bool,
}

/// The bridge's connection to `state.db`.
#[derive(Debug)]
pub struct BridgeStore {
    /// The connection.
    conn: Connection,
}

fn outcome_columns(outcome: &CallOutcome) -> (&'static str, String) {
    match outcome {
        CallOutcome::Ok(value) => ("ok", value.to_string()),
        CallOutcome::Failed { code, message } => (
            "failed",
            serde_json::json!({"code": code, "message": message}).to_string(),
        ),
        CallOutcome::Interrupted => ("interrupted", String::new()),
    }
}

fn outcome_of(kind: Option<String>, body: Option<String>) -> Option<CallOutcome> {
    let parsed = || body.as_deref().and_then(|b| serde_json::from_str::<serde_json::Value>(b).ok()).unwrap_or_default();
    match kind.as_deref()? {
        "ok" => Some(CallOutcome::Ok(parsed())),
        "failed" => {
            let value = parsed();
            let field = |key: &str| value.get(key).and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
            Some(CallOutcome::Failed { code: field("code"), message: field("message") })
        }
        _ => Some(CallOutcome::Interrupted),
    }
}

impl BridgeStore {
    /// Opens (creating if needed) the bridge's tables in the database at `path`.
    pub fn open(path: &Path) -> Result<Self, DbError> {
        let conn = crate::db::open_connection(path)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS bridge_calls (
                conversation TEXT NOT NULL,
                message TEXT NOT NULL,
                call_index INTEGER NOT NULL,
                call_hash TEXT NOT NULL,
                tool TEXT NOT NULL,
                claimed_at INTEGER NOT NULL,
                outcome_kind TEXT,
                outcome TEXT,
                PRIMARY KEY (conversation, message, call_index, call_hash)
            );
            CREATE TABLE IF NOT EXISTS bridge_results (
                delivery_id TEXT PRIMARY KEY,
                conversation TEXT NOT NULL,
                message TEXT NOT NULL,
                calls INTEGER NOT NULL,
                text TEXT NOT NULL,
                created_at INTEGER NOT NULL,
                delivered_at INTEGER
            );",
        )?;
        Ok(Self { conn })
    }

    /// What is recorded of `key`.
    pub fn recorded(&self, key: &CallKey) -> Result<Recorded, DbError> {
        let row = self
            .conn
            .query_row(
                "SELECT outcome_kind, outcome FROM bridge_calls WHERE conversation = ?1 AND message = ?2 AND call_index = ?3 AND call_hash = ?4",
                params![key.conversation, key.message, key.index as i64, key.hash],
                |r| Ok((r.get::<_, Option<String>>(0)?, r.get::<_, Option<String>>(1)?)),
            )
            .optional()?;
        Ok(match row {
            None => Recorded::New,
            Some((kind, body)) => Recorded::Claimed(outcome_of(kind, body)),
        })
    }

    /// Claims `key` for `tool`; `false` when it was claimed before (then it must not run).
    pub fn claim(&mut self, key: &CallKey, tool: &str, now: i64) -> Result<bool, DbError> {
        let inserted = self.conn.execute(
            "INSERT OR IGNORE INTO bridge_calls (conversation, message, call_index, call_hash, tool, claimed_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![key.conversation, key.message, key.index as i64, key.hash, tool, now],
        )?;
        Ok(inserted == 1)
    }

    /// Records how the call of `key` ended.
    pub fn finish(&mut self, key: &CallKey, outcome: &CallOutcome) -> Result<(), DbError> {
        let (kind, body) = outcome_columns(outcome);
        self.conn.execute(
            "UPDATE bridge_calls SET outcome_kind = ?5, outcome = ?6 WHERE conversation = ?1 AND message = ?2 AND call_index = ?3 AND call_hash = ?4 AND outcome_kind IS NULL",
            params![key.conversation, key.message, key.index as i64, key.hash, kind, body],
        )?;
        Ok(())
    }

    /// The stored results message of `delivery_id`.
    pub fn results(&self, delivery_id: &str) -> Result<Option<StoredResults>, DbError> {
        Ok(self
            .conn
            .query_row("SELECT text, calls, delivered_at FROM bridge_results WHERE delivery_id = ?1", params![delivery_id], |r| {
                Ok(StoredResults {
                    delivery_id: delivery_id.to_owned(),
                    text: r.get(0)?,
                    calls: r.get::<_, i64>(1)?.unsigned_abs(),
                    delivered: r.get::<_, Option<i64>>(2)?.is_some(),
                })
            })
            .optional()?)
    }

    /// Stores a results message (the first one stored for an id stays).
    pub fn store_results(&mut self, conversation: &str, message: &str, results: &StoredResults, now: i64) -> Result<(), DbError> {
        self.conn.execute(
            "INSERT OR IGNORE INTO bridge_results (delivery_id, conversation, message, calls, text, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![results.delivery_id, conversation, message, results.calls as i64, results.text, now],
        )?;
        Ok(())
    }

    /// Marks `delivery_id` delivered; `false` when there is no such message.
    pub fn delivered(&mut self, delivery_id: &str, now: i64) -> Result<bool, DbError> {
        self.conn.execute("UPDATE bridge_results SET delivered_at = ?2 WHERE delivery_id = ?1 AND delivered_at IS NULL", params![delivery_id, now])?;
        Ok(self.results(delivery_id)?.is_some())
    }

    /// How many calls were ever claimed (tests and diagnostics).
    pub fn claimed_calls(&self) -> Result<u64, DbError> {
        Ok(self.conn.query_row("SELECT COUNT(*) FROM bridge_calls", [], |r| r.get::<_, i64>(0))?.unsigned_abs())
    }
}
