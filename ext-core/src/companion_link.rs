//! `CompanionLink`: the service worker's link to the local companion (R: A4, N1, N4).
//!
//! The extension talks to the companion through one Chrome Native Messaging port
//! (`chrome.runtime.connectNative("dev.herdr.continuity")`). This machine decides when to
//! open that port, performs the `hello` handshake of `docs/PROTOCOL.md`, tracks the
//! runtime's Herdr connection state, runs round-trip probes (`ping`), and reconnects with
//! backoff when the port closes. It does no IO and reads no clock: the shell (`ext-shell`)
//! opens and closes ports, posts messages and feeds back what happened.
//!
//! Decision recorded here: **ext-core runs in the service worker only.** Wasm in a
//! content script obeys the page's CSP (a strict nonce CSP without `'wasm-unsafe-eval'`
//! makes compiling fail and reports a `securitypolicyviolation` to the page), and whether
//! chatgpt.com allows wasm is unknown. The content script is therefore a thin JS adapter
//! that renders what the worker decides.
//!
//! Invariants (checked by the property test in `tests/companion_link.rs`):
//! - At most one port is open: [`Output::OpenPort`] is never emitted while a previously
//!   opened port has neither been closed by [`Output::ClosePort`] nor reported closed by
//!   [`Input::PortClosed`].
//! - The retry delay never exceeds [`MAX_BACKOFF`]; it starts at [`INITIAL_BACKOFF`],
//!   doubles after each failed attempt and is reset by a successful `hello`.
//! - Events about an old port (an older [`PortGeneration`]) change nothing.
//! - A `hello` unanswered after [`HELLO_TIMEOUT`] closes the port and schedules a retry.
//! - Differing protocol integers, or a runtime without a [`REQUIRED_CAPABILITIES`] name
//!   (an answer without `capabilities` is a runtime older than protocol 2), end in
//!   [`LinkState::Incompatible`], which names the side to update and is left only by
//!   [`Input::RetryNow`] (or a new worker). So does a runtime that refused to start
//!   (`host_error runtime_refused_to_start`): retrying on a timer cannot cure it.
//! - Every round-trip probe finishes exactly once ([`Output::ProbeFinished`]).

use continuity_protocol::{ErrorCode, HostErrorCode};
use std::collections::VecDeque;

use crate::hud::{self, HudView};
use crate::vec_map::VecMap;
use crate::Millis;

/// The protocol integer this extension speaks (`continuity_protocol::PROTOCOL_VERSION`).
pub const PROTOCOL_VERSION: u32 = 2;

/// The runtime capabilities (`continuity_protocol::CAPABILITIES` names) this extension
/// calls, sent as `hello.requires` and checked against the answer's `capabilities`: a
/// runtime that lacks one is refused at `hello` ("run herdr-companion install again")
/// instead of failing call by call. Sorted.
pub const REQUIRED_CAPABILITIES: &[&str] = &[
    "bridge.decide",
    "bridge.delivered",
    "bridge.prompt",
    "bridge.reply",
    "chats.report",
    "continuity.append",
    "continuity.resolve",
    "diagnostics.report",
    "events.subscribe",
    "goal.evidence",
    "goal.set",
    "hello",
    "hello.capabilities",
    "herdr.pane_read",
    "herdr.panes",
    "herdr.workspaces",
    "herdr_mcp.browser_handoff.prepare",
    "herdr_mcp.browser_handoff.prepare.facts",
    "inbox.ack",
    "inbox.counts",
    "inbox.pending",
    "judge.turn_end",
    "ping",
    "profiles.get",
];
/// First retry delay after a failed or lost connection.
pub const INITIAL_BACKOFF: Millis = 500;
/// Upper bound of the retry delay.
pub const MAX_BACKOFF: Millis = 5_000;
/// How long the runtime has to answer `hello` (and the shell to report an opened port).
pub const HELLO_TIMEOUT: Millis = 5_000;
/// How long a round-trip probe (`ping`) may take before it is reported as timed out.
pub const PROBE_TIMEOUT: Millis = 5_000;

