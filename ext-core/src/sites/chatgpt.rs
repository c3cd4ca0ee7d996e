//! ChatGPT (`https://chatgpt.com`): three layout generations served side by side in 2026.
//!
//! Sources (`../shared/SITES-2026.md` §1, tags as defined there):
//! - `chatgpt.classic` — `article[data-testid^=conversation-turn-]` turns, `#prompt-textarea`
//!   (ProseMirror), test-id Send / Stop, one `#composer-submit-button` whose test id may
//!   flip between `send-button` and `stop-button` (HDR verified 2026-08-20; CJS; ORA
//!   2026-07-11; REFERENCE.md §3). This is what the e2e fixture renders.
//! - `chatgpt.section` — 2026-03 … 2026-08: turns became `section` elements (OAE 2026-03,
//!   SAY PR #384 2026-06-20, DFD PR #236 2026-04-10), each wrapped in its own `div`;
//!   `data-turn-id` is reused across requests (COS live 2026-08-15); streaming prose has
//!   no `data-message-id`; `.result-streaming`; a message is complete when its copy action
//!   (`copy-turn-action-button` / "Copy message") mounts (COS, ORA).
//! - `chatgpt.thread` — 2026-09: `form[data-chatgpt-composer]` with
//!   `[data-composer-markdown][contenteditable][role=textbox]`, no `#prompt-textarea`,
//!   Send / Stop only by `aria-label`, turns `div[data-turn-key]` holding one unit per
//!   message (`data-chatgpt-search-unit-key="…:<n>:user|assistant"`), ids in
//!   `data-chatgpt-search-message-ids`, final when `data-chatgpt-selection-message-id`
//!   appears (OAE issue #515 2026-09-23; unattributed fixtures 2026-09-26); the failure
//!   card may have no `role="alert"` and sits beside a plain "Retry" (COS 2026-09-03).
//!
//! Invariants:
//! - `data-is-streaming` is not a ChatGPT attribute (SITES-2026 §1.3) and appears nowhere.
//! - Stop is found by test id anywhere (the ids are the composer's own) or by its whole
//!   label inside the composer form only; dictation, voice and read-aloud controls
//!   (`data-start-dictation`, `composer-speech-button`, "Dictate", "Stop reading", "Stop
//!   voice" …) are excluded by `never` and [`super::NOT_STOP_WORDS`] (ORA 0.16.0).
//! - The dictation button that fills the send slot of an empty composer is not Send.
//! - Detection: thread ⇔ its composer or `data-turn-key` turns and no classic marker;
//!   section ⇔ `section` turns and no thread marker; classic ⇔ `#prompt-textarea` or
//!   `article` turns and neither section nor thread markers. Mutually exclusive.
//! - App pills (`../shared/FIELD-NOTES-2026Q4.md` §1, herdr-mcp 2026-10-10): until early
//!   October 2026 `[data-inline-selection-pill][data-symbol="ecosystemMention"][data-keyword]`
//!   (name = its text), from 2026-10-10 `span[data-appearance="inline-mention"]` with
//!   `app-mention-name` / `app-mention-path`; both are read, in every layout generation (the
//!   pill markup changed on its own date, not with the layout). The `@` picker is a
//!   `[role="listbox"]` of `[role="option"]`s near the composer, opened only by trusted keys.
//! - The composer "+" (field notes §1, herdr-mcp `docs/_wip/v1.1-browser-adapter-platform.md`,
//!   2026-10-09/10; SITES-2026 §1.0(3), §1.1): `#composer-plus-btn` /
//!   `data-testid="composer-plus-btn"` until early October 2026 (CJS 2026-01-27, 2026-05-23),
//!   then no id: `aria-label="Add files and more"`, `data-composer-navigation-target=
//!   "add-context"`, no `aria-haspopup`, and it lists no Apps. No fact is found through it;
//!   `never` names both markups so it is never taken for Send or Stop.
//! - Radix menus open on `pointerdown` and a bare `click()` does nothing (same doc,
//!   2026-10-10): the adapter presses a picker option with a whole pointer sequence
//!   (pointerdown, mousedown, pointerup, mouseup, click).
//! - Exactly one click on Send is the submit primitive; `form.requestSubmit()` on a Project
//!   home was swallowed (same doc, 2026-10-10): the adapter never submits a form.
//! - Chinese labels for Stop, Copy, Allow / Deny and Retry are the UI's own words where
//!   a source recorded them and ChatGPT's zh-CN wording otherwise; no zh rate-limit
//!   wording is recorded, so that set has none.

