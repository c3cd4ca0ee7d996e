//! The extension's shape (issue 28, acceptance 1), read from the files:
//! - every `.js` file in `extension/` is at most 500 lines (one concern per file: the content
//!   script is split by concern, `extension/content*.js`);
//! - no user-visible literal in the extension's JavaScript. What a user reads comes from
//!   `extension/_locales/{en,zh_CN}/messages.json` through a key. Checked precisely (with the
//!   selector scanner's lexer, `selector_scan::lex`): a *text sink* is
//!   - the value assigned (`=`, `+=`) to a member `textContent`, `innerText`, `innerHTML`,
//!     `outerHTML`, `title`, `placeholder`, `alt`, `ariaLabel`, `label`, `value`, `nodeValue`
//!     or `data`;
//!   - the second argument of `setAttribute` whose first is `'aria-label'`, `'title'`,
//!     `'placeholder'`, `'alt'`, `'aria-description'` or `'aria-valuetext'`;
//!   - the arguments of `createTextNode`, `append`, `prepend`, `replaceChildren`, `before`,
//!     `after`, `replaceWith`, `alert`, `confirm`, `prompt`; the second argument of
//!     `insertAdjacentText` / `insertAdjacentHTML`; the children of the pages'
//!     `element(tag, className, attributes, ...children)` and, in its attributes object, the
//!     values of the text attributes above (and `ariaLabel`); the label of `button(label, …)`
//!     (extension/page-dom.js) and the text of the HUD's `showNotice(text, tone)` — these
//!     three called bare or as a member (`hc.showNotice(…)`, as the content scripts call them).
//!
//!   Inside a sink, a string literal or a template literal's fixed text holding a letter is
//!   a violation, except inside the parentheses of a call: a key lookup's (`text(…)`,
//!   `message(…)`, `getMessage(…)`) are keys, and any other call gives its result, not its
//!   arguments (a sink nested in a sink is checked on its own). Not seen: a literal that
//!   reaches a sink through a variable, a nested call's callback, or a template substitution;
//!   a literal compared with (`x === 'composer' ? …`) is a value, not text.

use std::path::{Path, PathBuf};

use super::selector_scan::{arguments, close_of, ident, is_member, lex, punct, Tok, Token};

const MAX_LINES: usize = 500;
const TEXT_PROPERTIES: &[&str] = &[
    "textContent",
    "innerText",
    "innerHTML",
    "outerHTML",
    "title",
    "placeholder",
    "alt",
    "ariaLabel",
    "label",
    "value",
    "nodeValue",
    "data",
];
const TEXT_ATTRIBUTES: &[&str] = &["aria-label", "title", "placeholder", "alt", "aria-description", "aria-valuetext"];
const TEXT_CALLS: &[&str] =
    &["createTextNode", "append", "prepend", "replaceChildren", "before", "after", "replaceWith", "alert", "confirm", "prompt"];
/// Calls whose second argument is text (the first is a position such as `'beforeend'`).
const TEXT_SECOND_CALLS: &[&str] = &["insertAdjacentText", "insertAdjacentHTML"];

fn extension() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../extension")
}

/// Every `.js` file under `extension/` (its locales aside), sorted.
fn js_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("extension/ reads") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|ext| ext == "js") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&extension(), &mut out);
    out.sort();
    out
}

fn name(path: &Path) -> String {
    path.strip_prefix(extension().join("..")).unwrap_or(path).display().to_string()
}

/// Whether a literal's text is words a user would read (it holds a letter).
fn wordy(text: &str) -> bool {
    text.chars().any(char::is_alphabetic)
}

/// The literals with letters in `range`, outside key lookups: `(line, text)`.
fn literals_in(tokens: &[Token], range: std::ops::Range<usize>) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut i = range.start;
    while i < range.end {
        // A call inside a sink gives its result, not its arguments: a key lookup's are keys,
        // and a sink call nested in another (`append(element(…))`) is checked on its own.
        if ident(tokens, i).is_some() && punct(tokens, i + 1, "(") {
            i = close_of(tokens, i + 1);
            continue;
        }
        // A literal compared with (`x === 'composer'`) is a value, not text.
        let compared = |j: usize| ["===", "!==", "==", "!="].iter().any(|op| punct(tokens, j, op));
        if matches!(tokens[i].tok, Tok::Str(_)) && ((i > 0 && compared(i - 1)) || compared(i + 1)) {
            i += 1;
            continue;
        }
        match &tokens[i].tok {
            Tok::Str(text) if wordy(text) => out.push((tokens[i].line, text.clone())),
            Tok::Template { parts, .. } if parts.iter().any(|part| wordy(part)) => out.push((tokens[i].line, parts.join("${}"))),
            _ => {}
        }
        i += 1;
    }
    out
}

