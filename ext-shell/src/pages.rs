//! Extension pages rendered by wasm: the side panel (Control Center, R: O1) and the
//! options page (R: O4).
//!
//! The side panel does not hold a link of its own: it connects a `panel` port to the
//! worker and renders the HUD view models it receives (the same ones pages get). The
//! options page reads and writes the settings listed in [`SETTINGS`] in
//! `chrome.storage.sync`.

use js_sys::{Object, Reflect};
use ext_core::semantic_auto::{JudgeMode, JudgeSettings, MAX_MAX_CONTINUES, SETTINGS_KEY};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Document, Element};

use crate::js;
use crate::wire::PageDiagnostics;
use ext_core::continuity::PanelView;
use ext_core::hud::{ActionId, StatusLine};
use ext_core::json_read::read_struct;

/// A view model as received on a panel port (the JSON of `ext_core::hud::HudView`).
#[derive(Debug, PartialEq)]
pub struct ReceivedView {
    /// Companion line.
    pub companion: ReceivedLine,
    /// Herdr line.
    pub herdr: ReceivedLine,
    /// Buttons.
    pub actions: Vec<ReceivedAction>,
}

/// A status line as received.
#[derive(Debug, PartialEq)]
pub struct ReceivedLine {
    /// i18n key.
    pub key: String,
    /// Substitutions.
    pub substitutions: Vec<String>,
    /// Tone name.
    pub tone: String,
}

/// A button as received.
#[derive(Debug, PartialEq)]
pub struct ReceivedAction {
    /// Action wire name.
    pub id: String,
    /// i18n key of the label.
    pub label: String,
}

read_struct!(ReceivedView { companion, herdr, actions });

read_struct!(ReceivedLine { key, substitutions, tone });

read_struct!(ReceivedAction { id, label });

impl From<&StatusLine> for ReceivedLine {
    fn from(line: &StatusLine) -> Self {
        let tone = serde_json::to_value(line.tone)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        ReceivedLine {
            key: line.key.to_owned(),
            substitutions: line.substitutions.clone(),
            tone,
        }
    }
}

/// One setting shown on the options page.
#[derive(Debug, Clone, Copy)]
pub struct SettingSpec {
    /// Key in `chrome.storage.sync`.
    pub key: &'static str,
    /// i18n key of the label.
    pub label: &'static str,
    /// Default and range.
    pub kind: SettingKind,
}

/// Type and bounds of a setting.
#[derive(Debug, Clone, Copy)]
pub enum SettingKind {
    /// Whole seconds within `min..=max`.
    Seconds {
        /// Default.
        default: u32,
        /// Lowest accepted value.
        min: u32,
        /// Highest accepted value.
        max: u32,
    },
    /// On/off.
    Flag {
        /// Default.
        default: bool,
    },
}

/// Settings that exist so far (defaults from REFERENCE.md §2; R: P3, P5, M2, O4).
pub const SETTINGS: &[SettingSpec] = &[
    SettingSpec {
        key: "progressTickSec",
        label: "optionProgressTickSec",
        kind: SettingKind::Seconds {
            default: 60,
            min: 5,
            max: 3600,
        },
    },
    SettingSpec {
        key: "progressFallbackSec",
        label: "optionProgressFallbackSec",
        kind: SettingKind::Seconds {
            default: 1200,
            min: 60,
            max: 86_400,
        },
    },
    SettingSpec {
        key: "allowProjectAuto",
        label: "optionAllowProjectAuto",
        kind: SettingKind::Flag { default: false },
    },
];

/// Clamps a number typed by the user into a setting's range; `None` when it is not a
/// whole number (the page then shows an error and saves nothing).
pub fn accept_seconds(text: &str, min: u32, max: u32) -> Option<u32> {
    text.trim()
        .parse::<u32>()
        .ok()
        .map(|value| value.clamp(min, max))
}

fn document() -> Result<Document, JsValue> {
    web_sys::window()
        .and_then(|window| window.document())
        .ok_or_else(|| JsError::new("no document: mount functions run in extension pages").into())
}

