//! Progress push: low-noise progress messages while a scope is working (SPEC P2–P6, P8).
//!
//! `progressTickSec` is how often the machine *checks* for a summary, not how often it
//! sends (P3). A progress message goes out only for a new, non-empty summary that differs
//! from the last one sent (P4). After `progressFallbackSec` without a new summary, one
//! fallback status may go out (P5). The last sent summary and its time are part of the
//! persisted state, so dedup survives a service-worker restart (P6). Working starts the
//! checks (P2); settle stops them (P8).
//!
//! Invariants:
//! - Two delivered summaries in a row are never equal (after trimming), across working
//!   episodes and restarts.
//! - It keeps no record of a message in flight (the owner's delivery ledger is the only
//!   one): the owner answers every offer, at once with [`ProgressInput::NotDelivered`] when
//!   it cannot send it now (one message of a scope is in flight at a time), or later with
//!   what its record of the message carried.
//! - At most one fallback per quiet stretch; a delivered new summary starts a new stretch.
//! - While idle (settled), no deadline exists and nothing is offered.

use std::collections::VecDeque;

use serde::Serialize;

use crate::json_read::{ReadJson, WriteJson};

use crate::Millis;

/// Options page settings (O4) in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct ProgressConfig {
    /// How often to check for a new summary (`progressTickSec`, default 60 s).
    pub tick_ms: Millis,
    /// Quiet time before one fallback status (`progressFallbackSec`, default 1200 s).
    pub fallback_ms: Millis,
}

impl Default for ProgressConfig {
    fn default() -> Self {
        Self { tick_ms: 60_000, fallback_ms: 1_200_000 }
    }
}

impl ProgressConfig {
    /// The smallest check interval accepted; smaller values are raised to it so a bad
    /// option can never make a busy loop.
    pub const MIN_TICK_MS: Millis = 5_000;
    /// Accepted `progressTickSec` values (options page, O4).
    pub const TICK_SEC_RANGE: (u64, u64) = (5, 3_600);
    /// Accepted `progressFallbackSec` values (options page, O4).
    pub const FALLBACK_SEC_RANGE: (u64, u64) = (60, 86_400);

    /// The settings of the options page (`progressTickSec`, `progressFallbackSec`), each
    /// clamped into its range ([`Self::TICK_SEC_RANGE`], [`Self::FALLBACK_SEC_RANGE`]) so
    /// that a hand-edited or out-of-range value never makes a busy loop or a dead timer.
    pub fn from_settings(tick_sec: u64, fallback_sec: u64) -> Self {
        let (tick_min, tick_max) = Self::TICK_SEC_RANGE;
        let (fallback_min, fallback_max) = Self::FALLBACK_SEC_RANGE;
        Self {
            tick_ms: tick_sec.clamp(tick_min, tick_max).saturating_mul(1_000),
            fallback_ms: fallback_sec.clamp(fallback_min, fallback_max).saturating_mul(1_000),
        }
        .clamped()
    }

    fn clamped(self) -> Self {
        let tick_ms = self.tick_ms.max(Self::MIN_TICK_MS);
        Self { tick_ms, fallback_ms: self.fallback_ms.max(tick_ms) }
    }
}

/// A summary that was delivered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct SentSummary {
    /// The trimmed text.
    pub text: String,
    /// When its delivery was confirmed.
    pub at: Millis,
}

/// A progress message in flight as an earlier release saved it in [`ProgressPush`] (read
/// only; the delivery ledger holds the message in flight now).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LegacyInFlightProgress {
    /// A new summary.
    Summary {
        /// The trimmed text offered.
        text: String,
    },
    /// The fallback status.
    Fallback,
}

/// Whether the scope is working.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum ProgressPhase {
    /// Settled or never worked: no checks.
    Idle,
    /// Working: checks run.
    Working {
        /// When the scope went working.
        since: Millis,
        /// Next summary check.
        next_check_at: Millis,
        /// When the fallback is due; `None` once sent in this quiet stretch.
        fallback_due_at: Option<Millis>,
    },
}

/// The machine's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressTimer {
    /// Time to ask for a summary.
    Check,
    /// Time for the fallback status.
    Fallback,
}

/// Facts the owner feeds in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ProgressInput {
    /// The scope went working (P2).
    ScopeWorking,
    /// The scope settled (P8).
    ScopeSettled,
    /// Answer to [`ProgressOutput::CheckSummary`]: the latest summary, if any.
    SummaryChecked {
        /// The summary text; `None` when none exists or the check failed.
        summary: Option<String>,
    },
    /// An offered message was confirmed on the page.
    Delivered {
        /// The summary it carried (trimmed, as offered); `None`: it was the fallback.
        summary: Option<String>,
    },
    /// An offered message was not sent (withheld or failed).
    NotDelivered {
        /// It was the fallback status.
        fallback: bool,
    },
    /// New options.
    ConfigChanged {
        /// The new settings.
        config: ProgressConfig,
    },
}

/// Decisions for the owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ProgressOutput {
    /// Ask the runtime for the workspace's latest summary; answer with `SummaryChecked`.
    CheckSummary,
    /// Offer a new summary for delivery.
    SendProgress {
        /// The trimmed summary.
        summary: String,
    },
    /// Offer the one fallback status.
    SendFallback {
        /// How long there has been no new summary.
        quiet_for_ms: Millis,
    },
}