/// Identifies one opened native port; events about older ports are ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PortGeneration(pub u32);

/// Identifies one round-trip probe requested by a page (chosen by the shell).
pub type ProbeId = u32;

/// The runtime's Herdr connection state as named on the wire (`herdr.state`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HerdrConnection {
    /// The runtime talks to Herdr.
    Connected,
    /// No Herdr socket answers.
    NotRunning,
    /// Herdr answered with a protocol the runtime does not speak.
    UnsupportedProtocol,
    /// The Herdr socket exists but the runtime may not open it.
    PermissionDenied,
    /// Any other failure (see `detail`).
    Error,
}

/// The runtime's report about Herdr (`herdr` object of `docs/PROTOCOL.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HerdrStatus {
    /// Connection state.
    pub state: HerdrConnection,
    /// Herdr's protocol integer when known.
    pub protocol: Option<u32>,
    /// Herdr's version when known.
    pub version: Option<String>,
    /// The socket path the runtime uses.
    pub socket: String,
    /// Free text explaining an error.
    pub detail: Option<String>,
}

/// A message from the runtime or host, already parsed and validated by the shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeMessage {
    /// Result of `hello`.
    HelloAnswer {
        /// Request id it answers.
        id: String,
        /// The runtime's version string.
        runtime_version: String,
        /// The runtime's protocol integer.
        protocol: u32,
        /// Whether the runtime accepts our protocol.
        compatible: bool,
        /// What the runtime serves; `None` when the answer has no `capabilities` (a
        /// runtime older than protocol 2).
        capabilities: Option<Vec<String>>,
        /// The runtime's Herdr state.
        herdr: HerdrStatus,
    },
    /// Result of `ping`.
    Pong {
        /// Request id it answers.
        id: String,
    },
    /// An `error` response to any request.
    ErrorAnswer {
        /// Request id it answers.
        id: String,
        /// What kind of failure (an unlisted code reads as [`ErrorCode::Error`]).
        code: ErrorCode,
        /// What happened and what to do.
        message: String,
    },
    /// `herdr_state` event or `herdr_status` result.
    HerdrState(HerdrStatus),
    /// `host_error` event from the native host.
    HostError {
        /// What went wrong in the host.
        code: HostErrorCode,
        /// What happened and what to do.
        message: String,
    },
}

/// Facts the shell feeds into [`CompanionLink::handle`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// The worker (re)started: connect if not connected yet. Idempotent.
    Start,
    /// The user asked to retry now (HUD button): resets the backoff and reconnects
    /// unless a connection is already up or being made.
    RetryNow,
    /// `connectNative` returned a port object for this generation.
    PortOpened {
        /// Which port.
        port: PortGeneration,
    },
    /// Chrome fired `onDisconnect` for this port (`chrome.runtime.lastError` text if any).
    PortClosed {
        /// Which port.
        port: PortGeneration,
        /// `chrome.runtime.lastError.message`, if Chrome gave one.
        error: Option<String>,
    },
    /// A message arrived on this port.
    Message {
        /// Which port.
        port: PortGeneration,
        /// The parsed message.
        message: RuntimeMessage,
    },
    /// A page asked for a round-trip self-test (worker → host → runtime → worker).
    ProbeRequested {
        /// The shell's id for this probe.
        probe: ProbeId,
    },
    /// The time returned by [`CompanionLink::next_deadline`] has come.
    Timer,
}

/// A request the shell serialises and posts on the port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// `hello {extension_version, protocol}`.
    Hello {
        /// Request id.
        id: String,
        /// The extension's manifest version.
        extension_version: String,
        /// Always [`PROTOCOL_VERSION`].
        protocol: u32,
        /// Always [`REQUIRED_CAPABILITIES`].
        requires: Vec<String>,
    },
    /// `ping {}`.
    Ping {
        /// Request id.
        id: String,
    },
}

