//! The HUD's renderer decides nothing (issue 28, acceptance 1: "the view is data"): which
//! lines show, their message keys, tones and the buttons' labels come from ext-core
//! (`continuity::hud_lines`, `ViewAction::label`), so `extension/content-hud-lines.js`
//! holds no message key and no tone name at all — not in a string, not as the fixed part
//! of a template (`withheld_${code}` names keys by prefix), not inside a `${…}`. A key or
//! a tone written there is a decision made in JavaScript: move it into the view.

use super::selector_scan::{lex, Tok, Token};
use ext_core::continuity::LineTone;
use ext_core::hud::Tone;

const RENDERER: &str = "content-hud-lines.js";

fn extension() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../extension")
}

/// Every message key of the English locale.
fn keys() -> Vec<String> {
    let text = std::fs::read_to_string(extension().join("_locales/en/messages.json")).expect("the English messages read");
    let messages: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text).expect("the English messages parse");
    messages.keys().cloned().collect()
}

/// The tone names of the views (the HUD's status lines and the continuity lines).
fn tones() -> Vec<&'static str> {
    Tone::ALL.iter().map(Tone::wire_name).chain(LineTone::ALL.iter().map(LineTone::wire_name)).collect()
}

/// The decisions written in `source`: `(line, literal)` for each literal that is a message
/// key, names keys by a template's fixed part before a substitution, or is a tone name.
fn decisions(source: &str, keys: &[String], tones: &[&str]) -> Vec<(usize, String)> {
    let (tokens, substitutions) = lex(source).expect("the renderer lexes");
    let names_key = |part: &str| part.len() > 2 && keys.iter().any(|key| key.starts_with(part));
    let mut out = Vec::new();
    for token in tokens.iter().chain(substitutions.iter().flatten()) {
        let Token { tok, line } = token;
        match tok {
            Tok::Str(text) if keys.contains(text) || tones.contains(&text.as_str()) => out.push((*line, text.clone())),
            Tok::Template { parts, substituted: true } if parts.iter().any(|part| names_key(part)) => out.push((*line, parts.join("${}"))),
            Tok::Template { parts, .. } if parts.iter().any(|part| keys.contains(part)) => out.push((*line, parts.join("${}"))),
            _ => {}
        }
    }
    out.sort();
    out
}

#[test]
fn the_hud_renderer_chooses_no_key_and_no_tone() {
    let source = std::fs::read_to_string(extension().join(RENDERER)).expect("the renderer reads");
    let found = decisions(&source, &keys(), &tones());
    assert!(
        found.is_empty(),
        "extension/{RENDERER} chooses what the HUD says: the line, its key, tone or a button's label belongs in \
         ext-core's view (continuity::hud_lines, ViewAction); render the view's fields instead:\n{}",
        found.iter().map(|(line, text)| format!("{RENDERER}:{line}: {text:?}")).collect::<Vec<_>>().join("\n")
    );
}

// ---- The test of the test: lines as the renderer wrote them before the view carried them.

const OLD_RENDERER: &str = r#"
out.push(para('binding', 'hudNotBound', []));
out.push(c.scope_state === 'working' ? para('scope', 'hudScopeWorking', [n]) : para('scope', c.scope_state === 'settled' ? 'hudScopeSettled' : 'hudScopeIdle', []));
if (c.withheld) out.push(para('withheld', `withheld_${c.withheld.code}`, [], 'withheld'));
const label = action.id === 'toggle_auto' ? (c.auto === 'off' ? 'actionAutoTurnOn' : 'actionAutoTurnOff') : `action_${action.id}`;
p.textContent += ` ${text('hudRecoveryReasoning')}`;
out.push(para('judge', c.judge.key, c.judge.args, 'judge'));
out.push(para(line.line, line.key, line.args, line.tone));
list.dataset.line = `${line.line}-items`;
button.dataset.action = `bridge_${decision}:${p.call}`;
"#;

#[test]
fn the_decision_scan_finds_keys_and_tones_chosen_in_javascript() {
    let found = decisions(OLD_RENDERER, &keys(), &tones());
    let found: Vec<(usize, &str)> = found.iter().map(|(line, text)| (*line, text.as_str())).collect();
    assert_eq!(
        found,
        vec![
            (2, "hudNotBound"),
            (3, "hudScopeIdle"),
            (3, "hudScopeSettled"),
            (3, "hudScopeWorking"),
            (4, "withheld"),
            (4, "withheld"),
            (4, "withheld_${}"),
            (5, "actionAutoTurnOff"),
            (5, "actionAutoTurnOn"),
            (5, "action_${}"),
            (6, "hudRecoveryReasoning"),
            (7, "judge"),
            (7, "judge"),
        ]
    );
}
