//! The bindings' and the settle tracker's outputs, routed to the scopes they concern (the
//! continuity router's half that reads the leaf machines' `poll()`s): a binding made or
//! gone opens or closes its scope's scheduler and subscriptions, and a settle reaches the
//! scheduler of every scope bound to its workspace.

use super::*;
use crate::inbox_checks::{DueBecause, InboxCheckInput};

impl Continuity {
    pub(super) fn drain_bindings(&mut self) {
        while let Some(output) = self.bindings.poll() {
            match output {
                BindingOutput::Bound { scope, .. } | BindingOutput::PendingMigrated { scope, .. } => {
                    // A new binding starts with fresh per-scope state; acks still due from
                    // the previous binding of this scope are kept by session ref.
                    self.keep_orphan_acks(&scope);
                    let status = self.scopes.entry(scope.key()).or_default();
                    *status = ScopeStatus::default();
                    // Existing results of this chat are read once the new binding is quiet.
                    self.inbox_check(InboxCheckInput::Due { key: scope.key(), because: DueBecause::Bound });
                    if self.link_up {
                        self.call(
                            Purpose::Counts { scope_key: scope.key() },
                            RuntimeCall::InboxCounts { session_ref: browser_session_ref(&scope) },
                        );
                    }
                }
                BindingOutput::Unbound { scope, .. } => {
                    self.keep_orphan_acks(&scope);
                    self.scopes.remove(&scope.key());
                    self.inbox_check(InboxCheckInput::Unbound { key: scope.key() });
                    self.app_hold_end(&scope.key());
                    let bindings = &self.bindings;
                    self.pane_outputs.retain(|_, o| bindings.scopes_bound_to(&o.workspace_id).next().is_some());
                }
                _ => {}
            }
            self.persist();
        }
    }

    pub(super) fn drain_tracker(&mut self, now: Millis) {
        while let Some(output) = self.tracker.poll() {
            match &output {
                SettleOutput::Resubscribe { .. } => {
                    // The shell reopens the stream on the next LinkUp.
                }
                SettleOutput::ScopeWorking { workspace_id, .. } | SettleOutput::PartialSettle { workspace_id, .. } => {
                    if matches!(output, SettleOutput::ScopeWorking { .. }) {
                        // A new episode: output seen so far is not progress of it.
                        for pane in self.pane_outputs.values_mut().filter(|o| &o.workspace_id == workspace_id) {
                            pane.baseline = pane.tail.clone();
                        }
                        // A settle still waiting for its inbox read is no longer the truth:
                        // drop it so it never wakes the page while the workspace works (P7,
                        // P8; regression found by continuity_props (b)).
                        self.calls.retain(|_, purpose| {
                            !matches!(purpose, Purpose::WakeTasks { settle: SettleOutput::ScopeSettled { workspace_id: held, .. }, .. } if held == workspace_id)
                        });
                        for key in self.keys_bound_to(workspace_id) {
                            if let Some(status) = self.scopes.get_mut(&key) {
                                status.settle_awaiting_tasks = None;
                            }
                        }
                    }
                    let keys = self.keys_bound_to(workspace_id);
                    for key in keys {
                        self.feed_settle(now, &key, output.clone());
                    }
                }
                SettleOutput::ScopeSettled { workspace_id, .. } => {
                    let keys = self.keys_bound_to(workspace_id);
                    for key in keys {
                        let Some(session_ref) = self.bindings.list().find(|b| b.scope.key() == key).map(|b| browser_session_ref(&b.scope))
                        else {
                            continue;
                        };
                        if let Some(status) = self.scopes.get_mut(&key) {
                            status.settle_awaiting_tasks = Some(output.clone());
                            status.settled_once = true;
                            // This settle's inbox read replaces a due inbox check.
                            self.inbox_check(InboxCheckInput::SettleRead { key: key.clone() });
                        }
                        // Progress stops now, before the inbox read (P8).
                        if let Some(scheduler) = self.scopes.get_mut(&key).and_then(|s| s.scheduler.as_mut()) {
                            scheduler.handle(now, SchedulerInput::SettleSeen);
                        }
                        self.drain_scheduler(now, &key);
                        // Read the scope's own inbox first so the wake carries its task
                        // facts (I2, I3); the settle is handed on when the answer comes.
                        self.call(
                            Purpose::WakeTasks { scope_key: key.clone(), settle: output.clone() },
                            RuntimeCall::InboxPending { session_ref },
                        );
                    }
                }
                SettleOutput::GenerationChanged { .. } | SettleOutput::StaleGenerationRejected { .. } => {}
            }
        }
    }

    pub(super) fn keys_bound_to(&self, workspace_id: &str) -> Vec<String> {
        self.bindings.scopes_bound_to(workspace_id).map(Scope::key).collect()
    }

    pub(super) fn feed_settle(&mut self, now: Millis, key: &str, signal: SettleOutput) {
        if let Some(scheduler) = self.scopes.get_mut(key).and_then(|s| s.scheduler.as_mut()) {
            scheduler.handle(now, SchedulerInput::Settle(signal));
            self.drain_scheduler(now, key);
        }
    }
}
