//! `herdr_fs_grep`: a regex or literal search of a file or a tree inside the project roots,
//! with ripgrep's crates (`ignore` walks, `grep-regex` matches, `grep-searcher` reads).
//!
//! Invariants:
//! - The walk is [`super::fs::walker`]'s: `.gitignore`-aware, `.git` skipped, symlinks
//!   neither followed nor searched. Binary files (a NUL byte) are skipped, and so are
//!   files with several names (hard links; counted in `hard_links_skipped`).
//! - A directory's files come from [`TreeCache`] (its snapshot, checked by stat on this
//!   call) or a fresh parallel walk, sorted by path (component order, the sorted walk's).
//!   Contiguous parts of that list are searched on parallel threads, each part stopping
//!   once its own matches pass a cap, and merged in order: the answer is a sorted
//!   search's, caps included (`order: "path"`), whatever the cache held. Cut by the
//!   deadline, it is the matches found in time (`order: "partial"`: another run can
//!   differ), and nothing is stored.
//! - A file of at most [`CACHE_FILE_MAX`] bytes is read whole and searched as one slice,
//!   from the disk or from the cache's copy alike, so both answer the same; a larger one is
//!   searched as a stream. Every read that reaches the disk goes through [`open_plain`].
//!   A call keeps a read file's bytes for the cache only while the cache's budget has room
//!   for them beside the snapshots and every other running call's ([`TreeCache::keep`]);
//!   otherwise it searches them and drops them, so memory stays bounded while calls run.
//! - At most `max_matches` matching lines and `max_bytes` of matched line text are
//!   returned (each line cut at [`MAX_LINE_CHARS`] characters); the search stops there and
//!   says so (`truncated`) only when a match beyond the cap exists. A regex is compiled with a size limit, so a hostile pattern is refused, not run.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use ignore::WalkState;
use serde_json::{json, Value};

use super::fs::{glob_matcher, walk_builder, ToolError};
use super::grep_cache::{CachedFile, Stamp, TreeCache, Walked, CACHE_FILE_MAX};
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

/// Searches (see the module invariants), through the runtime's [`TreeCache`].
pub fn grep(roots: &Roots, request: &GrepRequest) -> Result<Value, ToolError> {
    grep_with(TreeCache::shared(), roots, request, Instant::now() + super::fs::WALK_DEADLINE)
}

/// [`grep`] through `cache`, stopping at `deadline`.
pub fn grep_with(cache: &TreeCache, roots: &Roots, request: &GrepRequest, deadline: Instant) -> Result<Value, ToolError> {
    grep_inner(cache, roots, request, deadline)
}

/// Most memory the searcher's buffer may take for one file (a longer line skips the file).
pub const GREP_HEAP_LIMIT: usize = 16 * 1024 * 1024;

/// [`grep`], stopping at `deadline` ([`super::fs::WALK_DEADLINE`] after the start).
pub fn grep_until(roots: &Roots, request: &GrepRequest, deadline: Instant) -> Result<Value, ToolError> {
    grep_inner(TreeCache::shared(), roots, request, deadline)
}

