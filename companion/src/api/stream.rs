//! Runtime methods of the event stream and the read-only Control Center views
//! (docs/PROTOCOL.md "Event stream"): `events.subscribe`, `herdr.workspaces`,
//! `herdr.panes`, `herdr.agents`, `herdr.pane_read`.
//!
//! Invariant: the `herdr.*` views never mutate Herdr, and `herdr.pane_read` is bounded
//! ([`MAX_READ_LINES`] rows, [`MAX_READ_CHARS`] characters).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use super::Router;
use crate::herdr::request as herdr_request;
use crate::outbox::ClientHandle;
use crate::protocol::{ErrorCode, Method, MethodError, Request};
use continuity_protocol::herdr::HerdrMethod;

pub use continuity_protocol::limits::{DEFAULT_READ_LINES, MAX_READ_CHARS, MAX_READ_LINES};

/// Serves `events.subscribe` and the `herdr.*` views (the router sends no other method).
pub async fn handle(api: &Router, request: &Request, client: &ClientHandle) -> Result<Value, MethodError> {
    let Some(hub) = api.events.as_ref() else {
        return Err((ErrorCode::NotReady, "the runtime's event log is not open yet (see runtime.log); retry in a moment".to_owned()));
    };
    if request.method == Method::EventsSubscribe {
        return hub.subscribe(&request.params, client.clone()).await;
    }
    if let Some(error) = api.herdr_not_ready() {
        return Err(error);
    }
    let catalog = hub.catalog();
    match request.method {
        Method::HerdrWorkspaces => Ok(json!({"type": "herdr_workspaces", "workspaces": catalog.workspace_list()})),
        Method::HerdrAgents => Ok(json!({"type": "herdr_agents", "agents": catalog.agents()})),
        Method::HerdrPanes => {
            let filter = request.params.get("workspace_id").and_then(Value::as_str);
            let panes: Vec<Value> =
                catalog.panes.values().filter(|p| filter.is_none_or(|w| p.workspace_id == w)).map(|p| json!(p)).collect();
            Ok(json!({"type": "herdr_panes", "panes": panes}))
        }
        _ => {
            let Some(pane_id) = request.params.get("pane_id").and_then(Value::as_str) else {
                return Err((ErrorCode::BadRequest, "herdr.pane_read needs params.pane_id (e.g. \"w1:p1\")".to_owned()));
            };
            let lines = match request.params.get("lines") {
                None => DEFAULT_READ_LINES,
                Some(v) => v
                    .as_u64()
                    .filter(|n| (1..=MAX_READ_LINES).contains(n))
                    .ok_or((ErrorCode::BadRequest, format!("herdr.pane_read: lines must be an integer from 1 to {MAX_READ_LINES}")))?,
            };
            let socket = PathBuf::from(api.herdr().socket);
            // No `lines` to Herdr: below the screen height it counts blank rows (REFERENCE §1).
            let params = json!({"pane_id": pane_id, "source": "recent"});
            let result = herdr_request(&socket, HerdrMethod::PaneRead, params, Duration::from_secs(3))
                .await
                .map_err(|e| (ErrorCode::HerdrError, e.to_string()))?;
            let text = result.pointer("/read/text").and_then(Value::as_str).unwrap_or("");
            let rows: Vec<&str> = text.trim_end_matches('\n').split('\n').collect();
            let rows_clipped = rows.len() > lines as usize;
            let text = rows[rows.len().saturating_sub(lines as usize)..].join("\n");
            let chars: Vec<char> = text.chars().collect();
            let clipped = chars.len() > MAX_READ_CHARS;
            let text: String = chars[chars.len().saturating_sub(MAX_READ_CHARS)..].iter().collect();
            let truncated = clipped || rows_clipped || result.pointer("/read/truncated").and_then(Value::as_bool).unwrap_or(false);
            Ok(json!({"type": "herdr_pane_read", "pane_id": pane_id, "lines": lines, "text": text, "truncated": truncated}))
        }
    }
}
