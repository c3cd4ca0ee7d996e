//! The planner tool registry (docs/PROTOCOL.md "Planner tools"): `tools.list` and
//! `tools.call`. It is the one registry every planner front end uses — `herdr-companion
//! mcp` turns MCP `tools/list` and `tools/call` into these two methods, and the JSON bridge
//! of z.ai / DeepSeek does the same — so a tool behaves alike wherever it is called.
//!
//! Invariants:
//! - Every argument is checked before any IO: unknown keys, types, emptiness and sizes
//!   (the whole `arguments` ≤ [`MAX_TOOL_ARGUMENTS_BYTES`] of JSON), with a message that
//!   names the argument and says what to send instead.
//! - `herdr_prompt` is `task.dispatch` (the same code path): the task is recorded in the
//!   chat's parent inbox before Herdr gets the prompt, and the answer comes at once (I1).
//! - `herdr_call` reaches only the allowlist of `continuity_protocol::tools`; `agent.prompt`
//!   is refused there (it would bypass the inbox). Of the runtime-local families, the
//!   journal's reads (`continuity.resolve|search|resume|list`) run the same code as the
//!   runtime methods of that name ([`super::journal`]), and so does the read-only handoff
//!   package `herdr_mcp.browser_handoff.prepare`; `work_memory.*` goes to the Work Memory
//!   service (`crate::work_memory`). The journal's write, `continuity.append`, is not
//!   reachable from a planner.
//! - `herdr_methods` and `herdr_inspect` change nothing, nor do the workstation reads
//!   (`herdr_fs_read`, `herdr_fs_list`, `herdr_fs_grep`, `herdr_git`, `herdr_since`,
//!   [`super::workstation`]), which act only inside the call's project roots.
//! - Every call carries its [`Caller`]: an MCP client is unrestricted; a JSON-bridge chat
//!   is confined by [`confine`] before anything runs — only the panes of its bound
//!   workspace (looked up in the catalog, not read off the id), `herdr_prompt` only with its
//!   own `browser_session_ref`, only its own continuity chain and Work Memory — and a
//!   refusal is the error `refused` with what and why.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::inbox::{checked_prompt, dispatch, DispatchRequest};
use super::Router;
use crate::herdr::HerdrError;
use crate::journal::store::ChainRow;
use crate::protocol::{ErrorCode, Method, MethodError, Request};
use crate::work_memory::{WorkMemory, WorkMemoryError};
use continuity_protocol::limits::MAX_REF_CHARS;
use continuity_protocol::tools::{
    callable_herdr_method, CALLABLE_HERDR_METHODS, MAX_CALL_PARAMS_BYTES, MAX_CALL_RESULT_BYTES, MAX_METHOD_CHARS, MAX_QUERY_CHARS,
    MAX_TOOL_ARGUMENTS_BYTES,
};
use continuity_protocol::{ClientMeta, LocalMethod, ToolName, ToolSpec};

/// How long `herdr_call` waits for Herdr.
const HERDR_CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// The arguments each tool takes (its schema's `properties`, checked by a test).
const fn arguments_of(tool: ToolName) -> &'static [&'static str] {
    if let Some(write) = super::write_tools::arguments_of(tool) {
        return write;
    }
    match tool {
        ToolName::HerdrPrompt => &["browser_session_ref", "target", "text", "workspace_id", "turn_id"],
        ToolName::HerdrCall => &["method", "params"],
        ToolName::HerdrMethods => &["query"],
        ToolName::HerdrInspect => &[],
        ToolName::HerdrFsRead | ToolName::HerdrFsList | ToolName::HerdrFsGrep | ToolName::HerdrGit | ToolName::HerdrSince => {
            match super::workstation::arguments_of(tool) {
                Some(arguments) => arguments,
                None => &[],
            }
        }
        ToolName::HerdrFsEdit
        | ToolName::HerdrFsWrite
        | ToolName::HerdrFsPatch
        | ToolName::HerdrExec
        | ToolName::HerdrExecStart
        | ToolName::HerdrExecRead
        | ToolName::HerdrExecKill => &[],
    }
}

/// Every planner tool, in the order `tools.list` gives them.
pub fn specs() -> Vec<ToolSpec> {
    let mut specs = herdr_specs();
    specs.extend(super::workstation::specs());
    specs.extend(super::write_tools::specs());
    specs
}

