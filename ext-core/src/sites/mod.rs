//! Site profiles: what the page adapter looks for on each chat site, as data.
//!
//! Purpose: the content scripts (`extension/content*.js`) hold no site selector. On
//! connect the worker sends it the profile of the page's origin ([`profile_for`]) as one
//! flat profile ([`flat`]): per fact ([`FACT_NAMES`]) an ordered chain of [`Probe`]s merged
//! across every known layout generation of the site. The script resolves each fact through
//! its own chain, reports per fact which probe matched (`page_diagnostics`) and the first
//! needed fact that does not resolve (`page_facts.unresolved`), and carries out delivery
//! commands through the elements it found. Which generation's [`Detect`] rule holds is a
//! diagnostic label (`page_facts.generation`), not a gate. docs/PROTOCOL.md "Site profiles
//! and page diagnostics" is the contract; `../shared/SITES-2026.md` is the source of every
//! selector and label (each generation names its sources and the date it was checked).
//!
//! Shape: a [`SiteProfile`] is a list of [`Generation`]s, the authoring format; a
//! generation is a detection rule, one probe list per fact, the en / zh label sets its
//! probes name, the controls a Send or Stop candidate must never be
//! ([`Generation::never`]), and when and from what it was last checked. The tables are
//! `&'static` data flattened and serialised only when sent ([`builtin_profile_json`]), so
//! they cost nothing until a page connects.
//!
//! Invariants:
//! - Probes are tag-agnostic unless the tag *is* the layout marker (article vs section
//!   turns); the first probe of a chain that finds an element wins.
//! - Within one site the detection rules are mutually exclusive on every recorded
//!   snippet; a page that matches none (markers of two generations mixed) still works
//!   when its facts resolve: the adapter fails closed only on a missing or ambiguous fact.
//! - A Stop probe never matches a dictation, voice or read-aloud control: every
//!   generation's `never` list and its `not_stop_words` label set exclude them, and
//!   label probes compare the whole label, so "Stop reading" is not "Stop".
//! - A Send candidate that also matches a Stop probe is not Send (one flipping submit
//!   button; DeepSeek's circle that differs only by its icon).

use crate::json_read::WriteJson;
use serde::Serialize;

pub mod chatgpt;
pub mod deepseek;
pub mod file;
pub mod flat;
pub mod overrides;
pub mod zai;
// The content scripts' own host-page selectors (docs/SELECTORS.md); not in the wasm.
pub mod surface;

/// Where a probe looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, crate::json_read::WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The whole document (`document.querySelectorAll`).
    Doc,
    /// Inside the composer's root (the element the `root` fact found), never outside it.
    Root,
    /// From the composer up: the nearest ancestor matching the selector (`closest`).
    Closest,
    /// Inside the last turns of the turn list (the adapter's tail window).
    Tail,
    /// The last assistant message itself or inside it.
    Last,
    /// The message element itself, inside it, or its nearest ancestor (message ids, read
    /// per user message).
    Message,
}

/// One way to find a fact: a CSS selector plus optional filters, all of which must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Probe {
    /// CSS selector, matched regardless of tag unless the tag is the layout's marker.
    pub css: &'static str,
    /// Where to look.
    pub scope: Scope,
    /// Label-set key: the element's whole label (`aria-label`, else `title`, else its
    /// trimmed text) equals one of the set's en or zh labels, ignoring case.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<&'static str>,
    /// Label-set key: the element's text contains one of the set's phrases, ignoring case.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<&'static str>,
    /// The element holds an SVG `path` whose `d` starts with this prefix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icon: Option<&'static str>,
    /// For message ids: the attribute holding the id (its first whitespace-separated token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attr: Option<&'static str>,
    /// Label-set key: within three ancestors there is a button with one of these labels
    /// (a Deny button beside an Allow button makes a permission card).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beside: Option<&'static str>,
    /// Counts only when exactly one element matches (a generic editor selector).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unique: bool,
}

