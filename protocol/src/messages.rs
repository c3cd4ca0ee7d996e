//! The three message shapes and the typed params, results and event payloads of every
//! runtime method (docs/PROTOCOL.md "Messages", "Event stream", "Parent inbox").
//!
//! Serializing any of these through `serde_json::Value` (whose map sorts keys, as the
//! companion's lines always were) gives the bytes the runtime sends; optional *params* that
//! are absent are left out, optional *result* fields are `null`, as documented.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::handoff::{HandoffPrepareParams, PreparedHandoff};
use crate::journal::{
    ChainCandidate, ContinuityAppendParams, ContinuityListParams, ContinuityResolveParams, ContinuityResumeParams, ContinuitySearchParams,
    JournalTurn, Resolution,
};
use crate::names::{
    BridgeDecision, BridgeState, ErrorCode, EventName, GuidanceKind, HerdrState, HostErrorCode, Method, ResultType, TaskState, TaskTrigger,
};
use crate::tools::ToolName;

/// A request as it travels: `{"id", "method", "params"}`; `params` `{}` when absent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Caller-chosen id, 1..=64 chars ([`crate::limits::is_request_id`]), echoed in the
    /// response.
    pub id: String,
    /// The method.
    pub method: Method,
    /// The params object.
    #[serde(default)]
    pub params: Map<String, Value>,
}

impl Request {
    /// A request for `call` with id `id`.
    pub fn new(id: impl Into<String>, call: &Call) -> Self {
        Self { id: id.into(), method: call.method(), params: call.params() }
    }

    /// The params as the typed call of [`Self::method`].
    pub fn call(&self) -> Result<Call, serde_json::Error> {
        Call::from_parts(self.method, &self.params)
    }
}

/// A response: `{"id", "result"}` or `{"id", "error"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The request's id (`""` when it could not be read).
    pub id: String,
    /// The outcome.
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// What a response carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// `"result": {"type": …, …}`.
    Result(MethodResult),
    /// `"error": {"code", "message"}`.
    Error(ErrorBody),
}

/// `{"code", "message"}` of an error response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What kind of failure.
    pub code: ErrorCode,
    /// What happened and what to do.
    pub message: String,
}

/// Any message of the runtime protocol, told apart by its keys (`method` → request,
/// `event` → event, otherwise a response).
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// Extension → runtime.
    Request(Request),
    /// Runtime → extension.
    Response(Response),
    /// Runtime or host → extension.
    Event(Event),
}

impl Message {
    /// Reads one message from its JSON.
    pub fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        let is = |key: &str| value.get(key).is_some();
        if is("method") {
            serde_json::from_value(value).map(Message::Request)
        } else if is("event") {
            serde_json::from_value(value).map(Message::Event)
        } else {
            serde_json::from_value(value).map(Message::Response)
        }
    }

    /// The message's JSON.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        match self {
            Message::Request(m) => serde_json::to_value(m),
            Message::Response(m) => serde_json::to_value(m),
            Message::Event(m) => serde_json::to_value(m),
        }
    }
}

/// `{}`: the params of a method that takes none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoParams {}

/// Params of `hello`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelloParams {
    /// The extension's version.
    pub extension_version: String,
    /// The protocol integer ([`crate::PROTOCOL_VERSION`]).
    pub protocol: u64,
    /// The runtime capabilities the extension needs ([`crate::CAPABILITIES`] names); absent
    /// from an extension older than protocol 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires: Option<Vec<String>>,
}

/// Params of `events.subscribe`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscribeParams {
    /// Replay stored events with a greater `seq`; absent = only live events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_seq: Option<u64>,
    /// The log the `after_seq` belongs to (1..64 chars).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_id: Option<String>,
}

/// Params of `herdr.panes`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PanesParams {
    /// Only this workspace's panes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
}

/// Params of `herdr.pane_read`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneReadParams {
    /// The pane.
    pub pane_id: String,
    /// Rows from the bottom, 1..=200 (default 80).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<u64>,
}

/// Params of `task.dispatch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DispatchParams {
    /// The chat's stable ref.
    pub browser_session_ref: String,
    /// Target workspace.
    pub workspace_id: String,
    /// Target pane.
    pub pane_id: String,
    /// The prompt (non-empty, ≤ 64 KiB).
    pub prompt: String,
    /// The chat turn, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
}

/// Params of `task.list`, `inbox.pending`, `inbox.counts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionParams {
    /// The chat's stable ref (1–256 chars).
    pub browser_session_ref: String,
}

/// Params of `inbox.ack`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckParams {
    /// The chat's stable ref.
    pub browser_session_ref: String,
    /// 1..100 task ids.
    pub task_ids: Vec<String>,
}

/// Params of `goal.set`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalSetParams {
    /// The chat's stable ref (the scope).
    pub browser_session_ref: String,
    /// The goal (at most `work_memory::MAX_GOAL_BYTES`); `""` clears it.
    pub goal: String,
}

/// Params of `goal.evidence`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalEvidenceParams {
    /// The chat's stable ref (the scope).
    pub browser_session_ref: String,
    /// The workspace the chat is bound to, whose agents' state is reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
}

/// Params of `judge.turn_end`: the turn to judge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgeTurnEndParams {
    /// The user's message that started the turn (may be empty).
    #[serde(default)]
    pub user_text: String,
    /// The assistant's final reply of the turn.
    pub assistant_text: String,
    /// The chat it belongs to (its `browser_session_ref`), named in the runtime log.
    pub conversation: String,
}

/// The five bounded goal-mode priors a decision route may also answer (SPEC J7); each a
/// probability in [0, 1], `null` when the route did not give it. Advice only: they never
/// decide a verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GoalPriors {
    /// The assistant can go on by itself.
    pub can_continue: Option<f64>,
    /// A human has to act or decide.
    pub needs_human: Option<f64>,
    /// Something outside the chat (an agent, CI) is still running.
    pub waiting_external: Option<f64>,
    /// The task the user asked for is complete.
    pub task_completed: Option<f64>,
    /// The chat should hand off to a new conversation.
    pub needs_handoff: Option<f64>,
}

