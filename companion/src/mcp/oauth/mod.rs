//! The OAuth 2.1 authorization server of `herdr-companion mcp --http ADDR --public-url URL`:
//! what a remote MCP client such as ChatGPT needs to reach the loopback server through an
//! HTTPS tunnel the user runs (cloudflared, Tailscale Funnel, …).
//!
//! - [`PublicUrl`]: the public origin (and optional path prefix) the tunnel serves, given
//!   explicitly with `--public-url`; every URL the server advertises is built from it, and
//!   the `Host` / `Origin` checks follow it;
//! - [`store`]: clients, waiting consent requests, codes and tokens in `oauth.db` (SQLite,
//!   0600) in the companion home, shared by the HTTP server and the `oauth` CLI;
//! - [`endpoints`]: the HTTP side — protected-resource metadata (RFC 9728),
//!   authorization-server metadata (RFC 8414), dynamic client registration (RFC 7591), the
//!   authorization page and its status poll, the token endpoint (authorization code with
//!   PKCE S256, refresh with rotation) and revocation (RFC 7009);
//! - [`cli`]: `herdr-companion oauth pending | approve CODE | deny CODE | deny --all | clients | revoke CLIENT_ID`.
//!
//! Invariants:
//! - nothing is granted from the web alone: an authorization code exists only after the
//!   user approved the request's short code on the workstation (`oauth approve`), and only
//!   the page holding the request's unguessable id can collect it;
//! - PKCE with S256 on every authorization code (`plain` and a missing challenge are
//!   refused); codes are single-use, and a second use revokes what the first one granted;
//! - every token is bound to this server's resource (`PublicUrl::resource`, RFC 8707), and
//!   the MCP endpoint refuses a token bound to another;
//! - codes, access tokens, refresh tokens, client secrets and pending-request ids are
//!   random (256 bits) and stored only as their SHA-256 — never in plain text;
//! - a refresh token is used once: its use rotates it, and a reuse of a rotated one revokes
//!   the whole grant (the token was stolen, or the client is confused);
//! - sizes and counts are capped ([`MAX_CLIENTS`], [`MAX_PENDING`], field lengths), so an
//!   unauthenticated caller cannot grow `oauth.db` without bound; the caps evict rather
//!   than refuse where a stranger could otherwise lock the user out (a client's third
//!   waiting request replaces its oldest, a request beyond [`MAX_PENDING`] pushes out the
//!   oldest waiting one, a new client replaces the oldest one that neither holds a grant
//!   nor is signing in), and `oauth deny --all` clears every waiting request at once;
//! - no rate limit on registrations or authorization requests: behind a tunnel every caller
//!   looks the same, so any global budget is one a stranger's trickle can drain, locking the
//!   user out (review 42). The caps above bound what `oauth.db` holds; the work a flood
//!   causes is bounded as on every other path, by the connection cap and the store's mutex
//!   (one request at a time);
//! - strangers' activity is visible: `oauth pending`, a pushed-out request's page and
//!   `oauth approve` of its code say how many requests were pushed out in the last
//!   [`PENDING_SECS`] and that someone else may know the tunnel URL.

pub mod cli;
pub mod endpoints;
pub mod store;

use std::io::Read;

use base64::Engine as _;
use sha2::{Digest, Sha256};
use thiserror::Error;

use super::http::MCP_PATH;

