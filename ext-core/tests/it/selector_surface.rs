//! The declared selector surface (issue 25, acceptance 4): every selector a content script
//! uses on a host page is declared — a site fact in its profile (`sites::{chatgpt,zai,
//! deepseek}`), the site-independent rest in `sites::surface::PAGE_SELECTORS` — and this
//! test fails, naming file:line, on one that is not. `selector_scan` says how selectors
//! are found; the tests at the end check that the scan finds what it must.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use ext_core::sites::surface::PAGE_SELECTORS;
use ext_core::sites::{Probe, PROFILES};

use super::selector_scan::{scan, scan_sharing, wrappers_of, Found, Kind};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The content scripts, as the manifest lists them (`content_scripts[].js`).
fn content_scripts() -> Vec<String> {
    let manifest = std::fs::read_to_string(repo().join("manifest/manifest.json")).expect("manifest/manifest.json");
    let manifest: serde_json::Value = serde_json::from_str(&manifest).expect("the manifest is JSON");
    let mut files = Vec::new();
    for entry in manifest["content_scripts"].as_array().expect("the manifest lists content scripts") {
        for file in entry["js"].as_array().expect("a content_scripts entry lists its js") {
            let file = file.as_str().expect("a script path").to_string();
            if !files.contains(&file) {
                files.push(file);
            }
        }
    }
    files
}

/// The wrappers every content script defines: the scripts share one isolated world and
/// one namespace (`extension/content-hud.js`), so a helper defined in one is a sink in all.
fn shared_wrappers() -> BTreeMap<String, usize> {
    let mut all = BTreeMap::new();
    for file in content_scripts() {
        let source = std::fs::read_to_string(repo().join("extension").join(&file)).expect("a content script");
        all.extend(wrappers_of(&source).expect("the content script scans"));
    }
    all
}

/// Every selector the built-in profiles hold: probes of every fact, detection markers,
/// `never`, `disabled`, App pills, picker probes and options.
fn profile_selectors() -> BTreeSet<&'static str> {
    let mut out = BTreeSet::new();
    let mut probes = |list: &[Probe]| out.extend(list.iter().map(|probe| probe.css));
    let mut rest = Vec::new();
    for profile in PROFILES {
        for generation in profile.generations {
            for (_, list) in generation.facts.named() {
                probes(list);
            }
            rest.extend(generation.detect.all.iter().chain(generation.detect.any).chain(generation.detect.none));
            rest.extend(generation.never.iter().chain(generation.disabled));
        }
        if let Some(apps) = profile.app_mentions {
            probes(apps.picker);
            rest.extend(apps.pills.iter().map(|pill| &pill.css));
            rest.push(&apps.option);
        }
    }
    out.extend(rest.into_iter().copied());
    out
}

/// The declared surface: profile selectors and `PAGE_SELECTORS`.
fn declared() -> BTreeSet<&'static str> {
    let mut all = profile_selectors();
    all.extend(PAGE_SELECTORS.iter().map(|declared| declared.css));
    all
}

/// One line per host-page selector in `source` (a content script named `file`) that is not
/// in `declared`, saying where it is and what to do.
fn undeclared(file: &str, source: &str, declared: &BTreeSet<&str>) -> Result<Vec<String>, String> {
    undeclared_sharing(file, source, declared, &BTreeMap::new())
}

/// `undeclared` with the wrappers the other content scripts define (`shared_wrappers`).
fn undeclared_sharing(
    file: &str,
    source: &str,
    declared: &BTreeSet<&str>,
    shared: &BTreeMap<String, usize>,
) -> Result<Vec<String>, String> {
    let found = scan_sharing(source, shared).map_err(|problem| format!("{file}: cannot scan: {problem}"))?;
    Ok(found
        .into_iter()
        .filter(|f| f.kind != Kind::OwnUi && !declared.contains(f.css.as_str()))
        .map(|Found { line, css, kind, via }| {
            let how = match kind {
                Kind::Literal => format!("passed to {via}"),
                Kind::Pattern => format!("a template passed to {via} (its substitutions written ${{}})"),
                Kind::Shaped => "a selector-shaped string literal".to_string(),
                Kind::OwnUi => unreachable!("own UI is filtered out"),
            };
            format!(
                "{file}:{line}: selector {css:?} ({how}) is not declared. A site's fact belongs in its profile \
                 (ext-core/src/sites/<site>.rs); a selector the content script needs on every site goes in \
                 ext-core/src/sites/surface.rs PAGE_SELECTORS with its purpose, checked date and source; a query on \
                 the extension's own UI must go through the name bound by attachShadow. Then run \
                 UPDATE_SELECTORS=1 cargo test -p ext-core selectors_doc to refresh docs/SELECTORS.md."
            )
        })
        .collect())
}

