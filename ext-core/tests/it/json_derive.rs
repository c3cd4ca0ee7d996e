//! `#[derive(ReadJson, WriteJson)]` (the json-derive crate): what it generates reads back
//! what it writes, writes what serde's `Serialize` writes for the same attributes, and
//! refuses bad input with json_read's errors (the field named, innermost first).

use ext_core::json_read::{from_str, ReadJson, WriteJson};
use proptest::prelude::*;
use serde::Serialize;
use serde_json::{json, Value};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
#[serde(rename_all = "snake_case")]
enum Colour {
    Red,
    DarkBlue,
    #[serde(rename = "greenish", alias = "green")]
    Green,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Step {
    Idle,
    Working {
        since: u64,
        #[serde(default)]
        note: Option<String>,
    },
    #[serde(rename = "done_at")]
    Done {
        at: u64,
        colour: Colour,
    },
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
struct Inner {
    name: String,
    count: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, ReadJson, WriteJson)]
struct Outer {
    id: String,
    #[serde(rename = "type")]
    kind: Colour,
    step: Step,
    #[serde(default)]
    tags: Vec<String>,
    maybe: Option<Inner>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
    #[serde(skip)]
    cache: u64,
    #[serde(default, skip_serializing)]
    legacy: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, ReadJson)]
#[serde(deny_unknown_fields)]
struct Strict {
    a: bool,
}

fn colour() -> impl Strategy<Value = Colour> {
    prop_oneof![Just(Colour::Red), Just(Colour::DarkBlue), Just(Colour::Green)]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        Just(Step::Idle),
        (any::<u64>(), proptest::option::of("[a-z ]{0,8}")).prop_map(|(since, note)| Step::Working { since, note }),
        (any::<u64>(), colour()).prop_map(|(at, colour)| Step::Done { at, colour }),
    ]
}

fn outer() -> impl Strategy<Value = Outer> {
    (
        "[a-z0-9-]{0,12}",
        colour(),
        step(),
        proptest::collection::vec("[a-z]{0,4}", 0..4),
        proptest::option::of(("[a-z]{0,6}", any::<u32>()).prop_map(|(name, count)| Inner { name, count })),
        proptest::option::of("[a-z]{1,6}"),
    )
        .prop_map(|(id, kind, step, tags, maybe, hint)| Outer { id, kind, step, tags, maybe, hint, cache: 0, legacy: None })
}

proptest! {
    /// Write then read gives the value back, and what is written is what serde writes.
    #[test]
    fn derived_round_trip_and_match_serde(value in outer()) {
        let written = value.write_json();
        prop_assert_eq!(&written, &serde_json::to_value(&value).expect("serde writes it"));
        prop_assert_eq!(Outer::read_json(&written).expect("reads back"), value);
    }
}

#[test]
fn skipped_fields_read_as_default_and_are_never_written() {
    let value =
        Outer { id: "a".into(), kind: Colour::Red, step: Step::Idle, tags: vec![], maybe: None, hint: None, cache: 7, legacy: Some(3) };
    let written = value.write_json();
    assert_eq!(written, json!({"id": "a", "type": "red", "step": {"kind": "idle"}, "tags": [], "maybe": null}));
    // `skip_serializing` is still read; `skip` never is.
    let mut with_legacy = written.clone();
    with_legacy["legacy"] = json!(9);
    with_legacy["cache"] = json!(5);
    let read = Outer::read_json(&with_legacy).expect("reads");
    assert_eq!((read.cache, read.legacy), (0, Some(9)));
}

#[test]
fn unit_enums_use_rename_all_rename_and_alias() {
    assert_eq!(Colour::ALL, &[Colour::Red, Colour::DarkBlue, Colour::Green]);
    assert_eq!(Colour::ALL.iter().map(Colour::wire_name).collect::<Vec<_>>(), ["red", "dark_blue", "greenish"]);
    assert_eq!(Colour::read_json(&json!("green")), Ok(Colour::Green));
    assert_eq!(Colour::read_json(&json!("greenish")), Ok(Colour::Green));
    assert_eq!(Colour::DarkBlue.write_json(), json!("dark_blue"));
}

fn error<T: ReadJson + std::fmt::Debug>(value: Value) -> String {
    from_str::<T>(&value.to_string()).expect_err("refused")
}

#[test]
fn bad_input_is_refused_naming_the_innermost_field() {
    let good = json!({"id": "a", "type": "red", "step": {"kind": "idle"}, "maybe": null});
    assert!(Outer::read_json(&good).is_ok(), "absent `default` and Option fields are fine");
    let mut missing = good.clone();
    missing.as_object_mut().expect("object").remove("id");
    assert_eq!(error::<Outer>(missing), "expected a string in `id`");
    let mut wrong = good.clone();
    wrong["maybe"] = json!({"name": "n", "count": -1});
    assert_eq!(error::<Outer>(wrong), "expected a 32-bit unsigned integer in `count`");
    let mut colour = good.clone();
    colour["type"] = json!("purple");
    assert_eq!(error::<Outer>(colour), "expected a known Colour in `type`");
    let mut not_string = good.clone();
    not_string["type"] = json!(1);
    assert_eq!(error::<Outer>(not_string), "expected a string naming a variant in `type`");
    assert_eq!(error::<Outer>(json!([1])), "expected an object");
}

#[test]
fn tagged_enums_refuse_a_missing_or_unknown_tag() {
    assert_eq!(error::<Step>(json!({"since": 1})), "expected a known tag in `kind`");
    assert_eq!(error::<Step>(json!({"kind": "sleeping"})), "expected a known Step");
    assert_eq!(error::<Step>(json!({"kind": "working"})), "expected an unsigned integer in `since`");
    assert_eq!(Step::read_json(&json!({"kind": "done_at", "at": 2, "colour": "red"})), Ok(Step::Done { at: 2, colour: Colour::Red }));
    assert_eq!(Step::read_json(&json!({"kind": "working", "since": 1})), Ok(Step::Working { since: 1, note: None }));
}

#[test]
fn deny_unknown_fields_refuses_other_keys() {
    assert_eq!(Strict::read_json(&json!({"a": true})), Ok(Strict { a: true }));
    assert_eq!(error::<Strict>(json!({"a": true, "b": 1})), "expected no unknown field");
}
