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
//! - M5 is the one exception to Auto gating: a Herdr card is accepted with Auto off, but only
//!   on a bound chat (a bound conversation, or a conversation of a bound Project): on an
//!   unbound chat, or a page that is no conversation, it is left to the user as `not_bound`.
//!   Nothing else about the page is changed.
//! - What was allowed is shown: the HUD's line and every Activity entry of a card name the
//!   Herdr tool its wording names ([`crate::permission_card::asked_tool`]).
//! - Only ChatGPT pages (M6): a card reported by a z.ai or DeepSeek page (or any page not
//!   classified as ChatGPT) is refused as `not_chatgpt`, never clicked.
//! - A card shown waits for the user: [`Continuity::permission_card_waiting`] is true while
//!   the page shows one, and recovery sees it as a blocker.
//! - Reports are facts of one page: a report whose `page_load` or URL is not the page's
//!   current one (an older load, or the URL before a navigation) is not acted on.

use super::*;
use crate::json_read::WriteJson;
use crate::permission_card::{
    asked_tool, classify, CardDecision, CardFacts, CardLedger, CardRefusal, PageCards, HERDR_CONNECTORS, MAX_CARDS,
};

/// The HUD's permission-card line of a page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, WriteJson)]
pub struct CardLine {
    /// `accepted` (the newest card accepted on this page), `accepted_before` (a card shown
    /// now that was accepted before: not clicked again), `refused` (a card shown now that
    /// is left to the user) or `gone` (the accepted card was gone when the page went to
    /// click it).
    pub state: &'static str,
    /// The refusal's code (`card_refused_<code>` of `_locales`); `""` otherwise.
    pub code: &'static str,
    /// The connector the card named (`""` when it named none).
    pub connector: String,
    /// When it was accepted (or found gone); `None` for a refusal or an earlier acceptance.
    pub at: Option<Millis>,
    /// The Herdr tool the card's wording names (`""` when it names none).
    pub tool: String,
}

/// What the HUD says of one card: its connector and the tool its wording names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Named {
    connector: String,
    tool: String,
}

