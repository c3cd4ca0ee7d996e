//! The HUD view model: what every surface (page HUD, side panel) shows about the
//! companion and Herdr (R: A2, O1).
//!
//! Pure functions from machine state to a [`HudView`]. Text is never built here: each
//! line is an i18n message key of `extension/_locales/*/messages.json` plus its
//! substitutions (`chrome.i18n.getMessage(key, substitutions)`), so the content script
//! renders without deciding anything.
//!
//! Invariants:
//! - Every line a user sees when something is wrong says what happened and what to do
//!   (the message texts carry the "what to do").
//! - Herdr's state is shown only from a connected companion; otherwise it is "unknown".
//! - `retry_companion` is offered exactly when the link is offline or incompatible;
//!   `round_trip_test` exactly when it is connected.

use serde::Serialize;

use crate::companion_link::{HerdrConnection, HerdrStatus, Incompatibility, LinkState, OfflineReason, ProbeOutcome};
use crate::json_read::WriteJson;

/// How a line should look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    /// Working as intended.
    Good,
    /// Something is in progress.
    Pending,
    /// Degraded; the product keeps trying on its own.
    Warning,
    /// Needs the user.
    Bad,
}

/// One status line: an i18n key, its substitutions and a tone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct StatusLine {
    /// Message key in `messages.json`.
    pub key: &'static str,
    /// `$1`, `$2`, … substitutions.
    pub substitutions: Vec<String>,
    /// How it should look.
    pub tone: Tone,
}

/// What a HUD button does when pressed; sent back by the page as `{"type":"action","action":…}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum ActionId {
    /// Reconnect to the companion now.
    RetryCompanion,
    /// Measure worker → host → runtime → worker round trip.
    RoundTripTest,
}

impl ActionId {
    /// Parses the wire name sent back by a page.
    pub fn from_wire(name: &str) -> Option<Self> {
        match name {
            "retry_companion" => Some(ActionId::RetryCompanion),
            "round_trip_test" => Some(ActionId::RoundTripTest),
            _ => None,
        }
    }
}

/// A HUD button.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, crate::json_read::WriteJson)]
pub struct HudAction {
    /// What it does.
    pub id: ActionId,
    /// Message key of its label.
    pub label: &'static str,
}

/// Everything a HUD renders.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct HudView {
    /// The companion (native host + runtime) line.
    pub companion: StatusLine,
    /// The Herdr line.
    pub herdr: StatusLine,
    /// Buttons, in display order.
    pub actions: Vec<HudAction>,
}

fn line(key: &'static str, substitutions: Vec<String>, tone: Tone) -> StatusLine {
    StatusLine { key, substitutions, tone }
}

/// The view of a companion link state.
pub fn view_of(state: &LinkState) -> HudView {
    let unknown_herdr = || line("herdrUnknown", Vec::new(), Tone::Pending);
    let retry = HudAction { id: ActionId::RetryCompanion, label: "actionRetryCompanion" };
    match state {
        LinkState::Idle => {
            HudView { companion: line("companionStarting", Vec::new(), Tone::Pending), herdr: unknown_herdr(), actions: Vec::new() }
        }
        LinkState::Connecting { .. } | LinkState::Handshaking { .. } => {
            HudView { companion: line("companionConnecting", Vec::new(), Tone::Pending), herdr: unknown_herdr(), actions: Vec::new() }
        }
        LinkState::Connected { runtime_version, herdr, .. } => HudView {
            companion: line("companionConnected", vec![runtime_version.clone()], Tone::Good),
            herdr: herdr_line(herdr),
            actions: vec![HudAction { id: ActionId::RoundTripTest, label: "actionRoundTripTest" }],
        },
        LinkState::Disconnected { reason, .. } => HudView { companion: offline_line(reason), herdr: unknown_herdr(), actions: vec![retry] },
        LinkState::Incompatible { why } => HudView { companion: incompatible_line(why), herdr: unknown_herdr(), actions: vec![retry] },
    }
}

fn offline_line(reason: &OfflineReason) -> StatusLine {
    match reason {
        OfflineReason::HostNotInstalled => line("companionNotInstalled", Vec::new(), Tone::Bad),
        OfflineReason::HostForbidden => line("companionForbidden", Vec::new(), Tone::Bad),
        OfflineReason::HostExited => line("companionExited", Vec::new(), Tone::Warning),
        OfflineReason::RuntimeUnreachable { message } => line("companionRuntimeUnreachable", vec![message.clone()], Tone::Bad),
        OfflineReason::HelloTimedOut => line("companionNoAnswer", Vec::new(), Tone::Warning),
        OfflineReason::HelloRefused { message } => line("companionHelloRefused", vec![message.clone()], Tone::Bad),
        OfflineReason::PortError { message } => line("companionPortError", vec![message.clone()], Tone::Warning),
    }
}

