//! `Worker`: the top of the extension's service worker — one sans-IO machine that owns the
//! [`CompanionLink`], the [`Continuity`] machine and everything the shell used to keep
//! around them (page and panel ports, round-trip probes, continuity calls on the wire,
//! storage waits, the persist debounce, the profile overrides, the test clock).
//!
//! Purpose: `ext-shell` only translates. Chrome events become [`WorkerInput`]s (parsed by
//! `ext-shell`'s `wire` / `continuity_wire`), and every [`WorkerOutput`] is one JS call
//! (post to a port, post on the native port, a storage request, open or reload a tab).
//! Which view goes to which port, when the snapshot is written, what waits for a write,
//! which command a port may send, and the order in which the two machines are pumped are
//! all decided here, where the property world (`tests/it/continuity_props.rs`) and the
//! transcripts (`tests/it/worker.rs`) drive it exactly as the shell does.
//!
//! Invariants:
//! - A port the worker was not told about ([`WorkerInput::PortConnected`]) gets nothing
//!   and is heard from with a refusal only.
//! - Continuity calls go out only while a native port is open; without one each is
//!   answered `offline` at once. When the link leaves `Connected`, calls on the wire are
//!   forgotten (their answers are dropped) and continuity hears `LinkDown`.
//! - A delivery, a budgeted recovery command, a card click and a handoff's new tab are
//!   carried out only after the snapshot naming them was written ([`storage`]); a failed
//!   write carries out nothing (never repeated after a restart).
//! - The snapshot is written at most once per [`PERSIST_DEBOUNCE_MS`] burst (B7).
//! - `Start` opens the native port at the next `Timer` (due at once), never within the
//!   start's own turn: the pages that woke the worker get their first view first.
//! - A port is sent its view only when it changed ([`pages`]).
//!
//! Driver contract: call [`Worker::handle`] with the real clock (`Date.now()`), then drain
//! [`Worker::poll`] until `None`, carrying out each output in order (an
//! [`WorkerOutput::OpenNative`] is answered with [`WorkerInput::NativeOpened`] or
//! [`WorkerInput::NativeClosed`] before the next output is carried out), then arm one timer
//! for [`Worker::next_deadline`] that feeds [`WorkerInput::Timer`]. No output needs an
//! answer within the same turn except `OpenNative`; storage and tab answers come back as
//! [`WorkerInput::Stored`] with the output's token.

mod aside;
mod calls;
mod commands;
mod pages;
mod relay;
mod start_view;
mod storage;

use std::collections::VecDeque;

use continuity_protocol::{ErrorCode, EventName};
use serde_json::Value;

use crate::binding::TabId;
use crate::companion_link::{CompanionLink, Input, LinkState, Output, PortGeneration, ProbeId, ProbeOutcome, Request, RuntimeMessage};
use crate::continuity::{
    Activity, CallError, CallId, Continuity, ContinuityInput, ContinuityOutput, PageReport, RuntimeAnswer, RuntimeCall,
};
use crate::hud::HudView;
use crate::json_object;
use crate::sites::overrides::ProfileOverrides;
use crate::vec_map::VecMap;
use crate::Millis;

pub use aside::{aside_view_message, ASIDE_CONFIRM, ASIDE_PREVIEW_CHARS, ASIDE_TEXTS};
pub use calls::{PAGE_CALL_ID_PREFIX, WATCHED_EVENTS};
pub use commands::{
    commands_for, companion_call, companion_watch, CallFailure, ExtensionPage, PortCommand, Sender, COMPANION_CALLS, OPTIONS_PAGE,
    SIDE_PANEL_PAGE,
};
pub use pages::panel_diagnostics_message;
use pages::Page;
pub use start_view::{start_view, START_VIEW_KEY, START_VIEW_PAGES};
use storage::StorageWait;

