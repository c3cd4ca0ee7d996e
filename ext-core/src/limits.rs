//! Size caps and sender rules for everything the extension receives (quality bar: "every
//! message from the page or the wire is validated and size-capped").
//!
//! Two kinds of input reach the worker:
//! - **page → worker** messages from the content script. A hostile page shapes them through
//!   its DOM (URL, turn ids, marker text), so a message over a cap is *rejected* whole (the
//!   shell logs a warning and drops it; nothing is truncated into state).
//! - **runtime → worker** messages on the native port. The runtime is ours, but the text in
//!   them (pane tails, labels, task results, error messages) comes from terminals and goes
//!   on into the HUD and the composer, so it is *clipped* to a cap before it is used.
//!
//! Ports are accepted only from this extension: a `page` port from a content script in a tab
//! on an allowed origin ([`ALLOWED_PAGE_ORIGINS`]), a `panel` port from one of our own
//! extension pages. Everything here is a product rule; the shell (ext-shell) applies it.
//!
//! Invariant: every cap counts Unicode scalar values (`char`s), never bytes, so a cap never
//! splits a character.

/// How deep a JSON value may nest where it crosses into the core from JavaScript (ext-shell's
/// walk of a JS value refuses a deeper one; serde_json's own parser stops at 128).
pub const MAX_JSON_DEPTH: u32 = 64;
/// Longest page URL a page may report (`page_facts.url`).
pub const MAX_URL_CHARS: usize = 2_048;
/// Longest id a page may send: delivery ids, turn ids, markers, workspace ids, scope keys,
/// action names.
pub const MAX_ID_CHARS: usize = 256;
/// Longest workspace label a page or panel may send (`bind.label`).
pub const MAX_LABEL_CHARS: usize = 256;
/// Most markers one `page_facts` may carry (the content script reads the last five turns).
pub const MAX_MARKERS: usize = 16;
/// Longest user-turn text a `turn_ended` or `llm_judge` action may carry (characters; the
/// page keeps the tail).
pub const MAX_TURN_USER_CHARS: usize = 6_000;
/// Longest assistant-reply text those messages may carry (characters; the page keeps the
/// tail).
pub const MAX_TURN_ASSISTANT_CHARS: usize = 12_000;
/// Most App pills one `page_facts.human_apps` may carry; each an object of exactly
/// `keyword`, `name` and `path`, strings of at most [`MAX_ID_CHARS`] (a longer list or
/// another shape refuses the whole message).
pub const MAX_APP_MENTIONS: usize = 8;
/// Most fields a page message may have (the widest, `page_facts`, has 17).
pub const MAX_PAGE_FIELDS: usize = 20;
/// Longest page message as JSON text; checked before it is parsed.
pub const MAX_PAGE_MESSAGE_BYTES: usize = 16 * 1_024;
/// Bytes of a `health_sample` message's JSON (a handful of numbers and the page load id).
pub const MAX_HEALTH_SAMPLE_BYTES: usize = 512;
/// The largest count a `health_sample` may carry in any field (callbacks, ms, tasks); a
/// bigger one refuses the sample.
pub const MAX_HEALTH_COUNT: u64 = 10_000_000;
/// The largest heap figure a `health_sample` may carry (256 GiB).
pub const MAX_HEALTH_HEAP_BYTES: u64 = 1 << 38;
/// Most bytes of JSON a `turn_ended` may be: the user turn and the reply, each up to the
/// journal's 64 KiB (escaping counted).
pub const MAX_TURN_MESSAGE_BYTES: usize = 192 * 1_024;
/// Most characters of `user_text` / `assistant_text` in a `turn_ended` (the page cuts a
/// longer turn to 64 KiB of UTF-8; the judge and the bridge read only the end).
pub const MAX_TURN_TEXT_CHARS: usize = 64 * 1_024;
/// Longest `queue_add` message as JSON text (the one page message that carries the user's
/// composer text: up to [`MAX_QUEUE_TEXT_CHARS`], each of which may take six bytes of JSON
/// as a `\u` escape, and the envelope). Checked before it is parsed.
pub const MAX_QUEUE_MESSAGE_BYTES: usize = 6 * MAX_QUEUE_TEXT_CHARS + 1_024;
/// Longest composer text a `queue_add` may carry, in characters: more than the queue's
/// merged limit, so that an over-long text is refused with the queue's message. A longer
/// composer text is sent cut to this many characters, with its whole length
/// (`whole_chars`), and refused with that length; the composer keeps it all.
pub const MAX_QUEUE_TEXT_CHARS: usize = crate::queue::MAX_MERGED_CHARS + 1_000;
// The page's cut text fits the message however it escapes, and the check of the longest
// message (`turn_ended`'s) comes first.
const _: () = assert!(MAX_QUEUE_MESSAGE_BYTES <= MAX_TURN_MESSAGE_BYTES);

