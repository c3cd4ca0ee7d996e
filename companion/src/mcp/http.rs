//! `herdr-companion mcp --http ADDR [--public-url URL]`: the MCP streamable HTTP transport
//! on a loopback address, at `http://ADDR/mcp`; with `--public-url`, also the OAuth 2.1
//! authorization server ([`super::oauth`]) for a client that reaches it through an HTTPS
//! tunnel the user runs.
//!
//! Invariants (each refusal happens before the request reaches a tool):
//! - the listening address is loopback (127.0.0.0/8 or ::1), never another interface — a
//!   tunnel runs in front for the public side;
//! - every request to `/mcp` carries `Authorization: Bearer <mcp.token of config.json>`,
//!   or, with `--public-url`, a live OAuth access token issued for this public URL's
//!   resource (401 else; with `--public-url` the 401 names the protected-resource
//!   metadata, RFC 9728). No mode serves `/mcp` without one;
//! - without `--public-url`: the `Host` header names this server (`127.0.0.1:PORT`,
//!   `localhost:PORT`, `[::1]:PORT`) and a present `Origin` is this server's own origin
//!   (403 else; rmcp's checks against DNS rebinding and cross-site pages); with it: `Host`
//!   is the public host, and a present `Origin` is the public origin or a page on this
//!   machine (403 else, on every path, the OAuth endpoints too);
//! - a request body is at most `MAX_MCP_HTTP_BODY_BYTES` (413 else);
//! - timeouts on every connection: a request's head must arrive within [`HEADER_TIMEOUT`]
//!   of the connection opening or of the previous answer (so an idle keep-alive connection
//!   is closed after it too), and its body within [`BODY_TIMEOUT`] (408 else). A tool call
//!   itself is bounded by the runtime's own request limit, not here;
//! - at most [`MAX_CONNECTIONS`] connections at once: one more is closed unread.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use continuity_protocol::tools::MAX_MCP_HTTP_BODY_BYTES;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::oauth::endpoints::{self, OAuthServer};
use super::oauth::{same_secret, PublicUrl};
use super::server::PlannerTools;
use super::McpError;

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// How long a connection may take to send a request's head (start line and headers),
/// counted from its opening or from the end of the previous answer: the header-read and the
/// idle keep-alive timeout in one.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a request's body may take to arrive once its head has.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Most connections served at once; one more is closed at once. A planner's client keeps a
/// few (a tunnel may open one per request), far below a process's descriptor limit.
pub const MAX_CONNECTIONS: usize = 256;

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

/// Who may use `/mcp`: the static bearer, and with `--public-url` OAuth access tokens.
#[derive(Clone)]
pub struct HttpAuth {
    /// `mcp.token` of config.json.
    pub token: String,
    /// The authorization server, with `--public-url`.
    pub oauth: Option<Arc<OAuthServer>>,
}

/// Serves MCP on `address` until SIGINT / SIGTERM.
pub async fn serve(address: SocketAddr, auth: HttpAuth, tools: PlannerTools) -> Result<(), McpError> {
    let listener = tokio::net::TcpListener::bind(address).await.map_err(|source| McpError::Bind { address, source })?;
    serve_with(listener, auth, tools, Timeouts { header: HEADER_TIMEOUT, body: BODY_TIMEOUT, connections: MAX_CONNECTIONS }).await
}

/// The connection timeouts and cap of [`serve_with`] (tests use short and small ones).
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// [`HEADER_TIMEOUT`].
    pub header: Duration,
    /// [`BODY_TIMEOUT`].
    pub body: Duration,
    /// [`MAX_CONNECTIONS`].
    pub connections: usize,
}

/// The hosts and origins rmcp's own checks allow: this server's loopback authorities, or
/// with a public URL its host, its origin and pages on this machine.
fn allowed_authorities(port: u16, public: Option<&PublicUrl>) -> (Vec<String>, Vec<String>) {
    match public {
        None => own_authorities(port),
        Some(public) => {
            let origins = [
                "http://127.0.0.1:*",
                "http://localhost:*",
                "http://[::1]:*",
                "https://127.0.0.1:*",
                "https://localhost:*",
                "https://[::1]:*",
            ];
            let mut allowed: Vec<String> = origins.iter().map(|o| (*o).to_owned()).collect();
            allowed.push(public.origin().to_owned());
            (vec![public.authority().to_owned()], allowed)
        }
    }
}

