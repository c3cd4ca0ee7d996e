//! Which chat a `herdr_prompt` of an MCP caller is for (docs/PROTOCOL.md "Attributing a
//! dispatch to its chat"), and `chats.report`, the extension's facts it is decided on.
//!
//! A task's result wakes the chat whose `browser_session_ref` the task carries, so a wrong
//! ref wakes the wrong chat and a missing one wakes none. The ref is taken, in this order:
//! 1. the call's `browser_session_ref` (the planner read it off the marker line of a message
//!    the extension typed, or off the HUD) — unless the call's `_meta` `openai/session` is
//!    paired with another chat: then it is refused (never silently switched);
//! 2. the chat the call's `openai/session` is paired with (`mcp_session_chats` in
//!    `state.db`, learned from an earlier call of that session that carried a ref or was
//!    attributed on evidence);
//! 3. the one bound chat that generates a reply right now (the planner is mid-turn, calling
//!    this tool), from the extension's `chats.report` facts no older than
//!    [`GENERATING_FRESH_MS`].
//!
//! Otherwise the call is refused with what to send and where the ref is.
//!
//! Invariants:
//! - A ref-less call is attributed only on evidence: a pairing, or exactly one fresh
//!   generating chat. Two or more generating chats are ambiguous and refused (naming the
//!   count), so two chats dispatching at once never get each other's results.
//! - A pairing is never replaced: a call whose ref or `openai/subject` conflicts with it is
//!   refused.
//! - Reports are per reporter (an extension instance): one replaces only its own previous
//!   list; at most [`MAX_REPORTERS`] are kept, the oldest dropped first.
//! - The JSON bridge's caller is not attributed here: it fills its own ref (`confine`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::{Map, Value};

use crate::clock::unix_millis;
use crate::db::{off_worker, DbError};
use crate::protocol::{ErrorCode, MethodError, Request};
use continuity_protocol::limits::{MAX_REF_CHARS, MAX_REPORTED_CHATS};
use continuity_protocol::{ChatFact, ChatsReportParams, ClientMeta, MethodResult};

/// How long a chat's "generating" fact counts as evidence (the extension sends it again
/// every 10 s while it holds).
pub const GENERATING_FRESH_MS: u64 = 30_000;
/// Most extension instances whose reports are kept.
pub const MAX_REPORTERS: usize = 8;
/// Longest reporter id.
const MAX_REPORTER_CHARS: usize = 64;

/// Where the planner finds the ref: said by every refusal of a call without one.
pub const WHERE_THE_REF_IS: &str =
    "take browser_session_ref from the last line of any message the herdr-continuity extension typed into your chat \
([herdr-continuity <id> ref=<browser_session_ref>]: the value after ref=), or from the extension's HUD in that chat";

/// A stored pairing of a ChatGPT session with a chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pairing {
    /// The chat's `browser_session_ref`.
    pub session_ref: String,
    /// The `openai/subject` of the call that made it, if it carried one.
    pub subject: Option<String>,
}

/// One extension's latest report.
#[derive(Debug, Clone)]
struct Report {
    /// Unix ms when it arrived.
    at: u64,
    /// Its chats.
    chats: Vec<ChatFact>,
}

/// The chats that generate a reply now (fresh facts of every reporter, each ref once), and
/// how many generating facts were too old to count.
pub fn generating_now(reports: &[(u64, Vec<ChatFact>)], now: u64) -> (Vec<String>, usize) {
    let mut fresh: Vec<String> = Vec::new();
    let mut stale = 0;
    for (at, chats) in reports {
        for chat in chats.iter().filter(|c| c.generating) {
            if now.saturating_sub(*at) > GENERATING_FRESH_MS {
                stale += 1;
            } else if !fresh.contains(&chat.browser_session_ref) {
                fresh.push(chat.browser_session_ref.clone());
            }
        }
    }
    (fresh, stale)
}

