//! Retention of the stores in `state.db` (issue 26 "Retention", SPEC W4): what grows with
//! use is bounded, and nothing is reclaimed that a reader may still need.
//!
//! - **Journal** (`journal_turns`) and **Work Memory** (`wm_turns`, `wm_evidence`): a chain
//!   over its limit of turns (or evidence) loses its oldest rows **only behind a verified
//!   checkpoint** — the chain's latest Work Memory checkpoint whose `sha256` recomputes from
//!   its stored fields and whose anchor (`through_message_id` `m<n>`, `through_evidence_id`
//!   `e<n>`) is a row of the same chain. Only rows older than the anchor go, never the anchor
//!   itself, and in the journal never the chain's first user turn (the goal a handoff seed
//!   names); the journal's anchor is the journal turn whose `message_id` is the anchor
//!   turn's `provider_message_ref`. A chain without such a checkpoint keeps everything and
//!   is reported as `withheld`.
//! - **Work Memory checkpoints** (`wm_checkpoints`): a chain keeps its latest checkpoint and
//!   at most [`WM_CHECKPOINTS_KEPT`] superseded ones (and their search rows); older superseded
//!   revisions go, only while the latest verifies (as above). Nothing reads a superseded
//!   revision but search: the revision compare-and-swap and resume read the latest.
//! - **Bridge results** (`bridge_results`): a results message *delivered* more than
//!   `bridge_result_days` ago loses its text and stays as a tombstone (its delivery key,
//!   delivered), so a replayed reply finds it delivered; an undelivered one is kept (it is not in its
//!   chat yet). Behind a tombstone the reply's call records (`bridge_calls`, with each tool's
//!   output), its approval batch and its decisions go too: a replay of the same reply is
//!   answered from the tombstone before any call is looked up, and a call of a *reclaimed*
//!   reply (a tombstone of the same conversation and message) that has no record reads as
//!   claimed without an outcome (`interrupted`, never run): a reply read differently later
//!   still runs nothing twice. Calls of a reply with no results message are kept.
//! - **Unanswered approval batches** (`bridge_batches`, `bridge_decisions`): a batch with no
//!   results message of its own (the user never decided every call it asked about, or the
//!   reply never came back after the last decision), asked and last decided more than
//!   `bridge_result_days` ago, goes with its decisions. A Run that went only lets a replay
//!   ask the user again (never runs a mutating call, nor a read with Auto off, on a decision
//!   that went); a Skip is kept as its call's record in `bridge_calls` (skipped, as its
//!   results would say), which a replay reads before any decision, so a skipped call never
//!   runs, not even a read with Auto on. A call claimed before stays in `bridge_calls`
//!   (answered from its record, never run again). A batch with a results message is left
//!   to the rule above (undelivered: kept), and so is every call record. A card left open
//!   past the limit and pressed then is refused (no such batch, and a press racing the
//!   reclaim stores no decision); the next replay asks again.
//! - **Inbox** (`inbox_tasks`): a task *acknowledged* more than `inbox_days` ago is aged
//!   out; a running or unacknowledged one is kept.
//! - **Exec idempotency keys** (`exec_runs`, `herdr_exec`): a key replays its first result
//!   (or `interrupted`) instead of running again for at least [`EXEC_RUN_RETRY_MS`] (its
//!   retry window: no key younger is ever reclaimed, finished or not); after that it is kept
//!   [`EXEC_RUN_DAYS`] days, or until more than [`EXEC_RUNS_KEPT`] keys exist, when the
//!   oldest past the window go first.
//! - **Kept on purpose, unbounded**: a results tombstone (one small row per reply that ran
//!   tools) is what makes a replay of its reply run nothing once its call records are gone,
//!   and the bridge cannot tell a replay from a new reply any other way (a reply carries no
//!   order or time; a branch switch can make an old reply the page's last one again).
//!   `bridge_rounds` (one row per human turn with tool rounds, no time) is what keeps a
//!   human turn at 6 rounds: a row that went would give a revived turn (its last reply
//!   still shown, read again) a new allowance without a new message. Bounding either needs
//!   a rule that gives up one of those guarantees.
//!
//! The limits live in `retention_limits` (`store`, `value`); [`Limits::checked`] refuses a
//! value outside [`BOUNDS`] with the bounds in the message. [`Retention::reclaim`] runs at
//! runtime start, every [`RECLAIM_EVERY`], and after `retention.set`, in transactions of
//! at most [`BATCH`] rows, each reading the limits in force in its own transaction (a
//! reclaim never goes on under limits the user replaced since it started). What a
//! `retention.set` leaves goes on in one background task ([`Retention::background_wanted`]:
//! a later Save asks it for one more pass, never a second task). A table that does not
//! exist (its service could not open) is skipped.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::db::DbError;
use crate::work_memory::store::{fts_rowid, FtsSource};

