//! What a page or panel port may ask of the continuity machine, and who may ask it.
//!
//! Purpose: [`PortCommand`] is a continuity command as `ext-shell` parsed it from a port
//! message; [`Worker`](super::Worker) turns it into the [`ContinuityInput`]s it stands for,
//! for the tab of the port that sent it.
//!
//! Invariants: a command needs the tab of its port (a panel names the tab itself only in
//! `bind`); the HUD's approval card, recovery and health facts, the user's own Stop, thread
//! facts, cards and probe answers are a page's, never a panel's; binding (`bind`, `unbind`,
//! `panel_hello`, `panel_refresh`) is the panel's, never a page's (O1). Anything else is
//! refused, and the refusal says which kind of port sent what. A `companion_call` is an
//! extension page's only, for a method on [`COMPANION_CALLS`] named for that page (the side
//! panel's reads, the options page's storage limits); `companion_watch` is an extension
//! page's only ([`companion_call`], [`companion_watch`]).
//!
//! Driver contract: none of its own — [`commands_for`] is a pure function the worker calls.

use continuity_protocol::Method;
use serde_json::Value;

use crate::binding::{CatalogWorkspace, TabId};
use crate::continuity::{BridgeDecision, ContinuityInput, DeliveryOutcome, JournalOpt, PageRecoveryReport, ProbeAnswer};
use crate::request_pacer::CooldownSource;

