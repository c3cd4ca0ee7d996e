//! `herdr-companion mcp --http ADDR`: the MCP streamable HTTP transport on a loopback
//! address, at `http://ADDR/mcp`.
//!
//! Invariants (each refusal happens before the request reaches a tool):
//! - the listening address is loopback (127.0.0.0/8 or ::1), never another interface;
//! - every request carries `Authorization: Bearer <mcp.token of config.json>` (401 else);
//! - the `Host` header names this server (`127.0.0.1:PORT`, `localhost:PORT`,
//!   `[::1]:PORT`) and a present `Origin` is this server's own origin (403 else; rmcp's
//!   checks against DNS rebinding and cross-site pages);
//! - a request body is at most `MAX_MCP_HTTP_BODY_BYTES` (413 else).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use continuity_protocol::tools::MAX_MCP_HTTP_BODY_BYTES;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::server::PlannerTools;
use super::McpError;

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// Parses `--http`'s value and refuses anything but a loopback address.
pub fn loopback_address(text: &str) -> Result<SocketAddr, McpError> {
    let address: SocketAddr = text.parse().map_err(|_| McpError::BadAddress(text.to_owned()))?;
    if !address.ip().is_loopback() {
        return Err(McpError::NotLoopback(address));
    }
    Ok(address)
}

/// The `Host` values and origins a browser or client on this machine uses for `port`.
fn own_authorities(port: u16) -> (Vec<String>, Vec<String>) {
    let hosts: Vec<String> = ["127.0.0.1", "localhost", "[::1]"].iter().map(|h| format!("{h}:{port}")).collect();
    let origins = hosts.iter().map(|h| format!("http://{h}")).collect();
    (hosts, origins)
}

/// Serves MCP on `address` until SIGINT / SIGTERM.
pub async fn serve(address: SocketAddr, token: String, tools: PlannerTools) -> Result<(), McpError> {
    let listener = tokio::net::TcpListener::bind(address).await.map_err(|source| McpError::Bind { address, source })?;
    let local = listener.local_addr().map_err(|source| McpError::Bind { address, source })?;
    let (hosts, origins) = own_authorities(local.port());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .with_max_request_body_bytes(MAX_MCP_HTTP_BODY_BYTES);
    let service = StreamableHttpService::new(move || Ok(tools.clone()), LocalSessionManager::default().into(), config);
    let token: Arc<str> = token.into();
    let app = axum::Router::new()
        .nest_service(MCP_PATH, service)
        .layer(axum::middleware::from_fn_with_state(token, require_bearer));
    // Tests and users read the actual port (an ADDR with port 0 gets a free one) from here.
    eprintln!("herdr-companion mcp: serving MCP on http://{local}{MCP_PATH}");
    axum::serve(listener, app)
        .with_graceful_shutdown(stop_signal())
        .await
        .map_err(McpError::Serve)
}

/// Lets a request through only with the right bearer token.
async fn require_bearer(State(token): State<Arc<str>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if given.is_some_and(|given| same_secret(given.as_bytes(), token.as_bytes())) {
        return next.run(request).await;
    }
    let body = "missing or wrong bearer token: send `Authorization: Bearer <mcp.token>` with the token from config.json in the companion home";
    (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")], body).into_response()
}

/// Compares two secrets in time that depends only on their lengths.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len() && given.iter().zip(expected).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

async fn stop_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_are_served() {
        assert!(loopback_address("127.0.0.1:8787").is_ok());
        assert!(loopback_address("[::1]:0").is_ok());
        let refused = loopback_address("0.0.0.0:8787").expect_err("all interfaces").to_string();
        assert!(refused.contains("loopback"), "{refused}");
        assert!(loopback_address("192.168.1.5:8787").is_err());
        assert!(loopback_address("localhost:8787").expect_err("a name").to_string().contains("127.0.0.1:PORT"));
        assert!(same_secret(b"abc", b"abc") && !same_secret(b"abc", b"abd") && !same_secret(b"ab", b"abc"));
    }
}
