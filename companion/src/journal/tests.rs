//! The journal's store and read operations (SPEC C1, C3–C7), on a real `state.db` in a
//! temporary directory.

use std::collections::{BTreeMap, BTreeSet};

use continuity_protocol::journal::{ContinuityAppendParams, RESUME_TURNS, RESUME_TURN_TEXT_BYTES};
use continuity_protocol::{MatchReason, MethodResult, Resolution, TurnRole};
use proptest::prelude::*;

use super::store::{fts_query, Appended, Identity, JournalError, JournalStore};
use super::*;

const PROJECT: &str = "g-p-0123456789abcdef0123456789abcdef";
const OTHER_PROJECT: &str = "g-p-fedcba9876543210fedcba9876543210";

fn open() -> (tempfile::TempDir, JournalStore) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = JournalStore::open(&dir.path().join("state.db")).expect("open the journal");
    (dir, store)
}

fn turn(conversation: &str, message: &str, role: TurnRole, text: &str) -> ContinuityAppendParams {
    ContinuityAppendParams {
        continuity_id: None,
        conversation_id: conversation.to_owned(),
        message_id: message.to_owned(),
        role,
        text: text.to_owned(),
        observed_at: 1_000,
        project_id: None,
        workspace_id: None,
        conversation_url: None,
        title: None,
    }
}

fn in_project(mut t: ContinuityAppendParams, project: &str, workspace: &str) -> ContinuityAppendParams {
    t.project_id = Some(project.to_owned());
    t.workspace_id = Some(workspace.to_owned());
    t
}

fn chain_of(store: &JournalStore, conversation: &str) -> String {
    store.chain_of_conversation(conversation).expect("read").map(|c| c.continuity_id).expect("journaled")
}

fn searched(store: &JournalStore, identity: Identity, query: Option<&str>) -> (Resolution, bool, Vec<String>) {
    let query = SearchQuery { identity, fts: query.and_then(fts_query), limit: 5, conversation_from_url: false };
    match search(store, &query).expect("search") {
        MethodResult::ContinuitySearch { resolution, auto_resume_safe, candidates, .. } => {
            (resolution, auto_resume_safe, candidates.into_iter().map(|c| c.continuity_id).collect())
        }
        other => panic!("not a search answer: {other:?}"),
    }
}

#[test]
fn c1_the_journal_is_wal_with_synchronous_full() {
    let (dir, store) = open();
    assert_eq!(store.synchronous().expect("pragma"), 2, "synchronous=FULL");
    let conn = rusqlite::Connection::open(dir.path().join("state.db")).expect("open");
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).expect("pragma");
    assert_eq!(mode, "wal");
}

#[test]
fn c1_an_append_is_idempotent_on_its_key_and_a_different_text_is_refused() {
    let (_dir, mut store) = open();
    let first = store.append(&turn("c1", "m1", TurnRole::User, "run the tests"), 10).expect("append");
    let Appended::Inserted(chain) = first else { panic!("a new turn is inserted: {first:?}") };
    assert!(chain.starts_with("hc-") && chain.len() == 35, "{chain}");
    let again = store.append(&turn("c1", "m1", TurnRole::User, "run the tests"), 20).expect("retry");
    assert_eq!(again, Appended::AlreadyRecorded(chain.clone()));
    let edited = store.append(&turn("c1", "m1", TurnRole::User, "run the tests twice"), 30);
    let Err(JournalError::Conflict(message)) = edited else { panic!("another text for the same key is refused: {edited:?}") };
    assert!(message.contains("already recorded with another conversation, role or text"), "{message}");
    assert_eq!(store.turn_count().expect("count"), 1);
    assert_eq!(store.chain(&chain).expect("chain").map(|c| c.updated_at), Some(10), "a retry changes nothing");
}

#[test]
fn a_conversation_stays_in_its_chain_and_a_chain_in_its_project() {
    let (_dir, mut store) = open();
    store.append(&in_project(turn("c1", "m1", TurnRole::User, "hello"), PROJECT, "w1"), 1).expect("append");
    let chain = chain_of(&store, "c1");
    let mut elsewhere = turn("c1", "m2", TurnRole::Assistant, "hi");
    elsewhere.continuity_id = Some("hc-other".to_owned());
    let refused = store.append(&elsewhere, 2);
    assert!(matches!(&refused, Err(JournalError::Conflict(m)) if m.contains(&format!("journaled in chain {chain}"))), "{refused:?}");
    let mut other_project = in_project(turn("c9", "m9", TurnRole::User, "hello"), OTHER_PROJECT, "w1");
    other_project.continuity_id = Some(chain.clone());
    let refused = store.append(&other_project, 3);
    assert!(matches!(&refused, Err(JournalError::Conflict(m)) if m.contains("never spans Projects")), "{refused:?}");
    assert_eq!(store.turn_count().expect("count"), 1);
}

