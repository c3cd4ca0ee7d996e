//! The profile file: validation of a site profile a user supplies without a release (the
//! options page's import, the companion's `profiles/<site>.json`), in wire v2's shape
//! (docs/PROTOCOL.md "Site profile files").
//!
//! Purpose: an override may only change *data* the adapter already evaluates — selectors,
//! label words, the generations' detection markers — for a site the extension already
//! knows. [`validate_profile`] answers the first problem, named by its JSON path and saying
//! what to do (`facts.send[2].css: not a valid selector (unbalanced "[")`), or the value as
//! it may be posted to a page.
//!
//! Invariants (what a file must satisfy, each refused otherwise):
//! - at most [`MAX_PROFILE_BYTES`] of text; JSON; `schema` 1; `site` and `origin` those of
//!   a built-in profile (no new origin ever) and, when the caller expects a site, that one;
//! - no field outside the v2 shape anywhere ("a profile holds selector and label tables
//!   only": nothing that could carry code or a URL to load is accepted by being ignored);
//! - all 16 facts ([`super::FACT_NAMES`]) present, each a list of probes;
//! - every selector non-empty, at most [`MAX_SELECTOR_CHARS`], brackets, parentheses and
//!   quotes balanced, and none of `{`, `}`, `;`, `<`, `javascript:`, `url(`, NUL or another
//!   control character (checked conservatively: a selector either could be valid CSS or is
//!   refused; the page's `querySelectorAll` is the final judge and throws on the rest);
//! - every label key a probe names exists; every label set has non-empty `en` and a `zh`
//!   list; the [`super::NOT_STOP_WORDS`] set exists (it keeps Stop off dictation controls);
//! - every probe's `gens` names generations of the file; counts capped
//!   ([`MAX_PROBES_PER_FACT`], [`MAX_GENERATIONS`], [`MAX_LABEL_SETS`], [`MAX_LABELS_PER_LANGUAGE`]).

use serde_json::{Map, Value};

/// Largest profile file, in bytes of text.
pub const MAX_PROFILE_BYTES: usize = continuity_protocol::limits::MAX_PROFILE_FILE_BYTES;
/// Longest selector, in characters.
pub const MAX_SELECTOR_CHARS: usize = 512;
/// Most probes in one fact's chain (and in the App picker's).
pub const MAX_PROBES_PER_FACT: usize = 32;
/// Most generations.
pub const MAX_GENERATIONS: usize = 16;
/// Most label sets.
pub const MAX_LABEL_SETS: usize = 64;
/// Most labels in one language of a label set.
pub const MAX_LABELS_PER_LANGUAGE: usize = 32;
/// Most selectors in a detection list, `never` or `disabled`.
pub const MAX_SELECTOR_LIST: usize = 32;
/// Longest id, key, version or attribute name.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest label or phrase.
pub const MAX_LABEL_CHARS: usize = 128;
/// Longest `source` of a generation, or `icon` prefix.
pub const MAX_NOTE_CHARS: usize = 1024;
/// The profile file schema this release reads.
pub const SCHEMA: u64 = 1;

/// The first problem of a profile file: where (a JSON path, empty for the file as a whole)
/// and what is wrong, saying what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileProblem {
    /// `facts.send[2].css`, `labels[3]`, `` (the whole file).
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

impl ProfileProblem {
    fn at(path: &str, message: impl Into<String>) -> Self {
        Self { path: path.to_owned(), message: message.into() }
    }
}

impl std::fmt::Display for ProfileProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.path.is_empty() {
            f.write_str(&self.path)?;
            f.write_str(": ")?;
        }
        f.write_str(&self.message)
    }
}

type Checked<T> = Result<T, ProfileProblem>;

/// Validates a profile file's text, parsed by `parse` (the worker passes the browser's
/// `JSON.parse`, so the wasm carries no JSON text parser; its error text is shown), for
/// `expected_site` when one is given. Returns the profile as it may be posted to a page.
pub fn validate_profile_with(text: &str, parse: impl FnOnce(&str) -> Result<Value, String>, expected_site: Option<&str>) -> Checked<Value> {
    if text.len() > MAX_PROFILE_BYTES {
        return Err(ProfileProblem::at(
            "",
            format!("the file has {} bytes, at most {MAX_PROFILE_BYTES} are read: keep only the selector and label tables", text.len()),
        ));
    }
    let value = parse(text).map_err(|error| ProfileProblem::at("", format!("not JSON ({error}): save the profile as a JSON file")))?;
    validate_profile(&value, expected_site)
}

