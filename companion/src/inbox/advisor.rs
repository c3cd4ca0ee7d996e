//! Parent attention advice (SPEC I5): with unacknowledged terminal work, the runtime may
//! freeze a small view of the session's tasks and ask an [`AttentionAdvisor`] once for
//! *Parent guidance*, which is attached to the pending item as `guidance`.
//!
//! Invariants:
//! - Advice never delays the terminal fact: the item is pending before the advisor is
//!   asked, and an absent, slow (over the timeout) or failing advisor leaves
//!   `guidance: null` — the same deterministic result as having no advisor.
//! - A frozen view holds at most [`MAX_CHILDREN`] child summaries and at most
//!   [`MAX_CHILDREN`] running siblings.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};
use thiserror::Error;

/// Most child summaries (and most running siblings) in one frozen view.
pub const MAX_CHILDREN: usize = 16;

/// The kind of guidance an advisor may give (the wire's `task.guidance.kind`).
pub use continuity_protocol::GuidanceKind;

/// Guidance for one terminal item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Advice {
    /// What to do.
    pub kind: GuidanceKind,
    /// A short reason, shown with the guidance.
    pub note: Option<String>,
}

/// What the advisor sees: frozen at the moment a task became terminal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrozenView {
    /// The session scope.
    pub browser_session_ref: String,
    /// The task the advice is for.
    pub task_id: String,
    /// Up to [`MAX_CHILDREN`] summaries of the scope's unacknowledged terminal tasks.
    pub children: Vec<Value>,
    /// Up to [`MAX_CHILDREN`] summaries of the scope's running tasks.
    pub running_siblings: Vec<Value>,
}

/// Why an advisor gave no advice.
#[derive(Debug, Error)]
pub enum AdvisorError {
    /// The advisor could not produce advice.
    #[error("the attention advisor failed: {0}; the item keeps guidance: null")]
    Failed(String),
}

/// A boxed advice future.
pub type AdviceFuture<'a> = Pin<Box<dyn Future<Output = Result<Advice, AdvisorError>> + Send + 'a>>;

/// Something that can advise the parent (`agent.attention.advise`, I5).
pub trait AttentionAdvisor: Send + Sync + Debug {
    /// Advises on `view`; may take long (the caller bounds it with a timeout).
    fn advise<'a>(&'a self, view: &'a FrozenView) -> AdviceFuture<'a>;
}

/// Asks `advisor` once, bounded by `timeout`; `None` when absent, slow or failing.
pub async fn advise_within(advisor: Option<&dyn AttentionAdvisor>, view: &FrozenView, timeout: Duration) -> Option<Advice> {
    let advisor = advisor?;
    match tokio::time::timeout(timeout, advisor.advise(view)).await {
        Ok(Ok(advice)) => Some(advice),
        Ok(Err(_)) | Err(_) => None,
    }
}

impl Advice {
    /// The `guidance` of the task.
    pub fn guidance(&self) -> continuity_protocol::Guidance {
        continuity_protocol::Guidance { kind: self.kind, note: self.note.clone() }
    }
}

