//! The continuity loop of the extension: composes the binding table, the Auto gate, the
//! settle tracker and one [`WakeScheduler`] per bound scope, and turns page facts, stream
//! events and inbox answers into deliveries, inbox acknowledgements and HUD views
//! (SPEC A3, B1–B8, P1–P9, I3–I4, M1–M4, M7).
//!
//! Flow of one wake: the runtime's stream settles workspace `w1` → every scope bound to
//! `w1` asks the runtime for its own parent-inbox items (`inbox.pending` with the scope's
//! `browser_session_ref`, so another chat's tasks never reach this chat, I3) → the settle
//! is handed to the scope's scheduler, which waits until the target page is idle (M7) →
//! [`ContinuityOutput::Deliver`] with a unique marker line → the page confirms the new user
//! turn → the carried task ids are acknowledged (`inbox.ack`, I4). A delivery that fails
//! leaves its tasks unacknowledged; the scheduler retries it once the page is idle again.
//!
//! Inbox wakes (I2, I4, P9: the parent inbox is the truth, the settle only a trigger): a
//! settle the extension never saw must not strand a result, so [`crate::inbox_checks`]
//! reads a scope's inbox outside a settle once the scope is quiet; its unacknowledged
//! terminal tasks become one wake of the scheduler ([`crate::wake::MessageKind::Inbox`], id
//! `inbox:<ws>#<smallest task id>`, the same gate, Auto rules, retries and
//! ack-after-confirmation as a settle wake). A settle wake replaces a pending inbox wake.
//!
//! Progress (P2–P6): the runtime's `agent_output` events (sent only when a working pane's
//! normalised output changed) keep the latest tail per pane. When the scope goes working,
//! each pane's current tail becomes its *baseline* (a pane first seen during the episode
//! takes its first tail as baseline), so only output that appeared during the work counts.
//! On a scheduler check the summary is, per pane with output past its baseline, the agent
//! and its last [`PROGRESS_LINES_PER_PANE`] non-empty lines, ≤ [`PROGRESS_SUMMARY_MAX_CHARS`]
//! in total ([`progress_summary`]); [`crate::progress_push::ProgressPush`] sends it only
//! when it differs from the last one sent. Progress uses the wake's delivery path and gate;
//! a settle stops progress before its inbox read starts, so it never precedes the wake.
//!
//! Files: `io` (inputs and outputs), `deliveries` (schedulers → [`DeliveryLedger`] →
//! resolutions), `inbox_sync` (the inbox checks' facts and outputs), `acks` (I4),
//! `pane_output` (progress tails), `manual` (HUD actions; Check Herdr's runs are
//! [`crate::check_herdr`]'s), `recovery` (stuck ChatGPT pages), `cards` (ChatGPT's
//! tool-permission cards), `journal` (the Continuity Journal's writer, context pressure),
//! `handoff` (the HUD's Handoff; each transfer is a [`crate::handoff_transfer::Transfer`]),
//! `views` (HUD and panel), `texts` (every text), `activity` (the Activity timeline's
//! entries); this file routes inputs to them.
//!
//! Invariants:
//! - Every message typed into a page goes through the [`DeliveryLedger`]: ids are unique
//!   across restarts and lost state, at most one delivery per scope is active, a delivery
//!   is confirmed only by its marker in a newer user turn, and an uncertain one is resolved
//!   from page evidence, never retyped blindly and never blocking its scope.
//! - `inbox.ack` is only requested for the tasks of a delivery that was confirmed (I4).
//! - A task carried by a confirmed delivery is never carried again: the ids of confirmed
//!   tasks are remembered per session ref (the newest [`CONFIRMED_TASKS_KEPT`], persisted,
//!   kept across re-binding) and removed from every inbox answer, so an answer that raced
//!   the `inbox.ack` cannot bring them back. A wake that failed carries its tasks again.
//! - Nothing is delivered automatically unless [`crate::auto_gate::wake_gate`] passes (the
//!   schedulers enforce it); a manual Continue is refused while a delivery is in flight,
//!   while the page generates, or while the composer holds a human draft.
//! - Persisted: bindings, Auto, tracker marks, the ledger, acks due, per-scope counters, a
//!   settle waiting for its inbox read and the due inbox checks; page facts and requests in
//!   flight are not (pages report again on reconnect, requests are re-issued).

use continuity_protocol::ErrorCode;
use std::collections::VecDeque;

use serde::Serialize;

