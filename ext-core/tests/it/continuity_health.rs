//! Page health through the composed machine (SPEC H1–H6, S7; HERDR-MCP-FACTS §2.1 bug 14):
//! a watched ChatGPT page's `health_sample`s drive its meters, and what they make eligible
//! goes through the conversation's recovery planner — a probe first, a reload only on a
//! finished assistant `current_node`, one page reload then one tab reload, then a rollover
//! recommendation and nothing more. Transcripts print every sample's effect on the HUD's
//! health line and every recovery command.

use ext_core::continuity::{
    Continuity, ContinuityInput, ContinuityOutput, PageRecoveryReport, PageReport, ProbeAnswer, ProbeNode, RecoveryCommand,
    HEALTH_DECISIONS, HEALTH_REASONS,
};
use ext_core::health::{HealthSample, HEAP_CRITICAL_BYTES};
use ext_core::recovery_config::RecoveryConfig;
use ext_core::stale_view::ServerRole;
use proptest::prelude::*;

use crate::continuity::{bound_with_auto, idle_page, TAB};

const T0: u64 = 1_800_000_000_000;
const SAMPLE_MS: u64 = 5_000;

/// What a page's meters count in one 5 s sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Load {
    /// A few callbacks, no drift.
    Calm,
    /// 500 callbacks in 5 s: 6 000 per minute, high.
    Storm,
    /// Calm, but the heap is critical.
    Heavy,
}

impl Load {
    fn sample(self) -> HealthSample {
        match self {
            Load::Calm => HealthSample { callbacks: 5, drift_ms: 30, ..HealthSample::default() },
            Load::Storm => HealthSample { callbacks: 500, drift_ms: 200, long_task_ms: 400, long_tasks: 2, ..HealthSample::default() },
            Load::Heavy => HealthSample {
                callbacks: 5,
                heap_used: Some(HEAP_CRITICAL_BYTES),
                heap_limit: Some(4 * HEAP_CRITICAL_BYTES),
                ..HealthSample::default()
            },
        }
    }
}

fn finished_assistant() -> ProbeAnswer {
    ProbeAnswer::Node(ProbeNode { id: "a2".into(), role: ServerRole::Assistant, text_len: 400, finished: true, update_time_ms: Some(T0) })
}

/// A bound ChatGPT chat showing a finished reply, its meters, and how the server answers.
struct World {
    c: Continuity,
    now: u64,
    loads: u32,
    draft: bool,
    generating: bool,
    server: ProbeAnswer,
    log: Vec<String>,
    commands: Vec<RecoveryCommand>,
    /// `tab_reload_accepted` as each tab reload left.
    accepted: Vec<bool>,
}

impl World {
    fn new(auto: bool) -> Self {
        let (c, _) = bound_with_auto(auto);
        let mut w = World {
            c,
            now: T0,
            loads: 1,
            draft: false,
            generating: false,
            server: finished_assistant(),
            log: Vec::new(),
            commands: Vec::new(),
            accepted: Vec::new(),
        };
        w.show();
        w
    }

    fn load(&self) -> String {
        format!("L{}", self.loads)
    }

    fn show(&mut self) {
        let facts = PageRecoveryReport {
            page_load: self.load(),
            assistant: true,
            assistant_id: Some("a2".into()),
            assistant_len: 400,
            signature: "400:x".into(),
            ..PageRecoveryReport::default()
        };
        let report = PageReport { draft: self.draft, generating: self.generating, page_load: self.load(), ..idle_page() };
        self.c.handle(self.now, ContinuityInput::RecoveryFacts { tab: TAB, facts });
        self.c.handle(self.now, ContinuityInput::PageReported { tab: TAB, report });
        self.drain();
    }

    fn configure(&mut self, record: serde_json::Value) {
        self.c.handle(self.now, ContinuityInput::RecoverySettings { stored: Some(Ok(record)) });
        self.drain();
    }

    /// One sample every 5 s for `secs` seconds.
    fn samples(&mut self, load: Load, secs: u64) {
        for _ in 0..secs * 1_000 / SAMPLE_MS {
            self.now += SAMPLE_MS;
            while let Some(at) = self.c.next_deadline().filter(|at| *at <= self.now) {
                self.c.handle_timeout(at.max(self.now - SAMPLE_MS));
                self.drain();
            }
            let before = self.health();
            self.c.handle(self.now, ContinuityInput::HealthSample { tab: TAB, page_load: self.load(), sample: load.sample() });
            self.drain();
            let after = self.health();
            if after != before {
                self.log.push(format!("t={}s {load:?} health {after}", (self.now - T0) / 1_000));
            }
        }
    }

