//! The collapsed HUD, the pill (issue 28: the view is data): its parts, their order and the
//! worst tone come from the core (`ext_core::hud_pill`), and the pill and the panel's Auto
//! line say the same Auto state.

use ext_core::binding::CatalogWorkspace;
use ext_core::continuity::{Continuity, ContinuityInput, ContinuityView, PageReport};
use ext_core::hud::{HudView, StatusLine, Tone};
use ext_core::hud_pill::{auto_keys, pill, PillView};

use super::continuity::TAB;

const PROJECT_CHAT: &str = "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef/c/6a1b2c3d-0000-4000-8000-00000000000a";

fn link(companion: Tone, herdr: Tone) -> HudView {
    let line = |key, tone| StatusLine { key, substitutions: Vec::new(), tone };
    HudView { companion: line("companionConnected", companion), herdr: line("herdrConnected", herdr), actions: Vec::new() }
}

/// A page of `url`, bound to workspace `w1` ("api"), Auto pressed `toggles` times.
fn page_view(url: &str, toggles: usize) -> ContinuityView {
    let mut c = Continuity::new();
    c.handle(0, ContinuityInput::LinkUp);
    let report = PageReport {
        url: url.into(),
        composer: true,
        generation: Some("chatgpt.classic".into()),
        page_load: "load-1".into(),
        ..PageReport::default()
    };
    c.handle(0, ContinuityInput::PageReported { tab: TAB, report });
    c.handle(0, ContinuityInput::Bind { tab: TAB, workspace: CatalogWorkspace { workspace_id: "w1".into(), label: "api".into() } });
    for _ in 0..toggles {
        c.handle(0, ContinuityInput::ToggleAuto { tab: TAB });
    }
    c.page_view(TAB).expect("a chat page has a continuity view")
}

fn printed(p: &PillView) -> String {
    let parts: Vec<String> =
        p.parts.iter().map(|say| if say.args.is_empty() { say.key.clone() } else { format!("{}{:?}", say.key, say.args) }).collect();
    format!("{} ({:?})", parts.join(" · "), p.tone)
}

#[test]
fn the_pill_and_the_auto_line_agree_on_project_auto_not_allowed() {
    // Project Auto pressed without the global option: not allowed. The pill said "Auto not
    // allowed" while the panel's line said "Auto: off" (content.js chose the line's key from
    // `auto === 'on'`): both now come from one table.
    let view = page_view(PROJECT_CHAT, 1);
    assert_eq!(view.auto, "not_allowed");
    assert_eq!(view.auto_line, "hudAutoNotAllowed");
    let pill = pill(&link(Tone::Good, Tone::Good), Some(&view));
    assert!(pill.parts.iter().any(|say| say.key == "pillAutoNotAllowed"), "{}", printed(&pill));
    for auto in ["on", "off", "not_allowed"] {
        let (line, part) = auto_keys(auto);
        assert_eq!(line.trim_start_matches("hudAuto"), part.trim_start_matches("pillAuto"), "{auto}: {line} / {part}");
    }
}

#[test]
fn the_pill_says_the_link_then_the_page_in_order_with_the_worst_tone() {
    let bound = page_view(super::continuity::CONV, 0);
    let cases = [
        ("no continuity, all good", link(Tone::Good, Tone::Good), None),
        ("companion down", link(Tone::Bad, Tone::Good), None),
        ("herdr down", link(Tone::Good, Tone::Warning), None),
        ("bound chat", link(Tone::Good, Tone::Good), Some(bound.clone())),
        ("bound chat, herdr pending", link(Tone::Good, Tone::Pending), Some(bound.clone())),
        ("project chat, auto not allowed", link(Tone::Good, Tone::Good), Some(page_view(PROJECT_CHAT, 1))),
    ];
    let out: Vec<String> = cases.iter().map(|(name, hud, c)| format!("{name}: {}", printed(&pill(hud, c.as_ref())))).collect();
    expect_test::expect![[r#"
        no continuity, all good: pillBrand · pillConnected (Good)
        companion down: pillBrand · pillCompanionDown (Bad)
        herdr down: pillBrand · pillHerdrDown (Warning)
        bound chat: pillBrand · pillBinding["api"] · pillAutoOff · pillIdle · pillFactMissing["profile"] · pillHeld (Warning)
        bound chat, herdr pending: pillBrand · pillHerdrDown · pillBinding["api"] · pillAutoOff · pillIdle · pillFactMissing["profile"] · pillHeld (Warning)
        project chat, auto not allowed: pillBrand · pillBinding["api"] · pillAutoNotAllowed · pillIdle · pillFactMissing["profile"] · pillHeld (Warning)"#]].assert_eq(&out.join("\n"));
}
