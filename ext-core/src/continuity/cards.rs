//! ChatGPT's tool-permission cards in the loop (SPEC M5, M6): feeds each page's
//! `permission_cards` report to the fail-closed classifier ([`crate::permission_card`])
//! and turns an accepted card into one `card_allow` page command
//! ([`ContinuityOutput::CardAllow`]); every other card is left to the user and the HUD
//! says why (`card_refused_<code>`). The Activity timeline gets one entry per accepted
//! card, per refusal of a shown card, and per click the page could not make.
//!
//! Invariants:
//! - A card key is accepted at most once, ever: the key is written into the
//!   [`CardLedger`] (persisted in the snapshot) before the command is output, and the
//!   command tells the shell to write the snapshot before carrying it out, so a worker
//!   restart, a repeated report or a re-rendered card never clicks it again.
//! - M5 is the one exception to Auto gating: a Herdr card is accepted with Auto off, on an
//!   unbound chat too; nothing else about the page is changed.
//! - Only ChatGPT pages (M6): a card reported by a z.ai or DeepSeek page (or any page not
//!   classified as ChatGPT) is refused as `not_chatgpt`, never clicked.
//! - A card shown waits for the user: [`Continuity::permission_card_waiting`] is true while
//!   the page shows one, and recovery sees it as a blocker.
//! - Reports are facts of one page: a report whose `page_load` or URL is not the page's
//!   current one (an older load, or the URL before a navigation) is not acted on.

use super::*;
use crate::permission_card::{classify, AcceptedCard, CardDecision, CardFacts, CardLedger, CardRefusal, PageCards, HERDR_CONNECTORS};

/// The HUD's permission-card line of a page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CardLine {
    /// `accepted` (the newest accepted card of this conversation), `refused` (a card shown
    /// now that is left to the user) or `gone` (the accepted card was gone when the page
    /// went to click it).
    pub state: &'static str,
    /// The refusal's code (`card_refused_<code>` of `_locales`); `""` otherwise.
    pub code: &'static str,
    /// The connector the card named (`""` when it named none).
    pub connector: String,
    /// When it was accepted (or found gone); `None` for a refusal.
    pub at: Option<Millis>,
}

crate::json_read::write_struct!(CardLine { state, code, connector, at });

/// The composition's permission-card state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct CardFlow {
    /// Every card accepted (persisted): a key in it is never clicked again.
    pub(super) ledger: CardLedger,
    /// The newest report per tab (pages report again after a restart).
    shown: VecMap<TabId, PageCards>,
    /// Refusals recorded in the Activity timeline, (key, code), while their card is shown.
    refusals_recorded: VecSet<(String, &'static str)>,
    /// Per tab: an accepted card the page found gone before it could click, and when.
    gone: VecMap<TabId, (String, Millis)>,
}

impl CardFlow {
    /// The flow of a restored snapshot's ledger.
    pub(super) fn with_ledger(ledger: CardLedger) -> Self {
        Self { ledger, ..Self::default() }
    }
}

/// Whether `page` is one of ChatGPT's (M6).
fn chatgpt_page(page: &PageKind) -> bool {
    match page {
        PageKind::Root | PageKind::ProjectHome { .. } | PageKind::ProjectChat { .. } => true,
        PageKind::Chat { site, .. } => *site == crate::scope::Site::ChatGpt,
        PageKind::Unsupported { .. } => false,
    }
}

/// The classifier's word on one card of a report; two cards under one key cannot be told
/// apart, so neither is accepted.
fn decide(report: &PageCards, card: &CardFacts, chatgpt: bool) -> CardDecision {
    if report.cards.iter().filter(|other| other.key == card.key).count() > 1 {
        return CardDecision::Leave { reason: CardRefusal::NoKey };
    }
    classify(card, chatgpt, HERDR_CONNECTORS)
}

/// The conversation an accepted card is recorded under: the page's scope key, or on a
/// ChatGPT page without one (the root page of a new chat) `chatgpt:new`.
fn card_conversation(page: &PageKind) -> String {
    page.scope().map_or_else(|| "chatgpt:new".to_owned(), |scope| scope.key())
}

impl Continuity {
    /// Whether the page of `tab` shows a tool-permission card waiting for the user (the
    /// profile's `permission_card` fact or a card in its newest report): recovery and the
    /// page's health meter treat it as a blocker.
    pub fn permission_card_waiting(&self, tab: TabId) -> bool {
        self.pages.get(&tab).is_some_and(|p| p.permission_card)
            || self.cards.shown.get(&tab).is_some_and(|report| !report.cards.is_empty())
    }

    /// A page's `permission_cards` report.
    pub(super) fn permission_cards(&mut self, now: Millis, tab: TabId, report: PageCards) {
        self.cards.shown.insert(tab, report);
        self.cards_page(now, tab);
    }

