//! What the runtime learns of the bound chats, so a `herdr_prompt` that names no
//! `browser_session_ref` can be attributed on evidence (docs/PROTOCOL.md `chats.report`):
//! for each bound chat with a tab open, its ref and whether a page of it generates a reply
//! right now (the planner mid-turn, e.g. calling a Herdr tool).
//!
//! Invariants: a report is the whole list (the runtime replaces this extension's previous
//! one); it is sent when the list changes, on every link-up, and again every
//! [`CHATS_REPORT_REFRESH_MS`] while a chat generates (the runtime trusts a generating fact
//! for 30 s only); nothing is sent while the link is down, nor to a runtime that answered
//! `unknown_method` (an older one) until the next link-up.

use super::*;

/// How often a report with a generating chat is sent again (the runtime's freshness bound
/// is 30 s: two refreshes may be lost before the fact goes stale).
pub const CHATS_REPORT_REFRESH_MS: Millis = 10_000;

/// The report flow's state (not persisted: a restarted worker reports again).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct ChatsFlow {
    /// The last list sent, and when; `None` after a link-up (sent again).
    sent: Option<(Vec<ChatFact>, Millis)>,
    /// The runtime does not know `chats.report`.
    unsupported: bool,
}

impl Continuity {
    /// The bound chats with a tab open, by ref (a Project's conversations share its ref).
    fn chat_facts(&self) -> Vec<ChatFact> {
        let mut facts: Vec<ChatFact> = Vec::new();
        for binding in self.bindings.list() {
            let session_ref = browser_session_ref(&binding.scope);
            let mut open = false;
            let mut generating = false;
            for (tab, page) in self.pages.iter() {
                if self.scope_of_tab(*tab).as_ref() == Some(&binding.scope) {
                    open = true;
                    generating |= page.generating;
                }
            }
            // Kept in ref order, one fact per ref (the first binding's): a sorted insert.
            if open {
                if let Err(at) = facts.binary_search_by(|f| f.session_ref.cmp(&session_ref)) {
                    facts.insert(at, ChatFact { session_ref, generating });
                }
            }
        }
        facts
    }

    /// Sends `chats.report` when the list changed or a generating fact needs refreshing.
    pub(super) fn chats_report(&mut self, now: Millis) {
        if !self.link_up || self.chats.unsupported {
            return;
        }
        let facts = self.chat_facts();
        let due = match &self.chats.sent {
            None => true,
            Some((sent, at)) => *sent != facts || (facts.iter().any(|f| f.generating) && now >= at.saturating_add(CHATS_REPORT_REFRESH_MS)),
        };
        if !due {
            return;
        }
        self.chats.sent = Some((facts.clone(), now));
        let reporter = self.ledger.epoch().to_owned();
        self.call(Purpose::ChatsReport, RuntimeCall::ChatsReport { reporter, chats: facts });
    }

    /// When a generating fact must be sent again.
    pub(super) fn chats_deadline(&self) -> Option<Millis> {
        if !self.link_up || self.chats.unsupported {
            return None;
        }
        let (sent, at) = self.chats.sent.as_ref()?;
        sent.iter().any(|f| f.generating).then(|| at.saturating_add(CHATS_REPORT_REFRESH_MS))
    }

    /// A link-up: the next report goes out whole (the runtime may have restarted).
    pub(super) fn chats_link_up(&mut self) {
        self.chats = ChatsFlow::default();
    }

    /// The runtime's answer: an older runtime without the method is not asked again.
    pub(super) fn chats_answered(&mut self, result: &Result<RuntimeAnswer, CallError>) {
        match result {
            Err(error) if error.code == ErrorCode::UnknownMethod => self.chats.unsupported = true,
            // Lost or refused: sent again on the next change or refresh.
            Err(_) => self.chats.sent = None,
            Ok(_) => {}
        }
    }
}