/// Replaces the text of every `[data-i18n]` element with its message (page titles).
fn translate_static_text(document: &Document) -> Result<(), JsValue> {
    let nodes = document.query_selector_all("[data-i18n]")?;
    for index in 0..nodes.length() {
        if let Some(element) = nodes
            .item(index)
            .and_then(|node| node.dyn_into::<Element>().ok())
        {
            if let Some(key) = element.get_attribute("data-i18n") {
                element.set_text_content(Some(&js::message(&key, &[])));
            }
        }
    }
    Ok(())
}

fn element(document: &Document, tag: &str, class: &str) -> Result<Element, JsValue> {
    let element = document.create_element(tag)?;
    if !class.is_empty() {
        element.set_class_name(class);
    }
    Ok(element)
}

fn on(
    target: &Element,
    event: &str,
    handler: impl FnMut(web_sys::Event) + 'static,
) -> Result<(), JsValue> {
    let closure = Closure::<dyn FnMut(web_sys::Event)>::new(handler);
    target.add_event_listener_with_callback(event, closure.as_ref().unchecked_ref())?;
    // The element lives as long as the page; so does its listener.
    closure.forget();
    Ok(())
}

/// Renders a received view into `root` (replacing its content); buttons post actions
/// on `port`.
pub fn render_view(root: &Element, view: &ReceivedView, port: &JsValue) -> Result<(), JsValue> {
    let document = document()?;
    root.set_inner_html("");
    for (name, line) in [("companion", &view.companion), ("herdr", &view.herdr)] {
        let paragraph = element(&document, "p", &format!("line tone-{}", line.tone))?;
        paragraph.set_attribute("data-line", name)?;
        paragraph.set_attribute("data-key", &line.key)?;
        paragraph.set_text_content(Some(&js::message(&line.key, &line.substitutions)));
        root.append_child(&paragraph)?;
    }
    let buttons = element(&document, "div", "actions")?;
    for action in &view.actions {
        if ActionId::from_wire(&action.id).is_none() {
            continue;
        }
        let button = element(&document, "button", "action")?;
        button.set_attribute("type", "button")?;
        button.set_attribute("data-action", &action.id)?;
        button.set_text_content(Some(&js::message(&action.label, &[])));
        let port = port.clone();
        let id = action.id.clone();
        on(&button, "click", move |_| {
            js::post(&port, &serde_json::json!({"type": "action", "action": id}));
        })?;
        buttons.append_child(&button)?;
    }
    root.append_child(&buttons)?;
    Ok(())
}

fn show_round_trip(status_region: &Element, message: &JsValue) {
    let line: Option<ReceivedLine> = Reflect::get(message, &JsValue::from_str("status"))
        .ok()
        .and_then(|status| js::from_js(&status).ok());
    if let Some(line) = line {
        status_region.set_text_content(Some(&js::message(&line.key, &line.substitutions)));
        let _ = status_region.set_attribute("data-key", &line.key);
    }
}

fn button(document: &Document, label: &str, attribute: (&str, &str), message: serde_json::Value, port: &JsValue) -> Result<Element, JsValue> {
    let button = element(document, "button", "action")?;
    button.set_attribute("type", "button")?;
    button.set_attribute(attribute.0, attribute.1)?;
    button.set_text_content(Some(label));
    let port = port.clone();
    on(&button, "click", move |_| js::post(&port, &message))?;
    Ok(button)
}

