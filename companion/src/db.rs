//! The runtime's `state.db` (SQLite, SPEC N3): the replayable event log and small
//! key/value state (the last known Herdr catalog).
//!
//! Invariants:
//! - `seq` is `INTEGER PRIMARY KEY AUTOINCREMENT`: strictly increasing and never reused,
//!   also across runtime restarts and after retention deletes old rows (SPEC P9).
//! - Every write runs in one `BEGIN IMMEDIATE` transaction; the journal is WAL with
//!   `synchronous=FULL`, so a commit a client has seen survives a power loss.
//! - At most [`EVENT_RETENTION`] events are kept; the oldest are dropped first.
//! - The log has an identity, `log_id` (random, in the kv table), created with the log and
//!   never changed: a new or reset `state.db` is a new log with a new id, so a client can
//!   tell that a `seq` it holds belongs to another log (docs/PROTOCOL.md "Event stream").
//!
//! Schema: every connection to `state.db` is opened through
//! [`crate::schema::open_state_db`], which brings the file to the current schema version
//! (or refuses one written by a newer runtime); no store creates or alters a table.
//!
//! Connections: one per service, opened once at the runtime's start. The event hub
//! (`crate::stream::EventHub`), the inbox (`crate::inbox::Inbox`, which reads the event
//! log on its own store's connection), the journal, Work Memory, retention, the bridge and
//! the MCP pairings each own one; the write tools' four stores (audit, exec runs, exec
//! sessions, roots) share one [`SharedConnection`]. Why not one connection for all: WAL
//! lets readers run beside the one writer, so a long journal search or retention run on
//! its own connection never holds up an event append; why not one per table: every
//! connection costs its own page cache and file handles, and a service's writes that
//! belong together (the write tools' audit and exec rows) go through one lock. SQLite
//! serializes the writers across connections (`BEGIN IMMEDIATE`, the 5 s busy timeout).
//! One more connection in the runtime: when the write tools could not open, the workstation
//! API opens the roots store on its own connection at first use (`api::workstation::store`;
//! kept once open, a failed open is tried again at the next call). Before any service, the
//! runtime opens the file once to check its version (`runtime::run`), and refuses to start
//! on a newer one.
//! Outside the runtime `doctor` (read-only, no migration), the `roots` CLI and
//! `journal-bench` open the file; every open but doctor's migrates it, `roots list`
//! included, also beside a running runtime (the steps only add).
//!
//! Threading: a rusqlite call blocks (on a lock held by another connection, up to the
//! busy timeout, and on fsync under FULL), so **no rusqlite call runs on a tokio async
//! worker**, opening included (it may migrate the schema). Each connection sits behind a
//! `std::sync::Mutex` that is only locked inside [`off_worker`] closures, which run on
//! tokio's blocking pool; the mutex serializes the calls of one connection, and an async
//! worker only ever awaits the result. The types in this module are synchronous and
//! know nothing of tokio (tests call them directly).

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde_json::Value;
use thiserror::Error;

/// How many events the log keeps.
pub const EVENT_RETENTION: i64 = 10_000;