/// A method with its typed params.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    /// `hello`.
    Hello(HelloParams),
    /// `ping`.
    Ping(NoParams),
    /// `herdr.status`.
    HerdrStatus(NoParams),
    /// `events.subscribe`.
    EventsSubscribe(SubscribeParams),
    /// `herdr.workspaces`.
    HerdrWorkspaces(NoParams),
    /// `herdr.panes`.
    HerdrPanes(PanesParams),
    /// `herdr.agents`.
    HerdrAgents(NoParams),
    /// `herdr.pane_read`.
    HerdrPaneRead(PaneReadParams),
    /// `task.dispatch`.
    TaskDispatch(DispatchParams),
    /// `task.list`.
    TaskList(SessionParams),
    /// `inbox.pending`.
    InboxPending(SessionParams),
    /// `inbox.ack`.
    InboxAck(AckParams),
    /// `inbox.counts`.
    InboxCounts(SessionParams),
    /// `judge.turn_end`.
    JudgeTurnEnd(JudgeTurnEndParams),
    /// `goal.set`.
    GoalSet(GoalSetParams),
    /// `goal.evidence`.
    GoalEvidence(GoalEvidenceParams),
    /// `diagnostics.report`.
    DiagnosticsReport(DiagnosticsParams),
    /// `tools.list`.
    ToolsList(NoParams),
    /// `tools.call`.
    ToolsCall(ToolCallParams),
    /// `continuity.append`.
    ContinuityAppend(ContinuityAppendParams),
    /// `continuity.resolve`.
    ContinuityResolve(ContinuityResolveParams),
    /// `continuity.search`.
    ContinuitySearch(ContinuitySearchParams),
    /// `continuity.resume`.
    ContinuityResume(ContinuityResumeParams),
    /// `continuity.list`.
    ContinuityList(ContinuityListParams),
    /// `bridge.prompt`.
    BridgePrompt(BridgePromptParams),
    /// `bridge.reply`.
    BridgeReply(BridgeReplyParams),
    /// `bridge.delivered`.
    BridgeDelivered(BridgeDeliveredParams),
    /// `bridge.decide`.
    BridgeDecide(BridgeDecideParams),
    /// `herdr_mcp.browser_handoff.prepare`.
    BrowserHandoffPrepare(HandoffPrepareParams),
    /// `chats.report`.
    ChatsReport(ChatsReportParams),
    /// `profiles.get`.
    ProfilesGet(NoParams),
    /// `tools.audit`.
    ToolsAudit(ToolsAuditParams),
    /// `retention.get`.
    RetentionGet(NoParams),
    /// `retention.set`.
    RetentionSet(RetentionSetParams),
}

/// Params of `retention.set`: the limits to change (others keep their value).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionSetParams {
    /// `{journal_turns?, work_memory_turns?, bridge_result_days?, inbox_days?}`, each an
    /// integer within its bound (see `retention.bounds`).
    pub limits: Map<String, Value>,
}

/// The storage limits (`retention.limits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionLimits {
    /// Journal turns kept per chain before the oldest behind a verified checkpoint go.
    pub journal_turns: u64,
    /// Work Memory turns (and evidence items) kept per chain, likewise.
    pub work_memory_turns: u64,
    /// Days a delivered bridge results message is kept.
    pub bridge_result_days: u64,
    /// Days an acknowledged inbox task is kept.
    pub inbox_days: u64,
}

/// One limit's bound and default (`retention.bounds.<name>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionBound {
    /// Smallest allowed value.
    pub min: u64,
    /// Largest allowed value.
    pub max: u64,
    /// The value when none was set.
    pub default: u64,
}

/// One store's size (`retention.sizes[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionSize {
    /// `journal`, `work_memory`, `bridge_results` or `inbox`.
    pub store: String,
    /// Rows.
    pub rows: u64,
    /// Bytes of the stored texts.
    pub bytes: u64,
}

/// Params of `tools.audit`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsAuditParams {
    /// How many rows, newest first (1..=200; default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// Only rows older than this `seq` (the next page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<i64>,
}

/// One row of the tool audit log (`tools_audit.entries`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolAuditEntry {
    /// Its position in the log (newer is larger).
    pub seq: i64,
    /// When it was recorded (ms since the Unix epoch).
    pub at: i64,
    /// The tool, e.g. `herdr_exec`.
    pub tool: String,
    /// `mcp`, or `bridge:<browser_session_ref>` for a JSON-bridge chat.
    pub caller: String,
    /// The root it acted in (`""` when it was refused before one was known).
    pub root: String,
    /// The path, the command (as JSON), or the session id.
    pub target: String,
    /// `ok`, `failed`, `refused`, `replayed` or `interrupted`.
    pub outcome: String,
    /// One line: the exit code, what changed, or why it failed.
    pub detail: String,
}

/// One bound chat in `chats.report`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatFact {
    /// The chat's `browser_session_ref` (at most [`crate::limits::MAX_REF_CHARS`]).
    pub browser_session_ref: String,
    /// A page of the chat generates a reply right now.
    pub generating: bool,
}

/// Params of `chats.report`: the whole list of one extension's bound chats that have a tab
/// open (at most [`crate::limits::MAX_REPORTED_CHATS`]); it replaces that reporter's
/// previous list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatsReportParams {
    /// The reporting extension instance (its delivery ledger's epoch).
    pub reporter: String,
    /// The chats.
    pub chats: Vec<ChatFact>,
}

/// The client's `_meta` keys of an MCP `tools/call` that the runtime reads (ChatGPT sends
/// them; each a string of at most [`crate::limits::MAX_CLIENT_META_CHARS`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientMeta {
    /// `openai/session`: ChatGPT's conversation-scoped session id.
    #[serde(default, rename = "openai/session", skip_serializing_if = "Option::is_none")]
    pub openai_session: Option<String>,
    /// `openai/subject`: ChatGPT's id of the user.
    #[serde(default, rename = "openai/subject", skip_serializing_if = "Option::is_none")]
    pub openai_subject: Option<String>,
}

