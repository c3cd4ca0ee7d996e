//! Watches the Herdr connection and publishes its state (docs/PROTOCOL.md `herdr`).
//!
//! Invariant: the `watch` channel only changes when the published [`HerdrStatus`]
//! changes, so every change is one `herdr_state` event, never a repeat.

use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::watch;

use super::client::{ping, HerdrError, Pong};

/// Coarse connection state, as the HUD shows it (the wire's `herdr.state`).
pub use continuity_protocol::HerdrState;

/// The runtime's view of Herdr, exactly as sent on the wire (`herdr`).
pub use continuity_protocol::HerdrConnection as HerdrStatus;

/// The status a `ping` outcome implies.
pub fn status_from_ping(socket: &std::path::Path, outcome: &Result<Pong, HerdrError>) -> HerdrStatus {
    let socket = socket.display().to_string();
    let (state, protocol, version) = match outcome {
        Ok(pong) => (HerdrState::Connected, Some(pong.protocol), Some(pong.version.clone())),
        Err(HerdrError::NotRunning { .. }) => (HerdrState::NotRunning, None, None),
        Err(HerdrError::PermissionDenied { .. }) => (HerdrState::PermissionDenied, None, None),
        Err(HerdrError::UnsupportedProtocol { version, protocol }) => {
            (HerdrState::UnsupportedProtocol, Some(*protocol), Some(version.clone()))
        }
        Err(_) => (HerdrState::Error, None, None),
    };
    HerdrStatus { state, protocol, version, socket, detail: outcome.as_ref().err().map(|e| e.to_string()) }
}

/// Probes once, then keeps probing every `interval` in a background task; returns the
/// receiving side of the published status.
pub async fn spawn_monitor(socket: PathBuf, interval: Duration, timeout: Duration) -> watch::Receiver<HerdrStatus> {
    let first = status_from_ping(&socket, &ping(&socket, timeout).await);
    let (sender, receiver) = watch::channel(first);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(interval).await;
            let status = status_from_ping(&socket, &ping(&socket, timeout).await);
            sender.send_if_modified(|current| {
                if *current == status {
                    return false;
                }
                *current = status;
                true
            });
            if sender.is_closed() {
                return;
            }
        }
    });
    receiver
}