/// A state.db failure.
#[derive(Debug, Error)]
pub enum DbError {
    /// SQLite refused an operation.
    #[error("state.db error: {0}; check that the companion home is writable and not on a full disk")]
    Sqlite(#[from] rusqlite::Error),
    /// A stored JSON payload is corrupt.
    #[error("state.db holds a corrupt event payload: {0}; delete state.db to reset the event log")]
    Corrupt(#[from] serde_json::Error),
    /// The call on the blocking pool was lost.
    #[error(transparent)]
    CallLost(#[from] DbCallLost),
    /// The kv table lost the log's id (written at open, never deleted).
    #[error("state.db has no event log id (was it edited by hand?); delete state.db to start a new event log")]
    NoLogId,
    /// The file's schema is newer than this runtime's, or could not be brought to it.
    #[error(transparent)]
    Schema(#[from] crate::schema::SchemaError),
    /// No random bytes for a new log's id.
    #[error("cannot read /dev/urandom for the event log's id ({0}); check that /dev/urandom is readable")]
    Random(std::io::Error),
}

/// Key of the event log's identity in the kv table.
const LOG_ID_KEY: &str = "log_id";

/// 128 random bits from the kernel, in hex (32 characters): the ids `state.db` makes.
pub fn random_hex_128() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A fresh random log id.
fn new_log_id() -> Result<String, DbError> {
    random_hex_128().map_err(DbError::Random)
}

/// A database call on the blocking pool ended without a result (it panicked, or the
/// runtime is shutting down).
#[derive(Debug, Error)]
#[error("a state.db call stopped before it finished ({0}); the runtime is stopping or hit a bug — see runtime.log and restart it")]
pub struct DbCallLost(#[from] tokio::task::JoinError);

/// Runs the blocking `work` (anything that calls rusqlite) on tokio's blocking pool and
/// awaits its result, so an async worker never waits on SQLite.
pub async fn off_worker<T, E>(work: impl FnOnce() -> Result<T, E> + Send + 'static) -> Result<T, E>
where
    T: Send + 'static,
    E: From<DbCallLost> + Send + 'static,
{
    tokio::task::spawn_blocking(work).await.map_err(|lost| E::from(DbCallLost(lost)))?
}

/// One connection to `state.db` shared by the stores of one service (e.g. the write
/// tools' audit, exec runs, exec sessions and roots): lock it only inside [`off_worker`]
/// closures (or on a thread of its own), one statement or transaction at a time.
pub type SharedConnection = std::sync::Arc<std::sync::Mutex<Connection>>;

/// Opens `state.db` at `path` at the current schema as a [`SharedConnection`].
pub fn open_shared(path: &Path) -> Result<SharedConnection, DbError> {
    Ok(std::sync::Arc::new(std::sync::Mutex::new(crate::schema::open_state_db(path)?)))
}

/// One event as stored and replayed.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// Position in the log; strictly increasing.
    pub seq: i64,
    /// The runtime boot that produced it.
    pub boot_id: String,
    /// Unix milliseconds when it was produced.
    pub at: i64,
    /// Event name, e.g. `agent_settled`.
    pub event: String,
    /// Payload (without `seq`/`boot_id`/`at`).
    pub data: Value,
}

/// The open database.
#[derive(Debug)]
pub struct StateDb {
    /// The connection (one per runtime; callers serialize access).
    conn: Connection,
}

/// Opens (creating if needed) a connection to `state.db` at `path` the way every part of
/// the runtime does: a 5 s busy timeout, WAL, and `synchronous=FULL`.
pub fn open_connection(path: &Path) -> rusqlite::Result<Connection> {
    let conn = open_unconfigured(path)?;
    configure(&conn)?;
    Ok(conn)
}

/// Opens (creating if needed) `path` with only the 5 s busy timeout: nothing is written to
/// the file yet, so its version can be read (and a newer file refused) before
/// [`configure`] switches it to WAL.
pub fn open_unconfigured(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    // The busy timeout first: the other connections of this runtime may hold a lock
    // while this one switches to WAL, which would otherwise fail at once with BUSY.
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(conn)
}

/// Switches `conn`'s file to WAL (a write to its header) and the connection to
/// `synchronous=FULL`.
pub fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // FULL, not NORMAL: in WAL mode NORMAL may lose the last commits on power loss — a
    // lost commit makes `seq` go backwards for a client that already received it, undoes an
    // acknowledgement, loses a journal turn, or forgets that a bridge call was claimed (it
    // would run again).
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(())
}

impl StateDb {
    /// Opens (creating if needed) `path` with WAL at the current schema (`crate::schema`).
    pub fn open(path: &Path) -> Result<Self, DbError> {
        let conn = crate::schema::open_state_db(path)?;
        // The first open of a log names it; later opens (and the other connections of this
        // runtime, which may race this one) keep the name.
        conn.execute(
            "INSERT OR IGNORE INTO kv (key, value) VALUES (?1, ?2)",
            params![LOG_ID_KEY, Value::String(new_log_id()?).to_string()],
        )?;
        Ok(Self { conn })
    }

    /// The log's identity (see the module invariants).
    pub fn log_id(&self) -> Result<String, DbError> {
        match self.get(LOG_ID_KEY)? {
            Some(Value::String(id)) => Ok(id),
            _ => Err(DbError::NoLogId),
        }
    }

    /// Appends one event and applies retention; returns it with its `seq`.
    pub fn append(&mut self, boot_id: &str, at: i64, event: &str, data: &Value) -> Result<StoredEvent, DbError> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let stored = insert_event(&tx, boot_id, at, event, data)?;
        tx.commit()?;
        Ok(stored)
    }

    /// Appends `events` (name, payload) and writes `state` (key, value) in one
    /// transaction — all of it is committed or none — and applies retention.
    pub fn append_all(
        &mut self,
        boot_id: &str,
        at: i64,
        events: &[(&str, &Value)],
        state: (&str, &Value),
    ) -> Result<Vec<StoredEvent>, DbError> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        upsert(&tx, state.0, state.1)?;
        let stored = events.iter().map(|(event, data)| insert_event(&tx, boot_id, at, event, data)).collect::<Result<Vec<_>, _>>()?;
        tx.commit()?;
        Ok(stored)
    }

    /// Events with `seq > after`, oldest first, at most `limit`.
    pub fn events_after(&self, after: i64, limit: i64) -> Result<Vec<StoredEvent>, DbError> {
        events_after(&self.conn, after, limit)
    }

    /// The highest `seq` ever assigned (0 when none), surviving retention deletes.
    pub fn last_seq(&self) -> Result<i64, DbError> {
        last_seq(&self.conn)
    }

    /// The oldest retained `seq` (None when the log is empty).
    pub fn first_seq(&self) -> Result<Option<i64>, DbError> {
        Ok(self.conn.query_row("SELECT MIN(seq) FROM events", [], |r| r.get(0))?)
    }

    /// This connection's `PRAGMA synchronous` (2 = FULL).
    pub fn synchronous(&self) -> Result<i64, DbError> {
        Ok(self.conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?)
    }

    /// Reads a JSON value from the key/value table.
    pub fn get(&self, key: &str) -> Result<Option<Value>, DbError> {
        let text: Option<String> = self.conn.query_row("SELECT value FROM kv WHERE key = ?1", params![key], |r| r.get(0)).optional()?;
        Ok(match text {
            Some(text) => Some(serde_json::from_str(&text)?),
            None => None,
        })
    }

    /// Writes a JSON value to the key/value table.
    pub fn put(&mut self, key: &str, value: &Value) -> Result<(), DbError> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        upsert(&tx, key, value)?;
        tx.commit()?;
        Ok(())
    }
}

/// Events with `seq > after` in the log behind `conn`, oldest first, at most `limit`.
pub fn events_after(conn: &Connection, after: i64, limit: i64) -> Result<Vec<StoredEvent>, DbError> {
    let mut statement = conn.prepare("SELECT seq, boot_id, at, event, data FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2")?;
    let rows = statement
        .query_map(params![after, limit], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get::<_, String>(4)?)))?;
    let mut events = Vec::new();
    for row in rows {
        let (seq, boot_id, at, event, data) = row?;
        events.push(StoredEvent { seq, boot_id, at, event, data: serde_json::from_str(&data)? });
    }
    Ok(events)
}

