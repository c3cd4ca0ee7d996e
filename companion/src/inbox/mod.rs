//! The runtime's durable parent inbox (issue 4, SPEC I1–I5).
//!
//! - [`store`]: the `inbox_tasks` rows in `state.db` — the truth.
//! - [`transition`]: which stream events end a task, and how (pure).
//! - [`advisor`]: optional Parent guidance (I5).
//! - [`cli`]: `herdr-companion task …`, a socket client standing in for the MCP downlink.
//!
//! Flow: `task.dispatch` records a `running` row (with `after_seq` = the event log's last
//! seq) *before* sending Herdr `agent.prompt` without wait, and removes it again if Herdr
//! refuses. A follower task reads the event log (`state.db` `events`, written by
//! `crate::stream`) from its own durable cursor and ends running tasks on their pane's
//! settle / removal / release, adding a bounded `pane.read` tail. Every row change pushes
//! `inbox_changed {browser_session_ref, counts}` to all clients.
//!
//! Invariants:
//! - The inbox row is the truth; the Herdr settle is only the trigger (I2).
//! - A task leaves `running` at most once; replayed or duplicate settles (also across a
//!   runtime restart, when the stream re-produces a settle under a new boot) change
//!   nothing ([`store::InboxStore::finish`]).
//! - Recording before prompting means the follower cannot miss a settle caused by the
//!   prompt: that event is stored after the row exists.
//! - The terminal fact is pending at once; advice (I5) is attached later, if ever.
//! - Every store or event-log access from async code goes through [`Inbox::with_store`]
//!   (or its event-log twin), which runs it on the blocking pool (`crate::db::off_worker`).

pub mod advisor;
pub mod cli;
pub mod store;
pub mod transition;

use continuity_protocol::herdr::HerdrMethod;
use continuity_protocol::{EventName, TaskTrigger};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::task::JoinHandle;

use crate::clock::unix_millis;
use crate::db::{off_worker, DbCallLost, DbError};
use crate::herdr::HerdrStatus;
use crate::log::RuntimeLog;
use crate::outbox::Broadcast;
use advisor::{advise_within, AttentionAdvisor, FrozenView, MAX_CHILDREN};
use continuity_protocol::{Task, TaskResult};
use store::{Counts, InboxStore, StoreError};
use tokio::sync::watch;
use transition::{ending_for, Ending};

/// Longest pane tail kept in a result summary, in bytes.
pub const MAX_RESULT_TAIL: usize = 4 * 1024;
/// Longest string copied from the settle payload into a result summary.
const MAX_PAYLOAD_FIELD: usize = 256;
/// How often the follower looks for new stream events when idle.
const FOLLOW_POLL: Duration = Duration::from_millis(150);
/// Events read per follower batch.
const FOLLOW_BATCH: i64 = 200;
/// Timeout of the `pane.read` for a result tail.
const TAIL_READ_TIMEOUT: Duration = Duration::from_millis(1500);
/// Default bound on one advisor call (I5).
pub const DEFAULT_ADVICE_TIMEOUT: Duration = Duration::from_secs(3);
/// The runtime's bound on one advice ask: the longest pool deadline `config.json` allows
/// (14 s) and a second for reading it; the route advisor itself stops at the configured
/// pool deadline, this only backs it up.
pub const ROUTE_ADVICE_TIMEOUT: Duration = Duration::from_secs(15);

/// Sends one event to every connected client.
pub type Notify = Box<dyn Fn(Value) + Send + Sync>;

/// The parent inbox service: the store, the event-log reader and the optional advisor.
pub struct Inbox {
    /// The inbox rows, and its one connection to `state.db` (which also reads the event log).
    store: Mutex<InboxStore>,
    /// Parent guidance source; `None` = no advisor configured (guidance stays null).
    advisor: Option<Arc<dyn AttentionAdvisor>>,
    /// Bound on one advisor call.
    advice_timeout: Duration,
    /// Pushes `inbox_changed` to all clients.
    notify: Notify,
    /// Serializes event-log following (the follower task and `inbox.pending`'s catch-up),
    /// so one event is never applied by two readers at once.
    follow_gate: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Inbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbox").field("advisor", &self.advisor).field("advice_timeout", &self.advice_timeout).finish()
    }
}