/// How long persisted-state writes are coalesced (one write per burst, B7).
pub const PERSIST_DEBOUNCE_MS: Millis = 200;
/// The `chrome.storage.local` key of the continuity snapshot.
pub const STORAGE_KEY: &str = "continuity";
/// What a worker start reads from `chrome.storage.local` before anything else: the snapshot,
/// the judge and recovery settings, the profile overrides, the start view ([`start_view`]:
/// `worker.js` posts it while the wasm compiles). Generated into `extension/contracts.js`
/// (`start_keys.local`, and `start_keys.view`), so `worker.js` issues the read while the
/// wasm compiles; the shell hands the items to the start as read.
pub const START_LOCAL_KEYS: [&str; 5] = [
    STORAGE_KEY,
    crate::semantic_auto::SETTINGS_KEY,
    crate::recovery_config::SETTINGS_KEY,
    crate::sites::overrides::STORAGE_KEY,
    START_VIEW_KEY,
];
/// What a worker start reads from `chrome.storage.sync` (`start_keys.sync`): Auto in projects
/// and the progress timings.
pub const START_SYNC_KEYS: [&str; 3] =
    [crate::contracts::ALLOW_PROJECT_AUTO_KEY, crate::contracts::PROGRESS_TICK_KEY, crate::contracts::PROGRESS_FALLBACK_KEY];
/// The wire id prefix of continuity requests (the link uses `hello-` / `ping-`).
pub const CALL_ID_PREFIX: &str = "c-";

/// The shell's handle of a page or panel port (it keeps the `runtime.Port` object under it).
pub type PortId = u32;

/// A JSON text parser (the browser's `JSON.parse` in the shell, so the wasm carries none).
pub type ParseJson = fn(&str) -> Result<Value, String>;

/// What a page or panel port said, as `ext-shell` parsed it.
#[derive(Debug, Clone, PartialEq)]
pub enum PageInput {
    /// `page_facts {url, …}`: the page's URL and, when it carries them, the continuity facts.
    Facts {
        /// The page's URL.
        url: String,
        /// The facts (`None`: the message carried none the core can use).
        report: Option<PageReport>,
    },
    /// The HUD's Retry button.
    RetryCompanion,
    /// The HUD's round-trip test; `at` is `performance.now()` when it arrived.
    RoundTrip {
        /// When the request arrived (ms, sub-ms precision).
        at: f64,
    },
    /// `page_diagnostics`: the report as checked (`seen`, what the side panel shows) and as
    /// sent without its `type` (`report`, what the companion keeps for `doctor`).
    Diagnostics {
        /// The checked report.
        seen: Value,
        /// The report for the companion.
        report: Value,
    },
    /// A continuity command.
    Command(PortCommand),
}

