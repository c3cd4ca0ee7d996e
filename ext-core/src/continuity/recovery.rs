//! Stuck ChatGPT pages, driven (SPEC S1–S8, H5, H7): feeds each watched page's recovery
//! facts and the answers of its snapshot probes to the conversation's
//! [`RecoveryPlanner`] (which asks [`crate::stale_view`] what the snapshot shows), and turns
//! the planner's actions into page commands ([`ContinuityOutput::Recovery`]): a probe of the
//! conversation snapshot, one `location.reload()`, one click on ChatGPT's own Retry, one
//! `chrome.tabs.reload` of the page's own tab — or, for a message of ours the server never
//! accepted, a resend through the delivery ledger (a new delivery of the same kind, subject
//! and body, under a new id).
//!
//! Budgets are per incident: a turn that ends healthy on the page (`turn_ended`: the human's,
//! or a reply that streamed and finished there) renews them
//! ([`RecoveryPlanner::turn_ended`]); the planner's hourly bounds still hold across
//! incidents. Spent budgets are handed to `continuity/rollover`: the controlled handoff
//! when Auto and the rollover gate allow it, else the HUD's rollover line names why not.
//!
//! What each situation leads to is the planner's call (see `crate::recovery`): server ahead
//! → one reload; a send-timeout card with the server still at the user → Retry once; with
//! the server at a finished assistant → a reload, never Retry; a snapshot that could not be
//! read → nothing but, beside a send-timeout card, a view sync. This file only composes:
//! which page is watched, which planner it feeds, when the planners are ticked, and what is
//! made durable before a command leaves.
//!
//! Invariants:
//! - Only ChatGPT conversations (`/c/<id>`, a Project's `/c/<id>`) are watched, and a
//!   planner acts only where the scope's Auto is on (M6, S1–S8); z.ai and DeepSeek pages
//!   never get a recovery command.
//! - A healthy idle page costs the site nothing: the planners are ticked only while a
//!   watched page with Auto on shows a reply streaming, a user turn waiting or a thread
//!   error, and the planner asks for at most one probe per `PROBE_INTERVAL_MS` while a
//!   turn is suspect. Every probe is counted and shown in the HUD.
//! - A reload or a Retry is recorded in the planner (budgets, executed-at, the pending
//!   record) before its command is output, and the command tells the shell to write the
//!   snapshot before carrying it out: a worker restart in between can never do it again.
//! - A probe's answer counts only for the page load it was asked of; a late answer from a
//!   page that reloaded meanwhile is dropped. A 429 answer starts the planner's back-off (no
//!   probe, Retry or reload while it runs, H7).
//! - Nothing here types into a page but a resend, and a resend only of a message of ours
//!   (the waiting turn's marker names the last delivery this worker life sent into the
//!   scope; after a restart nothing is remembered and the HUD asks the user), only on a
//!   snapshot whose current node is the page's last assistant message (the server lacks
//!   the turn), through the ledger's gates: a human's turn is never retyped.

use super::*;
use crate::json_read::WriteJson;
use crate::recovery::{RecoveryAction, RecoveryFacts, RecoveryPlanner, RecoveryStatus, RecoveryTimings, Spent, Suspect};
use crate::stale_view::{DomMessage, DomView, ServerNode, ServerRole, Snapshot as ServerSnapshot, ViewState};

/// How often the planners are ticked while a watched page could go stale (the planner's
/// own timeouts are 15 s and more, so a 5 s tick loses at most a third of a probe interval).
pub const RECOVERY_TICK_MS: Millis = 5_000;

/// What the page adapter reports for recovery (`recovery_facts`, docs/PROTOCOL.md
/// "Recovery"): the DOM's last assistant message and the thread's error state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PageRecoveryReport {
    /// The content script's start id (the same as `page_facts.page_load`).
    pub page_load: String,
    /// A last assistant message is shown.
    pub assistant: bool,
    /// Its message id, when the page shows one (streaming prose has none).
    pub assistant_id: Option<String>,
    /// Characters of its body text.
    pub assistant_len: u32,
    /// The page shows it streaming.
    pub assistant_streaming: bool,
    /// A short signature of its body (changes when the text changes).
    pub signature: String,
    /// A user turn is shown after it.
    pub user_waiting: bool,
    /// A send-timeout thread error is shown ("Message delivery timed out").
    pub send_timeout: bool,
    /// The page offers ChatGPT's Retry for it.
    pub retry_offered: bool,
    /// A rate-limit notice is visible.
    pub rate_limited: bool,
    /// A reasoning / thinking indicator is shown for the reply (SITES-2026 §1.4).
    pub reasoning: bool,
    /// The delivery id of the marker line in the user turn shown waiting, if it has one.
    pub waiting_marker: Option<String>,
}

