//! The schema of each SQLite file the runtime keeps — `state.db` ([`STATE_DB`]) and
//! `oauth.db` ([`OAUTH_DB`]) — as an ordered list of migrations, and the one function that
//! opens such a file and brings it to the current version ([`migrate`]; `state.db` through
//! [`open_state_db`]).
//!
//! Invariants (tests in `schema_tests.rs`):
//! - A file's version is its `PRAGMA user_version`: the number of migrations applied.
//!   Migration `n` (1-based) takes a file from version `n - 1` to `n`; the list only grows
//!   at its end, and a released step never changes.
//! - Every step is idempotent (`CREATE ... IF NOT EXISTS`, columns added only when
//!   missing). A file from before versioning (version 0, its tables created by the stores
//!   themselves, some of them or all, with or without the columns added later) is brought
//!   to the current version by running every step: nothing in it is dropped or rewritten.
//! - The steps and the new `user_version` run in one `BEGIN IMMEDIATE` transaction: a
//!   file is at one version or the next, never between; two connections opening the same
//!   file at once migrate it once (the second reads the version again inside its
//!   transaction and finds nothing to do; [`migrate`] returns the version it found, and
//!   exactly one of them reports the old one).
//! - A file at a version above the list's length was written by a newer runtime: it is
//!   refused with [`SchemaError::Newer`] and left untouched (no silent downgrade; for
//!   `state.db` the version is read before the connection switches the file to WAL, so not
//!   a byte of it changes).
//! - No store creates or alters a table; the stores only open through this module.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, Transaction, TransactionBehavior};
use thiserror::Error;

