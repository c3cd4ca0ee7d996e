//! The extension pages' companion calls: the one companion client is the worker's.
//!
//! Purpose: the side panel (live Herdr tree, tools' audit log) and the options page (storage
//! limits) read the companion through the worker's native port instead of opening their own
//! (issue 28). A `companion_call {id, method, params}` on a `panel` port is checked by
//! [`super::commands::companion_call`], posted on the native port under a wire id of its
//! own ([`PAGE_CALL_ID_PREFIX`]) and answered to the asking port as `companion_answer {id,
//! result}` (a `herdr.*` result only in its shape and within the caps, [`super::relay`]) or `companion_answer {id, error: {code, detail}}` ([`CallFailure`]; a
//! `not_connected` one also carries the HUD's companion line, `status`, which says why). A
//! watching page (`companion_watch`) is sent `companion_state {connected, status}` (a side
//! panel also `stream_events_dropped`) whenever one changes, and a watching side panel the Herdr
//! stream's events the live tree draws ([`WATCHED_EVENTS`]), each only in its shape and
//! within the caps ([`super::relay`]); one refused is counted ([`StreamDrops`]), and the
//! count is warned and sent at most once per [`STREAM_DROP_REPORT_MS`].
//!
//! Invariants:
//! - Every accepted call is answered exactly once: by the companion, `not_connected` when
//!   the connection is lost, or `timed_out` at its deadline; a refused one at once, with
//!   the reason (one without a usable id, which cannot be answered, is dropped with a
//!   warning). A late answer (after a timeout) is dropped.
//! - A call's answer goes to the port that asked, under the id it asked with; a closed
//!   port's calls are forgotten with it (their answers dropped), so no entry outlives its
//!   port, its answer or its deadline.
//! - A port has at most [`MAX_COMPANION_CALLS_PER_PORT`] calls waiting.
//! - A call waits [`COMPANION_CALL_TIMEOUT_MS`], `retention.set` [`RETENTION_SET_TIMEOUT_MS`]
//!   (longer than the runtime's 30 s request bound: its limits may be stored meanwhile).
//!
//! Driver contract: part of [`Worker::handle`]; the shell feeds
//! [`super::WorkerInput::PageCallAnswered`] for a native answer whose id has
//! [`PAGE_CALL_ID_PREFIX`], and [`super::WorkerInput::StreamEvent`] for a stream event while
//! [`Worker::watches_stream`]. Outputs are `PostNative` (the call) and `Post`s.

use continuity_protocol::{EventName, Method};
use serde_json::Value;

use super::commands::{companion_call, CallFailure, ExtensionPage, Sender};
use super::{PortId, Worker, WorkerOutput};
use crate::continuity::CallError;
use crate::hud::StatusLine;
use crate::json_object;
use crate::json_read::WriteJson;
use crate::limits::{COMPANION_CALL_TIMEOUT_MS, MAX_COMPANION_CALLS_PER_PORT, RETENTION_SET_TIMEOUT_MS};
use crate::Millis;

/// The wire id prefix of the pages' calls (continuity's are `c-`, the link's `hello-` /
/// `ping-`).
pub const PAGE_CALL_ID_PREFIX: &str = "p-";

/// The stream events a watching side panel is sent: what the live tree draws.
pub const WATCHED_EVENTS: [EventName; 8] = [
    EventName::Hello,
    EventName::WorkspaceUpsert,
    EventName::WorkspaceRemoved,
    EventName::PaneUpsert,
    EventName::PaneRemoved,
    EventName::AgentWorking,
    EventName::AgentSettled,
    EventName::AgentOutput,
];

/// How often, at most, dropped stream events are warned and their count sent.
pub const STREAM_DROP_REPORT_MS: Millis = 10_000;

/// The stream events not relayed to a watching side panel: counted; warned (with the
/// count and the last reason) and sent to the watchers at most once per
/// [`STREAM_DROP_REPORT_MS`], the drops of an interval that were not said when it ends.
#[derive(Debug, Default)]
pub(super) struct StreamDrops {
    /// All so far.
    count: u64,
    /// The count the watchers were last sent.
    sent: u64,
    /// When the last report went out.
    said_at: Option<Millis>,
    /// The newest drop not reported yet: why.
    unsaid: Option<String>,
}

/// A page's call waiting for the companion.
#[derive(Debug, Clone)]
pub(super) struct PageCall {
    /// The asking port.
    port: PortId,
    /// The page's request id.
    id: String,
    /// The method asked (its answer is shaped by it, its deadline set by it).
    method: Method,
    /// When it is answered `timed_out`.
    deadline: Millis,
}

