//! `herdr-companion mcp`: the planner tools as an MCP server (official Rust SDK, `rmcp`),
//! on stdio by default or on streamable HTTP with `--http 127.0.0.1:PORT`.
//!
//! On stdio every request is judged on its own (no handshake gate, see
//! [`STDIO_ASSUMED_VERSION`]): OpenAI's Secure MCP Tunnel writes the requests of any number
//! of connector sessions — stateless 2026-07-28 ones with `_meta`, legacy ones after their
//! own `initialize` — onto the one process it spawned.
//!
//! A front end, not part of the runtime: it is a client of the running runtime over its
//! Unix socket ([`runtime_client`]) and serves what the runtime's tool registry
//! (`tools.list`, `tools.call`) says ([`server`]). It reaches the runtime only through the
//! socket — it names no runtime module (`companion/tests/it/layering.rs`) — so MCP, the
//! later JSON bridge and any other front end share one registry.
//!
//! - [`server`]: the `rmcp` `ServerHandler` (MCP ⇄ `tools.*`);
//! - [`http`]: loopback-only HTTP with bearer token, Host / Origin checks and a body cap;
//! - [`config`]: the bearer token in `config.json` (0600 or refused);
//! - [`oauth`]: with `--public-url`, the OAuth 2.1 authorization server (consent given on
//!   the workstation with `herdr-companion oauth approve CODE`) in front of `/mcp`.

pub mod config;
pub mod http;
pub mod oauth;
pub mod runtime_client;
pub mod served;
pub mod server;

use std::net::SocketAddr;
use std::path::PathBuf;

use rmcp::model::{ClientCapabilities, Implementation, InitializeRequestParams, ProtocolVersion};
use thiserror::Error;

use crate::paths::CompanionHome;
use runtime_client::RuntimeClient;
use server::PlannerTools;

/// What `herdr-companion mcp` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct McpOptions {
    /// `--home DIR`.
    pub home: Option<PathBuf>,
    /// `--http ADDR`: serve streamable HTTP there instead of stdio.
    pub http: Option<String>,
    /// `--public-url URL`: the HTTPS address a tunnel serves `--http` at; turns on OAuth.
    pub public_url: Option<String>,
}

/// Why the MCP server could not run.
#[derive(Debug, Error)]
pub enum McpError {
    /// No companion home.
    #[error(transparent)]
    NoHome(#[from] crate::paths::NoHome),
    /// `--http` is not an address.
    #[error("--http {0} is not an IP address with a port; use 127.0.0.1:PORT (or [::1]:PORT)")]
    BadAddress(String),
    /// `--http` is not a loopback address.
    #[error("--http {0} is not a loopback address; the MCP server only listens on this machine: use 127.0.0.1:PORT (or [::1]:PORT)")]
    NotLoopback(SocketAddr),
    /// The bearer token is not usable.
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    /// `--public-url` is refused.
    #[error(transparent)]
    PublicUrl(#[from] oauth::PublicUrlError),
    /// `--public-url` without `--http`.
    #[error("--public-url needs --http 127.0.0.1:PORT: the tunnel forwards to that loopback address")]
    PublicUrlWithoutHttp,
    /// `oauth.db` is not usable.
    #[error(transparent)]
    OAuthStore(#[from] oauth::store::StoreError),
    /// The address could not be bound.
    #[error("cannot listen on {address}: {source}; pick another port")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// What failed.
        source: std::io::Error,
    },
    /// The server stopped with an error.
    #[error("the MCP server stopped: {0}")]
    Serve(std::io::Error),
    /// The stdio session failed.
    #[error("the MCP session on stdio failed: {0}")]
    Session(String),
}

/// The protocol version a request on stdio is answered in when it names none and no
/// `initialize` came before it on this pipe: the oldest revision ChatGPT's connectors speak.
pub const STDIO_ASSUMED_VERSION: ProtocolVersion = ProtocolVersion::V_2025_06_18;

/// Who the stdio server assumes it talks to before any `initialize`.
///
/// stdio is not one session: OpenAI's Secure MCP Tunnel (`tunnel-client --mcp.command`)
/// spawns this process once and writes every connector request onto its stdin. So the
/// server is served *directly* — no handshake gate — and judges each request on its own:
/// a 2026-07-28 request by the protocol version and client capabilities in its `_meta`
/// (refused, with what is missing, when they are not there); an `initialize` (any number of
/// them, from any connector session) by the usual negotiation, which also makes its version
/// the one assumed for the legacy requests after it; a legacy request before any
/// `initialize` (its handshake went to an earlier process) as [`STDIO_ASSUMED_VERSION`].
fn stdio_legacy_peer() -> InitializeRequestParams {
    InitializeRequestParams::new(ClientCapabilities::default(), Implementation::new("unnamed stdio client", "0"))
        .with_protocol_version(STDIO_ASSUMED_VERSION)
}

/// Runs the MCP server until its client goes away (stdio) or a stop signal (HTTP).
pub fn run(options: McpOptions) -> Result<(), McpError> {
    let home = CompanionHome::resolve(options.home)?;
    // Check the HTTP settings before anything starts, so a refusal is immediate.
    let http = match &options.http {
        Some(text) => {
            let address = http::loopback_address(text)?;
            let public = options.public_url.as_deref().map(oauth::PublicUrl::parse).transpose()?;
            let token = config::mcp_token(&home)?;
            if token.created {
                eprintln!("herdr-companion mcp: wrote a new bearer token to {} (mode 0600)", token.path.display());
            }
            let oauth = match public {
                Some(public) => Some(oauth::endpoints::OAuthServer::new(public, oauth::store::OAuthStore::open(&home)?)),
                None => None,
            };
            Some((address, http::HttpAuth { token: token.token, oauth }))
        }
        None if options.public_url.is_some() => return Err(McpError::PublicUrlWithoutHttp),
        None => None,
    };
    // Like the browser's host, start a runtime when none runs, so a client that starts
    // before the browser works; the tools say what to do when this fails.
    if let Err(error) = crate::host::connect_or_start_runtime(&home) {
        eprintln!("herdr-companion mcp: {error}");
    }
    // For `doctor`: where this HTTP server listens, while it does (removed when it stops).
    let _served = http.as_ref().and_then(|(address, auth)| {
        let public = auth.oauth.as_ref().map(|oauth| oauth.public.issuer());
        served::Record::write(&home, *address, public.as_deref())
    });
    let tools = PlannerTools::new(RuntimeClient::new(home.socket_path()));
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(McpError::Serve)?;
    runtime.block_on(async move {
        match http {
            Some((address, auth)) => http::serve(address, auth, tools).await,
            None => {
                let running = rmcp::service::serve_directly(tools, rmcp::transport::stdio(), Some(stdio_legacy_peer()));
                running.waiting().await.map_err(|e| McpError::Session(e.to_string()))?;
                Ok(())
            }
        }
    })
}