impl FrozenView {
    /// The view as pretty JSON of at most `max_chars` characters, always whole JSON with
    /// `browser_session_ref`, `task_id` and the ended task's own summary: when it is too
    /// long, the running siblings go first (the last first), then the other children, then
    /// the kept summaries' output tails; `omitted` counts what was left out.
    pub fn to_bounded_json(&self, max_chars: usize) -> String {
        let own = |child: &Value| child.get("task_id").and_then(Value::as_str) == Some(self.task_id.as_str());
        let mut children = self.children.clone();
        let mut siblings = self.running_siblings.clone();
        let (mut dropped_children, mut dropped_siblings, mut tails_cut) = (0usize, 0usize, false);
        loop {
            let mut view = json!({
                "browser_session_ref": self.browser_session_ref,
                "task_id": self.task_id,
                "children": children,
                "running_siblings": siblings,
            });
            if dropped_children + dropped_siblings > 0 || tails_cut {
                view["omitted"] = json!({"children": dropped_children, "running_siblings": dropped_siblings, "output_tails": tails_cut});
            }
            let text = serde_json::to_string_pretty(&view).unwrap_or_default();
            if text.chars().count() <= max_chars {
                return text;
            }
            if siblings.pop().is_some() {
                dropped_siblings += 1;
            } else if let Some(at) = children.iter().rposition(|c| !own(c)) {
                children.remove(at);
                dropped_children += 1;
            } else if !tails_cut {
                for child in &mut children {
                    if let Some(tail) = child.get_mut("tail") {
                        *tail = Value::Null;
                    }
                }
                tails_cut = true;
            } else {
                // Only the ended task's own fields are left and still too long (a prompt
                // preview is bounded, so only a tiny `max_chars` gets here): its ids alone.
                return serde_json::to_string(&json!({"browser_session_ref": self.browser_session_ref, "task_id": self.task_id, "omitted": {"children": self.children.len(), "running_siblings": self.running_siblings.len(), "output_tails": true}})).unwrap_or_default();
            }
        }
    }
}

#[cfg(test)]
mod bounded_view_tests {
    use super::*;

    fn child(id: &str, tail: &str) -> Value {
        json!({"task_id": id, "pane_id": "p1", "state": "completed", "prompt_preview": "run the tests", "tail": tail})
    }

    /// Review guidance29 finding 5 (failed before: the view was cut from its end, losing
    /// its head — the session ref and the task the advice is for — and its JSON shape).
    #[test]
    fn an_oversized_view_keeps_its_head_the_own_task_and_its_json_shape() {
        let escapes = "\u{1}".repeat(512); // each becomes `\u0001`: 6 characters
        let mut children: Vec<Value> = (0..16).map(|i| child(&format!("t{i}"), &escapes)).collect();
        children.insert(7, child("own", "the ended task's own tail"));
        let view = FrozenView {
            browser_session_ref: "chatgpt:conv:abc".to_owned(),
            task_id: "own".to_owned(),
            children,
            running_siblings: (0..16).map(|i| child(&format!("r{i}"), &escapes)).collect(),
        };
        let max = 40_000;
        assert!(serde_json::to_string_pretty(&view).expect("json").chars().count() > max, "the test view must be oversized");
        let text = view.to_bounded_json(max);
        assert!(text.chars().count() <= max, "{} chars", text.chars().count());
        let read: Value = serde_json::from_str(&text).expect("whole JSON");
        assert_eq!(read["browser_session_ref"], "chatgpt:conv:abc");
        assert_eq!(read["task_id"], "own");
        let kept = read["children"].as_array().expect("children");
        assert!(kept.iter().any(|c| c["task_id"] == "own" && c["tail"] == "the ended task's own tail"), "the own task is kept whole");
        assert!(read["omitted"]["running_siblings"].as_u64().is_some_and(|n| n > 0), "what was left out is counted: {}", read["omitted"]);
    }

    #[test]
    fn a_view_that_fits_is_sent_whole_and_a_tiny_budget_keeps_the_ids() {
        let view = FrozenView {
            browser_session_ref: "r".to_owned(),
            task_id: "own".to_owned(),
            children: vec![child("own", "done")],
            running_siblings: vec![child("r1", "working")],
        };
        assert_eq!(view.to_bounded_json(40_000), serde_json::to_string_pretty(&json!({"browser_session_ref": "r", "task_id": "own", "children": [child("own", "done")], "running_siblings": [child("r1", "working")]})).expect("json"));
        let read: Value = serde_json::from_str(&view.to_bounded_json(10)).expect("whole JSON");
        assert_eq!((read["browser_session_ref"].as_str(), read["task_id"].as_str()), (Some("r"), Some("own")));
    }
}