/// Most facts one `page_diagnostics` may report (`sites::Facts` has 16).
pub const MAX_DIAGNOSTIC_FACTS: usize = 24;
/// Longest selector description a `page_diagnostics` fact may carry.
pub const MAX_SELECTOR_CHARS: usize = 256;
/// Most items of a `page_diagnostics` list (matching generations, CSP directives, delivery
/// outcomes).
pub const MAX_DIAGNOSTIC_ITEMS: usize = 8;
/// Longest short name in a `page_diagnostics` (site, generation, fact name, CSP directive,
/// delivery outcome).
pub const MAX_DIAGNOSTIC_NAME_CHARS: usize = 64;
/// Most generations a `page_diagnostics.usage` entry may name (a profile has at most 16).
pub const MAX_DIAGNOSTIC_GENS: usize = 16;
/// Highest fallback-chain index a `page_diagnostics.usage` entry may name (a profile fact
/// holds far fewer probes).
pub const MAX_DIAGNOSTIC_ENTRY: u64 = 255;
/// Most facts a `page_diagnostics.missing` may summarise (the needed facts that can be
/// missing: composer, root, user, message_id — with room for a profile's own).
pub const MAX_DIAGNOSTIC_MISSING: usize = 6;
/// Most elements a missing fact's structural summary walks (`page_diagnostics.missing`):
/// its `elements` and every count in it are at most this.
pub const MAX_STRUCTURE_ELEMENTS: u64 = 200;
/// Most keys of one map of a structural summary (`tags`, `roles`, `data_attrs`).
pub const MAX_STRUCTURE_KEYS: usize = 16;
/// Longest fact name a `page_facts.unresolved` may carry.
pub const MAX_FACT_NAME_CHARS: usize = 64;

/// Longest pane tail or task result text kept from the runtime (the runtime already bounds
/// tails to 2 000 characters; this is the extension's own bound).
pub const MAX_RUNTIME_TEXT_CHARS: usize = 4_000;
/// Longest short runtime string kept: labels, ids, states, error codes and messages,
/// prompt previews, verdicts.
pub const MAX_RUNTIME_SHORT_CHARS: usize = 512;
/// Longest JSON bridge protocol prompt (`bridge.prompt`) put into a composer.
pub const MAX_BRIDGE_PROMPT_CHARS: usize = 32_000;
/// Most items kept from one runtime list (workspaces, panes, inbox tasks).
pub const MAX_RUNTIME_LIST_ITEMS: usize = 256;

/// Most `companion_call`s one extension page port may have waiting for the companion; one
/// more is refused `too_many`.
pub const MAX_COMPANION_CALLS_PER_PORT: usize = 8;
/// How long a `companion_call` waits for the companion's answer before it is answered
/// `timed_out` (the runtime's own bound per request is 30 s; the pages ask small reads).
pub const COMPANION_CALL_TIMEOUT_MS: u64 = 10_000;
/// How long the options page's `retention.set` waits: longer than the runtime's own bound
/// per request (30 s), since the runtime stores the limits and may reclaim a first batch
/// within it (an answer the page stopped waiting for would hide limits that were stored).
pub const RETENTION_SET_TIMEOUT_MS: u64 = 40_000;

/// Checks a `companion_call`'s `params` before anything reads them: an object (or absent)
/// of at most [`MAX_PAGE_FIELDS`] fields whose values are scalars, strings of at most
/// [`MAX_ID_CHARS`], or one level of such an object (`retention.set {limits: {…}}`).
/// `Err` says what is wrong, for the refusal the page is answered.
pub fn check_companion_params(params: Option<&serde_json::Value>) -> Result<(), String> {
    use serde_json::Value;
    fn flat(object: &serde_json::Map<String, Value>, nested: bool) -> Result<(), String> {
        if object.len() > MAX_PAGE_FIELDS {
            return Err(format!("{} fields in `params` (at most {MAX_PAGE_FIELDS})", object.len()));
        }
        for (key, value) in object {
            if !within(key, MAX_ID_CHARS) {
                return Err("a field name in `params` is too long".to_owned());
            }
            match value {
                Value::Null | Value::Bool(_) | Value::Number(_) => {}
                Value::String(text) if within(text, MAX_ID_CHARS) => {}
                Value::String(_) => return Err(format!("`params.{key}` is longer than {MAX_ID_CHARS} characters")),
                Value::Object(inner) if !nested => flat(inner, true)?,
                _ => return Err(format!("`params.{key}` has the wrong shape")),
            }
        }
        Ok(())
    }
    match params {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Object(object)) => flat(object, false),
        Some(_) => Err("`params` is not an object".to_owned()),
    }
}