/// Lifetime of an access token (seconds).
pub const ACCESS_TOKEN_SECS: i64 = 3600;
/// Lifetime of a refresh token (seconds): 30 days, renewed by every rotation.
pub const REFRESH_TOKEN_SECS: i64 = 30 * 24 * 3600;
/// Lifetime of an authorization code once the page collected it (seconds).
pub const CODE_SECS: i64 = 300;
/// How long a consent request waits for `oauth approve` / `deny` (seconds).
pub const PENDING_SECS: i64 = 600;
/// Most registered clients kept; a registration beyond evicts the oldest client that holds
/// no grant and is not signing in (no waiting or approved request, no unused code), and is
/// refused only when every client holds a grant or is signing in.
pub const MAX_CLIENTS: i64 = 100;
/// Most consent requests waiting at once (all clients together); a new one pushes out the
/// oldest, so the newest (the one whose code the user reads) stays.
pub const MAX_PENDING: i64 = 20;
/// Most pushed-out requests remembered (so their page and `oauth approve` can say what
/// happened, and `oauth pending` how many were pushed out), each for [`PENDING_SECS`]
/// after it was pushed out.
pub const MAX_PUSHED_OUT: i64 = 100;
/// Most consent requests of one client waiting at once; a new one replaces its oldest.
pub const MAX_PENDING_PER_CLIENT: i64 = 2;
/// Most redirect URIs of one client.
pub const MAX_REDIRECT_URIS: usize = 10;
/// Longest redirect URI (bytes).
pub const MAX_REDIRECT_URI_BYTES: usize = 2000;
/// Longest client name (characters).
pub const MAX_CLIENT_NAME_CHARS: usize = 120;
/// Longest `state` parameter (bytes).
pub const MAX_STATE_BYTES: usize = 1024;
/// Largest body of an OAuth endpoint (bytes).
pub const MAX_OAUTH_BODY_BYTES: usize = 16 * 1024;
/// The one scope this server grants.
pub const SCOPE: &str = "herdr";

/// How a client authenticates at the token and revocation endpoints
/// (`token_endpoint_auth_method`, RFC 7591 §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    /// A public client: its `client_id` only (PKCE protects the code).
    None,
    /// `client_secret` in the form.
    ClientSecretPost,
    /// `client_secret` with HTTP Basic authentication.
    ClientSecretBasic,
}

impl AuthMethod {
    /// Every method, as the metadata lists them.
    pub const ALL: [&'static str; 3] = ["none", "client_secret_post", "client_secret_basic"];

    /// The registered name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::ClientSecretPost => "client_secret_post",
            Self::ClientSecretBasic => "client_secret_basic",
        }
    }

    /// The method of a registered name.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "none" => Some(Self::None),
            "client_secret_post" => Some(Self::ClientSecretPost),
            "client_secret_basic" => Some(Self::ClientSecretBasic),
            _ => None,
        }
    }
}

/// Why `--public-url` was refused.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PublicUrlError {
    /// Not a URL at all.
    #[error("--public-url {0} is not a URL; give the tunnel's public address, e.g. https://herdr.example.com")]
    NotUrl(String),
    /// Plain http to a host that is not this machine.
    #[error("--public-url {0} is not https; ChatGPT and OAuth need HTTPS — give the https:// address of your tunnel (plain http:// is accepted only for 127.0.0.1, [::1] or localhost, for a local proxy)")]
    NotHttps(String),
    /// Userinfo, query or fragment in the URL.
    #[error("--public-url {0} must be only an origin and an optional path prefix (no user, query or fragment)")]
    NotPlain(String),
    /// A path prefix that starts with a path the server itself serves (`/mcp`, `/oauth`,
    /// `/.well-known`), most likely the MCP URL given instead of the base address.
    #[error("--public-url {0} must be the tunnel's base address, without /mcp (the MCP endpoint is <public URL>/mcp); a path prefix may not start with /mcp, /oauth or /.well-known")]
    ReservedPrefix(String),
    /// A path prefix with characters that would need escaping.
    #[error("--public-url {0} has a path prefix with characters other than letters, digits, '-', '.', '_', '~' and '/'")]
    BadPrefix(String),
}

/// The public address of the MCP server, as the tunnel serves it: `https://HOST[:PORT][/prefix]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl {
    /// `scheme://host[:port]`, lower case, without a trailing slash.
    origin: String,
    /// `host[:port]` as a `Host` header names it (lower case; no port when it is the default).
    authority: String,
    /// The scheme's default port (443 or 80), which a `Host` header may also spell out.
    default_port: u16,
    /// `""` or `/a/b` (no trailing slash).
    prefix: String,
}

