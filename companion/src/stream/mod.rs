//! The runtime's replayable event stream (issue 3, SPEC P1/P9, N3): every stream event is
//! stored in `state.db` with a `seq`, then pushed live to subscribed clients.
//!
//! Invariants:
//! - Store-then-send under one lock: a live event is always already in the log, and live
//!   events leave in `seq` order.
//! - A subscription (`events.subscribe {after_seq}`) gets `hello`, then every stored event
//!   with `seq > after_seq` in order, then live events; the subscriber remembers the last
//!   `seq` it sent and drops anything not above it, so the replay/live seam has no
//!   duplicates and no gaps (a lagging subscriber refills from the log).
//! - Each event carries the `boot_id` of the runtime that produced it; events from an
//!   older boot are sent with `stale: true` (docs/PROTOCOL.md "Event stream").


pub mod methods;

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::sync::broadcast;

use crate::db::{off_worker, DbError, StateDb, StoredEvent};
use crate::herdr::catalog::{Catalog, StreamEvent};
use crate::runtime::dispatch::unix_millis;
use crate::runtime::ClientHandle;

/// Name and version of the event stream, sent in `hello`.
pub const STREAM_PROTOCOL: &str = "herdr-continuity-events/1";

/// Most events replayed per database read.
const REPLAY_BATCH: i64 = 500;

/// The event log, its live fan-out and the current catalog.
#[derive(Debug)]
pub struct EventHub {
    /// This runtime's boot id.
    boot_id: String,
    /// The database (writes and replays are serialized by this lock; locked only on the
    /// blocking pool, see `crate::db`).
    db: Mutex<StateDb>,
    /// Live fan-out of stored events.
    live: broadcast::Sender<StoredEvent>,
    /// The latest Herdr catalog.
    catalog: Mutex<Catalog>,
}

/// Key of the persisted catalog in the kv table.
const CATALOG_KEY: &str = "herdr_catalog";