use crate::auto_gate::{AutoGate, AutoState, HudAction, WakeWithheld};
use crate::binding::{BindingInput, BindingOutput, Bindings, CatalogWorkspace, TabId};
use crate::delivery_ledger::{Baseline, BeginRefused, Delivery, DeliveryLedger, DeliveryState, LedgerOutput, Resolution};
use crate::progress_push::ProgressConfig;
use crate::scope::{classify_url, PageKind, Scope};
use crate::settle_tracker::{AgentSnapshot, PaneEventKind, SettleInput, SettleOutput, SettleTracker, StreamEvent};
use crate::snapshot::{Snapshot, SNAPSHOT_VERSION};
use crate::vec_map::{VecMap, VecSet};
use crate::wake::{InFlight, Language, MessageKind, PageFacts, SchedulerInput, SchedulerOutput, WakeScheduler};
use crate::Millis;

mod acks;
mod activity;
mod answers;
mod app;
mod bridge;
mod cards;
mod chats;
mod deliveries;
mod drains;
mod goal;
mod guidance;
mod guidance_sync;
mod handoff;
mod health;
mod hud_lines;
mod inbox_sync;
mod io;
mod journal;
mod manual;
mod pacer;
mod pane_output;
mod persisted;
mod queue;
mod recovery;
mod rollover;
mod semantic;
mod texts;
mod unresolved;
mod views;

use crate::json_read::{ReadJson, WriteJson};
pub use acks::CONFIRMED_TASKS_KEPT;
pub use activity::{Activity, ActivityKind, ActivityOutcome, ActivityReason, WithheldMark, REASON_CODES, STATE_NOT_SAVED};
pub use app::{app_retry_wait, app_withheld, APP_RETRY_FIRST_MS, APP_RETRY_MAX_MS};
pub use bridge::{
    BridgeBook, BridgeButton, BridgeCardCall, BridgeDecision, BridgeOutcome, BridgeResults, BridgeRounds, BridgeView, PendingCall,
    BRIDGE_BUTTONS,
};
pub use cards::CardLine;
pub use chats::CHATS_REPORT_REFRESH_MS;
pub use guidance::{GuidanceLine, TaskGuidance, KINDS as GUIDANCE_KINDS};
use handoff::SEED_KEY_PREFIX;
pub use handoff::{new_chat_url, HandoffBook, HandoffView, PrepareCall, Transfer, HANDOFF_QUERY, HANDOFF_QUEUE_ITEMS};
pub use health::{HealthLine, HEALTH_DECISIONS, HEALTH_REASONS};
pub use hud_lines::{lines as view_lines, Arg, Hook, HudLine, LinePart, LineTone};
pub use io::*;
pub use journal::{JournalBook, JournalEntry, JOURNAL_RETRY_MS, MAX_JOURNAL_TEXT_BYTES, MAX_OUTBOX_BYTES, MAX_OUTBOX_ENTRIES};
pub use journal::{JournalOpt, MAX_OPTED};
pub use pane_output::*;
pub use queue::{QueueDurable, QueueSend, QueueView};
pub use recovery::{PageRecoveryReport, ProbeAnswer, ProbeNode, RecoveryCommand, RecoveryLine, RECOVERY_TICK_MS};
pub use semantic::SEMANTIC_REASON_MAX_CHARS;
pub use texts::*;
pub use unresolved::{Unresolved, UnresolvedWhy};
pub use views::*;

pub use crate::binding::{AppMention, AppNeed};
pub use crate::delivery_ledger::DeliveryKind;

/// A delivery in flight as the previous release persisted it (per scope); restored into
/// the [`DeliveryLedger`] as uncertain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson)]
pub struct LegacyInFlight {
    /// The delivery id.
    pub id: String,
    /// The tab it was posted to.
    pub tab: TabId,
    /// What it is.
    pub kind: DeliveryKind,
    /// Inbox tasks to acknowledge once confirmed.
    pub task_ids: Vec<String>,
    /// When it was posted.
    pub at: Millis,
}

/// The last confirmed wake of a scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct LastWake {
    /// When its delivery was confirmed.
    pub at: Millis,
    /// What it was.
    pub kind: DeliveryKind,
    /// Its delivery id.
    pub id: String,
}

