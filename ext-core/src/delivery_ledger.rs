//! The delivery ledger: the single owner of every message the extension writes into a chat
//! page (SPEC A3, I4, M7, N4, P8, S6). Wakes, progress notes, manual Continue, queue batches,
//! judge continues, the JSON bridge's results and handoff seeds go through it; recovery
//! retries will too. Nothing else posts a `deliver`.
//!
//! Life of one delivery: [`DeliveryLedger::begin`] gives it an id that is unique across
//! worker restarts and lost state, records the page's *baseline* (its load id, user-turn
//! count and last user turn) and emits [`LedgerOutput::Post`] → *typing*. The page adapter
//! reports what it did ([`DeliveryOutcome`]): `submitted` → *submitted*; `unconfirmed` →
//! *uncertain*; `not_submitted` → resolved [`Resolution::NotSent`] (nothing reached the
//! page). Whether a message landed is decided here, from later page facts only: its marker
//! line in a user turn newer than the baseline → [`Resolution::Confirmed`], in whatever
//! state the delivery is (a late confirmation is a confirmation, never a retype).
//!
//! A delivery that has no answer by its deadline, or whose page went away (reload, tab
//! closed), becomes *uncertain*. An uncertain delivery is never resent blindly; it is
//! resolved from evidence:
//! - its marker in a new user turn, on any tab of its conversation → `Confirmed` (the id is
//!   unique: the server has the message);
//! - its text still in the composer *of the tab it was typed into* (the page reports the
//!   marker there) → the composer is cleared ([`LedgerOutput::Clear`]) and it is `NotSent`;
//! - *the tab it was typed into* was loaded anew since typing began, is idle, and has
//!   rendered its thread exactly as it was when typing began (at least one user turn, as
//!   many, the same last one) without the marker → [`Resolution::Lost`]: the server never
//!   got it. Another tab of the conversation, or a reloaded page whose thread is not
//!   rendered yet (no user turn, fewer, another last one) or shows a newer turn without
//!   the marker, is no evidence of a loss: the delivery stays uncertain;
//! - otherwise, after [`UNCERTAIN_GIVE_UP_MS`] while a page of its conversation is idle →
//!   [`Resolution::Abandoned`]: it is not sent again automatically, its tasks stay
//!   unacknowledged, and the scope is free again (the HUD says so).
//!
//! Invariants (checked by `tests/it/delivery.rs` and the composed property tests):
//! - At most one delivery per scope is active; an id is posted at most once, ever.
//! - Ids never repeat: `<subject>/<epoch>.<life>.<n>` (e.g. `wake:w1#42/k3x9.2.0`) where `epoch` is drawn by the
//!   shell when the state is created (lost state ⇒ a new epoch), `life` grows on every
//!   restore, and `n` within a life.
//! - `Confirmed` only by the marker in a user turn newer than the baseline.
//! - Retyped (`Lost` / `NotSent`) only on evidence from the tab it was typed into: the
//!   adapter's answer, our text in its composer, or its reloaded page showing the thread as
//!   it was when typing began. Never because another tab or a half-rendered page lacks the
//!   marker (issue 23; `tests/it/delivery.rs`, `continuity_props`).
//! - Durable first: the shell posts a `deliver` only after the snapshot naming the delivery
//!   is written (`ContinuityOutput::Deliver`), so a worker that dies finds it in the ledger
//!   and never offers it again under a new id.
//! - Liveness: once a page of the conversation is idle, every active delivery resolves
//!   within [`UNCERTAIN_GIVE_UP_MS`] plus one deadline; a reload or a closed tab never
//!   blocks its scope.
//! - Nothing is posted to a page whose layout the adapter did not recognise.
//!
//! Driver contract: call [`DeliveryLedger::begin`] when a message should go out (the caller
//! has checked the gate), [`DeliveryLedger::report`] for each `delivery_report`,
//! [`DeliveryLedger::page`] for each page report, [`DeliveryLedger::page_gone`] when a
//! page's port closes, [`DeliveryLedger::restored`] once after restoring a snapshot, and
//! [`DeliveryLedger::handle_timeout`] at [`DeliveryLedger::next_deadline`]; then drain
//! [`DeliveryLedger::poll`].

