//! Auto settings per scope, HUD action locks, and the reasons a wake is withheld
//! (SPEC M1–M4, M7, B5, X1, R2).
//!
//! Auto is per scope: a ChatGPT Project needs both the global option "allow Project Auto"
//! and the Project's own toggle, shared by `project_id` (M2); plain ChatGPT, z.ai and
//! DeepSeek conversations have their own toggle (M3). Every scope starts with Auto off
//! (M1). With Auto on, Continue / Check Herdr / LLM judge are locked so two paths never
//! push the same chat; Handoff is not locked by Auto (M4).
//!
//! Invariants:
//! - A scope never seen before is [`AutoState::Off`].
//! - A Project is [`AutoState::On`] only when both the global option and its toggle are on.
//! - [`wake_gate`] is the single place that decides whether a wake or progress message may
//!   be sent; every refusal is a [`WakeWithheld`] value (its `_locales` text: `withheld_<code>`), never a
//!   silent `false`.

use serde::Serialize;

use crate::json_read::{ReadJson, WriteJson};

use crate::scope::{PageKind, Scope};
use crate::vec_map::VecMap;

/// The effective Auto state of a scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum AutoState {
    /// Auto is off for this scope (the default, M1).
    Off,
    /// Auto is on.
    On,
    /// The Project's toggle is on but the global "allow Project Auto" option is off (M2).
    ProjectAutoNotAllowed,
}

/// HUD controls whose availability depends on the page and on Auto.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HudAction {
    /// Manual continue.
    Continue,
    /// Read live workspace state and bring it into the chat.
    CheckHerdr,
    /// Ask the LLM judge whether the reply left work unfinished.
    LlmJudge,
    /// Move the work to a new conversation (its own safety gate lives elsewhere, X).
    Handoff,
    /// Switch this scope's Auto on or off.
    ToggleAuto,
}

/// Why a HUD control is unavailable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum ActionLocked {
    /// Auto is on: it already drives this chat (M4).
    AutoIsOn,
    /// The page has no conversation composer (root / Project home / unsupported, B5).
    NoComposerOnThisPage,
    /// The page has no scope yet (root page), so there is nothing to switch Auto for.
    NoScopeOnThisPage,
}

/// The Auto settings of every scope the user touched, plus the global Project option.
///
/// Driver contract: the shell calls the setters when the user changes the Options page or
/// a HUD toggle and persists the struct (plain serde data) afterwards; queries are pure.
/// There are no timers and no outputs to poll.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct AutoGate {
    /// Options page: "allow Project Auto" (M2). Off by default.
    allow_project_auto: bool,
    /// Per-scope toggles by [`Scope::key`]; absent means off (M1).
    toggles: VecMap<String, bool>,
}

impl AutoGate {
    /// All off.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the global "allow Project Auto" option (Options page).
    pub fn set_allow_project_auto(&mut self, allowed: bool) {
        self.allow_project_auto = allowed;
    }

    /// Whether the global "allow Project Auto" option is on.
    pub fn allow_project_auto(&self) -> bool {
        self.allow_project_auto
    }

    /// Sets a scope's own toggle (the HUD switch). A Project's toggle is shared by every
    /// conversation in it, including those after a handoff (M2, X1).
    pub fn set_scope_auto(&mut self, scope: &Scope, on: bool) {
        if on {
            self.toggles.insert(scope.key(), true);
        } else {
            self.toggles.remove(&scope.key());
        }
    }

    /// The scope's own toggle, regardless of the global option.
    pub fn scope_toggle(&self, scope: &Scope) -> bool {
        self.toggles.get(&scope.key()).copied().unwrap_or(false)
    }

    /// The effective Auto state of a scope.
    pub fn state(&self, scope: &Scope) -> AutoState {
        match (scope, self.scope_toggle(scope)) {
            (_, false) => AutoState::Off,
            (Scope::Project { .. }, true) if !self.allow_project_auto => AutoState::ProjectAutoNotAllowed,
            (_, true) => AutoState::On,
        }
    }

    /// Whether a HUD control is available on `page` (M4, B5).
    pub fn hud_action(&self, page: &PageKind, action: HudAction) -> Result<(), ActionLocked> {
        let Some(scope) = page.scope() else {
            return Err(match action {
                HudAction::ToggleAuto => ActionLocked::NoScopeOnThisPage,
                _ => ActionLocked::NoComposerOnThisPage,
            });
        };
        match action {
            HudAction::ToggleAuto => Ok(()),
            _ if !page.has_composer_target() => Err(ActionLocked::NoComposerOnThisPage),
            HudAction::Handoff => Ok(()),
            HudAction::Continue | HudAction::CheckHerdr | HudAction::LlmJudge => match self.state(&scope) {
                AutoState::On => Err(ActionLocked::AutoIsOn),
                AutoState::Off | AutoState::ProjectAutoNotAllowed => Ok(()),
            },
        }
    }
}

