//! The continuity machine's inputs and outputs: what the shell feeds in (page facts,
//! stream events, runtime answers, HUD and panel commands) and what it must carry out
//! (runtime requests, deliveries, notices, views, persistence). Plain serde data; the
//! shell translates the wire (docs/PROTOCOL.md) into these and back.
//!
//! Invariant: nothing here decides anything; every field is a fact or a command.

use super::*;
use crate::json_read::{ReadJson, WriteJson};

/// What the content script reports about its page (facts only). Its `Default` is a page
/// that said nothing: no composer, and `unresolved` [`Unresolved::no_profile`] (nothing
/// is typed into a tab without a report).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PageReport {
    /// `location.href`.
    pub url: String,
    /// A usable composer exists.
    pub composer: bool,
    /// The composer holds text the user typed.
    pub draft: bool,
    /// A reply is streaming.
    pub generating: bool,
    /// A tool permission card waits for the user.
    pub permission_card: bool,
    /// Number of user turns.
    pub user_turns: u32,
    /// `data-message-id` of the last user turn.
    pub last_user_turn_id: Option<String>,
    /// The newest user turn without a marker of ours (the human's): its page id, else `text:` and a hash of its text; `None` when the page shows none.
    #[serde(default)]
    pub last_human_turn_id: Option<String>,
    /// Delivery ids of the marker lines in the last user turns.
    pub markers: Vec<String>,
    /// A delivery the page is still carrying out.
    pub delivering: Option<String>,
    /// The diagnostic label of the page's layout (`chatgpt.classic`, …, `mixed`, or `None`): shown, never a gate.
    #[serde(default)]
    pub generation: Option<String>,
    /// The first fact the page needs that does not resolve to exactly one element (`None`: every needed fact resolves); while it is `Some`, nothing is typed or clicked there (fail closed, naming the fact).
    #[serde(default)]
    pub unresolved: Option<Unresolved>,
    /// The delivery id whose marker line is in the composer: text the extension typed and did not send (not a human draft).
    #[serde(default)]
    pub composer_marker: Option<String>,
    /// A random id drawn when the content script started: a reload reports a new one.
    #[serde(default)]
    pub page_load: String,
    /// The App pills of the newest human (unmarked) user turn, the one `last_human_turn_id` names (at most [`crate::limits::MAX_APP_MENTIONS`]).
    #[serde(default)]
    pub human_apps: Vec<AppMention>,
    /// The site account the page is signed in to (`page_facts.account`, checked by
    /// [`crate::request_pacer::valid_account`]); `None`: the account `default`. One request
    /// pacer per account ([`crate::request_pacer`]).
    #[serde(default)]
    pub account: Option<String>,
}

impl Default for PageReport {
    fn default() -> Self {
        PageReport {
            url: String::new(),
            composer: false,
            draft: false,
            generating: false,
            permission_card: false,
            user_turns: 0,
            last_user_turn_id: None,
            last_human_turn_id: None,
            markers: Vec::new(),
            delivering: None,
            generation: None,
            unresolved: Some(Unresolved::no_profile()),
            composer_marker: None,
            page_load: String::new(),
            human_apps: Vec::new(),
            account: None,
        }
    }
}

/// Why the page could not attach a delivery's App (`not_submitted` with reason
/// `app_not_attached`, its `detail`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum AppAttachFailure {
    /// Trusted key input needs the optional `debugger` permission, and editor insertion did not open the picker either.
    NoPermission,
    /// Typing `@<keyword>` opened no App picker.
    PickerNotOpened,
    /// The picker listed no option for the App's keyword.
    OptionMissing,
    /// An option was chosen but the composer shows no pill of the App.
    PillNotReadBack,
    /// A detail this release does not know (or none): still not attached, still withheld.
    Unknown,
}

impl AppAttachFailure {
    /// The `detail` of a `not_submitted` report; any other text (or none) is `Unknown`.
    pub fn parse(detail: Option<&str>) -> Self {
        match detail {
            Some("no_permission") => Self::NoPermission,
            Some("picker_not_opened") => Self::PickerNotOpened,
            Some("option_missing") => Self::OptionMissing,
            Some("pill_not_read_back") => Self::PillNotReadBack,
            _ => Self::Unknown,
        }
    }
}