#[test]
fn c3_a_new_chat_of_the_project_joins_its_chain_with_its_first_user_message() {
    let (_dir, mut store) = open();
    store.append(&in_project(turn("old", "m1", TurnRole::User, "build the loader"), PROJECT, "w1"), 1).expect("append");
    let chain = chain_of(&store, "old");
    let joined = store.append(&in_project(turn("new", "n1", TurnRole::User, "continue"), PROJECT, "w1"), 2).expect("append");
    assert_eq!(joined, Appended::Inserted(chain.clone()));
    // A second chain in the Project (started explicitly): a new chat can no longer pick one.
    let mut explicit = in_project(turn("side", "s1", TurnRole::User, "a side quest"), PROJECT, "w2");
    explicit.continuity_id = Some("hc-side".to_owned());
    store.append(&explicit, 3).expect("append");
    let ambiguous = store.append(&in_project(turn("third", "t1", TurnRole::User, "continue"), PROJECT, "w1"), 4);
    assert!(matches!(&ambiguous, Err(JournalError::Ambiguous(m)) if m.contains("more than one continuity chain")), "{ambiguous:?}");
    // A chat outside any Project starts its own chain.
    store.append(&turn("loose", "l1", TurnRole::User, "hi"), 5).expect("append");
    assert_ne!(chain_of(&store, "loose"), chain);
}

#[test]
fn c4_only_stable_identity_makes_a_search_unique_exact() {
    let (_dir, mut store) = open();
    store.append(&in_project(turn("a", "a1", TurnRole::User, "wire the route pool"), PROJECT, "w1"), 1).expect("append");
    store.append(&in_project(turn("b", "b1", TurnRole::User, "tune the route pool"), OTHER_PROJECT, "w2"), 2).expect("append");
    store.append(&turn("c", "c1", TurnRole::User, "draft the changelog"), 3).expect("append");
    let (a, b) = (chain_of(&store, "a"), chain_of(&store, "b"));
    let by_conversation = Identity { conversation_id: Some("a".into()), ..Identity::default() };
    assert_eq!(searched(&store, by_conversation.clone(), None), (Resolution::UniqueExact, true, vec![a.clone()]));
    let by_project = Identity { project_id: Some(OTHER_PROJECT.into()), ..Identity::default() };
    assert_eq!(searched(&store, by_project, None), (Resolution::UniqueExact, true, vec![b.clone()]));
    // A unique text match still needs confirmation.
    assert_eq!(searched(&store, Identity::default(), Some("changelog")).0, Resolution::ConfirmationRequired);
    assert!(!searched(&store, Identity::default(), Some("changelog")).1);
    // Several matches: a bounded list, most recently updated first, nothing picked.
    assert_eq!(searched(&store, Identity::default(), Some("route pool")), (Resolution::ConfirmationRequired, false, vec![b, a.clone()]));
    // Identity plus words that identity already narrows to one chain stays exact.
    assert_eq!(searched(&store, by_conversation.clone(), Some("route")), (Resolution::UniqueExact, true, vec![a]));
    assert_eq!(searched(&store, by_conversation, Some("changelog")), (Resolution::None, false, vec![]));
    let nowhere = Identity { workspace_id: Some("w9".into()), ..Identity::default() };
    assert_eq!(searched(&store, nowhere, None), (Resolution::None, false, vec![]));
}

