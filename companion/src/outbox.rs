//! The runtime's two ways out to clients, as plain channels: one client's outbox
//! ([`ClientHandle`], for answers and a subscription's events) and the broadcast to every
//! client ([`Broadcast`], for `herdr_state` and `inbox_changed`). A leaf: services push
//! into them without knowing about connections, the router or the accept loop.

use std::future::Future;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;

use crate::protocol;

/// The sending side of one client connection.
///
/// Invariant: a connection has at most one event subscription; a newer one ends the older
/// ([`ClientHandle::replace_subscription`]), so an event is never sent twice on one connection.
#[derive(Debug, Clone)]
pub struct ClientHandle {
    /// Lines queued for this client's socket.
    outbox: mpsc::Sender<String>,
    /// The task that sends this connection's subscribed events, shared by every clone.
    subscription: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl ClientHandle {
    /// Wraps a client's outbox.
    pub fn new(outbox: mpsc::Sender<String>) -> Self {
        Self { outbox, subscription: Arc::default() }
    }

    /// Queues a message for this client; false once the client is gone.
    pub async fn send(&self, message: &Value) -> bool {
        self.outbox.send(protocol::to_line(message)).await.is_ok()
    }

    /// True once the client connection has closed.
    pub fn is_closed(&self) -> bool {
        self.outbox.is_closed()
    }

    /// Completes once the connection takes no more lines: it closed, or it is closing and
    /// only writes out what was queued. A task that waits for something to send (an event
    /// subscription) selects on this, so it never outlives its connection.
    pub async fn closed(&self) {
        self.outbox.closed().await;
    }

    /// Makes `feed` this connection's event subscription: spawned once the one before it,
    /// if any, has ended (aborted, and awaited, so nothing of it follows the new feed's
    /// first line). Two subscribes on one connection: the newer one wins.
    pub fn replace_subscription(&self, feed: impl Future<Output = ()> + Send + 'static) {
        let mut held = self.subscription.lock().unwrap_or_else(|p| p.into_inner());
        let older = held.take();
        *held = Some(tokio::spawn(async move {
            if let Some(older) = older {
                older.abort();
                let _ = older.await;
            }
            feed.await;
        }));
    }
}

/// Runtime-wide events, already serialized as lines, for every connected client.
#[derive(Debug, Clone)]
pub struct Broadcast {
    /// The fan-out; each connection holds a receiver.
    sender: broadcast::Sender<String>,
}

impl Broadcast {
    /// A broadcast that keeps up to `capacity` lines for slow clients (older ones are
    /// skipped for a client that lags behind).
    pub fn new(capacity: usize) -> Self {
        Self { sender: broadcast::channel(capacity).0 }
    }

    /// Sends an event to every connected client.
    pub fn send(&self, message: &Value) {
        // No receivers is fine: nobody is connected.
        let _ = self.sender.send(protocol::to_line(message));
    }

    /// A receiver of runtime-wide events (one per client).
    pub fn subscribe(&self) -> broadcast::Receiver<String> {
        self.sender.subscribe()
    }
}
