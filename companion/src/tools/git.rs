//! `herdr_git`: `status`, `diff` (work tree, staged, a path, two revisions), `log` and
//! `show` of a repository inside the project roots, through the `git` binary.
//!
//! Why the binary and not a library: `gix` (the maintained pure-Rust Git) takes longer to
//! compile than this project's CI budget allows on its two-core machines, and `git` is on
//! every machine that has a repository; it is run with a timeout and its output capped.
//!
//! Invariants:
//! - Git older than 2.31 is refused (`crate::gitcmd::MIN_GIT`): it ignores
//!   `GIT_CONFIG_COUNT`, so none of the hardening below would hold.
//! - Every argument is checked before `git` runs: a revision is 1..=[`MAX_REV_CHARS`] of
//!   `[A-Za-z0-9._/~^@{}:+-]` and never starts with `-` (no option injection such as
//!   `--output=/path`); revisions follow `--end-of-options`, paths follow `--` with
//!   `--literal-pathspecs` (no pathspec magic or globbing), and a path is resolved inside
//!   the roots ([`Roots::resolve`]) and then given relative to the repository directory.
//! - Git never looks for a repository above the project root (`GIT_CEILING_DIRECTORIES`)
//!   and never runs a command from the repository's configuration while reading:
//!   one command builder (`crate::gitcmd::hardened_command`, also the write tools' dirty
//!   check and the journal's handoff seed) switches off, through the environment
//!   (`GIT_CONFIG_COUNT`..., never `-c`, which git splits at the first `=`; only the
//!   fixed `-c core.splitIndex=false` of a snapshot's index, [`index_command`]), every
//!   configuration-named program (hooks, fsmonitor, external diff, signature check's gpg,
//!   transports and lazy fetch (`GIT_ALLOW_PROTOCOL` empty, which the repository's own
//!   `protocol.<name>.allow` cannot undo), and each filter driver the repository's configuration
//!   names, read first with `git config -z --get-regexp`, names kept byte for byte),
//!   `--no-ext-diff`, `--no-textconv`, no pager, no colour, no optional locks (a status
//!   does not write the index), no prompt, no system configuration; git's environment is
//!   cleared but for `herdr_exec`'s allowlist (`crate::gitcmd::INHERITED_ENV`, `LC_*`).
//! - A submodule is never entered (`--ignore-submodules=all` on status and the work-tree
//!   listing): git would run `git status` inside it, with filters never read.
//! - Where git reads is confined to the roots: a `.git` file or link to a Git directory
//!   outside them is refused ([`check_git_link`]; a `.git` file is opened without following
//!   a link or waiting on a FIFO, at most [`DOT_GIT_BYTES`] read); then git is asked for
//!   its Git directory, common directory (`commondir`) and work tree (`core.worktree`),
//!   and each, the object directory and every `objects/info/alternates` entry (the
//!   repository's own list and those of alternates [`ALTERNATES_DEPTH`] deep, as git)
//!   must be inside a root and outside the refused places ([`confine_repository`]); a
//!   symlink inside an object directory (`objects/`, `objects/pack/`, `objects/info/`) or
//!   for `index` / `packed-refs` is refused ([`refuse_links_git_reads`]).
//! - A diff that reads the work tree (not `staged`, no `to`) diffs what it checked: each
//!   changed file is read once through the confined path (a hard link refused, as every
//!   other read refuses one), hashed into a private object directory and diffed from
//!   there ([`snapshot_work_tree`]); git never reads the work tree again. `show`, `log`, a
//!   staged diff and a diff of two revisions (`from` and `to`, or a range `A..B` / `A...B` in
//!   `from`) read only Git's objects, which hold what was committed or added; a
//!   credential location there is kept out too: a revision naming one (`HEAD:.env`) is
//!   refused ([`check_rev`]), and the changed names are listed first and a credential
//!   location among them left out and named ([`narrow_to_readable`]). The private
//!   directories a crash left (ours: the name, the uid, stale) are swept before a new one is
//!   made ([`sweep_stale_snapshots`]).
//! - It runs at most [`GIT_TIMEOUT`] (then it is killed) and at most `max_bytes` of its
//!   output are kept (the rest is read and dropped, so it never blocks on a full pipe).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::AsyncReadExt;

use super::fs::ToolError;
use super::roots::Roots;
use crate::gitcmd::{ceiling_of, filter_overrides, hardened_command, FILTER_QUERY};

/// How long one `git` run may take.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default `max_bytes` of output.
pub const GIT_DEFAULT_BYTES: u64 = 32 * 1024;
/// Largest `max_bytes`.
pub const GIT_MAX_BYTES: u64 = 256 * 1024;
/// Default `max_count` of `log`.
pub const LOG_DEFAULT_COUNT: u64 = 20;
/// Largest `max_count` of `log`.
pub const LOG_MAX_COUNT: u64 = 200;
/// Longest revision, in characters.
pub const MAX_REV_CHARS: usize = 200;

/// What `herdr_git` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitAction {
    /// `git status`.
    Status,
    /// `git diff`.
    Diff,
    /// `git log`.
    Log,
    /// `git show`.
    Show,
}

impl GitAction {
    /// The action named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "status" => Some(Self::Status),
            "diff" => Some(Self::Diff),
            "log" => Some(Self::Log),
            "show" => Some(Self::Show),
            _ => None,
        }
    }
}

/// `herdr_git`'s checked arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitRequest {
    /// The repository (its work tree, or a directory in it) inside a root.
    pub root: String,
    /// What to do.
    pub action: GitAction,
    /// Only this file or directory.
    pub path: Option<String>,
    /// `diff`: the index against HEAD instead of the work tree against the index.
    pub staged: bool,
    /// `diff`: from this revision (alone: against the work tree); `log`: from this revision
    /// (default HEAD); `show`: this revision (default HEAD).
    pub from: Option<String>,
    /// `diff`: to this revision.
    pub to: Option<String>,
    /// `log`: most commits.
    pub max_count: u64,
    /// Most bytes of output kept.
    pub max_bytes: u64,
}

/// Checks a revision argument (see the module invariants).
pub fn check_rev(key: &str, rev: &str) -> Result<(), ToolError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._/~^@{}:+-".contains(c);
    if rev.is_empty() || rev.chars().count() > MAX_REV_CHARS || rev.starts_with('-') || !rev.chars().all(allowed) {
        return Err(ToolError::Bad(format!(
            "{key} `{}` is not a revision: send a commit id, branch, tag or an expression like HEAD~2 (letters, digits and . _ / ~ ^ @ {{ }} : + -, not starting with -, at most {MAX_REV_CHARS} characters)",
            rev.chars().take(80).collect::<String>()
        )));
    }
    // `REV:path` (and `:path`, `:N:path`) reads that file from Git's objects.
    for (at, _) in rev.match_indices(':') {
        let path = rev[at + 1..].trim_start_matches(|c: char| c.is_ascii_digit() || c == ':');
        if super::roots::is_sensitive(Path::new(path)) {
            return Err(ToolError::Bad(format!(
                "{key} `{rev}` names {path}, a credential location no Herdr tool reads (its committed text included): ask the user about it instead"
            )));
        }
    }
    Ok(())
}

/// Whether a revision argument is a range (`A..B`, `A...B`, either side may be left out):
/// a diff of two revisions, read from Git's objects only, never the work tree.
fn is_range(rev: &str) -> bool {
    rev.contains("..")
}

/// The `git` command line (after the global options) for `request`, with `pathspec`
/// (relative to the repository directory) when a path was given.
fn arguments(request: &GitRequest, pathspec: Option<&str>) -> Result<Vec<String>, ToolError> {
    for (key, rev) in [("from", &request.from), ("to", &request.to)] {
        if let Some(rev) = rev {
            check_rev(key, rev)?;
        }
    }
    let mut args: Vec<String> = Vec::new();
    let owned = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<String>>();
    match request.action {
        GitAction::Status => {
            if request.from.is_some() || request.to.is_some() || request.staged {
                return Err(ToolError::Bad("status takes no from, to or staged; send only root and, optionally, path".to_owned()));
            }
            // Never into a submodule: git would run `git status` there, with its own filters.
            args.extend(owned(&["status", "--porcelain=v1", "--branch", "-z", "--untracked-files=normal", "--ignore-submodules=all"]));
        }
        GitAction::Diff => {
            if request.staged && request.to.is_some() {
                return Err(ToolError::Bad(
                    "diff: staged compares the index with HEAD (or with from); it takes no to — leave staged out to compare two revisions"
                        .to_owned(),
                ));
            }
            if request.to.is_some() && request.from.is_none() {
                return Err(ToolError::Bad("diff: to needs from (the older revision)".to_owned()));
            }
            if let Some(to) = request.to.as_deref().filter(|to| is_range(to)) {
                return Err(ToolError::Bad(format!(
                    "diff: to `{to}` is a range; to is one revision (the newer side): send the range alone as from (from: \"A..B\")"
                )));
            }
            if let Some(from) = request.from.as_deref().filter(|from| is_range(from)) {
                if request.to.is_some() {
                    return Err(ToolError::Bad(format!(
                        "diff: from `{from}` is already two revisions; send it without to, or send from and to as one revision each"
                    )));
                }
                if request.staged {
                    return Err(ToolError::Bad(format!(
                        "diff: staged compares the index with one revision, and from `{from}` is a range of two: leave staged out to diff the range"
                    )));
                }
            }
            args.extend(owned(&["diff", "--no-ext-diff", "--no-textconv", "--no-color", "--stat", "--patch"]));
            if request.staged {
                args.push("--cached".to_owned());
            }
            args.push("--end-of-options".to_owned());
            args.extend(request.from.iter().cloned());
            args.extend(request.to.iter().cloned());
        }
        GitAction::Log => {
            if request.to.is_some() || request.staged {
                return Err(ToolError::Bad("log takes from (where to start, default HEAD), not to or staged".to_owned()));
            }
            args.extend(owned(&["log", "--no-color", "--format=%H%x1f%h%x1f%an%x1f%aI%x1f%s%x1e"]));
            args.push(format!("--max-count={}", request.max_count));
            args.push("--end-of-options".to_owned());
            args.push(request.from.clone().unwrap_or_else(|| "HEAD".to_owned()));
        }
        GitAction::Show => {
            if request.to.is_some() || request.staged {
                return Err(ToolError::Bad("show takes from (the revision to show, default HEAD), not to or staged".to_owned()));
            }
            args.extend(owned(&["show", "--no-ext-diff", "--no-textconv", "--no-color", "--stat", "--patch", "--format=fuller"]));
            args.push("--end-of-options".to_owned());
            args.push(request.from.clone().unwrap_or_else(|| "HEAD".to_owned()));
        }
    }
    // Always a `--`: without it a revision that does not resolve but names a file is taken
    // as a path, and `git diff` then reads the work tree itself (review38 M1).
    args.push("--".to_owned());
    if let Some(pathspec) = pathspec {
        args.push(pathspec.to_owned());
    }
    Ok(args)
}

/// What one `git` run gave.
#[derive(Debug)]
struct GitOutput {
    /// Exit status success.
    ok: bool,
    /// Stdout, at most the cap.
    stdout: Vec<u8>,
    /// Bytes of stdout dropped past the cap.
    dropped: u64,
    /// Stderr (first 4 KiB).
    stderr: String,
}

/// Refuses a repository whose `.git` (the first found from `dir` up to its root) is a file
/// or a symlink pointing outside the roots (`gitdir:` elsewhere: another repository's
/// configuration would run), and a `.git` that is no regular file (a FIFO would block) or
/// holds more than [`DOT_GIT_BYTES`].
pub fn check_git_link(roots: &Roots, dir: &Path) -> Result<(), ToolError> {
    let top = roots.outermost_root_of(dir).map(Path::to_path_buf);
    let mut at = Some(dir);
    while let Some(here) = at {
        let dot_git = here.join(".git");
        if let Ok(meta) = std::fs::symlink_metadata(&dot_git) {
            if meta.is_dir() {
                return Ok(());
            }
            let target = if meta.file_type().is_symlink() {
                std::fs::canonicalize(&dot_git).ok()
            } else {
                let text = read_small_file(roots, &dot_git, DOT_GIT_BYTES)?;
                let text = String::from_utf8_lossy(&text);
                let line = text.lines().next().unwrap_or("").strip_prefix("gitdir:").map(|line| line.trim().to_owned());
                line.and_then(|line| std::fs::canonicalize(here.join(line)).ok())
            };
            return match target {
                Some(target) if roots.root_of(&target).is_some() && !roots.is_refused(&target) => Ok(()),
                _ => Err(ToolError::Bad(format!(
                    "{} is a .git file or link to a Git directory outside the project roots; herdr_git reads only repositories whose Git directory is inside the roots ({})",
                    dot_git.display(),
                    roots.describe()
                ))),
            };
        }
        if top.as_deref() == Some(here) {
            break;
        }
        at = here.parent();
    }
    Ok(())
}

/// Most bytes of a `.git` file read (`gitdir: <path>`).
const DOT_GIT_BYTES: u64 = 4 * 1024;
/// Most bytes of an `objects/info/alternates` file read.
const ALTERNATES_BYTES: u64 = 64 * 1024;
/// How many alternates deep the lists are read, as git does: the repository's own list
/// (depth 0) and those of alternates down to this depth (git ignores one deeper).
const ALTERNATES_DEPTH: usize = 5;

/// The bytes of the small regular file `path` (a `.git` file, an alternates list), at most
/// `max` of them: opened as every file tool opens a file ([`Roots::open_file`]: inside a
/// root, no symlink followed, never blocking on a FIFO), then refused when it is not a
/// regular file or holds more than `max` bytes.
fn read_small_file(roots: &Roots, path: &Path, max: u64) -> Result<Vec<u8>, ToolError> {
    use std::io::Read;
    let shown = path.display().to_string();
    let (_, file) = roots.open_file(&shown)?;
    let meta = file.metadata().map_err(|e| ToolError::Io(format!("{shown} cannot be read: {e}")))?;
    if !meta.is_file() {
        return Err(ToolError::Bad(format!(
            "{shown} is not a regular file (a FIFO, a device or a directory); Git cannot use it as it is: remove it or replace it with the file Git wrote, then call again"
        )));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes).map_err(|e| ToolError::Io(format!("{shown} cannot be read: {e}")))?;
    if bytes.len() as u64 > max {
        return Err(ToolError::Bad(format!(
            "{shown} holds more than {} KiB; a Git file of this kind is a line or a short list: herdr_git does not read it, check what wrote it",
            max / 1024
        )));
    }
    Ok(bytes)
}

