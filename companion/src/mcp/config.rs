//! The companion's `config.json` as far as `herdr-companion mcp --http` reads it: the
//! bearer token every HTTP request must carry (`{"mcp": {"token": "…"}}`).
//!
//! Invariants: the token is read only from a regular file of this user with mode 0600
//! (anything else is refused, and the message says how to fix it); a missing file is
//! created 0600 with a fresh random token; a token is at least [`MIN_TOKEN_CHARS`]
//! characters.
//!
//! Next to it, [`AUTHORIZATION_FILE`] holds the whole header value `Bearer <token>` (0600,
//! rewritten whenever the token is read and the file differs): OpenAI's `tunnel-client`
//! reads a static header's value from a file (`--mcp.extra-headers "Authorization:
//! file:PATH"`), so the token never appears on a command line.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::paths::CompanionHome;

/// The file's name in the companion home.
pub const CONFIG_FILE: &str = "config.json";
/// The file in the companion home holding `Bearer <token>` for `tunnel-client`.
pub const AUTHORIZATION_FILE: &str = "mcp-authorization";
/// Shortest token accepted.
pub const MIN_TOKEN_CHARS: usize = 32;

/// Why no token could be had.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// Group or others may read or write the file.
    #[error("{path} has mode {mode:o}; it holds the MCP bearer token, so only you may read it: run `chmod 600 {path}` and start again", path = .path.display())]
    NotPrivate {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Another user owns the file.
    #[error("{path} belongs to uid {owner}, not to you; remove it (a new one is created) or fix its owner", path = .path.display())]
    WrongOwner {
        /// The file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
    },
    /// The file has no usable token.
    #[error("{path} has no mcp.token of at least {MIN_TOKEN_CHARS} characters; add {{\"mcp\": {{\"token\": \"<{MIN_TOKEN_CHARS} or more random characters>\"}}}} (or remove the file and a token is made)", path = .path.display())]
    NoToken {
        /// The file.
        path: PathBuf,
    },
    /// The file could not be read or written.
    #[error("cannot use {path}: {source}", path = .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

/// The token, and whether this call created the file holding it.
#[derive(Debug)]
pub struct Token {
    /// The bearer token.
    pub token: String,
    /// Where it is kept.
    pub path: PathBuf,
    /// True when the file was created just now.
    pub created: bool,
}

/// Reads the MCP token from `home`'s `config.json`, creating the file when it is missing.
pub fn mcp_token(home: &CompanionHome) -> Result<Token, ConfigError> {
    let path = home.root().join(CONFIG_FILE);
    let io = |source| ConfigError::Io { path: path.clone(), source };
    match std::fs::metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            home.ensure_private_dirs().map_err(io)?;
            let token = random_token().map_err(io)?;
            write_new(&path, &token).map_err(io)?;
            write_authorization(home, &token)?;
            return Ok(Token { token, path, created: true });
        }
        Err(e) => return Err(io(e)),
        Ok(meta) => {
            let mode = meta.mode() & 0o777;
            if mode != 0o600 {
                return Err(ConfigError::NotPrivate { path, mode });
            }
            // SAFETY: geteuid has no preconditions and cannot fail.
            let me = unsafe { libc::geteuid() };
            if meta.uid() != me {
                return Err(ConfigError::WrongOwner { path, owner: meta.uid() });
            }
        }
    }
    let mut text = String::new();
    std::fs::File::open(&path).and_then(|mut f| f.read_to_string(&mut text)).map_err(io)?;
    let token = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.pointer("/mcp/token").and_then(serde_json::Value::as_str).map(str::to_owned))
        .filter(|t| t.chars().count() >= MIN_TOKEN_CHARS && !t.chars().any(char::is_whitespace));
    match token {
        Some(token) => {
            write_authorization(home, &token)?;
            Ok(Token { token, path, created: false })
        }
        None => Err(ConfigError::NoToken { path }),
    }
}

/// The header value [`AUTHORIZATION_FILE`] must hold for `token`.
pub fn authorization_value(token: &str) -> String {
    format!("Bearer {token}\n")
}

/// (Re)writes [`AUTHORIZATION_FILE`] when it is missing, differs, or is not 0600: to a
/// private temporary file, then renamed over it.
fn write_authorization(home: &CompanionHome, token: &str) -> Result<(), ConfigError> {
    let path = home.root().join(AUTHORIZATION_FILE);
    let wanted = authorization_value(token);
    let current = std::fs::metadata(&path).ok().filter(|m| m.mode() & 0o777 == 0o600).and_then(|_| std::fs::read_to_string(&path).ok());
    if current.as_deref() == Some(wanted.as_str()) {
        return Ok(());
    }
    let temporary = home.root().join(format!("{AUTHORIZATION_FILE}.tmp"));
    let io = |source| ConfigError::Io { path: path.clone(), source };
    let _ = std::fs::remove_file(&temporary);
    let mut file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temporary).map_err(io)?;
    file.write_all(wanted.as_bytes()).and_then(|()| file.sync_all()).map_err(io)?;
    std::fs::rename(&temporary, &path).map_err(io)
}

fn write_new(path: &Path, token: &str) -> std::io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    let body = serde_json::json!({"mcp": {"token": token}});
    file.write_all(format!("{body:#}\n").as_bytes())?;
    file.sync_all()
}

/// 64 hex characters from the system's random source.
fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_missing_file_is_made_private_and_a_readable_one_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = CompanionHome::at(dir.path().join("home"));
        let made = mcp_token(&home).expect("created");
        assert!(made.created && made.token.len() == 64);
        let mode = std::fs::metadata(&made.path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let again = mcp_token(&home).expect("read back");
        assert_eq!((again.token.as_str(), again.created), (made.token.as_str(), false));

        // The header file for tunnel-client: the whole value, private, repaired when changed.
        let header = home.root().join(AUTHORIZATION_FILE);
        assert_eq!(std::fs::read_to_string(&header).expect("header file"), format!("Bearer {}\n", made.token));
        assert_eq!(std::fs::metadata(&header).expect("meta").permissions().mode() & 0o777, 0o600);
        std::fs::write(&header, "Bearer stale\n").expect("write");
        std::fs::set_permissions(&header, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        mcp_token(&home).expect("read again");
        assert_eq!(std::fs::read_to_string(&header).expect("header file"), format!("Bearer {}\n", made.token));
        assert_eq!(std::fs::metadata(&header).expect("meta").permissions().mode() & 0o777, 0o600);

        std::fs::set_permissions(&made.path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let refused = mcp_token(&home).expect_err("0644 is refused").to_string();
        assert!(refused.contains("mode 644") && refused.contains("chmod 600"), "{refused}");

        std::fs::set_permissions(&made.path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        std::fs::write(&made.path, r#"{"mcp": {"token": "short"}}"#).expect("write");
        let refused = mcp_token(&home).expect_err("a short token is refused").to_string();
        assert!(refused.contains("no mcp.token of at least 32"), "{refused}");
    }
}