/// Origins whose pages may connect a `page` port (the manifest's content-script matches).
pub const ALLOWED_PAGE_ORIGINS: &[&str] = &["https://chatgpt.com", "https://chat.z.ai", "https://chat.deepseek.com"];

/// Whether `text` has at most `max_chars` characters.
pub fn within(text: &str, max_chars: usize) -> bool {
    text.len() <= max_chars || crate::text::char_count(text) <= max_chars
}

/// `text` cut to at most `max_chars` characters; a cut text ends with `…` (which counts).
pub fn clip(text: String, max_chars: usize) -> String {
    if within(&text, max_chars) {
        return text;
    }
    let mut clipped = crate::text::first_chars(&text, max_chars.saturating_sub(1)).to_owned();
    clipped.push('…');
    clipped
}

/// `text` cut to at most `max_chars` characters keeping its *end*; a cut text starts with
/// `…` (which counts). For terminal output, where the newest lines are at the end.
pub fn clip_tail(text: String, max_chars: usize) -> String {
    if within(&text, max_chars) {
        return text;
    }
    let total = crate::text::char_count(&text);
    let keep = max_chars.saturating_sub(1);
    let mut clipped = String::from("…");
    clipped.push_str(crate::text::chars_from(&text, total - keep.min(total)));
    clipped
}

/// Which internal port connected (its `name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortKind {
    /// A content script's `page` port.
    Page,
    /// An extension page's `panel` port (side panel).
    Panel,
}

/// What Chrome says about a port's sender (`port.sender`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortSender {
    /// `sender.id`: the extension that opened the port.
    pub extension_id: Option<String>,
    /// `sender.url`: the page or extension page that opened it.
    pub url: Option<String>,
    /// Whether `sender.tab` is set (content scripts always have a tab).
    pub has_tab: bool,
}

/// Why a port was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SenderRejected {
    /// `sender.id` is missing or is another extension.
    ForeignExtension,
    /// A `page` port without a tab or from a page outside [`ALLOWED_PAGE_ORIGINS`].
    PageNotAllowed,
    /// A `panel` port that does not come from one of this extension's pages.
    PanelNotOurs,
}

impl std::fmt::Display for SenderRejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::ForeignExtension => "the port was opened by another extension",
            Self::PageNotAllowed => "a page port came from a site the extension does not serve",
            Self::PanelNotOurs => "a panel port came from outside this extension's pages",
        })
    }
}

/// Whether `url` is `origin` itself or a URL under it (`origin` then `/`, `?` or `#`), so
/// `https://chatgpt.com.evil.example/` is not under `https://chatgpt.com`.
pub fn url_under_origin(url: &str, origin: &str) -> bool {
    url.strip_prefix(origin).is_some_and(|rest| rest.is_empty() || rest.starts_with(['/', '?', '#']))
}

