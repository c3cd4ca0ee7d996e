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

    /// `chrome.runtime.connect({name})`.
    #[wasm_bindgen(js_namespace = ["chrome", "runtime"], js_name = connect)]
    pub fn runtime_connect(info: &JsValue) -> JsValue;

    /// `chrome.runtime.getManifest()`.
    #[wasm_bindgen(js_namespace = ["chrome", "runtime"], js_name = getManifest)]
    fn get_manifest() -> JsValue;

    /// `chrome.i18n.getMessage(key, substitutions)`.
    #[wasm_bindgen(js_namespace = ["chrome", "i18n"], js_name = getMessage, catch)]
    fn i18n_get_message(key: &str, substitutions: &JsValue) -> Result<JsValue, JsValue>;

    /// `chrome.storage.sync.get(keys)` (promise form).
    #[wasm_bindgen(js_namespace = ["chrome", "storage", "sync"], js_name = get)]
    pub fn storage_sync_get(keys: &JsValue) -> js_sys::Promise;

    /// `chrome.storage.sync.set(items)` (promise form).
    #[wasm_bindgen(js_namespace = ["chrome", "storage", "sync"], js_name = set)]
    pub fn storage_sync_set(items: &JsValue) -> js_sys::Promise;

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
pub fn post(port: &JsValue, message: &serde_json::Value) {
    let serializer = serde_wasm_bindgen::Serializer::json_compatible();
    match serde::Serialize::serialize(message, &serializer) {
        Ok(value) => {
            call_method(port, "postMessage", &[value]);
        }
        Err(error) => warn(&format!(
            "herdr-continuity: cannot convert a message: {error}"
        )),
    }
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

/// `chrome.i18n.getMessage(key, substitutions)`; falls back to the key (and its
/// substitutions) when a locale lacks it or `chrome.i18n` is absent, so a missing
/// translation is visible rather than blank.
pub fn message(key: &str, substitutions: &[String]) -> String {
    let array: js_sys::Array = substitutions.iter().map(|s| JsValue::from_str(s)).collect();
    match i18n_get_message(key, &array)
        .ok()
        .and_then(|text| text.as_string())
    {
        Some(text) if !text.is_empty() => text,
        _ if substitutions.is_empty() => key.to_owned(),
        _ => format!("{key}: {}", substitutions.join(", ")),
    }
}
