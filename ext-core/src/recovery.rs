//! The recovery planner of one ChatGPT conversation (SPEC S1–S8, H5–H7): notices a page
//! that seems stuck, asks for evidence (the conversation snapshot, through the
//! [`crate::stale_view`] probe) and acts on evidence only — one safe reload, one click on
//! ChatGPT's own Retry — within budgets that a worker restart cannot reset.
//!
//! When a page is *suspect* (each from the page adapter's facts; times are the planner's):
//! - a user turn waits and no assistant output appeared for [`REPLY_TIMEOUT_MS`];
//! - a reply streams but its body has not grown nor its signature changed for
//!   [`ASSISTANT_STALL_MS`] (a "connection interrupted" placeholder is not progress, S8);
//! - the thread shows a send-timeout error (S6).
//!
//! Then, at most one probe per [`PROBE_INTERVAL_MS`] and none while healthy (a healthy
//! idle tab costs the site nothing), the snapshot decides:
//! - synced → nothing (normal flow); still suspect → probe again later;
//! - server ahead → one view sync (a reload; never a resubmit, S3);
//! - request not accepted → ChatGPT's Retry, once, if the page offers it; otherwise, when
//!   the waiting turn is a message of ours (its marker names a delivery the composition can
//!   send again), a bounded, paced resend ([`MAX_RESENDS`] per incident, at least
//!   [`RESEND_SPACING_MS`] apart, each proven by a fresh snapshot whose current node is still
//!   the page's last assistant message: the server's conversation does not hold our turn);
//!   a human's turn is never retyped: the HUD asks the user;
//! - server stalled → wait [`SERVER_STALL_WAIT_MS`] more, then one reload (S4);
//! - unknown → nothing (S5) — except with a send-timeout error on the page, where a view
//!   sync is preferred over a second user turn (S6);
//! - a send-timeout error: server at the assistant → reload, never Retry; server still at
//!   the user → Retry once.
//!
//! Budgets per incident (S7, H5, H6): one Retry, [`MAX_RESENDS`] resends, one page reload
//! (`location.reload()`), then one tab reload (`chrome.tabs.reload`) for the same fault, and
//! a [`RELOAD_COOLDOWN_MS`] between reloads. An incident ends when the page is healthy
//! again ([`RecoveryPlanner::turn_ended`]: a reply that streamed and finished on the page
//! load, or a human turn): its budgets start again. Across incidents every conversation
//! stays bounded per rolling hour: at most [`MAX_RELOADS_PER_HOUR`] reloads and
//! [`MAX_RESUBMITS_PER_HOUR`] resubmissions (Retry clicks and resends), so a fault that comes
//! back after every healthy turn cannot loop. Every action is recorded in the durable
//! state *before* the driver carries it out ([`RecoveryPlanner::pending`]), so a worker
//! restart meanwhile never repeats it. Spent (the incident's budgets or the hour's) →
//! [`RecoveryStatus::RolloverRecommended`], which the composition turns into the controlled
//! handoff when Auto and the rollover gate allow it, else a HUD recommendation naming why.
//!
//! The page health meters (`crate::health`, driven by `continuity/health`) come in through
//! two entries: [`RecoveryPlanner::health_pressure`] (H3: a probe, and a reload only when
//! the snapshot shows a finished assistant `current_node`) and
//! [`RecoveryPlanner::health_maintenance`] (H4: a maintenance reload); both spend the same
//! reload budgets and leave the same durable pending record. The timers are the options
//! page's ([`RecoveryTimings`], `crate::recovery_config`; the constants below by default).
//!
//! Gate: nothing is probed or done unless the scope's Auto is on and the page is ChatGPT
//! (M6); no action while the composer holds a human draft, a permission card waits, one of
//! our deliveries is unconfirmed, or a 429 cooldown runs (H7, then not even a probe).
//!
//! Invariants (property test in `tests/it/recovery.rs`): never more actions than the
//! budgets of an incident nor, across any interleaving of faults and renewals, than the
//! hourly bounds; none without a snapshot that calls for it (or the S6 view sync), none from
//! `unknown` otherwise, never a resend without a snapshot proving the server lacks the
//! turn, never a probe while not suspect or during a 429 cooldown.

