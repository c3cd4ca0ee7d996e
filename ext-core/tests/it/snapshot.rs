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
