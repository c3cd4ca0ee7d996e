//! `herdr_since`: the Herdr events the runtime stored since a cursor — the same log
//! `events.subscribe` replays (`state.db`'s `events`, `crate::stream`), read as a page.
//!
//! Invariants:
//! - The cursor is a `seq` of this log: the page holds events with `seq > cursor`, oldest
//!   first, at most `limit`; `cursor` in the answer is where the next call starts, and
//!   `more` says whether events are waiting already.
//! - A cursor from another log (`log_id` changed: `state.db` reset) or beyond the log's
//!   end starts over at 0 and says `log_reset: true`, as the event stream does.
//! - With a workspace filter, only events whose `workspace_id` is that workspace are kept
//!   (the cursor still moves past the others).

use serde_json::{json, Value};

use crate::db::StoredEvent;

/// Default `limit`.
pub const SINCE_DEFAULT_LIMIT: u64 = 100;
/// Largest `limit`.
pub const SINCE_MAX_LIMIT: u64 = 500;

/// One page of events, shaped for a planner.
///
/// `events` are the log's events after the (possibly reset) cursor, at most `limit + 1`
/// of them (the extra one says `more`); `workspace` keeps only that workspace's events.
pub fn page(
    events: &[StoredEvent],
    boot_id: &str,
    log_id: &str,
    cursor: i64,
    log_reset: bool,
    limit: usize,
    workspace: Option<&str>,
) -> Value {
    let more = events.len() > limit;
    let taken = &events[..events.len().min(limit)];
    let next = taken.last().map_or(cursor, |e| e.seq);
    let kept: Vec<Value> = taken
        .iter()
        .filter(|e| workspace.is_none_or(|ws| e.data.get("workspace_id").and_then(Value::as_str) == Some(ws)))
        .map(|e| {
            json!({
                "seq": e.seq,
                "at": e.at,
                "event": e.event,
                "data": e.data,
                "stale": e.boot_id != boot_id,
            })
        })
        .collect();
    let mut result = json!({
        "log_id": log_id,
        "log_reset": log_reset,
        "events": kept,
        "count": kept.len(),
        "cursor": next,
        "more": more,
    });
    if log_reset {
        result["note"] = json!("the cursor was not of this event log (state.db was reset, or the cursor is beyond its end): the page starts at the log's beginning");
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: i64, ws: &str) -> StoredEvent {
        StoredEvent {
            seq,
            boot_id: "b".to_owned(),
            at: seq * 10,
            event: "agent_settled".to_owned(),
            data: json!({"pane_id": format!("{ws}:p1"), "workspace_id": ws}),
        }
    }

    #[test]
    fn a_page_moves_the_cursor_past_every_event_read_and_filters_by_workspace() {
        let events = [event(4, "w1"), event(5, "w2"), event(6, "w1")];
        let all = page(&events, "b", "log", 3, false, 2, None);
        assert_eq!((all["count"].as_u64(), all["cursor"].as_i64(), all["more"].as_bool()), (Some(2), Some(5), Some(true)));
        let w1 = page(&events, "b", "log", 3, false, 10, Some("w1"));
        assert_eq!((w1["count"].as_u64(), w1["cursor"].as_i64(), w1["more"].as_bool()), (Some(2), Some(6), Some(false)));
        let empty = page(&[], "b", "log", 9, false, 10, None);
        assert_eq!((empty["count"].as_u64(), empty["cursor"].as_i64()), (Some(0), Some(9)));
        assert_eq!(page(&events, "other", "log", 0, true, 10, None)["events"][0]["stale"], true);
    }
}
