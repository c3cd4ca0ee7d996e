//! Checks of the profile in force: options > companion > built-in, an override only while
//! it validates, the sites whose profile changed, and the records `import` / `reset` write.

use super::*;
use serde_json::json;

fn parse(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// A valid override of `site`: its built-in profile under another version.
fn override_text(site: &str, version: &str) -> String {
    let mut profile = super::builtin(site);
    profile["version"] = json!(version);
    profile.to_string()
}

fn record(entries: &[(&str, &str)]) -> Value {
    let mut record = Map::new();
    for (site, text) in entries {
        record.insert((*site).to_owned(), json!({"text": text, "imported_at": 1}));
    }
    Value::Object(record)
}

fn companion(site: &str, text: Result<String, String>) -> CompanionProfile {
    CompanionProfile { site: site.to_owned(), text, modified_ms: 5 }
}

#[test]
fn without_overrides_the_builtin_profile_is_in_force() {
    let overrides = ProfileOverrides::default();
    for profile in crate::sites::PROFILES {
        let in_force = overrides.in_force(profile.site);
        assert_eq!(in_force.source, ProfileSource::Builtin);
        assert_eq!(in_force.profile, crate::sites::builtin_profile_json(profile.site));
        assert_eq!(in_force.problem, None);
    }
    assert_eq!(overrides.in_force("gemini").profile, Value::Null);
}

#[test]
fn options_win_over_the_companion_which_wins_over_the_builtin() {
    let mut overrides = ProfileOverrides::default();
    let changed = overrides.set_companion(&[companion("chatgpt", Ok(override_text("chatgpt", "from-home")))], &parse);
    assert_eq!(changed, vec!["chatgpt"]);
    let in_force = overrides.in_force("chatgpt");
    assert_eq!((in_force.source, in_force.profile["version"].clone()), (ProfileSource::Companion, json!("from-home")));
    let changed = overrides.set_options(Some(&record(&[("chatgpt", &override_text("chatgpt", "imported"))])), &parse);
    assert_eq!(changed, vec!["chatgpt"]);
    let in_force = overrides.in_force("chatgpt");
    assert_eq!((in_force.source, in_force.profile["version"].clone()), (ProfileSource::Options, json!("imported")));
    // Reset: the companion file is in force again.
    let changed = overrides.set_options(Some(&overrides.reset("chatgpt")), &parse);
    assert_eq!(changed, vec!["chatgpt"]);
    assert_eq!(overrides.in_force("chatgpt").source, ProfileSource::Companion);
    // The same record again changes nothing.
    assert!(overrides.set_options(Some(&record(&[])), &parse).is_empty());
    assert_eq!(overrides.in_force("zai").source, ProfileSource::Builtin);
}

#[test]
fn an_override_that_does_not_validate_is_never_in_force_and_its_problem_is_named() {
    let mut overrides = ProfileOverrides::default();
    let bad = override_text("chatgpt", "x").replacen("\"schema\":1", "\"schema\":1,\"on_load\":\"fetch(1)\"", 1);
    assert!(overrides.set_options(Some(&record(&[("chatgpt", &bad)])), &parse).is_empty(), "nothing changes");
    let in_force = overrides.in_force("chatgpt");
    assert_eq!(in_force.source, ProfileSource::Builtin);
    assert_eq!(
        in_force.problem.as_deref(),
        Some("options: unknown field \"on_load\": a profile holds selector and label tables only; remove it")
    );
    // A companion file the runtime could not read, and one for another site's origin.
    overrides.set_companion(
        &[
            companion("zai", Err("profiles/zai.json is a symbolic link: copy the profile into the file itself".to_owned())),
            companion("deepseek", Ok(override_text("zai", "wrong-site"))),
        ],
        &parse,
    );
    assert_eq!(overrides.in_force("zai").source, ProfileSource::Builtin);
    assert!(overrides.in_force("zai").problem.is_some_and(|p| p.starts_with("companion: profiles/zai.json is a symbolic link")));
    assert!(overrides.in_force("deepseek").problem.is_some_and(|p| p.starts_with("companion: site: the file is for \"zai\"")));
    // A valid options override is in force: a refused companion file below it is no problem.
    overrides.set_options(Some(&record(&[("zai", &override_text("zai", "ok"))])), &parse);
    let zai = overrides.in_force("zai");
    assert_eq!((zai.source, zai.problem), (ProfileSource::Options, None));
}

#[test]
fn a_companion_file_that_goes_away_gives_the_site_back_to_the_builtin() {
    let mut overrides = ProfileOverrides::default();
    overrides.set_companion(&[companion("deepseek", Ok(override_text("deepseek", "home")))], &parse);
    assert_eq!(overrides.in_force("deepseek").source, ProfileSource::Companion);
    assert_eq!(overrides.set_companion(&[], &parse), vec!["deepseek"]);
    assert_eq!(overrides.in_force("deepseek").source, ProfileSource::Builtin);
}

#[test]
fn import_returns_the_record_to_store_or_the_first_problem() {
    let mut overrides = ProfileOverrides::default();
    overrides.set_options(Some(&record(&[("zai", &override_text("zai", "kept"))])), &parse);
    let (stored, profile) = overrides.import("chatgpt", &override_text("chatgpt", "mine"), 42, &parse).expect("valid");
    assert_eq!(profile["version"], "mine");
    assert_eq!(stored["chatgpt"]["imported_at"], 42);
    assert_eq!(stored["zai"], record(&[("zai", &override_text("zai", "kept"))])["zai"], "other sites kept");
    // Nothing changes until the record comes back through set_options.
    assert_eq!(overrides.in_force("chatgpt").source, ProfileSource::Builtin);
    let refused = overrides.import("chatgpt", "{\"schema\": 1,", 42, &parse).expect_err("malformed");
    assert!(refused.to_string().starts_with("not JSON"), "{refused}");
    let refused = overrides.import("chatgpt", &override_text("zai", "x"), 42, &parse).expect_err("another site's");
    assert!(refused.to_string().starts_with("site: the file is for \"zai\""), "{refused}");
    assert!(overrides.import("gemini", "{}", 1, &parse).is_err());
    assert_eq!(overrides.reset("zai"), json!({}));
}

#[test]
fn the_companion_serves_the_files_of_exactly_the_builtin_sites() {
    let sites: Vec<&str> = crate::sites::PROFILES.iter().map(|profile| profile.site).collect();
    assert_eq!(sites, continuity_protocol::limits::PROFILE_SITES);
}