use super::{
    AppMentions, AppPill, Detect, Facts, Generation, LabelSet, Probe, Scope, SiteProfile, DISABLED, NOT_STOP, STREAMING_RECHECK_MS,
};

/// Labels shared by the ChatGPT generations.
const LABELS: &[LabelSet] = &[
    LabelSet { key: "send", en: &["Send", "Send message", "Send prompt"], zh: &["发送", "发送消息", "发送提示"] },
    LabelSet { key: "stop", en: &["Stop", "Stop streaming", "Stop generating"], zh: &["停止", "停止生成", "停止流式传输"] },
    LabelSet { key: "copy", en: &["Copy message"], zh: &["复制消息"] },
    LabelSet { key: "retry", en: &["Retry", "Try again"], zh: &["重试"] },
    LabelSet { key: "allow", en: &["Allow"], zh: &["允许"] },
    LabelSet { key: "deny", en: &["Deny"], zh: &["拒绝"] },
    // Any Allow a permission card may offer, the plain one or not (SITES-2026 §1.7): the
    // page adapter reads a card found by any of them; only a plain Allow is ever clicked.
    LabelSet { key: "card_allow", en: &["Allow", "Always allow"], zh: &["允许", "始终允许"] },
    LabelSet {
        key: "thread_error",
        en: &[
            "Message delivery timed out",
            "Connection interrupted",
            "Unknown error occurred",
            "There was an error generating a response",
            "Error in message stream",
            "Network error",
            "Something went wrong",
        ],
        zh: &["消息发送超时", "连接已中断"],
    },
    // The thread error of S6, told apart from the others (SITES-2026 §1.6).
    LabelSet { key: "send_timeout", en: &["Message delivery timed out"], zh: &["消息发送超时"] },
    LabelSet {
        key: "rate_limit",
        en: &[
            "reached our limit of messages",
            "hit the Free plan limit",
            "sending messages too quickly",
            "Too many requests",
            "Too many concurrent requests",
            "reached the current usage cap",
            "creating conversations too fast",
        ],
        zh: &[],
    },
    // A reply the model is still thinking about (SITES-2026 §1.4: the "Thinking" shimmer,
    // "Pro thinking", the reasoning sidecar's label; 思考中 as HDR reads it): a short
    // assistant turn that names one of these while Stop is shown is progress, not a stall.
    LabelSet { key: "reasoning", en: &["Thinking", "Reasoning", "Pro thinking"], zh: &["思考中", "正在思考", "推理中"] },
    NOT_STOP,
];

/// Controls that are never Send or Stop: dictation and voice, and the composer's "+" (it
/// sits in the composer form beside Send; its old id until 2026-10, its own attribute and
/// label after — no single marker is relied on).
const NEVER: &[&str] = &[
    "[data-start-dictation]",
    "[data-testid*=\"speech\"]",
    "[data-testid*=\"dictat\"]",
    "[data-testid*=\"voice\"]",
    "#composer-plus-btn",
    "[data-testid=\"composer-plus-btn\"]",
    "[data-composer-navigation-target=\"add-context\"]",
    "[aria-label=\"Add files and more\"]",
];

const LABEL_BUTTON: &str = "button[aria-label]";

const fn labelled(scope: Scope, css: &'static str, label: &'static str) -> Probe {
    Probe { css, scope, label: Some(label), ..Probe::DOC }
}

