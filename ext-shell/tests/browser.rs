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

/// The side panel renders lines with their tone and keyboard-usable buttons (R: O1).
#[wasm_bindgen_test]
fn side_panel_renders_a_view_with_buttons() {
    use ext_shell::pages::{render_view, ReceivedView};
    let document = web_sys::window()
        .and_then(|w| w.document())
        .expect("document");
    let root = document.create_element("section").expect("element");
    let view = <ReceivedView as ext_core::json_read::ReadJson>::read_json(&serde_json::json!({
        "companion": {"key": "companionNotInstalled", "substitutions": [], "tone": "bad"},
        "herdr": {"key": "herdrUnknown", "substitutions": [], "tone": "pending"},
        "actions": [{"id": "retry_companion", "label": "actionRetryCompanion"}, {"id": "bogus", "label": "x"}]
    }))
    .expect("view");
    let (connect, _) = common::fake_chrome();
    let port = connect
        .call1(&wasm_bindgen::JsValue::NULL, &"panel".into())
        .expect("port");
    render_view(&root, &view, &port).expect("renders");
    let line = root
        .query_selector("[data-line=companion]")
        .expect("query")
        .expect("line");
    assert_eq!(line.class_name(), "line tone-bad");
    let buttons = root.query_selector_all("button").expect("query");
    assert_eq!(buttons.length(), 1, "unknown actions are not rendered");
    let button = root
        .query_selector("button")
        .expect("query")
        .expect("button");
    assert_eq!(button.get_attribute("type").as_deref(), Some("button"));
    use wasm_bindgen::JsCast;
    button
        .dyn_into::<web_sys::HtmlElement>()
        .expect("html")
        .click();
    let posted = common::sent(&port);
    assert_eq!(
        posted,
        vec![serde_json::json!({"type": "action", "action": "retry_companion"})]
    );
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
