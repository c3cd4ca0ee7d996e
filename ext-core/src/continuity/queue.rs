//! The Queue in the continuity loop (SPEC Q1–Q8, Q10): the user's next turn first.
//!
//! The book ([`crate::queue::QueueBook`]) lives in `chrome.storage.local`; this file runs
//! the changes to it one at a time — each re-reads the stored record first
//! ([`ContinuityOutput::QueueRead`]), applies the change, writes it back
//! ([`ContinuityOutput::QueueWrite`]) — and sends a conversation's batch through the
//! [`DeliveryLedger`] when its page is idle: a reply streaming when the user queued has
//! ended, no delivery of the scope is active, the composer is empty of human text and the
//! layout is known. A queued batch goes before any wake or progress message of the scope
//! (the schedulers see the page occupied while it is in flight).
//!
//! Invariants:
//! - A failed read or an unreadable record never leads to a write (fail closed): the change
//!   is refused with the reason, and the composer keeps what the user typed until the add
//!   is durably written. The one way out is the user's Clear (the HUD asked first): an
//!   unreadable record (the storage read worked) is first kept aside under
//!   [`crate::queue::ASIDE_KEY`], and only once that write succeeded is an empty book
//!   written. When keeping it aside fails (storage quota, the set-aside list full), nothing
//!   is overwritten and the HUD names the error; the next Clear (its question says so)
//!   tries again and, if keeping it aside fails again, writes the empty book without a
//!   copy: the user confirmed deleting it, and the queue, Auto and Goal are not withheld for
//!   good. A stored JSON `null` holds no items: it is an empty book (said once in
//!   Activity).
//! - A readable book's items are cleared only by a Clear confirming the question about them
//!   (`queueClearConfirm`, or none from an older page); a Clear confirmed from a question
//!   about an unreadable record or a failed read is refused (the queue changed; ask again).
//! - While the book cannot be used ([`QueueTrouble`]), semantic Auto and Goal mode are
//!   withheld with its own reason, not with "your queued messages go first": a storage read
//!   or write that failed (`queue_storage_failed`: read again every [`QUEUE_RELOAD_MS`];
//!   Clear is refused until a read succeeds) or a record that is not a queue
//!   (`queue_unreadable`: the user's Clear keeps it aside, then empties).
//! - A batch's items are removed only after the ledger confirmed it (Q5); that removal is
//!   persisted in the snapshot until it is written, and items waiting for removal are never
//!   sent again.
//! - A batch that certainly did not land (not sent, lost) goes again on the next idle
//!   page; one that may have landed (abandoned) is not resent until the user clicks Queue
//!   with an empty composer (Q8).
//! - The queue calls no runtime method and changes no binding (Q10).

use super::*;
use crate::json_read::{ReadJson, WriteJson};
use crate::queue::{Batch, QueueBook, QueueRefusal};

/// A batch on its way into a page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct QueueSend {
    /// The conversation key (`<site>:<conversation id>`).
    pub conversation: String,
    /// The batch id.
    pub batch_id: String,
    /// The items it carries.
    pub item_ids: Vec<String>,
}

/// A handoff's move of a conversation's unsent items to its new conversation (Q9).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct QueueMove {
    /// The retired conversation's key.
    pub from: String,
    /// The new conversation's key.
    pub to: String,
}

/// What the queue keeps across worker restarts (in the snapshot).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct QueueDurable {
    /// Batches in flight, by delivery id.
    #[serde(default)]
    pub sending: VecMap<String, QueueSend>,
    /// Confirmed batches whose removal is not written yet.
    #[serde(default)]
    pub removals: Vec<QueueSend>,
    /// Cut-overs' moves not written yet: made again until they are; no batch of their
    /// `from` goes meanwhile (an older snapshot has none).
    #[serde(default)]
    pub moves: Vec<QueueMove>,
    /// Conversations whose last batch may or may not have landed: batch id. Not resent
    /// until the user asks (Q8).
    #[serde(default)]
    pub undelivered: VecMap<String, String>,
    /// Next item number (item ids are `q:<ledger token>`).
    #[serde(default)]
    pub next_item: u64,
    /// Why the last Clear's keep-aside of an unreadable record failed (at most
    /// [`ASIDE_FAILED_CHARS`]): the next Clear confirming [`CLEAR_ASIDE_FAILED`] tries again
    /// and, failing again, writes the empty book without a copy — across a worker restart
    /// too (review 37 L9; an older snapshot has none). Forgotten once a book is read or
    /// written.
    #[serde(default)]
    pub aside_failed: Option<String>,
}

