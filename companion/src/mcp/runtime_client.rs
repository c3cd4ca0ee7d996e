//! The mcp front end's client of the runtime: one request per connection on the runtime's
//! Unix socket (docs/PROTOCOL.md "Messages"), typed with `continuity_protocol`.
//!
//! A fresh connection per call keeps the front end stateless: a runtime restart between
//! two tool calls costs nothing but the next connect. Events the runtime pushes to every
//! client (`herdr_state`, `inbox_changed`) are skipped while waiting for the answer.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use continuity_protocol::{Call, ErrorBody, Message, MethodResult, Outcome, Request};
use thiserror::Error;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// Longest wait for one answer: the runtime's own limit for a tool call
/// (`runtime::connections::TOOL_REQUEST_TIMEOUT`, 75 s: `herdr_exec` may run 60 s) plus
/// slack, so the runtime's `timeout` answer arrives before this one fires.
const ANSWER_WAIT: Duration = Duration::from_secs(80);

/// Why a runtime call gave no result.
#[derive(Debug, Error)]
pub enum RuntimeCallError {
    /// The socket could not be used.
    #[error("cannot reach the companion runtime at {socket}: {source}; start it with `herdr-companion runtime` (the browser extension's host also starts it), then retry")]
    Unreachable {
        /// The socket tried.
        socket: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The runtime answered with an error.
    #[error("{}: {}", .0.code, .0.message)]
    Refused(ErrorBody),
    /// The answer was not a documented message.
    #[error("the companion runtime sent an answer this front end cannot read ({0}); update both to the same release")]
    BadAnswer(String),
    /// No answer in time.
    #[error("the companion runtime did not answer within {}s; see runtime.log and retry", ANSWER_WAIT.as_secs())]
    NoAnswer,
}

/// Calls the runtime at one socket.
#[derive(Debug, Clone)]
pub struct RuntimeClient {
    /// The runtime's socket.
    socket: PathBuf,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl RuntimeClient {
    /// A client of the runtime listening on `socket`.
    pub fn new(socket: PathBuf) -> Self {
        Self { socket }
    }

    /// Sends `call` and returns its result.
    pub async fn call(&self, call: &Call) -> Result<MethodResult, RuntimeCallError> {
        match tokio::time::timeout(ANSWER_WAIT, self.exchange(call)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(RuntimeCallError::NoAnswer),
        }
    }

    async fn exchange(&self, call: &Call) -> Result<MethodResult, RuntimeCallError> {
        let unreachable = |source| RuntimeCallError::Unreachable { socket: self.socket.clone(), source };
        let id = format!("mcp-{}", NEXT_ID.fetch_add(1, Ordering::Relaxed));
        let request = Request::new(id.clone(), call);
        let mut line = serde_json::to_string(&request).map_err(|e| RuntimeCallError::BadAnswer(e.to_string()))?;
        line.push('\n');
        let mut stream = UnixStream::connect(&self.socket).await.map_err(unreachable)?;
        stream.write_all(line.as_bytes()).await.map_err(unreachable)?;
        let mut reader = BufReader::new(stream);
        loop {
            let mut answer = String::new();
            if reader.read_line(&mut answer).await.map_err(unreachable)? == 0 {
                let closed = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the runtime closed the connection before answering");
                return Err(unreachable(closed));
            }
            let Ok(value) = serde_json::from_str::<serde_json::Value>(&answer) else { continue };
            // Only the answer to this request matters; pushed events and `""` ids are skipped
            // unless the runtime refused the line itself (`overloaded`, `bad_request`).
            let answer_id = value.get("id").and_then(serde_json::Value::as_str);
            if answer_id != Some(id.as_str()) && answer_id != Some("") {
                continue;
            }
            return match Message::from_value(value) {
                Ok(Message::Response(response)) => match response.outcome {
                    Outcome::Result(result) => Ok(result),
                    Outcome::Error(error) => Err(RuntimeCallError::Refused(error)),
                },
                Ok(_) => continue,
                Err(e) => Err(RuntimeCallError::BadAnswer(e.to_string())),
            };
        }
    }
}
