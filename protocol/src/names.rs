//! The closed sets of names on the wire: methods, events, error codes, states.
//!
//! Each is an enum whose `as_str` is the exact wire spelling and whose `parse` refuses
//! any other string with an [`UnknownName`] (there is no catch-all variant: a name this
//! crate does not list is an error the caller answers, e.g. `unknown_method`).

use std::fmt;

/// A string that is not one of a name set's wire spellings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    /// Which set was asked (`Method`, `ErrorCode`, …).
    pub set: &'static str,
    /// The string that was given.
    pub name: String,
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not a known {} of herdr-continuity/1", self.name, self.set)
    }
}

impl std::error::Error for UnknownName {}

/// Where `name` is in `names` (a set's spellings, in declaration order): not generic, one
/// search for every set's `parse`.
#[doc(hidden)]
#[inline(never)]
pub fn position(names: &[&str], name: &str) -> Option<usize> {
    names.iter().position(|candidate| *candidate == name)
}

/// Declares a wire name set: the enum, `ALL`, `as_str`, `parse`, `Display`, `FromStr`,
/// serde as a plain string, and `==` against `str` / `String`.
macro_rules! wire_names {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
        }

        impl $name {
            /// Every name of the set, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The wire spelling.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $wire, )*
                }
            }

            /// The name spelled `name` on the wire; any other string is an error.
            pub fn parse(name: &str) -> Result<Self, $crate::names::UnknownName> {
                // A search of the spellings, not a `match` on strings: that compiles to a
                // comparison tree per set, ~1 KB of wasm for the larger ones.
                const WIRE: &[&str] = &[$($wire,)*];
                match $crate::names::position(WIRE, name).and_then(|index| Self::ALL.get(index)) {
                    Some(found) => Ok(*found),
                    None => Err($crate::names::UnknownName {
                        set: stringify!($name),
                        name: name.to_owned(),
                    }),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::names::UnknownName;
            fn from_str(name: &str) -> Result<Self, Self::Err> {
                Self::parse(name)
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let name = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(deserializer)?;
                Self::parse(&name).map_err(<D::Error as ::serde::de::Error>::custom)
            }
        }

        impl PartialEq<$name> for str {
            fn eq(&self, other: &$name) -> bool {
                self == other.as_str()
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.as_str()
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                self.as_str() == other.as_str()
            }
        }
    };
}
pub(crate) use wire_names;