/// What the page adapter did with a `deliver` (docs/PROTOCOL.md, "One delivery path").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum DeliveryOutcome {
    /// Send was clicked and the composer no longer holds the text.
    Submitted,
    /// Nothing was sent; any text typed was removed again.
    NotSubmitted {
        /// `no_composer`, `human_draft`, `insert_failed`, `send_button_missing`,
        /// `fact_unresolved` (`unknown_layout` from an older page), `busy`.
        reason: String,
    },
    /// Send was clicked, but whether the page took the message is not known.
    Unconfirmed,
    /// Nothing was sent because the delivery's App could not be attached (`not_submitted`
    /// with reason `app_not_attached`); the page removed everything it typed, the half
    /// mention too. The delivery is held, never sent without its App.
    AppNotAttached {
        /// Why.
        detail: AppAttachFailure,
    },
}

/// One terminal task of the parent inbox, reduced to what a wake shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct InboxTask {
    /// Task id (acknowledged after the wake is confirmed).
    pub task_id: String,
    /// `completed | blocked | failed`.
    pub state: String,
    /// The pane that ran it.
    pub pane_id: String,
    /// The first characters of its prompt.
    pub prompt_preview: String,
    /// The result, if the runtime gave one: a one-line status (first line), then the
    /// pane's output tail (further lines; the wake shows its last ≤
    /// [`TASK_RESULT_MAX_CHARS`] characters, whole lines).
    pub result: Option<String>,
    /// Parent guidance (I5) the runtime attached, if any: advice, never evidence.
    #[serde(default)]
    pub guidance: Option<TaskGuidance>,
}

/// HUD task counters of one session ref (I4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct TaskCounts {
    /// Dispatched, not terminal.
    pub running: u64,
    /// Terminal, not acknowledged.
    pub unacked: u64,
    /// Terminal and acknowledged.
    pub acked: u64,
}

/// One live pane, as `herdr.panes` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PaneInfo {
    /// Pane id.
    pub pane_id: String,
    /// Agent name, if any.
    pub agent: Option<String>,
    /// Agent status (`working`, `idle`, …).
    pub agent_status: String,
}

/// One bound chat as `chats.report` tells the runtime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChatFact {
    /// The chat's `browser_session_ref`.
    pub session_ref: String,
    /// A page of the chat is generating a reply right now.
    pub generating: bool,
}

/// A request to the runtime (docs/PROTOCOL.md); the shell adds the wire id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum RuntimeCall {
    /// `events.subscribe {after_seq, log_id}`.
    Subscribe {
        /// Resume point; `None` subscribes from now.
        after_seq: Option<u64>,
        /// The log the resume point belongs to.
        #[serde(default)]
        log_id: Option<String>,
    },
    /// `herdr.workspaces {}`.
    Workspaces,
    /// `inbox.pending {browser_session_ref}`.
    InboxPending {
        /// The scope's ref.
        session_ref: String,
    },
    /// `inbox.ack {browser_session_ref, task_ids}`.
    InboxAck {
        /// The scope's ref.
        session_ref: String,
        /// Tasks carried by a confirmed wake.
        task_ids: Vec<String>,
    },
    /// `inbox.counts {browser_session_ref}`.
    InboxCounts {
        /// The scope's ref.
        session_ref: String,
    },
    /// `herdr.panes {workspace_id}`.
    Panes {
        /// The workspace.
        workspace_id: String,
    },
    /// `herdr.pane_read {pane_id, lines}`.
    PaneRead {
        /// The pane.
        pane_id: String,
        /// How many lines.
        lines: u32,
    },
    /// `goal.set {browser_session_ref, goal}` (Goal mode, J7; `""` clears).
    GoalSet {
        /// The scope's ref.
        session_ref: String,
        /// The goal.
        goal: String,
    },
    /// `goal.evidence {browser_session_ref, workspace_id}`.
    GoalEvidence {
        /// The scope's ref.
        session_ref: String,
        /// The bound workspace.
        workspace_id: String,
    },
    /// `judge.turn_end {user_text, assistant_text, conversation}`.
    JudgeTurnEnd {
        /// The user turn the reply answers (our marker lines removed by the page).
        user_text: String,
        /// The reply.
        assistant_text: String,
        /// The chat's `browser_session_ref`.
        conversation: String,
    },
    /// `bridge.reply {conversation, message_id, text, finished: true, workspace_id, auto,
    /// human_turn}`.
    BridgeReply {
        /// `<site>:<conversation id>`.
        conversation: String,
        /// The reply's id on the page (`""` when it shows none).
        message_id: String,
        /// The reply's text.
        text: String,
        /// The workspace the chat is bound to: every call of the chat is confined to it.
        workspace_id: String,
        /// The chat's Auto: only then may read-only calls run without a click.
        auto: bool,
        /// The chat's newest human user turn (`""` when unknown): rounds count per turn.
        human_turn: String,
    },
    /// `bridge.decide {conversation, batch_id, call, decision}`: the user's Run / Skip.
    BridgeDecide {
        /// `<site>:<conversation id>`.
        conversation: String,
        /// The batch (`bridge:<16 hex>`).
        batch_id: String,
        /// 1-based position of the call (the wire's `call`).
        index: u32,
        /// Run or skip.
        decision: super::bridge::BridgeDecision,
    },
    /// `bridge.prompt {browser_session_ref}`: the JSON bridge's protocol prompt for a chat.
    BridgePrompt {
        /// The chat's ref.
        session_ref: String,
    },
    /// `bridge.delivered {delivery_id}`: the ledger confirmed a results message in its chat
    /// (the runtime answers every replay of its reply `delivered`).
    BridgeDelivered {
        /// The results' id (`bridge:<hex>`).
        delivery_id: String,
    },
    /// `continuity.append` of one journal turn (C1).
    JournalAppend(super::JournalEntry),
    /// `continuity.resolve {conversation_id}`: a handoff confirms its chain live (C2).
    ContinuityResolve {
        /// The source conversation.
        conversation_id: String,
    },
    /// `chats.report {reporter, chats}`: the bound chats with a tab open and whether each
    /// generates a reply now (evidence for attributing a ref-less `herdr_prompt`).
    ChatsReport {
        /// This extension's instance (the ledger's epoch): the runtime replaces only its
        /// own previous report.
        reporter: String,
        /// One per bound chat, by ref.
        chats: Vec<ChatFact>,
    },
    /// `profiles.get {}`: the companion home's site profile files (after every `hello`).
    ProfilesGet,
    /// `herdr_mcp.browser_handoff.prepare` (X4, X9; read-only).
    HandoffPrepare(super::PrepareCall),
}

