//! `herdr_fs_grep`: a regex or literal search of a file or a tree inside the project roots,
//! with ripgrep's crates (`ignore` walks, `grep-regex` matches, `grep-searcher` reads).
//!
//! Invariants:
//! - The walk is [`super::fs::walker`]'s: `.gitignore`-aware, `.git` skipped, symlinks
//!   neither followed nor searched. Binary files (a NUL byte) are skipped, and so are
//!   files with several names (hard links; counted in `hard_links_skipped`).
//! - A directory is searched by `ignore`'s parallel walker, one searcher and matcher per
//!   thread; the matches are collected and sorted by path (component order, the sorted
//!   walk's), so the answer is the same as a sorted walk's (`order: "path"`). Cut by the
//!   deadline, it is the matches found in time (`order: "partial"`: another run can
//!   differ). When a match beyond a cap exists,
//!   which ones are kept depends on order: the search then runs again as the sorted walk,
//!   stopping at the cap.
//! - At most `max_matches` matching lines and `max_bytes` of matched line text are
//!   returned (each line cut at [`MAX_LINE_CHARS`] characters); the search stops there and
//!   says so (`truncated`) only when a match beyond the cap exists. A regex is compiled with a size limit, so a hostile pattern is refused, not run.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use ignore::WalkState;
use serde_json::{json, Value};

use super::fs::{glob_matcher, walk_builder, walker, ToolError};
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
    grep_until(roots, request, Instant::now() + super::fs::WALK_DEADLINE)
}

/// Most memory the searcher's buffer may take for one file (a longer line skips the file).
pub const GREP_HEAP_LIMIT: usize = 16 * 1024 * 1024;

/// [`grep`], stopping at `deadline` ([`super::fs::WALK_DEADLINE`] after the start).
pub fn grep_until(roots: &Roots, request: &GrepRequest, deadline: Instant) -> Result<Value, ToolError> {
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
        .map_err(|e| {
            ToolError::Bad(format!(
                "pattern is not a valid regular expression ({e}); fix it, or send regex: false to search for the text as it is"
            ))
        })?;
    let glob = request.glob.as_deref().map(glob_matcher).transpose()?;
    let search = Search {
        base: &base,
        roots,
        matcher,
        glob,
        max_matches: usize::try_from(request.max_matches).unwrap_or(usize::MAX),
        max_bytes: usize::try_from(request.max_bytes).unwrap_or(usize::MAX),
        deadline,
        hard_links: AtomicU64::new(0),
        moved: AtomicU64::new(0),
    };
    let base_is_dir = std::fs::symlink_metadata(&base).map(|m| m.is_dir()).unwrap_or(false);
    // A tree is searched in parallel; when that reaches a cap, the matches kept are the
    // first ones in path order, which only the sorted walk knows: it runs again, in order.
    let found = if base_is_dir { search.parallel() } else { None };
    let (found, order) = match found {
        // Cut by the deadline, the parallel walk's matches are the ones found in time, not
        // the first ones in path order: another run can return others.
        Some(found) if found.stopped == Some(Stop::Deadline) => (found, "partial"),
        Some(found) => (found, "path"),
        None => (search.sorted(!base_is_dir), "path"),
    };
    let mut result = json!({
        "root": base,
        "pattern": request.pattern,
        "regex": request.regex,
        "matches": found.matches,
        "count": found.matches.len(),
        "files_searched": found.files_searched,
        "truncated": found.stopped.is_some(),
        "order": order,
    });
    let hard_links = search.hard_links.load(Ordering::Relaxed);
    if hard_links > 0 {
        result["hard_links_skipped"] = json!(hard_links);
        result["skipped"] = json!(format!("{hard_links} file(s) with several names (hard links) were not searched: another name may be outside the project roots; copy such a file into the root as a file of its own to search it"));
    }
    let moved = search.moved.load(Ordering::Relaxed);
    if moved > 0 {
        result["moved_skipped"] = json!(moved);
        result["moved"] = json!(format!("{moved} file(s) were not searched: a directory on their path changed during the search and they now lie outside {}; search again once the tree is stable", base.display()));
    }
    if found.stopped == Some(Stop::Deadline) {
        let which = if order == "partial" {
            "the matches are those found in time, not the first ones in path order, so another run can differ"
        } else {
            "the matches are the first ones in path order"
        };
        result["note"] = json!(format!(
            "stopped after {} s of searching ({which}); narrow the search with glob or a subdirectory",
            super::fs::WALK_DEADLINE.as_secs()
        ));
    } else if let Some(cap) = found.stopped {
        let cap = if cap == Stop::Bytes { "max_bytes" } else { "max_matches" };
        result["note"] = json!(format!("stopped at {cap}; narrow the search with glob or a subdirectory, or raise {cap}"));
    }
    Ok(result)
}

/// Why a search stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Deadline,
    Matches,
    Bytes,
}

