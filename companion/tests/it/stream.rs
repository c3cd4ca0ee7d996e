//! The runtime's Herdr catalog and replayable event stream (issue 3; SPEC P1, P2, P8, P9,
//! N3) against the real `herdr-standin` and the real runtime binary.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use expect_test::{expect, Expect};

use crate::support::{Standin, TestHome};

/// Workspace `alpha`: w1:p1 and w1:p2 in the active tab, w1:p3 in a background tab.
fn seed(states: [&str; 3]) -> Value {
    json!({"workspaces": [{"label": "alpha", "tabs": [
        {"panes": [{"agent": "bot", "state": states[0]}, {"agent": "bot", "state": states[1]}]},
        {"label": "bg", "panes": [{"agent": "bot", "state": states[2]}]}]}]})
}

/// A runtime client that keeps responses and events apart.
struct StreamClient {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl StreamClient {
    fn connect(home: &TestHome) -> Self {
        let stream = UnixStream::connect(home.socket()).expect("connect runtime");
        stream.set_read_timeout(Some(Duration::from_millis(200))).expect("timeout");
        let writer = stream.try_clone().expect("clone");
        Self { reader: BufReader::new(stream), writer }
    }

    fn send(&mut self, id: &str, method: &str, params: Value) {
        let line = json!({"id": id, "method": method, "params": params});
        self.writer.write_all(format!("{line}\n").as_bytes()).expect("write");
    }

    /// The next message within `wait`, or None.
    fn next_within(&mut self, wait: Duration) -> Option<Value> {
        let deadline = Instant::now() + wait;
        let mut line = String::new();
        while Instant::now() < deadline {
            match self.reader.read_line(&mut line) {
                Ok(0) => return None,
                Ok(_) if line.ends_with('\n') => return Some(serde_json::from_str(&line).expect("json")),
                Ok(_) => {}
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(e) => panic!("read runtime: {e}"),
            }
        }
        None
    }

    /// Stream events (not responses) until `until` matches one; returns them all.
    fn events_until(&mut self, until: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let message = self.next_within(Duration::from_secs(10)).unwrap_or_else(|| panic!("timed out; saw {seen:#?}"));
            if message.get("event").is_none() {
                continue;
            }
            let done = until(&message);
            seen.push(message);
            if done {
                return seen;
            }
        }
    }

    /// Every stream event arriving within `quiet`.
    fn drain(&mut self, quiet: Duration) -> Vec<Value> {
        let mut seen = Vec::new();
        while let Some(message) = self.next_within(quiet) {
            if message.get("event").is_some() {
                seen.push(message);
            }
        }
        seen
    }

    fn subscribe(&mut self, after_seq: Option<i64>) -> Value {
        let params = after_seq.map_or(json!({}), |s| json!({"after_seq": s}));
        self.send("sub", "events.subscribe", params);
        let hello = self.events_until(|m| m["event"] == "hello");
        hello.last().cloned().expect("hello")
    }
}

fn is_agent(m: &Value) -> bool {
    matches!(m["event"].as_str(), Some("agent_working" | "agent_settled"))
}

fn agent_event(event: &str, pane: &str) -> impl Fn(&Value) -> bool {
    let (event, pane) = (event.to_owned(), pane.to_owned());
    move |m: &Value| m["event"] == event.as_str() && m["data"]["pane_id"] == pane.as_str()
}

/// One line per agent event: `agent_settled w1:p1 working -> idle`.
fn trace(events: &[Value]) -> String {
    events
        .iter()
        .filter(|m| is_agent(m))
        .map(|m| {
            let d = &m["data"];
            format!(
                "{} {} {} -> {}\n",
                m["event"].as_str().unwrap_or(""),
                d["pane_id"].as_str().unwrap_or(""),
                d["previous_status"].as_str().unwrap_or(""),
                d["status"].as_str().unwrap_or("")
            )
        })
        .collect()
}

fn check(events: &[Value], expected: Expect) {
    expected.assert_eq(&trace(events));
}

struct Rig {
    home: TestHome,
    standin: Standin,
    runtime: crate::support::RuntimeProcess,
}