use std::collections::VecDeque;

use serde::Serialize;

use crate::json_read::{ReadJson, WriteJson};

use crate::binding::{AppMention, TabId};
use crate::continuity::{marker_line, DeliveryOutcome, PageReport};
use crate::scope::{classify_url, ConversationRef};
use crate::Millis;

/// How long the adapter has to say what it did with a `deliver`.
pub const TYPING_DEADLINE_MS: Millis = 15_000;
/// How long a submitted message has to show up as a user turn with its marker.
pub const SUBMITTED_DEADLINE_MS: Millis = 20_000;
/// How long an uncertain delivery waits on an idle page for evidence before it is
/// abandoned (not resent).
pub const UNCERTAIN_GIVE_UP_MS: Millis = 120_000;

/// The `not_submitted` reason of a delivery whose App could not be attached.
pub const APP_NOT_ATTACHED: &str = "app_not_attached";

/// What a delivery carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryKind {
    /// A settle or inbox wake offered by the scheduler.
    Wake,
    /// A progress or fallback message offered by the scheduler.
    Progress,
    /// A manual continue (HUD button).
    Continue,
    /// The user's queued messages (Q2).
    Queue,
    /// A continue semantic Auto sent on the turn-end judge's verdict (J1, M7).
    JudgeContinue,
    /// The JSON bridge's tool results (O2).
    BridgeResults,
    /// A handoff's seed in the new conversation (X6; `continuity/handoff`).
    HandoffSeed,
}

/// What the page looked like when typing began.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct Baseline {
    /// The content script's load id.
    pub page_load: String,
    /// Its user-turn count.
    pub user_turns: u32,
    /// Its last user turn's message id.
    pub last_user_turn_id: Option<String>,
}

/// Where a delivery stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum DeliveryState {
    /// Posted to the page; the adapter has not answered yet.
    Typing {
        /// When it becomes uncertain.
        deadline: Millis,
    },
    /// The adapter clicked Send; the marker has not been seen yet.
    Submitted {
        /// When it becomes uncertain.
        deadline: Millis,
    },
    /// No answer in time, the page went away, or the adapter could not tell.
    Uncertain {
        /// Since when.
        since: Millis,
        /// Why (`no_answer`, `not_seen`, `page_gone`, `unconfirmed`, `restarted`).
        why: String,
    },
}

/// One message on its way into a page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct Delivery {
    /// Unique id, also in the marker line.
    pub id: String,
    /// The scope it belongs to.
    pub scope_key: String,
    /// What it is.
    pub kind: DeliveryKind,
    /// Inbox tasks to acknowledge once it is confirmed (I4).
    pub task_ids: Vec<String>,
    /// The tab it was posted to.
    pub tab: TabId,
    /// The conversation it was typed into: its marker confirms it on any tab showing it;
    /// evidence that it did not land comes only from `tab`.
    pub conversation: Option<ConversationRef>,
    /// The page when typing began.
    pub baseline: Baseline,
    /// When it was posted.
    pub posted_at: Millis,
    /// Where it stands.
    pub state: DeliveryState,
    /// The App the page attaches before its text (`None`: a plain message).
    #[serde(default)]
    pub app: Option<AppMention>,
    /// The scheduler's message it carries (a wake, an inbox wake, progress): the only record
    /// of that message in flight; the scheduler is answered with it.
    #[serde(default)]
    pub message: Option<crate::wake::InFlight>,
    /// The last page report of its conversation was idle (not persisted: pages report
    /// again after a restart).
    #[serde(skip)]
    pub page_idle: bool,
    /// The last page report of its conversation showed its text still in the composer
    /// (not persisted either).
    #[serde(skip)]
    pub left_in_composer: bool,
}

