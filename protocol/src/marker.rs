//! Our marker line and whose a text is (docs/PROTOCOL.md "Fenced data"): every message the
//! extension types ends with `[herdr-continuity <delivery id> ref=<session ref>]`, and a
//! text is ours only by its own marker — the one rule the page, ext-core and the runtime's
//! judge gate share.
//!
//! The rule: only the LAST `[herdr-continuity <id>]` (or `[herdr-continuity <id> ref=<ref>]`)
//! of a text counts, only when the nearest data-fence delimiter before it is a closing one
//! (or there is none), and only when `<id>` is shaped as the ledger makes delivery ids
//! ([`delivery_id_shaped`]). A marker-like line a human pasted, or one inside relayed agent
//! or tool text, leaves the text the human's. The content scripts hold the same rule in
//! JavaScript (they cannot load wasm); `tests/fixtures/own-marker-cases.json` is the one
//! list of cases both sides are tested against.

/// The start of our marker line.
pub const MARKER_OPEN: &str = "[herdr-continuity ";

/// JavaScript's `\s` (own-marker.js's regexes): not `char::is_whitespace`, which counts U+0085
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
/// found as own-marker.js's `FENCE_DELIMITER` (`/<<<(END_)?HC_DATA [^\n]*?>>>/g`) finds it:
/// left to right, each delimiter running to the first `>>>` on its line, and the next
/// search starting where the last delimiter ended (so a delimiter inside another's text
/// is not one).
fn last_delimiter_closes(text: &str) -> Option<bool> {
    use crate::fence::{CLOSE, OPEN};
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
pub fn own_marker(text: &str) -> Option<&str> {
    let (at, id) = text.match_indices(MARKER_OPEN).filter_map(|(at, _)| marker_at(&text[at..]).map(|id| (at, id))).last()?;
    match last_delimiter_closes(&text[..at]) {
        Some(false) => None,
        Some(true) | None => Some(id),
    }
}

/// A delivery id as the ledger makes them, `<subject>/<epoch>.<life>.<n>` (epoch
/// alphanumeric, life and n decimal). Any epoch: a restore from a release without one, or
/// lost state, starts a new epoch while the thread still shows the old markers.
pub fn delivery_id_shaped(id: &str) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The page's rule (own-marker.js `ownMarker`, `FENCE_DELIMITER`, JS `\s`), case by case
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
}
