//! The Continuity Journal service (issue 12, SPEC C1–C7): finalized chat turns of bound
//! chats in `state.db`, grouped into continuity chains, and the reads a planner resumes
//! from (`continuity.resolve`, `continuity.search`, `continuity.resume`, `continuity.list`)
//! and the handoff package a new conversation is seeded with.
//!
//! - [`store`]: the tables, the idempotent append and the bounded reads (synchronous).
//! - [`bench`]: the bench's synthetic fill (`herdr-companion journal-fill`, hidden).
//! - [`handoff`]: the read-only handoff package of a chain
//!   (`herdr_mcp.browser_handoff.prepare`, X4): live confirmation and the seed message.
//! - [`legacy`]: legacy `HERDR_HANDOFF_V1` packets found in appended turns, restored as
//!   chains of their own (X11; read, never generated).
//! - This module: the service ([`Journal`], whose every store call runs on the blocking
//!   pool), conversation URLs of ChatGPT, z.ai and DeepSeek ([`ConversationUrl`]) and the read operations that
//!   turn store rows into the methods' results ([`search`], [`resume`], [`resolve`],
//!   [`list`]).
//!
//! Invariants:
//! - An append is acknowledged only after its transaction committed (WAL,
//!   `synchronous=FULL`): an acknowledged turn is never lost, also not to a SIGKILL.
//! - `auto_resume_safe` is true only when stable identity alone (conversation, Project,
//!   workspace) names exactly one chain and the answer is that chain; a text match alone
//!   always needs the user's confirmation (C4). Nothing here picks the latest or the most
//!   similar chain.
//! - `continuity.resume` is bounded (32 turns, 8 KiB each) and always carries the
//!   instruction to re-check live state (C7); a conversation never journaled is named as
//!   such (C6). It pages back with a cursor (`before` / `next_cursor`, a turn number):
//!   appends never shift a page, and paging reaches the chain's first turn.

pub mod bench;
pub mod git;
pub mod handoff;
pub mod legacy;
pub mod store;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use continuity_protocol::handoff::HandoffProvider;
use continuity_protocol::journal::{ResumeCursor, MAX_CANDIDATES};
use continuity_protocol::{ChainCandidate, MatchReason, MethodResult, Resolution};

use crate::db::off_worker;
use crate::log::RuntimeLog;
use store::{ChainRow, Identity, JournalError, JournalStore};

/// The instruction every `continuity.resume` answer carries (C7).
pub const RESUME_INSTRUCTION: &str = "Treat these turns as persisted working context, not as live state: before any change, re-check the live Herdr workspace, the runtime and Git (herdr_inspect, pane.read, git status and log), because work may have moved on since they were written.";

/// The search instruction when identity named exactly one chain.
const UNIQUE_INSTRUCTION: &str = "Stable identity names exactly this chain: resume it with continuity.resume {\"continuity_id\": …}, then re-check live Herdr, runtime and Git state before any change.";
/// The search instruction when the user has to choose.
const CONFIRM_INSTRUCTION: &str = "Show the user these candidates (title, workspace, update time, excerpts) and ask which chain to continue; do not pick the latest or the most similar one yourself. Then call continuity.resume with the chosen continuity_id.";
/// The search instruction when nothing matched.
const NONE_INSTRUCTION: &str = "No journaled chain matches. Do not invent a continuity_id: ask the user for the old conversation's URL or for words it contained, or start from the live Herdr state.";

/// The journal service: the store behind a mutex that only blocking-pool closures lock.
#[derive(Debug)]
pub struct Journal {
    /// The journal's connection to `state.db`.
    store: Mutex<JournalStore>,
}

impl Journal {
    /// Opens the journal tables in `db_path` (blocking: call it off the async workers).
    pub fn open(db_path: &std::path::Path) -> Result<Self, JournalError> {
        Ok(Self { store: Mutex::new(JournalStore::open(db_path)?) })
    }

    /// Runs `work` on the store on tokio's blocking pool.
    pub async fn with_store<T: Send + 'static>(
        self: &Arc<Self>,
        work: impl FnOnce(&mut JournalStore) -> Result<T, JournalError> + Send + 'static,
    ) -> Result<T, JournalError> {
        let journal = Arc::clone(self);
        off_worker(move || {
            // A panic in another call poisons the lock but leaves SQLite consistent (every
            // write is one transaction), so the store stays usable.
            let mut store = journal.store.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            work(&mut store)
        })
        .await
    }
}

