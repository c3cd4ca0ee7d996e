//! The options page's recovery and health thresholds (SPEC S4, S7, H1, H3, H4; REFERENCE §2
//! defaults): a record is taken whole or refused whole, naming the field and its range.

use ext_core::health::{HealthThresholds, CALLBACKS_PER_MIN, DRIFT_MS, HEAP_CRITICAL_BYTES, QUIET_MS, SUSTAINED_MS};
use ext_core::recovery::{RecoveryTimings, ASSISTANT_STALL_MS, RELOAD_COOLDOWN_MS, REPLY_TIMEOUT_MS, SERVER_STALL_WAIT_MS};
use ext_core::recovery_config::{ConfigError, RecoveryConfig, FIELDS};
use serde_json::json;

// REFERENCE §2: herdr-mcp's defaults are ours — an empty record is the planner's and the
// meters' own constants.
#[test]
fn an_empty_record_gives_the_defaults_of_reference_2() {
    let config = RecoveryConfig::read(&json!({})).expect("an empty record is valid");
    assert_eq!(config, RecoveryConfig::default());
    assert_eq!(
        config.timings,
        RecoveryTimings {
            reply_timeout_ms: REPLY_TIMEOUT_MS,
            assistant_stall_ms: ASSISTANT_STALL_MS,
            server_stall_ms: SERVER_STALL_WAIT_MS,
            reload_cooldown_ms: RELOAD_COOLDOWN_MS,
        }
    );
    assert_eq!((REPLY_TIMEOUT_MS, ASSISTANT_STALL_MS, SERVER_STALL_WAIT_MS, RELOAD_COOLDOWN_MS), (30_000, 30_000, 60_000, 60_000));
    let h = config.health;
    let figures = (h.callbacks_warn, h.callbacks_high, h.drift_warn_ms, h.drift_high_ms, h.heap_critical_bytes, h.sustained_ms, h.quiet_ms);
    assert_eq!(figures, (600, 2_400, 1_500, 5_000, 1_536 << 20, 30_000, 30_000), "REFERENCE §2");
    assert_eq!(
        (CALLBACKS_PER_MIN, DRIFT_MS, HEAP_CRITICAL_BYTES, SUSTAINED_MS, QUIET_MS),
        ((600, 2_400), (1_500, 5_000), 1_536 << 20, 30_000, 30_000)
    );
}

#[test]
fn a_valid_record_is_read_in_its_units() {
    let record = json!({"reply_timeout_sec": 12, "assistant_stall_sec": 15, "server_stall_sec": 90, "reload_cooldown_sec": 20,
        "callbacks_warn_per_min": 300, "callbacks_high_per_min": 900, "drift_warn_ms": 800, "drift_high_ms": 2000,
        "heap_critical_mib": 1024, "sustained_sec": 10, "quiet_sec": 45});
    let config = RecoveryConfig::read(&record).expect("valid");
    assert_eq!(
        config.timings,
        RecoveryTimings { reply_timeout_ms: 12_000, assistant_stall_ms: 15_000, server_stall_ms: 90_000, reload_cooldown_ms: 20_000 }
    );
    assert_eq!(
        config.health,
        HealthThresholds {
            callbacks_warn: 300,
            callbacks_high: 900,
            drift_warn_ms: 800,
            drift_high_ms: 2_000,
            heap_critical_bytes: 1024 * 1024 * 1024,
            sustained_ms: 10_000,
            quiet_ms: 45_000,
        }
    );
}

// Every field, just outside its range, not a whole number, or of another type, refuses the
// whole record by that field's name and range.
#[test]
fn a_bad_value_names_its_field_and_range_and_refuses_the_record() {
    for f in FIELDS {
        let mut bad = vec![json!(f.max + 1), json!(1.5), json!("30"), json!(-1), json!(null)];
        if f.min > 0 {
            bad.push(json!(f.min - 1));
        }
        for value in bad {
            let record = json!({ f.name: value });
            let error = RecoveryConfig::read(&record).expect_err("refused");
            assert_eq!(error, ConfigError { field: f.name, min: f.min, max: f.max }, "{record}");
        }
        assert!(RecoveryConfig::read(&json!({ f.name: f.min })).is_ok() || f.name.contains("high"), "{} accepts its minimum", f.name);
        assert!(RecoveryConfig::read(&json!({ f.name: f.max })).is_ok() || f.name.contains("warn"), "{} accepts its maximum", f.name);
    }
    assert_eq!(RecoveryConfig::read(&json!([1, 2])), Err(ConfigError { field: "record", min: 0, max: 0 }));
}

// H1: a high threshold at or below its warn one is refused, naming the high field and the
// range it must lie in.
#[test]
fn a_high_threshold_must_lie_above_its_warn_one() {
    let error = RecoveryConfig::read(&json!({"callbacks_warn_per_min": 3_000})).expect_err("the default high is below");
    assert_eq!(error, ConfigError { field: "callbacks_high_per_min", min: 3_001, max: 100_000 });
    let error = RecoveryConfig::read(&json!({"drift_warn_ms": 900, "drift_high_ms": 900})).expect_err("equal");
    assert_eq!(error, ConfigError { field: "drift_high_ms", min: 901, max: 60_000 });
}

// The options page shows the same fields with the same ranges and defaults: it takes them
// from the generated contracts (`extension/contracts.js`, written from `FIELDS`; the contracts
// test checks the file is current and that its ranges are the ones `read` enforces), never
// from a table of its own. The worker validates again, but the page must not refuse a value
// the core takes, or offer one it refuses.
#[test]
fn the_options_page_takes_its_fields_ranges_and_defaults_from_the_contracts() {
    let path = format!("{}/../extension/options.js", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(path).expect("options.js");
    assert!(source.contains("CONTRACT_SETTINGS.recovery.fields"), "options.js reads the recovery fields from herdrContracts");
    for f in FIELDS {
        assert!(!source.contains(&format!("name: '{}'", f.name)), "options.js restates the field {} by hand", f.name);
    }
    let contracts = std::fs::read_to_string(format!("{}/../extension/contracts.js", env!("CARGO_MANIFEST_DIR"))).expect("contracts.js");
    for f in FIELDS {
        assert!(contracts.contains(&format!("\"{}\"", f.name)), "contracts.js names the field {}", f.name);
    }
}
