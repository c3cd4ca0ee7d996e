//! `herdr_fs_grep`'s tree cache: a second search after any change in the tree sees the
//! change (the cache's stats find it), and a cached search answers exactly what a search
//! with an empty cache answers.
//!
//! The cache distrusts stats newer than its racy window (two seconds in the runtime); these
//! tests use a window of zero so the cached path runs at once, and wait for the file
//! system's clock to tick ([`tick`]) before each change, as two seconds would.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use companion::tools::grep::{grep_with, GrepRequest};
use companion::tools::grep_cache::{CachedFile, Stamp, TreeCache, Walked, RACY_WINDOW};
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

    // Edited in place, the same size, and its mtime set back: only its ctime tells.
    let a = w.root.join("src/a.rs");
    let before = std::fs::metadata(&a).expect("stat");
    std::fs::write(&a, "fn noodle() {}\nlet needle\n").expect("edit");
    std::fs::File::options().write(true).open(&a).and_then(|f| f.set_modified(before.modified()?)).expect("mtime back");
    let after = std::fs::metadata(&a).expect("stat");
    assert_eq!((after.len(), after.modified().ok()), (before.len(), before.modified().ok()), "same size, same mtime");
    check("edited", &["gen/out.rs:1:needle generated", "src/a.rs:2:let needle", "src/deep/b.rs:1:// needle in deep"]);
    // Created in a directory already walked.
    std::fs::write(w.root.join("docs/new.md"), "a needle too\n").expect("create");
    check(
        "created",
        &["docs/new.md:1:a needle too", "gen/out.rs:1:needle generated", "src/a.rs:2:let needle", "src/deep/b.rs:1:// needle in deep"],
    );
    // Deleted.
    std::fs::remove_file(w.root.join("docs/new.md")).expect("delete");
    check("deleted", &["gen/out.rs:1:needle generated", "src/a.rs:2:let needle", "src/deep/b.rs:1:// needle in deep"]);
    // Renamed inside a directory, and into another one.
    std::fs::rename(w.root.join("src/deep/b.rs"), w.root.join("src/deep/z.rs")).expect("rename");
    check("renamed", &["gen/out.rs:1:needle generated", "src/a.rs:2:let needle", "src/deep/z.rs:1:// needle in deep"]);
    std::fs::rename(w.root.join("src/deep/z.rs"), w.root.join("docs/z.rs")).expect("move");
    check("moved", &["docs/z.rs:1:// needle in deep", "gen/out.rs:1:needle generated", "src/a.rs:2:let needle"]);
    // A .gitignore edited in place (the same size) now ignores gen/ and no longer *.log.
    std::fs::write(w.root.join(".gitignore"), "gen/\n\n").expect("gitignore");
    check("gitignore changed", &["docs/z.rs:1:// needle in deep", "src/a.rs:2:let needle", "x.log:1:needle log"]);
    // A nested .gitignore created.
    std::fs::write(w.root.join("docs/.gitignore"), "z.rs\n").expect("gitignore");
    check("nested gitignore", &["src/a.rs:2:let needle", "x.log:1:needle log"]);
    // A directory swapped for a symlink to outside the root: not followed.
    std::fs::rename(w.root.join("src/deep"), w.root.join("src/gone")).expect("rename dir");
    std::fs::remove_dir_all(w.root.join("src/gone")).expect("rm");
    std::os::unix::fs::symlink(&w.outside, w.root.join("src/deep")).expect("symlink dir");
    check("directory swapped for a symlink", &["src/a.rs:2:let needle", "x.log:1:needle log"]);
    // A file swapped for a symlink to a file outside: not searched.
    std::fs::remove_file(w.root.join("src/a.rs")).expect("rm");
    std::os::unix::fs::symlink(w.outside.join("secret.rs"), w.root.join("src/a.rs")).expect("symlink file");
    check("file swapped for a symlink", &["x.log:1:needle log"]);
    // A second name given to a file (a hard link): no longer searched, and said so.
    std::fs::hard_link(w.root.join("x.log"), w.outside.join("x.log")).expect("hard link");
    check("hard link", &[]);
    assert_eq!(search(&cache, &roots, &req)["hard_links_skipped"], 1);
}

