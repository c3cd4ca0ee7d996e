//! `retention.get` / `retention.set`: the storage limits the options page shows and sets,
//! their bounds, and each store's size (`crate::retention`, SPEC W4).
//!
//! Invariant: `retention.set` answers only what is true when it answers — the limits are
//! stored, and `reclaiming` says whether reclaiming under them goes on after the answer
//! (it reclaims for at most [`SET_RECLAIM_BUDGET`] first, so a large `state.db` never makes
//! a save that succeeded look like one that timed out). Once they are stored the answer is a
//! success: its `sizes` are best-effort (left out when they cannot be read, or when the set
//! took [`SET_SIZES_BEFORE`] already).

use std::sync::Arc;

use serde_json::Value;

use super::Router;
use crate::clock::unix_millis;
use crate::protocol::{ErrorCode, Method, MethodError, Request};
use crate::retention::{Limits, Retention, SET_RECLAIM_BUDGET};

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
    let log = api.log.clone();
    let (worker, worker_log) = (retention.clone(), log.clone());
    let answer = tokio::task::spawn_blocking(move || answer(&worker, set.as_ref(), &worker_log)).await;
    let answer = match answer {
        Ok(answer) => answer,
        Err(error) => Err((ErrorCode::Internal, format!("retention failed: {error}"))),
    };
    // What the budget left goes on after the answer, on the blocking pool: one task, which
    // a later Save asks for one more pass (each batch reads the limits in force).
    if answer.as_ref().is_ok_and(|body| body["reclaiming"] == true) && retention.background_wanted() {
        tokio::spawn(async move {
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
        });
    }
    answer
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
        let (reclaimed, finished) = match retention.reclaim_within(unix_millis() as i64, SET_RECLAIM_BUDGET) {
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
