//! Checks shared by the browser and service-worker test binaries: the shell's
//! translation code (JSON ⇄ core types), the driver with fake port objects, and the
//! HUD view model as pages receive it. R: A4, N1, N4 (version agreement), O1.

use ext_core::companion_link::{HerdrConnection, HerdrStatus, Request, RuntimeMessage};
use ext_core::hud::ActionId;
use ext_shell::driver::LinkDriver;
use ext_shell::wire::{self, PageMessage, WireError};
use js_sys::{Array, Function, Reflect};
use serde_json::json;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// `{connect, ports}`: a fake `connectNative` that records the port objects it hands out.
/// Each fake port records what is posted to it (as plain JSON) and its listeners.
pub fn fake_chrome() -> (Function, Array) {
    let factory = Function::new_no_args(
        r#"
        const ports = [];
        const connect = (name) => {
          const port = {
            name, sent: [], disconnected: false, messageListeners: [], disconnectListeners: [],
            postMessage(message) { this.sent.push(JSON.parse(JSON.stringify(message))); },
            disconnect() { this.disconnected = true; },
          };
          port.onMessage = { addListener: (f) => port.messageListeners.push(f) };
          port.onDisconnect = { addListener: (f) => port.disconnectListeners.push(f) };
          ports.push(port);
          return port;
        };
        return { connect, ports };
        "#,
    );
    let pair = factory.call0(&JsValue::NULL).expect("factory runs");
    let connect: Function = Reflect::get(&pair, &"connect".into()).expect("connect").dyn_into().expect("fn");
    let ports: Array = Reflect::get(&pair, &"ports".into()).expect("ports").dyn_into().expect("array");
    (connect, ports)
}

fn get(value: &JsValue, key: &str) -> JsValue {
    Reflect::get(value, &JsValue::from_str(key)).expect("property")
}

/// What was posted on a fake port, as JSON.
pub fn sent(port: &JsValue) -> Vec<serde_json::Value> {
    serde_wasm_bindgen::from_value(get(port, "sent")).expect("sent is JSON")
}

fn js(value: serde_json::Value) -> JsValue {
    value.serialize(&serde_wasm_bindgen::Serializer::json_compatible()).expect("to js")
}
use serde::Serialize;

/// Delivers a message (as the host would) to every onMessage listener of a fake port.
pub fn deliver(port: &JsValue, message: serde_json::Value) {
    let message = js(message);
    for listener in Array::from(&get(port, "messageListeners")).iter() {
        listener.dyn_into::<Function>().expect("fn").call1(&JsValue::NULL, &message).expect("listener ran");
    }
}

/// Fires the onDisconnect listeners of a fake port (no lastError: the host exited).
pub fn drop_port(port: &JsValue) {
    for listener in Array::from(&get(port, "disconnectListeners")).iter() {
        listener.dyn_into::<Function>().expect("fn").call1(&JsValue::NULL, port).expect("listener ran");
    }
}

fn hello_answer(id: &str, protocol: u32) -> serde_json::Value {
    let current = u64::from(protocol) == continuity_protocol::PROTOCOL_VERSION;
    let capabilities = if current { json!(continuity_protocol::CAPABILITIES) } else { serde_json::Value::Null };
    json!({"id": id, "result": {"type": "hello", "runtime_version": "0.1.0", "protocol": protocol,
        "compatible": current, "capabilities": capabilities, "boot_id": "boot-1",
        "herdr": {"state": "connected", "protocol": 20, "version": "0.8.2", "socket": "/tmp/herdr.sock", "detail": null}}})
}

/// A message for the companion link, through the one reader of the native port.
fn link_message(value: &serde_json::Value) -> Result<RuntimeMessage, WireError> {
    match wire::inbound(value)? {
        wire::Inbound::Link(message) => Ok(message),
        other => panic!("not a link message: {other:?}"),
    }
}

/// A continuity event, through the one reader of the native port.
#[allow(dead_code)]
fn event_of(value: &serde_json::Value) -> Option<ext_core::continuity::ContinuityInput> {
    match wire::inbound(value) {
        Ok(wire::Inbound::Continuity(input)) => Some(input),
        Ok(wire::Inbound::Unused) => None,
        other => panic!("not a continuity event: {other:?}"),
    }
}

/// The answer to `call`, through the one reader of the native port.
#[allow(dead_code)]
fn answer_of(
    call: &ext_core::continuity::RuntimeCall,
    value: &serde_json::Value,
) -> Result<ext_core::continuity::RuntimeAnswer, ext_core::continuity::CallError> {
    match wire::inbound(value) {
        Ok(wire::Inbound::CallAnswer { outcome, .. }) => ext_shell::continuity_wire::answer(call, outcome),
        other => panic!("not a call answer: {other:?}"),
    }
}

pub fn runtime_messages_parse_into_core_types() {
    // Review 35 L5: a watching side panel is relayed only the stream events `inbound` read
    // (the same caps as the continuity machine's): an id over its cap is relayed to no page.
    let output = |pane_id: String| json!({"event": "agent_output", "data": {"workspace_id": "w1", "pane_id": pane_id, "tail": "ok", "seq": 4, "boot_id": "b1"}});
    let relayed = |value: serde_json::Value| wire::stream_event(&value, &wire::inbound(&value)).map(|(name, _)| name.as_str());
    assert_eq!(relayed(output("w1:p1".into())), Some("agent_output"));
    assert_eq!(relayed(output("p".repeat(ext_core::limits::MAX_ID_CHARS + 1))), None, "over the id cap");
    assert_eq!(relayed(json!({"event": "pane_upsert", "data": {"pane_id": "w1:p1"}})), None, "not a stored event (no seq)");
    assert_eq!(relayed(json!({"event": "herdr_state", "data": {"herdr": {"state": "bogus"}}})), None, "refused by inbound");
    assert_eq!(
        link_message(&hello_answer("hello-1", 2)),
        Ok(RuntimeMessage::HelloAnswer {
            id: "hello-1".into(),
            runtime_version: "0.1.0".into(),
            protocol: 2,
            compatible: true,
            capabilities: Some(continuity_protocol::CAPABILITIES.iter().map(|name| (*name).to_owned()).collect()),
            herdr: HerdrStatus {
                state: HerdrConnection::Connected,
                protocol: Some(20),
                version: Some("0.8.2".into()),
                socket: "/tmp/herdr.sock".into(),
                detail: None,
            },
        })
    );
    assert_eq!(
        link_message(&json!({"id": "ping-2", "result": {"type": "pong", "server_time": 5}})),
        Ok(RuntimeMessage::Pong { id: "ping-2".into() })
    );
    assert_eq!(
        link_message(&json!({"event": "host_error", "data": {"code": "runtime_unreachable", "message": "m"}})),
        Ok(RuntimeMessage::HostError { code: continuity_protocol::HostErrorCode::RuntimeUnreachable, message: "m".into() })
    );
    assert!(matches!(
        link_message(&json!({"event": "herdr_state", "data": {"herdr": {"state": "sleepy", "socket": "/s"}}})),
        Err(WireError::Malformed { .. })
    ));
    // Names and codes are the protocol's enums: a host error code it does not list is a
    // clear error, a runtime error code it does not list keeps the runtime's message.
    assert!(matches!(
        link_message(&json!({"event": "host_error", "data": {"code": "melted", "message": "m"}})),
        Err(WireError::Malformed { .. })
    ));
    assert_eq!(
        link_message(&json!({"id": "hello-3", "error": {"code": "brand_new", "message": "try later"}})),
        Ok(RuntimeMessage::ErrorAnswer { id: "hello-3".into(), code: continuity_protocol::ErrorCode::Error, message: "try later".into() })
    );
    // Events and answers the link does not read go elsewhere or nowhere, never to it.
    assert_eq!(wire::inbound(&json!({"event": "pane_upsert", "data": {}})), Ok(wire::Inbound::Unused));
    assert_eq!(wire::inbound(&json!({"id": "hello-4", "result": {"type": "events_subscribed"}})), Ok(wire::Inbound::Unused));
    assert!(matches!(
        wire::inbound(&json!({"id": "c-9", "result": {"type": "inbox_counts"}})),
        Ok(wire::Inbound::CallAnswer { id: "c-9", outcome: Ok(_) })
    ));
    assert!(matches!(wire::inbound(&json!({"id": "hello-5", "result": {"type": "no_such_result"}})), Err(WireError::UnknownShape(_))));
    assert!(matches!(link_message(&json!([1, 2])), Err(WireError::UnknownShape(_))));
    assert_eq!(
        wire::request_json(&Request::Hello {
            id: "hello-1".into(),
            extension_version: "0.1.0".into(),
            protocol: 2,
            requires: vec!["hello".into(), "ping".into()],
        }),
        json!({"id": "hello-1", "method": "hello", "params": {"extension_version": "0.1.0", "protocol": 2, "requires": ["hello", "ping"]}})
    );
    assert_eq!(
        wire::page_message(&json!({"type": "action", "action": "round_trip_test"})),
        Ok(PageMessage::Action(ActionId::RoundTripTest))
    );
    assert!(wire::page_message(&json!({"type": "action", "action": "format_disk"})).is_err());
}

