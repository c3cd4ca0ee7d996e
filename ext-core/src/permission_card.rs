//! ChatGPT's tool-permission cards (SPEC M5, M6): a card that asks to let ChatGPT use the
//! *Herdr* connector is accepted once, even with Auto off; every other card is left alone.
//! The classifier fails closed: it accepts only what it can read completely.
//!
//! The page adapter reports what a card shows, matched by labels (not styling and not test
//! ids nobody confirmed, `SITES-2026.md` §1.7): the wording outside the buttons and each
//! button's label and state ([`PageCards::read`] checks the report against its caps). A
//! card is accepted only when all of these hold:
//! - the page is a ChatGPT page (M6);
//! - the wording asks for permission for exactly one connector ("Allow ChatGPT to use
//!   Herdr?", "允许 ChatGPT 使用 Herdr？") and that connector is one of ours;
//! - exactly one button is an explicit, plain Allow ("Allow" / "允许"; never "Always allow",
//!   "Allow for this chat", "OK", "Continue" or a menu opener), and it is enabled and visible;
//! - a plain Deny button ("Deny" / "拒绝"; never "Cancel" or "No") is in the same card;
//! - the card has a key, and that key was never accepted before ([`CardLedger`]).
//!
//! Invariants (tests in `tests/it/permission_card.rs`): a card that lacks any of these is
//! never clicked; a card (by its key) is accepted at most once, across worker restarts (the
//! ledger is persisted before the click leaves, `continuity/cards`); only ChatGPT pages.

use serde::Serialize;
use serde_json::Value;

use crate::json_read::{ReadJson, WriteJson};

/// Connector names accepted by default.
pub const HERDR_CONNECTORS: &[&str] = &["herdr"];
/// Most card keys remembered as accepted (the newest are kept).
const ACCEPTED_KEPT: usize = 128;
/// Most cards one report may carry.
pub const MAX_CARDS: usize = 4;
/// Most buttons of one card (a card with more is reported without buttons: not accepted).
pub const MAX_CARD_BUTTONS: usize = 6;
/// Most characters of a card's wording.
pub const MAX_WORDING_CHARS: usize = 512;
/// Most characters of a button's label.
pub const MAX_BUTTON_LABEL_CHARS: usize = 64;

/// One button of a card as the page shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CardButton {
    /// Its label (text or `aria-label`), as shown.
    pub label: String,
    /// Not disabled (`disabled`, `aria-disabled`).
    pub enabled: bool,
    /// Rendered and not hidden.
    pub visible: bool,
    /// Opens a menu (`aria-haspopup`) rather than acting.
    pub opens_menu: bool,
}

/// A card as the page adapter read it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CardFacts {
    /// Stable for one card on one page (its turn, its place in the turn, its wording).
    pub key: String,
    /// The card's text outside its buttons (bounded by the adapter).
    pub wording: String,
    /// Its buttons, in order.
    pub buttons: Vec<CardButton>,
}

/// A page's `permission_cards` report: every card it shows now (an empty list when the
/// last one went away).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PageCards {
    /// The content script's start id (the same as `page_facts.page_load`).
    pub page_load: String,
    /// `location.href` when the cards were read (a chat site's navigation keeps the page
    /// load: the cards belong to this URL only).
    pub url: String,
    /// The cards, in document order.
    pub cards: Vec<CardFacts>,
}

