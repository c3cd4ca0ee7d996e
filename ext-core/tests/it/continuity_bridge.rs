//! The JSON bridge's thin part in the composed loop (SPEC O2, O3, M6): a bound z.ai /
//! DeepSeek conversation's ended reply → `bridge.reply` → its results message through the
//! ledger once (Auto on, or the HUD's Send tool results); never on ChatGPT, never for an
//! unbound chat, never again for a message the thread shows or one on its way.

use continuity_protocol::ErrorCode;
use expect_test::expect;
use ext_core::binding::CatalogWorkspace;
use ext_core::continuity::{
    BridgeDecision, BridgeOutcome, BridgeResults, BridgeRounds, CallError, Continuity, ContinuityInput, ContinuityOutput, PageReport,
    PendingCall, RuntimeAnswer, RuntimeCall,
};

use super::continuity::{confirm, idle_page, restart, TAB};

const ZAI: &str = "https://chat.z.ai/c/7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f";

fn zai_page() -> PageReport {
    PageReport { url: ZAI.into(), generation: Some("zai.openwebui".into()), ..idle_page() }
}

/// A z.ai conversation bound to w1, with Auto on or off.
fn zai_world(auto: bool) -> Continuity {
    let mut c = Continuity::new();
    c.handle(0, ContinuityInput::LinkUp);
    c.handle(0, ContinuityInput::PageReported { tab: TAB, report: zai_page() });
    c.handle(0, ContinuityInput::Bind { tab: TAB, workspace: CatalogWorkspace { workspace_id: "w1".into(), label: "api".into() } });
    if auto {
        c.handle(0, ContinuityInput::ToggleAuto { tab: TAB });
    }
    while c.poll().is_some() {}
    c
}

fn ended(c: &mut Continuity, now: u64, reply: &str) {
    turn(c, now, reply, false);
}

/// The page's last turn: a reply that ended, or (`pressed`) sent again by Send tool results.
fn turn(c: &mut Continuity, now: u64, reply: &str, pressed: bool) {
    c.handle(
        now,
        ContinuityInput::TurnEnded {
            tab: TAB,
            user_text: "look at the panes".into(),
            assistant_text: reply.into(),
            user_marker: None,
            message_id: Some("message-a3".into()),
            user_message_id: None,
            pressed,
            user_stopped: false,
        },
    );
}

/// Drains outputs into a log; `bridge.reply` is answered with `results` (`None`: state
/// `nothing`), other calls neutrally.
fn drain(c: &mut Continuity, now: u64, results: &Option<BridgeResults>, log: &mut Vec<String>) {
    let outcome = results.clone().map_or(BridgeOutcome::Nothing, BridgeOutcome::Results);
    drain_with(c, now, log, &mut |call| match call {
        RuntimeCall::BridgeReply { .. } => Ok(RuntimeAnswer::Bridge { outcome: outcome.clone(), rounds: None }),
        _ => Ok(RuntimeAnswer::Subscribed),
    });
}

/// Drains outputs into a log, each request answered by `runtime`; deliveries, inserts,
/// notices and Activity entries logged.
fn drain_with(
    c: &mut Continuity,
    now: u64,
    log: &mut Vec<String>,
    runtime: &mut dyn FnMut(&RuntimeCall) -> Result<RuntimeAnswer, CallError>,
) {
    while let Some(output) = c.poll() {
        match output {
            ContinuityOutput::Request { id, call } => {
                log.push(format!("request {}", serde_json::to_string(&call).expect("json")));
                let result = runtime(&call);
                c.handle(now, ContinuityInput::Answered { id, result });
            }
            ContinuityOutput::Deliver { id, text, .. } => log.push(format!("deliver {id}\n{text}")),
            ContinuityOutput::Insert { text, .. } => log.push(format!("insert {text}")),
            ContinuityOutput::Notice { say, .. } => log.push(format!("notice {} {:?}", say.key, say.args)),
            ContinuityOutput::Activity(a) => {
                log.push(format!("activity {} {:?}", serde_json::to_string(&a.outcome).expect("json"), a.reason))
            }
            _ => {}
        }
    }
}

fn results() -> Option<BridgeResults> {
    Some(BridgeResults {
        delivery_id: "bridge:5b0e6c2d9a174f38".into(),
        text: "HERDR_TOOL_RESULTS (1 call)\n{\"call\":1,\"ok\":true}".into(),
        delivered: false,
    })
}

fn deliveries(log: &[String]) -> usize {
    log.iter().filter(|l| l.starts_with("deliver bridge:5b0e6c2d9a174f38/")).count()
}

fn actions(c: &Continuity) -> Vec<&'static str> {
    c.page_view(TAB).map(|v| v.actions.iter().map(|a| a.id).collect()).unwrap_or_default()
}