    /// The page of `tab` reported (facts or cards): its cards are classified now.
    pub(super) fn cards_page(&mut self, now: Millis, tab: TabId) {
        let Some(page_report) = self.pages.get(&tab) else { return };
        let current = |r: &&PageCards| r.page_load == page_report.page_load && r.url == page_report.url;
        let Some(shown) = self.cards.shown.get(&tab).filter(current) else { return };
        let page = classify_url(&page_report.url);
        let chatgpt = chatgpt_page(&page);
        let scope_key = page.scope().map(|s| s.key());
        let decisions: Vec<(String, CardDecision)> = shown.cards.iter().map(|card| (card.key.clone(), decide(shown, card, chatgpt))).collect();
        for (key, decision) in decisions {
            match decision {
                CardDecision::Accept { index, connector } => {
                    if self.cards.ledger.accepted(&key) {
                        continue;
                    }
                    let conversation = card_conversation(&page);
                    self.cards.ledger.record(AcceptedCard { key: key.clone(), connector, conversation, at: now });
                    if let Some(scope_key) = &scope_key {
                        self.record_activity(scope_key, ActivityKind::PermissionCard, ActivityOutcome::Sent, ActivityReason::Code("herdr_card"), Some(&key));
                    }
                    // The ledger is written before the click leaves (the shell waits for it).
                    self.outputs.push_back(ContinuityOutput::Persist);
                    self.outputs.push_back(ContinuityOutput::CardAllow { tab, key, index });
                }
                CardDecision::Leave { reason } => {
                    let mark = (key.clone(), reason.code());
                    if let Some(scope_key) = scope_key.as_deref().filter(|_| self.cards.refusals_recorded.insert(mark)) {
                        self.record_activity(scope_key, ActivityKind::PermissionCard, ActivityOutcome::Withheld, ActivityReason::Code(reason.code()), Some(&key));
                    }
                }
            }
        }
        self.cards_forget_unshown();
    }

    /// The page's answer to a `card_allow`: `clicked`, or the card was gone (no click).
    pub(super) fn card_result(&mut self, now: Millis, tab: TabId, key: &str, clicked: bool) {
        let Some(scope_key) = self.scope_of_tab(tab).map(|s| s.key()) else { return };
        let (outcome, reason) = if clicked {
            (ActivityOutcome::Confirmed, "allow_clicked")
        } else {
            let connector = self.cards.ledger.find(key).map(|a| a.connector.clone()).unwrap_or_default();
            self.cards.gone.insert(tab, (connector, now));
            (ActivityOutcome::Failed, "card_gone")
        };
        self.record_activity(&scope_key, ActivityKind::PermissionCard, outcome, ActivityReason::Code(reason), Some(key));
    }

    /// A tab's page went away: its cards with it.
    pub(super) fn cards_page_gone(&mut self, tab: TabId) {
        self.cards.shown.remove(&tab);
        self.cards.gone.remove(&tab);
        self.cards_forget_unshown();
    }

    /// Refusal marks of cards no page shows any more are dropped (a card shown again is a
    /// new entry).
    fn cards_forget_unshown(&mut self) {
        let shown = &self.cards.shown;
        self.cards.refusals_recorded.retain(|(key, _)| shown.values().flat_map(|r| &r.cards).any(|card| &card.key == key));
    }

    /// The HUD's permission-card line for `tab`: a card shown now and left alone, else a
    /// click that found its card gone, else the newest card accepted in this conversation.
    pub(super) fn card_line(&self, tab: TabId) -> Option<CardLine> {
        let report = self.pages.get(&tab)?;
        let page = classify_url(&report.url);
        let chatgpt = chatgpt_page(&page);
        let shown = self.cards.shown.get(&tab).filter(|r| r.url == report.url);
        let refused = shown.into_iter().flat_map(|r| r.cards.iter().map(move |card| (r, card))).find_map(|(r, card)| match decide(r, card, chatgpt) {
            CardDecision::Leave { reason } => Some(reason),
            CardDecision::Accept { .. } => None,
        });
        if let Some(reason) = refused {
            let connector = match &reason {
                CardRefusal::OtherConnector { connector } => connector.clone(),
                _ => String::new(),
            };
            return Some(CardLine { state: "refused", code: reason.code(), connector, at: None });
        }
        if let Some((connector, at)) = self.cards.gone.get(&tab) {
            return Some(CardLine { state: "gone", code: "", connector: connector.clone(), at: Some(*at) });
        }
        let accepted = self.cards.ledger.last_for(&card_conversation(&page))?;
        Some(CardLine { state: "accepted", code: "", connector: accepted.connector.clone(), at: Some(accepted.at) })
    }
}