/// Start → a page's first view → the timer opens the port → hello → connected → round trip → host exits → reconnect after the backoff.
pub async fn driver_handshakes_probes_and_reconnects_with_fake_ports() {
    let (connect, ports) = fake_chrome();
    let (page_factory, _page_ports) = fake_chrome();
    let driver = LinkDriver::new(connect, "0.1.0", ext_core::continuity::Continuity::new());
    LinkDriver::feed(&driver, ext_core::worker::WorkerInput::Start);
    assert_eq!(ports.length(), 0, "Start opens no native port in its own turn");

    // The page that woke the worker gets its view first.
    let page = page_factory.call1(&JsValue::NULL, &"page".into()).expect("page port");
    LinkDriver::page_connected(&driver, page.clone());
    // The site profile goes first (none for a port without a chat URL), then the HUD.
    assert_eq!(sent(&page)[0], json!({"type": "profile", "profile": null, "source": "builtin"}));
    assert_eq!(sent(&page)[1]["view"]["companion"]["key"], "companionStarting");

    // The timer the start armed (due at once) opens the native port.
    gloo_timers::future::TimeoutFuture::new(20).await;
    assert_eq!(ports.length(), 1, "the start's timer opens one native port");
    let native = ports.get(0);
    assert_eq!(get(&native, "name").as_string().as_deref(), Some("dev.herdr.continuity"));
    let hello = sent(&native);
    assert_eq!(hello.len(), 1);
    assert_eq!(hello[0]["method"], "hello");
    assert_eq!(hello[0]["params"]["protocol"], 2);
    assert_eq!(sent(&page).last().expect("hud")["view"]["companion"]["key"], "companionConnecting");

    deliver(&native, hello_answer(hello[0]["id"].as_str().expect("id"), 2));
    let page_view = sent(&page).last().cloned().expect("a HUD update");
    assert_eq!(page_view["type"], "hud");
    // The shape the pages render (extension/content-hud.js, extension/sidepanel.js).
    let view = &page_view["view"];
    // The pill (ext-core hud_pill): keys in order and a tone, decided in the core.
    assert_eq!(view["pill"]["parts"][0], json!({"key": "pillBrand", "args": []}));
    assert!(view["pill"]["tone"].is_string(), "the pill has a tone: {view}");
    assert_eq!(view["companion"], json!({"key": "companionConnected", "substitutions": ["0.1.0"], "tone": "good"}));
    assert_eq!(view["herdr"]["key"], "herdrConnected");
    assert_eq!(view["herdr"]["tone"], "good");
    assert_eq!(view["actions"][0], json!({"id": "round_trip_test", "label": "actionRoundTripTest"}));

    LinkDriver::page_message(&driver, &page, &js(json!({"type": "page_facts", "url": "https://chatgpt.com/c/1"}))).expect("facts accepted");
    assert_eq!(driver.borrow().page_urls(), vec!["https://chatgpt.com/c/1".to_owned()]);
    LinkDriver::page_message(&driver, &page, &js(json!({"type": "action", "action": "round_trip_test"}))).expect("action accepted");
    let ping = sent(&native).last().cloned().expect("ping sent");
    assert_eq!(ping["method"], "ping");
    deliver(&native, json!({"id": ping["id"], "result": {"type": "pong", "server_time": 1}}));
    let result = sent(&page).last().cloned().expect("round trip result");
    assert_eq!(result["type"], "round_trip_result");
    assert_eq!(result["ok"], true);
    assert!(result["ms"].as_f64().is_some_and(|ms| ms >= 0.0), "ms is measured: {result}");
    assert_eq!(result["status"]["key"], "roundTripAnswered");

    drop_port(&native);
    assert_eq!(sent(&page).last().expect("hud")["view"]["companion"]["key"], "companionExited");
    assert_eq!(ports.length(), 1, "no reconnect before the backoff");
    gloo_timers::future::TimeoutFuture::new(700).await;
    assert_eq!(ports.length(), 2, "reconnects after 0.5 s");
    assert_eq!(sent(&ports.get(1))[0]["method"], "hello");

    // A newer runtime: the HUD names the side to update and the port is closed.
    let second = ports.get(1);
    deliver(&second, hello_answer(sent(&second)[0]["id"].as_str().expect("id"), 3));
    assert_eq!(get(&second, "disconnected"), JsValue::TRUE);
    let hud = sent(&page).last().cloned().expect("hud");
    assert_eq!(hud["view"]["companion"]["key"], "hudVersionMismatchExtension");
    assert_eq!(hud["view"]["actions"][0]["id"], "retry_companion");
}

