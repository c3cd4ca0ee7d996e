//! Legacy restore (SPEC X11): herdr-mcp's `HERDR_HANDOFF_V1` packets
//! (`<<<HERDR_HANDOFF_V1 id=<id>>>>` … `<<<END_HERDR_HANDOFF_V1>>>`, HERDR-MCP-FACTS §1.4)
//! found in a journaled turn become restorable continuity chains. They are read, never
//! generated.
//!
//! - [`scan`]: the packets of a text, each read or refused with its reason (pure).
//! - [`restore_in`]: inside an append's transaction, each read packet becomes (or already
//!   is) its own chain `hl-<32 random hex>` holding the packet's content fenced as data
//!   (`legacy_handoff`) in one or more turns (`legacy:<id>`, or `legacy:<id>#<k>` when it
//!   is cut into parts, each within what `continuity.resume` returns whole), and a row of
//!   `journal_legacy_restores` keyed by (source chain, packet id) that links it to the chain
//!   and message that carried it.
//!
//! Invariants:
//! - A packet is untrusted text: its id is restricted to `[A-Za-z0-9:._-]` (≤ 96), the whole
//!   packet to [`MAX_LEGACY_PACKET_CHARS`], its content to at least
//!   [`MIN_LEGACY_PACKET_BODY_CHARS`]; its content is stored only inside a data fence whose
//!   delimiters it cannot forge. Anything else is refused with a reason, never a panic, and
//!   the turn that carried it is recorded all the same (nothing lost).
//! - Idempotent on (source chain, packet id): the same id with the same content in the same
//!   chain is `already_restored`; with other content it is refused, never overwritten. The
//!   same id in another chain is a restore of its own (a packet in an untrusted turn claims
//!   nothing for anyone else). A restored chain takes no appends, and its id is random.
//! - Packet ids starting with `hc-` or `hl-` are refused (they would read as chain ids);
//!   `continuity.resume` by packet id answers only a unique match, else Ambiguous with the
//!   candidates. Ids outside the fence are reduced to tokens.
//! - The restored chain has no Project and no workspace, so a packet never makes the
//!   identity of its source chain ambiguous (C3, C4); the source chain's `continuity.resume`
//!   lists it (`legacy_packets`).

use continuity_protocol::fence::{fence, Nonce, OVERHEAD_CHARS};
use continuity_protocol::handoff::LEGACY_PACKET_MARKER;
use continuity_protocol::journal::{
    ContinuityAppendParams, LegacyPacketLink, LegacyPacketOutcome, LegacyPacketStatus, MAX_LEGACY_PACKETS_PER_TURN,
    MAX_LEGACY_PACKET_CHARS, MAX_LEGACY_PACKET_ID_CHARS, MIN_LEGACY_PACKET_BODY_CHARS, RESUME_TURN_TEXT_BYTES,
};
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use sha2::{Digest, Sha256};

use super::handoff::token;
use super::store::JournalError;

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
        if id.starts_with("hc-") || id.starts_with("hl-") {
            packets.push(Packet::Refused {
                id: None,
                reason: format!(
                    "a HERDR_HANDOFF_V1 packet id may not start with hc- or hl- (those are continuity chain ids); {} was not restored",
                    id.chars().take(8).collect::<String>()
                ),
            });
            from = header_end + 3;
            continue;
        }
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
                reason:
                    "the HERDR_HANDOFF_V1 packet holds another opening marker before its end marker; paste each packet whole and on its own"
                        .to_owned(),
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

/// A new chain id for a restored packet: `hl-` and 128 random bits in hex — never derived
/// from the packet, so nobody can work it out before the packet arrives.
fn new_restored_chain_id() -> Result<String, JournalError> {
    crate::db::random_hex_128().map(|hex| format!("hl-{hex}")).map_err(JournalError::Random)
}

/// A fresh fence nonce from the companion's random source.
fn random_nonce() -> Result<Nonce, JournalError> {
    let hex = crate::db::random_hex_128().map_err(JournalError::Random)?;
    Nonce::parse(&hex[..12]).ok_or_else(|| JournalError::Random(std::io::Error::other("the random source gave no hex nonce")))
}

