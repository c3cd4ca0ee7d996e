//! `goal.set` and `goal.evidence` (Goal mode, SPEC J7): the HUD sets the scope's goal, and
//! the extension's goal supervisor reads what the runtime holds for it — the goal and its
//! TODO items (Work Memory), the scope's open inbox tasks, the bound workspace's state
//! (the catalog). Evidence only: the extension decides, this reports.
//!
//! Invariants (tests in `tests/it/goal.rs`):
//! - Params are typed and checked before any IO (unknown key, missing ref, oversized goal:
//!   `bad_request` saying what to send).
//! - A part that cannot be read fails the call (never a guessed zero: Goal mode stops on
//!   an error, fail closed); only the workspace, which the catalog may not know yet, is
//!   `unknown`.
//! - The answer is bounded: counts and one goal text of at most `MAX_GOAL_BYTES`.

use continuity_protocol::{GoalEvidenceParams, GoalSetParams, Method, MethodResult};
use serde_json::Value;

use super::Router;
use crate::protocol::{ErrorCode, MethodError, Request};
use crate::work_memory::WorkMemoryError;

fn typed<T: serde::de::DeserializeOwned>(request: &Request, send: &str) -> Result<T, MethodError> {
    serde_json::from_value(Value::Object(request.params.clone()))
        .map_err(|e| (ErrorCode::BadRequest, format!("{}: {e}; send {send}", request.method)))
}

fn memory_error(method: Method, error: WorkMemoryError) -> MethodError {
    match error {
        WorkMemoryError::Invalid(text) => (ErrorCode::BadRequest, text),
        other => (ErrorCode::Error, format!("{method}: {other}")),
    }
}

fn check_ref(method: Method, session_ref: &str) -> Result<(), MethodError> {
    if session_ref.trim().is_empty() || session_ref.len() > continuity_protocol::work_memory::MAX_REF_BYTES {
        return Err((ErrorCode::BadRequest, format!("{method} needs params.browser_session_ref, the chat's session ref (1 to 512 bytes)")));
    }
    Ok(())
}

/// The state of `workspace_id`'s agents in the catalog: `blocked` when one waits for a
/// human, else `working` when one works, else `idle`; `unknown` when the catalog does not
/// hold the workspace.
pub fn workspace_state(catalog: &crate::herdr::catalog::Catalog, workspace_id: &str) -> &'static str {
    let panes: Vec<&str> = catalog.panes.values().filter(|p| p.workspace_id == workspace_id).map(|p| p.agent_status.as_str()).collect();
    if panes.contains(&"blocked") {
        "blocked"
    } else if panes.contains(&"working") {
        "working"
    } else if catalog.workspaces.contains_key(workspace_id) || !panes.is_empty() {
        "idle"
    } else {
        "unknown"
    }
}

/// Serves `goal.set` and `goal.evidence` (the router sends no other method).
pub async fn handle(api: &Router, request: &Request) -> Result<Value, MethodError> {
    let method = request.method;
    let Some(memory) = api.work_memory.as_ref() else {
        return Err((ErrorCode::NotReady, format!("{method}: the Work Memory store in state.db could not be opened; see runtime.log (herdr-companion doctor) and restart the runtime")));
    };
    let (session_ref, workspace_id, state) = if method == Method::GoalSet {
        let params: GoalSetParams = typed(request, "{\"browser_session_ref\": \"…\", \"goal\": \"…\"} (\"\" clears)")?;
        check_ref(method, &params.browser_session_ref)?;
        let state = memory.set_goal(params.browser_session_ref.clone(), params.goal).await.map_err(|e| memory_error(method, e))?;
        (params.browser_session_ref, None, state)
    } else {
        let params: GoalEvidenceParams = typed(request, "{\"browser_session_ref\": \"…\", \"workspace_id\": \"…\"}")?;
        check_ref(method, &params.browser_session_ref)?;
        if let Some(workspace_id) = &params.workspace_id {
            let max = continuity_protocol::limits::MAX_REF_CHARS;
            if workspace_id.trim().is_empty() || workspace_id.chars().count() > max || workspace_id.chars().any(char::is_control) {
                return Err((ErrorCode::BadRequest, format!("{method}: params.workspace_id must be the bound workspace's id (1 to {max} characters, no control character), or left out")));
            }
        }
        let state = memory.goal_of(params.browser_session_ref.clone()).await.map_err(|e| memory_error(method, e))?;
        (params.browser_session_ref, params.workspace_id, state)
    };
    let open_tasks = match api.inbox.as_ref() {
        Some(inbox) => {
            let owned = session_ref.clone();
            let counts = inbox
                .with_store(move |store| store.counts(&owned))
                .await
                .map_err(|e| (ErrorCode::InboxUnavailable, format!("{method}: the parent inbox could not be read ({e}); retry")))?;
            u32::try_from(counts.running).unwrap_or(u32::MAX)
        }
        None => {
            return Err((
                ErrorCode::NotReady,
                format!("{method}: the runtime's parent inbox is not open (see runtime.log); retry in a moment"),
            ))
        }
    };
    let workspace = match (&workspace_id, api.events.as_ref()) {
        (Some(id), Some(events)) => workspace_state(&events.catalog(), id),
        _ => "unknown",
    };
    let todos_done = state.todos.iter().filter(|t| t.done).count();
    let todos_open = state.todos.len() - todos_done;
    let result = MethodResult::GoalEvidence {
        browser_session_ref: session_ref,
        goal: state.goal,
        todos_open: u32::try_from(todos_open).unwrap_or(u32::MAX),
        todos_done: u32::try_from(todos_done).unwrap_or(u32::MAX),
        open_tasks,
        workspace: workspace.to_owned(),
    };
    serde_json::to_value(result).map_err(|e| (ErrorCode::Error, format!("{method}: {e}")))
}
