//! docs/PROTOCOL.md's examples are the protocol crate's round-trip tests.
//!
//! Every line of every fenced `json` block (the "Examples" section: one message per line,
//! as on the socket) must parse as a [`Message`] — a request whose params parse as its
//! method's typed [`Call`], a response whose `result` is the right [`MethodResult`] (told
//! apart by its `type`) or whose `error` carries a known [`ErrorCode`], or an [`Event`]
//! whose `data` has its event's shape — and serialize back to the same JSON (compared as
//! `serde_json::Value`). Inline code spans that are complete JSON objects with an `id`,
//! `method` or `event` are checked the same way.
//!
//! Left out, because they are not complete JSON (outlines with bare field names, `…`,
//! `|` alternatives or placeholders such as `NAME`): the three shape templates of
//! "Messages" (`{"id": "<1..64 chars>", "method": …}`, `{"id": "…", "result": …}`,
//! `{"event": …}`); every method's `{type:"…", …}` result outline ("Methods" of each
//! section); the `herdr` connection outline; the stored-event outline
//! `{"event": NAME, "data": {…}}`; the agent payload, `task`, `result` and `guidance`
//! outlines of "Parent inbox"; and every extension-internal port message outline
//! (`page_facts` with all its fields, `action`, `hud`, `round_trip_result`,
//! `delivery_result`, `delivery_report`, `delivery_seen`, `insert`, `notice`,
//! `clear_composer`, `profile`, `panel_hello`, `bind`, `unbind`, `panel`).
//!
//! Left out although complete JSON ([`NOT_RUNTIME_MESSAGES`], checked to be exactly
//! these): the error-response template, whose code is the placeholder `<snake_case>`; the
//! params default `{}`; the shape of the companion's `config.json` (`{"mcp": {"token": …}}`);
//! and the extension-internal port messages `page_facts` (url only),
//! `deliver`, `panel_refresh`, `queue_clear`, `queue_request`, `recovery_reload`, `recovery_retry`, `companion_watch` and the HUD `actions` list, which never cross the native
//! port (ext-shell's `wire` and `continuity_wire` read them); and the Activity timeline's
//! stored record (`chrome.storage.local`, written by `extension/activity-log.js`).

use continuity_protocol::{Call, Event, Message, MethodResult, Outcome, Request, Response};
use serde_json::Value;

/// Complete-JSON inline spans of PROTOCOL.md that are not runtime messages (see the
/// module doc), with whitespace runs collapsed to one space.
const NOT_RUNTIME_MESSAGES: &[&str] = &[
    r#"{"id": "…", "error": {"code": "<snake_case>", "message": "<what happened and what to do>"}}"#,
    r#"{}"#,
    r#"{"type":"page_facts","url":"<location.href>"}"#,
    r#"{"type":"queue_clear"}"#,
    r#"{"type":"queue_request"}"#,
    r#"[{"id":"<action>","label":"<i18n key>"}]"#,
    r#"{"type":"deliver","id":"<delivery id>","text":"<full message>","url":"<page url>","page_load":"<page load id>"}"#,
    r#"{"type":"panel_refresh"}"#,
    r#"{"mcp": {"token": "…"}}"#,
    r#"{"type":"recovery_reload"}"#,
    r#"{"type":"recovery_retry"}"#,
    r#"{"type":"companion_watch"}"#,
    r#"{"version":1,"scopes":{"chatgpt:3b9f1c2d-4e5f-4a6b-8c7d-9e0f1a2b3c4d":[{"t":1764620000000,"kind":"wake","outcome":"withheld","reason":"human_draft","id":"wake:w1#42"}]}}"#,
];

fn protocol_md() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/PROTOCOL.md");
    std::fs::read_to_string(path).expect("docs/PROTOCOL.md is readable")
}

/// Every line of every fenced `json` block.
fn fenced_examples(doc: &str) -> Vec<String> {
    let mut examples = Vec::new();
    let mut in_json = false;
    for line in doc.lines() {
        let trimmed = line.trim();
        if let Some(info) = trimmed.strip_prefix("```") {
            in_json = !in_json && info.trim() == "json";
            continue;
        }
        if in_json && !trimmed.is_empty() {
            examples.push(trimmed.to_owned());
        }
    }
    examples
}

