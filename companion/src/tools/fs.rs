//! `herdr_fs_read` and `herdr_fs_list`: a file's lines and a directory's entries, inside
//! the project roots, bounded for a chat.
//!
//! Invariants:
//! - Every path goes through [`Roots`]: a file is opened by [`Roots::open_file`] (no final
//!   symlink, the open file checked against the roots again); a listing walks without
//!   following symlinks (a symlink is listed as one, never entered).
//! - A read returns at most `max_bytes` of text (whole lines; a longer first line is cut on
//!   a character boundary) and says where to continue; a file with a NUL byte in its first
//!   8 KiB, or that is not UTF-8, is binary: its size and kind, no content.
//! - A listing honours `.gitignore`, `.ignore` and `.git/info/exclude` (ripgrep's `ignore`
//!   crate), never descends into `.git`, sorts by path and stops at `max_entries`.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
#[cfg(test)]
use std::path::PathBuf;

use serde_json::{json, Value};

use super::roots::{RootError, Roots};

/// Default `max_bytes` of `herdr_fs_read`.
pub const READ_DEFAULT_BYTES: u64 = 16 * 1024;
/// Largest `max_bytes` of `herdr_fs_read`.
pub const READ_MAX_BYTES: u64 = 256 * 1024;
/// Default `max_entries` of `herdr_fs_list`.
pub const LIST_DEFAULT_ENTRIES: u64 = 500;
/// Largest `max_entries` of `herdr_fs_list`.
pub const LIST_MAX_ENTRIES: u64 = 2000;
/// How much of a file's start is looked at for a NUL byte.
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// A tool failure: a refusal by the roots, or a bad argument found while running.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ToolError {
    /// The roots refused the path.
    #[error(transparent)]
    Root(#[from] RootError),
    /// The call cannot be served as asked; the text says what to send instead.
    #[error("{0}")]
    Bad(String),
    /// The file system failed.
    #[error("{0}")]
    Io(String),
}

/// `herdr_fs_read`'s checked arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRequest {
    /// The file.
    pub path: String,
    /// First line, 1-based (default 1).
    pub start_line: u64,
    /// Last line, inclusive (default: as far as `max_bytes` reaches).
    pub end_line: Option<u64>,
    /// Most bytes of text returned.
    pub max_bytes: u64,
}

/// Reads lines `start_line..=end_line` of a file inside the roots, at most `max_bytes`.
pub fn read(roots: &Roots, request: &ReadRequest) -> Result<Value, ToolError> {
    let (resolved, file) = roots.open_file(&request.path)?;
    let io = |e: std::io::Error| ToolError::Io(format!("{} cannot be read: {e}", resolved.display()));
    let meta = file.metadata().map_err(io)?;
    if meta.is_dir() {
        return Err(ToolError::Bad(format!("{} is a directory; list it with herdr_fs_list", resolved.display())));
    }
    if !meta.is_file() {
        return Err(ToolError::Bad(format!(
            "{} is not a regular file (a device, socket or pipe); only files are read",
            resolved.display()
        )));
    }
    let size = meta.len();
    let root = roots.root_of(&resolved).map(|r| r.display().to_string());
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    // Binary: a NUL byte in the first 8 KiB.
    let head = reader.fill_buf().map_err(io)?;
    if head[..head.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
        return Ok(json!({"path": resolved, "root": root, "size": size, "binary": true,
            "note": "binary file (a NUL byte in its first 8 KiB): no text is shown"}));
    }
    let max = request.max_bytes;
    let mut content = String::new();
    let mut line_no: u64 = 0;
    let mut first: Option<u64> = None;
    let mut last: u64 = 0;
    let mut truncated = false;
    let mut eof = false;
    // Skip to the first line asked for without holding the lines skipped.
    while line_no + 1 < request.start_line {
        let buffer = reader.fill_buf().map_err(io)?;
        if buffer.is_empty() {
            eof = true;
            break;
        }
        match buffer.iter().position(|b| *b == b'\n') {
            Some(at) => {
                reader.consume(at + 1);
                line_no += 1;
            }
            None => {
                let all = buffer.len();
                reader.consume(all);
            }
        }
    }
    let mut line = Vec::new();
    while !eof {
        line.clear();
        // At most one byte past the cap per line: a longer line is cut below anyway.
        let read = reader.by_ref().take(max + 1).read_until(b'\n', &mut line).map_err(io)?;
        if read == 0 {
            eof = true;
            break;
        }
        line_no += 1;
        if request.end_line.is_some_and(|end| line_no > end) {
            break;
        }
        let text = match std::str::from_utf8(&line) {
            Ok(text) => text,
            // A line cut by the cap in the middle of a character.
            Err(e) if e.error_len().is_none() && line.len() as u64 > max => std::str::from_utf8(&line[..e.valid_up_to()]).unwrap_or(""),
            Err(_) => {
                return Ok(json!({"path": resolved, "root": root, "size": size, "binary": true,
                    "note": format!("line {line_no} is not UTF-8: the file is treated as binary and no text is shown")}))
            }
        };
        if (content.len() + text.len()) as u64 > max {
            if content.is_empty() {
                // One line longer than the cap: its start, cut on a character boundary.
                let mut end = usize::try_from(max).unwrap_or(usize::MAX).min(text.len());
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                content.push_str(&text[..end]);
                first = Some(line_no);
                last = line_no;
            }
            truncated = true;
            break;
        }
        content.push_str(text);
        first.get_or_insert(line_no);
        last = line_no;
        if request.end_line.is_some_and(|end| line_no >= end) {
            // Whether the file ends here.
            eof = reader.fill_buf().map(<[u8]>::is_empty).unwrap_or(false);
            break;
        }
    }
    let mut result = json!({
        "path": resolved,
        "root": root,
        "size": size,
        "binary": false,
        "start_line": first.unwrap_or(request.start_line),
        "end_line": last,
        "eof": eof,
        "truncated": truncated,
        "content": content,
    });
    if truncated {
        result["next_start_line"] = json!(last + 1);
        result["note"] = json!(format!("cut at max_bytes = {max}; continue with start_line = {}", last + 1));
    } else if first.is_none() && request.start_line > 1 {
        result["note"] = json!(format!("the file has {line_no} lines; start_line {} is past its end", request.start_line));
    }
    Ok(result)
}

