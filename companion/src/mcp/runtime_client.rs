//! The mcp front end's client of the runtime: one request per connection on the runtime's
//! Unix socket (docs/PROTOCOL.md "Messages"), typed with `continuity_protocol`.
//!
//! A fresh connection per call keeps the front end stateless: a runtime restart between
//! two tool calls costs nothing but the next connect. Events the runtime pushes to every
//! client (`herdr_state`, `inbox_changed`) are skipped while waiting for the answer.
//!
//! At most [`MAX_RUNTIME_CALLS`] calls hold a runtime connection at once, across every MCP
//! session of this process (review 42 F3): the runtime serves 64 connections, and a planner
//! that fires many slow tool calls at once must not take the places the browser's hosts,
//! the CLI and the doctor need. A call that finds no place free within [`SLOT_WAIT`] is
//! answered [`RuntimeCallError::Busy`], which says to retry.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use continuity_protocol::{Call, ErrorBody, Message, MethodResult, Outcome, Request};
use thiserror::Error;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::Semaphore;

/// Longest wait for one answer: the runtime's own limit for a tool call
/// (`runtime::connections::TOOL_REQUEST_TIMEOUT`, 75 s: `herdr_exec` may run 60 s) plus
/// slack, so the runtime's `timeout` answer arrives before this one fires.
const ANSWER_WAIT: Duration = Duration::from_secs(80);

/// Most runtime connections the front end holds at once: a quarter of the runtime's 64
/// (`runtime::connections::Limits::default`), so the browser's hosts, the CLI and the doctor
/// always find a place.
pub const MAX_RUNTIME_CALLS: usize = 16;

/// How long a call waits for a free place before it is answered busy: long enough to
/// ride out a burst of quick calls, short enough that the model hears back soon.
pub const SLOT_WAIT: Duration = Duration::from_secs(5);

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
    /// Every place was taken for the whole wait.
    #[error("the companion is busy with {calls} calls at once, its limit; retry in a moment (fewer calls at the same time help)")]
    Busy {
        /// The limit, [`MAX_RUNTIME_CALLS`].
        calls: usize,
    },
}

/// Calls the runtime at one socket.
#[derive(Debug, Clone)]
pub struct RuntimeClient {
    /// The runtime's socket.
    socket: PathBuf,
    /// One permit per runtime connection this front end may hold (shared by clones).
    places: Arc<Semaphore>,
    /// How many permits `places` started with.
    max_calls: usize,
    /// How long a call waits for a permit.
    place_wait: Duration,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl RuntimeClient {
    /// A client of the runtime listening on `socket`.
    pub fn new(socket: PathBuf) -> Self {
        Self::with_places(socket, MAX_RUNTIME_CALLS, SLOT_WAIT)
    }

    /// A client holding at most `max_calls` connections, each call waiting at most
    /// `place_wait` for one (tests use small numbers).
    fn with_places(socket: PathBuf, max_calls: usize, place_wait: Duration) -> Self {
        Self { socket, places: Arc::new(Semaphore::new(max_calls)), max_calls, place_wait }
    }

    /// Sends `call` and returns its result. The call holds one of the front end's places
    /// from before it connects until its answer came (or it gave up); with none free within
    /// the wait it is answered [`RuntimeCallError::Busy`] without connecting.
    pub async fn call(&self, call: &Call) -> Result<MethodResult, RuntimeCallError> {
        let Ok(Ok(_place)) = tokio::time::timeout(self.place_wait, self.places.acquire()).await else {
            return Err(RuntimeCallError::Busy { calls: self.max_calls });
        };
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

#[cfg(test)]
mod tests {
    use super::*;
    use continuity_protocol::NoParams;
    use std::sync::atomic::AtomicUsize;
    use tokio::net::UnixListener;
    use tokio::sync::watch;

    /// What a stub runtime saw.
    #[derive(Default)]
    struct Seen {
        /// Connections open now.
        open: AtomicUsize,
        /// The most open at once.
        most: AtomicUsize,
    }

    /// A stub runtime: counts its open connections and answers each request with a pong
    /// once `release` turns true (a connection stops counting just before its answer).
    async fn stub_runtime(listener: UnixListener, seen: Arc<Seen>, release: watch::Receiver<bool>) {
        while let Ok((stream, _)) = listener.accept().await {
            let (seen, mut release) = (Arc::clone(&seen), release.clone());
            tokio::spawn(async move {
                let now = seen.open.fetch_add(1, Ordering::SeqCst) + 1;
                seen.most.fetch_max(now, Ordering::SeqCst);
                let mut reader = BufReader::new(stream);
                let mut line = String::new();
                let _ = reader.read_line(&mut line).await;
                let id = serde_json::from_str::<serde_json::Value>(&line).ok().and_then(|v| v["id"].as_str().map(str::to_owned));
                let _ = release.wait_for(|go| *go).await;
                seen.open.fetch_sub(1, Ordering::SeqCst);
                let answer = serde_json::json!({"id": id, "result": {"type": "pong", "server_time": 0}});
                let _ = reader.get_mut().write_all(format!("{answer}\n").as_bytes()).await;
            });
        }
    }

    /// Review 42 F3: every MCP call opened its own runtime connection with no cap, so one
    /// planner firing many slow calls could take all 64 of the runtime's places and lock
    /// out the browser. Now at most the cap are open; a call that finds no place in time is
    /// answered busy, and the others are answered as usual.
    #[tokio::test]
    async fn more_calls_than_places_never_open_more_runtime_connections_and_the_rest_are_told_busy() {
        let (cap, calls) = (4, 10);
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("runtime.sock");
        let seen = Arc::new(Seen::default());
        let (release, released) = watch::channel(false);
        tokio::spawn(stub_runtime(UnixListener::bind(&socket).expect("bind"), Arc::clone(&seen), released));
        let client = Arc::new(RuntimeClient::with_places(socket, cap, Duration::from_millis(300)));
        let running: Vec<_> = (0..calls)
            .map(|_| {
                let client = Arc::clone(&client);
                tokio::spawn(async move { client.call(&Call::Ping(NoParams {})).await })
            })
            .collect();
        // Until the over-cap calls are answered (or more than the cap connected: the bug).
        let until = tokio::time::Instant::now() + Duration::from_secs(30);
        while running.iter().filter(|call| call.is_finished()).count() < calls - cap
            && seen.most.load(Ordering::SeqCst) <= cap
            && tokio::time::Instant::now() < until
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let _ = release.send(true);
        let mut outcomes = Vec::new();
        for call in running {
            outcomes.push(call.await.expect("call task"));
        }
        assert!(
            seen.most.load(Ordering::SeqCst) <= cap,
            "{} runtime connections at once, more than {cap}",
            seen.most.load(Ordering::SeqCst)
        );
        let busy: Vec<String> = outcomes.iter().filter_map(|o| o.as_ref().err()).map(ToString::to_string).collect();
        assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), cap, "{busy:?}");
        assert_eq!(busy.len(), calls - cap);
        assert!(busy.iter().all(|text| text.contains("busy with 4 calls") && text.contains("retry in a moment")), "{busy:?}");
    }
}