/// A continuity command from a page or panel port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortCommand {
    /// `delivery_report`.
    DeliveryReport {
        /// The delivery id.
        id: String,
        /// What the adapter did.
        outcome: DeliveryOutcome,
    },
    /// A continuity HUD button: `toggle_auto`, `continue`, `check_herdr` (`llm_judge`
    /// carries the page's turn; `bridge_send` is a `turn_ended` with `pressed: true`;
    /// `bridge_prompt` asks the runtime's `bridge.prompt` for the composer).
    HudAction(&'static str),
    /// `bridge_decide {batch_id, call, decision}`: Run / Skip on the HUD's approval card
    /// (the content script sends it for a trusted click only).
    BridgeDecide {
        /// The batch.
        batch_id: String,
        /// 1-based position of the call.
        call: u32,
        /// Run or skip.
        decision: BridgeDecision,
    },
    /// `panel_hello {tab_id}`.
    PanelHello {
        /// The tab to show; `None` = the last active chat tab.
        tab_id: Option<u32>,
    },
    /// `panel_refresh`.
    PanelRefresh,
    /// `queue_add {text}`: the Queue button or its shortcut with the composer's text.
    QueueAdd {
        /// The composer's text (may be empty: retry an undelivered batch); its start when
        /// `whole_chars` is set.
        text: String,
        /// `whole_chars`: the composer text's whole length in characters, sent with its
        /// cut start when it is longer than a queue can hold (the page message stays under
        /// its cap, and the refusal names the real length).
        whole_chars: Option<usize>,
    },
    /// `queue_clear {question}`: the user confirmed clearing the conversation's queue.
    QueueClear {
        /// The `_locales` key of the question the user confirmed (the view's `clear` key
        /// when the page asked); `None` from a page that sends none (an older content script).
        question: Option<String>,
    },
    /// `action` `llm_judge {user_text, assistant_text}`: the HUD judge button with the
    /// page's last turn.
    LlmJudge {
        /// The last user turn (marker lines removed).
        user_text: String,
        /// The last reply.
        assistant_text: String,
    },
    /// `action` `goal_set {text}`: the HUD's Goal with the text typed in our UI (`""` clears).
    GoalSet {
        /// The goal.
        text: String,
    },
    /// `turn_ended {user_text, assistant_text, user_marker}`: a reply ended.
    TurnEnded {
        /// The last user turn (marker lines removed).
        user_text: String,
        /// The reply.
        assistant_text: String,
        /// The marker id in that user turn, if it was a message of ours.
        user_marker: Option<String>,
        /// The reply's message id, when the page shows one.
        message_id: Option<String>,
        /// The user turn's message id, when the page shows one.
        user_message_id: Option<String>,
        /// `pressed: true`: the HUD's Send tool results sent the turn again.
        pressed: bool,
        /// `user_stopped: true`: the user pressed the page's Stop on this reply.
        user_stopped: bool,
    },
    /// `bind {tab_id, workspace_id, label}`.
    Bind {
        /// The tab.
        tab_id: u32,
        /// The workspace.
        workspace: CatalogWorkspace,
    },
    /// `unbind {scope_key}`.
    Unbind {
        /// The binding's scope key.
        scope_key: String,
    },
    /// `recovery_facts {…}`: the page's last assistant message and thread error.
    RecoveryFacts(PageRecoveryReport),
    /// `health_sample {page_load, callbacks, drift_ms, long_task_ms, long_tasks, heap_used?,
    /// heap_limit?}`: what the page's meters counted since the last sample (H1).
    HealthSample {
        /// The page load that counted.
        page_load: String,
        /// The counts, each within `crate::limits::MAX_HEALTH_COUNT`.
        sample: crate::health::HealthSample,
    },
    /// `user_stop {page_load}`: the user pressed the page's Stop (a trusted activation the
    /// content script did not make); the streaming reply is never continued automatically.
    UserStop {
        /// The page load that saw it.
        page_load: String,
    },
    /// `thread_facts {turns, latin_chars, cjk_chars, highest_turn}`: the visible thread,
    /// for its context pressure (R1).
    ThreadFacts(crate::context_pressure::VisibleThread),
    /// `permission_cards {page_load, url, cards}`: the cards a page shows, read and capped by
    /// `crate::permission_card::PageCards::read` (refused whole otherwise).
    PermissionCards(crate::permission_card::PageCards),
    /// `card_result {key, outcome: "clicked" | "card_gone"}`: what a `card_allow` did.
    CardResult {
        /// The card's key.
        key: String,
        /// `clicked`.
        clicked: bool,
    },
    /// `snapshot_result {page_load, node_id, role, text_len, finished, update_time} |
    /// {page_load, failure}`: a snapshot probe's summary (never the snapshot).
    SnapshotResult {
        /// The page load that answered.
        page_load: String,
        /// The summary.
        answer: ProbeAnswer,
        /// With a failure `http_429`: the response's `Retry-After` in ms, when it had one.
        retry_after_ms: Option<u64>,
    },
    /// `rate_limited {page_load, source, retry_after_ms}`: the page saw its account
    /// rate-limited (a 429 in Resource Timing, ChatGPT's notice).
    RateLimited {
        /// The page load that saw it.
        page_load: String,
        /// Where.
        source: CooldownSource,
        /// `Retry-After` in ms, when known.
        retry_after_ms: Option<u64>,
    },
    /// `companion_call {id, method, params}`: an extension page's read of the companion
    /// through the worker's native port (checked by [`companion_call`]).
    CompanionCall {
        /// The page's request id (at most `MAX_ID_CHARS`), named in the answer.
        id: String,
        /// The method as sent (not yet checked).
        method: String,
        /// The params as sent (not yet checked; `None` when absent).
        params: Option<Value>,
    },
    /// `companion_watch`: the side panel's live tree asks for the Herdr stream's events.
    CompanionWatch,
    /// `queue_aside_remove {id, question}`: the side panel's removal of a queue record kept
    /// aside, naming the question the user confirmed (`super::aside`).
    QueueAsideRemove {
        /// The record's id (`queue::AsideRecord::id`).
        id: String,
        /// The `_locales` key of the question confirmed (`None`: none was).
        question: Option<String>,
    },
}

