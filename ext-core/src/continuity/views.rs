//! The views of the continuity state: the page HUD ([`ContinuityView`]) and the side
//! panel ([`PanelView`]). Pure queries over the machine; the shells only render them.
//!
//! Invariant: every withheld wake shows its named reason; locked actions say why.

use super::*;

/// True where the turn-end judge is offered: ChatGPT pages only (M6; z.ai and DeepSeek get
/// progress, wakes and the JSON bridge).
pub(super) fn judged_site(page: &PageKind) -> bool {
    use crate::scope::Site;
    !matches!(page.scope(), Some(Scope::Conversation { site: Site::Zai | Site::DeepSeek, .. }))
}

impl Continuity {
    /// What the HUD of `tab` shows about continuity; `None` for pages that are not chats.
    pub fn page_view(&self, tab: TabId) -> Option<ContinuityView> {
        let page = self.page_kind(tab);
        let page_kind = match &page {
            PageKind::Root => "root",
            PageKind::ProjectHome { .. } => "project_home",
            PageKind::ProjectChat { .. } => "project_chat",
            PageKind::Chat { .. } => "chat",
            PageKind::Unsupported { .. } => return None,
        };
        let scope = page.scope();
        let binding = scope.as_ref().and_then(|s| self.bindings.binding_for(s));
        let key = scope.as_ref().map(Scope::key);
        let status = key.as_ref().and_then(|k| self.scopes.get(k));
        // The scope's delivery in flight (one search for its three fields).
        let delivery = key.as_ref().and_then(|k| self.ledger.active_for(k));
        let pending = self.bindings.pending_for(tab).map(|p| WorkspaceRef {
            workspace_id: p.workspace_id.clone(),
            label: p.label.clone(),
            in_catalog: true,
        });
        let auto = scope.as_ref().map_or(AutoState::Off, |s| self.auto.state(s));
        let project_auto_barred = matches!(scope, Some(Scope::Project { .. })) && !self.auto.allow_project_auto();
        let auto_note = (auto == AutoState::ProjectAutoNotAllowed || project_auto_barred).then_some(WakeWithheld::ProjectAutoNotAllowed);
        let (scope_state, working_panes) = match binding {
            Some(b) if self.tracker.is_working(&b.workspace_id) => ("working", self.tracker.working_panes(&b.workspace_id)),
            Some(_) if status.is_some_and(|s| s.settled_once) => ("settled", 0),
            _ => ("idle", 0),
        };
        // The chat's App first: while it cannot ride on a message, nothing of the scope (a
        // handoff's seed included) is typed, whatever else waits.
        let app_reason =
            key.as_ref().and_then(|k| self.app_reason(k).or_else(|| self.app_reason(&crate::text::concat(&[SEED_KEY_PREFIX, k]))));
        let withheld = app_reason
            .or_else(|| self.rate_block_tab(tab))
            .or_else(|| status.and_then(|s| s.scheduler.as_ref()).and_then(WakeScheduler::withheld))
            .filter(|_| binding.is_some())
            .map(|code| Withheld { code });
        let mut actions = vec![ViewAction::new("toggle_auto", self.auto.hud_action(&page, HudAction::ToggleAuto))];
        if page.has_composer_target() {
            for (id, action) in
                [("continue", HudAction::Continue), ("check_herdr", HudAction::CheckHerdr), ("llm_judge", HudAction::LlmJudge)]
            {
                // The turn-end judge is ChatGPT's only (M6).
                if action == HudAction::LlmJudge && !judged_site(&page) {
                    continue;
                }
                actions.push(ViewAction::new(id, self.auto.hud_action(&page, action)));
            }
        }
        if binding.is_some_and(|b| b.app.is_some() || b.app_ambiguous) {
            // "Forget App": plain messages until a newer human turn carries an App again.
            actions.push(ViewAction::new("forget_app", Ok(())));
        }
        if binding.is_none() && page.conversation().is_some() {
            // X3: an unbound conversation can be journaled before it is bound.
            actions.push(ViewAction::new(if self.journal_opted(tab) { "journal_opt_out" } else { "journal_opt_in" }, Ok(())));
        }
        if self.bridge_scope(tab).is_some() {
            // The JSON bridge (O2): insert its prompt; send the last reply's results again.
            actions.push(ViewAction::new("bridge_prompt", Ok(())));
            actions.push(ViewAction::new("bridge_send", Ok(())));
        }
        let auto_name = match auto {
            AutoState::On => "on",
            AutoState::Off => "off",
            AutoState::ProjectAutoNotAllowed => "not_allowed",
        };
        if auto == AutoState::Off {
            actions[0].label = "actionAutoTurnOn".to_owned();
        } else {
            actions[0].label = "actionAutoTurnOff".to_owned();
        }
        let handoff = self.handoff_view(tab);
        // The Handoff button the worker names (Copy Prompt copies the view's `copy_prompt`).
        actions.extend(handoff.as_ref().and_then(|h| handoff_action(h.button)));
        // Goal mode (J7) acts on bound ChatGPT chats only: the button opens the page's form.
        if binding.is_some() && judged_site(&page) {
            let mut goal = ViewAction::new("goal", Ok(()));
            goal.label = "hudGoal".to_owned();
            goal.title = Some("hudGoalTitle".to_owned());
            actions.push(goal);
        }
        let mut view = ContinuityView {
            page_kind,
            scope_key: key.clone(),
            session_ref: scope.as_ref().map(browser_session_ref),
            binding: binding.map(|b| WorkspaceRef {
                workspace_id: b.workspace_id.clone(),
                label: b.label.clone(),
                in_catalog: b.workspace_in_catalog,
            }),
            pending_binding: pending,
            active_target: binding.and_then(|b| match b.scope {
                Scope::Project { .. } => b.active_conv_key.clone(),
                Scope::Conversation { .. } => None,
            }),
            auto: auto_name,
            auto_line: crate::hud_pill::auto_keys(auto_name).0,
            auto_note,
            scope_state,
            working_panes,
            tasks: status.and_then(|s| s.counts).filter(|_| !status.is_some_and(|s| s.inbox_missing)),
            inbox_missing: status.is_some_and(|s| s.inbox_missing),
            guidance: status.map(|s| super::guidance::hud_lines(&s.wake_tasks)).unwrap_or_default(),
            last_wake: status.and_then(|s| s.last_wake.clone()),
            wake_count: status.map_or(0, |s| s.wake_count),
            progress_count: status.map_or(0, |s| s.progress_count),
            in_flight: delivery.map(|d| d.id.clone()),
            layout: self.pages.get(&tab).and_then(|p| p.generation.clone()),
            unresolved: self.pages.get(&tab).and_then(|p| p.unresolved.clone()),
            delivery_state: delivery.map(|d| match d.state {
                DeliveryState::Typing { .. } => "typing",
                DeliveryState::Submitted { .. } => "submitted",
                DeliveryState::Uncertain { .. } => "uncertain",
            }),
            delivery_uncertain_why: delivery.and_then(|d| match &d.state {
                DeliveryState::Uncertain { why, .. } => Some(why.clone()),
                _ => None,
            }),
            withheld,
            app: binding.and_then(|b| b.app.clone()),
            app_ambiguous: binding.is_some_and(|b| b.app_ambiguous),
            actions,
            queue: self.queue_view(tab),
            judge: self.semantic_line(tab),
            recovery: self.recovery_line(tab),
            health: self.health_line(tab),
            card: self.card_line(tab),
            journal: self.journal_line(tab),
            pressure: self.pressure_line(tab),
            rollover: self.rollover_line(tab),
            handoff,
            bridge: self.bridge_view(tab),
            cooldown_until: self.cooldown_line(tab),
            lines: Vec::new(),
        };
        view.lines = super::hud_lines::lines(&view);
        Some(view)
    }

