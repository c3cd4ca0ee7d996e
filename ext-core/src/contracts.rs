//! The contracts the extension's JavaScript shares with Rust, in one place: port message
//! names, settings (storage keys, defaults, ranges), caps and versions. [`contracts_js`]
//! writes them as `extension/contracts.js`, a classic script that defines one deep-frozen
//! global, `herdrContracts`, which content scripts (listed first in the manifest), pages and
//! the worker (`import './contracts.js'`) read. The checked-in file is compared with this
//! module's output by `tests/it/contracts.rs`; regenerate it with
//! `UPDATE_CONTRACTS=1 cargo test -p ext-core --test it contracts`.
//!
//! Invariant: every value here is a Rust constant the core or the companion protocol
//! uses (or, for the stores only JavaScript keeps, declared here as their one source);
//! nothing in `extension/*.js` restates one.

use continuity_protocol::{limits as wire_limits, port};
use serde_json::{json, Value};

use crate::json_read::WriteJson;
use crate::{progress_push::ProgressConfig, queue, recovery_config, semantic_auto, sites};

/// `chrome.storage.sync` key of the progress check interval (seconds).
pub const PROGRESS_TICK_KEY: &str = "progressTickSec";
/// `chrome.storage.sync` key of the quiet time before a fallback status (seconds).
pub const PROGRESS_FALLBACK_KEY: &str = "progressFallbackSec";
/// `chrome.storage.sync` key of the user's permission for Auto in project chats (M2).
pub const ALLOW_PROJECT_AUTO_KEY: &str = "allowProjectAuto";
/// Auto in project chats is off until the user allows it.
pub const ALLOW_PROJECT_AUTO_DEFAULT: bool = false;
/// `chrome.storage.local` key of the user's consent to trusted typing (options page).
pub const TRUSTED_TYPING_KEY: &str = "trustedTypingAllowed";
/// `chrome.storage.local` key of the Activity timeline (written by `activity-log.js`).
pub const ACTIVITY_KEY: &str = "herdrContinuityActivityV1";
/// Version of the Activity timeline record.
pub const ACTIVITY_VERSION: u64 = 1;
/// Activity entries kept per scope (the oldest go first).
pub const ACTIVITY_MAX_ENTRIES_PER_SCOPE: u64 = 200;
/// Scopes the Activity timeline keeps (the least recently written go first).
pub const ACTIVITY_MAX_SCOPES: u64 = 30;
/// `chrome.storage.local` key of the side panel's Pinned Target.
pub const PINNED_KEY: &str = "herdrContinuityPinnedV1";
/// Lines the side panel's "Read last lines" asks `herdr.pane_read` for.
pub const TAIL_LINES: u64 = 40;
/// Rows the side panel's tool audit section asks `tools.audit` for.
pub const AUDIT_ROWS: u64 = 50;

/// A `{min, max, default}` range as JSON.
fn range(min: u64, max: u64, default: u64) -> Value {
    json!({ "min": min, "max": max, "default": default })
}

/// An enum's wire names as `{name: name}`, so JavaScript writes `messages.page.queue_add`.
fn names(all: impl IntoIterator<Item = &'static str>) -> Value {
    Value::Object(all.into_iter().map(|name| (name.to_owned(), Value::from(name))).collect())
}