/// How a call's chat was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attributed {
    /// The call named it.
    Given(String),
    /// Its `openai/session` is paired with it.
    Paired(String),
    /// It is the one bound chat generating a reply now.
    Generating(String),
}

impl Attributed {
    /// The chat's ref.
    pub fn session_ref(&self) -> &str {
        match self {
            Attributed::Given(r) | Attributed::Paired(r) | Attributed::Generating(r) => r,
        }
    }
}

/// The decision for one `herdr_prompt` of an MCP caller: `given` is its
/// `browser_session_ref`, `paired` the pairing of its `openai/session`, `generating` the
/// fresh generating chats and `stale` the generating facts too old to count. The error is
/// the refusal's message.
pub fn decide(
    given: Option<&str>,
    meta: &ClientMeta,
    paired: Option<&Pairing>,
    generating: &[String],
    stale: usize,
) -> Result<Attributed, String> {
    if let (Some(pairing), Some(subject)) = (paired, meta.openai_subject.as_deref()) {
        if pairing.subject.as_deref().is_some_and(|s| s != subject) {
            return Err(format!(
                "herdr_prompt: this ChatGPT session (openai/session) was paired with chat {} by another user (openai/subject differs), so the companion does not dispatch for it; {WHERE_THE_REF_IS}",
                pairing.session_ref
            ));
        }
    }
    match (given, paired) {
        (Some(given), Some(pairing)) if given != pairing.session_ref => Err(format!(
            "herdr_prompt: this ChatGPT conversation (openai/session) is paired with chat {}, not {given}; a conversation dispatches only for its own chat, so that its results wake it. \
             Send browser_session_ref {} (or leave it out); to give {given} work, dispatch from that chat",
            pairing.session_ref, pairing.session_ref
        )),
        (Some(given), _) => Ok(Attributed::Given(given.to_owned())),
        (None, Some(pairing)) => Ok(Attributed::Paired(pairing.session_ref.clone())),
        (None, None) => match generating {
            [one] => Ok(Attributed::Generating(one.clone())),
            [] => {
                let old = if stale > 0 {
                    format!(" (the extension's last report of a generating chat is older than {} s)", GENERATING_FRESH_MS / 1000)
                } else {
                    String::new()
                };
                Err(format!(
                    "herdr_prompt needs browser_session_ref, the chat its result goes back to. Without it the companion attributes a call only on evidence, and it has none: no bound chat is generating a reply right now{old}. {}",
                    capitalised(WHERE_THE_REF_IS)
                ))
            }
            many => Err(format!(
                "herdr_prompt needs browser_session_ref, the chat its result goes back to: {} bound chats are generating a reply right now, so the companion cannot tell which one is calling. {}",
                many.len(),
                capitalised(WHERE_THE_REF_IS)
            )),
        },
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// The `mcp_session_chats` table of `state.db`: ChatGPT sessions paired with chats.
#[derive(Debug)]
pub struct PairStore {
    conn: Connection,
}

impl PairStore {
    /// Opens (creating if needed) the table in the database at `path`.
    pub fn open(path: &Path) -> Result<Self, DbError> {
        let conn = crate::schema::open_state_db(path)?;
        Ok(Self { conn })
    }

    /// The pairing of `session`, if any.
    pub fn get(&self, session: &str) -> Result<Option<Pairing>, DbError> {
        Ok(self
            .conn
            .query_row("SELECT browser_session_ref, subject FROM mcp_session_chats WHERE session = ?1", params![session], |row| {
                Ok(Pairing { session_ref: row.get(0)?, subject: row.get(1)? })
            })
            .optional()?)
    }

    /// Pairs `session` with `session_ref` unless it is paired already (a pairing is never
    /// replaced); returns the pairing in force.
    pub fn pair(&mut self, session: &str, session_ref: &str, subject: Option<&str>, now: i64) -> Result<Pairing, DbError> {
        self.conn.execute(
            "INSERT OR IGNORE INTO mcp_session_chats (session, browser_session_ref, subject, paired_at) VALUES (?1, ?2, ?3, ?4)",
            params![session, session_ref, subject, now],
        )?;
        Ok(self.get(session)?.unwrap_or(Pairing { session_ref: session_ref.to_owned(), subject: subject.map(str::to_owned) }))
    }
}

/// The attribution service: the extension's chat reports (memory) and the pairings
/// (`state.db`; `None` when its table could not be opened — then nothing is paired, and a
/// call with a ref still works).
#[derive(Debug)]
pub struct Attribution {
    reports: Mutex<BTreeMap<String, Report>>,
    pairs: Option<Arc<Mutex<PairStore>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Attribution {
    /// The service with its pairings in the database at `path` (`Err` says why they are not
    /// available; the service works without them).
    pub fn open(path: &Path) -> (Self, Option<DbError>) {
        match PairStore::open(path) {
            Ok(store) => (Self { reports: Mutex::default(), pairs: Some(Arc::new(Mutex::new(store))) }, None),
            Err(error) => (Self::without_pairs(), Some(error)),
        }
    }

    /// The service without a pairing store.
    pub fn without_pairs() -> Self {
        Self { reports: Mutex::default(), pairs: None }
    }

    /// Replaces `reporter`'s list (received at `now`, Unix ms).
    pub fn report(&self, reporter: &str, chats: Vec<ChatFact>, now: u64) {
        let mut reports = lock(&self.reports);
        reports.insert(reporter.to_owned(), Report { at: now, chats });
        while reports.len() > MAX_REPORTERS {
            let Some(oldest) = reports.iter().min_by_key(|(_, r)| r.at).map(|(k, _)| k.clone()) else { break };
            reports.remove(&oldest);
        }
    }

    /// The fresh generating chats at `now`, and the stale generating facts.
    pub fn generating(&self, now: u64) -> (Vec<String>, usize) {
        let reports: Vec<(u64, Vec<ChatFact>)> = lock(&self.reports).values().map(|r| (r.at, r.chats.clone())).collect();
        generating_now(&reports, now)
    }

    async fn with_pairs<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut PairStore) -> Result<T, DbError> + Send + 'static,
    ) -> Option<Result<T, DbError>> {
        let store = self.pairs.clone()?;
        Some(off_worker(move || work(&mut lock(&store))).await)
    }

    /// The pairing of `session`; `Err` when the store could not be read.
    pub async fn paired(&self, session: &str) -> Result<Option<Pairing>, DbError> {
        let session = session.to_owned();
        self.with_pairs(move |s| s.get(&session)).await.unwrap_or(Ok(None))
    }

    /// Pairs `session` with `session_ref` (kept if it is paired already).
    pub async fn pair(&self, session: &str, session_ref: &str, subject: Option<&str>) -> Result<(), DbError> {
        let (session, session_ref, subject) = (session.to_owned(), session_ref.to_owned(), subject.map(str::to_owned));
        let now = i64::try_from(unix_millis()).unwrap_or(i64::MAX);
        self.with_pairs(move |s| s.pair(&session, &session_ref, subject.as_deref(), now).map(|_| ())).await.unwrap_or(Ok(()))
    }

    /// Fills in `map`'s `browser_session_ref` for an MCP caller's `herdr_prompt`, or refuses
    /// (the error `refused`). Returns the attribution (`None`: the argument is malformed,
    /// left to the tool's own checks).
    pub async fn attribute(&self, meta: &ClientMeta, map: &mut Map<String, Value>) -> Result<Option<Attributed>, MethodError> {
        let given = match map.get("browser_session_ref") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(_) => return Ok(None),
        };
        let paired = match meta.openai_session.as_deref() {
            Some(session) => match self.paired(session).await {
                Ok(paired) => paired,
                // Without the store a named ref still goes; a ref-less call may still have
                // the generating evidence, but a pairing it may have is unknown: refuse.
                Err(error) if given.is_none() => {
                    return Err((
                        ErrorCode::NotReady,
                        format!("herdr_prompt: the pairing of this ChatGPT session could not be read ({error}); {WHERE_THE_REF_IS}"),
                    ))
                }
                Err(_) => None,
            },
            None => None,
        };
        let (generating, stale) = self.generating(unix_millis());
        let attributed = decide(given.as_deref(), meta, paired.as_ref(), &generating, stale).map_err(|why| (ErrorCode::Refused, why))?;
        if given.is_none() {
            map.insert("browser_session_ref".to_owned(), Value::from(attributed.session_ref()));
        }
        Ok(Some(attributed))
    }

    /// After a dispatch for an MCP caller succeeded: learns the pairing of its
    /// `openai/session` with the chat (a call that named its ref, or one attributed on
    /// evidence; a pairing already in force is kept).
    pub async fn learn(&self, meta: &ClientMeta, attributed: &Attributed) -> Result<(), DbError> {
        match (meta.openai_session.as_deref(), attributed) {
            (Some(session), Attributed::Given(r) | Attributed::Generating(r)) => {
                self.pair(session, r, meta.openai_subject.as_deref()).await
            }
            _ => Ok(()),
        }
    }
}