wire_names! {
    /// A runtime method (docs/PROTOCOL.md "Methods", "Event stream", "Parent inbox").
    pub enum Method {
        /// `hello {extension_version, protocol}` → `hello`.
        Hello = "hello",
        /// `ping {}` → `pong`.
        Ping = "ping",
        /// `herdr.status {}` → `herdr_status`.
        HerdrStatus = "herdr.status",
        /// `events.subscribe {after_seq?, log_id?}` → `events_subscribed`, then the stream.
        EventsSubscribe = "events.subscribe",
        /// `herdr.workspaces {}` → `herdr_workspaces`.
        HerdrWorkspaces = "herdr.workspaces",
        /// `herdr.panes {workspace_id?}` → `herdr_panes`.
        HerdrPanes = "herdr.panes",
        /// `herdr.agents {}` → `herdr_agents`.
        HerdrAgents = "herdr.agents",
        /// `herdr.pane_read {pane_id, lines?}` → `herdr_pane_read`.
        HerdrPaneRead = "herdr.pane_read",
        /// `task.dispatch {browser_session_ref, workspace_id, pane_id, prompt, turn_id?}`.
        TaskDispatch = "task.dispatch",
        /// `task.list {browser_session_ref}` → `task_list`.
        TaskList = "task.list",
        /// `inbox.pending {browser_session_ref}` → `inbox_pending`.
        InboxPending = "inbox.pending",
        /// `inbox.ack {browser_session_ref, task_ids}` → `inbox_acked`.
        InboxAck = "inbox.ack",
        /// `inbox.counts {browser_session_ref}` → `inbox_counts`.
        InboxCounts = "inbox.counts",
        /// `goal.set {browser_session_ref, goal}` → `goal_evidence`: the HUD sets (`""`
        /// clears) the scope's goal (Goal mode, SPEC J7).
        GoalSet = "goal.set",
        /// `goal.evidence {browser_session_ref, workspace_id?}` → `goal_evidence`: what the
        /// runtime holds for Goal mode — the goal, its TODO items, the scope's open inbox
        /// tasks, the bound workspace's state.
        GoalEvidence = "goal.evidence",
        /// `judge.turn_end {user_text, assistant_text, conversation}` → `judge_verdict`:
        /// whether a finished-looking reply left work it means to do (SPEC J1–J3).
        JudgeTurnEnd = "judge.turn_end",
        /// `diagnostics.report {diagnostics}` → `diagnostics_stored`: the extension's latest
        /// "what the extension sees" of a chat page (selectors, ids, counts; no page content),
        /// kept for `herdr-companion doctor`.
        DiagnosticsReport = "diagnostics.report",
        /// `tools.list {}` → `tools_list`: the planner tool registry (`herdr_prompt`,
        /// `herdr_call`, `herdr_methods`, `herdr_inspect`) that `herdr-companion mcp` serves
        /// as MCP tools.
        ToolsList = "tools.list",
        /// `tools.call {tool, arguments}` → `tool_result`: runs one planner tool.
        ToolsCall = "tools.call",
        /// `continuity.append {conversation_id, message_id, role, text, observed_at, …}` →
        /// `continuity_appended`: one finalized chat turn into the Continuity Journal (C1).
        ContinuityAppend = "continuity.append",
        /// `continuity.resolve {conversation_id}` → `continuity_resolved`: the conversation's chain.
        ContinuityResolve = "continuity.resolve",
        /// `continuity.search {project_id?, workspace_id?, conversation_id?, conversation_url?,
        /// query?, limit?}` → `continuity_search`: bounded candidates and a resolution (C4).
        ContinuitySearch = "continuity.search",
        /// `continuity.resume {continuity_id | conversation_url}` → `continuity_resumed`:
        /// bounded recent turns and the instruction to re-check live state (C5, C7).
        ContinuityResume = "continuity.resume",
        /// `continuity.list {limit?}` → `continuity_list`: the chains, most recently updated first.
        ContinuityList = "continuity.list",
        /// `bridge.prompt {}` → `bridge_prompt`: the JSON bridge's protocol prompt for z.ai /
        /// DeepSeek, built from the tool list (SPEC O2).
        BridgePrompt = "bridge.prompt",
        /// `bridge.reply {conversation, message_id, text, finished, workspace_id, auto?,
        /// human_turn?}` → `bridge_reply`: the tool calls of an assistant reply, each run once
        /// when the user approved it (or it only reads and the chat's Auto is on), and the
        /// results message.
        BridgeReply = "bridge.reply",
        /// `bridge.decide {conversation, batch_id, call, decision}` → `bridge_decided`: the
        /// user's trusted Run / Skip for one call of a batch waiting for approval.
        BridgeDecide = "bridge.decide",
        /// `bridge.delivered {delivery_id}` → `bridge_delivered`: a results message was
        /// confirmed in its chat; later replays of its reply say so.
        BridgeDelivered = "bridge.delivered",
        /// `herdr_mcp.browser_handoff.prepare {continuity_id, source_url, objective?,
        /// work_chain_id?, handoff_id?}` → `handoff_prepared`: the read-only handoff package
        /// of a journaled chain, one message in three places (X4).
        BrowserHandoffPrepare = "herdr_mcp.browser_handoff.prepare",
        /// `chats.report {reporter, chats: [{browser_session_ref, generating}]}` →
        /// `chats_reported`: the extension's bound chats with a tab open and whether each
        /// generates a reply now (evidence for attributing a `herdr_prompt` without a ref).
        ChatsReport = "chats.report",
        /// `profiles.get {}` → `profiles`: the site profile files in the companion home
        /// (`profiles/<site>.json`), each with its text or why it was not read.
        ProfilesGet = "profiles.get",
        /// `tools.audit {limit?, before?}` → `tools_audit`: the newest rows of the audit log
        /// of the write and exec tools (tool, caller, root, path or command, outcome, time).
        ToolsAudit = "tools.audit",
        /// `retention.get {}` → `retention`: the storage limits in force, their bounds and
        /// each store's size (SPEC W4).
        RetentionGet = "retention.get",
        /// `retention.set {limits}` → `retention`: stores limits within their bounds and
        /// reclaims under them at once.
        RetentionSet = "retention.set",
    }
}