/// The racy rule, with the walk's start given: a file read with a stat older than the racy
/// window is kept (and served while its stat holds), but one whose stat is within the
/// window of the read is not: an edit in the same clock tick, of the same size, would leave
/// that stat as it was, so the bytes read may already be stale. A walk whose directories
/// changed within the window is not stored at all.
#[test]
fn a_file_read_within_the_racy_window_of_its_change_is_not_kept() {
    let w = world();
    let a = Path::new("src/a.rs");
    let stamp = Stamp::of(&std::fs::metadata(w.root.join(a)).expect("stat"));
    // What a call read, before an edit in the same tick that left the stat as it was.
    let read: Arc<[u8]> = Arc::from(&b"fn needle() {}\nlet x = 0;\n"[..]);
    let file = CachedFile { relative: Arc::from(a), stamp: Some(stamp), content: Some(read.clone()) };
    let dirs = vec![w.root.clone(), w.root.join("src")];
    let walked = |taken: i128| Walked { dirs: dirs.clone(), files: vec![file.clone()], taken, kept: 0 };
    let ten_seconds_later = TreeCache::now() + 10_000_000_000;

    // Every stat 10 s older than the walk: nothing is racy, the bytes are kept.
    let cache = TreeCache::new(64 * 1024 * 1024, RACY_WINDOW);
    cache.store(&w.root, &[], walked(ten_seconds_later));
    let listing = cache.validate(&w.root, &[], 2).expect("stored");
    assert_eq!(listing.files[0].content.as_deref(), Some(&*read), "an old stat is trusted");
    // The same read refreshed by a call that started now: a.rs changed within the window.
    cache.refresh(&w.root, &[], listing.generation, vec![file.clone()], TreeCache::now(), 0);
    let listing = cache.validate(&w.root, &[], 2).expect("still stored");
    assert_eq!(listing.files[0].content, None, "a racy stat is not trusted: read from the disk again");

    // A walk that started now: its directories are racy, nothing is stored.
    let now = TreeCache::new(64 * 1024 * 1024, RACY_WINDOW);
    now.store(&w.root, &[], walked(TreeCache::now()));
    assert!(now.validate(&w.root, &[], 2).is_none());
    assert_eq!(now.snapshots(), 0);
}

/// Two calls on one tree, interleaved: A validates the snapshot, a file is created, B walks
/// and stores the newer snapshot, then A refreshes with its older file list. The newer
/// snapshot stays: the created file is searched from then on.
#[test]
fn a_refresh_never_gives_a_newer_snapshot_an_older_file_list() {
    let w = world();
    let roots = Roots::new([w.root.clone()], []);
    let cache = TreeCache::new(64 * 1024 * 1024, Duration::ZERO);
    let req = request(&w.root, "needle");
    tick(&w.probe);
    search(&cache, &roots, &req);
    let a = cache.validate(&w.root, roots.refused(), 2).expect("call A validates");
    tick(&w.probe);
    std::fs::write(w.root.join("docs/new.md"), "a needle too\n").expect("create");
    tick(&w.probe);
    search(&cache, &roots, &req);
    // A read one file again (its stamp learnt anew) and ends.
    let mut files = a.files;
    files[0].content = None;
    cache.refresh(&w.root, roots.refused(), a.generation, files, TreeCache::now(), 0);
    let cached = search(&cache, &roots, &req);
    assert!(hits(&cached).contains(&"docs/new.md:1:a needle too".to_owned()), "{cached}");
    assert_eq!(cached, search(&TreeCache::new(0, Duration::ZERO), &roots, &req));
}

/// A `.gitignore` that is a symlink to a file outside the searched directory: `ignore`
/// reads the target, so an in-place edit of the target (the same size, nothing in the
/// searched tree changed) is seen.
#[test]
fn an_edit_of_a_symlinked_gitignores_target_is_seen() {
    let w = world();
    let roots = Roots::new([w.root.clone()], []);
    let (pkg, shared) = (w.root.join("pkg"), w.root.join("shared"));
    std::fs::create_dir_all(pkg.join("gen")).expect("mkdir");
    std::fs::create_dir_all(&shared).expect("mkdir");
    std::fs::write(shared.join("gitignore"), "gen/\n").expect("write");
    std::os::unix::fs::symlink("../shared/gitignore", pkg.join(".gitignore")).expect("symlink");
    std::fs::write(pkg.join("gen/a.rs"), "needle gen\n").expect("write");
    std::fs::write(pkg.join("b.md"), "needle md\n").expect("write");
    let cache = TreeCache::new(64 * 1024 * 1024, Duration::ZERO);
    let req = request(&pkg, "needle");
    tick(&w.probe);
    assert_eq!(hits(&search(&cache, &roots, &req)), ["b.md:1:needle md"]);
    assert_eq!(cache.snapshots(), 1);
    tick(&w.probe);
    std::fs::write(shared.join("gitignore"), "*.md\n").expect("edit");
    tick(&w.probe);
    let cached = search(&cache, &roots, &req);
    assert_eq!(hits(&cached), ["gen/a.rs:1:needle gen"]);
    assert_eq!(cached, search(&TreeCache::new(0, Duration::ZERO), &roots, &req));
}

