//! Stuck ChatGPT pages through the composed machine (SPEC S1–S8, H5, H7; HERDR-MCP-FACTS
//! §2.1 bugs 8, 11, 14): the page's recovery facts and its probes' answers become page
//! commands — one reload when the server is ahead, one Retry when the server is still at
//! the user, a reload and never a Retry when it is at a finished assistant, nothing from a
//! snapshot that could not be read — recorded durably before they leave, so a worker
//! restart never repeats them. Transcripts print every recovery command and probe answer.

use ext_core::continuity::{
    Continuity, ContinuityInput, ContinuityOutput, DeliveryOutcome, PageRecoveryReport, PageReport, ProbeAnswer, ProbeNode,
    RecoveryCommand, RECOVERY_TICK_MS,
};
use ext_core::recovery::{ASSISTANT_STALL_MS, MAX_RELOADS_PER_HOUR, MAX_RESENDS, PROBE_INTERVAL_MS, RELOAD_COOLDOWN_MS, RESEND_SPACING_MS};
use ext_core::snapshot::Snapshot;
use ext_core::stale_view::ServerRole;
use proptest::prelude::*;

use crate::continuity::{bound_with_auto, idle_page, CONV, TAB};

const T0: u64 = 1_800_000_000_000;
const CONV_ID: &str = "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0";

/// What the fake page shows (its recovery facts and page facts).
#[derive(Clone, Debug)]
struct Shown {
    load: String,
    generating: bool,
    assistant_id: Option<String>,
    assistant_len: u32,
    user_waiting: bool,
    send_timeout: bool,
    draft: bool,
    /// Marker ids in the user turns (ours), the newest last.
    markers: Vec<String>,
    /// The marker of the user turn shown waiting.
    waiting_marker: Option<String>,
}

impl Shown {
    fn frozen(load: &str) -> Self {
        Shown {
            load: load.into(),
            generating: true,
            assistant_id: None,
            assistant_len: 40,
            user_waiting: false,
            send_timeout: false,
            draft: false,
            markers: Vec::new(),
            waiting_marker: None,
        }
    }
    fn send_timeout(load: &str) -> Self {
        Shown { generating: false, assistant_len: 0, send_timeout: true, ..Self::frozen(load) }
    }
    fn synced(load: &str) -> Self {
        Shown { generating: false, assistant_id: Some("a2".into()), assistant_len: 400, ..Self::frozen(load) }
    }
    fn report(&self) -> PageReport {
        PageReport {
            generating: self.generating,
            draft: self.draft,
            page_load: self.load.clone(),
            markers: self.markers.clone(),
            user_turns: u32::try_from(self.markers.len()).unwrap_or(u32::MAX) + 1,
            ..idle_page()
        }
    }
    fn recovery(&self) -> PageRecoveryReport {
        PageRecoveryReport {
            page_load: self.load.clone(),
            assistant: true,
            assistant_id: self.assistant_id.clone(),
            assistant_len: self.assistant_len,
            assistant_streaming: self.generating,
            signature: format!("{}:x", self.assistant_len),
            user_waiting: self.user_waiting,
            send_timeout: self.send_timeout,
            retry_offered: self.send_timeout,
            rate_limited: false,
            reasoning: false,
            waiting_marker: self.waiting_marker.clone(),
        }
    }
}

/// The bound chat with Auto on, its page, and how the page answers probes.
struct World {
    c: Continuity,
    now: u64,
    shown: Shown,
    /// What the server answers to a probe.
    server: ProbeAnswer,
    log: Vec<String>,
    /// Commands seen (for counting).
    commands: Vec<RecoveryCommand>,
    /// Each budgeted command found its pending record in the snapshot as it left.
    durable: bool,
    /// The last probe's answer could not be read.
    last_failed: bool,
    /// What must never happen, as it happened.
    violations: Vec<String>,
    /// A message of ours may be typed (a resend); otherwise any `Deliver` is a violation.
    deliveries_allowed: bool,
    /// Ids of the messages typed, in order.
    delivered: Vec<String>,
}

