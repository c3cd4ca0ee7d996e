//! The bridge's rows in `state.db`: every call the bridge claimed (by its idempotency key,
//! with its outcome once it finished) and every results message it wrote (by reply, with
//! its stable id and whether it was confirmed delivered).
//!
//! It also keeps the batches that asked the user (`bridge_batches`: which calls may be
//! decided and which were listed as pending), the user's decisions (`bridge_decisions`, by
//! batch and call) and the tool rounds of each (conversation, human turn) (`bridge_rounds`).
//!
//! Invariants: a call row is inserted before its tool runs and never claimed a second time
//! ([`BridgeStore::claim`] refuses an existing key); only `crate::retention` deletes one,
//! behind its reply's results tombstone, after which a call of that reply without a row reads
//! as claimed (interrupted), so nothing of it runs again; a results message, once
//! stored for a reply and its calls, is the answer to every replay of that reply; a
//! decision, once stored, never changes (retention may drop it with its batch, one never
//! answered for `bridge_result_days`: its reply then asks the user again); a round is
//! counted exactly when a results message is first stored (in the same transaction).

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};

use continuity_protocol::BridgeDecision;

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

/// A batch that asked the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskedBatch {
    /// The chat.
    pub conversation: String,
    /// The reply's message key.
    pub message: String,
    /// How many call lines.
    pub calls: u64,
    /// The 0-based indices of the calls a user may decide.
    pub decidable: Vec<usize>,
    /// The 0-based indices listed as pending in the newest `approval` answer.
    pub pending: Vec<usize>,
    /// Each call's hash (hex), by index (its idempotency key with the above).
    pub hashes: Vec<String>,
}

/// The bridge's connection to `state.db`.
#[derive(Debug)]
pub struct BridgeStore {
    /// The connection.
    conn: Connection,
}

