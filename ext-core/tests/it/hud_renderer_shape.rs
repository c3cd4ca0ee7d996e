//! The content scripts decide nothing the view can say (issue 28, acceptance 1: "the view is
//! data"): which lines show, their message keys, tones and the buttons' labels come from
//! ext-core (`continuity::hud_lines`, `ViewAction::label`), so no `extension/content-*.js`
//! holds a message key or a tone name: not in a string, not as a key prefix
//! (`'withheld_' + code`, `withheld_${code}`), not inside a `${…}`, except the few in
//! [`PAGE_OWN`], each about something only the page knows. A key or tone written elsewhere
//! is a decision made in JavaScript: move it into the view.

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
            // `'withheld_' + code` names keys by prefix, as a template's fixed part does.
            Tok::Str(text) if text.ends_with('_') && names_key(text) => out.push((*line, text.clone())),
            Tok::Template { parts, substituted: true } if parts.iter().any(|part| names_key(part)) => out.push((*line, parts.join("${}"))),
            Tok::Template { parts, .. } if parts.iter().any(|part| keys.contains(part)) => out.push((*line, parts.join("${}"))),
            _ => {}
        }
    }
    out.sort();
    out
}

/// The keys and tones a content script may name itself, with how often: each is about the
/// page's own state, which the worker's view never holds. A new use of one of them fails too.
const PAGE_OWN: &[(&str, &str, usize, &str)] = &[
    // The collapsed pill's text before the first view arrives, and the panel's fixed name.
    ("content-hud.js", "pillBrand", 1, "placeholder before the first view"),
    ("content-hud.js", "hudLabel", 1, "the panel's accessible name"),
    // Whether the panel is open is the page's own UI state (a click on our toggle); the
    // worker never knows it, so the toggle's title follows it here.
    ("content-hud.js", "hudShowDetails", 3, "the toggle's title follows the panel's open state"),
    ("content-hud.js", "hudHideDetails", 2, "the toggle's title follows the panel's open state"),
    // A fact the page observed missing when the user pressed a button (the composer's own
    // look, before any view): the notice names it.
    ("content-hud.js", "hudFactUnresolved", 1, "the composer's own look at a press"),
    ("content-hud.js", "factWhy_${}", 1, "the composer's own look at a press"),
    ("content-composer.js", "noticeNoComposer", 1, "the composer's own look at a press"),
    // The Goal form's fixed labels (the view offers the Goal button; the form is ours).
    ("content-hud.js", "hudGoalPlaceholder", 2, "the Goal form's fixed labels"),
    ("content-hud.js", "hudGoalSave", 1, "the Goal form's fixed labels"),
    ("content-hud.js", "hudGoalCancel", 1, "the Goal form's fixed labels"),
    // The click-jacking guard judges a press from the page's geometry at the press.
    ("content-hud.js", "noticeBridgePressTooSoon", 3, "a refused press, judged at the press"),
    ("content-hud.js", "noticeBridgePressHidden", 2, "a refused press, judged at the press"),
    // The clipboard's answer to Copy Prompt reaches the page only.
    ("content-hud.js", "hudPromptCopied", 1, "the clipboard's answer"),
    ("content-hud.js", "hudPromptNotCopied", 1, "the clipboard's answer"),
    ("content-hud.js", "bad", 2, "the tone of a refused press and of a failed copy"),
    // The worker's start error, said in the status line until it is gone.
    ("content-composer.js", "startProblem", 2, "the status line's key of the start error"),
    // The start itself failed (worker.js `startFailed`): the core never ran, so the page says it.
    ("content-composer.js", "startFailed", 2, "the status line's key of the failed start"),
    ("content-composer.js", "bad", 2, "the tone of the composer notice and of the start error"),
];

/// The content scripts, `(file name, source)`.
fn content_scripts() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(extension()).expect("the extension directory lists") {
        let path = entry.expect("an extension directory entry reads").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        if name.starts_with("content-") && name.ends_with(".js") {
            out.push((name, std::fs::read_to_string(&path).expect("a content script reads")));
        }
    }
    out.sort();
    out
}

