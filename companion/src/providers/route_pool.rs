//! The authenticated global route pool of SPEC J5 (a leaf: it knows the pool's HTTP API).
//!
//! `GET <global_pool.url>` with `Authorization: Bearer <global_pool.token>` answers
//! `{"routes": [{name, protocol, url, model, api_key}, …]}`: the same route objects as the
//! local `config.json`, in priority order. The product document puts the pool behind an
//! authenticated Cloudflare Worker; this shape is the companion's own contract for it.
//!
//! Invariants: the answer is read up to [`MAX_POOL_BYTES`] and never trusted — a status
//! other than 2xx, a body that is not that shape, an unknown key in a route, more than
//! [`bounds::MAX_POOL_ROUTES`] routes, or a route that fails the local routes' checks
//! ([`check_routes`]) spoils the whole answer (no route of it is used). The token is sent
//! only as `Authorization: Bearer` and only to the pool's url.

use std::time::Duration;

use serde::Deserialize;

use super::{exchange_json, ProviderError};
use crate::config::{bounds, check_routes, GlobalPoolConfig, Route};

/// The largest pool answer read (32 routes need a few KB).
pub const MAX_POOL_BYTES: usize = 64 * 1024;

/// The pool's answer.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PoolAnswer {
    /// The shared routes in priority order.
    routes: Vec<Route>,
}

/// Fetches the pool's routes within `timeout`.
pub async fn fetch(client: &reqwest::Client, pool: &GlobalPoolConfig, timeout: Duration) -> Result<Vec<Route>, ProviderError> {
    let request = client.get(&pool.url).bearer_auth(&pool.token);
    let answer = exchange_json(request, timeout, MAX_POOL_BYTES).await?;
    read_answer(answer)
}

/// Reads and checks `{routes: […]}`.
pub fn read_answer(answer: serde_json::Value) -> Result<Vec<Route>, ProviderError> {
    let PoolAnswer { routes } = serde_json::from_value(answer)
        .map_err(|e| ProviderError::Garbage(format!("not a route list: {}", crate::config::without_values(&e))))?;
    if routes.len() > bounds::MAX_POOL_ROUTES {
        return Err(ProviderError::Garbage(format!("{} routes, more than {}", routes.len(), bounds::MAX_POOL_ROUTES)));
    }
    check_routes(&routes, "routes").map_err(ProviderError::Garbage)?;
    Ok(routes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn route(name: &str, url: &str) -> serde_json::Value {
        json!({"name": name, "protocol": "decision", "url": url, "model": "m", "api_key": "k"})
    }

    /// A pool's answer carries keys: an error about it names the field, never a value.
    #[test]
    fn a_refused_pool_answer_echoes_no_key() {
        let refused = |answer| read_answer(answer).expect_err("refused").to_string();
        let typed = refused(
            json!({"routes": [{"name": "a", "protocol": "decision", "url": "https://a.test", "model": "m", "api_key": ["sk-POOLKEY"]}]}),
        );
        let variant = refused(json!({"routes": [{"name": "a", "protocol": "sk-POOLKEY", "url": "https://a.test", "model": "m"}]}));
        let url = refused(json!({"routes": [route("a", "https://sk-POOLKEY@a.test/v1")]}));
        for text in [typed, variant, url] {
            assert!(!text.contains("POOLKEY") && text.contains("unusable answer"), "{text}");
        }
    }

    #[test]
    fn a_pool_answer_is_checked_like_local_routes() {
        let routes = read_answer(json!({"routes": [route("a", "https://a.test/v1"), route("b", "http://127.0.0.1:9/v1")]})).expect("valid");
        assert_eq!(routes.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        let refused = |answer| read_answer(answer).expect_err("refused").to_string();
        assert!(refused(json!({"routes": [route("a", "http://10.0.0.2/v1")]})).contains("http:// only for 127.0.0.1"));
        assert!(refused(json!({"routes": [route("a", "https://a.test"), route("a", "https://b.test")]})).contains("names must be unique"));
        assert!(refused(json!({"routes": [{"name": "a", "protocol": "decision", "url": "https://a.test", "model": "m", "api_kye": "k"}]}))
            .contains("unknown field `api_kye`"));
        assert!(refused(json!({"routes": [{"name": "a", "protocol": "grpc", "url": "https://a.test", "model": "m"}]}))
            .contains("a value is not one of the known ones (expected one of `decision`"));
        assert!(refused(json!({"route": []})).contains("not a route list"));
        let many: Vec<_> = (0..=bounds::MAX_POOL_ROUTES).map(|i| route(&format!("r{i}"), "https://a.test")).collect();
        assert!(refused(json!({"routes": many})).contains("more than 32"));
    }
}