impl PublicUrl {
    /// Parses `--public-url`: `https://…` with an optional path prefix, or `http://` only
    /// for a loopback host (a local reverse proxy in tests).
    pub fn parse(text: &str) -> Result<Self, PublicUrlError> {
        let url = url::Url::parse(text).map_err(|_| PublicUrlError::NotUrl(text.to_owned()))?;
        let host = url.host_str().filter(|h| !h.is_empty()).ok_or_else(|| PublicUrlError::NotUrl(text.to_owned()))?;
        let default_port = match url.scheme() {
            "https" => 443,
            "http" if is_loopback_host(host) => 80,
            _ => return Err(PublicUrlError::NotHttps(text.to_owned())),
        };
        if !url.username().is_empty() || url.password().is_some() || url.query().is_some() || url.fragment().is_some() {
            return Err(PublicUrlError::NotPlain(text.to_owned()));
        }
        let prefix = url.path().trim_end_matches('/').to_owned();
        if !prefix.chars().all(|c| c.is_ascii_alphanumeric() || "-._~/".contains(c)) || prefix.contains("//") {
            return Err(PublicUrlError::BadPrefix(text.to_owned()));
        }
        let first = prefix.trim_start_matches('/').split('/').next().unwrap_or("");
        if matches!(first, "mcp" | "oauth" | ".well-known") {
            return Err(PublicUrlError::ReservedPrefix(text.to_owned()));
        }
        let host = host.to_ascii_lowercase();
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host,
        };
        Ok(Self { origin: format!("{}://{authority}", url.scheme()), authority, default_port, prefix })
    }

    /// The path prefix (`""` or `/a/b`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The issuer identifier of the authorization server: the public URL itself.
    pub fn issuer(&self) -> String {
        format!("{}{}", self.origin, self.prefix)
    }

    /// The protected resource (RFC 8707 / 9728): the public MCP endpoint.
    pub fn resource(&self) -> String {
        format!("{}{}{MCP_PATH}", self.origin, self.prefix)
    }

    /// The URL of an endpoint of this server (`path` starts with `/`).
    pub fn endpoint(&self, path: &str) -> String {
        format!("{}{}{path}", self.origin, self.prefix)
    }

    /// Where the protected-resource metadata is (RFC 9728 §3.1: the well-known path
    /// inserted between the host and the resource's path).
    pub fn resource_metadata_url(&self) -> String {
        format!("{}{}{}{MCP_PATH}", self.origin, endpoints::RESOURCE_METADATA_PATH, self.prefix)
    }

    /// The `Host` value the tunnel passes through.
    pub fn authority(&self) -> &str {
        &self.authority
    }

    /// The public origin (`https://host[:port]`).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// True when a request's `Host` header names the public host.
    pub fn host_matches(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        host == self.authority || host == format!("{}:{}", self.authority, self.default_port)
    }

    /// True when a request's `Origin` is the public origin or a page on this machine.
    pub fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim().to_ascii_lowercase();
        if origin == self.origin {
            return true;
        }
        url::Url::parse(&origin).ok().is_some_and(|url| {
            matches!(url.scheme(), "http" | "https") && url.host_str().is_some_and(is_loopback_host) && url.path() == "/"
        })
    }
}

/// `127.0.0.1` (any of 127/8), `[::1]` or `localhost`.
pub fn is_loopback_host(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost") || bare.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// 32 random bytes from the kernel.
pub fn random_bytes() -> std::io::Result<[u8; 32]> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes))?;
    Ok(bytes)
}

/// A new secret: `prefix` and 256 random bits in base64url (43 characters).
pub fn new_secret(prefix: &str) -> std::io::Result<String> {
    Ok(format!("{prefix}{}", base64url(&random_bytes()?)))
}