/// Progress push for one scope.
///
/// Driver contract: feed facts with [`ProgressPush::handle`]; when the clock reaches
/// [`ProgressPush::next_deadline`], call [`ProgressPush::handle_timeout`]; after either,
/// drain [`ProgressPush::poll`]. Every `SendProgress` / `SendFallback` must be answered
/// with `Delivered` or `NotDelivered`, naming what the offer carried (the owner keeps the
/// record of a message in flight, across restarts too). Persist the struct (serde) after
/// each batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
pub struct ProgressPush {
    /// The settings in force (clamped).
    config: ProgressConfig,
    /// Working or idle, with the timers of the working phase.
    phase: ProgressPhase,
    /// The last delivered summary (P6).
    last_sent: Option<SentSummary>,
    /// The message in flight as an earlier release saved it here (read, never written: the
    /// owner moves it into its delivery record on restore, see [`ProgressPush::take_legacy_in_flight`]).
    #[serde(default, skip_serializing, rename = "in_flight")]
    legacy_in_flight: Option<LegacyInFlightProgress>,
    /// Decisions not yet drained (not persisted).
    #[serde(skip)]
    outputs: VecDeque<ProgressOutput>,
}

impl ProgressPush {
    /// An idle machine.
    pub fn new(config: ProgressConfig) -> Self {
        Self { config: config.clamped(), phase: ProgressPhase::Idle, last_sent: None, legacy_in_flight: None, outputs: VecDeque::new() }
    }

    /// The message an earlier release saved as in flight here, once (restore only): the
    /// summary it carried, or `Some(None)` for the fallback status.
    pub fn take_legacy_in_flight(&mut self) -> Option<Option<String>> {
        self.legacy_in_flight.take().map(|old| match old {
            LegacyInFlightProgress::Summary { text } => Some(text),
            LegacyInFlightProgress::Fallback => None,
        })
    }

    /// The last delivered summary.
    pub fn last_sent(&self) -> Option<&SentSummary> {
        self.last_sent.as_ref()
    }

    /// Whether the scope is working.
    pub fn is_working(&self) -> bool {
        matches!(self.phase, ProgressPhase::Working { .. })
    }

    /// Feeds one fact.
    pub fn handle(&mut self, now: Millis, input: ProgressInput) {
        match input {
            ProgressInput::ScopeWorking => {
                if !self.is_working() {
                    self.phase = ProgressPhase::Working {
                        since: now,
                        next_check_at: now.saturating_add(self.config.tick_ms),
                        fallback_due_at: Some(now.saturating_add(self.config.fallback_ms)),
                    };
                }
            }
            ProgressInput::ScopeSettled => self.phase = ProgressPhase::Idle,
            ProgressInput::SummaryChecked { summary } => self.consider(summary),
            ProgressInput::Delivered { summary } => {
                if let Some(text) = summary {
                    self.last_sent = Some(SentSummary { text, at: now });
                    // A new summary starts a new quiet stretch (P5).
                    if let ProgressPhase::Working { fallback_due_at, .. } = &mut self.phase {
                        *fallback_due_at = Some(now.saturating_add(self.config.fallback_ms));
                    }
                }
            }
            ProgressInput::NotDelivered { fallback } => {
                if fallback {
                    // Offer the fallback again at the next check, not in a tight loop.
                    let tick = self.config.tick_ms;
                    if let ProgressPhase::Working { fallback_due_at, .. } = &mut self.phase {
                        *fallback_due_at = Some(now.saturating_add(tick));
                    }
                }
                // An undelivered summary is simply forgotten: the next check offers it
                // again while it is still newer than the last delivered one.
            }
            ProgressInput::ConfigChanged { config } => {
                self.config = config.clamped();
                let tick = self.config.tick_ms;
                if let ProgressPhase::Working { next_check_at, .. } = &mut self.phase {
                    *next_check_at = (*next_check_at).min(now.saturating_add(tick));
                }
            }
        }
    }

    /// Fires the timers that are due at `now`.
    pub fn handle_timeout(&mut self, now: Millis) {
        let quiet_since = self.quiet_since();
        let ProgressPhase::Working { next_check_at, fallback_due_at, .. } = &mut self.phase else {
            return;
        };
        if now >= *next_check_at {
            *next_check_at = now.saturating_add(self.config.tick_ms);
            self.outputs.push_back(ProgressOutput::CheckSummary);
        }
        if let Some(due) = *fallback_due_at {
            if now >= due {
                *fallback_due_at = None;
                self.outputs.push_back(ProgressOutput::SendFallback { quiet_for_ms: now.saturating_sub(quiet_since) });
            }
        }
    }

    /// The earliest timer, if working.
    pub fn next_deadline(&self) -> Option<Millis> {
        self.next_timer().map(|(_, at)| at)
    }

    /// The earliest timer and which one it is, if working.
    pub fn next_timer(&self) -> Option<(ProgressTimer, Millis)> {
        let ProgressPhase::Working { next_check_at, fallback_due_at, .. } = &self.phase else {
            return None;
        };
        let timers = [(ProgressTimer::Check, Some(*next_check_at)), (ProgressTimer::Fallback, *fallback_due_at)];
        timers.into_iter().filter_map(|(timer, at)| at.map(|at| (timer, at))).min_by_key(|(_, at)| *at)
    }

    /// The next decision, if any.
    pub fn poll(&mut self) -> Option<ProgressOutput> {
        self.outputs.pop_front()
    }

    fn quiet_since(&self) -> Millis {
        let since = match &self.phase {
            ProgressPhase::Working { since, .. } => *since,
            ProgressPhase::Idle => 0,
        };
        match &self.last_sent {
            Some(sent) => sent.at.max(since),
            None => since,
        }
    }

    fn consider(&mut self, summary: Option<String>) {
        if !self.is_working() {
            return;
        }
        let Some(text) = summary.map(|s| s.trim().to_string()) else {
            return;
        };
        let unchanged = self.last_sent.as_ref().is_some_and(|sent| sent.text == text);
        if text.is_empty() || unchanged {
            return;
        }
        self.outputs.push_back(ProgressOutput::SendProgress { summary: text });
    }
}
