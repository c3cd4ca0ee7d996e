//! Herdr 0.8.2 wire shapes: the typed request params the stand-in accepts and the
//! info objects it answers with.
//!
//! Invariants:
//! - One-shot responses keep Herdr's *struct* field order (as recorded in
//!   `../shared/herdr/transcript.md`); they are serialized from the structs below, never
//!   through a `serde_json::Value` (whose map sorts keys).
//! - Subscription events are written through `serde_json::Value`, so their keys come out
//!   sorted, exactly as Herdr's events do in the transcript.
//! - A request line that does not deserialize is answered with `"id":""` and code
//!   `invalid_request` (Herdr reports serde errors before it knows the id).

use continuity_protocol::herdr::HerdrErrorCode;
use serde::{Deserialize, Serialize};

/// Herdr's `AgentStatus`. `done` is never reported by a client: Herdr derives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// The agent waits for input and the user has seen it.
    Idle,
    /// The agent is busy.
    Working,
    /// The agent needs a human (permission prompt, question).
    Blocked,
    /// Idle, but the pane has not been seen since (Herdr derives this).
    Done,
    /// No agent, or its state is not known.
    #[default]
    Unknown,
}

impl AgentStatus {
    /// Rank used to aggregate a tab's / workspace's status from its panes (highest wins).
    pub fn attention_rank(self) -> u8 {
        match self {
            AgentStatus::Unknown => 0,
            AgentStatus::Idle => 1,
            AgentStatus::Done => 2,
            AgentStatus::Working => 3,
            AgentStatus::Blocked => 4,
        }
    }
}

/// The `state` a client may report with `pane.report_agent` (no `done`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PaneAgentState {
    /// See [`AgentStatus::Idle`].
    Idle,
    /// See [`AgentStatus::Working`].
    Working,
    /// See [`AgentStatus::Blocked`].
    Blocked,
    /// See [`AgentStatus::Unknown`].
    Unknown,
}

/// `pane.read` sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadSource {
    /// The rows on screen.
    Visible,
    /// Screen plus scrollback, wrapped.
    Recent,
    /// Screen plus scrollback, soft wraps joined.
    RecentUnwrapped,
    /// What agent detection looks at.
    Detection,
}

/// `pane.read` formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ReadFormat {
    /// Plain text, `\n` between rows.
    #[default]
    Text,
    /// Terminal text, `\r\n` between rows.
    Ansi,
}

/// Params of `workspace.create`.
#[derive(Debug, Deserialize, Default)]
pub struct WorkspaceCreateParams {
    /// Display label.
    pub label: Option<String>,
    /// Working directory of the root pane.
    pub cwd: Option<String>,
    /// Focus the new workspace.
    #[serde(default)]
    pub focus: bool,
}

/// Params of `tab.create`.
#[derive(Debug, Deserialize)]
pub struct TabCreateParams {
    /// Workspace to add the tab to (default: the focused one).
    pub workspace_id: Option<String>,
    /// Display label.
    pub label: Option<String>,
    /// Working directory of the root pane.
    pub cwd: Option<String>,
    /// Make it the active tab.
    #[serde(default)]
    pub focus: bool,
}

/// Params of `pane.split`.
#[derive(Debug, Deserialize)]
pub struct PaneSplitParams {
    /// Pane to split.
    pub target_pane_id: Option<String>,
    /// `right` or `down`.
    pub direction: String,
    /// Focus the new pane.
    #[serde(default)]
    pub focus: bool,
    /// Working directory of the new pane.
    pub cwd: Option<String>,
}

/// Params naming one pane.
#[derive(Debug, Deserialize)]
pub struct PaneTarget {
    /// The pane.
    pub pane_id: String,
}

/// Params naming one workspace.
#[derive(Debug, Deserialize)]
pub struct WorkspaceTarget {
    /// The workspace.
    pub workspace_id: String,
}

/// Params with an optional workspace filter (`pane.list`, `tab.list`).
#[derive(Debug, Deserialize, Default)]
pub struct WorkspaceFilter {
    /// Only this workspace.
    pub workspace_id: Option<String>,
}

/// Params naming an agent target (`agent.get`).
#[derive(Debug, Deserialize)]
pub struct AgentTarget {
    /// A pane id.
    pub target: String,
}

/// Params of `agent.prompt` (the stand-in answers only the no-`wait` form).
#[derive(Debug, Deserialize)]
pub struct AgentPromptParams {
    /// A pane id.
    pub target: String,
    /// The prompt text, typed into the pane followed by enter.
    pub text: String,
    /// Herdr's optional built-in wait; the stand-in refuses it (not implemented).
    #[serde(default)]
    pub wait: Option<serde_json::Value>,
}

