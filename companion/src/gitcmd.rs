//! The one hardened `git` command line of the runtime: the workstation tools
//! (`tools::git`, the write tools' dirty check in `tools::edit`) and the journal's handoff
//! seed (`journal::git`) build every `git` run here, so the hardening is written once.
//!
//! Invariants (the repository is an agent's, and an untrusted clone's `.git/config` may
//! name a program):
//! - No configuration-named program runs: hooks (`core.hooksPath=/dev/null`), fsmonitor,
//!   external diff, the signature check's `gpg.program` (`log.showSignature=false`),
//!   transports and lazy fetch (`protocol.allow=never`, `core.sshCommand=`,
//!   `GIT_NO_LAZY_FETCH`), and each filter driver the repository names (found first with
//!   [`FILTER_QUERY`], switched off by [`filter_overrides`] names); no pager, no colour, no
//!   optional locks, no prompt, no system configuration, no implicit bare repository; every
//!   inherited `GIT_*` variable and `PAGER` is removed; stdin is closed.
//! - A `ceiling` (the parent of the registered project root) is a `GIT_CEILING_DIRECTORIES`
//!   entry: Git looks for a repository in the root and below it, never above it, so a root
//!   that is not itself inside a repository never reads (or runs the configuration of) a
//!   repository that merely contains it.
//! - The timeout is the caller's (each runs `git` under its own); [`ceiling_of`] gives the
//!   ceiling of a root.
//!
//! A leaf: it names no other module of the crate.

use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The configuration keys that would run a program and are switched off on every run (the
/// filter drivers are found per repository by [`filter_overrides`]).
const HARDENING: [&str; 18] = [
    "-c",
    "safe.bareRepository=explicit",
    "-c",
    "log.showSignature=false",
    "-c",
    "protocol.allow=never",
    "-c",
    "core.fsmonitor=",
    "-c",
    "diff.external=",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.quotepath=false",
    "-c",
    "color.ui=false",
    "-c",
    "core.sshCommand=",
];

/// The one `git` command every tool runs (`herdr_git` and the write tools' dirty check):
/// no configuration-named program runs (hooks, fsmonitor, external diff, signature check,
/// transport, the filter drivers in `filters` from [`filter_overrides`]), no pager, no
/// optional locks, no system configuration, no lazy fetch, no prompt, every inherited
/// `GIT_*` variable removed, no repository looked for above `ceiling` (when given).
pub fn hardened_command(dir: &Path, ceiling: Option<&Path>, filters: &[String]) -> std::process::Command {
    let mut command = std::process::Command::new("git");
    command.arg("-C").arg(dir).args(HARDENING);
    for name in filters {
        for key in ["clean", "smudge", "process"] {
            command.arg("-c").arg(format!("filter.{name}.{key}="));
        }
        command.arg("-c").arg(format!("filter.{name}.required=false"));
    }
    command.args(["--no-pager", "--no-optional-locks"]);
    for (var, _) in std::env::vars_os() {
        if var.to_string_lossy().starts_with("GIT_") {
            command.env_remove(&var);
        }
    }
    for var in ["PAGER", "GIT_PAGER"] {
        command.env_remove(var);
    }
    command
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("LC_ALL", "C")
        .stdin(Stdio::null());
    if let Some(ceiling) = ceiling {
        command.env("GIT_CEILING_DIRECTORIES", ceiling);
    }
    command
}

/// The arguments that read the filter driver names of the repository at `dir` (Git reads
/// its configuration only).
pub const FILTER_QUERY: [&str; 4] = ["config", "--includes", "--get-regexp", r"^filter\..*\.(clean|smudge|process|required)$"];

/// The filter driver names in the output of [`FILTER_QUERY`] (`filter.<name>.<key> value`
/// lines; a name may hold dots).
pub fn filter_overrides(output: &[u8]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for line in String::from_utf8_lossy(output).lines() {
        let key = line.split(' ').next().unwrap_or("");
        let Some(rest) = key.strip_prefix("filter.") else { continue };
        let Some((name, _)) = rest.rsplit_once('.') else { continue };
        if !name.is_empty() && !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    names
}

/// The `GIT_CEILING_DIRECTORIES` entry for the project root `root`: its parent (`/` for a
/// root without one).
pub fn ceiling_of(root: &Path) -> PathBuf {
    root.parent().map_or_else(|| PathBuf::from("/"), Path::to_path_buf)
}