/// Why the inbox could not open.
#[derive(Debug, thiserror::Error)]
pub enum InboxError {
    /// The inbox tables could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The event log could not be opened.
    #[error(transparent)]
    Events(#[from] DbError),
    /// The call on the blocking pool was lost.
    #[error(transparent)]
    CallLost(#[from] DbCallLost),
}

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// A fresh id: prefix, start-time nanos, pid and a counter, in hex.
pub fn new_id(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{prefix}-{nanos:x}-{:x}-{:x}", std::process::id(), NEXT_ID.fetch_add(1, Ordering::Relaxed))
}

/// The last `max_bytes` of `text` (on a char boundary) and whether it was cut.
pub fn tail_of(text: &str, max_bytes: usize) -> (&str, bool) {
    if text.len() <= max_bytes {
        return (text, false);
    }
    let mut start = text.len() - max_bytes;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    (&text[start..], true)
}

/// The bounded result summary of a terminal transition: the settle payload's fields
/// (each ≤ 256 bytes), the trigger and seq, and a pane tail ≤ [`MAX_RESULT_TAIL`] bytes.
pub fn result_summary(ending: &Ending, seq: i64, payload: &Value, tail: Option<&str>) -> TaskResult {
    let field = |key: &str| {
        payload.get(key).and_then(Value::as_str).map(|s| {
            let mut end = s.len().min(MAX_PAYLOAD_FIELD);
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s[..end].to_owned()
        })
    };
    let (tail, tail_truncated) = match tail {
        Some(text) => {
            let (t, cut) = tail_of(text.trim_end(), MAX_RESULT_TAIL);
            (Some(t.to_owned()), cut)
        }
        None => (None, false),
    };
    TaskResult {
        trigger: ending.trigger,
        // The event log's seq is never negative.
        seq: u64::try_from(seq).unwrap_or_default(),
        status: field("status"),
        previous_status: field("previous_status"),
        agent: field("agent"),
        workspace_label: field("workspace_label"),
        cwd: field("cwd"),
        tail,
        tail_truncated,
    }
}

/// A short summary of a task for the advisor's frozen view.
fn child_summary(task: &Task) -> Value {
    let tail = task.result.as_ref().and_then(|r| r.tail.as_deref()).map(|t| tail_of(t, 512).0.to_owned());
    json!({
        "task_id": task.task_id,
        "pane_id": task.pane_id,
        "state": task.state,
        "prompt_preview": task.prompt_preview,
        "trigger": task.result.as_ref().map(|r| r.trigger),
        "status": task.result.as_ref().and_then(|r| r.status.as_deref()),
        "tail": tail,
    })
}

impl Inbox {
    /// Opens the inbox in the `state.db` at `db_path` (blocking: call it on the blocking
    /// pool, see `crate::db`).
    pub fn open(
        db_path: &Path,
        advisor: Option<Arc<dyn AttentionAdvisor>>,
        advice_timeout: Duration,
        notify: Notify,
    ) -> Result<Arc<Self>, InboxError> {
        let mut store = InboxStore::open(db_path)?;
        if store.cursor()?.is_none() {
            // First start: earlier events predate every task. Set before any dispatch.
            let last = store.last_event_seq()?;
            store.advance_cursor(last)?;
        }
        Ok(Arc::new(Self { store: Mutex::new(store), advisor, advice_timeout, notify, follow_gate: tokio::sync::Mutex::new(()) }))
    }

    /// The store, locked (a poisoned lock is still usable: every write is one statement
    /// or one transaction). Blocking: only inside [`Inbox::with_store`] (and tests).
    fn lock_store(&self) -> MutexGuard<'_, InboxStore> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The store, locked, for synchronous tests.
    #[cfg(test)]
    pub(crate) fn store(&self) -> MutexGuard<'_, InboxStore> {
        self.lock_store()
    }

    /// Runs `work` on the store on the blocking pool (never on an async worker).
    pub async fn with_store<T: Send + 'static>(
        self: &Arc<Self>,
        work: impl FnOnce(&mut InboxStore) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let inbox = Arc::clone(self);
        off_worker(move || work(&mut inbox.lock_store())).await
    }

