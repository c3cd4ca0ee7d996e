//! Inbox checks: reads of a scope's parent inbox outside a settle (SPEC I2, I4, P9: the
//! inbox is the truth, a settle only a trigger). A settle the extension never saw (its
//! saved state was lost, or the settle fell outside the runtime's event retention) must
//! not strand a result, so a scope's check becomes *due* on every reconnect (link-up,
//! stream `hello`), on its binding, on a grown `unacked` count and when a wake that carried
//! tasks ended without them; it is *read* (`inbox.pending`) only once the scope is quiet,
//! and its unacknowledged tasks become one inbox wake of the scope's scheduler.
//!
//! Invariants (transcript and property tests in `tests/it/inbox_checks.rs`):
//! - At most one check per scope is in flight; a due check waits while one is out.
//! - A check is read only for a due scope the composition reports quiet (link up, bound
//!   workspace not working, no settle read in flight, no wake pending or in flight), and
//!   its answer becomes a wake only when the scope is still quiet and still bound to the
//!   workspace the check read; an answer that finds the scope busy leaves the check due
//!   (the tasks are read again once it is quiet), so a result is never stranded (I2).
//! - A settle's own inbox read replaces a due check ([`InboxCheckInput::SettleRead`]).
//! - An answer with more tasks than it carries leaves the check due (paging).
//!
//! Driver contract: feed [`InboxCheckInput`]s with [`InboxChecks::handle`] and drain
//! [`InboxChecks::poll`] until `None` after each. After every input of the composition,
//! report each bound scope that is quiet with [`InboxCheckInput::Quiet`] (only while the
//! link is up); send each [`InboxCheckOutput::Read`] as `inbox.pending` and feed its answer
//! (or the error that stands for it when the call is lost) as
//! [`InboxCheckInput::Answered`], with the tasks already confirmed removed. No timers.
//! Persisted: the due scopes (the snapshot's `inbox_checks`; earlier releases wrote them as
//! `scopes.*.inbox_check_due`, handed over by [`InboxChecks::restore_due`]); checks in
//! flight are not (a restart re-reads on link-up).

use std::collections::VecDeque;

use serde::Serialize;

use crate::continuity::InboxTask;
use crate::json_read::{ReadJson, WriteJson};
use crate::vec_map::VecMap;
use crate::Millis;

/// Why a check became due (each is something that happened).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DueBecause {
    /// The scope was bound (its existing results are read once it is quiet).
    Bound,
    /// The runtime's `inbox_changed` announced a grown `unacked` count.
    UnackedGrew,
    /// A wake that carried tasks ended without them (abandoned, or a record naming no
    /// message that cannot be offered again): they are read again, never retyped blindly.
    WakeEndedWithTasks,
    /// A settle's own inbox read failed, or answered with more tasks than it carries.
    SettleReadIncomplete,
}

/// What a check's `inbox.pending` answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckAnswer {
    /// The unacknowledged tasks not carried yet, and whether the runtime holds more.
    Tasks {
        /// The tasks (already confirmed ones removed by the composition).
        tasks: Vec<InboxTask>,
        /// More tasks than these are pending.
        more: bool,
    },
    /// The runtime has no parent inbox (an older runtime).
    NoInbox,
    /// Offline, refused or lost: the next reconnect or `inbox_changed` checks again.
    Failed,
}

/// Inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InboxCheckInput {
    /// A check of `key` became due.
    Due {
        /// The scope key.
        key: String,
        /// What happened.
        because: DueBecause,
    },
    /// The link came up, or the stream said `hello`: every scope listed (the bound ones)
    /// without a check in flight becomes due (a check in flight already sees what the
    /// `hello` announces: the runtime catches up with its log before answering).
    Reconnected {
        /// The bound scopes.
        keys: Vec<String>,
    },
    /// A settle of `key` reads the inbox itself: no check is due.
    SettleRead {
        /// The scope key.
        key: String,
    },
    /// The scope is no longer bound.
    Unbound {
        /// The scope key.
        key: String,
    },
    /// The scope is quiet now and bound to `workspace_id` (its chat's inbox is
    /// `session_ref`).
    Quiet {
        /// The scope key.
        key: String,
        /// Its workspace.
        workspace_id: String,
        /// Its `browser_session_ref`.
        session_ref: String,
    },
    /// The check of `key` answered.
    Answered {
        /// The scope key.
        key: String,
        /// What it answered.
        answer: CheckAnswer,
        /// The workspace the scope is bound to now, if any.
        bound_to: Option<String>,
        /// Whether the scope is quiet now.
        quiet: bool,
    },
}

/// Outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InboxCheckOutput {
    /// Call `inbox.pending` for the scope's chat.
    Read {
        /// The scope key.
        key: String,
        /// Its `browser_session_ref`.
        session_ref: String,
    },
    /// The runtime has no parent inbox: the scope's wakes carry no task facts.
    NoInbox {
        /// The scope key.
        key: String,
    },
    /// Its tasks become one inbox wake (id from the smallest task id).
    Wake {
        /// The scope key.
        key: String,
        /// The smallest task id.
        first: String,
        /// The tasks.
        tasks: Vec<InboxTask>,
    },
}

/// The inbox checks of every bound scope.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct InboxChecks {
    /// The scopes whose check is due, sorted.
    #[serde(default)]
    due: Vec<String>,
    /// Checks in flight: scope key → the workspace read.
    #[serde(skip)]
    in_flight: VecMap<String, String>,
    #[serde(skip)]
    outputs: VecDeque<InboxCheckOutput>,
}

impl InboxChecks {
    /// Feeds one input.
    pub fn handle(&mut self, _now: Millis, input: InboxCheckInput) {
        match input {
            InboxCheckInput::Due { key, because: _ } => self.set_due(key),
            InboxCheckInput::Reconnected { keys } => {
                for key in keys {
                    if !self.in_flight.contains_key(&key) {
                        self.set_due(key);
                    }
                }
            }
            InboxCheckInput::SettleRead { key } | InboxCheckInput::Unbound { key } => self.due.retain(|k| *k != key),
            InboxCheckInput::Quiet { key, workspace_id, session_ref } => {
                if self.is_due(&key) && !self.in_flight.contains_key(&key) {
                    self.due.retain(|k| *k != key);
                    self.in_flight.insert(key.clone(), workspace_id);
                    self.outputs.push_back(InboxCheckOutput::Read { key, session_ref });
                }
            }
            InboxCheckInput::Answered { key, answer, bound_to, quiet } => self.answered(key, answer, bound_to, quiet),
        }
    }

    /// The next output, if any.
    pub fn poll(&mut self) -> Option<InboxCheckOutput> {
        self.outputs.pop_front()
    }

    /// No timers: a due check waits for a quiet scope.
    pub fn next_deadline(&self) -> Option<Millis> {
        None
    }

    /// Whether a check of `key` is due.
    pub fn is_due(&self, key: &str) -> bool {
        self.due.iter().any(|k| k == key)
    }

    /// Whether a check of `key` is in flight.
    pub fn in_flight(&self, key: &str) -> bool {
        self.in_flight.contains_key(key)
    }

    /// What is persisted: the due checks (none in flight).
    pub fn persisted(&self) -> Self {
        Self { due: self.due.clone(), ..Self::default() }
    }

    /// A restored snapshot of an earlier release kept the due flag in the scope's state:
    /// `key`'s check is due.
    pub fn restore_due(&mut self, key: String) {
        self.set_due(key);
    }

    fn set_due(&mut self, key: String) {
        if let Err(at) = self.due.binary_search(&key) {
            self.due.insert(at, key);
        }
    }

    fn answered(&mut self, key: String, answer: CheckAnswer, bound_to: Option<String>, quiet: bool) {
        let Some(workspace_id) = self.in_flight.remove(&key) else { return };
        let (tasks, more) = match answer {
            CheckAnswer::Tasks { tasks, more } => (tasks, more),
            CheckAnswer::NoInbox => return self.outputs.push_back(InboxCheckOutput::NoInbox { key }),
            CheckAnswer::Failed => return,
        };
        // Paging; a scope no longer bound keeps nothing due.
        if more && bound_to.is_some() {
            self.set_due(key.clone());
        }
        if tasks.is_empty() || bound_to.as_deref() != Some(workspace_id.as_str()) {
            return;
        }
        if !quiet {
            return self.set_due(key);
        }
        let Some(first) = tasks.iter().map(|t| t.task_id.clone()).min() else { return };
        self.outputs.push_back(InboxCheckOutput::Wake { key, first, tasks });
    }
}
