//! docs/SELECTORS.md is generated: the declared selector surface (issue 25) printed from
//! the built-in site profiles (as the page receives them, `sites::flat`) and
//! `sites::surface`. This test renders it and fails when the committed file differs;
//! `UPDATE_SELECTORS=1 cargo test -p ext-core selectors_doc` rewrites it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use ext_core::sites::flat::{flatten, ChainProbe, FlatProfile};
use ext_core::sites::surface::{APP_MENTIONS_CHECKED, PAGE_SELECTORS};
use ext_core::sites::{Probe, FACT_NAMES, PROFILES};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Each fact's doc comment in `sites/mod.rs` (`pub struct Facts`): the fact's purpose,
/// written once.
fn fact_docs() -> Vec<(String, String)> {
    let source = std::fs::read_to_string(repo().join("ext-core/src/sites/mod.rs")).expect("sites/mod.rs");
    let body = source.split("pub struct Facts {").nth(1).expect("sites/mod.rs defines `pub struct Facts`");
    let body = body.split("\n}").next().unwrap_or("");
    let mut docs = Vec::new();
    let mut doc = Vec::new();
    for line in body.lines().map(str::trim) {
        if let Some(text) = line.strip_prefix("///") {
            doc.push(text.trim().to_string());
        } else if let Some(field) = line.strip_prefix("pub ").and_then(|rest| rest.split(':').next()) {
            docs.push((field.to_string(), doc.join(" ")));
            doc.clear();
        }
    }
    docs
}

/// A table cell: pipes escaped, line breaks flattened.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// A table cell of prose: also `<` and `>` escaped (no HTML).
fn prose(text: &str) -> String {
    cell(text).replace('<', "&lt;").replace('>', "&gt;")
}

fn code(text: &str) -> String {
    let ticks = if text.contains('`') { "``" } else { "`" };
    let pad = if text.starts_with('`') || text.ends_with('`') { " " } else { "" };
    cell(&format!("{ticks}{pad}{text}{pad}{ticks}"))
}

fn codes(list: &[&str]) -> String {
    if list.is_empty() {
        "—".to_string()
    } else {
        list.iter().map(|text| code(text)).collect::<Vec<_>>().join(", ")
    }
}

fn scope(probe: &Probe) -> String {
    serde_json::to_value(probe.scope).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

fn filters(probe: &Probe) -> String {
    let mut out = Vec::new();
    for (name, value) in
        [("label", probe.label), ("text", probe.text), ("icon", probe.icon), ("attr", probe.attr), ("beside", probe.beside)]
    {
        if let Some(value) = value {
            out.push(format!("{name}={}", code(value)));
        }
    }
    if probe.unique {
        out.push("unique".to_string());
    }
    if out.is_empty() {
        "—".to_string()
    } else {
        out.join(", ")
    }
}

fn chain_rows(out: &mut String, flat: &FlatProfile, chain: &[ChainProbe]) {
    out.push_str("| # | selector | scope | filters | generations | fallback | checked |\n|---|---|---|---|---|---|---|\n");
    for (index, entry) in chain.iter().enumerate() {
        let checked =
            entry.gens.iter().filter_map(|id| flat.generations.iter().find(|g| g.id == *id)).map(|g| g.checked).max().unwrap_or("");
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            index + 1,
            code(entry.probe.css),
            scope(&entry.probe),
            filters(&entry.probe),
            entry.gens.join(", "),
            if entry.fallback { "yes" } else { "no" },
            checked
        );
    }
}

fn site(out: &mut String, flat: &FlatProfile, docs: &[(String, String)]) {
    let _ = writeln!(out, "## {} — {}\n", flat.site, flat.origin);
    let _ = writeln!(out, "Built-in profile date {} (the newest generation's `checked`).", flat.date);
    if let Some(attr) = flat.turn_index_attr {
        let _ = writeln!(out, "A turn's absolute index is the trailing number of its {} attribute.", code(attr));
    }
    out.push_str("\n### Generations (diagnostic labels; a probe's source is its generations')\n\n");
    out.push_str("| generation | detect: all | detect: any | detect: none | pending until complete | checked | source |\n");
    out.push_str("|---|---|---|---|---|---|---|\n");
    for generation in &flat.generations {
        let detect = generation.detect;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            generation.id,
            codes(detect.all),
            codes(detect.any),
            codes(detect.none),
            if generation.pending_until_complete { "yes" } else { "no" },
            generation.checked,
            prose(generation.source)
        );
    }
    out.push_str("\n### Facts (each chain in fallback order: the first entry that finds something wins)\n\n");
    for (name, chain) in &flat.facts {
        let doc = docs.iter().find(|(field, _)| field == name).map(|(_, doc)| doc.as_str()).unwrap_or("");
        let _ = writeln!(out, "#### {name}\n\n{}\n", prose(doc));
        if chain.is_empty() {
            out.push_str("No probe: the fact reports nothing on this site.\n\n");
        } else {
            chain_rows(out, flat, chain);
            out.push('\n');
        }
    }
    out.push_str("### Labels (a probe's `label`, `text` and `beside` name a set by its key)\n\n| key | en | zh |\n|---|---|---|\n");
    for set in &flat.labels {
        let _ = writeln!(out, "| {} | {} | {} |", set.key, codes(&set.en), codes(&set.zh));
    }
    let _ = writeln!(out, "\n### Never Send or Stop\n\n{}\n", codes(&flat.never));
    let _ = writeln!(out, "### Disabled control\n\n{}\n", codes(&flat.disabled));
    if let Some(apps) = flat.app_mentions {
        let checked = APP_MENTIONS_CHECKED.iter().find(|c| c.site == flat.site).expect("APP_MENTIONS_CHECKED has the site");
        let _ = writeln!(out, "### App mentions (checked {}; source: {})\n", checked.checked, prose(checked.source));
        out.push_str("| what | selector | attributes read |\n|---|---|---|\n");
        for pill in apps.pills {
            let attrs: Vec<String> = [("keyword", pill.keyword_attr), ("name", pill.name_attr), ("path", pill.path_attr)]
                .into_iter()
                .filter_map(|(what, attr)| attr.map(|attr| format!("{what}={}", code(attr))))
                .collect();
            let attrs = if attrs.is_empty() { "— (name = its text)".to_string() } else { attrs.join(", ") };
            let _ = writeln!(out, "| App pill | {} | {} |", code(pill.css), attrs);
        }
        for probe in apps.picker {
            let _ = writeln!(out, "| `@` picker (scope {}) | {} | — |", scope(probe), code(probe.css));
        }
        let _ = writeln!(out, "| picker option | {} | keyword={} |\n", code(apps.option), code(apps.option_keyword_attr));
    }
}