impl PageCards {
    /// Reads a `permission_cards` message, refusing it whole when it is not that shape or
    /// exceeds a cap ([`MAX_CARDS`], [`MAX_CARD_BUTTONS`], [`MAX_WORDING_CHARS`],
    /// [`MAX_BUTTON_LABEL_CHARS`], keys and the page load at most
    /// [`crate::limits::MAX_ID_CHARS`], the URL at most [`crate::limits::MAX_URL_CHARS`]): a
    /// page shapes it through its DOM.
    pub fn read(value: &Value) -> Result<Self, &'static str> {
        Self::read_within_caps(value).ok_or("permission_cards: not that shape, or over its caps")
    }

    fn read_within_caps(value: &Value) -> Option<Self> {
        use crate::limits::{within, MAX_ID_CHARS, MAX_URL_CHARS};
        let text = |v: &Value, key: &str, max: usize| v.get(key)?.as_str().filter(|t| within(t, max)).map(str::to_owned);
        let flag = |v: &Value, key: &str| v.get(key)?.as_bool();
        let page_load = text(value, "page_load", MAX_ID_CHARS)?;
        let url = text(value, "url", MAX_URL_CHARS)?;
        let listed = value.get("cards")?.as_array().filter(|l| l.len() <= MAX_CARDS)?;
        let mut cards = Vec::with_capacity(listed.len());
        for card in listed {
            let shown = card.get("buttons")?.as_array().filter(|l| l.len() <= MAX_CARD_BUTTONS)?;
            let mut buttons = Vec::with_capacity(shown.len());
            for b in shown {
                buttons.push(CardButton {
                    label: text(b, "label", MAX_BUTTON_LABEL_CHARS)?,
                    enabled: flag(b, "enabled")?,
                    visible: flag(b, "visible")?,
                    opens_menu: flag(b, "opens_menu")?,
                });
            }
            cards.push(CardFacts { key: text(card, "key", MAX_ID_CHARS)?, wording: text(card, "wording", MAX_WORDING_CHARS)?, buttons });
        }
        Some(PageCards { page_load, url, cards })
    }
}

/// What to do with a card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum CardDecision {
    /// Click button `index` (the Allow).
    Accept {
        /// Which button.
        index: usize,
        /// The connector it allows.
        connector: String,
    },
    /// Leave it to the user, and why.
    Leave {
        /// Why.
        reason: CardRefusal,
    },
}

/// Why a card is left alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum CardRefusal {
    /// Not a ChatGPT page (M6).
    NotChatGpt,
    /// The wording does not ask for one connector's permission.
    NoPermissionWording,
    /// Another connector.
    OtherConnector {
        /// Which.
        connector: String,
    },
    /// No plain Allow, or more than one.
    NoSingleAllow,
    /// The Allow is disabled or hidden.
    AllowNotUsable,
    /// No Deny in the card.
    NoDeny,
    /// The adapter gave the card no key (it could not be told apart from another).
    NoKey,
    /// A complete Herdr card on a chat that is not bound (a conversation without a binding,
    /// a Project without one, or a page that is no conversation): the composition's rule,
    /// checked after the classifier accepted the card.
    NotBound {
        /// The connector it asked for.
        connector: String,
    },
}

impl CardRefusal {
    /// Every code, in declaration order (the HUD has a `card_refused_<code>` text for each).
    pub const CODES: [&'static str; 8] = [
        "not_chatgpt",
        "no_permission_wording",
        "other_connector",
        "no_single_allow",
        "allow_not_usable",
        "no_deny",
        "no_key",
        "not_bound",
    ];

    /// The stable code of the HUD text and the Activity timeline.
    pub fn code(&self) -> &'static str {
        let index = match self {
            Self::NotChatGpt => 0,
            Self::NoPermissionWording => 1,
            Self::OtherConnector { .. } => 2,
            Self::NoSingleAllow => 3,
            Self::AllowNotUsable => 4,
            Self::NoDeny => 5,
            Self::NoKey => 6,
            Self::NotBound { .. } => 7,
        };
        Self::CODES[index]
    }
}

/// Whether `label`, trimmed, is one of `words` (ASCII case ignored: the Chinese labels have
/// no case). Labels are compared whole: "Always allow" is not "Allow".
fn label_is(label: &str, words: &[&str]) -> bool {
    let label = label.trim();
    words.iter().any(|word| label.eq_ignore_ascii_case(word))
}

fn is_plain_allow(label: &str) -> bool {
    label_is(label, &["allow", "允许"])
}

fn is_deny(label: &str) -> bool {
    label_is(label, &["deny", "拒绝"])
}

