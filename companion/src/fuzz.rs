//! Seeded fuzzing of everything untrusted bytes reach first (issue 23 item 3): the Native
//! Messaging framing ([`crate::framing`]), the socket's capped line reader, the request
//! decoder ([`crate::protocol::parse_request`]) and the whole request path of a runtime —
//! every [`Method`] with random and hostile params, answered by a real
//! [`crate::api::Router`] over real stores in a temporary home through the same
//! [`crate::runtime::connections::respond`] a connection uses.
//!
//! One generator ([`Rng`], splitmix64) serves the unit tests (a few thousand cases in
//! `cargo test`) and the bench (`cargo run --release -p companion --example fuzz`, run for
//! a fixed time by `npm run bench`, which reports executions per second and crashes). A
//! crash is a panic anywhere in a case (caught and counted) or an `internal` answer (a
//! handler panicked and the connection code caught it); either is a bug.
//!
//! Invariants checked per case: the framing yields the same frames however the stream is
//! split, and never a frame over its cap; the line reader yields the same lines however the
//! bytes arrive, never one over its cap; every request line gets exactly one answer, an
//! error or a result, carrying the request's id when it could be read.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use crate::api::{Router, Services};
use crate::framing::{Decoded, FrameDecoder};
use crate::log::RuntimeLog;
use crate::outbox::{Broadcast, ClientHandle};
use crate::protocol::Method;

/// A small deterministic generator (splitmix64): the same seed gives the same cases.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// True with probability 1 / `n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// One of `items` (which must not be empty).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// Keys the methods read, so random values reach the validators behind `unknown field`.
pub const KEYS: &[&str] = &[
    "protocol",
    "extension_version",
    "after_seq",
    "browser_session_ref",
    "pane_id",
    "workspace_id",
    "target",
    "text",
    "source",
    "lines",
    "conversation_url",
    "source_url",
    "conversation_id",
    "continuity_id",
    "project_id",
    "query",
    "limit",
    "message_id",
    "role",
    "observed_at",
    "title",
    "name",
    "arguments",
    "method",
    "params",
    "user_text",
    "assistant_text",
    "seq",
    "task_id",
    "report",
    "reply",
    "delivered",
    "prompt",
    "stages",
    "item_id",
    "after",
    "agent",
    "keys",
    "conversation",
    "finished",
    "auto",
    "human_turn",
    "batch_id",
    "call",
    "decision",
    "delivery_id",
];

/// Pieces hostile strings are made of: multi-byte characters that land on byte
/// boundaries, URL prefixes of every site, hex runs that reach the 32-digit Project id.
const PIECES: &[&str] = &[
    "é",
    "日",
    "\u{1F600}",
    "\u{0}",
    "\u{7f}",
    "\r\n",
    "\"",
    "\\",
    "/",
    "?",
    "#",
    "-",
    "_",
    "a",
    "0",
    "f",
    " ",
    "%",
    "https://chatgpt.com/",
    "https://www.chatgpt.com/",
    "https://chat.z.ai/",
    "https://chat.deepseek.com/",
    "c/",
    "g/g-p-",
    "a/chat/s/",
    "/c/x",
    "hc-",
    "chatgpt:conv:",
    "w1:p1",
    "user",
    "assistant",
    "recent",
    "visible",
];

/// A hostile string: pieces and runs glued together, sometimes long.
pub fn hostile_string(rng: &mut Rng) -> String {
    let mut out = String::new();
    if rng.one_in(3) {
        // The shape that killed the runtime, with the multi-byte char at any position.
        out.push_str("https://chatgpt.com/g/g-p-");
        // Half of them near byte 32, where the Project id's 32 hex digits end.
        let digits = if rng.one_in(2) { 28 + rng.below(5) } else { rng.below(40) };
        for _ in 0..digits {
            out.push(rng.pick(&['a', '0', 'f', 'e']));
        }
        out.push_str(rng.pick(&["é", "日", "\u{1F600}", "-", ""]));
        out.push_str(rng.pick(&["/c/x", "/c/x", "-slug/c/1", "/c/", "", "/c/é"]));
        return out;
    }
    for _ in 0..rng.below(12) {
        out.push_str(rng.pick(PIECES));
    }
    if rng.one_in(40) {
        out.push_str(&rng.pick(&["x", "é", "日"]).repeat(rng.below(200_000)));
    }
    out
}

