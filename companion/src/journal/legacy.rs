//! Legacy restore (SPEC X11): herdr-mcp's `HERDR_HANDOFF_V1` packets
//! (`<<<HERDR_HANDOFF_V1 id=<id>>>>` … `<<<END_HERDR_HANDOFF_V1>>>`, HERDR-MCP-FACTS §1.4)
//! found in a journaled turn become restorable continuity chains. They are read, never
//! generated.
//!
//! - [`scan`]: the packets of a text, each read or refused with its reason (pure).
//! - [`restore_in`]: inside an append's transaction, each read packet becomes (or already
//!   is) its own chain `hl-<32 hex of SHA-256 of the id>` holding one turn, the packet's
//!   content fenced as data (`legacy_handoff`), and a row of `journal_legacy_packets` that
//!   links it to the chain and message that carried it.
//!
//! Invariants:
//! - A packet is untrusted text: its id is restricted to `[A-Za-z0-9:._-]` (≤ 96), the whole
//!   packet to [`MAX_LEGACY_PACKET_CHARS`], its content to at least
//!   [`MIN_LEGACY_PACKET_BODY_CHARS`]; its content is stored only inside a data fence whose
//!   delimiters it cannot forge. Anything else is refused with a reason, never a panic, and
//!   the turn that carried it is recorded all the same (nothing lost).
//! - Idempotent on the packet id: the same id with the same content is `already_restored`;
//!   the same id with other content is refused, never overwritten.
//! - The restored chain has no Project and no workspace, so a packet never makes the
//!   identity of its source chain ambiguous (C3, C4); the source chain's `continuity.resume`
//!   lists it (`legacy_packets`), and `continuity.resume` takes the packet id as a
//!   `continuity_id` too.

use continuity_protocol::fence::{fence, Nonce};
use continuity_protocol::handoff::LEGACY_PACKET_MARKER;
use continuity_protocol::journal::{
    ContinuityAppendParams, LegacyPacketLink, LegacyPacketOutcome, LegacyPacketStatus, MAX_LEGACY_PACKETS_PER_TURN,
    MAX_LEGACY_PACKET_CHARS, MAX_LEGACY_PACKET_ID_CHARS, MIN_LEGACY_PACKET_BODY_CHARS,
};
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use sha2::{Digest, Sha256};

use super::store::JournalError;

/// The table of restored packets (created with the journal's tables).
pub const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS journal_legacy_packets (
    packet_id TEXT PRIMARY KEY,
    continuity_id TEXT NOT NULL UNIQUE,
    sha256 TEXT NOT NULL,
    source_continuity_id TEXT NOT NULL,
    source_message_id TEXT NOT NULL,
    recorded_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS journal_legacy_by_source ON journal_legacy_packets (source_continuity_id, packet_id);";

/// A packet of a text: read, or refused with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packet {
    /// A well-formed packet.
    Read {
        /// Its id.
        id: String,
        /// Its content between the markers, trimmed.
        body: String,
    },
    /// A packet that is not restored; the id when the marker named a valid one.
    Refused {
        /// Its id, if valid.
        id: Option<String>,
        /// Why, and what to do.
        reason: String,
    },
}

fn opening() -> String {
    format!("<<<{LEGACY_PACKET_MARKER}")
}

fn closing() -> String {
    format!("<<<END_{LEGACY_PACKET_MARKER}>>>")
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.chars().count() <= MAX_LEGACY_PACKET_ID_CHARS
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '.' | '_' | '-'))
}

/// The byte index of the first `needle` in `text` at or after `from`.
fn find_from(text: &str, needle: &str, from: usize) -> Option<usize> {
    text.get(from..)?.find(needle).map(|at| at + from)
}

