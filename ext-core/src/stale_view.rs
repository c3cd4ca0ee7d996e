//! The stale-view probe (SPEC S1, S2, S5): is what the ChatGPT page shows what the server
//! has? The page adapter reads the DOM's last assistant message and, when asked, the
//! same-origin conversation snapshot (`current_node` walked to its message); this module
//! compares the two and names the situation. What to do about it is the recovery planner's
//! call.
//!
//! Rules ("the page did not move" never means "the server did not execute", S1):
//! - The snapshot could not be read, was refused (403 challenge, 429), timed out or has an
//!   odd shape → [`ViewState::Unknown`]. So is a situation that would need a guess from
//!   time without a server update time (S5).
//! - A user turn shown after the last assistant message (the page waits for a reply):
//!   the server's thread still ends at that same, finished assistant message →
//!   [`ViewState::RequestNotAccepted`]; the server has a newer assistant message →
//!   finished: [`ViewState::ServerAhead`], in progress: [`ViewState::Synced`] while it
//!   updates, [`ViewState::ServerStalled`] when it stopped updating; the server ends at a
//!   user message → synced while recent, stalled when not.
//! - No user turn waiting: the server's current node is the DOM's last assistant message,
//!   finished, not clearly longer, and the DOM does not show it streaming →
//!   [`ViewState::Synced`]; finished and newer or clearly longer, or the DOM still shows it
//!   streaming → [`ViewState::ServerAhead`] (S3); in progress → synced while it updates,
//!   stalled when not; a server user message the DOM does not show → server ahead.
//!
//! - Lengths are of normalised text on both sides (the page adapter's `plain-text.js`:
//!   non-whitespace characters, the server's markdown syntax removed), never the server's
//!   markdown against the page's rendering, so a finished reply with links, lists or
//!   tables is not "clearly longer" on the server.
//! - A reasoning / thinking indicator on the page ([`DomView::reasoning`]) is progress:
//!   an unfinished server turn that does not update is synced for up to
//!   [`REASONING_STALL_MS`], not stalled after [`SERVER_STALL_MS`].
//!
//! Invariant (property test in `tests/it/stale_view.rs`): an unreadable snapshot is always
//! `Unknown`, and `Synced` is only ever said when the server's node is the DOM's or is
//! still updating.

use serde::Serialize;

use crate::Millis;

/// How long the server may go without updating an unfinished turn (REFERENCE §2: server
/// stall 60 s).
pub const SERVER_STALL_MS: Millis = 60_000;
/// How long a server turn may go without updating while the page shows a reasoning
/// indicator (long "Pro thinking" phases run many minutes) before it counts as stalled.
pub const REASONING_STALL_MS: Millis = 30 * 60_000;
/// A server message longer than the DOM's by more than this many characters, and by more
/// than [`CLEARLY_LONGER_PERCENT`], is "clearly longer".
pub const CLEARLY_LONGER_CHARS: u32 = 16;
/// See [`CLEARLY_LONGER_CHARS`].
pub const CLEARLY_LONGER_PERCENT: u32 = 5;

/// The DOM's last assistant message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DomMessage {
    /// Its message id, when the page shows one (streaming prose often has none).
    pub id: Option<String>,
    /// Characters of its visible text, normalised (not whitespace).
    pub text_len: u32,
    /// The page shows it streaming.
    pub streaming: bool,
}

/// What the page shows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DomView {
    /// The last assistant message, if any.
    pub last_assistant: Option<DomMessage>,
    /// A user turn is shown after it (waiting for a reply).
    pub user_waiting: bool,
    /// The page shows a reasoning / thinking indicator for the reply (SITES-2026 §1.4:
    /// "Thinking", "Pro thinking" …): the model works, hidden reasoning does not update the
    /// server's node, so a quiet server is progress, not a stall (up to
    /// [`REASONING_STALL_MS`]).
    pub reasoning: bool,
}

