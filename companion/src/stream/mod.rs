//! The runtime's replayable event stream (issue 3, SPEC P1/P9, N3): every stream event is
//! stored in `state.db` with a `seq`, then pushed live to subscribed clients.
//!
//! Invariants:
//! - Store-then-send under one lock: a live event is always already in the log, and live
//!   events leave in `seq` order.
//! - A catalog change and its events are committed in one transaction and become visible
//!   (to `herdr.*` readers and `hello`) only after the commit; a failed write changes
//!   nothing, so the next resync produces the same events again. Readers take a
//!   published copy under a lock never held across a database call.
//! - A subscription (`events.subscribe {after_seq}`) gets `hello`, then every stored event
//!   with `seq > after_seq` in order, then live events; the subscriber remembers the last
//!   `seq` it sent and drops anything not above it, so the replay/live seam has no
//!   duplicates and no gaps (a lagging subscriber refills from the log). A connection has
//!   one subscription (a second `events.subscribe` on it ends the first), and a
//!   subscription ends with its connection, not at the next event.
//! - Each event carries the `boot_id` of the runtime that produced it; events from an
//!   older boot are sent with `stale: true` (docs/PROTOCOL.md "Event stream").
//! - `agent_output` is not a stored event: pane output tails live in memory, newest per
//!   pane ([`outputs`]), are sent live, and each subscription gets every pane's newest
//!   tail once right after its replay (never an older tail after a newer one).

pub mod outputs;
pub mod sync;

