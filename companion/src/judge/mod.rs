//! The turn-end judge (SPEC J1–J7): does a reply that looks finished leave a step the
//! assistant itself means to do next? One service for the runtime method `judge.turn_end`
//! and the `herdr-companion judge classify` CLI, so both run the same chain.
//!
//! Order ([`chain`]): the deterministic safety gate ([`gate`]) → the decision routes
//! (typed evaluation, a probability against the threshold: ≥ t continue, ≤ 1 − t done,
//! else unsure) → the chat routes (OpenAI-compatible) → the mechanical script
//! ([`script`], fails closed). Providers come only from `config.json` in the companion
//! home ([`crate::config`]), re-read on every call so an edit needs no restart; a file
//! that is not private is refused, and then nothing is judged. Each capability's routes
//! form a [`pool::RoutePool`] (priority order, cooldown after a failure, per-call timeout
//! and whole-pool deadline). The authenticated global route pool's routes ([`global`])
//! follow the local routes of the same capability inside the same deadline: they are
//! fetched only when no local route of that capability answered, and a pool that cannot
//! be reached leaves the local routes and the script, with the reason saying so.
//!
//! Invariants: the extension holds no endpoint, model or key (J4) — it sends the turn's
//! text and gets a verdict; a provider's answer that is not the documented shape is a
//! failure, never a verdict; goal-mode priors ride along and never decide (J7).

pub mod advice;
pub mod chain;
pub mod cli;
pub mod gate;
pub mod global;
pub mod pool;
pub mod script;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::config::{Capability, Config, ConfigError, GlobalPoolConfig, JudgeConfig, Route};
use crate::log::RuntimeLog;
use crate::providers::chat::{self, ChatVerdict};
use crate::providers::{decision, route_pool, ProviderError, Turn};
use chain::{Decided, Opinion, Verdict};
use global::{GlobalRouteCache, PoolRoutes};
use pool::{Answered, RoutePool};
use tokio::time::Instant;

/// Which stages may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stages {
    /// Gate, configured providers, script.
    All,
    /// Gate and script only; `config.json` is not read.
    ScriptOnly,
}

/// The judge service.
#[derive(Debug)]
pub struct JudgeService {
    /// The companion home (where `config.json` is).
    home: PathBuf,
    /// The HTTP client (rustls, no proxy from the environment).
    client: reqwest::Client,
    /// Cooldowns of the decision routes.
    decision_pool: RoutePool,
    /// Cooldowns of the chat routes.
    chat_pool: RoutePool,
    /// Cooldowns of the chat routes for Parent guidance (I5): its own state, so a failed
    /// or refused guidance ask never makes the turn-end judge skip a route.
    advice_pool: RoutePool,
    /// Parent guidance asks in flight (at most [`advice::ASKS_IN_FLIGHT`]; more are skipped).
    advice_slots: tokio::sync::Semaphore,
    /// The global route pool's last fetch.
    global_routes: GlobalRouteCache,
    /// The runtime log (`None` for the CLI).
    log: Option<Arc<RuntimeLog>>,
}

/// The HTTP client could not be built.
#[derive(Debug, thiserror::Error)]
#[error("the judge's HTTP client could not start ({0}); see runtime.log")]
pub struct ClientError(String);

impl JudgeService {
    /// A service reading `home/config.json`, logging to `log` when given.
    pub fn new(home: PathBuf, log: Option<Arc<RuntimeLog>>) -> Result<Self, ClientError> {
        let client = crate::providers::http_client().map_err(|e| ClientError(e.to_string()))?;
        Ok(Self {
            home,
            client,
            decision_pool: RoutePool::default(),
            chat_pool: RoutePool::default(),
            advice_pool: RoutePool::default(),
            advice_slots: tokio::sync::Semaphore::new(advice::ASKS_IN_FLIGHT),
            global_routes: GlobalRouteCache::default(),
            log,
        })
    }

    /// Judges one turn. `conversation` only names it in the log.
    pub async fn turn_end(
        &self,
        user_text: &str,
        assistant_text: &str,
        conversation: &str,
        stages: Stages,
    ) -> Result<Verdict, ConfigError> {
        let settings = match stages {
            Stages::All => {
                let home = self.home.clone();
                tokio::task::spawn_blocking(move || Config::load(&home))
                    .await
                    .unwrap_or_else(|e| Err(ConfigError::Invalid { path: "config.json".to_owned(), detail: e.to_string() }))?
                    .judge
            }
            Stages::ScriptOnly => JudgeConfig::default(),
        };
        let turn = Turn { user_text, assistant_text };
        let skipped = stages == Stages::ScriptOnly;
        let verdict =
            chain::judge(assistant_text, || self.ask_decision(&settings, turn, skipped), || self.ask_chat(&settings, turn, skipped)).await;
        if let Some(log) = &self.log {
            log.line(format_args!("judge: {conversation:?}: {} from {} ({:?})", verdict.verdict, verdict.source, verdict.reason));
        }
        Ok(verdict)
    }

