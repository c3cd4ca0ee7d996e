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
//! settle the extension never saw (its saved state was lost and it subscribed live-only,
//! or the settle fell outside the runtime's event retention) must not strand a result. So
//! a scope gets an *inbox check* due after every link-up, every stream `hello`, its binding
//! and every `inbox_changed` whose `unacked` count grew; the check (`inbox.pending`) runs
//! only while the scope is quiet — link up, workspace not working, no settle read in
//! flight, no wake pending or in flight — and at most one read per scope is in flight. Its
//! unacknowledged terminal tasks become one wake of the scheduler
//! ([`crate::wake::MessageKind::Inbox`], id `inbox:<ws>#<smallest task id>`, the same gate,
//! Auto rules, retries and ack-after-confirmation as a settle wake). A settle's own inbox
//! read replaces a due check, and a settle wake replaces a pending inbox wake.
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
//! Invariants:
//! - A delivery id is never offered twice, and at most one delivery per scope is in flight;
//!   in-flight deliveries are persisted and resolved after a worker restart from the page's
//!   `markers` (present → confirmed) or, when the page is idle and not delivering, failed.
//! - `inbox.ack` is only requested for the tasks of a delivery that was confirmed (I4).
//! - A task carried by a confirmed delivery is never carried again: the ids of confirmed
//!   tasks are remembered per session ref (the newest [`CONFIRMED_TASKS_KEPT`], persisted,
//!   kept across re-binding) and removed from every inbox answer, so an answer that raced
//!   the `inbox.ack` cannot bring them back. A wake that failed carries its tasks again.
//! - Nothing is delivered automatically unless [`crate::auto_gate::wake_gate`] passes (the
//!   schedulers enforce it); a manual Continue is refused while a delivery is in flight,
//!   while the page generates, or while the composer holds a human draft.
//! - All persisted state is serde data ([`Continuity`] itself); page facts and requests in
//!   flight are not persisted (pages report again on reconnect, requests are re-issued).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use crate::auto_gate::{AutoGate, AutoState, HudAction, WakeWithheld};
use crate::binding::{BindingInput, BindingOutput, Bindings, CatalogWorkspace, TabId};
use crate::delivery_ledger::{
    Baseline, BeginRefused, Delivery, DeliveryLedger, DeliveryState, LedgerOutput, Resolution,
};
use crate::progress_push::ProgressConfig;
use crate::scope::{classify_url, PageKind, Scope};
use crate::settle_tracker::{
    AgentSnapshot, PaneEventKind, SettleInput, SettleOutput, SettleTracker, StreamEvent,
};
use crate::wake::{Language, MessageKind, PageFacts, SchedulerInput, SchedulerOutput, WakeScheduler};
use crate::Millis;

/// How many lines of a pane Check Herdr reads.
pub const CHECK_HERDR_LINES: u32 = 40;
/// How many characters of Check Herdr's summary go into the composer.
pub const CHECK_HERDR_MAX_CHARS: usize = 6_000;
/// How many characters of one task's result go into a wake (the inbox's pane tail, cut).
pub const TASK_RESULT_MAX_CHARS: usize = 300;
/// How many non-empty output lines of one pane a progress summary shows.
pub const PROGRESS_LINES_PER_PANE: usize = 4;
/// How many characters of one output line a progress summary shows.
pub const PROGRESS_LINE_MAX_CHARS: usize = 160;
/// The longest progress summary (all panes together).
pub const PROGRESS_SUMMARY_MAX_CHARS: usize = 600;
/// How many task ids of confirmed deliveries are remembered per session ref.
pub const CONFIRMED_TASKS_KEPT: usize = 512;

/// The latest output of one pane (from `agent_output`), with the baseline of the current
/// working episode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneOutput {
    /// The workspace of the pane.
    pub workspace_id: String,
    /// The agent in the pane, if Herdr named one.
    pub agent: Option<String>,
    /// The latest tail (≤ 2 000 characters, runtime-bounded).
    pub tail: String,
    /// The tail when the episode began; output equal to it is not progress.
    pub baseline: String,
    /// Stream seq of the latest tail (a replayed older event never overwrites it).
    #[serde(default)]
    pub seq: u64,
}

/// The stable id a chat passes to `herdr_prompt` so its tasks come back to it (I1, I3):
/// `chatgpt:project:<g-p-id>` for a Project, `<site>:conv:<id>` for a conversation.
pub fn browser_session_ref(scope: &Scope) -> String {
    match scope {
        Scope::Project { project_id } => format!("chatgpt:project:{project_id}"),
        Scope::Conversation {
            site,
            conversation_id,
        } => format!("{}:conv:{conversation_id}", site.as_str()),
    }
}

/// The delivery id of an inbox wake: `inbox:<ws>#<first task id>`, stable across worker
/// restarts. A task id the page's marker could not carry (whitespace, `]`) or that makes the
/// id longer than [`crate::limits::MAX_ID_CHARS`] is replaced by its FNV-1a hash (`h<hex>`).
pub fn inbox_delivery_id(workspace_id: &str, first_task: &str) -> String {
    let plain = format!("inbox:{workspace_id}#{first_task}");
    let marker_safe = !first_task.is_empty() && !first_task.chars().any(|c| c.is_whitespace() || c == ']');
    if marker_safe && crate::limits::within(&plain, crate::limits::MAX_ID_CHARS) {
        return plain;
    }
    let hash = first_task.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    format!("inbox:{workspace_id}#h{hash:016x}")
}

/// The marker line that ends every delivered message; the page confirms a delivery by
/// finding it in a new user turn.
pub fn marker_line(delivery_id: &str) -> String {
    format!("[herdr-continuity {delivery_id}]")
}

/// What the content script reports about its page (facts only).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Delivery ids of the marker lines in the last user turns.
    pub markers: Vec<String>,
    /// A delivery the page is still carrying out.
    pub delivering: Option<String>,
    /// The site-profile layout generation the adapter matched (`chatgpt.classic`, …);
    /// `None` = the markup matches no known layout: nothing is typed there (fail closed).
    #[serde(default)]
    pub generation: Option<String>,
    /// The delivery id whose marker line is in the composer: text the extension typed and
    /// did not send (not a human draft).
    #[serde(default)]
    pub composer_marker: Option<String>,
    /// A random id drawn when the content script started: a reload reports a new one.
    #[serde(default)]
    pub page_load: String,
}

/// What the page adapter did with a `deliver` (docs/PROTOCOL.md, "One delivery path").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum DeliveryOutcome {
    /// Send was clicked and the composer no longer holds the text.
    Submitted,
    /// Nothing was sent; any text typed was removed again.
    NotSubmitted {
        /// `no_composer`, `human_draft`, `insert_failed`, `send_button_missing`,
        /// `unknown_layout`, `busy`.
        reason: String,
    },
    /// Send was clicked, but whether the page took the message is not known.
    Unconfirmed,
}

/// One terminal task of the parent inbox, reduced to what a wake shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
}

/// HUD task counters of one session ref (I4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskCounts {
    /// Dispatched, not terminal.
    pub running: u64,
    /// Terminal, not acknowledged.
    pub unacked: u64,
    /// Terminal and acknowledged.
    pub acked: u64,
}

/// One live pane, as `herdr.panes` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneInfo {
    /// Pane id.
    pub pane_id: String,
    /// Agent name, if any.
    pub agent: Option<String>,
    /// Agent status (`working`, `idle`, …).
    pub agent_status: String,
}

/// A request to the runtime (docs/PROTOCOL.md); the shell adds the wire id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum RuntimeCall {
    /// `events.subscribe {after_seq}`.
    Subscribe {
        /// Resume point; `None` subscribes from now.
        after_seq: Option<u64>,
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
    /// `judge.turn_end {browser_session_ref, workspace_id}`.
    JudgeTurnEnd {
        /// The scope's ref.
        session_ref: String,
        /// The bound workspace.
        workspace_id: String,
    },
}

/// A successful answer, parsed by the shell according to the call it answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum RuntimeAnswer {
    /// `events_subscribed`.
    Subscribed,
    /// `herdr_workspaces`.
    Workspaces {
        /// The live catalog.
        workspaces: Vec<CatalogWorkspace>,
    },
    /// `inbox_pending`.
    InboxPending {
        /// Terminal, unacknowledged tasks, oldest first.
        tasks: Vec<InboxTask>,
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
    /// Any other result: its one-line text (the judge's verdict).
    Text {
        /// The text.
        text: String,
    },
}

/// An error answer (or a request the shell could not send).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallError {
    /// Machine code (`unknown_method`, `offline`, …).
    pub code: String,
    /// What happened and what to do.
    pub message: String,
}

