//! The persisted snapshot (B7): the previous release's snapshot still loads with its
//! bindings and Auto settings intact, and the JSON a restored machine writes stays
//! byte-for-byte what it was (the map types behind it may change; the format may not).

use ext_core::auto_gate::AutoState;
use ext_core::continuity::Continuity;

const RELEASE_0_1_0: &str = include_str!("../fixtures/snapshot-release-0.1.0.json");

fn load() -> Continuity {
    let mut restored: Continuity =
        serde_json::from_str(RELEASE_0_1_0).expect("the 0.1.0 snapshot loads");
    restored.restored(10, "r");
    restored
}

#[test]
fn release_0_1_0_snapshot_keeps_bindings_and_auto() {
    let restored = load();
    let bindings: Vec<String> = restored
        .bindings()
        .list()
        .map(|b| {
            let auto = match restored.auto_gate().state(&b.scope) {
                AutoState::On => "on",
                AutoState::Off => "off",
                AutoState::ProjectAutoNotAllowed => "project-not-allowed",
            };
            format!(
                "{} -> {} ({}) auto {auto}",
                b.scope.key(),
                b.workspace_id,
                b.label
            )
        })
        .collect();
    expect_test::expect![[r#"
        [
            "chatgpt:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 -> w1 (api) auto on",
            "project:g-p-0123456789abcdef0123456789abcdef -> w2 (web) auto on",
        ]
    "#]]
    .assert_debug_eq(&bindings);
    assert!(restored.auto_gate().allow_project_auto());
}

#[test]
fn restored_release_0_1_0_snapshot_persists_the_same_json() {
    let restored = load();
    let json = serde_json::to_string_pretty(&restored).expect("persists");
    expect_test::expect_file!["../fixtures/snapshot-release-0.1.0.restored.json"].assert_eq(&json);
    let again: Continuity = serde_json::from_str(&json).expect("reloads");
    assert_eq!(
        serde_json::to_string_pretty(&again).expect("persists"),
        json
    );
}