fn assistant(id: &str, len: u32, finished: bool) -> ProbeAnswer {
    ProbeAnswer::Node(ProbeNode { id: id.into(), role: ServerRole::Assistant, text_len: len, finished, update_time_ms: Some(T0) })
}

fn user_node() -> ProbeAnswer {
    ProbeAnswer::Node(ProbeNode { id: "u2".into(), role: ServerRole::User, text_len: 20, finished: true, update_time_ms: Some(T0) })
}

impl World {
    fn new(shown: Shown, server: ProbeAnswer, auto: bool) -> Self {
        let (c, _) = bound_with_auto(auto);
        let mut w = World {
            c,
            now: T0,
            shown,
            server,
            log: Vec::new(),
            commands: Vec::new(),
            durable: true,
            last_failed: false,
            violations: Vec::new(),
            deliveries_allowed: false,
            delivered: Vec::new(),
        };
        w.show();
        w
    }

    fn show(&mut self) {
        let (facts, report) = (self.shown.recovery(), self.shown.report());
        self.c.handle(self.now, ContinuityInput::RecoveryFacts { tab: TAB, facts });
        self.c.handle(self.now, ContinuityInput::PageReported { tab: TAB, report });
        self.drain();
    }

    fn drain(&mut self) {
        let mut typed = Vec::new();
        while let Some(output) = self.c.poll() {
            if let ContinuityOutput::Deliver { id, .. } = &output {
                if self.deliveries_allowed {
                    let at = (self.now - T0) / 1000;
                    self.log.push(format!("t={at}s deliver {}", id.split('/').next().unwrap_or_default()));
                    typed.push(id.clone());
                } else {
                    self.violations.push(format!("typed {id} into the page"));
                }
            }
            if let ContinuityOutput::Activity(entry) = &output {
                // The Activity timeline (O1): each reload or Retry, with why.
                let json = ext_core::json_read::WriteJson::write_json(entry);
                let at = (self.now - T0) / 1000;
                self.log.push(format!("t={at}s activity {} {} {}", json["kind"], json["outcome"], json["reason"]));
            }
            let ContinuityOutput::Recovery { tab, command } = output else { continue };
            // Every action answers a probe (the planner acts only on its answer).
            if !matches!(command, RecoveryCommand::Probe { .. }) {
                if self.last_failed && (is_retry(&command) || !self.shown.send_timeout) {
                    self.violations.push(format!("{command:?} from a snapshot that could not be read ({:?})", self.shown));
                }
                if self.shown.draft {
                    self.violations.push(format!("{command:?} over a human draft"));
                }
            }
            let at = (self.now - T0) / 1000;
            if command.durable_first() {
                // What the shell writes before carrying the command out.
                let stored = self.c.snapshot().to_json().expect("persist");
                self.durable &= stored.contains("\"pending\":{");
            }
            self.commands.push(command.clone());
            match &command {
                RecoveryCommand::Probe { conversation_id } => {
                    self.log.push(format!("t={at}s probe {conversation_id} -> {:?}", self.server));
                    let answer = self.server.clone();
                    self.last_failed = matches!(answer, ProbeAnswer::Failed(_));
                    let page_load = self.shown.load.clone();
                    self.c.handle(self.now, ContinuityInput::SnapshotResult { tab, page_load, answer });
                }
                other => self.log.push(format!("t={at}s {other:?}")),
            }
        }
        // The page takes each message we typed: a new user turn with its marker, waiting
        // (whether the server accepted it is the server's answer, `self.server`).
        for id in typed {
            self.c.handle(self.now, ContinuityInput::DeliveryReport { tab: TAB, id: id.clone(), outcome: DeliveryOutcome::Submitted });
            self.delivered.push(id.clone());
            self.shown.markers.push(id.clone());
            self.shown.waiting_marker = Some(id);
            self.shown.user_waiting = true;
            self.show();
        }
    }

