//! The JSON bridge's thin part in the composed loop (SPEC O2, O3, M6): a bound z.ai /
//! DeepSeek conversation's ended reply → `bridge.reply` → its results message through the
//! ledger once (Auto on, or the HUD's Send tool results); never on ChatGPT, never for an
//! unbound chat, never again for a message the thread shows or one on its way.

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
    turn(c, now, reply, false);
}

/// The page's last turn: a reply that ended, or (`pressed`) sent again by Send tool results.
fn turn(c: &mut Continuity, now: u64, reply: &str, pressed: bool) {
    c.handle(now, ContinuityInput::TurnEnded { tab: TAB, user_text: "look at the panes".into(), assistant_text: reply.into(), user_marker: None, message_id: Some("message-a3".into()), user_message_id: None, pressed });
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
                    _ => RuntimeAnswer::Subscribed,
                };
                c.handle(now, ContinuityInput::Answered { id, result: Ok(answer) });
            }
            ContinuityOutput::Deliver { id, text, .. } => log.push(format!("deliver {id}\n{text}")),
            _ => {}
        }
    }
}

fn results() -> Option<BridgeResults> {
    Some(BridgeResults { delivery_id: "bridge:5b0e6c2d9a174f38".into(), text: "HERDR_TOOL_RESULTS (1 call)\n{\"call\":1,\"ok\":true}".into() })
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
            "request {\"call\":\"bridge_reply\",\"conversation\":\"zai:conv:7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f\",\"message_id\":\"message-a3\",\"text\":\"{\\\"tool\\\":\\\"herdr_inspect\\\",\\\"args\\\":{}}\"}",
            "deliver bridge:5b0e6c2d9a174f38/0.0.0\nHERDR_TOOL_RESULTS (1 call)\n{\"call\":1,\"ok\":true}\n[herdr-continuity bridge:5b0e6c2d9a174f38/0.0.0]",
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
    assert_eq!(actions(&c), ["toggle_auto", "continue", "check_herdr", "bridge_prompt", "bridge_send"]);
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
    chatgpt.handle(1, ContinuityInput::TurnEnded { tab: TAB, user_text: String::new(), assistant_text: "{\"tool\":\"herdr_inspect\",\"args\":{}}".into(), user_marker: None, message_id: None, user_message_id: None, pressed: false });
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
