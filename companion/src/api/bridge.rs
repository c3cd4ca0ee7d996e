//! The JSON bridge's methods (docs/PROTOCOL.md "JSON bridge"): `bridge.prompt` (the
//! protocol prompt built from the tool registry), `bridge.reply` (an assistant reply's
//! tool calls, run through [`super::tools::run`] — the code path of `tools.call` — with the
//! chat as the caller ([`super::tools::Caller::Bridge`]), and the results message),
//! `bridge.decide` (the user's Run / Skip) and `bridge.delivered`.
//!
//! Invariants: params are checked before anything runs (`conversation`, `message_id`,
//! `workspace_id` (required), `human_turn` and `batch_id` at most [`MAX_REF_CHARS`], `text`
//! at most [`MAX_REPLY_CHARS`]); the bridge service
//! (`crate::bridge`) decides what runs; this file only reads params and writes answers.

use continuity_protocol::limits::MAX_REF_CHARS;
use continuity_protocol::{BridgeDecideParams, BridgeDeliveredParams, BridgePromptParams, BridgeReplyParams, Method, MethodResult};
use serde_json::{Map, Value};

use super::{tools, Router};
use crate::bridge::machine::{protocol_prompt, CallOutcome};
use crate::bridge::{BridgeCaller, DecideError, ReplyRequest, ToolRunner};
use crate::clock::unix_millis;
use crate::protocol::{ErrorCode, MethodError, Request};

/// The longest reply text `bridge.reply` reads (the page's reply, in characters).
pub const MAX_REPLY_CHARS: usize = 200_000;

fn caller_of(caller: BridgeCaller) -> tools::Caller {
    tools::Caller::Bridge { session_ref: caller.session_ref, workspace_id: caller.workspace_id }
}

impl ToolRunner for Router {
    async fn refusal(&self, caller: BridgeCaller, tool: String, mut args: Map<String, Value>) -> Option<String> {
        tools::confine(self, &caller_of(caller), &tool, &mut args).await.err()
    }

    async fn run_tool(&self, caller: BridgeCaller, tool: String, args: Map<String, Value>) -> CallOutcome {
        match tools::run(self, &caller_of(caller), &tool, &args).await {
            Ok((_, result)) => CallOutcome::Ok(result),
            Err((code, message)) => CallOutcome::Failed { code: code.as_str().to_owned(), message },
        }
    }
}

fn typed<T: serde::de::DeserializeOwned>(request: &Request, shape: &str) -> Result<T, MethodError> {
    serde_json::from_value(Value::Object(request.params.clone()))
        .map_err(|e| (ErrorCode::BadRequest, format!("{} needs params {shape} ({e})", request.method)))
}

fn too_long(what: &str, value: &str, max: usize) -> Result<(), MethodError> {
    if value.chars().count() > max {
        return Err((ErrorCode::BadRequest, format!("bridge: {what} is longer than {max} characters; send at most {max}")));
    }
    Ok(())
}

fn answer(result: MethodResult) -> Result<Value, MethodError> {
    serde_json::to_value(result).map_err(|e| (ErrorCode::NotReady, format!("the answer could not be written ({e})")))
}

/// Serves `bridge.prompt`, `bridge.reply` and `bridge.delivered`.
pub async fn handle(router: &Router, request: &Request) -> Result<Value, MethodError> {
    if request.method == Method::BridgePrompt {
        let params: BridgePromptParams = typed(request, "{browser_session_ref?}")?;
        let specs = tools::specs();
        let listed: Vec<(String, String, Value)> = specs.into_iter().map(|s| (s.name.to_string(), s.description, s.input_schema)).collect();
        return answer(MethodResult::BridgePrompt { text: protocol_prompt(&listed, params.browser_session_ref.as_deref()) });
    }
    let Some(bridge) = router.bridge.as_ref() else {
        return Err((ErrorCode::NotReady, "the runtime's bridge store did not open (see runtime.log); restart the runtime".to_owned()));
    };
    let now = i64::try_from(unix_millis()).unwrap_or(i64::MAX);
    let store_failed = |e: crate::db::DbError| (ErrorCode::NotReady, e.to_string());
    if request.method == Method::BridgeDecide {
        let params: BridgeDecideParams = typed(request, "{conversation, batch_id, call, decision}")?;
        too_long("conversation", &params.conversation, MAX_REF_CHARS)?;
        too_long("batch_id", &params.batch_id, MAX_REF_CHARS)?;
        let pending =
            bridge.decide(&params.conversation, &params.batch_id, params.call, params.decision, now).await.map_err(|e| match e {
                DecideError::Refused(why) => (ErrorCode::BadRequest, why),
                DecideError::Store(e) => store_failed(e),
            })?;
        return answer(MethodResult::BridgeDecided { batch_id: params.batch_id, call: params.call, decision: params.decision, pending });
    }
    if request.method == Method::BridgeDelivered {
        let params: BridgeDeliveredParams = typed(request, "{delivery_id}")?;
        let known = bridge.delivered(&params.delivery_id, now).await.map_err(store_failed)?;
        return answer(MethodResult::BridgeDelivered { delivery_id: params.delivery_id, known });
    }
    let params: BridgeReplyParams = typed(request, "{conversation, message_id, text, finished, workspace_id, auto?, human_turn?}")?;
    too_long("conversation", &params.conversation, MAX_REF_CHARS)?;
    too_long("message_id", &params.message_id, MAX_REF_CHARS)?;
    too_long("text", &params.text, MAX_REPLY_CHARS)?;
    too_long("workspace_id", &params.workspace_id, MAX_REF_CHARS)?;
    too_long("human_turn", &params.human_turn, MAX_REF_CHARS)?;
    if params.conversation.trim().is_empty() {
        return Err((
            ErrorCode::BadRequest,
            "bridge.reply needs params.conversation, the chat's browser_session_ref (e.g. zai:conv:<id>)".to_owned(),
        ));
    }
    if params.workspace_id.trim().is_empty() {
        return Err((
            ErrorCode::BadRequest,
            "bridge.reply needs params.workspace_id, the workspace the chat is bound to (every call of the chat is confined to it); bind the chat to a workspace first".to_owned(),
        ));
    }
    let BridgeReplyParams { conversation, message_id, text, finished, workspace_id, auto, human_turn } = params;
    let request = ReplyRequest { conversation, message_id, text, finished, workspace_id, auto, human_turn };
    let reply = bridge.reply(router, &request, now).await.map_err(store_failed)?;
    let (delivery_id, text, delivered) = match reply.results {
        Some(results) => (Some(results.delivery_id), Some(results.text), results.delivered),
        None => (reply.batch_id, None, false),
    };
    answer(MethodResult::BridgeReply {
        state: reply.state,
        calls: reply.calls,
        delivery_id,
        text,
        delivered,
        pending: reply.pending,
        rounds: reply.rounds,
    })
}