impl Probe {
    /// A document-wide probe with no filters; the base the tables extend with `..`.
    pub const DOC: Probe =
        Probe { css: "", scope: Scope::Doc, label: None, text: None, icon: None, attr: None, beside: None, unique: false };

    /// A document-wide probe for `css`.
    pub const fn doc(css: &'static str) -> Probe {
        Probe { css, ..Probe::DOC }
    }

    /// A probe for `css` in `scope`.
    pub const fn within(scope: Scope, css: &'static str) -> Probe {
        Probe { css, scope, ..Probe::DOC }
    }
}

/// Which markers prove a generation: every `all` selector and at least one `any`
/// selector (when `any` is not empty) match in the document, and no `none` selector does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, WriteJson)]
pub struct Detect {
    /// All of these match.
    pub all: &'static [&'static str],
    /// At least one of these matches (ignored when empty).
    pub any: &'static [&'static str],
    /// None of these matches.
    pub none: &'static [&'static str],
}

/// One fact's probes, in order.
pub type Probes = &'static [Probe];

/// The probe lists of one generation, one per fact the adapter reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Facts {
    /// The editor the adapter types into.
    pub composer: Probes,
    /// The composer's root (its form), found upwards from the composer; scopes Send/Stop.
    pub root: Probes,
    /// The Send control.
    pub send: Probes,
    /// The Stop control (the page is generating while it is there).
    pub stop: Probes,
    /// The element whose children are the turns, upwards from the first turn (empty: the
    /// adapter uses the nearest common ancestor of the first and last turn).
    pub turn_list: Probes,
    /// One conversation turn (a unit of the turn list, possibly wrapped).
    pub turn: Probes,
    /// A user message (role fact): counted, and read for delivery markers.
    pub user: Probes,
    /// An assistant message (role fact).
    pub assistant: Probes,
    /// A message's id, read on or in a user message.
    pub message_id: Probes,
    /// The assistant's prose.
    pub assistant_body: Probes,
    /// A reply is being streamed.
    pub streaming: Probes,
    /// The last reply is final.
    pub complete: Probes,
    /// The thread shows a failed reply.
    pub thread_error: Probes,
    /// The Retry control of a failed reply.
    pub retry: Probes,
    /// A tool / connector permission card waits for the human.
    pub permission_card: Probes,
    /// A rate-limit notice is shown.
    pub rate_limit: Probes,
}

/// The wire names of the facts, in report order (`page_diagnostics.facts` keys).
pub const FACT_NAMES: [&str; 16] = [
    "composer",
    "root",
    "send",
    "stop",
    "turn_list",
    "turn",
    "user",
    "assistant",
    "message_id",
    "assistant_body",
    "streaming",
    "complete",
    "thread_error",
    "retry",
    "permission_card",
    "rate_limit",
];

impl Facts {
    /// Every fact by its wire name ([`FACT_NAMES`]), in report order.
    pub fn named(&self) -> [(&'static str, Probes); 16] {
        let lists = [
            self.composer,
            self.root,
            self.send,
            self.stop,
            self.turn_list,
            self.turn,
            self.user,
            self.assistant,
            self.message_id,
            self.assistant_body,
            self.streaming,
            self.complete,
            self.thread_error,
            self.retry,
            self.permission_card,
            self.rate_limit,
        ];
        let mut i = 0;
        lists.map(|probes| {
            let named = (FACT_NAMES[i], probes);
            i += 1;
            named
        })
    }
}

/// Labels in English and Chinese under one key, named by probes' `label`, `text` and
/// `beside`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LabelSet {
    /// The key probes use.
    pub key: &'static str,
    /// English labels or phrases.
    pub en: &'static [&'static str],
    /// Chinese labels or phrases.
    pub zh: &'static [&'static str],
}