/// A hostile JSON value up to `depth` levels deep.
pub fn hostile_value(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth == 0 { 8 } else { 10 }) {
        0..=2 => Value::String(hostile_string(rng)),
        3 => json!(rng.pick(&[i64::MIN, -1, 0, 1, 2, 10, 11, 1 << 53, i64::MAX])),
        4 => json!(rng.pick(&[u64::MAX, u64::MAX - 1, 1 << 63])),
        5 => serde_json::Number::from_f64(rng.pick(&[1e308, -1e308, 0.5, -0.0, 1e-300, 3.7])).map_or(Value::Null, Value::Number),
        6 => Value::Bool(rng.one_in(2)),
        7 => Value::Null,
        8 => Value::Array((0..rng.below(4)).map(|_| hostile_value(rng, depth - 1)).collect()),
        _ => Value::Object(hostile_params(rng, depth - 1)),
    }
}

/// Hostile params: a few of [`KEYS`] (and sometimes another key) with hostile values.
pub fn hostile_params(rng: &mut Rng, depth: usize) -> Map<String, Value> {
    let mut params = Map::new();
    for _ in 0..rng.below(7) {
        let key = if rng.one_in(8) { hostile_string(rng) } else { rng.pick(KEYS).to_owned() };
        params.insert(key, hostile_value(rng, depth));
    }
    params
}

/// Params of the right shape for `method`, where the fuzz knows one: mutated, they get past
/// the shape checks to the validators behind them (a URL's reader, an id's bounds).
pub fn example_params(method: Method) -> Option<Value> {
    Some(match method {
        Method::Hello => json!({"protocol": 2, "extension_version": "0.1.0"}),
        Method::ContinuitySearch => json!({"conversation_url": "https://chatgpt.com/c/x", "query": "route pool", "limit": 5}),
        Method::ContinuityResume => json!({"conversation_url": "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef/c/x"}),
        Method::ContinuityAppend => {
            json!({"conversation_id": "x", "message_id": "m1", "role": "user", "text": "hello", "observed_at": 1, "conversation_url": "https://chatgpt.com/c/x"})
        }
        Method::BrowserHandoffPrepare => json!({"continuity_id": "hc-0", "source_url": "https://chatgpt.com/c/x"}),
        Method::ContinuityResolve => json!({"conversation_id": "x"}),
        Method::ContinuityList => json!({"limit": 3}),
        Method::RetentionSet => json!({"limits": {"journal_turns": 5000, "inbox_days": 30}}),
        Method::InboxPending => json!({"browser_session_ref": "chatgpt:conv:x"}),
        Method::HerdrPaneRead => json!({"pane_id": "w1:p1", "source": "recent", "lines": 10}),
        Method::TaskDispatch => json!({"browser_session_ref": "chatgpt:conv:x", "target": "w1:p1", "text": "hi"}),
        Method::JudgeTurnEnd => json!({"user_text": "do it", "assistant_text": "Next I will run the tests."}),
        Method::GoalSet => json!({"browser_session_ref": "chatgpt:conv:x", "goal": "ship the parser"}),
        Method::GoalEvidence => json!({"browser_session_ref": "chatgpt:conv:x", "workspace_id": "w1"}),
        Method::ToolsCall => json!({"name": "herdr_methods", "arguments": {}}),
        Method::BridgePrompt => json!({"browser_session_ref": "zai:conv:fz"}),
        Method::BridgeReply => {
            json!({"conversation": "zai:conv:fz", "message_id": "m1", "text": "{\"tool\":\"herdr_inspect\",\"args\":{}}", "finished": true, "workspace_id": "w1", "auto": true, "human_turn": "h1"})
        }
        Method::BridgeDecide => json!({"conversation": "zai:conv:fz", "batch_id": "bridge:0123456789abcdef", "call": 1, "decision": "run"}),
        Method::BridgeDelivered => json!({"delivery_id": "bridge:0123456789abcdef"}),
        Method::ChatsReport => json!({"reporter": "e1", "chats": [{"browser_session_ref": "chatgpt:conv:x", "generating": true}]}),
        _ => return None,
    })
}