/// How long a page's call waits for the companion: `retention.set` longer than the
/// runtime's own request bound (it stores the limits, then may reclaim a first batch), every
/// other (small reads) [`COMPANION_CALL_TIMEOUT_MS`].
fn call_timeout_ms(method: Method) -> Millis {
    match method {
        Method::RetentionSet => RETENTION_SET_TIMEOUT_MS,
        _ => COMPANION_CALL_TIMEOUT_MS,
    }
}

/// `companion_answer {id, error: {code, detail}}`.
fn failure(id: &str, code: CallFailure, detail: &str) -> Value {
    json_object!("type": "companion_answer", "id": id, "error": json_object!("code": code.as_str(), "detail": detail))
}

/// `companion_answer {id, error: {code: "not_connected", detail: "", status}}`: with the HUD's
/// companion line, which says why (connecting, unreachable, a version mismatch …).
fn not_connected(id: &str, status: &StatusLine) -> Value {
    let error = json_object!("code": CallFailure::NotConnected.as_str(), "detail": "", "status": status.write_json());
    json_object!("type": "companion_answer", "id": id, "error": error)
}

impl Worker {
    /// A `companion_call` from `port`: refused with the reason, or posted on the native port.
    pub(super) fn page_call(&mut self, port: PortId, sender: Sender, page: ExtensionPage, id: String, method: &str, params: Option<Value>) {
        let method = match companion_call(&id, method, params.as_ref(), sender, page) {
            Ok(method) => method,
            Err((code, detail)) => {
                // An id that cannot be named back is refused by a warning only.
                if code == CallFailure::BadRequest && detail == "id" {
                    return self.warn("herdr-continuity: a companion_call without a usable id was dropped".to_owned());
                }
                return self.post_page(port, failure(&id, code, &detail));
            }
        };
        if !self.link_connected {
            let status = self.link.hud().companion;
            return self.post_page(port, not_connected(&id, &status));
        }
        let waiting = self.page_calls.values().filter(|call| call.port == port).count();
        if waiting >= MAX_COMPANION_CALLS_PER_PORT {
            return self.post_page(port, failure(&id, CallFailure::TooMany, ""));
        }
        if self.page_calls.values().any(|call| call.port == port && call.id == id) {
            return self.post_page(port, failure(&id, CallFailure::BadRequest, "id"));
        }
        self.next_page_call = self.next_page_call.wrapping_add(1);
        let wire_id = format!("{PAGE_CALL_ID_PREFIX}{}", self.next_page_call);
        let params = params.filter(|p| !p.is_null()).unwrap_or_else(|| json_object!());
        let message = json_object!("id": wire_id.as_str(), "method": Method::as_str(method), "params": params);
        let deadline = self.now.saturating_add(call_timeout_ms(method));
        self.page_calls.insert(wire_id, PageCall { port, id, method, deadline });
        self.outputs.push_back(WorkerOutput::PostNative { message });
    }

    /// The companion answered the call `wire_id`: to its port, when it still waits, in its
    /// shape and within the caps ([`super::relay::answer`]).
    pub(super) fn page_call_answered(&mut self, wire_id: &str, result: Result<Value, CallError>) {
        let Some(call) = self.page_calls.remove(wire_id) else { return };
        // The relay's limits are end to end: an answer goes in its shape and within the caps.
        let message = match result.map(|result| super::relay::answer(call.method, &result)) {
            Ok(Ok(result)) => json_object!("type": "companion_answer", "id": call.id.as_str(), "result": result),
            Ok(Err(why)) => {
                let detail = crate::text::concat(&["the answer is not in its shape: ", why.as_str()]);
                failure(&call.id, CallFailure::Companion, &detail)
            }
            Err(error) => {
                let detail = crate::text::concat(&[error.code.as_str(), ": ", error.message.as_str()]);
                failure(&call.id, CallFailure::Companion, &detail)
            }
        };
        self.post_page(call.port, message);
    }

    /// Posts `companion_state {connected, status}` to every watching port that was not sent
    /// this state yet (after `companion_watch`, a connection edge, a new HUD companion line).
    pub(super) fn post_companion_state(&mut self) {
        if !self.pages.iter().any(|page| page.watch) {
            return;
        }
        let state = json_object!("type": "companion_state", "connected": self.link_connected, "status": self.link.hud().companion);
        // The side panel (the stream's watcher) also hears how many events were not relayed.
        let mut panel = state.clone();
        if let Some(fields) = panel.as_object_mut() {
            fields.insert("stream_events_dropped".to_owned(), Value::from(self.stream_drops.sent));
        }
        let mut posts = Vec::new();
        for page in self.pages.iter_mut().filter(|page| page.watch) {
            let message = if page.extension == ExtensionPage::SidePanel { &panel } else { &state };
            if page.state_sent.as_ref() != Some(message) {
                page.state_sent = Some(message.clone());
                posts.push((page.port, message.clone()));
            }
        }
        for (port, message) in posts {
            self.post_page(port, message);
        }
    }

