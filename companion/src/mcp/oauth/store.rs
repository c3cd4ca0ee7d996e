//! `oauth.db`: the authorization server's state, shared by `mcp --http` and the `oauth` CLI.
//!
//! Every secret (client secret, pending-request id, code, access and refresh token) is kept
//! as its SHA-256 only ([`super::secret_hash`]); the plain value exists once, in the answer
//! that hands it out. The file is created 0600 and refused when group or others may read
//! it. Every method takes the time as `now` (Unix seconds), so tests drive expiry directly.
//!
//! Threading: rusqlite blocks (on the other process's lock, up to the busy timeout), so the
//! HTTP server calls this only on tokio's blocking pool, behind a mutex.

use std::fs::OpenOptions;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension};
use thiserror::Error;

use super::{
    new_secret, pkce_matches, random_bytes, secret_hash, valid_challenge, AuthMethod, ACCESS_TOKEN_SECS, CODE_SECS, MAX_CLIENTS,
    MAX_PENDING, MAX_PENDING_PER_CLIENT, MAX_PUSHED_OUT, MAX_STATE_BYTES, PENDING_SECS, REFRESH_TOKEN_SECS,
};
use crate::paths::CompanionHome;

/// The file's name in the companion home.
pub const DB_FILE: &str = "oauth.db";

/// Why `oauth.db` cannot be used.
#[derive(Debug, Error)]
pub enum StoreError {
    /// Group or others may read or write the file.
    #[error("{path} has mode {mode:o}; it holds the OAuth grants, so only you may read it: run `chmod 600 {path}` and start again", path = .path.display())]
    NotPrivate {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Another user owns the file.
    #[error("{path} belongs to uid {owner}, not to you; remove it (every client then signs in again) or fix its owner", path = .path.display())]
    WrongOwner {
        /// The file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
    },
    /// The file could not be created or opened.
    #[error("cannot use {path}: {source}; check that the companion home is writable", path = .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// SQLite refused to open or set up the file.
    #[error("cannot open {path}: {source}; if it is damaged, remove it (every client then signs in again)", path = .path.display())]
    Sqlite {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: rusqlite::Error,
    },
    /// The file's schema is newer than this runtime's, or could not be brought to it.
    #[error(transparent)]
    Schema(#[from] crate::schema::SchemaError),
}

/// An OAuth error answer (RFC 6749 §5.2, RFC 7591 §3.2.2, RFC 8707 `invalid_target`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthError {
    /// The registered error code (`invalid_request`, `invalid_grant`, …).
    pub code: &'static str,
    /// What happened and what to do, for a person.
    pub description: String,
}

impl OAuthError {
    /// An error with `code` and `description`.
    pub fn new(code: &'static str, description: impl Into<String>) -> Self {
        Self { code, description: description.into() }
    }

    /// The HTTP status it is answered with.
    pub fn status(&self) -> u16 {
        match self.code {
            "invalid_client" => 401,
            "server_error" => 500,
            _ => 400,
        }
    }
}

impl std::fmt::Display for OAuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.description)
    }
}

impl From<rusqlite::Error> for OAuthError {
    fn from(e: rusqlite::Error) -> Self {
        Self::new("server_error", format!("oauth.db failed ({e}); check the companion home (disk full? permissions?) and try again"))
    }
}

fn no_random(e: std::io::Error) -> OAuthError {
    OAuthError::new("server_error", format!("cannot read /dev/urandom ({e}); check that it is readable"))
}

/// A client as registration asked for it (already validated, see `endpoints`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewClient {
    /// `client_name`.
    pub name: String,
    /// `redirect_uris`.
    pub redirect_uris: Vec<String>,
    /// `token_endpoint_auth_method`.
    pub auth_method: AuthMethod,
}

/// A registered client, with its secret in plain text (the only time it is).
#[derive(Debug, Clone)]
pub struct RegisteredClient {
    /// The new `client_id`.
    pub client_id: String,
    /// The new `client_secret` (confidential clients only).
    pub client_secret: Option<String>,
    /// What was registered.
    pub client: NewClient,
    /// When (Unix seconds).
    pub issued_at: i64,
}

/// A registered client as `oauth clients` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientView {
    /// `client_id`.
    pub client_id: String,
    /// `client_name`.
    pub name: String,
    /// Its redirect URIs.
    pub redirect_uris: Vec<String>,
    /// When it registered (Unix seconds).
    pub created_at: i64,
    /// How many grants (approved sign-ins with live tokens) it holds.
    pub grants: i64,
    /// When a token of it was last issued (Unix seconds).
    pub last_used: Option<i64>,
}

/// A consent request as `oauth pending` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingView {
    /// The short code the page shows (`XXXX-XXXX`).
    pub user_code: String,
    /// `client_id`.
    pub client_id: String,
    /// `client_name`.
    pub client_name: String,
    /// Where the page will send the user back.
    pub redirect_uri: String,
    /// Seconds since the request came.
    pub age_secs: i64,
}

/// A consent request that was just created.
#[derive(Debug, Clone)]
pub struct Begun {
    /// The unguessable id the page polls with (plain text only here).
    pub request_id: String,
    /// The short code the user approves.
    pub user_code: String,
    /// `client_name`.
    pub client_name: String,
    /// The redirect URI.
    pub redirect_uri: String,
}

/// Why an authorization request got no consent request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthorizeRefusal {
    /// The client or redirect URI is not known: the error is shown on the page, never
    /// redirected (RFC 6749 §4.1.2.1).
    Page(OAuthError),
    /// Anything else: the user agent goes back to the client with the error.
    Redirect(String),
}

/// The validated parameters of an authorization request.
#[derive(Debug, Clone, Default)]
pub struct AuthorizeParams {
    /// `client_id`.
    pub client_id: Option<String>,
    /// `redirect_uri`.
    pub redirect_uri: Option<String>,
    /// `response_type`.
    pub response_type: Option<String>,
    /// `code_challenge`.
    pub code_challenge: Option<String>,
    /// `code_challenge_method`.
    pub code_challenge_method: Option<String>,
    /// `state`.
    pub state: Option<String>,
    /// `resource` (RFC 8707).
    pub resource: Option<String>,
}

/// What the authorization page learns when it polls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PollAnswer {
    /// Nobody decided yet; the request expires in this many seconds.
    Waiting(i64),
    /// Approved: go to this URL (the redirect URI with `code`, `state`, `iss`).
    Approved(String),
    /// Denied on the workstation, or expired: go to this URL (with `error=access_denied`).
    Refused(String),
    /// Pushed out of the full list by newer requests before anyone approved it: the page
    /// says so (the sign-in must start again).
    PushedOut,
    /// No such request, or its answer was already collected.
    Gone,
}

/// Access and refresh token of one grant.
#[derive(Debug, Clone)]
pub struct TokenPair {
    /// The access token (plain text only here).
    pub access_token: String,
    /// The refresh token (plain text only here).
    pub refresh_token: String,
    /// Seconds the access token lives.
    pub expires_in: i64,
}

/// How a client authenticated at the token or revocation endpoint.
#[derive(Debug, Clone, Default)]
pub struct ClientCredentials {
    /// `client_id` (form or Basic).
    pub client_id: Option<String>,
    /// `client_secret` (form or Basic).
    pub client_secret: Option<String>,
}

/// A registered client as stored.
struct StoredClient {
    /// `client_name`.
    name: String,
    /// Its redirect URIs.
    redirect_uris: Vec<String>,
    /// How it authenticates.
    auth_method: AuthMethod,
    /// The SHA-256 of its secret (confidential clients).
    secret_hash: Option<String>,
}

/// `oauth.db`.
pub struct OAuthStore {
    conn: Connection,
}

/// The short code's alphabet: no 0/O, 1/I (32 symbols, so a byte modulo 32 is uniform).
const CODE_ALPHABET: &[u8; 32] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/// `XXXX-XXXX` from the code alphabet.
fn new_user_code() -> std::io::Result<String> {
    let bytes = random_bytes()?;
    let chars: Vec<char> = bytes.iter().take(8).map(|b| char::from(CODE_ALPHABET[usize::from(b % 32)])).collect();
    Ok(format!("{}-{}", chars[..4].iter().collect::<String>(), chars[4..].iter().collect::<String>()))
}

/// A user code as typed: upper case, without spaces and dashes.
fn normalized_code(code: &str) -> String {
    code.chars().filter(|c| c.is_ascii_alphanumeric()).map(|c| c.to_ascii_uppercase()).collect()
}

