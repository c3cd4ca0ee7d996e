//! The Work Memory tables in `state.db` (SPEC W1–W5), synchronous (tests call them directly;
//! the service runs them on the blocking pool).
//!
//! - `wm_chains`: one row per partition (`project_ref + repo_id + work_chain_id`, unique),
//!   bound to one `continuity_id` (unique).
//! - `wm_turns` / `wm_evidence`: the raw bodies (W1), identified by `(continuity_id,
//!   provider, provider_message_ref)` and `(continuity_id, kind, sha256)`; their rowids are
//!   the anchors `m<n>` / `e<n>`.
//! - `wm_checkpoints`: `(continuity_id, revision)`; `revision` = the previous one + 1.
//! - `wm_fts`: FTS5 over turn text, evidence content and checkpoint summaries; each row's
//!   rowid is its source's ([`fts_rowid`]), so a reclaimed source's row goes by rowid.
//!
//! Invariants (tests below and in `tests/it/work_memory.rs`):
//! - A checkpoint is stored only when `expected_checkpoint_revision` is the chain's current
//!   revision (compare-and-swap, W2) and each anchor it names exists in the same chain; the
//!   same checkpoint sent again after it was stored answers the stored one (a retry whose
//!   answer was lost, W5), anything else answers the conflict with the actual revision.
//! - Appends are idempotent: the same turn or evidence again is `inserted: false` with the
//!   same id; the same turn identity with another text is refused, never overwritten.
//! - Nothing is deleted here; `crate::retention` reclaims the oldest raw bodies of a chain
//!   over its limit only behind the chain's latest checkpoint once it verifies
//!   ([`checkpoint_digest`] recomputes, the anchor is a row of the chain), W4.
//! - Every change is one transaction under `synchronous=FULL`.

use std::path::Path;

use continuity_protocol::work_memory::{
    AppendEvidenceParams, AppendEvidenceResult, AppendTurnParams, AppendTurnResult, BindParams, BindResult, Checkpoint,
    CheckpointPutParams, CheckpointPutResult, Coverage, ResumeEvidence, ResumeParams, ResumeResult, ResumeTurn, SearchHit, SearchParams,
    SearchResult, DEFAULT_RESUME_TURNS, DEFAULT_SEARCH_LIMIT, MAX_RESUME_EVIDENCE, MAX_RESUME_TEXT_BYTES, RETENTION_POLICY,
};
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use sha2::{Digest, Sha256};
use thiserror::Error;

/// What a `wm_fts` row indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FtsSource {
    /// A `wm_turns` row (`m<id>`).
    Turn,
    /// A `wm_evidence` row (`e<id>`).
    Evidence,
    /// A `wm_checkpoints` row (`r<revision>`), by its rowid.
    Checkpoint,
}

/// The `wm_fts` rowid of the source row `row` (state.db migration 16 keyed the older rows
/// the same way): distinct per source, never negative.
pub fn fts_rowid(source: FtsSource, row: i64) -> i64 {
    let kind = match source {
        FtsSource::Turn => 0,
        FtsSource::Evidence => 1,
        FtsSource::Checkpoint => 2,
    };
    row.saturating_mul(4).saturating_add(kind)
}