/// How often the runtime reclaims (also once at start).
pub const RECLAIM_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);

const DAY_MS: i64 = 24 * 3600 * 1000;

/// The retry window of a `herdr_exec` idempotency key: younger keys are never reclaimed.
pub const EXEC_RUN_RETRY_MS: i64 = DAY_MS;
/// Days an `exec_runs` key is kept at most.
pub const EXEC_RUN_DAYS: i64 = 30;
/// Most `exec_runs` keys kept (past the retry window, the oldest over it go).
pub const EXEC_RUNS_KEPT: u64 = 10_000;

/// Superseded Work Memory checkpoints kept per chain besides its latest.
pub const WM_CHECKPOINTS_KEPT: u64 = 100;

/// Rows removed per transaction of [`Retention::reclaim`].
pub const BATCH: u64 = 500;

/// How long `retention.set` reclaims before it answers; what is left goes on after the
/// answer (the worker waits 40 s for `retention.set`, the runtime 30 s for any request).
pub const SET_RECLAIM_BUDGET: std::time::Duration = std::time::Duration::from_secs(3);

/// The user's limits (options page, `retention.set`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Journal turns kept per chain beyond which the oldest behind a checkpoint go.
    pub journal_turns: u64,
    /// Work Memory turns (and evidence items) kept per chain, likewise.
    pub work_memory_turns: u64,
    /// Days a delivered bridge results message is kept.
    pub bridge_result_days: u64,
    /// Days an acknowledged inbox task is kept.
    pub inbox_days: u64,
}

/// The defaults.
pub const DEFAULTS: Limits = Limits { journal_turns: 5_000, work_memory_turns: 5_000, bridge_result_days: 30, inbox_days: 30 };

/// `(name, min, max)` of each limit.
pub const BOUNDS: [(&str, u64, u64); 4] =
    [("journal_turns", 100, 1_000_000), ("work_memory_turns", 100, 1_000_000), ("bridge_result_days", 1, 3_650), ("inbox_days", 1, 3_650)];

impl Limits {
    fn get(&self, name: &str) -> u64 {
        match name {
            "journal_turns" => self.journal_turns,
            "work_memory_turns" => self.work_memory_turns,
            "bridge_result_days" => self.bridge_result_days,
            _ => self.inbox_days,
        }
    }

    fn set(&mut self, name: &str, value: u64) {
        match name {
            "journal_turns" => self.journal_turns = value,
            "work_memory_turns" => self.work_memory_turns = value,
            "bridge_result_days" => self.bridge_result_days = value,
            _ => self.inbox_days = value,
        }
    }

    /// Reads `{"journal_turns"?: n, …}` over `base`: every named limit must be an integer
    /// within [`BOUNDS`]; anything else is refused with what is allowed.
    pub fn checked(base: Limits, value: &Value) -> std::result::Result<Limits, String> {
        let Some(object) = value.as_object() else {
            return Err(
                "retention.set needs params.limits, an object of limits (journal_turns, work_memory_turns, bridge_result_days, inbox_days)"
                    .to_owned(),
            );
        };
        let mut limits = base;
        for (name, given) in object {
            let Some((_, min, max)) = BOUNDS.iter().find(|(known, _, _)| known == name) else {
                return Err(format!(
                    "retention.set: `{name}` is not a limit; send journal_turns, work_memory_turns, bridge_result_days or inbox_days"
                ));
            };
            match given.as_u64().filter(|n| (*min..=*max).contains(n)) {
                Some(n) => limits.set(name, n),
                None => return Err(format!("retention.set: {name} must be an integer from {min} to {max}, not {given}")),
            }
        }
        Ok(limits)
    }

    /// The limits and their bounds, as `retention` answers them.
    pub fn to_json(&self) -> Value {
        let bounds: serde_json::Map<String, Value> = BOUNDS
            .iter()
            .map(|(name, min, max)| ((*name).to_owned(), json!({"min": min, "max": max, "default": DEFAULTS.get(name)})))
            .collect();
        json!({"limits": self, "bounds": bounds})
    }
}

/// Rows and text bytes of one store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoreSize {
    /// `journal`, `work_memory`, `bridge_results`, `inbox`.
    pub store: &'static str,
    /// Rows.
    pub rows: u64,
    /// Bytes of the stored texts.
    pub bytes: u64,
}

