//! The authorization server's HTTP endpoints, mounted beside `/mcp` when `--public-url` is
//! given. Every URL they advertise is built from the [`PublicUrl`]; every error is an OAuth
//! JSON error body (RFC 6749 §5.2) or, where the client cannot be trusted with a redirect,
//! a page that says what went wrong; every body is capped at [`MAX_OAUTH_BODY_BYTES`].
//!
//! | path | what |
//! |---|---|
//! | `/.well-known/oauth-protected-resource[/prefix]/mcp` | RFC 9728 metadata of the MCP endpoint |
//! | `/.well-known/oauth-authorization-server[/prefix]` | RFC 8414 metadata |
//! | `POST /oauth/register` | RFC 7591 dynamic client registration |
//! | `GET /oauth/authorize` | the consent page: client, redirect host, short code |
//! | `GET /oauth/status?request=ID` | the page's poll: waiting, pushed out, or where to go |
//! | `POST /oauth/token` | authorization code (PKCE S256) and refresh token grants |
//! | `POST /oauth/revoke` | RFC 7009 revocation |

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use serde_json::{json, Value};

use super::store::{AuthorizeParams, AuthorizeRefusal, ClientCredentials, NewClient, OAuthError, OAuthStore, PollAnswer};
use super::{
    is_loopback_host, now_secs, AuthMethod, PublicUrl, MAX_CLIENT_NAME_CHARS, MAX_OAUTH_BODY_BYTES, MAX_PENDING, MAX_REDIRECT_URIS,
    MAX_REDIRECT_URI_BYTES, PENDING_SECS, SCOPE,
};
use crate::mcp::http::MCP_PATH;

/// RFC 9728's well-known path.
pub const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// RFC 8414's well-known path.
pub const SERVER_METADATA_PATH: &str = "/.well-known/oauth-authorization-server";
/// Dynamic client registration.
pub const REGISTER_PATH: &str = "/oauth/register";
/// The consent page.
pub const AUTHORIZE_PATH: &str = "/oauth/authorize";
/// The consent page's poll (relative to the page: `status`).
pub const STATUS_PATH: &str = "/oauth/status";
/// The token endpoint.
pub const TOKEN_PATH: &str = "/oauth/token";
/// The revocation endpoint.
pub const REVOKE_PATH: &str = "/oauth/revoke";

/// The authorization server: the public URL and `oauth.db`.
pub struct OAuthServer {
    /// `--public-url`.
    pub public: PublicUrl,
    /// `oauth.db`, used only on the blocking pool.
    store: Mutex<OAuthStore>,
}

impl OAuthServer {
    /// The server for `public`, on `store`.
    pub fn new(public: PublicUrl, store: OAuthStore) -> Arc<Self> {
        Arc::new(Self { public, store: Mutex::new(store) })
    }

    /// Runs `work` on the store, on tokio's blocking pool (rusqlite blocks), at the current time.
    pub async fn with_store<T: Send + 'static>(
        self: &Arc<Self>,
        work: impl FnOnce(&mut OAuthStore, i64) -> Result<T, OAuthError> + Send + 'static,
    ) -> Result<T, OAuthError> {
        let server = Arc::clone(self);
        let done = tokio::task::spawn_blocking(move || {
            let mut store = server.store.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            work(&mut store, now_secs())
        })
        .await;
        done.unwrap_or_else(|e| Err(OAuthError::new("server_error", format!("the oauth.db call stopped ({e}); try again"))))
    }

    /// True when `token` is a live access token issued for this server's resource; the
    /// answer's `Err` says why not.
    pub async fn accepts(self: &Arc<Self>, token: String) -> Result<(), &'static str> {
        let resource = self.public.resource();
        match self.with_store(move |store, now| store.access_token_resource(&token, now)).await {
            Ok(Some(bound)) if bound == resource => Ok(()),
            Ok(Some(_)) => Err("the access token was issued for another resource (RFC 8707); sign in to this server"),
            Ok(None) => Err("the access token is unknown, expired or revoked; refresh it or sign in again"),
            Err(_) => Err("oauth.db could not be read; try again"),
        }
    }
}