impl EventHub {
    /// Opens `state.db` and restores the last known catalog (so a settle that happened
    /// while the runtime was down is still produced once after restart).
    pub fn open(db_path: &Path, boot_id: String) -> Result<Arc<Self>, DbError> {
        let db = StateDb::open(db_path)?;
        let catalog = db
            .get(CATALOG_KEY)?
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default();
        let (live, _) = broadcast::channel(1024);
        Ok(Arc::new(Self { boot_id, db: Mutex::new(db), live, catalog: Mutex::new(catalog) }))
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

    fn update_catalog_blocking<R>(
        &self,
        change: impl FnOnce(&mut Catalog) -> (Vec<StreamEvent>, R),
    ) -> Result<R, DbError> {
        let mut catalog = self.catalog.lock().unwrap_or_else(|p| p.into_inner());
        let (events, result) = change(&mut catalog);
        if !events.is_empty() {
            let snapshot = serde_json::to_value(&*catalog).unwrap_or(Value::Null);
            let mut db = self.db.lock().unwrap_or_else(|p| p.into_inner());
            db.put(CATALOG_KEY, &snapshot)?;
            for event in events {
                let stored = db.append(&self.boot_id, unix_millis() as i64, event.event, &event.data)?;
                let _ = self.live.send(stored);
            }
        }
        Ok(result)
    }

    /// Stores and publishes one event that is not a catalog change (e.g. `agent_output`).
    pub async fn publish(self: &Arc<Self>, event: &'static str, data: Value) -> Result<(), DbError> {
        let hub = Arc::clone(self);
        off_worker(move || {
            let mut db = hub.db.lock().unwrap_or_else(|p| p.into_inner());
            let stored = db.append(&hub.boot_id, unix_millis() as i64, event, &data)?;
            let _ = hub.live.send(stored);
            Ok(())
        })
        .await
    }

    /// A copy of the catalog.
    pub fn catalog(&self) -> Catalog {
        self.catalog.lock().unwrap_or_else(|p| p.into_inner()).clone()
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

    async fn last_seq(self: &Arc<Self>) -> i64 {
        let hub = Arc::clone(self);
        off_worker(move || hub.db.lock().unwrap_or_else(|p| p.into_inner()).last_seq()).await.unwrap_or(0)
    }

    async fn replay_after(self: &Arc<Self>, after: i64) -> Vec<StoredEvent> {
        let hub = Arc::clone(self);
        off_worker(move || hub.db.lock().unwrap_or_else(|p| p.into_inner()).events_after(after, REPLAY_BATCH))
            .await
            .unwrap_or_default()
    }

    /// Handles `events.subscribe {after_seq?}`: spawns the per-client sender and returns
    /// the result object. Without `after_seq` only live events follow `hello`.
    pub async fn subscribe(self: &Arc<Self>, params: &serde_json::Map<String, Value>, client: ClientHandle) -> Result<Value, (&'static str, String)> {
        let after_seq = match params.get("after_seq") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_i64().filter(|n| *n >= 0).ok_or((
                "bad_request",
                "events.subscribe: after_seq must be a non-negative integer (the last seq you received), or omitted for live events only".to_owned(),
            ))?),
        };
        // Subscribe to live events before reading the log, so nothing falls in between.
        let mut live = self.live.subscribe();
        let last_seq = self.last_seq().await;
        let start = after_seq.unwrap_or(last_seq);
        let catalog = self.catalog();
        let hello = json!({"event": "hello", "data": {
            "protocol": STREAM_PROTOCOL,
            "boot_id": self.boot_id,
            "server_time": unix_millis(),
            "last_seq": last_seq,
            "workspaces": catalog.workspace_list(),
            "agents": catalog.agents(),
        }});
        let hub = Arc::clone(self);
        tokio::spawn(async move {
            if !client.send(&hello).await {
                return;
            }
            let mut sent = start;
            // Replay (and refill after lag) from the log.
            loop {
                let batch = hub.replay_after(sent).await;
                if batch.is_empty() {
                    break;
                }
                for stored in batch {
                    sent = stored.seq;
                    if !client.send(&hub.to_message(&stored)).await {
                        return;
                    }
                }
            }
            loop {
                match live.recv().await {
                    Ok(stored) if stored.seq <= sent => {}
                    Ok(stored) => {
                        if stored.seq > sent + 1 {
                            // A gap (should not happen): refill from the log in order.
                            for missed in hub.replay_after(sent).await.into_iter().take_while(|m| m.seq < stored.seq) {
                                if !client.send(&hub.to_message(&missed)).await {
                                    return;
                                }
                            }
                        }
                        sent = stored.seq;
                        if !client.send(&hub.to_message(&stored)).await {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => loop {
                        let batch = hub.replay_after(sent).await;
                        if batch.is_empty() {
                            break;
                        }
                        for stored in batch {
                            sent = stored.seq;
                            if !client.send(&hub.to_message(&stored)).await {
                                return;
                            }
                        }
                    },
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        Ok(json!({"type": "events_subscribed", "boot_id": self.boot_id, "last_seq": last_seq, "after_seq": start}))
    }
}

/// Opens `state.db` in the companion home, stores the hub in `ctx.event_hub` and spawns the
/// Herdr sync loop. A database that cannot be opened is logged; the stream methods then
/// answer `not_ready` with the reason in `runtime.log`.
pub async fn start(ctx: &Arc<crate::runtime::RuntimeContext>, herdr_socket: std::path::PathBuf) {
    let db_path = ctx.home.root().join("state.db");
    let boot_id = ctx.boot_id.clone();
    match off_worker(move || EventHub::open(&db_path, boot_id)).await {
        Ok(hub) => {
            let _ = ctx.event_hub.set(Arc::clone(&hub));
            tokio::spawn(crate::herdr::subscribe::run_sync(herdr_socket, hub, Arc::clone(&ctx.log)));
        }
        Err(e) => ctx.log.line(format_args!("event stream disabled: {e}")),
    }
}
