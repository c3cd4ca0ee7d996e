//! The HUD's Handoff in the continuity loop (SPEC X1–X8, B8, C2, Q9): drives one
//! [`crate::handoff::Handoff`] machine per source scope (a ChatGPT Project, or a plain
//! ChatGPT conversation) from the HUD's buttons, the runtime's answers, the pages' facts and
//! the delivery ledger.
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
use crate::handoff::{Handoff, HandoffInput, HandoffOutput, HandoffRefusal, HandoffState, Package, SeedOutcome};
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

/// The query parameter that names a transfer in its new tab's URL.
pub const HANDOFF_QUERY: &str = "herdr_handoff=";

/// One transfer and what the composition knows around its machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct Transfer {
    /// The machine.
    pub machine: Handoff,
    /// The source's site (ChatGPT, or z.ai: X10).
    #[serde(default)]
    pub site: Site,
    /// The source's Project, `None` for a conversation outside a Project.
    pub project_id: Option<String>,
    /// The source conversation.
    pub source_conversation: String,
    /// The tab the Handoff was pressed in.
    pub source_tab: TabId,
    /// The new conversation's tab, once opened (or found by its URL after a restart).
    pub target_tab: Option<TabId>,
    /// The seed deliveries posted (ids), oldest first.
    pub seeds: Vec<String>,
    /// The machine asked for a seed that has not been posted yet (the page was busy).
    pub seed_due: bool,
    /// The new tab was asked for (its `open_tab` left after the snapshot write).
    pub tab_requested: bool,
    /// The transfer's end (failed, Copy Prompt) is in the Activity timeline.
    #[serde(default)]
    pub end_recorded: bool,
}

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

/// The new tab's URL: the Project's home (ChatGPT opens a new chat of the Project there),
/// ChatGPT's or z.ai's new chat, naming the transfer.
pub fn new_chat_url(site: Site, project_id: Option<&str>, transfer_id: &str) -> String {
    match (site, project_id) {
        (_, Some(project)) => crate::text::concat(&["https://chatgpt.com/g/", project, "/project?", HANDOFF_QUERY, transfer_id]),
        (Site::Zai, None) => crate::text::concat(&["https://chat.z.ai/?", HANDOFF_QUERY, transfer_id]),
        (_, None) => crate::text::concat(&["https://chatgpt.com/?", HANDOFF_QUERY, transfer_id]),
    }
}

/// A page where a new chat starts: ChatGPT's root or a Project's home, z.ai's root.
fn new_chat_page(url: &str) -> bool {
    match classify_url(url) {
        PageKind::Root | PageKind::ProjectHome { .. } => true,
        PageKind::Unsupported { reason: crate::scope::UnsupportedPage::NoConversationYet } => url.starts_with("https://chat.z.ai/"),
        _ => false,
    }
}

fn package_of(state: &HandoffState) -> Option<&Package> {
    match state {
        HandoffState::Opening { package, .. }
        | HandoffState::Seeding { package, .. }
        | HandoffState::SeedUncertain { package, .. }
        | HandoffState::CopyPrompt { package } => Some(package),
        _ => None,
    }
}

