//! Work Memory store and param checks (SPEC W1–W5).

use super::*;
use continuity_protocol::work_memory::{CheckpointPutResult, MAX_BODY_BYTES};
use proptest::prelude::*;
use serde_json::json;

fn store() -> (tempfile::TempDir, WorkMemoryStore) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = WorkMemoryStore::open(&dir.path().join("state.db")).expect("open");
    (dir, store)
}

fn run(store: &mut WorkMemoryStore, method: LocalMethod, params: Value) -> Result<Value, WorkMemoryError> {
    checked(method, params)?.run(store)
}

fn bind(store: &mut WorkMemoryStore, continuity_id: &str, chain: &str) -> Result<Value, WorkMemoryError> {
    run(
        store,
        LocalMethod::WorkMemoryBind,
        json!({"continuity_id": continuity_id, "project_ref": "g-p-1", "repo_id": "repo", "work_chain_id": chain,
               "provider": "chatgpt", "session_ref": "chatgpt:conv:c1", "bound_at": 1}),
    )
}

fn turn(store: &mut WorkMemoryStore, continuity_id: &str, message_ref: &str, text: &str) -> Result<Value, WorkMemoryError> {
    run(
        store,
        LocalMethod::WorkMemoryAppendTurn,
        json!({"continuity_id": continuity_id, "provider": "chatgpt", "session_ref": "chatgpt:conv:c1",
               "provider_message_ref": message_ref, "role": "user", "text": text, "observed_at": 10}),
    )
}

fn put(store: &mut WorkMemoryStore, continuity_id: &str, expected: u64, summary: &str, through: &str) -> Result<Value, WorkMemoryError> {
    run(
        store,
        LocalMethod::WorkMemoryCheckpointPut,
        json!({"continuity_id": continuity_id, "expected_checkpoint_revision": expected, "summary": summary,
               "checkpoint_json": "{\"next\":\"tests\"}", "through_message_id": through, "created_at": 20}),
    )
}

fn resume(store: &mut WorkMemoryStore, chain: &str, max_turns: Option<u32>) -> Result<Value, WorkMemoryError> {
    let mut params = json!({"project_ref": "g-p-1", "repo_id": "repo", "work_chain_id": chain});
    if let Some(n) = max_turns {
        params["max_turns"] = json!(n);
    }
    run(store, LocalMethod::WorkMemoryResume, params)
}

#[test]
fn w2_checkpoint_is_a_compare_and_swap_on_the_revision() {
    let (_dir, mut s) = store();
    bind(&mut s, "k1", "main").expect("ok");
    let m1 = turn(&mut s, "k1", "u1", "first turn").expect("ok")["message_id"].as_str().expect("ok").to_owned();
    let first = put(&mut s, "k1", 0, "did the parser", &m1).expect("ok");
    assert_eq!(first["ok"], true);
    assert_eq!(first["checkpoint"]["revision"], 1);
    assert_eq!(first["checkpoint"]["verified"], true);
    // A writer that read revision 0 loses, and is told the actual revision.
    let stale = put(&mut s, "k1", 0, "another summary", &m1).expect("ok");
    assert_eq!(stale["ok"], false);
    assert_eq!(stale["code"], "work_memory_checkpoint_revision_conflict");
    assert_eq!(stale["actual"], 1);
    // Ahead of the store is a conflict too.
    assert_eq!(put(&mut s, "k1", 5, "x", &m1).expect("ok")["actual"], 1);
    let second = put(&mut s, "k1", 1, "did the tests", &m1).expect("ok");
    assert_eq!(second["checkpoint"]["revision"], 2);
}

#[test]
fn w5_a_retried_put_whose_answer_was_lost_answers_the_stored_checkpoint() {
    let (_dir, mut s) = store();
    bind(&mut s, "k1", "main").expect("ok");
    let m1 = turn(&mut s, "k1", "u1", "first turn").expect("ok")["message_id"].as_str().expect("ok").to_owned();
    let first = put(&mut s, "k1", 0, "did the parser", &m1).expect("ok");
    let retry = put(&mut s, "k1", 0, "did the parser", &m1).expect("ok");
    assert_eq!(retry, first, "the same put again is the stored checkpoint, not a second revision");
    let resumed = resume(&mut s, "main", None).expect("ok");
    assert_eq!(resumed["checkpoint_revision"], 1);
}

