//! `config.json` in the companion home: the user's own settings, read by the runtime and
//! the CLI (a leaf: it knows one outside thing, that file).
//!
//! The file holds provider keys, so it is read only when it is private: a regular file
//! owned by this user with no bits for group or others (mode 0600). Anything else is
//! refused with a [`ConfigError`] that says how to fix it; nothing is read from the
//! environment (SPEC J5: environment variables are never a provider source).
//!
//! The shape is a general typed [`Config`]: each feature owns one top-level section (today
//! [`JudgeConfig`] under `judge`); top-level keys this release does not know are ignored,
//! so a newer companion's settings can live in the same file. Inside a known section an
//! unknown key is an error (a misspelt `api_kye` must not silently disable a route).
//!
//! A missing file is the default configuration (no provider routes).

use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use thiserror::Error;

/// The file name in the companion home.
pub const CONFIG_FILE: &str = "config.json";

/// The largest `config.json` read (a few routes need a few KB).
pub const MAX_CONFIG_BYTES: u64 = 256 * 1024;

/// The companion's configuration.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Config {
    /// The turn-end judge's providers and bounds.
    #[serde(default)]
    pub judge: JudgeConfig,
}

/// `judge`: provider routes of the turn-end judge and how long it may wait for them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JudgeConfig {
    /// Routes in priority order: the first healthy route of a capability is asked first.
    pub routes: Vec<Route>,
    /// A decision route's probability at or above which work is left (`continue`); at or
    /// below `1 - threshold` the reply is `done`; in between it is unsure. 0.5–0.99.
    pub threshold: f64,
    /// How long one provider call may take, in ms.
    pub call_timeout_ms: u64,
    /// How long one capability's whole pool (every route tried in turn) may take, in ms.
    pub pool_deadline_ms: u64,
    /// How long a failed route is skipped before it is tried again, in ms.
    pub cooldown_ms: u64,
    /// Whether decision routes are also asked the five goal-mode priors (SPEC J7).
    pub goal_priors: bool,
    /// The authenticated global route pool whose routes follow the local ones (SPEC J5).
    pub global_pool: Option<GlobalPoolConfig>,
}

/// `judge.global_pool`: where the shared routes are fetched and with which token.
///
/// `GET <url>` with `Authorization: Bearer <token>` answers `{"routes": [Route, …]}`
/// (see [`crate::providers::route_pool`]); the routes are kept for `cache_ttl_ms` and
/// asked only after the local routes of the same capability gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GlobalPoolConfig {
    /// The pool's address (`https://…`; `http://` only for loopback stand-ins).
    pub url: String,
    /// The bearer token that authenticates this machine to the pool.
    pub token: String,
    /// How long a fetched route list is used before it is fetched again, in ms.
    #[serde(default = "GlobalPoolConfig::default_cache_ttl_ms")]
    pub cache_ttl_ms: u64,
}

impl GlobalPoolConfig {
    fn default_cache_ttl_ms() -> u64 {
        300_000
    }
}

/// Bounds of [`JudgeConfig`]'s numbers. Both pools together must fit in the runtime's
/// 30 s per-request limit, so one pool's deadline is at most 14 s.
pub mod bounds {
    /// `threshold`: lowest and highest allowed.
    pub const THRESHOLD: (f64, f64) = (0.5, 0.99);
    /// `call_timeout_ms`: lowest and highest allowed.
    pub const CALL_TIMEOUT_MS: (u64, u64) = (200, 14_000);
    /// `pool_deadline_ms`: lowest and highest allowed.
    pub const POOL_DEADLINE_MS: (u64, u64) = (200, 14_000);
    /// `cooldown_ms`: lowest and highest allowed.
    pub const COOLDOWN_MS: (u64, u64) = (0, 3_600_000);
    /// `global_pool.cache_ttl_ms`: lowest and highest allowed.
    pub const CACHE_TTL_MS: (u64, u64) = (1_000, 3_600_000);
    /// The most routes a global pool may answer.
    pub const MAX_POOL_ROUTES: usize = 32;
}

impl Default for JudgeConfig {
    fn default() -> Self {
        Self {
            routes: Vec::new(),
            threshold: 0.75,
            call_timeout_ms: 6_000,
            pool_deadline_ms: 12_000,
            cooldown_ms: 60_000,
            goal_priors: false,
            global_pool: None,
        }
    }
}