/// The whole HTTP application: `/mcp` behind the bearer check, and with a public URL the
/// OAuth endpoints beside it (also under the URL's path prefix, for a tunnel that keeps it).
fn application(local: SocketAddr, auth: HttpAuth, tools: PlannerTools, body_within: Duration) -> axum::Router {
    let public = auth.oauth.as_ref().map(|o| o.public.clone());
    let (hosts, origins) = allowed_authorities(local.port(), public.as_ref());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .with_max_request_body_bytes(MAX_MCP_HTTP_BODY_BYTES);
    let service = StreamableHttpService::new(move || Ok(tools.clone()), LocalSessionManager::default().into(), config);
    let gate = Arc::new(Gate { token: auth.token.into(), oauth: auth.oauth.clone() });
    let mcp = axum::Router::new().nest_service(MCP_PATH, service).layer(axum::middleware::from_fn_with_state(gate, require_bearer));
    match (&auth.oauth, &public) {
        (Some(oauth), Some(public)) => {
            let routes = mcp.merge(endpoints::router(Arc::clone(oauth)));
            let routes =
                if public.prefix().is_empty() { routes } else { axum::Router::new().merge(routes.clone()).nest(public.prefix(), routes) };
            routes
                .layer(axum::middleware::from_fn_with_state(body_within, read_body_within))
                .layer(axum::middleware::from_fn_with_state(Arc::new(public.clone()), require_public_host))
        }
        _ => mcp.layer(axum::middleware::from_fn_with_state(body_within, read_body_within)),
    }
}

/// [`serve`] with chosen timeouts.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    auth: HttpAuth,
    tools: PlannerTools,
    timeouts: Timeouts,
) -> Result<(), McpError> {
    let local = listener.local_addr().map_err(|source| McpError::Bind { address: SocketAddr::from(([127, 0, 0, 1], 0)), source })?;
    let public = auth.oauth.as_ref().map(|o| o.public.resource());
    let app = application(local, auth, tools, timeouts.body);
    // Tests and users read the actual port (an ADDR with port 0 gets a free one) from here.
    eprintln!("herdr-companion mcp: serving MCP on http://{local}{MCP_PATH}");
    if let Some(resource) = public {
        eprintln!("herdr-companion mcp: public URL {resource} with OAuth; approve sign-ins with `herdr-companion oauth pending` / `oauth approve CODE`");
    }
    let stop = stop_signal();
    tokio::pin!(stop);
    let places = Arc::new(tokio::sync::Semaphore::new(timeouts.connections));
    loop {
        let stream = tokio::select! {
            _ = &mut stop => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors or a connection reset before accept: wait, go on.
                    eprintln!("herdr-companion mcp: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        // Over the cap the connection is closed unread: it holds no descriptor for long.
        let Ok(place) = Arc::clone(&places).try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let _place = place;
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(timeouts.header).keep_alive(true);
            // A connection's error (a timeout, a reset) ends that connection only.
            let _ = http.serve_connection(hyper_util::rt::TokioIo::new(stream), service).await;
        });
    }
}

/// Reads the whole body within `within` (408 else) and at most `MAX_MCP_HTTP_BODY_BYTES`
/// (413 else) before the request goes on: a client that sends its head and then trickles
/// or withholds the body holds nothing for long.
async fn read_body_within(State(within): State<Duration>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = match tokio::time::timeout(within, axum::body::to_bytes(body, MAX_MCP_HTTP_BODY_BYTES)).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(_)) => {
            let body = format!("the request body is over {MAX_MCP_HTTP_BODY_BYTES} bytes or broken; send a smaller request");
            return (StatusCode::PAYLOAD_TOO_LARGE, body).into_response();
        }
        Err(_) => {
            let body = format!("the request body did not arrive within {} ms; send the whole request at once", within.as_millis());
            return (StatusCode::REQUEST_TIMEOUT, [(header::CONNECTION, "close")], body).into_response();
        }
    };
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes))).await
}

/// What [`require_bearer`] accepts.
struct Gate {
    /// The static bearer.
    token: Arc<str>,
    /// OAuth access tokens for this resource, with `--public-url`.
    oauth: Option<Arc<OAuthServer>>,
}

