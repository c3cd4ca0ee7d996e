//! The worker's `chrome.storage.local` and `chrome.tabs` requests and what waits for their
//! answers.
//!
//! Purpose: every request gets a token (never 0: 0 asks for no answer); the answer
//! ([`WorkerInput::Stored`](super::WorkerInput::Stored)) carries out what waited for it.
//!
//! Invariants: a delivery, a budgeted recovery command, a card click and a handoff's new
//! tab wait for the write of the snapshot that names them, and are dropped when it failed
//! (a restarted worker must find their record, never repeat them); a tab is reloaded
//! (H5 level 2) only while the core still holds the pending record for that page load; a
//! queue record read is passed on as it is stored (its absence, or a JSON `null`, holds no
//! items: an empty queue; text that is not JSON, or a value that is not a queue, is a record
//! the queue refuses and keeps until the user's Clear sets it aside); a keep-aside reads the
//! set-aside records first and adds this one ([`crate::queue::aside_with`]): none is ever
//! replaced, and a failed read or a full list fails the keep-aside (nothing is written).
//!
//! Driver contract: part of [`Worker::handle`]; outputs are `StorageRead`, `StorageWrite`,
//! `OpenTab`, `ReloadTab`, `Post`s and `Warn`s.

use serde_json::Value;

use super::{Worker, WorkerOutput, STORAGE_KEY};
use crate::binding::TabId;
use crate::continuity::{ContinuityInput, DeliveryOutcome, RecoveryCommand, STATE_NOT_SAVED};
use crate::json_object;

/// What a request's answer is for.
pub(super) enum StorageWait {
    /// The queue's record, read for the change `op`.
    QueueRead(u64),
    /// The queue's record, written for the change `op`.
    QueueWrite(u64),
    /// The set-aside records, read to add `record` (as stored) for the change `op`.
    AsideRead(u64, Value),
    /// The set-aside records with `record` added, written for the change `op`.
    AsideWritten(u64),
    /// The set-aside records, read to remove the one with this id ([`super::aside`]).
    AsideRemoveRead(String),
    /// The set-aside records without the removed one, written.
    AsideRemoved,
    /// The set-aside records, read for the side panels' view.
    AsideView,
    /// The snapshot, written before `message` goes to the page of `tab` (`None`: the tab
    /// is reloaded).
    Persisted(TabId, Option<Value>),
    /// The snapshot, written before a handoff's new tab is asked for (`transfer_id`, `url`).
    OpenTab(String, String),
    /// The new tab of the handoff `transfer_id`: `chrome.tabs.create`'s answer.
    TabCreated(String),
}

impl Worker {
    /// A new token (never 0) whose answer carries out `wait`.
    pub(super) fn storage_token(&mut self, wait: StorageWait) -> u32 {
        self.storage_token = self.storage_token.checked_add(1).unwrap_or(1);
        let token = self.storage_token;
        self.storage.insert(token, wait);
        token
    }

    /// Writes the snapshot, then posts `message` to the page of `tab` (`None`: reloads the
    /// tab); nothing when the write failed, so a command recorded as done is never repeated.
    pub(super) fn post_when_persisted(&mut self, tab: TabId, message: Option<Value>) {
        let value = self.continuity.snapshot_value();
        let token = self.storage_token(StorageWait::Persisted(tab, message));
        self.outputs.push_back(WorkerOutput::StorageWrite { token, key: STORAGE_KEY, value });
    }

    /// A handoff's new tab: the snapshot (with the request recorded) is written first, then
    /// the tab is asked for; its answer goes back as `HandoffTab`.
    pub(super) fn open_tab(&mut self, transfer_id: String, url: String) {
        let value = self.continuity.snapshot_value();
        let token = self.storage_token(StorageWait::OpenTab(transfer_id, url));
        self.outputs.push_back(WorkerOutput::StorageWrite { token, key: STORAGE_KEY, value });
    }

    /// A recovery command; a budgeted one only once the snapshot holding its pending record
    /// is written (a worker restart must find it, never repeat it).
    pub(super) fn recovery_command(&mut self, tab: TabId, command: &RecoveryCommand) {
        let message = match command {
            RecoveryCommand::Probe { conversation_id } => {
                return self.post_to_tab(tab, json_object!("type": "snapshot_probe", "conversation_id": conversation_id));
            }
            RecoveryCommand::ReloadPage => Some(json_object!("type": "recovery_reload")),
            RecoveryCommand::ClickRetry => Some(json_object!("type": "recovery_retry")),
            RecoveryCommand::ReloadTab => None,
        };
        self.post_when_persisted(tab, message);
    }