fn incompatible_line(why: &Incompatibility) -> StatusLine {
    match why {
        Incompatibility::UpdateExtension { runtime_version, extension_protocol, runtime_protocol } => line(
            "hudVersionMismatchExtension",
            vec![extension_protocol.to_string(), runtime_version.clone(), runtime_protocol.to_string()],
            Tone::Bad,
        ),
        Incompatibility::UpdateCompanion { runtime_version, extension_protocol, runtime_protocol } => line(
            "hudVersionMismatch",
            vec![runtime_version.clone(), runtime_protocol.to_string(), extension_protocol.to_string()],
            Tone::Bad,
        ),
        Incompatibility::CompanionLacks { runtime_version, missing } => {
            line("hudVersionMismatchMissing", vec![runtime_version.clone(), missing.join(", ")], Tone::Bad)
        }
        Incompatibility::RuntimeRefused { runtime_version } => line("companionRuntimeRefused", vec![runtime_version.clone()], Tone::Bad),
        Incompatibility::RuntimeWontStart { message } => line("companionRuntimeWontStart", vec![message.clone()], Tone::Bad),
    }
}

/// The Herdr line of a connected companion.
pub fn herdr_line(herdr: &HerdrStatus) -> StatusLine {
    let or_unknown = |value: &Option<String>| value.clone().unwrap_or_else(|| "?".to_owned());
    match herdr.state {
        HerdrConnection::Connected => line(
            "herdrConnected",
            vec![or_unknown(&herdr.version), herdr.protocol.map_or_else(|| "?".to_owned(), |p| p.to_string())],
            Tone::Good,
        ),
        HerdrConnection::NotRunning => line("herdrNotRunning", vec![herdr.socket.clone()], Tone::Warning),
        HerdrConnection::UnsupportedProtocol => {
            line("herdrUnsupportedProtocol", vec![herdr.protocol.map_or_else(|| "?".to_owned(), |p| p.to_string())], Tone::Bad)
        }
        HerdrConnection::PermissionDenied => line("herdrPermissionDenied", vec![herdr.socket.clone()], Tone::Bad),
        HerdrConnection::Error => line("herdrError", vec![or_unknown(&herdr.detail)], Tone::Bad),
    }
}

/// The line reporting a finished round-trip self-test; `elapsed_ms` is the shell's
/// measurement (only shown when the runtime answered, with two decimals).
pub fn round_trip_line(outcome: &ProbeOutcome, elapsed_ms: f64) -> StatusLine {
    match outcome {
        ProbeOutcome::Answered => line("roundTripAnswered", vec![two_decimals(elapsed_ms)], Tone::Good),
        ProbeOutcome::CompanionOffline => line("roundTripOffline", Vec::new(), Tone::Warning),
        ProbeOutcome::ConnectionLost => line("roundTripConnectionLost", Vec::new(), Tone::Warning),
        ProbeOutcome::TimedOut => line("roundTripTimedOut", Vec::new(), Tone::Bad),
        ProbeOutcome::Refused { message } => line("roundTripRefused", vec![message.clone()], Tone::Bad),
    }
}

/// `ms` with two decimals (`12.35`), written with integer formatting: `{:.2}` on an `f64`
/// pulls core's float formatter (14 KB of wasm) into the bundle for this one line.
pub fn two_decimals(ms: f64) -> String {
    let hundredths = (ms.max(0.0) * 100.0).round() as u64;
    let fraction = hundredths % 100;
    let zero = if fraction < 10 { "0" } else { "" };
    format!("{}.{zero}{fraction}", hundredths / 100)
}

/// Every message key this module can produce (the locale files must define them all).
pub const MESSAGE_KEYS: &[&str] = &[
    "companionStarting",
    "companionConnecting",
    "companionConnected",
    "companionNotInstalled",
    "companionForbidden",
    "companionExited",
    "companionRuntimeUnreachable",
    "companionNoAnswer",
    "companionHelloRefused",
    "companionPortError",
    "hudVersionMismatch",
    "hudVersionMismatchMissing",
    "hudVersionMismatchExtension",
    "companionRuntimeRefused",
    "companionRuntimeWontStart",
    "herdrUnknown",
    "herdrConnected",
    "herdrNotRunning",
    "herdrUnsupportedProtocol",
    "herdrPermissionDenied",
    "herdrError",
    "actionRetryCompanion",
    "actionRoundTripTest",
    "roundTripAnswered",
    "roundTripOffline",
    "roundTripConnectionLost",
    "roundTripTimedOut",
    "roundTripRefused",
];

// The worker writes the HUD view with these writers (`crate::json_read`), not serde's
// derived code; serde's `Serialize` (tests, native tools) writes the same.
