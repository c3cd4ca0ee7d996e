//! Replays the recorded Herdr 0.8.2 transcript (`tests/fixtures/herdr-0.8.2-transcript.md`,
//! a copy of `../shared/herdr/transcript.md`) against the real `herdr-standin` binary and
//! compares every answer and every subscription line with what real Herdr sent.
//!
//! Only terminal ids (random in Herdr) are normalised. Requests that need a real shell
//! (command output, process detection, `agent.prompt`, `pane.wait_for_output`) are not
//! replayed; the stand-in drives agent `pi` on `w1:p3` with `pane.report_agent` instead,
//! which yields the same events and the same `state_change_seq` values.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const TRANSCRIPT: &str = include_str!("fixtures/herdr-0.8.2-transcript.md");

/// One `>>`/`<<` line of the transcript.
struct Entry {
    sent: bool,
    tag: Option<String>,
    text: String,
}

fn entries() -> Vec<Entry> {
    TRANSCRIPT
        .lines()
        .filter_map(|line| {
            let (sent, rest) = if let Some(r) = line.strip_prefix(">> ") {
                (true, r)
            } else if let Some(r) = line.strip_prefix("<< ") {
                (false, r)
            } else {
                return None;
            };
            let (tag, text) = match rest.strip_prefix('[') {
                Some(r) => {
                    let (tag, text) = r.split_once("] ").expect("tag ends with `] `");
                    (Some(tag.to_owned()), text.to_owned())
                }
                None => (None, rest.to_owned()),
            };
            Some(Entry { sent, tag, text })
        })
        .collect()
}

fn id_of(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    value.get("id")?.as_str().map(str::to_owned)
}

/// The one-shot request with `id` and the untagged answer that follows it.
fn exchange(id: &str) -> (String, String) {
    let all = entries();
    let at = all
        .iter()
        .position(|e| e.sent && e.tag.is_none() && id_of(&e.text).as_deref() == Some(id))
        .unwrap_or_else(|| panic!("transcript has no request {id}"));
    let answer = all[at + 1..].iter().find(|e| !e.sent && e.tag.is_none()).unwrap_or_else(|| panic!("transcript has no answer to {id}"));
    (all[at].text.clone(), answer.text.clone())
}

fn tagged(tag: &str, sent: bool) -> Vec<String> {
    entries().into_iter().filter(|e| e.sent == sent && e.tag.as_deref() == Some(tag)).map(|e| e.text).collect()
}

/// Replaces Herdr's random `term_<14 hex>` ids with `term_*`.
fn normalise(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("term_") {
        out.push_str(&rest[..at + 5]);
        let tail = &rest[at + 5..];
        let hex = tail.chars().take_while(|c| c.is_ascii_hexdigit()).count();
        out.push('*');
        rest = &tail[hex..];
    }
    out.push_str(rest);
    out
}

struct Standin {
    child: Child,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Standin {
    fn start(extra: &[&str]) -> Standin {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("herdr.sock");
        let mut child = Command::new(env!("CARGO_BIN_EXE_herdr-standin"))
            .arg("--socket")
            .arg(&socket)
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn herdr-standin");
        let mut ready = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut ready).expect("ready line");
        assert_eq!(ready.trim(), format!("ready {}", socket.display()));
        Standin { child, socket, _dir: dir }
    }

    fn request(&self, line: &str) -> String {
        let mut stream = UnixStream::connect(&self.socket).expect("connect");
        stream.write_all(format!("{line}\n").as_bytes()).expect("write");
        let mut answer = String::new();
        let mut reader = BufReader::new(stream);
        reader.read_line(&mut answer).expect("read");
        // One request per connection: the server closes after answering.
        let mut after = String::new();
        assert_eq!(reader.read_line(&mut after).expect("read eof"), 0, "connection stays open");
        answer.trim_end().to_owned()
    }

    fn subscribe(&self, line: &str) -> Subscription {
        let mut stream = UnixStream::connect(&self.socket).expect("connect");
        stream.write_all(format!("{line}\n").as_bytes()).expect("write");
        stream.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        Subscription { reader: BufReader::new(stream) }
    }
}