/// Every contract, as the JSON value `herdrContracts` holds.
pub fn contracts() -> Value {
    let defaults = ProgressConfig::default();
    let (tick_min, tick_max) = ProgressConfig::TICK_SEC_RANGE;
    let (fallback_min, fallback_max) = ProgressConfig::FALLBACK_SEC_RANGE;
    let judge = semantic_auto::JudgeSettings::default();
    // The recovery pairs whose high threshold must lie above its warn one (RecoveryConfig::read).
    let above = |name: &str| match name {
        "callbacks_high_per_min" => Some("callbacks_warn_per_min"),
        "drift_high_ms" => Some("drift_warn_ms"),
        _ => None,
    };
    json!({
        "protocol": {
            "version": continuity_protocol::PROTOCOL_VERSION,
            "host": continuity_protocol::HOST_NAME,
        },
        "ports": { "page": port::PAGE_PORT, "panel": port::PANEL_PORT },
        "start_keys": {
            "local": crate::worker::START_LOCAL_KEYS,
            "sync": crate::worker::START_SYNC_KEYS,
            "view": crate::worker::START_VIEW_KEY,
        },
        "messages": {
            "page_to_worker": names(port::PageToWorker::ALL.iter().map(|n| n.as_str())),
            "worker_to_page": names(port::WorkerToPage::ALL.iter().map(|n| n.as_str())),
            "panel_to_worker": names(port::PanelToWorker::ALL.iter().map(|n| n.as_str())),
            "worker_to_panel": names(port::WorkerToPanel::ALL.iter().map(|n| n.as_str())),
            "runtime_to_worker": names(port::RuntimeToWorker::ALL.iter().map(|n| n.as_str())),
            "worker_to_tab": names(port::WorkerToTab::ALL.iter().map(|n| n.as_str())),
        },
        "settings": {
            "sync": [
                { "key": PROGRESS_TICK_KEY, "label": "optionProgressTickSec", "kind": "seconds",
                  "min": tick_min, "max": tick_max, "default": defaults.tick_ms / 1_000 },
                { "key": PROGRESS_FALLBACK_KEY, "label": "optionProgressFallbackSec", "kind": "seconds",
                  "min": fallback_min, "max": fallback_max, "default": defaults.fallback_ms / 1_000 },
                { "key": ALLOW_PROJECT_AUTO_KEY, "label": "optionAllowProjectAuto", "kind": "flag", "default": ALLOW_PROJECT_AUTO_DEFAULT },
            ],
            "judge": {
                "key": semantic_auto::SETTINGS_KEY,
                "modes": semantic_auto::JudgeMode::ALL.iter().map(WriteJson::write_json).collect::<Vec<_>>(),
                "default_mode": judge.mode.write_json(),
                "max_continues": range(u64::from(semantic_auto::MIN_MAX_CONTINUES), u64::from(semantic_auto::MAX_MAX_CONTINUES), u64::from(judge.max_continues)),
            },
            "recovery": {
                "key": recovery_config::SETTINGS_KEY,
                "fields": recovery_config::FIELDS.iter().map(|f| {
                    let mut field = json!({ "name": f.name, "min": f.min, "max": f.max, "default": f.default });
                    if let (Some(over), Some(object)) = (above(f.name), field.as_object_mut()) {
                        object.insert("above".to_owned(), Value::from(over));
                    }
                    field
                }).collect::<Vec<_>>(),
            },
            "sync_keys": {
                "progress_tick": PROGRESS_TICK_KEY,
                "progress_fallback": PROGRESS_FALLBACK_KEY,
                "allow_project_auto": ALLOW_PROJECT_AUTO_KEY,
            },
            "trusted_typing_key": TRUSTED_TYPING_KEY,
            "profile_overrides_key": sites::overrides::STORAGE_KEY,
            "pinned_key": PINNED_KEY,
        },
        "activity": {
            "key": ACTIVITY_KEY,
            "version": ACTIVITY_VERSION,
            "max_entries_per_scope": ACTIVITY_MAX_ENTRIES_PER_SCOPE,
            "max_scopes": ACTIVITY_MAX_SCOPES,
        },
        "caps": {
            "journal_text_bytes": crate::continuity::MAX_JOURNAL_TEXT_BYTES,
            "profile_file_bytes": wire_limits::MAX_PROFILE_FILE_BYTES,
            "page_message_bytes": crate::limits::MAX_PAGE_MESSAGE_BYTES,
            "turn_user_chars": crate::limits::MAX_TURN_USER_CHARS,
            "turn_assistant_chars": crate::limits::MAX_TURN_ASSISTANT_CHARS,
            "queue_items": queue::MAX_ITEMS,
            "queue_merged_chars": queue::MAX_MERGED_CHARS,
            "queue_text_chars": crate::limits::MAX_QUEUE_TEXT_CHARS,
            "queue_max_age_days": queue::MAX_AGE_MS / (24 * 60 * 60 * 1_000),
            "app_mentions": crate::limits::MAX_APP_MENTIONS,
            "id_chars": crate::limits::MAX_ID_CHARS,
            "markers": crate::limits::MAX_MARKERS,
            "selector_chars": crate::limits::MAX_SELECTOR_CHARS,
            "goal_chars": crate::goal_supervisor::GOAL_MAX_CHARS,
            "structure_elements": crate::limits::MAX_STRUCTURE_ELEMENTS,
            "structure_keys": crate::limits::MAX_STRUCTURE_KEYS,
            "cards": crate::permission_card::MAX_CARDS,
            "card_buttons": crate::permission_card::MAX_CARD_BUTTONS,
            "card_wording_chars": crate::permission_card::MAX_WORDING_CHARS,
            "card_label_chars": crate::permission_card::MAX_BUTTON_LABEL_CHARS,
            "rate_report_gap_ms": crate::rate_limit::COUNT_WINDOW_MS,
            "tail_lines": TAIL_LINES,
            "audit_rows": AUDIT_ROWS,
            "runtime_list_items": crate::limits::MAX_RUNTIME_LIST_ITEMS,
        },
        "profiles": {
            "sites": wire_limits::PROFILE_SITES,
            "sources": sites::overrides::ProfileSource::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        },
        "companion_calls": {
            "failures": crate::worker::CallFailure::ALL.iter().map(|f| f.as_str()).collect::<Vec<_>>(),
            // `herdr_panes: "herdr.panes"`: the methods the pages may call, so JS names none.
            "methods": Value::Object(crate::worker::COMPANION_CALLS.iter().map(|(method, _)| {
                (method.as_str().replace('.', "_"), Value::from(method.as_str()))
            }).collect()),
            "timeout_ms": crate::limits::COMPANION_CALL_TIMEOUT_MS,
            "per_port": crate::limits::MAX_COMPANION_CALLS_PER_PORT,
        },
        "retention": {
            "limits": wire_limits::RETENTION_LIMITS,
            "stores": wire_limits::RETENTION_STORES,
        },
    })
}

/// `extension/contracts.js`: [`contracts`] as a classic script defining the deep-frozen
/// global `herdrContracts` (a second evaluation in the same realm keeps the first).
pub fn contracts_js() -> String {
    let json = serde_json::to_string_pretty(&contracts()).unwrap_or_default();
    // Indented one level, inside the function that freezes it.
    let body = json.lines().collect::<Vec<_>>().join("\n  ");
    format!(
        "// GENERATED from ext-core/src/contracts.rs — do not edit. Regenerate with\n\
         // `UPDATE_CONTRACTS=1 cargo test -p ext-core --test it contracts` (a test fails while it differs).\n\
         // A classic script: content scripts load it first (manifest), pages and the worker import it.\n\
         (() => {{\n  \
           const freeze = (value) => {{\n    \
             if (typeof value === 'object' && value !== null) Object.values(Object.freeze(value)).forEach(freeze);\n    \
             return value;\n  \
           }};\n  \
           globalThis.herdrContracts ??= freeze({body});\n\
         }})();\n"
    )
}
