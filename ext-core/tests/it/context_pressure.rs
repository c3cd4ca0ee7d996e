//! Context pressure (SPEC R1): the estimate, the message floor and the levels.

use ext_core::context_pressure::{approx_tokens, is_cjk, PressureConfig, PressureLevel, VisibleThread};
use proptest::prelude::*;

// R: R1 — herdr-mcp's thresholds are the defaults; the reserve is always added.
#[test]
fn levels_follow_the_default_thresholds_and_the_reserve_counts_r1() {
    let config = PressureConfig::default();
    for (tokens, level) in [
        (55_999, PressureLevel::Normal),
        (56_000, PressureLevel::Warn),
        (64_000, PressureLevel::Prepare),
        (72_000, PressureLevel::Recommend),
        (80_000, PressureLevel::Auto),
        (92_000, PressureLevel::HighRisk),
    ] {
        assert_eq!(config.level(tokens), level, "{tokens}");
    }
    let mut floor = 0;
    let page = VisibleThread { turns: 2, latin_chars: 40, cjk_chars: 10, highest_turn: Some(1) };
    let p = config.estimate(&page, &mut floor).expect("estimate");
    assert_eq!(p.tokens, 10 + 10 + 32_000);
    assert_eq!(p.messages, 2);
}

// R: R1 — a virtualised thread (old turns left the DOM) is counted by its highest turn
// index, and the floor is kept when a reload shows fewer turns.
#[test]
fn turns_the_page_no_longer_shows_are_counted_through_the_message_floor_r1() {
    let config = PressureConfig::default();
    let mut floor = 0;
    // 10 turns visible, the last one is conversation-turn-199: 200 messages.
    let page = VisibleThread { turns: 10, latin_chars: 40_000, cjk_chars: 0, highest_turn: Some(199) };
    let p = config.estimate(&page, &mut floor).expect("estimate");
    assert_eq!(floor, 200);
    assert_eq!(p.tokens, 10_000 + 1_000 * 190 + 32_000);
    assert_eq!(p.level, PressureLevel::HighRisk);
    // After a reload the page shows 3 turns and no index: the floor holds.
    let reloaded = VisibleThread { turns: 3, latin_chars: 12_000, cjk_chars: 0, highest_turn: None };
    let again = config.estimate(&reloaded, &mut floor).expect("estimate");
    assert_eq!(floor, 200);
    assert_eq!(again.messages, 200);
    assert_eq!(again.level, PressureLevel::HighRisk);
    // Fail closed: no turns, no level.
    assert_eq!(config.estimate(&VisibleThread::default(), &mut floor), None);
}

#[test]
fn cjk_characters_count_one_token_each() {
    let text = "修复解析器 and run tests";
    let cjk = text.chars().filter(|c| is_cjk(*c)).count() as u64;
    let latin = text.chars().filter(|c| !is_cjk(*c)).count() as u64;
    assert_eq!((cjk, latin), (5, 14));
    assert_eq!(approx_tokens(latin, cjk), 5 + 4);
}

proptest! {
    /// R1: the floor never decreases, more text never lowers the estimate, and the level is
    /// monotone in the estimate.
    #[test]
    fn the_floor_never_decreases_and_more_text_never_lowers_the_level(
        pages in prop::collection::vec((1u32..50, 0u64..200_000, 0u64..50_000, prop::option::of(0u32..500)), 1..30),
        extra in 0u64..10_000,
    ) {
        let config = PressureConfig::default();
        let mut floor = 0u32;
        for (turns, latin, cjk, highest) in pages {
            let before = floor;
            let page = VisibleThread { turns, latin_chars: latin, cjk_chars: cjk, highest_turn: highest };
            let p = config.estimate(&page, &mut floor).expect("turns > 0");
            prop_assert!(floor >= before, "the floor went down");
            let mut same_floor = floor;
            let more = config.estimate(&VisibleThread { latin_chars: latin + extra, ..page }, &mut same_floor).expect("estimate");
            prop_assert!(more.tokens >= p.tokens);
            prop_assert!(more.level >= p.level);
        }
    }
}
