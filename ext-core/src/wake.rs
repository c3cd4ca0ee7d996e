//! The wake scheduler of one bound scope: decides when a settle wake or a progress message
//! is actually submitted to the chat page (SPEC P8, M7, A3, X1).
//!
//! It combines the scope's settle signals (from [`crate::settle_tracker::SettleTracker`]),
//! its [`ProgressPush`], its Auto state (from [`crate::auto_gate::AutoGate`]), the page's
//! facts (generating, human draft, composer present, another delivery in flight) and
//! delivery results. A settle becomes
//! a *pending wake* that waits until [`wake_gate`] allows it; it is offered for delivery
//! once, and nothing else is offered until the shell confirms or fails that delivery.
//!
//! Invariants:
//! - A [`SchedulerOutput::Deliver`] is only emitted when [`wake_gate`] passes: never with
//!   Auto off, never while the page generates or holds a human draft.
//! - At most one delivery is in flight; a wake id that was confirmed delivered is never
//!   offered again, whatever replays or restarts happen.
//! - It keeps no record of what is in flight: the owner's delivery ledger holds the
//!   message ([`InFlight`]), says whether one is in flight ([`PageFacts::delivery_in_flight`])
//!   and names it in the answer.
//! - A failed wake delivery is retried on a bounded backoff ([`RETRY_BACKOFF_MS`]), then
//!   withheld until the page's composer reappears (a reload): never an unbounded loop.
//! - A new working phase supersedes an undelivered wake (its settle is no longer true).
//! - An *inbox wake* (unacknowledged terminal tasks found by reading the parent inbox
//!   without having seen their settle, SPEC I2/I4/P9) obeys the same gate, retry budget and
//!   single-delivery rule; a settle wake outranks it and replaces it (the settle's own inbox
//!   read carries the same tasks), and a new working phase drops it.
//! - Every message says a wake is a scheduling signal, not evidence of success (A3); a wake
//!   also says where the chat's `browser_session_ref` is (its marker line's `ref=`).

use std::collections::VecDeque;

use serde::Serialize;
use serde_json::Value;

use crate::json_read::{unknown_variant, Fields, Object, ReadError, ReadJson, WriteJson};

use crate::auto_gate::{wake_gate, AutoState, WakeFacts, WakeWithheld};
use crate::progress_push::{ProgressConfig, ProgressInput, ProgressOutput, ProgressPush};
use crate::settle_tracker::{SettleOutcome, SettleOutput, WakeId};
use crate::Millis;

/// Waits before the 1st, 2nd and 3rd retry of a failed wake delivery.
pub const RETRY_BACKOFF_MS: [Millis; 3] = [15_000, 30_000, 60_000];

/// The language of injected messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    /// English.
    #[default]
    En,
    /// Chinese.
    Zh,
}

/// What a delivered message is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MessageKind {
    /// The settle wake (P8).
    Wake {
        /// The settle it reports.
        wake_id: WakeId,
        /// How the workspace settled.
        outcome: SettleOutcome,
    },
    /// Unacknowledged terminal tasks found in the parent inbox while the workspace was not
    /// working and no settle wake was pending (I2, I4, P9: the inbox is the truth, the
    /// settle only a trigger; a lost settle must not lose the results).
    Inbox {
        /// Stable identity of the wake: the smallest carried task id (the delivery id is
        /// `inbox:<workspace>#<key>`), the same after a worker restart.
        key: String,
    },
    /// A new progress summary (P4).
    Progress {
        /// The summary.
        summary: String,
    },
    /// The one fallback status after a long quiet stretch (P5).
    Fallback {
        /// How long no new summary came.
        quiet_for_ms: Millis,
    },
}

/// What the content script reports about the delivery target page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct PageFacts {
    /// A usable composer exists on the open target conversation.
    pub composer_present: bool,
    /// The page is generating a reply.
    pub generating: bool,
    /// The page shows a permission card waiting for the user's answer.
    #[serde(default)]
    pub permission_card: bool,
    /// The composer holds unsent text the user typed.
    pub human_draft: bool,
    /// Every fact the page needs resolves (`page_facts.unresolved` is null); otherwise
    /// nothing is typed (fail closed).
    #[serde(default)]
    pub facts_resolved: bool,
    /// The chat's App cannot ride on a message now (an `app_*` reason): nothing is typed.
    #[serde(default)]
    pub app_held: Option<WakeWithheld>,
    /// The page's account is in a rate-limit cooldown: nothing automatic is typed.
    #[serde(default)]
    pub rate_limited: bool,
    /// Another message of the scope awaits its answer in the delivery ledger (a manual
    /// Continue, a queued batch), or our own unsent text sits in the composer: nothing is
    /// typed over it (withheld as `unconfirmed_delivery`).
    #[serde(default)]
    pub delivery_in_flight: bool,
}