const fn text(css: &'static str, key: &'static str) -> Probe {
    Probe { css, text: Some(key), ..Probe::DOC }
}

const fn id_attr(css: &'static str, attr: &'static str) -> Probe {
    Probe { css, scope: Scope::Message, attr: Some(attr), ..Probe::DOC }
}

/// Deny beside Allow: a permission card found by its labels (SITES-2026 §1.7, COS #349).
/// The card's buttons carry their label as text; excluding `aria-label`led buttons (every
/// message action has one) keeps this document-wide probe cheap on long chats.
const DENY_BESIDE_ALLOW: Probe = Probe { css: "button:not([aria-label])", label: Some("deny"), beside: Some("allow"), ..Probe::DOC };

/// An Allow of any kind, with or without a Deny beside it: a card that lacks its Deny (or
/// its plain Allow) is still a card waiting for the human, reported so the worker can say
/// why it is left alone. The same selector as [`DENY_BESIDE_ALLOW`], so the document-wide
/// look for a card stays one query.
const CARD_ALLOW_ANYWHERE: Probe = Probe { css: "button:not([aria-label])", label: Some("card_allow"), ..Probe::DOC };

const RATE_LIMIT: &[Probe] = &[
    text("[role=\"alert\"]", "rate_limit"),
    text("[data-testid=\"toast-error\"]", "rate_limit"),
    text("[class*=\"text-token-text-error\"]", "rate_limit"),
];

const CLASSIC_COMPOSER: &[Probe] = &[
    Probe::doc("#prompt-textarea"),
    Probe { css: "div.ProseMirror[role=\"textbox\"][contenteditable=\"true\"]", unique: true, ..Probe::DOC },
];

const CLASSIC_ROOT: &[Probe] =
    &[Probe::within(Scope::Closest, "form[data-type=\"unified-composer\"]"), Probe::within(Scope::Closest, "form")];

const TESTID_SEND: &[Probe] = &[
    Probe::within(Scope::Root, "button[data-testid=\"send-button\"]"),
    Probe::within(Scope::Root, "#composer-submit-button"),
    labelled(Scope::Root, LABEL_BUTTON, "send"),
];

const TESTID_STOP: &[Probe] = &[
    Probe::doc("button[data-testid=\"stop-button\"]"),
    Probe::doc("button[data-testid=\"composer-stop-button\"]"),
    labelled(Scope::Root, LABEL_BUTTON, "stop"),
];

const AUTHOR_USER: &[Probe] = &[Probe::doc("[data-message-author-role=\"user\"]"), Probe::doc("[data-turn=\"user\"]")];
const AUTHOR_ASSISTANT: &[Probe] = &[Probe::doc("[data-message-author-role=\"assistant\"]"), Probe::doc("[data-turn=\"assistant\"]")];

const COPY_ACTION: &[Probe] =
    &[Probe::within(Scope::Last, "button[data-testid=\"copy-turn-action-button\"]"), labelled(Scope::Last, LABEL_BUTTON, "copy")];

const CLASSIC_RETRY: &[Probe] =
    &[Probe::doc("button[data-testid=\"regenerate-thread-error-button\"]"), labelled(Scope::Doc, "button", "retry")];