/// Per-scope state besides its scheduler.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct ScopeStatus {
    /// The wake scheduler.
    scheduler: Option<WakeScheduler>,
    /// Inbox tasks fetched for the pending wake.
    wake_tasks: Vec<InboxTask>,
    /// A delivery in flight saved by the previous release (moved into the ledger on
    /// restore; never written).
    #[serde(default, skip_serializing, rename = "in_flight")]
    legacy_in_flight: Option<LegacyInFlight>,
    /// A settle waiting for its `inbox.pending` answer (persisted: a worker restart in
    /// that window must not lose it; the read is re-issued on link-up).
    #[serde(default)]
    settle_awaiting_tasks: Option<SettleOutput>,
    /// The last confirmed wake.
    last_wake: Option<LastWake>,
    /// Confirmed wakes since binding.
    wake_count: u32,
    /// Inbox counters; `None` until read.
    counts: Option<TaskCounts>,
    /// The runtime lacks the parent inbox (older runtime): wakes carry no task facts.
    inbox_missing: bool,
    /// Whether the bound workspace has settled at least once.
    settled_once: bool,
    /// Tasks of confirmed wakes whose `inbox.ack` has not been answered yet; re-sent on
    /// every link-up until the runtime answers (I4: a confirmed wake is always acked, even
    /// when it was confirmed while the companion was unreachable or the worker restarted).
    #[serde(default)]
    ack_due: Vec<String>,
    /// Confirmed progress messages since binding.
    #[serde(default)]
    progress_count: u32,
    /// An inbox check was due when an earlier release saved this (read, never written: the
    /// due checks are [`crate::inbox_checks::InboxChecks`]'s now).
    #[serde(default, skip_serializing, rename = "inbox_check_due")]
    legacy_inbox_check_due: bool,
}

/// What a runtime call in flight is for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Purpose {
    Subscribe,
    Catalog,
    /// `inbox.pending` for a held settle of a scope.
    WakeTasks {
        scope_key: String,
        settle: SettleOutput,
    },
    Ack {
        scope_key: String,
        task_ids: Vec<String>,
    },
    /// `inbox.ack` for tasks of a binding that no longer exists.
    OrphanAck {
        session_ref: String,
        task_ids: Vec<String>,
    },
    Counts {
        scope_key: String,
    },
    /// `inbox.pending` outside a settle (`crate::inbox_checks`).
    InboxCheck {
        scope_key: String,
    },
    /// `inbox.pending` for the guidance of a pending wake's tasks only (never wakes).
    GuidanceRead {
        scope_key: String,
    },
    /// `herdr.panes` of Check Herdr's run `run` (`crate::check_herdr`).
    CheckPanes {
        tab: TabId,
        run: u64,
    },
    /// `herdr.pane_read` of one pane for Check Herdr's run `run`.
    CheckRead {
        tab: TabId,
        run: u64,
        pane_id: String,
    },
    Judge {
        tab: TabId,
    },
    /// `judge.turn_end` of semantic Auto for a reply of `conversation`.
    SemanticJudge {
        conversation: String,
        fingerprint: String,
        tab: TabId,
    },
    /// `bridge.reply` for a reply of `conversation` on `tab`; `ask` numbers it (an owed
    /// reply takes only the answer to its own ask).
    Bridge {
        tab: TabId,
        pressed: bool,
        conversation: String,
        ask: u64,
    },
    /// `bridge.decide` of a call of `tab`'s approval card.
    BridgeDecide {
        tab: TabId,
        batch_id: String,
        call: u32,
        decision: BridgeDecision,
    },
    /// `bridge.prompt` for the HUD of `tab`.
    BridgePrompt {
        tab: TabId,
    },
    /// `bridge.delivered` of a results message the ledger confirmed.
    BridgeDelivered,
    /// `continuity.append` of the outbox turn `key` (`<conversation>/<message>`).
    Journal {
        key: String,
    },
    /// A handoff's `continuity.resolve` (`resolve`) or package, for the transfer of scope `key`.
    Handoff {
        key: String,
        resolve: bool,
    },
    /// `chats.report` (`chats`).
    ChatsReport,
    /// `profiles.get`.
    Profiles,
    GoalSet {
        key: String,
        clear: bool,
        home: Option<String>,
    },
    GoalProbe {
        key: String,
        turn: u64,
    },
    GoalEvidence {
        key: String,
        turn: u64,
    },
    GoalPriors {
        key: String,
        turn: u64,
    }, // Goal mode (J7, `goal`)
}

