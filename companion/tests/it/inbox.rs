//! The parent inbox (issue 4; SPEC I1–I4) against the real runtime binary, the real
//! `herdr-companion task` CLI and the real `herdr-standin`.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::{output_within, RuntimeProcess, Standin, TestHome};

/// Starts the stand-in with workspace `alpha`: one tab with panes w1:p1 and w1:p2,
/// agents `bot` in `states`.
fn start_standin(socket: &Path, states: [&str; 2]) -> Standin {
    let seed = json!({"workspaces": [{"label": "alpha", "tabs": [{"panes": [
        {"agent": "bot", "state": states[0]}, {"agent": "bot", "state": states[1]}]}]}]});
    Standin::start(socket, Some(&seed), &[])
}

/// A runtime client that keeps the events it sees.
struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    events: Vec<Value>,
    next_id: u32,
}

impl Client {
    fn connect(home: &TestHome) -> Self {
        let stream = UnixStream::connect(home.socket()).expect("connect runtime");
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let writer = stream.try_clone().expect("clone");
        Self { reader: BufReader::new(stream), writer, events: Vec::new(), next_id: 0 }
    }

    /// The whole response (`result` or `error`).
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = format!("r{}", self.next_id);
        let line = json!({"id": id, "method": method, "params": params});
        self.writer.write_all(format!("{line}\n").as_bytes()).expect("write");
        loop {
            let mut line = String::new();
            assert!(self.reader.read_line(&mut line).expect("read runtime") > 0, "runtime closed");
            let value: Value = serde_json::from_str(&line).expect("json");
            if value["id"] == id.as_str() {
                return value;
            }
            if value.get("event").is_some() {
                self.events.push(value);
            }
        }
    }

    fn result(&mut self, method: &str, params: Value) -> Value {
        let answer = self.call(method, params);
        assert!(answer.get("result").is_some(), "{method} failed: {answer}");
        answer["result"].clone()
    }

    /// Calls until `done` holds for the result (at most 10 s).
    fn result_when(&mut self, method: &str, params: Value, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let result = self.result(method, params.clone());
            if done(&result) {
                return result;
            }
            assert!(Instant::now() < deadline, "{method} never got there; last {result}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn pending(&mut self, session_ref: &str) -> Vec<Value> {
        let result = self.result("inbox.pending", json!({"browser_session_ref": session_ref}));
        result["items"].as_array().cloned().unwrap_or_default()
    }

    /// Waits until `session_ref` has `count` pending items and returns them.
    fn pending_when(&mut self, session_ref: &str, count: usize) -> Vec<Value> {
        let result = self.result_when("inbox.pending", json!({"browser_session_ref": session_ref}), |r| {
            r["items"].as_array().map(Vec::len) == Some(count)
        });
        result["items"].as_array().cloned().unwrap_or_default()
    }

    fn counts(&mut self, session_ref: &str) -> Value {
        self.result("inbox.counts", json!({"browser_session_ref": session_ref}))["counts"].clone()
    }

    /// Waits until the runtime's catalog shows `pane` with `status`.
    fn pane_status(&mut self, pane: &str, status: &str) {
        self.result_when("herdr.panes", json!({}), |r| {
            r["panes"].as_array().is_some_and(|ps| ps.iter().any(|p| p["pane_id"] == pane && p["agent_status"] == status))
        });
    }
}

struct Rig {
    home: TestHome,
    standin: Standin,
    runtime: RuntimeProcess,
}

fn rig(states: [&str; 2]) -> Rig {
    let mut home = TestHome::new();
    home.herdr_socket = home.dir.path().join("herdr.sock");
    let standin = start_standin(&home.herdr_socket, states);
    let runtime = home.start_runtime();
    Rig { home, standin, runtime }
}