/// One change to the stored book.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum QueueChange {
    /// Read it (worker start, before the first flush).
    Load,
    /// The user queued `text` from `tab`.
    Add { tab: TabId, conversation: String, item_id: String, text: String },
    /// A confirmed batch leaves.
    Remove { send: QueueSend },
    /// The user cleared the conversation's queue from `tab`, confirming the question `asked`.
    Clear { tab: TabId, conversation: String, asked: ClearAsked },
    /// A handoff's cut-over: the unsent items of `from` move to `to`, in order (Q9).
    Move { from: String, to: String },
}

/// The queue's working state (not persisted except [`QueueDurable`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct QueueFlow {
    /// The persisted part.
    pub(super) durable: QueueDurable,
    /// The book as last read or written; `None` before the first read.
    book: Option<QueueBook>,
    /// Why the book cannot be used now (the HUD says so; the refusal's notice said why).
    trouble: Option<QueueTrouble>,
    /// The running Clear's keep-aside of an unreadable record: being written, or written.
    aside: Aside,
    /// A stored `null` was read and said in Activity (once per worker).
    null_noted: bool,
    /// Changes waiting; the front one is running.
    changes: VecDeque<(u64, QueueChange)>,
    /// The running change's id and whether it is writing (`Some(book)`) or reading.
    running: Option<(u64, Option<QueueBook>)>,
    next_op: u64,
    /// When the book was last read because it was not known.
    last_load: Option<Millis>,
    /// No batch goes before this: the last one could not be saved before it was typed
    /// (`chrome.storage` failing), so the next try waits [`QUEUE_RELOAD_MS`] instead of
    /// writing again at once.
    not_before: Option<Millis>,
}

impl QueueFlow {
    /// The flow of a restored snapshot: nothing read yet.
    pub(super) fn with_durable(durable: QueueDurable) -> Self {
        Self { durable, ..Self::default() }
    }
}

/// Which clear question the user confirmed (the page names its `_locales` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ClearAsked {
    /// `queueClearConfirm` ("Clear the N queued messages?"), or no key (an older page): the
    /// one Clear that may delete a readable queue's messages.
    Messages,
    /// [`CLEAR_ASIDE_FAILED`]: a keep-aside failing again deletes the unreadable record.
    AsideFailed,
    /// Another question (the record is unreadable, the storage failed): a readable queue
    /// is not cleared by it (the user was not asked about its messages).
    Other,
}

/// Why the stored book cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum QueueTrouble {
    /// The storage read, or a write, failed: what is stored is unknown. Read again every
    /// [`QUEUE_RELOAD_MS`]; nothing (not even a Clear) is written until a read succeeds.
    StorageFailed,
    /// The storage was read, and the record in it is not a queue: the user's Clear keeps it
    /// aside, then writes an empty book.
    NotAQueue,
}

impl QueueTrouble {
    /// The Activity reason and the `semanticWithheld_` / `goalWhy_` code.
    pub(super) fn code(self) -> &'static str {
        match self {
            Self::StorageFailed => "queue_storage_failed",
            Self::NotAQueue => "queue_unreadable",
        }
    }
}

/// Where the running Clear's keep-aside of an unreadable record is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Aside {
    #[default]
    None,
    Writing,
    Kept,
    /// Keeping it aside failed again (why): the empty book is written without a copy.
    Forced(String),
}