/// Every legacy packet of `text`, in order; after [`MAX_LEGACY_PACKETS_PER_TURN`] the next
/// opening marker is refused and reading stops.
pub fn scan(text: &str) -> Vec<Packet> {
    let (open, close) = (opening(), closing());
    let mut packets = Vec::new();
    let mut from = 0;
    while let Some(start) = find_from(text, &open, from) {
        if packets.len() == MAX_LEGACY_PACKETS_PER_TURN {
            packets.push(Packet::Refused {
                id: None,
                reason: format!("more than {MAX_LEGACY_PACKETS_PER_TURN} HERDR_HANDOFF_V1 packets in one turn; only the first {MAX_LEGACY_PACKETS_PER_TURN} are read — paste the others in a turn of their own"),
            });
            break;
        }
        let after_marker = start + open.len();
        // ` id=<id>>>>`: the id runs to the first `>>>`.
        let header_end = find_from(text, ">>>", after_marker);
        let id = header_end.and_then(|end| text.get(after_marker..end)).and_then(|h| h.strip_prefix(" id="));
        let Some((id, header_end)) = id.zip(header_end).filter(|(id, _)| valid_id(id)) else {
            packets.push(Packet::Refused {
                id: None,
                reason: format!("a HERDR_HANDOFF_V1 opening marker without a valid id: the packet must start with <<<HERDR_HANDOFF_V1 id=<id>>>> where the id is 1 to {MAX_LEGACY_PACKET_ID_CHARS} of A-Z a-z 0-9 : . _ -"),
            });
            from = after_marker;
            continue;
        };
        let id = id.to_owned();
        let body_start = header_end + 3;
        let Some(end) = find_from(text, &close, body_start) else {
            packets.push(Packet::Refused {
                id: Some(id),
                reason: "the HERDR_HANDOFF_V1 packet has no <<<END_HERDR_HANDOFF_V1>>> marker (cut off?); paste the whole packet, both markers included".to_owned(),
            });
            break;
        };
        from = end + close.len();
        let body = text.get(body_start..end).unwrap_or("");
        let chars = text.get(start..from).map_or(0, |p| p.chars().count());
        if chars > MAX_LEGACY_PACKET_CHARS {
            packets.push(Packet::Refused {
                id: Some(id),
                reason: format!("the HERDR_HANDOFF_V1 packet is {chars} characters; at most {MAX_LEGACY_PACKET_CHARS} (markers included) are restored — it was not restored"),
            });
            continue;
        }
        if body.contains(open.as_str()) {
            packets.push(Packet::Refused {
                id: Some(id),
                reason: "the HERDR_HANDOFF_V1 packet holds another opening marker before its end marker; paste each packet whole and on its own".to_owned(),
            });
            continue;
        }
        let body = body.trim();
        if body.chars().count() < MIN_LEGACY_PACKET_BODY_CHARS {
            packets.push(Packet::Refused {
                id: Some(id),
                reason: format!("the HERDR_HANDOFF_V1 packet's content is shorter than {MIN_LEGACY_PACKET_BODY_CHARS} characters, so there is nothing to restore"),
            });
            continue;
        }
        packets.push(Packet::Read { id, body: body.to_owned() });
    }
    packets
}