/// `herdr-companion task dispatch …` (the downlink stand-in); returns its printed result.
fn cli_dispatch(rig: &Rig, session_ref: &str, pane: &str, text: &str) -> Value {
    let output = output_within(
        &mut rig.home.command(&[
            "task",
            "dispatch",
            "--session-ref",
            session_ref,
            "--workspace",
            "w1",
            "--pane",
            pane,
            "--turn",
            "turn-7",
            text,
        ]),
        "task dispatch",
    );
    assert!(output.status.success(), "task dispatch failed: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("task dispatch prints JSON")
}

#[test]
fn a_dispatched_task_settles_once_into_its_own_sessions_inbox_i1_i2_i3() {
    let rig = rig(["idle", "idle"]);
    let mut client = Client::connect(&rig.home);
    client.pane_status("w1:p1", "idle");

    let dispatched = cli_dispatch(&rig, "chat-a", "w1:p1", "fix the flaky test");
    assert_eq!(dispatched["type"], "task_dispatched");
    assert_eq!((dispatched["state"].as_str(), dispatched["turn_id"].as_str()), (Some("running"), Some("turn-7")));
    let task_id = dispatched["task_id"].as_str().expect("task_id").to_owned();
    assert!(dispatched["dispatch_id"].as_str().is_some_and(|d| d != task_id));
    assert_eq!(client.counts("chat-a"), json!({"running": 1, "unacked": 0, "acked": 0}));
    assert!(client.pending("chat-a").is_empty(), "running work is not pending");

    // The idle agent takes the prompt, works, settles.
    rig.standin.report("w1:p1", "working");
    client.pane_status("w1:p1", "working");
    rig.standin.report("w1:p1", "idle");
    let items = client.pending_when("chat-a", 1);
    let item = &items[0];
    assert_eq!((item["task_id"].as_str(), item["state"].as_str()), (Some(task_id.as_str()), Some("completed")));
    assert_eq!((item["result"]["trigger"].as_str(), item["result"]["status"].as_str()), (Some("agent_settled"), Some("idle")));
    assert!(item["result"]["tail"].as_str().is_some_and(|t| t.contains("fix the flaky test")), "pane tail in the result: {item}");
    assert!(item["finished_at"].as_i64() >= item["created_at"].as_i64());
    assert_eq!(item["guidance"], Value::Null, "no advisor configured (I5 default)");

    // I3: another chat never sees it.
    assert!(client.pending("chat-b").is_empty());
    assert_eq!(client.counts("chat-b"), json!({"running": 0, "unacked": 0, "acked": 0}));

    // A later working → idle cycle of the same pane is not a second terminal record.
    rig.standin.report("w1:p1", "working");
    client.pane_status("w1:p1", "working");
    rig.standin.report("w1:p1", "idle");
    client.pane_status("w1:p1", "idle");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(client.pending("chat-a").len(), 1);
    assert_eq!(client.counts("chat-a"), json!({"running": 0, "unacked": 1, "acked": 0}));
    let list = output_within(&mut rig.home.command(&["task", "list", "--session-ref", "chat-a"]), "task list");
    let list: Value = serde_json::from_slice(&list.stdout).expect("task list prints JSON");
    assert_eq!(list["tasks"].as_array().map(Vec::len), Some(1), "{list}");

    // Every change of chat-a's rows was pushed as inbox_changed.
    let changes: Vec<&Value> = client
        .events
        .iter()
        .filter(|e| e["event"] == "inbox_changed" && e["data"]["browser_session_ref"] == "chat-a")
        .map(|e| &e["data"]["counts"])
        .collect();
    assert!(changes.contains(&&json!({"running": 0, "unacked": 1, "acked": 0})), "{:?}", client.events);
}

#[test]
fn pending_work_survives_runtime_restarts_until_acked_by_its_own_session_i4() {
    let mut rig = rig(["idle", "idle"]);
    let mut client = Client::connect(&rig.home);
    client.pane_status("w1:p2", "idle");
    let task_id = cli_dispatch(&rig, "chat-a", "w1:p2", "ship it")["task_id"].as_str().expect("id").to_owned();
    rig.standin.report("w1:p2", "working");
    client.pane_status("w1:p2", "working");

    // The agent settles (blocked) while the runtime is down: the restarted runtime still
    // delivers the terminal result, once.
    drop(client);
    rig.runtime.terminate();
    rig.standin.report("w1:p2", "blocked");
    rig.runtime = rig.home.start_runtime();
    let mut client = Client::connect(&rig.home);
    let items = client.pending_when("chat-a", 1);
    assert_eq!((items[0]["task_id"].as_str(), items[0]["state"].as_str()), (Some(task_id.as_str()), Some("blocked")));

    // Not acknowledged: still pending after another restart (no duplicate either).
    drop(client);
    rig.runtime.terminate();
    rig.runtime = rig.home.start_runtime();
    let mut client = Client::connect(&rig.home);
    std::thread::sleep(Duration::from_millis(500));
    let items = client.pending("chat-a");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["task_id"].as_str(), Some(task_id.as_str()));

    // I3: another chat may not acknowledge it.
    let refused = client.result("inbox.ack", json!({"browser_session_ref": "chat-b", "task_ids": [task_id]}));
    assert_eq!((refused["acked"].clone(), refused["forbidden"].clone()), (json!([]), json!([task_id])), "{refused}");
    assert_eq!(client.pending("chat-a").len(), 1);

    let acked = client.result("inbox.ack", json!({"browser_session_ref": "chat-a", "task_ids": [task_id]}));
    assert_eq!(acked["acked"], json!([task_id]));
    assert_eq!(acked["counts"], json!({"running": 0, "unacked": 0, "acked": 1}));
    let again = client.result("inbox.ack", json!({"browser_session_ref": "chat-a", "task_ids": [task_id]}));
    assert_eq!((again["acked"].clone(), again["already_acked"].clone()), (json!([]), json!([task_id])), "acking twice is idempotent");
    assert!(client.pending("chat-a").is_empty());
    assert!(client.events.iter().any(|e| e["event"] == "inbox_changed"
        && e["data"] == json!({"browser_session_ref": "chat-a", "counts": {"running": 0, "unacked": 0, "acked": 1}})));

    drop(client);
    rig.runtime.terminate();
    rig.runtime = rig.home.start_runtime();
    let mut client = Client::connect(&rig.home);
    assert!(client.pending("chat-a").is_empty(), "an ack is durable too");
    assert_eq!(client.counts("chat-a"), json!({"running": 0, "unacked": 0, "acked": 1}));
}