/// The conversation key of a page, if it shows one.
pub(super) fn conversation_key(report: &PageReport) -> Option<String> {
    classify_url(&report.url).conversation().map(|c| crate::text::concat(&[c.site.as_str(), ":", &c.conversation_id]))
}

/// The queue's figures for the HUD of one conversation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, WriteJson)]
pub struct QueueView {
    /// Items queued (including a batch on its way).
    pub count: usize,
    /// Characters of the merged batch.
    pub merged_chars: usize,
    /// `waiting | sending | undelivered | unreadable | aside_failed | storage_failed | empty`
    /// (`unreadable`: the record is not a queue; `aside_failed`: and the last Clear could not
    /// keep it aside; `storage_failed`: reading or saving failed).
    pub state: &'static str,
    /// The first characters of each item, in order.
    pub previews: Vec<String>,
    /// The `_locales` key of the Queue button's clear question (its `$1`: `count`): an
    /// unreadable book asks whether to keep it aside and start an empty one; a book whose
    /// storage failed says Clear works only once a read succeeds.
    pub clear: &'static str,
}

impl Continuity {
    /// Queues the composer's `text` of `tab` (Q1); with an empty composer, sends an
    /// undelivered batch again (Q8).
    pub(super) fn queue_add(&mut self, tab: TabId, text: &str, whole_chars: Option<usize>) {
        let Some(conversation) = self.pages.get(&tab).and_then(conversation_key) else {
            return self.queue_refused(tab, &QueueRefusal::NoConversation);
        };
        // Only the start of a text too long to queue came: refused with its whole length,
        // the start never queued as if it were the text.
        if let Some(chars) = whole_chars {
            let merged_chars = chars.max(crate::queue::MAX_MERGED_CHARS + 1);
            return self.queue_refused(tab, &QueueRefusal::TooLong { merged_chars });
        }
        if crate::queue::normalize_text(text).is_empty() {
            if self.queue.durable.undelivered.remove(&conversation).is_some() {
                self.persist();
                self.queue_notice(tab, &QueueNote::Resending);
            } else {
                self.queue_refused(tab, &QueueRefusal::EmptyText);
            }
            return;
        }
        self.queue.durable.next_item += 1;
        let item_id = format!("q:{}.{}", self.ledger.token(), self.queue.durable.next_item);
        self.persist();
        self.queue_change(QueueChange::Add { tab, conversation, item_id, text: text.to_owned() });
    }

    /// Clears the queue of `tab`'s conversation (Q7; the HUD asked the user first, with the
    /// `question` key the page names: only [`CLEAR_ASIDE_FAILED`] may delete an unreadable
    /// record without a copy; no key, from an older page, never does; only `queueClearConfirm`
    /// or no key clears a readable queue's messages).
    pub(super) fn queue_clear(&mut self, tab: TabId, question: Option<&str>) {
        let asked = match question {
            None | Some(CLEAR_CONFIRM) => ClearAsked::Messages,
            Some(CLEAR_ASIDE_FAILED) => ClearAsked::AsideFailed,
            Some(_) => ClearAsked::Other,
        };
        match self.pages.get(&tab).and_then(conversation_key) {
            Some(conversation) => self.queue_change(QueueChange::Clear { tab, conversation, asked }),
            None => self.queue_refused(tab, &QueueRefusal::NoConversation),
        }
    }

    /// Retries the removals the last worker could not write (worker start; the book itself
    /// is read before the first flush).
    pub(super) fn queue_restored(&mut self) {
        for send in self.queue.durable.removals.clone() {
            self.queue_change(QueueChange::Remove { send });
        }
    }

    fn queue_change(&mut self, change: QueueChange) {
        self.queue.next_op += 1;
        self.queue.changes.push_back((self.queue.next_op, change));
        self.queue_next();
    }

    /// Starts the next change when none is running.
    fn queue_next(&mut self) {
        if self.queue.running.is_some() {
            return;
        }
        if let Some((op, _)) = self.queue.changes.front() {
            self.queue.running = Some((*op, None));
            self.emit(ContinuityOutput::QueueRead { op: *op });
        }
    }

