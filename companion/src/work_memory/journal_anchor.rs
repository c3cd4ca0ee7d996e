//! Checkpoint anchors on the Continuity Journal (SPEC W1): a checkpoint may name a journal
//! turn (`through_journal_turn: {continuity_id, message_id}`) instead of a Work Memory copy
//! of it. The journal's tables live in the same `state.db`; this module only reads them.
//!
//! Invariants:
//! - The anchor's chain is the work chain's own `continuity_id` (the partition's): a turn
//!   of another chain is refused at the put and never verifies.
//! - The chain is a journaled conversation's of the partition's own Project (its
//!   `project_id` is none or the partition's `project_ref`), never a restored legacy
//!   packet's (`hl-`): otherwise the put is refused and a read never verifies.
//! - The put records the SHA-256 of the turn's text; a read verifies only while a turn with
//!   that id exists in the chain and its text has that digest. A journal that is not open
//!   (no table) anchors nothing.

use continuity_protocol::work_memory::JournalTurnAnchor;
use rusqlite::{params, Connection, OptionalExtension};
use sha2::{Digest, Sha256};

use super::store::WorkMemoryError;

/// The SHA-256 (hex) of the text of the journal turn `anchor` names in `continuity_id`, or
/// `None` when the anchor names another chain, the turn does not exist, or the journal has
/// no tables here.
pub fn text_digest(conn: &Connection, continuity_id: &str, anchor: &JournalTurnAnchor) -> Result<Option<String>, WorkMemoryError> {
    if anchor.continuity_id != continuity_id {
        return Ok(None);
    }
    let journal: Option<i64> =
        conn.query_row("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'journal_turns'", [], |r| r.get(0)).optional()?;
    if journal.is_none() {
        return Ok(None);
    }
    if why_not_anchorable(conn, continuity_id)?.is_some() {
        return Ok(None);
    }
    let text: Option<String> = conn
        .query_row(
            "SELECT text FROM journal_turns WHERE continuity_id = ?1 AND message_id = ?2",
            params![anchor.continuity_id, anchor.message_id],
            |r| r.get(0),
        )
        .optional()?;
    Ok(text.map(|t| Sha256::digest(t.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()))
}

/// Why the journal chain `continuity_id` cannot anchor its partition's checkpoints, if it
/// cannot: a restored legacy packet's chain (`hl-`, untrusted text anyone could have
/// pasted), or a chain of another Project than the partition's `project_ref`.
fn why_not_anchorable(conn: &Connection, continuity_id: &str) -> Result<Option<String>, WorkMemoryError> {
    if continuity_id.starts_with("hl-") {
        return Ok(Some(format!(
            "chain `{continuity_id}` is a restored legacy handoff packet, not a journaled conversation; anchor on a turn of the chain the work is done in"
        )));
    }
    let projects: Option<(Option<String>, String)> = conn
        .query_row(
            "SELECT c.project_id, w.project_ref FROM journal_chains c JOIN wm_chains w ON w.continuity_id = c.continuity_id WHERE c.continuity_id = ?1",
            params![continuity_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    Ok(match projects {
        Some((Some(project), partition)) if project != partition => Some(format!(
            "chain `{continuity_id}` belongs to Project `{project}`, not to this partition's project_ref `{partition}`; anchor on a turn of the partition's own Project"
        )),
        _ => None,
    })
}

/// [`text_digest`] for a put: the digest, or the refusal that says what to send.
pub fn text_digest_for_put(conn: &Connection, continuity_id: &str, anchor: &JournalTurnAnchor) -> Result<String, WorkMemoryError> {
    if anchor.continuity_id != continuity_id {
        return Err(WorkMemoryError::AnchorMissing(format!(
            "checkpoint.put: through_journal_turn.continuity_id `{}` is not this work chain's continuity_id `{continuity_id}`; anchor on a turn of the chain this partition is bound to",
            anchor.continuity_id
        )));
    }
    if let Some(why) = why_not_anchorable(conn, continuity_id)? {
        return Err(WorkMemoryError::AnchorMissing(format!("checkpoint.put: {why}")));
    }
    text_digest(conn, continuity_id, anchor)?.ok_or_else(|| {
        WorkMemoryError::AnchorMissing(format!(
            "checkpoint.put: through_journal_turn names message `{}`, which is not a journal turn of chain `{continuity_id}`; send a message_id that continuity.resume lists for this chain",
            anchor.message_id
        ))
    })
}