/// What JS reports to the worker.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkerInput {
    /// The worker started (after the state was restored): connect to the companion, at the
    /// next [`WorkerInput::Timer`] (due at once), so the pages that connected with the start
    /// get their first view before `connectNative` and the `hello`.
    Start,
    /// `chrome.alarms.onAlarm`: the keep-trying alarm (the link's timer, whatever is due).
    Alarm,
    /// The time of [`Worker::next_deadline`] has come.
    Timer,
    /// The e2e tests' clock: the continuity machine's clock moves `ms` ahead.
    AdvanceClock {
        /// How far.
        ms: Millis,
    },
    /// A page (`panel: false`) or side-panel port connected and was accepted.
    PortConnected {
        /// The shell's handle.
        port: PortId,
        /// `port.sender.tab.id`.
        tab: Option<TabId>,
        /// A side panel's port.
        panel: bool,
        /// `port.sender.url` (a page's origin picks its site profile).
        url: String,
    },
    /// A page or panel port disconnected.
    PortClosed {
        /// Which.
        port: PortId,
    },
    /// A message on a page or panel port.
    Page {
        /// Which port.
        port: PortId,
        /// What it said.
        message: PageInput,
    },
    /// `chrome.tabs.onRemoved`.
    TabClosed {
        /// The tab.
        tab: TabId,
    },
    /// `chrome.tabs.onActivated`.
    TabActivated {
        /// The tab.
        tab: TabId,
    },
    /// `connectNative` gave a port for this generation.
    NativeOpened {
        /// Which.
        port: PortGeneration,
    },
    /// The native port closed (or `connectNative` failed), with Chrome's error text.
    NativeClosed {
        /// Which.
        port: PortGeneration,
        /// `chrome.runtime.lastError.message` or the exception's text.
        error: Option<String>,
    },
    /// A message for the companion link arrived on the native port.
    LinkMessage {
        /// Which port.
        port: PortGeneration,
        /// The message.
        message: RuntimeMessage,
    },
    /// The companion's answer to an extension page's call (a wire id with
    /// [`PAGE_CALL_ID_PREFIX`]): the `result` object or the error it answered.
    PageCallAnswered {
        /// The request's wire id.
        wire_id: String,
        /// The answer.
        result: Result<Value, CallError>,
    },
    /// A stream event, fed while [`Worker::watches_stream`] (besides its continuity input).
    StreamEvent {
        /// The event's name.
        name: EventName,
        /// Its `data`.
        data: Value,
    },
    /// The answer to a continuity call on the wire, read against its call
    /// ([`Worker::call_on_wire`]).
    CallAnswered {
        /// The request's wire id.
        wire_id: String,
        /// The answer.
        result: Result<RuntimeAnswer, CallError>,
    },
    /// A native event or a setting, translated one to one into a continuity input.
    Continuity(ContinuityInput),
    /// The options page's stored profile overrides (`None`: nothing stored).
    ProfileOverrides {
        /// The record.
        record: Option<Value>,
    },
    /// The start view record as the start read it ([`START_VIEW_KEY`]; `None`: none stored,
    /// or not JSON): of this version, its pages are kept in the record this life writes.
    StartView {
        /// The record.
        record: Option<Value>,
    },
    /// The answer to a storage or tab request of `token`: the items read (`{key: value}`,
    /// `{}` when nothing is stored), written (`Null`), the new tab's id, or the error thrown.
    Stored {
        /// The output's token (0: a fire-and-forget snapshot write).
        token: u32,
        /// The answer.
        outcome: Result<Value, String>,
    },
}

/// What JS must do.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkerOutput {
    /// Post `message` on the page or panel port `port`.
    Post {
        /// Which port.
        port: PortId,
        /// The message.
        message: Value,
    },
    /// Call `connectNative` and answer with `NativeOpened` / `NativeClosed`.
    OpenNative {
        /// The generation of the new port.
        port: PortGeneration,
    },
    /// `port.disconnect()` the native port of this generation.
    CloseNative {
        /// Which.
        port: PortGeneration,
    },
    /// Post the link's request on the open native port.
    SendLink {
        /// The request.
        request: Request,
    },
    /// Post a continuity call on the open native port under `wire_id`.
    Call {
        /// The wire id.
        wire_id: String,
        /// The call.
        call: RuntimeCall,
    },
    /// Post this request on the open native port (fire and forget).
    PostNative {
        /// The request.
        message: Value,
    },
    /// Read `key` of `chrome.storage.local`; answer with `Stored { token, … }` carrying the
    /// items `chrome.storage.local.get(key)` gave (an object without `key` when nothing is
    /// stored; a stored JSON `null` is kept as `null`: the queue reads it as no items).
    StorageRead {
        /// The answer's token.
        token: u32,
        /// The key.
        key: &'static str,
    },
    /// Write `value` (as JSON text) under `key` of `chrome.storage.local`; answer with
    /// `Stored { token, … }` (token 0: only a failure is worth a warning).
    StorageWrite {
        /// The answer's token.
        token: u32,
        /// The key.
        key: &'static str,
        /// The value.
        value: Value,
    },
    /// `chrome.tabs.create({url})`; answer with `Stored { token, Ok(tab id) }`.
    OpenTab {
        /// The answer's token.
        token: u32,
        /// The URL.
        url: String,
    },
    /// `chrome.tabs.reload(tab)` (H5 level 2, already checked).
    ReloadTab {
        /// The tab.
        tab: TabId,
    },
    /// An Activity timeline entry (worker.js stamps and stores it).
    Activity(Activity),
    /// A round-trip probe of `port` ended: the shell measures `performance.now() -
    /// started_at` and posts `round_trip_result`.
    RoundTrip {
        /// The page that asked.
        port: PortId,
        /// How it ended.
        outcome: ProbeOutcome,
        /// When it was asked.
        started_at: f64,
    },
    /// `console.warn(text)`: something was refused or failed, and nothing else says so.
    Warn(String),
}

