//! The turn-end judge's provider clients (a leaf: they know the providers' HTTP APIs and
//! nothing of the chain that asks them).
//!
//! - [`decision`]: typed evaluation, TypeSafe System One style (`POST <url>/systemone`):
//!   one question, an answer probability in [0, 1].
//! - [`chat`]: an OpenAI-compatible chat completion (`POST …/v1/chat/completions`) asked
//!   for a one-line JSON verdict.
//! - [`route_pool`]: the authenticated global route pool (`GET <url>` → `{routes}`).
//!
//! Invariants: every call has its own timeout (the caller's per-call setting); a body is
//! read up to [`MAX_ANSWER_BYTES`] and never trusted: a status other than 2xx, a body that
//! is not the documented shape, or a number outside [0, 1] is a [`ProviderError`], never
//! a verdict. Texts are cut to their newest [`MAX_USER_CHARS`] / [`MAX_ASSISTANT_CHARS`]
//! before they leave the machine. The key is sent only as `Authorization: Bearer`, and
//! only to the url config.json names: the client ([`http_client`]) follows no redirect (a
//! 3xx is [`ProviderError::Status`]) and uses no proxy; urls are checked by a URL parser
//! when the configuration is read (`crate::config::check_url`: no userinfo, plain http
//! only to loopback). No error carries a url or a key.

pub mod chat;
pub mod decision;
pub mod guidance;
pub mod route_pool;

use std::time::Duration;

use serde_json::Value;
use thiserror::Error;

use crate::config::Route;

/// Characters of the user's message sent to a provider (its end is kept).
pub const MAX_USER_CHARS: usize = 6_000;
/// Characters of the assistant's reply sent to a provider (its end is kept).
pub const MAX_ASSISTANT_CHARS: usize = 12_000;
/// The largest answer body read.
pub const MAX_ANSWER_BYTES: usize = 256 * 1024;

/// The turn a provider is asked about.
#[derive(Debug, Clone, Copy)]
pub struct Turn<'a> {
    /// The user's message (may be empty).
    pub user_text: &'a str,
    /// The assistant's reply.
    pub assistant_text: &'a str,
}

/// Why a provider gave no usable answer.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ProviderError {
    /// No answer within the per-call timeout.
    #[error("no answer within {0} ms")]
    Timeout(u64),
    /// Connecting or sending failed.
    #[error("unreachable ({0})")]
    Transport(String),
    /// A non-2xx status.
    #[error("HTTP {0}")]
    Status(u16),
    /// A 2xx answer that is not the documented shape.
    #[error("unusable answer ({0})")]
    Garbage(String),
}

/// The newest `max` characters of `text`.
pub fn tail_chars(text: &str, max: usize) -> &str {
    let count = text.chars().count();
    if count <= max {
        return text;
    }
    let skip = count - max;
    let start = text.char_indices().nth(skip).map_or(text.len(), |(at, _)| at);
    &text[start..]
}

