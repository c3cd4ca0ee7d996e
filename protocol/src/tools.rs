//! The planner tool registry's names and bounds (docs/PROTOCOL.md "Planner tools"): the
//! tools `tools.list` / `tools.call` serve, which `herdr-companion mcp` offers as MCP tools
//! (and the JSON bridge will offer later), and the methods `herdr_call` may reach.
//!
//! Invariant: `herdr_call` reaches only [`CALLABLE_HERDR_METHODS`] and the
//! [`LocalMethod`]s; `agent.prompt` is never among them (a prompt goes through
//! `herdr_prompt`, which records the task in the chat's parent inbox).

use crate::herdr::HerdrMethod;
use crate::names::wire_names;

wire_names! {
    /// A planner tool.
    pub enum ToolName {
        /// `agent.prompt` for a chat: records a parent-inbox task and answers at once (I1).
        HerdrPrompt = "herdr_prompt",
        /// One allowlisted Herdr method or runtime-local method, params as a JSON string.
        HerdrCall = "herdr_call",
        /// The methods `herdr_call` accepts (read-only).
        HerdrMethods = "herdr_methods",
        /// The runtime's view of Herdr: connection, workspaces, panes (read-only).
        HerdrInspect = "herdr_inspect",
        /// Lines of a file inside the project roots (read-only).
        HerdrFsRead = "herdr_fs_read",
        /// A directory's entries inside the project roots, `.gitignore`-aware (read-only).
        HerdrFsList = "herdr_fs_list",
        /// A regex or literal search inside the project roots (read-only).
        HerdrFsGrep = "herdr_fs_grep",
        /// Git status, diff, log and show of a repository inside the roots (read-only).
        HerdrGit = "herdr_git",
        /// The Herdr events the runtime stored since a cursor (read-only).
        HerdrSince = "herdr_since",
        /// Replace one exact, unique string in a file (write).
        HerdrFsEdit = "herdr_fs_edit",
        /// Write a whole file (write).
        HerdrFsWrite = "herdr_fs_write",
        /// Apply a unified or `*** Begin Patch` diff, all or nothing (write).
        HerdrFsPatch = "herdr_fs_patch",
        /// Run a command in a root, at most 60 s (write).
        HerdrExec = "herdr_exec",
        /// Start a long-running command session (write).
        HerdrExecStart = "herdr_exec_start",
        /// Read a session's output (classed with the exec tools).
        HerdrExecRead = "herdr_exec_read",
        /// Kill a session (write).
        HerdrExecKill = "herdr_exec_kill",
    }
}

impl ToolName {
    /// True when the tool changes nothing: the JSON bridge runs it without the user's
    /// click (a `herdr_call` is classed by its method instead, see `LocalMethod::is_read_only`).
    /// The write and exec tools are never read-only, whatever `intent` says (the caller's word
    /// is not a proof), and `herdr_exec_read` goes with them.
    /// Every tool is named (no wildcard): a new one must be classed here before it builds,
    /// so no unclassed write ever runs as a read.
    pub const fn is_read_only(self) -> bool {
        match self {
            ToolName::HerdrMethods
            | ToolName::HerdrInspect
            | ToolName::HerdrFsRead
            | ToolName::HerdrFsList
            | ToolName::HerdrFsGrep
            | ToolName::HerdrGit
            | ToolName::HerdrSince => true,
            ToolName::HerdrPrompt
            | ToolName::HerdrCall
            | ToolName::HerdrFsEdit
            | ToolName::HerdrFsWrite
            | ToolName::HerdrFsPatch
            | ToolName::HerdrExec
            | ToolName::HerdrExecStart
            | ToolName::HerdrExecRead
            | ToolName::HerdrExecKill => false,
        }
    }
}

wire_names! {
    /// A runtime-local method family member `herdr_call` knows by name (Herdr does not
    /// serve these; the companion does). The `continuity.*` reads are served by the
    /// runtime's journal ([`LocalMethod::runtime_method`]), and so is the read-only
    /// `herdr_mcp.browser_handoff.prepare` (the package of a journaled chain);
    /// `work_memory.*` by its Work Memory.
    pub enum LocalMethod {
        /// Resume a continuity chain by id or conversation URL.
        ContinuityResume = "continuity.resume",
        /// The continuity chain of a conversation.
        ContinuityResolve = "continuity.resolve",
        /// Search continuity chains.
        ContinuitySearch = "continuity.search",
        /// Recent continuity chains.
        ContinuityList = "continuity.list",
        /// Bind a chat to a work chain.
        WorkMemoryBind = "work_memory.bind",
        /// Record one chat turn.
        WorkMemoryAppendTurn = "work_memory.append_turn",
        /// Record evidence.
        WorkMemoryAppendEvidence = "work_memory.append_evidence",
        /// Store a checkpoint.
        WorkMemoryCheckpointPut = "work_memory.checkpoint.put",
        /// Resume a work chain.
        WorkMemoryResume = "work_memory.resume",
        /// Search a work chain.
        WorkMemorySearch = "work_memory.search",
        /// Set, clear or read a chat's goal and its TODO items (Goal mode, SPEC J7).
        WorkMemoryGoal = "work_memory.goal",
        /// Prepare a browser handoff to a new conversation.
        BrowserHandoffPrepare = "herdr_mcp.browser_handoff.prepare",
    }
}