wire_names! {
    /// An event name (`{"event": NAME, "data": {…}}`).
    pub enum EventName {
        /// The stream's first event on every subscription (not stored).
        Hello = "hello",
        /// The runtime's Herdr connection state changed (to every client).
        HerdrState = "herdr_state",
        /// From the host: a frame it could not relay.
        HostError = "host_error",
        /// A pane entered `working` (stored).
        AgentWorking = "agent_working",
        /// A pane went `working → idle | done | blocked` (stored).
        AgentSettled = "agent_settled",
        /// A pane's newest output tail (not stored, no `seq`).
        AgentOutput = "agent_output",
        /// A workspace is new, relabelled or moved (stored).
        WorkspaceUpsert = "workspace_upsert",
        /// A workspace is gone (stored).
        WorkspaceRemoved = "workspace_removed",
        /// A pane is new or changed (stored).
        PaneUpsert = "pane_upsert",
        /// A pane is gone (stored).
        PaneRemoved = "pane_removed",
        /// A ref's inbox counts changed (not stored).
        InboxChanged = "inbox_changed",
    }
}

impl EventName {
    /// True for the events stored in the runtime's log (they carry `seq`).
    pub const fn is_stored(self) -> bool {
        matches!(
            self,
            EventName::AgentWorking
                | EventName::AgentSettled
                | EventName::WorkspaceUpsert
                | EventName::WorkspaceRemoved
                | EventName::PaneUpsert
                | EventName::PaneRemoved
        )
    }
}

wire_names! {
    /// The `type` of a result object, one per [`crate::MethodResult`] variant: how a reader
    /// of `{"id", "result"}` tells the answers apart without comparing strings.
    pub enum ResultType {
        /// [`crate::MethodResult::Hello`].
        Hello = "hello",
        /// [`crate::MethodResult::Pong`].
        Pong = "pong",
        /// [`crate::MethodResult::HerdrStatus`].
        HerdrStatus = "herdr_status",
        /// [`crate::MethodResult::EventsSubscribed`].
        EventsSubscribed = "events_subscribed",
        /// [`crate::MethodResult::HerdrWorkspaces`].
        HerdrWorkspaces = "herdr_workspaces",
        /// [`crate::MethodResult::HerdrPanes`].
        HerdrPanes = "herdr_panes",
        /// [`crate::MethodResult::HerdrAgents`].
        HerdrAgents = "herdr_agents",
        /// [`crate::MethodResult::HerdrPaneRead`].
        HerdrPaneRead = "herdr_pane_read",
        /// [`crate::MethodResult::TaskDispatched`].
        TaskDispatched = "task_dispatched",
        /// [`crate::MethodResult::TaskList`].
        TaskList = "task_list",
        /// [`crate::MethodResult::InboxPending`].
        InboxPending = "inbox_pending",
        /// [`crate::MethodResult::InboxAcked`].
        InboxAcked = "inbox_acked",
        /// [`crate::MethodResult::InboxCounts`].
        InboxCounts = "inbox_counts",
        /// [`crate::MethodResult::DiagnosticsStored`].
        DiagnosticsStored = "diagnostics_stored",
        /// [`crate::MethodResult::JudgeVerdict`].
        JudgeVerdict = "judge_verdict",
        /// [`crate::MethodResult::GoalEvidence`].
        GoalEvidence = "goal_evidence",
        /// [`crate::MethodResult::ToolsList`].
        ToolsList = "tools_list",
        /// [`crate::MethodResult::ToolResult`].
        ToolResult = "tool_result",
        /// [`crate::MethodResult::ContinuityAppended`].
        ContinuityAppended = "continuity_appended",
        /// [`crate::MethodResult::ContinuityResolved`].
        ContinuityResolved = "continuity_resolved",
        /// [`crate::MethodResult::ContinuitySearch`].
        ContinuitySearch = "continuity_search",
        /// [`crate::MethodResult::ContinuityResumed`].
        ContinuityResumed = "continuity_resumed",
        /// [`crate::MethodResult::ContinuityList`].
        ContinuityList = "continuity_list",
        /// [`crate::MethodResult::BridgePrompt`].
        BridgePrompt = "bridge_prompt",
        /// [`crate::MethodResult::BridgeReply`].
        BridgeReply = "bridge_reply",
        /// [`crate::MethodResult::BridgeDelivered`].
        BridgeDelivered = "bridge_delivered",
        /// [`crate::MethodResult::BridgeDecided`].
        BridgeDecided = "bridge_decided",
        /// [`crate::MethodResult::HandoffPrepared`].
        HandoffPrepared = "handoff_prepared",
        /// [`crate::MethodResult::ChatsReported`].
        ChatsReported = "chats_reported",
        /// [`crate::MethodResult::Profiles`].
        Profiles = "profiles",
        /// [`crate::MethodResult::ToolsAudit`].
        ToolsAudit = "tools_audit",
        /// [`crate::MethodResult::Retention`].
        Retention = "retention",
    }
}