#[test]
fn every_selector_a_content_script_uses_on_the_page_is_declared() {
    let declared = declared();
    let scripts = content_scripts();
    assert!(scripts.contains(&"content.js".to_string()), "the manifest's content scripts: {scripts:?}");
    let shared = shared_wrappers();
    let mut problems = Vec::new();
    for file in &scripts {
        let source = std::fs::read_to_string(repo().join("extension").join(file)).expect("a content script");
        match undeclared_sharing(&format!("extension/{file}"), &source, &declared, &shared) {
            Ok(lines) => problems.extend(lines),
            Err(problem) => problems.push(problem),
        }
    }
    assert!(problems.is_empty(), "undeclared host-page selectors:\n{}", problems.join("\n"));
}

#[test]
fn every_declared_page_selector_is_used_once_with_its_date_and_source() {
    let shared = shared_wrappers();
    let mut used = BTreeSet::new();
    for file in content_scripts() {
        let source = std::fs::read_to_string(repo().join("extension").join(&file)).expect("a content script");
        let found = scan_sharing(&source, &shared).expect("the content script scans");
        used.extend(found.into_iter().filter(|f| f.kind != Kind::OwnUi).map(|f| f.css));
    }
    let mut seen = BTreeSet::new();
    for declared in PAGE_SELECTORS {
        let css = declared.css;
        assert!(seen.insert(css), "PAGE_SELECTORS declares {css:?} twice: declare a selector once");
        assert!(
            used.contains(css),
            "PAGE_SELECTORS declares {css:?}, which no content script uses on the page: remove it (and refresh \
             docs/SELECTORS.md with UPDATE_SELECTORS=1)"
        );
        let date = declared.checked.as_bytes();
        let is_date =
            date.len() == 10 && date.iter().enumerate().all(|(i, b)| if i == 4 || i == 7 { *b == b'-' } else { b.is_ascii_digit() });
        assert!(is_date, "{css:?}: checked {:?} is not YYYY-MM-DD", declared.checked);
        assert!(!declared.purpose.trim().is_empty() && !declared.source.trim().is_empty(), "{css:?}: say its purpose and source");
    }
}

// ---- The test of the test: the scan on synthetic sources.

const SYNTHETIC: &str = r#"
(() => {
  const queryAll = (scope, css) => { try { return [...scope.querySelectorAll(css)]; } catch { return []; } };
  const inside = (el, sel) => queryAll(el, sel);
  const SKIP = '[data-skip]';
  // document.querySelector('[data-in-a-comment]') is a comment
  const re = /[data-in-a-regex]/;
  const host = document.createElement('x-ui');
  const root = host.attachShadow({ mode: 'closed' });
  root.querySelector('.own-ui [data-own]');
  const page = () => { const root = document.body; return root.querySelector('[data-shadowed-name]'); };
  document.querySelector('[data-new-thing]');
  inside(document, 'path');
  el?.closest(SKIP);
  el.matches(`button[data-id="${id}"]`);
  document.querySelector(`${a.css}, ${b.css}`);
  document.querySelector(probe.css);
  const list = ['li', '[role="tab"]'];
  const sheet = `.x[data-y] { color: red }`;
})();
"#;