impl PortCommand {
    /// The message's `type` on the wire (named in a refusal).
    pub fn wire_name(&self) -> &'static str {
        match self {
            PortCommand::DeliveryReport { .. } => "delivery_report",
            PortCommand::HudAction(_) | PortCommand::LlmJudge { .. } | PortCommand::GoalSet { .. } => "action",
            PortCommand::BridgeDecide { .. } => "bridge_decide",
            PortCommand::PanelHello { .. } => "panel_hello",
            PortCommand::PanelRefresh => "panel_refresh",
            PortCommand::QueueAdd { .. } => "queue_add",
            PortCommand::QueueClear { .. } => "queue_clear",
            PortCommand::TurnEnded { .. } => "turn_ended",
            PortCommand::Bind { .. } => "bind",
            PortCommand::Unbind { .. } => "unbind",
            PortCommand::RecoveryFacts(_) => "recovery_facts",
            PortCommand::HealthSample { .. } => "health_sample",
            PortCommand::UserStop { .. } => "user_stop",
            PortCommand::ThreadFacts(_) => "thread_facts",
            PortCommand::PermissionCards(_) => "permission_cards",
            PortCommand::CardResult { .. } => "card_result",
            PortCommand::SnapshotResult { .. } => "snapshot_result",
            PortCommand::RateLimited { .. } => "rate_limited",
            PortCommand::CompanionCall { .. } => "companion_call",
            PortCommand::CompanionWatch => "companion_watch",
            PortCommand::QueueAsideRemove { .. } => "queue_aside_remove",
        }
    }
}

/// Who sent a command: the tab of the port (`None` for a panel that has none) and whether
/// the port is a side panel's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sender {
    /// `port.sender.tab.id`.
    pub tab: Option<TabId>,
    /// A side panel's port.
    pub panel: bool,
}