/// Facts the shell feeds in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SchedulerInput {
    /// An output of the settle tracker (only those of the bound workspace matter).
    Settle(SettleOutput),
    /// The scope's binding (from the binding table).
    BindingChanged {
        /// The bound workspace; `None` when unbound.
        workspace_id: Option<String>,
        /// Whether a conversation exists to deliver to (B3).
        has_delivery_target: bool,
    },
    /// The scope's effective Auto state changed.
    AutoChanged {
        /// The new state.
        auto: AutoState,
    },
    /// New facts about the target page.
    Page(PageFacts),
    /// A handoff of this conversation started or ended (X1: auto-wake paused meanwhile).
    Handoff {
        /// Whether a handoff is in flight.
        in_progress: bool,
    },
    /// Answer to [`SchedulerOutput::CheckSummary`].
    SummaryChecked {
        /// The latest summary, if any.
        summary: Option<String>,
    },
    /// The scope's parent inbox holds unacknowledged terminal tasks that no settle wake
    /// carries (the shell checked: workspace not working, no wake pending or in flight).
    /// Ignored while a settle wake is pending or any wake is in flight.
    InboxWake {
        /// The smallest carried task id (see [`MessageKind::Inbox`]).
        key: String,
    },
    /// The bound workspace settled; its wake follows (as `Settle`) once the scope's inbox
    /// facts are read. Stops progress at once (P8) so no progress message is offered in
    /// between: progress never goes out after the settle is known.
    SettleSeen,
    /// The runtime's event log was replaced (seqs start again): settles are no longer
    /// compared with the old log's.
    LogReset,
    /// The delivered message is confirmed on the page.
    DeliveryConfirmed {
        /// The message, as the ledger's record of it says (`None`: the record names none).
        message: Option<InFlight>,
    },
    /// The delivery did not happen (submit failed, composer vanished).
    DeliveryFailed {
        /// The message, as the ledger's record of it says.
        message: Option<InFlight>,
    },
    /// The delivery did not happen because the chat's App could not ride on it: what was in
    /// flight is pending again without spending a retry, and `reason` holds it (as
    /// [`PageFacts::app_held`], until the next page facts say otherwise); progress counts as
    /// not delivered.
    DeliveryHeld {
        /// The `app_*` reason.
        reason: WakeWithheld,
        /// The message, as the ledger's record of it says.
        message: Option<InFlight>,
    },
    /// New options.
    ConfigChanged {
        /// Progress timing.
        progress: ProgressConfig,
        /// Message language.
        language: Language,
    },
}

/// Decisions for the shell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SchedulerOutput {
    /// Submit `text` as the next user message; answer with `DeliveryConfirmed` or
    /// `DeliveryFailed`.
    Deliver {
        /// What it is.
        kind: MessageKind,
        /// The exact text to submit.
        text: String,
    },
    /// Ask the runtime for the workspace's latest summary; answer with `SummaryChecked`.
    CheckSummary {
        /// The workspace.
        workspace_id: String,
    },
    /// The reason shown in the HUD changed (`None`: nothing is being held back).
    WithheldChanged {
        /// The reason.
        reason: Option<WakeWithheld>,
    },
}

/// A settle waiting to be delivered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct PendingWake {
    /// Its identity.
    pub wake_id: WakeId,
    /// How the workspace settled.
    pub outcome: SettleOutcome,
}

/// What was offered and awaits a delivery result: the owner keeps it with the delivery
/// (the delivery ledger is the only record of a message in flight) and names it in the
/// answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum InFlight {
    /// A wake.
    Wake(PendingWake),
    /// A progress message or the fallback status.
    Progress {
        /// The summary it carries (trimmed); `None`: the fallback status.
        summary: Option<String>,
    },
    /// An inbox wake.
    Inbox {
        /// The key of [`MessageKind::Inbox`].
        key: String,
    },
}

/// The scheduler's own timer (the progress timers live in [`ProgressPush`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct RetryTimer {
    /// When the failed wake may be offered again.
    pub at: Millis,
}