use crate::protocol::{ErrorCode, EventName, MethodError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::sync::broadcast;

use crate::clock::unix_millis;
use crate::db::{off_worker, DbError, StateDb, StoredEvent};
use crate::herdr::catalog::{Catalog, StreamEvent};
use crate::log::RuntimeLog;
use crate::outbox::ClientHandle;
use outputs::{LatestOutputs, OutputTail, SentOutputs};

/// Name and version of the event stream, sent in `hello`.
pub const STREAM_PROTOCOL: &str = continuity_protocol::EVENTS_PROTOCOL;

/// `log_id`s accepted in `events.subscribe` (1 to 64 characters).
use continuity_protocol::limits::{is_log_id, MAX_LOG_ID_CHARS};

/// Most events replayed per database read.
const REPLAY_BATCH: i64 = 500;

/// The event log, its live fan-out and the current catalog.
#[derive(Debug)]
pub struct EventHub {
    /// This runtime's boot id.
    boot_id: String,
    /// The event log's identity (`state.db`'s `log_id`).
    log_id: String,
    /// The database (writes and replays are serialized by this lock; locked only on the
    /// blocking pool, see `crate::db`).
    db: Mutex<StateDb>,
    /// Live fan-out of stored events and output tails.
    live: broadcast::Sender<Live>,
    /// The latest Herdr catalog, as the writer changes it (locked only on the blocking
    /// pool, across the database write of the events it produced).
    catalog: Mutex<Catalog>,
    /// What readers see: the catalog and the last stored seq after the latest committed
    /// change, swapped in one step (never held across a database call, so an async worker
    /// that reads it never waits on SQLite).
    published: Mutex<Published>,
    /// The newest output tail per pane (memory only; no database call under this lock).
    outputs: Mutex<LatestOutputs>,
}

/// The reader's view of the hub.
#[derive(Debug, Clone)]
struct Published {
    /// The catalog after the latest change.
    catalog: Arc<Catalog>,
    /// The highest stored `seq` (0 when none); this catalog is at least as new as it.
    last_seq: i64,
}

/// One item of the live fan-out.
#[derive(Debug, Clone)]
enum Live {
    /// An event already stored in the log.
    Stored(StoredEvent),
    /// A pane's newest output tail (not stored).
    Output(Arc<OutputTail>),
}

/// Key of the persisted catalog in the kv table.
const CATALOG_KEY: &str = "herdr_catalog";

impl EventHub {
    /// Opens `state.db` and restores the last known catalog (so a settle that happened
    /// while the runtime was down is still produced once after restart).
    pub fn open(db_path: &Path, boot_id: String) -> Result<Arc<Self>, DbError> {
        let db = StateDb::open(db_path)?;
        let log_id = db.log_id()?;
        let catalog: Catalog = db.get(CATALOG_KEY)?.and_then(|v| serde_json::from_value(v).ok()).unwrap_or_default();
        let published = Published { catalog: Arc::new(catalog.clone()), last_seq: db.last_seq()? };
        let (live, _) = broadcast::channel(1024);
        Ok(Arc::new(Self {
            boot_id,
            log_id,
            db: Mutex::new(db),
            live,
            catalog: Mutex::new(catalog),
            published: Mutex::new(published),
            outputs: Mutex::new(LatestOutputs::default()),
        }))
    }

    /// This runtime's boot id.
    pub fn boot_id(&self) -> &str {
        &self.boot_id
    }

    /// Runs `change` on the catalog, stores and publishes the events it returns, and
    /// persists the catalog (on the blocking pool: it writes state.db).
    pub async fn update_catalog<R: Send + 'static>(
        self: &Arc<Self>,
        change: impl FnOnce(&mut Catalog) -> (Vec<StreamEvent>, R) + Send + 'static,
    ) -> Result<R, DbError> {
        let hub = Arc::clone(self);
        off_worker(move || hub.update_catalog_blocking(change)).await
    }

    /// The catalog change is applied to a copy and takes effect only once its events and
    /// the persisted catalog are committed together: a failed write changes nothing, so
    /// the next resync produces the same events again (never lost, never twice).
    fn update_catalog_blocking<R>(&self, change: impl FnOnce(&mut Catalog) -> (Vec<StreamEvent>, R)) -> Result<R, DbError> {
        let mut catalog = self.catalog.lock().unwrap_or_else(|p| p.into_inner());
        let mut next = catalog.clone();
        let (events, result) = change(&mut next);
        let stored = if events.is_empty() {
            Vec::new()
        } else {
            let snapshot = serde_json::to_value(&next).unwrap_or(Value::Null);
            let rows: Vec<(&str, &Value)> = events.iter().map(|e| (e.event.as_str(), &e.data)).collect();
            let mut db = self.db.lock().unwrap_or_else(|p| p.into_inner());
            db.append_all(&self.boot_id, unix_millis() as i64, &rows, (CATALOG_KEY, &snapshot))?
        };
        *catalog = next;
        // Publish before sending live: a subscriber that reads the new last_seq either
        // gets these events live or finds them in the log.
        {
            let mut published = self.published.lock().unwrap_or_else(|p| p.into_inner());
            published.catalog = Arc::new(catalog.clone());
            if let Some(last) = stored.last() {
                published.last_seq = last.seq;
            }
        }
        // A pane that is gone has no output any more.
        self.outputs.lock().unwrap_or_else(|p| p.into_inner()).retain_panes(|pane| catalog.panes.contains_key(pane));
        for event in stored {
            let _ = self.live.send(Live::Stored(event));
        }
        Ok(result)
    }

    /// Records a pane's newest output tail (`agent_output` payload: `pane_id`,
    /// `workspace_id`, `agent`, `tail`) and sends it live. Not stored: no `seq`.
    pub fn publish_output(&self, pane_id: &str, data: serde_json::Map<String, Value>) {
        let mut outputs = self.outputs.lock().unwrap_or_else(|p| p.into_inner());
        let tail = outputs.record(pane_id, unix_millis() as i64, data);
        // Sent under the lock, so live tails leave in rev order.
        let _ = self.live.send(Live::Output(tail));
    }

    /// Every pane's newest output tail.
    fn latest_outputs(&self) -> Vec<Arc<OutputTail>> {
        self.outputs.lock().unwrap_or_else(|p| p.into_inner()).snapshot()
    }

    /// The catalog after the latest committed change.
    pub fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.published().catalog)
    }

    fn published(&self) -> Published {
        self.published.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The wire form of a stored event for a client.
    pub fn to_message(&self, stored: &StoredEvent) -> Value {
        let mut data = match &stored.data {
            Value::Object(map) => map.clone(),
            other => {
                let mut map = serde_json::Map::new();
                map.insert("value".to_owned(), other.clone());
                map
            }
        };
        data.insert("seq".to_owned(), json!(stored.seq));
        data.insert("boot_id".to_owned(), json!(stored.boot_id));
        data.insert("at".to_owned(), json!(stored.at));
        data.insert("stale".to_owned(), json!(stored.boot_id != self.boot_id));
        json!({"event": stored.event, "data": data})
    }

    /// The event log's identity (`state.db`'s `log_id`).
    pub fn log_id(&self) -> &str {
        &self.log_id
    }

    /// A page of the stored log for `herdr_since` (`crate::tools::since`): up to `limit + 1`
    /// events after `cursor` (the extra one tells that more wait; without a cursor, after
    /// the newest `limit`), and whether the cursor was
    /// not of this log (another `log_id`, or beyond its end), in which case the page starts
    /// at the log's beginning. Returns the events, the cursor used and that flag.
    pub async fn events_page(
        self: &Arc<Self>,
        cursor: Option<i64>,
        log_id: Option<String>,
        limit: i64,
    ) -> Result<(Vec<StoredEvent>, i64, bool), DbError> {
        let hub = Arc::clone(self);
        off_worker(move || {
            let db = hub.db.lock().unwrap_or_else(|p| p.into_inner());
            let last = db.last_seq()?;
            let reset = log_id.is_some_and(|id| id != hub.log_id) || cursor.is_some_and(|c| c > last);
            let start = match cursor {
                _ if reset => 0,
                Some(c) => c,
                None => (last - limit).max(0),
            };
            Ok((db.events_after(start, limit.saturating_add(1))?, start, reset))
        })
        .await
    }

    /// The highest seq in the log itself (not the published copy).
    async fn stored_last_seq(self: &Arc<Self>) -> Result<i64, DbError> {
        let hub = Arc::clone(self);
        off_worker(move || hub.db.lock().unwrap_or_else(|p| p.into_inner()).last_seq()).await
    }

    async fn replay_after(self: &Arc<Self>, after: i64) -> Vec<StoredEvent> {
        let hub = Arc::clone(self);
        off_worker(move || hub.db.lock().unwrap_or_else(|p| p.into_inner()).events_after(after, REPLAY_BATCH)).await.unwrap_or_default()
    }

    /// Handles `events.subscribe {after_seq?, log_id?}`: spawns the per-client sender and
    /// returns the result object. Without `after_seq` only live events follow `hello`. A
    /// position that is not in this log (another `log_id`, or `after_seq` beyond the last
    /// seq) replays the whole log, with `log_reset: true`.
    pub async fn subscribe(self: &Arc<Self>, params: &serde_json::Map<String, Value>, client: ClientHandle) -> Result<Value, MethodError> {
        let after_seq = match params.get("after_seq") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_i64().filter(|n| *n >= 0).ok_or((
                ErrorCode::BadRequest,
                "events.subscribe: after_seq must be a non-negative integer (the last seq you received), or omitted for live events only".to_owned(),
            ))?),
        };
        let log_id = match params.get("log_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) if is_log_id(id) => Some(id.as_str()),
            Some(_) => return Err((
                ErrorCode::BadRequest,
                format!("events.subscribe: log_id must be the string (1 to {MAX_LOG_ID_CHARS} characters) of an earlier hello's log_id, or omitted"),
            )),
        };
        // Subscribe to live events before reading the log, so nothing falls in between.
        let mut live = self.live.subscribe();
        // One read: the catalog (hello's agents) is at least as new as last_seq.
        let Published { catalog, last_seq } = self.published();
        let beyond_end = match after_seq {
            // The published seq trails a commit by a moment (a replay may already have sent
            // that event); only the log itself can say a seq was never stored.
            Some(seq) if seq > last_seq => seq > self.stored_last_seq().await.unwrap_or(last_seq),
            _ => false,
        };
        let log_reset = beyond_end || log_id.is_some_and(|id| id != self.log_id);
        let start = if log_reset { 0 } else { after_seq.unwrap_or(last_seq) };
        let hello = json!({"event": EventName::Hello, "data": {
            "protocol": STREAM_PROTOCOL,
            "boot_id": self.boot_id,
            "log_id": self.log_id,
            "log_reset": log_reset,
            "server_time": unix_millis(),
            "last_seq": last_seq,
            "workspaces": catalog.workspace_list(),
            "agents": catalog.agents(),
        }});
        let mut feed = Feed { hub: Arc::clone(self), client: client.clone(), sent: start, outputs: SentOutputs::default() };
        let run = async move {
            if !(feed.send(&hello).await && feed.refill(None).await && feed.send_latest_outputs().await) {
                return;
            }
            loop {
                // A connection that closes ends its feed at once, not at the next event
                // (which on a quiet workstation may never come).
                let next = tokio::select! {
                    next = live.recv() => next,
                    () = feed.client.closed() => return,
                };
                let more = match next {
                    Ok(Live::Stored(stored)) => feed.live_stored(&stored).await,
                    Ok(Live::Output(tail)) => feed.output(&tail).await,
                    // Missed items: refill stored events from the log, then resend the
                    // tails that changed meanwhile.
                    Err(broadcast::error::RecvError::Lagged(_)) => feed.refill(None).await && feed.send_latest_outputs().await,
                    Err(broadcast::error::RecvError::Closed) => false,
                };
                if !more {
                    return;
                }
            }
        };
        client.replace_subscription(run);
        Ok(json!({"type": "events_subscribed", "boot_id": self.boot_id, "log_id": self.log_id, "log_reset": log_reset,
            "last_seq": last_seq, "after_seq": start}))
    }
}