use serde::Serialize;

use crate::json_read::{ReadJson, WriteJson};
use crate::rate_limit::RateLimit;
use crate::stale_view::{classify, DomView, ServerRole, Snapshot, ViewState};
use crate::Millis;

/// A user turn without any reply output for this long is suspect (REFERENCE §2).
pub const REPLY_TIMEOUT_MS: Millis = 30_000;
/// A streaming reply without progress for this long is suspect.
pub const ASSISTANT_STALL_MS: Millis = 30_000;
/// Extra wait for a stalled server before the one reload.
pub const SERVER_STALL_WAIT_MS: Millis = 60_000;
/// At most one snapshot probe per this interval while suspect.
pub const PROBE_INTERVAL_MS: Millis = 15_000;
/// Between two reloads.
pub const RELOAD_COOLDOWN_MS: Millis = 60_000;
/// Resends of a message of ours the server never accepted, per incident.
pub const MAX_RESENDS: u32 = 2;
/// Between two resends: the request pacer's interval, so a resend is never closer to the
/// last one than any backend request of the account may be.
pub const RESEND_SPACING_MS: Millis = crate::request_pacer::PACE_MS;
/// Reloads (page and tab) per conversation in any rolling hour, across incidents.
pub const MAX_RELOADS_PER_HOUR: usize = 3;
/// Resubmissions (ChatGPT's Retry and resends) per conversation in any rolling hour.
pub const MAX_RESUBMITS_PER_HOUR: usize = 3;
/// The rolling window of the hourly bounds.
pub const HOUR_MS: Millis = 3_600_000;

/// The planner's timers (the options page's thresholds; the constants above by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RecoveryTimings {
    /// A user turn without reply output for this long is suspect.
    pub reply_timeout_ms: Millis,
    /// A streaming reply without progress for this long is suspect.
    pub assistant_stall_ms: Millis,
    /// Extra wait for a stalled server before the one reload.
    pub server_stall_ms: Millis,
    /// Between two reloads.
    pub reload_cooldown_ms: Millis,
}

impl Default for RecoveryTimings {
    fn default() -> Self {
        Self {
            reply_timeout_ms: REPLY_TIMEOUT_MS,
            assistant_stall_ms: ASSISTANT_STALL_MS,
            server_stall_ms: SERVER_STALL_WAIT_MS,
            reload_cooldown_ms: RELOAD_COOLDOWN_MS,
        }
    }
}

/// What the page adapter reports for recovery, on every page report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RecoveryFacts {
    /// The page's load id (a reload gives a new one).
    pub page_load: String,
    /// A reply streams (Stop shown or streaming markup).
    pub generating: bool,
    /// What the DOM shows (last assistant message, a user turn waiting).
    pub view: DomView,
    /// A signature of the last assistant body (changes when it changes).
    pub signature: String,
    /// A send-timeout thread error is shown; `Some(true)` when it has a Retry button.
    pub send_timeout: Option<bool>,
    /// The composer holds a human draft.
    pub human_draft: bool,
    /// A tool permission card waits.
    pub permission_card: bool,
    /// One of our deliveries on this page is unconfirmed.
    pub delivery_uncertain: bool,
    /// The scope's Auto is on.
    pub auto_on: bool,
    /// The page is ChatGPT.
    pub chatgpt: bool,
    /// The waiting user turn is a message of ours the composition can send again (its
    /// marker names a delivery it remembers); a human's turn is never resent.
    pub ours_waiting: bool,
}

/// What the driver must do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum RecoveryAction {
    /// Read the conversation snapshot and answer with [`RecoveryPlanner::snapshot`].
    Probe,
    /// `location.reload()` in the page (level 1).
    ReloadPage,
    /// `chrome.tabs.reload` of the page's own tab (level 2).
    ReloadTab,
    /// Click ChatGPT's Retry of the thread error.
    ClickRetry,
    /// Send our waiting message again as a new delivery: the snapshot proved the server
    /// never got it.
    Resend,
}

