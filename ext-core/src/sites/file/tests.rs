//! Checks of the profile file's validation: one test per rule, each naming the first
//! problem by its path; the built-in profiles of every site validate.

use super::*;
use serde_json::json;

/// A small valid v2 profile of `site` (one generation, every fact, the labels it names).
fn minimal(site: &str) -> Value {
    let origin = crate::sites::PROFILES.iter().find(|p| p.site == site).map(|p| p.origin).unwrap_or_default();
    let generation = format!("{site}.renamed");
    let mut facts = Map::new();
    for fact in crate::sites::FACT_NAMES {
        facts.insert(fact.to_owned(), json!([]));
    }
    facts.insert("composer".to_owned(), json!([{"css": "[data-x-composer]", "scope": "doc", "gens": [generation], "fallback": false}]));
    facts.insert(
        "send".to_owned(),
        json!([{"css": "button[data-x-send]", "scope": "root", "label": "send", "gens": [generation], "fallback": false}]),
    );
    json!({
        "schema": 1, "site": site, "origin": origin, "version": "my-fix-1", "date": "2026-12-06",
        "generations": [{"id": generation, "detect": {"all": ["[data-x-composer]"], "any": [], "none": []},
                         "pending_until_complete": false, "checked": "2026-12-06", "source": "my page"}],
        "facts": facts,
        "labels": [{"key": "send", "en": ["Send"], "zh": ["发送"]}, {"key": "not_stop_words", "en": ["voice"], "zh": []}],
        "never": [], "disabled": ["[disabled]"], "streaming_recheck_ms": 500
    })
}

fn problem(value: &Value) -> String {
    match validate_profile(value, Some("chatgpt")) {
        Ok(_) => panic!("accepted: {value}"),
        Err(problem) => problem.to_string(),
    }
}

/// `value` with the field or item at `pointer` set to `new` (an object's field is added).
fn with(mut value: Value, pointer: &str, new: Value) -> Value {
    let (parent, last) = pointer.rsplit_once('/').unwrap_or_else(|| panic!("no / in {pointer}"));
    match value.pointer_mut(parent).unwrap_or_else(|| panic!("no {parent}")) {
        Value::Object(map) => {
            map.insert(last.to_owned(), new);
        }
        other => *other.pointer_mut(&format!("/{last}")).unwrap_or_else(|| panic!("no {pointer}")) = new,
    }
    value
}

#[test]
fn a_minimal_profile_validates_and_comes_back_unchanged() {
    let profile = minimal("chatgpt");
    assert_eq!(validate_profile(&profile, Some("chatgpt")), Ok(profile.clone()));
    assert_eq!(validate_profile(&profile, None), Ok(profile.clone()));
    assert_eq!(version_and_date(&profile), ("my-fix-1".to_owned(), "2026-12-06".to_owned()));
}

#[test]
fn malformed_json_is_refused_as_not_json() {
    let refused = validate_profile_text("{\"schema\": 1,", Some("chatgpt")).expect_err("malformed");
    assert_eq!(refused.path, "");
    assert!(refused.message.starts_with("not JSON ("), "{refused}");
    let refused = validate_profile_text("[1, 2]", Some("chatgpt")).expect_err("not an object");
    assert!(refused.message.contains("one JSON object"), "{refused}");
}

#[test]
fn a_file_over_64_kib_is_refused_before_parsing() {
    let text = format!("{{\"pad\": \"{}\"}}", "x".repeat(MAX_PROFILE_BYTES));
    let refused = validate_profile_with(&text, |_| panic!("parsed a file over the cap"), None).expect_err("too big");
    assert!(refused.message.contains("at most 65536"), "{refused}");
}

#[test]
fn code_bearing_fields_are_refused_anywhere() {
    let mut top = minimal("chatgpt");
    top["on_load"] = json!("fetch('https://evil.example/x')");
    assert_eq!(problem(&top), "unknown field \"on_load\": a profile holds selector and label tables only; remove it");
    let probe = with(minimal("chatgpt"), "/facts/send/0/onclick", json!("alert(1)"));
    assert!(problem(&probe).starts_with("facts.send[0]: unknown field \"onclick\""), "{}", problem(&probe));
    let generation = with(minimal("chatgpt"), "/generations/0/script", json!("x"));
    assert!(problem(&generation).starts_with("generations[0]: unknown field \"script\""));
    let label = with(minimal("chatgpt"), "/labels/0/html", json!("<b>"));
    assert!(problem(&label).starts_with("labels[0]: unknown field \"html\""));
    let fact = with(minimal("chatgpt"), "/facts/eval", json!([]));
    assert!(problem(&fact).starts_with("facts: unknown field \"eval\""));
}