impl ClientMeta {
    /// The keys of an MCP request's `_meta` that matter: strings only, each cut to
    /// [`crate::limits::MAX_CLIENT_META_CHARS`] characters; anything else is left out.
    pub fn from_request_meta(meta: &Map<String, Value>) -> Self {
        let take = |key: &str| {
            meta.get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.trim().is_empty())
                .map(|s| s.chars().take(crate::limits::MAX_CLIENT_META_CHARS).collect())
        };
        Self { openai_session: take("openai/session"), openai_subject: take("openai/subject") }
    }

    /// True when no key is set.
    pub fn is_empty(&self) -> bool {
        self.openai_session.is_none() && self.openai_subject.is_none()
    }
}

/// Params of `bridge.prompt`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BridgePromptParams {
    /// The chat's `browser_session_ref`, named in the prompt so `herdr_prompt` reports back
    /// to it (left out: the prompt does not name one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser_session_ref: Option<String>,
}

/// Params of `bridge.reply`: one assistant reply of a z.ai / DeepSeek chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BridgeReplyParams {
    /// The chat (`<site>:<conversation id>`, e.g. `zai:7c1d…`).
    pub conversation: String,
    /// The reply's message id on the page (`""` when the page shows none: the reply's text
    /// stands in for it).
    #[serde(default)]
    pub message_id: String,
    /// The reply's text as the page shows it.
    pub text: String,
    /// Whether the page has finished writing the reply.
    pub finished: bool,
    /// The workspace the chat is bound to: every call of this chat is confined to it (a
    /// bridge caller reaches only its panes). Required and non-empty (the runtime answers
    /// `bad_request` without it); `""` when absent so that answer can say what to send.
    #[serde(default)]
    pub workspace_id: String,
    /// The chat's Auto: only read-only calls may run without the user's click, and only
    /// when this is true.
    #[serde(default)]
    pub auto: bool,
    /// The id of the chat's newest human user turn (the page's message id, or a stable hash
    /// of its text): tool rounds are counted per (conversation, human_turn).
    #[serde(default)]
    pub human_turn: String,
}

/// Params of `bridge.decide`: the user's trusted Run / Skip for one call of a batch that
/// waits for approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BridgeDecideParams {
    /// The chat (the `conversation` of its `bridge.reply`).
    pub conversation: String,
    /// The batch (`bridge:<16 hex>`, the `delivery_id` of the `approval` answer).
    pub batch_id: String,
    /// The call's 1-based position in the batch.
    pub call: u64,
    /// Run it or skip it.
    pub decision: BridgeDecision,
}

/// One call of a batch that waits for the user (`bridge_reply.pending`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingCall {
    /// Its 1-based position in the batch.
    pub call: u64,
    /// The tool.
    pub tool: String,
    /// `herdr_call`'s method or a runtime-local method, else `null`.
    pub method: Option<String>,
    /// The pane, workspace or conversation the call acts on, else `null`.
    pub target: Option<String>,
    /// The first [`crate::limits::MAX_ARGS_PREVIEW_CHARS`] characters of its args JSON.
    pub args_preview: String,
    /// True when it types, prompts or writes (it needs a click every time).
    pub mutating: bool,
    /// What the call would type or send, decoded: for `herdr_call` `pane.send_text` /
    /// `pane.send_keys` / `pane.send_input` the params' `text` and `keys`, for
    /// `herdr_prompt` its `text`, else the args JSON. At most
    /// [`crate::limits::MAX_PENDING_DETAIL_CHARS`] characters.
    #[serde(default)]
    pub detail: String,
    /// How many characters of the detail were left out (0 when `detail` is whole).
    #[serde(default)]
    pub detail_more: u64,
}

/// Tool rounds of a chat since its user's newest message (`bridge_reply.rounds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BridgeRounds {
    /// Rounds that reached their results message.
    pub used: u64,
    /// The bound ([`crate::limits::MAX_ROUNDS_PER_HUMAN_TURN`]).
    pub limit: u64,
}

/// Params of `bridge.delivered`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BridgeDeliveredParams {
    /// The `delivery_id` of a `bridge_reply`.
    pub delivery_id: String,
}

/// Params of `tools.call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallParams {
    /// The tool's name (a [`ToolName`]; another string is answered `unknown_tool`).
    pub tool: String,
    /// The tool's arguments (at most [`crate::tools::MAX_TOOL_ARGUMENTS_BYTES`] of JSON).
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// The MCP request's client `_meta` keys that attribute a `herdr_prompt` to a chat
    /// (absent when the client sent none).
    #[serde(default, rename = "_meta", skip_serializing_if = "ClientMeta::is_empty")]
    pub meta: ClientMeta,
}

/// One planner tool as `tools.list` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool.
    pub name: ToolName,
    /// A short human title.
    pub title: String,
    /// What it does and when to use it (shown to the model).
    pub description: String,
    /// The JSON Schema of its arguments (an object schema).
    pub input_schema: Value,
    /// True when it changes nothing.
    pub read_only: bool,
}

/// Params of `diagnostics.report`: the page diagnostics as the extension validated them
/// (docs/PROTOCOL.md "Site profiles and page diagnostics"; at most
/// [`crate::limits::MAX_DIAGNOSTICS_BYTES`] of JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiagnosticsParams {
    /// The `page_diagnostics` object, without its `type`.
    pub diagnostics: Value,
}

