//! Automatic rollover in the continuity loop (SPEC R2, S7, H6): a Project conversation whose
//! context pressure reached the `auto` level, or whose recovery budgets are spent (the
//! planner of `continuity/recovery` recommends a new conversation: the page cannot be
//! recovered in place), hands itself over to a new conversation of its Project,
//! through the same transfer as the HUD's Handoff button ([`Continuity::handoff_start`]), when
//! every other condition of [`crate::rollover::check`] holds.
//!
//! The facts are read after every input and timer (only for tabs whose pressure is at `auto`
//! or above or whose recovery is spent, so most inputs cost one walk of a small map): the page's own report (streaming,
//! permission card, human draft, our text left in the composer), the Project's Auto, whether
//! the bound workspace works, deliveries on their way or uncertain, the journal's outbox, a transfer in
//! flight, and whether the page is the Project's active target. A conversation that started
//! one is remembered in the handoff's book (persisted): it never starts a second one, even
//! when its transfer failed; the user's Handoff button still works. The HUD names the first
//! condition that holds a rollover back (`rollover` of the page view).
//!
//! Invariants (tests in `tests/it/continuity_rollover.rs`):
//! - a rollover starts only when every R2 condition holds, and at most once per conversation;
//! - a stale source tab (not the Project's active target) never starts one.

use super::*;
use crate::context_pressure::PressureLevel;
use crate::rollover::{check, RolloverFacts};

impl Continuity {
    /// The conversation `tab` shows, its scope's key and its R2 facts; `None` off a
    /// conversation and below the `auto` pressure level (checked first: the HUD's view asks
    /// for every tab at every change).
    fn rollover_facts(&self, tab: TabId) -> Option<(String, String, RolloverFacts)> {
        let level = self.pressure_line(tab).map(|p| p.level);
        let recovery_spent = self.recovery_spent(tab);
        if !recovery_spent && level.is_none_or(|l| l < PressureLevel::Auto) {
            return None;
        }
        let report = self.pages.get(&tab)?;
        let page = classify_url(&report.url);
        let conversation = page.conversation()?.conversation_id;
        let scope = page.scope()?;
        let key = scope.key();
        let binding = self.bindings.binding_for(&scope);
        let active_target = match binding {
            Some(b) => b.active_conv_key.as_deref() == Some(conversation.as_str()),
            None => self.handoff.retired.get(&key) != Some(&conversation),
        };
        let facts = RolloverFacts {
            level,
            project: matches!(page, PageKind::ProjectChat { .. }),
            auto_on: self.auto.state(&scope) == AutoState::On,
            workspace_working: binding.is_some_and(|b| self.tracker.is_working(&b.workspace_id)),
            // ChatGPT shows its stop button while a tool runs: the page reports both as
            // `generating`. The adapter carrying out one of our deliveries is busy too.
            streaming: report.generating,
            tool_running: report.delivering.is_some(),
            permission_card: report.permission_card,
            human_draft: report.draft,
            // Ours left in the composer, any delivery whose fate is open, and one of this
            // scope on its way (the Handoff refuses to start over it: Q9).
            delivery_uncertain: report.composer_marker.is_some()
                || self.ledger.active().any(|d| d.scope_key == key || matches!(d.state, DeliveryState::Uncertain { .. })),
            journal_behind: self.journal_behind(&conversation),
            handoff_in_flight: self.handoff_in_flight(&key),
            active_target,
            recovery_spent,
        };
        Some((conversation, key, facts))
    }

    /// After each input: the tabs at the `auto` level whose conversation may roll over now
    /// start their transfer.
    pub(super) fn rollover_due(&mut self) {
        let mut tabs = self.journal_tabs_at(PressureLevel::Auto);
        for tab in self.recovery_spent_tabs() {
            if !tabs.contains(&tab) {
                tabs.push(tab);
            }
        }
        for tab in tabs {
            let Some((conversation, key, facts)) = self.rollover_facts(tab) else { continue };
            if self.handoff.rollovers.try_start(&conversation, &facts).is_ok() {
                let why = if facts.recovery_spent { "recovery_spent" } else { "rollover_started" };
                self.record_activity(&key, ActivityKind::Handoff, ActivityOutcome::Sent, ActivityReason::Code(why), None);
                self.handoff_start(self.now, tab);
                // The source's scheduler learns of the transfer now, not on the next input:
                // a settle waiting for its inbox read must not wake the source (X2).
                self.sync_schedulers(self.now);
            }
        }
    }

    /// The HUD's rollover word on `tab` once its pressure is at the `auto` level or its
    /// recovery budgets are spent: `started`, or the code of the condition that holds it
    /// back (with spent budgets, the HUD's visible recommendation and its reason).
    pub(super) fn rollover_line(&self, tab: TabId) -> Option<&'static str> {
        let (conversation, _, facts) = self.rollover_facts(tab)?;
        if self.handoff.rollovers.started(&conversation) {
            return Some("started");
        }
        Some(check(&facts).err().map_or("started", |b| b.code()))
    }
}
