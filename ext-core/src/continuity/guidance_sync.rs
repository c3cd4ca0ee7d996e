//! Parent guidance (SPEC I5) that arrives after a settle's inbox read: the runtime's
//! advisor answers seconds after the task finished, and announces it with an
//! `inbox_changed` whose counts did not change. A scope whose pending wake holds tasks
//! re-reads the inbox for their guidance only, until that wake is written into the chat.
//!
//! Invariants: the re-read merges nothing but `guidance`, by task id, into tasks the wake
//! already holds (it adds and drops none); it never schedules a wake; at most one
//! `inbox.pending` read per scope is in flight.

use super::*;
use crate::inbox_checks::{DueBecause, InboxCheckInput};

impl Continuity {
    /// An `inbox_changed` for `session_ref`: a grown `unacked` count makes an inbox check
    /// due (read once the scope is quiet); a pending wake's tasks are re-read for guidance.
    pub(super) fn inbox_changed(&mut self, session_ref: &str, counts: TaskCounts) {
        let mut grew = Vec::new();
        for (key, status) in self.scopes_with_ref(session_ref) {
            // New unacknowledged results: read them once the scope is quiet.
            if counts.unacked > status.counts.map_or(0, |c| c.unacked) {
                grew.push(key);
            }
            status.counts = Some(counts);
            status.inbox_missing = false;
        }
        for key in grew {
            self.inbox_check(InboxCheckInput::Due { key, because: DueBecause::UnackedGrew });
        }
        let keys: Vec<String> = self
            .bindings
            .list()
            .filter(|b| browser_session_ref(&b.scope) == session_ref)
            .map(|b| b.scope.key())
            .filter(|key| self.scopes.get(key).is_some_and(|s| !s.wake_tasks.is_empty()))
            // A wake being typed or awaiting confirmation already has its text.
            .filter(|key| !self.ledger.active_for(key).is_some_and(|d| d.kind == DeliveryKind::Wake))
            .collect();
        for key in keys {
            let read_in_flight = self.calls.values().any(|p| match p {
                Purpose::WakeTasks { scope_key, .. } | Purpose::InboxCheck { scope_key, .. } | Purpose::GuidanceRead { scope_key } => {
                    *scope_key == key
                }
                _ => false,
            });
            if !read_in_flight {
                self.call(Purpose::GuidanceRead { scope_key: key }, RuntimeCall::InboxPending { session_ref: session_ref.to_owned() });
            }
        }
    }

    /// The answer to a guidance re-read: each held task takes the guidance its fresh copy
    /// carries; a failed read changes nothing (the next `inbox_changed` reads again).
    pub(super) fn guidance_read(&mut self, key: &str, result: Result<RuntimeAnswer, CallError>) {
        let Ok(RuntimeAnswer::InboxPending { tasks, .. }) = result else { return };
        let Some(status) = self.scopes.get_mut(key) else { return };
        let mut changed = false;
        for held in &mut status.wake_tasks {
            let fresh = tasks.iter().find(|t| t.task_id == held.task_id).and_then(|t| t.guidance.clone());
            if fresh.is_some() && fresh != held.guidance {
                held.guidance = fresh;
                changed = true;
            }
        }
        if changed {
            self.persist();
        }
    }
}
