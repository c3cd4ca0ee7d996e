//! `herdr_exec_start` / `herdr_exec_read` / `herdr_exec_kill`: long-running commands
//! (builds, servers, watchers) in their own process group, their output in ring buffers.
//!
//! Invariants:
//! - Each session's stdout and stderr keep their last [`RING_BYTES`] bytes; offsets are
//!   absolute (bytes since the start), so a reader asking for an offset that was dropped
//!   is told how much it missed (`dropped_bytes`) and gets what is kept.
//! - Every session is a row of `exec_sessions` in `state.db` from its start, with its
//!   process group id and its leader's start identity once it runs; a runtime that starts
//!   again kills what is left of the groups an earlier start left running (only a group
//!   proven to be the session's, `super::procs`) and marks those rows `interrupted` (their
//!   output was in the stopped runtime's memory), and `herdr_exec_read` answers them so.
//!   On Linux a session's leader also dies with the runtime (`PR_SET_PDEATHSIG`).
//! - A session belongs to its caller (`owner`: `mcp` or `bridge:<ref>`): another caller
//!   reading or killing it is told there is no such session.
//! - At most [`MAX_RUNNING_SESSIONS`] run at once, also when starts come at the same moment
//!   (a start holds its place from the check until its session runs or fails); kill sends
//!   SIGTERM to the group, then SIGKILL after [`KILL_GRACE`].
//! - Memory is bounded: only the newest [`MAX_FINISHED_KEPT`] finished sessions keep their
//!   output; an older one answers from its row. Finished rows past the newest 500 go.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{params, OptionalExtension};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::exec::{command, kill_group};
use crate::db::{off_worker, DbError, SharedConnection};

/// Bytes kept per stream of a session.
pub const RING_BYTES: usize = 256 * 1024;
/// Most sessions running at once.
pub const MAX_RUNNING_SESSIONS: usize = 8;
/// Most finished sessions whose output stays in memory (the newest); an older one answers
/// from its row in `state.db`.
pub const MAX_FINISHED_KEPT: usize = 32;
/// Most rows `exec_sessions` keeps (the newest; running ones whatever their age).
pub const MAX_SESSION_ROWS: i64 = 500;
/// Deletes the finished rows past the newest `?1` (a running session's row stays: a later
/// start kills its group by it; at start, earlier starts' rows are `interrupted` first).
const KEEP_NEWEST_ROWS: &str =
    "DELETE FROM exec_sessions WHERE state != 'running' AND id NOT IN (SELECT id FROM exec_sessions ORDER BY started_at DESC LIMIT ?1)";
/// Most bytes one `herdr_exec_read` returns.
pub const MAX_READ_BYTES: usize = 64 * 1024;
/// Time between SIGTERM and SIGKILL on kill.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

#[derive(Debug, Default)]
struct Ring {
    buf: VecDeque<u8>,
    /// The absolute offset of `buf[0]`.
    start: u64,
}

impl Ring {
    fn push(&mut self, bytes: &[u8]) {
        self.buf.extend(bytes);
        while self.buf.len() > RING_BYTES {
            self.buf.pop_front();
            self.start += 1;
        }
    }

    /// (data from `offset`, at most `limit` bytes; bytes dropped before it; next offset).
    fn read(&self, offset: u64, limit: usize) -> (Vec<u8>, u64, u64) {
        let from = offset.max(self.start);
        let dropped = from - offset;
        let skip = usize::try_from(from - self.start).unwrap_or(usize::MAX).min(self.buf.len());
        let data: Vec<u8> = self.buf.iter().skip(skip).take(limit).copied().collect();
        let next = from + data.len() as u64;
        (data, dropped, next)
    }
}