pub(crate) fn outcome_columns(outcome: &CallOutcome) -> (&'static str, String) {
    match outcome {
        CallOutcome::Ok(value) => ("ok", value.to_string()),
        CallOutcome::Failed { code, message } => ("failed", serde_json::json!({"code": code, "message": message}).to_string()),
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
        let conn = crate::schema::open_state_db(path)?;
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
            // Retention reclaimed the reply's records behind its results tombstone: a call of
            // it with no record is one that may have run (never again; read as interrupted).
            None if self.reclaimed(&key.conversation, &key.message)? => Recorded::Claimed(None),
            None => Recorded::New,
            Some((kind, body)) => Recorded::Claimed(outcome_of(kind, body)),
        })
    }

    /// Whether retention reclaimed the records of (`conversation`, `message`): a delivered
    /// results message of it has lost its text (`crate::retention`).
    fn reclaimed(&self, conversation: &str, message: &str) -> Result<bool, DbError> {
        Ok(self
            .conn
            .query_row(
                "SELECT 1 FROM bridge_results WHERE conversation = ?1 AND message = ?2 AND text = '' AND delivered_at IS NOT NULL LIMIT 1",
                params![conversation, message],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
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

    /// Stores a results message and, when it is the first for its id, counts one round of
    /// (`conversation`, `human_turn`) in the same transaction. Returns the rounds used.
    pub fn store_results_and_round(
        &mut self,
        conversation: &str,
        message: &str,
        human_turn: &str,
        results: &StoredResults,
        now: i64,
    ) -> Result<u64, DbError> {
        let tx = self.conn.transaction()?;
        let inserted = tx.execute(
            "INSERT OR IGNORE INTO bridge_results (delivery_id, conversation, message, calls, text, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![results.delivery_id, conversation, message, results.calls as i64, results.text, now],
        )?;
        if inserted == 1 {
            tx.execute(
                "INSERT INTO bridge_rounds (conversation, human_turn, used) VALUES (?1, ?2, 1)
                 ON CONFLICT (conversation, human_turn) DO UPDATE SET used = used + 1",
                params![conversation, human_turn],
            )?;
        }
        tx.commit()?;
        self.rounds_used(conversation, human_turn)
    }

    /// The rounds of (`conversation`, `human_turn`) so far.
    pub fn rounds_used(&self, conversation: &str, human_turn: &str) -> Result<u64, DbError> {
        Ok(self
            .conn
            .query_row(
                "SELECT used FROM bridge_rounds WHERE conversation = ?1 AND human_turn = ?2",
                params![conversation, human_turn],
                |r| r.get::<_, i64>(0),
            )
            .optional()?
            .map_or(0, i64::unsigned_abs))
    }

    /// Records (or updates the pending list of) a batch that asks the user.
    pub fn ask(&mut self, batch_id: &str, batch: &AskedBatch, now: i64) -> Result<(), DbError> {
        let list = |v: &[usize]| serde_json::to_string(v).unwrap_or_else(|_| "[]".to_owned());
        let hashes = serde_json::to_string(&batch.hashes).unwrap_or_else(|_| "[]".to_owned());
        self.conn.execute(
            "INSERT INTO bridge_batches (batch_id, conversation, message, calls, decidable, pending, hashes, asked_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT (batch_id) DO UPDATE SET pending = excluded.pending, asked_at = excluded.asked_at",
            params![batch_id, batch.conversation, batch.message, batch.calls as i64, list(&batch.decidable), list(&batch.pending), hashes, now],
        )?;
        Ok(())
    }

    /// The batch `batch_id`, if it ever asked the user.
    pub fn asked(&self, batch_id: &str) -> Result<Option<AskedBatch>, DbError> {
        let row = self
            .conn
            .query_row(
                "SELECT conversation, message, calls, decidable, pending, hashes FROM bridge_batches WHERE batch_id = ?1",
                params![batch_id],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, String>(5)?,
                    ))
                },
            )
            .optional()?;
        Ok(row.map(|(conversation, message, calls, decidable, pending, hashes)| AskedBatch {
            conversation,
            message,
            calls: calls.unsigned_abs(),
            decidable: serde_json::from_str(&decidable).unwrap_or_default(),
            pending: serde_json::from_str(&pending).unwrap_or_default(),
            hashes: serde_json::from_str(&hashes).unwrap_or_default(),
        }))
    }

    /// The user's decision for call `index` (0-based) of `batch_id`.
    pub fn decision(&self, batch_id: &str, index: usize) -> Result<Option<BridgeDecision>, DbError> {
        let stored = self
            .conn
            .query_row(
                "SELECT decision FROM bridge_decisions WHERE batch_id = ?1 AND call_index = ?2",
                params![batch_id, index as i64],
                |r| r.get::<_, String>(0),
            )
            .optional()?;
        // A stored decision is one this code wrote; anything else reads as no decision.
        Ok(stored.and_then(|d| BridgeDecision::parse(&d).ok()))
    }

    /// Stores a decision (an existing one is kept: decisions never change) while its batch
    /// is there; `false` when retention reclaimed the batch since it was read (no decision
    /// is left without its batch).
    pub fn decide(&mut self, batch_id: &str, index: usize, decision: BridgeDecision, now: i64) -> Result<bool, DbError> {
        self.conn.execute(
            "INSERT OR IGNORE INTO bridge_decisions (batch_id, call_index, decision, decided_at)
               SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM bridge_batches WHERE batch_id = ?1)",
            params![batch_id, index as i64, decision.as_str(), now],
        )?;
        Ok(self.decision(batch_id, index)?.is_some())
    }

    /// Marks `delivery_id` delivered; `false` when there is no such message.
    pub fn delivered(&mut self, delivery_id: &str, now: i64) -> Result<bool, DbError> {
        self.conn.execute(
            "UPDATE bridge_results SET delivered_at = ?2 WHERE delivery_id = ?1 AND delivered_at IS NULL",
            params![delivery_id, now],
        )?;
        Ok(self.results(delivery_id)?.is_some())
    }

    /// How many calls were ever claimed (tests and diagnostics).
    pub fn claimed_calls(&self) -> Result<u64, DbError> {
        Ok(self.conn.query_row("SELECT COUNT(*) FROM bridge_calls", [], |r| r.get::<_, i64>(0))?.unsigned_abs())
    }
}
