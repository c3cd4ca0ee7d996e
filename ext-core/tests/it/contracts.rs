//! `extension/contracts.js` is what `ext_core::contracts` writes (issue 28: one source for
//! every contract shared by Rust and JavaScript), and the JavaScript names no port message
//! the Rust side does not list.

use std::path::{Path, PathBuf};

fn extension() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../extension")
}

#[test]
fn contracts_js_is_what_the_generator_writes() {
    let path = extension().join("contracts.js");
    let want = ext_core::contracts::contracts_js();
    if std::env::var_os("UPDATE_CONTRACTS").is_some() {
        std::fs::write(&path, &want).unwrap_or_else(|e| panic!("could not write {}: {e}", path.display()));
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "extension/contracts.js differs from what ext-core/src/contracts.rs generates (a Rust contract changed or the file was \
         edited by hand): regenerate it with `UPDATE_CONTRACTS=1 cargo test -p ext-core --test it contracts` and commit it"
    );
}

/// Every `type` name the extension's JavaScript posts or compares (`type: 'x'`,
/// `type === 'x'`) is a message name of `contracts.messages`: a new message is declared in
/// `continuity_protocol::port` first.
#[test]
fn javascript_message_types_are_declared_in_rust() {
    let contracts = ext_core::contracts::contracts();
    let messages = contracts["messages"].as_object().cloned().unwrap_or_default();
    let known = |name: &str| messages.values().any(|set| set.get(name).is_some());
    // DOM and PerformanceObserver types, not messages.
    const DOM_TYPES: &[&str] =
        &["attributes", "button", "file", "number", "text", "checkbox", "longtask", "resource", "keyDown", "keyUp", "application/json"];
    let mut unknown = Vec::new();
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(extension()).map(|dir| dir.filter_map(|entry| entry.ok().map(|e| e.path())).collect()).unwrap_or_default();
    files.sort();
    for file in files.iter().filter(|f| f.extension().is_some_and(|e| e == "js")) {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for opener in ["type: '", "type === '"] {
            for (at, _) in text.match_indices(opener) {
                let rest = &text[at + opener.len()..];
                let name = rest.split('\'').next().unwrap_or_default();
                if !known(name) && !DOM_TYPES.contains(&name) {
                    unknown.push(format!("{}: {name}", file.file_name().and_then(|n| n.to_str()).unwrap_or("?")));
                }
            }
        }
    }
    assert!(unknown.is_empty(), "message types not declared in protocol/src/port.rs: {unknown:?}");
}

fn shell_sources() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ext-shell/src");
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(dir).map(|dir| dir.filter_map(|entry| entry.ok().map(|e| e.path())).collect()).unwrap_or_default();
    files.sort();
    files.iter().filter(|f| f.extension().is_some_and(|e| e == "rs")).map(|f| std::fs::read_to_string(f).unwrap_or_default()).collect()
}

/// The worker side (ext-shell) reads every message the pages and the panel may post, and
/// posts only declared names (`"type": "x"`).
#[test]
fn the_shell_reads_and_writes_the_declared_messages() {
    let contracts = ext_core::contracts::contracts();
    let shell = shell_sources();
    let set = |name: &str| contracts["messages"][name].as_object().cloned().unwrap_or_default();
    let mut unread: Vec<String> = ["page_to_worker", "panel_to_worker"]
        .into_iter()
        .flat_map(|name| set(name).into_iter().map(|(k, _)| k))
        .filter(|name| !shell.contains(&format!("\"{name}\"")))
        .collect();
    unread.dedup();
    assert!(unread.is_empty(), "declared in protocol/src/port.rs but never read by ext-shell: {unread:?}");
    let mut undeclared = Vec::new();
    for (at, _) in shell.match_indices("\"type\": \"") {
        let name = shell[at + 9..].split('"').next().unwrap_or_default();
        if !contracts["messages"].as_object().is_some_and(|sets| sets.values().any(|set| set.get(name).is_some())) {
            undeclared.push(name.to_owned());
        }
    }
    assert!(undeclared.is_empty(), "ext-shell posts message types not declared in protocol/src/port.rs: {undeclared:?}");
}