/// One subscription's sender: what it already sent, and where it goes.
struct Feed {
    /// The hub it reads.
    hub: Arc<EventHub>,
    /// The subscribed client.
    client: ClientHandle,
    /// The highest `seq` sent (or the replay start).
    sent: i64,
    /// The output tails sent, per pane.
    outputs: SentOutputs,
}

impl Feed {
    /// Sends one message; false once the client is gone.
    async fn send(&self, message: &Value) -> bool {
        self.client.send(message).await
    }

    async fn send_stored(&mut self, stored: &StoredEvent) -> bool {
        self.sent = stored.seq;
        self.client.send(&self.hub.to_message(stored)).await
    }

    /// Sends every stored event after `sent` (below `before`, when given) from the log.
    async fn refill(&mut self, before: Option<i64>) -> bool {
        loop {
            let batch = self.hub.replay_after(self.sent).await;
            if batch.is_empty() {
                return true;
            }
            for stored in &batch {
                if before.is_some_and(|b| stored.seq >= b) {
                    return true;
                }
                if !self.send_stored(stored).await {
                    return false;
                }
            }
        }
    }

    /// A live stored event: dropped when already sent; a gap (should not happen) is
    /// refilled from the log first, so events leave in `seq` order.
    async fn live_stored(&mut self, stored: &StoredEvent) -> bool {
        if stored.seq <= self.sent {
            return true;
        }
        if stored.seq > self.sent + 1 && !self.refill(Some(stored.seq)).await {
            return false;
        }
        self.send_stored(stored).await
    }

