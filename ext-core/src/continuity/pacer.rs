//! The request pacer, composed (issue 26, SPEC H7): one [`RequestPacer`] for every page of
//! the machine, keyed by account (`"<site>:<account>"`, the page's `page_facts.account`,
//! else `default`), so five tabs of one account share one slot.
//!
//! - Backend reads: every `snapshot_probe` asks [`Continuity::pacer_may_request`] first
//!   (`continuity/recovery`); a refused probe is not asked of the page and the planner
//!   asks again on a later tick.
//! - 429s: a `rate_limited` message of a page (Resource Timing, the visible notice), a
//!   probe answered `http_429` (with the response's `Retry-After`) and the recovery facts'
//!   `rate_limited` notice start the account's cooldown.
//! - Writes: while the account of a page cools down, nothing automatic is typed there
//!   ([`Continuity::rate_block_tab`] in `post_delivery`, the schedulers' facts, the judge's
//!   and the bridge's holds): wakes and progress stay pending in their scheduler, queue
//!   batches stay queued, a judge continue, a bridge result (owed, persisted) and a handoff seed are kept, and
//!   all of them are offered again when the cooldown ends ([`Continuity::pacer_timeout`]).
//!   A manual Continue or a pressed Send still goes (the user decided); the HUD shows the
//!   cooldown's end (`cooldown_until`) on every page of the account.
//!
//! Invariant: no automatic delivery is begun for a tab whose account cools down, and no
//! probe is asked closer than the pacer's interval to the account's last one.

use super::*;
use crate::request_pacer::{account_key, CooldownSource, RequestPacer};

/// The pacer's composed state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct PacerFlow {
    /// The pacer (persisted).
    pub(super) pacer: RequestPacer,
}

impl Continuity {
    /// The pacer's account key of the page of `tab` (`None` before its first report).
    pub(super) fn account_of_tab(&self, tab: TabId) -> Option<String> {
        let report = self.pages.get(&tab)?;
        let site = classify_url(&report.url).scope().map_or(crate::scope::Site::ChatGpt, |s| match s {
            Scope::Conversation { site, .. } => site,
            Scope::Project { .. } => crate::scope::Site::ChatGpt,
        });
        Some(account_key(site.as_str(), report.account.as_deref()))
    }

    /// The pacer keys a request of `tab` must respect: its own account's and, since a page
    /// that has not named its account yet may be any account of the site, the site's
    /// `default` (for a named account) or every account of the site (for `default`). Two
    /// named accounts never share a slot.
    fn related_accounts(&self, tab: TabId) -> Vec<String> {
        let Some(own) = self.account_of_tab(tab) else { return Vec::new() };
        let Some((site, name)) = own.split_once(':') else { return vec![own] };
        let default = account_key(site, None);
        let mut keys: Vec<String> = self
            .pacer
            .pacer
            .accounts()
            .filter(|key| key.split_once(':').is_some_and(|(s, _)| s == site))
            .filter(|key| name == "default" || *key == default.as_str())
            .map(str::to_owned)
            .collect();
        if !keys.contains(&own) {
            keys.push(own);
        }
        keys
    }

    /// The end of the cooldown of `tab`'s account, if one runs now.
    pub(super) fn cooldown_of_tab(&self, tab: TabId) -> Option<Millis> {
        let now = self.now;
        self.related_accounts(tab).iter().filter_map(|a| self.pacer.pacer.cooldown_until(a, now)).max()
    }

    /// `Some(RateLimited)` while `tab`'s account cools down: nothing automatic is typed there.
    pub(super) fn rate_block_tab(&self, tab: TabId) -> Option<WakeWithheld> {
        self.cooldown_of_tab(tab).map(|_| WakeWithheld::RateLimited)
    }

    /// `Some(RateLimited)` while the delivery target of the ledger key `key` cools down.
    pub(super) fn rate_block(&self, key: &str) -> Option<WakeWithheld> {
        self.target_tab(key).and_then(|tab| self.rate_block_tab(tab))
    }

    /// Whether a backend read of `tab`'s page may go now; records it when it may.
    pub(super) fn pacer_request(&mut self, now: Millis, tab: TabId) -> bool {
        let Some(account) = self.account_of_tab(tab) else { return false };
        if !self.pacer_may_request(now, tab) {
            return false;
        }
        self.pacer.pacer.requested(&account, now);
        self.persist();
        true
    }

    /// Whether a backend read of `tab`'s page may go now (nothing recorded).
    pub(super) fn pacer_may_request(&self, now: Millis, tab: TabId) -> bool {
        let related = self.related_accounts(tab);
        !related.is_empty() && related.iter().all(|account| self.pacer.pacer.may_request(account, now).is_ok())
    }

    /// A 429 of `tab`'s account. A probe's failure without a `Retry-After` that a page's
    /// `rate_limited` already started a cooldown for counts once.
    pub(super) fn pacer_rate_limited(&mut self, now: Millis, tab: TabId, retry_after_ms: Option<Millis>, source: CooldownSource) {
        let Some(account) = self.account_of_tab(tab) else { return };
        let before = self.cooldown_of_tab(tab);
        if retry_after_ms.is_none() && before.is_some() && source == CooldownSource::Backoff {
            return;
        }
        self.pacer.pacer.rate_limited(&account, now, retry_after_ms, source);
        let after = self.cooldown_of_tab(tab);
        if after != before {
            self.persist();
            // The schedulers hear of it at once (a wake about to go waits).
            self.sync_schedulers(now);
        }
    }

    /// A page's `rate_limited` message.
    pub(super) fn pacer_page_rate_limited(
        &mut self,
        now: Millis,
        tab: TabId,
        page_load: &str,
        source: CooldownSource,
        retry_after_ms: Option<Millis>,
    ) {
        // A message of a page load the tab no longer shows still tells of the account; one
        // of a tab that never reported names no account and is dropped.
        if page_load.is_empty() || !self.pages.contains_key(&tab) {
            return;
        }
        self.pacer_rate_limited(now, tab, retry_after_ms, source);
    }

    /// When the pacer must be woken (a cooldown's end).
    pub(super) fn pacer_deadline(&self) -> Option<Millis> {
        self.pacer.pacer.next_deadline()
    }

    /// A cooldown ended: everything it held is offered again (still under the other gates).
    pub(super) fn pacer_timeout(&mut self, now: Millis) {
        if !self.pacer.pacer.handle_timeout(now) {
            return;
        }
        // A notice still shown: the account is still limited, nothing is released (found by
        // the property test: a wake typed under the notice). It is the same 429: held again
        // for the current step, not counted as the next one.
        for tab in self.recovery_notice_tabs() {
            if let Some(account) = self.account_of_tab(tab) {
                self.pacer.pacer.still_limited(&account, now);
            }
        }
        self.persist();
        self.sync_schedulers(now);
        self.app_retry_held(now);
        self.flush_queues(now);
        self.pacer_retry_bridge(now);
    }

    /// Offers the bridge results a cooldown (or a busy page) kept back again
    /// (`continuity/bridge`'s owed results: each typed once, when its page is idle).
    pub(super) fn pacer_retry_bridge(&mut self, now: Millis) {
        self.bridge_offer(now);
    }

    /// The HUD's `cooldown_until` of `tab`: the epoch ms its account's cooldown ends.
    pub(super) fn cooldown_line(&self, tab: TabId) -> Option<Millis> {
        self.cooldown_of_tab(tab)
    }

    /// The pacer (read-only; tests and the bench count its slots).
    pub fn request_pacer(&self) -> &RequestPacer {
        &self.pacer.pacer
    }
}
