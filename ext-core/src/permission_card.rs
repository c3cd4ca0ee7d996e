//! ChatGPT's tool-permission cards (SPEC M5, M6): a card that asks to let ChatGPT use the
//! *Herdr* connector is accepted once, even with Auto off; every other card is left alone.
//! The classifier fails closed: it accepts only what it can read completely.
//!
//! The page adapter reports what a card shows, matched by labels (not styling and not test
//! ids nobody confirmed, `SITES-2026.md` §1.7): the wording outside the buttons and each
//! button's label and state. A card is accepted only when all of these hold:
//! - the wording asks for permission for a connector ("Allow ChatGPT to use Herdr?",
//!   "允许 ChatGPT 使用 Herdr？") and that connector is one of ours;
//! - exactly one button is an explicit, plain Allow ("Allow" / "允许"; never "Always allow"
//!   or a menu opener), and it is enabled and visible;
//! - a Deny button ("Deny" / "拒绝") is in the same card.
//!
//! Invariants (tests in `tests/it/permission_card.rs`): a card that lacks any of these is
//! never clicked; a card (by its key) is clicked at most once; only ChatGPT pages (M6).

use serde::Serialize;

/// Connector names accepted by default.
pub const HERDR_CONNECTORS: &[&str] = &["herdr"];
/// Most card keys remembered as accepted.
const ACCEPTED_KEPT: usize = 64;

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
    /// Stable for one card on one page (e.g. its turn id and wording).
    pub key: String,
    /// The card's text outside its buttons (bounded by the adapter).
    pub wording: String,
    /// Its buttons, in order.
    pub buttons: Vec<CardButton>,
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
    /// The wording does not ask for a connector's permission.
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
    /// Accepted before.
    AcceptedBefore,
}

fn normalize(label: &str) -> String {
    label.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

fn is_plain_allow(label: &str) -> bool {
    matches!(normalize(label).as_str(), "allow" | "允许")
}

fn is_deny(label: &str) -> bool {
    matches!(normalize(label).as_str(), "deny" | "拒绝" | "不允许")
}

/// The connector a card's wording asks permission for: "Allow ChatGPT to use <X>?" or
/// "允许 ChatGPT 使用 <X>？" (the first sentence of the wording).
pub fn asked_connector(wording: &str) -> Option<String> {
    let text = wording.trim();
    let lower = text.to_lowercase();
    let (rest, end_chars): (&str, &[char]) = if let Some(i) = crate::text::find_str(&lower, "allow chatgpt to use ") {
        (lower_tail(text, &lower, i + "allow chatgpt to use ".len())?, &['?'])
    } else if let Some(i) = crate::text::find_str(text, "允许 ChatGPT 使用") {
        (text.get(i + "允许 ChatGPT 使用".len()..)?, &['？', '?'])
    } else {
        return None;
    };
    let end = rest.find(end_chars)?;
    let name = rest.get(..end)?.trim();
    (!name.is_empty() && name.chars().count() <= 64).then(|| name.to_owned())
}

/// `text` from the char of `lower` (its lowercase) at byte `at` on, or `None` when
/// lowercasing changed the lengths before it (then the offsets do not line up).
fn lower_tail<'a>(text: &'a str, lower: &str, at: usize) -> Option<&'a str> {
    let chars = lower.get(..at)?.chars().count();
    let (start, _) = text.char_indices().nth(chars).unwrap_or((text.len(), ' '));
    (text.get(..start)?.to_lowercase().len() == at).then_some(())?;
    text.get(start..)
}

/// The cards accepted on a conversation's pages (persist it with the conversation).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CardLedger {
    accepted: Vec<String>,
}

impl CardLedger {
    /// Classifies `card`; an acceptance is remembered, so the same card is never clicked
    /// twice.
    pub fn decide(&mut self, card: &CardFacts, chatgpt: bool, connectors: &[&str]) -> CardDecision {
        let leave = |reason| CardDecision::Leave { reason };
        if !chatgpt {
            return leave(CardRefusal::NotChatGpt);
        }
        let Some(connector) = asked_connector(&card.wording) else { return leave(CardRefusal::NoPermissionWording) };
        if !connectors.iter().any(|c| c.eq_ignore_ascii_case(&connector)) {
            return leave(CardRefusal::OtherConnector { connector });
        }
        let allows: Vec<usize> = card.buttons.iter().enumerate().filter(|(_, b)| !b.opens_menu && is_plain_allow(&b.label)).map(|(i, _)| i).collect();
        let [index] = allows.as_slice() else { return leave(CardRefusal::NoSingleAllow) };
        let allow = &card.buttons[*index];
        if !allow.enabled || !allow.visible {
            return leave(CardRefusal::AllowNotUsable);
        }
        if !card.buttons.iter().any(|b| is_deny(&b.label) && !b.opens_menu) {
            return leave(CardRefusal::NoDeny);
        }
        if card.key.is_empty() || self.accepted.contains(&card.key) {
            return leave(CardRefusal::AcceptedBefore);
        }
        self.accepted.push(card.key.clone());
        if self.accepted.len() > ACCEPTED_KEPT {
            self.accepted.remove(0);
        }
        CardDecision::Accept { index: *index, connector }
    }
}

crate::json_read::read_struct!(CardLedger { accepted });
