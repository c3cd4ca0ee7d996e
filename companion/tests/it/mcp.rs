//! `herdr-companion mcp` (issue 13; SPEC I1) driven by a real MCP client — the official
//! Rust SDK's (`rmcp`) — over stdio and over streamable HTTP, against the real runtime and
//! the real `herdr-standin`: initialize, list the tools, `herdr_prompt` → a parent-inbox
//! task that the agent's settle ends; and the HTTP server's refusals (no token, another
//! Host or Origin, an oversize body) and argument checks (oversize text).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{ChildStderr, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

use crate::support::{bin, ChildGuard, LineClient, RuntimeProcess, Standin, TestHome, PROCESS_WAIT};

/// The runtime with the stand-in behind it: workspace `alpha` (w1) with idle agents `bot`
/// in panes w1:p1 and w1:p2.
pub(crate) struct World {
    pub(crate) home: TestHome,
    pub(crate) standin: Standin,
    _runtime: RuntimeProcess,
}

pub(crate) fn world() -> World {
    let mut home = TestHome::new();
    home.herdr_socket = home.dir.path().join("herdr.sock");
    let seed = json!({"workspaces": [{"label": "alpha", "tabs": [{"panes": [
        {"agent": "bot", "state": "idle"}, {"agent": "bot", "state": "idle"}]}]}]});
    let standin = Standin::start(&home.herdr_socket, Some(&seed), &[]);
    let runtime = home.start_runtime();
    let world = World { home, standin, _runtime: runtime };
    world.wait_for_pane("w1:p1", "idle");
    world
}

impl World {
    /// Polls the runtime (at most 10 s) until `check` holds for the result of `method`.
    pub(crate) fn poll(&self, method: &str, params: Value, check: impl Fn(&Value) -> bool) -> Value {
        let mut client = LineClient::connect(&self.home.socket());
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut n = 0;
        loop {
            n += 1;
            let answer = client.call(&format!("t{n}"), method, params.clone());
            if check(&answer["result"]) {
                return answer["result"].clone();
            }
            assert!(Instant::now() < deadline, "{method} never got there; last answer {answer}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn wait_for_pane(&self, pane: &str, status: &str) {
        self.poll("herdr.panes", json!({}), |r| {
            r["panes"].as_array().is_some_and(|ps| ps.iter().any(|p| p["pane_id"] == pane && p["agent_status"] == status))
        });
    }

    /// The agent in w1:p1 takes the prompt, works and settles; returns the chat's one
    /// pending inbox item.
    fn agent_works_and_settles(&self, session_ref: &str) -> Value {
        self.standin.report("w1:p1", "working");
        self.wait_for_pane("w1:p1", "working");
        self.standin.report("w1:p1", "idle");
        let pending = self.poll("inbox.pending", json!({"browser_session_ref": session_ref}), |r| {
            r["items"].as_array().is_some_and(|items| !items.is_empty())
        });
        let items = pending["items"].as_array().cloned().unwrap_or_default();
        assert_eq!(items.len(), 1, "exactly one terminal task for {session_ref}: {pending}");
        items[0].clone()
    }

    /// `herdr-companion mcp ARGS` with this world's environment.
    fn mcp_command(&self, args: &[&str]) -> Command {
        let mut command = self.home.command(&["mcp"]);
        command.args(args);
        command
    }
}

type Client = RunningService<RoleClient, ()>;

async fn call(client: &Client, tool: &'static str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else { panic!("arguments must be an object") };
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("tools/call {tool} failed: {e}"))
}

fn error_text(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "expected a tool error, got {result:?}");
    serde_json::to_value(&result.content).map(|v| v.to_string()).unwrap_or_default()
}