/// Opens the journal; `None` (logged) when it cannot, so its methods answer `not_ready`.
pub async fn start(db_path: PathBuf, log: Arc<RuntimeLog>) -> Option<Arc<Journal>> {
    match off_worker(move || Journal::open(&db_path)).await {
        Ok(journal) => Some(Arc::new(journal)),
        Err(e) => {
            log.line(format_args!("continuity journal disabled: {e}"));
            None
        }
    }
}

/// A conversation URL of a chat the extension serves: ChatGPT's `https://chatgpt.com/c/<id>`
/// or `https://chatgpt.com/g/g-p-<32 hex>[-slug]/c/<id>` (also `www.chatgpt.com`), z.ai's
/// `https://chat.z.ai/c/<id>`, DeepSeek's `https://chat.deepseek.com/a/chat/s/<id>`; a query
/// or fragment is ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationUrl {
    /// The conversation id.
    pub conversation_id: String,
    /// The Project id (`g-p-<32 hex>`, the slug dropped), when the chat is in one.
    pub project_id: Option<String>,
    /// The site.
    pub provider: HandoffProvider,
}

impl ConversationUrl {
    /// Reads `url`; the error says which shapes are accepted.
    pub fn parse(url: &str) -> Result<Self, String> {
        let refuse = || {
            format!(
                "`{}` is not a conversation URL of ChatGPT, z.ai or DeepSeek; send https://chatgpt.com/c/<id>, https://chatgpt.com/g/g-p-<32 hex>/c/<id>, https://chat.z.ai/c/<id> or https://chat.deepseek.com/a/chat/s/<id>",
                url.chars().take(120).collect::<String>()
            )
        };
        let (provider, rest) = [
            ("https://chatgpt.com/", HandoffProvider::Chatgpt),
            ("https://www.chatgpt.com/", HandoffProvider::Chatgpt),
            ("https://chat.z.ai/", HandoffProvider::Zai),
            ("https://chat.deepseek.com/", HandoffProvider::Deepseek),
        ]
        .into_iter()
        .find_map(|(prefix, provider)| url.strip_prefix(prefix).map(|rest| (provider, rest)))
        .ok_or_else(refuse)?;
        let path = rest.split(['?', '#']).next().unwrap_or("").trim_end_matches('/');
        let segments: Vec<&str> = path.split('/').collect();
        let is_id = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        let plain = |id: &str| Ok(Self { conversation_id: id.to_owned(), project_id: None, provider });
        match (provider, segments.as_slice()) {
            (HandoffProvider::Chatgpt | HandoffProvider::Zai, ["c", id]) if is_id(id) => plain(id),
            (HandoffProvider::Deepseek, ["a", "chat", "s", id]) if is_id(id) => plain(id),
            (HandoffProvider::Chatgpt, ["g", project, "c", id]) if is_id(id) => {
                // Split by bytes only through `split_at_checked`: a non-ASCII character at
                // byte 32 is refused, never a panic (the segment is untrusted text).
                let (hex, slug) = project.strip_prefix("g-p-").and_then(|p| p.split_at_checked(32)).ok_or_else(refuse)?;
                if !hex.bytes().all(|b| b.is_ascii_hexdigit()) || !(slug.is_empty() || slug.starts_with('-')) {
                    return Err(refuse());
                }
                Ok(Self { conversation_id: (*id).to_owned(), project_id: Some(format!("g-p-{hex}")), provider })
            }
            _ => Err(refuse()),
        }
    }
}

/// A validated `continuity.search`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// The stable identities (explicit and from the URL, merged).
    pub identity: Identity,
    /// The FTS5 query of the text `query`, if one was given.
    pub fts: Option<String>,
    /// 1..=10 candidates.
    pub limit: u64,
    /// True when `identity.conversation_id` came from `conversation_url` alone: a URL of a
    /// chat the journal never saw then narrows by its Project only, as `continuity.resume`
    /// does with it (C5).
    pub conversation_from_url: bool,
}

fn candidates(store: &JournalStore, chains: &[ChainRow], reasons: &[MatchReason]) -> Result<Vec<ChainCandidate>, JournalError> {
    chains.iter().map(|chain| store.candidate(chain, reasons.to_vec())).collect()
}