/// [`validate_profile_with`] with serde_json's parser (tests and native tools).
pub fn validate_profile_text(text: &str, expected_site: Option<&str>) -> Checked<Value> {
    validate_profile_with(text, |text| serde_json::from_str(text).map_err(|e| e.to_string()), expected_site)
}

/// Validates a parsed profile file (its size was checked on its text) for `expected_site`
/// when one is given: the profile, or its first problem.
pub fn validate_profile(value: &Value, expected_site: Option<&str>) -> Checked<Value> {
    let top = object(value, "")?;
    top.only(&[
        "schema",
        "site",
        "origin",
        "version",
        "date",
        "generations",
        "facts",
        "labels",
        "never",
        "disabled",
        "streaming_recheck_ms",
        "turn_index_attr",
        "app_mentions",
    ])?;
    let schema = top.required("schema")?;
    if schema.as_u64() != Some(SCHEMA) {
        return Err(ProfileProblem::at("schema", format!("must be {SCHEMA}: this release reads profile files of schema {SCHEMA}")));
    }
    let site = name(top.required("site")?, "site")?;
    let Some(builtin) = super::PROFILES.iter().find(|profile| profile.site == site) else {
        return Err(ProfileProblem::at("site", format!("\"{site}\" is not a known site: use chatgpt, zai or deepseek")));
    };
    if let Some(expected) = expected_site.filter(|expected| *expected != site) {
        return Err(ProfileProblem::at("site", format!("the file is for \"{site}\", not {expected}: import it for its own site")));
    }
    let origin = top.required("origin")?.as_str().unwrap_or_default();
    if origin != builtin.origin {
        return Err(ProfileProblem::at(
            "origin",
            format!("must be {} for {site}: a profile changes the selectors of a known site, never where they apply", builtin.origin),
        ));
    }
    name(top.required("version")?, "version")?;
    date(top.required("date")?, "date")?;
    let generations = list(top.required("generations")?, "generations", MAX_GENERATIONS)?;
    if generations.is_empty() {
        return Err(ProfileProblem::at("generations", "empty: list at least one layout generation"));
    }
    let mut ids: Vec<&str> = Vec::with_capacity(generations.len());
    for (i, generation) in generations.iter().enumerate() {
        let path = format!("generations[{i}]");
        let id = check_generation(generation, &path)?;
        if ids.contains(&id) {
            return Err(ProfileProblem::at(&format!("{path}.id"), format!("\"{id}\" is listed twice: give each generation its own id")));
        }
        ids.push(id);
    }
    let labels = check_labels(top.required("labels")?)?;
    let facts = object(top.required("facts")?, "facts")?;
    facts.only(&super::FACT_NAMES)?;
    let known = Known { generations: &ids, labels: &labels };
    for fact in super::FACT_NAMES {
        let path = format!("facts.{fact}");
        let probes = match facts.0.get(fact) {
            Some(probes) => list(probes, &path, MAX_PROBES_PER_FACT)?,
            None => return Err(ProfileProblem::at(&path, "missing: every fact needs its list of probes ([] when the site has none)")),
        };
        for (i, probe) in probes.iter().enumerate() {
            check_probe(probe, &format!("{path}[{i}]"), &known, true)?;
        }
    }
    selectors(top.required("never")?, "never")?;
    selectors(top.required("disabled")?, "disabled")?;
    let recheck = top.required("streaming_recheck_ms")?.as_u64().unwrap_or(0);
    if !(100..=5_000).contains(&recheck) {
        return Err(ProfileProblem::at("streaming_recheck_ms", "must be a whole number of milliseconds from 100 to 5000"));
    }
    if let Some(attr) = top.optional("turn_index_attr") {
        attribute(attr, "turn_index_attr")?;
    }
    if let Some(apps) = top.optional("app_mentions") {
        check_app_mentions(apps, &known)?;
    }
    Ok(value.clone())
}

/// What probes may name: the file's generation ids and label keys.
struct Known<'a> {
    generations: &'a [&'a str],
    labels: &'a [&'a str],
}

/// An object and its path.
struct Obj<'a, 'p>(&'a Map<String, Value>, &'p str);