fn query_names(url: &str, transfer_id: &str) -> bool {
    let wanted = crate::text::concat(&[HANDOFF_QUERY, transfer_id]);
    url.split_once('?').is_some_and(|(_, query)| query.split(['&', '#']).any(|part| part == wanted))
}

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
        let transfer = Transfer {
            machine,
            site,
            project_id,
            source_conversation: conversation_id,
            source_tab: tab,
            target_tab: None,
            seeds: Vec::new(),
            seed_due: false,
            tab_requested: false,
            end_recorded: false,
        };
        self.handoff.transfers.insert(key.clone(), transfer);
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

    /// "Resume handoff" (X7): probes the target's thread for the seed's marker — present →
    /// the cut-over; absent → the seed goes again.
    pub(super) fn handoff_resume(&mut self, now: Millis, tab: TabId) {
        let Some(key) = self.handoff_key_of_tab(tab) else { return };
        let Some(transfer) = self.handoff.transfers.get(&key) else { return };
        if self.handoff_tab_lost(transfer) {
            // Its tab was asked for before a restart and never showed up: ask again (no seed
            // was typed anywhere, so no second conversation can come of it).
            self.record_activity(&key, ActivityKind::Handoff, ActivityOutcome::Sent, ActivityReason::Code("tab_asked_again"), None);
            return self.handoff_output(now, &key, HandoffOutput::OpenNewChat);
        }
        if !matches!(transfer.machine.state(), HandoffState::SeedUncertain { .. }) {
            return;
        }
        let Some(target) = transfer.target_tab.and_then(|t| self.pages.get(&t)) else {
            return self.notice(tab, Say::new("handoffResumeNoTarget", vec![]), NoticeTone::Bad);
        };
        let seed_present = target.markers.iter().any(|m| transfer.seeds.contains(m));
        let new_conversation = self.handoff_new_conversation(transfer, target);
        let Some(transfer) = self.handoff.transfers.get_mut(&key) else { return };
        if let Some(conversation_id) = new_conversation {
            let _ = transfer.machine.handle(HandoffInput::NewConversation { conversation_id });
        }
        let _ = transfer.machine.handle(HandoffInput::Resume { seed_present });
        self.handoff_drain(now, &key);
    }

    /// A transfer whose new tab was asked for by an earlier worker life and is not known: the
    /// request may have been lost with that worker.
    fn handoff_tab_lost(&self, transfer: &Transfer) -> bool {
        let asked = package_of(transfer.machine.state()).is_some_and(|p| self.handoff_tabs_asked.contains(&p.transfer_id));
        matches!(transfer.machine.state(), HandoffState::Opening { .. })
            && transfer.tab_requested
            && transfer.target_tab.is_none()
            && !asked
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

    /// The new conversation a target page shows: a conversation of the source's Project (or
    /// of ChatGPT outside one) other than the source.
    fn handoff_new_conversation(&self, transfer: &Transfer, report: &PageReport) -> Option<String> {
        let id = match (classify_url(&report.url), &transfer.project_id) {
            (PageKind::ProjectChat { project_id, conversation_id }, Some(ours)) if project_id == *ours => conversation_id,
            (PageKind::Chat { site, conversation_id }, None) if site == transfer.site => conversation_id,
            _ => return None,
        };
        (id != transfer.source_conversation).then_some(id)
    }

    /// A page reported: the new tab is found by its URL, becomes ready for the seed, shows
    /// the new conversation's id.
    pub(super) fn handoff_page(&mut self, now: Millis, tab: TabId) {
        let Some(report) = self.pages.get(&tab).cloned() else { return };
        let keys = self.handoff_keys(&|t| t.machine.in_flight());
        for key in keys {
            let Some(transfer) = self.handoff.transfers.get(&key) else { continue };
            let transfer_id = package_of(transfer.machine.state()).map(|p| p.transfer_id.clone());
            let adopt =
                transfer.target_tab.is_none() && transfer.tab_requested && transfer_id.is_some_and(|id| query_names(&report.url, &id));
            if transfer.target_tab != Some(tab) && !adopt {
                continue;
            }
            let new_conversation = self.handoff_new_conversation(transfer, &report);
            let ready = new_chat_page(&report.url) && queue::is_idle_for_queue(&report);
            let Some(transfer) = self.handoff.transfers.get_mut(&key) else { continue };
            if adopt {
                transfer.target_tab = Some(tab);
                self.outputs.push_back(ContinuityOutput::Persist);
            }
            if let Some(conversation_id) = new_conversation {
                let _ = transfer.machine.handle(HandoffInput::NewConversation { conversation_id });
            }
            if ready && matches!(transfer.machine.state(), HandoffState::Opening { .. }) {
                let _ = transfer.machine.handle(HandoffInput::TargetReady);
            }
            self.handoff_drain(now, &key);
            self.handoff_post_seed(now, &key);
        }
    }

    /// The worker's `chrome.tabs.create` for a transfer answered: the new tab, or browser
    /// control is unavailable (X8).
    pub(super) fn handoff_tab(&mut self, now: Millis, transfer_id: &str, tab: Result<TabId, String>) {
        let Some(key) =
            self.handoff_keys(&|t| package_of(t.machine.state()).is_some_and(|p| p.transfer_id == transfer_id)).into_iter().next()
        else {
            return;
        };
        self.handoff_tabs_asked.remove(transfer_id);
        let Some(transfer) = self.handoff.transfers.get_mut(&key) else { return };
        match tab {
            Ok(tab) => {
                transfer.target_tab.get_or_insert(tab);
                self.record_activity(&key, ActivityKind::Handoff, ActivityOutcome::Sent, ActivityReason::Code("new_chat_opened"), None);
                self.persist();
                self.handoff_page(now, tab);
            }
            Err(_) => {
                let _ = transfer.machine.handle(HandoffInput::BrowserControlUnavailable);
                self.handoff_drain(now, &key);
            }
        }
    }

    /// A runtime answer for a transfer (`continuity.resolve` or the package).
    pub(super) fn handoff_answered(&mut self, now: Millis, key: &str, resolve: bool, result: Result<RuntimeAnswer, CallError>) {
        let Some(transfer) = self.handoff.transfers.get_mut(key) else { return };
        let input = match (resolve, result) {
            (true, Ok(RuntimeAnswer::Resolved { continuity_id })) => HandoffInput::Confirmed(Ok(continuity_id)),
            (false, Ok(RuntimeAnswer::Prepared(package))) => HandoffInput::Prepared(Ok(package)),
            (true, Err(e)) => HandoffInput::Confirmed(Err(e.message)),
            (false, Err(e)) => HandoffInput::Prepared(Err(e.message)),
            (true, Ok(_)) => {
                HandoffInput::Confirmed(Err("the runtime's answer to continuity.resolve is not its documented shape".to_owned()))
            }
            (false, Ok(_)) => HandoffInput::Prepared(Err("the runtime's handoff package is not its documented shape".to_owned())),
        };
        let _ = transfer.machine.handle(input);
        self.handoff_drain(now, key);
    }

    /// On link-up: the calls of transfers restored while confirming or preparing (their
    /// answers were lost with the worker) go again.
    pub(super) fn handoff_link_up(&mut self, now: Millis) {
        let mut keys: Vec<(String, HandoffOutput)> = Vec::new();
        for (k, t) in self.handoff.transfers.iter() {
            if self.calls.values().any(|p| matches!(p, Purpose::Handoff { key, .. } if key == k)) {
                continue;
            }
            match t.machine.state() {
                HandoffState::Confirming { conversation_id, .. } => {
                    keys.push((k.clone(), HandoffOutput::Confirm { conversation_id: conversation_id.clone() }))
                }
                HandoffState::Preparing { continuity_id, .. } => {
                    keys.push((k.clone(), HandoffOutput::Prepare { continuity_id: continuity_id.clone() }))
                }
                _ => {}
            }
        }
        for (key, output) in keys {
            self.handoff_output(now, &key, output);
        }
    }

    /// How a seed's delivery ended.
    pub(super) fn handoff_seed_resolved(&mut self, now: Millis, delivery: &Delivery, resolution: &Resolution) {
        let Some(key) = self.handoff_keys(&|t| t.seeds.contains(&delivery.id)).into_iter().next() else { return };
        if resolution.app_not_attached() {
            // Its App could not be attached: not an attempt of the seed; it stays due and goes
            // once attaching works (never without the source's App).
            if let Some(transfer) = self.handoff.transfers.get_mut(&key) {
                transfer.seed_due = true;
            }
            self.persist();
            return;
        }
        let outcome = match resolution {
            Resolution::Confirmed => SeedOutcome::Confirmed,
            Resolution::NotSent { .. } | Resolution::Lost => SeedOutcome::NotSent,
            Resolution::Abandoned => SeedOutcome::Uncertain,
        };
        if let Some(transfer) = self.handoff.transfers.get_mut(&key) {
            let _ = transfer.machine.handle(HandoffInput::Seed(outcome));
        }
        self.handoff_drain(now, &key);
        self.handoff_post_seed(now, &key);
    }

    fn handoff_drain(&mut self, now: Millis, key: &str) {
        while let Some(output) = self.handoff.transfers.get_mut(key).and_then(|t| t.machine.poll()) {
            self.handoff_output(now, key, output);
        }
        // The end's code (the refusal's codes are `'static`): no copy of the state.
        let ended = match self.handoff.transfers.get(key).map(|t| t.machine.state()) {
            Some(HandoffState::Failed { reason, .. }) => Some(reason.code()),
            Some(HandoffState::CopyPrompt { .. }) => Some("copy_prompt_offered"),
            _ => None,
        };
        if let Some(code) = ended {
            if !self.handoff_reported(key) {
                self.record_activity(key, ActivityKind::Handoff, ActivityOutcome::Failed, ActivityReason::Code(code), None);
            }
        }
        self.persist();
    }

    /// Marks a transfer's end as recorded: a failed or Copy Prompt transfer is recorded once,
    /// not on every later input.
    fn handoff_reported(&mut self, key: &str) -> bool {
        let Some(transfer) = self.handoff.transfers.get_mut(key) else { return true };
        std::mem::replace(&mut transfer.end_recorded, true)
    }

    fn handoff_output(&mut self, now: Millis, key: &str, output: HandoffOutput) {
        match output {
            // The source's scheduler reads `handoff_in_flight` on its next sync.
            HandoffOutput::PauseSource | HandoffOutput::ResumeSource => {}
            HandoffOutput::Confirm { conversation_id } => {
                self.call(Purpose::Handoff { key: key.to_owned(), resolve: true }, RuntimeCall::ContinuityResolve { conversation_id });
            }
            HandoffOutput::Prepare { continuity_id } => {
                let source_url = match self.handoff.transfers.get(key).map(|t| t.machine.state()) {
                    Some(HandoffState::Preparing { source_url, .. }) => source_url.clone(),
                    _ => return,
                };
                // The seed's facts (X9): the bound workspace and its inbox ref, the queue.
                let binding = self.bindings.list().find(|b| b.scope.key() == key);
                let workspace_id = binding.map(|b| b.workspace_id.clone());
                let browser_session_ref = binding.map(|b| browser_session_ref(&b.scope));
                let queue = match self.handoff.transfers.get(key) {
                    Some(t) => self.queue_texts(&crate::text::concat(&[t.site.as_str(), ":", &t.source_conversation]), HANDOFF_QUEUE_ITEMS),
                    None => Vec::new(),
                };
                let call = RuntimeCall::HandoffPrepare(PrepareCall { continuity_id, source_url, workspace_id, browser_session_ref, queue });
                self.call(Purpose::Handoff { key: key.to_owned(), resolve: false }, call);
            }
            HandoffOutput::OpenNewChat => {
                let Some(transfer) = self.handoff.transfers.get_mut(key) else { return };
                let Some(transfer_id) = package_of(transfer.machine.state()).map(|p| p.transfer_id.clone()) else { return };
                transfer.tab_requested = true;
                let url = new_chat_url(transfer.site, transfer.project_id.as_deref(), &transfer_id);
                self.handoff_tabs_asked.insert(transfer_id.clone());
                self.persist();
                self.emit(ContinuityOutput::OpenTab { transfer_id, url });
            }
            HandoffOutput::SendSeed { .. } => {
                if let Some(transfer) = self.handoff.transfers.get_mut(key) {
                    transfer.seed_due = true;
                }
                self.handoff_post_seed(now, key);
            }
            HandoffOutput::CutOver { new_conversation } => self.handoff_cut_over(key, &new_conversation),
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
        let Some(transfer) = self.handoff.transfers.get(key) else { return };
        let (Some(tab), true) = (transfer.target_tab, transfer.seed_due) else { return };
        let Some(package) = package_of(transfer.machine.state()).cloned() else { return };
        if !self.pages.get(&tab).is_some_and(queue::is_idle_for_queue) {
            return;
        }
        let subject = crate::text::concat(&["handoff:", &package.transfer_id]);
        if let Ok(id) = self.post_delivery(now, &seed_key(key), tab, DeliveryKind::HandoffSeed, &subject, &package.message, Vec::new()) {
            if let Some(transfer) = self.handoff.transfers.get_mut(key) {
                transfer.seed_due = false;
                transfer.seeds.push(id.clone());
            }
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
            HandoffState::Opening { .. } if self.handoff_tab_lost(transfer) => {
                (Some(Say::new("handoffLine_tab_unknown", vec![])), "resume")
            }
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
