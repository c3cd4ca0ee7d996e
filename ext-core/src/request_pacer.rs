//! One request pacer per ChatGPT account (issue 26, SPEC H7): every backend read the core
//! asks a page to make (today the recovery's `snapshot_probe`) asks [`RequestPacer`] first,
//! whichever tab of the account it comes from.
//!
//! Pacing: at most one request per [`PACE_MS`] per account (field notes §1: reads ≥ 45 s
//! apart held on the real site, 20 s apart got HTTP 429 after ~8 calls). No bursts: the
//! interval runs from the last request, so five tabs of one account share one slot.
//!
//! Cooldown: a 429 — the page's own fetch answered 429 (its `Retry-After` read), a 429 seen
//! in the page's Resource Timing, or ChatGPT's visible rate-limit notice — starts a
//! cooldown of the account: `Retry-After` when the site gave one (capped at
//! [`RETRY_AFTER_CAP_MS`]), else the back-off steps of [`crate::rate_limit`] (30 s, 60 s,
//! 120 s). A cooldown never shortens while it runs. A notice still shown when its cooldown
//! ends holds the account again for the same step ([`RequestPacer::still_limited`]): it is
//! one 429, not a new one per look. During a cooldown no request goes
//! out, and the composition holds every automatic write of the account's pages
//! ([`crate::auto_gate::WakeWithheld::RateLimited`]).
//!
//! Account key: `"<site>:<account>"` ([`account_key`]); `<account>` is the id the content
//! script learns from ChatGPT's session JSON, else `"default"`.
//!
//! Driver contract: ask [`RequestPacer::may_request`] before a request and call
//! [`RequestPacer::requested`] when it goes out; feed each 429 to
//! [`RequestPacer::rate_limited`]; call [`RequestPacer::handle_timeout`] at
//! [`RequestPacer::next_deadline`] (it forgets ended cooldowns and says whether one ended,
//! so held writes are offered again). Persist the struct (plain data): a worker restart
//! keeps the cooldown and the last request's time.
//!
//! Invariants (tests `tests/it/request_pacer.rs`, property test there and in
//! `continuity_pacing.rs`): two requests of one account are never closer than the
//! interval; none during a cooldown; a cooldown is at most the cap past the 429 that set
//! it; accounts never share a slot or a cooldown.

use serde::Serialize;

use crate::json_read::{ReadJson, WriteJson};
use crate::rate_limit::RateLimit;
use crate::vec_map::VecMap;
use crate::Millis;

/// The default interval between two backend requests of one account.
pub const PACE_MS: Millis = 45_000;
/// The longest cooldown a `Retry-After` can ask for (one hour).
pub const RETRY_AFTER_CAP_MS: Millis = 3_600_000;
/// The longest account id the page may report (`page_facts.account`).
pub const MAX_ACCOUNT_CHARS: usize = 64;

/// Where a cooldown came from (wire snake_case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum CooldownSource {
    /// A response of ours answered 429 with a `Retry-After` header.
    RetryAfter,
    /// A 429 in the page's Resource Timing (`responseStatus`).
    ResourceTiming,
    /// ChatGPT's visible rate-limit notice.
    PageNotice,
    /// A 429 without `Retry-After`: the back-off steps.
    Backoff,
}

/// The pacing state of one account.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct AccountPace {
    /// When the account's last request went out.
    last_request: Option<Millis>,
    /// The back-off steps for 429s without `Retry-After`.
    backoff: RateLimit,
    /// The cooldown's end.
    until: Option<Millis>,
    /// What started (or last extended) the cooldown.
    source: Option<CooldownSource>,
}

/// The pacer of every account (see the module doc). Persist it whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct RequestPacer {
    /// The interval between two requests of one account.
    interval: Millis,
    /// Per account key.
    #[serde(default)]
    accounts: VecMap<String, AccountPace>,
}

impl Default for RequestPacer {
    fn default() -> Self {
        Self::new(PACE_MS)
    }
}

/// The pacer's key of an account: `"<site>:<account>"`, `"default"` when the page named none.
pub fn account_key(site: &str, account: Option<&str>) -> String {
    crate::text::concat(&[site, ":", account.filter(|a| !a.is_empty()).unwrap_or("default")])
}

/// Checks an account id the page reports: at most [`MAX_ACCOUNT_CHARS`] characters of
/// ASCII letters, digits, `-`, `_`, `.` (ChatGPT's `user-…`/uuid ids); otherwise why not.
pub fn valid_account(account: &str) -> Result<(), &'static str> {
    if account.is_empty() {
        return Err("account is empty; send null when the session names none");
    }
    if account.chars().count() > MAX_ACCOUNT_CHARS {
        return Err("account is longer than 64 characters");
    }
    if !account.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) {
        return Err("account holds characters other than ASCII letters, digits, '-', '_', '.'");
    }
    Ok(())
}

