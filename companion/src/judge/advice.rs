//! Parent guidance (SPEC I5) on the judge's configured routes: the inbox's
//! [`AttentionAdvisor`] of the runtime.
//!
//! One ask goes through the chat capability's routes — the local `openai-chat` routes,
//! then the global route pool's — with the judge's per-call timeout, pool deadline and
//! cooldown, in a [`super::pool::RoutePool`] of its own: a route that fails a guidance ask
//! (a code-fenced answer, a 429 from a burst) cools down for guidance only, never for the
//! turn-end judge. Decision routes answer only a probability and are not asked.
//! `config.json` is re-read on every ask.
//!
//! Invariants: the frozen view goes out fenced as data with a fresh `/dev/urandom` nonce;
//! the answer is read strictly ([`crate::providers::guidance::read_answer`]); no route, a
//! refused config, a failing, slow or garbled route gives no advice, with the reason in
//! the runtime log (the item then keeps `guidance: null`).

use std::sync::Arc;

use serde_json::Value;

use super::chain::Opinion;
use super::JudgeService;
use crate::config::{Capability, Config, ConfigError};
use crate::inbox::advisor::{Advice, AdviceFuture, AdvisorError, AttentionAdvisor, FrozenView, GuidanceKind};
use crate::providers::guidance::{self, GuidanceWord};

/// Guidance asks in flight at once: a burst of finished tasks (a workspace removed, many
/// panes settling) must not fire one LLM call each; an ask over the bound is skipped.
pub const ASKS_IN_FLIGHT: usize = 2;

/// The inbox's advisor backed by a [`JudgeService`].
#[derive(Debug)]
pub struct RouteAdvisor {
    /// The judge whose routes, pools and settings are used.
    judge: Arc<JudgeService>,
}

impl RouteAdvisor {
    /// An advisor asking `judge`'s routes.
    pub fn new(judge: Arc<JudgeService>) -> Self {
        Self { judge }
    }
}

impl AttentionAdvisor for RouteAdvisor {
    fn advise<'a>(&'a self, view: &'a FrozenView) -> AdviceFuture<'a> {
        Box::pin(self.judge.advise(view))
    }
}

fn kind_of(word: GuidanceWord) -> GuidanceKind {
    match word {
        GuidanceWord::VerifyCompletion => GuidanceKind::VerifyCompletion,
        GuidanceWord::ContinueUnobserved => GuidanceKind::ContinueUnobserved,
        GuidanceWord::NeedsHuman => GuidanceKind::NeedsHuman,
        GuidanceWord::Blocker => GuidanceKind::Blocker,
        GuidanceWord::Drift => GuidanceKind::Drift,
    }
}

/// The text of an opinion that gave no answer.
fn reason_of(opinion: Opinion) -> String {
    match opinion {
        Opinion::Unavailable { reason } | Opinion::Unsure { reason, .. } | Opinion::Decided { reason, .. } => reason,
    }
}

impl JudgeService {
    /// Asks the chat routes once for guidance on `view` (bounded by the pool deadline).
    /// At most [`ASKS_IN_FLIGHT`] asks run at once; another is skipped, not queued (its
    /// item keeps `guidance: null`, the reason in the log).
    pub async fn advise(&self, view: &FrozenView) -> Result<Advice, AdvisorError> {
        let outcome = match self.advice_slots.try_acquire() {
            Ok(_slot) => self.advise_unlogged(view).await,
            Err(_) => Err(AdvisorError::Failed(format!(
                "skipped: {ASKS_IN_FLIGHT} guidance asks are already in flight (a burst of finished tasks)"
            ))),
        };
        if let Some(log) = &self.log {
            match &outcome {
                Ok(advice) => log.line(format_args!("parent guidance: {} for task {}", json_kind(advice), view.task_id)),
                Err(why) => log.line(format_args!("parent guidance: none for task {}: {why}", view.task_id)),
            }
        }
        outcome
    }

    async fn advise_unlogged(&self, view: &FrozenView) -> Result<Advice, AdvisorError> {
        let home = self.home.clone();
        let settings = tokio::task::spawn_blocking(move || Config::load(&home))
            .await
            .unwrap_or_else(|e| Err(ConfigError::Invalid { path: "config.json".to_owned(), detail: e.to_string() }))
            .map_err(|e| AdvisorError::Failed(e.to_string()))?
            .judge;
        let nonce = crate::db::random_hex_128()
            .ok()
            .and_then(|hex| hex.get(..continuity_protocol::fence::NONCE_CHARS).and_then(continuity_protocol::fence::Nonce::parse))
            .ok_or_else(|| AdvisorError::Failed("cannot read /dev/urandom for the data fence's nonce".to_owned()))?;
        let payload = view.to_bounded_json(guidance::MAX_VIEW_CHARS);
        let (client, payload, nonce) = (&self.client, payload.as_str(), &nonce);
        let answered = self
            .first_answer_of(&self.advice_pool, Capability::Chat, &settings, false, |route, timeout| async move {
                guidance::ask(client, &route, payload, nonce, timeout).await
            })
            .await
            .map_err(|opinion| AdvisorError::Failed(reason_of(opinion)))?;
        Ok(Advice { kind: kind_of(answered.answer.word), note: Some(answered.answer.reason) })
    }
}

fn json_kind(advice: &Advice) -> String {
    match serde_json::to_value(advice.kind) {
        Ok(Value::String(kind)) => kind,
        _ => "guidance".to_owned(),
    }
}