/// Renders the Control Center part of the side panel: the current tab's scope, the live
/// catalog with a Bind button per workspace, and the bindings with Unbind (B1, O1).
pub fn render_panel(root: &Element, view: &PanelView, port: &JsValue) -> Result<(), JsValue> {
    let document = document()?;
    root.set_inner_html("");
    let heading = |key: &str| -> Result<Element, JsValue> {
        let h = element(&document, "h2", "")?;
        h.set_text_content(Some(&js::message(key, &[])));
        Ok(h)
    };
    let h = heading("panelCurrentTab")?;
    root.append_child(&h)?;
    let tab_line = element(&document, "p", "line")?;
    tab_line.set_attribute("data-panel-tab", "")?;
    match &view.tab {
        Some(tab) => {
            tab_line.set_attribute("data-tab-id", &tab.tab_id.to_string())?;
            tab_line.set_attribute("data-scope-key", tab.scope_key.as_deref().unwrap_or(""))?;
            tab_line.set_attribute("data-bound-to", tab.bound_to.as_deref().unwrap_or(""))?;
            let mut text = match &tab.scope_key {
                Some(key) => js::message("panelScope", std::slice::from_ref(key)),
                None => tab.reason.clone().unwrap_or_else(|| tab.url.clone()),
            };
            if let Some(bound) = &tab.bound_to {
                text.push(' ');
                text.push_str(&js::message("panelBoundTo", std::slice::from_ref(bound)));
            }
            tab_line.set_text_content(Some(&text));
        }
        None => tab_line.set_text_content(Some(&js::message("panelNoTab", &[]))),
    }
    root.append_child(&tab_line)?;

    let h = heading("panelCatalog")?;
    root.append_child(&h)?;
    if let Some(error) = &view.catalog_error {
        let p = element(&document, "p", "line tone-bad")?;
        p.set_attribute("data-catalog-error", "")?;
        p.set_text_content(Some(&js::message("panelCatalogError", std::slice::from_ref(error))));
        root.append_child(&p)?;
    }
    let catalog = element(&document, "ul", "catalog")?;
    catalog.set_attribute("data-catalog", "")?;
    let bind_tab = view.tab.as_ref().filter(|t| t.bindable).map(|t| t.tab_id);
    for workspace in &view.catalog {
        let item = element(&document, "li", "")?;
        let label = format!("{} ({})", workspace.label, workspace.workspace_id);
        match bind_tab {
            Some(tab_id) => {
                let b = button(
                    &document,
                    &js::message("panelBind", &[label]),
                    ("data-bind", &workspace.workspace_id),
                    serde_json::json!({"type": "bind", "tab_id": tab_id, "workspace_id": workspace.workspace_id, "label": workspace.label}),
                    port,
                )?;
                item.append_child(&b)?;
            }
            None => item.set_text_content(Some(&label)),
        }
        catalog.append_child(&item)?;
    }
    if view.catalog.is_empty() {
        let p = element(&document, "p", "line")?;
        p.set_text_content(Some(&js::message("panelCatalogEmpty", &[])));
        root.append_child(&p)?;
    }
    root.append_child(&catalog)?;
    let refresh = button(
        &document,
        &js::message("panelRefresh", &[]),
        ("data-refresh", ""),
        serde_json::json!({"type": "panel_refresh"}),
        port,
    )?;
    root.append_child(&refresh)?;

    let h = heading("panelBindings")?;
    root.append_child(&h)?;
    let list = element(&document, "ul", "bindings")?;
    list.set_attribute("data-bindings", "")?;
    for binding in &view.bindings {
        let row = element(&document, "li", "")?;
        row.set_attribute("data-binding-row", &binding.scope_key)?;
        row.set_attribute("data-workspace", &binding.workspace_id)?;
        let mut text = format!("{} → {} ({})", binding.session_ref, binding.label, binding.workspace_id);
        if let Some(target) = &binding.active_target {
            text.push_str(&format!(" /c/{target}"));
        }
        if !binding.in_catalog {
            text.push(' ');
            text.push_str(&js::message("panelNotInCatalog", &[]));
        }
        let span = element(&document, "span", "")?;
        span.set_text_content(Some(&text));
        row.append_child(&span)?;
        let unbind = button(
            &document,
            &js::message("panelUnbind", &[]),
            ("data-unbind", &binding.scope_key),
            serde_json::json!({"type": "unbind", "scope_key": binding.scope_key}),
            port,
        )?;
        row.append_child(&unbind)?;
        list.append_child(&row)?;
    }
    if view.bindings.is_empty() {
        let p = element(&document, "p", "line")?;
        p.set_text_content(Some(&js::message("panelNoBindings", &[])));
        root.append_child(&p)?;
    }
    root.append_child(&list)?;
    Ok(())
}

