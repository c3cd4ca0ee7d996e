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
        let config: Config = serde_json::from_str(text).map_err(|e| e.to_string())?;
        config.judge.check()?;
        Ok(config)
    }
}

impl JudgeConfig {
    /// Checks the numbers against [`bounds`] and each route's fields.
    fn check(&self) -> Result<(), String> {
        let (low, high) = bounds::THRESHOLD;
        if !(low..=high).contains(&self.threshold) {
            return Err(format!("judge.threshold is {}; it must be between {low} and {high}", self.threshold));
        }
        for (key, value, (low, high)) in [
            ("call_timeout_ms", self.call_timeout_ms, bounds::CALL_TIMEOUT_MS),
            ("pool_deadline_ms", self.pool_deadline_ms, bounds::POOL_DEADLINE_MS),
            ("cooldown_ms", self.cooldown_ms, bounds::COOLDOWN_MS),
        ] {
            if !(low..=high).contains(&value) {
                return Err(format!("judge.{key} is {value}; it must be between {low} and {high}"));
            }
        }
        for (index, route) in self.routes.iter().enumerate() {
            let at = format!("judge.routes[{index}] ({:?})", route.name);
            if route.name.trim().is_empty() || route.model.trim().is_empty() {
                return Err(format!("{at} needs a non-empty name and model"));
            }
            if !is_allowed_url(&route.url) {
                return Err(format!(
                    "{at} has url {:?}; use https://…, or http:// only for 127.0.0.1 / localhost",
                    route.url
                ));
            }
            if self.routes[..index].iter().any(|other| other.name == route.name) {
                return Err(format!("{at}: another route already has this name; names must be unique"));
            }
        }
        Ok(())
    }
}

/// `https://` anywhere; plain `http://` only to this machine (keys never cross a network
/// in clear text).
fn is_allowed_url(url: &str) -> bool {
    if url.starts_with("https://") && url.len() > "https://".len() {
        return true;
    }
    let Some(rest) = url.strip_prefix("http://") else { return false };
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = host.rsplit_once(':').map_or(host, |(host, _port)| host);
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
}

fn current_uid() -> u32 {
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
        let config = Config::parse(&format!(r#"{{"judge":{{"routes":[{}],"threshold":0.9}}}}"#, route("openai-chat", "https://x.test/v1"))).expect("valid");
        assert_eq!(config.judge.routes[0].protocol.capability(), Capability::Chat);
        assert_eq!(config.judge.threshold, 0.9);
        let vercel = Config::parse(&format!(r#"{{"judge":{{"routes":[{}]}}}}"#, route("decision-vercel", "https://jev.example.vercel.app/api/systemone"))).expect("decision-vercel is served");
        assert_eq!(vercel.judge.routes[0].protocol.capability(), Capability::Decision, "J5: decision-vercel is typed evaluation");
        assert!(Config::parse(&format!(r#"{{"judge":{{"routes":[{}]}}}}"#, route("decision-vercel", "http://10.0.0.2/api"))).is_err(), "the same url rule as every route");
    }

    #[test]
    fn mistakes_are_refused_with_what_is_wrong() {
        let refused = |text: String| Config::parse(&text).expect_err("refused");
        assert!(refused(r#"{"judge":{"treshold":0.8}}"#.to_owned()).contains("unknown field `treshold`"));
        assert!(refused(r#"{"judge":{"threshold":0.3}}"#.to_owned()).contains("between 0.5 and 0.99"));
        assert!(refused(r#"{"judge":{"pool_deadline_ms":60000}}"#.to_owned()).contains("pool_deadline_ms is 60000"));
        assert!(refused(format!(r#"{{"judge":{{"routes":[{}]}}}}"#, route("decision", "http://10.0.0.2/v1"))).contains("http:// only for 127.0.0.1"));
        assert!(refused(format!(r#"{{"judge":{{"routes":[{}]}}}}"#, route("grpc", "https://x.test"))).contains("unknown variant `grpc`"));
        let twice = format!(r#"{{"judge":{{"routes":[{},{}]}}}}"#, route("decision", "https://a.test"), route("decision", "https://b.test"));
        assert!(refused(twice).contains("names must be unique"));
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
