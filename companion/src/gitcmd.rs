//! The one hardened `git` command line of the runtime: the workstation tools
//! (`tools::git`, the write tools' dirty check in `tools::edit`) and the journal's handoff
//! seed (`journal::git`) build every `git` run here, so the hardening is written once.
//!
//! Invariants (the repository is an agent's, and an untrusted clone's `.git/config` may
//! name a program):
//! - No configuration-named program runs: hooks (`core.hooksPath=/dev/null`), fsmonitor,
//!   external diff, the signature check's `gpg.program` (`log.showSignature=false`),
//!   transports and lazy fetch (`GIT_ALLOW_PROTOCOL` empty, which a repository's own
//!   `protocol.<name>.allow` cannot undo; `protocol.allow=never`, `core.sshCommand=`,
//!   `GIT_NO_LAZY_FETCH`), and each filter driver the repository names (found first with
//!   [`FILTER_QUERY`], switched off by [`filter_overrides`] names); no pager, no colour, no
//!   optional locks, no prompt, no system configuration, no implicit bare repository;
//!   stdin is closed.
//! - Git older than [`MIN_GIT`] (2.31) ignores `GIT_CONFIG_COUNT`, so every setting below
//!   would be lost: the callers refuse it ([`version_refusal`] of [`installed_version`],
//!   asked once).
//! - Every setting here goes through the environment (`GIT_CONFIG_COUNT`,
//!   `GIT_CONFIG_KEY_<n>`, `GIT_CONFIG_VALUE_<n>`), never `-c`: git splits a `-c` argument
//!   at its first `=`, so a filter named `a=b` would set another key and keep its program.
//!   Names are bytes as git printed them (NUL-separated, never converted). (A caller may
//!   add a fixed key of its own with `-c`, as `tools::git` does for a snapshot index's
//!   `core.splitIndex=false`; never a name read from a repository.)
//! - A submodule is never entered: its summary is off (`status.submoduleSummary=false`,
//!   `diff.submodule=short`), and the callers that compare the work tree pass
//!   `--ignore-submodules=all` (git would run `git status` in the submodule, whose own
//!   filters were never read).
//! - The child's environment is cleared, then holds only [`INHERITED_ENV`] and `LC_*` of
//!   the runtime (as `herdr_exec`'s commands), `XDG_CONFIG_HOME` (git's alone: where the
//!   user's global config is) and the settings above: no agent socket, no
//!   token, no inherited `GIT_*` or `PAGER`.
//! - A `ceiling` (the parent of the registered project root) is a `GIT_CEILING_DIRECTORIES`
//!   entry: Git looks for a repository in the root and below it, never above it, so a root
//!   that is not itself inside a repository never reads (or runs the configuration of) a
//!   repository that merely contains it.
//! - The timeout is the caller's (each runs `git` under its own); [`ceiling_of`] gives the
//!   ceiling of a root.
//!
//! A leaf: it names no other module of the crate.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The runtime's environment variables a child process inherits (`herdr_exec`'s commands
/// and every `git` run); every other one (the SSH agent socket, `HERDR_*`, tokens) is
/// withheld. `LC_*` are kept too ([`inherited_env`]).
pub const INHERITED_ENV: [&str; 8] = ["PATH", "HOME", "LANG", "TERM", "USER", "SHELL", "TMPDIR", "LOGNAME"];

/// The runtime's variables a child inherits: [`INHERITED_ENV`] and `LC_*`.
pub fn inherited_env() -> impl Iterator<Item = (OsString, OsString)> {
    inherited_from(std::env::vars_os())
}

/// The variables of `vars` a child inherits: [`INHERITED_ENV`] and `LC_*`.
fn inherited_from(vars: impl Iterator<Item = (OsString, OsString)>) -> impl Iterator<Item = (OsString, OsString)> {
    vars.filter(|(name, _)| {
        let text = name.to_string_lossy();
        INHERITED_ENV.contains(&text.as_ref()) || text.starts_with("LC_")
    })
}

/// The configuration set on every run, so that no program it names runs (the filter
/// drivers are found per repository by [`filter_overrides`]).
const HARDENING: [(&str, &str); 11] = [
    ("safe.bareRepository", "explicit"),
    ("log.showSignature", "false"),
    ("protocol.allow", "never"),
    ("core.fsmonitor", ""),
    ("diff.external", ""),
    ("core.hooksPath", "/dev/null"),
    ("core.quotepath", "false"),
    ("color.ui", "false"),
    ("core.sshCommand", ""),
    ("status.submoduleSummary", "false"),
    ("diff.submodule", "short"),
];