/// `example` with one or two fields replaced by hostile values, removed, or added.
fn mutate(rng: &mut Rng, example: Value) -> Value {
    let Value::Object(mut params) = example else { return example };
    for _ in 0..1 + rng.below(2) {
        let keys: Vec<String> = params.keys().cloned().collect();
        let key = if keys.is_empty() || rng.one_in(6) { rng.pick(KEYS).to_owned() } else { keys[rng.below(keys.len())].clone() };
        match rng.below(6) {
            0 => {
                params.remove(&key);
            }
            1 | 2 => {
                params.insert(key, hostile_value(rng, 1));
            }
            _ => {
                params.insert(key, Value::String(hostile_string(rng)));
            }
        }
    }
    Value::Object(params)
}

/// `depth` nested arrays or objects as text.
fn nested(rng: &mut Rng, depth: usize) -> Vec<u8> {
    let (open, close) = if rng.one_in(2) { ("[", "]") } else { ("{\"a\":", "}") };
    let mut out = open.repeat(depth).into_bytes();
    out.extend_from_slice(close.repeat(depth).as_bytes());
    out
}

/// One hostile request line (no newline): mostly requests of every method with hostile
/// params, and raw garbage, mutations of valid lines, invalid UTF-8 and deep nesting.
pub fn hostile_line(rng: &mut Rng) -> Vec<u8> {
    let method = if rng.one_in(20) { hostile_string(rng) } else { rng.pick(Method::ALL).as_str().to_owned() };
    let request = |rng: &mut Rng, method: &str| {
        let example = Method::parse(method).ok().and_then(example_params).filter(|_| rng.one_in(2));
        let params = match example {
            Some(example) => mutate(rng, example),
            None if rng.one_in(15) => hostile_value(rng, 2),
            None => Value::Object(hostile_params(rng, 2)),
        };
        let id = if rng.one_in(15) { hostile_value(rng, 0) } else { Value::String(format!("f{}", rng.below(1000))) };
        json!({"id": id, "method": method, "params": params}).to_string().into_bytes()
    };
    match rng.below(12) {
        0 => (0..rng.below(300)).map(|_| rng.next_u64() as u8).collect(),
        1 => {
            let depth = rng.below(20_000);
            let mut line = br#"{"id":"n","method":"ping","params":{"x":"#.to_vec();
            line.extend(nested(rng, depth));
            line.extend_from_slice(b"}}");
            line
        }
        2 => {
            // A valid line with a few bytes changed, cut or inserted.
            let mut line = request(rng, &method);
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(line.len() + 1);
                match rng.below(3) {
                    0 if at < line.len() => line[at] = rng.next_u64() as u8,
                    1 => line.truncate(at),
                    _ => {
                        let piece = rng.pick(PIECES).as_bytes().to_vec();
                        line.splice(at..at, piece);
                    }
                }
            }
            line
        }
        _ => request(rng, &method),
    }
}

