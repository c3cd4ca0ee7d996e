//! Readers of the composition's persisted parts ([`ScopeStatus`] and what it holds, the
//! inbox items and counts, [`PaneOutput`]); `crate::json_read` explains the shapes. serde's
//! derived `Serialize` writes them.

use serde_json::Value;

use super::*;
use crate::json_read::{Fields, ReadError, ReadJson};

impl ReadJson for InboxTask {
    fn read_json(value: &Value) -> Result<Self, ReadError> {
        let f = Fields::of(value)?;
        Ok(InboxTask {
            task_id: f.get("task_id")?,
            state: f.get("state")?,
            pane_id: f.get("pane_id")?,
            prompt_preview: f.get("prompt_preview")?,
            result: f.get("result")?,
        })
    }
}

impl ReadJson for TaskCounts {
    fn read_json(value: &Value) -> Result<Self, ReadError> {
        let f = Fields::of(value)?;
        Ok(TaskCounts { running: f.get("running")?, unacked: f.get("unacked")?, acked: f.get("acked")? })
    }
}

impl ReadJson for LegacyInFlight {
    fn read_json(value: &Value) -> Result<Self, ReadError> {
        let f = Fields::of(value)?;
        Ok(LegacyInFlight {
            id: f.get("id")?,
            tab: f.get("tab")?,
            kind: f.get("kind")?,
            task_ids: f.get("task_ids")?,
            at: f.get("at")?,
        })
    }
}

impl ReadJson for LastWake {
    fn read_json(value: &Value) -> Result<Self, ReadError> {
        let f = Fields::of(value)?;
        Ok(LastWake { at: f.get("at")?, kind: f.get("kind")?, id: f.get("id")? })
    }
}

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

impl ReadJson for PaneOutput {
    fn read_json(value: &Value) -> Result<Self, ReadError> {
        let f = Fields::of(value)?;
        Ok(PaneOutput {
            workspace_id: f.get("workspace_id")?,
            agent: f.get("agent")?,
            tail: f.get("tail")?,
            baseline: f.get("baseline")?,
            seq: f.or_default("seq")?,
        })
    }
}