/// `herdr_fs_list`'s checked arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListRequest {
    /// The directory.
    pub path: String,
    /// Walk the whole tree (default: the directory's own entries).
    pub recursive: bool,
    /// Only entries whose path relative to `path` matches this glob (e.g. `**/*.rs`).
    pub glob: Option<String>,
    /// Most entries returned.
    pub max_entries: u64,
}

/// A compiled glob matched against paths relative to the walked directory.
pub fn glob_matcher(glob: &str) -> Result<globset::GlobMatcher, ToolError> {
    globset::GlobBuilder::new(glob)
        .literal_separator(false)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError::Bad(format!("glob `{glob}` is not valid ({e}); send a glob such as **/*.rs or src/*.ts")))
}

/// The walker every listing and search uses: `.gitignore`-aware (also outside a Git
/// repository), hidden files shown, `.git` skipped, symlinks not followed, sorted.
/// Entries inside the companion home or a credential location are skipped.
pub fn walker(dir: &Path, max_depth: Option<usize>, roots: &Roots) -> ignore::Walk {
    walk_builder(dir, max_depth, roots).build()
}

/// [`walker`]'s settings, for a parallel walk too (`build_parallel`, which ignores the sort:
/// its caller sorts what it collects).
pub fn walk_builder(dir: &Path, max_depth: Option<usize>, roots: &Roots) -> ignore::WalkBuilder {
    let roots = roots.clone();
    let mut builder = ignore::WalkBuilder::new(dir);
    builder
        .hidden(false)
        .follow_links(false)
        .require_git(false)
        .git_global(false)
        .max_depth(max_depth)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| entry.file_name() != ".git" && !roots.is_refused(entry.path()));
    builder
}

/// How long a listing or a search may walk; then it stops and says `truncated`.
pub const WALK_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

/// Lists a directory inside the roots (see the module invariants).
pub fn list(roots: &Roots, request: &ListRequest) -> Result<Value, ToolError> {
    list_until(roots, request, std::time::Instant::now() + WALK_DEADLINE)
}