/// How a delivery ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "resolution", rename_all = "snake_case")]
pub enum Resolution {
    /// Its marker appeared in a new user turn.
    Confirmed,
    /// It certainly did not reach the chat (the adapter says so, or our text was still in
    /// the composer and was removed): it may be offered again.
    NotSent {
        /// Why.
        reason: String,
    },
    /// The page was reloaded and shows no trace of it: the server never got it; it may be
    /// offered again.
    Lost,
    /// No evidence either way within the give-up time: not resent automatically.
    Abandoned,
}

impl Resolution {
    /// Whether the message may be offered again (it certainly did not land).
    pub fn retryable(&self) -> bool {
        matches!(self, Self::NotSent { .. } | Self::Lost)
    }

    /// Whether it did not land because its App could not be attached: it is held, not
    /// counted as a failed attempt, and goes again once attaching works.
    pub fn app_not_attached(&self) -> bool {
        matches!(self, Self::NotSent { reason } if reason == APP_NOT_ATTACHED)
    }
}

/// Decisions for the composition.
// `Resolved` carries the whole delivery (with the scheduler's message); each output is
// drained right after it is made, so boxing it would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LedgerOutput {
    /// Post `deliver {id, text, app}` to the page of `tab`.
    Post {
        /// The tab.
        tab: TabId,
        /// The delivery id.
        id: String,
        /// The full text, ending with the marker line.
        text: String,
        /// The App to attach before the text.
        app: Option<AppMention>,
    },
    /// Post `clear_composer {id}`: our unsent text is still in the composer.
    Clear {
        /// The tab.
        tab: TabId,
        /// The delivery id.
        id: String,
    },
    /// A delivery ended.
    Resolved {
        /// The delivery as it was.
        delivery: Delivery,
        /// How it ended.
        resolution: Resolution,
    },
}

/// Why [`DeliveryLedger::begin`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeginRefused {
    /// The scope already has a delivery in progress.
    Busy,
    /// A fact the page needs does not resolve (`PageReport::unresolved`): nothing is typed
    /// there (fail closed).
    FactUnresolved,
    /// The chat's App cannot ride on it now (ambiguous, or its last attach failed and the
    /// wait runs): nothing is typed, never a message without the App.
    AppHeld,
    /// The page's account is in a rate-limit cooldown (`crate::request_pacer`): an
    /// automatic message waits until it ends.
    RateLimited,
    /// The message names no chat its marker could carry (no scope, or a ref with
    /// whitespace or `]`): nothing is typed (fail closed).
    NoSessionRef,
}

/// The ledger of deliveries in progress (persisted with the continuity snapshot).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct DeliveryLedger {
    /// Drawn by the shell when the state was created.
    epoch: String,
    /// Grows on every restore.
    life: u64,
    /// Next number within this life.
    next: u64,
    /// Active deliveries (at most one per scope).
    active: Vec<Delivery>,
    /// Decisions not yet drained.
    #[serde(skip)]
    outputs: VecDeque<LedgerOutput>,
}

impl DeliveryLedger {
    /// An empty ledger; `epoch` must be fresh randomness from the shell (it keeps ids unique
    /// when the persisted state is lost).
    pub fn new(epoch: &str) -> Self {
        let epoch: String = epoch.chars().filter(char::is_ascii_alphanumeric).take(16).collect();
        Self { epoch, ..Self::default() }
    }

    /// The epoch in use.
    pub fn epoch(&self) -> &str {
        &self.epoch
    }

    /// `<epoch>.<life>`: unique to this state and worker life, for ids of other records.
    pub fn token(&self) -> String {
        let epoch = if self.epoch.is_empty() { "0" } else { self.epoch.as_str() };
        format!("{epoch}.{}", self.life)
    }

    /// Sets the epoch of a ledger that has none (a snapshot of the previous release).
    pub fn ensure_epoch(&mut self, epoch: &str) {
        if self.epoch.is_empty() {
            *self = Self { active: std::mem::take(&mut self.active), ..Self::new(epoch) };
        }
    }

