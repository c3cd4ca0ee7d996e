//! The `herdr-continuity/1` wire protocol shared by the extension, the host and the
//! runtime (docs/PROTOCOL.md "Messages").
//!
//! Every message is one JSON object: a request (`id`, `method`, `params`), a response
//! (`id` plus `result` or `error`) or an event (`event`, `data`). This module only
//! builds and validates those shapes; it does no IO.

use serde_json::{json, Map, Value};
use thiserror::Error;

/// The integer protocol version both sides exchange in `hello`.
pub const PROTOCOL_VERSION: u64 = 1;

/// The Native Messaging host name registered with the browser.
pub const HOST_NAME: &str = "dev.herdr.continuity";

/// The only caller origin the host accepts (fixed by the manifest `key`).
pub const EXTENSION_ORIGIN: &str = "chrome-extension://gencedhnagpaccnkbgpcipafjlankiop/";

/// Longest line on the host ↔ runtime socket, newline excluded (1 MiB).
pub const MAX_LINE: usize = 1024 * 1024;

/// Longest request id.
pub const MAX_ID_LEN: usize = 64;

/// A validated request from the extension.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Caller-chosen id, 1..=64 chars, echoed in the response.
    pub id: String,
    /// Method name such as `hello` or `herdr.status`.
    pub method: String,
    /// Parameters object (`{}` when absent).
    pub params: Map<String, Value>,
}

/// Why a line is not a valid request.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("{reason}")]
pub struct BadRequest {
    /// The request id if one could be read, so the caller can match the error.
    pub id: Option<String>,
    /// What is wrong, in words.
    pub reason: String,
}

/// Parses and validates one request line.
pub fn parse_request(line: &[u8]) -> Result<Request, BadRequest> {
    let value: Value = serde_json::from_slice(line).map_err(|e| BadRequest {
        id: None,
        reason: format!("request is not valid JSON ({e}); send one JSON object per line"),
    })?;
    let Value::Object(mut object) = value else {
        return Err(BadRequest {
            id: None,
            reason: "request must be a JSON object with id, method and params".to_owned(),
        });
    };
    let id = match object.remove("id") {
        Some(Value::String(id)) if !id.is_empty() && id.chars().count() <= MAX_ID_LEN => id,
        _ => {
            return Err(BadRequest {
                id: None,
                reason: format!("request id must be a string of 1 to {MAX_ID_LEN} characters"),
            })
        }
    };
    let method = match object.remove("method") {
        Some(Value::String(method)) if !method.is_empty() => method,
        _ => {
            return Err(BadRequest {
                id: Some(id),
                reason: "request method must be a non-empty string".to_owned(),
            })
        }
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params,
        Some(_) => {
            return Err(BadRequest {
                id: Some(id),
                reason: "request params must be a JSON object".to_owned(),
            })
        }
    };
    Ok(Request { id, method, params })
}

/// A success response.
pub fn result_response(id: &str, result: Value) -> Value {
    json!({ "id": id, "result": result })
}

/// An error response. `id` is `""` when the request's id could not be read (as Herdr does).
pub fn error_response(id: Option<&str>, code: &str, message: &str) -> Value {
    json!({ "id": id.unwrap_or(""), "error": { "code": code, "message": message } })
}

/// An event.
pub fn event(name: &str, data: Value) -> Value {
    json!({ "event": name, "data": data })
}

/// A `host_error` event; `id` names the request it replaces, when there is one.
pub fn host_error(code: &str, message: &str, id: Option<&str>) -> Value {
    let mut data = json!({ "code": code, "message": message });
    if let (Some(id), Value::Object(map)) = (id, &mut data) {
        map.insert("id".to_owned(), Value::String(id.to_owned()));
    }
    event("host_error", data)
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
        let cases: [&[u8]; 7] = [
            br#"{"id":"1","method":"hello","params":{"protocol":1}}"#,
            br#"{"id":"1","method":"ping"}"#,
            br#"not json"#,
            br#"[1,2]"#,
            br#"{"id":"","method":"ping"}"#,
            br#"{"id":"7","method":3}"#,
            br#"{"id":"8","method":"ping","params":[]}"#,
        ];
        let printed: Vec<String> = cases
            .iter()
            .map(|line| match parse_request(line) {
                Ok(r) => format!("ok {} {} {}", r.id, r.method, Value::Object(r.params)),
                Err(e) => format!("bad id={:?}: {}", e.id, e.reason),
            })
            .collect();
        expect![[r#"
            ok 1 hello {"protocol":1}
            ok 1 ping {}
            bad id=None: request is not valid JSON (expected ident at line 1 column 2); send one JSON object per line
            bad id=None: request must be a JSON object with id, method and params
            bad id=None: request id must be a string of 1 to 64 characters
            bad id=Some("7"): request method must be a non-empty string
            bad id=Some("8"): request params must be a JSON object"#]]
        .assert_eq(&printed.join("\n"));
    }

    #[test]
    fn host_error_carries_the_replaced_request_id() {
        expect![[
            r#"{"data":{"code":"response_too_large","id":"9","message":"m"},"event":"host_error"}"#
        ]]
        .assert_eq(&to_line(&host_error("response_too_large", "m", Some("9"))));
    }
}
