//! The own-marker rule against its one list of cases (`tests/fixtures/own-marker-cases.json`,
//! which the content scripts' copy of the rule, `extension/own-marker.js`, is tested against too by
//! `e2e/specs/own-marker.spec.mjs`).

use continuity_protocol::marker::{delivery_id_shaped, own_marker};
use serde_json::Value;

fn cases() -> Value {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/own-marker-cases.json")).expect("the cases file");
    serde_json::from_str(&text).expect("the cases are JSON")
}

#[test]
fn every_listed_text_has_the_listed_own_marker() {
    let cases = cases();
    let list = cases["own_marker"].as_array().expect("own_marker cases");
    assert!(list.len() >= 10, "the list is there");
    for case in list {
        let text = case["text"].as_str().expect("text");
        assert_eq!(own_marker(text), case["own"].as_str(), "{}: {text:?}", case["why"]);
    }
}

#[test]
fn every_listed_id_is_shaped_as_listed() {
    let cases = cases();
    for case in cases["delivery_id_shaped"].as_array().expect("delivery_id_shaped cases") {
        let id = case["id"].as_str().expect("id");
        assert_eq!(delivery_id_shaped(id), case["shaped"].as_bool().expect("shaped"), "{id}");
    }
}