#[test]
fn w2_anchors_must_exist_in_the_same_chain() {
    let (_dir, mut s) = store();
    bind(&mut s, "k1", "main").expect("ok");
    bind(&mut s, "k2", "side").expect("ok");
    let other = turn(&mut s, "k2", "u1", "a turn of another chain").expect("ok")["message_id"].as_str().expect("ok").to_owned();
    let err = put(&mut s, "k1", 0, "summary", &other).expect_err("refused");
    assert_eq!(err.code(), "work_memory_anchor_missing", "{err}");
    let err = put(&mut s, "k1", 0, "summary", "m999").expect_err("refused");
    assert_eq!(err.code(), "work_memory_anchor_missing");
    let err = put(&mut s, "k1", 0, "summary", "not-an-anchor").expect_err("refused");
    assert_eq!(err.code(), "work_memory_anchor_missing");
    // No anchor at all is refused before the store.
    let err = run(
        &mut s,
        LocalMethod::WorkMemoryCheckpointPut,
        json!({"continuity_id": "k1", "expected_checkpoint_revision": 0, "summary": "s", "checkpoint_json": "{}", "created_at": 1}),
    )
    .expect_err("refused");
    assert!(err.to_string().contains("needs an anchor"), "{err}");
    assert_eq!(resume(&mut s, "main", None).expect("ok")["checkpoint_revision"], 0, "nothing was stored");
}

#[test]
fn w1_appends_are_idempotent_and_never_overwrite() {
    let (_dir, mut s) = store();
    bind(&mut s, "k1", "main").expect("ok");
    let first = turn(&mut s, "k1", "u1", "hello").expect("ok");
    assert_eq!(first["inserted"], true);
    let again = turn(&mut s, "k1", "u1", "hello").expect("ok");
    assert_eq!(again["inserted"], false);
    assert_eq!(again["message_id"], first["message_id"]);
    let err = turn(&mut s, "k1", "u1", "edited").expect_err("refused");
    assert_eq!(err.code(), "work_memory_conflict");
    let evidence = json!({"continuity_id": "k1", "kind": "test", "content": "42 passed", "created_at": 3,
        "portable_source": {"repo_id": "repo", "commit_sha": "abc123", "repo_relative_path": "src/lib.rs", "line_start": 3, "line_end": 9}});
    let e1 = run(&mut s, LocalMethod::WorkMemoryAppendEvidence, evidence.clone()).expect("ok");
    let e2 = run(&mut s, LocalMethod::WorkMemoryAppendEvidence, evidence).expect("ok");
    assert_eq!((e1["inserted"].clone(), e2["inserted"].clone()), (json!(true), json!(false)));
    assert_eq!(e1["evidence_id"], e2["evidence_id"]);
    assert_eq!(e1["portable_evidence_ref"], "repo@abc123:src/lib.rs#L3-L9");
    let resumed = resume(&mut s, "main", None).expect("ok");
    assert_eq!(resumed["turns"].as_array().expect("ok").len(), 1);
    assert_eq!(resumed["turns"][0]["text"], "hello");
    assert_eq!(resumed["evidence"].as_array().expect("ok").len(), 1);
    assert_eq!(resumed["coverage"]["limitations"], json!(["source_revision_unverified"]));
}

#[test]
fn w3_resume_is_by_exact_partition_and_returns_what_follows_the_checkpoint() {
    let (_dir, mut s) = store();
    bind(&mut s, "k1", "main").expect("ok");
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(
            turn(&mut s, "k1", &format!("u{i}"), &format!("turn number {i}")).expect("ok")["message_id"].as_str().expect("ok").to_owned(),
        );
    }
    put(&mut s, "k1", 0, "through turn 2", &ids[2]).expect("ok");
    let resumed = resume(&mut s, "main", None).expect("ok");
    assert_eq!(resumed["checkpoint"]["summary"], "through turn 2");
    let texts: Vec<&str> = resumed["turns"].as_array().expect("ok").iter().map(|t| t["text"].as_str().expect("ok")).collect();
    assert_eq!(texts, ["turn number 3", "turn number 4"], "the turns after the anchor, oldest first");
    assert_eq!(resumed["coverage"]["display_truncated"], false);
    assert!(resumed["instruction"].as_str().expect("ok").contains("re-read"));
    // Bounded: the newest one only, and it says so.
    let one = resume(&mut s, "main", Some(1)).expect("ok");
    assert_eq!(one["turns"].as_array().expect("ok").len(), 1);
    assert_eq!(one["turns"][0]["text"], "turn number 4");
    assert_eq!(one["coverage"]["display_truncated"], true);
    // Exact: another spelling of the partition is not found (no "latest", no "similar").
    let err = run(&mut s, LocalMethod::WorkMemoryResume, json!({"project_ref": "g-p-1", "repo_id": "repo", "work_chain_id": "Main"}))
        .expect_err("refused");
    assert_eq!(err.code(), "work_memory_not_found");
}

