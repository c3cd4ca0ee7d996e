//! The accept loop and one connection's life: peer check, the connection cap, bounded
//! lines, bounded in-flight requests and a deadline per request (as tokio's mini-redis
//! bounds its connections).
//!
//! Order per connection: the peer's uid is checked before anything is read or written
//! ([`peer_allowed`]); a connection over [`Limits::max_connections`] then gets one
//! `overloaded` error line (id `""`) and is closed; an accepted one holds its permit until
//! it closes. Per request: a line over [`Limits::max_line`] is discarded and answered
//! `bad_request`; at most [`Limits::max_in_flight`] requests of one connection run at once
//! (the next line is read only when one finishes); a request still running after
//! [`Limits::request_timeout`] is dropped and answered `timeout`. A connection that sends
//! no complete line within [`Limits::idle_timeout`] of connecting, or leaves a started line
//! unfinished that long, is closed (a client that connects and says nothing, or half a
//! line, holds no place under the cap for long); only a client whose `events.subscribe` was
//! answered with a result (a subscription made, not refused) may then wait between lines as
//! long as it likes. A client that stops reading is
//! closed once one line to it waits [`Limits::write_timeout`]. When a connection ends, the
//! answers still due are written, and then nothing that holds its [`ClientHandle`] (an event
//! subscription) keeps its permit.
//!
//! Panics: a request whose handler panics is answered `internal` (the panic is caught at
//! the request, logged, and nothing else is affected); the release profile unwinds
//! (Cargo.toml), so a panic anywhere in a connection's tasks ends that task, never the
//! process.
//!
//! Invariant: every request line gets exactly one response line with the same `id` (or
//! `""` when the id could not be read), in whatever order the requests finish.

use std::future::Future;

use futures::FutureExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{broadcast, mpsc, oneshot, OwnedSemaphorePermit, Semaphore};

use crate::log::RuntimeLog;
use crate::outbox::{Broadcast, ClientHandle};
use crate::protocol::{self, ErrorCode, MethodError, Request, MAX_LINE};

/// What serves validated requests (the runtime uses `crate::api::Router`).
pub trait Handler: Send + Sync + 'static {
    /// Runs one request for `client`.
    fn handle(&self, request: &Request, client: &ClientHandle) -> impl Future<Output = Result<Value, MethodError>> + Send;
}

impl Handler for crate::api::Router {
    fn handle(&self, request: &Request, client: &ClientHandle) -> impl Future<Output = Result<Value, MethodError>> + Send {
        self.route(request, client)
    }
}

/// The bounds on connections and requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most connections served at once; one more is told `overloaded` and closed.
    pub max_connections: usize,
    /// Longest request line in bytes, newline excluded.
    pub max_line: usize,
    /// Most requests of one connection running at once.
    pub max_in_flight: usize,
    /// How long one request may run before it is dropped and answered `timeout`. Dropping
    /// is safe for every method: reads change nothing, `inbox.ack` and the inbox's
    /// catch-up are idempotent, and a `task.dispatch` dropped after its row was recorded
    /// leaves a `running` task that the client, told `timeout`, sees in `task.list`.
    pub request_timeout: Duration,
    /// How long a connection may go without a complete first line, and how long any
    /// started line may stay unfinished, before the connection is closed.
    pub idle_timeout: Duration,
    /// How long one line to the client may take to write (a client that stops reading
    /// fills its socket) before the connection is closed.
    pub write_timeout: Duration,
}

/// [`Limits::idle_timeout`]'s default: a client's first line and every line it starts
/// must be complete within this (the host and the CLI send theirs at once).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// [`Limits::write_timeout`]'s default: a client that has read nothing while a socket's
/// buffer of lines (hundreds of KB) waited this long is not reading.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

impl Default for Limits {
    /// 64 connections (a browser needs one per profile, plus the CLI and doctor), 1 MiB
    /// lines, 16 requests in flight per connection, 30 s per request (the slowest method,
    /// `task.dispatch`, waits at most 5 s for Herdr), [`IDLE_TIMEOUT`], [`WRITE_TIMEOUT`].
    fn default() -> Self {
        Self {
            max_connections: 64,
            max_line: MAX_LINE,
            max_in_flight: 16,
            request_timeout: Duration::from_secs(30),
            idle_timeout: IDLE_TIMEOUT,
            write_timeout: WRITE_TIMEOUT,
        }
    }
}

