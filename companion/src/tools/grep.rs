//! `herdr_fs_grep`: a regex or literal search of a file or a tree inside the project roots,
//! with ripgrep's crates (`ignore` walks, `grep-regex` matches, `grep-searcher` reads).
//!
//! Invariants:
//! - The walk is [`super::fs::walker`]'s: `.gitignore`-aware, `.git` skipped, symlinks
//!   neither followed nor searched. Binary files (a NUL byte) are skipped.
//! - At most `max_matches` matching lines and `max_bytes` of matched line text are
//!   returned (each line cut at [`MAX_LINE_CHARS`] characters); the search stops there and
//!   says so. A regex is compiled with a size limit, so a hostile pattern is refused, not run.

use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use serde_json::{json, Value};

use super::fs::{glob_matcher, walker, ToolError};
use super::roots::Roots;

/// Default `max_matches`.
pub const GREP_DEFAULT_MATCHES: u64 = 100;
/// Largest `max_matches`.
pub const GREP_MAX_MATCHES: u64 = 1000;
/// Default `max_bytes` (of matched line text).
pub const GREP_DEFAULT_BYTES: u64 = 16 * 1024;
/// Largest `max_bytes`.
pub const GREP_MAX_BYTES: u64 = 256 * 1024;
/// Longest matched line returned, in characters (the rest is cut).
pub const MAX_LINE_CHARS: usize = 400;
/// Longest pattern, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1024;
/// The compiled regex's size limit.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// `herdr_fs_grep`'s checked arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepRequest {
    /// A directory (searched recursively) or a file.
    pub root: String,
    /// The pattern.
    pub pattern: String,
    /// A regular expression (Rust regex syntax); else a literal string.
    pub regex: bool,
    /// Only files whose path relative to `root` matches this glob.
    pub glob: Option<String>,
    /// Ignore case.
    pub case_insensitive: bool,
    /// Most matching lines.
    pub max_matches: u64,
    /// Most bytes of matched line text.
    pub max_bytes: u64,
}

/// Searches (see the module invariants).
pub fn grep(roots: &Roots, request: &GrepRequest) -> Result<Value, ToolError> {
    grep_until(roots, request, std::time::Instant::now() + super::fs::WALK_DEADLINE)
}

/// Most memory the searcher's buffer may take for one file (a longer line skips the file).
pub const GREP_HEAP_LIMIT: usize = 16 * 1024 * 1024;

