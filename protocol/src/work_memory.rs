//! Work Memory (SPEC W1–W5): the params and results of the `work_memory.*` methods a planner
//! reaches through `herdr_call` (docs/PROTOCOL.md "Work Memory"), in the shapes planners
//! already use with herdr-mcp. A work chain is one *partition*: `project_ref + repo_id +
//! work_chain_id`, bound to one `continuity_id`; its raw turns and evidence are kept, and a
//! checkpoint (a compact summary) is written with a revision compare-and-swap.
//!
//! Params are refused whole on an unknown key (`deny_unknown_fields`); the companion checks
//! the sizes below and the string rules (non-empty, no leading or trailing space, no control
//! characters in ids) before any IO.

use serde::{Deserialize, Serialize};

/// Longest `continuity_id`, in bytes.
pub const MAX_CONTINUITY_ID_BYTES: usize = 160;
/// Longest `project_ref`, `repo_id`, `session_ref`, `space_ref`, `provider_message_ref`.
pub const MAX_REF_BYTES: usize = 512;
/// Longest `work_chain_id`, in bytes.
pub const MAX_WORK_CHAIN_ID_BYTES: usize = 128;
/// Longest `provider` and `role` / `kind`, in bytes.
pub const MAX_NAME_BYTES: usize = 32;
/// Longest `account_ref` and `fingerprint`, in bytes.
pub const MAX_ACCOUNT_REF_BYTES: usize = 256;
/// Longest turn text or evidence content, in bytes (256 KiB).
pub const MAX_BODY_BYTES: usize = 256 * 1024;
/// Longest checkpoint summary, in bytes (8 KiB).
pub const MAX_SUMMARY_BYTES: usize = 8 * 1024;
/// Longest `checkpoint_json`, in bytes (64 KiB); it must parse to a JSON object.
pub const MAX_CHECKPOINT_JSON_BYTES: usize = 64 * 1024;
/// Longest `through_evidence_id`, in bytes.
pub const MAX_EVIDENCE_ID_BYTES: usize = 128;
/// Longest `commit_sha`, in bytes.
pub const MAX_COMMIT_SHA_BYTES: usize = 64;
/// Longest `repo_relative_path`, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// Longest search `query`, in bytes.
pub const MAX_QUERY_BYTES: usize = 512;
/// `work_memory.resume`'s `max_turns`: default and bounds.
pub const DEFAULT_RESUME_TURNS: u32 = 32;
/// The most turns one resume returns.
pub const MAX_RESUME_TURNS: u32 = 64;
/// The most bytes of one turn's text or one evidence's content a resume returns (the rest
/// is cut at a character boundary and `display_excerpt_truncated` says so), so that a resume
/// stays far below the 1 MiB line of the runtime socket.
pub const MAX_RESUME_TEXT_BYTES: usize = 8 * 1024;
/// The most evidence items one resume returns (newest first kept).
pub const MAX_RESUME_EVIDENCE: usize = 16;
/// `work_memory.search`'s `limit`: default and maximum.
pub const DEFAULT_SEARCH_LIMIT: u32 = 10;
/// The most hits one search returns.
pub const MAX_SEARCH_LIMIT: u32 = 20;
/// What this companion keeps: every raw turn and evidence body until a verified checkpoint
/// stands in for it and the chain is over its limit (W4; the companion's `retention`).
pub const RETENTION_POLICY: &str = "reclaim_behind_verified_checkpoint";

/// `work_memory.bind`: binds a chat session to a work chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BindParams {
    /// The continuity chain this work chain belongs to.
    pub continuity_id: String,
    /// The project (e.g. a ChatGPT Project or a Herdr workspace reference).
    pub project_ref: String,
    /// The repository.
    pub repo_id: String,
    /// The work chain within project and repository.
    pub work_chain_id: String,
    /// The chat provider (`chatgpt`, `zai`, `deepseek`, …).
    pub provider: String,
    /// The provider account, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_ref: Option<String>,
    /// The provider space (Project), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub space_ref: Option<String>,
    /// The chat session (conversation).
    pub session_ref: String,
    /// When the binding was made (Unix ms).
    pub bound_at: u64,
}

/// `work_memory.bind`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BindResult {
    /// Always true (a refusal is an error).
    pub ok: bool,
    /// The chain.
    pub continuity_id: String,
    /// The partition: project.
    pub project_ref: String,
    /// The partition: repository.
    pub repo_id: String,
    /// The partition: work chain.
    pub work_chain_id: String,
    /// The provider of the latest bind.
    pub provider: String,
    /// The session of the latest bind.
    pub session_ref: String,
    /// [`RETENTION_POLICY`].
    pub retention_policy: String,
}

/// `work_memory.append_turn`: one finalized chat turn, raw (W1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppendTurnParams {
    /// A bound chain.
    pub continuity_id: String,
    /// The chat provider.
    pub provider: String,
    /// The provider account, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_ref: Option<String>,
    /// The provider space, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub space_ref: Option<String>,
    /// The chat session.
    pub session_ref: String,
    /// The provider's id of this message: with `continuity_id` and `provider`, the turn's
    /// identity (a retry with the same text is a no-op).
    pub provider_message_ref: String,
    /// `user` or `assistant` (any short name is kept as given).
    pub role: String,
    /// The turn's text.
    pub text: String,
    /// A caller's fingerprint of the text, kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// When the turn was observed (Unix ms).
    pub observed_at: u64,
}

