//! `herdr_fs_grep`'s tree cache: a second search after any change in the tree sees the
//! change (the cache's stats find it), and a cached search answers exactly what a search
//! with an empty cache answers.
//!
//! The cache distrusts stats newer than its racy window (two seconds in the runtime); these
//! tests use a window of zero so the cached path runs at once, and wait for the file
//! system's clock to tick ([`tick`]) before each change, as two seconds would.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use companion::tools::grep::{grep_with, GrepRequest};
use companion::tools::grep_cache::TreeCache;
use companion::tools::roots::Roots;
use proptest::prelude::*;
use serde_json::Value;

fn request(root: &Path, pattern: &str) -> GrepRequest {
    GrepRequest {
        root: root.display().to_string(),
        pattern: pattern.to_owned(),
        regex: false,
        glob: None,
        case_insensitive: false,
        max_matches: 1000,
        max_bytes: 256 * 1024,
    }
}

fn search(cache: &TreeCache, roots: &Roots, request: &GrepRequest) -> Value {
    grep_with(cache, roots, request, Instant::now() + Duration::from_secs(30)).expect("grep")
}

fn hits(result: &Value) -> Vec<String> {
    result["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .map(|m| format!("{}:{}:{}", m["path"].as_str().unwrap_or(""), m["line"], m["text"].as_str().unwrap_or("")))
        .collect()
}

/// Waits until the file system's clock (the one that stamps mtime and ctime) has moved past
/// every stamp in the tree, by rewriting a probe file beside it: a change made after this
/// gets a newer stamp than anything the cache saw.
fn tick(probe: &Path) {
    std::fs::write(probe, b"a").expect("probe");
    let first = std::fs::metadata(probe).and_then(|m| m.modified()).expect("mtime");
    loop {
        std::fs::write(probe, b"b").expect("probe");
        if std::fs::metadata(probe).and_then(|m| m.modified()).expect("mtime") > first {
            return;
        }
        std::thread::yield_now();
    }
}

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    probe: PathBuf,
}

fn world() -> World {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().canonicalize().expect("canonical");
    let (root, outside) = (base.join("root"), base.join("outside"));
    for d in ["src/deep", "docs", "gen"] {
        std::fs::create_dir_all(root.join(d)).expect("mkdir");
    }
    std::fs::create_dir_all(&outside).expect("mkdir");
    let w = |path: &str, text: &str| std::fs::write(root.join(path), text).expect("write");
    w(".gitignore", "*.log\n");
    w("src/a.rs", "fn needle() {}\nlet x = 1;\n");
    w("src/deep/b.rs", "// needle in deep\n");
    w("docs/c.md", "no match here\n");
    w("gen/out.rs", "needle generated\n");
    w("x.log", "needle log\n");
    std::fs::write(outside.join("secret.rs"), "needle SECRET outside\n").expect("write");
    World { probe: base.join("probe"), _dir: dir, root, outside }
}

