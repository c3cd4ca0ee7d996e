//! The Continuity Journal's tables in `state.db` (SPEC C1, C3–C7): chains, their
//! conversations and workspaces, the finalized turns, and an FTS5 index over the turns'
//! text.
//!
//! Invariants:
//! - A turn is keyed by `(continuity_id, message_id)` (a `UNIQUE` index). Appending the same
//!   key with the same conversation, role and text again changes nothing and answers
//!   [`Appended::AlreadyRecorded`]; the same key with anything else is refused
//!   ([`JournalError::Conflict`]), never overwritten.
//! - A conversation belongs to one chain for good; a chain has at most one Project.
//! - An append is one `BEGIN IMMEDIATE` transaction (chain, conversation, workspace, turn
//!   and its FTS row together) on a WAL database with `synchronous=FULL`: once it returns,
//!   the turn survives a crash or a power loss.
//! - No read picks a chain by recency or similarity: searches return every match up to a
//!   bound, and only stable identity can make a result [`Resolution::UniqueExact`].
//! - Text search is a conjunction of the query's words (FTS5 `MATCH` of quoted tokens);
//!   the user's text is never passed to FTS5 as query syntax.

use std::path::Path;

use continuity_protocol::journal::{
    ContinuityAppendParams, LegacyPacketLink, LegacyPacketOutcome, LegacyPacketStatus, EXCERPT_CHARS, MAX_CANDIDATE_WORKSPACES,
    RESUME_TURNS, RESUME_TURN_TEXT_BYTES,
};
use continuity_protocol::{ChainCandidate, JournalTurn, MatchReason, TurnRole};
use rusqlite::{params, params_from_iter, Connection, OptionalExtension, Transaction, TransactionBehavior};
use thiserror::Error;

use crate::db::DbCallLost;

/// Up to this many chains named by identity, a text search reads their turns; with more,
/// it reads the text index's matches (see [`JournalStore::chains_matching`]).
pub const FEW_CHAINS: u64 = 64;

/// A journal failure.
#[derive(Debug, Error)]
pub enum JournalError {
    /// SQLite refused an operation.
    #[error("state.db (continuity journal) error: {0}; check that the companion home is writable and the disk not full, then retry")]
    Sqlite(#[from] rusqlite::Error),
    /// The file's schema is newer than this runtime's, or could not be brought to it.
    #[error(transparent)]
    Schema(#[from] crate::schema::SchemaError),
    /// The call on the blocking pool was lost.
    #[error(transparent)]
    CallLost(#[from] DbCallLost),
    /// No random bytes for a new chain id.
    #[error("cannot read /dev/urandom for a new continuity_id ({0}); check that /dev/urandom is readable")]
    Random(std::io::Error),
    /// The write contradicts what is recorded (the message says what and what to send).
    #[error("{0}")]
    Conflict(String),
    /// Stable identity names more than one chain (the message says how to choose).
    #[error("{0}")]
    Ambiguous(String),
    /// Nothing journaled matches (the message says what was looked for).
    #[error("{0}")]
    NotFound(String),
    /// The ids given belong to different chains or Projects (the message says which).
    #[error("{0}")]
    Mismatch(String),
}

/// What an append did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Appended {
    /// The turn is new and now recorded in this chain.
    Inserted(String),
    /// The same turn was recorded before (a retry); nothing changed.
    AlreadyRecorded(String),
}

impl Appended {
    /// The chain the turn is in.
    pub fn continuity_id(&self) -> &str {
        match self {
            Appended::Inserted(id) | Appended::AlreadyRecorded(id) => id,
        }
    }
}

/// A chain's own row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainRow {
    /// The chain.
    pub continuity_id: String,
    /// Its Project, if any.
    pub project_id: Option<String>,
    /// Its newest title, if any.
    pub title: Option<String>,
    /// When its newest turn was recorded (ms).
    pub updated_at: i64,
}

/// One page of `continuity.resume` ([`JournalStore::turns_page`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnsPage {
    /// The page's turns, oldest first.
    pub turns: Vec<JournalTurn>,
    /// The page's oldest turn number when older turns exist (the next cursor).
    pub older_than: Option<i64>,
}

/// The stable identities a search or resume narrows by (absent = not a filter).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    /// The chain of this conversation.
    pub conversation_id: Option<String>,
    /// Chains of this Project.
    pub project_id: Option<String>,
    /// Chains with a turn written under this workspace.
    pub workspace_id: Option<String>,
}

