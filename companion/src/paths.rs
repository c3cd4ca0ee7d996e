//! Where the companion keeps its files (docs/PROTOCOL.md "Names and places").
//!
//! Invariants: the home and its `run/` directory are private (0700) once
//! [`CompanionHome::ensure_private_dirs`] returns; nothing here creates files. Which
//! directory is the default depends on the operating system ([`Os`]); the choice is a pure
//! function of an `Os` value and the user's home, so every platform's answer is tested on
//! any machine.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Environment variable that overrides the companion home.
pub const HOME_ENV: &str = "HERDR_CONTINUITY_HOME";

/// The operating-system conventions the companion follows for its own files and for the
/// browsers' host-manifest directories (`install`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    /// Linux (and any other Unix that is not macOS): XDG-style dot directories.
    Linux,
    /// macOS: `~/Library/Application Support/…`.
    MacOs,
}

impl Os {
    /// The system this binary was built for.
    pub const fn current() -> Self {
        if cfg!(target_os = "macos") {
            Self::MacOs
        } else {
            Self::Linux
        }
    }

    /// The name a user knows the system by.
    pub const fn display_name(self) -> &'static str {
        match self {
            Self::Linux => "Linux",
            Self::MacOs => "macOS",
        }
    }

    /// The longest Unix socket path `bind` accepts, in bytes: `sun_path` is 108 bytes on
    /// Linux and 104 on macOS, one of which is the terminating NUL.
    pub const fn max_socket_path_len(self) -> usize {
        match self {
            Self::Linux => 107,
            Self::MacOs => 103,
        }
    }
}

/// The default companion home for `os` under the user's home directory:
/// `~/.local/state/herdr-continuity` on Linux (XDG state), and
/// `~/Library/Application Support/herdr-continuity` on macOS.
pub fn default_home(os: Os, user_home: &Path) -> PathBuf {
    match os {
        Os::Linux => user_home.join(".local/state/herdr-continuity"),
        Os::MacOs => user_home.join("Library/Application Support/herdr-continuity"),
    }
}

/// The home could not be determined.
#[derive(Debug, Error)]
#[error("cannot find the companion home: neither --home, {HOME_ENV} nor HOME is set; set {HOME_ENV} to a private directory")]
pub struct NoHome;

/// The companion home directory and the well-known paths inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompanionHome {
    /// The home directory itself.
    root: PathBuf,
}

impl CompanionHome {
    /// Resolves the home: `flag` (from `--home`), then `$HERDR_CONTINUITY_HOME`, then the
    /// system's [`default_home`].
    pub fn resolve(flag: Option<PathBuf>) -> Result<Self, NoHome> {
        if let Some(root) = flag {
            return Ok(Self { root });
        }
        if let Some(root) = std::env::var_os(HOME_ENV).filter(|v| !v.is_empty()) {
            return Ok(Self { root: PathBuf::from(root) });
        }
        let home = user_home().ok_or(NoHome)?;
        Ok(Self { root: default_home(Os::current(), &home) })
    }

    /// A home at an explicit path.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The home directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `run/`: the socket and the lock.
    pub fn run_dir(&self) -> PathBuf {
        self.root.join("run")
    }

    /// `run/companion.sock`: the runtime's Unix socket.
    pub fn socket_path(&self) -> PathBuf {
        self.run_dir().join("companion.sock")
    }

    /// `run/runtime.lock`: the single-instance flock.
    pub fn lock_path(&self) -> PathBuf {
        self.run_dir().join("runtime.lock")
    }

    /// `runtime.log` (rotated to `runtime.log.1`, see `crate::log`).
    pub fn log_path(&self) -> PathBuf {
        self.root.join("runtime.log")
    }

    /// `bin/`: the generated host wrapper lives here.
    pub fn bin_dir(&self) -> PathBuf {
        self.root.join("bin")
    }

    /// `bin/dev.herdr.continuity-host`: what the host manifest's `path` points at.
    pub fn host_wrapper_path(&self) -> PathBuf {
        self.bin_dir().join("dev.herdr.continuity-host")
    }

    /// Creates the home and `run/` if needed and forces both to mode 0700.
    pub fn ensure_private_dirs(&self) -> io::Result<()> {
        for dir in [self.root.clone(), self.run_dir()] {
            fs::create_dir_all(&dir)?;
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))?;
        }
        Ok(())
    }
}

/// The user's home directory from `$HOME`.
pub fn user_home() -> Option<PathBuf> {
    std::env::var_os("HOME").filter(|v| !v.is_empty()).map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_home_follows_each_systems_convention() {
        let home = Path::new("/Users/ada");
        assert_eq!(default_home(Os::Linux, home), Path::new("/Users/ada/.local/state/herdr-continuity"));
        assert_eq!(default_home(Os::MacOs, home), Path::new("/Users/ada/Library/Application Support/herdr-continuity"));
    }

    #[test]
    fn this_build_knows_its_system() {
        let expected = if cfg!(target_os = "macos") { Os::MacOs } else { Os::Linux };
        assert_eq!(Os::current(), expected);
    }
}