/// What one [`Retention::reclaim`] removed, and what it kept for want of a checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Reclaimed {
    /// Journal turns removed.
    pub journal_turns: u64,
    /// Work Memory turns removed.
    pub work_memory_turns: u64,
    /// Work Memory evidence items removed.
    pub work_memory_evidence: u64,
    /// Superseded Work Memory checkpoints removed.
    pub work_memory_checkpoints: u64,
    /// Bridge results messages removed.
    pub bridge_results: u64,
    /// Bridge call records (with their approval batches and decisions) removed behind a
    /// results tombstone.
    pub bridge_calls: u64,
    /// Approval batches never answered (no results message), with their decisions, removed
    /// after `bridge_result_days`.
    pub bridge_batches: u64,
    /// Inbox tasks removed.
    pub inbox_tasks: u64,
    /// `herdr_exec` idempotency keys removed.
    pub exec_runs: u64,
    /// Rows over a limit kept because their chain has no verified checkpoint behind them.
    pub withheld: u64,
}

/// The retention service: one connection to `state.db`.
#[derive(Debug)]
pub struct Retention {
    conn: Mutex<Connection>,
    /// The background reclaim after `retention.set`: `(running, again)` — one task at a
    /// time; a Save while it runs asks it for one more pass instead of a second task.
    background: Mutex<(bool, bool)>,
    /// How long `retention.set` reclaims before it answers ([`SET_RECLAIM_BUDGET`]).
    set_budget: std::time::Duration,
}

type Result<T> = std::result::Result<T, DbError>;

impl Retention {
    /// Opens `path` (creating `retention_limits`).
    pub fn open(path: &Path) -> Result<Self> {
        let conn = crate::schema::open_state_db(path)?;
        Ok(Self { conn: Mutex::new(conn), background: Mutex::new((false, false)), set_budget: SET_RECLAIM_BUDGET })
    }

    /// This service with `retention.set` reclaiming for `budget` before it answers (tests:
    /// `ZERO` leaves work for the background reclaim after one batch).
    pub fn with_set_budget(mut self, budget: std::time::Duration) -> Self {
        self.set_budget = budget;
        self
    }

    /// How long `retention.set` reclaims before it answers.
    pub fn set_budget(&self) -> std::time::Duration {
        self.set_budget
    }

    /// A background reclaim is wanted (a `retention.set` left work): `true` when the caller
    /// is to start the one task (none runs); else the running one goes once more before it
    /// ends (merged, never a second task).
    pub fn background_wanted(&self) -> bool {
        let mut state = self.background.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if state.0 {
            state.1 = true;
            return false;
        }
        *state = (true, false);
        true
    }