fn grep_inner(cache: &TreeCache, roots: &Roots, request: &GrepRequest, deadline: Instant) -> Result<Value, ToolError> {
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
    let base_is_dir = std::fs::symlink_metadata(&base).map(|m| m.is_dir()).unwrap_or(false);
    let search = Search {
        base: &base,
        base_is_file: !base_is_dir,
        roots,
        refused: roots.refused().to_vec(),
        matcher,
        glob,
        max_matches: usize::try_from(request.max_matches).unwrap_or(usize::MAX),
        max_bytes: usize::try_from(request.max_bytes).unwrap_or(usize::MAX),
        deadline,
        hard_links: AtomicU64::new(0),
        moved: AtomicU64::new(0),
        cache,
        kept: AtomicUsize::new(0),
        changed: AtomicBool::new(false),
    };
    let threads = std::thread::available_parallelism().map_or(1, usize::from).clamp(1, 8);
    let (mut files, fresh) = if base_is_dir {
        search.listing(cache, threads)
    } else {
        let name = base.file_name().map_or_else(|| Arc::from(base.as_path()), |n| Arc::from(Path::new(n)));
        (vec![CachedFile { relative: name, stamp: None, content: None }], Fresh::Single)
    };
    let taken = TreeCache::now();
    let mut found = search.run(&mut files, threads);
    // Only a call that learnt a new stamp or kept new bytes has anything new for the cache.
    let stale = search.changed.load(Ordering::Relaxed);
    if matches!(fresh, Fresh::Late) && found.stopped.is_none() {
        // The walk itself was cut: files may be missing.
        found.stopped = Some(Stop::Deadline);
    }
    if found.stopped != Some(Stop::Deadline) {
        match fresh {
            // The store or refresh takes over the bytes the call kept.
            Fresh::No(generation) if stale => {
                cache.refresh(&base, &search.refused, generation, files, taken, search.kept.swap(0, Ordering::Relaxed));
            }
            Fresh::No(_) => {}
            Fresh::Walked(dirs, walked) => {
                cache.store(&base, &search.refused, Walked { dirs, files, taken: walked, kept: search.kept.swap(0, Ordering::Relaxed) });
            }
            Fresh::Late | Fresh::Single => {}
        }
    }
    // Cut by the deadline, the matches are the ones found in time, not the first ones in
    // path order: another run can return others.
    let order = if found.stopped == Some(Stop::Deadline) { "partial" } else { "path" };
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
    /// The base is a file (searched alone, shown by its name).
    base_is_file: bool,
    roots: &'a Roots,
    /// The places the walk skips (the cache's key with the base).
    refused: Vec<PathBuf>,
    matcher: RegexMatcher,
    glob: Option<globset::GlobMatcher>,
    max_matches: usize,
    max_bytes: usize,
    deadline: Instant,
    /// Files skipped as hard links.
    hard_links: AtomicU64,
    /// Files skipped because the open found them outside the base (a path swapped).
    moved: AtomicU64,
    /// The cache whose budget bounds the contents this call keeps.
    cache: &'a TreeCache,
    /// Bytes of content this call keeps for the cache (taken by [`TreeCache::keep`]).
    kept: AtomicUsize,
    /// A file's stamp learnt or its content kept: something new for the cache.
    changed: AtomicBool,
}