    /// Runs the clock to `until` (ms after T0), firing every deadline.
    fn run(&mut self, until: u64) {
        while let Some(at) = self.c.next_deadline().filter(|at| *at <= T0 + until) {
            self.now = at.max(self.now);
            self.c.handle_timeout(self.now);
            self.drain();
        }
        self.now = T0 + until;
    }

    fn restart(&mut self) {
        let text = self.c.snapshot().to_json().expect("persist");
        self.c = Continuity::from_snapshot(Snapshot::parse(&text).expect("restore"), self.now, "r2");
        self.log.push(format!("t={}s worker restart", (self.now - T0) / 1000));
        self.c.handle(self.now, ContinuityInput::LinkUp);
        self.show();
    }

    fn count(&self, wanted: fn(&RecoveryCommand) -> bool) -> usize {
        self.commands.iter().filter(|c| wanted(c)).count()
    }

    fn hud(&self) -> String {
        let line = self.c.page_view(TAB).and_then(|v| v.recovery).expect("a recovery line on a ChatGPT chat");
        format!("{} {} retries={} reloads={} probes={}", line.state, line.reason, line.retries_left, line.reloads_left, line.probes)
    }

    /// The HUD's rollover line (`-` when it shows none).
    fn rollover(&self) -> &'static str {
        self.c.page_view(TAB).and_then(|v| v.rollover).unwrap_or("-")
    }

    /// The human sends a message on the page as it is: the reply streams, finishes, and the
    /// turn ends (a healthy turn).
    fn healthy_human_turn(&mut self, text: &str) {
        let load = self.shown.load.clone();
        self.shown = Shown { assistant_len: 100, ..Shown::frozen(&load) };
        self.show();
        self.now += 5_000;
        self.shown = Shown { assistant_len: 300, ..Shown::synced(&load) };
        self.show();
        self.log.push(format!("t={}s human turn ended", (self.now - T0) / 1000));
        let ended = ContinuityInput::TurnEnded {
            tab: TAB,
            user_text: text.into(),
            assistant_text: "Done.".into(),
            user_marker: None,
            message_id: Some(format!("a-{}", self.now)),
            user_message_id: Some(format!("u-{}", self.now)),
            pressed: false,
            user_stopped: false,
        };
        self.c.handle(self.now, ended);
        self.drain();
    }
}

fn is_reload(c: &RecoveryCommand) -> bool {
    matches!(c, RecoveryCommand::ReloadPage | RecoveryCommand::ReloadTab)
}

fn is_retry(c: &RecoveryCommand) -> bool {
    matches!(c, RecoveryCommand::ClickRetry)
}

