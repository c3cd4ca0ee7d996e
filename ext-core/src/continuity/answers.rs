//! Answers to the composition's runtime calls: each call's [`Purpose`] says what its
//! answer feeds (held settles, inbox checks, acks, counts, Check Herdr, the judge), and a
//! call that will never be answered (offline, link lost) is answered here with `offline`.
//!
//! Invariant: an `inbox.ack` that failed as a whole is kept due and sent again (I4).

use super::*;

impl Continuity {
    /// A call that will never be answered normally.
    pub(super) fn abandon(&mut self, now: Millis, purpose: Purpose, why: &str) {
        let error =
            CallError { code: ErrorCode::Offline, message: crate::text::concat(&[why, "; the extension retries when it reconnects"]) };
        self.answered(now, purpose, Err(error));
    }

    pub(super) fn answered(&mut self, now: Millis, purpose: Purpose, result: Result<RuntimeAnswer, CallError>) {
        match (purpose, result) {
            (Purpose::Subscribe, _) => {}
            (Purpose::ChatsReport, result) => self.chats_answered(&result),
            (Purpose::Profiles, Ok(RuntimeAnswer::Profiles(files))) => self.emit(ContinuityOutput::CompanionProfiles(files)),
            // An older companion has no profile files; any other failure keeps the last answer.
            (Purpose::Profiles, Err(error)) if error.code == ErrorCode::UnknownMethod => {
                self.emit(ContinuityOutput::CompanionProfiles(crate::sites::overrides::CompanionFiles::default()));
            }
            (Purpose::Profiles, _) => {}
            (Purpose::Handoff { key, resolve }, result) => self.handoff_answered(now, &key, resolve, result),
            (Purpose::Catalog, _) if std::mem::take(&mut self.catalog_reread) => {
                self.call(Purpose::Catalog, RuntimeCall::Workspaces);
            }
            (Purpose::Catalog, Ok(RuntimeAnswer::Workspaces { workspaces })) => {
                self.catalog_error = None;
                self.catalog = workspaces.clone();
                self.bindings.handle(now, BindingInput::CatalogRefreshed { workspaces });
                self.drain_bindings();
            }
            (Purpose::Catalog, Err(error)) => self.catalog_error = Some(error.message),
            (Purpose::Catalog, Ok(_)) => {}
            (Purpose::WakeTasks { scope_key, settle }, result) => {
                let result = result.map(|answer| match answer {
                    RuntimeAnswer::InboxPending { tasks, more } => {
                        RuntimeAnswer::InboxPending { tasks: self.unconfirmed(&scope_key, tasks), more }
                    }
                    other => other,
                });
                if let Some(status) = self.scopes.get_mut(&scope_key) {
                    status.settle_awaiting_tasks = None;
                    let incomplete = match result {
                        Ok(RuntimeAnswer::InboxPending { tasks, more }) => {
                            // The rest is read once this wake is confirmed and acked (paging).
                            status.inbox_missing = false;
                            status.wake_tasks = tasks;
                            more
                        }
                        Err(error) if error.code == ErrorCode::UnknownMethod => {
                            status.inbox_missing = true;
                            status.wake_tasks.clear();
                            false
                        }
                        _ => {
                            // The wake goes without task facts; its tasks stay unacked and
                            // an inbox check picks them up once the scope is quiet.
                            status.wake_tasks.clear();
                            true
                        }
                    };
                    if incomplete {
                        let because = crate::inbox_checks::DueBecause::SettleReadIncomplete;
                        self.inbox_check(crate::inbox_checks::InboxCheckInput::Due { key: scope_key.clone(), because });
                    }
                }
                self.feed_settle(now, &scope_key, settle);
            }
            (Purpose::InboxCheck { scope_key }, result) => self.inbox_checked(scope_key, result),
            (Purpose::GuidanceRead { scope_key }, result) => self.guidance_read(&scope_key, result),
            (Purpose::Ack { scope_key, task_ids }, result) => {
                let retry_later = !ack_settled(&result);
                if let Some(status) = self.scopes.get_mut(&scope_key) {
                    if !retry_later {
                        // The runtime answers every id (acked, already acked, unknown,
                        // forbidden, not terminal): nothing is left to send for them.
                        status.ack_due.retain(|id| !task_ids.contains(id));
                        self.outputs.push_back(ContinuityOutput::Persist);
                    }
                    status.apply_counts(&result);
                }
            }
            (Purpose::OrphanAck { session_ref, task_ids }, result) => {
                let retry_later = !ack_settled(&result);
                if !retry_later {
                    if let Some(due) = self.orphan_acks.get_mut(&session_ref) {
                        due.retain(|id| !task_ids.contains(id));
                        if due.is_empty() {
                            self.orphan_acks.remove(&session_ref);
                        }
                    }
                    self.persist();
                }
            }
            (Purpose::Counts { scope_key }, result) => {
                if let Some(status) = self.scopes.get_mut(&scope_key) {
                    status.apply_counts(&result);
                }
            }
            (Purpose::CheckPanes { tab, run }, result) => self.check_panes_answered(now, tab, run, result),
            (Purpose::CheckRead { tab, run, pane_id }, result) => self.check_read_answered(now, tab, run, pane_id, result),
            (Purpose::Judge { tab }, result) => self.judge_answered(tab, result),
            (Purpose::SemanticJudge { conversation, fingerprint, tab }, result) => {
                self.semantic_answered(now, &conversation, fingerprint, tab, result);
            }
            (Purpose::Bridge { tab, pressed, conversation, ask }, result) => {
                self.bridge_answered(now, tab, pressed, &conversation, ask, result)
            }
            (Purpose::BridgeDecide { tab, batch_id, call, decision }, result) => {
                self.bridge_decided(tab, &batch_id, call, decision, result)
            }
            (Purpose::BridgePrompt { tab }, result) => self.bridge_prompt_answered(tab, result),
            // The runtime's record only; a lost one is sent again with the next replay's answer.
            (Purpose::BridgeDelivered, _) => {}
            (Purpose::Journal { key }, result) => self.journal_answered(now, key, result),
            (Purpose::GoalSet { key, clear, home }, result) => self.goal_set_answered(&key, clear, home, result),
            (Purpose::GoalProbe { key, turn }, result) => self.goal_probe_answered(now, &key, turn, result),
            (Purpose::GoalEvidence { key, turn }, result) => self.goal_evidence_answered(now, &key, turn, result),
            (Purpose::GoalPriors { key, turn }, result) => self.goal_priors_answered(now, &key, turn, result),
        }
    }
}

impl ScopeStatus {
    /// The inbox counters an `inbox.ack` / `inbox.counts` answer carries; an old runtime
    /// without the inbox marks it missing.
    fn apply_counts(&mut self, result: &Result<RuntimeAnswer, CallError>) {
        match result {
            Ok(RuntimeAnswer::Counts { counts }) => {
                self.counts = Some(*counts);
                self.inbox_missing = false;
            }
            Err(error) if error.code == ErrorCode::UnknownMethod => self.inbox_missing = true,
            _ => {}
        }
    }
}

/// Whether an `inbox.ack` answer settles its ids: any answer does (the runtime decides each
/// id), and so does a runtime without an inbox; a call that failed as a whole (offline,
/// `not_ready`, `inbox_unavailable`, a timeout, a bad request) is retried on the next
/// link-up or confirmation (I4: acks are retried until answered).
fn ack_settled(result: &Result<RuntimeAnswer, CallError>) -> bool {
    match result {
        Ok(_) => true,
        Err(error) => error.code == ErrorCode::UnknownMethod,
    }
}
