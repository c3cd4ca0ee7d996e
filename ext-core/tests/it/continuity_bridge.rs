//! The JSON bridge's thin part in the composed loop (SPEC O2, O3, M6): a bound z.ai /
//! DeepSeek conversation's ended reply → `bridge.reply` → its results message through the
//! ledger once (Auto on, or the HUD's Send) → `bridge.delivered` after confirmation; never
//! on ChatGPT, never for an unbound chat, never again for a delivered or visible message.

use ext_core::binding::CatalogWorkspace;
use ext_core::continuity::{BridgeResults, Continuity, ContinuityInput, ContinuityOutput, PageReport, RuntimeAnswer, RuntimeCall};
use expect_test::expect;

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
    c.handle(now, ContinuityInput::TurnEnded { tab: TAB, user_text: "look at the panes".into(), assistant_text: reply.into(), user_marker: None, message_id: Some("message-a3".into()) });
}

/// Drains outputs into a log; `bridge.reply` is answered with `results`, other calls
/// neutrally.
fn drain(c: &mut Continuity, now: u64, results: &Option<BridgeResults>, log: &mut Vec<String>) {
    while let Some(output) = c.poll() {
        match output {
            ContinuityOutput::Request { id, call } => {
                log.push(format!("request {}", serde_json::to_string(&call).expect("json")));
                let answer = match call {
                    RuntimeCall::BridgeReply { .. } => RuntimeAnswer::Bridge { results: results.clone() },
                    RuntimeCall::BridgePrompt { .. } => RuntimeAnswer::BridgePrompt { text: "[herdr-continuity JSON bridge v1] …".into() },
                    _ => RuntimeAnswer::Bridge { results: None },
                };
                c.handle(now, ContinuityInput::Answered { id, result: Ok(answer) });
            }
            ContinuityOutput::Deliver { id, text, .. } => log.push(format!("deliver {id}\n{text}")),
            ContinuityOutput::Insert { text, .. } => log.push(format!("insert {text}")),
            _ => {}
        }
    }
}

fn results(delivered: bool) -> Option<BridgeResults> {
    Some(BridgeResults { delivery_id: "bridge:5b0e6c2d9a174f38".into(), text: "HERDR_TOOL_RESULTS (1 call)\n{\"call\":1,\"ok\":true}".into(), delivered })
}

fn bridge_state(c: &Continuity) -> String {
    c.page_view(TAB).and_then(|v| v.bridge).unwrap_or_default()
}

fn actions(c: &Continuity) -> Vec<&'static str> {
    c.page_view(TAB).map(|v| v.actions.iter().map(|a| a.id).collect()).unwrap_or_default()
}