/// Why a Work Memory call was refused; [`WorkMemoryError::code`] is herdr-mcp's spelling.
#[derive(Debug, Error)]
pub enum WorkMemoryError {
    /// The params break a rule; the text says which and what to send.
    #[error("{0}")]
    Invalid(String),
    /// No chain is bound under that id or partition.
    #[error("{0}")]
    NotFound(String),
    /// The call contradicts what is stored (another partition, another text).
    #[error("{0}")]
    Conflict(String),
    /// An anchor does not exist in the chain.
    #[error("{0}")]
    AnchorMissing(String),
    /// SQLite failed.
    #[error("state.db: {0}; check the disk and runtime.log, then retry")]
    Store(#[from] rusqlite::Error),
    /// The file's schema is newer than this runtime's, or could not be brought to it.
    #[error(transparent)]
    Schema(#[from] crate::schema::SchemaError),
    /// The blocking call did not finish.
    #[error(transparent)]
    CallLost(#[from] crate::db::DbCallLost),
}

impl WorkMemoryError {
    /// The error's code, as herdr-mcp names them.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Invalid(_) => "work_memory_invalid",
            Self::NotFound(_) => "work_memory_not_found",
            Self::Conflict(_) => "work_memory_conflict",
            Self::AnchorMissing(_) => "work_memory_anchor_missing",
            Self::Store(_) | Self::Schema(_) | Self::CallLost(_) => "work_memory_store_failed",
        }
    }
}

type Result<T> = std::result::Result<T, WorkMemoryError>;

/// The Work Memory tables on their own connection to `state.db`.
#[derive(Debug)]
pub struct WorkMemoryStore {
    pub(super) conn: Connection,
}

/// One chain's partition, as stored.
struct Chain {
    continuity_id: String,
    project_ref: String,
    repo_id: String,
    work_chain_id: String,
    updated_at: u64,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of `parts`, each length-prefixed so that no two part lists hash alike.
fn sha256(parts: &[&str]) -> String {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    }
    hex(&hash.finalize())
}

/// A checkpoint's `sha256` over its stored fields; retention recomputes it to verify the
/// checkpoint before reclaiming anything behind it (W4).
pub fn checkpoint_digest(
    summary: &str,
    checkpoint_json: &str,
    through_message_id: Option<&str>,
    through_evidence_id: Option<&str>,
) -> String {
    sha256(&[summary, checkpoint_json, through_message_id.unwrap_or(""), through_evidence_id.unwrap_or("")])
}

/// [`checkpoint_digest`] of a checkpoint that may also name a journal turn (W1): with one,
/// its chain, message id and text digest are hashed too; without, the digest is
/// [`checkpoint_digest`]'s (so checkpoints written before journal anchors still verify).
pub fn checkpoint_digest_anchored(
    summary: &str,
    checkpoint_json: &str,
    through_message_id: Option<&str>,
    through_evidence_id: Option<&str>,
    journal: Option<(&str, &str, &str)>,
) -> String {
    match journal {
        None => checkpoint_digest(summary, checkpoint_json, through_message_id, through_evidence_id),
        Some((chain, message, text_sha256)) => sha256(&[
            summary,
            checkpoint_json,
            through_message_id.unwrap_or(""),
            through_evidence_id.unwrap_or(""),
            "journal",
            chain,
            message,
            text_sha256,
        ]),
    }
}

/// The rowid in an anchor `m<n>` / `e<n>`, or `None` when it is not one.
fn anchor_row(anchor: &str, prefix: char) -> Option<i64> {
    anchor.strip_prefix(prefix)?.parse::<i64>().ok().filter(|n| *n > 0)
}

fn portable_ref(source: &continuity_protocol::work_memory::PortableSource) -> String {
    let lines = match (source.line_start, source.line_end) {
        (Some(start), Some(end)) => format!("#L{start}-L{end}"),
        (Some(start), None) => format!("#L{start}"),
        _ => String::new(),
    };
    format!("{}@{}:{}{lines}", source.repo_id, source.commit_sha, source.repo_relative_path)
}

/// A bounded excerpt of `text` around its first case-insensitive match of a query word.
fn excerpt(text: &str, query: &str) -> String {
    const AROUND: usize = 120;
    let lower = text.to_lowercase();
    let at = query.split_whitespace().filter_map(|word| lower.find(&word.to_lowercase())).min().unwrap_or(0);
    // `lower` can differ in length from `text` for a few scripts: clamp, then find char bounds.
    let at = at.min(text.len());
    let mut start = at.saturating_sub(AROUND);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (at + AROUND).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.push_str(text[start..end].trim());
    if end < text.len() {
        out.push('…');
    }
    out
}

/// An FTS5 query of the words of `query`, each quoted (no operator of the caller's reaches
/// FTS5's query syntax), all required.
fn fts_query(query: &str) -> String {
    query.split_whitespace().map(|word| format!("\"{}\"", word.replace('"', "\"\""))).collect::<Vec<_>>().join(" ")
}

impl WorkMemoryStore {
    /// Opens (creating if needed) the Work Memory tables in the database at `path`.
    pub fn open(path: &Path) -> Result<Self> {
        let conn = crate::schema::open_state_db(path)?;
        Ok(Self { conn })
    }

