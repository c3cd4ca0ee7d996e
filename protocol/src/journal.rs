//! The Continuity Journal's wire types (docs/PROTOCOL.md "Continuity Journal", SPEC
//! C1–C7): the params of `continuity.append`, `continuity.resolve`, `continuity.search`,
//! `continuity.resume` and `continuity.list`, the parts of their results, the closed name
//! sets they use, and their size caps.
//!
//! The read methods keep herdr-mcp's names and field names (HERDR-MCP-FACTS §1.5), so a
//! planner that knows herdr-mcp calls them unchanged through `herdr_call`; the results add
//! the runtime protocol's `type`. Every params struct refuses unknown keys.

use serde::{Deserialize, Serialize};

use crate::names::wire_names;

/// Largest turn text `continuity.append` takes, in bytes (64 KiB).
pub const MAX_TURN_TEXT_BYTES: usize = 64 * 1024;
/// Longest id (`continuity_id`, `conversation_id`, `message_id`, `project_id`,
/// `workspace_id`), in characters.
pub const MAX_JOURNAL_ID_CHARS: usize = 256;
/// Longest `conversation_url`, in characters.
pub const MAX_URL_CHARS: usize = 2048;
/// Longest conversation `title`, in characters.
pub const MAX_TITLE_CHARS: usize = 512;
/// Longest `continuity.search` `query`, in characters.
pub const MAX_SEARCH_QUERY_CHARS: usize = 512;
/// Most candidates one `continuity.search` or `continuity.list` answer carries.
pub const MAX_CANDIDATES: u64 = 10;
/// Candidates `continuity.search` gives without `limit`.
pub const DEFAULT_SEARCH_LIMIT: u64 = 5;
/// Most turns `continuity.resume` returns (the newest ones).
pub const RESUME_TURNS: usize = 32;
/// Most bytes of one turn's text `continuity.resume` returns (the start is kept).
pub const RESUME_TURN_TEXT_BYTES: usize = 8 * 1024;
/// Most characters of a candidate's recent user / assistant excerpt.
pub const EXCERPT_CHARS: usize = 240;
/// Most workspace ids listed per candidate.
pub const MAX_CANDIDATE_WORKSPACES: usize = 8;

/// Most characters of a legacy `HERDR_HANDOFF_V1` packet, both markers included (X11,
/// herdr-mcp's own cap).
pub const MAX_LEGACY_PACKET_CHARS: usize = 24_000;
/// Fewest characters of a legacy packet's content between its markers (trimmed).
pub const MIN_LEGACY_PACKET_BODY_CHARS: usize = 20;
/// Longest legacy packet id (`id=` of the opening marker), in characters.
pub const MAX_LEGACY_PACKET_ID_CHARS: usize = 96;
/// Most legacy packets read from one turn; later ones are refused.
pub const MAX_LEGACY_PACKETS_PER_TURN: usize = 4;

wire_names! {
    /// What the journal did with a legacy `HERDR_HANDOFF_V1` packet found in an appended
    /// turn (X11).
    pub enum LegacyPacketStatus {
        /// The packet is now its own chain, resumable by that chain's id or the packet id.
        Restored = "restored",
        /// The same packet (id and content) was restored before; nothing changed.
        AlreadyRestored = "already_restored",
        /// The packet was not restored (`reason` says why); the turn itself is recorded.
        Refused = "refused",
    }
}

/// One legacy packet found in an appended turn, as `continuity.append` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegacyPacketOutcome {
    /// The packet's id, when its opening marker named a valid one.
    pub packet_id: Option<String>,
    /// What was done.
    pub status: LegacyPacketStatus,
    /// The chain it is restored as (not when refused).
    pub continuity_id: Option<String>,
    /// Why it was refused, and what to do.
    pub reason: Option<String>,
}

/// A legacy packet restored from a chain's turns: `continuity.resume` of its source chain
/// lists it so the planner can resume it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegacyPacketLink {
    /// The packet's id.
    pub packet_id: String,
    /// The chain it is restored as.
    pub continuity_id: String,
    /// The message of the source chain that carried it.
    pub message_id: String,
}

wire_names! {
    /// Who wrote a journaled turn.
    pub enum TurnRole {
        /// The person in the chat (or a message the extension typed for them).
        User = "user",
        /// The chat's model.
        Assistant = "assistant",
    }
}

wire_names! {
    /// What `continuity.search` concluded (C4).
    pub enum Resolution {
        /// No chain matches.
        None = "none",
        /// Stable identity alone names exactly one chain: it may be resumed without asking.
        UniqueExact = "unique_exact",
        /// One or more candidates, but identity alone does not single one out: show them
        /// and let the user choose.
        ConfirmationRequired = "confirmation_required",
    }
}

wire_names! {
    /// Why a chain is a candidate.
    pub enum MatchReason {
        /// One of its conversations is the given `conversation_id` (or the URL's).
        ConversationId = "conversation_id",
        /// It belongs to the given `project_id` (or the URL's).
        ProjectId = "project_id",
        /// A turn of it was written while bound to the given `workspace_id`.
        WorkspaceId = "workspace_id",
        /// A turn of it contains every word of `query`.
        Query = "query",
    }
}

