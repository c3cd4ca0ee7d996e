//! The HUD's Handoff on the wire (docs/PROTOCOL.md "Handoff package", SPEC X4): the two
//! runtime calls a transfer makes, the package read from `handoff_prepared` with every field
//! within `continuity_protocol::handoff`'s caps, and `chrome.tabs.create` for the new tab.
//!
//! Only conversions: a package over a cap, or whose three copies of the message are not
//! the same bytes, is `None` (the core then fails the transfer, X5), never cut or guessed.

use continuity_protocol::handoff::{MAX_HANDOFF_CONTINUITY_ID_CHARS, MAX_HANDOFF_ID_CHARS, MAX_HANDOFF_MESSAGE_CHARS, MAX_HANDOFF_SOURCE_URL_CHARS};
use ext_core::handoff::Package;
use ext_core::limits;
use js_sys::Reflect;
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};

use crate::js;

/// A string field within `max_chars` (never cut: over the cap is `None`).
fn capped(value: &Value, path: &[&str], max_chars: usize) -> Option<String> {
    let mut at = value;
    for key in path {
        at = at.get(*key)?;
    }
    at.as_str().filter(|s| !s.is_empty() && limits::within(s, max_chars)).map(str::to_owned)
}

/// The package of a `handoff_prepared` result (X4): `handoff.message`,
/// `automatic_delivery.params.message` and `manual_delivery.copy_prompt` must be one string.
pub fn package(result: &Value) -> Option<Package> {
    let message = capped(result, &["automatic_delivery", "params", "message"], MAX_HANDOFF_MESSAGE_CHARS)?;
    let copy_prompt = capped(result, &["manual_delivery", "copy_prompt"], MAX_HANDOFF_MESSAGE_CHARS)?;
    let inner = capped(result, &["handoff", "message"], MAX_HANDOFF_MESSAGE_CHARS)?;
    if inner != message {
        return None;
    }
    Some(Package {
        transfer_id: capped(result, &["handoff", "handoff_id"], MAX_HANDOFF_ID_CHARS)?,
        continuity_id: capped(result, &["handoff", "continuity_id"], MAX_HANDOFF_CONTINUITY_ID_CHARS)?,
        source_url: capped(result, &["handoff", "source_url"], MAX_HANDOFF_SOURCE_URL_CHARS)?,
        message,
        copy_prompt,
    })
}

/// `chrome.tabs.create({url, active: true})`: the new tab's id, or why there is none
/// (browser control unavailable, X8).
pub async fn create_tab(url: &str) -> Result<u32, String> {
    let chrome = Reflect::get(&js_sys::global(), &JsValue::from_str("chrome")).map_err(|e| js::error_text(&e))?;
    let tabs = Reflect::get(&chrome, &JsValue::from_str("tabs")).ok().filter(JsValue::is_object).ok_or_else(|| "chrome.tabs is not available".to_owned())?;
    let options = js_sys::Object::new();
    let _ = Reflect::set(&options, &JsValue::from_str("url"), &JsValue::from_str(url));
    let _ = Reflect::set(&options, &JsValue::from_str("active"), &JsValue::TRUE);
    let promise = js::call_method(&tabs, "create", &[options.into()]).ok_or_else(|| "chrome.tabs.create failed".to_owned())?;
    let promise: js_sys::Promise = promise.dyn_into().map_err(|_| "chrome.tabs.create gave no promise".to_owned())?;
    let tab = wasm_bindgen_futures::JsFuture::from(promise).await.map_err(|e| js::error_text(&e))?;
    Reflect::get(&tab, &JsValue::from_str("id"))
        .ok()
        .and_then(|id| id.as_f64())
        .filter(|id| *id >= 0.0 && *id <= f64::from(u32::MAX))
        .map(|id| id as u32)
        .ok_or_else(|| "the new tab has no id".to_owned())
}