/// The routes of the authorization server (the caller mounts `/mcp` beside them).
pub fn router(server: Arc<OAuthServer>) -> axum::Router {
    let prefix = server.public.prefix().to_owned();
    let mut router = axum::Router::new()
        .route(RESOURCE_METADATA_PATH, get(resource_metadata))
        .route(&format!("{RESOURCE_METADATA_PATH}{prefix}{MCP_PATH}"), get(resource_metadata))
        .route(SERVER_METADATA_PATH, get(server_metadata))
        .route(REGISTER_PATH, post(register))
        .route(AUTHORIZE_PATH, get(authorize).head(no_head))
        .route(STATUS_PATH, get(status))
        .route(TOKEN_PATH, post(token))
        .route(REVOKE_PATH, post(revoke));
    if !prefix.is_empty() {
        router = router.route(&format!("{SERVER_METADATA_PATH}{prefix}"), get(server_metadata));
    }
    router.with_state(server)
}

/// A JSON answer that no cache keeps.
fn json_answer(status: StatusCode, body: &Value) -> Response {
    let headers = [(header::CONTENT_TYPE, "application/json"), (header::CACHE_CONTROL, "no-store"), (header::PRAGMA, "no-cache")];
    (status, headers, body.to_string()).into_response()
}

/// RFC 6749 §5.2's error body (`WWW-Authenticate: Basic` with 401, §5.2 `invalid_client`).
fn error_answer(error: &OAuthError) -> Response {
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::BAD_REQUEST);
    let mut answer = json_answer(status, &json!({"error": error.code, "error_description": error.description}));
    if status == StatusCode::UNAUTHORIZED {
        answer.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Basic realm=\"herdr-companion\""));
    }
    answer
}

/// A 413 error answer when the body is over the cap.
fn over_cap(body: &Bytes) -> Option<Response> {
    if body.len() <= MAX_OAUTH_BODY_BYTES {
        return None;
    }
    let error = OAuthError::new("invalid_request", format!("the request body is over {MAX_OAUTH_BODY_BYTES} bytes"));
    let mut answer = error_answer(&error);
    *answer.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
    Some(answer)
}

/// Form or query pairs; a parameter given twice is refused (RFC 6749 §3.1).
fn pairs(encoded: &[u8]) -> Result<HashMap<String, String>, OAuthError> {
    let mut found = HashMap::new();
    for (key, value) in url::form_urlencoded::parse(encoded) {
        if found.insert(key.to_string(), value.into_owned()).is_some() {
            return Err(OAuthError::new("invalid_request", format!("parameter {key} is given more than once")));
        }
    }
    Ok(found)
}

async fn resource_metadata(State(server): State<Arc<OAuthServer>>) -> Response {
    let public = &server.public;
    json_answer(
        StatusCode::OK,
        &json!({
            "resource": public.resource(),
            "authorization_servers": [public.issuer()],
            "bearer_methods_supported": ["header"],
            "scopes_supported": [SCOPE],
            "resource_name": "Herdr (herdr-continuity companion)",
        }),
    )
}

async fn server_metadata(State(server): State<Arc<OAuthServer>>) -> Response {
    let public = &server.public;
    json_answer(
        StatusCode::OK,
        &json!({
            "issuer": public.issuer(),
            "authorization_endpoint": public.endpoint(AUTHORIZE_PATH),
            "token_endpoint": public.endpoint(TOKEN_PATH),
            "registration_endpoint": public.endpoint(REGISTER_PATH),
            "revocation_endpoint": public.endpoint(REVOKE_PATH),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": AuthMethod::ALL,
            "revocation_endpoint_auth_methods_supported": AuthMethod::ALL,
            "scopes_supported": [SCOPE],
            "authorization_response_iss_parameter_supported": true,
        }),
    )
}

