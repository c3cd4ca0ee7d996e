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

use continuity_protocol::ErrorCode;
use std::cell::RefCell;
use std::rc::{Rc, Weak};

use ext_core::binding::TabId;
use ext_core::companion_link::{CompanionLink, Input, LinkState, Output, PortGeneration, ProbeId};
use ext_core::continuity::{CallError, CallId, Continuity, ContinuityInput, ContinuityOutput, RecoveryCommand, RuntimeCall};
use ext_core::hud::{self, ActionId};
use ext_core::json_object;
use ext_core::json_read::WriteJson;
use ext_core::limits::{MAX_HEALTH_SAMPLE_BYTES, MAX_PAGE_MESSAGE_BYTES, MAX_QUEUE_MESSAGE_BYTES, MAX_TURN_MESSAGE_BYTES};
use ext_core::sites::overrides::ProfileOverrides;
use ext_core::vec_map::VecMap;
use gloo_timers::callback::Timeout;
use js_sys::{Function, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::continuity_wire::{self, PortCommand};
use crate::js;
use crate::wire::{self, Inbound, PageMessage, WireError};

/// How long persisted-state writes are coalesced (one write per burst, B7).
pub const PERSIST_DEBOUNCE_MS: u32 = 200;
/// The `chrome.storage.local` key of the continuity snapshot.
pub const STORAGE_KEY: &str = "continuity";
/// Where a stored state that could not be read is kept instead of being overwritten.
pub const UNREADABLE_STATE_KEY: &str = "continuity_unreadable";

/// A page or panel port showing the HUD.
struct PagePort {
    /// The `runtime.Port` object.
    port: JsValue,
    /// The page's URL, once reported.
    url: Option<String>,
    /// The tab of a content-script port (`port.sender.tab.id`); `None` for panels.
    tab: Option<TabId>,
    /// Whether this is a side-panel port.
    panel: bool,
    /// The tab a panel asked to show (`None` = the last active chat tab).
    panel_tab: Option<TabId>,
    /// The last JSON posted as view, to post only changes.
    last_view: Option<Vec<serde_json::Value>>,
    /// The page's last `page_diagnostics` (content-script ports only).
    diagnostics: Option<wire::PageDiagnostics>,
    /// The site of a content-script port's origin (its profile is posted to it).
    site: Option<&'static str>,
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
    probes: VecMap<ProbeId, ProbeInFlight>,
    /// Next probe id.
    next_probe: ProbeId,
    /// Timer for the link's next deadline (dropping it cancels it).
    timer: Option<Timeout>,
    /// Closures kept alive for the port listeners they were registered on.
    listeners: Vec<Closure<dyn FnMut(JsValue)>>,
    /// Back reference for callbacks.
    me: Weak<RefCell<LinkDriver>>,
    /// The continuity machine (bindings, settle tracking, wakes).
    continuity: Continuity,
    /// Whether the link was connected after the last pump (edges feed LinkUp/LinkDown).
    link_connected: bool,
    /// Continuity calls on the wire, by wire id.
    calls: VecMap<String, (CallId, RuntimeCall)>,
    /// Next wire id number.
    next_wire: u64,
    /// Timer for the continuity machine's next deadline.
    continuity_timer: Option<Timeout>,
    /// Pending coalesced write of the snapshot.
    persist_timer: Option<Timeout>,
    /// The chat tab that reported or connected last (the panel's default tab).
    last_active_tab: Option<TabId>,
    /// `chrome.storage.local` requests waiting for their answer, by token
    /// ([`js::storage_request`]).
    storage: VecMap<u32, StorageWait>,
    /// The last storage token given (0 is never one: it asks for no answer).
    storage_token: u32,
    /// The site profiles' overrides: which profile is in force per site.
    profiles: ProfileOverrides,
}

/// What a `chrome.storage.local` request's answer is for.
enum StorageWait {
    /// The queue's record, read for the change `op`.
    QueueRead(u64),
    /// The queue's record, written for the change `op`.
    QueueWrite(u64),
    /// The snapshot, written before `message` goes to the page of `tab` (`None`: the tab
    /// is reloaded) — see [`LinkDriver::post_when_persisted`].
    Persisted(TabId, Option<serde_json::Value>),
    /// The snapshot, written before a handoff's new tab is asked for (`transfer_id`, `url`).
    OpenTab(String, String),
    /// The new tab of the handoff `transfer_id`: `chrome.tabs.create`'s answer.
    TabCreated(String),
}

/// The native messaging host name (docs/PROTOCOL.md).
pub const NATIVE_HOST_NAME: &str = "dev.herdr.continuity";

impl LinkDriver {
    /// A driver that opens native ports by calling `connect_native(NATIVE_HOST_NAME)`, with
    /// the continuity machine restored from the snapshot (B7) or a fresh one.
    pub fn new(connect_native: Function, extension_version: &str, continuity: Continuity) -> Rc<RefCell<LinkDriver>> {
        Rc::new_cyclic(|me| {
            RefCell::new(LinkDriver {
                link: CompanionLink::new(extension_version),
                connect_native,
                native: None,
                pages: Vec::new(),
                probes: VecMap::new(),
                next_probe: 1,
                timer: None,
                listeners: Vec::new(),
                me: me.clone(),
                continuity,
                link_connected: false,
                calls: VecMap::new(),
                next_wire: 0,
                continuity_timer: None,
                persist_timer: None,
                storage: VecMap::new(),
                storage_token: 0,
                last_active_tab: None,
                profiles: ProfileOverrides::default(),
            })
        })
    }

    /// The continuity machine (read-only, for tests and diagnostics).
    pub fn continuity(&self) -> &Continuity {
        &self.continuity
    }

    /// Feeds the continuity machine and carries out its outputs.
    pub fn feed_continuity(this: &Rc<RefCell<LinkDriver>>, input: ContinuityInput) {
        this.borrow_mut().continuity.handle(js::continuity_now(), input);
        Self::pump_continuity(this);
    }

    /// The current HUD view model.
    pub fn hud(&self) -> hud::HudView {
        self.link.hud()
    }

    /// The URLs reported by connected pages (for diagnostics and tests).
    pub fn page_urls(&self) -> Vec<String> {
        self.pages.iter().filter_map(|page| page.url.clone()).collect()
    }

    /// Feeds one input and carries out every resulting output.
    pub fn feed(this: &Rc<RefCell<LinkDriver>>, input: Input) {
        this.borrow_mut().link.handle(js::now_millis(), input);
        Self::pump(this);
    }

    /// A page or panel port connected: remember it, send a page its site profile (before
    /// anything else, docs/PROTOCOL.md "One delivery path") and show it the HUD.
    pub fn page_connected(this: &Rc<RefCell<LinkDriver>>, port: JsValue) {
        let tab = js::sender_tab_id(&port);
        let panel = js::port_name(&port).as_deref() == Some("panel");
        let mut site = None;
        if !panel {
            let url = js::port_sender(&port).url.unwrap_or_default();
            site = ext_core::sites::profile_for(&url).map(|profile| profile.site);
            let in_force = site.map(|site| this.borrow().profiles.in_force(site));
            js::post(&port, &wire::profile_json(in_force.as_ref()));
        }
        let view = wire::hud_json(&this.borrow().hud());
        this.borrow_mut().pages.push(PagePort {
            port: port.clone(),
            url: None,
            tab,
            panel,
            panel_tab: None,
            last_view: None,
            diagnostics: None,
            site,
        });
        js::post(&port, &view);
        Self::broadcast_views(this);
    }

    /// The profile overrides (read-only: the options page's `profile_get`, `import`, `reset`).
    pub fn profiles(&self) -> &ProfileOverrides {
        &self.profiles
    }

    /// The options page's stored overrides (`chrome.storage.local`
    /// `herdrContinuityProfileOverridesV1`, `None` when nothing is stored), at start and on
    /// every change: each page of a site whose profile in force changed gets it again.
    pub fn profile_overrides_stored(this: &Rc<RefCell<LinkDriver>>, record: Option<&serde_json::Value>) {
        let changed = this.borrow_mut().profiles.set_options(record, &parse_json);
        Self::post_profiles(this, &changed);
    }

    /// Posts the profile in force to every content-script port of `sites`.
    fn post_profiles(this: &Rc<RefCell<LinkDriver>>, sites: &[&'static str]) {
        let posts: Vec<(JsValue, serde_json::Value)> = {
            let driver = this.borrow();
            driver
                .pages
                .iter()
                .filter_map(|page| {
                    let site = page.site.filter(|site| !page.panel && sites.contains(site))?;
                    Some((page.port.clone(), wire::profile_json(Some(&driver.profiles.in_force(site)))))
                })
                .collect()
        };
        for (port, message) in posts {
            js::post(&port, &message);
        }
    }

    /// A page or panel port disconnected.
    pub fn page_disconnected(this: &Rc<RefCell<LinkDriver>>, port: &JsValue) {
        let gone_tab = {
            let mut driver = this.borrow_mut();
            let tab = driver.pages.iter().find(|page| Object::is(&page.port, port)).and_then(|page| page.tab);
            driver.pages.retain(|page| !Object::is(&page.port, port));
            driver.probes.retain(|_, probe| !Object::is(&probe.page, port));
            tab.filter(|tab| !driver.pages.iter().any(|page| page.tab == Some(*tab)))
        };
        if let Some(tab) = gone_tab {
            Self::feed_continuity(this, ContinuityInput::PageGone { tab });
        }
    }

    /// `chrome.tabs.onRemoved`.
    pub fn tab_closed(this: &Rc<RefCell<LinkDriver>>, tab: TabId) {
        Self::feed_continuity(this, ContinuityInput::TabClosed { tab });
    }

    /// `chrome.tabs.onActivated`: the panel's default tab follows the active chat tab.
    pub fn tab_activated(this: &Rc<RefCell<LinkDriver>>, tab: TabId) {
        let known = this.borrow().pages.iter().any(|page| page.tab == Some(tab));
        if known {
            this.borrow_mut().last_active_tab = Some(tab);
            Self::broadcast_views(this);
        }
    }

    /// A message that is not one of the link's: continuity facts and commands.
    fn continuity_message(this: &Rc<RefCell<LinkDriver>>, port: &JsValue, value: &serde_json::Value) -> Result<(), WireError> {
        let (tab, panel) = {
            let driver = this.borrow();
            let page = driver.pages.iter().find(|p| Object::is(&p.port, port));
            (page.and_then(|p| p.tab), page.is_some_and(|p| p.panel))
        };
        // The pacer's fields are checked with a reason to name (issue 26).
        match value.get("type").and_then(serde_json::Value::as_str) {
            Some("rate_limited") => {
                continuity_wire::rate_limited(value).map_err(WireError::PageMessageRejected)?;
            }
            Some("snapshot_result") => {
                continuity_wire::retry_after_ms(value).map_err(|why| WireError::PageMessageRejected(format!("snapshot_result.{why}")))?;
            }
            _ => {}
        }
        let command = continuity_wire::port_command(value).ok_or_else(|| WireError::UnknownPageMessage(js::stringify(value)))?;
        let input = match (command, tab) {
            (PortCommand::DeliveryReport { id, outcome }, Some(tab)) => ContinuityInput::DeliveryReport { tab, id, outcome },
            (PortCommand::HudAction(action), Some(tab)) => match action {
                "toggle_auto" => ContinuityInput::ToggleAuto { tab },
                "continue" => ContinuityInput::Continue { tab },
                "handoff" => ContinuityInput::Handoff { tab },
                "handoff_resume" => ContinuityInput::HandoffResume { tab },
                "bridge_prompt" => ContinuityInput::BridgePrompt { tab },
                "forget_app" => ContinuityInput::ForgetApp { tab },
                "journal_opt_in" => ContinuityInput::JournalOpt(ext_core::continuity::JournalOpt { tab, on: true }),
                "journal_opt_out" => ContinuityInput::JournalOpt(ext_core::continuity::JournalOpt { tab, on: false }),
                _ => ContinuityInput::CheckHerdr { tab },
            },
            (PortCommand::LlmJudge { user_text, assistant_text }, Some(tab)) => {
                ContinuityInput::LlmJudge { tab, user_text, assistant_text }
            }
            (PortCommand::GoalSet { text }, Some(tab)) => ContinuityInput::GoalSet { tab, text },
            (
                PortCommand::TurnEnded { user_text, assistant_text, user_marker, message_id, user_message_id, pressed, user_stopped },
                Some(tab),
            ) => ContinuityInput::TurnEnded {
                tab,
                user_text,
                assistant_text,
                user_marker,
                message_id,
                user_message_id,
                pressed,
                user_stopped,
            },
            // The HUD's approval card is a page's, never the panel's.
            (PortCommand::BridgeDecide { batch_id, call, decision }, Some(tab)) if !panel => {
                ContinuityInput::BridgeDecide { tab, batch_id, call, decision }
            }
            (PortCommand::QueueAdd { text }, Some(tab)) => ContinuityInput::QueueAdd { tab, text },
            (PortCommand::QueueClear, Some(tab)) => ContinuityInput::QueueClear { tab },
            (PortCommand::RecoveryFacts(facts), Some(tab)) if !panel => ContinuityInput::RecoveryFacts { tab, facts },
            (PortCommand::HealthSample { page_load, sample }, Some(tab)) if !panel => {
                ContinuityInput::HealthSample { tab, page_load, sample }
            }
            // The user's own Stop is a page's, never the panel's.
            (PortCommand::UserStop { page_load }, Some(tab)) if !panel => ContinuityInput::UserStop { tab, page_load },
            (PortCommand::ThreadFacts(thread), Some(tab)) if !panel => ContinuityInput::ThreadFacts { tab, thread },
            (PortCommand::SnapshotResult { page_load, answer, retry_after_ms }, Some(tab)) if !panel => {
                // A 429 with `Retry-After`: the account's cooldown first, then the answer.
                let is_429 = matches!(&answer, ext_core::continuity::ProbeAnswer::Failed(why) if why == "http_429");
                if let (true, Some(ms)) = (is_429, retry_after_ms) {
                    let source = ext_core::request_pacer::CooldownSource::RetryAfter;
                    Self::feed_continuity(
                        this,
                        ContinuityInput::RateLimited { tab, page_load: page_load.clone(), source, retry_after_ms: Some(ms) },
                    );
                }
                ContinuityInput::SnapshotResult { tab, page_load, answer }
            }
            (PortCommand::RateLimited { page_load, source, retry_after_ms }, Some(tab)) if !panel => {
                ContinuityInput::RateLimited { tab, page_load, source, retry_after_ms }
            }
            (PortCommand::CardResult { key, clicked }, Some(tab)) if !panel => ContinuityInput::CardResult { tab, key, clicked },
            (PortCommand::PermissionCards(cards), Some(tab)) if !panel => ContinuityInput::PermissionCards { tab, cards },
            (PortCommand::PanelHello { tab_id }, _) if panel => {
                {
                    let mut driver = this.borrow_mut();
                    if let Some(page) = driver.pages.iter_mut().find(|p| Object::is(&p.port, port)) {
                        page.panel_tab = tab_id;
                        page.last_view = None;
                    }
                }
                ContinuityInput::RefreshCatalog
            }
            // Binding is the panel's (O1): a content script never sends these.
            (PortCommand::PanelRefresh, _) if panel => ContinuityInput::RefreshCatalog,
            (PortCommand::Bind { tab_id, workspace }, _) if panel => ContinuityInput::Bind { tab: tab_id, workspace },
            (PortCommand::Unbind { scope_key }, _) if panel => ContinuityInput::Unbind { scope_key },
            _ => return Err(WireError::UnknownPageMessage(js::stringify(value))),
        };
        Self::feed_continuity(this, input);
        Ok(())
    }

    /// Posts each page its HUD (link view + continuity view) and each panel its panel
    /// view, only when they changed.
    fn broadcast_views(this: &Rc<RefCell<LinkDriver>>) {
        let posts: Vec<(JsValue, Vec<serde_json::Value>)> = {
            let mut driver = this.borrow_mut();
            let link_view = driver.link.hud();
            let hud = wire::hud_json(&link_view);
            let default_tab = driver.last_active_tab;
            let views: Vec<(bool, Vec<serde_json::Value>)> = driver
                .pages
                .iter()
                .map(|page| {
                    let mut messages = Vec::new();
                    let mut page_hud = hud.clone();
                    if let Some(view) = page_hud.get_mut("view").and_then(serde_json::Value::as_object_mut) {
                        // The continuity view on a tab's page, and the pill of both (ext-core hud_pill).
                        let continuity = page.tab.and_then(|tab| driver.continuity.page_view(tab));
                        view.insert("pill".to_owned(), ext_core::hud_pill::pill(&link_view, continuity.as_ref()).write_json());
                        if page.tab.is_some() {
                            view.insert("continuity".to_owned(), continuity.write_json());
                        }
                    }
                    messages.push(page_hud);
                    if page.panel {
                        let tab = page.panel_tab.or(default_tab);
                        messages.push(json_object!(
                            "type": "panel",
                            "view": driver.continuity.panel_view(tab).write_json(),
                        ));
                        // The newest report of the tab's page ("What the extension sees").
                        let seen = tab.and_then(|tab| driver.pages.iter().rev().find(|p| p.tab == Some(tab) && p.diagnostics.is_some()));
                        messages.push(wire::panel_diagnostics_json(tab, seen.and_then(|p| p.diagnostics.as_ref())));
                    }
                    (page.last_view.as_ref() != Some(&messages), messages)
                })
                .collect();
            let mut posts = Vec::new();
            for (page, (changed, messages)) in driver.pages.iter_mut().zip(views) {
                if changed {
                    page.last_view = Some(messages.clone());
                    posts.push((page.port.clone(), messages));
                }
            }
            posts
        };
        for (port, messages) in posts {
            for message in messages {
                js::post(&port, &message);
            }
        }
    }

    /// The test seam (ARCHITECTURE.md "Test seams"): the continuity clock moves `ms` ahead
    /// and its timer is armed again from the new time, so a deadline that fell due runs on
    /// the next turn through the timer's own path. Returns the clock's total offset.
    pub fn advance_continuity_clock(this: &Rc<RefCell<LinkDriver>>, ms: ext_core::Millis) -> ext_core::Millis {
        let ahead = js::advance_continuity_clock(ms);
        Self::pump_continuity(this);
        ahead
    }

    /// Drains the continuity machine's outputs, then re-arms its timer.
    fn pump_continuity(this: &Rc<RefCell<LinkDriver>>) {
        let mut offline_answers = Vec::new();
        loop {
            let Some(output) = this.borrow_mut().continuity.poll() else {
                break;
            };
            match output {
                ContinuityOutput::Request { id, call } => {
                    let (native, wire_id) = {
                        let mut driver = this.borrow_mut();
                        driver.next_wire = driver.next_wire.wrapping_add(1);
                        let wire_id = format!("{}{}", continuity_wire::CALL_ID_PREFIX, driver.next_wire);
                        let native = driver.native.as_ref().map(|(_, object)| object.clone());
                        if native.is_some() {
                            driver.calls.insert(wire_id.clone(), (id, call.clone()));
                        }
                        (native, wire_id)
                    };
                    match native {
                        Some(object) => js::post(&object, &continuity_wire::call_json(&wire_id, &call)),
                        None => offline_answers.push(id),
                    }
                }
                // Durable first, every kind of delivery: it leaves once the snapshot naming it
                // is written, never within the persist debounce (a worker that dies then would
                // offer it again under a new id).
                // It names the page it was decided for (its URL and page load, as last
                // reported): a page that shows another conversation by then types nothing.
                // `app` (`null` for a plain message): the page attaches it before the text and
                // sends nothing it could not attach it to.
                ContinuityOutput::Deliver { tab, id, text, app } => {
                    let (url, page_load) =
                        this.borrow().continuity.page(tab).map(|p| (p.url.clone(), p.page_load.clone())).unwrap_or_default();
                    let message = json_object!("type": "deliver", "id": id, "text": text, "url": url, "page_load": page_load, "app": app);
                    Self::post_when_persisted(this, tab, Some(message));
                }
                ContinuityOutput::OpenTab { transfer_id, url } => Self::open_tab(this, transfer_id, url),
                ContinuityOutput::DeliverySeen { tab, id } => {
                    Self::post_to_tab(this, tab, &json_object!("type": "delivery_seen", "id": id));
                }
                ContinuityOutput::ClearComposer { tab, id } => {
                    Self::post_to_tab(this, tab, &json_object!("type": "clear_composer", "id": id));
                }
                ContinuityOutput::Insert { tab, text } => {
                    Self::post_to_tab(this, tab, &json_object!("type": "insert", "text": text));
                }
                ContinuityOutput::Notice { tab, say, tone } => {
                    Self::post_to_tab(this, tab, &json_object!("type": "notice", "key": say.key, "args": say.args, "tone": tone));
                }
                ContinuityOutput::QueueRead { op } => {
                    Self::storage_request(this, ext_core::queue::STORE_KEY, None, StorageWait::QueueRead(op));
                }
                ContinuityOutput::QueueWrite { op, record } => {
                    let text = js::stringify(&record);
                    Self::storage_request(this, ext_core::queue::STORE_KEY, Some(&text), StorageWait::QueueWrite(op));
                }
                ContinuityOutput::QueueAccepted { tab, text } => {
                    Self::post_to_tab(this, tab, &json_object!("type": "queue_accepted", "text": text));
                }
                ContinuityOutput::Recovery { tab, command } => Self::recovery_command(this, tab, &command),
                ContinuityOutput::CardAllow { tab, key, index } => {
                    Self::post_when_persisted(this, tab, Some(json_object!("type": "card_allow", "key": key, "index": index)));
                }
                // The Activity timeline: worker.js's `activity-log.js` stamps and stores it.
                ContinuityOutput::Activity(entry) => {
                    js::call_method(&js_sys::global(), "herdrActivity", &[js::to_js(&entry.write_json())]);
                }
                ContinuityOutput::ViewsChanged => Self::broadcast_views(this),
                ContinuityOutput::Persist => Self::schedule_persist(this),
                ContinuityOutput::CompanionProfiles(companion) => {
                    let changed = this.borrow_mut().profiles.set_companion(&companion.files, &parse_json);
                    Self::post_profiles(this, &changed);
                }
            }
        }
        for id in offline_answers {
            let error = CallError {
                code: ErrorCode::Offline,
                message: "the companion is not connected; the extension retries when it reconnects".to_owned(),
            };
            Self::feed_continuity(this, ContinuityInput::Answered { id, result: Err(error) });
        }
        let deadline = this.borrow().continuity.next_deadline();
        let timer = deadline.map(|deadline| {
            let delay = deadline.saturating_sub(js::continuity_now());
            let weak = Rc::downgrade(this);
            Timeout::new(u32::try_from(delay).unwrap_or(u32::MAX), move || {
                if let Some(this) = weak.upgrade() {
                    this.borrow_mut().continuity.handle_timeout(js::continuity_now());
                    LinkDriver::pump_continuity(&this);
                }
            })
        });
        this.borrow_mut().continuity_timer = timer;
    }

    fn post_to_tab(this: &Rc<RefCell<LinkDriver>>, tab: TabId, message: &serde_json::Value) {
        let ports: Vec<JsValue> = this.borrow().pages.iter().filter(|page| page.tab == Some(tab)).map(|page| page.port.clone()).collect();
        // One page port per tab is the norm; a delivery goes to the newest only so it is
        // never typed twice.
        if let Some(port) = ports.last() {
            js::post(port, message);
        }
    }

    /// One `chrome.storage.local` write per burst of changes (B7: no write storms).
    /// Carries out a recovery command; a budgeted one only once the snapshot holding its
    /// pending record is written (a worker restart must find it, never repeat it).
    fn recovery_command(this: &Rc<RefCell<LinkDriver>>, tab: TabId, command: &RecoveryCommand) {
        let message = match command {
            RecoveryCommand::Probe { conversation_id } => {
                return Self::post_to_tab(this, tab, &json_object!("type": "snapshot_probe", "conversation_id": conversation_id));
            }
            RecoveryCommand::ReloadPage => Some(json_object!("type": "recovery_reload")),
            RecoveryCommand::ClickRetry => Some(json_object!("type": "recovery_retry")),
            RecoveryCommand::ReloadTab => None,
        };
        Self::post_when_persisted(this, tab, message);
    }

    /// Writes the snapshot, then posts `message` to the page of `tab` (`None`: reloads the
    /// tab); nothing when the write failed, so a command recorded as done is never repeated.
    fn post_when_persisted(this: &Rc<RefCell<LinkDriver>>, tab: TabId, message: Option<serde_json::Value>) {
        let snapshot = js::stringify(&this.borrow().continuity.snapshot_value());
        Self::storage_request(this, STORAGE_KEY, Some(&snapshot), StorageWait::Persisted(tab, message));
    }

    /// Asks `worker.js` to read (`text` `None`) or write `key` of `chrome.storage.local`;
    /// [`Self::js_answered`] carries out `wait` with the answer.
    fn storage_request(this: &Rc<RefCell<LinkDriver>>, key: &str, text: Option<&str>, wait: StorageWait) {
        let token = Self::storage_token(this, wait);
        js::storage_request(token, key, text);
    }

    /// A new token (never 0) whose answer carries out `wait`.
    fn storage_token(this: &Rc<RefCell<LinkDriver>>, wait: StorageWait) -> u32 {
        let mut driver = this.borrow_mut();
        driver.storage_token = driver.storage_token.checked_add(1).unwrap_or(1);
        let token = driver.storage_token;
        driver.storage.insert(token, wait);
        token
    }

    /// The answer to the storage request `token`: the value read (`undefined` when nothing
    /// is stored) or written, or what went wrong.
    pub fn js_answered(this: &Rc<RefCell<LinkDriver>>, token: u32, outcome: Result<JsValue, String>) {
        let Some(wait) = this.borrow_mut().storage.remove(&token) else { return };
        match wait {
            StorageWait::QueueRead(op) => {
                let text = outcome.and_then(|value| match value.is_undefined() {
                    true => Ok(None),
                    false => value.as_string().map(Some).ok_or_else(|| "the stored value is not text".to_owned()),
                });
                let stored = text.and_then(|text| text.map(|text| js::parse(&text)).transpose());
                Self::feed_continuity(this, ContinuityInput::QueueRead { op, stored });
            }
            StorageWait::QueueWrite(op) => {
                Self::feed_continuity(this, ContinuityInput::QueueWritten { op, result: outcome.map(|_| ()) });
            }
            // Not carried out when the write failed: the budget is spent, nothing repeats.
            StorageWait::Persisted(_, _) if outcome.is_err() => {}
            StorageWait::Persisted(tab, Some(message)) => Self::post_to_tab(this, tab, &message),
            // H5 level 2: only the page's own tab, and only while the core still holds its
            // pending record for this page load, the same conversation, Auto on.
            StorageWait::Persisted(tab, None) if this.borrow().continuity.tab_reload_accepted(tab) => js::reload_tab(tab),
            StorageWait::Persisted(_, None) => {
                js::warn("herdr-continuity: a tab reload was refused (no matching pending record)");
            }
            StorageWait::OpenTab(..) if outcome.is_err() => {}
            StorageWait::OpenTab(transfer_id, url) => {
                let token = Self::storage_token(this, StorageWait::TabCreated(transfer_id));
                js::create_tab_request(token, &url);
            }
            StorageWait::TabCreated(transfer_id) => {
                let tab = outcome.and_then(|id| {
                    id.as_f64()
                        .filter(|id| *id >= 0.0 && *id <= f64::from(u32::MAX))
                        .map(|id| id as u32)
                        .ok_or_else(|| "the new tab has no id".to_owned())
                });
                Self::feed_continuity(this, ContinuityInput::HandoffTab { transfer_id, tab });
            }
        }
    }

    /// A handoff's new tab: the snapshot (with the request recorded) is written first, then
    /// `chrome.tabs.create` (through `worker.js`'s `herdrTabs`, answered by token); its answer
    /// goes back as `HandoffTab`. Nothing when the write failed (the transfer stays where it
    /// is; the HUD shows it).
    fn open_tab(this: &Rc<RefCell<LinkDriver>>, transfer_id: String, url: String) {
        let snapshot = js::stringify(&this.borrow().continuity.snapshot_value());
        Self::storage_request(this, STORAGE_KEY, Some(&snapshot), StorageWait::OpenTab(transfer_id, url));
    }

    fn schedule_persist(this: &Rc<RefCell<LinkDriver>>) {
        if this.borrow().persist_timer.is_some() {
            return;
        }
        let weak = Rc::downgrade(this);
        let timer = Timeout::new(PERSIST_DEBOUNCE_MS, move || {
            let Some(this) = weak.upgrade() else { return };
            let snapshot = {
                let mut driver = this.borrow_mut();
                driver.persist_timer = None;
                driver.continuity.snapshot_value()
            };
            js::storage_local_write(STORAGE_KEY, &js::stringify(&snapshot));
        });
        this.borrow_mut().persist_timer = Some(timer);
    }

    /// The answer to a continuity call (an answer to a call no longer waited for, such as
    /// the fire-and-forget `diagnostics.report`, is dropped).
    fn call_answered(this: &Rc<RefCell<LinkDriver>>, id: &str, outcome: Result<&serde_json::Value, CallError>) {
        let call = this.borrow_mut().calls.remove(id);
        if let Some((call_id, call)) = call {
            let result = continuity_wire::answer(&call, outcome);
            Self::feed_continuity(this, ContinuityInput::Answered { id: call_id, result });
        }
    }

    /// A message from a page or panel port.
    pub fn page_message(this: &Rc<RefCell<LinkDriver>>, port: &JsValue, message: &JsValue) -> Result<(), WireError> {
        // Size first, then shape (ext_core::limits): a page shapes these through its DOM.
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
            _ => MAX_PAGE_MESSAGE_BYTES,
        };
        if text.len() > cap {
            return Err(too_long(cap));
        }
        if text.len() > MAX_HEALTH_SAMPLE_BYTES && kind == Some("health_sample") {
            return Err(too_long(MAX_HEALTH_SAMPLE_BYTES));
        }
        if kind == Some("page_diagnostics") {
            return Self::diagnostics_reported(this, port, &value);
        }
        wire::check_page_message(&value)?;
        if !this.borrow().pages.iter().any(|p| Object::is(&p.port, port)) {
            return Err(WireError::PageMessageRejected("the port was not accepted".into()));
        }
        let parsed = match wire::page_message(&value) {
            Ok(parsed) => parsed,
            Err(_) => return Self::continuity_message(this, port, &value),
        };
        match parsed {
            PageMessage::PageFacts { url } => {
                let tab = {
                    let mut driver = this.borrow_mut();
                    let page = driver.pages.iter_mut().find(|p| Object::is(&p.port, port));
                    let tab = page.as_ref().and_then(|p| p.tab);
                    if let Some(page) = page {
                        page.url = Some(url);
                    }
                    if tab.is_some() && driver.last_active_tab.is_none() {
                        driver.last_active_tab = tab;
                    }
                    tab
                };
                // An account id the pacer cannot key on refuses the report, naming why.
                continuity_wire::page_account(&value).map_err(WireError::PageMessageRejected)?;
                if let (Some(tab), Some(report)) = (tab, continuity_wire::page_report(&value)) {
                    Self::feed_continuity(this, ContinuityInput::PageReported { tab, report });
                }
            }
            PageMessage::Action(ActionId::RetryCompanion) => Self::feed(this, Input::RetryNow),
            PageMessage::Action(ActionId::RoundTripTest) => {
                let probe = {
                    let mut driver = this.borrow_mut();
                    let probe = driver.next_probe;
                    driver.next_probe = driver.next_probe.wrapping_add(1);
                    driver.probes.insert(probe, ProbeInFlight { page: port.clone(), started_at: js::performance_now() });
                    probe
                };
                Self::feed(this, Input::ProbeRequested { probe });
            }
        }
        Ok(())
    }

    /// A content script's `page_diagnostics`: kept for its tab's side panel.
    fn diagnostics_reported(this: &Rc<RefCell<LinkDriver>>, port: &JsValue, value: &serde_json::Value) -> Result<(), WireError> {
        let diagnostics = wire::page_diagnostics(value)?;
        {
            let mut driver = this.borrow_mut();
            let page = driver
                .pages
                .iter_mut()
                .find(|p| Object::is(&p.port, port) && !p.panel)
                .ok_or_else(|| WireError::PageMessageRejected("the port was not accepted".into()))?;
            page.diagnostics = Some(diagnostics);
        }
        Self::broadcast_views(this);
        // The companion keeps the newest report for `herdr-companion doctor`. Fire and forget:
        // the answer carries a continuity id no call waits for, so it is dropped on arrival.
        let native = this.borrow().native.as_ref().map(|(_, object)| object.clone());
        if let Some(object) = native {
            // The report without its `type`, copied key by key: `Map::remove` would pull
            // BTreeMap's removal and rebalancing code into the wasm for this one call.
            let diagnostics = match value.as_object() {
                Some(map) => {
                    let mut copy = serde_json::Map::new();
                    for (key, field) in map.iter().filter(|(key, _)| key.as_str() != "type") {
                        copy.insert(key.clone(), field.clone());
                    }
                    serde_json::Value::Object(copy)
                }
                None => value.clone(),
            };
            let request = json_object!(
                "id": format!("{}diag-{}", continuity_wire::CALL_ID_PREFIX, js::now_millis()),
                "method": continuity_protocol::Method::DiagnosticsReport.as_str(),
                "params": json_object!("diagnostics": diagnostics),
            );
            js::post(&object, &request);
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
                Output::HudChanged => Self::broadcast_views(this),
                Output::ProbeFinished { probe, outcome } => {
                    let Some(in_flight) = this.borrow_mut().probes.remove(&probe) else {
                        continue;
                    };
                    let elapsed = js::performance_now() - in_flight.started_at;
                    let rounded = (elapsed * 1000.0).round() / 1000.0;
                    let answered = outcome == ext_core::companion_link::ProbeOutcome::Answered;
                    let status = hud::round_trip_line(&outcome, elapsed);
                    js::post(&in_flight.page, &wire::round_trip_json(answered.then_some(rounded), &status));
                }
            }
        }
        Self::arm_timer(this);
        // Link edges drive the event stream: subscribe after each hello, and tell the
        // continuity machine when the connection (and its calls in flight) is lost.
        let connected = matches!(this.borrow().link.state(), LinkState::Connected { .. });
        let was = std::mem::replace(&mut this.borrow_mut().link_connected, connected);
        if connected != was {
            if !connected {
                this.borrow_mut().calls.clear();
            }
            let input = if connected { ContinuityInput::LinkUp } else { ContinuityInput::LinkDown };
            Self::feed_continuity(this, input);
        }
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
                    Input::PortClosed { port, error: Some(error.unwrap_or_else(|| "connectNative returned no port".into())) },
                );
                return;
            }
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
                match wire::inbound(&value) {
                    Ok(Inbound::Link(message)) => LinkDriver::feed(&this, Input::Message { port, message }),
                    Ok(Inbound::CallAnswer { id, outcome }) => LinkDriver::call_answered(&this, id, outcome),
                    Ok(Inbound::Continuity(input)) => LinkDriver::feed_continuity(&this, input),
                    Ok(Inbound::Unused) => {}
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
        this.borrow_mut().link.handle(js::now_millis(), Input::PortOpened { port });
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

/// A profile file's JSON through the browser's `JSON.parse` (its error text kept: it is
/// shown to the user), so the wasm carries no JSON text parser.
pub fn parse_json(text: &str) -> Result<serde_json::Value, String> {
    let value = js_sys::JSON::parse(text).map_err(|error| js::error_text(&error))?;
    js::json_value(&value)
}