/// Continuity translation (docs/PROTOCOL.md "Continuity loop on the internal ports"):
/// stream events, inbox answers, page facts and panel commands (P8, I3, I4, B1).
/// Run by `browser.rs` only (`worker.rs` shares this module).
#[allow(dead_code)]
pub fn continuity_messages_translate() {
    use ext_core::continuity::{ContinuityInput, RuntimeAnswer, RuntimeCall};
    use ext_core::settle_tracker::{PaneEventKind, SettledStatus};
    use ext_shell::continuity_wire::{self as cw, PortCommand};
    let settled = event_of(&json!({"event": "agent_settled", "data": {"workspace_id": "w1",
        "pane_id": "w1:p1", "status": "done", "previous_status": "working", "seq": 9, "boot_id": "b", "at": 5, "stale": false}}));
    match settled {
        Some(ContinuityInput::StreamEvent(e)) => {
            assert_eq!((e.seq, e.kind), (9, PaneEventKind::Settled(SettledStatus::Done)));
        }
        other => panic!("not a settle: {other:?}"),
    }
    assert_eq!(event_of(&json!({"event": "agent_output", "data": {"seq": 3}})), None);
    // P4: agent_output feeds the progress summary.
    assert_eq!(
        event_of(&json!({"event": "agent_output", "data": {"pane_id": "w1:p1", "workspace_id": "w1",
            "agent": "claude", "tail": "41 passed", "seq": 12, "boot_id": "b", "at": 5, "stale": true}})),
        Some(ContinuityInput::AgentOutput {
            workspace_id: "w1".into(),
            pane_id: "w1:p1".into(),
            agent: Some("claude".into()),
            tail: "41 passed".into(),
            seq: 12,
            stale: true
        })
    );
    // A task's result: its status line, then the pane tail on the following lines.
    let with_tail = answer_of(
        &RuntimeCall::InboxPending { session_ref: "r".into() },
        &json!({"id": "c-4", "result": {"type": "inbox_pending", "items": [{"task_id": "t2", "state": "completed",
            "pane_id": "w1:p1", "prompt_preview": "p", "result": {"trigger": "agent_settled", "status": "done",
            "tail": "compiling\n41 passed\n", "tail_truncated": false}}], "more": false}}),
    );
    match with_tail {
        Ok(RuntimeAnswer::InboxPending { tasks, .. }) => assert_eq!(tasks[0].result.as_deref(), Some("done\ncompiling\n41 passed")),
        other => panic!("{other:?}"),
    }
    let call = RuntimeCall::InboxAck { session_ref: "chatgpt:conv:x".into(), task_ids: vec!["t1".into()] };
    assert_eq!(
        cw::call_json("c-1", &call),
        json!({"id": "c-1", "method": "inbox.ack", "params": {"browser_session_ref": "chatgpt:conv:x", "task_ids": ["t1"]}})
    );
    let pending = answer_of(
        &RuntimeCall::InboxPending { session_ref: "r".into() },
        &json!({"id": "c-2", "result": {"type": "inbox_pending", "items": [{"task_id": "t1", "state": "completed",
            "pane_id": "w1:p1", "prompt_preview": "p", "result": {"summary": "ok\n done"}}], "more": false}}),
    );
    match pending {
        Ok(RuntimeAnswer::InboxPending { tasks, .. }) => assert_eq!(tasks[0].result.as_deref(), Some("ok done")),
        other => panic!("{other:?}"),
    }
    let missing = answer_of(
        &RuntimeCall::InboxPending { session_ref: "r".into() },
        &json!({"id": "c-3", "error": {"code": "unknown_method", "message": "no such method"}}),
    );
    assert_eq!(missing.map_err(|e| e.code), Err(continuity_protocol::ErrorCode::UnknownMethod));
    let report = cw::page_report(&json!({"type": "page_facts", "url": "https://chatgpt.com/", "composer": true,
        "draft": true, "markers": ["wake:w1#2"]}))
    .expect("facts");
    assert!(report.composer && report.draft && !report.generating);
    assert_eq!(report.markers, vec!["wake:w1#2".to_owned()]);
    assert_eq!(
        cw::port_command(&json!({"type": "bind", "tab_id": 3, "workspace_id": "w1", "label": "api"})),
        Some(PortCommand::Bind {
            tab_id: 3,
            workspace: ext_core::binding::CatalogWorkspace { workspace_id: "w1".into(), label: "api".into() }
        })
    );
    assert_eq!(cw::port_command(&json!({"type": "action", "action": "format_disk"})), None);
    // Issue 24: the newest human turn's App pills, read whole or the report is refused (a
    // list read in part could make two Apps look like one); the page's App failure with its
    // detail (an unknown or missing detail is still not attached); Forget App.
    {
        use ext_core::continuity::{AppAttachFailure, AppMention, DeliveryOutcome};
        let pill = json!({"keyword": "herdr", "name": "Herdr", "path": "connector://apps/herdr"});
        let facts =
            |apps: serde_json::Value| cw::page_report(&json!({"type": "page_facts", "url": "https://chatgpt.com/", "human_apps": apps}));
        let herdr = AppMention { keyword: "herdr".into(), name: "Herdr".into(), path: "connector://apps/herdr".into() };
        assert_eq!(facts(json!([pill.clone()])).map(|r| r.human_apps), Some(vec![herdr]));
        assert_eq!(facts(json!(null)).map(|r| r.human_apps), Some(Vec::new()));
        assert_eq!(facts(json!([{"keyword": "herdr", "name": "Herdr"}])), None, "a pill without its path");
        assert_eq!(facts(json!([{"keyword": "herdr", "name": "Herdr", "path": "", "extra": 1}])), None, "a pill with more");
        assert_eq!(facts(json!([{"keyword": 7, "name": "Herdr", "path": ""}])), None, "a keyword that is not a string");
        assert_eq!(facts(json!(vec![pill; 9])), None, "more than 8 pills");
        assert_eq!(facts(json!("herdr")), None, "not a list");
        let report = |extra: serde_json::Value| {
            let mut message = json!({"type": "delivery_report", "id": "wake:w1#2/e.0.0", "outcome": "not_submitted"});
            if let (Some(message), Some(extra)) = (message.as_object_mut(), extra.as_object()) {
                message.extend(extra.clone());
            }
            match cw::port_command(&message) {
                Some(PortCommand::DeliveryReport { outcome, .. }) => outcome,
                other => panic!("{other:?}"),
            }
        };
        for (detail, read) in [
            (json!("no_permission"), AppAttachFailure::NoPermission),
            (json!("picker_not_opened"), AppAttachFailure::PickerNotOpened),
            (json!("option_missing"), AppAttachFailure::OptionMissing),
            (json!("pill_not_read_back"), AppAttachFailure::PillNotReadBack),
            (json!("the moon"), AppAttachFailure::Unknown),
            (json!(null), AppAttachFailure::Unknown),
        ] {
            assert_eq!(report(json!({"reason": "app_not_attached", "detail": detail})), DeliveryOutcome::AppNotAttached { detail: read });
        }
        assert_eq!(report(json!({"reason": "app_not_attachd"})), DeliveryOutcome::NotSubmitted { reason: "app_not_attachd".into() });
        assert_eq!(cw::port_command(&json!({"type": "action", "action": "forget_app"})), Some(PortCommand::HudAction("forget_app")));
    }
    // Issue 11: the judge gets the turn's text; its verdict is read whole, or refused.
    let judge = RuntimeCall::JudgeTurnEnd {
        user_text: "build it".into(),
        assistant_text: "Next I will test.".into(),
        conversation: "chatgpt:conv:x".into(),
    };
    assert_eq!(
        cw::call_json("c-7", &judge),
        json!({"id": "c-7", "method": "judge.turn_end", "params": {"user_text": "build it", "assistant_text": "Next I will test.", "conversation": "chatgpt:conv:x"}})
    );
    let verdict = answer_of(
        &judge,
        &json!({"id": "c-7", "result": {"type": "judge_verdict", "verdict": "done", "source": "llm",
        "confidence": null, "reason": "the user's turn", "priors": {"can_continue": 0.4, "needs_human": 0.704, "needs_handoff": null}}}),
    );
    match verdict {
        Ok(RuntimeAnswer::Verdict(v)) => {
            assert_eq!(
                (v.verdict, v.source.as_str(), v.reason.as_str()),
                (ext_core::semantic_auto::Verdict::Done, "llm", "the user's turn")
            );
            assert_eq!(v.priors, vec![("can_continue".to_owned(), 40), ("needs_human".to_owned(), 70)]);
        }
        other => panic!("{other:?}"),
    }
    let odd =
        answer_of(&judge, &json!({"id": "c-8", "result": {"type": "judge_verdict", "verdict": "maybe", "source": "llm", "reason": "?"}}));
    assert_eq!(odd.map_err(|e| e.code), Err(continuity_protocol::ErrorCode::BadAnswer));
    // Issue 29, Goal mode (J7): the evidence is read whole, or it is no evidence (fail
    // closed); the HUD's goal is a port command with its text.
    let evidence = RuntimeCall::GoalEvidence { session_ref: "chatgpt:conv:x".into(), workspace_id: "w1".into() };
    assert_eq!(
        cw::call_json("g-1", &evidence),
        json!({"id": "g-1", "method": "goal.evidence", "params": {"browser_session_ref": "chatgpt:conv:x", "workspace_id": "w1"}})
    );
    let answered = answer_of(
        &evidence,
        &json!({"id": "c-41", "result": {"type": "goal_evidence", "browser_session_ref": "chatgpt:conv:x",
        "goal": "ship", "todos_open": 2, "todos_done": 1, "open_tasks": 0, "workspace": "blocked"}}),
    );
    let expected = ext_core::goal_supervisor::Evidence {
        goal: Some("ship".into()),
        todo_open: 2,
        todo_done: 1,
        open_tasks: 0,
        workspace: ext_core::goal_supervisor::WorkspaceState::Blocked,
    };
    assert_eq!(answered.map_err(|e| e.code), Ok(RuntimeAnswer::GoalEvidence(expected)));
    for bad in [
        json!({"type": "goal_evidence", "goal": "ship", "todos_open": "2", "todos_done": 1, "open_tasks": 0, "workspace": "idle"}),
        json!({"type": "goal_evidence", "goal": 3, "todos_open": 2, "todos_done": 1, "open_tasks": 0, "workspace": "idle"}),
        json!({"type": "goal_evidence", "goal": null, "todos_open": 2, "todos_done": 1, "open_tasks": 0, "workspace": "asleep"}),
        json!({"type": "goal_evidence", "goal": null, "todos_done": 1, "open_tasks": 0, "workspace": "idle"}),
    ] {
        let odd = answer_of(&evidence, &json!({"id": "c-42", "result": bad}));
        assert_eq!(odd.map_err(|e| e.code), Err(continuity_protocol::ErrorCode::BadAnswer));
    }
    assert_eq!(
        cw::port_command(&json!({"type": "action", "action": "goal_set", "text": "ship it"})),
        Some(PortCommand::GoalSet { text: "ship it".into() })
    );
    assert_eq!(
        cw::port_command(&json!({"type": "turn_ended", "user_text": "u", "assistant_text": "a", "user_marker": "qb:1/0.0.0"})),
        Some(PortCommand::TurnEnded {
            user_text: "u".into(),
            assistant_text: "a".into(),
            user_marker: Some("qb:1/0.0.0".into()),
            message_id: None,
            user_message_id: None,
            pressed: false,
            user_stopped: false
        })
    );
    assert_eq!(
        cw::port_command(
            &json!({"type": "turn_ended", "user_text": "u", "assistant_text": "a", "message_id": "message-a3", "user_message_id": "u-1"})
        ),
        Some(PortCommand::TurnEnded {
            user_text: "u".into(),
            assistant_text: "a".into(),
            user_marker: None,
            message_id: Some("message-a3".into()),
            user_message_id: Some("u-1".into()),
            pressed: false,
            user_stopped: false
        })
    );
    // The journal (C1): one turn as `continuity.append`'s params; its answer names the chain.
    let entry = ext_core::continuity::JournalEntry {
        conversation_id: "6a1b".into(),
        message_id: "msg-7".into(),
        role: "user".into(),
        text: "Add the config loader".into(),
        observed_at: 1_764_547_200_000,
        project_id: None,
        workspace_id: Some("w1".into()),
        conversation_url: "https://chatgpt.com/c/6a1b".into(),
    };
    let append = RuntimeCall::JournalAppend(entry);
    let request = cw::call_json("c-10", &append);
    assert_eq!(request["method"], "continuity.append");
    let params: continuity_protocol::journal::ContinuityAppendParams =
        serde_json::from_value(request["params"].clone()).expect("the runtime's params type reads what the worker sends");
    assert_eq!((params.message_id.as_str(), params.workspace_id.as_deref(), params.continuity_id), ("msg-7", Some("w1"), None));
    let appended = answer_of(
        &append,
        &json!({"id": "c-10", "result": {"type": "continuity_appended", "continuity_id": "hc-5f0c", "conversation_id": "6a1b", "message_id": "msg-7", "inserted": false}}),
    );
    assert_eq!(appended.map_err(|e| e.code), Ok(RuntimeAnswer::Appended { continuity_id: "hc-5f0c".into() }));
    // R1: the visible thread; a field out of its type refuses the message.
    assert_eq!(
        cw::port_command(&json!({"type": "thread_facts", "turns": 4, "latin_chars": 900, "cjk_chars": 12, "highest_turn": 41})),
        Some(PortCommand::ThreadFacts(ext_core::context_pressure::VisibleThread {
            turns: 4,
            latin_chars: 900,
            cjk_chars: 12,
            highest_turn: Some(41)
        }))
    );
    assert_eq!(
        cw::port_command(&json!({"type": "thread_facts", "turns": -1, "latin_chars": 0, "cjk_chars": 0, "highest_turn": null})),
        None
    );
    // Issue 26: the user's own Stop names its page load; without one it is not a command.
    assert_eq!(
        cw::port_command(&json!({"type": "user_stop", "page_load": "load-1"})),
        Some(PortCommand::UserStop { page_load: "load-1".into() })
    );
    assert_eq!(cw::port_command(&json!({"type": "user_stop"})), None);
    // The Stop also travels with the turn it ended.
    assert_eq!(
        cw::port_command(&json!({"type": "turn_ended", "user_text": "u", "assistant_text": "a", "user_stopped": true})),
        Some(PortCommand::TurnEnded {
            user_text: "u".into(),
            assistant_text: "a".into(),
            user_marker: None,
            message_id: None,
            user_message_id: None,
            pressed: false,
            user_stopped: true
        })
    );
    // The JSON bridge (O2, issue 23): the request carries the chat's workspace, Auto and
    // human turn; `results` carries a message, `approval` the batch and its pending calls,
    // `round_limit` nothing more, `streaming` nothing.
    use ext_core::continuity::{BridgeDecision, BridgeOutcome, BridgeResults, BridgeRounds, PendingCall};
    let reply = RuntimeCall::BridgeReply {
        conversation: "zai:c1".into(),
        message_id: "m".into(),
        text: "{}".into(),
        workspace_id: "w1".into(),
        auto: true,
        human_turn: "u7".into(),
    };
    assert_eq!(
        cw::call_json("c-8", &reply),
        json!({"id": "c-8", "method": "bridge.reply", "params": {"conversation": "zai:c1", "message_id": "m", "text": "{}", "finished": true, "workspace_id": "w1", "auto": true, "human_turn": "u7"}})
    );
    let rounds = |used| Some(BridgeRounds { used, limit: 6 });
    let results = answer_of(
        &reply,
        &json!({"id": "c-9", "result": {"type": "bridge_reply", "state": "results", "calls": 1, "delivery_id": "bridge:00ff", "text": "HERDR_TOOL_RESULTS (1 call)", "delivered": false, "pending": [], "rounds": {"used": 1, "limit": 6}}}),
    );
    assert_eq!(
        results.map_err(|e| e.code),
        Ok(RuntimeAnswer::Bridge {
            outcome: BridgeOutcome::Results(BridgeResults {
                delivery_id: "bridge:00ff".into(),
                text: "HERDR_TOOL_RESULTS (1 call)".into(),
                delivered: false
            }),
            rounds: rounds(1)
        })
    );
    let streaming = answer_of(
        &reply,
        &json!({"id": "c-10", "result": {"type": "bridge_reply", "state": "streaming", "calls": 0, "delivery_id": null, "text": null, "delivered": false, "pending": [], "rounds": {"used": 0, "limit": 6}}}),
    );
    assert_eq!(streaming.map_err(|e| e.code), Ok(RuntimeAnswer::Bridge { outcome: BridgeOutcome::Nothing, rounds: rounds(0) }));
    let approval = answer_of(
        &reply,
        &json!({"id": "c-12", "result": {"type": "bridge_reply", "state": "approval", "calls": 2, "delivery_id": "bridge:91c4e07a3d2b5f60", "text": null, "delivered": false,
        "pending": [
            {"call": 1, "tool": "herdr_call", "method": "pane.send_keys", "target": "w1:p1", "args_preview": "{\"method\":\"pane.send_keys\"", "mutating": true,
             "detail": "rm -rf ~\n", "detail_more": 42},
            {"call": 2, "tool": "herdr_inspect", "method": null, "target": null, "args_preview": "{}"},
            {"call": 0, "tool": "herdr_call"}
        ], "rounds": {"used": 1, "limit": 6}}}),
    );
    assert_eq!(
        approval.map_err(|e| e.code),
        Ok(RuntimeAnswer::Bridge {
            outcome: BridgeOutcome::Approval {
                batch_id: "bridge:91c4e07a3d2b5f60".into(),
                pending: vec![
                    // The decoded text the call would type, and how much of it was left out.
                    PendingCall {
                        call: 1,
                        tool: "herdr_call".into(),
                        method: Some("pane.send_keys".into()),
                        target: Some("w1:p1".into()),
                        args_preview: "{\"method\":\"pane.send_keys\"".into(),
                        mutating: true,
                        detail: Some("rm -rf ~\n".into()),
                        detail_more: 42
                    },
                    // No `mutating`: read as mutating (the card never calls a write harmless).
                    PendingCall {
                        call: 2,
                        tool: "herdr_inspect".into(),
                        method: None,
                        target: None,
                        args_preview: "{}".into(),
                        mutating: true,
                        detail: None,
                        detail_more: 0
                    },
                ],
            },
            rounds: rounds(1),
        }),
        "a call without a usable position is left out"
    );
    let empty = answer_of(
        &reply,
        &json!({"id": "c-13", "result": {"type": "bridge_reply", "state": "approval", "delivery_id": "bridge:91c4e07a3d2b5f60", "pending": []}}),
    );
    assert_eq!(empty.map_err(|e| e.code), Err(continuity_protocol::ErrorCode::BadAnswer), "an approval with no call to show");
    let limit = answer_of(
        &reply,
        &json!({"id": "c-14", "result": {"type": "bridge_reply", "state": "round_limit", "calls": 1, "delivery_id": null, "text": null, "delivered": false, "pending": [], "rounds": {"used": 6, "limit": 6}}}),
    );
    assert_eq!(limit.map_err(|e| e.code), Ok(RuntimeAnswer::Bridge { outcome: BridgeOutcome::RoundLimit, rounds: rounds(6) }));
    let decide = RuntimeCall::BridgeDecide {
        conversation: "zai:c1".into(),
        batch_id: "bridge:91c4e07a3d2b5f60".into(),
        index: 1,
        decision: BridgeDecision::Run,
    };
    assert_eq!(
        cw::call_json("c-15", &decide),
        json!({"id": "c-15", "method": "bridge.decide", "params": {"conversation": "zai:c1", "batch_id": "bridge:91c4e07a3d2b5f60", "call": 1, "decision": "run"}})
    );
    let decided = answer_of(
        &decide,
        &json!({"id": "c-15", "result": {"type": "bridge_decided", "batch_id": "bridge:91c4e07a3d2b5f60", "call": 1, "decision": "run", "pending": 0}}),
    );
    assert_eq!(decided.map_err(|e| e.code), Ok(RuntimeAnswer::BridgeDecided { pending: 0 }));
    let prompt = RuntimeCall::BridgePrompt { session_ref: "zai:conv:c1".into() };
    assert_eq!(
        cw::call_json("c-11", &prompt),
        json!({"id": "c-11", "method": "bridge.prompt", "params": {"browser_session_ref": "zai:conv:c1"}})
    );
    let text = answer_of(&prompt, &json!({"id": "c-11", "result": {"type": "bridge_prompt", "text": "[herdr-continuity JSON bridge v1]"}}));
    assert_eq!(text.map_err(|e| e.code), Ok(RuntimeAnswer::BridgePrompt { text: "[herdr-continuity JSON bridge v1]".into() }));
    // The HUD's Run / Skip (a trusted click in content-hud-lines.js): anything else is not a decision.
    assert_eq!(
        cw::port_command(&json!({"type": "bridge_decide", "batch_id": "bridge:91c4e07a3d2b5f60", "call": 2, "decision": "skip"})),
        Some(PortCommand::BridgeDecide { batch_id: "bridge:91c4e07a3d2b5f60".into(), call: 2, decision: BridgeDecision::Skip })
    );
    for bad in [
        json!({"type": "bridge_decide", "batch_id": "b", "call": 1, "decision": "always"}),
        json!({"type": "bridge_decide", "batch_id": "b", "call": -1, "decision": "run"}),
        json!({"type": "bridge_decide", "call": 1, "decision": "run"}),
    ] {
        assert_eq!(cw::port_command(&bad), None, "{bad}");
    }
    assert_eq!(cw::port_command(&json!({"type": "action", "action": "bridge_prompt"})), Some(PortCommand::HudAction("bridge_prompt")));
    assert_eq!(
        cw::port_command(&json!({"type": "action", "action": "llm_judge", "user_text": "u", "assistant_text": "a"})),
        Some(PortCommand::LlmJudge { user_text: "u".into(), assistant_text: "a".into() })
    );
}

