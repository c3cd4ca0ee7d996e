//! The HUD's Handoff in the continuity loop (SPEC X1–X8, B8, C2, Q9): one
//! [`crate::handoff_transfer::Transfer`] per source scope (a ChatGPT Project, or a plain
//! ChatGPT or z.ai conversation), fed the HUD's buttons, the runtime's answers, the pages'
//! facts and the delivery ledger's resolutions; this file starts transfers (the gate of a
//! Start), routes their inputs, carries out their outputs (calls, the new tab, the seed's
//! delivery, the cut-over on bindings, Auto and the queue) and renders their HUD part.
//!
//! One transfer: the HUD's Handoff (Auto on or off, X1) → refused while the bound workspace
//! works (X2) → the source's automatic wakes pause (its scheduler sees
//! `SchedulerInput::Handoff`) and its queue holds → `continuity.resolve {conversation_id}`
//! confirms the chain live (C2) → `herdr_mcp.browser_handoff.prepare` returns the package
//! (X4; read-only) → [`ContinuityOutput::OpenTab`] opens the Project's home page (or
//! ChatGPT's new chat) in a new tab, its URL carrying `herdr_handoff=<transfer id>` so the
//! tab is known by evidence even after a worker restart → once that page is idle the
//! package's message goes through the [`DeliveryLedger`] as a `handoff_seed` delivery,
//! posted only after the snapshot naming it is written (as every [`ContinuityOutput::Deliver`])
//! → the cut-over comes only with the new conversation's id (the new tab's URL) **and** the
//! seed's marker seen in its thread (X6): the Project's `active_conv_key` switches
//! (`BindingInput::CutOver`), never its binding or continuity (B8), and the source's unsent
//! queue items move to the new conversation, in order (Q9).
//!
//! Until the cut-over the Project's target is held: a page report of the new conversation
//! does not make it the target (B3 is suspended for that Project). After it, the source
//! conversation is *retired*: a tab that still shows it (and did not navigate to it) does
//! not take the target back, and offers no second Handoff while it is not its scope's
//! target (a second transfer from it would fork the chain).
//!
//! Invariants:
//! - At most one transfer in flight per source scope; a second Start is refused, and so is
//!   a Start from a conversation a finished transfer left.
//! - The Project's active target moves during a transfer only at its cut-over, and the
//!   cut-over needs the seed's confirmation by the ledger (or, on Resume, its marker seen
//!   in the target's thread) and the new conversation's id.
//! - A seed is typed again only after a certain absence (the ledger's not sent or lost, or
//!   Resume on a target that shows no marker of it); an uncertain seed waits for Resume.
//! - Copy Prompt is offered only when browser control is confirmed unavailable (no tab, or
//!   the seed certainly refused twice), never while a seed is uncertain.
//! - Nothing asks a chat or an LLM for a summary; a failure keeps the source and its URL.

use super::*;
use crate::handoff::{HandoffInput, HandoffRefusal, HandoffState, SeedOutcome};
pub use crate::handoff_transfer::{new_chat_url, Transfer, HANDOFF_QUERY};
use crate::handoff_transfer::{SeedEnd, TargetPage, TransferInput, TransferOutput};
use crate::json_read::{ReadJson, WriteJson};
use crate::scope::Site;

/// `herdr_mcp.browser_handoff.prepare {continuity_id, source_url, workspace_id,
/// browser_session_ref, queue}` ([`RuntimeCall::HandoffPrepare`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrepareCall {
    /// The chain `continuity.resolve` confirmed.
    pub continuity_id: String,
    /// The source conversation's full URL.
    pub source_url: String,
    /// The source scope's bound workspace (the seed lists its panes, agents, Git; X9).
    pub workspace_id: Option<String>,
    /// The source scope's inbox ref when bound (the seed lists its open tasks).
    pub browser_session_ref: Option<String>,
    /// The source's queued messages, oldest first (≤ [`HANDOFF_QUEUE_ITEMS`]).
    pub queue: Vec<String>,
}

/// Most queued messages the prepare call names (the runtime's `MAX_HANDOFF_QUEUE_ITEMS`).
pub const HANDOFF_QUEUE_ITEMS: usize = 5;