/// A snapshot's listing (its paths and stats) counts in the budget: a listing larger than
/// the budget is not kept, and at most 16 directories are.
#[test]
fn a_snapshots_listing_counts_in_the_budget() {
    let w = world();
    let roots = Roots::new([w.root.clone()], []);
    for i in 0..300 {
        std::fs::write(w.root.join(format!("docs/empty{i:03}.txt")), "").expect("write");
    }
    for k in 0..17 {
        std::fs::create_dir_all(w.root.join(format!("k/{k:02}"))).expect("mkdir");
        std::fs::write(w.root.join(format!("k/{k:02}/n.txt")), "needle\n").expect("write");
    }
    tick(&w.probe);
    let req = request(&w.root, "needle");
    let fresh = search(&TreeCache::new(0, Duration::ZERO), &roots, &req);
    let roomy = TreeCache::new(64 * 1024 * 1024, Duration::ZERO);
    assert_eq!(search(&roomy, &roots, &req), fresh);
    let listing = roomy.bytes();
    assert!(listing > 300 * std::mem::size_of::<CachedFile>(), "the 300 empty files' listing is counted: {listing} bytes");
    let small = TreeCache::new(listing / 2, Duration::ZERO);
    assert_eq!(search(&small, &roots, &req), fresh);
    assert_eq!(small.snapshots(), 0, "a listing larger than the budget is not kept");
    assert!(small.peak() <= listing / 2);
    for k in 0..17 {
        search(&roomy, &roots, &request(&w.root.join(format!("k/{k:02}")), "needle"));
    }
    assert_eq!(roomy.snapshots(), 16);
}

/// A call keeps at most the budget of what it reads, even before it stores, and two calls
/// running at once share that budget; both answer what a fresh search answers.
#[test]
fn running_calls_keep_at_most_the_budget() {
    let make = |w: &World| {
        for i in 0..40 {
            std::fs::write(w.root.join(format!("docs/f{i:02}.txt")), format!("{}needle {i}\n", "x".repeat(990))).expect("write");
        }
    };
    let (one, two) = (world(), world());
    make(&one);
    make(&two);
    tick(&one.probe);
    let roots = Roots::new([one.root.clone(), two.root.clone()], []);
    let (req1, req2) = (request(&one.root, "needle"), request(&two.root, "needle"));
    let fresh1 = search(&TreeCache::new(0, Duration::ZERO), &roots, &req1);
    let fresh2 = search(&TreeCache::new(0, Duration::ZERO), &roots, &req2);
    let budget = 30_000;
    let cache = TreeCache::new(budget, Duration::ZERO);
    assert_eq!(search(&cache, &roots, &req1), fresh1);
    assert!(cache.peak() <= budget, "one call held {} bytes", cache.peak());
    let cache = TreeCache::new(budget, Duration::ZERO);
    let (got1, got2) = std::thread::scope(|scope| {
        let a = scope.spawn(|| search(&cache, &roots, &req1));
        let b = scope.spawn(|| search(&cache, &roots, &req2));
        (a.join().expect("a"), b.join().expect("b"))
    });
    assert_eq!((got1, got2), (fresh1.clone(), fresh2));
    assert!(cache.peak() <= budget, "two calls held {} bytes", cache.peak());
    assert!(cache.bytes() <= budget);
    assert_eq!(search(&cache, &roots, &req1), fresh1);
}

/// A world with 40 more files of 1 000 bytes each that all match, its roots, the search and
/// what a search with an empty cache answers.
fn forty_kilobyte_files() -> (World, Roots, GrepRequest, Value) {
    let w = world();
    for i in 0..40 {
        std::fs::write(w.root.join(format!("docs/f{i:02}.txt")), format!("{}needle {i}\n", "x".repeat(990))).expect("write");
    }
    tick(&w.probe);
    let roots = Roots::new([w.root.clone()], []);
    let req = request(&w.root, "needle");
    let fresh = search(&TreeCache::new(0, Duration::ZERO), &roots, &req);
    (w, roots, req, fresh)
}

/// Another call's kept bytes leave too little room for even this call's listing: the walk
/// is not stored, so the budget is never passed (it was: the listing went in beside them;
/// the race above showed it as two calls holding 42 034 of 30 000 B).
#[test]
fn a_listing_that_does_not_fit_beside_a_running_call_is_not_stored() {
    let (_world, roots, req, fresh) = forty_kilobyte_files();
    let budget = 30_000;
    let cache = TreeCache::new(budget, Duration::ZERO);
    assert!(cache.keep(budget - 100), "another running call holds nearly the whole budget");
    assert_eq!(search(&cache, &roots, &req), fresh);
    assert!(cache.peak() <= budget, "held {} of {budget} bytes", cache.peak());
    assert_eq!(cache.snapshots(), 0, "no room for the listing: nothing stored");
}