/// The diagnostics as plain text for a bug report ("Copy diagnostics"): the same facts the
/// panel shows, in fixed English field names so any maintainer can read them; selectors,
/// ids and counts only, never page content.
pub fn diagnostics_text(extension_version: &str, diagnostics: &PageDiagnostics) -> String {
    let none = "none";
    let mut lines = vec![
        format!("herdr-continuity diagnostics (extension {extension_version})"),
        format!("site: {}", diagnostics.site.as_deref().unwrap_or(none)),
        format!("generation: {}", diagnostics.generation.as_deref().unwrap_or(none)),
        format!("matching rules: {}", if diagnostics.matching.is_empty() { none.to_owned() } else { diagnostics.matching.join(", ") }),
    ];
    for name in ordered_facts(diagnostics) {
        let probe = diagnostics.facts.get(name).cloned().flatten();
        lines.push(format!("fact {name}: {}", probe.as_deref().unwrap_or(none)));
    }
    let csp = &diagnostics.csp;
    lines.push(format!(
        "csp: meta policy {}, {} violation(s){}",
        if csp.meta { "present" } else { "absent" },
        csp.violations,
        if csp.directives.is_empty() { String::new() } else { format!(" ({})", csp.directives.join(", ")) }
    ));
    for delivery in &diagnostics.deliveries {
        let reason = delivery.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
        lines.push(format!("delivery {}: {}{reason}", delivery.id, delivery.outcome));
    }
    lines.join("\n")
}

/// The reported facts in `ext_core::sites::FACT_NAMES` order, then any others.
fn ordered_facts(diagnostics: &PageDiagnostics) -> Vec<&str> {
    let mut names: Vec<&str> = ext_core::sites::FACT_NAMES.iter().copied().filter(|n| diagnostics.facts.contains_key(*n)).collect();
    names.extend(diagnostics.facts.keys().map(String::as_str).filter(|n| !ext_core::sites::FACT_NAMES.contains(n)));
    names
}