impl Identity {
    /// True when no identity is given.
    pub fn is_empty(&self) -> bool {
        self.conversation_id.is_none() && self.project_id.is_none() && self.workspace_id.is_none()
    }

    /// The reasons a chain found by this identity is listed.
    pub fn reasons(&self) -> Vec<MatchReason> {
        let mut reasons = Vec::new();
        if self.conversation_id.is_some() {
            reasons.push(MatchReason::ConversationId);
        }
        if self.project_id.is_some() {
            reasons.push(MatchReason::ProjectId);
        }
        if self.workspace_id.is_some() {
            reasons.push(MatchReason::WorkspaceId);
        }
        reasons
    }

    /// `<column> IN (…)` for the chains this identity names, and its parameters.
    fn filter(&self, column: &str) -> (String, Vec<String>) {
        let mut clauses = Vec::new();
        let mut values = Vec::new();
        if let Some(conversation) = &self.conversation_id {
            clauses.push(format!("{column} IN (SELECT continuity_id FROM journal_conversations WHERE conversation_id = ?)"));
            values.push(conversation.clone());
        }
        if let Some(project) = &self.project_id {
            clauses.push(format!("{column} IN (SELECT continuity_id FROM journal_chains WHERE project_id = ?)"));
            values.push(project.clone());
        }
        if let Some(workspace) = &self.workspace_id {
            clauses.push(format!("{column} IN (SELECT continuity_id FROM journal_chain_workspaces WHERE workspace_id = ?)"));
            values.push(workspace.clone());
        }
        (clauses.join(" AND "), values)
    }
}