/// The Herdr tools (prompt, call, methods, inspect).
fn herdr_specs() -> Vec<ToolSpec> {
    let id = |what: &str| json!({"type": "string", "minLength": 1, "maxLength": MAX_REF_CHARS, "description": what});
    vec![
        ToolSpec {
            name: ToolName::HerdrPrompt,
            title: "Prompt a Herdr agent".to_owned(),
            description: "Send a prompt to the coding agent in a Herdr pane on behalf of this chat. It answers at once with \
                task_id, dispatch_id and turn_id and does not wait for the agent: when the agent settles, its result is \
                kept in the chat's parent inbox and the herdr-continuity extension writes one wake message into the chat. \
                Do not poll for it. browser_session_ref names that chat: every message the extension typed into this chat \
                ends with a line [herdr-continuity <id> ref=<browser_session_ref>]; send the value after ref= (the HUD shows \
                it too). Left out, the call is attributed only on evidence (this conversation already paired with a chat, or \
                the only bound chat generating a reply right now) and refused otherwise. A wake is a scheduling signal, not \
                evidence that the work succeeded: re-read the live state before deciding."
                .to_owned(),
            input_schema: json!({
                "type": "object",
                "additionalProperties": false,
                "required": ["target", "text"],
                "properties": {
                    "browser_session_ref": id("The chat the result is reported to (e.g. chatgpt:conv:<id> or chatgpt:project:<g-p-id>): the value after ref= on the last line of any message the herdr-continuity extension typed into this chat ([herdr-continuity <id> ref=<browser_session_ref>]), or the ref its HUD shows. Send it whenever you have it; left out, the companion attributes the call only on evidence and refuses it otherwise."),
                    "target": id("The pane whose agent gets the prompt, e.g. w1:p1 (herdr_inspect lists the panes and their agents)."),
                    "text": {"type": "string", "minLength": 1, "description": "The prompt for the agent, at most 64 KiB (UTF-8 bytes); point the agent at a file for more."},
                    "workspace_id": id("Optional: the pane's workspace, e.g. w1; when given it must be the pane's own."),
                    "turn_id": id("Optional: the chat turn the request came from, kept with the task."),
                },
            }),
            read_only: false,
        },
        ToolSpec {
            name: ToolName::HerdrCall,
            title: "Call a Herdr method".to_owned(),
            description: "Call one Herdr socket method from the allowlist (reads such as pane.read or agent.get, and typing \
                into a pane), or a companion method (continuity.*, work_memory.*, herdr_mcp.browser_handoff.prepare). \
                params is a JSON object encoded as a string. herdr_methods lists what can be called; prompts go through \
                herdr_prompt. To pick up earlier work (the user says continue / 继续 / 接着 / 恢复上次), call \
                continuity.resolve or continuity.search first and continuity.resume only on a unique_exact answer. \
                A legacy <<<HERDR_HANDOFF_V1 id=…>>> packet in a journaled chat resumes with continuity.resume \
                {\"continuity_id\": \"<packet id>\"}. work_memory.checkpoint.put anchors on a journal turn directly with \
                through_journal_turn {continuity_id, message_id} (no need to append_turn it again); a checkpoint's \
                verified is false once an anchor is gone or changed. \
                Goal mode: work_memory.goal {session_ref, goal, todos:[{text, done}]} sets this chat's goal and its TODO \
                items; mark items done as you finish them — with Auto on the chat is continued while one is open and \
                stops when all are done."
                .to_owned(),
            input_schema: json!({
                "type": "object",
                "additionalProperties": false,
                "required": ["method"],
                "properties": {
                    "method": {"type": "string", "minLength": 1, "maxLength": MAX_METHOD_CHARS, "description": "The method, e.g. pane.read."},
                    "params": {"type": "string", "maxLength": MAX_CALL_PARAMS_BYTES, "description": "The method's params as a JSON object in a string, e.g. {\"pane_id\":\"w1:p1\"}; omit it for {}."},
                },
            }),
            read_only: false,
        },
        ToolSpec {
            name: ToolName::HerdrMethods,
            title: "List callable methods".to_owned(),
            description: "List the methods herdr_call accepts, whether each only reads, and whether this companion serves it \
                yet. Read-only."
                .to_owned(),
            input_schema: json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "query": {"type": "string", "maxLength": MAX_QUERY_CHARS, "description": "Optional: keep only methods whose name contains this text."},
                },
            }),
            read_only: true,
        },
        ToolSpec {
            name: ToolName::HerdrInspect,
            title: "Inspect Herdr".to_owned(),
            description: "The companion's current view of Herdr: the connection, the workspaces and every pane with its \
                agent, status and working directory. Read-only; use it to pick a herdr_prompt target."
                .to_owned(),
            input_schema: json!({"type": "object", "additionalProperties": false, "properties": {}}),
            read_only: true,
        },
    ]
}

fn bad(message: String) -> MethodError {
    (ErrorCode::BadRequest, message)
}

/// A tool's arguments with the checks every tool shares.
pub(super) struct Arguments<'a> {
    /// The tool called.
    pub(super) tool: ToolName,
    /// Its arguments.
    pub(super) map: &'a Map<String, Value>,
}