/// Tools and methods a chat's call lines name (known, mutating, local, and unknown ones).
const BRIDGE_TOOLS: &[&str] = &["herdr_inspect", "herdr_methods", "herdr_call", "herdr_prompt", "herdr_ghost", ""];
const BRIDGE_METHODS: &[&str] = &[
    "pane.read",
    "pane.send_text",
    "pane.send_keys",
    "pane.send_input",
    "workspace.list",
    "session.snapshot",
    "continuity.search",
    "continuity.resume",
    "continuity.list",
    "continuity.resolve",
    "herdr_mcp.browser_handoff.prepare",
    "work_memory.resume",
    "work_memory.search",
    "work_memory.bind",
    "no.such",
];

/// A call line as a chat writes it (`tool` first: the bridge reads only lines that start so).
fn call_line(tool: &str, args: Value) -> String {
    format!("{{\"tool\":{},\"args\":{args}}}", Value::from(tool))
}

/// One call line a chat could write: a known tool with hostile args (a `herdr_call` with a
/// hostile params string of a known method), or a broken line.
pub fn bridge_call_line(rng: &mut Rng) -> String {
    if rng.one_in(4) {
        // A well-formed call (mutating or read-only), so batches reach approval and results.
        let text = hostile_string(rng);
        return match rng.below(3) {
            0 => call_line("herdr_prompt", json!({"text": text})),
            1 => call_line("herdr_inspect", json!({})),
            _ => call_line("herdr_call", json!({"method": "continuity.search", "params": json!({"query": text}).to_string()})),
        };
    }
    let tool = rng.pick(BRIDGE_TOOLS);
    let mut args = hostile_params(rng, 1);
    if tool == "herdr_call" || rng.one_in(4) {
        args.insert("method".to_owned(), Value::from(rng.pick(BRIDGE_METHODS)));
        let params = if rng.one_in(3) {
            Value::String(hostile_string(rng))
        } else {
            Value::String(Value::Object(hostile_params(rng, 1)).to_string())
        };
        args.insert("params".to_owned(), params);
    }
    if tool == "herdr_prompt" && rng.one_in(2) {
        args.insert("text".to_owned(), Value::String(hostile_string(rng)));
    }
    let line = call_line(tool, Value::Object(args));
    match rng.below(8) {
        0 => line[..line.char_indices().map(|(i, _)| i).nth(rng.below(line.chars().count() + 1)).unwrap_or(line.len())].to_owned(),
        1 => format!("{line}{}", rng.pick(&["}", "}}", "{", " trailing", ""])),
        2 => format!("{{\"tool\":\"{tool}\",\"args\":{}}}", "{\"a\":".repeat(rng.below(200)) + &"}".repeat(rng.below(200))),
        _ => line,
    }
}

/// A hostile assistant reply for the bridge: prose, call lines (many, fenced, unfenced,
/// broken), fences of every kind (some never closed), nested braces, multi-byte text and
/// sometimes a huge run.
pub fn bridge_reply_text(rng: &mut Rng) -> String {
    let mut text = String::new();
    if rng.one_in(4) {
        // Prose and well-formed calls only: most of these batches ask or run.
        text.push_str("I will do this.\n");
        for _ in 0..1 + rng.below(3) {
            let text_arg = hostile_string(rng);
            let line = match rng.below(3) {
                0 => call_line("herdr_prompt", json!({"text": text_arg})),
                1 => call_line("herdr_inspect", json!({})),
                _ => call_line("herdr_call", json!({"method": "continuity.search", "params": json!({"query": text_arg}).to_string()})),
            };
            text.push_str(&line);
            text.push('\n');
        }
        return text;
    }
    for _ in 0..rng.below(8) {
        match rng.below(7) {
            0 => text.push_str(&hostile_string(rng)),
            1 => text.push_str(rng.pick(&["```", "~~~", "```json", "  ```bash", "````", "~~~~ x", "`"])),
            2 => text.push_str(&"{".repeat(rng.below(50))),
            3 => {
                let most = if rng.one_in(10) { 60 } else { 4 };
                for _ in 0..rng.below(most) {
                    text.push_str(&bridge_call_line(rng));
                    text.push('\n');
                }
            }
            4 => text.push_str(rng.pick(&["日本語の説明", "\u{1F600}\u{200d}", "\u{feff}", "\r", "\t"])),
            _ => text.push_str(&bridge_call_line(rng)),
        }
        text.push('\n');
    }
    if rng.one_in(50) {
        text.push_str(&"x".repeat(rng.below(300_000)));
    }
    text
}