/// How a round-trip probe ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// The runtime answered `pong`; the shell measures the elapsed time.
    Answered,
    /// No connection to the companion at the time of the request.
    CompanionOffline,
    /// The port closed before the answer came.
    ConnectionLost,
    /// No answer within [`PROBE_TIMEOUT`].
    TimedOut,
    /// The runtime answered with an error.
    Refused {
        /// What the runtime said.
        message: String,
    },
}

/// Decisions the shell drains with [`CompanionLink::poll`] and carries out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Call `connectNative` and report [`Input::PortOpened`] / [`Input::PortClosed`].
    OpenPort {
        /// Generation to tag the new port's events with.
        port: PortGeneration,
    },
    /// Call `port.disconnect()`; Chrome will not report this close back.
    ClosePort {
        /// Which port.
        port: PortGeneration,
    },
    /// Post this request on the port.
    Send {
        /// Which port.
        port: PortGeneration,
        /// What to post.
        request: Request,
    },
    /// [`CompanionLink::hud`] changed: re-render every HUD.
    HudChanged,
    /// A round-trip probe finished.
    ProbeFinished {
        /// Which probe.
        probe: ProbeId,
        /// How it ended.
        outcome: ProbeOutcome,
    },
}

/// Why the companion is offline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OfflineReason {
    /// Chrome: "Specified native messaging host not found." (not installed).
    HostNotInstalled,
    /// Chrome: "Access to the specified native messaging host is forbidden."
    HostForbidden,
    /// Chrome: "Native host has exited." (or the port closed without a reason).
    HostExited,
    /// The host said `host_error runtime_unreachable`.
    RuntimeUnreachable {
        /// The host's message.
        message: String,
    },
    /// `hello` was not answered within [`HELLO_TIMEOUT`].
    HelloTimedOut,
    /// The runtime answered `hello` with an error.
    HelloRefused {
        /// The runtime's message.
        message: String,
    },
    /// Any other `lastError` text from Chrome.
    PortError {
        /// Chrome's text.
        message: String,
    },
}

impl OfflineReason {
    /// Classifies Chrome's `lastError` text of a closed native port.
    pub fn from_port_error(error: Option<&str>) -> Self {
        match error {
            None => OfflineReason::HostExited,
            Some(text) if crate::text::contains_str(text, "not found") => OfflineReason::HostNotInstalled,
            Some(text) if crate::text::contains_str(text, "forbidden") => OfflineReason::HostForbidden,
            Some(text) if crate::text::contains_str(text, "exited") => OfflineReason::HostExited,
            Some(text) => OfflineReason::PortError { message: text.to_owned() },
        }
    }
}

/// Why the runtime and this extension cannot work together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incompatibility {
    /// The runtime speaks a newer protocol: update the extension.
    UpdateExtension {
        /// The runtime's version string.
        runtime_version: String,
        /// Our protocol integer.
        extension_protocol: u32,
        /// The runtime's protocol integer.
        runtime_protocol: u32,
    },
    /// The runtime speaks an older protocol: update the companion.
    UpdateCompanion {
        /// The runtime's version string.
        runtime_version: String,
        /// Our protocol integer.
        extension_protocol: u32,
        /// The runtime's protocol integer.
        runtime_protocol: u32,
    },
    /// Same protocol integer but the runtime lacks capabilities we call (or sent none):
    /// update the companion.
    CompanionLacks {
        /// The runtime's version string.
        runtime_version: String,
        /// The [`REQUIRED_CAPABILITIES`] it does not list.
        missing: Vec<String>,
    },
    /// Same protocol integer but the runtime said `compatible: false`.
    RuntimeRefused {
        /// The runtime's version string.
        runtime_version: String,
    },
    /// The runtime the host started refused to start (`host_error
    /// runtime_refused_to_start`, e.g. a `state.db` from a newer herdr-companion).
    RuntimeWontStart {
        /// The host's message: the runtime's reason and its fix.
        message: String,
    },
}