/// `work_memory.append_turn`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppendTurnResult {
    /// Always true.
    pub ok: bool,
    /// False when this turn was already recorded (a retry).
    pub inserted: bool,
    /// The turn's id in this store (`m<n>`), an anchor for a checkpoint.
    pub message_id: String,
}

/// Where a piece of evidence comes from in a repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortableSource {
    /// The repository.
    pub repo_id: String,
    /// The commit the lines are read at.
    pub commit_sha: String,
    /// The file, relative to the repository root.
    pub repo_relative_path: String,
    /// First line (1-based), when a range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_start: Option<u64>,
    /// Last line, when a range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_end: Option<u64>,
}

/// `work_memory.append_evidence`: a piece of evidence (a test run, a diff, a log excerpt).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppendEvidenceParams {
    /// A bound chain.
    pub continuity_id: String,
    /// What kind of evidence (`test`, `diff`, `log`, …).
    pub kind: String,
    /// The evidence itself.
    pub content: String,
    /// The chat provider, when it came from a chat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The provider account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_ref: Option<String>,
    /// The provider space.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub space_ref: Option<String>,
    /// The chat session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_ref: Option<String>,
    /// Where it is in a repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub portable_source: Option<PortableSource>,
    /// When it was made (Unix ms).
    pub created_at: u64,
}

/// `work_memory.append_evidence`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppendEvidenceResult {
    /// Always true.
    pub ok: bool,
    /// False when the same evidence (kind and content) was already recorded.
    pub inserted: bool,
    /// Its id (`e<n>`), an anchor for a checkpoint.
    pub evidence_id: String,
    /// SHA-256 of the content, hex.
    pub sha256: String,
    /// `<repo_id>@<commit_sha>:<path>[#Lstart[-Lend]]` when it has a portable source.
    pub portable_evidence_ref: Option<String>,
}

/// `work_memory.checkpoint.put`: the next checkpoint of a chain (W2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointPutParams {
    /// A bound chain.
    pub continuity_id: String,
    /// The revision the caller read (0 before the first checkpoint); the put is refused
    /// when the chain has moved on.
    pub expected_checkpoint_revision: u64,
    /// A compact summary.
    pub summary: String,
    /// Structured state: a JSON object, as text.
    pub checkpoint_json: String,
    /// Covers the turns up to this one (`m<n>` of the same chain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through_message_id: Option<String>,
    /// Covers the evidence up to this one (`e<n>` of the same chain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through_evidence_id: Option<String>,
    /// Covers the journal's turns up to this one (W1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through_journal_turn: Option<JournalTurnAnchor>,
    /// When it was written (Unix ms).
    pub created_at: u64,
}

/// A checkpoint anchor that names a Continuity Journal turn directly (W1): the planner
/// anchors on a turn the journal already holds instead of appending it again. The chain
/// must be the work chain's own `continuity_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalTurnAnchor {
    /// The journal chain (the work chain's `continuity_id`).
    pub continuity_id: String,
    /// The journal turn's `message_id` (as `continuity.resume` lists it).
    pub message_id: String,
}

/// A stored checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// 1, 2, … per chain.
    pub revision: u64,
    /// The summary.
    pub summary: String,
    /// The structured state, as text.
    pub checkpoint_json: String,
    /// SHA-256 over summary, state and anchors, hex.
    pub sha256: String,
    /// The turn anchor.
    pub through_message_id: Option<String>,
    /// The evidence anchor.
    pub through_evidence_id: Option<String>,
    /// The journal turn anchor (W1), absent when none was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through_journal_turn: Option<JournalTurnAnchor>,
    /// When it was written.
    pub created_at: u64,
    /// Computed on every read: its `sha256` still matches the fields it covers (summary,
    /// checkpoint_json, the anchors, and a journal turn's text digest — not `revision` or
    /// `created_at`), and every anchor it names still exists in the partition — a journal
    /// turn with the text it had when the checkpoint was written (its text only: not its
    /// role or conversation).
    pub verified: bool,
}

/// `work_memory.checkpoint.put`'s answer: stored, or the compare-and-swap lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CheckpointPutResult {
    /// Stored (or this exact checkpoint was already stored by an earlier try).
    Stored {
        /// True.
        ok: bool,
        /// The checkpoint.
        checkpoint: Checkpoint,
    },
    /// The chain's revision is not the expected one.
    Conflict {
        /// False.
        ok: bool,
        /// `work_memory_checkpoint_revision_conflict`.
        code: String,
        /// The chain's current revision: read it, merge, and put again with it.
        actual: u64,
        /// What to do.
        message: String,
    },
}

/// `work_memory.resume`: a chain by its exact partition (W3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumeParams {
    /// The partition: project.
    pub project_ref: String,
    /// The partition: repository.
    pub repo_id: String,
    /// The partition: work chain.
    pub work_chain_id: String,
    /// How many raw turns after the checkpoint, 1 ..= [`MAX_RESUME_TURNS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
}