    /// The stored record as read for change `op`: `Err` when the read failed.
    pub(super) fn queue_read(&mut self, now: Millis, op: u64, stored: Result<Option<serde_json::Value>, String>) {
        if self.queue.running.as_ref().map(|(id, _)| *id) != Some(op) {
            return;
        }
        let record = match stored {
            Err(detail) => {
                // What is stored is unknown: nothing is written, not even by a Clear.
                self.queue.trouble = Some(QueueTrouble::StorageFailed);
                self.queue.book = None;
                return self.queue_finished(now, Err(QueueRefusal::StorageUnreadable { detail }));
            }
            // A stored `null` holds no items: an empty book.
            Ok(Some(serde_json::Value::Null)) => {
                self.queue_null_read();
                None
            }
            Ok(record) => record,
        };
        let mut book = match QueueBook::read(record.as_ref()) {
            Ok(book) => book,
            Err(refusal) => {
                self.queue.trouble = Some(QueueTrouble::NotAQueue);
                self.queue.book = None;
                let detail = match refusal {
                    QueueRefusal::StorageUnreadable { detail } => detail,
                    other => other.to_string(),
                };
                let clearing = matches!(self.queue.changes.front(), Some((_, QueueChange::Clear { .. })));
                if let (true, Some(record)) = (clearing, record) {
                    // The user's Clear: the record is kept aside, then an empty book written.
                    self.emit(ContinuityOutput::QueueKeepAside { op, record });
                    self.queue.aside = Aside::Writing;
                    self.queue.running = Some((op, Some(QueueBook::new())));
                    return;
                }
                return self.queue_finished(now, Err(QueueRefusal::RecordUnreadable { detail }));
            }
        };
        self.queue.trouble = None;
        self.queue_aside_failed(None);
        let before = book.clone();
        let expired = book.expire(now);
        let Some((_, change)) = self.queue.changes.front().cloned() else { return };
        let applied = match &change {
            QueueChange::Load | QueueChange::Remove { .. } | QueueChange::Move { .. } => Ok(()),
            QueueChange::Add { conversation, item_id, text, .. } => book.add(conversation, item_id, text, now).map(|_| ()),
            // The user was asked about an unreadable record or a failed read, not about these
            // messages: the queue changed since; they are asked again (review 37 M2).
            QueueChange::Clear { asked, .. } if *asked != ClearAsked::Messages => Err(QueueRefusal::QueueChanged),
            QueueChange::Clear { .. } => Ok(()),
        };
        match &change {
            QueueChange::Remove { send } => {
                book.remove(&send.conversation, &send.item_ids);
            }
            QueueChange::Clear { conversation, .. } if applied.is_ok() => {
                book.clear(conversation);
            }
            QueueChange::Move { from, to } => {
                // Items of a batch on its way or confirmed stay: they are not unsent.
                let durable = &self.queue.durable;
                let mut busy: Vec<String> = Vec::new();
                for send in durable.sending.values().chain(&durable.removals) {
                    if send.conversation == *from {
                        busy.extend_from_slice(&send.item_ids);
                    }
                }
                book.move_items(from, to, &busy);
            }
            _ => {}
        }
        for (conversation, _) in &expired {
            self.queue_notice_conversation(conversation, &QueueNote::Expired);
        }
        if let Err(refusal) = applied {
            // Refused whole and said so now; what expired is still written.
            self.queue_report(&change, Some(&refusal));
            if let Some(front) = self.queue.changes.front_mut() {
                front.1 = QueueChange::Load;
            }
        }
        if book == before {
            self.queue.book = Some(book);
            return self.queue_finished(now, Ok(()));
        }
        self.emit(ContinuityOutput::QueueWrite { op, record: book.to_value() });
        self.queue.running = Some((op, Some(book)));
    }