/// The value of an assignment whose operator is at `op`: up to `;` or `,` at its depth, or
/// the bracket that closes around it.
fn value_after(tokens: &[Token], op: usize) -> std::ops::Range<usize> {
    let mut depth = 0i32;
    let mut i = op + 1;
    while i < tokens.len() {
        if let Tok::Punct(p) = &tokens[i].tok {
            match p.as_str() {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" if depth == 0 => break,
                ")" | "]" | "}" => depth -= 1,
                ";" | "," if depth == 0 => break,
                _ => {}
            }
        }
        i += 1;
    }
    op + 1..i
}

/// In an object literal `{ … }` spanning `range`, the values of its text attributes
/// (`title: …`, `'aria-label': …`, `ariaLabel: …`), keyed by a name or a string.
fn text_attribute_values(tokens: &[Token], range: std::ops::Range<usize>) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    if range.is_empty() || !punct(tokens, range.start, "{") {
        return out;
    }
    let end = close_of(tokens, range.start).saturating_sub(1);
    let mut i = range.start + 1;
    while i < end {
        let key = match &tokens[i].tok {
            Tok::Str(key) => Some(key.as_str()),
            _ => ident(tokens, i),
        };
        if let (Some(key), true) = (key, punct(tokens, i + 1, ":")) {
            let value = value_after(tokens, i + 1);
            if TEXT_ATTRIBUTES.contains(&key) || key == "ariaLabel" {
                out.push(value.clone());
            }
            i = value.end + 1;
            continue;
        }
        // Anything else (a spread, a shorthand name, a method): on to the next entry.
        if matches!(&tokens[i].tok, Tok::Punct(p) if matches!(p.as_str(), "(" | "[" | "{")) {
            i = close_of(tokens, i);
        } else {
            i += 1;
        }
    }
    out
}

