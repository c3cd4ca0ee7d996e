//! The persisted snapshot (SPEC B7, P6, I4): release 0.1.0's snapshot loads with its
//! bindings, Auto and in-flight delivery intact; today's round-trips; a newer or broken one
//! is refused with a reason instead of being read as "nothing bound".

use ext_core::auto_gate::AutoState;
use ext_core::continuity::{Continuity, ContinuityInput, ContinuityOutput, PageReport};
use ext_core::delivery_ledger::DeliveryState;
use ext_core::snapshot::{Snapshot, SnapshotError, SNAPSHOT_VERSION};

const RELEASE_0_1_0: &str = include_str!("../fixtures/snapshot-release-0.1.0.json");
const CONV: &str = "https://chatgpt.com/c/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0";

#[test]
fn a_snapshot_of_release_0_1_0_loads_with_bindings_auto_and_its_delivery_in_flight() {
    let snapshot = Snapshot::parse(RELEASE_0_1_0).expect("release 0.1.0's snapshot loads");
    assert_eq!(snapshot.version, 1);
    let mut c = Continuity::from_snapshot(snapshot, 100, "fresh");
    let bound: Vec<(String, String)> = c.bindings().list().map(|b| (b.scope.key(), b.workspace_id.clone())).collect();
    assert_eq!(
        bound,
        [
            ("chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0".to_owned(), "w1".to_owned()),
            ("project:g-p-0123456789abcdef0123456789abcdef".to_owned(), "w2".to_owned()),
        ]
    );
    assert!(c.auto_gate().allow_project_auto(), "M2: the global Project Auto option survives");
    for b in c.bindings().list() {
        assert_eq!(c.auto_gate().state(&b.scope), AutoState::On, "Auto of {} survives the upgrade", b.scope.key());
    }
    // The wake that release 0.1.0 had typed and not confirmed joins the ledger, uncertain:
    // it is not typed again; the page's marker confirms it.
    let scope = "chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0";
    let delivery = c.in_flight(scope).cloned().expect("the old in-flight delivery is kept");
    assert_eq!(delivery.id, "wake:w1#2");
    assert!(matches!(delivery.state, DeliveryState::Uncertain { .. }), "{:?}", delivery.state);
    let page = PageReport {
        url: CONV.into(),
        composer: true,
        generation: Some("chatgpt.classic".into()),
        unresolved: None,
        page_load: "after-upgrade".into(),
        user_turns: 1,
        markers: vec!["wake:w1#2".into()],
        ..PageReport::default()
    };
    c.handle(101, ContinuityInput::PageReported { tab: 7, report: page });
    let mut delivered = Vec::new();
    while let Some(output) = c.poll() {
        if let ContinuityOutput::Deliver { id, .. } = output {
            delivered.push(id);
        }
    }
    assert!(delivered.is_empty(), "nothing typed twice: {delivered:?}");
    assert!(c.in_flight(scope).is_none(), "confirmed by its marker");
    assert_eq!(c.page_view(7).expect("view").wake_count, 1);
}

#[test]
fn todays_snapshot_round_trips_and_records_its_version() {
    let old = Continuity::from_snapshot(Snapshot::parse(RELEASE_0_1_0).expect("load"), 100, "fresh");
    let text = old.snapshot().to_json().expect("serialize");
    let again = Snapshot::parse(&text).expect("today's snapshot loads");
    assert_eq!(again.version, SNAPSHOT_VERSION);
    assert_eq!(again, old.snapshot());
    let restored = Continuity::from_snapshot(again, 200, "other");
    assert_eq!(restored.bindings(), old.bindings());
    assert_eq!(restored.ledger().epoch(), "fresh", "a restored ledger keeps its epoch");
}