    /// The write of change `op` ended.
    pub(super) fn queue_written(&mut self, now: Millis, op: u64, result: Result<(), String>) {
        let Some((id, Some(book))) = self.queue.running.clone() else { return };
        if id != op {
            return;
        }
        if self.queue.aside == Aside::Writing {
            let forcible = matches!(self.queue.changes.front(), Some((_, QueueChange::Clear { asked: ClearAsked::AsideFailed, .. })));
            match result {
                // Kept aside: now the empty book goes over the unreadable record.
                Ok(()) => self.queue.aside = Aside::Kept,
                // Failed again, after the HUD said so and the user confirmed this Clear from
                // the question that says so: the empty book goes over it without a copy.
                Err(detail) if forcible && self.queue.durable.aside_failed.is_some() => self.queue.aside = Aside::Forced(detail),
                // Nothing was written over (a Clear confirming any other question, or none,
                // only retries): the HUD says why and what the next Clear does.
                Err(detail) => {
                    self.queue.aside = Aside::None;
                    self.queue_aside_failed(Some(&detail));
                    return self.queue_finished(now, Err(QueueRefusal::AsideFailed { detail }));
                }
            }
            return self.emit(ContinuityOutput::QueueWrite { op, record: book.to_value() });
        }
        match result {
            Ok(()) => {
                self.queue.trouble = None;
                self.queue_aside_failed(None);
                self.queue.book = Some(book);
                self.queue_finished(now, Ok(()));
            }
            Err(detail) => {
                // What is stored is unknown now: read it again before the next decision.
                self.queue.trouble = Some(QueueTrouble::StorageFailed);
                self.queue.book = None;
                self.queue_finished(now, Err(QueueRefusal::StorageUnreadable { detail }));
            }
        }
    }

    /// Remembers (persisted) why the last keep-aside failed, or forgets it.
    fn queue_aside_failed(&mut self, detail: Option<&str>) {
        let detail = detail.map(|d| crate::text::first_chars(d, ASIDE_FAILED_CHARS).to_owned());
        if self.queue.durable.aside_failed != detail {
            self.queue.durable.aside_failed = detail;
            self.persist();
        }
    }

    fn queue_finished(&mut self, now: Millis, result: Result<(), QueueRefusal>) {
        self.queue.running = None;
        let aside = std::mem::take(&mut self.queue.aside);
        if let Some((_, change)) = self.queue.changes.pop_front() {
            match (&change, &result, aside) {
                (QueueChange::Clear { tab, .. }, Ok(()), Aside::Kept) => self.queue_notice(*tab, &QueueNote::ClearedAside),
                (QueueChange::Clear { tab, .. }, Ok(()), Aside::Forced(detail)) => {
                    self.queue_notice(*tab, &QueueNote::ClearedForced(detail))
                }
                _ => self.queue_report(&change, result.as_ref().err()),
            }
            if let (QueueChange::Remove { send }, Ok(())) = (&change, &result) {
                self.queue.durable.removals.retain(|r| r != send);
                self.persist();
            }
            if let (QueueChange::Move { from, to }, Ok(())) = (&change, &result) {
                self.queue.durable.moves.retain(|m| !(&m.from == from && &m.to == to));
                self.persist();
            }
        }
        self.queue_next();
        self.flush_queues(now);
    }

    /// Tells the user how their change went.
    fn queue_report(&mut self, change: &QueueChange, refusal: Option<&QueueRefusal>) {
        match (change, refusal) {
            (QueueChange::Add { tab, text, .. }, None) => {
                // Only now, with the item durably stored, may the composer be emptied.
                self.emit(ContinuityOutput::QueueAccepted { tab: *tab, text: text.clone() });
                self.queue_notice(*tab, &QueueNote::Queued);
            }
            (QueueChange::Clear { tab, .. }, None) => self.queue_notice(*tab, &QueueNote::Cleared),
            (QueueChange::Add { tab, .. } | QueueChange::Clear { tab, .. }, Some(refusal)) => self.queue_refused(*tab, refusal),
            (QueueChange::Load | QueueChange::Remove { .. } | QueueChange::Move { .. }, _) => {}
        }
    }