fn rig(states: [&str; 3], extra: &[&str]) -> Rig {
    let mut home = TestHome::new();
    home.herdr_socket = home.dir.path().join("herdr.sock");
    let standin = Standin::start(&home.herdr_socket, Some(&seed(states)), extra);
    let runtime = home.start_runtime();
    Rig { home, standin, runtime }
}

/// Waits (at most 10 s) until the runtime's catalog shows `pane` with `status`; the
/// catalog changes in the same step that stores the event, so the event is in the log.
fn wait_for_pane_status(home: &TestHome, pane: &str, status: &str) {
    let mut client = crate::support::LineClient::connect(&home.socket());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let answer = client.call("panes", "herdr.panes", json!({}));
        let panes = answer["result"]["panes"].as_array().cloned().unwrap_or_default();
        if panes.iter().any(|p| p["pane_id"] == pane && p["agent_status"] == status) {
            return;
        }
        assert!(Instant::now() < deadline, "the runtime never saw {pane} {status}; last {answer}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Drives one report and waits for the event it must cause.
fn step(rig: &Rig, client: &mut StreamClient, pane: &str, state: &str, event: &str, log: &mut Vec<Value>) {
    rig.standin.report(pane, state);
    log.extend(client.events_until(agent_event(event, pane)));
}

#[test]
fn three_panes_settle_once_per_transition_in_any_order_p8() {
    let rig = rig(["idle", "idle", "idle"], &[]);
    let mut client = StreamClient::connect(&rig.home);
    let hello = client.subscribe(Some(0));
    assert_eq!(hello["data"]["protocol"], "herdr-continuity-events/1");
    // The catalog arrives first: one workspace, three panes.
    let catalog = client.events_until(|m| m["event"] == "pane_upsert" && m["data"]["pane_id"] == "w1:p3");
    assert!(catalog.iter().any(|m| m["event"] == "workspace_upsert" && m["data"]["label"] == "alpha"));
    std::thread::sleep(Duration::from_millis(300));

    let mut log = Vec::new();
    for pane in ["w1:p1", "w1:p2", "w1:p3"] {
        step(&rig, &mut client, pane, "working", "agent_working", &mut log);
    }
    step(&rig, &mut client, "w1:p1", "idle", "agent_settled", &mut log);
    step(&rig, &mut client, "w1:p2", "blocked", "agent_settled", &mut log);
    step(&rig, &mut client, "w1:p3", "idle", "agent_settled", &mut log);
    // Second order: reversed, and a blocked agent that goes idle does not settle again.
    for pane in ["w1:p3", "w1:p1"] {
        step(&rig, &mut client, pane, "working", "agent_working", &mut log);
    }
    rig.standin.report("w1:p2", "idle");
    step(&rig, &mut client, "w1:p3", "blocked", "agent_settled", &mut log);
    step(&rig, &mut client, "w1:p1", "idle", "agent_settled", &mut log);
    log.extend(client.drain(Duration::from_millis(700)));
    check(
        &log,
        expect![[r#"
        agent_working w1:p1 idle -> working
        agent_working w1:p2 idle -> working
        agent_working w1:p3 done -> working
        agent_settled w1:p1 working -> idle
        agent_settled w1:p2 working -> blocked
        agent_settled w1:p3 working -> done
        agent_working w1:p3 done -> working
        agent_working w1:p1 idle -> working
        agent_settled w1:p3 working -> blocked
        agent_settled w1:p1 working -> idle
    "#]],
    );
    let seqs: Vec<i64> = log.iter().filter_map(|m| m["data"]["seq"].as_i64()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "seq strictly increases: {seqs:?}");
    drop(rig.runtime);
}

#[test]
fn restarting_herdr_mid_run_resyncs_and_delivers_each_missed_settle_once_p9() {
    let mut rig = rig(["working", "working", "idle"], &[]);
    let mut client = StreamClient::connect(&rig.home);
    client.subscribe(Some(0));
    let mut log = client.events_until(agent_event("agent_working", "w1:p2"));
    // Herdr goes away; while it is down the agents move on; it comes back with that state.
    let socket = rig.standin.socket.clone();
    drop(std::mem::replace(&mut rig.standin, Standin::start(&socket.with_extension("tmp"), None, &[])));
    std::thread::sleep(Duration::from_millis(500));
    rig.standin = Standin::start(&socket, Some(&seed(["idle", "blocked", "working"])), &[]);
    log.extend(client.events_until(agent_event("agent_working", "w1:p3")));
    log.extend(client.drain(Duration::from_secs(3)));
    check(
        &log,
        expect![[r#"
        agent_working w1:p1 unknown -> working
        agent_working w1:p2 unknown -> working
        agent_settled w1:p1 working -> idle
        agent_settled w1:p2 working -> blocked
        agent_working w1:p3 done -> working
    "#]],
    );
    // The runtime is live again: a new transition still arrives.
    rig.standin.report("w1:p3", "idle");
    let tail = client.events_until(agent_event("agent_settled", "w1:p3"));
    check(
        &tail,
        expect![[r#"
        agent_settled w1:p3 working -> done
    "#]],
    );
}

#[test]
fn a_reconnecting_client_gets_what_it_missed_once_and_old_boots_are_stale_p9() {
    let mut rig = rig(["idle", "idle", "idle"], &[]);
    let mut first = StreamClient::connect(&rig.home);
    first.subscribe(Some(0));
    first.events_until(|m| m["event"] == "pane_upsert" && m["data"]["pane_id"] == "w1:p3");
    std::thread::sleep(Duration::from_millis(300));
    let mut seen = Vec::new();
    step(&rig, &mut first, "w1:p1", "working", "agent_working", &mut seen);
    let last_seq = seen.last().and_then(|m| m["data"]["seq"].as_i64()).expect("seq");
    drop(first);

    // While no client is connected: p1 settles, then p2 starts (each stored by the
    // runtime before the next happens).
    rig.standin.report("w1:p1", "idle");
    wait_for_pane_status(&rig.home, "w1:p1", "idle");
    rig.standin.report("w1:p2", "working");
    wait_for_pane_status(&rig.home, "w1:p2", "working");
    let mut second = StreamClient::connect(&rig.home);
    let hello = second.subscribe(Some(last_seq));
    let boot = hello["data"]["boot_id"].clone();
    let mut missed = second.events_until(agent_event("agent_working", "w1:p2"));
    missed.extend(second.drain(Duration::from_millis(300)));
    check(
        &missed,
        expect![[r#"
        agent_settled w1:p1 working -> idle
        agent_working w1:p2 idle -> working
    "#]],
    );
    assert!(missed.iter().all(|m| m["data"]["seq"].as_i64() > Some(last_seq) && m["data"]["stale"] == false));
    // A live event after the replay seam arrives once.
    rig.standin.report("w1:p2", "idle");
    let live = second.events_until(agent_event("agent_settled", "w1:p2"));
    let live_more = second.drain(Duration::from_millis(500));
    check(
        &[live, live_more].concat(),
        expect![[r#"
        agent_settled w1:p2 working -> idle
    "#]],
    );
    drop(second);

    // After a runtime restart the old events replay marked stale (other boot_id).
    rig.runtime.terminate();
    rig.runtime = rig.home.start_runtime();
    let mut third = StreamClient::connect(&rig.home);
    let hello = third.subscribe(Some(0));
    assert_ne!(hello["data"]["boot_id"], boot);
    let replay = third.drain(Duration::from_millis(700));
    let old: Vec<&Value> = replay.iter().filter(|m| m["data"]["boot_id"] == boot).collect();
    assert!(!old.is_empty() && old.iter().all(|m| m["data"]["stale"] == true));
    let seqs: Vec<i64> = replay.iter().filter_map(|m| m["data"]["seq"].as_i64()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
}

#[test]
fn junk_lines_from_herdr_are_skipped_and_the_subscription_survives() {
    let rig = rig(["idle", "idle", "idle"], &[]);
    let mut client = StreamClient::connect(&rig.home);
    client.subscribe(Some(0));
    client.events_until(|m| m["event"] == "pane_upsert" && m["data"]["pane_id"] == "w1:p3");
    std::thread::sleep(Duration::from_millis(300));
    rig.standin.call(
        "standin.inject_lines",
        json!({"oversized_bytes": 2 << 20, "lines": [
            "not json at all", "[1,2,3]", "{\"event\":\"mystery\",\"data\":{}}",
            "{\"event\":\"pane.agent_status_changed\",\"data\":{\"pane_id\":\"w1:p1\"}}",
        ]}),
    );
    let mut log = Vec::new();
    step(&rig, &mut client, "w1:p1", "working", "agent_working", &mut log);
    step(&rig, &mut client, "w1:p1", "idle", "agent_settled", &mut log);
    check(
        &log,
        expect![[r#"
        agent_working w1:p1 idle -> working
        agent_settled w1:p1 working -> idle
    "#]],
    );
    let read = {
        client.send("r", "herdr.pane_read", json!({"pane_id": "w1:p1", "lines": 5}));
        loop {
            let m = client.next_within(Duration::from_secs(5)).expect("pane_read answer");
            if m["id"] == "r" {
                break m;
            }
        }
    };
    assert_eq!(read["result"]["type"], "herdr_pane_read", "{read}");
}

#[test]
fn an_unsupported_herdr_protocol_is_reported_clearly() {
    let rig = rig(["idle", "idle", "idle"], &["--protocol", "19"]);
    let mut client = StreamClient::connect(&rig.home);
    client.send("s", "herdr.status", json!({}));
    client.send("w", "herdr.workspaces", json!({}));
    let mut answers = Vec::new();
    while answers.len() < 2 {
        let m = client.next_within(Duration::from_secs(5)).expect("answers");
        if m.get("id").is_some() {
            answers.push(m);
        }
    }
    answers.sort_by_key(|m| m["id"].as_str().unwrap_or("").to_owned());
    assert_eq!(answers[0]["result"]["herdr"]["state"], "unsupported_protocol", "{}", answers[0]);
    assert_eq!(answers[1]["error"]["code"], "unsupported_protocol", "{}", answers[1]);
    let message = answers[1]["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("19") && message.contains("20") && message.contains("update"), "{message}");
}

const PANES: [&str; 3] = ["w1:p1", "w1:p2", "w1:p3"];

fn is_output_of(pane: &str, text: &str) -> impl Fn(&Value) -> bool {
    let (pane, text) = (pane.to_owned(), text.to_owned());
    move |m: &Value| {
        m["event"] == "agent_output"
            && m["data"]["pane_id"] == pane.as_str()
            && m["data"]["tail"].as_str().is_some_and(|t| t.contains(&text))
    }
}

/// Rows of `event` (of any event: `None`) in the runtime's durable log.
fn stored_rows(home: &TestHome, event: Option<&str>) -> i64 {
    let db = rusqlite::Connection::open(home.home().join("state.db")).expect("open state.db");
    db.query_row("SELECT COUNT(*) FROM events WHERE ?1 IS NULL OR event = ?1", [event], |r| r.get(0)).expect("count")
}

/// The `agent_output` events of `events`, by pane, in arrival order.
fn outputs_by_pane(events: &[Value]) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut by_pane = std::collections::BTreeMap::<String, Vec<String>>::new();
    for m in events.iter().filter(|m| m["event"] == "agent_output") {
        let tail = m["data"]["tail"].as_str().unwrap_or("");
        let last = tail.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").to_owned();
        by_pane.entry(m["data"]["pane_id"].as_str().unwrap_or("").to_owned()).or_default().push(last);
    }
    by_pane
}

// R: P4, P9, N3 — pane output is the newest state, not history: busy panes write nothing
// into the durable log (so they can never evict a settle from retention), and a
// subscriber gets each pane's newest tail once, after its replay.
#[test]
fn agent_output_is_kept_latest_per_pane_outside_the_durable_log_p4_p9() {
    let rig = rig(["working", "working", "working"], &[]);
    let mut live = StreamClient::connect(&rig.home);
    live.subscribe(Some(0));
    live.events_until(agent_event("agent_working", "w1:p3"));
    for round in 0..3 {
        for pane in PANES {
            let text = format!("round {round} of {pane}");
            rig.standin.call("pane.send_text", json!({"pane_id": pane, "text": text, "keys": ["enter"]}));
        }
        // Panes are read independently, so their outputs arrive in any order.
        let mut waiting: Vec<&str> = PANES.to_vec();
        while !waiting.is_empty() {
            let seen = live.events_until(|m| waiting.iter().any(|p| is_output_of(p, &format!("round {round} of {p}"))(m)));
            let output = seen.last().expect("output");
            assert!(output["data"].get("seq").is_none(), "agent_output consumes no durable seq: {output}");
            assert_eq!(output["data"]["boot_id"], live_boot(&rig.home));
            waiting.retain(|p| output["data"]["pane_id"] != *p);
        }
    }
    assert_eq!(stored_rows(&rig.home, Some("agent_output")), 0, "no output row in the durable log");
    rig.standin.report("w1:p1", "idle");
    live.events_until(agent_event("agent_settled", "w1:p1"));

    // A replaying subscriber: every stored event, the settle of w1:p1 among them, then one
    // agent_output per pane — its newest.
    let mut replaying = StreamClient::connect(&rig.home);
    replaying.subscribe(Some(0));
    let mut seen = replaying.events_until(|m| m["event"] == "agent_output");
    seen.extend(replaying.drain(Duration::from_millis(700)));
    let settle = seen.iter().position(agent_event("agent_settled", "w1:p1")).expect("the settle is replayed");
    let first_output = seen.iter().position(|m| m["event"] == "agent_output").expect("outputs");
    assert!(settle < first_output, "the tails follow the replay");
    let expected: std::collections::BTreeMap<String, Vec<String>> =
        PANES.iter().map(|p| ((*p).to_owned(), vec![format!("round 2 of {p}")])).collect();
    assert_eq!(outputs_by_pane(&seen), expected, "exactly one tail per pane, the newest");
    let stored: Vec<i64> = seen.iter().filter_map(|m| m["data"]["seq"].as_i64()).collect();
    assert_eq!(stored.len() as i64, stored_rows(&rig.home, None), "everything else replayed is a stored event");

    // A live-only subscriber gets the same newest tails.
    let mut live_only = StreamClient::connect(&rig.home);
    live_only.subscribe(None);
    let mut seen = live_only.events_until(|m| m["event"] == "agent_output");
    seen.extend(live_only.drain(Duration::from_millis(700)));
    assert_eq!(outputs_by_pane(&seen), expected);
}

/// The current runtime's boot id (from `hello`).
fn live_boot(home: &TestHome) -> Value {
    let mut client = crate::support::LineClient::connect(&home.socket());
    client.call("hello", "hello", json!({"protocol": 2, "extension_version": "test"}))["result"]["boot_id"].clone()
}

/// Subscribes with `params` and returns the `hello`, the `events_subscribed` result and
/// the stored events replayed (up to a quiet period).
fn subscribe_with(home: &TestHome, params: Value) -> (Value, Value, Vec<Value>) {
    let mut client = StreamClient::connect(home);
    client.send("sub", "events.subscribe", params);
    let (mut hello, mut result, mut events) = (Value::Null, Value::Null, Vec::new());
    let deadline = Instant::now() + Duration::from_secs(10);
    while hello.is_null() || result.is_null() {
        assert!(Instant::now() < deadline, "no hello or no answer to events.subscribe");
        let Some(message) = client.next_within(Duration::from_secs(1)) else { continue };
        if message["id"] == "sub" {
            result = message.get("result").cloned().unwrap_or_else(|| panic!("events.subscribe failed: {message}"));
        } else if message["event"] == "hello" {
            hello = message["data"].clone();
        } else if message["data"]["seq"].is_i64() {
            events.push(message);
        }
    }
    events.extend(client.drain(Duration::from_millis(500)).into_iter().filter(|m| m["data"]["seq"].is_i64()));
    (hello, result, events)
}

fn seqs(events: &[Value]) -> Vec<i64> {
    events.iter().filter_map(|m| m["data"]["seq"].as_i64()).collect()
}

// R: P9, N3 — the event log has an identity: a client that resumes with the log's own
// log_id and a seq it received gets exactly what followed, as before; an old client that
// sends no log_id still works.
#[test]
fn a_resume_in_the_same_log_replays_only_what_followed_p9() {
    let mut rig = rig(["idle", "idle", "idle"], &[]);
    wait_for_pane_status(&rig.home, "w1:p3", "done");
    let (hello, result, replay) = subscribe_with(&rig.home, json!({"after_seq": 0}));
    let log_id = hello["log_id"].as_str().expect("hello carries log_id").to_owned();
    assert!(!log_id.is_empty());
    assert_eq!(
        (hello["log_reset"].clone(), result["log_id"].clone(), result["log_reset"].clone()),
        (json!(false), json!(log_id), json!(false))
    );
    let last = hello["last_seq"].as_i64().expect("last_seq");
    assert!(last >= 2 && seqs(&replay).last() == Some(&last), "{replay:?}");

    for params in [json!({"after_seq": last - 1, "log_id": log_id}), json!({"after_seq": last - 1})] {
        let (hello, result, replay) = subscribe_with(&rig.home, params.clone());
        assert_eq!((hello["log_reset"].clone(), result["after_seq"].clone()), (json!(false), json!(last - 1)), "{params}");
        assert_eq!(seqs(&replay), [last], "{params}");
    }
    // A runtime restart keeps the log, so it keeps its id.
    rig.runtime.terminate();
    rig.runtime = rig.home.start_runtime();
    let (hello, _, _) = subscribe_with(&rig.home, json!({"after_seq": last, "log_id": log_id}));
    assert_eq!((hello["log_id"].clone(), hello["log_reset"].clone()), (json!(log_id), json!(false)));
}

// R: P9, N3 — a seq from another log (state.db reset: new log_id) or beyond the end of
// this one (commits lost) is not a position in this log: the runtime replays its whole log
// and says so, instead of the client dropping every event until seq catches up.
#[test]
fn a_resume_from_another_log_or_beyond_its_end_replays_the_whole_log_p9() {
    let mut rig = rig(["idle", "idle", "idle"], &[]);
    wait_for_pane_status(&rig.home, "w1:p3", "done");
    let (hello, _, everything) = subscribe_with(&rig.home, json!({"after_seq": 0}));
    let (log_id, last) = (hello["log_id"].clone(), hello["last_seq"].as_i64().expect("last_seq"));
    let whole = seqs(&everything);

    let beyond = subscribe_with(&rig.home, json!({"after_seq": last + 5, "log_id": log_id}));
    let other = subscribe_with(&rig.home, json!({"after_seq": last, "log_id": "a-log-that-is-gone"}));
    let beyond_without_id = subscribe_with(&rig.home, json!({"after_seq": last + 5}));
    for (why, (hello, result, replay)) in [("beyond the end", beyond), ("another log", other), ("beyond, no log_id", beyond_without_id)] {
        assert_eq!((hello["log_reset"].clone(), result["log_reset"].clone()), (json!(true), json!(true)), "{why}");
        assert_eq!(result["after_seq"], json!(0), "{why}: the replay starts at the beginning of the log");
        assert_eq!(seqs(&replay), whole, "{why}");
    }

    // A new state.db is a new log: the old client's position means nothing in it.
    rig.runtime.terminate();
    for file in ["state.db", "state.db-wal", "state.db-shm"] {
        let _ = std::fs::remove_file(rig.home.home().join(file));
    }
    rig.runtime = rig.home.start_runtime();
    wait_for_pane_status(&rig.home, "w1:p3", "done");
    let (hello, _, replay) = subscribe_with(&rig.home, json!({"after_seq": last, "log_id": log_id}));
    assert_ne!(hello["log_id"], log_id, "a new state.db has a new log_id");
    assert_eq!(hello["log_reset"], json!(true));
    assert_eq!(seqs(&replay).first(), Some(&1), "the new log is replayed from its first event: {replay:?}");
    assert!(replay.iter().any(|m| m["event"] == "pane_upsert" && m["data"]["pane_id"] == "w1:p3"));
}

// R: P9, N3 — an event write that waits for state.db's lock keeps no reader waiting, and
// its change is visible only once stored; when the write fails (busy timeout) the change
// is not half-applied: the next resync stores it, once.
#[test]
fn a_blocked_event_write_stalls_no_reader_and_is_stored_once_when_it_can_be_p9_n3() {
    let rig = rig(["idle", "idle", "idle"], &[]);
    wait_for_pane_status(&rig.home, "w1:p3", "done");
    let mut stream = StreamClient::connect(&rig.home);
    stream.subscribe(None);
    let blocker = rusqlite::Connection::open(rig.home.home().join("state.db")).expect("open state.db");
    blocker.busy_timeout(crate::support::PROCESS_WAIT).expect("busy timeout");
    blocker.execute_batch("BEGIN IMMEDIATE").expect("take the write lock");
    rig.standin.report("w1:p1", "working");

    let mut client = crate::support::LineClient::connect(&rig.home.socket());
    for n in 0..6 {
        client.send_raw(json!({"id": format!("panes{n}"), "method": "herdr.panes", "params": {}}).to_string().as_bytes());
    }
    for _ in 0..6 {
        let answer = loop {
            let message = client.next().expect("runtime closed the connection");
            if message.get("id").is_some() {
                break message;
            }
        };
        let panes = answer["result"]["panes"].as_array().cloned().unwrap_or_default();
        let p1 = panes.iter().find(|p| p["pane_id"] == "w1:p1").unwrap_or_else(|| panic!("{answer}"));
        assert_eq!(p1["agent_status"], "idle", "not stored, so not visible: {answer}");
    }
    let deadline = Instant::now() + crate::support::PROCESS_WAIT;
    while !rig.home.runtime_log().contains("database is locked") {
        assert!(Instant::now() < deadline, "the runtime never gave up waiting for the lock:\n{}", rig.home.runtime_log());
        std::thread::sleep(Duration::from_millis(50));
    }
    blocker.execute_batch("ROLLBACK").expect("release the write lock");
    let mut seen = stream.events_until(agent_event("agent_working", "w1:p1"));
    seen.extend(stream.drain(Duration::from_millis(700)));
    check(
        &seen,
        expect![[r#"
        agent_working w1:p1 idle -> working
    "#]],
    );
    wait_for_pane_status(&rig.home, "w1:p1", "working");
}

// R: N3 — review of stop 40: a subscribed client that closed kept its place under the
// runtime's connection cap (64) until the next live event reached its feed, which on a
// quiet workstation may never come. 64 ordinary reconnects (host restarts, browser
// restarts) then locked every client out with `overloaded`. Now a connection's
// subscription ends with it.
#[test]
fn subscribed_clients_that_close_give_their_places_back_on_a_quiet_workstation_n3() {
    let rig = rig(["idle", "idle", "idle"], &[]);
    wait_for_pane_status(&rig.home, "w1:p3", "done");
    for _ in 0..64 {
        let mut client = StreamClient::connect(&rig.home);
        client.subscribe(None);
    }
    // Each closed connection gives its place back once its (no) answers are out: allow a
    // moment, then a 65th client must be served, not told `overloaded`.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut client = StreamClient::connect(&rig.home);
        // A refused client's connection is closed at once: its write may fail.
        let sent = client.writer.write_all(format!("{}\n", json!({"id": "p", "method": "ping", "params": {}})).as_bytes()).is_ok();
        let answer = if sent { client.next_within(Duration::from_secs(2)).unwrap_or(Value::Null) } else { Value::Null };
        if answer["result"]["type"] == "pong" {
            break;
        }
        assert!(Instant::now() < deadline, "a client after 64 closed subscribers is still refused: {answer}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

// R: P8, P9 — a second `events.subscribe` on one connection ended nothing: two feeds sent
// every later event twice on it. The newer subscription now replaces the older.
#[test]
fn a_connection_that_subscribes_twice_gets_each_event_once_p8() {
    let rig = rig(["idle", "idle", "idle"], &[]);
    wait_for_pane_status(&rig.home, "w1:p3", "done");
    let mut client = StreamClient::connect(&rig.home);
    client.subscribe(None);
    client.subscribe(None);
    client.drain(Duration::from_millis(300));
    rig.standin.report("w1:p1", "working");
    let mut seen = client.events_until(agent_event("agent_working", "w1:p1"));
    seen.extend(client.drain(Duration::from_millis(800)));
    let working = seen.iter().filter(|m| agent_event("agent_working", "w1:p1")(m)).count();
    assert_eq!(working, 1, "{seen:#?}");
}
