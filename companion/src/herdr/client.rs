//! A minimal Herdr socket client.
//!
//! Herdr speaks newline-delimited JSON and closes the connection after one response
//! (transcript §1), so [`request`] connects, writes one line, reads one line and drops
//! the connection. Everything is bounded by one timeout.
//!
//! Invariant: a response whose `id` differs from the request's is never returned as a
//! result (it is a [`HerdrError::BadResponse`]).

use continuity_protocol::herdr::HerdrMethod;
use serde_json::{json, Value};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use thiserror::Error;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use super::SUPPORTED_PROTOCOL;

/// Largest Herdr response line read (session snapshots can be large).
const MAX_RESPONSE: u64 = 16 * 1024 * 1024;

/// Why a Herdr request failed.
#[derive(Debug, Error)]
pub enum HerdrError {
    /// Nothing listens on the socket (ENOENT or ECONNREFUSED).
    #[error("Herdr is not running (no server at {socket}); start it with `herdr server` or point HERDR_SOCKET_PATH / --herdr-session at the right session")]
    NotRunning {
        /// The socket tried.
        socket: PathBuf,
    },
    /// The socket exists but this user may not connect (EACCES/EPERM).
    #[error("permission denied on the Herdr socket {socket}; run the companion as the user who runs Herdr")]
    PermissionDenied {
        /// The socket tried.
        socket: PathBuf,
    },
    /// No complete answer within the timeout.
    #[error("Herdr did not answer `{method}` within {timeout:?}; check that the Herdr server is responsive")]
    Timeout {
        /// The method that timed out.
        method: String,
        /// The timeout used.
        timeout: Duration,
    },
    /// Herdr answered with a protocol this runtime does not speak.
    #[error("Herdr {version} speaks socket protocol {protocol}, this companion speaks {SUPPORTED_PROTOCOL}; update Herdr or the companion so they match")]
    UnsupportedProtocol {
        /// Herdr's version string.
        version: String,
        /// Herdr's protocol integer.
        protocol: u64,
    },
    /// Herdr answered with an `error` object.
    #[error("Herdr refused `{method}`: {code}: {message}")]
    Remote {
        /// The method refused.
        method: String,
        /// Herdr's error code, e.g. `pane_not_found`.
        code: String,
        /// Herdr's message.
        message: String,
    },
    /// The answer was not the expected JSON shape.
    #[error("Herdr sent an unexpected answer to `{method}`: {detail}")]
    BadResponse {
        /// The method asked.
        method: String,
        /// What was wrong.
        detail: String,
    },
    /// Another socket error.
    #[error("talking to Herdr at {socket} failed: {source}")]
    Io {
        /// The socket tried.
        socket: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

/// Herdr's answer to `ping`.
#[derive(Debug, Clone, PartialEq)]
pub struct Pong {
    /// Herdr's version, e.g. `0.8.2`.
    pub version: String,
    /// Herdr's socket protocol integer, e.g. `20`.
    pub protocol: u64,
    /// Herdr's capability flags, as sent.
    pub capabilities: Value,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Sends one request on a fresh connection and returns Herdr's `result` object.
pub async fn request(socket: &Path, method: HerdrMethod, params: Value, timeout: Duration) -> Result<Value, HerdrError> {
    let id = format!("hc-{}", NEXT_ID.fetch_add(1, Ordering::Relaxed));
    let exchange = exchange(socket, &id, method, params);
    match tokio::time::timeout(timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(HerdrError::Timeout { method: method.as_str().to_owned(), timeout }),
    }
}

async fn exchange(socket: &Path, id: &str, method: HerdrMethod, params: Value) -> Result<Value, HerdrError> {
    let io_error = |source: io::Error| classify_io(socket, source);
    let mut stream = UnixStream::connect(socket).await.map_err(io_error)?;
    let mut line = json!({ "id": id, "method": method, "params": params }).to_string();
    line.push('\n');
    stream.write_all(line.as_bytes()).await.map_err(io_error)?;
    let mut reader = BufReader::new(stream).take(MAX_RESPONSE);
    let mut answer = String::new();
    reader.read_line(&mut answer).await.map_err(io_error)?;
    let bad = |detail: String| HerdrError::BadResponse { method: method.as_str().to_owned(), detail };
    if answer.is_empty() {
        return Err(bad("the connection closed without an answer".to_owned()));
    }
    let value: Value = serde_json::from_str(answer.trim_end()).map_err(|e| bad(format!("not JSON: {e}")))?;
    if value.get("id").and_then(Value::as_str) != Some(id) {
        return Err(bad(format!("answer id does not match request id {id}")));
    }
    if let Some(error) = value.get("error") {
        let text = |key: &str| error.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
        return Err(HerdrError::Remote { method: method.as_str().to_owned(), code: text("code"), message: text("message") });
    }
    match value.get("result") {
        Some(result @ Value::Object(_)) => Ok(result.clone()),
        _ => Err(bad("neither a result object nor an error".to_owned())),
    }
}

/// Maps connection errors to the states the HUD distinguishes.
fn classify_io(socket: &Path, source: io::Error) -> HerdrError {
    let socket = socket.to_path_buf();
    match source.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => HerdrError::NotRunning { socket },
        io::ErrorKind::PermissionDenied => HerdrError::PermissionDenied { socket },
        _ => HerdrError::Io { socket, source },
    }
}

/// Pings Herdr and checks its protocol: anything but [`SUPPORTED_PROTOCOL`] is
/// [`HerdrError::UnsupportedProtocol`].
pub async fn ping(socket: &Path, timeout: Duration) -> Result<Pong, HerdrError> {
    let result = request(socket, HerdrMethod::Ping, json!({}), timeout).await?;
    let pong = parse_pong(&result).ok_or_else(|| HerdrError::BadResponse {
        method: HerdrMethod::Ping.as_str().to_owned(),
        detail: format!("expected a pong with version and protocol, got {result}"),
    })?;
    if pong.protocol != SUPPORTED_PROTOCOL {
        return Err(HerdrError::UnsupportedProtocol { version: pong.version, protocol: pong.protocol });
    }
    Ok(pong)
}

fn parse_pong(result: &Value) -> Option<Pong> {
    if result.get("type")?.as_str()? != "pong" {
        return None;
    }
    Some(Pong {
        version: result.get("version")?.as_str()?.to_owned(),
        protocol: result.get("protocol")?.as_u64()?,
        capabilities: result.get("capabilities").cloned().unwrap_or(Value::Null),
    })
}