/// The decisions of `file`'s `source` that [`PAGE_OWN`] does not allow: every literal of
/// one not listed, and the uses of a listed one past its count.
fn violations(file: &str, source: &str, keys: &[String], tones: &[&str]) -> Vec<String> {
    let found = decisions(source, keys, tones);
    let mut out = Vec::new();
    for (i, (line, text)) in found.iter().enumerate() {
        let nth = found[..=i].iter().filter(|(_, t)| t == text).count();
        let allowed = PAGE_OWN.iter().find(|(f, t, _, _)| *f == file && t == text).map_or(0, |(_, _, n, _)| *n);
        if nth > allowed {
            out.push(format!("{file}:{line}: {text:?} (allowed {allowed})"));
        }
    }
    out
}

#[test]
fn the_content_scripts_choose_no_key_and_no_tone() {
    let (keys, tones) = (keys(), tones());
    let scripts = content_scripts();
    assert!(scripts.iter().any(|(name, _)| name == RENDERER), "the scan reads the HUD's renderer, {RENDERER}");
    let found: Vec<String> = scripts.iter().flat_map(|(name, source)| violations(name, source, &keys, &tones)).collect();
    assert!(
        found.is_empty(),
        "a content script chooses what the HUD says: the line, its key, tone or a button's label belongs in \
         ext-core's view (continuity::hud_lines, ViewAction); render the view's fields instead (only what the page \
         alone knows goes in PAGE_OWN, with its reason):\n{}",
        found.join("\n")
    );
    // Every allowance is still used as often as listed: a stale one would let a decision back in.
    for (file, text, n, why) in PAGE_OWN {
        let source = &scripts.iter().find(|(name, _)| name == file).expect("PAGE_OWN names a content script").1;
        let used = decisions(source, &keys, &tones).iter().filter(|(_, t)| t == text).count();
        assert_eq!(used, *n, "PAGE_OWN allows {text:?} {n} times in {file} ({why}); it is used {used} times: update the list");
    }
}

#[test]
fn a_decision_planted_in_a_content_script_fails_the_scan() {
    let (keys, tones) = (keys(), tones());
    let scripts = content_scripts();
    let hud = scripts.iter().find(|(name, _)| name == "content-hud.js").expect("content-hud.js reads").1.trim_end();
    let lines = hud.lines().count();
    let planted = format!(
        "{hud}\nconst planted = (c) => para('withheld', 'withheld_' + c.code, [], 'withheld');\ntoggle.title = text('hudShowDetails');\n"
    );
    let found = violations("content-hud.js", &planted, &keys, &tones);
    assert_eq!(
        found,
        vec![
            format!("content-hud.js:{}: \"withheld\" (allowed 0)", lines + 1),
            format!("content-hud.js:{}: \"withheld\" (allowed 0)", lines + 1),
            format!("content-hud.js:{}: \"withheld_\" (allowed 0)", lines + 1),
            format!("content-hud.js:{}: \"hudShowDetails\" (allowed 3)", lines + 2),
        ],
        "the planted decisions, and the allowed key used once more than allowed"
    );
}

// ---- The test of the test: lines as the renderer wrote them before the view carried them.

const OLD_RENDERER: &str = r#"
out.push(para('binding', 'hudNotBound', []));
out.push(c.scope_state === 'working' ? para('scope', 'hudScopeWorking', [n]) : para('scope', c.scope_state === 'settled' ? 'hudScopeSettled' : 'hudScopeIdle', []));
if (c.withheld) out.push(para('withheld', `withheld_${c.withheld.code}`, [], 'withheld'));
out.push(para('recovery', 'recoveryState_' + r.state, [], 'plain'));
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
            (5, "plain"),
            (5, "recoveryState_"),
            (6, "actionAutoTurnOff"),
            (6, "actionAutoTurnOn"),
            (6, "action_${}"),
            (7, "hudRecoveryReasoning"),
            (8, "judge"),
            (8, "judge"),
        ]
    );
}