    /// What the side panel shows for `tab` (the tab it is about, if any).
    pub fn panel_view(&self, tab: Option<TabId>) -> PanelView {
        let tab_view = tab.and_then(|tab| {
            let report = self.pages.get(&tab)?;
            let page = classify_url(&report.url);
            let (bindable, reason) = match &page {
                PageKind::Unsupported { reason } => (false, Some(*reason)),
                _ => (true, None),
            };
            Some(PanelTab {
                tab_id: tab,
                url: report.url.clone(),
                scope_key: page.scope().map(|s| s.key()),
                session_ref: page.scope().as_ref().map(browser_session_ref),
                bound_to: page
                    .scope()
                    .and_then(|s| self.bindings.binding_for(&s).map(|b| b.workspace_id.clone()))
                    .or_else(|| self.bindings.pending_for(tab).map(|p| p.workspace_id.clone())),
                bindable,
                reason,
            })
        });
        PanelView {
            tab: tab_view,
            catalog: self.catalog.clone(),
            catalog_error: self.catalog_error.clone(),
            bindings: self
                .bindings
                .list()
                .map(|b| PanelBinding {
                    scope_key: b.scope.key(),
                    session_ref: browser_session_ref(&b.scope),
                    workspace_id: b.workspace_id.clone(),
                    label: b.label.clone(),
                    active_target: b.active_conv_key.clone(),
                    in_catalog: b.workspace_in_catalog,
                    auto: self.auto.state(&b.scope),
                })
                .collect(),
        }
    }