impl Call {
    /// Reads `params` as the params of `method`.
    pub fn from_parts(method: Method, params: &Map<String, Value>) -> Result<Self, serde_json::Error> {
        fn typed<T: serde::de::DeserializeOwned>(params: &Map<String, Value>) -> Result<T, serde_json::Error> {
            serde_json::from_value(Value::Object(params.clone()))
        }
        Ok(match method {
            Method::Hello => Call::Hello(typed(params)?),
            Method::Ping => Call::Ping(typed(params)?),
            Method::HerdrStatus => Call::HerdrStatus(typed(params)?),
            Method::EventsSubscribe => Call::EventsSubscribe(typed(params)?),
            Method::HerdrWorkspaces => Call::HerdrWorkspaces(typed(params)?),
            Method::HerdrPanes => Call::HerdrPanes(typed(params)?),
            Method::HerdrAgents => Call::HerdrAgents(typed(params)?),
            Method::HerdrPaneRead => Call::HerdrPaneRead(typed(params)?),
            Method::TaskDispatch => Call::TaskDispatch(typed(params)?),
            Method::TaskList => Call::TaskList(typed(params)?),
            Method::InboxPending => Call::InboxPending(typed(params)?),
            Method::InboxAck => Call::InboxAck(typed(params)?),
            Method::InboxCounts => Call::InboxCounts(typed(params)?),
            Method::JudgeTurnEnd => Call::JudgeTurnEnd(typed(params)?),
            Method::GoalSet => Call::GoalSet(typed(params)?),
            Method::GoalEvidence => Call::GoalEvidence(typed(params)?),
            Method::DiagnosticsReport => Call::DiagnosticsReport(typed(params)?),
            Method::ToolsList => Call::ToolsList(typed(params)?),
            Method::ToolsCall => Call::ToolsCall(typed(params)?),
            Method::ContinuityAppend => Call::ContinuityAppend(typed(params)?),
            Method::ContinuityResolve => Call::ContinuityResolve(typed(params)?),
            Method::ContinuitySearch => Call::ContinuitySearch(typed(params)?),
            Method::ContinuityResume => Call::ContinuityResume(typed(params)?),
            Method::ContinuityList => Call::ContinuityList(typed(params)?),
            Method::BridgePrompt => Call::BridgePrompt(typed(params)?),
            Method::BridgeReply => Call::BridgeReply(typed(params)?),
            Method::BridgeDelivered => Call::BridgeDelivered(typed(params)?),
            Method::BridgeDecide => Call::BridgeDecide(typed(params)?),
            Method::BrowserHandoffPrepare => Call::BrowserHandoffPrepare(typed(params)?),
            Method::ChatsReport => Call::ChatsReport(typed(params)?),
            Method::ProfilesGet => Call::ProfilesGet(typed(params)?),
            Method::ToolsAudit => Call::ToolsAudit(typed(params)?),
            Method::RetentionGet => Call::RetentionGet(typed(params)?),
            Method::RetentionSet => Call::RetentionSet(typed(params)?),
        })
    }

    /// The method.
    pub fn method(&self) -> Method {
        match self {
            Call::Hello(_) => Method::Hello,
            Call::Ping(_) => Method::Ping,
            Call::HerdrStatus(_) => Method::HerdrStatus,
            Call::EventsSubscribe(_) => Method::EventsSubscribe,
            Call::HerdrWorkspaces(_) => Method::HerdrWorkspaces,
            Call::HerdrPanes(_) => Method::HerdrPanes,
            Call::HerdrAgents(_) => Method::HerdrAgents,
            Call::HerdrPaneRead(_) => Method::HerdrPaneRead,
            Call::TaskDispatch(_) => Method::TaskDispatch,
            Call::TaskList(_) => Method::TaskList,
            Call::InboxPending(_) => Method::InboxPending,
            Call::InboxAck(_) => Method::InboxAck,
            Call::InboxCounts(_) => Method::InboxCounts,
            Call::JudgeTurnEnd(_) => Method::JudgeTurnEnd,
            Call::GoalSet(_) => Method::GoalSet,
            Call::GoalEvidence(_) => Method::GoalEvidence,
            Call::DiagnosticsReport(_) => Method::DiagnosticsReport,
            Call::ToolsList(_) => Method::ToolsList,
            Call::ToolsCall(_) => Method::ToolsCall,
            Call::ContinuityAppend(_) => Method::ContinuityAppend,
            Call::ContinuityResolve(_) => Method::ContinuityResolve,
            Call::ContinuitySearch(_) => Method::ContinuitySearch,
            Call::ContinuityResume(_) => Method::ContinuityResume,
            Call::ContinuityList(_) => Method::ContinuityList,
            Call::BridgePrompt(_) => Method::BridgePrompt,
            Call::BridgeReply(_) => Method::BridgeReply,
            Call::BridgeDelivered(_) => Method::BridgeDelivered,
            Call::BridgeDecide(_) => Method::BridgeDecide,
            Call::BrowserHandoffPrepare(_) => Method::BrowserHandoffPrepare,
            Call::ChatsReport(_) => Method::ChatsReport,
            Call::ProfilesGet(_) => Method::ProfilesGet,
            Call::ToolsAudit(_) => Method::ToolsAudit,
            Call::RetentionGet(_) => Method::RetentionGet,
            Call::RetentionSet(_) => Method::RetentionSet,
        }
    }