#[test]
fn a_closed_pane_or_released_agent_fails_its_task_i2() {
    let rig = rig(["idle", "idle"]);
    let mut client = Client::connect(&rig.home);
    client.pane_status("w1:p2", "idle");
    let on_p1 = cli_dispatch(&rig, "chat-a", "w1:p1", "one")["task_id"].clone();
    let on_p2 = cli_dispatch(&rig, "chat-a", "w1:p2", "two")["task_id"].clone();
    rig.standin.call("pane.close", json!({"pane_id": "w1:p2"}));
    let items = client.pending_when("chat-a", 1);
    assert_eq!((&items[0]["task_id"], items[0]["state"].as_str()), (&on_p2, Some("failed")));
    assert_eq!(items[0]["result"]["trigger"], "pane_closed");

    rig.standin.call("pane.release_agent", json!({"pane_id": "w1:p1", "source": "custom:test", "agent": "bot"}));
    let items = client.pending_when("chat-a", 2);
    assert_eq!((&items[1]["task_id"], items[1]["state"].as_str()), (&on_p1, Some("failed")));
    assert_eq!(items[1]["result"]["trigger"], "agent_released");
}

#[test]
fn bad_dispatches_are_refused_clearly_and_leave_no_task() {
    let rig = rig(["blocked", "working"]);
    let mut client = Client::connect(&rig.home);
    client.pane_status("w1:p2", "working");
    let base = json!({"browser_session_ref": "chat-a", "workspace_id": "w1", "pane_id": "w1:p1", "prompt": "go"});
    let with = |key: &str, value: Value| {
        let mut params = base.clone();
        if let Some(map) = params.as_object_mut() {
            match value {
                Value::Null => map.remove(key),
                v => map.insert(key.to_owned(), v),
            };
        }
        params
    };
    let cases = [
        (with("browser_session_ref", Value::Null), "bad_request", "browser_session_ref"),
        (with("prompt", json!("x".repeat(64 * 1024 + 1))), "bad_request", "64 KiB"),
        (with("workspace_id", json!("w2")), "bad_request", "is in workspace w1"),
        (with("pane_id", json!("w9:p9")), "not_found", "pick a pane"),
        (base.clone(), "agent_blocked", "answer it in Herdr"),
        (with("pane_id", json!("w1:p2")), "agent_not_ready", "wait until it is idle"),
    ];
    for (params, code, hint) in cases {
        let answer = client.call("task.dispatch", params.clone());
        assert_eq!(answer["error"]["code"], code, "{params} → {answer}");
        assert!(answer["error"]["message"].as_str().is_some_and(|m| m.contains(hint)), "{answer}");
    }
    let missing_ref = client.call("inbox.pending", json!({}));
    assert_eq!(missing_ref["error"]["code"], "bad_request");
    assert_eq!(client.result("task.list", json!({"browser_session_ref": "chat-a"}))["tasks"], json!([]));
    assert_eq!(client.counts("chat-a"), json!({"running": 0, "unacked": 0, "acked": 0}));

    // The CLI says the same and exits 1.
    let output = output_within(
        &mut rig.home.command(&["task", "dispatch", "--session-ref", "chat-a", "--workspace", "w1", "--pane", "w1:p1", "go"]),
        "task dispatch",
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("agent_blocked") && stderr.contains("answer it in Herdr"), "{stderr}");
}

