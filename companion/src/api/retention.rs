//! `retention.get` / `retention.set`: the storage limits the options page shows and sets,
//! their bounds, and each store's size (`crate::retention`, SPEC W4).

use std::sync::Arc;

use serde_json::Value;

use super::Router;
use crate::clock::unix_millis;
use crate::protocol::{ErrorCode, Method, MethodError, Request};
use crate::retention::{Limits, Retention};

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
    let answer = tokio::task::spawn_blocking(move || answer(&retention, set.as_ref(), &log)).await;
    match answer {
        Ok(answer) => answer,
        Err(error) => Err((ErrorCode::Internal, format!("retention failed: {error}"))),
    }
}

fn answer(retention: &Arc<Retention>, set: Option<&Value>, log: &crate::log::RuntimeLog) -> Result<Value, MethodError> {
    let failed = |error: crate::db::DbError| (ErrorCode::NotReady, error.to_string());
    let mut limits = retention.limits().map_err(failed)?;
    if let Some(wanted) = set {
        limits = Limits::checked(limits, wanted).map_err(|why| (ErrorCode::BadRequest, why))?;
        retention.set_limits(&limits).map_err(failed)?;
        let reclaimed = retention.reclaim(unix_millis() as i64).map_err(failed)?;
        log.line(format_args!("retention: limits set to {limits:?}; reclaimed {reclaimed:?}"));
    }
    let mut body = limits.to_json();
    body["type"] = Value::from("retention");
    body["sizes"] = serde_json::to_value(retention.sizes().map_err(failed)?).map_err(|e| (ErrorCode::Internal, e.to_string()))?;
    Ok(body)
}