    /// The params object.
    pub fn params(&self) -> Map<String, Value> {
        let value = match self {
            Call::Hello(p) => serde_json::to_value(p),
            Call::Ping(p)
            | Call::HerdrStatus(p)
            | Call::HerdrWorkspaces(p)
            | Call::HerdrAgents(p)
            | Call::ToolsList(p)
            | Call::ProfilesGet(p)
            | Call::RetentionGet(p) => serde_json::to_value(p),
            Call::EventsSubscribe(p) => serde_json::to_value(p),
            Call::HerdrPanes(p) => serde_json::to_value(p),
            Call::HerdrPaneRead(p) => serde_json::to_value(p),
            Call::TaskDispatch(p) => serde_json::to_value(p),
            Call::TaskList(p) | Call::InboxPending(p) | Call::InboxCounts(p) => serde_json::to_value(p),
            Call::InboxAck(p) => serde_json::to_value(p),
            Call::JudgeTurnEnd(p) => serde_json::to_value(p),
            Call::GoalSet(p) => serde_json::to_value(p),
            Call::GoalEvidence(p) => serde_json::to_value(p),
            Call::DiagnosticsReport(p) => serde_json::to_value(p),
            Call::ToolsCall(p) => serde_json::to_value(p),
            Call::RetentionSet(p) => serde_json::to_value(p),
            Call::ContinuityAppend(p) => serde_json::to_value(p),
            Call::ContinuityResolve(p) => serde_json::to_value(p),
            Call::ContinuitySearch(p) => serde_json::to_value(p),
            Call::ContinuityResume(p) => serde_json::to_value(p),
            Call::ContinuityList(p) => serde_json::to_value(p),
            Call::BridgePrompt(p) => serde_json::to_value(p),
            Call::BridgeReply(p) => serde_json::to_value(p),
            Call::BridgeDelivered(p) => serde_json::to_value(p),
            Call::BridgeDecide(p) => serde_json::to_value(p),
            Call::BrowserHandoffPrepare(p) => serde_json::to_value(p),
            Call::ChatsReport(p) => serde_json::to_value(p),
            Call::ToolsAudit(p) => serde_json::to_value(p),
        };
        match value {
            Ok(Value::Object(map)) => map,
            // Every params type is a struct of strings, integers and lists: always an object.
            _ => Map::new(),
        }
    }
}

/// The runtime's Herdr connection (`herdr`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HerdrConnection {
    /// The state.
    pub state: HerdrState,
    /// Herdr's protocol integer once known.
    pub protocol: Option<u64>,
    /// Herdr's version once known.
    pub version: Option<String>,
    /// The socket path used.
    pub socket: String,
    /// What is wrong and what to do (`null` when connected).
    pub detail: Option<String>,
}

/// A catalog workspace (`herdr.workspaces`, `workspace_upsert`, `hello.workspaces`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workspace {
    /// Id, e.g. `w1`.
    pub workspace_id: String,
    /// Display label.
    pub label: String,
    /// 1-based position.
    pub number: u64,
    /// Herdr's aggregated status.
    pub agent_status: String,
}

/// A catalog pane (`herdr.panes`, `pane_upsert`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pane {
    /// Id, e.g. `w1:p1`.
    pub pane_id: String,
    /// Owner workspace.
    pub workspace_id: String,
    /// Owner tab.
    pub tab_id: String,
    /// Agent name, `null` without one.
    pub agent: Option<String>,
    /// `idle | working | blocked | done | unknown`.
    pub agent_status: String,
    /// Working directory.
    pub cwd: String,
}

/// The agent payload (`herdr.agents`, `hello.agents`, `agent_working`, `agent_settled`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agent {
    /// Owner workspace.
    pub workspace_id: String,
    /// Its label, `null` when the workspace is not in the catalog.
    pub workspace_label: Option<String>,
    /// The pane.
    pub pane_id: String,
    /// Agent name.
    pub agent: Option<String>,
    /// Current status.
    pub status: String,
    /// The status before this change (events only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_status: Option<String>,
    /// Working directory.
    pub cwd: String,
}

/// A task's result (`task.result`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskResult {
    /// What ended the task.
    pub trigger: TaskTrigger,
    /// The `seq` of that event.
    pub seq: u64,
    /// The pane's status then.
    pub status: Option<String>,
    /// The status before.
    pub previous_status: Option<String>,
    /// Agent name.
    pub agent: Option<String>,
    /// Workspace label.
    pub workspace_label: Option<String>,
    /// Working directory.
    pub cwd: Option<String>,
    /// The pane's recent text, last ≤ 4 KiB.
    pub tail: Option<String>,
    /// Whether `tail` was cut.
    pub tail_truncated: bool,
}

/// The attention advisor's guidance (`task.guidance`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Guidance {
    /// What the advisor suggests.
    pub kind: GuidanceKind,
    /// Why, in words.
    pub note: Option<String>,
}

/// A parent-inbox task (`task`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// Task id.
    pub task_id: String,
    /// Dispatch id.
    pub dispatch_id: String,
    /// The chat turn.
    pub turn_id: Option<String>,
    /// The owning ref.
    pub browser_session_ref: String,
    /// Target workspace.
    pub workspace_id: String,
    /// Target pane.
    pub pane_id: String,
    /// The prompt's first ≤ 200 chars.
    pub prompt_preview: String,
    /// The state.
    pub state: TaskState,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms, when terminal.
    pub finished_at: Option<i64>,
    /// The terminal record.
    pub result: Option<TaskResult>,
    /// The advisor's guidance.
    pub guidance: Option<Guidance>,
    /// Unix ms, when acknowledged.
    pub acked_at: Option<i64>,
}

/// A ref's task counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Running tasks.
    pub running: u64,
    /// Terminal, unacknowledged tasks.
    pub unacked: u64,
    /// Acknowledged tasks.
    pub acked: u64,
}

/// The git a runtime finds on its PATH (`hello`'s `git`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitFound {
    /// The first line of `git version` (`"git version 2.47.3"`); `null` when no git runs.
    pub version: Option<String>,
}