#[derive(Debug)]
struct Live {
    owner: String,
    stdout: Mutex<Ring>,
    stderr: Mutex<Ring>,
    pgid: u32,
    /// `None` while it runs; then (state, exit code).
    end: Mutex<Option<(&'static str, Option<i32>)>>,
    killed: std::sync::atomic::AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The exec sessions of this runtime, and the table that outlives it.
#[derive(Debug)]
pub struct ExecSessions {
    conn: SharedConnection,
    boot_id: String,
    live: Mutex<HashMap<String, Arc<Live>>>,
    /// The ids of the finished sessions still in `live`, oldest first.
    finished: Mutex<VecDeque<String>>,
    /// Starts that passed the cap and are not in `live` yet (their row is being stored,
    /// their process spawned). Locked before `live` wherever both are.
    starting: Mutex<usize>,
}

/// A start's place under the cap until its session is in `live`; dropped before that (the
/// start failed, or its task ended), it frees the place.
struct Slot {
    sessions: Arc<ExecSessions>,
    filled: bool,
}

impl Slot {
    /// The session runs: it goes into `live` (counted there from now) and the place is
    /// given back, under one lock, so it is never counted twice nor not at all.
    fn fill(mut self, id: String, live: Arc<Live>) {
        let mut starting = lock(&self.sessions.starting);
        lock(&self.sessions.live).insert(id, live);
        *starting -= 1;
        self.filled = true;
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if !self.filled {
            *lock(&self.sessions.starting) -= 1;
        }
    }
}

/// Why a session call failed (`bad_request`-like refusals, and not found).
#[derive(Debug)]
pub enum SessionError {
    /// Not allowed now (too many running).
    Refused(String),
    /// No such session.
    NotFound(String),
    /// The store failed.
    Store(DbError),
}

impl From<DbError> for SessionError {
    fn from(e: DbError) -> Self {
        SessionError::Store(e)
    }
}

async fn pump(mut reader: impl AsyncRead + Unpin, live: Arc<Live>, stderr: bool) {
    let mut buf = vec![0u8; 8192];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => lock(if stderr { &live.stderr } else { &live.stdout }).push(&buf[..n]),
        }
    }
}

impl ExecSessions {
    /// Opens `state.db` at `path` on a connection of its own (tests; the runtime shares
    /// the write tools' connection, see [`ExecSessions::on`]).
    pub fn open(path: &Path, boot_id: &str) -> Result<Self, DbError> {
        Self::on(crate::db::open_shared(path)?, boot_id)
    }