/// The composed continuity machine of the worker.
///
/// Driver contract: build it with [`Continuity::from_snapshot`] (the stored [`Snapshot`])
/// or [`Continuity::with_epoch`] (nothing stored), both with fresh randomness; feed every
/// fact with [`Continuity::handle`]; when the clock reaches [`Continuity::next_deadline`]
/// call [`Continuity::handle_timeout`]; after either drain [`Continuity::poll`] until
/// `None`. Answer every `Request` with `Answered` (an error `offline` when it could not be
/// sent); pass the page's `delivery_report` for every `Deliver` as `DeliveryReport`. On
/// `Persist`, write [`Continuity::snapshot`] at most once per burst.
/// Views ([`Continuity::page_view`], [`Continuity::panel_view`]) are pure queries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Continuity {
    /// Bindings (B1–B7).
    bindings: Bindings,
    /// Auto settings (M1–M3).
    auto: AutoGate,
    /// Settle tracking with the seq high-water mark (P8, P9).
    tracker: SettleTracker,
    /// Per-scope state by scope key.
    scopes: VecMap<String, ScopeStatus>,
    /// Message language.
    language: Language,
    /// Every message written into a page (ids, states, evidence).
    ledger: DeliveryLedger,
    /// Last catalog read (display only).
    catalog: Vec<CatalogWorkspace>,
    /// Progress timing from the options page (clamped).
    progress: ProgressConfig,
    /// Latest output per pane of bound workspaces (P4).
    pane_outputs: VecMap<String, PaneOutput>,
    /// Task ids carried by confirmed deliveries, per session ref (newest last, bounded).
    confirmed_tasks: VecMap<String, VecDeque<String>>,
    /// Confirmed-but-unacknowledged task ids of scopes that were unbound or re-bound before
    /// the runtime answered their `inbox.ack`, per session ref. An ack belongs to the chat's
    /// session ref, not to its binding, so it outlives the binding (I4).
    orphan_acks: VecMap<String, Vec<String>>,
    /// The catalog could not be read: why.
    catalog_error: Option<String>,
    /// Pages by tab (not persisted: pages report again).
    pages: VecMap<TabId, PageReport>,
    /// Calls in flight.
    calls: VecMap<CallId, Purpose>,
    /// Next call id.
    next_call: CallId,
    /// Whether the companion link is up.
    link_up: bool,
    /// Inbox reads outside a settle: which scopes' are due, which are out (I2, P9).
    inbox_checks: crate::inbox_checks::InboxChecks,
    /// Check Herdr's runs, one per tab (M4; not persisted).
    check: crate::check_herdr::CheckHerdr,
    /// The catalog changed while a read was out: read it again when that one answers.
    catalog_reread: bool,
    /// The time of the input being handled (for answers made without IO).
    now: Millis,
    /// The Queue's changes and batches (Q1–Q8).
    queue: queue::QueueFlow,
    /// Semantic Auto per conversation and the judge settings (J1–J3, M7, O4).
    semantic: semantic::SemanticFlow,
    /// Stuck-page recovery: a planner per ChatGPT conversation (S1–S8, H5, H7).
    recovery: recovery::RecoveryFlow,
    /// Page health meters per watched ChatGPT page (H1–H6).
    health: health::HealthFlow,
    /// ChatGPT's tool-permission cards: the ledger of accepted keys, the cards shown (M5).
    cards: cards::CardFlow,
    /// Per scope key, the withheld wake that is the scope's last Activity entry: it is not
    /// recorded again until something else of the scope is. Kept apart from the scope's
    /// status (re-binding does not forget it) and persisted (a restored worker, whose
    /// schedulers see no page yet, does not record it again either).
    withheld_marks: VecMap<String, WithheldMark>,
    /// The Continuity Journal's writer (its outbox persisted) and context pressure (C1, R1).
    journal: journal::JournalFlow,
    /// Handoffs per source scope and the conversations cut-overs left (X1–X8; persisted).
    handoff: handoff::HandoffBook,
    /// The JSON bridge's approval cards and last replies per tab, human turns per scope
    /// (not persisted).
    bridge: bridge::BridgeFlow,
    /// Scopes (ledger keys) whose last delivery could not attach its App: held until their
    /// wait ends (not persisted).
    app_holds: Vec<app::AppHold>,
    /// What the runtime was last told of the bound chats (`chats.report`; not persisted).
    chats: chats::ChatsFlow,
    /// The key of fence nonces: the shell's 16 random bytes at start (not persisted).
    fence_key: Option<[u8; 16]>,
    /// One request pacer per site account: backend reads paced, 429 cooldowns (issue 26).
    pacer: pacer::PacerFlow,
    /// Decisions not yet drained.
    outputs: VecDeque<ContinuityOutput>,
}

impl Continuity {
    /// Nothing bound, Auto off everywhere.
    pub fn new() -> Self {
        Self::default()
    }

    /// The binding table.
    pub fn bindings(&self) -> &Bindings {
        &self.bindings
    }

    /// The Auto settings.
    pub fn auto_gate(&self) -> &AutoGate {
        &self.auto
    }

    /// The last facts of a tab's page.
    pub fn page(&self, tab: TabId) -> Option<&PageReport> {
        self.pages.get(&tab)
    }