/// A tree with a hard link stays cached: the link's stat is kept, so a later call skips it
/// without opening it (still counted as skipped).
#[test]
fn a_hard_links_stat_is_kept_so_its_tree_stays_cached() {
    let w = world();
    let roots = Roots::new([w.root.clone()], []);
    std::fs::hard_link(w.root.join("src/deep/b.rs"), w.outside.join("b.rs")).expect("hard link");
    tick(&w.probe);
    let cache = TreeCache::new(64 * 1024 * 1024, Duration::ZERO);
    let req = request(&w.root, "needle");
    let fresh = search(&TreeCache::new(0, Duration::ZERO), &roots, &req);
    assert_eq!(fresh["hard_links_skipped"], 1);
    assert_eq!(search(&cache, &roots, &req), fresh);
    let listing = cache.validate(&w.root, roots.refused(), 2).expect("cached");
    let link = listing.files.iter().find(|f| &*f.relative == Path::new("src/deep/b.rs")).expect("listed");
    assert!(link.stamp.is_some_and(|s| s.is_hard_link()), "the hard link's stat is kept");
    assert_eq!(search(&cache, &roots, &req), fresh);
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
    let fresh = search(&TreeCache::new(0, Duration::ZERO), &roots, &req);
    let roomy = TreeCache::new(usize::MAX, Duration::ZERO);
    assert_eq!(search(&roomy, &roots, &req), fresh);
    assert!(roomy.bytes() < 300 * 1024, "the big file is not held: {} bytes", roomy.bytes());
    // Room for everything but 1000 bytes of content.
    let budget = roomy.bytes() - 1000;
    let small = TreeCache::new(budget, Duration::ZERO);
    for _ in 0..3 {
        assert_eq!(search(&small, &roots, &req), fresh);
        assert!(small.bytes() <= budget, "{} bytes held", small.bytes());
        assert!(small.peak() <= budget, "{} bytes at the peak", small.peak());
        assert!(small.files_held() > 0 && small.files_held() < roomy.files_held());
    }
    // Least recently used first: a second tree's snapshot pushes the first one's content out.
    let other = tempfile::tempdir().expect("tempdir");
    let other_root = other.path().canonicalize().expect("canonical");
    std::fs::write(other_root.join("o.txt"), format!("{}needle\n", "z".repeat(900))).expect("write");
    tick(&w.probe);
    let both = Roots::new([w.root.clone(), other_root.clone()], []);
    search(&small, &both, &request(&other_root, "needle"));
    assert!(small.bytes() <= budget, "{} bytes held", small.bytes());
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
        // A budget that keeps part of the tree, and the runtime's budget; both store (the
        // racy rule is covered above, with the walk's start given).
        let cache = TreeCache::new(16 * 1024, Duration::ZERO);
        let runtime = TreeCache::new(64 * 1024 * 1024, Duration::ZERO);
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
                prop_assert_eq!(runtime.snapshots(), 1, "the runtime-sized cache stores the walk");
            }
            tick(&w.probe);
            for c in &round {
                apply(&w.root, &w.outside, c);
            }
        }
    }
}

/// A refresh keeps only the contents that fit beside the other running calls' bytes,
/// whatever the call hands in: here a call read again every file the first walk could not
/// keep (another call held half the budget then, and still does), and the snapshot still
/// stays within what that call leaves.
#[test]
fn a_refresh_keeps_only_what_fits_beside_a_running_call() {
    let (w, roots, req, fresh) = forty_kilobyte_files();
    let budget = 60_000;
    let other = 30_000;
    let cache = TreeCache::new(budget, Duration::ZERO);
    assert!(cache.keep(other), "another running call holds half the budget");
    assert_eq!(search(&cache, &roots, &req), fresh);
    assert!(cache.bytes() + other <= budget, "the walk is stored beside it: {} B", cache.bytes());
    let listing = cache.validate(&w.root, roots.refused(), 2).expect("stored");
    assert!(listing.files.iter().any(|f| f.content.is_none()), "some contents did not fit");
    let taken = TreeCache::now();
    let files: Vec<CachedFile> = listing
        .files
        .into_iter()
        .map(|f| {
            let content = std::fs::read(w.root.join(&*f.relative)).expect("read");
            CachedFile { content: Some(content.into()), ..f }
        })
        .collect();
    cache.refresh(&w.root, roots.refused(), listing.generation, files, taken, 0);
    assert_eq!(cache.snapshots(), 1, "refreshed in place");
    assert!(cache.bytes() + other <= budget, "the refreshed snapshot ({} B) fits beside the running call ({other} B)", cache.bytes());
    assert!(cache.peak() <= budget, "held {} of {budget} bytes", cache.peak());
    cache.release(other);
    assert_eq!(search(&cache, &roots, &req), fresh);
}
