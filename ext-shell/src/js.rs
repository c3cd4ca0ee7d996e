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

/// `len` bytes of `crypto.getRandomValues` (the nonces of fenced data, the ledger's epoch),
/// or `None` when the global has no `crypto` or the call fails: there is no weaker stand-in
/// (fail closed; the caller refuses to start).
pub fn crypto_random(len: u32) -> Option<Vec<u8>> {
    let array = js_sys::Uint8Array::new_with_length(len);
    let crypto = global_path(&["crypto"])?;
    call_method(&crypto, "getRandomValues", &[array.clone().into()])?;
    Some(array.to_vec())
}

/// `performance.now()` of the current global (window or worker); `Date.now()` if absent.
pub fn performance_now() -> f64 {
    global_path(&["performance"])
        .and_then(|performance| call_method(&performance, "now", &[]))
        .and_then(|now| now.as_f64())
        .unwrap_or_else(js_sys::Date::now)
}

/// `root[keys[0]][keys[1]]…`; `None` at the first step that is missing (undefined or null)
/// or cannot be read (not an object). One walk for every Chrome path the shell reads.
pub fn get_path(root: &JsValue, keys: &[&str]) -> Option<JsValue> {
    let mut value = root.clone();
    for key in keys {
        value = Reflect::get(&value, &JsValue::from_str(key)).ok()?;
        if value.is_undefined() || value.is_null() {
            return None;
        }
    }
    Some(value)
}

/// [`get_path`] from the current global (the worker's or the page's).
pub fn global_path(keys: &[&str]) -> Option<JsValue> {
    get_path(&js_sys::global(), keys)
}

/// Calls `object[name](...args)`, logging (not throwing) a failure.
pub fn call_method(object: &JsValue, name: &str, args: &[JsValue]) -> Option<JsValue> {
    let method = Reflect::get(object, &JsValue::from_str(name)).ok()?;
    let Some(method) = method.dyn_ref::<Function>() else {
        warn(&format!("herdr-continuity: `{name}` is not a function on this object"));
        return None;
    };
    let array: js_sys::Array = args.iter().collect();
    match method.apply(object, &array) {
        Ok(result) => Some(result),
        Err(error) => {
            warn(&format!("herdr-continuity: `{name}` failed: {}", error_text(&error)));
            None
        }
    }
}

/// `port.postMessage(message)`; a closed port only logs.
pub fn post(port: &JsValue, message: &serde_json::Value) {
    call_method(port, "postMessage", &[to_js(message)]);
}

/// `JSON.stringify(value)`; `None` for values JSON cannot carry (undefined, functions,
/// cycles, BigInt).
pub fn json_text(value: &JsValue) -> Option<String> {
    js_sys::JSON::stringify(value).ok()?.as_string()
}

/// JS ⇄ Rust values cross by walking them (`to_js` / `json_value`), and text goes through
/// the browser's `JSON.parse` / `JSON.stringify`: serde_json's own text parser and printer
/// (with their number formatting) are not in the wasm (issue 8: -5 800 B gzip).
///
/// How deep a value may nest.
const MAX_DEPTH: u32 = ext_core::limits::MAX_JSON_DEPTH;

