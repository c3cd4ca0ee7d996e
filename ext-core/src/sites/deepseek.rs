//! DeepSeek (`https://chat.deepseek.com`): one known generation, built on the `ds-*`
//! design system with hashed class names beside it.
//!
//! Sources (`../shared/SITES-2026.md` §3): composer a `textarea` (`name=search`; HDR
//! 2026-08-03, DSB 2026-10-04, AWE 2025-09-10); Send **and** Stop are one
//! `div[role=button].ds-button--primary.ds-button--filled.ds-button--circle` without
//! label whose SVG path alone differs — `M8.3125 0.980206` (up arrow) is Send,
//! `M2 4.88C2 3.68009` (rounded square) is Stop (DSB stop-button dumps 2026-10-04, OCL
//! #2092 2026-07-06); `ds-button--disabled` on an idle, empty composer is not a
//! generation signal; while thinking the circle shows `div.ds-loading` (DSB 2026-10-05);
//! messages `.ds-message`, assistant body `.ds-markdown.ds-assistant-message-main-content`,
//! user text `.ds-collapsible-text` (HDR, DSB, DUR 2026-08-13); virtual list rows
//! `[data-virtual-list-item-key]` or `.ds-virtual-list-visible-items > *` (DSB, OCL).
//! URLs `/a/chat/s/<uuid>`.
//!
//! Invariants:
//! - Send and Stop are told apart only by the icon path prefix ([`super::Probe::icon`]);
//!   a candidate that matches the Stop icon is never Send.
//! - No hashed class (`_9663006`, `fbb737a4` …) is used: they drift between builds.
//! - No source records a completion marker, an error card, a permission card or a
//!   rate-limit notice; those lists are empty and report "none".

use super::{Detect, Facts, Generation, Probe, Scope, SiteProfile, DISABLED, NOT_STOP, STREAMING_RECHECK_MS};

const CIRCLE: &str = "div[role=\"button\"].ds-button--primary.ds-button--circle";

/// The `ds-*` layout of chat.deepseek.com.
pub const DS: Generation = Generation {
    id: "deepseek.ds",
    detect: Detect { all: &[], any: &[".ds-message", ".ds-button--circle", ".ds-virtual-list"], none: &[] },
    facts: Facts {
        composer: &[Probe::doc("textarea[name=\"search\"]"), Probe { css: "textarea", unique: true, ..Probe::DOC }],
        // No form is recorded around the composer; the printable list holds it (DSB).
        root: &[Probe::within(Scope::Closest, ".ds-virtual-list--printable")],
        send: &[Probe { css: CIRCLE, icon: Some("M8.3125 0.980206"), ..Probe::DOC }],
        stop: &[Probe { css: CIRCLE, icon: Some("M2 4.88C2 3.68009"), ..Probe::DOC }],
        turn_list: &[Probe::within(Scope::Closest, ".ds-virtual-list-visible-items")],
        turn: &[Probe::doc("[data-virtual-list-item-key]"), Probe::doc(".ds-virtual-list-visible-items > *"), Probe::doc(".ds-message")],
        user: &[Probe::doc(".ds-message:has(.ds-collapsible-text)"), Probe::doc(".ds-collapsible-text")],
        assistant: &[Probe::doc(".ds-message:has(.ds-assistant-message-main-content)"), Probe::doc(".ds-message:has(.ds-markdown)")],
        message_id: &[Probe {
            css: "[data-virtual-list-item-key]",
            scope: Scope::Message,
            attr: Some("data-virtual-list-item-key"),
            ..Probe::DOC
        }],
        assistant_body: &[
            Probe::within(Scope::Last, ".ds-markdown.ds-assistant-message-main-content"),
            Probe::within(Scope::Last, ".ds-markdown"),
        ],
        streaming: &[Probe::doc(".ds-button--circle .ds-loading")],
        complete: &[],
        thread_error: &[],
        retry: &[],
        permission_card: &[],
        rate_limit: &[],
    },
    labels: &[NOT_STOP],
    never: &[],
    disabled: &[DISABLED[0], DISABLED[1], ".ds-button--disabled"],
    pending_until_complete: false,
    checked: "2026-10-05",
    source: "SITES-2026 §3: DSB 2026-10-04 and 2026-10-05; DUR 2026-08-13; HDR 2026-08-03; OCL #2092 2026-07-06; AWE 2025-09-10",
};

/// DeepSeek's profile.
pub const PROFILE: SiteProfile = SiteProfile {
    site: "deepseek",
    origin: "https://chat.deepseek.com",
    generations: &[DS],
    streaming_recheck_ms: STREAMING_RECHECK_MS,
    turn_index_attr: None,
    app_mentions: None,
};
