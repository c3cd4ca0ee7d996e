//! The expanded HUD's lines and buttons as data (issue 28: the view is data): which lines
//! show, in which order and tone, their keys, substitutions and hooks, and the buttons'
//! label keys — all from ext-core (`continuity::hud_lines`, `ViewAction`); the page only
//! renders them (`extension/content-hud-lines.js`, held to it by `hud_renderer_shape`).

use ext_core::binding::CatalogWorkspace;
use ext_core::continuity::{Arg, Continuity, ContinuityInput, ContinuityView, HudLine, LinePart, PageReport};

use super::continuity::{CONV, TAB};

const ROOT: &str = "https://chatgpt.com/";
const PROJECT_CHAT: &str = "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef/c/6a1b2c3d-0000-4000-8000-00000000000a";

/// The view of a page of `url`, bound to `w1` ("api") when `bind`, Auto pressed `toggles` times.
fn view(url: &str, bind: bool, toggles: usize) -> ContinuityView {
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
    if bind {
        c.handle(0, ContinuityInput::Bind { tab: TAB, workspace: CatalogWorkspace { workspace_id: "w1".into(), label: "api".into() } });
    }
    for _ in 0..toggles {
        c.handle(0, ContinuityInput::ToggleAuto { tab: TAB });
    }
    c.page_view(TAB).expect("a ChatGPT page has a continuity view")
}

fn arg(a: &Arg) -> String {
    match a {
        Arg::Text { v } => format!("{v:?}"),
        Arg::Key { v } => format!("<{v}>"),
        Arg::Time { v } => format!("time({v})"),
        Arg::Clock { v } => format!("clock({v})"),
    }
}

fn printed_line(l: &HudLine) -> String {
    let mut out = format!("  {} {}", l.line, l.key);
    if !l.args.is_empty() {
        out += &format!("[{}]", l.args.iter().map(arg).collect::<Vec<_>>().join(", "));
    }
    out += &format!(" ({})", l.tone.wire_name());
    for h in &l.hooks {
        out += &format!(" data-{}={:?}", h.name, h.value);
    }
    if let Some(more) = &l.more {
        out += &format!(" +{}{:?}", more.key, more.args);
    }
    if l.part != LinePart::Text {
        out += &format!(" <{}>", l.part.wire_name());
    }
    if !l.items.is_empty() {
        out += &format!(" items{:?}", l.items);
    }
    out
}

fn printed(name: &str, v: &ContinuityView) -> String {
    let mut out = vec![format!("{name}:")];
    out.extend(v.lines.iter().map(printed_line));
    let buttons: Vec<String> = v
        .actions
        .iter()
        .map(|a| {
            let title = a.title.as_ref().map(|t| format!(" title {t}")).unwrap_or_default();
            let locked = a.locked.as_ref().map(|l| format!(" locked {}", l.key)).unwrap_or_default();
            format!("{}={}{title}{locked}", a.id, a.label)
        })
        .collect();
    out.push(format!("  buttons: {}", buttons.join(" · ")));
    out.join("\n")
}