/// What both transports must do: the server names itself, lists the four tools, and
/// `herdr_prompt` records a running task at once that the agent's settle completes (I1).
async fn lists_the_tools_and_a_prompt_reaches_the_inbox(client: &Client, world: &World, session_ref: &str) {
    let server = client.peer_info().expect("initialized");
    assert_eq!(server.server_info.as_ref().map(|i| i.name.as_str()), Some("herdr-companion"));

    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names[..4], ["herdr_prompt", "herdr_call", "herdr_methods", "herdr_inspect"]);
    let read_only: Vec<bool> = tools.iter().map(|t| t.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true)).collect();
    assert_eq!(read_only[..4], [false, false, true, true], "herdr_methods and herdr_inspect are read-only");
    for (name, read_only) in names.iter().zip(&read_only) {
        assert_eq!(
            *read_only,
            continuity_protocol::ToolName::parse(name).is_ok_and(|t| t.is_read_only()),
            "{name}'s MCP annotation is its class"
        );
    }
    let prompt_schema = Value::Object((*tools[0].input_schema).clone());
    assert_eq!(prompt_schema["required"], json!(["target", "text"]), "the ref may be left out (attributed on evidence)");
    assert!(
        prompt_schema["properties"]["browser_session_ref"]["description"].as_str().is_some_and(|d| d.contains("the value after ref=")),
        "the schema says where the ref is"
    );
    let instructions = server.instructions.as_deref().unwrap_or_default();
    assert!(instructions.contains("take it from the last line of any message the herdr-continuity extension typed"), "{instructions}");
    assert!(instructions.contains("not evidence that the work succeeded"), "{instructions}");
    // The resume rule (C4): on "continue" the planner resolves or searches before it resumes,
    // and resumes on its own only what identity singles out.
    let (resolve, search, resume) =
        (instructions.find("continuity.resolve"), instructions.find("continuity.search"), instructions.find("continuity.resume"));
    assert!(
        resolve.zip(resume).is_some_and(|(a, b)| a < b) && search.zip(resume).is_some_and(|(a, b)| a < b),
        "resolve/search before resume: {instructions}"
    );
    for word in ["继续", "接着", "恢复上次", "unique_exact", "confirmation_required", "never invent an id"] {
        assert!(instructions.contains(word), "the instructions name {word}: {instructions}");
    }
    let call_description = tools[1].description.as_deref().unwrap_or_default();
    assert!(call_description.contains("continuity.resolve or continuity.search first"), "{call_description}");

    let inspect = call(client, "herdr_inspect", json!({})).await;
    let panes = inspect.structured_content.as_ref().map(|s| s["panes"].clone()).unwrap_or_default();
    assert!(panes.as_array().is_some_and(|ps| ps.iter().any(|p| p["pane_id"] == "w1:p1" && p["agent"] == "bot")), "{inspect:?}");

    let dispatched = call(
        client,
        "herdr_prompt",
        json!({
            "browser_session_ref": session_ref, "target": "w1:p1", "text": "run the tests and fix what fails", "turn_id": "turn-3",
        }),
    )
    .await;
    assert_eq!(dispatched.is_error, Some(false), "{dispatched:?}");
    let task = dispatched.structured_content.clone().expect("structured result");
    assert_eq!(
        (task["state"].as_str(), task["workspace_id"].as_str(), task["turn_id"].as_str()),
        (Some("running"), Some("w1"), Some("turn-3"))
    );
    let task_id = task["task_id"].as_str().expect("task_id").to_owned();
    assert!(task["dispatch_id"].as_str().is_some_and(|d| !d.is_empty() && d != task_id));

    let item = world.agent_works_and_settles(session_ref);
    assert_eq!((item["task_id"].as_str(), item["state"].as_str()), (Some(task_id.as_str()), Some("completed")));
    assert_eq!(item["result"]["trigger"], "agent_settled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_on_stdio_lists_the_tools_and_herdr_prompt_becomes_an_inbox_task_i1() {
    let world = world();
    let mut command = tokio::process::Command::new(bin());
    command.arg("mcp");
    for (key, value) in world.mcp_command(&[]).get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    let (transport, _stderr) = TokioChildProcess::builder(command).stderr(Stdio::null()).spawn().expect("spawn mcp");
    let client = ().serve(transport).await.expect("initialize over stdio");
    lists_the_tools_and_a_prompt_reaches_the_inbox(&client, &world, "chatgpt:conv:mcp-stdio").await;

    // Arguments are checked with messages that say what to do; nothing reaches Herdr.
    let oversize = call(
        &client,
        "herdr_prompt",
        json!({
            "browser_session_ref": "chatgpt:conv:mcp-stdio", "target": "w1:p1", "text": "x".repeat(64 * 1024 + 1),
        }),
    )
    .await;
    assert!(error_text(&oversize).contains("text is 65537 bytes; at most 65536 (64 KiB)"), "{oversize:?}");
    let unknown_argument = call(&client, "herdr_inspect", json!({"verbose": true})).await;
    assert!(error_text(&unknown_argument).contains("herdr_inspect has no argument `verbose`"));
    let not_json = call(&client, "herdr_call", json!({"method": "pane.read", "params": "{pane_id"})).await;
    assert!(error_text(&not_json).contains("params is not valid JSON"));
    handoff_through_herdr_call(&client, &world).await;
    let never = call(&client, "herdr_call", json!({"method": "continuity.resume", "params": "{\"continuity_id\":\"hc:1\"}"})).await;
    assert!(error_text(&never).contains("continuity_not_found: there is no continuity chain hc:1"), "{never:?}");
    let bypass = call(&client, "herdr_call", json!({"method": "agent.prompt", "params": "{\"target\":\"w1:p1\",\"text\":\"hi\"}"})).await;
    assert!(error_text(&bypass).contains("use herdr_prompt"));
    let read = call(&client, "herdr_call", json!({"method": "pane.read", "params": "{\"pane_id\":\"w1:p1\",\"source\":\"recent\"}"})).await;
    assert_eq!(read.is_error, Some(false), "{read:?}");
    assert!(
        read.structured_content.as_ref().is_some_and(|r| r["result"]["read"]["text"].as_str().is_some_and(|t| t.contains("run the tests"))),
        "{read:?}"
    );
    let methods = call(&client, "herdr_methods", json!({"query": "work_memory"})).await;
    let listed = methods.structured_content.as_ref().map(|m| m["methods"].clone()).unwrap_or_default();
    assert!(
        listed.as_array().is_some_and(|ms| ms.len() == 7
            && ms.iter().all(|m| m["available"] == true && m["method"].as_str().is_some_and(|n| n.starts_with("work_memory.")))),
        "{listed}"
    );
    work_memory_through_herdr_call(&client).await;
    let unknown_tool = client.call_tool(CallToolRequestParams::new("herdr_shell")).await;
    assert!(unknown_tool.is_err_and(|e| e.to_string().contains("there is no tool `herdr_shell`")), "an unknown tool is a protocol error");

    // The registry's own answers are typed protocol messages (LineClient checks each).
    let listed =
        world.poll("tools.list", json!({}), |r| r["tools"].as_array().is_some_and(|t| t.len() == continuity_protocol::ToolName::ALL.len()));
    assert_eq!(listed["tools"][3]["name"], "herdr_inspect");
    world.poll("tools.call", json!({"tool": "herdr_methods", "arguments": {}}), |r| r["type"] == "tool_result");

    // The oversize prompt left no task behind.
    let tasks = world.poll("task.list", json!({"browser_session_ref": "chatgpt:conv:mcp-stdio"}), |_| true);
    assert_eq!(tasks["tasks"].as_array().map(Vec::len), Some(1));
    client.cancel().await.expect("close the session");
}