    /// `work_memory.bind`: a new partition is bound to `continuity_id`; the same pair again
    /// updates the session it came from. A partition bound to another chain, or a chain
    /// bound to another partition, is refused.
    pub fn bind(&mut self, p: &BindParams) -> Result<BindResult> {
        let tx = self.conn.transaction()?;
        let by_partition: Option<String> = tx
            .query_row(
                "SELECT continuity_id FROM wm_chains WHERE project_ref = ?1 AND repo_id = ?2 AND work_chain_id = ?3",
                params![p.project_ref, p.repo_id, p.work_chain_id],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(other) = by_partition.as_deref().filter(|other| *other != p.continuity_id) {
            return Err(WorkMemoryError::Conflict(format!(
                "work_memory.bind: this partition (project_ref, repo_id, work_chain_id) is already bound to continuity_id `{other}`; use that id, or another work_chain_id"
            )));
        }
        if by_partition.is_none() {
            if let Some(chain) = chain_by_id(&tx, &p.continuity_id)? {
                return Err(WorkMemoryError::Conflict(format!(
                    "work_memory.bind: continuity_id `{}` is already bound to project_ref `{}`, repo_id `{}`, work_chain_id `{}`; bind another continuity_id for a new partition",
                    chain.continuity_id, chain.project_ref, chain.repo_id, chain.work_chain_id
                )));
            }
        }
        tx.execute(
            "INSERT INTO wm_chains (continuity_id, project_ref, repo_id, work_chain_id, provider, account_ref, space_ref, session_ref, bound_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)
             ON CONFLICT (continuity_id) DO UPDATE SET provider = ?5, account_ref = ?6, space_ref = ?7, session_ref = ?8,
                updated_at = max(updated_at, ?9)",
            params![p.continuity_id, p.project_ref, p.repo_id, p.work_chain_id, p.provider, p.account_ref, p.space_ref, p.session_ref, p.bound_at as i64],
        )?;
        tx.commit()?;
        Ok(BindResult {
            ok: true,
            continuity_id: p.continuity_id.clone(),
            project_ref: p.project_ref.clone(),
            repo_id: p.repo_id.clone(),
            work_chain_id: p.work_chain_id.clone(),
            provider: p.provider.clone(),
            session_ref: p.session_ref.clone(),
            retention_policy: RETENTION_POLICY.to_owned(),
        })
    }

    /// The continuity chain the partition (`project_ref`, `repo_id`, `work_chain_id`) is
    /// bound to, if it is bound.
    pub fn chain_of_partition(&self, project_ref: &str, repo_id: &str, work_chain_id: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row(
                "SELECT continuity_id FROM wm_chains WHERE project_ref = ?1 AND repo_id = ?2 AND work_chain_id = ?3",
                params![project_ref, repo_id, work_chain_id],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// `work_memory.append_turn` (W1), idempotent on the turn's identity.
    pub fn append_turn(&mut self, p: &AppendTurnParams) -> Result<AppendTurnResult> {
        let tx = self.conn.transaction()?;
        bound(&tx, &p.continuity_id, "append_turn")?;
        let existing: Option<(i64, String)> = tx
            .query_row(
                "SELECT id, text FROM wm_turns WHERE continuity_id = ?1 AND provider = ?2 AND provider_message_ref = ?3",
                params![p.continuity_id, p.provider, p.provider_message_ref],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        if let Some((id, text)) = existing {
            if text != p.text {
                return Err(WorkMemoryError::Conflict(format!(
                    "work_memory.append_turn: turn `{}` of provider `{}` is already recorded with another text; a recorded turn is never overwritten — send the same text, or another provider_message_ref for an edited message",
                    p.provider_message_ref, p.provider
                )));
            }
            return Ok(AppendTurnResult { ok: true, inserted: false, message_id: format!("m{id}") });
        }
        tx.execute(
            "INSERT INTO wm_turns (continuity_id, provider, account_ref, space_ref, session_ref, provider_message_ref, role, text, fingerprint, observed_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![p.continuity_id, p.provider, p.account_ref, p.space_ref, p.session_ref, p.provider_message_ref, p.role, p.text, p.fingerprint, p.observed_at as i64],
        )?;
        let id = tx.last_insert_rowid();
        let message_id = format!("m{id}");
        tx.execute(
            "INSERT INTO wm_fts (rowid, body, continuity_id, source_kind, source_id) VALUES (?4, ?1, ?2, 'turn', ?3)",
            params![p.text, p.continuity_id, message_id, fts_rowid(FtsSource::Turn, id)],
        )?;
        touch(&tx, &p.continuity_id, p.observed_at)?;
        tx.commit()?;
        Ok(AppendTurnResult { ok: true, inserted: true, message_id })
    }

    /// `work_memory.append_evidence`, idempotent on `(kind, content)`.
    pub fn append_evidence(&mut self, p: &AppendEvidenceParams) -> Result<AppendEvidenceResult> {
        let tx = self.conn.transaction()?;
        bound(&tx, &p.continuity_id, "append_evidence")?;
        let digest = sha256(&[&p.content]);
        let portable = p.portable_source.as_ref().map(portable_ref);
        let existing: Option<(i64, Option<String>)> = tx
            .query_row(
                "SELECT id, portable_ref FROM wm_evidence WHERE continuity_id = ?1 AND kind = ?2 AND sha256 = ?3",
                params![p.continuity_id, p.kind, digest],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        if let Some((id, stored_ref)) = existing {
            return Ok(AppendEvidenceResult {
                ok: true,
                inserted: false,
                evidence_id: format!("e{id}"),
                sha256: digest,
                portable_evidence_ref: stored_ref,
            });
        }
        tx.execute(
            "INSERT INTO wm_evidence (continuity_id, kind, content, sha256, provider, account_ref, space_ref, session_ref, portable_ref, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![p.continuity_id, p.kind, p.content, digest, p.provider, p.account_ref, p.space_ref, p.session_ref, portable, p.created_at as i64],
        )?;
        let id = tx.last_insert_rowid();
        let evidence_id = format!("e{id}");
        tx.execute(
            "INSERT INTO wm_fts (rowid, body, continuity_id, source_kind, source_id) VALUES (?4, ?1, ?2, 'evidence', ?3)",
            params![p.content, p.continuity_id, evidence_id, fts_rowid(FtsSource::Evidence, id)],
        )?;
        touch(&tx, &p.continuity_id, p.created_at)?;
        tx.commit()?;
        Ok(AppendEvidenceResult { ok: true, inserted: true, evidence_id, sha256: digest, portable_evidence_ref: portable })
    }

    /// `work_memory.checkpoint.put` (W2, W5): compare-and-swap on the revision, anchors
    /// checked in the same chain.
    pub fn checkpoint_put(&mut self, p: &CheckpointPutParams) -> Result<CheckpointPutResult> {
        let tx = self.conn.transaction()?;
        bound(&tx, &p.continuity_id, "checkpoint.put")?;
        let journal_sha = match &p.through_journal_turn {
            Some(anchor) => Some(super::journal_anchor::text_digest_for_put(&tx, &p.continuity_id, anchor)?),
            None => None,
        };
        let journal =
            p.through_journal_turn.as_ref().zip(journal_sha.as_deref()).map(|(a, d)| (a.continuity_id.as_str(), a.message_id.as_str(), d));
        let digest = checkpoint_digest_anchored(
            &p.summary,
            &p.checkpoint_json,
            p.through_message_id.as_deref(),
            p.through_evidence_id.as_deref(),
            journal,
        );
        let current = latest_checkpoint(&tx, &p.continuity_id)?;
        let actual = current.as_ref().map_or(0, |c| c.revision);
        if actual != p.expected_checkpoint_revision {
            // The same checkpoint, already stored by an earlier try whose answer was lost.
            if let Some(stored) = current.filter(|c| c.revision == p.expected_checkpoint_revision + 1 && c.sha256 == digest) {
                return Ok(CheckpointPutResult::Stored { ok: true, checkpoint: stored });
            }
            return Ok(CheckpointPutResult::Conflict {
                ok: false,
                code: "work_memory_checkpoint_revision_conflict".to_owned(),
                actual,
                message: format!(
                    "the chain is at checkpoint revision {actual}, not {}: resume it (work_memory.resume), merge what changed, and put again with expected_checkpoint_revision {actual}",
                    p.expected_checkpoint_revision
                ),
            });
        }
        if let Some(message_id) = &p.through_message_id {
            if !anchored(&tx, "wm_turns", 'm', message_id, &p.continuity_id)? {
                return Err(WorkMemoryError::AnchorMissing(format!(
                    "checkpoint.put: through_message_id `{message_id}` is not a turn of this chain; send a message_id that work_memory.append_turn returned for it"
                )));
            }
        }
        if let Some(evidence_id) = &p.through_evidence_id {
            if !anchored(&tx, "wm_evidence", 'e', evidence_id, &p.continuity_id)? {
                return Err(WorkMemoryError::AnchorMissing(format!(
                    "checkpoint.put: through_evidence_id `{evidence_id}` is not evidence of this chain; send an evidence_id that work_memory.append_evidence returned for it"
                )));
            }
        }
        let revision = actual + 1;
        tx.execute(
            "INSERT INTO wm_checkpoints (continuity_id, revision, summary, checkpoint_json, sha256, through_message_id, through_evidence_id, created_at,
                journal_continuity_id, journal_message_id, journal_text_sha256)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                p.continuity_id,
                revision as i64,
                p.summary,
                p.checkpoint_json,
                digest,
                p.through_message_id,
                p.through_evidence_id,
                p.created_at as i64,
                p.through_journal_turn.as_ref().map(|a| &a.continuity_id),
                p.through_journal_turn.as_ref().map(|a| &a.message_id),
                journal_sha
            ],
        )?;
        let row = tx.last_insert_rowid();
        tx.execute(
            "INSERT INTO wm_fts (rowid, body, continuity_id, source_kind, source_id) VALUES (?4, ?1, ?2, 'checkpoint', ?3)",
            params![p.summary, p.continuity_id, format!("r{revision}"), fts_rowid(FtsSource::Checkpoint, row)],
        )?;
        touch(&tx, &p.continuity_id, p.created_at)?;
        // The stored row, read back with `verified` computed as every read computes it.
        let stored = latest_checkpoint(&tx, &p.continuity_id)?;
        tx.commit()?;
        let checkpoint = stored.ok_or_else(|| {
            WorkMemoryError::Conflict("checkpoint.put: the checkpoint just written cannot be read back; retry".to_owned())
        })?;
        Ok(CheckpointPutResult::Stored { ok: true, checkpoint })
    }

    /// `work_memory.resume` (W3): the exact partition's latest checkpoint and what came
    /// after its anchors, bounded.
    pub fn resume(&self, p: &ResumeParams) -> Result<ResumeResult> {
        let chain = self.partition(&p.project_ref, &p.repo_id, &p.work_chain_id, "resume")?;
        let checkpoint = latest_checkpoint(&self.conn, &chain.continuity_id)?;
        let after_turn = checkpoint.as_ref().and_then(|c| c.through_message_id.as_deref()).and_then(|a| anchor_row(a, 'm')).unwrap_or(0);
        let after_evidence =
            checkpoint.as_ref().and_then(|c| c.through_evidence_id.as_deref()).and_then(|a| anchor_row(a, 'e')).unwrap_or(0);
        let max_turns = i64::from(p.max_turns.unwrap_or(DEFAULT_RESUME_TURNS));
        let mut turns: Vec<ResumeTurn> = self
            .conn
            .prepare(
                "SELECT id, provider, account_ref, space_ref, session_ref, provider_message_ref, role, text, observed_at
                 FROM wm_turns WHERE continuity_id = ?1 AND id > ?2 ORDER BY id DESC LIMIT ?3",
            )?
            .query_map(params![chain.continuity_id, after_turn, max_turns + 1], |r| {
                Ok(ResumeTurn {
                    message_id: format!("m{}", r.get::<_, i64>(0)?),
                    provider: r.get(1)?,
                    account_ref: r.get(2)?,
                    space_ref: r.get(3)?,
                    session_ref: r.get(4)?,
                    provider_message_ref: r.get(5)?,
                    role: r.get(6)?,
                    text: r.get(7)?,
                    observed_at: r.get::<_, i64>(8)? as u64,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let turns_truncated = oldest_first(&mut turns, max_turns as usize);
        let mut evidence: Vec<ResumeEvidence> = self
            .conn
            .prepare(
                "SELECT id, kind, content, sha256, provider, session_ref, portable_ref, created_at
                 FROM wm_evidence WHERE continuity_id = ?1 AND id > ?2 ORDER BY id DESC LIMIT ?3",
            )?
            .query_map(params![chain.continuity_id, after_evidence, MAX_RESUME_EVIDENCE as i64 + 1], |r| {
                Ok(ResumeEvidence {
                    evidence_id: format!("e{}", r.get::<_, i64>(0)?),
                    kind: r.get(1)?,
                    content: r.get(2)?,
                    sha256: r.get(3)?,
                    provider: r.get(4)?,
                    session_ref: r.get(5)?,
                    portable_ref: r.get(6)?,
                    created_at: r.get::<_, i64>(7)? as u64,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let evidence_truncated = oldest_first(&mut evidence, MAX_RESUME_EVIDENCE);
        let display_truncated = turns_truncated || evidence_truncated;
        let mut cut = false;
        for text in turns.iter_mut().map(|t| &mut t.text).chain(evidence.iter_mut().map(|e| &mut e.content)) {
            cut |= cut_to(text, MAX_RESUME_TEXT_BYTES);
        }
        let mut limitations = Vec::new();
        if display_truncated {
            limitations.push("display_page_truncated".to_owned());
        }
        if cut {
            limitations.push("display_excerpt_truncated".to_owned());
        }
        if evidence.iter().any(|e| e.portable_ref.is_some()) {
            limitations.push("source_revision_unverified".to_owned());
        }
        let revision = checkpoint.as_ref().map_or(0, |c| c.revision);
        Ok(ResumeResult {
            ok: true,
            continuity_id: chain.continuity_id,
            project_ref: chain.project_ref,
            repo_id: chain.repo_id,
            work_chain_id: chain.work_chain_id,
            checkpoint_revision: revision,
            retention_policy: RETENTION_POLICY.to_owned(),
            coverage: Coverage {
                checkpoint_revision: revision,
                through_evidence_id: checkpoint.as_ref().and_then(|c| c.through_evidence_id.clone()),
                display_truncated,
                limitations,
            },
            checkpoint,
            turns,
            evidence,
            updated_at: chain.updated_at,
            instruction: "This is recorded memory, not the live state: re-read the repository (git status, the files named here) and the live Herdr panes before acting on it. Write a new checkpoint with work_memory.checkpoint.put and expected_checkpoint_revision set to checkpoint_revision.".to_owned(),
        })
    }

    /// `work_memory.search`: FTS5 in one partition, best first.
    pub fn search(&self, p: &SearchParams) -> Result<SearchResult> {
        let chain = self.partition(&p.project_ref, &p.repo_id, &p.work_chain_id, "search")?;
        let limit = i64::from(p.limit.unwrap_or(DEFAULT_SEARCH_LIMIT));
        let mut hits = self
            .conn
            .prepare("SELECT source_kind, source_id, body FROM wm_fts WHERE wm_fts MATCH ?1 AND continuity_id = ?2 ORDER BY rank LIMIT ?3")?
            .query_map(params![fts_query(&p.query), chain.continuity_id, limit + 1], |r| {
                Ok(SearchHit { source_kind: r.get(0)?, source_id: r.get(1)?, excerpt: r.get(2)? })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let truncated = hits.len() as i64 > limit;
        hits.truncate(limit as usize);
        for hit in &mut hits {
            hit.excerpt = excerpt(&hit.excerpt, &p.query);
        }
        Ok(SearchResult { ok: true, continuity_id: chain.continuity_id, hits, truncated })
    }

    fn partition(&self, project_ref: &str, repo_id: &str, work_chain_id: &str, what: &str) -> Result<Chain> {
        self.conn
            .query_row(
                "SELECT continuity_id, project_ref, repo_id, work_chain_id, updated_at FROM wm_chains
                 WHERE project_ref = ?1 AND repo_id = ?2 AND work_chain_id = ?3",
                params![project_ref, repo_id, work_chain_id],
                chain_row,
            )
            .optional()?
            .ok_or_else(|| {
                WorkMemoryError::NotFound(format!(
                    "work_memory.{what}: no work chain is bound to exactly this project_ref, repo_id and work_chain_id (they must match the bind byte for byte); bind one with work_memory.bind"
                ))
            })
    }
}

fn chain_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Chain> {
    Ok(Chain {
        continuity_id: r.get(0)?,
        project_ref: r.get(1)?,
        repo_id: r.get(2)?,
        work_chain_id: r.get(3)?,
        updated_at: r.get::<_, i64>(4)? as u64,
    })
}

fn chain_by_id(tx: &Transaction<'_>, continuity_id: &str) -> Result<Option<Chain>> {
    Ok(tx
        .query_row(
            "SELECT continuity_id, project_ref, repo_id, work_chain_id, updated_at FROM wm_chains WHERE continuity_id = ?1",
            params![continuity_id],
            chain_row,
        )
        .optional()?)
}

fn bound(tx: &Transaction<'_>, continuity_id: &str, what: &str) -> Result<Chain> {
    chain_by_id(tx, continuity_id)?.ok_or_else(|| {
        WorkMemoryError::NotFound(format!(
            "work_memory.{what}: continuity_id `{continuity_id}` is not bound to a work chain; call work_memory.bind first"
        ))
    })
}

/// Cuts `text` to at most `max` bytes at a character boundary; true when it was longer.
fn cut_to(text: &mut String, max: usize) -> bool {
    if text.len() <= max {
        return false;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    true
}

/// Rows fetched newest first, one more than `max`: keeps the newest `max`, oldest first;
/// true when there were more.
fn oldest_first<T>(rows: &mut Vec<T>, max: usize) -> bool {
    let more = rows.len() > max;
    rows.truncate(max);
    rows.reverse();
    more
}

/// True when `anchor` (`<prefix><rowid>`) is a row of `table` in the chain.
fn anchored(tx: &Connection, table: &str, prefix: char, anchor: &str, continuity_id: &str) -> Result<bool> {
    let Some(row) = anchor_row(anchor, prefix) else { return Ok(false) };
    let sql = format!("SELECT 1 FROM {table} WHERE id = ?1 AND continuity_id = ?2");
    Ok(tx.query_row(&sql, params![row, continuity_id], |_| Ok(())).optional()?.is_some())
}

fn touch(tx: &Transaction<'_>, continuity_id: &str, at: u64) -> Result<()> {
    tx.execute("UPDATE wm_chains SET updated_at = max(updated_at, ?2) WHERE continuity_id = ?1", params![continuity_id, at as i64])?;
    Ok(())
}

/// The chain's latest checkpoint, `verified` computed now (W1): its digest recomputes from
/// its fields, each `m<n>` / `e<n>` anchor is a row of the chain, and a journal anchor is a
/// turn of the chain whose text still has the digest recorded at the put.
fn latest_checkpoint(conn: &Connection, continuity_id: &str) -> Result<Option<Checkpoint>> {
    let row = conn
        .query_row(
            "SELECT revision, summary, checkpoint_json, sha256, through_message_id, through_evidence_id, created_at,
                journal_continuity_id, journal_message_id, journal_text_sha256
             FROM wm_checkpoints WHERE continuity_id = ?1 ORDER BY revision DESC LIMIT 1",
            params![continuity_id],
            |r| {
                let journal: (Option<String>, Option<String>, Option<String>) = (r.get(7)?, r.get(8)?, r.get(9)?);
                let checkpoint = Checkpoint {
                    revision: r.get::<_, i64>(0)? as u64,
                    summary: r.get(1)?,
                    checkpoint_json: r.get(2)?,
                    sha256: r.get(3)?,
                    through_message_id: r.get(4)?,
                    through_evidence_id: r.get(5)?,
                    through_journal_turn: journal.0.clone().zip(journal.1.clone()).map(|(continuity_id, message_id)| {
                        continuity_protocol::work_memory::JournalTurnAnchor { continuity_id, message_id }
                    }),
                    created_at: r.get::<_, i64>(6)? as u64,
                    verified: false,
                };
                Ok((checkpoint, journal.2))
            },
        )
        .optional()?;
    let Some((mut checkpoint, journal_sha)) = row else { return Ok(None) };
    checkpoint.verified = verify(conn, continuity_id, &checkpoint, journal_sha.as_deref())?;
    Ok(Some(checkpoint))
}

/// True when `checkpoint` of `continuity_id` verifies (see [`latest_checkpoint`]).
fn verify(conn: &Connection, continuity_id: &str, checkpoint: &Checkpoint, journal_sha: Option<&str>) -> Result<bool> {
    let anchor = checkpoint.through_journal_turn.as_ref();
    // A journal anchor without its recorded digest (or the reverse) is a damaged row.
    if anchor.is_some() != journal_sha.is_some() {
        return Ok(false);
    }
    let journal = anchor.zip(journal_sha).map(|(a, d)| (a.continuity_id.as_str(), a.message_id.as_str(), d));
    let digest = checkpoint_digest_anchored(
        &checkpoint.summary,
        &checkpoint.checkpoint_json,
        checkpoint.through_message_id.as_deref(),
        checkpoint.through_evidence_id.as_deref(),
        journal,
    );
    if digest != checkpoint.sha256 {
        return Ok(false);
    }
    if let Some(message) = &checkpoint.through_message_id {
        if !anchored(conn, "wm_turns", 'm', message, continuity_id)? {
            return Ok(false);
        }
    }
    if let Some(evidence) = &checkpoint.through_evidence_id {
        if !anchored(conn, "wm_evidence", 'e', evidence, continuity_id)? {
            return Ok(false);
        }
    }
    match anchor.zip(journal_sha) {
        Some((anchor, recorded)) => Ok(super::journal_anchor::text_digest(conn, continuity_id, anchor)?.as_deref() == Some(recorded)),
        None => Ok(true),
    }
}
