//! `herdr-companion mcp` on stdio driven the way OpenAI's Secure MCP Tunnel
//! (`tunnel-client --mcp.command …`) drives it (issue 24): the tunnel spawns the command
//! once and writes every connector request it receives onto that one pipe, one JSON-RPC
//! line at a time, with no session of its own. So the server sees stateless 2026-07-28
//! requests that carry their protocol version and client capabilities in `_meta` and never
//! an `initialize`; legacy `initialize` handshakes (2025-06-18, 2025-11-25) from other
//! connector sessions on the same pipe, repeated; and legacy requests whose `initialize`
//! went to an earlier process (the tunnel restarted). Each request is judged on its own.

use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::mcp::{world, World};
use crate::support::{ChildGuard, PROCESS_WAIT};

// The runtime with the stand-in behind it (workspace `alpha`, w1, idle agents in w1:p1
// and w1:p2) is mcp.rs's world.

/// `herdr-companion mcp` on stdio, written to and read from as raw JSON-RPC lines, as
/// tunnel-client's stdio binding does.
struct StdioPipe {
    _process: ChildGuard,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl StdioPipe {
    fn spawn(world: &World) -> Self {
        let mut command = world.home.command(&["mcp"]);
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut process = ChildGuard::spawn(&mut command, "herdr-companion mcp");
        let stdin = process.child.stdin.take().expect("stdin");
        let stdout = process.child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self { _process: process, stdin, lines }
    }

    fn send(&mut self, message: &Value) {
        self.stdin.write_all(format!("{message}\n").as_bytes()).expect("write to the server");
        self.stdin.flush().expect("flush");
    }

    /// The answer to request `id` (notifications in between are skipped).
    fn answer(&mut self, id: &Value) -> Value {
        let deadline = Instant::now() + PROCESS_WAIT;
        loop {
            let line = self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| panic!("no answer to request {id} within {PROCESS_WAIT:?}"));
            let value: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("the server wrote a line that is not JSON ({e}): {line}"));
            if value["id"] == *id {
                return value;
            }
        }
    }

    fn request(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.answer(&id)
    }
}

/// A 2026-07-28 request's `_meta`, as ChatGPT sends it through the tunnel (its own
/// `openai/*` keys included).
fn meta_2026() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "openai-mcp", "version": "1.0.0"},
        "openai/session": "v1/tunnel-conversation-1",
        "openai/subject": "v1/user-1",
        "openai/userAgent": "ChatGPT/1.2026.330"
    })
}

fn tool_names(answer: &Value) -> Vec<String> {
    let tools = answer["result"]["tools"].as_array().unwrap_or_else(|| panic!("not a tools/list result: {answer}"));
    tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()
}

/// Every registry tool, in `tools/list` order.
fn all_tools() -> Vec<&'static str> {
    continuity_protocol::ToolName::ALL.iter().map(|t| t.as_str()).collect()
}

fn initialize(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "openai-mcp", "version": "1.0.0"}})
}