/// A `tools/call` with the client `_meta` ChatGPT sends (`openai/session`, `openai/subject`).
async fn call_with_meta(client: &Client, tool: &'static str, arguments: Value, meta: Value) -> CallToolResult {
    let (Value::Object(arguments), Value::Object(meta)) = (arguments, meta) else { panic!("arguments and meta must be objects") };
    let mut params = CallToolRequestParams::new(tool).with_arguments(arguments);
    params.meta = Some(rmcp::model::RequestMetaObject(rmcp::model::MetaObject(meta)));
    client.call_tool(params).await.unwrap_or_else(|e| panic!("tools/call {tool} failed: {e}"))
}

/// The extension's `chats.report` (reporter `ext-1`): `(ref, generating)` per chat.
fn report_chats(world: &World, chats: &[(&str, bool)]) {
    let chats: Vec<Value> = chats.iter().map(|(r, g)| json!({"browser_session_ref": r, "generating": g})).collect();
    let n = chats.len();
    world.poll("chats.report", json!({"reporter": "ext-1", "chats": chats}), |r| r["type"] == "chats_reported" && r["chats"] == n);
}

/// Issue 24: an MCP caller's `herdr_prompt` without `browser_session_ref` goes to a chat only
/// on evidence — the one bound chat generating now, or the chat its ChatGPT session
/// (`_meta` `openai/session`) was paired with by an earlier call — and is refused otherwise
/// with where the ref is. A pairing is never switched: a conflicting ref or user is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_prompt_without_a_ref_is_attributed_on_evidence_or_refused() {
    const A: &str = "chatgpt:conv:attr-a";
    const B: &str = "chatgpt:conv:attr-b";
    let world = world();
    let mut command = tokio::process::Command::new(bin());
    command.arg("mcp");
    for (key, value) in world.mcp_command(&[]).get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    let (transport, _stderr) = TokioChildProcess::builder(command).stderr(Stdio::null()).spawn().expect("spawn mcp");
    let client = ().serve(transport).await.expect("initialize over stdio");
    let session = json!({"openai/session": "v1/sess-1", "openai/subject": "v1/user-1", "openai/locale": "en"});
    let prompt = |target: &str| json!({"target": target, "text": "run the tests"});

    // No chat generates: no evidence.
    report_chats(&world, &[(A, false), (B, false)]);
    let none = call_with_meta(&client, "herdr_prompt", prompt("w1:p1"), session.clone()).await;
    let text = error_text(&none);
    assert!(text.contains("no bound chat is generating a reply right now"), "{text}");
    assert!(text.contains("last line of any message the herdr-continuity extension typed") && text.contains("HUD"), "{text}");

    // Chat A alone generates: the call is its, and its session is paired with chat A.
    report_chats(&world, &[(A, true), (B, false)]);
    let first = call_with_meta(&client, "herdr_prompt", prompt("w1:p1"), session.clone()).await;
    assert_eq!(first.is_error, Some(false), "{first:?}");
    let first = first.structured_content.expect("a result");
    assert_eq!((first["browser_session_ref"].as_str(), first["attributed"].as_str()), (Some(A), Some("generating_chat")));

    // Nothing generates (or B does): the session's pairing still says chat A.
    report_chats(&world, &[(A, false), (B, true)]);
    let second = call_with_meta(&client, "herdr_prompt", prompt("w1:p2"), session.clone()).await;
    assert_eq!(second.is_error, Some(false), "{second:?}");
    let second = second.structured_content.expect("a result");
    assert_eq!((second["browser_session_ref"].as_str(), second["attributed"].as_str()), (Some(A), Some("paired_session")));

    // A conflicting ref, or another user on the same session, is refused — never switched.
    let conflict =
        call_with_meta(&client, "herdr_prompt", json!({"browser_session_ref": B, "target": "w1:p1", "text": "x"}), session.clone()).await;
    assert!(error_text(&conflict).contains(&format!("paired with chat {A}, not {B}")), "{conflict:?}");
    let other_user =
        call_with_meta(&client, "herdr_prompt", prompt("w1:p1"), json!({"openai/session": "v1/sess-1", "openai/subject": "v1/user-2"}))
            .await;
    assert!(error_text(&other_user).contains("another user"), "{other_user:?}");

    // Two chats generate: a ref-less call without a pairing is ambiguous and refused; a call
    // that names its ref goes, and pairs its new session with that chat.
    report_chats(&world, &[(A, true), (B, true)]);
    let ambiguous = call(&client, "herdr_prompt", prompt("w1:p1")).await;
    assert!(error_text(&ambiguous).contains("2 bound chats are generating a reply right now"), "{ambiguous:?}");
    let named = call_with_meta(
        &client,
        "herdr_prompt",
        json!({"browser_session_ref": B, "target": "w1:p1", "text": "y"}),
        json!({"openai/session": "v1/sess-2"}),
    )
    .await;
    assert_eq!(named.is_error, Some(false), "{named:?}");
    assert_eq!(named.structured_content.as_ref().map(|r| r.get("attributed").is_none()), Some(true), "it named its ref");
    let learned = call_with_meta(&client, "herdr_prompt", prompt("w1:p2"), json!({"openai/session": "v1/sess-2"})).await;
    assert_eq!(
        learned.structured_content.as_ref().and_then(|r| r["browser_session_ref"].as_str().map(str::to_owned)).as_deref(),
        Some(B),
        "{learned:?}"
    );

    // Each chat got exactly its own dispatches.
    let tasks = |r: &str| world.poll("task.list", json!({"browser_session_ref": r}), |_| true)["tasks"].as_array().map(Vec::len);
    assert_eq!((tasks(A), tasks(B)), (Some(2), Some(2)), "each chat got exactly its own dispatches");
    client.cancel().await.expect("close the session");
}