#[test]
fn a_newer_or_broken_snapshot_is_refused_with_a_reason() {
    let newer = format!(r#"{{"version": {}, "bindings": {{}}}}"#, SNAPSHOT_VERSION + 1);
    assert_eq!(Snapshot::parse(&newer), Err(SnapshotError::Newer(SNAPSHOT_VERSION + 1)));
    assert!(SnapshotError::Newer(3).to_string().contains("kept aside"), "says the state is not overwritten");
    assert!(matches!(Snapshot::parse("{not json"), Err(SnapshotError::Unreadable(_))));
}

/// Write → read = identity for `value` through serde's writer and the hand-written reader.
fn round_trips<T>(values: &[T])
where
    T: serde::Serialize + ext_core::json_read::ReadJson + ext_core::json_read::WriteJson + PartialEq + std::fmt::Debug,
{
    for value in values {
        let text = serde_json::to_string(value).expect("serialize");
        // B7: the hand-written writer writes what serde's derive writes.
        assert_eq!(value.write_json(), serde_json::to_value(value).expect("serialize"), "written as {text}");
        let back: T = ext_core::json_read::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(&back, value, "read back from {text}");
    }
}

#[test]
fn every_persisted_enum_variant_is_written_as_serde_writes_it_and_reads_back() {
    use ext_core::auto_gate::WakeWithheld;
    use ext_core::delivery_ledger::DeliveryKind;
    use ext_core::scope::{Scope, Site};
    use ext_core::settle_tracker::{ResumePoint, SettleOutcome, SettleOutput, SettledStatus, WakeId};
    use ext_core::wake::Language;
    round_trips(&[AutoState::Off, AutoState::On, AutoState::ProjectAutoNotAllowed]);
    round_trips(&[
        WakeWithheld::NotBound,
        WakeWithheld::NoActiveConversation,
        WakeWithheld::AutoOff,
        WakeWithheld::ProjectAutoNotAllowed,
        WakeWithheld::HandoffInProgress,
        WakeWithheld::NoRealStateChange,
        WakeWithheld::UnconfirmedDelivery,
        WakeWithheld::PageGenerating,
        WakeWithheld::PermissionCard,
        WakeWithheld::HumanDraft,
        WakeWithheld::NoComposer,
        WakeWithheld::FactUnresolved,
        WakeWithheld::DeliveryRetryPending,
        WakeWithheld::DeliveryFailedRepeatedly,
    ]);
    round_trips(&[Site::ChatGpt, Site::Zai, Site::DeepSeek]);
    round_trips(&[SettledStatus::Idle, SettledStatus::Done, SettledStatus::Blocked]);
    round_trips(&[SettleOutcome::Idle, SettleOutcome::Done, SettleOutcome::Blocked, SettleOutcome::PaneGone]);
    round_trips(&[DeliveryKind::Wake, DeliveryKind::Progress, DeliveryKind::Continue]);
    round_trips(&[Language::En, Language::Zh]);
    round_trips(&[
        Scope::Project { project_id: "g-p-1".into() },
        Scope::Conversation { site: Site::Zai, conversation_id: "c\"1\u{e9}".into() },
    ]);
    round_trips(&[
        DeliveryState::Typing { deadline: 1 },
        DeliveryState::Submitted { deadline: u64::MAX },
        DeliveryState::Uncertain { since: 3, why: "page gone".into() },
    ]);
    let wake_id = WakeId { boot_id: "b1".into(), seq: 9 };
    round_trips(&[
        SettleOutput::ScopeWorking { workspace_id: "w1".into(), at: 5 },
        SettleOutput::PartialSettle { workspace_id: "w1".into(), pane_id: "w1:p1".into(), still_working: 2 },
        SettleOutput::ScopeSettled { workspace_id: "w1".into(), wake_id, outcome: SettleOutcome::Blocked, at: 6 },
        SettleOutput::Resubscribe { resume: None },
        SettleOutput::Resubscribe { resume: Some(ResumePoint { boot_id: "b1".into(), after_seq: 4, log_id: Some("log".into()) }) },
        SettleOutput::GenerationChanged { boot_id: "b2".into() },
        SettleOutput::StaleGenerationRejected { boot_id: "b0".into() },
    ]);
}

#[test]
fn a_snapshot_of_the_wrong_shape_is_unreadable_and_says_where() {
    let wrong_field =
        r#"{"version": 2, "bindings": {"bindings": {}, "pending": {}}, "auto": {"allow_project_auto": "yes", "toggles": {}}}"#;
    match Snapshot::parse(wrong_field) {
        Err(SnapshotError::Unreadable(why)) => assert!(why.contains("a boolean in `allow_project_auto`"), "{why}"),
        other => panic!("a mistyped field must not load: {other:?}"),
    }
    let unknown_tag = RELEASE_0_1_0.replacen(r#""kind": "conversation""#, r#""kind": "channel""#, 1);
    assert_ne!(unknown_tag, RELEASE_0_1_0, "the fixture has a conversation scope to change");
    assert!(matches!(Snapshot::parse(&unknown_tag), Err(SnapshotError::Unreadable(_))));
}