/// A `judge_verdict` answer, reduced to what the HUD and semantic Auto use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JudgeAnswer {
    /// The verdict.
    pub verdict: crate::semantic_auto::Verdict,
    /// `jev | llm | script`.
    pub source: String,
    /// Why, in one line (bounded by the shell).
    pub reason: String,
    /// The goal-mode priors a decision route gave, as whole percents (advice only, J7).
    pub priors: Vec<(String, u8)>,
}

/// A successful answer, parsed by the shell according to the call it answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum RuntimeAnswer {
    /// `events_subscribed`.
    Subscribed,
    /// `profiles`: the companion's profile files, each read or refused.
    Profiles(crate::sites::overrides::CompanionFiles),
    /// `herdr_workspaces`.
    Workspaces {
        /// The live catalog.
        workspaces: Vec<CatalogWorkspace>,
    },
    /// `inbox_pending`.
    InboxPending {
        /// Terminal, unacknowledged tasks, oldest first.
        tasks: Vec<InboxTask>,
        /// More unacknowledged terminal items exist than this answer carries: read again
        /// once these are delivered and acknowledged.
        #[serde(default)]
        more: bool,
    },
    /// `inbox_acked` / `inbox_counts`.
    Counts {
        /// The counters after the call.
        counts: TaskCounts,
    },
    /// `herdr_panes`.
    Panes {
        /// The panes.
        panes: Vec<PaneInfo>,
    },
    /// `herdr_pane_read`.
    PaneText {
        /// The pane.
        pane_id: String,
        /// Its tail.
        text: String,
    },
    /// `judge_verdict`.
    Verdict(JudgeAnswer),
    /// `goal_evidence` (J7).
    GoalEvidence(crate::goal_supervisor::Evidence),
    /// `bridge_reply`.
    Bridge {
        /// Its state: results, calls awaiting approval, the round limit, or nothing.
        outcome: super::bridge::BridgeOutcome,
        /// Tool rounds of the chat's human turn (`None` from a runtime without rounds).
        rounds: Option<super::bridge::BridgeRounds>,
    },
    /// `bridge_decided`.
    BridgeDecided {
        /// How many calls of the batch still wait for a decision.
        pending: u32,
    },
    /// `bridge_prompt`.
    BridgePrompt {
        /// The prompt.
        text: String,
    },
    /// `bridge_delivered`.
    BridgeDelivered,
    /// `continuity_appended`.
    Appended {
        /// The turn's chain.
        continuity_id: String,
    },
    /// `continuity_resolved`.
    Resolved {
        /// The conversation's chain.
        continuity_id: String,
    },
    /// `handoff_prepared`, read and checked by the shell (caps, the message and
    /// `copy_prompt` present).
    Prepared(crate::handoff::Package),
    /// `chats_reported`.
    ChatsReported,
}