#[test]
fn w3_resume_cuts_long_texts_and_says_so() {
    let (_dir, mut s) = store();
    bind(&mut s, "k1", "main").expect("ok");
    // 20 KiB of a multi-byte text: the cut lands on a character boundary.
    turn(&mut s, "k1", "u1", &"日志".repeat(20 * 1024 / 6)).expect("ok");
    let resumed = resume(&mut s, "main", None).expect("ok");
    let text = resumed["turns"][0]["text"].as_str().expect("text");
    assert!(text.len() <= continuity_protocol::work_memory::MAX_RESUME_TEXT_BYTES && text.len() > 8_000, "{}", text.len());
    assert!(text.starts_with("日志"));
    assert_eq!(resumed["coverage"]["limitations"], json!(["display_excerpt_truncated"]));
}

#[test]
fn bind_keeps_one_chain_per_partition() {
    let (_dir, mut s) = store();
    bind(&mut s, "k1", "main").expect("ok");
    bind(&mut s, "k1", "main").expect("the same bind again is fine");
    assert_eq!(bind(&mut s, "k2", "main").expect_err("refused").code(), "work_memory_conflict");
    assert_eq!(bind(&mut s, "k1", "other").expect_err("refused").code(), "work_memory_conflict");
    assert_eq!(turn(&mut s, "unbound", "u1", "x").expect_err("refused").code(), "work_memory_not_found");
}

#[test]
fn search_finds_words_in_one_partition_only() {
    let (_dir, mut s) = store();
    bind(&mut s, "k1", "main").expect("ok");
    bind(&mut s, "k2", "side").expect("ok");
    turn(&mut s, "k1", "u1", "the parser rewrite is done").expect("ok");
    turn(&mut s, "k2", "u1", "the parser of the other chain").expect("ok");
    let params = json!({"project_ref": "g-p-1", "repo_id": "repo", "work_chain_id": "main", "query": "parser"});
    let found = run(&mut s, LocalMethod::WorkMemorySearch, params).expect("ok");
    let hits = found["hits"].as_array().expect("ok");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0]["source_kind"], "turn");
    assert!(hits[0]["excerpt"].as_str().expect("ok").contains("parser rewrite"));
    // FTS5 syntax in a query is taken as words, not operators.
    let odd = json!({"project_ref": "g-p-1", "repo_id": "repo", "work_chain_id": "main", "query": "parser\" OR NEAR("});
    assert!(run(&mut s, LocalMethod::WorkMemorySearch, odd).is_ok());
}

#[test]
fn bad_params_are_refused_before_any_write_with_what_to_send() {
    let (_dir, mut s) = store();
    let cases = [
        (
            json!({"continuity_id": "k1", "project_ref": "p", "repo_id": "r", "work_chain_id": "w", "provider": "x", "session_ref": "s", "bound_at": 1, "extra": 1}),
            "unknown field",
        ),
        (
            json!({"continuity_id": " k1", "project_ref": "p", "repo_id": "r", "work_chain_id": "w", "provider": "x", "session_ref": "s", "bound_at": 1}),
            "whitespace",
        ),
        (
            json!({"continuity_id": "k\u{7}1", "project_ref": "p", "repo_id": "r", "work_chain_id": "w", "provider": "x", "session_ref": "s", "bound_at": 1}),
            "control character",
        ),
        (
            json!({"continuity_id": "k".repeat(161), "project_ref": "p", "repo_id": "r", "work_chain_id": "w", "provider": "x", "session_ref": "s", "bound_at": 1}),
            "at most 160",
        ),
        (
            json!({"continuity_id": "k1", "project_ref": "p", "repo_id": "r", "work_chain_id": "w", "provider": "x", "session_ref": "s", "bound_at": -1}),
            "invalid value",
        ),
    ];
    for (params, expected) in cases {
        let err = run(&mut s, LocalMethod::WorkMemoryBind, params).expect_err("refused");
        assert_eq!(err.code(), "work_memory_invalid");
        assert!(err.to_string().contains(expected), "{err} should say {expected}");
    }
    bind(&mut s, "k1", "main").expect("ok");
    let big = "x".repeat(MAX_BODY_BYTES + 1);
    assert!(turn(&mut s, "k1", "u1", &big).expect_err("refused").to_string().contains("at most 262144"));
    let not_object = run(
        &mut s,
        LocalMethod::WorkMemoryCheckpointPut,
        json!({"continuity_id": "k1", "expected_checkpoint_revision": 0, "summary": "s", "checkpoint_json": "[1]", "through_message_id": "m1", "created_at": 1}),
    )
    .expect_err("refused");
    assert!(not_object.to_string().contains("JSON object"), "{not_object}");
    assert_eq!(resume(&mut s, "main", None).expect("ok")["turns"], json!([]), "nothing was written");
}

