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
pub mod marker;
mod messages;
mod names;
pub mod port;
pub mod tools;
pub mod work_memory;

pub use journal::{ChainCandidate, JournalTurn, MatchReason, Resolution, TurnRole};
pub use messages::*;
pub use names::{
    BridgeDecision, BridgeState, ErrorCode, EventName, GuidanceKind, HerdrState, HostErrorCode, JudgeSource, JudgeVerdict, Method,
    ResultType, TaskState, TaskTrigger, UnknownName,
};
pub use tools::{LocalMethod, ToolName};

/// The integer protocol version both sides exchange in `hello`. Bumped whenever a message
/// changes shape; a side that speaks another integer is refused at `hello`, naming the side
/// to update, instead of failing call by call.
pub const PROTOCOL_VERSION: u64 = 2;

/// What this runtime serves, by name, answered in `hello.capabilities`: every [`Method`]'s
/// wire name plus wire features that are not methods. Sorted, one name a line; a change
/// that adds a runtime method or a wire feature adds its name here. The extension refuses a
/// runtime that lacks a name it needs (`ext_core::companion_link::REQUIRED_CAPABILITIES`), so
/// a mixed install is named at `hello`. An answer without the field is a runtime older
/// than protocol 2.
pub const CAPABILITIES: &[&str] = &[
    "bridge.decide",
    "bridge.delivered",
    "bridge.prompt",
    "bridge.reply",
    "chats.report",
    "continuity.append",
    "continuity.list",
    "continuity.resolve",
    "continuity.resume",
    "continuity.resume.before",
    "continuity.search",
    "diagnostics.report",
    "events.subscribe",
    "goal.evidence",
    "goal.set",
    "hello",
    "hello.capabilities",
    "herdr.agents",
    "herdr.pane_read",
    "herdr.panes",
    "herdr.status",
    "herdr.workspaces",
    "herdr_mcp.browser_handoff.prepare",
    "herdr_mcp.browser_handoff.prepare.facts",
    "inbox.ack",
    "inbox.counts",
    "inbox.pending",
    "judge.turn_end",
    "ping",
    "profiles.get",
    "retention.get",
    "retention.set",
    "task.dispatch",
    "task.list",
    "tools.audit",
    "tools.call",
    "tools.list",
];

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

#[cfg(test)]
mod capability_tests {
    use super::*;

    #[test]
    fn capabilities_are_sorted_unique_and_name_every_method() {
        assert!(CAPABILITIES.windows(2).all(|pair| pair[0] < pair[1]), "CAPABILITIES must stay sorted and unique");
        for method in Method::ALL {
            assert!(CAPABILITIES.contains(&method.as_str()), "CAPABILITIES lacks the method {method}");
        }
        assert!(CAPABILITIES.contains(&"hello.capabilities"));
    }
}