impl Drop for Search<'_> {
    /// The contents this call kept and did not hand to the cache are dropped.
    fn drop(&mut self) {
        self.cache.release(*self.kept.get_mut());
    }
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
/// A skipped hard link's stat (the open file's) is given in `link`, for the cache to skip
/// it again without opening it.
fn open_plain(path: &Path, base: &Path, hard_links: &AtomicU64, moved: &AtomicU64, link: &mut Option<Stamp>) -> Option<File> {
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
        *link = Some(Stamp::of(&meta));
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

/// What searching one file gave.
enum Outcome {
    /// Left out by the glob, unreadable, or not a regular file any more.
    Skipped,
    /// A file of several names.
    HardLink,
    /// Opened outside the base (a directory on its path swapped).
    Moved,
    /// Searched: the matching lines.
    Searched(Vec<Hit>),
}

/// One thread's part of a search: the outcome of each file it got to, in path order, and
/// whether the deadline stopped it.
struct Part {
    outcomes: Vec<Outcome>,
    late: bool,
}

impl Search<'_> {
    /// The files to search, in path order: the cache's walk when still current, else a
    /// fresh walk; and whether the walk was cut by the deadline.
    fn listing(&self, cache: &TreeCache, threads: usize) -> (Vec<CachedFile>, Fresh) {
        if let Some(listing) = cache.validate(self.base, &self.refused, threads) {
            return (listing.files, Fresh::No(listing.generation));
        }
        let taken = TreeCache::now();
        let walk = walk_builder(self.base, None, self.roots).threads(threads).build_parallel();
        let found: Mutex<(Vec<PathBuf>, Vec<PathBuf>)> = Mutex::new((Vec::new(), Vec::new()));
        let late = AtomicBool::new(false);
        walk.run(|| {
            let (found, late) = (&found, &late);
            Box::new(move |entry| {
                if Instant::now() >= self.deadline {
                    late.store(true, Ordering::Relaxed);
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else { return WalkState::Continue };
                let Some(kind) = entry.file_type() else { return WalkState::Continue };
                let mut found = found.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if kind.is_dir() {
                    found.0.push(entry.into_path());
                } else if kind.is_file() {
                    found.1.push(entry.into_path());
                }
                WalkState::Continue
            })
        });
        let (dirs, files) = found.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut files: Vec<CachedFile> = files
            .iter()
            .filter_map(|path| path.strip_prefix(self.base).ok())
            .map(|relative| CachedFile { relative: Arc::from(relative), stamp: None, content: None })
            .collect();
        // Path order is component order: the sorted walk's (`a/x` before `a.txt`).
        files.sort_unstable_by(|a, b| a.relative.cmp(&b.relative));
        if late.into_inner() {
            return (files, Fresh::Late);
        }
        (files, Fresh::Walked(dirs, taken))
    }

    /// Searches one file: its cached content, or the disk through [`open_plain`] (the
    /// content read is handed back in `file` for the cache).
    fn one(&self, searcher: &mut Searcher, file: &mut CachedFile, hits: &mut Vec<Hit>, stop: &mut dyn FnMut(&Hit) -> bool) -> Outcome {
        if self.glob.as_ref().is_some_and(|g| !g.is_match(&*file.relative)) {
            return Outcome::Skipped;
        }
        if file.content.is_none() && file.stamp.is_some_and(|s| s.is_hard_link()) {
            return Outcome::HardLink;
        }
        let content = match &file.content {
            Some(content) => Some(content.clone()),
            None => {
                let path = if self.base_is_file { self.base.to_path_buf() } else { self.base.join(&file.relative) };
                let (hard_links, moved) = (AtomicU64::new(0), AtomicU64::new(0));
                let mut link = None;
                let Some(mut opened) = open_plain(&path, self.base, &hard_links, &moved, &mut link) else {
                    return if hard_links.into_inner() > 0 {
                        if link.is_some() && file.stamp != link {
                            file.stamp = link;
                            self.changed.store(true, Ordering::Relaxed);
                        }
                        Outcome::HardLink
                    } else if moved.into_inner() > 0 {
                        Outcome::Moved
                    } else {
                        Outcome::Skipped
                    };
                };
                let Ok(meta) = opened.metadata() else { return Outcome::Skipped };
                let stamp = Stamp::of(&meta);
                if file.stamp != Some(stamp) {
                    file.stamp = Some(stamp);
                    self.changed.store(true, Ordering::Relaxed);
                }
                if stamp.size() <= CACHE_FILE_MAX {
                    // Read whole (as the cache keeps it), so a cached and a fresh search of
                    // the same bytes answer the same.
                    let mut bytes = Vec::with_capacity(usize::try_from(stamp.size()).unwrap_or(0));
                    if (&mut opened).take(CACHE_FILE_MAX + 1).read_to_end(&mut bytes).is_err() {
                        return Outcome::Skipped;
                    }
                    let bytes: Arc<[u8]> = Arc::from(bytes);
                    // Grown or shrunk while read, or no room in the cache's budget now:
                    // searched as read, not kept.
                    if bytes.len() as u64 == stamp.size() && self.cache.keep(bytes.len()) {
                        self.kept.fetch_add(bytes.len(), Ordering::Relaxed);
                        self.changed.store(true, Ordering::Relaxed);
                        file.content = Some(bytes.clone());
                    }
                    Some(bytes)
                } else {
                    let _ = searcher.search_file(&self.matcher, &opened, sink(hits, stop));
                    return Outcome::Searched(std::mem::take(hits));
                }
            }
        };
        if let Some(content) = content {
            // A search error ends the file's search with what was found, as ripgrep does.
            let _ = searcher.search_slice(&self.matcher, &content, sink(hits, stop));
        }
        Outcome::Searched(std::mem::take(hits))
    }

    /// Searches `files` in path order on up to `threads` threads, one contiguous part
    /// each, and merges the parts in order: the answer of one sorted search, stopping at
    /// the first cap reached. A part stops once its own matches pass a cap (the matches
    /// before it in path order only add to them, so the answer's cut is not later).
    fn run(&self, files: &mut [CachedFile], threads: usize) -> Found {
        let chunk = files.len().div_ceil(threads.max(1)).max(1);
        let parts: Vec<Part> = std::thread::scope(|scope| {
            let handles: Vec<_> = files
                .chunks_mut(chunk)
                .map(|part| {
                    scope.spawn(move || {
                        let mut searcher = searcher();
                        let mut hits = Vec::new();
                        let (mut count, mut bytes, mut capped) = (0usize, 0usize, false);
                        let mut outcomes = Vec::with_capacity(part.len());
                        let mut late = false;
                        for file in part.iter_mut() {
                            if Instant::now() >= self.deadline {
                                late = true;
                                break;
                            }
                            let mut stop = |hit: &Hit| {
                                count += 1;
                                bytes += hit.1.len();
                                capped = count > self.max_matches || bytes > self.max_bytes;
                                capped
                            };
                            outcomes.push(self.one(&mut searcher, file, &mut hits, &mut stop));
                            if capped {
                                break;
                            }
                        }
                        Part { outcomes, late }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
        });
        let mut found = Found { matches: Vec::new(), files_searched: 0, stopped: None };
        let mut bytes = 0usize;
        let mut index = 0usize;
        'parts: for part in parts {
            let start = index;
            index += chunk;
            for (offset, outcome) in part.outcomes.into_iter().enumerate() {
                let hits = match outcome {
                    Outcome::Skipped => continue,
                    Outcome::HardLink => {
                        self.hard_links.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    Outcome::Moved => {
                        self.moved.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    Outcome::Searched(hits) => hits,
                };
                found.files_searched += 1;
                if hits.is_empty() {
                    continue;
                }
                let shown = files.get(start + offset).map(|f| f.relative.to_string_lossy().into_owned()).unwrap_or_default();
                for (line, text, cut) in hits {
                    // A match beyond the cap exists: only then is the answer cut.
                    if found.matches.len() >= self.max_matches {
                        found.stopped = Some(Stop::Matches);
                        break 'parts;
                    }
                    if bytes + text.len() > self.max_bytes {
                        found.stopped = Some(Stop::Bytes);
                        break 'parts;
                    }
                    bytes += text.len();
                    found.matches.push(hit_json(&shown, (line, text, cut)));
                }
            }
            if part.late {
                found.stopped = Some(Stop::Deadline);
                break;
            }
        }
        found
    }
}

/// The searcher's sink: each matching line cut and kept, until `stop` says a cap is passed.
fn sink<'h>(
    hits: &'h mut Vec<Hit>,
    stop: &'h mut dyn FnMut(&Hit) -> bool,
) -> Lossy<impl FnMut(u64, &str) -> Result<bool, std::io::Error> + 'h> {
    Lossy(move |line_number, line| {
        let (text, cut) = cut_line(line);
        let hit = (line_number, text.to_owned(), cut);
        let over = stop(&hit);
        hits.push(hit);
        Ok(!over)
    })
}

/// Whether a listing came from a fresh walk.
enum Fresh {
    /// From the cache: the generation of the snapshot validated.
    No(u64),
    /// A full walk: its directories and when it started, for the cache.
    Walked(Vec<PathBuf>, i128),
    /// A walk cut by the deadline: not kept.
    Late,
    /// A file searched alone: not kept.
    Single,
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
        assert!(open_plain(&listed, &base, &links, &moved, &mut None).is_some());
        std::fs::remove_dir_all(base.join("src")).expect("rm");
        std::os::unix::fs::symlink(outside.path().join("src"), base.join("src")).expect("symlink");
        assert!(open_plain(&listed, &base, &links, &moved, &mut None).is_none());
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