// R: O2 — with Auto on, a reply's results go out once, as the next user turn; the same
// reply ending again (a replay) while they are on its way, once they are in the thread, and
// after a worker restart sends nothing more.
#[test]
fn with_auto_the_results_of_a_reply_are_sent_once() {
    let mut c = zai_world(true);
    let mut log = Vec::new();
    ended(&mut c, 1, "{\"tool\":\"herdr_inspect\",\"args\":{}}");
    drain(&mut c, 1, &results(), &mut log);
    expect![[r#"
        [
            "request {\"call\":\"journal_append\",\"conversation_id\":\"7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f\",\"message_id\":\"message-a3\",\"role\":\"assistant\",\"text\":\"{\\\"tool\\\":\\\"herdr_inspect\\\",\\\"args\\\":{}}\",\"observed_at\":1,\"project_id\":null,\"workspace_id\":\"w1\",\"conversation_url\":\"https://chat.z.ai/c/7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f\"}",
            "request {\"call\":\"bridge_reply\",\"conversation\":\"zai:conv:7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f\",\"message_id\":\"message-a3\",\"text\":\"{\\\"tool\\\":\\\"herdr_inspect\\\",\\\"args\\\":{}}\",\"workspace_id\":\"w1\",\"auto\":true,\"human_turn\":\"text:f0d583ed1832339b\"}",
            "deliver bridge:5b0e6c2d9a174f38/0.0.0\nHERDR_TOOL_RESULTS (1 call)\n{\"call\":1,\"ok\":true}\n[herdr-continuity bridge:5b0e6c2d9a174f38/0.0.0 ref=zai:conv:7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f]",
            "activity \"sent\" Code(\"auto_on\")",
        ]
    "#]].assert_debug_eq(&log);
    ended(&mut c, 2, "{\"tool\":\"herdr_inspect\",\"args\":{}}");
    drain(&mut c, 2, &results(), &mut log);
    assert_eq!(deliveries(&log), 1, "on its way: not posted again");
    confirm(&mut c, 3, "bridge:5b0e6c2d9a174f38");
    ended(&mut c, 4, "{\"tool\":\"herdr_inspect\",\"args\":{}}");
    drain(&mut c, 4, &results(), &mut log);
    assert_eq!(deliveries(&log), 1, "in the thread: not posted again");
    let shown = c.page(TAB).cloned().expect("the page");
    let mut c = restart(&c, 5);
    c.handle(5, ContinuityInput::PageReported { tab: TAB, report: PageReport { page_load: "load-2".into(), ..shown } });
    drain(&mut c, 5, &None, &mut log);
    turn(&mut c, 6, "{\"tool\":\"herdr_inspect\",\"args\":{}}", true);
    drain(&mut c, 6, &results(), &mut log);
    assert_eq!(deliveries(&log), 1, "after a worker restart: not posted again");
}

// R: O2, M1 — with Auto off nothing is typed; the HUD offers Send tool results, which sends
// the page's last turn again and types the results once.
#[test]
fn without_auto_the_results_wait_for_the_send_button() {
    let mut c = zai_world(false);
    let mut log = Vec::new();
    ended(&mut c, 1, "{\"tool\":\"herdr_inspect\",\"args\":{}}");
    drain(&mut c, 1, &results(), &mut log);
    assert_eq!(deliveries(&log), 0, "{log:?}");
    assert_eq!(actions(&c), ["toggle_auto", "continue", "check_herdr", "bridge_prompt", "bridge_send", "handoff"]);
    turn(&mut c, 2, "{\"tool\":\"herdr_inspect\",\"args\":{}}", true);
    drain(&mut c, 2, &results(), &mut log);
    assert_eq!(deliveries(&log), 1, "{log:?}");
    turn(&mut c, 3, "{\"tool\":\"herdr_inspect\",\"args\":{}}", true);
    drain(&mut c, 3, &results(), &mut log);
    assert_eq!(deliveries(&log), 1, "a second press while it is on its way sends nothing");
}

// R: O2 — results whose marker the page already shows (sent before a reload) are not sent.
#[test]
fn results_already_in_the_thread_are_not_sent_again() {
    let mut c = zai_world(true);
    let mut page = zai_page();
    page.markers.push("bridge:5b0e6c2d9a174f38/k3x9.0.0".into());
    c.handle(1, ContinuityInput::PageReported { tab: TAB, report: page });
    let mut log = Vec::new();
    ended(&mut c, 1, "{\"tool\":\"herdr_inspect\",\"args\":{}}");
    drain(&mut c, 1, &results(), &mut log);
    assert_eq!(deliveries(&log), 0, "{log:?}");
}

// R: O2, M6 — ChatGPT (a real MCP connector) and unbound chats never use the bridge; its
// buttons are offered on bound z.ai / DeepSeek chats only.
#[test]
fn the_bridge_is_only_for_bound_zai_and_deepseek_chats() {
    let (mut chatgpt, _) = super::continuity::bound_with_auto(true);
    let mut log = Vec::new();
    chatgpt.handle(
        1,
        ContinuityInput::TurnEnded {
            tab: TAB,
            user_text: String::new(),
            assistant_text: "{\"tool\":\"herdr_inspect\",\"args\":{}}".into(),
            user_marker: None,
            message_id: None,
            user_message_id: None,
            pressed: false,
            user_stopped: false,
        },
    );
    drain(&mut chatgpt, 1, &results(), &mut log);
    assert!(log.iter().all(|l| !l.contains("bridge")), "{log:?}");
    assert!(!actions(&chatgpt).contains(&"bridge_prompt"));

    let mut unbound = Continuity::new();
    unbound.handle(0, ContinuityInput::LinkUp);
    unbound.handle(0, ContinuityInput::PageReported { tab: TAB, report: zai_page() });
    ended(&mut unbound, 1, "{\"tool\":\"herdr_inspect\",\"args\":{}}");
    drain(&mut unbound, 1, &results(), &mut log);
    assert!(log.iter().all(|l| !l.contains("bridge")), "{log:?}");
    assert!(!actions(&unbound).contains(&"bridge_prompt"));
}

// R: M6 — the turn-end judge is ChatGPT's only: z.ai / DeepSeek pages get no judge button,
// and a judge request from such a page (a stale or forged page message) asks nothing.
#[test]
fn the_judge_is_not_offered_on_zai_and_deepseek() {
    let mut c = zai_world(false);
    assert!(!actions(&c).contains(&"llm_judge"), "{:?}", actions(&c));
    c.handle(1, ContinuityInput::LlmJudge { tab: TAB, user_text: "go on?".into(), assistant_text: "Next I will run the tests.".into() });
    let mut log = Vec::new();
    drain(&mut c, 1, &results(), &mut log);
    assert!(log.iter().all(|l| !l.contains("judge")), "{log:?}");
    let (chatgpt, _) = super::continuity::bound_with_auto(false);
    assert!(actions(&chatgpt).contains(&"llm_judge"), "ChatGPT keeps it");
}

// ---- Approval before anything runs (issue 23 items 1, 2, 6).

const BATCH: &str = "bridge:9d3c1b7a5e2f4c60";
const SEND_KEYS: &str = "{\"tool\":\"herdr_call\",\"args\":{\"method\":\"pane.send_keys\",\"params\":\"{\\\"pane_id\\\":\\\"w1:p1\\\",\\\"keys\\\":\\\"rm -rf ~\\\\n\\\"}\"}}";

fn pending_call(call: u32, method: &str, mutating: bool) -> PendingCall {
    PendingCall {
        call,
        tool: "herdr_call".into(),
        method: Some(method.into()),
        target: Some("w1:p1".into()),
        args_preview: "{\"method\":\"pane.send_keys\",\"params\":\"{\\\"pane_id\\\":\\\"w1:p1\\\"".into(),
        mutating,
        detail: Some("rm -rf ~\n".into()),
        detail_more: 0,
    }
}

fn approval(pending: Vec<PendingCall>) -> RuntimeAnswer {
    RuntimeAnswer::Bridge {
        outcome: BridgeOutcome::Approval { batch_id: BATCH.into(), pending },
        rounds: Some(BridgeRounds { used: 0, limit: 6 }),
    }
}

fn batch_results() -> RuntimeAnswer {
    RuntimeAnswer::Bridge {
        outcome: BridgeOutcome::Results(BridgeResults {
            delivery_id: BATCH.into(),
            text: "HERDR_TOOL_RESULTS (1 call)\n{\"call\":1,\"ok\":true}".into(),
            delivered: false,
        }),
        rounds: Some(BridgeRounds { used: 1, limit: 6 }),
    }
}

fn decide(c: &mut Continuity, now: u64, batch_id: &str, call: u32, decision: BridgeDecision) {
    c.handle(now, ContinuityInput::BridgeDecide { tab: TAB, batch_id: batch_id.into(), call, decision });
}

fn requests<'a>(log: &'a [String], call: &str) -> Vec<&'a String> {
    log.iter().filter(|l| l.starts_with(&format!("request {{\"call\":\"{call}\""))).collect()
}