/// Inline code spans outside fenced blocks that are complete JSON objects or arrays.
fn inline_json_spans(doc: &str) -> Vec<String> {
    let prose: String = {
        let mut out = String::new();
        let mut fenced = false;
        for line in doc.lines() {
            if line.trim().starts_with("```") {
                fenced = !fenced;
                continue;
            }
            if !fenced {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    };
    prose
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|span| span.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|span| span.starts_with('{') || span.starts_with('['))
        .filter(|span| serde_json::from_str::<Value>(span).is_ok())
        .collect()
}

/// Parses `text` as its typed message and checks it serializes back equal.
fn round_trip(text: &str) -> Result<(), String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
    let message = Message::from_value(value.clone()).map_err(|e| format!("not a message ({e})"))?;
    // The typed layer under the envelope: a request's params as its method's call.
    if let Message::Request(request) = &message {
        let call = request.call().map_err(|e| format!("params of {} ({e})", request.method))?;
        let rebuilt = Request::new(request.id.clone(), &call);
        if &rebuilt != request {
            return Err(format!("typed params changed the request: {rebuilt:?}"));
        }
    }
    let back = message.to_value().map_err(|e| format!("does not serialize ({e})"))?;
    if back != value {
        return Err(format!("serializes back as {back}"));
    }
    Ok(())
}

#[test]
fn every_fenced_example_round_trips_through_its_type() {
    let doc = protocol_md();
    let examples = fenced_examples(&doc);
    let failures: Vec<String> = examples.iter().filter_map(|text| round_trip(text).err().map(|why| format!("{text}\n  → {why}"))).collect();
    assert!(failures.is_empty(), "PROTOCOL.md examples that do not round-trip:\n{}", failures.join("\n"));
    assert!(examples.len() >= 40, "the Examples section lost examples: {}", examples.len());
}

#[test]
fn the_examples_cover_every_method_result_event_and_runtime_error() {
    let doc = protocol_md();
    let messages: Vec<Message> = fenced_examples(&doc)
        .iter()
        .filter_map(|text| serde_json::from_str(text).ok())
        .filter_map(|value| Message::from_value(value).ok())
        .collect();
    let mut missing = Vec::new();
    for method in continuity_protocol::Method::ALL {
        if !messages.iter().any(|m| matches!(m, Message::Request(r) if r.method == *method)) {
            missing.push(format!("request {method}"));
        }
    }
    let result_types: Vec<String> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Response(Response { outcome: Outcome::Result(result), .. }) => {
                let written = serde_json::to_value(result).ok()?.get("type")?.as_str()?.to_owned();
                // The names set spells each result's `type` as serde writes it.
                assert_eq!(written, result.result_type().as_str(), "ResultType of {result:?}");
                Some(written)
            }
            _ => None,
        })
        .collect();
    for ty in continuity_protocol::ResultType::ALL {
        if !result_types.iter().any(|t| t == ty.as_str()) {
            missing.push(format!("result {ty}"));
        }
    }
    for name in continuity_protocol::EventName::ALL {
        if !messages.iter().any(|m| matches!(m, Message::Event(e) if e.name() == *name)) {
            missing.push(format!("event {name}"));
        }
    }
    // `not_available` is not listed: every companion method is served in this release, so
    // no runtime answers it and an example of it would show what cannot happen.
    for code in [
        "bad_request",
        "unknown_method",
        "not_ready",
        "inbox_unavailable",
        "overloaded",
        "timeout",
        "config_refused",
        "unknown_tool",
        "continuity_mismatch",
    ] {
        let seen =
            messages.iter().any(|m| matches!(m, Message::Response(Response { outcome: Outcome::Error(e), .. }) if e.code.as_str() == code));
        if !seen {
            missing.push(format!("error {code}"));
        }
    }
    assert!(missing.is_empty(), "PROTOCOL.md has no example of: {}", missing.join(", "));
    // Keep the typed enums and the list above in step.
    let _exhaustive = |r: &MethodResult, e: &Event, c: &Call| (r.clone(), e.name(), c.method());
}

#[test]
fn inline_json_examples_are_messages_or_listed_as_not_runtime_messages() {
    let doc = protocol_md();
    let mut skipped = Vec::new();
    let mut failures = Vec::new();
    for span in inline_json_spans(&doc) {
        let is_message = serde_json::from_str::<Value>(&span)
            .ok()
            .and_then(|v| v.as_object().map(|o| o.contains_key("id") || o.contains_key("event") || o.contains_key("method")))
            .unwrap_or(false);
        match round_trip(&span) {
            Ok(()) if is_message => {}
            _ if NOT_RUNTIME_MESSAGES.contains(&span.as_str()) => skipped.push(span),
            Ok(()) => failures.push(format!("{span}\n  → round-trips but has no id/method/event")),
            Err(why) => failures.push(format!("{span}\n  → {why}")),
        }
    }
    assert!(failures.is_empty(), "inline PROTOCOL.md JSON that is neither a message nor listed:\n{}", failures.join("\n"));
    let mut expected: Vec<&str> = NOT_RUNTIME_MESSAGES.to_vec();
    expected.sort_unstable();
    let mut got: Vec<&str> = skipped.iter().map(String::as_str).collect();
    got.sort_unstable();
    got.dedup();
    assert_eq!(got, expected, "NOT_RUNTIME_MESSAGES is out of date");
}