impl<'a> Obj<'a, '_> {
    /// Refuses a field not in `known` (the first, in key order).
    fn only(&self, known: &[&str]) -> Checked<()> {
        match self.0.keys().find(|key| !known.contains(&key.as_str())) {
            Some(key) => Err(ProfileProblem::at(
                self.1,
                format!("unknown field \"{key}\": a profile holds selector and label tables only; remove it"),
            )),
            None => Ok(()),
        }
    }

    fn required(&self, name: &str) -> Checked<&'a Value> {
        self.0
            .get(name)
            .ok_or_else(|| ProfileProblem::at(&join(self.1, name), "missing: add it (export the built-in profile to see its shape)"))
    }

    fn optional(&self, name: &str) -> Option<&'a Value> {
        self.0.get(name)
    }
}

/// `path.name` (`name` alone at the top).
fn join(path: &str, name: &str) -> String {
    match path.is_empty() {
        true => name.to_owned(),
        false => format!("{path}.{name}"),
    }
}

fn object<'a, 'p>(value: &'a Value, path: &'p str) -> Checked<Obj<'a, 'p>> {
    match value.as_object() {
        Some(map) => Ok(Obj(map, path)),
        None if path.is_empty() => Err(ProfileProblem::at(path, "the file must hold one JSON object: export a profile to start from")),
        None => Err(ProfileProblem::at(path, "must be an object")),
    }
}

fn list<'a>(value: &'a Value, path: &str, max: usize) -> Checked<&'a [Value]> {
    let items = value.as_array().ok_or_else(|| ProfileProblem::at(path, "must be a list"))?;
    if items.len() > max {
        return Err(ProfileProblem::at(path, format!("{} entries, at most {max}: remove the ones no page needs", items.len())));
    }
    Ok(items)
}

fn string<'a>(value: &'a Value, path: &str, max_chars: usize) -> Checked<&'a str> {
    let text = value.as_str().ok_or_else(|| ProfileProblem::at(path, "must be a string"))?;
    if text.is_empty() {
        return Err(ProfileProblem::at(path, "empty: write a value or remove the entry"));
    }
    if !crate::limits::within(text, max_chars) {
        return Err(ProfileProblem::at(path, format!("longer than {max_chars} characters")));
    }
    if text.chars().any(char::is_control) {
        return Err(ProfileProblem::at(path, "holds a control character: remove it"));
    }
    Ok(text)
}

/// An id, key or version: letters, digits and `._-`, at most [`MAX_NAME_CHARS`].
fn name<'a>(value: &'a Value, path: &str) -> Checked<&'a str> {
    let text = string(value, path, MAX_NAME_CHARS)?;
    match text.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')) {
        true => Ok(text),
        false => Err(ProfileProblem::at(path, "use only letters, digits, '.', '_' and '-'")),
    }
}

/// An HTML attribute name (`data-message-id`).
fn attribute<'a>(value: &'a Value, path: &str) -> Checked<&'a str> {
    let text = string(value, path, MAX_NAME_CHARS)?;
    let first_ok = text.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    match first_ok && text.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.')) {
        true => Ok(text),
        false => Err(ProfileProblem::at(path, "not an attribute name (letters, digits, '-', '_', ':', '.')")),
    }
}

/// A date `YYYY-MM-DD`.
fn date(value: &Value, path: &str) -> Checked<()> {
    let text = value.as_str().unwrap_or_default();
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| bytes.get(range).is_some_and(|part| part.iter().all(u8::is_ascii_digit));
    let number = |range: std::ops::Range<usize>| text.get(range).and_then(|part| part.parse::<u32>().ok()).unwrap_or(0);
    let valid = bytes.len() == 10
        && digits(0..4)
        && bytes[4] == b'-'
        && digits(5..7)
        && bytes[7] == b'-'
        && digits(8..10)
        && (1..=12).contains(&number(5..7))
        && (1..=31).contains(&number(8..10));
    match valid {
        true => Ok(()),
        false => Err(ProfileProblem::at(path, "must be a date written YYYY-MM-DD")),
    }
}

fn boolean(value: &Value, path: &str) -> Checked<bool> {
    value.as_bool().ok_or_else(|| ProfileProblem::at(path, "must be true or false"))
}

/// A list of selectors (detection markers, `never`, `disabled`).
fn selectors(value: &Value, path: &str) -> Checked<()> {
    for (i, item) in list(value, path, MAX_SELECTOR_LIST)?.iter().enumerate() {
        selector(item, &format!("{path}[{i}]"))?;
    }
    Ok(())
}