/// Who wrote the server's current node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerRole {
    /// A user message.
    User,
    /// An assistant message.
    Assistant,
    /// Anything else (tool, system): the probe does not guess.
    Other,
}

/// The server's current node, as the page adapter extracted it from the snapshot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerNode {
    /// The message id.
    pub id: String,
    /// Its author.
    pub role: ServerRole,
    /// Characters of its text parts, normalised (markdown syntax and whitespace removed).
    pub text_len: u32,
    /// `end_turn` or status `finished_successfully`.
    pub finished: bool,
    /// `update_time` (seconds or milliseconds since the epoch, as the API gives it).
    pub update_time: Option<f64>,
}

/// The snapshot probe's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "snapshot", rename_all = "snake_case")]
pub enum Snapshot {
    /// Read and understood.
    Read(ServerNode),
    /// Not read: failed, refused, timed out or odd (`why` for the HUD).
    Unknown {
        /// What happened.
        why: String,
    },
}

/// What the comparison says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ViewState {
    /// The page shows what the server has (or the server is still working on it).
    Synced,
    /// The server has more than the page shows: a reload syncs the view (S3).
    ServerAhead,
    /// The server never got the user turn the page shows (S4).
    RequestNotAccepted,
    /// The server's turn is unfinished and not updating (S4).
    ServerStalled,
    /// No evidence: do nothing (S5).
    Unknown,
}

/// `update_time` in milliseconds (the API gives seconds, sometimes with a fraction).
pub fn update_time_ms(value: f64) -> Option<Millis> {
    if !value.is_finite() || value <= 0.0 {
        return None;
    }
    let ms = if value < 1e10 { value * 1_000.0 } else { value };
    // Truncation is intended: a millisecond either way does not matter.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Some(ms as Millis)
}

fn clearly_longer(server: u32, dom: u32) -> bool {
    server > dom.saturating_add(CLEARLY_LONGER_CHARS) && u64::from(server) * 100 > u64::from(dom) * u64::from(100 + CLEARLY_LONGER_PERCENT)
}

/// Compares the page with the snapshot at `now` (see the module doc).
pub fn classify(dom: &DomView, snapshot: &Snapshot, now: Millis) -> ViewState {
    let Snapshot::Read(node) = snapshot else { return ViewState::Unknown };
    if node.id.is_empty() {
        return ViewState::Unknown;
    }
    // Synced while the server keeps updating; stalled when it stopped; unknown without a
    // time (never guess, S5).
    // A reasoning indicator on the page is progress: the quiet is the model thinking.
    let stall_ms = if dom.reasoning { REASONING_STALL_MS } else { SERVER_STALL_MS };
    let while_updating = || match node.update_time.and_then(update_time_ms) {
        Some(at) if now.saturating_sub(at) <= stall_ms => ViewState::Synced,
        Some(_) => ViewState::ServerStalled,
        None => ViewState::Unknown,
    };
    let dom_id = dom.last_assistant.as_ref().and_then(|m| m.id.as_deref());
    let same_as_dom = dom_id == Some(node.id.as_str());
    match (node.role, dom.user_waiting) {
        (ServerRole::Other, _) => ViewState::Unknown,
        (ServerRole::Assistant, true) if same_as_dom && node.finished => ViewState::RequestNotAccepted,
        (ServerRole::Assistant, true) if node.finished => ViewState::ServerAhead,
        (ServerRole::Assistant, true) | (ServerRole::User, true) => while_updating(),
        (ServerRole::Assistant, false) if node.finished => {
            let Some(shown) = dom.last_assistant.as_ref() else { return ViewState::ServerAhead };
            if same_as_dom && !shown.streaming && !clearly_longer(node.text_len, shown.text_len) {
                ViewState::Synced
            } else {
                ViewState::ServerAhead
            }
        }
        (ServerRole::Assistant, false) => while_updating(),
        // The server's thread ends at a user message the page does not show waiting.
        (ServerRole::User, false) => ViewState::ServerAhead,
    }
}