impl Arguments<'_> {
    /// Refuses a key the tool does not take.
    pub(super) fn only_known(&self) -> Result<(), MethodError> {
        let allowed = arguments_of(self.tool);
        match self.map.keys().find(|k| !allowed.contains(&k.as_str())) {
            None => Ok(()),
            Some(key) => Err(bad(format!(
                "{} has no argument `{key}`; its arguments are: {}",
                self.tool,
                if allowed.is_empty() { "none".to_owned() } else { allowed.join(", ") }
            ))),
        }
    }

    /// An optional string argument of 1..=`max` characters (`null` counts as absent).
    pub(super) fn text(&self, key: &str, max: usize, hint: &str) -> Result<Option<String>, MethodError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.chars().count() > max => {
                Err(bad(format!("{}: {key} is {} characters; at most {max} are allowed — {hint}", self.tool, s.chars().count())))
            }
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
            Some(_) => Err(bad(format!("{}: {key} must be a non-empty string — {hint}", self.tool))),
        }
    }

    /// A required string argument of 1..=`max` characters.
    pub(super) fn required(&self, key: &str, max: usize, hint: &str) -> Result<String, MethodError> {
        self.text(key, max, hint)?.ok_or_else(|| bad(format!("{} needs {key}, a non-empty string — {hint}", self.tool)))
    }
}

/// Serves `tools.list` and `tools.call` (the router sends no other method).
pub async fn handle(api: &Router, request: &Request) -> Result<Value, MethodError> {
    if request.method == Method::ToolsList {
        return Ok(json!({"type": "tools_list", "tools": specs()}));
    }
    let params = &request.params;
    let name = match params.get("tool") {
        Some(Value::String(name)) => name,
        _ => return Err(bad("tools.call needs params.tool, the name of a tool from tools.list".to_owned())),
    };
    let empty = Map::new();
    let map = match params.get("arguments") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(map)) => map,
        Some(_) => return Err(bad(format!("{name}: arguments must be a JSON object"))),
    };
    let meta = match params.get("_meta") {
        None | Some(Value::Null) => ClientMeta::default(),
        Some(Value::Object(meta)) => ClientMeta::from_request_meta(meta),
        Some(_) => return Err(bad(format!("{name}: _meta must be a JSON object (the MCP request's client _meta)"))),
    };
    let (tool, result) = run(api, &Caller::Mcp(meta), name, map).await?;
    Ok(json!({"type": "tool_result", "tool": tool, "result": result}))
}

/// Who makes a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// An MCP client (`tools.call`, `herdr-companion mcp`): the user's own planner,
    /// unrestricted; its `herdr_prompt` goes to the chat [`super::attribution`] finds, with
    /// the request's client `_meta`.
    Mcp(ClientMeta),
    /// A JSON-bridge chat: confined to its own workspace, its own inbox and its own
    /// continuity chain ([`confine`]).
    Bridge {
        /// The chat's `browser_session_ref`.
        session_ref: String,
        /// The workspace the chat is bound to.
        workspace_id: String,
    },
}

/// The workspace of pane `pane_id` in the runtime's Herdr catalog (never read off the id).
fn workspace_of_pane(api: &Router, pane_id: &str) -> Option<String> {
    api.events.as_ref().and_then(|hub| hub.catalog().panes.get(pane_id).map(|p| p.workspace_id.clone()))
}

/// The journal conversation id of a chat's `browser_session_ref` (`zai:conv:<id>` → `<id>`).
fn conversation_of(session_ref: &str) -> &str {
    session_ref.rsplit(':').next().unwrap_or(session_ref)
}

/// The continuity chain `conversation_id` belongs to, if it was journaled.
async fn chain_of(api: &Router, conversation_id: &str) -> Option<String> {
    let journal = api.journal.as_ref()?;
    let conversation = conversation_id.to_owned();
    journal.with_store(move |s| s.chain_of_conversation(&conversation)).await.ok().flatten().map(|c| c.continuity_id)
}

