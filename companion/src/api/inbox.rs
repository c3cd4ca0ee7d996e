//! Runtime methods of the parent inbox (docs/PROTOCOL.md "Parent inbox"): `task.dispatch`,
//! `task.list`, `inbox.pending`, `inbox.ack`, `inbox.counts`.
//!
//! Invariants:
//! - Every method is scoped by a `browser_session_ref` (1–256 chars); nothing crosses refs (I3).
//! - Inputs are bounded before any IO: ids ≤ 256 chars, prompt ≤ 64 KiB, ≤ 100 ack ids.
//! - `task.dispatch` answers as soon as Herdr accepted the prompt (no wait, I1).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::Router;
use crate::clock::unix_millis;
use crate::herdr::HerdrError;
use crate::inbox::new_id;
use crate::inbox::store::{NewTask, StoreError};
use crate::protocol::{ErrorCode, Method, MethodError, Request};
use continuity_protocol::herdr::{HerdrErrorCode, HerdrMethod};

use continuity_protocol::limits::is_ref;
pub use continuity_protocol::limits::{MAX_ACK_IDS, MAX_LIST, MAX_PENDING, MAX_PROMPT_BYTES, MAX_REF_CHARS};
/// Characters of the prompt kept in the row.
const PROMPT_PREVIEW_CHARS: usize = 200;
/// Timeout of Herdr `agent.prompt`.
const PROMPT_TIMEOUT: Duration = Duration::from_secs(5);

/// A validated `task.dispatch`.
#[derive(Debug, Clone, PartialEq)]
pub struct DispatchRequest {
    /// The chat's stable session ref.
    pub browser_session_ref: String,
    /// Target workspace.
    pub workspace_id: String,
    /// Target pane.
    pub pane_id: String,
    /// The prompt.
    pub prompt: String,
    /// The chat turn, if given.
    pub turn_id: Option<String>,
}

fn bad(message: String) -> MethodError {
    (ErrorCode::BadRequest, message)
}

/// A required id-like string param of 1..=[`MAX_REF_CHARS`] characters.
fn required_ref(params: &Map<String, Value>, method: &str, key: &str, example: &str) -> Result<String, MethodError> {
    match params.get(key) {
        Some(Value::String(s)) if is_ref(s) => Ok(s.clone()),
        Some(Value::String(s)) if !s.is_empty() => {
            Err(bad(format!("{method}: params.{key} is {} characters; at most {MAX_REF_CHARS} are allowed", s.chars().count())))
        }
        _ => Err(bad(format!("{method} needs params.{key}, a non-empty string (e.g. {example})"))),
    }
}

impl DispatchRequest {
    /// Validates `task.dispatch` params.
    pub fn parse(params: &Map<String, Value>) -> Result<Self, MethodError> {
        let m = Method::TaskDispatch.as_str();
        let browser_session_ref = required_ref(params, m, "browser_session_ref", "the chat's stable session ref")?;
        let workspace_id = required_ref(params, m, "workspace_id", "\"w1\"")?;
        let pane_id = required_ref(params, m, "pane_id", "\"w1:p1\"")?;
        let turn_id = match params.get("turn_id") {
            None | Some(Value::Null) => None,
            Some(_) => Some(required_ref(params, m, "turn_id", "the chat turn id, or omit it")?),
        };
        let prompt = checked_prompt(params.get("prompt"), m, "params.prompt")?;
        Ok(Self { browser_session_ref, workspace_id, pane_id, prompt, turn_id })
    }
}

/// A prompt for an agent: a non-empty string of at most [`MAX_PROMPT_BYTES`]; `method` and
/// `key` name it in the refusal (`task.dispatch` / `params.prompt`, `herdr_prompt` / `text`).
pub(super) fn checked_prompt(value: Option<&Value>, method: &str, key: &str) -> Result<String, MethodError> {
    match value {
        Some(Value::String(p)) if p.len() > MAX_PROMPT_BYTES => Err(bad(format!(
            "{method}: {key} is {} bytes; at most {MAX_PROMPT_BYTES} (64 KiB) are allowed — shorten it or point the agent at a file",
            p.len()
        ))),
        Some(Value::String(p)) if !p.trim().is_empty() => Ok(p.clone()),
        _ => Err(bad(format!("{method} needs {key}, a non-empty string (the text for the agent)"))),
    }
}