/// The highest `seq` ever assigned in the log behind `conn` (0 when none), surviving
/// retention deletes.
pub fn last_seq(conn: &Connection) -> Result<i64, DbError> {
    let from_sequence: Option<i64> =
        conn.query_row("SELECT seq FROM sqlite_sequence WHERE name = 'events'", [], |r| r.get(0)).optional()?;
    Ok(from_sequence.unwrap_or(0))
}

/// Inserts one event inside `tx` and drops what falls out of retention.
fn insert_event(tx: &rusqlite::Transaction<'_>, boot_id: &str, at: i64, event: &str, data: &Value) -> Result<StoredEvent, DbError> {
    tx.execute("INSERT INTO events (boot_id, at, event, data) VALUES (?1, ?2, ?3, ?4)", params![boot_id, at, event, data.to_string()])?;
    let seq = tx.last_insert_rowid();
    tx.execute("DELETE FROM events WHERE seq <= ?1", params![seq - EVENT_RETENTION])?;
    Ok(StoredEvent { seq, boot_id: boot_id.to_owned(), at, event: event.to_owned(), data: data.clone() })
}

/// Writes `key` = `value` into the kv table inside `tx`.
fn upsert(tx: &rusqlite::Transaction<'_>, key: &str, value: &Value) -> Result<(), DbError> {
    tx.execute(
        "INSERT INTO kv (key, value) VALUES (?1, ?2)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        params![key, value.to_string()],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn seq_is_monotonic_across_reopen_and_retention() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.db");
        let mut db = StateDb::open(&path).expect("open");
        let first = db.append("boot-a", 1, "agent_working", &json!({"pane_id": "w1:p1"})).expect("append");
        assert_eq!(first.seq, 1);
        drop(db);
        let mut db = StateDb::open(&path).expect("reopen");
        let second = db.append("boot-b", 2, "agent_settled", &json!({})).expect("append");
        assert_eq!(second.seq, 2, "P9: seq continues after a runtime restart");
        let replay = db.events_after(0, 100).expect("replay");
        assert_eq!(replay.iter().map(|e| (e.seq, e.boot_id.as_str())).collect::<Vec<_>>(), [(1, "boot-a"), (2, "boot-b")]);
        assert_eq!(db.last_seq().expect("last"), 2);
    }

    #[test]
    fn a_log_keeps_its_id_across_reopens_and_a_new_log_gets_a_new_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = StateDb::open(&dir.path().join("a.db")).expect("open").log_id().expect("id");
        let again = StateDb::open(&dir.path().join("a.db")).expect("reopen").log_id().expect("id");
        let other = StateDb::open(&dir.path().join("b.db")).expect("open").log_id().expect("id");
        assert_eq!((first.len(), first == again, first == other), (32, true, false));
    }

    #[test]
    fn retention_keeps_the_newest_events_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut db = StateDb::open(&dir.path().join("state.db")).expect("open");
        // In a few transactions (each commit waits for the disk under synchronous=FULL).
        let payload = json!({});
        let bulk: Vec<(&str, &Value)> = (0..EVENT_RETENTION).map(|_| ("x", &payload)).collect();
        db.append_all("b", 0, &bulk, ("k", &payload)).expect("append_all");
        for i in 0..5 {
            db.append("b", i, "x", &json!(i)).expect("append");
        }
        assert_eq!(db.first_seq().expect("first"), Some(6));
        assert_eq!(db.last_seq().expect("last"), EVENT_RETENTION + 5);
    }
}
