//! The queue's records kept aside ([`crate::queue::ASIDE_KEY`]), as the side panel shows
//! them, and every change to that list, one at a time.
//!
//! Purpose: a Clear of an unreadable queue keeps the stored record aside (continuity's
//! `QueueKeepAside`); the side panel shows how many are kept, lets the user copy each one's
//! text (the value as stored, data only) and remove one after a confirm. Every list change
//! (a keep-aside, a removal) reads the list and writes it back; they run one after another
//! in this lane, so none writes over a record another just added or kept.
//!
//! Invariants: a removal names the record by its id ([`crate::queue::AsideRecord::id`]) and
//! the question the user confirmed ([`ASIDE_CONFIRM`]); any other removal (no confirm, a
//! page's port, a record no longer there) removes nothing and says why; a failed read or
//! write removes nothing; the view (`queue_aside`) is posted to the side panels after each
//! read of the list, which follows a panel's hello or refresh and each list change.
//!
//! Driver contract: part of [`Worker::handle`]; outputs are `StorageRead` / `StorageWrite`
//! of [`crate::queue::ASIDE_KEY`], `Post`s to the side panels and `Warn`s.

use std::collections::VecDeque;

use serde_json::Value;

use super::commands::ExtensionPage;
use super::storage::StorageWait;
use super::{Worker, WorkerOutput};
use crate::hud::{StatusLine, Tone};
use crate::json_object;
use crate::json_read::WriteJson;
use crate::queue::{aside_records, AsideRecord, ASIDE_KEY, MAX_ASIDE_RECORDS};

/// The question the side panel asks before a removal; a removal is carried out only when
/// it names this key as confirmed.
pub const ASIDE_CONFIRM: &str = "panelAsideConfirm";
/// Characters of a record's text the panel shows in its line (the copy is whole).
pub const ASIDE_PREVIEW_CHARS: usize = 160;
/// Every text the view names, with the substitutions it sends (`_locales`, checked in
/// `tests/it/locales.rs`).
pub const ASIDE_TEXTS: &[(&str, usize)] = &[
    ("panelAsideTitle", 0),
    ("panelAsideCount", 2),
    ("panelAsideFull", 2),
    ("panelAsideUnreadable", 1),
    ("panelAsideRecord", 1),
    ("panelAsideRecordOlder", 1),
    ("panelAsideRecordValue", 0),
    ("panelAsideCopy", 0),
    ("panelAsideCopied", 0),
    ("panelAsideCopyFailed", 1),
    ("panelAsideRemove", 0),
    (ASIDE_CONFIRM, 0),
    ("panelAsideYes", 0),
    ("panelAsideNo", 0),
    ("panelAsideRemoved", 0),
    ("panelAsideRemoveFailed", 1),
];

/// A change to the list, waiting for its turn.
pub(super) enum AsideJob {
    /// Continuity's keep-aside of the queue change `op`: the value as stored.
    Keep(u64, Value),
    /// The side panel's confirmed removal of the record with this id.
    Remove(String),
}

/// The lane: the change running, the ones waiting, the newest view read.
#[derive(Default)]
pub(super) struct AsideLane {
    busy: bool,
    waiting: VecDeque<AsideJob>,
    /// The token of the newest view read (an older answer is not shown).
    view_read: u32,
    /// What the last removal did, shown with the next view.
    notice: Option<StatusLine>,
}

/// `{"type":"queue_aside","view":…}`: the records kept aside (or why they could not be
/// read), the keys of the panel's line, buttons and confirm, and what the last removal did.
pub fn aside_view_message(read: &Result<Vec<AsideRecord>, String>, notice: Option<&StatusLine>) -> Value {
    let max = MAX_ASIDE_RECORDS.to_string();
    let status = |key: &'static str, substitutions: Vec<String>, tone: Tone| StatusLine { key, substitutions, tone }.write_json();
    let (line, records) = match read {
        Err(error) => (status("panelAsideUnreadable", vec![error.clone()], Tone::Bad), Vec::new()),
        Ok(records) if records.is_empty() => (Value::Null, Vec::new()),
        Ok(records) => {
            // At the limit a further unreadable queue cannot be kept aside: the line says so.
            let key = if records.len() >= MAX_ASIDE_RECORDS { "panelAsideFull" } else { "panelAsideCount" };
            (status(key, vec![records.len().to_string(), max], Tone::Warning), records.clone())
        }
    };
    let records: Vec<Value> = records
        .into_iter()
        .map(|record| {
            // Text (as the queue stores it): its length and start; any other value is sent
            // as it is, for the panel to copy as JSON.
            let (line, preview, value) = match record.text() {
                Some(text) => {
                    let chars = vec![crate::text::char_count(text).to_string()];
                    let key = if record.kept_at.is_some() { "panelAsideRecord" } else { "panelAsideRecordOlder" };
                    (
                        status(key, chars, Tone::Warning),
                        Some(crate::text::one_line(crate::text::first_chars(text, ASIDE_PREVIEW_CHARS))),
                        None,
                    )
                }
                None => (status("panelAsideRecordValue", Vec::new(), Tone::Warning), None, Some(record.record.clone())),
            };
            json_object!(
                "id": record.id, "kept_at": record.kept_at, "line": line, "preview": preview,
                "text": record.text(), "value": value,
            )
        })
        .collect();
    let view = json_object!(
        "title": "panelAsideTitle", "line": line, "records": records, "notice": notice.map(WriteJson::write_json),
        "copy": "panelAsideCopy", "copied": "panelAsideCopied", "copy_failed": "panelAsideCopyFailed",
        "remove": "panelAsideRemove", "confirm": ASIDE_CONFIRM, "yes": "panelAsideYes", "no": "panelAsideNo",
    );
    json_object!("type": "queue_aside", "view": view)
}

