//! Project roots: the directories the workstation tools (`herdr_fs_*`, `herdr_git`, and the
//! write and exec tools) may touch, and the resolution of a path the planner sends into one
//! of them.
//!
//! The roots of a call are the directories the user registered (`herdr-companion roots
//! add PATH`, the `roots` table of `state.db`, [`RootStore`]) and the working directories
//! of the panes of the caller's workspace (added at call time from Herdr's pane list by
//! `crate::api::tools`). Each is canonicalised once, when the [`Roots`] of a call are
//! built; one that does not exist (any more) is left out.
//!
//! Invariants:
//! - [`Roots::resolve`] answers only paths inside a root, with every symlink and `..`
//!   resolved by the file system (`std::fs::canonicalize`), never by string handling; a
//!   path that does not exist yet (a file to create) is its longest existing ancestor,
//!   canonicalised, plus plain names (no `..`, `.` or root after the first missing part).
//! - A refusal ([`RootError`]) names the roots, so the model can correct its call.
//! - [`Roots::open_file`] closes the race between the check and the use (TOCTOU): it opens
//!   the resolved path without following a final symlink, then checks the path of the
//!   open file (the kernel's `/proc/self/fd` link on Linux; the same device and inode as
//!   the path canonicalised again elsewhere) against the roots once more.
//! - A regular file with several names (a hard link, `nlink > 1`) is neither read nor
//!   written ([`refuse_hard_link`]): its other name may be outside every root.

use std::fs::File;
use std::path::{Component, Path, PathBuf};

use rusqlite::{params, Connection};
use thiserror::Error;

use crate::db::{DbError, SharedConnection};

/// Longest path a tool accepts, in bytes.
pub const MAX_PATH_BYTES: usize = 4096;

/// Why a path was refused.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum RootError {
    /// No root is registered and the caller's workspace has no pane with a working directory.
    #[error(
        "no project root is set: register a project directory with herdr-companion roots add PATH, or open a Herdr pane in the project (the working directories of the bound workspace's panes are roots, except /, the home directory, a directory holding it and the companion home)"
    )]
    NoRoots,
    /// The path resolves outside every root.
    #[error("{path} resolves to {resolved}, which is outside the project roots ({roots}); use a path inside one of them, or register another root with `herdr-companion roots add PATH`")]
    Outside {
        /// The path as sent.
        path: String,
        /// Where it resolved to.
        resolved: String,
        /// The roots, listed.
        roots: String,
    },
    /// A relative path with several roots that do not agree on it.
    #[error("{path} is relative and {why}; the project roots are {roots}: send an absolute path inside one of them")]
    Ambiguous {
        /// The path as sent.
        path: String,
        /// Why no single root was picked.
        why: String,
        /// The roots, listed.
        roots: String,
    },
    /// The path is empty, too long, holds a NUL, or walks up (`..`) from a missing directory.
    #[error("{0}")]
    Invalid(String),
    /// The path names nothing (reading) or its directory cannot be read.
    #[error("{path} cannot be read ({error}); the project roots are {roots}")]
    Io {
        /// The path as sent.
        path: String,
        /// The OS error.
        error: String,
        /// The roots, listed.
        roots: String,
    },
    /// The path is inside the companion home or a credential location.
    #[error("{path} is {what}; no Herdr tool reads, lists or writes it, whatever the project roots: {advice}")]
    Protected {
        /// The path as sent.
        path: String,
        /// What it is.
        what: &'static str,
        /// What to do instead.
        advice: &'static str,
    },
    /// The file has other names (a hard link): one of them may be outside every root.
    #[error("{path} is a hard link ({links} names share this one file), so it may be a file outside the project roots under another name; no Herdr tool reads or writes it. Copy it into the root as a file of its own (cp FILE FILE.own && mv FILE.own FILE), then call again")]
    HardLink {
        /// The path as sent.
        path: String,
        /// How many names the file has.
        links: u64,
    },
    /// The file changed between the check and the open (a symlink put in its place).
    #[error("{path} changed while it was being opened (it now resolves to {now}, outside the project roots {roots}); the call was refused, retry once it is stable")]
    Raced {
        /// The path as sent.
        path: String,
        /// Where the open file is.
        now: String,
        /// The roots, listed.
        roots: String,
    },
}

/// Directories and files no tool touches, whatever the roots: credentials of the user's
/// tools. A path with one of these as a component is refused, and so is one of the pairs
/// of [`SENSITIVE_PAIRS`], a dotenv file ([`is_dotenv`]) and a repository's Git
/// configuration (`.git/config`: remote URLs often carry a token).
pub const SENSITIVE_NAMES: [&str; 10] =
    [".ssh", ".gnupg", ".aws", ".azure", ".kube", ".netrc", ".git-credentials", ".pypirc", ".npmrc", ".vault-token"];

/// A directory and the name directly inside it that are credential locations.
pub const SENSITIVE_PAIRS: [(&str, &str); 7] = [
    (".config", "gh"),
    (".config", "gcloud"),
    (".config", "github-copilot"),
    (".docker", "config.json"),
    (".cargo", "credentials"),
    (".cargo", "credentials.toml"),
    (".terraform.d", "credentials.tfrc.json"),
];

/// The dotenv templates' last parts (`.env.example`, `.envrc.sample`, `example.env`):
/// meant to be read, they hold no secrets.
pub const DOTENV_TEMPLATES: [&str; 4] = ["example", "sample", "template", "dist"];