/// What a search found: the matches in path order, then line order.
struct Found {
    matches: Vec<Value>,
    files_searched: u64,
    stopped: Option<Stop>,
}

/// One matching line: its number, its text (cut at [`MAX_LINE_CHARS`]) and whether it was cut.
type Hit = (u64, String, bool);

/// One search's settings, shared by its threads.
struct Search<'a> {
    base: &'a Path,
    roots: &'a Roots,
    matcher: RegexMatcher,
    glob: Option<globset::GlobMatcher>,
    max_matches: usize,
    max_bytes: usize,
    deadline: Instant,
    /// Files skipped as hard links.
    hard_links: AtomicU64,
    /// Files skipped because the open found them outside the base (a path swapped).
    moved: AtomicU64,
}

/// A matched line's text without its line end, cut at [`MAX_LINE_CHARS`] characters.
fn cut_line(line: &str) -> (&str, bool) {
    let text = line.trim_end_matches(['\n', '\r']);
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((end, _)) => (&text[..end], true),
        None => (text, false),
    }
}

/// Opens a file the walk found for searching: not through a symlink put in its place, and
/// `None` for a file with several names (a hard link: its other name may be outside every
/// root), counted in `hard_links`, and for a file the open found outside `base` (a
/// directory on its path swapped for a symlink after the walk listed it: `O_NOFOLLOW`
/// covers only the last name), counted in `moved`. Unreadable files are skipped, as
/// ripgrep does.
fn open_plain(path: &Path, base: &Path, hard_links: &AtomicU64, moved: &AtomicU64) -> Option<File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NOCTTY | libc::O_NONBLOCK).open(path).ok()?;
    if !opened_beneath(&file, path, base) {
        moved.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    if meta.nlink() > 1 {
        hard_links.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    Some(file)
}

/// Whether the open `file` (opened from `path`) is beneath `base`: by its
/// `/proc/self/fd` link where there is one, else by `path` canonicalised again being
/// beneath `base` and the same device and inode as the open file.
fn opened_beneath(file: &File, path: &Path, base: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::io::AsRawFd;
    if let Ok(now) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
        return now.starts_with(base);
    }
    let (Ok(opened), Ok(again)) = (file.metadata(), std::fs::canonicalize(path)) else { return false };
    let Ok(there) = std::fs::metadata(&again) else { return false };
    again.starts_with(base) && (opened.dev(), opened.ino()) == (there.dev(), there.ino())
}

fn searcher() -> Searcher {
    SearcherBuilder::new().heap_limit(Some(GREP_HEAP_LIMIT)).binary_detection(BinaryDetection::quit(0)).line_number(true).build()
}

fn hit_json(path: &str, (line, text, cut): Hit) -> Value {
    let mut item = json!({"path": path, "line": line, "text": text});
    if cut {
        item["cut"] = json!(true);
    }
    item
}