/// A round-trip probe in flight.
#[derive(Debug, Clone, Copy)]
struct Probe {
    port: PortId,
    started_at: f64,
}

/// The service worker's machine (see the module header).
pub struct Worker {
    link: CompanionLink,
    /// The extension's version (the start view's record names it).
    version: String,
    /// The page URLs the start view is kept for, newest first ([`start_view`]).
    start_urls: Vec<String>,
    /// `start_urls` changed since the record was last written.
    start_dirty: bool,
    continuity: Continuity,
    parse: ParseJson,
    /// Real time of the current input.
    now: Millis,
    /// How far the test clock moved the continuity machine ahead.
    ahead: Millis,
    /// The open native port's generation.
    native: Option<PortGeneration>,
    /// `Start` arrived and the link has not been started yet (it starts at the next timer).
    link_start_due: bool,
    /// Whether the link was connected after the last pump (edges feed LinkUp / LinkDown).
    link_connected: bool,
    pages: Vec<Page>,
    probes: VecMap<ProbeId, Probe>,
    next_probe: ProbeId,
    /// Continuity calls on the wire, by wire id.
    calls: VecMap<String, (CallId, RuntimeCall)>,
    next_wire: u64,
    /// When the coalesced snapshot write is due.
    persist_at: Option<Millis>,
    /// The chat tab that reported or was activated last (the panel's default tab).
    last_active_tab: Option<TabId>,
    storage: VecMap<u32, StorageWait>,
    storage_token: u32,
    /// The queue record as the last queue read found it (a Clear keeps exactly this aside).
    queue_raw: Option<Value>,
    /// The records kept aside: their changes one at a time, the side panels' view ([`aside`]).
    aside: aside::AsideLane,
    /// Extension pages' companion calls on the wire, by wire id ([`calls`]).
    page_calls: VecMap<String, calls::PageCall>,
    next_page_call: u64,
    /// Stream events not relayed to a watching side panel ([`relay`]).
    stream_drops: calls::StreamDrops,
    profiles: ProfileOverrides,
    outputs: VecDeque<WorkerOutput>,
}

impl Worker {
    /// A worker around a restored (or fresh) continuity machine; `parse` reads JSON text.
    /// What the machine output while it was restored and given its settings (views, a
    /// persist) has nothing to act on yet and is dropped — except the queue's storage
    /// requests (a restored machine retries the removals the last worker could not write):
    /// the queue waits for their answers, so they go out as the first outputs.
    pub fn new(extension_version: &str, mut continuity: Continuity, parse: ParseJson) -> Self {
        let mut queue = Vec::new();
        while let Some(output) = continuity.poll() {
            if matches!(
                output,
                ContinuityOutput::QueueRead { .. } | ContinuityOutput::QueueWrite { .. } | ContinuityOutput::QueueKeepAside { .. }
            ) {
                queue.push(output);
            }
        }
        let mut worker = Worker {
            link: CompanionLink::new(extension_version),
            version: extension_version.to_owned(),
            start_urls: Vec::new(),
            start_dirty: false,
            continuity,
            parse,
            now: 0,
            ahead: 0,
            native: None,
            link_start_due: false,
            link_connected: false,
            pages: Vec::new(),
            probes: VecMap::new(),
            next_probe: 1,
            calls: VecMap::new(),
            next_wire: 0,
            persist_at: None,
            last_active_tab: None,
            storage: VecMap::new(),
            storage_token: 0,
            queue_raw: None,
            aside: aside::AsideLane::default(),
            page_calls: VecMap::new(),
            next_page_call: 0,
            stream_drops: calls::StreamDrops::default(),
            profiles: ProfileOverrides::default(),
            outputs: VecDeque::new(),
        };
        for output in queue {
            worker.continuity_output(output, &mut Vec::new());
        }
        worker
    }

