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
//! A text's own marker is decided as the page and ext-core decide it (content.js
//! `oursByMarker`, ext-core `delivery_id_shaped`): only the LAST `[herdr-continuity <id>]`
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

fn is_own_message(text: &str) -> bool {
    OWN_OPENINGS.iter().any(|opening| text.starts_with(opening))
        || own_marker(text).is_some_and(|id| !id.starts_with("qb:") && delivery_id_shaped(id))
}

const MARKER_OPEN: &str = "[herdr-continuity ";

/// JavaScript's `\s` (content.js's regexes): not `char::is_whitespace`, which counts U+0085
/// and leaves out U+FEFF.
fn js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

/// The id of the marker at the start of `at` (`[herdr-continuity <id>]` or
/// `[herdr-continuity <id> ref=<ref>]`, neither part holding JS whitespace or `]`).
fn marker_at(at: &str) -> Option<&str> {
    let rest = at.strip_prefix(MARKER_OPEN)?;
    let end = rest.find(|c: char| js_space(c) || c == ']')?;
    let (id, after) = rest.split_at(end);
    if id.is_empty() {
        return None;
    }
    if after.starts_with(']') {
        return Some(id);
    }
    let reference = after.strip_prefix(" ref=")?;
    let end = reference.find(|c: char| js_space(c) || c == ']')?;
    (end > 0 && reference[end..].starts_with(']')).then_some(id)
}

/// Whether the last fence delimiter of `text` is a closing one (`None`: there is none),
/// found as content.js's `FENCE_DELIMITER` (`/<<<(END_)?HC_DATA [^\n]*?>>>/g`) finds it:
/// left to right, each delimiter running to the first `>>>` on its line, and the next
/// search starting where the last delimiter ended (so a delimiter inside another's text
/// is not one).
fn last_delimiter_closes(text: &str) -> Option<bool> {
    use continuity_protocol::fence::{CLOSE, OPEN};
    let (mut from, mut last) = (0, None);
    while let Some(found) = text[from..].find("<<<") {
        let at = from + found;
        let rest = &text[at..];
        let head = [(CLOSE, true), (OPEN, false)]
            .into_iter()
            .find_map(|(prefix, closes)| rest.strip_prefix(prefix).and_then(|r| r.strip_prefix(' ')).map(|body| (body, closes)));
        let ended = head.and_then(|(body, closes)| {
            let line = &body[..body.find('\n').unwrap_or(body.len())];
            line.find(">>>").map(|end| (rest.len() - body.len() + end + 3, closes))
        });
        match ended {
            Some((length, closes)) => {
                last = Some(closes);
                from = at + length;
            }
            // `<` is one byte: the next position is a character boundary.
            None => from = at + 1,
        }
    }
    last
}

/// The text's own marker id (the module's rule): the last marker, unless the last fence
/// delimiter before it opens a fence.
fn own_marker(text: &str) -> Option<&str> {
    let (at, id) = text.match_indices(MARKER_OPEN).filter_map(|(at, _)| marker_at(&text[at..]).map(|id| (at, id))).last()?;
    match last_delimiter_closes(&text[..at]) {
        Some(false) => None,
        Some(true) | None => Some(id),
    }
}

/// A delivery id as the ledger makes them, `<subject>/<epoch>.<life>.<n>` (epoch
/// alphanumeric, life and n decimal; ext-core `delivery_id_shaped`).
fn delivery_id_shaped(id: &str) -> bool {
    let Some((subject, tail)) = id.rsplit_once('/') else { return false };
    let mut parts = tail.split('.');
    let epoch = parts.next().unwrap_or_default();
    let numbers: Vec<&str> = parts.collect();
    !subject.is_empty()
        && !epoch.is_empty()
        && epoch.bytes().all(|b| b.is_ascii_alphanumeric())
        && numbers.len() == 2
        && numbers.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
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

    /// The page's rule (content.js `ownMarker`, `FENCE_DELIMITER`, JS `\s`), case by case
    /// where a separate search for each delimiter or `char::is_whitespace` differ from it.
    #[test]
    fn the_own_marker_is_decided_as_the_page_decides_it() {
        let marker = "[herdr-continuity w1/3f9a.2.0]";
        // One opening delimiter that runs to the first `>>>` (the closing one is inside it).
        assert_eq!(own_marker(&format!("<<<HC_DATA a <<<END_HC_DATA b>>>\n{marker}")), None);
        // One closing delimiter (an opening one is inside it).
        assert_eq!(own_marker(&format!("<<<END_HC_DATA a <<<HC_DATA b>>>\n{marker}")), Some("w1/3f9a.2.0"));
        // A plain fence: open, then closed.
        assert_eq!(own_marker(&format!("<<<HC_DATA x>>>\nhi\n<<<END_HC_DATA x>>>\n{marker}")), Some("w1/3f9a.2.0"));
        assert_eq!(own_marker(&format!("<<<HC_DATA x>>>\nhi {marker}")), None);
        // No `>>>` on the delimiter's line: not a delimiter.
        assert_eq!(own_marker(&format!("<<<HC_DATA x\n>>>\n{marker}")), Some("w1/3f9a.2.0"));
        // JS `\s` holds U+FEFF and not U+0085.
        assert_eq!(own_marker("[herdr-continuity w1/3f9a.2.0 ref=x\u{85}]"), Some("w1/3f9a.2.0"));
        assert_eq!(own_marker("[herdr-continuity w1/3f9a.2.0 ref=x\u{feff}]"), None);
    }

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