/// How long a planner tool call may run, and a JSON-bridge reply or decision (which runs
/// tool calls): `herdr_exec` waits up to 60 s for its command, plus the checks around it.
/// Longer than [`Limits::request_timeout`], which bounds every other method.
pub const TOOL_REQUEST_TIMEOUT: Duration = Duration::from_secs(75);

/// Pause after a failed `accept` (e.g. out of file descriptors) before the next one.
const ACCEPT_RETRY_DELAY: Duration = Duration::from_millis(100);
/// How long the `overloaded` line may take to write before the connection is dropped.
const REFUSAL_WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// True when a peer with `peer_uid` may use a runtime running as `own_uid`.
pub fn peer_allowed(peer_uid: u32, own_uid: u32) -> bool {
    peer_uid == own_uid
}

/// The uid this process runs as.
pub fn own_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Accepts clients forever: each same-uid peer within the cap is served on its own task.
pub async fn accept_loop<H: Handler>(listener: UnixListener, handler: Arc<H>, events: Broadcast, limits: Limits, log: Arc<RuntimeLog>) {
    let own = own_uid();
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                log.line(format_args!("accept failed: {e}"));
                tokio::time::sleep(ACCEPT_RETRY_DELAY).await;
                continue;
            }
        };
        let peer_uid = match stream.peer_cred() {
            Ok(cred) => cred.uid(),
            Err(e) => {
                log.line(format_args!("refused a client: cannot read its credentials: {e}"));
                continue;
            }
        };
        if !peer_allowed(peer_uid, own) {
            log.line(format_args!("refused a client with uid {peer_uid}: only uid {own} may use this runtime"));
            continue;
        }
        match Arc::clone(&permits).try_acquire_owned() {
            Ok(permit) => {
                let client = serve_client(stream, Arc::clone(&handler), events.subscribe(), limits, permit, Arc::clone(&log));
                tokio::spawn(client);
            }
            Err(_) => {
                log.line(format_args!("refused a client: {} connections are open, the most this runtime serves", limits.max_connections));
                tokio::spawn(refuse_overloaded(stream, limits.max_connections));
            }
        }
    }
}

/// Tells a client over the connection cap why it is closed, then closes it.
async fn refuse_overloaded(mut stream: UnixStream, max_connections: usize) {
    let reply = protocol::error_response(
        None,
        ErrorCode::Overloaded,
        &format!(
            "the runtime already serves {max_connections} connections, its limit; close other clients of it (another browser profile, a stuck `herdr-companion task`) and reconnect"
        ),
    );
    let mut line = protocol::to_line(&reply);
    line.push('\n');
    let _ = tokio::time::timeout(REFUSAL_WRITE_TIMEOUT, async {
        let _ = stream.write_all(line.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

/// One line read from a client, bounded by a cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientLine {
    /// A complete line without its newline.
    Line(Vec<u8>),
    /// A line longer than the cap; it was discarded up to its newline.
    TooLong,
}

/// Reads one line of at most `cap` bytes without ever buffering more than `cap`.
pub async fn read_capped_line<R: AsyncBufRead + Unpin>(reader: &mut R, cap: usize) -> std::io::Result<Option<ClientLine>> {
    read_line_within(reader, cap, None, None, None).await
}

/// [`read_capped_line`] with deadlines: the line's first byte must come within
/// `start_within` (`None`: wait for ever) and the whole line within `finish_within` of its
/// first byte (`None`: no bound). A missed deadline is an `io::ErrorKind::TimedOut` error,
/// except that a missed `start_within` is waived when `may_idle` is set by then: a
/// subscription made while this line was already awaited (its answer comes after the
/// read began) still lets the connection idle.
async fn read_line_within<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    cap: usize,
    start_within: Option<Duration>,
    finish_within: Option<Duration>,
    may_idle: Option<&AtomicBool>,
) -> std::io::Result<Option<ClientLine>> {
    let mut line = Vec::new();
    let mut too_long = false;
    let mut deadline = start_within.map(|wait| tokio::time::Instant::now() + wait);
    let mut started = false;
    loop {
        let chunk = match deadline {
            None => reader.fill_buf().await?,
            Some(at) => match tokio::time::timeout_at(at, reader.fill_buf()).await {
                Ok(chunk) => chunk?,
                Err(_) if !started && may_idle.is_some_and(|flag| flag.load(Ordering::Acquire)) => {
                    deadline = None;
                    continue;
                }
                Err(_) => return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "the client's line did not come in time")),
            },
        };
        if !started && !chunk.is_empty() {
            started = true;
            deadline = finish_within.map(|wait| tokio::time::Instant::now() + wait);
        }
        if chunk.is_empty() {
            // EOF: a final unterminated line is still a line.
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Some(ClientLine::TooLong),
                (false, true) => None,
                (false, false) => Some(ClientLine::Line(line)),
            });
        }
        let (used, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, Some(at)),
            None => (chunk.len(), None),
        };
        let content = &chunk[..done.unwrap_or(used)];
        if !too_long {
            if line.len() + content.len() > cap {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(content);
            }
        }
        reader.consume(used);
        if done.is_some() {
            return Ok(Some(if too_long { ClientLine::TooLong } else { ClientLine::Line(line) }));
        }
    }
}