/// Renders "What the extension sees" for the panel's tab: the layout generation, each
/// fact with the probe that matched (or "none"), the CSP as observed, the last delivery
/// outcomes, and a button copying [`diagnostics_text`].
pub fn render_diagnostics(root: &Element, diagnostics: Option<&PageDiagnostics>) -> Result<(), JsValue> {
    let document = document()?;
    root.set_inner_html("");
    let heading = element(&document, "h2", "")?;
    heading.set_text_content(Some(&js::message("panelSees", &[])));
    root.append_child(&heading)?;
    let Some(diagnostics) = diagnostics else {
        let p = element(&document, "p", "line")?;
        p.set_attribute("data-diagnostics-missing", "")?;
        p.set_text_content(Some(&js::message("panelSeesNothing", &[])));
        root.append_child(&p)?;
        return Ok(());
    };
    let line = element(&document, "p", "line")?;
    line.set_attribute("data-generation", diagnostics.generation.as_deref().unwrap_or(""))?;
    match &diagnostics.generation {
        Some(generation) => line.set_text_content(Some(&js::message("panelGeneration", std::slice::from_ref(generation)))),
        None => {
            line.set_class_name("line tone-bad");
            line.set_text_content(Some(&js::message("panelGenerationUnknown", &[])));
        }
    }
    root.append_child(&line)?;
    let facts = element(&document, "ul", "facts")?;
    facts.set_attribute("data-facts", "")?;
    let none = js::message("panelFactNone", &[]);
    for name in ordered_facts(diagnostics) {
        let probe = diagnostics.facts.get(name).cloned().flatten();
        let item = element(&document, "li", "")?;
        item.set_attribute("data-fact", name)?;
        item.set_attribute("data-selector", probe.as_deref().unwrap_or(""))?;
        item.set_text_content(Some(&format!("{name}: {}", probe.as_deref().unwrap_or(&none))));
        facts.append_child(&item)?;
    }
    root.append_child(&facts)?;
    let csp = element(&document, "p", "line")?;
    csp.set_attribute("data-csp-meta", if diagnostics.csp.meta { "true" } else { "false" })?;
    csp.set_attribute("data-csp-violations", &diagnostics.csp.violations.to_string())?;
    let meta = js::message(if diagnostics.csp.meta { "panelCspMeta" } else { "panelCspNoMeta" }, &[]);
    let violations = js::message(
        "panelCspViolations",
        &[diagnostics.csp.violations.to_string(), diagnostics.csp.directives.join(", ")],
    );
    csp.set_text_content(Some(&format!("{meta} {violations}")));
    root.append_child(&csp)?;
    let heading = element(&document, "h3", "")?;
    heading.set_text_content(Some(&js::message("panelDeliveries", &[])));
    root.append_child(&heading)?;
    let list = element(&document, "ul", "deliveries")?;
    list.set_attribute("data-deliveries", "")?;
    for delivery in &diagnostics.deliveries {
        let item = element(&document, "li", "")?;
        item.set_attribute("data-delivery", &delivery.id)?;
        item.set_attribute("data-outcome", &delivery.outcome)?;
        let reason = delivery.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
        item.set_text_content(Some(&format!("{} → {}{reason}", delivery.id, delivery.outcome)));
        list.append_child(&item)?;
    }
    if diagnostics.deliveries.is_empty() {
        let p = element(&document, "p", "line")?;
        p.set_text_content(Some(&js::message("panelNoDeliveries", &[])));
        root.append_child(&p)?;
    }
    root.append_child(&list)?;
    let copy_status = element(&document, "p", "")?;
    copy_status.set_attribute("role", "status")?;
    copy_status.set_attribute("data-copy-status", "")?;
    let copy = element(&document, "button", "action")?;
    copy.set_attribute("type", "button")?;
    copy.set_attribute("data-copy-diagnostics", "")?;
    copy.set_text_content(Some(&js::message("panelCopyDiagnostics", &[])));
    let text = diagnostics_text(&js::extension_version(), diagnostics);
    let status = copy_status.clone();
    on(&copy, "click", move |_| {
        let text = text.clone();
        let status = status.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let copied = match clipboard_write(&text) {
                Some(promise) => wasm_bindgen_futures::JsFuture::from(promise).await.map(|_| ()),
                None => Err(JsValue::from_str("navigator.clipboard is not available")),
            };
            let message = match copied {
                Ok(()) => js::message("panelCopied", &[]),
                Err(error) => js::message("panelCopyFailed", &[js::error_text(&error)]),
            };
            status.set_text_content(Some(&message));
        });
    })?;
    root.append_child(&copy)?;
    root.append_child(&copy_status)?;
    Ok(())
}

/// `navigator.clipboard.writeText(text)`; `None` when the page has no clipboard API.
fn clipboard_write(text: &str) -> Option<js_sys::Promise> {
    let navigator = Reflect::get(&js_sys::global(), &JsValue::from_str("navigator")).ok()?;
    let clipboard = Reflect::get(&navigator, &JsValue::from_str("clipboard")).ok()?;
    let write: js_sys::Function = Reflect::get(&clipboard, &JsValue::from_str("writeText")).ok()?.dyn_into().ok()?;
    write.call1(&clipboard, &JsValue::from_str(text)).ok()?.dyn_into().ok()
}

/// `?tab=<id>` of the panel's URL (a panel opened for a given tab), if any.
fn tab_from_location() -> Option<u32> {
    let search = web_sys::window()?.location().search().ok()?;
    search
        .trim_start_matches('?')
        .split('&')
        .find_map(|pair| pair.strip_prefix("tab="))
        .and_then(|id| id.parse().ok())
}

