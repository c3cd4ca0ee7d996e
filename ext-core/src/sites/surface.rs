//! The declared selector surface outside the site profiles: the few CSS selectors the
//! content scripts (`extension/content*.js`, `extension/queue-button.js`) use on a host
//! page themselves, each with its purpose, when it was last checked and its source.
//!
//! Purpose: every selector the extension uses on a host page is declared once — a site's
//! facts in its profile (`sites::{chatgpt,zai,deepseek}`), and the site-independent rest
//! here — so a page change that breaks one can be found from the docs
//! (`docs/SELECTORS.md`, generated from both) and no selector enters the code unseen.
//!
//! Invariants (tests: ext-core `tests/it/selector_surface.rs`):
//! - Every selector literal a content script passes to the DOM (`querySelector`,
//!   `querySelectorAll`, `closest`, `matches`, or a local wrapper of them) is a profile
//!   selector or one of [`PAGE_SELECTORS`]; every entry here is used by a content script.
//! - Queries on the extension's own closed shadow roots (the HUD, the Queue button: the
//!   name bound by `attachShadow`) are not the host page's surface and are not declared.
//! - Nothing here is referenced by the worker's code, so none of it is in the wasm.

/// One selector a content script uses on a host page outside the site profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Declared {
    /// The selector exactly as the code writes it (a template's substitutions as `${}`).
    pub css: &'static str,
    /// What the script looks for with it, and where.
    pub purpose: &'static str,
    /// When it was last checked against the sites (YYYY-MM-DD).
    pub checked: &'static str,
    /// Where its meaning comes from.
    pub source: &'static str,
}

/// The content scripts' own host-page selectors, in the order the docs list them.
pub const PAGE_SELECTORS: &[Declared] = &[
    Declared {
        css: "herdr-continuity-hud",
        purpose: "content-hud.js: the HUD's host element of an earlier copy of the content script (a second injection does nothing)",
        checked: "2026-12-06",
        source: "this extension's own element (content-hud.js mounts it)",
    },
    Declared {
        css: "main",
        purpose: "content-diagnostics.js: where a missing composer was looked for (the page's main region, else the body), \
                  summarised by tag, role and data-* names in page_diagnostics `missing`",
        checked: "2026-12-06",
        source: "HTML (the main landmark); a page without one is looked at from the body",
    },
    Declared {
        css: "button",
        purpose: "content scripts: the buttons within three ancestors of a candidate (probe filter `beside`); the buttons \
                  of the last turns whose label is a permission card's (Allow / Deny); never inside a quiet zone \
                  (a streaming reply's body holding a button is looked at in full)",
        checked: "2026-12-06",
        source: "HTML",
    },
    Declared {
        css: "path",
        purpose: "content-probes.js: the SVG paths of a candidate whose `d` starts with the probe's prefix (probe filter `icon`)",
        checked: "2026-12-06",
        source: "SVG",
    },
    Declared {
        css: "pre",
        purpose:
            "content-turns.js: a reply's code blocks (outermost `pre`), whose text is put back between Markdown fence lines for the JSON bridge",
        checked: "2026-12-06",
        source: "HTML; z.ai and DeepSeek render a fenced block as <pre><code> (issue 23)",
    },
    Declared {
        css: ":not(*)",
        purpose: "content-facts.js: matches nothing; the quiet path's `around` list when a generation has no probe that reads text",
        checked: "2026-12-06",
        source: "CSS Selectors 4",
    },
    Declared {
        css: "meta[http-equiv=\"Content-Security-Policy\" i]",
        purpose: "content-diagnostics.js: whether the page declares a CSP in a meta tag (page_diagnostics `csp.meta`)",
        checked: "2026-12-06",
        source: "HTML (CSP delivered by <meta http-equiv>)",
    },
    Declared {
        css: "button, [role=\"button\"], [role=\"menu\"], [role=\"menuitem\"], script, style",
        purpose: "content-cards.js: the parts of a permission card whose text is not its wording (buttons, menus, scripts, styles)",
        checked: "2026-12-06",
        source: "HTML and WAI-ARIA roles",
    },
    Declared {
        css: "[hidden], [aria-hidden=\"true\"]",
        purpose: "content-cards.js: a permission card's button is not visible inside a hidden ancestor",
        checked: "2026-12-06",
        source: "HTML `hidden` and WAI-ARIA `aria-hidden`",
    },
    Declared {
        css: "button, [role=\"button\"]",
        purpose: "content-cards.js: a permission card's buttons (a card with more than six is sent with none)",
        checked: "2026-12-06",
        source: "HTML and WAI-ARIA roles",
    },
];

/// When a site's App mention markup (`SiteProfile::app_mentions`: pills, picker, options)
/// was last checked, and its source (the generations' dates do not cover it: the pill
/// markup changes on its own dates).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SiteChecked {
    /// Site name.
    pub site: &'static str,
    /// YYYY-MM-DD.
    pub checked: &'static str,
    /// Where the markup is recorded.
    pub source: &'static str,
}

/// One entry per site whose profile has `app_mentions`.
pub const APP_MENTIONS_CHECKED: &[SiteChecked] = &[SiteChecked {
    site: "chatgpt",
    checked: "2026-10-10",
    source: "FIELD-NOTES-2026Q4 §1; herdr-mcp 2026-10-10 (the inline-mention pill), earlier the ecosystemMention pill",
}];