/// What kind of credential location a path is ([`sensitive_kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sensitive {
    /// A tool's keys or tokens ([`SENSITIVE_NAMES`], [`SENSITIVE_PAIRS`]).
    Credentials,
    /// A dotenv file: `.env`, `.env.<anything>`, `<name>.env` or direnv's `.envrc`, but
    /// the templates.
    Dotenv,
    /// A `config` directly inside a `.git` directory, a bare repository's `<name>.git`
    /// directory or a submodule's Git directory.
    GitConfig,
}

impl Sensitive {
    /// What it is, for a refusal.
    pub fn what(self) -> &'static str {
        match self {
            Self::Credentials => "a credential location (.ssh, .gnupg, .aws, .azure, .kube, .netrc, .git-credentials, .pypirc, .npmrc, .vault-token, .config/gh, .config/gcloud, .config/github-copilot, .docker/config.json, .cargo/credentials, .terraform.d/credentials.tfrc.json: the user's keys and tokens)",
            Self::Dotenv => "a credential location (a dotenv file, .env, .env.*, *.env or direnv's .envrc: it holds the project's secrets)",
            Self::GitConfig => "a credential location (a repository's .git/config, or a bare repository's config: its remote URLs can carry a token)",
        }
    }

    /// What to do instead, for a refusal.
    pub fn advice(self) -> &'static str {
        match self {
            Self::Credentials => "if the task needs a value from it, ask the user to share that value in the chat",
            Self::Dotenv => "read its template instead, if the project has one (.env.example, .env.sample, .env.template, .env.dist or example.env), for the variable names; or ask the user to share the values the task needs in the chat",
            Self::GitConfig => "use herdr_git for the repository's status, diffs and history, or ask the user for the setting the task needs",
        }
    }
}

/// Whether the file name `name` is a dotenv file: `.env`, `.envrc` (direnv's), either of
/// them followed by `.<anything>`, or `<name>.env`; but not a template, one whose other
/// part is one of the [`DOTENV_TEMPLATES`] (`.env.example`, `.envrc.sample`,
/// `example.env`). Compared without case: macOS file systems are case-insensitive (`.ENV`
/// is `.env`).
pub fn is_dotenv(name: &std::ffi::OsStr) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let bytes = name.as_bytes();
    let template = |part: &[u8]| DOTENV_TEMPLATES.iter().any(|t| part.eq_ignore_ascii_case(t.as_bytes()));
    // `.env`, `.envrc`, and either followed by `.<rest>`.
    for head in [&b".env"[..], b".envrc"] {
        if bytes.get(..head.len()).is_some_and(|h| h.eq_ignore_ascii_case(head)) {
            match bytes.get(head.len()..) {
                Some([]) => return true,
                // `.env.production.example` is a template too: its last part says so.
                Some([b'.', rest @ ..]) => return !template(rest.rsplit(|&b| b == b'.').next().unwrap_or(rest)),
                _ => {}
            }
        }
    }
    // `<stem>.env`: a stem that is not itself a dotenv name's start.
    match bytes.len().checked_sub(4).map(|cut| bytes.split_at(cut)) {
        Some((stem, tail)) if !stem.is_empty() && tail.eq_ignore_ascii_case(b".env") => !template(stem),
        _ => false,
    }
}

/// Whether the file name `name` is `text`, without case (macOS file systems are
/// case-insensitive: `.SSH` is `.ssh` there).
fn same_name(name: &std::ffi::OsStr, text: &str) -> bool {
    use std::os::unix::ffi::OsStrExt;
    name.as_bytes().eq_ignore_ascii_case(text.as_bytes())
}

/// Whether `path` names (or lies inside) a credential location ([`sensitive_kind`]).
pub fn is_sensitive(path: &Path) -> bool {
    sensitive_kind(path).is_some()
}

/// The kind of credential location `path` names or lies inside, if any: a component in
/// [`SENSITIVE_NAMES`], a pair of [`SENSITIVE_PAIRS`], a `config` directly inside a `.git`
/// directory (or a submodule's, last in a path under `.git/modules` and after a
/// submodule's name, not right after `modules`), or a last name that
/// is a dotenv file ([`is_dotenv`]). A directory of a dotenv name (a virtualenv called
/// `.env`) is refused itself, so a walk skips it whole, but a path inside it is not.
pub fn sensitive_kind(path: &Path) -> Option<Sensitive> {
    use std::ffi::OsStr;
    // No allocation: a walk asks this of every entry.
    let mut names = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .peekable();
    // The name before this one, and whether a `.git/modules` came before (submodules).
    let mut prev: Option<&OsStr> = None;
    let mut in_modules = false;
    while let Some(name) = names.next() {
        let next = names.peek().copied();
        if SENSITIVE_NAMES.iter().any(|s| same_name(name, s))
            || SENSITIVE_PAIRS.iter().any(|(dir, inside)| same_name(name, dir) && next.is_some_and(|next| same_name(next, inside)))
        {
            return Some(Sensitive::Credentials);
        }
        let after_git = prev.is_some_and(|prev| same_name(prev, ".git"));
        // A bare repository's directory, `<name>.git`.
        let after_bare = prev.is_some_and(|prev| {
            let prev = std::os::unix::ffi::OsStrExt::as_bytes(prev);
            prev.len() > 4 && prev[prev.len() - 4..].eq_ignore_ascii_case(b".git")
        });
        // Under `.git/modules`, `config` right after `modules` is a submodule's name (its
        // Git directory); after a submodule's name it is that submodule's config.
        let after_modules = prev.is_some_and(|prev| same_name(prev, "modules"));
        // A bare repository's `config` is a file: a `config` directory in a work tree that
        // happens to be named `<name>.git` is not refused (a path inside it is not either).
        if same_name(name, "config") && (after_git || (after_bare && next.is_none()) || (in_modules && next.is_none() && !after_modules)) {
            return Some(Sensitive::GitConfig);
        }
        in_modules |= after_git && same_name(name, "modules");
        prev = Some(name);
        if next.is_none() && is_dotenv(name) {
            return Some(Sensitive::Dotenv);
        }
    }
    None
}

