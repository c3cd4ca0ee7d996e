//! The deterministic safety gate: the first stage of the turn-end judge (SPEC J2). A
//! reply it stops is `done` before any provider is asked — there is nothing in it to
//! continue, or it is not the assistant's work at all.
//!
//! Stopped: an empty reply; a reply too short to carry a step (under [`MIN_REPLY_WEIGHT`],
//! a CJK character weighing two, other non-space characters one); a tool-call stub (only
//! a JSON object, or a short "calling / running herdr_…" line); and our own injected
//! messages (their own marker, or the `[Herdr]`, `[Herdr progress]` / `[Herdr check]`
//! openings), which are never judged as work.
//!
//! A text's own marker is decided by `continuity_protocol::marker`, the rule the page and
//! ext-core share: only the LAST `[herdr-continuity <id>]`
//! (or `[herdr-continuity <id> ref=<ref>]`) of the text counts, only when the nearest data
//! fence delimiter before it is a closing one (or there is none), and only when `<id>` is
//! shaped as the ledger makes delivery ids (`<subject>/<epoch>.<life>.<n>`) and is not a
//! queued batch's (`qb:`, the user's own text). A marker-like line a human pasted, or one
//! inside relayed agent or tool text, leaves the text the human's.

/// The least weight of a reply worth judging.
pub const MIN_REPLY_WEIGHT: usize = 40;

/// Longest reply that can still be a tool-call announcement.
const STUB_MAX_CHARS: usize = 160;

/// Openings of our own messages (ext-core `continuity::texts`).
const OWN_OPENINGS: &[&str] = &["[Herdr]", "[Herdr progress]", "[Herdr check]"];

/// Why the gate stops `reply`, if it does.
pub fn check(reply: &str) -> Option<String> {
    let trimmed = reply.trim();
    if trimmed.is_empty() {
        return Some("the reply is empty".to_owned());
    }
    if is_own_message(trimmed) {
        return Some("the text is one of our own injected messages, not the assistant's work".to_owned());
    }
    if is_tool_stub(trimmed) {
        return Some("the reply is only a tool call".to_owned());
    }
    let weight = weight(trimmed);
    if weight < MIN_REPLY_WEIGHT {
        return Some(format!("the reply is too short to carry a step (weight {weight} < {MIN_REPLY_WEIGHT})"));
    }
    None
}

use continuity_protocol::marker::{delivery_id_shaped, own_marker};

fn is_own_message(text: &str) -> bool {
    OWN_OPENINGS.iter().any(|opening| text.starts_with(opening))
        || own_marker(text).is_some_and(|id| !id.starts_with("qb:") && delivery_id_shaped(id))
}

fn is_tool_stub(text: &str) -> bool {
    if text.starts_with('{') && serde_json::from_str::<serde_json::Value>(text).is_ok() {
        return true;
    }
    let lower = text.to_lowercase();
    text.chars().count() <= STUB_MAX_CHARS
        && !text.contains('\n')
        && ["calling ", "running ", "using ", "invoking ", "调用", "正在调用"].iter().any(|w| lower.starts_with(w))
        && lower.contains("herdr")
}

/// Non-space characters, CJK ideographs counted twice.
fn weight(text: &str) -> usize {
    text.chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| if ('\u{4e00}'..='\u{9fff}').contains(&c) || ('\u{3400}'..='\u{4dbf}').contains(&c) { 2 } else { 1 })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_stops_what_is_not_work() {
        let stopped = |text: &str| check(text).is_some();
        assert!(stopped(""));
        assert!(stopped("   \n "));
        assert!(stopped("OK."));
        assert!(stopped("好的，我继续。"), "7 ideographs weigh 14");
        assert!(stopped("Calling herdr_prompt for pane w1:p1…"));
        assert!(stopped(r#"{"tool":"herdr_prompt","args":{"pane":"w1:p1"}}"#));
        assert!(stopped("Workspace w1 settled; re-check and decide.\n[herdr-continuity wake:w1#42/3f9a.2.0]"));
        assert!(stopped("[Herdr progress] pane w1:p1: compiling, 3 of 9 crates done, no errors so far"));
        assert!(!stopped("I fixed the parser and the tests pass. Next I'll run the full suite to be sure."));
        assert!(!stopped("解析器已修好，测试通过。接下来我会跑完整测试。"), "CJK weighs double");
    }
}
