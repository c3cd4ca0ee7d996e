//! Readers and writers of the composition's persisted parts ([`ScopeStatus`] and what it
//! holds, the inbox items and counts, [`PaneOutput`]); `crate::json_read` explains the
//! shapes. Release 0.1.0's delivery in flight is read, never written.

use serde_json::Value;

use super::*;
use crate::json_read::{json_struct, read_struct, Fields, Object, ReadError, ReadJson, WriteJson};

json_struct!(InboxTask { task_id, state, pane_id, prompt_preview, result });

json_struct!(TaskCounts { running, unacked, acked });

read_struct!(LegacyInFlight { id, tab, kind, task_ids, at });

json_struct!(LastWake { at, kind, id });

impl ReadJson for ScopeStatus {
    fn read_json(value: &Value) -> Result<Self, ReadError> {
        let f = Fields::of(value)?;
        Ok(ScopeStatus {
            scheduler: f.get("scheduler")?,
            wake_tasks: f.get("wake_tasks")?,
            // Release 0.1.0's delivery in flight (read, never written again).
            legacy_in_flight: f.or_default("in_flight")?,
            settle_awaiting_tasks: f.or_default("settle_awaiting_tasks")?,
            last_wake: f.get("last_wake")?,
            wake_count: f.get("wake_count")?,
            counts: f.get("counts")?,
            inbox_missing: f.get("inbox_missing")?,
            settled_once: f.get("settled_once")?,
            ack_due: f.or_default("ack_due")?,
            progress_count: f.or_default("progress_count")?,
            inbox_check_due: f.or_default("inbox_check_due")?,
        })
    }
}

impl WriteJson for ScopeStatus {
    fn write_json(&self) -> Value {
        // `legacy_in_flight` is never written (`#[serde(skip_serializing)]`).
        Object::default()
            .with("scheduler", &self.scheduler)
            .with("wake_tasks", &self.wake_tasks)
            .with("settle_awaiting_tasks", &self.settle_awaiting_tasks)
            .with("last_wake", &self.last_wake)
            .with("wake_count", &self.wake_count)
            .with("counts", &self.counts)
            .with("inbox_missing", &self.inbox_missing)
            .with("settled_once", &self.settled_once)
            .with("ack_due", &self.ack_due)
            .with("progress_count", &self.progress_count)
            .with("inbox_check_due", &self.inbox_check_due)
            .done()
    }
}

json_struct!(PaneOutput { workspace_id, agent, tail, baseline, seq: default });