/// An error answer (or a request the shell could not send).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallError {
    /// What kind of failure (a runtime code the protocol does not list reads as
    /// [`ErrorCode::Error`]; the message still says what happened).
    pub code: ErrorCode,
    /// What happened and what to do.
    pub message: String,
}

/// Identifies one runtime call made by this machine.
pub type CallId = u64;

/// Facts and commands the shell feeds in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContinuityInput {
    /// The companion link completed `hello`: (re)open the event stream.
    LinkUp,
    /// The companion link went down: requests in flight are lost.
    LinkDown,
    /// The stream's `hello` event.
    StreamHello {
        /// The runtime generation.
        boot_id: String,
        /// The highest seq the runtime had stored when the subscription began: events up to
        /// it are the replay (history), later ones are live.
        #[serde(default)]
        last_seq: Option<u64>,
        /// `hello.agents`: the runtime's agent panes when the subscription began, used to
        /// settle a workspace whose settle fell outside the replay (`SettleTracker`);
        /// `None` when the runtime did not send them.
        #[serde(default)]
        agents: Option<Vec<AgentSnapshot>>,
        /// `hello.log_id`: the identity of the runtime's event log (a new `state.db` has a
        /// new one); `None` from an older runtime.
        #[serde(default)]
        log_id: Option<String>,
        /// `hello.log_reset`: the log is not the one the resume point belonged to (another
        /// `log_id`, or `after_seq` beyond its end): the replay starts at its beginning.
        #[serde(default)]
        log_reset: bool,
    },
    /// `workspace_upsert` / `workspace_removed` of the stream: the catalog changed.
    CatalogChanged {
        /// The event's seq.
        seq: u64,
    },
    /// A stored stream event nothing else uses (`pane_upsert`, unknown names): only its
    /// `seq`, so the tracker notices the end of the replay.
    StreamPosition {
        /// The event's seq.
        seq: u64,
    },
    /// One pane event of the stream.
    StreamEvent(StreamEvent),
    /// `inbox_changed {browser_session_ref, counts}`.
    InboxChanged {
        /// The ref.
        session_ref: String,
        /// New counters.
        counts: TaskCounts,
    },
    /// A page reported facts (on connect and on change).
    PageReported {
        /// Its tab.
        tab: TabId,
        /// The facts.
        report: PageReport,
    },
    /// A page's `recovery_facts`: its last assistant message and thread error (S2, S6).
    RecoveryFacts {
        /// Its tab.
        tab: TabId,
        /// The facts.
        facts: PageRecoveryReport,
    },
    /// A page's `health_sample`: what its meters counted since the last one (H1).
    HealthSample {
        /// Its tab.
        tab: TabId,
        /// The page load that counted.
        page_load: String,
        /// The counts.
        sample: crate::health::HealthSample,
    },
    /// Options page: the stored recovery and health thresholds (`chrome.storage.local`,
    /// [`crate::recovery_config::SETTINGS_KEY`]); `None` when nothing is stored. A record that
    /// does not validate leaves the defaults in force and the HUD names the field.
    RecoverySettings {
        /// The stored record, parsed by the shell (`Err` when its text is not JSON).
        stored: Option<Result<serde_json::Value, ()>>,
    },
    /// A page saw its account rate-limited (`rate_limited`, or a `snapshot_result` failure
    /// `http_429` with its `retry_after_ms`): the account's requests and automatic messages
    /// wait for the cooldown ([`crate::request_pacer`]).
    RateLimited {
        /// Its tab.
        tab: TabId,
        /// The page load that saw it.
        page_load: String,
        /// Where the page saw it.
        source: crate::request_pacer::CooldownSource,
        /// The response's `Retry-After`, in ms, when it had one.
        retry_after_ms: Option<Millis>,
    },
    /// A page's answer to a [`RecoveryCommand::Probe`] (`snapshot_result`).
    SnapshotResult {
        /// Its tab.
        tab: TabId,
        /// The page load that answered.
        page_load: String,
        /// The server's current node, or why it could not be read.
        answer: ProbeAnswer,
    },
    /// A page's `permission_cards` report: the tool-permission cards it shows (M5).
    PermissionCards {
        /// Its tab.
        tab: TabId,
        /// The cards, as [`crate::permission_card::PageCards::read`] accepted them.
        cards: crate::permission_card::PageCards,
    },
    /// A page's answer to a [`ContinuityOutput::CardAllow`] (`card_result`).
    CardResult {
        /// Its tab.
        tab: TabId,
        /// The card's key.
        key: String,
        /// `clicked`; `false`: `card_gone` (the card, or its usable Allow, was not there).
        clicked: bool,
    },
    /// A page's port went away (navigation, close, reload).
    PageGone {
        /// Its tab.
        tab: TabId,
    },
    /// A tab was closed (drops a pending root-page binding).
    TabClosed {
        /// The tab.
        tab: TabId,
    },
    /// The page reported what it did with a `deliver` (`delivery_report`).
    DeliveryReport {
        /// The tab that answered.
        tab: TabId,
        /// The delivery id.
        id: String,
        /// What the adapter did.
        outcome: DeliveryOutcome,
    },
    /// The user chose a workspace for the page of `tab` (side panel).
    Bind {
        /// The tab.
        tab: TabId,
        /// The workspace.
        workspace: CatalogWorkspace,
    },
    /// The user removed a binding (side panel list).
    Unbind {
        /// The scope key of the binding.
        scope_key: String,
    },
    /// The side panel asked to re-read the catalog.
    RefreshCatalog,
    /// HUD: switch Auto of the page's scope.
    ToggleAuto {
        /// The tab.
        tab: TabId,
    },
    /// HUD: send a manual continue.
    Continue {
        /// The tab.
        tab: TabId,
    },
    /// HUD: "Forget App" — the chat's messages go without an App until a newer human turn
    /// carries one.
    ForgetApp {
        /// The tab.
        tab: TabId,
    },
    /// HUD: "Journal this chat" / "Stop journaling this chat" (X3).
    JournalOpt(super::JournalOpt),
    /// HUD: the Handoff button (X1).
    Handoff {
        /// The tab.
        tab: TabId,
    },
    /// HUD: "Resume handoff" (X7).
    HandoffResume {
        /// The tab.
        tab: TabId,
    },
    /// The worker's `chrome.tabs.create` for a [`ContinuityOutput::OpenTab`] answered.
    HandoffTab {
        /// The transfer.
        transfer_id: String,
        /// The new tab, or why none could be opened (browser control unavailable, X8).
        tab: Result<TabId, String>,
    },
    /// HUD: Run / Skip on a call of the JSON bridge's approval card (a trusted click).
    BridgeDecide {
        /// The tab.
        tab: TabId,
        /// The batch the card shows.
        batch_id: String,
        /// 1-based position of the call.
        call: u32,
        /// Run or skip.
        decision: super::bridge::BridgeDecision,
    },
    /// HUD: Insert JSON tool prompt.
    BridgePrompt {
        /// The tab.
        tab: TabId,
    },
    /// HUD: bring live workspace state into the composer.
    CheckHerdr {
        /// The tab.
        tab: TabId,
    },
    /// HUD: ask the turn-end judge about the page's last turn (it does not continue).
    LlmJudge {
        /// The tab.
        tab: TabId,
        /// The last user turn's text, our marker lines removed (bounded by the page).
        user_text: String,
        /// The last reply's text (bounded by the page).
        assistant_text: String,
    },
    /// HUD: set (`""`: clear) the scope's goal (Goal mode, J7); the text typed in our UI.
    GoalSet {
        /// The tab.
        tab: TabId,
        /// The goal.
        text: String,
    },
    /// The page's reply ended (generating went false): the turn, for semantic Auto.
    TurnEnded {
        /// The tab.
        tab: TabId,
        /// The last user turn's text, our marker lines removed (bounded by the page).
        user_text: String,
        /// The reply's text (bounded by the page).
        assistant_text: String,
        /// The marker id in that user turn, when it is a message of ours.
        user_marker: Option<String>,
        /// The reply's message id on the page, when it shows one.
        #[serde(default)]
        message_id: Option<String>,
        /// The user turn's message id on the page, when it shows one.
        #[serde(default)]
        user_message_id: Option<String>,
        /// The HUD's Send tool results sent the last turn again (only the bridge hears it).
        #[serde(default)]
        pressed: bool,
        /// The user pressed the page's Stop on this reply (the Stop pinned to its turn).
        #[serde(default)]
        user_stopped: bool,
    },
    /// `user_stop`: the user's own Stop (trusted, not ours); one of an older page load is dropped.
    UserStop {
        /// The tab.
        tab: TabId,
        /// The page load that saw it.
        page_load: String,
    },
    /// The page's visible thread, for its context pressure (R1): on a new turn count, a reply's end.
    ThreadFacts {
        /// The tab.
        tab: TabId,
        /// What the page shows.
        thread: crate::context_pressure::VisibleThread,
    },
    /// Options page: the stored judge settings (`chrome.storage.local`,
    /// [`crate::semantic_auto::SETTINGS_KEY`]); `None` when nothing is stored. Read here
    /// (validated; a bad value falls back to the default and the HUD says so).
    JudgeSettings {
        /// The stored record, parsed by the shell (`Err` when its text is not JSON).
        stored: Option<Result<serde_json::Value, ()>>,
    },
    /// Options page: "allow Project Auto".
    AllowProjectAuto {
        /// The option's value.
        allowed: bool,
    },
    /// Message language (`chrome.i18n.getUILanguage()`).
    LanguageChanged {
        /// The language.
        language: Language,
    },
    /// `agent_output {pane_id, workspace_id, agent, tail}` of the stream (P4).
    AgentOutput {
        /// The workspace.
        workspace_id: String,
        /// The pane.
        pane_id: String,
        /// The agent, if any.
        agent: Option<String>,
        /// The pane's recent output.
        tail: String,
        /// The event's stream seq.
        seq: u64,
        /// From an earlier runtime start (`stale: true`): ignored (P9).
        stale: bool,
    },
    /// Options page: `progressTickSec` / `progressFallbackSec` (O4; clamped here).
    ProgressSettings {
        /// Check interval in seconds.
        tick_sec: u64,
        /// Quiet time before the fallback status, in seconds.
        fallback_sec: u64,
    },
    /// HUD Queue button or shortcut: queue the composer's text of `tab` (Q1); an empty
    /// text retries an undelivered batch (Q8).
    QueueAdd {
        /// The tab.
        tab: TabId,
        /// The composer's text as the page read it (its start when `whole_chars` is set).
        text: String,
        /// The composer text's whole length in characters when the page sent only its start
        /// (longer than a queue holds): refused with that length, nothing queued (Q6).
        whole_chars: Option<usize>,
    },
    /// HUD: the user confirmed clearing the queue of `tab`'s conversation (Q7).
    QueueClear {
        /// The tab.
        tab: TabId,
        /// The `_locales` key of the question the user confirmed (`None`: the page sent none).
        question: Option<String>,
    },
    /// The stored queue record as read for a [`ContinuityOutput::QueueRead`]: `Ok(None)`
    /// when nothing is stored, `Ok(Some(Value::Null))` for a stored JSON `null` (no items:
    /// an empty book, said once in Activity), `Err` with what went wrong when the read
    /// itself failed (a value that is not a readable record is `Ok`: the change refuses it).
    QueueRead {
        /// The change it was read for.
        op: u64,
        /// The stored record (the shell parses its JSON text).
        stored: Result<Option<serde_json::Value>, String>,
    },
    /// How a [`ContinuityOutput::QueueWrite`] ended.
    QueueWritten {
        /// The change.
        op: u64,
        /// `Err` with what went wrong.
        result: Result<(), String>,
    },
    /// The answer to a [`ContinuityOutput::Request`].
    Answered {
        /// The call.
        id: CallId,
        /// Its result.
        result: Result<RuntimeAnswer, CallError>,
    },
}