/// What the handoff keeps across worker restarts (in the snapshot).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct HandoffBook {
    /// Transfers by source scope key (the last one of each scope, finished or not).
    #[serde(default)]
    pub transfers: VecMap<String, Transfer>,
    /// Per Project key, the conversation its last cut-over left.
    #[serde(default)]
    pub retired: VecMap<String, String>,
    /// The conversations that started an automatic rollover (R2, `continuity::rollover`).
    #[serde(default)]
    pub rollovers: crate::rollover::Rollovers,
}

impl HandoffBook {
    /// The book as the snapshot holds it (nothing of this worker life).
    pub(super) fn persisted(&self) -> Self {
        let mut transfers = VecMap::new();
        for (key, transfer) in self.transfers.iter() {
            transfers.insert(key.clone(), transfer.persisted());
        }
        Self { transfers, retired: self.retired.clone(), rollovers: self.rollovers.clone() }
    }
}

/// What the HUD shows about a handoff on a page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct HandoffView {
    /// The machine's step (`idle`, `confirming`, …, `done`, `failed`).
    pub step: &'static str,
    /// The line (a `_locales` text), if there is one to say.
    pub line: Option<Say>,
    /// The button: `handoff`, `resume`, `copy_prompt`, or `none` while a step runs.
    pub button: &'static str,
    /// The package's `copy_prompt`, only while Copy Prompt is offered (X8).
    pub copy_prompt: Option<String>,
}

/// The ledger key of a transfer's seeds (not the source scope's: the source keeps its own
/// deliveries, and the seed goes to another tab).
fn seed_key(key: &str) -> String {
    crate::text::concat(&[SEED_KEY_PREFIX, key])
}

/// The prefix of a transfer's ledger key (its source's scope key follows).
pub(super) const SEED_KEY_PREFIX: &str = "handoff:";

impl Continuity {
    /// Whether a transfer of the scope `key` is in flight (its source's wakes pause, X2).
    pub(super) fn handoff_in_flight(&self, key: &str) -> bool {
        self.handoff.transfers.get(key).is_some_and(|t| t.machine.in_flight())
    }

    /// The transfers (read-only; tests and the panel).
    pub fn handoff_book(&self) -> &HandoffBook {
        &self.handoff
    }

    /// Whether the queue of `conversation` (`<site>:<id>`) is held: its transfer is in flight
    /// (its items move to the new conversation at the cut-over, Q9).
    pub(super) fn handoff_holds_queue(&self, conversation: &str) -> bool {
        self.handoff.transfers.values().any(|t| {
            t.machine.in_flight()
                && conversation.strip_prefix(t.site.as_str()).and_then(|c| c.strip_prefix(':')) == Some(t.source_conversation.as_str())
        })
    }

    /// Whether a handoff holds the delivery target of the Project `page` belongs to: a
    /// Project's new conversation does not become its target while a transfer of the Project
    /// is in flight, and the conversation its cut-over left does not take the target back
    /// unless the tab navigated to it (the binding table's `target_held`).
    pub(super) fn handoff_holds_target(&self, tab: TabId, page: &PageKind) -> bool {
        let PageKind::ProjectChat { project_id, conversation_id } = page else { return false };
        let key = Scope::Project { project_id: project_id.clone() }.key();
        let held = self.handoff_in_flight(&key);
        let retired = self.handoff.retired.get(&key) == Some(conversation_id)
            && self.pages.get(&tab).is_none_or(|before| classify_url(&before.url) == *page);
        held || retired
    }

