//! `retention.get` / `retention.set`: the storage limits the options page shows and sets,
//! their bounds, and each store's size (`crate::retention`, SPEC W4).
//!
//! Invariant: `retention.set` answers only what is true when it answers — the limits are
//! stored, and `reclaiming` says whether reclaiming under them goes on after the answer
//! (it reclaims for at most [`crate::retention::SET_RECLAIM_BUDGET`] first, so a large `state.db` never makes
//! a save that succeeded look like one that timed out). Once they are stored the answer is a
//! success: its `sizes` are best-effort (left out when they cannot be read, or when the set
//! took [`SET_SIZES_BEFORE`] already). The set and the background reclaim it leaves run in
//! a task of their own, so one whose request the runtime's 30 s bound drops still starts it.

use std::sync::Arc;

use serde_json::Value;

use super::Router;
use crate::clock::unix_millis;
use crate::protocol::{ErrorCode, Method, MethodError, Request};
use crate::retention::{Limits, Retention};

/// A `retention.set` that took this long already answers without `sizes` (reading them
/// reads every stored text): well inside the runtime's 30 s request bound.
const SET_SIZES_BEFORE: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves both methods.
pub async fn handle(api: &Router, request: &Request) -> Result<Value, MethodError> {
    let Some(retention) = api.retention.clone() else {
        return Err((
            ErrorCode::NotReady,
            "retention is not available: state.db could not be opened; see runtime.log and run herdr-companion doctor".to_owned(),
        ));
    };
    let set = match request.method {
        Method::RetentionSet => {
            if let Some(unknown) = request.params.keys().find(|key| *key != "limits") {
                let shown: String = unknown.chars().take(64).flat_map(char::escape_debug).collect();
                return Err((
                    ErrorCode::BadRequest,
                    format!("retention.set takes only params.limits, not `{shown}`; send {{\"limits\":{{\"inbox_days\":30}}}}"),
                ));
            }
            let limits = request.params.get("limits").cloned().unwrap_or(Value::Null);
            Some(limits)
        }
        _ => None,
    };
    // In a task of its own: a request the runtime's 30 s bound drops (its future goes) still
    // stores, answers nobody, and starts the background reclaim of what the budget left.
    let log = api.log.clone();
    let task = tokio::spawn(async move {
        let (worker, worker_log) = (retention.clone(), log.clone());
        let answer = tokio::task::spawn_blocking(move || answer(&worker, set.as_ref(), &worker_log)).await;
        let answer = match answer {
            Ok(answer) => answer,
            Err(error) => Err((ErrorCode::Internal, format!("retention failed: {error}"))),
        };
        // What the budget left goes on after the answer, on the blocking pool: one task,
        // which a later Save asks for one more pass (each batch reads the limits in force).
        if answer.as_ref().is_ok_and(|body| body["reclaiming"] == true) && retention.background_wanted() {
            tokio::spawn(reclaim_in_background(retention, log));
        }
        answer
    });
    match task.await {
        Ok(answer) => answer,
        Err(error) => Err((ErrorCode::Internal, format!("retention failed: {error}"))),
    }
}

/// Reclaims under the limits in force until no Save asks for one more pass.
async fn reclaim_in_background(retention: Arc<Retention>, log: Arc<crate::log::RuntimeLog>) {
    loop {
        let worker = retention.clone();
        let reclaimed = tokio::task::spawn_blocking(move || worker.reclaim(unix_millis() as i64)).await;
        match reclaimed {
            Ok(Ok(reclaimed)) => log.line(format_args!("retention: reclaimed after retention.set answered: {reclaimed:?}")),
            Ok(Err(error)) => log.line(format_args!("retention: reclaiming after retention.set failed: {error}")),
            Err(error) => log.line(format_args!("retention: reclaiming after retention.set failed: {error}")),
        }
        if !retention.background_again() {
            break;
        }
    }
}