/// The one HTTP client of the provider calls: rustls, no proxy (the environment is not a
/// source of provider settings, J5, and a key must not travel through a proxy the user did
/// not name), and no redirects: a 3xx is an answer like any other non-2xx, so a key is only
/// ever sent to the url config.json names.
pub fn http_client() -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .use_rustls_tls()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("herdr-companion/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// POSTs `body` to `url` for `route` and returns the answer's JSON.
async fn post_json(client: &reqwest::Client, route: &Route, url: &str, body: &Value, timeout: Duration) -> Result<Value, ProviderError> {
    let mut request = client.post(url).json(body);
    if !route.api_key.is_empty() {
        request = request.bearer_auth(&route.api_key);
    }
    exchange_json(request, timeout, MAX_ANSWER_BYTES).await
}

/// Sends `request` within `timeout` and reads a 2xx answer of at most `max_bytes` as JSON.
async fn exchange_json(request: reqwest::RequestBuilder, timeout: Duration, max_bytes: usize) -> Result<Value, ProviderError> {
    let millis = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    let request = request.timeout(timeout);
    let exchange = async {
        let mut response = request.send().await.map_err(|e| transport(&e, millis))?;
        let status = response.status();
        if !status.is_success() {
            return Err(ProviderError::Status(status.as_u16()));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| transport(&e, millis))? {
            if bytes.len() + chunk.len() > max_bytes {
                return Err(ProviderError::Garbage(format!("body over {max_bytes} bytes")));
            }
            bytes.extend_from_slice(&chunk);
        }
        serde_json::from_slice::<Value>(&bytes).map_err(|e| ProviderError::Garbage(format!("not JSON: {e}")))
    };
    // reqwest's own timeout covers connect to the end of the body; this one also bounds
    // anything reqwest does not (name resolution on some platforms).
    match tokio::time::timeout(timeout, exchange).await {
        Ok(answer) => answer,
        Err(_) => Err(ProviderError::Timeout(millis)),
    }
}

fn transport(error: &reqwest::Error, millis: u64) -> ProviderError {
    if error.is_timeout() {
        ProviderError::Timeout(millis)
    } else {
        // Only the kind, never the URL (it may carry a token in a query string).
        let kind = if error.is_connect() {
            "connection failed"
        } else if error.is_body() {
            "body broken"
        } else {
            "request failed"
        };
        ProviderError::Transport(kind.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A one-shot HTTP server on a free loopback port that answers every connection with
    /// `answer`; returns its port and a count of the connections it got.
    fn server(answer: String) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = std::sync::Arc::clone(&hits);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut head = [0u8; 4096];
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let _ = stream.read(&mut head);
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        (port, hits)
    }

    /// Issue 23: redirects were followed (reqwest's default policy), so a route could send
    /// the request, and its bearer key, on to another host. A 302 is now an answer.
    #[tokio::test]
    async fn a_redirect_to_another_host_is_not_followed() {
        let (elsewhere, elsewhere_hits) =
            server("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}".to_owned());
        let redirect = format!(
            "HTTP/1.1 302 Found\r\nLocation: http://localhost:{elsewhere}/stolen\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        let (port, hits) = server(redirect);
        let client = http_client().expect("client");
        let route = Route {
            name: "r".into(),
            protocol: crate::config::RouteProtocol::Decision,
            url: format!("http://127.0.0.1:{port}/v1"),
            model: "m".into(),
            api_key: "sk-key".into(),
        };
        let answer = post_json(&client, &route, &route.url, &serde_json::json!({}), Duration::from_secs(5)).await;
        assert_eq!(answer, Err(ProviderError::Status(302)));
        assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(elsewhere_hits.load(std::sync::atomic::Ordering::SeqCst), 0, "the redirect's target was never asked");
    }

    /// No provider error names the url or the key, whatever failed.
    #[tokio::test]
    async fn provider_errors_name_neither_the_url_nor_the_key() {
        let client = http_client().expect("client");
        let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = closed.local_addr().expect("address").port();
        drop(closed);
        let (garbage, _) = server("HTTP/1.1 200 OK\r\nContent-Length: 13\r\nConnection: close\r\n\r\nsecret-sk-key".to_owned());
        for url in [format!("http://127.0.0.1:{port}/v1?token=sk-key"), format!("http://127.0.0.1:{garbage}/v1?token=sk-key")] {
            let route = Route {
                name: "r".into(),
                protocol: crate::config::RouteProtocol::Decision,
                url: url.clone(),
                model: "m".into(),
                api_key: "sk-key".into(),
            };
            let error = post_json(&client, &route, &url, &serde_json::json!({}), Duration::from_secs(5)).await.expect_err("an error");
            let text = error.to_string();
            assert!(!text.contains("sk-key") && !text.contains("127.0.0.1"), "{text}");
        }
    }
}