/// The server's current node as the page summarised it (`snapshot_result.node`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeNode {
    /// The message id.
    pub id: String,
    /// Its author.
    pub role: ServerRole,
    /// Characters of its text parts.
    pub text_len: u32,
    /// `end_turn` or status `finished_successfully`.
    pub finished: bool,
    /// `update_time` in milliseconds, when the snapshot gave one.
    pub update_time_ms: Option<Millis>,
}

/// The page's answer to a snapshot probe (`snapshot_result`): the server's current node, or
/// why it could not be read (`http_401`, `http_403`, `http_429`, `http_5xx`, `http_4xx`,
/// `timeout`, `network`, `odd_shape`, `no_token`). Never the snapshot itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ProbeAnswer {
    /// The current node, summarised by the page.
    Node(ProbeNode),
    /// The failure's kind.
    Failed(String),
}

/// A recovery command for a page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum RecoveryCommand {
    /// `{"type":"snapshot_probe",conversation_id}`: read the snapshot, answer with a summary.
    Probe {
        /// The conversation to read.
        conversation_id: String,
    },
    /// `{"type":"recovery_reload"}`: `location.reload()` in the page (level 1).
    ReloadPage,
    /// `chrome.tabs.reload` of the page's own tab, by the worker (level 2).
    ReloadTab,
    /// `{"type":"recovery_retry"}`: click ChatGPT's Retry of the thread error.
    ClickRetry,
}

impl RecoveryCommand {
    /// Whether the shell must write the snapshot before carrying the command out (every
    /// command but a probe changes the page and is budgeted).
    pub fn durable_first(&self) -> bool {
        !matches!(self, Self::Probe { .. })
    }
}

/// The HUD's recovery line for one conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct RecoveryLine {
    /// `off | healthy | checking | observed | waiting | needs_user | acted | cooling |
    /// rollover`.
    pub state: &'static str,
    /// Why: the suspicion, the probe's verdict or the action (`""` when there is none).
    pub reason: &'static str,
    /// Retries left.
    pub retries_left: u32,
    /// Reloads left (page, then tab).
    pub reloads_left: u32,
    /// Snapshot probes asked for in this worker life.
    pub probes: u64,
    /// The page shows a reasoning / thinking placeholder: the long stall allowance is in use.
    pub reasoning: bool,
}

/// The composition's recovery state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct RecoveryFlow {
    /// One planner per conversation key (`chatgpt:<id>`), persisted: budgets, the last
    /// reload, the pending record and the 429 back-off survive a worker restart.
    pub(super) planners: VecMap<String, RecoveryPlanner>,
    /// The newest recovery facts per tab (pages report again after a restart).
    facts: VecMap<TabId, PageRecoveryReport>,
    /// The probe out per conversation key: the tab and page load it was asked of.
    probing: VecMap<String, (TabId, String)>,
    /// When the planners are ticked next, if a watched page could go stale.
    next_tick: Option<Millis>,
    /// The planners' timers (options page), given to every planner.
    pub(super) timings: RecoveryTimings,
    /// Per scope key, the last message of ours sent into it (this worker life): what a
    /// resend sends again when the waiting turn carries its marker.
    sent: VecMap<String, SentMessage>,
    /// Per tab, the page load whose visible rate-limit notice was counted: a notice that
    /// stays is one 429, counted when it appears, not at every report while it is shown
    /// (persisted: nor again after a worker restart).
    pub(super) notices: VecMap<TabId, String>,
}

/// A message of ours as it was handed to the ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SentMessage {
    pub(super) id: String,
    pub(super) kind: DeliveryKind,
    pub(super) subject: String,
    pub(super) body: String,
    pub(super) task_ids: Vec<String>,
}

impl RecoveryFlow {
    /// The planners of a restored snapshot: what the old worker recorded as pending may have
    /// happened and is never repeated (the budgets it spent stay spent); the notices it
    /// counted are not counted again.
    pub(super) fn with_planners(mut planners: VecMap<String, RecoveryPlanner>, notices: VecMap<TabId, String>) -> Self {
        for planner in planners.values_mut() {
            planner.restored();
        }
        Self { planners, notices, ..Self::default() }
    }

