//! Backend requests per hour of one ChatGPT account (issue 26 acceptance 4), in simulated
//! time through the composed machine (`Continuity`): 1 and 5 bound tabs of one account, each
//! streaming a reply, (a) healthy — the reply's body grows on every report — and (b) stuck —
//! frozen mid-stream, so every tab's recovery planner wants a snapshot probe all the time
//! (the worst case). Every probe is answered with an unfinished reply (nothing to act on).
//! Prints one line per case: `<tabs> <healthy|stuck> <requests in the hour>`; `e2e/bench/
//! pacing.mjs` prints the table. At the default pacing (45 s per account) the figure is
//! at most 80 per hour, whatever the number of tabs.

use ext_core::binding::CatalogWorkspace;
use ext_core::continuity::{
    Continuity, ContinuityInput, ContinuityOutput, PageRecoveryReport, PageReport, ProbeAnswer, ProbeNode, RecoveryCommand, RuntimeAnswer,
};
use ext_core::stale_view::ServerRole;

const T0: u64 = 1_800_000_000_000;
const HOUR: u64 = 3_600_000;
const REPORT_MS: u64 = 5_000;

fn url(tab: u32) -> String {
    format!("https://chatgpt.com/c/0b1c2d3e-4f50-6172-8394-{tab:012x}")
}

fn report(tab: u32) -> PageReport {
    PageReport {
        url: url(tab),
        composer: true,
        generating: true,
        generation: Some("chatgpt.classic".into()),
        unresolved: None,
        page_load: format!("load-{tab}"),
        account: Some("user-bench".into()),
        ..PageReport::default()
    }
}

fn facts(tab: u32, len: u32) -> PageRecoveryReport {
    PageRecoveryReport {
        page_load: format!("load-{tab}"),
        assistant: true,
        assistant_id: None,
        assistant_len: len,
        assistant_streaming: true,
        signature: format!("{len}:s"),
        user_waiting: false,
        send_timeout: false,
        retry_offered: false,
        rate_limited: false,
        reasoning: false,
        waiting_marker: None,
    }
}

fn drain(c: &mut Continuity, now: u64, requests: &mut u64) {
    while let Some(output) = c.poll() {
        match output {
            ContinuityOutput::Recovery { tab, command: RecoveryCommand::Probe { .. } } => {
                *requests += 1;
                let answer = ProbeAnswer::Node(ProbeNode {
                    id: "a".into(),
                    role: ServerRole::Assistant,
                    text_len: 10,
                    finished: false,
                    update_time_ms: Some(now),
                });
                c.handle(now, ContinuityInput::SnapshotResult { tab, page_load: format!("load-{tab}"), answer });
            }
            ContinuityOutput::Request { id, .. } => c.handle(now, ContinuityInput::Answered { id, result: Ok(RuntimeAnswer::Subscribed) }),
            _ => {}
        }
    }
}

fn requests_per_hour(tabs: u32, stuck: bool) -> u64 {
    let mut c = Continuity::with_epoch("bench");
    let mut requests = 0;
    c.handle(T0, ContinuityInput::LinkUp);
    for tab in 1..=tabs {
        c.handle(T0, ContinuityInput::PageReported { tab, report: report(tab) });
        c.handle(T0, ContinuityInput::Bind { tab, workspace: CatalogWorkspace { workspace_id: format!("w{tab}"), label: "bench".into() } });
        c.handle(T0, ContinuityInput::ToggleAuto { tab });
    }
    drain(&mut c, T0, &mut requests);
    let mut now = T0;
    let mut step = 0u32;
    while now < T0 + HOUR {
        step += 1;
        for tab in 1..=tabs {
            let len = if stuck { 40 } else { 40 + step * 7 };
            c.handle(now, ContinuityInput::RecoveryFacts { tab, facts: facts(tab, len) });
        }
        while let Some(due) = c.next_deadline().filter(|d| *d <= now) {
            c.handle_timeout(due);
            drain(&mut c, due, &mut requests);
        }
        drain(&mut c, now, &mut requests);
        now += REPORT_MS;
    }
    requests
}

fn main() {
    for tabs in [1, 5] {
        for stuck in [false, true] {
            println!("{tabs} {} {}", if stuck { "stuck" } else { "healthy" }, requests_per_hour(tabs, stuck));
        }
    }
}
