//! Schedulers and deliveries: one [`WakeScheduler`] per binding, fed the binding, Auto and
//! the target page's facts; what a scheduler offers is handed to the [`DeliveryLedger`],
//! and what the ledger resolves is applied back (counts, acks, retries).
//!
//! Invariants: nothing reaches a page except through the ledger; a retry follows only a
//! delivery that certainly did not land; an abandoned one is never retyped.

use super::*;

impl Continuity {
    /// Hands a message to the ledger (the only way anything is typed into a page). Only a
    /// manual Continue counts as the user's own (see [`Self::post_delivery_as`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn post_delivery(
        &mut self,
        now: Millis,
        key: &str,
        tab: TabId,
        kind: DeliveryKind,
        subject: &str,
        body: &str,
        task_ids: Vec<String>,
    ) -> Result<String, BeginRefused> {
        self.post_delivery_as(now, key, tab, kind, subject, body, task_ids, kind == DeliveryKind::Continue, None)
    }

    /// [`Self::post_delivery`]; `manual`: the user pressed for it, so a rate-limit cooldown
    /// does not hold it (the HUD shows the cooldown); anything automatic waits for its end.
    /// `message`: the scheduler's record of what it offered, kept with the delivery.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn post_delivery_as(
        &mut self,
        now: Millis,
        key: &str,
        tab: TabId,
        kind: DeliveryKind,
        subject: &str,
        body: &str,
        task_ids: Vec<String>,
        manual: bool,
        message: Option<InFlight>,
    ) -> Result<String, BeginRefused> {
        if !manual && self.rate_block_tab(tab).is_some() {
            return Err(BeginRefused::RateLimited);
        }
        // The chat's App rides on every message; while it cannot (ambiguous, or its last
        // attach failed and the wait runs) nothing of the scope is typed.
        if self.app_block(key).is_some() {
            return Err(BeginRefused::AppHeld);
        }
        let app = match self.app_need(key) {
            AppNeed::App(app) => Some(app.clone()),
            AppNeed::None | AppNeed::Ambiguous => None,
        };
        let page = self.pages.get(&tab).cloned().unwrap_or_default();
        // Every message names its chat (fail closed without one).
        let Some(scope) = Scope::from_key(key.strip_prefix("handoff:").unwrap_or(key)) else { return Err(BeginRefused::NoSessionRef) };
        // A seed into a new conversation outside a Project: that chat has no id, so no
        // ref, until ChatGPT or z.ai gives it one (the cut-over's next message names it).
        let session_ref = match (&scope, kind) {
            (Scope::Conversation { .. }, DeliveryKind::HandoffSeed) => None,
            _ => Some(browser_session_ref(&scope)),
        };
        let result = self.ledger.begin(now, key, session_ref.as_deref(), kind, subject, body, task_ids.clone(), tab, &page, app);
        if let (Ok(id), Some(message)) = (&result, message) {
            self.ledger.carry(id, message);
        }
        if let Ok(id) = &result {
            let message = recovery::SentMessage { id: id.clone(), kind, subject: subject.to_owned(), body: body.to_owned(), task_ids };
            self.recovery_sent(key, message);
        }
        self.drain_ledger(now);
        self.persist();
        result
    }

    /// Carries out the ledger's decisions.
    pub(super) fn drain_ledger(&mut self, now: Millis) {
        while let Some(output) = self.ledger.poll() {
            match output {
                // Every kind leaves only after the snapshot naming it is written (the shell's
                // contract for `Deliver`: durable first).
                LedgerOutput::Post { tab, id, text, app } => self.emit(ContinuityOutput::Deliver { tab, id, text, app }),
                LedgerOutput::Clear { tab, id } => self.emit(ContinuityOutput::ClearComposer { tab, id }),
                LedgerOutput::Resolved { delivery, resolution } => self.delivery_resolved(now, delivery, &resolution),
            }
            self.persist();
        }
    }

    /// The tab showing a binding's delivery target (lowest tab id when several do).
    pub(super) fn target_tab(&self, key: &str) -> Option<TabId> {
        let binding = self.bindings.list().find(|b| b.scope.key() == key)?;
        let target = binding.delivery_target()?;
        self.pages.iter().find(|(_, report)| classify_url(&report.url).conversation().as_ref() == Some(&target)).map(|(tab, _)| *tab)
    }

    /// Keeps one scheduler per binding and feeds it the binding, Auto and page facts.
    pub(super) fn sync_schedulers(&mut self, now: Millis) {
        let bound: Vec<(String, String, bool, AutoState)> = self
            .bindings
            .list()
            .map(|b| (b.scope.key(), b.workspace_id.clone(), b.active_conv_key.is_some(), self.auto.state(&b.scope)))
            .collect();
        let keys: VecSet<String> = bound.iter().map(|(k, ..)| k.clone()).collect();
        let gone: Vec<String> = self.scopes.keys().filter(|k| !keys.contains(*k)).cloned().collect();
        for key in gone {
            self.scopes.remove(&key);
            self.inbox_check(crate::inbox_checks::InboxCheckInput::Unbound { key });
        }
        for (key, workspace_id, has_target, auto) in bound {
            // A manual Continue or a queued batch of the user awaiting its answer (the
            // user's next turn goes first, Q2), or our own unsent text still in the composer
            // (the ledger clears it first), is another delivery in flight: the scheduler must
            // not post a second one (regressions found by continuity_props (e)).
            // The ledger is the only record of a message in flight: the scheduler's own
            // too, so any delivery of the scope holds the next one.
            let in_flight = self.ledger.active_for(&key).is_some();
            let facts = self
                .target_tab(&key)
                .and_then(|tab| self.pages.get(&tab))
                .map(|r| PageFacts {
                    composer_present: r.composer,
                    facts_resolved: r.unresolved.is_none(),
                    generating: r.generating,
                    permission_card: r.permission_card,
                    human_draft: r.draft,
                    app_held: None,
                    rate_limited: false,
                    delivery_in_flight: r.composer_marker.is_some(),
                })
                .unwrap_or_default();
            let facts = PageFacts {
                app_held: self.app_block(&key),
                rate_limited: self.rate_block(&key).is_some(),
                delivery_in_flight: facts.delivery_in_flight || in_flight,
                ..facts
            };
            let (language, progress) = (self.language, self.progress);
            // X2: the source's automatic wakes pause while its handoff is in flight.
            let in_progress = self.handoff_in_flight(&key);
            let status = self.scopes.entry(key.clone()).or_default();
            let scheduler = status.scheduler.get_or_insert_with(|| WakeScheduler::new(progress, language));
            scheduler.handle(now, SchedulerInput::BindingChanged { workspace_id: Some(workspace_id), has_delivery_target: has_target });
            scheduler.handle(now, SchedulerInput::AutoChanged { auto });
            scheduler.handle(now, SchedulerInput::Handoff { in_progress });
            scheduler.handle(now, SchedulerInput::Page(facts));
            self.drain_scheduler(now, &key);
        }
    }

    pub(super) fn drain_scheduler(&mut self, now: Millis, key: &str) {
        while let Some(output) = self.scopes.get_mut(key).and_then(|s| s.scheduler.as_mut()).and_then(WakeScheduler::poll) {
            match output {
                SchedulerOutput::Deliver { kind, text } => self.scheduler_delivery(now, key, kind, text),
                SchedulerOutput::CheckSummary { workspace_id } => {
                    // Derived from the stream's `agent_output` tails (P4); `None` when no
                    // pane printed anything new this episode.
                    let summary = progress_summary(&workspace_id, &self.pane_outputs);
                    if let Some(scheduler) = self.scopes.get_mut(key).and_then(|s| s.scheduler.as_mut()) {
                        scheduler.handle(now, SchedulerInput::SummaryChecked { summary });
                    }
                }
                SchedulerOutput::WithheldChanged { .. } => {}
            }
            self.persist();
        }
        self.activity_withheld_check(key);
    }

    pub(super) fn scheduler_delivery(&mut self, now: Millis, key: &str, kind: MessageKind, text: String) {
        let message = InFlight::of(&kind);
        let Some(tab) = self.target_tab(key) else {
            // The gate said the composer is present, so a tab exists; if not, fail fast.
            if let Some(scheduler) = self.scopes.get_mut(key).and_then(|s| s.scheduler.as_mut()) {
                scheduler.handle(now, SchedulerInput::DeliveryFailed { message: Some(message) });
            }
            return;
        };
        let language = self.language;
        let workspace = self.bindings.list().find(|b| b.scope.key() == key).map(|b| b.workspace_id.clone()).unwrap_or_default();
        // The relayed agent output of a message goes inside a data fence whose nonce is
        // derived from the id this message gets (PROTOCOL.md "Fenced data").
        let (subject, body, delivery_kind, task_ids) = match &kind {
            MessageKind::Wake { .. } | MessageKind::Inbox { .. } => {
                let status = self.scopes.get(key);
                let tasks = self.unconfirmed(key, status.map(|s| s.wake_tasks.clone()).unwrap_or_default());
                let inbox_missing = status.is_some_and(|s| s.inbox_missing);
                let subject = match &kind {
                    MessageKind::Wake { wake_id, .. } => activity::wake_stem(&workspace, wake_id.seq),
                    MessageKind::Inbox { key: first_task } => inbox_delivery_id(&workspace, first_task),
                    MessageKind::Progress { .. } | MessageKind::Fallback { .. } => String::new(),
                };
                let nonce = self.fence_nonce(&self.ledger.next_id(&subject));
                let body = crate::text::concat(&[&text, &task_facts(language, &tasks, inbox_missing, &nonce)]);
                let ids = tasks.iter().map(|t| t.task_id.clone()).collect();
                (subject, body, DeliveryKind::Wake, ids)
            }
            MessageKind::Progress { .. } | MessageKind::Fallback { .. } => {
                let subject = crate::text::concat(&["progress:", &workspace]);
                let nonce = self.fence_nonce(&self.ledger.next_id(&subject));
                let body = match &kind {
                    MessageKind::Progress { summary } => crate::wake::progress_text(language, &workspace, summary, &nonce),
                    _ => text,
                };
                (subject, body, DeliveryKind::Progress, Vec::new())
            }
        };
        let reason = match kind {
            MessageKind::Wake { .. } => "settled",
            MessageKind::Inbox { .. } => "inbox_results",
            MessageKind::Progress { .. } => "new_output",
            MessageKind::Fallback { .. } => "quiet_fallback",
        };
        match self.post_delivery_as(now, key, tab, delivery_kind, &subject, &body, task_ids, false, Some(message.clone())) {
            Ok(id) => self.activity_sent(key, delivery_kind, reason, &id),
            Err(refused) => {
                // Held for its App: pending again, not a failed attempt (the reason keeps the
                // scheduler from offering it again at once).
                let message = Some(message);
                let input = match (refused, self.app_block(key)) {
                    (BeginRefused::AppHeld, Some(reason)) => SchedulerInput::DeliveryHeld { reason, message },
                    (BeginRefused::RateLimited, _) => SchedulerInput::DeliveryHeld { reason: WakeWithheld::RateLimited, message },
                    _ => SchedulerInput::DeliveryFailed { message },
                };
                if let Some(scheduler) = self.scopes.get_mut(key).and_then(|s| s.scheduler.as_mut()) {
                    scheduler.handle(now, input);
                }
            }
        }
    }

    /// Applies how a delivery ended: a confirmed one counts, acks its tasks (I4) and tells
    /// its scheduler; one that certainly did not land lets the scheduler offer it again; an
    /// abandoned one is not offered again (it may have landed) and the page says so.
    pub(super) fn delivery_resolved(&mut self, now: Millis, delivery: Delivery, resolution: &Resolution) {
        self.activity_resolved(&delivery, resolution);
        if delivery.kind == DeliveryKind::Continue {
            self.continue_not_sent(&delivery, resolution);
        }
        if *resolution == Resolution::Confirmed {
            self.app_landed(&delivery.scope_key);
        }
        // Whatever it carried, it never reached the page: the HUD says why.
        if matches!(resolution, Resolution::NotSent { reason } if reason == STATE_NOT_SAVED) {
            self.notice(delivery.tab, Say::new("deliveryNotSaved", vec![]), NoticeTone::Bad);
        }
        if delivery.kind == DeliveryKind::HandoffSeed {
            return self.handoff_seed_resolved(now, &delivery, resolution);
        }
        if delivery.kind == DeliveryKind::Queue {
            return self.queue_resolved(now, &delivery, resolution);
        }
        if delivery.kind == DeliveryKind::JudgeContinue {
            self.semantic_resolved(&delivery, resolution);
        }
        if delivery.kind == DeliveryKind::BridgeResults {
            self.bridge_resolved(&delivery, resolution);
        }
        let key = delivery.scope_key.clone();
        let confirmed = *resolution == Resolution::Confirmed;
        if confirmed {
            self.remember_confirmed(&key, delivery.task_ids.clone());
        }
        if *resolution == Resolution::Abandoned {
            self.notice(delivery.tab, Say::new("deliveryAbandoned", vec![]), NoticeTone::Bad);
        }
        let app_reason = self.app_block(&key);
        if !self.scopes.contains_key(&key) {
            if confirmed {
                self.ack_orphaned_delivery(&key, &delivery.task_ids);
            }
            return;
        }
        let scheduled = matches!(delivery.kind, DeliveryKind::Wake | DeliveryKind::Progress);
        // Its tasks are still unacknowledged in the durable inbox: read them again once the
        // scope is quiet (the inbox is the truth, I2/I4), instead of retyping this message
        // blindly — an abandoned delivery, or a wake whose record names no message (saved
        // by an earlier release, or a resend) that cannot be offered again.
        let abandoned = *resolution == Resolution::Abandoned;
        let unofferable = scheduled && delivery.message.is_none() && !confirmed;
        if (abandoned || unofferable) && !delivery.task_ids.is_empty() {
            let because = crate::inbox_checks::DueBecause::WakeEndedWithTasks;
            self.inbox_check(crate::inbox_checks::InboxCheckInput::Due { key: key.clone(), because });
        }
        let Some(status) = self.scopes.get_mut(&key) else { return };
        if confirmed {
            if delivery.kind == DeliveryKind::Wake {
                status.wake_count = status.wake_count.saturating_add(1);
                // A settle wake waiting behind this one keeps the tasks this one did not carry.
                status.wake_tasks.retain(|t| !delivery.task_ids.contains(&t.task_id));
            }
            if delivery.kind == DeliveryKind::Progress {
                status.progress_count = status.progress_count.saturating_add(1);
            } else {
                status.last_wake = Some(LastWake { at: now, kind: delivery.kind, id: delivery.id.clone() });
            }
            for id in &delivery.task_ids {
                if !status.ack_due.contains(id) {
                    status.ack_due.push(id.clone());
                }
            }
        }
        if let Some(scheduler) = status.scheduler.as_mut().filter(|_| scheduled) {
            // Held for its App: pending again, not a failed attempt (it goes once attaching
            // works, its exactly-once kept).
            let message = delivery.message.clone();
            let input = if resolution.app_not_attached() {
                SchedulerInput::DeliveryHeld { reason: app_reason.unwrap_or(WakeWithheld::AppNotAttached), message }
            } else if resolution.retryable() {
                SchedulerInput::DeliveryFailed { message }
            } else {
                SchedulerInput::DeliveryConfirmed { message }
            };
            scheduler.handle(now, input);
        }
        if confirmed && !delivery.task_ids.is_empty() {
            self.send_due_acks(&key);
        }
        self.drain_scheduler(now, &key);
    }
}
