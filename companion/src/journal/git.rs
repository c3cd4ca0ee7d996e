//! A repository's branch and last commit for the handoff seed (X9), read with the `git`
//! binary under a timeout (no Git library: `gix` compiles too long for this project's
//! build budget; tools-read's `herdr_git` uses the binary too).
//!
//! Invariants:
//! - Read-only and bounded: `git rev-parse --abbrev-ref HEAD` and `git log -1`, each killed
//!   after [`GIT_TIMEOUT`]; no hook or fsmonitor runs (`core.hooksPath`, `core.fsmonitor`
//!   overridden), no prompt (`GIT_TERMINAL_PROMPT=0`), no lock taken
//!   (`GIT_OPTIONAL_LOCKS=0`).
//! - Where Git does not answer (no repository, no `git`, a timeout), there is no fact:
//!   `None`, never a guess.

use std::path::Path;
use std::time::Duration;

use super::handoff::GitFact;

/// How long one `git` call may take.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(2);

/// One `git` call's first output line in `cwd`, or `None`.
async fn git_line(cwd: &Path, args: &[&str]) -> Option<String> {
    let mut command = tokio::process::Command::new("git");
    command
        .arg("-C")
        .arg(cwd)
        .args(["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "--no-pager"])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(GIT_TIMEOUT, command.output()).await.ok()?.ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines().next().map(str::to_owned).filter(|l| !l.trim().is_empty())
}

/// The branch and last commit of the repository at `cwd`, when it is one and `git`
/// answers in time.
pub async fn head(cwd: &Path) -> Option<GitFact> {
    if !cwd.is_absolute() {
        return None;
    }
    let branch = git_line(cwd, &["rev-parse", "--abbrev-ref", "HEAD"]).await?;
    let last = git_line(cwd, &["log", "-1", "--format=%h%x09%s"]).await?;
    let (commit, subject) = last.split_once('\t').unwrap_or((last.as_str(), ""));
    Some(GitFact { branch, commit: commit.to_owned(), subject: subject.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let status = std::process::Command::new("git").arg("-C").arg(dir).args(args).status().expect("git runs");
        assert!(status.success(), "git {args:?}");
    }

    #[tokio::test]
    async fn x9_a_repository_gives_its_branch_and_last_commit_and_a_plain_directory_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        git(dir.path(), &["init", "-q", "-b", "split-parser"]);
        std::fs::write(dir.path().join("a.txt"), "a").expect("write");
        git(dir.path(), &["add", "a.txt"]);
        git(dir.path(), &["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "parser: split the lexer out"]);
        let fact = head(dir.path()).await.expect("a repository");
        assert_eq!((fact.branch.as_str(), fact.subject.as_str()), ("split-parser", "parser: split the lexer out"));
        assert!(fact.commit.len() >= 7 && fact.commit.chars().all(|c| c.is_ascii_hexdigit()), "{}", fact.commit);
        let plain = tempfile::tempdir().expect("tempdir");
        assert_eq!(head(plain.path()).await, None, "not a repository: no fact");
        assert_eq!(head(Path::new("relative/dir")).await, None);
    }
}