/// Dispatches `count` tasks of `session_ref` to `pane` (idle) and settles them all with one
/// working → idle cycle; returns their ids in dispatch order.
fn settle_tasks(rig: &Rig, client: &mut Client, session_ref: &str, pane: &str, count: usize) -> Vec<String> {
    client.pane_status(pane, "idle");
    let ids: Vec<String> = (0..count)
        .map(|n| {
            let params = json!({"browser_session_ref": session_ref, "workspace_id": "w1", "pane_id": pane, "prompt": format!("task {n}")});
            client.result("task.dispatch", params)["task_id"].as_str().expect("task_id").to_owned()
        })
        .collect();
    rig.standin.report(pane, "working");
    client.pane_status(pane, "working");
    rig.standin.report(pane, "idle");
    client.result_when("inbox.counts", json!({"browser_session_ref": session_ref}), |r| r["counts"]["running"] == 0);
    ids
}

// R: I4 — one id the runtime does not know (e.g. from a reset state.db) must not strand
// the others of its batch: each id is answered on its own.
#[test]
fn inbox_ack_answers_each_id_and_an_unknown_one_does_not_drop_the_rest_i4() {
    let rig = rig(["idle", "idle"]);
    let mut client = Client::connect(&rig.home);
    let ours = settle_tasks(&rig, &mut client, "chat-a", "w1:p1", 2);
    let theirs = settle_tasks(&rig, &mut client, "chat-b", "w1:p2", 1);
    let running = client.result(
        "task.dispatch",
        json!({"browser_session_ref": "chat-a", "workspace_id": "w1", "pane_id": "w1:p2", "prompt": "still going"}),
    )["task_id"]
        .clone();

    let batch = json!([ours[0], "task-from-a-lost-state-db", theirs[0], running, ours[1]]);
    let answer = client.call("inbox.ack", json!({"browser_session_ref": "chat-a", "task_ids": batch}));
    let acked = answer.get("result").cloned().unwrap_or_else(|| panic!("a mixed batch is answered, not refused: {answer}"));
    assert_eq!(acked["acked"], json!(ours), "{acked}");
    assert_eq!(acked["already_acked"], json!([]));
    assert_eq!(acked["unknown"], json!(["task-from-a-lost-state-db"]));
    assert_eq!(acked["forbidden"], json!([theirs[0]]), "I3: another chat's task is never acked");
    assert_eq!(acked["not_terminal"], json!([running]));
    assert_eq!(acked["counts"], json!({"running": 1, "unacked": 0, "acked": 2}));
    assert!(client.pending("chat-a").is_empty());
    assert_eq!(client.pending("chat-b").len(), 1, "chat-b's task is untouched");

    // Repeating the batch changes nothing and says so per id.
    let again = client.result("inbox.ack", json!({"browser_session_ref": "chat-a", "task_ids": batch}));
    assert_eq!((again["acked"].clone(), again["already_acked"].clone()), (json!([]), json!(ours)));
    assert_eq!(again["unknown"], json!(["task-from-a-lost-state-db"]));
}

// R: I2, I4 — more terminal items than one answer carries: `more` says so, and acking the
// page brings the rest; `more` is false once the last page is out.
#[test]
fn inbox_pending_pages_with_more_until_the_last_item_i2_i4() {
    let rig = rig(["idle", "idle"]);
    let mut client = Client::connect(&rig.home);
    let ids = settle_tasks(&rig, &mut client, "chat-a", "w1:p1", 52);
    let first = client.result("inbox.pending", json!({"browser_session_ref": "chat-a"}));
    let page: Vec<String> =
        first["items"].as_array().expect("items").iter().map(|t| t["task_id"].as_str().expect("id").to_owned()).collect();
    assert_eq!((page.len(), first["more"].clone()), (50, json!(true)));
    let acked = client.result("inbox.ack", json!({"browser_session_ref": "chat-a", "task_ids": page}));
    assert_eq!(acked["acked"].as_array().map(Vec::len), Some(50));
    let second = client.result("inbox.pending", json!({"browser_session_ref": "chat-a"}));
    let rest: Vec<&str> = second["items"].as_array().expect("items").iter().filter_map(|t| t["task_id"].as_str()).collect();
    assert_eq!(second["more"], json!(false), "{second}");
    let mut seen: Vec<&str> = page.iter().map(String::as_str).chain(rest).collect();
    seen.sort_unstable();
    let mut all: Vec<&str> = ids.iter().map(String::as_str).collect();
    all.sort_unstable();
    assert_eq!(seen, all, "every item arrives on exactly one page");
    client.result("inbox.ack", json!({"browser_session_ref": "chat-a", "task_ids": second["items"].as_array().expect("items").iter().map(|t| t["task_id"].clone()).collect::<Vec<_>>()}));
    let empty = client.result("inbox.pending", json!({"browser_session_ref": "chat-a"}));
    assert_eq!((empty["items"].clone(), empty["more"].clone()), (json!([]), json!(false)));
}