/// Where the planner stands (HUD).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RecoveryStatus {
    /// Nothing suspect.
    Healthy,
    /// Suspect; evidence is being gathered.
    Checking {
        /// Why the page is suspect.
        why: Suspect,
    },
    /// The last probe gave this; nothing to do (yet).
    Observed {
        /// The probe's verdict.
        state: ViewState,
    },
    /// Waiting for a stalled server before the one reload.
    WaitingForServer {
        /// Until when.
        until: Millis,
    },
    /// The server never got our message; the next resend waits for the pacing.
    ResendPaced {
        /// Not before.
        until: Millis,
    },
    /// The server never got the user turn and the page offers no Retry: the user decides.
    NeedsUser,
    /// An action was carried out (or is being).
    Acted {
        /// Which.
        action: RecoveryAction,
    },
    /// Budgets spent: a new conversation is the way on (S7, H6).
    RolloverRecommended {
        /// Which budgets.
        why: Spent,
    },
}

/// Which budgets are spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Spent {
    /// The incident's: Retry, resends or both reloads (renewed once the page is healthy).
    Incident,
    /// The rolling hour's bound (renewed as the hour's actions age out).
    Hour,
}

/// Why a page is suspect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Suspect {
    /// No reply output after a user turn.
    ReplyTimeout,
    /// A streaming reply stopped progressing.
    AssistantStall,
    /// A send-timeout error is shown.
    SendTimeout,
    /// The page's health meters show sustained pressure without assistant progress (H3).
    HealthPressure,
}

/// An action recorded before it is carried out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, crate::json_read::ReadJson, crate::json_read::WriteJson)]
pub struct Pending {
    /// The action.
    pub action: RecoveryAction,
    /// When it was decided.
    pub at: Millis,
    /// The page load it was decided on (a new load means it happened).
    pub page_load: String,
}

/// The planner of one conversation (see the module doc). Persist it whole.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct RecoveryPlanner {
    retries_used: u32,
    page_reloads_used: u32,
    tab_reloads_used: u32,
    /// Resends of this incident.
    #[serde(default)]
    resends_used: u32,
    last_reload_at: Option<Millis>,
    /// The last resend (pacing).
    #[serde(default)]
    last_resend_at: Option<Millis>,
    /// Reloads of the rolling hour (the hourly bound, across incidents).
    #[serde(default)]
    reload_times: Vec<Millis>,
    /// Retry clicks and resends of the rolling hour.
    #[serde(default)]
    resubmit_times: Vec<Millis>,
    /// An action decided and not yet seen done.
    pending: Option<Pending>,
    /// 429 back-off.
    rate_limit: RateLimit,
    /// For the HUD (not persisted: the next page report tells it again).
    #[serde(skip)]
    status: Option<RecoveryStatus>,
    // Progress tracking (reset by every page load).
    #[serde(skip)]
    page_load: String,
    #[serde(skip)]
    progress_at: Option<Millis>,
    #[serde(skip)]
    signature: String,
    #[serde(skip)]
    waiting_since: Option<Millis>,
    #[serde(skip)]
    last_probe_at: Option<Millis>,
    #[serde(skip)]
    probe_out: bool,
    #[serde(skip)]
    stall_wait_until: Option<Millis>,
    #[serde(skip)]
    facts: RecoveryFacts,
    /// Probes asked for in this worker life (for the bench).
    #[serde(skip)]
    probes: u64,
    /// The probe out was asked by the health meters (H3): only a finished assistant
    /// `current_node` makes its answer a reload.
    #[serde(skip)]
    health_probe: bool,
    /// The timers in force (options page; set by the composition, not persisted).
    #[serde(skip)]
    timings: RecoveryTimings,
    /// A reply streamed on this page load since the last action (a turn that ends after
    /// it was a healthy one).
    #[serde(skip)]
    streamed: bool,
    /// When the hour's bound that was hit frees again.
    #[serde(skip)]
    hour_frees_at: Option<Millis>,
}

impl RecoveryPlanner {
    /// The HUD's status.
    pub fn status(&self) -> RecoveryStatus {
        self.status.clone().unwrap_or(RecoveryStatus::Healthy)
    }

    /// The action recorded and not yet seen done.
    pub fn pending(&self) -> Option<&Pending> {
        self.pending.as_ref()
    }

    /// Probes asked for in this worker life.
    pub fn probes(&self) -> u64 {
        self.probes
    }