    /// The background task finished a pass: `true` when a Save asked for one more meanwhile
    /// (the task goes on), `false` when it ends (the next Save starts a new one).
    pub fn background_again(&self) -> bool {
        let mut state = self.background.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if std::mem::take(&mut state.1) {
            return true;
        }
        state.0 = false;
        false
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The limits in force (the defaults for any not set).
    pub fn limits(&self) -> Result<Limits> {
        stored_limits(&self.conn())
    }

    /// Stores `limits` (already [`Limits::checked`]).
    pub fn set_limits(&self, limits: &Limits) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        for (name, _, _) in BOUNDS {
            tx.execute(
                "INSERT INTO retention_limits (store, value) VALUES (?1, ?2) ON CONFLICT (store) DO UPDATE SET value = excluded.value",
                params![name, limits.get(name) as i64],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Rows and text bytes per store (a store whose table is missing counts zero).
    pub fn sizes(&self) -> Result<Vec<StoreSize>> {
        let conn = self.conn();
        sizes(&conn)
    }

    /// Reclaims everything the stored limits allow at `now_ms`, batch by batch.
    pub fn reclaim(&self, now_ms: i64) -> Result<Reclaimed> {
        Ok(self.reclaim_within(now_ms, std::time::Duration::MAX)?.0)
    }

    /// Reclaims under the stored limits at `now_ms` until nothing is left or `budget_time` has
    /// passed (looked at between batches; the first batch always runs): what went, and
    /// whether nothing is left. The connection is locked per batch, so `retention.get` and
    /// `retention.set` are answered between the batches of a long reclaim.
    pub fn reclaim_within(&self, now_ms: i64, budget_time: std::time::Duration) -> Result<(Reclaimed, bool)> {
        self.reclaim_observed(now_ms, budget_time, &mut |_| ())
    }

    /// [`Self::reclaim_within`], calling `after_batch` with what each committed batch
    /// removed, between batches (the connection unlocked): tests change the limits there.
    pub fn reclaim_observed(
        &self,
        now_ms: i64,
        budget_time: std::time::Duration,
        after_batch: &mut dyn FnMut(&Reclaimed),
    ) -> Result<(Reclaimed, bool)> {
        let started = std::time::Instant::now();
        let mut limits = self.limits()?;
        // IMMEDIATE, as every write here: a deferred transaction reads, then fails with
        // SQLITE_BUSY_SNAPSHOT on its first write when another connection committed meanwhile.
        // In batches of at most BATCH rows, one transaction each, so the write lock is never
        // held for the whole reclaim; every batch is again only behind a verified checkpoint.
        let mut total = Reclaimed::default();
        // What only a few reclaims find (superseded checkpoints, call records behind a
        // tombstone, unanswered batches) is looked for first, read-only (WAL: no lock), so
        // a reclaim with none holds the write lock no longer than the other stores need.
        let mut rare = rare_work(&self.conn(), &limits, now_ms)?;
        loop {
            let mut conn = self.conn();
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            // The limits in force now, read in the batch's own transaction: a reclaim never
            // goes on under limits the user has replaced since it started (the rare stores'
            // work is looked for again when they changed).
            let stored = stored_limits(&tx)?;
            if stored != limits {
                limits = stored;
                rare = rare_work(&tx, &limits, now_ms)?;
            }
            let mut budget = BATCH;
            let pass = reclaim(&tx, &limits, now_ms, &mut budget, rare)?;
            tx.commit()?;
            drop(conn);
            after_batch(&pass);
            total.journal_turns += pass.journal_turns;
            total.work_memory_turns += pass.work_memory_turns;
            total.work_memory_evidence += pass.work_memory_evidence;
            total.work_memory_checkpoints += pass.work_memory_checkpoints;
            total.bridge_results += pass.bridge_results;
            total.bridge_calls += pass.bridge_calls;
            total.bridge_batches += pass.bridge_batches;
            total.inbox_tasks += pass.inbox_tasks;
            total.exec_runs += pass.exec_runs;
            // The pass that found nothing more to remove counts what is withheld.
            total.withheld = pass.withheld;
            // A pass that left budget removed everything the limits allow: finished (also
            // when the time budget is spent now: the answer says it is done).
            if budget > 0 {
                return Ok((total, true));
            }
            if started.elapsed() >= budget_time {
                return Ok((total, false));
            }
        }
    }
}

/// The limits stored on `conn` (the defaults for any not set, or without the table; a stored
/// value outside its bound reads as the nearest bound).
pub fn stored_limits(conn: &Connection) -> Result<Limits> {
    let mut limits = DEFAULTS;
    if !table_exists(conn, "retention_limits")? {
        return Ok(limits);
    }
    let mut statement = conn.prepare("SELECT store, value FROM retention_limits")?;
    let rows = statement.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
    for row in rows {
        let (name, value) = row?;
        if let Some((_, min, max)) = BOUNDS.iter().find(|(known, _, _)| *known == name) {
            limits.set(&name, value.unsigned_abs().clamp(*min, *max));
        }
    }
    Ok(limits)
}

/// What `herdr-companion doctor` prints about storage: one line per store with its rows,
/// bytes and limit.
pub fn describe(conn: &Connection) -> Result<Vec<String>> {
    let limits = stored_limits(conn)?;
    let limit_of = |store: &str| match store {
        "journal" => format!("limit {} turns per chain, reclaimed behind a verified checkpoint", limits.journal_turns),
        "work_memory" => format!("limit {} turns per chain, reclaimed behind a verified checkpoint", limits.work_memory_turns),
        "bridge_results" => format!("delivered ones aged out after {} days", limits.bridge_result_days),
        _ => format!("acknowledged tasks aged out after {} days", limits.inbox_days),
    };
    Ok(sizes(conn)?
        .into_iter()
        .map(|size| format!("storage {}: {} rows, {} bytes of text ({})", size.store, size.rows, size.bytes, limit_of(size.store)))
        .collect())
}

fn table_exists(conn: &Connection, table: &str) -> Result<bool> {
    Ok(conn.query_row("SELECT 1 FROM sqlite_master WHERE name = ?1", params![table], |_| Ok(())).optional()?.is_some())
}

/// Rows and text bytes per store, read on `conn` (also used by `herdr-companion doctor`).
pub fn sizes(conn: &Connection) -> Result<Vec<StoreSize>> {
    let measure = |store: &'static str, parts: &[(&str, &str)]| -> Result<StoreSize> {
        let mut size = StoreSize { store, rows: 0, bytes: 0 };
        for (table, bytes) in parts {
            if table_exists(conn, table)? {
                let (rows, total): (i64, i64) =
                    conn.query_row(&format!("SELECT count(*), coalesce(sum({bytes}), 0) FROM {table}"), [], |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })?;
                size.rows += rows.unsigned_abs();
                size.bytes += total.unsigned_abs();
            }
        }
        Ok(size)
    };
    Ok(vec![
        // Bytes, not characters: `length` of a TEXT counts characters, of a BLOB bytes.
        measure("journal", &[("journal_turns", "length(CAST(text AS BLOB))")])?,
        measure(
            "work_memory",
            &[
                ("wm_turns", "length(CAST(text AS BLOB))"),
                ("wm_evidence", "length(CAST(content AS BLOB))"),
                ("wm_checkpoints", "length(CAST(summary AS BLOB)) + length(CAST(checkpoint_json AS BLOB))"),
            ],
        )?,
        measure(
            "bridge_results",
            &[("bridge_results", "length(CAST(text AS BLOB))"), ("bridge_calls", "length(CAST(coalesce(outcome, '') AS BLOB))")],
        )?,
        measure("inbox", &[("inbox_tasks", "length(CAST(prompt_preview AS BLOB)) + length(CAST(coalesce(result, '') AS BLOB))")])?,
    ])
}

/// The chain's latest checkpoint when it verifies: its `sha256` recomputes from its fields
/// and its anchors are rows of the chain. `(turn anchor rowid, evidence anchor rowid)`.
fn verified_checkpoint(conn: &Connection, chain: &str) -> Result<Option<(Option<i64>, Option<i64>)>> {
    if !table_exists(conn, "wm_checkpoints")? {
        return Ok(None);
    }
    let latest = conn
        .query_row(
            "SELECT summary, checkpoint_json, sha256, through_message_id, through_evidence_id FROM wm_checkpoints
             WHERE continuity_id = ?1 ORDER BY revision DESC LIMIT 1",
            params![chain],
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, Option<String>>(4)?,
                ))
            },
        )
        .optional()?;
    let Some((summary, checkpoint_json, digest, through_message, through_evidence)) = latest else { return Ok(None) };
    let recomputed =
        crate::work_memory::store::checkpoint_digest(&summary, &checkpoint_json, through_message.as_deref(), through_evidence.as_deref());
    if recomputed != digest {
        return Ok(None);
    }
    let anchor = |anchor: Option<&str>, prefix: char, table: &str| -> Result<Option<Option<i64>>> {
        let Some(anchor) = anchor else { return Ok(Some(None)) };
        let Some(row) = anchor.strip_prefix(prefix).and_then(|n| n.parse::<i64>().ok()) else { return Ok(None) };
        let found = conn
            .query_row(&format!("SELECT 1 FROM {table} WHERE id = ?1 AND continuity_id = ?2"), params![row, chain], |_| Ok(()))
            .optional()?;
        Ok(found.map(|()| Some(row)))
    };
    let (Some(turn), Some(evidence)) =
        (anchor(through_message.as_deref(), 'm', "wm_turns")?, anchor(through_evidence.as_deref(), 'e', "wm_evidence")?)
    else {
        return Ok(None);
    };
    Ok(Some((turn, evidence)))
}