/// Mounts the side panel into `#app`: connects a `panel` port to the worker and renders
/// the views it receives.
#[wasm_bindgen]
pub fn mount_side_panel() -> Result<(), JsValue> {
    let document = document()?;
    let app = document
        .get_element_by_id("app")
        .ok_or_else(|| JsError::new("sidepanel.html lacks #app"))?;
    translate_static_text(&document)?;
    let view_root = element(&document, "section", "hud")?;
    let status_region = element(&document, "p", "round-trip")?;
    status_region.set_attribute("role", "status")?;
    status_region.set_attribute("aria-live", "polite")?;
    let control_center = element(&document, "section", "control-center")?;
    let sees = element(&document, "section", "diagnostics")?;
    sees.set_attribute("data-diagnostics", "")?;
    app.append_child(&view_root)?;
    app.append_child(&status_region)?;
    app.append_child(&control_center)?;
    app.append_child(&sees)?;

    let info = Object::new();
    Reflect::set(
        &info,
        &JsValue::from_str("name"),
        &JsValue::from_str("panel"),
    )?;
    let port = js::runtime_connect(&info);
    let listener_port = port.clone();
    let on_message = Closure::<dyn FnMut(JsValue)>::new(move |message: JsValue| {
        let kind = Reflect::get(&message, &JsValue::from_str("type"))
            .ok()
            .and_then(|kind| kind.as_string());
        match kind.as_deref() {
            Some("hud") => {
                let view = Reflect::get(&message, &JsValue::from_str("view"))
                    .ok()
                    .and_then(|view| js::from_js::<ReceivedView>(&view).ok());
                match view {
                    Some(view) => {
                        if let Err(error) = render_view(&view_root, &view, &listener_port) {
                            js::warn(&js::error_text(&error));
                        }
                    }
                    None => {
                        js::warn("herdr-continuity: the worker sent a HUD view of unknown shape")
                    }
                }
            }
            Some("round_trip_result") => show_round_trip(&status_region, &message),
            Some("panel") => {
                let view = Reflect::get(&message, &JsValue::from_str("view"))
                    .ok()
                    .and_then(|view| js::from_js::<PanelView>(&view).ok());
                match view {
                    Some(view) => {
                        if let Err(error) = render_panel(&control_center, &view, &listener_port) {
                            js::warn(&js::error_text(&error));
                        }
                    }
                    None => js::warn("herdr-continuity: the worker sent a panel view of unknown shape"),
                }
            }
            Some("diagnostics") => {
                let diagnostics = Reflect::get(&message, &JsValue::from_str("diagnostics"))
                    .ok()
                    .filter(|value| !value.is_null() && !value.is_undefined())
                    .and_then(|value| js::from_js::<PageDiagnostics>(&value).ok());
                if let Err(error) = render_diagnostics(&sees, diagnostics.as_ref()) {
                    js::warn(&js::error_text(&error));
                }
            }
            _ => {}
        }
    });
    js::add_listener(&port, "onMessage", on_message.as_ref().unchecked_ref());
    on_message.forget();
    js::post(&port, &serde_json::json!({"type": "panel_hello", "tab_id": tab_from_location()}));
    Ok(())
}

/// Mounts the options page into `#app`: one labelled input per [`SETTINGS`] entry,
/// loaded from and saved to `chrome.storage.sync`.
#[wasm_bindgen]
pub fn mount_options() -> Result<(), JsValue> {
    let document = document()?;
    let app = document
        .get_element_by_id("app")
        .ok_or_else(|| JsError::new("options.html lacks #app"))?;
    translate_static_text(&document)?;
    let status = element(&document, "p", "save-status")?;
    status.set_attribute("role", "status")?;
    status.set_attribute("aria-live", "polite")?;

    let defaults = Object::new();
    for spec in SETTINGS {
        let value = match spec.kind {
            SettingKind::Seconds { default, .. } => JsValue::from(default),
            SettingKind::Flag { default } => JsValue::from(default),
        };
        Reflect::set(&defaults, &JsValue::from_str(spec.key), &value)?;
    }
    let form = element(&document, "form", "settings")?;
    app.append_child(&form)?;
    app.append_child(&status)?;
    let judge = element(&document, "fieldset", "judge")?;
    app.append_child(&judge)?;
    wasm_bindgen_futures::spawn_local(mount_judge_options(document.clone(), judge));

    wasm_bindgen_futures::spawn_local(async move {
        let stored = wasm_bindgen_futures::JsFuture::from(js::storage_sync_get(&defaults))
            .await
            .unwrap_or_else(|_| defaults.clone().into());
        if let Err(error) = build_settings_form(&document, &form, &status, &stored) {
            js::warn(&js::error_text(&error));
        }
    });
    Ok(())
}