    /// Runs `work` reading the event log on the store's connection, on the blocking pool.
    async fn with_events<T: Send + 'static>(
        self: &Arc<Self>,
        work: impl FnOnce(&InboxStore) -> Result<T, DbError> + Send + 'static,
    ) -> Result<T, DbError> {
        let inbox = Arc::clone(self);
        off_worker(move || work(&inbox.lock_store())).await
    }

    /// The event log's last seq (0 when empty).
    pub async fn last_event_seq(self: &Arc<Self>) -> Result<i64, DbError> {
        self.with_events(InboxStore::last_event_seq).await
    }

    /// Pushes `inbox_changed {browser_session_ref, counts}` to all clients.
    pub async fn changed(self: &Arc<Self>, session_ref: &str) {
        let owned = session_ref.to_owned();
        let counts = self.with_store(move |store| store.counts(&owned)).await.unwrap_or_default();
        (self.notify)(changed_event(session_ref, counts));
    }

    /// Moves `task` to the terminal state of `ending`; returns `None` when it was already
    /// terminal (nothing written), else the handle of the advice request, if an advisor
    /// is configured. The item is pending before this returns, with `guidance: null`.
    pub async fn finish(
        self: &Arc<Self>,
        task: &Task,
        ending: &Ending,
        result: &TaskResult,
        now: i64,
    ) -> Result<Option<Option<JoinHandle<()>>>, StoreError> {
        let (task_id, state, result_row) = (task.task_id.clone(), ending.state, result.clone());
        if !self.with_store(move |store| store.finish(&task_id, state, now, &result_row)).await? {
            return Ok(None);
        }
        self.changed(&task.browser_session_ref).await;
        let advice = self.advisor.is_some().then(|| {
            let inbox = Arc::clone(self);
            let (session_ref, task_id) = (task.browser_session_ref.clone(), task.task_id.clone());
            tokio::spawn(async move { inbox.advise(&session_ref, &task_id).await })
        });
        Ok(Some(advice))
    }

    /// Freezes the scope's view, asks the advisor once and attaches its guidance (I5).
    async fn advise(self: &Arc<Self>, session_ref: &str, task_id: &str) {
        let (owned_ref, owned_task) = (session_ref.to_owned(), task_id.to_owned());
        let view = self
            .with_store(move |store| {
                // Acknowledged (or gone) before the freeze: its answer would be dropped, so
                // nothing is asked.
                let Some(own) = store.get(&owned_task)?.filter(|own| own.acked_at.is_none()) else {
                    return Ok(None);
                };
                // The task the advice is for is always one of the children, even when more
                // than MAX_CHILDREN older ones are pending: it then takes the last place.
                let mut children = store.pending(&owned_ref, MAX_CHILDREN).unwrap_or_default();
                if !children.iter().any(|c| c.task_id == owned_task) {
                    children.truncate(MAX_CHILDREN - 1);
                    children.push(own);
                }
                Ok(Some(FrozenView {
                    children: children.iter().map(child_summary).collect(),
                    running_siblings: store.running(&owned_ref, MAX_CHILDREN).unwrap_or_default().iter().map(child_summary).collect(),
                    browser_session_ref: owned_ref,
                    task_id: owned_task,
                }))
            })
            .await;
        let Ok(Some(view)) = view else { return };
        let Some(advice) = advise_within(self.advisor.as_deref(), &view, self.advice_timeout).await else {
            return;
        };
        let (owned_task, guidance) = (task_id.to_owned(), advice.guidance());
        if self.with_store(move |store| store.set_guidance(&owned_task, &guidance)).await.unwrap_or(false) {
            self.changed(session_ref).await;
        }
    }

    /// Reads the next batch of stream events after the cursor and ends the running tasks
    /// they concern; returns how many events were read.
    pub async fn follow_once(self: &Arc<Self>, herdr_socket: &Path) -> Result<usize, InboxError> {
        let _gate = self.follow_gate.lock().await;
        // `open` set the cursor; 0 only if the row vanished (then every event is re-read,
        // which is harmless: endings are idempotent).
        let cursor = self.with_store(|store| store.cursor()).await?.unwrap_or(0);
        let batch = self.with_events(move |events| events.events_after(cursor, FOLLOW_BATCH)).await?;
        for event in &batch {
            if let Some(ending) = ending_for(&event.event, &event.data) {
                let (pane_id, seq) = (ending.pane_id.clone(), event.seq);
                let tasks = self.with_store(move |store| store.running_on_pane(&pane_id, seq)).await?;
                if !tasks.is_empty() {
                    let tail = match ending.trigger {
                        TaskTrigger::AgentSettled => read_tail(herdr_socket, &ending.pane_id).await,
                        _ => None,
                    };
                    let result = result_summary(&ending, event.seq, &event.data, tail.as_deref());
                    for task in &tasks {
                        self.finish(task, &ending, &result, unix_millis() as i64).await?;
                    }
                }
            }
            let seq = event.seq;
            self.with_store(move |store| store.advance_cursor(seq)).await?;
        }
        Ok(batch.len())
    }
}