/// A result object, told apart by its `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MethodResult {
    /// Answer to `hello`.
    Hello {
        /// The companion's version.
        runtime_version: String,
        /// The runtime's protocol integer.
        protocol: u64,
        /// Whether both integers are equal and the runtime has every `requires` name.
        compatible: bool,
        /// What the runtime serves ([`crate::CAPABILITIES`]); absent from a runtime older
        /// than protocol 2, which the extension reads as "update the companion".
        #[serde(default, skip_serializing_if = "Option::is_none")]
        capabilities: Option<Vec<String>>,
        /// The `requires` names this runtime lacks (empty when none or none were sent).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        missing: Vec<String>,
        /// This runtime start.
        boot_id: String,
        /// The Herdr connection.
        herdr: HerdrConnection,
        /// The git this runtime finds on its PATH: only in the answer to the doctor's
        /// `hello` (`extension_version` `"doctor"`), which judges it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        git: Option<GitFound>,
    },
    /// Answer to `ping`.
    Pong {
        /// Unix ms.
        server_time: u64,
    },
    /// Answer to `herdr.status`.
    HerdrStatus {
        /// The Herdr connection.
        herdr: HerdrConnection,
    },
    /// Answer to `events.subscribe`.
    EventsSubscribed {
        /// This runtime start.
        boot_id: String,
        /// The event log.
        log_id: String,
        /// Whether the client's position was not in this log.
        log_reset: bool,
        /// The newest stored `seq`.
        last_seq: u64,
        /// Where the replay starts (`0` on a reset).
        after_seq: u64,
    },
    /// Answer to `herdr.workspaces`.
    HerdrWorkspaces {
        /// By position.
        workspaces: Vec<Workspace>,
    },
    /// Answer to `herdr.panes`.
    HerdrPanes {
        /// The panes.
        panes: Vec<Pane>,
    },
    /// Answer to `herdr.agents`.
    HerdrAgents {
        /// Panes with an agent.
        agents: Vec<Agent>,
    },
    /// Answer to `herdr.pane_read`.
    HerdrPaneRead {
        /// The pane.
        pane_id: String,
        /// Rows asked for.
        lines: u64,
        /// The text (≤ 64 KiB, tail kept).
        text: String,
        /// Whether rows or characters were left out.
        truncated: bool,
    },
    /// Answer to `task.dispatch`.
    TaskDispatched {
        /// Task id.
        task_id: String,
        /// Dispatch id.
        dispatch_id: String,
        /// The chat turn.
        turn_id: Option<String>,
        /// The owning ref.
        browser_session_ref: String,
        /// Target workspace.
        workspace_id: String,
        /// Target pane.
        pane_id: String,
        /// Always `running`.
        state: TaskState,
        /// Unix ms.
        created_at: i64,
    },
    /// Answer to `task.list`.
    TaskList {
        /// The ref.
        browser_session_ref: String,
        /// Newest first, ≤ 100.
        tasks: Vec<Task>,
    },
    /// Answer to `inbox.pending`.
    InboxPending {
        /// The ref.
        browser_session_ref: String,
        /// Terminal unacknowledged tasks, oldest first, ≤ 50.
        items: Vec<Task>,
        /// Whether there are more than `items`.
        more: bool,
    },
    /// Answer to `inbox.ack` (every requested id in exactly one list).
    InboxAcked {
        /// The ref.
        browser_session_ref: String,
        /// Newly acknowledged.
        acked: Vec<String>,
        /// Acknowledged before.
        already_acked: Vec<String>,
        /// No such task.
        unknown: Vec<String>,
        /// Another ref's task.
        forbidden: Vec<String>,
        /// Still running.
        not_terminal: Vec<String>,
        /// The ref's counts after the call.
        counts: Counts,
    },
    /// Answer to `inbox.counts`.
    InboxCounts {
        /// The ref.
        browser_session_ref: String,
        /// The counts.
        counts: Counts,
    },
    /// Answer to `judge.turn_end`.
    JudgeVerdict {
        /// `continue`, `done` or `uncertain`.
        verdict: crate::names::JudgeVerdict,
        /// Which judge decided.
        source: crate::names::JudgeSource,
        /// The deciding provider's probability that work is left, when it gave one.
        confidence: Option<f64>,
        /// Why, in one line.
        reason: String,
        /// A decision route's goal-mode priors, when it answered them (advice only).
        priors: Option<GoalPriors>,
    },
    /// Answer to `goal.set` and `goal.evidence` (SPEC J7): what the runtime holds for the
    /// scope's Goal mode. Evidence, not advice: Goal mode continues only on open TODO items.
    GoalEvidence {
        /// The ref.
        browser_session_ref: String,
        /// The goal, `null` when none is set.
        goal: Option<String>,
        /// The goal's TODO items still open.
        todos_open: u32,
        /// The goal's TODO items done.
        todos_done: u32,
        /// The scope's inbox tasks still running.
        open_tasks: u32,
        /// The bound workspace's agents: `working | idle | blocked | unknown`.
        workspace: String,
    },
    /// Answer to `diagnostics.report`.
    DiagnosticsStored {
        /// When the runtime stored them (ms since the Unix epoch).
        stored_at: u64,
    },
    /// Answer to `tools.list`.
    ToolsList {
        /// Every planner tool.
        tools: Vec<ToolSpec>,
    },
    /// Answer to `tools.call`.
    ToolResult {
        /// The tool that ran.
        tool: ToolName,
        /// What it returned (a JSON object).
        result: Value,
    },
    /// Answer to `continuity.append`.
    ContinuityAppended {
        /// The chain the turn is in.
        continuity_id: String,
        /// Its conversation.
        conversation_id: String,
        /// Its message id.
        message_id: String,
        /// False when this key was already recorded with the same text (a retry).
        inserted: bool,
        /// The legacy `HERDR_HANDOFF_V1` packets found in the turn and what became of
        /// each (X11); absent when there are none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        legacy_packets: Vec<crate::journal::LegacyPacketOutcome>,
    },
    /// Answer to `continuity.resolve`.
    ContinuityResolved {
        /// The conversation's chain.
        continuity_id: String,
        /// The conversation asked for.
        conversation_id: String,
        /// The chain's Project, if any.
        project_id: Option<String>,
        /// The chain's newest title, if any.
        title: Option<String>,
        /// When the chain's newest turn was recorded (ms).
        updated_at: u64,
    },
    /// Answer to `continuity.search`.
    ContinuitySearch {
        /// What the search concluded.
        resolution: Resolution,
        /// True only when stable identity alone names exactly this one chain (C4).
        auto_resume_safe: bool,
        /// True when the user has to choose (or confirm) a candidate.
        confirmation_required: bool,
        /// At most `limit` chains, most recently updated first (a display order, never a choice).
        candidates: Vec<ChainCandidate>,
        /// Whether more chains matched than are listed.
        more: bool,
        /// What the planner should do next.
        instruction: String,
    },
    /// Answer to `continuity.resume`.
    ContinuityResumed {
        /// The chain.
        continuity_id: String,
        /// Its newest title, if any.
        title: Option<String>,
        /// Its Project, if any.
        project_id: Option<String>,
        /// Workspaces its turns were written under.
        workspace_ids: Vec<String>,
        /// Its newest turns, oldest first (≤ 32).
        turns: Vec<JournalTurn>,
        /// Whether older turns exist that are not returned.
        more_turns: bool,
        /// Pass it as `before` for the next older page; `null` when this page holds the
        /// chain's oldest turn.
        next_cursor: Option<String>,
        /// Legacy `HERDR_HANDOFF_V1` packets restored from this chain's turns, each its
        /// own chain (X11); absent when there are none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        legacy_packets: Vec<crate::journal::LegacyPacketLink>,
        /// More legacy packets were restored from this chain than `legacy_packets` lists
        /// (it holds the first 32); absent when it lists them all.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        legacy_packets_truncated: bool,
        /// When its newest turn was recorded (ms).
        updated_at: u64,
        /// Treat this as persisted context; re-check live state first (C7).
        instruction: String,
    },
    /// Answer to `continuity.list`.
    ContinuityList {
        /// At most `limit` chains, most recently updated first.
        candidates: Vec<ChainCandidate>,
        /// Whether there are more chains.
        more: bool,
    },
    /// Answer to `bridge.prompt`.
    BridgePrompt {
        /// The protocol prompt: how to write tool calls, and every tool with its arguments.
        text: String,
    },
    /// Answer to `bridge.reply`.
    BridgeReply {
        /// What the reply held.
        state: BridgeState,
        /// How many tool call lines it held (those past the batch cap included).
        calls: u64,
        /// The batch's stable id (`bridge:<hex>`; the same on every replay of the reply): the
        /// results message's id for `results`, the batch to decide for `approval`, else
        /// `null`.
        delivery_id: Option<String>,
        /// The results message to send as the next user turn, `null` unless `results`.
        text: Option<String>,
        /// Whether `bridge.delivered` already confirmed it (then it is not sent again).
        delivered: bool,
        /// The calls waiting for the user's Run / Skip (`[]` unless `state` is `approval`).
        pending: Vec<PendingCall>,
        /// The chat's tool rounds since its user's newest message.
        rounds: BridgeRounds,
    },
    /// Answer to `bridge.decide`.
    BridgeDecided {
        /// The batch.
        batch_id: String,
        /// The call's 1-based position.
        call: u64,
        /// The decision now stored.
        decision: BridgeDecision,
        /// How many calls of the batch still wait for a decision.
        pending: u64,
    },
    /// Answer to `bridge.delivered`.
    BridgeDelivered {
        /// The id.
        delivery_id: String,
        /// Whether the runtime knows it (an unknown id changes nothing).
        known: bool,
    },
    /// Answer to `herdr_mcp.browser_handoff.prepare` (herdr-mcp's package, X4; boxed, it
    /// is by far the largest answer).
    HandoffPrepared(Box<PreparedHandoff>),
    /// Answer to `chats.report`.
    ChatsReported {
        /// How many chats the report listed.
        chats: u64,
        /// How many of them generate a reply now.
        generating: u64,
    },
    /// Answer to `profiles.get`.
    Profiles {
        /// One per file found in `<home>/profiles/` for a known site (none: no file).
        profiles: Vec<ProfileFile>,
    },
    /// Answer to `retention.get` / `retention.set`.
    Retention {
        /// The limits in force.
        limits: RetentionLimits,
        /// Each limit's bound and default, by name.
        bounds: std::collections::BTreeMap<String, RetentionBound>,
        /// Each store's size; `retention.set` leaves it out when it cannot read them, or
        /// took long already (its limits are stored either way: the page keeps its sizes).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sizes: Option<Vec<RetentionSize>>,
        /// `retention.set` only: whether reclaiming under the new limits goes on after the
        /// answer (it reclaims a few seconds first; the limits are stored either way).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reclaiming: Option<bool>,
    },
    /// Answer to `tools.audit`.
    ToolsAudit {
        /// The rows, newest first.
        entries: Vec<ToolAuditEntry>,
    },
}

