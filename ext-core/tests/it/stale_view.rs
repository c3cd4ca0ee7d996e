//! The stale-view probe (SPEC S1–S5): the DOM's last assistant message against the
//! server's current node.

use ext_core::stale_view::{
    classify, update_time_ms, DomMessage, DomView, ServerNode, ServerRole, Snapshot, ViewState, REASONING_STALL_MS, SERVER_STALL_MS,
};
use proptest::prelude::*;

const NOW: u64 = 1_800_000_000_000;

fn dom(id: Option<&str>, len: u32, streaming: bool, user_waiting: bool) -> DomView {
    DomView { last_assistant: Some(DomMessage { id: id.map(str::to_owned), text_len: len, streaming }), user_waiting, reasoning: false }
}

fn server(id: &str, role: ServerRole, len: u32, finished: bool, age_ms: u64) -> Snapshot {
    // The API gives seconds.
    Snapshot::Read(ServerNode { id: id.into(), role, text_len: len, finished, update_time: Some((NOW - age_ms) as f64 / 1_000.0) })
}

// R: S2–S5 — one row per situation the probe names.
#[test]
fn each_situation_is_named_from_evidence_s2_s5() {
    use ServerRole::{Assistant, Other, User};
    let rows: Vec<(&str, DomView, Snapshot, ViewState)> = vec![
        ("same finished message", dom(Some("a1"), 500, false, false), server("a1", Assistant, 505, true, 1_000), ViewState::Synced),
        (
            "DOM frozen mid-reply, server finished",
            dom(None, 120, true, false),
            server("a1", Assistant, 900, true, 1_000),
            ViewState::ServerAhead,
        ),
        (
            "same id, server clearly longer",
            dom(Some("a1"), 200, false, false),
            server("a1", Assistant, 900, true, 1_000),
            ViewState::ServerAhead,
        ),
        (
            "newer assistant message on the server",
            dom(Some("a1"), 500, false, false),
            server("a2", Assistant, 300, true, 1_000),
            ViewState::ServerAhead,
        ),
        ("server still writing, updating", dom(None, 100, true, false), server("a2", Assistant, 300, false, 5_000), ViewState::Synced),
        (
            "server still writing, not updating",
            dom(None, 100, true, false),
            server("a2", Assistant, 300, false, SERVER_STALL_MS + 1),
            ViewState::ServerStalled,
        ),
        (
            "user waiting, server ends before it",
            dom(Some("a1"), 500, false, true),
            server("a1", Assistant, 500, true, 90_000),
            ViewState::RequestNotAccepted,
        ),
        (
            "user waiting, server has the user turn",
            dom(Some("a1"), 500, false, true),
            server("u2", User, 20, false, 2_000),
            ViewState::Synced,
        ),
        (
            "user waiting, server has it but nothing moves",
            dom(Some("a1"), 500, false, true),
            server("u2", User, 20, false, SERVER_STALL_MS * 2),
            ViewState::ServerStalled,
        ),
        (
            "user waiting, server already answered",
            dom(Some("a1"), 500, false, true),
            server("a2", Assistant, 80, true, 1_000),
            ViewState::ServerAhead,
        ),
        (
            "server ends at a user message the page lacks",
            dom(Some("a1"), 500, false, false),
            server("u9", User, 20, true, 1_000),
            ViewState::ServerAhead,
        ),
        ("a tool node", dom(Some("a1"), 500, false, false), server("t1", Other, 20, true, 1_000), ViewState::Unknown),
        (
            "snapshot refused (Cloudflare challenge)",
            dom(Some("a1"), 500, false, false),
            Snapshot::Unknown { why: "403 challenge".into() },
            ViewState::Unknown,
        ),
    ];
    for (name, dom, snapshot, want) in rows {
        assert_eq!(classify(&dom, &snapshot, NOW), want, "{name}");
    }
}

// Issue 26 Found 7: a reasoning / thinking indicator on the page (SITES-2026 §1.4) is
// progress, not a stall: hidden reasoning does not update the server's node. Bounded: a
// turn quiet for longer than REASONING_STALL_MS is stalled even then.
#[test]
fn a_reasoning_indicator_is_progress_not_a_stall() {
    let thinking = |user_waiting: bool| DomView { reasoning: true, ..dom(None, 0, true, user_waiting) };
    let quiet = SERVER_STALL_MS * 5;
    assert_eq!(
        classify(&dom(None, 0, true, false), &server("a2", ServerRole::Assistant, 0, false, quiet), NOW),
        ViewState::ServerStalled,
        "without the indicator"
    );
    assert_eq!(classify(&thinking(false), &server("a2", ServerRole::Assistant, 0, false, quiet), NOW), ViewState::Synced);
    assert_eq!(
        classify(&thinking(true), &server("u2", ServerRole::User, 20, false, quiet), NOW),
        ViewState::Synced,
        "thinking before the first token"
    );
    assert_eq!(
        classify(&thinking(false), &server("a2", ServerRole::Assistant, 0, false, REASONING_STALL_MS + 1), NOW),
        ViewState::ServerStalled,
        "bounded"
    );
    // A finished server turn is still ahead of a page that shows the model thinking.
    assert_eq!(classify(&thinking(false), &server("a2", ServerRole::Assistant, 400, true, 1_000), NOW), ViewState::ServerAhead);
}

// R: S5 — without an update time nothing is guessed from time.
#[test]
fn no_update_time_means_unknown_where_time_would_decide_s5() {
    let snapshot =
        Snapshot::Read(ServerNode { id: "a2".into(), role: ServerRole::Assistant, text_len: 10, finished: false, update_time: None });
    assert_eq!(classify(&dom(None, 5, true, false), &snapshot, NOW), ViewState::Unknown);
    assert_eq!(update_time_ms(1_700_000_000.5), Some(1_700_000_000_500), "seconds become milliseconds");
    assert_eq!(update_time_ms(1_700_000_000_500.0), Some(1_700_000_000_500));
    assert_eq!(update_time_ms(f64::NAN), None);
}

proptest! {
    /// S5: an unreadable snapshot is always unknown; `Synced` only when the server's node is
    /// the page's finished message or the server is still updating.
    #[test]
    fn synced_is_only_said_with_evidence(
        dom_id in prop::option::of(prop_oneof![Just("a1"), Just("a2")]), dom_len in 0u32..2_000, streaming: bool, waiting: bool,
        node_id in prop_oneof![Just("a1"), Just("a2"), Just("u1")], role in prop_oneof![Just(ServerRole::User), Just(ServerRole::Assistant), Just(ServerRole::Other)],
        node_len in 0u32..2_000, finished: bool, age in prop::option::of(0u64..200_000), unreadable: bool,
    ) {
        let view = dom(dom_id, dom_len, streaming, waiting);
        let snapshot = if unreadable {
            Snapshot::Unknown { why: "timeout".into() }
        } else {
            Snapshot::Read(ServerNode { id: node_id.into(), role, text_len: node_len, finished, update_time: age.map(|a| (NOW - a) as f64) })
        };
        let state = classify(&view, &snapshot, NOW);
        if unreadable {
            prop_assert_eq!(state, ViewState::Unknown);
        }
        if state == ViewState::Synced {
            let recent = age.is_some_and(|a| a <= SERVER_STALL_MS);
            let same_finished = finished && dom_id == Some(node_id) && !streaming && !waiting;
            prop_assert!(same_finished || (!finished && recent) || (role == ServerRole::User && waiting && recent), "synced without evidence");
        }
    }
}