/// The connector a card's wording asks permission for: the wording starts with "Allow
/// ChatGPT to use <X>?" (ASCII case ignored) or "允许 ChatGPT 使用 <X>？" and asks nothing
/// else of that kind (a wording that asks for two connectors is not one card's).
pub fn asked_connector(wording: &str) -> Option<String> {
    let text = wording.trim_start();
    let (rest, end_chars): (&str, &[char]) = match text.get(..21) {
        Some(head) if head.eq_ignore_ascii_case("allow chatgpt to use ") => (text.get(21..)?, &['?']),
        _ => (text.strip_prefix("允许 ChatGPT 使用")?, &['？', '?']),
    };
    if crate::text::contains_str(rest, "ChatGPT to use") || crate::text::contains_str(rest, "ChatGPT 使用") {
        return None;
    }
    let (end, _) = rest.char_indices().find(|(_, c)| end_chars.contains(c))?;
    let name = rest.get(..end)?.trim();
    (!name.is_empty() && crate::text::char_count(name) <= 64).then(|| name.to_owned())
}

/// Most characters of a tool name read from a card's wording.
pub const MAX_TOOL_CHARS: usize = 64;

/// The Herdr tool a card's wording names: its first word that is `herdr_` followed by ASCII
/// lowercase letters, digits and `_` (the runtime's MCP tool names, e.g. `herdr_prompt`),
/// at most [`MAX_TOOL_CHARS`]; `None` when the wording names none. Shown to the user (HUD,
/// Activity timeline) as what was allowed; it decides nothing.
pub fn asked_tool(wording: &str) -> Option<String> {
    let tool_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
    wording
        .split(|c: char| !tool_char(c))
        .find(|word| word.len() > "herdr_".len() && word.len() <= MAX_TOOL_CHARS && word.starts_with("herdr_"))
        .map(str::to_owned)
}

/// Classifies `card` on a page (`chatgpt`: a ChatGPT page) for `connectors` (ours). Pure:
/// whether it was accepted before is the [`CardLedger`]'s question.
pub fn classify(card: &CardFacts, chatgpt: bool, connectors: &[&str]) -> CardDecision {
    let leave = |reason| CardDecision::Leave { reason };
    if !chatgpt {
        return leave(CardRefusal::NotChatGpt);
    }
    let Some(connector) = asked_connector(&card.wording) else { return leave(CardRefusal::NoPermissionWording) };
    if !connectors.iter().any(|c| c.eq_ignore_ascii_case(&connector)) {
        return leave(CardRefusal::OtherConnector { connector });
    }
    let mut allows = card.buttons.iter().enumerate().filter(|(_, b)| !b.opens_menu && is_plain_allow(&b.label));
    let (Some((index, allow)), None) = (allows.next(), allows.next()) else { return leave(CardRefusal::NoSingleAllow) };
    if !allow.enabled || !allow.visible {
        return leave(CardRefusal::AllowNotUsable);
    }
    if !card.buttons.iter().any(|b| is_deny(&b.label) && !b.opens_menu) {
        return leave(CardRefusal::NoDeny);
    }
    if card.key.is_empty() {
        return leave(CardRefusal::NoKey);
    }
    CardDecision::Accept { index, connector }
}

/// The keys of the cards accepted, newest last (persist it: a key in it is never clicked
/// again). Only keys: what the HUD shows of an acceptance is the composition's, for the
/// page that shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct CardLedger {
    accepted: Vec<String>,
}

impl CardLedger {
    /// Whether the card `key` was accepted before.
    pub fn accepted(&self, key: &str) -> bool {
        self.accepted.iter().any(|k| k == key)
    }

    /// Records an acceptance (the newest [`ACCEPTED_KEPT`] are kept).
    pub fn record(&mut self, key: String) {
        self.accepted.push(key);
        if self.accepted.len() > ACCEPTED_KEPT {
            self.accepted.remove(0);
        }
    }

    /// How many cards are remembered as accepted.
    pub fn len(&self) -> usize {
        self.accepted.len()
    }

    /// Nothing accepted yet.
    pub fn is_empty(&self) -> bool {
        self.accepted.is_empty()
    }
}