    /// The next tick, if any.
    pub(super) fn deadline(&self) -> Option<Millis> {
        self.next_tick
    }
}

/// The conversation key and id of a ChatGPT conversation page.
pub(super) fn chatgpt_conversation(report: &PageReport) -> Option<(String, String)> {
    let page = classify_url(&report.url);
    let conversation = page.conversation()?;
    if conversation.site != crate::scope::Site::ChatGpt {
        return None;
    }
    let key = queue::conversation_key(report)?;
    Some((key, conversation.conversation_id.to_owned()))
}

impl Continuity {
    /// A page's `recovery_facts`.
    pub(super) fn recovery_facts(&mut self, now: Millis, tab: TabId, facts: PageRecoveryReport) {
        self.recovery.facts.insert(tab, facts);
        self.recovery_page(now, tab);
    }

    /// The page of `tab` reported (facts or recovery facts): its planner sees it now.
    pub(super) fn recovery_page(&mut self, now: Millis, tab: TabId) {
        let Some((key, conversation_id, facts, rate_limited)) = self.recovery_input(tab) else { return };
        // The notice counts once, when it appears on this page load; while it stays, the
        // pacer holds the account again at each cooldown's end (`pacer_timeout`).
        let counted = self.recovery.notices.get(&tab) == Some(&facts.page_load);
        let appeared = rate_limited && !counted;
        if rate_limited != counted {
            if rate_limited {
                self.recovery.notices.insert(tab, facts.page_load.clone());
            } else {
                self.recovery.notices.remove(&tab);
            }
            self.persist();
        }
        if appeared && self.cooldown_of_tab(tab).is_none() {
            // ChatGPT's notice: the account's cooldown (every tab of it, every write).
            self.pacer_rate_limited(now, tab, None, crate::request_pacer::CooldownSource::PageNotice);
        } else if rate_limited && self.cooldown_of_tab(tab).is_none() {
            // The counted notice still shown with no cooldown running (a worker restarted
            // after the cooldown's end): held again for the current step, as at that end.
            if let Some(account) = self.account_of_tab(tab) {
                self.pacer.pacer.still_limited(&account, now);
                self.persist();
                self.sync_schedulers(now);
            }
        }
        let cooldown = self.cooldown_of_tab(tab);
        let timings = self.recovery.timings;
        let planner = self.recovery.planners.entry(key.clone()).or_default();
        planner.set_timings(timings);
        if appeared {
            planner.rate_limited(now);
        }
        if let Some(until) = cooldown {
            planner.hold_until(until);
        }
        let why = status_reason(&planner.status());
        let action = planner.page(now, facts);
        self.recovery_act(tab, &key, &conversation_id, why, action);
        self.recovery_schedule(now);
    }

    /// A message of ours went to the ledger: the one a resend would send again.
    pub(super) fn recovery_sent(&mut self, key: &str, message: SentMessage) {
        if message.kind != DeliveryKind::HandoffSeed {
            self.recovery.sent.insert(key.to_owned(), message);
        }
    }

    /// A turn ended on the page of `tab`: a human's turn, or a reply that streamed and
    /// finished there, ends the incident and renews its budgets (the hour's bounds stay).
    pub(super) fn recovery_turn_ended(&mut self, tab: TabId, user_marker: Option<&str>) {
        let Some((key, ..)) = self.recovery_input(tab) else { return };
        let Some(planner) = self.recovery.planners.get_mut(&key) else { return };
        if planner.turn_ended(user_marker.is_none()) {
            self.persist();
        }
    }

    /// Whether the conversation `tab` shows has its recovery budgets spent.
    pub(super) fn recovery_spent(&self, tab: TabId) -> bool {
        let Some((key, _)) = self.pages.get(&tab).and_then(chatgpt_conversation) else { return false };
        self.recovery.planners.get(&key).is_some_and(|p| p.spent_why().is_some())
    }

    /// The tabs whose conversation has its recovery budgets spent.
    pub(super) fn recovery_spent_tabs(&self) -> Vec<TabId> {
        self.recovery.facts.keys().copied().filter(|tab| self.recovery_spent(*tab)).collect()
    }