/// Where the link is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkState {
    /// [`Input::Start`] has not arrived yet.
    Idle,
    /// Offline; the next attempt happens at `retry_at`.
    Disconnected {
        /// When to open the next port.
        retry_at: Millis,
        /// Why we are offline.
        reason: OfflineReason,
    },
    /// `OpenPort` emitted, waiting for [`Input::PortOpened`].
    Connecting {
        /// The port being opened.
        port: PortGeneration,
        /// Give up at this time.
        deadline: Millis,
    },
    /// Port open, `hello` sent, waiting for its answer.
    Handshaking {
        /// The open port.
        port: PortGeneration,
        /// Id of the `hello` request.
        hello_id: String,
        /// Give up at this time.
        deadline: Millis,
    },
    /// Handshake done.
    Connected {
        /// The open port.
        port: PortGeneration,
        /// The runtime's version string.
        runtime_version: String,
        /// The runtime's latest Herdr state.
        herdr: HerdrStatus,
    },
    /// Versions disagree; no retries until [`Input::RetryNow`].
    Incompatible {
        /// Which side to update.
        why: Incompatibility,
    },
}

/// A `ping` waiting for its `pong`.
#[derive(Debug, Clone)]
struct PendingProbe {
    /// The page's probe id.
    probe: ProbeId,
    /// When to report [`ProbeOutcome::TimedOut`].
    deadline: Millis,
}

/// The companion link state machine.
///
/// Driver contract (the shell follows it in this order):
/// 1. Feed every fact with [`handle`](Self::handle)`(now, input)`: [`Input::Start`] when
///    the worker starts, port events tagged with the generation from
///    [`Output::OpenPort`], page requests.
/// 2. After each `handle`, drain [`poll`](Self::poll) until `None` and carry each output
///    out in order (an `OpenPort` must be followed by `PortOpened` or `PortClosed`).
/// 3. Arm one timer for [`next_deadline`](Self::next_deadline) and feed
///    [`Input::Timer`] when it fires (early or repeated timers are harmless).
/// 4. Render [`hud`](Self::hud) whenever [`Output::HudChanged`] is drained.
#[derive(Debug)]
pub struct CompanionLink {
    /// Current state.
    state: LinkState,
    /// Version string sent in `hello`.
    extension_version: String,
    /// Delay before the next retry.
    backoff: Millis,
    /// Generation of the most recently opened port.
    generation: u32,
    /// Counter for request ids.
    next_request: u64,
    /// Pings in flight, by request id.
    probes: VecMap<String, PendingProbe>,
    /// Outputs not yet polled.
    outputs: VecDeque<Output>,
}

impl CompanionLink {
    /// A link that does nothing until [`Input::Start`].
    pub fn new(extension_version: impl Into<String>) -> Self {
        Self {
            state: LinkState::Idle,
            extension_version: extension_version.into(),
            backoff: INITIAL_BACKOFF,
            generation: 0,
            next_request: 0,
            probes: VecMap::new(),
            outputs: VecDeque::new(),
        }
    }

    /// Current state (for views and tests).
    pub fn state(&self) -> &LinkState {
        &self.state
    }

    /// The delay the next failure will wait before retrying.
    pub fn current_backoff(&self) -> Millis {
        self.backoff
    }

    /// The HUD view model of the current state.
    pub fn hud(&self) -> HudView {
        hud::view_of(&self.state)
    }

