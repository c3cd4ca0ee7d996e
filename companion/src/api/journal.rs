//! Runtime methods of the Continuity Journal (docs/PROTOCOL.md "Continuity Journal"):
//! `continuity.append` (the extension's write, C1), the planner's reads
//! `continuity.resolve`, `continuity.search`, `continuity.resume`, `continuity.list`, and
//! the read-only handoff package `herdr_mcp.browser_handoff.prepare` (X4; the reads and the
//! package are also reached through `herdr_call`, [`super::tools`]).
//!
//! Invariants:
//! - Every param is checked before any IO: unknown keys, types, and sizes (ids ≤ 256
//!   characters, text ≤ 64 KiB, URL ≤ 2048, title ≤ 512, query ≤ 512 characters); a write
//!   over a limit is refused whole, never cut, with a message that names the limit.
//! - `continuity.resume` takes exactly one of `continuity_id` and `conversation_url` (C5).
//! - `herdr_mcp.browser_handoff.prepare` answers `continuity_store_unavailable` when the
//!   journal is not open (X5: no package without live confirmation), and refuses ids that
//!   could not stand in the seed block and any text carrying a seed or legacy marker.

use continuity_protocol::handoff::{
    HandoffPrepareParams, DELIVERY_MARKER_START, LEGACY_PACKET_MARKER, MAX_HANDOFF_CONTINUITY_ID_CHARS, MAX_HANDOFF_ID_CHARS,
    MAX_HANDOFF_OBJECTIVE_CHARS, MAX_HANDOFF_QUEUE_ITEMS, MAX_HANDOFF_SOURCE_URL_CHARS, MAX_HANDOFF_WORK_CHAIN_ID_CHARS, SEED_BLOCK_START,
    SEED_PANES, SEED_TASKS,
};
use continuity_protocol::journal::{
    parse_resume_cursor, ContinuityAppendParams, ContinuityListParams, ContinuityResolveParams, ContinuityResumeParams,
    ContinuitySearchParams, ResumeCursor, DEFAULT_SEARCH_LIMIT, MAX_CANDIDATES, MAX_JOURNAL_ID_CHARS, MAX_SEARCH_QUERY_CHARS,
    MAX_TITLE_CHARS, MAX_TURN_TEXT_BYTES, MAX_URL_CHARS,
};
use continuity_protocol::MethodResult;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::Router;
use crate::clock::unix_millis;
use crate::journal::handoff::{HandoffRequest, PaneFact, SeedFacts, TaskFact, WorkspaceFacts};
use crate::journal::store::{fts_query, Appended, Identity, JournalError};
use crate::journal::{ConversationUrl, ResumeAnchor, SearchQuery};
use crate::protocol::{ErrorCode, Method, MethodError};

fn bad(method: Method, message: String) -> MethodError {
    (ErrorCode::BadRequest, format!("{method}: {message}"))
}

/// `params` as `T` (unknown keys, missing keys and wrong types refused by serde).
fn typed<T: DeserializeOwned>(method: Method, params: &Map<String, Value>, shape: &str) -> Result<T, MethodError> {
    serde_json::from_value(Value::Object(params.clone())).map_err(|e| bad(method, format!("{e}; send {shape}")))
}

/// Refuses a string over `max` characters (or empty, or with control characters when
/// `plain`); `what` names it.
fn check_chars(method: Method, what: &str, value: &str, max: usize, plain: bool) -> Result<(), MethodError> {
    let count = value.chars().count();
    if count > max {
        return Err(bad(method, format!("{what} is {count} characters; at most {max} are allowed")));
    }
    if value.trim().is_empty() {
        return Err(bad(method, format!("{what} must be a non-empty string")));
    }
    if plain && value.chars().any(char::is_control) {
        return Err(bad(method, format!("{what} must not contain control characters")));
    }
    Ok(())
}

fn check_id(method: Method, what: &str, value: Option<&String>) -> Result<(), MethodError> {
    value.map_or(Ok(()), |v| check_chars(method, what, v, MAX_JOURNAL_ID_CHARS, true))
}

fn check_url(method: Method, value: &str) -> Result<ConversationUrl, MethodError> {
    check_url_named(method, "conversation_url", value, MAX_URL_CHARS)
}

/// A conversation URL param (ChatGPT, z.ai, DeepSeek) called `what`, of at most `max` characters.
fn check_url_named(method: Method, what: &str, value: &str, max: usize) -> Result<ConversationUrl, MethodError> {
    check_chars(method, what, value, max, true)?;
    ConversationUrl::parse(value).map_err(|e| bad(method, e))
}

fn check_limit(method: Method, limit: Option<u64>, default: u64) -> Result<u64, MethodError> {
    match limit {
        None => Ok(default),
        Some(n) if (1..=MAX_CANDIDATES).contains(&n) => Ok(n),
        Some(n) => Err(bad(method, format!("limit is {n}; send 1 to {MAX_CANDIDATES}"))),
    }
}

