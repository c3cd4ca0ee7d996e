//! z.ai (`https://chat.z.ai`): an Open WebUI-derived front end, one known generation.
//!
//! Sources (`../shared/SITES-2026.md` §2): composer `#chat-input` (a textarea), Send
//! `#send-message-button` with `form button[type=submit]` as fallback (MSA z.adapter
//! 2025-08-17; HDR zai.js verified 2026-08-03); replies `.markdown-prose`,
//! `[class*=chat-assistant] [class*=markdown]`, `[class*=message-content]`,
//! `[class*=prose]`; user bubbles `.user-message`, `.chat-user` (HDR, MSA); message
//! wrappers `div#message-<id>` (upstream Open WebUI); "still working" only by the reply's
//! text ("Thinking…", 思考中 …, HDR). URLs `/c/<uuid>`.
//!
//! Invariants:
//! - No source records a Stop control, a streaming attribute, an error card, a permission
//!   card or a rate-limit notice: Stop is looked for by its whole label inside the
//!   composer form only (unverified), and the other lists are empty, so those facts
//!   report "none" rather than a guess.
//! - Detection needs `#chat-input` or `#send-message-button`.

use super::{Detect, Facts, Generation, LabelSet, Probe, Scope, SiteProfile, DISABLED, NOT_STOP, STREAMING_RECHECK_MS};

/// Open WebUI layout of chat.z.ai.
pub const OPEN_WEBUI: Generation = Generation {
    id: "zai.openwebui",
    detect: Detect { all: &[], any: &["#chat-input", "#send-message-button"], none: &[] },
    facts: Facts {
        composer: &[Probe::doc("#chat-input"), Probe { css: "form textarea", unique: true, ..Probe::DOC }],
        root: &[Probe::within(Scope::Closest, "form")],
        send: &[Probe::within(Scope::Root, "#send-message-button"), Probe::within(Scope::Root, "button[type=\"submit\"]")],
        stop: &[Probe { css: "button[aria-label]", scope: Scope::Root, label: Some("stop"), ..Probe::DOC }],
        turn_list: &[],
        turn: &[Probe::doc("div[id^=\"message-\"]")],
        user: &[Probe::doc(".chat-user"), Probe::doc(".user-message")],
        assistant: &[Probe::doc(".chat-assistant"), Probe::doc("[class*=\"chat-assistant\"]")],
        message_id: &[Probe { css: "[id^=\"message-\"]", scope: Scope::Message, attr: Some("id"), ..Probe::DOC }],
        assistant_body: &[
            Probe::within(Scope::Last, ".markdown-prose"),
            Probe::within(Scope::Last, "[class*=\"markdown\"]"),
            Probe::within(Scope::Last, "[class*=\"message-content\"]"),
            Probe::within(Scope::Last, "[class*=\"prose\"]"),
        ],
        streaming: &[Probe { css: ".markdown-prose", scope: Scope::Last, text: Some("busy"), ..Probe::DOC }],
        complete: &[],
        thread_error: &[],
        retry: &[],
        permission_card: &[],
        rate_limit: &[],
    },
    labels: &[
        LabelSet { key: "stop", en: &["Stop"], zh: &["停止"] },
        LabelSet { key: "busy", en: &["Thinking…", "generating", "loading…"], zh: &["思考中", "生成中", "加载中"] },
        NOT_STOP,
    ],
    never: &[],
    disabled: DISABLED,
    pending_until_complete: false,
    checked: "2026-08-03",
    source: "SITES-2026 §2: HDR zai.js verified 2026-08-03; MSA z.adapter 2025-08-17; upstream Open WebUI",
};

/// z.ai's profile.
pub const PROFILE: SiteProfile = SiteProfile {
    site: "zai",
    origin: "https://chat.z.ai",
    generations: &[OPEN_WEBUI],
    streaming_recheck_ms: STREAMING_RECHECK_MS,
    turn_index_attr: None,
    app_mentions: None,
};
