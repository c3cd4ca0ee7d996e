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
        assert!(
            selectors
                .iter()
                .all(|css| !css.starts_with("article") || generation.id == "chatgpt.classic" || generation.detect.none.contains(css)),
            "{}: article turns belong to the classic layout",
            generation.id
        );
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
                    assert!(
                        !crate::text::contains_str(probe.css, marker),
                        "{} finds {name} through the \"+\" ({})",
                        generation.id,
                        probe.css
                    );
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
        let json = serde_json::to_string(&profile.flat()).expect("profiles serialise");
        // ChatGPT: three generations merged into one chain per fact plus the App pills.
        assert!(json.len() < 16 * 1024, "{} profile is {} bytes", profile.site, json.len());
        assert!(!json.contains("null") && !json.contains("\"unique\":false"), "{}", profile.site);
    }
    let value = builtin_profile_json("chatgpt");
    assert_eq!(value["schema"], 1);
    assert_eq!(value["version"], "builtin");
    assert_eq!(value["generations"][2]["id"], "chatgpt.classic");
    // The thread composer leads the chain; the classic one follows as a primary, before
    // any generation's fallback.
    assert_eq!(
        value["facts"]["composer"][1],
        serde_json::json!({
        "css": "#prompt-textarea", "scope": "doc", "gens": ["chatgpt.section", "chatgpt.classic"], "fallback": false})
    );
    assert_eq!(builtin_profile_json("example"), serde_json::Value::Null);
}

