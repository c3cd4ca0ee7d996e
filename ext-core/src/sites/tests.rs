//! Native checks of the profile tables; the browser checks (every probe against a
//! recorded snippet of its generation) are `e2e/specs/site-profiles.spec.mjs`.

use super::*;

fn all_generations() -> impl Iterator<Item = (&'static SiteProfile, &'static Generation)> {
    PROFILES.iter().flat_map(|profile| profile.generations.iter().map(move |generation| (*profile, generation)))
}

fn label_keys(probe: &Probe) -> impl Iterator<Item = &'static str> {
    [probe.label, probe.text, probe.beside].into_iter().flatten()
}

#[test]
fn every_chatgpt_generation_has_every_fact() {
    for generation in chatgpt::PROFILE.generations {
        for (name, probes) in generation.facts.named() {
            let optional = name == "turn_list" || (name == "streaming" && generation.pending_until_complete);
            assert!(optional || !probes.is_empty(), "{} has no probe for {name}", generation.id);
        }
        assert!(
            !generation.facts.streaming.is_empty() || generation.pending_until_complete,
            "{} cannot tell that a reply streams",
            generation.id
        );
    }
}

#[test]
fn every_generation_has_what_delivery_needs() {
    for (_, generation) in all_generations() {
        let facts = &generation.facts;
        for (name, probes) in [
            ("composer", facts.composer),
            ("send", facts.send),
            ("stop", facts.stop),
            ("turn", facts.turn),
            ("user", facts.user),
            ("assistant", facts.assistant),
            ("assistant_body", facts.assistant_body),
        ] {
            assert!(!probes.is_empty(), "{} has no probe for {name}", generation.id);
        }
        let detect = &generation.detect;
        assert!(!detect.all.is_empty() || !detect.any.is_empty(), "{} detects nothing", generation.id);
    }
}

#[test]
fn every_label_a_probe_names_exists_with_english_text() {
    for (_, generation) in all_generations() {
        let known = |key: &str| generation.labels.iter().find(|set| set.key == key);
        for (name, probes) in generation.facts.named() {
            for probe in probes {
                for key in label_keys(probe) {
                    let set = known(key).unwrap_or_else(|| panic!("{} {name}: no label set `{key}`", generation.id));
                    assert!(!set.en.is_empty(), "{} label set `{key}` has no English text", generation.id);
                }
                assert!(!probe.css.is_empty(), "{} {name}: a probe without selector", generation.id);
            }
        }
        assert!(known(NOT_STOP_WORDS).is_some(), "{} lacks the dictation / read-aloud words", generation.id);
    }
}

#[test]
fn chatgpt_labels_come_in_english_and_chinese() {
    for set in chatgpt::CLASSIC.labels {
        // No Chinese rate-limit wording is recorded (SITES-2026 §1.6).
        if set.key != "rate_limit" {
            assert!(!set.zh.is_empty(), "label set `{}` has no Chinese text", set.key);
        }
    }
}

#[test]
fn data_is_streaming_is_not_a_chatgpt_attribute() {
    for generation in chatgpt::PROFILE.generations {
        let mut selectors: Vec<&str> = generation.facts.named().iter().flat_map(|(_, p)| p.iter().map(|p| p.css)).collect();
        selectors.extend(generation.detect.all.iter().chain(generation.detect.any).chain(generation.detect.none));
        assert!(selectors.iter().all(|css| !css.contains("data-is-streaming")), "{}", generation.id);
        assert!(selectors.iter().all(|css| !css.starts_with("article") || generation.id == "chatgpt.classic"
            || generation.detect.none.contains(css)), "{}: article turns belong to the classic layout", generation.id);
    }
}

#[test]
fn a_stop_found_by_its_label_is_looked_for_in_the_composer_only() {
    for (_, generation) in all_generations() {
        for probe in generation.facts.stop {
            if probe.label.is_some() {
                assert_eq!(probe.scope, Scope::Root, "{}: `{}` must be scoped to the composer", generation.id, probe.css);
            }
        }
    }
}