/// The key of the label set whose words (substrings of a control's label, title or test
/// id) mark a dictation, voice or read-aloud control: never Send, never Stop.
pub const NOT_STOP_WORDS: &str = "not_stop_words";

/// One layout generation of a site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generation {
    /// `site.layout`, e.g. `chatgpt.thread`; reported as `page_facts.generation` (a label).
    pub id: &'static str,
    /// Which markers prove this layout.
    pub detect: Detect,
    /// The probes per fact.
    pub facts: Facts,
    /// Label sets the probes name, plus [`NOT_STOP_WORDS`].
    pub labels: &'static [LabelSet],
    /// Selectors a Send or Stop candidate must not match (dictation, voice, read aloud).
    pub never: &'static [&'static str],
    /// Selectors that mark a found control as disabled (not clickable yet).
    pub disabled: &'static [&'static str],
    /// Whether the last reply counts as streaming until a `complete` probe matches on it
    /// (layouts whose only streaming cue is the absence of a final marker).
    pub pending_until_complete: bool,
    /// The date (YYYY-MM-DD) its facts were last checked against [`Generation::source`].
    pub checked: &'static str,
    /// Where its selectors and labels come from (tags of `../shared/SITES-2026.md`).
    pub source: &'static str,
}

/// One markup of the pill a site shows for an App (a connector) attached to a message, in
/// the composer and in the user turn that carried it. The adapter reads
/// `{keyword, name, path}` from it (docs/PROTOCOL.md "The Herdr App").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AppPill {
    /// CSS selector of the pill element.
    pub css: &'static str,
    /// The attribute holding the App's keyword; absent: the keyword is the name, lower-cased.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keyword_attr: Option<&'static str>,
    /// The attribute holding the App's name; absent: the pill's trimmed text without a
    /// leading `@`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_attr: Option<&'static str>,
    /// The attribute holding the App's path; absent: the path is empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_attr: Option<&'static str>,
}

/// How a site attaches an App to a message: the pills that show an attached App and the
/// picker that typing `@<keyword>` opens in the composer. Purpose: the adapter learns the
/// App of a chat from the pills of its newest human user turn (`human_apps`), and before
/// typing a message that must carry the App it types `@<keyword>`, chooses the App in the
/// picker and reads the pill back in the composer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, WriteJson)]
pub struct AppMentions {
    /// The pill markups, newest first; a pill matching any of them is an attached App.
    pub pills: &'static [AppPill],
    /// The picker (a listbox); the first probe that finds one that opened after `@` was
    /// typed wins. `root` probes look inside the composer's form, `doc` probes anywhere.
    pub picker: Probes,
    /// One choice inside the picker.
    pub option: &'static str,
    /// The attribute of an option holding the App's keyword; an option without it is
    /// matched by its text (the App's name).
    pub option_keyword_attr: &'static str,
    /// How long (ms) the adapter waits for the picker to open, and then for the pill.
    pub wait_ms: u32,
}

/// The profile of one site: its generations in profile order (newest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SiteProfile {
    /// Site name (`chatgpt`, `zai`, `deepseek`).
    pub site: &'static str,
    /// The origin the profile is for.
    pub origin: &'static str,
    /// Generations; each fact's chain takes their probes in this order, and the diagnostic
    /// label is the first whose rule matches.
    pub generations: &'static [Generation],
    /// While a reply streams into its body, how often (ms) the adapter looks inside that
    /// body again: its observer then leaves the body's content out (a streamed token costs
    /// nothing), so an element added or changed deep in it is seen only by this look;
    /// every change elsewhere is seen as it happens.
    pub streaming_recheck_ms: u32,
    /// The attribute of a turn element whose trailing number is the turn's absolute index
    /// in the thread (ChatGPT's `data-testid="conversation-turn-N"`), for context pressure
    /// when the page renders only part of a long thread (R1); `None` when the site has none.
    pub turn_index_attr: Option<&'static str>,
    /// How the site attaches an App to a message; `None` on a site without Apps (a
    /// delivery that must carry an App is then never typed there).
    pub app_mentions: Option<&'static AppMentions>,
}