/// One site profile file of the companion home, as `profiles.get` serves it: its text
/// (validated by the extension, never here) or, for a file that was not read (a symlink,
/// not a regular file, over [`crate::limits::MAX_PROFILE_FILE_BYTES`], not UTF-8), why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileFile {
    /// `chatgpt`, `zai` or `deepseek` (the file `profiles/<site>.json`).
    pub site: String,
    /// The file's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// When the file was last modified (ms since the Unix epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_ms: Option<u64>,
    /// Why the file was not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl MethodResult {
    /// The result's `type` on the wire.
    pub fn result_type(&self) -> ResultType {
        match self {
            MethodResult::Hello { .. } => ResultType::Hello,
            MethodResult::Pong { .. } => ResultType::Pong,
            MethodResult::HerdrStatus { .. } => ResultType::HerdrStatus,
            MethodResult::EventsSubscribed { .. } => ResultType::EventsSubscribed,
            MethodResult::HerdrWorkspaces { .. } => ResultType::HerdrWorkspaces,
            MethodResult::HerdrPanes { .. } => ResultType::HerdrPanes,
            MethodResult::HerdrAgents { .. } => ResultType::HerdrAgents,
            MethodResult::HerdrPaneRead { .. } => ResultType::HerdrPaneRead,
            MethodResult::TaskDispatched { .. } => ResultType::TaskDispatched,
            MethodResult::TaskList { .. } => ResultType::TaskList,
            MethodResult::InboxPending { .. } => ResultType::InboxPending,
            MethodResult::InboxAcked { .. } => ResultType::InboxAcked,
            MethodResult::InboxCounts { .. } => ResultType::InboxCounts,
            MethodResult::DiagnosticsStored { .. } => ResultType::DiagnosticsStored,
            MethodResult::JudgeVerdict { .. } => ResultType::JudgeVerdict,
            MethodResult::GoalEvidence { .. } => ResultType::GoalEvidence,
            MethodResult::ToolsList { .. } => ResultType::ToolsList,
            MethodResult::ToolResult { .. } => ResultType::ToolResult,
            MethodResult::ContinuityAppended { .. } => ResultType::ContinuityAppended,
            MethodResult::ContinuityResolved { .. } => ResultType::ContinuityResolved,
            MethodResult::ContinuitySearch { .. } => ResultType::ContinuitySearch,
            MethodResult::ContinuityResumed { .. } => ResultType::ContinuityResumed,
            MethodResult::ContinuityList { .. } => ResultType::ContinuityList,
            MethodResult::BridgePrompt { .. } => ResultType::BridgePrompt,
            MethodResult::BridgeReply { .. } => ResultType::BridgeReply,
            MethodResult::BridgeDelivered { .. } => ResultType::BridgeDelivered,
            MethodResult::BridgeDecided { .. } => ResultType::BridgeDecided,
            MethodResult::HandoffPrepared(_) => ResultType::HandoffPrepared,
            MethodResult::ChatsReported { .. } => ResultType::ChatsReported,
            MethodResult::Profiles { .. } => ResultType::Profiles,
            MethodResult::ToolsAudit { .. } => ResultType::ToolsAudit,
            MethodResult::Retention { .. } => ResultType::Retention,
        }
    }
}

