//! The runtime's catalog of Herdr workspaces, panes and agents, and the stream events
//! its changes produce (issue 3, SPEC P1/P2/P8/P9, B1).
//!
//! Sans-IO: facts come in as `session.snapshot` results ([`Catalog::apply_snapshot`]) and
//! `pane.agent_status_changed` data ([`Catalog::apply_status`]); out come
//! [`StreamEvent`]s for the event log. No sockets, no clock.
//!
//! Invariants:
//! - `agent_settled` is produced only on a `working → idle | done | blocked` transition of
//!   one pane, so replaying the same facts (a duplicate status event, a resync that finds
//!   nothing new) produces nothing (P8).
//! - `agent_working` is produced only when a pane enters `working`.
//! - Because a resync compares the new snapshot with the last known state, a transition
//!   that happened while disconnected is produced exactly once, and none is invented (P9).
//! - Labels are display only; ids are identity (B1): a relabel is a `*_upsert`.

use continuity_protocol::EventName;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use thiserror::Error;

/// A stream event before it is stored (no `seq` yet).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamEvent {
    /// Event name, e.g. `agent_settled`.
    pub event: EventName,
    /// Payload.
    pub data: Value,
}

/// A snapshot that does not have the documented shape.
#[derive(Debug, Error)]
#[error("Herdr's session.snapshot has an unexpected shape ({0}); update the companion to match this Herdr")]
pub struct SnapshotShapeError(String);

/// What the catalog knows about a workspace: its wire shape (`herdr.workspaces`).
pub use continuity_protocol::Workspace as WorkspaceEntry;

/// What the catalog knows about a pane: its wire shape (`herdr.panes`).
pub use continuity_protocol::Pane as PaneEntry;

/// The catalog.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Catalog {
    /// Workspaces by id.
    pub workspaces: BTreeMap<String, WorkspaceEntry>,
    /// Panes by id.
    pub panes: BTreeMap<String, PaneEntry>,
}

