//! A repository's branch and last commit for the handoff seed (X9), read with the `git`
//! binary under a timeout (no Git library: `gix` compiles too long for this project's
//! build budget; the tools' `herdr_git` uses the binary too, through the same
//! `crate::gitcmd`).
//!
//! Invariants:
//! - Read-only and bounded: `git rev-parse --abbrev-ref HEAD` and `git log -1`, each killed
//!   after [`GIT_TIMEOUT`], built by the runtime's one hardened command line
//!   (`crate::gitcmd`): nothing the repository's config names runs (no hook, fsmonitor,
//!   signature program or fetch), no prompt, no lock taken, no inherited `GIT_*` variable.
//! - Where Git does not answer (no repository, no `git`, a timeout, a git older than 2.31,
//!   which ignores the hardening's settings), there is no fact:
//!   `None`, never a guess.

use std::path::Path;
use std::time::Duration;

use super::handoff::GitFact;

/// How long one `git` call may take.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(2);

/// One `git` call's first output line in `cwd`, or `None`.
async fn git_line(cwd: &Path, args: &[&str]) -> Option<String> {
    // The pane's directory may be below the repository's top: no ceiling. Neither
    // question reads a blob, so no filter driver can run.
    let mut command = tokio::process::Command::from(crate::gitcmd::hardened_command(cwd, None, &[]));
    command.args(args).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null()).kill_on_drop(true);
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
    let found = tokio::task::spawn_blocking(crate::gitcmd::installed_version).await.ok()?;
    head_found(cwd, found.as_deref()).await
}

/// [`head`] with the `git version` output `found`: no fact from a git older than
/// `crate::gitcmd::MIN_GIT` (it ignores the hardening's settings).
async fn head_found(cwd: &Path, found: Option<&str>) -> Option<GitFact> {
    if crate::gitcmd::version_refusal(found).is_some() || !cwd.is_absolute() {
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

    // Review of issue 26: a repository whose config sets `log.showSignature` and a
    // `gpg.program` ran that program when the seed asked for the last commit (it did).
    #[tokio::test]
    async fn x9_a_repositorys_config_runs_no_program_while_its_head_is_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).expect("mkdir");
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("a.txt"), "a").expect("write");
        git(&repo, &["add", "a.txt"]);
        git(&repo, &["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first"]);
        // A commit carrying a signature, so that showing it runs the signature program.
        let tree = std::process::Command::new("git").arg("-C").arg(&repo).args(["rev-parse", "HEAD^{tree}"]).output().expect("git");
        let tree = String::from_utf8_lossy(&tree.stdout).trim().to_owned();
        let object = format!("tree {tree}\nauthor t <t@e> 0 +0000\ncommitter t <t@e> 0 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n fake\n -----END PGP SIGNATURE-----\n\nsigned\n");
        std::fs::write(dir.path().join("commit.txt"), object).expect("write");
        let sha = std::process::Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["hash-object", "-t", "commit", "-w"])
            .arg(dir.path().join("commit.txt"))
            .output()
            .expect("git");
        let sha = String::from_utf8_lossy(&sha.stdout).trim().to_owned();
        git(&repo, &["update-ref", "HEAD", &sha]);
        let marker = dir.path().join("ran");
        let program = dir.path().join("gpg.sh");
        std::fs::write(&program, format!("#!/bin/sh\ntouch '{}'\nexit 1\n", marker.display())).expect("write");
        std::fs::set_permissions(&program, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
        git(&repo, &["config", "log.showSignature", "true"]);
        git(&repo, &["config", "gpg.program", &program.display().to_string()]);
        let fact = head(&repo).await.expect("a repository");
        assert_eq!(fact.subject, "signed");
        assert!(!marker.exists(), "the repository's gpg.program ran");
    }

    /// Git41 H1: a git older than 2.31 (which ignores the hardening's settings) is never
    /// asked: no fact.
    #[tokio::test]
    async fn a_git_older_than_2_31_gives_no_fact() {
        let dir = tempfile::tempdir().expect("tempdir");
        git(dir.path(), &["init", "-q", "-b", "main"]);
        git(dir.path(), &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "one"]);
        assert!(head_found(dir.path(), Some("git version 2.47.3")).await.is_some());
        assert_eq!(head_found(dir.path(), Some("git version 2.30.2")).await, None);
    }
}
