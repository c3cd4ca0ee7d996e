//! A capability's route pool (SPEC J6): the routes of one capability in priority order,
//! each skipped while it cools down after a failure.
//!
//! Invariants:
//! - Route order is priority: a later route is asked only after every earlier one failed
//!   in this call or is cooling down; the first route that answers ends the call.
//! - Each call is bounded by the per-call timeout, and the whole pool by its own deadline:
//!   a call never gets more than what is left of the deadline, and no route is started
//!   once the deadline has passed.
//! - A route that failed is skipped for the cooldown; a route that answers is healthy
//!   again at once. A call cut short by the pool's deadline (not by its own timeout) does
//!   not count against its route.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::config::{JudgeConfig, Route};
use crate::providers::ProviderError;

/// The cooldowns of one capability's routes, by route name and URL.
#[derive(Debug, Default)]
pub struct RoutePool {
    /// Until when each failed route is skipped.
    cooling: Mutex<HashMap<(String, String), Instant>>,
}

/// A route's answer and which route gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct Answered<T> {
    /// The route's name.
    pub route: String,
    /// Its answer.
    pub answer: T,
}

impl RoutePool {
    /// When a pool started now must have its answer (`pool_deadline_ms` from now).
    pub fn deadline(settings: &JudgeConfig) -> Instant {
        Instant::now() + Duration::from_millis(settings.pool_deadline_ms)
    }

    /// Asks `routes` in order through `call(route, timeout)` until one answers; the error
    /// lists what happened to each route.
    pub async fn first_answer<'r, T, F, Fut>(
        &self,
        routes: impl IntoIterator<Item = &'r Route>,
        settings: &JudgeConfig,
        call: F,
    ) -> Result<Answered<T>, String>
    where
        F: FnMut(&'r Route, Duration) -> Fut,
        Fut: Future<Output = Result<T, ProviderError>>,
    {
        let mut failures = Vec::new();
        if let Some(answered) = self.first_answer_until(routes, settings, Self::deadline(settings), &mut failures, call).await {
            return Ok(answered);
        }
        if failures.is_empty() {
            failures.push("no route configured".to_owned());
        }
        Err(failures.join(", "))
    }

    /// [`RoutePool::first_answer`] against a `deadline` the caller holds (so the local
    /// routes and a global pool's share one), adding what happened to each route that gave
    /// no answer to `failures`.
    pub async fn first_answer_until<'r, T, F, Fut>(
        &self,
        routes: impl IntoIterator<Item = &'r Route>,
        settings: &JudgeConfig,
        deadline: Instant,
        failures: &mut Vec<String>,
        mut call: F,
    ) -> Option<Answered<T>>
    where
        F: FnMut(&'r Route, Duration) -> Fut,
        Fut: Future<Output = Result<T, ProviderError>>,
    {
        let call_timeout = Duration::from_millis(settings.call_timeout_ms);
        for route in routes {
            let key = (route.name.clone(), route.url.clone());
            let now = Instant::now();
            if self.cooling_until(&key).is_some_and(|until| until > now) {
                failures.push(format!("{} is cooling down after a failure", route.name));
                continue;
            }
            let left = deadline.saturating_duration_since(now);
            if left.is_zero() {
                failures.push(format!("the pool's {} ms deadline passed before {} was asked", settings.pool_deadline_ms, route.name));
                break;
            }
            let cut_by_deadline = left < call_timeout;
            match call(route, call_timeout.min(left)).await {
                Ok(answer) => {
                    self.set(&key, None);
                    return Some(Answered { route: route.name.clone(), answer });
                }
                Err(error) => {
                    if !(cut_by_deadline && matches!(error, ProviderError::Timeout(_))) {
                        self.set(&key, Some(Instant::now() + Duration::from_millis(settings.cooldown_ms)));
                    }
                    failures.push(format!("{} failed: {error}", route.name));
                }
            }
        }
        None
    }

    fn cooling_until(&self, key: &(String, String)) -> Option<Instant> {
        self.cooling.lock().unwrap_or_else(PoisonError::into_inner).get(key).copied()
    }

    fn set(&self, key: &(String, String), until: Option<Instant>) {
        let mut map = self.cooling.lock().unwrap_or_else(PoisonError::into_inner);
        match until {
            Some(until) => map.insert(key.clone(), until),
            None => map.remove(key),
        };
    }
}
