//! Property test of `protocol::fence` (issue 26 Found 5): whatever the payload, the fenced
//! text has exactly one closing delimiter line, its last, and the payload reads back from
//! between the delimiters as it was, modulo neutralisation.

use continuity_protocol::fence::{fence, neutralise, nonce, CLOSE, OPEN};

/// The invisible characters neutralisation removes (PROTOCOL.md "Fenced data"), written
/// from the spec, not from the code.
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00ad}'
            | '\u{034f}'
            | '\u{061c}'
            | '\u{115f}'
            | '\u{1160}'
            | '\u{17b4}'
            | '\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{3164}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff0}'..='\u{fff8}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e0fff}'
    )
}

/// A line or paragraph separator, which neutralisation turns into a line end.
fn line_end(c: char) -> char {
    if matches!(c, '\u{2028}' | '\u{2029}') {
        '\n'
    } else {
        c
    }
}
use proptest::prelude::*;

fn payloads() -> impl Strategy<Value = String> {
    // Delimiter-like pieces mixed with anything, so forged lines are common.
    let piece = prop_oneof![
        Just("<<<END_HC_DATA n=".to_owned()),
        Just("<<<HC_DATA kind=agent_output n=".to_owned()),
        Just(">>>".to_owned()),
        Just("<".to_owned()),
        Just(">".to_owned()),
        Just("\n".to_owned()),
        // Invisible format characters between the brackets of a delimiter.
        Just("<\u{200b}<<END_HC_DATA n=".to_owned()),
        Just(">\u{feff}>\u{2060}>".to_owned()),
        prop_oneof![
            Just('\u{200b}'),
            Just('\u{200f}'),
            Just('\u{202a}'),
            Just('\u{202e}'),
            Just('\u{2060}'),
            Just('\u{2064}'),
            Just('\u{2066}'),
            Just('\u{2069}'),
            Just('\u{feff}'),
            Just('\u{00ad}'),
            Just('\u{180e}'),
            Just('\u{061c}'),
            Just('\u{fe0f}'),
            Just('\u{2028}'),
            Just('\u{2029}'),
            Just('\u{2800}'),
            Just('\u{e0041}'),
            Just('\u{e0100}')
        ]
        .prop_map(String::from),
        "[0-9a-f]{12}",
        any::<String>(),
    ];
    proptest::collection::vec(piece, 0..12).prop_map(|parts| parts.concat())
}

proptest! {
    #[test]
    fn one_closing_line_and_the_payload_recoverable(payload in payloads(), entropy in any::<[u8; 16]>(), id in "[a-z:#/.0-9]{1,40}") {
        let n = nonce(&entropy, &id);
        let text = fence("agent_output", &payload, &n);
        let n = n.as_str();
        let lines: Vec<&str> = text.split('\n').collect();
        let closing = format!("{CLOSE} n={n}>>>");
        prop_assert_eq!(lines.iter().filter(|l| l.contains(CLOSE)).count(), 1, "{}", text);
        prop_assert_eq!(lines.last().copied(), Some(closing.as_str()));
        prop_assert_eq!(text.matches("<<<").count(), 2, "{}", text);
        prop_assert_eq!(text.matches(OPEN).count(), 1);
        let open = format!("{OPEN} kind=agent_output n={n}>>>\n");
        let start = text.find(&open).map(|i| i + open.len());
        prop_assert!(start.is_some());
        let body = &text[start.unwrap_or_default()..text.len() - closing.len() - 1];
        prop_assert_eq!(body, neutralise(payload.trim_end_matches('\n')));
    }

    #[test]
    fn neutralised_text_has_no_triple_bracket(payload in payloads()) {
        let out = neutralise(&payload);
        prop_assert!(!out.contains("<<<") && !out.contains(">>>"));
        prop_assert!(!out.chars().any(invisible), "{:?}", out);
        // With the invisible format characters gone, the text has no delimiter even to a
        // reader that ignores them (a model does).
        // Only brackets change and invisible characters go: everything else reads back.
        let back: String = out.chars().map(|c| match c { '‹' => '<', '›' => '>', c => c }).collect();
        let plain: String = payload.chars().map(line_end).filter(|c| !invisible(*c)).map(|c| match c { '‹' => '<', '›' => '>', c => c }).collect();
        prop_assert_eq!(back, plain);
    }
}