fn build_settings_form(
    document: &Document,
    form: &Element,
    status: &Element,
    stored: &JsValue,
) -> Result<(), JsValue> {
    for spec in SETTINGS {
        let row = element(document, "label", "setting")?;
        let caption = element(document, "span", "caption")?;
        caption.set_text_content(Some(&js::message(spec.label, &[])));
        let input = element(document, "input", "")?;
        input.set_id(spec.key);
        input.set_attribute("name", spec.key)?;
        let current =
            Reflect::get(stored, &JsValue::from_str(spec.key)).unwrap_or(JsValue::UNDEFINED);
        match spec.kind {
            SettingKind::Seconds { default, min, max } => {
                input.set_attribute("type", "number")?;
                input.set_attribute("min", &min.to_string())?;
                input.set_attribute("max", &max.to_string())?;
                let value = current.as_f64().map_or(default, |v| v as u32);
                Reflect::set(
                    &input,
                    &JsValue::from_str("value"),
                    &JsValue::from_str(&value.to_string()),
                )?;
            }
            SettingKind::Flag { default } => {
                input.set_attribute("type", "checkbox")?;
                let value = current.as_bool().unwrap_or(default);
                Reflect::set(&input, &JsValue::from_str("checked"), &JsValue::from(value))?;
            }
        }
        let key = spec.key;
        let kind = spec.kind;
        let status = status.clone();
        let field = input.clone();
        on(&input, "change", move |_| {
            let value = match kind {
                SettingKind::Seconds { min, max, .. } => {
                    let text = Reflect::get(&field, &JsValue::from_str("value"))
                        .ok()
                        .and_then(|v| v.as_string())
                        .unwrap_or_default();
                    match accept_seconds(&text, min, max) {
                        Some(seconds) => {
                            let _ = Reflect::set(
                                &field,
                                &JsValue::from_str("value"),
                                &JsValue::from_str(&seconds.to_string()),
                            );
                            JsValue::from(seconds)
                        }
                        None => {
                            status.set_text_content(Some(&js::message(
                                "optionNotANumber",
                                &[min.to_string(), max.to_string()],
                            )));
                            return;
                        }
                    }
                }
                SettingKind::Flag { .. } => {
                    Reflect::get(&field, &JsValue::from_str("checked")).unwrap_or(JsValue::FALSE)
                }
            };
            let items = Object::new();
            let _ = Reflect::set(&items, &JsValue::from_str(key), &value);
            let status = status.clone();
            wasm_bindgen_futures::spawn_local(async move {
                let saved =
                    wasm_bindgen_futures::JsFuture::from(js::storage_sync_set(&items)).await;
                let text = match saved {
                    Ok(_) => js::message("optionSaved", &[]),
                    Err(error) => js::message("optionSaveFailed", &[js::error_text(&error)]),
                };
                status.set_text_content(Some(&text));
            });
        })?;
        row.append_child(&caption)?;
        row.append_child(&input)?;
        form.append_child(&row)?;
    }
    Ok(())
}