/// The response to one request line: parsed, run within `timeout`, a handler's panic
/// answered `internal` (and logged to `log`). What every connection runs per line (and
/// `crate::fuzz` in-process).
pub async fn respond<H: Handler>(handler: &H, line: &[u8], client: &ClientHandle, timeout: Duration, log: &RuntimeLog) -> Value {
    let request = match protocol::parse_request(line) {
        Ok(request) => request,
        Err(bad) => return protocol::error_response(bad.id.as_deref(), bad.code, &bad.reason),
    };
    // A panic inside the handler is caught here, at the request: it is answered and logged,
    // and neither the connection nor the process notices (the release profile unwinds).
    let handled = std::panic::AssertUnwindSafe(handler.handle(&request, client)).catch_unwind();
    let timeout = match request.method {
        protocol::Method::ToolsCall | protocol::Method::BridgeReply | protocol::Method::BridgeDecide => timeout.max(TOOL_REQUEST_TIMEOUT),
        _ => timeout,
    };
    match tokio::time::timeout(timeout, handled).await {
        Ok(Ok(Ok(result))) => protocol::result_response(&request.id, result),
        Ok(Ok(Err((code, message)))) => protocol::error_response(Some(&request.id), code, &message),
        Ok(Err(panic)) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            log.line(format_args!("a {} request failed inside the runtime (a bug; the runtime keeps serving): {what}", request.method));
            protocol::error_response(
                Some(&request.id),
                ErrorCode::Internal,
                &format!("{} failed inside the runtime (a bug, logged in runtime.log); the runtime keeps serving: retry, and report it if it happens again", request.method),
            )
        }
        Err(_) => protocol::error_response(
            Some(&request.id),
            ErrorCode::Timeout,
            &format!(
                "{} took longer than {} ms and was abandoned; retry, and see runtime.log if it keeps happening",
                request.method,
                timeout.as_millis()
            ),
        ),
    }
}

/// Why a connection's writer stopped.
enum WriterEnd {
    /// Everything queued was written and no more can come.
    Drained,
    /// The socket refused a write (the client closed it).
    Failed,
    /// One line took longer than [`Limits::write_timeout`] to write.
    TimedOut,
}