#[test]
fn no_stop_or_send_label_is_a_dictation_or_read_aloud_word() {
    for (_, generation) in all_generations() {
        let words = generation.labels.iter().find(|set| set.key == NOT_STOP_WORDS).map(|set| [set.en, set.zh].concat()).unwrap_or_default();
        for set in generation.labels.iter().filter(|set| set.key == "stop" || set.key == "send") {
            for label in set.en.iter().chain(set.zh) {
                let lower = label.to_lowercase();
                assert!(words.iter().all(|word| !lower.contains(word)), "{}: `{label}` reads as dictation", generation.id);
            }
        }
        if generation.id.starts_with("chatgpt.") {
            for css in ["[data-start-dictation]", "[data-testid*=\"speech\"]"] {
                assert!(generation.never.contains(&css), "{} does not exclude {css}", generation.id);
            }
        }
    }
}

/// The composer "+" lost its id `composer-plus-btn` on 2026-10-10 (FIELD-NOTES-2026Q4 §1):
/// every ChatGPT generation excludes it from Send / Stop by the old id and by the new
/// attribute and label, and no fact is found through either markup.
#[test]
fn the_composer_plus_is_never_send_or_stop_in_either_markup() {
    for generation in chatgpt::PROFILE.generations {
        for css in ["#composer-plus-btn", "[data-composer-navigation-target=\"add-context\"]", "[aria-label=\"Add files and more\"]"] {
            assert!(generation.never.contains(&css), "{} does not exclude {css}", generation.id);
        }
        for (name, probes) in generation.facts.named() {
            for probe in probes {
                for marker in ["composer-plus", "add-context", "Add files"] {
                    assert!(!crate::text::contains_str(probe.css, marker), "{} finds {name} through the \"+\" ({})", generation.id, probe.css);
                }
            }
        }
    }
}

#[test]
fn deepseek_tells_send_from_stop_by_the_icon_alone() {
    let facts = &deepseek::DS.facts;
    let (send, stop) = (facts.send[0], facts.stop[0]);
    assert_eq!(send.css, stop.css, "one circle is both");
    assert_eq!(send.icon, Some("M8.3125 0.980206"));
    assert_eq!(stop.icon, Some("M2 4.88C2 3.68009"));
    assert!(deepseek::DS.disabled.contains(&".ds-button--disabled"));
}

/// `a` implies `b` textually: equal, `a` is `b` narrowed by a leading tag name, or `a`
/// selects a descendant of `b`.
fn implies(a: &str, b: &str) -> bool {
    a == b
        || a.strip_suffix(b).is_some_and(|tag| !tag.is_empty() && tag.chars().all(|c| c.is_ascii_alphabetic()))
        || a.strip_prefix(b).is_some_and(|rest| rest.starts_with(' '))
}

/// Whether no page can satisfy both rules: every way to satisfy `a` (its `all`, else each
/// of its `any`) hits one of `b`'s `none` selectors.
fn excludes(a: &Detect, b: &Detect) -> bool {
    let hits = |css: &str| b.none.iter().any(|none| implies(css, none));
    a.all.iter().any(|css| hits(css)) || (!a.any.is_empty() && a.any.iter().all(|css| hits(css)))
}

#[test]
fn detection_rules_of_one_site_are_mutually_exclusive() {
    for profile in PROFILES {
        for (i, a) in profile.generations.iter().enumerate() {
            for b in &profile.generations[i + 1..] {
                assert!(excludes(&a.detect, &b.detect) || excludes(&b.detect, &a.detect), "{} and {} overlap", a.id, b.id);
            }
        }
    }
}

#[test]
fn generation_ids_are_unique_and_named_after_their_site() {
    let mut ids: Vec<&str> = all_generations().map(|(_, g)| g.id).collect();
    for (profile, generation) in all_generations() {
        assert!(generation.id.starts_with(&format!("{}.", profile.site)), "{}", generation.id);
    }
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), count);
    assert_eq!(chatgpt::PROFILE.generation("chatgpt.section").map(|g| g.id), Some("chatgpt.section"));
}

#[test]
fn the_profile_is_chosen_by_origin() {
    let site = |url: &str| profile_for(url).map(|profile| profile.site);
    assert_eq!(site("https://chatgpt.com/c/abc"), Some("chatgpt"));
    assert_eq!(site("https://chatgpt.com"), Some("chatgpt"));
    assert_eq!(site("https://chat.z.ai/c/1"), Some("zai"));
    assert_eq!(site("https://chat.deepseek.com/a/chat/s/1"), Some("deepseek"));
    assert_eq!(site("https://chatgpt.com.evil.example/"), None);
    assert_eq!(site("http://chatgpt.com/"), None);
    assert_eq!(site("https://example.com/?https://chatgpt.com/"), None);
}