    /// A pane's tail, unless this subscription already sent it or a newer one.
    async fn output(&mut self, tail: &OutputTail) -> bool {
        if !self.outputs.take_if_new(tail) {
            return true;
        }
        self.client.send(&tail.to_message(&self.hub.boot_id)).await
    }

    /// Every pane's newest tail that this subscription has not sent yet.
    async fn send_latest_outputs(&mut self) -> bool {
        for tail in self.hub.latest_outputs() {
            if !self.output(&tail).await {
                return false;
            }
        }
        true
    }
}

/// Opens the event log in `db_path` (`state.db`) and spawns the Herdr sync loop
/// ([`sync::run_sync`]). A database that cannot be opened is logged and gives `None`; the
/// stream methods then answer `not_ready` with the reason in `runtime.log`.
pub async fn start(db_path: PathBuf, boot_id: String, herdr_socket: PathBuf, log: Arc<RuntimeLog>) -> Option<Arc<EventHub>> {
    match off_worker(move || EventHub::open(&db_path, boot_id)).await {
        Ok(hub) => {
            tokio::spawn(sync::run_sync(herdr_socket, Arc::clone(&hub), log));
            Some(hub)
        }
        Err(e) => {
            log.line(format_args!("event stream disabled: {e}"));
            None
        }
    }
}