/// Quality bar "every message from the page or the wire is validated and size-capped"
/// (ext_core::limits): page messages over a cap or of the wrong shape are rejected whole,
/// ports from elsewhere are refused, runtime text is clipped before it reaches a page.
pub fn page_and_runtime_input_is_bounded() {
    use ext_core::continuity::{ContinuityInput, RuntimeAnswer, RuntimeCall};
    use ext_core::continuity::{Unresolved, UnresolvedWhy};
    use ext_core::limits::{MAX_ID_CHARS, MAX_LABEL_CHARS, MAX_MARKERS, MAX_RUNTIME_TEXT_CHARS, MAX_URL_CHARS};
    use ext_shell::continuity_wire as cw;
    let rejected = |value: serde_json::Value| matches!(wire::check_page_message(&value), Err(WireError::PageMessageRejected(_)));
    let long = |n: usize| "x".repeat(n);

    // Page → worker: at the caps is fine, one over is not.
    let facts = json!({"type": "page_facts", "url": format!("https://chatgpt.com/{}", long(MAX_URL_CHARS - 20)),
        "composer": true, "user_turns": 3, "last_user_turn_id": long(MAX_ID_CHARS), "delivering": null,
        "markers": vec![long(MAX_ID_CHARS); MAX_MARKERS]});
    assert_eq!(wire::check_page_message(&facts), Ok(()));
    // Issue 24: at most 8 App pills of exactly {keyword, name, path}, each at most an id long.
    let pill = |keyword: String| json!({"keyword": keyword, "name": "Herdr", "path": "connector://apps/herdr"});
    let apps = |list: Vec<serde_json::Value>| json!({"type": "page_facts", "url": "https://chatgpt.com/", "human_apps": list});
    assert_eq!(wire::check_page_message(&apps(vec![pill(long(MAX_ID_CHARS)); ext_core::limits::MAX_APP_MENTIONS])), Ok(()));
    assert!(rejected(apps(vec![pill("herdr".into()); ext_core::limits::MAX_APP_MENTIONS + 1])));
    assert!(rejected(apps(vec![pill(long(MAX_ID_CHARS + 1))])));
    assert!(rejected(apps(vec![json!({"keyword": "herdr", "name": "Herdr"})])));
    assert!(rejected(apps(vec![json!("herdr")])));
    assert!(rejected(json!({"type": "page_facts", "url": format!("https://chatgpt.com/{}", long(MAX_URL_CHARS))})));
    assert!(rejected(json!({"type": "page_facts", "url": "https://chatgpt.com/", "last_user_turn_id": long(MAX_ID_CHARS + 1)})));
    assert!(rejected(json!({"type": "page_facts", "url": "https://chatgpt.com/", "markers": vec!["m"; MAX_MARKERS + 1]})));
    assert!(rejected(json!({"type": "page_facts", "url": "https://chatgpt.com/", "markers": [long(MAX_ID_CHARS + 1)]})));
    assert!(rejected(json!({"type": "page_facts", "url": "https://chatgpt.com/", "markers": [{"id": 1}]})));
    assert!(rejected(json!({"type": "delivery_report", "id": long(MAX_ID_CHARS + 1), "outcome": "submitted"})));
    assert!(rejected(json!({"type": "unbind", "scope_key": long(MAX_ID_CHARS + 1)})));
    assert_eq!(
        wire::check_page_message(&json!({"type": "bind", "tab_id": 1, "workspace_id": "w1", "label": long(MAX_LABEL_CHARS)})),
        Ok(())
    );
    assert!(rejected(json!({"type": "bind", "tab_id": 1, "workspace_id": "w1", "label": long(MAX_LABEL_CHARS + 1)})));
    assert!(rejected(json!({"type": "action", "action": {"id": "continue"}})), "nested objects are not a page message");
    // Issue 12: the ended turn's texts whole for the journal, at most 64 Ki characters each;
    // the judge button's at most 6 000 / 12 000 characters (issue 11).
    use ext_core::limits::{MAX_TURN_ASSISTANT_CHARS, MAX_TURN_TEXT_CHARS, MAX_TURN_USER_CHARS};
    let turn = |user: usize, reply: usize| json!({"type": "turn_ended", "user_text": long(user), "assistant_text": long(reply), "user_marker": null});
    assert_eq!(wire::check_page_message(&turn(MAX_TURN_TEXT_CHARS, MAX_TURN_TEXT_CHARS)), Ok(()));
    assert!(rejected(turn(MAX_TURN_TEXT_CHARS + 1, 1)));
    assert!(rejected(turn(1, MAX_TURN_TEXT_CHARS + 1)));
    let judge = |user: usize, reply: usize| json!({"type": "action", "action": "llm_judge", "user_text": long(user), "assistant_text": long(reply)});
    assert_eq!(wire::check_page_message(&judge(MAX_TURN_USER_CHARS, MAX_TURN_ASSISTANT_CHARS)), Ok(()));
    assert!(rejected(judge(MAX_TURN_USER_CHARS + 1, 1)));
    assert!(rejected(judge(1, MAX_TURN_ASSISTANT_CHARS + 1)));
    assert!(rejected(json!(["page_facts"])));
    assert!(rejected(json!({"url": "https://chatgpt.com/"})), "no type");
    let many: serde_json::Map<String, serde_json::Value> =
        (0..20).map(|i| (format!("f{i}"), json!(i))).chain([("type".to_owned(), json!("page_facts"))]).collect();
    assert!(rejected(serde_json::Value::Object(many)));

    // Issue 25: a page_facts with every field the adapter sends (17) fits the caps, and its
    // `unresolved` / `unresolved_why` are a fact name or "profile" and "missing" or
    // "ambiguous", both null, or both absent; anything else rejects the message whole.
    let full = |unresolved: serde_json::Value, why: serde_json::Value| {
        json!({"type": "page_facts",
        "url": "https://chatgpt.com/c/1", "generation": "mixed", "page_load": "p1", "unresolved": unresolved,
        "unresolved_why": why, "composer": true, "draft": false, "composer_marker": null, "generating": false,
        "permission_card": false, "user_turns": 2, "last_user_turn_id": "u2", "last_human_turn_id": "u2",
        "human_apps": [], "markers": [], "delivering": null})
    };
    assert_eq!(full(json!(null), json!(null)).as_object().map(serde_json::Map::len), Some(17));
    assert_eq!(wire::check_page_message(&full(json!(null), json!(null))), Ok(()));
    assert_eq!(wire::check_page_message(&full(json!("composer"), json!("ambiguous"))), Ok(()));
    assert_eq!(wire::check_page_message(&full(json!("profile"), json!("missing"))), Ok(()));
    assert!(rejected(full(json!("composer"), json!(null))), "a fact without why");
    assert!(rejected(full(json!(null), json!("missing"))), "a why without fact");
    assert!(rejected(full(json!("composer"), json!("gone"))), "another why word");
    assert!(rejected(full(json!("the send button"), json!("missing"))), "not a fact name");
    assert!(rejected(full(json!(long(65)), json!("missing"))), "over 64 characters");
    assert!(rejected(full(json!(true), json!("missing"))), "not a string");
    let unresolved = |message: serde_json::Value| cw::page_report(&message).map(|report| report.unresolved);
    assert_eq!(unresolved(full(json!(null), json!(null))), Some(None));
    assert_eq!(
        unresolved(full(json!("send"), json!("ambiguous"))),
        Some(Some(Unresolved { fact: "send".into(), why: UnresolvedWhy::Ambiguous }))
    );
    assert_eq!(unresolved(full(json!("send"), json!("maybe"))), None, "never stored either");
    assert_eq!(
        unresolved(json!({"type": "page_facts", "url": "https://chatgpt.com/"})),
        Some(Some(Unresolved::no_profile())),
        "a page that did not say its facts resolve: they do not (fail closed)"
    );

    // The driver drops a rejected message (facts not stored), messages on a port it never
    // accepted, and binding commands that do not come from the panel.
    let (connect, _natives) = fake_chrome();
    let (page_factory, _pages) = fake_chrome();
    let driver = LinkDriver::new(connect, "0.1.0", ext_core::continuity::Continuity::new());
    let page = page_factory.call1(&JsValue::NULL, &"page".into()).expect("page port");
    LinkDriver::page_connected(&driver, page.clone());
    let over = js(json!({"type": "page_facts", "url": format!("https://chatgpt.com/{}", long(MAX_URL_CHARS))}));
    assert!(matches!(LinkDriver::page_message(&driver, &page, &over), Err(WireError::PageMessageRejected(_))));
    let huge = js(json!({"type": "page_facts", "url": "https://chatgpt.com/", "padding": long(20_000)}));
    assert!(matches!(LinkDriver::page_message(&driver, &page, &huge), Err(WireError::PageMessageRejected(_))));
    assert!(driver.borrow().page_urls().is_empty(), "nothing of a rejected message is kept");
    // The ended turn may be longer than the other messages' 16 KiB cap (its fields are capped).
    let ended = js(json!({"type": "turn_ended", "user_text": long(MAX_TURN_USER_CHARS), "assistant_text": long(MAX_TURN_ASSISTANT_CHARS)}));
    assert!(
        !matches!(LinkDriver::page_message(&driver, &page, &ended), Err(WireError::PageMessageRejected(_))),
        "a full turn is within its caps"
    );
    let stranger = page_factory.call1(&JsValue::NULL, &"page".into()).expect("port");
    let fine = js(json!({"type": "page_facts", "url": "https://chatgpt.com/c/1"}));
    assert!(matches!(LinkDriver::page_message(&driver, &stranger, &fine), Err(WireError::PageMessageRejected(_))));
    assert!(driver.borrow().page_urls().is_empty());
    let bind = js(json!({"type": "bind", "tab_id": 1, "workspace_id": "w1", "label": "api"}));
    // A well-formed `bind` from a page is the worker's to refuse (ext_core::worker::commands).
    LinkDriver::page_message(&driver, &page, &bind).expect("a bind is well formed");
    let worker_refused = driver.borrow().worker().continuity().bindings().pending_for(1).is_none();
    assert!(worker_refused && driver.borrow().worker().continuity().bindings().list().next().is_none(), "a page cannot bind");
    LinkDriver::page_message(&driver, &page, &fine).expect("facts within the caps are accepted");
    assert_eq!(driver.borrow().page_urls(), vec!["https://chatgpt.com/c/1".to_owned()]);

    // Ports: only our content script on chatgpt.com (with a tab) or our own pages.
    let port = |name: &str, sender: serde_json::Value| {
        let port = page_factory.call1(&JsValue::NULL, &name.into()).expect("port");
        Reflect::set(&port, &"sender".into(), &js(sender)).expect("set sender");
        port
    };
    let global = js_sys::global();
    // A plain page has no `chrome.runtime`: stand one in, then put the old `chrome` back.
    let had_chrome = Reflect::has(&global, &"chrome".into()).unwrap_or(false);
    let old_chrome = Reflect::get(&global, &"chrome".into()).unwrap_or(JsValue::UNDEFINED);
    Reflect::set(&global, &"chrome".into(), &js(json!({"runtime": {"id": "ours"}}))).expect("fake chrome");
    let own = ext_shell::js::own_extension_id();
    if let Some(own) = own.as_deref() {
        let ok = port("page", json!({"id": own, "url": "https://chatgpt.com/c/1", "tab": {"id": 4}}));
        assert_eq!(ext_shell::check_port_sender(&ok), Ok(()));
        let panel = port("panel", json!({"id": own, "url": format!("chrome-extension://{own}/sidepanel.html")}));
        assert_eq!(ext_shell::check_port_sender(&panel), Ok(()));
        let evil = port("page", json!({"id": own, "url": "https://chatgpt.com.evil.example/", "tab": {"id": 4}}));
        assert!(ext_shell::check_port_sender(&evil).is_err());
        let posing = port("panel", json!({"id": own, "url": "https://chatgpt.com/", "tab": {"id": 4}}));
        assert!(ext_shell::check_port_sender(&posing).is_err());
        let foreign = port("page", json!({"id": "someone-else", "url": "https://chatgpt.com/", "tab": {"id": 4}}));
        assert!(ext_shell::check_port_sender(&foreign).is_err());
        let renamed = port("admin", json!({"id": own, "url": "https://chatgpt.com/", "tab": {"id": 4}}));
        assert!(ext_shell::check_port_sender(&renamed).is_err());
    }
    assert!(ext_shell::check_port_sender(&port("page", json!({}))).is_err(), "no sender, no port");
    if had_chrome {
        Reflect::set(&global, &"chrome".into(), &old_chrome).expect("restore chrome");
    } else {
        Reflect::delete_property(global.unchecked_ref::<js_sys::Object>(), &"chrome".into()).expect("remove fake chrome");
    }
    assert_eq!(own.as_deref().map(str::is_empty), Some(false), "chrome.runtime.id is read");

    // Runtime → worker: text clipped, over-long ids make the item unusable, lists capped.
    let output = event_of(&json!({"event": "agent_output", "data": {"pane_id": "w1:p1", "workspace_id": "w1",
        "tail": long(10_000), "seq": 1}}));
    match output {
        Some(ContinuityInput::AgentOutput { tail, .. }) => assert_eq!(tail.chars().count(), MAX_RUNTIME_TEXT_CHARS),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        event_of(&json!({"event": "agent_output", "data": {"pane_id": "w1:p1",
        "workspace_id": long(MAX_ID_CHARS + 1), "tail": "t", "seq": 1}})),
        None
    );
    let catalog = answer_of(
        &RuntimeCall::Workspaces,
        &json!({"id": "c-1", "result": {"workspaces":
        (0..300).map(|i| json!({"workspace_id": format!("w{i}"), "label": long(1_000)})).collect::<Vec<_>>()}}),
    );
    match catalog {
        Ok(RuntimeAnswer::Workspaces { workspaces }) => {
            assert_eq!(workspaces.len(), ext_core::limits::MAX_RUNTIME_LIST_ITEMS);
            assert_eq!(workspaces[0].label.chars().count(), MAX_LABEL_CHARS);
        }
        other => panic!("{other:?}"),
    }
    match link_message(&json!({"event": "host_error", "data": {"code": "bad_frame", "message": long(5_000)}})) {
        Ok(RuntimeMessage::HostError { message, .. }) => assert_eq!(message.chars().count(), ext_core::limits::MAX_RUNTIME_SHORT_CHARS),
        other => panic!("{other:?}"),
    }
}

