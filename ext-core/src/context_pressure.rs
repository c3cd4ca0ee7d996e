//! Context pressure of one conversation (SPEC R1): how close the chat is to the point where
//! the model starts to lose the beginning of the thread, so the HUD can say when to hand
//! over to a new conversation.
//!
//! The page cannot see the model's real context, so this is an estimate that errs high:
//! - the visible text's tokens, approximated per script (about four Latin characters per
//!   token, one token per CJK character);
//! - turns the page no longer renders (ChatGPT virtualises long threads): the highest
//!   absolute `conversation-turn-N` gives the thread's length, and a *message floor*
//!   (N + 1, persisted, never decreasing) keeps it when the page shows fewer; each missing
//!   turn counts as the visible turns' average;
//! - a reserve for what is never visible (system prompt, memory, tool output), added
//!   always.
//!
//! Invariants (tests in `tests/it/context_pressure.rs`):
//! - The floor of a conversation never decreases, across reloads and restarts (it is part
//!   of the snapshot the composition keeps).
//! - The estimate never decreases when text is added to the same page, and the level is
//!   a monotone function of the estimate.
//! - Fail closed: a page that reports no turns gives no level (`None`), never "normal".

use crate::json_read::{ReadJson, WriteJson};
use serde::Serialize;

/// Thresholds and sizes, in tokens (defaults: REFERENCE §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PressureConfig {
    /// The context the model effectively uses.
    pub effective: u64,
    /// Added for context the page never shows.
    pub reserve: u64,
    /// Level thresholds: warn, prepare, recommend, auto, high risk.
    pub thresholds: [u64; 5],
}

impl Default for PressureConfig {
    fn default() -> Self {
        Self { effective: 128_000, reserve: 32_000, thresholds: [56_000, 64_000, 72_000, 80_000, 92_000] }
    }
}

/// How full the context is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, WriteJson)]
#[serde(rename_all = "snake_case")]
pub enum PressureLevel {
    /// Nothing to do.
    Normal,
    /// Worth knowing.
    Warn,
    /// Prepare a handoff (journal up to date).
    Prepare,
    /// A handoff is recommended.
    Recommend,
    /// Auto rollover may start (R2's other conditions permitting).
    Auto,
    /// The model is likely losing the start of the thread.
    HighRisk,
}

/// What the page reports about its visible thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ReadJson)]
pub struct VisibleThread {
    /// Turns rendered.
    pub turns: u32,
    /// Characters of their text outside CJK scripts.
    pub latin_chars: u64,
    /// CJK characters (Han, kana, Hangul).
    pub cjk_chars: u64,
    /// The highest absolute turn index on the page (`conversation-turn-N`), if shown.
    pub highest_turn: Option<u32>,
}

/// The estimate for the HUD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, WriteJson)]
pub struct Pressure {
    /// Estimated tokens, reserve included.
    pub tokens: u64,
    /// Messages the thread has at least.
    pub messages: u32,
    /// The level.
    pub level: PressureLevel,
}

/// Tokens of `latin` non-CJK and `cjk` CJK characters.
pub fn approx_tokens(latin: u64, cjk: u64) -> u64 {
    latin.div_ceil(4) + cjk
}

/// Whether `c` counts as one token (CJK ideographs, kana, Hangul, CJK punctuation).
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3000..=0x303F | 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF | 0x20000..=0x2FA1F)
}

impl PressureConfig {
    /// The level of `tokens`.
    pub fn level(&self, tokens: u64) -> PressureLevel {
        const LEVELS: [PressureLevel; 5] =
            [PressureLevel::Warn, PressureLevel::Prepare, PressureLevel::Recommend, PressureLevel::Auto, PressureLevel::HighRisk];
        let mut level = PressureLevel::Normal;
        for (threshold, next) in self.thresholds.iter().zip(LEVELS) {
            if tokens >= *threshold {
                level = next;
            }
        }
        level
    }

    /// The estimate for `page`, raising `floor` (the conversation's persisted message
    /// floor) to what the page shows. `None` when the page shows no turns.
    pub fn estimate(&self, page: &VisibleThread, floor: &mut u32) -> Option<Pressure> {
        if page.turns == 0 {
            return None;
        }
        let shown_floor = page.highest_turn.map_or(page.turns, |n| n.saturating_add(1)).max(page.turns);
        *floor = (*floor).max(shown_floor);
        let visible = approx_tokens(page.latin_chars, page.cjk_chars);
        let per_turn = visible.div_ceil(u64::from(page.turns));
        let missing = u64::from(floor.saturating_sub(page.turns));
        let tokens = visible.saturating_add(per_turn.saturating_mul(missing)).saturating_add(self.reserve);
        Some(Pressure { tokens, messages: *floor, level: self.level(tokens) })
    }
}
