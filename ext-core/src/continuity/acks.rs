//! Acknowledgements of inbox tasks (I4): tasks carried by confirmed deliveries are
//! remembered per session ref, acknowledged with `inbox.ack`, and retried until the
//! runtime answers — across link loss, worker restarts and re-binding.
//!
//! Invariants: `inbox.ack` is only requested for tasks of a confirmed delivery; a task a
//! confirmed delivery carried is never carried again; an ack outlives its binding.

use super::*;

/// How many task ids of confirmed deliveries are remembered per session ref.
pub const CONFIRMED_TASKS_KEPT: usize = 512;

impl Continuity {
    /// `tasks` without those a confirmed delivery of `key`'s ref already carried.
    pub(super) fn unconfirmed(&self, key: &str, mut tasks: Vec<InboxTask>) -> Vec<InboxTask> {
        let Some(session_ref) = self.bindings.list().find(|b| b.scope.key() == key).map(|b| browser_session_ref(&b.scope)) else {
            return tasks;
        };
        if let Some(confirmed) = self.confirmed_tasks.get(&session_ref) {
            tasks.retain(|t| !confirmed.contains(&t.task_id));
        }
        tasks
    }

    /// Remembers the tasks of a confirmed delivery of `key` so no later wake carries them
    /// (also when `key` is no longer bound: a rebinding reads the inbox again).
    pub(super) fn remember_confirmed(&mut self, key: &str, task_ids: Vec<String>) {
        if task_ids.is_empty() {
            return;
        }
        let Some(session_ref) = Scope::from_key(key).map(|scope| browser_session_ref(&scope)) else {
            return;
        };
        let confirmed = self.confirmed_tasks.entry(session_ref).or_default();
        for id in task_ids {
            if !confirmed.contains(&id) {
                confirmed.push_back(id);
            }
        }
        while confirmed.len() > CONFIRMED_TASKS_KEPT {
            confirmed.pop_front();
        }
    }

    /// Moves the scope's confirmed-but-unacknowledged tasks to the per-session-ref list before
    /// its per-scope state is dropped or reset, and sends them when online.
    pub(super) fn keep_orphan_acks(&mut self, scope: &Scope) {
        let Some(status) = self.scopes.get_mut(&scope.key()) else { return };
        if status.ack_due.is_empty() {
            return;
        }
        let ids = std::mem::take(&mut status.ack_due);
        self.owe_acks(browser_session_ref(scope), ids);
    }

    /// Acknowledges the tasks of a delivery of `key` confirmed after its scope went (the
    /// chat was unbound while the message was on its way): by session ref, as
    /// [`Self::keep_orphan_acks`] does for the acks a scope still owed.
    pub(super) fn ack_orphaned_delivery(&mut self, key: &str, task_ids: &[String]) {
        if let (Some(scope), false) = (Scope::from_key(key), task_ids.is_empty()) {
            self.owe_acks(browser_session_ref(&scope), task_ids.to_vec());
        }
    }

    /// Adds `ids` to the acks owed under `session_ref` (kept in the snapshot) and sends them
    /// when online.
    fn owe_acks(&mut self, session_ref: String, ids: Vec<String>) {
        let due = self.orphan_acks.entry(session_ref).or_default();
        for id in ids {
            if !due.contains(&id) {
                due.push(id);
            }
        }
        self.persist();
        self.send_orphan_acks();
    }

    /// Sends `inbox.ack` for every orphaned task (when online; offline they stay due).
    pub(super) fn send_orphan_acks(&mut self) {
        if !self.link_up {
            return;
        }
        let pending: Vec<(String, Vec<String>)> = self.orphan_acks.iter().map(|(r, ids)| (r.clone(), ids.clone())).collect();
        for (session_ref, ids) in pending {
            for chunk in ids.chunks(100) {
                let task_ids = chunk.to_vec();
                self.call(
                    Purpose::OrphanAck { session_ref: session_ref.clone(), task_ids: task_ids.clone() },
                    RuntimeCall::InboxAck { session_ref: session_ref.clone(), task_ids },
                );
            }
        }
    }

    /// Sends `inbox.ack` for the scope's confirmed-but-unacknowledged tasks (when online;
    /// offline they stay due and go out on the next link-up).
    pub(super) fn send_due_acks(&mut self, key: &str) {
        if !self.link_up {
            return;
        }
        let Some(task_ids) = self.scopes.get(key).map(|s| s.ack_due.clone()).filter(|ids| !ids.is_empty()) else {
            return;
        };
        let Some(session_ref) = self.bindings.list().find(|b| b.scope.key() == key).map(|b| browser_session_ref(&b.scope)) else {
            return;
        };
        // inbox.ack takes at most 100 ids per call.
        for chunk in task_ids.chunks(100) {
            let task_ids = chunk.to_vec();
            self.call(
                Purpose::Ack { scope_key: key.to_owned(), task_ids: task_ids.clone() },
                RuntimeCall::InboxAck { session_ref: session_ref.clone(), task_ids },
            );
        }
    }
}