    /// The options page's timers.
    pub fn set_timings(&mut self, timings: RecoveryTimings) {
        self.timings = timings;
    }

    /// H3: the page's meters show sustained pressure and no assistant progress. Asks for a
    /// probe (rationed like the others, none while an action is pending, a reload's
    /// cooldown or a 429 back-off runs) whose answer reloads only when the server's
    /// `current_node` is a finished assistant message; with the reload budgets spent it
    /// recommends a rollover and asks nothing (H6).
    pub fn health_pressure(&mut self, now: Millis) -> Option<RecoveryAction> {
        if !self.facts.auto_on || !self.facts.chatgpt || self.pending.is_some() || self.probe_out {
            return None;
        }
        if self.reloads_left(now) == 0 {
            return self.spent(if self.reloads_left_incident() == 0 { Spent::Incident } else { Spent::Hour });
        }
        let cooling = self.rate_limit.cooling_until(now).is_some()
            || self.last_reload_at.is_some_and(|at| now.saturating_sub(at) < self.timings.reload_cooldown_ms)
            || self.last_probe_at.is_some_and(|at| now.saturating_sub(at) < PROBE_INTERVAL_MS);
        if cooling {
            return None;
        }
        self.status = Some(RecoveryStatus::Checking { why: Suspect::HealthPressure });
        self.last_probe_at = Some(now);
        self.probe_out = true;
        self.health_probe = true;
        self.probes += 1;
        Some(RecoveryAction::Probe)
    }

    /// H4: a critical heap after the page was quiet: one maintenance reload within the
    /// reload budgets (never while a reply streams or a blocker holds); spent → a rollover
    /// is recommended (H6).
    pub fn health_maintenance(&mut self, now: Millis) -> Option<RecoveryAction> {
        if !self.facts.auto_on || !self.facts.chatgpt || self.facts.generating || self.pending.is_some() || self.probe_out {
            return None;
        }
        self.act(now, Want::Reload)
    }

    /// Retries of ChatGPT's Retry button left in this incident and this hour (S7).
    pub fn retries_left(&self, now: Millis) -> u32 {
        1u32.saturating_sub(self.retries_used).min(hour_left(&self.resubmit_times, now, MAX_RESUBMITS_PER_HOUR))
    }

    /// Resends left in this incident and this hour.
    pub fn resends_left(&self, now: Millis) -> u32 {
        MAX_RESENDS.saturating_sub(self.resends_used).min(hour_left(&self.resubmit_times, now, MAX_RESUBMITS_PER_HOUR))
    }

    /// Reloads left: the page reload, then the tab reload (S7, H5), within the hour's bound.
    pub fn reloads_left(&self, now: Millis) -> u32 {
        self.reloads_left_incident().min(hour_left(&self.reload_times, now, MAX_RELOADS_PER_HOUR))
    }

    fn reloads_left_incident(&self) -> u32 {
        1u32.saturating_sub(self.page_reloads_used) + 1u32.saturating_sub(self.tab_reloads_used)
    }

    /// The running 429 cooldown's end.
    pub fn cooling_until(&self, now: Millis) -> Option<Millis> {
        self.rate_limit.cooling_until(now)
    }

    /// A 429 or a visible rate-limit notice on the page.
    pub fn rate_limited(&mut self, now: Millis) {
        self.rate_limit.observe(now);
    }

    /// The account's request pacer holds every request and action until `until` (a
    /// cooldown of `crate::request_pacer`): no probe, Retry or reload before it.
    pub fn hold_until(&mut self, until: Millis) {
        self.rate_limit.hold_until(until);
    }

    /// The probe just asked for did not go out (the account's request pacer refused it):
    /// nothing is out, and the next tick may ask again.
    pub fn probe_deferred(&mut self) {
        if std::mem::take(&mut self.probe_out) {
            self.probes = self.probes.saturating_sub(1);
            self.health_probe = false;
            self.last_probe_at = None;
        }
    }