/// One provider route (the same object in the local file and a shared pool, SPEC J5).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// A name of the user's choosing, shown in verdict reasons and the log.
    pub name: String,
    /// The wire protocol, which also gives the capability.
    pub protocol: RouteProtocol,
    /// The base URL (`https://…`; `http://` only for loopback stand-ins).
    pub url: String,
    /// The model to ask.
    pub model: String,
    /// Sent as `Authorization: Bearer …`; empty sends no header.
    #[serde(default)]
    pub api_key: String,
}

/// A route's wire protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum RouteProtocol {
    /// Typed evaluation, TypeSafe System One style: `POST <url>/systemone`.
    #[serde(rename = "decision")]
    Decision,
    /// Typed evaluation on a Vercel-hosted endpoint: the same System One request and
    /// answer as [`RouteProtocol::Decision`], POSTed to `url` as written.
    #[serde(rename = "decision-vercel")]
    DecisionVercel,
    /// OpenAI-compatible chat: `POST …/v1/chat/completions`.
    #[serde(rename = "openai-chat")]
    OpenaiChat,
}

/// What a route can be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    /// A typed decision with a probability.
    Decision,
    /// A chat completion.
    Chat,
}

impl RouteProtocol {
    /// The capability this protocol serves.
    pub fn capability(self) -> Capability {
        match self {
            RouteProtocol::Decision | RouteProtocol::DecisionVercel => Capability::Decision,
            RouteProtocol::OpenaiChat => Capability::Chat,
        }
    }
}

impl JudgeConfig {
    /// The routes of `capability`, in priority order.
    pub fn routes_of(&self, capability: Capability) -> impl Iterator<Item = &Route> {
        self.routes.iter().filter(move |r| r.protocol.capability() == capability)
    }
}

/// Why `config.json` was refused. Each message names the file and what to do.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// Group or others may read or write the file (it holds provider keys).
    #[error("{path} has mode {mode:04o}: it holds provider keys, so it must be private to you; run `chmod 600 {path}` and try again")]
    NotPrivate {
        /// The file.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// Another user owns the file.
    #[error("{path} belongs to uid {owner}, not to you (uid {uid}); recreate it as yourself and `chmod 600` it")]
    NotOwned {
        /// The file.
        path: String,
        /// Its owner.
        owner: u32,
        /// This process's uid.
        uid: u32,
    },
    /// Not a regular file, or too large.
    #[error("{path} {why}; replace it with a JSON object of at most {MAX_CONFIG_BYTES} bytes")]
    NotAFile {
        /// The file.
        path: String,
        /// What it is instead.
        why: String,
    },
    /// Reading it failed.
    #[error("cannot read {path}: {source}; check the file and the companion home with `herdr-companion doctor`")]
    Read {
        /// The file.
        path: String,
        /// The IO error.
        source: io::Error,
    },
    /// It is not the documented JSON.
    #[error("{path} is not a valid configuration: {detail}; see the README's \"Turn-end judge\" section for the shape")]
    Invalid {
        /// The file.
        path: String,
        /// What serde or the checks found.
        detail: String,
    },
}

/// The path of `config.json` in the companion home `home`.
pub fn config_path(home: &Path) -> PathBuf {
    home.join(CONFIG_FILE)
}

impl Config {
    /// Reads `home/config.json`: the default when it does not exist, an error when it is
    /// not private, not readable or not valid.
    pub fn load(home: &Path) -> Result<Self, ConfigError> {
        let path = config_path(home);
        let shown = path.display().to_string();
        let metadata = match fs::metadata(&path) {
            Ok(metadata) => metadata,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => return Err(ConfigError::Read { path: shown, source }),
        };
        if !metadata.is_file() {
            return Err(ConfigError::NotAFile { path: shown, why: "is not a regular file".to_owned() });
        }
        let uid = current_uid();
        if metadata.uid() != uid {
            return Err(ConfigError::NotOwned { path: shown, owner: metadata.uid(), uid });
        }
        let mode = metadata.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Err(ConfigError::NotPrivate { path: shown, mode });
        }
        if metadata.len() > MAX_CONFIG_BYTES {
            return Err(ConfigError::NotAFile { path: shown, why: format!("is {} bytes", metadata.len()) });
        }
        let mut text = String::new();
        fs::File::open(&path)
            .and_then(|file| file.take(MAX_CONFIG_BYTES + 1).read_to_string(&mut text))
            .map_err(|source| ConfigError::Read { path: shown.clone(), source })?;
        Self::parse(&text).map_err(|detail| ConfigError::Invalid { path: shown, detail })
    }

    /// Parses and checks the file's text; the error is a sentence about what is wrong.
    pub fn parse(text: &str) -> Result<Self, String> {
        let config: Config = serde_json::from_str(text).map_err(|e| without_values(&e))?;
        config.judge.check()?;
        Ok(config)
    }
}

