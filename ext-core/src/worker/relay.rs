//! The Herdr stream's events as a watching side panel is sent them, and the side panel's
//! `herdr.*` and `tools.audit` call answers ([`answer`]) in the same way ([`super::calls`]).
//!
//! Purpose: pane titles, workspace labels, cwds, agent names and agent output come from
//! terminals, so they are untrusted. An event is relayed only as the fields the live tree
//! draws, each checked against its shape and bounded by `crate::limits`, like every other
//! runtime text the worker passes on (docs/PROTOCOL.md "Companion calls from the extension
//! pages").
//!
//! Invariants:
//! - Only the fields of [`fields_of`] are relayed; nothing else the runtime put in `data`.
//! - An id (`workspace_id`, `pane_id`, `tab_id`) is never cut: one over [`MAX_ID_CHARS`],
//!   a missing required id or a field of another type drops the whole event ([`relayed`]
//!   says why), never a part of it — except in a list (`hello`'s, an answer's): there only
//!   that item is dropped, and counted.
//! - Texts are clipped: labels to [`MAX_LABEL_CHARS`], other strings to
//!   [`MAX_RUNTIME_SHORT_CHARS`], a tail to [`MAX_RUNTIME_TEXT_CHARS`] keeping its end;
//!   a list keeps its first [`MAX_RUNTIME_LIST_ITEMS`]. What a list does not show is
//!   counted in the data the panel is sent: `dropped` (items out of their shape) and `cut`
//!   (items past the cap), each only when not 0, so the panel says so.
//!
//! Driver contract: pure functions; `Worker::stream_event` calls [`relayed`] once per event
//! and counts and warns a refusal; `Worker::page_call_answered` calls [`answer`] once per
//! answer and answers a refusal as the failure `companion` naming why.

use continuity_protocol::{EventName, Method};
use serde_json::{Map, Value};

use crate::limits::{
    clip, clip_tail, within, MAX_ID_CHARS, MAX_LABEL_CHARS, MAX_RUNTIME_LIST_ITEMS, MAX_RUNTIME_SHORT_CHARS, MAX_RUNTIME_TEXT_CHARS,
};

/// What one relayed field must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// A string of at most [`MAX_ID_CHARS`]; required.
    Id,
    /// A string of at most [`MAX_ID_CHARS`] when present (`null` reads as absent).
    OptionalId,
    /// A label, clipped to [`MAX_LABEL_CHARS`].
    Label,
    /// A short text, clipped to [`MAX_RUNTIME_SHORT_CHARS`]; `null` is kept.
    Short,
    /// Terminal output, clipped to [`MAX_RUNTIME_TEXT_CHARS`] keeping its end; required.
    Tail,
    /// A longer text (a command line, a tool's detail), clipped to [`MAX_RUNTIME_TEXT_CHARS`]
    /// keeping its start.
    Text,
    /// A whole number ≥ 0.
    Count,
    /// `true` or `false`.
    Flag,
}

/// A workspace of `workspace_upsert` and of `hello.workspaces`.
const WORKSPACE: &[(&str, Field)] =
    &[("workspace_id", Field::Id), ("label", Field::Label), ("number", Field::Count), ("agent_status", Field::Short)];
/// An agent of `agent_working` / `agent_settled` and of `hello.agents`.
const AGENT: &[(&str, Field)] = &[
    ("workspace_id", Field::Id),
    ("pane_id", Field::Id),
    ("workspace_label", Field::Label),
    ("agent", Field::Short),
    ("status", Field::Short),
    ("cwd", Field::Short),
];
const PANE: &[(&str, Field)] = &[
    ("pane_id", Field::Id),
    ("workspace_id", Field::Id),
    ("tab_id", Field::OptionalId),
    ("agent", Field::Short),
    ("agent_status", Field::Short),
    ("cwd", Field::Short),
];
const OUTPUT: &[(&str, Field)] = &[("pane_id", Field::Id), ("workspace_id", Field::Id), ("agent", Field::Short), ("tail", Field::Tail)];
/// The answer to `herdr.pane_read`.
const PANE_READ: &[(&str, Field)] =
    &[("type", Field::OptionalId), ("pane_id", Field::Id), ("lines", Field::Count), ("text", Field::Tail), ("truncated", Field::Flag)];

/// A row of `tools.audit` (docs/PROTOCOL.md "Write and exec tools").
const AUDIT_ENTRY: &[(&str, Field)] = &[
    ("seq", Field::Count),
    ("at", Field::Count),
    ("tool", Field::Short),
    ("caller", Field::Short),
    ("root", Field::Short),
    ("target", Field::Text),
    ("outcome", Field::Short),
    ("detail", Field::Text),
];

/// The fields an event is relayed with (`hello`'s lists are read by [`relayed`]); `None` for
/// an event the live tree does not draw.
fn fields_of(name: EventName) -> Option<&'static [(&'static str, Field)]> {
    Some(match name {
        EventName::Hello => &[],
        EventName::WorkspaceUpsert => WORKSPACE,
        EventName::WorkspaceRemoved => &[("workspace_id", Field::Id)],
        EventName::PaneUpsert => PANE,
        EventName::PaneRemoved => &[("pane_id", Field::Id), ("workspace_id", Field::Id)],
        EventName::AgentWorking | EventName::AgentSettled => AGENT,
        EventName::AgentOutput => OUTPUT,
        _ => return None,
    })
}