    /// A stored `null` was read as an empty book: said once in Activity (the change's tab's
    /// scope, else the first page's).
    fn queue_null_read(&mut self) {
        if self.queue.null_noted {
            return;
        }
        let tab = match self.queue.changes.front() {
            Some((_, QueueChange::Add { tab, .. } | QueueChange::Clear { tab, .. })) => Some(*tab),
            _ => None,
        };
        let scope = tab.and_then(|t| self.scope_of_tab(t)).or_else(|| self.pages.keys().find_map(|t| self.scope_of_tab(*t)));
        if let Some(scope) = scope {
            self.queue.null_noted = true;
            self.record_activity(
                &scope.key(),
                ActivityKind::QueueBatch,
                ActivityOutcome::Withheld,
                ActivityReason::Code("queue_null"),
                None,
            );
        }
    }

    /// Why the stored book cannot be used now, if it cannot: Auto and Goal mode are
    /// withheld with that reason, not "queue first".
    pub(super) fn queue_trouble(&self) -> Option<QueueTrouble> {
        self.queue.trouble
    }

    fn queue_refused(&mut self, tab: TabId, refusal: &QueueRefusal) {
        self.notice(tab, queue_refusal_say(refusal), NoticeTone::Bad);
    }

    fn queue_notice(&mut self, tab: TabId, note: &QueueNote) {
        let tone = if matches!(note, QueueNote::Undelivered | QueueNote::ClearedForced(_)) { NoticeTone::Bad } else { NoticeTone::Info };
        self.notice(tab, texts::queue_note_say(note), tone);
    }

    fn queue_notice_conversation(&mut self, conversation: &str, note: &QueueNote) {
        let tabs: Vec<TabId> =
            self.pages.iter().filter(|(_, r)| conversation_key(r).as_deref() == Some(conversation)).map(|(t, _)| *t).collect();
        for tab in tabs {
            self.queue_notice(tab, note);
        }
    }

    /// The texts of `conversation`'s queued items, oldest first, at most `max` (the handoff
    /// seed names them; they move with the cut-over, Q9).
    pub(super) fn queue_texts(&self, conversation: &str, max: usize) -> Vec<String> {
        self.queue.book.as_ref().map(|book| book.items(conversation).iter().take(max).map(|i| i.text.clone()).collect()).unwrap_or_default()
    }

    /// The batch of `conversation` that may go out now: its items minus those of batches in
    /// flight or confirmed and not yet removed.
    fn queue_batch(&self, conversation: &str) -> Option<Batch> {
        let book = self.queue.book.as_ref()?;
        let durable = &self.queue.durable;
        let busy = durable.sending.values().chain(&durable.removals).any(|s| s.conversation == conversation);
        let moving = durable.moves.iter().any(|m| m.from == conversation);
        if busy || moving || durable.undelivered.contains_key(conversation) {
            return None;
        }
        book.batch(conversation)
    }

