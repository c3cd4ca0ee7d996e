//! HUD view model tests (R: A2, O1): every key the core can produce exists in every
//! locale, and the actions offered match the link state.

use std::collections::BTreeMap;

use ext_core::companion_link::{HerdrConnection, HerdrStatus, Incompatibility, LinkState, OfflineReason, PortGeneration};
use ext_core::hud::{view_of, ActionId, Tone, MESSAGE_KEYS};

fn locale(name: &str) -> BTreeMap<String, serde_json::Value> {
    let path = format!("{}/../extension/_locales/{name}/messages.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {path}: {e}"))
}

#[test]
fn every_hud_message_key_exists_in_english_and_chinese() {
    for name in ["en", "zh_CN"] {
        let messages = locale(name);
        let missing: Vec<&&str> = MESSAGE_KEYS.iter().filter(|key| !messages.contains_key(**key)).collect();
        assert!(missing.is_empty(), "{name} lacks {missing:?}");
    }
    let en: Vec<String> = locale("en").into_keys().collect();
    let zh: Vec<String> = locale("zh_CN").into_keys().collect();
    assert_eq!(en, zh, "both locales define the same keys");
}

#[test]
fn substitutions_match_the_placeholders_each_message_uses() {
    let messages = locale("en");
    let herdr = HerdrStatus {
        state: HerdrConnection::Connected,
        protocol: Some(20),
        version: Some("0.8.2".into()),
        socket: "/s".into(),
        detail: None,
    };
    let states = [
        LinkState::Idle,
        LinkState::Connected { port: PortGeneration(1), runtime_version: "0.1.0".into(), herdr },
        LinkState::Disconnected { retry_at: 0, reason: OfflineReason::RuntimeUnreachable { message: "x".into() } },
        LinkState::Disconnected { retry_at: 0, reason: OfflineReason::HostNotInstalled },
        LinkState::Incompatible {
            why: Incompatibility::UpdateCompanion { runtime_version: "0.1.0".into(), extension_protocol: 2, runtime_protocol: 1 },
        },
        LinkState::Incompatible {
            why: Incompatibility::UpdateExtension { runtime_version: "0.3.0".into(), extension_protocol: 2, runtime_protocol: 3 },
        },
        LinkState::Incompatible {
            why: Incompatibility::CompanionLacks { runtime_version: "0.2.0".into(), missing: vec!["profiles.get".into()] },
        },
    ];
    for state in &states {
        let view = view_of(state);
        // The worker posts the view written by hand (ext_core::json_read), in serde's shape.
        assert_eq!(ext_core::json_read::WriteJson::write_json(&view), serde_json::to_value(&view).expect("serialize"));
        for line in [&view.companion, &view.herdr] {
            let text = messages[line.key]["message"].as_str().unwrap_or_default().to_owned();
            for n in 1..=line.substitutions.len() {
                assert!(text.contains(&format!("${n}")), "{} does not use ${n}", line.key);
            }
            assert!(!text.contains(&format!("${}", line.substitutions.len() + 1)), "{} expects more substitutions", line.key);
        }
    }
}

#[test]
fn retry_is_offered_exactly_when_offline_or_incompatible_and_round_trip_when_connected() {
    let offline = view_of(&LinkState::Disconnected { retry_at: 5, reason: OfflineReason::HostExited });
    assert_eq!(offline.actions.iter().map(|a| a.id).collect::<Vec<_>>(), vec![ActionId::RetryCompanion]);
    assert_eq!(offline.companion.tone, Tone::Warning);
    let incompatible = view_of(&LinkState::Incompatible {
        why: Incompatibility::UpdateExtension { runtime_version: "0.3.0".into(), extension_protocol: 2, runtime_protocol: 3 },
    });
    assert_eq!(incompatible.companion.key, "hudVersionMismatchExtension");
    assert_eq!(incompatible.companion.substitutions, vec!["2".to_owned(), "0.3.0".to_owned(), "3".to_owned()]);
    assert_eq!(incompatible.actions.iter().map(|a| a.id).collect::<Vec<_>>(), vec![ActionId::RetryCompanion]);
    let connecting = view_of(&LinkState::Connecting { port: PortGeneration(1), deadline: 0 });
    assert!(connecting.actions.is_empty());
    assert_eq!(connecting.herdr.key, "herdrUnknown");
}

#[test]
fn the_round_trip_line_shows_the_elapsed_time_with_two_decimals() {
    use ext_core::companion_link::ProbeOutcome;
    use ext_core::hud::round_trip_line;
    let shown = |ms: f64| round_trip_line(&ProbeOutcome::Answered, ms).substitutions;
    assert_eq!(shown(12.345_6), ["12.35"]);
    assert_eq!(shown(0.049), ["0.05"]);
    assert_eq!(shown(7.0), ["7.00"]);
    assert_eq!(shown(1234.5), ["1234.50"]);
    assert!(round_trip_line(&ProbeOutcome::TimedOut, 3.0).substitutions.is_empty(), "no time when nothing answered");
}