/// One CSS selector, checked conservatively ([`selector_problem`]).
fn selector(value: &Value, path: &str) -> Checked<()> {
    let text = value.as_str().ok_or_else(|| ProfileProblem::at(path, "must be a CSS selector string"))?;
    match selector_problem(text) {
        Some(why) => Err(ProfileProblem::at(path, crate::text::concat(&["not a valid selector (", &why, ")"]))),
        None => Ok(()),
    }
}

/// Why `css` is refused as a selector, or `None`: empty, too long, a character or word no
/// selector needs that style or script would (`{ } ; <`, `javascript:`, `url(`, control
/// characters), or unbalanced `[ ]`, `( )` or quotes (a backslash escapes the next character).
pub fn selector_problem(css: &str) -> Option<String> {
    if css.trim().is_empty() {
        return Some("empty: write a CSS selector".to_owned());
    }
    if !crate::limits::within(css, MAX_SELECTOR_CHARS) {
        return Some(format!("longer than {MAX_SELECTOR_CHARS} characters"));
    }
    if let Some(c) = css.chars().find(|c| matches!(c, '{' | '}' | ';' | '<')) {
        return Some(format!("\"{c}\" is not allowed: a profile holds selectors, never style or script"));
    }
    if css.chars().any(|c| c.is_control() && !matches!(c, ' ' | '\t' | '\n')) {
        return Some("a control character is not allowed".to_owned());
    }
    let lower = css.to_ascii_lowercase();
    for word in ["javascript:", "url("] {
        if crate::text::contains_str(&lower, word) {
            return Some(format!("\"{word}\" is not allowed: a profile holds selectors, never a URL to load"));
        }
    }
    let mut open: Vec<char> = Vec::new();
    let mut quote: Option<char> = None;
    let mut chars = css.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (_, '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '(') => open.push(c),
            (None, ']' | ')') => {
                let opener = if c == ']' { '[' } else { '(' };
                if open.pop() != Some(opener) {
                    return Some(format!("unbalanced \"{c}\""));
                }
            }
            _ => {}
        }
    }
    if let Some(q) = quote {
        return Some(format!("unbalanced {q}"));
    }
    open.last().map(|c| format!("unbalanced \"{c}\""))
}

/// One generation; its id.
fn check_generation<'a>(value: &'a Value, path: &str) -> Checked<&'a str> {
    let generation = object(value, path)?;
    generation.only(&["id", "detect", "pending_until_complete", "checked", "source"])?;
    let id = name(generation.required("id")?, &join(path, "id"))?;
    let detect_path = join(path, "detect");
    let detect = object(generation.required("detect")?, &detect_path)?;
    detect.only(&["all", "any", "none"])?;
    for part in ["all", "any", "none"] {
        selectors(detect.required(part)?, &join(&detect_path, part))?;
    }
    boolean(generation.required("pending_until_complete")?, &join(path, "pending_until_complete"))?;
    date(generation.required("checked")?, &join(path, "checked"))?;
    string(generation.required("source")?, &join(path, "source"), MAX_NOTE_CHARS)?;
    Ok(id)
}

/// The label sets; their keys.
fn check_labels(value: &Value) -> Checked<Vec<&str>> {
    let sets = list(value, "labels", MAX_LABEL_SETS)?;
    let mut keys: Vec<&str> = Vec::with_capacity(sets.len());
    for (i, set) in sets.iter().enumerate() {
        let path = format!("labels[{i}]");
        let labels = object(set, &path)?;
        labels.only(&["key", "en", "zh"])?;
        let key = name(labels.required("key")?, &join(&path, "key"))?;
        if keys.contains(&key) {
            return Err(ProfileProblem::at(&path, format!("the key \"{key}\" is listed twice: merge the two sets")));
        }
        for language in ["en", "zh"] {
            let words = labels
                .optional(language)
                .ok_or_else(|| ProfileProblem::at(&path, format!("\"{language}\" missing: every label set has an en and a zh list")))?;
            let language_path = join(&path, language);
            let words = list(words, &language_path, MAX_LABELS_PER_LANGUAGE)?;
            if language == "en" && words.is_empty() {
                return Err(ProfileProblem::at(&language_path, "empty: give at least one English label"));
            }
            for (j, word) in words.iter().enumerate() {
                string(word, &format!("{language_path}[{j}]"), MAX_LABEL_CHARS)?;
            }
        }
        keys.push(key);
    }
    if !keys.contains(&super::NOT_STOP_WORDS) {
        return Err(ProfileProblem::at(
            "labels",
            "the \"not_stop_words\" set is missing: it keeps dictation and read-aloud controls from counting as Send or Stop",
        ));
    }
    Ok(keys)
}