    /// A page report; returns what to do now.
    pub fn page(&mut self, now: Millis, facts: RecoveryFacts) -> Option<RecoveryAction> {
        if facts.page_load != self.page_load {
            // A new page load: whatever was pending happened; progress starts again.
            self.page_load = facts.page_load.clone();
            self.pending = None;
            self.progress_at = Some(now);
            self.waiting_since = None;
            self.stall_wait_until = None;
            self.probe_out = false;
            self.streamed = false;
        }
        if self.pending.as_ref().is_some_and(|p| p.action == RecoveryAction::ClickRetry) && facts.send_timeout.is_none() {
            // The error card is gone: the Retry was taken.
            self.pending = None;
        }
        if self.pending.as_ref().is_some_and(|p| p.action == RecoveryAction::Resend) && facts.generating {
            // A reply streams: the resent message was accepted.
            self.pending = None;
        }
        if facts.generating && self.pending.is_none() {
            self.streamed = true;
        }
        // Progress: the body changed, or a reply started (after a quiet spell the last
        // change may be long ago; a reply's start is not a stall).
        if facts.signature != self.signature || (facts.generating && !self.facts.generating) {
            self.signature = facts.signature.clone();
            self.progress_at = Some(now);
        }
        if facts.view.user_waiting && !facts.generating {
            self.waiting_since.get_or_insert(now);
        } else {
            self.waiting_since = None;
        }
        self.facts = facts;
        self.tick(now)
    }

    /// Time passed (call at least every few seconds while a page is watched).
    pub fn tick(&mut self, now: Millis) -> Option<RecoveryAction> {
        if self.pending.as_ref().is_some_and(|p| now.saturating_sub(p.at) >= self.timings.reload_cooldown_ms) {
            // Not seen done within the cooldown: it counts as spent, never repeated.
            self.pending = None;
        }
        if self.spent_why() == Some(Spent::Hour) && self.hour_frees_at.is_none_or(|at| now >= at) {
            // The hour's oldest actions aged out: the planner may act again.
            self.status = Some(RecoveryStatus::Healthy);
        }
        let Some(why) = self.suspect(now) else {
            if !matches!(self.status, Some(RecoveryStatus::RolloverRecommended { .. } | RecoveryStatus::Acted { .. })) {
                self.status = Some(RecoveryStatus::Healthy);
            }
            self.stall_wait_until = None;
            return None;
        };
        if !self.facts.auto_on || !self.facts.chatgpt || self.pending.is_some() || self.probe_out {
            return None;
        }
        if self.spent_why().is_some() {
            // Spent: no probe can lead anywhere until the page is healthy again (or the
            // hour's bound frees); the site is not asked in vain.
            return None;
        }
        if self.rate_limit.cooling_until(now).is_some() {
            return None;
        }
        if let Some(until) = self.stall_wait_until {
            if now < until {
                self.status = Some(RecoveryStatus::WaitingForServer { until });
                return None;
            }
        }
        if self.last_probe_at.is_some_and(|at| now.saturating_sub(at) < PROBE_INTERVAL_MS) {
            return None;
        }
        if !matches!(self.status, Some(RecoveryStatus::Observed { .. } | RecoveryStatus::NeedsUser | RecoveryStatus::ResendPaced { .. })) {
            self.status = Some(RecoveryStatus::Checking { why });
        }
        self.last_probe_at = Some(now);
        self.probe_out = true;
        self.probes += 1;
        Some(RecoveryAction::Probe)
    }

    fn suspect(&self, now: Millis) -> Option<Suspect> {
        if self.facts.send_timeout.is_some() {
            return Some(Suspect::SendTimeout);
        }
        let quiet_since = |since: Option<Millis>, limit: Millis| since.is_some_and(|at| now.saturating_sub(at) >= limit);
        let last_progress = self.progress_at.max(self.waiting_since);
        if self.waiting_since.is_some() && quiet_since(last_progress, self.timings.reply_timeout_ms) {
            return Some(Suspect::ReplyTimeout);
        }
        if self.facts.generating && quiet_since(self.progress_at, self.timings.assistant_stall_ms) {
            return Some(Suspect::AssistantStall);
        }
        None
    }