/// Why a redirect URI cannot be registered: `https://` with a host, or `http://` to this
/// machine (RFC 8252 §7.3), no fragment, no user.
pub fn redirect_uri_problem(uri: &str) -> Option<String> {
    if uri.len() > MAX_REDIRECT_URI_BYTES {
        return Some(format!("a redirect URI is over {MAX_REDIRECT_URI_BYTES} bytes"));
    }
    let Ok(url) = url::Url::parse(uri) else {
        return Some(format!("{uri} is not an absolute URL"));
    };
    let host = url.host_str().unwrap_or("");
    let allowed = match url.scheme() {
        "https" => !host.is_empty(),
        "http" => is_loopback_host(host),
        _ => false,
    };
    if !allowed {
        return Some(format!("{uri} is neither https:// nor http:// to 127.0.0.1, [::1] or localhost"));
    }
    if url.fragment().is_some() || !url.username().is_empty() || url.password().is_some() {
        return Some(format!("{uri} has a fragment or a user; neither is allowed"));
    }
    None
}

/// Validates an RFC 7591 registration request.
pub fn parse_registration(body: &[u8]) -> Result<NewClient, OAuthError> {
    let metadata = |text: String| OAuthError::new("invalid_client_metadata", text);
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| metadata(format!("the body is not JSON ({e}); send the client metadata as a JSON object")))?;
    let Some(object) = value.as_object() else {
        return Err(metadata("the body must be a JSON object of client metadata".into()));
    };
    let strings = |key: &str| -> Result<Option<Vec<String>>, OAuthError> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| item.as_str().map(str::to_owned).ok_or_else(|| metadata(format!("{key} must be an array of strings"))))
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(metadata(format!("{key} must be an array of strings"))),
        }
    };
    let redirect_uris = strings("redirect_uris")?.unwrap_or_default();
    if redirect_uris.is_empty() || redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(OAuthError::new("invalid_redirect_uri", format!("redirect_uris must hold 1 to {MAX_REDIRECT_URIS} URIs")));
    }
    if let Some(problem) = redirect_uris.iter().find_map(|u| redirect_uri_problem(u)) {
        return Err(OAuthError::new("invalid_redirect_uri", problem));
    }
    let name = match object.get("client_name") {
        None | Some(Value::Null) => "unnamed client".to_owned(),
        Some(Value::String(name)) => name.trim().to_owned(),
        Some(_) => return Err(metadata("client_name must be a string".into())),
    };
    if name.is_empty() || name.chars().count() > MAX_CLIENT_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(metadata(format!("client_name must be 1 to {MAX_CLIENT_NAME_CHARS} characters without control characters")));
    }
    if let Some(types) = strings("grant_types")? {
        if let Some(other) = types.iter().find(|t| !matches!(t.as_str(), "authorization_code" | "refresh_token")) {
            return Err(metadata(format!("grant type {other} is not supported; use authorization_code and refresh_token")));
        }
    }
    if let Some(types) = strings("response_types")? {
        if let Some(other) = types.iter().find(|t| *t != "code") {
            return Err(metadata(format!("response type {other} is not supported; use code")));
        }
    }
    // RFC 7591 §2: when absent, the method is client_secret_basic.
    let auth_method = match object.get("token_endpoint_auth_method") {
        None | Some(Value::Null) => AuthMethod::ClientSecretBasic,
        Some(Value::String(method)) => AuthMethod::parse(method).ok_or_else(|| {
            metadata(format!("token_endpoint_auth_method {method} is not supported; use one of {}", AuthMethod::ALL.join(", ")))
        })?,
        Some(_) => return Err(metadata("token_endpoint_auth_method must be a string".into())),
    };
    Ok(NewClient { name, redirect_uris, auth_method })
}