/// [`grep`], stopping at `deadline` ([`super::fs::WALK_DEADLINE`] after the start).
pub fn grep_until(roots: &Roots, request: &GrepRequest, deadline: std::time::Instant) -> Result<Value, ToolError> {
    if request.pattern.is_empty() || request.pattern.len() > MAX_PATTERN_BYTES {
        return Err(ToolError::Bad(format!("pattern must be 1 to {MAX_PATTERN_BYTES} bytes")));
    }
    let base = roots.resolve(&request.root)?;
    let matcher = RegexMatcherBuilder::new()
        .fixed_strings(!request.regex)
        .case_insensitive(request.case_insensitive)
        // Lines end at \n: the searcher then scans a whole buffer for a candidate instead
        // of matching line by line (what ripgrep does), and a pattern can never match
        // across lines.
        .line_terminator(Some(b'\n'))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build(&request.pattern)
        .map_err(|e| ToolError::Bad(format!("pattern is not a valid regular expression ({e}); fix it, or send regex: false to search for the text as it is")))?;
    let glob = request.glob.as_deref().map(glob_matcher).transpose()?;
    let mut searcher = SearcherBuilder::new().heap_limit(Some(GREP_HEAP_LIMIT)).binary_detection(BinaryDetection::quit(0)).line_number(true).build();
    let max_matches = usize::try_from(request.max_matches).unwrap_or(usize::MAX);
    let max_bytes = usize::try_from(request.max_bytes).unwrap_or(usize::MAX);
    let mut matches: Vec<Value> = Vec::new();
    let mut bytes = 0usize;
    let mut files_searched = 0u64;
    let mut stopped: Option<&str> = None;
    let base_is_file = std::fs::symlink_metadata(&base).map(|m| m.is_file()).unwrap_or(false);
    for entry in walker(&base, None, roots) {
        if std::time::Instant::now() >= deadline {
            stopped = Some("the deadline");
            break;
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let relative = if base_is_file {
            entry.path().file_name().map(std::path::Path::new).unwrap_or(entry.path())
        } else {
            entry.path().strip_prefix(&base).unwrap_or(entry.path())
        };
        if glob.as_ref().is_some_and(|g| !g.is_match(relative)) {
            continue;
        }
        files_searched += 1;
        let shown = relative.to_string_lossy().into_owned();
        let outcome = searcher.search_path(
            &matcher,
            entry.path(),
            Lossy(|line_number, line| {
                let text = line.trim_end_matches(['\n', '\r']);
                let (text, cut) = match text.char_indices().nth(MAX_LINE_CHARS) {
                    Some((end, _)) => (&text[..end], true),
                    None => (text, false),
                };
                if bytes + text.len() > max_bytes {
                    stopped = Some("max_bytes");
                    return Ok(false);
                }
                bytes += text.len();
                let mut item = json!({"path": shown, "line": line_number, "text": text});
                if cut {
                    item["cut"] = json!(true);
                }
                matches.push(item);
                if matches.len() >= max_matches {
                    stopped = Some("max_matches");
                    return Ok(false);
                }
                Ok(true)
            }),
        );
        // A file that vanished or cannot be read is skipped, as ripgrep does.
        drop(outcome);
        if stopped.is_some() {
            break;
        }
    }
    let mut result = json!({
        "root": base,
        "pattern": request.pattern,
        "regex": request.regex,
        "matches": matches,
        "count": matches.len(),
        "files_searched": files_searched,
        "truncated": stopped.is_some(),
    });
    if stopped == Some("the deadline") {
        result["note"] = json!(format!("stopped after {} s of searching; narrow the search with glob or a subdirectory", super::fs::WALK_DEADLINE.as_secs()));
    } else if let Some(cap) = stopped {
        result["note"] = json!(format!("stopped at {cap}; narrow the search with glob or a subdirectory, or raise {cap}"));
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(root: &str, pattern: &str, regex: bool) -> GrepRequest {
        GrepRequest { root: root.to_owned(), pattern: pattern.to_owned(), regex, glob: None, case_insensitive: false, max_matches: 100, max_bytes: 10_000 }
    }

    fn tree() -> (tempfile::TempDir, Roots) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::write(root.join(".gitignore"), "gen/\n").expect("w");
        std::fs::create_dir_all(root.join("gen")).expect("mkdir");
        std::fs::write(root.join("gen/a.rs"), "fn needle() {}\n").expect("w");
        std::fs::write(root.join("src/a.rs"), "fn needle() {}\nlet x = a.b;\n").expect("w");
        std::fs::write(root.join("src/b.txt"), "Needle\nneedle again\n").expect("w");
        std::fs::write(root.join("src/c.bin"), b"needle\0").expect("w");
        let roots = Roots::new([root.to_path_buf()], []);
        (dir, roots)
    }

    fn found(result: &Value) -> Vec<String> {
        result["matches"].as_array().expect("matches").iter().map(|m| format!("{}:{}", m["path"].as_str().unwrap_or(""), m["line"])).collect()
    }

    #[test]
    fn literal_and_regex_search_skip_ignored_and_binary_files() {
        let (_dir, roots) = tree();
        assert_eq!(found(&grep(&roots, &request(".", "needle", false)).expect("grep")), ["src/a.rs:1", "src/b.txt:2"]);
        // A literal `.` is not a wildcard; a regex one is.
        assert_eq!(found(&grep(&roots, &request(".", "a.b", false)).expect("grep")), ["src/a.rs:2"]);
        assert_eq!(found(&grep(&roots, &request(".", "^N.*e$", true)).expect("grep")), ["src/b.txt:1"]);
        let mut insensitive = request("src", "NEEDLE", false);
        insensitive.case_insensitive = true;
        insensitive.glob = Some("*.txt".to_owned());
        assert_eq!(found(&grep(&roots, &insensitive).expect("grep")), ["b.txt:1", "b.txt:2"]);
        assert_eq!(found(&grep(&roots, &request("src/b.txt", "again", false)).expect("grep")), ["b.txt:2"]);
    }

    #[test]
    fn caps_stop_the_search_and_a_bad_regex_is_refused() {
        let (_dir, roots) = tree();
        let mut capped = request(".", "needle", false);
        capped.max_matches = 1;
        let result = grep(&roots, &capped).expect("grep");
        assert_eq!((result["count"].as_u64(), result["truncated"].as_bool()), (Some(1), Some(true)));
        capped.max_matches = 100;
        capped.max_bytes = 5;
        assert_eq!(grep(&roots, &capped).expect("grep")["count"], 0);
        assert!(matches!(grep(&roots, &request(".", "(", true)), Err(ToolError::Bad(_))));
        assert!(matches!(grep(&roots, &request("..", "x", false)), Err(ToolError::Root(_))));
    }
}