/// The FTS5 query for `text`: each word as a quoted token, all of them required; `None`
/// when the text has no word.
pub fn fts_query(text: &str) -> Option<String> {
    let words: Vec<String> = text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(|w| format!("\"{w}\"")).collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// The journal tables on their own connection to `state.db`.
#[derive(Debug)]
pub struct JournalStore {
    /// The connection (callers serialize access).
    conn: Connection,
}

impl JournalStore {
    /// Opens (creating if needed) the journal tables in the database at `path`.
    pub fn open(path: &Path) -> Result<Self, JournalError> {
        // WAL and synchronous=FULL: a turn the runtime acknowledged survives a power loss,
        // not only a crash.
        let conn = crate::schema::open_state_db(path)?;
        Ok(Self { conn })
    }

    /// Sets this connection's page cache to `kib` KiB (the bench's fill writes a large
    /// journal faster with more than SQLite's default 2 MiB).
    pub fn set_cache_kib(&self, kib: u32) -> Result<(), JournalError> {
        Ok(self.conn.pragma_update(None, "cache_size", -i64::from(kib))?)
    }

    /// This connection's `PRAGMA synchronous` (2 = FULL).
    pub fn synchronous(&self) -> Result<i64, JournalError> {
        Ok(self.conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?)
    }

    /// Records one finalized turn at `now` (ms) in one transaction.
    pub fn append(&mut self, turn: &ContinuityAppendParams, now: i64) -> Result<Appended, JournalError> {
        self.append_reporting(turn, now).map(|(appended, _)| appended)
    }

    /// [`JournalStore::append`], and what became of each legacy packet the turn carries
    /// (restored in the same transaction, X11, [`super::legacy`]).
    pub fn append_reporting(
        &mut self,
        turn: &ContinuityAppendParams,
        now: i64,
    ) -> Result<(Appended, Vec<LegacyPacketOutcome>), JournalError> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let (appended, packets) = append_in(&tx, turn, now)?;
        // A retry changed nothing (the transaction is rolled back when dropped) — unless it
        // restored a packet its first write did not (a turn journaled before packets were read).
        if matches!(appended, Appended::Inserted(_)) || packets.iter().any(|p| p.status == LegacyPacketStatus::Restored) {
            tx.commit()?;
        }
        Ok((appended, packets))
    }

    /// The chains restored from legacy packets with id `packet_id` (at most `limit`, X11):
    /// packet ids are not unique across chains.
    pub fn legacy_restores_of(&self, packet_id: &str, limit: usize) -> Result<Vec<super::legacy::Restored>, JournalError> {
        super::legacy::chains_of_restored(&self.conn, packet_id, limit)
    }

    /// The legacy packets restored from the turns of `continuity_id` (X11), at most `limit`.
    pub fn legacy_packets_of(&self, continuity_id: &str, limit: usize) -> Result<Vec<LegacyPacketLink>, JournalError> {
        super::legacy::restored_from(&self.conn, continuity_id, limit)
    }

    /// Records many turns in one transaction (the bench's fill; the runtime appends one
    /// turn per transaction). Returns how many were new.
    pub fn append_batch(&mut self, turns: impl IntoIterator<Item = ContinuityAppendParams>, now: i64) -> Result<u64, JournalError> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut inserted = 0;
        for turn in turns {
            if let (Appended::Inserted(_), _) = append_in(&tx, &turn, now)? {
                inserted += 1;
            }
        }
        tx.commit()?;
        Ok(inserted)
    }

    /// The chain `continuity_id`, if it exists.
    pub fn chain(&self, continuity_id: &str) -> Result<Option<ChainRow>, JournalError> {
        Ok(self
            .conn
            .prepare_cached("SELECT continuity_id, project_id, title, updated_at FROM journal_chains WHERE continuity_id = ?1")?
            .query_row(params![continuity_id], chain_row)
            .optional()?)
    }

    /// The chain of `conversation_id`, if it was ever journaled.
    pub fn chain_of_conversation(&self, conversation_id: &str) -> Result<Option<ChainRow>, JournalError> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT c.continuity_id, c.project_id, c.title, c.updated_at FROM journal_conversations v
                 JOIN journal_chains c ON c.continuity_id = v.continuity_id WHERE v.conversation_id = ?1",
            )?
            .query_row(params![conversation_id], chain_row)
            .optional()?)
    }

    /// Up to `limit` chains named by `identity` (which must not be empty), most recently
    /// updated first.
    pub fn chains_by_identity(&self, identity: &Identity, limit: u64) -> Result<Vec<ChainRow>, JournalError> {
        let (filter, mut values) = identity.filter("continuity_id");
        values.push(limit.to_string());
        let sql = format!(
            "SELECT continuity_id, project_id, title, updated_at FROM journal_chains WHERE {filter}
             ORDER BY updated_at DESC LIMIT CAST(? AS INTEGER)"
        );
        let mut statement = self.conn.prepare_cached(&sql)?;
        let rows = statement.query_map(params_from_iter(values.iter()), chain_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Up to `limit` chains with a turn that contains every word of `fts` (from
    /// [`fts_query`]), narrowed by `identity` when it is not empty, most recently updated
    /// first. Which chains fill the bound when more match is the index's order, never a
    /// ranking.
    pub fn chains_matching(&self, fts: &str, identity: &Identity, limit: u64) -> Result<Vec<ChainRow>, JournalError> {
        if !identity.is_empty() {
            let named = self.chains_by_identity(identity, FEW_CHAINS + 1)?;
            if named.len() as u64 <= FEW_CHAINS {
                return self.chains_matching_among(fts, named, limit);
            }
        }
        let (filter, identity_values) = identity.filter("t.continuity_id");
        let narrowed = if identity.is_empty() { String::new() } else { format!("AND {filter}") };
        let mut values = vec![fts.to_owned()];
        values.extend(identity_values);
        values.push(limit.to_string());
        let sql = format!(
            "SELECT continuity_id, project_id, title, updated_at FROM journal_chains WHERE continuity_id IN (
                 SELECT DISTINCT t.continuity_id FROM journal_fts JOIN journal_turns t ON t.turn_id = journal_fts.rowid
                 WHERE journal_fts MATCH ? {narrowed} LIMIT CAST(? AS INTEGER))
             ORDER BY updated_at DESC"
        );
        let mut statement = self.conn.prepare_cached(&sql)?;
        let rows = statement.query_map(params_from_iter(values.iter()), chain_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Of `chains` (at most [`FEW_CHAINS`], most recently updated first), the first `limit`
    /// with a turn that contains every word of `fts`. Each chain's turns are read through
    /// its index and checked against the set of FTS matches (the `+` keeps SQLite from
    /// looking every match up instead), which costs the chains' turns, not the matches of
    /// common words across the whole journal.
    fn chains_matching_among(&self, fts: &str, chains: Vec<ChainRow>, limit: u64) -> Result<Vec<ChainRow>, JournalError> {
        if chains.is_empty() {
            return Ok(chains);
        }
        let marks = vec!["?"; chains.len()].join(", ");
        let sql = format!(
            "SELECT DISTINCT t.continuity_id FROM journal_turns t WHERE t.continuity_id IN ({marks})
             AND +t.turn_id IN (SELECT rowid FROM journal_fts WHERE journal_fts MATCH ?)"
        );
        let mut values: Vec<&str> = chains.iter().map(|c| c.continuity_id.as_str()).collect();
        values.push(fts);
        let mut statement = self.conn.prepare_cached(&sql)?;
        let found: Vec<String> = statement.query_map(params_from_iter(values.iter()), |r| r.get(0))?.collect::<Result<_, _>>()?;
        Ok(chains.into_iter().filter(|c| found.contains(&c.continuity_id)).take(limit as usize).collect())
    }

    /// Up to `limit` chains, most recently updated first.
    pub fn recent_chains(&self, limit: u64) -> Result<Vec<ChainRow>, JournalError> {
        let mut statement = self
            .conn
            .prepare_cached("SELECT continuity_id, project_id, title, updated_at FROM journal_chains ORDER BY updated_at DESC LIMIT ?1")?;
        let rows = statement.query_map(params![limit as i64], chain_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The workspaces a chain's turns were written under (at most
    /// [`MAX_CANDIDATE_WORKSPACES`], in name order).
    pub fn workspaces_of(&self, continuity_id: &str) -> Result<Vec<String>, JournalError> {
        let mut statement = self
            .conn
            .prepare_cached("SELECT workspace_id FROM journal_chain_workspaces WHERE continuity_id = ?1 ORDER BY workspace_id LIMIT ?2")?;
        let rows = statement.query_map(params![continuity_id, MAX_CANDIDATE_WORKSPACES as i64], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// `chain` as a candidate listed for `reasons`: its workspaces and the start of its
    /// newest user and assistant turns.
    pub fn candidate(&self, chain: &ChainRow, reasons: Vec<MatchReason>) -> Result<ChainCandidate, JournalError> {
        let excerpt = |role: TurnRole| -> Result<Option<String>, JournalError> {
            Ok(self
                .conn
                .prepare_cached(
                    "SELECT substr(text, 1, ?3) FROM journal_turns WHERE continuity_id = ?1 AND role = ?2
                     ORDER BY turn_id DESC LIMIT 1",
                )?
                .query_row(params![chain.continuity_id, role.as_str(), EXCERPT_CHARS as i64], |r| r.get(0))
                .optional()?)
        };
        Ok(ChainCandidate {
            continuity_id: chain.continuity_id.clone(),
            title: chain.title.clone(),
            project_id: chain.project_id.clone(),
            workspace_ids: self.workspaces_of(&chain.continuity_id)?,
            updated_at: chain.updated_at.max(0) as u64,
            recent_user_excerpt: excerpt(TurnRole::User)?,
            recent_assistant_excerpt: excerpt(TurnRole::Assistant)?,
            match_reasons: reasons,
        })
    }

    /// One page of a chain's turns, oldest first (each text cut to
    /// [`RESUME_TURN_TEXT_BYTES`]): the newest [`RESUME_TURNS`] turns older than turn
    /// `before` (all of them when `None`). Also the page's oldest turn number when older
    /// turns exist (the next page's cursor). Turn numbers only grow, so a page read with
    /// the same `before` is the same page however many turns were appended since.
    pub fn turns_page(&self, continuity_id: &str, before: Option<i64>) -> Result<TurnsPage, JournalError> {
        let mut statement = self.conn.prepare_cached(
            "SELECT conversation_id, message_id, role, text, observed_at, turn_id FROM journal_turns
             WHERE continuity_id = ?1 AND turn_id < ?2 ORDER BY turn_id DESC LIMIT ?3",
        )?;
        let rows = statement.query_map(params![continuity_id, before.unwrap_or(i64::MAX), RESUME_TURNS as i64 + 1], |r| {
            Ok((turn_row(r, RESUME_TURN_TEXT_BYTES)?, r.get::<_, i64>(5)?))
        })?;
        let mut turns: Vec<(JournalTurn, i64)> = rows.collect::<Result<_, _>>()?;
        let more = turns.len() > RESUME_TURNS;
        turns.truncate(RESUME_TURNS);
        let oldest = turns.last().map(|(_, id)| *id);
        turns.reverse();
        Ok(TurnsPage { turns: turns.into_iter().map(|(t, _)| t).collect(), older_than: if more { oldest } else { None } })
    }

    /// The newest [`RESUME_TURNS`] turns of a chain, oldest first (each text cut to
    /// [`RESUME_TURN_TEXT_BYTES`]), and whether older ones exist.
    pub fn recent_turns(&self, continuity_id: &str) -> Result<(Vec<JournalTurn>, bool), JournalError> {
        let page = self.turns_page(continuity_id, None)?;
        Ok((page.turns, page.older_than.is_some()))
    }

    /// The chain's first user turn (its goal, as the user first put it), its text cut to
    /// `max_bytes`.
    pub fn first_user_turn(&self, continuity_id: &str, max_bytes: usize) -> Result<Option<JournalTurn>, JournalError> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT conversation_id, message_id, role, text, observed_at FROM journal_turns
                 WHERE continuity_id = ?1 AND role = 'user' ORDER BY turn_id LIMIT 1",
            )?
            .query_row(params![continuity_id], |r| turn_row(r, max_bytes))
            .optional()?)
    }

    /// The chain's newest `count` turns, oldest first, each text cut to `max_bytes`.
    pub fn newest_turns(&self, continuity_id: &str, count: usize, max_bytes: usize) -> Result<Vec<JournalTurn>, JournalError> {
        let mut statement = self.conn.prepare_cached(
            "SELECT conversation_id, message_id, role, text, observed_at FROM journal_turns
             WHERE continuity_id = ?1 ORDER BY turn_id DESC LIMIT ?2",
        )?;
        let rows = statement.query_map(params![continuity_id, count as i64], |r| turn_row(r, max_bytes))?;
        let mut turns: Vec<JournalTurn> = rows.collect::<Result<_, _>>()?;
        turns.reverse();
        Ok(turns)
    }

    /// How many turns the journal holds.
    pub fn turn_count(&self) -> Result<u64, JournalError> {
        Ok(self.conn.query_row("SELECT count(*) FROM journal_turns", [], |r| r.get::<_, i64>(0))?.max(0) as u64)
    }
}

/// A turn from the columns `conversation_id, message_id, role, text, observed_at`, its text
/// cut to `max_bytes`.
fn turn_row(r: &rusqlite::Row<'_>, max_bytes: usize) -> rusqlite::Result<JournalTurn> {
    let role: String = r.get(2)?;
    let text: String = r.get(3)?;
    let (text, text_truncated) = head_of(text, max_bytes);
    Ok(JournalTurn {
        conversation_id: r.get(0)?,
        message_id: r.get(1)?,
        // Only `append` writes the column, from a TurnRole.
        role: TurnRole::parse(&role).unwrap_or(TurnRole::User),
        text,
        text_truncated,
        observed_at: r.get::<_, i64>(4)?.max(0) as u64,
    })
}

fn chain_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<ChainRow> {
    Ok(ChainRow { continuity_id: row.get(0)?, project_id: row.get(1)?, title: row.get(2)?, updated_at: row.get(3)? })
}

/// The first `max_bytes` of `text` (on a char boundary) and whether it was cut.
fn head_of(mut text: String, max_bytes: usize) -> (String, bool) {
    if text.len() <= max_bytes {
        return (text, false);
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    (text, true)
}

/// A new chain id: `hc-` and 128 random bits in hex.
fn new_continuity_id() -> Result<String, JournalError> {
    crate::db::random_hex_128().map(|hex| format!("hc-{hex}")).map_err(JournalError::Random)
}

/// The chain a turn goes into: the given one, else its conversation's, else its Project's
/// only chain (C3), else a new one.
fn chain_for(tx: &Transaction<'_>, turn: &ContinuityAppendParams) -> Result<String, JournalError> {
    let known: Option<String> = tx
        .prepare_cached("SELECT continuity_id FROM journal_conversations WHERE conversation_id = ?1")?
        .query_row(params![turn.conversation_id], |r| r.get(0))
        .optional()?;
    match (&turn.continuity_id, known) {
        (Some(given), Some(known)) if *given != known => Err(JournalError::Conflict(format!(
            "conversation {} is journaled in chain {known}, not {given}; send continuity_id {known} (or leave it out)",
            turn.conversation_id
        ))),
        // Restored chains hold only what their packet held (X11): nobody appends to them,
        // and nobody claims one before its packet arrives.
        (Some(given), _) if given.starts_with("hl-") => Err(JournalError::Conflict(format!(
            "chain {given} is a restored legacy handoff packet and takes no turns; leave continuity_id out (or send the chain this conversation continues)"
        ))),
        (Some(given), _) => Ok(given.clone()),
        (None, Some(known)) => Ok(known),
        (None, None) => {
            let Some(project) = &turn.project_id else { return new_continuity_id() };
            let mut statement = tx.prepare_cached("SELECT continuity_id FROM journal_chains WHERE project_id = ?1 LIMIT 2")?;
            let chains: Vec<String> = statement.query_map(params![project], |r| r.get(0))?.collect::<Result<_, _>>()?;
            match chains.as_slice() {
                [] => new_continuity_id(),
                [only] => Ok(only.clone()),
                _ => Err(JournalError::Ambiguous(format!(
                    "project {project} has more than one continuity chain, so a new conversation cannot join one by itself; send the continuity_id of the chain it continues"
                ))),
            }
        }
    }
}

/// One append inside `tx` (see [`JournalStore::append_reporting`]).
fn append_in(tx: &Transaction<'_>, turn: &ContinuityAppendParams, now: i64) -> Result<(Appended, Vec<LegacyPacketOutcome>), JournalError> {
    let chain = chain_for(tx, turn)?;
    let recorded: Option<(String, String, String)> = tx
        .prepare_cached("SELECT conversation_id, role, text FROM journal_turns WHERE continuity_id = ?1 AND message_id = ?2")?
        .query_row(params![chain, turn.message_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    if let Some((conversation, role, text)) = recorded {
        if conversation == turn.conversation_id && role == turn.role.as_str() && text == turn.text {
            // A retry: its packets were restored with it (or refused the same way).
            let packets = super::legacy::restore_in(tx, &chain, turn, now)?;
            return Ok((Appended::AlreadyRecorded(chain), packets));
        }
        return Err(JournalError::Conflict(format!(
            "message {} of chain {chain} is already recorded with another conversation, role or text; a finalized turn is never rewritten — give an edited turn a new message_id",
            turn.message_id
        )));
    }
    let project: Option<Option<String>> = tx
        .prepare_cached("SELECT project_id FROM journal_chains WHERE continuity_id = ?1")?
        .query_row(params![chain], |r| r.get(0))
        .optional()?;
    if let (Some(Some(theirs)), Some(ours)) = (&project, &turn.project_id) {
        if theirs != ours {
            return Err(JournalError::Conflict(format!(
                "chain {chain} belongs to project {theirs}, not {ours}; a chain never spans Projects — leave continuity_id out to start a chain for this Project"
            )));
        }
    }
    tx.prepare_cached(
        "INSERT INTO journal_chains (continuity_id, project_id, title, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)
         ON CONFLICT (continuity_id) DO UPDATE SET project_id = coalesce(project_id, excluded.project_id),
             title = coalesce(excluded.title, title), updated_at = max(updated_at, excluded.updated_at)",
    )?
    .execute(params![chain, turn.project_id, turn.title, now])?;
    tx.prepare_cached(
        "INSERT INTO journal_conversations (conversation_id, continuity_id, conversation_url, title, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (conversation_id) DO UPDATE SET conversation_url = coalesce(excluded.conversation_url, conversation_url),
             title = coalesce(excluded.title, title), updated_at = max(updated_at, excluded.updated_at)",
    )?
    .execute(params![turn.conversation_id, chain, turn.conversation_url, turn.title, now])?;
    if let Some(workspace) = &turn.workspace_id {
        tx.prepare_cached("INSERT OR IGNORE INTO journal_chain_workspaces (workspace_id, continuity_id) VALUES (?1, ?2)")?
            .execute(params![workspace, chain])?;
    }
    tx.prepare_cached(
        "INSERT INTO journal_turns (continuity_id, message_id, conversation_id, role, text, workspace_id, observed_at, recorded_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        chain,
        turn.message_id,
        turn.conversation_id,
        turn.role.as_str(),
        turn.text,
        turn.workspace_id,
        turn.observed_at.min(i64::MAX as u64) as i64,
        now
    ])?;
    let turn_id = tx.last_insert_rowid();
    tx.prepare_cached("INSERT INTO journal_fts (rowid, text) VALUES (?1, ?2)")?.execute(params![turn_id, turn.text])?;
    let packets = super::legacy::restore_in(tx, &chain, turn, now)?;
    Ok((Appended::Inserted(chain), packets))
}