#[test]
fn c5_a_searched_url_of_an_unjournaled_chat_narrows_by_its_project_only() {
    let (_dir, mut store) = open();
    store.append(&in_project(turn("old", "m1", TurnRole::User, "build the loader"), PROJECT, "w1"), 1).expect("append");
    let chain = chain_of(&store, "old");
    let from_url = |conversation: &str, project: Option<&str>| SearchQuery {
        identity: Identity { conversation_id: Some(conversation.to_owned()), project_id: project.map(str::to_owned), workspace_id: None },
        fts: None,
        limit: 5,
        conversation_from_url: true,
    };
    let answer = |query: SearchQuery| match search(&store, &query).expect("search") {
        MethodResult::ContinuitySearch { resolution, candidates, .. } => {
            (resolution, candidates.into_iter().map(|c| (c.continuity_id, c.match_reasons)).collect::<Vec<_>>())
        }
        other => panic!("not a search answer: {other:?}"),
    };
    assert_eq!(answer(from_url("new-chat", Some(PROJECT))), (Resolution::UniqueExact, vec![(chain.clone(), vec![MatchReason::ProjectId])]));
    assert_eq!(answer(from_url("old", Some(PROJECT))).1, vec![(chain, vec![MatchReason::ConversationId, MatchReason::ProjectId])]);
    assert_eq!(answer(from_url("new-chat", None)), (Resolution::None, vec![]));
    // An explicit conversation_id is always a filter.
    let explicit = SearchQuery { conversation_from_url: false, ..from_url("new-chat", Some(PROJECT)) };
    assert_eq!(answer(explicit), (Resolution::None, vec![]));
}

#[test]
fn c4_a_search_answer_names_why_each_candidate_is_listed_and_what_to_do() {
    let (_dir, mut store) = open();
    store.append(&in_project(turn("a", "a1", TurnRole::User, "wire the route pool"), PROJECT, "w1"), 1).expect("append");
    store.append(&in_project(turn("a", "a2", TurnRole::Assistant, "The pool is wired."), PROJECT, "w1"), 2).expect("append");
    let query = SearchQuery {
        identity: Identity { workspace_id: Some("w1".into()), ..Identity::default() },
        fts: fts_query("pool"),
        limit: 5,
        conversation_from_url: false,
    };
    let MethodResult::ContinuitySearch { candidates, instruction, confirmation_required, more, .. } =
        search(&store, &query).expect("search")
    else {
        panic!("not a search answer")
    };
    assert!(!confirmation_required && !more);
    assert!(instruction.contains("continuity.resume"), "{instruction}");
    let candidate = &candidates[0];
    assert_eq!(candidate.match_reasons, [MatchReason::WorkspaceId, MatchReason::Query]);
    assert_eq!(candidate.workspace_ids, ["w1"]);
    assert_eq!(candidate.project_id.as_deref(), Some(PROJECT));
    assert_eq!(candidate.recent_user_excerpt.as_deref(), Some("wire the route pool"));
    assert_eq!(candidate.recent_assistant_excerpt.as_deref(), Some("The pool is wired."));
}

#[test]
fn c4_search_candidates_are_bounded_and_say_there_are_more() {
    let (_dir, mut store) = open();
    for i in 0..7 {
        store.append(&turn(&format!("c{i}"), "m", TurnRole::User, "same words here"), i).expect("append");
    }
    let query = SearchQuery { identity: Identity::default(), fts: fts_query("words"), limit: 5, conversation_from_url: false };
    let MethodResult::ContinuitySearch { candidates, more, resolution, .. } = search(&store, &query).expect("search") else {
        panic!("not a search answer")
    };
    assert_eq!((candidates.len(), more, resolution), (5, true, Resolution::ConfirmationRequired));
}

#[test]
fn fts_syntax_in_a_query_is_only_words() {
    assert_eq!(fts_query("\"route\" OR pool* -x NEAR(a b)").as_deref(), Some("\"route\" \"OR\" \"pool\" \"x\" \"NEAR\" \"a\" \"b\""));
    assert_eq!(fts_query("  ** \"\" "), None);
    let (_dir, mut store) = open();
    store.append(&turn("c", "m", TurnRole::User, "route pool"), 1).expect("append");
    assert_eq!(searched(&store, Identity::default(), Some("pool\" OR \"*")).2.len(), 0, "OR is a word here, and no turn has it");
}

fn resumed(store: &JournalStore, anchor: ResumeAnchor) -> Result<MethodResult, JournalError> {
    resume(store, &anchor, None)
}

/// One resume page: its message ids and its `next_cursor`.
fn page(store: &JournalStore, chain: &str, before: Option<&str>) -> (Vec<String>, Option<String>) {
    let before = before.map(|c| continuity_protocol::journal::parse_resume_cursor(c).expect("a cursor of this runtime"));
    match resume(store, &ResumeAnchor::Chain(chain.to_owned()), before).expect("resume") {
        MethodResult::ContinuityResumed { turns, next_cursor, more_turns, .. } => {
            assert_eq!(more_turns, next_cursor.is_some(), "more_turns and next_cursor agree");
            (turns.into_iter().map(|t| t.message_id).collect(), next_cursor)
        }
        other => panic!("not a resume answer: {other:?}"),
    }
}