/// X4 through a real MCP client: on a chain the runtime journaled, `herdr_call` with
/// `herdr_mcp.browser_handoff.prepare` (params as a JSON string) gives the package whose
/// three messages are one; an unknown chain is `continuity_not_found`.
async fn handoff_through_herdr_call(client: &Client, world: &World) {
    let source_url = "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef/c/mcp-conv";
    let mut runtime = LineClient::connect(&world.home.socket());
    let appended = runtime.call("j1", "continuity.append", json!({"conversation_id": "mcp-conv", "message_id": "u1", "role": "user",
        "text": "Split the parser", "observed_at": 1, "project_id": "g-p-0123456789abcdef0123456789abcdef", "conversation_url": source_url}));
    let chain = appended["result"]["continuity_id"].as_str().expect("a chain").to_owned();
    let prepare = |continuity_id: &str| {
        let params = json!({"continuity_id": continuity_id, "source_url": source_url}).to_string();
        call(client, "herdr_call", json!({"method": "herdr_mcp.browser_handoff.prepare", "params": params}))
    };
    let prepared = prepare(&chain).await;
    assert_eq!(prepared.is_error, Some(false), "{prepared:?}");
    let answer = prepared.structured_content.clone().expect("structured result");
    assert_eq!((answer["method"].as_str(), answer["read_only"].as_bool()), (Some("herdr_mcp.browser_handoff.prepare"), Some(true)));
    let package = &answer["result"];
    assert_eq!((package["ok"].as_bool(), package["handoff"]["continuity_id"].as_str()), (Some(true), Some(chain.as_str())));
    let message = package["handoff"]["message"].as_str().expect("message");
    assert_eq!(package["manual_delivery"]["copy_prompt"].as_str(), Some(message));
    assert_eq!(package["automatic_delivery"]["params"]["message"].as_str(), Some(message));
    assert!(message.contains(&format!("continuity_id={chain}]")) && message.ends_with("[END_HERDR_CONTINUITY_REF]"), "{message}");
    let unknown = prepare("hc-unknown").await;
    assert!(error_text(&unknown).contains("continuity_not_found: there is no continuity chain hc-unknown"), "{unknown:?}");
}