impl Search<'_> {
    /// The path shown for `path`: relative to the base directory (a file base: its name).
    fn relative<'p>(&self, path: &'p Path, base_is_file: bool) -> &'p Path {
        if base_is_file {
            path.file_name().map(Path::new).unwrap_or(path)
        } else {
            path.strip_prefix(self.base).unwrap_or(path)
        }
    }

    /// The parallel walk (ripgrep's): every file searched, the matches collected and
    /// sorted by path. `None` when the matches reach `max_matches` or `max_bytes` (the
    /// caller then runs [`Self::sorted`]).
    fn parallel(&self) -> Option<Found> {
        let threads = std::thread::available_parallelism().map_or(1, usize::from).clamp(1, 8);
        let walk = walk_builder(self.base, None, self.roots).threads(threads).build_parallel();
        let files: Mutex<Vec<(PathBuf, Vec<Hit>)>> = Mutex::new(Vec::new());
        let searched = AtomicU64::new(0);
        let (count, bytes) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let capped = AtomicBool::new(false);
        let late = AtomicBool::new(false);
        walk.run(|| {
            // Per thread: one searcher, one matcher, one buffer of hits.
            let mut searcher = searcher();
            let matcher = self.matcher.clone();
            let mut hits: Vec<Hit> = Vec::new();
            let (files, searched, count, bytes, capped, late) = (&files, &searched, &count, &bytes, &capped, &late);
            Box::new(move |entry| {
                if capped.load(Ordering::Relaxed) {
                    return WalkState::Quit;
                }
                if Instant::now() >= self.deadline {
                    late.store(true, Ordering::Relaxed);
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else { return WalkState::Continue };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                let relative = self.relative(entry.path(), false);
                if self.glob.as_ref().is_some_and(|g| !g.is_match(relative)) {
                    return WalkState::Continue;
                }
                let Some(file) = open_plain(entry.path(), self.base, &self.hard_links, &self.moved) else { return WalkState::Continue };
                searched.fetch_add(1, Ordering::Relaxed);
                // A read error ends the file's search with what was found, as ripgrep does.
                let _ = searcher.search_file(
                    &matcher,
                    &file,
                    Lossy(|line_number, line| {
                        let (text, cut) = cut_line(line);
                        let over_bytes = bytes.fetch_add(text.len(), Ordering::Relaxed) + text.len() > self.max_bytes;
                        // A match beyond the cap exists: only then is the answer cut.
                        let over_count = count.fetch_add(1, Ordering::Relaxed) + 1 > self.max_matches;
                        if over_bytes || over_count {
                            capped.store(true, Ordering::Relaxed);
                            return Ok(false);
                        }
                        hits.push((line_number, text.to_owned(), cut));
                        Ok(true)
                    }),
                );
                if capped.load(Ordering::Relaxed) {
                    return WalkState::Quit;
                }
                if !hits.is_empty() {
                    let found = (relative.to_path_buf(), std::mem::take(&mut hits));
                    files.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(found);
                }
                WalkState::Continue
            })
        });
        if capped.load(Ordering::Relaxed) {
            return None;
        }
        let mut files = files.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Path order is component order: the sorted walk's (`a/x` before `a.txt`).
        files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let matches = files.into_iter().flat_map(|(path, hits)| {
            let shown = path.to_string_lossy().into_owned();
            hits.into_iter().map(move |hit| hit_json(&shown, hit))
        });
        Some(Found {
            matches: matches.collect(),
            files_searched: searched.into_inner(),
            stopped: late.into_inner().then_some(Stop::Deadline),
        })
    }

    /// The sorted walk: files in path order, stopping at the first cap reached.
    fn sorted(&self, base_is_file: bool) -> Found {
        self.hard_links.store(0, Ordering::Relaxed);
        self.moved.store(0, Ordering::Relaxed);
        let mut searcher = searcher();
        let mut found = Found { matches: Vec::new(), files_searched: 0, stopped: None };
        let mut bytes = 0usize;
        for entry in walker(self.base, None, self.roots) {
            if Instant::now() >= self.deadline {
                found.stopped = Some(Stop::Deadline);
                break;
            }
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let relative = self.relative(entry.path(), base_is_file);
            if self.glob.as_ref().is_some_and(|g| !g.is_match(relative)) {
                continue;
            }
            let Some(file) = open_plain(entry.path(), self.base, &self.hard_links, &self.moved) else { continue };
            found.files_searched += 1;
            let shown = relative.to_string_lossy();
            let (matches, stopped) = (&mut found.matches, &mut found.stopped);
            // A read error ends the file's search with what was found, as ripgrep does.
            let _ = searcher.search_file(
                &self.matcher,
                &file,
                Lossy(|line_number, line| {
                    // A match beyond the cap exists: only then is the answer cut.
                    if matches.len() >= self.max_matches {
                        *stopped = Some(Stop::Matches);
                        return Ok(false);
                    }
                    let (text, cut) = cut_line(line);
                    if bytes + text.len() > self.max_bytes {
                        *stopped = Some(Stop::Bytes);
                        return Ok(false);
                    }
                    bytes += text.len();
                    matches.push(hit_json(&shown, (line_number, text.to_owned(), cut)));
                    Ok(true)
                }),
            );
            if found.stopped.is_some() {
                break;
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(root: &str, pattern: &str, regex: bool) -> GrepRequest {
        GrepRequest {
            root: root.to_owned(),
            pattern: pattern.to_owned(),
            regex,
            glob: None,
            case_insensitive: false,
            max_matches: 100,
            max_bytes: 10_000,
        }
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
        result["matches"]
            .as_array()
            .expect("matches")
            .iter()
            .map(|m| format!("{}:{}", m["path"].as_str().unwrap_or(""), m["line"]))
            .collect()
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

    /// The race of a directory swapped after the walk listed it, made deterministic: the
    /// walk's path is opened after its directory became a symlink to one outside.
    #[test]
    fn a_file_opened_outside_the_base_through_a_swapped_directory_is_not_searched() {
        let (dir, _roots) = tree();
        let outside = tempfile::tempdir().expect("tempdir");
        let base = dir.path().canonicalize().expect("c");
        std::fs::create_dir_all(outside.path().join("src")).expect("mkdir");
        std::fs::write(outside.path().join("src/a.rs"), "SECRET needle\n").expect("w");
        let listed = base.join("src/a.rs");
        let (links, moved) = (AtomicU64::new(0), AtomicU64::new(0));
        assert!(open_plain(&listed, &base, &links, &moved).is_some());
        std::fs::remove_dir_all(base.join("src")).expect("rm");
        std::os::unix::fs::symlink(outside.path().join("src"), base.join("src")).expect("symlink");
        assert!(open_plain(&listed, &base, &links, &moved).is_none());
        assert_eq!((links.into_inner(), moved.into_inner()), (0, 1));
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
