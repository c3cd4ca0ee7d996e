//! The Continuity Journal's writer and the context pressure of each conversation, in the
//! worker (SPEC C1, C3, R1).
//!
//! Journal: when a reply of a bound conversation — or of a conversation the user opted into
//! the journal before binding it (the HUD's "Journal this chat", [`JournalBook::opted`]) —
//! ends, the page reports the turn
//! ([`ContinuityInput::TurnEnded`]: the last user turn and the reply, each with its message
//! id and its text, ≤ 64 KiB). Each of the two with a known id and a text becomes an entry
//! of the *outbox*, which is part of the snapshot, so a worker restart loses none; the
//! outbox is written to the runtime's journal with `continuity.append`, oldest first, one
//! call at a time (no `continuity_id`: the runtime finds the conversation's chain, or the
//! Project's only chain for a new chat of the Project, C3). An entry leaves the outbox only
//! when the runtime answered it — `inserted` true or false, the append is idempotent on the
//! turn, so a write whose answer was lost is simply written again — or refused it for good
//! (`continuity_conflict`, `bad_request`: dropped, counted, and the HUD says so). Any other
//! failure keeps it, and it is written again on the next link-up, the next ended turn or
//! [`JOURNAL_RETRY_MS`] later.
//!
//! Context pressure: the page reports its visible thread ([`ContinuityInput::ThreadFacts`])
//! when the number of turns changes and when a reply ends; the conversation's persisted,
//! never-decreasing message floor and [`crate::context_pressure::PressureConfig`] turn it
//! into the HUD's level (R1).
//!
//! Opt-in: a conversation opted in is journaled from that moment (earlier turns are not
//! read back), without a workspace; when it is bound later its turns go on into the same
//! chain (the runtime keeps a conversation in its chain for good, C3), so nothing journaled
//! before the binding is lost. Opting out stops journaling an unbound chat; what was
//! written stays. A bound chat is journaled whatever the opt-in says.
//!
//! Invariants (tests in `tests/it/continuity_journal.rs`, a property test among them):
//! - An ended turn of a bound or opted-in conversation is written, or kept in the outbox
//!   until it is; an ended turn of any other conversation is never written:
//!   an entry is removed only by an answer to its own append or by a final refusal.
//! - The outbox keeps the page's order and holds a turn once; at most one append is in
//!   flight; a turn already answered is not written again.
//! - The outbox is bounded ([`MAX_OUTBOX_ENTRIES`], [`MAX_OUTBOX_BYTES`]); a turn that does
//!   not fit is not taken, and the HUD says that the journal is behind (never silently).
//! - A conversation's message floor never decreases.

use super::*;
use crate::context_pressure::{Pressure, PressureConfig, VisibleThread};
use crate::json_read::{ReadJson, WriteJson};

/// Most turns the outbox keeps.
pub const MAX_OUTBOX_ENTRIES: usize = 256;
/// Most bytes of turn text the outbox keeps (the snapshot lives in `chrome.storage.local`).
pub const MAX_OUTBOX_BYTES: usize = 2 * 1024 * 1024;
/// Largest turn text written, in bytes (the runtime's cap, 64 KiB).
pub const MAX_JOURNAL_TEXT_BYTES: usize = continuity_protocol::journal::MAX_TURN_TEXT_BYTES;
/// How long after a failed append the outbox is tried again.
pub const JOURNAL_RETRY_MS: Millis = 30_000;
/// Answered turns remembered, so a reply reported again is not written again.
const RECENT_KEPT: usize = 64;
/// Conversations whose chain id and message floor are kept.
const CONVERSATIONS_KEPT: usize = 128;

/// One turn waiting to be written (`continuity.append`'s params).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct JournalEntry {
    /// The site's conversation id.
    pub conversation_id: String,
    /// The turn's message id on the page.
    pub message_id: String,
    /// `user` or `assistant`.
    pub role: String,
    /// The turn's text (≤ [`MAX_JOURNAL_TEXT_BYTES`]).
    pub text: String,
    /// When the reply was seen ending.
    pub observed_at: Millis,
    /// The ChatGPT Project, when the chat is in one.
    pub project_id: Option<String>,
    /// The workspace the chat is bound to.
    pub workspace_id: Option<String>,
    /// The conversation's URL.
    pub conversation_url: String,
}

