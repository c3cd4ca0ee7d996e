//! Inbox reads of the composition: the inbox checks ([`crate::inbox_checks::InboxChecks`],
//! reads outside a settle) fed the facts they need and their outputs carried out, and the
//! settle reads a worker restart lost re-issued (a settle waiting for its own inbox read is
//! persisted).
//!
//! Invariants: what the checks machine is told is what happened (a due reason, a reconnect,
//! a settle's own read, a scope that is quiet now); an inbox wake goes through the scope's
//! scheduler like a settle wake (the same gate, Auto rules, retries and ack after
//! confirmation, I4).

use super::*;
use crate::inbox_checks::{CheckAnswer, InboxCheckInput, InboxCheckOutput};
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

    /// Feeds the inbox checks and carries out what they decide.
    pub(super) fn inbox_check(&mut self, input: InboxCheckInput) {
        let now = self.now;
        self.inbox_checks.handle(now, input);
        while let Some(output) = self.inbox_checks.poll() {
            match output {
                InboxCheckOutput::Read { key, session_ref } => {
                    self.call(Purpose::InboxCheck { scope_key: key }, RuntimeCall::InboxPending { session_ref });
                }
                InboxCheckOutput::NoInbox { key } => {
                    if let Some(status) = self.scopes.get_mut(&key) {
                        status.inbox_missing = true;
                    }
                }
                InboxCheckOutput::Wake { key, first, tasks } => {
                    let Some(status) = self.scopes.get_mut(&key) else { continue };
                    status.inbox_missing = false;
                    status.wake_tasks = tasks;
                    if let Some(scheduler) = status.scheduler.as_mut() {
                        scheduler.handle(now, SchedulerInput::InboxWake { key: first });
                    }
                    self.drain_scheduler(now, &key);
                }
            }
        }
    }

    /// Link-up or stream `hello`: every bound scope's check is due.
    pub(super) fn inbox_checks_due(&mut self) {
        let keys: Vec<String> = self.bindings.list().map(|b| b.scope.key()).filter(|k| self.scopes.contains_key(k)).collect();
        self.inbox_check(InboxCheckInput::Reconnected { keys });
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

    /// Tells the checks which scopes with a due check are quiet now (while the link is up).
    pub(super) fn run_due_inbox_checks(&mut self) {
        if !self.link_up {
            return;
        }
        let quiet: Vec<(String, String, String)> = self
            .bindings
            .list()
            .map(|b| (b.scope.key(), b.workspace_id.clone(), browser_session_ref(&b.scope)))
            .filter(|(key, ..)| self.inbox_checks.is_due(key) && !self.inbox_checks.in_flight(key) && !self.inbox_check_blocked(key))
            .collect();
        for (key, workspace_id, session_ref) in quiet {
            self.inbox_check(InboxCheckInput::Quiet { key, workspace_id, session_ref });
        }
    }

    /// The answer to an inbox check, with the tasks already carried removed.
    pub(super) fn inbox_checked(&mut self, key: String, result: Result<RuntimeAnswer, CallError>) {
        let answer = match result {
            Ok(RuntimeAnswer::InboxPending { tasks, more }) => CheckAnswer::Tasks { tasks: self.unconfirmed(&key, tasks), more },
            Err(error) if error.code == ErrorCode::UnknownMethod => CheckAnswer::NoInbox,
            _ => CheckAnswer::Failed,
        };
        let bound_to = self.bindings.list().find(|b| b.scope.key() == key).map(|b| b.workspace_id.clone());
        let quiet = !self.inbox_check_blocked(&key);
        self.inbox_check(InboxCheckInput::Answered { key, answer, bound_to, quiet });
    }
}
