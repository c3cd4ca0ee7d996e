//! `herdr-companion`: the native side of herdr-continuity (SPEC N).
//!
//! One binary, four roles:
//! - [`host`]: the Chrome Native Messaging stdio host, a thin frame ↔ line relay;
//! - [`runtime`]: the long-lived daemon that owns the Unix socket and the Herdr connection;
//! - [`install`]: writes the browser's host manifest;
//! - [`doctor`]: checks the whole chain and says how to fix it.
//!
//! Architecture invariants: the host holds no state and makes no product decisions; only
//! the runtime talks to Herdr; nothing but a same-uid peer ever reaches the dispatcher.

pub mod db;
pub mod doctor;
pub mod framing;
pub mod herdr;
pub mod host;
pub mod inbox;
pub mod install;
pub mod paths;
pub mod protocol;
pub mod runtime;
pub mod stream;