    /// The scope shown by a tab, if any.
    pub fn tab_scope(&self, tab: TabId) -> Option<Scope> {
        self.scope_of_tab(tab)
    }
}

/// A workspace as the HUD shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct WorkspaceRef {
    /// Id (identity).
    pub workspace_id: String,
    /// Label (display).
    pub label: String,
    /// Whether the live catalog lists it.
    pub in_catalog: bool,
}

/// Why nothing is sent now (the HUD shows `withheld_<code>` of `_locales`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct Withheld {
    /// The reason code.
    pub code: WakeWithheld,
}

/// The HUD button for the Handoff's `button` (`none`: no button; `resume` sends
/// `handoff_resume`; `copy_prompt` copies the view's `copy_prompt`; any other is its command).
pub fn handoff_action(button: &'static str) -> Option<ViewAction> {
    match button {
        "none" => None,
        "resume" => Some(ViewAction::new("handoff_resume", Ok(()))),
        id => Some(ViewAction::new(id, Ok(()))),
    }
}

/// One HUD button: the command it sends (`id`) and its label's message key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct ViewAction {
    /// Wire action name (the command a press sends; `goal` opens the Goal form and
    /// `copy_prompt` copies the Handoff's `copy_prompt` instead).
    pub id: &'static str,
    /// Message key of its label.
    pub label: String,
    /// Message key of its tooltip, if it has one.
    pub title: Option<String>,
    /// Why it is locked, if it is.
    pub locked: Option<LockedWhy>,
}

/// A locked button's reason: its code and the key of the text saying it (`locked_<code>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct LockedWhy {
    /// The code.
    pub code: crate::auto_gate::ActionLocked,
    /// Message key of the locked button's tooltip.
    pub key: String,
}

impl ViewAction {
    fn new(id: &'static str, allowed: Result<(), crate::auto_gate::ActionLocked>) -> Self {
        ViewAction {
            id,
            label: crate::text::concat(&["action_", id]),
            title: None,
            locked: allowed.err().map(|code| LockedWhy { code, key: crate::text::concat(&["locked_", code.wire_name()]) }),
        }
    }
}