/// The project roots of one call, canonicalised.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Roots {
    /// Canonical, existing, deduplicated, in the order given (registered roots first).
    roots: Vec<PathBuf>,
    /// The companion home, canonical: refused whatever the roots (it holds the MCP token).
    protected: Vec<PathBuf>,
    /// Pane working directories not taken as roots (`/`, `$HOME` or a directory holding
    /// it, the companion home, one of its ancestors or a directory inside it), named in
    /// refusals.
    skipped: Vec<PathBuf>,
}

impl Roots {
    /// The roots of a call: `registered` (from [`RootStore::list`]) then `pane_dirs` (the
    /// working directories of the caller's panes). Each is canonicalised; a relative one,
    /// one that does not exist, or a duplicate is left out.
    pub fn new(registered: impl IntoIterator<Item = PathBuf>, pane_dirs: impl IntoIterator<Item = PathBuf>) -> Self {
        let mut roots: Vec<PathBuf> = Vec::new();
        for dir in registered.into_iter().chain(pane_dirs) {
            if !dir.is_absolute() {
                continue;
            }
            let Ok(canonical) = std::fs::canonicalize(&dir) else { continue };
            if canonical.is_dir() && !roots.contains(&canonical) {
                roots.push(canonical);
            }
        }
        Self { roots, protected: Vec::new(), skipped: Vec::new() }
    }

    /// The roots of a call as the runtime builds them: like [`Roots::new`], but a pane
    /// working directory that is `/`, `user_home` or a directory holding it (`/home`: every
    /// user's home), or the companion home, one of its ancestors or a directory inside it is
    /// not taken as a root (a page could otherwise read the user's keys or the companion's
    /// token without a click), and every path inside `companion_home` is refused.
    pub fn for_call(
        registered: impl IntoIterator<Item = PathBuf>,
        pane_dirs: impl IntoIterator<Item = PathBuf>,
        companion_home: &Path,
        user_home: Option<&Path>,
    ) -> Self {
        let protected: Vec<PathBuf> = std::fs::canonicalize(companion_home).ok().into_iter().collect();
        let user_home = user_home.and_then(|h| std::fs::canonicalize(h).ok());
        let mut skipped = Vec::new();
        let mut panes = Vec::new();
        for dir in pane_dirs {
            let Ok(canonical) = std::fs::canonicalize(&dir) else { continue };
            // `/`, the home or a directory holding it (`/home`: every user's home).
            let too_wide = canonical == Path::new("/")
                || user_home.as_deref().is_some_and(|home| home.starts_with(&canonical))
                || protected.iter().any(|home| home.starts_with(&canonical) || canonical.starts_with(home));
            if too_wide {
                if !skipped.contains(&canonical) {
                    skipped.push(canonical);
                }
            } else {
                panes.push(canonical);
            }
        }
        let mut roots = Self::new(registered, panes);
        roots.protected = protected;
        roots.skipped = skipped;
        roots
    }

    /// Refuses a resolved path inside the companion home or a credential location.
    fn check_protected(&self, path: &str, resolved: &Path) -> Result<(), RootError> {
        if self.protected.iter().any(|home| resolved.starts_with(home)) {
            return Err(RootError::Protected {
                path: path.to_owned(),
                what: "inside the companion home (it holds the companion's tokens)",
                advice: "work on files inside the project roots",
            });
        }
        if let Some(kind) = sensitive_kind(resolved) {
            return Err(RootError::Protected { path: path.to_owned(), what: kind.what(), advice: kind.advice() });
        }
        Ok(())
    }

    /// Whether a walk (listing, search) must skip `path`: inside the companion home or a
    /// credential location.
    pub fn is_refused(&self, path: &Path) -> bool {
        self.check_protected("", path).is_err()
    }

    /// The places every walk skips besides credential locations (the companion home).
    pub fn refused(&self) -> &[PathBuf] {
        &self.protected
    }

    /// The roots (canonical paths).
    pub fn list(&self) -> Vec<PathBuf> {
        self.roots.clone()
    }

    /// The roots as one line for a message.
    pub fn describe(&self) -> String {
        let mut out = if self.roots.is_empty() {
            "none".to_owned()
        } else {
            self.roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
        };
        if !self.skipped.is_empty() {
            let skipped = self.skipped.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ");
            out.push_str(&format!(
                "; the pane directories {skipped} are not roots (/, the home directory, a directory holding it and the companion home never are): register a project directory with herdr-companion roots add PATH"
            ));
        }
        out
    }

    /// The root `path` (canonical) lies in, if any.
    pub fn root_of(&self, canonical: &Path) -> Option<&Path> {
        self.roots.iter().find(|root| canonical.starts_with(root)).map(PathBuf::as_path)
    }