    /// Whether a side panel watches the stream (the shell then feeds its events).
    pub fn watches_stream(&self) -> bool {
        self.pages.iter().any(|page| page.watch && page.extension == ExtensionPage::SidePanel)
    }

    /// How many stream events were not relayed to a watching side panel (sent to it, and
    /// warned, at most once per [`STREAM_DROP_REPORT_MS`]).
    pub fn stream_events_dropped(&self) -> u64 {
        self.stream_drops.count
    }

    /// How many pages' calls wait for the companion (tests: nothing leaks).
    pub fn page_calls_waiting(&self) -> usize {
        self.page_calls.len()
    }

    /// A stream event: to every watching side panel, when the live tree draws it, as
    /// [`super::relay::relayed`] checks and bounds it; one it refuses is counted and warned.
    pub(super) fn stream_event(&mut self, name: EventName, data: Value) {
        if !WATCHED_EVENTS.contains(&name) {
            return;
        }
        let data = match super::relay::relayed(name, &data) {
            Ok(Some(data)) => data,
            Ok(None) => return,
            Err(why) => {
                self.stream_drops.count = self.stream_drops.count.saturating_add(1);
                self.stream_drops.unsaid = Some(crate::text::concat(&["a `", name.as_str(), "` stream event: ", why.as_str()]));
                return self.stream_drops_due();
            }
        };
        let ports: Vec<PortId> =
            self.pages.iter().filter(|page| page.watch && page.extension == ExtensionPage::SidePanel).map(|page| page.port).collect();
        let message = json_object!("type": "companion_event", "event": name.as_str(), "data": data);
        for port in ports {
            self.post_page(port, message.clone());
        }
    }

    /// The companion connection was lost: every waiting call is answered `not_connected`
    /// (its answer cannot come any more).
    pub(super) fn page_calls_link_lost(&mut self) {
        let status = self.link.hud().companion;
        let calls: Vec<PageCall> = self.page_calls.values().cloned().collect();
        self.page_calls.clear();
        for call in calls {
            self.post_page(call.port, not_connected(&call.id, &status));
        }
    }

    /// The drops not said yet, once their interval allows: warned with the count, and the
    /// count sent to the watchers.
    fn stream_drops_due(&mut self) {
        let drops = &mut self.stream_drops;
        if drops.said_at.is_some_and(|at| self.now < at.saturating_add(STREAM_DROP_REPORT_MS)) {
            return;
        }
        let Some(why) = drops.unsaid.take() else { return };
        drops.said_at = Some(self.now);
        drops.sent = drops.count;
        let count = drops.count;
        self.warn(format!("herdr-continuity: stream events were not relayed to the side panel ({count} dropped so far); the last, {why}"));
        self.post_companion_state();
    }

    /// Calls past their deadline are answered `timed_out`; dropped stream events not said
    /// yet are, once their interval ended.
    pub(super) fn page_calls_due(&mut self) {
        self.stream_drops_due();
        let now = self.now;
        let due: Vec<(String, PageCall)> =
            self.page_calls.iter().filter(|(_, call)| call.deadline <= now).map(|(wire, call)| (wire.clone(), call.clone())).collect();
        for (wire_id, call) in due {
            self.page_calls.remove(&wire_id);
            let seconds = (call_timeout_ms(call.method) / 1_000).to_string();
            self.post_page(call.port, failure(&call.id, CallFailure::TimedOut, &seconds));
        }
    }

    /// The earliest deadline of a waiting call, or of the dropped stream events' report.
    pub(super) fn page_calls_deadline(&self) -> Option<Millis> {
        let drops = &self.stream_drops;
        let report = drops.said_at.filter(|_| drops.unsaid.is_some()).map(|at| at.saturating_add(STREAM_DROP_REPORT_MS));
        self.page_calls.values().map(|call| call.deadline).chain(report).min()
    }

    /// A port closed: its calls are forgotten (a later answer is dropped).
    pub(super) fn page_calls_port_closed(&mut self, port: PortId) {
        self.page_calls.retain(|_, call| call.port != port);
    }

    fn post_page(&mut self, port: PortId, message: Value) {
        self.outputs.push_back(WorkerOutput::Post { port, message });
    }
}