#[test]
fn stateless_2026_requests_on_stdio_list_the_tools_and_dispatch_without_initialize_or_session() {
    let world = world();
    let mut pipe = StdioPipe::spawn(&world);

    // No initialize: the first request is a stateless tools/list.
    let listed = pipe.request(json!("tl-1"), "tools/list", json!({"_meta": meta_2026()}));
    assert_eq!(tool_names(&listed), all_tools(), "{listed}");

    let inspect = pipe.request(json!(7), "tools/call", json!({"name": "herdr_inspect", "arguments": {}, "_meta": meta_2026()}));
    let panes = &inspect["result"]["structuredContent"]["panes"];
    assert!(panes.as_array().is_some_and(|ps| ps.iter().any(|p| p["pane_id"] == "w1:p1" && p["agent"] == "bot")), "{inspect}");

    let session_ref = "chatgpt:conv:tunnel-stdio";
    let dispatched = pipe.request(
        json!(8),
        "tools/call",
        json!({"name": "herdr_prompt", "_meta": meta_2026(), "arguments": {
        "browser_session_ref": session_ref, "target": "w1:p1", "text": "run the tests and fix what fails"}}),
    );
    let task = &dispatched["result"]["structuredContent"];
    assert_eq!((dispatched["result"]["isError"].as_bool(), task["state"].as_str()), (Some(false), Some("running")), "{dispatched}");
    let task_id = task["task_id"].as_str().expect("task_id").to_owned();
    world.standin.report("w1:p1", "working");
    world.wait_for_pane("w1:p1", "working");
    world.standin.report("w1:p1", "idle");
    let pending =
        world.poll("inbox.pending", json!({"browser_session_ref": session_ref}), |r| r["items"].as_array().is_some_and(|i| !i.is_empty()));
    assert_eq!(
        (pending["items"][0]["task_id"].as_str(), pending["items"][0]["state"].as_str()),
        (Some(task_id.as_str()), Some("completed"))
    );

    // server/discover names the versions this server speaks.
    let discovered = pipe.request(json!("d"), "server/discover", json!({"_meta": meta_2026()}));
    let versions = dispatched_versions(&discovered);
    for version in ["2025-06-18", "2025-11-25", "2026-07-28"] {
        assert!(versions.iter().any(|v| v == version), "{version} missing from {discovered}");
    }

    // A 2026-07-28 request without its required _meta is refused with what is missing;
    // an unknown version with the supported ones. The pipe stays usable.
    let no_caps = pipe.request(json!(9), "tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}));
    assert!(no_caps["error"]["message"].as_str().is_some_and(|m| m.contains("clientCapabilities")), "{no_caps}");
    let mut unknown_meta = meta_2026();
    unknown_meta["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let unknown = pipe.request(json!(10), "tools/list", json!({"_meta": unknown_meta}));
    assert!(unknown["error"].is_object() && unknown.to_string().contains("2026-07-28"), "{unknown}");

    // Another connector session on the same pipe speaks the legacy handshake, and its
    // requests carry no _meta: each is answered (stdio is not one session).
    for (id, asked, answered) in [(11, "2025-06-18", "2025-06-18"), (12, "2025-11-25", "2025-11-25"), (13, "2026-07-28", "2025-11-25")] {
        let init = pipe.request(json!(id), "initialize", initialize(asked));
        assert_eq!(init["result"]["protocolVersion"].as_str(), Some(answered), "initialize {asked}: {init}");
        assert_eq!(init["result"]["serverInfo"]["name"].as_str(), Some("herdr-companion"), "{init}");
        pipe.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let legacy = pipe.request(json!(id * 10), "tools/list", json!({}));
        assert_eq!(tool_names(&legacy), all_tools(), "legacy tools/list after initialize {asked}: {legacy}");
        // ChatGPT's legacy tool calls carry only its own `openai/*` keys in `_meta`.
        let call = pipe.request(
            json!(id * 10 + 1),
            "tools/call",
            json!({"name": "herdr_inspect", "arguments": {},
            "_meta": {"openai/session": "v1/legacy-conversation", "openai/subject": "v1/user-1"}}),
        );
        assert_eq!(call["result"]["isError"].as_bool(), Some(false), "legacy tools/call after initialize {asked}: {call}");
    }
    // And stateless requests still work after them.
    let again = pipe.request(json!("tl-2"), "tools/list", json!({"_meta": meta_2026()}));
    assert_eq!(tool_names(&again), all_tools(), "{again}");
}

fn dispatched_versions(discovered: &Value) -> Vec<String> {
    let versions = discovered["result"]["supportedVersions"].as_array().unwrap_or_else(|| panic!("not a discover result: {discovered}"));
    versions.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()
}

/// The tunnel restarted (a new `herdr-companion mcp` process) while ChatGPT keeps its
/// legacy connector session: its next requests come without `initialize` and without
/// `_meta`. They are answered as that legacy session's, not refused.
#[test]
fn a_legacy_request_whose_initialize_went_to_an_earlier_process_is_answered() {
    let world = world();
    let mut pipe = StdioPipe::spawn(&world);
    let listed = pipe.request(json!(1), "tools/list", json!({}));
    assert_eq!(tool_names(&listed), all_tools(), "{listed}");
    let inspect = pipe.request(json!(2), "tools/call", json!({"name": "herdr_inspect", "arguments": {}}));
    assert_eq!(inspect["result"]["isError"].as_bool(), Some(false), "{inspect}");
    let ping = pipe.request(json!(3), "ping", json!({}));
    assert!(ping["result"].is_object(), "{ping}");
}

/// One raw POST to `/mcp` as tunnel-client's HTTP binding forwards it: no `Mcp-Session-Id`,
/// the `Authorization` value read from the header file. Returns the status and the JSON-RPC
/// answer (from a JSON body or the SSE `data:` line that carries it).
fn forward(port: u16, authorization: &str, extra: &[(&str, &str)], body: &Value) -> (u16, Value) {
    use std::io::Read;
    let body = body.to_string();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(PROCESS_WAIT)).expect("timeout");
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nAuthorization: {authorization}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    stream.write_all(format!("{head}\r\n{body}").as_bytes()).expect("write");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"));
    let json = answer
        .lines()
        .filter_map(|line| line.strip_prefix("data:").map(str::trim).or_else(|| line.starts_with('{').then_some(line)))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .find(|v| v.get("id").is_some())
        .unwrap_or(Value::Null);
    (status, json)
}

/// tunnel-client's HTTP binding (`--mcp.server-url http://127.0.0.1:PORT/mcp
/// --mcp.extra-headers "Authorization: file:<home>/mcp-authorization"`): the header file
/// `mcp --http` writes holds the whole value; stateless 2026-07-28 requests without a
/// session id are answered; without the header they are refused.
#[test]
fn mcp_http_answers_stateless_requests_forwarded_with_the_header_file() {
    let world = world();
    let server = crate::mcp::start_http(&world);
    let port = server.port;
    let header_file = world.home.home().join("mcp-authorization");
    let text = std::fs::read_to_string(&header_file).expect("mcp --http writes the header file");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&header_file).expect("meta").permissions());
    assert_eq!(mode & 0o777, 0o600, "the header file is private");
    // tunnel-client trims one trailing line ending from a file: value.
    let authorization = text.strip_suffix('\n').expect("one line");
    assert!(authorization.starts_with("Bearer ") && authorization.len() > "Bearer ".len() + 31, "the whole header value");

    // The 2026-07-28 HTTP headers (SEP-2243) are required: rmcp refuses a request without them.
    let version = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/list")];
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta_2026()}});
    let (status, listed) = forward(port, authorization, &version, &list);
    assert_eq!(status, 200, "{listed}");
    assert_eq!(tool_names(&listed), all_tools(), "{listed}");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "herdr_inspect", "arguments": {}, "_meta": meta_2026()}});
    let (status, inspected) = forward(
        port,
        authorization,
        &[("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "herdr_inspect")],
        &call,
    );
    assert_eq!((status, inspected["result"]["isError"].as_bool()), (200, Some(false)), "{inspected}");
    let (status, _) = forward(port, "Bearer wrong", &version, &list);
    assert_eq!(status, 401, "a wrong bearer is refused");
}

/// `herdr-companion doctor` checks a running `mcp --http` (it answers, and refuses a request
/// without a token), prints the tunnel-client lines with the header file in `file:` form,
/// and never the token; the server's record is gone once it stopped.
#[test]
fn doctor_checks_a_running_mcp_http_and_never_prints_the_token() {
    let world = world();
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
    let address = format!("127.0.0.1:{port}");
    let mut command = world.home.command(&["mcp", "--http", &address]);
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let mut server = ChildGuard::spawn(&mut command, "herdr-companion mcp --http");
    let record = world.home.home().join("run/mcp-http.json");
    let deadline = Instant::now() + PROCESS_WAIT;
    while !(record.exists() && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()) {
        assert!(Instant::now() < deadline, "mcp --http {address} never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    let token = std::fs::read_to_string(world.home.home().join("mcp-authorization")).expect("header file");
    let token = token.trim().strip_prefix("Bearer ").expect("a bearer").to_owned();

    let doctor = crate::support::output_within(&mut world.home.command(&["doctor"]), "doctor");
    let report = String::from_utf8_lossy(&doctor.stdout);
    assert!(report.contains(&format!("answers at http://{address}/mcp and refuses a request without a token (401)")), "{report}");
    assert!(report.contains("mcp-authorization holds the bearer header for tunnel-client"), "{report}");
    assert!(report.contains("--mcp.command") && report.contains("Authorization: file:"), "{report}");
    assert!(!report.contains(&token), "the doctor printed the token:\n{report}");

    crate::support::send_sigterm(server.child.id());
    assert!(server.wait_within(PROCESS_WAIT).success(), "mcp --http stops on SIGTERM");
    assert!(!record.exists(), "the record is removed when the server stops");
    let after = crate::support::output_within(&mut world.home.command(&["doctor"]), "doctor");
    assert!(!String::from_utf8_lossy(&after.stdout).contains("mcp --http (pid"), "no server, no server check");
}

/// The README's own-tunnel setup (`mcp --http 127.0.0.1:PORT --public-url https://…`): the
/// server answers only its public `Host`, so the doctor probes with that host and prefix,
/// passes, and names the public MCP URL for ChatGPT. A server behind another public URL
/// (403 to that Host) still fails the check.
#[test]
fn doctor_passes_a_running_mcp_http_with_a_public_url_and_fails_a_server_for_another_host() {
    let world = world();
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
    let address = format!("127.0.0.1:{port}");
    let public = "https://herdr.example.com/box";
    let mut command = world.home.command(&["mcp", "--http", &address, "--public-url", public]);
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let mut server = ChildGuard::spawn(&mut command, "herdr-companion mcp --http --public-url");
    let record = world.home.home().join("run/mcp-http.json");
    let deadline = Instant::now() + PROCESS_WAIT;
    while !(record.exists() && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()) {
        assert!(Instant::now() < deadline, "mcp --http {address} never listened");
        std::thread::sleep(Duration::from_millis(50));
    }

    let doctor = crate::support::output_within(&mut world.home.command(&["doctor"]), "doctor");
    let report = String::from_utf8_lossy(&doctor.stdout);
    let ok = format!("ok    mcp --http (pid {}) answers at http://{address}/box/mcp as {public}/mcp (Host herdr.example.com) and refuses a request without a token (401)", server.child.id());
    assert!(report.contains(&ok), "{report}");
    assert!(!report.contains("answers 403"), "{report}");
    assert!(
        report.contains(&format!("serves the public URL {public}; in ChatGPT the MCP server URL is {public}/mcp with OAuth")),
        "{report}"
    );

    // The record names another public host: that server answers 403 to it, and the check fails.
    let text = std::fs::read_to_string(&record).expect("record");
    std::fs::write(&record, text.replace("herdr.example.com", "other.example.com")).expect("rewrite");
    let wrong = crate::support::output_within(&mut world.home.command(&["doctor"]), "doctor");
    let report = String::from_utf8_lossy(&wrong.stdout);
    assert!(
        report.contains(&format!(
            "FAIL  http://{address}/box/mcp answers 403 to a request without a token as https://other.example.com/box/mcp"
        )),
        "{report}"
    );
    assert_eq!(wrong.status.code(), Some(1), "{report}");

    crate::support::send_sigterm(server.child.id());
    assert!(server.wait_within(PROCESS_WAIT).success(), "mcp --http stops on SIGTERM");
}