/// One bridge case through the router: a hostile reply of a few chats (Auto on or off),
/// then the user's decisions for what it asks (and some hostile ones), then the reply
/// again. Each answer is a result or an error, never `internal`; `Err` names a crash. Answers
/// how many requests it sent and what the first reply answered (its `state` or error code).
pub async fn bridge_case(router: &Router, client: &ClientHandle, rng: &mut Rng, log: &RuntimeLog) -> Result<(usize, String), String> {
    let respond = |line: Value| async move {
        let answer = crate::runtime::connections::respond(router, line.to_string().as_bytes(), client, Duration::from_secs(10), log).await;
        match answer.pointer("/error/code").and_then(Value::as_str) {
            Some("internal") => Err(format!("crash: {answer}")),
            Some(_) => Ok(answer),
            None if answer.get("result").is_some() => Ok(answer),
            None => Err(format!("an answer that is neither a result nor an error: {answer}")),
        }
    };
    let conversation = format!("{}:conv:fz{}", rng.pick(&["zai", "deepseek", "chatgpt"]), rng.below(3));
    let text = bridge_reply_text(rng);
    let reply = json!({"id": "r", "method": "bridge.reply", "params": {
        "conversation": conversation, "message_id": format!("m{}", rng.below(4)), "text": text,
        "finished": !rng.one_in(5), "workspace_id": rng.pick(&["w1", "w2"]), "auto": rng.one_in(2), "human_turn": format!("h{}", rng.below(40)),
    }});
    let answer = respond(reply.clone()).await?;
    let first =
        answer.pointer("/result/state").or_else(|| answer.pointer("/error/code")).and_then(Value::as_str).unwrap_or_default().to_owned();
    let batch = answer.pointer("/result/delivery_id").and_then(Value::as_str).map(str::to_owned);
    let pending: Vec<u64> = answer
        .pointer("/result/pending")
        .and_then(Value::as_array)
        .map(|p| p.iter().filter_map(|c| c["call"].as_u64()).collect())
        .unwrap_or_default();
    let mut calls = 1;
    let extra: Vec<u64> = (0..rng.below(2)).map(|_| rng.next_u64() % 70).collect();
    for call in pending.iter().copied().chain(extra) {
        let decision: Value = if rng.one_in(10) { hostile_value(rng, 0) } else { Value::from(rng.pick(&["run", "skip"])) };
        let batch_id = if rng.one_in(8) { Value::String(hostile_string(rng)) } else { Value::from(batch.clone()) };
        respond(json!({"id": "d", "method": "bridge.decide", "params": {"conversation": conversation, "batch_id": batch_id, "call": call, "decision": decision}})).await?;
        calls += 1;
    }
    let again = respond(reply).await?;
    if let Some(id) = again.pointer("/result/delivery_id").and_then(Value::as_str) {
        respond(json!({"id": "v", "method": "bridge.delivered", "params": {"delivery_id": id}})).await?;
        calls += 1;
    }
    Ok((calls + 1, first))
}

