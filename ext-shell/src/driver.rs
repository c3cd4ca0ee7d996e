//! `LinkDriver`: carries out `CompanionLink`'s decisions with real (or fake) JS objects.
//!
//! It owns the native port object, one timer for the link's next deadline, and the page
//! and panel ports that display the HUD. It follows the driver contract written on
//! [`CompanionLink`]: feed → drain → re-arm the timer. It makes no product decisions:
//! every `if` here is about JS plumbing (which port object, which page asked).
//!
//! Ports are duck-typed JS objects with `postMessage`, `disconnect`,
//! `onMessage.addListener` and `onDisconnect.addListener` (Chrome's `runtime.Port`), so
//! tests can hand in plain objects. Invariants: events of a replaced port object are
//! tagged with its old generation and therefore ignored by the core; no `RefCell` borrow
//! is held while calling into JS.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::{Rc, Weak};

use ext_core::companion_link::{CompanionLink, Input, Output, PortGeneration, ProbeId};
use ext_core::hud::{self, ActionId};
use gloo_timers::callback::Timeout;
use js_sys::{Function, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::js;
use crate::wire::{self, PageMessage, WireError};

/// A page or panel port showing the HUD.
struct PagePort {
    /// The `runtime.Port` object.
    port: JsValue,
    /// The page's URL, once reported.
    url: Option<String>,
}

/// A round-trip probe in flight.
struct ProbeInFlight {
    /// The port object of the page that asked.
    page: JsValue,
    /// `performance.now()` when the page's request arrived.
    started_at: f64,
}

/// Shell state around one [`CompanionLink`].
pub struct LinkDriver {
    /// The machine.
    link: CompanionLink,
    /// `connectNative`-like function: `(name) -> Port`.
    connect_native: Function,
    /// The open native port and its generation.
    native: Option<(PortGeneration, JsValue)>,
    /// Pages and panels.
    pages: Vec<PagePort>,
    /// Probes by id.
    probes: BTreeMap<ProbeId, ProbeInFlight>,
    /// Next probe id.
    next_probe: ProbeId,
    /// Timer for the link's next deadline (dropping it cancels it).
    timer: Option<Timeout>,
    /// Closures kept alive for the port listeners they were registered on.
    listeners: Vec<Closure<dyn FnMut(JsValue)>>,
    /// Back reference for callbacks.
    me: Weak<RefCell<LinkDriver>>,
}

/// The native messaging host name (docs/PROTOCOL.md).
pub const NATIVE_HOST_NAME: &str = "dev.herdr.continuity";

impl LinkDriver {
    /// A driver that opens native ports by calling `connect_native(NATIVE_HOST_NAME)`.
    pub fn new(connect_native: Function, extension_version: &str) -> Rc<RefCell<LinkDriver>> {
        Rc::new_cyclic(|me| {
            RefCell::new(LinkDriver {
                link: CompanionLink::new(extension_version),
                connect_native,
                native: None,
                pages: Vec::new(),
                probes: BTreeMap::new(),
                next_probe: 1,
                timer: None,
                listeners: Vec::new(),
                me: me.clone(),
            })
        })
    }

    /// The current HUD view model.
    pub fn hud(&self) -> hud::HudView {
        self.link.hud()
    }

    /// The URLs reported by connected pages (for diagnostics and tests).
    pub fn page_urls(&self) -> Vec<String> {
        self.pages
            .iter()
            .filter_map(|page| page.url.clone())
            .collect()
    }

    /// Feeds one input and carries out every resulting output.
    pub fn feed(this: &Rc<RefCell<LinkDriver>>, input: Input) {
        this.borrow_mut().link.handle(js::now_millis(), input);
        Self::pump(this);
    }

    /// A page or panel port connected: remember it and show it the HUD.
    pub fn page_connected(this: &Rc<RefCell<LinkDriver>>, port: JsValue) {
        let view = wire::hud_json(&this.borrow().hud());
        this.borrow_mut().pages.push(PagePort {
            port: port.clone(),
            url: None,
        });
        js::post(&port, &view);
    }

    /// A page or panel port disconnected.
    pub fn page_disconnected(this: &Rc<RefCell<LinkDriver>>, port: &JsValue) {
        let mut driver = this.borrow_mut();
        driver.pages.retain(|page| !Object::is(&page.port, port));
        driver
            .probes
            .retain(|_, probe| !Object::is(&probe.page, port));
    }

    /// A message from a page or panel port.
    pub fn page_message(
        this: &Rc<RefCell<LinkDriver>>,
        port: &JsValue,
        message: &JsValue,
    ) -> Result<(), WireError> {
        let value: serde_json::Value = serde_wasm_bindgen::from_value(message.clone())
            .map_err(|e| WireError::UnknownPageMessage(e.to_string()))?;
        match wire::page_message(&value)? {
            PageMessage::PageFacts { url } => {
                let mut driver = this.borrow_mut();
                if let Some(page) = driver.pages.iter_mut().find(|p| Object::is(&p.port, port)) {
                    page.url = Some(url);
                }
            }
            PageMessage::Action(ActionId::RetryCompanion) => Self::feed(this, Input::RetryNow),
            PageMessage::Action(ActionId::RoundTripTest) => {
                let probe = {
                    let mut driver = this.borrow_mut();
                    let probe = driver.next_probe;
                    driver.next_probe = driver.next_probe.wrapping_add(1);
                    driver.probes.insert(
                        probe,
                        ProbeInFlight {
                            page: port.clone(),
                            started_at: js::performance_now(),
                        },
                    );
                    probe
                };
                Self::feed(this, Input::ProbeRequested { probe });
            }
        }
        Ok(())
    }

    /// Drains the link's outputs, carrying each out, then re-arms the timer.
    fn pump(this: &Rc<RefCell<LinkDriver>>) {
        loop {
            let Some(output) = this.borrow_mut().link.poll() else {
                break;
            };
            match output {
                Output::OpenPort { port } => Self::open_native(this, port),
                Output::ClosePort { port } => {
                    let taken = {
                        let mut driver = this.borrow_mut();
                        match &driver.native {
                            Some((generation, _)) if *generation == port => driver.native.take(),
                            _ => None,
                        }
                    };
                    if let Some((_, object)) = taken {
                        js::call_method(&object, "disconnect", &[]);
                    }
                }
                Output::Send { port, request } => {
                    let object = match &this.borrow().native {
                        Some((generation, object)) if *generation == port => Some(object.clone()),
                        _ => None,
                    };
                    if let Some(object) = object {
                        js::post(&object, &wire::request_json(&request));
                    }
                }
                Output::HudChanged => {
                    let (view, pages) = {
                        let driver = this.borrow();
                        let pages: Vec<JsValue> =
                            driver.pages.iter().map(|page| page.port.clone()).collect();
                        (wire::hud_json(&driver.hud()), pages)
                    };
                    for page in pages {
                        js::post(&page, &view);
                    }
                }
                Output::ProbeFinished { probe, outcome } => {
                    let Some(in_flight) = this.borrow_mut().probes.remove(&probe) else {
                        continue;
                    };
                    let elapsed = js::performance_now() - in_flight.started_at;
                    let rounded = (elapsed * 1000.0).round() / 1000.0;
                    let answered = outcome == ext_core::companion_link::ProbeOutcome::Answered;
                    let status = hud::round_trip_line(&outcome, &format!("{rounded:.2}"));
                    js::post(
                        &in_flight.page,
                        &wire::round_trip_json(answered.then_some(rounded), &status),
                    );
                }
            }
        }
        Self::arm_timer(this);
    }

    fn open_native(this: &Rc<RefCell<LinkDriver>>, port: PortGeneration) {
        let connect = this.borrow().connect_native.clone();
        let opened = connect.call1(&JsValue::UNDEFINED, &JsValue::from_str(NATIVE_HOST_NAME));
        let object = match opened {
            Ok(object) if object.is_object() => object,
            Ok(_) | Err(_) => {
                let error = opened.err().map(|e| js::error_text(&e));
                this.borrow_mut().link.handle(
                    js::now_millis(),
                    Input::PortClosed {
                        port,
                        error: Some(
                            error.unwrap_or_else(|| "connectNative returned no port".into()),
                        ),
                    },
                );
                return;
            }
        };
        let weak = this.borrow().me.clone();
        let on_message = Closure::<dyn FnMut(JsValue)>::new({
            let weak = weak.clone();
            move |message: JsValue| {
                let Some(this) = weak.upgrade() else { return };
                let parsed = serde_wasm_bindgen::from_value::<serde_json::Value>(message)
                    .map_err(|e| WireError::UnknownShape(e.to_string()))
                    .and_then(|value| wire::runtime_message(&value));
                match parsed {
                    Ok(message) => LinkDriver::feed(&this, Input::Message { port, message }),
                    Err(WireError::NotForLink(_)) => {}
                    Err(error) => js::warn(&error.to_string()),
                }
            }
        });
        let on_disconnect = Closure::<dyn FnMut(JsValue)>::new(move |_port: JsValue| {
            let Some(this) = weak.upgrade() else { return };
            let error = js::last_error_message();
            {
                let mut driver = this.borrow_mut();
                if matches!(&driver.native, Some((generation, _)) if *generation == port) {
                    driver.native = None;
                }
            }
            LinkDriver::feed(&this, Input::PortClosed { port, error });
        });
        js::add_listener(&object, "onMessage", on_message.as_ref().unchecked_ref());
        js::add_listener(
            &object,
            "onDisconnect",
            on_disconnect.as_ref().unchecked_ref(),
        );
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
        this.borrow_mut()
            .link
            .handle(js::now_millis(), Input::PortOpened { port });
    }

    fn arm_timer(this: &Rc<RefCell<LinkDriver>>) {
        let deadline = this.borrow().link.next_deadline();
        let timer = deadline.map(|deadline| {
            let delay = deadline.saturating_sub(js::now_millis());
            let weak = Rc::downgrade(this);
            Timeout::new(u32::try_from(delay).unwrap_or(u32::MAX), move || {
                if let Some(this) = weak.upgrade() {
                    LinkDriver::feed(&this, Input::Timer);
                }
            })
        });
        // Replacing the old Timeout drops (cancels) it.
        this.borrow_mut().timer = timer;
    }
}

/// Whether a JS value is a port-like object (used by the exported entry points).
pub fn is_port(value: &JsValue) -> bool {
    value.is_object() && Reflect::has(value, &JsValue::from_str("postMessage")).unwrap_or(false)
}
