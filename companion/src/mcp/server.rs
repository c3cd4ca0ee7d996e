//! The MCP server handler: MCP `tools/list` and `tools/call` become the runtime's
//! `tools.list` and `tools.call` (the planner tool registry, `crate::api::tools` in the
//! runtime process). Nothing is decided here; it translates.
//!
//! How runtime answers map to MCP: a result is a tool result with the JSON both as
//! `structuredContent` and as text; an unknown tool is a JSON-RPC `invalid_params` error;
//! every other refusal (a bad argument, Herdr not running, `not_available`, the runtime
//! unreachable) is a tool result with `isError: true` whose text says what to do, so the
//! model can read it and correct its call.

use std::sync::Arc;

use continuity_protocol::{Call, ClientMeta, ErrorCode, MethodResult, NoParams, ToolCallParams, ToolSpec};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use super::runtime_client::{RuntimeCallError, RuntimeClient};

/// What the server tells a client about itself at `initialize`.
const INSTRUCTIONS: &str = "Tools of the local herdr-continuity companion. herdr_inspect shows the Herdr workspaces and panes; \
herdr_prompt gives an agent work for this chat and returns at once (the result comes back into the chat as one wake message when the agent settles); \
herdr_call and herdr_methods reach other Herdr methods. \
herdr_prompt's browser_session_ref names the chat the result goes back to: take it from the last line of any message the herdr-continuity extension typed into this chat \
([herdr-continuity <id> ref=<browser_session_ref>], the value after ref=), or from the extension's HUD. Without it the call is attributed only on evidence \
(this conversation was already paired with a chat, or it is the only bound chat generating a reply right now) and refused otherwise. \
A wake message is a scheduling signal, not evidence that the work succeeded: re-read the live Herdr and Git state before you decide. \
Resume rule: when the user says continue, 继续, 接着 or 恢复上次 (pick up earlier work), first find the work by identity with herdr_call \
continuity.resolve {conversation_id} or continuity.search {project_id, workspace_id, conversation_id, conversation_url, query}, and only then \
continuity.resume {continuity_id} (a conversation_url may be resumed directly). Resume on your own only when the search answers \
resolution unique_exact with auto_resume_safe true; for confirmation_required show the candidates and let the user choose; for none say so \
and never invent an id. Resumed turns are persisted context: re-check the live Herdr workspace, the runtime and Git before changing anything.";

/// The MCP face of the runtime's planner tools.
#[derive(Debug, Clone)]
pub struct PlannerTools {
    /// The runtime it forwards to.
    runtime: Arc<RuntimeClient>,
}

impl PlannerTools {
    /// Tools served by the runtime at `runtime`.
    pub fn new(runtime: RuntimeClient) -> Self {
        Self { runtime: Arc::new(runtime) }
    }
}

/// The MCP description of one registry tool.
fn mcp_tool(spec: ToolSpec) -> Tool {
    let schema = match spec.input_schema {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    Tool::new(spec.name.as_str(), spec.description, schema)
        .with_title(spec.title.clone())
        .with_annotations(ToolAnnotations::with_title(spec.title).read_only(spec.read_only))
}

fn internal(error: &RuntimeCallError) -> ErrorData {
    ErrorData::internal_error(error.to_string(), None)
}

impl ServerHandler for PlannerTools {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("herdr-companion", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        match self.runtime.call(&Call::ToolsList(NoParams {})).await {
            Ok(MethodResult::ToolsList { tools }) => Ok(ListToolsResult::with_all_items(tools.into_iter().map(mcp_tool).collect())),
            Ok(other) => Err(ErrorData::internal_error(format!("the runtime answered tools.list with {other:?}"), None)),
            Err(error) => Err(internal(&error)),
        }
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        // The request's `_meta` (rmcp moves it into the context; the params' copy when it
        // did not): ChatGPT's `openai/session` and `openai/subject` attribute a
        // `herdr_prompt` without a `browser_session_ref` to its chat (crate::api::attribution).
        let meta = match (context.meta.is_empty(), &request.meta) {
            (true, Some(params_meta)) => ClientMeta::from_request_meta(params_meta),
            _ => ClientMeta::from_request_meta(&context.meta),
        };
        let call =
            Call::ToolsCall(ToolCallParams { tool: request.name.into_owned(), arguments: request.arguments.unwrap_or_default(), meta });
        let result = match self.runtime.call(&call).await {
            Ok(MethodResult::ToolResult { result, .. }) => CallToolResult::structured(result),
            Ok(other) => return Err(ErrorData::internal_error(format!("the runtime answered tools.call with {other:?}"), None)),
            Err(RuntimeCallError::Refused(error)) if error.code == ErrorCode::UnknownTool => {
                return Err(ErrorData::invalid_params(error.message, None))
            }
            Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
        };
        Ok(result.into())
    }
}