/// Every reason an automatic wake or progress message is not sent (M7). Displayable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, ReadJson, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum WakeWithheld {
    /// The scope is not bound to a Herdr workspace.
    NotBound,
    /// A Project is bound but no conversation of it is open to receive messages (B3).
    NoActiveConversation,
    /// Auto is off for this scope (M1).
    AutoOff,
    /// The Project's Auto toggle is on but "allow Project Auto" is off in Options (M2).
    ProjectAutoNotAllowed,
    /// A handoff is moving this conversation; its auto-wake is paused (X1).
    HandoffInProgress,
    /// Nothing changed in the workspace since the last message (M7).
    NoRealStateChange,
    /// An earlier message was submitted but is not yet confirmed on the page (M7).
    UnconfirmedDelivery,
    /// The page is still generating a reply (M7).
    PageGenerating,
    /// The page shows a permission card waiting for the user's answer (an agent asks to
    /// run a tool): nothing is typed until it is answered.
    PermissionCard,
    /// The composer holds text the user typed and has not sent.
    HumanDraft,
    /// The page has no usable composer (closed tab, not loaded, or not a conversation).
    NoComposer,
    /// A fact the page needs (composer, its root, Send, Stop, the turns' roles)
    /// is missing or ambiguous there: nothing is typed (fail closed); the HUD view's
    /// `unresolved` names the fact.
    #[serde(alias = "unknown_layout")]
    FactUnresolved,
    /// The last send failed; it is retried shortly.
    DeliveryRetryPending,
    /// Sending failed several times in a row; a reload of the page retries.
    DeliveryFailedRepeatedly,
    /// The chat's newest human turn carried several Apps: nothing is typed until a newer
    /// one carries exactly one.
    AppAmbiguous,
    /// The App could not be attached: trusted key input needs the optional `debugger`
    /// permission (options page), and editor insertion did not open the picker.
    AppNoPermission,
    /// The App could not be attached: typing `@<keyword>` opened no picker.
    AppPickerNotOpened,
    /// The App could not be attached: the picker listed no option for it.
    AppOptionMissing,
    /// The App could not be attached: the composer showed no pill of it after choosing.
    AppPillNotReadBack,
    /// The App could not be attached (the page named no known detail).
    AppNotAttached,
    /// ChatGPT rate-limits the account (a 429 or its notice): every automatic message
    /// waits until the cooldown ends (`crate::request_pacer`), then goes.
    RateLimited,
}

impl WakeWithheld {
    /// Whether the reason goes away by itself when the page settles down (the pending wake
    /// is kept and sent then), as opposed to needing a user decision.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            WakeWithheld::HandoffInProgress
                | WakeWithheld::UnconfirmedDelivery
                | WakeWithheld::PageGenerating
                | WakeWithheld::PermissionCard
                | WakeWithheld::HumanDraft
                | WakeWithheld::NoComposer
                | WakeWithheld::DeliveryRetryPending
                | WakeWithheld::RateLimited
        )
    }
}

/// Everything [`wake_gate`] looks at, as plain facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WakeFacts {
    /// The scope is bound to a workspace.
    pub bound: bool,
    /// The scope has a conversation to deliver to (always true for conversation scopes).
    pub has_delivery_target: bool,
    /// The scope's effective Auto state.
    pub auto: AutoState,
    /// A handoff of this conversation is in flight.
    pub handoff_in_progress: bool,
    /// There is a real, not yet delivered state change (a settle or a new summary).
    pub real_state_change: bool,
    /// A previous message is submitted but not confirmed.
    pub unconfirmed_delivery: bool,
    /// The page is generating.
    pub page_generating: bool,
    /// The page shows a permission card waiting for the user's answer.
    pub permission_card: bool,
    /// The composer holds unsent human text.
    pub human_draft: bool,
    /// The composer exists and can take a message.
    pub composer_present: bool,
    /// Every fact the page needs resolves to exactly one element (`page_facts.unresolved`
    /// is null).
    pub facts_resolved: bool,
    /// The chat's App cannot ride on a message now (an `app_*` reason).
    pub app_held: Option<WakeWithheld>,
    /// The target page's account is in a rate-limit cooldown (`crate::request_pacer`).
    pub rate_limited: bool,
}

/// The M7 gate: `Ok(())` when an automatic message may be submitted now, else the first
/// reason in a fixed order (scope facts before page facts, so the HUD shows the reason the
/// user must act on first).
pub fn wake_gate(facts: &WakeFacts) -> Result<(), WakeWithheld> {
    let checks = [
        (!facts.bound, WakeWithheld::NotBound),
        (!facts.has_delivery_target, WakeWithheld::NoActiveConversation),
        (facts.auto == AutoState::Off, WakeWithheld::AutoOff),
        (facts.auto == AutoState::ProjectAutoNotAllowed, WakeWithheld::ProjectAutoNotAllowed),
        (facts.handoff_in_progress, WakeWithheld::HandoffInProgress),
        // Never a message without the chat's App: named before whether anything is pending.
        (facts.app_held.is_some(), facts.app_held.unwrap_or(WakeWithheld::AppNotAttached)),
        // During a rate-limit cooldown nothing automatic is typed (issue 26, H7).
        (facts.rate_limited, WakeWithheld::RateLimited),
        (!facts.real_state_change, WakeWithheld::NoRealStateChange),
        (facts.unconfirmed_delivery, WakeWithheld::UnconfirmedDelivery),
        (facts.page_generating, WakeWithheld::PageGenerating),
        (facts.permission_card, WakeWithheld::PermissionCard),
        (facts.human_draft, WakeWithheld::HumanDraft),
        (!facts.composer_present, WakeWithheld::NoComposer),
        (!facts.facts_resolved, WakeWithheld::FactUnresolved),
    ];
    match checks.iter().find(|(refused, _)| *refused) {
        Some((_, reason)) => Err(*reason),
        None => Ok(()),
    }
}

// Readers and writers of the persisted shapes (crate::json_read; the same shape serde writes).
