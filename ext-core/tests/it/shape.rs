//! The code's shape (issue 8, acceptance 1): no ext-core source file over 900 lines, each
//! opens with its purpose (`//!`), and ARCHITECTURE.md's codemap names every module of the
//! crate and of the continuity composition. And one size rule of the wasm (acceptance
//! "small"): no `&str` pattern method outside `text.rs` and tests.

use std::path::{Path, PathBuf};

const MAX_LINES: usize = 900;

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("ext-core/src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn no_source_file_is_over_900_lines_and_each_says_what_it_is_for() {
    let mut files = Vec::new();
    sources(&src(), &mut files);
    assert!(files.len() > 20, "found the sources: {files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a source file");
        let lines = text.lines().count();
        assert!(lines <= MAX_LINES, "{} has {lines} lines (at most {MAX_LINES}): move a concern into its own file", file.display());
        // Test modules (`sites/tests.rs`) say what they check the same way.
        assert!(text.starts_with("//!"), "{} does not open with a `//!` comment saying what it is for", file.display());
    }
}

#[test]
fn the_codemap_names_every_module() {
    let architecture = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    for dir in [src(), src().join("continuity")] {
        for entry in std::fs::read_dir(&dir).expect("a source directory") {
            let path = entry.expect("a directory entry").path();
            let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else { continue };
            if matches!(stem, "lib" | "mod") || path.extension().is_some_and(|e| e != "rs") && !path.is_dir() {
                continue;
            }
            let named = architecture.contains(&format!("`{stem}`")) || architecture.contains(&format!("`{stem}/`"));
            assert!(named, "ARCHITECTURE.md's codemap does not name `{stem}` ({})", path.display());
        }
    }
}

/// `str` methods that take a pattern; with a string literal they instantiate std's
/// substring searcher (ext-core `text`).
const STR_PATTERN_METHODS: &[&str] = &[
    "contains",
    "find",
    "rfind",
    "replace",
    "replacen",
    "split",
    "rsplit",
    "splitn",
    "rsplitn",
    "split_once",
    "rsplit_once",
    "split_terminator",
    "matches",
    "rmatches",
    "match_indices",
    "rmatch_indices",
    "trim_matches",
    "trim_start_matches",
    "trim_end_matches",
];

#[test]
fn no_str_pattern_search_reaches_the_wasm() {
    let mut files = Vec::new();
    sources(&src(), &mut files);
    sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../ext-shell/src"), &mut files);
    let mut found = Vec::new();
    for file in files {
        if file.ends_with("text.rs") || file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("a source file");
        // A file's own test module comes last (`#[cfg(test)]`): not in the wasm.
        let shipped = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in shipped.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            for method in STR_PATTERN_METHODS {
                // A literal or a named `&str` constant (`.rfind(TOOL)`): both instantiate the
                // searcher; a `char` or a closure does not.
                for call in code.split(&format!(".{method}(")).skip(1) {
                    if call.starts_with('"') || call.starts_with(|c: char| c.is_ascii_uppercase()) {
                        found.push(format!("{}:{}: .{method}({}…)", file.display(), n + 1, call.chars().take(12).collect::<String>()));
                    }
                }
            }
        }
    }
    assert!(found.is_empty(), "use ext_core::text (find_str / contains_str) or a char pattern instead:\n{}", found.join("\n"));
}

/// No `Debug` formatting (`{x:?}`) in code the wasm ships (ext-core, ext-shell, the
/// protocol crate; tests aside): a `str` or `char` printed with `Debug` brings std's escaping
/// and its Unicode tables, and with them the string-slicing panic's message (4.4 KB of the
/// wasm's gzip for one error text, issue 28). Name a value in backticks (`` `{x}` ``).
#[test]
fn no_debug_formatting_reaches_the_wasm() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [src(), root.join("../ext-shell/src"), root.join("../protocol/src")] {
        sources(&dir, &mut files);
    }
    let mut found = Vec::new();
    for file in files {
        if file.file_name().is_some_and(|n| n == "tests.rs") || file.components().any(|c| c.as_os_str() == "tests") {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("a source file");
        let shipped = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in shipped.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            if code.contains(":?}") || code.contains(":#?}") || code.contains("dbg!(") {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "no `Debug` formatting in the wasm's code; name the value in backticks instead:\n{}", found.join("\n"));
}

/// ext-shell only translates (issue 28, acceptance 1): the `Worker` decides, so no file of
/// `ext-shell/src` names a machine's output or state (`ContinuityOutput`, the link's
/// `Output` / `LinkState`), reads the continuity machine's state (`.continuity()`,
/// `.ledger()`, views, `tab_reload_accepted`, `snapshot_value`) or drains a machine other
/// than the worker (`.poll()` only as `worker.poll()`); and `driver.rs`, the JS handles
/// around the worker, stays under 400 lines and names no `ContinuityInput` (the settings
/// and native events that are continuity inputs one to one are translated in `lib.rs` and
/// `wire.rs` / `continuity_wire.rs`).
#[test]
fn ext_shell_decides_nothing_the_worker_could() {
    let shell = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ext-shell/src");
    let mut files = Vec::new();
    sources(&shell, &mut files);
    assert!(files.len() >= 5, "found ext-shell's sources: {files:?}");
    const NAMES: &[&str] = &[
        "ContinuityOutput",
        "LinkState",
        "companion_link::Output",
        "Output::",
        ".continuity()",
        ".ledger()",
        "page_view(",
        "panel_view(",
        "tab_reload_accepted",
        "snapshot_value",
        "CompanionLink",
    ];
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a source file");
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            for name in NAMES {
                let allowed = *name == "Output::" && code.contains("WorkerOutput::");
                assert!(
                    allowed || !code.contains(name),
                    "{}:{}: ext-shell names `{name}`; move the decision into ext_core::worker: {line}",
                    file.display(),
                    number + 1
                );
            }
            if code.contains(".poll()") {
                assert!(code.contains("worker.poll()"), "{}:{}: ext-shell drains a machine: {line}", file.display(), number + 1);
            }
        }
    }
    let driver = std::fs::read_to_string(shell.join("driver.rs")).expect("driver.rs");
    assert!(driver.lines().count() < 400, "ext-shell/src/driver.rs has {} lines (under 400)", driver.lines().count());
    assert!(!driver.contains("ContinuityInput"), "driver.rs feeds the continuity machine itself; go through WorkerInput");
}

/// A fence nonce must be unguessable (leftovers of issue 26): no `Math.random` in ext-shell
/// or in an extension script; the shell takes `crypto.getRandomValues` or does not start.
/// Failed before: `js::random_bytes_16` fell back to `Math.random` bytes, and the ledger's
/// epoch (the core's stand-in fence key) was `Math.random`.
#[test]
fn no_math_random_feeds_a_fence() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    sources(&root.join("ext-shell/src"), &mut files);
    for entry in std::fs::read_dir(root.join("extension")).expect("extension/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "js") {
            files.push(path);
        }
    }
    assert!(files.len() > 10, "found the sources: {files:?}");
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a source file");
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            assert!(
                !code.contains("Math::random") && !code.contains("Math.random"),
                "{}:{}: randomness from Math.random; use crypto.getRandomValues and fail closed without it: {line}",
                file.display(),
                number + 1
            );
        }
    }
}