    /// The continuity machine (read-only: tests, diagnostics).
    pub fn continuity(&self) -> &Continuity {
        &self.continuity
    }

    /// The companion link's HUD view.
    pub fn hud(&self) -> HudView {
        self.link.hud()
    }

    /// The profile overrides (read-only: the options page's `profile_get`, `import`, `reset`).
    pub fn profiles(&self) -> &ProfileOverrides {
        &self.profiles
    }

    /// The URLs reported by connected pages (diagnostics and tests).
    pub fn page_urls(&self) -> Vec<String> {
        self.pages.iter().filter_map(|page| page.url.clone()).collect()
    }

    /// The call a continuity answer on the wire answers, so the shell can read its result.
    pub fn call_on_wire(&self, wire_id: &str) -> Option<&RuntimeCall> {
        self.calls.get(wire_id).map(|(_, call)| call)
    }

    /// How far the test clock moved the continuity machine ahead.
    pub fn clock_ahead(&self) -> Millis {
        self.ahead
    }

    /// The next output to carry out.
    pub fn poll(&mut self) -> Option<WorkerOutput> {
        self.outputs.pop_front()
    }

    /// When [`WorkerInput::Timer`] is due (real time).
    pub fn next_deadline(&self) -> Option<Millis> {
        let continuity = self.continuity.next_deadline().map(|at| at.saturating_sub(self.ahead));
        let start = self.link_start_due.then_some(self.now);
        [self.link.next_deadline(), continuity, self.persist_at, start, self.page_calls_deadline()].into_iter().flatten().min()
    }

    /// The continuity machine's time.
    fn continuity_now(&self) -> Millis {
        self.now.saturating_add(self.ahead)
    }

    /// Feeds one input; its outputs wait in [`Worker::poll`].
    pub fn handle(&mut self, now: Millis, input: WorkerInput) {
        self.now = now;
        match input {
            WorkerInput::Start => self.link_start_due = true,
            WorkerInput::Alarm => {
                self.start_link();
                self.link_input(Input::Timer);
            }
            WorkerInput::Timer => self.timer(),
            WorkerInput::AdvanceClock { ms } => {
                self.ahead = self.ahead.saturating_add(ms);
                self.pump_continuity();
            }
            WorkerInput::PortConnected { port, tab, panel, url } => self.port_connected(port, tab, panel, &url),
            WorkerInput::PortClosed { port } => self.port_closed(port),
            WorkerInput::Page { port, message } => self.page_message(port, message),
            WorkerInput::TabClosed { tab } => self.continuity_input(ContinuityInput::TabClosed { tab }),
            WorkerInput::TabActivated { tab } => {
                if self.pages.iter().any(|page| page.tab == Some(tab)) {
                    self.last_active_tab = Some(tab);
                    self.broadcast_views();
                }
            }
            WorkerInput::NativeOpened { port } => {
                self.native = Some(port);
                self.link_input(Input::PortOpened { port });
            }
            WorkerInput::NativeClosed { port, error } => {
                if self.native == Some(port) {
                    self.native = None;
                }
                self.link_input(Input::PortClosed { port, error });
            }
            WorkerInput::LinkMessage { port, message } => self.link_input(Input::Message { port, message }),
            WorkerInput::CallAnswered { wire_id, result } => {
                // An answer no call waits for (the fire-and-forget `diagnostics.report`, or a
                // call of a connection since lost) is dropped.
                if let Some((id, _)) = self.calls.remove(&wire_id) {
                    self.continuity_input(ContinuityInput::Answered { id, result });
                }
            }
            WorkerInput::PageCallAnswered { wire_id, result } => self.page_call_answered(&wire_id, result),
            WorkerInput::StreamEvent { name, data } => self.stream_event(name, data),
            WorkerInput::Continuity(input) => self.continuity_input(input),
            WorkerInput::ProfileOverrides { record } => {
                let parse = self.parse;
                let changed = self.profiles.set_options(record.as_ref(), &parse);
                self.post_profiles(&changed);
            }
            WorkerInput::StartView { record } => self.start_view_stored(record.as_ref()),
            WorkerInput::Stored { token, outcome } => self.stored(token, outcome),
        }
    }