    fn drain(&mut self) {
        while let Some(output) = self.c.poll() {
            let ContinuityOutput::Recovery { tab, command } = output else { continue };
            let at = (self.now - T0) / 1_000;
            self.commands.push(command.clone());
            match command {
                RecoveryCommand::Probe { .. } => {
                    self.log.push(format!(
                        "t={at}s probe -> {}",
                        if self.server == finished_assistant() { "finished assistant" } else { "other" }
                    ));
                    let answer = self.server.clone();
                    self.c.handle(self.now, ContinuityInput::SnapshotResult { tab, page_load: self.load(), answer });
                }
                RecoveryCommand::ReloadTab => {
                    let accepted = self.c.tab_reload_accepted(tab);
                    self.accepted.push(accepted);
                    self.log.push(format!("t={at}s ReloadTab accepted={accepted}"));
                    self.reloaded();
                }
                other => {
                    self.log.push(format!("t={at}s {other:?}"));
                    self.reloaded();
                }
            }
        }
    }

    /// The page came back from a reload: a new page load, the same thread.
    fn reloaded(&mut self) {
        self.loads += 1;
        self.c.handle(self.now, ContinuityInput::PageGone { tab: TAB });
        self.show();
    }

    fn health(&self) -> String {
        let line = self.c.page_view(TAB).and_then(|v| v.health).expect("a health line on a ChatGPT chat");
        format!("{} {} {} spikes={}", line.level, line.decision, line.reason, line.spikes)
    }

    fn reloads(&self) -> usize {
        self.commands.iter().filter(|c| matches!(c, RecoveryCommand::ReloadPage | RecoveryCommand::ReloadTab)).count()
    }
}

