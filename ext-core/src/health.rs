//! Page health meters of one tab (SPEC H1–H4): fixed-window, O(1) aggregates of what the
//! page adapter counts, and the two situations in which a reload may help. The adapter
//! only counts (MutationObserver callbacks, a sampled timer's drift, Long Tasks, the JS
//! heap where Chromium exposes it) and sends a sample every few seconds; everything is
//! decided here.
//!
//! - Meters per fixed [`WINDOW_MS`] window: callbacks (per minute), the worst timer drift,
//!   Long Task time and count, and the latest heap figures. Levels from the
//!   [`HealthThresholds`] (the options page's, `crate::recovery_config`), by default
//!   herdr-mcp's (REFERENCE §2): callbacks/min warn 600 / high 2 400; drift warn 1.5 s /
//!   high 5 s; sustained 30 s; quiet 30 s; heap 1.5 GiB.
//! - A single spike is recorded, never acted on: *sustained* pressure means high samples
//!   without a break for [`SUSTAINED_MS`].
//! - H3, live turn: sustained pressure and no assistant progress make a live-turn reload
//!   *eligible*; the recovery planner still needs the snapshot to prove a finished
//!   assistant `current_node`, and its budgets apply.
//! - H4, critical heap (≥ 1.5 GiB or ≥ 0.78 of the limit): a maintenance reload is
//!   eligible only after the page was quiet for [`QUIET_MS`] — no human input, no running
//!   tool, no permission card, no unconfirmed delivery, nothing streaming.
//! - H2: nothing here ever removes page DOM; memory is reclaimed only by a controlled
//!   reload.
//!
//! Invariant (property test in `tests/it/health.rs`): a pressure spike shorter than
//! [`SUSTAINED_MS`] never makes anything eligible; a maintenance reload is never eligible
//! while a blocker holds or within [`QUIET_MS`] of one.

use serde::Serialize;

use crate::Millis;

/// The meters' window.
pub const WINDOW_MS: Millis = 60_000;
/// Pressure must last this long to count.
pub const SUSTAINED_MS: Millis = 30_000;
/// Quiet time before a maintenance reload.
pub const QUIET_MS: Millis = 30_000;
/// Callbacks per minute: warn, high.
pub const CALLBACKS_PER_MIN: (u64, u64) = (600, 2_400);
/// Timer drift in ms: warn, high.
pub const DRIFT_MS: (u64, u64) = (1_500, 5_000);
/// Heap used that is critical, in bytes (1.5 GiB).
pub const HEAP_CRITICAL_BYTES: u64 = 3 * 512 * 1024 * 1024;
/// Heap used over the limit that is critical, in per mille.
pub const HEAP_CRITICAL_PER_MILLE: u64 = 780;

/// The thresholds a meter judges by (the options page's; defaults the constants above).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HealthThresholds {
    /// Callbacks per minute that warn.
    pub callbacks_warn: u64,
    /// Callbacks per minute that are high.
    pub callbacks_high: u64,
    /// Timer drift in ms that warns.
    pub drift_warn_ms: u64,
    /// Timer drift in ms that is high.
    pub drift_high_ms: u64,
    /// Heap used that is critical, in bytes.
    pub heap_critical_bytes: u64,
    /// How long pressure must last to count.
    pub sustained_ms: Millis,
    /// Quiet time before a maintenance reload.
    pub quiet_ms: Millis,
}

impl Default for HealthThresholds {
    fn default() -> Self {
        Self {
            callbacks_warn: CALLBACKS_PER_MIN.0,
            callbacks_high: CALLBACKS_PER_MIN.1,
            drift_warn_ms: DRIFT_MS.0,
            drift_high_ms: DRIFT_MS.1,
            heap_critical_bytes: HEAP_CRITICAL_BYTES,
            sustained_ms: SUSTAINED_MS,
            quiet_ms: QUIET_MS,
        }
    }
}

/// What the adapter counted since its last sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct HealthSample {
    /// MutationObserver callbacks.
    pub callbacks: u64,
    /// The worst lateness of its sampling timer, in ms.
    pub drift_ms: u64,
    /// Long Task time, in ms.
    pub long_task_ms: u64,
    /// Long Tasks.
    pub long_tasks: u64,
    /// `performance.memory.usedJSHeapSize`, when exposed.
    pub heap_used: Option<u64>,
    /// `performance.memory.jsHeapSizeLimit`, when exposed.
    pub heap_limit: Option<u64>,
}

/// A meter's level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HealthLevel {
    /// Fine.
    #[default]
    Normal,
    /// Worth showing.
    Warn,
    /// High.
    High,
}

/// One window's figures (HUD).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Window {
    /// When it started.
    pub start: Millis,
    /// Callbacks in it.
    pub callbacks: u64,
    /// Worst drift in it.
    pub drift_ms: u64,
    /// Long Task time in it.
    pub long_task_ms: u64,
    /// Long Tasks in it.
    pub long_tasks: u64,
}

/// What the page is doing that blocks a maintenance reload (H4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Activity {
    /// A reply streams or a tool runs.
    pub busy: bool,
    /// The composer holds a human draft, or the user typed recently.
    pub human_input: bool,
    /// A permission card waits.
    pub permission_card: bool,
    /// One of our deliveries is unconfirmed.
    pub delivery_uncertain: bool,
}

impl Activity {
    /// Whether anything holds a maintenance reload back (H4).
    pub fn blocks(self) -> bool {
        self.busy || self.human_input || self.permission_card || self.delivery_uncertain
    }
}

