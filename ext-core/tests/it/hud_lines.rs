//! The expanded HUD's lines and buttons as data (issue 28: the view is data): which lines
//! show, in which order and tone, their keys, substitutions and hooks, and the buttons'
//! label keys — all from ext-core (`continuity::hud_lines`, `ViewAction`); the page only
//! renders them (`extension/content-hud-lines.js`, held to it by `hud_renderer_shape`).

use ext_core::binding::CatalogWorkspace;
use ext_core::context_pressure::{Pressure, PressureLevel};
use ext_core::continuity::{
    handoff_action, view_lines, Arg, BridgeCardCall, BridgeRounds, BridgeView, CardLine, Continuity, ContinuityInput, ContinuityView,
    GuidanceLine, HandoffView, HealthLine, HudLine, LastWake, LinePart, PageReport, PendingCall, QueueView, RecoveryLine, Say,
};
use ext_core::delivery_ledger::DeliveryKind;

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

/// `base` with `change` applied, and its lines recomputed ([`view_lines`] is a pure function
/// of the view's fields, as the worker's `page_view` uses it).
fn with(base: &ContinuityView, change: impl FnOnce(&mut ContinuityView)) -> ContinuityView {
    let mut v = base.clone();
    change(&mut v);
    v.lines = view_lines(&v);
    v
}

/// The lines of `v` that `base` does not have (the rule under test), one per row.
fn rows(name: &str, base: &ContinuityView, v: &ContinuityView) -> String {
    let mut out = vec![format!("{name}:")];
    out.extend(v.lines.iter().filter(|l| !base.lines.contains(l)).map(printed_line));
    out.join("\n")
}

fn recovery(state: &'static str, reason: &'static str, reasoning: bool) -> RecoveryLine {
    RecoveryLine { state, reason, retries_left: 1, reloads_left: 2, probes: 3, reasoning }
}

fn health(level: &'static str, decision: &'static str, reason: &'static str, settings: Option<&'static str>) -> HealthLine {
    HealthLine { level, decision, reason, spikes: 4, long_tasks: 5, settings_problem: settings }
}

fn card(state: &'static str, code: &'static str, tool: &str, at: Option<u64>) -> CardLine {
    CardLine { state, code, connector: "GitHub".into(), at, tool: tool.into() }
}

fn say(key: &str, args: &[&str]) -> Say {
    Say { key: key.into(), args: args.iter().map(|a| (*a).to_owned()).collect() }
}

fn handoff(step: &'static str, key: &str, button: &'static str) -> HandoffView {
    HandoffView { step, line: Some(say(key, &["x"])), button, copy_prompt: None }
}

fn bridge(round_limit: bool, rounds: Option<(u32, u32)>, pending: usize) -> BridgeView {
    let call = |call| BridgeCardCall {
        call: PendingCall {
            call,
            tool: "fs".into(),
            method: None,
            target: None,
            args_preview: "{}".into(),
            mutating: true,
            detail: None,
            detail_more: 0,
        },
        deciding: false,
        tag: "hudBridgeMutating",
        more: None,
    };
    BridgeView {
        batch_id: (pending > 0).then(|| "b1".to_owned()),
        pending: (0..pending as u32).map(call).collect(),
        round_limit,
        rounds: rounds.map(|(used, limit)| BridgeRounds { used, limit }),
        card_label: "hudBridgeApprovalLabel",
        target_key: "hudBridgeTarget",
        buttons: Vec::new(),
    }
}