/// What a bridge chat may not do; `Ok` for an MCP caller. Checks (and, for `herdr_prompt`
/// without a `browser_session_ref`, fills in) the arguments before anything runs: a bridge
/// chat reaches only the panes of its workspace (through the catalog), dispatches only for
/// itself, and reads only its own continuity chain and Work Memory. The error says what was
/// refused and why; arguments that are malformed are left to the tool's own checks.
pub async fn confine(api: &Router, caller: &Caller, name: &str, map: &mut Map<String, Value>) -> Result<(), String> {
    let Caller::Bridge { session_ref, workspace_id } = caller else { return Ok(()) };
    let Ok(tool) = ToolName::parse(name) else { return Ok(()) };
    let pane_in_workspace = |what: &str, pane: &str| -> Result<(), String> {
        match workspace_of_pane(api, pane) {
            Some(ws) if ws == *workspace_id => Ok(()),
            Some(_) => Err(format!("{what}: pane {pane} belongs to another workspace; this chat is bound to workspace {workspace_id} and reaches only its panes (herdr_inspect lists them)")),
            None => Err(format!("{what}: Herdr has no pane {pane} that the companion knows of in this chat's workspace {workspace_id}; pick a pane from herdr_inspect")),
        }
    };
    let same_workspace = |what: &str, given: Option<&Value>| -> Result<(), String> {
        match given.and_then(Value::as_str) {
            Some(ws) if ws != workspace_id => {
                Err(format!("{what}: workspace {ws} is not this chat's; it is bound to workspace {workspace_id} and reaches only that one"))
            }
            _ => Ok(()),
        }
    };
    match tool {
        ToolName::HerdrInspect | ToolName::HerdrMethods => Ok(()),
        // Confined by the call's roots (the registered roots and this chat's workspace's
        // pane directories) and, for herdr_since, to this chat's workspace's events.
        ToolName::HerdrFsRead | ToolName::HerdrFsList | ToolName::HerdrFsGrep | ToolName::HerdrGit | ToolName::HerdrSince => Ok(()),
        // The write tools confine themselves: a chat's project roots are the registered
        // roots and its own workspace's pane directories (`super::write_tools`), and an
        // exec session only by the caller that started it.
        ToolName::HerdrFsEdit
        | ToolName::HerdrFsWrite
        | ToolName::HerdrFsPatch
        | ToolName::HerdrExec
        | ToolName::HerdrExecStart
        | ToolName::HerdrExecRead
        | ToolName::HerdrExecKill => Ok(()),
        ToolName::HerdrPrompt => {
            match map.get("browser_session_ref") {
                None | Some(Value::Null) => {
                    map.insert("browser_session_ref".to_owned(), Value::from(session_ref.as_str()));
                }
                Some(Value::String(given)) if given == session_ref => {}
                Some(_) => {
                    return Err(format!(
                        "herdr_prompt: a chat prompts agents only for itself, so the result wakes this chat; browser_session_ref must be {session_ref} (or left out), not another chat's"
                    ))
                }
            }
            same_workspace("herdr_prompt", map.get("workspace_id"))?;
            match map.get("target").and_then(Value::as_str) {
                Some(pane) => pane_in_workspace("herdr_prompt", pane),
                None => Ok(()),
            }
        }
        ToolName::HerdrCall => {
            let Some(method) = map.get("method").and_then(Value::as_str).map(str::to_owned) else { return Ok(()) };
            let mut params = match map.get("params") {
                Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
                    Ok(Value::Object(params)) => params,
                    _ => return Ok(()),
                },
                _ => Map::new(),
            };
            let what = format!("herdr_call {method}");
            if let Ok(local) = LocalMethod::parse(&method) {
                let rewritten = confine_local(api, session_ref, local, &mut params).await.map_err(|why| format!("{what}: {why}"))?;
                if rewritten {
                    map.insert("params".to_owned(), Value::from(Value::Object(params).to_string()));
                }
                return Ok(());
            }
            let Some(callable) = callable_herdr_method(&method) else { return Ok(()) };
            use continuity_protocol::herdr::HerdrMethod;
            if matches!(
                callable.method,
                HerdrMethod::SessionSnapshot
                    | HerdrMethod::WorkspaceList
                    | HerdrMethod::TabList
                    | HerdrMethod::PaneList
                    | HerdrMethod::AgentList
            ) {
                return Err(format!("{what}: it reads across workspaces; this chat is bound to workspace {workspace_id} — use herdr_inspect, which lists that workspace's panes"));
            }
            same_workspace(&what, params.get("workspace_id"))?;
            let panes: Vec<&str> = ["pane_id", "target"].iter().filter_map(|k| params.get(*k).and_then(Value::as_str)).collect();
            if panes.is_empty() {
                return Err(format!("{what}: name the pane (params.pane_id) of this chat's workspace {workspace_id}"));
            }
            panes.into_iter().try_for_each(|pane| pane_in_workspace(&what, pane))
        }
    }
}

/// What a chat may read: the conversation it is and the chain that conversation belongs to.
const NOT_OWN: &str = "a chat reads only its own continuity chain (the conversation it is and the chain that conversation belongs to)";