/// How a notice looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum NoticeTone {
    /// Informational.
    Info,
    /// Something failed; the text says what to do.
    Bad,
}

/// Decisions for the shell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContinuityOutput {
    /// The companion's profile files (`profiles.get`) for `ProfileOverrides::set_companion`.
    CompanionProfiles(crate::sites::overrides::CompanionFiles),
    /// Send a request on the native port; answer with [`ContinuityInput::Answered`].
    Request {
        /// The call id.
        id: CallId,
        /// What to call.
        call: RuntimeCall,
    },
    /// Post `{"type":"deliver",id,text,app}` to the page of `tab` — every kind of delivery
    /// (wakes, progress, Continue, queue batches, judge continues, bridge results, handoff
    /// seeds) — only after the snapshot naming it has been written (durable first: a worker
    /// that dies right after posting finds it in its ledger and never offers it again under
    /// a new id). When the write fails nothing is posted; the delivery then becomes
    /// uncertain and is given up on, never typed blindly.
    Deliver {
        /// The tab.
        tab: TabId,
        /// The delivery id (also inside the marker line).
        id: String,
        /// The full text, ending with the marker line.
        text: String,
        /// The App the page attaches before the text (`None`: a plain message); with one,
        /// the page sends nothing it could not attach it to (`app_not_attached`).
        app: Option<AppMention>,
    },
    /// Open `url` in a new active tab (`chrome.tabs.create`) after the snapshot write, and
    /// answer with [`ContinuityInput::HandoffTab`].
    OpenTab {
        /// The transfer.
        transfer_id: String,
        /// The Project's home page (or ChatGPT's new chat) naming the transfer.
        url: String,
    },
    /// Post `{"type":"delivery_seen",id}`: the page may forget its result.
    DeliverySeen {
        /// The tab.
        tab: TabId,
        /// The delivery id.
        id: String,
    },
    /// Post `{"type":"clear_composer",id}`: remove text we typed and did not send (the
    /// composer carries `id`'s marker line).
    ClearComposer {
        /// The tab.
        tab: TabId,
        /// The delivery id whose marker the composer must carry.
        id: String,
    },
    /// Post `{"type":"insert",text}`: put text into the composer without sending.
    Insert {
        /// The tab.
        tab: TabId,
        /// The text.
        text: String,
    },
    /// Read the queue's record (`chrome.storage.local`, key [`crate::queue::STORE_KEY`]) and
    /// answer with [`ContinuityInput::QueueRead`].
    QueueRead {
        /// The change it is for.
        op: u64,
    },
    /// Write the queue's record and answer with [`ContinuityInput::QueueWritten`].
    QueueWrite {
        /// The change it is for.
        op: u64,
        /// The record (the shell stores its JSON text).
        record: serde_json::Value,
    },
    /// Keep an unreadable queue record aside (`chrome.storage.local`, key
    /// [`crate::queue::ASIDE_KEY`], added to the records kept there: [`crate::queue::aside_with`])
    /// before the user's Clear writes an empty book over it; answer with
    /// [`ContinuityInput::QueueWritten`] (on an error nothing is written over).
    QueueKeepAside {
        /// The change it is for.
        op: u64,
        /// The record as read (the worker writes the value exactly as its read found it
        /// stored, as JSON text; this one only when it has none).
        record: serde_json::Value,
    },
    /// Post `{"type":"queue_accepted",text}`: the text is durably queued; the page empties
    /// its composer if it still holds exactly that text.
    QueueAccepted {
        /// The tab.
        tab: TabId,
        /// The queued text as the page sent it.
        text: String,
    },
    /// Post `{"type":"notice",key,args,tone}` to the page.
    Notice {
        /// The tab.
        tab: TabId,
        /// What happened and what to do (a `_locales` text).
        say: Say,
        /// How it looks.
        tone: NoticeTone,
    },
    /// Carry out a recovery command in the page of `tab`; when
    /// [`RecoveryCommand::durable_first`], only after the snapshot with the planner's
    /// pending record has been written (a worker restart must not repeat it).
    Recovery {
        /// The tab.
        tab: TabId,
        /// What to do.
        command: RecoveryCommand,
    },
    /// Post `{"type":"card_allow",key,index}` to the page of `tab` (M5: click that card's
    /// plain Allow), only after the snapshot with the key in its card ledger has been
    /// written (a worker restart must never click it again); answered with `card_result`.
    CardAllow {
        /// The tab.
        tab: TabId,
        /// The card's key.
        key: String,
        /// Which of its buttons is the Allow.
        index: usize,
    },
    /// Append an entry to the Activity timeline (`extension/activity-log.js`; the shell adds
    /// the time).
    Activity(super::Activity),
    /// Views (HUDs, panels) may have changed: re-render them.
    ViewsChanged,
    /// Persisted state changed: schedule a (coalesced) write.
    Persist,
}
