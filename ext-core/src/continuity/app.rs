//! The chat's App on every message we type (issue 24): a chat whose user turns carry an
//! App pill (ChatGPT's Apps; the Herdr App gives the planner its tools only in a turn whose
//! message carries it) gets that App attached to every delivery.
//!
//! Learning: each page report of a binding's delivery target names its newest human
//! (unmarked) user turn and that turn's pills; the binding reads each turn once
//! ([`crate::binding::ScopeBinding::learn_app`]): exactly one App is learned, several make
//! it ambiguous, none keeps what was learned. The HUD's "Forget App" clears it.
//!
//! Carrying: [`Continuity::post_delivery`] asks [`Continuity::app_block`] first and hands the
//! binding's App (a handoff seed: the source binding's) to the ledger with every delivery.
//!
//! Holding: a delivery the page answers `app_not_attached` did not land; its scope (the
//! ledger key) is held with the named reason and a backoff ([`app_retry_wait`]: 30 s,
//! doubling, at most 5 min). While held — or while the App is ambiguous — nothing of the
//! scope is typed: wakes stay pending in their scheduler (not a failed attempt, their
//! exactly-once kept), queue items stay queued, a judge continue waits, a seed stays due.
//! When the wait ends the next delivery tries again; the first one that lands ends the hold.
//!
//! Invariants:
//! - With an App learned, no delivery leaves without it; never a plain retry.
//! - A held delivery is never lost: it goes once attaching works.
//! - The HUD's withheld line and the Activity timeline name the reason.

use super::*;

/// The first wait after an App could not be attached.
pub const APP_RETRY_FIRST_MS: Millis = 30_000;
/// The longest wait between tries.
pub const APP_RETRY_MAX_MS: Millis = 300_000;

/// How long a scope waits after its `failures`-th App failure in a row (1-based): 30 s,
/// 60 s, 120 s, 240 s, then 300 s.
pub fn app_retry_wait(failures: u32) -> Millis {
    let doublings = failures.saturating_sub(1).min(8);
    APP_RETRY_FIRST_MS.saturating_mul(1 << doublings).min(APP_RETRY_MAX_MS)
}

/// A scope whose last delivery could not attach its App (not persisted: a restarted
/// worker tries once more at once). Kept in a plain `Vec` (a few at most; a `VecMap` of its
/// own cost the wasm more).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct AppHold {
    /// The ledger key it holds.
    pub(super) key: String,
    /// The named reason (an `app_*` code).
    pub(super) reason: WakeWithheld,
    /// Failures in a row.
    pub(super) failures: u32,
    /// Until when nothing is typed.
    pub(super) until: Millis,
    /// The wait has ended and the held deliveries were offered again.
    pub(super) retried: bool,
}

/// The withheld code of an App failure's detail.
pub fn app_withheld(detail: AppAttachFailure) -> WakeWithheld {
    match detail {
        AppAttachFailure::NoPermission => WakeWithheld::AppNoPermission,
        AppAttachFailure::PickerNotOpened => WakeWithheld::AppPickerNotOpened,
        AppAttachFailure::OptionMissing => WakeWithheld::AppOptionMissing,
        AppAttachFailure::PillNotReadBack => WakeWithheld::AppPillNotReadBack,
        AppAttachFailure::Unknown => WakeWithheld::AppNotAttached,
    }
}

/// The binding key a ledger key's App comes from: a handoff seed's is its source's.
fn binding_key(ledger_key: &str) -> &str {
    ledger_key.strip_prefix(SEED_KEY_PREFIX).unwrap_or(ledger_key)
}