/// The stream event a status change produces, if any.
fn transition_event(previous: &str, next: &str) -> Option<EventName> {
    match (previous, next) {
        (p, n) if p == n => None,
        (_, "working") => Some(EventName::AgentWorking),
        ("working", "idle" | "done" | "blocked") => Some(EventName::AgentSettled),
        _ => None,
    }
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

impl Catalog {
    /// Pane ids, sorted.
    pub fn pane_ids(&self) -> Vec<String> {
        self.panes.keys().cloned().collect()
    }

    /// Ids of panes whose agent is working.
    pub fn working_panes(&self) -> Vec<String> {
        self.panes.values().filter(|p| p.agent_status == "working").map(|p| p.pane_id.clone()).collect()
    }

    /// The `agents` list for `hello` and `herdr.agents`.
    pub fn agents(&self) -> Vec<Value> {
        self.panes.values().filter(|p| p.agent.is_some()).map(|p| self.agent_payload(p, None)).collect()
    }

    /// The `workspaces` list for `hello` and `herdr.workspaces`.
    pub fn workspace_list(&self) -> Vec<Value> {
        let mut list: Vec<&WorkspaceEntry> = self.workspaces.values().collect();
        list.sort_by_key(|w| w.number);
        list.into_iter().map(|w| json!(w)).collect()
    }

    fn agent_payload(&self, pane: &PaneEntry, previous: Option<&str>) -> Value {
        let label = self.workspaces.get(&pane.workspace_id).map(|w| w.label.clone());
        let mut payload = json!({
            "workspace_id": pane.workspace_id,
            "workspace_label": label,
            "pane_id": pane.pane_id,
            "agent": pane.agent,
            "status": pane.agent_status,
            "cwd": pane.cwd,
        });
        if let (Some(previous), Value::Object(map)) = (previous, &mut payload) {
            map.insert("previous_status".to_owned(), json!(previous));
        }
        payload
    }

    /// Applies one `pane.agent_status_changed` event's data.
    pub fn apply_status(&mut self, data: &Value) -> Vec<StreamEvent> {
        let (Some(pane_id), Some(status)) = (text(data, "pane_id"), text(data, "agent_status")) else {
            return Vec::new();
        };
        let Some(pane) = self.panes.get_mut(&pane_id) else {
            // Not in the catalog yet: the resync after its `pane_created` will add it.
            return Vec::new();
        };
        let previous = std::mem::replace(&mut pane.agent_status, status.clone());
        if let Some(agent) = text(data, "agent") {
            pane.agent = Some(agent);
        }
        let pane = pane.clone();
        transition_event(&previous, &status)
            .map(|event| StreamEvent { event, data: self.agent_payload(&pane, Some(&previous)) })
            .into_iter()
            .collect()
    }

    /// Replaces the catalog with a `session.snapshot` result and returns what changed:
    /// workspace / pane upserts and removals, then agent transitions.
    pub fn apply_snapshot(&mut self, result: &Value) -> Result<Vec<StreamEvent>, SnapshotShapeError> {
        let snapshot = result.get("snapshot").unwrap_or(result);
        let list = |key: &str| {
            snapshot.get(key).and_then(Value::as_array).cloned().ok_or_else(|| SnapshotShapeError(format!("missing array `{key}`")))
        };
        let mut workspaces = BTreeMap::new();
        for w in list("workspaces")? {
            let id = text(&w, "workspace_id").ok_or_else(|| SnapshotShapeError("workspace without workspace_id".into()))?;
            workspaces.insert(
                id.clone(),
                WorkspaceEntry {
                    workspace_id: id,
                    label: text(&w, "label").unwrap_or_default(),
                    number: w.get("number").and_then(Value::as_u64).unwrap_or(0),
                    agent_status: text(&w, "agent_status").unwrap_or_else(|| "unknown".into()),
                },
            );
        }
        let mut panes = BTreeMap::new();
        for p in list("panes")? {
            let id = text(&p, "pane_id").ok_or_else(|| SnapshotShapeError("pane without pane_id".into()))?;
            panes.insert(
                id.clone(),
                PaneEntry {
                    pane_id: id,
                    workspace_id: text(&p, "workspace_id").unwrap_or_default(),
                    tab_id: text(&p, "tab_id").unwrap_or_default(),
                    agent: text(&p, "agent"),
                    agent_status: text(&p, "agent_status").unwrap_or_else(|| "unknown".into()),
                    cwd: text(&p, "cwd").unwrap_or_default(),
                },
            );
        }
        let mut events = Vec::new();
        for (id, w) in &workspaces {
            let known = self.workspaces.get(id);
            if known.map(|k| (&k.label, k.number)) != Some((&w.label, w.number)) {
                events.push(StreamEvent { event: EventName::WorkspaceUpsert, data: json!(w) });
            }
        }
        for (id, p) in &panes {
            let known = self.panes.get(id);
            let same =
                known.is_some_and(|k| (&k.workspace_id, &k.tab_id, &k.agent, &k.cwd) == (&p.workspace_id, &p.tab_id, &p.agent, &p.cwd));
            if !same {
                events.push(StreamEvent { event: EventName::PaneUpsert, data: json!(p) });
            }
        }
        for (id, p) in &self.panes {
            if !panes.contains_key(id) {
                events.push(StreamEvent { event: EventName::PaneRemoved, data: json!({"pane_id": id, "workspace_id": p.workspace_id}) });
            }
        }
        for id in self.workspaces.keys() {
            if !workspaces.contains_key(id) {
                events.push(StreamEvent { event: EventName::WorkspaceRemoved, data: json!({"workspace_id": id}) });
            }
        }
        let previous_panes = std::mem::take(&mut self.panes);
        self.workspaces = workspaces;
        self.panes = panes;
        for (id, pane) in &self.panes {
            let previous = previous_panes.get(id).map_or("unknown", |p| p.agent_status.as_str());
            if let Some(event) = transition_event(previous, &pane.agent_status) {
                events.push(StreamEvent { event, data: self.agent_payload(pane, Some(previous)) });
            }
        }
        Ok(events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{expect, Expect};

    fn snapshot(panes: &[(&str, &str, Option<&str>, &str)]) -> Value {
        let panes: Vec<Value> = panes
            .iter()
            .map(|(id, tab, agent, status)| {
                let mut p = json!({"pane_id": id, "workspace_id": "w1", "tab_id": tab, "cwd": "/src", "agent_status": status});
                if let Some(agent) = agent {
                    p["agent"] = json!(agent);
                }
                p
            })
            .collect();
        json!({"type": "session_snapshot", "snapshot": {
            "workspaces": [{"workspace_id": "w1", "number": 1, "label": "alpha", "agent_status": "unknown"}],
            "panes": panes}})
    }

    fn trace(events: &[StreamEvent]) -> String {
        events
            .iter()
            .map(|e| {
                let d = &e.data;
                match e.event {
                    EventName::AgentWorking | EventName::AgentSettled => format!(
                        "{} {} {} -> {}\n",
                        e.event,
                        d["pane_id"].as_str().unwrap_or(""),
                        d["previous_status"].as_str().unwrap_or(""),
                        d["status"].as_str().unwrap_or("")
                    ),
                    _ => format!("{} {}\n", e.event, d.get("pane_id").or(d.get("workspace_id")).and_then(Value::as_str).unwrap_or("")),
                }
            })
            .collect()
    }

    fn check(events: &[StreamEvent], expected: Expect) {
        expected.assert_eq(&trace(events));
    }

    #[test]
    fn settle_is_produced_once_per_working_to_settled_transition_p8() {
        let mut catalog = Catalog::default();
        let first = catalog
            .apply_snapshot(&snapshot(&[("w1:p1", "w1:t1", Some("pi"), "working"), ("w1:p2", "w1:t1", None, "unknown")]))
            .expect("shape");
        check(
            &first,
            expect![[r#"
            workspace_upsert w1
            pane_upsert w1:p1
            pane_upsert w1:p2
            agent_working w1:p1 unknown -> working
        "#]],
        );
        let status = json!({"agent": "pi", "agent_status": "idle", "pane_id": "w1:p1", "workspace_id": "w1"});
        check(
            &catalog.apply_status(&status),
            expect![[r#"
            agent_settled w1:p1 working -> idle
        "#]],
        );
        // A duplicate status event and a resync that finds the same facts produce nothing.
        check(&catalog.apply_status(&status), expect![[""]]);
        let again = catalog
            .apply_snapshot(&snapshot(&[("w1:p1", "w1:t1", Some("pi"), "idle"), ("w1:p2", "w1:t1", None, "unknown")]))
            .expect("shape");
        check(&again, expect![[""]]);
    }

    #[test]
    fn a_resync_after_a_disconnect_reports_what_changed_meanwhile_exactly_once_p9() {
        let mut catalog = Catalog::default();
        catalog
            .apply_snapshot(&snapshot(&[
                ("w1:p1", "w1:t1", Some("pi"), "working"),
                ("w1:p2", "w1:t2", Some("codex"), "working"),
                ("w1:p3", "w1:t1", Some("claude"), "idle"),
            ]))
            .expect("shape");
        let after = catalog
            .apply_snapshot(&snapshot(&[
                ("w1:p1", "w1:t1", Some("pi"), "blocked"),
                ("w1:p2", "w1:t2", Some("codex"), "done"),
                ("w1:p4", "w1:t1", None, "unknown"),
            ]))
            .expect("shape");
        check(
            &after,
            expect![[r#"
            pane_upsert w1:p4
            pane_removed w1:p3
            agent_settled w1:p1 working -> blocked
            agent_settled w1:p2 working -> done
        "#]],
        );
    }

    #[test]
    fn statuses_other_than_working_to_settled_do_not_settle() {
        for (from, to, expected) in [
            ("idle", "done", None),
            ("blocked", "idle", None),
            ("unknown", "idle", None),
            ("idle", "working", Some(EventName::AgentWorking)),
            ("working", "unknown", None),
            ("working", "done", Some(EventName::AgentSettled)),
        ] {
            assert_eq!(transition_event(from, to), expected, "{from} -> {to}");
        }
    }
}