/// One migration step.
pub enum Step {
    /// A batch of SQL statements, each idempotent.
    Sql(&'static str),
    /// Columns `(name, type)` added to `table` when it lacks them.
    AddColumns(&'static str, &'static [(&'static str, &'static str)]),
}

/// One migration: what it adds, and how.
pub struct Migration {
    /// What the version adds (for the reader and `doctor`).
    pub adds: &'static str,
    /// The step.
    pub step: Step,
}

/// The schema of one file: its migrations, oldest first.
pub struct Schema {
    /// The file's name, for errors.
    pub file: &'static str,
    /// The migrations; the current version is their count.
    pub migrations: &'static [Migration],
}

impl Schema {
    /// The version this runtime writes.
    pub fn current(&self) -> i64 {
        i64::try_from(self.migrations.len()).unwrap_or(i64::MAX)
    }
}

/// Why a file could not be opened at the current schema.
#[derive(Debug, Error)]
pub enum SchemaError {
    /// SQLite refused a step or the version.
    #[error("{file} could not be brought to schema version {current}: {source}; check that the companion home is writable and not on a full disk", file = .file.display())]
    Sqlite {
        /// The file.
        file: PathBuf,
        /// The version this runtime writes.
        current: i64,
        /// What failed.
        source: rusqlite::Error,
    },
    /// The file was written by a newer runtime.
    #[error("{file} has schema version {found}, newer than this herdr-companion ({version}) knows (up to {current}): it was written by a newer herdr-companion. Install that newer version again (re-run its installer) — this one does not downgrade the file; to start over with this version instead, stop the runtime and move {file} aside (nothing in it is read then)", file = .file.display(), version = env!("CARGO_PKG_VERSION"))]
    Newer {
        /// The file.
        file: PathBuf,
        /// Its `user_version`.
        found: i64,
        /// The version this runtime writes.
        current: i64,
    },
}

/// A file's `PRAGMA user_version`.
pub fn version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

/// Brings the file behind `conn` (at `path`, for errors) to `schema`'s current version, or
/// refuses a newer one (see the module invariants). Returns the version found: the one read
/// under the write lock when there was something to do, else the current one.
pub fn migrate(conn: &mut Connection, path: &Path, schema: &Schema) -> Result<i64, SchemaError> {
    let current = schema.current();
    let sqlite = |source| SchemaError::Sqlite { file: path.to_owned(), current, source };
    let newer = |found| SchemaError::Newer { file: path.to_owned(), found, current };
    let seen = version(conn).map_err(sqlite)?;
    if seen == current {
        return Ok(seen);
    }
    if seen > current {
        return Err(newer(seen));
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sqlite)?;
    // Again under the write lock: another connection may have migrated meanwhile.
    let found = version(&tx).map_err(sqlite)?;
    if found > current {
        return Err(newer(found));
    }
    let from = usize::try_from(found.max(0)).unwrap_or(0);
    for migration in schema.migrations.iter().skip(from) {
        apply(&tx, &migration.step).map_err(sqlite)?;
    }
    tx.pragma_update(None, "user_version", current).map_err(sqlite)?;
    tx.commit().map_err(sqlite)?;
    Ok(found)
}

/// Runs one step inside `tx`.
pub fn apply(tx: &Transaction<'_>, step: &Step) -> rusqlite::Result<()> {
    match step {
        Step::Sql(sql) => tx.execute_batch(sql),
        Step::AddColumns(table, columns) => {
            let present: Vec<String> = tx
                .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            for (column, kind) in columns.iter() {
                if !present.iter().any(|p| p == column) {
                    tx.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {kind};"))?;
                }
            }
            Ok(())
        }
    }
}

/// Opens `state.db` at `path` the way every store of the runtime does (see
/// [`crate::db::open_connection`]) at the current schema. A newer file is refused before
/// anything is written to it (not even the switch to WAL).
pub fn open_state_db(path: &Path) -> Result<Connection, SchemaError> {
    open_state_db_reporting(path).map(|(conn, _)| conn)
}

/// [`open_state_db`], also returning the version the migration found (the current one when
/// there was nothing to do, or when another connection migrated the file meanwhile).
pub fn open_state_db_reporting(path: &Path) -> Result<(Connection, i64), SchemaError> {
    let current = STATE_DB.current();
    let sqlite = |source| SchemaError::Sqlite { file: path.to_owned(), current, source };
    let mut conn = crate::db::open_unconfigured(path).map_err(sqlite)?;
    let seen = version(&conn).map_err(sqlite)?;
    if seen > current {
        return Err(SchemaError::Newer { file: path.to_owned(), found: seen, current });
    }
    crate::db::configure(&conn).map_err(sqlite)?;
    let found = migrate(&mut conn, path, &STATE_DB)?;
    Ok((conn, found))
}

/// `state.db`: the event log, inbox, Continuity Journal, Work Memory, bridge, write tools,
/// retention, MCP pairings and project roots.
pub static STATE_DB: Schema = Schema { file: "state.db", migrations: STATE_DB_MIGRATIONS };

const STATE_DB_MIGRATIONS: &[Migration] = &[
    // 1
    Migration {
        adds: "the event log and key/value state",
        step: Step::Sql(
            "CREATE TABLE IF NOT EXISTS events (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                boot_id TEXT NOT NULL,
                at INTEGER NOT NULL,
                event TEXT NOT NULL,
                data TEXT NOT NULL
            );
            CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
        ),
    },
    // 2
    Migration {
        adds: "the inbox's tasks and its cursor on the event log",
        step: Step::Sql(
            "CREATE TABLE IF NOT EXISTS inbox_tasks (
                task_id TEXT PRIMARY KEY,
                dispatch_id TEXT NOT NULL UNIQUE,
                turn_id TEXT,
                browser_session_ref TEXT NOT NULL,
                workspace_id TEXT NOT NULL,
                pane_id TEXT NOT NULL,
                prompt_preview TEXT NOT NULL,
                state TEXT NOT NULL,
                after_seq INTEGER NOT NULL,
                created_at INTEGER NOT NULL,
                finished_at INTEGER,
                result TEXT,
                guidance TEXT,
                acked_at INTEGER
            );
            CREATE INDEX IF NOT EXISTS inbox_tasks_by_ref ON inbox_tasks (browser_session_ref, state);
            CREATE INDEX IF NOT EXISTS inbox_tasks_by_pane ON inbox_tasks (pane_id, state);
            CREATE TABLE IF NOT EXISTS inbox_cursor (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL);",
        ),
    },
    // 3
    Migration {
        adds: "the Continuity Journal",
        step: Step::Sql(
            "CREATE TABLE IF NOT EXISTS journal_chains (
                continuity_id TEXT PRIMARY KEY,
                project_id TEXT,
                title TEXT,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL
            );
            CREATE INDEX IF NOT EXISTS journal_chains_by_project ON journal_chains (project_id, updated_at);
            CREATE INDEX IF NOT EXISTS journal_chains_by_update ON journal_chains (updated_at);
            CREATE TABLE IF NOT EXISTS journal_conversations (
                conversation_id TEXT PRIMARY KEY,
                continuity_id TEXT NOT NULL,
                conversation_url TEXT,
                title TEXT,
                updated_at INTEGER NOT NULL
            );
            CREATE INDEX IF NOT EXISTS journal_conversations_by_chain ON journal_conversations (continuity_id);
            CREATE TABLE IF NOT EXISTS journal_chain_workspaces (
                workspace_id TEXT NOT NULL,
                continuity_id TEXT NOT NULL,
                PRIMARY KEY (workspace_id, continuity_id)
            ) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS journal_workspaces_by_chain ON journal_chain_workspaces (continuity_id);
            CREATE TABLE IF NOT EXISTS journal_turns (
                turn_id INTEGER PRIMARY KEY,
                continuity_id TEXT NOT NULL,
                message_id TEXT NOT NULL,
                conversation_id TEXT NOT NULL,
                role TEXT NOT NULL,
                text TEXT NOT NULL,
                workspace_id TEXT,
                observed_at INTEGER NOT NULL,
                recorded_at INTEGER NOT NULL,
                UNIQUE (continuity_id, message_id)
            );
            CREATE INDEX IF NOT EXISTS journal_turns_by_chain ON journal_turns (continuity_id, turn_id);
            CREATE VIRTUAL TABLE IF NOT EXISTS journal_fts USING fts5 (text, content = 'journal_turns', content_rowid = 'turn_id');",
        ),
    },
    // 4
    Migration {
        adds: "Work Memory",
        step: Step::Sql(
            "CREATE TABLE IF NOT EXISTS wm_chains (
                continuity_id TEXT PRIMARY KEY,
                project_ref TEXT NOT NULL,
                repo_id TEXT NOT NULL,
                work_chain_id TEXT NOT NULL,
                provider TEXT NOT NULL,
                account_ref TEXT,
                space_ref TEXT,
                session_ref TEXT NOT NULL,
                bound_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL,
                UNIQUE (project_ref, repo_id, work_chain_id)
            );
            CREATE TABLE IF NOT EXISTS wm_turns (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                continuity_id TEXT NOT NULL,
                provider TEXT NOT NULL,
                account_ref TEXT,
                space_ref TEXT,
                session_ref TEXT NOT NULL,
                provider_message_ref TEXT NOT NULL,
                role TEXT NOT NULL,
                text TEXT NOT NULL,
                fingerprint TEXT,
                observed_at INTEGER NOT NULL,
                UNIQUE (continuity_id, provider, provider_message_ref)
            );
            CREATE TABLE IF NOT EXISTS wm_evidence (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                continuity_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                content TEXT NOT NULL,
                sha256 TEXT NOT NULL,
                provider TEXT,
                account_ref TEXT,
                space_ref TEXT,
                session_ref TEXT,
                portable_ref TEXT,
                created_at INTEGER NOT NULL,
                UNIQUE (continuity_id, kind, sha256)
            );
            CREATE TABLE IF NOT EXISTS wm_checkpoints (
                continuity_id TEXT NOT NULL,
                revision INTEGER NOT NULL,
                summary TEXT NOT NULL,
                checkpoint_json TEXT NOT NULL,
                sha256 TEXT NOT NULL,
                through_message_id TEXT,
                through_evidence_id TEXT,
                created_at INTEGER NOT NULL,
                PRIMARY KEY (continuity_id, revision)
            );
            CREATE VIRTUAL TABLE IF NOT EXISTS wm_fts USING fts5 (body, continuity_id UNINDEXED, source_kind UNINDEXED, source_id UNINDEXED);",
        ),
    },
    // 5
    Migration {
        adds: "the bridge's claimed calls and results",
        step: Step::Sql(
            "CREATE TABLE IF NOT EXISTS bridge_calls (
                conversation TEXT NOT NULL,
                message TEXT NOT NULL,
                call_index INTEGER NOT NULL,
                call_hash TEXT NOT NULL,
                tool TEXT NOT NULL,
                claimed_at INTEGER NOT NULL,
                outcome_kind TEXT,
                outcome TEXT,
                PRIMARY KEY (conversation, message, call_index, call_hash)
            );
            CREATE TABLE IF NOT EXISTS bridge_results (
                delivery_id TEXT PRIMARY KEY,
                conversation TEXT NOT NULL,
                message TEXT NOT NULL,
                calls INTEGER NOT NULL,
                text TEXT NOT NULL,
                created_at INTEGER NOT NULL,
                delivered_at INTEGER
            );",
        ),
    },
    // 6
    Migration {
        adds: "the write tools' audit, exec runs and exec sessions",
        step: Step::Sql(
            "CREATE TABLE IF NOT EXISTS tool_audit (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                at INTEGER NOT NULL,
                tool TEXT NOT NULL,
                caller TEXT NOT NULL,
                root TEXT NOT NULL,
                target TEXT NOT NULL,
                outcome TEXT NOT NULL,
                detail TEXT NOT NULL
            );
            CREATE TABLE IF NOT EXISTS exec_runs (
                key TEXT PRIMARY KEY,
                fingerprint TEXT NOT NULL,
                boot_id TEXT NOT NULL,
                started_at INTEGER NOT NULL,
                result TEXT
            );
            CREATE TABLE IF NOT EXISTS exec_sessions (
                id TEXT PRIMARY KEY,
                owner TEXT NOT NULL,
                boot_id TEXT NOT NULL,
                cwd TEXT NOT NULL,
                command TEXT NOT NULL,
                started_at INTEGER NOT NULL,
                state TEXT NOT NULL,
                exit_code INTEGER,
                ended_at INTEGER
            );",
        ),
    },
    // 7
    Migration {
        adds: "the bridge's approval batches, decisions and rounds",
        step: Step::Sql(
            "CREATE TABLE IF NOT EXISTS bridge_batches (
                batch_id TEXT PRIMARY KEY,
                conversation TEXT NOT NULL,
                message TEXT NOT NULL,
                calls INTEGER NOT NULL,
                decidable TEXT NOT NULL,
                pending TEXT NOT NULL,
                hashes TEXT NOT NULL,
                asked_at INTEGER NOT NULL
            );
            CREATE TABLE IF NOT EXISTS bridge_decisions (
                batch_id TEXT NOT NULL,
                call_index INTEGER NOT NULL,
                decision TEXT NOT NULL,
                decided_at INTEGER NOT NULL,
                PRIMARY KEY (batch_id, call_index)
            );
            CREATE TABLE IF NOT EXISTS bridge_rounds (
                conversation TEXT NOT NULL,
                human_turn TEXT NOT NULL,
                used INTEGER NOT NULL,
                PRIMARY KEY (conversation, human_turn)
            );",
        ),
    },
    // 8
    Migration {
        adds: "retention limits",
        step: Step::Sql("CREATE TABLE IF NOT EXISTS retention_limits (store TEXT PRIMARY KEY, value INTEGER NOT NULL);"),
    },
    // 9
    Migration {
        adds: "the journal's restored legacy packets",
        step: Step::Sql(
            "CREATE TABLE IF NOT EXISTS journal_legacy_restores (
                source_continuity_id TEXT NOT NULL,
                packet_id TEXT NOT NULL,
                continuity_id TEXT NOT NULL UNIQUE,
                sha256 TEXT NOT NULL,
                source_message_id TEXT NOT NULL,
                recorded_at INTEGER NOT NULL,
                PRIMARY KEY (source_continuity_id, packet_id)
            );
            CREATE INDEX IF NOT EXISTS journal_legacy_by_packet ON journal_legacy_restores (packet_id);",
        ),
    },
    // 10
    Migration {
        adds: "MCP sessions paired with a chat",
        step: Step::Sql(
            "CREATE TABLE IF NOT EXISTS mcp_session_chats (
                session TEXT PRIMARY KEY,
                browser_session_ref TEXT NOT NULL,
                subject TEXT,
                paired_at INTEGER NOT NULL
            );",
        ),
    },
    // 11
    Migration {
        adds: "Goal mode's goals and TODO items",
        step: Step::Sql(
            "CREATE TABLE IF NOT EXISTS wm_goals (
                session_ref TEXT PRIMARY KEY,
                goal TEXT NOT NULL,
                todos TEXT NOT NULL,
                updated_at INTEGER NOT NULL
            );",
        ),
    },
    // 12
    Migration {
        adds: "the registered project roots",
        step: Step::Sql("CREATE TABLE IF NOT EXISTS roots (path TEXT PRIMARY KEY, added_at INTEGER NOT NULL);"),
    },
    // 13
    Migration {
        adds: "an exec session's process group and start identity",
        step: Step::AddColumns("exec_sessions", &[("pgid", "INTEGER"), ("start_identity", "TEXT")]),
    },
    // 14
    Migration {
        adds: "a checkpoint's anchor on a journal turn",
        step: Step::AddColumns(
            "wm_checkpoints",
            &[("journal_continuity_id", "TEXT"), ("journal_message_id", "TEXT"), ("journal_text_sha256", "TEXT")],
        ),
    },
    // 15
    Migration {
        adds: "an exec session's owner, where the first exec_sessions table lacked it",
        // Migration 6's table has `owner`; only a file from before versioning whose table
        // predates the column lacks it, and its sessions were MCP's.
        step: Step::AddColumns("exec_sessions", &[("owner", "TEXT NOT NULL DEFAULT 'mcp'")]),
    },
    // 16
    Migration {
        adds: "Work Memory's search rows keyed by their source (work_memory::store::fts_rowid)",
        // Each row's rowid from its source: a turn `m<id>` id·4, evidence `e<id>` id·4+1, a
        // checkpoint `r<revision>` its row's rowid·4+2, so reclaiming deletes by rowid
        // instead of scanning the table. A row whose source is gone (or a second row of
        // one source) is dropped: no rowid reclaim would ever reach it, and search would
        // still return it (review 37 L8).
        step: Step::Sql(
            "CREATE VIRTUAL TABLE wm_fts_keyed USING fts5 (body, continuity_id UNINDEXED, source_kind UNINDEXED, source_id UNINDEXED);
             INSERT INTO wm_fts_keyed (rowid, body, continuity_id, source_kind, source_id)
               SELECT key, body, continuity_id, source_kind, source_id
               FROM (SELECT key, body, continuity_id, source_kind, source_id, row_number() OVER (PARTITION BY key ORDER BY old) AS nth
               FROM (SELECT f.rowid AS old, f.body, f.continuity_id, f.source_kind, f.source_id,
                       CASE f.source_kind
                         WHEN 'turn' THEN (SELECT t.id * 4 FROM wm_turns t WHERE 'm' || t.id = f.source_id
                                             AND t.id = CAST(substr(f.source_id, 2) AS INTEGER))
                         WHEN 'evidence' THEN (SELECT e.id * 4 + 1 FROM wm_evidence e WHERE 'e' || e.id = f.source_id
                                                 AND e.id = CAST(substr(f.source_id, 2) AS INTEGER))
                         WHEN 'checkpoint' THEN (SELECT c.rowid * 4 + 2 FROM wm_checkpoints c WHERE c.continuity_id = f.continuity_id
                                                   AND 'r' || c.revision = f.source_id)
                       END AS key
                     FROM wm_fts f))
               WHERE key IS NOT NULL AND nth = 1;
             DROP TABLE wm_fts;
             ALTER TABLE wm_fts_keyed RENAME TO wm_fts;",
        ),
    },
];