/// Params of `pane.read`.
#[derive(Debug, Deserialize)]
pub struct PaneReadParams {
    /// The pane.
    pub pane_id: String,
    /// Which rows.
    pub source: ReadSource,
    /// How many rows, counted from the bottom.
    pub lines: Option<u32>,
    /// Text or ANSI.
    #[serde(default)]
    pub format: ReadFormat,
}

/// Params of `pane.send_input` / `pane.send_text` / `pane.send_keys`.
#[derive(Debug, Deserialize)]
pub struct PaneSendInputParams {
    /// The pane.
    pub pane_id: String,
    /// Text to type.
    #[serde(default)]
    pub text: String,
    /// Keys pressed after the text (`enter` ends the line).
    #[serde(default)]
    pub keys: Vec<String>,
}

/// Params of `pane.report_agent`.
#[derive(Debug, Deserialize)]
pub struct PaneReportAgentParams {
    /// The pane.
    pub pane_id: String,
    /// Reporter, e.g. `custom:peer`.
    pub source: String,
    /// Agent name.
    pub agent: String,
    /// Reported state.
    pub state: PaneAgentState,
    /// Free text (kept, not shown).
    pub message: Option<String>,
}

/// Params of `pane.release_agent`.
#[derive(Debug, Deserialize)]
pub struct PaneReleaseAgentParams {
    /// The pane.
    pub pane_id: String,
    /// Reporter.
    pub source: String,
    /// Agent name.
    pub agent: String,
}

/// Params of `events.subscribe`.
#[derive(Debug, Deserialize)]
pub struct EventsSubscribeParams {
    /// What to stream.
    pub subscriptions: Vec<Subscription>,
}

/// One subscription as sent. Herdr's schema makes `pane_id` required for the per-pane
/// kinds (`pane.agent_status_changed`, `pane.output_matched`); the model checks that.
#[derive(Debug, Clone, Deserialize)]
pub struct Subscription {
    /// The dotted kind, e.g. `workspace.created` or `pane.agent_status_changed`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The pane, for per-pane kinds.
    pub pane_id: Option<String>,
    /// Only this status (for `pane.agent_status_changed`).
    pub agent_status: Option<AgentStatus>,
}

/// Stand-in only: write raw lines to every open subscription (tests of junk handling).
#[derive(Debug, Deserialize)]
pub struct InjectLinesParams {
    /// Lines written verbatim (a `\n` is added after each).
    pub lines: Vec<String>,
    /// Also write one line of this many bytes (requests themselves are capped at 1 MiB).
    #[serde(default)]
    pub oversized_bytes: Option<usize>,
}

/// `WorkspaceInfo`.
#[derive(Debug, Clone, Serialize)]
pub struct WorkspaceInfo {
    /// Id, e.g. `w1`.
    pub workspace_id: String,
    /// 1-based position.
    pub number: u32,
    /// Display label.
    pub label: String,
    /// Whether this is the focused workspace.
    pub focused: bool,
    /// Panes in all tabs.
    pub pane_count: u32,
    /// Tabs.
    pub tab_count: u32,
    /// Active tab.
    pub active_tab_id: String,
    /// Aggregated status of its panes.
    pub agent_status: AgentStatus,
}

/// `TabInfo`.
#[derive(Debug, Clone, Serialize)]
pub struct TabInfo {
    /// Id, e.g. `w1:t1`.
    pub tab_id: String,
    /// Owner.
    pub workspace_id: String,
    /// 1-based position.
    pub number: u32,
    /// Display label.
    pub label: String,
    /// Whether this is its workspace's active tab.
    pub focused: bool,
    /// Panes.
    pub pane_count: u32,
    /// Aggregated status of its panes.
    pub agent_status: AgentStatus,
}

/// Scroll state of a pane.
#[derive(Debug, Clone, Serialize)]
pub struct ScrollInfo {
    /// Rows scrolled up.
    pub offset_from_bottom: u32,
    /// Scrollback rows available.
    pub max_offset_from_bottom: u32,
    /// Screen height.
    pub viewport_rows: u32,
}