/// `page_diagnostics` is the one page message with nested values: accepted within its caps,
/// rejected whole beyond them or with unknown fields.
pub fn page_diagnostics_are_bounded() {
    use ext_core::limits::{MAX_DIAGNOSTIC_ITEMS, MAX_SELECTOR_CHARS};
    use ext_shell::wire::page_diagnostics;
    let good = json!({
        "type": "page_diagnostics", "page_load": "p1", "site": "chatgpt", "generation": "chatgpt.classic",
        "matching": ["chatgpt.classic"],
        "facts": {"composer": "#prompt-textarea", "stop": null},
        "usage": {"composer": {"entry": 2, "gens": ["chatgpt.classic"], "fallback": true, "count": 41}},
        "missing": {"root": {"elements": 200, "tags": {"div": 150, "form": 1}, "roles": {"presentation": 3}, "data_attrs": {"data-testid": 9}}},
        "csp": {"meta": false, "violations": 2, "directives": ["script-src-elem"]},
        "deliveries": [{"id": "wake:w1#3", "outcome": "submitted", "reason": null}],
    });
    let parsed = page_diagnostics(&good).expect("within the caps");
    assert_eq!(parsed.usage.get("composer").map(|u| (u.entry, u.fallback, u.count)), Some((2, true, 41)));
    assert_eq!(parsed.missing.get("root").and_then(|m| m.data_attrs.get("data-testid")), Some(&9));
    assert_eq!(parsed.facts.get("stop"), Some(&None));
    assert_eq!(parsed.csp.violations, 2);
    // The side panel gets back exactly what the page reported (the worker's writer).
    assert_eq!(ext_core::json_read::WriteJson::write_json(&parsed), good);
    let with = |key: &str, value: serde_json::Value| {
        let mut message = good.clone();
        message[key] = value;
        page_diagnostics(&message)
    };
    let long = "a".repeat(MAX_SELECTOR_CHARS + 1);
    assert!(with("facts", json!({"composer": long})).is_err(), "a selector over the cap");
    assert!(with("matching", json!(vec!["x"; MAX_DIAGNOSTIC_ITEMS + 1])).is_err());
    assert!(with("csp", json!({"meta": true, "violations": 0, "directives": [], "header": "x"})).is_err(), "unknown fields");
    assert!(with("text", json!("page content")).is_err(), "no other fields");
    assert!(with("facts", json!({"composer": {"nested": true}})).is_err());
    // Fallback usage and missing-fact summaries (issue 25): counts are integers ≥ 0, names
    // bounded, maps capped, unknown fields refused — never a place for page text.
    let usage = |u: serde_json::Value| with("usage", json!({"composer": u}));
    assert!(usage(json!({"entry": 0, "gens": [], "fallback": false, "count": 0})).is_ok());
    assert!(usage(json!({"entry": -1, "gens": [], "fallback": false, "count": 0})).is_err(), "a negative entry");
    assert!(usage(json!({"entry": 0, "gens": [], "fallback": false, "count": 1.5})).is_err(), "a fractional count");
    assert!(usage(json!({"entry": 0, "gens": [], "fallback": "yes", "count": 1})).is_err(), "fallback is a boolean");
    assert!(usage(json!({"entry": 256, "gens": [], "fallback": true, "count": 1})).is_err(), "an entry past any chain");
    assert!(usage(json!({"entry": 0, "gens": ["g".repeat(65)], "fallback": false, "count": 1})).is_err(), "a long generation name");
    assert!(usage(json!({"entry": 0, "gens": vec!["g"; 17], "fallback": false, "count": 1})).is_err(), "too many generations");
    assert!(usage(json!({"entry": 0, "gens": [], "fallback": false, "count": 1, "text": "hi"})).is_err(), "unknown fields");
    let summary = |m: serde_json::Value| with("missing", json!({"composer": m}));
    let empty = json!({"elements": 0, "tags": {}, "roles": {}, "data_attrs": {}});
    assert!(summary(empty.clone()).is_ok());
    let mut text = empty.clone();
    text["text"] = json!("the page's words");
    assert!(summary(text).is_err(), "unknown fields");
    let mut over = empty.clone();
    over["elements"] = json!(201);
    assert!(summary(over).is_err(), "more elements than are walked");
    let many: serde_json::Map<String, serde_json::Value> = (0..17).map(|i| (format!("data-x{i}"), json!(1))).collect();
    let mut keys = empty.clone();
    keys["data_attrs"] = serde_json::Value::Object(many);
    assert!(summary(keys).is_err(), "more than 16 names in a map");
    let mut value = empty.clone();
    value["roles"] = json!({"button": "a value"});
    assert!(summary(value).is_err(), "a count that is not an integer");
    let mut long_name = empty.clone();
    long_name["tags"] = json!({"x".repeat(65): 1});
    assert!(summary(long_name).is_err(), "a long name");
    let facts: serde_json::Map<String, serde_json::Value> = (0..7).map(|i| (format!("f{i}"), empty.clone())).collect();
    assert!(with("missing", serde_json::Value::Object(facts)).is_err(), "too many missing facts");
    // Absent (an older page script) reads as empty and is written back as empty.
    let mut older = good.clone();
    older.as_object_mut().expect("object").remove("usage");
    older.as_object_mut().expect("object").remove("missing");
    let older = page_diagnostics(&older).expect("usage and missing may be absent");
    assert!(older.usage.is_empty() && older.missing.is_empty());
    // The side panel lists the facts in FACT_NAMES order, then any the profile added.
    let mut with_extra = good.clone();
    with_extra["facts"]["a_new_fact"] = json!("div.new");
    page_diagnostics(&with_extra).expect("within the caps");
    // What the worker posts the panel (ext-core `worker::panel_diagnostics_message`) from the
    // page's checked report.
    let panel = ext_core::worker::panel_diagnostics_message(Some(7), Some(&with_extra));
    assert_eq!(panel["fact_order"], json!(["composer", "stop", "a_new_fact"]));
    assert_eq!(panel["diagnostics"]["facts"]["composer"], "#prompt-textarea");
    assert_eq!(panel["diagnostics"]["usage"], good["usage"], "the panel gets the usage counts");
    assert_eq!(panel["diagnostics"]["missing"], good["missing"], "and the missing facts' summaries");
    assert_eq!(panel["tab_id"], 7);
    let nothing = ext_core::worker::panel_diagnostics_message(None, None);
    assert_eq!(nothing, json!({"type": "diagnostics", "tab_id": null, "diagnostics": null, "fact_order": []}));
}