/// Lets a request through only with the static bearer token or, with a public URL, a live
/// access token issued for this resource.
async fn require_bearer(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    let given = request.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| {
        let (scheme, token) = v.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim().to_owned())
    });
    if given.as_deref().is_some_and(|given| same_secret(given.as_bytes(), gate.token.as_bytes())) {
        return next.run(request).await;
    }
    let Some(oauth) = &gate.oauth else {
        let body =
            "missing or wrong bearer token: send `Authorization: Bearer <mcp.token>` with the token from config.json in the companion home";
        return (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer".to_owned())], body).into_response();
    };
    let metadata = oauth.public.resource_metadata_url();
    let refusal = match given {
        None => None,
        Some(token) => match oauth.accepts(token).await {
            Ok(()) => return next.run(request).await,
            Err(why) => Some(why),
        },
    };
    let challenge = match refusal {
        None => format!("Bearer resource_metadata=\"{metadata}\", scope=\"{}\"", super::oauth::SCOPE),
        Some(why) => format!("Bearer resource_metadata=\"{metadata}\", error=\"invalid_token\", error_description=\"{why}\""),
    };
    let body = format!(
        "{}: sign in with OAuth (metadata at {metadata}) or send the static `Authorization: Bearer <mcp.token>` from config.json",
        refusal.unwrap_or("no access token")
    );
    (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, challenge)], body).into_response()
}