#[test]
fn selectors_that_could_carry_style_or_script_are_refused() {
    for (css, why) in [
        ("button{color:red}", "\"{\" is not allowed"),
        ("button}", "\"}\" is not allowed"),
        ("a;b", "\";\" is not allowed"),
        ("<script>", "\"<\" is not allowed"),
        ("a[href^='JavaScript:x']", "\"javascript:\" is not allowed"),
        ("div[style*='url(x)']", "\"url(\" is not allowed"),
        ("a\u{0}b", "a control character"),
        ("", "empty"),
        ("   ", "empty"),
    ] {
        let value = with(minimal("chatgpt"), "/facts/send/0/css", json!(css));
        let refused = problem(&value);
        assert!(refused.starts_with("facts.send[0].css: not a valid selector ("), "{css}: {refused}");
        assert!(refused.contains(why), "{css}: {refused}");
    }
    let long = "a".repeat(MAX_SELECTOR_CHARS + 1);
    assert!(problem(&with(minimal("chatgpt"), "/never", json!([long]))).starts_with("never[0]: not a valid selector (longer than 512"));
}

#[test]
fn unbalanced_brackets_parentheses_and_quotes_are_refused() {
    for (css, why) in [
        ("button[data-x", "unbalanced \"[\""),
        ("button]", "unbalanced \"]\""),
        ("div:not(.a", "unbalanced \"(\""),
        ("div:not(.a])", "unbalanced \"]\""),
        ("[aria-label=\"Send]", "unbalanced \""),
        ("[aria-label='Send]", "unbalanced '"),
    ] {
        assert_eq!(selector_problem(css).as_deref(), Some(why), "{css}");
    }
    // `>` is a combinator; brackets inside quotes and escaped ones do not count.
    for css in ["form > button", "[aria-label=\"a [b\"]", "div:has(> [data-x='(']) .y", "a\\[b", "button:not([disabled])"] {
        assert_eq!(selector_problem(css), None, "{css}");
    }
    let value = with(minimal("chatgpt"), "/generations/0/detect/any", json!(["a", "b[c"]));
    assert_eq!(problem(&value), "generations[0].detect.any[1]: not a valid selector (unbalanced \"[\")");
}

#[test]
fn a_wrong_origin_or_an_unknown_site_is_refused() {
    let value = with(minimal("chatgpt"), "/origin", json!("https://evil.example"));
    assert!(problem(&value).starts_with("origin: must be https://chatgpt.com for chatgpt"), "{}", problem(&value));
    let value = with(minimal("chatgpt"), "/site", json!("gemini"));
    assert!(problem(&value).starts_with("site: \"gemini\" is not a known site"));
    let zai = minimal("zai");
    assert!(validate_profile(&zai, None).is_ok());
    assert!(problem(&zai).starts_with("site: the file is for \"zai\", not chatgpt"), "{}", problem(&zai));
}

#[test]
fn the_schema_version_and_dates_are_checked() {
    assert!(problem(&with(minimal("chatgpt"), "/schema", json!(2))).starts_with("schema: must be 1"));
    assert!(problem(&with(minimal("chatgpt"), "/version", json!(""))).starts_with("version: empty"));
    assert!(problem(&with(minimal("chatgpt"), "/version", json!("v 1"))).starts_with("version: use only"));
    assert!(problem(&with(minimal("chatgpt"), "/date", json!("6.12.2026"))).starts_with("date: must be a date"));
    assert!(problem(&with(minimal("chatgpt"), "/generations/0/checked", json!("2026-13-01"))).starts_with("generations[0].checked:"));
    let mut missing = minimal("chatgpt");
    missing.as_object_mut().map(|o| o.remove("version"));
    assert!(problem(&missing).starts_with("version: missing"));
}

#[test]
fn every_fact_must_be_present() {
    let mut value = minimal("chatgpt");
    value["facts"].as_object_mut().map(|facts| facts.remove("composer"));
    assert!(problem(&value).starts_with("facts.composer: missing"), "{}", problem(&value));
    let value = with(minimal("chatgpt"), "/facts/stop", json!({}));
    assert_eq!(problem(&value), "facts.stop: must be a list");
}