impl Inbox {
    /// Applies every event already in the log (I2): a client that saw a settle and then
    /// asks `inbox.pending` gets the task it ended, even when the follower has not polled
    /// yet. Stops at the seq that was last when called (new events are the follower's).
    pub async fn catch_up(self: &Arc<Self>, herdr_socket: &Path) -> Result<(), InboxError> {
        let target = self.last_event_seq().await?;
        while self.with_store(|store| store.cursor()).await?.unwrap_or(0) < target {
            if self.follow_once(herdr_socket).await? == 0 {
                break;
            }
        }
        Ok(())
    }
}

/// The `inbox_changed` event.
pub fn changed_event(session_ref: &str, counts: Counts) -> Value {
    json!({"event": EventName::InboxChanged, "data": {"browser_session_ref": session_ref, "counts": counts}})
}

/// The pane's recent text, or `None` when Herdr cannot read it (the summary then has no tail).
async fn read_tail(herdr_socket: &Path, pane_id: &str) -> Option<String> {
    // No `lines`: below the screen height Herdr counts blank rows (REFERENCE §1).
    let params = json!({"pane_id": pane_id, "source": "recent"});
    let result = crate::herdr::request(herdr_socket, HerdrMethod::PaneRead, params, TAIL_READ_TIMEOUT).await.ok()?;
    result.pointer("/read/text").and_then(Value::as_str).map(str::to_owned)
}

