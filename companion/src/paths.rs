//! Where the companion keeps its files (docs/PROTOCOL.md "Names and places").
//!
//! Invariants: the home and its `run/` directory are private (0700) once
//! [`CompanionHome::ensure_private_dirs`] returns; nothing here creates files.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Environment variable that overrides the companion home.
pub const HOME_ENV: &str = "HERDR_CONTINUITY_HOME";

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
    /// Resolves the home: `flag` (from `--home`), then `$HERDR_CONTINUITY_HOME`, then
    /// `~/.local/state/herdr-continuity`.
    pub fn resolve(flag: Option<PathBuf>) -> Result<Self, NoHome> {
        if let Some(root) = flag {
            return Ok(Self { root });
        }
        if let Some(root) = std::env::var_os(HOME_ENV).filter(|v| !v.is_empty()) {
            return Ok(Self {
                root: PathBuf::from(root),
            });
        }
        let home = user_home().ok_or(NoHome)?;
        Ok(Self {
            root: home.join(".local/state/herdr-continuity"),
        })
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

    /// `runtime.log`.
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
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}