/// Validates `continuity.append` params.
pub fn append_params(params: &Map<String, Value>) -> Result<ContinuityAppendParams, MethodError> {
    let m = Method::ContinuityAppend;
    let turn: ContinuityAppendParams = typed(m, params, "{conversation_id, message_id, role: \"user\"|\"assistant\", text, observed_at, continuity_id?, project_id?, workspace_id?, conversation_url?, title?}")?;
    check_id(m, "continuity_id", turn.continuity_id.as_ref())?;
    check_id(m, "conversation_id", Some(&turn.conversation_id))?;
    check_id(m, "message_id", Some(&turn.message_id))?;
    check_id(m, "project_id", turn.project_id.as_ref())?;
    check_id(m, "workspace_id", turn.workspace_id.as_ref())?;
    if turn.text.len() > MAX_TURN_TEXT_BYTES {
        return Err(bad(m, format!(
            "text is {} bytes; at most {MAX_TURN_TEXT_BYTES} (64 KiB) are allowed — the turn was not recorded (it is refused whole, never cut)",
            turn.text.len()
        )));
    }
    if turn.text.trim().is_empty() {
        return Err(bad(m, "text must be the turn's non-empty text".to_owned()));
    }
    if let Some(title) = &turn.title {
        check_chars(m, "title", title, MAX_TITLE_CHARS, true)?;
    }
    if let Some(url) = &turn.conversation_url {
        let parsed = check_url(m, url)?;
        if parsed.conversation_id != turn.conversation_id {
            return Err(bad(m, format!("conversation_url names conversation {}, not {}", parsed.conversation_id, turn.conversation_id)));
        }
    }
    Ok(turn)
}

/// Validates `continuity.search` params (merging the URL's ids into the identity).
pub fn search_params(params: &Map<String, Value>) -> Result<SearchQuery, MethodError> {
    let m = Method::ContinuitySearch;
    let p: ContinuitySearchParams =
        typed(m, params, "{project_id?, workspace_id?, conversation_id?, conversation_url?, query?, limit?} with at least one of them")?;
    check_id(m, "project_id", p.project_id.as_ref())?;
    check_id(m, "workspace_id", p.workspace_id.as_ref())?;
    check_id(m, "conversation_id", p.conversation_id.as_ref())?;
    let conversation_from_url = p.conversation_id.is_none() && p.conversation_url.is_some();
    let mut identity = Identity { conversation_id: p.conversation_id, project_id: p.project_id, workspace_id: p.workspace_id };
    if let Some(url) = &p.conversation_url {
        let parsed = check_url(m, url)?;
        for (what, explicit, derived) in [
            ("conversation_id", &mut identity.conversation_id, Some(parsed.conversation_id)),
            ("project_id", &mut identity.project_id, parsed.project_id),
        ] {
            match (explicit.as_ref(), derived) {
                (Some(given), Some(from_url)) if *given != from_url => {
                    return Err(bad(m, format!("{what} {given} contradicts conversation_url, which names {from_url}; send one of them")));
                }
                (None, Some(from_url)) => *explicit = Some(from_url),
                _ => {}
            }
        }
    }
    let fts = match &p.query {
        None => None,
        Some(text) => {
            check_chars(m, "query", text, MAX_SEARCH_QUERY_CHARS, false)?;
            Some(
                fts_query(text)
                    .ok_or_else(|| bad(m, "query has no words to search for; send words the old conversation contained".to_owned()))?,
            )
        }
    };
    if identity.is_empty() && fts.is_none() {
        return Err(bad(
            m,
            "give at least one of project_id, workspace_id, conversation_id, conversation_url or query (continuity.list lists the chains)"
                .to_owned(),
        ));
    }
    Ok(SearchQuery { identity, fts, limit: check_limit(m, p.limit, DEFAULT_SEARCH_LIMIT)?, conversation_from_url })
}

/// Validates `continuity.resume` params: exactly one anchor (C5), and a `before` cursor
/// this runtime wrote, if any.
pub fn resume_params(params: &Map<String, Value>) -> Result<(ResumeAnchor, Option<ResumeCursor>), MethodError> {
    let m = Method::ContinuityResume;
    let p: ContinuityResumeParams =
        typed(m, params, "{\"continuity_id\": …} or {\"conversation_url\": …}, and \"before\": a next_cursor to page back")?;
    let before = match &p.before {
        None => None,
        Some(cursor) => Some(parse_resume_cursor(cursor).ok_or_else(|| {
            bad(
                m,
                format!(
                    "before `{}` is not a cursor of this runtime; pass the next_cursor of an earlier continuity.resume answer as it came (or leave before out for the newest turns)",
                    cursor.chars().take(40).collect::<String>()
                ),
            )
        })?),
    };
    let anchor = match (p.continuity_id, p.conversation_url) {
        (Some(id), None) => {
            check_id(m, "continuity_id", Some(&id))?;
            ResumeAnchor::Chain(id)
        }
        (None, Some(url)) => ResumeAnchor::Url(check_url(m, &url)?),
        (Some(_), Some(_)) => return Err(bad(m, "pass continuity_id or conversation_url, not both".to_owned())),
        (None, None) => {
            return Err(bad(m, "needs continuity_id or conversation_url (exactly one); continuity.search finds candidates".to_owned()))
        }
    };
    Ok((anchor, before))
}

/// Refuses an id that could not stand as `what=<id>` in the seed block.
fn check_token(method: Method, what: &str, value: &str, max: usize, hint: &str) -> Result<(), MethodError> {
    check_chars(method, what, value, max, true)?;
    if value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-')) {
        return Ok(());
    }
    Err(bad(method, format!("{what} may hold only ASCII letters, digits and . _ : - (it is written into the seed block); {hint}")))
}