/// The continuity inputs `command` stands for, in order; `Err` names what the sender may
/// not send. A `panel_hello` is answered by the worker itself (it also moves the panel).
pub fn commands_for(command: PortCommand, sender: Sender) -> Result<Vec<ContinuityInput>, String> {
    let refused = |name: &str| {
        let kind = if sender.panel { "a side panel" } else { "a page" };
        format!("herdr-continuity: {kind} port may not send `{name}`; the message is dropped")
    };
    let name = command.wire_name();
    let panel = sender.panel;
    let input = match (command, sender.tab) {
        (PortCommand::DeliveryReport { id, outcome }, Some(tab)) => ContinuityInput::DeliveryReport { tab, id, outcome },
        (PortCommand::HudAction(action), Some(tab)) => match action {
            "toggle_auto" => ContinuityInput::ToggleAuto { tab },
            "continue" => ContinuityInput::Continue { tab },
            "handoff" => ContinuityInput::Handoff { tab },
            "handoff_resume" => ContinuityInput::HandoffResume { tab },
            "bridge_prompt" => ContinuityInput::BridgePrompt { tab },
            "forget_app" => ContinuityInput::ForgetApp { tab },
            "journal_opt_in" => ContinuityInput::JournalOpt(JournalOpt { tab, on: true }),
            "journal_opt_out" => ContinuityInput::JournalOpt(JournalOpt { tab, on: false }),
            _ => ContinuityInput::CheckHerdr { tab },
        },
        (PortCommand::LlmJudge { user_text, assistant_text }, Some(tab)) => ContinuityInput::LlmJudge { tab, user_text, assistant_text },
        (PortCommand::GoalSet { text }, Some(tab)) => ContinuityInput::GoalSet { tab, text },
        (
            PortCommand::TurnEnded { user_text, assistant_text, user_marker, message_id, user_message_id, pressed, user_stopped },
            Some(tab),
        ) => ContinuityInput::TurnEnded { tab, user_text, assistant_text, user_marker, message_id, user_message_id, pressed, user_stopped },
        // The HUD's approval card is a page's, never the panel's.
        (PortCommand::BridgeDecide { batch_id, call, decision }, Some(tab)) if !panel => {
            ContinuityInput::BridgeDecide { tab, batch_id, call, decision }
        }
        (PortCommand::QueueAdd { text, whole_chars }, Some(tab)) => ContinuityInput::QueueAdd { tab, text, whole_chars },
        (PortCommand::QueueClear { question }, Some(tab)) => ContinuityInput::QueueClear { tab, question },
        (PortCommand::RecoveryFacts(facts), Some(tab)) if !panel => ContinuityInput::RecoveryFacts { tab, facts },
        (PortCommand::HealthSample { page_load, sample }, Some(tab)) if !panel => ContinuityInput::HealthSample { tab, page_load, sample },
        // The user's own Stop is a page's, never the panel's.
        (PortCommand::UserStop { page_load }, Some(tab)) if !panel => ContinuityInput::UserStop { tab, page_load },
        (PortCommand::ThreadFacts(thread), Some(tab)) if !panel => ContinuityInput::ThreadFacts { tab, thread },
        (PortCommand::SnapshotResult { page_load, answer, retry_after_ms }, Some(tab)) if !panel => {
            // A 429 with `Retry-After`: the account's cooldown first, then the answer.
            let is_429 = matches!(&answer, ProbeAnswer::Failed(why) if why == "http_429");
            let mut inputs = Vec::new();
            if let (true, Some(ms)) = (is_429, retry_after_ms) {
                let source = CooldownSource::RetryAfter;
                inputs.push(ContinuityInput::RateLimited { tab, page_load: page_load.clone(), source, retry_after_ms: Some(ms) });
            }
            inputs.push(ContinuityInput::SnapshotResult { tab, page_load, answer });
            return Ok(inputs);
        }
        (PortCommand::RateLimited { page_load, source, retry_after_ms }, Some(tab)) if !panel => {
            ContinuityInput::RateLimited { tab, page_load, source, retry_after_ms }
        }
        (PortCommand::CardResult { key, clicked }, Some(tab)) if !panel => ContinuityInput::CardResult { tab, key, clicked },
        (PortCommand::PermissionCards(cards), Some(tab)) if !panel => ContinuityInput::PermissionCards { tab, cards },
        // Binding is the panel's (O1): a content script never sends these.
        (PortCommand::PanelHello { .. } | PortCommand::PanelRefresh, _) if panel => ContinuityInput::RefreshCatalog,
        (PortCommand::Bind { tab_id, workspace }, _) if panel => ContinuityInput::Bind { tab: tab_id, workspace },
        (PortCommand::Unbind { scope_key }, _) if panel => ContinuityInput::Unbind { scope_key },
        _ => return Err(refused(name)),
    };
    Ok(vec![input])
}

/// The side panel's page (`chrome-extension://<id>/sidepanel.html`).
pub const SIDE_PANEL_PAGE: &str = "/sidepanel.html";
/// The options page (`chrome-extension://<id>/options.html`).
pub const OPTIONS_PAGE: &str = "/options.html";

/// Which of our extension pages opened a `panel` port, by its sender URL's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtensionPage {
    /// The side panel (Control Center).
    SidePanel,
    /// The options page.
    Options,
    /// Another URL (or a content script's port): no companion call.
    Other,
}

impl ExtensionPage {
    /// The page of a port's sender URL: an extension URL's path (its id is the sender
    /// check's, `crate::limits::check_sender`), query and fragment ignored.
    pub fn of_url(url: &str) -> Self {
        let rest = url.strip_prefix("chrome-extension://").unwrap_or("");
        let path = rest.find('/').and_then(|at| rest.get(at..)).unwrap_or("");
        let path = path.split(['?', '#']).next().unwrap_or(path);
        match path {
            SIDE_PANEL_PAGE => ExtensionPage::SidePanel,
            OPTIONS_PAGE => ExtensionPage::Options,
            _ => ExtensionPage::Other,
        }
    }
}