// R: issue 23 item 2 — every bridge.reply carries the caller's identity: its bound
// workspace, its Auto and its newest human turn; a user turn that is a message of ours
// (the results we typed) keeps the human turn before it, and a page without message ids
// names the turn by a hash of its text.
#[test]
fn a_reply_is_asked_with_the_chats_workspace_auto_and_human_turn() {
    let mut c = zai_world(true);
    let mut log = Vec::new();
    c.handle(
        1,
        ContinuityInput::TurnEnded {
            tab: TAB,
            user_text: "look at the panes".into(),
            assistant_text: SEND_KEYS.into(),
            user_marker: None,
            message_id: Some("a1".into()),
            user_message_id: Some("u1".into()),
            pressed: false,
            user_stopped: false,
        },
    );
    drain(&mut c, 1, &None, &mut log);
    c.handle(
        2,
        ContinuityInput::TurnEnded {
            tab: TAB,
            user_text: "HERDR_TOOL_RESULTS (1 call)".into(),
            assistant_text: "done".into(),
            user_marker: Some("bridge:9d3c1b7a5e2f4c60/k.0.0".into()),
            message_id: Some("a2".into()),
            user_message_id: Some("u2".into()),
            pressed: false,
            user_stopped: false,
        },
    );
    drain(&mut c, 2, &None, &mut log);
    c.handle(
        3,
        ContinuityInput::TurnEnded {
            tab: TAB,
            user_text: "and now?".into(),
            assistant_text: "ok".into(),
            user_marker: None,
            message_id: None,
            user_message_id: None,
            pressed: false,
            user_stopped: false,
        },
    );
    drain(&mut c, 3, &None, &mut log);
    let asked: Vec<String> = requests(&log, "bridge_reply")
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l.trim_start_matches("request ")).expect("json");
            format!("{} {} {} {}", v["message_id"], v["workspace_id"], v["auto"], v["human_turn"])
        })
        .collect();
    expect![[r#"
        [
            "\"a1\" \"w1\" true \"u1\"",
            "\"a2\" \"w1\" true \"u1\"",
            "\"\" \"w1\" true \"text:1f150bd3973e7147\"",
        ]
    "#]]
    .assert_debug_eq(&asked);
    c.handle(4, ContinuityInput::ToggleAuto { tab: TAB });
    drain(&mut c, 4, &None, &mut log);
    turn(&mut c, 5, SEND_KEYS, true);
    drain(&mut c, 5, &None, &mut log);
    let last = requests(&log, "bridge_reply").last().map(|l| l.contains("\"auto\":false")).unwrap_or(false);
    assert!(last, "Auto off is passed as such: {log:?}");
}

// R: issue 23 item 1 — calls awaiting approval show on the HUD's card (tool, method,
// target, arguments, the mutating tag) and in the Activity timeline once; nothing is
// decided or typed without a press, with Auto on too.
#[test]
fn calls_awaiting_approval_show_a_card_and_nothing_is_decided_without_a_press() {
    let mut c = zai_world(true);
    let mut log = Vec::new();
    let mut runtime = |call: &RuntimeCall| match call {
        RuntimeCall::BridgeReply { .. } => Ok(approval(vec![pending_call(1, "pane.send_keys", true)])),
        _ => Ok(RuntimeAnswer::Subscribed),
    };
    ended(&mut c, 1, SEND_KEYS);
    drain_with(&mut c, 1, &mut log, &mut runtime);
    // The same reply reported again (a replay) asks again and shows the same card.
    turn(&mut c, 2, SEND_KEYS, true);
    drain_with(&mut c, 2, &mut log, &mut runtime);
    let bridge = c.page_view(TAB).and_then(|v| v.bridge).expect("the bridge part of the HUD");
    expect![[r#"
        BridgeView {
            batch_id: Some(
                "bridge:9d3c1b7a5e2f4c60",
            ),
            pending: [
                BridgeCardCall {
                    call: PendingCall {
                        call: 1,
                        tool: "herdr_call",
                        method: Some(
                            "pane.send_keys",
                        ),
                        target: Some(
                            "w1:p1",
                        ),
                        args_preview: "{\"method\":\"pane.send_keys\",\"params\":\"{\\\"pane_id\\\":\\\"w1:p1\\\"",
                        mutating: true,
                        detail: Some(
                            "rm -rf ~\n",
                        ),
                        detail_more: 0,
                    },
                    deciding: false,
                    tag: "hudBridgeMutating",
                    more: None,
                },
            ],
            round_limit: false,
            rounds: Some(
                BridgeRounds {
                    used: 0,
                    limit: 6,
                },
            ),
            card_label: "hudBridgeApprovalLabel",
            target_key: "hudBridgeTarget",
            buttons: [
                BridgeButton {
                    decision: "run",
                    label: "bridgeRun",
                    aria: "bridgeRunLabel",
                },
                BridgeButton {
                    decision: "skip",
                    label: "bridgeSkip",
                    aria: "bridgeSkipLabel",
                },
            ],
        }
    "#]]
    .assert_debug_eq(&bridge);
    assert!(requests(&log, "bridge_decide").is_empty(), "nothing decided without a press: {log:?}");
    assert_eq!(deliveries(&log), 0);
    let entries: Vec<&String> = log.iter().filter(|l| l.starts_with("activity")).collect();
    assert_eq!(entries, ["activity \"withheld\" Code(\"awaiting_approval\")"], "one entry per batch: {log:?}");
}

// R: issue 23 item 1 — Run on the card sends one bridge.decide; when nothing of the batch
// waits any more, the page's last reply is asked again and its results go into the chat
// (Auto off too: the press is the user's); each step is in the Activity timeline.
#[test]
fn run_decides_the_call_then_the_results_are_asked_for_and_sent() {
    let mut c = zai_world(false);
    let mut log = Vec::new();
    let mut decided = false;
    let mut runtime = |call: &RuntimeCall| match call {
        RuntimeCall::BridgeReply { .. } if decided => Ok(batch_results()),
        RuntimeCall::BridgeReply { .. } => Ok(approval(vec![pending_call(1, "pane.send_keys", true)])),
        RuntimeCall::BridgeDecide { .. } => {
            decided = true;
            Ok(RuntimeAnswer::BridgeDecided { pending: 0 })
        }
        _ => Ok(RuntimeAnswer::Subscribed),
    };
    ended(&mut c, 1, SEND_KEYS);
    drain_with(&mut c, 1, &mut log, &mut runtime);
    log.clear();
    decide(&mut c, 2, BATCH, 1, BridgeDecision::Run);
    drain_with(&mut c, 2, &mut log, &mut runtime);
    expect![[r#"
        [
            "request {\"call\":\"bridge_decide\",\"conversation\":\"zai:conv:7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f\",\"batch_id\":\"bridge:9d3c1b7a5e2f4c60\",\"index\":1,\"decision\":\"run\"}",
            "activity \"sent\" Code(\"run_approved\")",
            "request {\"call\":\"bridge_reply\",\"conversation\":\"zai:conv:7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f\",\"message_id\":\"message-a3\",\"text\":\"{\\\"tool\\\":\\\"herdr_call\\\",\\\"args\\\":{\\\"method\\\":\\\"pane.send_keys\\\",\\\"params\\\":\\\"{\\\\\\\"pane_id\\\\\\\":\\\\\\\"w1:p1\\\\\\\",\\\\\\\"keys\\\\\\\":\\\\\\\"rm -rf ~\\\\\\\\n\\\\\\\"}\\\"}}\",\"workspace_id\":\"w1\",\"auto\":false,\"human_turn\":\"text:f0d583ed1832339b\"}",
            "deliver bridge:9d3c1b7a5e2f4c60/0.0.0\nHERDR_TOOL_RESULTS (1 call)\n{\"call\":1,\"ok\":true}\n[herdr-continuity bridge:9d3c1b7a5e2f4c60/0.0.0 ref=zai:conv:7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f]",
            "activity \"sent\" Code(\"send_pressed\")",
        ]
    "#]]
    .assert_debug_eq(&log);
    let bridge = c.page_view(TAB).and_then(|v| v.bridge).expect("rounds stay shown");
    assert!(bridge.batch_id.is_none() && bridge.pending.is_empty(), "the card is gone: {bridge:?}");
    assert_eq!(bridge.rounds, Some(BridgeRounds { used: 1, limit: 6 }));
}

// R: issue 23 items 1, 6 — only a call the card shows can be decided, once: another batch,
// a call out of range, a second press while the first is on its way, and a chat without a
// card (ChatGPT, unbound) ask the runtime nothing.
#[test]
fn a_decision_for_a_call_not_on_the_card_asks_nothing() {
    let mut c = zai_world(true);
    let mut log = Vec::new();
    decide(&mut c, 1, BATCH, 1, BridgeDecision::Run);
    drain(&mut c, 1, &None, &mut log);
    assert!(requests(&log, "bridge_decide").is_empty(), "no card yet: {log:?}");
    let mut runtime = |call: &RuntimeCall| match call {
        RuntimeCall::BridgeReply { .. } => Ok(approval(vec![pending_call(1, "pane.send_keys", true)])),
        _ => Ok(RuntimeAnswer::Subscribed),
    };
    ended(&mut c, 2, SEND_KEYS);
    drain_with(&mut c, 2, &mut log, &mut runtime);
    decide(&mut c, 3, "bridge:0000000000000000", 1, BridgeDecision::Run);
    decide(&mut c, 3, BATCH, 2, BridgeDecision::Run);
    decide(&mut c, 3, BATCH, 0, BridgeDecision::Skip);
    assert!(c.poll().into_iter().chain(std::iter::from_fn(|| c.poll())).all(|o| !matches!(o, ContinuityOutput::Request { .. })));
    // Two presses before the answer: one request; the card shows the call as deciding.
    decide(&mut c, 4, BATCH, 1, BridgeDecision::Run);
    decide(&mut c, 4, BATCH, 1, BridgeDecision::Skip);
    let mut asked = 0;
    while let Some(output) = c.poll() {
        asked += usize::from(matches!(output, ContinuityOutput::Request { call: RuntimeCall::BridgeDecide { .. }, .. }));
    }
    assert_eq!(asked, 1);
    assert!(c.page_view(TAB).and_then(|v| v.bridge).is_some_and(|b| b.pending[0].deciding));

    let (mut chatgpt, _) = super::continuity::bound_with_auto(true);
    chatgpt.handle(1, ContinuityInput::BridgeDecide { tab: TAB, batch_id: BATCH.into(), call: 1, decision: BridgeDecision::Run });
    chatgpt.handle(1, ContinuityInput::BridgePrompt { tab: TAB });
    let mut log = Vec::new();
    drain(&mut chatgpt, 1, &None, &mut log);
    assert!(log.iter().all(|l| !l.contains("bridge")), "{log:?}");
}

// R: issue 23 item 1 — Skip and Run on a batch of two: the first decision leaves one call
// waiting (nothing asked again), the second asks for the results; a refused decision says
// why in the HUD and the call's buttons come back.
#[test]
fn skip_and_run_each_call_and_a_refused_decision_says_why() {
    let mut c = zai_world(true);
    let mut log = Vec::new();
    let mut waiting = 2_u32;
    let mut refuse_next = true;
    let mut runtime = |call: &RuntimeCall| match call {
        RuntimeCall::BridgeReply { .. } if waiting == 0 => Ok(batch_results()),
        RuntimeCall::BridgeReply { .. } => Ok(approval(vec![pending_call(1, "pane.send_keys", true), pending_call(2, "pane.read", false)])),
        RuntimeCall::BridgeDecide { .. } if std::mem::take(&mut refuse_next) => {
            Err(CallError { code: ErrorCode::BadRequest, message: "call 1 of bridge:9d3c1b7a5e2f4c60 was already decided".into() })
        }
        RuntimeCall::BridgeDecide { .. } => {
            waiting -= 1;
            Ok(RuntimeAnswer::BridgeDecided { pending: waiting })
        }
        _ => Ok(RuntimeAnswer::Subscribed),
    };
    ended(&mut c, 1, SEND_KEYS);
    drain_with(&mut c, 1, &mut log, &mut runtime);
    decide(&mut c, 2, BATCH, 1, BridgeDecision::Skip);
    drain_with(&mut c, 2, &mut log, &mut runtime);
    assert!(log.iter().any(|l| l.starts_with("notice bridgeDecideFailed [\"1\", \"call 1 of bridge")), "{log:?}");
    let card = c.page_view(TAB).and_then(|v| v.bridge).expect("card");
    assert_eq!((card.pending.len(), card.pending[0].deciding), (2, false), "the call waits again: {card:?}");
    decide(&mut c, 3, BATCH, 1, BridgeDecision::Skip);
    drain_with(&mut c, 3, &mut log, &mut runtime);
    assert_eq!(requests(&log, "bridge_reply").len(), 1, "one call still waits: nothing asked again");
    assert_eq!(c.page_view(TAB).and_then(|v| v.bridge).map(|b| b.pending.len()), Some(1));
    decide(&mut c, 4, BATCH, 2, BridgeDecision::Run);
    drain_with(&mut c, 4, &mut log, &mut runtime);
    assert_eq!(requests(&log, "bridge_reply").len(), 2, "{log:?}");
    assert_eq!(log.iter().filter(|l| l.starts_with("deliver bridge:9d3c1b7a5e2f4c60/")).count(), 1);
    let steps: Vec<&String> = log.iter().filter(|l| l.starts_with("activity")).collect();
    assert_eq!(
        steps,
        [
            "activity \"withheld\" Code(\"awaiting_approval\")",
            "activity \"withheld\" Code(\"call_skipped\")",
            "activity \"sent\" Code(\"run_approved\")",
            "activity \"sent\" Code(\"send_pressed\")",
        ]
    );
}

// R: issue 23 (M7) — the runtime's round limit shows as a HUD line (with the figures) and
// one Activity entry; nothing is typed.
#[test]
fn the_round_limit_shows_a_line_and_one_activity_entry() {
    let mut c = zai_world(true);
    let mut log = Vec::new();
    let mut runtime = |call: &RuntimeCall| match call {
        RuntimeCall::BridgeReply { .. } => {
            Ok(RuntimeAnswer::Bridge { outcome: BridgeOutcome::RoundLimit, rounds: Some(BridgeRounds { used: 6, limit: 6 }) })
        }
        _ => Ok(RuntimeAnswer::Subscribed),
    };
    ended(&mut c, 1, SEND_KEYS);
    drain_with(&mut c, 1, &mut log, &mut runtime);
    turn(&mut c, 2, SEND_KEYS, true);
    drain_with(&mut c, 2, &mut log, &mut runtime);
    let bridge = c.page_view(TAB).and_then(|v| v.bridge).expect("the line");
    assert!(bridge.round_limit && bridge.pending.is_empty(), "{bridge:?}");
    assert_eq!(bridge.rounds, Some(BridgeRounds { used: 6, limit: 6 }));
    assert_eq!(log.iter().filter(|l| l.starts_with("activity")).collect::<Vec<_>>(), ["activity \"withheld\" Code(\"round_limit\")"]);
    assert_eq!(deliveries(&log), 0);
}

// R: issue 23 item 6 — Insert JSON tool prompt asks the runtime's bridge.prompt over the
// worker's one companion connection (a request like every other, not a port of its own)
// and puts the text into the composer; a failure says why; offline asks nothing.
#[test]
fn the_tool_prompt_is_asked_over_the_worker_connection_and_inserted() {
    let mut c = zai_world(false);
    let mut log = Vec::new();
    let mut runtime = |call: &RuntimeCall| match call {
        RuntimeCall::BridgePrompt { .. } => Ok(RuntimeAnswer::BridgePrompt { text: "[herdr-continuity JSON bridge v1]\n…".into() }),
        _ => Ok(RuntimeAnswer::Subscribed),
    };
    c.handle(1, ContinuityInput::BridgePrompt { tab: TAB });
    c.handle(1, ContinuityInput::BridgePrompt { tab: TAB });
    drain_with(&mut c, 1, &mut log, &mut runtime);
    expect![[r#"
        [
            "request {\"call\":\"bridge_prompt\",\"session_ref\":\"zai:conv:7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f\"}",
            "request {\"call\":\"bridge_prompt\",\"session_ref\":\"zai:conv:7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f\"}",
            "insert [herdr-continuity JSON bridge v1]\n…",
            "insert [herdr-continuity JSON bridge v1]\n…",
        ]
    "#]]
    .assert_debug_eq(&log);
    log.clear();
    c.handle(2, ContinuityInput::BridgePrompt { tab: TAB });
    drain_with(&mut c, 2, &mut log, &mut |_| Err(CallError { code: ErrorCode::Error, message: "the prompt is not available".into() }));
    assert_eq!(log.last().map(String::as_str), Some("notice bridgePromptFailed [\"the prompt is not available\"]"));
    c.handle(3, ContinuityInput::LinkDown);
    log.clear();
    c.handle(3, ContinuityInput::BridgePrompt { tab: TAB });
    drain_with(&mut c, 3, &mut log, &mut runtime);
    assert!(log.iter().all(|l| !l.starts_with("request")) && log.iter().any(|l| l.starts_with("notice bridgePromptFailed")), "{log:?}");
}

// R: issue 23 item 2 — a card belongs to the chat it was asked for: an answer that comes
// after the tab moved to another bound chat shows nothing there, and Run there asks nothing.
#[test]
fn an_answer_for_a_chat_the_tab_left_shows_no_card_there() {
    let mut c = zai_world(false);
    ended(&mut c, 1, SEND_KEYS);
    let mut reply_id = None;
    while let Some(output) = c.poll() {
        if let ContinuityOutput::Request { id, call: RuntimeCall::BridgeReply { .. } } = output {
            reply_id = Some(id);
        }
    }
    // The tab moves to another z.ai conversation, bound too, before the runtime answers.
    let other = PageReport { url: "https://chat.z.ai/c/0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e".into(), ..zai_page() };
    c.handle(2, ContinuityInput::PageReported { tab: TAB, report: other });
    c.handle(2, ContinuityInput::Bind { tab: TAB, workspace: CatalogWorkspace { workspace_id: "w1".into(), label: "api".into() } });
    while c.poll().is_some() {}
    c.handle(
        3,
        ContinuityInput::Answered {
            id: reply_id.expect("bridge.reply asked"),
            result: Ok(approval(vec![pending_call(1, "pane.send_keys", true)])),
        },
    );
    assert_eq!(c.page_view(TAB).and_then(|v| v.bridge), None, "no card of the other chat here");
    decide(&mut c, 4, BATCH, 1, BridgeDecision::Run);
    let mut log = Vec::new();
    drain(&mut c, 4, &None, &mut log);
    assert!(requests(&log, "bridge_decide").is_empty(), "{log:?}");
}

// R: issue 23 item 2 — calls the runtime refused (another workspace, another chat's ref)
// are in the Activity timeline, once per batch, each with its position; a replay of the
// same results records nothing again.
#[test]
fn refused_calls_are_in_the_activity_timeline_once() {
    let mut c = zai_world(false);
    let mut log = Vec::new();
    let text = "HERDR_TOOL_RESULTS (3 calls)\n{\"call\":1,\"error\":\"refused\",\"message\":\"pane w2:p1 is not in workspace w1\",\"ok\":false,\"tool\":\"herdr_call\"}\n{\"call\":2,\"ok\":true,\"result\":{},\"tool\":\"herdr_inspect\"}\n{\"call\":3,\"error\":\"refused\",\"message\":\"herdr_prompt reports to this chat only\",\"ok\":false,\"tool\":\"herdr_prompt\"}\nWrite the next tool call lines, or answer the user.";
    let mut runtime = |call: &RuntimeCall| match call {
        RuntimeCall::BridgeReply { .. } => Ok(RuntimeAnswer::Bridge {
            outcome: BridgeOutcome::Results(BridgeResults { delivery_id: BATCH.into(), text: text.into(), delivered: false }),
            rounds: None,
        }),
        _ => Ok(RuntimeAnswer::Subscribed),
    };
    ended(&mut c, 1, SEND_KEYS);
    drain_with(&mut c, 1, &mut log, &mut runtime);
    turn(&mut c, 2, SEND_KEYS, true);
    drain_with(&mut c, 2, &mut log, &mut runtime);
    let refused: Vec<&String> = log.iter().filter(|l| l.contains("call_refused")).collect();
    assert_eq!(refused, ["activity \"withheld\" Code(\"call_refused\")", "activity \"withheld\" Code(\"call_refused\")"], "{log:?}");
    let mut ids = Vec::new();
    let mut c2 = zai_world(false);
    ended(&mut c2, 1, SEND_KEYS);
    while let Some(output) = c2.poll() {
        match output {
            ContinuityOutput::Request { id, call } => {
                let result = runtime(&call);
                c2.handle(1, ContinuityInput::Answered { id, result });
            }
            ContinuityOutput::Activity(a) => ids.push(a.id.unwrap_or_default()),
            _ => {}
        }
    }
    assert_eq!(ids, ["bridge:9d3c1b7a5e2f4c60#1", "bridge:9d3c1b7a5e2f4c60#3"]);
}

// R: issue 23 item 1 (fences on real pages) — the bridge reads the whole reply from its
// start: a fence that opens before the judge's 12 000-character tail and a call line inside
// it after that mark reach the runtime with the opening fence (failed before: the reply
// was cut to its last 12 000 characters, so the call looked live).
#[test]
fn a_long_reply_goes_to_the_bridge_whole_so_its_fences_hold() {
    let mut c = zai_world(true);
    let mut log = Vec::new();
    let filler = "x".repeat(79);
    let reply = format!("```\n{}\n{SEND_KEYS}\n```", vec![filler.as_str(); 200].join("\n"));
    assert!(reply.chars().count() > 12_000 + SEND_KEYS.len() + 8);
    ended(&mut c, 1, &reply);
    drain(&mut c, 1, &None, &mut log);
    let asked = requests(&log, "bridge_reply");
    assert_eq!(asked.len(), 1, "{log:?}");
    let v: serde_json::Value = serde_json::from_str(asked[0].trim_start_matches("request ")).expect("json");
    assert_eq!(v["text"].as_str(), Some(reply.as_str()), "the whole reply, its opening fence first");
}

// R: issue 23 item 1 — a reply over the page's 64 KiB comes with its middle left out (the
// journal's cut line); a fence opening in that middle would make a fenced call line after
// it look live, so the bridge reads only what comes before the cut line: fail closed, a
// call line past it is never asked (failed before: the text went whole, tail included).
#[test]
fn a_reply_cut_in_its_middle_goes_to_the_bridge_only_up_to_the_cut() {
    let mut c = zai_world(true);
    let mut log = Vec::new();
    let head = "I will look first.\n{\"tool\":\"herdr_inspect\",\"args\":{}}";
    let reply = format!("{head}\n[… 70000 characters left out by herdr-continuity …]\n{SEND_KEYS}\n```");
    ended(&mut c, 1, &reply);
    drain(&mut c, 1, &None, &mut log);
    let asked = requests(&log, "bridge_reply");
    assert_eq!(asked.len(), 1, "{log:?}");
    let v: serde_json::Value = serde_json::from_str(asked[0].trim_start_matches("request ")).expect("json");
    assert_eq!(v["text"].as_str(), Some(head), "only the part before the cut line");
}

// R: issue 23 item 1 (M7) — the human turn comes from the page: after a worker restart in
// an Auto loop the newest user turn is our own results message, yet the page's facts name
// the human's turn before it, so rounds are counted on (failed before: the restarted worker
// sent `human_turn: ""`, a fresh allowance of 6 rounds every restart).
#[test]
fn a_restarted_worker_derives_the_human_turn_from_the_page() {
    let mut c = zai_world(true);
    let mut log = Vec::new();
    let human = PageReport { user_turns: 2, last_user_turn_id: Some("u2".into()), last_human_turn_id: Some("u1".into()), ..zai_page() };
    c.handle(1, ContinuityInput::PageReported { tab: TAB, report: human.clone() });
    drain(&mut c, 1, &None, &mut log);
    let mut c = restart(&c, 2);
    c.handle(2, ContinuityInput::LinkUp);
    c.handle(2, ContinuityInput::PageReported { tab: TAB, report: PageReport { page_load: "load-2".into(), ..human } });
    drain(&mut c, 2, &None, &mut log);
    let ours = Some("bridge:9d3c1b7a5e2f4c60/k.0.0".into());
    c.handle(
        3,
        ContinuityInput::TurnEnded {
            tab: TAB,
            user_text: "HERDR_TOOL_RESULTS (1 call)".into(),
            assistant_text: SEND_KEYS.into(),
            user_marker: ours,
            message_id: Some("a2".into()),
            user_message_id: Some("u2".into()),
            pressed: false,
            user_stopped: false,
        },
    );
    drain(&mut c, 3, &None, &mut log);
    let asked = requests(&log, "bridge_reply");
    assert_eq!(asked.len(), 1, "{log:?}");
    assert!(asked[0].contains("\"human_turn\":\"u1\""), "the human's turn the page shows: {}", asked[0]);
}

// R: issue 23 item 1 (Activity) — a read-only call the runtime ran on its own with Auto on
// gets its own entry (tool, `auto_ran_read_only`); a call the user approved with Run does
// not (its entry is `run_approved`); with Auto off there is none (failed before: no entry).
#[test]
fn calls_run_with_auto_have_their_own_activity_entries() {
    let text = "HERDR_TOOL_RESULTS (2 calls)\n{\"call\":1,\"ok\":true,\"result\":{\"tool\":\"x\"},\"tool\":\"herdr_inspect\"}\n{\"call\":2,\"ok\":true,\"result\":{},\"tool\":\"herdr_call\"}\nWrite the next tool call lines, or answer the user.";
    let run = |auto: bool, approve: bool| {
        let mut c = zai_world(auto);
        let mut asked = 0;
        let mut runtime = |call: &RuntimeCall| match call {
            RuntimeCall::BridgeReply { .. } if approve && asked == 0 => {
                asked += 1;
                Ok(approval(vec![pending_call(2, "pane.send_keys", true)]))
            }
            RuntimeCall::BridgeReply { .. } => Ok(RuntimeAnswer::Bridge {
                outcome: BridgeOutcome::Results(BridgeResults { delivery_id: BATCH.into(), text: text.into(), delivered: false }),
                rounds: None,
            }),
            RuntimeCall::BridgeDecide { .. } => Ok(RuntimeAnswer::BridgeDecided { pending: 0 }),
            _ => Ok(RuntimeAnswer::Subscribed),
        };
        let mut entries = Vec::new();
        let mut step = |c: &mut Continuity, entries: &mut Vec<String>| {
            while let Some(output) = c.poll() {
                match output {
                    ContinuityOutput::Request { id, call } => {
                        let result = runtime(&call);
                        c.handle(1, ContinuityInput::Answered { id, result });
                    }
                    ContinuityOutput::Activity(a) => {
                        entries.push(format!("{:?} {} {}", a.reason, a.id.unwrap_or_default(), a.tool.unwrap_or_default()))
                    }
                    _ => {}
                }
            }
        };
        ended(&mut c, 1, SEND_KEYS);
        step(&mut c, &mut entries);
        if approve {
            decide(&mut c, 2, BATCH, 2, BridgeDecision::Run);
            step(&mut c, &mut entries);
        }
        entries.into_iter().filter(|e| !e.contains("auto_on") && !e.contains("send_pressed")).collect::<Vec<_>>()
    };
    expect![[r#"
        [
            "Code(\"auto_ran_read_only\") bridge:9d3c1b7a5e2f4c60#1 herdr_inspect",
            "Code(\"auto_ran_read_only\") bridge:9d3c1b7a5e2f4c60#2 herdr_call",
        ]
    "#]]
    .assert_debug_eq(&run(true, false));
    expect![[r#"
        [
            "Code(\"awaiting_approval\") bridge:9d3c1b7a5e2f4c60 ",
            "Code(\"run_approved\") bridge:9d3c1b7a5e2f4c60#2 ",
            "Code(\"auto_ran_read_only\") bridge:9d3c1b7a5e2f4c60#1 herdr_inspect",
        ]
    "#]]
    .assert_debug_eq(&run(true, true));
    assert_eq!(run(false, false), Vec::<String>::new(), "Auto off: nothing ran on its own");
}

// Issue 26 Found 3: with Auto on, tool results that arrive while the site rate-limits the
// account wait for the cooldown's end and are typed then, once (they were typed at once).
#[test]
fn bridge_results_wait_for_the_rate_limit_cooldown_and_go_after_it() {
    use ext_core::request_pacer::CooldownSource;
    let mut c = zai_world(true);
    let mut log = Vec::new();
    c.handle(
        1,
        ContinuityInput::RateLimited { tab: TAB, page_load: "load-1".into(), source: CooldownSource::PageNotice, retry_after_ms: None },
    );
    ended(&mut c, 2, "{\"tool\":\"herdr_inspect\",\"args\":{}}");
    drain(&mut c, 2, &results(), &mut log);
    assert_eq!(deliveries(&log), 0, "typed during the cooldown: {log:?}");
    // No Retry-After: the first back-off step, 30 s.
    assert_eq!(c.page_view(TAB).and_then(|v| v.cooldown_until), Some(30_001));
    c.handle_timeout(30_001);
    drain(&mut c, 30_001, &results(), &mut log);
    assert_eq!(deliveries(&log), 1, "{log:?}");
    c.handle_timeout(90_000);
    drain(&mut c, 90_000, &results(), &mut log);
    assert_eq!(deliveries(&log), 1, "once");
}

// Review of issue 26: results whose cooldown ends while the page is busy stay held and go
// at the page's next idle report, once (they were dropped: the model waited for ever).
#[test]
fn bridge_results_held_past_a_busy_cooldown_end_go_when_the_page_is_idle() {
    use ext_core::request_pacer::CooldownSource;
    let mut c = zai_world(true);
    let mut log = Vec::new();
    c.handle(
        1,
        ContinuityInput::RateLimited { tab: TAB, page_load: "load-1".into(), source: CooldownSource::PageNotice, retry_after_ms: None },
    );
    ended(&mut c, 2, "{\"tool\":\"herdr_inspect\",\"args\":{}}");
    drain(&mut c, 2, &results(), &mut log);
    assert_eq!(deliveries(&log), 0, "typed during the cooldown: {log:?}");
    // The user starts a reply before the cooldown ends: the page is busy at its end.
    c.handle(20_000, ContinuityInput::PageReported { tab: TAB, report: PageReport { generating: true, ..zai_page() } });
    drain(&mut c, 20_000, &results(), &mut log);
    c.handle_timeout(30_001);
    drain(&mut c, 30_001, &results(), &mut log);
    assert_eq!(deliveries(&log), 0, "typed into a busy page: {log:?}");
    c.handle(40_000, ContinuityInput::PageReported { tab: TAB, report: zai_page() });
    drain(&mut c, 40_000, &results(), &mut log);
    assert_eq!(deliveries(&log), 1, "the held results went when the page was idle: {log:?}");
    c.handle(50_000, ContinuityInput::PageReported { tab: TAB, report: PageReport { url: ZAI.into(), ..zai_page() } });
    drain(&mut c, 50_000, &results(), &mut log);
    assert_eq!(deliveries(&log), 1, "once");
}

const CALL: &str = "{\"tool\":\"herdr_inspect\",\"args\":{}}";

// Leftovers of issue 26: results held by a cooldown were kept in memory only; a worker
// restart lost them and the model waited for ever. Now the owed reply is persisted: the
// restarted worker asks the runtime again (it answers from its record) and types the results
// once, after the cooldown; the confirmed delivery is reported (`bridge.delivered`).
// Failed before: nothing was typed after the restart.
#[test]
fn results_held_by_a_cooldown_survive_a_worker_restart_and_go_once() {
    use ext_core::request_pacer::CooldownSource;
    let mut c = zai_world(true);
    let mut log = Vec::new();
    c.handle(
        1,
        ContinuityInput::RateLimited { tab: TAB, page_load: "load-1".into(), source: CooldownSource::PageNotice, retry_after_ms: None },
    );
    ended(&mut c, 2, CALL);
    drain(&mut c, 2, &results(), &mut log);
    assert_eq!(deliveries(&log), 0, "typed during the cooldown: {log:?}");
    let shown = c.page(TAB).cloned().expect("the page");
    let mut c = restart(&c, 3);
    c.handle(3, ContinuityInput::LinkUp);
    c.handle(3, ContinuityInput::PageReported { tab: TAB, report: shown });
    drain(&mut c, 3, &results(), &mut log);
    assert_eq!(deliveries(&log), 0, "still cooling: {log:?}");
    c.handle_timeout(30_001);
    drain(&mut c, 30_001, &results(), &mut log);
    assert_eq!(deliveries(&log), 1, "{log:?}");
    confirm(&mut c, 30_002, "bridge:5b0e6c2d9a174f38");
    drain(&mut c, 30_002, &results(), &mut log);
    assert_eq!(requests(&log, "bridge_delivered").len(), 1, "{log:?}");
    let again = restart(&c, 30_003);
    let mut c = again;
    c.handle(30_003, ContinuityInput::LinkUp);
    reported_again_types_nothing(&mut c, 30_003, &mut log);
}

/// A z.ai chat with Auto on whose reply at 1 ms holds a bridge call: its `bridge.reply` and
/// the other requests are taken out and not answered.
fn reply_sent_unanswered() -> (Continuity, Vec<String>) {
    let mut c = zai_world(true);
    ended(&mut c, 1, CALL);
    while c.poll().is_some() {}
    (c, Vec::new())
}

/// The page reports itself again at `now` (as it was, or idle): results already typed once
/// are not typed again.
fn reported_again_types_nothing(c: &mut Continuity, now: u64, log: &mut Vec<String>) {
    let page = c.page(TAB).cloned().unwrap_or_else(zai_page);
    c.handle(now, ContinuityInput::PageReported { tab: TAB, report: page });
    drain(c, now, &results(), log);
    assert_eq!(deliveries(log), 1, "once: {log:?}");
}

// Leftovers of issue 26: a `bridge.reply` whose answer never came (the runtime restarted
// while the calls ran, the link dropped) left its results in the runtime and nothing asked
// for them. Now the reply is asked again at the next connect and its results typed once.
// Failed before: nothing was asked again, nothing typed.
#[test]
fn a_reply_whose_answer_never_came_is_asked_again_at_the_next_connect() {
    // The requests go out; the runtime restarts before it answers.
    let (mut c, mut log) = reply_sent_unanswered();
    c.handle(2, ContinuityInput::LinkDown);
    drain(&mut c, 2, &results(), &mut log);
    assert_eq!(deliveries(&log), 0);
    c.handle(3, ContinuityInput::LinkUp);
    drain(&mut c, 3, &results(), &mut log);
    assert_eq!(requests(&log, "bridge_reply").len(), 1, "{log:?}");
    assert_eq!(deliveries(&log), 1, "{log:?}");
    c.handle(4, ContinuityInput::LinkDown);
    c.handle(5, ContinuityInput::LinkUp);
    drain(&mut c, 5, &results(), &mut log);
    assert_eq!(requests(&log, "bridge_reply").len(), 1, "the results are on their way: not asked again");
    assert_eq!(deliveries(&log), 1);
}

// Leftovers of issue 26: results answered while the page was busy (the user had started
// typing, or a reply streamed) were dropped. Now they go at the page's next idle report,
// once; and a delivery that certainly did not land is offered again.
// Failed before: nothing was typed.
#[test]
fn results_answered_to_a_busy_page_go_when_it_is_idle() {
    use super::continuity::not_sent;
    let mut c = zai_world(true);
    let mut log = Vec::new();
    ended(&mut c, 1, CALL);
    c.handle(1, ContinuityInput::PageReported { tab: TAB, report: PageReport { generating: true, ..zai_page() } });
    drain(&mut c, 1, &results(), &mut log);
    assert_eq!(deliveries(&log), 0, "typed into a busy page: {log:?}");
    c.handle(2, ContinuityInput::PageReported { tab: TAB, report: zai_page() });
    drain(&mut c, 2, &results(), &mut log);
    assert_eq!(deliveries(&log), 1, "{log:?}");
    not_sent(&mut c, 3, "bridge:5b0e6c2d9a174f38");
    drain(&mut c, 3, &results(), &mut log);
    c.handle(4, ContinuityInput::PageReported { tab: TAB, report: zai_page() });
    drain(&mut c, 4, &results(), &mut log);
    assert_eq!(deliveries(&log), 2, "offered again after it certainly did not land: {log:?}");
    confirm(&mut c, 5, "bridge:5b0e6c2d9a174f38");
    c.handle(6, ContinuityInput::PageReported { tab: TAB, report: zai_page() });
    drain(&mut c, 6, &results(), &mut log);
    assert_eq!(deliveries(&log), 2, "once confirmed, never again");
}

// Review 35 M1: after a worker restart the tab's bridge state is gone (only the owed book is
// restored); the runtime's answer to the owed reply asked again stored its results, then
// found no tab state and returned: nothing offered them until the next page report, which
// an idle chat never sends. Now the stored results are offered at once.
// Failed before: 0 deliveries.
#[test]
fn owed_results_asked_again_after_a_worker_restart_go_without_another_page_report() {
    // The `bridge.reply` is out; the worker restarts before its answer comes.
    let (c, mut log) = reply_sent_unanswered();
    let shown = c.page(TAB).cloned().expect("the page");
    let mut c = restart(&c, 2);
    c.handle(2, ContinuityInput::LinkUp);
    c.handle(2, ContinuityInput::PageReported { tab: TAB, report: shown });
    drain(&mut c, 2, &results(), &mut log);
    assert_eq!(requests(&log, "bridge_reply").len(), 1, "{log:?}");
    assert_eq!(deliveries(&log), 1, "owed results waited for another page report: {log:?}");
    confirm(&mut c, 3, "bridge:5b0e6c2d9a174f38");
    drain(&mut c, 3, &results(), &mut log);
    reported_again_types_nothing(&mut c, 4, &mut log);
}

// Review 35 L1: the same reply read again (Send tool results reads the page's last turn
// now) with a text that differs at all dropped the owed entry whose results were on their
// way and owed them afresh; when that delivery then ended with no evidence either way
// (abandoned: never typed again on its own) the fresh entry typed the same results again.
// Now the same message id is the same reply, and an entry on its way is never replaced.
// Failed before: 2 deliveries.
#[test]
fn the_same_reply_read_again_does_not_type_its_results_a_second_time() {
    use ext_core::continuity::DeliveryOutcome;
    use ext_core::delivery_ledger::{SUBMITTED_DEADLINE_MS, UNCERTAIN_GIVE_UP_MS};
    let mut c = zai_world(true);
    let mut log = Vec::new();
    ended(&mut c, 1, CALL);
    drain(&mut c, 1, &results(), &mut log);
    assert_eq!(deliveries(&log), 1, "{log:?}");
    // Send was clicked; whether the page took it is not known.
    let id = super::continuity::active_id(&c, "bridge:5b0e6c2d9a174f38");
    c.handle(2, ContinuityInput::DeliveryReport { tab: TAB, id, outcome: DeliveryOutcome::Submitted });
    // Send tool results reads the reply again: the page renders it a little differently.
    turn(&mut c, 3, &format!("{CALL}\n"), true);
    drain(&mut c, 3, &results(), &mut log);
    assert_eq!(deliveries(&log), 1, "{log:?}");
    // The delivery is never seen: uncertain, then abandoned on the idle page.
    let t = 3 + SUBMITTED_DEADLINE_MS + 1;
    c.handle_timeout(t);
    c.handle(t, ContinuityInput::PageReported { tab: TAB, report: zai_page() });
    drain(&mut c, t, &results(), &mut log);
    let t = t + UNCERTAIN_GIVE_UP_MS + 1;
    c.handle_timeout(t);
    drain(&mut c, t, &results(), &mut log);
    assert!(log.iter().any(|l| l.contains("no_evidence")), "abandoned: {log:?}");
    c.handle(t + 1, ContinuityInput::PageReported { tab: TAB, report: zai_page() });
    drain(&mut c, t + 1, &results(), &mut log);
    c.handle(t + 2, ContinuityInput::LinkDown);
    c.handle(t + 2, ContinuityInput::LinkUp);
    drain(&mut c, t + 2, &results(), &mut log);
    assert_eq!(deliveries(&log), 1, "typed a second time: {log:?}");
}

// Review 35 L2: an answer to `bridge.reply` was credited to the first owed entry of its
// chat still asking, whichever reply it answered: the results of a reply asked with Auto
// off (they wait for Send tool results) were typed in place of the owed reply's, whose own
// answer then found nothing asking and was lost. Now each answer is matched to its ask.
// Failed before: the other reply's results typed, the owed ones never.
#[test]
fn an_answer_is_credited_only_to_the_owed_reply_it_answers() {
    let mut c = zai_world(true);
    let reply = |c: &mut Continuity, now: u64, message_id: &str| {
        c.handle(
            now,
            ContinuityInput::TurnEnded {
                tab: TAB,
                user_text: "look at the panes".into(),
                assistant_text: CALL.into(),
                user_marker: None,
                message_id: Some(message_id.into()),
                user_message_id: None,
                pressed: false,
                user_stopped: false,
            },
        );
    };
    let asks = |c: &mut Continuity| {
        let mut ids = Vec::new();
        while let Some(output) = c.poll() {
            if let ContinuityOutput::Request { id, call: RuntimeCall::BridgeReply { message_id, .. } } = output {
                ids.push((id, message_id));
            }
        }
        ids
    };
    // Reply a1 ends with Auto on: its results are owed. Its answer is slow.
    reply(&mut c, 1, "message-a1");
    let owed = asks(&mut c);
    // Auto off: reply b2 is asked about, its results wait for Send tool results.
    c.handle(2, ContinuityInput::ToggleAuto { tab: TAB });
    reply(&mut c, 2, "message-b2");
    let other = asks(&mut c);
    c.handle(3, ContinuityInput::ToggleAuto { tab: TAB });
    while c.poll().is_some() {}
    assert_eq!((owed.len(), other.len()), (1, 1), "{owed:?} {other:?}");
    let answer = |id: &str| {
        Ok(RuntimeAnswer::Bridge {
            outcome: BridgeOutcome::Results(BridgeResults {
                delivery_id: id.into(),
                text: "HERDR_TOOL_RESULTS (1 call)\n{\"call\":1,\"ok\":true}".into(),
                delivered: false,
            }),
            rounds: None,
        })
    };
    let mut log = Vec::new();
    c.handle(4, ContinuityInput::Answered { id: other[0].0, result: answer("bridge:bbbbbbbbbbbbbbbb") });
    drain(&mut c, 4, &None, &mut log);
    c.handle(5, ContinuityInput::Answered { id: owed[0].0, result: answer("bridge:aaaaaaaaaaaaaaaa") });
    drain(&mut c, 5, &None, &mut log);
    let typed = |stem: &str| log.iter().filter(|l| l.starts_with(&format!("deliver {stem}/"))).count();
    assert_eq!(typed("bridge:bbbbbbbbbbbbbbbb"), 0, "results nobody asked to type: {log:?}");
    assert_eq!(typed("bridge:aaaaaaaaaaaaaaaa"), 1, "the owed results: {log:?}");
}