fn answer(retention: &Arc<Retention>, set: Option<&Value>, log: &crate::log::RuntimeLog) -> Result<Value, MethodError> {
    let started = std::time::Instant::now();
    let failed = |error: crate::db::DbError| (ErrorCode::NotReady, error.to_string());
    let mut limits = retention.limits().map_err(failed)?;
    let mut reclaiming = None;
    if let Some(wanted) = set {
        limits = Limits::checked(limits, wanted).map_err(|why| (ErrorCode::BadRequest, why))?;
        retention.set_limits(&limits).map_err(failed)?;
        // Stored: from here on the answer is a success, never an error that reads as "not
        // saved"; a failed reclaim is logged and tried again after the answer.
        let (reclaimed, finished) = match retention.reclaim_within(unix_millis() as i64, retention.set_budget()) {
            Ok(done) => done,
            Err(error) => {
                log.line(format_args!("retention: limits set to {limits:?}; reclaiming failed: {error}"));
                (Default::default(), false)
            }
        };
        log.line(format_args!("retention: limits set to {limits:?}; reclaimed {reclaimed:?}; finished: {finished}"));
        reclaiming = Some(!finished);
    }
    let mut body = limits.to_json();
    body["type"] = Value::from("retention");
    if let Some(reclaiming) = reclaiming {
        body["reclaiming"] = Value::Bool(reclaiming);
    }
    if set.is_none() {
        body["sizes"] = serde_json::to_value(retention.sizes().map_err(failed)?).map_err(|e| (ErrorCode::Internal, e.to_string()))?;
        return Ok(body);
    }
    // Stored: the sizes are best-effort. Past the budget (they read every text under the
    // lock) or when they cannot be read they are left out, and the page keeps its own.
    if started.elapsed() >= SET_SIZES_BEFORE {
        log.line(format_args!("retention: the set's answer leaves out the sizes: it took {:?} already", started.elapsed()));
        return Ok(body);
    }
    match retention.sizes().map(serde_json::to_value) {
        Ok(Ok(sizes)) => body["sizes"] = sizes,
        Ok(Err(error)) => log.line(format_args!("retention: the set's answer leaves out the sizes: {error}")),
        Err(error) => log.line(format_args!("retention: the set's answer leaves out the sizes: {error}")),
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use futures::FutureExt;
    use serde_json::{json, Value};

    use super::*;
    use crate::api::Services;
    use crate::herdr::HerdrStatus;
    use continuity_protocol::HerdrState;

    /// Leftovers31 (failed before): a `retention.set` whose request the runtime's 30 s bound
    /// dropped stored its limits and reclaimed for its budget (on the blocking pool, which
    /// the drop does not stop), but the background reclaim of what the budget left was
    /// started after the answer, in the dropped request: it never started, and the rest
    /// waited for the hourly reclaimer. It runs in a task of its own now.
    #[tokio::test]
    async fn a_retention_set_dropped_before_its_answer_still_reclaims_the_rest_in_the_background() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.db");
        let retention = Arc::new(Retention::open(&path).expect("retention").with_set_budget(std::time::Duration::ZERO));
        let old = unix_millis() as i64 - 60 * 24 * 3600 * 1000;
        let conn = rusqlite::Connection::open(&path).expect("open");
        for n in 0..(crate::retention::BATCH * 3) {
            conn.execute(
                "INSERT INTO inbox_tasks (task_id, dispatch_id, browser_session_ref, workspace_id, pane_id, prompt_preview, state, after_seq, created_at, finished_at, result, acked_at)
                 VALUES (?1, ?1, 'chatgpt:conv:c1', 'w1', 'w1:p1', 'do it', 'done', 0, ?2, ?2, '{}', ?2)",
                rusqlite::params![format!("t{n}"), old],
            )
            .expect("inbox row");
        }
        let (_tx, herdr_status) = tokio::sync::watch::channel(HerdrStatus {
            state: HerdrState::NotRunning,
            protocol: None,
            version: None,
            socket: dir.path().join("no-herdr.sock").display().to_string(),
            detail: None,
        });
        let router = Router::new(Services {
            herdr_status,
            boot_id: "boot".into(),
            log: Arc::new(crate::log::RuntimeLog::open(&dir.path().join("runtime.log"))),
            events: None,
            inbox: None,
            home: dir.path().to_path_buf(),
            judge: None,
            journal: None,
            retention: Some(retention),
            work_memory: None,
            bridge: None,
            attribution: Arc::new(crate::api::attribution::Attribution::without_pairs()),
            write_tools: None,
        });
        let Value::Object(params) = json!({"limits": {"inbox_days": 30}}) else { unreachable!() };
        let request = Request { id: "r".into(), method: Method::RetentionSet, params };
        // The request is polled once, then dropped (as the runtime's bound drops it).
        assert!(handle(&router, &request).now_or_never().is_none(), "the set waits for its blocking work");
        let left = || conn.query_row("SELECT count(*) FROM inbox_tasks", [], |r| r.get::<_, i64>(0)).expect("count");
        // Not a timed assertion: it waits for the reclaim, as long as it takes within a cap.
        for _ in 0..400 {
            if left() == 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert_eq!(left(), 0, "every aged-out task is reclaimed, the set's answer or not");
    }
}