/// One raw turn in a resume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResumeTurn {
    /// Its id in this store.
    pub message_id: String,
    /// The chat provider.
    pub provider: String,
    /// The provider account.
    pub account_ref: Option<String>,
    /// The provider space.
    pub space_ref: Option<String>,
    /// The chat session.
    pub session_ref: String,
    /// The provider's message id.
    pub provider_message_ref: String,
    /// `user` / `assistant`.
    pub role: String,
    /// The text.
    pub text: String,
    /// When observed.
    pub observed_at: u64,
}

/// One piece of evidence in a resume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResumeEvidence {
    /// Its id.
    pub evidence_id: String,
    /// Its kind.
    pub kind: String,
    /// Its content.
    pub content: String,
    /// SHA-256 of the content.
    pub sha256: String,
    /// The provider, when from a chat.
    pub provider: Option<String>,
    /// The session, when from a chat.
    pub session_ref: Option<String>,
    /// The portable reference, when it has one.
    pub portable_ref: Option<String>,
    /// When made.
    pub created_at: u64,
}

/// What a resume covers and what it left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// The checkpoint revision the turns and evidence follow (0: none).
    pub checkpoint_revision: u64,
    /// The checkpoint's evidence anchor.
    pub through_evidence_id: Option<String>,
    /// True when more turns or evidence exist after the checkpoint than were returned.
    pub display_truncated: bool,
    /// `display_page_truncated` when more turns or evidence exist than were returned,
    /// `display_excerpt_truncated` when a text was cut to [`MAX_RESUME_TEXT_BYTES`],
    /// `source_revision_unverified` when evidence points into a repository (this companion
    /// does not read repositories).
    pub limitations: Vec<String>,
}

/// `work_memory.resume`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResumeResult {
    /// True.
    pub ok: bool,
    /// The chain.
    pub continuity_id: String,
    /// The partition: project.
    pub project_ref: String,
    /// The partition: repository.
    pub repo_id: String,
    /// The partition: work chain.
    pub work_chain_id: String,
    /// The latest checkpoint's revision (0: none yet).
    pub checkpoint_revision: u64,
    /// [`RETENTION_POLICY`].
    pub retention_policy: String,
    /// The latest verified checkpoint.
    pub checkpoint: Option<Checkpoint>,
    /// The newest raw turns after the checkpoint's turn anchor, oldest first.
    pub turns: Vec<ResumeTurn>,
    /// The newest evidence after the checkpoint's evidence anchor, oldest first.
    pub evidence: Vec<ResumeEvidence>,
    /// What was covered.
    pub coverage: Coverage,
    /// When the chain last changed.
    pub updated_at: u64,
    /// How to use this.
    pub instruction: String,
}

/// `work_memory.search`: full-text search in one partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// The partition: project.
    pub project_ref: String,
    /// The partition: repository.
    pub repo_id: String,
    /// The partition: work chain.
    pub work_chain_id: String,
    /// Words to find.
    pub query: String,
    /// How many hits, 1 ..= [`MAX_SEARCH_LIMIT`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// One search hit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchHit {
    /// `turn`, `evidence` or `checkpoint`.
    pub source_kind: String,
    /// `m<n>`, `e<n>` or `r<revision>`.
    pub source_id: String,
    /// A bounded excerpt around the match.
    pub excerpt: String,
}

/// `work_memory.search`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchResult {
    /// True.
    pub ok: bool,
    /// The chain searched.
    pub continuity_id: String,
    /// Best first.
    pub hits: Vec<SearchHit>,
    /// True when more hits exist than `limit`.
    pub truncated: bool,
}

/// Longest goal text (`work_memory.goal`, `goal.set`), in bytes.
pub const MAX_GOAL_BYTES: usize = 2 * 1024;
/// Most TODO items of one goal.
pub const MAX_GOAL_TODOS: usize = 64;
/// Longest TODO item text, in bytes.
pub const MAX_GOAL_TODO_BYTES: usize = 512;

/// One TODO item of a goal (SPEC J7): Goal mode continues while one is open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalTodo {
    /// What is to be done.
    pub text: String,
    /// Whether it is done.
    #[serde(default)]
    pub done: bool,
}

/// `work_memory.goal`: the planner sets (or clears) the goal of a chat's scope, and its
/// TODO items, the evidence Goal mode reads (SPEC J7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalParams {
    /// The chat's `browser_session_ref` (the scope the goal belongs to).
    pub session_ref: String,
    /// The goal; `null` (or left out, with no `todos`) only reads; `""` clears the goal
    /// and its TODO items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    /// The goal's TODO items, replacing the stored list whole; left out keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub todos: Option<Vec<GoalTodo>>,
}

/// A scope's goal as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoalState {
    /// The chat's `browser_session_ref`.
    pub session_ref: String,
    /// The goal, `null` when none is set.
    pub goal: Option<String>,
    /// Its TODO items.
    pub todos: Vec<GoalTodo>,
    /// Last change, ms since the Unix epoch (0: never set).
    pub updated_at: u64,
}