impl Drop for Standin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Subscription {
    reader: BufReader<UnixStream>,
}

impl Subscription {
    fn next(&mut self) -> String {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("subscription line");
        line.trim_end().to_owned()
    }

    fn take(&mut self, count: usize) -> Vec<String> {
        (0..count).map(|_| self.next()).collect()
    }
}

fn replay(standin: &Standin, id: &str) {
    let (request, expected) = exchange(id);
    assert_eq!(normalise(&standin.request(&request)), normalise(&expected), "answer to {id}");
}

fn socket_path(s: &Standin) -> &Path {
    &s.socket
}

#[test]
fn replays_the_recorded_herdr_session_verbatim() {
    let standin = Standin::start(&[]);
    for id in ["1", "2", "2b"] {
        replay(&standin, id);
    }
    let mut sub_g = standin.subscribe(&tagged("subG", true)[0]);
    let expected_g = tagged("subG", false);
    assert_eq!(sub_g.next(), expected_g[0], "subG ack");

    for id in ["3", "4", "5", "6", "7", "8"] {
        replay(&standin, id);
    }
    let mut sub_a = standin.subscribe(&tagged("subA", true)[0]);
    let expected_a = tagged("subA", false);
    assert_eq!(sub_a.next(), expected_a[0], "subA ack");
    let mut sub_b = standin.subscribe(&tagged("subB", true)[0]);
    let expected_b: Vec<String> = tagged("subB", false).into_iter().filter(|l| !l.contains("pane.output_matched")).collect();
    assert_eq!(sub_b.next(), expected_b[0], "subB ack");
    replay(&standin, "s");

    // Section 5 without a shell: the input lands; short `recent` reads count blank rows.
    replay(&standin, "9");
    replay(&standin, "11");
    replay(&standin, "11b");

    // Sections 6, 7, 9, 10: agent states, derived `done`, release, listings, snapshot.
    for id in ["12", "13", "14", "15", "16", "18", "20", "21", "22", "23"] {
        replay(&standin, id);
    }
    for id in ["28", "30w", "30i", "34", "36", "37", "38", "40", "41"] {
        replay(&standin, id);
    }

    let got_g: Vec<String> = sub_g.take(expected_g.len() - 1).iter().map(|l| normalise(l)).collect();
    let want_g: Vec<String> = expected_g[1..].iter().map(|l| normalise(l)).collect();
    assert_eq!(got_g, want_g, "lifecycle subscription (subG)");
    let got_a = sub_a.take(expected_a.len() - 1);
    assert_eq!(got_a, expected_a[1..].to_vec(), "agent status subscription (subA)");
    let got_b = sub_b.take(expected_b.len() - 1);
    assert_eq!(got_b, expected_b[1..].to_vec(), "filtered subscription (subB)");
    let _ = socket_path(&standin);
}

#[test]
fn protocol_errors_answer_with_an_empty_id() {
    let standin = Standin::start(&[]);
    let (request, expected) = exchange("x");
    let answer = standin.request(&request);
    let prefix = expected.split("`ping`, `server.stop`, ").next().expect("prefix");
    assert!(answer.starts_with(prefix), "{answer}");
    assert!(answer.contains("`plugin.pane.close`"), "lists every method: {answer}");

    let not_json = entries().into_iter().position(|e| e.sent && e.text == "not json").expect("not json probe");
    let all = entries();
    assert_eq!(standin.request("not json"), all[not_json + 1].text);
}

