//! wasm-bindgen shell of herdr-continuity: drives `ext-core` inside the MV3 extension.
//!
//! Shells only translate (STYLE.md 4): Chrome events become core inputs, core outputs
//! become Chrome calls, core view models become the JSON the pages render. Product
//! decisions live in `ext-core`.
//!
//! Where it runs — **in the service worker only**. Wasm in a content script obeys the
//! page's CSP: a strict nonce CSP without `'wasm-unsafe-eval'` makes compiling fail and
//! reports a `securitypolicyviolation` to the page, and whether chatgpt.com allows wasm is
//! unknown. So the content scripts (`extension/content*.js`) never load this module; they render the view models
//! the worker sends over a `page` port. The side panel and the options page load no wasm
//! either: they are plain JS renderers (`extension/sidepanel.js`, `extension/options.js`)
//! of the views the worker sends over a `panel` port, and of `chrome.storage.sync`.
//!
//! Entry points (called by `extension/worker.js`): [`start_worker`] (with the stored state
//! and settings `worker.js` read under `herdrContracts.start_keys`, the keys
//! `ext_core::worker::START_LOCAL_KEYS` / `START_SYNC_KEYS` name), [`page_connected`],
//! [`page_message`], [`page_disconnected`], [`on_alarm`], [`tab_removed`],
//! [`tab_activated`], [`allow_project_auto_changed`], [`progress_settings_changed`],
//! [`profile_overrides_changed`], and the options page's [`profile_import`],
//! [`profile_reset`], [`profile_get`]; and the e2e tests' clock, [`advance_clock_for_test`]
//! (ARCHITECTURE.md "Test seams").
//!
//! Invariant: one [`driver::LinkDriver`] per worker life, created by the first
//! [`start_worker`]; every other worker entry point creates it if needed, so the order
//! in which Chrome delivers events after a worker start does not matter.

/// The wasm heap: talc instead of Rust's default dlmalloc (issue 8: smaller code; the
/// worker is single-threaded, so no atomics).
#[cfg(all(not(target_feature = "atomics"), target_family = "wasm"))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

pub mod continuity_wire;
pub mod driver;
pub mod handoff_wire;
pub mod js;
pub mod wire;

use std::cell::RefCell;
use std::rc::Rc;