/// Refuses a repository where git would read outside the roots: asks git where the Git
/// directory, the common directory (a planted `commondir`) and the work tree
/// (`core.worktree`) are, and refuses any of them outside the roots or in a refused place
/// (the companion home, a credential location); then the object directory (a symlink) and
/// each `objects/info/alternates` entry, followed as deep as git does. `action` names the
/// call in a git failure. The work tree's top (canonical), when there is one.
async fn confine_repository(roots: &Roots, dir: &Path, ceiling: &Path, action: &str) -> Result<Option<PathBuf>, ToolError> {
    let asked = ["rev-parse", "--absolute-git-dir", "--git-common-dir", "--show-toplevel"].map(str::to_owned);
    let mut located = run_git_filtered(dir, ceiling, &[], &asked, 64 * 1024, &[], None).await?;
    let mut expected = 3;
    if !located.ok && located.stderr.contains("must be run in a work tree") {
        // Inside a Git directory: no work tree to check.
        located = run_git_filtered(dir, ceiling, &[], &asked[..3], 64 * 1024, &[], None).await?;
        expected = 2;
    }
    if !located.ok {
        return Err(git_failed(action, dir, ceiling, &located.stderr));
    }
    let text = String::from_utf8_lossy(&located.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    let names = ["Git directory", "common Git directory (its commondir)", "work tree (core.worktree or the top level)"];
    // A path holding a newline comes out as more lines: refused too.
    if lines.len() != expected {
        return Err(ToolError::Io(format!("git rev-parse did not say where the repository is in {}; check the repository", dir.display())));
    }
    let (roots_c, dir_c) = (roots.clone(), dir.to_path_buf());
    let places: Vec<(String, PathBuf)> = names.iter().zip(&lines).map(|(name, line)| ((*name).to_owned(), dir.join(line))).collect();
    tokio::task::spawn_blocking(move || {
        let mut canonical = Vec::new();
        for (what, path) in &places {
            canonical.push(inside_roots(&roots_c, &dir_c, what, path)?);
        }
        let (git_dir, common) = (&canonical[0], &canonical[1]);
        let objects = common.join("objects");
        if std::fs::symlink_metadata(&objects).is_ok() {
            check_alternates(&roots_c, &dir_c, &inside_roots(&roots_c, &dir_c, "object directory", &objects)?, 0)?;
        }
        refuse_links_git_reads(&dir_c, git_dir, common)?;
        Ok(canonical.get(2).cloned())
    })
    .await
    .map_err(|lost| ToolError::Io(format!("the repository could not be checked ({lost}); retry")))?
}

/// Most entries of `objects`, `objects/pack` or `objects/info` looked at for a link.
const OBJECT_ENTRIES_CHECKED: usize = 20_000;

/// Refuses a symlink where git reads the index or refs without checking where it leads:
/// `index` and `packed-refs` (a hard link is kept: `git clone --local` makes them); then
/// [`refuse_links_in_objects`] of the object directory.
fn refuse_links_git_reads(dir: &Path, git_dir: &Path, common: &Path) -> Result<(), ToolError> {
    for file in [git_dir.join("index"), git_dir.join("packed-refs"), common.join("index"), common.join("packed-refs")] {
        if std::fs::symlink_metadata(&file).is_ok_and(|meta| meta.file_type().is_symlink()) {
            return Err(link_refused(dir, &file));
        }
    }
    refuse_links_in_objects(dir, &common.join("objects"))
}

/// Refuses a symlink in the object directory `objects` (the repository's or an
/// alternate): an entry of `objects/` (a fan-out directory such as `objects/ab`, `pack`,
/// `info`), of `objects/pack/` or of `objects/info/`; only `objects` itself is resolved
/// and checked against the roots. Each entry's type is read from the listing, at most
/// [`OBJECT_ENTRIES_CHECKED`] per directory (more is refused).
fn refuse_links_in_objects(dir: &Path, objects: &Path) -> Result<(), ToolError> {
    for listed in [objects.to_path_buf(), objects.join("pack"), objects.join("info")] {
        let Ok(entries) = std::fs::read_dir(&listed) else { continue };
        for (n, entry) in entries.enumerate() {
            let entry = entry.map_err(|e| ToolError::Io(format!("{} cannot be listed: {e}", listed.display())))?;
            if n >= OBJECT_ENTRIES_CHECKED {
                return Err(ToolError::Bad(format!(
                    "{} holds more than {OBJECT_ENTRIES_CHECKED} entries, too many to check for links; run `git gc` in the repository and retry",
                    listed.display()
                )));
            }
            let kind = entry.file_type().map_err(|e| ToolError::Io(format!("{} cannot be read: {e}", entry.path().display())))?;
            if kind.is_symlink() {
                return Err(link_refused(dir, &entry.path()));
            }
        }
    }
    Ok(())
}

/// The refusal of a symlink at `path` in the repository at `dir`.
fn link_refused(dir: &Path, path: &Path) -> ToolError {
    ToolError::Bad(format!(
        "the repository at {} has a symbolic link where git reads its objects or index ({}): git would read what it names, which may be outside the project roots; herdr_git reads only repositories without such links: replace the link with a copy of what it names (or clone the repository again)",
        dir.display(),
        path.display()
    ))
}

/// `path` canonical when it is inside a root and not in a refused place; else the refusal
/// of the repository at `dir`, naming `what` git would read there.
fn inside_roots(roots: &Roots, dir: &Path, what: &str, path: &Path) -> Result<PathBuf, ToolError> {
    let canonical = std::fs::canonicalize(path).ok();
    match canonical {
        Some(canonical) if roots.root_of(&canonical).is_some() && !roots.is_refused(&canonical) => Ok(canonical),
        _ => Err(ToolError::Bad(format!(
            "the repository at {} has its {what} at {}, which is outside the project roots ({}) or cannot be resolved; herdr_git reads only repositories that stay inside the roots: fix the repository (or register that directory with herdr-companion roots add PATH, if it is the user's project)",
            dir.display(),
            path.display(),
            roots.describe()
        ))),
    }
}

/// Refuses an alternates entry of the object directory `objects` (canonical, inside the
/// roots) outside the roots, and then the entries of each alternate, `depth` levels down
/// (the lists of depth 0 to [`ALTERNATES_DEPTH`], six in all, as git reads).
fn check_alternates(roots: &Roots, dir: &Path, objects: &Path, depth: usize) -> Result<(), ToolError> {
    let list = objects.join("info").join("alternates");
    if std::fs::symlink_metadata(&list).is_err() {
        return Ok(());
    }
    let text = read_small_file(roots, &list, ALTERNATES_BYTES)?;
    for line in String::from_utf8_lossy(&text).lines() {
        let entry = line.trim_end_matches('\r');
        if entry.is_empty() || entry.starts_with('#') {
            continue;
        }
        if entry.starts_with('"') {
            return Err(ToolError::Bad(format!(
                "{} holds a quoted entry ({entry}); herdr_git reads only repositories whose alternates are plain paths inside the roots: fix the file",
                list.display()
            )));
        }
        let alternate = inside_roots(roots, dir, "alternate object directory (objects/info/alternates)", &objects.join(entry))?;
        refuse_links_in_objects(dir, &alternate)?;
        if depth < ALTERNATES_DEPTH {
            check_alternates(roots, dir, &alternate, depth + 1)?;
        }
    }
    Ok(())
}

/// Runs `git` in `dir` with the hardened command (module invariants) and `args`.
async fn run_git(dir: &Path, ceiling: &Path, args: &[String], max_bytes: u64) -> Result<GitOutput, ToolError> {
    run_git_with(dir, ceiling, args, max_bytes, &[], None).await
}

/// [`run_git`] with `env` set after the hardening (a snapshot's index and objects) and
/// `stdin` written to git's input.
async fn run_git_with(
    dir: &Path,
    ceiling: &Path,
    args: &[String],
    max_bytes: u64,
    env: &[(&str, PathBuf)],
    stdin: Option<Vec<u8>>,
) -> Result<GitOutput, ToolError> {
    let filters = filters_of(dir, ceiling).await?;
    run_git_filtered(dir, ceiling, &filters, args, max_bytes, env, stdin).await
}

/// The filter drivers the configuration of the repository at `dir` names (each switched
/// off by [`hardened_command`]).
async fn filters_of(dir: &Path, ceiling: &Path) -> Result<Vec<OsString>, ToolError> {
    let mut query = tokio::process::Command::from(hardened_command(dir, Some(ceiling), &[]));
    query.args(FILTER_QUERY).stdout(Stdio::piped()).stderr(Stdio::null()).kill_on_drop(true);
    match tokio::time::timeout(GIT_TIMEOUT, query.output()).await {
        Ok(Ok(output)) => Ok(filter_overrides(&output.stdout)),
        Ok(Err(e)) => {
            Err(ToolError::Io(format!("git could not be started ({e}); install Git and make sure `git` is on the companion's PATH")))
        }
        Err(_) => Err(ToolError::Io(format!("git config took longer than {} s in {}", GIT_TIMEOUT.as_secs(), dir.display()))),
    }
}

/// [`run_git_with`] with the `filters` of [`filters_of`] already read.
async fn run_git_filtered(
    dir: &Path,
    ceiling: &Path,
    filters: &[OsString],
    args: &[String],
    max_bytes: u64,
    env: &[(&str, PathBuf)],
    stdin: Option<Vec<u8>>,
) -> Result<GitOutput, ToolError> {
    let mut command = tokio::process::Command::from(hardened_command(dir, Some(ceiling), filters));
    command.arg("--literal-pathspecs").args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    for (name, value) in env {
        command.env(name, value);
    }
    if stdin.is_some() {
        command.stdin(Stdio::piped());
    }
    let mut child = command.spawn().map_err(|e| {
        ToolError::Io(format!("git could not be started ({e}); install Git and make sure `git` is on the companion's PATH"))
    })?;
    let feed = child.stdin.take().zip(stdin).map(|(mut input, bytes)| async move {
        use tokio::io::AsyncWriteExt;
        input.write_all(&bytes).await?;
        input.shutdown().await
    });
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(ToolError::Io("git's output pipes were not opened".to_owned()));
    };
    let cap = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    let work = async {
        let read_out = async {
            let mut kept = Vec::new();
            let mut dropped = 0u64;
            let mut buffer = vec![0u8; 64 * 1024];
            loop {
                let n = stdout.read(&mut buffer).await?;
                if n == 0 {
                    break;
                }
                let room = cap.saturating_sub(kept.len()).min(n);
                kept.extend_from_slice(&buffer[..room]);
                dropped += (n - room) as u64;
            }
            Ok::<_, std::io::Error>((kept, dropped))
        };
        let read_err = async {
            let mut text = Vec::new();
            let mut buffer = vec![0u8; 4096];
            loop {
                let n = stderr.read(&mut buffer).await?;
                if n == 0 {
                    break;
                }
                let room = 4096usize.saturating_sub(text.len()).min(n);
                text.extend_from_slice(&buffer[..room]);
            }
            Ok::<_, std::io::Error>(text)
        };
        let write_in = async {
            match feed {
                Some(feed) => feed.await,
                None => Ok(()),
            }
        };
        let (out, err, ()) = tokio::try_join!(read_out, read_err, write_in)?;
        let status = child.wait().await?;
        Ok::<_, std::io::Error>((status, out, err))
    };
    match tokio::time::timeout(GIT_TIMEOUT, work).await {
        Ok(Ok((status, (stdout, dropped), stderr))) => {
            Ok(GitOutput { ok: status.success(), stdout, dropped, stderr: String::from_utf8_lossy(&stderr).trim().to_owned() })
        }
        Ok(Err(e)) => Err(ToolError::Io(format!("git's output could not be read: {e}"))),
        Err(_) => Err(ToolError::Io(format!(
            "git took longer than {} s and was stopped; ask for less (a path, fewer commits) or check the repository",
            GIT_TIMEOUT.as_secs()
        ))),
    }
}

/// The repository directory and the path given, checked against the roots.
fn locate(roots: &Roots, request: &GitRequest) -> Result<(PathBuf, PathBuf, Option<String>), ToolError> {
    let dir = roots.resolve(&request.root)?;
    if !dir.is_dir() {
        return Err(ToolError::Bad(format!("{} is not a directory; send the repository's directory as root", dir.display())));
    }
    let ceiling = roots.outermost_root_of(&dir).map_or_else(|| PathBuf::from("/"), ceiling_of);
    let pathspec = match &request.path {
        None => None,
        Some(path) => {
            // Relative paths are relative to the repository directory, as in Git.
            let absolute = if Path::new(path).is_absolute() { PathBuf::from(path) } else { dir.join(path) };
            let resolved = roots.resolve(&absolute.to_string_lossy())?;
            let relative = resolved.strip_prefix(&dir).map_err(|_| {
                ToolError::Bad(format!("path {} is not inside the repository directory {}", resolved.display(), dir.display()))
            })?;
            let text = relative.to_string_lossy().into_owned();
            Some(if text.is_empty() { ".".to_owned() } else { text })
        }
    };
    Ok((dir, ceiling, pathspec))
}

/// The error of a failed `git action` in `dir`. When git found no repository
/// (`GIT_CEILING_DIRECTORIES` stops its search at the roots) and a directory above the roots
/// holds a `.git` (a pane opened in a subdirectory of a repository), it says which and how
/// to register it; only that name's existence is checked, nothing there is read.
fn git_failed(action: &str, dir: &Path, ceiling: &Path, stderr: &str) -> ToolError {
    let what = if stderr.is_empty() { "no message" } else { stderr };
    let home = std::env::var_os("HOME").and_then(|home| std::fs::canonicalize(home).ok());
    let hint = repository_to_register(ceiling, stderr, home.as_deref()).map_or_else(String::new, |top| {
        format!(
            "; the repository's top level {top} is above the project roots and herdr_git looks for a repository only inside them: ask the user to register it with herdr-companion roots add {top}",
            top = top.display()
        )
    });
    ToolError::Bad(format!("git {action} failed in {}: {what}{hint}", dir.display()))
}