/// Refuses a text for the seed message that carries a seed block, legacy packet or delivery
/// marker (the message would no longer end with the one seed block, would carry a
/// `HERDR_HANDOFF_V1` packet, X11, or could confirm another delivery).
fn check_unmarked(method: Method, what: &str, value: &str) -> Result<(), MethodError> {
    let markers = [SEED_BLOCK_START.trim_start_matches('['), LEGACY_PACKET_MARKER, DELIVERY_MARKER_START];
    let marker = markers.into_iter().find(|m| value.contains(m));
    match marker {
        None => Ok(()),
        Some(marker) => {
            Err(bad(method, format!("{what} contains `{marker}`, a marker the seed message must not repeat; send it without the marker")))
        }
    }
}

/// Validates `herdr_mcp.browser_handoff.prepare` params (all before any IO).
pub fn prepare_params(params: &Map<String, Value>) -> Result<HandoffRequest, MethodError> {
    let m = Method::BrowserHandoffPrepare;
    let p: HandoffPrepareParams = typed(
        m,
        params,
        "{continuity_id, source_url, objective?, work_chain_id?, handoff_id?, workspace_id?, browser_session_ref?, queue?}",
    )?;
    check_token(m, "continuity_id", &p.continuity_id, MAX_HANDOFF_CONTINUITY_ID_CHARS, "send the id as the journal gave it")?;
    let source = check_url_named(m, "source_url", &p.source_url, MAX_HANDOFF_SOURCE_URL_CHARS)?;
    check_unmarked(m, "source_url", &p.source_url)?;
    if let Some(objective) = &p.objective {
        check_chars(m, "objective", objective, MAX_HANDOFF_OBJECTIVE_CHARS, false)?;
        if objective.chars().any(|c| c.is_control() && c != '\n') {
            return Err(bad(m, "objective must not contain control characters other than line breaks".to_owned()));
        }
        check_unmarked(m, "objective", objective)?;
    }
    if let Some(work_chain) = &p.work_chain_id {
        check_chars(m, "work_chain_id", work_chain, MAX_HANDOFF_WORK_CHAIN_ID_CHARS, true)?;
        check_unmarked(m, "work_chain_id", work_chain)?;
    }
    if let Some(handoff_id) = &p.handoff_id {
        check_token(m, "handoff_id", handoff_id, MAX_HANDOFF_ID_CHARS, "leave it out to get one derived from the other params")?;
    }
    check_id(m, "workspace_id", p.workspace_id.as_ref())?;
    check_id(m, "browser_session_ref", p.browser_session_ref.as_ref())?;
    if p.queue.len() > MAX_HANDOFF_QUEUE_ITEMS {
        return Err(bad(m, format!("queue has {} items; at most {MAX_HANDOFF_QUEUE_ITEMS} are allowed (send the oldest)", p.queue.len())));
    }
    for item in &p.queue {
        // The seed quotes the start of each item; a longer one is refused, not kept whole.
        check_chars(m, "a queue item", item, MAX_TURN_TEXT_BYTES, false)?;
    }
    Ok(HandoffRequest {
        continuity_id: p.continuity_id,
        source_url: p.source_url,
        source,
        objective: p.objective,
        work_chain_id: p.work_chain_id,
        handoff_id: p.handoff_id,
        workspace_id: p.workspace_id,
        browser_session_ref: p.browser_session_ref,
        queue: p.queue,
    })
}

/// `herdr_mcp.browser_handoff.prepare`: the params, then the live confirmation and the
/// package ([`crate::journal::handoff::prepare`]); without a journal, no package (X5).
async fn prepare(api: &Router, params: &Map<String, Value>) -> Result<MethodResult, MethodError> {
    let request = prepare_params(params)?;
    let Some(journal) = api.journal.as_ref() else {
        return Err((
            ErrorCode::ContinuityStoreUnavailable,
            format!(
                "{}: the continuity journal in state.db is not open, so chain {} cannot be confirmed and no handoff is prepared; keep working in {} and restart the runtime (runtime.log and herdr-companion doctor say why it did not open)",
                Method::BrowserHandoffPrepare,
                request.continuity_id,
                request.source_url
            ),
        ));
    };
    let facts = seed_facts(api, &request).await;
    journal.with_store(move |store| crate::journal::handoff::prepare(store, &request, &facts)).await.map_err(journal_error)
}