    /// The outermost root `path` (canonical) lies in (fewest components), if any: where a
    /// search upwards (Git's for its repository) may go no higher. With nested roots
    /// (`/repo/sub` and `/repo`), a path under both belongs to `/repo` here, whatever the
    /// roots' order.
    pub fn outermost_root_of(&self, canonical: &Path) -> Option<&Path> {
        self.roots.iter().filter(|root| canonical.starts_with(root)).min_by_key(|root| root.components().count()).map(PathBuf::as_path)
    }

    /// `path` resolved inside a root: absolute, or relative to the one root (with several
    /// roots, relative to the only root under which it exists). Symlinks and `..` are
    /// resolved by the file system; a missing tail (a file to create) is plain names.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, RootError> {
        if path.is_empty() {
            return Err(RootError::Invalid("the path is empty; send a file or directory path inside a project root".to_owned()));
        }
        if path.len() > MAX_PATH_BYTES {
            return Err(RootError::Invalid(format!("the path is {} bytes; at most {MAX_PATH_BYTES} are allowed", path.len())));
        }
        if path.contains('\0') {
            return Err(RootError::Invalid("the path holds a NUL character; send a plain path".to_owned()));
        }
        if self.roots.is_empty() {
            if !self.skipped.is_empty() {
                return Err(RootError::Outside { path: path.to_owned(), resolved: path.to_owned(), roots: self.describe() });
            }
            return Err(RootError::NoRoots);
        }
        let given = Path::new(path);
        let candidate = if given.is_absolute() {
            given.to_path_buf()
        } else if let [only] = self.roots.as_slice() {
            only.join(given)
        } else {
            let existing: Vec<PathBuf> = self.roots.iter().map(|r| r.join(given)).filter(|p| p.symlink_metadata().is_ok()).collect();
            match existing.as_slice() {
                [one] => one.clone(),
                [] => {
                    return Err(RootError::Ambiguous {
                        path: path.to_owned(),
                        why: "exists under none of the roots".to_owned(),
                        roots: self.describe(),
                    })
                }
                _ => {
                    return Err(RootError::Ambiguous {
                        path: path.to_owned(),
                        why: format!("exists under {} of them", existing.len()),
                        roots: self.describe(),
                    })
                }
            }
        };
        let resolved = self.canonical(path, &candidate)?;
        match self.root_of(&resolved) {
            Some(_) => self.check_protected(path, &resolved).map(|()| resolved),
            None => Err(RootError::Outside { path: path.to_owned(), resolved: resolved.display().to_string(), roots: self.describe() }),
        }
    }

    /// `candidate` canonicalised: the longest existing ancestor by the file system, then the
    /// missing names appended (plain names only).
    fn canonical(&self, path: &str, candidate: &Path) -> Result<PathBuf, RootError> {
        let mut existing = candidate.to_path_buf();
        let mut missing: Vec<std::ffi::OsString> = Vec::new();
        loop {
            match std::fs::canonicalize(&existing) {
                Ok(canonical) => {
                    let mut out = canonical;
                    for name in missing.iter().rev() {
                        out.push(name);
                    }
                    return Ok(out);
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    // Walk up one component; it must be a plain name to be appended later,
                    // and not a dangling symlink (creating "it" would create its target,
                    // wherever that is).
                    match existing.components().next_back() {
                        Some(Component::Normal(name)) => {
                            let name = name.to_owned();
                            if !existing.pop() {
                                break;
                            }
                            let named = existing.join(&name);
                            if std::fs::symlink_metadata(&named).is_ok_and(|m| m.file_type().is_symlink()) {
                                return Err(RootError::Invalid(format!(
                                    "{path} goes through {}, a symlink to something that does not exist; send a path without it, inside one of the project roots ({})",
                                    named.display(),
                                    self.describe()
                                )));
                            }
                            missing.push(name);
                        }
                        Some(Component::CurDir) => {
                            existing.pop();
                        }
                        _ => {
                            return Err(RootError::Invalid(format!(
                                "{path} walks up (`..`) out of a directory that does not exist; send the path without `..`, inside one of the project roots ({})",
                                self.describe()
                            )))
                        }
                    }
                }
                Err(error) => {
                    return Err(RootError::Io { path: path.to_owned(), error: error.to_string(), roots: self.describe() });
                }
            }
        }
        Err(RootError::Io { path: path.to_owned(), error: "no part of it exists".to_owned(), roots: self.describe() })
    }

    /// Opens the existing file `path` for reading inside a root (see the module's TOCTOU
    /// invariant) and returns its resolved path and the open file.
    pub fn open_file(&self, path: &str) -> Result<(PathBuf, File), RootError> {
        use std::os::unix::fs::OpenOptionsExt;
        let resolved = self.resolve(path)?;
        let io = |error: std::io::Error| RootError::Io { path: path.to_owned(), error: error.to_string(), roots: self.describe() };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NOCTTY | libc::O_NONBLOCK)
            .open(&resolved)
            .map_err(|error| {
                if error.raw_os_error() == Some(libc::ELOOP) {
                    RootError::Raced { path: path.to_owned(), now: "a symlink".to_owned(), roots: self.describe() }
                } else {
                    io(error)
                }
            })?;
        self.recheck(path, &resolved, &file)?;
        refuse_hard_link(path, &file.metadata().map_err(io)?)?;
        Ok((resolved, file))
    }

    /// Checks that the open `file` is inside a root: by its `/proc/self/fd` link where there
    /// is one, else by the same device and inode as `resolved` canonicalised again.
    pub fn recheck(&self, path: &str, resolved: &Path, file: &File) -> Result<(), RootError> {
        use std::os::unix::fs::MetadataExt;
        use std::os::unix::io::AsRawFd;
        let raced = |now: String| RootError::Raced { path: path.to_owned(), now, roots: self.describe() };
        let io = |error: std::io::Error| RootError::Io { path: path.to_owned(), error: error.to_string(), roots: self.describe() };
        if let Ok(now) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
            return match self.root_of(&now) {
                Some(_) => self.check_protected(path, &now),
                None => Err(raced(now.display().to_string())),
            };
        }
        let opened = file.metadata().map_err(io)?;
        let again = std::fs::canonicalize(resolved).map_err(io)?;
        let there = std::fs::metadata(&again).map_err(io)?;
        self.check_protected(path, &again)?;
        if self.root_of(&again).is_none() || (opened.dev(), opened.ino()) != (there.dev(), there.ino()) {
            return Err(raced(again.display().to_string()));
        }
        Ok(())
    }
}