/// Chains of `table` with more than `limit` rows, and their counts.
fn over_limit(conn: &Connection, table: &str, limit: u64) -> Result<Vec<(String, u64)>> {
    let mut statement =
        conn.prepare(&format!("SELECT continuity_id, count(*) FROM {table} GROUP BY continuity_id HAVING count(*) > ?1"))?;
    let rows = statement.query_map(params![limit as i64], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?.unsigned_abs())))?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Superseded checkpoints of each chain beyond the newest [`WM_CHECKPOINTS_KEPT`], only in a
/// chain whose latest checkpoint verifies, with their search rows; returns how many went.
fn reclaim_checkpoints(conn: &Connection, budget: &mut u64) -> Result<u64> {
    let chains: Vec<(String, i64)> = {
        let mut statement =
            conn.prepare("SELECT continuity_id, max(revision) FROM wm_checkpoints GROUP BY continuity_id HAVING count(*) > ?1 + 1")?;
        let rows = statement.query_map(params![WM_CHECKPOINTS_KEPT as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()?
    };
    let mut gone = 0;
    for (chain, latest) in chains {
        if *budget == 0 || verified_checkpoint(conn, &chain)?.is_none() {
            continue;
        }
        // Revisions count up from 1 without gaps: the latest and the KEPT before it stay.
        let below = latest - WM_CHECKPOINTS_KEPT as i64 - 1;
        let revisions: Vec<i64> = {
            let mut statement =
                conn.prepare("SELECT revision FROM wm_checkpoints WHERE continuity_id = ?1 AND revision <= ?2 ORDER BY revision LIMIT ?3")?;
            let rows = statement.query_map(params![chain, below, *budget as i64], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<Vec<_>>>()?
        };
        for revision in &revisions {
            let row: Option<i64> = conn
                .query_row("SELECT rowid FROM wm_checkpoints WHERE continuity_id = ?1 AND revision = ?2", params![chain, revision], |r| {
                    r.get(0)
                })
                .optional()?;
            conn.execute("DELETE FROM wm_checkpoints WHERE continuity_id = ?1 AND revision = ?2", params![chain, revision])?;
            delete_search_rows(conn, FtsSource::Checkpoint, row)?;
        }
        let count = revisions.len() as u64;
        *budget -= count;
        gone += count;
    }
    Ok(gone)
}

/// The call records of replies whose results message is a tombstone (text reclaimed), with
/// the approval batch and decisions of that message; returns how many call records went.
fn reclaim_bridge_calls(conn: &Connection, budget: &mut u64) -> Result<u64> {
    let gone = conn.execute(
        "DELETE FROM bridge_calls WHERE rowid IN (SELECT c.rowid FROM bridge_calls c JOIN bridge_results r
           ON r.conversation = c.conversation AND r.message = c.message WHERE r.text = '' AND r.delivered_at IS NOT NULL LIMIT ?1)",
        params![*budget as i64],
    )? as u64;
    *budget -= gone;
    for table in ["bridge_decisions", "bridge_batches"] {
        if table_exists(conn, table)? {
            let removed = conn.execute(
                &format!(
                    "DELETE FROM {table} WHERE rowid IN (SELECT t.rowid FROM {table} t JOIN bridge_results r ON r.delivery_id = t.batch_id
                       WHERE r.text = '' AND r.delivered_at IS NOT NULL LIMIT ?1)"
                ),
                params![*budget as i64],
            )? as u64;
            *budget -= removed;
        }
    }
    Ok(gone)
}

/// The approval batches asked, and last decided, before `?1` that have no results message
/// of their own (see the module doc for why they may go), at most `?2`.
const UNANSWERED_BATCHES: &str = "SELECT b.batch_id FROM bridge_batches b WHERE b.asked_at < ?1
      AND NOT EXISTS (SELECT 1 FROM bridge_results r WHERE r.delivery_id = b.batch_id)
      AND NOT EXISTS (SELECT 1 FROM bridge_decisions d WHERE d.batch_id = b.batch_id AND d.decided_at >= ?1)
    LIMIT ?2";

/// Each Skip of batch `?1` as its call's record (`?3`, `?4`: the outcome a skipped call is
/// answered with, `bridge::machine::skipped`), unless the call has one: a replay reads the record before any
/// decision, so a skipped call never runs once its batch is gone.
const SKIPS_AS_RECORDS: &str =
    "INSERT OR IGNORE INTO bridge_calls (conversation, message, call_index, call_hash, tool, claimed_at, outcome_kind, outcome)
    SELECT b.conversation, b.message, d.call_index, json_extract(b.hashes, '$[' || d.call_index || ']'), '', ?2, ?3, ?4
      FROM bridge_batches b JOIN bridge_decisions d ON d.batch_id = b.batch_id
     WHERE b.batch_id = ?1 AND d.decision = 'skip' AND json_valid(b.hashes)
       AND json_type(b.hashes, '$[' || d.call_index || ']') = 'text'";

/// Unanswered approval batches asked before `cutoff`, each with its decisions (a Skip kept
/// as its call's record; never the reply's other call records); returns how many batches went.
fn reclaim_unanswered_batches(conn: &Connection, cutoff: i64, now_ms: i64, budget: &mut u64) -> Result<u64> {
    let ids: Vec<String> = {
        let mut statement = conn.prepare(UNANSWERED_BATCHES)?;
        let rows = statement.query_map(params![cutoff, *budget as i64], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()?
    };
    let mut gone = 0;
    for id in ids {
        // A batch and its decisions go together: a batch never goes without its decisions.
        let decisions: i64 = conn.query_row("SELECT count(*) FROM bridge_decisions WHERE batch_id = ?1", params![id], |r| r.get(0))?;
        let rows = decisions.unsigned_abs() + 1;
        if rows > *budget {
            // The rest goes in the next transaction (a spent budget says there is more).
            *budget = 0;
            break;
        }
        let (kind, body) = crate::bridge::store::outcome_columns(&crate::bridge::machine::skipped());
        conn.execute(SKIPS_AS_RECORDS, params![id, now_ms, kind, body])?;
        conn.execute("DELETE FROM bridge_decisions WHERE batch_id = ?1", params![id])?;
        conn.execute("DELETE FROM bridge_batches WHERE batch_id = ?1", params![id])?;
        *budget -= rows;
        gone += 1;
    }
    Ok(gone)
}

/// Deletes the oldest `limit` rows of `chain` in `table` (`wm_turns` / `wm_evidence`) below
/// `anchor`, and their search rows by rowid (never a scan of `wm_fts`); returns how many.
fn delete_oldest(conn: &Connection, table: &str, source: FtsSource, chain: &str, anchor: i64, limit: u64) -> Result<u64> {
    let ids: Vec<i64> = {
        let mut statement = conn.prepare(&format!("SELECT id FROM {table} WHERE continuity_id = ?1 AND id < ?2 ORDER BY id LIMIT ?3"))?;
        let rows = statement.query_map(params![chain, anchor, limit as i64], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()?
    };
    let mut delete = conn.prepare(&format!("DELETE FROM {table} WHERE id = ?1"))?;
    for id in &ids {
        delete.execute([id])?;
        delete_search_rows(conn, source, Some(*id))?;
    }
    Ok(ids.len() as u64)
}

/// Deletes the `wm_fts` row of the source row `row`, by its rowid (the table comes with the
/// Work Memory tables, state.db migration 4).
fn delete_search_rows(conn: &Connection, source: FtsSource, row: Option<i64>) -> Result<()> {
    if let Some(row) = row {
        conn.prepare_cached("DELETE FROM wm_fts WHERE rowid = ?1")?.execute([fts_rowid(source, row)])?;
    }
    Ok(())
}

/// Which rare parts of a reclaim have work.
#[derive(Debug, Clone, Copy)]
struct Rare {
    /// Superseded checkpoints over the limit.
    checkpoints: bool,
    /// Call records behind a results tombstone.
    calls: bool,
    /// Unanswered approval batches past the limit.
    batches: bool,
}

/// Looks (read-only) for which rare parts of a reclaim have work.
fn rare_work(conn: &Connection, limits: &Limits, now_ms: i64) -> Result<Rare> {
    let found =
        |sql: &str, params: &[&dyn rusqlite::ToSql]| -> Result<bool> { Ok(conn.query_row(sql, params, |_| Ok(())).optional()?.is_some()) };
    let checkpoints = table_exists(conn, "wm_checkpoints")?
        && found("SELECT 1 FROM wm_checkpoints GROUP BY continuity_id HAVING count(*) > ?1 + 1 LIMIT 1", &[&(WM_CHECKPOINTS_KEPT as i64)])?;
    let cutoff = now_ms - limits.bridge_result_days as i64 * DAY_MS;
    let calls = table_exists(conn, "bridge_calls")?
        && table_exists(conn, "bridge_results")?
        && table_exists(conn, "bridge_batches")?
        && found(
            "SELECT 1 FROM bridge_results r WHERE r.delivered_at IS NOT NULL AND (r.text <> '' AND r.delivered_at < ?1 OR r.text = '')
               AND (EXISTS (SELECT 1 FROM bridge_calls c WHERE c.conversation = r.conversation AND c.message = r.message)
                 OR EXISTS (SELECT 1 FROM bridge_batches b WHERE b.batch_id = r.delivery_id)) LIMIT 1",
            &[&cutoff],
        )?;
    let batches = table_exists(conn, "bridge_results")?
        && table_exists(conn, "bridge_batches")?
        && table_exists(conn, "bridge_decisions")?
        && found(UNANSWERED_BATCHES, &[&cutoff, &1])?;
    Ok(Rare { checkpoints, calls, batches })
}

fn reclaim(conn: &Connection, limits: &Limits, now_ms: i64, budget: &mut u64, rare: Rare) -> Result<Reclaimed> {
    let mut out = Reclaimed::default();
    if table_exists(conn, "wm_turns")? {
        for (chain, count) in over_limit(conn, "wm_turns", limits.work_memory_turns)? {
            let excess = count - limits.work_memory_turns;
            match verified_checkpoint(conn, &chain)? {
                Some((Some(anchor), _)) => {
                    let gone = delete_oldest(conn, "wm_turns", FtsSource::Turn, &chain, anchor, excess.min(*budget))?;
                    *budget -= gone;
                    out.work_memory_turns += gone;
                    out.withheld += excess - gone;
                }
                _ => out.withheld += excess,
            }
        }
    }
    if table_exists(conn, "wm_evidence")? {
        for (chain, count) in over_limit(conn, "wm_evidence", limits.work_memory_turns)? {
            let excess = count - limits.work_memory_turns;
            match verified_checkpoint(conn, &chain)? {
                Some((_, Some(anchor))) => {
                    let gone = delete_oldest(conn, "wm_evidence", FtsSource::Evidence, &chain, anchor, excess.min(*budget))?;
                    *budget -= gone;
                    out.work_memory_evidence += gone;
                    out.withheld += excess - gone;
                }
                _ => out.withheld += excess,
            }
        }
    }
    if rare.checkpoints {
        out.work_memory_checkpoints = reclaim_checkpoints(conn, budget)?;
    }
    if table_exists(conn, "journal_turns")? {
        for (chain, count) in over_limit(conn, "journal_turns", limits.journal_turns)? {
            let excess = count - limits.journal_turns;
            let anchor = match verified_checkpoint(conn, &chain)? {
                Some((Some(turn), _)) => conn
                    .query_row(
                        "SELECT j.turn_id FROM journal_turns j JOIN wm_turns w ON w.provider_message_ref = j.message_id
                         WHERE w.id = ?1 AND j.continuity_id = ?2",
                        params![turn, chain],
                        |r| r.get::<_, i64>(0),
                    )
                    .optional()?,
                _ => None,
            };
            let Some(anchor) = anchor else {
                out.withheld += excess;
                continue;
            };
            let goal: Option<i64> =
                conn.query_row("SELECT min(turn_id) FROM journal_turns WHERE continuity_id = ?1 AND role = 'user'", params![chain], |r| {
                    r.get(0)
                })?;
            let victims: Vec<(i64, String)> = {
                let mut statement = conn.prepare(
                    "SELECT turn_id, text FROM journal_turns WHERE continuity_id = ?1 AND turn_id < ?2 AND turn_id IS NOT ?3 ORDER BY turn_id LIMIT ?4",
                )?;
                let rows = statement.query_map(params![chain, anchor, goal, excess.min(*budget) as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
                rows.collect::<rusqlite::Result<Vec<_>>>()?
            };
            for (turn_id, text) in &victims {
                conn.execute("INSERT INTO journal_fts (journal_fts, rowid, text) VALUES ('delete', ?1, ?2)", params![turn_id, text])?;
                conn.execute("DELETE FROM journal_turns WHERE turn_id = ?1", params![turn_id])?;
            }
            let gone = victims.len() as u64;
            *budget -= gone;
            out.journal_turns += gone;
            out.withheld += excess - gone;
        }
    }
    if table_exists(conn, "bridge_results")? {
        let cutoff = now_ms - limits.bridge_result_days as i64 * DAY_MS;
        // The text goes, the row stays as a tombstone (delivery key, delivered): a replay of
        // the same reply then finds the results delivered and counts no round again.
        out.bridge_results = conn.execute(
            "UPDATE bridge_results SET text = '' WHERE rowid IN (SELECT rowid FROM bridge_results WHERE delivered_at IS NOT NULL AND delivered_at < ?1 AND text <> '' LIMIT ?2)",
            params![cutoff, *budget as i64],
        )? as u64;
        *budget -= out.bridge_results;
        if rare.calls {
            out.bridge_calls = reclaim_bridge_calls(conn, budget)?;
        }
        if rare.batches {
            out.bridge_batches = reclaim_unanswered_batches(conn, cutoff, now_ms, budget)?;
        }
    }
    if table_exists(conn, "inbox_tasks")? {
        let cutoff = now_ms - limits.inbox_days as i64 * DAY_MS;
        out.inbox_tasks = conn.execute(
            "DELETE FROM inbox_tasks WHERE rowid IN (SELECT rowid FROM inbox_tasks WHERE acked_at IS NOT NULL AND acked_at < ?1 LIMIT ?2)",
            params![cutoff, *budget as i64],
        )? as u64;
        *budget -= out.inbox_tasks;
    }
    if table_exists(conn, "exec_runs")? {
        let window = now_ms - EXEC_RUN_RETRY_MS;
        let aged = conn.execute(
            "DELETE FROM exec_runs WHERE rowid IN (SELECT rowid FROM exec_runs WHERE started_at < ?1 AND started_at < ?2 LIMIT ?3)",
            params![now_ms - EXEC_RUN_DAYS * DAY_MS, window, *budget as i64],
        )? as u64;
        *budget -= aged;
        let rows: i64 = conn.query_row("SELECT count(*) FROM exec_runs", [], |r| r.get(0))?;
        let over = rows.unsigned_abs().saturating_sub(EXEC_RUNS_KEPT).min(*budget);
        let counted = conn.execute(
            "DELETE FROM exec_runs WHERE rowid IN (SELECT rowid FROM exec_runs WHERE started_at < ?1 ORDER BY started_at LIMIT ?2)",
            params![window, over as i64],
        )? as u64;
        *budget -= counted;
        out.exec_runs = aged + counted;
    }
    Ok(out)
}

#[cfg(test)]
#[path = "retention_tests.rs"]
mod tests;