impl LocalMethod {
    /// The runtime method that serves this one, when the companion serves it.
    pub const fn runtime_method(self) -> Option<crate::names::Method> {
        use crate::names::Method;
        match self {
            LocalMethod::ContinuityResume => Some(Method::ContinuityResume),
            LocalMethod::ContinuityResolve => Some(Method::ContinuityResolve),
            LocalMethod::ContinuitySearch => Some(Method::ContinuitySearch),
            LocalMethod::ContinuityList => Some(Method::ContinuityList),
            LocalMethod::BrowserHandoffPrepare => Some(Method::BrowserHandoffPrepare),
            _ => None,
        }
    }

    /// True when the method only reads (resume, resolve, search, list, prepare).
    /// Every method is named (no wildcard): a new one must be classed here before it
    /// builds, so the JSON bridge never lets an unclassed write run as a read.
    pub const fn is_read_only(self) -> bool {
        match self {
            LocalMethod::ContinuityResume
            | LocalMethod::ContinuityResolve
            | LocalMethod::ContinuitySearch
            | LocalMethod::ContinuityList
            | LocalMethod::WorkMemoryResume
            | LocalMethod::WorkMemorySearch
            | LocalMethod::BrowserHandoffPrepare => true,
            LocalMethod::WorkMemoryBind
            | LocalMethod::WorkMemoryAppendTurn
            | LocalMethod::WorkMemoryAppendEvidence
            | LocalMethod::WorkMemoryCheckpointPut
            | LocalMethod::WorkMemoryGoal => false,
        }
    }
}

/// A Herdr method `herdr_call` forwards, and whether it only reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallableHerdrMethod {
    /// The method.
    pub method: HerdrMethod,
    /// True when it changes nothing in Herdr.
    pub read_only: bool,
}

const fn reads(method: HerdrMethod) -> CallableHerdrMethod {
    CallableHerdrMethod { method, read_only: true }
}

const fn writes(method: HerdrMethod) -> CallableHerdrMethod {
    CallableHerdrMethod { method, read_only: false }
}

/// The Herdr methods `herdr_call` forwards unchanged: reads, and typing into a pane (to
/// answer an agent's question). Creating or closing workspaces, panes and agents stays
/// with the user.
pub const CALLABLE_HERDR_METHODS: &[CallableHerdrMethod] = &[
    reads(HerdrMethod::SessionSnapshot),
    reads(HerdrMethod::WorkspaceList),
    reads(HerdrMethod::TabList),
    reads(HerdrMethod::PaneList),
    reads(HerdrMethod::PaneRead),
    reads(HerdrMethod::AgentList),
    reads(HerdrMethod::AgentGet),
    writes(HerdrMethod::PaneSendText),
    writes(HerdrMethod::PaneSendKeys),
    writes(HerdrMethod::PaneSendInput),
];

/// The allowlist entry of `method`, if `herdr_call` may forward it.
pub fn callable_herdr_method(method: &str) -> Option<CallableHerdrMethod> {
    CALLABLE_HERDR_METHODS.iter().copied().find(|c| c.method.as_str() == method)
}

/// Largest `tools.call` `arguments`, as JSON bytes (a 64 KiB prompt fits with room).
pub const MAX_TOOL_ARGUMENTS_BYTES: usize = 96 * 1024;
/// Largest `herdr_call` `params` string, in bytes.
pub const MAX_CALL_PARAMS_BYTES: usize = 64 * 1024;
/// Longest `herdr_call` `method`, in characters.
pub const MAX_METHOD_CHARS: usize = 128;
/// Longest `herdr_methods` `query`, in characters.
pub const MAX_QUERY_CHARS: usize = 128;
/// Largest Herdr answer `herdr_call` passes on, as JSON bytes.
pub const MAX_CALL_RESULT_BYTES: usize = 256 * 1024;
/// Largest HTTP request body `herdr-companion mcp --http` reads (arguments plus the
/// JSON-RPC envelope); a larger one is refused with 413.
pub const MAX_MCP_HTTP_BODY_BYTES: usize = 128 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn herdr_call_never_reaches_agent_prompt_and_names_parse_back() {
        assert!(callable_herdr_method("agent.prompt").is_none());
        assert_eq!(callable_herdr_method("pane.read").map(|c| c.read_only), Some(true));
        assert_eq!(callable_herdr_method("pane.send_keys").map(|c| c.read_only), Some(false));
        for local in LocalMethod::ALL {
            assert!(callable_herdr_method(local.as_str()).is_none(), "{local} is local, not Herdr's");
        }
        assert_eq!(ToolName::parse("herdr_prompt"), Ok(ToolName::HerdrPrompt));
        assert!(ToolName::parse("herdr_shell").is_err());
        assert!(!ToolName::HerdrExec.is_read_only() && !ToolName::HerdrFsPatch.is_read_only() && ToolName::HerdrInspect.is_read_only());
        assert!(ToolName::HerdrFsRead.is_read_only() && ToolName::HerdrSince.is_read_only());
        assert!(!ToolName::HerdrPrompt.is_read_only() && !ToolName::HerdrCall.is_read_only());
    }
}