/// Checks URL parameter `key` (`url`) of a bridge chat's read: the chat must have a chain
/// (a chat not journaled yet reads nothing by URL, so no fallback to the URL's Project can
/// widen the read), the URL's Project must be absent or its chain's, and its conversation
/// must be the chat's own or one of its chain. Answers the URL's conversation id (`None`
/// for a URL that does not parse: the method's own checks refuse it).
async fn check_url(api: &Router, own: &str, own_row: Option<&ChainRow>, key: &str, url: &str) -> Result<Option<String>, String> {
    let Some(row) = own_row else {
        return Err(format!(
            "{key}: this chat has no continuity chain yet (none of its turns is journaled), so it reads nothing by URL; {NOT_OWN} — search without a URL once its first turn is recorded"
        ));
    };
    let Ok(parsed) = crate::journal::ConversationUrl::parse(url) else { return Ok(None) };
    if let Some(project) = parsed.project_id.as_ref().filter(|p| Some(*p) != row.project_id.as_ref()) {
        let own_project = row.project_id.as_deref().unwrap_or("none");
        return Err(format!("{key} names Project {project}, not this chat's chain's Project ({own_project}); {NOT_OWN}"));
    }
    if parsed.conversation_id != own && chain_of(api, &parsed.conversation_id).await.as_deref() != Some(row.continuity_id.as_str()) {
        return Err(format!("{key} names another conversation; {NOT_OWN}"));
    }
    Ok(Some(parsed.conversation_id))
}

/// The journal row of the chain `conversation_id` belongs to, if it was journaled.
async fn chain_row_of(api: &Router, conversation_id: &str) -> Option<ChainRow> {
    let journal = api.journal.as_ref()?;
    let conversation = conversation_id.to_owned();
    journal.with_store(move |s| s.chain_of_conversation(&conversation)).await.ok().flatten()
}

/// A bridge chat's runtime-local call: only its own continuity chain and Work Memory.
/// Returns whether `params` was rewritten (a search narrowed to the chat's conversation).
async fn confine_local(api: &Router, session_ref: &str, method: LocalMethod, params: &mut Map<String, Value>) -> Result<bool, String> {
    let own = conversation_of(session_ref).to_owned();
    let own_row = chain_row_of(api, &own).await;
    let own_chain = own_row.as_ref().map(|row| row.continuity_id.clone());
    let text = |key: &str| params.get(key).and_then(Value::as_str).map(str::to_owned);
    let in_own_chain = |conversation: &str, chain: Option<String>| conversation == own || (chain.is_some() && chain == own_chain);
    let not_own = NOT_OWN;
    match method {
        LocalMethod::ContinuityList => {
            Err(format!("it lists every journaled conversation; {not_own} — use continuity.resolve with this chat's conversation_id {own}"))
        }
        LocalMethod::ContinuityResolve => match text("conversation_id") {
            Some(conversation) if !in_own_chain(&conversation, chain_of(api, &conversation).await) => {
                Err(format!("conversation {conversation} is not this chat's; {not_own}"))
            }
            _ => Ok(false),
        },
        LocalMethod::ContinuityResume | LocalMethod::BrowserHandoffPrepare => {
            if let Some(chain) = text("continuity_id") {
                if Some(&chain) != own_chain.as_ref() {
                    return Err(format!("chain {chain} is not this chat's; {not_own}"));
                }
            }
            for key in ["conversation_url", "source_url"] {
                if let Some(url) = text(key) {
                    check_url(api, &own, own_row.as_ref(), key, &url).await?;
                }
            }
            Ok(false)
        }
        LocalMethod::ContinuitySearch => {
            for key in ["project_id", "workspace_id"] {
                if params.get(key).is_some_and(|v| !v.is_null()) {
                    return Err(format!("{key} searches across chains; {not_own} — leave {key} out"));
                }
            }
            if let Some(conversation) = text("conversation_id") {
                if !in_own_chain(&conversation, chain_of(api, &conversation).await) {
                    return Err(format!("conversation {conversation} is not this chat's; {not_own}"));
                }
            }
            if let Some(url) = text("conversation_url") {
                // The URL's conversation replaces the URL: a search by URL of a chat the
                // journal never saw would otherwise widen to the URL's Project.
                if let Some(conversation) = check_url(api, &own, own_row.as_ref(), "conversation_url", &url).await? {
                    if text("conversation_id").is_none() {
                        params.remove("conversation_url");
                        params.insert("conversation_id".to_owned(), Value::from(conversation));
                        return Ok(true);
                    }
                }
                return Ok(false);
            }
            if text("conversation_id").is_none() {
                params.insert("conversation_id".to_owned(), Value::from(own));
                return Ok(true);
            }
            Ok(false)
        }
        LocalMethod::WorkMemoryResume | LocalMethod::WorkMemorySearch => {
            // They name a partition, not a chain: it must be the one bound to this chat's chain.
            let (Some(project_ref), Some(repo_id), Some(work_chain_id)) = (text("project_ref"), text("repo_id"), text("work_chain_id"))
            else {
                return Ok(false);
            };
            let Some(own_chain) = own_chain else {
                return Err("this chat has no continuity chain yet (none of its turns is journaled), so it has no Work Memory to read; a chat reaches only the Work Memory of its own continuity chain".to_owned());
            };
            let bound = match api.work_memory.as_ref() {
                Some(memory) => memory
                    .chain_of_partition(project_ref.clone(), repo_id.clone(), work_chain_id.clone())
                    .await
                    .map_err(|e| format!("Work Memory could not be read ({e}); retry"))?,
                None => return Ok(false),
            };
            match bound {
                Some(chain) if chain == own_chain => Ok(false),
                Some(_) => Err(format!("the Work Memory partition ({project_ref}, {repo_id}, {work_chain_id}) belongs to another chain; a chat reaches only the Work Memory of its own continuity chain {own_chain}")),
                None => Err(format!("no Work Memory partition ({project_ref}, {repo_id}, {work_chain_id}) is bound to this chat's chain {own_chain}; work_memory.bind it to continuity_id {own_chain} first")),
            }
        }
        _ => {
            // The other work_memory.* calls name the chain: only this chat's, only as this chat.
            match text("continuity_id") {
                Some(chain) if Some(&chain) == own_chain.as_ref() => {}
                Some(chain) => {
                    return Err(format!(
                        "Work Memory of chain {chain} is not this chat's; a chat reaches only the Work Memory of its own continuity chain"
                    ))
                }
                None => return Err("name this chat's own continuity_id (continuity.resolve gives it)".to_owned()),
            }
            match text("session_ref") {
                Some(other) if other != session_ref => {
                    Err(format!("session_ref {other} is not this chat's ({session_ref}); a chat writes Work Memory only as itself"))
                }
                _ => Ok(false),
            }
        }
    }
}