wire_names! {
    /// What `bridge.reply` found in an assistant reply (`bridge_reply.state`).
    pub enum BridgeState {
        /// No tool call line: nothing to run, nothing to send.
        Nothing = "nothing",
        /// A tool call object is not closed yet, or the reply has not finished: nothing
        /// runs until it has.
        Streaming = "streaming",
        /// The calls ran (or were answered from the record); `text` is the results message.
        Results = "results",
        /// At least one call waits for the user's Run / Skip (`pending` lists them); nothing
        /// of the batch has run.
        Approval = "approval",
        /// The chat ran its limit of tool rounds since the user's last message: nothing runs,
        /// no results message.
        RoundLimit = "round_limit",
    }
}

wire_names! {
    /// The user's answer to one call waiting for approval (`bridge.decide.decision`).
    pub enum BridgeDecision {
        /// Run the call.
        Run = "run",
        /// Do not run it: it is answered `skipped`.
        Skip = "skip",
    }
}

wire_names! {
    /// A response error code (`{"error": {"code", "message"}}`), from the runtime or, for
    /// the last few, made up by the extension for a call that never got a runtime answer.
    pub enum ErrorCode {
        /// The request's shape is invalid (`id` is `""` when it could not be read).
        BadRequest = "bad_request",
        /// The runtime does not serve this method.
        UnknownMethod = "unknown_method",
        /// A service the method needs (event log, inbox) is not open.
        NotReady = "not_ready",
        /// The inbox's store failed for this call.
        InboxUnavailable = "inbox_unavailable",
        /// Herdr speaks another protocol.
        UnsupportedProtocol = "unsupported_protocol",
        /// Herdr is not running.
        HerdrNotRunning = "herdr_not_running",
        /// Herdr's socket refused this user.
        HerdrPermissionDenied = "herdr_permission_denied",
        /// Herdr is not usable for another reason (message = its detail).
        HerdrUnavailable = "herdr_unavailable",
        /// Herdr answered the runtime's request with an error.
        HerdrError = "herdr_error",
        /// `task.dispatch`: no such pane or agent.
        NotFound = "not_found",
        /// `task.dispatch`: the agent waits for interactive input.
        AgentBlocked = "agent_blocked",
        /// `task.dispatch`: the agent is busy or not a recognised agent.
        AgentNotReady = "agent_not_ready",
        /// `tools.call`: no planner tool of that name (`tools.list` names them).
        UnknownTool = "unknown_tool",
        /// The caller may not make this tool call (a JSON-bridge chat outside its own
        /// workspace, inbox or continuity chain); the message says what and why.
        Refused = "refused",
        /// `tools.call`: a method the registry lists but this companion does not serve yet.
        NotAvailable = "not_available",
        /// The runtime closed a connection over its connection cap.
        Overloaded = "overloaded",
        /// The runtime gave up on a request that took longer than its per-request limit.
        Timeout = "timeout",
        /// The runtime failed inside this request (a bug: it is logged in runtime.log and
        /// the runtime keeps serving every other request and connection).
        Internal = "internal",
        /// `judge.turn_end`: the companion's `config.json` is refused (readable by others,
        /// unreadable, or not valid); the message says how to fix it.
        ConfigRefused = "config_refused",
        /// `continuity.*`: no journaled chain matches (a conversation never journaled, an
        /// unknown `continuity_id`); the message says what was looked for (C6).
        ContinuityNotFound = "continuity_not_found",
        /// `continuity.resume` / `continuity.append`: stable identity names more than one
        /// chain; the message says to search and ask the user (C5).
        ContinuityAmbiguous = "continuity_ambiguous",
        /// `continuity.append`: the turn's key is recorded with another text, or the
        /// conversation already belongs to another chain; never retried.
        ContinuityConflict = "continuity_conflict",
        /// `herdr_mcp.browser_handoff.prepare`: the source URL's conversation is journaled in
        /// another chain (or the chain in another Project) than the `continuity_id` given.
        ContinuityMismatch = "continuity_mismatch",
        /// `continuity.*`: the journal's store failed for this call (retry).
        ContinuityStoreUnavailable = "continuity_store_unavailable",
        /// Extension only: the call was not sent, the companion is not connected.
        Offline = "offline",
        /// Extension only: the runtime's answer did not have the documented shape.
        BadAnswer = "bad_answer",
        /// Extension only: an error answer without a usable `code`.
        Error = "error",
    }
}