/// JS ⇄ JSON without serde_json's text parser (issue 8): a JS value reads as the JSON of
/// its `JSON.stringify` text, and a JSON value posts as what `JSON.parse` would give.
pub fn js_values_cross_as_their_json() {
    use ext_shell::js;
    // Every kind of value, read as serde_json reads the same text.
    let text = r#"{"a":[1,-2,2.5,"x",true,null,{"b":{}}],"n":9007199254740991,"s":"\u00e9\u4e2d","__proto__":{"k":1}}"#;
    let parsed = js::parse(text).expect("JSON");
    let expected: serde_json::Value = serde_json::from_str(text).expect("JSON");
    assert_eq!(parsed, expected);
    assert_eq!(parsed["a"][0].as_u64(), Some(1), "integral numbers are integers");
    assert_eq!(parsed["a"][1].as_i64(), Some(-2));
    // And back: the same text for JSON.parse, `__proto__` kept as an own member.
    let back: serde_json::Value = serde_json::from_str(&js::stringify(&parsed)).expect("JSON");
    assert_eq!(back, expected);
    // What JSON.stringify drops or nulls.
    let object = js_sys::Object::new();
    Reflect::set(&object, &"gone".into(), &JsValue::UNDEFINED).expect("set");
    Reflect::set(&object, &"f".into(), &Function::new_no_args("return 1")).expect("set");
    let array = Array::of2(&JsValue::UNDEFINED, &JsValue::from_f64(3.0));
    Reflect::set(&object, &"list".into(), &array).expect("set");
    assert_eq!(js::json_value(&object).expect("JSON"), json!({"list": [null, 3]}));
    // Refused: not finite, a symbol, nesting deeper than the cap; undefined is no value.
    assert!(js::json_value(&JsValue::from_f64(f64::NAN)).is_err());
    assert!(js::json_value(&JsValue::symbol(Some("s"))).is_err());
    assert!(js::json_value(&JsValue::UNDEFINED).is_err());
    let deep = js_sys::JSON::parse(&format!("{}{}", "[".repeat(80), "]".repeat(80))).expect("set");
    assert!(js::json_value(&deep).expect_err("refused").contains("nested deeper"));
    assert_eq!(js::parse("{nope").expect_err("refused"), "not JSON");
}