impl JudgeConfig {
    /// Checks the numbers against [`bounds`] and each route's fields.
    fn check(&self) -> Result<(), String> {
        let (low, high) = bounds::THRESHOLD;
        if !(low..=high).contains(&self.threshold) {
            return Err(format!("judge.threshold is out of range; it must be between {low} and {high}"));
        }
        for (key, value, (low, high)) in [
            ("call_timeout_ms", self.call_timeout_ms, bounds::CALL_TIMEOUT_MS),
            ("pool_deadline_ms", self.pool_deadline_ms, bounds::POOL_DEADLINE_MS),
            ("cooldown_ms", self.cooldown_ms, bounds::COOLDOWN_MS),
        ] {
            if !(low..=high).contains(&value) {
                return Err(format!("judge.{key} is out of range; it must be between {low} and {high}"));
            }
        }
        check_routes(&self.routes, "judge.routes")?;
        if let Some(pool) = &self.global_pool {
            check_url(&pool.url).map_err(|why| format!("judge.global_pool.url is refused: {why}; {URL_RULE}"))?;
            if pool.token.trim().is_empty() {
                return Err("judge.global_pool needs a non-empty token (the pool serves only authenticated machines)".to_owned());
            }
            let (low, high) = bounds::CACHE_TTL_MS;
            if !(low..=high).contains(&pool.cache_ttl_ms) {
                return Err(format!("judge.global_pool.cache_ttl_ms is out of range; it must be between {low} and {high}"));
            }
        }
        Ok(())
    }
}

/// What a route or pool url may be.
const URL_RULE: &str = "use https://…, or http:// only for 127.0.0.1 / localhost, with no user name or password in it";

/// Checks each route of `routes` (named `field` in messages): a name and a model, an
/// allowed url, names unique. Local routes and a global pool's answer are checked alike.
/// Messages name the field, never its value (a url or a name may carry a secret).
pub fn check_routes(routes: &[Route], field: &str) -> Result<(), String> {
    for (index, route) in routes.iter().enumerate() {
        let at = format!("{field}[{index}]");
        if route.name.trim().is_empty() || route.model.trim().is_empty() {
            return Err(format!("{at} needs a non-empty name and model"));
        }
        check_url(&route.url).map_err(|why| format!("{at}.url is refused: {why}; {URL_RULE}"))?;
        if routes[..index].iter().any(|other| other.name == route.name) {
            return Err(format!("{at}.name is the name of an earlier route too; names must be unique"));
        }
    }
    Ok(())
}

/// Reads `url` with a URL parser: `https://` to any host; plain `http://` only to this
/// machine (keys never cross a network in clear text); never a user name or password
/// (`http://127.0.0.1:1@evil.example/` is a request to evil.example). The reason names no
/// part of the url.
pub fn check_url(url: &str) -> Result<url::Url, &'static str> {
    let parsed = url::Url::parse(url).map_err(|_| "it is not a valid absolute URL")?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("it carries a user name or password (userinfo)");
    }
    let loopback = match parsed.host() {
        Some(url::Host::Domain(name)) => name == "localhost",
        Some(url::Host::Ipv4(ip)) => ip == std::net::Ipv4Addr::LOCALHOST,
        Some(url::Host::Ipv6(ip)) => ip == std::net::Ipv6Addr::LOCALHOST,
        None => return Err("it has no host"),
    };
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if loopback => Ok(parsed),
        "http" => Err("plain http:// goes to another machine"),
        _ => Err("its scheme is not https"),
    }
}

/// serde_json's error for config.json (or a route pool's answer) without the values it quotes: an `invalid type:
/// string "sk-…"` would print a key that was put in the wrong field. Field names (keys),
/// the expected shape and the line and column stay.
pub fn without_values(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    let message = text.strip_suffix(&suffix).unwrap_or(&text);
    let expected = message.split_once(", expected ").map(|(_, expected)| expected);
    let shown = match (message.split(':').next().unwrap_or(""), expected) {
        (m, _) if m.starts_with("unknown field") || m.starts_with("missing field") || m.starts_with("duplicate field") => {
            message.to_owned()
        }
        ("invalid type", Some(expected)) => format!("a value has the wrong type (expected {expected})"),
        ("invalid value", Some(expected)) => format!("a value is not allowed (expected {expected})"),
        ("invalid length", Some(expected)) => format!("a list has the wrong length (expected {expected})"),
        (m, Some(expected)) if m.starts_with("unknown variant") => format!("a value is not one of the known ones (expected {expected})"),
        _ if error.is_syntax() || error.is_eof() => message.to_owned(),
        _ => "a value is not what the field takes".to_owned(),
    };
    format!("{shown}{suffix}")
}

