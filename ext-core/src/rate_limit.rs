//! ChatGPT's rate limit (SPEC H7): a visible rate-limit notice or an HTTP 429 seen in the
//! page's Resource Timing only ever backs off — 30 s, then 60 s, then 120 s (the cap) —
//! and while the cooldown lasts the extension sends nothing of its own to the site: no
//! Retry, no reload, no snapshot or other request.
//!
//! Driver contract: call [`RateLimit::observe`] for each 429 the page adapter reports and
//! ask [`RateLimit::cooling_until`] before any request or page action of ours.
//!
//! Invariants (tests in `tests/it/rate_limit.rs`): at most one 429 counts per
//! [`COUNT_WINDOW_MS`]; the cooldown never exceeds the cap and never shortens while it
//! runs; after [`RESET_AFTER_MS`] without a 429 the next one starts at 30 s again. A notice
//! that stays on the page is one 429: the driver counts it when it appears and, while it
//! stays, only holds again for the current step ([`RateLimit::step_ms`]).

use serde::Serialize;

use crate::json_read::{ReadJson, WriteJson};
use crate::Millis;

/// The cooldown steps.
pub const COOLDOWNS_MS: [Millis; 3] = [30_000, 60_000, 120_000];
/// One 429 counts per this window (a burst of failed requests is one event).
pub const COUNT_WINDOW_MS: Millis = 10_000;
/// Quiet time after which the steps start again.
pub const RESET_AFTER_MS: Millis = 10 * 60_000;

/// The back-off state of one tab's site.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct RateLimit {
    /// 429s counted in this run of back-offs (0 = none).
    step: u32,
    /// When the last counted 429 was seen.
    last_counted: Option<Millis>,
    /// The cooldown's end.
    until: Option<Millis>,
}

impl RateLimit {
    /// A 429 (or a visible rate-limit notice) at `now`; returns whether it counted.
    pub fn observe(&mut self, now: Millis) -> bool {
        if let Some(last) = self.last_counted {
            if now.saturating_sub(last) < COUNT_WINDOW_MS {
                return false;
            }
            if now.saturating_sub(last) >= RESET_AFTER_MS {
                self.step = 0;
            }
        }
        self.step = (self.step + 1).min(COOLDOWNS_MS.len() as u32);
        self.last_counted = Some(now);
        let until = now.saturating_add(COOLDOWNS_MS[self.step as usize - 1]);
        self.until = Some(self.until.map_or(until, |u| u.max(until)));
        true
    }

    /// The length of the current back-off step (the first one before any 429 counted): how
    /// long a 429 that is still shown holds again without counting as a new one.
    pub fn step_ms(&self) -> Millis {
        COOLDOWNS_MS[(self.step.max(1) as usize).min(COOLDOWNS_MS.len()) - 1]
    }

    /// Holds until at least `until` (a cooldown of the account set elsewhere, e.g. by
    /// `Retry-After`); never shortens a running one, never counts as a 429.
    pub fn hold_until(&mut self, until: Millis) {
        self.until = Some(self.until.map_or(until, |u| u.max(until)));
    }

    /// Whether nothing of it matters any more at `now`: no cooldown running and no 429
    /// counted within [`RESET_AFTER_MS`] (a new one would start again at the first step).
    pub fn settled_at(&self, now: Millis) -> bool {
        self.cooling_until(now).is_none() && self.last_counted.is_none_or(|last| now.saturating_sub(last) >= RESET_AFTER_MS)
    }

    /// The end of the running cooldown, if one runs at `now`.
    pub fn cooling_until(&self, now: Millis) -> Option<Millis> {
        self.until.filter(|until| *until > now)
    }
}