/// Follows the event log forever (spawn it).
async fn follow(inbox: Arc<Inbox>, herdr: watch::Receiver<HerdrStatus>, log: Arc<RuntimeLog>) {
    loop {
        let socket = std::path::PathBuf::from(herdr.borrow().socket.clone());
        match inbox.follow_once(&socket).await {
            Ok(0) => tokio::time::sleep(FOLLOW_POLL).await,
            Ok(_) => {}
            Err(e) => {
                log.line(format_args!("parent inbox: {e}"));
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Opens the inbox in `db_path` (`state.db`) and spawns the follower, which reads Herdr
/// (for result tails) at the socket `herdr` names; every change is announced on
/// `broadcast`. `advisor` gives Parent guidance (I5; the runtime passes the judge's
/// routes), each ask bounded by [`ROUTE_ADVICE_TIMEOUT`]; without one items carry
/// `guidance: null`. A failure is logged and gives `None`; the inbox methods then answer
/// `not_ready`.
pub async fn start(
    db_path: PathBuf,
    herdr: watch::Receiver<HerdrStatus>,
    broadcast: Broadcast,
    log: Arc<RuntimeLog>,
    advisor: Option<Arc<dyn AttentionAdvisor>>,
) -> Option<Arc<Inbox>> {
    let notify: Notify = Box::new(move |event| broadcast.send(&event));
    match off_worker(move || Inbox::open(&db_path, advisor, ROUTE_ADVICE_TIMEOUT, notify)).await {
        Ok(inbox) => {
            tokio::spawn(follow(Arc::clone(&inbox), herdr, log));
            Some(inbox)
        }
        Err(e) => {
            log.line(format_args!("parent inbox disabled: {e}"));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::advisor::{Advice, AdviceFuture, AdvisorError, GuidanceKind};
    use super::store::NewTask;
    use super::transition::TaskState;
    use super::*;
    use crate::db::StateDb;
    use continuity_protocol::Guidance;

    /// The only fake allowed here: an advisor that answers after `delay`, or fails.
    #[derive(Debug)]
    struct ScriptedAdvisor {
        delay: Duration,
        fails: bool,
        seen: Mutex<Vec<FrozenView>>,
    }

    impl AttentionAdvisor for ScriptedAdvisor {
        fn advise<'a>(&'a self, view: &'a FrozenView) -> AdviceFuture<'a> {
            Box::pin(async move {
                self.seen.lock().unwrap_or_else(|p| p.into_inner()).push(view.clone());
                tokio::time::sleep(self.delay).await;
                if self.fails {
                    return Err(AdvisorError::Failed("model unavailable".to_owned()));
                }
                Ok(Advice { kind: GuidanceKind::VerifyCompletion, note: Some("check the tests ran".to_owned()) })
            })
        }
    }

    struct Setup {
        _dir: tempfile::TempDir,
        inbox: Arc<Inbox>,
        events: Arc<Mutex<Vec<Value>>>,
    }

    fn setup(advisor: Option<Arc<ScriptedAdvisor>>) -> Setup {
        let dir = tempfile::tempdir().expect("tempdir");
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&events);
        let notify: Notify = Box::new(move |e| sink.lock().unwrap_or_else(|p| p.into_inner()).push(e));
        let advisor = advisor.map(|a| a as Arc<dyn AttentionAdvisor>);
        let inbox = Inbox::open(&dir.path().join("state.db"), advisor, Duration::from_millis(100), notify).expect("open");
        for (id, pane) in [("t1", "w1:p1"), ("t2", "w1:p2")] {
            inbox
                .store()
                .insert_running(&NewTask {
                    task_id: id.to_owned(),
                    dispatch_id: format!("d-{id}"),
                    turn_id: Some("turn-1".to_owned()),
                    browser_session_ref: "chat-a".to_owned(),
                    workspace_id: "w1".to_owned(),
                    pane_id: pane.to_owned(),
                    prompt_preview: "run the tests".to_owned(),
                    after_seq: 0,
                    created_at: 1,
                })
                .expect("insert");
        }
        Setup { _dir: dir, inbox, events }
    }

    async fn settle_t1(setup: &Setup) -> Option<Option<JoinHandle<()>>> {
        let task = setup.inbox.store().get("t1").expect("get").expect("t1");
        let ending = Ending { pane_id: "w1:p1".to_owned(), state: TaskState::Completed, trigger: TaskTrigger::AgentSettled };
        let result = result_summary(&ending, 3, &json!({"status": "idle", "previous_status": "working"}), Some("all green\n"));
        setup.inbox.finish(&task, &ending, &result, 50).await.expect("finish")
    }

    fn guidance_of_pending(inbox: &Inbox) -> Vec<Option<Guidance>> {
        inbox.store().pending("chat-a", 10).expect("pending").into_iter().map(|t| t.guidance).collect()
    }

    #[tokio::test]
    async fn inbox_pending_catch_up_applies_a_settle_already_in_the_log_i2() {
        // A client that received `agent_settled` and asks at once must not get an empty
        // inbox just because the follower has not polled yet (the wake would carry no task
        // and the task would never be acknowledged, I4).
        let setup = setup(None);
        let db_path = setup._dir.path().join("state.db");
        StateDb::open(&db_path)
            .expect("log")
            .append(
                "boot-1",
                10,
                "agent_settled",
                &json!({"pane_id": "w1:p1", "workspace_id": "w1", "status": "idle", "previous_status": "working"}),
            )
            .expect("append");
        assert!(setup.inbox.store().pending("chat-a", 10).expect("pending").is_empty(), "not applied before the catch-up");
        let no_herdr = setup._dir.path().join("no-herdr.sock");
        setup.inbox.catch_up(&no_herdr).await.expect("catch up");
        let pending: Vec<String> = setup.inbox.store().pending("chat-a", 10).expect("pending").into_iter().map(|t| t.task_id).collect();
        assert_eq!(pending, vec!["t1".to_owned()]);
        setup.inbox.catch_up(&no_herdr).await.expect("a second catch-up is a no-op");
        assert_eq!(setup.inbox.store().pending("chat-a", 10).expect("pending").len(), 1);
    }

    #[tokio::test]
    async fn without_an_advisor_items_carry_null_guidance_i5() {
        let setup = setup(None);
        let advice = settle_t1(&setup).await.expect("first finish writes");
        assert!(advice.is_none(), "no advisor configured: nothing to wait for");
        assert_eq!(guidance_of_pending(&setup.inbox), [None]);
        assert!(settle_t1(&setup).await.is_none(), "a duplicate settle writes nothing (I2)");
        let events = setup.events.lock().unwrap_or_else(|p| p.into_inner()).clone();
        assert_eq!(
            events,
            [json!({"event": EventName::InboxChanged, "data": {"browser_session_ref": "chat-a",
            "counts": {"running": 1, "unacked": 1, "acked": 0}}})]
        );
    }

    #[tokio::test]
    async fn a_succeeding_advisor_attaches_guidance_after_the_fact_is_already_pending_i5() {
        let advisor = Arc::new(ScriptedAdvisor { delay: Duration::from_millis(20), fails: false, seen: Mutex::default() });
        let setup = setup(Some(Arc::clone(&advisor)));
        let handle = settle_t1(&setup).await.expect("written").expect("advisor asked");
        assert_eq!(guidance_of_pending(&setup.inbox), [None], "the terminal fact never waits for advice");
        handle.await.expect("advice task");
        assert_eq!(
            guidance_of_pending(&setup.inbox),
            [Some(Guidance { kind: GuidanceKind::VerifyCompletion, note: Some("check the tests ran".to_owned()) })]
        );
        let seen = advisor.seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
        assert_eq!(seen.len(), 1, "asked once");
        assert_eq!((seen[0].children.len(), seen[0].running_siblings.len()), (1, 1), "frozen view: t1 done, t2 running");
        assert_eq!(seen[0].children[0]["tail"], "all green");
        assert_eq!(setup.events.lock().unwrap_or_else(|p| p.into_inner()).len(), 2, "terminal + guidance changes");
    }

    #[tokio::test]
    async fn a_slow_or_failing_advisor_gives_the_same_result_as_none_i5() {
        for (delay, fails) in [(Duration::from_secs(30), false), (Duration::ZERO, true)] {
            let advisor = Arc::new(ScriptedAdvisor { delay, fails, seen: Mutex::default() });
            let setup = setup(Some(advisor));
            let started = std::time::Instant::now();
            let handle = settle_t1(&setup).await.expect("written").expect("advisor asked");
            handle.await.expect("advice task");
            assert!(started.elapsed() < Duration::from_secs(5), "bounded by the advice timeout");
            assert_eq!(guidance_of_pending(&setup.inbox), [None]);
            assert_eq!(setup.events.lock().unwrap_or_else(|p| p.into_inner()).len(), 1, "only the terminal change");
        }
    }

    #[tokio::test]
    async fn a_task_acknowledged_before_its_view_is_frozen_is_not_asked_about_i5() {
        // The ask is spawned at the fact; the chat acknowledges the task before the advice
        // task runs (one runtime thread: it runs at the first await after this). Asking
        // would be a wasted call whose answer set_guidance drops.
        let advisor = Arc::new(ScriptedAdvisor { delay: Duration::ZERO, fails: false, seen: Mutex::default() });
        let setup = setup(Some(Arc::clone(&advisor)));
        let handle = settle_t1(&setup).await.expect("written").expect("advisor asked");
        setup.inbox.store().ack("chat-a", &["t1".to_owned()], 60).expect("ack");
        handle.await.expect("advice task");
        assert!(advisor.seen.lock().unwrap_or_else(|p| p.into_inner()).is_empty(), "no ask for an acknowledged task");
        assert_eq!(setup.events.lock().unwrap_or_else(|p| p.into_inner()).len(), 1, "only the terminal change");
    }

    #[test]
    fn result_summaries_are_bounded() {
        let ending = Ending { pane_id: "w1:p1".to_owned(), state: TaskState::Completed, trigger: TaskTrigger::AgentSettled };
        let long = format!("{}é{}", "x".repeat(10_000), "y".repeat(4_095));
        let summary = result_summary(&ending, 9, &json!({"status": "idle", "cwd": "c".repeat(1000)}), Some(&long));
        let tail = summary.tail.as_deref().expect("tail");
        assert!(tail.len() <= MAX_RESULT_TAIL && tail.ends_with('y'), "{}", tail.len());
        assert!(summary.tail_truncated);
        assert_eq!(summary.cwd.as_deref().map(str::len), Some(256));
        assert!(json!(summary).to_string().len() < 5 * 1024);
    }
}