// R: O2 — with Auto on, a reply's results go out once, as the next user turn, and the
// runtime hears of the confirmation; the same reply ending again (a replay) sends nothing.
#[test]
fn with_auto_the_results_of_a_reply_are_sent_once_and_reported_delivered() {
    let mut c = zai_world(true);
    let mut log = Vec::new();
    ended(&mut c, 1, "{\"tool\":\"herdr_inspect\",\"args\":{}}");
    drain(&mut c, 1, &results(false), &mut log);
    expect![[r#"
        [
            "request {\"call\":\"bridge_reply\",\"conversation\":\"zai:7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f\",\"message_id\":\"message-a3\",\"text\":\"{\\\"tool\\\":\\\"herdr_inspect\\\",\\\"args\\\":{}}\"}",
            "deliver bridge:5b0e6c2d9a174f38/0.0.0\nHERDR_TOOL_RESULTS (1 call)\n{\"call\":1,\"ok\":true}\n[herdr-continuity bridge:5b0e6c2d9a174f38/0.0.0]",
        ]
    "#]].assert_debug_eq(&log);
    log.clear();
    confirm(&mut c, 2, "bridge:5b0e6c2d9a174f38");
    drain(&mut c, 2, &None, &mut log);
    assert_eq!(log, vec![r#"request {"call":"bridge_delivered","delivery_id":"bridge:5b0e6c2d9a174f38"}"#]);
    assert_eq!(bridge_state(&c), "sent");
    // The same reply ends again after a worker restart: the runtime says delivered.
    let mut c = restart(&c, 3);
    log.clear();
    ended(&mut c, 4, "{\"tool\":\"herdr_inspect\",\"args\":{}}");
    drain(&mut c, 4, &results(true), &mut log);
    assert!(log.iter().all(|l| !l.starts_with("deliver")), "{log:?}");
}

// R: O2, M1 — with Auto off nothing is typed; the HUD offers Send, and Send types it once.
#[test]
fn without_auto_the_results_wait_for_the_send_button() {
    let mut c = zai_world(false);
    let mut log = Vec::new();
    ended(&mut c, 1, "{\"tool\":\"herdr_inspect\",\"args\":{}}");
    drain(&mut c, 1, &results(false), &mut log);
    assert!(log.iter().all(|l| !l.starts_with("deliver")), "{log:?}");
    assert_eq!(bridge_state(&c), "ready");
    assert_eq!(actions(&c), ["toggle_auto", "continue", "check_herdr", "llm_judge", "bridge_prompt", "bridge_send"]);
    log.clear();
    // Send asks the runtime again with the page's last reply: the same results, from its
    // record (nothing runs twice there).
    let press = || ContinuityInput::BridgeSend { tab: TAB, message_id: Some("message-a3".into()), assistant_text: "{\"tool\":\"herdr_inspect\",\"args\":{}}".into() };
    c.handle(2, press());
    drain(&mut c, 2, &results(false), &mut log);
    assert_eq!(log.iter().filter(|l| l.starts_with("deliver bridge:5b0e6c2d9a174f38/")).count(), 1, "{log:?}");
    assert!(!actions(&c).contains(&"bridge_send"));
    // A second press while the first is on its way: one delivery per scope at a time.
    c.handle(3, press());
    drain(&mut c, 3, &results(false), &mut log);
    assert_eq!(log.iter().filter(|l| l.starts_with("deliver")).count(), 1, "a second press sends nothing");
    assert_eq!(bridge_state(&c), "sent", "the one on its way is not offered again");
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
    drain(&mut c, 1, &results(false), &mut log);
    assert!(log.iter().all(|l| !l.starts_with("deliver")), "{log:?}");
}

// R: O2, M6 — ChatGPT (a real MCP connector) and unbound chats never use the bridge; the
// prompt button is offered on bound z.ai / DeepSeek chats only and inserts the prompt.
#[test]
fn the_bridge_is_only_for_bound_zai_and_deepseek_chats() {
    let (mut chatgpt, _) = super::continuity::bound_with_auto(true);
    let mut log = Vec::new();
    chatgpt.handle(1, ContinuityInput::TurnEnded { tab: TAB, user_text: String::new(), assistant_text: "{\"tool\":\"herdr_inspect\",\"args\":{}}".into(), user_marker: None, message_id: None });
    drain(&mut chatgpt, 1, &results(false), &mut log);
    assert!(log.iter().all(|l| !l.contains("bridge")), "{log:?}");
    assert!(!actions(&chatgpt).contains(&"bridge_prompt"));

    let mut unbound = Continuity::new();
    unbound.handle(0, ContinuityInput::LinkUp);
    unbound.handle(0, ContinuityInput::PageReported { tab: TAB, report: zai_page() });
    ended(&mut unbound, 1, "{\"tool\":\"herdr_inspect\",\"args\":{}}");
    drain(&mut unbound, 1, &results(false), &mut log);
    assert!(log.iter().all(|l| !l.contains("bridge")), "{log:?}");

    let mut c = zai_world(false);
    c.handle(1, ContinuityInput::BridgePrompt { tab: TAB });
    drain(&mut c, 1, &None, &mut log);
    assert_eq!(log[log.len() - 2..], [
        r#"request {"call":"bridge_prompt","session_ref":"zai:conv:7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"}"#.to_owned(),
        "insert [herdr-continuity JSON bridge v1] …".to_owned(),
    ]);
}