/// With a public URL: `Host` must be the public host, and a present `Origin` the public
/// origin or a page on this machine, on every path (403 else).
async fn require_public_host(State(public): State<Arc<PublicUrl>>, request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !public.host_matches(host) {
        let body = format!(
            "Host {host:?} is not {}, the host of --public-url: the tunnel must pass the public Host header through unchanged (or correct --public-url)",
            public.authority()
        );
        return (StatusCode::FORBIDDEN, body).into_response();
    }
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let text = origin.to_str().unwrap_or("");
        if !public.origin_allowed(text) {
            let body = format!("Origin {text:?} is neither {} nor a page on this machine; the request is refused", public.origin());
            return (StatusCode::FORBIDDEN, body).into_response();
        }
    }
    next.run(request).await
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

    /// What the server sent before it closed the connection (within 5 s, else a failure).
    async fn until_closed(stream: &mut tokio::net::TcpStream) -> String {
        use tokio::io::AsyncReadExt;
        let mut answer = Vec::new();
        match tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await {
            Ok(_) => String::from_utf8_lossy(&answer).into_owned(),
            Err(_) => panic!("the server kept the connection open: {:?}", String::from_utf8_lossy(&answer)),
        }
    }

    /// Issue 23: `axum::serve` ran hyper without a timer, so a client that connected and
    /// sent nothing, half a head, or a head and part of its body, and an idle keep-alive
    /// connection, were held for ever. Each is now closed after its timeout.
    #[tokio::test]
    async fn silent_slow_and_idle_http_connections_are_closed() {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        let tools = PlannerTools::new(super::super::runtime_client::RuntimeClient::new("/nonexistent/companion.sock".into()));
        let timeouts = Timeouts { header: Duration::from_millis(300), body: Duration::from_millis(300), connections: MAX_CONNECTIONS };
        tokio::spawn(serve_with(listener, HttpAuth { token: "secret".to_owned(), oauth: None }, tools, timeouts));
        let connect = || tokio::net::TcpStream::connect(("127.0.0.1", port));

        let mut silent = connect().await.expect("connect");
        assert_eq!(until_closed(&mut silent).await, "", "a silent connection is closed without an answer");

        let mut half_head = connect().await.expect("connect");
        half_head.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.expect("write");
        let answer = until_closed(&mut half_head).await;
        assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 408"), "{answer}");

        let mut half_body = connect().await.expect("connect");
        let head = format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer secret\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"");
        half_body.write_all(head.as_bytes()).await.expect("write");
        let answer = until_closed(&mut half_body).await;
        assert!(answer.starts_with("HTTP/1.1 408") && answer.contains("did not arrive within 300 ms"), "{answer}");

        let mut idle = connect().await.expect("connect");
        let request = format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 2\r\n\r\n{{}}");
        idle.write_all(request.as_bytes()).await.expect("write");
        let answer = until_closed(&mut idle).await;
        assert!(answer.starts_with("HTTP/1.1 401"), "answered, then the idle keep-alive connection closed: {answer}");
    }

    /// Review of stop 40: nothing bounded how many connections the server held at once, so
    /// a flood of them through a public tunnel, each alive until its head timeout, could use
    /// up the process's descriptors. One over the cap is closed at once; a place frees when
    /// a connection ends.
    #[tokio::test]
    async fn a_connection_over_the_cap_is_closed_at_once_and_a_place_frees_when_one_ends() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        let tools = PlannerTools::new(super::super::runtime_client::RuntimeClient::new("/nonexistent/companion.sock".into()));
        let limits = Timeouts { header: Duration::from_millis(800), body: Duration::from_millis(800), connections: 2 };
        tokio::spawn(serve_with(listener, HttpAuth { token: "secret".to_owned(), oauth: None }, tools, limits));
        let connect = || tokio::net::TcpStream::connect(("127.0.0.1", port));
        let (first, second) = (connect().await.expect("connect"), connect().await.expect("connect"));
        let started = tokio::time::Instant::now();
        let mut third = connect().await.expect("connect");
        assert_eq!(until_closed(&mut third).await, "", "the connection over the cap is closed without an answer");
        assert!(started.elapsed() < Duration::from_millis(600), "closed at once, not after the head timeout: {:?}", started.elapsed());
        drop((first, second));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let (status, _) = exchange(port, "POST", MCP_PATH, &[("Host", &format!("127.0.0.1:{port}"))], "{}").await;
            if status == 401 {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "no place came free: {status}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// One HTTP/1.1 exchange on a fresh connection: (status, headers and body as text).
    async fn exchange(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
        let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        stream.write_all(format!("{head}\r\n{body}").as_bytes()).await.expect("write");
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await.expect("answered").expect("read");
        let text = String::from_utf8_lossy(&answer).into_owned();
        let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
        (status, text)
    }

    fn json_body(answer: &str) -> serde_json::Value {
        let body = answer.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
        serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {answer}"))
    }

    fn attribute<'a>(page: &'a str, name: &str) -> &'a str {
        let start = page.find(&format!("{name}=\"")).expect("attribute") + name.len() + 2;
        &page[start..start + page[start..].find('"').expect("end")]
    }

    /// Issue 24: with `--public-url`, a client finds the OAuth metadata from the 401,
    /// registers, and gets a code only after the workstation approved; its token opens
    /// `/mcp`, a token for another resource does not, the static bearer still does, and
    /// only the public Host (and the public or a loopback Origin) is served.
    #[tokio::test]
    async fn with_a_public_url_oauth_tokens_for_this_resource_and_the_static_bearer_open_mcp() {
        use crate::mcp::oauth::store::{OAuthStore, DB_FILE};
        use crate::mcp::oauth::{base64url, PublicUrl};
        use sha2::{Digest, Sha256};
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join(DB_FILE);
        let mut cli_store = OAuthStore::open_path(&db).expect("open");
        let public = PublicUrl::parse("https://herdr.example.com").expect("url");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        let tools = PlannerTools::new(super::super::runtime_client::RuntimeClient::new("/nonexistent/companion.sock".into()));
        let oauth = OAuthServer::new(public, OAuthStore::open_path(&db).expect("open"));
        let auth = HttpAuth { token: "s".repeat(40), oauth: Some(oauth) };
        tokio::spawn(serve_with(
            listener,
            auth,
            tools,
            Timeouts { header: Duration::from_secs(5), body: Duration::from_secs(5), connections: MAX_CONNECTIONS },
        ));
        let host = ("Host", "herdr.example.com");
        let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        let mcp_headers_owned = |bearer: String| async move {
            let headers = [
                host,
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Authorization", bearer.as_str()),
            ];
            exchange(port, "POST", "/mcp", &headers, initialize).await
        };

        let (status, answer) = exchange(port, "POST", "/mcp", &[host], initialize).await;
        assert_eq!(status, 401, "{answer}");
        assert!(answer.contains(r#"resource_metadata="https://herdr.example.com/.well-known/oauth-protected-resource/mcp""#), "{answer}");
        let (status, answer) = exchange(port, "GET", "/.well-known/oauth-protected-resource/mcp", &[host], "").await;
        assert_eq!(status, 200, "{answer}");
        let resource = json_body(&answer);
        assert_eq!(resource["resource"], "https://herdr.example.com/mcp");
        assert_eq!(resource["authorization_servers"][0], "https://herdr.example.com");
        let (_, answer) = exchange(port, "GET", "/.well-known/oauth-authorization-server", &[host], "").await;
        let metadata = json_body(&answer);
        assert_eq!(metadata["code_challenge_methods_supported"], serde_json::json!(["S256"]));
        assert_eq!(metadata["token_endpoint"], "https://herdr.example.com/oauth/token");

        let (status, answer) =
            exchange(port, "GET", "/.well-known/oauth-authorization-server", &[("Host", format!("127.0.0.1:{port}").as_str())], "").await;
        assert!(status == 403 && answer.contains("the tunnel must pass the public Host header through"), "{answer}");
        let (status, _) =
            exchange(port, "GET", "/.well-known/oauth-authorization-server", &[host, ("Origin", "https://evil.example")], "").await;
        assert_eq!(status, 403, "a foreign Origin is refused");
        let (status, _) =
            exchange(port, "GET", "/.well-known/oauth-authorization-server", &[host, ("Origin", "http://localhost:6274")], "").await;
        assert_eq!(status, 200, "a page on this machine may ask");

        let redirect = "https://chatgpt.com/connector_platform_oauth_redirect";
        let registration = format!(r#"{{"client_name":"ChatGPT <b>","redirect_uris":["{redirect}"],"token_endpoint_auth_method":"none"}}"#);
        let (status, answer) =
            exchange(port, "POST", "/oauth/register", &[host, ("Content-Type", "application/json")], &registration).await;
        assert_eq!(status, 201, "{answer}");
        let client_id = json_body(&answer)["client_id"].as_str().expect("client_id").to_owned();
        let (status, answer) = exchange(port, "POST", "/oauth/register", &[host], r#"{"redirect_uris":["http://evil.example/cb"]}"#).await;
        assert!(status == 400 && json_body(&answer)["error"] == "invalid_redirect_uri", "{answer}");
        let (status, _) = exchange(port, "POST", "/oauth/register", &[host], &"x".repeat(20_000)).await;
        assert_eq!(status, 413, "the body cap");

        let verifier = "v".repeat(64);
        let challenge = base64url(&Sha256::digest(verifier.as_bytes()));
        let query: String = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs([
                ("response_type", "code"),
                ("client_id", client_id.as_str()),
                ("redirect_uri", redirect),
                ("code_challenge", challenge.as_str()),
                ("code_challenge_method", "S256"),
                ("state", "xyz"),
                ("resource", "https://herdr.example.com/mcp"),
            ])
            .finish();
        let (status, page) = exchange(port, "GET", &format!("/oauth/authorize?{query}"), &[host], "").await;
        assert_eq!(status, 200, "{page}");
        assert!(
            page.contains("ChatGPT &lt;b&gt;") && page.contains("chatgpt.com") && page.contains("herdr-companion oauth approve"),
            "{page}"
        );
        let (request, code) = (attribute(&page, "data-request").to_owned(), attribute(&page, "data-code").to_owned());
        let (_, answer) = exchange(port, "GET", &format!("/oauth/status?request={request}"), &[host], "").await;
        assert_eq!(json_body(&answer)["status"], "waiting", "no code before the workstation approves");
        let (_, answer) = exchange(port, "GET", "/oauth/status?request=guessed", &[host], "").await;
        assert_eq!(json_body(&answer)["status"], "gone");

        cli_store.decide(&code, true, crate::mcp::oauth::now_secs()).expect("approve on the workstation");
        let (_, answer) = exchange(port, "GET", &format!("/oauth/status?request={request}"), &[host], "").await;
        let to = json_body(&answer)["redirect_to"].as_str().expect("redirect").to_owned();
        assert!(to.starts_with(redirect) && to.contains("state=xyz"), "{to}");
        let code = url::Url::parse(&to).expect("url").query_pairs().find(|(k, _)| k == "code").expect("code").1.into_owned();
        let form = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs([
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", redirect),
                ("client_id", &client_id),
                ("code_verifier", &verifier),
            ])
            .finish();
        let form_type = ("Content-Type", "application/x-www-form-urlencoded");
        let (status, answer) = exchange(port, "POST", "/oauth/token", &[host, form_type], &form).await;
        assert_eq!(status, 200, "{answer}");
        assert!(answer.to_ascii_lowercase().contains("cache-control: no-store"), "{answer}");
        let tokens = json_body(&answer);
        let access = tokens["access_token"].as_str().expect("access").to_owned();
        assert_eq!(tokens["expires_in"], 3600);
        let (status, answer) = mcp_headers_owned(format!("Bearer {access}")).await;
        assert_eq!(status, 200, "the access token opens /mcp: {answer}");
        let (status, answer) = mcp_headers_owned(format!("Bearer {}", "s".repeat(40))).await;
        assert_eq!(status, 200, "the static bearer still does: {answer}");
        let now = crate::mcp::oauth::now_secs();
        let elsewhere = cli_store.grant_directly(&client_id, "https://other.example.com/mcp", now).expect("grant");
        let (status, answer) = mcp_headers_owned(format!("Bearer {}", elsewhere.access_token)).await;
        assert!(status == 401 && answer.contains("another resource"), "{answer}");

        let refresh =
            format!("grant_type=refresh_token&client_id={client_id}&refresh_token={}", tokens["refresh_token"].as_str().expect("refresh"));
        let (status, answer) = exchange(port, "POST", "/oauth/token", &[host, form_type], &refresh).await;
        assert_eq!(status, 200, "{answer}");
        let rotated = json_body(&answer)["access_token"].as_str().expect("access").to_owned();
        let (status, answer) = exchange(port, "POST", "/oauth/token", &[host, form_type], &form).await;
        assert!(status == 400 && json_body(&answer)["error"] == "invalid_grant", "a code works once: {answer}");
        let (status, _) = mcp_headers_owned(format!("Bearer {rotated}")).await;
        assert_eq!(status, 401, "a replayed code revokes what it granted");

        let other = cli_store.grant_directly(&client_id, "https://herdr.example.com/mcp", now).expect("grant");
        let (status, _) = mcp_headers_owned(format!("Bearer {}", other.access_token)).await;
        assert_eq!(status, 200);
        let revoke = format!("token={}&client_id={client_id}", other.access_token);
        let (status, _) = exchange(port, "POST", "/oauth/revoke", &[host, form_type], &revoke).await;
        assert_eq!(status, 200);
        let (status, answer) = mcp_headers_owned(format!("Bearer {}", other.access_token)).await;
        assert!(status == 401 && answer.contains("error=\"invalid_token\""), "a revoked token is refused: {answer}");
    }

    /// A public URL with a path prefix: the routes answer with and without it (a tunnel may
    /// keep or strip it), and the metadata names the prefixed URLs.
    #[tokio::test]
    async fn a_public_url_with_a_path_prefix_is_served_with_and_without_the_prefix() {
        use crate::mcp::oauth::store::OAuthStore;
        let dir = tempfile::tempdir().expect("tempdir");
        let public = PublicUrl::parse("https://box.tail1.ts.net/herdr").expect("url");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        let tools = PlannerTools::new(super::super::runtime_client::RuntimeClient::new("/nonexistent/companion.sock".into()));
        let oauth = OAuthServer::new(public, OAuthStore::open_path(&dir.path().join("oauth.db")).expect("open"));
        let auth = HttpAuth { token: "s".repeat(40), oauth: Some(oauth) };
        tokio::spawn(serve_with(
            listener,
            auth,
            tools,
            Timeouts { header: Duration::from_secs(5), body: Duration::from_secs(5), connections: MAX_CONNECTIONS },
        ));
        let host = ("Host", "box.tail1.ts.net");
        for path in [
            "/.well-known/oauth-authorization-server/herdr",
            "/herdr/.well-known/oauth-authorization-server",
            "/.well-known/oauth-authorization-server",
        ] {
            let (status, answer) = exchange(port, "GET", path, &[host], "").await;
            assert_eq!(status, 200, "{path}: {answer}");
            assert_eq!(json_body(&answer)["registration_endpoint"], "https://box.tail1.ts.net/herdr/oauth/register", "{path}");
        }
        for path in ["/.well-known/oauth-protected-resource/herdr/mcp", "/herdr/.well-known/oauth-protected-resource"] {
            let (status, answer) = exchange(port, "GET", path, &[host], "").await;
            assert_eq!(status, 200, "{path}: {answer}");
            assert_eq!(json_body(&answer)["resource"], "https://box.tail1.ts.net/herdr/mcp", "{path}");
        }
        for path in ["/herdr/mcp", "/mcp"] {
            let (status, answer) = exchange(port, "POST", path, &[host], "{}").await;
            assert_eq!(status, 401, "{path}: {answer}");
            assert!(answer.contains("https://box.tail1.ts.net/.well-known/oauth-protected-resource/herdr/mcp"), "{answer}");
        }
    }
}