    /// The first answer of `capability`'s routes through `pool` — the local routes, then
    /// the global pool's — or why there is none.
    async fn first_answer_of<T, F, Fut>(
        &self,
        pool: &RoutePool,
        capability: Capability,
        settings: &JudgeConfig,
        skipped: bool,
        mut call: F,
    ) -> Result<Answered<T>, Opinion>
    where
        F: FnMut(Route, Duration) -> Fut,
        Fut: Future<Output = Result<T, ProviderError>>,
    {
        if skipped {
            return Err(Opinion::Unavailable { reason: "skipped (script only)".to_owned() });
        }
        let kind = if capability == Capability::Decision { "decision" } else { "chat" };
        let deadline = RoutePool::deadline(settings);
        let mut failures = Vec::new();
        let no_local = settings.routes_of(capability).next().is_none();
        if let Some(answered) =
            pool.first_answer_until(settings.routes_of(capability), settings, deadline, &mut failures, |r, t| call(r.clone(), t)).await
        {
            return Ok(answered);
        }
        match &settings.global_pool {
            None if no_local => failures.push(format!("no {kind} route configured")),
            None => {}
            Some(global) => match self.global_routes_for(global, settings, deadline).await {
                Ok(routes) => {
                    let shared: Vec<Route> = routes.iter().filter(|r| r.protocol.capability() == capability).cloned().collect();
                    if shared.is_empty() && no_local {
                        failures.push(format!("no {kind} route configured, locally or in the global route pool"));
                    }
                    if let Some(answered) =
                        pool.first_answer_until(shared.iter(), settings, deadline, &mut failures, |r, t| call(r.clone(), t)).await
                    {
                        return Ok(answered);
                    }
                }
                Err(why) if no_local => failures.push(format!("global route pool unavailable ({why}) and no local {kind} route")),
                Err(why) => failures.push(format!("global route pool unavailable ({why}), so only the local routes were asked")),
            },
        }
        Err(Opinion::Unavailable { reason: failures.join(", ") })
    }

    /// The global pool's routes: the cached list while fresh, else a fetch bounded by the
    /// per-call timeout and what is left of `deadline`.
    async fn global_routes_for(&self, global: &GlobalPoolConfig, settings: &JudgeConfig, deadline: Instant) -> PoolRoutes {
        let retry_after = Duration::from_millis(settings.cooldown_ms);
        if let Some(known) = self.global_routes.fresh(global, Instant::now(), retry_after) {
            return known;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("the pool's {} ms deadline passed before it was asked", settings.pool_deadline_ms));
        }
        let fetched = route_pool::fetch(&self.client, global, Duration::from_millis(settings.call_timeout_ms).min(left)).await;
        self.global_routes.store(global, Instant::now(), fetched)
    }

    async fn ask_decision(&self, settings: &JudgeConfig, turn: Turn<'_>, skipped: bool) -> Opinion {
        let client = &self.client;
        let answered = self
            .first_answer_of(&self.decision_pool, Capability::Decision, settings, skipped, |route, timeout| async move {
                decision::ask(client, &route, turn, settings.goal_priors, timeout).await
            })
            .await;
        let answered = match answered {
            Ok(answered) => answered,
            Err(unavailable) => return unavailable,
        };
        let p = answered.answer.unfinished;
        let t = settings.threshold;
        let priors = answered.answer.priors;
        let said = format!("{} gives p(unfinished work) = {p:.2} (threshold {t:.2})", answered.route);
        if p >= t {
            Opinion::Decided { verdict: Decided::Continue, confidence: Some(p), reason: said, priors }
        } else if p <= 1.0 - t {
            Opinion::Decided { verdict: Decided::Done, confidence: Some(p), reason: said, priors }
        } else {
            Opinion::Unsure { reason: said, priors }
        }
    }

    async fn ask_chat(&self, settings: &JudgeConfig, turn: Turn<'_>, skipped: bool) -> Opinion {
        let client = &self.client;
        let answered = self
            .first_answer_of(&self.chat_pool, Capability::Chat, settings, skipped, |route, timeout| async move {
                chat::ask(client, &route, turn, timeout).await
            })
            .await;
        let answered = match answered {
            Ok(answered) => answered,
            Err(unavailable) => return unavailable,
        };
        let said = if answered.answer.reason.is_empty() {
            format!("{} answers {:?}", answered.route, answered.answer.verdict)
        } else {
            format!("{}: {}", answered.route, answered.answer.reason)
        };
        let decided = |verdict| Opinion::Decided { verdict, confidence: None, reason: said.clone(), priors: None };
        match answered.answer.verdict {
            ChatVerdict::Continue => decided(Decided::Continue),
            ChatVerdict::Done => decided(Decided::Done),
            ChatVerdict::Unsure => Opinion::Unsure { reason: said, priors: None },
        }
    }
}