    /// A tab's page went away: its facts (and a probe asked of it) with it.
    pub(super) fn recovery_page_gone(&mut self, tab: TabId) {
        self.health_page_gone(tab);
        self.recovery.facts.remove(&tab);
        self.recovery.notices.remove(&tab);
        self.recovery.probing.retain(|_, (asked, _)| *asked != tab);
    }

    /// The planners' tick.
    pub(super) fn recovery_tick(&mut self, now: Millis) {
        if self.recovery.next_tick.is_none_or(|at| at > now) {
            return;
        }
        let tabs: Vec<TabId> = self.recovery.facts.keys().copied().collect();
        for tab in tabs {
            let Some((key, conversation_id, facts, _)) = self.recovery_input(tab) else { continue };
            let cooldown = self.cooldown_of_tab(tab);
            let Some(planner) = self.recovery.planners.get_mut(&key) else { continue };
            if let Some(until) = cooldown {
                planner.hold_until(until);
            }
            // The facts as they are now (the Auto switch may have changed since the page's
            // last report); a page report of unchanged facts only moves the planner's clock.
            let why = status_reason(&planner.status());
            let action = planner.page(now, facts);
            self.recovery_act(tab, &key, &conversation_id, why, action);
        }
        self.recovery_schedule(now);
    }

    /// A probe's answer from the page of `tab`.
    pub(super) fn recovery_answer(&mut self, now: Millis, tab: TabId, page_load: &str, answer: ProbeAnswer) {
        let Some((key, conversation_id, _, _)) = self.recovery_input(tab) else { return };
        let asked = self.recovery.probing.get(&key).is_some_and(|(t, load)| *t == tab && load == page_load);
        if !asked {
            return;
        }
        self.recovery.probing.remove(&key);
        if matches!(&answer, ProbeAnswer::Failed(why) if why == "http_429") {
            // The account's cooldown (a `Retry-After` came as `rate_limited` first).
            self.pacer_rate_limited(now, tab, None, crate::request_pacer::CooldownSource::Backoff);
        }
        // A cooldown that began while the probe was out (another tab's 429) holds what the
        // answer would do, as at every tick.
        let cooldown = self.cooldown_of_tab(tab);
        let Some(planner) = self.recovery.planners.get_mut(&key) else { return };
        if let Some(until) = cooldown {
            planner.hold_until(until);
        }
        let snapshot = match answer {
            // Milliseconds since the epoch are ≥ 1e10, which `update_time_ms` reads as such.
            #[allow(clippy::cast_precision_loss)]
            ProbeAnswer::Node(node) => ServerSnapshot::Read(ServerNode {
                id: node.id,
                role: node.role,
                text_len: node.text_len,
                finished: node.finished,
                update_time: node.update_time_ms.map(|ms| ms as f64),
            }),
            ProbeAnswer::Failed(why) => {
                if why == "http_429" {
                    planner.rate_limited(now);
                }
                ServerSnapshot::Unknown { why }
            }
        };
        let why = status_reason(&planner.status());
        let action = planner.snapshot(now, &snapshot);
        self.health_answered(tab, action.as_ref());
        self.recovery_act(tab, &key, &conversation_id, why, action);
        self.recovery_schedule(now);
    }

    /// What the planner of `tab`'s conversation is fed: its key, the conversation id, the
    /// facts, and whether a rate-limit notice is visible. `None` off a ChatGPT conversation
    /// or before the page's first recovery facts.
    fn recovery_input(&self, tab: TabId) -> Option<(String, String, RecoveryFacts, bool)> {
        let report = self.pages.get(&tab)?;
        let seen = self.recovery.facts.get(&tab)?;
        let (key, conversation_id) = chatgpt_conversation(report)?;
        let scope = classify_url(&report.url).scope();
        let auto_on = scope.as_ref().is_some_and(|s| self.auto.state(s) == AutoState::On);
        let delivery_uncertain = scope
            .as_ref()
            .and_then(|s| self.ledger.active_for(&s.key()))
            .is_some_and(|d| matches!(d.state, DeliveryState::Uncertain { .. }));
        let last_assistant = seen.assistant.then(|| DomMessage {
            id: seen.assistant_id.clone(),
            text_len: seen.assistant_len,
            streaming: seen.assistant_streaming,
        });
        let facts = RecoveryFacts {
            page_load: seen.page_load.clone(),
            generating: report.generating,
            view: DomView { last_assistant, user_waiting: seen.user_waiting, reasoning: seen.reasoning },
            signature: seen.signature.clone(),
            send_timeout: seen.send_timeout.then_some(seen.retry_offered),
            human_draft: report.draft,
            permission_card: self.permission_card_waiting(tab),
            delivery_uncertain,
            auto_on,
            chatgpt: true,
            ours_waiting: seen.user_waiting && self.recovery_resendable(&report.url, seen.waiting_marker.as_deref()).is_some(),
        };
        Some((key, conversation_id, facts, seen.rate_limited))
    }

