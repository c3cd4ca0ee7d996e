//! `LinkDriver`: the JS handles around one [`Worker`], and nothing else.
//!
//! It owns the native port object, the page and panel port objects (by the [`PortId`] the
//! worker knows them under), one timer for [`Worker::next_deadline`] and the closures of
//! the native port's listeners. It follows the driver contract written on [`Worker`]: feed
//! → drain, carrying out each [`WorkerOutput`] as one JS call → re-arm the timer. Every
//! decision (which view to which port, what waits for a storage write, which command a port
//! may send) is the worker's; here JS values are only parsed into inputs (`wire`,
//! `continuity_wire`) and outputs serialized into JS calls.
//!
//! Ports are duck-typed JS objects with `postMessage`, `disconnect`,
//! `onMessage.addListener` and `onDisconnect.addListener` (Chrome's `runtime.Port`), so
//! tests can hand in plain objects. Invariants: events of a replaced native port are tagged
//! with its old generation and therefore ignored by the core; no `RefCell` borrow is held
//! while calling into JS.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use ext_core::companion_link::{PortGeneration, ProbeOutcome};
use ext_core::continuity::Continuity;
use ext_core::hud;
use ext_core::json_read::WriteJson;
use ext_core::limits::{MAX_HEALTH_SAMPLE_BYTES, MAX_PAGE_MESSAGE_BYTES, MAX_QUEUE_MESSAGE_BYTES, MAX_TURN_MESSAGE_BYTES};
use ext_core::worker::{PageInput, PortId, Worker, WorkerInput, WorkerOutput};
use gloo_timers::callback::Timeout;
use js_sys::{Function, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::continuity_wire;
use crate::js;
use crate::wire::{self, Inbound, PageMessage, WireError};

pub use ext_core::worker::STORAGE_KEY;
/// Where a stored state that could not be read is kept instead of being overwritten.
pub const UNREADABLE_STATE_KEY: &str = "continuity_unreadable";
/// The native messaging host name (docs/PROTOCOL.md).
pub const NATIVE_HOST_NAME: &str = "dev.herdr.continuity";

/// The JS handles around one [`Worker`].
pub struct LinkDriver {
    /// The machine.
    worker: Worker,
    /// `connectNative`-like function: `(name) -> Port`.
    connect_native: Function,
    /// The open native port object and its generation.
    native: Option<(PortGeneration, JsValue)>,
    /// Page and panel port objects by the worker's handle.
    ports: Vec<(PortId, JsValue)>,
    /// The next handle.
    next_port: PortId,
    /// Timer for the worker's next deadline (dropping it cancels it).
    timer: Option<Timeout>,
    /// Closures kept alive for the native port listeners they were registered on.
    listeners: Vec<Closure<dyn FnMut(JsValue)>>,
    /// Back reference for callbacks.
    me: Weak<RefCell<LinkDriver>>,
}

impl LinkDriver {
    /// A driver that opens native ports by calling `connect_native(NATIVE_HOST_NAME)`, with
    /// the continuity machine restored from the snapshot (B7) or a fresh one.
    pub fn new(connect_native: Function, extension_version: &str, continuity: Continuity) -> Rc<RefCell<LinkDriver>> {
        Rc::new_cyclic(|me| {
            RefCell::new(LinkDriver {
                worker: Worker::new(extension_version, continuity, parse_json),
                connect_native,
                native: None,
                ports: Vec::new(),
                next_port: 1,
                timer: None,
                listeners: Vec::new(),
                me: me.clone(),
            })
        })
    }

    /// The worker (read-only: tests, diagnostics, the options page's profile calls).
    pub fn worker(&self) -> &Worker {
        &self.worker
    }

    /// The URLs reported by connected pages (for diagnostics and tests).
    pub fn page_urls(&self) -> Vec<String> {
        self.worker.page_urls()
    }

    /// Feeds one input and carries out every resulting output, then re-arms the timer.
    pub fn feed(this: &Rc<RefCell<LinkDriver>>, input: WorkerInput) {
        this.borrow_mut().worker.handle(js::now_millis(), input);
        loop {
            let Some(output) = this.borrow_mut().worker.poll() else { break };
            Self::carry_out(this, output);
        }
        let deadline = this.borrow().worker.next_deadline();
        let timer = deadline.map(|deadline| {
            let delay = deadline.saturating_sub(js::now_millis());
            let weak = Rc::downgrade(this);
            Timeout::new(u32::try_from(delay).unwrap_or(u32::MAX), move || {
                if let Some(this) = weak.upgrade() {
                    LinkDriver::feed(&this, WorkerInput::Timer);
                }
            })
        });
        // Replacing the old Timeout drops (cancels) it.
        this.borrow_mut().timer = timer;
    }

    /// One output, one JS call.
    fn carry_out(this: &Rc<RefCell<LinkDriver>>, output: WorkerOutput) {
        let native = || this.borrow().native.as_ref().map(|(_, object)| object.clone());
        match output {
            WorkerOutput::Post { port, message } => {
                let object = this.borrow().ports.iter().find(|(id, _)| *id == port).map(|(_, object)| object.clone());
                if let Some(object) = object {
                    js::post(&object, &message);
                }
            }
            WorkerOutput::OpenNative { port } => Self::open_native(this, port),
            WorkerOutput::CloseNative { port } => {
                let taken = this.borrow_mut().native.take_if(|(generation, _)| *generation == port);
                if let Some((_, object)) = taken {
                    js::call_method(&object, "disconnect", &[]);
                }
            }
            WorkerOutput::SendLink { request } => native().iter().for_each(|object| js::post(object, &wire::request_json(&request))),
            WorkerOutput::Call { wire_id, call } => {
                native().iter().for_each(|object| js::post(object, &continuity_wire::call_json(&wire_id, &call)));
            }
            WorkerOutput::PostNative { message } => native().iter().for_each(|object| js::post(object, &message)),
            WorkerOutput::StorageRead { token, key } => js::storage_request(token, key, None),
            WorkerOutput::StorageWrite { token, key, value } => js::storage_request(token, key, Some(&js::stringify(&value))),
            WorkerOutput::OpenTab { token, url } => js::create_tab_request(token, &url),
            WorkerOutput::ReloadTab { tab } => js::reload_tab(tab),
            // The Activity timeline: worker.js's `activity-log.js` stamps and stores it.
            WorkerOutput::Activity(entry) => {
                js::call_method(&js_sys::global(), "herdrActivity", &[js::to_js(&entry.write_json())]);
            }
            WorkerOutput::RoundTrip { port, outcome, started_at } => {
                let elapsed = js::performance_now() - started_at;
                let rounded = (elapsed * 1000.0).round() / 1000.0;
                let answered = outcome == ProbeOutcome::Answered;
                let message = wire::round_trip_json(answered.then_some(rounded), &hud::round_trip_line(&outcome, elapsed));
                Self::carry_out(this, WorkerOutput::Post { port, message });
            }
            WorkerOutput::Warn(text) => js::warn(&text),
        }
    }

    /// A page or panel port connected (its sender was checked): give it a handle.
    pub fn page_connected(this: &Rc<RefCell<LinkDriver>>, port: JsValue) {
        let tab = js::sender_tab_id(&port);
        let panel = js::port_name(&port).as_deref() == Some("panel");
        // A panel's URL says which of our pages it is (the worker's companion-call allowlist).
        let url = js::port_sender(&port).url.unwrap_or_default();
        let id = {
            let mut driver = this.borrow_mut();
            let id = driver.next_port;
            driver.next_port = driver.next_port.wrapping_add(1);
            driver.ports.push((id, port));
            id
        };
        Self::feed(this, WorkerInput::PortConnected { port: id, tab, panel, url });
    }

    /// A page or panel port disconnected.
    pub fn page_disconnected(this: &Rc<RefCell<LinkDriver>>, port: &JsValue) {
        let id = this.borrow().port_id(port);
        if let Some(id) = id {
            this.borrow_mut().ports.retain(|(other, _)| *other != id);
            Self::feed(this, WorkerInput::PortClosed { port: id });
        }
    }

    /// The worker's handle of a port object.
    fn port_id(&self, port: &JsValue) -> Option<PortId> {
        self.ports.iter().find(|(_, object)| Object::is(object, port)).map(|(id, _)| *id)
    }

    /// A message from a page or panel port: size first, then shape (ext_core::limits: a
    /// page shapes these through its DOM), then the worker.
    pub fn page_message(this: &Rc<RefCell<LinkDriver>>, port: &JsValue, message: &JsValue) -> Result<(), WireError> {
        let text = js::json_text(message).ok_or_else(|| WireError::PageMessageRejected("not a JSON value".into()))?;
        // `queue_add`, `turn_ended` and the judge button carry page text and may be longer
        // than the other messages' cap.
        let too_long = |cap: usize| WireError::PageMessageRejected(format!("{} bytes of JSON (at most {cap})", text.len()));
        if text.len() > MAX_TURN_MESSAGE_BYTES {
            return Err(too_long(MAX_TURN_MESSAGE_BYTES));
        }
        let value = js::json_value(message).map_err(WireError::PageMessageRejected)?;
        let kind = value.get("type").and_then(serde_json::Value::as_str);
        let cap = match kind {
            Some("turn_ended") => MAX_TURN_MESSAGE_BYTES,
            Some("queue_add" | "action") => MAX_QUEUE_MESSAGE_BYTES,
            Some("health_sample") => MAX_HEALTH_SAMPLE_BYTES.min(MAX_PAGE_MESSAGE_BYTES),
            _ => MAX_PAGE_MESSAGE_BYTES,
        };
        if text.len() > cap {
            return Err(too_long(cap));
        }
        let id = this.borrow().port_id(port);
        let not_accepted = || WireError::PageMessageRejected("the port was not accepted".into());
        if kind == Some("page_diagnostics") {
            let seen = wire::page_diagnostics(&value)?.write_json();
            let port = id.ok_or_else(not_accepted)?;
            // The report without its `type`, for the companion, copied key by key:
            // `Map::remove` would bring BTreeMap's removal and rebalancing code into the
            // wasm for this one call (2 KB of its gzip). `page_diagnostics` read an object.
            let mut copy = serde_json::Map::new();
            for (key, field) in value.as_object().into_iter().flatten() {
                if key != "type" {
                    copy.insert(key.clone(), field.clone());
                }
            }
            let report = serde_json::Value::Object(copy);
            Self::feed(this, WorkerInput::Page { port, message: PageInput::Diagnostics { seen, report } });
            return Ok(());
        }
        wire::check_page_message(&value)?;
        let port = id.ok_or_else(not_accepted)?;
        let (message, refused) = match wire::page_message(&value) {
            Ok(PageMessage::PageFacts { url }) => {
                // An account id the pacer cannot key on refuses the facts, naming why.
                let account = continuity_wire::page_account(&value).map_err(WireError::PageMessageRejected);
                let report = account.as_ref().ok().and_then(|_| continuity_wire::page_report(&value));
                (PageInput::Facts { url, report }, account.err())
            }
            Ok(PageMessage::Action(hud::ActionId::RetryCompanion)) => (PageInput::RetryCompanion, None),
            Ok(PageMessage::Action(hud::ActionId::RoundTripTest)) => (PageInput::RoundTrip { at: js::performance_now() }, None),
            Err(_) => (PageInput::Command(Self::port_command(&value)?), None),
        };
        Self::feed(this, WorkerInput::Page { port, message });
        refused.map_or(Ok(()), Err)
    }

    /// A continuity command; the pacer's fields are checked with a reason to name (issue 26).
    fn port_command(value: &serde_json::Value) -> Result<continuity_wire::PortCommand, WireError> {
        match value.get("type").and_then(serde_json::Value::as_str) {
            Some("rate_limited") => {
                continuity_wire::rate_limited(value).map_err(WireError::PageMessageRejected)?;
            }
            Some("snapshot_result") => {
                continuity_wire::retry_after_ms(value).map_err(|why| WireError::PageMessageRejected(format!("snapshot_result.{why}")))?;
            }
            _ => {}
        }
        continuity_wire::port_command(value).ok_or_else(|| WireError::UnknownPageMessage(js::stringify(value)))
    }

    /// The answer of `worker.js` to the storage or tab request `token`: the items read, the
    /// write's `undefined`, the new tab's id, or the error.
    pub fn js_answered(this: &Rc<RefCell<LinkDriver>>, token: u32, outcome: Result<JsValue, String>) {
        let outcome = outcome.and_then(|value| match value.is_undefined() {
            true => Ok(serde_json::Value::Null),
            false => js::json_value(&value),
        });
        Self::feed(this, WorkerInput::Stored { token, outcome });
    }

    fn open_native(this: &Rc<RefCell<LinkDriver>>, port: PortGeneration) {
        let connect = this.borrow().connect_native.clone();
        let object = match connect.call1(&JsValue::UNDEFINED, &JsValue::from_str(NATIVE_HOST_NAME)) {
            Ok(object) if object.is_object() => object,
            Ok(_) => return Self::feed(this, WorkerInput::NativeClosed { port, error: Some("connectNative returned no port".into()) }),
            Err(error) => return Self::feed(this, WorkerInput::NativeClosed { port, error: Some(js::error_text(&error)) }),
        };
        let weak = this.borrow().me.clone();
        let on_message = Closure::<dyn FnMut(JsValue)>::new({
            let weak = weak.clone();
            move |message: JsValue| {
                let Some(this) = weak.upgrade() else { return };
                // Parsed once, read once into what it is for (wire::inbound).
                let value = match js::json_value(&message) {
                    Ok(value) => value,
                    Err(error) => return js::warn(&WireError::UnknownShape(error).to_string()),
                };
                let read = wire::inbound(&value);
                // A watching side panel is also sent the stream's events (the worker picks which).
                let watched = if this.borrow().worker.watches_stream() { wire::stream_event(&value, &read) } else { None };
                let input =
                    match read {
                        Ok(Inbound::Link(message)) => Some(WorkerInput::LinkMessage { port, message }),
                        // Read against the call it answers; an answer no call waits for is dropped.
                        Ok(Inbound::CallAnswer { id, outcome }) => this.borrow().worker.call_on_wire(id).map(|call| {
                            WorkerInput::CallAnswered { wire_id: id.to_owned(), result: continuity_wire::answer(call, outcome) }
                        }),
                        Ok(Inbound::PageCallAnswer { id, outcome }) => {
                            Some(WorkerInput::PageCallAnswered { wire_id: id.to_owned(), result: outcome.cloned() })
                        }
                        Ok(Inbound::Continuity(input)) => Some(WorkerInput::Continuity(input)),
                        Ok(Inbound::Unused) => None,
                        Err(error) => {
                            js::warn(&error.to_string());
                            None
                        }
                    };
                if let Some(input) = input {
                    LinkDriver::feed(&this, input);
                }
                if let Some((name, data)) = watched {
                    LinkDriver::feed(&this, WorkerInput::StreamEvent { name, data });
                }
            }
        });
        let on_disconnect = Closure::<dyn FnMut(JsValue)>::new(move |_port: JsValue| {
            let Some(this) = weak.upgrade() else { return };
            let error = js::last_error_message();
            let _ = this.borrow_mut().native.take_if(|(generation, _)| *generation == port);
            LinkDriver::feed(&this, WorkerInput::NativeClosed { port, error });
        });
        js::add_listener(&object, "onMessage", on_message.as_ref().unchecked_ref());
        js::add_listener(&object, "onDisconnect", on_disconnect.as_ref().unchecked_ref());
        {
            let mut driver = this.borrow_mut();
            driver.listeners.push(on_message);
            driver.listeners.push(on_disconnect);
            // Keep only the closures of the last few ports; older ports are disconnected
            // and their events are ignored by generation anyway.
            let excess = driver.listeners.len().saturating_sub(8);
            driver.listeners.drain(..excess);
            driver.native = Some((port, object));
        }
        Self::feed(this, WorkerInput::NativeOpened { port });
    }
}

/// Whether a JS value is a port-like object (used by the exported entry points).
pub fn is_port(value: &JsValue) -> bool {
    value.is_object() && Reflect::has(value, &JsValue::from_str("postMessage")).unwrap_or(false)
}

/// A profile file's JSON through the browser's `JSON.parse` (its error text kept: it is
/// shown to the user), so the wasm carries no JSON text parser.
pub fn parse_json(text: &str) -> Result<serde_json::Value, String> {
    let value = js_sys::JSON::parse(text).map_err(|error| js::error_text(&error))?;
    js::json_value(&value)
}