    /// The snapshot probe's answer; returns the action it calls for, already recorded.
    pub fn snapshot(&mut self, now: Millis, snapshot: &Snapshot) -> Option<RecoveryAction> {
        if !std::mem::take(&mut self.probe_out) {
            return None;
        }
        let state = classify(&self.facts.view, snapshot, now);
        self.status = Some(RecoveryStatus::Observed { state });
        if std::mem::take(&mut self.health_probe) && self.facts.send_timeout.is_none() {
            // H3: the meters' probe proves the server finished the reply, or changes nothing.
            let finished = matches!(snapshot, Snapshot::Read(node) if node.role == ServerRole::Assistant && node.finished);
            if finished {
                return self.act(now, Want::Reload);
            }
        }
        let wanted = match (state, self.facts.send_timeout) {
            // S6 is decided on the server's node itself.
            (_, Some(retry_offered)) => match s6(&self.facts.view, snapshot) {
                Want::Retry if !retry_offered => {
                    self.status = Some(RecoveryStatus::NeedsUser);
                    return None;
                }
                want => want,
            },
            // The server's current node is the page's last assistant message, finished: the
            // server's conversation does not hold the waiting turn. Ours goes again (paced,
            // bounded); a human's is theirs to send.
            (ViewState::RequestNotAccepted, None) if self.facts.ours_waiting => Want::Resend,
            (ViewState::RequestNotAccepted, None) => {
                self.status = Some(RecoveryStatus::NeedsUser);
                return None;
            }
            (ViewState::ServerAhead, None) => Want::Reload,
            (ViewState::ServerStalled, None) => match self.stall_wait_until {
                Some(until) if now >= until => Want::Reload,
                Some(_) => return None,
                None => {
                    let until = now.saturating_add(self.timings.server_stall_ms);
                    self.stall_wait_until = Some(until);
                    self.status = Some(RecoveryStatus::WaitingForServer { until });
                    return None;
                }
            },
            (ViewState::Synced | ViewState::Unknown, None) => return None,
        };
        self.act(now, wanted)
    }

    fn act(&mut self, now: Millis, want: Want) -> Option<RecoveryAction> {
        let f = &self.facts;
        if f.human_draft || f.permission_card || f.delivery_uncertain || self.rate_limit.cooling_until(now).is_some() {
            return None;
        }
        let action = match want {
            Want::Retry if self.retries_used == 0 => RecoveryAction::ClickRetry,
            Want::Retry => return self.spent(Spent::Incident),
            Want::Resend if self.resends_used >= MAX_RESENDS => return self.spent(Spent::Incident),
            Want::Resend => {
                if let Some(until) = self.last_resend_at.map(|at| at.saturating_add(RESEND_SPACING_MS)).filter(|until| now < *until) {
                    self.status = Some(RecoveryStatus::ResendPaced { until });
                    return None;
                }
                RecoveryAction::Resend
            }
            Want::Reload => {
                if self.last_reload_at.is_some_and(|at| now.saturating_sub(at) < self.timings.reload_cooldown_ms) {
                    return None;
                }
                if self.page_reloads_used == 0 {
                    RecoveryAction::ReloadPage
                } else if self.tab_reloads_used == 0 {
                    RecoveryAction::ReloadTab
                } else {
                    return self.spent(Spent::Incident);
                }
            }
        };
        // The hour's bound, across incidents.
        let reload = matches!(action, RecoveryAction::ReloadPage | RecoveryAction::ReloadTab);
        let (times, cap) =
            if reload { (&mut self.reload_times, MAX_RELOADS_PER_HOUR) } else { (&mut self.resubmit_times, MAX_RESUBMITS_PER_HOUR) };
        times.retain(|at| now.saturating_sub(*at) < HOUR_MS);
        if times.len() >= cap {
            self.hour_frees_at = times.iter().min().map(|at| at.saturating_add(HOUR_MS));
            return self.spent(Spent::Hour);
        }
        times.push(now);
        match action {
            RecoveryAction::ClickRetry => self.retries_used += 1,
            RecoveryAction::Resend => {
                self.resends_used += 1;
                self.last_resend_at = Some(now);
            }
            RecoveryAction::ReloadPage => self.page_reloads_used += 1,
            RecoveryAction::ReloadTab => self.tab_reloads_used += 1,
            RecoveryAction::Probe => {}
        }
        if reload {
            self.last_reload_at = Some(now);
        }
        self.streamed = false;
        self.stall_wait_until = None;
        self.pending = Some(Pending { action: action.clone(), at: now, page_load: self.page_load.clone() });
        self.status = Some(RecoveryStatus::Acted { action: action.clone() });
        Some(action)
    }

