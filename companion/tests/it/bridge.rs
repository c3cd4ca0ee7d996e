//! The JSON bridge (SPEC O2, O3; issue 13): detection, the batch's caps, the results
//! message, and the service over a real `state.db` — a call never runs twice, also across
//! replays, restarts of the service and a runtime that stopped in the middle of a call.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use companion::bridge::machine::{detect, Batch, BatchOutput, CallOutcome, Detection, Recorded, MAX_CALLS_PER_BATCH, MAX_IN_FLIGHT, MAX_RESULT_CHARS};
use companion::bridge::{BridgeService, ToolRunner};
use continuity_protocol::BridgeState;
use expect_test::expect;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

use super::support::{LineClient, TestHome};

/// A stand-in tool registry: counts every run per (tool, args), the most running at once,
/// and answers `{"echo": args}` (`big` answers a long string; `fail` an error).
#[derive(Default)]
struct CountingTools {
    runs: Mutex<BTreeMap<String, usize>>,
    running: AtomicUsize,
    most_running: AtomicUsize,
}

impl CountingTools {
    fn total(&self) -> usize {
        self.runs.lock().expect("the counter lock").values().sum()
    }
}

impl ToolRunner for CountingTools {
    async fn run_tool(&self, tool: String, args: Map<String, Value>) -> CallOutcome {
        {
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_running.fetch_max(now, Ordering::SeqCst);
            *self.runs.lock().expect("the counter lock").entry(format!("{tool} {}", Value::Object(args.clone()))).or_default() += 1;
            tokio::task::yield_now().await;
            self.running.fetch_sub(1, Ordering::SeqCst);
            match tool.as_str() {
                "big" => CallOutcome::Ok(json!({"text": "x".repeat(MAX_RESULT_CHARS + 10)})),
                "fail" => CallOutcome::Failed { code: "bad_request".to_owned(), message: "fail: no such thing".to_owned() },
                _ => CallOutcome::Ok(json!({"echo": args})),
            }
        }
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime")
}

/// A runtime, a temporary directory (kept alive by the caller) and a `state.db` path in it.
fn fresh() -> (tokio::runtime::Runtime, tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let db = dir.path().join("state.db");
    (rt(), dir, db)
}

fn calls_in(detection: &Detection) -> Vec<String> {
    match detection {
        Detection::Calls(calls) => calls.iter().map(|c| match &c.call {
            Ok((tool, args)) => format!("{} {tool} {}", c.index, Value::Object(args.clone())),
            Err(why) => format!("{} malformed: {why}", c.index),
        }).collect(),
        other => vec![format!("{other:?}")],
    }
}

#[test]
fn detection_finds_call_lines_with_balanced_braces_and_waits_for_an_unclosed_object() {
    let reply = "Let me look.\n{\"tool\":\"herdr_inspect\",\"args\":{}}\n  {\"tool\": \"herdr_call\", \"args\": {\"method\": \"pane.read\", \"params\": \"{\\\"pane_id\\\":\\\"w1:p1\\\"} }\"}}\nIn prose {\"tool\":\"not_a_line\"} is not a call.\n{\"tool\":\"herdr_methods\",\n \"args\":{\"query\":\"pane\"}}\n{\"tool\":7}";
    expect![[r#"
        [
            "0 herdr_inspect {}",
            "1 herdr_call {\"method\":\"pane.read\",\"params\":\"{\\\"pane_id\\\":\\\"w1:p1\\\"} }\"}",
            "2 herdr_methods {\"query\":\"pane\"}",
            "3 malformed: \"tool\" must be a tool's name as a non-empty string",
        ]
    "#]]
    .assert_debug_eq(&calls_in(&detect(reply, true)));
    // The same reply before the page finished: nothing runs yet (O2).
    assert_eq!(detect(reply, false), Detection::Streaming);
    // An object still open (a brace inside a string does not close it): still streaming,
    // even if the page says the reply ended.
    assert_eq!(detect("{\"tool\":\"herdr_inspect\",\"args\":{\"x\":\"}}\"", true), Detection::Streaming);
    assert_eq!(detect("Done: the tests pass.", true), Detection::Nothing);
    assert_eq!(detect("", false), Detection::Nothing);
}

#[test]
fn a_batch_runs_at_most_its_cap_four_at_a_time_and_answers_the_rest() {
    let lines: Vec<String> = (0..MAX_CALLS_PER_BATCH + 2).map(|i| format!("{{\"tool\":\"t\",\"args\":{{\"n\":{i}}}}}")).collect();
    let Detection::Calls(calls) = detect(&lines.join("\n"), true) else { panic!("calls expected") };
    let mut batch = Batch::new("zai:c1", "m1", calls);
    for key in batch.keys() {
        batch.recorded(key.index, Recorded::New);
    }
    let (mut ran, mut most, mut done) = (Vec::new(), 0, None);
    for _round in 0..100 {
        let mut started = Vec::new();
        while let Some(output) = batch.poll() {
            match output {
                BatchOutput::Run { index, .. } => started.push(index),
                BatchOutput::Done { text, .. } => done = Some(text),
            }
        }
        most = most.max(batch.in_flight());
        if done.is_some() {
            break;
        }
        for index in started {
            ran.push(index);
            batch.finished(index, CallOutcome::Ok(json!({"n": index})));
        }
    }
    let text = done.expect("a results message");
    assert_eq!(ran, (0..MAX_CALLS_PER_BATCH).collect::<Vec<_>>());
    assert_eq!(most, MAX_IN_FLIGHT);
    let over: Vec<&str> = text.lines().filter(|l| l.contains("\"not_run\"")).collect();
    assert_eq!(over.len(), 2, "{text}");
    assert!(over[0].contains("at most 24 calls of one reply run"), "{}", over[0]);
}

#[test]
fn the_results_message_of_a_reply_reads_as_its_calls_answers() {
    let (rt, _dir, db) = fresh();
    let bridge = BridgeService::open(&db).expect("state.db opens");
    let tools = CountingTools::default();
    let reply = "{\"tool\":\"herdr_inspect\",\"args\":{}}\n{\"tool\":\"fail\",\"args\":{\"x\":1}}\n{\"tool\":\"herdr_call\",\"args\":[1]}";
    let answer = rt.block_on(bridge.reply(&tools, "zai:c1", "m-1", reply, true, 1)).expect("the store answers");
    assert_eq!(answer.state, BridgeState::Results);
    let results = answer.results.expect("a results message");
    expect![[r#"
        HERDR_TOOL_RESULTS (3 calls)
        {"call":1,"ok":true,"result":{"echo":{}},"tool":"herdr_inspect"}
        {"call":2,"error":"bad_request","message":"fail: no such thing","ok":false,"tool":"fail"}
        {"call":3,"error":"malformed","message":"\"args\" must be a JSON object; write {\"tool\":\"<name>\",\"args\":{…}} on one line","ok":false}
        Write the next tool call lines, or answer the user."#]]
    .assert_eq(&results.text);
    assert!(results.delivery_id.starts_with("bridge:"), "{}", results.delivery_id);
    assert_eq!(tools.total(), 2, "the malformed line never runs");
}

#[test]
fn a_long_result_is_cut_at_its_cap_with_a_note() {
    let (rt, _dir, db) = fresh();
    let bridge = BridgeService::open(&db).expect("state.db opens");
    let results = rt.block_on(bridge.reply(&CountingTools::default(), "deepseek:c1", "m", "{\"tool\":\"big\",\"args\":{}}", true, 1)).expect("the store answers").results.expect("a results message");
    let line: Value = serde_json::from_str(results.text.lines().nth(1).expect("a result line")).expect("JSON");
    assert_eq!(line["result_truncated"].as_str().expect("a string").chars().count(), MAX_RESULT_CHARS);
    assert!(line["note"].as_str().expect("a string").starts_with("[truncated: the result was 60021 characters"), "{line}");
    assert!(line.get("result").is_none());
}

#[test]
fn a_replayed_reply_never_runs_again_and_gets_the_same_message_after_a_restart() {
    let (rt, _dir, db) = fresh();
    let tools = CountingTools::default();
    let reply = "{\"tool\":\"herdr_inspect\",\"args\":{}}\n{\"tool\":\"herdr_methods\",\"args\":{\"query\":\"pane\"}}";
    let first = rt.block_on(BridgeService::open(&db).expect("state.db opens").reply(&tools, "zai:c1", "m-1", reply, true, 1)).expect("the store answers");
    // A new service on the same state.db: the runtime restarted.
    let restarted = BridgeService::open(&db).expect("state.db opens");
    let again = rt.block_on(restarted.reply(&tools, "zai:c1", "m-1", reply, true, 2)).expect("the store answers");
    assert_eq!(again, first);
    assert_eq!(tools.total(), 2);
    // Confirmed delivered: a replay says so (the extension does not send it again).
    let id = first.results.as_ref().expect("a results message").delivery_id.clone();
    assert!(rt.block_on(restarted.delivered(&id, 3)).expect("the store answers"));
    let replay = rt.block_on(restarted.reply(&tools, "zai:c1", "m-1", reply, true, 4)).expect("the store answers");
    assert!(replay.results.expect("a results message").delivered);
    assert!(!rt.block_on(restarted.delivered("bridge:unknown", 5)).expect("the store answers"));
    // The same calls in another message of the chat are new calls.
    let other = rt.block_on(restarted.reply(&tools, "zai:c1", "m-2", reply, true, 6)).expect("the store answers");
    assert_ne!(other.results.expect("a results message").delivery_id, id);
    assert_eq!(tools.total(), 4);
}

#[test]
fn a_call_the_runtime_stopped_in_is_answered_interrupted_and_never_run_again() {
    let (rt, _dir, db) = fresh();
    let tools = CountingTools::default();
    let reply = "{\"tool\":\"herdr_inspect\",\"args\":{}}";
    {
        // The first request is dropped after its call was claimed (a request timeout or a
        // runtime that stopped): one poll claims and starts the call, then it is abandoned.
        let bridge = BridgeService::open(&db).expect("state.db opens");
        rt.block_on(async {
            let mut request = std::pin::pin!(bridge.reply(&tools, "zai:c1", "m-1", reply, true, 1));
            for _ in 0..50 {
                if futures_poll_once(request.as_mut()).await.is_some() || bridge.claimed_calls().await.expect("the store answers") == 1 {
                    break;
                }
            }
        });
        assert_eq!(rt.block_on(bridge.claimed_calls()).expect("the store answers"), 1);
    }
    let runs = tools.total();
    let answer = rt.block_on(BridgeService::open(&db).expect("state.db opens").reply(&tools, "zai:c1", "m-1", reply, true, 2)).expect("the store answers");
    assert_eq!(tools.total(), runs, "not run again");
    let text = answer.results.expect("a results message").text;
    assert!(text.contains("\"error\":\"interrupted\""), "{text}");
}

/// Polls `future` once; `Some` when it finished.
async fn futures_poll_once<F: Future + Unpin>(future: F) -> Option<F::Output> {
    let mut future = future;
    std::future::poll_fn(|cx| match std::pin::Pin::new(&mut future).poll(cx) {
        std::task::Poll::Ready(out) => std::task::Poll::Ready(Some(out)),
        std::task::Poll::Pending => std::task::Poll::Ready(None),
    })
    .await
}

#[derive(Debug, Clone)]
enum Op {
    /// The page reports reply `reply` of message `message`, finished or not.
    Reply { message: usize, reply: usize, finished: bool },
    /// The runtime restarts (a new service on the same state.db).
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..3usize, 0..6usize, any::<bool>()).prop_map(|(message, reply, finished)| Op::Reply { message, reply, finished }),
        1 => Just(Op::Restart),
    ]
}

/// Random replies: 0..30 call lines of a few tools (duplicates on purpose), sometimes with
/// prose, a malformed line or an unclosed object at the end.
fn replies() -> impl Strategy<Value = Vec<String>> {
    let line = prop_oneof![
        (0..3u8).prop_map(|n| format!("{{\"tool\":\"herdr_inspect\",\"args\":{{\"n\":{n}}}}}")),
        Just("{\"tool\":\"fail\",\"args\":{}}".to_owned()),
        Just("Some prose with {\"tool\": inside".to_owned()),
        Just("{\"tool\":\"\",\"args\":{}}".to_owned()),
    ];
    let reply = (proptest::collection::vec(line, 0..30), any::<bool>()).prop_map(|(lines, unclosed)| {
        let mut text = lines.join("\n");
        if unclosed {
            text.push_str("\n{\"tool\":\"herdr_inspect\",\"args\":{");
        }
        text
    });
    proptest::collection::vec(reply, 6)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Whatever the page reports, replays and restarts (O2): no call key runs twice, at
    /// most 24 calls of a reply run and at most 4 at once, nothing runs for an unfinished
    /// or unclosed reply, and a reply's results message never changes.
    #[test]
    fn never_twice_never_over_the_caps_and_the_message_is_stable(replies in replies(), ops in proptest::collection::vec(op(), 1..24)) {
        let rt = rt();
        let dir = tempfile::tempdir().expect("a temp dir");
        let db = dir.path().join("state.db");
        let tools = CountingTools::default();
        let mut bridge = BridgeService::open(&db).expect("state.db opens");
        let mut messages: BTreeMap<(usize, usize), (String, String)> = BTreeMap::new();
        let mut runs_per_key: BTreeMap<(usize, usize, usize), usize> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Restart => bridge = BridgeService::open(&db).expect("state.db opens"),
                Op::Reply { message, reply, finished } => {
                    // A message's text is fixed: message m always shows reply (m + reply) % 6
                    // once finished; before that, any prefix of it.
                    let text = &replies[(message + reply) % 6];
                    let shown = if finished { text.clone() } else { text.chars().take(text.chars().count() / 2).collect() };
                    let before = tools.total();
                    let answer = rt.block_on(bridge.reply(&tools, "zai:c1", &format!("m{message}"), &shown, finished, 1)).expect("the store answers");
                    let ran = tools.total() - before;
                    prop_assert!(ran <= MAX_CALLS_PER_BATCH);
                    if !finished || text.ends_with('{') {
                        prop_assert_eq!(ran, 0);
                        prop_assert_ne!(answer.state, BridgeState::Results);
                    }
                    if let Some(results) = answer.results {
                        let key = (message, (message + reply) % 6);
                        let seen = messages.entry(key).or_insert_with(|| (results.delivery_id.clone(), results.text.clone()));
                        prop_assert_eq!(&seen.0, &results.delivery_id);
                        prop_assert_eq!(&seen.1, &results.text);
                        if ran > 0 {
                            let lines = text.lines().filter(|l| l.starts_with("{\"tool\":\"herdr_inspect\"") || l.starts_with("{\"tool\":\"fail\"")).count();
                            for index in 0..lines.min(MAX_CALLS_PER_BATCH) {
                                *runs_per_key.entry((message, key.1, index)).or_default() += 1;
                                prop_assert!(runs_per_key[&(message, key.1, index)] <= 1, "call {index} of m{message} ran twice");
                            }
                        }
                    }
                }
            }
            prop_assert!(tools.most_running.load(Ordering::SeqCst) <= MAX_IN_FLIGHT);
        }
        // Every run was of a distinct (message, reply, position): no key ran twice.
        let claimed = rt.block_on(bridge.claimed_calls()).expect("the store answers") as usize;
        prop_assert_eq!(claimed, tools.total());
    }
}

// R: O2 — through the real runtime: `bridge.reply` runs a call through the tool registry
// (an unknown tool is refused as `tools.call` refuses it), a streaming reply runs nothing,
// and after a runtime restart the same reply gets the same message and runs nothing again.
#[test]
fn the_runtime_answers_bridge_reply_through_the_registry_and_the_same_after_a_restart() {
    let home = TestHome::new();
    let reply = "{\"tool\":\"herdr_methods\",\"args\":{\"query\":\"pane.read\"}}\n{\"tool\":\"herdr_exec\",\"args\":{}}";
    let params = |finished: bool| json!({"conversation": "zai:conv:c1", "message_id": "message-a3", "text": reply, "finished": finished});
    let first = {
        let mut runtime = home.start_runtime();
        let mut client = LineClient::connect(&home.socket());
        let streaming = client.call("b-1", "bridge.reply", params(false));
        assert_eq!(streaming["result"]["state"], "streaming", "{streaming}");
        let answer = client.call("b-2", "bridge.reply", params(true));
        let prompt = client.call("b-3", "bridge.prompt", json!({}));
        assert!(prompt["result"]["text"].as_str().is_some_and(|t| t.starts_with("[herdr-continuity JSON bridge v1]\n") && t.contains("- herdr_inspect: ")), "{prompt}");
        runtime.terminate();
        answer
    };
    let result = &first["result"];
    assert_eq!((result["state"].as_str(), result["calls"].as_u64()), (Some("results"), Some(2)), "{first}");
    let text = result["text"].as_str().expect("a results message");
    let lines: Vec<Value> = text.lines().skip(1).take(2).map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert_eq!(lines[0]["result"]["methods"][0]["method"], "pane.read", "{text}");
    assert_eq!((lines[1]["error"].as_str(), lines[1]["ok"].as_bool()), (Some("unknown_tool"), Some(false)), "{text}");
    let mut runtime = home.start_runtime();
    let mut client = LineClient::connect(&home.socket());
    let again = client.call("b-4", "bridge.reply", params(true));
    assert_eq!(again["result"], first["result"], "a replay after a restart: the same message, the same id");
    let delivered = client.call("b-5", "bridge.delivered", json!({"delivery_id": result["delivery_id"]}));
    assert_eq!(delivered["result"]["known"], true, "{delivered}");
    assert_eq!(client.call("b-6", "bridge.reply", params(true))["result"]["delivered"], true);
    runtime.terminate();
}