    /// After a restore: a new life (fresh numbers), and what was typing or submitted is
    /// uncertain (the page's answer to the old worker may never come).
    pub fn restored(&mut self, now: Millis) {
        self.life = self.life.saturating_add(1);
        self.next = 0;
        for delivery in &mut self.active {
            if !matches!(delivery.state, DeliveryState::Uncertain { .. }) {
                delivery.state = DeliveryState::Uncertain { since: now, why: "restarted".to_owned() };
            }
        }
    }

    /// The active delivery of a scope.
    pub fn active_for(&self, scope_key: &str) -> Option<&Delivery> {
        self.active.iter().find(|d| d.scope_key == scope_key)
    }

    /// Every active delivery.
    pub fn active(&self) -> impl Iterator<Item = &Delivery> {
        self.active.iter()
    }

    /// Adds a delivery already in flight (a snapshot of the previous release), as uncertain.
    pub fn adopt(&mut self, delivery: Delivery) {
        if self.active_for(&delivery.scope_key).is_none() {
            self.active.push(delivery);
        }
    }

    /// Starts a delivery of `body` to the page of `tab` (described by `page`); `subject`
    /// names what it is about (`wake:<ws>#<seq>`, `inbox:<ws>#<task>`, `progress:<ws>`,
    /// `continue:<ws>`) and is the id's stem; `session_ref` is the chat's
    /// `browser_session_ref` its marker names (`None` only for a handoff seed into a
    /// conversation without an id yet; see [`marker_line`]); `app` is attached before the text.
    #[allow(clippy::too_many_arguments)]
    pub fn begin(
        &mut self,
        now: Millis,
        scope_key: &str,
        session_ref: Option<&str>,
        kind: DeliveryKind,
        subject: &str,
        body: &str,
        task_ids: Vec<String>,
        tab: TabId,
        page: &PageReport,
        app: Option<AppMention>,
    ) -> Result<String, BeginRefused> {
        if self.active_for(scope_key).is_some() {
            return Err(BeginRefused::Busy);
        }
        if page.unresolved.is_some() {
            return Err(BeginRefused::FactUnresolved);
        }
        let id = self.next_id(subject);
        let Some(marker) = marker_line(&id, session_ref) else { return Err(BeginRefused::NoSessionRef) };
        self.next = self.next.saturating_add(1);
        let text = format!("{body}\n{marker}");
        self.active.push(Delivery {
            id: id.clone(),
            scope_key: scope_key.to_owned(),
            kind,
            task_ids,
            tab,
            conversation: classify_url(&page.url).conversation(),
            baseline: Baseline {
                page_load: page.page_load.clone(),
                user_turns: page.user_turns,
                last_user_turn_id: page.last_user_turn_id.clone(),
            },
            posted_at: now,
            state: DeliveryState::Typing { deadline: now.saturating_add(TYPING_DEADLINE_MS) },
            app: app.clone(),
            message: None,
            page_idle: is_idle(page),
            left_in_composer: false,
        });
        self.outputs.push_back(LedgerOutput::Post { tab, id: id.clone(), text, app });
        Ok(id)
    }

    /// Records the scheduler's `message` with the active delivery `id` (before its `Post` is
    /// drained, so the snapshot naming the delivery names the message too).
    pub fn carry(&mut self, id: &str, message: crate::wake::InFlight) {
        if let Some(delivery) = self.active.iter_mut().find(|d| d.id == id) {
            delivery.message = Some(message);
        }
    }

    /// The id the next [`DeliveryLedger::begin`] of `subject` gives (a message that fences
    /// relayed data derives its nonce from it before it is posted).
    pub fn next_id(&self, subject: &str) -> String {
        let epoch = if self.epoch.is_empty() { "0" } else { self.epoch.as_str() };
        format!("{}/{epoch}.{}.{}", marker_safe(subject), self.life, self.next)
    }