    /// Next decision to carry out, if any.
    pub fn poll(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// The earliest time at which [`Input::Timer`] has something to do.
    pub fn next_deadline(&self) -> Option<Millis> {
        let state_deadline = match &self.state {
            LinkState::Disconnected { retry_at, .. } => Some(*retry_at),
            LinkState::Connecting { deadline, .. } | LinkState::Handshaking { deadline, .. } => Some(*deadline),
            LinkState::Idle | LinkState::Connected { .. } | LinkState::Incompatible { .. } => None,
        };
        let probe_deadline = self.probes.values().map(|pending| pending.deadline).min();
        match (state_deadline, probe_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Feeds one fact at time `now`.
    pub fn handle(&mut self, now: Millis, input: Input) {
        let hud_before = self.hud();
        match input {
            Input::Start => {
                if self.state == LinkState::Idle {
                    self.open_port(now);
                }
            }
            Input::RetryNow => match self.state {
                LinkState::Idle | LinkState::Disconnected { .. } | LinkState::Incompatible { .. } => {
                    self.backoff = INITIAL_BACKOFF;
                    self.open_port(now);
                }
                LinkState::Connecting { .. } | LinkState::Handshaking { .. } | LinkState::Connected { .. } => {}
            },
            Input::PortOpened { port } => {
                if let LinkState::Connecting { port: current, .. } = self.state {
                    if current == port {
                        let hello_id = self.request_id("hello");
                        self.outputs.push_back(Output::Send {
                            port,
                            request: Request::Hello {
                                id: hello_id.clone(),
                                extension_version: self.extension_version.clone(),
                                protocol: PROTOCOL_VERSION,
                                requires: REQUIRED_CAPABILITIES.iter().map(|name| (*name).to_owned()).collect(),
                            },
                        });
                        self.state = LinkState::Handshaking { port, hello_id, deadline: now + HELLO_TIMEOUT };
                    }
                }
            }
            Input::PortClosed { port, error } => {
                if self.open_port_generation() == Some(port) {
                    self.go_offline(now, OfflineReason::from_port_error(error.as_deref()), false);
                }
            }
            Input::Message { port, message } => {
                if self.open_port_generation() == Some(port) {
                    self.on_message(now, port, message);
                }
            }
            Input::ProbeRequested { probe } => {
                if let LinkState::Connected { port, .. } = self.state {
                    let id = self.request_id("ping");
                    self.probes.insert(id.clone(), PendingProbe { probe, deadline: now + PROBE_TIMEOUT });
                    self.outputs.push_back(Output::Send { port, request: Request::Ping { id } });
                } else {
                    self.outputs.push_back(Output::ProbeFinished { probe, outcome: ProbeOutcome::CompanionOffline });
                }
            }
            Input::Timer => self.on_timer(now),
        }
        if self.hud() != hud_before {
            self.outputs.push_back(Output::HudChanged);
        }
    }

    fn on_timer(&mut self, now: Millis) {
        let expired: Vec<String> = self.probes.iter().filter(|(_, pending)| pending.deadline <= now).map(|(id, _)| id.clone()).collect();
        for id in expired {
            if let Some(pending) = self.probes.remove(&id) {
                self.outputs.push_back(Output::ProbeFinished { probe: pending.probe, outcome: ProbeOutcome::TimedOut });
            }
        }
        match self.state {
            LinkState::Disconnected { retry_at, .. } if retry_at <= now => self.open_port(now),
            LinkState::Connecting { deadline, .. } | LinkState::Handshaking { deadline, .. } if deadline <= now => {
                self.go_offline(now, OfflineReason::HelloTimedOut, true);
            }
            _ => {}
        }
    }

    fn on_message(&mut self, now: Millis, port: PortGeneration, message: RuntimeMessage) {
        match message {
            RuntimeMessage::HelloAnswer { id, runtime_version, protocol, compatible, capabilities, herdr } => {
                let LinkState::Handshaking { hello_id, .. } = &self.state else {
                    return;
                };
                if *hello_id != id {
                    return;
                }
                let why = if protocol > PROTOCOL_VERSION {
                    Some(Incompatibility::UpdateExtension {
                        runtime_version: runtime_version.clone(),
                        extension_protocol: PROTOCOL_VERSION,
                        runtime_protocol: protocol,
                    })
                } else if protocol < PROTOCOL_VERSION {
                    Some(Incompatibility::UpdateCompanion {
                        runtime_version: runtime_version.clone(),
                        extension_protocol: PROTOCOL_VERSION,
                        runtime_protocol: protocol,
                    })
                } else if let Some(missing) = missing_capabilities(capabilities.as_deref()) {
                    Some(Incompatibility::CompanionLacks { runtime_version: runtime_version.clone(), missing })
                } else if !compatible {
                    Some(Incompatibility::RuntimeRefused { runtime_version: runtime_version.clone() })
                } else {
                    None
                };
                match why {
                    Some(why) => {
                        self.outputs.push_back(Output::ClosePort { port });
                        self.state = LinkState::Incompatible { why };
                    }
                    None => {
                        self.backoff = INITIAL_BACKOFF;
                        self.state = LinkState::Connected { port, runtime_version, herdr };
                    }
                }
            }
            RuntimeMessage::Pong { id } => {
                if let Some(pending) = self.probes.remove(&id) {
                    self.outputs.push_back(Output::ProbeFinished { probe: pending.probe, outcome: ProbeOutcome::Answered });
                }
            }
            RuntimeMessage::ErrorAnswer { id, code: _, message } => {
                if let Some(pending) = self.probes.remove(&id) {
                    self.outputs.push_back(Output::ProbeFinished { probe: pending.probe, outcome: ProbeOutcome::Refused { message } });
                } else if matches!(&self.state, LinkState::Handshaking { hello_id, .. } if *hello_id == id) {
                    self.go_offline(now, OfflineReason::HelloRefused { message }, true);
                }
            }
            RuntimeMessage::HerdrState(status) => {
                if let LinkState::Connected { herdr, .. } = &mut self.state {
                    *herdr = status;
                }
            }
            RuntimeMessage::HostError { code, message } => {
                // Other host errors (bad_frame, frame_too_large, response_too_large) are
                // about one message; the host keeps running, so the link stays up.
                if code == HostErrorCode::RuntimeUnreachable {
                    self.go_offline(now, OfflineReason::RuntimeUnreachable { message }, true);
                } else if code == HostErrorCode::RuntimeRefusedToStart {
                    self.go_offline(now, OfflineReason::HostExited, true);
                    self.state = LinkState::Incompatible { why: Incompatibility::RuntimeWontStart { message } };
                }
            }
        }
    }

    /// The generation of the port that is open or being opened, if any.
    fn open_port_generation(&self) -> Option<PortGeneration> {
        match &self.state {
            LinkState::Connecting { port, .. } | LinkState::Handshaking { port, .. } | LinkState::Connected { port, .. } => Some(*port),
            LinkState::Idle | LinkState::Disconnected { .. } | LinkState::Incompatible { .. } => None,
        }
    }

    fn open_port(&mut self, now: Millis) {
        self.generation = self.generation.wrapping_add(1);
        let port = PortGeneration(self.generation);
        self.outputs.push_back(Output::OpenPort { port });
        self.state = LinkState::Connecting { port, deadline: now + HELLO_TIMEOUT };
    }

    /// Leaves any connected state; `close` says whether we must close the port ourselves
    /// (Chrome already closed it when the input was `PortClosed`).
    fn go_offline(&mut self, now: Millis, reason: OfflineReason, close: bool) {
        if close {
            if let Some(port) = self.open_port_generation() {
                self.outputs.push_back(Output::ClosePort { port });
            }
        }
        let lost = std::mem::take(&mut self.probes);
        for pending in lost.into_values() {
            self.outputs.push_back(Output::ProbeFinished { probe: pending.probe, outcome: ProbeOutcome::ConnectionLost });
        }
        self.state = LinkState::Disconnected { retry_at: now + self.backoff, reason };
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    fn request_id(&mut self, prefix: &str) -> String {
        self.next_request += 1;
        format!("{prefix}-{}", self.next_request)
    }
}

/// The [`REQUIRED_CAPABILITIES`] a runtime's `capabilities` lacks (`None` when it has all);
/// an answer without the list lacks every one of them.
fn missing_capabilities(capabilities: Option<&[String]>) -> Option<Vec<String>> {
    let missing: Vec<String> = REQUIRED_CAPABILITIES
        .iter()
        .filter(|needed| !capabilities.is_some_and(|served| served.iter().any(|name| name == *needed)))
        .map(|needed| (*needed).to_owned())
        .collect();
    (!missing.is_empty()).then_some(missing)
}