    /// Whatever is due: the link's deadline, continuity's, the coalesced snapshot write.
    fn timer(&mut self) {
        self.start_link();
        self.page_calls_due();
        if self.link.next_deadline().is_some_and(|at| at <= self.now) {
            self.link_input(Input::Timer);
        }
        let now = self.continuity_now();
        if self.continuity.next_deadline().is_some_and(|at| at <= now) {
            self.continuity.handle_timeout(now);
            self.pump_continuity();
        }
        if self.persist_at.is_some_and(|at| at <= self.now) {
            self.persist_at = None;
            let value = self.continuity.snapshot_value();
            self.outputs.push_back(WorkerOutput::StorageWrite { token: 0, key: STORAGE_KEY, value });
            self.start_view_write();
        }
    }

    /// The link's deferred `Start`, once.
    fn start_link(&mut self) {
        if std::mem::take(&mut self.link_start_due) {
            self.link_input(Input::Start);
        }
    }

    fn link_input(&mut self, input: Input) {
        self.link.handle(self.now, input);
        self.pump_link();
    }

    fn continuity_input(&mut self, input: ContinuityInput) {
        self.continuity.handle(self.continuity_now(), input);
        self.pump_continuity();
    }

    /// Drains the link's outputs; then its connection edge goes to continuity.
    fn pump_link(&mut self) {
        while let Some(output) = self.link.poll() {
            match output {
                Output::OpenPort { port } => self.outputs.push_back(WorkerOutput::OpenNative { port }),
                Output::ClosePort { port } => {
                    if self.native == Some(port) {
                        self.native = None;
                        self.outputs.push_back(WorkerOutput::CloseNative { port });
                    }
                }
                Output::Send { port, request } => {
                    if self.native == Some(port) {
                        self.outputs.push_back(WorkerOutput::SendLink { request });
                    }
                }
                Output::HudChanged => self.broadcast_views(),
                Output::ProbeFinished { probe, outcome } => {
                    if let Some(Probe { port, started_at }) = self.probes.remove(&probe) {
                        self.outputs.push_back(WorkerOutput::RoundTrip { port, outcome, started_at });
                    }
                }
            }
        }
        // Link edges drive the event stream: subscribe after each hello, and tell the
        // continuity machine when the connection (and its calls in flight) is lost.
        let connected = matches!(self.link.state(), LinkState::Connected { .. });
        if connected != std::mem::replace(&mut self.link_connected, connected) {
            if !connected {
                self.calls.clear();
                self.page_calls_link_lost();
            }
            self.continuity_input(if connected { ContinuityInput::LinkUp } else { ContinuityInput::LinkDown });
        }
        // Watching extension pages hear a new connection state or companion line.
        self.post_companion_state();
    }

    /// Drains the continuity machine's outputs, answering calls that cannot go out.
    fn pump_continuity(&mut self) {
        loop {
            let mut offline = Vec::new();
            while let Some(output) = self.continuity.poll() {
                self.continuity_output(output, &mut offline);
            }
            if offline.is_empty() {
                return;
            }
            let now = self.continuity_now();
            for id in offline {
                let error = CallError {
                    code: ErrorCode::Offline,
                    message: "the companion is not connected; the extension retries when it reconnects".to_owned(),
                };
                self.continuity.handle(now, ContinuityInput::Answered { id, result: Err(error) });
            }
        }
    }

