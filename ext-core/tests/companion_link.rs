//! Transcript and property tests of `CompanionLink` (R: A4, N1, N4 "extension ↔ runtime
//! version agreement").

use expect_test::{expect, Expect};
use ext_core::companion_link::{
    CompanionLink, HerdrConnection, HerdrStatus, Input, LinkState, Output, PortGeneration, RuntimeMessage, MAX_BACKOFF, PROTOCOL_VERSION,
    REQUIRED_CAPABILITIES,
};
use ext_core::Millis;
use proptest::prelude::*;

/// Simulated clock harness: feeds inputs at `now`, jumps to deadlines, prints a trace.
struct Sim {
    now: Millis,
    link: CompanionLink,
    trace: String,
}

impl Sim {
    fn new() -> Self {
        Self { now: 0, link: CompanionLink::new("0.1.0"), trace: String::new() }
    }

    fn feed(&mut self, input: Input) {
        self.trace.push_str(&fold_lists(format!("t={} <- {:?}\n", self.now, input)));
        self.link.handle(self.now, input);
        self.drain();
    }

    /// Jumps to the next deadline and fires the timer there.
    fn advance(&mut self) {
        let Some(deadline) = self.link.next_deadline() else {
            self.trace.push_str("(no deadline)\n");
            return;
        };
        self.now = self.now.max(deadline);
        self.feed(Input::Timer);
    }

    fn drain(&mut self) {
        while let Some(output) = self.link.poll() {
            let shown = match output {
                Output::HudChanged => format!("HudChanged {}", hud_summary(&self.link)),
                other => fold_lists(format!("{other:?}")),
            };
            self.trace.push_str(&format!("    -> {shown}\n"));
        }
    }

    fn check(self, expected: Expect) {
        expected.assert_eq(&self.trace);
    }
}

fn hud_summary(link: &CompanionLink) -> String {
    let view = link.hud();
    format!("[{} {:?} | {} {:?}]", view.companion.key, view.companion.substitutions, view.herdr.key, view.herdr.substitutions)
}

fn herdr_connected() -> HerdrStatus {
    HerdrStatus {
        state: HerdrConnection::Connected,
        protocol: Some(20),
        version: Some("0.8.2".into()),
        socket: "/run/herdr.sock".into(),
        detail: None,
    }
}

/// A runtime's hello answer; one of the current protocol lists every capability (shown as
/// `[…N]` in traces), an older one none.
fn hello_answer(id: &str, protocol: u32) -> RuntimeMessage {
    RuntimeMessage::HelloAnswer {
        id: id.into(),
        runtime_version: "0.1.0".into(),
        protocol,
        compatible: protocol == PROTOCOL_VERSION,
        capabilities: (protocol == PROTOCOL_VERSION).then(all_capabilities),
        herdr: herdr_connected(),
    }
}

fn all_capabilities() -> Vec<String> {
    continuity_protocol::CAPABILITIES.iter().map(|name| (*name).to_owned()).collect()
}