/// The live facts of the seed (X9): the workspace's panes and agents from Herdr's catalog,
/// each pane directory's Git branch and last commit, the chat's open inbox tasks there.
/// Where a source does not answer, the fact is absent (or, for the inbox, named unknown);
/// nothing is invented.
async fn seed_facts(api: &Router, request: &HandoffRequest) -> SeedFacts {
    let Some(workspace_id) = request.workspace_id.clone() else { return SeedFacts::default() };
    let catalog = api.events.as_ref().map(|hub| hub.catalog());
    let label = catalog.as_ref().and_then(|c| c.workspaces.get(&workspace_id)).map(|w| w.label.clone());
    let mut panes: Vec<PaneFact> = catalog
        .as_ref()
        .map(|c| {
            c.panes
                .values()
                .filter(|p| p.workspace_id == workspace_id)
                .take(SEED_PANES)
                .map(|p| PaneFact {
                    pane_id: p.pane_id.clone(),
                    agent: p.agent.clone(),
                    status: p.agent_status.clone(),
                    cwd: p.cwd.clone(),
                    git: None,
                })
                .collect()
        })
        .unwrap_or_default();
    // One `git` pair per distinct directory, all at once (each under its own timeout).
    let mut asked = tokio::task::JoinSet::new();
    let mut dirs: Vec<String> = panes.iter().map(|p| p.cwd.clone()).filter(|d| !d.is_empty()).collect();
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        asked.spawn(async move { (crate::journal::git::head(std::path::Path::new(&dir)).await, dir) });
    }
    while let Some(answer) = asked.join_next().await {
        if let Ok((Some(fact), dir)) = answer {
            for pane in panes.iter_mut().filter(|p| p.cwd == dir) {
                pane.git = Some(fact.clone());
            }
        }
    }
    let (tasks, open_tasks) = match (&api.inbox, request.browser_session_ref.clone()) {
        (Some(inbox), Some(session_ref)) => {
            let workspace = workspace_id.clone();
            match inbox.with_store(move |store| store.open_in_workspace(&session_ref, &workspace, SEED_TASKS)).await {
                Ok((records, total)) => (
                    records
                        .into_iter()
                        .map(|t| TaskFact {
                            task_id: t.task_id,
                            state: t.state.as_str().to_owned(),
                            pane_id: t.pane_id,
                            preview: t.prompt_preview,
                        })
                        .collect(),
                    Some(total),
                ),
                Err(e) => {
                    api.log
                        .line(format_args!("handoff seed: the inbox could not be read ({e}); the seed says its open tasks are not known"));
                    (Vec::new(), None)
                }
            }
        }
        _ => (Vec::new(), None),
    };
    SeedFacts { workspace: Some(WorkspaceFacts { workspace_id, label, panes }), tasks, open_tasks }
}

/// The method error of a journal failure.
fn journal_error(error: JournalError) -> MethodError {
    let code = match &error {
        JournalError::NotFound(_) => ErrorCode::ContinuityNotFound,
        JournalError::Ambiguous(_) => ErrorCode::ContinuityAmbiguous,
        JournalError::Conflict(_) => ErrorCode::ContinuityConflict,
        JournalError::Mismatch(_) => ErrorCode::ContinuityMismatch,
        JournalError::Sqlite(_) | JournalError::Schema(_) | JournalError::CallLost(_) | JournalError::Random(_) => {
            ErrorCode::ContinuityStoreUnavailable
        }
    };
    (code, error.to_string())
}

/// Serves `method` (one of the `continuity.*` methods) with `params`; `tools.call`'s
/// `herdr_call` comes here too.
pub async fn handle(api: &Router, method: Method, params: &Map<String, Value>) -> Result<Value, MethodError> {
    if method == Method::BrowserHandoffPrepare {
        return written(prepare(api, params).await?);
    }
    let Some(journal) = api.journal.as_ref() else {
        return Err((ErrorCode::NotReady, "the runtime's continuity journal is not open (see runtime.log); retry in a moment".to_owned()));
    };
    let result = match method {
        Method::ContinuityAppend => {
            let turn = append_params(params)?;
            let now = unix_millis() as i64;
            let (conversation_id, message_id) = (turn.conversation_id.clone(), turn.message_id.clone());
            let (appended, legacy_packets) =
                journal.with_store(move |store| store.append_reporting(&turn, now)).await.map_err(journal_error)?;
            MethodResult::ContinuityAppended {
                continuity_id: appended.continuity_id().to_owned(),
                conversation_id,
                message_id,
                inserted: matches!(appended, Appended::Inserted(_)),
                legacy_packets,
            }
        }
        Method::ContinuityResolve => {
            let p: ContinuityResolveParams = typed(method, params, "{\"conversation_id\": …}")?;
            check_id(method, "conversation_id", Some(&p.conversation_id))?;
            journal.with_store(move |store| crate::journal::resolve(store, &p.conversation_id)).await.map_err(journal_error)?
        }
        Method::ContinuitySearch => {
            let query = search_params(params)?;
            journal.with_store(move |store| crate::journal::search(store, &query)).await.map_err(journal_error)?
        }
        Method::ContinuityResume => {
            let (anchor, before) = resume_params(params)?;
            journal.with_store(move |store| crate::journal::resume(store, &anchor, before)).await.map_err(journal_error)?
        }
        // `continuity.list` (the router sends no other method here).
        _ => {
            let p: ContinuityListParams = typed(method, params, "{} or {\"limit\": 1..10}")?;
            let limit = check_limit(method, p.limit, MAX_CANDIDATES)?;
            journal.with_store(move |store| crate::journal::list(store, limit)).await.map_err(journal_error)?
        }
    };
    written(result)
}