/// The journal writer's persisted part.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct JournalBook {
    /// Turns not yet answered, oldest first.
    #[serde(default)]
    pub(crate) outbox: Vec<JournalEntry>,
    /// `<conversation>/<message>` of the newest answered turns.
    #[serde(default)]
    pub(crate) recent: Vec<String>,
    /// Turns the runtime refused for good.
    #[serde(default)]
    pub(crate) dropped: u32,
    /// Turns that found the outbox full.
    #[serde(default)]
    pub(crate) missed: u32,
    /// The chain of each conversation written to (conversation id → `continuity_id`).
    #[serde(default)]
    pub(crate) chains: VecMap<String, String>,
    /// Each conversation's message floor (R1; never decreases).
    #[serde(default)]
    pub(crate) floors: VecMap<String, u32>,
    /// Conversations (`<site>:<id>`) the user opted into the journal before binding them,
    /// oldest first (at most [`MAX_OPTED`]).
    #[serde(default)]
    pub(crate) opted: Vec<String>,
}

/// The HUD's journal opt-in on `tab`'s conversation ([`ContinuityInput::JournalOpt`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct JournalOpt {
    /// The tab.
    pub tab: TabId,
    /// "Journal this chat" (true) or "Stop journaling this chat".
    pub on: bool,
}

/// Most conversations kept opted in; opting in one more forgets the oldest opt-in (the HUD
/// shows "Journal this chat" on it again).
pub const MAX_OPTED: usize = 256;

/// The writer's state: the book and what is not persisted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct JournalFlow {
    pub(super) book: JournalBook,
    in_flight: bool,
    retry_at: Option<Millis>,
    /// The code of the last failed append (cleared by the next answer).
    problem: Option<ErrorCode>,
    /// The pressure each tab's conversation shows (conversation key, estimate).
    pressure: VecMap<TabId, (String, Pressure)>,
}

impl JournalFlow {
    pub(super) fn with_book(book: JournalBook) -> Self {
        Self { book, ..Self::default() }
    }

    pub(super) fn deadline(&self) -> Option<Millis> {
        self.retry_at
    }
}

fn key_of(entry: &JournalEntry) -> String {
    crate::text::concat(&[&entry.conversation_id, "/", &entry.message_id])
}

