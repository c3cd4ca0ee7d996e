//! The global route pool's routes as the judge uses them (SPEC J5): fetched from the
//! pool with its token only when the local routes of a capability gave no answer, kept
//! for the pool's `cache_ttl_ms`, and named `global:<name>` so a verdict's reason says
//! where a route came from.
//!
//! Invariants:
//! - A route list is used for at most `cache_ttl_ms` after it was fetched; a failed fetch
//!   is remembered for the cooldown (at most as long), so a pool that is down costs one
//!   attempt per cooldown, not one per turn.
//! - An entry belongs to one pool url and token: editing either in `config.json` makes
//!   the next use fetch again.
//! - A failure is never routes: the judge then has its local routes and the script, and
//!   the reason names the failure (fail closed).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::config::{GlobalPoolConfig, Route};
use crate::providers::ProviderError;

/// What the last fetch from a pool gave: its routes, or why there are none.
pub type PoolRoutes = Result<Arc<[Route]>, String>;

/// The last fetch of the global pool's routes.
#[derive(Debug, Default)]
pub struct GlobalRouteCache {
    /// The last outcome and what it belongs to.
    entry: Mutex<Option<Cached>>,
}

#[derive(Debug)]
struct Cached {
    /// The pool url and token it was fetched with.
    source: (String, String),
    /// When it was fetched.
    fetched_at: Instant,
    /// The routes (already renamed `global:<name>`) or the failure.
    outcome: PoolRoutes,
}

impl GlobalRouteCache {
    /// The remembered outcome for `pool` when it is still fresh at `now`: routes for the
    /// pool's `cache_ttl_ms`, a failure for `retry_after` (capped at the same).
    pub fn fresh(&self, pool: &GlobalPoolConfig, now: Instant, retry_after: Duration) -> Option<PoolRoutes> {
        let entry = self.entry.lock().unwrap_or_else(PoisonError::into_inner);
        let cached = entry.as_ref().filter(|c| c.source.0 == pool.url && c.source.1 == pool.token)?;
        let ttl = Duration::from_millis(pool.cache_ttl_ms);
        let keep = if cached.outcome.is_ok() { ttl } else { retry_after.min(ttl) };
        (now.saturating_duration_since(cached.fetched_at) < keep).then(|| cached.outcome.clone())
    }

    /// Remembers what the fetch at `now` gave: `fetched` is the pool's answer as read
    /// (routes renamed here) or its error (described here).
    pub fn store(&self, pool: &GlobalPoolConfig, now: Instant, fetched: Result<Vec<Route>, ProviderError>) -> PoolRoutes {
        let outcome: PoolRoutes = match fetched {
            Ok(routes) => Ok(routes.into_iter().map(|route| Route { name: format!("global:{}", route.name), ..route }).collect()),
            Err(ProviderError::Status(status @ (401 | 403))) => {
                Err(format!("the pool refused this machine's token (HTTP {status}); check judge.global_pool.token"))
            }
            Err(error) => Err(error.to_string()),
        };
        *self.entry.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(Cached { source: (pool.url.clone(), pool.token.clone()), fetched_at: now, outcome: outcome.clone() });
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RouteProtocol;

    fn pool(token: &str) -> GlobalPoolConfig {
        GlobalPoolConfig { url: "https://routes.example.test/v1/routes".to_owned(), token: token.to_owned(), cache_ttl_ms: 10_000 }
    }

    fn route(name: &str) -> Route {
        Route {
            name: name.to_owned(),
            protocol: RouteProtocol::Decision,
            url: "https://a.test".to_owned(),
            model: "m".to_owned(),
            api_key: String::new(),
        }
    }

    #[test]
    fn routes_are_kept_for_the_ttl_and_failures_for_the_cooldown() {
        let cache = GlobalRouteCache::default();
        let at = Instant::now();
        let cooldown = Duration::from_secs(2);
        assert_eq!(cache.fresh(&pool("t"), at, cooldown), None, "nothing before the first fetch");
        let stored = cache.store(&pool("t"), at, Ok(vec![route("shared")])).expect("routes");
        assert_eq!(stored[0].name, "global:shared", "pool routes are named as such");
        let later = |ms| at + Duration::from_millis(ms);
        assert!(cache.fresh(&pool("t"), later(9_999), cooldown).is_some_and(|r| r.is_ok()), "fresh within the ttl");
        assert_eq!(cache.fresh(&pool("t"), later(10_000), cooldown), None, "fetched again after the ttl");
        assert_eq!(cache.fresh(&pool("other token"), later(1), cooldown), None, "another token is another pool");

        let failed = cache.store(&pool("t"), at, Err(ProviderError::Status(401)));
        assert!(failed.expect_err("refused").contains("check judge.global_pool.token"));
        assert!(cache.fresh(&pool("t"), later(1_999), cooldown).is_some_and(|r| r.is_err()), "a failure is remembered for the cooldown");
        assert_eq!(cache.fresh(&pool("t"), later(2_000), cooldown), None, "and retried after it");
        assert_eq!(cache.fresh(&pool("t"), later(1), Duration::ZERO), None, "no cooldown: retried at once");
    }

    #[test]
    fn a_poisoned_cache_still_remembers_and_answers() {
        // Before: `.lock().ok()` made a poisoned cache forget every fetch silently.
        let cache = std::sync::Arc::new(GlobalRouteCache::default());
        let poisoner = std::sync::Arc::clone(&cache);
        let _ = std::thread::spawn(move || {
            let _held = poisoner.entry.lock();
            panic!("poison the cache's lock");
        })
        .join();
        assert!(cache.entry.is_poisoned());
        let at = Instant::now();
        cache.store(&pool("t"), at, Ok(vec![route("shared")])).expect("routes");
        assert!(cache.fresh(&pool("t"), at, Duration::from_secs(2)).is_some_and(|r| r.is_ok()), "the poisoned cache still answers");
    }
}