/// One framing case: random frames (some declared over the cap, some cut short) decoded
/// whole and in random chunks; `Err` names a broken invariant.
pub fn framing_case(rng: &mut Rng) -> Result<usize, String> {
    let cap = 1 + rng.below(4096);
    let mut stream = Vec::new();
    for _ in 0..rng.below(8) {
        let len = match rng.below(6) {
            0 => cap + rng.below(64),
            1 => u32::MAX as usize,
            _ => rng.below(cap + 1),
        };
        stream.extend_from_slice(&(len as u32).to_ne_bytes());
        let body_len = if len > cap && rng.one_in(2) { rng.below(4 * cap) } else { len.min(cap + 64) };
        stream.extend((0..body_len).map(|_| rng.next_u64() as u8));
    }
    if rng.one_in(3) {
        stream.extend((0..rng.below(16)).map(|_| rng.next_u64() as u8));
    }
    let mut whole = Vec::new();
    let mut decoder = FrameDecoder::new(cap);
    decoder.push(&stream, &mut whole);
    let whole_end = decoder.finish().is_ok();
    let mut chunked = Vec::new();
    let mut decoder = FrameDecoder::new(cap);
    let mut at = 0;
    while at < stream.len() {
        let take = 1 + rng.below(64.min(stream.len() - at));
        decoder.push(&stream[at..at + take], &mut chunked);
        at += take;
    }
    if whole != chunked || whole_end != decoder.finish().is_ok() {
        return Err(format!("the framing decoded a {}-byte stream differently in chunks", stream.len()));
    }
    if let Some(over) = whole.iter().find(|d| matches!(d, Decoded::Frame(body) if body.len() > cap)) {
        return Err(format!("a frame over the {cap}-byte cap was yielded: {over:?}"));
    }
    Ok(stream.len())
}

/// One line-reader case: random lines (some over the cap) read through buffers of random
/// sizes must give the same lines as a plain split, each at most the cap.
pub async fn lines_case(rng: &mut Rng) -> Result<usize, String> {
    use crate::runtime::connections::{read_capped_line, ClientLine};
    let cap = 1 + rng.below(256);
    let mut stream = Vec::new();
    for _ in 0..rng.below(10) {
        let len = if rng.one_in(4) { cap + 1 + rng.below(300) } else { rng.below(cap + 1) };
        stream.extend((0..len).map(|_| loop {
            let b = rng.next_u64() as u8;
            if b != b'\n' {
                break b;
            }
        }));
        stream.push(b'\n');
    }
    if rng.one_in(2) {
        stream.extend((0..rng.below(2 * cap)).map(|_| b'x'));
    }
    let expected: Vec<Option<Vec<u8>>> = {
        let mut parts: Vec<&[u8]> = stream.split(|b| *b == b'\n').collect();
        if parts.last().is_some_and(|last| last.is_empty()) {
            parts.pop();
        }
        parts.into_iter().map(|p| (p.len() <= cap).then(|| p.to_vec())).collect()
    };
    let mut reader = tokio::io::BufReader::with_capacity(1 + rng.below(300), stream.as_slice());
    let mut seen = Vec::new();
    loop {
        match read_capped_line(&mut reader, cap).await {
            Ok(Some(ClientLine::Line(line))) if line.len() > cap => {
                return Err(format!("a {}-byte line passed the {cap}-byte cap", line.len()))
            }
            Ok(Some(ClientLine::Line(line))) => seen.push(Some(line)),
            Ok(Some(ClientLine::TooLong)) => seen.push(None),
            Ok(None) => break,
            Err(e) => return Err(format!("reading from memory failed: {e}")),
        }
    }
    if seen != expected {
        return Err(format!("the line reader split a {}-byte stream into {} lines, expected {}", stream.len(), seen.len(), expected.len()));
    }
    Ok(stream.len())
}

