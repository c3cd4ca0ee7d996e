//! `herdr-continuity/1`: every wire type of docs/PROTOCOL.md, shared by the extension
//! (`ext-core`, `ext-shell`), the companion (host and runtime) and `herdr-standin`.
//!
//! serde only: no IO, no clock. The names ([`Method`], [`EventName`], [`ErrorCode`], …)
//! are closed enums whose `parse` refuses unknown strings; the messages ([`Request`],
//! [`Response`], [`Event`], the params of each [`Call`] and each [`MethodResult`]) are
//! plain serde structs; [`limits`] holds the documented id and input sizes. The examples in docs/PROTOCOL.md are this crate's round-trip tests
//! (`tests/doc_examples.rs`).
//!
//! Invariant: nothing here changes the bytes on the wire; every name's `as_str` is the
//! spelling PROTOCOL.md documents.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod fence;
pub mod handoff;
pub mod herdr;
pub mod journal;
pub mod limits;
mod messages;
mod names;
pub mod tools;
pub mod work_memory;

pub use messages::*;
pub use names::{
    BridgeDecision, BridgeState, ErrorCode, EventName, GuidanceKind, HerdrState, HostErrorCode, JudgeSource, JudgeVerdict, Method, ResultType,
    TaskState,
    TaskTrigger, UnknownName,
};
pub use journal::{ChainCandidate, JournalTurn, MatchReason, Resolution, TurnRole};
pub use tools::{LocalMethod, ToolName};

/// The integer protocol version both sides exchange in `hello`.
pub const PROTOCOL_VERSION: u64 = 1;

/// The `protocol` of the stream's `hello` event.
pub const EVENTS_PROTOCOL: &str = "herdr-continuity-events/1";

/// The Native Messaging host name registered with the browser.
pub const HOST_NAME: &str = "dev.herdr.continuity";

/// The only caller origin the host accepts (fixed by the manifest `key`).
pub const EXTENSION_ORIGIN: &str = "chrome-extension://gencedhnagpaccnkbgpcipafjlankiop/";

/// Longest line on the host ↔ runtime socket, newline excluded (1 MiB).
pub const MAX_LINE: usize = 1024 * 1024;

/// Longest request id (also [`limits::MAX_REQUEST_ID_CHARS`]).
pub const MAX_ID_LEN: usize = limits::MAX_REQUEST_ID_CHARS;