impl RequestPacer {
    /// A pacer with `interval` between two requests of one account (never below 1 ms).
    pub fn new(interval: Millis) -> Self {
        Self { interval: interval.max(1), accounts: VecMap::new() }
    }

    /// The account keys the pacer holds a slot or cooldown for.
    pub fn accounts(&self) -> impl Iterator<Item = &str> + '_ {
        self.accounts.keys().map(String::as_str)
    }

    /// The interval between two requests of one account.
    pub fn interval(&self) -> Millis {
        self.interval
    }

    /// `Ok` when `account` may make a backend request at `now`; else the time it may.
    pub fn may_request(&self, account: &str, now: Millis) -> Result<(), Millis> {
        let Some(pace) = self.accounts.get(account) else { return Ok(()) };
        // Times are the wall clock's: one set back never stretches a wait past its cap (a
        // cooldown at most RETRY_AFTER_CAP_MS from now, a slot at most one interval).
        if let Some(until) = pace.until.filter(|u| *u > now) {
            return Err(until.min(now.saturating_add(RETRY_AFTER_CAP_MS)));
        }
        match pace.last_request.map(|at| at.min(now).saturating_add(self.interval)) {
            Some(next) if next > now => Err(next),
            _ => Ok(()),
        }
    }

    /// A request of `account` went out at `now`.
    pub fn requested(&mut self, account: &str, now: Millis) {
        self.forget_idle(now);
        let pace = self.entry(account);
        pace.last_request = Some(pace.last_request.map_or(now, |at| at.max(now)));
    }

    /// `account` was rate-limited at `now`: the cooldown runs `retry_after_ms` (capped at
    /// [`RETRY_AFTER_CAP_MS`]) when the site gave one, else the next back-off step. A
    /// running cooldown is only ever extended.
    pub fn rate_limited(&mut self, account: &str, now: Millis, retry_after_ms: Option<Millis>, source: CooldownSource) {
        self.forget_idle(now);
        let pace = self.entry(account);
        let (until, source) = match retry_after_ms {
            Some(ms) => (now.saturating_add(ms.min(RETRY_AFTER_CAP_MS)), source),
            None => {
                pace.backoff.observe(now);
                let step = pace.backoff.cooling_until(now).unwrap_or(now);
                (step, if source == CooldownSource::RetryAfter { CooldownSource::Backoff } else { source })
            }
        };
        let running = pace.until.filter(|u| *u > now);
        if running.is_none_or(|u| until > u) {
            pace.until = Some(until);
            pace.source = Some(source);
        }
    }

    /// `account` still shows the rate-limit notice that started its cooldown, which ended at
    /// `now`: it is held again for the current back-off step, without counting a new 429
    /// (a notice that stays is the same 429, not one per look).
    pub fn still_limited(&mut self, account: &str, now: Millis) {
        self.forget_idle(now);
        let pace = self.entry(account);
        let until = now.saturating_add(pace.backoff.step_ms());
        if pace.until.filter(|u| *u > now).is_none_or(|u| until > u) {
            pace.until = Some(until);
            pace.source = Some(CooldownSource::PageNotice);
        }
    }

    /// The end of `account`'s running cooldown, if one runs at `now`.
    pub fn cooldown_until(&self, account: &str, now: Millis) -> Option<Millis> {
        self.accounts.get(account).and_then(|p| p.until).filter(|u| *u > now).map(|u| u.min(now.saturating_add(RETRY_AFTER_CAP_MS)))
    }

    /// What started `account`'s running cooldown.
    pub fn cooldown_source(&self, account: &str, now: Millis) -> Option<CooldownSource> {
        self.cooldown_until(account, now)?;
        self.accounts.get(account).and_then(|p| p.source)
    }

    /// The earliest end of a cooldown not yet handled by [`RequestPacer::handle_timeout`].
    pub fn next_deadline(&self) -> Option<Millis> {
        self.accounts.values().filter_map(|p| p.until).min()
    }

    /// Forgets the cooldowns ended at `now`; returns whether one did (the driver offers the
    /// writes it held again).
    pub fn handle_timeout(&mut self, now: Millis) -> bool {
        let mut ended = false;
        for pace in self.accounts.values_mut() {
            if pace.until.is_some_and(|u| u <= now) {
                pace.until = None;
                pace.source = None;
                ended = true;
            }
        }
        self.forget_idle(now);
        ended
    }

    /// Forgets the accounts with nothing left to remember at `now`: no cooldown (not even
    /// an ended one [`RequestPacer::handle_timeout`] has not reported), the last request a
    /// whole interval ago, and no 429 within the back-off's reset window. Such an account
    /// paces exactly as one never seen, so the persisted map holds only live accounts.
    fn forget_idle(&mut self, now: Millis) {
        let interval = self.interval;
        self.accounts.retain(|_, pace| {
            pace.until.is_some() || pace.last_request.is_some_and(|at| at.saturating_add(interval) > now) || !pace.backoff.settled_at(now)
        });
    }

    fn entry(&mut self, account: &str) -> &mut AccountPace {
        self.accounts.entry(account.to_owned()).or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_request_per_interval_per_account_and_accounts_apart() {
        let mut p = RequestPacer::default();
        assert_eq!(p.may_request("chatgpt:a", 0), Ok(()));
        p.requested("chatgpt:a", 0);
        assert_eq!(p.may_request("chatgpt:a", 20_000), Err(PACE_MS));
        assert_eq!(p.may_request("chatgpt:b", 20_000), Ok(()), "another account has its own slot");
        assert_eq!(p.may_request("chatgpt:a", PACE_MS), Ok(()));
    }

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let mut p = RequestPacer::default();
        p.rate_limited("chatgpt:a", 1_000, Some(516_000), CooldownSource::RetryAfter);
        assert_eq!(p.cooldown_until("chatgpt:a", 1_000), Some(517_000));
        assert_eq!(p.may_request("chatgpt:a", 400_000), Err(517_000));
        assert_eq!(p.cooldown_source("chatgpt:a", 2_000), Some(CooldownSource::RetryAfter));
        p.rate_limited("chatgpt:a", 2_000, Some(20_000), CooldownSource::RetryAfter);
        assert_eq!(p.cooldown_until("chatgpt:a", 2_000), Some(517_000), "never shortened");
        p.rate_limited("chatgpt:b", 0, Some(99_999_999), CooldownSource::RetryAfter);
        assert_eq!(p.cooldown_until("chatgpt:b", 0), Some(RETRY_AFTER_CAP_MS));
    }

    #[test]
    fn without_retry_after_the_back_off_steps() {
        let mut p = RequestPacer::default();
        p.rate_limited("chatgpt:a", 0, None, CooldownSource::ResourceTiming);
        assert_eq!(p.cooldown_until("chatgpt:a", 0), Some(30_000));
        assert_eq!(p.cooldown_source("chatgpt:a", 0), Some(CooldownSource::ResourceTiming));
        assert_eq!(p.next_deadline(), Some(30_000));
        assert!(!p.handle_timeout(29_999));
        assert!(p.handle_timeout(30_000));
        assert_eq!(p.next_deadline(), None);
        p.rate_limited("chatgpt:a", 40_000, None, CooldownSource::PageNotice);
        assert_eq!(p.cooldown_until("chatgpt:a", 40_000), Some(100_000), "second step");
    }

    /// Closing note 26 (failed before: every account ever seen stayed in the persisted map).
    #[test]
    fn an_account_idle_past_its_slot_and_back_off_window_is_forgotten() {
        let mut p = RequestPacer::default();
        p.requested("chatgpt:a", 0);
        p.rate_limited("chatgpt:b", 0, None, CooldownSource::ResourceTiming);
        p.requested("chatgpt:c", 0);
        // Within its slot, its cooldown or its back-off window, each is kept.
        p.requested("chatgpt:d", 30_000);
        assert_eq!(p.accounts().count(), 4);
        let later = crate::rate_limit::RESET_AFTER_MS + 1;
        p.requested("chatgpt:c", later - 1_000);
        p.requested("chatgpt:e", later);
        // b's ended cooldown is kept until `handle_timeout` reports it (held writes wait on it).
        assert_eq!(p.accounts().collect::<Vec<_>>(), ["chatgpt:b", "chatgpt:c", "chatgpt:e"], "a and d idled out; c is in its slot");
        assert!(p.handle_timeout(later + PACE_MS), "b's ended cooldown is reported");
        assert_eq!(p.accounts().count(), 0, "then everything idle is forgotten");
    }

    #[test]
    fn account_ids_are_checked() {
        assert_eq!(account_key("chatgpt", None), "chatgpt:default");
        assert_eq!(account_key("chatgpt", Some("user-abc")), "chatgpt:user-abc");
        assert!(valid_account("user-AbC_1.2").is_ok());
        assert!(valid_account("").is_err());
        assert!(valid_account("a b").is_err());
        assert!(valid_account(&"x".repeat(65)).is_err());
    }

    #[test]
    fn a_wall_clock_set_back_never_stretches_a_wait_past_its_cap() {
        let mut p = RequestPacer::default();
        let ten_hours = 36_000_000;
        p.requested("chatgpt:a", ten_hours);
        p.rate_limited("chatgpt:a", ten_hours, Some(60_000), CooldownSource::RetryAfter);
        let nine_hours = 32_400_000;
        assert_eq!(p.cooldown_until("chatgpt:a", nine_hours), Some(nine_hours + RETRY_AFTER_CAP_MS));
        assert_eq!(p.may_request("chatgpt:a", nine_hours), Err(nine_hours + RETRY_AFTER_CAP_MS));
        p.requested("chatgpt:b", ten_hours);
        assert_eq!(p.may_request("chatgpt:b", nine_hours), Err(nine_hours + PACE_MS));
    }
}