impl Continuity {
    /// What a delivery of the ledger key `key` must carry.
    pub(super) fn app_need(&self, key: &str) -> AppNeed<'_> {
        let key = binding_key(key);
        self.bindings.list().find(|b| b.scope.key() == key).map_or(AppNeed::None, |b| b.app_need())
    }

    /// Why nothing of the ledger key `key` may be typed now because of its App.
    pub(super) fn app_block(&self, key: &str) -> Option<WakeWithheld> {
        if matches!(self.app_need(key), AppNeed::Ambiguous) {
            return Some(WakeWithheld::AppAmbiguous);
        }
        self.app_hold(key).filter(|h| h.until > self.now).map(|h| h.reason)
    }

    /// The reason the HUD shows for `key`'s App while it holds anything (also after the wait
    /// ended, until a delivery lands).
    pub(super) fn app_reason(&self, key: &str) -> Option<WakeWithheld> {
        if matches!(self.app_need(key), AppNeed::Ambiguous) {
            return Some(WakeWithheld::AppAmbiguous);
        }
        self.app_hold(key).map(|h| h.reason)
    }

    /// The hold of the ledger key `key`.
    pub(super) fn app_hold(&self, key: &str) -> Option<&AppHold> {
        self.app_holds.iter().find(|h| h.key == key)
    }

    /// Ends the hold of the ledger key `key`.
    pub(super) fn app_hold_end(&mut self, key: &str) {
        self.app_holds.retain(|h| h.key != key);
    }

    /// When a held scope may try again.
    pub(super) fn app_deadline(&self) -> Option<Millis> {
        self.app_holds.iter().filter(|h| !h.retried).map(|h| h.until).min()
    }

    /// Whether a hold's wait ended at `now` (each once): its deliveries may go again.
    pub(super) fn app_retry_due(&mut self, now: Millis) -> bool {
        let mut due = false;
        for hold in self.app_holds.iter_mut().filter(|h| !h.retried && h.until <= now) {
            hold.retried = true;
            due = true;
        }
        due
    }

    /// Offers again what the scopes' holds kept back and nothing else retries by itself: a
    /// handoff's due seed and a judge continue (wakes and queue batches go through their
    /// own paths, the caller runs them).
    pub(super) fn app_retry_held(&mut self, now: Millis) {
        self.handoff_post_due_seeds(now);
        self.semantic_retry_held(now);
    }

    /// A page report: each binding whose delivery target the page shows reads the page's
    /// newest human turn once.
    pub(super) fn app_learn(&mut self, tab: TabId) {
        let Some(report) = self.pages.get(&tab) else { return };
        let Some(turn) = report.last_human_turn_id.as_deref() else { return };
        let Some(conversation) = classify_url(&report.url).conversation() else { return };
        let keys: Vec<String> =
            self.bindings.list().filter(|b| b.delivery_target().as_ref() == Some(&conversation)).map(|b| b.scope.key()).collect();
        let (turn, apps) = (turn.to_owned(), report.human_apps.clone());
        for key in keys {
            if self.bindings.learn_app(&key, &turn, &apps) {
                self.persist();
            }
        }
    }

    /// HUD: "Forget App" on `tab`'s chat. Its holds go, and what they kept back is offered
    /// at once, plain (a due hold is what retries a judge continue or a seed, and there is
    /// none left).
    pub(super) fn app_forget(&mut self, now: Millis, tab: TabId) {
        let Some(scope) = self.scope_of_tab(tab) else { return };
        let key = scope.key();
        if self.bindings.forget_app(&key) {
            self.app_hold_end(&key);
            self.app_hold_end(&crate::text::concat(&[SEED_KEY_PREFIX, &key]));
            self.notice(tab, Say::new("appForgotten", vec![]), NoticeTone::Info);
            self.persist();
            self.sync_schedulers(now);
            self.app_retry_held(now);
        }
    }

    /// The page answered `app_not_attached` for the delivery `id` typed into `tab`: its scope
    /// is held (before the ledger resolves it, so every retry path sees the hold).
    pub(super) fn app_not_attached(&mut self, tab: TabId, id: &str, detail: AppAttachFailure) {
        let Some(key) = self.ledger.active().find(|d| d.id == id && d.tab == tab).map(|d| d.scope_key.clone()) else { return };
        let failures = self.app_hold(&key).map_or(0, |h| h.failures).saturating_add(1);
        let until = self.now.saturating_add(app_retry_wait(failures));
        let reason = app_withheld(detail);
        self.app_hold_end(&key);
        self.app_holds.push(AppHold { key, reason, failures, until, retried: false });
        self.notice(tab, withheld_say(reason), NoticeTone::Bad);
    }

    /// A delivery of `key` landed: its App attaches again.
    pub(super) fn app_landed(&mut self, key: &str) {
        self.app_hold_end(key);
    }
}