/// `PaneInfo`.
#[derive(Debug, Clone, Serialize)]
pub struct PaneInfo {
    /// Id, e.g. `w1:p1`.
    pub pane_id: String,
    /// Terminal id.
    pub terminal_id: String,
    /// Owner workspace.
    pub workspace_id: String,
    /// Owner tab.
    pub tab_id: String,
    /// Whether the user looks at it.
    pub focused: bool,
    /// Shell cwd.
    pub cwd: String,
    /// Foreground process cwd.
    pub foreground_cwd: String,
    /// Agent name, present only when an agent is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Agent status.
    pub agent_status: AgentStatus,
    /// Scroll state.
    pub scroll: ScrollInfo,
    /// Output revision.
    pub revision: u64,
}

/// `AgentInfo`.
#[derive(Debug, Clone, Serialize)]
pub struct AgentInfo {
    /// Terminal id.
    pub terminal_id: String,
    /// Agent name.
    pub agent: String,
    /// Agent status.
    pub agent_status: AgentStatus,
    /// Owner workspace.
    pub workspace_id: String,
    /// Owner tab.
    pub tab_id: String,
    /// Pane.
    pub pane_id: String,
    /// Whether the user looks at it.
    pub focused: bool,
    /// Global status-change counter value at its last change.
    pub state_change_seq: u64,
    /// Shell cwd.
    pub cwd: String,
    /// Foreground process cwd.
    pub foreground_cwd: String,
    /// Output revision.
    pub revision: u64,
}

/// `PaneReadResult`.
#[derive(Debug, Clone, Serialize)]
pub struct ReadInfo {
    /// Pane.
    pub pane_id: String,
    /// Owner workspace.
    pub workspace_id: String,
    /// Owner tab.
    pub tab_id: String,
    /// Source read.
    pub source: ReadSource,
    /// Format.
    pub format: ReadFormat,
    /// The text.
    pub text: String,
    /// Output revision.
    pub revision: u64,
    /// Whether rows were left out.
    pub truncated: bool,
}

/// A rectangle in terminal cells.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Rect {
    /// Column.
    pub x: u32,
    /// Row.
    pub y: u32,
    /// Columns.
    pub width: u32,
    /// Rows.
    pub height: u32,
}

/// One pane in a layout.
#[derive(Debug, Clone, Serialize)]
pub struct LayoutPane {
    /// Pane.
    pub pane_id: String,
    /// Whether it is the tab's focused pane.
    pub focused: bool,
    /// Where it is.
    pub rect: Rect,
}

/// One split in a layout.
#[derive(Debug, Clone, Serialize)]
pub struct LayoutSplit {
    /// Split id.
    pub id: String,
    /// `right` / `down`.
    pub direction: String,
    /// Share of the first child.
    pub ratio: f64,
    /// Area split.
    pub rect: Rect,
}

/// A tab's layout.
#[derive(Debug, Clone, Serialize)]
pub struct LayoutInfo {
    /// Owner workspace.
    pub workspace_id: String,
    /// Tab.
    pub tab_id: String,
    /// Zoomed.
    pub zoomed: bool,
    /// Tab area.
    pub area: Rect,
    /// Focused pane of the tab.
    pub focused_pane_id: String,
    /// Panes.
    pub panes: Vec<LayoutPane>,
    /// Splits.
    pub splits: Vec<LayoutSplit>,
}

/// Builds a JSON object whose keys keep insertion order (Herdr's struct order).
#[derive(Debug, Default)]
pub struct OrderedObject {
    text: String,
}

impl OrderedObject {
    /// An empty object.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `key: value` (value serialized with its own struct order).
    pub fn field<T: Serialize + ?Sized>(self, key: &str, value: &T) -> Self {
        let json = serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned());
        self.raw(key, &json)
    }

    /// Adds `key: <already serialized JSON>`.
    pub fn raw(mut self, key: &str, json: &str) -> Self {
        self.text.push(if self.text.is_empty() { '{' } else { ',' });
        self.text.push_str(&serde_json::to_string(key).unwrap_or_else(|_| "\"\"".to_owned()));
        self.text.push(':');
        self.text.push_str(json);
        self
    }

    /// The object's JSON text.
    pub fn finish(mut self) -> String {
        if self.text.is_empty() {
            self.text.push('{');
        }
        self.text.push('}');
        self.text
    }
}

/// `{"id":…,"result":…}` with the result already serialized.
pub fn result_line(id: &str, result_json: &str) -> String {
    OrderedObject::new().field("id", id).raw("result", result_json).finish()
}

/// `{"id":…,"error":{"code":…,"message":…}}`.
pub fn error_line(id: &str, code: HerdrErrorCode, message: &str) -> String {
    let error = OrderedObject::new().field("code", code.as_str()).field("message", message).finish();
    OrderedObject::new().field("id", id).raw("error", &error).finish()
}