    /// Sends every conversation's batch whose page is idle (Q2). Runs before the schedulers
    /// so the user's next turn goes first.
    pub(super) fn flush_queues(&mut self, now: Millis) {
        if self.queue.running.is_some() {
            return;
        }
        if self.queue.book.is_none() {
            // Not read yet, or the last read failed: read it (again at most every
            // QUEUE_RELOAD_MS while it fails).
            if self.queue.last_load.is_none_or(|at| now.saturating_sub(at) >= QUEUE_RELOAD_MS) && !self.pages.is_empty() {
                self.queue.last_load = Some(now);
                self.queue_change(QueueChange::Load);
            }
            return;
        }
        // A confirmed batch whose removal could not be written yet: write it now.
        let unwritten = self
            .queue
            .durable
            .removals
            .iter()
            .find(|r| !self.queue.changes.iter().any(|(_, c)| matches!(c, QueueChange::Remove { send } if send == *r)))
            .cloned();
        if let Some(send) = unwritten {
            return self.queue_change(QueueChange::Remove { send });
        }
        // A cut-over's move not written yet (it failed, or the worker stopped first).
        let unmoved = self
            .queue
            .durable
            .moves
            .iter()
            .find(|m| {
                !self.queue.changes.iter().any(|(_, c)| matches!(c, QueueChange::Move { from, to } if *from == m.from && *to == m.to))
            })
            .cloned();
        if let Some(QueueMove { from, to }) = unmoved {
            return self.queue_change(QueueChange::Move { from, to });
        }
        match self.queue.not_before {
            Some(at) if now < at => return,
            Some(_) => self.queue.not_before = None,
            None => {}
        }
        let tabs: Vec<(TabId, String, String)> = self
            .pages
            .iter()
            .filter(|(_, r)| is_idle_for_queue(r))
            .filter_map(|(tab, r)| {
                let conversation = conversation_key(r)?;
                let scope = classify_url(&r.url).scope()?;
                Some((*tab, conversation, scope.key()))
            })
            .collect();
        for (tab, conversation, scope_key) in tabs {
            // A conversation being handed off keeps its items for the new one (Q9).
            if self.ledger.active_for(&scope_key).is_some() || self.handoff_holds_queue(&conversation) {
                continue;
            }
            let Some(batch) = self.queue_batch(&conversation) else { continue };
            // Its marker already in the thread (the confirmation was lost with the state
            // that knew it): it landed, so it is removed, never typed again.
            let landed =
                self.pages.get(&tab).is_some_and(|r| r.markers.iter().any(|m| m.split_once('/').is_some_and(|(stem, _)| stem == batch.id)));
            if landed {
                let send = QueueSend { conversation, batch_id: batch.id, item_ids: batch.item_ids };
                self.queue.durable.removals.push(send.clone());
                self.persist();
                self.queue_change(QueueChange::Remove { send });
                return;
            }
            let send = QueueSend { conversation, batch_id: batch.id.clone(), item_ids: batch.item_ids.clone() };
            if let Ok(id) = self.post_delivery(now, &scope_key, tab, DeliveryKind::Queue, &batch.id, &batch.text, Vec::new()) {
                self.activity_sent(&scope_key, DeliveryKind::Queue, "queued_turn", &id);
                self.queue.durable.sending.insert(id, send);
            }
        }
    }

    /// How a batch's delivery ended (Q4, Q5, Q8).
    pub(super) fn queue_resolved(&mut self, now: Millis, delivery: &Delivery, resolution: &Resolution) {
        let Some(send) = self.queue.durable.sending.remove(&delivery.id) else { return };
        self.persist();
        match resolution {
            Resolution::Confirmed => {
                self.queue.durable.removals.push(send.clone());
                self.queue_change(QueueChange::Remove { send });
            }
            Resolution::Abandoned => {
                self.queue.durable.undelivered.insert(send.conversation.clone(), send.batch_id);
                self.queue_notice(delivery.tab, &QueueNote::Undelivered);
            }
            // Never typed: the state naming it could not be saved; it goes again later.
            Resolution::NotSent { reason } if reason == STATE_NOT_SAVED => {
                self.queue.not_before = Some(now.saturating_add(QUEUE_RELOAD_MS));
            }
            // Certainly not in the thread: it goes again on the next idle page.
            _ => self.flush_queues(now),
        }
    }

    /// The HUD's queue figures of `tab`'s conversation.
    pub(super) fn queue_view(&self, tab: TabId) -> Option<QueueView> {
        let conversation = self.pages.get(&tab).and_then(conversation_key)?;
        let durable = &self.queue.durable;
        let items = self.queue.book.as_ref().map(|b| b.items(&conversation)).unwrap_or_default();
        let state = if let Some(trouble) = self.queue.trouble {
            match trouble {
                QueueTrouble::StorageFailed => "storage_failed",
                QueueTrouble::NotAQueue if self.queue.durable.aside_failed.is_some() => "aside_failed",
                QueueTrouble::NotAQueue => "unreadable",
            }
        } else if durable.undelivered.contains_key(&conversation) {
            "undelivered"
        } else if durable.sending.values().any(|s| s.conversation == conversation) {
            "sending"
        } else if items.is_empty() {
            "empty"
        } else {
            "waiting"
        };
        let status = self.queue.book.as_ref().map(|b| b.status(&conversation)).unwrap_or_default();
        Some(QueueView {
            count: status.count,
            merged_chars: status.merged_chars,
            state,
            previews: items.iter().map(|i| crate::text::first_chars(&i.text, QUEUE_PREVIEW_CHARS).to_owned()).collect(),
            clear: match state {
                "unreadable" => "queueClearUnreadable",
                "storage_failed" => "queueClearStorageFailed",
                "aside_failed" => CLEAR_ASIDE_FAILED,
                _ => CLEAR_CONFIRM,
            },
        })
    }

