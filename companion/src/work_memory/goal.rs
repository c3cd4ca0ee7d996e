//! A scope's goal and its TODO items in Work Memory (SPEC J7): set by the planner
//! (`work_memory.goal`) or the HUD (`goal.set`), read by Goal mode (`goal.evidence`).
//!
//! - `wm_goals`: one row per `session_ref` (the chat's `browser_session_ref`): the goal
//!   and its TODO items as a JSON array.
//!
//! Invariants (tests in `work_memory/tests.rs` and `tests/it/goal.rs`):
//! - Checked before any IO: the goal at most [`MAX_GOAL_BYTES`], at most
//!   [`MAX_GOAL_TODOS`] items of at most [`MAX_GOAL_TODO_BYTES`] each, none empty; a
//!   refused call changes nothing and says what to send.
//! - Clearing the goal (`""`) clears its TODO items: a new goal never inherits the old
//!   one's list. Setting another goal text from the HUD keeps the planner's list only when
//!   the text is the same.
//! - A stored row that does not parse reads as "no goal" (fail closed: Goal mode stops).

use continuity_protocol::work_memory::{GoalParams, GoalState, GoalTodo, MAX_GOAL_BYTES, MAX_GOAL_TODOS, MAX_GOAL_TODO_BYTES};
use rusqlite::{params, OptionalExtension};

use super::store::{WorkMemoryError, WorkMemoryStore};

fn invalid(what: &str, detail: impl std::fmt::Display) -> WorkMemoryError {
    WorkMemoryError::Invalid(format!("{what}: {detail}"))
}

/// Checks a goal text (`""` clears).
pub fn check_goal(what: &str, goal: &str) -> Result<(), WorkMemoryError> {
    if goal.len() > MAX_GOAL_BYTES {
        return Err(invalid(
            what,
            format_args!("goal is {} bytes; at most {MAX_GOAL_BYTES} are allowed — state the goal in a sentence or two", goal.len()),
        ));
    }
    if goal.chars().any(|c| c.is_control() && c != '\n') {
        return Err(invalid(what, "goal contains a control character; send plain text"));
    }
    Ok(())
}

/// Checks `work_memory.goal`'s params (the session ref is checked by the caller).
pub fn check(what: &str, params: &GoalParams) -> Result<(), WorkMemoryError> {
    if let Some(goal) = &params.goal {
        check_goal(what, goal)?;
    }
    let Some(todos) = &params.todos else { return Ok(()) };
    if todos.len() > MAX_GOAL_TODOS {
        return Err(invalid(
            what,
            format_args!("todos has {} items; at most {MAX_GOAL_TODOS} are allowed — group small steps", todos.len()),
        ));
    }
    for (n, todo) in todos.iter().enumerate() {
        if todo.text.trim().is_empty() {
            return Err(invalid(what, format_args!("todos[{n}].text is empty; send what is to be done")));
        }
        if todo.text.len() > MAX_GOAL_TODO_BYTES {
            return Err(invalid(
                what,
                format_args!("todos[{n}].text is {} bytes; at most {MAX_GOAL_TODO_BYTES} are allowed", todo.text.len()),
            ));
        }
    }
    if params.goal.as_deref() == Some("") && !todos.is_empty() {
        return Err(invalid(what, "goal \"\" clears the goal and its todos; send a goal with the todos, or no todos"));
    }
    Ok(())
}

impl WorkMemoryStore {
    /// The goal of `session_ref` (`goal: None` when none is set, or the row is unreadable).
    pub fn goal(&self, session_ref: &str) -> Result<GoalState, WorkMemoryError> {
        let row: Option<(String, String, u64)> = self
            .conn
            .query_row("SELECT goal, todos, updated_at FROM wm_goals WHERE session_ref = ?1", params![session_ref], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()?;
        let mut state = GoalState { session_ref: session_ref.to_owned(), ..GoalState::default() };
        if let Some((goal, todos, updated_at)) = row {
            if let Ok(todos) = serde_json::from_str::<Vec<GoalTodo>>(&todos) {
                state.goal = Some(goal).filter(|g| !g.is_empty());
                state.todos = todos;
                state.updated_at = updated_at;
            }
        }
        Ok(state)
    }

    /// `work_memory.goal` (checked): sets, replaces or clears; the state after.
    pub fn goal_put(&mut self, params: &GoalParams, now: u64) -> Result<GoalState, WorkMemoryError> {
        let current = self.goal(&params.session_ref)?;
        if params.goal.is_none() && params.todos.is_none() {
            return Ok(current);
        }
        if params.goal.as_deref() == Some("") {
            self.conn.execute("DELETE FROM wm_goals WHERE session_ref = ?1", params![params.session_ref])?;
            return self.goal(&params.session_ref);
        }
        let goal = match (&params.goal, &current.goal) {
            (Some(goal), _) => goal.trim().to_owned(),
            (None, Some(goal)) => goal.clone(),
            (None, None) => return Err(invalid("work_memory.goal", "todos need a goal; send goal with them")),
        };
        // A new goal text starts a new list unless the call brings one.
        let todos = match &params.todos {
            Some(todos) => todos.clone(),
            None if current.goal.as_deref() == Some(goal.as_str()) => current.todos,
            None => Vec::new(),
        };
        let encoded = serde_json::to_string(&todos).map_err(|e| invalid("work_memory.goal", e))?;
        self.conn.execute(
            "INSERT INTO wm_goals (session_ref, goal, todos, updated_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (session_ref) DO UPDATE SET goal = excluded.goal, todos = excluded.todos, updated_at = excluded.updated_at",
            params![params.session_ref, goal, encoded, now],
        )?;
        self.goal(&params.session_ref)
    }
}