/// Classic: `article` turns, `#prompt-textarea`, test-id Send / Stop.
pub const CLASSIC: Generation = Generation {
    id: "chatgpt.classic",
    detect: Detect {
        all: &[],
        any: &["#prompt-textarea", "article[data-testid^=\"conversation-turn-\"]"],
        none: &["section[data-testid^=\"conversation-turn-\"]", "section[data-turn-id]", "[data-turn-key]", "form[data-chatgpt-composer]"],
    },
    facts: Facts {
        composer: CLASSIC_COMPOSER,
        root: CLASSIC_ROOT,
        send: TESTID_SEND,
        stop: TESTID_STOP,
        turn_list: &[],
        turn: &[Probe::doc("article[data-testid^=\"conversation-turn-\"]"), Probe::doc("[data-testid^=\"conversation-turn-\"]")],
        user: AUTHOR_USER,
        assistant: AUTHOR_ASSISTANT,
        message_id: &[id_attr("[data-message-id]", "data-message-id")],
        assistant_body: &[Probe::within(Scope::Last, ".markdown"), Probe::within(Scope::Last, ".prose")],
        streaming: &[
            Probe::within(Scope::Tail, ".result-streaming"),
            Probe::within(Scope::Tail, "[data-message-author-role=\"assistant\"][aria-busy=\"true\"]"),
        ],
        complete: COPY_ACTION,
        thread_error: &[
            Probe::doc("[data-testid=\"regenerate-thread-error-button\"]"),
            text("[role=\"alert\"]", "thread_error"),
            text("[class*=\"text-token-text-error\"]", "thread_error"),
        ],
        retry: CLASSIC_RETRY,
        permission_card: &[
            Probe::doc("[data-testid=\"tool-action-buttons\"]"),
            Probe::doc("[data-testid=\"tool-approval-card\"]"),
            DENY_BESIDE_ALLOW,
            CARD_ALLOW_ANYWHERE,
        ],
        rate_limit: RATE_LIMIT,
    },
    labels: LABELS,
    never: NEVER,
    disabled: DISABLED,
    pending_until_complete: false,
    checked: "2026-08-20",
    source: "SITES-2026 §1: HDR verified 2026-08-20; CJS; ORA 2026-07-11; REFERENCE.md §3",
};

/// Section (2026-03 … 08): `section` turns in their own wrappers, `.result-streaming`,
/// completion by the copy action; otherwise the classic facts.
pub const SECTION: Generation = Generation {
    id: "chatgpt.section",
    detect: Detect {
        all: &[],
        any: &["section[data-testid^=\"conversation-turn-\"]", "section[data-turn-id]"],
        none: &["article[data-testid^=\"conversation-turn-\"]", "[data-turn-key]", "form[data-chatgpt-composer]"],
    },
    facts: Facts {
        turn: &[
            Probe::doc("section[data-testid^=\"conversation-turn-\"]"),
            Probe::doc("section[data-turn-id]"),
            Probe::doc("[data-testid^=\"conversation-turn-\"]"),
        ],
        assistant_body: &[
            Probe::within(Scope::Last, ".markdown"),
            Probe::within(Scope::Last, "[data-message-author-role=\"assistant\"] .whitespace-pre-wrap"),
        ],
        ..CLASSIC.facts
    },
    pending_until_complete: true,
    checked: "2026-08-15",
    source: "SITES-2026 §1: OAE 2026-03; DFD PR #236 2026-04-10; SAY PR #384 2026-06-20; COS live 2026-08-15; ORA",
    ..CLASSIC
};

const THREAD_COMPOSER_CSS: &str = "form[data-chatgpt-composer] [data-composer-markdown][contenteditable=\"true\"][role=\"textbox\"]";