    /// When an unknown or unreadable book is read again, or a batch that could not be
    /// saved is tried again.
    pub(super) fn queue_deadline(&self) -> Option<Millis> {
        if self.queue.book.is_some() && self.queue.running.is_none() {
            return self.queue.not_before;
        }
        if self.queue.book.is_some() || self.queue.running.is_some() || self.pages.is_empty() {
            return None;
        }
        Some(self.queue.last_load.map_or(0, |at| at.saturating_add(QUEUE_RELOAD_MS)))
    }

    /// Whether `conversation` has anything queued, on its way or unsent (the user's next
    /// turn goes before semantic Auto, Q2); a book not read yet counts as holding some.
    pub(super) fn queue_holds(&self, conversation: &str) -> bool {
        let durable = &self.queue.durable;
        self.queue.book.as_ref().is_none_or(|b| b.status(conversation).count > 0)
            || durable.sending.values().chain(&durable.removals).any(|s| s.conversation == conversation)
            || durable.undelivered.contains_key(conversation)
    }

    /// A handoff's cut-over: the unsent items of `from` move to `to` (Q9), durably, as one
    /// more change of the book. A batch of `from` that may have landed (Q8) moves held: it
    /// goes into `to` only on the user's own press there (`from` stays held too, in case
    /// its items have not moved yet).
    pub(super) fn queue_move(&mut self, from: String, to: String) {
        if let Some(batch) = self.queue.durable.undelivered.get(&from).cloned() {
            self.queue.durable.undelivered.insert(to.clone(), batch);
        }
        self.queue.durable.moves.push(QueueMove { from: from.clone(), to: to.clone() });
        self.persist();
        self.queue_change(QueueChange::Move { from, to });
    }
}

/// The clear question that says a keep-aside failing again deletes the unreadable record
/// without a copy: the one question whose confirmed Clear may do so.
const CLEAR_ASIDE_FAILED: &str = "queueClearAsideFailed";

/// The clear question of a readable queue ("Clear the N queued messages?"): with no key
/// (an older page), the one question whose confirmed Clear deletes a readable queue's messages.
const CLEAR_CONFIRM: &str = "queueClearConfirm";

/// How many characters of a failed keep-aside's error the snapshot keeps.
const ASIDE_FAILED_CHARS: usize = 200;

/// How long an unreadable book waits before it is read again.
const QUEUE_RELOAD_MS: Millis = 10_000;

/// How many characters of each item the HUD shows.
const QUEUE_PREVIEW_CHARS: usize = 80;

/// What the user is told about the queue.
pub(super) enum QueueNote {
    Queued,
    Cleared,
    Expired,
    Undelivered,
    Resending,
    /// The user's Clear kept an unreadable record aside and started an empty book.
    ClearedAside,
    /// Keeping it aside failed twice (why): the user's confirmed Clear deleted it.
    ClearedForced(String),
}

/// A page a batch may be typed into: composer there, nothing streaming or waiting for a
/// permission, no human draft, none of our text left in the composer, every needed fact
/// resolved.
pub(super) fn is_idle_for_queue(report: &PageReport) -> bool {
    report.composer
        && !report.generating
        && !report.permission_card
        && !report.draft
        && report.composer_marker.is_none()
        && report.delivering.is_none()
        && report.unresolved.is_none()
}