use ext_core::continuity::{Continuity, ContinuityInput};
use ext_core::contracts::{ALLOW_PROJECT_AUTO_KEY, PROGRESS_FALLBACK_KEY, PROGRESS_TICK_KEY};
use ext_core::limits;
use ext_core::snapshot::{Snapshot, SnapshotError};
use ext_core::wake::Language;
use ext_core::worker::WorkerInput;
use js_sys::{Function, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use driver::LinkDriver;

thread_local! {
    /// The worker's driver, created on first use.
    static WORKER: RefCell<Option<Rc<RefCell<LinkDriver>>>> = const { RefCell::new(None) };
}

/// `chrome.runtime.connectNative` bound to `chrome.runtime`.
fn chrome_connect_native() -> Result<Function, JsValue> {
    let runtime = js::global_path(&["chrome", "runtime"]).unwrap_or(JsValue::UNDEFINED);
    let connect = js::get_path(&runtime, &["connectNative"]).unwrap_or(JsValue::UNDEFINED);
    let connect: Function = connect
        .dyn_into()
        .map_err(|_| JsError::new("chrome.runtime.connectNative is missing: the manifest needs the \"nativeMessaging\" permission"))?;
    Ok(connect.bind0(&runtime))
}

/// The worker's driver, once [`start_worker`] made it.
fn worker() -> Result<Rc<RefCell<LinkDriver>>, JsValue> {
    if let Some(driver) = WORKER.with(|worker| worker.borrow().clone()) {
        return Ok(driver);
    }
    // Never a fresh machine here: its first persist would overwrite the stored state.
    Err(JsError::new("herdr-continuity: the worker has not started (start_worker restores the state first)").into())
}

/// The value of `key` in `items` (an object `chrome.storage.*.get` gave), if any.
fn stored(items: &JsValue, key: &str) -> Option<JsValue> {
    Reflect::get(items, &JsValue::from_str(key)).ok()
}

/// Service worker start (top level of `worker.js`, after `init()`): restore the persisted
/// continuity state (B7), then connect to the companion. `local` and `sync` are what
/// `chrome.storage.local` and `chrome.storage.sync` hold under `ext_core::worker::START_LOCAL_KEYS` / `START_SYNC_KEYS` (`worker.js`
/// reads them first and starts nothing until both reads succeeded: a failed read is tried
/// again, never an empty state); `worker.js` forwards no event before this
/// returned, so the state is back first.
#[wasm_bindgen]
pub fn start_worker(local: JsValue, sync: JsValue) -> Result<(), JsValue> {
    let already = WORKER.with(|worker| worker.borrow().is_some());
    if already {
        return Ok(());
    }
    let now = js::now_millis();
    // The fences' key (16 bytes) and the ledger's epoch (4) from crypto.getRandomValues, or
    // no start: a fence whose nonce could be guessed does not fence (fail closed, said why).
    let Some(random) = js::crypto_random(20) else {
        return Err(JsError::new(
            "herdr-continuity did not start: crypto.getRandomValues is not available, and relayed text is never typed without an unguessable fence nonce; use a browser that provides Web Crypto",
        )
        .into());
    };
    let (fence_key, epoch_bytes) = random.split_at(16);
    // Fresh randomness for delivery ids: a lost state gets a new epoch, so an id is never
    // reused (ext-core `delivery_ledger`); a restored state keeps its own.
    let epoch: String = epoch_bytes.iter().map(|b| format!("{b:02x}")).collect();
    let mut restored = match stored(&local, driver::STORAGE_KEY).and_then(|value| value.as_string()) {
        Some(text) => match js::parse(&text).map_err(SnapshotError::Unreadable).and_then(|value| Snapshot::read(&value)) {
            Ok(snapshot) => Continuity::from_snapshot(snapshot, now, &epoch),
            Err(error) => {
                // Never overwrite what could not be read: keep it aside for a newer release
                // (or a bug report), then start with nothing bound.
                js::storage_local_write(driver::UNREADABLE_STATE_KEY, &text);
                js::warn(&format!("herdr-continuity: {error}"));
                Continuity::with_epoch(&epoch)
            }
        },
        None => Continuity::with_epoch(&epoch),
    };
    if let Some(allowed) = stored(&sync, ALLOW_PROJECT_AUTO_KEY).and_then(|value| value.as_bool()) {
        restored.handle(now, ContinuityInput::AllowProjectAuto { allowed });
    }
    let number = |key| stored(&sync, key).and_then(|value| value.as_f64());
    restored.handle(now, progress_settings(number(PROGRESS_TICK_KEY), number(PROGRESS_FALLBACK_KEY)));
    let record = |key| stored(&local, key).and_then(|value| value.as_string()).map(|text| js::parse(&text).map_err(|_| ()));
    let stored = record(ext_core::semantic_auto::SETTINGS_KEY);
    restored.handle(now, ContinuityInput::JudgeSettings { stored });
    let stored = record(ext_core::recovery_config::SETTINGS_KEY);
    restored.handle(now, ContinuityInput::RecoverySettings { stored });
    let start_view = record(ext_core::worker::START_VIEW_KEY).and_then(Result::ok);
    let language = match js::ui_language() {
        Some(lang) if lang.starts_with("zh") => Language::Zh,
        _ => Language::En,
    };
    restored.handle(now, ContinuityInput::LanguageChanged { language });
    restored.set_fence_entropy(fence_key);
    // The worker drops the outputs of the restore itself (views, persist: nothing to act on yet).
    let driver = LinkDriver::new(chrome_connect_native()?, &js::extension_version(), restored);
    WORKER.with(|worker| *worker.borrow_mut() = Some(driver.clone()));
    let overrides = Reflect::get(&local, &JsValue::from_str(ext_core::sites::overrides::STORAGE_KEY))
        .ok()
        .and_then(|value| js::json_value(&value).ok());
    LinkDriver::feed(&driver, WorkerInput::ProfileOverrides { record: overrides.filter(|value| !value.is_null()) });
    LinkDriver::feed(&driver, WorkerInput::StartView { record: start_view });
    LinkDriver::feed(&driver, WorkerInput::Start);
    Ok(())
}

/// The answer of `worker.js` to the request `token`: of `herdrStorage`
/// ([`js::storage_request`]) `ok` with the items read (an object without the key when
/// nothing is stored; a write's is `undefined`), of `herdrTabs` ([`js::create_tab_request`]) the new tab's id; else the
/// error thrown. Before the worker exists only [`start_worker`]'s own write can be answered
/// (the unreadable state kept aside, when the start then failed): its failure is warned here,
/// as the worker warns a failed write of its own.
#[wasm_bindgen]
pub fn js_answer(token: u32, ok: bool, value: JsValue) {
    let outcome = if ok { Ok(value) } else { Err(js::error_text(&value)) };
    match WORKER.with(|worker| worker.borrow().clone()) {
        Some(driver) => LinkDriver::js_answered(&driver, token, outcome),
        None => {
            if let Err(error) = outcome {
                js::warn(&format!("herdr-continuity: saving state failed: {error}"));
            }
        }
    }
}

/// `chrome.storage.onChanged` for `sync.allowProjectAuto` (options page, M2).
#[wasm_bindgen]
pub fn allow_project_auto_changed(allowed: bool) -> Result<(), JsValue> {
    LinkDriver::feed(&worker()?, WorkerInput::Continuity(ContinuityInput::AllowProjectAuto { allowed }));
    Ok(())
}

/// The progress settings of the stored `progressTickSec` / `progressFallbackSec` (numbers,
/// when stored as numbers), defaults for missing ones.
fn progress_settings(tick_sec: Option<f64>, fallback_sec: Option<f64>) -> ContinuityInput {
    let seconds = |value: Option<f64>, default: u64| value.filter(|v| v.is_finite() && *v >= 0.0).map_or(default, |v| v as u64);
    let defaults = ext_core::progress_push::ProgressConfig::default();
    ContinuityInput::ProgressSettings {
        tick_sec: seconds(tick_sec, defaults.tick_ms / 1_000),
        fallback_sec: seconds(fallback_sec, defaults.fallback_ms / 1_000),
    }
}

/// `chrome.storage.onChanged` for `sync.progressTickSec` / `sync.progressFallbackSec`
/// (options page, O4): both stored values (`worker.js` reads them, the change carries only
/// the one that changed), handed to the core (which clamps them). Not async, as
/// `recovery_settings_changed`.
#[wasm_bindgen]
pub fn progress_settings_changed(tick_sec: Option<f64>, fallback_sec: Option<f64>) -> Result<(), JsValue> {
    LinkDriver::feed(&worker()?, WorkerInput::Continuity(progress_settings(tick_sec, fallback_sec)));
    Ok(())
}

/// `chrome.storage.onChanged` for `local.herdrContinuityRecoveryV1` (options page): the new
/// record's text (`undefined` when it was removed), validated by the core. Not async: the
/// change carries the value, and a future of its own would cost the wasm a kilobyte.
#[wasm_bindgen]
pub fn recovery_settings_changed(text: Option<String>) -> Result<(), JsValue> {
    let stored = text.map(|text| js::parse(&text).map_err(|_| ()));
    LinkDriver::feed(&worker()?, WorkerInput::Continuity(ContinuityInput::RecoverySettings { stored }));
    Ok(())
}

/// `chrome.storage.onChanged` for `local.herdrContinuityJudgeV1` (options page, O4): the
/// new record's text (`undefined` when it was removed), read and validated by the core.
/// Not async, as `recovery_settings_changed`.
#[wasm_bindgen]
pub fn judge_settings_changed(text: Option<String>) -> Result<(), JsValue> {
    let stored = text.map(|text| js::parse(&text).map_err(|_| ()));
    LinkDriver::feed(&worker()?, WorkerInput::Continuity(ContinuityInput::JudgeSettings { stored }));
    Ok(())
}

/// `chrome.tabs.onRemoved`.
#[wasm_bindgen]
pub fn tab_removed(tab_id: u32) -> Result<(), JsValue> {
    LinkDriver::feed(&worker()?, WorkerInput::TabClosed { tab: tab_id });
    Ok(())
}

/// `chrome.tabs.onActivated`.
#[wasm_bindgen]
pub fn tab_activated(tab_id: u32) -> Result<(), JsValue> {
    LinkDriver::feed(&worker()?, WorkerInput::TabActivated { tab: tab_id });
    Ok(())
}

/// `chrome.runtime.onConnect` with a `page` or `panel` port.
#[wasm_bindgen]
pub fn page_connected(port: JsValue) -> Result<(), JsValue> {
    if !driver::is_port(&port) {
        return Err(JsError::new("page_connected needs a runtime.Port").into());
    }
    if let Err(rejected) = check_port_sender(&port) {
        js::warn(&format!("herdr-continuity: refused a port: {rejected}"));
        js::call_method(&port, "disconnect", &[]);
        return Ok(());
    }
    LinkDriver::page_connected(&worker()?, port);
    Ok(())
}

/// Whether a `page` / `panel` port comes from this extension (`ext_core::limits`): a content
/// script in a chatgpt.com tab, or one of our extension pages. Ports of any other name are
/// refused too.
pub fn check_port_sender(port: &JsValue) -> Result<(), limits::SenderRejected> {
    let kind = match js::port_name(port).as_deref() {
        Some("page") => limits::PortKind::Page,
        Some("panel") => limits::PortKind::Panel,
        _ => return Err(limits::SenderRejected::ForeignExtension),
    };
    let own = js::own_extension_id().unwrap_or_default();
    limits::check_sender(kind, &js::port_sender(port), &own)
}

/// A message on a page or panel port. A message of the wrong shape or over a cap
/// (`ext_core::limits`) is dropped with a console warning; it never throws.
#[wasm_bindgen]
pub fn page_message(port: JsValue, message: JsValue) -> Result<(), JsValue> {
    if let Err(error) = LinkDriver::page_message(&worker()?, &port, &message) {
        js::warn(&error.to_string());
    }
    Ok(())
}

/// `onDisconnect` of a page or panel port.
#[wasm_bindgen]
pub fn page_disconnected(port: JsValue) -> Result<(), JsValue> {
    LinkDriver::page_disconnected(&worker()?, &port);
    Ok(())
}

/// The e2e tests' clock (ARCHITECTURE.md "Test seams"; `worker.js` puts it on the worker's
/// global as `herdrTestClock`, which no page or content script can reach): moves the
/// continuity machine's clock `ms` ahead (a finite number from 0 to one day, else an error
/// that says so) and runs what fell due. Returns the clock's total offset in ms. Unused, the
/// offset is 0 and the product runs on `Date.now()`.
#[wasm_bindgen]
pub fn advance_clock_for_test(ms: f64) -> Result<f64, JsValue> {
    if !ms.is_finite() || !(0.0..=86_400_000.0).contains(&ms) {
        return Err(JsValue::from_str("herdrTestClock: give the ms to move ahead, a number from 0 to 86400000"));
    }
    // In range and finite: the cast cannot truncate beyond the fraction of a millisecond.
    let driver = worker()?;
    LinkDriver::feed(&driver, WorkerInput::AdvanceClock { ms: ms as ext_core::Millis });
    let ahead = driver.borrow().worker().clock_ahead();
    Ok(ahead as f64)
}

/// `chrome.alarms.onAlarm`: the keep-trying alarm wakes a worker whose timers died.
#[wasm_bindgen]
pub fn on_alarm(_name: String) -> Result<(), JsValue> {
    LinkDriver::feed(&worker()?, WorkerInput::Alarm);
    Ok(())
}

/// `chrome.storage.onChanged` for `local.herdrContinuityProfileOverridesV1` (and
/// `worker.js` right after it stored an import or a reset): the new record (`undefined` /
/// `null` when removed), validated by the core; pages of a site whose profile in force
/// changed get it again.
#[wasm_bindgen]
pub fn profile_overrides_changed(record: JsValue) -> Result<(), JsValue> {
    let record = js::json_value(&record).ok().filter(|value| !value.is_null());
    LinkDriver::feed(&worker()?, WorkerInput::ProfileOverrides { record });
    Ok(())
}

/// The options page's `profile_import {site, text}` (`worker.js` checked the sender): the
/// file validated by the core → `{ok: true, version, date, store}` (`store`: the whole
/// record `worker.js` writes under the key, then hands to [`profile_overrides_changed`]), or
/// `{ok: false, problem}` naming the first problem (nothing to store).
#[wasm_bindgen]
pub fn profile_import(site: String, text: String) -> Result<JsValue, JsValue> {
    let driver = worker()?;
    let imported = driver.borrow().worker().profiles().import(&site, &text, js::now_millis(), &driver::parse_json);
    let answer = match imported {
        Ok((store, profile)) => {
            let (version, date) = ext_core::sites::file::version_and_date(&profile);
            ext_core::json_object!("ok": true, "version": version, "date": date, "store": store)
        }
        Err(problem) => ext_core::json_object!("ok": false, "problem": problem.to_string()),
    };
    Ok(js::to_js(&answer))
}

/// The options page's `profile_reset {site}`: `{ok: true, store}`, the record without the
/// site's override (`worker.js` writes it as for an import).
#[wasm_bindgen]
pub fn profile_reset(site: String) -> Result<JsValue, JsValue> {
    let store = worker()?.borrow().worker().profiles().reset(&site);
    Ok(js::to_js(&ext_core::json_object!("ok": true, "store": store)))
}

/// The options page's `profile_get {site}`: `{ok: true, profile, source, problem}` — the
/// profile in force (v2, what Export saves), where it comes from, and why an override of
/// the site is refused (`null`: none is); `{ok: false, problem}` for an unknown site.
#[wasm_bindgen]
pub fn profile_get(site: String) -> Result<JsValue, JsValue> {
    let driver = worker()?;
    let driver = driver.borrow();
    if !ext_core::sites::PROFILES.iter().any(|profile| profile.site == site) {
        return Ok(js::to_js(&ext_core::json_object!("ok": false, "problem": "no such site: choose chatgpt, zai or deepseek")));
    }
    let in_force = driver.worker().profiles().in_force(&site);
    Ok(js::to_js(&ext_core::json_object!(
        "ok": true,
        "profile": in_force.profile,
        "source": in_force.source.as_str(),
        "problem": in_force.problem,
    )))
}