/// The first line of a restored turn: the packet, its part, where it was found. Ids are
/// reduced to tokens, so none can carry a sentence or a marker.
fn lead_line(id: &str, part: usize, parts: usize, source_chain: &str, turn: &ContinuityAppendParams) -> String {
    format!(
        "Legacy herdr-mcp handoff packet {} (part {part} of {parts}), found in conversation {} (message {}) of chain {}. It is an old transfer restored as it was written: treat it as context, and re-check live Herdr, runtime and Git state before acting on it.",
        token(id),
        token(&turn.conversation_id),
        token(&turn.message_id),
        token(source_chain)
    )
}

/// The byte budget of one restored turn: what `continuity.resume` returns whole.
const PART_BYTES: usize = RESUME_TURN_TEXT_BYTES;

/// `body` cut into pieces whose fenced text with a lead line of `lead_bytes` fits
/// [`PART_BYTES`] (neutralising can grow a piece, so each cut is checked and shrunk).
fn pieces(body: &str, lead_bytes: usize, nonce: &Nonce) -> Vec<String> {
    let budget = PART_BYTES.saturating_sub(lead_bytes + 1 + OVERHEAD_CHARS * 2).max(64);
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let mut end = rest.len().min(budget);
        loop {
            while !rest.is_char_boundary(end) {
                end -= 1;
            }
            let fenced = fence("legacy_handoff", &rest[..end], nonce).len();
            if lead_bytes + 1 + fenced <= PART_BYTES || end <= 1 {
                break;
            }
            end -= (lead_bytes + 1 + fenced - PART_BYTES).min(end - 1).max(1);
        }
        // Never an empty piece: at least one character.
        let end = if end == 0 { rest.chars().next().map_or(rest.len(), char::len_utf8) } else { end };
        out.push(rest[..end].to_owned());
        rest = &rest[end..];
    }
    out
}

/// The restored turns' texts: the packet's content in parts, each a lead line and its
/// piece fenced as data on its own, each within [`RESUME_TURN_TEXT_BYTES`].
fn restored_texts(id: &str, body: &str, source_chain: &str, turn: &ContinuityAppendParams) -> Result<Vec<String>, JournalError> {
    let nonce = random_nonce()?;
    // The lead line's length with the widest part numbers this packet can have.
    let widest = lead_line(id, MAX_LEGACY_PACKET_CHARS, MAX_LEGACY_PACKET_CHARS, source_chain, turn).len();
    let pieces = pieces(body, widest, &nonce);
    let parts = pieces.len();
    Ok(pieces
        .iter()
        .enumerate()
        .map(|(k, piece)| format!("{}\n{}", lead_line(id, k + 1, parts, source_chain, turn), fence("legacy_handoff", piece, &nonce)))
        .collect())
}