    /// The adapter's `delivery_report` for `id` from `tab`. Reports for unknown ids (already
    /// resolved, or from an older life) change nothing.
    pub fn report(&mut self, now: Millis, tab: TabId, id: &str, outcome: &DeliveryOutcome) {
        let Some(index) = self.active.iter().position(|d| d.id == id && d.tab == tab) else { return };
        match outcome {
            DeliveryOutcome::NotSubmitted { reason } => self.resolve(index, Resolution::NotSent { reason: reason.clone() }),
            // Nothing was typed that stayed: it did not land (the composition holds it until
            // the App can be attached, never sending it without).
            DeliveryOutcome::AppNotAttached { .. } => self.resolve(index, Resolution::NotSent { reason: APP_NOT_ATTACHED.to_owned() }),
            DeliveryOutcome::Submitted => {
                if let Some(delivery) = self.active.get_mut(index) {
                    if matches!(delivery.state, DeliveryState::Typing { .. }) {
                        delivery.state = DeliveryState::Submitted { deadline: now.saturating_add(SUBMITTED_DEADLINE_MS) };
                    }
                }
            }
            DeliveryOutcome::Unconfirmed => {
                if let Some(delivery) = self.active.get_mut(index) {
                    if !matches!(delivery.state, DeliveryState::Uncertain { .. }) {
                        delivery.state = DeliveryState::Uncertain { since: now, why: "unconfirmed".to_owned() };
                    }
                }
            }
        }
    }

    /// A page report: evidence for every delivery typed into the page's conversation.
    pub fn page(&mut self, tab: TabId, report: &PageReport) {
        let conversation = classify_url(&report.url).conversation();
        let idle = is_idle(report);
        let mut index = 0;
        while index < self.active.len() {
            let Some(delivery) = self.active.get_mut(index) else { break };
            let same_page = match (&delivery.conversation, &conversation) {
                (Some(ours), Some(theirs)) => ours == theirs,
                (None, _) => delivery.tab == tab,
                (Some(_), None) => false,
            };
            if !same_page {
                index += 1;
                continue;
            }
            // Whether a page of the conversation can take a message (liveness: an uncertain
            // delivery is given up on, never retyped, once one is idle).
            delivery.page_idle = idle && report.delivering.as_deref() != Some(delivery.id.as_str());
            // Evidence that it did *not* land comes only from the tab it was typed into.
            let typed_tab = delivery.tab == tab;
            if typed_tab {
                delivery.left_in_composer = report.composer_marker.as_deref() == Some(delivery.id.as_str());
            }
            let reloaded = report.page_load != delivery.baseline.page_load;
            let newer_turn = reloaded
                || report.user_turns > delivery.baseline.user_turns
                || report.last_user_turn_id != delivery.baseline.last_user_turn_id;
            // Its unique marker in a user turn is proof from any tab of the conversation: the
            // server has the message (a confirmation never retypes).
            if report.markers.contains(&delivery.id) && newer_turn {
                self.resolve(index, Resolution::Confirmed);
                continue;
            }
            let uncertain = matches!(delivery.state, DeliveryState::Uncertain { .. });
            if uncertain && typed_tab && delivery.page_idle && delivery.left_in_composer {
                self.clear_and_resolve(index, tab);
                continue;
            }
            if uncertain
                && typed_tab
                && delivery.page_idle
                && reloaded
                && report.composer_marker.is_none()
                && shows_thread_as_typed(report, &delivery.baseline)
            {
                self.resolve(index, Resolution::Lost);
                continue;
            }
            index += 1;
        }
    }

    /// A page's port closed (reload, navigation, tab closed): what was typed there is
    /// uncertain until a page of its conversation shows evidence.
    pub fn page_gone(&mut self, now: Millis, tab: TabId) {
        for delivery in self.active.iter_mut().filter(|d| d.tab == tab) {
            delivery.page_idle = false;
            if !matches!(delivery.state, DeliveryState::Uncertain { .. }) {
                delivery.state = DeliveryState::Uncertain { since: now, why: "page_gone".to_owned() };
            }
        }
    }