/// Fields every stored stream event carries next to its payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stored<T> {
    /// The payload.
    #[serde(flatten)]
    pub payload: T,
    /// Global, strictly increasing position.
    pub seq: u64,
    /// The runtime start that produced it.
    pub boot_id: String,
    /// Unix ms.
    pub at: u64,
    /// Whether `boot_id` is not the current runtime's.
    pub stale: bool,
}

/// The stream's `hello` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamHello {
    /// Always [`crate::EVENTS_PROTOCOL`].
    pub protocol: String,
    /// This runtime start.
    pub boot_id: String,
    /// The event log.
    pub log_id: String,
    /// As in `events_subscribed`.
    pub log_reset: bool,
    /// Unix ms.
    pub server_time: u64,
    /// The newest stored `seq` (the replay horizon).
    pub last_seq: u64,
    /// The catalog's workspaces.
    pub workspaces: Vec<Workspace>,
    /// The agent snapshot at subscribe time.
    pub agents: Vec<Agent>,
}

/// `herdr_state` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HerdrStateData {
    /// The new connection state.
    pub herdr: HerdrConnection,
}

/// `host_error` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostErrorData {
    /// What went wrong.
    pub code: HostErrorCode,
    /// What happened and what to do.
    pub message: String,
    /// The request whose response was dropped, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// `agent_output` data (not stored: no `seq`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentOutput {
    /// The pane.
    pub pane_id: String,
    /// Owner workspace.
    pub workspace_id: String,
    /// Agent name.
    pub agent: Option<String>,
    /// The newest ≤ 2 000 characters.
    pub tail: String,
    /// This runtime start.
    pub boot_id: String,
    /// Unix ms.
    pub at: u64,
    /// Always false.
    pub stale: bool,
    /// Orders one pane's tails within one `boot_id`.
    pub output_rev: u64,
}

/// `workspace_removed` payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceRef {
    /// The workspace.
    pub workspace_id: String,
}

/// `pane_removed` payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneRef {
    /// The pane.
    pub pane_id: String,
    /// Its workspace.
    pub workspace_id: String,
}

/// `inbox_changed` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboxChanged {
    /// The ref whose tasks changed.
    pub browser_session_ref: String,
    /// Its counts now.
    pub counts: Counts,
}

/// An event: `{"event": NAME, "data": {…}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", content = "data", rename_all = "snake_case")]
pub enum Event {
    /// [`EventName::Hello`].
    Hello(StreamHello),
    /// [`EventName::HerdrState`].
    HerdrState(HerdrStateData),
    /// [`EventName::HostError`].
    HostError(HostErrorData),
    /// [`EventName::AgentWorking`].
    AgentWorking(Stored<Agent>),
    /// [`EventName::AgentSettled`].
    AgentSettled(Stored<Agent>),
    /// [`EventName::AgentOutput`].
    AgentOutput(AgentOutput),
    /// [`EventName::WorkspaceUpsert`].
    WorkspaceUpsert(Stored<Workspace>),
    /// [`EventName::WorkspaceRemoved`].
    WorkspaceRemoved(Stored<WorkspaceRef>),
    /// [`EventName::PaneUpsert`].
    PaneUpsert(Stored<Pane>),
    /// [`EventName::PaneRemoved`].
    PaneRemoved(Stored<PaneRef>),
    /// [`EventName::InboxChanged`].
    InboxChanged(InboxChanged),
}

impl Event {
    /// The event's name.
    pub fn name(&self) -> EventName {
        match self {
            Event::Hello(_) => EventName::Hello,
            Event::HerdrState(_) => EventName::HerdrState,
            Event::HostError(_) => EventName::HostError,
            Event::AgentWorking(_) => EventName::AgentWorking,
            Event::AgentSettled(_) => EventName::AgentSettled,
            Event::AgentOutput(_) => EventName::AgentOutput,
            Event::WorkspaceUpsert(_) => EventName::WorkspaceUpsert,
            Event::WorkspaceRemoved(_) => EventName::WorkspaceRemoved,
            Event::PaneUpsert(_) => EventName::PaneUpsert,
            Event::PaneRemoved(_) => EventName::PaneRemoved,
            Event::InboxChanged(_) => EventName::InboxChanged,
        }
    }
}