async fn register(State(server): State<Arc<OAuthServer>>, body: Bytes) -> Response {
    if let Some(answer) = over_cap(&body) {
        return answer;
    }
    let client = match parse_registration(&body) {
        Ok(client) => client,
        Err(error) => return error_answer(&error),
    };
    match server.with_store(move |store, now| store.register(client, now)).await {
        Ok(made) => {
            let mut body = json!({
                "client_id": made.client_id,
                "client_id_issued_at": made.issued_at,
                "client_name": made.client.name,
                "redirect_uris": made.client.redirect_uris,
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": made.client.auth_method.as_str(),
                "scope": SCOPE,
            });
            if let Some(secret) = made.client_secret {
                body["client_secret"] = json!(secret);
                body["client_secret_expires_at"] = json!(0);
            }
            json_answer(StatusCode::CREATED, &body)
        }
        Err(error) => error_answer(&error),
    }
}

/// Escapes text for HTML.
fn html_escape(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '&' => "&amp;".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            '"' => "&quot;".to_owned(),
            '\'' => "&#39;".to_owned(),
            c => c.to_string(),
        })
        .collect()
}

/// An HTML page with the consent page's headers (no framing, no referrer, no cache).
fn html_page(status: StatusCode, title: &str, body: &str) -> Response {
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
         <title>{title}</title><style>body{{font:16px system-ui,sans-serif;max-width:36em;margin:3em auto;padding:0 1em}}\
         code,.code{{font-family:ui-monospace,monospace}}.code{{font-size:2em;letter-spacing:.1em}}</style></head><body>{body}</body></html>",
        title = html_escape(title)
    );
    let headers = [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CACHE_CONTROL, "no-store"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        ),
    ];
    (status, headers, page).into_response()
}

/// The page for a request that cannot go back to its client.
fn refusal_page(error: &OAuthError) -> Response {
    let body = format!(
        "<h1>Sign-in refused</h1><p id=\"error\" data-error=\"{code}\">{text}</p><p lang=\"zh-CN\">登录请求被拒绝：{text}</p>",
        code = error.code,
        text = html_escape(&error.description)
    );
    html_page(StatusCode::BAD_REQUEST, "Sign-in refused", &body)
}

/// `HEAD /oauth/authorize`: 405. axum would answer HEAD with the GET handler, and a link
/// checker, an unfurler or a prefetch of a pasted URL would start a consent request.
async fn no_head() -> Response {
    (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "GET")]).into_response()
}

