//! The composition's persisted state: the [`Snapshot`] it writes and is restored from
//! (B7), and the readers and writers of its own persisted parts ([`ScopeStatus`] and what
//! it holds, the inbox items and counts, [`PaneOutput`]); `crate::json_read` explains the
//! shapes. Release 0.1.0's delivery in flight is read, never written.

use super::*;

impl Continuity {
    /// What to persist (B7): the explicit, versioned [`Snapshot`].
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            version: SNAPSHOT_VERSION,
            bindings: self.bindings.clone(),
            auto: self.auto.clone(),
            tracker: self.tracker.clone(),
            scopes: self.scopes.clone(),
            language: self.language,
            ledger: self.ledger.clone(),
            catalog: self.catalog.clone(),
            progress: self.progress,
            pane_outputs: self.pane_outputs.clone(),
            confirmed_tasks: self.confirmed_tasks.clone(),
            orphan_acks: self.orphan_acks.clone(),
            queue: self.queue.durable.clone(),
            semantic: self.semantic.autos.clone(),
            recovery: self.recovery.planners.clone(),
            cards: self.cards.ledger.clone(),
            withheld_marks: self.withheld_marks.clone(),
            journal: self.journal.book.clone(),
            handoff: self.handoff.persisted(),
            pacer: self.pacer.pacer.clone(),
            goals: self.goal_texts(),
            goal_counts: self.goal_counts(),
            inbox_checks: self.inbox_checks.persisted(),
            bridge: self.bridge.book.clone(),
            recovery_notices: self.recovery.notices.clone(),
        }
    }

    /// The text of [`Self::snapshot`] to store (B7); see [`Self::snapshot_value`].
    pub fn snapshot_json(&self) -> Result<String, crate::snapshot::SnapshotError> {
        Ok(self.snapshot_value().to_string())
    }

    /// [`Self::snapshot`] as the JSON to store (B7), written from the machines' state in
    /// place (no clone of it first).
    pub fn snapshot_value(&self) -> serde_json::Value {
        crate::snapshot::SnapshotRef {
            version: SNAPSHOT_VERSION,
            bindings: &self.bindings,
            auto: &self.auto,
            tracker: &self.tracker,
            scopes: &self.scopes,
            language: self.language,
            ledger: &self.ledger,
            catalog: &self.catalog,
            progress: self.progress,
            pane_outputs: &self.pane_outputs,
            confirmed_tasks: &self.confirmed_tasks,
            orphan_acks: &self.orphan_acks,
            queue: &self.queue.durable,
            semantic: &self.semantic.autos,
            recovery: &self.recovery.planners,
            cards: &self.cards.ledger,
            withheld_marks: &self.withheld_marks,
            journal: &self.journal.book,
            handoff: &self.handoff,
            pacer: &self.pacer.pacer,
            goals: &self.goal_texts(),
            goal_counts: &self.goal_counts(),
            inbox_checks: &self.inbox_checks,
            bridge: &self.bridge.book,
            recovery_notices: &self.recovery.notices,
        }
        .to_value()
    }

    /// The machine of a restored snapshot (worker start), in a new worker life; `epoch` is
    /// fresh randomness from the shell, kept only when the snapshot had none (an older
    /// release's) so delivery ids stay unique.
    // Fields assigned to a fresh machine rather than `Self { .., ..Self::default() }`: that
    // form builds every default field inline in each constructor (Cargo.toml's size log).
    pub fn from_snapshot(snapshot: Snapshot, now: Millis, epoch: &str) -> Self {
        // Its ledger is replaced below; the defaults are built in `with_epoch` only.
        let mut machine = Self::with_epoch(epoch);
        machine.bindings = snapshot.bindings;
        machine.auto = snapshot.auto;
        machine.tracker = snapshot.tracker;
        machine.scopes = snapshot.scopes;
        machine.language = snapshot.language;
        machine.ledger = snapshot.ledger;
        machine.catalog = snapshot.catalog;
        machine.progress = snapshot.progress;
        machine.pane_outputs = snapshot.pane_outputs;
        machine.confirmed_tasks = snapshot.confirmed_tasks;
        machine.orphan_acks = snapshot.orphan_acks;
        machine.queue = queue::QueueFlow::with_durable(snapshot.queue);
        machine.semantic = semantic::SemanticFlow::with_autos(snapshot.semantic);
        machine.restore_goals(snapshot.goals, snapshot.goal_counts, now);
        machine.recovery = recovery::RecoveryFlow::with_planners(snapshot.recovery, snapshot.recovery_notices);
        machine.cards = cards::CardFlow::with_ledger(snapshot.cards);
        machine.withheld_marks = snapshot.withheld_marks;
        machine.journal = journal::JournalFlow::with_book(snapshot.journal);
        machine.handoff = snapshot.handoff;
        machine.pacer.pacer = snapshot.pacer;
        machine.inbox_checks = snapshot.inbox_checks;
        machine.bridge_restore(snapshot.bridge);
        machine.restored(now, epoch);
        machine
    }

    /// A fresh machine (nothing bound) whose delivery ids use `epoch` (fresh randomness from
    /// the shell).
    #[allow(clippy::field_reassign_with_default)] // See `from_snapshot`.
    pub fn with_epoch(epoch: &str) -> Self {
        let mut machine = Self::default();
        machine.ledger = DeliveryLedger::new(epoch);
        machine
    }

    /// After a restore, before any input: a new ledger life (ids stay unique), deliveries
    /// the old worker was waiting for become uncertain, and a delivery saved by the previous
    /// release joins the ledger.
    fn restored(&mut self, now: Millis, epoch: &str) {
        self.ledger.ensure_epoch(epoch);
        // An earlier release kept the due inbox checks in the scopes' state.
        for (key, status) in self.scopes.iter_mut() {
            if std::mem::take(&mut status.legacy_inbox_check_due) {
                self.inbox_checks.restore_due(key.clone());
            }
        }
        let legacy: Vec<(String, LegacyInFlight)> =
            self.scopes.iter_mut().filter_map(|(key, s)| s.legacy_in_flight.take().map(|d| (key.clone(), d))).collect();
        for (scope_key, old) in legacy {
            self.ledger.adopt(Delivery {
                id: old.id,
                scope_key,
                kind: old.kind,
                task_ids: old.task_ids,
                tab: old.tab,
                conversation: None,
                baseline: Baseline::default(),
                posted_at: old.at,
                state: DeliveryState::Uncertain { since: now, why: "restarted".to_owned() },
                app: None,
                message: None,
                page_idle: false,
                left_in_composer: false,
            });
        }
        // The message an earlier release kept in the scheduler joins its delivery, so the
        // delivery's answer names it (a wake not sent becomes pending again, a confirmed
        // summary is remembered as sent). Without a delivery of the scope it is dropped.
        let carried: Vec<(String, InFlight)> = self
            .scopes
            .iter_mut()
            .filter_map(|(key, s)| s.scheduler.as_mut().and_then(WakeScheduler::take_legacy_in_flight).map(|m| (key.clone(), m)))
            .collect();
        for (scope_key, message) in carried {
            let id = self.ledger.active_for(&scope_key).filter(|d| d.message.is_none()).map(|d| d.id.clone());
            if let Some(id) = id {
                self.ledger.carry(&id, message);
            }
        }
        self.ledger.restored(now);
        self.queue_restored();
        self.semantic_restored();
    }
}
