//! The runtime's connection to Herdr (docs/PROTOCOL.md "Names and places", SPEC N3).
//!
//! - [`client`]: one request per connection, typed errors, the `ping` protocol check.
//! - [`monitor`]: polls Herdr and publishes a [`HerdrStatus`] on a `watch` channel.
//! - [`catalog`]: the pure snapshot / status diff that becomes stream events.
//!
//! A leaf of the runtime's layering: it knows Herdr's protocol and nothing of the event
//! stream (whose Herdr sync loop, `crate::stream::sync`, calls into this module).

pub mod catalog;
pub mod client;
pub mod monitor;

pub use client::{ping, request, HerdrError, Pong};
pub use monitor::{spawn_monitor, HerdrState, HerdrStatus};

use std::path::PathBuf;

/// The only Herdr socket protocol this runtime speaks.
pub const SUPPORTED_PROTOCOL: u64 = 20;

/// Where the Herdr socket location can come from, highest priority first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SocketSources {
    /// `--herdr-session NAME`.
    pub session_flag: Option<String>,
    /// `$HERDR_SOCKET_PATH`.
    pub socket_path_env: Option<String>,
    /// `$HERDR_SESSION`.
    pub session_env: Option<String>,
    /// `$HOME`.
    pub home: Option<PathBuf>,
}

impl SocketSources {
    /// Reads the environment; `session_flag` comes from the command line.
    pub fn from_env(session_flag: Option<String>) -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Self { session_flag, socket_path_env: var("HERDR_SOCKET_PATH"), session_env: var("HERDR_SESSION"), home: crate::paths::user_home() }
    }
}

/// Picks the Herdr socket: `--herdr-session`, then `HERDR_SOCKET_PATH`, then
/// `HERDR_SESSION`, then `~/.config/herdr/herdr.sock`.
pub fn discover_socket(sources: &SocketSources) -> PathBuf {
    let config = sources.home.clone().unwrap_or_else(|| PathBuf::from("/")).join(".config/herdr");
    let session_socket = |name: &str| config.join("sessions").join(name).join("herdr.sock");
    if let Some(name) = &sources.session_flag {
        return session_socket(name);
    }
    if let Some(path) = &sources.socket_path_env {
        return PathBuf::from(path);
    }
    if let Some(name) = &sources.session_env {
        return session_socket(name);
    }
    config.join("herdr.sock")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_discovery_follows_the_documented_priority() {
        let all = SocketSources {
            session_flag: Some("flag".into()),
            socket_path_env: Some("/env/herdr.sock".into()),
            session_env: Some("envsession".into()),
            home: Some("/home/u".into()),
        };
        let mut sources = all.clone();
        let mut seen = vec![discover_socket(&sources)];
        sources.session_flag = None;
        seen.push(discover_socket(&sources));
        sources.socket_path_env = None;
        seen.push(discover_socket(&sources));
        sources.session_env = None;
        seen.push(discover_socket(&sources));
        let seen: Vec<String> = seen.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(
            seen,
            [
                "/home/u/.config/herdr/sessions/flag/herdr.sock",
                "/env/herdr.sock",
                "/home/u/.config/herdr/sessions/envsession/herdr.sock",
                "/home/u/.config/herdr/herdr.sock",
            ]
        );
    }
}