    /// The HUD's Handoff button (X1).
    pub(super) fn handoff_start(&mut self, now: Millis, tab: TabId) {
        let Some(report) = self.pages.get(&tab) else { return };
        let page = classify_url(&report.url);
        // ChatGPT (a Project's or a plain conversation) and z.ai (X10); DeepSeek has no
        // stable new-chat flow modelled yet.
        let (site, conversation_id, project_id) = match &page {
            PageKind::ProjectChat { project_id, conversation_id } => (Site::ChatGpt, conversation_id.clone(), Some(project_id.clone())),
            PageKind::Chat { site: site @ (Site::ChatGpt | Site::Zai), conversation_id } => (*site, conversation_id.clone(), None),
            _ => return self.handoff_refused(tab, None, &HandoffRefusal::NoContinuity),
        };
        let Some(scope) = page.scope() else { return };
        let key = scope.key();
        if self.handoff_retired(&key, &page) {
            return self.handoff_refused(tab, Some(&key), &HandoffRefusal::Retired);
        }
        if self.ledger.active_for(&key).is_some() {
            // A batch or wake on its way may come back unsent: it must be back in the
            // source's queue before a cut-over moves the queue (Q9).
            return self.handoff_refused(tab, Some(&key), &HandoffRefusal::DeliveryInFlight);
        }
        let working = self.bindings.binding_for(&scope).is_some_and(|b| self.tracker.is_working(&b.workspace_id));
        // The scope's machine is taken out (not copied) and put back if it refuses the Start.
        let mut machine = self.handoff.transfers.get_mut(&key).map(|t| std::mem::take(&mut t.machine)).unwrap_or_default();
        let start =
            HandoffInput::Start { conversation_id: conversation_id.clone(), source_url: report.url.clone(), workspace_working: working };
        if let Err(refusal) = machine.handle(start) {
            if let Some(transfer) = self.handoff.transfers.get_mut(&key) {
                transfer.machine = machine;
            }
            return self.handoff_refused(tab, Some(&key), &refusal);
        }
        self.handoff.transfers.insert(key.clone(), Transfer::start(machine, site, project_id, conversation_id, tab));
        self.record_activity(&key, ActivityKind::Handoff, ActivityOutcome::Sent, ActivityReason::Code("handoff_started"), None);
        self.handoff_drain(now, &key);
    }

    /// Whether `page` (a tab of scope `key`) shows the conversation that scope's finished
    /// transfer left and that is not its target again (a navigation back to it makes it
    /// one, B3): no second Handoff from it.
    fn handoff_retired(&self, key: &str, page: &PageKind) -> bool {
        let (PageKind::ProjectChat { conversation_id, .. } | PageKind::Chat { conversation_id, .. }) = page else { return false };
        let done = self
            .handoff
            .transfers
            .get(key)
            .is_some_and(|t| matches!(t.machine.state(), HandoffState::Done { .. }) && t.source_conversation == *conversation_id);
        done && page.scope().and_then(|s| self.bindings.binding_for(&s)).is_none_or(|b| b.active_conv_key.as_ref() != Some(conversation_id))
    }

    fn handoff_refused(&mut self, tab: TabId, key: Option<&str>, refusal: &HandoffRefusal) {
        self.notice(tab, Say::coded("handoffRefused", refusal.code(), vec![]), NoticeTone::Bad);
        if let Some(key) = key {
            self.record_activity(key, ActivityKind::Handoff, ActivityOutcome::Withheld, ActivityReason::Code(refusal.code()), None);
        }
    }

    /// "Resume handoff" (X7): the transfer hears what its target tab shows.
    pub(super) fn handoff_resume(&mut self, now: Millis, tab: TabId) {
        let Some(key) = self.handoff_key_of_tab(tab) else { return };
        let Some(transfer) = self.handoff.transfers.get(&key) else { return };
        let target = transfer
            .target_tab
            .and_then(|t| self.pages.get(&t))
            .map(|page| TargetPage { url: page.url.clone(), markers: page.markers.clone() });
        self.handoff_input(now, &key, TransferInput::Resume { target }, tab);
    }

    /// The scope keys of the transfers `test` accepts, in key order (one walk for every
    /// search: not an iterator adapter per closure).
    fn handoff_keys(&self, test: &dyn Fn(&Transfer) -> bool) -> Vec<String> {
        let mut keys = Vec::new();
        for (key, transfer) in self.handoff.transfers.iter() {
            if test(transfer) {
                keys.push(key.clone());
            }
        }
        keys
    }

    /// The transfer a tab's HUD speaks about: the scope it shows, or the transfer whose new
    /// tab it is.
    fn handoff_key_of_tab(&self, tab: TabId) -> Option<String> {
        let own = self.scope_of_tab(tab).map(|s| s.key()).filter(|k| self.handoff.transfers.contains_key(k));
        own.or_else(|| self.handoff_keys(&|t| t.target_tab == Some(tab) && t.machine.in_flight()).into_iter().next())
    }