/// The wake scheduler of one bound scope.
///
/// Driver contract: create one per bound scope; feed facts with [`WakeScheduler::handle`]
/// (route the settle tracker's outputs of the bound workspace as `Settle`; page facts say
/// whether a delivery of the scope is in flight); when the clock reaches
/// [`WakeScheduler::next_deadline`] call [`WakeScheduler::handle_timeout`]; after either,
/// drain [`WakeScheduler::poll`] until `None`. Keep each `Deliver`'s [`InFlight::of`] with
/// the delivery and answer it with `DeliveryConfirmed`, `DeliveryFailed` or `DeliveryHeld`
/// naming it (after a restart, a delivery in flight is still awaiting its answer: check the
/// page and answer). Persist the struct (serde) after each drained batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct WakeScheduler {
    /// The bound workspace.
    workspace_id: Option<String>,
    /// Whether the scope has a conversation to deliver to.
    has_delivery_target: bool,
    /// The scope's effective Auto state.
    auto: AutoState,
    /// Last reported page facts.
    page: PageFacts,
    /// Whether a handoff is in flight.
    handoff_in_progress: bool,
    /// Language of injected messages.
    language: Language,
    /// Progress push of the scope.
    progress: ProgressPush,
    /// The settle waiting for delivery.
    pending_wake: Option<PendingWake>,
    /// An inbox wake waiting for delivery (key of [`MessageKind::Inbox`]).
    #[serde(default)]
    pending_inbox: Option<String>,
    /// The newest wake ever accepted (pending, in flight or delivered); a settle of the
    /// same runtime generation at or below it is a replay and is ignored.
    newest_wake: Option<WakeId>,
    /// The wake in flight no longer reports the truth (the workspace went working again or
    /// the binding changed since it was offered): if its delivery fails it is dropped, not
    /// retried (P7, P8).
    #[serde(default)]
    in_flight_wake_superseded: bool,
    /// The message in flight as an earlier release saved it here (read, never written: the
    /// owner moves it into its delivery record on restore, see
    /// [`WakeScheduler::take_legacy_in_flight`]).
    #[serde(default, skip_serializing, rename = "in_flight")]
    legacy_in_flight: Option<InFlight>,
    /// Failed deliveries of the pending wake so far.
    failed_attempts: u32,
    /// Backoff before the next offer of a failed wake.
    retry: Option<RetryTimer>,
    /// The reason last shown in the HUD.
    shown_withheld: Option<WakeWithheld>,
    /// Decisions not yet drained (not persisted).
    #[serde(skip)]
    outputs: VecDeque<SchedulerOutput>,
}

impl WakeScheduler {
    /// Unbound, Auto off, no page.
    pub fn new(progress: ProgressConfig, language: Language) -> Self {
        Self {
            workspace_id: None,
            has_delivery_target: false,
            auto: AutoState::Off,
            page: PageFacts::default(),
            handoff_in_progress: false,
            language,
            progress: ProgressPush::new(progress),
            pending_wake: None,
            pending_inbox: None,
            newest_wake: None,
            in_flight_wake_superseded: false,
            legacy_in_flight: None,
            failed_attempts: 0,
            retry: None,
            shown_withheld: None,
            outputs: VecDeque::new(),
        }
    }

    /// The message an earlier release saved as in flight in this scheduler (and its
    /// [`ProgressPush`]), once (restore only): the owner carries it into the delivery it
    /// belongs to, so that delivery's answer names it.
    pub fn take_legacy_in_flight(&mut self) -> Option<InFlight> {
        let progress = self.progress.take_legacy_in_flight();
        match (self.legacy_in_flight.take(), progress) {
            (Some(InFlight::Progress { .. }) | None, Some(summary)) => Some(InFlight::Progress { summary }),
            (old, _) => old,
        }
    }

    /// The settle waiting for delivery, if any.
    pub fn pending_wake(&self) -> Option<&PendingWake> {
        self.pending_wake.as_ref()
    }

    /// The inbox wake waiting for delivery (its key), if any.
    pub fn pending_inbox(&self) -> Option<&str> {
        self.pending_inbox.as_deref()
    }

    /// Whether a wake (settle or inbox) is pending (one in flight is in the owner's ledger).
    pub fn wake_pending(&self) -> bool {
        self.pending_wake.is_some() || self.pending_inbox.is_some()
    }