/// `GET /oauth/authorize`: starts a consent request and shows what the user approves on
/// the workstation; the page polls `status` and then goes where it is told.
async fn authorize(State(server): State<Arc<OAuthServer>>, uri: Uri) -> Response {
    let query = match pairs(uri.query().unwrap_or("").as_bytes()) {
        Ok(query) => query,
        Err(error) => return refusal_page(&error),
    };
    let take = |key: &str| query.get(key).cloned();
    let params = AuthorizeParams {
        client_id: take("client_id"),
        redirect_uri: take("redirect_uri"),
        response_type: take("response_type"),
        code_challenge: take("code_challenge"),
        code_challenge_method: take("code_challenge_method"),
        state: take("state"),
        resource: take("resource"),
    };
    let (resource, issuer) = (server.public.resource(), server.public.issuer());
    let begun = server
        .with_store(move |store, now| {
            Ok(match store.begin(&params, &resource, &issuer, now) {
                // A refusal on the page also says when strangers are pushing requests out.
                Err(AuthorizeRefusal::Page(mut error)) => {
                    if let Ok(Some(note)) = store.strangers_note(now) {
                        error.description = format!("{}. {note}", error.description);
                    }
                    Err(AuthorizeRefusal::Page(error))
                }
                other => other,
            })
        })
        .await
        .unwrap_or_else(|error| Err(AuthorizeRefusal::Page(error)));
    let begun = match begun {
        Ok(begun) => begun,
        Err(AuthorizeRefusal::Page(error)) => return refusal_page(&error),
        Err(AuthorizeRefusal::Redirect(to)) => return (StatusCode::FOUND, [(header::LOCATION, to)]).into_response(),
    };
    let redirect_host = url::Url::parse(&begun.redirect_uri).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default();
    let minutes = PENDING_SECS / 60;
    let body = format!(
        "<main data-request=\"{request}\" data-code=\"{code}\">\
         <h1>Approve on your workstation</h1>\
         <p><b>{client}</b> asks to use Herdr on your workstation through herdr-companion and to return to <b>{host}</b>.</p>\
         <p>Code:</p><p class=\"code\" id=\"code\">{code}</p>\
         <p>Nothing is granted from this page. If you started this sign-in, run on the workstation:</p>\
         <p><code>herdr-companion oauth approve {code}</code></p>\
         <p>(or <code>herdr-companion oauth deny {code}</code>). This page continues by itself within a few seconds of the decision; \
         the request expires in {minutes} minutes.</p>\
         <p lang=\"zh-CN\"><b>{client}</b> 请求通过 herdr-companion 使用你工作站上的 Herdr，并返回 <b>{host}</b>。此页面本身不授予任何权限。\
         如果是你发起的登录，请在工作站上运行 <code>herdr-companion oauth approve {code}</code>（拒绝：<code>herdr-companion oauth deny {code}</code>）。\
         决定后几秒内此页面会自动继续；请求在 {minutes} 分钟后过期。</p>\
         <p id=\"status\" role=\"status\">Waiting for the decision… / 等待决定…</p></main>\
         <script>(function () {{\
         var main = document.querySelector('main'); var status = document.getElementById('status');\
         var deadline = Date.now() + {wait_ms};\
         function poll() {{\
           fetch('status?request=' + encodeURIComponent(main.dataset.request), {{cache: 'no-store'}})\
             .then(function (r) {{ return r.json(); }})\
             .then(function (a) {{\
               if (a.redirect_to) {{ status.textContent = 'Returning to the client… / 正在返回…'; location.replace(a.redirect_to); return; }}\
               if (a.status === 'gone') {{ status.textContent = 'This request is no longer waiting; start the sign-in again. / 此请求已失效，请重新登录。'; return; }}\
               if (a.status === 'pushed_out') {{ status.textContent = 'At least {max_pending} newer sign-in requests came before this one was decided, so it was pushed out (' + a.pushed_out_recently + ' in the last {minutes} minutes); someone else may know this tunnel URL. Start the sign-in again and approve the new code right away; a new tunnel URL stops them (README, \\u201cThrough your own HTTPS tunnel\\u201d). / 在决定之前又来了 {max_pending} 个新的登录请求，此请求已被挤出（最近 {minutes} 分钟内共 ' + a.pushed_out_recently + ' 个）；可能有其他人知道此隧道地址。请重新登录，并立即批准新的代码；更换隧道地址可阻止他们（见 README“Through your own HTTPS tunnel”）。'; return; }}\
               later();\
             }}, later);\
         }}\
         function later() {{ if (Date.now() < deadline) {{ setTimeout(poll, 2000); }} }}\
         setTimeout(poll, 1000);\
         }})();</script>",
        request = html_escape(&begun.request_id),
        code = html_escape(&begun.user_code),
        client = html_escape(&begun.client_name),
        host = html_escape(&redirect_host),
        wait_ms = (PENDING_SECS + 60) * 1000,
        max_pending = MAX_PENDING,
    );
    html_page(StatusCode::OK, "Approve on your workstation", &body)
}