#[test]
fn protocol_number_is_configurable_for_compatibility_tests() {
    let standin = Standin::start(&["--protocol", "19"]);
    let answer = standin.request(r#"{"id":"1","method":"ping","params":{}}"#);
    assert_eq!(
        answer,
        r#"{"id":"1","result":{"type":"pong","version":"0.8.2","protocol":19,"capabilities":{"live_handoff":true,"detached_server_daemon":true}}}"#
    );
}

#[test]
fn seed_creates_workspaces_and_agent_states_and_subscriptions_send_current_status_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = dir.path().join("seed.json");
    std::fs::write(
        &seed,
        r#"{"workspaces":[{"label":"alpha","tabs":[
            {"panes":[{"agent":"pi","state":"working","output":"building"},{"agent":"claude","state":"idle"}]},
            {"label":"bg","panes":[{"agent":"codex","state":"idle"}]}]}]}"#,
    )
    .expect("write seed");
    let standin = Standin::start(&["--seed", seed.to_str().expect("utf8")]);
    let agents = standin.request(r#"{"id":"a","method":"agent.list","params":{}}"#);
    let value: serde_json::Value = serde_json::from_str(&agents).expect("json");
    let summary: Vec<String> = value["result"]["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .map(|a| format!("{} {} {}", a["pane_id"], a["agent"], a["agent_status"]))
        .collect();
    // The bg-tab pane reported idle while unseen, so Herdr derives `done`.
    assert_eq!(summary, [r#""w1:p1" "pi" "working""#, r#""w1:p2" "claude" "idle""#, r#""w1:p3" "codex" "done""#]);
    let read = standin.request(r#"{"id":"r","method":"pane.read","params":{"pane_id":"w1:p1","source":"recent"}}"#);
    assert!(read.contains(r#""text":"building\n""#), "{read}");

    let mut sub = standin.subscribe(
        r#"{"id":"s","method":"events.subscribe","params":{"subscriptions":[{"type":"pane.agent_status_changed","pane_id":"w1:p1"}]}}"#,
    );
    assert_eq!(sub.next(), r#"{"id":"s","result":{"type":"subscription_started"}}"#);
    assert_eq!(
        sub.next(),
        r#"{"data":{"agent":"pi","agent_status":"working","pane_id":"w1:p1","workspace_id":"w1"},"event":"pane.agent_status_changed"}"#
    );
    // Junk can be injected for client robustness tests.
    standin.request(r#"{"id":"j","method":"standin.inject_lines","params":{"lines":["garbage {"]}}"#);
    assert_eq!(sub.next(), "garbage {");
}

#[test]
fn closing_panes_and_workspaces_publishes_lifecycle_events() {
    let standin = Standin::start(&[]);
    standin.request(r#"{"id":"1","method":"workspace.create","params":{"label":"a","focus":true}}"#);
    standin.request(r#"{"id":"2","method":"pane.split","params":{"target_pane_id":"w1:p1","direction":"right"}}"#);
    let mut sub = standin.subscribe(
        r#"{"id":"s","method":"events.subscribe","params":{"subscriptions":[{"type":"pane.closed"},{"type":"tab.closed"},{"type":"workspace.closed"}]}}"#,
    );
    sub.next();
    assert_eq!(standin.request(r#"{"id":"3","method":"pane.close","params":{"pane_id":"w1:p2"}}"#), r#"{"id":"3","result":{"type":"ok"}}"#);
    assert_eq!(sub.next(), r#"{"data":{"pane_id":"w1:p2","type":"pane_closed","workspace_id":"w1"},"event":"pane_closed"}"#);
    standin.request(r#"{"id":"4","method":"workspace.close","params":{"workspace_id":"w1"}}"#);
    assert_eq!(
        sub.take(3),
        [
            r#"{"data":{"pane_id":"w1:p1","type":"pane_closed","workspace_id":"w1"},"event":"pane_closed"}"#,
            r#"{"data":{"tab_id":"w1:t1","type":"tab_closed","workspace_id":"w1"},"event":"tab_closed"}"#,
            r#"{"data":{"type":"workspace_closed","workspace":null,"workspace_id":"w1"},"event":"workspace_closed"}"#,
        ]
    );
    assert_eq!(
        standin.request(r#"{"id":"5","method":"workspace.list","params":{}}"#),
        r#"{"id":"5","result":{"type":"workspace_list","workspaces":[]}}"#
    );
}
