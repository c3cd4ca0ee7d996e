//! The options page's recovery and page-health thresholds (SPEC S4, S7, H1, H3, H4; defaults
//! from herdr-mcp, REFERENCE §2): reply timeout, assistant stall, server stall and reload
//! cooldown for the [`crate::recovery`] planner, and the [`crate::health`] meters'
//! callbacks-per-minute, timer-drift, heap, sustained-pressure and quiet thresholds. The
//! options page writes one JSON record under [`SETTINGS_KEY`] in `chrome.storage.local`; the
//! worker reads it and hands it here.
//!
//! Invariants (tests in `tests/it/recovery_config.rs`):
//! - A field that is absent takes its default; a field that is present must be a whole
//!   number within its range ([`FIELDS`]), and a warn threshold must lie below its high
//!   one. Anything else refuses the *whole* record with a [`ConfigError`] that names the
//!   field and its range: nothing of a bad record is used (the defaults stay in force).
//! - The defaults are the planner's and the meters' own constants, so an empty record
//!   changes nothing.

use serde_json::Value;

use crate::health::HealthThresholds;
use crate::recovery::RecoveryTimings;

/// `chrome.storage.local` key of the record the options page writes.
pub const SETTINGS_KEY: &str = "herdrContinuityRecoveryV1";

/// One threshold of the record: its JSON name, range and default, in the unit the options
/// page shows (seconds, milliseconds, callbacks per minute, MiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// The record's key (the options page's input id too).
    pub name: &'static str,
    /// The smallest value accepted.
    pub min: u64,
    /// The largest value accepted.
    pub max: u64,
    /// The value when absent.
    pub default: u64,
}

const fn field(name: &'static str, min: u64, max: u64, default: u64) -> Field {
    Field { name, min, max, default }
}

/// Every field, in the options page's order (the ranges `extension/options.js` shows, read
/// from the generated `extension/contracts.js`).
pub const FIELDS: [Field; 11] = [
    field("reply_timeout_sec", 10, 600, 30),
    field("assistant_stall_sec", 10, 600, 30),
    field("server_stall_sec", 10, 1_800, 60),
    field("reload_cooldown_sec", 10, 3_600, 60),
    field("callbacks_warn_per_min", 60, 100_000, 600),
    field("callbacks_high_per_min", 60, 100_000, 2_400),
    field("drift_warn_ms", 100, 60_000, 1_500),
    field("drift_high_ms", 100, 60_000, 5_000),
    field("heap_critical_mib", 128, 16_384, 1_536),
    field("sustained_sec", 10, 600, 30),
    field("quiet_sec", 10, 600, 30),
];

/// Why a stored record was refused: the field and the range it must lie in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigError {
    /// The field's name ([`Field::name`]); `record` when the record is not a JSON object.
    pub field: &'static str,
    /// The smallest value it accepts.
    pub min: u64,
    /// The largest value it accepts.
    pub max: u64,
}

/// The thresholds in force.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecoveryConfig {
    /// The planner's timers.
    pub timings: RecoveryTimings,
    /// The meters' thresholds.
    pub health: HealthThresholds,
}

impl RecoveryConfig {
    /// Reads a stored record (see the module doc): all of it, or a [`ConfigError`].
    pub fn read(record: &Value) -> Result<Self, ConfigError> {
        let object = record.as_object().ok_or(ConfigError { field: "record", min: 0, max: 0 })?;
        let mut values = [0u64; FIELDS.len()];
        for (slot, f) in values.iter_mut().zip(FIELDS.iter()) {
            *slot = match object.get(f.name) {
                None => f.default,
                Some(v) => {
                    v.as_u64().filter(|n| (f.min..=f.max).contains(n)).ok_or(ConfigError { field: f.name, min: f.min, max: f.max })?
                }
            };
        }
        let [reply, stall, server, cooldown, cb_warn, cb_high, drift_warn, drift_high, heap_mib, sustained, quiet] = values;
        // A high threshold at or below its warn one would make "warn" unreachable.
        for (warn, high, index) in [(cb_warn, cb_high, 5), (drift_warn, drift_high, 7)] {
            if high <= warn {
                let f = FIELDS[index];
                return Err(ConfigError { field: f.name, min: warn + 1, max: f.max });
            }
        }
        Ok(Self {
            timings: RecoveryTimings {
                reply_timeout_ms: reply * 1_000,
                assistant_stall_ms: stall * 1_000,
                server_stall_ms: server * 1_000,
                reload_cooldown_ms: cooldown * 1_000,
            },
            health: HealthThresholds {
                callbacks_warn: cb_warn,
                callbacks_high: cb_high,
                drift_warn_ms: drift_warn,
                drift_high_ms: drift_high,
                heap_critical_bytes: heap_mib * 1024 * 1024,
                sustained_ms: sustained * 1_000,
                quiet_ms: quiet * 1_000,
            },
        })
    }
}