/// The repository above the roots that `git_failed` names: the nearest directory from
/// `ceiling` (the root's parent) up that is a repository's top (a `.git` directory holding `HEAD`, or a
/// `.git` file, a linked worktree's), only when git's search for one stopped at the ceiling
/// ("not a git repository (or any of the parent directories)"; a broken worktree's "not a
/// git repository: <gitdir>" is another failure) — never `/`, the user's home or one of its
/// ancestors (a dotfiles repository at `~` would have the user open their whole home to the
/// planner).
fn repository_to_register(ceiling: &Path, stderr: &str, home: Option<&Path>) -> Option<PathBuf> {
    // Git's two ways of saying its search found nothing (`diff` has its own).
    let stderr = stderr.to_ascii_lowercase();
    if !["not a git repository (or any of the parent directories)", "not a git repository. use --no-index"]
        .iter()
        .any(|m| stderr.contains(m))
    {
        return None;
    }
    let is_top = |dir: &Path| {
        let git = dir.join(".git");
        git.join("HEAD").is_file() || std::fs::symlink_metadata(&git).is_ok_and(|meta| meta.is_file())
    };
    let top = ceiling.ancestors().find(|dir| is_top(dir))?;
    let too_wide = top == Path::new("/") || home.is_some_and(|home| home.starts_with(top));
    (!too_wide).then(|| top.to_path_buf())
}

/// Most bytes of the changed-file list read before a work-tree diff.
const NAME_LIST_BYTES: u64 = 1024 * 1024;

/// A work-tree diff's snapshot: the changed files as they were read, hashed into objects
/// of its own (a private directory, removed with it), in an index of its own.
struct Snapshot {
    /// The private directory: `index`, `objects/`, the read copies.
    dir: PathBuf,
    /// What the snapshot is compared with: `from`, or the tree of the repository's index.
    base: String,
    /// The repository's object directory (read through, never written).
    objects: PathBuf,
    /// Changed files left out because they are credential locations (`roots::is_sensitive`,
    /// a `.env.development` committed with the project): named in the result, never read.
    withheld: Vec<String>,
}