#[test]
fn c5_resume_pages_back_to_the_first_turn_with_a_cursor_stable_under_appends() {
    let (_dir, mut store) = open();
    for i in 0..100 {
        let role = if i % 2 == 0 { TurnRole::User } else { TurnRole::Assistant };
        store.append(&turn("c1", &format!("m{i:03}"), role, &format!("turn {i}")), i).expect("append");
        // Another chain's turns interleave: they take turn numbers but never a page's place.
        store.append(&turn("other", &format!("o{i:03}"), role, "elsewhere"), i).expect("append");
    }
    let chain = chain_of(&store, "c1");
    let (newest, mut cursor) = page(&store, &chain, None);
    assert_eq!(newest.first().map(String::as_str), Some("m068"), "the newest 32, oldest first");
    let mut seen = newest;
    let second_before = cursor.clone();
    let (second, _) = page(&store, &chain, second_before.as_deref());
    // Appends after the first page shift nothing: the same cursor gives the same page.
    for i in 100..140 {
        store.append(&turn("c1", &format!("m{i:03}"), TurnRole::User, "later"), i).expect("append");
    }
    assert_eq!(page(&store, &chain, second_before.as_deref()).0, second, "a cursor's page is stable under appends");
    let mut pages = 1;
    while let Some(before) = cursor {
        let (older, next) = page(&store, &chain, Some(&before));
        assert!(!older.is_empty() && older.len() <= RESUME_TURNS);
        seen.splice(0..0, older);
        cursor = next;
        pages += 1;
    }
    assert_eq!(pages, 4, "100 turns are 32 + 32 + 32 + 4");
    let all: Vec<String> = (0..100).map(|i| format!("m{i:03}")).collect();
    assert_eq!(seen, all, "paging back reaches the first turn (the goal), each turn once, in order");
    let first = continuity_protocol::journal::resume_cursor(1, &chain);
    assert_eq!(page(&store, &chain, Some(&first)), (Vec::new(), None), "nothing is older than the first turn");
    // A cursor pages only the chain it came with: one of c1's refused for the other chain
    // (it used to page the other chain from c1's turn number).
    let other = chain_of(&store, "other");
    let c1_cursor = continuity_protocol::journal::parse_resume_cursor(second_before.as_deref().expect("a second page")).expect("ours");
    let refused = resume(&store, &ResumeAnchor::Chain(other.clone()), Some(c1_cursor)).expect_err("another chain's cursor");
    assert!(refused.to_string().contains(&format!("a cursor of another chain, not of {other}")), "{refused}");
}

fn url(conversation: &str, project: Option<&str>) -> ResumeAnchor {
    ResumeAnchor::Url(ConversationUrl {
        conversation_id: conversation.to_owned(),
        project_id: project.map(str::to_owned),
        provider: continuity_protocol::handoff::HandoffProvider::Chatgpt,
    })
}

#[test]
fn c5_c7_resume_returns_the_newest_turns_bounded_with_the_instruction_to_recheck() {
    let (_dir, mut store) = open();
    let big = "é".repeat(RESUME_TURN_TEXT_BYTES); // 2 bytes each: twice the bound
    for i in 0..40 {
        let text = if i == 39 { big.clone() } else { format!("turn {i}") };
        let role = if i % 2 == 0 { TurnRole::User } else { TurnRole::Assistant };
        store.append(&in_project(turn("c1", &format!("m{i:02}"), role, &text), PROJECT, "w1"), i).expect("append");
    }
    let chain = chain_of(&store, "c1");
    for anchor in [ResumeAnchor::Chain(chain.clone()), url("c1", None)] {
        let MethodResult::ContinuityResumed { continuity_id, turns, more_turns, instruction, workspace_ids, .. } =
            resumed(&store, anchor).expect("resume")
        else {
            panic!("not a resume answer")
        };
        assert_eq!(continuity_id, chain);
        assert_eq!(turns.len(), RESUME_TURNS);
        assert!(more_turns);
        assert_eq!(turns[0].message_id, "m08", "the newest 32, oldest first");
        let last = turns.last().expect("turns");
        assert!(last.text_truncated && last.text.len() == RESUME_TURN_TEXT_BYTES, "{}", last.text.len());
        assert!(!turns[0].text_truncated);
        assert!(instruction.contains("re-check the live Herdr workspace, the runtime and Git"), "{instruction}");
        assert_eq!(workspace_ids, ["w1"]);
    }
}

