//! Settle tracking (SPEC P1, P7, P8, P9).

use expect_test::{expect, Expect};
use ext_core::settle_tracker::{
    AgentSnapshot, PaneEventKind, SettleInput, SettleOutput, SettleTracker, SettledStatus, StreamEvent, WakeId,
};
use proptest::prelude::*;

fn ev(boot: &str, seq: u64, ws: &str, pane: &str, kind: PaneEventKind) -> SettleInput {
    SettleInput::Event(StreamEvent { boot_id: boot.into(), seq, workspace_id: ws.into(), pane_id: pane.into(), kind, at: seq * 1000 })
}

const W: PaneEventKind = PaneEventKind::Working;
const IDLE: PaneEventKind = PaneEventKind::Settled(SettledStatus::Idle);
const DONE: PaneEventKind = PaneEventKind::Settled(SettledStatus::Done);
const BLOCKED: PaneEventKind = PaneEventKind::Settled(SettledStatus::Blocked);
const GONE: PaneEventKind = PaneEventKind::PaneRemoved;

fn describe(input: &SettleInput) -> String {
    match input {
        SettleInput::LogIdentity { log_id, reset } => format!("log {log_id:?} reset={reset}"),
        SettleInput::StreamHello { boot_id, last_seq, agents } => {
            let mut line = match last_seq {
                Some(last) => format!("hello {boot_id} last_seq={last}"),
                None => format!("hello {boot_id}"),
            };
            if let Some(agents) = agents {
                let panes: Vec<String> = agents
                    .iter()
                    .map(|a| format!("{}/{}={}", a.workspace_id, a.pane_id, a.settled.map_or("working".into(), |s| format!("{s:?}"))))
                    .collect();
                line.push_str(&format!(" agents=[{}]", panes.join(" ")));
            }
            line
        }
        SettleInput::StreamPosition { seq } => format!("position #{seq}"),
        SettleInput::Reconnected => "reconnected".into(),
        SettleInput::Event(e) => format!("{}#{} {}/{} {:?}", e.boot_id, e.seq, e.workspace_id, e.pane_id, e.kind),
    }
}

fn describe_out(out: &SettleOutput) -> String {
    match out {
        SettleOutput::ScopeWorking { workspace_id, .. } => format!("WORKING {workspace_id}"),
        SettleOutput::PartialSettle { workspace_id, pane_id, still_working } => {
            format!("partial {workspace_id}/{pane_id} ({still_working} still working)")
        }
        SettleOutput::ScopeSettled { workspace_id, wake_id, outcome, .. } => {
            format!("WAKE {workspace_id} {outcome:?} id={}#{}", wake_id.boot_id, wake_id.seq)
        }
        other => format!("{other:?}"),
    }
}

/// Feeds the steps (a `None` step is a service-worker restart: snapshot → restore).
fn check(steps: Vec<Option<SettleInput>>, expect: Expect) {
    let mut tracker = SettleTracker::new();
    let mut trace = String::new();
    for step in steps {
        match step {
            None => {
                let json = serde_json::to_string(&tracker).expect("serializes");
                tracker = ext_core::json_read::from_str(&json).expect("restores");
                trace.push_str("-- service worker restarted --\n");
            }
            Some(input) => {
                trace.push_str(&describe(&input));
                trace.push('\n');
                tracker.handle(0, input);
                while let Some(out) = tracker.poll() {
                    trace.push_str(&format!("  => {}\n", describe_out(&out)));
                }
            }
        }
    }
    expect.assert_eq(&trace);
}