    /// A page reported: every transfer in flight hears it (its new tab is found by its URL,
    /// becomes ready for the seed, shows the new conversation's id), then a due seed goes.
    pub(super) fn handoff_page(&mut self, now: Millis, tab: TabId) {
        let Some(report) = self.pages.get(&tab) else { return };
        let (url, idle) = (report.url.clone(), queue::is_idle_for_queue(report));
        let keys = self.handoff_keys(&|t| t.machine.in_flight());
        for key in keys {
            self.handoff_input(now, &key, TransferInput::Page { tab, url: url.clone(), idle }, tab);
            // A page of its new tab (known before, or found by its URL now).
            if self.handoff.transfers.get(&key).is_some_and(|t| t.target_tab == Some(tab)) {
                self.handoff_post_seed(now, &key);
            }
        }
    }

    /// The worker's `chrome.tabs.create` for a transfer answered: the new tab (whose page
    /// may have reported already), or browser control is unavailable (X8).
    pub(super) fn handoff_tab(&mut self, now: Millis, transfer_id: &str, tab: Result<TabId, String>) {
        let Some(key) = self.handoff_keys(&|t| t.transfer_id() == Some(transfer_id)).into_iter().next() else {
            return;
        };
        let opened = tab.as_ref().ok().copied();
        self.handoff_input(now, &key, TransferInput::TabOpened(tab), 0);
        if let Some(tab) = opened {
            self.handoff_page(now, tab);
        }
    }

    /// A runtime answer for a transfer (`continuity.resolve` or the package).
    pub(super) fn handoff_answered(&mut self, now: Millis, key: &str, resolve: bool, result: Result<RuntimeAnswer, CallError>) {
        let input = match (resolve, result) {
            (true, Ok(RuntimeAnswer::Resolved { continuity_id })) => TransferInput::Confirmed(Ok(continuity_id)),
            (false, Ok(RuntimeAnswer::Prepared(package))) => TransferInput::Prepared(Ok(package)),
            (true, Err(e)) => TransferInput::Confirmed(Err(e.message)),
            (false, Err(e)) => TransferInput::Prepared(Err(e.message)),
            (true, Ok(_)) => {
                TransferInput::Confirmed(Err("the runtime's answer to continuity.resolve is not its documented shape".to_owned()))
            }
            (false, Ok(_)) => TransferInput::Prepared(Err("the runtime's handoff package is not its documented shape".to_owned())),
        };
        self.handoff_input(now, key, input, 0);
    }

    /// On link-up: the calls of transfers restored while confirming or preparing (their
    /// answers were lost with the worker) go again.
    pub(super) fn handoff_link_up(&mut self, now: Millis) {
        let keys = self.handoff_keys(&|_| true);
        for key in keys {
            if !self.calls.values().any(|p| matches!(p, Purpose::Handoff { key: k, .. } if *k == key)) {
                self.handoff_input(now, &key, TransferInput::Reconnected, 0);
            }
        }
    }

    /// How a seed's delivery ended.
    pub(super) fn handoff_seed_resolved(&mut self, now: Millis, delivery: &Delivery, resolution: &Resolution) {
        let Some(key) = self.handoff_keys(&|t| t.seeds.contains(&delivery.id)).into_iter().next() else { return };
        let end = match resolution {
            // Its App could not be attached: not an attempt of the seed; it stays due and goes
            // once attaching works (never without the source's App).
            _ if resolution.app_not_attached() => SeedEnd::AppNotAttached,
            Resolution::Confirmed => SeedEnd::Outcome(SeedOutcome::Confirmed),
            Resolution::NotSent { .. } | Resolution::Lost => SeedEnd::Outcome(SeedOutcome::NotSent),
            Resolution::Abandoned => SeedEnd::Outcome(SeedOutcome::Uncertain),
        };
        self.handoff_input(now, &key, TransferInput::SeedEnded(end), delivery.tab);
        if end != SeedEnd::AppNotAttached {
            self.handoff_post_seed(now, &key);
        }
    }

    /// What a transfer asked for since its last input.
    fn handoff_drain(&mut self, now: Millis, key: &str) {
        self.handoff_carry_out(now, key, 0);
    }

    /// Feeds the transfer of `key` (`tab`: the tab the input came from, for a notice) and
    /// carries out what it asks for; whether the transfer was there.
    fn handoff_input(&mut self, now: Millis, key: &str, input: TransferInput, tab: TabId) -> bool {
        let Some(transfer) = self.handoff.transfers.get_mut(key) else { return false };
        transfer.handle(now, input);
        self.handoff_carry_out(now, key, tab);
        true
    }