#[test]
fn c5_a_url_of_an_unjournaled_chat_in_a_project_resumes_its_only_chain_or_is_ambiguous() {
    let (_dir, mut store) = open();
    store.append(&in_project(turn("c1", "m1", TurnRole::User, "hello"), PROJECT, "w1"), 1).expect("append");
    let chain = chain_of(&store, "c1");
    let only = resumed(&store, url("never-seen", Some(PROJECT))).expect("resume");
    assert!(matches!(only, MethodResult::ContinuityResumed { continuity_id, .. } if continuity_id == chain));
    let mut second = in_project(turn("c2", "m1", TurnRole::User, "other work"), PROJECT, "w1");
    second.continuity_id = Some("hc-second".to_owned());
    store.append(&second, 2).expect("append");
    let ambiguous = resumed(&store, url("never-seen", Some(PROJECT)));
    assert!(matches!(&ambiguous, Err(JournalError::Ambiguous(m)) if m.contains("continuity.search")), "{ambiguous:?}");
}

#[test]
fn c6_a_conversation_never_journaled_is_named_as_such() {
    let (_dir, store) = open();
    for error in [resumed(&store, url("abc", None)).err(), resumed(&store, url("abc", Some(PROJECT))).err(), resolve(&store, "abc").err()] {
        let Some(JournalError::NotFound(message)) = error else { panic!("not found: {error:?}") };
        assert!(message.starts_with("conversation abc was never journaled"), "{message}");
        assert!(message.contains("cannot be fetched from its URL"), "{message}");
    }
    let unknown = resumed(&store, ResumeAnchor::Chain("hc-nope".into()));
    assert!(matches!(&unknown, Err(JournalError::NotFound(m)) if m.contains("do not guess ids")), "{unknown:?}");
}

#[test]
fn resolve_and_list_name_the_chain_and_bound_the_list() {
    let (_dir, mut store) = open();
    for i in 0..12 {
        let mut t = turn(&format!("c{i}"), "m", TurnRole::User, "x");
        t.title = Some(format!("chat {i}"));
        store.append(&t, i).expect("append");
    }
    let resolved = resolve(&store, "c3").expect("resolve");
    assert!(matches!(&resolved, MethodResult::ContinuityResolved { title: Some(t), updated_at: 3, .. } if t == "chat 3"), "{resolved:?}");
    let MethodResult::ContinuityList { candidates, more } = list(&store, 10).expect("list") else { panic!("not a list") };
    assert_eq!((candidates.len(), more), (10, true));
    assert_eq!(candidates[0].title.as_deref(), Some("chat 11"), "most recently updated first");
    assert!(candidates.iter().all(|c| c.match_reasons.is_empty()));
}

#[test]
fn conversation_urls_of_chatgpt_zai_and_deepseek_are_read_and_others_refused() {
    let ok = |u: &str| ConversationUrl::parse(u).map(|c| (c.conversation_id, c.project_id, c.provider.as_str()));
    assert_eq!(ok("https://chatgpt.com/c/6a1b-22"), Ok(("6a1b-22".into(), None, "chatgpt")));
    assert_eq!(
        ok("https://www.chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef-my-app/c/77?model=x#end"),
        Ok(("77".into(), Some(PROJECT.into()), "chatgpt"))
    );
    // C1 on z.ai and DeepSeek (X10): their turns are journaled, and z.ai's are handed over.
    assert_eq!(ok("https://chat.z.ai/c/7c1d2e3f-4a5b"), Ok(("7c1d2e3f-4a5b".into(), None, "zai")));
    assert_eq!(ok("https://chat.deepseek.com/a/chat/s/7c1d-2e3f?x=1"), Ok(("7c1d-2e3f".into(), None, "deepseek")));
    for bad in [
        "http://chatgpt.com/c/1",
        "https://chatgpt.com.evil/c/1",
        "https://chatgpt.com/g/g-p-123/c/1",
        // Issue 23: a non-ASCII character across byte 32 of the Project segment panicked
        // (`p[..32]` sliced inside a char).
        "https://chatgpt.com/g/g-p-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaé/c/x",
        "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdefé/c/x",
        "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdeé-x/c/x",
        "https://chatgpt.com/g/g-p-日本語日本語日本語日本語日本語日本語日本語日本語/c/x",
        "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdefx/c/1",
        "https://chatgpt.com/c/",
        "https://chatgpt.com/c/1/extra",
        "https://chatgpt.com/c/a b",
        "https://chat.z.ai/g/g-p-0123456789abcdef0123456789abcdef/c/1",
        "https://chat.z.ai/a/chat/s/1",
        "https://chat.deepseek.com/c/1",
        "https://chat.z.ai.evil/c/1",
    ] {
        assert!(ok(bad).is_err_and(|e| e.contains("is not a conversation URL of ChatGPT, z.ai or DeepSeek")), "{bad}");
    }
}