#[test]
fn a_workspace_settles_only_when_no_pane_works_and_wakes_once() {
    // P1 (panes merge into one scope), P7 (partial settle), P8 (one wake per transition).
    check(
        vec![
            Some(SettleInput::StreamHello { boot_id: "b1".into(), last_seq: None, agents: None }),
            Some(ev("b1", 1, "w1", "w1:p1", W)),
            Some(ev("b1", 2, "w1", "w1:p2", W)),
            Some(ev("b1", 3, "w1", "w1:p1", DONE)),
            Some(ev("b1", 4, "w1", "w1:p2", IDLE)),
            Some(ev("b1", 5, "w1", "w1:p2", IDLE)),
            Some(ev("b1", 6, "w1", "w1:p1", W)),
            Some(ev("b1", 7, "w1", "w1:p1", BLOCKED)),
            Some(ev("b1", 8, "w2", "w2:p1", W)),
            Some(ev("b1", 9, "w2", "w2:p1", GONE)),
        ],
        expect![[r#"
            hello b1
              => GenerationChanged { boot_id: "b1" }
            b1#1 w1/w1:p1 Working
              => WORKING w1
            b1#2 w1/w1:p2 Working
            b1#3 w1/w1:p1 Settled(Done)
              => partial w1/w1:p1 (1 still working)
            b1#4 w1/w1:p2 Settled(Idle)
              => WAKE w1 Done id=b1#4
            b1#5 w1/w1:p2 Settled(Idle)
            b1#6 w1/w1:p1 Working
              => WORKING w1
            b1#7 w1/w1:p1 Settled(Blocked)
              => WAKE w1 Blocked id=b1#7
            b1#8 w2/w2:p1 Working
              => WORKING w2
            b1#9 w2/w2:p1 PaneRemoved
              => WAKE w2 PaneGone id=b1#9
        "#]],
    );
}

#[test]
fn duplicates_and_replays_after_reconnect_or_restart_never_wake_twice() {
    // P9: the offline settle is replayed once; the (boot_id, seq) high-water mark survives a
    // service-worker restart.
    check(
        vec![
            Some(SettleInput::StreamHello { boot_id: "b1".into(), last_seq: None, agents: None }),
            Some(ev("b1", 1, "w1", "w1:p1", W)),
            Some(ev("b1", 1, "w1", "w1:p1", W)),
            Some(SettleInput::Reconnected),
            Some(SettleInput::StreamHello { boot_id: "b1".into(), last_seq: None, agents: None }),
            // While offline the pane settled; the replay brings it once.
            Some(ev("b1", 2, "w1", "w1:p1", DONE)),
            None,
            Some(SettleInput::Reconnected),
            Some(SettleInput::StreamHello { boot_id: "b1".into(), last_seq: None, agents: None }),
            // The runtime replays more than needed: all of it is already applied.
            Some(ev("b1", 1, "w1", "w1:p1", W)),
            Some(ev("b1", 2, "w1", "w1:p1", DONE)),
        ],
        expect![[r#"
            hello b1
              => GenerationChanged { boot_id: "b1" }
            b1#1 w1/w1:p1 Working
              => WORKING w1
            b1#1 w1/w1:p1 Working
            reconnected
              => Resubscribe { resume: Some(ResumePoint { boot_id: "b1", after_seq: 1, log_id: None }) }
            hello b1
            b1#2 w1/w1:p1 Settled(Done)
              => WAKE w1 Done id=b1#2
            -- service worker restarted --
            reconnected
              => Resubscribe { resume: Some(ResumePoint { boot_id: "b1", after_seq: 2, log_id: None }) }
            hello b1
            b1#1 w1/w1:p1 Working
            b1#2 w1/w1:p1 Settled(Done)
        "#]],
    );
}

#[test]
fn events_from_an_old_runtime_generation_are_rejected() {
    // P9: after a runtime restart (new boot_id, seq continues), a replayed event of the old
    // start is stale: it cannot wake; the settle the new start reproduces wakes once; a late
    // hello of the old start is rejected.
    check(
        vec![
            Some(SettleInput::StreamHello { boot_id: "b1".into(), last_seq: None, agents: None }),
            Some(ev("b1", 41, "w1", "w1:p1", W)),
            Some(SettleInput::StreamHello { boot_id: "b2".into(), last_seq: None, agents: None }),
            Some(ev("b1", 42, "w1", "w1:p1", IDLE)),
            Some(ev("b2", 43, "w1", "w1:p1", IDLE)),
            Some(SettleInput::StreamHello { boot_id: "b1".into(), last_seq: None, agents: None }),
            Some(ev("b2", 44, "w1", "w1:p1", W)),
            Some(SettleInput::Reconnected),
        ],
        expect![[r#"
            hello b1
              => GenerationChanged { boot_id: "b1" }
            b1#41 w1/w1:p1 Working
              => WORKING w1
            hello b2
              => GenerationChanged { boot_id: "b2" }
            b1#42 w1/w1:p1 Settled(Idle)
              => StaleGenerationRejected { boot_id: "b1" }
            b2#43 w1/w1:p1 Settled(Idle)
              => WAKE w1 Idle id=b2#43
            hello b1
              => StaleGenerationRejected { boot_id: "b1" }
            b2#44 w1/w1:p1 Working
              => WORKING w1
            reconnected
              => Resubscribe { resume: Some(ResumePoint { boot_id: "b2", after_seq: 44, log_id: None }) }
        "#]],
    );
}

#[test]
fn replayed_history_of_an_old_generation_wakes_once_and_a_zombie_source_is_rejected() {
    // P9: while the extension was offline the previous runtime start (b1) stored p2 working
    // and then both panes settling, and the runtime restarted (b2). The replay (seq <=
    // hello.last_seq) is history: the missed settle wakes once. An event of b1 *after* the
    // replay horizon claims to be live from a retired generation: an old source, rejected.
    check(
        vec![
            Some(SettleInput::StreamHello { boot_id: "b1".into(), last_seq: Some(40), agents: None }),
            Some(ev("b1", 41, "w1", "w1:p1", W)),
            Some(SettleInput::Reconnected),
            Some(SettleInput::StreamHello { boot_id: "b2".into(), last_seq: Some(44), agents: None }),
            Some(ev("b1", 42, "w1", "w1:p2", W)),
            Some(ev("b1", 43, "w1", "w1:p1", IDLE)),
            Some(ev("b1", 44, "w1", "w1:p2", DONE)),
            Some(ev("b1", 45, "w1", "w1:p1", W)),
            Some(ev("b2", 46, "w1", "w1:p1", W)),
        ],
        expect![[r#"
            hello b1 last_seq=40
              => GenerationChanged { boot_id: "b1" }
            b1#41 w1/w1:p1 Working
              => WORKING w1
            reconnected
              => Resubscribe { resume: Some(ResumePoint { boot_id: "b1", after_seq: 41, log_id: None }) }
            hello b2 last_seq=44
              => GenerationChanged { boot_id: "b2" }
            b1#42 w1/w1:p2 Working
            b1#43 w1/w1:p1 Settled(Idle)
              => partial w1/w1:p1 (1 still working)
            b1#44 w1/w1:p2 Settled(Done)
              => WAKE w1 Done id=b1#44
            b1#45 w1/w1:p1 Working
              => StaleGenerationRejected { boot_id: "b1" }
            b2#46 w1/w1:p1 Working
              => WORKING w1
        "#]],
    );
}

fn hello_with(boot: &str, last_seq: u64, agents: &[(&str, &str, Option<SettledStatus>)]) -> SettleInput {
    SettleInput::StreamHello {
        boot_id: boot.into(),
        last_seq: Some(last_seq),
        agents: Some(
            agents
                .iter()
                .map(|(ws, pane, settled)| AgentSnapshot { workspace_id: (*ws).into(), pane_id: (*pane).into(), settled: *settled })
                .collect(),
        ),
    }
}

#[test]
fn a_settle_lost_to_a_replay_gap_wakes_once_from_the_hello_snapshot() {
    // P9 "nothing is lost: not a wake": w1 and w2 were working; the extension was offline so
    // long that the runtime's bounded log (newest 10 000) no longer holds w1's settle. The
    // replay starts after the gap; the hello's agent snapshot shows w1 idle → one wake once
    // the replay is applied; w2 is still working in the snapshot → no wake until its settle.
    check(
        vec![
            Some(SettleInput::StreamHello { boot_id: "b1".into(), last_seq: None, agents: None }),
            Some(ev("b1", 1, "w1", "w1:p1", W)),
            Some(ev("b1", 2, "w2", "w2:p1", W)),
            Some(SettleInput::Reconnected),
            Some(hello_with("b1", 20_500, &[("w1", "w1:p1", Some(SettledStatus::Idle)), ("w2", "w2:p1", None)])),
            Some(ev("b1", 10_501, "w3", "w3:p1", W)),
            Some(ev("b1", 10_502, "w3", "w3:p1", DONE)),
            Some(SettleInput::StreamPosition { seq: 20_500 }),
            // A late copy of w1's settle (live) finds it settled: no second wake.
            Some(ev("b1", 20_501, "w1", "w1:p1", IDLE)),
            Some(ev("b1", 20_502, "w2", "w2:p1", DONE)),
        ],
        expect![[r#"
            hello b1
              => GenerationChanged { boot_id: "b1" }
            b1#1 w1/w1:p1 Working
              => WORKING w1
            b1#2 w2/w2:p1 Working
              => WORKING w2
            reconnected
              => Resubscribe { resume: Some(ResumePoint { boot_id: "b1", after_seq: 2, log_id: None }) }
            hello b1 last_seq=20500 agents=[w1/w1:p1=Idle w2/w2:p1=working]
            b1#10501 w3/w3:p1 Working
              => WORKING w3
            b1#10502 w3/w3:p1 Settled(Done)
              => WAKE w3 Done id=b1#10502
            position #20500
              => WAKE w1 Idle id=b1#20500
            b1#20501 w1/w1:p1 Settled(Idle)
            b1#20502 w2/w2:p1 Settled(Done)
              => WAKE w2 Done id=b1#20502
        "#]],
    );
}

#[test]
fn a_replay_that_lost_a_panes_working_event_never_wakes_on_a_partial_settle() {
    // Found by continuity_props with retention overflow (P7): w1:p2 started working inside
    // the gap the runtime no longer holds; the replay then shows w1:p1 settling. The hello's
    // snapshot (the truth at the end of the replay) says p2 works: not a full settle. And a
    // pane the snapshot shows working that the replay never did makes its workspace working,
    // so its later settle wakes (the mirror case of a lost settle).
    check(
        vec![
            Some(SettleInput::StreamHello { boot_id: "b1".into(), last_seq: None, agents: None }),
            Some(ev("b1", 1, "w1", "w1:p1", W)),
            Some(SettleInput::Reconnected),
            Some(hello_with("b1", 900, &[("w1", "w1:p1", Some(SettledStatus::Idle)), ("w1", "w1:p2", None), ("w2", "w2:p1", None)])),
            Some(ev("b1", 899, "w1", "w1:p1", IDLE)),
            Some(SettleInput::StreamPosition { seq: 900 }),
            Some(ev("b1", 901, "w1", "w1:p2", DONE)),
            Some(ev("b1", 902, "w2", "w2:p1", DONE)),
        ],
        expect![[r#"
            hello b1
              => GenerationChanged { boot_id: "b1" }
            b1#1 w1/w1:p1 Working
              => WORKING w1
            reconnected
              => Resubscribe { resume: Some(ResumePoint { boot_id: "b1", after_seq: 1, log_id: None }) }
            hello b1 last_seq=900 agents=[w1/w1:p1=Idle w1/w1:p2=working w2/w2:p1=working]
            b1#899 w1/w1:p1 Settled(Idle)
              => partial w1/w1:p1 (1 still working)
            position #900
              => WORKING w2
            b1#901 w1/w1:p2 Settled(Done)
              => WAKE w1 Done id=b1#901
            b1#902 w2/w2:p1 Settled(Done)
              => WAKE w2 Done id=b1#902
        "#]],
    );
}

#[test]
fn a_snapshot_that_still_shows_work_or_a_replay_that_holds_the_settle_never_adds_a_wake() {
    // P8/P9: the snapshot only settles what the replay left working and nothing works on.
    check(
        vec![
            Some(SettleInput::StreamHello { boot_id: "b1".into(), last_seq: None, agents: None }),
            Some(ev("b1", 1, "w1", "w1:p1", W)),
            Some(ev("b1", 2, "w2", "w2:p1", W)),
            Some(ev("b1", 3, "w2", "w2:p2", W)),
            Some(SettleInput::Reconnected),
            // w1: the replay holds its settle → that one wake only. w2: one pane still works
            // in the snapshot → no wake, even though the other one settled.
            Some(hello_with(
                "b1",
                9,
                &[("w1", "w1:p1", Some(SettledStatus::Done)), ("w2", "w2:p1", Some(SettledStatus::Idle)), ("w2", "w2:p2", None)],
            )),
            Some(ev("b1", 8, "w1", "w1:p1", DONE)),
            Some(ev("b1", 9, "w2", "w2:p1", IDLE)),
            Some(SettleInput::StreamPosition { seq: 10 }),
        ],
        expect![[r#"
            hello b1
              => GenerationChanged { boot_id: "b1" }
            b1#1 w1/w1:p1 Working
              => WORKING w1
            b1#2 w2/w2:p1 Working
              => WORKING w2
            b1#3 w2/w2:p2 Working
            reconnected
              => Resubscribe { resume: Some(ResumePoint { boot_id: "b1", after_seq: 3, log_id: None }) }
            hello b1 last_seq=9 agents=[w1/w1:p1=Done w2/w2:p1=Idle w2/w2:p2=working]
            b1#8 w1/w1:p1 Settled(Done)
              => WAKE w1 Done id=b1#8
            b1#9 w2/w2:p1 Settled(Idle)
              => partial w2/w2:p1 (1 still working)
            position #10
        "#]],
    );
}

#[test]
fn the_snapshot_is_compared_when_the_replay_is_over_and_never_without_one() {
    // P9: the replay may end on an event the tracker never reads; the first live event ends
    // it too (compared before that event is applied). A mark already at `last_seq` compares
    // at once. A runtime without `agents` gets no comparison (fail closed), and a gone pane
    // settles as PaneGone.
    check(
        vec![
            Some(SettleInput::StreamHello { boot_id: "b1".into(), last_seq: None, agents: None }),
            Some(ev("b1", 1, "w1", "w1:p1", W)),
            Some(ev("b1", 2, "w2", "w2:p1", W)),
            Some(SettleInput::Reconnected),
            Some(SettleInput::StreamHello { boot_id: "b1".into(), last_seq: Some(50), agents: None }),
            Some(SettleInput::StreamPosition { seq: 50 }),
            Some(SettleInput::Reconnected),
            // The live event #61 ends a replay whose last stored event (#60) was not a pane event.
            Some(hello_with("b2", 60, &[("w2", "w2:p1", None)])),
            Some(ev("b2", 61, "w1", "w1:p1", W)),
            None,
            Some(SettleInput::Reconnected),
            // Nothing to replay: compared at the hello. w2's pane is gone from the snapshot.
            Some(hello_with("b2", 61, &[("w1", "w1:p1", None)])),
        ],
        expect![[r#"
            hello b1
              => GenerationChanged { boot_id: "b1" }
            b1#1 w1/w1:p1 Working
              => WORKING w1
            b1#2 w2/w2:p1 Working
              => WORKING w2
            reconnected
              => Resubscribe { resume: Some(ResumePoint { boot_id: "b1", after_seq: 2, log_id: None }) }
            hello b1 last_seq=50
            position #50
            reconnected
              => Resubscribe { resume: Some(ResumePoint { boot_id: "b1", after_seq: 2, log_id: None }) }
            hello b2 last_seq=60 agents=[w2/w2:p1=working]
              => GenerationChanged { boot_id: "b2" }
            b2#61 w1/w1:p1 Working
              => WAKE w1 PaneGone id=b2#60
              => WORKING w1
            -- service worker restarted --
            reconnected
              => Resubscribe { resume: Some(ResumePoint { boot_id: "b2", after_seq: 61, log_id: None }) }
            hello b2 last_seq=61 agents=[w1/w1:p1=working]
              => WAKE w2 PaneGone id=b2#61
        "#]],
    );
}

/// The truth: a sequence of pane events of one runtime generation, as the runtime applied them.
fn timeline() -> impl Strategy<Value = Vec<(u8, u8, PaneEventKind)>> {
    let kind = prop_oneof![3 => Just(W), 2 => Just(IDLE), 1 => Just(DONE), 1 => Just(BLOCKED), 1 => Just(GONE)];
    proptest::collection::vec((0u8..2, 0u8..3, kind), 1..40)
}

/// Reference model: the wakes the in-order, exactly-once application of `events` gives.
fn reference_wakes(events: &[(u8, u8, PaneEventKind)]) -> Vec<u64> {
    use std::collections::BTreeMap;
    let mut panes: BTreeMap<(u8, u8), bool> = BTreeMap::new();
    let mut working: BTreeMap<u8, bool> = BTreeMap::new();
    let mut wakes = vec![];
    for (i, (ws, pane, kind)) in events.iter().enumerate() {
        match kind {
            PaneEventKind::Working => {
                panes.insert((*ws, *pane), true);
            }
            PaneEventKind::Settled(_) => {
                panes.insert((*ws, *pane), false);
            }
            PaneEventKind::PaneRemoved => {
                panes.remove(&(*ws, *pane));
            }
        }
        let any = panes.iter().any(|((w, _), on)| w == ws && *on);
        let was = working.get(ws).copied().unwrap_or(false);
        if was && !any {
            wakes.push(i as u64 + 1);
        }
        working.insert(*ws, any);
    }
    wakes
}

#[derive(Debug, Clone)]
enum Delivery {
    /// Deliver the next undelivered event.
    Next,
    /// Deliver again an event from `back` positions earlier (a duplicate / late copy).
    Again(usize),
    /// Connection lost: reconnect and replay from `back` events before the last delivered.
    Replay(usize),
    /// Service-worker restart.
    Restart,
}

fn deliveries() -> impl Strategy<Value = Vec<Delivery>> {
    let d = prop_oneof![
        6 => Just(Delivery::Next),
        2 => (0usize..6).prop_map(Delivery::Again),
        1 => (0usize..6).prop_map(Delivery::Replay),
        1 => Just(Delivery::Restart),
    ];
    proptest::collection::vec(d, 0..120)
}

proptest! {
    /// P8/P9: whatever duplicates, late copies, replays and restarts happen on the way, the
    /// wakes are exactly those of the true timeline: same ids, once each, none for a
    /// partial settle.
    #[test]
    fn wakes_match_the_true_timeline_despite_duplicates_replays_and_restarts(
        events in timeline(), plan in deliveries(),
    ) {
        let input = |i: usize| {
            let (ws, pane, kind) = events[i];
            ev("b1", i as u64 + 1, &format!("w{ws}"), &format!("w{ws}:p{pane}"), kind)
        };
        let mut tracker = SettleTracker::new();
        tracker.handle(0, SettleInput::StreamHello { boot_id: "b1".into(), last_seq: None, agents: None });
        let mut next = 0usize;
        let mut wakes: Vec<WakeId> = vec![];
        let mut feed = |tracker: &mut SettleTracker, input: SettleInput| {
            tracker.handle(0, input);
            while let Some(out) = tracker.poll() {
                if let SettleOutput::ScopeSettled { wake_id, .. } = out { wakes.push(wake_id); }
            }
        };
        // The plan, then drain the rest in order (a stream eventually delivers everything).
        for step in plan.into_iter().chain(std::iter::repeat_n(Delivery::Next, events.len())) {
            match step {
                Delivery::Next if next < events.len() => { feed(&mut tracker, input(next)); next += 1; }
                Delivery::Next => {}
                Delivery::Again(back) if next > back => feed(&mut tracker, input(next - 1 - back)),
                Delivery::Again(_) => {}
                Delivery::Replay(back) => {
                    feed(&mut tracker, SettleInput::Reconnected);
                    feed(&mut tracker, SettleInput::StreamHello { boot_id: "b1".into(), last_seq: None, agents: None });
                    let from = next.saturating_sub(back);
                    for i in from..next { feed(&mut tracker, input(i)); }
                }
                Delivery::Restart => {
                    let json = serde_json::to_string(&tracker).expect("serializes");
                    tracker = ext_core::json_read::from_str(&json).expect("restores");
                }
            }
        }
        let got: Vec<u64> = wakes.iter().map(|w| w.seq).collect();
        prop_assert_eq!(got, reference_wakes(&events));
    }

    /// P8 under arbitrary reordering (a misbehaving stream): never two wakes with one id,
    /// and for each workspace, wakes and working signals alternate (no wake without a
    /// working phase before it).
    #[test]
    fn arbitrary_reorders_never_give_two_wakes_for_one_settle(
        events in timeline(), order in proptest::collection::vec(0usize..40, 0..100),
    ) {
        let mut tracker = SettleTracker::new();
        tracker.handle(0, SettleInput::StreamHello { boot_id: "b1".into(), last_seq: None, agents: None });
        let mut ids = std::collections::BTreeSet::new();
        let mut phase: std::collections::BTreeMap<String, bool> = Default::default();
        for i in order.into_iter().filter(|i| *i < events.len()) {
            let (ws, pane, kind) = events[i];
            tracker.handle(0, ev("b1", i as u64 + 1, &format!("w{ws}"), &format!("w{ws}:p{pane}"), kind));
            while let Some(out) = tracker.poll() {
                match out {
                    SettleOutput::ScopeWorking { workspace_id, .. } => {
                        prop_assert!(!phase.get(&workspace_id).copied().unwrap_or(false));
                        phase.insert(workspace_id, true);
                    }
                    SettleOutput::ScopeSettled { workspace_id, wake_id, .. } => {
                        prop_assert!(phase.get(&workspace_id).copied().unwrap_or(false));
                        prop_assert_eq!(tracker.working_panes(&workspace_id), 0);
                        prop_assert!(ids.insert(wake_id));
                        phase.insert(workspace_id, false);
                    }
                    _ => {}
                }
            }
        }
    }
}
