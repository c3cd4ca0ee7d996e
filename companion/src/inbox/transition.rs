//! Which stream events end a dispatched task, and how (SPEC I2). Pure: no IO, no clock.
//!
//! A task is `running` from its dispatch until the first qualifying stream event of its
//! pane whose `seq` is above the task's `after_seq` (the event log's last `seq` when the
//! task was recorded, before the prompt was sent):
//! - `agent_settled` with status `idle` or `done` → `completed`; with `blocked` → `blocked`;
//! - `pane_removed` → `failed` (the pane was closed);
//! - `pane_upsert` with `agent: null` → `failed` (Herdr released the agent:
//!   `pane_agent_detected {released: true}` makes the catalog drop the agent).
//!
//! Invariants:
//! - Terminal states are final: a task leaves `running` at most once, so duplicate or
//!   replayed settles never produce a second terminal record ([`TaskState::finish`]).
//! - An event at or below `after_seq` happened before the prompt and never ends the task.

use continuity_protocol::{EventName, TaskTrigger};
use serde_json::Value;

/// Where a dispatched task stands (the wire and database spelling is the protocol's).
pub use continuity_protocol::TaskState;

/// True for `completed`, `blocked` and `failed`.
pub fn is_terminal(state: TaskState) -> bool {
    state != TaskState::Running
}

/// The state after `ending` is seen: a running task takes it, a terminal one keeps its own
/// (terminal states are final).
pub fn finish(state: TaskState, ending: &Ending) -> TaskState {
    match state {
        TaskState::Running => ending.state,
        done => done,
    }
}

/// A stream event that ends the running tasks of one pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    /// The pane whose tasks end.
    pub pane_id: String,
    /// The terminal state they take.
    pub state: TaskState,
    /// Why, for the result summary.
    pub trigger: TaskTrigger,
}

/// The ending a stream event implies, if any.
pub fn ending_for(event: &str, data: &Value) -> Option<Ending> {
    let pane_id = data.get("pane_id").and_then(Value::as_str)?.to_owned();
    let (state, trigger) = match EventName::parse(event).ok()? {
        EventName::AgentSettled => match data.get("status").and_then(Value::as_str)? {
            "idle" | "done" => (TaskState::Completed, TaskTrigger::AgentSettled),
            "blocked" => (TaskState::Blocked, TaskTrigger::AgentSettled),
            _ => return None,
        },
        EventName::PaneRemoved => (TaskState::Failed, TaskTrigger::PaneClosed),
        EventName::PaneUpsert if data.get("agent").is_some_and(Value::is_null) => (TaskState::Failed, TaskTrigger::AgentReleased),
        _ => return None,
    };
    Some(Ending { pane_id, state, trigger })
}

/// True when an event with `event_seq` may end a task recorded at `after_seq`.
pub fn after_dispatch(after_seq: i64, event_seq: i64) -> bool {
    event_seq > after_seq
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{expect, Expect};
    use proptest::prelude::*;
    use serde_json::json;

    /// Feeds `(seq, event, data)` to one task on `w1:p1` recorded at `after_seq` = 10 and
    /// prints the state after each event.
    fn check(events: &[(i64, &str, Value)], expected: Expect) {
        let mut state = TaskState::Running;
        let mut trace = String::new();
        for (seq, name, data) in events {
            let ending = ending_for(name, data).filter(|e| e.pane_id == "w1:p1" && after_dispatch(10, *seq));
            if let Some(ending) = &ending {
                state = finish(state, ending);
            }
            let why = ending.map_or("-", |e| e.trigger.as_str());
            trace.push_str(&format!("#{seq} {name} ({why}) -> {}\n", state.as_str()));
        }
        expected.assert_eq(&trace);
    }

    fn settled(pane: &str, status: &str) -> Value {
        json!({"pane_id": pane, "status": status, "previous_status": "working"})
    }

    #[test]
    fn an_idle_pane_goes_working_then_settles_and_completes_once_i2() {
        check(
            &[
                (9, "agent_settled", settled("w1:p1", "idle")),
                (11, "agent_working", json!({"pane_id": "w1:p1", "status": "working"})),
                (12, "agent_settled", settled("w1:p2", "idle")),
                (13, "agent_settled", settled("w1:p1", "done")),
                (13, "agent_settled", settled("w1:p1", "done")),
                (14, "agent_settled", settled("w1:p1", "blocked")),
                (15, "pane_removed", json!({"pane_id": "w1:p1"})),
            ],
            expect![[r#"
                #9 agent_settled (-) -> running
                #11 agent_working (-) -> running
                #12 agent_settled (-) -> running
                #13 agent_settled (agent_settled) -> completed
                #13 agent_settled (agent_settled) -> completed
                #14 agent_settled (agent_settled) -> completed
                #15 pane_removed (pane_closed) -> completed
            "#]],
        );
    }

    #[test]
    fn blocked_settles_block_and_closed_or_released_panes_fail_i2() {
        check(
            &[(11, "agent_settled", settled("w1:p1", "blocked"))],
            expect![[r#"
                #11 agent_settled (agent_settled) -> blocked
            "#]],
        );
        check(
            &[(11, "pane_removed", json!({"pane_id": "w1:p1", "workspace_id": "w1"}))],
            expect![[r#"
                #11 pane_removed (pane_closed) -> failed
            "#]],
        );
        check(
            &[
                (11, "pane_upsert", json!({"pane_id": "w1:p1", "agent": "bot"})),
                (12, "pane_upsert", json!({"pane_id": "w1:p1", "agent": null})),
            ],
            expect![[r#"
                #11 pane_upsert (-) -> running
                #12 pane_upsert (agent_released) -> failed
            "#]],
        );
    }

    #[test]
    fn states_round_trip_through_their_spelling() {
        for state in [TaskState::Running, TaskState::Completed, TaskState::Blocked, TaskState::Failed] {
            assert_eq!(TaskState::parse(state.as_str()), Ok(state));
        }
        assert!(TaskState::parse("done").is_err());
    }

    fn any_event() -> impl Strategy<Value = (i64, &'static str, Value)> {
        let name = prop::sample::select(vec!["agent_settled", "agent_working", "pane_removed", "pane_upsert"]);
        let status = prop::sample::select(vec!["idle", "done", "blocked", "working"]);
        let pane = prop::sample::select(vec!["w1:p1", "w1:p2"]);
        (0i64..30, name, status, pane, any::<bool>()).prop_map(|(seq, name, status, pane, agent)| {
            let agent = if agent { json!("bot") } else { Value::Null };
            (seq, name, json!({"pane_id": pane, "status": status, "agent": agent}))
        })
    }

    proptest! {
        /// I2: whatever the order, duplication or replay of events, a task changes state at
        /// most once, and only because of an event of its own pane after its dispatch.
        #[test]
        fn a_task_leaves_running_at_most_once(events in prop::collection::vec(any_event(), 0..40)) {
            let mut state = TaskState::Running;
            let mut changes = 0;
            for (seq, name, data) in &events {
                if let Some(ending) = ending_for(name, data) {
                    if ending.pane_id == "w1:p1" && after_dispatch(10, *seq) {
                        let next = finish(state, &ending);
                        if next != state {
                            changes += 1;
                            prop_assert_eq!(state, TaskState::Running);
                            prop_assert!(is_terminal(next));
                        }
                        state = next;
                    }
                }
            }
            prop_assert!(changes <= 1);
        }
    }
}