#[test]
fn every_profile_tells_the_adapter_how_often_to_look_into_a_streaming_reply() {
    for profile in PROFILES {
        let value = builtin_profile_json(profile.site);
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
/// what serde's derived `Serialize` writes of the same flat profile, for every site, and
/// for a synthetic profile that has every optional field and filter.
#[test]
fn the_posted_profile_is_what_serde_writes() {
    use crate::json_read::WriteJson;
    for profile in PROFILES.iter().copied().chain([&merge::PROFILE]) {
        let flat = profile.flat();
        let serde = serde_json::to_value(&flat).expect("profiles serialise");
        assert_eq!(flat.write_json(), serde, "{}", profile.site);
        assert_eq!(profile.write_json(), serde, "{}", profile.site);
    }
}

#[test]
fn every_builtin_profile_has_its_dates_and_sources() {
    for (profile, generation) in all_generations() {
        let date = generation.checked.as_bytes();
        let digits = |range: std::ops::Range<usize>| date[range].iter().all(u8::is_ascii_digit);
        assert!(
            date.len() == 10 && digits(0..4) && date[4] == b'-' && digits(5..7) && date[7] == b'-' && digits(8..10),
            "{}: checked `{}` is not YYYY-MM-DD",
            generation.id,
            generation.checked
        );
        assert!(generation.source.starts_with("SITES-2026 §"), "{}: source `{}`", generation.id, generation.source);
        let flat = profile.flat();
        assert!(flat.date >= generation.checked, "{}: the profile's date is the newest check", profile.site);
        assert!(flat
            .generations
            .iter()
            .any(|head| head.id == generation.id && head.checked == generation.checked && head.source == generation.source));
    }
    assert_eq!(chatgpt::PROFILE.flat().date, "2026-09-26");
    assert_eq!(deepseek::PROFILE.flat().date, deepseek::DS.checked);
}

#[test]
fn every_fact_is_present_in_order_and_every_probe_of_every_generation_is_in_its_chain() {
    for profile in PROFILES {
        let flat = profile.flat();
        assert_eq!(flat.facts.iter().map(|(name, _)| *name).collect::<Vec<_>>(), FACT_NAMES, "{}", profile.site);
        for generation in profile.generations {
            for ((name, probes), (_, chain)) in generation.facts.named().iter().zip(&flat.facts) {
                // Every probe of the generation is in the chain, with the generation among
                // its `gens`; its first probe is a primary path (not a fallback). The chain
                // need not keep a later generation's order: a probe an earlier generation
                // lists keeps that earlier position (ChatGPT's `form` root precedes the
                // classic `form[data-type="unified-composer"]`).
                let positions: Vec<usize> = probes
                    .iter()
                    .map(|probe| {
                        let at = chain.iter().position(|entry| entry.probe == *probe);
                        at.unwrap_or_else(|| panic!("{} {name}: `{}` missing from the chain", generation.id, probe.css))
                    })
                    .collect();
                if let Some(first) = positions.first() {
                    assert!(!chain[*first].fallback, "{} {name}: its first probe is no fallback", generation.id);
                }
                for at in positions {
                    assert!(chain[at].gens.contains(&generation.id), "{} {name}", generation.id);
                }
            }
        }
        let json = builtin_profile_json(profile.site);
        let keys: Vec<&str> = json["facts"].as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
        let mut sorted = FACT_NAMES.to_vec();
        sorted.sort_unstable();
        assert_eq!(keys, sorted, "{}: every fact is a key, each an array", profile.site);
        assert!(json["facts"].as_object().is_some_and(|facts| facts.values().all(serde_json::Value::is_array)));
    }
}

/// The merge on a synthetic profile: two generations share some probes, labels and
/// `never` selectors.
mod merge {
    use super::super::*;

    const A1: Probe = Probe::doc("#a1");
    const SHARED: Probe = Probe::doc("#shared");
    const B1: Probe = Probe::doc("#b1");
    /// Same selector as `SHARED`, another filter: a different probe.
    const SHARED_UNIQUE: Probe = Probe { css: "#shared", unique: true, ..Probe::DOC };
    const EMPTY: Facts = Facts {
        composer: &[],
        root: &[],
        send: &[],
        stop: &[],
        turn_list: &[],
        turn: &[],
        user: &[],
        assistant: &[],
        message_id: &[],
        assistant_body: &[],
        streaming: &[],
        complete: &[],
        thread_error: &[],
        retry: &[],
        permission_card: &[],
        rate_limit: &[],
    };
    const NEW: Generation = Generation {
        id: "test.new",
        detect: Detect { all: &["#new"], any: &[], none: &["#old"] },
        facts: Facts {
            // `SHARED` is a fallback here but leads `test.old`: not a fallback in the chain.
            composer: &[A1, SHARED],
            // `SHARED` is a fallback in both generations.
            send: &[A1, SHARED],
            stop: &[Probe { css: "button", scope: Scope::Root, label: Some("stop"), ..Probe::DOC }],
            ..EMPTY
        },
        labels: &[LabelSet { key: "stop", en: &["Stop", "Halt"], zh: &["停止"] }, LabelSet { key: "only_new", en: &["New"], zh: &[] }],
        never: &["[data-voice]", "[data-dictate]"],
        disabled: &["[disabled]"],
        pending_until_complete: true,
        checked: "2026-09-01",
        source: "SITES-2026 §0: test",
    };
    const OLD: Generation = Generation {
        id: "test.old",
        detect: Detect { all: &[], any: &["#old"], none: &[] },
        facts: Facts { composer: &[SHARED, B1, SHARED_UNIQUE], send: &[B1, SHARED], ..EMPTY },
        labels: &[LabelSet { key: "stop", en: &["Halt", "Stop generating"], zh: &["停止", "停止生成"] }],
        never: &["[data-dictate]", "[data-speech]"],
        disabled: &["[disabled]", "[aria-disabled=\"true\"]"],
        pending_until_complete: false,
        checked: "2026-10-02",
        source: "SITES-2026 §0: older test",
    };
    pub const PROFILE: SiteProfile = SiteProfile {
        site: "test",
        origin: "https://test.example",
        generations: &[NEW, OLD],
        streaming_recheck_ms: 500,
        turn_index_attr: Some("data-index"),
        app_mentions: Some(&chatgpt::APP_MENTIONS),
    };

    fn chain(fact: &str) -> Vec<(&'static str, Vec<&'static str>, bool)> {
        let flat = PROFILE.flat();
        let (_, chain) = flat.facts.into_iter().find(|(name, _)| *name == fact).expect("every fact is present");
        chain.into_iter().map(|entry| (entry.probe.css, entry.gens, entry.fallback)).collect()
    }

    #[test]
    fn identical_probes_are_kept_once_at_their_first_position_with_every_generation() {
        assert_eq!(
            chain("composer"),
            [
                ("#a1", vec!["test.new"], false),
                ("#shared", vec!["test.new", "test.old"], false),
                ("#b1", vec!["test.old"], true),
                ("#shared", vec!["test.old"], true),
            ]
        );
        let flat = PROFILE.flat();
        assert!(flat.facts[0].1[3].probe.unique, "the same selector with another filter is another probe");
    }

    #[test]
    fn a_probe_is_a_fallback_only_when_it_leads_no_generation_listing_it_and_primaries_come_first() {
        assert_eq!(
            chain("send"),
            [("#a1", vec!["test.new"], false), ("#b1", vec!["test.old"], false), ("#shared", vec!["test.new", "test.old"], true)]
        );
        assert_eq!(chain("stop"), [("button", vec!["test.new"], false)]);
        assert!(chain("turn").is_empty(), "a fact no generation has is an empty chain");
    }

    #[test]
    fn labels_never_and_disabled_are_unioned_in_order() {
        let flat = PROFILE.flat();
        let labels: Vec<(&str, Vec<&str>, Vec<&str>)> = flat.labels.iter().map(|set| (set.key, set.en.clone(), set.zh.clone())).collect();
        assert_eq!(
            labels,
            [("stop", vec!["Stop", "Halt", "Stop generating"], vec!["停止", "停止生成"]), ("only_new", vec!["New"], vec![])]
        );
        assert_eq!(flat.never, ["[data-voice]", "[data-dictate]", "[data-speech]"]);
        assert_eq!(flat.disabled, ["[disabled]", "[aria-disabled=\"true\"]"]);
    }

    #[test]
    fn the_flat_profile_names_its_generations_schema_version_and_newest_date() {
        let json = crate::json_read::WriteJson::write_json(&PROFILE);
        assert_eq!(json["schema"], 1);
        assert_eq!(json["version"], "builtin");
        assert_eq!(json["date"], "2026-10-02", "the newest check, not the first generation's");
        assert_eq!(
            json["generations"],
            serde_json::json!([
                {"id": "test.new", "detect": {"all": ["#new"], "any": [], "none": ["#old"]}, "pending_until_complete": true,
                 "checked": "2026-09-01", "source": "SITES-2026 §0: test"},
                {"id": "test.old", "detect": {"all": [], "any": ["#old"], "none": []}, "pending_until_complete": false,
                 "checked": "2026-10-02", "source": "SITES-2026 §0: older test"},
            ])
        );
        assert_eq!(
            json["facts"]["stop"],
            serde_json::json!([
            {"css": "button", "scope": "root", "label": "stop", "gens": ["test.new"], "fallback": false}])
        );
        assert_eq!(json["facts"]["composer"][3]["unique"], true);
        assert_eq!(json["turn_index_attr"], "data-index");
        assert!(json.get("facts").and_then(|facts| facts.get("generations")).is_none());
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
    assert_eq!(
        (apps.pills[0].keyword_attr, apps.pills[0].name_attr, apps.pills[0].path_attr),
        (None, Some("app-mention-name"), Some("app-mention-path"))
    );
    assert_eq!((apps.pills[1].keyword_attr, apps.pills[1].name_attr, apps.pills[1].path_attr), (Some("data-keyword"), None, None));
    assert!(apps.picker.iter().all(|probe| matches!(probe.scope, Scope::Root | Scope::Doc) && probe.css.contains("[role=\"listbox\"]")));
    assert_eq!(apps.option, "[role=\"option\"]");
    assert!((1000..=5000).contains(&apps.wait_ms), "a bounded wait for the picker: {}", apps.wait_ms);
    assert!(zai::PROFILE.app_mentions.is_none() && deepseek::PROFILE.app_mentions.is_none());
    let value = builtin_profile_json("chatgpt");
    assert_eq!(
        value["app_mentions"]["pills"][1],
        serde_json::json!({
        "css": "[data-inline-selection-pill][data-symbol=\"ecosystemMention\"][data-keyword]", "keyword_attr": "data-keyword"})
    );
}