/// What one tab's page shows of cards (not persisted: pages report again after a restart).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct TabCards {
    /// The newest report.
    report: PageCards,
    /// Refusals recorded in the Activity timeline, (key, code), while their card is shown.
    recorded: Vec<(String, &'static str)>,
    /// The newest card accepted on this page (its connector and tool), and when.
    accepted: Option<(Named, Millis)>,
    /// A card shown now that was accepted before (in an earlier worker life, or earlier on
    /// this page): its connector and tool.
    accepted_before: Option<Named>,
    /// An accepted card the page found gone before it could click, and when.
    gone: Option<(Named, Millis)>,
    /// The first card of the report left to the user: its refusal code, the connector it
    /// named and its tool (the HUD's line).
    refused: Option<(&'static str, Named)>,
    /// The tool of each card accepted on this page, by key (for the Activity entry of the
    /// page's answer): at most [`MAX_CARDS`] of the newest.
    tools: Vec<(String, String)>,
}

/// The composition's permission-card state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct CardFlow {
    /// Every card accepted (persisted): a key in it is never clicked again.
    pub(super) ledger: CardLedger,
    /// Per tab, what its page shows.
    tabs: VecMap<TabId, TabCards>,
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

impl Continuity {
    /// Whether the page of `tab` shows a tool-permission card waiting for the user (the
    /// profile's `permission_card` fact or a card in its newest report): recovery and the
    /// page's health meter treat it as a blocker.
    pub fn permission_card_waiting(&self, tab: TabId) -> bool {
        self.pages.get(&tab).is_some_and(|p| p.permission_card) || self.cards.tabs.get(&tab).is_some_and(|t| !t.report.cards.is_empty())
    }

    /// A page's `permission_cards` report.
    pub(super) fn permission_cards(&mut self, now: Millis, tab: TabId, report: PageCards) {
        match self.cards.tabs.get_mut(&tab) {
            Some(shown) => {
                // A refusal is recorded again only once its card was gone from a report.
                shown.recorded.retain(|(key, _)| report.cards.iter().any(|card| &card.key == key));
                shown.report = report;
            }
            None => {
                self.cards.tabs.insert(tab, TabCards { report, ..TabCards::default() });
            }
        }
        self.cards_page(now, tab);
    }

    /// The page of `tab` reported (facts or cards): its cards are classified now.
    pub(super) fn cards_page(&mut self, now: Millis, tab: TabId) {
        let Some(page_report) = self.pages.get(&tab) else { return };
        let Some(tab_cards) = self.cards.tabs.get_mut(&tab) else { return };
        tab_cards.refused = None;
        tab_cards.accepted_before = None;
        if tab_cards.report.page_load != page_report.page_load || tab_cards.report.url != page_report.url {
            return;
        }
        let page = classify_url(&page_report.url);
        let chatgpt = chatgpt_page(&page);
        let scope = page.scope();
        let scope_key = scope.as_ref().map(Scope::key);
        // M5: only a conversation whose scope (the conversation, or its Project) is bound.
        let conversation = matches!(page, PageKind::Chat { .. } | PageKind::ProjectChat { .. });
        let bound = conversation && scope.as_ref().is_some_and(|s| self.bindings.binding_for(s).is_some());
        for i in 0..MAX_CARDS {
            let Some(tab_cards) = self.cards.tabs.get_mut(&tab) else { return };
            let Some(card) = tab_cards.report.cards.get(i) else { return };
            let key = card.key.clone();
            let tool = asked_tool(&card.wording).unwrap_or_default();
            let reason = match decide(&tab_cards.report, card, chatgpt) {
                CardDecision::Accept { connector, .. } if self.cards.ledger.accepted(&key) => {
                    tab_cards.accepted_before = Some(Named { connector, tool });
                    continue;
                }
                CardDecision::Accept { connector, .. } if !bound => CardRefusal::NotBound { connector },
                CardDecision::Accept { index, connector } => {
                    tab_cards.accepted = Some((Named { connector, tool: tool.clone() }, now));
                    tab_cards.gone = None;
                    tab_cards.tools.retain(|(k, _)| k != &key);
                    tab_cards.tools.push((key.clone(), tool.clone()));
                    if tab_cards.tools.len() > MAX_CARDS {
                        tab_cards.tools.remove(0);
                    }
                    self.cards.ledger.record(key.clone());
                    if let Some(scope_key) = &scope_key {
                        self.record_card_activity(scope_key, ActivityOutcome::Sent, "herdr_card", &key, &tool);
                    }
                    // The ledger is written before the click leaves (the shell waits for it).
                    self.persist();
                    self.emit(ContinuityOutput::CardAllow { tab, key, index });
                    continue;
                }
                CardDecision::Leave { reason } => reason,
            };
            let code = reason.code();
            if tab_cards.refused.is_none() {
                let connector = match reason {
                    CardRefusal::OtherConnector { connector } | CardRefusal::NotBound { connector } => connector,
                    _ => String::new(),
                };
                tab_cards.refused = Some((code, Named { connector, tool: tool.clone() }));
            }
            let mark = (key, code);
            if scope_key.is_none() || tab_cards.recorded.contains(&mark) {
                continue;
            }
            tab_cards.recorded.push(mark.clone());
            if let Some(scope_key) = &scope_key {
                self.record_card_activity(scope_key, ActivityOutcome::Withheld, code, &mark.0, &tool);
            }
        }
    }

    /// One Activity entry about the card `key`, naming the tool its wording names.
    fn record_card_activity(&mut self, scope_key: &str, outcome: ActivityOutcome, reason: &'static str, key: &str, tool: &str) {
        let tool = (!tool.is_empty()).then_some(tool);
        self.record_activity_with_tool(scope_key, ActivityKind::PermissionCard, outcome, ActivityReason::Code(reason), Some(key), tool);
    }

    /// The page's answer to a `card_allow`: `clicked`, or the card was gone (no click).
    pub(super) fn card_result(&mut self, now: Millis, tab: TabId, key: &str, clicked: bool) {
        let mut tool = String::new();
        if let Some(shown) = self.cards.tabs.get_mut(&tab) {
            if let Some((_, t)) = shown.tools.iter().find(|(k, _)| k == key) {
                tool.clone_from(t);
            }
            if !clicked {
                shown.gone = shown.accepted.take().map(|(named, _)| (named, now));
            }
        }
        let Some(scope_key) = self.scope_of_tab(tab).map(|s| s.key()) else { return };
        let (outcome, reason) =
            if clicked { (ActivityOutcome::Confirmed, "allow_clicked") } else { (ActivityOutcome::Failed, "card_gone") };
        self.record_card_activity(&scope_key, outcome, reason, key, &tool);
    }

    /// A tab's page went away: its cards with it.
    pub(super) fn cards_page_gone(&mut self, tab: TabId) {
        self.cards.tabs.remove(&tab);
    }

    /// The HUD's permission-card line for `tab`: a card shown now and left alone, else a
    /// click that found its card gone, else the newest card accepted in this conversation.
    pub(super) fn card_line(&self, tab: TabId) -> Option<CardLine> {
        self.pages.get(&tab)?;
        let shown = self.cards.tabs.get(&tab)?;
        if let Some((code, named)) = &shown.refused {
            return Some(CardLine { state: "refused", code, connector: named.connector.clone(), at: None, tool: named.tool.clone() });
        }
        let (state, named, at) = match (&shown.gone, &shown.accepted, &shown.accepted_before) {
            (Some((named, at)), _, _) => ("gone", named, Some(*at)),
            (None, Some((named, at)), _) => ("accepted", named, Some(*at)),
            (None, None, Some(named)) => ("accepted_before", named, None),
            (None, None, None) => return None,
        };
        Some(CardLine { state, code: "", connector: named.connector.clone(), at, tool: named.tool.clone() })
    }
}