/// `continuity.search`: every chain matching the identity and the text up to the bound;
/// `unique_exact` only when identity alone names exactly the one chain found (C4).
pub fn search(store: &JournalStore, query: &SearchQuery) -> Result<MethodResult, JournalError> {
    let mut identity = query.identity.clone();
    if query.conversation_from_url {
        if let Some(conversation) = &identity.conversation_id {
            if store.chain_of_conversation(conversation)?.is_none() {
                identity.conversation_id = None;
            }
        }
    }
    let mut chains = match (&query.fts, identity.is_empty()) {
        (Some(fts), _) => store.chains_matching(fts, &identity, query.limit + 1)?,
        (None, false) => store.chains_by_identity(&identity, query.limit + 1)?,
        // A URL of an unjournaled chat outside any Project: nothing to search by.
        (None, true) => Vec::new(),
    };
    let more = chains.len() as u64 > query.limit;
    chains.truncate(query.limit as usize);
    let by_identity_alone = if identity.is_empty() { Vec::new() } else { store.chains_by_identity(&identity, 2)? };
    let resolution = match chains.as_slice() {
        [] => Resolution::None,
        [only] if by_identity_alone.len() == 1 && by_identity_alone[0].continuity_id == only.continuity_id => Resolution::UniqueExact,
        _ => Resolution::ConfirmationRequired,
    };
    let mut reasons = identity.reasons();
    if query.fts.is_some() {
        reasons.push(MatchReason::Query);
    }
    let instruction = match resolution {
        Resolution::None => NONE_INSTRUCTION,
        Resolution::UniqueExact => UNIQUE_INSTRUCTION,
        Resolution::ConfirmationRequired => CONFIRM_INSTRUCTION,
    };
    Ok(MethodResult::ContinuitySearch {
        resolution,
        auto_resume_safe: resolution == Resolution::UniqueExact,
        confirmation_required: resolution == Resolution::ConfirmationRequired,
        candidates: candidates(store, &chains, &reasons)?,
        more,
        instruction: instruction.to_owned(),
    })
}

/// What `continuity.resume` resumes from (exactly one, C5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResumeAnchor {
    /// A chain id.
    Chain(String),
    /// A conversation URL.
    Url(ConversationUrl),
}

/// How many candidates an ambiguous packet id lists.
const MAX_AMBIGUOUS_CANDIDATES: usize = 8;

/// The legacy links a resume lists.
const MAX_LEGACY_LINKS: usize = 32;

/// The C6 message for a conversation the journal never saw.
fn never_journaled(conversation_id: &str) -> JournalError {
    JournalError::NotFound(format!(
        "conversation {conversation_id} was never journaled: herdr-continuity records only the finalized turns of chats bound to a Herdr workspace or opted into the journal from the HUD, so a private chat it never saw cannot be fetched from its URL. Ask the user to paste what matters from it, or search by project_id / workspace_id (continuity.search)"
    ))
}