/// The configuration of one run, as `(key, value)` pairs: [`HARDENING`], then each filter
/// driver in `filters` switched off.
fn settings(filters: &[OsString]) -> Vec<(OsString, OsString)> {
    let mut pairs: Vec<(OsString, OsString)> = HARDENING.iter().map(|(key, value)| (key.into(), value.into())).collect();
    for name in filters {
        for (key, value) in [("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")] {
            let mut full = OsString::from("filter.");
            full.push(name);
            full.push(".");
            full.push(key);
            pairs.push((full, value.into()));
        }
    }
    pairs
}

/// The one `git` command every tool runs (`herdr_git` and the write tools' dirty check):
/// no configuration-named program runs (hooks, fsmonitor, external diff, signature check,
/// transport, the filter drivers in `filters` from [`filter_overrides`]), no pager, no
/// optional locks, no system configuration, no lazy fetch, no prompt, only the
/// [`inherited_env`] of the runtime, no repository looked for above `ceiling` (when given).
pub fn hardened_command(dir: &Path, ceiling: Option<&Path>, filters: &[OsString]) -> std::process::Command {
    hardened_command_in(std::env::vars_os(), dir, ceiling, filters)
}

/// [`hardened_command`] for a runtime whose environment is `vars`.
fn hardened_command_in(
    vars: impl Iterator<Item = (OsString, OsString)>,
    dir: &Path,
    ceiling: Option<&Path>,
    filters: &[OsString],
) -> std::process::Command {
    let vars: Vec<(OsString, OsString)> = vars.collect();
    let mut command = std::process::Command::new("git");
    command.arg("-C").arg(dir).args(["--no-pager", "--no-optional-locks"]);
    command.env_clear().envs(inherited_from(vars.iter().cloned()));
    // Git's alone: where the user's global config is (`safe.directory`, `excludesFile`).
    if let Some((name, value)) = vars.iter().find(|(name, _)| name == "XDG_CONFIG_HOME") {
        command.env(name, value);
    }
    let pairs = settings(filters);
    command.env("GIT_CONFIG_COUNT", pairs.len().to_string());
    for (n, (key, value)) in pairs.iter().enumerate() {
        command.env(format!("GIT_CONFIG_KEY_{n}"), key).env(format!("GIT_CONFIG_VALUE_{n}"), value);
    }
    command
        .env("GIT_NO_LAZY_FETCH", "1")
        // Empty: no transport at all; it wins over a repository's `protocol.<name>.allow`
        // (which beats `protocol.allow=never`), and older git honours it too.
        .env("GIT_ALLOW_PROTOCOL", "")
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
/// its configuration only), NUL-separated.
pub const FILTER_QUERY: [&str; 5] = ["config", "-z", "--includes", "--get-regexp", r"^filter\..*\.(clean|smudge|process|required)$"];

/// The filter driver names in the output of [`FILTER_QUERY`] (`filter.<name>.<key>`, a
/// newline and the value, each record NUL-terminated; a name may hold dots, `=`, spaces
/// and bytes that are not UTF-8, and is kept as it is).
pub fn filter_overrides(output: &[u8]) -> Vec<OsString> {
    use std::os::unix::ffi::OsStrExt;
    let mut names: Vec<OsString> = Vec::new();
    for record in output.split(|b| *b == 0) {
        let key = record.split(|b| *b == b'\n').next().unwrap_or_default();
        let Some(rest) = key.strip_prefix(b"filter.") else { continue };
        let Some(dot) = rest.iter().rposition(|b| *b == b'.') else { continue };
        let name = OsStr::from_bytes(&rest[..dot]);
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

/// The oldest Git the hardening holds on: older git ignores `GIT_CONFIG_COUNT` and its
/// keys, so every setting of [`HARDENING`] would be lost.
pub const MIN_GIT: (u32, u32) = (2, 31);

/// The version in `git version` output (`git version 2.47.3`, `git version 2.39.5 (Apple
/// Git-154)`, `git version 2.45.0.windows.1`): its text and (major, minor).
pub fn parse_git_version(output: &str) -> Option<(String, (u32, u32))> {
    let word = output.trim().strip_prefix("git version ")?.split_whitespace().next()?;
    let mut parts = word.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((word.to_owned(), (major, minor)))
}

/// Why Git cannot be used, for the `git version` output `found` (`None`: git did not
/// run, which the git run itself then reports): older than [`MIN_GIT`], or a version
/// that cannot be read.
pub fn version_refusal(found: Option<&str>) -> Option<String> {
    let found = found?;
    let (major, minor) = MIN_GIT;
    match parse_git_version(found) {
        Some((_, version)) if version >= MIN_GIT => None,
        Some((text, _)) => Some(format!("herdr_git needs Git {major}.{minor} or newer (found {text}): upgrade Git")),
        None => Some(format!(
            "herdr_git needs Git {major}.{minor} or newer and could not read the version of `git` (it said {:?}): upgrade Git",
            found.trim().chars().take(80).collect::<String>()
        )),
    }
}

/// The output of `git version` on the runtime's PATH, asked once (kept once a git new
/// enough ran); `None` when git cannot be run.
pub fn installed_version() -> Option<String> {
    static FOUND: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if let Some(found) = FOUND.get() {
        return Some(found.clone());
    }
    let output = std::process::Command::new("git")
        .arg("version")
        .env_clear()
        .envs(inherited_env())
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let found = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    // A version refused is asked again next time: the user may have upgraded since.
    if version_refusal(Some(&found)).is_some() {
        return Some(found);
    }
    Some(FOUND.get_or_init(|| found).clone())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Git41 HIGH-1 (failed before): the names were read from space- and line-separated
    /// output, lossily, so a name with a space or bytes that are not UTF-8 came out wrong
    /// and its filter was never switched off. They are read NUL-separated (`-z`), as bytes.
    #[test]
    fn filter_names_with_an_equals_sign_a_space_or_odd_bytes_are_read_whole() {
        use std::os::unix::ffi::OsStrExt;
        assert!(FILTER_QUERY.contains(&"-z"), "the query asks for NUL-separated output");
        let output = b"filter.a=b.clean\ntouch x\0filter.sp ace.smudge\ncat\0filter.\xff.process\nx\0filter.dot.ted.required\0filter.a=b.smudge\ny\0";
        let names = filter_overrides(output);
        let names: Vec<&[u8]> = names.iter().map(|n| n.as_bytes()).collect();
        assert_eq!(names, [&b"a=b"[..], b"sp ace", b"\xff", b"dot.ted"]);
    }

    /// A partial clone (blobs left on the server) whose remote URL runs `touch MARKER`
    /// through the `ext::` transport, which its own config allows: the temporary
    /// directory, the clone and the id of a blob it lacks.
    pub(crate) fn partial_clone_with_ext_remote(marker: &Path) -> (tempfile::TempDir, PathBuf, String) {
        let dir = tempfile::tempdir().expect("tempdir");
        let git = |at: &Path, args: &[&str]| {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(at)
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .output()
                .expect("git");
            assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        };
        let (source, work, clone) = (dir.path().join("src.git"), dir.path().join("work"), dir.path().join("clone"));
        std::fs::create_dir_all(&work).expect("mkdir");
        git(dir.path(), &["init", "-q", "--bare", "src.git"]);
        git(&source, &["config", "uploadpack.allowFilter", "true"]);
        git(&work, &["init", "-q"]);
        std::fs::write(work.join("a.txt"), "one\n").expect("w");
        git(&work, &["add", "."]);
        git(&work, &["commit", "-qm", "one"]);
        std::fs::write(work.join("a.txt"), "two\n").expect("w");
        git(&work, &["commit", "-qam", "two"]);
        git(&work, &["push", "-q", &source.display().to_string(), "HEAD:refs/heads/main"]);
        let url = format!("file://{}", source.display());
        git(dir.path(), &["clone", "-q", "--filter=blob:none", "--no-checkout", &url, "clone"]);
        git(&clone, &["config", "remote.origin.url", &format!("ext::sh -c touch% {}", marker.display())]);
        git(&clone, &["config", "protocol.ext.allow", "always"]);
        let blob = git(&work, &["rev-parse", "HEAD:a.txt"]);
        (dir, clone, blob)
    }

    /// Git41 H2 (failed before: the marker was made): a repository's own
    /// `protocol.ext.allow=always` won over our `protocol.allow=never`, and a partial
    /// clone fetched a missing blob through its remote, running the URL's command;
    /// `GIT_NO_LAZY_FETCH` stops that only from Git 2.44, so it is taken away here as an
    /// older git would ignore it. `GIT_ALLOW_PROTOCOL` (empty) allows no transport at all.
    #[test]
    fn a_repository_config_that_allows_a_transport_never_runs_it_on_a_lazy_fetch() {
        let marks = tempfile::tempdir().expect("tempdir");
        let marker = marks.path().join("PWNED");
        let (_dir, clone, blob) = partial_clone_with_ext_remote(&marker);
        let mut command = hardened_command(&clone, None, &[]);
        command.env_remove("GIT_NO_LAZY_FETCH").args(["cat-file", "-p", &blob]).stdout(Stdio::null()).stderr(Stdio::null());
        let _ = command.status().expect("git");
        assert!(!marker.exists(), "the remote's command ran");
    }

    /// Git41 LOW-1 (failed before): a git child inherited the whole environment but `GIT_*`
    /// and `PAGER` (an agent socket, tokens). It gets the allowlist of `herdr_exec`'s
    /// commands and its own settings only; read from the running child's environment.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_git_child_sees_only_the_allowlisted_environment() {
        // The runtime's environment is given, not set: tests run side by side.
        let mut runtime: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        for (name, value) in [("HERDR_GIT41_SECRET", "hunter2"), ("GIT_CONFIG_PARAMETERS", "'core.pager'='hunter2'"), ("PAGER", "hunter2")]
        {
            runtime.push((name.into(), value.into()));
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let mut command = hardened_command_in(runtime.into_iter(), dir.path(), Some(dir.path()), &[]);
        command.args(["hash-object", "--stdin"]).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null());
        let mut child = command.spawn().expect("git");
        let environ = std::fs::read(format!("/proc/{}/environ", child.id()));
        drop(child.stdin.take());
        let _ = child.wait();
        let environ = environ.expect("the child's environment");
        let vars: Vec<String> =
            environ.split(|b| *b == 0).filter(|v| !v.is_empty()).map(|v| String::from_utf8_lossy(v).into_owned()).collect();
        assert!(vars.iter().any(|v| v.starts_with("PATH=")), "{vars:?}");
        assert!(vars.iter().any(|v| v == "GIT_CONFIG_NOSYSTEM=1"), "{vars:?}");
        assert!(!vars.iter().any(|v| v.contains("hunter2")), "{vars:?}");
        assert!(!vars.iter().any(|v| v.starts_with("GIT_CONFIG_PARAMETERS=") || v.starts_with("PAGER=")), "{vars:?}");
        for var in &vars {
            let name = var.split('=').next().unwrap_or("");
            assert!(
                name.starts_with("GIT_") || name.starts_with("LC_") || INHERITED_ENV.contains(&name) || name == "XDG_CONFIG_HOME",
                "{name} reached git"
            );
        }
    }

    /// Git41 H1: the versions git prints on Linux, macOS and Windows are read, and one
    /// older than 2.31 is refused with what to do.
    #[test]
    fn git_versions_are_read_and_one_older_than_2_31_is_refused() {
        assert_eq!(parse_git_version("git version 2.47.3\n"), Some(("2.47.3".to_owned(), (2, 47))));
        assert_eq!(parse_git_version("git version 2.39.5 (Apple Git-154)"), Some(("2.39.5".to_owned(), (2, 39))));
        assert_eq!(parse_git_version("git version 2.45.0.windows.1"), Some(("2.45.0.windows.1".to_owned(), (2, 45))));
        assert_eq!(parse_git_version("hub version 2.14"), None);
        for fine in ["git version 2.31.0", "git version 2.47.3", "git version 3.0.0"] {
            assert_eq!(version_refusal(Some(fine)), None, "{fine}");
        }
        assert_eq!(
            version_refusal(Some("git version 2.30.9")).as_deref(),
            Some("herdr_git needs Git 2.31 or newer (found 2.30.9): upgrade Git")
        );
        assert!(version_refusal(Some("git version 1.9.1")).is_some());
        assert!(version_refusal(Some("something else")).is_some_and(|why| why.contains("2.31")));
        assert_eq!(version_refusal(None), None, "git that does not run reports itself");
        assert!(installed_version().is_some_and(|found| version_refusal(Some(&found)).is_none()), "this machine's git");
    }

    /// Git41 LOW b (failed before: git did not find it): git reads the user's global
    /// config at `$XDG_CONFIG_HOME/git/config` (its `safe.directory`, `excludesFile`), so
    /// a custom `XDG_CONFIG_HOME` reaches git (and only git: not `herdr_exec`'s commands).
    #[test]
    fn git_reads_the_global_config_at_a_custom_xdg_config_home() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (home, xdg) = (dir.path().join("home"), dir.path().join("xdg"));
        std::fs::create_dir_all(&home).expect("mkdir");
        std::fs::create_dir_all(xdg.join("git")).expect("mkdir");
        std::fs::write(xdg.join("git/config"), "[herdr]\n\tprobe = xdg\n").expect("w");
        let runtime: Vec<(OsString, OsString)> = vec![
            ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
            ("HOME".into(), home.into()),
            ("XDG_CONFIG_HOME".into(), xdg.into()),
        ];
        let mut command = hardened_command_in(runtime.into_iter(), dir.path(), Some(dir.path()), &[]);
        let output = command.args(["config", "--global", "--get", "herdr.probe"]).output().expect("git");
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "xdg");
        assert!(!INHERITED_ENV.contains(&"XDG_CONFIG_HOME"), "herdr_exec's commands do not get it");
    }
}