/// Every tone and visibility rule of `continuity::hud_lines`, one view per state: a Rust
/// edit that flips a tone or drops a line fails here, not only in e2e.
#[test]
fn every_line_rule_has_its_tone_and_visibility() {
    let base = view(CONV, true, 0);
    let cases: Vec<(&str, ContinuityView)> = vec![
        ("bridge: round limit with rounds", with(&base, |v| v.bridge = Some(bridge(true, Some((3, 3)), 0)))),
        ("bridge: round limit, rounds unknown", with(&base, |v| v.bridge = Some(bridge(true, None, 0)))),
        ("bridge: rounds used", with(&base, |v| v.bridge = Some(bridge(false, Some((1, 3)), 0)))),
        ("bridge: no round used (no line)", with(&base, |v| v.bridge = Some(bridge(false, Some((0, 3)), 0)))),
        ("bridge: calls wait (the card's head)", with(&base, |v| v.bridge = Some(bridge(false, None, 2)))),
        ("delivery uncertain", with(&base, |v| v.delivery_state = Some("uncertain"))),
        ("delivery sent (no line)", with(&base, |v| v.delivery_state = Some("sent"))),
        (
            "guidance with and without a note",
            with(&base, |v| {
                v.guidance = vec![
                    GuidanceLine { task_id: "t1".into(), kind: "needs_human".into(), note: Some("look at the log".into()) },
                    GuidanceLine { task_id: "t2".into(), kind: "drift".into(), note: None },
                ]
            }),
        ),
        (
            "last wake",
            with(&base, |v| {
                v.last_wake = Some(LastWake { at: 1_700_000_000_000, kind: DeliveryKind::Wake, id: "d1".into() });
                v.wake_count = 2;
            }),
        ),
        ("cooldown", with(&base, |v| v.cooldown_until = Some(1_700_000_600_000))),
        ("recovery healthy, with a reason", with(&base, |v| v.recovery = Some(recovery("healthy", "assistant_stall", false)))),
        ("recovery needs_user", with(&base, |v| v.recovery = Some(recovery("needs_user", "", false)))),
        ("recovery rollover", with(&base, |v| v.recovery = Some(recovery("rollover", "", false)))),
        ("recovery cooling, reasoning", with(&base, |v| v.recovery = Some(recovery("cooling", "", true)))),
        ("recovery waiting, reasoning", with(&base, |v| v.recovery = Some(recovery("waiting", "", true)))),
        ("health high", with(&base, |v| v.health = Some(health("high", "none", "spike", None)))),
        ("health withheld", with(&base, |v| v.health = Some(health("warn", "withheld", "", None)))),
        ("health warn, settings invalid", with(&base, |v| v.health = Some(health("warn", "none", "", Some("spikes"))))),
        ("card accepted", with(&base, |v| v.card = Some(card("accepted", "", "search", Some(1_700_000_000_000))))),
        ("card accepted, tool unnamed", with(&base, |v| v.card = Some(card("accepted", "", "", None)))),
        ("card accepted before", with(&base, |v| v.card = Some(card("accepted_before", "", "search", None)))),
        ("card gone", with(&base, |v| v.card = Some(card("gone", "", "search", None)))),
        ("card refused", with(&base, |v| v.card = Some(card("refused", "no_key", "search", None)))),
        ("journal recorded", with(&base, |v| v.journal = Some(say("journalRecorded", &["3"])))),
        ("journal dropped", with(&base, |v| v.journal = Some(say("journalDropped", &["2"])))),
        (
            "pressure 1 499 tokens (rounds down), warn",
            with(&base, |v| v.pressure = Some(Pressure { tokens: 1_499, messages: 7, level: PressureLevel::Warn })),
        ),
        (
            "pressure 1 500 tokens (rounds up), prepare",
            with(&base, |v| v.pressure = Some(Pressure { tokens: 1_500, messages: 7, level: PressureLevel::Prepare })),
        ),
        ("pressure recommend", with(&base, |v| v.pressure = Some(Pressure { tokens: 0, messages: 0, level: PressureLevel::Recommend }))),
        ("pressure auto", with(&base, |v| v.pressure = Some(Pressure { tokens: 0, messages: 0, level: PressureLevel::Auto }))),
        (
            "pressure high risk",
            with(&base, |v| v.pressure = Some(Pressure { tokens: u64::MAX, messages: 0, level: PressureLevel::HighRisk })),
        ),
        ("rollover started", with(&base, |v| v.rollover = Some("started"))),
        ("rollover held back", with(&base, |v| v.rollover = Some("busy"))),
        ("queue empty (no line)", with(&base, |v| v.queue = Some(queue("empty", Vec::new())))),
        ("queue waiting", with(&base, |v| v.queue = Some(queue("waiting", vec!["first".into(), "second".into()])))),
        ("queue sending", with(&base, |v| v.queue = Some(queue("sending", Vec::new())))),
        ("queue undelivered", with(&base, |v| v.queue = Some(queue("undelivered", vec!["first".into()])))),
        ("handoff preparing", with(&base, |v| v.handoff = Some(handoff("preparing", "handoffLine_preparing", "none")))),
        ("handoff failed", with(&base, |v| v.handoff = Some(handoff("failed", "handoffFailed_seed_failed", "handoff")))),
        ("handoff seed uncertain", with(&base, |v| v.handoff = Some(handoff("seed_uncertain", "handoffLine_seed_uncertain", "resume")))),
        ("handoff copy prompt", with(&base, |v| v.handoff = Some(handoff("copy_prompt", "handoffLine_copy_prompt", "copy_prompt")))),
        (
            "handoff without a line (no line)",
            with(&base, |v| v.handoff = Some(HandoffView { line: None, ..handoff("idle", "", "handoff") })),
        ),
    ];
    let out: Vec<String> = cases.iter().map(|(name, v)| rows(name, &base, v)).collect();
    expect_test::expect![[r#"
        bridge: round limit with rounds:
          bridge-round-limit hudBridgeRoundLimit["3", "3"] (withheld)
        bridge: round limit, rounds unknown:
          bridge-round-limit hudBridgeRoundLimit["", ""] (withheld)
        bridge: rounds used:
          bridge-rounds hudBridgeRounds["1", "3"] (plain)
        bridge: no round used (no line):
        bridge: calls wait (the card's head):
          bridge-approval-head hudBridgeApproval["2"] (withheld) <bridge_card>
        delivery uncertain:
          delivery hudDeliveryUncertain (withheld)
        delivery sent (no line):
        guidance with and without a note:
          guidance hudGuidance_needs_human["t1"] (plain) data-task="t1" data-kind="needs_human" +hudGuidanceNote["look at the log"]
          guidance hudGuidance_drift["t2"] (plain) data-task="t2" data-kind="drift"
        last wake:
          last-wake hudLastWake["wake", time(1700000000000), "2"] (plain)
        cooldown:
          cooldown hudCooldownUntil[clock(1700000600000)] (withheld)
        recovery healthy, with a reason:
          recovery hudRecovery[<recoveryState_healthy>, <recoveryReason_assistant_stall>, "1", "2", "3"] (plain) data-state="healthy" data-reasoning="false"
        recovery needs_user:
          recovery hudRecovery[<recoveryState_needs_user>, "", "1", "2", "3"] (withheld) data-state="needs_user" data-reasoning="false"
        recovery rollover:
          recovery hudRecovery[<recoveryState_rollover>, "", "1", "2", "3"] (withheld) data-state="rollover" data-reasoning="false"
        recovery cooling, reasoning:
          recovery hudRecovery[<recoveryState_cooling>, "", "1", "2", "3"] (withheld) data-state="cooling" data-reasoning="true" +hudRecoveryReasoning[]
        recovery waiting, reasoning:
          recovery hudRecovery[<recoveryState_waiting>, "", "1", "2", "3"] (plain) data-state="waiting" data-reasoning="true" +hudRecoveryReasoning[]
        health high:
          health hudHealth[<healthLevel_high>, <healthDecision_none>, <healthReason_spike>, "4", "5"] (withheld) data-level="high"
        health withheld:
          health hudHealth[<healthLevel_warn>, <healthDecision_withheld>, "", "4", "5"] (withheld) data-level="warn"
        health warn, settings invalid:
          health hudHealth[<healthLevel_warn>, <healthDecision_none>, "", "4", "5"] (plain) data-level="warn"
          health-settings healthSettingsInvalid["spikes"] (withheld)
        card accepted:
          card hudCardAccepted["GitHub", time(1700000000000), "search"] (plain) data-state="accepted" data-tool="search"
        card accepted, tool unnamed:
          card hudCardAcceptedUnnamed["GitHub", "", ""] (plain) data-state="accepted" data-tool=""
        card accepted before:
          card hudCardAcceptedBefore["GitHub", "", "search"] (plain) data-state="accepted_before" data-tool="search"
        card gone:
          card hudCardGone["GitHub", "", "search"] (withheld) data-state="gone" data-tool="search"
        card refused:
          card card_refused_no_key["GitHub", "", "search"] (withheld) data-state="refused" data-tool="search"
        journal recorded:
          journal journalRecorded["3"] (plain)
        journal dropped:
          journal journalDropped["2"] (withheld)
        pressure 1 499 tokens (rounds down), warn:
          pressure hudPressure["1", "7", <pressureLevel_warn>] (plain) data-level="warn"
        pressure 1 500 tokens (rounds up), prepare:
          pressure hudPressure["2", "7", <pressureLevel_prepare>] (plain) data-level="prepare"
        pressure recommend:
          pressure hudPressure["0", "0", <pressureLevel_recommend>] (withheld) data-level="recommend"
        pressure auto:
          pressure hudPressure["0", "0", <pressureLevel_auto>] (withheld) data-level="auto"
        pressure high risk:
          pressure hudPressure["18446744073709551", "0", <pressureLevel_high_risk>] (withheld) data-level="high_risk"
        rollover started:
          rollover hudRollover_started (plain) data-state="started"
        rollover held back:
          rollover hudRollover_busy (withheld) data-state="busy"
        queue empty (no line):
        queue waiting:
          queue queueLine_waiting["2", "40"] (plain) data-state="waiting" items["first", "second"]
        queue sending:
          queue queueLine_sending["2", "40"] (plain) data-state="sending"
        queue undelivered:
          queue queueLine_undelivered["2", "40"] (withheld) data-state="undelivered" items["first"]
        handoff preparing:
          handoff handoffLine_preparing["x"] (plain) data-step="preparing"
        handoff failed:
          handoff handoffFailed_seed_failed["x"] (withheld) data-step="failed"
        handoff seed uncertain:
          handoff handoffLine_seed_uncertain["x"] (withheld) data-step="seed_uncertain"
        handoff copy prompt:
          handoff handoffLine_copy_prompt["x"] (withheld) data-step="copy_prompt"
        handoff without a line (no line):"#]].assert_eq(&out.join("\n"));
}

fn queue(state: &'static str, previews: Vec<String>) -> QueueView {
    QueueView { count: 2, merged_chars: 40, state, previews, clear: "queueClearConfirm" }
}

/// The Handoff's button, as the view names it: none, Resume (`handoff_resume`), Copy Prompt.
#[test]
fn the_handoff_button_is_the_worker_s_named_one() {
    let out: Vec<String> = ["none", "handoff", "resume", "copy_prompt"]
        .iter()
        .map(|b| format!("{b} -> {}", handoff_action(b).map_or("(no button)".to_owned(), |a| format!("{}={}", a.id, a.label))))
        .collect();
    expect_test::expect![[r#"
        none -> (no button)
        handoff -> handoff=action_handoff
        resume -> handoff_resume=action_handoff_resume
        copy_prompt -> copy_prompt=action_copy_prompt"#]]
    .assert_eq(&out.join("\n"));
}

/// The HUD message carries the lines, the buttons and the state the page's hooks, queue
/// button and approval card read; what only the lines are built from stays in the core
/// (wasmcut29: its writer was dead weight in the wasm).
#[test]
fn the_hud_message_leaves_out_what_only_the_lines_are_built_from() {
    use ext_core::json_read::WriteJson;
    let json = view(PROJECT_CHAT, true, 1).write_json();
    let sent: Vec<&str> = json.as_object().expect("an object").keys().map(String::as_str).collect();
    for kept in ["lines", "actions", "binding", "active_target", "auto", "scope_state", "withheld", "layout", "queue", "handoff"] {
        assert!(sent.contains(&kept), "{kept} is sent: {sent:?}");
    }
    for left_out in [
        "page_kind",
        "scope_key",
        "session_ref",
        "pending_binding",
        "auto_line",
        "auto_note",
        "working_panes",
        "inbox_missing",
        "guidance",
        "last_wake",
        "delivery_uncertain_why",
        "in_flight",
        "judge",
    ] {
        assert!(!sent.contains(&left_out), "{left_out} is not sent: {sent:?}");
    }
}
