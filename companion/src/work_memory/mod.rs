//! Work Memory (SPEC W1–W5): a planner's durable memory of one work chain — raw turns and
//! evidence, and compact checkpoints written with a revision compare-and-swap — reached
//! through `herdr_call` (`work_memory.*`, docs/PROTOCOL.md "Work Memory").
//!
//! - [`store`]: the tables in `state.db` — the truth, synchronous.
//! - This file: the service — params checked before any IO ([`checked`]), each call run on
//!   the blocking pool, results as the protocol crate's types.
//!
//! Invariants:
//! - Params are refused whole on an unknown key, a wrong type, an empty or padded id, a
//!   control character in an id, or a size over its cap, with a message that names the
//!   field and says what to send; nothing is written then.
//! - A refused call changes nothing (every change is one transaction, [`store`]).

pub mod goal;
pub mod journal_anchor;
pub mod store;

use std::path::Path;
use std::sync::{Arc, Mutex};

use continuity_protocol::work_memory::{
    AppendEvidenceParams, AppendTurnParams, BindParams, CheckpointPutParams, GoalParams, GoalState, ResumeParams, SearchParams,
    MAX_ACCOUNT_REF_BYTES, MAX_BODY_BYTES, MAX_CHECKPOINT_JSON_BYTES, MAX_COMMIT_SHA_BYTES, MAX_CONTINUITY_ID_BYTES, MAX_EVIDENCE_ID_BYTES,
    MAX_NAME_BYTES, MAX_PATH_BYTES, MAX_QUERY_BYTES, MAX_REF_BYTES, MAX_RESUME_TURNS, MAX_SEARCH_LIMIT, MAX_SUMMARY_BYTES,
    MAX_WORK_CHAIN_ID_BYTES,
};
use continuity_protocol::LocalMethod;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::db::off_worker;
pub use store::{WorkMemoryError, WorkMemoryStore};

/// The Work Memory service: its store on its own connection.
#[derive(Debug)]
pub struct WorkMemory {
    store: Arc<Mutex<WorkMemoryStore>>,
}

impl WorkMemory {
    /// Opens the store in `state.db` at `path`.
    pub fn open(path: &Path) -> Result<Self, WorkMemoryError> {
        Ok(Self { store: Arc::new(Mutex::new(WorkMemoryStore::open(path)?)) })
    }

    /// True for the methods this service answers.
    pub const fn serves(method: LocalMethod) -> bool {
        matches!(
            method,
            LocalMethod::WorkMemoryBind
                | LocalMethod::WorkMemoryAppendTurn
                | LocalMethod::WorkMemoryAppendEvidence
                | LocalMethod::WorkMemoryCheckpointPut
                | LocalMethod::WorkMemoryResume
                | LocalMethod::WorkMemorySearch
                | LocalMethod::WorkMemoryGoal
        )
    }

    /// The continuity chain the partition (`project_ref`, `repo_id`, `work_chain_id`) is
    /// bound to, if it is bound.
    pub async fn chain_of_partition(
        &self,
        project_ref: String,
        repo_id: String,
        work_chain_id: String,
    ) -> Result<Option<String>, WorkMemoryError> {
        let store = self.store.clone();
        off_worker(move || {
            store.lock().unwrap_or_else(std::sync::PoisonError::into_inner).chain_of_partition(&project_ref, &repo_id, &work_chain_id)
        })
        .await
    }

    /// The goal of the scope `session_ref` (Goal mode's evidence, SPEC J7).
    pub async fn goal_of(&self, session_ref: String) -> Result<GoalState, WorkMemoryError> {
        let store = self.store.clone();
        off_worker(move || store.lock().unwrap_or_else(std::sync::PoisonError::into_inner).goal(&session_ref)).await
    }