pub(crate) fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(protocol: &str, url: &str) -> String {
        format!(r#"{{"name":"r","protocol":"{protocol}","url":"{url}","model":"m","api_key":"k"}}"#)
    }

    #[test]
    fn other_sections_are_tolerated_and_defaults_fill_in() {
        let config = Config::parse(r#"{"mcp":{"bearer_token":"t"},"judge":{"routes":[]}}"#).expect("valid");
        assert_eq!(config.judge, JudgeConfig::default());
        assert_eq!(Config::parse("{}").expect("valid"), Config::default());
        let config = Config::parse(&format!(r#"{{"judge":{{"routes":[{}],"threshold":0.9}}}}"#, route("openai-chat", "https://x.test/v1")))
            .expect("valid");
        assert_eq!(config.judge.routes[0].protocol.capability(), Capability::Chat);
        assert_eq!(config.judge.threshold, 0.9);
        let vercel = Config::parse(&format!(
            r#"{{"judge":{{"routes":[{}]}}}}"#,
            route("decision-vercel", "https://jev.example.vercel.app/api/systemone")
        ))
        .expect("decision-vercel is served");
        assert_eq!(vercel.judge.routes[0].protocol.capability(), Capability::Decision, "J5: decision-vercel is typed evaluation");
        assert!(
            Config::parse(&format!(r#"{{"judge":{{"routes":[{}]}}}}"#, route("decision-vercel", "http://10.0.0.2/api"))).is_err(),
            "the same url rule as every route"
        );
    }

    #[test]
    fn mistakes_are_refused_with_what_is_wrong() {
        let refused = |text: String| Config::parse(&text).expect_err("refused");
        assert!(refused(r#"{"judge":{"treshold":0.8}}"#.to_owned()).contains("unknown field `treshold`"));
        assert!(refused(r#"{"judge":{"threshold":0.3}}"#.to_owned()).contains("between 0.5 and 0.99"));
        assert!(refused(r#"{"judge":{"pool_deadline_ms":60000}}"#.to_owned()).contains("pool_deadline_ms is out of range"));
        assert!(refused(format!(r#"{{"judge":{{"routes":[{}]}}}}"#, route("decision", "http://10.0.0.2/v1")))
            .contains("http:// only for 127.0.0.1"));
        assert!(refused(format!(r#"{{"judge":{{"routes":[{}]}}}}"#, route("grpc", "https://x.test")))
            .contains("a value is not one of the known ones (expected one of `decision`"));
        let twice =
            format!(r#"{{"judge":{{"routes":[{},{}]}}}}"#, route("decision", "https://a.test"), route("decision", "https://b.test"));
        assert!(refused(twice).contains("names must be unique"));
    }

    /// Issue 23: `http://127.0.0.1:1@evil.example/` passed the local-URL rule (a string
    /// split took `127.0.0.1` for the host; the request goes to evil.example).
    #[test]
    fn urls_are_read_by_a_url_parser_and_userinfo_is_refused() {
        for good in ["https://x.test/v1", "http://127.0.0.1:9/v1", "http://localhost/v1", "http://[::1]:8/v1", "https://a.test/p?k=1"] {
            assert!(check_url(good).is_ok(), "{good}");
        }
        for (bad, why) in [
            ("http://127.0.0.1:1@evil.example/", "userinfo"),
            ("https://user:pw@x.test/v1", "userinfo"),
            ("http://localhost@evil.example/", "userinfo"),
            ("http://127.0.0.1.evil.example/", "another machine"),
            ("http://10.0.0.2/v1", "another machine"),
            ("http://localhost.evil.example/", "another machine"),
            ("ftp://x.test/", "scheme"),
            ("https://", "not a valid"),
            ("127.0.0.1:9/v1", "not a valid"),
        ] {
            let refused = check_url(bad).expect_err(bad);
            assert!(refused.contains(why), "{bad}: {refused}");
        }
        let text = format!(r#"{{"judge":{{"routes":[{}]}}}}"#, route("decision", "http://127.0.0.1:1@evil.example/"));
        let refused = Config::parse(&text).expect_err("userinfo is refused");
        assert_eq!(refused, "judge.routes[0].url is refused: it carries a user name or password (userinfo); use https://…, or http:// only for 127.0.0.1 / localhost, with no user name or password in it");
    }

    /// Issue 23: config errors echoed values (`has url "https://…?key=…"`, serde's
    /// `invalid type: string "sk-…"`). They name the field and never print a value.
    #[test]
    fn config_errors_never_echo_a_value() {
        let secret = "sk-SECRET-0123456789";
        for text in [
            format!(r#"{{"judge":{{"routes":[{}]}}}}"#, route("decision", &format!("http://10.0.0.2/v1?key={secret}"))),
            format!(r#"{{"judge":{{"routes":[{}]}}}}"#, route("decision", &format!("https://{secret}@x.test/v1"))),
            format!(r#"{{"judge":{{"threshold":"{secret}"}}}}"#),
            format!(r#"{{"judge":{{"routes":[{{"name":"r","protocol":"{secret}","url":"https://x.test","model":"m"}}]}}}}"#),
            r#"{"judge":{"routes":[{"name":"r","protocol":"decision","url":"https://x.test","model":"m","api_key":7}]}}"#.to_owned(),
            format!(r#"{{"judge":{{"global_pool":{{"url":"http://x.test/{secret}","token":"t"}}}}}}"#),
            format!(
                r#"{{"judge":{{"routes":[{{"name":"{secret}","protocol":"decision","url":"https://x.test","model":"m"}},{{"name":"{secret}","protocol":"decision","url":"https://y.test","model":"m"}}]}}}}"#
            ),
            format!(r#"{{"judge":{{"cooldown_ms":{}}}}}"#, u64::MAX),
            format!(r#"{{"judge":{{"routes":"{secret}"}}}}"#),
        ] {
            let refused = Config::parse(&text).expect_err("refused");
            assert!(!refused.contains(secret) && !refused.contains("SECRET") && !refused.contains(&u64::MAX.to_string()), "{refused}");
            assert!(refused.contains("judge") || refused.contains("line 1"), "the message says where: {refused}");
        }
        let wrong_type = Config::parse(&format!(r#"{{"judge":{{"threshold":"{secret}"}}}}"#)).expect_err("refused");
        assert_eq!(wrong_type, "a value has the wrong type (expected f64) at line 1 column 44");
    }

    #[test]
    fn a_global_pool_needs_an_allowed_url_and_a_token() {
        let pool = |body: &str| Config::parse(&format!(r#"{{"judge":{{"global_pool":{body}}}}}"#));
        let read = pool(r#"{"url":"https://routes.example.workers.dev/v1/routes","token":"t"}"#).expect("valid");
        let global = read.judge.global_pool.expect("the pool");
        assert_eq!(
            (global.url.as_str(), global.token.as_str(), global.cache_ttl_ms),
            ("https://routes.example.workers.dev/v1/routes", "t", 300_000)
        );
        assert_eq!(Config::parse("{}").expect("valid").judge.global_pool, None, "no pool unless configured");
        assert!(pool(r#"{"url":"http://10.1.1.1/routes","token":"t"}"#).expect_err("refused").contains("judge.global_pool.url is refused"));
        assert!(pool(r#"{"url":"https://x.test","token":" "}"#).expect_err("refused").contains("non-empty token"));
        assert!(pool(r#"{"url":"https://x.test"}"#).expect_err("refused").contains("missing field `token`"));
        assert!(pool(r#"{"url":"https://x.test","token":"t","cache_ttl_ms":10}"#)
            .expect_err("refused")
            .contains("cache_ttl_ms is out of range"));
        assert!(pool(r#"{"url":"https://x.test","token":"t","ttl":10}"#).expect_err("refused").contains("unknown field `ttl`"));
    }

    #[test]
    fn only_a_private_file_of_ours_is_read() {
        let home = tempfile::tempdir().expect("tempdir");
        assert_eq!(Config::load(home.path()).expect("missing is default"), Config::default());
        let path = config_path(home.path());
        fs::write(&path, r#"{"judge":{"threshold":0.8}}"#).expect("write");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
        let refused = Config::load(home.path()).expect_err("0644 is refused").to_string();
        assert!(refused.contains("mode 0644") && refused.contains(&format!("chmod 600 {}", path.display())), "{refused}");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");
        assert_eq!(Config::load(home.path()).expect("0600 is read").judge.threshold, 0.8);
        fs::write(&path, "{not json").expect("write");
        assert!(Config::load(home.path()).expect_err("invalid").to_string().contains("is not a valid configuration"));
    }
}