/// Runs the tool named `name` with `map` as its arguments for `caller`: the one code path
/// of `tools.call` (an MCP caller) and the JSON bridge (a bridge chat, confined by
/// [`confine`] first; a refusal is the error `refused`).
pub async fn run(api: &Router, caller: &Caller, name: &str, map: &Map<String, Value>) -> Result<(ToolName, Value), MethodError> {
    let mut confined = map.clone();
    confine(api, caller, name, &mut confined).await.map_err(|why| (ErrorCode::Refused, why))?;
    // An MCP caller's prompt goes to the chat it names or the evidence shows, else nowhere.
    let attributed = match caller {
        Caller::Mcp(meta) if name == ToolName::HerdrPrompt.as_str() => api.attribution.attribute(meta, &mut confined).await?,
        _ => None,
    };
    let map = &confined;
    let tool = ToolName::parse(name).map_err(|_| {
        let known: Vec<&str> = ToolName::ALL.iter().map(|t| t.as_str()).collect();
        let shown: String = name.chars().take(MAX_METHOD_CHARS).collect();
        (ErrorCode::UnknownTool, format!("there is no tool `{shown}`; the tools are {}", known.join(", ")))
    })?;
    let size = serde_json::to_vec(map).map(|b| b.len()).unwrap_or(usize::MAX);
    if size > MAX_TOOL_ARGUMENTS_BYTES {
        return Err(bad(format!(
            "{tool}: the arguments are {size} bytes of JSON; at most {MAX_TOOL_ARGUMENTS_BYTES} are allowed — shorten the text, or write it to a file and point the agent at it"
        )));
    }
    let args = Arguments { tool, map };
    let result = match tool {
        ToolName::HerdrPrompt => {
            let mut result = prompt(api, &args).await?;
            if let (Caller::Mcp(meta), Some(attributed)) = (caller, &attributed) {
                if let Err(error) = api.attribution.learn(meta, attributed).await {
                    api.log.line(format_args!("attribution: the pairing of a ChatGPT session was not stored: {error}"));
                }
                if let (Value::Object(map), Some(how)) = (&mut result, attributed_note(attributed)) {
                    map.insert("attributed".to_owned(), json!(how));
                }
            }
            result
        }
        ToolName::HerdrCall => call(api, &args).await?,
        ToolName::HerdrMethods => methods(api, &args)?,
        ToolName::HerdrInspect => inspect(api, caller, &args)?,
        ToolName::HerdrFsRead | ToolName::HerdrFsList | ToolName::HerdrFsGrep | ToolName::HerdrGit | ToolName::HerdrSince => {
            super::workstation::run(api, caller, &args).await?
        }
        ToolName::HerdrFsEdit
        | ToolName::HerdrFsWrite
        | ToolName::HerdrFsPatch
        | ToolName::HerdrExec
        | ToolName::HerdrExecStart
        | ToolName::HerdrExecRead
        | ToolName::HerdrExecKill => super::write_tools::run(api, caller, tool, map).await?,
    };
    Ok((tool, result))
}

