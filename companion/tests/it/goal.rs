//! Goal mode's runtime side (SPEC J7) against the real runtime binary and `herdr-standin`:
//! the planner sets a goal with TODO items through `herdr_call work_memory.goal`, the HUD
//! through `goal.set`, and `goal.evidence` answers what the runtime holds — the goal's
//! TODO items, the scope's running inbox tasks, the bound workspace's agents — checked
//! and bounded.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use crate::support::{output_within, Standin, TestHome};

struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    next_id: u32,
}

impl Client {
    fn connect(home: &TestHome) -> Self {
        let stream = UnixStream::connect(home.socket()).expect("connect runtime");
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let writer = stream.try_clone().expect("clone");
        Self { reader: BufReader::new(stream), writer, next_id: 0 }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = format!("g{}", self.next_id);
        let line = json!({"id": id, "method": method, "params": params});
        self.writer.write_all(format!("{line}\n").as_bytes()).expect("write");
        loop {
            let mut line = String::new();
            assert!(self.reader.read_line(&mut line).expect("read runtime") > 0, "runtime closed");
            let value: Value = serde_json::from_str(&line).expect("json");
            if value["id"] == id.as_str() {
                return value;
            }
        }
    }

    fn result(&mut self, method: &str, params: Value) -> Value {
        let answer = self.call(method, params);
        assert!(answer.get("result").is_some(), "{method} failed: {answer}");
        answer["result"].clone()
    }

    fn evidence(&mut self, session_ref: &str) -> Value {
        self.result("goal.evidence", json!({"browser_session_ref": session_ref, "workspace_id": "w1"}))
    }

    /// The planner's `herdr_call work_memory.goal` through the tool registry.
    fn planner_goal(&mut self, params: Value) -> Value {
        self.call("tools.call", json!({"tool": "herdr_call", "arguments": {"method": "work_memory.goal", "params": params.to_string()}}))
    }