/// True when a `resource` parameter names `ours` (a trailing slash aside: a client may
/// have been given the URL with one).
fn same_resource(given: &str, ours: &str) -> bool {
    given.strip_suffix('/').unwrap_or(given) == ours
}

/// `uri` with the query pairs added.
fn with_query(uri: &str, pairs: &[(&str, &str)]) -> String {
    match url::Url::parse(uri) {
        Ok(mut url) => {
            url.query_pairs_mut().extend_pairs(pairs);
            url.to_string()
        }
        // Registered URIs were parsed at registration; this cannot happen.
        Err(_) => uri.to_owned(),
    }
}

/// The redirect that tells the client about an error.
fn error_redirect(redirect_uri: &str, state: Option<&str>, issuer: &str, error: &str, description: &str) -> String {
    let mut pairs = vec![("error", error), ("error_description", description)];
    if let Some(state) = state {
        pairs.push(("state", state));
    }
    pairs.push(("iss", issuer));
    with_query(redirect_uri, &pairs)
}

/// The sentence about strangers for `count` requests pushed out in the last
/// [`PENDING_SECS`]; `None` for none.
pub fn pushed_out_note(count: i64) -> Option<String> {
    let minutes = PENDING_SECS / 60;
    let at_least = if count >= MAX_PUSHED_OUT { "at least " } else { "" };
    let what = if count == 1 { "1 sign-in request was".to_owned() } else { format!("{at_least}{count} sign-in requests were") };
    (count > 0).then(|| {
        format!("{what} pushed out in the last {minutes} minutes by newer ones, so someone else may know your tunnel URL (if you did not start that many sign-ins); a new tunnel URL stops them (README, \"Through your own HTTPS tunnel\").")
    })
}

impl OAuthStore {
    /// Opens (creating 0600 when missing) `oauth.db` in `home`.
    pub fn open(home: &CompanionHome) -> Result<Self, StoreError> {
        let path = home.root().join(DB_FILE);
        home.ensure_private_dirs().map_err(|source| StoreError::Io { path: path.clone(), source })?;
        Self::open_path(&path)
    }