#[test]
fn profiles_serialise_small_and_without_empty_filters() {
    for profile in PROFILES {
        let json = serde_json::to_string(profile).expect("profiles serialise");
        // ChatGPT: three generations plus the App pills and picker (≈ 0.5 KiB).
        assert!(json.len() < 13 * 1024, "{} profile is {} bytes", profile.site, json.len());
        assert!(!json.contains("null") && !json.contains("\"unique\":false"), "{}", profile.site);
    }
    let value = serde_json::to_value(chatgpt::PROFILE).expect("profiles serialise");
    let classic = &value["generations"][2];
    assert_eq!(classic["id"], "chatgpt.classic");
    assert_eq!(classic["facts"]["composer"][0], serde_json::json!({"css": "#prompt-textarea", "scope": "doc"}));
}

#[test]
fn every_profile_tells_the_adapter_how_often_to_look_into_a_streaming_reply() {
    for profile in PROFILES {
        let value = serde_json::to_value(profile).expect("profiles serialise");
        let recheck = value["streaming_recheck_ms"].as_u64().unwrap_or(0);
        // Never more often than the adapter's 100 ms coalescing (it would cost more than
        // the observer it replaces), never so rarely that a reply's new element waits a second.
        assert!((100..1000).contains(&recheck), "{}: streaming_recheck_ms {recheck}", profile.site);
    }
}

#[test]
fn fact_names_are_the_serialised_field_names_in_order() {
    let value = serde_json::to_value(chatgpt::CLASSIC.facts).expect("facts serialise");
    let keys: Vec<&str> = value.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
    let mut sorted = FACT_NAMES.to_vec();
    sorted.sort_unstable();
    assert_eq!(keys, sorted, "serde_json orders keys; every fact name is a field");
    assert_eq!(chatgpt::CLASSIC.facts.named().map(|(name, _)| name), FACT_NAMES);
}

/// The page gets each profile from the hand-written writer (smaller wasm): it writes exactly
/// what serde's derived `Serialize` writes, for every profile of every site.
#[test]
fn the_posted_profile_is_what_serde_writes() {
    use crate::json_read::WriteJson;
    for profile in PROFILES {
        let serde = serde_json::to_value(profile).expect("profiles serialise");
        assert_eq!(profile.write_json(), serde, "{}", profile.site);
    }
}

#[test]
fn chatgpt_reads_the_app_pills_of_both_generations_and_only_chatgpt_has_apps() {
    let apps = chatgpt::PROFILE.app_mentions.expect("ChatGPT attaches Apps");
    let css: Vec<&str> = apps.pills.iter().map(|pill| pill.css).collect();
    assert_eq!(
        css,
        [
            "span[data-appearance=\"inline-mention\"][app-mention-name][app-mention-path]",
            "[data-inline-selection-pill][data-symbol=\"ecosystemMention\"][data-keyword]",
        ]
    );
    // The new pill names its App (keyword = name lower-cased) and path; the old one its keyword.
    assert_eq!((apps.pills[0].keyword_attr, apps.pills[0].name_attr, apps.pills[0].path_attr), (None, Some("app-mention-name"), Some("app-mention-path")));
    assert_eq!((apps.pills[1].keyword_attr, apps.pills[1].name_attr, apps.pills[1].path_attr), (Some("data-keyword"), None, None));
    assert!(apps.picker.iter().all(|probe| matches!(probe.scope, Scope::Root | Scope::Doc) && probe.css.contains("[role=\"listbox\"]")));
    assert_eq!(apps.option, "[role=\"option\"]");
    assert!((1000..=5000).contains(&apps.wait_ms), "a bounded wait for the picker: {}", apps.wait_ms);
    assert!(zai::PROFILE.app_mentions.is_none() && deepseek::PROFILE.app_mentions.is_none());
    let value = serde_json::to_value(chatgpt::PROFILE).expect("profiles serialise");
    assert_eq!(value["app_mentions"]["pills"][1], serde_json::json!({
        "css": "[data-inline-selection-pill][data-symbol=\"ecosystemMention\"][data-keyword]", "keyword_attr": "data-keyword"}));
}