#[test]
fn the_view_names_every_line_its_tone_and_every_button_label() {
    let cases = [
        ("root, not bound", view(ROOT, false, 0)),
        ("chat, not bound", view(CONV, false, 0)),
        ("chat, bound", view(CONV, true, 0)),
        ("chat, bound, Auto on", view(CONV, true, 1)),
        ("project chat, Auto pressed without the option", view(PROJECT_CHAT, true, 1)),
    ];
    let out: Vec<String> = cases.iter().map(|(name, v)| printed(name, v)).collect();
    expect_test::expect![[r#"
        root, not bound:
          binding hudNotBound (plain)
          layout hudFactUnresolved["profile", <factWhy_missing>] (withheld) data-fact="profile" data-why="missing"
          auto hudAutoOff (plain)
          buttons: toggle_auto=actionAutoTurnOn locked locked_no_scope_on_this_page
        chat, not bound:
          binding hudNotBound (plain)
          session hudSessionRef["chatgpt:conv:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"] (plain) data-ref="chatgpt:conv:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
          layout hudFactUnresolved["profile", <factWhy_missing>] (withheld) data-fact="profile" data-why="missing"
          auto hudAutoOff (plain)
          recovery hudRecovery[<recoveryState_off>, "", "1", "2", "0"] (plain) data-state="off" data-reasoning="false"
          health hudHealth[<healthLevel_normal>, <healthDecision_none>, "", "0", "0"] (plain) data-level="normal"
          buttons: toggle_auto=actionAutoTurnOn · continue=action_continue · check_herdr=action_check_herdr · llm_judge=action_llm_judge · journal_opt_in=action_journal_opt_in · handoff=action_handoff
        chat, bound:
          binding hudBound["api", "w1"] (plain)
          session hudSessionRef["chatgpt:conv:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"] (plain) data-ref="chatgpt:conv:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
          layout hudFactUnresolved["profile", <factWhy_missing>] (withheld) data-fact="profile" data-why="missing"
          auto hudAutoOff (plain)
          scope hudScopeIdle (plain)
          last-wake hudNoWakeYet (plain)
          withheld withheld_auto_off (withheld) data-code="auto_off"
          recovery hudRecovery[<recoveryState_off>, "", "1", "2", "0"] (plain) data-state="off" data-reasoning="false"
          health hudHealth[<healthLevel_normal>, <healthDecision_none>, "", "0", "0"] (plain) data-level="normal"
          journal journalNothingYet (plain)
          buttons: toggle_auto=actionAutoTurnOn · continue=action_continue · check_herdr=action_check_herdr · llm_judge=action_llm_judge · handoff=action_handoff · goal=hudGoal title hudGoalTitle
        chat, bound, Auto on:
          binding hudBound["api", "w1"] (plain)
          session hudSessionRef["chatgpt:conv:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"] (plain) data-ref="chatgpt:conv:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
          layout hudFactUnresolved["profile", <factWhy_missing>] (withheld) data-fact="profile" data-why="missing"
          auto hudAutoOn (plain)
          scope hudScopeIdle (plain)
          last-wake hudNoWakeYet (plain)
          withheld withheld_fact_unresolved (withheld) data-code="fact_unresolved"
          recovery hudRecovery[<recoveryState_healthy>, "", "1", "2", "0"] (plain) data-state="healthy" data-reasoning="false"
          health hudHealth[<healthLevel_normal>, <healthDecision_none>, "", "0", "0"] (plain) data-level="normal"
          journal journalNothingYet (plain)
          buttons: toggle_auto=actionAutoTurnOff · continue=action_continue locked locked_auto_is_on · check_herdr=action_check_herdr locked locked_auto_is_on · llm_judge=action_llm_judge locked locked_auto_is_on · handoff=action_handoff · goal=hudGoal title hudGoalTitle
        project chat, Auto pressed without the option:
          binding hudBound["api", "w1"] (plain)
          target hudActiveTarget["/c/6a1b2c3d-0000-4000-8000-00000000000a"] (plain)
          session hudSessionRef["chatgpt:project:g-p-0123456789abcdef0123456789abcdef"] (plain) data-ref="chatgpt:project:g-p-0123456789abcdef0123456789abcdef"
          layout hudFactUnresolved["profile", <factWhy_missing>] (withheld) data-fact="profile" data-why="missing"
          auto hudAutoNotAllowed (plain)
          auto-note withheld_project_auto_not_allowed (withheld)
          scope hudScopeIdle (plain)
          last-wake hudNoWakeYet (plain)
          withheld withheld_project_auto_not_allowed (withheld) data-code="project_auto_not_allowed"
          recovery hudRecovery[<recoveryState_off>, "", "1", "2", "0"] (plain) data-state="off" data-reasoning="false"
          health hudHealth[<healthLevel_normal>, <healthDecision_none>, "", "0", "0"] (plain) data-level="normal"
          journal journalNothingYet (plain)
          buttons: toggle_auto=actionAutoTurnOff · continue=action_continue · check_herdr=action_check_herdr · llm_judge=action_llm_judge · handoff=action_handoff · goal=hudGoal title hudGoalTitle"#]].assert_eq(&out.join("\n"));
}

#[test]
fn the_lines_are_a_function_of_the_view_and_the_auto_line_is_the_pills() {
    for (url, toggles) in [(CONV, 0), (CONV, 1), (PROJECT_CHAT, 1)] {
        let v = view(url, true, toggles);
        let auto: Vec<&HudLine> = v.lines.iter().filter(|l| l.line == "auto").collect();
        assert_eq!(auto.len(), 1, "{url}: one Auto line");
        assert_eq!(auto[0].key, ext_core::hud_pill::auto_keys(v.auto).0, "{url}: the line says the pill's Auto state");
        let toggle = v.actions.iter().find(|a| a.id == "toggle_auto").expect("the Auto button");
        let want = if v.auto == "off" { "actionAutoTurnOn" } else { "actionAutoTurnOff" };
        assert_eq!(toggle.label, want, "{url}: the button offers the other state");
    }
}
