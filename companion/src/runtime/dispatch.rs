//! Request dispatch: the one place where runtime methods are routed.
//!
//! To add a method family (`events.*`, `herdr.workspaces`, …) add a match arm in
//! [`Dispatcher::dispatch`] that calls a handler in its own module. A handler gets the
//! validated [`Request`], the shared [`RuntimeContext`] and the calling [`ClientHandle`]
//! (to push later events to that client only, e.g. a subscription). It returns the
//! response object; errors are `(code, message)` pairs whose message says what to do.
//!
//! Invariant: every request line gets exactly one response line with the same `id`
//! (or `""` when the id could not be read).

use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::{broadcast, mpsc, watch};

use super::log::RuntimeLog;
use crate::herdr::HerdrStatus;
use crate::paths::CompanionHome;
use crate::protocol::{self, ErrorCode, Method, Request, PROTOCOL_VERSION};

/// State shared by every connection.
#[derive(Debug)]
pub struct RuntimeContext {
    /// The companion home.
    pub home: CompanionHome,
    /// Latest Herdr connection status.
    pub herdr_status: watch::Receiver<HerdrStatus>,
    /// Runtime-wide events, already serialized as lines, sent to every client.
    broadcaster: broadcast::Sender<String>,
    /// The runtime log.
    pub log: Arc<RuntimeLog>,
    /// Identifies this runtime process; changes on every start.
    pub boot_id: String,
    /// The event log and Herdr catalog (set once at start-up; see `crate::stream`).
    pub event_hub: std::sync::OnceLock<Arc<crate::stream::EventHub>>,
    /// The parent inbox (set once at start-up; see `crate::inbox`).
    pub inbox: std::sync::OnceLock<Arc<crate::inbox::Inbox>>,
}

impl RuntimeContext {
    /// Builds the context.
    pub fn new(
        home: CompanionHome,
        herdr_status: watch::Receiver<HerdrStatus>,
        broadcaster: broadcast::Sender<String>,
        log: Arc<RuntimeLog>,
    ) -> Self {
        Self {
            home,
            herdr_status,
            broadcaster,
            log,
            boot_id: new_boot_id(),
            event_hub: std::sync::OnceLock::new(),
            inbox: std::sync::OnceLock::new(),
        }
    }

    /// Sends an event to every connected client.
    pub fn broadcast(&self, message: &Value) {
        // No receivers is fine: nobody is connected.
        let _ = self.broadcaster.send(protocol::to_line(message));
    }

    /// A receiver of runtime-wide events (one per client).
    pub fn subscribe(&self) -> broadcast::Receiver<String> {
        self.broadcaster.subscribe()
    }

    /// The current Herdr status.
    pub fn herdr(&self) -> HerdrStatus {
        self.herdr_status.borrow().clone()
    }
}

/// The sending side of one client connection.
#[derive(Debug, Clone)]
pub struct ClientHandle {
    /// Lines queued for this client's socket.
    outbox: mpsc::Sender<String>,
}

impl ClientHandle {
    /// Wraps a client's outbox.
    pub fn new(outbox: mpsc::Sender<String>) -> Self {
        Self { outbox }
    }

    /// Queues a message for this client; false once the client is gone.
    pub async fn send(&self, message: &Value) -> bool {
        self.outbox.send(protocol::to_line(message)).await.is_ok()
    }

    /// True once the client connection has closed.
    pub fn is_closed(&self) -> bool {
        self.outbox.is_closed()
    }
}

/// A method failure: its code and a message saying what to do.
pub type MethodError = (ErrorCode, String);

/// Routes requests to handlers.
#[derive(Debug)]
pub struct Dispatcher {
    /// Shared runtime state.
    ctx: Arc<RuntimeContext>,
}

impl Dispatcher {
    /// A dispatcher over `ctx`.
    pub fn new(ctx: Arc<RuntimeContext>) -> Self {
        Self { ctx }
    }

    /// The shared context.
    pub fn context(&self) -> &Arc<RuntimeContext> {
        &self.ctx
    }

    /// Validates one request line and returns the response to send.
    pub async fn handle_line(&self, line: &[u8], client: &ClientHandle) -> Value {
        match protocol::parse_request(line) {
            Err(bad) => protocol::error_response(bad.id.as_deref(), bad.code, &bad.reason),
            Ok(request) => match self.dispatch(&request, client).await {
                Ok(result) => protocol::result_response(&request.id, result),
                Err((code, message)) => protocol::error_response(Some(&request.id), code, &message),
            },
        }
    }

    /// Runs one validated request. Add new method families here.
    pub async fn dispatch(
        &self,
        request: &Request,
        client: &ClientHandle,
    ) -> Result<Value, MethodError> {
        match request.method {
            Method::Hello => self.hello(request),
            Method::Ping => Ok(json!({ "type": "pong", "server_time": unix_millis() })),
            Method::HerdrStatus => Ok(json!({ "type": "herdr_status", "herdr": self.ctx.herdr() })),
            Method::EventsSubscribe
            | Method::HerdrWorkspaces
            | Method::HerdrPanes
            | Method::HerdrAgents
            | Method::HerdrPaneRead => crate::stream::methods::handle(&self.ctx, request, client).await,
            Method::TaskDispatch
            | Method::TaskList
            | Method::InboxPending
            | Method::InboxAck
            | Method::InboxCounts => crate::inbox::methods::handle(&self.ctx, request).await,
            // Reserved by the protocol; no service serves it yet.
            Method::JudgeTurnEnd => Err((
                ErrorCode::UnknownMethod,
                protocol::unknown_method_reason(request.method.as_str()),
            )),
        }
    }

    fn hello(&self, request: &Request) -> Result<Value, MethodError> {
        let Some(protocol) = request.params.get("protocol").and_then(Value::as_u64) else {
            return Err((
                ErrorCode::BadRequest,
                "hello needs params.protocol (an integer); send {\"protocol\":1,\"extension_version\":\"…\"}".to_owned(),
            ));
        };
        Ok(json!({
            "type": "hello",
            "runtime_version": env!("CARGO_PKG_VERSION"),
            "protocol": PROTOCOL_VERSION,
            "compatible": protocol == PROTOCOL_VERSION,
            "boot_id": self.ctx.boot_id,
            "herdr": self.ctx.herdr(),
        }))
    }
}

/// Milliseconds since the Unix epoch.
pub fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A boot id unique per runtime start: start time in nanoseconds and the pid, in hex.
fn new_boot_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{nanos:x}-{:x}", std::process::id())
}