wire_names! {
    /// A `host_error` code (docs/PROTOCOL.md "Framing", "Events").
    pub enum HostErrorCode {
        /// A frame from the browser that is not UTF-8 JSON or not an object.
        BadFrame = "bad_frame",
        /// A frame from the browser over 1 MiB (read and discarded).
        FrameTooLarge = "frame_too_large",
        /// The host cannot reach the runtime (it then exits 1).
        RuntimeUnreachable = "runtime_unreachable",
        /// The runtime the host started refused to start and says why (e.g. a `state.db`
        /// from a newer herdr-companion); retrying cannot help until the user acts (the
        /// host then exits 1).
        RuntimeRefusedToStart = "runtime_refused_to_start",
        /// A runtime message over 1 MiB was dropped.
        ResponseTooLarge = "response_too_large",
    }
}

wire_names! {
    /// The runtime's Herdr connection state (`herdr.state`).
    pub enum HerdrState {
        /// Herdr answered `ping` with a supported protocol.
        Connected = "connected",
        /// No Herdr socket, or nothing listens on it.
        NotRunning = "not_running",
        /// Herdr speaks another protocol integer.
        UnsupportedProtocol = "unsupported_protocol",
        /// The socket refused this user.
        PermissionDenied = "permission_denied",
        /// Any other failure (see `detail`).
        Error = "error",
    }
}

impl HerdrState {
    /// The method error a request that needs Herdr gets in this state (`None` when
    /// connected).
    pub const fn not_ready_code(self) -> Option<ErrorCode> {
        match self {
            HerdrState::Connected => None,
            HerdrState::NotRunning => Some(ErrorCode::HerdrNotRunning),
            HerdrState::UnsupportedProtocol => Some(ErrorCode::UnsupportedProtocol),
            HerdrState::PermissionDenied => Some(ErrorCode::HerdrPermissionDenied),
            HerdrState::Error => Some(ErrorCode::HerdrUnavailable),
        }
    }
}

wire_names! {
    /// A task's state (`task.state`).
    pub enum TaskState {
        /// Dispatched, not terminal yet.
        Running = "running",
        /// Settled `idle` / `done`.
        Completed = "completed",
        /// Settled `blocked`.
        Blocked = "blocked",
        /// The pane closed or Herdr released the agent.
        Failed = "failed",
    }
}

wire_names! {
    /// What ended a task (`task.result.trigger`).
    pub enum TaskTrigger {
        /// An `agent_settled` event of its pane.
        AgentSettled = "agent_settled",
        /// A `pane_removed` event of its pane.
        PaneClosed = "pane_closed",
        /// A `pane_upsert` with `agent: null`.
        AgentReleased = "agent_released",
    }
}

wire_names! {
    /// The attention advisor's guidance kind (`task.guidance.kind`, I5).
    pub enum GuidanceKind {
        /// Check that the work is really complete.
        VerifyCompletion = "verify_completion",
        /// The agent may continue on its own.
        ContinueUnobserved = "continue_unobserved",
        /// A human has to decide.
        NeedsHuman = "needs_human",
        /// Something blocks the work.
        Blocker = "blocker",
        /// The work drifted from the request.
        Drift = "drift",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_and_others_are_refused() {
        for m in Method::ALL {
            assert_eq!(Method::parse(m.as_str()), Ok(*m));
        }
        for e in ErrorCode::ALL {
            assert_eq!(e.as_str().parse::<ErrorCode>(), Ok(*e));
        }
        let unknown = Method::parse("events.unsubscribe").err().map(|e| e.to_string());
        assert_eq!(unknown.as_deref(), Some("`events.unsubscribe` is not a known Method of herdr-continuity/1"));
        assert!("unknown_method" == ErrorCode::UnknownMethod);
        let owned: String = ["off", "line"].concat();
        assert!(owned == ErrorCode::Offline && owned != ErrorCode::BadAnswer);
        assert_eq!(serde_json::to_string(&Method::InboxAck).ok().as_deref(), Some("\"inbox.ack\""));
        assert!(serde_json::from_str::<Method>("\"nope\"").is_err());
    }
}

wire_names! {
    /// A turn-end verdict (`judge_verdict.verdict`, SPEC J1).
    pub enum JudgeVerdict {
        /// The reply left a step the assistant itself means to do next: continue it.
        Continue = "continue",
        /// The turn is over: finished, handed to the user, or waiting on something else.
        Done = "done",
        /// The judge could not tell (only a provider says this; the chain goes on).
        Uncertain = "uncertain",
    }
}

wire_names! {
    /// Which judge gave a verdict (`judge_verdict.source`, SPEC J2).
    pub enum JudgeSource {
        /// A typed decision route (Jev / System One).
        Jev = "jev",
        /// An OpenAI-compatible chat route.
        Llm = "llm",
        /// The companion itself: the safety gate or the mechanical script.
        Script = "script",
    }
}