    /// What the HUD should say is held back, if anything.
    pub fn withheld(&self) -> Option<WakeWithheld> {
        self.shown_withheld
    }

    /// Feeds one fact.
    pub fn handle(&mut self, now: Millis, input: SchedulerInput) {
        match input {
            SchedulerInput::Settle(signal) => self.on_settle_signal(now, signal),
            SchedulerInput::BindingChanged { workspace_id, has_delivery_target } => {
                if workspace_id != self.workspace_id {
                    self.in_flight_wake_superseded = true;
                    // Another workspace (or none): the old one's signals no longer apply.
                    self.pending_wake = None;
                    self.pending_inbox = None;
                    self.retry = None;
                    self.failed_attempts = 0;
                    self.progress.handle(now, ProgressInput::ScopeSettled);
                    self.workspace_id = workspace_id;
                }
                self.has_delivery_target = has_delivery_target;
            }
            SchedulerInput::AutoChanged { auto } => self.auto = auto,
            SchedulerInput::Page(facts) => {
                let reappeared = facts.composer_present && !self.page.composer_present;
                let resolved_again = facts.facts_resolved && !self.page.facts_resolved;
                if reappeared || resolved_again {
                    // The composer reappeared (reload, navigation), or the page's needed facts
                    // resolve again (a profile override fixed them): a fresh delivery budget.
                    self.failed_attempts = 0;
                    self.retry = None;
                }
                self.page = facts;
            }
            SchedulerInput::Handoff { in_progress } => self.handoff_in_progress = in_progress,
            SchedulerInput::SummaryChecked { summary } => self.progress.handle(now, ProgressInput::SummaryChecked { summary }),
            SchedulerInput::InboxWake { key } => {
                if !self.wake_pending() && self.workspace_id.is_some() {
                    self.pending_inbox = Some(key);
                    self.retry = None;
                    self.failed_attempts = 0;
                }
            }
            SchedulerInput::SettleSeen => {
                // The settle's own inbox read carries the tasks an inbox wake would.
                self.pending_inbox = None;
                self.progress.handle(now, ProgressInput::ScopeSettled);
            }
            SchedulerInput::LogReset => self.newest_wake = None,
            SchedulerInput::DeliveryConfirmed { message } => match self.answered(message) {
                Some(InFlight::Wake(_) | InFlight::Inbox { .. }) => self.failed_attempts = 0,
                Some(InFlight::Progress { summary }) => self.progress.handle(now, ProgressInput::Delivered { summary }),
                None => {}
            },
            SchedulerInput::DeliveryFailed { message } => match self.answered(message) {
                Some(InFlight::Wake(wake)) => {
                    // Keep it unless something newer replaced it or the workspace went
                    // working again meanwhile (regression: a failed wake was retried
                    // while the workspace worked, continuity_props (b)).
                    if self.pending_wake.is_none() && !self.in_flight_wake_superseded {
                        self.pending_wake = Some(wake);
                        self.pending_inbox = None;
                    }
                    self.schedule_retry(now);
                }
                Some(InFlight::Inbox { key }) => {
                    // Retried like a settle wake, unless a settle wake replaced it or the
                    // workspace went working meanwhile (that settle will carry the tasks).
                    if self.pending_wake.is_none() && self.pending_inbox.is_none() && !self.in_flight_wake_superseded {
                        self.pending_inbox = Some(key);
                    }
                    self.schedule_retry(now);
                }
                Some(InFlight::Progress { summary }) => {
                    self.progress.handle(now, ProgressInput::NotDelivered { fallback: summary.is_none() })
                }
                None => {}
            },
            // Like a failure, but no retry is scheduled and no attempt counted.
            SchedulerInput::DeliveryHeld { reason, message } => {
                // Held first: the wake must not be offered again on the old facts.
                self.page.app_held = Some(reason);
                match self.answered(message) {
                    Some(InFlight::Wake(wake)) if self.pending_wake.is_none() && !self.in_flight_wake_superseded => {
                        self.pending_wake = Some(wake);
                        self.pending_inbox = None;
                    }
                    Some(InFlight::Inbox { key })
                        if self.pending_wake.is_none() && self.pending_inbox.is_none() && !self.in_flight_wake_superseded =>
                    {
                        self.pending_inbox = Some(key);
                    }
                    Some(InFlight::Progress { summary }) => {
                        self.progress.handle(now, ProgressInput::NotDelivered { fallback: summary.is_none() })
                    }
                    _ => {}
                }
            }
            SchedulerInput::ConfigChanged { progress, language } => {
                self.language = language;
                self.progress.handle(now, ProgressInput::ConfigChanged { config: progress });
            }
        }
        self.pump(now);
    }