    /// The tabs that reported a page, ordered.
    pub fn tabs(&self) -> impl Iterator<Item = TabId> + '_ {
        self.pages.keys().copied()
    }

    /// The shell's randomness for the nonces of fenced data: 16 bytes of
    /// `crypto.getRandomValues`, given once at start (tests give a fixed value).
    pub fn set_fence_entropy(&mut self, entropy: &[u8]) {
        self.fence_key = entropy.get(..16).and_then(|k| <[u8; 16]>::try_from(k).ok());
    }

    /// The nonce of the fence in the message `id` (PROTOCOL.md "Fenced data"): SipHash-2-4
    /// of `id` keyed by the shell's entropy. The shell does not start without 16 bytes of
    /// `crypto.getRandomValues`; only a machine given none (tests) keys on its ledger's epoch.
    pub(super) fn fence_nonce(&self, id: &str) -> continuity_protocol::fence::Nonce {
        let key = self.fence_key.unwrap_or_else(|| {
            let epoch = self.ledger.epoch().as_bytes();
            let a = continuity_protocol::fence::siphash24(&[0; 16], epoch);
            let b = continuity_protocol::fence::siphash24(&[1; 16], epoch);
            let mut key = [0; 16];
            key[..8].copy_from_slice(&a.to_le_bytes());
            key[8..].copy_from_slice(&b.to_le_bytes());
            key
        });
        continuity_protocol::fence::nonce(&key, id)
    }

    /// The progress timing in force (clamped options).
    pub fn progress_config(&self) -> ProgressConfig {
        self.progress
    }

    /// The progress summary of a workspace now (what a check would offer), if any.
    pub fn progress_summary(&self, workspace_id: &str) -> Option<String> {
        progress_summary(workspace_id, &self.pane_outputs)
    }

    /// The in-flight delivery of a scope.
    pub fn in_flight(&self, scope_key: &str) -> Option<&Delivery> {
        self.ledger.active_for(scope_key)
    }

    /// The delivery ledger (read-only).
    pub fn ledger(&self) -> &DeliveryLedger {
        &self.ledger
    }

    /// The next decision, if any.
    pub fn poll(&mut self) -> Option<ContinuityOutput> {
        self.outputs.pop_front()
    }

    /// The earliest scheduler timer.
    pub fn next_deadline(&self) -> Option<Millis> {
        self.scopes
            .values()
            .filter_map(|s| s.scheduler.as_ref().and_then(WakeScheduler::next_deadline))
            .chain(self.ledger.next_deadline())
            .chain(self.queue_deadline())
            .chain(self.recovery.deadline())
            .chain(self.journal.deadline())
            .chain(self.app_deadline())
            .chain(self.pacer_deadline())
            .chain(self.chats_deadline())
            .chain(self.goal_deadline())
            .min()
    }

    /// Fires due scheduler and ledger timers.
    pub fn handle_timeout(&mut self, now: Millis) {
        self.now = now;
        if self.ledger.next_deadline().is_some_and(|at| at <= now) {
            self.ledger.handle_timeout(now);
            self.drain_ledger(now);
            // A resolution may free the page for a scheduler's wake (e.g. a queued batch
            // given up on): the schedulers see the page as it is now.
            self.sync_schedulers(now);
        }
        let keys: Vec<String> = self.scopes.keys().cloned().collect();
        for key in keys {
            if let Some(scheduler) = self.scopes.get_mut(&key).and_then(|s| s.scheduler.as_mut()) {
                if scheduler.next_deadline().is_some_and(|at| at <= now) {
                    scheduler.handle_timeout(now);
                    self.drain_scheduler(now, &key);
                }
            }
        }
        if self.app_retry_due(now) {
            // A held scope may try again: its wake, queue batch, continue or seed goes now.
            self.sync_schedulers(now);
            self.app_retry_held(now);
        }
        self.pacer_timeout(now);
        self.flush_queues(now);
        self.run_due_inbox_checks();
        self.recovery_tick(now);
        self.journal_tick(now);
        self.goal_tick(now);
        self.finish();
    }

    /// Feeds one fact.
    pub fn handle(&mut self, now: Millis, input: ContinuityInput) {
        self.now = now;
        match input {
            ContinuityInput::LinkUp => {
                self.link_up = true;
                self.chats_link_up();
                let resume = self.tracker.resume_point();
                let after_seq = resume.as_ref().map(|r| r.after_seq);
                let log_id = resume.and_then(|r| r.log_id);
                self.call(Purpose::Subscribe, RuntimeCall::Subscribe { after_seq, log_id });
                self.call(Purpose::Catalog, RuntimeCall::Workspaces);
                self.call(Purpose::Profiles, RuntimeCall::ProfilesGet);
                let refs: Vec<(String, String)> = self.bindings.list().map(|b| (b.scope.key(), browser_session_ref(&b.scope))).collect();
                for (scope_key, session_ref) in refs {
                    self.call(Purpose::Counts { scope_key: scope_key.clone() }, RuntimeCall::InboxCounts { session_ref });
                    self.send_due_acks(&scope_key);
                }
                self.send_orphan_acks();
                self.inbox_checks_due();
                self.reissue_held_settles();
                self.journal_pump();
                self.handoff_link_up(now);
                self.bridge_offer(now);
            }
            ContinuityInput::LinkDown => {
                self.link_up = false;
                self.tracker.handle(now, SettleInput::Reconnected);
                self.drain_tracker(now);
                // Answers to lost calls never come: settles held for their inbox read
                // go on without task facts rather than being lost.
                let lost = std::mem::take(&mut self.calls);
                for (_, purpose) in lost {
                    self.abandon(now, purpose, "the companion disconnected");
                }
                self.check_input(now, crate::check_herdr::CheckInput::LinkDown);
            }
            ContinuityInput::StreamHello { boot_id, last_seq, agents, log_id, log_reset } => {
                // A new log (reset or replaced state.db): its seqs start again, so the marks
                // of the old one must not drop its events (issue 7 item 5).
                if log_reset || log_id.is_some() {
                    self.tracker.handle(now, SettleInput::LogIdentity { log_id, reset: log_reset });
                }
                if log_reset {
                    for scheduler in self.scopes.values_mut().filter_map(|s| s.scheduler.as_mut()) {
                        scheduler.handle(now, SchedulerInput::LogReset);
                    }
                }
                self.tracker.handle(now, SettleInput::StreamHello { boot_id, last_seq, agents });
                self.drain_tracker(now);
                self.inbox_checks_due();
            }
            ContinuityInput::StreamEvent(event) => {
                if event.kind == PaneEventKind::PaneRemoved {
                    self.pane_outputs.remove(&event.pane_id);
                }
                self.semantic_herdr_activity(&event.workspace_id);
                self.tracker.handle(now, SettleInput::Event(event));
                self.drain_tracker(now);
                self.persist();
            }
            ContinuityInput::InboxChanged { session_ref, counts } => self.inbox_changed(&session_ref, counts),
            ContinuityInput::PageReported { tab, report } => {
                let page = classify_url(&report.url);
                let target_held = self.handoff_holds_target(tab, &page);
                self.bindings.handle(now, BindingInput::PageVisited { tab, page, target_held });
                self.drain_bindings();
                // The new facts reach the schedulers before a restored delivery is resolved
                // from the same report: resolving may release the next wake, which must be
                // judged on this page as it is now (regression: continuity_props (d) saw a
                // wake go to a page that had just lost its composer).
                self.pages.insert(tab, report.clone());
                // The chat's App is read before anything is typed on these facts.
                self.app_learn(tab);
                self.flush_queues(now);
                self.sync_schedulers(now);
                self.ledger.page(tab, &report);
                self.drain_ledger(now);
                self.pacer_retry_bridge(now);
                self.recovery_page(now, tab);
                self.cards_page(now, tab);
                self.handoff_page(now, tab);
            }
            ContinuityInput::PermissionCards { tab, cards } => self.permission_cards(now, tab, cards),
            ContinuityInput::CardResult { tab, key, clicked } => self.card_result(now, tab, &key, clicked),
            ContinuityInput::RecoveryFacts { tab, facts } => self.recovery_facts(now, tab, facts),
            ContinuityInput::RateLimited { tab, page_load, source, retry_after_ms } => {
                self.pacer_page_rate_limited(now, tab, &page_load, source, retry_after_ms);
            }
            ContinuityInput::SnapshotResult { tab, page_load, answer } => self.recovery_answer(now, tab, &page_load, answer),
            ContinuityInput::HealthSample { tab, page_load, sample } => self.health_sample(now, tab, &page_load, sample),
            ContinuityInput::RecoverySettings { stored } => self.recovery_settings(stored.as_ref().map(|r| r.as_ref())),
            ContinuityInput::PageGone { tab } => {
                self.page_gone(now, tab);
                self.check_input(now, crate::check_herdr::CheckInput::PageGone { tab });
            }
            ContinuityInput::TabClosed { tab } => {
                self.page_gone(now, tab);
                self.bindings.handle(now, BindingInput::TabClosed { tab });
                self.drain_bindings();
            }
            ContinuityInput::DeliveryReport { tab, id, outcome } => {
                self.emit(ContinuityOutput::DeliverySeen { tab, id: id.clone() });
                if let DeliveryOutcome::AppNotAttached { detail } = outcome {
                    self.app_not_attached(tab, &id, detail);
                }
                self.ledger.report(now, tab, &id, &outcome);
                self.drain_ledger(now);
            }
            ContinuityInput::Bind { tab, workspace } => {
                let page = self.page_kind(tab);
                let target_held = self.handoff_holds_target(tab, &page);
                self.bindings.handle(now, BindingInput::Bind { tab, page, workspace, target_held });
                self.drain_bindings();
                self.app_learn(tab);
            }
            ContinuityInput::Unbind { scope_key } => {
                let scope = self.bindings.list().find(|b| b.scope.key() == scope_key).map(|b| b.scope.clone());
                if let Some(scope) = scope {
                    self.bindings.handle(now, BindingInput::UnbindScope { scope });
                    self.drain_bindings();
                }
            }
            ContinuityInput::RefreshCatalog => {
                self.call(Purpose::Catalog, RuntimeCall::Workspaces);
            }
            ContinuityInput::ToggleAuto { tab } => {
                let page = self.page_kind(tab);
                if let (Some(scope), Ok(())) = (page.scope(), self.auto.hud_action(&page, HudAction::ToggleAuto)) {
                    let on = !self.auto.scope_toggle(&scope);
                    self.auto.set_scope_auto(&scope, on);
                    self.persist();
                }
            }
            ContinuityInput::Continue { tab } => self.manual_continue(now, tab),
            ContinuityInput::CheckHerdr { tab } => self.check_herdr(now, tab),
            ContinuityInput::BridgeDecide { tab, batch_id, call, decision } => self.bridge_decide(tab, &batch_id, call, decision),
            ContinuityInput::BridgePrompt { tab } => self.bridge_prompt(tab),
            ContinuityInput::ForgetApp { tab } => self.app_forget(now, tab),
            ContinuityInput::JournalOpt(JournalOpt { tab, on }) => self.journal_opt(tab, on),
            ContinuityInput::Handoff { tab } => self.handoff_start(now, tab),
            ContinuityInput::HandoffResume { tab } => self.handoff_resume(now, tab),
            ContinuityInput::HandoffTab { transfer_id, tab } => self.handoff_tab(now, &transfer_id, tab),
            ContinuityInput::LlmJudge { tab, user_text, assistant_text } => self.llm_judge(tab, user_text, assistant_text),
            ContinuityInput::GoalSet { tab, text } => self.goal_set_pressed(tab, text),
            ContinuityInput::TurnEnded {
                tab,
                user_text,
                assistant_text,
                user_marker,
                message_id,
                user_message_id,
                pressed,
                user_stopped,
            } => {
                let human_id = user_message_id.clone();
                if !pressed {
                    // First: a human turn after a Stop ends it, for the bridge and the judge.
                    self.semantic_user_turn(now, tab, user_marker.as_deref());
                    // The page saw the user's Stop on this reply: the Stop belongs to this
                    // turn, whatever the worker heard before (or did not).
                    if user_stopped {
                        self.stop_current_turn(now, tab);
                    }
                    self.journal_turn_ended(
                        now,
                        tab,
                        [(user_message_id, "user", &user_text), (message_id.clone(), "assistant", &assistant_text)],
                    );
                }
                // The bridge reads the reply from its start as the page sent it (up to 64 KiB;
                // of a longer one only what precedes the page's cut line): a code fence is
                // open or not from the reply's start, so a cut start would make a fenced
                // call line look live. The judge reads the turn's end.
                let user_text = crate::limits::clip_tail(user_text, crate::limits::MAX_TURN_USER_CHARS);
                let turn = bridge::BridgeTurn {
                    user_text: &user_text,
                    user_marker: user_marker.as_deref(),
                    user_message_id: human_id,
                    message_id,
                    assistant_text: &assistant_text,
                    pressed,
                };
                self.bridge_turn_ended(tab, turn);
                let assistant_text = crate::limits::clip_tail(assistant_text, crate::limits::MAX_TURN_ASSISTANT_CHARS);
                if !pressed {
                    self.recovery_turn_ended(tab, user_marker.as_deref());
                    self.turn_ended(now, tab, user_text, assistant_text, user_marker.as_deref());
                }
            }
            ContinuityInput::UserStop { tab, page_load } => self.user_stop(now, tab, &page_load),
            ContinuityInput::ThreadFacts { tab, thread } => self.thread_facts(tab, thread),
            ContinuityInput::JudgeSettings { stored } => self.judge_settings(stored.as_ref().map(|r| r.as_ref())),
            ContinuityInput::AllowProjectAuto { allowed } => {
                self.auto.set_allow_project_auto(allowed);
                self.persist();
            }
            ContinuityInput::LanguageChanged { language } => {
                self.language = language;
                self.reconfigure_schedulers(now);
            }
            ContinuityInput::ProgressSettings { tick_sec, fallback_sec } => {
                self.progress = ProgressConfig::from_settings(tick_sec, fallback_sec);
                self.reconfigure_schedulers(now);
                self.persist();
            }
            ContinuityInput::StreamPosition { seq } => self.stream_position(now, seq),
            ContinuityInput::CatalogChanged { seq } => {
                self.stream_position(now, seq);
                // One catalog read at a time; a change while one is out is read after it.
                if self.calls.values().any(|p| matches!(p, Purpose::Catalog)) {
                    self.catalog_reread = true;
                } else {
                    self.call(Purpose::Catalog, RuntimeCall::Workspaces);
                }
            }
            ContinuityInput::AgentOutput { workspace_id, pane_id, agent, tail, seq, stale } => {
                if seq > 0 {
                    self.stream_position(now, seq);
                }
                if !stale {
                    self.agent_output(PaneOutput { workspace_id, agent, baseline: tail.clone(), tail, seq }, pane_id);
                }
            }
            ContinuityInput::Answered { id, result } => {
                if let Some(purpose) = self.calls.remove(&id) {
                    self.answered(now, purpose, result);
                }
            }
            ContinuityInput::QueueAdd { tab, text, whole_chars } => self.queue_add(tab, &text, whole_chars),
            ContinuityInput::QueueClear { tab, question } => self.queue_clear(tab, question.as_deref()),
            ContinuityInput::QueueRead { op, stored } => self.queue_read(now, op, stored),
            ContinuityInput::QueueWritten { op, result } => self.queue_written(now, op, result),
        }
        // The user's queued turn goes before anything the schedulers offer.
        self.flush_queues(now);
        self.sync_schedulers(now);
        self.run_due_inbox_checks();
        // The Auto switch or a page may have changed what recovery watches.
        self.recovery_schedule(now);
        self.finish();
    }

    /// The page of `tab` is gone (its tab may stay): what each concern knew of it goes.
    fn page_gone(&mut self, now: Millis, tab: TabId) {
        self.recovery_page_gone(tab);
        self.cards_page_gone(tab);
        self.journal_page_gone(tab);
        self.bridge_page_gone(tab);
        self.pages.remove(&tab);
        self.ledger.page_gone(now, tab);
    }

    /// The stream got to `seq` (an event the tracker does not read): it may end the replay
    /// and settle workspaces from the `hello` snapshot.
    fn stream_position(&mut self, now: Millis, seq: u64) {
        if !self.tracker.reconcile_pending() {
            return;
        }
        self.tracker.handle(now, SettleInput::StreamPosition { seq });
        self.drain_tracker(now);
        self.persist();
    }

    /// Hands the progress timing and language to every scheduler.
    fn reconfigure_schedulers(&mut self, now: Millis) {
        let (progress, language) = (self.progress, self.language);
        let keys: Vec<String> = self.scopes.keys().cloned().collect();
        for key in keys {
            if let Some(scheduler) = self.scopes.get_mut(&key).and_then(|s| s.scheduler.as_mut()) {
                scheduler.handle(now, SchedulerInput::ConfigChanged { progress, language });
                self.drain_scheduler(now, &key);
            }
        }
    }

    fn finish(&mut self) {
        // After every input and timer: R2's facts may have come together.
        self.rollover_due();
        // And the runtime hears of a bound chat that started or stopped generating.
        self.chats_report(self.now);
        self.emit(ContinuityOutput::ViewsChanged);
        // Collapse repeated render/persist requests of one batch into one each.
        let mut seen_views = false;
        let mut seen_persist = false;
        let mut kept = VecDeque::with_capacity(self.outputs.len());
        while let Some(output) = self.outputs.pop_back() {
            let keep = match output {
                ContinuityOutput::ViewsChanged => !std::mem::replace(&mut seen_views, true),
                ContinuityOutput::Persist => !std::mem::replace(&mut seen_persist, true),
                _ => true,
            };
            if keep {
                kept.push_front(output);
            }
        }
        self.outputs = kept;
    }

    fn call(&mut self, purpose: Purpose, call: RuntimeCall) -> CallId {
        let now = self.now;
        self.next_call = self.next_call.wrapping_add(1);
        let id = self.next_call;
        if self.link_up {
            self.calls.insert(id, purpose);
            self.emit(ContinuityOutput::Request { id, call });
        } else {
            // Offline: answer at once so nothing waits forever.
            self.abandon(now, purpose, "the companion is not connected");
        }
        id
    }

    fn page_kind(&self, tab: TabId) -> PageKind {
        self.pages.get(&tab).map_or(PageKind::Unsupported { reason: crate::scope::UnsupportedPage::NotAUrl }, |p| classify_url(&p.url))
    }

    fn scopes_with_ref(&mut self, session_ref: &str) -> Vec<(String, &mut ScopeStatus)> {
        let keys: VecSet<String> =
            self.bindings.list().filter(|b| browser_session_ref(&b.scope) == session_ref).map(|b| b.scope.key()).collect();
        self.scopes.iter_mut().filter(|(k, _)| keys.contains(*k)).map(|(k, s)| (k.clone(), s)).collect()
    }

    fn scope_of_tab(&self, tab: TabId) -> Option<Scope> {
        self.page_kind(tab).scope()
    }
}