/// [`list`], stopping at `deadline`.
pub fn list_until(roots: &Roots, request: &ListRequest, deadline: std::time::Instant) -> Result<Value, ToolError> {
    let dir = roots.resolve(&request.path)?;
    let meta = std::fs::symlink_metadata(&dir).map_err(|e| ToolError::Io(format!("{} cannot be read: {e}", dir.display())))?;
    if !meta.is_dir() {
        return Err(ToolError::Bad(format!("{} is not a directory; read a file with herdr_fs_read", dir.display())));
    }
    let matcher = request.glob.as_deref().map(glob_matcher).transpose()?;
    let max = usize::try_from(request.max_entries).unwrap_or(usize::MAX);
    let mut entries = Vec::new();
    let mut truncated = false;
    let mut late = false;
    for entry in walker(&dir, if request.recursive { None } else { Some(1) }, roots) {
        if std::time::Instant::now() >= deadline {
            (truncated, late) = (true, true);
            break;
        }
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(&dir) else { continue };
        if matcher.as_ref().is_some_and(|m| !m.is_match(relative)) {
            continue;
        }
        if entries.len() >= max {
            truncated = true;
            break;
        }
        let kind = match entry.file_type() {
            Some(t) if t.is_symlink() => "symlink",
            Some(t) if t.is_dir() => "dir",
            Some(t) if t.is_file() => "file",
            _ => "other",
        };
        let mut item = json!({"path": relative, "type": kind});
        if kind == "file" {
            if let Ok(meta) = entry.metadata() {
                item["size"] = json!(meta.len());
            }
        }
        entries.push(item);
    }
    let mut result = json!({
        "path": dir,
        "root": roots.root_of(&dir),
        "recursive": request.recursive,
        "entries": entries,
        "count": entries.len(),
        "truncated": truncated,
    });
    if late {
        result["note"] =
            json!(format!("stopped after {} s of walking; list a subdirectory or narrow it with glob", WALK_DEADLINE.as_secs()));
    } else if truncated {
        result["note"] = json!(format!("stopped at max_entries = {max}; narrow it with glob or list a subdirectory"));
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> (tempfile::TempDir, Roots) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/deep")).expect("mkdir");
        std::fs::create_dir_all(root.join("target")).expect("mkdir");
        std::fs::create_dir_all(root.join(".git")).expect("mkdir");
        std::fs::write(root.join(".gitignore"), "target/\n").expect("w");
        std::fs::write(root.join("src/lib.rs"), "one\ntwo\nthree\nfour\n").expect("w");
        std::fs::write(root.join("src/deep/x.rs"), "x\n").expect("w");
        std::fs::write(root.join("src/deep/y.txt"), "y\n").expect("w");
        std::fs::write(root.join("target/out.rs"), "ignored\n").expect("w");
        std::fs::write(root.join("blob.bin"), b"ab\0cd").expect("w");
        let roots = Roots::new([root.to_path_buf()], []);
        (dir, roots)
    }

    #[test]
    fn a_home_pane_is_no_root_and_credentials_are_refused_whatever_the_roots() {
        let home = tempfile::tempdir().expect("tempdir");
        let h = home.path();
        std::fs::create_dir_all(h.join(".ssh")).expect("mkdir");
        std::fs::write(h.join(".ssh/id"), "PRIVATE KEY\n").expect("w");
        std::fs::create_dir_all(h.join("companion")).expect("mkdir");
        std::fs::write(h.join("companion/mcp.token"), "TOKEN\n").expect("w");
        std::fs::create_dir_all(h.join("proj/.ssh")).expect("mkdir");
        std::fs::write(h.join("proj/.ssh/id"), "PRIVATE KEY\n").expect("w");
        std::fs::write(h.join("proj/ok.txt"), "fine\n").expect("w");
        // A pane in $HOME (or /, or the companion home's parent) is not a root.
        for pane in [h.to_path_buf(), PathBuf::from("/"), h.join("companion")] {
            let roots = Roots::for_call([], [pane.clone()], &h.join("companion"), Some(h));
            let error = read(&roots, &read_req(&h.join(".ssh/id").display().to_string(), 1, None, 1000)).expect_err("refused");
            assert!(error.to_string().contains("herdr-companion roots add PATH"), "{pane:?}: {error}");
        }
        // A registered root holding .ssh: the keys are refused, the rest is read; the
        // companion home is refused even inside a registered root.
        let roots = Roots::for_call([h.join("proj"), h.to_path_buf()], [], &h.join("companion"), Some(h));
        let error = read(&roots, &read_req(&h.join("proj/.ssh/id").display().to_string(), 1, None, 1000)).expect_err("refused");
        assert!(error.to_string().contains("credential location"), "{error}");
        let error = read(&roots, &read_req(&h.join("companion/mcp.token").display().to_string(), 1, None, 1000)).expect_err("refused");
        assert!(error.to_string().contains("companion home"), "{error}");
        assert!(read(&roots, &read_req(&h.join("proj/ok.txt").display().to_string(), 1, None, 1000)).is_ok());
        let found = crate::tools::grep::grep(
            &roots,
            &crate::tools::grep::GrepRequest {
                root: h.display().to_string(),
                pattern: "PRIVATE KEY".to_owned(),
                regex: false,
                glob: None,
                case_insensitive: false,
                max_matches: 100,
                max_bytes: 100_000,
            },
        )
        .expect("grep");
        assert_eq!(found["matches"].as_array().map(Vec::len), Some(0), "{found}");
        let found = crate::tools::grep::grep(
            &roots,
            &crate::tools::grep::GrepRequest {
                root: h.display().to_string(),
                pattern: "TOKEN".to_owned(),
                regex: false,
                glob: None,
                case_insensitive: false,
                max_matches: 100,
                max_bytes: 100_000,
            },
        )
        .expect("grep");
        assert_eq!(found["matches"].as_array().map(Vec::len), Some(0), "{found}");
    }

    /// Sec41: tokens, dotenv files and a repository's `.git/config` were read without a
    /// click and found by a search; now every one is refused or skipped, and the dotenv
    /// templates (no secrets) are still read, listed and searched.
    #[test]
    fn dotenv_files_token_files_and_git_config_are_refused_and_skipped_but_templates_are_read() {
        let (_dir, roots) = project();
        let root = roots.list()[0].clone();
        std::fs::create_dir_all(root.join(".config/gcloud")).expect("mkdir");
        std::fs::create_dir_all(root.join(".config/github-copilot")).expect("mkdir");
        let secrets = [
            ".env",
            ".env.local",
            "src/.env.production",
            ".git-credentials",
            ".pypirc",
            ".config/gcloud/credentials.db",
            ".config/github-copilot/hosts.json",
            ".git/config",
        ];
        for path in secrets {
            std::fs::write(root.join(path), "SECRET=hunter2\n").expect("w");
        }
        let templates = [".env.example", ".env.sample", ".env.template", ".env.dist"];
        for path in templates {
            std::fs::write(root.join(path), "SECRET=\n").expect("w");
        }
        for path in secrets {
            let error = read(&roots, &read_req(path, 1, None, 1000)).expect_err(path).to_string();
            assert!(error.contains("credential location"), "{path}: {error}");
        }
        for path in templates {
            let r = read(&roots, &read_req(path, 1, None, 1000)).expect(path);
            assert_eq!(r["content"], "SECRET=\n", "{path}");
        }
        let listed = list(&roots, &ListRequest { path: ".".to_owned(), recursive: true, glob: None, max_entries: 500 }).expect("list");
        let paths: Vec<&str> = listed["entries"].as_array().expect("entries").iter().filter_map(|e| e["path"].as_str()).collect();
        for path in secrets {
            assert!(!paths.contains(&path), "{path} listed: {paths:?}");
        }
        for path in templates {
            assert!(paths.contains(&path), "{path} not listed: {paths:?}");
        }
        let found = crate::tools::grep::grep(
            &roots,
            &crate::tools::grep::GrepRequest {
                root: ".".to_owned(),
                pattern: "SECRET=".to_owned(),
                regex: false,
                glob: None,
                case_insensitive: false,
                max_matches: 100,
                max_bytes: 100_000,
            },
        )
        .expect("grep");
        let mut files: Vec<&str> = found["matches"].as_array().expect("matches").iter().filter_map(|m| m["path"].as_str()).collect();
        files.sort_unstable();
        assert_eq!(files, [".env.dist", ".env.example", ".env.sample", ".env.template"], "{found}");
    }

    #[test]
    fn a_walk_stops_at_its_deadline_and_says_so() {
        let (_dir, roots) = project();
        let request = ListRequest { path: ".".to_owned(), recursive: true, glob: None, max_entries: 500 };
        let listed = list_until(&roots, &request, std::time::Instant::now()).expect("list");
        assert_eq!(listed["truncated"], true);
        assert!(listed["note"].as_str().is_some_and(|n| n.contains("5 s")), "{listed}");
        let request = crate::tools::grep::GrepRequest {
            root: ".".to_owned(),
            pattern: "one".to_owned(),
            regex: false,
            glob: None,
            case_insensitive: false,
            max_matches: 100,
            max_bytes: 100_000,
        };
        let found = crate::tools::grep::grep_until(&roots, &request, std::time::Instant::now()).expect("grep");
        assert_eq!((found["truncated"].as_bool(), found["files_searched"].as_u64()), (Some(true), Some(0)));
        // The parallel walk cut by the deadline says its matches are not the path-order prefix.
        assert_eq!(found["order"], "partial", "{found}");
        assert!(found["note"].as_str().is_some_and(|n| n.contains("another run can differ")), "{found}");
        assert!(found["note"].as_str().is_some_and(|n| n.contains("5 s")), "{found}");
        let complete = crate::tools::grep::grep(&roots, &request).expect("grep");
        assert_eq!((complete["count"].as_u64(), complete["order"].as_str()), (Some(1), Some("path")));
    }

    fn read_req(path: &str, start: u64, end: Option<u64>, max: u64) -> ReadRequest {
        ReadRequest { path: path.to_owned(), start_line: start, end_line: end, max_bytes: max }
    }

    #[test]
    fn read_gives_a_line_range_and_says_where_to_continue_at_the_byte_cap() {
        let (_dir, roots) = project();
        let r = read(&roots, &read_req("src/lib.rs", 2, Some(3), 1000)).expect("read");
        assert_eq!((r["content"].as_str(), r["start_line"].as_u64(), r["end_line"].as_u64()), (Some("two\nthree\n"), Some(2), Some(3)));
        assert_eq!(r["eof"], false);
        let r = read(&roots, &read_req("src/lib.rs", 1, None, 9)).expect("read");
        assert_eq!(r["content"], "one\ntwo\n");
        assert_eq!((r["truncated"].as_bool(), r["next_start_line"].as_u64()), (Some(true), Some(3)));
        let r = read(&roots, &read_req("src/lib.rs", 1, None, 2)).expect("read");
        assert_eq!(r["content"], "on", "a line longer than the cap is cut");
        let r = read(&roots, &read_req("src/lib.rs", 3, None, 1000)).expect("read");
        assert_eq!((r["content"].as_str(), r["eof"].as_bool()), (Some("three\nfour\n"), Some(true)));
    }

    #[test]
    fn read_shows_no_text_of_a_binary_file_and_refuses_a_directory() {
        let (_dir, roots) = project();
        let r = read(&roots, &read_req("blob.bin", 1, None, 1000)).expect("read");
        assert_eq!((r["binary"].as_bool(), r["size"].as_u64(), r.get("content")), (Some(true), Some(5), None));
        std::fs::write(roots.list()[0].join("latin1.txt"), b"caf\xe9\n").expect("w");
        assert_eq!(read(&roots, &read_req("latin1.txt", 1, None, 1000)).expect("read")["binary"], true);
        assert!(matches!(read(&roots, &read_req("src", 1, None, 10)), Err(ToolError::Bad(_))));
    }

    #[test]
    fn list_honours_gitignore_skips_dot_git_and_filters_by_glob() {
        let (_dir, roots) = project();
        let r = list(&roots, &ListRequest { path: ".".to_owned(), recursive: true, glob: None, max_entries: 100 }).expect("list");
        let paths: Vec<&str> = r["entries"].as_array().expect("entries").iter().filter_map(|e| e["path"].as_str()).collect();
        assert_eq!(paths, [".gitignore", "blob.bin", "src", "src/deep", "src/deep/x.rs", "src/deep/y.txt", "src/lib.rs"]);
        let r = list(&roots, &ListRequest { path: "src".to_owned(), recursive: false, glob: None, max_entries: 100 }).expect("list");
        let paths: Vec<&str> = r["entries"].as_array().expect("entries").iter().filter_map(|e| e["path"].as_str()).collect();
        assert_eq!(paths, ["deep", "lib.rs"]);
        let r = list(&roots, &ListRequest { path: ".".to_owned(), recursive: true, glob: Some("**/*.rs".to_owned()), max_entries: 1 })
            .expect("list");
        assert_eq!((r["count"].as_u64(), r["truncated"].as_bool()), (Some(1), Some(true)));
        assert!(matches!(
            list(&roots, &ListRequest { path: ".".to_owned(), recursive: true, glob: Some("[".to_owned()), max_entries: 1 }),
            Err(ToolError::Bad(_))
        ));
    }
}