/// A JSON value as the JS value `JSON.parse` would give for its text.
pub fn to_js(value: &serde_json::Value) -> JsValue {
    use serde_json::Value;
    match value {
        Value::Null => JsValue::NULL,
        Value::Bool(b) => JsValue::from_bool(*b),
        Value::Number(n) => JsValue::from_f64(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => JsValue::from_str(s),
        Value::Array(items) => {
            let array = js_sys::Array::new();
            for item in items {
                array.push(&to_js(item));
            }
            array.into()
        }
        Value::Object(map) => {
            let object = js_sys::Object::new();
            for (key, item) in map {
                let (own, key, item) = (key == "__proto__", JsValue::from_str(key), to_js(item));
                if own {
                    // An own member, as `JSON.parse` makes it (a plain set would replace
                    // the object's prototype instead).
                    let descriptor = js_sys::Object::new();
                    for (name, value) in
                        [("value", &item), ("enumerable", &JsValue::TRUE), ("writable", &JsValue::TRUE), ("configurable", &JsValue::TRUE)]
                    {
                        let _ = Reflect::set(&descriptor, &JsValue::from_str(name), value);
                    }
                    let _ = Reflect::define_property(&object, &key, &descriptor);
                } else {
                    let _ = Reflect::set(&object, &key, &item);
                }
            }
            object.into()
        }
    }
}

/// `JSON.stringify` of a JSON value.
pub fn stringify(value: &serde_json::Value) -> String {
    json_text(&to_js(value)).unwrap_or_default()
}

/// `JSON.parse(text)` as a JSON value.
pub fn parse(text: &str) -> Result<serde_json::Value, String> {
    let value = js_sys::JSON::parse(text).map_err(|_| "not JSON".to_owned())?;
    json_value(&value)
}

/// A JS value as the JSON value of its `JSON.stringify` text: object members that are
/// undefined or functions are left out, such array items are null; an integral number is
/// an integer. Symbols, BigInts, non-finite numbers, cycles and nesting deeper than
/// [`MAX_DEPTH`] are refused.
pub fn json_value(value: &JsValue) -> Result<serde_json::Value, String> {
    walk(value, 0)?.ok_or_else(|| "not a JSON value".to_owned())
}

fn walk(value: &JsValue, depth: u32) -> Result<Option<serde_json::Value>, String> {
    use serde_json::Value;
    if depth > MAX_DEPTH {
        return Err(format!("nested deeper than {MAX_DEPTH} levels"));
    }
    if value.is_undefined() || value.is_function() {
        return Ok(None);
    }
    if value.is_null() {
        return Ok(Some(Value::Null));
    }
    if let Some(b) = value.as_bool() {
        return Ok(Some(Value::Bool(b)));
    }
    if let Some(n) = value.as_f64() {
        return number(n).map(Some);
    }
    if let Some(s) = value.as_string() {
        return Ok(Some(Value::String(s)));
    }
    if js_sys::Array::is_array(value) {
        let array: &js_sys::Array = value.unchecked_ref();
        let mut items = Vec::with_capacity(array.length() as usize);
        for item in array.iter() {
            items.push(walk(&item, depth + 1)?.unwrap_or(Value::Null));
        }
        return Ok(Some(Value::Array(items)));
    }
    if value.is_object() {
        let mut map = serde_json::Map::new();
        for key in js_sys::Object::keys(value.unchecked_ref::<js_sys::Object>()).iter() {
            let member = Reflect::get(value, &key).map_err(|e| error_text(&e))?;
            if let (Some(key), Some(member)) = (key.as_string(), walk(&member, depth + 1)?) {
                map.insert(key, member);
            }
        }
        return Ok(Some(Value::Object(map)));
    }
    Err("not a JSON value (a symbol or BigInt)".to_owned())
}

/// A JS number as JSON: integral values within 2^53 are integers (as serde_json parses
/// `3`), others floats; NaN and infinities are refused (`JSON.stringify` makes them null).
fn number(n: f64) -> Result<serde_json::Value, String> {
    const SAFE: f64 = 9_007_199_254_740_992.0;
    if n.fract() == 0.0 && n.abs() <= SAFE {
        return Ok(if n >= 0.0 { (n as u64).into() } else { (n as i64).into() });
    }
    serde_json::Number::from_f64(n).map(serde_json::Value::Number).ok_or_else(|| "a number that is not finite".to_owned())
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
    global_path(&["chrome", "runtime", "lastError", "message"])?.as_string()
}

/// The text of a thrown JS value.
pub fn error_text(error: &JsValue) -> String {
    if let Some(error) = error.dyn_ref::<js_sys::Error>() {
        return String::from(error.message());
    }
    error.as_string().unwrap_or_else(|| "unknown error".to_owned())
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
    let id = get_path(port, &["sender", "tab", "id"])?.as_f64()?;
    (id >= 0.0 && id <= f64::from(u32::MAX)).then_some(id as u32)
}

/// `port.sender` as `ext_core::limits` sees it (`id`, `url`, whether `tab` is set).
pub fn port_sender(port: &JsValue) -> ext_core::limits::PortSender {
    let field = |key: &str| get_path(port, &["sender", key]);
    ext_core::limits::PortSender {
        extension_id: field("id").and_then(|id| id.as_string()),
        url: field("url").and_then(|url| url.as_string()),
        has_tab: field("tab").is_some_and(|tab| tab.is_object()),
    }
}

/// `chrome.runtime.id` (this extension's id), when this global has it.
pub fn own_extension_id() -> Option<String> {
    global_path(&["chrome", "runtime", "id"])?.as_string()
}

/// `port.name`.
pub fn port_name(port: &JsValue) -> Option<String> {
    get_path(port, &["name"])?.as_string()
}

/// `chrome.storage.local`, when this global has it (not in unit-test pages).
pub fn storage_local() -> Option<JsValue> {
    global_path(&["chrome", "storage", "local"]).filter(JsValue::is_object)
}

/// `chrome.tabs.reload(tab)` (recovery's level 2, the page's own tab only); a failure
/// (the tab is gone) is ignored: the budget it spent stays spent.
pub fn reload_tab(tab: u32) {
    if let Some(tabs) = global_path(&["chrome", "tabs"]).filter(JsValue::is_object) {
        let _ = call_method(&tabs, "reload", &[JsValue::from(tab)]);
    }
}

/// `chrome.storage.local.set({key: text})`; a failure is logged.
pub fn storage_local_write(key: &str, text: &str) {
    storage_request(0, key, Some(text));
}

/// Asks `worker.js`'s `globalThis.herdrStorage` to read `key` of `chrome.storage.local`
/// (`text` `None`) or to write `text` under it; it answers through `js_answer` with
/// `token` (0: a write whose failure is only logged). A storage promise awaited here would
/// be a future, and the futures' runtime, kilobytes of the wasm. Nothing without the global
/// (the wasm tests' pages).
pub fn storage_request(token: u32, key: &str, text: Option<&str>) {
    let text = text.map_or(JsValue::UNDEFINED, JsValue::from_str);
    call_method(&js_sys::global(), "herdrStorage", &[JsValue::from(token), JsValue::from_str(key), text]);
}

/// Asks `worker.js`'s `globalThis.herdrTabs` for `chrome.tabs.create({url, active: true})`;
/// it answers through `js_answer` with `token`: the new tab's id, or why there is none
/// (browser control unavailable, X8). Nothing without the global (the wasm tests' pages).
pub fn create_tab_request(token: u32, url: &str) {
    call_method(&js_sys::global(), "herdrTabs", &[JsValue::from(token), JsValue::from_str(url)]);
}

/// `chrome.i18n.getUILanguage()`, when available.
pub fn ui_language() -> Option<String> {
    let i18n = global_path(&["chrome", "i18n"]).filter(JsValue::is_object)?;
    call_method(&i18n, "getUILanguage", &[])?.as_string()
}