/// Refuses a regular file with more than one name (`nlink > 1`, [`RootError::HardLink`]):
/// a hard link inside a root can be the same file as one outside every root, and no path
/// check can tell. `meta` is the file's own metadata (not a symlink's target).
pub fn refuse_hard_link(path: &str, meta: &std::fs::Metadata) -> Result<(), RootError> {
    use std::os::unix::fs::MetadataExt;
    if meta.is_file() && meta.nlink() > 1 {
        return Err(RootError::HardLink { path: path.to_owned(), links: meta.nlink() });
    }
    Ok(())
}

/// The registered roots in `state.db` (table `roots`), shared by the runtime (read at every
/// tool call) and the `herdr-companion roots` commands.
#[derive(Debug)]
pub struct RootStore {
    /// Its connection (the write tools'); callers run it off the async workers
    /// (`crate::db::off_worker`).
    conn: SharedConnection,
}

/// A change to the registered roots that could not be made.
#[derive(Debug, Error)]
pub enum RootStoreError {
    /// state.db failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// The directory to add is not one.
    #[error("{path} is not a directory that can be read ({error}); give the path of an existing project directory")]
    NotADirectory {
        /// The path given.
        path: String,
        /// Why.
        error: String,
    },
    /// The root to remove is not registered.
    #[error("{path} is not a registered root; the registered roots are: {roots} (`herdr-companion roots list`)")]
    NotRegistered {
        /// The path given.
        path: String,
        /// The registered roots.
        roots: String,
    },
}

impl From<rusqlite::Error> for RootStoreError {
    fn from(error: rusqlite::Error) -> Self {
        Self::Db(DbError::Sqlite(error))
    }
}

impl RootStore {
    /// Opens `state.db` at `path` on a connection of its own (the `roots` commands and
    /// tests; the runtime shares the write tools' connection, see [`RootStore::on`]).
    pub fn open(path: &Path) -> Result<Self, DbError> {
        Ok(Self::on(crate::db::open_shared(path)?))
    }