/// `GET /oauth/status?request=ID`: the consent page's poll.
async fn status(State(server): State<Arc<OAuthServer>>, uri: Uri) -> Response {
    let query = match pairs(uri.query().unwrap_or("").as_bytes()) {
        Ok(query) => query,
        Err(error) => return error_answer(&error),
    };
    let Some(request) = query.get("request").cloned() else {
        return error_answer(&OAuthError::new("invalid_request", "request is missing; the consent page sends it"));
    };
    let issuer = server.public.issuer();
    let answer = server.with_store(move |store, now| {
        let answer = store.poll(&request, &issuer, now)?;
        let recently = if answer == PollAnswer::PushedOut { store.pushed_out_recently(now)? } else { 0 };
        Ok((answer, recently))
    });
    match answer.await {
        Ok((PollAnswer::Waiting(expires_in), _)) => json_answer(StatusCode::OK, &json!({"status": "waiting", "expires_in": expires_in})),
        Ok((PollAnswer::Approved(to), _)) => json_answer(StatusCode::OK, &json!({"status": "approved", "redirect_to": to})),
        Ok((PollAnswer::Refused(to), _)) => json_answer(StatusCode::OK, &json!({"status": "refused", "redirect_to": to})),
        Ok((PollAnswer::Gone, _)) => json_answer(StatusCode::OK, &json!({"status": "gone"})),
        Ok((PollAnswer::PushedOut, recently)) => {
            json_answer(StatusCode::OK, &json!({"status": "pushed_out", "pushed_out_recently": recently}))
        }
        Err(error) => error_answer(&error),
    }
}

/// The client's credentials: HTTP Basic (RFC 6749 §2.3.1, each part form-encoded) or the form.
fn credentials(headers: &HeaderMap, form: &HashMap<String, String>) -> Result<ClientCredentials, OAuthError> {
    let basic = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| {
        let (scheme, rest) = v.split_once(' ')?;
        scheme.eq_ignore_ascii_case("basic").then(|| rest.trim().to_owned())
    });
    let Some(basic) = basic else {
        return Ok(ClientCredentials { client_id: form.get("client_id").cloned(), client_secret: form.get("client_secret").cloned() });
    };
    let bad = || OAuthError::new("invalid_client", "the Basic authorization header is not base64 of client_id:client_secret");
    let decoded = base64::engine::general_purpose::STANDARD.decode(basic).map_err(|_| bad())?;
    let decoded = String::from_utf8(decoded).map_err(|_| bad())?;
    let (id, secret) = decoded.split_once(':').ok_or_else(bad)?;
    let unescape =
        |part: &str| url::form_urlencoded::parse(format!("x={part}").as_bytes()).next().map(|(_, v)| v.into_owned()).unwrap_or_default();
    let (id, secret) = (unescape(id), unescape(secret));
    if form.get("client_id").is_some_and(|given| *given != id) {
        return Err(OAuthError::new("invalid_request", "client_id in the form differs from the one in the Basic header"));
    }
    Ok(ClientCredentials { client_id: Some(id), client_secret: Some(secret) })
}

/// The form of a token or revocation request (`application/x-www-form-urlencoded`).
fn token_form(headers: &HeaderMap, body: &[u8]) -> Result<HashMap<String, String>, OAuthError> {
    let form_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("application/x-www-form-urlencoded"));
    if !form_type {
        return Err(OAuthError::new("invalid_request", "send the parameters as application/x-www-form-urlencoded"));
    }
    pairs(body)
}

/// The form and the client's credentials of a token or revocation request (body within
/// the cap, a form body, client authentication read but not yet checked); the answer to
/// send instead when any of them is wrong.
fn client_request(headers: &HeaderMap, body: &Bytes) -> Result<(HashMap<String, String>, ClientCredentials), Box<Response>> {
    if let Some(answer) = over_cap(body) {
        return Err(Box::new(answer));
    }
    let form = token_form(headers, body).map_err(|error| Box::new(error_answer(&error)))?;
    let credentials = credentials(headers, &form).map_err(|error| Box::new(error_answer(&error)))?;
    Ok((form, credentials))
}