/// Every user-visible literal in `source` (see the module comment): `(line, text)`.
pub fn visible_literals(source: &str) -> Result<Vec<(usize, String)>, String> {
    let (tokens, _) = lex(source)?;
    let mut out = Vec::new();
    for i in 0..tokens.len() {
        let Some(name) = ident(&tokens, i) else { continue };
        let member = is_member(&tokens, i);
        if member && TEXT_PROPERTIES.contains(&name) && (punct(&tokens, i + 1, "=") || punct(&tokens, i + 1, "+=")) {
            out.extend(literals_in(&tokens, value_after(&tokens, i + 1)));
        } else if !punct(&tokens, i + 1, "(") {
            continue;
        }
        let args = || arguments(&tokens, i + 1);
        if member && name == "setAttribute" {
            let args = args();
            let attribute = args.first().and_then(|first| match &tokens[first.start].tok {
                Tok::Str(attribute) if first.len() == 1 => Some(attribute.clone()),
                _ => None,
            });
            if let (Some(attribute), Some(value)) = (attribute, args.get(1)) {
                if TEXT_ATTRIBUTES.contains(&attribute.as_str()) {
                    out.extend(literals_in(&tokens, value.clone()));
                }
            }
        } else if TEXT_CALLS.contains(&name) {
            for arg in args() {
                out.extend(literals_in(&tokens, arg));
            }
        } else if member && TEXT_SECOND_CALLS.contains(&name) {
            if let Some(text) = args().into_iter().nth(1) {
                out.extend(literals_in(&tokens, text));
            }
        } else if name == "element" {
            let args = args();
            if let Some(attributes) = args.get(2) {
                for value in text_attribute_values(&tokens, attributes.clone()) {
                    out.extend(literals_in(&tokens, value));
                }
            }
            for arg in args.into_iter().skip(3) {
                out.extend(literals_in(&tokens, arg));
            }
        } else if name == "button" || name == "showNotice" {
            if let Some(label) = args().into_iter().next() {
                out.extend(literals_in(&tokens, label));
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// One companion client (issue 28): only the service worker opens a native port; the side
/// panel and the options page call the companion through it (`companion_call`,
/// ext-core `worker::calls`). `pkg/` is the worker's own wasm glue.
#[test]
fn only_the_worker_opens_a_native_port() {
    let mut found = Vec::new();
    for path in js_files() {
        let file = name(&path);
        let inside = path.strip_prefix(extension()).unwrap_or(&path);
        if inside == Path::new("worker.js") || inside.starts_with("pkg") {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("a script reads");
        let (tokens, _) = lex(&source).unwrap_or_else(|error| panic!("{file}: {error}"));
        for i in 0..tokens.len() {
            if ident(&tokens, i) == Some("connectNative") {
                found.push(format!("{file}:{}", tokens[i].line));
            }
        }
    }
    assert!(found.is_empty(), "only extension/worker.js opens a native port; call the companion through the worker:\n{}", found.join("\n"));
}

#[test]
fn every_extension_script_is_at_most_500_lines() {
    let files = js_files();
    assert!(files.iter().any(|f| f.ends_with("content.js")), "extension/ holds the content scripts: {files:?}");
    let long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let lines = std::fs::read_to_string(file).expect("a script reads").lines().count();
            (lines > MAX_LINES).then(|| format!("{}: {lines} lines", name(file)))
        })
        .collect();
    assert!(
        long.is_empty(),
        "scripts over {MAX_LINES} lines (split one by concern into files of its own; content scripts share state \
         through the namespace in extension/content-hud.js and are listed in manifest/manifest.json):\n{}",
        long.join("\n")
    );
}

#[test]
fn no_extension_script_shows_a_literal_text() {
    let mut problems = Vec::new();
    for file in js_files() {
        let source = std::fs::read_to_string(&file).expect("a script reads");
        match visible_literals(&source) {
            Ok(found) => problems.extend(found.into_iter().map(|(line, text)| format!("{}:{line}: {text:?}", name(&file)))),
            Err(problem) => problems.push(format!("{}: cannot scan: {problem}", name(&file))),
        }
    }
    assert!(
        problems.is_empty(),
        "text a user reads is written in a script: give it a key in extension/_locales/en/messages.json and \
         extension/_locales/zh_CN/messages.json and show text(key) / message(key):\n{}",
        problems.join("\n")
    );
}

// ---- The test of the test.

const SYNTHETIC: &str = r#"
el.textContent = 'Hello';
el.title = text('hudKey');
el.textContent = `${text('pillBrand')} · …`;
el.textContent += ` ${text('hudNote', [n])} more words`;
status.textContent = '';
el.setAttribute('aria-label', chrome.i18n.getMessage('hudLabel'));
el.setAttribute('title', cond ? 'Open' : text('hudClose'));
el.setAttribute('data-key', 'notText');
el.append(document.createTextNode('Loose text'), String(n));
list.append(element('li', 'row', { 'data-id': 'x' }, 'Row text', message('rowKey')));
button('Press me', {}, press);
button(message('pressKey'), {}, press);
el.dataset.key = 'stillNotText';
showNotice(kind === 'missing' ? text('noticeMissing') : 'Missing', 'bad');
hc.showNotice('Member notice', 'bad');
hc.button('Member button', {}, press);
list.append(element('button', 'x', { title: 'Close', 'aria-label': 'Close it', 'data-k': 'notText' }));
list.append(element('input', 'x', { placeholder: 'Type here', ariaLabel: text('inputKey') }));
input.value = 'Typed by us';
node.nodeValue = 'Node text';
textNode.data = 'Data text';
el.insertAdjacentText('beforeend', 'Adjacent text');
el.insertAdjacentHTML('afterbegin', `<b>Adjacent html</b>`);
el.replaceWith('Replacement text');
input.value = '';
"#;

#[test]
fn the_literal_scan_finds_text_in_sinks_and_not_keys() {
    let found = visible_literals(SYNTHETIC).expect("it scans");
    let found: Vec<(usize, &str)> = found.iter().map(|(line, text)| (*line, text.as_str())).collect();
    assert_eq!(
        found,
        vec![
            (2, "Hello"),
            (5, " ${} more words"),
            (8, "Open"),
            (10, "Loose text"),
            (11, "Row text"),
            (12, "Press me"),
            (15, "Missing"),
            (16, "Member notice"),
            (17, "Member button"),
            (18, "Close"),
            (18, "Close it"),
            (19, "Type here"),
            (20, "Typed by us"),
            (21, "Node text"),
            (22, "Data text"),
            (23, "Adjacent text"),
            (24, "<b>Adjacent html</b>"),
            (25, "Replacement text"),
        ]
    );
}