// S3, S8, H5 (HERDR-MCP-FACTS §2.1 bug 14: reload loops across MV3 restarts): the DOM froze
// mid-reply while the server finished. One probe after the stall, one reload, recorded
// before it left; a worker restart before the page reloaded never reloads it again.
#[test]
fn server_ahead_reloads_once_and_a_restart_before_the_reload_does_not_reload_again() {
    let mut w = World::new(Shown::frozen("L1"), assistant("a2", 400, true), true);
    w.run(ASSISTANT_STALL_MS + RECOVERY_TICK_MS);
    assert_eq!(w.hud(), "acted reload_page retries=1 reloads=1 probes=1");
    w.restart();
    w.run(ASSISTANT_STALL_MS + 50_000);
    // The page reloads at last and shows the whole reply.
    w.shown = Shown::synced("L2");
    w.show();
    w.run(10 * 60_000);
    assert!(w.durable, "every budgeted command was in the snapshot before it left");
    expect_test::expect![[r#"
        t=30s probe 0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 -> Node(ProbeNode { id: "a2", role: Assistant, text_len: 400, finished: true, update_time_ms: Some(1800000000000) })
        t=30s activity "recovery_reload" "sent" "assistant_stall"
        t=30s ReloadPage
        t=35s worker restart
        t=75s probe 0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 -> Node(ProbeNode { id: "a2", role: Assistant, text_len: 400, finished: true, update_time_ms: Some(1800000000000) })"#]]
    .assert_eq(&w.log.join("\n"));
    assert_eq!(w.count(is_reload), 1);
    assert_eq!(w.hud(), "healthy  retries=1 reloads=1 probes=1");
}

// S6 (HERDR-MCP-FACTS §2.1 bug 8): "Message delivery timed out". With the server still at
// the user → ChatGPT's Retry, once, never a reload (the Retry was taken: the card goes and
// the reply arrives in the same page). With the server at a finished assistant → a reload
// to show it, never Retry (which would regenerate and duplicate side effects).
#[test]
fn a_send_timeout_retries_only_when_the_server_is_still_at_the_user() {
    let cases = [
        (
            user_node(),
            Shown::synced("L1"),
            (1, 0),
            expect_test::expect![[r#"
            t=0s probe 0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 -> Node(ProbeNode { id: "u2", role: User, text_len: 20, finished: true, update_time_ms: Some(1800000000000) })
            t=0s activity "recovery_retry" "sent" "send_timeout"
            t=0s ClickRetry"#]],
        ),
        (
            assistant("a9", 300, true),
            Shown::synced("L2"),
            (0, 1),
            expect_test::expect![[r#"
            t=0s probe 0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 -> Node(ProbeNode { id: "a9", role: Assistant, text_len: 300, finished: true, update_time_ms: Some(1800000000000) })
            t=0s activity "recovery_reload" "sent" "send_timeout"
            t=0s ReloadPage"#]],
        ),
    ];
    for (server, then, (retries, reloads), transcript) in cases {
        let mut w = World::new(Shown::send_timeout("L1"), server, true);
        w.run(5_000);
        w.shown = then;
        w.show();
        w.run(10 * 60_000);
        transcript.assert_eq(&w.log.join("\n"));
        assert!(w.durable);
        assert_eq!((w.count(is_retry), w.count(is_reload)), (retries, reloads));
    }
}

// S5, H7: a snapshot that fails (500, odd shape, timeout) leads to nothing but more probes,
// at most one per 15 s; a 429 starts the back-off, during which nothing is asked at all.
#[test]
fn a_snapshot_that_cannot_be_read_leads_to_no_action_and_a_429_stops_the_probes() {
    for kind in ["http_5xx", "odd_shape", "timeout", "http_403"] {
        let mut w = World::new(Shown::frozen("L1"), ProbeAnswer::Failed(kind.into()), true);
        w.run(5 * 60_000);
        assert_eq!(w.commands.iter().filter(|c| !matches!(c, RecoveryCommand::Probe { .. })).count(), 0, "{kind}: no action");
        let probes = w.count(|c| matches!(c, RecoveryCommand::Probe { .. })) as u64;
        assert!((2..=(5 * 60_000 - ASSISTANT_STALL_MS) / PROBE_INTERVAL_MS + 1).contains(&probes), "{kind}: {probes} probes");
        assert_eq!(w.hud(), format!("observed unknown retries=1 reloads=2 probes={probes}"));
    }
    let mut w = World::new(Shown::frozen("L1"), ProbeAnswer::Failed("http_429".into()), true);
    w.run(ASSISTANT_STALL_MS + 29_000);
    assert_eq!(w.commands.len(), 1, "one probe, then the 30 s cooldown: {:?}", w.commands);
    assert_eq!(w.hud(), "cooling rate_limited retries=1 reloads=2 probes=1");
}

// The issue's acceptance 3: a healthy idle bound tab costs the site nothing — no probe and
// not even a timer in an hour; with Auto off or off ChatGPT a stuck page gets no command.
#[test]
fn a_healthy_idle_tab_never_probes_and_auto_off_or_another_site_never_acts() {
    let mut idle = World::new(Shown::synced("L1"), assistant("a2", 400, true), true);
    assert_eq!(idle.c.next_deadline(), None, "nothing to tick on a healthy idle page");
    idle.run(60 * 60_000);
    assert!(idle.commands.is_empty());
    assert_eq!(idle.hud(), "healthy  retries=1 reloads=2 probes=0");

    let mut off = World::new(Shown::frozen("L1"), assistant("a2", 400, true), false);
    off.run(10 * 60_000);
    assert!(off.commands.is_empty());
    assert_eq!(off.hud(), "off  retries=1 reloads=2 probes=0");

    let mut zai = World::new(Shown::frozen("L1"), assistant("a2", 400, true), true);
    let report = PageReport { url: "https://chat.z.ai/c/8f9e0d1c-2b3a-4c5d-8e7f-6a5b4c3d2e1f".into(), ..Shown::frozen("L1").report() };
    zai.c.handle(T0, ContinuityInput::PageReported { tab: 9, report });
    zai.c.handle(T0, ContinuityInput::RecoveryFacts { tab: 9, facts: Shown::frozen("L1").recovery() });
    zai.commands.clear();
    zai.c.handle(T0, ContinuityInput::PageGone { tab: TAB });
    zai.run(10 * 60_000);
    assert!(zai.commands.is_empty(), "{:?}", zai.commands);
    assert!(zai.c.page_view(9).and_then(|v| v.recovery).is_none());
    assert!(CONV.contains(CONV_ID));
}

// S7, H6 (issue 26 Found 1: recovery worked once per conversation, ever; failed before: the
// second stale view got the tab reload, the third nothing, however many healthy turns came
// between). Budgets are per incident: after a healthy human turn and past the cooldown a
// second stale view is reloaded again with the page reload; across incidents at most
// MAX_RELOADS_PER_HOUR reloads in the hour, then the HUD recommends a new chat and says why
// the handoff does not start by itself (a plain chat is not a Project).
#[test]
fn a_stale_view_after_a_healthy_human_turn_is_reloaded_again_and_reloads_stay_bounded_per_hour() {
    let mut w = World::new(Shown::frozen("L1"), assistant("a2", 400, true), true);
    let mut loads = 1;
    for round in 0..=MAX_RELOADS_PER_HOUR {
        let start = w.now - T0;
        w.run(start + ASSISTANT_STALL_MS + RECOVERY_TICK_MS);
        if round == MAX_RELOADS_PER_HOUR {
            break;
        }
        // The page reloads and shows the server's reply; the human writes again.
        loads += 1;
        w.shown = Shown::synced(&format!("L{loads}"));
        w.show();
        w.healthy_human_turn("and now the next step");
        assert_eq!(
            w.hud(),
            format!("acted reload_page retries=1 reloads={} probes={}", 2.min(MAX_RELOADS_PER_HOUR - 1 - round), round + 1),
            "after round {round}"
        );
        // Past the cooldown, the next stale view on this page load.
        let next = w.now - T0 + RELOAD_COOLDOWN_MS;
        w.run(next);
        w.server = assistant(&format!("a{}", round + 3), 500, true);
        w.shown = Shown { assistant_len: 60, ..Shown::frozen(&format!("L{loads}")) };
        w.show();
    }
    assert_eq!(w.count(|c| matches!(c, RecoveryCommand::ReloadPage)), MAX_RELOADS_PER_HOUR, "{}", w.log.join("\n"));
    assert_eq!(w.count(|c| matches!(c, RecoveryCommand::ReloadTab)), 0, "each incident starts at the page reload");
    assert!(w.now - T0 < 3_600_000, "all inside one hour");
    assert_eq!(w.hud(), "rollover hourly_limit retries=1 reloads=0 probes=4");
    assert_eq!(w.rollover(), "not_project", "a plain chat: the HUD recommends a new chat, nothing starts by itself");
    assert!(w.violations.is_empty(), "{:?}", w.violations);
    expect_test::expect![[r#"
        t=30s probe 0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 -> Node(ProbeNode { id: "a2", role: Assistant, text_len: 400, finished: true, update_time_ms: Some(1800000000000) })
        t=30s activity "recovery_reload" "sent" "assistant_stall"
        t=30s ReloadPage
        t=40s human turn ended
        t=130s probe 0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 -> Node(ProbeNode { id: "a3", role: Assistant, text_len: 500, finished: true, update_time_ms: Some(1800000000000) })
        t=130s activity "recovery_reload" "sent" "assistant_stall"
        t=130s ReloadPage
        t=140s human turn ended
        t=230s probe 0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 -> Node(ProbeNode { id: "a4", role: Assistant, text_len: 500, finished: true, update_time_ms: Some(1800000000000) })
        t=230s activity "recovery_reload" "sent" "assistant_stall"
        t=230s ReloadPage
        t=240s human turn ended
        t=330s probe 0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 -> Node(ProbeNode { id: "a5", role: Assistant, text_len: 500, finished: true, update_time_ms: Some(1800000000000) })"#]].assert_eq(&w.log.join("\n"));
}

// S4 (issue 26 Found 2: "request not accepted" without a Retry card only set needs_user and
// an unattended loop stalled there; failed before: no resend). Our continue reached the page
// but the server never accepted it: the snapshot shows the page's last assistant message as
// the server's current node. It is sent again as a new delivery, at most MAX_RESENDS times,
// RESEND_SPACING_MS apart, each after a probe proving it still missing; then the HUD
// recommends a new chat. Never for a human's turn, never on a snapshot that could not be
// read or that holds the turn.
#[test]
fn a_message_of_ours_the_server_never_accepted_is_resent_paced_and_bounded() {
    let not_accepted = assistant("a2", 400, true);
    let mut w = World::new(Shown::synced("L1"), not_accepted.clone(), false);
    w.deliveries_allowed = true;
    w.c.handle(w.now, ContinuityInput::Continue { tab: TAB });
    w.c.handle(w.now, ContinuityInput::ToggleAuto { tab: TAB });
    w.drain();
    assert_eq!(w.delivered.len(), 1, "the continue went out: {}", w.log.join("\n"));
    w.run(10 * 60_000);
    assert_eq!(w.delivered.len(), 1 + MAX_RESENDS as usize, "{}", w.log.join("\n"));
    assert!(w.violations.is_empty(), "{:?}", w.violations);
    assert_eq!(w.hud(), "rollover budgets_spent retries=1 reloads=2 probes=3");
    assert_eq!(w.rollover(), "not_project");
    expect_test::expect![[r#"
        t=0s deliver continue:w1
        t=30s probe 0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 -> Node(ProbeNode { id: "a2", role: Assistant, text_len: 400, finished: true, update_time_ms: Some(1800000000000) })
        t=30s activity "recovery_retry" "sent" "request_not_accepted"
        t=30s deliver continue:w1
        t=90s probe 0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 -> Node(ProbeNode { id: "a2", role: Assistant, text_len: 400, finished: true, update_time_ms: Some(1800000000000) })
        t=90s activity "recovery_retry" "sent" "request_not_accepted"
        t=90s deliver continue:w1
        t=150s probe 0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 -> Node(ProbeNode { id: "a2", role: Assistant, text_len: 400, finished: true, update_time_ms: Some(1800000000000) })"#]].assert_eq(&w.log.join("\n"));
    let sent_at: Vec<u64> =
        w.log.iter().filter(|l| l.contains(" deliver ")).filter_map(|l| l.strip_prefix("t=")?.split('s').next()?.parse().ok()).collect();
    assert_eq!(sent_at.len(), 3);
    assert!(sent_at[1..].windows(2).all(|p| (p[1] - p[0]) * 1_000 >= RESEND_SPACING_MS), "paced: {sent_at:?}");

    // No proof, no resend: the probe fails, the server holds the turn, or the turn waiting
    // is the human's (no marker of ours).
    for (server, ours) in [(ProbeAnswer::Failed("timeout".into()), true), (user_node(), true), (not_accepted, false)] {
        let mut w = World::new(Shown::synced("L1"), server.clone(), false);
        w.deliveries_allowed = true;
        w.c.handle(w.now, ContinuityInput::Continue { tab: TAB });
        w.c.handle(w.now, ContinuityInput::ToggleAuto { tab: TAB });
        w.drain();
        if !ours {
            // The human's turn follows ours and waits: nothing of ours is waiting.
            w.shown.waiting_marker = None;
            w.show();
        }
        w.run(10 * 60_000);
        assert_eq!(w.delivered.len(), 1, "{server:?} ours={ours}: {}", w.log.join("\n"));
    }
}

/// One step of the property test.
#[derive(Clone, Debug)]
enum Op {
    /// The page shows this (a new page load when `reload`).
    Show { generating: bool, user_waiting: bool, send_timeout: bool, draft: bool, grow: bool, reload: bool },
    /// The server's answer to the next probes.
    Server(u8),
    /// Time passes.
    Wait(u64),
    /// The worker restarts.
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<bool>(), any::<bool>(), any::<bool>(), prop::bool::weighted(0.1), any::<bool>(), prop::bool::weighted(0.15))
            .prop_map(|(generating, user_waiting, send_timeout, draft, grow, reload)| Op::Show { generating, user_waiting, send_timeout, draft, grow, reload }),
        2 => (0u8..7).prop_map(Op::Server),
        4 => (1u64..90_000).prop_map(Op::Wait),
        1 => Just(Op::Restart),
    ]
}

fn server(kind: u8) -> ProbeAnswer {
    match kind {
        0 => user_node(),
        1 => assistant("a2", 400, true),
        2 => assistant("a2", 400, false),
        3 => assistant("a1", 40, true),
        4 => ProbeAnswer::Failed("http_429".into()),
        5 => ProbeAnswer::Failed("timeout".into()),
        _ => ProbeAnswer::Failed("odd_shape".into()),
    }
}

proptest! {
    /// S1–S8, H5, H7: random faults, answers, timings and worker restarts through the
    /// composed machine never type anything (no resubmitted user turn), never exceed one
    /// Retry and two reloads, never act on a snapshot that could not be read except the
    /// S6 view sync (a reload beside a send-timeout card, never a Retry), never act with a
    /// human draft, and write every budgeted command's pending record before it leaves.
    #[test]
    fn recovery_never_resubmits_never_exceeds_its_budgets_and_unknown_never_retries(ops in prop::collection::vec(op(), 1..60)) {
        let mut w = World::new(Shown::frozen("L0"), assistant("a2", 400, true), true);
        let mut loads = 0;
        for op in ops {
            match op {
                Op::Show { generating, user_waiting, send_timeout, draft, grow, reload } => {
                    if reload {
                        loads += 1;
                    }
                    let len = w.shown.assistant_len + if grow { 10 } else { 0 };
                    w.shown = Shown { load: format!("L{loads}"), generating, assistant_id: None, assistant_len: len, user_waiting, send_timeout, draft, markers: Vec::new(), waiting_marker: None };
                    w.show();
                }
                Op::Server(kind) => w.server = server(kind),
                Op::Wait(ms) => {
                    let until = w.now - T0 + ms;
                    w.run(until);
                }
                Op::Restart => w.restart(),
            }
        }
        prop_assert!(w.violations.is_empty(), "{:?}", w.violations);
        prop_assert!(w.count(is_retry) <= 1, "retries: {:?}", w.commands);
        prop_assert!(w.count(is_reload) <= 2, "reloads: {:?}", w.commands);
        prop_assert!(w.count(|c| matches!(c, RecoveryCommand::ReloadPage)) <= 1, "page reloads: {:?}", w.commands);
        prop_assert!(w.durable, "a budgeted command left before its pending record was written");
    }
}