/// `POST /oauth/token`.
async fn token(State(server): State<Arc<OAuthServer>>, headers: HeaderMap, body: Bytes) -> Response {
    let (form, credentials) = match client_request(&headers, &body) {
        Ok(read) => read,
        Err(answer) => return *answer,
    };
    let issued = server
        .with_store(move |store, now| {
            let client_id = store.authenticate(&credentials)?;
            let get = |key: &str| form.get(key).map(String::as_str);
            match get("grant_type") {
                Some("authorization_code") => {
                    let code = get("code").ok_or_else(|| OAuthError::new("invalid_request", "code is missing"))?;
                    store.exchange_code(&client_id, code, get("redirect_uri"), get("code_verifier"), get("resource"), now)
                }
                Some("refresh_token") => {
                    let refresh = get("refresh_token").ok_or_else(|| OAuthError::new("invalid_request", "refresh_token is missing"))?;
                    store.refresh(&client_id, refresh, get("resource"), now)
                }
                Some(other) => Err(OAuthError::new(
                    "unsupported_grant_type",
                    format!("grant_type {other} is not supported; use authorization_code or refresh_token"),
                )),
                None => Err(OAuthError::new("invalid_request", "grant_type is missing")),
            }
        })
        .await;
    match issued {
        Ok(pair) => json_answer(
            StatusCode::OK,
            &json!({
                "access_token": pair.access_token,
                "token_type": "Bearer",
                "expires_in": pair.expires_in,
                "refresh_token": pair.refresh_token,
                "scope": SCOPE,
            }),
        ),
        Err(error) => error_answer(&error),
    }
}