    /// An answer: the ledger's record of the message is gone, so nothing of the scope is in
    /// flight any more (the ledger holds one message per scope).
    fn answered(&mut self, message: Option<InFlight>) -> Option<InFlight> {
        self.page.delivery_in_flight = false;
        message
    }

    /// Backoff after a failed wake delivery (bounded by [`RETRY_BACKOFF_MS`]).
    fn schedule_retry(&mut self, now: Millis) {
        let attempt = usize::try_from(self.failed_attempts).unwrap_or(usize::MAX);
        self.failed_attempts = self.failed_attempts.saturating_add(1);
        self.retry = RETRY_BACKOFF_MS.get(attempt).map(|wait| RetryTimer { at: now.saturating_add(*wait) });
    }

    /// Fires the timers that are due at `now`.
    pub fn handle_timeout(&mut self, now: Millis) {
        if self.retry.is_some_and(|r| now >= r.at) {
            self.retry = None;
        }
        self.progress.handle_timeout(now);
        self.pump(now);
    }

    /// The earliest timer.
    pub fn next_deadline(&self) -> Option<Millis> {
        let retry = self.retry.map(|r| r.at);
        match (retry, self.progress.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next decision, if any.
    pub fn poll(&mut self) -> Option<SchedulerOutput> {
        self.outputs.pop_front()
    }

    fn on_settle_signal(&mut self, now: Millis, signal: SettleOutput) {
        let ours = |workspace_id: &str| self.workspace_id.as_deref() == Some(workspace_id);
        match signal {
            SettleOutput::ScopeWorking { workspace_id, .. } if ours(&workspace_id) => {
                self.in_flight_wake_superseded = true;
                // The settle that was waiting is no longer the truth; tasks an inbox wake
                // would carry are carried by the settle that ends this phase.
                self.pending_wake = None;
                self.pending_inbox = None;
                self.retry = None;
                self.failed_attempts = 0;
                self.progress.handle(now, ProgressInput::ScopeWorking);
            }
            SettleOutput::ScopeSettled { workspace_id, wake_id, outcome, .. } if ours(&workspace_id) => {
                self.progress.handle(now, ProgressInput::ScopeSettled);
                let replayed =
                    self.newest_wake.as_ref().is_some_and(|newest| newest.boot_id == wake_id.boot_id && wake_id.seq <= newest.seq);
                if !replayed {
                    self.newest_wake = Some(wake_id.clone());
                    self.pending_inbox = None;
                    self.pending_wake = Some(PendingWake { wake_id, outcome });
                    self.retry = None;
                    self.failed_attempts = 0;
                }
            }
            _ => {}
        }
    }

    fn facts(&self, real_state_change: bool) -> WakeFacts {
        WakeFacts {
            bound: self.workspace_id.is_some(),
            has_delivery_target: self.has_delivery_target,
            auto: self.auto,
            handoff_in_progress: self.handoff_in_progress,
            real_state_change,
            unconfirmed_delivery: self.page.delivery_in_flight,
            page_generating: self.page.generating,
            permission_card: self.page.permission_card,
            human_draft: self.page.human_draft,
            composer_present: self.page.composer_present,
            facts_resolved: self.page.facts_resolved,
            app_held: self.page.app_held,
            rate_limited: self.page.rate_limited,
        }
    }

    /// Why the pending wake cannot go now, including the retry budget.
    fn wake_blocker(&self) -> Option<WakeWithheld> {
        if let Err(reason) = wake_gate(&self.facts(self.pending_wake.is_some() || self.pending_inbox.is_some())) {
            return Some(reason);
        }
        if self.failed_attempts > 0
            && self.retry.is_none()
            && usize::try_from(self.failed_attempts).unwrap_or(usize::MAX) > RETRY_BACKOFF_MS.len()
        {
            return Some(WakeWithheld::DeliveryFailedRepeatedly);
        }
        self.retry.map(|_| WakeWithheld::DeliveryRetryPending)
    }

    fn pump(&mut self, now: Millis) {
        while let Some(decision) = self.progress.poll() {
            match decision {
                ProgressOutput::CheckSummary => {
                    if let Some(workspace_id) = &self.workspace_id {
                        self.outputs.push_back(SchedulerOutput::CheckSummary { workspace_id: workspace_id.clone() });
                    }
                }
                ProgressOutput::SendProgress { summary } => {
                    self.offer_progress(now, MessageKind::Progress { summary });
                }
                ProgressOutput::SendFallback { quiet_for_ms } => {
                    self.offer_progress(now, MessageKind::Fallback { quiet_for_ms });
                }
            }
        }
        if self.wake_blocker().is_none() {
            if let Some(wake) = self.pending_wake.take() {
                let kind = MessageKind::Wake { wake_id: wake.wake_id, outcome: wake.outcome };
                let text = self.render(&kind);
                // In flight from now on, until the owner's facts or answer say otherwise.
                self.page.delivery_in_flight = true;
                self.in_flight_wake_superseded = false;
                self.outputs.push_back(SchedulerOutput::Deliver { kind, text });
            } else if let Some(key) = self.pending_inbox.take() {
                let kind = MessageKind::Inbox { key };
                let text = self.render(&kind);
                self.page.delivery_in_flight = true;
                self.in_flight_wake_superseded = false;
                self.outputs.push_back(SchedulerOutput::Deliver { kind, text });
            }
        }
        let shown = match (&self.pending_wake, &self.pending_inbox) {
            (Some(_), _) | (_, Some(_)) => self.wake_blocker(),
            // Nothing pending: only a scope-level reason is worth showing.
            (None, None) => wake_gate(&self.facts(true)).err().filter(|r| !r.is_transient()),
        };
        if shown != self.shown_withheld {
            self.shown_withheld = shown;
            self.outputs.push_back(SchedulerOutput::WithheldChanged { reason: shown });
        }
    }

    fn offer_progress(&mut self, now: Millis, kind: MessageKind) {
        // A settle outranks progress, and progress obeys the same gate as a wake.
        let allowed = self.pending_wake.is_none() && self.pending_inbox.is_none() && wake_gate(&self.facts(true)).is_ok();
        if allowed {
            let text = self.render(&kind);
            self.page.delivery_in_flight = true;
            self.outputs.push_back(SchedulerOutput::Deliver { kind, text });
        } else {
            self.progress.handle(now, ProgressInput::NotDelivered { fallback: matches!(kind, MessageKind::Fallback { .. }) });
        }
    }

    fn render(&self, kind: &MessageKind) -> String {
        let workspace = self.workspace_id.as_deref().unwrap_or("?");
        render_message(self.language, workspace, kind)
    }
}

/// The exact text submitted for a message (A3). A wake never claims success: it asks the
/// planner to re-read live state, inspect output, diff and tests, and decide; blocked and
/// vanished agents are called out for diagnosis.
pub fn render_message(language: Language, workspace_id: &str, kind: &MessageKind) -> String {
    match (language, kind) {
        (Language::En, MessageKind::Wake { outcome, .. }) => {
            let (state, extra) = match outcome {
                SettleOutcome::Idle => ("idle", ""),
                SettleOutcome::Done => ("done", ""),
                SettleOutcome::Blocked => ("blocked", " At least one agent is blocked: diagnose why before anything else."),
                SettleOutcome::PaneGone => ("an agent's pane went away", " An agent disappeared before settling: find out what happened to it."),
            };
            format!("[Herdr] Workspace {workspace_id} settled ({state}). This is a scheduling signal, not evidence that the work succeeded.{extra} Re-read the live Herdr and Git state, inspect the agents' output, the diff and the tests, then decide: continue, rework, merge or stop. To give an agent work for this chat, call herdr_prompt with browser_session_ref set to the ref= value on this message's last line.")
        }
        (Language::Zh, MessageKind::Wake { outcome, .. }) => {
            let (state, extra) = match outcome {
                SettleOutcome::Idle => ("idle", ""),
                SettleOutcome::Done => ("done", ""),
                SettleOutcome::Blocked => ("blocked", "有 Agent 处于阻塞状态：请先诊断原因。"),
                SettleOutcome::PaneGone => ("pane 已消失", "有 Agent 在收工前消失：请查明原因。"),
            };
            format!("[Herdr] workspace {workspace_id} 已收工（{state}）。这只是调度信号，不代表任务已成功。{extra}请重新读取实时 Herdr/Git 状态，检查 Agent 输出、diff 和测试，再决定继续、返工、合并还是停止。如需为本会话给 Agent 派活，调用 herdr_prompt，browser_session_ref 取本消息最后一行 ref= 后面的值。")
        }
        (Language::En, MessageKind::Inbox { .. }) => format!("[Herdr] Workspace {workspace_id} is not working and tasks of this chat ended while no wake reached it. This is a scheduling signal, not evidence that the work succeeded. Re-read the live Herdr and Git state, inspect the agents' output, the diff and the tests, then decide: continue, rework, merge or stop. To give an agent work for this chat, call herdr_prompt with browser_session_ref set to the ref= value on this message's last line."),
        (Language::Zh, MessageKind::Inbox { .. }) => format!("[Herdr] workspace {workspace_id} 未在工作，此会话有任务已结束但尚未唤醒过本会话。这只是调度信号，不代表任务已成功。请重新读取实时 Herdr/Git 状态，检查 Agent 输出、diff 和测试，再决定继续、返工、合并还是停止。如需为本会话给 Agent 派活，调用 herdr_prompt，browser_session_ref 取本消息最后一行 ref= 后面的值。"),
        // The scheduler's own text, never typed: the continuity machine types
        // [`progress_text`] with its keyed nonce of the message's delivery id.
        (_, MessageKind::Progress { summary }) => progress_text(language, workspace_id, summary, &continuity_protocol::fence::nonce(&[0; 16], workspace_id)),
        (Language::En, MessageKind::Fallback { quiet_for_ms }) => format!(
            "[Herdr status] Workspace {workspace_id} is still working; no new summary for {} min. If that is unexpected, check the live Herdr state.",
            quiet_for_ms / 60_000
        ),
        (Language::Zh, MessageKind::Fallback { quiet_for_ms }) => format!(
            "[Herdr 状态] workspace {workspace_id} 仍在工作，已 {} 分钟没有新摘要。如不符合预期，请检查实时 Herdr 状态。",
            quiet_for_ms / 60_000
        ),
    }
}

/// A progress note (P4): the agents' new output inside a data fence
/// (`protocol::fence`, kind `agent_output`, nonce `nonce`).
pub fn progress_text(language: Language, workspace_id: &str, summary: &str, nonce: &continuity_protocol::fence::Nonce) -> String {
    let fenced = crate::continuity::fenced(language, "agent_output", summary, nonce);
    match language {
        Language::En => format!(
            "[Herdr progress] Workspace {workspace_id} is still working. New agent output:\n{fenced}\nThis is progress, not evidence that the work succeeded: no action is needed unless the output shows a problem that must be handled now. A wake follows when the agents settle."
        ),
        Language::Zh => format!(
            "[Herdr 进度] workspace {workspace_id} 仍在工作。Agent 新输出：\n{fenced}\n这只是进度，不代表任务已成功：除非输出显示必须立即处理的问题，否则无需操作。Agent 收工后会再次唤醒。"
        ),
    }
}

impl InFlight {
    /// The record of an offered message the owner keeps with its delivery.
    pub fn of(kind: &MessageKind) -> Self {
        match kind {
            MessageKind::Wake { wake_id, outcome } => InFlight::Wake(PendingWake { wake_id: wake_id.clone(), outcome: *outcome }),
            MessageKind::Inbox { key } => InFlight::Inbox { key: key.clone() },
            MessageKind::Progress { summary } => InFlight::Progress { summary: Some(summary.clone()) },
            MessageKind::Fallback { .. } => InFlight::Progress { summary: None },
        }
    }
}

// Readers and writers of the persisted shapes (crate::json_read; the same shape serde writes).

impl ReadJson for InFlight {
    fn read_json(value: &Value) -> Result<Self, ReadError> {
        let f = Fields::of(value)?;
        match f.tag("kind")? {
            "wake" => PendingWake::read_json(value).map(InFlight::Wake),
            "progress" => Ok(InFlight::Progress { summary: f.get("summary")? }),
            "inbox" => Ok(InFlight::Inbox { key: f.get("key")? }),
            _ => Err(unknown_variant("a known delivery in flight")),
        }
    }
}

impl WriteJson for InFlight {
    fn write_json(&self) -> Value {
        match self {
            InFlight::Wake(pending) => Object::tagged("kind", "wake").with("wake_id", &pending.wake_id).with("outcome", &pending.outcome),
            InFlight::Progress { summary } => Object::tagged("kind", "progress").with("summary", summary),
            InFlight::Inbox { key } => Object::tagged("kind", "inbox").with("key", key),
        }
        .done()
    }
}