/// Params of `continuity.append`: one finalized turn (C1). Idempotent on
/// `(continuity_id, message_id)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContinuityAppendParams {
    /// The chain; absent = the conversation's chain, else the Project's only chain (C3),
    /// else a new chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuity_id: Option<String>,
    /// The chat's conversation id (ChatGPT's `/c/<id>`).
    pub conversation_id: String,
    /// The turn's stable id (the page's message id).
    pub message_id: String,
    /// `user` or `assistant`.
    pub role: TurnRole,
    /// The turn's text (non-empty, ≤ [`MAX_TURN_TEXT_BYTES`]).
    pub text: String,
    /// When the extension saw the turn end (ms since the Unix epoch).
    pub observed_at: u64,
    /// The ChatGPT Project (`g-p-<32 hex>`), when the chat is in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// The Herdr workspace the chat is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
    /// The conversation's full URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_url: Option<String>,
    /// The conversation's title as the page shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// Params of `continuity.resolve`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContinuityResolveParams {
    /// The conversation whose chain is asked for.
    pub conversation_id: String,
}

/// Params of `continuity.search`: stable identities and/or a text query (at least one).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContinuitySearchParams {
    /// Chains of this ChatGPT Project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// Chains with a turn written while bound to this workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
    /// The chain of this conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// A conversation URL; its conversation and Project ids count as given (they must not
    /// contradict explicit ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_url: Option<String>,
    /// Words every matching turn contains (never a ranking).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// 1..=[`MAX_CANDIDATES`] (default [`DEFAULT_SEARCH_LIMIT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
}

/// Params of `continuity.resume`: exactly one of the two (C5).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContinuityResumeParams {
    /// The chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuity_id: Option<String>,
    /// A journaled conversation's full URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_url: Option<String>,
    /// A page's `next_cursor`: the turns older than that page's oldest (absent = the
    /// newest turns). Stable under appends: a new turn never shifts an older page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
}

/// A `continuity.resume` cursor: the oldest turn of the page it came with and the chain it
/// pages, written `t<turn number>-<8 hex naming the chain>` (opaque to the planner; only
/// [`parse_resume_cursor`] reads it, and the runtime refuses it for another chain).
pub fn resume_cursor(turn: i64, continuity_id: &str) -> String {
    format!("t{turn}-{:08x}", chain_tag(continuity_id))
}

/// A `before` cursor read back: the turn it names and the tag of the chain it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResumeCursor {
    /// The oldest turn of the page the cursor came with.
    pub turn: i64,
    /// [`chain_tag`] of the chain it pages.
    pub chain: u32,
}

impl ResumeCursor {
    /// Whether the cursor came from a page of `continuity_id`.
    pub fn pages(&self, continuity_id: &str) -> bool {
        self.chain == chain_tag(continuity_id)
    }
}

/// The cursor a `before` names, `None` when it is not one this runtime wrote.
pub fn parse_resume_cursor(cursor: &str) -> Option<ResumeCursor> {
    let (digits, tag) = cursor.strip_prefix('t')?.split_once('-')?;
    if digits.is_empty() || digits.len() > 18 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if tag.len() != 8 || !tag.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) {
        return None;
    }
    let turn = digits.parse().ok().filter(|n: &i64| *n > 0)?;
    Some(ResumeCursor { turn, chain: u32::from_str_radix(tag, 16).ok()? })
}

/// 32-bit FNV-1a of a continuity id: enough to tell a chain's cursors from another's.
fn chain_tag(continuity_id: &str) -> u32 {
    continuity_id.bytes().fold(0x811c_9dc5_u32, |hash, byte| (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193))
}

#[cfg(test)]
mod cursor_tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_as_its_turn_and_chain_and_nothing_else_reads() {
        let cursor = resume_cursor(4182, "hc-5f0c9a7e2b1d4c3a8e6f0b2d4a6c8e01");
        let read = parse_resume_cursor(&cursor).expect("ours");
        assert_eq!(read.turn, 4182);
        assert!(read.pages("hc-5f0c9a7e2b1d4c3a8e6f0b2d4a6c8e01"));
        assert!(!read.pages("hc-00000000000000000000000000000000"));
        for bad in ["t4182", "t0-0000abcd", "t-1-0000abcd", "4182-0000abcd", "t12-ABCDEF01", "t12-abc", "t12-0000abcdx", "t12_0000abcd", ""]
        {
            assert_eq!(parse_resume_cursor(bad), None, "{bad}");
        }
    }
}

/// Params of `continuity.list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContinuityListParams {
    /// 1..=[`MAX_CANDIDATES`] (default [`MAX_CANDIDATES`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
}

/// One chain as `continuity.search` and `continuity.list` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainCandidate {
    /// The chain.
    pub continuity_id: String,
    /// The newest conversation title it was given, if any.
    pub title: Option<String>,
    /// Its ChatGPT Project, if any.
    pub project_id: Option<String>,
    /// Workspaces its turns were written under (≤ [`MAX_CANDIDATE_WORKSPACES`]).
    pub workspace_ids: Vec<String>,
    /// When its newest turn was recorded (ms since the Unix epoch).
    pub updated_at: u64,
    /// The start of its newest user turn (≤ [`EXCERPT_CHARS`]).
    pub recent_user_excerpt: Option<String>,
    /// The start of its newest assistant turn (≤ [`EXCERPT_CHARS`]).
    pub recent_assistant_excerpt: Option<String>,
    /// Why it is listed (empty in `continuity.list`).
    pub match_reasons: Vec<MatchReason>,
}

/// One journaled turn as `continuity.resume` returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalTurn {
    /// Its conversation.
    pub conversation_id: String,
    /// Its message id.
    pub message_id: String,
    /// `user` or `assistant`.
    pub role: TurnRole,
    /// Its text, cut to [`RESUME_TURN_TEXT_BYTES`].
    pub text: String,
    /// Whether `text` was cut.
    pub text_truncated: bool,
    /// When the extension saw it (ms since the Unix epoch).
    pub observed_at: u64,
}