/// `oauth.db`: the MCP endpoint's OAuth clients, consent requests, codes, grants and tokens.
pub static OAUTH_DB: Schema = Schema { file: "oauth.db", migrations: OAUTH_DB_MIGRATIONS };

const OAUTH_DB_MIGRATIONS: &[Migration] = &[
    // 1
    Migration {
        adds: "clients, consent requests, codes, grants and tokens",
        step: Step::Sql(
            "CREATE TABLE IF NOT EXISTS clients (
              client_id TEXT PRIMARY KEY,
              secret_hash TEXT,
              auth_method TEXT NOT NULL,
              name TEXT NOT NULL,
              redirect_uris TEXT NOT NULL,
              created_at INTEGER NOT NULL
            );
            CREATE TABLE IF NOT EXISTS pending (
              request_hash TEXT PRIMARY KEY,
              user_code TEXT NOT NULL UNIQUE,
              client_id TEXT NOT NULL,
              redirect_uri TEXT NOT NULL,
              state TEXT,
              code_challenge TEXT NOT NULL,
              resource TEXT NOT NULL,
              created_at INTEGER NOT NULL,
              expires_at INTEGER NOT NULL,
              decision TEXT NOT NULL DEFAULT 'pending'
            );
            CREATE TABLE IF NOT EXISTS codes (
              code_hash TEXT PRIMARY KEY,
              client_id TEXT NOT NULL,
              redirect_uri TEXT NOT NULL,
              code_challenge TEXT NOT NULL,
              resource TEXT NOT NULL,
              expires_at INTEGER NOT NULL,
              grant_id TEXT
            );
            CREATE TABLE IF NOT EXISTS grants (
              grant_id TEXT PRIMARY KEY,
              client_id TEXT NOT NULL,
              resource TEXT NOT NULL,
              created_at INTEGER NOT NULL,
              last_used INTEGER NOT NULL
            );
            CREATE TABLE IF NOT EXISTS tokens (
              token_hash TEXT PRIMARY KEY,
              kind TEXT NOT NULL,
              grant_id TEXT NOT NULL,
              expires_at INTEGER NOT NULL,
              rotated INTEGER NOT NULL DEFAULT 0
            );
            CREATE INDEX IF NOT EXISTS tokens_by_grant ON tokens(grant_id);",
        ),
    },
];

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