/// One probe of a chain (`chain`: it carries `gens` and `fallback`) or of the App picker.
fn check_probe(value: &Value, path: &str, known: &Known<'_>, chain: bool) -> Checked<()> {
    let probe = object(value, path)?;
    let fields: &[&str] = match chain {
        true => &["css", "scope", "label", "text", "icon", "attr", "beside", "unique", "gens", "fallback"],
        false => &["css", "scope", "label", "text", "icon", "attr", "beside", "unique"],
    };
    probe.only(fields)?;
    selector(probe.required("css")?, &join(path, "css"))?;
    let scope_path = join(path, "scope");
    let scope = probe.required("scope")?.as_str().unwrap_or_default();
    if !matches!(scope, "doc" | "root" | "closest" | "tail" | "last" | "message") {
        return Err(ProfileProblem::at(&scope_path, "must be one of doc, root, closest, tail, last, message"));
    }
    for field in ["label", "text", "beside"] {
        if let Some(key) = probe.optional(field) {
            let field_path = join(path, field);
            let key = name(key, &field_path)?;
            if !known.labels.contains(&key) {
                return Err(ProfileProblem::at(&field_path, format!("no label set \"{key}\": add it to labels or name an existing one")));
            }
        }
    }
    if let Some(icon) = probe.optional("icon") {
        string(icon, &join(path, "icon"), MAX_NOTE_CHARS)?;
    }
    if let Some(attr) = probe.optional("attr") {
        attribute(attr, &join(path, "attr"))?;
    }
    for flag in ["unique", "fallback"] {
        if let Some(value) = probe.optional(flag) {
            boolean(value, &join(path, flag))?;
        }
    }
    if chain {
        let gens_path = join(path, "gens");
        let gens = list(probe.required("gens")?, &gens_path, MAX_GENERATIONS)?;
        if gens.is_empty() {
            return Err(ProfileProblem::at(&gens_path, "empty: name the generations this probe belongs to"));
        }
        for (i, generation) in gens.iter().enumerate() {
            let generation_path = format!("{gens_path}[{i}]");
            let id = generation.as_str().ok_or_else(|| ProfileProblem::at(&generation_path, "must be a generation id"))?;
            if !known.generations.contains(&id) {
                return Err(ProfileProblem::at(
                    &generation_path,
                    format!("no generation \"{id}\": list it in generations or name an existing one"),
                ));
            }
        }
    }
    Ok(())
}

/// `app_mentions`: the App pills and the `@` picker.
fn check_app_mentions(value: &Value, known: &Known<'_>) -> Checked<()> {
    let apps = object(value, "app_mentions")?;
    apps.only(&["pills", "picker", "option", "option_keyword_attr", "wait_ms"])?;
    for (i, pill) in list(apps.required("pills")?, "app_mentions.pills", 8)?.iter().enumerate() {
        let path = format!("app_mentions.pills[{i}]");
        let pill = object(pill, &path)?;
        pill.only(&["css", "keyword_attr", "name_attr", "path_attr"])?;
        selector(pill.required("css")?, &join(&path, "css"))?;
        for field in ["keyword_attr", "name_attr", "path_attr"] {
            if let Some(attr) = pill.optional(field) {
                attribute(attr, &join(&path, field))?;
            }
        }
    }
    for (i, probe) in list(apps.required("picker")?, "app_mentions.picker", MAX_PROBES_PER_FACT)?.iter().enumerate() {
        check_probe(probe, &format!("app_mentions.picker[{i}]"), known, false)?;
    }
    selector(apps.required("option")?, "app_mentions.option")?;
    attribute(apps.required("option_keyword_attr")?, "app_mentions.option_keyword_attr")?;
    if apps.required("wait_ms")?.as_u64().filter(|ms| *ms <= 10_000).is_none() {
        return Err(ProfileProblem::at("app_mentions.wait_ms", "must be a whole number of milliseconds up to 10000"));
    }
    Ok(())
}

/// The profile's `version` and `date` (of a validated profile; empty when absent).
pub fn version_and_date(profile: &Value) -> (String, String) {
    let field = |name: &str| profile.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
    (field("version"), field("date"))
}

#[cfg(test)]
mod tests;
