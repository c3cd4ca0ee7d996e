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
use serde_json::Value;
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