/// Every kind of change between two searches is seen by the second, and the cached answer
/// is the fresh one each time.
#[test]
fn a_cached_grep_sees_every_change_made_between_two_greps() {
    let w = world();
    let roots = Roots::new([w.root.clone()], []);
    let cache = TreeCache::new(64 * 1024 * 1024, Duration::ZERO);
    let req = request(&w.root, "needle");
    let check = |what: &str, expected: &[&str]| {
        let cached = search(&cache, &roots, &req);
        let fresh = search(&TreeCache::new(64 * 1024 * 1024, Duration::ZERO), &roots, &req);
        assert_eq!(hits(&cached), expected, "{what}: {cached}");
        assert_eq!(cached, fresh, "{what}: the cached answer is the fresh one");
        tick(&w.probe);
    };
    tick(&w.probe);
    check("first search", &["gen/out.rs:1:needle generated", "src/a.rs:1:fn needle() {}", "src/deep/b.rs:1:// needle in deep"]);
    assert_eq!(cache.files_held(), 5, "the walk's files are held: {}", cache.bytes());
    check("unchanged", &["gen/out.rs:1:needle generated", "src/a.rs:1:fn needle() {}", "src/deep/b.rs:1:// needle in deep"]);

    // Edited in place, the same size.
    std::fs::write(w.root.join("src/a.rs"), "fn noodle() {}\nlet needle=1;\n").expect("edit");
    check("edited", &["gen/out.rs:1:needle generated", "src/a.rs:2:let needle=1;", "src/deep/b.rs:1:// needle in deep"]);
    // Created in a directory already walked.
    std::fs::write(w.root.join("docs/new.md"), "a needle too\n").expect("create");
    check(
        "created",
        &["docs/new.md:1:a needle too", "gen/out.rs:1:needle generated", "src/a.rs:2:let needle=1;", "src/deep/b.rs:1:// needle in deep"],
    );
    // Deleted.
    std::fs::remove_file(w.root.join("docs/new.md")).expect("delete");
    check("deleted", &["gen/out.rs:1:needle generated", "src/a.rs:2:let needle=1;", "src/deep/b.rs:1:// needle in deep"]);
    // Renamed inside a directory, and into another one.
    std::fs::rename(w.root.join("src/deep/b.rs"), w.root.join("src/deep/z.rs")).expect("rename");
    check("renamed", &["gen/out.rs:1:needle generated", "src/a.rs:2:let needle=1;", "src/deep/z.rs:1:// needle in deep"]);
    std::fs::rename(w.root.join("src/deep/z.rs"), w.root.join("docs/z.rs")).expect("move");
    check("moved", &["docs/z.rs:1:// needle in deep", "gen/out.rs:1:needle generated", "src/a.rs:2:let needle=1;"]);
    // A .gitignore edited in place (the same size) now ignores gen/ and no longer *.log.
    std::fs::write(w.root.join(".gitignore"), "gen/\n\n").expect("gitignore");
    check("gitignore changed", &["docs/z.rs:1:// needle in deep", "src/a.rs:2:let needle=1;", "x.log:1:needle log"]);
    // A nested .gitignore created.
    std::fs::write(w.root.join("docs/.gitignore"), "z.rs\n").expect("gitignore");
    check("nested gitignore", &["src/a.rs:2:let needle=1;", "x.log:1:needle log"]);
    // A directory swapped for a symlink to outside the root: not followed.
    std::fs::rename(w.root.join("src/deep"), w.root.join("src/gone")).expect("rename dir");
    std::fs::remove_dir_all(w.root.join("src/gone")).expect("rm");
    std::os::unix::fs::symlink(&w.outside, w.root.join("src/deep")).expect("symlink dir");
    check("directory swapped for a symlink", &["src/a.rs:2:let needle=1;", "x.log:1:needle log"]);
    // A file swapped for a symlink to a file outside: not searched.
    std::fs::remove_file(w.root.join("src/a.rs")).expect("rm");
    std::os::unix::fs::symlink(w.outside.join("secret.rs"), w.root.join("src/a.rs")).expect("symlink file");
    check("file swapped for a symlink", &["x.log:1:needle log"]);
    // A second name given to a file (a hard link): no longer searched, and said so.
    std::fs::hard_link(w.root.join("x.log"), w.outside.join("x.log")).expect("hard link");
    check("hard link", &[]);
    assert_eq!(search(&cache, &roots, &req)["hard_links_skipped"], 1);
}

/// A file edited within the same clock tick as the cache's read, with the same size, is
/// still seen in the runtime's configuration: its stat is racy, so it is read again.
#[test]
fn a_same_size_edit_right_after_a_search_is_seen_through_the_racy_window() {
    let w = world();
    let roots = Roots::new([w.root.clone()], []);
    let cache = TreeCache::new(64 * 1024 * 1024, companion::tools::grep_cache::RACY_WINDOW);
    let req = request(&w.root, "needle");
    search(&cache, &roots, &req);
    std::fs::write(w.root.join("src/a.rs"), "fn noodle() {}\nlet needle=1;\n").expect("edit");
    assert!(hits(&search(&cache, &roots, &req)).contains(&"src/a.rs:2:let needle=1;".to_owned()));
    std::fs::write(w.root.join(".gitignore"), "gen/\n\n").expect("gitignore");
    assert!(hits(&search(&cache, &roots, &req)).contains(&"x.log:1:needle log".to_owned()));
}