/// Identifies one runtime call made by this machine.
pub type CallId = u64;

/// Facts and commands the shell feeds in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    },
    /// A stored stream event nothing else uses (`workspace_upsert`, `pane_upsert`,
    /// `workspace_removed`, unknown names): only its `seq`, so the tracker notices the end of
    /// the replay.
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
    /// HUD: bring live workspace state into the composer.
    CheckHerdr {
        /// The tab.
        tab: TabId,
    },
    /// HUD: ask the LLM judge.
    LlmJudge {
        /// The tab.
        tab: TabId,
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
    /// The answer to a [`ContinuityOutput::Request`].
    Answered {
        /// The call.
        id: CallId,
        /// Its result.
        result: Result<RuntimeAnswer, CallError>,
    },
}

/// How a notice looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeTone {
    /// Informational.
    Info,
    /// Something failed; the text says what to do.
    Bad,
}

/// Decisions for the shell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContinuityOutput {
    /// Send a request on the native port; answer with [`ContinuityInput::Answered`].
    Request {
        /// The call id.
        id: CallId,
        /// What to call.
        call: RuntimeCall,
    },
    /// Post `{"type":"deliver",id,text}` to the page of `tab`.
    Deliver {
        /// The tab.
        tab: TabId,
        /// The delivery id (also inside the marker line).
        id: String,
        /// The full text, ending with the marker line.
        text: String,
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
    /// Post `{"type":"notice",text,tone}` to the page.
    Notice {
        /// The tab.
        tab: TabId,
        /// What happened and what to do.
        text: String,
        /// How it looks.
        tone: NoticeTone,
    },
    /// Views (HUDs, panels) may have changed: re-render them.
    ViewsChanged,
    /// Persisted state changed: schedule a (coalesced) write.
    Persist,
}

pub use crate::delivery_ledger::DeliveryKind;

/// A delivery in flight as the previous release persisted it (per scope); restored into
/// the [`DeliveryLedger`] as uncertain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastWake {
    /// When its delivery was confirmed.
    pub at: Millis,
    /// What it was.
    pub kind: DeliveryKind,
    /// Its delivery id.
    pub id: String,
}

/// Per-scope state besides its scheduler.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    /// An inbox check (`inbox.pending` outside a settle) should run once the scope is quiet.
    #[serde(default)]
    inbox_check_due: bool,
}

/// What a runtime call in flight is for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Purpose {
    Subscribe,
    Catalog,
    /// `inbox.pending` for a held settle of a scope.
    WakeTasks { scope_key: String, settle: SettleOutput },
    Ack { scope_key: String, task_ids: Vec<String> },
    /// `inbox.ack` for tasks of a binding that no longer exists.
    OrphanAck { session_ref: String, task_ids: Vec<String> },
    Counts { scope_key: String },
    /// `inbox.pending` outside a settle (lost settle, reconnect, `inbox_changed`).
    InboxCheck { scope_key: String, workspace_id: String },
    CheckPanes { tab: TabId },
    CheckRead { tab: TabId },
    Judge { tab: TabId },
}

/// A Check Herdr run being collected.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct CheckRun {
    workspace_id: String,
    waiting: BTreeSet<CallId>,
    panes: Vec<PaneInfo>,
    texts: BTreeMap<String, String>,
}