    fn pane_status(&mut self, pane: &str, status: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let panes = self.result("herdr.panes", json!({}));
            if panes["panes"].as_array().is_some_and(|ps| ps.iter().any(|p| p["pane_id"] == pane && p["agent_status"] == status)) {
                return;
            }
            assert!(Instant::now() < deadline, "{pane} never became {status}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

// R: J7 — the evidence Goal mode reads: the goal and its TODO items (planner), the goal
// text (HUD, keeping the planner's list while the text is the same), running inbox tasks,
// the workspace's agents; clearing clears the list.
#[test]
fn goal_evidence_reports_todos_tasks_and_the_workspace_j7() {
    let mut home = TestHome::new();
    home.herdr_socket = home.dir.path().join("herdr.sock");
    let seed = json!({"workspaces": [{"label": "alpha", "tabs": [{"panes": [{"agent": "bot", "state": "idle"}]}]}]});
    let standin = Standin::start(&home.herdr_socket, Some(&seed), &[]);
    let _runtime = home.start_runtime();
    let mut client = Client::connect(&home);
    client.pane_status("w1:p1", "idle");
    let scope = "chatgpt:conv:goal-1";

    // Nothing set yet: no goal, nothing open.
    let none = client.evidence(scope);
    assert_eq!(
        none,
        json!({"type": "goal_evidence", "browser_session_ref": scope, "goal": null, "todos_open": 0, "todos_done": 0, "open_tasks": 0, "workspace": "idle"})
    );

    // The planner sets the goal with its TODO items.
    let set = client.planner_goal(json!({"session_ref": scope, "goal": "ship the parser", "todos": [
        {"text": "split the lexer", "done": true}, {"text": "write the tests"}, {"text": "update the docs"}]}));
    assert_eq!(set["result"]["type"], "tool_result", "{set}");
    let evidence = client.evidence(scope);
    assert_eq!(
        (evidence["goal"].clone(), evidence["todos_open"].clone(), evidence["todos_done"].clone()),
        (json!("ship the parser"), json!(2), json!(1))
    );

    // The HUD sets the same text: the list stays. A running task and a working agent show.
    let hud = client.result("goal.set", json!({"browser_session_ref": scope, "goal": " ship the parser "}));
    assert_eq!((hud["type"].clone(), hud["todos_open"].clone()), (json!("goal_evidence"), json!(2)));
    let dispatch = output_within(
        &mut home.command(&[
            "task",
            "dispatch",
            "--session-ref",
            scope,
            "--workspace",
            "w1",
            "--pane",
            "w1:p1",
            "--turn",
            "t1",
            "run the tests",
        ]),
        "task dispatch",
    );
    assert!(dispatch.status.success(), "{}", String::from_utf8_lossy(&dispatch.stderr));
    standin.report("w1:p1", "working");
    client.pane_status("w1:p1", "working");
    let busy = client.evidence(scope);
    assert_eq!((busy["open_tasks"].clone(), busy["workspace"].clone()), (json!(1), json!("working")));

    // Every item done: the evidence says so (Goal mode stops on it).
    client.planner_goal(
        json!({"session_ref": scope, "todos": [{"text": "split the lexer", "done": true}, {"text": "write the tests", "done": true}]}),
    );
    let done = client.evidence(scope);
    assert_eq!((done["todos_open"].clone(), done["todos_done"].clone()), (json!(0), json!(2)));

    // Another goal from the HUD starts without the old list; "" clears.
    let other = client.result("goal.set", json!({"browser_session_ref": scope, "goal": "release 1.2"}));
    assert_eq!(
        (other["goal"].clone(), other["todos_open"].clone(), other["todos_done"].clone()),
        (json!("release 1.2"), json!(0), json!(0))
    );
    let cleared = client.result("goal.set", json!({"browser_session_ref": scope, "goal": ""}));
    assert_eq!(cleared["goal"], Value::Null);
    // Another scope never sees this one's goal.
    assert_eq!(client.evidence("chatgpt:conv:other")["goal"], Value::Null);
}

// R: J7 — bad params are refused whole with what to send; nothing is stored.
#[test]
fn goal_params_are_checked_and_bounded_j7() {
    let home = TestHome::new();
    let _runtime = home.start_runtime();
    let mut client = Client::connect(&home);
    let scope = "chatgpt:conv:goal-2";
    let cases = [
        ("goal.set", json!({"browser_session_ref": scope}), "goal"),
        ("goal.set", json!({"browser_session_ref": scope, "goal": "x", "extra": 1}), "unknown field"),
        ("goal.set", json!({"browser_session_ref": scope, "goal": "x".repeat(3000)}), "at most 2048"),
        ("goal.set", json!({"browser_session_ref": "", "goal": "x"}), "browser_session_ref"),
        ("goal.evidence", json!({}), "browser_session_ref"),
        ("goal.evidence", json!({"browser_session_ref": scope, "workspace_id": "w".repeat(257)}), "workspace_id"),
        ("goal.evidence", json!({"browser_session_ref": scope, "workspace_id": ""}), "workspace_id"),
    ];
    for (method, params, says) in cases {
        let answer = client.call(method, params);
        let message = answer["error"]["message"].as_str().unwrap_or_default().to_owned();
        assert_eq!(answer["error"]["code"], "bad_request", "{method}: {answer}");
        assert!(message.contains(says), "{method}: {message} does not say {says}");
    }
    let todos: Vec<Value> = (0..65).map(|n| json!({"text": format!("step {n}")})).collect();
    for (params, says) in [
        (json!({"session_ref": scope, "goal": "g", "todos": todos}), "at most 64"),
        (json!({"session_ref": scope, "goal": "g", "todos": [{"text": " "}]}), "todos[0].text is empty"),
        (json!({"session_ref": scope, "todos": [{"text": "a"}]}), "todos need a goal"),
        (json!({"session_ref": scope, "goal": "g", "todos": [{"text": "a", "owner": "me"}]}), "unknown field"),
    ] {
        let answer = client.planner_goal(params);
        assert!(answer.to_string().contains(says), "{answer} does not say {says}");
    }
    assert_eq!(client.evidence(scope)["goal"], Value::Null, "a refused call stored nothing");
}
