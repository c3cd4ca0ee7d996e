//! The planner tool registry (docs/PROTOCOL.md "Planner tools"): `tools.list` and
//! `tools.call`. It is the one registry every planner front end uses — `herdr-companion
//! mcp` turns MCP `tools/list` and `tools/call` into these two methods, and the JSON bridge
//! of z.ai / DeepSeek will do the same — so a tool behaves alike wherever it is called.
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
//! - `herdr_methods` and `herdr_inspect` change nothing.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::inbox::{checked_prompt, dispatch, DispatchRequest};
use super::Router;
use crate::work_memory::{WorkMemory, WorkMemoryError};
use crate::herdr::HerdrError;
use crate::protocol::{ErrorCode, Method, MethodError, Request};
use continuity_protocol::limits::MAX_REF_CHARS;
use continuity_protocol::tools::{
    callable_herdr_method, CALLABLE_HERDR_METHODS, MAX_CALL_PARAMS_BYTES, MAX_CALL_RESULT_BYTES, MAX_METHOD_CHARS,
    MAX_QUERY_CHARS, MAX_TOOL_ARGUMENTS_BYTES,
};
use continuity_protocol::{LocalMethod, ToolName, ToolSpec};

/// How long `herdr_call` waits for Herdr.
const HERDR_CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// The arguments each tool takes (its schema's `properties`, checked by a test).
const fn arguments_of(tool: ToolName) -> &'static [&'static str] {
    match tool {
        ToolName::HerdrPrompt => &["browser_session_ref", "target", "text", "workspace_id", "turn_id"],
        ToolName::HerdrCall => &["method", "params"],
        ToolName::HerdrMethods => &["query"],
        ToolName::HerdrInspect => &[],
    }
}

/// Every planner tool, in the order `tools.list` gives them.
pub fn specs() -> Vec<ToolSpec> {
    let id = |what: &str| json!({"type": "string", "minLength": 1, "maxLength": MAX_REF_CHARS, "description": what});
    vec![
        ToolSpec {
            name: ToolName::HerdrPrompt,
            title: "Prompt a Herdr agent".to_owned(),
            description: "Send a prompt to the coding agent in a Herdr pane on behalf of this chat. It answers at once with \
                task_id, dispatch_id and turn_id and does not wait for the agent: when the agent settles, its result is \
                kept in the chat's parent inbox and the herdr-continuity extension writes one wake message into the chat. \
                Do not poll for it."
                .to_owned(),
            input_schema: json!({
                "type": "object",
                "additionalProperties": false,
                "required": ["browser_session_ref", "target", "text"],
                "properties": {
                    "browser_session_ref": id("The chat's session ref as the herdr-continuity HUD shows it (e.g. chatgpt:conv:<id> or chatgpt:project:<g-p-id>); the result is reported to that chat."),
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
                herdr_prompt."
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
struct Arguments<'a> {
    tool: ToolName,
    map: &'a Map<String, Value>,
}

impl Arguments<'_> {
    /// Refuses a key the tool does not take.
    fn only_known(&self) -> Result<(), MethodError> {
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
    fn text(&self, key: &str, max: usize, hint: &str) -> Result<Option<String>, MethodError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.chars().count() > max => Err(bad(format!(
                "{}: {key} is {} characters; at most {max} are allowed — {hint}",
                self.tool,
                s.chars().count()
            ))),
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
            Some(_) => Err(bad(format!("{}: {key} must be a non-empty string — {hint}", self.tool))),
        }
    }

    /// A required string argument of 1..=`max` characters.
    fn required(&self, key: &str, max: usize, hint: &str) -> Result<String, MethodError> {
        self.text(key, max, hint)?
            .ok_or_else(|| bad(format!("{} needs {key}, a non-empty string — {hint}", self.tool)))
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
    let (tool, result) = run(api, name, map).await?;
    Ok(json!({"type": "tool_result", "tool": tool, "result": result}))
}

/// Runs the tool named `name` with `map` as its arguments: the one code path of
/// `tools.call` and the JSON bridge.
pub async fn run(api: &Router, name: &str, map: &Map<String, Value>) -> Result<(ToolName, Value), MethodError> {
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
        ToolName::HerdrPrompt => prompt(api, &args).await?,
        ToolName::HerdrCall => call(api, &args).await?,
        ToolName::HerdrMethods => methods(api, &args)?,
        ToolName::HerdrInspect => inspect(api, &args)?,
    };
    Ok((tool, result))
}

async fn prompt(api: &Router, args: &Arguments<'_>) -> Result<Value, MethodError> {
    args.only_known()?;
    let browser_session_ref = args.required("browser_session_ref", MAX_REF_CHARS, "send the ref the herdr-continuity HUD shows for this chat")?;
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
        return Err(bad("herdr_call does not send prompts; use herdr_prompt, which records the task so its result comes back to the chat".to_owned()));
    }
    let Some(callable) = callable_herdr_method(&method) else {
        return Err(bad(format!("herdr_call cannot reach `{method}`; herdr_methods lists the methods it can call")));
    };
    if let Some(error) = api.herdr_not_ready() {
        return Err(error);
    }
    let socket = PathBuf::from(api.herdr().socket);
    let result = crate::herdr::request(&socket, callable.method, Value::Object(params), HERDR_CALL_TIMEOUT).await.map_err(|error| match error {
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
            format!(
                "{method} is not served by herdr-companion {}; herdr_methods shows what is available",
                env!("CARGO_PKG_VERSION")
            ),
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
    let herdr = CALLABLE_HERDR_METHODS
        .iter()
        .map(|c| json!({"method": c.method, "source": "herdr", "read_only": c.read_only, "available": true}));
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

fn inspect(api: &Router, args: &Arguments<'_>) -> Result<Value, MethodError> {
    args.only_known()?;
    let (workspaces, panes) = match api.events.as_ref() {
        Some(hub) => {
            let catalog = hub.catalog();
            let panes: Vec<Value> = catalog.panes.values().map(|p| json!(p)).collect();
            (catalog.workspace_list(), panes)
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
            let mut schema: Vec<&str> = spec.input_schema["properties"].as_object().map(|p| p.keys().map(String::as_str).collect()).unwrap_or_default();
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