/// Base64url without padding (RFC 7636's encoding).
pub fn base64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The SHA-256 of a secret in hex: what `oauth.db` keeps instead of the secret.
pub fn secret_hash(secret: &str) -> String {
    Sha256::digest(secret.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// RFC 7636 §4.1: a code verifier is 43 to 128 characters of `[A-Za-z0-9-._~]`.
pub fn valid_verifier(verifier: &str) -> bool {
    (43..=128).contains(&verifier.len()) && verifier.chars().all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c))
}

/// An S256 code challenge is base64url of 32 bytes: exactly 43 characters.
pub fn valid_challenge(challenge: &str) -> bool {
    challenge.len() == 43 && challenge.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// RFC 7636 §4.6 with S256: `BASE64URL(SHA256(verifier)) == challenge`.
pub fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    valid_verifier(verifier) && same_secret(base64url(&Sha256::digest(verifier.as_bytes())).as_bytes(), challenge.as_bytes())
}

/// Compares two secrets in time that depends only on their lengths.
pub fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len() && given.iter().zip(expected).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// Seconds since the Unix epoch.
pub fn now_secs() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_urls_are_https_or_a_loopback_proxy() {
        let url = PublicUrl::parse("https://Herdr.Example.com/").expect("https");
        assert_eq!(url.issuer(), "https://herdr.example.com");
        assert_eq!(url.resource(), "https://herdr.example.com/mcp");
        assert_eq!(url.resource_metadata_url(), "https://herdr.example.com/.well-known/oauth-protected-resource/mcp");
        assert!(url.host_matches("herdr.example.com") && url.host_matches("HERDR.example.com:443"));
        assert!(!url.host_matches("127.0.0.1:8787") && !url.host_matches("evil.example.com"));
        assert!(url.origin_allowed("https://herdr.example.com") && url.origin_allowed("http://localhost:6274"));
        assert!(!url.origin_allowed("https://evil.example.com") && !url.origin_allowed("null"));

        let prefixed = PublicUrl::parse("https://box.tail1.ts.net:8443/herdr").expect("prefix");
        assert_eq!(prefixed.resource(), "https://box.tail1.ts.net:8443/herdr/mcp");
        assert_eq!(prefixed.endpoint("/oauth/token"), "https://box.tail1.ts.net:8443/herdr/oauth/token");
        assert_eq!(prefixed.resource_metadata_url(), "https://box.tail1.ts.net:8443/.well-known/oauth-protected-resource/herdr/mcp");
        assert!(prefixed.host_matches("box.tail1.ts.net:8443") && !prefixed.host_matches("box.tail1.ts.net"));

        let local = PublicUrl::parse("http://127.0.0.1:9000").expect("loopback proxy");
        assert!(local.host_matches("127.0.0.1:9000"));
        for (text, refusal) in [
            ("http://herdr.example.com", "is not https"),
            ("ftp://herdr.example.com", "is not https"),
            ("herdr.example.com", "is not a URL"),
            ("https://user@herdr.example.com", "no user, query or fragment"),
            ("https://herdr.example.com/?a=1", "no user, query or fragment"),
            ("https://herdr.example.com/a%20b", "path prefix"),
            ("https://herdr.example.com/mcp", "without /mcp"),
            ("https://herdr.example.com/mcp/", "without /mcp"),
            ("https://herdr.example.com/oauth/x", "without /mcp"),
        ] {
            let error = PublicUrl::parse(text).expect_err(text).to_string();
            assert!(error.contains(refusal), "{text}: {error}");
        }
    }

    #[test]
    fn pkce_s256_matches_the_rfc_7636_example() {
        // RFC 7636 Appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(valid_challenge(challenge) && pkce_matches(verifier, challenge));
        assert!(!pkce_matches("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXK", challenge), "another verifier");
        assert!(!pkce_matches(challenge, challenge), "the challenge itself (plain) does not pass");
        assert!(!valid_verifier("short") && !valid_verifier(&"a".repeat(129)) && !valid_verifier(&format!("{}!", "a".repeat(43))));
        let secret = new_secret("hc_at_").expect("random");
        assert_eq!(secret.len(), 6 + 43);
        assert_eq!(secret_hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
