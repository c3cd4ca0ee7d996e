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

/// The ranges the options page checks (contracts.settings) are the ones ext-core enforces:
/// each recovery field's bounds and `above` pairs as `RecoveryConfig::read` refuses them,
/// the judge's bound as `JudgeSettings::parse` takes it.
#[test]
fn the_settings_ranges_are_the_ones_ext_core_enforces() {
    use ext_core::recovery_config::{ConfigError, RecoveryConfig};
    use ext_core::semantic_auto::JudgeSettings;
    use serde_json::{json, Map, Value};
    let contracts = ext_core::contracts::contracts();
    let fields = contracts["settings"]["recovery"]["fields"].as_array().cloned().unwrap_or_default();
    assert_eq!(fields.len(), ext_core::recovery_config::FIELDS.len());
    let defaults: Map<String, Value> =
        fields.iter().map(|f| (f["name"].as_str().unwrap_or_default().to_owned(), f["default"].clone())).collect();
    assert!(RecoveryConfig::read(&Value::Object(defaults.clone())).is_ok(), "the defaults are accepted");
    for field in &fields {
        let name = field["name"].as_str().unwrap_or_default();
        let (min, max) = (field["min"].as_u64().unwrap_or_default(), field["max"].as_u64().unwrap_or_default());
        let with = |value: u64| {
            let mut record = defaults.clone();
            record.insert(name.to_owned(), json!(value));
            RecoveryConfig::read(&Value::Object(record))
        };
        match field.get("above").and_then(Value::as_str) {
            None => {
                // A warn threshold at its max leaves its high one no room: not asked here.
                let is_warn = fields.iter().any(|f| f.get("above").and_then(Value::as_str) == Some(name));
                assert!(with(min).is_ok() && (is_warn || with(max).is_ok()), "{name}: {min} and {max} are accepted");
                assert_eq!(with(max + 1).err().map(|e| e.field), Some(name), "{name}: above {max} is refused");
                assert_eq!(with(min - 1).err().map(|e| e.field), Some(name), "{name}: below {min} is refused");
            }
            Some(warn) => {
                let warn_default = defaults[warn].as_u64().unwrap_or_default();
                assert!(matches!(with(warn_default), Err(ConfigError { field, .. }) if field == name), "{name} must lie above {warn}");
                assert!(with(warn_default + 1).is_ok(), "{name} one above {warn} is accepted");
            }
        }
    }
    let judge = &contracts["settings"]["judge"];
    let (min, max) = (judge["max_continues"]["min"].as_u64().unwrap_or(0), judge["max_continues"]["max"].as_u64().unwrap_or(0));
    for mode in judge["modes"].as_array().cloned().unwrap_or_default() {
        let mode = mode.as_str().unwrap_or_default();
        for (n, ok) in [(min - 1, false), (min, true), (max, true), (max + 1, false)] {
            let text = json!({"mode": mode, "max_continues": n}).to_string();
            let (_, problem) = JudgeSettings::parse(Some(&text));
            assert_eq!(problem.is_none(), ok, "judge mode {mode}, max_continues {n}");
        }
    }
    let default = JudgeSettings::default();
    assert_eq!(judge["default_mode"], json!(default.mode.wire_name()));
    assert_eq!(judge["max_continues"]["default"], json!(default.max_continues));
}

/// The content scripts (`extension/content*.js`) take their port name and every message name
/// from `herdrContracts`: none writes a declared message name as a literal type
/// (`type: 'page_facts'`, `type === 'hud'`) or the port name (`connect({ name: 'page' })`).
#[test]
fn content_scripts_take_message_names_from_the_contracts() {
    let contracts = ext_core::contracts::contracts();
    let messages = contracts["messages"].as_object().cloned().unwrap_or_default();
    let declared = |name: &str| messages.values().any(|set| set.get(name).is_some());
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(extension()).map(|dir| dir.filter_map(|entry| entry.ok().map(|e| e.path())).collect()).unwrap_or_default();
    files.retain(|f| f.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("content") && n.ends_with(".js")));
    files.sort();
    assert!(files.len() > 1, "the content scripts are found: {files:?}");
    let mut literal = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let short = file.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        for opener in ["type: '", "type === '", "type !== '"] {
            for (at, _) in text.match_indices(opener) {
                let name = text[at + opener.len()..].split('\'').next().unwrap_or_default();
                if declared(name) {
                    literal.push(format!("{short}: {opener}{name}'"));
                }
            }
        }
        if text.contains("connect({ name: '") {
            literal.push(format!("{short}: a literal port name"));
        }
    }
    assert!(
        literal.is_empty(),
        "content scripts restate contract names; read them from globalThis.herdrContracts (extension/contracts.js): {literal:?}"
    );
}