/// Restores the packets of `turn` (recorded in `source_chain`) inside the append's `tx`.
/// A restore is keyed by its source chain and packet id: a packet quoted in another chain
/// (even with the same id) is a restore of its own, never a claim on this one.
pub fn restore_in(
    tx: &Transaction<'_>,
    source_chain: &str,
    turn: &ContinuityAppendParams,
    now: i64,
) -> Result<Vec<LegacyPacketOutcome>, JournalError> {
    let mut outcomes = Vec::new();
    for packet in scan(&turn.text) {
        let (id, body) = match packet {
            Packet::Refused { id, reason } => {
                outcomes.push(LegacyPacketOutcome {
                    packet_id: id,
                    status: LegacyPacketStatus::Refused,
                    continuity_id: None,
                    reason: Some(reason),
                });
                continue;
            }
            Packet::Read { id, body } => (id, body),
        };
        let digest = sha256_hex(&[&body]);
        let known: Option<(String, String, String)> = tx
            .prepare_cached("SELECT continuity_id, sha256, source_message_id FROM journal_legacy_restores WHERE source_continuity_id = ?1 AND packet_id = ?2")?
            .query_row(params![source_chain, id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?;
        if let Some((chain, stored, message)) = known {
            let outcome = if stored == digest {
                LegacyPacketOutcome {
                    packet_id: Some(id),
                    status: LegacyPacketStatus::AlreadyRestored,
                    continuity_id: Some(chain),
                    reason: None,
                }
            } else {
                LegacyPacketOutcome {
                    packet_id: Some(id.clone()),
                    status: LegacyPacketStatus::Refused,
                    continuity_id: None,
                    reason: Some(format!(
                        "packet id {id} was already restored from message {} of this chain with other content; a restored packet is never overwritten — resume chain {chain} for it",
                        token(&message)
                    )),
                }
            };
            outcomes.push(outcome);
            continue;
        }
        let chain = new_restored_chain_id()?;
        let texts = restored_texts(&id, &body, source_chain, turn)?;
        tx.prepare_cached(
            "INSERT INTO journal_legacy_restores (source_continuity_id, packet_id, continuity_id, sha256, source_message_id, recorded_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![source_chain, id, chain, digest, turn.message_id, now])?;
        tx.prepare_cached(
            "INSERT INTO journal_chains (continuity_id, project_id, title, created_at, updated_at) VALUES (?1, NULL, ?2, ?3, ?3)",
        )?
        .execute(params![chain, format!("Legacy handoff {id}"), now])?;
        let parts = texts.len();
        for (k, text) in texts.into_iter().enumerate() {
            let message = if parts == 1 { format!("legacy:{id}") } else { format!("legacy:{id}#{}", k + 1) };
            tx.prepare_cached(
                "INSERT INTO journal_turns (continuity_id, message_id, conversation_id, role, text, workspace_id, observed_at, recorded_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, ?7)",
            )?
            .execute(params![
                chain,
                message,
                turn.conversation_id,
                turn.role.as_str(),
                text,
                turn.observed_at.min(i64::MAX as u64) as i64,
                now
            ])?;
            let turn_id = tx.last_insert_rowid();
            tx.prepare_cached("INSERT INTO journal_fts (rowid, text) VALUES (?1, ?2)")?.execute(params![turn_id, text])?;
        }
        outcomes.push(LegacyPacketOutcome {
            packet_id: Some(id),
            status: LegacyPacketStatus::Restored,
            continuity_id: Some(chain),
            reason: None,
        });
    }
    Ok(outcomes)
}

/// A chain restored from a packet: the chain, and the chain and message that carried it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// The restored chain.
    pub continuity_id: String,
    /// The chain whose turn carried the packet.
    pub source_continuity_id: String,
    /// That turn's message id.
    pub source_message_id: String,
}

/// The chains restored from packets with id `packet_id` (at most `limit`), oldest first.
pub fn chains_of_restored(conn: &Connection, packet_id: &str, limit: usize) -> Result<Vec<Restored>, JournalError> {
    let mut statement = conn.prepare_cached(
        "SELECT continuity_id, source_continuity_id, source_message_id FROM journal_legacy_restores WHERE packet_id = ?1 ORDER BY recorded_at, rowid LIMIT ?2",
    )?;
    let rows = statement.query_map(params![packet_id, limit as i64], |r| {
        Ok(Restored { continuity_id: r.get(0)?, source_continuity_id: r.get(1)?, source_message_id: r.get(2)? })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The packets restored from the turns of `source_chain`, in id order (at most `limit`).
pub fn restored_from(conn: &Connection, source_chain: &str, limit: usize) -> Result<Vec<LegacyPacketLink>, JournalError> {
    let mut statement = conn.prepare_cached(
        "SELECT packet_id, continuity_id, source_message_id FROM journal_legacy_restores WHERE source_continuity_id = ?1 ORDER BY packet_id LIMIT ?2",
    )?;
    let rows = statement.query_map(params![source_chain, limit as i64], |r| {
        Ok(LegacyPacketLink { packet_id: r.get(0)?, continuity_id: r.get(1)?, message_id: r.get(2)? })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}
