//! The newest output tail of each pane (`agent_output`), kept in memory only (issue 7;
//! SPEC P4, P9).
//!
//! Pane output is *state*, not history: only the newest tail of a pane means anything.
//! Storing every tail in the durable event log (as before) consumed a `seq` per output,
//! filled the retention window (settles were evicted) and made a reconnect replay
//! megabytes. So a tail is never written to `state.db` and has no `seq`; it is sent live
//! to subscribers, and every subscription gets each pane's newest tail once, right after
//! its replay.
//!
//! Invariants:
//! - At most one tail per pane, the newest; a pane that leaves the catalog loses its tail.
//! - `output_rev` strictly increases with every recorded tail within one runtime start
//!   (it restarts with a new `boot_id`); a subscriber never sends a pane's tail whose rev
//!   is not above the last one it sent for that pane ([`SentOutputs`]), so an older tail
//!   never follows a newer one and the after-replay snapshot and live tails never repeat.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{json, Map, Value};

/// One pane's newest output.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputTail {
    /// The pane.
    pub pane_id: String,
    /// Order of this tail among all tails of this runtime start.
    pub rev: u64,
    /// Unix ms when it was read.
    pub at: i64,
    /// Payload: `pane_id`, `workspace_id`, `agent`, `tail`.
    pub data: Map<String, Value>,
}

impl OutputTail {
    /// The wire form (`agent_output`, no `seq`) for a subscriber of runtime `boot_id`.
    pub fn to_message(&self, boot_id: &str) -> Value {
        let mut data = self.data.clone();
        data.insert("boot_id".to_owned(), json!(boot_id));
        data.insert("at".to_owned(), json!(self.at));
        data.insert("stale".to_owned(), json!(false));
        data.insert("output_rev".to_owned(), json!(self.rev));
        json!({"event": "agent_output", "data": data})
    }
}

/// The newest tail per pane.
#[derive(Debug, Default)]
pub struct LatestOutputs {
    /// The rev of the last recorded tail (0 = none yet).
    last_rev: u64,
    /// Newest tail by pane id.
    by_pane: BTreeMap<String, Arc<OutputTail>>,
}

impl LatestOutputs {
    /// Records `pane_id`'s newest tail (replacing the previous one) and returns it.
    pub fn record(&mut self, pane_id: &str, at: i64, data: Map<String, Value>) -> Arc<OutputTail> {
        self.last_rev += 1;
        let tail = Arc::new(OutputTail { pane_id: pane_id.to_owned(), rev: self.last_rev, at, data });
        self.by_pane.insert(pane_id.to_owned(), Arc::clone(&tail));
        tail
    }

    /// Forgets the tails of panes for which `keep` is false (panes that are gone).
    pub fn retain_panes(&mut self, keep: impl Fn(&str) -> bool) {
        self.by_pane.retain(|pane, _| keep(pane));
    }

    /// Every pane's newest tail, by pane id.
    pub fn snapshot(&self) -> Vec<Arc<OutputTail>> {
        self.by_pane.values().cloned().collect()
    }
}

/// The revs one subscriber already sent, per pane.
#[derive(Debug, Default)]
pub struct SentOutputs {
    /// Last sent rev by pane id.
    sent: HashMap<String, u64>,
}

impl SentOutputs {
    /// True (and remembered) when `tail` is newer than what was sent for its pane.
    pub fn take_if_new(&mut self, tail: &OutputTail) -> bool {
        let last = self.sent.entry(tail.pane_id.clone()).or_insert(0);
        if tail.rev <= *last {
            return false;
        }
        *last = tail.rev;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(tail: &str) -> Map<String, Value> {
        match json!({"pane_id": "p", "tail": tail}) {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn only_the_newest_tail_per_pane_is_kept_and_sent_once() {
        let mut latest = LatestOutputs::default();
        let old = latest.record("w1:p1", 1, data("a"));
        let other = latest.record("w1:p2", 2, data("b"));
        let new = latest.record("w1:p1", 3, data("c"));
        assert_eq!(latest.snapshot(), [Arc::clone(&new), Arc::clone(&other)]);
        let mut sent = SentOutputs::default();
        assert!(sent.take_if_new(&new));
        assert!(!sent.take_if_new(&old), "an older tail never follows a newer one");
        assert!(!sent.take_if_new(&new), "a tail is sent once");
        assert!(sent.take_if_new(&other));
        latest.retain_panes(|pane| pane != "w1:p2");
        assert_eq!(latest.snapshot(), [new]);
    }
}
