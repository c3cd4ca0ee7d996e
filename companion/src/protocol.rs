//! The `herdr-continuity/1` wire protocol shared by the extension, the host and the
//! runtime (docs/PROTOCOL.md "Messages"): the companion's side of the
//! `continuity_protocol` crate, which owns every name and message type.
//!
//! Every message is one JSON object: a request (`id`, `method`, `params`), a response
//! (`id` plus `result` or `error`) or an event (`event`, `data`). This module only
//! builds and validates those shapes; it does no IO.

use serde_json::{json, Map, Value};
use thiserror::Error;

pub use continuity_protocol::{
    ErrorCode, EventName, HostErrorCode, Method, CAPABILITIES, EXTENSION_ORIGIN, HOST_NAME, MAX_ID_LEN, MAX_LINE, PROTOCOL_VERSION,
};

/// A method failure: its code and a message saying what to do.
pub type MethodError = (ErrorCode, String);

/// A validated request from the extension.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Caller-chosen id, 1..=64 chars, echoed in the response.
    pub id: String,
    /// The method.
    pub method: Method,
    /// Parameters object (`{}` when absent).
    pub params: Map<String, Value>,
}

/// Why a line is not a valid request.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("{reason}")]
pub struct BadRequest {
    /// The request id if one could be read, so the caller can match the error.
    pub id: Option<String>,
    /// `bad_request`, or `unknown_method` for a well-formed request of a method this
    /// protocol does not have.
    pub code: ErrorCode,
    /// What is wrong, in words.
    pub reason: String,
}

impl BadRequest {
    fn shape(id: Option<String>, reason: String) -> Self {
        Self { id, code: ErrorCode::BadRequest, reason }
    }
}

/// The `unknown_method` message for `method` (one the runtime does not serve).
pub fn unknown_method_reason(method: &str) -> String {
    format!(
        "the runtime does not know method `{method}`; update the companion (herdr-companion {}) to match the extension",
        env!("CARGO_PKG_VERSION")
    )
}

/// Parses and validates one request line. A well-formed request of a method this
/// protocol does not have is refused with `unknown_method` (and its id).
pub fn parse_request(line: &[u8]) -> Result<Request, BadRequest> {
    let value: Value = serde_json::from_slice(line)
        .map_err(|e| BadRequest::shape(None, format!("request is not valid JSON ({e}); send one JSON object per line")))?;
    let Value::Object(mut object) = value else {
        return Err(BadRequest::shape(None, "request must be a JSON object with id, method and params".to_owned()));
    };
    let id = match object.remove("id") {
        Some(Value::String(id)) if continuity_protocol::limits::is_request_id(&id) => id,
        _ => return Err(BadRequest::shape(None, format!("request id must be a string of 1 to {MAX_ID_LEN} characters"))),
    };
    let method = match object.remove("method") {
        Some(Value::String(method)) if !method.is_empty() => method,
        _ => return Err(BadRequest::shape(Some(id), "request method must be a non-empty string".to_owned())),
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params,
        Some(_) => return Err(BadRequest::shape(Some(id), "request params must be a JSON object".to_owned())),
    };
    let method = Method::parse(&method).map_err(|unknown| BadRequest {
        reason: unknown_method_reason(&unknown.name),
        id: Some(id.clone()),
        code: ErrorCode::UnknownMethod,
    })?;
    Ok(Request { id, method, params })
}

/// A success response.
pub fn result_response(id: &str, result: Value) -> Value {
    json!({ "id": id, "result": result })
}

/// An error response. `id` is `""` when the request's id could not be read (as Herdr does).
pub fn error_response(id: Option<&str>, code: ErrorCode, message: &str) -> Value {
    json!({ "id": id.unwrap_or(""), "error": { "code": code, "message": message } })
}

/// An event.
pub fn event(name: EventName, data: Value) -> Value {
    json!({ "event": name, "data": data })
}

/// A `host_error` event; `id` names the request it replaces, when there is one.
pub fn host_error(code: HostErrorCode, message: &str, id: Option<&str>) -> Value {
    let mut data = json!({ "code": code, "message": message });
    if let (Some(id), Value::Object(map)) = (id, &mut data) {
        map.insert("id".to_owned(), Value::String(id.to_owned()));
    }
    event(EventName::HostError, data)
}

/// Serializes a message as one line (no trailing newline). JSON never contains a raw
/// newline, so the result is always a single line.
pub fn to_line(message: &Value) -> String {
    message.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    #[test]
    fn requests_are_validated_with_reasons() {
        let cases: [&[u8]; 8] = [
            br#"{"id":"1","method":"hello","params":{"protocol":1}}"#,
            br#"{"id":"1","method":"ping"}"#,
            br#"not json"#,
            br#"[1,2]"#,
            br#"{"id":"","method":"ping"}"#,
            br#"{"id":"7","method":3}"#,
            br#"{"id":"8","method":"ping","params":[]}"#,
            br#"{"id":"9","method":"events.unsubscribe"}"#,
        ];
        let printed: Vec<String> = cases
            .iter()
            .map(|line| match parse_request(line) {
                Ok(r) => format!("ok {} {} {}", r.id, r.method, Value::Object(r.params)),
                Err(e) => format!("{} id={:?}: {}", e.code, e.id, e.reason),
            })
            .collect();
        expect![[r#"
            ok 1 hello {"protocol":1}
            ok 1 ping {}
            bad_request id=None: request is not valid JSON (expected ident at line 1 column 2); send one JSON object per line
            bad_request id=None: request must be a JSON object with id, method and params
            bad_request id=None: request id must be a string of 1 to 64 characters
            bad_request id=Some("7"): request method must be a non-empty string
            bad_request id=Some("8"): request params must be a JSON object
            unknown_method id=Some("9"): the runtime does not know method `events.unsubscribe`; update the companion (herdr-companion 0.1.0) to match the extension"#]]
        .assert_eq(&printed.join("\n"));
    }

    #[test]
    fn host_error_carries_the_replaced_request_id() {
        expect![[r#"{"data":{"code":"response_too_large","id":"9","message":"m"},"event":"host_error"}"#]]
            .assert_eq(&to_line(&host_error(HostErrorCode::ResponseTooLarge, "m", Some("9"))));
    }
}