/// One step of the property test: append turn `index` of the fixed set (again and again:
/// retries), or search.
#[derive(Debug, Clone)]
enum Op {
    Append(usize),
    Search { conversation: Option<usize>, project: Option<usize>, workspace: Option<usize>, word: Option<usize> },
}

const WORDS: [&str; 6] = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"];
const CONVERSATIONS: usize = 6;

/// The fixed set of turns: conversation `i % 6`, Projects 0, 1 or none, two workspaces,
/// two words from [`WORDS`] each.
fn fixed_turn(index: usize) -> ContinuityAppendParams {
    let conversation = index % CONVERSATIONS;
    let mut t = turn(
        &format!("conv-{conversation}"),
        &format!("msg-{index}"),
        if index.is_multiple_of(2) { TurnRole::User } else { TurnRole::Assistant },
        &format!("{} and {}", WORDS[index % WORDS.len()], WORDS[(index / 3) % WORDS.len()]),
    );
    t.project_id = [Some(PROJECT), Some(OTHER_PROJECT), None][conversation % 3].map(str::to_owned);
    t.workspace_id = Some(format!("w{}", index % 2));
    t
}

fn op() -> impl Strategy<Value = Op> {
    let pick = |n: usize| proptest::option::of(0..n);
    prop_oneof![
        3 => (0..24usize).prop_map(Op::Append),
        1 => (pick(CONVERSATIONS), pick(2), pick(2), pick(WORDS.len()))
            .prop_map(|(conversation, project, workspace, word)| Op::Search { conversation, project, workspace, word }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// C1, C4: appends in any order, each retried any number of times, record every turn
    /// exactly once; a search never returns a chain that does not match what was asked,
    /// never leaves out a match within its bound, and is `unique_exact` only when identity
    /// alone names one chain.
    #[test]
    fn appends_in_any_order_with_retries_never_duplicate_and_searches_return_only_matches(ops in proptest::collection::vec(op(), 1..60)) {
        let (_dir, mut store) = open();
        let mut appended: BTreeSet<usize> = BTreeSet::new();
        for (step, op) in ops.iter().enumerate() {
            match op {
                Op::Append(index) => {
                    let outcome = store.append(&fixed_turn(*index), step as i64).expect("append");
                    prop_assert_eq!(matches!(outcome, Appended::Inserted(_)), appended.insert(*index), "inserted only the first time");
                }
                Op::Search { conversation, project, workspace, word } => {
                    let identity = Identity {
                        conversation_id: conversation.map(|c| format!("conv-{c}")),
                        project_id: project.map(|p| [PROJECT, OTHER_PROJECT][p].to_owned()),
                        workspace_id: workspace.map(|w| format!("w{w}")),
                    };
                    if identity.is_empty() && word.is_none() {
                        continue;
                    }
                    // The model: each appended turn's chain, and what it matches.
                    let chain_by_conversation: BTreeMap<String, String> = appended
                        .iter()
                        .map(|i| fixed_turn(*i).conversation_id)
                        .map(|c| (c.clone(), chain_of(&store, &c)))
                        .collect();
                    let chain_matches = |chain: &str, with_word: bool| {
                        let turns: Vec<ContinuityAppendParams> = appended.iter().map(|i| fixed_turn(*i)).filter(|t| chain_by_conversation[&t.conversation_id] == chain).collect();
                        identity.conversation_id.as_ref().is_none_or(|c| chain_by_conversation.get(c).is_some_and(|x| x == chain))
                            && identity.project_id.as_ref().is_none_or(|p| turns.iter().any(|t| t.project_id.as_ref() == Some(p)))
                            && identity.workspace_id.as_ref().is_none_or(|w| turns.iter().any(|t| t.workspace_id.as_ref() == Some(w)))
                            && (!with_word || word.is_none_or(|w| turns.iter().any(|t| t.text.split(' ').any(|x| x == WORDS[w]))))
                    };
                    let chains: BTreeSet<&String> = chain_by_conversation.values().collect();
                    let expected: BTreeSet<String> = chains.iter().filter(|c| chain_matches(c, true)).map(|c| (*c).clone()).collect();
                    let by_identity: BTreeSet<String> = chains.iter().filter(|c| chain_matches(c, false)).map(|c| (*c).clone()).collect();
                    let (resolution, safe, found) = searched(&store, identity.clone(), word.map(|w| WORDS[w]));
                    let found: BTreeSet<String> = found.into_iter().collect();
                    prop_assert!(found.is_subset(&expected), "a returned chain does not match: {:?} ⊄ {:?}", found, expected);
                    if expected.len() <= 5 {
                        prop_assert_eq!(&found, &expected, "a match was left out");
                    }
                    let exact = !identity.is_empty() && by_identity.len() == 1 && found.len() == 1 && found == by_identity;
                    prop_assert_eq!(resolution == Resolution::UniqueExact, exact);
                    prop_assert_eq!(safe, exact);
                }
            }
        }
        prop_assert_eq!(store.turn_count().expect("count"), appended.len() as u64, "no turn recorded twice");
    }
}

/// C4: a text search narrowed by identity gives the same chains whether identity names a
/// few chains (their turns are read) or many (the text index's matches are read).
#[test]
fn c4_identity_and_text_match_alike_for_few_and_many_named_chains() {
    let (_dir, mut store) = open();
    let chains = super::store::FEW_CHAINS as usize + 6;
    let mut turns = Vec::new();
    for i in 0..chains {
        let word = if i % 10 == 3 { "needle" } else { "hay" };
        let mut t = turn(&format!("c{i}"), "m", TurnRole::User, &format!("some {word} here"));
        t.workspace_id = Some(if i < 20 { "twenty" } else { "fifty" }.to_owned());
        t.continuity_id = Some(format!("hc-{i:03}"));
        turns.push(t);
        // Every chain is in the big workspace too.
        let mut also = turn(&format!("c{i}"), "n", TurnRole::Assistant, "plain");
        also.workspace_id = Some("all".to_owned());
        also.continuity_id = Some(format!("hc-{i:03}"));
        turns.push(also);
    }
    store.append_batch(turns, 1).expect("fill");
    let found = |workspace: &str| {
        let mut ids = searched(&store, Identity { workspace_id: Some(workspace.into()), ..Identity::default() }, Some("needle")).2;
        ids.sort();
        ids
    };
    assert_eq!(found("twenty"), ["hc-003", "hc-013"], "20 named chains: their turns are read");
    assert_eq!(found("all").len(), 5, "{} named chains: the index's matches are read, up to the bound", chains);
    assert!(found("all").iter().all(|id| (0..chains).any(|i| i % 10 == 3 && *id == format!("hc-{i:03}"))));
    assert_eq!(found("fifty"), (20..chains).filter(|i| i % 10 == 3).map(|i| format!("hc-{i:03}")).collect::<Vec<_>>());
}

/// Issue 23: a panic inside one journal call (a bug) poisons the store's mutex; the call
/// fails with an error, and every later call still gets the store (the lock is taken
/// through its poison), so one panic never makes every later request panic.
#[tokio::test]
async fn a_panic_in_one_journal_call_leaves_the_store_usable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let journal = Arc::new(Journal::open(&dir.path().join("state.db")).expect("open the journal"));
    let failed = journal.with_store(|_| -> Result<(), JournalError> { panic!("a bug inside one call") }).await;
    assert!(failed.is_err(), "the panicking call is an error, not a crash");
    assert!(journal.store.is_poisoned(), "the panic poisoned the lock");
    let appended = journal.with_store(|store| store.append(&turn("c1", "m1", TurnRole::User, "after the panic"), 1)).await;
    assert!(matches!(appended, Ok(Appended::Inserted(_))), "{appended:?}");
    assert_eq!(journal.with_store(|store| store.turn_count()).await.expect("the next call works"), 1);
}