/// The cache holds at most its budget of content, never a file over the per-file limit,
/// and answers the same with the rest read from the disk.
#[test]
fn the_cache_holds_at_most_its_budget() {
    let w = world();
    let roots = Roots::new([w.root.clone()], []);
    for i in 0..20 {
        std::fs::write(w.root.join(format!("docs/f{i:02}.txt")), format!("{}needle {i}\n", "x".repeat(90))).expect("write");
    }
    let big = format!("{}\nneedle big\n", "y".repeat(300 * 1024));
    std::fs::write(w.root.join("docs/big.txt"), &big).expect("write");
    tick(&w.probe);
    let req = request(&w.root, "needle");
    let fresh = search(&TreeCache::new(usize::MAX, Duration::ZERO), &roots, &req);
    let small = TreeCache::new(1000, Duration::ZERO);
    for _ in 0..3 {
        assert_eq!(search(&small, &roots, &req), fresh);
        assert!(small.bytes() <= 1000, "{} bytes held", small.bytes());
        assert!(small.files_held() > 0);
    }
    let roomy = TreeCache::new(usize::MAX, Duration::ZERO);
    assert_eq!(search(&roomy, &roots, &req), fresh);
    assert!(roomy.bytes() < 300 * 1024, "the big file is not held: {} bytes", roomy.bytes());
    // Least recently used first: a second tree's snapshot pushes the first one's content out.
    let other = tempfile::tempdir().expect("tempdir");
    let other_root = other.path().canonicalize().expect("canonical");
    std::fs::write(other_root.join("o.txt"), format!("{}needle\n", "z".repeat(900))).expect("write");
    tick(&w.probe);
    let both = Roots::new([w.root.clone(), other_root.clone()], []);
    search(&small, &both, &request(&other_root, "needle"));
    assert!(small.bytes() <= 1000, "{} bytes held", small.bytes());
    assert_eq!(search(&small, &roots, &req), fresh);
}

/// One random change to a tree.
#[derive(Debug, Clone)]
enum Change {
    Write { file: usize, text: String },
    Remove { file: usize },
    Rename { from: usize, to: usize },
    Ignore { pattern: usize },
    Link { file: usize },
}

const NAMES: [&str; 8] = ["a.rs", "b.txt", "d/c.rs", "d/e/f.md", "d/e/g.rs", "h/i.txt", "h/j.log", "k.bin"];
const PATTERNS: [&str; 4] = ["", "*.log\n", "d/e/\n", "*.rs\n!d/c.rs\n"];

fn change() -> impl Strategy<Value = Change> {
    let text = prop::collection::vec(prop::sample::select(vec!["needle", "noodle", "x", "needle needle", "\0", "\n", "NEEDLE "]), 0..6)
        .prop_map(|parts| parts.concat());
    prop_oneof![
        (0..NAMES.len(), text).prop_map(|(file, text)| Change::Write { file, text }),
        (0..NAMES.len()).prop_map(|file| Change::Remove { file }),
        (0..NAMES.len(), 0..NAMES.len()).prop_map(|(from, to)| Change::Rename { from, to }),
        (0..PATTERNS.len()).prop_map(|pattern| Change::Ignore { pattern }),
        (0..NAMES.len()).prop_map(|file| Change::Link { file }),
    ]
}

fn apply(root: &Path, outside: &Path, change: &Change) {
    let path = |i: usize| root.join(NAMES[i]);
    let ensure = |p: &Path| std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    match change {
        Change::Write { file, text } => {
            ensure(&path(*file));
            let _ = std::fs::remove_file(path(*file));
            std::fs::write(path(*file), text).expect("write");
        }
        Change::Remove { file } => {
            let _ = std::fs::remove_file(path(*file));
        }
        Change::Rename { from, to } => {
            ensure(&path(*to));
            let _ = std::fs::rename(path(*from), path(*to));
        }
        Change::Ignore { pattern } => std::fs::write(root.join(".gitignore"), PATTERNS[*pattern]).expect("gitignore"),
        Change::Link { file } => {
            let target = outside.join(format!("l{file}"));
            let _ = std::fs::remove_file(&target);
            let _ = std::fs::hard_link(path(*file), target);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]
    /// Random trees and random changes: after every change, the cached search answers what
    /// a search with an empty cache answers (literal and case-insensitive, with caps).
    #[test]
    fn a_cached_grep_answers_what_a_fresh_grep_answers(
        start in prop::collection::vec(change(), 1..10),
        rounds in prop::collection::vec(prop::collection::vec(change(), 1..4), 1..5),
        max_matches in 1u64..8,
    ) {
        let w = world();
        let roots = Roots::new([w.root.clone()], []);
        let cache = TreeCache::new(256, Duration::ZERO);
        let runtime = TreeCache::new(64 * 1024 * 1024, companion::tools::grep_cache::RACY_WINDOW);
        for c in &start {
            apply(&w.root, &w.outside, c);
        }
        let mut requests = vec![request(&w.root, "needle"), request(&w.root, "needle")];
        requests[1].case_insensitive = true;
        requests[1].max_matches = max_matches;
        for round in rounds {
            tick(&w.probe);
            for req in &requests {
                let fresh = search(&TreeCache::new(0, Duration::ZERO), &roots, req);
                prop_assert_eq!(search(&cache, &roots, req), fresh.clone());
                prop_assert_eq!(search(&runtime, &roots, req), fresh);
            }
            tick(&w.probe);
            for c in &round {
                apply(&w.root, &w.outside, c);
            }
        }
    }
}
