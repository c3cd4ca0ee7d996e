//! The code's shape (issue 8, acceptance 1): no ext-core source file over 900 lines, each
//! opens with its purpose (`//!`), and ARCHITECTURE.md's codemap names every module of the
//! crate and of the continuity composition.

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