/// How a prompt that named no ref found its chat (`None` when it named one).
fn attributed_note(attributed: &super::attribution::Attributed) -> Option<&'static str> {
    use super::attribution::Attributed;
    match attributed {
        Attributed::Given(_) => None,
        Attributed::Paired(_) => Some("paired_session"),
        Attributed::Generating(_) => Some("generating_chat"),
    }
}

async fn prompt(api: &Router, args: &Arguments<'_>) -> Result<Value, MethodError> {
    args.only_known()?;
    let browser_session_ref = args.required("browser_session_ref", MAX_REF_CHARS, super::attribution::WHERE_THE_REF_IS)?;
    let pane_id = args.required("target", MAX_REF_CHARS, "send a pane id such as w1:p1 from herdr_inspect")?;
    let turn_id = args.text("turn_id", MAX_REF_CHARS, "send the chat turn id, or leave it out")?;
    let prompt = checked_prompt(args.map.get("text"), "herdr_prompt", "text")?;
    let known = api.events.as_ref().and_then(|hub| hub.catalog().panes.get(&pane_id).map(|p| p.workspace_id.clone()));
    let workspace_id = match (args.text("workspace_id", MAX_REF_CHARS, "send the pane's workspace id, or leave it out")?, known) {
        (Some(given), _) => given,
        (None, Some(known)) => known,
        (None, None) => {
            return Err((
                ErrorCode::NotFound,
                format!("herdr_prompt: Herdr has no pane {pane_id} that the companion knows of; pick a target from herdr_inspect"),
            ))
        }
    };
    let dispatched = dispatch(api, DispatchRequest { browser_session_ref, workspace_id, pane_id, prompt, turn_id }).await?;
    let mut result = match dispatched {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    result.remove("type");
    result.insert(
        "next".to_owned(),
        json!("The agent works on it now. When it settles, its result reaches this chat through the parent inbox as one wake message; do not wait or poll for it."),
    );
    Ok(Value::Object(result))
}

async fn call(api: &Router, args: &Arguments<'_>) -> Result<Value, MethodError> {
    args.only_known()?;
    let method = args.required("method", MAX_METHOD_CHARS, "send a method name from herdr_methods, e.g. pane.read")?;
    let params = match args.map.get("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::String(text)) if text.len() > MAX_CALL_PARAMS_BYTES => {
            return Err(bad(format!(
                "herdr_call: params is {} bytes; at most {MAX_CALL_PARAMS_BYTES} are allowed",
                text.len()
            )))
        }
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(object)) => object,
            Ok(_) => return Err(bad("herdr_call: params must decode to a JSON object, e.g. \"{\\\"pane_id\\\":\\\"w1:p1\\\"}\"".to_owned())),
            Err(e) => return Err(bad(format!("herdr_call: params is not valid JSON ({e}); send a JSON object encoded as a string, e.g. \"{{\\\"pane_id\\\":\\\"w1:p1\\\"}}\""))),
        },
        Some(_) => return Err(bad("herdr_call: params must be a string holding a JSON object (not the object itself), e.g. \"{\\\"pane_id\\\":\\\"w1:p1\\\"}\"".to_owned())),
    };
    if let Ok(local) = LocalMethod::parse(&method) {
        return local_call(api, local, params).await;
    }
    if method == continuity_protocol::herdr::HerdrMethod::AgentPrompt {
        return Err(bad(
            "herdr_call does not send prompts; use herdr_prompt, which records the task so its result comes back to the chat".to_owned()
        ));
    }
    let Some(callable) = callable_herdr_method(&method) else {
        return Err(bad(format!("herdr_call cannot reach `{method}`; herdr_methods lists the methods it can call")));
    };
    if let Some(error) = api.herdr_not_ready() {
        return Err(error);
    }
    let socket = PathBuf::from(api.herdr().socket);
    let result =
        crate::herdr::request(&socket, callable.method, Value::Object(params), HERDR_CALL_TIMEOUT).await.map_err(|error| match error {
            HerdrError::Remote { .. } => (ErrorCode::HerdrError, format!("{error}; check the params against Herdr's schema for {method}")),
            other => (ErrorCode::HerdrUnavailable, other.to_string()),
        })?;
    let size = serde_json::to_vec(&result).map(|b| b.len()).unwrap_or(usize::MAX);
    if size > MAX_CALL_RESULT_BYTES {
        return Err(bad(format!(
            "herdr_call: Herdr's answer to {method} is {size} bytes; at most {MAX_CALL_RESULT_BYTES} are passed on — ask for less (e.g. fewer lines)"
        )));
    }
    Ok(json!({"method": method, "read_only": callable.read_only, "result": result}))
}