/// W1–W3 through a real MCP client: `herdr_call` reaches the runtime's Work Memory (its
/// store in the runtime's `state.db`), params as a JSON string.
async fn work_memory_through_herdr_call(client: &Client) {
    let wm = |method: &'static str, params: Value| {
        let arguments = json!({"method": method, "params": params.to_string()});
        async move { call(client, "herdr_call", arguments).await }
    };
    let partition = json!({"project_ref": "g-p-mcp", "repo_id": "repo", "work_chain_id": "main"});
    let bound = wm(
        "work_memory.bind",
        json!({"continuity_id": "hc:mcp", "project_ref": "g-p-mcp", "repo_id": "repo", "work_chain_id": "main",
        "provider": "chatgpt", "session_ref": "chatgpt:conv:mcp-stdio", "bound_at": 1}),
    )
    .await;
    assert_eq!(
        bound.structured_content.as_ref().map(|r| r["result"]["retention_policy"].clone()),
        Some(json!("reclaim_behind_verified_checkpoint")),
        "{bound:?}"
    );
    let turn = wm(
        "work_memory.append_turn",
        json!({"continuity_id": "hc:mcp", "provider": "chatgpt", "session_ref": "chatgpt:conv:mcp-stdio",
        "provider_message_ref": "u1", "role": "user", "text": "split the parser", "observed_at": 2}),
    )
    .await;
    let message_id =
        turn.structured_content.as_ref().and_then(|r| r["result"]["message_id"].as_str().map(str::to_owned)).expect("message_id");
    let put = |expected: u64| {
        wm(
            "work_memory.checkpoint.put",
            json!({"continuity_id": "hc:mcp", "expected_checkpoint_revision": expected,
        "summary": "parser split planned", "checkpoint_json": "{\"next\":\"write tests\"}", "through_message_id": message_id, "created_at": 3}),
        )
    };
    let stored = put(0).await;
    assert_eq!(stored.structured_content.as_ref().map(|r| r["result"]["checkpoint"]["revision"].clone()), Some(json!(1)), "{stored:?}");
    let stale = wm(
        "work_memory.checkpoint.put",
        json!({"continuity_id": "hc:mcp", "expected_checkpoint_revision": 0, "summary": "another",
        "checkpoint_json": "{}", "through_message_id": message_id, "created_at": 4}),
    )
    .await;
    let conflict = stale.structured_content.as_ref().map(|r| r["result"].clone()).unwrap_or_default();
    assert_eq!(
        (conflict["ok"].clone(), conflict["code"].clone(), conflict["actual"].clone()),
        (json!(false), json!("work_memory_checkpoint_revision_conflict"), json!(1)),
        "{stale:?}"
    );
    let resumed = wm("work_memory.resume", partition.clone()).await;
    let result = resumed.structured_content.as_ref().map(|r| r["result"].clone()).unwrap_or_default();
    assert_eq!(
        (result["checkpoint_revision"].clone(), result["checkpoint"]["summary"].clone()),
        (json!(1), json!("parser split planned")),
        "{resumed:?}"
    );
    let missing = wm("work_memory.resume", json!({"project_ref": "g-p-mcp", "repo_id": "repo", "work_chain_id": "other"})).await;
    assert!(error_text(&missing).contains("work_memory_not_found"), "{missing:?}");
    let bad = wm("work_memory.bind", json!({"continuity_id": "", "project_ref": "p"})).await;
    assert!(error_text(&bad).contains("work_memory_invalid"), "{bad:?}");
}