    /// The message of ours a resend would send again: the last one sent into the page's
    /// scope, when its marker is the one in the waiting turn.
    fn recovery_resendable(&self, url: &str, marker: Option<&str>) -> Option<(String, &SentMessage)> {
        let key = classify_url(url).scope()?.key();
        let sent = self.recovery.sent.get(&key).filter(|m| Some(m.id.as_str()) == marker)?;
        Some((key, sent))
    }

    /// Sends our waiting message again (the snapshot proved the server lacks it): a new
    /// delivery of the same kind, subject and body, through the ledger and its gates.
    fn recovery_resend(&mut self, tab: TabId) {
        let now = self.now;
        let found = self.pages.get(&tab).and_then(|report| {
            let marker = self.recovery.facts.get(&tab)?.waiting_marker.as_deref();
            self.recovery_resendable(&report.url, marker).map(|(key, m)| (key, m.clone()))
        });
        let Some((key, m)) = found else { return };
        // Never as the user's press: a resent Continue is automatic and waits out a cooldown.
        if self.post_delivery_as(now, &key, tab, m.kind, &m.subject, &m.body, m.task_ids.clone(), false, None).is_err() {
            self.record_activity(
                &key,
                ActivityKind::RecoveryRetry,
                ActivityOutcome::Withheld,
                ActivityReason::Code("resend_refused"),
                Some(&m.id),
            );
        }
    }

    /// The tabs whose last recovery facts show ChatGPT's rate-limit notice.
    pub(super) fn recovery_notice_tabs(&self) -> Vec<TabId> {
        self.recovery.facts.iter().filter(|(_, f)| f.rate_limited).map(|(tab, _)| *tab).collect()
    }

    /// The last assistant body's signature the page of `tab` reported.
    pub(super) fn recovery_signature(&self, tab: TabId) -> Option<&str> {
        self.recovery.facts.get(&tab).map(|f| f.signature.as_str())
    }

    /// Turns a planner's action into a page command; a budgeted one is persisted first.
    pub(super) fn recovery_act(&mut self, tab: TabId, key: &str, conversation_id: &str, why: &'static str, action: Option<RecoveryAction>) {
        let Some(action) = action else { return };
        let kind = match action {
            RecoveryAction::Probe => None,
            RecoveryAction::ReloadPage | RecoveryAction::ReloadTab => Some(ActivityKind::RecoveryReload),
            RecoveryAction::ClickRetry | RecoveryAction::Resend => Some(ActivityKind::RecoveryRetry),
        };
        let why = if action == RecoveryAction::Resend { "request_not_accepted" } else { why };
        if let (Some(kind), Some(scope)) = (kind, self.scope_of_tab(tab)) {
            self.record_activity(&scope.key(), kind, ActivityOutcome::Sent, ActivityReason::Code(why), None);
        }
        let command = match action {
            RecoveryAction::Probe => {
                // One backend read per pacing interval per account, none in a cooldown.
                if !self.pacer_request(self.now, tab) {
                    if let Some(planner) = self.recovery.planners.get_mut(key) {
                        planner.probe_deferred();
                    }
                    return;
                }
                let page_load = self.recovery.facts.get(&tab).map(|f| f.page_load.clone()).unwrap_or_default();
                self.recovery.probing.insert(key.to_owned(), (tab, page_load));
                RecoveryCommand::Probe { conversation_id: conversation_id.to_owned() }
            }
            RecoveryAction::ReloadPage => RecoveryCommand::ReloadPage,
            RecoveryAction::ReloadTab => RecoveryCommand::ReloadTab,
            RecoveryAction::ClickRetry => RecoveryCommand::ClickRetry,
            RecoveryAction::Resend => {
                // Recorded (pending, budgets) and persisted first; the ledger posts it.
                self.persist();
                self.recovery_resend(tab);
                return;
            }
        };
        if command.durable_first() {
            self.persist();
        }
        self.emit(ContinuityOutput::Recovery { tab, command });
    }