    fn spent(&mut self, why: Spent) -> Option<RecoveryAction> {
        self.status = Some(RecoveryStatus::RolloverRecommended { why });
        None
    }

    /// Which budgets are spent, when the planner recommends a new conversation.
    pub fn spent_why(&self) -> Option<Spent> {
        match self.status {
            Some(RecoveryStatus::RolloverRecommended { why }) => Some(why),
            _ => None,
        }
    }

    /// After a restore: an action recorded by the old worker counts as done (it may have
    /// happened); nothing is repeated.
    pub fn restored(&mut self) {
        self.pending = None;
    }

    /// A turn of the conversation ended on the page (`turn_ended`): when the human wrote
    /// it, or its reply streamed and finished on this page load with no action of ours
    /// pending since, the page is healthy again and the incident is over: its budgets start
    /// again ([`Self::renew`]). Returns whether they did. A fault that comes back after
    /// each healthy turn stays bounded by the hourly bounds.
    pub fn turn_ended(&mut self, human: bool) -> bool {
        let healthy = human || (self.streamed && self.pending.is_none());
        if healthy {
            self.renew();
        }
        healthy
    }

    /// The incident is over: its budgets (Retry, resends, page and tab reload) start again.
    /// What bounds a conversation across incidents stays: the hour's actions, the reload
    /// cooldown, the resend pacing, a 429 back-off and a pending action.
    pub fn renew(&mut self) {
        self.retries_used = 0;
        self.resends_used = 0;
        self.page_reloads_used = 0;
        self.tab_reloads_used = 0;
        self.stall_wait_until = None;
        // The HUD keeps showing the last action taken; a recommendation or a question the
        // renewed budgets answer goes.
        if matches!(self.status, Some(RecoveryStatus::RolloverRecommended { .. } | RecoveryStatus::NeedsUser)) {
            self.status = Some(RecoveryStatus::Healthy);
        }
    }
}

/// S6, a send-timeout error on the page: the server already has an assistant message the
/// page does not show as its last one (answered, or answering) → sync the view, never
/// Retry; the server is still at the user, or ends at the page's last assistant message
/// (the turn never arrived) → ChatGPT's Retry; no evidence → a view sync, never a second
/// user turn.
fn s6(view: &DomView, snapshot: &Snapshot) -> Want {
    let Snapshot::Read(node) = snapshot else { return Want::Reload };
    let dom_id = view.last_assistant.as_ref().and_then(|m| m.id.as_deref());
    match node.role {
        ServerRole::Assistant if dom_id == Some(node.id.as_str()) && node.finished => Want::Retry,
        ServerRole::User => Want::Retry,
        ServerRole::Assistant | ServerRole::Other => Want::Reload,
    }
}

/// What is left of an hourly bound.
fn hour_left(times: &[Millis], now: Millis, cap: usize) -> u32 {
    let used = times.iter().filter(|at| now.saturating_sub(**at) < HOUR_MS).count();
    u32::try_from(cap.saturating_sub(used)).unwrap_or(u32::MAX)
}

#[derive(Debug, Clone, Copy)]
enum Want {
    Retry,
    Resend,
    Reload,
}

impl crate::json_read::ReadJson for RecoveryAction {
    fn read_json(value: &serde_json::Value) -> Result<Self, crate::json_read::ReadError> {
        match crate::json_read::Fields::of(value)?.tag("action")? {
            "probe" => Ok(Self::Probe),
            "reload_page" => Ok(Self::ReloadPage),
            "reload_tab" => Ok(Self::ReloadTab),
            "click_retry" => Ok(Self::ClickRetry),
            "resend" => Ok(Self::Resend),
            _ => Err(crate::json_read::unknown_variant("a known recovery action")),
        }
    }
}

impl crate::json_read::WriteJson for RecoveryAction {
    fn write_json(&self) -> serde_json::Value {
        let tag = match self {
            Self::Probe => "probe",
            Self::ReloadPage => "reload_page",
            Self::ReloadTab => "reload_tab",
            Self::ClickRetry => "click_retry",
            Self::Resend => "resend",
        };
        crate::json_read::Object::tagged("action", tag).done()
    }
}