    /// The roots on `conn`, a connection to `state.db` at the current schema.
    pub fn on(conn: SharedConnection) -> Self {
        Self { conn }
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The registered roots, oldest first, as stored (canonical when they were added).
    pub fn list(&self) -> Result<Vec<PathBuf>, DbError> {
        let conn = self.conn();
        let mut statement = conn.prepare("SELECT path FROM roots ORDER BY added_at, path")?;
        let rows = statement.query_map([], |row| row.get::<_, String>(0))?;
        let mut out = Vec::new();
        for row in rows {
            out.push(PathBuf::from(row?));
        }
        Ok(out)
    }

    /// Registers the directory `path` (canonicalised; relative to the current directory)
    /// and returns it. Adding a registered root again changes nothing.
    pub fn add(&self, path: &Path, now_ms: i64) -> Result<PathBuf, RootStoreError> {
        let not_dir = |error: String| RootStoreError::NotADirectory { path: path.display().to_string(), error };
        let canonical = std::fs::canonicalize(path).map_err(|e| not_dir(e.to_string()))?;
        if !canonical.is_dir() {
            return Err(not_dir("it is a file".to_owned()));
        }
        let Some(text) = canonical.to_str() else {
            return Err(not_dir("its path is not UTF-8".to_owned()));
        };
        self.conn().execute("INSERT OR IGNORE INTO roots (path, added_at) VALUES (?1, ?2)", params![text, now_ms])?;
        Ok(canonical)
    }

    /// Removes the registered root `path` (as given, or canonicalised) and returns the
    /// path removed.
    pub fn remove(&self, path: &Path) -> Result<PathBuf, RootStoreError> {
        let mut forms = vec![path.to_path_buf()];
        if let Ok(canonical) = std::fs::canonicalize(path) {
            forms.push(canonical);
        }
        let conn = self.conn();
        for form in &forms {
            let Some(text) = form.to_str() else { continue };
            if conn.execute("DELETE FROM roots WHERE path = ?1", params![text])? > 0 {
                return Ok(form.clone());
            }
        }
        drop(conn);
        let roots = self.list()?;
        let roots =
            if roots.is_empty() { "none".to_owned() } else { roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ") };
        Err(RootStoreError::NotRegistered { path: path.display().to_string(), roots })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("project");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::write(root.join("src/main.rs"), "fn main() {}\n").expect("write");
        std::fs::write(dir.path().join("secret.txt"), "secret\n").expect("write");
        (dir, root)
    }

    #[test]
    fn a_path_inside_the_root_resolves_absolute_or_relative() {
        let (_dir, root) = tree();
        let roots = Roots::new([root.clone()], []);
        let canonical = std::fs::canonicalize(&root).expect("canonical");
        assert_eq!(roots.resolve("src/main.rs"), Ok(canonical.join("src/main.rs")));
        assert_eq!(roots.resolve(&root.join("src/./main.rs").display().to_string()), Ok(canonical.join("src/main.rs")));
        assert_eq!(roots.resolve("src/../src/main.rs"), Ok(canonical.join("src/main.rs")));
        // A file to create: the missing tail is appended.
        assert_eq!(roots.resolve("src/new/file.rs"), Ok(canonical.join("src/new/file.rs")));
    }

    #[test]
    fn dot_dot_a_symlink_and_an_absolute_path_outside_are_refused_naming_the_roots() {
        let (dir, root) = tree();
        symlink(dir.path().join("secret.txt"), root.join("link")).expect("symlink");
        symlink(dir.path(), root.join("up")).expect("symlink");
        let roots = Roots::new([root.clone()], []);
        let named = roots.describe();
        for path in [
            "../secret.txt",
            "link",
            "up/secret.txt",
            "up/project/../secret.txt",
            &dir.path().join("secret.txt").display().to_string(),
            "/etc/passwd",
        ] {
            let error = roots.resolve(path).expect_err(path);
            assert!(matches!(error, RootError::Outside { .. }), "{path}: {error:?}");
            assert!(error.to_string().contains(&named), "{path}: {error}");
        }
        // `..` out of a missing directory is refused before anything is looked up.
        assert!(matches!(roots.resolve("missing/../../secret.txt"), Err(RootError::Invalid(_))));
        assert!(matches!(Roots::default().resolve("a"), Err(RootError::NoRoots)));
        // A dangling symlink out of the root: creating "it" would create its target.
        symlink(dir.path().join("new.txt"), root.join("dangling")).expect("symlink");
        assert!(matches!(roots.resolve("dangling"), Err(RootError::Invalid(_))));
        assert!(matches!(roots.resolve("dangling/x"), Err(RootError::Invalid(_))));
    }

    #[test]
    fn a_relative_path_with_several_roots_must_exist_under_exactly_one() {
        let (dir, root) = tree();
        let other = dir.path().join("other");
        std::fs::create_dir_all(other.join("src")).expect("mkdir");
        std::fs::write(other.join("README"), "x").expect("write");
        let roots = Roots::new([root.clone(), other.clone(), root.clone()], []);
        assert_eq!(roots.list().len(), 2, "duplicates are dropped");
        assert_eq!(roots.resolve("README"), Ok(std::fs::canonicalize(other.join("README")).expect("c")));
        assert!(matches!(roots.resolve("src"), Err(RootError::Ambiguous { .. })));
        assert!(matches!(roots.resolve("nothing"), Err(RootError::Ambiguous { .. })));
    }

    #[test]
    fn open_file_refuses_a_final_symlink_and_reads_a_file_inside() {
        let (dir, root) = tree();
        let roots = Roots::new([root.clone()], []);
        let (resolved, _file) = roots.open_file("src/main.rs").expect("open");
        assert!(resolved.ends_with("src/main.rs"));
        // The check passed, then the file became a symlink out of the root before the open.
        std::fs::remove_file(root.join("src/main.rs")).expect("rm");
        symlink(dir.path().join("secret.txt"), root.join("src/main.rs")).expect("symlink");
        let canonical = std::fs::canonicalize(root.join("src")).expect("c").join("main.rs");
        let error = std::fs::OpenOptions::new().read(true).custom_flags_nofollow().open(&canonical).expect_err("nofollow");
        assert_eq!(error.raw_os_error(), Some(libc::ELOOP));
        assert!(roots.open_file("src/main.rs").is_err());
    }

    #[test]
    fn recheck_refuses_an_open_file_outside_the_roots() {
        let (dir, root) = tree();
        let roots = Roots::new([root], []);
        let outside = dir.path().join("secret.txt");
        let file = File::open(&outside).expect("open");
        assert!(matches!(roots.recheck("x", &outside, &file), Err(RootError::Raced { .. })));
    }

    #[test]
    fn the_store_adds_lists_and_removes_roots() {
        let (dir, root) = tree();
        let store = RootStore::open(&dir.path().join("state.db")).expect("open");
        let added = store.add(&root, 1).expect("add");
        assert_eq!(store.add(&root, 2).expect("again"), added);
        assert_eq!(store.list().expect("list"), vec![added.clone()]);
        assert!(matches!(store.add(&root.join("src/main.rs"), 3), Err(RootStoreError::NotADirectory { .. })));
        assert!(matches!(store.remove(Path::new("/nowhere")), Err(RootStoreError::NotRegistered { .. })));
        assert_eq!(store.remove(&root).expect("remove"), added);
        assert!(store.list().expect("list").is_empty());
    }

    #[test]
    fn tokens_dotenv_files_and_a_repositorys_git_config_are_credential_locations_but_dotenv_templates_are_not() {
        for path in [
            "/p/.git-credentials",
            "/home/u/.pypirc",
            "/home/u/.config/gcloud",
            "/home/u/.config/gcloud/credentials.db",
            "/home/u/.config/github-copilot/hosts.json",
            "/p/.git/config",
            "/p/.git/modules/sub/config",
            "/p/.env",
            "/p/api/.env",
            "/p/.env.local",
            "/p/.env.production",
            "/p/.env.example.local",
            "/p/.env.",
            ".env",
        ] {
            assert!(is_sensitive(Path::new(path)), "{path} is a credential location");
        }
        for path in [
            "/p/.env.example",
            "/p/.env.sample",
            "/p/.env.template",
            "/p/.env.dist",
            "/p/env",
            "/p/src/.env/lib/site.py",
            "/p/.git/HEAD",
            "/p/.git/worktrees/config",
            "/p/.git/modules/config/HEAD",
            "/p/config",
            "/p/.config/nvim/init.lua",
            "/p/git/config",
            "/p/.github/config",
            "/p/.environment",
        ] {
            assert!(!is_sensitive(Path::new(path)), "{path} is not a credential location");
        }
    }

    /// Stop 41's leftovers (failed before): direnv's `.envrc`, a dotenv file named
    /// `<name>.env`, npm's `.npmrc` (a registry `_authToken`), Cargo's registry token, a
    /// bare repository's `config` and the other token stores below are credential
    /// locations; `<template>.env` files and names that only contain `env` are not.
    #[test]
    fn envrc_named_env_files_npmrc_cargo_tokens_and_a_bare_repositorys_config_are_credential_locations() {
        for path in [
            "/p/.envrc",
            "/p/.envrc.local",
            "/p/app.env",
            "/p/config/prod.env",
            "/p/Prod.ENV",
            "/p/.npmrc",
            "/home/u/.npmrc",
            "/home/u/.cargo/credentials",
            "/home/u/.cargo/credentials.toml",
            "/srv/repo.git/config",
            "/srv/Repo.GIT/config",
            "/home/u/.vault-token",
            "/home/u/.azure/msal_token_cache.json",
            "/home/u/.terraform.d/credentials.tfrc.json",
        ] {
            assert!(is_sensitive(Path::new(path)), "{path} is a credential location");
        }
        for path in [
            "/p/example.env",
            "/p/sample.env",
            "/p/template.env",
            "/p/app.env.example",
            "/p/src/venv.env/lib/site.py",
            "/p/environment.rs",
            "/p/.envrc.example",
            // Review of the fix (failed before): a template named by its last part, and a
            // `config` directory's files in a work tree cloned as `<name>.git`.
            "/p/.env.production.example",
            "/p/.envrc.local.sample",
            "/srv/site.git/config/settings.json",
            "/home/u/.cargo/config.toml",
            "/home/u/.cargo/registry/index",
            "/srv/repo.git/HEAD",
            "/p/.git/worktrees/config",
            "/p/docs/git/config",
            "/p/.terraform.d/plugins",
        ] {
            assert!(!is_sensitive(Path::new(path)), "{path} is not a credential location");
        }
    }

    /// Git41 LOW c (failed before): macOS file systems are case-insensitive, so `.ENV`,
    /// `.SSH/id_ed25519` and `.GIT/CONFIG` name the credential files themselves there;
    /// names are compared without case.
    #[test]
    fn credential_names_in_another_case_are_credential_locations_too() {
        for path in
            ["/p/.ENV", "/p/.Env.Local", "/h/.SSH/id_ed25519", "/h/.Config/GH/hosts.yml", "/p/.GIT/CONFIG", "/h/.Docker/Config.json"]
        {
            assert!(is_sensitive(Path::new(path)), "{path} is a credential location");
        }
        for path in ["/p/.ENV.EXAMPLE", "/p/.Environment", "/p/.GIT/HEAD"] {
            assert!(!is_sensitive(Path::new(path)), "{path} is not a credential location");
        }
    }

    /// Git41 LOW (failed before): a submodule named `config` has its Git directory at
    /// `.git/modules/config`, which was taken for a submodule's config file; only a
    /// `config` below a submodule's name is one.
    #[test]
    fn a_submodule_named_config_is_no_credential_location_but_its_config_file_is() {
        for path in ["/p/.git/modules/config", "/p/.git/modules/a/modules/config", "/p/.git/modules/config/objects/ab"] {
            assert!(!is_sensitive(Path::new(path)), "{path} is a submodule's Git directory");
        }
        for path in ["/p/.git/modules/config/config", "/p/.git/modules/a/modules/config/config", "/p/.git/modules/a/config"] {
            assert!(is_sensitive(Path::new(path)), "{path} is a submodule's config");
        }
    }

    #[test]
    fn a_dotenv_file_or_git_config_is_refused_with_what_to_do_and_a_template_resolves() {
        let (_dir, root) = tree();
        std::fs::create_dir_all(root.join(".git")).expect("mkdir");
        std::fs::write(root.join(".git/config"), "[remote \"origin\"]\n\turl = https://u:tok@example.com/r\n").expect("w");
        std::fs::write(root.join(".env"), "KEY=secret\n").expect("w");
        std::fs::write(root.join(".env.example"), "KEY=\n").expect("w");
        let roots = Roots::new([root.clone()], []);
        // Reading, and writing a file not there yet (the write tools resolve the same way).
        for path in [".env", ".env.local", "src/.env", ".git/config", ".git-credentials", ".pypirc"] {
            let error = roots.resolve(path).expect_err(path);
            assert!(matches!(error, RootError::Protected { .. }), "{path}: {error:?}");
        }
        let error = roots.open_file(".env").expect_err("refused").to_string();
        assert!(error.contains("credential location") && error.contains(".env.example") && error.contains("ask the user"), "{error}");
        let error = roots.resolve(".git/config").expect_err("refused").to_string();
        assert!(error.contains("credential location") && error.contains("herdr_git"), "{error}");
        assert!(roots.open_file(".env.example").is_ok());
    }

    #[test]
    fn a_pane_in_a_directory_holding_the_home_is_not_taken_as_a_root() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home/me");
        std::fs::create_dir_all(home.join("proj")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("home/other")).expect("mkdir");
        // The companion home elsewhere: its ancestors are skipped already.
        let companion = dir.path().join("companion");
        std::fs::create_dir_all(&companion).expect("mkdir");
        let above = dir.path().join("home");
        let roots = Roots::for_call([], [above.clone(), home.join("proj")], &companion, Some(&home));
        let canonical = |p: &Path| std::fs::canonicalize(p).expect("canonical");
        assert_eq!(roots.list(), vec![canonical(&home.join("proj"))], "the directory holding the home is no root");
        let described = roots.describe();
        assert!(described.contains(&canonical(&above).display().to_string()) && described.contains("not roots"), "{described}");
        // The other user's home is out of reach.
        let error = roots.resolve(&dir.path().join("home/other").display().to_string()).expect_err("refused");
        assert!(matches!(error, RootError::Outside { .. }), "{error:?}");
    }

    use proptest::prelude::*;

    /// A tree under a temporary directory: `root/` (the project root) with directories
    /// `a`, `a/b`, `c`, and `out/` beside it; then the generated symlinks, each at one of
    /// the names below pointing at one of the targets (inside, outside, relative, looping).
    const LINK_AT: [&str; 5] = ["root/l0", "root/a/l1", "root/a/b/l2", "root/c/l3", "out/l4"];
    const TARGETS: [&str; 12] = ["..", "../..", "../out", "a", "/", "/etc", "b", "l0", "../root/a", ".", "../out/none", "/nonexistent/x"];
    const PARTS: [&str; 12] = ["a", "b", "c", "..", ".", "l0", "l1", "l2", "l3", "l4", "out", "missing"];

    fn build(links: &[(usize, usize)]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        for d in ["root/a/b", "root/c", "out"] {
            std::fs::create_dir_all(dir.path().join(d)).expect("mkdir");
        }
        std::fs::write(dir.path().join("out/secret"), "s").expect("w");
        std::fs::write(dir.path().join("root/a/file"), "f").expect("w");
        for (at, target) in links {
            let _ = symlink(TARGETS[*target], dir.path().join(LINK_AT[*at]));
        }
        let root = std::fs::canonicalize(dir.path().join("root")).expect("canonical");
        (dir, root)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

        /// Whatever the tree of symlinks and the path (relative or absolute, with `..`,
        /// `.`, symlinks, missing parts), a path that resolves is inside the root, and what
        /// it names on disk (its longest existing ancestor, resolved by the kernel) is too.
        #[test]
        fn no_path_resolves_outside_its_root(
            links in proptest::collection::vec((0..LINK_AT.len(), 0..TARGETS.len()), 0..6),
            parts in proptest::collection::vec(0..PARTS.len(), 1..7),
            absolute in any::<bool>(),
        ) {
            let (dir, root) = build(&links);
            let roots = Roots::new([root.clone()], []);
            let relative: Vec<&str> = parts.iter().map(|i| PARTS[*i]).collect();
            let path = if absolute { format!("{}/{}", dir.path().join("root").display(), relative.join("/")) } else { relative.join("/") };
            if let Ok(resolved) = roots.resolve(&path) {
                prop_assert!(resolved.starts_with(&root), "{path} -> {}", resolved.display());
                let mut existing = resolved.clone();
                while std::fs::symlink_metadata(&existing).is_err() {
                    prop_assert!(existing.pop());
                }
                // No part of it is a symlink (a missing part cannot be a dangling one).
                let mut prefix = resolved.clone();
                loop {
                    let link = std::fs::symlink_metadata(&prefix).is_ok_and(|m| m.file_type().is_symlink());
                    prop_assert!(!link, "{path} -> {} passes the symlink {}", resolved.display(), prefix.display());
                    if !prefix.pop() {
                        break;
                    }
                }
                let real = std::fs::canonicalize(&existing).expect("exists");
                prop_assert!(real.starts_with(&root), "{path} -> {} is really {}", resolved.display(), real.display());
                // And the kernel agrees on an existing path: it names the same file.
                if let Ok(kernel) = std::fs::canonicalize(root.join(&path)) {
                    prop_assert_eq!(kernel, resolved);
                }
            } else if let Ok(kernel) = std::fs::canonicalize(if absolute { PathBuf::from(&path) } else { root.join(&path) }) {
                // Refused only when the kernel's answer is outside (or the path is odd).
                prop_assert!(!kernel.starts_with(&root), "{path} refused but is {}", kernel.display());
            }
        }
    }

    trait NoFollow {
        fn custom_flags_nofollow(&mut self) -> &mut Self;
    }
    impl NoFollow for std::fs::OpenOptions {
        fn custom_flags_nofollow(&mut self) -> &mut Self {
            use std::os::unix::fs::OpenOptionsExt;
            self.custom_flags(libc::O_NOFOLLOW)
        }
    }
}