    /// Ticks again in [`RECOVERY_TICK_MS`] while a watched page with Auto on could go stale
    /// (a reply streams, a user turn waits, a thread error shows, a probe is out or a wait
    /// runs); otherwise not at all.
    pub(super) fn recovery_schedule(&mut self, now: Millis) {
        let watched = self.recovery.facts.keys().any(|tab| {
            self.recovery_input(*tab).is_some_and(|(key, _, facts, _)| {
                facts.auto_on
                    && (facts.generating
                        || facts.view.user_waiting
                        || facts.send_timeout.is_some()
                        || self.recovery.probing.contains_key(&key)
                        || self.recovery.planners.get(&key).is_some_and(|p| matches!(p.status(), RecoveryStatus::WaitingForServer { .. })))
            })
        });
        self.recovery.next_tick = match self.recovery.next_tick {
            Some(at) if watched && at > now => Some(at),
            _ if watched => Some(now.saturating_add(RECOVERY_TICK_MS)),
            _ => None,
        };
    }

    /// The HUD's recovery line for `tab`, on a ChatGPT conversation.
    pub(super) fn recovery_line(&self, tab: TabId) -> Option<RecoveryLine> {
        let report = self.pages.get(&tab)?;
        let (key, _) = chatgpt_conversation(report)?;
        let auto_on = classify_url(&report.url).scope().is_some_and(|s| self.auto.state(&s) == AutoState::On);
        let default = RecoveryPlanner::default();
        let planner = self.recovery.planners.get(&key).unwrap_or(&default);
        let (state, reason) = if !auto_on {
            ("off", "")
        } else if planner.cooling_until(self.now).is_some() {
            ("cooling", "rate_limited")
        } else {
            match planner.status() {
                RecoveryStatus::Healthy => ("healthy", ""),
                RecoveryStatus::Checking { why } => ("checking", suspect_name(why)),
                RecoveryStatus::Observed { state } => ("observed", view_state_name(state)),
                RecoveryStatus::WaitingForServer { .. } => ("waiting", "server_stalled"),
                RecoveryStatus::ResendPaced { .. } => ("waiting", "resend_paced"),
                RecoveryStatus::NeedsUser => ("needs_user", "request_not_accepted"),
                RecoveryStatus::Acted { action } => ("acted", action_name(&action)),
                RecoveryStatus::RolloverRecommended { why: Spent::Incident } => ("rollover", "budgets_spent"),
                RecoveryStatus::RolloverRecommended { why: Spent::Hour } => ("rollover", "hourly_limit"),
            }
        };
        Some(RecoveryLine {
            state,
            reason,
            retries_left: planner.retries_left(self.now),
            reloads_left: planner.reloads_left(self.now),
            probes: planner.probes(),
            reasoning: self.recovery.facts.get(&tab).is_some_and(|f| f.reasoning),
        })
    }
}

/// Why the planner acts, as the Activity timeline says it: what it was in before the
/// action (the suspicion being checked, the stall waited for, the verdict observed).
fn status_reason(status: &RecoveryStatus) -> &'static str {
    match status {
        RecoveryStatus::Checking { why } => suspect_name(*why),
        RecoveryStatus::Observed { state } => view_state_name(*state),
        RecoveryStatus::WaitingForServer { .. } => "server_stalled",
        RecoveryStatus::ResendPaced { .. } => "request_not_accepted",
        _ => "suspect_page",
    }
}

fn suspect_name(why: Suspect) -> &'static str {
    match why {
        Suspect::ReplyTimeout => "reply_timeout",
        Suspect::AssistantStall => "assistant_stall",
        Suspect::SendTimeout => "send_timeout",
        Suspect::HealthPressure => "health_pressure",
    }
}

fn view_state_name(state: ViewState) -> &'static str {
    match state {
        ViewState::Synced => "synced",
        ViewState::ServerAhead => "server_ahead",
        ViewState::RequestNotAccepted => "request_not_accepted",
        ViewState::ServerStalled => "server_stalled",
        ViewState::Unknown => "unknown",
    }
}

fn action_name(action: &RecoveryAction) -> &'static str {
    match action {
        RecoveryAction::Probe => "probe",
        RecoveryAction::ReloadPage => "reload_page",
        RecoveryAction::ReloadTab => "reload_tab",
        RecoveryAction::ClickRetry => "click_retry",
        RecoveryAction::Resend => "resend",
    }
}