/// Issue 10, H1: a `health_sample` is read only whole — every count a whole number within
/// `MAX_HEALTH_COUNT`, the heap figures absent or within `MAX_HEALTH_HEAP_BYTES`, a page
/// load id — and the driver refuses one whose JSON is over `MAX_HEALTH_SAMPLE_BYTES`.
pub fn health_samples_are_bounded() {
    use ext_core::health::HealthSample;
    use ext_core::limits::{MAX_HEALTH_COUNT, MAX_HEALTH_HEAP_BYTES, MAX_HEALTH_SAMPLE_BYTES};
    use ext_shell::continuity_wire::{port_command, PortCommand};
    let sample = |extra: serde_json::Value| {
        let mut value =
            json!({"type": "health_sample", "page_load": "load-1", "callbacks": 900, "drift_ms": 40, "long_task_ms": 250, "long_tasks": 1});
        for (key, v) in extra.as_object().expect("an object") {
            value[key] = v.clone();
        }
        value
    };
    let read = |value: serde_json::Value| match port_command(&value) {
        Some(PortCommand::HealthSample { page_load, sample }) => Some((page_load, sample)),
        _ => None,
    };
    let counted = HealthSample { callbacks: 900, drift_ms: 40, long_task_ms: 250, long_tasks: 1, heap_used: None, heap_limit: None };
    assert_eq!(read(sample(json!({}))), Some(("load-1".to_owned(), counted)));
    let heavy = read(sample(json!({"heap_used": MAX_HEALTH_HEAP_BYTES, "heap_limit": 4_294_967_296u64}))).expect("heap figures");
    assert_eq!((heavy.1.heap_used, heavy.1.heap_limit), (Some(MAX_HEALTH_HEAP_BYTES), Some(4_294_967_296)));
    for bad in [
        json!({"callbacks": MAX_HEALTH_COUNT + 1}),
        json!({"drift_ms": -1}),
        json!({"long_task_ms": 2.5}),
        json!({"long_tasks": "1"}),
        json!({"heap_used": MAX_HEALTH_HEAP_BYTES + 1}),
        json!({"page_load": ""}),
        json!({"page_load": "x".repeat(257)}),
    ] {
        assert_eq!(read(sample(bad.clone())), None, "{bad}");
    }
    let mut missing = sample(json!({}));
    missing.as_object_mut().expect("an object").remove("drift_ms");
    assert_eq!(read(missing), None, "every count is required");

    // The driver's byte cap comes before any reading.
    let (connect, _natives) = fake_chrome();
    let (page_factory, _pages) = fake_chrome();
    let driver = LinkDriver::new(connect, "0.1.0", ext_core::continuity::Continuity::new());
    let page = page_factory.call1(&JsValue::NULL, &"page".into()).expect("page port");
    LinkDriver::page_connected(&driver, page.clone());
    let over = sample(json!({"page_load": "x".repeat(MAX_HEALTH_SAMPLE_BYTES)}));
    assert!(matches!(LinkDriver::page_message(&driver, &page, &js(over)), Err(WireError::PageMessageRejected(_))));
}

