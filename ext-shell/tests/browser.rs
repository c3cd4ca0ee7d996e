//! ext-shell in a browser page (headless Chromium). Run: `scripts/test-wasm.sh`.
use wasm_bindgen_test::*;

mod common;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn runtime_messages_parse_into_core_types() {
    common::runtime_messages_parse_into_core_types();
}

#[wasm_bindgen_test]
async fn driver_handshakes_probes_and_reconnects_with_fake_ports() {
    common::driver_handshakes_probes_and_reconnects_with_fake_ports().await;
}

/// Continuity JSON ⇄ core types.
#[wasm_bindgen_test]
fn continuity_messages_translate() {
    common::continuity_messages_translate();
}

/// Page messages and ports are validated and size-capped; runtime text is clipped.
#[wasm_bindgen_test]
fn page_and_runtime_input_is_bounded() {
    common::page_and_runtime_input_is_bounded();
}

/// `page_diagnostics` is validated against its own caps.
#[wasm_bindgen_test]
fn page_diagnostics_are_bounded() {
    common::page_diagnostics_are_bounded();
}

/// JS values cross as their JSON, without serde_json's text parser.
#[wasm_bindgen_test]
fn js_values_cross_as_their_json() {
    common::js_values_cross_as_their_json();
}

/// `health_sample` is validated and size-capped (issue 10, H1).
#[wasm_bindgen_test]
fn health_samples_are_bounded() {
    common::health_samples_are_bounded();
}

/// X4: the handoff's calls and its package, read whole within its caps.
#[wasm_bindgen_test]
fn handoff_calls_and_package_are_checked() {
    common::handoff_calls_and_package_are_checked();
}

/// Issue 23, item 7: every `deliver` leaves only after the snapshot naming it is written.
#[wasm_bindgen_test]
fn a_delivery_leaves_only_after_the_snapshot_naming_it_is_written() {
    common::a_delivery_leaves_only_after_the_snapshot_naming_it_is_written();
}

/// A storage write answered before the worker exists — `start_worker` keeps an unreadable
/// state aside, then fails to create the driver — is not dropped silently: its failure is
/// warned, as the worker warns a failed write of its own (review worker28 #6).
#[wasm_bindgen_test]
fn a_failed_write_before_the_worker_started_is_warned() {
    let console = js_sys::Reflect::get(&js_sys::global(), &"console".into()).expect("console");
    let original = js_sys::Reflect::get(&console, &"warn".into()).expect("console.warn");
    let warned = js_sys::Array::new();
    let record = js_sys::Function::new_with_args("text", "this.push(String(text))").bind0(&warned);
    js_sys::Reflect::set(&console, &"warn".into(), &record).expect("replace console.warn");
    ext_shell::js_answer(0, false, wasm_bindgen::JsValue::from_str("QUOTA_BYTES quota exceeded"));
    js_sys::Reflect::set(&console, &"warn".into(), &original).expect("restore console.warn");
    let texts: Vec<String> = warned.iter().filter_map(|text| text.as_string()).collect();
    assert_eq!(texts, ["herdr-continuity: saving state failed: QUOTA_BYTES quota exceeded"], "{texts:?}");
}
