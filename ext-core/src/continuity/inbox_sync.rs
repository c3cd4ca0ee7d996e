//! Inbox reads outside a settle (I2, I4, P9): a scope gets an *inbox check* after link-up,
//! stream `hello`, binding and a growing `unacked` count; it runs only while the scope is
//! quiet, and its unacknowledged tasks become one inbox wake. A settle waiting for its own
//! inbox read is persisted and re-read after a worker restart.
//!
//! Invariants: at most one inbox read per scope in flight; an inbox wake never goes out
//! while the workspace works or another wake is pending or in flight.

use super::*;
use continuity_protocol::ErrorCode;

impl Continuity {
    /// Re-reads the inbox for every settle that was waiting for its `inbox.pending` answer
    /// when the answer was lost (a worker restart): the settle still wakes, with its tasks.
    pub(super) fn reissue_held_settles(&mut self) {
        let held: Vec<(String, SettleOutput)> = self
            .scopes
            .iter()
            .filter_map(|(key, s)| s.settle_awaiting_tasks.clone().map(|settle| (key.clone(), settle)))
            .filter(|(key, _)| !self.calls.values().any(|p| matches!(p, Purpose::WakeTasks { scope_key, .. } if scope_key == key)))
            .collect();
        for (scope_key, settle) in held {
            let Some(session_ref) = self.bindings.list().find(|b| b.scope.key() == scope_key).map(|b| browser_session_ref(&b.scope)) else {
                continue;
            };
            self.call(Purpose::WakeTasks { scope_key, settle }, RuntimeCall::InboxPending { session_ref });
        }
    }

    /// Marks an inbox check due for every bound scope (link-up, stream `hello`) that has
    /// none in flight (a check sent on this link already sees what the `hello` announces:
    /// the runtime catches up with its event log before answering `inbox.pending`).
    pub(super) fn inbox_checks_due(&mut self) {
        let keys: Vec<String> = self.bindings.list().map(|b| b.scope.key()).collect();
        for key in keys {
            let check_in_flight = self.calls.values().any(|p| matches!(p, Purpose::InboxCheck { scope_key, .. } if *scope_key == key));
            if check_in_flight {
                continue;
            }
            if let Some(status) = self.scopes.get_mut(&key) {
                status.inbox_check_due = true;
            }
        }
    }

    /// Why an inbox check of `key` must wait (or its answer must not become a wake): the
    /// workspace works (its settle will carry the tasks), a settle's inbox read is in
    /// flight, or a wake is pending or in flight (it carries them, or they follow it).
    pub(super) fn inbox_check_blocked(&self, key: &str) -> bool {
        let Some(binding) = self.bindings.list().find(|b| b.scope.key() == key) else {
            return true;
        };
        let settle_read_in_flight = self.calls.values().any(|p| matches!(p, Purpose::WakeTasks { scope_key, .. } if scope_key == key));
        let status = self.scopes.get(key);
        let wake_busy = status.is_none_or(|s| {
            s.scheduler.as_ref().is_none_or(WakeScheduler::wake_pending)
                || self.ledger.active_for(key).is_some_and(|d| d.kind == DeliveryKind::Wake)
        });
        self.tracker.is_working(&binding.workspace_id) || settle_read_in_flight || wake_busy
    }

    /// Starts the due inbox checks of quiet scopes (at most one read per scope in flight).
    pub(super) fn run_due_inbox_checks(&mut self) {
        if !self.link_up {
            return;
        }
        let due: Vec<(String, String, String)> = self
            .bindings
            .list()
            .filter(|b| self.scopes.get(&b.scope.key()).is_some_and(|s| s.inbox_check_due))
            .map(|b| (b.scope.key(), b.workspace_id.clone(), browser_session_ref(&b.scope)))
            .collect();
        for (key, workspace_id, session_ref) in due {
            let check_in_flight = self.calls.values().any(|p| matches!(p, Purpose::InboxCheck { scope_key, .. } if *scope_key == key));
            if check_in_flight || self.inbox_check_blocked(&key) {
                continue;
            }
            if let Some(status) = self.scopes.get_mut(&key) {
                status.inbox_check_due = false;
            }
            self.call(Purpose::InboxCheck { scope_key: key, workspace_id }, RuntimeCall::InboxPending { session_ref });
        }
    }

    /// The answer to an inbox check: its unconfirmed tasks become one inbox wake if the scope
    /// is still quiet; otherwise the check stays due (it runs again once the scope is quiet).
    pub(super) fn inbox_checked(&mut self, now: Millis, key: &str, workspace_id: &str, result: Result<RuntimeAnswer, CallError>) {
        let tasks = match result {
            Ok(RuntimeAnswer::InboxPending { tasks, more }) => {
                if more {
                    if let Some(status) = self.scopes.get_mut(key) {
                        status.inbox_check_due = true;
                    }
                }
                tasks
            }
            Err(error) if error.code == ErrorCode::UnknownMethod => {
                if let Some(status) = self.scopes.get_mut(key) {
                    status.inbox_missing = true;
                }
                return;
            }
            // Offline or refused: the next link-up, `hello` or `inbox_changed` checks again.
            _ => return,
        };
        let tasks = self.unconfirmed(key, tasks);
        let same_binding = self.bindings.list().any(|b| b.scope.key() == key && b.workspace_id == workspace_id);
        if tasks.is_empty() || !same_binding {
            return;
        }
        if self.inbox_check_blocked(key) {
            if let Some(status) = self.scopes.get_mut(key) {
                status.inbox_check_due = true;
            }
            return;
        }
        let Some(first) = tasks.iter().map(|t| t.task_id.clone()).min() else { return };
        let Some(status) = self.scopes.get_mut(key) else { return };
        status.inbox_missing = false;
        status.wake_tasks = tasks;
        if let Some(scheduler) = status.scheduler.as_mut() {
            scheduler.handle(now, SchedulerInput::InboxWake { key: first });
        }
        self.drain_scheduler(now, key);
    }
}
