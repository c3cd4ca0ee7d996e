//! `judge.turn_end {user_text, assistant_text, conversation}` → `judge_verdict` (SPEC J1–J4):
//! the runtime's one semantic service. The extension sends the turn's text and holds no
//! endpoint, model or key; the judge service reads its providers from `config.json`.
//!
//! Invariants: params are checked before anything is judged (`assistant_text` must be
//! there; `conversation` is at most [`MAX_REF_CHARS`]); a refused `config.json` answers
//! `config_refused` with the fix, never a verdict from a half-read configuration.

use continuity_protocol::limits::MAX_REF_CHARS;
use continuity_protocol::{JudgeTurnEndParams, MethodResult};
use serde_json::Value;

use super::Router;
use crate::judge::Stages;
use crate::protocol::{ErrorCode, MethodError, Request};

/// Runs the judge on the request's turn.
pub async fn handle(router: &Router, request: &Request) -> Result<Value, MethodError> {
    let Some(judge) = router.judge.as_ref() else {
        return Err((ErrorCode::NotReady, "the runtime's judge service did not start (see runtime.log); restart the runtime".to_owned()));
    };
    let params: JudgeTurnEndParams = serde_json::from_value(Value::Object(request.params.clone())).map_err(|e| {
        (
            ErrorCode::BadRequest,
            format!("judge.turn_end needs params {{user_text, assistant_text, conversation}} as strings, the turn to judge ({e}); an extension that sends no reply text is older than this companion: update it"),
        )
    })?;
    if params.conversation.chars().count() > MAX_REF_CHARS {
        return Err((ErrorCode::BadRequest, format!("judge.turn_end: params.conversation is longer than {MAX_REF_CHARS} characters")));
    }
    let verdict = judge
        .turn_end(&params.user_text, &params.assistant_text, &params.conversation, Stages::All)
        .await
        .map_err(|refused| (ErrorCode::ConfigRefused, refused.to_string()))?;
    let result = MethodResult::JudgeVerdict {
        verdict: verdict.verdict,
        source: verdict.source,
        confidence: verdict.confidence,
        reason: verdict.reason,
        priors: verdict.priors,
    };
    serde_json::to_value(result).map_err(|e| (ErrorCode::NotReady, format!("the verdict could not be written ({e})")))
}