    /// Sets (`""` clears) the goal of `session_ref` from the HUD (`goal.set`), checked here;
    /// the planner's TODO items stay while the text is the same.
    pub async fn set_goal(&self, session_ref: String, goal: String) -> Result<GoalState, WorkMemoryError> {
        id(LocalMethod::WorkMemoryGoal, "browser_session_ref", &session_ref, MAX_REF_BYTES).map_err(|_| {
            WorkMemoryError::Invalid("goal.set: browser_session_ref must be the chat's session ref, 1 to 512 bytes, trimmed".to_owned())
        })?;
        goal::check_goal("goal.set", &goal)?;
        let params = GoalParams { session_ref, goal: Some(goal.trim().to_owned()), todos: None };
        let store = self.store.clone();
        off_worker(move || store.lock().unwrap_or_else(std::sync::PoisonError::into_inner).goal_put(&params, crate::clock::unix_millis()))
            .await
    }

    /// Runs one `work_memory.*` call with `params` (a JSON object).
    pub async fn call(&self, method: LocalMethod, params: Value) -> Result<Value, WorkMemoryError> {
        let call = checked(method, params)?;
        let store = self.store.clone();
        off_worker(move || {
            let mut store = store.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            call.run(&mut store)
        })
        .await
    }
}

/// A checked call, ready for the store.
#[derive(Debug)]
pub enum Call {
    /// `work_memory.bind`.
    Bind(BindParams),
    /// `work_memory.append_turn`.
    AppendTurn(AppendTurnParams),
    /// `work_memory.append_evidence`.
    AppendEvidence(AppendEvidenceParams),
    /// `work_memory.checkpoint.put`.
    CheckpointPut(CheckpointPutParams),
    /// `work_memory.resume`.
    Resume(ResumeParams),
    /// `work_memory.search`.
    Search(SearchParams),
    /// `work_memory.goal`.
    Goal(GoalParams),
}

impl Call {
    /// Runs the call on `store`; its answer as JSON.
    pub fn run(&self, store: &mut WorkMemoryStore) -> Result<Value, WorkMemoryError> {
        let value = match self {
            Call::Bind(p) => serde_json::to_value(store.bind(p)?),
            Call::AppendTurn(p) => serde_json::to_value(store.append_turn(p)?),
            Call::AppendEvidence(p) => serde_json::to_value(store.append_evidence(p)?),
            Call::CheckpointPut(p) => serde_json::to_value(store.checkpoint_put(p)?),
            Call::Resume(p) => serde_json::to_value(store.resume(p)?),
            Call::Search(p) => serde_json::to_value(store.search(p)?),
            Call::Goal(p) => serde_json::to_value(store.goal_put(p, crate::clock::unix_millis())?),
        };
        Ok(value.unwrap_or(Value::Null))
    }
}

fn invalid(method: LocalMethod, detail: impl std::fmt::Display) -> WorkMemoryError {
    WorkMemoryError::Invalid(format!("{method}: {detail}"))
}

fn parse<T: DeserializeOwned>(method: LocalMethod, params: Value) -> Result<T, WorkMemoryError> {
    serde_json::from_value(params)
        .map_err(|e| invalid(method, format_args!("{e}; herdr_methods and docs/PROTOCOL.md \"Work Memory\" list the fields it takes")))
}

/// An id-like string: non-empty, no leading or trailing space, no control character, at
/// most `max` bytes.
fn id(method: LocalMethod, field: &str, value: &str, max: usize) -> Result<(), WorkMemoryError> {
    if value.is_empty() {
        return Err(invalid(method, format_args!("{field} is empty; send a non-empty string")));
    }
    if value.trim() != value {
        return Err(invalid(method, format_args!("{field} starts or ends with whitespace; send it trimmed")));
    }
    if value.chars().any(char::is_control) {
        return Err(invalid(method, format_args!("{field} contains a control character; send it without")));
    }
    if value.len() > max {
        return Err(invalid(method, format_args!("{field} is {} bytes; at most {max} are allowed", value.len())));
    }
    Ok(())
}