#[derive(Debug, Clone)]
enum Op {
    Turn(u8, bool),
    Put { expected_offset: i8, summary: u8, anchor: u8 },
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..6, any::<bool>()).prop_map(|(n, edited)| Op::Turn(n, edited)),
        (-1i8..=1, 0u8..3, 0u8..8).prop_map(|(expected_offset, summary, anchor)| Op::Put { expected_offset, summary, anchor }),
        Just(Op::Reopen),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// W2, W5 and W1 under random retries, stale writers and restarts: revisions go up by
    /// one per stored checkpoint and never otherwise; a stored checkpoint's anchor is a turn
    /// of the chain; a recorded turn keeps its first text.
    #[test]
    fn w2_w5_revisions_and_turns_hold_under_retries_and_restarts(ops in proptest::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().expect("ok");
        let path = dir.path().join("state.db");
        let mut s = WorkMemoryStore::open(&path).expect("ok");
        bind(&mut s, "k1", "main").expect("ok");
        let mut texts: std::collections::BTreeMap<u8, (String, String)> = Default::default();
        let mut revision = 0u64;
        for op in ops {
            match op {
                Op::Turn(n, edited) => {
                    let text = if edited { format!("edited {n}") } else { format!("text {n}") };
                    match turn(&mut s, "k1", &format!("u{n}"), &text) {
                        Ok(answer) => {
                            let id = answer["message_id"].as_str().expect("ok").to_owned();
                            let first = texts.entry(n).or_insert_with(|| (text.clone(), id.clone()));
                            prop_assert_eq!(&first.0, &text, "a turn was recorded twice with different texts");
                            prop_assert_eq!(&first.1, &id);
                        }
                        Err(error) => {
                            prop_assert_eq!(error.code(), "work_memory_conflict");
                            prop_assert!(texts.get(&n).is_some_and(|(first, _)| *first != text));
                        }
                    }
                }
                Op::Put { expected_offset, summary, anchor } => {
                    let expected = (revision as i64 + i64::from(expected_offset)).max(0) as u64;
                    let anchor = format!("m{anchor}");
                    let known = texts.values().any(|(_, id)| *id == anchor);
                    match put(&mut s, "k1", expected, &format!("summary {summary}"), &anchor) {
                        Ok(answer) => match serde_json::from_value::<CheckpointPutResult>(answer).expect("ok") {
                            CheckpointPutResult::Stored { checkpoint, .. } => {
                                prop_assert!(known, "stored with an anchor that is not a turn of the chain");
                                if checkpoint.revision == revision + 1 {
                                    prop_assert_eq!(expected, revision);
                                    revision += 1;
                                } else {
                                    // The retry of the stored one.
                                    prop_assert_eq!(checkpoint.revision, revision);
                                    prop_assert_eq!(expected + 1, revision);
                                }
                            }
                            CheckpointPutResult::Conflict { actual, .. } => {
                                prop_assert_eq!(actual, revision);
                                prop_assert_ne!(expected, revision);
                            }
                        },
                        Err(error) => {
                            prop_assert_eq!(error.code(), "work_memory_anchor_missing");
                            prop_assert!(!known);
                        }
                    }
                }
                Op::Reopen => s = WorkMemoryStore::open(&path).expect("ok"),
            }
            let resumed = resume(&mut s, "main", Some(64)).expect("ok");
            prop_assert_eq!(resumed["checkpoint_revision"].as_u64(), Some(revision));
        }
    }
}