#[test]
fn the_scan_finds_literals_constants_wrappers_patterns_and_shaped_strings_but_not_comments_or_dynamic_selectors() {
    let found = scan(SYNTHETIC).expect("the synthetic source scans");
    let seen: Vec<(usize, &str, Kind)> = found.iter().map(|f| (f.line, f.css.as_str(), f.kind)).collect();
    assert_eq!(
        seen,
        vec![
            (10, ".own-ui [data-own]", Kind::OwnUi),
            (11, "[data-shadowed-name]", Kind::Literal),
            (12, "[data-new-thing]", Kind::Literal),
            (13, "path", Kind::Literal),
            (14, "[data-skip]", Kind::Literal),
            (15, "button[data-id=\"${}\"]", Kind::Pattern),
            (18, "[role=\"tab\"]", Kind::Shaped),
        ],
        "{found:#?}"
    );
    let skip = found.iter().find(|f| f.css == "[data-skip]").expect("the constant is found at its call");
    assert_eq!(skip.via, "el.closest (SKIP, line 5)");
}

#[test]
fn the_surface_test_fails_on_an_undeclared_selector_and_passes_a_declared_one() {
    let declared: BTreeSet<&str> = ["path", "[data-skip]", "[data-shadowed-name]", "button[data-id=\"${}\"]", "[role=\"tab\"]"].into();
    let problems = undeclared("extension/synthetic.js", SYNTHETIC, &declared).expect("it scans");
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(
        problems[0]
            .starts_with("extension/synthetic.js:12: selector \"[data-new-thing]\" (passed to document.querySelector) is not declared."),
        "{}",
        problems[0]
    );
    assert!(problems[0].contains("PAGE_SELECTORS") && problems[0].contains("UPDATE_SELECTORS=1"), "{}", problems[0]);

    // Declared, it passes; the real declared surface does not know the synthetic names.
    let mut all = declared.clone();
    all.insert("[data-new-thing]");
    assert_eq!(undeclared("extension/synthetic.js", SYNTHETIC, &all).expect("it scans"), Vec::<String>::new());
    let real = undeclared("extension/synthetic.js", SYNTHETIC, &self::declared()).expect("it scans");
    assert!(real.iter().any(|p| p.contains("[data-new-thing]")), "{real:#?}");
}

#[test]
fn a_source_the_scanner_cannot_read_fails_the_surface_test_with_its_line() {
    let problem = undeclared("extension/broken.js", "const a = 1;\nconst b = 'open;\n", &BTreeSet::new()).expect_err("unterminated");
    assert_eq!(problem, "extension/broken.js: cannot scan: line 2: unterminated string");
}

#[test]
fn the_scan_reads_regexes_divisions_nested_templates_escapes_and_function_wrappers() {
    let source = r#"
const half = total / 2 / count;
const quote = /'[a-z]"/g.test(x) ? `a ${`b ${c}`} d` : 'it\'s';
function within(el, selector) { return el.querySelector(selector); }
within(node, 'li[data-a="1"]');
node?.matches?.('x') ;
const ratio = (a) / (b);
document.querySelector("[data-b='2']");
const text = `${'[data-in-a-substitution]'}`;
"#;
    let found = scan(source).expect("it scans");
    let seen: Vec<(usize, &str, Kind)> = found.iter().map(|f| (f.line, f.css.as_str(), f.kind)).collect();
    assert_eq!(
        seen,
        vec![
            (5, "li[data-a=\"1\"]", Kind::Literal),
            (6, "x", Kind::Literal),
            (8, "[data-b='2']", Kind::Literal),
            (9, "[data-in-a-substitution]", Kind::Shaped),
        ],
        "{found:#?}"
    );
}

#[test]
fn a_wrapper_one_content_script_defines_is_a_sink_in_the_others() {
    let shared = wrappers_of("const queryAll = (scope, css) => [...scope.querySelectorAll(css)];\n").expect("it scans");
    let other = "const { queryAll } = hc;\nconst buttons = queryAll(card, 'button');\n";
    assert!(scan(other).expect("it scans").is_empty(), "alone, the file's `queryAll` is not known to be a sink");
    let found = scan_sharing(other, &shared).expect("it scans");
    let found: Vec<_> = found.iter().map(|f| (f.line, f.css.as_str(), f.kind)).collect();
    assert_eq!(found, vec![(2, "button", Kind::Literal)]);
}