impl Snapshot {
    /// The environment that makes git read (and write) the snapshot's index and objects.
    fn env(&self) -> [(&'static str, PathBuf); 3] {
        [
            ("GIT_INDEX_FILE", self.dir.join("index")),
            ("GIT_OBJECT_DIRECTORY", self.dir.join("objects")),
            ("GIT_ALTERNATE_OBJECT_DIRECTORIES", self.objects.clone()),
        ]
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The name of a work-tree diff's private directory starts so (then `<pid>-<n>-<nanos>`).
const SNAPSHOT_PREFIX: &str = "herdr-git-";
/// A private directory older than this is left from a process that ended mid-diff (a diff
/// takes at most a few [`GIT_TIMEOUT`]s).
pub const STALE_SNAPSHOT_AGE: Duration = Duration::from_secs(10 * 60);
/// Stale directories are looked for at most this often (the first diff of a runtime does).
const SWEEP_INTERVAL: Duration = Duration::from_secs(10 * 60);

/// Removes the work-tree diffs' private directories a crash left in `parent` (the system
/// temp directory): only a directory (never a symlink) directly in it, named
/// `herdr-git-<pid>-<digits>-<digits>` whose process no longer runs (a clock stepped forward
/// or a long diff never loses a live directory), owned by `uid` and last modified more than
/// [`STALE_SNAPSHOT_AGE`] before `now`. Returns what it removed; a directory it cannot read
/// or remove is left.
pub fn sweep_stale_snapshots(parent: &Path, uid: u32, now: std::time::SystemTime) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let ours = |name: &str| {
        let parts: Vec<&str> = name.strip_prefix(SNAPSHOT_PREFIX).map(|rest| rest.split('-').collect()).unwrap_or_default();
        parts.len() == 3
            && parts.iter().all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
            && !process_may_run(parts[0])
    };
    let Ok(entries) = std::fs::read_dir(parent) else { return Vec::new() };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        if !entry.file_name().to_str().is_some_and(ours) {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        let old = meta.modified().ok().and_then(|at| now.duration_since(at).ok()).is_some_and(|age| age > STALE_SNAPSHOT_AGE);
        if meta.is_dir() && meta.uid() == uid && old && std::fs::remove_dir_all(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

/// Whether the process `pid` (decimal) may still run: ours, one `kill(pid, 0)` finds (or may
/// not signal), or a pid that cannot be asked about.
fn process_may_run(pid: &str) -> bool {
    let Ok(pid) = pid.parse::<libc::pid_t>() else { return true };
    if pid <= 0 || u32::try_from(pid).is_ok_and(|pid| pid == std::process::id()) {
        return true;
    }
    // SAFETY: signal 0 sends nothing; `kill` only checks that the process exists.
    let found = unsafe { libc::kill(pid, 0) } == 0;
    found || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// [`sweep_stale_snapshots`] of the system temp directory, at most once per
/// [`SWEEP_INTERVAL`] in this process (on the blocking pool).
async fn sweep_stale_snapshots_due() {
    static LAST: std::sync::Mutex<Option<std::time::Instant>> = std::sync::Mutex::new(None);
    {
        let mut last = LAST.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if last.is_some_and(|at| at.elapsed() < SWEEP_INTERVAL) {
            return;
        }
        *last = Some(std::time::Instant::now());
    }
    let sweep = || sweep_stale_snapshots(&std::env::temp_dir(), crate::config::current_uid(), std::time::SystemTime::now());
    let _ = tokio::task::spawn_blocking(sweep).await;
}

/// Most bytes of the changed files a work-tree diff reads.
const SNAPSHOT_BYTES: u64 = 64 * 1024 * 1024;

/// A work-tree diff (not `staged`, no `to`) diffs what it checked: the changed files are
/// listed (`--raw --no-renames`: a renamed file's old name is a deletion), each is read
/// through the confined path ([`Roots::open_file`]: inside a root, no symlink followed, a
/// hard link refused, [`super::roots::RootError::HardLink`]), its bytes hashed as `git add`
/// would store them at that path (`git hash-object --path`: line endings converted, no
/// configured filter program run) into a private object directory, and the diff compares
/// an index of those blobs with the base (`from`, or the repository's index as a tree) —
/// git never reads the work tree again, so a file swapped after the check is not what is
/// shown. A symlink's target is read as the link (never followed); a deleted file (also
/// one removed from the index and left on disk, or below a directory replaced by a
/// symlink, never followed) leaves the index; a directory in a file's place (a submodule)
/// keeps the base entry. A list too long to check, or more than [`SNAPSHOT_BYTES`] of
/// changed files, is refused.
async fn snapshot_work_tree(
    roots: &Roots,
    dir: &Path,
    ceiling: &Path,
    request: &GitRequest,
    pathspec: Option<&str>,
) -> Result<Snapshot, ToolError> {
    let mut names = vec![
        "diff".to_owned(),
        "--no-ext-diff".to_owned(),
        "--no-textconv".to_owned(),
        "--no-relative".to_owned(),
        "--raw".to_owned(),
        "-z".to_owned(),
        // Each path's own state: a rename would list only the new name (the old one's
        // deletion lost); the final diff still detects renames.
        "--no-renames".to_owned(),
        "--full-index".to_owned(),
        // A submodule keeps its base entry anyway; never entered (its own filters).
        "--ignore-submodules=all".to_owned(),
        "--end-of-options".to_owned(),
    ];
    names.extend(request.from.iter().cloned());
    if let Some(pathspec) = pathspec {
        names.extend(["--".to_owned(), pathspec.to_owned()]);
    }
    let located = ["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir", "--show-object-format"].map(str::to_owned);
    let top = run_git(dir, ceiling, &located, 64 * 1024).await?;
    let listed = run_git(dir, ceiling, &names, NAME_LIST_BYTES).await?;
    if !top.ok || !listed.ok {
        let what = if listed.stderr.is_empty() { top.stderr } else { listed.stderr };
        return Err(git_failed("diff", dir, ceiling, &what));
    }
    if listed.dropped > 0 {
        return Err(ToolError::Bad(format!("diff: more changed files than can be checked for hard links (over {NAME_LIST_BYTES} bytes of names); send path to diff part of the tree")));
    }
    let located = String::from_utf8_lossy(&top.stdout).into_owned();
    let mut lines = located.lines();
    let (Some(top), Some(git_dir), Some(common), Some(format)) = (lines.next(), lines.next(), lines.next(), lines.next()) else {
        return Err(ToolError::Io(format!("git rev-parse did not say where the repository is in {}", dir.display())));
    };
    let (top, git_dir) = (PathBuf::from(top), PathBuf::from(git_dir));
    // A deleted entry's id: zeros of the repository's id length (SHA-1 or SHA-256).
    let gone = "0".repeat(if format == "sha256" { 64 } else { 40 });
    let objects = dir.join(common).join("objects");
    sweep_stale_snapshots_due().await;
    static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let private = std::env::temp_dir().join(format!(
        "{SNAPSHOT_PREFIX}{}-{}-{}",
        std::process::id(),
        MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
    ));
    let made = {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().mode(0o700).create(&private).and_then(|()| std::fs::create_dir(private.join("objects")))
    };
    made.map_err(|e| ToolError::Io(format!("a private directory for the diff could not be made in {}: {e}", private.display())))?;
    let mut snapshot = Snapshot { dir: private, base: String::new(), objects, withheld: Vec::new() };
    let env = snapshot.env();
    // The base: `from`, or the repository's index as a tree (its objects go to the snapshot).
    snapshot.base = match &request.from {
        Some(from) => from.clone(),
        None => {
            // From a copy: `write-tree` would write its cache into the repository's index.
            let mut real = env.clone();
            real[0].1 = snapshot.dir.join("base-index");
            match std::fs::copy(git_dir.join("index"), &real[0].1) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(ToolError::Io(format!("the repository's index could not be read: {e}")));
                }
                _ => {}
            }
            let tree = run_git_with(&top, ceiling, &index_command(&["write-tree"]), 4096, &real, None).await?;
            if !tree.ok {
                return Err(ToolError::Bad(format!(
                    "diff: the index cannot be compared with the work tree ({}), as during a merge with conflicts: send from: \"HEAD\" to see the work tree (conflict markers included) against the last commit, or resolve the merge",
                    tree.stderr
                )));
            }
            String::from_utf8_lossy(&tree.stdout).trim().to_owned()
        }
    };
    let mut read = index_command(&["read-tree", "--end-of-options"]);
    read.push(snapshot.base.clone());
    let base = run_git_with(&top, ceiling, &read, 4096, &env, None).await?;
    if !base.ok {
        return Err(git_failed("diff", dir, ceiling, &base.stderr));
    }
    // Each changed file, read once through the confined path.
    let (listing, checked_roots, copies) = (listed_paths(&listed.stdout)?, roots.clone(), snapshot.dir.clone());
    let read_top = top.clone();
    let (entries, withheld) = tokio::task::spawn_blocking(move || read_changed(&checked_roots, &read_top, &listing, &copies))
        .await
        .map_err(|lost| ToolError::Io(format!("the changed files could not be read ({lost}); retry")))??;
    snapshot.withheld = withheld;
    if entries.is_empty() {
        return Ok(snapshot);
    }
    // Their bytes as blobs, each converted as `git add` would at its path (line endings; a
    // configured filter program never runs: [`hardened_command`]), a link as it is.
    let filters = filters_of(&top, ceiling).await?;
    let mut ids = Vec::new();
    for entry in &entries {
        let (Some(mode), Some(copy)) = (entry.mode, &entry.copy) else {
            ids.push(None);
            continue;
        };
        let mut hash = vec!["hash-object".to_owned(), "-w".to_owned()];
        hash.push(if mode == "120000" { "--no-filters".to_owned() } else { format!("--path={}", entry.name) });
        hash.extend(["--".to_owned(), copy.display().to_string()]);
        let hashed = run_git_filtered(&top, ceiling, &filters, &hash, 4096, &env, None).await?;
        if !hashed.ok {
            return Err(git_failed("diff", dir, ceiling, &hashed.stderr));
        }
        ids.push(Some(String::from_utf8_lossy(&hashed.stdout).trim().to_owned()));
    }
    let mut info = Vec::new();
    for (entry, id) in entries.iter().zip(&ids) {
        let (mode, id) = match (entry.mode, id) {
            (Some(mode), Some(id)) => (mode, id.as_str()),
            _ => ("0", gone.as_str()),
        };
        info.extend_from_slice(format!("{mode} {id}\t").as_bytes());
        info.extend_from_slice(entry.name.as_bytes());
        info.push(0);
    }
    let update = index_command(&["update-index", "-z", "--index-info"]);
    let updated = run_git_with(&top, ceiling, &update, 4096, &env, Some(info)).await?;
    if !updated.ok {
        return Err(git_failed("diff", dir, ceiling, &updated.stderr));
    }
    Ok(snapshot)
}

/// A command that writes a snapshot's index: `-c core.splitIndex=false` first, so that a
/// repository's `core.splitIndex=true` never puts a `sharedindex.*` file into its git
/// directory (the index is written whole, in the private directory).
fn index_command(args: &[&str]) -> Vec<String> {
    ["-c", "core.splitIndex=false"].iter().chain(args).map(|a| (*a).to_owned()).collect()
}

/// One path of the changed-file listing (`git diff --raw -z --no-renames`): its name
/// (relative to the top), whether it is deleted (`D`: it leaves the index even when a file
/// of that name is on disk, untracked) and its mode as git sees it in the work tree (with
/// `core.fileMode=false`, the index's).
struct Listed {
    name: String,
    deleted: bool,
    mode: String,
}

/// The paths of a `--raw -z` listing: `:<old mode> <new mode> <old id> <new id> <status>`
/// then the name, each NUL-terminated.
fn listed_paths(raw: &[u8]) -> Result<Vec<Listed>, ToolError> {
    let text = String::from_utf8_lossy(raw);
    let mut records = text.split('\0').filter(|r| !r.is_empty());
    let mut listing = Vec::new();
    while let Some(meta) = records.next() {
        let fields: Vec<&str> = meta.strip_prefix(':').unwrap_or(meta).split(' ').collect();
        let (Some(mode), Some(status), Some(name)) = (fields.get(1), fields.get(4), records.next()) else {
            return Err(ToolError::Io(format!("git diff --raw listed an entry it did not describe: {meta:?}")));
        };
        listing.push(Listed { name: name.to_owned(), deleted: status.starts_with('D'), mode: (*mode).to_owned() });
    }
    Ok(listing)
}

/// One changed file of a snapshot: its name (relative to the top), its mode (`None`:
/// deleted) and the private copy of the bytes read.
struct Changed {
    name: String,
    mode: Option<&'static str>,
    copy: Option<PathBuf>,
}

/// Reads each changed file of `listing` (relative to `top`) through the confined path into
/// a private copy in `copies`; a deleted one is not read, and a credential location is not
/// read at all: its base entry stays, and its name is returned apart.
fn read_changed(roots: &Roots, top: &Path, listing: &[Listed], copies: &Path) -> Result<(Vec<Changed>, Vec<String>), ToolError> {
    use std::io::Read;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let mut entries = Vec::new();
    let mut withheld = Vec::new();
    let mut total = 0u64;
    for (n, Listed { name, deleted, mode: listed }) in listing.iter().enumerate() {
        let path = top.join(name);
        // The whole path: a dotfiles repository at `~/.config` holds `gh/hosts.yml`.
        if crate::tools::roots::is_sensitive(&path) {
            withheld.push(name.to_owned());
            continue;
        }
        let unreadable = |e: std::io::Error| ToolError::Io(format!("{} cannot be read: {e}", path.display()));
        // A directory above it that is a symlink (or no directory): git sees no file there.
        let below_a_link = Path::new(name)
            .ancestors()
            .skip(1)
            .filter(|dir| !dir.as_os_str().is_empty())
            .any(|dir| std::fs::symlink_metadata(top.join(dir)).map_or(true, |meta| !meta.file_type().is_dir()));
        let (mode, bytes) = match std::fs::symlink_metadata(&path) {
            _ if *deleted || below_a_link => {
                entries.push(Changed { name: name.to_owned(), mode: None, copy: None });
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                entries.push(Changed { name: name.to_owned(), mode: None, copy: None });
                continue;
            }
            Err(e) => return Err(unreadable(e)),
            // The link itself, as git stores it: never followed.
            Ok(meta) if meta.file_type().is_symlink() => {
                ("120000", std::fs::read_link(&path).map_err(unreadable)?.as_os_str().as_bytes().to_vec())
            }
            Ok(meta) if meta.is_file() => {
                // Inside a root, not a symlink, one name only — and these bytes are the diff's.
                let (_, file) = roots.open_file(&path.to_string_lossy())?;
                let executable = file.metadata().is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
                let mut bytes = Vec::new();
                file.take(SNAPSHOT_BYTES.saturating_sub(total) + 1).read_to_end(&mut bytes).map_err(unreadable)?;
                // The mode git sees (`core.fileMode=false`: the index's; `core.symlinks=false`:
                // a link kept as a file holding its target), else the file's own.
                let mode = match listed.as_str() {
                    "100644" => "100644",
                    "100755" => "100755",
                    "120000" => "120000",
                    _ if executable => "100755",
                    _ => "100644",
                };
                (mode, bytes)
            }
            // A directory (a submodule) or a special file: the base entry stays.
            Ok(_) => continue,
        };
        total += bytes.len() as u64;
        if total > SNAPSHOT_BYTES {
            return Err(ToolError::Bad(format!(
                "diff: the changed files hold more than {SNAPSHOT_BYTES} bytes; send path to diff part of the tree"
            )));
        }
        let copy = copies.join(format!("f{n}"));
        std::fs::write(&copy, &bytes).map_err(|e| ToolError::Io(format!("the diff's private copy could not be written: {e}")))?;
        entries.push(Changed { name: name.to_owned(), mode: Some(mode), copy: Some(copy) });
    }
    Ok((entries, withheld))
}

/// Most changed names a diff or `show` of Git's objects is narrowed to (as explicit
/// paths) when one of them is withheld; more is refused.
const MAX_NARROWED_NAMES: usize = 2000;
/// Most bytes of those names together.
const MAX_NARROWED_BYTES: usize = 64 * 1024;

/// The command that lists the names `args` (a diff or `show` of Git's objects) would
/// show, NUL-separated, both sides of a rename.
fn name_listing(args: &[String]) -> Vec<String> {
    // `--no-relative`: names from the top whatever the user's `diff.relative` says.
    let mut listing =
        vec![args[0].clone(), "--name-only".to_owned(), "-z".to_owned(), "--no-renames".to_owned(), "--no-relative".to_owned()];
    if args[0] == "show" {
        listing.push("--format=".to_owned());
    }
    listing.extend(args[1..].iter().filter(|a| !matches!(a.as_str(), "--stat" | "--patch" | "--format=fuller")).cloned());
    listing
}

/// The credential locations ([`super::roots::is_sensitive`]) among the NUL-separated
/// `names` git listed (relative to the top), left out: `args` then names only the others,
/// as literal paths after `--` (absolute from the work tree's `top`, when there is one),
/// or, when every name is withheld, shows a commit's header only. Too many names to pass
/// is refused.
fn narrow_to_readable(args: &mut Vec<String>, names: &[u8], top: Option<&Path>) -> Result<Vec<String>, ToolError> {
    let raw: Vec<&[u8]> = names.split(|b| *b == 0).filter(|n| !n.is_empty()).collect();
    let names: Vec<String> = raw.iter().map(|n| String::from_utf8_lossy(n).into_owned()).collect();
    // The whole path where there is a work tree (a dotfiles repository at `~/.config`).
    let whole = |name: &str| top.map_or_else(|| PathBuf::from(name), |top| top.join(name));
    let (withheld, kept): (Vec<String>, Vec<String>) = names.into_iter().partition(|n| super::roots::is_sensitive(&whole(n)));
    if withheld.is_empty() {
        return Ok(withheld);
    }
    // A name that is not UTF-8 could not be passed back as it is: refused, never dropped.
    if raw.iter().any(|n| std::str::from_utf8(n).is_err()) {
        return Err(ToolError::Bad(format!(
            "{}: {} changed file(s) here are credential locations no Herdr tool reads, and a name that is not UTF-8 cannot be named one by one; diff part of the tree with path",
            args[0],
            withheld.len()
        )));
    }
    if kept.len() > MAX_NARROWED_NAMES || kept.iter().map(String::len).sum::<usize>() > MAX_NARROWED_BYTES {
        return Err(ToolError::Bad(format!(
            "{}: {} changed file(s) here are credential locations no Herdr tool reads, and too many others ({}) to name one by one; diff part of the tree with path",
            args[0],
            withheld.len(),
            kept.len()
        )));
    }
    let dashes = args.iter().position(|a| a == "--").unwrap_or(args.len());
    args.truncate(dashes);
    args.push("--".to_owned());
    if kept.is_empty() && args[0] == "show" {
        // The commit's header only: no pathspec would match nothing.
        args.retain(|a| a != "--stat" && a != "--patch");
        args.insert(1, "--no-patch".to_owned());
    }
    for name in kept {
        args.push(whole(&name).display().to_string());
    }
    Ok(withheld)
}

/// The command that lists the names a diff or `show` would show, to leave credential
/// locations out; `None` when nothing is listed. A `show` of one revision is asked what it
/// is with its tags peeled: a commit is listed by the peeled commit (an annotated tag's own
/// text is never read as names); a tree lists nothing (it shows names only); a file is
/// shown whole only as `rev:path`, its path vetted by `check_rev` (by a tag or an id it is
/// refused).
async fn names_listing(dir: &Path, ceiling: &Path, args: &[String], request: &GitRequest) -> Result<Option<Vec<String>>, ToolError> {
    let mut listing = name_listing(args);
    let rev = request.from.clone().unwrap_or_else(|| "HEAD".to_owned());
    if request.action != GitAction::Show || is_range(&rev) {
        return Ok(Some(listing));
    }
    // `None`: git could not say (`HEAD^@` names commits `show` expands): listed as given.
    let kind_of = |rev: String| async move {
        let ask = ["cat-file", "-t", "--end-of-options", rev.as_str()].map(str::to_owned);
        let kind = run_git(dir, ceiling, &ask, 64).await?;
        Ok::<_, ToolError>(kind.ok.then(|| String::from_utf8_lossy(&kind.stdout).trim().to_owned()))
    };
    // A tag is peeled (`^{}` after `rev:path` would name a path: only a tag is peeled).
    let peeled = format!("{rev}^{{}}");
    let (kind, listed_rev) = match kind_of(rev.clone()).await? {
        None => return Ok(Some(listing)),
        Some(kind) if kind == "tag" => (kind_of(peeled.clone()).await?.unwrap_or_default(), peeled),
        Some(other) => (other, rev.clone()),
    };
    // A file reached by a tag or an id, not by `rev:path`, could be a credential
    // location's: refused (a `rev:path` was vetted by `check_rev`).
    if kind == "blob" && !rev.contains(':') {
        return Err(ToolError::Bad(format!(
            "show: {rev} is a file's contents; show a file as REV:path (for example HEAD:src/main.rs), so its path can be checked"
        )));
    }
    if kind != "commit" {
        return Ok(None);
    }
    let peeled = listed_rev;
    if let Some(at) = listing.iter().position(|a| a == "--end-of-options") {
        if let Some(slot) = listing.get_mut(at + 1) {
            *slot = peeled;
        }
    }
    Ok(Some(listing))
}

/// Runs the request (see the module invariants).
pub async fn git(roots: &Roots, request: &GitRequest) -> Result<Value, ToolError> {
    let found = tokio::task::spawn_blocking(crate::gitcmd::installed_version)
        .await
        .map_err(|lost| ToolError::Io(format!("the Git version could not be read ({lost}); retry")))?;
    git_found(roots, request, found.as_deref()).await
}

/// [`git`] with the `git version` output `found`: refused below `crate::gitcmd::MIN_GIT`
/// (older git ignores the hardening's settings).
async fn git_found(roots: &Roots, request: &GitRequest, found: Option<&str>) -> Result<Value, ToolError> {
    if let Some(why) = crate::gitcmd::version_refusal(found) {
        return Err(ToolError::Bad(why));
    }
    // Resolving and the .git check read the disk: on the blocking pool.
    let (located, checked) = (roots.clone(), request.clone());
    let (dir, ceiling, pathspec) = tokio::task::spawn_blocking(move || {
        let located_here = locate(&located, &checked)?;
        check_git_link(&located, &located_here.0)?;
        Ok::<_, ToolError>(located_here)
    })
    .await
    .map_err(|lost| ToolError::Io(format!("the repository could not be located ({lost}); retry")))??;
    let mut args = arguments(request, pathspec.as_deref())?;
    let top = confine_repository(roots, &dir, &ceiling, &args[0]).await?;
    // A diff reads the work tree only without staged, to or a range in from.
    let range = request.from.as_deref().is_some_and(is_range);
    let snapshot = if request.action == GitAction::Diff && !request.staged && request.to.is_none() && !range {
        let snapshot = snapshot_work_tree(roots, &dir, &ceiling, request, pathspec.as_deref()).await?;
        // The snapshot's index against its base, never the work tree again.
        let at = args.iter().position(|a| a == "--end-of-options").unwrap_or(args.len());
        args.insert(at, "--cached".to_owned());
        if request.from.is_none() {
            args.insert(at + 2, snapshot.base.clone());
        }
        Some(snapshot)
    } else {
        None
    };
    #[cfg(test)]
    tests::before_diff(&dir);
    // Git's objects (show, a staged diff, two revisions) may hold a credential location too:
    // its name is listed first and left out.
    let mut withheld = snapshot.as_ref().map(|s| s.withheld.clone()).unwrap_or_default();
    let mut nothing_left = false;
    let listing = match snapshot.is_none() && matches!(request.action, GitAction::Diff | GitAction::Show) {
        true => names_listing(&dir, &ceiling, &args, request).await?,
        false => None,
    };
    if let Some(listing) = listing {
        let listed = run_git(&dir, &ceiling, &listing, 4 * 1024 * 1024).await?;
        if !listed.ok {
            return Err(git_failed(&args[0], &dir, &ceiling, &listed.stderr));
        }
        if listed.dropped > 0 {
            return Err(ToolError::Bad(format!("{}: too many changed files to check; diff part of the tree with path", args[0])));
        }
        withheld = narrow_to_readable(&mut args, &listed.stdout, top.as_deref())?;
        nothing_left = request.action == GitAction::Diff && !withheld.is_empty() && args.last().is_some_and(|a| a == "--");
    }
    let output = if !nothing_left {
        let env = snapshot.as_ref().map(Snapshot::env);
        run_git_with(&dir, &ceiling, &args, request.max_bytes, env.as_ref().map_or(&[][..], |e| &e[..]), None).await?
    } else {
        // Every changed file is withheld: nothing to diff.
        GitOutput { ok: true, stdout: Vec::new(), dropped: 0, stderr: String::new() }
    };
    drop(snapshot);
    if !output.ok {
        return Err(git_failed(&args[0], &dir, &ceiling, &output.stderr));
    }
    let truncated = output.dropped > 0;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut result = json!({"root": dir, "action": args[0], "truncated": truncated});
    if let Some(path) = &pathspec {
        result["path"] = json!(path);
    }
    match request.action {
        GitAction::Status => {
            let mut records = text.split('\0').filter(|r| !r.is_empty());
            let mut branch = Value::Null;
            let mut entries = Vec::new();
            while let Some(record) = records.next() {
                if let Some(line) = record.strip_prefix("## ") {
                    branch = json!(line);
                    continue;
                }
                // `XY path`: X the index's state, Y the work tree's (git status --porcelain).
                let (code, path) = record.split_at_checked(3).unwrap_or((record, ""));
                let code = code.get(..2).unwrap_or(code);
                let mut entry = json!({"status": code, "path": path});
                if code.starts_with('R') || code.starts_with('C') {
                    entry["from"] = json!(records.next());
                }
                entries.push(entry);
            }
            result["branch"] = branch;
            result["clean"] = json!(entries.is_empty() && !truncated);
            result["entries"] = json!(entries);
        }
        GitAction::Log => {
            let commits: Vec<Value> = text
                .split('\u{1e}')
                .map(|r| r.trim_start_matches('\n'))
                .filter(|r| !r.is_empty())
                .filter_map(|r| {
                    let f: Vec<&str> = r.split('\u{1f}').collect();
                    (f.len() == 5).then(|| json!({"commit": f[0], "short": f[1], "author": f[2], "date": f[3], "subject": f[4]}))
                })
                .collect();
            result["count"] = json!(commits.len());
            result["commits"] = json!(commits);
        }
        GitAction::Diff | GitAction::Show => {
            result["empty"] = json!(text.is_empty());
            result["text"] = json!(text);
        }
    }
    let mut notes = Vec::new();
    if truncated {
        notes.push(format!("output cut at max_bytes = {} ({} bytes left out); narrow it with path", request.max_bytes, output.dropped));
    }
    if !withheld.is_empty() {
        notes.push(format!(
            "{} changed file(s) left out, credential locations no Herdr tool reads (listed in withheld): ask the user about them",
            withheld.len()
        ));
        result["withheld"] = json!(withheld);
    }
    if !notes.is_empty() {
        result["note"] = json!(notes.join("; "));
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    /// What a local process does between `herdr_git`'s checks and its diff, for the
    /// repository directory it is set for (tests run side by side).
    type Meanwhile = (PathBuf, Box<dyn FnOnce() + Send>);
    static MEANWHILE: std::sync::Mutex<Vec<Meanwhile>> = std::sync::Mutex::new(Vec::new());

    /// Runs what is set for `dir`, once.
    pub(super) fn before_diff(dir: &Path) {
        let mut set = MEANWHILE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(at) = set.iter().position(|(for_dir, _)| for_dir == dir) {
            let (_, act) = set.remove(at);
            act();
        }
    }

    /// Leftovers31 (failed before): the work-tree diff checked the changed files for hard
    /// links, then ran `git diff`, which read them again: a file swapped for a hard link to
    /// a file outside the roots in between was diffed, its text shown. What is diffed now is
    /// what was read through the confined path (hashed into objects of its own).
    #[tokio::test]
    async fn a_file_swapped_for_a_hard_link_after_the_check_is_never_diffed() {
        let (dir, repo) = repository_with_sub("b.txt", "one\n");
        let repo = repo.canonicalize().expect("canonical");
        let secret = dir.path().join("secret.txt");
        std::fs::write(&secret, "SECRET\n").expect("w");
        let changed = repo.join("b.txt");
        std::fs::write(&changed, "two\n").expect("w");
        let swapped = changed.clone();
        let act = move || {
            std::fs::remove_file(&swapped).expect("rm");
            std::fs::hard_link(&secret, &swapped).expect("ln");
        };
        MEANWHILE.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((repo.clone(), Box::new(act)));
        let roots = Roots::new([repo.clone()], []);
        let mut diff = request(GitAction::Diff);
        diff.root = repo.display().to_string();
        diff.max_bytes = 64 * 1024;
        let shown = git(&roots, &diff).await.expect("diffed");
        let text = shown["text"].as_str().unwrap_or_default();
        assert!(text.contains("+two") && !text.contains("SECRET"), "{shown}");
    }

    use super::*;

    fn request(action: GitAction) -> GitRequest {
        GitRequest { root: ".".to_owned(), action, path: None, staged: false, from: None, to: None, max_count: 5, max_bytes: 1000 }
    }

    #[test]
    fn a_revision_that_looks_like_an_option_or_holds_odd_characters_is_refused() {
        for bad in ["--output=/tmp/x", "-p", "HEAD x", "a\nb", "", "$(id)", "a;b", "HEAD`"] {
            assert!(check_rev("from", bad).is_err(), "{bad:?}");
        }
        for good in ["HEAD", "HEAD~2", "main^{tree}", "v1.0.0", "origin/main", "abc123", "HEAD@{1}", "HEAD:src/a.rs"] {
            assert!(check_rev("from", good).is_ok(), "{good:?}");
        }
        let mut diff = request(GitAction::Diff);
        diff.from = Some("--output=/tmp/pwned".to_owned());
        assert!(arguments(&diff, None).is_err());
    }

    #[test]
    fn revisions_follow_end_of_options_and_paths_follow_a_double_dash() {
        let mut diff = request(GitAction::Diff);
        diff.from = Some("HEAD~1".to_owned());
        diff.to = Some("HEAD".to_owned());
        let args = arguments(&diff, Some("-weird-name")).expect("args");
        let end = args.iter().position(|a| a == "--end-of-options").expect("end of options");
        assert_eq!(&args[end + 1..], ["HEAD~1", "HEAD", "--", "-weird-name"]);
        let mut staged = request(GitAction::Diff);
        staged.staged = true;
        assert!(arguments(&staged, None).expect("args").contains(&"--cached".to_owned()));
        staged.to = Some("HEAD".to_owned());
        assert!(arguments(&staged, None).is_err());
        assert!(arguments(&request(GitAction::Log), None).expect("args").contains(&"--max-count=5".to_owned()));
    }

    /// Leftovers32 (failed before: git's read-tree error): `from: "A..B"` went the work-tree
    /// way and failed deep in `read-tree`. A range is two revisions, read from Git's objects
    /// only: what `from: A, to: B` shows (`A...B` from their merge base); with `to` or
    /// `staged` it is refused before Git runs, saying what to send.
    #[tokio::test]
    async fn a_range_in_from_diffs_two_revisions_and_never_the_work_tree() {
        let (_dir, repo) = repository_with_sub("b.txt", "one\n");
        let repo = repo.canonicalize().expect("canonical");
        std::fs::write(repo.join("b.txt"), "two\n").expect("w");
        sh(&repo, &["commit", "-qam", "two"]);
        std::fs::write(repo.join("b.txt"), "dirty\n").expect("w");
        let roots = Roots::new([repo.clone()], []);
        let diff = |from: &str, to: Option<&str>, staged: bool| {
            let mut diff = request(GitAction::Diff);
            diff.root = repo.display().to_string();
            diff.max_bytes = 64 * 1024;
            (diff.from, diff.to, diff.staged) = (Some(from.to_owned()), to.map(str::to_owned), staged);
            diff
        };
        let pair = git(&roots, &diff("HEAD~1", Some("HEAD"), false)).await.expect("two revisions");
        for range in ["HEAD~1..HEAD", "HEAD~1...HEAD"] {
            let shown = git(&roots, &diff(range, None, false)).await.expect("a range is diffed");
            let text = shown["text"].as_str().unwrap_or_default();
            assert!(text.contains("+two") && !text.contains("dirty"), "{range}: {shown}");
            assert_eq!(shown["text"], pair["text"], "{range}");
        }
        for (from, to, staged, says) in [
            ("HEAD~1..HEAD", Some("HEAD"), false, "send it without to"),
            ("HEAD~1..HEAD", None, true, "leave staged out"),
            ("HEAD~1", Some("HEAD~1..HEAD"), false, "send the range alone as from"),
        ] {
            let error = git(&roots, &diff(from, to, staged)).await.expect_err("refused").to_string();
            assert!(error.contains(says), "{from} {to:?} {staged}: {error}");
        }
    }

    /// Review38 M1: a `from` or `to` that is no revision but names a file was taken by git as
    /// a path, so `git diff` read the work tree itself (not the checked snapshot): `to:
    /// "b.txt"` showed the dirty file, and so did `from: "x..y"` for a file of that name.
    #[tokio::test]
    async fn a_revision_that_names_a_file_is_refused_never_read_as_a_path() {
        let (_dir, repo) = repository_with_sub("b.txt", "one\n");
        let repo = repo.canonicalize().expect("canonical");
        std::fs::write(repo.join("x..y"), "kept\n").expect("w");
        sh(&repo, &["add", "x..y"]);
        sh(&repo, &["commit", "-qm", "x..y"]);
        std::fs::write(repo.join("b.txt"), "dirty\n").expect("w");
        std::fs::write(repo.join("x..y"), "dirty too\n").expect("w");
        let roots = Roots::new([repo.clone()], []);
        for (from, to) in [("HEAD", Some("b.txt")), ("x..y", None)] {
            let mut diff = request(GitAction::Diff);
            diff.root = repo.display().to_string();
            diff.max_bytes = 64 * 1024;
            (diff.from, diff.to) = (Some(from.to_owned()), to.map(str::to_owned));
            match git(&roots, &diff).await {
                Ok(shown) => panic!("{from} {to:?}: read as a path: {shown}"),
                Err(error) => assert!(!error.to_string().contains("dirty"), "{from} {to:?}: {error}"),
            }
        }
    }

    /// L4 (leftovers32): a diff's private directory left by a crash stays in the temp
    /// directory for good. A sweep removes only ours: the name, our uid, stale, a directory.
    #[test]
    fn a_stale_private_directory_is_swept_and_a_fresh_or_other_one_is_not() {
        let parent = tempfile::tempdir().expect("tempdir");
        let uid = crate::config::current_uid();
        let made = |name: &str| {
            let path = parent.path().join(name);
            std::fs::create_dir_all(path.join("objects")).expect("mkdir");
            path
        };
        // A pid above Linux's and macOS's highest: no process has it.
        let stale = made("herdr-git-99999999-0-1700000000000000000");
        // Ours, as stale by its time: a live process's directory is never removed.
        let live = made(&format!("herdr-git-{}-7-1700000000000000000", std::process::id()));
        let fresh = made("herdr-git-42-1-1700000000000000001");
        let other = made("herdr-gitx-43-0-1");
        let loose = made("herdr-git-notes");
        let file = parent.path().join("herdr-git-44-0-2");
        std::fs::write(&file, "not a directory").expect("w");
        let link = parent.path().join("herdr-git-45-0-3");
        std::os::unix::fs::symlink(&fresh, &link).expect("ln");
        // An hour on: every entry is older than the stale age but `fresh`, touched at "now".
        let now = std::time::SystemTime::now() + Duration::from_secs(3600);
        std::fs::File::open(&fresh).expect("open").set_modified(now).expect("touch");
        assert_eq!(sweep_stale_snapshots(parent.path(), uid, now), std::slice::from_ref(&stale));
        assert!(!stale.exists() && fresh.exists() && other.exists() && loose.exists() && file.exists() && fresh.join("objects").exists());
        assert!(live.exists(), "a directory of a process that runs stays");
        assert!(std::fs::symlink_metadata(&link).is_ok(), "a symlink is never followed or removed");
        // Another uid's directory is never removed.
        let foreign = made("herdr-git-46-0-4");
        assert!(sweep_stale_snapshots(parent.path(), uid.wrapping_add(1), now).is_empty());
        assert!(foreign.exists());
    }

    /// A work-tree diff from the snapshot shows what `git diff` shows: a changed, a
    /// deleted, an added-then-changed, an executable and a symlinked file, from the index,
    /// from a revision, and for one path.
    #[tokio::test]
    async fn a_work_tree_diff_from_the_snapshot_shows_what_git_diff_shows() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, repo) = repository_with_sub("b.txt", "one\n");
        let repo = repo.canonicalize().expect("canonical");
        std::fs::write(repo.join("run.sh"), "echo hi\n").expect("w");
        std::os::unix::fs::symlink("b.txt", repo.join("link")).expect("ln");
        sh(&repo, &["add", "."]);
        sh(&repo, &["commit", "-qm", "two"]);
        std::fs::write(repo.join("b.txt"), "one\nmore\n").expect("w");
        std::fs::remove_file(repo.join("sub/a.txt")).expect("rm");
        std::fs::write(repo.join("new.txt"), "staged\n").expect("w");
        sh(&repo, &["add", "new.txt"]);
        std::fs::write(repo.join("new.txt"), "staged\nthen changed\n").expect("w");
        std::fs::set_permissions(repo.join("run.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::remove_file(repo.join("link")).expect("rm");
        std::os::unix::fs::symlink("new.txt", repo.join("link")).expect("ln");
        let roots = Roots::new([repo.clone()], []);
        let index = std::fs::read(repo.join(".git/index")).expect("the index");
        for (from, path) in [(None, None), (Some("HEAD~1"), None), (None, Some("b.txt"))] {
            shows_what_git_diff_shows(&roots, &repo, from, path).await;
        }
        assert_eq!(std::fs::read(repo.join(".git/index")).expect("the index"), index, "the repository's index is not written");
        // Gitfix31 (failed before): a staged rename listed only its new name, and a file
        // removed from the index but still on disk was read back — both deletions lost.
        sh(&repo, &["mv", "b.txt", "c.txt"]);
        sh(&repo, &["rm", "-q", "--cached", "run.sh"]);
        shows_what_git_diff_shows(&roots, &repo, Some("HEAD"), None).await;
        shows_what_git_diff_shows(&roots, &repo, None, None).await;
    }

    /// Gitfix31 (failed before): with `core.fileMode=false` every changed file showed an
    /// old/new mode pair, and a file git converts (`text eol=crlf`) was hashed as read, so a
    /// one-line edit showed every line changed. Modes come from git's listing and each file
    /// is hashed as git would store it at its path.
    #[tokio::test]
    async fn a_work_tree_diff_shows_modes_and_line_endings_as_git_diff_does() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, repo) = repository_with_sub("b.txt", "one\ntwo\n");
        let repo = repo.canonicalize().expect("canonical");
        std::fs::write(repo.join(".gitattributes"), "b.txt text eol=crlf\n").expect("w");
        sh(&repo, &["add", ".gitattributes"]);
        sh(&repo, &["commit", "-qm", "crlf"]);
        sh(&repo, &["config", "core.fileMode", "false"]);
        std::fs::write(repo.join("b.txt"), "one\r\ntwo\r\nthree\r\n").expect("w");
        std::fs::write(repo.join("sub/a.txt"), "one\nmore\n").expect("w");
        std::fs::set_permissions(repo.join("sub/a.txt"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let roots = Roots::new([repo.clone()], []);
        shows_what_git_diff_shows(&roots, &repo, None, None).await;
        shows_what_git_diff_shows(&roots, &repo, Some("HEAD~1"), None).await;
    }

    /// Gitfix31 (failed before): a tracked `sub/a.txt` whose directory was replaced by a
    /// symlink to a directory outside the roots refused the whole diff (or showed what the
    /// link outside pointed at). A name below a symlink is deleted, as git sees it; the link
    /// is never followed.
    #[tokio::test]
    async fn a_file_below_a_symlinked_directory_is_deleted_and_never_read() {
        let (dir, repo) = repository_with_sub("b.txt", "one\n");
        let repo = repo.canonicalize().expect("canonical");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::write(outside.join("a.txt"), "SECRET\n").expect("w");
        std::fs::remove_dir_all(repo.join("sub")).expect("rm");
        std::os::unix::fs::symlink(&outside, repo.join("sub")).expect("ln");
        std::fs::write(repo.join("b.txt"), "two\n").expect("w");
        let roots = Roots::new([repo.clone()], []);
        shows_what_git_diff_shows(&roots, &repo, None, None).await;
        shows_what_git_diff_shows(&roots, &repo, Some("HEAD"), None).await;
        // Swapped after git listed the names as changed: read as deleted, never followed
        // (a regular file or a link outside).
        std::os::unix::fs::symlink("/SECRET-LINK", outside.join("l")).expect("ln");
        let copies = tempfile::tempdir().expect("tempdir");
        let listing = ["sub/a.txt", "sub/l"].map(|name| Listed { name: name.to_owned(), deleted: false, mode: "100644".to_owned() });
        let (read, _) = read_changed(&roots, &repo, &listing, copies.path()).expect("read as deleted");
        assert!(read.iter().all(|entry| entry.mode.is_none() && entry.copy.is_none()), "deleted");
    }

    /// Gitfix31 (failed before): in a SHA-256 repository a deleted file was written with a
    /// 40-zero id, which `update-index` refused; with `core.splitIndex=true` the snapshot's
    /// index writes could put `sharedindex.*` files into the repository's git directory.
    #[tokio::test]
    async fn a_work_tree_diff_in_a_sha256_or_split_index_repository_shows_what_git_diff_shows() {
        for (init, split) in [(&["init", "-q", "--object-format=sha256"][..], false), (&["init", "-q"][..], true)] {
            let dir = tempfile::tempdir().expect("tempdir");
            let repo = dir.path().join("repo");
            std::fs::create_dir_all(repo.join("sub")).expect("mkdir");
            sh(&repo, init);
            let repo = repo.canonicalize().expect("canonical");
            if split {
                sh(&repo, &["config", "core.splitIndex", "true"]);
            }
            std::fs::write(repo.join("sub/a.txt"), "one\n").expect("w");
            std::fs::write(repo.join("b.txt"), "one\n").expect("w");
            sh(&repo, &["add", "."]);
            sh(&repo, &["commit", "-qm", "one"]);
            std::fs::remove_file(repo.join("sub/a.txt")).expect("rm");
            std::fs::write(repo.join("b.txt"), "two\n").expect("w");
            let listed = || {
                let mut names: Vec<_> = std::fs::read_dir(repo.join(".git")).expect("ls").map(|e| e.expect("entry").file_name()).collect();
                names.sort();
                names
            };
            let git_dir = listed();
            let roots = Roots::new([repo.clone()], []);
            shows_what_git_diff_shows(&roots, &repo, None, None).await;
            shows_what_git_diff_shows(&roots, &repo, Some("HEAD"), None).await;
            assert_eq!(listed(), git_dir, "nothing written into the git directory (split: {split})");
        }
    }

    /// Gitfix31 (review L2): during a merge with conflicts the index has no tree to compare
    /// the work tree with; the refusal says to send `from: "HEAD"`, and that diff (the work
    /// tree, conflict markers included, against the last commit) shows what `git diff HEAD`
    /// shows.
    #[tokio::test]
    async fn a_work_tree_diff_during_a_conflicted_merge_names_from_head_which_works() {
        let (_dir, repo) = repository_with_sub("b.txt", "one\n");
        let repo = repo.canonicalize().expect("canonical");
        sh(&repo, &["checkout", "-qb", "other"]);
        std::fs::write(repo.join("b.txt"), "theirs\n").expect("w");
        std::fs::write(repo.join("c.txt"), "clean\n").expect("w");
        sh(&repo, &["add", "."]);
        sh(&repo, &["commit", "-qm", "theirs"]);
        sh(&repo, &["checkout", "-q", "-"]);
        std::fs::write(repo.join("b.txt"), "ours\n").expect("w");
        sh(&repo, &["commit", "-qam", "ours"]);
        let merged = std::process::Command::new("git").arg("-C").arg(&repo).args(["merge", "-q", "other"]).output().expect("git");
        assert!(!merged.status.success(), "a conflict");
        let roots = Roots::new([repo.clone()], []);
        let mut diff = request(GitAction::Diff);
        diff.root = repo.display().to_string();
        let error = git(&roots, &diff).await.expect_err("no tree of a conflicted index").to_string();
        assert!(error.contains("from: \"HEAD\""), "{error}");
        shows_what_git_diff_shows(&roots, &repo, Some("HEAD"), None).await;
    }

    /// Asserts that `herdr_git diff` (work tree, `from`, `path`) in `repo` shows what plain
    /// `git diff` shows, byte for byte.
    async fn shows_what_git_diff_shows(roots: &Roots, repo: &Path, from: Option<&str>, path: Option<&str>) {
        let mut diff = request(GitAction::Diff);
        diff.root = repo.display().to_string();
        diff.max_bytes = 64 * 1024;
        diff.from = from.map(str::to_owned);
        diff.path = path.map(str::to_owned);
        let shown = git(roots, &diff).await.expect("diffed");
        let mut args = vec!["diff", "--no-ext-diff", "--no-textconv", "--no-color", "--stat", "--patch"];
        args.extend(from);
        if let Some(path) = path {
            args.extend(["--", path]);
        }
        let plain = std::process::Command::new("git").arg("-C").arg(repo).args(&args).output().expect("git");
        assert_eq!(shown["text"].as_str(), Some(String::from_utf8_lossy(&plain.stdout).as_ref()), "{from:?} {path:?}");
    }

    fn sh(dir: &Path, args: &[&str]) {
        let status = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .status()
            .expect("git");
        assert!(status.success(), "git {args:?}");
    }

    /// A repository `repo` in a temporary directory with one commit of `sub/a.txt` and of
    /// `file` (holding `text`) at its top.
    fn repository_with_sub(file: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join("sub")).expect("mkdir");
        sh(&repo, &["init", "-q"]);
        std::fs::write(repo.join("sub/a.txt"), "one\n").expect("w");
        std::fs::write(repo.join(file), text).expect("w");
        sh(&repo, &["add", "."]);
        sh(&repo, &["commit", "-qm", "one"]);
        (dir, repo)
    }

    /// Sec41: `herdr_git` named a dotenv file or the repository's own `.git/config` as its
    /// path and showed them; a work-tree diff read a changed tracked `.env.local` too. Both
    /// are refused now, saying it is a credential location; the text never appears.
    #[tokio::test]
    async fn a_dotenv_file_or_the_git_config_as_a_git_path_is_refused_never_shown() {
        let (_dir, repo) = repository_with_sub(".env.local", "KEY=committed\n");
        let repo = repo.canonicalize().expect("canonical");
        std::fs::write(repo.join(".env.local"), "KEY=SECRET\n").expect("w");
        std::fs::write(repo.join(".env"), "KEY=SECRET\n").expect("w");
        let roots = Roots::new([repo.clone()], []);
        for (action, path) in [(GitAction::Diff, Some(".env")), (GitAction::Log, Some(".git/config"))] {
            let mut call = request(action);
            call.root = repo.display().to_string();
            call.path = path.map(str::to_owned);
            call.max_bytes = 64 * 1024;
            match git(&roots, &call).await {
                Ok(shown) => panic!("{path:?}: shown: {shown}"),
                Err(error) => {
                    let error = error.to_string();
                    assert!(error.contains("credential location") && !error.contains("SECRET"), "{path:?}: {error}");
                }
            }
        }
    }

    /// Final read (failed before): a work-tree diff failed whole while a tracked credential
    /// location (a `.env.development` many projects commit) had changes. It now shows the
    /// other files, leaves that one out unread and names it.
    #[tokio::test]
    async fn a_work_tree_diff_leaves_a_changed_dotenv_file_out_and_names_it() {
        let (_dir, repo) = repository_with_sub(".env.local", "KEY=committed\n");
        let repo = repo.canonicalize().expect("canonical");
        std::fs::write(repo.join(".env.local"), "KEY=SECRET\n").expect("w");
        std::fs::write(repo.join("sub/a.txt"), "changed\n").expect("w");
        let roots = Roots::new([repo.clone()], []);
        let mut call = request(GitAction::Diff);
        call.root = repo.display().to_string();
        call.max_bytes = 64 * 1024;
        let shown = git(&roots, &call).await.expect("diff");
        let text = shown["text"].as_str().expect("text");
        assert!(text.contains("+changed") && !text.contains("SECRET") && !text.contains(".env.local"), "{shown}");
        assert_eq!(shown["withheld"], json!([".env.local"]), "{shown}");
        assert!(shown["note"].as_str().is_some_and(|n| n.contains("credential")), "{shown}");
    }

    /// A tracked file replaced by a hard link to a file outside the roots: the work-tree
    /// diff is refused and names it; the text outside never appears.
    #[tokio::test]
    async fn a_work_tree_diff_refuses_a_hard_linked_file_and_shows_nothing_of_it() {
        let (dir, repo) = repository_with_sub("b.txt", "one\n");
        std::fs::write(dir.path().join("secret.txt"), "SECRET\n").expect("w");
        std::fs::remove_file(repo.join("sub/a.txt")).expect("rm");
        std::fs::hard_link(dir.path().join("secret.txt"), repo.join("sub/a.txt")).expect("link");
        std::fs::write(repo.join("b.txt"), "two\n").expect("w");
        let roots = Roots::new([repo.clone()], []);
        let mut diff = request(GitAction::Diff);
        diff.root = repo.join("sub").display().to_string();
        let error = git(&roots, &diff).await.expect_err("refused");
        assert!(
            matches!(error, ToolError::Root(crate::tools::roots::RootError::HardLink { .. })),
            "refused as every hard link is: {error}"
        );
        assert!(
            error.to_string().contains("sub/a.txt") && error.to_string().contains("hard link") && !error.to_string().contains("SECRET"),
            "{error}"
        );
        // Another path is diffed; committed content is shown.
        diff.root = repo.display().to_string();
        diff.path = Some("b.txt".to_owned());
        let shown = git(&roots, &diff).await.expect("diff of another file");
        assert!(shown["text"].as_str().is_some_and(|t| t.contains("+two") && !t.contains("SECRET")), "{shown}");
        diff.path = None;
        diff.staged = true;
        assert!(git(&roots, &diff).await.is_ok());
    }

    /// A root below a repository's top level (a pane opened in a subdirectory): git finds no
    /// repository inside the roots, and the error says where the repository is and how to
    /// register it; nothing above the root is read.
    #[tokio::test]
    async fn a_root_below_the_repository_top_is_refused_with_the_way_to_register_the_repository() {
        let (_dir, repo) = repository_with_sub("outside.txt", "OUTSIDE\n");
        let top = repo.canonicalize().expect("canonical");
        let roots = Roots::new([repo.join("sub")], []);
        let mut status = request(GitAction::Status);
        status.root = repo.join("sub").display().to_string();
        let error = git(&roots, &status).await.expect_err("no repository inside the roots").to_string();
        assert!(error.contains(&format!("herdr-companion roots add {}", top.display())), "{error}");
        assert!(!error.contains("OUTSIDE") && !error.contains("outside.txt"), "{error}");
        let mut diff = request(GitAction::Diff);
        diff.root = status.root.clone();
        let error = git(&roots, &diff).await.expect_err("no repository inside the roots").to_string();
        assert!(error.contains(&format!("herdr-companion roots add {}", top.display())), "{error}");
        // Registered, the repository is read.
        let roots = Roots::new([repo.join("sub"), top.clone()], []);
        assert!(git(&roots, &status).await.is_ok());
    }

    /// A dotfiles repository at the user's home (or above it) is never named: registering it
    /// would open the whole home to the planner.
    #[test]
    fn a_repository_at_the_home_directory_or_above_is_never_suggested() {
        let (_dir, repo) = repository_with_sub("b.txt", "one\n");
        let top = repo.canonicalize().expect("canonical");
        let ceiling = top.join("sub");
        let refused = "fatal: not a git repository (or any of the parent directories): .git";
        assert_eq!(repository_to_register(&ceiling, refused, None), Some(top.clone()));
        assert_eq!(repository_to_register(&ceiling, refused, Some(&top)), None, "the home itself");
        assert_eq!(repository_to_register(&ceiling, refused, Some(&ceiling)), None, "above the home");
        assert_eq!(repository_to_register(&ceiling, "fatal: bad revision", None), None);
    }

    /// Leftovers31 (failed before): a broken worktree (its `.git` file names a git directory
    /// that is gone) also got "ask the user to register" — naming the root itself, or a
    /// repository above it that git never looked for. Only git's own "not found up to the
    /// ceiling" message, with a repository top (a `.git` holding `HEAD`) above the root, gets
    /// the hint.
    #[tokio::test]
    async fn a_broken_worktree_or_a_stray_git_name_above_gets_no_register_hint() {
        let (dir, repo) = repository_with_sub("b.txt", "one\n");
        let top = repo.canonicalize().expect("canonical");
        let worktree = top.join("sub");
        // Its git directory: inside the root, and no longer one (pruned, emptied).
        let gone = worktree.join("gone");
        std::fs::create_dir_all(&gone).expect("mkdir");
        std::fs::write(worktree.join(".git"), format!("gitdir: {}\n", gone.display())).expect("w");
        let broken = format!("fatal: not a git repository: {}", gone.display());
        assert_eq!(repository_to_register(&top, &broken, None), None);
        let error = git(&Roots::new([worktree.clone()], []), &request(GitAction::Status)).await.expect_err("a broken worktree");
        assert!(error.to_string().contains("not a git repository") && !error.to_string().contains("roots add"), "{error}");
        // An empty `.git` directory above the root is no repository.
        let plain = dir.path().canonicalize().expect("canonical").join("plain");
        std::fs::create_dir_all(plain.join(".git")).expect("mkdir");
        std::fs::create_dir_all(plain.join("sub")).expect("mkdir");
        let not_found = "fatal: not a git repository (or any of the parent directories): .git";
        assert_eq!(repository_to_register(&plain.join("sub"), not_found, None), None);
    }

    #[tokio::test]
    async fn a_filter_named_in_the_repository_config_never_runs_and_a_gitdir_elsewhere_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).expect("mkdir");
        sh(&repo, &["init", "-q"]);
        std::fs::write(repo.join("a.txt"), "one\n").expect("w");
        std::fs::write(repo.join(".gitattributes"), "* filter=x\n").expect("w");
        sh(&repo, &["add", "."]);
        sh(&repo, &["commit", "-qm", "one"]);
        let pwn = dir.path().join("pwn");
        let other = dir.path().join("pwn2");
        sh(&repo, &["config", "filter.x.clean", &format!("touch {}", pwn.display())]);
        sh(&repo, &["config", "filter.x.process", &format!("touch {}", other.display())]);
        sh(&repo, &["config", "log.showSignature", "true"]);
        sh(&repo, &["config", "gpg.program", &format!("touch {}", other.display())]);
        std::thread::sleep(Duration::from_millis(1100));
        std::fs::write(repo.join("a.txt"), "two\n").expect("w");
        let roots = Roots::new([repo.clone()], []);
        for action in [GitAction::Status, GitAction::Diff, GitAction::Log] {
            let result = git(&roots, &request(action)).await.expect("git");
            assert!(!pwn.exists() && !other.exists(), "a configured program ran: {result}");
        }
        // The dirty check of the write tools uses the same command.
        let _ = crate::tools::edit::git_state(&repo.join("a.txt"), &roots);
        assert!(!pwn.exists() && !other.exists(), "git_state ran a configured program");
        // A .git file pointing outside the roots is refused.
        let linked = dir.path().join("linked");
        std::fs::create_dir_all(&linked).expect("mkdir");
        std::fs::write(linked.join(".git"), format!("gitdir: {}\n", repo.join(".git").display())).expect("w");
        let error = git(&Roots::new([linked], []), &request(GitAction::Status)).await.expect_err("refused");
        assert!(error.to_string().contains("outside the project roots"), "{error}");
    }

    /// A repository `name` in `dir` with one commit of `file` holding `text`; its path,
    /// canonical.
    fn repository_in(dir: &Path, name: &str, file: &str, text: &str) -> PathBuf {
        let repo = dir.join(name);
        std::fs::create_dir_all(&repo).expect("mkdir");
        sh(&repo, &["init", "-q"]);
        std::fs::write(repo.join(file), text).expect("w");
        sh(&repo, &["add", "."]);
        sh(&repo, &["commit", "-qm", text.trim()]);
        repo.canonicalize().expect("canonical")
    }

    /// `git` run in `dir` with `args` (and no hardening: the test's own), its output.
    fn sh_out(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git").arg("-C").arg(dir).args(args).output().expect("git");
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Git41 HIGH-1 (failed before: the clean filter ran): git splits `-c
    /// filter.<name>.clean=` at the first `=`, so for a filter named `a=b` the override set
    /// another key and the repository's clean command ran during status, the work-tree
    /// diff and the write tools' dirty check. The overrides go through the environment (a
    /// key there may hold `=`), and names are read NUL-separated, as bytes.
    #[tokio::test]
    async fn a_filter_whose_name_holds_an_equals_sign_or_odd_bytes_never_runs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).expect("mkdir");
        sh(&repo, &["init", "-q"]);
        std::fs::write(repo.join("a.txt"), "one\n").expect("w");
        std::fs::write(repo.join("b.txt"), "one\n").expect("w");
        std::fs::write(repo.join(".gitattributes"), b"a.txt filter=a=b\nb.txt filter=\xff\n").expect("w");
        sh(&repo, &["add", "."]);
        sh(&repo, &["commit", "-qm", "one"]);
        let repo = repo.canonicalize().expect("canonical");
        let marker = dir.path().join("ran");
        let run = format!("touch {}; cat", marker.display());
        let mut config = std::fs::read(repo.join(".git/config")).expect("config");
        for name in [&b"a=b"[..], b"\xff"] {
            config.extend_from_slice(b"[filter \"");
            config.extend_from_slice(name);
            config.extend_from_slice(format!("\"]\n\tclean = {run}\n\tsmudge = {run}\n").as_bytes());
        }
        std::fs::write(repo.join(".git/config"), config).expect("w");
        std::thread::sleep(Duration::from_millis(1100));
        std::fs::write(repo.join("a.txt"), "two\n").expect("w");
        std::fs::write(repo.join("b.txt"), "two\n").expect("w");
        let roots = Roots::new([repo.clone()], []);
        let status = git(&roots, &request(GitAction::Status)).await.expect("status");
        assert!(!marker.exists(), "status ran the filter: {status}");
        assert_eq!(status["entries"].as_array().map(Vec::len), Some(2), "{status}");
        let mut diff = request(GitAction::Diff);
        diff.max_bytes = 64 * 1024;
        let shown = git(&roots, &diff).await.expect("diff");
        assert!(!marker.exists(), "the work-tree diff ran the filter: {shown}");
        assert!(shown["text"].as_str().is_some_and(|t| t.contains("+two")), "{shown}");
        let state = crate::tools::edit::git_state(&repo.join("a.txt"), &roots);
        assert!(!marker.exists(), "the dirty check ran the filter: {state:?}");
        assert_eq!(state, crate::tools::edit::GitState::Dirty("M".to_owned()));
    }

    /// Git41 HIGH-2 (failed before: the submodule's filter ran): status and the work-tree
    /// diff went into a checked-out submodule (git runs `git status` in it), whose own
    /// filters (in `.git/modules/<sub>/config`) were never read into the overrides.
    /// Submodules are ignored now.
    #[tokio::test]
    async fn a_submodules_own_filter_never_runs_while_the_superproject_is_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let inner = repository_in(dir.path(), "inner", "f.txt", "one\n");
        let repo = repository_in(dir.path(), "repo", "b.txt", "one\n");
        sh(&repo, &["-c", "protocol.file.allow=always", "submodule", "add", "-q", &inner.display().to_string(), "sub"]);
        sh(&repo, &["commit", "-qm", "sub"]);
        let marker = dir.path().join("ran");
        sh(&repo.join("sub"), &["config", "filter.evil.clean", &format!("touch {}; cat", marker.display())]);
        let module = repo.join(".git/modules/sub");
        std::fs::create_dir_all(module.join("info")).expect("mkdir");
        std::fs::write(module.join("info/attributes"), "* filter=evil\n").expect("w");
        std::thread::sleep(Duration::from_millis(1100));
        std::fs::write(repo.join("sub/f.txt"), "two\n").expect("w");
        std::fs::write(repo.join("b.txt"), "two\n").expect("w");
        let roots = Roots::new([repo.clone()], []);
        let status = git(&roots, &request(GitAction::Status)).await.expect("status");
        assert!(!marker.exists(), "status ran the submodule's filter: {status}");
        let mut diff = request(GitAction::Diff);
        diff.max_bytes = 64 * 1024;
        let shown = git(&roots, &diff).await.expect("diff");
        assert!(!marker.exists(), "the work-tree diff ran the submodule's filter: {shown}");
        assert!(shown["text"].as_str().is_some_and(|t| t.contains("+two")), "{shown}");
        for path in [repo.join("sub"), repo.join("b.txt")] {
            let state = crate::tools::edit::git_state(&path, &roots);
            assert!(!marker.exists(), "the dirty check of {} ran the submodule's filter: {state:?}", path.display());
        }
    }