/// The companion methods an extension page may call through the worker, and which page:
/// the side panel's live tree reads Herdr (workspaces, panes, agents, a pane's last lines)
/// and its tools section reads the audit log; the options page reads and sets the storage
/// limits (the companion checks `retention.set`'s bounds again). Nothing else — no task,
/// inbox, journal, tool or bridge method — is reachable from a page.
pub const COMPANION_CALLS: &[(Method, ExtensionPage)] = &[
    (Method::HerdrWorkspaces, ExtensionPage::SidePanel),
    (Method::HerdrPanes, ExtensionPage::SidePanel),
    (Method::HerdrAgents, ExtensionPage::SidePanel),
    (Method::HerdrPaneRead, ExtensionPage::SidePanel),
    (Method::ToolsAudit, ExtensionPage::SidePanel),
    (Method::RetentionGet, ExtensionPage::Options),
    (Method::RetentionSet, ExtensionPage::Options),
];

/// Why a `companion_call` got no answer of the companion (`companion_answer.error.code`;
/// the page shows the locale text `companionCall_<code>` with `detail`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallFailure {
    /// The method is unknown, or not one this page may call.
    NotAllowed,
    /// The request id or the params are missing, too long or of the wrong shape.
    BadRequest,
    /// The port already has `MAX_COMPANION_CALLS_PER_PORT` calls waiting.
    TooMany,
    /// The worker is not connected to the companion (or lost it while the call waited).
    NotConnected,
    /// The companion did not answer within `COMPANION_CALL_TIMEOUT_MS`.
    TimedOut,
    /// The companion answered an error (its code and message are the detail).
    Companion,
}

impl CallFailure {
    /// Every failure, in the order `contracts.js` lists them.
    pub const ALL: [CallFailure; 6] = [
        CallFailure::NotAllowed,
        CallFailure::BadRequest,
        CallFailure::TooMany,
        CallFailure::NotConnected,
        CallFailure::TimedOut,
        CallFailure::Companion,
    ];

    /// The code on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            CallFailure::NotAllowed => "not_allowed",
            CallFailure::BadRequest => "bad_request",
            CallFailure::TooMany => "too_many",
            CallFailure::NotConnected => "not_connected",
            CallFailure::TimedOut => "timed_out",
            CallFailure::Companion => "companion",
        }
    }
}

/// The method a `companion_call` from `sender` (a port of `page`) may make, or why not:
/// only an extension page's port, only a known method listed for that page in
/// [`COMPANION_CALLS`], only an id of at most `MAX_ID_CHARS` and params that pass
/// [`crate::limits::check_companion_params`]. The detail names what was refused.
pub fn companion_call(
    id: &str,
    method: &str,
    params: Option<&Value>,
    sender: Sender,
    page: ExtensionPage,
) -> Result<Method, (CallFailure, String)> {
    let method_name = crate::limits::clip(method.to_owned(), crate::limits::MAX_DIAGNOSTIC_NAME_CHARS);
    let not_allowed = || (CallFailure::NotAllowed, method_name.clone());
    if !sender.panel {
        return Err(not_allowed());
    }
    if id.is_empty() || !crate::limits::within(id, crate::limits::MAX_ID_CHARS) {
        return Err((CallFailure::BadRequest, "id".to_owned()));
    }
    // Looked up in the allowlist by its wire name (an unknown method is in no entry): a full
    // `Method::parse` would add every method name to the wasm for seven.
    let method = COMPANION_CALLS.iter().find(|(allowed, on)| allowed.as_str() == method && *on == page).map(|(allowed, _)| *allowed);
    let method = method.ok_or_else(not_allowed)?;
    crate::limits::check_companion_params(params).map_err(|why| (CallFailure::BadRequest, why))?;
    Ok(method)
}

/// Whether `sender` (a port of `page`) may watch the companion's state: our side panel and
/// options page (the Herdr stream's events go to the side panel only, `worker::calls`).
pub fn companion_watch(sender: Sender, page: ExtensionPage) -> bool {
    sender.panel && page != ExtensionPage::Other
}