    /// Opens (creating 0600 when missing) the store at `path`.
    pub fn open_path(path: &Path) -> Result<Self, StoreError> {
        let io = |source| StoreError::Io { path: path.to_owned(), source };
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match OpenOptions::new().write(true).create_new(true).mode(0o600).open(path) {
                    Ok(_) => {}
                    // Another process created it just now: check it like any existing file.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Self::open_path(path),
                    Err(e) => return Err(io(e)),
                }
            }
            Err(e) => return Err(io(e)),
            Ok(meta) => {
                let mode = meta.mode() & 0o777;
                if mode & 0o077 != 0 {
                    return Err(StoreError::NotPrivate { path: path.to_owned(), mode });
                }
                // SAFETY: geteuid has no preconditions and cannot fail.
                let me = unsafe { libc::geteuid() };
                if meta.uid() != me {
                    return Err(StoreError::WrongOwner { path: path.to_owned(), owner: meta.uid() });
                }
            }
        }
        let sqlite = |source| StoreError::Sqlite { path: path.to_owned(), source };
        let mut conn = Connection::open(path).map_err(sqlite)?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(sqlite)?;
        conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;").map_err(sqlite)?;
        crate::schema::migrate(&mut conn, path, &crate::schema::OAUTH_DB)?;
        Ok(Self { conn })
    }

    /// Drops what has expired: codes, tokens, grants without tokens, and consent requests
    /// a while after they expired (the page may still ask about one until then; a
    /// pushed-out request's `expires_at` is when it was pushed out).
    fn sweep(&mut self, now: i64) -> Result<(), OAuthError> {
        self.conn.execute("DELETE FROM codes WHERE expires_at <= ?1", params![now])?;
        self.conn.execute("DELETE FROM tokens WHERE expires_at <= ?1", params![now])?;
        self.conn.execute("DELETE FROM grants WHERE grant_id NOT IN (SELECT grant_id FROM tokens)", [])?;
        self.conn.execute("DELETE FROM pending WHERE expires_at + ?2 <= ?1", params![now, PENDING_SECS])?;
        Ok(())
    }

    /// Registers a client (RFC 7591). No rate limit: behind a tunnel every caller looks the
    /// same, so a budget would be one a stranger can drain (review 42). At [`MAX_CLIENTS`],
    /// the oldest client that neither holds a grant nor is
    /// signing in (a waiting or approved request, an unused code) leaves, whatever its age,
    /// with its requests and codes: registration is open to anyone who found the tunnel URL,
    /// so a full list must never lock out the user's own client, nor evict it mid sign-in.
    /// Refused only when every client holds a grant or is signing in.
    pub fn register(&mut self, client: NewClient, now: i64) -> Result<RegisteredClient, OAuthError> {
        self.sweep(now)?;
        let count: i64 = self.conn.query_row("SELECT count(*) FROM clients", [], |r| r.get(0))?;
        if count >= MAX_CLIENTS {
            let tx = self.conn.transaction()?;
            let evicted: Vec<String> = {
                let mut statement = tx.prepare(
                    "SELECT client_id FROM clients WHERE client_id NOT IN (SELECT client_id FROM grants)
                       AND client_id NOT IN (SELECT client_id FROM codes)
                       AND client_id NOT IN (SELECT client_id FROM pending WHERE decision = 'approved' OR (decision = 'pending' AND expires_at > ?2))
                     ORDER BY created_at, rowid LIMIT ?1",
                )?;
                let rows = statement.query_map(params![count - MAX_CLIENTS + 1, now], |r| r.get(0))?;
                rows.collect::<Result<_, _>>()?
            };
            for client_id in &evicted {
                tx.execute("DELETE FROM pending WHERE client_id = ?1", params![client_id])?;
                tx.execute("DELETE FROM codes WHERE client_id = ?1", params![client_id])?;
                tx.execute("DELETE FROM clients WHERE client_id = ?1", params![client_id])?;
            }
            tx.commit()?;
            let left: i64 = self.conn.query_row("SELECT count(*) FROM clients", [], |r| r.get(0))?;
            if left >= MAX_CLIENTS {
                return Err(OAuthError::new(
                    "invalid_client_metadata",
                    format!("this server already has {MAX_CLIENTS} registered clients and none can make room: each holds a grant or is signing in (its sign-in request waits for approval); on the workstation, `herdr-companion oauth deny --all` ends the waiting sign-ins and `herdr-companion oauth revoke CLIENT_ID` frees a client you no longer use (`herdr-companion oauth clients` lists them), then register again"),
                ));
            }
        }
        let client_id = format!("hcc_{}", &new_secret("").map_err(no_random)?[..32]);
        let client_secret = match client.auth_method {
            AuthMethod::None => None,
            AuthMethod::ClientSecretPost | AuthMethod::ClientSecretBasic => Some(new_secret("hcs_").map_err(no_random)?),
        };
        let uris = serde_json::to_string(&client.redirect_uris).map_err(|e| OAuthError::new("server_error", e.to_string()))?;
        self.conn.execute(
            "INSERT INTO clients (client_id, secret_hash, auth_method, name, redirect_uris, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![client_id, client_secret.as_deref().map(secret_hash), client.auth_method.as_str(), client.name, uris, now],
        )?;
        Ok(RegisteredClient { client_id, client_secret, client, issued_at: now })
    }

    /// The client's name, redirect URIs, auth method and secret hash.
    fn client(&self, client_id: &str) -> Result<Option<StoredClient>, OAuthError> {
        let row = self
            .conn
            .query_row("SELECT name, redirect_uris, auth_method, secret_hash FROM clients WHERE client_id = ?1", params![client_id], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, Option<String>>(3)?))
            })
            .optional()?;
        Ok(row.map(|(name, uris, method, secret_hash)| StoredClient {
            name,
            redirect_uris: serde_json::from_str(&uris).unwrap_or_default(),
            auth_method: AuthMethod::parse(&method).unwrap_or(AuthMethod::ClientSecretBasic),
            secret_hash,
        }))
    }

    /// Starts a consent request for an authorization request to `resource` (this server's).
    pub fn begin(&mut self, params: &AuthorizeParams, resource: &str, issuer: &str, now: i64) -> Result<Begun, AuthorizeRefusal> {
        let page = |code, text: String| AuthorizeRefusal::Page(OAuthError::new(code, text));
        self.sweep(now).map_err(AuthorizeRefusal::Page)?;
        let Some(client_id) = params.client_id.as_deref() else {
            return Err(page("invalid_request", "the request has no client_id; the client must register first".into()));
        };
        let Some(StoredClient { name: client_name, redirect_uris: uris, .. }) = self.client(client_id).map_err(AuthorizeRefusal::Page)?
        else {
            return Err(page(
                "invalid_client",
                format!("no client {client_id} is registered here (it may have been removed); let the client register again"),
            ));
        };
        let redirect_uri = match (params.redirect_uri.as_deref(), uris.as_slice()) {
            (Some(given), _) if uris.iter().any(|u| u == given) => given.to_owned(),
            (Some(given), _) => {
                return Err(page(
                    "invalid_request",
                    format!("redirect_uri {given} is not one the client registered; nothing is sent there"),
                ));
            }
            (None, [only]) => only.clone(),
            (None, _) => return Err(page("invalid_request", "the request has no redirect_uri and the client registered several".into())),
        };
        let state = params.state.as_deref();
        let refuse = |error: &str, text: &str| AuthorizeRefusal::Redirect(error_redirect(&redirect_uri, state, issuer, error, text));
        if state.is_some_and(|s| s.len() > MAX_STATE_BYTES) {
            let over = AuthorizeRefusal::Page(OAuthError::new("invalid_request", format!("state is over {MAX_STATE_BYTES} bytes")));
            return Err(over);
        }
        if params.response_type.as_deref() != Some("code") {
            return Err(refuse("unsupported_response_type", "only response_type=code is supported"));
        }
        if params.code_challenge_method.as_deref() != Some("S256") {
            return Err(refuse("invalid_request", "PKCE is required with code_challenge_method=S256 (plain is refused)"));
        }
        let Some(challenge) = params.code_challenge.as_deref().filter(|c| valid_challenge(c)) else {
            return Err(refuse("invalid_request", "code_challenge must be the 43-character base64url SHA-256 of the code verifier"));
        };
        if params.resource.as_deref().is_some_and(|r| !same_resource(r, resource)) {
            return Err(refuse("invalid_target", "this server grants tokens only for its own MCP endpoint (resource)"));
        }
        // This client's oldest waiting requests make room for the new one: a client keeps
        // at most MAX_PENDING_PER_CLIENT, so repeated requests cannot fill the list.
        let sql = |e: rusqlite::Error| AuthorizeRefusal::Page(e.into());
        self.conn
            .execute(
                "DELETE FROM pending WHERE request_hash IN (SELECT request_hash FROM pending
                   WHERE client_id = ?1 AND decision = 'pending' AND expires_at > ?2 ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET ?3)",
                params![client_id, now, MAX_PENDING_PER_CLIENT - 1],
            )
            .map_err(sql)?;
        let waiting: i64 = self
            .conn
            .query_row("SELECT count(*) FROM pending WHERE decision = 'pending' AND expires_at > ?1", params![now], |r| r.get(0))
            .map_err(sql)?;
        if waiting >= MAX_PENDING {
            // The list is full: the oldest waiting requests are pushed out (their pages and
            // `oauth approve` say so), never the new one — its code is what the user is
            // reading. A pushed-out request's `expires_at` becomes the moment it was pushed
            // out, so sweep forgets it PENDING_SECS later (and `pushed_out_recently` counts
            // it until then); the newest MAX_PUSHED_OUT are kept, no more.
            self.conn
                .execute(
                    "UPDATE pending SET decision = 'evicted', expires_at = ?1 WHERE request_hash IN (SELECT request_hash FROM pending
                       WHERE decision = 'pending' AND expires_at > ?1 ORDER BY created_at, rowid LIMIT ?2)",
                    params![now, waiting - MAX_PENDING + 1],
                )
                .map_err(sql)?;
            self.conn
                .execute(
                    "DELETE FROM pending WHERE request_hash IN (SELECT request_hash FROM pending
                       WHERE decision = 'evicted' ORDER BY expires_at DESC, created_at DESC, rowid DESC LIMIT -1 OFFSET ?1)",
                    params![MAX_PUSHED_OUT],
                )
                .map_err(sql)?;
        }
        let random = |e| AuthorizeRefusal::Page(no_random(e));
        let request_id = new_secret("").map_err(random)?;
        let user_code = new_user_code().map_err(random)?;
        self.conn
            .execute(
                "INSERT INTO pending (request_hash, user_code, client_id, redirect_uri, state, code_challenge, resource, created_at, expires_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![secret_hash(&request_id), user_code, client_id, redirect_uri, state, challenge, resource, now, now + PENDING_SECS],
            )
            .map_err(|e| AuthorizeRefusal::Page(e.into()))?;
        Ok(Begun { request_id, user_code, client_name, redirect_uri })
    }

    /// The consent requests waiting for a decision, oldest first.
    pub fn pending(&mut self, now: i64) -> Result<Vec<PendingView>, OAuthError> {
        self.sweep(now)?;
        let mut statement = self.conn.prepare(
            "SELECT p.user_code, p.client_id, c.name, p.redirect_uri, p.created_at FROM pending p JOIN clients c USING (client_id)
             WHERE p.decision = 'pending' AND p.expires_at > ?1 ORDER BY p.created_at",
        )?;
        let rows = statement.query_map(params![now], |r| {
            Ok(PendingView {
                user_code: r.get(0)?,
                client_id: r.get(1)?,
                client_name: r.get(2)?,
                redirect_uri: r.get(3)?,
                age_secs: now - r.get::<_, i64>(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// How many sign-in requests were pushed out of the full list in the last
    /// [`PENDING_SECS`] (counted up to [`MAX_PUSHED_OUT`], the most remembered).
    pub fn pushed_out_recently(&mut self, now: i64) -> Result<i64, OAuthError> {
        self.sweep(now)?;
        Ok(self.conn.query_row(
            "SELECT count(*) FROM pending WHERE decision = 'evicted' AND expires_at > ?1",
            params![now - PENDING_SECS],
            |r| r.get(0),
        )?)
    }

    /// What `oauth pending`, a pushed-out request's page and `oauth approve` of its code
    /// say about strangers: how many requests were pushed out in the last [`PENDING_SECS`],
    /// and what that means. `None` when none was.
    pub fn strangers_note(&mut self, now: i64) -> Result<Option<String>, OAuthError> {
        Ok(pushed_out_note(self.pushed_out_recently(now)?))
    }

    /// Approves or denies the waiting request with this short code (the user, on the
    /// workstation). The page collects the answer by polling. The decision is written only
    /// if the request still waits at that moment: the server (another process) may push it
    /// out or it may expire between this look and the write, and then the answer says so
    /// rather than "approved".
    pub fn decide(&mut self, user_code: &str, approve: bool, now: i64) -> Result<PendingView, OAuthError> {
        let wanted = normalized_code(user_code);
        let waiting = self.pending(now)?;
        if let Some(found) = waiting.into_iter().find(|p| normalized_code(&p.user_code) == wanted) {
            let decision = if approve { "approved" } else { "denied" };
            let written = self.conn.execute(
                "UPDATE pending SET decision = ?1 WHERE user_code = ?2 AND decision = 'pending' AND expires_at > ?3",
                params![decision, found.user_code, now],
            )?;
            if written == 1 {
                return Ok(found);
            }
        }
        let pushed_out: Vec<String> = {
            let mut statement = self.conn.prepare("SELECT user_code FROM pending WHERE decision = 'evicted'")?;
            let rows = statement.query_map([], |r| r.get(0))?;
            rows.collect::<Result<_, _>>()?
        };
        if pushed_out.iter().any(|code| normalized_code(code) == wanted) {
            let note = self.strangers_note(now)?.map(|note| format!(" {note}")).unwrap_or_default();
            return Err(OAuthError::new(
                "invalid_request",
                format!("sign-in request {user_code} was pushed out before it was decided: at least {MAX_PENDING} newer sign-in requests came after it; start the sign-in again from the client and approve its new code right away (`herdr-companion oauth pending` lists the waiting ones, `oauth deny --all` clears them).{note}"),
            ));
        }
        Err(OAuthError::new(
            "invalid_request",
            format!("no sign-in request with code {user_code} is waiting (it expired, was decided, or the code is mistyped); run `herdr-companion oauth pending` to see the waiting ones"),
        ))
    }

    /// `oauth deny --all`: denies every waiting request (their pages go back with
    /// `access_denied`). Answers the requests it denied, oldest first.
    pub fn deny_all(&mut self, now: i64) -> Result<Vec<PendingView>, OAuthError> {
        let waiting = self.pending(now)?;
        self.conn.execute("UPDATE pending SET decision = 'denied' WHERE decision = 'pending' AND expires_at > ?1", params![now])?;
        Ok(waiting)
    }

    /// What the authorization page holding `request_id` learns: still waiting, or where to
    /// go. Approval turns into a single-use code here, handed out once.
    pub fn poll(&mut self, request_id: &str, issuer: &str, now: i64) -> Result<PollAnswer, OAuthError> {
        self.sweep(now)?;
        let hash = secret_hash(request_id);
        type Row = (String, String, Option<String>, String, String, i64);
        let row: Option<Row> = self
            .conn
            .query_row(
                "SELECT client_id, redirect_uri, state, code_challenge, decision, expires_at FROM pending WHERE request_hash = ?1",
                params![hash],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
            )
            .optional()?;
        let Some((client_id, redirect_uri, state, challenge, decision, expires_at)) = row else {
            return Ok(PollAnswer::Gone);
        };
        let done =
            |store: &mut Self| store.conn.execute("UPDATE pending SET decision = 'delivered' WHERE request_hash = ?1", params![hash]);
        match decision.as_str() {
            "pending" if expires_at > now => Ok(PollAnswer::Waiting(expires_at - now)),
            "pending" => {
                done(self)?;
                let text = "nobody approved the sign-in on the workstation within 10 minutes; start again";
                Ok(PollAnswer::Refused(error_redirect(&redirect_uri, state.as_deref(), issuer, "access_denied", text)))
            }
            "evicted" => Ok(PollAnswer::PushedOut),
            "denied" => {
                done(self)?;
                let text = "the sign-in was denied on the workstation";
                Ok(PollAnswer::Refused(error_redirect(&redirect_uri, state.as_deref(), issuer, "access_denied", text)))
            }
            "approved" => {
                let code = new_secret("hc_ac_").map_err(no_random)?;
                let resource: String =
                    self.conn.query_row("SELECT resource FROM pending WHERE request_hash = ?1", params![hash], |r| r.get(0))?;
                self.conn.execute(
                    "INSERT INTO codes (code_hash, client_id, redirect_uri, code_challenge, resource, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![secret_hash(&code), client_id, redirect_uri, challenge, resource, now + CODE_SECS],
                )?;
                done(self)?;
                let mut pairs = vec![("code", code.as_str())];
                if let Some(state) = state.as_deref() {
                    pairs.push(("state", state));
                }
                pairs.push(("iss", issuer));
                Ok(PollAnswer::Approved(with_query(&redirect_uri, &pairs)))
            }
            _ => Ok(PollAnswer::Gone),
        }
    }

    /// Authenticates a client at the token or revocation endpoint: public clients by their
    /// id, confidential ones by their secret too.
    pub fn authenticate(&self, credentials: &ClientCredentials) -> Result<String, OAuthError> {
        let Some(client_id) = credentials.client_id.as_deref() else {
            return Err(OAuthError::new("invalid_client", "no client_id; send it in the form or with HTTP Basic authentication"));
        };
        let unknown = || OAuthError::new("invalid_client", format!("no client {client_id} is registered here; register again"));
        let client = self.client(client_id)?.ok_or_else(unknown)?;
        if client.auth_method != AuthMethod::None {
            let given = credentials.client_secret.as_deref().map(secret_hash);
            let matches = matches!((given, client.secret_hash), (Some(g), Some(s)) if super::same_secret(g.as_bytes(), s.as_bytes()));
            if !matches {
                return Err(OAuthError::new("invalid_client", "the client secret is missing or wrong"));
            }
        }
        Ok(client_id.to_owned())
    }

    /// Mints an access and a refresh token in `grant_id`.
    fn mint(&mut self, grant_id: &str, now: i64) -> Result<TokenPair, OAuthError> {
        let access_token = new_secret("hc_at_").map_err(no_random)?;
        let refresh_token = new_secret("hc_rt_").map_err(no_random)?;
        self.conn.execute(
            "INSERT INTO tokens (token_hash, kind, grant_id, expires_at) VALUES (?1, 'access', ?2, ?3), (?4, 'refresh', ?2, ?5)",
            params![secret_hash(&access_token), grant_id, now + ACCESS_TOKEN_SECS, secret_hash(&refresh_token), now + REFRESH_TOKEN_SECS],
        )?;
        self.conn.execute("UPDATE grants SET last_used = ?2 WHERE grant_id = ?1", params![grant_id, now])?;
        Ok(TokenPair { access_token, refresh_token, expires_in: ACCESS_TOKEN_SECS })
    }

    /// Ends a grant: every token of it.
    fn revoke_grant(&mut self, grant_id: &str) -> Result<(), OAuthError> {
        self.conn.execute("DELETE FROM tokens WHERE grant_id = ?1", params![grant_id])?;
        self.conn.execute("DELETE FROM grants WHERE grant_id = ?1", params![grant_id])?;
        Ok(())
    }

    /// `grant_type=authorization_code`: the code, checked against its client, redirect URI,
    /// PKCE verifier and resource, becomes a new grant's tokens. A code used twice revokes
    /// the grant it gave.
    pub fn exchange_code(
        &mut self,
        client_id: &str,
        code: &str,
        redirect_uri: Option<&str>,
        verifier: Option<&str>,
        resource: Option<&str>,
        now: i64,
    ) -> Result<TokenPair, OAuthError> {
        self.sweep(now)?;
        let hash = secret_hash(code);
        type Row = (String, String, String, String, i64, Option<String>);
        let row: Option<Row> = self
            .conn
            .query_row(
                "SELECT client_id, redirect_uri, code_challenge, resource, expires_at, grant_id FROM codes WHERE code_hash = ?1",
                params![hash],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
            )
            .optional()?;
        let grant = |text: &str| OAuthError::new("invalid_grant", text);
        let Some((owner, code_redirect, challenge, code_resource, expires_at, used)) = row else {
            return Err(grant("the authorization code is unknown or expired; sign in again"));
        };
        if let Some(grant_id) = used {
            self.revoke_grant(&grant_id)?;
            return Err(grant("the authorization code was already used; the tokens it gave are revoked — sign in again"));
        }
        if expires_at <= now || owner != client_id {
            return Err(grant("the authorization code is expired or belongs to another client"));
        }
        if redirect_uri.is_some_and(|r| r != code_redirect) {
            return Err(grant("redirect_uri differs from the one of the authorization request"));
        }
        let Some(verifier) = verifier else {
            return Err(OAuthError::new("invalid_request", "code_verifier is missing (PKCE is required)"));
        };
        if !pkce_matches(verifier, &challenge) {
            return Err(grant("code_verifier does not match the code_challenge (PKCE S256)"));
        }
        if resource.is_some_and(|r| !same_resource(r, &code_resource)) {
            return Err(OAuthError::new("invalid_target", "resource differs from the one the code was granted for"));
        }
        let grant_id = new_secret("").map_err(no_random)?;
        self.conn.execute(
            "INSERT INTO grants (grant_id, client_id, resource, created_at, last_used) VALUES (?1, ?2, ?3, ?4, ?4)",
            params![grant_id, client_id, code_resource, now],
        )?;
        self.conn.execute("UPDATE codes SET grant_id = ?2 WHERE code_hash = ?1", params![hash, grant_id])?;
        self.mint(&grant_id, now)
    }

    /// `grant_type=refresh_token`: a live refresh token of this client is rotated — it is
    /// spent, and a new pair is issued in the same grant. A spent one presented again
    /// revokes the grant.
    pub fn refresh(&mut self, client_id: &str, refresh_token: &str, resource: Option<&str>, now: i64) -> Result<TokenPair, OAuthError> {
        self.sweep(now)?;
        let hash = secret_hash(refresh_token);
        let row: Option<(String, i64, String, String)> = self
            .conn
            .query_row(
                "SELECT t.grant_id, t.rotated, g.client_id, g.resource FROM tokens t JOIN grants g USING (grant_id)
                 WHERE t.token_hash = ?1 AND t.kind = 'refresh' AND t.expires_at > ?2",
                params![hash, now],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?;
        let Some((grant_id, rotated, owner, grant_resource)) = row else {
            return Err(OAuthError::new("invalid_grant", "the refresh token is unknown, expired or revoked; sign in again"));
        };
        if owner != client_id {
            return Err(OAuthError::new("invalid_grant", "the refresh token belongs to another client"));
        }
        if rotated != 0 {
            self.revoke_grant(&grant_id)?;
            return Err(OAuthError::new(
                "invalid_grant",
                "the refresh token was already used once; every token of this sign-in is revoked — sign in again",
            ));
        }
        if resource.is_some_and(|r| !same_resource(r, &grant_resource)) {
            return Err(OAuthError::new("invalid_target", "resource differs from the one this grant is for"));
        }
        self.conn.execute("UPDATE tokens SET rotated = 1 WHERE token_hash = ?1", params![hash])?;
        self.mint(&grant_id, now)
    }

    /// The resource a live access token was issued for; `None` for an unknown, expired or
    /// revoked one.
    pub fn access_token_resource(&self, access_token: &str, now: i64) -> Result<Option<String>, OAuthError> {
        Ok(self
            .conn
            .query_row(
                "SELECT g.resource FROM tokens t JOIN grants g USING (grant_id) WHERE t.token_hash = ?1 AND t.kind = 'access' AND t.expires_at > ?2",
                params![secret_hash(access_token), now],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// RFC 7009: revokes the grant of a token this client holds (access or refresh: both
    /// end the grant). An unknown token, or one of another client, changes nothing.
    pub fn revoke_token(&mut self, client_id: &str, token: &str) -> Result<(), OAuthError> {
        let grant: Option<String> = self
            .conn
            .query_row(
                "SELECT t.grant_id FROM tokens t JOIN grants g USING (grant_id) WHERE t.token_hash = ?1 AND g.client_id = ?2",
                params![secret_hash(token), client_id],
                |r| r.get(0),
            )
            .optional()?;
        match grant {
            Some(grant_id) => self.revoke_grant(&grant_id),
            None => Ok(()),
        }
    }

    /// `oauth revoke CLIENT_ID`: ends every grant of the client, its unused codes and its
    /// waiting requests; the client stays registered but must be approved again. Answers
    /// how many grants ended.
    pub fn revoke_client(&mut self, client_id: &str) -> Result<i64, OAuthError> {
        if self.client(client_id)?.is_none() {
            return Err(OAuthError::new(
                "invalid_client",
                format!("no client {client_id} is registered; `herdr-companion oauth clients` lists them"),
            ));
        }
        let tx = self.conn.transaction()?;
        let grants: i64 = tx.query_row("SELECT count(*) FROM grants WHERE client_id = ?1", params![client_id], |r| r.get(0))?;
        tx.execute("DELETE FROM tokens WHERE grant_id IN (SELECT grant_id FROM grants WHERE client_id = ?1)", params![client_id])?;
        tx.execute("DELETE FROM grants WHERE client_id = ?1", params![client_id])?;
        tx.execute("DELETE FROM codes WHERE client_id = ?1", params![client_id])?;
        tx.execute("DELETE FROM pending WHERE client_id = ?1 AND decision IN ('pending', 'approved')", params![client_id])?;
        tx.commit()?;
        Ok(grants)
    }

    /// The registered clients with their grants, newest first.
    pub fn clients(&mut self, now: i64) -> Result<Vec<ClientView>, OAuthError> {
        self.sweep(now)?;
        let mut statement = self.conn.prepare(
            "SELECT c.client_id, c.name, c.redirect_uris, c.created_at, count(g.grant_id), max(g.last_used)
             FROM clients c LEFT JOIN grants g USING (client_id) GROUP BY c.client_id ORDER BY c.created_at DESC",
        )?;
        let rows = statement.query_map([], |r| {
            Ok(ClientView {
                client_id: r.get(0)?,
                name: r.get(1)?,
                redirect_uris: serde_json::from_str(&r.get::<_, String>(2)?).unwrap_or_default(),
                created_at: r.get(3)?,
                grants: r.get(4)?,
                last_used: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Test support: a live access token bound to `resource` for `client_id`, as another
    /// server sharing this `oauth.db` would have issued it.
    #[cfg(test)]
    pub fn grant_directly(&mut self, client_id: &str, resource: &str, now: i64) -> Result<TokenPair, OAuthError> {
        let grant_id = new_secret("").map_err(no_random)?;
        self.conn.execute(
            "INSERT INTO grants (grant_id, client_id, resource, created_at, last_used) VALUES (?1, ?2, ?3, ?4, ?4)",
            params![grant_id, client_id, resource, now],
        )?;
        self.mint(&grant_id, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::oauth::base64url;
    use sha2::{Digest, Sha256};
    use std::os::unix::fs::PermissionsExt;

    const RESOURCE: &str = "https://herdr.example.com/mcp";
    const ISSUER: &str = "https://herdr.example.com";
    const REDIRECT: &str = "https://chatgpt.com/connector_platform_oauth_redirect";
    const VERIFIER: &str = "a-verifier-of-at-least-forty-three-characters-0123456789";

    fn challenge() -> String {
        base64url(&Sha256::digest(VERIFIER.as_bytes()))
    }

    fn store() -> (tempfile::TempDir, OAuthStore) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = OAuthStore::open(&CompanionHome::at(dir.path().join("home"))).expect("open");
        (dir, store)
    }

    fn client(store: &mut OAuthStore) -> String {
        let new = NewClient { name: "ChatGPT".into(), redirect_uris: vec![REDIRECT.into()], auth_method: AuthMethod::None };
        store.register(new, 1000).expect("register").client_id
    }

    fn params(client_id: &str) -> AuthorizeParams {
        AuthorizeParams {
            client_id: Some(client_id.into()),
            redirect_uri: Some(REDIRECT.into()),
            response_type: Some("code".into()),
            code_challenge: Some(challenge()),
            code_challenge_method: Some("S256".into()),
            state: Some("st4te".into()),
            resource: Some(RESOURCE.into()),
        }
    }

    fn query_value(url: &str, key: &str) -> Option<String> {
        url::Url::parse(url).ok()?.query_pairs().find(|(k, _)| k == key).map(|(_, v)| v.into_owned())
    }

    /// Registration, consent on the workstation, the code and the first pair of tokens.
    fn signed_in(store: &mut OAuthStore) -> (String, TokenPair) {
        let id = client(store);
        let begun = store.begin(&params(&id), RESOURCE, ISSUER, 1000).expect("begin");
        store.decide(&begun.user_code, true, 1010).expect("approve");
        let PollAnswer::Approved(to) = store.poll(&begun.request_id, ISSUER, 1011).expect("poll") else { panic!("not approved") };
        let code = query_value(&to, "code").expect("code");
        let pair = store.exchange_code(&id, &code, Some(REDIRECT), Some(VERIFIER), Some(RESOURCE), 1012).expect("tokens");
        (id, pair)
    }

    #[test]
    fn the_file_is_private_and_holds_no_secret_in_plain_text() {
        let (dir, mut store) = store();
        let (_, pair) = signed_in(&mut store);
        let path = dir.path().join("home").join(DB_FILE);
        assert_eq!(std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777, 0o600);
        drop(store);
        let mut bytes = std::fs::read(&path).expect("read");
        for extra in ["-wal", "-shm"] {
            let mut file = path.clone().into_os_string();
            file.push(extra);
            bytes.extend(std::fs::read(&file).unwrap_or_default());
        }
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(&pair.access_token) && !text.contains(&pair.refresh_token), "tokens are stored hashed only");
        assert!(text.contains(&secret_hash(&pair.access_token)), "the hash is what is stored");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let refused = OAuthStore::open_path(&path).err().expect("0644 refused").to_string();
        assert!(refused.contains("mode 644") && refused.contains("chmod 600"), "{refused}");
    }

    #[test]
    fn no_code_exists_before_the_workstation_approves_and_a_denial_redirects_with_access_denied() {
        let (_dir, mut store) = store();
        let id = client(&mut store);
        let begun = store.begin(&params(&id), RESOURCE, ISSUER, 1000).expect("begin");
        assert_eq!(store.poll(&begun.request_id, ISSUER, 1001).expect("poll"), PollAnswer::Waiting(PENDING_SECS - 1));
        assert_eq!(store.poll("a-guessed-request-id", ISSUER, 1001).expect("poll"), PollAnswer::Gone);
        let codes: i64 = store.conn.query_row("SELECT count(*) FROM codes", [], |r| r.get(0)).expect("count");
        assert_eq!(codes, 0, "no code without approval");
        let listed = store.pending(1005).expect("pending");
        assert_eq!((listed.len(), listed[0].client_name.as_str(), listed[0].age_secs), (1, "ChatGPT", 5));

        let typed = begun.user_code.to_lowercase().replace('-', "");
        store.decide(&typed, false, 1006).expect("deny by the code as typed");
        let PollAnswer::Refused(to) = store.poll(&begun.request_id, ISSUER, 1007).expect("poll") else { panic!("not refused") };
        assert_eq!(query_value(&to, "error").as_deref(), Some("access_denied"));
        assert_eq!(query_value(&to, "state").as_deref(), Some("st4te"));
        assert_eq!(store.poll(&begun.request_id, ISSUER, 1008).expect("poll"), PollAnswer::Gone, "the answer is given once");
        let again = store.decide(&begun.user_code, true, 1009).expect_err("decided already");
        assert!(again.description.contains("oauth pending"), "{again}");

        let late = store.begin(&params(&id), RESOURCE, ISSUER, 2000).expect("begin");
        let PollAnswer::Refused(to) = store.poll(&late.request_id, ISSUER, 2000 + PENDING_SECS).expect("poll") else { panic!("expired") };
        assert!(query_value(&to, "error_description").expect("description").contains("within 10 minutes"));
        assert!(store.decide(&late.user_code, true, 2000 + PENDING_SECS).is_err(), "an expired request cannot be approved");
    }

    #[test]
    fn authorization_requests_need_a_known_client_its_redirect_pkce_s256_and_this_resource() {
        let (_dir, mut store) = store();
        let id = client(&mut store);
        let refused = |store: &mut OAuthStore, change: &dyn Fn(&mut AuthorizeParams)| {
            let mut p = params(&id);
            change(&mut p);
            store.begin(&p, RESOURCE, ISSUER, 1000).expect_err("refused")
        };
        let AuthorizeRefusal::Page(e) = refused(&mut store, &|p| p.client_id = Some("hcc_unknown".into())) else { panic!("page") };
        assert_eq!(e.code, "invalid_client");
        let AuthorizeRefusal::Page(e) = refused(&mut store, &|p| p.redirect_uri = Some("https://evil.example/cb".into())) else {
            panic!("an unregistered redirect is never redirected to")
        };
        assert!(e.description.contains("not one the client registered"));
        for (change, error) in [
            (
                &(|p: &mut AuthorizeParams| p.code_challenge_method = Some("plain".into())) as &dyn Fn(&mut AuthorizeParams),
                "invalid_request",
            ),
            (&|p: &mut AuthorizeParams| p.code_challenge_method = None, "invalid_request"),
            (&|p: &mut AuthorizeParams| p.code_challenge = Some("short".into()), "invalid_request"),
            (&|p: &mut AuthorizeParams| p.response_type = Some("token".into()), "unsupported_response_type"),
            (&|p: &mut AuthorizeParams| p.resource = Some("https://other.example.com/mcp".into()), "invalid_target"),
        ] {
            let AuthorizeRefusal::Redirect(to) = refused(&mut store, change) else { panic!("redirected") };
            assert!(to.starts_with(REDIRECT), "{to}");
            assert_eq!(query_value(&to, "error").as_deref(), Some(error), "{to}");
        }
        // A full list refuses nothing (review 42): the new request pushes out the oldest,
        // whose page and `oauth approve` say what happened and what to do.
        let mut others = Vec::new();
        for _ in 0..MAX_PENDING / 2 {
            let other = client(&mut store);
            others.push(store.begin(&params(&other), RESOURCE, ISSUER, 1000).expect("begin"));
            others.push(store.begin(&params(&other), RESOURCE, ISSUER, 1000).expect("begin"));
        }
        let mine = store.begin(&params(&id), RESOURCE, ISSUER, 1001).expect("a full list makes room");
        let waiting = store.pending(1002).expect("pending");
        assert_eq!(waiting.len() as i64, MAX_PENDING);
        assert!(waiting.iter().any(|p| p.user_code == mine.user_code) && waiting.iter().all(|p| p.user_code != others[0].user_code));
        assert_eq!(store.poll(&others[0].request_id, ISSUER, 1002).expect("poll"), PollAnswer::PushedOut);
        let late = store.decide(&others[0].user_code, true, 1003).expect_err("a pushed-out request cannot be approved");
        assert!(late.description.contains("pushed out") && late.description.contains("start the sign-in again"), "{late}");
        assert_eq!(store.poll(&others[1].request_id, ISSUER, 1003).expect("poll"), PollAnswer::Waiting(PENDING_SECS - 3));
        assert_eq!(store.pushed_out_recently(1003).expect("count"), 1);
        // Pushed-out requests are kept (for those messages) up to MAX_PUSHED_OUT, no more,
        // each for PENDING_SECS after it was pushed out.
        for n in 0..(MAX_PUSHED_OUT + MAX_PENDING) / 2 {
            let other = client(&mut store);
            store.begin(&params(&other), RESOURCE, ISSUER, 1004 + n).expect("begin");
            store.begin(&params(&other), RESOURCE, ISSUER, 1004 + n).expect("begin");
        }
        let kept: i64 = store.conn.query_row("SELECT count(*) FROM pending", [], |r| r.get(0)).expect("count");
        assert_eq!(kept, MAX_PENDING + MAX_PUSHED_OUT, "{MAX_PENDING} waiting and {MAX_PUSHED_OUT} pushed out");
        assert_eq!(store.poll(&others[0].request_id, ISSUER, 1200).expect("poll"), PollAnswer::Gone, "forgotten at last");
        assert_eq!(store.pushed_out_recently(1200).expect("count"), MAX_PUSHED_OUT);
        assert!(store.strangers_note(1200).expect("note").expect("a note").contains(&format!("at least {MAX_PUSHED_OUT} sign-in")));
        let last = 1004 + (MAX_PUSHED_OUT + MAX_PENDING) / 2 - 1;
        assert_eq!(store.pushed_out_recently(last + PENDING_SECS).expect("count"), 0, "forgotten PENDING_SECS after the last push-out");
        assert_eq!(store.strangers_note(last + PENDING_SECS).expect("note"), None);
    }

    /// Review of issue 24: one client (anyone who found the tunnel URL can register one)
    /// keeps at most two sign-ins waiting; a third replaces its oldest, so repeated
    /// requests never fill the list that the user's own sign-in needs.
    #[test]
    fn a_client_keeps_at_most_two_waiting_sign_ins_and_a_new_one_replaces_its_oldest() {
        let (_dir, mut store) = store();
        let stranger = client(&mut store);
        let first = store.begin(&params(&stranger), RESOURCE, ISSUER, 1000).expect("begin");
        let second = store.begin(&params(&stranger), RESOURCE, ISSUER, 1001).expect("begin");
        for n in 0..MAX_PENDING * 2 {
            store.begin(&params(&stranger), RESOURCE, ISSUER, 1002 + n).expect("a new request replaces the client's oldest");
        }
        let waiting = store.pending(1100).expect("pending");
        assert_eq!(waiting.len(), 2, "{waiting:?}");
        assert_eq!(store.poll(&first.request_id, ISSUER, 1100).expect("poll"), PollAnswer::Gone, "replaced");
        assert_eq!(store.poll(&second.request_id, ISSUER, 1100).expect("poll"), PollAnswer::Gone, "replaced");
        assert!(store.decide(&first.user_code, true, 1100).is_err(), "a replaced request cannot be approved");
        let mine = client(&mut store);
        let begun = store.begin(&params(&mine), RESOURCE, ISSUER, 1101).expect("the user's sign-in still gets in");
        store.decide(&begun.user_code, true, 1102).expect("approve");
    }

    /// Review of issue 24: registration is unauthenticated, so a full client list must not
    /// lock the user out: a new registration evicts the oldest client that has no grant
    /// (and is not signing in, review 42), whatever its age, with its requests; clients with
    /// grants are never evicted.
    #[test]
    fn a_full_client_list_makes_room_by_evicting_the_oldest_client_without_a_grant() {
        let (_dir, mut store) = store();
        let (granted, pair) = signed_in(&mut store);
        let new = NewClient { name: "Stranger".into(), redirect_uris: vec![REDIRECT.into()], auth_method: AuthMethod::None };
        let oldest = store.register(new.clone(), 1000).expect("register").client_id;
        let begun = store.begin(&params(&oldest), RESOURCE, ISSUER, 1000).expect("begin");
        store.decide(&begun.user_code, false, 1000).expect("denied: it is no longer signing in");
        for _ in 2..MAX_CLIENTS {
            store.register(new.clone(), 1001).expect("register");
        }
        let mine = store.register(new.clone(), 1002).expect("a full list makes room at once").client_id;
        let listed = store.clients(1003).expect("clients");
        assert_eq!(listed.len() as i64, MAX_CLIENTS);
        assert!(listed.iter().all(|c| c.client_id != oldest), "the oldest client without a grant left");
        assert!(listed.iter().any(|c| c.client_id == granted) && listed.iter().any(|c| c.client_id == mine));
        assert_eq!(store.poll(&begun.request_id, ISSUER, 1003).expect("poll"), PollAnswer::Gone, "its request left with it");
        assert!(store.access_token_resource(&pair.access_token, 1003).expect("lookup").is_some(), "the grant stays");

        for listed in store.clients(1004).expect("clients") {
            store.grant_directly(&listed.client_id, RESOURCE, 1004).expect("grant");
        }
        let full = store.register(new, 1005).expect_err("every client holds a grant");
        assert!(full.description.contains("each holds a grant") && full.description.contains("oauth revoke"), "{full}");
        assert_eq!(store.clients(1005).expect("clients").len() as i64, MAX_CLIENTS, "no client with a grant was evicted");
    }

    #[test]
    fn codes_are_single_use_and_need_the_pkce_verifier_and_the_same_resource() {
        let (_dir, mut store) = store();
        let id = client(&mut store);
        let code_for = |store: &mut OAuthStore| {
            let begun = store.begin(&params(&id), RESOURCE, ISSUER, 1000).expect("begin");
            store.decide(&begun.user_code, true, 1001).expect("approve");
            let PollAnswer::Approved(to) = store.poll(&begun.request_id, ISSUER, 1002).expect("poll") else { panic!("approved") };
            assert_eq!(query_value(&to, "iss").as_deref(), Some(ISSUER));
            query_value(&to, "code").expect("code")
        };
        let code = code_for(&mut store);
        let wrong = store.exchange_code(&id, &code, Some(REDIRECT), Some(&VERIFIER.replace('a', "b")), None, 1003).expect_err("verifier");
        assert!(wrong.code == "invalid_grant" && wrong.description.contains("PKCE"), "{wrong}");
        let missing = store.exchange_code(&id, &code, Some(REDIRECT), None, None, 1003).expect_err("no verifier");
        assert_eq!(missing.code, "invalid_request");
        let other = store.exchange_code(&id, &code, Some(REDIRECT), Some(VERIFIER), Some("https://other.example.com/mcp"), 1003);
        assert_eq!(other.expect_err("resource").code, "invalid_target");
        let with_slash = format!("{RESOURCE}/");
        let pair = store.exchange_code(&id, &code, Some(REDIRECT), Some(VERIFIER), Some(&with_slash), 1003).expect("tokens");
        assert_eq!(store.access_token_resource(&pair.access_token, 1004).expect("lookup").as_deref(), Some(RESOURCE));
        let reused = store.exchange_code(&id, &code, Some(REDIRECT), Some(VERIFIER), None, 1005).expect_err("second use");
        assert!(reused.description.contains("already used"), "{reused}");
        assert_eq!(store.access_token_resource(&pair.access_token, 1006).expect("lookup"), None, "a reused code revokes its grant");

        let late = code_for(&mut store);
        let expired = store.exchange_code(&id, &late, Some(REDIRECT), Some(VERIFIER), None, 1002 + CODE_SECS);
        assert_eq!(expired.expect_err("expired").code, "invalid_grant");
    }

    #[test]
    fn access_tokens_expire_refresh_rotates_and_a_reused_refresh_token_revokes_the_grant() {
        let (_dir, mut store) = store();
        let (id, first) = signed_in(&mut store);
        let expiry = 1012 + ACCESS_TOKEN_SECS;
        assert!(store.access_token_resource(&first.access_token, expiry - 1).expect("lookup").is_some());
        assert_eq!(store.access_token_resource(&first.access_token, expiry).expect("lookup"), None, "expired after an hour");

        let second = store.refresh(&id, &first.refresh_token, Some(RESOURCE), expiry).expect("refresh");
        assert_ne!(second.refresh_token, first.refresh_token, "rotated");
        assert!(store.access_token_resource(&second.access_token, expiry + 1).expect("lookup").is_some());
        assert_eq!(store.refresh("hcc_other", &second.refresh_token, None, expiry + 2).expect_err("client").code, "invalid_grant");
        let other = store.refresh(&id, &second.refresh_token, Some("https://other.example.com/mcp"), expiry + 2);
        assert_eq!(other.expect_err("resource").code, "invalid_target");

        let replay = store.refresh(&id, &first.refresh_token, None, expiry + 3).expect_err("replayed");
        assert!(replay.description.contains("already used once"), "{replay}");
        assert_eq!(store.access_token_resource(&second.access_token, expiry + 4).expect("lookup"), None, "the whole grant ended");
        assert!(store.refresh(&id, &second.refresh_token, None, expiry + 5).is_err());
        let stale = store.refresh(&id, "hc_rt_never-issued", None, expiry + 5).expect_err("unknown");
        assert!(stale.description.contains("sign in again"));
    }

    #[test]
    fn revocation_ends_a_grant_and_revoking_a_client_ends_all_of_them() {
        let (_dir, mut store) = store();
        let (id, pair) = signed_in(&mut store);
        store.revoke_token("hcc_someone_else", &pair.refresh_token).expect("another client's revocation is a no-op");
        assert!(store.access_token_resource(&pair.access_token, 1013).expect("lookup").is_some());
        store.revoke_token(&id, &pair.refresh_token).expect("revoke");
        assert_eq!(store.access_token_resource(&pair.access_token, 1013).expect("lookup"), None, "the refresh token's grant ended");
        store.revoke_token(&id, "never-issued").expect("unknown tokens are fine (RFC 7009)");

        let one = store.grant_directly(&id, RESOURCE, 1014).expect("grant");
        let two = store.grant_directly(&id, RESOURCE, 1015).expect("grant");
        let listed = store.clients(1016).expect("clients");
        assert_eq!((listed.len(), listed[0].grants, listed[0].last_used), (1, 2, Some(1015)));
        assert_eq!(store.revoke_client(&id).expect("revoke client"), 2);
        for token in [&one.access_token, &two.access_token] {
            assert_eq!(store.access_token_resource(token, 1017).expect("lookup"), None);
        }
        assert!(store.refresh(&id, &one.refresh_token, None, 1017).is_err());
        assert!(store.revoke_client("hcc_unknown").expect_err("unknown").description.contains("oauth clients"));
    }

    #[test]
    fn confidential_clients_need_their_secret_and_the_client_count_is_capped() {
        let (_dir, mut store) = store();
        let new = NewClient { name: "Inspector".into(), redirect_uris: vec![REDIRECT.into()], auth_method: AuthMethod::ClientSecretPost };
        let made = store.register(new.clone(), 1000).expect("register");
        let secret = made.client_secret.clone().expect("a secret");
        let credentials =
            |id: &str, secret: Option<&str>| ClientCredentials { client_id: Some(id.into()), client_secret: secret.map(str::to_owned) };
        assert_eq!(store.authenticate(&credentials(&made.client_id, Some(&secret))).expect("ok"), made.client_id);
        assert_eq!(store.authenticate(&credentials(&made.client_id, Some("wrong"))).expect_err("wrong").code, "invalid_client");
        assert_eq!(store.authenticate(&credentials(&made.client_id, None)).expect_err("missing").code, "invalid_client");
        assert_eq!(store.authenticate(&credentials("hcc_nobody", None)).expect_err("unknown").code, "invalid_client");

        for _ in 1..MAX_CLIENTS {
            store.register(new.clone(), 1000).expect("register");
        }
        store.register(new, 1001).expect("an unused client makes room at once");
    }

    /// Review 42 (F2): registration is open, so strangers who found the tunnel URL can
    /// register clients and fill the waiting list.
    /// The user's own sign-in still gets in (the oldest waiting request makes room), its
    /// code stays approvable while fewer than MAX_PENDING newer requests arrive, and the
    /// sign-in completes.
    #[test]
    fn strangers_who_fill_the_waiting_list_cannot_keep_the_users_sign_in_out() {
        let (_dir, mut store) = store();
        let evil = "https://attacker.example/cb";
        let register = |store: &mut OAuthStore, redirect: &str, now: i64| {
            let new = NewClient { name: "ChatGPT".into(), redirect_uris: vec![redirect.into()], auth_method: AuthMethod::None };
            store.register(new, now).expect("register").client_id
        };
        let to_evil = |id: &str| AuthorizeParams { redirect_uri: Some(evil.into()), ..params(id) };
        // One new client every 30 s with two requests.
        let mut now = 10_000;
        let mut oldest = None;
        for _ in 0..MAX_PENDING / MAX_PENDING_PER_CLIENT {
            let id = register(&mut store, evil, now);
            for _ in 0..MAX_PENDING_PER_CLIENT {
                let begun = store.begin(&to_evil(&id), RESOURCE, ISSUER, now).expect("a stranger's sign-in waits");
                oldest.get_or_insert(begun.request_id);
            }
            now += 30;
        }
        assert_eq!(store.pending(now).expect("pending").len() as i64, MAX_PENDING, "the strangers filled the list");

        let mine = register(&mut store, REDIRECT, now);
        let begun = store.begin(&params(&mine), RESOURCE, ISSUER, now + 1).expect("the user's sign-in gets in");
        let waiting = store.pending(now + 1).expect("pending");
        assert_eq!(waiting.len() as i64, MAX_PENDING, "still capped");
        assert_eq!(waiting.last().map(|p| p.user_code.as_str()), Some(begun.user_code.as_str()), "the newest is listed last");
        let oldest = oldest.expect("a first request");
        assert!(!matches!(store.poll(&oldest, ISSUER, now + 1).expect("poll"), PollAnswer::Waiting(_)), "the oldest made room");

        // The strangers go on at their pace while the user types the code.
        for _ in 0..5 {
            now += 30;
            let id = register(&mut store, evil, now);
            store.begin(&to_evil(&id), RESOURCE, ISSUER, now).expect("a stranger's sign-in waits");
        }
        store.decide(&begun.user_code, true, now + 1).expect("the user approves the code the page shows");
        let PollAnswer::Approved(to) = store.poll(&begun.request_id, ISSUER, now + 2).expect("poll") else { panic!("approved") };
        let code = query_value(&to, "code").expect("code");
        let pair = store.exchange_code(&mine, &code, Some(REDIRECT), Some(VERIFIER), Some(RESOURCE), now + 3).expect("tokens");
        assert!(store.access_token_resource(&pair.access_token, now + 4).expect("lookup").is_some());
    }

    /// Review 42 (F2): a client whose sign-in waits for approval is not evicted by new
    /// registrations, however many come; when every client holds a grant or is signing in,
    /// a registration is refused and says what to do.
    #[test]
    fn a_client_in_the_middle_of_signing_in_is_not_evicted_by_new_registrations() {
        let (_dir, mut store) = store();
        let mine = client(&mut store);
        let begun = store.begin(&params(&mine), RESOURCE, ISSUER, 1000).expect("begin");
        let stranger =
            NewClient { name: "ChatGPT".into(), redirect_uris: vec!["https://attacker.example/cb".into()], auth_method: AuthMethod::None };
        for n in 0..MAX_CLIENTS + 20 {
            store.register(stranger.clone(), 1001 + n).expect("a stranger registers");
        }
        let listed = store.clients(1200).expect("clients");
        assert_eq!(listed.len() as i64, MAX_CLIENTS, "still capped");
        assert!(listed.iter().any(|c| c.client_id == mine), "the user's client, signing in, stays");
        store.decide(&begun.user_code, true, 1201).expect("approve");
        let PollAnswer::Approved(to) = store.poll(&begun.request_id, ISSUER, 1202).expect("poll") else { panic!("approved") };
        let code = query_value(&to, "code").expect("code");
        store.exchange_code(&mine, &code, Some(REDIRECT), Some(VERIFIER), Some(RESOURCE), 1203).expect("tokens");

        // Every client holds a grant but one, which is signing in: nothing can make room.
        let signing_in = store.clients(1204).expect("clients").iter().find(|c| c.grants == 0).expect("a client").client_id.clone();
        for listed in store.clients(1204).expect("clients") {
            if listed.client_id != signing_in && listed.grants == 0 {
                store.grant_directly(&listed.client_id, RESOURCE, 1204).expect("grant");
            }
        }
        let own = AuthorizeParams { redirect_uri: Some("https://attacker.example/cb".into()), ..params(&signing_in) };
        store.begin(&own, RESOURCE, ISSUER, 1205).expect("begin");
        let full = store.register(stranger.clone(), 1206).expect_err("nothing can make room");
        assert!(full.description.contains("signing in") && full.description.contains("oauth deny --all"), "{full}");
        assert!(store.clients(1206).expect("clients").iter().any(|c| c.client_id == signing_in), "not evicted");
        store.deny_all(1207).expect("deny --all");
        store.register(stranger, 1208).expect("a denied sign-in no longer protects its client");
        assert!(store.clients(1208).expect("clients").iter().all(|c| c.client_id != signing_in), "evicted now");
    }

    /// Review 42 (HIGH-1): a stranger who knows the tunnel URL sends one registration and
    /// one sign-in request every second, for an hour, each from a new client. The user
    /// connects every 7 s (registers, opens the sign-in page) and approves the code the page
    /// shows 3 s later: every one of those sign-ins gets through. (With the global rate
    /// limits of fcaed84, the stranger's trickle kept both buckets empty: none did.)
    #[test]
    fn a_stranger_trickling_registrations_and_sign_ins_cannot_keep_the_user_from_signing_in() {
        let (_dir, mut store) = store();
        // An hour of requests: no fsync for each (the simulation's speed only).
        store.conn.execute_batch("PRAGMA synchronous=OFF").expect("pragma");
        let evil = "https://attacker.example/cb";
        let stranger = NewClient { name: "ChatGPT".into(), redirect_uris: vec![evil.into()], auth_method: AuthMethod::None };
        let mine = NewClient { name: "ChatGPT".into(), redirect_uris: vec![REDIRECT.into()], auth_method: AuthMethod::None };
        let start = 100_000;
        let end = start + 3600;
        let mut stranger_client = None;
        let mut user: Option<(String, Begun, i64)> = None;
        let (mut connects, mut signed_in, mut stranger_requests) = (0, 0, 0);
        for now in start..end {
            if let Ok(made) = store.register(stranger.clone(), now) {
                stranger_client = Some(made.client_id);
            }
            if let Some(id) = stranger_client.as_deref() {
                let to_evil = AuthorizeParams { redirect_uri: Some(evil.into()), ..params(id) };
                if store.begin(&to_evil, RESOURCE, ISSUER, now).is_ok() {
                    stranger_requests += 1;
                }
            }
            if (now - start) % 7 == 0 && now + 5 < end {
                connects += 1;
                if let Ok(made) = store.register(mine.clone(), now) {
                    if let Ok(begun) = store.begin(&params(&made.client_id), RESOURCE, ISSUER, now) {
                        user = Some((made.client_id, begun, now + 3));
                    }
                }
            }
            let approve_now = user.as_ref().is_some_and(|(_, _, at)| *at == now);
            if approve_now {
                let (id, begun, _) = user.take().expect("a sign-in");
                if store.decide(&begun.user_code, true, now).is_ok() {
                    if let Ok(PollAnswer::Approved(to)) = store.poll(&begun.request_id, ISSUER, now + 1) {
                        let code = query_value(&to, "code").expect("code");
                        if store.exchange_code(&id, &code, Some(REDIRECT), Some(VERIFIER), Some(RESOURCE), now + 1).is_ok() {
                            signed_in += 1;
                        }
                    }
                }
                // The test's 500 sign-ins would otherwise fill the client list with grants.
                store.revoke_client(&id).expect("revoke");
            }
        }
        assert_eq!(signed_in, connects, "every sign-in the user approved within 3 s got through ({connects} tried)");
        assert!(stranger_requests > 3000, "the stranger's requests got in too: {stranger_requests}");
        assert!(store.pending(end).expect("pending").len() as i64 <= MAX_PENDING);
        assert!(store.clients(end).expect("clients").len() as i64 <= MAX_CLIENTS);
    }

    /// Review 42 (LOW-7): `oauth approve` runs in another process than the server, so the
    /// request it found waiting can be pushed out before its update. It then reports that
    /// the request was pushed out, not "approved". (The temporary trigger plays the server:
    /// it pushes the request out as the approval is written.)
    #[test]
    fn an_approval_that_loses_the_race_with_a_push_out_says_so() {
        let (_dir, mut store) = store();
        let id = client(&mut store);
        let begun = store.begin(&params(&id), RESOURCE, ISSUER, 1000).expect("begin");
        store
            .conn
            .execute_batch(
                "CREATE TEMP TRIGGER pushed_out_meanwhile BEFORE UPDATE OF decision ON pending
                 WHEN OLD.decision = 'pending' AND NEW.decision IN ('approved', 'denied')
                 BEGIN UPDATE pending SET decision = 'evicted' WHERE request_hash = OLD.request_hash; SELECT RAISE(IGNORE); END",
            )
            .expect("trigger");
        let late = store.decide(&begun.user_code, true, 1001).expect_err("pushed out at the same moment");
        assert!(late.description.contains("pushed out"), "{late}");
        assert_eq!(store.poll(&begun.request_id, ISSUER, 1002).expect("poll"), PollAnswer::PushedOut, "the page agrees");
        let again = store.begin(&params(&id), RESOURCE, ISSUER, 1003).expect("begin");
        assert!(store.decide(&again.user_code, false, 1004).expect_err("denied too late").description.contains("pushed out"));
    }
}
