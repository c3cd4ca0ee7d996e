//! The runtime's layering (ARCHITECTURE.md "Companion layering"): leaves → services → the
//! api router → runtime. This test reads the sources and fails when a module names
//! (`crate::…`) a module of a layer above its own, so an import circle cannot come back.

use std::path::Path;

/// The layer of a top-level module of `companion/src`; `None` for the other roles of the
/// binary (host, install, doctor, CLI), which are not part of the runtime's layering.
fn layer(module: &str) -> Option<u8> {
    match module {
        "protocol" | "db" | "schema" | "herdr" | "log" | "outbox" | "clock" | "paths" | "framing" | "config" | "providers" | "gitcmd"
        | "json_text" => Some(0),
        "stream" | "inbox" | "journal" | "judge" | "work_memory" | "bridge" | "tools" => Some(1),
        "api" => Some(2),
        "runtime" => Some(3),
        _ => None,
    }
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `crate::<module>` a source line names (comments left out).
fn named_modules(code: &str) -> Vec<String> {
    let code = code.split("//").next().unwrap_or("");
    code.match_indices("crate::")
        .map(|(at, _)| code[at + 7..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect())
        .collect()
}

#[test]
fn no_module_imports_a_layer_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).expect("under src");
        let first = relative.components().next().map(|c| c.as_os_str().to_string_lossy().into_owned()).unwrap_or_default();
        let module = first.trim_end_matches(".rs");
        let Some(own) = layer(module) else { continue };
        let text = std::fs::read_to_string(file).expect("read source");
        for (number, line) in text.lines().enumerate() {
            for target in named_modules(line) {
                if let Some(theirs) = layer(&target) {
                    if theirs > own {
                        violations.push(format!(
                            "{}:{}: {module} (layer {own}) uses crate::{target} (layer {theirs})",
                            relative.display(),
                            number + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(violations.is_empty(), "imports of a layer above:\n{}", violations.join("\n"));
    assert!(files.len() > 20, "the sources were not found");
}

/// The MCP front end (`herdr-companion mcp`) is a client of the runtime over its socket: it
/// may use leaves (paths, protocol) and the host's runtime autostart, never the services,
/// the router or the runtime, so the one tool registry stays in the runtime process.
#[test]
fn the_mcp_front_end_reaches_the_runtime_only_through_its_socket() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join("mcp"), &mut files);
    let mut violations = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read source");
        for (number, line) in text.lines().enumerate() {
            for target in named_modules(line) {
                let allowed = target == "mcp" || target == "host" || layer(&target) == Some(0);
                if !allowed {
                    violations.push(format!("{}:{}: mcp uses crate::{target}", file.display(), number + 1));
                }
            }
        }
    }
    assert!(violations.is_empty(), "the mcp front end names runtime modules:\n{}", violations.join("\n"));
    assert!(files.len() >= 4, "the mcp sources were not found");
}