    fn handoff_carry_out(&mut self, now: Millis, key: &str, tab: TabId) {
        while let Some(output) = self.handoff.transfers.get_mut(key).and_then(Transfer::poll) {
            match output {
                TransferOutput::Confirm { conversation_id } => {
                    self.call(Purpose::Handoff { key: key.to_owned(), resolve: true }, RuntimeCall::ContinuityResolve { conversation_id });
                }
                TransferOutput::Prepare { continuity_id, source_url } => {
                    // The seed's facts (X9): the bound workspace and its inbox ref, the queue.
                    let binding = self.bindings.list().find(|b| b.scope.key() == key);
                    let workspace_id = binding.map(|b| b.workspace_id.clone());
                    let browser_session_ref = binding.map(|b| browser_session_ref(&b.scope));
                    let queue = match self.handoff.transfers.get(key) {
                        Some(t) => {
                            self.queue_texts(&crate::text::concat(&[t.site.as_str(), ":", &t.source_conversation]), HANDOFF_QUEUE_ITEMS)
                        }
                        None => Vec::new(),
                    };
                    let call =
                        RuntimeCall::HandoffPrepare(PrepareCall { continuity_id, source_url, workspace_id, browser_session_ref, queue });
                    self.call(Purpose::Handoff { key: key.to_owned(), resolve: false }, call);
                }
                TransferOutput::OpenTab { transfer_id, url } => self.emit(ContinuityOutput::OpenTab { transfer_id, url }),
                TransferOutput::SeedDue => self.handoff_post_seed(now, key),
                TransferOutput::CutOver { new_conversation } => self.handoff_cut_over(key, &new_conversation),
                TransferOutput::Activity(code) => {
                    self.record_activity(key, ActivityKind::Handoff, ActivityOutcome::Sent, ActivityReason::Code(code), None);
                }
                TransferOutput::Ended(code) => {
                    self.record_activity(key, ActivityKind::Handoff, ActivityOutcome::Failed, ActivityReason::Code(code), None);
                }
                TransferOutput::ResumeNoTarget => self.notice(tab, Say::new("handoffResumeNoTarget", vec![]), NoticeTone::Bad),
                TransferOutput::Persist => self.persist(),
            }
        }
    }

    /// Posts every due seed whose new chat's page is idle (a held App's wait ended).
    pub(super) fn handoff_post_due_seeds(&mut self, now: Millis) {
        let keys = self.handoff_keys(&|t| t.seed_due);
        for key in keys {
            self.handoff_post_seed(now, &key);
        }
    }

    /// Posts a due seed once the new chat's page is idle.
    fn handoff_post_seed(&mut self, now: Millis, key: &str) {
        let Some((tab, subject, message)) = self.handoff.transfers.get(key).and_then(Transfer::seed_to_post) else { return };
        if !self.pages.get(&tab).is_some_and(queue::is_idle_for_queue) {
            return;
        }
        let message = message.to_owned();
        if let Ok(id) = self.post_delivery(now, &seed_key(key), tab, DeliveryKind::HandoffSeed, &subject, &message, Vec::new()) {
            self.handoff_input(now, key, TransferInput::SeedPosted { id: id.clone() }, tab);
            self.record_activity(key, ActivityKind::Handoff, ActivityOutcome::Sent, ActivityReason::Code("seed_sent"), Some(&id));
        }
    }