    /// Runs `request` with `roots` on a thread of its own and waits at most 20 s for it.
    fn answered_promptly(roots: Roots, request: GitRequest) -> Result<Value, String> {
        let (send, answer) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            let _ = send.send(runtime.block_on(git(&roots, &request)).map_err(|e| e.to_string()));
        });
        answer.recv_timeout(Duration::from_secs(20)).expect("answered within 20 s")
    }

    /// Git41 MED-2 (failed before: it hung): a FIFO named `.git` was read with
    /// `read_to_string`, which blocks until something writes to it, on a blocking thread
    /// that never came back. The `.git` file is opened without blocking and refused when it
    /// is not a regular file.
    #[test]
    fn a_fifo_named_dot_git_is_refused_promptly() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical").join("root");
        std::fs::create_dir_all(&root).expect("mkdir");
        let made = std::process::Command::new("mkfifo").arg(root.join(".git")).status().expect("mkfifo");
        assert!(made.success());
        let error = answered_promptly(Roots::new([root.clone()], []), request(GitAction::Status)).expect_err("refused");
        assert!(error.contains(".git") && error.contains("not a regular file"), "{error}");
    }

    /// Git41 MED-2 (failed before: git's own error): a `.git` file was read whole, however
    /// big. At most 4 KiB is read; a bigger one is refused, saying so.
    #[test]
    fn a_dot_git_file_over_4_kib_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical").join("root");
        let real = repository_in(&root, "real", "a.txt", "one\n");
        let worktree = root.join("wt");
        std::fs::create_dir_all(&worktree).expect("mkdir");
        let mut text = format!("gitdir: {}\n", real.join(".git").display());
        text.push_str(&"#\n".repeat(32 * 1024));
        std::fs::write(worktree.join(".git"), text).expect("w");
        let mut status = request(GitAction::Status);
        status.root = worktree.display().to_string();
        let error = answered_promptly(Roots::new([root.clone()], []), status).expect_err("refused");
        assert!(error.contains(".git") && error.contains("4 KiB"), "{error}");
    }

    /// Git41 H2: a partial clone whose own config allows the `ext::` transport of its
    /// remote URL: `show` and `diff` of a blob it lacks never fetch it (the URL's command
    /// never runs); they fail or show nothing of it.
    #[tokio::test]
    async fn a_blob_a_partial_clone_lacks_is_never_fetched_through_its_remote() {
        let marks = tempfile::tempdir().expect("tempdir");
        let marker = marks.path().join("PWNED");
        let (_dir, clone, blob) = crate::gitcmd::tests::partial_clone_with_ext_remote(&marker);
        let clone = clone.canonicalize().expect("canonical");
        let roots = Roots::new([clone.clone()], []);
        let mut show = request(GitAction::Show);
        show.root = clone.display().to_string();
        show.from = Some(blob);
        let mut diff = request(GitAction::Diff);
        diff.root = clone.display().to_string();
        diff.from = Some("HEAD~1".to_owned());
        diff.to = Some("HEAD".to_owned());
        for call in [show, diff] {
            let _ = git(&roots, &call).await;
            assert!(!marker.exists(), "{:?}: the remote's command ran", call.action);
        }
    }

    /// Git41 H1: with a git older than 2.31 (which ignores the hardening's settings)
    /// every action is refused before git runs, saying to upgrade.
    #[tokio::test]
    async fn every_action_is_refused_with_a_git_older_than_2_31() {
        let (_dir, repo) = repository_with_sub("a.txt", "one\n");
        let repo = repo.canonicalize().expect("canonical");
        let roots = Roots::new([repo.clone()], []);
        for action in [GitAction::Status, GitAction::Diff, GitAction::Log, GitAction::Show] {
            let mut call = request(action);
            call.root = repo.display().to_string();
            let error = git_found(&roots, &call, Some("git version 2.30.2")).await.expect_err("refused").to_string();
            assert_eq!(error, "herdr_git needs Git 2.31 or newer (found 2.30.2): upgrade Git", "{action:?}");
            git_found(&roots, &call, Some("git version 2.47.3")).await.expect("a newer git runs");
        }
    }

    /// Git41 M1 (failed before: `show` printed the private commit): git follows six
    /// alternates lists (the repository's own and those of the first five alternates);
    /// the check read one list fewer, so a chain repo → a1 → … → a5 → outside passed. A
    /// chain one alternate longer is not followed by git itself.
    #[tokio::test]
    async fn an_alternates_chain_as_long_as_git_follows_is_checked_to_its_end() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (private, id) = private_repository(dir.path());
        let objects = private.join(".git/objects");
        let root = dir.path().canonicalize().expect("canonical").join("root");
        // `links` alternates inside the roots between the repository and the private objects.
        let chained = |name: &str, links: usize| {
            let repo = repository_in(&root, name, "a.txt", "one\n");
            let mut list = repo.join(".git/objects/info/alternates");
            for n in 1..=links {
                let next = root.join(format!("{name}-a{n}/objects"));
                std::fs::create_dir_all(next.join("info")).expect("mkdir");
                std::fs::write(&list, format!("{}\n", next.display())).expect("w");
                list = next.join("info/alternates");
            }
            std::fs::write(&list, format!("{}\n", objects.display())).expect("w");
            repo
        };
        let (edge, deeper) = (chained("edge", 5), chained("deeper", 6));
        let plain = |repo: &Path| {
            std::process::Command::new("git")
                .arg("-C")
                .arg(repo)
                .args(["cat-file", "-e", &id])
                .stderr(Stdio::null())
                .status()
                .expect("git")
                .success()
        };
        assert!(plain(&edge) && !plain(&deeper), "git follows five alternates of alternates, not six");
        let roots = Roots::new([root.clone()], []);
        let mut show = request(GitAction::Show);
        show.root = edge.display().to_string();
        show.from = Some(id.clone());
        let error = git(&roots, &show).await.expect_err("refused").to_string();
        assert!(error.contains("outside the project roots") && !error.contains("SECRET"), "{error}");
        show.root = deeper.display().to_string();
        let shown = format!("{:?}", git(&roots, &show).await);
        assert!(!shown.contains("SECRET"), "{shown}");
    }

    /// Git41 M4 (failed before: `show` printed the private blob, `status` named its
    /// file): only `objects` itself was resolved, so a symlink inside it (`objects/pack`
    /// or a fan-out directory such as `objects/e9` to another repository's) or an `index`
    /// symlinked to another repository's had git read outside the roots. Each is refused;
    /// the hard links of `git clone --local` are not.
    #[tokio::test]
    async fn a_symlink_inside_the_objects_or_for_the_index_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (private, _) = private_repository(dir.path());
        let blob = sh_out(&private, &["rev-parse", "HEAD:secret.txt"]);
        let packed = repository_in(dir.path(), "packed", "secret.txt", "SECRET\n");
        sh(&packed, &["repack", "-q", "-a", "-d"]);
        let root = dir.path().canonicalize().expect("canonical").join("root");
        let empty = |name: &str| {
            let repo = root.join(name);
            std::fs::create_dir_all(&repo).expect("mkdir");
            sh(&repo, &["init", "-q"]);
            repo
        };
        let fan_out = empty("fanout");
        let link = |from: &Path, to: &Path| {
            let _ = std::fs::remove_dir_all(to);
            std::os::unix::fs::symlink(from, to).expect("ln");
        };
        link(&private.join(".git/objects").join(&blob[..2]), &fan_out.join(".git/objects").join(&blob[..2]));
        let pack = empty("pack");
        link(&packed.join(".git/objects/pack"), &pack.join(".git/objects/pack"));
        let roots = Roots::new([root.clone()], []);
        for repo in [&fan_out, &pack] {
            let mut show = request(GitAction::Show);
            show.root = repo.display().to_string();
            show.from = Some(blob.clone());
            show.max_bytes = 64 * 1024;
            let error = git(&roots, &show).await.expect_err("refused").to_string();
            assert!(error.contains("symbolic link") && !error.contains("SECRET"), "{}: {error}", repo.display());
        }
        let index = repository_in(&root, "index", "a.txt", "one\n");
        std::fs::remove_file(index.join(".git/index")).expect("rm");
        std::os::unix::fs::symlink(private.join(".git/index"), index.join(".git/index")).expect("ln");
        let mut status = request(GitAction::Status);
        status.root = index.display().to_string();
        status.max_bytes = 64 * 1024;
        let error = git(&roots, &status).await.expect_err("refused").to_string();
        assert!(error.contains("symbolic link") && !error.contains("secret.txt"), "{error}");
        let source = repository_in(&root, "source", "a.txt", "one\n");
        sh(&root, &["clone", "-q", "--local", &source.display().to_string(), "cloned"]);
        let mut show = request(GitAction::Show);
        show.root = root.join("cloned").display().to_string();
        git(&roots, &show).await.expect("a clone's hard links are read");
    }

    /// Git41 M2 (failed before: each showed `SECRET`): a credential location reached the
    /// chat through Git's objects: `show HEAD:.env.local`, a staged `.env`, and `show` or a
    /// diff of two revisions that change (or delete) a tracked `.env.local`. A revision
    /// naming one is refused; the others leave it out, show the rest and name it.
    #[tokio::test]
    async fn a_credential_location_in_gits_objects_is_left_out_of_show_and_diffs() {
        let (_dir, repo) = repository_with_sub(".env.local", "KEY=SECRET\n");
        let repo = repo.canonicalize().expect("canonical");
        let roots = Roots::new([repo.clone()], []);
        let call = |action: GitAction, from: Option<&str>, to: Option<&str>, staged: bool| {
            let mut call = request(action);
            call.root = repo.join("sub").display().to_string();
            call.from = from.map(str::to_owned);
            call.to = to.map(str::to_owned);
            call.staged = staged;
            call.max_bytes = 64 * 1024;
            call
        };
        for from in ["HEAD:.env.local", ":.env.local", "HEAD:sub/../.env.local"] {
            for action in [GitAction::Show, GitAction::Log] {
                let error = git(&roots, &call(action, Some(from), None, false)).await.expect_err("refused").to_string();
                assert!(error.contains("credential location") && !error.contains("SECRET"), "{from}: {error}");
            }
        }
        std::fs::write(repo.join(".env.local"), "KEY=SECRET2\n").expect("w");
        std::fs::write(repo.join("b.txt"), "shown\n").expect("w");
        sh(&repo, &["add", "."]);
        let staged = git(&roots, &call(GitAction::Diff, None, None, true)).await.expect("diffed");
        let text = staged["text"].as_str().unwrap_or_default();
        assert!(text.contains("+shown") && !text.contains("SECRET"), "{staged}");
        assert_eq!(staged["withheld"], json!([".env.local"]), "{staged}");
        sh(&repo, &["commit", "-qm", "two"]);
        sh(&repo, &["rm", "-q", ".env.local"]);
        sh(&repo, &["commit", "-qm", "three"]);
        for (action, from, to) in [
            (GitAction::Show, None, None),
            (GitAction::Show, Some("HEAD~1"), None),
            (GitAction::Show, Some("HEAD~2"), None),
            (GitAction::Diff, Some("HEAD~2"), Some("HEAD~1")),
            (GitAction::Diff, Some("HEAD~2..HEAD"), None),
            (GitAction::Diff, Some("HEAD~2"), Some("HEAD")),
        ] {
            let shown = git(&roots, &call(action, from, to, false)).await.expect("shown");
            let text = shown["text"].as_str().unwrap_or_default();
            assert!(!text.contains("SECRET") && !text.is_empty(), "{action:?} {from:?} {to:?}: {shown}");
            assert_eq!(shown["withheld"], json!([".env.local"]), "{action:?} {from:?} {to:?}: {shown}");
            assert!(shown["note"].as_str().is_some_and(|n| n.contains("withheld")), "{shown}");
        }
        let range = git(&roots, &call(GitAction::Diff, Some("HEAD~2..HEAD"), None, false)).await.expect("shown");
        assert!(range["text"].as_str().is_some_and(|t| t.contains("+shown")), "{range}");
        std::fs::write(repo.join(".env.local"), "KEY=SECRET3\n").expect("w");
        sh(&repo, &["add", "."]);
        sh(&repo, &["commit", "-qm", "only the env"]);
        let show = git(&roots, &call(GitAction::Show, None, None, false)).await.expect("shown");
        let text = show["text"].as_str().unwrap_or_default();
        assert!(text.contains("only the env") && !text.contains("SECRET"), "{show}");
        let diff = git(&roots, &call(GitAction::Diff, Some("HEAD~1"), Some("HEAD"), false)).await.expect("diffed");
        assert_eq!((&diff["text"], &diff["withheld"]), (&json!(""), &json!([".env.local"])), "{diff}");
    }

    /// Final read of git41b (failed before): a `show` of a file read the file's text as
    /// the changed names (a README naming `~/.ssh/config` came back "withheld" and whole),
    /// an annotated tag's message was read as names (a `.env` it tags was shown), and a
    /// user's `diff.relative` made the narrowed names miss. A file is shown whole, a tag is
    /// listed by its commit, and names are listed from the top.
    #[tokio::test]
    async fn a_shown_file_a_tag_and_diff_relative_are_read_as_git_means_them() {
        let (_dir, repo) = repository_with_sub("README.md", "Keys live in ~/.ssh/config and .env\n");
        let repo = repo.canonicalize().expect("canonical");
        let roots = Roots::new([repo.clone()], []);
        let call = |action: GitAction, from: Option<&str>| {
            let mut call = request(action);
            call.root = repo.join("sub").display().to_string();
            call.from = from.map(str::to_owned);
            call.max_bytes = 64 * 1024;
            call
        };
        let file = git(&roots, &call(GitAction::Show, Some("HEAD:README.md"))).await.expect("shown");
        assert!(file["text"].as_str().is_some_and(|t| t.contains("~/.ssh/config")), "{file}");
        assert_eq!(file.get("withheld"), None, "{file}");
        std::fs::write(repo.join(".env"), "KEY=SECRET\n").expect("w");
        std::fs::write(repo.join("sub/a.txt"), "tagged\n").expect("w");
        sh(&repo, &["add", "."]);
        sh(&repo, &["commit", "-qm", "two"]);
        sh(&repo, &["tag", "-a", "v1", "-m", "release one"]);
        let tag = git(&roots, &call(GitAction::Show, Some("v1"))).await.expect("shown");
        let text = tag["text"].as_str().unwrap_or_default();
        assert!(text.contains("release one") && text.contains("+tagged") && !text.contains("SECRET"), "{tag}");
        assert_eq!(tag["withheld"], json!([".env"]), "{tag}");
        // A file reached by a tag or an id is refused (only `rev:path` is checked); a form
        // `show` expands to commits still shows.
        sh(&repo, &["tag", "lwenv", "HEAD:.env"]);
        let error = git(&roots, &call(GitAction::Show, Some("lwenv"))).await.expect_err("refused").to_string();
        assert!(error.contains("REV:path") && !error.contains("SECRET"), "{error}");
        let parents = git(&roots, &call(GitAction::Show, Some("HEAD^@"))).await.expect("shown");
        assert!(parents["text"].as_str().is_some_and(|t| !t.is_empty()), "{parents}");
        sh(&repo, &["config", "diff.relative", "true"]);
        let relative = git(&roots, &call(GitAction::Diff, Some("HEAD~1"))).await.expect("diffed");
        let text = relative["text"].as_str().unwrap_or_default();
        assert!(text.contains("+tagged") && !text.contains("SECRET"), "{relative}");
    }

    /// Git41 LOW d (failed before: the diff failed whole): a changed file was judged a
    /// credential location by its name inside the repository only, so in a dotfiles
    /// repository at `~/.config` a changed `gh/hosts.yml` was read and refused. Its whole
    /// path is judged: it is left out and named, in work-tree and staged diffs.
    #[tokio::test]
    async fn a_dotfiles_repository_leaves_out_a_credential_location_judged_by_its_whole_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join(".config/gh")).expect("mkdir");
        let repo = repository_in(dir.path(), ".config", "gh/hosts.yml", "token: one\n");
        std::fs::write(repo.join("init.lua"), "one\n").expect("w");
        sh(&repo, &["add", "init.lua"]);
        sh(&repo, &["commit", "-qm", "two"]);
        std::fs::write(repo.join("gh/hosts.yml"), "token: SECRET\n").expect("w");
        std::fs::write(repo.join("init.lua"), "shown\n").expect("w");
        let roots = Roots::new([repo.clone()], []);
        for staged in [false, true] {
            if staged {
                sh(&repo, &["add", "."]);
            }
            let mut diff = request(GitAction::Diff);
            diff.root = repo.display().to_string();
            diff.staged = staged;
            diff.max_bytes = 64 * 1024;
            let shown = git(&roots, &diff).await.expect("diffed");
            let text = shown["text"].as_str().unwrap_or_default();
            assert!(text.contains("+shown") && !text.contains("SECRET"), "staged {staged}: {shown}");
            assert_eq!(shown["withheld"], json!(["gh/hosts.yml"]), "staged {staged}: {shown}");
        }
    }

    /// A private repository outside the roots with one commit whose text is `SECRET`: its
    /// path and the commit's id.
    fn private_repository(dir: &Path) -> (PathBuf, String) {
        let private = repository_in(dir, "private", "secret.txt", "SECRET\n");
        let id = sh_out(&private, &["rev-parse", "HEAD"]);
        (private, id)
    }

    /// Git41 MED-1 (failed before: `show` printed the private commit): a `.git` directory
    /// inside the roots whose `commondir` names a repository outside them had git read that
    /// repository's objects and refs. Where git will read is asked of git and refused
    /// outside the roots.
    #[tokio::test]
    async fn a_git_directory_whose_commondir_is_outside_the_roots_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (private, _) = private_repository(dir.path());
        let root = dir.path().canonicalize().expect("canonical").join("root");
        std::fs::create_dir_all(root.join(".git")).expect("mkdir");
        std::fs::copy(private.join(".git/HEAD"), root.join(".git/HEAD")).expect("cp");
        std::fs::write(root.join(".git/commondir"), format!("{}\n", private.join(".git").display())).expect("w");
        let roots = Roots::new([root.clone()], []);
        for action in [GitAction::Show, GitAction::Log, GitAction::Status] {
            let error = git(&roots, &request(action)).await.expect_err("refused").to_string();
            assert!(error.contains("outside the project roots") && !error.contains("SECRET"), "{action:?}: {error}");
        }
    }

    /// Git41 MED-1 (failed before: the outside files were listed): `core.worktree` in a
    /// repository's config made its work tree a directory outside the roots.
    #[tokio::test]
    async fn a_repository_whose_work_tree_is_outside_the_roots_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let outside = dir.path().canonicalize().expect("canonical").join("outside");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::write(outside.join("leaked-name.txt"), "SECRET\n").expect("w");
        let repo = repository_in(&dir.path().join("root"), "repo", "a.txt", "one\n");
        sh(&repo, &["config", "core.worktree", &outside.display().to_string()]);
        let roots = Roots::new([repo.clone()], []);
        for action in [GitAction::Status, GitAction::Diff, GitAction::Log] {
            let error = git(&roots, &request(action)).await.expect_err("refused").to_string();
            assert!(error.contains("work tree") && error.contains("outside the project roots"), "{action:?}: {error}");
            assert!(!error.contains("leaked-name") && !error.contains("SECRET"), "{action:?}: {error}");
        }
    }

    /// Git41 MED-1 (failed before: `show` printed the private commit): an
    /// `objects/info/alternates` entry outside the roots (directly, through an alternate
    /// inside them, or an `objects` symlinked outside) had git read another repository's
    /// objects.
    #[tokio::test]
    async fn a_repository_whose_objects_lead_outside_the_roots_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (private, id) = private_repository(dir.path());
        let objects = private.join(".git/objects");
        let root = dir.path().canonicalize().expect("canonical").join("root");
        let direct = repository_in(&root, "direct", "a.txt", "one\n");
        std::fs::write(direct.join(".git/objects/info/alternates"), format!("{}\n", objects.display())).expect("w");
        let nested = repository_in(&root, "nested", "a.txt", "one\n");
        let middle = root.join("middle/objects");
        std::fs::create_dir_all(middle.join("info")).expect("mkdir");
        std::fs::write(middle.join("info/alternates"), format!("{}\n", objects.display())).expect("w");
        std::fs::write(nested.join(".git/objects/info/alternates"), "../../../middle/objects\n").expect("w");
        let linked = repository_in(&root, "linked", "a.txt", "one\n");
        std::fs::remove_dir_all(linked.join(".git/objects")).expect("rm");
        std::os::unix::fs::symlink(&objects, linked.join(".git/objects")).expect("ln");
        let roots = Roots::new([root.clone()], []);
        for repo in [direct, nested, linked] {
            let mut show = request(GitAction::Show);
            show.root = repo.display().to_string();
            show.from = Some(id.clone());
            let error = git(&roots, &show).await.expect_err("refused").to_string();
            assert!(error.contains("outside the project roots") && !error.contains("SECRET"), "{}: {error}", repo.display());
        }
    }
}