    fn continuity_output(&mut self, output: ContinuityOutput, offline: &mut Vec<CallId>) {
        match output {
            ContinuityOutput::Request { id, call } => {
                if self.native.is_none() {
                    return offline.push(id);
                }
                self.next_wire = self.next_wire.wrapping_add(1);
                let wire_id = format!("{CALL_ID_PREFIX}{}", self.next_wire);
                self.calls.insert(wire_id.clone(), (id, call.clone()));
                self.outputs.push_back(WorkerOutput::Call { wire_id, call });
            }
            // Durable first, every kind of delivery: it leaves once the snapshot naming it is
            // written, never within the persist debounce (a worker that dies then would offer
            // it again under a new id). It names the page it was decided for (its URL and page
            // load, as last reported): a page that shows another conversation by then types
            // nothing. `app` (`null` for a plain message): the page attaches it before the
            // text and sends nothing it could not attach it to.
            ContinuityOutput::Deliver { tab, id, text, app } => {
                let (url, page_load) = self.continuity.page(tab).map(|p| (p.url.clone(), p.page_load.clone())).unwrap_or_default();
                let message = json_object!("type": "deliver", "id": id, "text": text, "url": url, "page_load": page_load, "app": app);
                self.post_when_persisted(tab, Some(message));
            }
            ContinuityOutput::OpenTab { transfer_id, url } => self.open_tab(transfer_id, url),
            ContinuityOutput::DeliverySeen { tab, id } => self.post_to_tab(tab, json_object!("type": "delivery_seen", "id": id)),
            ContinuityOutput::ClearComposer { tab, id } => self.post_to_tab(tab, json_object!("type": "clear_composer", "id": id)),
            ContinuityOutput::Insert { tab, text } => self.post_to_tab(tab, json_object!("type": "insert", "text": text)),
            ContinuityOutput::Notice { tab, say, tone } => {
                self.post_to_tab(tab, json_object!("type": "notice", "key": say.key, "args": say.args, "tone": tone));
            }
            ContinuityOutput::QueueRead { op } => {
                let token = self.storage_token(StorageWait::QueueRead(op));
                self.outputs.push_back(WorkerOutput::StorageRead { token, key: crate::queue::STORE_KEY });
            }
            ContinuityOutput::QueueWrite { op, record } => {
                let token = self.storage_token(StorageWait::QueueWrite(op));
                self.outputs.push_back(WorkerOutput::StorageWrite { token, key: crate::queue::STORE_KEY, value: record });
            }
            ContinuityOutput::QueueKeepAside { op, record } => {
                // Verbatim: the value as stored (this change's read), not its parsed form,
                // added to the records kept aside before (read first: none is replaced).
                // One list change at a time: after a removal the side panel started, if any.
                let value = self.queue_raw.take().unwrap_or(record);
                self.aside_job(aside::AsideJob::Keep(op, value));
            }
            ContinuityOutput::QueueAccepted { tab, text } => self.post_to_tab(tab, json_object!("type": "queue_accepted", "text": text)),
            ContinuityOutput::Recovery { tab, command } => self.recovery_command(tab, &command),
            ContinuityOutput::CardAllow { tab, key, index } => {
                self.post_when_persisted(tab, Some(json_object!("type": "card_allow", "key": key, "index": index)));
            }
            ContinuityOutput::Activity(entry) => self.outputs.push_back(WorkerOutput::Activity(entry)),
            ContinuityOutput::ViewsChanged => self.broadcast_views(),
            ContinuityOutput::Persist => {
                self.persist_at.get_or_insert(self.now.saturating_add(PERSIST_DEBOUNCE_MS));
            }
            ContinuityOutput::CompanionProfiles(companion) => {
                let parse = self.parse;
                let changed = self.profiles.set_companion(&companion.files, &parse);
                self.post_profiles(&changed);
            }
        }
    }
}