/// The composed continuity machine of the worker.
///
/// Driver contract: restore from the persisted snapshot (serde) or [`Continuity::new`];
/// feed every fact with [`Continuity::handle`]; when the clock reaches
/// [`Continuity::next_deadline`] call [`Continuity::handle_timeout`]; after either drain
/// [`Continuity::poll`] until `None`. Answer every `Request` with `Answered` (an error
/// `offline` when it could not be sent) and every `Deliver` through the page's
/// `delivery_result`. On `Persist`, write the serialized machine at most once per burst.
/// Views ([`Continuity::page_view`], [`Continuity::panel_view`]) are pure queries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Continuity {
    /// Bindings (B1–B7).
    bindings: Bindings,
    /// Auto settings (M1–M3).
    auto: AutoGate,
    /// Settle tracking with the seq high-water mark (P8, P9).
    tracker: SettleTracker,
    /// Per-scope state by scope key.
    scopes: BTreeMap<String, ScopeStatus>,
    /// Message language.
    language: Language,
    /// Every message written into a page (ids, states, evidence).
    #[serde(default)]
    ledger: DeliveryLedger,
    /// Last catalog read (display only).
    catalog: Vec<CatalogWorkspace>,
    /// Progress timing from the options page (clamped).
    #[serde(default)]
    progress: ProgressConfig,
    /// Latest output per pane of bound workspaces (P4).
    #[serde(default)]
    pane_outputs: BTreeMap<String, PaneOutput>,
    /// Task ids carried by confirmed deliveries, per session ref (newest last, bounded).
    #[serde(default)]
    confirmed_tasks: BTreeMap<String, VecDeque<String>>,
    /// Confirmed-but-unacknowledged task ids of scopes that were unbound or re-bound before
    /// the runtime answered their `inbox.ack`, per session ref. An ack belongs to the chat's
    /// session ref, not to its binding, so it outlives the binding (I4).
    #[serde(default)]
    orphan_acks: BTreeMap<String, Vec<String>>,
    /// The catalog could not be read: why.
    #[serde(skip)]
    catalog_error: Option<String>,
    /// Pages by tab (not persisted: pages report again).
    #[serde(skip)]
    pages: BTreeMap<TabId, PageReport>,
    /// Calls in flight.
    #[serde(skip)]
    calls: BTreeMap<CallId, Purpose>,
    /// Next call id.
    #[serde(skip)]
    next_call: CallId,
    /// Whether the companion link is up.
    #[serde(skip)]
    link_up: bool,
    /// Check Herdr runs by tab.
    #[serde(skip)]
    checks: BTreeMap<TabId, CheckRun>,
    /// The time of the input being handled (for answers made without IO).
    #[serde(skip)]
    now: Millis,
    /// Decisions not yet drained.
    #[serde(skip)]
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

    /// Call once after restoring a snapshot, before any input: a new ledger life (ids stay
    /// unique), deliveries the old worker was waiting for become uncertain, and a delivery
    /// saved by the previous release joins the ledger. `epoch` is fresh randomness from the
    /// shell; it is kept only when the snapshot had none.
    pub fn restored(&mut self, now: Millis, epoch: &str) {
        self.ledger.ensure_epoch(epoch);
        let legacy: Vec<(String, LegacyInFlight)> = self
            .scopes
            .iter_mut()
            .filter_map(|(key, s)| s.legacy_in_flight.take().map(|d| (key.clone(), d)))
            .collect();
        for (scope_key, old) in legacy {
            self.ledger.adopt(Delivery {
                id: old.id,
                scope_key,
                kind: old.kind,
                task_ids: old.task_ids,
                tab: old.tab,
                conversation: None,
                baseline: Baseline::default(),
                posted_at: old.at,
                state: DeliveryState::Uncertain { since: now, why: "restarted".to_owned() },
                page_idle: false,
            });
        }
        self.ledger.restored(now);
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
            .min()
    }

    /// Fires due scheduler and ledger timers.
    pub fn handle_timeout(&mut self, now: Millis) {
        self.now = now;
        if self.ledger.next_deadline().is_some_and(|at| at <= now) {
            self.ledger.handle_timeout(now);
            self.drain_ledger(now);
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
        self.run_due_inbox_checks();
        self.finish();
    }

    /// Feeds one fact.
    pub fn handle(&mut self, now: Millis, input: ContinuityInput) {
        self.now = now;
        match input {
            ContinuityInput::LinkUp => {
                self.link_up = true;
                let after_seq = self.tracker.resume_point().map(|r| r.after_seq);
                self.call(Purpose::Subscribe, RuntimeCall::Subscribe { after_seq });
                self.call(Purpose::Catalog, RuntimeCall::Workspaces);
                let refs: Vec<(String, String)> = self
                    .bindings
                    .list()
                    .map(|b| (b.scope.key(), browser_session_ref(&b.scope)))
                    .collect();
                for (scope_key, session_ref) in refs {
                    self.call(Purpose::Counts { scope_key: scope_key.clone() }, RuntimeCall::InboxCounts { session_ref });
                    self.send_due_acks(&scope_key);
                }
                self.send_orphan_acks();
                self.inbox_checks_due();
                self.reissue_held_settles();
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
                self.checks.clear();
            }
            ContinuityInput::StreamHello {
                boot_id,
                last_seq,
                agents,
            } => {
                self.tracker.handle(
                    now,
                    SettleInput::StreamHello {
                        boot_id,
                        last_seq,
                        agents,
                    },
                );
                self.drain_tracker(now);
                self.inbox_checks_due();
            }
            ContinuityInput::StreamEvent(event) => {
                if event.kind == PaneEventKind::PaneRemoved {
                    self.pane_outputs.remove(&event.pane_id);
                }
                self.tracker.handle(now, SettleInput::Event(event));
                self.drain_tracker(now);
                self.outputs.push_back(ContinuityOutput::Persist);
            }
            ContinuityInput::InboxChanged {
                session_ref,
                counts,
            } => {
                for status in self.scopes_with_ref(&session_ref) {
                    // New unacknowledged results: read them once the scope is quiet.
                    if counts.unacked > status.counts.map_or(0, |c| c.unacked) {
                        status.inbox_check_due = true;
                    }
                    status.counts = Some(counts);
                    status.inbox_missing = false;
                }
            }
            ContinuityInput::PageReported { tab, report } => {
                let page = classify_url(&report.url);
                self.bindings.handle(now, BindingInput::PageVisited { tab, page });
                self.drain_bindings();
                // The new facts reach the schedulers before a restored delivery is resolved
                // from the same report: resolving may release the next wake, which must be
                // judged on this page as it is now (regression: continuity_props (d) saw a
                // wake go to a page that had just lost its composer).
                self.pages.insert(tab, report.clone());
                self.sync_schedulers(now);
                self.ledger.page(now, tab, &report);
                self.drain_ledger(now);
            }
            ContinuityInput::PageGone { tab } => {
                self.pages.remove(&tab);
                self.ledger.page_gone(now, tab);
                self.checks.remove(&tab);
            }
            ContinuityInput::TabClosed { tab } => {
                self.pages.remove(&tab);
                self.ledger.page_gone(now, tab);
                self.bindings.handle(now, BindingInput::TabClosed { tab });
                self.drain_bindings();
            }
            ContinuityInput::DeliveryReport { tab, id, outcome } => {
                self.outputs.push_back(ContinuityOutput::DeliverySeen { tab, id: id.clone() });
                self.ledger.report(now, tab, &id, &outcome);
                self.drain_ledger(now);
            }
            ContinuityInput::Bind { tab, workspace } => {
                let page = self.page_kind(tab);
                self.bindings.handle(now, BindingInput::Bind { tab, page, workspace });
                self.drain_bindings();
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
                    self.outputs.push_back(ContinuityOutput::Persist);
                }
            }
            ContinuityInput::Continue { tab } => self.manual_continue(now, tab),
            ContinuityInput::CheckHerdr { tab } => self.check_herdr(tab),
            ContinuityInput::LlmJudge { tab } => self.llm_judge(tab),
            ContinuityInput::AllowProjectAuto { allowed } => {
                self.auto.set_allow_project_auto(allowed);
                self.outputs.push_back(ContinuityOutput::Persist);
            }
            ContinuityInput::LanguageChanged { language } => {
                self.language = language;
                self.reconfigure_schedulers(now);
            }
            ContinuityInput::ProgressSettings { tick_sec, fallback_sec } => {
                self.progress = ProgressConfig::from_settings(tick_sec, fallback_sec);
                self.reconfigure_schedulers(now);
                self.outputs.push_back(ContinuityOutput::Persist);
            }
            ContinuityInput::StreamPosition { seq } => self.stream_position(now, seq),
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
        }
        self.sync_schedulers(now);
        self.run_due_inbox_checks();
        self.finish();
    }

    /// Re-reads the inbox for every settle that was waiting for its `inbox.pending` answer
    /// when the answer was lost (a worker restart): the settle still wakes, with its tasks.
    fn reissue_held_settles(&mut self) {
        let held: Vec<(String, SettleOutput)> = self
            .scopes
            .iter()
            .filter_map(|(key, s)| s.settle_awaiting_tasks.clone().map(|settle| (key.clone(), settle)))
            .filter(|(key, _)| !self.calls.values().any(|p| matches!(p, Purpose::WakeTasks { scope_key, .. } if scope_key == key)))
            .collect();
        for (scope_key, settle) in held {
            let Some(session_ref) = self.bindings.list().find(|b| b.scope.key() == scope_key).map(|b| browser_session_ref(&b.scope)) else {
                continue;
            };
            self.call(Purpose::WakeTasks { scope_key, settle }, RuntimeCall::InboxPending { session_ref });
        }
    }

    /// The stream got to `seq` (an event the tracker does not read): it may end the replay
    /// and settle workspaces from the `hello` snapshot.
    fn stream_position(&mut self, now: Millis, seq: u64) {
        if !self.tracker.reconcile_pending() {
            return;
        }
        self.tracker.handle(now, SettleInput::StreamPosition { seq });
        self.drain_tracker(now);
        self.outputs.push_back(ContinuityOutput::Persist);
    }

    /// Marks an inbox check due for every bound scope (link-up, stream `hello`) that has
    /// none in flight (a check sent on this link already sees what the `hello` announces:
    /// the runtime catches up with its event log before answering `inbox.pending`).
    fn inbox_checks_due(&mut self) {
        let keys: Vec<String> = self.bindings.list().map(|b| b.scope.key()).collect();
        for key in keys {
            let check_in_flight = self
                .calls
                .values()
                .any(|p| matches!(p, Purpose::InboxCheck { scope_key, .. } if *scope_key == key));
            if check_in_flight {
                continue;
            }
            if let Some(status) = self.scopes.get_mut(&key) {
                status.inbox_check_due = true;
            }
        }
    }

    /// Why an inbox check of `key` must wait (or its answer must not become a wake): the
    /// workspace works (its settle will carry the tasks), a settle's inbox read is in
    /// flight, or a wake is pending or in flight (it carries them, or they follow it).
    fn inbox_check_blocked(&self, key: &str) -> bool {
        let Some(binding) = self.bindings.list().find(|b| b.scope.key() == key) else {
            return true;
        };
        let settle_read_in_flight = self
            .calls
            .values()
            .any(|p| matches!(p, Purpose::WakeTasks { scope_key, .. } if scope_key == key));
        let status = self.scopes.get(key);
        let wake_busy = status.is_none_or(|s| {
            s.scheduler.as_ref().is_none_or(WakeScheduler::wake_pending_or_in_flight)
                || self.ledger.active_for(key).is_some_and(|d| d.kind == DeliveryKind::Wake)
        });
        self.tracker.is_working(&binding.workspace_id) || settle_read_in_flight || wake_busy
    }

    /// Starts the due inbox checks of quiet scopes (at most one read per scope in flight).
    fn run_due_inbox_checks(&mut self) {
        if !self.link_up {
            return;
        }
        let due: Vec<(String, String, String)> = self
            .bindings
            .list()
            .filter(|b| self.scopes.get(&b.scope.key()).is_some_and(|s| s.inbox_check_due))
            .map(|b| (b.scope.key(), b.workspace_id.clone(), browser_session_ref(&b.scope)))
            .collect();
        for (key, workspace_id, session_ref) in due {
            let check_in_flight = self
                .calls
                .values()
                .any(|p| matches!(p, Purpose::InboxCheck { scope_key, .. } if *scope_key == key));
            if check_in_flight || self.inbox_check_blocked(&key) {
                continue;
            }
            if let Some(status) = self.scopes.get_mut(&key) {
                status.inbox_check_due = false;
            }
            self.call(Purpose::InboxCheck { scope_key: key, workspace_id }, RuntimeCall::InboxPending { session_ref });
        }
    }

    /// `tasks` without those a confirmed delivery of `key`'s ref already carried.
    fn unconfirmed(&self, key: &str, mut tasks: Vec<InboxTask>) -> Vec<InboxTask> {
        let Some(session_ref) = self.bindings.list().find(|b| b.scope.key() == key).map(|b| browser_session_ref(&b.scope)) else {
            return tasks;
        };
        if let Some(confirmed) = self.confirmed_tasks.get(&session_ref) {
            tasks.retain(|t| !confirmed.contains(&t.task_id));
        }
        tasks
    }

    /// The answer to an inbox check: its unconfirmed tasks become one inbox wake if the scope
    /// is still quiet; otherwise the check stays due (it runs again once the scope is quiet).
    fn inbox_checked(&mut self, now: Millis, key: &str, workspace_id: &str, result: Result<RuntimeAnswer, CallError>) {
        let tasks = match result {
            Ok(RuntimeAnswer::InboxPending { tasks }) => tasks,
            Err(error) if error.code == "unknown_method" => {
                if let Some(status) = self.scopes.get_mut(key) {
                    status.inbox_missing = true;
                }
                return;
            }
            // Offline or refused: the next link-up, `hello` or `inbox_changed` checks again.
            _ => return,
        };
        let tasks = self.unconfirmed(key, tasks);
        let same_binding = self.bindings.list().any(|b| b.scope.key() == key && b.workspace_id == workspace_id);
        if tasks.is_empty() || !same_binding {
            return;
        }
        if self.inbox_check_blocked(key) {
            if let Some(status) = self.scopes.get_mut(key) {
                status.inbox_check_due = true;
            }
            return;
        }
        let Some(first) = tasks.iter().map(|t| t.task_id.clone()).min() else { return };
        let Some(status) = self.scopes.get_mut(key) else { return };
        status.inbox_missing = false;
        status.wake_tasks = tasks;
        if let Some(scheduler) = status.scheduler.as_mut() {
            scheduler.handle(now, SchedulerInput::InboxWake { key: first });
        }
        self.drain_scheduler(now, key);
    }

    /// Stores a pane's latest output (bound workspaces only). `fresh.baseline` is its own
    /// tail: used only when the pane was never seen (its first output is the baseline).
    fn agent_output(&mut self, fresh: PaneOutput, pane_id: String) {
        if self.bindings.scopes_bound_to(&fresh.workspace_id).next().is_none() {
            return;
        }
        match self.pane_outputs.get_mut(&pane_id) {
            Some(known) if fresh.seq != 0 && fresh.seq <= known.seq => return, // a replay of older output
            Some(known) => {
                known.workspace_id = fresh.workspace_id;
                known.agent = fresh.agent;
                known.tail = fresh.tail;
                known.seq = fresh.seq;
            }
            None => {
                self.pane_outputs.insert(pane_id, fresh);
            }
        }
        self.outputs.push_back(ContinuityOutput::Persist);
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
        self.outputs.push_back(ContinuityOutput::ViewsChanged);
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
            self.outputs.push_back(ContinuityOutput::Request { id, call });
        } else {
            // Offline: answer at once so nothing waits forever.
            self.abandon(now, purpose, "the companion is not connected");
        }
        id
    }

    fn page_kind(&self, tab: TabId) -> PageKind {
        self.pages
            .get(&tab)
            .map_or(PageKind::Unsupported { reason: crate::scope::UnsupportedPage::NotAUrl }, |p| classify_url(&p.url))
    }

    fn scopes_with_ref(&mut self, session_ref: &str) -> Vec<&mut ScopeStatus> {
        let keys: BTreeSet<String> = self
            .bindings
            .list()
            .filter(|b| browser_session_ref(&b.scope) == session_ref)
            .map(|b| b.scope.key())
            .collect();
        self.scopes
            .iter_mut()
            .filter(|(k, _)| keys.contains(*k))
            .map(|(_, s)| s)
            .collect()
    }

    fn drain_bindings(&mut self) {
        while let Some(output) = self.bindings.poll() {
            match output {
                BindingOutput::Bound { scope, .. } | BindingOutput::PendingMigrated { scope, .. } => {
                    // A new binding starts with fresh per-scope state; acks still due from
                    // the previous binding of this scope are kept by session ref.
                    self.keep_orphan_acks(&scope);
                    let status = self.scopes.entry(scope.key()).or_default();
                    // Existing results of this chat are read once the new binding is quiet.
                    *status = ScopeStatus { inbox_check_due: true, ..ScopeStatus::default() };
                    if self.link_up {
                        self.call(
                            Purpose::Counts { scope_key: scope.key() },
                            RuntimeCall::InboxCounts { session_ref: browser_session_ref(&scope) },
                        );
                    }
                }
                BindingOutput::Unbound { scope, .. } => {
                    self.keep_orphan_acks(&scope);
                    self.scopes.remove(&scope.key());
                    let bindings = &self.bindings;
                    self.pane_outputs.retain(|_, o| bindings.scopes_bound_to(&o.workspace_id).next().is_some());
                }
                _ => {}
            }
            self.outputs.push_back(ContinuityOutput::Persist);
        }
    }

    fn drain_tracker(&mut self, now: Millis) {
        while let Some(output) = self.tracker.poll() {
            match &output {
                SettleOutput::Resubscribe { .. } => {
                    // The shell reopens the stream on the next LinkUp.
                }
                SettleOutput::ScopeWorking { workspace_id, .. }
                | SettleOutput::PartialSettle { workspace_id, .. } => {
                    if matches!(output, SettleOutput::ScopeWorking { .. }) {
                        // A new episode: output seen so far is not progress of it.
                        for pane in self.pane_outputs.values_mut().filter(|o| &o.workspace_id == workspace_id) {
                            pane.baseline = pane.tail.clone();
                        }
                        // A settle still waiting for its inbox read is no longer the truth:
                        // drop it so it never wakes the page while the workspace works (P7,
                        // P8; regression found by continuity_props (b)).
                        self.calls.retain(|_, purpose| {
                            !matches!(purpose, Purpose::WakeTasks { settle: SettleOutput::ScopeSettled { workspace_id: held, .. }, .. } if held == workspace_id)
                        });
                        for key in self.keys_bound_to(workspace_id) {
                            if let Some(status) = self.scopes.get_mut(&key) {
                                status.settle_awaiting_tasks = None;
                            }
                        }
                    }
                    let keys = self.keys_bound_to(workspace_id);
                    for key in keys {
                        self.feed_settle(now, &key, output.clone());
                    }
                }
                SettleOutput::ScopeSettled { workspace_id, .. } => {
                    let keys = self.keys_bound_to(workspace_id);
                    for key in keys {
                        let Some(session_ref) = self
                            .bindings
                            .list()
                            .find(|b| b.scope.key() == key)
                            .map(|b| browser_session_ref(&b.scope))
                        else {
                            continue;
                        };
                        if let Some(status) = self.scopes.get_mut(&key) {
                            status.settle_awaiting_tasks = Some(output.clone());
                            status.settled_once = true;
                            // This settle's inbox read replaces a due inbox check.
                            status.inbox_check_due = false;
                        }
                        // Progress stops now, before the inbox read (P8).
                        if let Some(scheduler) = self.scopes.get_mut(&key).and_then(|s| s.scheduler.as_mut()) {
                            scheduler.handle(now, SchedulerInput::SettleSeen);
                        }
                        self.drain_scheduler(now, &key);
                        // Read the scope's own inbox first so the wake carries its task
                        // facts (I2, I3); the settle is handed on when the answer comes.
                        self.call(
                            Purpose::WakeTasks { scope_key: key.clone(), settle: output.clone() },
                            RuntimeCall::InboxPending { session_ref },
                        );
                    }
                }
                SettleOutput::GenerationChanged { .. } | SettleOutput::StaleGenerationRejected { .. } => {}
            }
        }
    }

    fn keys_bound_to(&self, workspace_id: &str) -> Vec<String> {
        self.bindings.scopes_bound_to(workspace_id).map(Scope::key).collect()
    }

    fn feed_settle(&mut self, now: Millis, key: &str, signal: SettleOutput) {
        if let Some(scheduler) = self.scopes.get_mut(key).and_then(|s| s.scheduler.as_mut()) {
            scheduler.handle(now, SchedulerInput::Settle(signal));
            self.drain_scheduler(now, key);
        }
    }

    /// A call that will never be answered normally.
    fn abandon(&mut self, now: Millis, purpose: Purpose, why: &str) {
        let error = CallError {
            code: "offline".to_owned(),
            message: format!("{why}; the extension retries when it reconnects"),
        };
        self.answered(now, purpose, Err(error));
    }

    fn answered(&mut self, now: Millis, purpose: Purpose, result: Result<RuntimeAnswer, CallError>) {
        match (purpose, result) {
            (Purpose::Subscribe, _) => {}
            (Purpose::Catalog, Ok(RuntimeAnswer::Workspaces { workspaces })) => {
                self.catalog_error = None;
                self.catalog = workspaces.clone();
                self.bindings.handle(now, BindingInput::CatalogRefreshed { workspaces });
                self.drain_bindings();
            }
            (Purpose::Catalog, Err(error)) => self.catalog_error = Some(error.message),
            (Purpose::Catalog, Ok(_)) => {}
            (Purpose::WakeTasks { scope_key, settle }, result) => {
                let result = result.map(|answer| match answer {
                    RuntimeAnswer::InboxPending { tasks } => RuntimeAnswer::InboxPending { tasks: self.unconfirmed(&scope_key, tasks) },
                    other => other,
                });
                if let Some(status) = self.scopes.get_mut(&scope_key) {
                    status.settle_awaiting_tasks = None;
                    match result {
                        Ok(RuntimeAnswer::InboxPending { tasks }) => {
                            status.inbox_missing = false;
                            status.wake_tasks = tasks;
                        }
                        Err(error) if error.code == "unknown_method" => {
                            status.inbox_missing = true;
                            status.wake_tasks.clear();
                        }
                        _ => {
                            // The wake goes without task facts; its tasks stay unacked and
                            // an inbox check picks them up once the scope is quiet.
                            status.wake_tasks.clear();
                            status.inbox_check_due = true;
                        }
                    }
                }
                self.feed_settle(now, &scope_key, settle);
            }
            (Purpose::InboxCheck { scope_key, workspace_id }, result) => {
                self.inbox_checked(now, &scope_key, &workspace_id, result);
            }
            (Purpose::Ack { scope_key, task_ids }, result) => {
                let retry_later = matches!(&result, Err(error) if error.code == "offline" || error.code == "not_ready");
                if let Some(status) = self.scopes.get_mut(&scope_key) {
                    if !retry_later {
                        // Acked, or refused for good (forbidden / not_found / not_terminal):
                        // either way there is nothing left to send for these ids.
                        status.ack_due.retain(|id| !task_ids.contains(id));
                        self.outputs.push_back(ContinuityOutput::Persist);
                    }
                    match result {
                        Ok(RuntimeAnswer::Counts { counts }) => {
                            status.counts = Some(counts);
                            status.inbox_missing = false;
                        }
                        Err(error) if error.code == "unknown_method" => status.inbox_missing = true,
                        _ => {}
                    }
                }
            }
            (Purpose::OrphanAck { session_ref, task_ids }, result) => {
                let retry_later = matches!(&result, Err(error) if error.code == "offline" || error.code == "not_ready");
                if !retry_later {
                    if let Some(due) = self.orphan_acks.get_mut(&session_ref) {
                        due.retain(|id| !task_ids.contains(id));
                        if due.is_empty() {
                            self.orphan_acks.remove(&session_ref);
                        }
                    }
                    self.outputs.push_back(ContinuityOutput::Persist);
                }
            }
            (Purpose::Counts { scope_key }, result) => {
                if let Some(status) = self.scopes.get_mut(&scope_key) {
                    match result {
                        Ok(RuntimeAnswer::Counts { counts }) => {
                            status.counts = Some(counts);
                            status.inbox_missing = false;
                        }
                        Err(error) if error.code == "unknown_method" => status.inbox_missing = true,
                        _ => {}
                    }
                }
            }
            (Purpose::CheckPanes { tab }, Ok(RuntimeAnswer::Panes { panes })) => {
                let reads: Vec<PaneInfo> = panes.clone();
                if let Some(run) = self.checks.get_mut(&tab) {
                    run.panes = panes;
                } else {
                    return;
                }
                for pane in reads.iter().filter(|p| p.agent.is_some()).take(8) {
                    let id = self.call(
                        Purpose::CheckRead { tab },
                        RuntimeCall::PaneRead { pane_id: pane.pane_id.clone(), lines: CHECK_HERDR_LINES },
                    );
                    if let Some(run) = self.checks.get_mut(&tab) {
                        if self.calls.contains_key(&id) {
                            run.waiting.insert(id);
                        }
                    }
                }
                self.finish_check(tab);
            }
            (Purpose::CheckRead { tab }, result) => {
                if let Some(run) = self.checks.get_mut(&tab) {
                    run.waiting.retain(|id| self.calls.contains_key(id));
                    if let Ok(RuntimeAnswer::PaneText { pane_id, text }) = result {
                        run.texts.insert(pane_id, text);
                    }
                }
                self.finish_check(tab);
            }
            (Purpose::CheckPanes { tab }, result) => {
                self.checks.remove(&tab);
                let message = match result {
                    Err(error) => error.message,
                    Ok(_) => "the companion answered herdr.panes with an unexpected result".to_owned(),
                };
                let text = self.say(
                    format!("Check Herdr failed: {message}. Check the companion line above, then try again."),
                    format!("提取 Herdr 状态失败：{message}。请查看上方的 companion 状态，然后重试。"),
                );
                self.outputs.push_back(ContinuityOutput::Notice { tab, text, tone: NoticeTone::Bad });
            }
            (Purpose::Judge { tab }, result) => {
                let (text, tone) = match result {
                    Ok(RuntimeAnswer::Text { text }) => {
                        (self.say(format!("LLM judge: {text}"), format!("LLM 判断：{text}")), NoticeTone::Info)
                    }
                    Ok(_) => (
                        self.say("LLM judge: the companion gave no verdict.".to_owned(), "LLM 判断：companion 没有给出结论。".to_owned()),
                        NoticeTone::Info,
                    ),
                    // J4: the extension holds no provider; only the runtime's semantic service judges.
                    Err(error) if error.code == "unknown_method" => (
                        self.say(
                            format!("LLM judge is not available: this companion has no semantic judge service (it answered: {}). Nothing was sent; use Continue or Check Herdr instead.", error.message.trim_end_matches('.')),
                            format!("LLM 判断不可用：这个 companion 没有语义判断服务（它的回答：{}）。没有发送任何内容；请改用“继续”或“提取 Herdr 状态”。", error.message.trim_end_matches('.')),
                        ),
                        NoticeTone::Bad,
                    ),
                    Err(error) => (
                        self.say(format!("LLM judge failed: {}", error.message), format!("LLM 判断失败：{}", error.message)),
                        NoticeTone::Bad,
                    ),
                };
                self.outputs.push_back(ContinuityOutput::Notice { tab, text, tone });
            }
        }
    }

    fn scope_of_tab(&self, tab: TabId) -> Option<Scope> {
        self.page_kind(tab).scope()
    }

    fn manual_continue(&mut self, now: Millis, tab: TabId) {
        let page = self.page_kind(tab);
        let refuse = |this: &mut Self, text: String| {
            this.outputs.push_back(ContinuityOutput::Notice { tab, text, tone: NoticeTone::Bad });
        };
        if let Err(locked) = self.auto.hud_action(&page, HudAction::Continue) {
            return refuse(self, self.locked_text(locked));
        }
        let Some(scope) = page.scope() else { return };
        let Some(binding) = self.bindings.binding_for(&scope).cloned() else {
            return refuse(self, self.withheld_text(WakeWithheld::NotBound));
        };
        let report = self.pages.get(&tab).cloned().unwrap_or_default();
        let blocker = if self.in_flight(&scope.key()).is_some() {
            Some(WakeWithheld::UnconfirmedDelivery)
        } else if report.generating || report.permission_card {
            Some(WakeWithheld::PageGenerating)
        } else if report.draft {
            Some(WakeWithheld::HumanDraft)
        } else if !report.composer {
            Some(WakeWithheld::NoComposer)
        } else {
            None
        };
        if let Some(reason) = blocker {
            return refuse(self, self.manual_refusal_text(reason));
        }
        let body = match self.language {
            Language::En => format!("[Herdr] Continue with workspace {} ({}). This is a manual nudge, not evidence that anything succeeded. Re-read the live Herdr and Git state, inspect the agents' output, the diff and the tests, then decide: continue, rework, merge or stop.", binding.label, binding.workspace_id),
            Language::Zh => format!("[Herdr] 继续 workspace {}（{}）。这是手动提醒，不代表任何工作已成功。请重新读取实时 Herdr/Git 状态，检查 Agent 输出、diff 和测试，再决定继续、返工、合并还是停止。", binding.label, binding.workspace_id),
        };
        let subject = format!("continue:{}", binding.workspace_id);
        if self.post_delivery(now, &scope.key(), tab, DeliveryKind::Continue, &subject, &body, Vec::new()).is_err() {
            refuse(self, self.manual_refusal_text(WakeWithheld::UnknownLayout));
        }
    }

    /// Hands a message to the ledger (the only way anything is typed into a page).
    #[allow(clippy::too_many_arguments)]
    fn post_delivery(
        &mut self,
        now: Millis,
        key: &str,
        tab: TabId,
        kind: DeliveryKind,
        subject: &str,
        body: &str,
        task_ids: Vec<String>,
    ) -> Result<String, BeginRefused> {
        let page = self.pages.get(&tab).cloned().unwrap_or_default();
        let result = self.ledger.begin(now, key, kind, subject, body, task_ids, tab, &page);
        self.drain_ledger(now);
        self.outputs.push_back(ContinuityOutput::Persist);
        result
    }

    /// Carries out the ledger's decisions.
    fn drain_ledger(&mut self, now: Millis) {
        while let Some(output) = self.ledger.poll() {
            match output {
                LedgerOutput::Post { tab, id, text } => self.outputs.push_back(ContinuityOutput::Deliver { tab, id, text }),
                LedgerOutput::Clear { tab, id } => self.outputs.push_back(ContinuityOutput::ClearComposer { tab, id }),
                LedgerOutput::Resolved { delivery, resolution } => self.delivery_resolved(now, delivery, &resolution),
            }
            self.outputs.push_back(ContinuityOutput::Persist);
        }
    }

    /// The English or Chinese text, by the UI language.
    fn say(&self, en: String, zh: String) -> String {
        match self.language {
            Language::En => en,
            Language::Zh => zh,
        }
    }

    /// Why a *manual* Continue was not sent: unlike an automatic wake, nothing follows by
    /// itself, so the text says to press Continue again.
    fn manual_refusal_text(&self, reason: WakeWithheld) -> String {
        let (en, zh) = match reason {
            WakeWithheld::HumanDraft => (
                "Not sent: the composer has your unsent text. Send or clear it, then press Continue again.",
                "未发送：输入框里有你尚未发送的文字。请先发送或清空，然后再按“继续”。",
            ),
            WakeWithheld::PageGenerating => (
                "Not sent: a reply is still being written or a permission card is waiting. Press Continue again when the page is idle.",
                "未发送：回复仍在生成，或有权限卡片等待处理。页面空闲后请再按“继续”。",
            ),
            WakeWithheld::UnconfirmedDelivery => (
                "Not sent: an earlier message is still being confirmed. Press Continue again in a moment.",
                "未发送：上一条消息仍在确认中。请稍后再按“继续”。",
            ),
            WakeWithheld::NoComposer => (
                "Not sent: this page has no composer. Open the conversation, then press Continue again.",
                "未发送：这个页面没有输入框。请打开会话后再按“继续”。",
            ),
            other => return self.withheld_text(other),
        };
        self.say(en.to_owned(), zh.to_owned())
    }

    fn locked_text(&self, locked: crate::auto_gate::ActionLocked) -> String {
        self.say(locked.message().to_owned(), locked.message_zh().to_owned())
    }

    fn withheld_text(&self, reason: WakeWithheld) -> String {
        match self.language {
            Language::En => reason.message().to_owned(),
            Language::Zh => reason.message_zh().to_owned(),
        }
    }

    fn check_herdr(&mut self, tab: TabId) {
        let page = self.page_kind(tab);
        if let Err(locked) = self.auto.hud_action(&page, HudAction::CheckHerdr) {
            self.outputs.push_back(ContinuityOutput::Notice { tab, text: self.locked_text(locked), tone: NoticeTone::Bad });
            return;
        }
        let Some(binding) = page.scope().and_then(|s| self.bindings.binding_for(&s).cloned()) else {
            self.outputs.push_back(ContinuityOutput::Notice { tab, text: self.withheld_text(WakeWithheld::NotBound), tone: NoticeTone::Bad });
            return;
        };
        self.checks.insert(tab, CheckRun { workspace_id: binding.workspace_id.clone(), ..CheckRun::default() });
        self.call(Purpose::CheckPanes { tab }, RuntimeCall::Panes { workspace_id: binding.workspace_id });
    }

    fn finish_check(&mut self, tab: TabId) {
        let done = self.checks.get(&tab).is_some_and(|run| run.waiting.is_empty());
        if !done {
            return;
        }
        let Some(run) = self.checks.remove(&tab) else { return };
        let text = check_herdr_summary(&run.workspace_id, &run.panes, &run.texts);
        self.outputs.push_back(ContinuityOutput::Insert { tab, text });
    }

    fn llm_judge(&mut self, tab: TabId) {
        let page = self.page_kind(tab);
        if let Err(locked) = self.auto.hud_action(&page, HudAction::LlmJudge) {
            self.outputs.push_back(ContinuityOutput::Notice { tab, text: self.locked_text(locked), tone: NoticeTone::Bad });
            return;
        }
        let Some(scope) = page.scope() else { return };
        let workspace_id = self.bindings.binding_for(&scope).map(|b| b.workspace_id.clone()).unwrap_or_default();
        self.call(
            Purpose::Judge { tab },
            RuntimeCall::JudgeTurnEnd { session_ref: browser_session_ref(&scope), workspace_id },
        );
    }

    /// The tab showing a binding's delivery target (lowest tab id when several do).
    fn target_tab(&self, key: &str) -> Option<TabId> {
        let binding = self.bindings.list().find(|b| b.scope.key() == key)?;
        let target = binding.delivery_target()?;
        self.pages
            .iter()
            .find(|(_, report)| classify_url(&report.url).conversation().as_ref() == Some(&target))
            .map(|(tab, _)| *tab)
    }

    /// Keeps one scheduler per binding and feeds it the binding, Auto and page facts.
    fn sync_schedulers(&mut self, now: Millis) {
        let bound: Vec<(String, String, bool, AutoState)> = self
            .bindings
            .list()
            .map(|b| (b.scope.key(), b.workspace_id.clone(), b.active_conv_key.is_some(), self.auto.state(&b.scope)))
            .collect();
        let keys: BTreeSet<String> = bound.iter().map(|(k, ..)| k.clone()).collect();
        self.scopes.retain(|k, _| keys.contains(k));
        for (key, workspace_id, has_target, auto) in bound {
            // A manual continue awaiting its answer occupies the page like a reply being
            // generated: the scheduler must not post a second delivery (regression found
            // by continuity_props (e)).
            let manual_in_flight = self.ledger.active_for(&key).is_some_and(|d| d.kind == DeliveryKind::Continue);
            let facts = self
                .target_tab(&key)
                .and_then(|tab| self.pages.get(&tab))
                .map(|r| PageFacts {
                    composer_present: r.composer,
                    layout_known: r.generation.is_some(),
                    generating: r.generating || r.permission_card || manual_in_flight,
                    human_draft: r.draft,
                })
                .unwrap_or_default();
            let (language, progress) = (self.language, self.progress);
            let status = self.scopes.entry(key.clone()).or_default();
            let scheduler = status
                .scheduler
                .get_or_insert_with(|| WakeScheduler::new(progress, language));
            scheduler.handle(now, SchedulerInput::BindingChanged { workspace_id: Some(workspace_id), has_delivery_target: has_target });
            scheduler.handle(now, SchedulerInput::AutoChanged { auto });
            scheduler.handle(now, SchedulerInput::Page(facts));
            self.drain_scheduler(now, &key);
        }
    }

    fn drain_scheduler(&mut self, now: Millis, key: &str) {
        while let Some(output) = self.scopes.get_mut(key).and_then(|s| s.scheduler.as_mut()).and_then(WakeScheduler::poll) {
            match output {
                SchedulerOutput::Deliver { kind, text } => self.scheduler_delivery(now, key, kind, text),
                SchedulerOutput::CheckSummary { workspace_id } => {
                    // Derived from the stream's `agent_output` tails (P4); `None` when no
                    // pane printed anything new this episode.
                    let summary = progress_summary(&workspace_id, &self.pane_outputs);
                    if let Some(scheduler) = self.scopes.get_mut(key).and_then(|s| s.scheduler.as_mut()) {
                        scheduler.handle(now, SchedulerInput::SummaryChecked { summary });
                    }
                }
                SchedulerOutput::WithheldChanged { .. } => {}
            }
            self.outputs.push_back(ContinuityOutput::Persist);
        }
    }

    fn scheduler_delivery(&mut self, now: Millis, key: &str, kind: MessageKind, text: String) {
        let Some(tab) = self.target_tab(key) else {
            // The gate said the composer is present, so a tab exists; if not, fail fast.
            if let Some(scheduler) = self.scopes.get_mut(key).and_then(|s| s.scheduler.as_mut()) {
                scheduler.handle(now, SchedulerInput::DeliveryFailed);
            }
            return;
        };
        let language = self.language;
        let workspace = self.bindings.list().find(|b| b.scope.key() == key).map(|b| b.workspace_id.clone()).unwrap_or_default();
        let (subject, body, delivery_kind, task_ids) = match &kind {
            MessageKind::Wake { .. } | MessageKind::Inbox { .. } => {
                let status = self.scopes.get(key);
                let tasks = self.unconfirmed(key, status.map(|s| s.wake_tasks.clone()).unwrap_or_default());
                let inbox_missing = status.is_some_and(|s| s.inbox_missing);
                let body = format!("{text}{}", task_facts(language, &tasks, inbox_missing));
                let ids = tasks.iter().map(|t| t.task_id.clone()).collect();
                let subject = match &kind {
                    MessageKind::Wake { wake_id, .. } => format!("wake:{workspace}#{}", wake_id.seq),
                    MessageKind::Inbox { key: first_task } => inbox_delivery_id(&workspace, first_task),
                    MessageKind::Progress { .. } | MessageKind::Fallback { .. } => String::new(),
                };
                (subject, body, DeliveryKind::Wake, ids)
            }
            MessageKind::Progress { .. } | MessageKind::Fallback { .. } => (format!("progress:{workspace}"), text, DeliveryKind::Progress, Vec::new()),
        };
        if self.post_delivery(now, key, tab, delivery_kind, &subject, &body, task_ids).is_err() {
            if let Some(scheduler) = self.scopes.get_mut(key).and_then(|s| s.scheduler.as_mut()) {
                scheduler.handle(now, SchedulerInput::DeliveryFailed);
            }
        }
    }

    /// Applies how a delivery ended: a confirmed one counts, acks its tasks (I4) and tells
    /// its scheduler; one that certainly did not land lets the scheduler offer it again; an
    /// abandoned one is not offered again (it may have landed) and the page says so.
    fn delivery_resolved(&mut self, now: Millis, delivery: Delivery, resolution: &Resolution) {
        let key = delivery.scope_key.clone();
        let confirmed = *resolution == Resolution::Confirmed;
        if confirmed {
            self.remember_confirmed(&key, delivery.task_ids.clone());
        }
        if *resolution == Resolution::Abandoned {
            let text = self.say(
                "Herdr Continuity could not tell whether its last message reached this chat, so it will not send it again by itself. If it is not in the thread, press Continue.".to_owned(),
                "Herdr Continuity 无法确认上一条消息是否已发到这个对话，因此不会自动重发。如果对话里没有它，请按“继续”。".to_owned(),
            );
            self.outputs.push_back(ContinuityOutput::Notice { tab: delivery.tab, text, tone: NoticeTone::Bad });
        }
        let Some(status) = self.scopes.get_mut(&key) else { return };
        if *resolution == Resolution::Abandoned && !delivery.task_ids.is_empty() {
            // Its tasks are still unacknowledged in the durable inbox: read them again once
            // the scope is quiet (the inbox is the truth, I2/I4), instead of retyping this
            // message blindly.
            status.inbox_check_due = true;
        }
        let scheduled = matches!(delivery.kind, DeliveryKind::Wake | DeliveryKind::Progress);
        if confirmed {
            if delivery.kind == DeliveryKind::Wake {
                status.wake_count = status.wake_count.saturating_add(1);
                // A settle wake waiting behind this one keeps the tasks this one did not carry.
                status.wake_tasks.retain(|t| !delivery.task_ids.contains(&t.task_id));
            }
            if delivery.kind == DeliveryKind::Progress {
                status.progress_count = status.progress_count.saturating_add(1);
            } else {
                status.last_wake = Some(LastWake { at: now, kind: delivery.kind, id: delivery.id.clone() });
            }
            for id in &delivery.task_ids {
                if !status.ack_due.contains(id) {
                    status.ack_due.push(id.clone());
                }
            }
        }
        if let Some(scheduler) = status.scheduler.as_mut().filter(|_| scheduled) {
            let input = if resolution.retryable() { SchedulerInput::DeliveryFailed } else { SchedulerInput::DeliveryConfirmed };
            scheduler.handle(now, input);
        }
        if confirmed && !delivery.task_ids.is_empty() {
            self.send_due_acks(&key);
        }
        self.drain_scheduler(now, &key);
    }

    /// Remembers the tasks of a confirmed delivery of `key` so no later wake carries them.
    fn remember_confirmed(&mut self, key: &str, task_ids: Vec<String>) {
        if task_ids.is_empty() {
            return;
        }
        let Some(session_ref) = self.bindings.list().find(|b| b.scope.key() == key).map(|b| browser_session_ref(&b.scope)) else {
            return;
        };
        let confirmed = self.confirmed_tasks.entry(session_ref).or_default();
        for id in task_ids {
            if !confirmed.contains(&id) {
                confirmed.push_back(id);
            }
        }
        while confirmed.len() > CONFIRMED_TASKS_KEPT {
            confirmed.pop_front();
        }
    }

    /// Moves the scope's confirmed-but-unacknowledged tasks to the per-session-ref list before
    /// its per-scope state is dropped or reset, and sends them when online.
    fn keep_orphan_acks(&mut self, scope: &Scope) {
        let Some(status) = self.scopes.get_mut(&scope.key()) else { return };
        if status.ack_due.is_empty() {
            return;
        }
        let ids = std::mem::take(&mut status.ack_due);
        let due = self.orphan_acks.entry(browser_session_ref(scope)).or_default();
        for id in ids {
            if !due.contains(&id) {
                due.push(id);
            }
        }
        self.send_orphan_acks();
    }

    /// Sends `inbox.ack` for every orphaned task (when online; offline they stay due).
    fn send_orphan_acks(&mut self) {
        if !self.link_up {
            return;
        }
        let pending: Vec<(String, Vec<String>)> =
            self.orphan_acks.iter().map(|(r, ids)| (r.clone(), ids.clone())).collect();
        for (session_ref, ids) in pending {
            for chunk in ids.chunks(100) {
                let task_ids = chunk.to_vec();
                self.call(
                    Purpose::OrphanAck { session_ref: session_ref.clone(), task_ids: task_ids.clone() },
                    RuntimeCall::InboxAck { session_ref: session_ref.clone(), task_ids },
                );
            }
        }
    }

    /// Sends `inbox.ack` for the scope's confirmed-but-unacknowledged tasks (when online;
    /// offline they stay due and go out on the next link-up).
    fn send_due_acks(&mut self, key: &str) {
        if !self.link_up {
            return;
        }
        let Some(task_ids) = self.scopes.get(key).map(|s| s.ack_due.clone()).filter(|ids| !ids.is_empty()) else {
            return;
        };
        let Some(session_ref) = self.bindings.list().find(|b| b.scope.key() == key).map(|b| browser_session_ref(&b.scope)) else {
            return;
        };
        // inbox.ack takes at most 100 ids per call.
        for chunk in task_ids.chunks(100) {
            let task_ids = chunk.to_vec();
            self.call(
                Purpose::Ack { scope_key: key.to_owned(), task_ids: task_ids.clone() },
                RuntimeCall::InboxAck { session_ref: session_ref.clone(), task_ids },
            );
        }
    }

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
        let status = scope.as_ref().and_then(|s| self.scopes.get(&s.key()));
        let pending = self.bindings.pending_for(tab).map(|p| WorkspaceRef { workspace_id: p.workspace_id.clone(), label: p.label.clone(), in_catalog: true });
        let auto = scope.as_ref().map_or(AutoState::Off, |s| self.auto.state(s));
        let auto_note = match auto {
            AutoState::ProjectAutoNotAllowed => Some(self.withheld_text(WakeWithheld::ProjectAutoNotAllowed)),
            _ if matches!(scope, Some(Scope::Project { .. })) && !self.auto.allow_project_auto() => {
                Some(self.withheld_text(WakeWithheld::ProjectAutoNotAllowed))
            }
            _ => None,
        };
        let (scope_state, working_panes) = match binding {
            Some(b) if self.tracker.is_working(&b.workspace_id) => ("working", self.tracker.working_panes(&b.workspace_id)),
            Some(_) if status.is_some_and(|s| s.settled_once) => ("settled", 0),
            _ => ("idle", 0),
        };
        let withheld = status
            .and_then(|s| s.scheduler.as_ref())
            .and_then(WakeScheduler::withheld)
            .filter(|_| binding.is_some())
            .map(|reason| Withheld { code: reason, text: self.withheld_text(reason) });
        let mut actions = vec![ViewAction::new("toggle_auto", self.auto.hud_action(&page, HudAction::ToggleAuto))];
        if page.has_composer_target() {
            for (id, action) in [("continue", HudAction::Continue), ("check_herdr", HudAction::CheckHerdr), ("llm_judge", HudAction::LlmJudge)] {
                actions.push(ViewAction::new(id, self.auto.hud_action(&page, action)));
            }
        }
        Some(ContinuityView {
            page_kind,
            scope_key: scope.as_ref().map(Scope::key),
            session_ref: scope.as_ref().map(browser_session_ref),
            binding: binding.map(|b| WorkspaceRef { workspace_id: b.workspace_id.clone(), label: b.label.clone(), in_catalog: b.workspace_in_catalog }),
            pending_binding: pending,
            active_target: binding.and_then(|b| match b.scope {
                Scope::Project { .. } => b.active_conv_key.clone(),
                Scope::Conversation { .. } => None,
            }),
            auto: match auto {
                AutoState::On => "on",
                AutoState::Off => "off",
                AutoState::ProjectAutoNotAllowed => "not_allowed",
            },
            auto_note,
            scope_state,
            working_panes,
            tasks: status.and_then(|s| s.counts).filter(|_| !status.is_some_and(|s| s.inbox_missing)),
            inbox_missing: status.is_some_and(|s| s.inbox_missing),
            last_wake: status.and_then(|s| s.last_wake.clone()),
            wake_count: status.map_or(0, |s| s.wake_count),
            progress_count: status.map_or(0, |s| s.progress_count),
            in_flight: scope.as_ref().and_then(|s| self.ledger.active_for(&s.key())).map(|d| d.id.clone()),
            withheld,
            actions,
        })
    }

    /// What the side panel shows for `tab` (the tab it is about, if any).
    pub fn panel_view(&self, tab: Option<TabId>) -> PanelView {
        let tab_view = tab.and_then(|tab| {
            let report = self.pages.get(&tab)?;
            let page = classify_url(&report.url);
            let (bindable, reason) = match &page {
                PageKind::Unsupported { reason } => (false, Some(reason.message().to_owned())),
                _ => (true, None),
            };
            Some(PanelTab {
                tab_id: tab,
                url: report.url.clone(),
                scope_key: page.scope().map(|s| s.key()),
                session_ref: page.scope().as_ref().map(browser_session_ref),
                bound_to: page.scope().and_then(|s| self.bindings.binding_for(&s).map(|b| b.workspace_id.clone())).or_else(|| self.bindings.pending_for(tab).map(|p| p.workspace_id.clone())),
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

/// The task-facts paragraph of a wake (I2): what each terminal task of this chat did.
pub fn task_facts(language: Language, tasks: &[InboxTask], inbox_missing: bool) -> String {
    if inbox_missing {
        return match language {
            Language::En => "\n(The companion has no parent inbox: task results are not included. Update the companion.)".to_owned(),
            Language::Zh => "\n（companion 没有父收件箱：不包含任务结果。请更新 companion。）".to_owned(),
        };
    }
    if tasks.is_empty() {
        return String::new();
    }
    let mut out = match language {
        Language::En => format!("\nTerminal tasks of this chat ({}):", tasks.len()),
        Language::Zh => format!("\n此会话已结束的任务（{}）：", tasks.len()),
    };
    for task in tasks {
        let result = task.result.as_deref().unwrap_or_default();
        let (status, output) = result.split_once('\n').unwrap_or((result, ""));
        let status = bounded(&one_line(status), 120);
        out.push_str(&format!("\n- {} [{}] pane {}: {}", task.task_id, task.state, task.pane_id, bounded(&one_line(&task.prompt_preview), 120)));
        if !status.is_empty() {
            out.push_str(&format!(" → {status}"));
        }
        // Each output line on a line of its own (the page inserts them as paragraphs),
        // quoted with "| " (no leading spaces: a composer turns them into NBSPs).
        for line in last_lines(output, TASK_RESULT_MAX_CHARS) {
            out.push_str(&format!("\n| {line}"));
        }
    }
    out
}

/// `text` with every whitespace run (newlines included) turned into one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The last non-empty lines of `text` (trimmed) whose characters add up to at most
/// `max_chars`; a last line longer than that is cut at its start (`…` marks the cut).
pub fn last_lines(text: &str, max_chars: usize) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    let mut used = 0;
    for line in text.lines().rev().map(str::trim).filter(|l| !l.is_empty()) {
        let len = line.chars().count();
        if used + len <= max_chars {
            used += len;
            kept.push(line.to_owned());
            continue;
        }
        if kept.is_empty() {
            let tail: String = line.chars().skip(len - max_chars.saturating_sub(1)).collect();
            kept.push(format!("…{tail}"));
        }
        break;
    }
    kept.reverse();
    kept
}

/// The progress summary of `workspace_id` (P4): for each of its panes (ordered by id)
/// whose latest output differs from the episode's baseline, a `pane (agent):` line and the
/// last [`PROGRESS_LINES_PER_PANE`] non-empty lines of output (each ≤
/// [`PROGRESS_LINE_MAX_CHARS`]); ≤ [`PROGRESS_SUMMARY_MAX_CHARS`] in total. `None` when no
/// pane has new output. Deterministic, so equal output gives an equal summary (dedup).
pub fn progress_summary(workspace_id: &str, outputs: &BTreeMap<String, PaneOutput>) -> Option<String> {
    let mut blocks = Vec::new();
    for (pane_id, output) in outputs {
        if output.workspace_id != workspace_id || output.tail == output.baseline {
            continue;
        }
        let lines: Vec<&str> = output.tail.lines().map(str::trim_end).filter(|l| !l.trim().is_empty()).collect();
        if lines.is_empty() {
            continue;
        }
        let agent = output.agent.as_deref().unwrap_or("no agent");
        let mut block = format!("{pane_id} ({agent}):");
        for line in &lines[lines.len().saturating_sub(PROGRESS_LINES_PER_PANE)..] {
            block.push('\n');
            block.push_str(&bounded(line.trim(), PROGRESS_LINE_MAX_CHARS));
        }
        blocks.push(block);
    }
    (!blocks.is_empty()).then(|| bounded(&blocks.join("\n"), PROGRESS_SUMMARY_MAX_CHARS))
}

/// The Check Herdr text: one block per pane, bounded in total.
pub fn check_herdr_summary(workspace_id: &str, panes: &[PaneInfo], texts: &BTreeMap<String, String>) -> String {
    let mut out = format!("[Herdr check] Workspace {workspace_id}: {} pane(s).", panes.len());
    for pane in panes {
        let agent = pane.agent.as_deref().unwrap_or("no agent");
        out.push_str(&format!("\n## {} ({agent}, {})", pane.pane_id, pane.agent_status));
        if let Some(text) = texts.get(&pane.pane_id) {
            out.push('\n');
            out.push_str(text.trim_end());
        }
    }
    bounded(&out, CHECK_HERDR_MAX_CHARS)
}

/// At most `max` characters; a cut text ends with `…`.
fn bounded(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// A workspace as the HUD shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkspaceRef {
    /// Id (identity).
    pub workspace_id: String,
    /// Label (display).
    pub label: String,
    /// Whether the live catalog lists it.
    pub in_catalog: bool,
}

/// Why nothing is sent now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Withheld {
    /// The reason code.
    pub code: WakeWithheld,
    /// What happened and what to do.
    pub text: String,
}

/// One HUD button.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ViewAction {
    /// Wire action name.
    pub id: &'static str,
    /// Why it is locked, if it is.
    pub locked: Option<LockedWhy>,
}

/// A locked button's reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LockedWhy {
    /// The code.
    pub code: crate::auto_gate::ActionLocked,
    /// What happened and what to do.
    pub text: &'static str,
}

impl ViewAction {
    fn new(id: &'static str, allowed: Result<(), crate::auto_gate::ActionLocked>) -> Self {
        ViewAction {
            id,
            locked: allowed.err().map(|code| LockedWhy { code, text: code.message() }),
        }
    }
}

/// The continuity part of a page's HUD.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContinuityView {
    /// `root | project_home | project_chat | chat`.
    pub page_kind: &'static str,
    /// The page's scope key.
    pub scope_key: Option<String>,
    /// The scope's `browser_session_ref` (for `herdr_prompt`).
    pub session_ref: Option<String>,
    /// The scope's binding.
    pub binding: Option<WorkspaceRef>,
    /// Root page: the tab's pending binding (B4).
    pub pending_binding: Option<WorkspaceRef>,
    /// Project: the conversation receiving messages (B3).
    pub active_target: Option<String>,
    /// `on | off | not_allowed`.
    pub auto: &'static str,
    /// Why Project Auto is unavailable, if it is.
    pub auto_note: Option<String>,
    /// `idle | working | settled`.
    pub scope_state: &'static str,
    /// Panes working now.
    pub working_panes: u32,
    /// Inbox counters.
    pub tasks: Option<TaskCounts>,
    /// The companion lacks the parent inbox.
    pub inbox_missing: bool,
    /// The last confirmed message.
    pub last_wake: Option<LastWake>,
    /// Confirmed wakes since binding.
    pub wake_count: u32,
    /// Confirmed progress messages since binding.
    pub progress_count: u32,
    /// The delivery awaiting confirmation.
    pub in_flight: Option<String>,
    /// Why the next message would not be sent now.
    pub withheld: Option<Withheld>,
    /// Buttons.
    pub actions: Vec<ViewAction>,
}

/// The side panel's view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Why not.
    pub reason: Option<String>,
}

/// One binding row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