/// Accepts a port only from this extension (`own_extension_id` = `chrome.runtime.id`):
/// `page` ports from a tab on an allowed origin, `panel` ports from
/// `chrome-extension://<own id>/…`.
pub fn check_sender(kind: PortKind, sender: &PortSender, own_extension_id: &str) -> Result<(), SenderRejected> {
    if own_extension_id.is_empty() || sender.extension_id.as_deref() != Some(own_extension_id) {
        return Err(SenderRejected::ForeignExtension);
    }
    let url = sender.url.as_deref().unwrap_or("");
    match kind {
        PortKind::Page => {
            let allowed =
                sender.has_tab && within(url, MAX_URL_CHARS) && ALLOWED_PAGE_ORIGINS.iter().any(|origin| url_under_origin(url, origin));
            if allowed {
                Ok(())
            } else {
                Err(SenderRejected::PageNotAllowed)
            }
        }
        PortKind::Panel => {
            let ours = format!("chrome-extension://{own_extension_id}");
            if url_under_origin(url, &ours) {
                Ok(())
            } else {
                Err(SenderRejected::PanelNotOurs)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OURS: &str = "abcdefghijklmnopabcdefghijklmnop";

    fn sender(id: &str, url: &str, has_tab: bool) -> PortSender {
        PortSender { extension_id: Some(id.into()), url: Some(url.into()), has_tab }
    }

    #[test]
    fn caps_count_characters_not_bytes() {
        assert!(within(&"é".repeat(MAX_ID_CHARS), MAX_ID_CHARS));
        assert!(!within(&"é".repeat(MAX_ID_CHARS + 1), MAX_ID_CHARS));
        assert_eq!(clip("short".into(), 10), "short");
        let clipped = clip("日本語のテキスト".into(), 4);
        assert_eq!(clipped, "日本語…");
        assert_eq!(clipped.chars().count(), 4);
    }

    #[test]
    fn output_is_clipped_from_its_start_so_the_newest_lines_survive() {
        assert_eq!(clip_tail("short".into(), 10), "short");
        let clipped = clip_tail("line 1\nline 2\nline 3".into(), 8);
        assert_eq!(clipped, "…\nline 3");
        assert_eq!(clipped.chars().count(), 8);
        assert_eq!(clip_tail("日本語のテキスト".into(), 4), "…キスト");
    }

    #[test]
    fn a_page_port_may_come_from_our_content_script_on_zai_and_deepseek() {
        // B6, M3: z.ai and DeepSeek conversations bind and run Auto like ChatGPT's.
        for url in ["https://chat.z.ai/c/7c1d", "https://chat.deepseek.com/a/chat/s/9e2f"] {
            assert_eq!(check_sender(PortKind::Page, &sender(OURS, url, true), OURS), Ok(()), "{url}");
        }
        for url in ["https://chat.z.ai.evil.example/", "https://z.ai/", "https://deepseek.com/"] {
            assert_eq!(check_sender(PortKind::Page, &sender(OURS, url, true), OURS), Err(SenderRejected::PageNotAllowed), "{url}");
        }
    }

    #[test]
    fn a_page_port_must_come_from_our_content_script_on_chatgpt() {
        assert_eq!(check_sender(PortKind::Page, &sender(OURS, "https://chatgpt.com/c/1", true), OURS), Ok(()));
        assert_eq!(check_sender(PortKind::Page, &sender(OURS, "https://chatgpt.com", true), OURS), Ok(()));
        assert_eq!(
            check_sender(PortKind::Page, &sender("other", "https://chatgpt.com/", true), OURS),
            Err(SenderRejected::ForeignExtension)
        );
        assert_eq!(
            check_sender(PortKind::Page, &PortSender { has_tab: true, ..PortSender::default() }, OURS),
            Err(SenderRejected::ForeignExtension)
        );
        for url in ["https://chatgpt.com.evil.example/", "http://chatgpt.com/", "https://evil.example/?https://chatgpt.com/"] {
            assert_eq!(check_sender(PortKind::Page, &sender(OURS, url, true), OURS), Err(SenderRejected::PageNotAllowed), "{url}");
        }
        assert_eq!(
            check_sender(PortKind::Page, &sender(OURS, "https://chatgpt.com/", false), OURS),
            Err(SenderRejected::PageNotAllowed),
            "a content script always has a tab"
        );
        let long = format!("https://chatgpt.com/{}", "a".repeat(MAX_URL_CHARS));
        assert_eq!(check_sender(PortKind::Page, &sender(OURS, &long, true), OURS), Err(SenderRejected::PageNotAllowed));
    }

    #[test]
    fn a_panel_port_must_come_from_our_extension_pages() {
        let panel = format!("chrome-extension://{OURS}/sidepanel.html");
        assert_eq!(check_sender(PortKind::Panel, &sender(OURS, &panel, false), OURS), Ok(()));
        assert_eq!(check_sender(PortKind::Panel, &sender(OURS, &panel, true), OURS), Ok(()), "the panel opened in a tab");
        assert_eq!(
            check_sender(PortKind::Panel, &sender(OURS, "https://chatgpt.com/", true), OURS),
            Err(SenderRejected::PanelNotOurs),
            "a content script cannot pose as the panel"
        );
        assert_eq!(
            check_sender(PortKind::Panel, &sender(OURS, &format!("chrome-extension://{OURS}x/p.html"), false), OURS),
            Err(SenderRejected::PanelNotOurs)
        );
        assert_eq!(check_sender(PortKind::Panel, &sender("", "", false), ""), Err(SenderRejected::ForeignExtension));
    }
}