    /// The earliest time [`DeliveryLedger::handle_timeout`] has work.
    pub fn next_deadline(&self) -> Option<Millis> {
        self.active.iter().filter_map(deadline_of).min()
    }

    /// Deadlines: typing / submitted → uncertain; uncertain on an idle page → abandoned.
    pub fn handle_timeout(&mut self, now: Millis) {
        let mut index = 0;
        while index < self.active.len() {
            let Some(delivery) = self.active.get_mut(index) else { break };
            match &delivery.state {
                DeliveryState::Typing { deadline } | DeliveryState::Submitted { deadline } if *deadline <= now => {
                    if delivery.page_idle && delivery.left_in_composer {
                        let tab = delivery.tab;
                        self.clear_and_resolve(index, tab);
                        continue;
                    }
                    let why = if matches!(delivery.state, DeliveryState::Typing { .. }) { "no_answer" } else { "not_seen" };
                    delivery.state = DeliveryState::Uncertain { since: now, why: why.to_owned() };
                }
                DeliveryState::Uncertain { since, .. } if delivery.page_idle && since.saturating_add(UNCERTAIN_GIVE_UP_MS) <= now => {
                    self.resolve(index, Resolution::Abandoned);
                    continue;
                }
                _ => {}
            }
            index += 1;
        }
    }

    /// The next decision.
    pub fn poll(&mut self) -> Option<LedgerOutput> {
        self.outputs.pop_front()
    }

    /// Our unsent text is still in the composer: remove it; the message was not sent.
    fn clear_and_resolve(&mut self, index: usize, tab: TabId) {
        if let Some(delivery) = self.active.get(index) {
            self.outputs.push_back(LedgerOutput::Clear { tab, id: delivery.id.clone() });
            self.resolve(index, Resolution::NotSent { reason: "left_in_composer".to_owned() });
        }
    }

    fn resolve(&mut self, index: usize, resolution: Resolution) {
        if index < self.active.len() {
            let delivery = self.active.remove(index);
            self.outputs.push_back(LedgerOutput::Resolved { delivery, resolution });
        }
    }
}

/// The page can take a message: it has a composer, is not generating and every fact it
/// needs resolves.
fn is_idle(report: &PageReport) -> bool {
    report.composer && !report.generating && report.unresolved.is_none()
}

/// Whether a reloaded page has rendered its thread exactly as it was when typing began: at
/// least one user turn, as many as then, and the same last one. Only then does the absence
/// of the marker show that the server never got the message. A page with no user turn has
/// not rendered its thread yet (or shows a new chat, where a sent message would have moved
/// to a conversation it does not show); fewer turns, another last turn or more turns (a
/// newer turn whose marker may sit beyond the newest ones reported) are no evidence
/// either: the delivery stays uncertain and is given up on, never retyped.
fn shows_thread_as_typed(report: &PageReport, baseline: &Baseline) -> bool {
    report.user_turns > 0 && report.user_turns == baseline.user_turns && report.last_user_turn_id == baseline.last_user_turn_id
}

/// When a delivery needs a timeout call: its deadline, or the give-up time while its page is
/// idle.
fn deadline_of(delivery: &Delivery) -> Option<Millis> {
    match &delivery.state {
        DeliveryState::Typing { deadline } | DeliveryState::Submitted { deadline } => Some(*deadline),
        DeliveryState::Uncertain { since, .. } => delivery.page_idle.then(|| since.saturating_add(UNCERTAIN_GIVE_UP_MS)),
    }
}

/// `subject` with every character a marker line cannot carry (whitespace, `]`, `/`)
/// replaced by `_`, at most 96 characters.
fn marker_safe(subject: &str) -> String {
    subject.chars().map(|c| if c.is_whitespace() || c == ']' || c == '/' { '_' } else { c }).take(96).collect()
}

// Readers and writers of the persisted shapes (crate::json_read; the same shape serde writes).