// H1, H3, H5, H6: a short storm is recorded and nothing else; a storm that lasts on a page
// whose reply stopped, with the server holding the finished reply, gets one probe and one
// page reload; the same pressure after it (the reload did not cure it) gets one tab reload
// after the cooldown — accepted by the worker's check — and then only a rollover
// recommendation, never another probe or reload.
#[test]
fn a_spike_is_recorded_and_sustained_pressure_reloads_the_page_then_the_tab_then_recommends_a_rollover() {
    let mut w = World::new(true);
    w.samples(Load::Calm, 10);
    w.samples(Load::Storm, 10);
    w.samples(Load::Calm, 60);
    assert!(w.commands.is_empty(), "a spike is never acted on: {:?}", w.commands);
    w.samples(Load::Storm, 300);
    w.samples(Load::Storm, 300);
    assert_eq!(w.accepted, [true]);
    assert_eq!(w.reloads(), 2);
    expect_test::expect![[r#"
        t=15s Storm health warn recorded spike spikes=1
        t=85s Storm health warn recorded spike spikes=2
        t=95s Storm health high recorded spike spikes=2
        t=115s probe -> finished assistant
        t=115s ReloadPage
        t=115s Storm health normal reload sustained_pressure spikes=0
        t=120s Storm health warn reload sustained_pressure spikes=0
        t=125s Storm health warn recorded spike spikes=1
        t=130s Storm health high recorded spike spikes=1
        t=175s probe -> finished assistant
        t=175s ReloadTab accepted=true
        t=175s Storm health normal reload sustained_pressure spikes=0
        t=180s Storm health warn reload sustained_pressure spikes=0
        t=185s Storm health warn recorded spike spikes=1
        t=190s Storm health high recorded spike spikes=1
        t=215s Storm health high withheld budgets_spent spikes=1"#]]
    .assert_eq(&w.log.join("\n"));
    let recovery = w.c.page_view(TAB).and_then(|v| v.recovery).expect("a recovery line");
    assert_eq!((recovery.state, recovery.reloads_left), ("rollover", 0), "H6: both spent");
}

// H3, H4: a human draft in the composer blocks every reload, however long the pressure
// lasts; so does Auto off. Neither asks even a probe.
#[test]
fn a_human_draft_or_auto_off_holds_every_reload_back() {
    let mut w = World::new(true);
    w.draft = true;
    w.show();
    w.samples(Load::Storm, 300);
    assert!(w.commands.is_empty(), "{:?}", w.commands);
    assert_eq!(w.health(), "high withheld human_input spikes=1");
    let mut off = World::new(false);
    off.samples(Load::Storm, 300);
    off.samples(Load::Heavy, 300);
    assert!(off.commands.is_empty(), "{:?}", off.commands);
    assert_eq!(off.health(), "normal withheld auto_off spikes=1");
}

// H3 / S5: the meters' probe changes nothing unless the server shows a finished assistant
// node; it is rationed like every probe (one per 15 s at most).
#[test]
fn sustained_pressure_without_a_finished_reply_on_the_server_reloads_nothing() {
    let mut w = World::new(true);
    w.server = ProbeAnswer::Node(ProbeNode {
        id: "a2".into(),
        role: ServerRole::Assistant,
        text_len: 400,
        finished: false,
        update_time_ms: Some(T0),
    });
    w.samples(Load::Storm, 120);
    assert_eq!(w.reloads(), 0);
    let probes = w.commands.len();
    assert!((1..=(120 - 30) / 15 + 1).contains(&probes), "{probes} probes");
    assert_eq!(w.health(), "high withheld not_proven spikes=1");
    let mut failed = World::new(true);
    failed.server = ProbeAnswer::Failed("http_5xx".into());
    failed.samples(Load::Storm, 120);
    assert_eq!(failed.reloads(), 0, "S5: an unreadable snapshot never leads to a reload");
}

// H4: a critical heap reloads only once the page has been quiet for the quiet time; a
// streaming reply holds it, and the reload counts against the same budgets.
#[test]
fn a_critical_heap_reloads_once_the_page_is_quiet() {
    let mut streaming = World::new(true);
    streaming.generating = true;
    streaming.show();
    streaming.samples(Load::Heavy, 300);
    assert_eq!(streaming.reloads(), 0, "never while a reply streams");
    let mut w = World::new(true);
    w.draft = true;
    w.show();
    w.samples(Load::Heavy, 120);
    assert!(w.commands.is_empty(), "never over a draft: {:?}", w.commands);
    w.draft = false;
    w.show();
    w.samples(Load::Heavy, 60);
    expect_test::expect![[r#"
        t=5s Heavy health normal withheld human_input spikes=0
        t=125s Heavy health normal withheld not_quiet spikes=0
        t=150s ReloadPage
        t=150s Heavy health normal reload heap_critical spikes=0
        t=155s Heavy health normal withheld not_quiet spikes=0"#]]
    .assert_eq(&w.log.join("\n"));
}

// H5, level 2: the worker carries out `chrome.tabs.reload` only for the tab whose
// conversation's planner holds the pending tab reload of its current page load, with Auto on.
#[test]
fn a_tab_reload_is_accepted_only_with_its_pending_record_same_conversation_and_auto_on() {
    let mut w = World::new(true);
    assert!(!w.c.tab_reload_accepted(TAB), "nothing pending");
    w.samples(Load::Storm, 40);
    assert_eq!(w.reloads(), 1);
    // Hold the next command: the tab reload is decided but not carried out yet.
    w.samples(Load::Storm, 55);
    w.server = finished_assistant();
    w.now += SAMPLE_MS;
    w.c.handle(w.now, ContinuityInput::HealthSample { tab: TAB, page_load: w.load(), sample: Load::Storm.sample() });
    let mut decided = false;
    while let Some(output) = w.c.poll() {
        if let ContinuityOutput::Recovery { command: RecoveryCommand::Probe { .. }, .. } = output {
            w.c.handle(w.now, ContinuityInput::SnapshotResult { tab: TAB, page_load: w.load(), answer: finished_assistant() });
        }
        decided |= matches!(output, ContinuityOutput::Recovery { command: RecoveryCommand::ReloadTab, .. });
    }
    assert!(decided, "the tab reload was decided: {}", w.log.join("\n"));
    assert!(w.c.tab_reload_accepted(TAB));
    assert!(!w.c.tab_reload_accepted(TAB + 1), "another tab");
    let elsewhere =
        PageReport { url: "https://chatgpt.com/c/11111111-2222-3333-4444-555555555555".into(), page_load: w.load(), ..idle_page() };
    let mut moved = w.c.clone();
    moved.handle(w.now, ContinuityInput::PageReported { tab: TAB, report: elsewhere });
    assert!(!moved.tab_reload_accepted(TAB), "the tab shows another conversation now");
    let mut off = w.c.clone();
    off.handle(w.now, ContinuityInput::ToggleAuto { tab: TAB });
    assert!(!off.tab_reload_accepted(TAB), "Auto was turned off");
    let mut other_load = w.c.clone();
    let report = PageReport { page_load: "L-other".into(), ..idle_page() };
    other_load.handle(w.now, ContinuityInput::PageReported { tab: TAB, report });
    assert!(!other_load.tab_reload_accepted(TAB), "decided on another page load");
}

// O4 with S4, H3: the options page's thresholds are used (a shorter sustained time acts
// sooner); a record that does not validate leaves the defaults in force and the HUD names
// the field.
#[test]
fn the_options_page_thresholds_are_used_and_a_bad_record_keeps_the_defaults() {
    let mut w = World::new(true);
    w.configure(serde_json::json!({"sustained_sec": 10, "reload_cooldown_sec": 10}));
    w.samples(Load::Storm, 20);
    assert_eq!(w.reloads(), 1, "{}", w.log.join("\n"));
    let mut bad = World::new(true);
    bad.configure(serde_json::json!({"sustained_sec": 5}));
    assert_eq!(bad.c.recovery_config_in_force(), RecoveryConfig::default());
    let line = bad.c.page_view(TAB).and_then(|v| v.health).expect("a health line");
    assert_eq!(line.settings_problem, Some("sustained_sec"));
    bad.samples(Load::Storm, 20);
    assert_eq!(bad.reloads(), 0, "the default 30 s apply");
}

// The HUD renders `healthLevel_<level>`, `healthDecision_<code>` and `healthReason_<code>`:
// each exists in English and Chinese.
#[test]
fn every_health_code_has_its_texts_in_english_and_chinese() {
    for name in ["en", "zh_CN"] {
        let path = format!("{}/../extension/_locales/{name}/messages.json", env!("CARGO_MANIFEST_DIR"));
        let messages: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("locale file")).expect("locale JSON");
        let keys = ["normal", "warn", "high"]
            .iter()
            .map(|l| format!("healthLevel_{l}"))
            .chain(HEALTH_DECISIONS.iter().map(|d| format!("healthDecision_{d}")))
            .chain(HEALTH_REASONS.iter().map(|r| format!("healthReason_{r}")))
            .chain(["hudHealth".to_owned(), "healthSettingsInvalid".to_owned(), "recoveryReason_health_pressure".to_owned()]);
        for key in keys {
            let text = messages[&key]["message"].as_str().unwrap_or_default();
            assert!(text.chars().count() > 1, "{name} has no {key}");
        }
    }
}

proptest! {
    /// H1, H3, H4, S7: random samples, drafts, streaming and server answers never act on a
    /// spike shorter than the sustained time, never reload while a draft is in the composer,
    /// and never reload more than the two budgets allow (one page, one tab).
    #[test]
    fn continuity_health_props(steps in prop::collection::vec((0u8..3, any::<bool>(), any::<bool>(), any::<bool>()), 1..120)) {
        let mut w = World::new(true);
        let mut high_since: Option<u64> = None;
        for (load, draft, streaming, finished) in steps {
            let load = [Load::Calm, Load::Storm, Load::Heavy][usize::from(load)];
            if (draft, streaming) != (w.draft, w.generating) {
                w.draft = draft;
                w.generating = streaming;
                w.show();
            }
            w.server = if finished { finished_assistant() } else { ProbeAnswer::Failed("timeout".into()) };
            let before = w.commands.len();
            let loads_before = w.loads;
            w.samples(load, 5);
            high_since = if load == Load::Storm { high_since.or(Some(w.now)) } else { None };
            for command in &w.commands[before..] {
                let reload = matches!(command, RecoveryCommand::ReloadPage | RecoveryCommand::ReloadTab);
                prop_assert!(!(reload && draft), "reloaded over a draft");
                // (While a reply streams, the planner's own stall check may probe too.)
                if matches!(command, RecoveryCommand::Probe { .. }) && !streaming {
                    prop_assert!(high_since.is_some_and(|at| w.now - at + SAMPLE_MS >= 30_000) || w.loads != loads_before, "acted on a spike");
                }
            }
            prop_assert!(w.reloads() <= 2, "over the budgets: {:?}", w.commands);
            prop_assert!(w.accepted.iter().all(|a| *a), "a tab reload without its pending record");
        }
    }
}