/// Thread (2026-09): `form[data-chatgpt-composer]`, label-only Send / Stop,
/// `div[data-turn-key]` turns, final when `data-chatgpt-selection-message-id` appears.
pub const THREAD: Generation = Generation {
    id: "chatgpt.thread",
    detect: Detect {
        all: &[],
        any: &["form[data-chatgpt-composer] [data-composer-markdown][contenteditable][role=\"textbox\"]", "[data-turn-key]"],
        none: &["#prompt-textarea", "[data-testid^=\"conversation-turn-\"]"],
    },
    facts: Facts {
        composer: &[
            Probe::doc(THREAD_COMPOSER_CSS),
            Probe { css: "[data-composer-markdown][contenteditable=\"true\"]", unique: true, ..Probe::DOC },
        ],
        root: &[Probe::within(Scope::Closest, "form[data-chatgpt-composer]"), Probe::within(Scope::Closest, "form")],
        send: &[labelled(Scope::Root, LABEL_BUTTON, "send")],
        stop: &[labelled(Scope::Root, "button[type=\"button\"][aria-label]", "stop"), labelled(Scope::Root, LABEL_BUTTON, "stop")],
        turn_list: &[],
        turn: &[Probe::doc("div[data-turn-key]"), Probe::doc("[data-turn-key]"), Probe::doc("[data-content-search-turn-key]")],
        user: &[
            Probe::doc("[data-chatgpt-search-unit-key$=\":user\"]"),
            Probe::doc("[data-content-search-unit-key$=\":user\"]"),
            Probe::doc("[data-user-message-bubble]"),
        ],
        assistant: &[
            Probe::doc("[data-chatgpt-search-unit-key$=\":assistant\"]"),
            Probe::doc("[data-content-search-unit-key$=\":assistant\"]"),
        ],
        message_id: &[
            id_attr("[data-chatgpt-search-message-ids]", "data-chatgpt-search-message-ids"),
            id_attr("[data-chatgpt-selection-message-id]", "data-chatgpt-selection-message-id"),
        ],
        assistant_body: &[
            Probe::within(Scope::Last, "[data-markdown-text-style=\"assistant-message\"]"),
            Probe::within(Scope::Last, "[data-markdown-text-style]"),
        ],
        // No streaming attribute: the last reply streams until it is final.
        streaming: &[],
        complete: &[Probe::within(Scope::Last, "[data-chatgpt-selection-message-id]")],
        thread_error: &[
            text("[role=\"alert\"]", "thread_error"),
            Probe { css: "div:has(> button)", text: Some("thread_error"), beside: Some("retry"), ..Probe::DOC },
        ],
        retry: &[labelled(Scope::Doc, "button", "retry")],
        permission_card: &[DENY_BESIDE_ALLOW, Probe::doc("[data-testid=\"tool-action-buttons\"]"), CARD_ALLOW_ANYWHERE],
        rate_limit: RATE_LIMIT,
    },
    labels: LABELS,
    never: NEVER,
    disabled: DISABLED,
    pending_until_complete: true,
    checked: "2026-09-26",
    source: "SITES-2026 §1: OAE issue #515 2026-09-23; unattributed fixtures 2026-09-26; COS 2026-09-03",
};

/// The App pills (newest markup first) and the `@` picker. The picker is a listbox inside
/// the composer's form, else anywhere (a portal); the adapter takes only one that opened
/// after it typed `@<keyword>`. `data-app-keyword` on an option is the e2e fixture's; a real
/// option is matched by its text, the App's name.
pub const APP_MENTIONS: AppMentions = AppMentions {
    pills: &[
        AppPill {
            css: "span[data-appearance=\"inline-mention\"][app-mention-name][app-mention-path]",
            keyword_attr: None,
            name_attr: Some("app-mention-name"),
            path_attr: Some("app-mention-path"),
        },
        AppPill {
            css: "[data-inline-selection-pill][data-symbol=\"ecosystemMention\"][data-keyword]",
            keyword_attr: Some("data-keyword"),
            name_attr: None,
            path_attr: None,
        },
    ],
    picker: &[Probe::within(Scope::Root, "[role=\"listbox\"]"), Probe::doc("[role=\"listbox\"]")],
    option: "[role=\"option\"]",
    option_keyword_attr: "data-app-keyword",
    wait_ms: 3000,
};

/// ChatGPT's profile; the newest generation is tried first.
pub const PROFILE: SiteProfile = SiteProfile {
    site: "chatgpt",
    origin: "https://chatgpt.com",
    generations: &[THREAD, SECTION, CLASSIC],
    streaming_recheck_ms: STREAMING_RECHECK_MS,
    turn_index_attr: Some("data-testid"),
    app_mentions: Some(&APP_MENTIONS),
};