/// The continuity part of a page's HUD. The fields marked `skip_serializing` are what
/// [`super::hud_lines::lines`] is built from and no renderer reads: they stay out of the
/// message the worker posts (and its writer out of the wasm).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct ContinuityView {
    /// `root | project_home | project_chat | chat`.
    #[serde(skip_serializing)]
    pub page_kind: &'static str,
    /// The page's scope key.
    #[serde(skip_serializing)]
    pub scope_key: Option<String>,
    /// The scope's `browser_session_ref` (for `herdr_prompt`).
    #[serde(skip_serializing)]
    pub session_ref: Option<String>,
    /// The scope's binding.
    pub binding: Option<WorkspaceRef>,
    /// Root page: the tab's pending binding (B4).
    #[serde(skip_serializing)]
    pub pending_binding: Option<WorkspaceRef>,
    /// Project: the conversation receiving messages (B3).
    pub active_target: Option<String>,
    /// `on | off | not_allowed`.
    pub auto: &'static str,
    /// The panel's Auto line: `hudAutoOn | hudAutoOff | hudAutoNotAllowed`
    /// (`crate::hud_pill::auto_keys`, the table the pill's Auto part comes from too).
    #[serde(skip_serializing)]
    pub auto_line: &'static str,
    /// Why Project Auto is unavailable, if it is (`withheld_<code>` of `_locales`).
    #[serde(skip_serializing)]
    pub auto_note: Option<WakeWithheld>,
    /// `idle | working | settled`.
    pub scope_state: &'static str,
    /// Panes working now.
    #[serde(skip_serializing)]
    pub working_panes: u32,
    /// Inbox counters.
    pub tasks: Option<TaskCounts>,
    /// The companion lacks the parent inbox.
    #[serde(skip_serializing)]
    pub inbox_missing: bool,
    /// Parent guidance of the pending tasks (I5): advice, shown as such.
    #[serde(skip_serializing)]
    pub guidance: Vec<GuidanceLine>,
    /// The last confirmed message.
    #[serde(skip_serializing)]
    pub last_wake: Option<LastWake>,
    /// Confirmed wakes since binding.
    pub wake_count: u32,
    /// Confirmed progress messages since binding.
    pub progress_count: u32,
    /// The page's layout label (`chatgpt.thread`, …, `mixed`), diagnostic only; `None`
    /// when no generation's markers hold and no composer resolved.
    pub layout: Option<String>,
    /// The first fact the page needs that is missing or ambiguous (nothing is typed there
    /// while it is set); `None` when every needed fact resolves.
    pub unresolved: Option<Unresolved>,
    /// Where the delivery in flight stands (`typing`, `submitted`, `uncertain`), if any.
    pub delivery_state: Option<&'static str>,
    /// Why it is uncertain (`no_answer`, `not_seen`, `page_gone`, `unconfirmed`,
    /// `restarted`).
    #[serde(skip_serializing)]
    pub delivery_uncertain_why: Option<String>,
    /// The delivery awaiting confirmation.
    #[serde(skip_serializing)]
    pub in_flight: Option<String>,
    /// Why the next message would not be sent now (an `app_*` code first: the chat's App
    /// cannot ride on a message).
    pub withheld: Option<Withheld>,
    /// The App every message to this chat carries (learned from its human turns).
    pub app: Option<AppMention>,
    /// The chat's newest human turn carried several Apps: nothing is typed until one does.
    pub app_ambiguous: bool,
    /// Buttons.
    pub actions: Vec<ViewAction>,
    /// The Queue of this page's conversation (Q1–Q8); `None` off a conversation.
    pub queue: Option<QueueView>,
    /// Semantic Auto's last word on this conversation (a verdict, why it stopped or was
    /// not asked), or a judge settings problem; `None` when there is nothing to say.
    #[serde(skip_serializing)]
    pub judge: Option<Say>,
    /// Stuck-page recovery on a ChatGPT conversation: state, reason, budgets left, probes.
    pub recovery: Option<RecoveryLine>,
    /// Page health on a ChatGPT conversation: level, the last decision and its reason (H1–H6).
    pub health: Option<HealthLine>,
    /// ChatGPT's tool-permission cards (M5): a card left to the user and why, or the
    /// newest one accepted here (connector, time).
    pub card: Option<CardLine>,
    /// The Continuity Journal on a bound conversation: recorded (the chain), turns waiting
    /// and why, turns refused or missed (C1).
    pub journal: Option<Say>,
    /// The conversation's context pressure (R1); `None` until the page reported turns.
    pub pressure: Option<crate::context_pressure::Pressure>,
    /// Automatic rollover (R2) once the pressure is at the `auto` level: `started`, or the
    /// code of the condition that holds it back (`crate::rollover::RolloverBlocker::code`).
    pub rollover: Option<&'static str>,
    /// The HUD's Handoff (X1–X8): its step, line and button, and Copy Prompt's text while
    /// it is offered; `None` off ChatGPT conversations and a transfer's new tab.
    pub handoff: Option<HandoffView>,
    /// The JSON bridge on a bound z.ai / DeepSeek chat: the approval card (calls waiting
    /// for Run / Skip), the round limit, the rounds of the human turn; `None` elsewhere
    /// and until the runtime answered a reply there.
    pub bridge: Option<BridgeView>,
    /// While ChatGPT rate-limits the page's account: the epoch ms until which automatic
    /// messages and backend reads wait (`hudCooldownUntil`); `None` otherwise.
    pub cooldown_until: Option<Millis>,
    /// The expanded HUD's lines in display order: keys, substitutions, tones and hooks
    /// (`hud_lines::lines` of the fields above; the page renders them as they come).
    pub lines: Vec<super::hud_lines::HudLine>,
}

/// The side panel's view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct PanelView {
    /// The tab the panel is about.
    pub tab: Option<PanelTab>,
    /// The live catalog.
    pub catalog: Vec<CatalogWorkspace>,
    /// Why the catalog could not be read.
    pub catalog_error: Option<String>,
    /// Every binding.
    pub bindings: Vec<PanelBinding>,
}

/// The panel's current tab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct PanelTab {
    /// The tab.
    pub tab_id: TabId,
    /// Its URL.
    pub url: String,
    /// Its scope key.
    pub scope_key: Option<String>,
    /// Its session ref.
    pub session_ref: Option<String>,
    /// The workspace it is bound to (or pending for).
    pub bound_to: Option<String>,
    /// Whether it can be bound.
    pub bindable: bool,
    /// Why not (the panel shows `unsupported_<code>` of `_locales`).
    pub reason: Option<crate::scope::UnsupportedPage>,
}

/// One binding row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct PanelBinding {
    /// Scope key.
    pub scope_key: String,
    /// Session ref.
    pub session_ref: String,
    /// Workspace id.
    pub workspace_id: String,
    /// Label.
    pub label: String,
    /// Active target.
    pub active_target: Option<String>,
    /// Listed in the catalog.
    pub in_catalog: bool,
    /// Auto state.
    pub auto: AutoState,
}

use crate::json_read::WriteJson;

// The worker writes the views with these writers (`crate::json_read`), not serde's derived
// code; serde's `Serialize` (tests, native tools) writes the same. Nothing reads them back
// in Rust: the HUD and the side panel are JS renderers of this JSON.