/// `mcp --http` started on a free loopback port; its address from its stderr line.
pub(crate) struct HttpServer {
    _process: ChildGuard,
    pub(crate) port: u16,
    token: String,
}

pub(crate) fn start_http(world: &World) -> HttpServer {
    let mut command = world.mcp_command(&["--http", "127.0.0.1:0"]);
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut process = ChildGuard::spawn(&mut command, "herdr-companion mcp --http");
    let stderr: ChildStderr = process.child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + PROCESS_WAIT;
    let port = loop {
        let line = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).expect("mcp --http says where it serves");
        if let Some(rest) = line.split("serving MCP on http://127.0.0.1:").nth(1) {
            break rest.trim_end_matches("/mcp").parse::<u16>().expect("a port");
        }
    };
    let config: Value = serde_json::from_slice(&std::fs::read(world.home.home().join("config.json")).expect("config.json")).expect("JSON");
    let token = config["mcp"]["token"].as_str().expect("mcp.token").to_owned();
    HttpServer { _process: process, port, token }
}

/// A named raw request: what it varies, its extra headers, its body.
type RawCase<'a> = (&'a str, Vec<(&'a str, &'a str)>, Vec<u8>);

/// One raw HTTP/1.1 POST to `/mcp`; returns the status code.
fn post(port: u16, headers: &[(&str, &str)], body: &[u8]) -> u16 {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut head = format!("POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
    if !headers.iter().any(|(name, _)| *name == "Host") {
        head.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("write head");
    // A server may answer (413) before reading the whole body; the status is what counts.
    let _ = stream.write_all(body);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    text.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or_else(|| panic!("not an HTTP answer: {text:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_over_http_with_the_token_works_and_other_requests_are_refused() {
    let world = world();
    let server = start_http(&world);
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(world.home.home().join("config.json")).expect("meta").permissions());
    assert_eq!(mode & 0o777, 0o600, "the token file is private");

    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.clone()).auth_header(server.token.clone()),
    );
    let client = ().serve(transport).await.expect("initialize over HTTP");
    lists_the_tools_and_a_prompt_reaches_the_inbox(&client, &world, "chatgpt:conv:mcp-http").await;
    client.cancel().await.expect("close the session");

    let no_token = ().serve(StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(url))).await;
    assert!(no_token.is_err(), "a client without the token cannot initialize");

    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string();
    let bearer = format!("Bearer {}", server.token);
    let wrong = format!("Bearer {}", "0".repeat(server.token.len()));
    let evil_host = format!("evil.example:{}", server.port);
    let own_origin = format!("http://127.0.0.1:{}", server.port);
    let cases: Vec<RawCase> = vec![
        ("everything right", vec![("Authorization", &bearer)], initialize.clone().into_bytes()),
        ("own origin", vec![("Authorization", &bearer), ("Origin", &own_origin)], initialize.clone().into_bytes()),
        ("no token", vec![], initialize.clone().into_bytes()),
        ("wrong token", vec![("Authorization", &wrong)], initialize.clone().into_bytes()),
        ("another Host", vec![("Authorization", &bearer), ("Host", &evil_host)], initialize.clone().into_bytes()),
        ("another Origin", vec![("Authorization", &bearer), ("Origin", "https://evil.example")], initialize.clone().into_bytes()),
        ("oversize body", vec![("Authorization", &bearer)], format!("{{\"pad\":\"{}\"}}", "x".repeat(200 * 1024)).into_bytes()),
    ];
    let printed: Vec<String> = cases.iter().map(|(what, headers, body)| format!("{what}: {}", post(server.port, headers, body))).collect();
    expect_test::expect![[r#"
        everything right: 200
        own origin: 200
        no token: 401
        wrong token: 401
        another Host: 403
        another Origin: 403
        oversize body: 413"#]]
    .assert_eq(&printed.join("\n"));
}

#[test]
fn mcp_http_refuses_a_readable_token_file_and_a_non_loopback_address() {
    let home = TestHome::new();
    std::fs::create_dir_all(home.home()).expect("home");
    let config = home.home().join("config.json");
    std::fs::write(&config, format!("{{\"mcp\":{{\"token\":\"{}\"}}}}", "t".repeat(40))).expect("write");
    std::fs::set_permissions(&config, std::os::unix::fs::PermissionsExt::from_mode(0o644)).expect("chmod");
    let refused = crate::support::output_within(&mut home.command(&["mcp", "--http", "127.0.0.1:0"]), "mcp --http");
    assert_eq!(refused.status.code(), Some(1));
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(message.contains("has mode 644") && message.contains("chmod 600"), "{message}");

    let exposed = crate::support::output_within(&mut home.command(&["mcp", "--http", "0.0.0.0:0"]), "mcp --http");
    assert_eq!(exposed.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&exposed.stderr).contains("is not a loopback address"));
}

/// Issue 24: `--public-url` is explicit and checked before anything starts — plain http to
/// another host is refused (exit 1, the message says to give the https address), it needs
/// `--http` (exit 2), and `oauth.db` readable by others is refused like `config.json`.
#[test]
fn mcp_public_url_must_be_https_needs_http_and_a_private_oauth_db() {
    let home = TestHome::new();
    let plain = crate::support::output_within(
        &mut home.command(&["mcp", "--http", "127.0.0.1:0", "--public-url", "http://herdr.example.com"]),
        "mcp --public-url http",
    );
    assert_eq!(plain.status.code(), Some(1));
    let message = String::from_utf8_lossy(&plain.stderr);
    assert!(message.contains("is not https") && message.contains("https:// address of your tunnel"), "{message}");

    let alone = crate::support::output_within(&mut home.command(&["mcp", "--public-url", "https://herdr.example.com"]), "mcp --public-url");
    assert_eq!(alone.status.code(), Some(2), "{}", String::from_utf8_lossy(&alone.stderr));
    assert!(String::from_utf8_lossy(&alone.stderr).contains("--http"));

    std::fs::create_dir_all(home.home()).expect("home");
    let db = home.home().join("oauth.db");
    std::fs::write(&db, b"").expect("write");
    std::fs::set_permissions(&db, std::os::unix::fs::PermissionsExt::from_mode(0o644)).expect("chmod");
    let readable = crate::support::output_within(
        &mut home.command(&["mcp", "--http", "127.0.0.1:0", "--public-url", "https://herdr.example.com"]),
        "mcp --public-url with a readable oauth.db",
    );
    assert_eq!(readable.status.code(), Some(1));
    let message = String::from_utf8_lossy(&readable.stderr);
    assert!(message.contains("oauth.db has mode 644") && message.contains("chmod 600"), "{message}");
    let listed = crate::support::output_within(&mut home.command(&["oauth", "pending"]), "oauth pending with a readable oauth.db");
    assert_eq!(listed.status.code(), Some(1), "the CLI refuses it too");
}

/// Issue 24 (review): `oauth deny --all` clears every waiting sign-in at once — the way out
/// when strangers who found the tunnel URL fill the waiting list — and says so when none waits.
#[test]
fn oauth_deny_all_answers_without_a_code() {
    let home = TestHome::new();
    let denied = crate::support::output_within(&mut home.command(&["oauth", "deny", "--all"]), "oauth deny --all");
    assert_eq!(denied.status.code(), Some(0), "{}", String::from_utf8_lossy(&denied.stderr));
    assert!(
        String::from_utf8_lossy(&denied.stdout).contains("no sign-in request is waiting"),
        "{}",
        String::from_utf8_lossy(&denied.stdout)
    );
    let both = crate::support::output_within(&mut home.command(&["oauth", "deny", "--all", "K7QX-M2PA"]), "oauth deny --all CODE");
    assert_eq!(both.status.code(), Some(2), "a code or --all, not both");
    let neither = crate::support::output_within(&mut home.command(&["oauth", "deny"]), "oauth deny");
    assert_eq!(neither.status.code(), Some(2), "a code or --all");
}