/// A journal method's answer as JSON.
fn written(result: MethodResult) -> Result<Value, MethodError> {
    serde_json::to_value(result).map_err(|e| (ErrorCode::ContinuityStoreUnavailable, format!("the answer could not be written ({e})")))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::api::Services;
    use crate::herdr::HerdrStatus;
    use crate::outbox::ClientHandle;
    use crate::protocol::Request;
    use continuity_protocol::HerdrState;

    /// A router over a real journal in `dir` (or none) and no other service.
    async fn router(dir: &std::path::Path, with_journal: bool) -> Router {
        let (_tx, herdr_status) = tokio::sync::watch::channel(HerdrStatus {
            state: HerdrState::NotRunning,
            protocol: None,
            version: None,
            socket: dir.join("no-herdr.sock").display().to_string(),
            detail: None,
        });
        let log = Arc::new(crate::log::RuntimeLog::open(&dir.join("runtime.log")));
        let journal = if with_journal { crate::journal::start(dir.join("state.db"), log.clone()).await } else { None };
        Router::new(Services {
            herdr_status,
            boot_id: "boot".into(),
            log,
            events: None,
            inbox: None,
            home: dir.to_path_buf(),
            judge: None,
            journal,
            retention: None,
            work_memory: None,
            bridge: None,
            attribution: std::sync::Arc::new(crate::api::attribution::Attribution::without_pairs()),
            write_tools: None,
        })
    }

    async fn call(router: &Router, method: &str, params: Value) -> Result<Value, MethodError> {
        let (tx, _rx) = tokio::sync::mpsc::channel(8);
        let Value::Object(params) = params else { panic!("params must be an object") };
        let request = Request { id: "t".into(), method: Method::parse(method).expect("a method"), params };
        router.route(&request, &ClientHandle::new(tx)).await
    }

    fn refusal(answer: Result<Value, MethodError>) -> String {
        match answer {
            Ok(value) => format!("accepted {value}"),
            Err((code, message)) => format!("{code}: {message}"),
        }
    }

    fn append(conversation: &str, message: &str, text: &str) -> Value {
        json!({"conversation_id": conversation, "message_id": message, "role": "user", "text": text, "observed_at": 5,
            "project_id": "g-p-0123456789abcdef0123456789abcdef", "workspace_id": "w1",
            "conversation_url": format!("https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef/c/{conversation}")})
    }

    #[tokio::test]
    async fn c1_continuity_append_is_acknowledged_once_and_retries_answer_already_recorded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let router = router(dir.path(), true).await;
        let first = call(&router, "continuity.append", append("c1", "m1", "Run the tests")).await.expect("append");
        assert_eq!((first["type"].as_str(), first["inserted"].as_bool()), (Some("continuity_appended"), Some(true)));
        let chain = first["continuity_id"].clone();
        let again = call(&router, "continuity.append", append("c1", "m1", "Run the tests")).await.expect("retry");
        assert_eq!((&again["continuity_id"], again["inserted"].as_bool()), (&chain, Some(false)));
        expect_test::expect![[r#"continuity_conflict: message m1 of chain <chain> is already recorded with another conversation, role or text; a finalized turn is never rewritten — give an edited turn a new message_id"#]]
            .assert_eq(&refusal(call(&router, "continuity.append", append("c1", "m1", "Run them")).await).replace(chain.as_str().unwrap_or("?"), "<chain>"));
    }

    #[tokio::test]
    async fn c1_an_append_over_a_limit_is_refused_whole_with_the_limit_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let router = router(dir.path(), true).await;
        let exact = call(&router, "continuity.append", append("c1", "m1", &"x".repeat(MAX_TURN_TEXT_BYTES))).await;
        assert!(exact.is_ok(), "64 KiB exactly is allowed: {exact:?}");
        let cases = [
            append("c1", "m2", &"x".repeat(MAX_TURN_TEXT_BYTES + 1)),
            append("c1", &"m".repeat(257), "hi"),
            append("c1", "m3", "   "),
            json!({"conversation_id": "c1", "message_id": "m4", "role": "user", "text": "hi", "observed_at": 5, "colour": "red"}),
            json!({"conversation_id": "c1", "message_id": "m5", "role": "system", "text": "hi", "observed_at": 5}),
            json!({"conversation_id": "c1", "message_id": "m6", "role": "user", "text": "hi"}),
            json!({"conversation_id": "c2", "message_id": "m7", "role": "user", "text": "hi", "observed_at": 5, "conversation_url": "https://chatgpt.com/c/c3"}),
        ];
        let mut printed = Vec::new();
        for params in cases {
            printed.push(refusal(call(&router, "continuity.append", params).await));
        }
        expect_test::expect![[r#"
            bad_request: continuity.append: text is 65537 bytes; at most 65536 (64 KiB) are allowed — the turn was not recorded (it is refused whole, never cut)
            bad_request: continuity.append: message_id is 257 characters; at most 256 are allowed
            bad_request: continuity.append: text must be the turn's non-empty text
            bad_request: continuity.append: unknown field `colour`, expected one of `continuity_id`, `conversation_id`, `message_id`, `role`, `text`, `observed_at`, `project_id`, `workspace_id`, `conversation_url`, `title`; send {conversation_id, message_id, role: "user"|"assistant", text, observed_at, continuity_id?, project_id?, workspace_id?, conversation_url?, title?}
            bad_request: continuity.append: `system` is not a known TurnRole of herdr-continuity/1; send {conversation_id, message_id, role: "user"|"assistant", text, observed_at, continuity_id?, project_id?, workspace_id?, conversation_url?, title?}
            bad_request: continuity.append: missing field `observed_at`; send {conversation_id, message_id, role: "user"|"assistant", text, observed_at, continuity_id?, project_id?, workspace_id?, conversation_url?, title?}
            bad_request: continuity.append: conversation_url names conversation c3, not c2"#]]
        .assert_eq(&printed.join("\n"));
        let listed = call(&router, "continuity.list", json!({})).await.expect("list");
        assert_eq!(listed["candidates"].as_array().map(Vec::len), Some(1), "nothing of the refused writes was recorded");
    }

    #[tokio::test]
    async fn c5_resume_takes_exactly_one_anchor_and_search_needs_something_to_search_by() {
        let dir = tempfile::tempdir().expect("tempdir");
        let router = router(dir.path(), true).await;
        let cases = [
            ("continuity.resume", json!({"continuity_id": "hc-1", "conversation_url": "https://chatgpt.com/c/1"})),
            ("continuity.resume", json!({})),
            ("continuity.resume", json!({"conversation_url": "https://example.com/c/1"})),
            ("continuity.resume", json!({"conversation_url": "https://chatgpt.com/c/1"})),
            ("continuity.resume", json!({"continuity_id": "hc-1", "before": "page-2"})),
            ("continuity.resume", json!({"continuity_id": "hc-1", "before": "t0"})),
            ("continuity.resume", json!({"continuity_id": "hc-1", "before": "t12"})),
            ("continuity.resume", json!({"continuity_id": "hc-1", "before": 5})),
            ("continuity.search", json!({})),
            ("continuity.search", json!({"query": "?!"})),
            ("continuity.search", json!({"conversation_id": "a", "conversation_url": "https://chatgpt.com/c/b"})),
            ("continuity.search", json!({"project_id": "p", "limit": 11})),
            ("continuity.search", json!({"query": "x".repeat(513)})),
            ("continuity.resolve", json!({})),
            ("continuity.list", json!({"limit": 0})),
        ];
        let mut printed = Vec::new();
        for (method, params) in cases {
            printed.push(refusal(call(&router, method, params).await));
        }
        expect_test::expect![[r#"
            bad_request: continuity.resume: pass continuity_id or conversation_url, not both
            bad_request: continuity.resume: needs continuity_id or conversation_url (exactly one); continuity.search finds candidates
            bad_request: continuity.resume: `https://example.com/c/1` is not a conversation URL of ChatGPT, z.ai or DeepSeek; send https://chatgpt.com/c/<id>, https://chatgpt.com/g/g-p-<32 hex>/c/<id>, https://chat.z.ai/c/<id> or https://chat.deepseek.com/a/chat/s/<id>
            continuity_not_found: conversation 1 was never journaled: herdr-continuity records only the finalized turns of chats bound to a Herdr workspace or opted into the journal from the HUD, so a private chat it never saw cannot be fetched from its URL. Ask the user to paste what matters from it, or search by project_id / workspace_id (continuity.search)
            bad_request: continuity.resume: before `page-2` is not a cursor of this runtime; pass the next_cursor of an earlier continuity.resume answer as it came (or leave before out for the newest turns)
            bad_request: continuity.resume: before `t0` is not a cursor of this runtime; pass the next_cursor of an earlier continuity.resume answer as it came (or leave before out for the newest turns)
            bad_request: continuity.resume: before `t12` is not a cursor of this runtime; pass the next_cursor of an earlier continuity.resume answer as it came (or leave before out for the newest turns)
            bad_request: continuity.resume: invalid type: integer `5`, expected a string; send {"continuity_id": …} or {"conversation_url": …}, and "before": a next_cursor to page back
            bad_request: continuity.search: give at least one of project_id, workspace_id, conversation_id, conversation_url or query (continuity.list lists the chains)
            bad_request: continuity.search: query has no words to search for; send words the old conversation contained
            bad_request: continuity.search: conversation_id a contradicts conversation_url, which names b; send one of them
            bad_request: continuity.search: limit is 11; send 1 to 10
            bad_request: continuity.search: query is 513 characters; at most 512 are allowed
            bad_request: continuity.resolve: missing field `conversation_id`; send {"conversation_id": …}
            bad_request: continuity.list: limit is 0; send 1 to 10"#]]
        .assert_eq(&printed.join("\n"));
    }

    #[tokio::test]
    async fn without_a_journal_its_methods_answer_not_ready() {
        let dir = tempfile::tempdir().expect("tempdir");
        let router = router(dir.path(), false).await;
        let answer = refusal(call(&router, "continuity.list", json!({})).await);
        assert!(answer.starts_with("not_ready: the runtime's continuity journal is not open"), "{answer}");
    }

    /// C4 through the planner tool registry: `herdr_call` with `continuity.search` (params as
    /// a JSON string, as herdr-mcp's planners send them) runs the journal's search.
    #[tokio::test]
    async fn c4_herdr_call_reaches_continuity_search_through_the_registry() {
        let dir = tempfile::tempdir().expect("tempdir");
        let router = router(dir.path(), true).await;
        call(&router, "continuity.append", append("c1", "m1", "Wire the route pool")).await.expect("append");
        let arguments = json!({"method": "continuity.search", "params": "{\"project_id\":\"g-p-0123456789abcdef0123456789abcdef\",\"query\":\"route pool\"}"});
        let answer = call(&router, "tools.call", json!({"tool": "herdr_call", "arguments": arguments})).await.expect("tools.call");
        assert_eq!(answer["type"], "tool_result");
        let inner = &answer["result"];
        assert_eq!((inner["method"].as_str(), inner["read_only"].as_bool()), (Some("continuity.search"), Some(true)));
        let result = &inner["result"];
        assert_eq!((result["type"].as_str(), result["resolution"].as_str()), (Some("continuity_search"), Some("unique_exact")));
        assert_eq!(result["candidates"][0]["recent_user_excerpt"], "Wire the route pool");
        let resumed = call(
            &router,
            "tools.call",
            json!({"tool": "herdr_call", "arguments": {
                "method": "continuity.resume", "params": format!("{{\"continuity_id\":{}}}", result["candidates"][0]["continuity_id"]),
            }}),
        )
        .await
        .expect("resume");
        assert_eq!(resumed["result"]["result"]["turns"][0]["text"], "Wire the route pool");
        // The journal's write is not a planner method.
        let write = refusal(
            call(&router, "tools.call", json!({"tool": "herdr_call", "arguments": {"method": "continuity.append", "params": "{}"}})).await,
        );
        assert!(write.starts_with("bad_request: herdr_call cannot reach `continuity.append`"), "{write}");
        let methods =
            call(&router, "tools.call", json!({"tool": "herdr_methods", "arguments": {"query": "continuity."}})).await.expect("methods");
        let listed = methods["result"]["methods"].as_array().cloned().unwrap_or_default();
        assert!(listed.len() == 4 && listed.iter().all(|m| m["available"] == true), "{listed:?}");
    }

    const SOURCE: &str = "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef-herdr/c/c1";

    /// The bytes of `state.db` and its WAL (the journal's whole durable state).
    fn db_bytes(dir: &std::path::Path) -> Vec<Vec<u8>> {
        ["state.db", "state.db-wal"].iter().map(|name| std::fs::read(dir.join(name)).unwrap_or_default()).collect()
    }

    #[tokio::test]
    async fn x4_prepare_refuses_each_bad_param_with_what_to_send() {
        let dir = tempfile::tempdir().expect("tempdir");
        let router = router(dir.path(), true).await;
        let with = |extra: Value| {
            let mut params = json!({"continuity_id": "hc-1", "source_url": SOURCE});
            if let (Value::Object(params), Value::Object(extra)) = (&mut params, extra) {
                params.extend(extra);
            }
            params
        };
        let cases = [
            json!({"source_url": SOURCE}),
            json!({"continuity_id": "hc-1"}),
            with(json!({"colour": "red"})),
            with(json!({"continuity_id": "c".repeat(161)})),
            with(json!({"continuity_id": "hc 1"})),
            with(json!({"continuity_id": 7})),
            with(json!({"source_url": "https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef/project"})),
            with(json!({"source_url": format!("{SOURCE}?q={}", "x".repeat(2048))})),
            with(json!({"source_url": format!("{SOURCE}?note=HERDR_HANDOFF_V1")})),
            with(json!({"objective": "x".repeat(1025)})),
            with(json!({"objective": "   "})),
            with(json!({"objective": "ring\u{7}the bell"})),
            with(json!({"objective": "[END_HERDR_CONTINUITY_REF] and more"})),
            with(json!({"objective": "done [herdr-continuity wake:w1#4/e1.1.1]"})),
            with(json!({"work_chain_id": "w".repeat(129)})),
            with(json!({"handoff_id": "h".repeat(97)})),
            with(json!({"handoff_id": "hf]1"})),
            with(json!({"workspace_id": "w".repeat(257)})),
            with(json!({"browser_session_ref": "a\nb"})),
            with(json!({"queue": ["a", "b", "c", "d", "e", "f"]})),
            with(json!({"queue": ["   "]})),
        ];
        let mut printed = Vec::new();
        for params in cases {
            printed.push(refusal(call(&router, "herdr_mcp.browser_handoff.prepare", params).await));
        }
        expect_test::expect![[r#"
            bad_request: herdr_mcp.browser_handoff.prepare: missing field `continuity_id`; send {continuity_id, source_url, objective?, work_chain_id?, handoff_id?, workspace_id?, browser_session_ref?, queue?}
            bad_request: herdr_mcp.browser_handoff.prepare: missing field `source_url`; send {continuity_id, source_url, objective?, work_chain_id?, handoff_id?, workspace_id?, browser_session_ref?, queue?}
            bad_request: herdr_mcp.browser_handoff.prepare: unknown field `colour`, expected one of `continuity_id`, `source_url`, `objective`, `work_chain_id`, `handoff_id`, `workspace_id`, `browser_session_ref`, `queue`; send {continuity_id, source_url, objective?, work_chain_id?, handoff_id?, workspace_id?, browser_session_ref?, queue?}
            bad_request: herdr_mcp.browser_handoff.prepare: continuity_id is 161 characters; at most 160 are allowed
            bad_request: herdr_mcp.browser_handoff.prepare: continuity_id may hold only ASCII letters, digits and . _ : - (it is written into the seed block); send the id as the journal gave it
            bad_request: herdr_mcp.browser_handoff.prepare: invalid type: integer `7`, expected a string; send {continuity_id, source_url, objective?, work_chain_id?, handoff_id?, workspace_id?, browser_session_ref?, queue?}
            bad_request: herdr_mcp.browser_handoff.prepare: `https://chatgpt.com/g/g-p-0123456789abcdef0123456789abcdef/project` is not a conversation URL of ChatGPT, z.ai or DeepSeek; send https://chatgpt.com/c/<id>, https://chatgpt.com/g/g-p-<32 hex>/c/<id>, https://chat.z.ai/c/<id> or https://chat.deepseek.com/a/chat/s/<id>
            bad_request: herdr_mcp.browser_handoff.prepare: source_url is 2120 characters; at most 2048 are allowed
            bad_request: herdr_mcp.browser_handoff.prepare: source_url contains `HERDR_HANDOFF_V1`, a marker the seed message must not repeat; send it without the marker
            bad_request: herdr_mcp.browser_handoff.prepare: objective is 1025 characters; at most 1024 are allowed
            bad_request: herdr_mcp.browser_handoff.prepare: objective must be a non-empty string
            bad_request: herdr_mcp.browser_handoff.prepare: objective must not contain control characters other than line breaks
            bad_request: herdr_mcp.browser_handoff.prepare: objective contains `HERDR_CONTINUITY_REF`, a marker the seed message must not repeat; send it without the marker
            bad_request: herdr_mcp.browser_handoff.prepare: objective contains `[herdr-continuity `, a marker the seed message must not repeat; send it without the marker
            bad_request: herdr_mcp.browser_handoff.prepare: work_chain_id is 129 characters; at most 128 are allowed
            bad_request: herdr_mcp.browser_handoff.prepare: handoff_id is 97 characters; at most 96 are allowed
            bad_request: herdr_mcp.browser_handoff.prepare: handoff_id may hold only ASCII letters, digits and . _ : - (it is written into the seed block); leave it out to get one derived from the other params
            bad_request: herdr_mcp.browser_handoff.prepare: workspace_id is 257 characters; at most 256 are allowed
            bad_request: herdr_mcp.browser_handoff.prepare: browser_session_ref must not contain control characters
            bad_request: herdr_mcp.browser_handoff.prepare: queue has 6 items; at most 5 are allowed (send the oldest)
            bad_request: herdr_mcp.browser_handoff.prepare: a queue item must be a non-empty string"#]]
        .assert_eq(&printed.join("\n"));
        // Optional params may be null; a line break in the objective is fine.
        let nulls = with(json!({"objective": "first\nthen", "work_chain_id": null, "handoff_id": null}));
        let refused = refusal(call(&router, "herdr_mcp.browser_handoff.prepare", nulls).await);
        assert!(refused.starts_with("continuity_not_found: there is no continuity chain hc-1"), "{refused}");
    }

    #[tokio::test]
    async fn x5_without_a_journal_prepare_answers_continuity_store_unavailable_and_keeps_the_source() {
        let dir = tempfile::tempdir().expect("tempdir");
        let router = router(dir.path(), false).await;
        let answer =
            refusal(call(&router, "herdr_mcp.browser_handoff.prepare", json!({"continuity_id": "hc-1", "source_url": SOURCE})).await);
        assert!(
            answer.starts_with(
                "continuity_store_unavailable: herdr_mcp.browser_handoff.prepare: the continuity journal in state.db is not open"
            ),
            "{answer}"
        );
        assert!(answer.contains(&format!("keep working in {SOURCE}")), "{answer}");
    }

    /// X4 through the planner tool registry: `herdr_call` with the handoff method on a
    /// journaled chain gives the package, changes nothing in `state.db`, and `herdr_methods`
    /// lists the method as available and read-only.
    #[tokio::test]
    async fn x4_herdr_call_prepares_the_package_of_a_journaled_chain_and_writes_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let router = router(dir.path(), true).await;
        let appended = call(&router, "continuity.append", append("c1", "m1", "Wire the route pool")).await.expect("append");
        let chain = appended["continuity_id"].as_str().expect("chain").to_owned();
        let before = db_bytes(dir.path());
        let params = json!({"continuity_id": chain, "source_url": SOURCE, "objective": "Finish the route pool"}).to_string();
        let arguments = json!({"method": "herdr_mcp.browser_handoff.prepare", "params": params});
        let answer = call(&router, "tools.call", json!({"tool": "herdr_call", "arguments": arguments.clone()})).await.expect("tools.call");
        let inner = &answer["result"];
        assert_eq!((inner["method"].as_str(), inner["read_only"].as_bool()), (Some("herdr_mcp.browser_handoff.prepare"), Some(true)));
        let package = &inner["result"];
        assert_eq!((package["type"].as_str(), package["ok"].as_bool()), (Some("handoff_prepared"), Some(true)));
        assert_eq!(package["handoff"]["continuity_id"].as_str(), Some(chain.as_str()));
        assert_eq!(package["handoff"]["target_context"]["project_id"], "g-p-0123456789abcdef0123456789abcdef");
        let message = package["handoff"]["message"].as_str().expect("message");
        assert_eq!(package["manual_delivery"]["copy_prompt"].as_str(), Some(message));
        assert_eq!(package["automatic_delivery"]["params"]["message"].as_str(), Some(message));
        assert!(message.contains(&format!("continuity_id={chain}]")) && message.contains("Objective: Finish the route pool"), "{message}");
        let again = call(&router, "tools.call", json!({"tool": "herdr_call", "arguments": arguments})).await.expect("again");
        assert_eq!(again.to_string(), answer.to_string(), "a retry with the same params gets the same package");
        assert_eq!(db_bytes(dir.path()), before, "prepare is read-only: state.db and its WAL are unchanged");
        let listed = call(&router, "continuity.list", json!({})).await.expect("list");
        assert_eq!(listed["candidates"].as_array().map(Vec::len), Some(1), "no chain was added");
        let methods = call(&router, "tools.call", json!({"tool": "herdr_methods", "arguments": {"query": "browser_handoff"}}))
            .await
            .expect("methods");
        assert_eq!(
            methods["result"]["methods"],
            json!([{"method": "herdr_mcp.browser_handoff.prepare", "source": "companion", "read_only": true, "available": true}])
        );
    }
}