/// A runtime's router over real stores in `root` (a temporary home): the event log, the
/// parent inbox, the journal, Work Memory and the judge; Herdr is a socket that does not
/// exist (its methods answer as with Herdr not running) and the JSON bridge is open on the
/// same `state.db` (its calls run through this router: Herdr's fail, local ones write only
/// to the temporary home).
pub async fn open_router(root: &Path) -> Router {
    let log = Arc::new(RuntimeLog::open(&root.join("runtime.log")));
    let herdr_socket = root.join("no-herdr.sock");
    let herdr_status = crate::herdr::spawn_monitor(herdr_socket.clone(), Duration::from_secs(3600), Duration::from_millis(50)).await;
    let db_path = root.join("state.db");
    let boot_id = "fuzz".to_owned();
    let events = Broadcast::new(16);
    let stream = crate::stream::start(db_path.clone(), boot_id.clone(), herdr_socket, Arc::clone(&log)).await;
    let inbox = crate::inbox::start(db_path.clone(), herdr_status.clone(), events, Arc::clone(&log), None).await;
    let work_memory = crate::work_memory::WorkMemory::open(&db_path).ok().map(Arc::new);
    let bridge = crate::bridge::BridgeService::open(&db_path).ok().map(Arc::new);
    let retention = crate::retention::Retention::open(&db_path).ok().map(Arc::new);
    let journal = crate::journal::start(db_path, Arc::clone(&log)).await;
    let judge = crate::judge::JudgeService::new(root.to_path_buf(), None).ok().map(Arc::new);
    let attribution = std::sync::Arc::new(crate::api::attribution::Attribution::without_pairs());
    Router::new(Services {
        herdr_status,
        boot_id,
        log,
        events: stream,
        inbox,
        home: root.to_path_buf(),
        judge,
        journal,
        retention,
        work_memory,
        bridge,
        attribution,
        write_tools: None,
    })
}

/// A client handle whose outbox is drained in the background (a subscription's events
/// never fill it).
pub fn drained_client() -> ClientHandle {
    let (outbox, mut lines) = mpsc::channel::<String>(1024);
    tokio::spawn(async move { while lines.recv().await.is_some() {} });
    ClientHandle::new(outbox)
}

/// What one request case showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answered {
    /// An error answer with this code.
    Error(String),
    /// A result.
    Result,
}