/// The meters of one tab (not persisted: a reload starts them again).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HealthMeter {
    current: Window,
    last: Option<Window>,
    last_sample_at: Option<Millis>,
    high_since: Option<Millis>,
    blocked_at: Option<Millis>,
    first_sample_at: Option<Millis>,
    heap: (Option<u64>, Option<u64>),
    spikes: u64,
    /// What it judges by.
    thresholds: HealthThresholds,
}

/// The callbacks-per-minute level of `callbacks` over `elapsed` ms.
fn rate_level(callbacks: u64, elapsed: Millis, t: &HealthThresholds) -> HealthLevel {
    let per_min = callbacks.saturating_mul(60_000) / elapsed.max(1_000);
    level(per_min, (t.callbacks_warn, t.callbacks_high))
}

fn level(value: u64, (warn, high): (u64, u64)) -> HealthLevel {
    if value >= high {
        HealthLevel::High
    } else if value >= warn {
        HealthLevel::Warn
    } else {
        HealthLevel::Normal
    }
}

impl HealthMeter {
    /// A meter that judges by `thresholds`.
    pub fn with_thresholds(thresholds: HealthThresholds) -> Self {
        Self { thresholds, ..Self::default() }
    }

    /// New thresholds (the options page changed); the figures stay.
    pub fn set_thresholds(&mut self, thresholds: HealthThresholds) {
        self.thresholds = thresholds;
    }

    /// A sample at `now` with the page's activity then. O(1).
    pub fn sample(&mut self, now: Millis, sample: HealthSample, activity: Activity) {
        if now.saturating_sub(self.current.start) >= WINDOW_MS || self.last_sample_at.is_none() {
            if self.last_sample_at.is_some() {
                self.last = Some(self.current);
            }
            self.current = Window { start: now - now % WINDOW_MS, ..Window::default() };
        }
        self.first_sample_at.get_or_insert(now);
        let elapsed = self.last_sample_at.map_or(WINDOW_MS, |at| now.saturating_sub(at));
        self.last_sample_at = Some(now);
        self.current.callbacks = self.current.callbacks.saturating_add(sample.callbacks);
        self.current.drift_ms = self.current.drift_ms.max(sample.drift_ms);
        self.current.long_task_ms = self.current.long_task_ms.saturating_add(sample.long_task_ms);
        self.current.long_tasks = self.current.long_tasks.saturating_add(sample.long_tasks);
        if sample.heap_used.is_some() {
            self.heap = (sample.heap_used, sample.heap_limit);
        }
        let t = &self.thresholds;
        let high = rate_level(sample.callbacks, elapsed, t) == HealthLevel::High
            || level(sample.drift_ms, (t.drift_warn_ms, t.drift_high_ms)) == HealthLevel::High;
        match (high, self.high_since) {
            (true, None) => {
                self.high_since = Some(now);
                self.spikes += 1;
            }
            (false, _) => self.high_since = None,
            (true, Some(_)) => {}
        }
        if activity.blocks() {
            self.blocked_at = Some(now);
        }
    }

    /// The level the HUD shows: the worse of the running and the last full window.
    pub fn level(&self, now: Millis) -> HealthLevel {
        let t = &self.thresholds;
        let of =
            |w: &Window, elapsed: Millis| rate_level(w.callbacks, elapsed, t).max(level(w.drift_ms, (t.drift_warn_ms, t.drift_high_ms)));
        let current = of(&self.current, now.saturating_sub(self.current.start).max(WINDOW_MS / 2));
        self.last.as_ref().map_or(current, |w| current.max(of(w, WINDOW_MS)))
    }

    /// Pressure spikes seen (each run of high samples counts once).
    pub fn spikes(&self) -> u64 {
        self.spikes
    }

    /// High pressure without a break for the sustained time ([`SUSTAINED_MS`] by default).
    pub fn sustained(&self, now: Millis) -> bool {
        self.high_since.is_some_and(|at| now.saturating_sub(at) >= self.thresholds.sustained_ms)
    }

    /// The heap is critical (H4).
    pub fn heap_critical(&self) -> bool {
        match self.heap {
            (Some(used), limit) => {
                used >= self.thresholds.heap_critical_bytes
                    || limit.is_some_and(|l| l > 0 && used.saturating_mul(1_000) >= l.saturating_mul(HEAP_CRITICAL_PER_MILLE))
            }
            (None, _) => false,
        }
    }

    /// H3: a live-turn reload may be considered (the recovery planner still needs the
    /// snapshot to prove a finished assistant node).
    pub fn live_turn_reload_eligible(&self, now: Millis, assistant_progress_at: Option<Millis>) -> bool {
        self.sustained(now) && assistant_progress_at.is_none_or(|at| now.saturating_sub(at) >= self.thresholds.sustained_ms)
    }

    /// H4: a maintenance reload may be considered: critical heap, and the page quiet for
    /// the quiet time ([`QUIET_MS`] by default) with nothing blocking now.
    pub fn maintenance_reload_eligible(&self, now: Millis, activity: Activity) -> bool {
        self.heap_critical()
            && !activity.blocks()
            && self.blocked_at.or(self.first_sample_at).is_some_and(|at| now.saturating_sub(at) >= self.thresholds.quiet_ms)
    }

    /// The running window (HUD).
    pub fn window(&self) -> Window {
        self.current
    }

    /// The last heap figures (used, limit), when the page exposes them.
    pub fn heap(&self) -> (Option<u64>, Option<u64>) {
        self.heap
    }
}