/// The error a Herdr refusal of `agent.prompt` becomes.
pub fn prompt_error(pane_id: &str, error: &HerdrError) -> MethodError {
    match error {
        HerdrError::Remote { code, .. } => match HerdrErrorCode::parse(code) {
            Ok(HerdrErrorCode::AgentBlocked) => (ErrorCode::AgentBlocked, format!(
                "the agent in pane {pane_id} is blocked waiting for interactive input; answer it in Herdr, then dispatch again"
            )),
            Ok(HerdrErrorCode::AgentNotReady) => (ErrorCode::AgentNotReady, format!(
                "pane {pane_id} has no agent ready for a prompt (it is busy, or not a recognised agent); wait until it is idle or pick another pane, then dispatch again"
            )),
            Ok(HerdrErrorCode::AgentNotFound | HerdrErrorCode::PaneNotFound | HerdrErrorCode::NotFound) => (ErrorCode::NotFound, format!(
                "Herdr has no agent in pane {pane_id} (closed, or never ran an agent); pick a pane from herdr.panes and dispatch again"
            )),
            _ => (ErrorCode::HerdrError, format!("{error}; the task was not dispatched")),
        },
        other => (ErrorCode::HerdrUnavailable, format!("{other}; the task was not dispatched")),
    }
}

fn store_error(error: StoreError) -> MethodError {
    let code = match error {
        StoreError::Sqlite(_) | StoreError::Schema(_) | StoreError::CallLost(_) => ErrorCode::InboxUnavailable,
    };
    (code, error.to_string())
}

fn inbox_not_open() -> MethodError {
    (ErrorCode::NotReady, "the runtime's parent inbox is not open (see runtime.log); retry in a moment".to_owned())
}

/// Serves `task.*` and `inbox.*` (the router sends no other method).
pub async fn handle(api: &Router, request: &Request) -> Result<Value, MethodError> {
    let Some(inbox) = api.inbox.as_ref() else {
        return Err(inbox_not_open());
    };
    let params = &request.params;
    let method = request.method.as_str();
    if request.method == Method::TaskDispatch {
        return dispatch(api, DispatchRequest::parse(params)?).await;
    }
    let session_ref = required_ref(params, method, "browser_session_ref", "the chat's stable session ref")?;
    match request.method {
        Method::InboxCounts => {
            let owned = session_ref.clone();
            let counts = inbox.with_store(move |store| store.counts(&owned)).await.map_err(store_error)?;
            Ok(json!({"type": "inbox_counts", "browser_session_ref": session_ref, "counts": counts}))
        }
        Method::InboxPending => {
            // A settle the client already received must be reflected here (I2); a failed
            // catch-up leaves it to the follower and answers what is stored.
            let socket = std::path::PathBuf::from(api.herdr().socket);
            if let Err(error) = inbox.catch_up(&socket).await {
                api.log.line(format_args!("parent inbox: catch-up before inbox.pending failed: {error}"));
            }
            let owned = session_ref.clone();
            let mut items = inbox.with_store(move |store| store.pending(&owned, MAX_PENDING + 1)).await.map_err(store_error)?;
            let more = items.len() > MAX_PENDING;
            items.truncate(MAX_PENDING);
            let items: Vec<Value> = items.iter().map(|t| json!(t)).collect();
            Ok(json!({"type": "inbox_pending", "browser_session_ref": session_ref, "items": items, "more": more}))
        }
        Method::TaskList => {
            let owned = session_ref.clone();
            let tasks = inbox.with_store(move |store| store.list(&owned, MAX_LIST)).await.map_err(store_error)?;
            let tasks: Vec<Value> = tasks.iter().map(|t| json!(t)).collect();
            Ok(json!({"type": "task_list", "browser_session_ref": session_ref, "tasks": tasks}))
        }
        _ => {
            let ids = match params.get("task_ids").and_then(Value::as_array) {
                Some(ids) if !ids.is_empty() && ids.len() <= MAX_ACK_IDS => ids,
                _ => {
                    return Err(bad(format!("inbox.ack needs params.task_ids, an array of 1 to {MAX_ACK_IDS} task ids from inbox.pending")))
                }
            };
            let ids: Vec<String> = ids
                .iter()
                .map(|v| v.as_str().filter(|s| is_ref(s)).map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| bad(format!("inbox.ack: every task id must be a string of 1 to {MAX_REF_CHARS} characters")))?;
            let owned = session_ref.clone();
            let (outcome, counts) = inbox
                .with_store(move |store| {
                    let outcome = store.ack(&owned, &ids, unix_millis() as i64)?;
                    Ok((outcome, store.counts(&owned)?))
                })
                .await
                .map_err(store_error)?;
            if !outcome.acked.is_empty() {
                inbox.changed(&session_ref).await;
            }
            Ok(json!({"type": "inbox_acked", "browser_session_ref": session_ref, "acked": outcome.acked,
                "already_acked": outcome.already_acked, "unknown": outcome.unknown, "forbidden": outcome.forbidden,
                "not_terminal": outcome.not_terminal, "counts": counts}))
        }
    }
}