fn optional_id(method: LocalMethod, field: &str, value: Option<&String>, max: usize) -> Result<(), WorkMemoryError> {
    value.map_or(Ok(()), |value| id(method, field, value, max))
}

/// A body (text, content, summary): non-empty, at most `max` bytes; newlines allowed.
fn body(method: LocalMethod, field: &str, value: &str, max: usize) -> Result<(), WorkMemoryError> {
    if value.trim().is_empty() {
        return Err(invalid(method, format_args!("{field} is empty; send the text itself")));
    }
    if value.len() > max {
        return Err(invalid(
            method,
            format_args!("{field} is {} bytes; at most {max} are allowed — split it or send a summary", value.len()),
        ));
    }
    Ok(())
}

fn partition(method: LocalMethod, project_ref: &str, repo_id: &str, work_chain_id: &str) -> Result<(), WorkMemoryError> {
    id(method, "project_ref", project_ref, MAX_REF_BYTES)?;
    id(method, "repo_id", repo_id, MAX_REF_BYTES)?;
    id(method, "work_chain_id", work_chain_id, MAX_WORK_CHAIN_ID_BYTES)
}

/// Parses and checks `params` for `method` (a `work_memory.*` one), before any IO.
pub fn checked(method: LocalMethod, params: Value) -> Result<Call, WorkMemoryError> {
    let m = method;
    let call = match method {
        LocalMethod::WorkMemoryBind => {
            let p: BindParams = parse(m, params)?;
            id(m, "continuity_id", &p.continuity_id, MAX_CONTINUITY_ID_BYTES)?;
            partition(m, &p.project_ref, &p.repo_id, &p.work_chain_id)?;
            id(m, "provider", &p.provider, MAX_NAME_BYTES)?;
            optional_id(m, "account_ref", p.account_ref.as_ref(), MAX_ACCOUNT_REF_BYTES)?;
            optional_id(m, "space_ref", p.space_ref.as_ref(), MAX_REF_BYTES)?;
            id(m, "session_ref", &p.session_ref, MAX_REF_BYTES)?;
            Call::Bind(p)
        }
        LocalMethod::WorkMemoryAppendTurn => {
            let p: AppendTurnParams = parse(m, params)?;
            id(m, "continuity_id", &p.continuity_id, MAX_CONTINUITY_ID_BYTES)?;
            id(m, "provider", &p.provider, MAX_NAME_BYTES)?;
            optional_id(m, "account_ref", p.account_ref.as_ref(), MAX_ACCOUNT_REF_BYTES)?;
            optional_id(m, "space_ref", p.space_ref.as_ref(), MAX_REF_BYTES)?;
            id(m, "session_ref", &p.session_ref, MAX_REF_BYTES)?;
            id(m, "provider_message_ref", &p.provider_message_ref, MAX_REF_BYTES)?;
            id(m, "role", &p.role, MAX_NAME_BYTES)?;
            body(m, "text", &p.text, MAX_BODY_BYTES)?;
            optional_id(m, "fingerprint", p.fingerprint.as_ref(), MAX_ACCOUNT_REF_BYTES)?;
            Call::AppendTurn(p)
        }
        LocalMethod::WorkMemoryAppendEvidence => {
            let p: AppendEvidenceParams = parse(m, params)?;
            id(m, "continuity_id", &p.continuity_id, MAX_CONTINUITY_ID_BYTES)?;
            id(m, "kind", &p.kind, MAX_NAME_BYTES)?;
            body(m, "content", &p.content, MAX_BODY_BYTES)?;
            optional_id(m, "provider", p.provider.as_ref(), MAX_NAME_BYTES)?;
            optional_id(m, "account_ref", p.account_ref.as_ref(), MAX_ACCOUNT_REF_BYTES)?;
            optional_id(m, "space_ref", p.space_ref.as_ref(), MAX_REF_BYTES)?;
            optional_id(m, "session_ref", p.session_ref.as_ref(), MAX_REF_BYTES)?;
            if let Some(source) = &p.portable_source {
                id(m, "portable_source.repo_id", &source.repo_id, MAX_REF_BYTES)?;
                id(m, "portable_source.commit_sha", &source.commit_sha, MAX_COMMIT_SHA_BYTES)?;
                id(m, "portable_source.repo_relative_path", &source.repo_relative_path, MAX_PATH_BYTES)?;
                if let (Some(start), Some(end)) = (source.line_start, source.line_end) {
                    if end < start {
                        return Err(invalid(m, "portable_source.line_end is before line_start; send the range in order"));
                    }
                }
            }
            Call::AppendEvidence(p)
        }
        LocalMethod::WorkMemoryCheckpointPut => {
            let p: CheckpointPutParams = parse(m, params)?;
            id(m, "continuity_id", &p.continuity_id, MAX_CONTINUITY_ID_BYTES)?;
            body(m, "summary", &p.summary, MAX_SUMMARY_BYTES)?;
            if p.checkpoint_json.len() > MAX_CHECKPOINT_JSON_BYTES {
                return Err(invalid(
                    m,
                    format_args!("checkpoint_json is {} bytes; at most {MAX_CHECKPOINT_JSON_BYTES} are allowed", p.checkpoint_json.len()),
                ));
            }
            if !matches!(serde_json::from_str::<Value>(&p.checkpoint_json), Ok(Value::Object(_))) {
                return Err(invalid(m, "checkpoint_json must be a JSON object encoded as a string, e.g. \"{\\\"next\\\":\\\"…\\\"}\""));
            }
            optional_id(m, "through_message_id", p.through_message_id.as_ref(), MAX_REF_BYTES)?;
            optional_id(m, "through_evidence_id", p.through_evidence_id.as_ref(), MAX_EVIDENCE_ID_BYTES)?;
            if let Some(anchor) = &p.through_journal_turn {
                id(m, "through_journal_turn.continuity_id", &anchor.continuity_id, MAX_CONTINUITY_ID_BYTES)?;
                id(m, "through_journal_turn.message_id", &anchor.message_id, MAX_REF_BYTES)?;
            }
            if p.through_message_id.is_none() && p.through_evidence_id.is_none() && p.through_journal_turn.is_none() {
                return Err(invalid(m, "a checkpoint needs an anchor: through_journal_turn ({continuity_id, message_id} of a journal turn, as continuity.resume lists it), through_message_id (from append_turn) or through_evidence_id (from append_evidence)"));
            }
            Call::CheckpointPut(p)
        }
        LocalMethod::WorkMemoryResume => {
            let p: ResumeParams = parse(m, params)?;
            partition(m, &p.project_ref, &p.repo_id, &p.work_chain_id)?;
            if p.max_turns.is_some_and(|n| n == 0 || n > MAX_RESUME_TURNS) {
                return Err(invalid(m, format_args!("max_turns must be 1 to {MAX_RESUME_TURNS}, or left out")));
            }
            Call::Resume(p)
        }
        LocalMethod::WorkMemorySearch => {
            let p: SearchParams = parse(m, params)?;
            partition(m, &p.project_ref, &p.repo_id, &p.work_chain_id)?;
            id(m, "query", &p.query, MAX_QUERY_BYTES)?;
            if p.limit.is_some_and(|n| n == 0 || n > MAX_SEARCH_LIMIT) {
                return Err(invalid(m, format_args!("limit must be 1 to {MAX_SEARCH_LIMIT}, or left out")));
            }
            Call::Search(p)
        }
        LocalMethod::WorkMemoryGoal => {
            let p: GoalParams = parse(m, params)?;
            id(m, "session_ref", &p.session_ref, MAX_REF_BYTES)?;
            goal::check(&m.to_string(), &p)?;
            Call::Goal(p)
        }
        other => return Err(invalid(other, "is not a work_memory method")),
    };
    Ok(call)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod anchor_tests;