/// Serves one client connection until it closes; `_permit` is its place under the cap.
///
/// The connection ends when the client closes it (or is idle, above) or stops reading
/// ([`Limits::write_timeout`]). Then the answers of its requests still running are written
/// (each ends within its deadline), and the outbox is closed: whatever still holds a
/// [`ClientHandle`] (an event subscription) can send no more, and sees
/// [`ClientHandle::closed`]. So the permit is given back once the answers are out, never
/// held by a subscription waiting for an event.
async fn serve_client<H: Handler>(
    stream: UnixStream,
    handler: Arc<H>,
    mut events: broadcast::Receiver<String>,
    limits: Limits,
    _permit: OwnedSemaphorePermit,
    log: Arc<RuntimeLog>,
) {
    let (read_half, mut write_half) = stream.into_split();
    let (outbox, mut outbox_rx) = mpsc::channel::<String>(256);
    let client = ClientHandle::new(outbox.clone());
    let (closing, mut closing_rx) = oneshot::channel::<()>();

    let mut writer = tokio::spawn(async move {
        let mut draining = false;
        loop {
            let next = tokio::select! {
                next = outbox_rx.recv() => next,
                _ = &mut closing_rx, if !draining => {
                    // No line is taken after this; the queued ones are still written.
                    draining = true;
                    outbox_rx.close();
                    continue;
                }
            };
            let Some(mut line) = next else { return WriterEnd::Drained };
            line.push('\n');
            match tokio::time::timeout(limits.write_timeout, write_half.write_all(line.as_bytes())).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return WriterEnd::Failed,
                Err(_) => return WriterEnd::TimedOut,
            }
        }
    });
    let mut writer_end = None;
    let event_outbox = outbox.clone();
    let forwarder = tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(line) => {
                    if event_outbox.send(line).await.is_err() {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    });

    let in_flight = Arc::new(Semaphore::new(limits.max_in_flight));
    let mut reader = BufReader::new(read_half);
    // Set once an `events.subscribe` of this connection was answered with a result: only a
    // subscription actually made lets the connection idle (review 42 F4: a refused one
    // did too, and held a place under the cap for ever).
    let subscribed = Arc::new(AtomicBool::new(false));
    loop {
        // A client must send each line within the idle timeout of the previous one (or of
        // connecting), and end any line it starts within it — unless it subscribed to the
        // event stream (`events.subscribe` answered with a result: the extension's host
        // relay, the live tree), which is what it then waits for. A request's answer comes within the request timeout
        // (30 s), shorter than the idle timeout (60 s), so a waiting caller is answered
        // before its connection can be closed. A writer that stopped (the client stopped
        // reading) ends the connection too.
        let start_within = (!subscribed.load(Ordering::Acquire)).then_some(limits.idle_timeout);
        let read = tokio::select! {
            read = read_line_within(&mut reader, limits.max_line, start_within, Some(limits.idle_timeout), Some(subscribed.as_ref())) => read,
            end = &mut writer => {
                writer_end = Some(end.unwrap_or(WriterEnd::Failed));
                break;
            }
        };
        let line = match read {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) => {
                if e.kind() == std::io::ErrorKind::TimedOut {
                    log.line(format_args!(
                        "closed a client connection: no complete line within {} ms (idle timeout)",
                        limits.idle_timeout.as_millis()
                    ));
                }
                break;
            }
        };
        match line {
            ClientLine::TooLong => {
                let reply = protocol::error_response(
                    None,
                    ErrorCode::BadRequest,
                    "request line exceeds 1 MiB and was discarded; send smaller requests",
                );
                let _ = outbox.send(protocol::to_line(&reply)).await;
            }
            ClientLine::Line(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => {}
            ClientLine::Line(bytes) => {
                let subscribes = !subscribed.load(Ordering::Acquire)
                    && protocol::parse_request(&bytes).is_ok_and(|request| request.method == continuity_protocol::Method::EventsSubscribe);
                let slot = tokio::select! {
                    slot = Arc::clone(&in_flight).acquire_owned() => slot,
                    end = &mut writer => {
                        writer_end = Some(end.unwrap_or(WriterEnd::Failed));
                        break;
                    }
                };
                let Ok(slot) = slot else { break };
                let handler = Arc::clone(&handler);
                let client = client.clone();
                let log = Arc::clone(&log);
                let subscribed = Arc::clone(&subscribed);
                tokio::spawn(async move {
                    let reply = respond(handler.as_ref(), &bytes, &client, limits.request_timeout, &log).await;
                    if subscribes && reply.get("result").is_some() {
                        subscribed.store(true, Ordering::Release);
                    }
                    client.send(&reply).await;
                    drop(slot);
                });
            }
        }
    }
    forwarder.abort();
    // The answers of the requests still running go out first (each request ends within its
    // deadline; a writer that stops makes their sends fail at once).
    if writer_end.is_none() {
        let every_slot = u32::try_from(limits.max_in_flight).unwrap_or(u32::MAX);
        tokio::select! {
            _ = in_flight.acquire_many(every_slot) => {}
            end = &mut writer => writer_end = Some(end.unwrap_or(WriterEnd::Failed)),
        }
    }
    let _ = closing.send(());
    drop(outbox);
    drop(client);
    let end = match writer_end {
        Some(end) => end,
        None => writer.await.unwrap_or(WriterEnd::Failed),
    };
    if matches!(end, WriterEnd::TimedOut) {
        log.line(format_args!(
            "closed a client connection: a line to it waited {} ms to be written (the client stopped reading; write timeout)",
            limits.write_timeout.as_millis()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Method;
    use serde_json::json;
    use std::path::Path;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    /// The MCP front end's cap on its runtime connections (review 42 F3) leaves most of the
    /// places to the browser's hosts and the CLI. Checked here: the front end may not name
    /// the runtime's modules (tests/it/layering.rs).
    #[test]
    fn the_mcp_front_ends_cap_is_well_under_the_connection_limit() {
        assert!(crate::mcp::runtime_client::MAX_RUNTIME_CALLS * 4 <= Limits::default().max_connections);
    }

    #[test]
    fn only_the_runtime_uid_is_allowed() {
        assert!(peer_allowed(1000, 1000));
        assert!(!peer_allowed(0, 1000));
        assert!(!peer_allowed(65534, 0));
    }

    #[tokio::test]
    async fn capped_lines_are_split_and_oversize_lines_discarded() {
        let input: &[u8] = b"short\nwaytoolongline\n\nlast";
        let mut reader = BufReader::with_capacity(3, input);
        let mut seen = Vec::new();
        while let Some(line) = read_capped_line(&mut reader, 8).await.expect("read") {
            seen.push(match line {
                ClientLine::Line(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                ClientLine::TooLong => "<too long>".to_owned(),
            });
        }
        assert_eq!(seen, ["short", "<too long>", "", "last"]);
    }

    /// Answers `ping` at once and never finishes `herdr.status` (a stuck request).
    struct StuckStatus;

    impl Handler for StuckStatus {
        async fn handle(&self, request: &Request, _client: &ClientHandle) -> Result<Value, MethodError> {
            match request.method {
                Method::HerdrStatus => std::future::pending().await,
                _ => Ok(json!({"type": "pong", "server_time": 0})),
            }
        }
    }

    /// A test client on a real Unix socket.
    struct Client {
        lines: tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
        write: tokio::net::unix::OwnedWriteHalf,
    }

    impl Client {
        async fn connect(socket: &Path) -> Self {
            let (read, write) = UnixStream::connect(socket).await.expect("connect").into_split();
            Self { lines: BufReader::new(read).lines(), write }
        }

        /// Sends a request; a runtime that already closed the connection (a refused
        /// newcomer) makes the write fail, which the following read then shows.
        async fn send(&mut self, id: &str, method: &str) {
            let line = format!("{}\n", json!({"id": id, "method": method, "params": {}}));
            let _ = self.write.write_all(line.as_bytes()).await;
        }

        /// The next line as JSON; `None` once the runtime closed the connection.
        async fn next(&mut self) -> Option<Value> {
            let line = self.lines.next_line().await.ok()??;
            Some(serde_json::from_str(&line).expect("JSON line"))
        }

        async fn call(&mut self, id: &str, method: &str) -> Option<Value> {
            self.send(id, method).await;
            self.next().await
        }
    }

    fn start(dir: &tempfile::TempDir, limits: Limits) -> std::path::PathBuf {
        start_with(dir, limits, StuckStatus)
    }

    fn start_with<H: Handler>(dir: &tempfile::TempDir, limits: Limits, handler: H) -> std::path::PathBuf {
        let socket = dir.path().join("test.sock");
        let listener = UnixListener::bind(&socket).expect("bind");
        let log = Arc::new(RuntimeLog::open(&dir.path().join("runtime.log")));
        tokio::spawn(accept_loop(listener, Arc::new(handler), Broadcast::new(8), limits, log));
        socket
    }

    /// The next line within `wait`; `Some(None)` once closed, `None` when nothing came.
    async fn next_within(client: &mut Client, wait: Duration) -> Option<Option<Value>> {
        tokio::time::timeout(wait, client.next()).await.ok()
    }

    /// Panics inside `herdr.panes` (a bug in a handler); answers everything else.
    struct PanicsOnPanes;

    impl Handler for PanicsOnPanes {
        async fn handle(&self, request: &Request, _client: &ClientHandle) -> Result<Value, MethodError> {
            match request.method {
                Method::HerdrPanes => panic!("a handler bug"),
                _ => Ok(json!({"type": "pong", "server_time": 0})),
            }
        }
    }

    /// Issue 23: a panic in a request's handler was not answered at all (tokio's task
    /// caught it, the client waited for ever; with the release profile's panic = "abort" the
    /// whole runtime died). Now it is answered `internal` and everything keeps serving.
    #[tokio::test]
    async fn a_panicking_handler_is_answered_internal_and_the_runtime_keeps_serving() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = start_with(&dir, Limits::default(), PanicsOnPanes);
        let mut watcher = Client::connect(&socket).await;
        assert_eq!(watcher.call("w", "ping").await.map(|v| v["id"].clone()), Some(json!("w")));
        let mut client = Client::connect(&socket).await;
        client.send("boom", "herdr.panes").await;
        let answer = next_within(&mut client, Duration::from_secs(5)).await.flatten().expect("the panicking request is answered");
        assert_eq!((answer["id"].clone(), answer["error"]["code"].clone()), (json!("boom"), json!("internal")));
        expect_test::expect!["herdr.panes failed inside the runtime (a bug, logged in runtime.log); the runtime keeps serving: retry, and report it if it happens again"]
            .assert_eq(answer["error"]["message"].as_str().unwrap_or_default());
        assert_eq!(client.call("after", "ping").await.map(|v| v["id"].clone()), Some(json!("after")), "the same connection serves on");
        assert_eq!(watcher.call("w2", "ping").await.map(|v| v["id"].clone()), Some(json!("w2")), "an earlier connection is alive");
        let mut fresh = Client::connect(&socket).await;
        assert_eq!(fresh.call("new", "ping").await.map(|v| v["id"].clone()), Some(json!("new")), "new connections are served");
        let log = std::fs::read_to_string(dir.path().join("runtime.log")).unwrap_or_default();
        assert!(log.contains("a herdr.panes request failed inside the runtime") && log.contains("a handler bug"), "{log}");
    }

    /// Issue 23: a client that connected and sent nothing, or half a line, held its
    /// connection (and a place under the cap) for ever. Now it is closed after the idle
    /// timeout; a client that subscribed may wait for events as long as it likes.
    #[tokio::test]
    async fn a_silent_client_or_half_a_line_is_closed_after_the_idle_timeout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let idle = Duration::from_millis(150);
        let socket = start(&dir, Limits { idle_timeout: idle, ..Limits::default() });
        let mut silent = Client::connect(&socket).await;
        let mut half = Client::connect(&socket).await;
        half.write.write_all(br#"{"id":"h","method":"pi"#).await.expect("write half a line");
        let mut talker = Client::connect(&socket).await;
        assert_eq!(talker.call("1", "events.subscribe").await.map(|v| v["id"].clone()), Some(json!("1")));
        half.write.write_all(b"ng").await.expect("more of the line, still unfinished");

        assert_eq!(next_within(&mut silent, Duration::from_secs(5)).await, Some(None), "the silent client is closed");
        assert_eq!(next_within(&mut half, Duration::from_secs(5)).await, Some(None), "half a line is closed");
        tokio::time::sleep(idle * 3).await;
        assert_eq!(talker.call("2", "ping").await.map(|v| v["id"].clone()), Some(json!("2")), "a subscribed client may idle");
        let log = std::fs::read_to_string(dir.path().join("runtime.log")).unwrap_or_default();
        assert!(log.contains("no complete line within 150 ms (idle timeout)"), "{log}");
    }

    /// Review of issue 23: after its first line a client could idle for ever and hold a
    /// place under the cap. Now only a connection that asked for the event stream may
    /// idle; any other gets the idle timeout between its lines too.
    #[tokio::test]
    async fn only_a_subscribed_connection_may_idle_between_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let idle = Duration::from_millis(150);
        let socket = start(&dir, Limits { idle_timeout: idle, ..Limits::default() });
        let mut pinger = Client::connect(&socket).await;
        assert_eq!(pinger.call("1", "ping").await.map(|v| v["id"].clone()), Some(json!("1")));
        let mut listener = Client::connect(&socket).await;
        assert_eq!(listener.call("s", "events.subscribe").await.map(|v| v["id"].clone()), Some(json!("s")));

        assert_eq!(next_within(&mut pinger, Duration::from_secs(5)).await, Some(None), "a client that spoke once and then idled is closed");
        tokio::time::sleep(idle * 3).await;
        assert_eq!(listener.call("2", "ping").await.map(|v| v["id"].clone()), Some(json!("2")), "a subscribed client may idle");
    }

    /// Refuses `events.subscribe` whose `after_seq` is negative (as the router does, and as
    /// it refuses a bad `log_id` or a disabled stream); makes any other subscription after
    /// `delay`; answers everything else at once.
    struct PickySubscribe {
        delay: Duration,
    }

    impl Handler for PickySubscribe {
        async fn handle(&self, request: &Request, _client: &ClientHandle) -> Result<Value, MethodError> {
            match request.method {
                Method::EventsSubscribe if request.params.get("after_seq").and_then(Value::as_i64).is_some_and(|seq| seq < 0) => {
                    Err((ErrorCode::BadRequest, "after_seq must be a non-negative integer".to_owned()))
                }
                Method::EventsSubscribe => {
                    tokio::time::sleep(self.delay).await;
                    Ok(json!({"type": "subscribed"}))
                }
                _ => Ok(json!({"type": "pong", "server_time": 0})),
            }
        }
    }

    /// Sends `events.subscribe` with `after_seq` and returns the answer.
    async fn subscribe(client: &mut Client, id: &str, after_seq: i64) -> Option<Value> {
        let line = format!("{}\n", json!({"id": id, "method": "events.subscribe", "params": {"after_seq": after_seq}}));
        client.write.write_all(line.as_bytes()).await.expect("write");
        client.next().await
    }

    /// Review 42 F4: a connection that sent `events.subscribe` was exempt from the idle
    /// timeout even when the subscription was refused, so a refused subscribe held a place
    /// under the cap for ever. Now only a subscription actually made exempts it (also one
    /// that is made while the next line is already awaited).
    #[tokio::test]
    async fn a_refused_subscribe_does_not_exempt_the_connection_from_the_idle_timeout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let idle = Duration::from_millis(150);
        let limits = Limits { idle_timeout: idle, max_connections: 2, ..Limits::default() };
        let socket = start_with(&dir, limits, PickySubscribe { delay: idle / 3 });
        let mut refused = Client::connect(&socket).await;
        let answer = subscribe(&mut refused, "r", -1).await.expect("answered");
        assert_eq!(answer["error"]["code"], "bad_request", "{answer}");
        let mut subscriber = Client::connect(&socket).await;
        assert_eq!(subscribe(&mut subscriber, "s", 0).await.map(|v| v["id"].clone()), Some(json!("s")));

        assert_eq!(next_within(&mut refused, Duration::from_secs(5)).await, Some(None), "a refused subscriber that idled is closed");
        tokio::time::sleep(idle * 3).await;
        assert_eq!(subscriber.call("2", "ping").await.map(|v| v["id"].clone()), Some(json!("2")), "a subscribed client may idle");
        assert!(served_within(&socket, Duration::from_secs(5)).await, "the refused subscriber's place was given back");
    }

    /// Answers `ping`; `events.subscribe` starts a task that keeps a copy of the client's
    /// handle and waits for something to send that never comes (a feed on a quiet
    /// workstation), and counts the feeds that saw their connection close.
    struct QuietFeed(Arc<std::sync::atomic::AtomicUsize>);

    impl Handler for QuietFeed {
        async fn handle(&self, request: &Request, client: &ClientHandle) -> Result<Value, MethodError> {
            if request.method == Method::EventsSubscribe {
                let (held, ended) = (client.clone(), Arc::clone(&self.0));
                tokio::spawn(async move {
                    held.closed().await;
                    ended.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    std::future::pending::<()>().await;
                    drop(held);
                });
            }
            Ok(json!({"type": "pong", "server_time": 0}))
        }
    }

    /// Connects until a client's `ping` is answered (not `overloaded`), for at most `wait`.
    async fn served_within(socket: &Path, wait: Duration) -> bool {
        let until = tokio::time::Instant::now() + wait;
        while tokio::time::Instant::now() < until {
            let mut newcomer = Client::connect(socket).await;
            if let Some(Some(answer)) = next_within_after_send(&mut newcomer, "n", Duration::from_millis(500)).await {
                if answer["id"] == "n" {
                    return true;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    async fn next_within_after_send(client: &mut Client, id: &str, wait: Duration) -> Option<Option<Value>> {
        client.send(id, "ping").await;
        next_within(client, wait).await
    }

    /// Review of stop 40: a subscribed connection that closed kept its permit while anything
    /// held its handle (the event feed, until the next event). Now the outbox closes once
    /// the answers are out: the permit comes back, and the feed sees `closed()`.
    #[tokio::test]
    async fn a_closed_connection_gives_its_place_back_though_a_feed_still_holds_its_handle() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ended = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let socket = start_with(&dir, Limits { max_connections: 1, ..Limits::default() }, QuietFeed(Arc::clone(&ended)));
        let mut subscriber = Client::connect(&socket).await;
        assert_eq!(subscriber.call("s", "events.subscribe").await.map(|v| v["id"].clone()), Some(json!("s")));
        drop(subscriber);
        assert!(served_within(&socket, Duration::from_secs(5)).await, "the closed subscriber still holds the only place");
        assert_eq!(ended.load(std::sync::atomic::Ordering::SeqCst), 1, "the feed saw its connection close");
    }

    /// Review of stop 40: a client that sent requests and never read its answers filled
    /// its socket; the writer waited for ever, and the connection kept its place. Now a line
    /// that waits `write_timeout` to be written closes the connection.
    #[tokio::test]
    async fn a_client_that_stops_reading_is_closed_after_the_write_timeout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let limits = Limits { max_connections: 1, write_timeout: Duration::from_millis(200), ..Limits::default() };
        let socket = start(&dir, limits);
        let (read, mut write) = UnixStream::connect(&socket).await.expect("connect").into_split();
        let mut pings = String::new();
        for n in 0..20_000 {
            pings.push_str(&format!("{}\n", json!({"id": format!("{n}"), "method": "ping", "params": {}})));
        }
        // Written in the background (the runtime stops reading once its answers back up);
        // the read half is kept open and never read.
        let flood = tokio::spawn(async move {
            let _ = write.write_all(pings.as_bytes()).await;
            write
        });
        assert!(served_within(&socket, Duration::from_secs(10)).await, "the client that stopped reading still holds the only place");
        drop(read);
        flood.abort();
        let log = std::fs::read_to_string(dir.path().join("runtime.log")).unwrap_or_default();
        assert!(log.contains("the client stopped reading; write timeout"), "{log}");
    }

    #[tokio::test]
    async fn a_connection_over_the_cap_is_told_overloaded_and_closed_and_its_place_is_freed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = start(&dir, Limits { max_connections: 2, ..Limits::default() });
        let mut first = Client::connect(&socket).await;
        let mut second = Client::connect(&socket).await;
        // Answered requests prove both connections hold a place under the cap.
        assert_eq!(first.call("1", "ping").await.map(|v| v["id"].clone()), Some(json!("1")));
        assert_eq!(second.call("2", "ping").await.map(|v| v["id"].clone()), Some(json!("2")));

        let mut third = Client::connect(&socket).await;
        let refusal = third.next().await.expect("an error line before the close");
        assert_eq!(refusal["id"], "");
        assert_eq!(refusal["error"]["code"], "overloaded");
        let message = refusal["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("2 connections") && message.contains("reconnect"), "{message}");
        assert!(third.next().await.is_none(), "the refused connection is closed");
        assert_eq!(first.call("3", "ping").await.map(|v| v["id"].clone()), Some(json!("3")), "others keep working");

        // A closed connection gives its place back: wait until a newcomer is served.
        drop(second);
        loop {
            let mut newcomer = Client::connect(&socket).await;
            match newcomer.call("4", "ping").await {
                Some(answer) if answer["id"] == "4" => break,
                Some(answer) => assert_eq!(answer["error"]["code"], "overloaded"),
                None => {}
            }
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn a_request_over_its_deadline_is_answered_timeout_and_the_connection_keeps_serving() {
        let dir = tempfile::tempdir().expect("tempdir");
        let limits = Limits { request_timeout: Duration::from_millis(50), ..Limits::default() };
        let socket = start(&dir, limits);
        let mut client = Client::connect(&socket).await;
        client.send("stuck", "herdr.status").await;
        client.send("quick", "ping").await;
        let answers = [client.next().await, client.next().await];
        let by_id = |id: &str| answers.iter().flatten().find(|a| a["id"] == id).cloned().unwrap_or_default();
        assert_eq!(by_id("quick")["result"]["type"], "pong", "a stuck request does not block the next one");
        let timeout = by_id("stuck");
        assert_eq!(timeout["error"]["code"], "timeout");
        expect_test::expect!["herdr.status took longer than 50 ms and was abandoned; retry, and see runtime.log if it keeps happening"]
            .assert_eq(timeout["error"]["message"].as_str().unwrap_or_default());
    }

    #[tokio::test]
    async fn a_connection_runs_at_most_max_in_flight_requests_and_reads_on_when_one_ends() {
        let dir = tempfile::tempdir().expect("tempdir");
        let limits = Limits { max_in_flight: 1, request_timeout: Duration::from_millis(50), ..Limits::default() };
        let socket = start(&dir, limits);
        let mut client = Client::connect(&socket).await;
        client.send("stuck", "herdr.status").await;
        client.send("quick", "ping").await;
        // With one slot, `quick` is read only after `stuck` timed out: the order shows it.
        let ids: Vec<Value> = [client.next().await, client.next().await].into_iter().flatten().map(|v| v["id"].clone()).collect();
        assert_eq!(ids, [json!("stuck"), json!("quick")]);
    }
}