/// Records the task, then sends the prompt (`task.dispatch`, and `herdr_prompt` of the
/// planner tools).
pub(super) async fn dispatch(api: &Router, request: DispatchRequest) -> Result<Value, MethodError> {
    let Some(inbox) = api.inbox.as_ref() else {
        return Err(inbox_not_open());
    };
    if let Some(error) = api.herdr_not_ready() {
        return Err(error);
    }
    if let Some(pane) = api.events.as_ref().and_then(|hub| hub.catalog().panes.get(&request.pane_id).cloned()) {
        if pane.workspace_id != request.workspace_id {
            return Err(bad(format!(
                "task.dispatch: pane {} is in workspace {}, not {}; send the pane's own workspace_id",
                request.pane_id, pane.workspace_id, request.workspace_id
            )));
        }
    }
    let after_seq = inbox.last_event_seq().await.map_err(|e| (ErrorCode::InboxUnavailable, format!("{e}; the task was not dispatched")))?;
    let task = NewTask {
        task_id: new_id("task"),
        dispatch_id: new_id("dispatch"),
        turn_id: request.turn_id.clone(),
        browser_session_ref: request.browser_session_ref.clone(),
        workspace_id: request.workspace_id.clone(),
        pane_id: request.pane_id.clone(),
        prompt_preview: request.prompt.chars().take(PROMPT_PREVIEW_CHARS).collect(),
        after_seq,
        created_at: unix_millis() as i64,
    };
    // Record first: a settle caused by the prompt is then stored after the row exists.
    let row = task.clone();
    inbox.with_store(move |store| store.insert_running(&row)).await.map_err(store_error)?;
    let socket = PathBuf::from(api.herdr().socket);
    let params = json!({"target": request.pane_id, "text": request.prompt});
    if let Err(error) = crate::herdr::request(&socket, HerdrMethod::AgentPrompt, params, PROMPT_TIMEOUT).await {
        let task_id = task.task_id.clone();
        let _ = inbox.with_store(move |store| store.forget(&task_id)).await;
        api.log.line(format_args!("task.dispatch to {} refused: {error}", task.pane_id));
        return Err(prompt_error(&task.pane_id, &error));
    }
    inbox.changed(&task.browser_session_ref).await;
    Ok(json!({
        "type": "task_dispatched",
        "task_id": task.task_id,
        "dispatch_id": task.dispatch_id,
        "turn_id": task.turn_id,
        "browser_session_ref": task.browser_session_ref,
        "workspace_id": task.workspace_id,
        "pane_id": task.pane_id,
        "state": "running",
        "created_at": task.created_at,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    fn error_of(value: Value) -> String {
        match DispatchRequest::parse(&params(value)) {
            Ok(ok) => format!("accepted {ok:?}"),
            Err((code, message)) => format!("{code}: {message}"),
        }
    }

    #[test]
    fn dispatch_inputs_are_validated_with_messages_that_say_what_to_do_i1() {
        let good = json!({"browser_session_ref": "chat-a", "workspace_id": "w1", "pane_id": "w1:p1", "prompt": "go"});
        assert!(DispatchRequest::parse(&params(good.clone())).is_ok());
        let mut missing = good.clone();
        missing.as_object_mut().map(|m| m.remove("browser_session_ref"));
        expect_test::expect![[
            r#"bad_request: task.dispatch needs params.browser_session_ref, a non-empty string (e.g. the chat's stable session ref)"#
        ]]
        .assert_eq(&error_of(missing));
        let mut long_ref = good.clone();
        long_ref["pane_id"] = json!("p".repeat(257));
        expect_test::expect![[r#"bad_request: task.dispatch: params.pane_id is 257 characters; at most 256 are allowed"#]]
            .assert_eq(&error_of(long_ref));
        let mut big = good.clone();
        big["prompt"] = json!("x".repeat(MAX_PROMPT_BYTES + 1));
        expect_test::expect![[r#"bad_request: task.dispatch: params.prompt is 65537 bytes; at most 65536 (64 KiB) are allowed — shorten it or point the agent at a file"#]]
            .assert_eq(&error_of(big));
        let mut exact = good.clone();
        exact["prompt"] = json!("x".repeat(MAX_PROMPT_BYTES));
        assert!(DispatchRequest::parse(&params(exact)).is_ok(), "64 KiB exactly is allowed");
        let mut blank = good;
        blank["prompt"] = json!("   ");
        expect_test::expect![[r#"bad_request: task.dispatch needs params.prompt, a non-empty string (the text for the agent)"#]]
            .assert_eq(&error_of(blank));
    }

    #[test]
    fn herdr_refusals_become_clear_errors() {
        let remote =
            |code: &str| HerdrError::Remote { method: HerdrMethod::AgentPrompt.as_str().into(), code: code.into(), message: "m".into() };
        let codes: Vec<ErrorCode> = ["agent_blocked", "agent_not_ready", "agent_not_found", "pane_not_found", "weird"]
            .iter()
            .map(|c| prompt_error("w1:p1", &remote(c)).0)
            .collect();
        assert_eq!(
            codes,
            [ErrorCode::AgentBlocked, ErrorCode::AgentNotReady, ErrorCode::NotFound, ErrorCode::NotFound, ErrorCode::HerdrError,]
        );
        assert!(prompt_error("w1:p1", &remote("agent_blocked")).1.contains("answer it in Herdr"));
    }
}