    /// The answer to the request `token`.
    pub(super) fn stored(&mut self, token: u32, outcome: Result<Value, String>) {
        if token == 0 {
            if let Err(error) = outcome {
                self.warn(format!("herdr-continuity: saving state failed: {error}"));
            }
            return;
        }
        let Some(wait) = self.storage.remove(&token) else { return };
        match wait {
            StorageWait::QueueRead(op) => {
                let parse = self.parse;
                self.queue_raw = outcome.as_ref().ok().and_then(|items| items.get(crate::queue::STORE_KEY)).cloned();
                // The items read: the record's absence is an empty queue; a stored JSON `null`
                // (as a value or as text) is passed on as `null` (no items: continuity reads
                // it as an empty book and says so once). Text is the record's JSON; a value
                // that is not text, or text that is not JSON, is passed as it is: an
                // unreadable record, refused by every change but the user's Clear, which
                // keeps it aside first.
                let stored = outcome.and_then(|items| match items.as_object().map(|items| items.get(crate::queue::STORE_KEY)) {
                    None => Err("the storage answer is not the items read".to_owned()),
                    Some(None) => Ok(None),
                    Some(Some(Value::String(text))) => Ok(Some(parse(text).unwrap_or_else(|_| Value::String(text.clone())))),
                    Some(Some(other)) => Ok(Some(other.clone())),
                });
                self.continuity_input(ContinuityInput::QueueRead { op, stored });
            }
            StorageWait::QueueWrite(op) => self.continuity_input(ContinuityInput::QueueWritten { op, result: outcome.map(|_| ()) }),
            StorageWait::AsideRead(op, record) => {
                let key = crate::queue::ASIDE_KEY;
                let stored = outcome.map_err(|error| format!("the records kept aside could not be read: {error}"));
                match stored.and_then(|items| crate::queue::aside_with(self.aside_stored(&items), record, self.now)) {
                    Ok(value) => {
                        let token = self.storage_token(StorageWait::AsideWritten(op));
                        self.outputs.push_back(WorkerOutput::StorageWrite { token, key, value });
                    }
                    Err(detail) => {
                        self.continuity_input(ContinuityInput::QueueWritten { op, result: Err(detail) });
                        self.aside_done();
                    }
                }
            }
            StorageWait::AsideWritten(op) => {
                self.continuity_input(ContinuityInput::QueueWritten { op, result: outcome.map(|_| ()) });
                self.aside_done();
            }
            StorageWait::AsideRemoveRead(id) => self.aside_remove_read(&id, outcome),
            StorageWait::AsideRemoved => self.aside_removed(outcome.map(|_| ())),
            StorageWait::AsideView => self.aside_view_answered(token, outcome),
            // Not carried out when the write failed: the budget is spent, nothing repeats. A
            // message never posted is certainly not in the chat: not sent (a wake is offered
            // again by its scheduler), never left to look as if it may have landed.
            StorageWait::Persisted(tab, Some(message)) if outcome.is_err() => {
                if let (Some("deliver"), Some(id)) = (message["type"].as_str(), message["id"].as_str()) {
                    let outcome = DeliveryOutcome::NotSubmitted { reason: STATE_NOT_SAVED.to_owned() };
                    self.continuity_input(ContinuityInput::DeliveryReport { tab, id: id.to_owned(), outcome });
                }
            }
            StorageWait::Persisted(..) | StorageWait::OpenTab(..) if outcome.is_err() => {}
            StorageWait::Persisted(tab, Some(message)) => self.post_to_tab(tab, message),
            // H5 level 2: only the page's own tab, and only while the core still holds its
            // pending record for this page load, the same conversation, Auto on.
            StorageWait::Persisted(tab, None) if self.continuity.tab_reload_accepted(tab) => {
                self.outputs.push_back(WorkerOutput::ReloadTab { tab });
            }
            StorageWait::Persisted(_, None) => {
                self.warn("herdr-continuity: a tab reload was refused (no matching pending record)".to_owned())
            }
            StorageWait::OpenTab(transfer_id, url) => {
                let token = self.storage_token(StorageWait::TabCreated(transfer_id));
                self.outputs.push_back(WorkerOutput::OpenTab { token, url });
            }
            StorageWait::TabCreated(transfer_id) => {
                let tab = outcome.and_then(|id| {
                    id.as_f64()
                        .filter(|id| *id >= 0.0 && *id <= f64::from(u32::MAX))
                        .map(|id| id as u32)
                        .ok_or_else(|| "the new tab has no id".to_owned())
                });
                self.continuity_input(ContinuityInput::HandoffTab { transfer_id, tab });
            }
        }
    }
}