    /// The cut-over (B8, Q9, X10): a Project's target moves to the new conversation and the
    /// source is retired; a conversation scope's binding and Auto move to the new
    /// conversation (X1: the target inherits the source's Auto). The unsent queue items move,
    /// in order.
    fn handoff_cut_over(&mut self, key: &str, new_conversation: &str) {
        let Some(transfer) = self.handoff.transfers.get(key) else { return };
        // The parts used below, not a copy of the whole transfer.
        let (site, project_id, source_conversation) = (transfer.site, transfer.project_id.clone(), transfer.source_conversation.clone());
        let (source_tab, target_tab, last_seed) = (transfer.source_tab, transfer.target_tab, transfer.seeds.last().cloned());
        let scope = match project_id {
            Some(project_id) => {
                self.handoff.retired.insert(key.to_owned(), source_conversation.clone());
                Scope::Project { project_id }
            }
            None => {
                let source = Scope::Conversation { site, conversation_id: source_conversation.clone() };
                let target = Scope::Conversation { site, conversation_id: new_conversation.to_owned() };
                let auto = self.auto.scope_toggle(&source);
                self.auto.set_scope_auto(&source, false);
                self.auto.set_scope_auto(&target, auto);
                source
            }
        };
        self.bindings.handle(self.now, BindingInput::CutOver { scope, conversation_id: new_conversation.to_owned() });
        self.drain_bindings();
        let from = crate::text::concat(&[site.as_str(), ":", &source_conversation]);
        let to = crate::text::concat(&[site.as_str(), ":", new_conversation]);
        self.queue_move(from, to);
        self.record_activity(
            key,
            ActivityKind::Handoff,
            ActivityOutcome::Confirmed,
            ActivityReason::Code("cut_over"),
            last_seed.as_deref(),
        );
        self.notice(source_tab, Say::new("handoffDone", vec![new_conversation.to_owned()]), NoticeTone::Info);
        if let Some(tab) = target_tab {
            self.notice(tab, Say::new("handoffDone", vec![new_conversation.to_owned()]), NoticeTone::Info);
        }
        self.persist();
    }

    /// The HUD's handoff part on `tab`: a ChatGPT conversation (its scope's transfer), or the
    /// new tab of a transfer in flight.
    pub(super) fn handoff_view(&self, tab: TabId) -> Option<HandoffView> {
        let page = self.page_kind(tab);
        let conversation = matches!(&page, PageKind::ProjectChat { .. } | PageKind::Chat { site: Site::ChatGpt | Site::Zai, .. });
        let key = self.handoff_key_of_tab(tab);
        if !conversation && key.as_ref().is_none_or(|k| self.handoff.transfers.get(k).is_none_or(|t| t.target_tab != Some(tab))) {
            return None;
        }
        let transfer = key.as_ref().and_then(|k| self.handoff.transfers.get(k));
        let Some(transfer) = transfer else {
            return Some(HandoffView { step: "idle", line: None, button: "handoff", copy_prompt: None });
        };
        let state = transfer.machine.state();
        let uncertain = transfer
            .seeds
            .last()
            .and_then(|id| self.ledger.active().find(|d| &d.id == id))
            .is_some_and(|d| matches!(d.state, DeliveryState::Uncertain { .. }));
        let (line, button) = match state {
            HandoffState::Idle => (None, "handoff"),
            HandoffState::Seeding { .. } if uncertain => (Some(Say::new("handoffLine_seed_unconfirmed", vec![])), "none"),
            HandoffState::Opening { .. } if transfer.tab_lost() => (Some(Say::new("handoffLine_tab_unknown", vec![])), "resume"),
            HandoffState::Confirming { .. }
            | HandoffState::Preparing { .. }
            | HandoffState::Opening { .. }
            | HandoffState::Seeding { .. } => (Some(Say::coded("handoffLine", state.step(), vec![])), "none"),
            HandoffState::SeedUncertain { .. } => (Some(Say::coded("handoffLine", "seed_uncertain", vec![])), "resume"),
            HandoffState::CopyPrompt { .. } => (Some(Say::coded("handoffLine", "copy_prompt", vec![])), "copy_prompt"),
            HandoffState::Done { new_conversation } => {
                let again = conversation && key.as_deref().is_some_and(|k| !self.handoff_retired(k, &page));
                (Some(Say::new("handoffLine_done", vec![new_conversation.clone()])), if again { "handoff" } else { "none" })
            }
            HandoffState::Failed { reason: HandoffRefusal::JournalUnavailable { detail }, source_url } => {
                (Some(Say::new("handoffFailed_journal_unavailable", vec![detail.clone(), source_url.clone()])), "handoff")
            }
            HandoffState::Failed { reason, source_url } => {
                (Some(Say::coded("handoffFailed", reason.code(), vec![source_url.clone()])), "handoff")
            }
        };
        Some(HandoffView { step: state.step(), line, button, copy_prompt: transfer.machine.copy_prompt().map(str::to_owned) })
    }
}