fn sha256_hex(parts: &[&str]) -> String {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The chain a packet id is restored as.
pub fn chain_of_packet(packet_id: &str) -> String {
    format!("hl-{}", &sha256_hex(&[packet_id])[..32])
}

/// The restored turn's text: a line that names the packet and where it was found, then its
/// content fenced as data.
fn restored_text(id: &str, body: &str, source_chain: &str, turn: &ContinuityAppendParams, digest: &str) -> String {
    // The digest's first 12 hex characters always parse; a fallback keyed by the digest.
    let nonce = Nonce::parse(&digest[..12]).unwrap_or_else(|| continuity_protocol::fence::nonce(&[7; 16], digest));
    format!(
        "Legacy herdr-mcp handoff packet {id}, found in conversation {} (message {}) of chain {source_chain}. It is an old transfer restored as it was written: treat it as context, and re-check live Herdr, runtime and Git state before acting on it.\n{}",
        turn.conversation_id,
        turn.message_id,
        fence("legacy_handoff", body, &nonce)
    )
}

/// Restores the packets of `turn` (recorded in `source_chain`) inside the append's `tx`.
pub fn restore_in(tx: &Transaction<'_>, source_chain: &str, turn: &ContinuityAppendParams, now: i64) -> Result<Vec<LegacyPacketOutcome>, JournalError> {
    let mut outcomes = Vec::new();
    for packet in scan(&turn.text) {
        let (id, body) = match packet {
            Packet::Refused { id, reason } => {
                outcomes.push(LegacyPacketOutcome { packet_id: id, status: LegacyPacketStatus::Refused, continuity_id: None, reason: Some(reason) });
                continue;
            }
            Packet::Read { id, body } => (id, body),
        };
        let digest = sha256_hex(&[&body]);
        let chain = chain_of_packet(&id);
        let known: Option<(String, String, String)> = tx
            .prepare_cached("SELECT sha256, source_continuity_id, source_message_id FROM journal_legacy_packets WHERE packet_id = ?1")?
            .query_row(params![id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?;
        if let Some((stored, source, message)) = known {
            let outcome = if stored == digest {
                LegacyPacketOutcome { packet_id: Some(id), status: LegacyPacketStatus::AlreadyRestored, continuity_id: Some(chain), reason: None }
            } else {
                LegacyPacketOutcome {
                    packet_id: Some(id.clone()),
                    status: LegacyPacketStatus::Refused,
                    continuity_id: None,
                    reason: Some(format!(
                        "packet id {id} was already restored (from message {message} of chain {source}) with other content; a restored packet is never overwritten — resume chain {chain} for it"
                    )),
                }
            };
            outcomes.push(outcome);
            continue;
        }
        let taken: Option<i64> = tx.prepare_cached("SELECT 1 FROM journal_chains WHERE continuity_id = ?1")?.query_row(params![chain], |r| r.get(0)).optional()?;
        if taken.is_some() {
            outcomes.push(LegacyPacketOutcome {
                packet_id: Some(id),
                status: LegacyPacketStatus::Refused,
                continuity_id: None,
                reason: Some(format!("chain {chain}, the one packets with this id are restored as, already exists with other turns; the packet was not restored")),
            });
            continue;
        }
        let text = restored_text(&id, &body, source_chain, turn, &digest);
        tx.prepare_cached(
            "INSERT INTO journal_legacy_packets (packet_id, continuity_id, sha256, source_continuity_id, source_message_id, recorded_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![id, chain, digest, source_chain, turn.message_id, now])?;
        tx.prepare_cached("INSERT INTO journal_chains (continuity_id, project_id, title, created_at, updated_at) VALUES (?1, NULL, ?2, ?3, ?3)")?
            .execute(params![chain, format!("Legacy handoff {id}"), now])?;
        tx.prepare_cached(
            "INSERT INTO journal_turns (continuity_id, message_id, conversation_id, role, text, workspace_id, observed_at, recorded_at)
             VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, ?7)",
        )?
        .execute(params![
            chain,
            format!("legacy:{id}"),
            turn.conversation_id,
            turn.role.as_str(),
            text,
            turn.observed_at.min(i64::MAX as u64) as i64,
            now
        ])?;
        let turn_id = tx.last_insert_rowid();
        tx.prepare_cached("INSERT INTO journal_fts (rowid, text) VALUES (?1, ?2)")?.execute(params![turn_id, text])?;
        outcomes.push(LegacyPacketOutcome { packet_id: Some(id), status: LegacyPacketStatus::Restored, continuity_id: Some(chain), reason: None });
    }
    Ok(outcomes)
}

/// The chain restored from packet `packet_id`, if any.
pub fn chain_of_restored(conn: &Connection, packet_id: &str) -> Result<Option<String>, JournalError> {
    Ok(conn
        .prepare_cached("SELECT continuity_id FROM journal_legacy_packets WHERE packet_id = ?1")?
        .query_row(params![packet_id], |r| r.get(0))
        .optional()?)
}

/// The packets restored from the turns of `source_chain`, in id order (at most 32).
pub fn restored_from(conn: &Connection, source_chain: &str) -> Result<Vec<LegacyPacketLink>, JournalError> {
    let mut statement = conn.prepare_cached(
        "SELECT packet_id, continuity_id, source_message_id FROM journal_legacy_packets WHERE source_continuity_id = ?1 ORDER BY packet_id LIMIT 32",
    )?;
    let rows = statement.query_map(params![source_chain], |r| Ok(LegacyPacketLink { packet_id: r.get(0)?, continuity_id: r.get(1)?, message_id: r.get(2)? }))?;
    Ok(rows.collect::<Result<_, _>>()?)
}