/// The chain a resume anchor names: the chain itself, the URL's conversation's chain, or
/// the URL's Project's only chain; a Project with several is ambiguous (C5).
fn anchored_chain(store: &JournalStore, anchor: &ResumeAnchor) -> Result<ChainRow, JournalError> {
    match anchor {
        // A legacy packet's id names the chain it was restored as (X11) — only when it names
        // exactly one chain: a packet id shared by restores from several chains, or equal
        // to a chain id, is ambiguous and lists its candidates.
        ResumeAnchor::Chain(id) => {
            let chain = store.chain(id)?;
            let restores = store.legacy_restores_of(id, MAX_AMBIGUOUS_CANDIDATES + 1)?;
            match (chain, restores.as_slice()) {
                (Some(chain), []) => Ok(chain),
                (None, [only]) => store.chain(&only.continuity_id)?.ok_or_else(|| JournalError::NotFound(format!("the chain restored from packet {id} is gone"))),
                (None, []) => Err(JournalError::NotFound(format!(
                    "there is no continuity chain {id} in this companion's journal; do not guess ids — use continuity.search with the conversation's URL, project_id or workspace_id"
                ))),
                (chain, restores) => {
                    let mut candidates: Vec<String> = chain.map(|c| format!("{} (a chain with that id)", c.continuity_id)).into_iter().collect();
                    candidates.extend(restores.iter().take(MAX_AMBIGUOUS_CANDIDATES).map(|r| {
                        format!(
                            "{} (restored from message {} of chain {})",
                            r.continuity_id,
                            handoff::token(&r.source_message_id),
                            r.source_continuity_id
                        )
                    }));
                    let more = if restores.len() > MAX_AMBIGUOUS_CANDIDATES { ", and more" } else { "" };
                    Err(JournalError::Ambiguous(format!(
                        "{id} names more than one chain: {}{more}. Packet ids are not unique and any turn can carry a packet; ask the user which one they mean and resume it by its chain id",
                        candidates.join("; ")
                    )))
                }
            }
        }
        ResumeAnchor::Url(url) => {
            if let Some(chain) = store.chain_of_conversation(&url.conversation_id)? {
                return Ok(chain);
            }
            let Some(project) = &url.project_id else { return Err(never_journaled(&url.conversation_id)) };
            let identity = Identity { project_id: Some(project.clone()), ..Identity::default() };
            let mut chains = store.chains_by_identity(&identity, 2)?;
            match chains.len() {
                0 => Err(never_journaled(&url.conversation_id)),
                1 => Ok(chains.remove(0)),
                _ => Err(JournalError::Ambiguous(format!(
                    "conversation {} was never journaled and project {project} has several continuity chains; call continuity.search with {{\"project_id\":\"{project}\"}} and let the user choose",
                    url.conversation_id
                ))),
            }
        }
    }
}

/// `continuity.resume`: one page of the chain's turns — the newest, or those older than
/// the `before` cursor of an earlier page — and the instruction to re-check live state.
pub fn resume(store: &JournalStore, anchor: &ResumeAnchor, before: Option<ResumeCursor>) -> Result<MethodResult, JournalError> {
    let chain = anchored_chain(store, anchor)?;
    if let Some(cursor) = before.filter(|cursor| !cursor.pages(&chain.continuity_id)) {
        return Err(JournalError::Mismatch(format!(
            "before (turn {}) is a cursor of another chain, not of {}; pass the next_cursor that came with this chain's last page (or leave before out for its newest turns)",
            cursor.turn, chain.continuity_id
        )));
    }
    let page = store.turns_page(&chain.continuity_id, before.map(|cursor| cursor.turn))?;
    let (turns, more_turns) = (page.turns, page.older_than.is_some());
    let mut legacy_packets = store.legacy_packets_of(&chain.continuity_id, MAX_LEGACY_LINKS + 1)?;
    let legacy_packets_truncated = legacy_packets.len() > MAX_LEGACY_LINKS;
    legacy_packets.truncate(MAX_LEGACY_LINKS);
    Ok(MethodResult::ContinuityResumed {
        next_cursor: page.older_than.map(|turn| continuity_protocol::journal::resume_cursor(turn, &chain.continuity_id)),
        workspace_ids: store.workspaces_of(&chain.continuity_id)?,
        legacy_packets,
        legacy_packets_truncated,
        continuity_id: chain.continuity_id,
        title: chain.title,
        project_id: chain.project_id,
        turns,
        more_turns,
        updated_at: chain.updated_at.max(0) as u64,
        instruction: RESUME_INSTRUCTION.to_owned(),
    })
}

/// `continuity.resolve`: the conversation's chain, or the C6 message.
pub fn resolve(store: &JournalStore, conversation_id: &str) -> Result<MethodResult, JournalError> {
    let chain = store.chain_of_conversation(conversation_id)?.ok_or_else(|| never_journaled(conversation_id))?;
    Ok(MethodResult::ContinuityResolved {
        continuity_id: chain.continuity_id,
        conversation_id: conversation_id.to_owned(),
        project_id: chain.project_id,
        title: chain.title,
        updated_at: chain.updated_at.max(0) as u64,
    })
}

/// `continuity.list`: up to `limit` chains, most recently updated first.
pub fn list(store: &JournalStore, limit: u64) -> Result<MethodResult, JournalError> {
    let limit = limit.clamp(1, MAX_CANDIDATES);
    let mut chains = store.recent_chains(limit + 1)?;
    let more = chains.len() as u64 > limit;
    chains.truncate(limit as usize);
    Ok(MethodResult::ContinuityList { candidates: candidates(store, &chains, &[])?, more })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod legacy_tests;