/// A runtime-local method through `herdr_call`: the journal's reads and the handoff package
/// as the runtime methods of that name, `work_memory.*` by the Work Memory service, the rest
/// `not_available`.
async fn local_call(api: &Router, method: LocalMethod, params: Map<String, Value>) -> Result<Value, MethodError> {
    if let Some(served) = method.runtime_method() {
        let result = super::journal::handle(api, served, &params).await?;
        return Ok(json!({"method": method, "read_only": method.is_read_only(), "result": result}));
    }
    if !WorkMemory::serves(method) {
        return Err((
            ErrorCode::NotAvailable,
            format!("{method} is not served by herdr-companion {}; herdr_methods shows what is available", env!("CARGO_PKG_VERSION")),
        ));
    }
    let Some(work_memory) = &api.work_memory else {
        return Err((ErrorCode::NotReady, format!("{method}: the Work Memory store in state.db could not be opened; see runtime.log (herdr-companion doctor) and restart the runtime")));
    };
    let result = work_memory.call(method, Value::Object(params)).await.map_err(|error| {
        let code = match error {
            WorkMemoryError::NotFound(_) => ErrorCode::NotFound,
            WorkMemoryError::Store(_) | WorkMemoryError::CallLost(_) => ErrorCode::Error,
            _ => ErrorCode::BadRequest,
        };
        (code, format!("{}: {error}", error.code()))
    })?;
    Ok(json!({"method": method, "read_only": method.is_read_only(), "result": result}))
}

fn methods(api: &Router, args: &Arguments<'_>) -> Result<Value, MethodError> {
    args.only_known()?;
    let query = args.text("query", MAX_QUERY_CHARS, "send part of a method name, or leave it out")?.map(|q| q.to_lowercase());
    let herdr =
        CALLABLE_HERDR_METHODS.iter().map(|c| json!({"method": c.method, "source": "herdr", "read_only": c.read_only, "available": true}));
    let local = LocalMethod::ALL
        .iter()
        .map(|m| json!({"method": m, "source": "companion", "read_only": m.is_read_only(), "available": m.runtime_method().is_some() || WorkMemory::serves(*m) && api.work_memory.is_some()}));
    let matches = |entry: &Value| {
        let name = entry.get("method").and_then(Value::as_str).unwrap_or("");
        query.as_deref().is_none_or(|q| name.contains(q))
    };
    let listed: Vec<Value> = herdr.chain(local).filter(matches).collect();
    Ok(json!({
        "methods": listed,
        "note": "Call them with herdr_call (params as a JSON object in a string). Methods with available: false answer not_available in this companion. Prompts go through herdr_prompt.",
    }))
}

fn inspect(api: &Router, caller: &Caller, args: &Arguments<'_>) -> Result<Value, MethodError> {
    args.only_known()?;
    // A bridge chat sees its own workspace only.
    let visible = |ws: &str| match caller {
        Caller::Mcp(_) => true,
        Caller::Bridge { workspace_id, .. } => ws == workspace_id,
    };
    let (workspaces, panes) = match api.events.as_ref() {
        Some(hub) => {
            let catalog = hub.catalog();
            let panes: Vec<Value> = catalog.panes.values().filter(|p| visible(&p.workspace_id)).map(|p| json!(p)).collect();
            let workspaces = catalog
                .workspace_list()
                .into_iter()
                .filter(|w| w.get("workspace_id").and_then(Value::as_str).is_some_and(visible))
                .collect();
            (workspaces, panes)
        }
        None => (Vec::new(), Vec::new()),
    };
    Ok(json!({
        "runtime_version": env!("CARGO_PKG_VERSION"),
        "herdr": api.herdr(),
        "workspaces": workspaces,
        "panes": panes,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_is_listed_once_and_its_schema_names_exactly_the_arguments_it_accepts() {
        let specs = specs();
        let names: Vec<ToolName> = specs.iter().map(|s| s.name).collect();
        assert_eq!(names, ToolName::ALL);
        for spec in &specs {
            let mut schema: Vec<&str> =
                spec.input_schema["properties"].as_object().map(|p| p.keys().map(String::as_str).collect()).unwrap_or_default();
            let mut accepted = arguments_of(spec.name).to_vec();
            schema.sort_unstable();
            accepted.sort_unstable();
            assert_eq!(schema, accepted, "{}", spec.name);
            assert_eq!(spec.input_schema["additionalProperties"], false, "{}", spec.name);
            let required = spec.input_schema.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
            assert!(required.iter().all(|r| r.as_str().is_some_and(|r| accepted.contains(&r))), "{}", spec.name);
        }
    }
}