impl Worker {
    /// A change to the list: it runs now, or after the one running.
    pub(super) fn aside_job(&mut self, job: AsideJob) {
        self.aside.waiting.push_back(job);
        if !self.aside.busy {
            self.aside_next();
        }
    }

    /// Starts the next waiting change (its read of the list), or, with none left, reads the
    /// list for the side panels.
    fn aside_next(&mut self) {
        let Some(job) = self.aside.waiting.pop_front() else {
            self.aside.busy = false;
            return self.aside_view_read();
        };
        self.aside.busy = true;
        let wait = match job {
            AsideJob::Keep(op, value) => StorageWait::AsideRead(op, value),
            AsideJob::Remove(id) => StorageWait::AsideRemoveRead(id),
        };
        let token = self.storage_token(wait);
        self.outputs.push_back(WorkerOutput::StorageRead { token, key: ASIDE_KEY });
    }

    /// The running change ended: the next one runs.
    pub(super) fn aside_done(&mut self) {
        self.aside_next();
    }

    /// The side panel's removal of the record `id`, confirmed with `question`; from a port
    /// that is not a side panel's, or without the confirm, nothing is removed.
    pub(super) fn aside_remove(&mut self, panel: bool, extension: ExtensionPage, id: String, question: Option<String>) {
        if !panel || extension == ExtensionPage::Options {
            return self.warn("herdr-continuity: only the side panel may remove a queue record kept aside; dropped".to_owned());
        }
        if question.as_deref() != Some(ASIDE_CONFIRM) {
            return self
                .warn(format!("herdr-continuity: a removal of the queue record {id} kept aside was not confirmed; nothing removed"));
        }
        self.aside_job(AsideJob::Remove(id));
    }

    /// Reads the list for the side panels (none open: nothing, and no notice is kept).
    pub(super) fn aside_view_read(&mut self) {
        if !self.pages.iter().any(|page| page.is_panel()) {
            self.aside.notice = None;
            return;
        }
        let token = self.storage_token(StorageWait::AsideView);
        self.aside.view_read = token;
        self.outputs.push_back(WorkerOutput::StorageRead { token, key: ASIDE_KEY });
    }

    /// The list as read (`Value`: the items read), parsed as a keep-aside parses it.
    pub(super) fn aside_stored(&self, items: &Value) -> Option<Value> {
        match items.get(ASIDE_KEY) {
            Some(Value::String(text)) => Some((self.parse)(text).unwrap_or_else(|_| Value::String(text.clone()))),
            other => other.cloned(),
        }
    }

    /// The answer to a view read: the newest is posted to every side panel.
    pub(super) fn aside_view_answered(&mut self, token: u32, outcome: Result<Value, String>) {
        if token != self.aside.view_read {
            return;
        }
        let read = outcome.map(|items| aside_records(self.aside_stored(&items)));
        let message = aside_view_message(&read, self.aside.notice.take().as_ref());
        let ports: Vec<_> = self.pages.iter().filter(|page| page.is_panel()).map(|page| page.port).collect();
        for port in ports {
            self.outputs.push_back(WorkerOutput::Post { port, message: message.clone() });
        }
    }

    /// A removal's read answered: the list without the record is written, or it says why not.
    pub(super) fn aside_remove_read(&mut self, id: &str, outcome: Result<Value, String>) {
        let without = outcome
            .map_err(|error| format!("the records kept aside could not be read: {error}"))
            .and_then(|items| crate::queue::aside_without(self.aside_stored(&items), id));
        match without {
            Ok(value) => {
                let token = self.storage_token(StorageWait::AsideRemoved);
                self.outputs.push_back(WorkerOutput::StorageWrite { token, key: ASIDE_KEY, value });
            }
            Err(detail) => self.aside_removed(Err(detail)),
        }
    }

    /// A removal ended (written, or why nothing was removed).
    pub(super) fn aside_removed(&mut self, result: Result<(), String>) {
        self.aside.notice = Some(match result {
            Ok(()) => StatusLine { key: "panelAsideRemoved", substitutions: Vec::new(), tone: Tone::Good },
            Err(detail) => StatusLine { key: "panelAsideRemoveFailed", substitutions: vec![detail], tone: Tone::Bad },
        });
        self.aside_done();
    }
}