/// Serves `chats.report`.
pub fn handle(attribution: &Attribution, request: &Request) -> Result<Value, MethodError> {
    let params: ChatsReportParams = serde_json::from_value(Value::Object(request.params.clone())).map_err(|e| {
        (ErrorCode::BadRequest, format!("chats.report needs params {{reporter, chats: [{{browser_session_ref, generating}}]}} ({e})"))
    })?;
    let bad = |why: String| (ErrorCode::BadRequest, format!("chats.report: {why}"));
    if params.reporter.trim().is_empty() || params.reporter.chars().count() > MAX_REPORTER_CHARS {
        return Err(bad(format!("reporter must be 1..={MAX_REPORTER_CHARS} characters (the extension's instance id)")));
    }
    if params.chats.len() > MAX_REPORTED_CHATS {
        return Err(bad(format!("{} chats; at most {MAX_REPORTED_CHATS} are accepted", params.chats.len())));
    }
    for chat in &params.chats {
        let r = &chat.browser_session_ref;
        if r.is_empty() || r.chars().count() > MAX_REF_CHARS || r.chars().any(|c| c.is_whitespace() || c == ']') {
            return Err(bad(format!("browser_session_ref must be 1..={MAX_REF_CHARS} characters without whitespace or `]`")));
        }
    }
    let generating = params.chats.iter().filter(|c| c.generating).count() as u64;
    let chats = params.chats.len() as u64;
    attribution.report(&params.reporter, params.chats, unix_millis());
    serde_json::to_value(MethodResult::ChatsReported { chats, generating })
        .map_err(|e| (ErrorCode::NotReady, format!("the answer could not be written ({e})")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(session: Option<&str>, subject: Option<&str>) -> ClientMeta {
        ClientMeta { openai_session: session.map(str::to_owned), openai_subject: subject.map(str::to_owned) }
    }

    fn pairing(r: &str) -> Pairing {
        Pairing { session_ref: r.to_owned(), subject: Some("user-1".to_owned()) }
    }

    const A: &str = "chatgpt:conv:aaaa";
    const B: &str = "chatgpt:conv:bbbb";

    #[test]
    fn a_given_ref_is_used_and_a_ref_less_call_uses_its_sessions_pairing() {
        assert_eq!(decide(Some(A), &ClientMeta::default(), None, &[B.to_owned()], 0), Ok(Attributed::Given(A.to_owned())));
        assert_eq!(decide(Some(A), &meta(Some("s1"), None), Some(&pairing(A)), &[], 0), Ok(Attributed::Given(A.to_owned())));
        // The pairing wins over a generating chat (it is the stronger evidence).
        assert_eq!(
            decide(None, &meta(Some("s1"), Some("user-1")), Some(&pairing(A)), &[B.to_owned()], 0),
            Ok(Attributed::Paired(A.to_owned()))
        );
    }

    #[test]
    fn a_ref_that_conflicts_with_the_sessions_pairing_is_refused_never_switched() {
        let refused = decide(Some(B), &meta(Some("s1"), None), Some(&pairing(A)), &[], 0).expect_err("refused");
        assert!(refused.contains(&format!("paired with chat {A}, not {B}")), "{refused}");
        assert!(refused.contains(&format!("Send browser_session_ref {A}")), "{refused}");
        let other_user = decide(None, &meta(Some("s1"), Some("user-2")), Some(&pairing(A)), &[], 0).expect_err("refused");
        assert!(other_user.contains("another user"), "{other_user}");
    }

    #[test]
    fn a_ref_less_call_goes_to_the_one_generating_chat_and_is_refused_for_none_or_several() {
        assert_eq!(decide(None, &ClientMeta::default(), None, &[A.to_owned()], 0), Ok(Attributed::Generating(A.to_owned())));
        let none = decide(None, &ClientMeta::default(), None, &[], 0).expect_err("refused");
        assert!(none.contains("no bound chat is generating a reply right now"), "{none}");
        assert!(none.contains("last line of any message the herdr-continuity extension typed"), "{none}");
        assert!(none.contains("HUD"), "{none}");
        let two = decide(None, &ClientMeta::default(), None, &[A.to_owned(), B.to_owned()], 0).expect_err("refused");
        assert!(two.contains("2 bound chats are generating a reply right now"), "{two}");
        assert!(two.contains("value after ref="), "{two}");
    }

    #[test]
    fn a_generating_fact_older_than_the_freshness_bound_is_no_evidence() {
        let now = 1_000_000;
        let generating = |r: &str| ChatFact { browser_session_ref: r.to_owned(), generating: true };
        let idle = |r: &str| ChatFact { browser_session_ref: r.to_owned(), generating: false };
        let reports = vec![(now - GENERATING_FRESH_MS - 1, vec![generating(A)]), (now - 1_000, vec![idle(B)])];
        let (fresh, stale) = generating_now(&reports, now);
        assert!(fresh.is_empty());
        assert_eq!(stale, 1);
        let refused = decide(None, &ClientMeta::default(), None, &fresh, stale).expect_err("refused");
        assert!(refused.contains("older than 30 s"), "{refused}");
        // Fresh, the same fact is evidence; a chat two reporters name counts once.
        let reports = vec![(now - GENERATING_FRESH_MS, vec![generating(A)]), (now, vec![generating(A), idle(B)])];
        assert_eq!(generating_now(&reports, now), (vec![A.to_owned()], 0));
    }

    #[test]
    fn a_pairing_is_stored_once_and_never_replaced() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("state.db");
        let mut store = PairStore::open(&path).expect("the table opens");
        assert_eq!(store.get("s1").expect("read"), None);
        assert_eq!(store.pair("s1", A, Some("user-1"), 1).expect("pair"), pairing(A));
        assert_eq!(store.pair("s1", B, None, 2).expect("pair"), pairing(A), "the first pairing stays");
        drop(store);
        let store = PairStore::open(&path).expect("reopens");
        assert_eq!(store.get("s1").expect("read"), Some(pairing(A)), "it survives a restart");
    }

    #[test]
    fn reports_replace_their_reporters_list_and_the_oldest_reporter_goes_first() {
        let service = Attribution::without_pairs();
        let generating = |r: &str| vec![ChatFact { browser_session_ref: r.to_owned(), generating: true }];
        service.report("ext-1", generating(A), 100);
        service.report("ext-1", generating(B), 200);
        assert_eq!(service.generating(300), (vec![B.to_owned()], 0));
        for n in 0..MAX_REPORTERS {
            service.report(&format!("other-{n}"), Vec::new(), 300 + n as u64);
        }
        assert_eq!(service.generating(400), (Vec::<String>::new(), 0), "ext-1, the oldest, was dropped");
    }
}
