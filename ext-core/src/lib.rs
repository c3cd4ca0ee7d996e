//! Sans-IO state machines of herdr-continuity.
//!
//! Nothing in this crate touches the outside world: no clock (time comes in as
//! [`Millis`]), no IO, no browser or tokio types, no randomness. Each machine lives in
//! its own module with its driver contract documented on its type.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

/// Milliseconds on the shell's monotonic-enough clock (`Date.now()` in the browser).
pub type Millis = u64;

// The derived readers and writers (`json_read`'s `ReadJson`/`WriteJson` derives) name
// this crate `::ext_core`, inside it too.
extern crate self as ext_core;

// Machines of the walking skeleton (companion link, HUD view model) and of the
// continuity loop are declared below, one module per machine.
pub mod companion_link;
pub mod goal_supervisor;
pub mod handoff;
pub mod handoff_transfer;
pub mod health;
pub mod hud;
pub mod hud_pill;
pub mod inbox_checks;
pub mod json_read;
pub mod limits;

pub mod auto_gate;
pub mod binding;
pub mod check_herdr;
pub mod context_pressure;
pub mod continuity;
pub mod contracts;
pub mod delivery_ledger;
pub mod permission_card;
pub mod progress_push;
pub mod queue;
pub mod rate_limit;
pub mod recovery;
pub mod recovery_config;
pub mod request_pacer;
pub mod rollover;
pub mod scope;
pub mod semantic_auto;
pub mod settle_tracker;
pub mod sites;
pub mod snapshot;
pub mod stale_view;
pub mod text;
pub mod vec_map;
pub mod wake;
pub mod worker;