impl SiteProfile {
    /// The generation with this id.
    pub fn generation(&self, id: &str) -> Option<&'static Generation> {
        self.generations.iter().find(|generation| generation.id == id)
    }

    /// The flat profile (wire v2) of this site's generations ([`flat::flatten`]).
    pub fn flat(&self) -> flat::FlatProfile {
        flat::flatten(self)
    }
}

// The profile as posted to the page: hand-written writers (`crate::json_read`), not serde's
// derived `Serialize` (kept for the test that the two agree: smaller wasm).

impl crate::json_read::WriteJson for Probe {
    fn write_json(&self) -> serde_json::Value {
        let mut object = crate::json_read::Object::default().with("css", self.css).with("scope", &self.scope);
        for (name, value) in [("label", self.label), ("text", self.text), ("icon", self.icon), ("attr", self.attr), ("beside", self.beside)]
        {
            if let Some(value) = value {
                object.put(name, value.into());
            }
        }
        if self.unique {
            object.put("unique", true.into());
        }
        object.done()
    }
}

impl crate::json_read::WriteJson for AppPill {
    fn write_json(&self) -> serde_json::Value {
        let mut object = crate::json_read::Object::default().with("css", self.css);
        for (name, value) in [("keyword_attr", self.keyword_attr), ("name_attr", self.name_attr), ("path_attr", self.path_attr)] {
            if let Some(value) = value {
                object.put(name, value.into());
            }
        }
        object.done()
    }
}
/// The profile as posted to a page: its flat profile (wire v2).
impl crate::json_read::WriteJson for SiteProfile {
    fn write_json(&self) -> serde_json::Value {
        self.flat().write_json()
    }
}

/// [`SiteProfile::streaming_recheck_ms`] of every site: a probe's element that appears
/// deep inside a streaming reply's body (nothing any recorded generation puts there: its
/// streaming and completion cues sit on the body, its message or turn, or the composer)
/// is seen within half a second; five looks a second would cost more than the reply.
pub(crate) const STREAMING_RECHECK_MS: u32 = 500;

/// Selectors of a disabled control shared by most generations.
pub(crate) const DISABLED: &[&str] = &["[disabled]", "[aria-disabled=\"true\"]"];

/// Every known site profile.
pub static PROFILES: &[&SiteProfile] = &[&chatgpt::PROFILE, &zai::PROFILE, &deepseek::PROFILE];

/// The profile for a page URL or origin (`https://chatgpt.com/c/…` → ChatGPT's), by the
/// same origin rule as the port check (`limits::url_under_origin`).
pub fn profile_for(url_or_origin: &str) -> Option<&'static SiteProfile> {
    PROFILES.iter().copied().find(|profile| crate::limits::url_under_origin(url_or_origin, profile.origin))
}

/// The built-in profile of `site` (`chatgpt`, `zai`, `deepseek`).
pub fn by_site(site: &str) -> Option<&'static SiteProfile> {
    PROFILES.iter().copied().find(|profile| profile.site == site)
}

/// The built-in flat profile (wire v2) of `site` as JSON; `null` for a site without one
/// (the page's "no profile").
pub fn builtin_profile_json(site: &str) -> serde_json::Value {
    use crate::json_read::WriteJson;
    by_site(site).map_or(serde_json::Value::Null, |profile| profile.write_json())
}

/// The [`NOT_STOP_WORDS`] set every generation carries: the words that make a control
/// dictation, voice or read aloud.
pub(crate) const NOT_STOP: LabelSet = LabelSet {
    key: NOT_STOP_WORDS,
    en: &["dictat", "voice", "read aloud", "stop reading", "speech", "listen"],
    zh: &["听写", "语音", "朗读"],
};

#[cfg(test)]
mod tests;