/// Debug text with the long capability lists folded to their length.
fn fold_lists(text: String) -> String {
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(start) = rest.find(['r', 'c']) {
        let (head, tail) = rest.split_at(start);
        out.push_str(head);
        let key = ["requires: [", "capabilities: Some(["].into_iter().find(|key| tail.starts_with(key));
        match (key, tail.find(']')) {
            (Some(key), Some(end)) => {
                let names = tail[key.len()..end].split(", ").filter(|name| !name.is_empty()).count();
                out.push_str(key);
                out.push_str(&format!("…{names}]"));
                rest = &tail[end + 1..];
            }
            _ => {
                out.push_str(&tail[..1]);
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn port(n: u32) -> PortGeneration {
    PortGeneration(n)
}

#[test]
fn start_handshake_then_herdr_state_changes_and_round_trip() {
    let mut sim = Sim::new();
    sim.feed(Input::Start);
    sim.feed(Input::PortOpened { port: port(1) });
    sim.feed(Input::Message { port: port(1), message: hello_answer("hello-1", PROTOCOL_VERSION) });
    sim.feed(Input::Message {
        port: port(1),
        message: RuntimeMessage::HerdrState(HerdrStatus {
            state: HerdrConnection::NotRunning,
            protocol: None,
            version: None,
            socket: "/run/herdr.sock".into(),
            detail: None,
        }),
    });
    sim.feed(Input::ProbeRequested { probe: 7 });
    sim.feed(Input::Message { port: port(1), message: RuntimeMessage::Pong { id: "ping-2".into() } });
    sim.feed(Input::Start);
    sim.check(expect![[r#"
        t=0 <- Start
            -> OpenPort { port: PortGeneration(1) }
            -> HudChanged [companionConnecting [] | herdrUnknown []]
        t=0 <- PortOpened { port: PortGeneration(1) }
            -> Send { port: PortGeneration(1), request: Hello { id: "hello-1", extension_version: "0.1.0", protocol: 2, requires: […24] } }
        t=0 <- Message { port: PortGeneration(1), message: HelloAnswer { id: "hello-1", runtime_version: "0.1.0", protocol: 2, compatible: true, capabilities: Some([…37]), herdr: HerdrStatus { state: Connected, protocol: Some(20), version: Some("0.8.2"), socket: "/run/herdr.sock", detail: None } } }
            -> HudChanged [companionConnected ["0.1.0"] | herdrConnected ["0.8.2", "20"]]
        t=0 <- Message { port: PortGeneration(1), message: HerdrState(HerdrStatus { state: NotRunning, protocol: None, version: None, socket: "/run/herdr.sock", detail: None }) }
            -> HudChanged [companionConnected ["0.1.0"] | herdrNotRunning ["/run/herdr.sock"]]
        t=0 <- ProbeRequested { probe: 7 }
            -> Send { port: PortGeneration(1), request: Ping { id: "ping-2" } }
        t=0 <- Message { port: PortGeneration(1), message: Pong { id: "ping-2" } }
            -> ProbeFinished { probe: 7, outcome: Answered }
        t=0 <- Start
    "#]]);
}

#[test]
fn host_not_installed_retries_with_doubling_backoff_capped_at_five_seconds() {
    let mut sim = Sim::new();
    sim.feed(Input::Start);
    for generation in 1..=6 {
        sim.feed(Input::PortClosed { port: port(generation), error: Some("Specified native messaging host not found.".into()) });
        sim.advance();
    }
    sim.check(expect![[r#"
        t=0 <- Start
            -> OpenPort { port: PortGeneration(1) }
            -> HudChanged [companionConnecting [] | herdrUnknown []]
        t=0 <- PortClosed { port: PortGeneration(1), error: Some("Specified native messaging host not found.") }
            -> HudChanged [companionNotInstalled [] | herdrUnknown []]
        t=500 <- Timer
            -> OpenPort { port: PortGeneration(2) }
            -> HudChanged [companionConnecting [] | herdrUnknown []]
        t=500 <- PortClosed { port: PortGeneration(2), error: Some("Specified native messaging host not found.") }
            -> HudChanged [companionNotInstalled [] | herdrUnknown []]
        t=1500 <- Timer
            -> OpenPort { port: PortGeneration(3) }
            -> HudChanged [companionConnecting [] | herdrUnknown []]
        t=1500 <- PortClosed { port: PortGeneration(3), error: Some("Specified native messaging host not found.") }
            -> HudChanged [companionNotInstalled [] | herdrUnknown []]
        t=3500 <- Timer
            -> OpenPort { port: PortGeneration(4) }
            -> HudChanged [companionConnecting [] | herdrUnknown []]
        t=3500 <- PortClosed { port: PortGeneration(4), error: Some("Specified native messaging host not found.") }
            -> HudChanged [companionNotInstalled [] | herdrUnknown []]
        t=7500 <- Timer
            -> OpenPort { port: PortGeneration(5) }
            -> HudChanged [companionConnecting [] | herdrUnknown []]
        t=7500 <- PortClosed { port: PortGeneration(5), error: Some("Specified native messaging host not found.") }
            -> HudChanged [companionNotInstalled [] | herdrUnknown []]
        t=12500 <- Timer
            -> OpenPort { port: PortGeneration(6) }
            -> HudChanged [companionConnecting [] | herdrUnknown []]
        t=12500 <- PortClosed { port: PortGeneration(6), error: Some("Specified native messaging host not found.") }
            -> HudChanged [companionNotInstalled [] | herdrUnknown []]
        t=17500 <- Timer
            -> OpenPort { port: PortGeneration(7) }
            -> HudChanged [companionConnecting [] | herdrUnknown []]
    "#]]);
}

#[test]
fn successful_hello_resets_backoff_and_runtime_unreachable_goes_offline_with_reason() {
    let mut sim = Sim::new();
    sim.feed(Input::Start);
    sim.feed(Input::PortClosed { port: port(1), error: Some("Native host has exited.".into()) });
    sim.advance();
    sim.feed(Input::PortOpened { port: port(2) });
    sim.feed(Input::Message { port: port(2), message: hello_answer("hello-1", PROTOCOL_VERSION) });
    sim.feed(Input::ProbeRequested { probe: 1 });
    sim.feed(Input::Message {
        port: port(2),
        message: RuntimeMessage::HostError {
            code: continuity_protocol::HostErrorCode::RuntimeUnreachable,
            message: "The companion runtime did not start; see runtime.log.".into(),
        },
    });
    // Chrome reports the host's exit later; it must not change the reason or backoff.
    sim.feed(Input::PortClosed { port: port(2), error: Some("Native host has exited.".into()) });
    sim.advance();
    sim.check(expect![[r#"
        t=0 <- Start
            -> OpenPort { port: PortGeneration(1) }
            -> HudChanged [companionConnecting [] | herdrUnknown []]
        t=0 <- PortClosed { port: PortGeneration(1), error: Some("Native host has exited.") }
            -> HudChanged [companionExited [] | herdrUnknown []]
        t=500 <- Timer
            -> OpenPort { port: PortGeneration(2) }
            -> HudChanged [companionConnecting [] | herdrUnknown []]
        t=500 <- PortOpened { port: PortGeneration(2) }
            -> Send { port: PortGeneration(2), request: Hello { id: "hello-1", extension_version: "0.1.0", protocol: 2, requires: […24] } }
        t=500 <- Message { port: PortGeneration(2), message: HelloAnswer { id: "hello-1", runtime_version: "0.1.0", protocol: 2, compatible: true, capabilities: Some([…37]), herdr: HerdrStatus { state: Connected, protocol: Some(20), version: Some("0.8.2"), socket: "/run/herdr.sock", detail: None } } }
            -> HudChanged [companionConnected ["0.1.0"] | herdrConnected ["0.8.2", "20"]]
        t=500 <- ProbeRequested { probe: 1 }
            -> Send { port: PortGeneration(2), request: Ping { id: "ping-2" } }
        t=500 <- Message { port: PortGeneration(2), message: HostError { code: RuntimeUnreachable, message: "The companion runtime did not start; see runtime.log." } }
            -> ClosePort { port: PortGeneration(2) }
            -> ProbeFinished { probe: 1, outcome: ConnectionLost }
            -> HudChanged [companionRuntimeUnreachable ["The companion runtime did not start; see runtime.log."] | herdrUnknown []]
        t=500 <- PortClosed { port: PortGeneration(2), error: Some("Native host has exited.") }
        t=1000 <- Timer
            -> OpenPort { port: PortGeneration(3) }
            -> HudChanged [companionConnecting [] | herdrUnknown []]
    "#]]);
}

// A runtime that refused to start (a state.db from a newer herdr-companion) used to be
// reported as `runtime_unreachable` and retried on the backoff timer forever, each attempt
// starting the runtime again; the HUD said "Retrying automatically". It waits for the user.
#[test]
fn a_runtime_that_refused_to_start_waits_for_the_user_instead_of_a_timer() {
    let mut sim = Sim::new();
    sim.feed(Input::Start);
    sim.feed(Input::PortOpened { port: port(1) });
    sim.feed(Input::Message {
        port: port(1),
        message: RuntimeMessage::HostError {
            code: continuity_protocol::HostErrorCode::RuntimeRefusedToStart,
            message: "the companion runtime refused to start: state.db has schema version 16".into(),
        },
    });
    sim.feed(Input::PortClosed { port: port(1), error: Some("Native host has exited.".into()) });
    sim.advance();
    sim.feed(Input::RetryNow);
    sim.check(expect![[r#"
        t=0 <- Start
            -> OpenPort { port: PortGeneration(1) }
            -> HudChanged [companionConnecting [] | herdrUnknown []]
        t=0 <- PortOpened { port: PortGeneration(1) }
            -> Send { port: PortGeneration(1), request: Hello { id: "hello-1", extension_version: "0.1.0", protocol: 2, requires: […24] } }
        t=0 <- Message { port: PortGeneration(1), message: HostError { code: RuntimeRefusedToStart, message: "the companion runtime refused to start: state.db has schema version 16" } }
            -> ClosePort { port: PortGeneration(1) }
            -> HudChanged [companionRuntimeWontStart ["the companion runtime refused to start: state.db has schema version 16"] | herdrUnknown []]
        t=0 <- PortClosed { port: PortGeneration(1), error: Some("Native host has exited.") }
        (no deadline)
        t=0 <- RetryNow
            -> OpenPort { port: PortGeneration(2) }
            -> HudChanged [companionConnecting [] | herdrUnknown []]
    "#]]);
}

#[test]
fn unanswered_hello_times_out_closes_and_retries() {
    let mut sim = Sim::new();
    sim.feed(Input::Start);
    sim.feed(Input::PortOpened { port: port(1) });
    sim.advance();
    // A late answer on the closed port is ignored.
    sim.feed(Input::Message { port: port(1), message: hello_answer("hello-1", PROTOCOL_VERSION) });
    sim.check(expect![[r#"
        t=0 <- Start
            -> OpenPort { port: PortGeneration(1) }
            -> HudChanged [companionConnecting [] | herdrUnknown []]
        t=0 <- PortOpened { port: PortGeneration(1) }
            -> Send { port: PortGeneration(1), request: Hello { id: "hello-1", extension_version: "0.1.0", protocol: 2, requires: […24] } }
        t=5000 <- Timer
            -> ClosePort { port: PortGeneration(1) }
            -> HudChanged [companionNoAnswer [] | herdrUnknown []]
        t=5000 <- Message { port: PortGeneration(1), message: HelloAnswer { id: "hello-1", runtime_version: "0.1.0", protocol: 2, compatible: true, capabilities: Some([…37]), herdr: HerdrStatus { state: Connected, protocol: Some(20), version: Some("0.8.2"), socket: "/run/herdr.sock", detail: None } } }
    "#]]);
}

#[test]
fn protocol_mismatch_names_the_side_to_update_and_stops_retrying_until_asked() {
    let mut sim = Sim::new();
    sim.feed(Input::Start);
    sim.feed(Input::PortOpened { port: port(1) });
    sim.feed(Input::Message { port: port(1), message: hello_answer("hello-1", 3) });
    sim.advance();
    sim.feed(Input::ProbeRequested { probe: 3 });
    sim.feed(Input::RetryNow);
    sim.feed(Input::PortOpened { port: port(2) });
    sim.feed(Input::Message { port: port(2), message: hello_answer("hello-2", 1) });
    sim.check(expect![[r#"
        t=0 <- Start
            -> OpenPort { port: PortGeneration(1) }
            -> HudChanged [companionConnecting [] | herdrUnknown []]
        t=0 <- PortOpened { port: PortGeneration(1) }
            -> Send { port: PortGeneration(1), request: Hello { id: "hello-1", extension_version: "0.1.0", protocol: 2, requires: […24] } }
        t=0 <- Message { port: PortGeneration(1), message: HelloAnswer { id: "hello-1", runtime_version: "0.1.0", protocol: 3, compatible: false, capabilities: None, herdr: HerdrStatus { state: Connected, protocol: Some(20), version: Some("0.8.2"), socket: "/run/herdr.sock", detail: None } } }
            -> ClosePort { port: PortGeneration(1) }
            -> HudChanged [hudVersionMismatchExtension ["2", "0.1.0", "3"] | herdrUnknown []]
        (no deadline)
        t=0 <- ProbeRequested { probe: 3 }
            -> ProbeFinished { probe: 3, outcome: CompanionOffline }
        t=0 <- RetryNow
            -> OpenPort { port: PortGeneration(2) }
            -> HudChanged [companionConnecting [] | herdrUnknown []]
        t=0 <- PortOpened { port: PortGeneration(2) }
            -> Send { port: PortGeneration(2), request: Hello { id: "hello-2", extension_version: "0.1.0", protocol: 2, requires: […24] } }
        t=0 <- Message { port: PortGeneration(2), message: HelloAnswer { id: "hello-2", runtime_version: "0.1.0", protocol: 1, compatible: false, capabilities: None, herdr: HerdrStatus { state: Connected, protocol: Some(20), version: Some("0.8.2"), socket: "/run/herdr.sock", detail: None } } }
            -> ClosePort { port: PortGeneration(2) }
            -> HudChanged [hudVersionMismatch ["0.1.0", "1", "2"] | herdrUnknown []]
    "#]]);
}

#[test]
fn probe_without_answer_times_out_once() {
    let mut sim = Sim::new();
    sim.feed(Input::Start);
    sim.feed(Input::PortOpened { port: port(1) });
    sim.feed(Input::Message { port: port(1), message: hello_answer("hello-1", PROTOCOL_VERSION) });
    sim.now = 100;
    sim.feed(Input::ProbeRequested { probe: 9 });
    sim.advance();
    sim.feed(Input::Message { port: port(1), message: RuntimeMessage::Pong { id: "ping-2".into() } });
    sim.advance();
    let trace_tail: String = sim.trace.lines().skip(7).collect::<Vec<_>>().join("\n");
    expect![[r#"
        t=100 <- ProbeRequested { probe: 9 }
            -> Send { port: PortGeneration(1), request: Ping { id: "ping-2" } }
        t=5100 <- Timer
            -> ProbeFinished { probe: 9, outcome: TimedOut }
        t=5100 <- Message { port: PortGeneration(1), message: Pong { id: "ping-2" } }
        (no deadline)"#]]
    .assert_eq(&trace_tail);
}

/// Operations of the property test: what the environment (Chrome, the host, the user,
/// the clock) can do to the link, in any order.
#[derive(Debug, Clone)]
enum Op {
    Start,
    RetryNow,
    /// Chrome reports the port as opened (only when one was asked for).
    OpenSucceeds,
    /// Chrome closes the current port with an error text.
    PortDrops(u8),
    /// An event about an old port generation.
    StaleClose(u32),
    HelloOk,
    HelloMismatch(u32),
    HostUnreachable,
    HerdrNotRunning,
    Probe(u32),
    Pong,
    Advance(u16),
    AdvanceToDeadline,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::Start),
        Just(Op::RetryNow),
        Just(Op::OpenSucceeds),
        (0u8..4).prop_map(Op::PortDrops),
        (0u32..5).prop_map(Op::StaleClose),
        Just(Op::HelloOk),
        (0u32..4).prop_map(Op::HelloMismatch),
        Just(Op::HostUnreachable),
        Just(Op::HerdrNotRunning),
        (0u32..1000).prop_map(Op::Probe),
        Just(Op::Pong),
        (0u16..7000).prop_map(Op::Advance),
        Just(Op::AdvanceToDeadline),
    ]
}

const PORT_ERRORS: [&str; 4] = [
    "Specified native messaging host not found.",
    "Access to the specified native messaging host is forbidden.",
    "Native host has exited.",
    "Error when communicating with the native messaging host.",
];

proptest! {
    /// Random environments never make the link hold two ports at once, never wait
    /// longer than the cap before retrying, and finish every probe exactly once.
    #[test]
    fn one_port_at_a_time_backoff_capped_probes_finish_once(ops in prop::collection::vec(op(), 1..80)) {
        let mut link = CompanionLink::new("0.1.0");
        let mut now: Millis = 0;
        // The port the environment believes open (or being opened) and whether Chrome
        // has confirmed it.
        let mut open: Option<(PortGeneration, bool)> = None;
        let mut last_hello_id: Option<String> = None;
        let mut last_ping_id: Option<String> = None;
        let mut probes_open: Vec<u32> = Vec::new();
        for op in ops {
            let current = open.map(|(generation, _)| generation);
            let input = match op {
                Op::Start => Some(Input::Start),
                Op::RetryNow => Some(Input::RetryNow),
                Op::OpenSucceeds => match open {
                    Some((generation, false)) => {
                        open = Some((generation, true));
                        Some(Input::PortOpened { port: generation })
                    }
                    _ => None,
                },
                Op::PortDrops(which) => current.map(|generation| {
                    open = None;
                    Input::PortClosed {
                        port: generation,
                        error: Some(PORT_ERRORS[usize::from(which) % PORT_ERRORS.len()].into()),
                    }
                }),
                Op::StaleClose(n) => Some(Input::PortClosed {
                    port: PortGeneration(current.map_or(n, |g| g.0.saturating_sub(n + 1))),
                    error: None,
                }).filter(|input| !matches!(input, Input::PortClosed { port, .. } if Some(*port) == current)),
                Op::HelloOk | Op::HelloMismatch(_) => match (current, last_hello_id.clone()) {
                    (Some(generation), Some(id)) => Some(Input::Message {
                        port: generation,
                        message: hello_answer(&id, match op { Op::HelloMismatch(p) => if p == PROTOCOL_VERSION { 3 } else { p }, _ => PROTOCOL_VERSION }),
                    }),
                    _ => None,
                },
                Op::HostUnreachable => current.map(|generation| Input::Message {
                    port: generation,
                    message: RuntimeMessage::HostError { code: continuity_protocol::HostErrorCode::RuntimeUnreachable, message: "down".into() },
                }),
                Op::HerdrNotRunning => current.map(|generation| Input::Message {
                    port: generation,
                    message: RuntimeMessage::HerdrState(HerdrStatus {
                        state: HerdrConnection::NotRunning, protocol: None, version: None,
                        socket: "/s".into(), detail: None,
                    }),
                }),
                Op::Probe(probe) => {
                    if probes_open.contains(&probe) { None } else {
                        probes_open.push(probe);
                        Some(Input::ProbeRequested { probe })
                    }
                }
                Op::Pong => match (current, last_ping_id.clone()) {
                    (Some(generation), Some(id)) => Some(Input::Message { port: generation, message: RuntimeMessage::Pong { id } }),
                    _ => None,
                },
                Op::Advance(ms) => { now += Millis::from(ms); Some(Input::Timer) }
                Op::AdvanceToDeadline => link.next_deadline().map(|deadline| { now = now.max(deadline); Input::Timer }),
            };
            let Some(input) = input else { continue };
            link.handle(now, input);
            while let Some(output) = link.poll() {
                match output {
                    Output::OpenPort { port } => {
                        prop_assert!(open.is_none(), "OpenPort {port:?} while {open:?} is open");
                        open = Some((port, false));
                    }
                    Output::ClosePort { port } => {
                        prop_assert_eq!(Some(port), open.map(|(generation, _)| generation));
                        open = None;
                    }
                    Output::Send { port, request } => {
                        prop_assert_eq!(Some((port, true)), open, "sent on a port that is not open");
                        match request {
                            ext_core::companion_link::Request::Hello { id, .. } => last_hello_id = Some(id),
                            ext_core::companion_link::Request::Ping { id } => last_ping_id = Some(id),
                        }
                    }
                    Output::ProbeFinished { probe, .. } => {
                        let position = probes_open.iter().position(|p| *p == probe);
                        prop_assert!(position.is_some(), "probe {probe} finished twice or never asked");
                        if let Some(position) = position { probes_open.remove(position); }
                    }
                    Output::HudChanged => {}
                }
            }
            if let LinkState::Disconnected { retry_at, .. } = link.state() {
                prop_assert!(*retry_at <= now + MAX_BACKOFF, "retry at {retry_at} is more than the cap after {now}");
            }
            prop_assert!(link.current_backoff() <= MAX_BACKOFF);
        }
        // Every probe still open has a deadline pending, so none is lost.
        if !probes_open.is_empty() {
            prop_assert!(link.next_deadline().is_some());
        }
    }
}

/// Issue 26 Found 8 (N4): a mixed install is named at hello, not call by call. A runtime of
/// protocol 1 sends no `capabilities` and is recognised as the older side; a runtime of our
/// protocol that lacks a method we call (or lists none) is refused with the names it lacks.
/// Failed before: the extension spoke protocol 1 like the runtime whose wire had changed and
/// went Connected; a missing method showed as `unknown_method` on each call.
#[test]
fn an_older_runtime_is_named_at_hello_with_what_to_update() {
    let answer = |protocol: u32, capabilities: Option<Vec<String>>| RuntimeMessage::HelloAnswer {
        id: "hello-1".into(),
        runtime_version: "0.1.0".into(),
        protocol,
        compatible: true,
        capabilities,
        herdr: herdr_connected(),
    };
    let lacking: Vec<String> = all_capabilities().into_iter().filter(|name| name != "profiles.get" && name != "bridge.decide").collect();
    let cases = [
        ("protocol 1, no capabilities", answer(1, None)),
        ("our protocol, no capabilities", answer(PROTOCOL_VERSION, None)),
        ("our protocol, two methods missing", answer(PROTOCOL_VERSION, Some(lacking))),
        ("our protocol, everything", answer(PROTOCOL_VERSION, Some(all_capabilities()))),
        ("a newer protocol", answer(PROTOCOL_VERSION + 1, Some(all_capabilities()))),
    ];
    let mut trace = String::new();
    for (what, message) in cases {
        let mut link = CompanionLink::new("0.2.0");
        link.handle(0, Input::Start);
        link.handle(0, Input::PortOpened { port: port(1) });
        link.handle(0, Input::Message { port: port(1), message });
        let view = link.hud();
        let connected = matches!(link.state(), LinkState::Connected { .. });
        let names = match view.companion.key {
            "hudVersionMismatchMissing" => view.companion.substitutions.get(1).map_or(0, |list| list.split(", ").count()),
            _ => 0,
        };
        let shown: Vec<&str> = view.companion.substitutions.iter().map(String::as_str).filter(|text| text.len() < 40).collect();
        trace.push_str(&format!("{what}: connected={connected} {} {shown:?} missing={names}\n", view.companion.key));
    }
    expect![[r#"
        protocol 1, no capabilities: connected=false hudVersionMismatch ["0.1.0", "1", "2"] missing=0
        our protocol, no capabilities: connected=false hudVersionMismatchMissing ["0.1.0"] missing=24
        our protocol, two methods missing: connected=false hudVersionMismatchMissing ["0.1.0", "bridge.decide, profiles.get"] missing=2
        our protocol, everything: connected=true companionConnected ["0.1.0"] missing=0
        a newer protocol: connected=false hudVersionMismatchExtension ["2", "0.1.0", "3"] missing=0
    "#]]
    .assert_eq(&trace);
    assert!(
        REQUIRED_CAPABILITIES.iter().all(|name| continuity_protocol::CAPABILITIES.contains(name)),
        "every needed capability is one the protocol names"
    );
    assert!(REQUIRED_CAPABILITIES.windows(2).all(|pair| pair[0] < pair[1]), "sorted and unique");
}