#[test]
fn labels_need_english_and_a_chinese_list_and_must_exist() {
    let mut value = minimal("chatgpt");
    value["labels"][0].as_object_mut().map(|set| set.remove("zh"));
    assert_eq!(problem(&value), "labels[0]: \"zh\" missing: every label set has an en and a zh list");
    let value = with(minimal("chatgpt"), "/labels/0/en", json!([]));
    assert!(problem(&value).starts_with("labels[0].en: empty"));
    let value = with(minimal("chatgpt"), "/facts/send/0/label", json!("submit"));
    assert!(problem(&value).starts_with("facts.send[0].label: no label set \"submit\""), "{}", problem(&value));
    let value = with(minimal("chatgpt"), "/labels/1/key", json!("other"));
    assert!(problem(&value).starts_with("labels: the \"not_stop_words\" set is missing"));
}

#[test]
fn probes_name_their_generations_and_a_known_scope() {
    let value = with(minimal("chatgpt"), "/facts/composer/0/gens", json!(["chatgpt.other"]));
    assert!(problem(&value).starts_with("facts.composer[0].gens[0]: no generation \"chatgpt.other\""));
    let value = with(minimal("chatgpt"), "/facts/composer/0/gens", json!([]));
    assert!(problem(&value).starts_with("facts.composer[0].gens: empty"));
    let value = with(minimal("chatgpt"), "/facts/composer/0/scope", json!("window"));
    assert!(problem(&value).starts_with("facts.composer[0].scope: must be one of"));
    let value = with(minimal("chatgpt"), "/facts/composer/0/attr", json!("on load"));
    assert!(problem(&value).starts_with("facts.composer[0].attr: not an attribute name"));
}

#[test]
fn counts_are_capped() {
    let probe = json!({"css": "a", "scope": "doc", "gens": ["chatgpt.renamed"]});
    let value = with(minimal("chatgpt"), "/facts/turn", Value::Array(vec![probe; MAX_PROBES_PER_FACT + 1]));
    assert!(problem(&value).starts_with("facts.turn: 33 entries, at most 32"), "{}", problem(&value));
    let words: Vec<Value> = (0..=MAX_LABELS_PER_LANGUAGE).map(|i| json!(format!("w{i}"))).collect();
    let value = with(minimal("chatgpt"), "/labels/0/en", Value::Array(words));
    assert!(problem(&value).starts_with("labels[0].en: 33 entries, at most 32"));
    let generation = minimal("chatgpt")["generations"][0].clone();
    let value = with(minimal("chatgpt"), "/generations", Value::Array(vec![generation; MAX_GENERATIONS + 1]));
    assert!(problem(&value).starts_with("generations: 17 entries, at most 16"));
    let value = with(minimal("chatgpt"), "/labels", Value::Array(vec![json!({}); MAX_LABEL_SETS + 1]));
    assert!(problem(&value).starts_with("labels: 65 entries, at most 64"));
}

#[test]
fn app_mentions_are_checked_like_the_rest() {
    let mut value = minimal("chatgpt");
    value["app_mentions"] = json!({"pills": [{"css": "span.pill", "keyword_attr": "data-kw"}], "picker": [{"css": "[role=listbox]", "scope": "doc"}],
                                   "option": "[role=option]", "option_keyword_attr": "data-kw", "wait_ms": 1500});
    assert!(validate_profile(&value, None).is_ok());
    let bad = with(value.clone(), "/app_mentions/picker/0/gens", json!(["chatgpt.renamed"]));
    assert!(problem(&bad).starts_with("app_mentions.picker[0]: unknown field \"gens\""));
    let bad = with(value, "/app_mentions/option", json!("a{b}"));
    assert!(problem(&bad).starts_with("app_mentions.option: not a valid selector"));
}

#[test]
fn the_builtin_profile_of_every_site_validates() {
    for profile in crate::sites::PROFILES {
        let exported = crate::sites::builtin_profile_json(profile.site);
        assert_eq!(validate_profile(&exported, Some(profile.site)), Ok(exported.clone()), "{}", profile.site);
        // As the options page exports it: text, read back.
        assert!(validate_profile_text(&exported.to_string(), Some(profile.site)).is_ok(), "{}", profile.site);
    }
}