/// X4, C2: a handoff's two calls go out with the runtime's own param shapes, and its package
/// is read only whole — the three copies of the seed one string, every field within
/// `continuity_protocol::handoff`'s caps; anything else is `bad_answer` (the core fails the
/// transfer and keeps the source, X5). The HUD's Handoff buttons are the only new actions.
#[allow(dead_code)]
pub fn handoff_calls_and_package_are_checked() {
    use ext_core::continuity::{RuntimeAnswer, RuntimeCall};
    use ext_shell::continuity_wire as cw;
    let resolve = RuntimeCall::ContinuityResolve { conversation_id: "6a1b".into() };
    let request = cw::call_json("c-1", &resolve);
    assert_eq!((request["method"].as_str(), request["params"].clone()), (Some("continuity.resolve"), json!({"conversation_id": "6a1b"})));
    let resolved = answer_of(
        &resolve,
        &json!({"id": "c-1", "result": {"type": "continuity_resolved", "continuity_id": "hc-5f0c", "conversation_id": "6a1b", "project_id": null, "title": "t", "updated_at": 1}}),
    );
    assert_eq!(resolved.map_err(|e| e.code), Ok(RuntimeAnswer::Resolved { continuity_id: "hc-5f0c".into() }));
    let prepare = RuntimeCall::HandoffPrepare(ext_core::continuity::PrepareCall {
        continuity_id: "hc-5f0c".into(),
        source_url: "https://chatgpt.com/c/6a1b".into(),
        workspace_id: Some("w1".into()),
        browser_session_ref: Some("chatgpt:conv:6a1b".into()),
        queue: vec!["Then the docs".into()],
    });
    let request = cw::call_json("c-2", &prepare);
    assert_eq!(request["method"], "herdr_mcp.browser_handoff.prepare");
    let params: continuity_protocol::handoff::HandoffPrepareParams =
        serde_json::from_value(request["params"].clone()).expect("the runtime's params type reads what the worker sends");
    assert_eq!((params.continuity_id.as_str(), params.source_url.as_str()), ("hc-5f0c", "https://chatgpt.com/c/6a1b"));
    assert_eq!((params.workspace_id.as_deref(), params.browser_session_ref.as_deref()), (Some("w1"), Some("chatgpt:conv:6a1b")));
    assert_eq!(params.queue, ["Then the docs"]);
    let package = |handoff_message: &str, automatic: &str, copy: &str| {
        json!({"id": "c-2", "result": {"type": "handoff_prepared", "ok": true, "source_route": null, "source_route_error": "none",
            "handoff": {"handoff_id": "ho-1", "continuity_id": "hc-5f0c", "source_url": "https://chatgpt.com/c/6a1b", "message": handoff_message,
                "work_chain_id": null, "target_context": {"provider": "chatgpt", "project_id": null}},
            "automatic_delivery": {"method": "herdr_mcp.browser_session.create", "params": {"source_url": "https://chatgpt.com/c/6a1b", "message": automatic, "work_chain_id": null}},
            "manual_delivery": {"copy_prompt": copy}}})
    };
    match answer_of(&prepare, &package("seed", "seed", "seed")) {
        Ok(RuntimeAnswer::Prepared(p)) => {
            assert_eq!(
                (p.transfer_id.as_str(), p.continuity_id.as_str(), p.message.as_str(), p.copy_prompt.as_str()),
                ("ho-1", "hc-5f0c", "seed", "seed")
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(answer_of(&prepare, &package("seed", "other", "seed")).is_err(), "the package's messages differ");
    let long = "x".repeat(continuity_protocol::handoff::MAX_HANDOFF_MESSAGE_CHARS + 1);
    assert!(answer_of(&prepare, &package(&long, &long, &long)).is_err(), "a message over the cap is refused, never cut");
    assert!(answer_of(&prepare, &package("", "", "")).is_err(), "an empty message");
    assert_eq!(cw::port_command(&json!({"type": "action", "action": "handoff"})), Some(cw::PortCommand::HudAction("handoff")));
    assert_eq!(
        cw::port_command(&json!({"type": "action", "action": "handoff_resume"})),
        Some(cw::PortCommand::HudAction("handoff_resume"))
    );
    assert_eq!(cw::port_command(&json!({"type": "action", "action": "copy_prompt"})), None, "Copy Prompt never reaches the worker");
}

/// Issue 23, item 7: a `deliver` — of any kind, here a manual Continue — leaves only after
/// the snapshot naming it is written. It used to be posted at once and the snapshot written
/// 200 ms later (the persist debounce): a worker that died in between offered the message
/// again under a new id. A failed write posts nothing.
pub fn a_delivery_leaves_only_after_the_snapshot_naming_it_is_written() {
    use ext_core::continuity::{Continuity, ContinuityInput, PageReport};
    // worker.js's storage bridge, recorded: (token, key, text) of every request.
    Function::new_no_args(
        "globalThis.__storage = []; globalThis.herdrStorage = (token, key, text) => { globalThis.__storage.push({ token, key, text: text ?? null }); };",
    )
    .call0(&JsValue::NULL)
    .expect("storage stand-in");
    let storage =
        || -> Vec<serde_json::Value> { serde_wasm_bindgen::from_value(get(&js_sys::global(), "__storage")).expect("storage requests") };
    let (connect, _native) = fake_chrome();
    let (page_factory, _pages) = fake_chrome();
    let driver = LinkDriver::new(connect, "0.1.0", Continuity::with_epoch("e1"));
    let url = "https://chatgpt.com/c/0a000000-0000-4000-8000-00000000000a";
    let page = page_factory.call1(&JsValue::NULL, &"page".into()).expect("page port");
    Reflect::set(&page, &"sender".into(), &js(json!({"url": url, "tab": {"id": 4}}))).expect("sender");
    LinkDriver::page_connected(&driver, page.clone());
    // The human's turn carried the Herdr App: every `deliver` names it (issue 24).
    let herdr = ext_core::continuity::AppMention { keyword: "herdr".into(), name: "Herdr".into(), path: "connector://apps/herdr".into() };
    let idle = PageReport {
        url: url.into(),
        composer: true,
        generation: Some("chatgpt.classic".into()),
        unresolved: None,
        page_load: "load-1".into(),
        user_turns: 1,
        last_human_turn_id: Some("u-1".into()),
        human_apps: vec![herdr],
        ..PageReport::default()
    };
    LinkDriver::feed(&driver, ext_core::worker::WorkerInput::Continuity(ContinuityInput::PageReported { tab: 4, report: idle }));
    let workspace = ext_core::binding::CatalogWorkspace { workspace_id: "w1".into(), label: "api".into() };
    LinkDriver::feed(&driver, ext_core::worker::WorkerInput::Continuity(ContinuityInput::Bind { tab: 4, workspace }));
    let delivers = || sent(&page).into_iter().filter(|m| m["type"] == "deliver").collect::<Vec<_>>();

    LinkDriver::feed(&driver, ext_core::worker::WorkerInput::Continuity(ContinuityInput::Continue { tab: 4 }));
    let id = driver.borrow().worker().continuity().ledger().active().next().map(|d| d.id.clone()).expect("a delivery in the ledger");
    assert!(delivers().is_empty(), "posted before the snapshot naming it was written: {:?}", delivers());
    let write = storage()
        .into_iter()
        .rev()
        .find(|r| r["key"] == "continuity" && r["text"].as_str().is_some_and(|t| t.contains(&id)))
        .expect("a write of the snapshot naming the delivery");
    let token = write["token"].as_u64().and_then(|t| u32::try_from(t).ok()).filter(|t| *t != 0).expect("an answered write");
    LinkDriver::js_answered(&driver, token, Ok(JsValue::UNDEFINED));
    let posted = delivers();
    assert_eq!(posted.len(), 1, "posted once the write is done: {posted:?}");
    assert_eq!(posted[0]["id"], id.as_str());
    assert_eq!(posted[0]["app"], json!({"keyword": "herdr", "name": "Herdr", "path": "connector://apps/herdr"}), "the App rides on it");

    // A write that fails posts nothing: the delivery becomes uncertain, never typed blindly.
    let driver = LinkDriver::new(fake_chrome().0, "0.1.0", Continuity::with_epoch("e2"));
    let page = page_factory.call1(&JsValue::NULL, &"page".into()).expect("page port");
    Reflect::set(&page, &"sender".into(), &js(json!({"url": url, "tab": {"id": 5}}))).expect("sender");
    LinkDriver::page_connected(&driver, page.clone());
    let idle = PageReport {
        url: url.into(),
        composer: true,
        generation: Some("chatgpt.classic".into()),
        unresolved: None,
        page_load: "load-1".into(),
        ..PageReport::default()
    };
    LinkDriver::feed(&driver, ext_core::worker::WorkerInput::Continuity(ContinuityInput::PageReported { tab: 5, report: idle }));
    let workspace = ext_core::binding::CatalogWorkspace { workspace_id: "w1".into(), label: "api".into() };
    LinkDriver::feed(&driver, ext_core::worker::WorkerInput::Continuity(ContinuityInput::Bind { tab: 5, workspace }));
    let before = storage().len();
    LinkDriver::feed(&driver, ext_core::worker::WorkerInput::Continuity(ContinuityInput::Continue { tab: 5 }));
    let write = storage().into_iter().skip(before).find(|r| r["key"] == "continuity").expect("a snapshot write");
    let token = write["token"].as_u64().and_then(|t| u32::try_from(t).ok()).expect("token");
    LinkDriver::js_answered(&driver, token, Err("QUOTA_BYTES quota exceeded".into()));
    assert!(sent(&page).iter().all(|m| m["type"] != "deliver"), "nothing posted after a failed write");
}