    /// The sessions on `conn`, a connection to `state.db` at the current schema, for the
    /// runtime start `boot_id`; rows an earlier runtime left running become `interrupted`.
    /// Blocking (call it on the blocking pool, see `crate::db`).
    pub fn on(shared: SharedConnection, boot_id: &str) -> Result<Self, DbError> {
        let conn = lock(&shared);
        // What an earlier start left running (it was SIGKILLed, or its Drop did not run):
        // its process groups go before its rows read `interrupted`.
        let left: Vec<(String, Option<i64>, Option<String>)> = conn
            .prepare("SELECT id, pgid, start_identity FROM exec_sessions WHERE state = 'running' AND boot_id != ?1")?
            .query_map(params![boot_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        for (id, pgid, identity) in left {
            if let Some(pgid) = pgid.and_then(|p| u32::try_from(p).ok()) {
                super::procs::kill_recorded_group(pgid, identity.as_deref(), &id);
            }
        }
        conn.execute("UPDATE exec_sessions SET state = 'interrupted' WHERE state = 'running' AND boot_id != ?1", params![boot_id])?;
        conn.execute(KEEP_NEWEST_ROWS, params![MAX_SESSION_ROWS])?;
        drop(conn);
        Ok(Self {
            conn: shared,
            boot_id: boot_id.to_owned(),
            live: Mutex::new(HashMap::new()),
            finished: Mutex::default(),
            starting: Mutex::new(0),
        })
    }

    fn running(&self) -> usize {
        lock(&self.live).values().filter(|l| lock(&l.end).is_none()).count()
    }

    /// A place under the cap for one start, or `None` when [`MAX_RUNNING_SESSIONS`] run or
    /// are starting. The check and the count are one step: starts made at once cannot all
    /// pass it (the session only counts as running once it is in `live`, after awaits).
    fn reserve(self: &Arc<Self>) -> Option<Slot> {
        let mut starting = lock(&self.starting);
        if self.running() + *starting >= MAX_RUNNING_SESSIONS {
            return None;
        }
        *starting += 1;
        Some(Slot { sessions: self.clone(), filled: false })
    }

    /// Starts `argv` in `cwd` for `owner`; its session id.
    pub async fn start(self: &Arc<Self>, owner: &str, argv: &[String], cwd: &Path, now: i64) -> Result<Value, SessionError> {
        let Some(slot) = self.reserve() else {
            return Err(SessionError::Refused(format!(
                "herdr_exec_start: {MAX_RUNNING_SESSIONS} sessions run already; herdr_exec_kill one that is no longer needed"
            )));
        };
        let id = format!("xs-{}", &crate::db::random_hex_128().map_err(|e| SessionError::Store(DbError::Random(e)))?[..16]);
        let (owner, argv, cwd) = (owner.to_owned(), argv.to_vec(), cwd.to_path_buf());
        // Everything from the row to the end of the process runs in its own task: a caller
        // that goes away (the request future dropped) cannot leave a started group without
        // its waiter, nor a live entry that never ends (it would hold a slot until restart).
        let (answer, reply) = tokio::sync::oneshot::channel();
        tokio::spawn(Self::run(slot, id, owner, argv, cwd, now, answer));
        reply.await.unwrap_or_else(|_| {
            Err(SessionError::Refused("herdr_exec_start: the session task ended before it answered; start it again".to_owned()))
        })
    }

    /// [`Self::start`]'s task: the row, the spawn, the recorded group, then the wait. The
    /// first answer goes to `answer`; the task runs on whether or not anyone hears it.
    /// `slot` holds the session's place under the cap until it is in `live` (and the
    /// sessions it belongs to).
    async fn run(
        slot: Slot,
        id: String,
        owner: String,
        argv: Vec<String>,
        cwd: PathBuf,
        now: i64,
        answer: tokio::sync::oneshot::Sender<Result<Value, SessionError>>,
    ) {
        let this = slot.sessions.clone();
        let shown_command = serde_json::to_string(&argv).unwrap_or_default();
        let cwd_text = cwd.display().to_string();
        {
            let (conn, row) =
                (this.conn.clone(), (id.clone(), this.boot_id.clone(), cwd_text.clone(), shown_command.clone(), owner.clone()));
            let inserted = off_worker(move || -> Result<(), DbError> {
                lock(&conn).execute(
                    "INSERT INTO exec_sessions (id, owner, boot_id, cwd, command, started_at, state) VALUES (?1, ?6, ?2, ?3, ?4, ?5, 'running')",
                    params![row.0, row.1, row.2, row.3, now, row.4],
                )?;
                Ok(())
            })
            .await;
            if let Err(e) = inserted {
                drop(slot);
                let _ = answer.send(Err(SessionError::Store(e)));
                return;
            }
        }
        let mut child = match command(&argv, &cwd).env(super::procs::SESSION_ENV, &id).spawn() {
            Ok(child) => child,
            Err(e) => {
                let _ = this.finish(&id, "failed", None).await;
                drop(slot);
                let _ = answer.send(Err(SessionError::Refused(format!(
                    "herdr_exec_start: {} could not be started ({e}); check the program name (no shell runs unless you send [\"sh\",\"-c\",\"…\"])",
                    argv[0]
                ))));
                return;
            }
        };
        let live = Arc::new(Live {
            owner: owner.clone(),
            stdout: Mutex::new(Ring::default()),
            stderr: Mutex::new(Ring::default()),
            pgid: child.id().unwrap_or(0),
            end: Mutex::new(None),
            killed: std::sync::atomic::AtomicBool::new(false),
        });
        slot.fill(id.clone(), live.clone());
        {
            let (conn, row, pgid) = (this.conn.clone(), id.clone(), live.pgid);
            let identity = super::procs::start_identity(pgid);
            // Unrecorded, a crash would leave the group to its death signal alone: the
            // session is not started then (the group is killed, its entry and row end).
            let recorded = off_worker(move || -> Result<(), DbError> {
                lock(&conn)
                    .execute("UPDATE exec_sessions SET pgid = ?2, start_identity = ?3 WHERE id = ?1", params![row, pgid, identity])?;
                Ok(())
            })
            .await;
            if let Err(e) = recorded {
                live.killed.store(true, std::sync::atomic::Ordering::SeqCst);
                kill_group(live.pgid, libc::SIGKILL);
                let _ = child.wait().await;
                *lock(&live.end) = Some(("failed", None));
                lock(&this.live).remove(&id);
                let _ = this.finish(&id, "failed", None).await;
                let _ = answer.send(Err(SessionError::Store(e)));
                return;
            }
        }
        let _ = answer.send(Ok(json!({"session_id": id, "state": "running", "cwd": cwd_text, "command": argv})));
        let pumps = (
            child.stdout.take().map(|s| tokio::spawn(pump(s, live.clone(), false))),
            child.stderr.take().map(|s| tokio::spawn(pump(s, live.clone(), true))),
        );
        let status = child.wait().await.ok();
        for p in [pumps.0, pumps.1].into_iter().flatten() {
            let _ = tokio::time::timeout(Duration::from_secs(2), p).await;
        }
        let code = status.and_then(|s| s.code());
        let state = if live.killed.load(std::sync::atomic::Ordering::SeqCst) { "killed" } else { "exited" };
        *lock(&live.end) = Some((state, code));
        let _ = this.finish(&id, state, code).await;
        this.keep_finished(id);
    }

    /// Keeps the output of the newest [`MAX_FINISHED_KEPT`] finished sessions, `id` the
    /// newest; older ones leave memory (their rows answer for them).
    fn keep_finished(&self, id: String) {
        let mut finished = lock(&self.finished);
        finished.push_back(id);
        while finished.len() > MAX_FINISHED_KEPT {
            if let Some(oldest) = finished.pop_front() {
                lock(&self.live).remove(&oldest);
            }
        }
    }

    /// Records a session's end, and keeps the newest [`MAX_SESSION_ROWS`] rows (a running
    /// session's row stays whatever its age: the next start kills its group by it).
    async fn finish(&self, id: &str, state: &'static str, code: Option<i32>) -> Result<(), DbError> {
        let (conn, id) = (self.conn.clone(), id.to_owned());
        let now = crate::clock::unix_millis();
        off_worker(move || -> Result<(), DbError> {
            let conn = lock(&conn);
            conn.execute(
                "UPDATE exec_sessions SET state = ?2, exit_code = ?3, ended_at = ?4 WHERE id = ?1",
                params![id, state, code, now],
            )?;
            conn.execute(KEEP_NEWEST_ROWS, params![MAX_SESSION_ROWS])?;
            Ok(())
        })
        .await
    }

    /// `owner`'s session `id` as stored: (state, exit code, command, of this runtime start).
    async fn stored(&self, owner: &str, id: &str) -> Result<Option<(String, Option<i32>, String, bool)>, DbError> {
        let (conn, id, owner, boot_id) = (self.conn.clone(), id.to_owned(), owner.to_owned(), self.boot_id.clone());
        off_worker(move || -> Result<_, DbError> {
            Ok(lock(&conn)
                .query_row(
                    "SELECT state, exit_code, command, boot_id = ?3 FROM exec_sessions WHERE id = ?1 AND owner = ?2",
                    params![id, owner, boot_id],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )
                .optional()?)
        })
        .await
    }

    fn not_found(id: &str) -> SessionError {
        SessionError::NotFound(format!("no exec session {id}; herdr_exec_start returns the session_id"))
    }

    /// Reads `stream` (`stdout` | `stderr`) of `owner`'s session `id` from `offset`.
    pub async fn read(&self, owner: &str, id: &str, stderr: bool, offset: u64, limit: usize) -> Result<Value, SessionError> {
        let live = lock(&self.live).get(id).filter(|l| l.owner == owner).cloned();
        let Some(live) = live else {
            return match self.stored(owner, id).await? {
                Some((state, code, command, this_start)) => Ok(json!({
                    "session_id": id, "state": state, "exit_code": code, "command": command, "data": "", "next_offset": offset, "dropped_bytes": 0,
                    "note": if state == "interrupted" {
                        "The runtime stopped while this session ran; its processes were stopped and its output is gone. Start it again if it is still needed.".to_owned()
                    } else if this_start {
                        format!("Its output is no longer kept: the runtime keeps the output of the last {MAX_FINISHED_KEPT} finished sessions. Start it again if it is still needed.")
                    } else {
                        "This session belongs to an earlier runtime start; its output is gone.".to_owned()
                    },
                })),
                None => Err(Self::not_found(id)),
            };
        };
        let (data, dropped, next) = lock(if stderr { &live.stderr } else { &live.stdout }).read(offset, limit.min(MAX_READ_BYTES));
        let end = *lock(&live.end);
        Ok(json!({
            "session_id": id,
            "state": end.map_or("running", |e| e.0),
            "exit_code": end.and_then(|e| e.1),
            "stream": if stderr { "stderr" } else { "stdout" },
            "data": String::from_utf8_lossy(&data),
            "next_offset": next,
            "dropped_bytes": dropped,
        }))
    }

    /// Kills `owner`'s session's process group (SIGTERM, then SIGKILL after [`KILL_GRACE`]).
    pub async fn kill(&self, owner: &str, id: &str) -> Result<Value, SessionError> {
        let live = lock(&self.live).get(id).filter(|l| l.owner == owner).cloned();
        let Some(live) = live else {
            return match self.stored(owner, id).await? {
                Some((state, code, _, _)) => Ok(
                    json!({"session_id": id, "state": state, "exit_code": code, "note": "It was not running in this runtime; nothing was killed."}),
                ),
                None => Err(Self::not_found(id)),
            };
        };
        if lock(&live.end).is_none() {
            live.killed.store(true, std::sync::atomic::Ordering::SeqCst);
            kill_group(live.pgid, libc::SIGTERM);
            let deadline = tokio::time::Instant::now() + KILL_GRACE;
            while lock(&live.end).is_none() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            if lock(&live.end).is_none() {
                kill_group(live.pgid, libc::SIGKILL);
                while lock(&live.end).is_none() && tokio::time::Instant::now() < deadline + KILL_GRACE {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
        let end = *lock(&live.end);
        Ok(json!({"session_id": id, "state": end.map_or("running", |e| e.0), "exit_code": end.and_then(|e| e.1)}))
    }
}

impl Drop for ExecSessions {
    /// A runtime that stops takes its running sessions' process groups with it (their rows
    /// read `interrupted` at the next start).
    fn drop(&mut self) {
        for live in lock(&self.live).values() {
            if lock(&live.end).is_none() {
                kill_group(live.pgid, libc::SIGKILL);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_newest_bytes_and_says_what_was_dropped() {
        let mut ring = Ring::default();
        ring.push(&vec![b'a'; RING_BYTES]);
        ring.push(b"bc");
        let (data, dropped, next) = ring.read(0, 4);
        assert_eq!((data.len(), dropped, next), (4, 2, 6));
        let (data, _, next) = ring.read(RING_BYTES as u64, 10);
        assert_eq!((data, next), (b"bc".to_vec(), RING_BYTES as u64 + 2));
    }

    /// A request dropped after the child started (between the spawn and the recorded
    /// group, where the old code awaited) must not leave a live entry that never ends: the
    /// session still runs to its end and frees its slot.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_start_dropped_after_the_spawn_still_ends_and_frees_its_slot() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sessions = Arc::new(ExecSessions::open(&dir.path().join("state.db"), "boot1").expect("open"));
        let argv: Vec<String> = ["sh", "-c", "exit 3"].iter().map(|s| (*s).to_owned()).collect();
        let mut start = Box::pin(sessions.start("mcp", &argv, dir.path(), 1));
        // Once the row is stored, the test holds the connection: recording the group then
        // waits, so the request is dropped after the spawn and before the record, every run.
        let mut held = None;
        loop {
            if held.is_none() {
                let conn = lock(&sessions.conn);
                let stored: i64 = conn.query_row("SELECT COUNT(*) FROM exec_sessions", [], |r| r.get(0)).expect("count");
                if stored > 0 {
                    held = Some(conn);
                }
            }
            let done = std::future::poll_fn(|cx| std::task::Poll::Ready(std::future::Future::poll(start.as_mut(), cx).is_ready())).await;
            assert!(!done, "the start answered before its group was recorded");
            if !lock(&sessions.live).is_empty() {
                break;
            }
            tokio::task::yield_now().await;
        }
        drop(start);
        drop(held);
        // Wait for the session's end (a condition, bounded so a leak fails the test).
        for _ in 0..500 {
            if !lock(&sessions.live).is_empty() && sessions.running() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(sessions.running(), 0, "a dropped start left a session that never ends");
        let ended: Vec<_> = lock(&sessions.live).values().map(|l| *lock(&l.end)).collect();
        assert_eq!(ended, [Some(("exited", Some(3)))]);
    }

    /// Review of stop 40: a finished session's output (two rings of up to 256 KiB) stayed
    /// in memory until the runtime stopped, so a planner that ran builds all day grew the
    /// runtime without bound. Now only the newest [`MAX_FINISHED_KEPT`] finished sessions
    /// keep their output; an older one reads from its row, saying its output is gone.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn only_the_newest_finished_sessions_keep_their_output_in_memory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sessions = Arc::new(ExecSessions::open(&dir.path().join("state.db"), "boot1").expect("open"));
        let argv: Vec<String> = ["sh", "-c", "echo done"].iter().map(|s| (*s).to_owned()).collect();
        let mut ids = Vec::new();
        for n in 0..MAX_FINISHED_KEPT + 5 {
            let started = sessions.start("mcp", &argv, dir.path(), i64::try_from(n).unwrap_or(0)).await.expect("start");
            ids.push(started["session_id"].as_str().expect("id").to_owned());
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            while sessions.read("mcp", ids.last().expect("id"), false, 0, 10).await.expect("read")["state"] == "running" {
                assert!(tokio::time::Instant::now() < deadline, "a session that echoes never ended");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        // The last session's read says `exited` as soon as its end is known; it leaves the
        // older ones' memory a moment later (after its row is written).
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while lock(&sessions.live).len() > MAX_FINISHED_KEPT && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(lock(&sessions.live).len(), MAX_FINISHED_KEPT, "finished sessions kept in memory");
        let newest = sessions.read("mcp", ids.last().expect("id"), false, 0, 100).await.expect("read");
        assert_eq!((newest["state"].clone(), newest["data"].clone()), (json!("exited"), json!("done\n")));
        let oldest = sessions.read("mcp", &ids[0], false, 0, 100).await.expect("read");
        assert_eq!((oldest["state"].clone(), oldest["exit_code"].clone(), oldest["data"].clone()), (json!("exited"), json!(0), json!("")));
        expect_test::expect!["Its output is no longer kept: the runtime keeps the output of the last 32 finished sessions. Start it again if it is still needed."]
            .assert_eq(oldest["note"].as_str().unwrap_or_default());
    }

    /// The cap was checked before the session's row was stored (an await) and the session
    /// counted only once it ran, so starts made at the same moment all passed the check and
    /// more than [`MAX_RUNNING_SESSIONS`] ran. Now a start holds its slot from the check on.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_starts_never_run_more_than_the_cap() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sessions = Arc::new(ExecSessions::open(&dir.path().join("state.db"), "boot1").expect("open"));
        let argv: Vec<String> = ["sleep", "30"].iter().map(|s| (*s).to_owned()).collect();
        let starts = (0..MAX_RUNNING_SESSIONS + 4).map(|n| {
            let (sessions, argv, cwd) = (sessions.clone(), argv.clone(), dir.path().to_path_buf());
            tokio::spawn(async move { sessions.start("mcp", &argv, &cwd, i64::try_from(n).unwrap_or(0)).await })
        });
        let answers: Vec<_> = futures::future::join_all(starts).await.into_iter().map(|a| a.expect("start task")).collect();
        let started: Vec<String> =
            answers.iter().filter_map(|a| a.as_ref().ok()).map(|v| v["session_id"].as_str().expect("id").to_owned()).collect();
        let refused = answers.iter().filter(|a| matches!(a, Err(SessionError::Refused(_)))).count();
        let running = sessions.running();
        for id in &started {
            sessions.kill("mcp", id).await.expect("kill");
        }
        assert_eq!((started.len(), refused, running), (MAX_RUNNING_SESSIONS, 4, MAX_RUNNING_SESSIONS));
        // A slot freed by a kill is free again.
        let again = sessions.start("mcp", &argv, dir.path(), 99).await.expect("start after the kills");
        sessions.kill("mcp", again["session_id"].as_str().expect("id")).await.expect("kill");
    }

    #[tokio::test]
    async fn a_session_runs_is_read_and_after_a_restart_reads_interrupted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("state.db");
        let sessions = Arc::new(ExecSessions::open(&db, "boot1").expect("open"));
        let argv: Vec<String> = ["sh", "-c", "echo hi; sleep 30"].iter().map(|s| (*s).to_owned()).collect();
        let started = sessions.start("mcp", &argv, dir.path(), 1).await.expect("start");
        let id = started["session_id"].as_str().expect("id").to_owned();
        let mut read = Value::Null;
        for _ in 0..100 {
            read = sessions.read("mcp", &id, false, 0, 100).await.expect("read");
            if read["data"] == "hi\n" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(read["data"], "hi\n");
        assert_eq!(read["state"], "running");
        assert!(
            matches!(sessions.read("bridge:zai:conv:1", &id, false, 0, 100).await, Err(SessionError::NotFound(_))),
            "another caller's session is not there"
        );
        // Another runtime start over the same state.db: the session is interrupted and its
        // process group, proven to be the session's, is killed.
        let after = ExecSessions::open(&db, "boot2").expect("reopen");
        assert_eq!(after.read("mcp", &id, false, 0, 100).await.expect("read")["state"], "interrupted");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while lock(&lock(&sessions.live)[&id].end).is_none() {
            assert!(tokio::time::Instant::now() < deadline, "the earlier start's session still runs");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let unknown = ExecSessions::open(&db, "boot3").expect("reopen");
        assert!(matches!(unknown.read("mcp", "xs-none", false, 0, 10).await, Err(SessionError::NotFound(_))));
    }
}