/// `text` cut to at most [`MAX_JOURNAL_TEXT_BYTES`] at a character boundary (the page cuts
/// longer turns itself; this only keeps a page that did not within the runtime's cap).
fn journal_text(mut text: String) -> String {
    if text.len() > MAX_JOURNAL_TEXT_BYTES {
        let mut end = MAX_JOURNAL_TEXT_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// Keeps a small map at `max` entries by evicting other keys than `keep` (the one just
/// written): the map is ordered by key, not by use, so which other conversation goes is
/// arbitrary — only one of more than `max` conversations loses its figure.
fn bound<V>(map: &mut VecMap<String, V>, max: usize, keep: &str) {
    while map.len() > max {
        let Some(other) = map.keys().find(|k| k.as_str() != keep).cloned() else { return };
        map.remove(&other);
    }
}

impl Continuity {
    /// Whether `tab` shows a conversation opted into the journal (bound or not).
    pub(super) fn journal_opted(&self, tab: TabId) -> bool {
        self.pages.get(&tab).and_then(queue::conversation_key).is_some_and(|key| self.journal.book.opted.contains(&key))
    }

    /// HUD: "Journal this chat" (`on`) or "Stop journaling this chat" on `tab`'s conversation.
    pub(super) fn journal_opt(&mut self, tab: TabId, on: bool) {
        let Some(key) = self.pages.get(&tab).and_then(queue::conversation_key) else { return };
        let book = &mut self.journal.book;
        let had = book.opted.contains(&key);
        if on == had {
            return;
        }
        let mut forgot = None;
        if on {
            book.opted.push(key);
            let excess = book.opted.len().saturating_sub(MAX_OPTED);
            forgot = book.opted.drain(..excess).next_back();
        } else {
            book.opted.retain(|k| *k != key);
        }
        self.persist();
        // Forgetting the oldest opt-in is said, naming it: that chat is no longer journaled.
        let say = match (on, forgot) {
            (true, Some(oldest)) => Say::new("journalOptedInForgot", vec![oldest, MAX_OPTED.to_string()]),
            (true, None) => Say::new("journalOptedIn", vec![]),
            (false, _) => Say::new("journalOptedOut", vec![]),
        };
        self.notice(tab, say, NoticeTone::Info);
        self.emit(ContinuityOutput::ViewsChanged);
    }

    /// A reply of `tab` ended: its user turn and the reply join the outbox when the chat is
    /// a bound or opted-in conversation and each has an id and a text.
    pub(super) fn journal_turn_ended(&mut self, now: Millis, tab: TabId, turns: [(Option<String>, &str, &str); 2]) {
        let opted = self.journal_opted(tab);
        let Some(report) = self.pages.get(&tab) else { return };
        let page = classify_url(&report.url);
        let Some(conversation) = page.conversation() else { return };
        let binding = page.scope().and_then(|s| self.bindings.binding_for(&s));
        if binding.is_none() && !opted {
            return;
        }
        let project_id = match &page {
            PageKind::ProjectChat { project_id, .. } => Some(project_id.clone()),
            _ => None,
        };
        let workspace_id = binding.map(|b| b.workspace_id.clone());
        let url = report.url.clone();
        let book = &mut self.journal.book;
        let mut changed = false;
        for (message_id, role, text) in turns {
            let (Some(message_id), false) = (message_id, text.trim().is_empty()) else { continue };
            let entry = JournalEntry {
                conversation_id: conversation.conversation_id.clone(),
                message_id,
                role: role.to_owned(),
                text: journal_text(text.to_owned()),
                observed_at: now,
                project_id: project_id.clone(),
                workspace_id: workspace_id.clone(),
                conversation_url: url.clone(),
            };
            let key = key_of(&entry);
            if book.recent.contains(&key) || book.outbox.iter().any(|e| key_of(e) == key) {
                continue;
            }
            let bytes: usize = book.outbox.iter().map(|e| e.text.len()).sum();
            if book.outbox.len() >= MAX_OUTBOX_ENTRIES || bytes + entry.text.len() > MAX_OUTBOX_BYTES {
                book.missed += 1;
            } else {
                book.outbox.push(entry);
            }
            changed = true;
        }
        if changed {
            self.persist();
            self.emit(ContinuityOutput::ViewsChanged);
        }
        self.journal_pump();
    }

    /// Writes the outbox's oldest turn unless one is on its way or the companion is away.
    pub(super) fn journal_pump(&mut self) {
        if self.journal.in_flight || !self.link_up {
            return;
        }
        let Some(entry) = self.journal.book.outbox.first().cloned() else { return };
        self.journal.in_flight = true;
        self.journal.retry_at = None;
        self.call(Purpose::Journal { key: key_of(&entry) }, RuntimeCall::JournalAppend(entry));
    }

    /// The retry timer fired.
    pub(super) fn journal_tick(&mut self, now: Millis) {
        if self.journal.retry_at.is_some_and(|at| at <= now) {
            self.journal.retry_at = None;
            self.journal_pump();
        }
    }

    /// The runtime answered the append of `key`.
    pub(super) fn journal_answered(&mut self, now: Millis, key: String, result: Result<RuntimeAnswer, CallError>) {
        self.journal.in_flight = false;
        let flow = &mut self.journal;
        let done = match result {
            Ok(RuntimeAnswer::Appended { continuity_id }) => {
                if let Some(entry) = flow.book.outbox.iter().find(|e| key_of(e) == key) {
                    let conversation = entry.conversation_id.clone();
                    flow.book.chains.insert(conversation.clone(), continuity_id);
                    bound(&mut flow.book.chains, CONVERSATIONS_KEPT, &conversation);
                }
                flow.problem = None;
                true
            }
            Err(error) if matches!(error.code, ErrorCode::ContinuityConflict | ErrorCode::BadRequest) => {
                flow.book.dropped += 1;
                true
            }
            other => {
                flow.problem = Some(other.err().map_or(ErrorCode::BadAnswer, |e| e.code));
                flow.retry_at = Some(now + JOURNAL_RETRY_MS);
                false
            }
        };
        if done {
            // Answered for good: a reply reported again does not write it again.
            flow.book.outbox.retain(|e| key_of(e) != key);
            flow.book.recent.push(key);
            let excess = flow.book.recent.len().saturating_sub(RECENT_KEPT);
            flow.book.recent.drain(..excess);
            self.persist();
            self.journal_pump();
        }
        self.emit(ContinuityOutput::ViewsChanged);
    }

    /// The page of `tab` reported its visible thread: the conversation's pressure (R1).
    pub(super) fn thread_facts(&mut self, tab: TabId, thread: VisibleThread) {
        let Some(conversation) = self.pages.get(&tab).and_then(queue::conversation_key) else { return };
        let flow = &mut self.journal;
        let floor = flow.book.floors.entry(conversation.clone()).or_default();
        let before = *floor;
        let estimate = PressureConfig::default().estimate(&thread, floor);
        let raised = *floor != before;
        match estimate {
            Some(pressure) => flow.pressure.insert(tab, (conversation.clone(), pressure)),
            None => flow.pressure.remove(&tab),
        };
        if raised {
            bound(&mut flow.book.floors, CONVERSATIONS_KEPT, &conversation);
            self.persist();
        }
        self.emit(ContinuityOutput::ViewsChanged);
    }

    /// The tab's page is gone: its pressure is no longer shown.
    pub(super) fn journal_page_gone(&mut self, tab: TabId) {
        self.journal.pressure.remove(&tab);
    }

    /// The tabs whose conversation's pressure is at `level` or above.
    pub(super) fn journal_tabs_at(&self, level: crate::context_pressure::PressureLevel) -> Vec<TabId> {
        let mut tabs = Vec::new();
        for (tab, (_, pressure)) in self.journal.pressure.iter() {
            if pressure.level >= level {
                tabs.push(*tab);
            }
        }
        tabs
    }

    /// Whether ended turns of `conversation_id` wait in the outbox.
    pub(super) fn journal_behind(&self, conversation_id: &str) -> bool {
        self.journal.book.outbox.iter().any(|e| e.conversation_id == conversation_id)
    }

    /// The HUD's pressure of `tab`: only for the conversation the page shows now.
    pub(super) fn pressure_line(&self, tab: TabId) -> Option<Pressure> {
        let (conversation, pressure) = self.journal.pressure.get(&tab)?;
        let current = self.pages.get(&tab).and_then(queue::conversation_key)?;
        (current == *conversation).then_some(*pressure)
    }

    /// The HUD's journal line of `tab`: on a bound conversation, what is recorded, waiting
    /// or lost.
    pub(super) fn journal_line(&self, tab: TabId) -> Option<Say> {
        let report = self.pages.get(&tab)?;
        let page = classify_url(&report.url);
        let conversation = page.conversation()?;
        if page.scope().and_then(|s| self.bindings.binding_for(&s)).is_none() && !self.journal_opted(tab) {
            return None;
        }
        let book = &self.journal.book;
        let waiting = book.outbox.len();
        // Turns on their way while the runtime answers are not "waiting": the line changes
        // only when something is wrong (each change re-renders the HUD in the page).
        let why = match self.journal.problem {
            Some(code) => Some(code.as_str()),
            None => (!self.link_up).then_some("offline"),
        };
        Some(if book.missed > 0 {
            Say::new("journalMissed", vec![book.missed.to_string(), waiting.to_string()])
        } else if let (true, Some(why)) = (waiting > 0, why) {
            Say::new("journalWaiting", vec![waiting.to_string(), why.to_owned()])
        } else if book.dropped > 0 {
            Say::new("journalDropped", vec![book.dropped.to_string()])
        } else {
            match book.chains.get(&conversation.conversation_id) {
                Some(chain) => Say::new("journalRecorded", vec![chain.clone()]),
                None => Say::new("journalNothingYet", vec![]),
            }
        })
    }
}