fn render() -> String {
    let docs = fact_docs();
    for name in FACT_NAMES {
        let doc = docs.iter().find(|(field, _)| field == name);
        assert!(doc.is_some_and(|(_, doc)| !doc.is_empty()), "sites::Facts::{name} has no doc comment: say what the fact is");
    }
    let mut out = String::from(
        "# Selectors the extension uses on host pages\n\n\
         Generated from the built-in site profiles (`ext-core/src/sites/{chatgpt,zai,deepseek}.rs`, as the page \
         receives them: `sites::flat`) and `ext-core/src/sites/surface.rs`. Do not edit it: change those files and \
         run `UPDATE_SELECTORS=1 cargo test -p ext-core selectors_doc` (a test fails while this file is stale).\n\n\
         Every selector and label the extension uses on a ChatGPT, z.ai or DeepSeek page is listed here once. \
         A test (`ext-core/tests/it/selector_surface.rs`) scans the content scripts the manifest lists and fails on \
         a selector literal declared neither in a profile nor in the last section. Queries on the extension's own \
         closed shadow roots (the HUD and the Queue button: the name bound by `attachShadow`) are not the host \
         page's and are not listed. The test reads selector literals at every call of `querySelector`, \
         `querySelectorAll`, `closest`, `matches` or a local wrapper of them, constants bound to a literal, \
         template literals (a substitution written `${}` in the declaration) and selector-shaped strings anywhere; \
         a selector built only from profile data (`probe.css`, profile selectors joined with commas) is the \
         profile's, declared above. An override profile (options page or the companion's `profiles/`) replaces a \
         site's tables below while it validates.\n\n\
         How to read a chain: the adapter tries a fact's entries top to bottom; *scope* says where it looks \
         (`doc` the document, `root` the composer's form, `closest` up from the composer, `tail` the last turns, \
         `last` the last reply, `message` a user message); *filters* must also hold (`label`/`text`/`beside` name \
         a label set below, `icon` an SVG path prefix, `attr` the attribute read, `unique` exactly one match); \
         *generations* are the layouts that list the entry; *fallback* is yes when no generation lists it first; \
         *checked* is the newest date its generations were checked. The side panel's diagnostics show which \
         entry served each fact and how often.\n\n",
    );
    for profile in PROFILES {
        site(&mut out, &flatten(profile), &docs);
    }
    out.push_str(
        "## Content-script selectors outside the profiles (`sites::surface::PAGE_SELECTORS`)\n\n\
         Site-independent selectors `content.js` uses on every host page.\n\n\
         | selector | purpose | checked | source |\n|---|---|---|---|\n",
    );
    for declared in PAGE_SELECTORS {
        let _ =
            writeln!(out, "| {} | {} | {} | {} |", code(declared.css), prose(declared.purpose), declared.checked, prose(declared.source));
    }
    out
}

#[test]
fn selectors_doc_is_current() {
    let path = repo().join("docs/SELECTORS.md");
    let rendered = render();
    if std::env::var_os("UPDATE_SELECTORS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &rendered).expect("docs/SELECTORS.md is writable");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != rendered {
        let line = committed
            .lines()
            .zip(rendered.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(committed.lines().count().min(rendered.lines().count()));
        panic!(
            "docs/SELECTORS.md is stale (first difference at line {}: the file has {:?}, the profiles give {:?}): \
             run `UPDATE_SELECTORS=1 cargo test -p ext-core selectors_doc` and commit docs/SELECTORS.md",
            line + 1,
            committed.lines().nth(line).unwrap_or("<end of file>"),
            rendered.lines().nth(line).unwrap_or("<end of file>")
        );
    }
}

#[test]
fn every_site_with_app_mentions_says_when_they_were_checked() {
    for profile in PROFILES {
        let listed = APP_MENTIONS_CHECKED.iter().filter(|c| c.site == profile.site).count();
        let expected = usize::from(profile.app_mentions.is_some());
        assert_eq!(listed, expected, "{}: APP_MENTIONS_CHECKED (sites::surface) needs exactly {expected} entry", profile.site);
    }
}