/// `data` as the side panel is sent it, or why it is not relayed (`Ok(None)`: an event the
/// live tree does not draw).
pub(super) fn relayed(name: EventName, data: &Value) -> Result<Option<Value>, String> {
    let Some(fields) = fields_of(name) else { return Ok(None) };
    let mut out = object(data, fields)?;
    if name == EventName::Hello {
        let mut hidden = Hidden::default();
        for (key, shape) in [("workspaces", WORKSPACE), ("agents", AGENT)] {
            if let Some(items) = list(data, key, shape, &mut hidden)? {
                out.insert(key.to_owned(), items);
            }
        }
        hidden.note(&mut out);
    }
    Ok(Some(Value::Object(out)))
}

/// A side panel's `herdr.*` or `tools.audit` call answered: `result` as the page is sent
/// it — the list of `herdr.workspaces` / `herdr.panes` / `herdr.agents` through the
/// stream's shapes and `tools.audit`'s rows in [`AUDIT_ENTRY`] (each list's first
/// [`MAX_RUNTIME_LIST_ITEMS`]), `herdr.pane_read` with its text clipped keeping its end;
/// any other method's answer (the options page's `retention.*`) as it is. `Err`: why it is not passed on (never a part).
pub(super) fn answer(method: Method, result: &Value) -> Result<Value, String> {
    let (key, shape) = match method {
        Method::HerdrWorkspaces => ("workspaces", WORKSPACE),
        Method::HerdrPanes => ("panes", PANE),
        Method::HerdrAgents => ("agents", AGENT),
        Method::ToolsAudit => ("entries", AUDIT_ENTRY),
        Method::HerdrPaneRead => {
            let mut read = object(result, PANE_READ)?;
            // A text the worker cut is a truncated read, whatever the runtime said.
            if result.get("text").and_then(Value::as_str).is_some_and(|text| !within(text, MAX_RUNTIME_TEXT_CHARS)) {
                read.insert("truncated".to_owned(), Value::Bool(true));
            }
            return Ok(Value::Object(read));
        }
        _ => return Ok(result.clone()),
    };
    let mut out = object(result, &[("type", Field::OptionalId)])?;
    let mut hidden = Hidden::default();
    let items = list(result, key, shape, &mut hidden)?.ok_or_else(|| format!("no `{key}`"))?;
    out.insert(key.to_owned(), items);
    hidden.note(&mut out);
    Ok(Value::Object(out))
}

/// What lists did not show: items out of their shape, items past the cap.
#[derive(Default)]
struct Hidden {
    dropped: usize,
    cut: usize,
}

impl Hidden {
    /// `dropped` / `cut` into `out`, each only when not 0.
    fn note(&self, out: &mut Map<String, Value>) {
        for (key, count) in [("dropped", self.dropped), ("cut", self.cut)] {
            if count > 0 {
                out.insert(key.to_owned(), Value::from(count));
            }
        }
    }
}

/// The list `key` of `value` (`None` when absent or `null`): its first
/// [`MAX_RUNTIME_LIST_ITEMS`] items, each in `shape`; one out of its shape is dropped alone.
/// What is not shown is added to `hidden`.
fn list(value: &Value, key: &str, shape: &[(&str, Field)], hidden: &mut Hidden) -> Result<Option<Value>, String> {
    match value.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => {
            hidden.cut += items.len().saturating_sub(MAX_RUNTIME_LIST_ITEMS);
            let shown = items.iter().take(MAX_RUNTIME_LIST_ITEMS).filter_map(|item| object(item, shape).ok().map(Value::Object));
            let shown: Vec<Value> = shown.collect();
            hidden.dropped += items.len().min(MAX_RUNTIME_LIST_ITEMS) - shown.len();
            Ok(Some(Value::Array(shown)))
        }
        Some(_) => Err(format!("`{key}` is not a list")),
    }
}

/// The `fields` of `value`, checked and bounded.
fn object(value: &Value, fields: &[(&str, Field)]) -> Result<Map<String, Value>, String> {
    let Some(value) = value.as_object() else { return Err("not an object".to_owned()) };
    let mut out = Map::new();
    for &(key, field) in fields {
        let got = value.get(key).filter(|v| !v.is_null() || field == Field::Short);
        let kept = match (field, got) {
            (Field::Id | Field::Tail, None) => return Err(format!("no `{key}`")),
            (_, None) => continue,
            (Field::Id | Field::OptionalId, Some(Value::String(id))) if within(id, MAX_ID_CHARS) => Value::from(id.as_str()),
            (Field::Id | Field::OptionalId, Some(Value::String(_))) => {
                return Err(format!("`{key}` is longer than {MAX_ID_CHARS} characters"))
            }
            (Field::Label, Some(Value::String(text))) => Value::String(clip(text.clone(), MAX_LABEL_CHARS)),
            (Field::Short, Some(Value::Null)) => Value::Null,
            (Field::Short, Some(Value::String(text))) => Value::String(clip(text.clone(), MAX_RUNTIME_SHORT_CHARS)),
            (Field::Tail, Some(Value::String(text))) => Value::String(clip_tail(text.clone(), MAX_RUNTIME_TEXT_CHARS)),
            (Field::Text, Some(Value::String(text))) => Value::String(clip(text.clone(), MAX_RUNTIME_TEXT_CHARS)),
            (Field::Count, Some(number @ Value::Number(n))) if n.as_u64().is_some() => number.clone(),
            (Field::Flag, Some(flag @ Value::Bool(_))) => flag.clone(),
            (_, Some(_)) => return Err(format!("`{key}` has the wrong type")),
        };
        out.insert(key.to_owned(), kept);
    }
    Ok(out)
}