/// Answers `line` as a connection would and checks the answer's shape; `Err` names a
/// crash (an `internal` answer: a handler panicked) or a broken answer.
pub async fn request_case(router: &Router, client: &ClientHandle, line: &[u8], log: &RuntimeLog) -> Result<Answered, String> {
    let answer = crate::runtime::connections::respond(router, line, client, Duration::from_secs(10), log).await;
    let sent_id = serde_json::from_slice::<Value>(line).ok().and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_owned));
    let id = answer.get("id").and_then(Value::as_str).unwrap_or_default();
    if let Some(sent) = sent_id.filter(|sent| continuity_protocol::limits::is_request_id(sent)) {
        if id != sent {
            return Err(format!("the answer's id {id:?} is not the request's {sent:?}"));
        }
    }
    match (answer.get("result"), answer.pointer("/error/code").and_then(Value::as_str)) {
        (Some(_), None) => Ok(Answered::Result),
        (None, Some("internal")) => Err(format!("crash: {}", answer.pointer("/error/message").and_then(Value::as_str).unwrap_or_default())),
        (None, Some(code)) => Ok(Answered::Error(code.to_owned())),
        _ => Err(format!("an answer that is neither a result nor an error: {answer}")),
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;
    use super::*;
    use proptest::prelude::{any, prop_assert, proptest, ProptestConfig};

    /// Seeds from proptest (shrinking is of no use for a seed; the failing seed is shown).
    fn seeds(cases: u32) -> ProptestConfig {
        ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
    }

    proptest! {
        #![proptest_config(seeds(3000))]
        /// The framing: the same frames however the stream is split; never one over the cap.
        #[test]
        fn the_framing_decodes_any_stream_the_same_in_any_chunks(seed in any::<u64>()) {
            let mut rng = Rng::new(seed);
            prop_assert!(framing_case(&mut rng).is_ok(), "seed {seed}: {:?}", framing_case(&mut Rng::new(seed)));
        }

        /// The request decoder: any line is a request or a refusal with a reason, never a
        /// panic (a panic fails the test).
        #[test]
        fn the_request_decoder_reads_or_refuses_any_line(seed in any::<u64>()) {
            let mut rng = Rng::new(seed);
            let line = hostile_line(&mut rng);
            match crate::protocol::parse_request(&line) {
                Ok(request) => prop_assert!(!request.id.is_empty()),
                Err(bad) => prop_assert!(!bad.reason.is_empty()),
            }
        }

        /// The conversation URL reader refuses or reads any string; never a panic.
        #[test]
        fn conversation_urls_are_read_or_refused_never_a_panic(seed in any::<u64>()) {
            let url = hostile_string(&mut Rng::new(seed));
            if let Ok(read) = crate::journal::ConversationUrl::parse(&url) {
                prop_assert!(read.project_id.as_deref().is_none_or(|p| p.len() == 36 && p.is_ascii()));
            }
        }
    }

    /// The socket's line reader over 1 500 random streams.
    #[tokio::test]
    async fn the_line_reader_splits_any_stream_the_same_in_any_buffer_size() {
        for seed in 0..1500 {
            lines_case(&mut Rng::new(seed)).await.unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        }
    }

    /// Every method with random hostile params (and raw garbage lines) through a real
    /// router in-process: each gets one answer, an error or a result, and no handler
    /// panics. 2 500 requests; the bench runs the same for a fixed time.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_method_answers_random_hostile_requests_without_a_crash() {
        let home = tempfile::tempdir().expect("tempdir");
        let router = open_router(home.path()).await;
        let client = drained_client();
        let log = RuntimeLog::open(&home.path().join("fuzz.log"));
        let mut rng = Rng::new(23);
        let mut methods_answered = std::collections::BTreeSet::new();
        for n in 0..2500 {
            let line = hostile_line(&mut rng);
            match request_case(&router, &client, &line, &log).await {
                Ok(_) => {
                    if let Ok(request) = crate::protocol::parse_request(&line) {
                        methods_answered.insert(request.method.as_str());
                    }
                }
                Err(e) => panic!("case {n}: {e}\nline: {}", String::from_utf8_lossy(&line[..line.len().min(2000)])),
            }
        }
        let every: std::collections::BTreeSet<&str> = Method::ALL.iter().map(|m| m.as_str()).collect();
        assert_eq!(methods_answered, every, "every method was reached");
    }

    /// The JSON bridge with hostile replies (fences, nested braces, unicode, huge texts,
    /// many call lines, call lines with hostile args) and hostile decisions, through a real
    /// router whose bridge is open: every request is answered, never `internal`, never a
    /// panic; some batches reach approval, some results.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_bridge_answers_hostile_replies_and_decisions_without_a_crash() {
        let home = tempfile::tempdir().expect("tempdir");
        let router = open_router(home.path()).await;
        let client = drained_client();
        let log = RuntimeLog::open(&home.path().join("fuzz.log"));
        let mut states = std::collections::BTreeSet::new();
        let line = json!({"id": "s", "method": "bridge.reply", "params": {"conversation": "zai:conv:fz", "message_id": "m1", "text": "{\"tool\":\"herdr_prompt\",\"args\":{\"text\":\"x\"}}", "finished": true, "workspace_id": "w1", "auto": true, "human_turn": "h1"}});
        let answer =
            crate::runtime::connections::respond(&router, line.to_string().as_bytes(), &client, Duration::from_secs(10), &log).await;
        assert_eq!(answer.pointer("/result/state").and_then(Value::as_str), Some("approval"), "the bridge is open and asks: {answer}");
        for seed in 0..300 {
            let mut rng = Rng::new(seed);
            let (_, first) = bridge_case(&router, &client, &mut rng, &log).await.unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            states.insert(first);
        }
        for state in ["nothing", "approval", "results"] {
            assert!(states.contains(state), "some reply reached {state}: {states:?}");
        }
    }
}