/// `POST /oauth/revoke` (RFC 7009): 200 whether or not the token was known.
async fn revoke(State(server): State<Arc<OAuthServer>>, headers: HeaderMap, body: Bytes) -> Response {
    let (form, credentials) = match client_request(&headers, &body) {
        Ok(read) => read,
        Err(answer) => return *answer,
    };
    let Some(token) = form.get("token").cloned() else {
        return error_answer(&OAuthError::new("invalid_request", "token is missing"));
    };
    let revoked = server
        .with_store(move |store, _now| {
            let client_id = store.authenticate(&credentials)?;
            store.revoke_token(&client_id, &token)
        })
        .await;
    match revoked {
        Ok(()) => json_answer(StatusCode::OK, &json!({})),
        Err(error) => error_answer(&error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_takes_https_or_loopback_redirects_and_caps_sizes() {
        let ok = parse_registration(br#"{"client_name":"ChatGPT","redirect_uris":["https://chatgpt.com/cb","http://127.0.0.1:33418/cb"],"token_endpoint_auth_method":"none"}"#)
            .expect("valid");
        assert_eq!((ok.name.as_str(), ok.auth_method, ok.redirect_uris.len()), ("ChatGPT", AuthMethod::None, 2));
        let basic = parse_registration(br#"{"redirect_uris":["http://localhost/cb"]}"#).expect("defaults");
        assert_eq!((basic.name.as_str(), basic.auth_method), ("unnamed client", AuthMethod::ClientSecretBasic));
        let long_uri = format!(r#"{{"redirect_uris":["https://a.example/{}"]}}"#, "x".repeat(MAX_REDIRECT_URI_BYTES));
        let many = format!(r#"{{"redirect_uris":[{}]}}"#, [r#""https://a.example/cb""#; MAX_REDIRECT_URIS + 1].join(","));
        let long_name =
            format!(r#"{{"client_name":"{}","redirect_uris":["https://a.example/cb"]}}"#, "n".repeat(MAX_CLIENT_NAME_CHARS + 1));
        for (body, error, says) in [
            (r#"{"redirect_uris":["http://evil.example/cb"]}"#.to_owned(), "invalid_redirect_uri", "neither https"),
            (r#"{"redirect_uris":["javascript:alert(1)"]}"#.to_owned(), "invalid_redirect_uri", "neither https"),
            (r#"{"redirect_uris":["https://a.example/cb#frag"]}"#.to_owned(), "invalid_redirect_uri", "fragment"),
            (r#"{"redirect_uris":["/relative"]}"#.to_owned(), "invalid_redirect_uri", "not an absolute URL"),
            (r#"{"redirect_uris":[]}"#.to_owned(), "invalid_redirect_uri", "1 to 10"),
            (r#"{"client_name":"x"}"#.to_owned(), "invalid_redirect_uri", "1 to 10"),
            (long_uri, "invalid_redirect_uri", "over 2000 bytes"),
            (many, "invalid_redirect_uri", "1 to 10"),
            (long_name, "invalid_client_metadata", "client_name"),
            (r#"{"client_name":"a\u0007b","redirect_uris":["https://a.example/cb"]}"#.to_owned(), "invalid_client_metadata", "control"),
            (r#"{"redirect_uris":["https://a.example/cb"],"grant_types":["implicit"]}"#.to_owned(), "invalid_client_metadata", "implicit"),
            (r#"{"redirect_uris":["https://a.example/cb"],"response_types":["token"]}"#.to_owned(), "invalid_client_metadata", "token"),
            (
                r#"{"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"private_key_jwt"}"#.to_owned(),
                "invalid_client_metadata",
                "not supported",
            ),
            ("[1]".to_owned(), "invalid_client_metadata", "JSON object"),
            ("not json".to_owned(), "invalid_client_metadata", "not JSON"),
        ] {
            let refused = parse_registration(body.as_bytes()).expect_err(&body);
            assert_eq!(refused.code, error, "{body}: {refused}");
            assert!(refused.description.contains(says), "{body}: {refused}");
        }
    }

    /// One request to the server on `port`, read to its end.
    async fn ask(port: u16, method: &str, path: &str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
        let head = format!("{method} {path} HTTP/1.1\r\nHost: herdr.example.com\r\nConnection: close\r\n\r\n");
        stream.write_all(head.as_bytes()).await.expect("write");
        let mut answer = Vec::new();
        let read = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
        read.expect("answered").expect("read");
        String::from_utf8_lossy(&answer).into_owned()
    }

    /// Review 42 (LOW-8): a HEAD of the sign-in page (a link checker, an unfurler, a
    /// prefetch of the pasted URL) starts no consent request: 405 with `Allow: GET`. A GET
    /// of the same URL still does.
    #[tokio::test]
    async fn a_head_request_to_the_sign_in_page_starts_no_consent_request() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("oauth.db");
        let mut store = OAuthStore::open_path(&db).expect("open");
        let redirect = "https://chatgpt.com/connector_platform_oauth_redirect";
        let new = NewClient { name: "ChatGPT".into(), redirect_uris: vec![redirect.into()], auth_method: AuthMethod::None };
        let client_id = store.register(new, now_secs()).expect("register").client_id;
        let public = PublicUrl::parse("https://herdr.example.com").expect("url");
        let server = OAuthServer::new(public, OAuthStore::open_path(&db).expect("open"));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        tokio::spawn(async move { axum::serve(listener, router(server)).await });
        let query: String = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs([
                ("response_type", "code"),
                ("client_id", client_id.as_str()),
                ("redirect_uri", redirect),
                ("code_challenge", crate::mcp::oauth::base64url(&[7u8; 32]).as_str()),
                ("code_challenge_method", "S256"),
                ("resource", "https://herdr.example.com/mcp"),
            ])
            .finish();
        let path = format!("{AUTHORIZE_PATH}?{query}");
        for _ in 0..3 {
            let head = ask(port, "HEAD", &path).await;
            assert!(head.starts_with("HTTP/1.1 405") && head.to_ascii_lowercase().contains("allow: get"), "{head}");
        }
        assert!(store.pending(now_secs()).expect("pending").is_empty(), "a HEAD starts no consent request");
        let page = ask(port, "GET", &path).await;
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
        assert_eq!(store.pending(now_secs()).expect("pending").len(), 1, "a GET does");
    }

    #[test]
    fn repeated_parameters_are_refused_and_html_is_escaped() {
        assert!(pairs(b"a=1&b=2").is_ok());
        assert!(pairs(b"a=1&a=2").expect_err("twice").description.contains("more than once"));
        assert_eq!(html_escape("<b>\"x\"&'y'</b>"), "&lt;b&gt;&quot;x&quot;&amp;&#39;y&#39;&lt;/b&gt;");
    }
}