/// The options page's turn-end judge section (O4): judge use and the bound on automatic
/// continues, in `chrome.storage.local` under `ext_core::semantic_auto::SETTINGS_KEY`
/// (read and validated by the core: a bad stored value shows the default and says so),
/// and the queue's limits (fixed, shown only).
async fn mount_judge_options(document: Document, fieldset: Element) {
    let stored = js::storage_local_read(SETTINGS_KEY).await;
    if let Err(error) = build_judge_options(&document, &fieldset, stored.as_deref()) {
        js::warn(&js::error_text(&error));
    }
}

fn build_judge_options(document: &Document, fieldset: &Element, stored: Option<&str>) -> Result<(), JsValue> {
    let (settings, problem) = JudgeSettings::parse(stored);
    let legend = element(document, "legend", "")?;
    legend.set_text_content(Some(&js::message("optionJudgeHeading", &[])));
    fieldset.append_child(&legend)?;
    // Announced like the page's save status, but not a second `[role=status]` (the page
    // has one status line, for the settings above).
    let note = element(document, "p", "judge-note")?;
    note.set_attribute("aria-live", "polite")?;
    if let Some(problem) = problem {
        note.set_text_content(Some(&js::message("optionJudgeReset", &[problem.to_owned()])));
    }
    let mode = element(document, "select", "")?;
    mode.set_id("judgeMode");
    for (value, label, current) in [
        ("off", "optionJudgeOff", JudgeMode::Off),
        ("manual_only", "optionJudgeManual", JudgeMode::ManualOnly),
        ("in_auto", "optionJudgeInAuto", JudgeMode::InAuto),
    ] {
        let option = element(document, "option", "")?;
        option.set_attribute("value", value)?;
        option.set_text_content(Some(&js::message(label, &[])));
        if settings.mode == current {
            option.set_attribute("selected", "")?;
        }
        mode.append_child(&option)?;
    }
    let max = element(document, "input", "")?;
    max.set_id("maxContinues");
    max.set_attribute("type", "number")?;
    max.set_attribute("min", "1")?;
    max.set_attribute("max", &MAX_MAX_CONTINUES.to_string())?;
    Reflect::set(&max, &JsValue::from_str("value"), &JsValue::from_str(&settings.max_continues.to_string()))?;
    for (label_key, control) in [("optionJudgeMode", &mode), ("optionMaxContinues", &max)] {
        let row = element(document, "label", "setting")?;
        let caption = element(document, "span", "caption")?;
        caption.set_text_content(Some(&js::message(label_key, &[])));
        row.append_child(&caption)?;
        row.append_child(control)?;
        fieldset.append_child(&row)?;
    }
    let limits = element(document, "p", "queue-limits")?;
    limits.set_id("queueLimits");
    let days = (ext_core::queue::MAX_AGE_MS / 86_400_000).to_string();
    limits.set_text_content(Some(&js::message(
        "optionQueueLimits",
        &[ext_core::queue::MAX_ITEMS.to_string(), ext_core::queue::MAX_MERGED_CHARS.to_string(), days],
    )));
    fieldset.append_child(&limits)?;
    fieldset.append_child(&note)?;
    let save = {
        let (mode, max, note) = (mode.clone(), max.clone(), note.clone());
        move |_| {
            let value = |el: &Element| Reflect::get(el, &JsValue::from_str("value")).ok().and_then(|v| v.as_string()).unwrap_or_default();
            let record = format!(r#"{{"mode":"{}","max_continues":{}}}"#, value(&mode), value(&max).trim());
            let (settings, problem) = JudgeSettings::parse(Some(&record));
            if problem.is_some() {
                note.set_text_content(Some(&js::message("optionNotANumber", &["1".to_owned(), MAX_MAX_CONTINUES.to_string()])));
                return;
            }
            let note = note.clone();
            wasm_bindgen_futures::spawn_local(async move {
                let text = match js::storage_local_set_text(SETTINGS_KEY, &settings.to_json()).await {
                    Ok(()) => js::message("optionSaved", &[]),
                    Err(error) => js::message("optionSaveFailed", &[error]),
                };
                note.set_text_content(Some(&text));
            });
        }
    };
    on(&mode, "change", save.clone())?;
    on(&max, "change", save)?;
    Ok(())
}
