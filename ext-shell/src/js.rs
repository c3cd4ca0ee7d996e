//! Bindings to the browser and Chrome APIs the shell uses, and duck-typed helpers for
//! port-like objects. Nothing here decides anything.

use js_sys::{Function, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use ext_core::Millis;

#[wasm_bindgen]
extern "C" {
    /// `chrome.runtime.connectNative(name)`.
    #[wasm_bindgen(js_namespace = ["chrome", "runtime"], js_name = connectNative, catch)]
    pub fn connect_native(name: &str) -> Result<JsValue, JsValue>;

    /// `chrome.runtime.getManifest()`.
    #[wasm_bindgen(js_namespace = ["chrome", "runtime"], js_name = getManifest)]
    fn get_manifest() -> JsValue;

    /// `console.warn(text)`.
    #[wasm_bindgen(js_namespace = console, js_name = warn)]
    pub fn warn(text: &str);
}

/// `Date.now()` as core time.
pub fn now_millis() -> Millis {
    // Date.now() is a non-negative integer below 2^53; the cast cannot truncate.
    js_sys::Date::now() as Millis
}

/// `performance.now()` of the current global (window or worker); `Date.now()` if absent.
pub fn performance_now() -> f64 {
    Reflect::get(&js_sys::global(), &JsValue::from_str("performance"))
        .ok()
        .filter(|performance| performance.is_object())
        .and_then(|performance| {
            let now = Reflect::get(&performance, &JsValue::from_str("now")).ok()?;
            now.dyn_ref::<Function>()?
                .call0(&performance)
                .ok()?
                .as_f64()
        })
        .unwrap_or_else(js_sys::Date::now)
}

/// Calls `object[name](...args)`, logging (not throwing) a failure.
pub fn call_method(object: &JsValue, name: &str, args: &[JsValue]) -> Option<JsValue> {
    let method = Reflect::get(object, &JsValue::from_str(name)).ok()?;
    let Some(method) = method.dyn_ref::<Function>() else {
        warn(&format!(
            "herdr-continuity: `{name}` is not a function on this object"
        ));
        return None;
    };
    let array: js_sys::Array = args.iter().collect();
    match method.apply(object, &array) {
        Ok(result) => Some(result),
        Err(error) => {
            warn(&format!(
                "herdr-continuity: `{name}` failed: {}",
                error_text(&error)
            ));
            None
        }
    }
}

/// `port.postMessage(json)`; a closed port only logs.
///
/// JS ⇄ Rust values cross as JSON text (`JSON.stringify` / `JSON.parse` called from Rust,
/// serde_json on this side): one serde path for the whole shell keeps the wasm small.
pub fn post(port: &JsValue, message: &serde_json::Value) {
    match js_sys::JSON::parse(&message.to_string()) {
        Ok(value) => {
            call_method(port, "postMessage", &[value]);
        }
        Err(error) => warn(&format!(
            "herdr-continuity: cannot convert a message: {}",
            error_text(&error)
        )),
    }
}

/// `JSON.stringify(value)`; `None` for values JSON cannot carry (undefined, functions,
/// cycles, BigInt).
pub fn json_text(value: &JsValue) -> Option<String> {
    js_sys::JSON::stringify(value).ok()?.as_string()
}

/// A JS value as parsed JSON, through its JSON text (see [`post`]).
pub fn json_value(value: &JsValue) -> Result<serde_json::Value, String> {
    let text = json_text(value).ok_or_else(|| "not a JSON value".to_owned())?;
    serde_json::from_str(&text).map_err(|error| error.to_string())
}

/// `object[event].addListener(listener)`.
pub fn add_listener(object: &JsValue, event: &str, listener: &Function) {
    match Reflect::get(object, &JsValue::from_str(event)) {
        Ok(target) if target.is_object() => {
            call_method(&target, "addListener", &[listener.clone().into()]);
        }
        _ => warn(&format!("herdr-continuity: port has no `{event}`")),
    }
}

/// `chrome.runtime.lastError?.message`, without throwing where `chrome` is absent.
pub fn last_error_message() -> Option<String> {
    let mut value = js_sys::global().into();
    for key in ["chrome", "runtime", "lastError", "message"] {
        value = Reflect::get(&value, &JsValue::from_str(key)).ok()?;
        if value.is_undefined() || value.is_null() {
            return None;
        }
    }
    value.as_string()
}

/// The text of a thrown JS value.
pub fn error_text(error: &JsValue) -> String {
    if let Some(error) = error.dyn_ref::<js_sys::Error>() {
        return String::from(error.message());
    }
    error
        .as_string()
        .unwrap_or_else(|| "unknown error".to_owned())
}

/// The extension's manifest version (`chrome.runtime.getManifest().version`).
pub fn extension_version() -> String {
    Reflect::get(&get_manifest(), &JsValue::from_str("version"))
        .ok()
        .and_then(|version| version.as_string())
        .unwrap_or_else(|| "0.0.0".to_owned())
}

/// `port.sender.tab.id` of a `runtime.Port` (content-script ports have it).
pub fn sender_tab_id(port: &JsValue) -> Option<u32> {
    let sender = Reflect::get(port, &JsValue::from_str("sender")).ok()?;
    let tab = Reflect::get(&sender, &JsValue::from_str("tab")).ok()?;
    let id = Reflect::get(&tab, &JsValue::from_str("id")).ok()?.as_f64()?;
    (id >= 0.0 && id <= f64::from(u32::MAX)).then_some(id as u32)
}

/// `port.sender` as `ext_core::limits` sees it (`id`, `url`, whether `tab` is set).
pub fn port_sender(port: &JsValue) -> ext_core::limits::PortSender {
    let sender = Reflect::get(port, &JsValue::from_str("sender")).unwrap_or(JsValue::UNDEFINED);
    let field = |key: &str| {
        if sender.is_object() {
            Reflect::get(&sender, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
        } else {
            JsValue::UNDEFINED
        }
    };
    ext_core::limits::PortSender {
        extension_id: field("id").as_string(),
        url: field("url").as_string(),
        has_tab: field("tab").is_object(),
    }
}

/// `chrome.runtime.id` (this extension's id), when this global has it.
pub fn own_extension_id() -> Option<String> {
    let mut value: JsValue = js_sys::global().into();
    for key in ["chrome", "runtime", "id"] {
        value = Reflect::get(&value, &JsValue::from_str(key)).ok()?;
        if value.is_undefined() || value.is_null() {
            return None;
        }
    }
    value.as_string()
}

/// `port.name`.
pub fn port_name(port: &JsValue) -> Option<String> {
    Reflect::get(port, &JsValue::from_str("name")).ok()?.as_string()
}

/// `chrome.storage.local`, when this global has it (not in unit-test pages).
pub fn storage_local() -> Option<JsValue> {
    let mut value: JsValue = js_sys::global().into();
    for key in ["chrome", "storage", "local"] {
        value = Reflect::get(&value, &JsValue::from_str(key)).ok()?;
        if !value.is_object() {
            return None;
        }
    }
    Some(value)
}

/// `chrome.storage.local.set({key: text})`; a failure is logged.
pub fn storage_local_write(key: &str, text: &str) {
    let Some(storage) = storage_local() else { return };
    let items = js_sys::Object::new();
    let _ = Reflect::set(&items, &JsValue::from_str(key), &JsValue::from_str(text));
    if let Some(promise) = call_method(&storage, "set", &[items.into()]) {
        if let Ok(promise) = promise.dyn_into::<js_sys::Promise>() {
            wasm_bindgen_futures::spawn_local(async move {
                if let Err(error) = wasm_bindgen_futures::JsFuture::from(promise).await {
                    warn(&format!("herdr-continuity: saving state failed: {}", error_text(&error)));
                }
            });
        }
    }
}

/// `chrome.storage.local.get(key)[key]` as text, when present.
pub async fn storage_local_read(key: &str) -> Option<String> {
    let storage = storage_local()?;
    let promise = call_method(&storage, "get", &[JsValue::from_str(key)])?;
    let promise: js_sys::Promise = promise.dyn_into().ok()?;
    let items = wasm_bindgen_futures::JsFuture::from(promise).await.ok()?;
    Reflect::get(&items, &JsValue::from_str(key)).ok()?.as_string()
}

/// `chrome.storage.local.get(key)[key]`, strictly: `Ok(None)` when nothing is stored,
/// `Err` with what went wrong when the read failed or the value is not text (the caller
/// must not write over what it could not read).
pub async fn storage_local_get_text(key: &str) -> Result<Option<String>, String> {
    let storage = storage_local().ok_or_else(|| "chrome.storage.local is not available".to_owned())?;
    let promise = call_method(&storage, "get", &[JsValue::from_str(key)]).ok_or_else(|| "chrome.storage.local.get failed".to_owned())?;
    let promise: js_sys::Promise = promise.dyn_into().map_err(|_| "chrome.storage.local.get gave no promise".to_owned())?;
    let items = wasm_bindgen_futures::JsFuture::from(promise).await.map_err(|e| error_text(&e))?;
    let value = Reflect::get(&items, &JsValue::from_str(key)).map_err(|e| error_text(&e))?;
    if value.is_undefined() {
        return Ok(None);
    }
    value.as_string().map(Some).ok_or_else(|| "the stored value is not text".to_owned())
}

/// `chrome.storage.local.set({key: text})`, awaited: `Err` with what went wrong.
pub async fn storage_local_set_text(key: &str, text: &str) -> Result<(), String> {
    let storage = storage_local().ok_or_else(|| "chrome.storage.local is not available".to_owned())?;
    let items = js_sys::Object::new();
    let _ = Reflect::set(&items, &JsValue::from_str(key), &JsValue::from_str(text));
    let promise = call_method(&storage, "set", &[items.into()]).ok_or_else(|| "chrome.storage.local.set failed".to_owned())?;
    let promise: js_sys::Promise = promise.dyn_into().map_err(|_| "chrome.storage.local.set gave no promise".to_owned())?;
    wasm_bindgen_futures::JsFuture::from(promise).await.map(|_| ()).map_err(|e| error_text(&e))
}

/// `chrome.storage.sync.get(key)[key]` (options page settings), when present.
async fn storage_sync_value(key: &str) -> Option<JsValue> {
    let mut value: JsValue = js_sys::global().into();
    for name in ["chrome", "storage", "sync"] {
        value = Reflect::get(&value, &JsValue::from_str(name)).ok()?;
        if !value.is_object() {
            return None;
        }
    }
    let promise = call_method(&value, "get", &[JsValue::from_str(key)])?;
    let promise: js_sys::Promise = promise.dyn_into().ok()?;
    let items = wasm_bindgen_futures::JsFuture::from(promise).await.ok()?;
    Reflect::get(&items, &JsValue::from_str(key)).ok()
}

/// `chrome.storage.sync.get(key)[key]` as a bool, when present.
pub async fn storage_sync_flag(key: &str) -> Option<bool> {
    storage_sync_value(key).await?.as_bool()
}

/// A number from `chrome.storage.sync` (options page), if stored and numeric.
pub async fn storage_sync_number(key: &str) -> Option<f64> {
    storage_sync_value(key).await?.as_f64()
}

/// `chrome.i18n.getUILanguage()`, when available.
pub fn ui_language() -> Option<String> {
    let i18n = Reflect::get(&Reflect::get(&js_sys::global(), &JsValue::from_str("chrome")).ok()?, &JsValue::from_str("i18n")).ok()?;
    if !i18n.is_object() {
        return None;
    }
    call_method(&i18n, "getUILanguage", &[])?.as_string()
}
